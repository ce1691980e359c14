/*
 * io_test.c — test hooks (junction/io.h, "tests and fuzzing only"): a
 * connection with no socket whose peer is the caller, run through the
 * router's own pass on the caller's thread.
 *
 * How it fits: such a connection is an ordinary io_conn of an ordinary
 * listener or connector, started on loop 0 as an accepted or connected one
 * would be, except that conn->test_io is set, so that conn_pass (io_loop.c)
 * takes its input from the caller's buffer (jn_io_test_read_IO) instead of
 * recv(), and throws away what proton framed (jn_io_test_write_IO) instead
 * of send(). Everything else — proton's events in jn_io_conn_event_IO, the
 * core's work in jn_io_conn_batch_end_IO, the core run inline — is the
 * daemon's code. No loop thread runs: the caller's thread plays loop 0
 * (jn_io_test_run: the loop's work without epoll and without timers).
 *
 * Threads: everything here on the one test thread, except that the core
 * thread may wake a test connection (jn_io_conn_wake), as in the daemon.
 * Nothing here is called by junctiond.
 */
#include "io_private.h"

#include <stdio.h>
#include <string.h>

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
    pn_transport_t *t = conn ? jn_io_transport_new(&ep->cfg, incoming) : NULL;
    if (!t) {
        if (conn)
            jn_io_conn_unref(conn); /* never started: freed here */
        return NULL;
    }
    if (incoming) {
        snprintf(conn->host, sizeof conn->host, "test-peer");
    } else { /* as connect_now does */
        pn_connection_set_hostname(conn->pn_io, ep->cfg.host);
        pn_connection_open(conn->pn_io);
    }
    jn_io_loop_t *loop = &io->loops[0];
    atomic_store_explicit(&conn->loop, loop, memory_order_relaxed);
    atomic_store_explicit(&conn->started, true, memory_order_release);
    atomic_fetch_add_explicit(&loop->conns, 1, memory_order_relaxed);
    if (pn_connection_driver_init(&conn->driver, conn->pn_io, t) != 0) {
        conn->pn_io = NULL; /* proton freed the connection and the transport */
        memset(&conn->driver, 0, sizeof conn->driver);
        atomic_fetch_sub_explicit(&loop->conns, 1, memory_order_relaxed);
        jn_io_conn_unref(conn);
        return NULL;
    }
    pn_connection_driver_bind(&conn->driver);
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

bool jn_io_test_conn_closed(const jn_io_conn_t *conn)
{
    return conn->transport_closed || conn->destroyed;
}

void jn_io_test_conn_abort(jn_io_conn_t *conn)
{
    if (conn->destroyed || pn_connection_driver_finished(&conn->driver))
        return;
    pn_connection_driver_errorf(&conn->driver, "proton:io", "test connection aborted");
    pn_connection_driver_close(&conn->driver);
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

/* conn_pass's read step for a test connection: hand proton as much of the
 * caller's octets as it takes, then the end of input once they are all
 * taken. */
void jn_io_test_read_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    pn_connection_driver_t *d = &conn->driver;
    while (conn->test_in_len > 0 && !pn_connection_driver_read_closed(d) && !conn->screened_out) {
        pn_rwbytes_t buf = pn_connection_driver_read_buffer_sized(d, JN_IO_READ_SIZE);
        if (buf.size == 0)
            return; /* proton holds all it will take: it reads on after events */
        size_t n = buf.size < conn->test_in_len ? buf.size : conn->test_in_len;
        memcpy(buf.start, conn->test_in, n);
        conn->test_in += n;
        conn->test_in_len -= n;
        if (!jn_io_conn_input_IO(conn, buf.start, n)) { /* the daemon's screen */
            conn->test_in_len = 0;
            return;
        }
    }
    if (pn_connection_driver_read_closed(d))
        conn->test_in_len = 0; /* proton stopped reading: the rest is dropped */
    if (conn->test_end && conn->test_in_len == 0 && !pn_connection_driver_read_closed(d))
        pn_connection_driver_read_close(d);
}

/* conn_pass's write step for a test connection: the peer takes every
 * octet proton framed (and ignores it). */
void jn_io_test_write_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    pn_connection_driver_t *d = &conn->driver;
    for (;;) {
        pn_bytes_t buf = pn_connection_driver_write_buffer(d);
        if (buf.size == 0)
            break;
        pn_connection_driver_write_done(d, buf.size);
    }
    jn_io_conn_written_IO(conn, true);
}
