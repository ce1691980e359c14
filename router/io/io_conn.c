/*
 * io_conn.c — one AMQP connection's object from accept/connect to release:
 * its creation (registered and counted live), its references, the poll
 * timer that makes a paused receive or a stalled send look again, and the
 * hand-over of its closure to the core. Everything the connection does on
 * the wire is Junction's own engine's (io_own.c and the io_own_*.c files).
 *
 * Lifetime. An io_conn is refcounted: the I/O side's reference lasts until
 * the end of the pass that saw its transport close (io_loop.c), the core's
 * from a successful jn_core_conn_opened_IO until ops->conn_released, and
 * an armed timer, a queued wake and a running pass hold one each.
 */
#include "io_own.h"

#include <junction/pool.h>
#include <junction/time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic(jn_pool_t *) conn_pool;

/* ---- creation and release ---------------------------------------------- */

static void poll_fire(jn_io_timer_t *timer)
{
    jn_io_conn_t *conn = (jn_io_conn_t *)((char *)timer - offsetof(jn_io_conn_t, poll));
    jn_io_conn_wake(conn);
    jn_io_conn_unref(conn); /* the timer's reference */
}

static void tick_fire(jn_io_timer_t *timer)
{
    jn_io_conn_t *conn = (jn_io_conn_t *)((char *)timer - offsetof(jn_io_conn_t, tick));
    jn_io_conn_wake(conn); /* the pass ticks the engine's idle clock */
    jn_io_conn_unref(conn); /* the timer's reference */
}

static void stall_fire(jn_io_timer_t *timer)
{
    jn_io_conn_t *conn = (jn_io_conn_t *)((char *)timer - offsetof(jn_io_conn_t, stall));
    jn_io_conn_wake(conn); /* the pass looks at the write stall */
    jn_io_conn_unref(conn); /* the timer's reference */
}

static void silence_fire(jn_io_timer_t *timer)
{
    jn_io_conn_t *conn = (jn_io_conn_t *)((char *)timer - offsetof(jn_io_conn_t, silence));
    jn_io_conn_wake(conn);  /* the pass looks at the silence watch */
    jn_io_conn_unref(conn); /* the timer's reference */
}

static void handshake_fire(jn_io_timer_t *timer)
{
    jn_io_conn_t *conn = (jn_io_conn_t *)((char *)timer - offsetof(jn_io_conn_t, handshake));
    jn_io_conn_wake(conn);  /* the pass looks at the handshake deadline */
    jn_io_conn_unref(conn); /* the timer's reference */
}

/* jn_io_conn_new: a connection object (not yet handed to a loop, without
 * its engine: jn_io_own_attach), registered and counted live. Reference 1 (the
 * I/O side's). NULL on ENOMEM. Any thread. */
jn_io_conn_t *jn_io_conn_new(jn_io_t *io, jn_io_endpoint_t *ep, bool incoming)
{
    jn_pool_t *pool = jn_pool_get_once(&conn_pool, "jn_io_conn", sizeof(jn_io_conn_t), 16);
    jn_io_conn_t *conn = pool ? jn_pool_alloc(pool) : NULL;
    if (!conn)
        return NULL;
    memset(conn, 0, sizeof *conn);
    conn->handle.kind = JN_POLL_CONN;
    conn->fd = -1;
    atomic_init(&conn->wake_queued, false);
    atomic_init(&conn->started, false);
    atomic_init(&conn->loop, NULL);
    atomic_init(&conn->move_to, NULL);
    atomic_init(&conn->move_after, 0);
    conn->io = io;
    conn->id = atomic_fetch_add(&io->next_conn_id, 1);
    conn->trace_choice = -1; /* follow the PROTOCOL level (io_trace.c) */
    conn->endpoint = ep;
    conn->incoming = incoming;
    conn->msg_log = ep->cfg.message_logging;
    conn->strip_inbound =
        ep->cfg.strip_annotations == JN_STRIP_BOTH || ep->cfg.strip_annotations == JN_STRIP_IN;
    conn->strip_outbound =
        ep->cfg.strip_annotations == JN_STRIP_BOTH || ep->cfg.strip_annotations == JN_STRIP_OUT;
    conn->inter_router = ep->cfg.role == JN_ROLE_INTER_ROUTER;
    conn->edge = ep->cfg.role == JN_ROLE_EDGE;
    if (conn->inter_router || conn->edge)
        conn->strip_inbound = conn->strip_outbound = false; /* docs/protocol.md */
    atomic_init(&conn->refs, 1);
    conn->poll.fire = poll_fire;
    conn->tick.fire = tick_fire;
    conn->stall.fire = stall_fire;
    conn->handshake.fire = handshake_fire;
    conn->silence.fire = silence_fire;
    conn->poll.conn = conn->tick.conn = conn->stall.conn = conn->handshake.conn = conn;
    conn->silence.conn = conn;
    conn->next_link_id = 1;
    if (!incoming)
        snprintf(conn->host, sizeof conn->host, "%s", ep->shown);
    atomic_fetch_add(&io->pending_frees, 1);
    pthread_mutex_lock(&io->lock);
    ep->users++; /* the endpoint lives while its connections do */
    conn->reg_next = io->conns;
    if (io->conns)
        io->conns->reg_prev = conn;
    io->conns = conn;
    io->live_conns++;
    pthread_mutex_unlock(&io->lock);
    return conn;
}

static void conn_free(jn_io_conn_t *conn)
{
    jn_io_t *io = conn->io;
    jn_io_own_free(conn); /* Junction's own engine's side, if it had one */
    pthread_mutex_lock(&io->lock);
    if (conn->reg_prev)
        conn->reg_prev->reg_next = conn->reg_next;
    else
        io->conns = conn->reg_next;
    if (conn->reg_next)
        conn->reg_next->reg_prev = conn->reg_prev;
    if (!conn->transport_closed) {
        io->live_conns--;
        if (conn->policy_counted)
            io->policy_current--;
        pthread_cond_broadcast(&io->cond);
    }
    jn_io_vhost_uncount_locked(io, conn);
    pthread_mutex_unlock(&io->lock);
    /* The last reference is gone, so no loop can reach conn any more: the
     * thread that dropped it (any thread; the reference count's acq_rel
     * orders it after the owner's last touch) acts as conn's loop for the
     * _IO calls below (JN_ASSERT_IO). */
    jn_io_loop_t *was = jn_io_adopt(conn);
    if (!conn->destroyed && atomic_load_explicit(&conn->started, memory_order_acquire))
        jn_io_conn_destroy_IO(conn); /* never reached its loop's close */
    jn_io_tls_free(conn); /* never started */
    jn_io_adopt_end(was);
    free(conn->check_user);
    conn->check_user = NULL;
    jn_io_endpoint_release(conn->endpoint); /* its last use of the endpoint */
    atomic_fetch_sub(&io->pending_frees, 1);
    jn_pool_free(atomic_load_explicit(&conn_pool, memory_order_acquire), conn);
}

/* jn_io_conn_tryref: take a reference on conn unless its count is already
 * 0 (its last holder is freeing it: conn_free is on its way, waiting for
 * jn_io_t.lock). True when taken. For a thread that reaches conn without
 * a reference of its own, while something keeps its memory (the registry,
 * walked under jn_io_t.lock, which conn_free takes before the pool gets
 * conn back). Any thread. */
bool jn_io_conn_tryref(jn_io_conn_t *conn)
{
    unsigned n = atomic_load_explicit(&conn->refs, memory_order_relaxed);
    do {
        if (n == 0)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&conn->refs, &n, n + 1, memory_order_relaxed,
                                                    memory_order_relaxed));
    return true;
}

/* jn_io_conn_unref: drop a reference; the last one frees. Any thread. */
void jn_io_conn_unref(jn_io_conn_t *conn)
{
    if (atomic_fetch_sub_explicit(&conn->refs, 1, memory_order_acq_rel) == 1)
        conn_free(conn);
}

/* jn_io_conn_poll_later_IO: run a batch soon, so that a paused receive or
 * a stalled send looks again: after JN_IO_POLL_MS when something moved in
 * this batch (progressed), else after twice the last delay (at most
 * JN_IO_POLL_MAX_MS). */
void jn_io_conn_poll_later_IO(jn_io_conn_t *conn, bool progressed)
{
    JN_ASSERT_IO(conn);
    if (conn->transport_closed)
        return;
    if (progressed || conn->poll_ms < JN_IO_POLL_MS)
        conn->poll_ms = JN_IO_POLL_MS;
    else if (conn->poll_ms < JN_IO_POLL_MAX_MS)
        conn->poll_ms *= 2;
    pthread_mutex_lock(&conn->io->lock);
    bool armed = conn->poll.armed;
    pthread_mutex_unlock(&conn->io->lock);
    if (armed)
        return;
    atomic_fetch_add(&conn->refs, 1);
    if (jn_io_timer_cancel(conn->io, &conn->poll))
        jn_io_conn_unref(conn); /* armed meanwhile: keep one reference */
    jn_io_timer_arm(conn->io, &conn->poll, conn->poll_ms);
}

/* jn_io_conn_transport_closed_IO: conn's transport is gone (its engine's
 * links were freed by the caller, io_own.c): end its auth-service
 * exchange, cancel its timers and report the closure to the core and to
 * its connector. The loop frees the rest after this pass. The owning
 * loop's thread. */
void jn_io_conn_transport_closed_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    if (conn->relay && !conn->authsvc)
        jn_io_authsvc_client_closed_IO(conn); /* its auth service exchange ends */
    conn->transport_closed = true;
    if (jn_io_timer_cancel(conn->io, &conn->poll))
        jn_io_conn_unref(conn); /* the timer's; the I/O reference remains */
    if (jn_io_timer_cancel(conn->io, &conn->tick))
        jn_io_conn_unref(conn);
    if (jn_io_timer_cancel(conn->io, &conn->stall))
        jn_io_conn_unref(conn);
    if (jn_io_timer_cancel(conn->io, &conn->handshake))
        jn_io_conn_unref(conn);
    if (jn_io_timer_cancel(conn->io, &conn->silence))
        jn_io_conn_unref(conn);
    if (conn->core) {
        jn_core_conn_closed_IO(conn->core);
        conn->core = NULL;
    }
    if (conn->opened)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO, JN_IO_CONN_FMT " Connection Closed", conn->id);
    jn_io_t *io = conn->io;
    pthread_mutex_lock(&io->lock);
    io->live_conns--;
    if (conn->policy_counted)
        io->policy_current--;
    uint64_t n_connections = io->policy_current;
    pthread_mutex_unlock(&io->lock);
    jn_io_vhost_log_close_IO(conn, n_connections); /* before its rules go */
    pthread_mutex_lock(&io->lock);
    jn_io_vhost_uncount_locked(io, conn);
    pthread_cond_broadcast(&io->cond);
    pthread_mutex_unlock(&io->lock);
    if (!conn->incoming && !conn->authsvc) /* an auth service's is made once */
        jn_io_connector_closed_IO(conn->endpoint, conn, conn->opened);
}
