/*
 * io_test.c — test hooks (junction/io.h, "tests and fuzzing only"): a
 * connection with no socket whose peer is the caller, run through the
 * router's own pass on the caller's thread.
 *
 * How it fits: such a connection is an ordinary io_conn of an ordinary
 * listener or connector, started on loop 0 as an accepted or connected one
 * would be, except that conn->test_io is set, so that the pass (io_own.c's
 * jn_io_own_pass_IO) takes its input from the caller's buffer
 * (jn_io_test_read_IO) instead of recv(), and throws away what the engine
 * framed (jn_io_test_write_IO) instead of send().
 *
 * The connection gets Junction's own engine as an accepted one (a
 * listener's: jn_io_own_attach) or a connected one (a connector's:
 * jn_io_own_attach_client) does, and its octets move through io_plain.c
 * (jn_io_plain_*), as TLS's and the WebSocket bridge's do. Everything
 * else — the own engine's callbacks, the core's work, the core run inline
 * — is the daemon's code. No loop thread runs: the
 * caller's thread plays loop 0 (jn_io_test_run: the loop's work without
 * epoll and without timers).
 *
 * Threads: everything here on the one test thread, except that the core
 * thread may wake a test connection (jn_io_conn_wake), as in the daemon.
 * Nothing here is called by junctiond.
 */
#include "io_own.h"
#include "io_private.h"

#include <stdio.h>
#include <string.h>

/* Octets of the own engine's output gathered per move (its runs are many
 * and small: frame headers, performatives), as the bridge gathers them. */
#define JN_IO_TEST_STAGE 16384

/* The endpoint named name, or NULL. */
static jn_io_endpoint_t *endpoint_find(jn_io_t *io, const char *name)
{
    pthread_mutex_lock(&io->lock);
    jn_io_endpoint_t *ep = io->endpoints;
    while (ep && !(ep->cfg.name && strcmp(ep->cfg.name, name) == 0))
        ep = ep->next;
    pthread_mutex_unlock(&io->lock);
    return ep;
}

jn_io_conn_t *jn_io_test_conn_new(jn_io_t *io, const char *endpoint)
{
    jn_io_endpoint_t *ep = endpoint_find(io, endpoint);
    if (!ep || io->started)
        return NULL;
    bool incoming = ep->is_listener;
    jn_io_conn_t *conn = jn_io_conn_new(io, ep, incoming);
    /* no auth service's relay here (it is made at accept, io_endpoint.c):
     * a listener with one gets Cyrus or the built-in ANONYMOUS, as a
     * WebSocket bridge's connection does */
    if (!conn ||
        (incoming ? jn_io_own_attach(conn) : jn_io_own_attach_client(conn, ep->cfg.host)) != 0) {
        if (conn)
            jn_io_conn_unref(conn); /* never started: freed here */
        return NULL;
    }
    if (incoming)
        snprintf(conn->host, sizeof conn->host, "test-peer");
    jn_io_loop_t *loop = &io->loops[0];
    atomic_store_explicit(&conn->loop, loop, memory_order_relaxed);
    atomic_store_explicit(&conn->started, true, memory_order_release);
    atomic_fetch_add_explicit(&loop->conns, 1, memory_order_relaxed);
    conn->test_io = true;
    conn->tick_at = 0;
    atomic_fetch_add_explicit(&conn->refs, 1, memory_order_relaxed); /* the caller's */
    jn_io_conn_wake(conn);
    return conn;
}

void jn_io_test_conn_input(jn_io_conn_t *conn, const uint8_t *data, size_t len, bool end)
{
    if (data) {
        conn->test_in = data;
        conn->test_in_len = len;
    }
    conn->test_end = end;
    jn_io_conn_wake(conn);
}

size_t jn_io_test_conn_pending(const jn_io_conn_t *conn)
{
    return conn->test_in_len;
}

bool jn_io_test_conn_own(const jn_io_conn_t *conn)
{
    return conn->own != NULL;
}

bool jn_io_test_conn_closed(const jn_io_conn_t *conn)
{
    return conn->transport_closed || conn->destroyed;
}

void jn_io_test_conn_abort(jn_io_conn_t *conn)
{
    if (conn->destroyed)
        return;
    conn->own->cut = true; /* as a socket's failed write: the transport ends */
    jn_io_conn_wake(conn);
}

void jn_io_test_conn_release(jn_io_conn_t *conn)
{
    conn->test_in = NULL;
    conn->test_in_len = 0;
    jn_io_conn_unref(conn);
}

bool jn_io_test_run(jn_io_t *io)
{
    jn_core_inline_thread_begin(); /* idempotent: this thread plays loop 0 */
    jn_io_loop_t *loop = &io->loops[0];
    bool core_more = jn_io_loop_work(loop);
    return core_more || loop->pass_head ||
           atomic_load_explicit(&loop->ready.pending, memory_order_acquire) != 0;
}

size_t jn_io_test_conns(jn_io_t *io)
{
    return atomic_load(&io->pending_frees);
}

/* The pass's read step for a test connection (through io_plain.c): hand
 * the engine as much of the caller's octets as it takes, then the end of
 * input once they are all taken. */
void jn_io_test_read_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    while (conn->test_in_len > 0 && !jn_io_plain_in_closed(conn)) {
        uint8_t *space = NULL;
        size_t room = jn_io_plain_in_space_IO(conn, &space);
        if (room == 0)
            return; /* the engine holds all it will take: it reads on after events */
        size_t n = room < conn->test_in_len ? room : conn->test_in_len;
        memcpy(space, conn->test_in, n);
        conn->test_in += n;
        conn->test_in_len -= n;
        if (!jn_io_plain_in_IO(conn, space, n)) { /* refused: closing */
            conn->test_in_len = 0;
            return;
        }
    }
    if (jn_io_plain_in_closed(conn))
        conn->test_in_len = 0; /* the engine stopped reading: the rest is dropped */
    else if (conn->test_end && conn->test_in_len == 0)
        jn_io_plain_in_end_IO(conn); /* as a socket's end of stream */
}

/* The pass's write step for a test connection (through io_plain.c): the
 * peer takes every octet the engine framed (and ignores
 * it). */
void jn_io_test_write_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    uint8_t stage[JN_IO_TEST_STAGE]; /* the own engine's runs, gathered */
    for (;;) {
        const uint8_t *p = NULL;
        size_t n = jn_io_plain_out_IO(conn, stage, sizeof stage, &p);
        if (n == 0)
            break;
        jn_io_plain_out_done_IO(conn, n);
        conn->octets_written += n;
    }
}
