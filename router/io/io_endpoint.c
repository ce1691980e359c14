/*
 * io_endpoint.c — listeners and connectors (the `listener` and `connector`
 * entities): their checked copy of the configuration, the transport every
 * connection of theirs gets (frame size, channel max, idle timeout, SASL),
 * the listener's events, and the connector's retry timing.
 *
 * Retry timing (connector): the first attempt is made at start. After a
 * connection that reached open is lost, the next attempt comes 100 ms later;
 * each further attempt that fails before open doubles the delay, up to 5 s,
 * where it stays (100, 200, 400, 800 ms, 1.6, 3.2, 5, 5, ... s). qdrouterd
 * 1.19 waits 2 s after a loss and 5 s after a failure; a faster first retry
 * brings a restarted peer back sooner, and the 5 s ceiling keeps an absent
 * peer at qdrouterd's rate.
 *
 * Threads: jn_io_add_* on the main thread before start; listener events and
 * retries on workers; endpoint state under io->lock.
 */
#include "io_private.h"

#include <junction/time.h>

#include <proton/sasl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_FIRST_MS 100u
#define RETRY_MAX_MS   5000u

static void connector_retry_fire(jn_io_timer_t *timer);

static const char *role_name(jn_conn_role_t role)
{
    switch (role) {
    case JN_ROLE_NORMAL:
        return "normal";
    case JN_ROLE_INTER_ROUTER:
        return "inter-router";
    case JN_ROLE_ROUTE_CONTAINER:
        return "route-container";
    case JN_ROLE_EDGE:
        return "edge";
    }
    return "?";
}

void jn_io_endpoint_free(jn_io_endpoint_t *ep)
{
    if (!ep)
        return;
    free((char *)ep->cfg.name);
    free((char *)ep->cfg.host);
    free((char *)ep->cfg.port);
    free((char *)ep->cfg.sasl_mechanisms);
    free(ep);
}

static char *dup_opt(const char *s, bool *failed)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *failed = true;
    return d;
}

/* Fill the defaults io.h promises; copy the strings. */
static int endpoint_copy(jn_io_endpoint_t *ep, const jn_endpoint_config_t *cfg)
{
    bool failed = false;
    ep->cfg = *cfg;
    ep->cfg.name = dup_opt(cfg->name, &failed);
    ep->cfg.host = dup_opt(cfg->host ? cfg->host : "", &failed);
    ep->cfg.port = dup_opt(cfg->port && cfg->port[0] ? cfg->port : "amqp", &failed);
    ep->cfg.sasl_mechanisms = dup_opt(cfg->sasl_mechanisms, &failed);
    if (failed)
        return JN_ENOMEM;
    if (ep->cfg.max_frame_size == 0)
        ep->cfg.max_frame_size = 16384;
    if (ep->cfg.max_frame_size < 512)
        ep->cfg.max_frame_size = 512;
    if (ep->cfg.max_sessions == 0 || ep->cfg.max_sessions > 32768)
        ep->cfg.max_sessions = 32768;
    if (ep->cfg.link_capacity == 0)
        ep->cfg.link_capacity = 250;
    return 0;
}

static int endpoint_add(jn_io_t *io, const jn_endpoint_config_t *cfg, bool listener)
{
    const char *kind = listener ? "Listener" : "Connector";
    if (cfg->role != JN_ROLE_NORMAL && cfg->role != JN_ROLE_INTER_ROUTER) {
        JN_LOG(JN_LOG_MOD_CONN_MGR, JN_LOG_ERROR, "%s %s: role %s is not supported", kind,
               cfg->name ? cfg->name : "", role_name(cfg->role));
        return JN_EINVAL;
    }
    jn_io_endpoint_t *ep = calloc(1, sizeof *ep);
    if (!ep)
        return JN_ENOMEM;
    ep->io = io;
    ep->is_listener = listener;
    ep->retry.fire = connector_retry_fire;
    if (endpoint_copy(ep, cfg) != 0) {
        jn_io_endpoint_free(ep);
        return JN_ENOMEM;
    }
    int n = pn_proactor_addr(ep->addr, sizeof ep->addr, ep->cfg.host, ep->cfg.port);
    snprintf(ep->shown, sizeof ep->shown, "%s:%s", ep->cfg.host, ep->cfg.port);
    if (n < 0 || (size_t)n >= sizeof ep->addr) {
        JN_LOG(JN_LOG_MOD_CONN_MGR, JN_LOG_ERROR, "%s %s: address too long", kind, ep->shown);
        jn_io_endpoint_free(ep);
        return JN_EINVAL;
    }
    pthread_mutex_lock(&io->lock);
    jn_io_endpoint_t **p = &io->endpoints;
    while (*p)
        p = &(*p)->next;
    *p = ep;
    bool started = io->started;
    pthread_mutex_unlock(&io->lock);
    JN_LOG(JN_LOG_MOD_CONN_MGR, JN_LOG_INFO, "Configured %s: %s proto=any, role=%s", kind,
           ep->shown, role_name(ep->cfg.role));
    if (started) {
        if (listener) {
            pthread_mutex_lock(&io->lock);
            jn_io_listen(io, ep);
            pthread_mutex_unlock(&io->lock);
        } else {
            jn_io_connect(ep);
        }
    }
    return 0;
}

int jn_io_add_listener(jn_io_t *io, const jn_endpoint_config_t *cfg)
{
    return endpoint_add(io, cfg, true);
}

int jn_io_add_connector(jn_io_t *io, const jn_endpoint_config_t *cfg)
{
    return endpoint_add(io, cfg, false);
}

/* jn_io_transport_new: a transport set up as cfg says (AMQP open limits
 * and SASL), in server mode for accepted connections. NULL on ENOMEM. */
pn_transport_t *jn_io_transport_new(const jn_endpoint_config_t *cfg, bool server)
{
    pn_transport_t *t = pn_transport();
    if (!t)
        return NULL;
    if (server)
        pn_transport_set_server(t);
    pn_transport_set_max_frame(t, cfg->max_frame_size);
    /* channel-max is the highest channel number: maxSessions - 1 */
    pn_transport_set_channel_max(t, (uint16_t)(cfg->max_sessions - 1));
    /* proton advertises half of it, as qdrouterd (mesh-protocol.md 2.2) */
    pn_transport_set_idle_timeout(t, cfg->idle_timeout_seconds * 1000u);
    pn_sasl_t *sasl = pn_sasl(t);
    if (cfg->sasl_mechanisms && cfg->sasl_mechanisms[0])
        pn_sasl_allowed_mechs(sasl, cfg->sasl_mechanisms);
    /* qdrouterd 1.19 allows mechanisms such as PLAIN without TLS */
    pn_sasl_set_allow_insecure_mechs(sasl, true);
    pn_transport_require_auth(t, server && cfg->authenticate_peer);
    return t;
}

/* jn_io_listen: start listening on ep. io->lock held. */
int jn_io_listen(jn_io_t *io, jn_io_endpoint_t *ep)
{
    pn_listener_t *l = pn_listener();
    if (!l)
        return JN_ENOMEM;
    pn_listener_set_context(l, ep);
    ep->listener = l;
    ep->state = JN_EP_PENDING;
    io->pending_listeners++;
    pn_proactor_listen(io->proactor, l, ep->addr, JN_IO_LISTEN_BACKLOG);
    return 0;
}

/* refuse_accept: take a connection proton has for us and close it at once
 * (no AMQP: the descriptor is what we are short of). Logged at most once a
 * second. Listener's thread. */
static void refuse_accept(jn_io_t *io, jn_io_endpoint_t *ep, pn_listener_t *l, size_t live)
{
    int64_t now = jn_time_mono_ms();
    pthread_mutex_lock(&io->lock);
    bool log = now - io->refused_logged_at >= 1000;
    if (log)
        io->refused_logged_at = now;
    pthread_mutex_unlock(&io->lock);
    if (log)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               "Refusing connections on %s: %zu open, the limit from the file-descriptor limit "
               "(ulimit -n) is %zu",
               ep->shown, live, io->max_conns);
    pn_transport_t *t = pn_transport();
    if (t) {
        pn_transport_close_tail(t);
        pn_transport_close_head(t);
    }
    pn_listener_accept2(l, NULL, t);
}

static void listener_accept(jn_io_t *io, jn_io_endpoint_t *ep, pn_listener_t *l)
{
    pthread_mutex_lock(&io->lock);
    size_t live = io->live_conns;
    pthread_mutex_unlock(&io->lock);
    if (live >= io->max_conns) {
        refuse_accept(io, ep, l, live);
        return;
    }
    jn_io_conn_t *conn = jn_io_conn_new(io, ep, true);
    pn_transport_t *t = conn ? jn_io_transport_new(&ep->cfg, true) : NULL;
    if (!t) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, "Out of memory accepting a connection on %s",
               ep->shown);
        /* proton needs the accept: take it with its own objects and let
         * the transport close at once */
        pn_transport_t *t2 = pn_transport();
        if (t2)
            pn_transport_close_tail(t2);
        if (conn)
            pn_connection_set_context(conn->pn, NULL);
        pn_listener_accept2(l, conn ? conn->pn : NULL, t2);
        if (conn)
            jn_io_conn_unref(conn);
        return;
    }
    pn_listener_accept2(l, conn->pn, t);
}

/* Listener events (a listener's batch). */
void jn_io_listener_event(jn_io_t *io, pn_event_t *event)
{
    pn_listener_t *l = pn_event_listener(event);
    jn_io_endpoint_t *ep = pn_listener_get_context(l);
    if (!ep)
        return;
    switch (pn_event_type(event)) {
    case PN_LISTENER_OPEN:
        pthread_mutex_lock(&io->lock);
        ep->state = JN_EP_OPEN;
        io->pending_listeners--;
        pthread_cond_broadcast(&io->cond);
        pthread_mutex_unlock(&io->lock);
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_NOTICE, "Listening on %s", ep->shown);
        break;
    case PN_LISTENER_ACCEPT:
        listener_accept(io, ep, l);
        break;
    case PN_LISTENER_CLOSE: {
        pn_condition_t *cond = pn_listener_condition(l);
        pthread_mutex_lock(&io->lock);
        bool failed_open = ep->state == JN_EP_PENDING;
        if (failed_open)
            io->pending_listeners--;
        ep->state = failed_open ? JN_EP_FAILED : JN_EP_CLOSED;
        ep->listener = NULL;
        pthread_cond_broadcast(&io->cond);
        pthread_mutex_unlock(&io->lock);
        pn_listener_set_context(l, NULL);
        if (pn_condition_is_set(cond))
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, "Listener error on %s: %s (%s)", ep->shown,
                   pn_condition_get_description(cond), pn_condition_get_name(cond));
        else
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO, "Stopped listening on %s", ep->shown);
        break;
    }
    default:
        break;
    }
}

/* ---- connectors ---------------------------------------------------------- */

static void connector_retry_fire(jn_io_timer_t *timer)
{
    jn_io_endpoint_t *ep = (jn_io_endpoint_t *)((char *)timer - offsetof(jn_io_endpoint_t, retry));
    jn_io_connect(ep);
}

/* jn_io_connect: one connection attempt for connector ep. Any thread. */
void jn_io_connect(jn_io_endpoint_t *ep)
{
    jn_io_t *io = ep->io;
    if (atomic_load(&io->stopping))
        return;
    jn_io_conn_t *conn = jn_io_conn_new(io, ep, false);
    pn_transport_t *t = conn ? jn_io_transport_new(&ep->cfg, false) : NULL;
    if (!t) {
        if (conn) {
            pn_connection_free(conn->pn); /* never handed to the proactor */
            conn->pn = conn->pn_io = NULL;
            jn_io_conn_unref(conn);
        }
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, "Out of memory connecting to %s", ep->shown);
        jn_io_timer_arm(io, &ep->retry, RETRY_MAX_MS);
        return;
    }
    pthread_mutex_lock(&io->lock);
    ep->conn = conn;
    ep->state = JN_EP_PENDING;
    pthread_mutex_unlock(&io->lock);
    pn_connection_set_hostname(conn->pn, ep->cfg.host);
    pn_connection_open(conn->pn);
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO, JN_IO_CONN_FMT " Connecting to %s", conn->id, ep->shown);
    pn_proactor_connect2(io->proactor, conn->pn, t, ep->addr);
}

/* jn_io_connector_closed_IO: conn, made by connector ep, is gone; was_open
 * when it had reached open. Schedules the next attempt. */
void jn_io_connector_closed_IO(jn_io_endpoint_t *ep, jn_io_conn_t *conn, bool was_open)
{
    jn_io_t *io = ep->io;
    pthread_mutex_lock(&io->lock);
    if (ep->conn == conn)
        ep->conn = NULL;
    ep->state = JN_EP_IDLE;
    if (was_open)
        ep->failures = 0;
    unsigned delay = RETRY_FIRST_MS;
    for (unsigned i = 0; i < ep->failures && delay < RETRY_MAX_MS; i++)
        delay *= 2;
    if (delay > RETRY_MAX_MS)
        delay = RETRY_MAX_MS;
    if (!was_open)
        ep->failures++;
    bool stopping = atomic_load(&io->stopping);
    pthread_mutex_unlock(&io->lock);
    if (stopping)
        return;
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO, "Connector %s: retrying in %u ms", ep->shown, delay);
    jn_io_timer_arm(io, &ep->retry, delay);
}

/* ---- removal (management DELETE) ----------------------------------------- */

/* The retry function of a removed endpoint: it does nothing, so a removed
 * connector never connects again (its current connection, if any, is
 * closed by the core at management's request). Also marks a removed
 * listener, whose retry timer is never used. */
static void endpoint_removed_fire(jn_io_timer_t *timer)
{
    (void)timer;
}

int jn_io_remove_endpoint(jn_io_t *io, const char *name)
{
    if (!io || !name)
        return JN_ENOENT;
    pthread_mutex_lock(&io->lock);
    jn_io_endpoint_t *ep = io->endpoints;
    while (ep && (ep->retry.fire == endpoint_removed_fire || !ep->cfg.name ||
                  strcmp(ep->cfg.name, name) != 0))
        ep = ep->next;
    if (!ep) {
        pthread_mutex_unlock(&io->lock);
        return JN_ENOENT;
    }
    ep->retry.fire = endpoint_removed_fire;
    if (ep->is_listener && ep->listener && (ep->state == JN_EP_PENDING || ep->state == JN_EP_OPEN))
        pn_listener_close(ep->listener); /* thread-safe; the CLOSE event logs */
    pthread_mutex_unlock(&io->lock);
    if (!ep->is_listener)
        jn_io_timer_cancel(io, &ep->retry);
    JN_LOG(JN_LOG_MOD_CONN_MGR, JN_LOG_INFO, "Removed %s %s (%s)",
           ep->is_listener ? "listener" : "connector", name, ep->shown);
    return 0;
}
