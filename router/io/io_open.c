/*
 * io_open.c — the peer's AMQP open (AMQP 1.0 2.4.1, 2.7.1): the idle-time-out
 * floor, the connection's cost, who the peer is (TLS, SASL), its tenant
 * space and vhost policy, then the core told of the connection. Called by
 * io_conn.c's event dispatch on PN_CONNECTION_REMOTE_OPEN.
 */
#include "io_private.h"

#include <junction/log.h>

#include <proton/sasl.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The peer's open asked for an idle-time-out (AMQP 1.0 2.4.5: we must send
 * a frame at least that often) below router.minPeerIdleTimeoutMs: refuse
 * it, as 2.4.5 allows, with our open and a close naming both values. Proton
 * would otherwise send an empty frame every half of it (1 ms: tens of
 * thousands a second). Returns true when refused (logged once). No empty
 * frame precedes the close: proton's keep-alive clock is first armed by the
 * tick of the pass that read the open (io_loop.c, conn_pass), and stops
 * once the close is framed, in the same pass. */
static bool refuse_idle_timeout_IO(jn_io_conn_t *conn, pn_transport_t *t)
{
    JN_ASSERT_IO(conn);
    pn_millis_t remote = pn_transport_get_remote_idle_timeout(t);
    uint32_t floor_ms = conn->io->min_peer_idle_timeout_ms;
    if (remote == 0 || remote >= floor_ms)
        return false;
    char desc[160];
    snprintf(desc, sizeof desc,
             "idle-time-out of %" PRIu32 " ms is below this router's minimum of %" PRIu32 " ms",
             (uint32_t)remote, floor_ms);
    if (conn->incoming)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               JN_IO_CONN_FMT " Connection from %s (to %s) refused: its %s (minPeerIdleTimeoutMs)",
               conn->id, conn->host, conn->endpoint->shown, desc);
    else
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               JN_IO_CONN_FMT " Connection to %s refused: its %s (minPeerIdleTimeoutMs)", conn->id,
               conn->host, desc);
    jn_io_conn_close_IO(conn, "amqp:resource-limit-exceeded", desc);
    return true;
}

/* An inter-router peer's container id is this router's own: refused
 * (logged). Otherwise true, with *cost the connection's cost: the
 * endpoint's, or for an inter-router connection the larger of both ends'
 * (mesh 2.2). */
static bool open_cost_IO(jn_io_conn_t *conn, pn_connection_t *pc, const char *container,
                         uint32_t *cost)
{
    JN_ASSERT_IO(conn);
    *cost = conn->endpoint->cfg.cost ? conn->endpoint->cfg.cost : 1;
    if (!conn->inter_router)
        return true;
    if (container && strcmp(container, conn->io->container_id) == 0) {
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_CRITICAL,
               JN_IO_CONN_FMT " Duplicate router id: the inter-router peer at %s has this "
                              "router's id '%s'; connection refused",
               conn->id, conn->host, container);
        jn_io_conn_close_IO(conn, "amqp:not-allowed",
                            "duplicate router id: this router already has that id");
        return false;
    }
    uint32_t remote = jn_io_ir_remote_cost(pc);
    if (remote > *cost)
        *cost = remote; /* both ends agree on the larger (2.2) */
    return true;
}

/* Who the peer is, from TLS and SASL, into info (encryption, mechanism,
 * authentication, user); an authenticated client's user is kept for the
 * user-id check. False when that copy finds no memory (the connection is
 * then refused: no check would let a forged user-id through). */
static bool open_identity_IO(jn_io_conn_t *conn, pn_transport_t *t, jn_conn_info_t *info)
{
    JN_ASSERT_IO(conn);
    pn_sasl_t *sasl = pn_sasl(t);
    const char *mech = sasl ? pn_sasl_get_mech(sasl) : NULL;
    const char *user = pn_transport_get_user(t);
    int ssf = 0;
    info->encrypted = jn_io_tls_info(conn, &info->ssl_proto, &info->ssl_cipher, &ssf);
    info->ssl_ssf = ssf > 0 ? (uint32_t)ssf : 0;
    info->sasl_mechanism = mech;
    info->authenticated =
        mech && strcmp(mech, "ANONYMOUS") != 0 && pn_transport_is_authenticated(t);
    info->user = user && strcmp(user, "anonymous") != 0 ? user : NULL;
    if (info->authenticated && info->user && conn->incoming &&
        conn->endpoint->cfg.role == JN_ROLE_NORMAL && !conn->check_user) {
        conn->check_user = strdup(info->user);
        if (!conn->check_user) {
            jn_io_conn_close_IO(conn, "amqp:resource-limit-exceeded", "router out of memory");
            return false;
        }
    }
    return true;
}

/* A multiTenant listener's tenant space and the vhost policy: the
 * connection admitted (its group's limits on the transport, its rights
 * into info) or refused (false, closed and logged by the callee). */
static bool open_policy_IO(jn_io_conn_t *conn, pn_connection_t *pc, pn_transport_t *t,
                           jn_conn_info_t *info)
{
    JN_ASSERT_IO(conn);
    if (!jn_io_tenant_IO(conn, pn_connection_remote_hostname(pc), info)) {
        /* a multiTenant listener's client refused by its hostname */
        jn_io_conn_close_IO(conn, "amqp:invalid-field", JN_IO_TENANT_REFUSED);
        return false;
    }
    const char *vhost = conn->endpoint->cfg.policy_vhost; /* the listener's, else the Open's */
    if (!jn_io_vhost_admit_IO(conn, info->user,
                              vhost ? vhost : pn_connection_remote_hostname(pc))) {
        jn_io_conn_close_IO(conn, "amqp:resource-limit-exceeded",
                            "connection disallowed by local policy");
        return false;
    }
    if (conn->vhost_user && !conn->check_user) {
        /* under a vhost policy an unauthenticated client's user-id is
         * checked too, against "anonymous" (as 1.19); out of memory
         * refuses the connection, as above */
        conn->check_user = strdup(conn->vhost_user);
        if (!conn->check_user) {
            jn_io_conn_close_IO(conn, "amqp:resource-limit-exceeded", "router out of memory");
            return false;
        }
    }
    jn_io_vhost_transport_IO(conn, t); /* the group's maxFrameSize, maxSessions */
    jn_io_vhost_rights_IO(conn, &info->deny_dynamic_link_routes, &info->deny_admin_status_update);
    if (jn_io_vhost_user_id_proxy(conn)) { /* allowUserIdProxy: any user-id */
        free(conn->check_user);
        conn->check_user = NULL;
    }
    return true;
}

/* The "Connection Opened" lines (1.19's text, read by log watchers). */
static void log_opened_IO(jn_io_conn_t *conn, const jn_conn_info_t *info, const char *user)
{
    JN_ASSERT_IO(conn);
    const char *mech = info->sasl_mechanism;
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
           JN_IO_CONN_FMT " Connection Opened: dir=%s host=%s encrypted=%s auth=%s user=%s "
                          "container_id=%s",
           conn->id, conn->incoming ? "in" : "out", conn->host,
           info->encrypted ? info->ssl_proto : "no", mech ? mech : "none",
           user ? user : "anonymous", info->container_id);
    jn_io_connector_note_IO(conn, true,
                            JN_IO_CONN_FMT " Connection Opened: dir=out host=%s encrypted=%s "
                                           "auth=%s user=%s container_id=%s",
                            conn->id, conn->host, info->encrypted ? info->ssl_proto : "no",
                            mech ? mech : "none", user ? user : "anonymous", info->container_id);
}

void jn_io_conn_remote_open_IO(jn_io_conn_t *conn, pn_transport_t *t)
{
    JN_ASSERT_IO(conn);
    pn_connection_t *pc = conn->pn_io;
    if (pn_connection_state(pc) & PN_LOCAL_UNINIT)
        pn_connection_open(pc);
    if (conn->screened_out)
        return; /* closing with the screen's error; the core never hears of it */
    if (conn->opened || conn->core)
        return; /* a second open (the screen refuses it): the core knows it once */
    if (refuse_idle_timeout_IO(conn, t))
        return;
    /* the peer's idle timeout is known now: tick again once this pass has
     * written (our open starts proton's keep-alive clock). Not just
     * tick_at = 0: the pass ticked before its events, so nothing would
     * look again until the next input or the old deadline, and a peer
     * that opens and then waits heard nothing within its idle-time-out. */
    conn->tick_at = 0;
    conn->tick_restart = true;
    if (atomic_load_explicit(&conn->io->stopping, memory_order_relaxed)) {
        jn_io_conn_close_IO(conn, NULL, NULL);
        return;
    }
    const char *container = pn_connection_remote_container(pc);
    uint32_t cost;
    if (!open_cost_IO(conn, pc, container, &cost))
        return;
    if (conn->inter_router || conn->edge)
        jn_io_ir_log_annotations_version_IO(conn, pc);
    jn_conn_info_t info = {
        .conn_id = conn->id,
        .container_id = container ? container : "",
        .host = conn->host,
        .incoming = conn->incoming,
        .strip_inbound = conn->strip_inbound,
        .strip_outbound = conn->strip_outbound,
        .link_capacity = conn->endpoint->cfg.link_capacity,
        .inter_router = conn->inter_router,
        .cost = cost,
        .endpoint_name = conn->endpoint->cfg.name,
        .route_container = conn->endpoint->cfg.role == JN_ROLE_ROUTE_CONTAINER,
        .edge = conn->edge,
        .streaming_links = jn_io_ir_offers_streaming_IO(pc),
    };
    if (!open_identity_IO(conn, t, &info) || !open_policy_IO(conn, pc, t, &info))
        return;
    /* management's user is the transport's, as 1.19 shows it: "anonymous"
     * for ANONYMOUS and for a peer without SASL or TLS */
    const char *user = pn_transport_get_user(t);
    info.user = user;
    uint8_t *props = NULL;
    jn_io_render_properties_IO(pn_connection_remote_properties(pc), &props, &info.properties_len);
    info.properties = props;
    atomic_fetch_add(&conn->refs, 1); /* the core's, if it takes the connection */
    conn->core = jn_core_conn_opened_IO(conn->io->core, conn, &info);
    free(props);
    if (!conn->core) {
        atomic_fetch_sub(&conn->refs, 1);
        jn_io_conn_close_IO(conn, "amqp:resource-limit-exceeded", "router out of memory");
        return;
    }
    conn->opened = true;
    if (conn->inter_router && !conn->incoming)
        jn_io_ir_attach_links_IO(conn); /* the connector side attaches (3.1) */
    log_opened_IO(conn, &info, user);
}
