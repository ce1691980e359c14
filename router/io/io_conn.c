/*
 * io_conn.c — one AMQP connection from accept/connect to release: the open
 * frame's decoration, proton's events (sessions and links are io_link.c's),
 * the core's work items, the wake guard, and the hand-over of closure to
 * the core.
 *
 * Lifetime. An io_conn is refcounted: the I/O side's reference lasts until
 * the end of the pass that saw PN_TRANSPORT_CLOSED (which then frees the
 * proton objects, io_loop.c), the core's from a successful
 * jn_core_conn_opened_IO until ops->conn_released, and an armed timer, a
 * queued wake and a running pass hold one each. Links live in conn->links until JN_WORK_LINK_RELEASED, or until
 * the connection is freed. Everything that refers to proton objects (the
 * delivery references in pn_delivery contexts, partly received or sent
 * messages) is released on the I/O thread when the link detaches or the
 * transport closes, while the proton objects still exist.
 *
 * Work. The core wakes the connection (jn_io_conn_wake, io_loop.c) when
 * its work queue goes from empty to non-empty; every pass of the
 * connection — wake or not — ends its events by taking all the work there
 * is (cheap when there is none) and carrying it out, then finishing what
 * links left pending (the core is told of new octets once per pass; paused
 * receives and stalled sends are retried). The loop writes what all of
 * that produced after it, in one go.
 */
#include "io_own.h"

#include <junction/pool.h>
#include <junction/time.h>

#include <proton/codec.h>
#include <proton/sasl.h>

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
    jn_io_conn_wake(conn); /* the pass calls pn_transport_tick */
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

static void put_symbol(pn_data_t *d, const char *s)
{
    pn_data_put_symbol(d, pn_bytes(strlen(s), s));
}

static void put_string(pn_data_t *d, const char *s, size_t n)
{
    pn_data_put_string(d, pn_bytes(n, s));
}

/* One failover URL "[scheme://]host[:port]" (n octets at s, trimmed) as
 * the map clients read: scheme (when given), network-host, port (when
 * given); an IPv6 host is written in brackets, which stay. */
static void put_failover_url(pn_data_t *d, const char *s, size_t n)
{
    pn_data_put_map(d);
    pn_data_enter(d);
    const char *sep = NULL;
    for (size_t i = 0; i + 3 <= n && !sep; i++)
        if (memcmp(s + i, "://", 3) == 0)
            sep = s + i;
    if (sep) {
        put_symbol(d, "scheme");
        put_string(d, s, (size_t)(sep - s));
        n -= (size_t)(sep + 3 - s);
        s = sep + 3;
    }
    const char *colon = NULL;
    for (size_t i = n; i > 0 && !colon; i--)
        if (s[i - 1] == ']')
            break;
        else if (s[i - 1] == ':')
            colon = s + i - 1;
    put_symbol(d, "network-host");
    put_string(d, s, colon ? (size_t)(colon - s) : n);
    if (colon) {
        put_symbol(d, "port");
        put_string(d, colon + 1, n - (size_t)(colon + 1 - s));
    }
    pn_data_exit(d);
}

/* A listener's failoverUrls as the failover-server-list property. */
static void put_failover_list(pn_data_t *props, const char *urls)
{
    put_symbol(props, "failover-server-list");
    pn_data_put_list(props);
    pn_data_enter(props);
    for (const char *p = urls; *p;) {
        size_t n = strcspn(p, ",");
        const char *s = p;
        size_t len = n;
        while (len && (*s == ' ' || *s == '\t')) {
            s++;
            len--;
        }
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
        if (len)
            put_failover_url(props, s, len);
        p += n + (p[n] == ',');
    }
    pn_data_exit(props);
}

void jn_io_open_properties_put(const jn_io_conn_t *conn, pn_data_t *props)
{
    pn_data_put_map(props);
    pn_data_enter(props);
    pn_data_put_symbol(props, pn_bytes(7, "product"));
    pn_data_put_string(props, pn_bytes(20, "qpid-dispatch-router"));
    pn_data_put_symbol(props, pn_bytes(7, "version"));
    pn_data_put_string(props, pn_bytes(6, "1.19.0"));
    pn_data_put_symbol(props, pn_bytes(10, "qd.conn-id"));
    pn_data_put_int(props, (int32_t)conn->id);
    const jn_endpoint_config_t *cfg = &conn->endpoint->cfg;
    if (conn->inter_router && cfg->cost > 1) {
        put_symbol(props, "qd.inter-router-cost");
        pn_data_put_int(props, (int32_t)cfg->cost);
    }
    if (conn->inter_router || conn->edge) {
        put_symbol(props, "qd.annotations-version");
        pn_data_put_int(props, 1);
    }
    if (conn->incoming && cfg->failover_urls)
        put_failover_list(props, cfg->failover_urls);
    if (cfg->open_properties)
        jn_io_put_open_properties(props, cfg->open_properties, cfg->open_properties_len);
    pn_data_exit(props);
}

/* The open frame qdrouterd 1.19 sends (docs/protocol.md, "Inter-router connections"): container id,
 * the ANONYMOUS-RELAY and qd.streaming-links capabilities (offered and
 * desired) and the properties above. Clients, tools and 1.19 routers look
 * at these. */
static void conn_decorate(jn_io_conn_t *conn)
{
    pn_connection_t *pc = conn->pn_io;
    pn_connection_set_container(pc, conn->io->container_id);
    pn_data_t *caps[2] = {pn_connection_offered_capabilities(pc),
                          pn_connection_desired_capabilities(pc)};
    for (int i = 0; i < 2; i++) {
        pn_data_put_array(caps[i], false, PN_SYMBOL);
        pn_data_enter(caps[i]);
        put_symbol(caps[i], "ANONYMOUS-RELAY");
        put_symbol(caps[i], "qd.streaming-links");
        pn_data_exit(caps[i]);
    }
    jn_io_open_properties_put(conn, pn_connection_properties(pc));
}

/* jn_io_conn_new: a connection object with its pn_connection (not yet
 * handed to a loop), registered and counted live. Reference 1 (the
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
    conn->pn_io = pn_connection();
    if (!conn->pn_io) {
        jn_pool_free(pool, conn);
        return NULL;
    }
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
    uint32_t channel_max = ep->cfg.max_sessions ? ep->cfg.max_sessions - 1 : 0;
    conn->screen = jn_screen_new(ep->cfg.max_frame_size,
                                 (uint16_t)(channel_max > 65535 ? 65535 : channel_max));
    if (!conn->screen) {
        pn_connection_free(conn->pn_io);
        jn_pool_free(pool, conn);
        return NULL;
    }
    pn_connection_set_context(conn->pn_io, conn);
    conn_decorate(conn);
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
    while (conn->links) {
        conn->links->pn = NULL; /* proton's objects are gone or not ours */
        jn_io_link_free_IO(conn->links);
    }
    if (!conn->destroyed) {
        if (conn->driver.transport)
            jn_io_conn_destroy_IO(conn); /* never reached its loop's close */
        else if (conn->pn_io)
            pn_connection_free(conn->pn_io); /* never started */
    }
    jn_io_tls_free(conn); /* never started */
    jn_io_adopt_end(was);
    free(conn->check_user);
    conn->check_user = NULL;
    jn_screen_free(conn->screen);
    conn->screen = NULL;
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

/* jn_io_link_set_busy_IO: finish something for link at the end of the
 * batch (tell the core of new octets, retry a paused or stalled link). */
void jn_io_link_set_busy_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    if (link->busy)
        return;
    link->busy = true;
    link->busy_next = link->conn->busy;
    link->conn->busy = link;
}

/* ---- connection events --------------------------------------------------- */

static void conn_close_IO(jn_io_conn_t *conn, const char *condition, const char *description)
{
    JN_ASSERT_IO(conn);
    if (conn->closing || !conn->pn_io)
        return;
    conn->closing = true;
    if (condition) {
        pn_condition_t *c = pn_connection_condition(conn->pn_io);
        pn_condition_set_name(c, condition);
        if (description)
            pn_condition_set_description(c, description);
    }
    if (pn_connection_state(conn->pn_io) & PN_LOCAL_UNINIT)
        pn_connection_open(conn->pn_io);
    pn_connection_close(conn->pn_io);
}

/* jn_io_conn_abort_IO: close conn's transport at once with condition and
 * description (the transport's error, logged when it closes): for a peer
 * that is not heard any more, whose close would never come
 * (JN_WORK_CONN_CLOSE with abort, io_watch.c's silence watch).
 * PN_TRANSPORT_CLOSED follows in this pass. The owning loop's thread. */
void jn_io_conn_abort_IO(jn_io_conn_t *conn, const char *condition, const char *description)
{
    JN_ASSERT_IO(conn);
    pn_connection_driver_t *d = &conn->driver;
    if (!conn->pn_io || pn_connection_driver_finished(d))
        return;
    conn->closing = true;
    pn_connection_driver_errorf(d, condition ? condition : "amqp:connection:forced", "%s",
                                description ? description : "");
    pn_connection_driver_close(d);
}

/* jn_io_conn_close_IO: close conn with condition (NULL: none) and
 * description, once (io_private.h). The owning loop's thread. */
void jn_io_conn_close_IO(jn_io_conn_t *conn, const char *condition, const char *description)
{
    JN_ASSERT_IO(conn);
    conn_close_IO(conn, condition, description);
}

/* jn_io_conn_refuse_IO: the frame screen refused the peer's stream (the
 * octets before the offending frame went to proton): log one line naming
 * the peer and the rule, and close the connection with the screen's error
 * (AMQP 1.0 2.4.3: a close frame carrying it). In the protocol header or
 * the SASL layer no close frame can carry it: the transport is closed at
 * once. No more input reaches proton (conn->screened_out; io_loop.c ends
 * the input once our close is written). The owning loop's thread. */
void jn_io_conn_refuse_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    const char *cond = jn_screen_condition(conn->screen);
    const char *desc = jn_screen_description(conn->screen);
    conn->screened_out = true;
    if (conn->incoming)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               JN_IO_CONN_FMT " Connection from %s (to %s) failed: %s %s (frame screen)", conn->id, conn->host,
               conn->endpoint->shown, cond, desc);
    else
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               JN_IO_CONN_FMT " Connection to %s failed: %s %s (frame screen)",
               conn->id, conn->host, cond, desc);
    if (jn_screen_in_sasl(conn->screen) || !conn->pn_io) {
        pn_connection_driver_errorf(&conn->driver, cond, "%s", desc);
        pn_connection_driver_close(&conn->driver);
        return;
    }
    if (pn_connection_state(conn->pn_io) & PN_REMOTE_UNINIT) {
        /* refused before the peer's open (its first frame is not one):
         * proton holds a close until it has the peer's open, which will
         * not come now, so the connection would sit with its error unsaid
         * until the idle timeout. End the input with the error instead,
         * once what proton framed so far (the SASL outcome, our header)
         * is written: ending it earlier drops that output. Proton then
         * answers with its open and a close carrying the error. */
        conn->screen_eos = true;
        return;
    }
    conn->closing = false; /* close again, now with the error */
    conn_close_IO(conn, cond, desc);
}

static void on_bound(jn_io_conn_t *conn)
{
    if (!conn->incoming)
        return;
    /* conn->host: the peer's address, filled in at accept (io_endpoint.c) */
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO, JN_IO_CONN_FMT " Accepted connection to %s from %s",
           conn->id, conn->endpoint->shown, conn->host);
}

static void on_remote_close(jn_io_conn_t *conn)
{
    pn_condition_t *c = pn_connection_remote_condition(conn->pn_io);
    if (pn_condition_is_set(c))
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO, JN_IO_CONN_FMT " Connection closed by peer: %s %s",
               conn->id, pn_condition_get_name(c),
               pn_condition_get_description(c) ? pn_condition_get_description(c) : "");
    conn_close_IO(conn, NULL, NULL);
}

static void on_transport_error(jn_io_conn_t *conn, pn_transport_t *t)
{
    pn_condition_t *c = pn_transport_condition(t);
    if (!pn_condition_is_set(c) || conn->screened_out || conn->refused_logged ||
        conn->handshake_expired)
        return; /* refused by the screen, by TLS, or timed out: logged already */
    const char *desc = pn_condition_get_description(c);
    if (conn->incoming)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
               JN_IO_CONN_FMT " Connection from %s (to %s) failed: %s %s", conn->id, conn->host,
               conn->endpoint->shown, pn_condition_get_name(c), desc ? desc : "");
    else
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO, JN_IO_CONN_FMT " Connection to %s failed: %s %s",
               conn->id, conn->host, pn_condition_get_name(c), desc ? desc : "");
    jn_io_connector_note_IO(conn, false, JN_IO_CONN_FMT " Connection to %s failed: %s %s",
                            conn->id, conn->host, pn_condition_get_name(c), desc ? desc : "");
}

/* The peer's input ended. When the peer neither closed the connection nor
 * was cut off (proton then sets the transport's condition and sends the
 * close itself), proton stopped reading because a frame made no sense (an
 * unknown performative, an undecodable body): it does not close the
 * connection for that, so close it here, with the error. Before the peer's
 * open (in SASL, or after it without an open) proton would hold our close
 * until that open, which cannot come now, and the handshake timeout leaves
 * a closing connection alone: the connection would stay until the peer
 * left, so the transport is cut at once. */
static void on_tail_closed(jn_io_conn_t *conn, pn_transport_t *t)
{
    if (conn->screened_out ||
        pn_condition_is_set(pn_transport_condition(t)) ||
        (pn_connection_state(conn->pn_io) & PN_REMOTE_CLOSED))
        return;
    const char *cond = "amqp:connection:framing-error";
    const char *desc = "invalid frame (unknown performative or undecodable body)";
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
           JN_IO_CONN_FMT " Connection from %s (to %s) failed: %s %s", conn->id, conn->host,
           conn->endpoint->shown, cond, desc);
    if (pn_connection_state(conn->pn_io) & PN_REMOTE_UNINIT) {
        pn_connection_driver_errorf(&conn->driver, cond, "%s", desc);
        pn_connection_driver_close(&conn->driver);
        return;
    }
    conn->closing = false; /* closing again, now with the error */
    pn_condition_t *c = pn_connection_condition(conn->pn_io);
    pn_condition_set_name(c, cond);
    pn_condition_set_description(c, desc);
    if (pn_connection_state(conn->pn_io) & PN_LOCAL_UNINIT)
        pn_connection_open(conn->pn_io);
    if (!(pn_connection_state(conn->pn_io) & PN_LOCAL_CLOSED))
        pn_connection_close(conn->pn_io);
    conn->closing = true;
}

/* The transport is gone: release everything that refers to proton objects,
 * stop the core's wakes reaching proton, and report the closure. */
void jn_io_conn_transport_closed_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    for (jn_io_link_t *l = conn->links; l; l = l->next) {
        /* No budget wake from here on: the waker (rx_wake, any thread)
         * holds no reference of its own and relies on the I/O side's,
         * which this pass drops; left set until link_free, it could wake
         * the connection after its count reached 0 (jn_io_conn_wake). */
        jn_rx_budget_set_waker(l->budget, NULL, NULL);
        jn_io_rx_link_gone_IO(l);
        jn_io_tx_link_gone_IO(l);
        if (l->pn) {
            pn_link_set_context(l->pn, NULL);
            l->pn = NULL;
        }
    }
    conn->busy = NULL;
    for (jn_io_link_t *l = conn->links; l; l = l->next)
        l->busy = false;
    if (conn->relay && !conn->authsvc)
        jn_io_authsvc_client_closed_IO(conn); /* its auth service exchange ends */
    conn->transport_closed = true;
    pn_connection_set_context(conn->pn_io, NULL);
    conn->pn_io = NULL; /* the loop frees them after this pass */
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

/* ---- after a write step (io_loop.c's pass, io_bridge.c, io_test.c) --------- */

/* jn_io_conn_written_IO: after a write step: end the input of a stream the
 * screen refused, or of a connection management closed, once our answer
 * is out (writable: the socket took all it was given). The owning loop's thread (or a test's). */
void jn_io_conn_written_IO(jn_io_conn_t *conn, bool writable)
{
    JN_ASSERT_IO(conn);
    pn_connection_driver_t *d = &conn->driver;
    /* refused by the frame screen before the peer's open (io_conn.c,
     * jn_io_conn_refuse_IO): once what was framed is out, end the input
     * with the screen's error (proton then frames its open and a close) */
    if (conn->screen_eos && writable && pn_connection_driver_write_buffer(d).size == 0) {
        conn->screen_eos = false;
        pn_connection_driver_errorf(d, jn_screen_condition(conn->screen), "%s",
                                    jn_screen_description(conn->screen));
        pn_connection_driver_read_close(d);
    }
    /* refused by the frame screen, or closed by management: once our
     * close is out, the input ends here (proton gets no more of it),
     * whatever the peer still sends or however long it takes to answer */
    if ((conn->screened_out || conn->forced_close) && pn_connection_driver_write_closed(d) &&
        !pn_connection_driver_read_closed(d))
        pn_connection_driver_read_close(d);
}

/* ---- events ------------------------------------------------------------------ */

/* jn_io_conn_event_IO: one event of conn's batch. */
void jn_io_conn_event_IO(jn_io_conn_t *conn, pn_event_t *event)
{
    JN_ASSERT_IO(conn);
    if (conn->transport_closed)
        return;
    /* a connection to an auth service (conn->authsvc, authsvc.c) never
     * reaches the core: its Open and closure go to authsvc.c, and the
     * sessions and links a service might begin are left alone (so no
     * link of ours, and no delivery or flow event of ours, exists on it) */
    switch (pn_event_type(event)) {
    case PN_CONNECTION_BOUND:
        on_bound(conn);
        break;
    case PN_CONNECTION_REMOTE_OPEN:
        if (conn->authsvc)
            jn_io_authsvc_event_IO(conn, event);
        else
            jn_io_conn_remote_open_IO(conn, pn_event_transport(event));
        break;
    case PN_CONNECTION_REMOTE_CLOSE:
        on_remote_close(conn);
        break;
    case PN_SESSION_REMOTE_OPEN:
        if (!conn->authsvc)
            jn_io_session_remote_open_IO(conn, pn_event_session(event));
        break;
    case PN_SESSION_REMOTE_CLOSE:
        jn_io_session_remote_close_IO(conn, pn_event_session(event));
        break;
    case PN_LINK_REMOTE_OPEN:
        if (!conn->authsvc)
            jn_io_link_remote_open_IO(conn, pn_event_link(event));
        break;
    case PN_LINK_REMOTE_CLOSE:
    case PN_LINK_REMOTE_DETACH:
        jn_io_link_remote_close_IO(conn, pn_event_link(event), pn_event_type(event) == PN_LINK_REMOTE_CLOSE);
        break;
    case PN_LINK_FLOW: {
        jn_io_link_t *link = pn_link_get_context(pn_event_link(event));
        if (link && link->dir == JN_LINK_OUTGOING)
            jn_io_tx_flow_IO(link);
        else if (link)
            jn_io_rx_flow_IO(link);
        break;
    }
    case PN_DELIVERY: {
        pn_delivery_t *pd = pn_event_delivery(event);
        jn_io_link_t *link = pn_link_get_context(pn_delivery_link(pd));
        if (!link)
            break;
        if (link->dir == JN_LINK_INCOMING)
            jn_io_rx_delivery_IO(link, pd);
        else
            jn_io_tx_delivery_IO(link, pd);
        break;
    }
    case PN_TRANSPORT_ERROR: {
        pn_condition_t *tc = pn_transport_condition(pn_event_transport(event));
        if (pn_condition_is_set(tc))
            jn_io_vhost_session_denied_IO(conn, pn_condition_get_name(tc),
                                          pn_condition_get_description(tc));
        on_transport_error(conn, pn_event_transport(event));
        break;
    }
    case PN_TRANSPORT_TAIL_CLOSED:
        on_tail_closed(conn, pn_event_transport(event));
        break;
    case PN_TRANSPORT_CLOSED:
        if (conn->authsvc)
            jn_io_authsvc_event_IO(conn, event);
        jn_io_conn_transport_closed_IO(conn);
        break;
    default:
        break;
    }
}

/* The link a work item is about (its io_link), or NULL. */
static jn_io_link_t *work_link(const jn_work_t *w)
{
    jn_core_link_t *cl = w->link ? w->link : (w->dlv ? jn_delivery_link(w->dlv) : NULL);
    return cl ? jn_core_link_io(cl) : NULL;
}

/* Carry out one work item; frees it (or keeps it: DELIVERY_SEND). */
static void work_do_IO(jn_io_conn_t *conn, jn_work_t *w)
{
    JN_ASSERT_IO(conn);
    jn_io_link_t *link = work_link(w); /* LINK_ATTACH: another connection's, unused */
    if (!link && w->type != JN_WORK_CONN_CLOSE && w->type != JN_WORK_LINK_ATTACH) {
        jn_work_free(w); /* cannot happen: the core names a live link */
        return;
    }
    switch (w->type) {
    case JN_WORK_LINK_OPEN:
        link->passthrough = w->passthrough;
        jn_io_link_open_IO(link, w->address);
        break;
    case JN_WORK_LINK_CLOSE:
        jn_io_link_close_IO(link, w->condition, w->description);
        break;
    case JN_WORK_LINK_DETACH:
        jn_io_link_detach_IO(link, w->condition, w->description);
        break;
    case JN_WORK_LINK_RELEASED:
        jn_io_link_release_IO(link);
        break;
    case JN_WORK_LINK_CREDIT:
        jn_io_rx_credit_IO(link, w->credit, w->drain);
        break;
    case JN_WORK_LINK_DRAINED:
        jn_io_tx_drained_IO(link);
        break;
    case JN_WORK_DELIVERY_SEND:
        jn_io_tx_send_IO(link, w); /* takes w */
        return;
    case JN_WORK_DELIVERY_CONTINUE:
        jn_io_tx_continue_IO(link, w->dlv);
        break;
    case JN_WORK_DELIVERY_UPDATE:
        if (link->dir == JN_LINK_INCOMING)
            jn_io_rx_update_IO(link, w);
        else
            jn_io_tx_update_IO(link, w);
        break;
    case JN_WORK_CONN_CLOSE:
        if (w->unheard_ms && jn_io_silence_judge_IO(conn, w))
            break; /* heard: kept open, watched (io_watch.c) */
        if (w->abort)
            jn_io_conn_abort_IO(conn, w->condition, w->description);
        else
            conn_close_IO(conn, w->condition, w->description);
        conn->forced_close = conn->forced_close || w->forced;
        break;
    case JN_WORK_LINK_ATTACH:
        jn_io_route_attach_IO(conn, w);
        break;
    }
    jn_work_free(w);
}

/* jn_io_conn_batch_end_IO: after the events of a pass of conn (io_loop.c),
 * while the transport lives: the core's work, then the busy links. */
void jn_io_conn_batch_end_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    if (conn->transport_closed)
        return;
    if (atomic_load_explicit(&conn->io->stopping, memory_order_relaxed) && !conn->closing) {
        if (conn->authsvc)
            jn_io_authsvc_stop_IO(conn); /* its client's exchange ends now */
        else
            conn_close_IO(conn, NULL, NULL);
    }
    jn_work_t *items[JN_IO_WORK_BATCH];
    size_t n;
    do {
        n = conn->core ? jn_core_conn_take_work_IO(conn->core, items, JN_IO_WORK_BATCH) : 0;
        for (size_t i = 0; i < n; i++)
            work_do_IO(conn, items[i]);
    } while (n == JN_IO_WORK_BATCH);
    jn_io_link_t *busy = conn->busy;
    conn->busy = NULL;
    bool again = false, progressed = false;
    while (busy) {
        jn_io_link_t *l = busy;
        busy = l->busy_next;
        l->busy = false;
        bool incoming = l->dir == JN_LINK_INCOMING;
        bool moved = incoming ? jn_io_rx_resume_IO(l) : jn_io_tx_resume_IO(l);
        again = again || (incoming ? l->rx.paused : l->tx.stalled);
        progressed = progressed || moved;
    }
    if (again)
        jn_io_conn_poll_later_IO(conn, progressed);
}

/* jn_io_release_unsettled_IO: drop the references held for pl's unsettled
 * deliveries (their contexts and the proton references taken with them,
 * jn_io_pd_keep), leaving them unsettled: the link or its connection is
 * going. The connection's loop thread. */
void jn_io_release_unsettled_IO(pn_link_t *pl)
{
    JN_ASSERT_SOME_IO();
    pn_delivery_t *next;
    for (pn_delivery_t *pd = pn_unsettled_head(pl); pd; pd = next) {
        next = pn_unsettled_next(pd);
        jn_delivery_t *dlv = pn_delivery_get_context(pd);
        if (dlv)
            jn_io_pd_release(pd, dlv, false);
    }
}
