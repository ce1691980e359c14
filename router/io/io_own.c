/*
 * io_own.c — connections on Junction's own AMQP engine (docs/engine.md,
 * stage 2b(ii) round 1): which configurations it serves, and a
 * connection's pass: its octets received into pooled buffers
 * (readv), run through a jn_amqp_transport_t (the SASL layer: ANONYMOUS,
 * Cyrus's mechanisms through sasl_own.c, or an auth service's relay; then
 * the AMQP layer), the
 * core's work carried out, and the output written with one writev per
 * round. Its links and deliveries are io_own_link.c's. The structs and the
 * contract are in io_own.h.
 *
 * Strangler pattern: the connection keeps its jn_io_conn_t (loop,
 * refcount, registry, timers), so the loops, wakes, moves, the registry and
 * the core's callbacks treat it as any other; only its pass differs
 * (io_loop.c hands it here). Every connection runs here: any role,
 * plain TCP, TLS or WebSocket, and any SASL (a listener's Cyrus
 * mechanisms, its auth service's relay or the built-in ANONYMOUS; a
 * connector's built-in mechanisms or Cyrus's client).
 */
#include "io_own.h"
#include "sasl_own.h"

#include <junction/time.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* Iovecs per readv (each a pooled buffer) and per sendmsg. A message
 * takes about three runs of the output (its frame's header and transfer,
 * the re-encoded annotations, the body), so 64 runs per sendmsg sent 21
 * small messages a call and tripled the syscalls per message
 * (docs/performance.md); 1,024 is Linux's UIO_MAXIOV. */
#define OWN_READ_IOV  64
#define OWN_WRITE_IOV 1024

/* ---- the connection's events --------------------------------------------- */

static void log_opened(jn_io_own_t *own, const char *container, const char *user, const char *mech,
                       const char *encrypted)
{
    jn_io_conn_t *conn = own->conn;
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
           JN_IO_CONN_FMT " Connection Opened: dir=%s host=%s encrypted=%s auth=%s user=%s "
                          "container_id=%s",
           conn->id, conn->incoming ? "in" : "out", conn->host, encrypted, mech ? mech : "none",
           user, container);
    jn_io_connector_note_IO(conn, true,
                            JN_IO_CONN_FMT " Connection Opened: dir=out host=%s encrypted=%s "
                                           "auth=%s user=%s container_id=%s",
                            conn->id, conn->host, encrypted, mech ? mech : "none", user,
                            container);
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
           JN_IO_CONN_FMT " Connection runs on Junction's own AMQP engine",
           conn->id);
}

/* The peer's open properties (2.7.1, properties, an encoded map: a view
 * of the input) rendered for management (io_own_props.c) into *out (heap,
 * the caller frees it; NULL when absent or not a well-formed map) and
 * *len; a connector takes the peer's failover-server-list from them
 * (io_own_peer.c). */
static void own_properties(jn_io_conn_t *conn, const jn_amqp_open_t *o, uint8_t **out,
                           size_t *len)
{
    *out = NULL;
    *len = 0;
    if (!(o->present & JN_AMQP_FIELD(9)))
        return;
    (void)jn_io_own_props_render(&o->properties, out, len);
    if (!conn->incoming)
        jn_io_own_failover_take_IO(conn, &o->properties);
}

/* The connection's tenant space and vhost policy (io_tenant.c,
 * io_policy.c), decided at the peer's open o, as 1.19 decides them: for
 * an incoming connection before our open
 * is sent, so that its user group's maxFrameSize and maxSessions go into
 * it, and its maxSessionWindow into our sessions' windows; a connector's
 * under its policyVhost takes the "$connector" group (its open went
 * first; 1.19 applies no transport setting of that group). The group's
 * rights go into info. user is the SASL layer's (NULL: none); host
 * receives the open's hostname. False when refused: our open and close go
 * out (logged by the callee). */
static bool own_open_policy(jn_io_own_t *own, jn_amqp_conn_t *c, const jn_amqp_open_t *o,
                            const char *user, jn_conn_info_t *info, char *host, size_t cap)
{
    jn_io_conn_t *conn = own->conn;
    host[0] = '\0';
    if (o->present & JN_AMQP_FIELD(1))
        jn_iter_copy_string(&o->hostname, host, cap);
    if (!jn_io_tenant_IO(conn, host[0] ? host : NULL, info)) {
        (void)jn_amqp_conn_close(c, "amqp:invalid-field", JN_IO_TENANT_REFUSED);
        return false;
    }
    const char *vhost = conn->endpoint->cfg.policy_vhost; /* the listener's, else the Open's */
    if (user && strcmp(user, JN_AMQP_SASL_ANONYMOUS_USER) == 0)
        user = NULL; /* as 1.19 checks it: "anonymous" is checked as none */
    if (!jn_io_vhost_admit_IO(conn, user, vhost ? vhost : host[0] ? host : NULL)) {
        (void)jn_amqp_conn_close(c, "amqp:resource-limit-exceeded",
                                 "connection disallowed by local policy");
        return false;
    }
    if (conn->vhost_user && !conn->check_user && !(conn->check_user = strdup(conn->vhost_user))) {
        /* under a vhost policy an unauthenticated client's user-id is checked
         * too, against "anonymous" (as 1.19); out of memory refuses it */
        (void)jn_amqp_conn_close(c, "amqp:resource-limit-exceeded", "router out of memory");
        return false;
    }
    uint32_t max_frame;
    int32_t channel_max;
    jn_io_vhost_limits_IO(conn, &max_frame, &channel_max);
    (void)jn_amqp_conn_set_limits(c, max_frame, channel_max);
    size_t window = jn_io_vhost_session_window(conn); /* octets, as proton's capacity */
    if (window) {
        uint32_t frame = max_frame ? max_frame : conn->endpoint->cfg.max_frame_size;
        size_t frames = window / (frame ? frame : 512u);
        own->session_window =
            frames > 1 ? (uint32_t)(frames < 0x7fffffffu ? frames : 0x7fffffffu) : 1;
    }
    jn_io_vhost_rights_IO(conn, &info->deny_dynamic_link_routes, &info->deny_admin_status_update);
    if (jn_io_vhost_user_id_proxy(conn)) { /* allowUserIdProxy: any user-id */
        free(conn->check_user);
        conn->check_user = NULL;
    }
    return true;
}

/* Who the peer is, into info: the SASL layer's user and mechanism (a
 * connector's: the user we authenticated as); an authenticated client's
 * user kept for the user-id check. False when out of memory (closed). */
static bool own_open_identity(jn_io_own_t *own, jn_amqp_conn_t *c, jn_conn_info_t *info)
{
    jn_io_conn_t *conn = own->conn;
    const char *user = jn_amqp_transport_user(own->t);
    const char *mech = jn_amqp_transport_sasl_mechanism(own->t);
    /* a mechanism other than ANONYMOUS authenticated the peer: its user is
     * the one the user-id check holds messages to, as in 1.19 */
    bool authenticated = conn->incoming && mech && strcmp(mech, "ANONYMOUS") != 0;
    const jn_endpoint_config_t *cfg = &conn->endpoint->cfg;
    if (!conn->incoming && mech && strcmp(mech, "ANONYMOUS") != 0 && cfg->sasl_username &&
        cfg->sasl_username[0])
        user = cfg->sasl_username; /* who we authenticated as */
    /* as 1.19: a client's only, not a router's */
    if (authenticated && user && user[0] && cfg->role == JN_ROLE_NORMAL && !conn->check_user &&
        !(conn->check_user = strdup(user))) {
        (void)jn_amqp_conn_close(c, "amqp:resource-limit-exceeded", "router out of memory");
        return false;
    }
    /* as 1.19 shows it: "anonymous" for ANONYMOUS and without SASL */
    info->user = user && user[0] ? user : JN_AMQP_SASL_ANONYMOUS_USER;
    info->sasl_mechanism = mech;
    info->authenticated = authenticated;
    int ssf = 0;
    info->encrypted = jn_io_tls_info(conn, &info->ssl_proto, &info->ssl_cipher, &ssf);
    info->ssl_ssf = ssf > 0 ? (uint32_t)ssf : 0;
    return true;
}

/* The peer's open (2.4.1): ours back, then the core is told. */
static void own_on_open(void *ctx, jn_amqp_conn_t *c, const jn_amqp_open_t *o)
{
    jn_io_own_t *own = ctx;
    jn_io_conn_t *conn = own->conn;
    JN_ASSERT_IO(conn);
    if (conn->core)
        return;
    if (conn->authsvc) { /* an auth service's: never the core's (authsvc_own.c) */
        jn_io_authsvc_own_svc_open_IO(conn, &o->properties);
        return;
    }
    if (atomic_load_explicit(&conn->io->stopping, memory_order_relaxed)) {
        (void)jn_amqp_conn_close(c, "amqp:connection:forced", "router shutting down");
        return;
    }
    char container[256], host[256];
    jn_iter_copy_string(&o->container_id, container, sizeof container);
    const jn_endpoint_config_t *cfg = &conn->endpoint->cfg;
    jn_conn_info_t info = {
        .conn_id = conn->id,
        .container_id = container,
        .host = conn->host,
        .incoming = conn->incoming,
        .strip_inbound = conn->strip_inbound,
        .strip_outbound = conn->strip_outbound,
        .link_capacity = cfg->link_capacity,
        .cost = cfg->cost ? cfg->cost : 1,
        .route_container = cfg->role == JN_ROLE_ROUTE_CONTAINER,
        .endpoint_name = conn->endpoint->cfg.name,
    };
    if (!own_open_identity(own, c, &info))
        return;
    if (!own_open_policy(own, c, o, jn_amqp_transport_user(own->t), &info, host, sizeof host))
        return;
    /* a connection we made sent its open first (jn_io_own_attach_client) */
    if (conn->incoming && jn_amqp_conn_open(c) != 0)
        return;
    uint8_t *props;
    own_properties(conn, o, &props, &info.properties_len);
    info.properties = props;
    if (!jn_io_own_mesh_open_IO(own, o, container, &info)) {
        free(props);
        return; /* a duplicate router id: refused */
    }
    atomic_fetch_add(&conn->refs, 1); /* the core's, if it takes the connection */
    conn->core = jn_core_conn_opened_IO(conn->io->core, conn, &info);
    free(props);
    if (!conn->core) {
        atomic_fetch_sub(&conn->refs, 1);
        (void)jn_amqp_conn_close(c, "amqp:resource-limit-exceeded", "router out of memory");
        return;
    }
    conn->opened = true;
    if (conn->inter_router && !conn->incoming)
        jn_io_own_mesh_attach_links_IO(own); /* the connector side attaches (mesh 3.1) */
    log_opened(own, container, info.user, info.sasl_mechanism,
               info.encrypted ? info.ssl_proto : "no");
}

static void own_on_close(void *ctx, jn_amqp_conn_t *c, const jn_amqp_end_close_t *cl)
{
    jn_io_own_t *own = ctx;
    (void)c;
    JN_ASSERT_IO(own->conn);
    if (cl->present & JN_AMQP_FIELD(0)) {
        char cond[128], desc[256] = "";
        jn_iter_copy_string(&cl->error.condition, cond, sizeof cond);
        if (cl->error.present & JN_AMQP_FIELD(1))
            jn_iter_copy_string(&cl->error.description, desc, sizeof desc);
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO, JN_IO_CONN_FMT " Connection closed by peer: %s %s",
               own->conn->id, cond, desc);
    }
    own->close_sent = true; /* the engine answers when this returns */
}

/* conn failed with cond and desc: the SERVER line "Connection to ...
 * failed" when log (false where another line already said why, or conn is
 * one we accepted) and, for a connector's connection, the connector's
 * note (its management view), in 1.19's words. The connection's I/O
 * thread. */
static void own_outgoing_failed(jn_io_conn_t *conn, bool log, const char *cond, const char *desc)
{
    if (log)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO, JN_IO_CONN_FMT " Connection to %s failed: %s %s",
               conn->id, conn->host, cond, desc);
    jn_io_connector_note_IO(conn, false, JN_IO_CONN_FMT " Connection to %s failed: %s %s",
                            conn->id, conn->host, cond, desc);
}

/* The engine refused the peer's input (or found it silent). A peer's
 * idle-time-out below router.minPeerIdleTimeoutMs is logged as "refused:
 * its ... (minPeerIdleTimeoutMs)". */
static void own_on_closed(void *ctx, jn_amqp_conn_t *c, const jn_amqp_fault_t *fault)
{
    jn_io_own_t *own = ctx;
    jn_io_conn_t *conn = own->conn;
    JN_ASSERT_IO(conn);
    uint32_t peer_idle = jn_amqp_conn_remote_idle_time_out(c);
    jn_io_vhost_session_denied_IO(conn, fault->condition, fault->description);
    if (conn->authsvc) {
        /* an auth service's: its end reports the fault (own_closed) */
    } else if (!conn->incoming) {
        own_outgoing_failed(conn, true, fault->condition, fault->description);
    } else if (peer_idle && peer_idle < conn->io->min_peer_idle_timeout_ms)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               JN_IO_CONN_FMT " Connection from %s (to %s) refused: its %s (minPeerIdleTimeoutMs)",
               conn->id, conn->host, conn->endpoint->shown, fault->description);
    else
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               JN_IO_CONN_FMT " Connection from %s (to %s) failed: %s %s", conn->id, conn->host,
               conn->endpoint->shown, fault->condition, fault->description);
    own->refused_logged = true;
    own->close_sent = true;
}

static void own_on_begin(void *ctx, jn_amqp_session_t *s, const jn_amqp_begin_t *b)
{
    jn_io_own_t *own = ctx;
    JN_ASSERT_IO(own->conn);
    if (!(b->present & JN_AMQP_FIELD(0))) { /* the peer's new session: ours back */
        own->n_sessions++;
        jn_amqp_session_set_user(s, own); /* one the peer began (own_on_end) */
        (void)jn_amqp_session_begin(s, 0, own->session_window, UINT32_MAX);
    }
}

static void own_on_end(void *ctx, jn_amqp_session_t *s, const jn_amqp_end_close_t *e)
{
    jn_io_own_t *own = ctx;
    (void)e;
    JN_ASSERT_IO(own->conn);
    if (jn_amqp_session_user(s) == own) /* one the peer began */
        own->n_sessions--;
    jn_io_own_session_gone_IO(own, s);
}

/* What our open offers and says (as qdrouterd 1.19's): capabilities
 * ANONYMOUS-RELAY and qd.streaming-links both offered and desired,
 * encoded in place into caps; the properties map
 * (jn_io_own_open_properties: product, version, qd.conn-id, on an
 * inter-router connection qd.inter-router-cost above 1 and
 * qd.annotations-version, a listener's failoverUrls, the endpoint's
 * openProperties) into *props (heap, the caller frees it). Returns 0 or
 * the encoder's error (JN_ENOMEM also when the properties could not be
 * encoded). */
static int open_extras(const jn_io_conn_t *conn, jn_encoder_t *caps, uint8_t **props,
                       size_t *props_len)
{
    jn_enc_array_begin(caps, JN_AMQP_SYM8);
    jn_enc_csymbol(caps, "ANONYMOUS-RELAY");
    jn_enc_csymbol(caps, "qd.streaming-links");
    jn_enc_array_end(caps);
    int rc = jn_io_own_open_properties(conn, props, props_len);
    if (jn_encoder_error(caps))
        return jn_encoder_error(caps);
    return rc;
}

/* The client role's transport for a connection we make to host: the SASL
 * client end with the connector's mechanisms and credentials, through
 * Cyrus's client (sasl_own.c) wherever the connector uses Cyrus (a
 * saslUsername, an sslProfile or a mechanism beyond ANONYMOUS, with Cyrus
 * configured: the same choice among the server's offer), else built in
 * (ANONYMOUS). NULL when memory runs out or Cyrus refused (logged). */
static jn_amqp_transport_t *own_client_transport(jn_io_conn_t *conn, const char *host,
                                                 const jn_amqp_conn_config_t *ac,
                                                 const jn_amqp_handler_t *h)
{
    const jn_endpoint_config_t *cfg = &conn->endpoint->cfg;
    if (conn->authsvc) { /* to an auth service: the relay's client end (authsvc_own.c) */
        jn_amqp_sasl_client_config_t rc;
        jn_io_authsvc_own_svc_sasl(conn, &rc);
        return jn_amqp_transport_new_client(ac, h, &rc);
    }
    jn_amqp_sasl_client_config_t sc = {.mechanisms = cfg->sasl_mechanisms,
                                       .user = cfg->sasl_username,
                                       .password = cfg->sasl_password,
                                       .hostname = host};
    if (jn_endpoint_uses_sasl_plugin(cfg, false) &&
        jn_io_own_sasl_client(conn, &sc.ops, &sc.ctx) != 0)
        return NULL;
    return jn_amqp_transport_new_client(ac, h, &sc); /* sc.ctx is the transport's now */
}

/* conn's own side: an incoming connection's transport (host NULL), or the
 * client role's for a connection we make to host (our SASL header, then
 * our AMQP header and open, sent first: 5.3.1, 2.4.1). */
static int own_new(jn_io_conn_t *conn, const char *host)
{
    jn_io_own_t *own = calloc(1, sizeof *own);
    if (!own)
        return JN_ENOMEM;
    const jn_endpoint_config_t *cfg = &conn->endpoint->cfg;
    own->conn = conn;
    own->next_link_id = 1;
    jn_amqp_tracer_init(&own->trace_in, false);
    jn_amqp_tracer_init(&own->trace_out, true);
    own->session_window = cfg->max_session_frames ? cfg->max_session_frames : JN_IO_SESSION_FRAMES;
    if (!cfg->max_session_frames && cfg->max_frame_size && /* as 1.19 bounds it */
        (uint64_t)own->session_window * cfg->max_frame_size > JN_IO_SESSION_CAPACITY_MAX)
        own->session_window = JN_IO_SESSION_CAPACITY_MAX / cfg->max_frame_size > 2
                                  ? JN_IO_SESSION_CAPACITY_MAX / cfg->max_frame_size
                                  : 2;
    jn_amqp_conn_config_t ac = {
        .container_id = conn->io->container_id,
        .max_frame_size = cfg->max_frame_size,
        .channel_max = (uint16_t)(cfg->max_sessions - 1),
        /* idleTimeoutSeconds: silent that long, the peer is cut; half is
         * announced, as 1.19 does */
        .idle_time_out = cfg->idle_timeout_seconds * 1000u,
        .idle_time_out_announced = cfg->idle_timeout_seconds * 500u,
        .min_peer_idle_time_out = conn->io->min_peer_idle_timeout_ms,
        .hostname = host, /* our open names the host connected to, as proton's */
    };
    jn_encoder_t caps;
    jn_encoder_init(&caps);
    uint8_t *props = NULL;
    size_t props_len = 0;
    if (open_extras(conn, &caps, &props, &props_len) == 0) {
        ac.offered_capabilities = ac.desired_capabilities = caps.data;
        ac.offered_capabilities_len = ac.desired_capabilities_len = caps.size;
        ac.properties = props;
        ac.properties_len = props_len;
    }
    jn_amqp_handler_t h = {.ctx = own,
                           .on_open = own_on_open,
                           .on_close = own_on_close,
                           .on_closed = own_on_closed,
                           .on_begin = own_on_begin,
                           .on_end = own_on_end,
                           .on_attach = jn_io_own_on_attach,
                           .on_detach = jn_io_own_on_detach,
                           .on_flow = jn_io_own_on_flow,
                           .on_transfer = jn_io_own_on_transfer,
                           .on_disposition = jn_io_own_on_disposition};
    /* the transports copy them */
    own->t = host ? own_client_transport(conn, host, &ac, &h) : jn_amqp_transport_new(&ac, &h);
    jn_encoder_free(&caps);
    free(props);
    if (own->t && host && jn_amqp_conn_open(jn_amqp_transport_conn(own->t)) != 0) {
        jn_amqp_transport_free(own->t);
        own->t = NULL;
    }
    if (own->t && !host &&
        (conn->relay                               ? jn_io_authsvc_own_attach(conn, own->t)
         : jn_endpoint_uses_sasl_plugin(cfg, true) ? jn_io_own_sasl_attach(conn, own->t)
                                                   : jn_io_own_sasl_builtin(conn, own->t)) != 0) {
        jn_amqp_transport_free(own->t); /* no Cyrus: the connection is refused */
        own->t = NULL;
    }
    if (!own->t || !ac.properties) {
        jn_amqp_transport_free(own->t);
        free(own);
        return JN_ENOMEM;
    }
    conn->own = own;
    return 0;
}

int jn_io_own_attach(jn_io_conn_t *conn)
{
    return own_new(conn, NULL);
}

int jn_io_own_attach_client(jn_io_conn_t *conn, const char *host)
{
    return own_new(conn, host ? host : "");
}

void jn_io_own_free(jn_io_conn_t *conn)
{
    jn_io_own_t *own = conn->own;
    if (!own)
        return;
    jn_io_own_links_free(own);
    jn_amqp_transport_free(own->t);
    jn_amqp_tracer_free(&own->trace_in);
    jn_amqp_tracer_free(&own->trace_out);
    free(own);
    conn->own = NULL;
}

/* ---- the protocol trace ---------------------------------------------------

 * As 1.19 traces (io_trace.c decides when): while conn->tracing (the PROTOCOL
 * module at trace level, or management's enableProtocolTrace for this
 * connection; kept by jn_io_trace_check_IO at the start of each pass),
 * each header and frame read or written is one PROTOCOL trace line
 * "[C<id>]:FRAME: <frame>" (junction/amqp_trace.h renders it from the
 * octets as they pass the socket). A trace switched on mid-stream starts
 * in each direction once that direction is at a frame boundary: no
 * partial frame held in the input, nothing left in the output. */

static void trace_line(void *ctx, const char *line)
{
    const jn_io_conn_t *conn = ctx;
    jn_log_write(JN_LOG_MOD_PROTOCOL, JN_LOG_TRACE, __FILE__, __LINE__, "[C%" PRIu64 "]:FRAME: %s",
                 conn->id, line);
}

/* The start of a pass: the trace follows conn->tracing. */
static void own_trace_sync(jn_io_own_t *own)
{
    if (!own->conn->tracing) {
        jn_amqp_tracer_stop(&own->trace_in);
        jn_amqp_tracer_stop(&own->trace_out);
        return;
    }
    if (!own->trace_in.on && jn_amqp_transport_held(own->t) == 0)
        jn_amqp_tracer_start(&own->trace_in);
    /* nothing written yet: the output starts at a frame boundary (a
     * connection we made has its headers and open waiting there) */
    if (!own->trace_out.on && (jn_io_own_output_empty(own) || own->conn->octets_written == 0)) {
        jn_amqp_tracer_start(&own->trace_out);
        own->trace_out_ahead = 0;
    }
}

/* Our output about to be written, the total octets of the k iovecs: trace
 * what was not traced yet, before the write, so that a line is in the log
 * before the peer can have the frame (as proton traces a frame when it
 * composes it). */
static void own_trace_out(jn_io_own_t *own, const struct iovec *iov, int k, size_t total)
{
    size_t skip = own->trace_out_ahead;
    if (skip >= total)
        return;
    int j = 0;
    while (j < k && skip >= iov[j].iov_len)
        skip -= iov[j++].iov_len;
    struct iovec rest[OWN_WRITE_IOV];
    int n = 0;
    for (; j < k; j++, skip = 0)
        rest[n++] = (struct iovec){.iov_base = (uint8_t *)iov[j].iov_base + skip,
                                   .iov_len = iov[j].iov_len - skip};
    jn_amqp_tracer_feed(&own->trace_out, rest, n, total - own->trace_out_ahead, trace_line,
                        own->conn);
    own->trace_out_ahead = total;
}

void jn_io_own_trace_in_IO(jn_io_own_t *own, const uint8_t *p, size_t n)
{
    JN_ASSERT_IO(own->conn);
    struct iovec iov = {.iov_base = (void *)p, .iov_len = n};
    jn_amqp_tracer_feed(&own->trace_in, &iov, 1, n, trace_line, own->conn);
}

void jn_io_own_trace_out_IO(jn_io_own_t *own, const struct iovec *iov, int k)
{
    JN_ASSERT_IO(own->conn);
    size_t total = 0;
    for (int j = 0; j < k; j++)
        total += iov[j].iov_len;
    own_trace_out(own, iov, k, total);
}

void jn_io_own_trace_out_done_IO(jn_io_own_t *own, size_t n)
{
    JN_ASSERT_IO(own->conn);
    own->trace_out_ahead -= own->trace_out_ahead < n ? own->trace_out_ahead : n;
}

/* ---- the pass ------------------------------------------------------------ */

/* The transport ends: the core hears of it (io_conn.c). */
static void own_closed(jn_io_own_t *own)
{
    jn_io_conn_t *conn = own->conn;
    if (conn->transport_closed)
        return;
    if (JN_UNLIKELY(conn->authsvc)) /* an auth service's: the relay says why (authsvc_own.c) */
        jn_io_authsvc_own_svc_closed_IO(conn, jn_amqp_transport_fault(own->t), own->io_error);
    else if (!conn->incoming && !conn->opened && !own->refused_logged) {
        /* connect failed, SASL refused us (the client end's fault), or the
         * peer went before its open (the socket's error is not kept on
         * this path) */
        const jn_amqp_fault_t *f = jn_amqp_transport_fault(own->t);
        const char *cond = f && f->condition ? f->condition : "amqp:connection:forced";
        const char *desc = f && f->condition ? f->description
                                             : "the transport ended before the peer's open";
        /* refused_logged: TLS failed, and io_tls.c's line says why */
        own_outgoing_failed(conn, !conn->refused_logged, cond, desc);
    } else if (conn->incoming && !conn->opened && !own->refused_logged) {
        /* the SASL layer refused the peer's frames: one line, as for a
         * refused AMQP frame (own_on_closed); a refused authentication is
         * logged by its mechanism's backend (sasl_own.c, authsvc.c), one
         * the layer refused itself (a mechanism not offered) here, as
         * 1.19 logs it */
        const jn_amqp_fault_t *f = jn_amqp_transport_fault(own->t);
        bool auth = f && f->condition && strcmp(f->condition, "amqp:unauthorized-access") == 0;
        if (f && f->condition && !(auth && conn->refused_logged))
            JN_LOG(JN_LOG_MOD_SERVER, auth ? JN_LOG_INFO : JN_LOG_WARNING,
                   JN_IO_CONN_FMT " Connection from %s (to %s) failed: %s %s", conn->id,
                   conn->host, conn->endpoint->shown, f->condition, f->description);
    }
    jn_io_own_links_free(own);
    jn_io_conn_transport_closed_IO(conn);
}

/* Read into pooled buffers until the socket is drained or the pass's
 * reads are used up; each read is run through the layers at once. Returns
 * true when the socket may hold more. */
static bool own_read(jn_io_own_t *own, uint64_t now)
{
    jn_io_conn_t *conn = own->conn;
    for (int i = 0; i < JN_IO_READS_PER_PASS; i++) {
        if (!conn->readable || own->cut || jn_amqp_transport_finished(own->t))
            return false;
        struct iovec iov[OWN_READ_IOV];
        int k = jn_amqp_transport_read_space(own->t, iov, OWN_READ_IOV, JN_IO_READ_SIZE);
        if (k < 0) {
            own->cut = true; /* no buffer to read into */
            return false;
        }
        size_t space = 0;
        for (int j = 0; j < k; j++)
            space += iov[j].iov_len;
        ssize_t n = readv(conn->fd, iov, k);
        if (n > 0) {
            if (JN_UNLIKELY(own->trace_in.on))
                jn_amqp_tracer_feed(&own->trace_in, iov, k, (size_t)n, trace_line, conn);
            jn_amqp_transport_read_done(own->t, (size_t)n);
            conn->octets_read += (size_t)n;
            if (jn_amqp_transport_process(own->t, now) == JN_ENOMEM)
                own->cut = true;
            if ((size_t)n < space && !conn->read_end)
                conn->readable = false;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        conn->readable = false;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return false;
        own->cut = true; /* end of stream, or an error: the transport ends */
        return false;
    }
    return conn->readable;
}

/* Write the output, one writev per round, until it is out or the socket is
 * full. */
static void own_write(jn_io_own_t *own)
{
    jn_io_conn_t *conn = own->conn;
    while (conn->writable) {
        struct iovec iov[OWN_WRITE_IOV];
        int k = jn_amqp_transport_output_iov(own->t, iov, OWN_WRITE_IOV);
        if (k == 0)
            return;
        size_t total = 0;
        for (int j = 0; j < k; j++)
            total += iov[j].iov_len;
        if (JN_UNLIKELY(own->trace_out.on))
            own_trace_out(own, iov, k, total);
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)k};
        ssize_t n = sendmsg(conn->fd, &mh, MSG_NOSIGNAL);
        if (n > 0) {
            if (JN_UNLIKELY(own->trace_out_ahead))
                own->trace_out_ahead -=
                    own->trace_out_ahead < (size_t)n ? own->trace_out_ahead : (size_t)n;
            jn_amqp_transport_output_done(own->t, (size_t)n);
            conn->octets_written += (size_t)n;
            if ((size_t)n < total) {
                conn->writable = false; /* full; EPOLLOUT comes when it drains */
                jn_io_stall_watch_IO(conn);
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        conn->writable = false;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            jn_io_stall_watch_IO(conn); /* io_watch.c: a peer that stops reading */
            return;
        }
        own->cut = true;
        return;
    }
}

/* The engine's idle clock (2.4.5): tick, and keep the connection's tick
 * timer armed for no later than its next deadline.
 *
 * The deadline moves later with every frame read or written (our
 * idle-time-out after the last frame read, half the peer's after the last
 * frame written), so it moves in nearly every pass of a busy connection.
 * A timer armed for an earlier moment that has not come yet is left alone:
 * it fires early, and that pass ticks (a tick before a deadline does
 * nothing) and arms it for the deadline of the moment. So it is armed
 * about once per idle period, not once per pass: each arming takes the
 * timers' lock twice, and moving the earliest timer wrote loop 0's
 * eventfd, a wake of another thread, about once per 250 messages of a
 * two-hop flow (docs/performance.md, "The idle clock's timer"). Only a
 * deadline that moves earlier (the peer's open, with its idle-time-out)
 * arms it again at once. */
static void own_tick(jn_io_own_t *own, uint64_t now)
{
    jn_io_conn_t *conn = own->conn;
    uint64_t next = jn_amqp_conn_tick(jn_amqp_transport_conn(own->t), now);
    if (next == UINT64_MAX)
        return;
    conn->tick_at = (int64_t)next;
    int64_t armed = conn->tick_armed_at;
    if ((int64_t)next == armed || (armed > (int64_t)now && armed < (int64_t)next))
        return; /* armed for then already, or early enough and not yet due */
    conn->tick_armed_at = (int64_t)next;
    atomic_fetch_add(&conn->refs, 1); /* the timer's */
    if (jn_io_timer_cancel(conn->io, &conn->tick))
        jn_io_conn_unref(conn); /* it was armed: one reference is enough */
    jn_io_timer_arm_at(conn->io, &conn->tick, (int64_t)next);
}

/* The router stops, or the core closes the connection. */
static void own_close(jn_io_own_t *own, const char *condition, const char *description, bool cut)
{
    if (!own->close_sent)
        (void)jn_amqp_conn_close(jn_amqp_transport_conn(own->t), condition, description);
    own->close_sent = true;
    own->cut = own->cut || cut;
}

/* The core gave up on a peer that is not heard any more (a client's
 * edge heartbeats stopped: JN_WORK_CONN_CLOSE with abort): its transport
 * is cut at once with no close frame, as 1.19 does, since its close would
 * never come; the peer sees the connection end. One line says why, as
 * for any transport that failed. */
static void own_abort(jn_io_own_t *own, const char *condition, const char *description)
{
    jn_io_conn_t *conn = own->conn;
    const char *cond = condition ? condition : "amqp:connection:forced";
    const char *desc = description ? description : "";
    if (conn->incoming)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
               JN_IO_CONN_FMT " Connection from %s (to %s) failed: %s %s", conn->id, conn->host,
               conn->endpoint->shown, cond, desc);
    own_outgoing_failed(conn, !conn->incoming, cond, desc);
    own->refused_logged = true;
    own->close_sent = true; /* none goes: the one composed already is dropped */
    own->aborted = true;
    own->cut = true;
}

/* An aborted connection's output, our close frame included, is dropped
 * before the pass writes (the end of stream is all the peer gets). */
static void own_drop_output(jn_io_own_t *own)
{
    struct iovec iov[OWN_WRITE_IOV];
    int k;
    while ((k = jn_amqp_transport_output_iov(own->t, iov, OWN_WRITE_IOV)) > 0) {
        size_t total = 0;
        for (int j = 0; j < k; j++)
            total += iov[j].iov_len;
        jn_amqp_transport_output_done(own->t, total);
    }
}

/* The pass's write step: the output to the bridge, the test's buffer,
 * TLS (encrypt, then one send: io_tls.c) or the socket; an aborted
 * connection's is dropped first. */
static void own_output(jn_io_own_t *own)
{
    jn_io_conn_t *conn = own->conn;
    if (JN_UNLIKELY(own->aborted))
        own_drop_output(own);
    if (conn->bridge)
        jn_io_bridge_write_IO(conn);
    else if (JN_UNLIKELY(conn->test_io))
        jn_io_test_write_IO(conn);
    else if (conn->tls)
        jn_io_tls_write_IO(conn);
    else if (!conn->connecting && conn->fd >= 0)
        own_write(own);
}

void jn_io_own_close_IO(jn_io_conn_t *conn, const char *condition, const char *description)
{
    JN_ASSERT_IO(conn);
    conn->own->refused_logged = true; /* the caller logged it */
    own_close(conn->own, condition, description, true);
}

void jn_io_own_io_error(jn_io_conn_t *conn, int err, const char *what)
{
    if (!conn->own->io_error[0])
        snprintf(conn->own->io_error, sizeof conn->own->io_error, "%.48s - %.16s %.56s",
                 strerror(err), what, conn->host);
    conn->own->cut = true;
}

void jn_io_own_note_IO(jn_io_conn_t *conn, const char *what, const char *why)
{
    JN_ASSERT_IO(conn);
    if (!conn->own->io_error[0])
        snprintf(conn->own->io_error, sizeof conn->own->io_error, "%.24s failed: %.90s", what,
                 why);
}

void jn_io_own_shut_IO(jn_io_conn_t *conn, bool cut)
{
    JN_ASSERT_IO(conn);
    conn->own->refused_logged = conn->own->refused_logged || cut;
    own_close(conn->own, NULL, NULL, cut);
}

/* A write-stall period ended (io_watch.c): a peer that took too little of
 * our output in it is cut, with 1.19's log line; our close goes
 * into the output but the peer is not waited for (it does not read). */
static void own_stall_check(jn_io_own_t *own, int64_t now)
{
    jn_io_conn_t *conn = own->conn;
    uint64_t taken = 0;
    /* a connection with neither socket nor bridge (a test's) never stalls */
    bool done = (conn->fd < 0 && !conn->bridge) || jn_io_own_output_empty(own);
    if (!jn_io_stall_judge_IO(conn, now, done, &taken))
        return;
    char desc[160];
    snprintf(desc, sizeof desc, JN_IO_STALL_FMT, taken, conn->io->write_stall_ms / 1000u);
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
           JN_IO_CONN_FMT " Connection from %s (to %s) failed: amqp:resource-limit-exceeded %s",
           conn->id, conn->host, conn->endpoint->shown, desc);
    own_close(own, "amqp:resource-limit-exceeded", desc, true);
}

static void own_work(jn_io_own_t *own)
{
    jn_io_conn_t *conn = own->conn;
    jn_work_t *items[JN_IO_WORK_BATCH];
    size_t n;
    do {
        n = conn->core ? jn_core_conn_take_work_IO(conn->core, items, JN_IO_WORK_BATCH) : 0;
        for (size_t i = 0; i < n; i++) {
            jn_work_t *w = items[i];
            if (w->type == JN_WORK_CONN_CLOSE) {
                /* a neighbour's HELLOs aged out: heard lately, it stays
                 * open and watched (io_watch.c) */
                if (w->unheard_ms && jn_io_silence_judge_IO(conn, w)) {
                    /* heard: kept open */
                } else if (w->abort) {
                    own_abort(own, w->condition, w->description);
                } else {
                    own_close(own, w->condition, w->description, w->forced);
                }
                jn_work_free(w);
            } else {
                jn_io_own_work_IO(own, w);
            }
        }
    } while (n == JN_IO_WORK_BATCH);
}

/* The start of a connection we made's pass: its connect's outcome, a
 * connector deleted (closed with amqp:connection:forced, as 1.19), or no
 * socket left (resolving or every address failed; a test's connection,
 * io_test.c, has none). */
static void own_connector_pass(jn_io_own_t *own)
{
    jn_io_conn_t *conn = own->conn;
    if (conn->connecting && (conn->writable || conn->readable))
        jn_io_conn_connect_done_IO(conn);
    if (!conn->connecting && conn->fd < 0 && !conn->bridge && !conn->test_io)
        own->cut = true; /* no socket: the connect failed */
    if (!conn->closing_removed &&
        atomic_load_explicit(&conn->endpoint->removed, memory_order_relaxed)) {
        conn->closing_removed = true; /* not retried; the peer is not waited for */
        own_close(own, "amqp:connection:forced", "connector deleted", true);
    }
}

bool jn_io_own_pass_IO(jn_io_loop_t *loop, jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    jn_io_own_t *own = conn->own;
    loop->pass_ns = jn_time_mono_ns();
    uint64_t now = loop->pass_ns / JN_NS_PER_MS;
    if (JN_UNLIKELY(conn->tracing || own->trace_in.on || own->trace_out.on))
        own_trace_sync(own);
    bool more = false;
    if (JN_UNLIKELY(conn->tick_at && (int64_t)now - conn->tick_at > JN_IO_STALL_MS) &&
        conn->fd >= 0 && !conn->connecting)
        conn->readable = true; /* our own stall ("Our own stalls", io_loop.c): what waits in
                                * the socket is read before the idle clock judges the peer */
    if (!conn->incoming)
        own_connector_pass(own);
    if (conn->connecting) {
        /* a connect in progress: nothing to read or write yet */
    } else if (conn->bridge) {
        jn_io_bridge_read_IO(conn); /* AMQP over WebSocket: no socket */
    } else if (conn->fd >= 0 && conn->tls) {
        bool plain = false;
        more = jn_io_tls_read_IO(conn, &plain); /* io_tls.c, into the transport */
        if (plain)
            more = own_read(own, now); /* requireSsl no, and the client is plain */
    } else if (conn->fd >= 0) {
        more = own_read(own, now);
    } else if (conn->test_io) {
        jn_io_test_read_IO(conn); /* tests and fuzzing: no socket (io_test.c) */
    }
    /* octets heard before the core's work: a silence verdict sees them */
    if (JN_UNLIKELY(conn->inter_router) && jn_io_own_mesh_silent_IO(own, (int64_t)now))
        own_close(own, "amqp:resource-limit-exceeded", JN_IO_SILENCE_DESC, true);
    if (JN_UNLIKELY(conn->relay) &&
        (conn->authsvc ? jn_io_authsvc_own_svc_pass_IO(conn, own->t, now)
                       : jn_io_authsvc_own_pass_IO(conn, own->t, now)) == JN_ENOMEM)
        own->cut = true; /* the relay's posts (authsvc_own.c), after the reads */
    if (atomic_load_explicit(&conn->io->stopping, memory_order_relaxed)) {
        if (conn->authsvc)
            jn_io_authsvc_stop_IO(conn); /* its client's exchange ends now */
        own_close(own, "amqp:connection:forced", "router shutting down",
                  atomic_load_explicit(&conn->io->forcing, memory_order_relaxed));
    }
    own_work(own);
    jn_io_own_rx_flush_IO(own);
    jn_io_own_tx_resume_IO(own);
    own_tick(own, now);
    if (conn->stall_watch && (int64_t)now >= conn->stall_check_at)
        own_stall_check(own, (int64_t)now);
    if (JN_UNLIKELY(conn->handshake_at) && (int64_t)now >= conn->handshake_at)
        jn_io_handshake_check_IO(conn, (int64_t)now); /* io_watch.c */
    own_output(own);
    if (JN_UNLIKELY(own->tx_held) &&
        jn_amqp_conn_output_pending(jn_amqp_transport_conn(own->t)) < JN_IO_OWN_OUTPUT_LIMIT) {
        own->tx_held = false;
        more = true; /* the socket took some: the next pass sends the copies held */
    }
    bool done = jn_amqp_transport_finished(own->t) && jn_io_own_output_empty(own);
    if (conn->tls) {
        done = done || jn_io_tls_failed(conn);
        if (jn_io_tls_pending_out(conn) && !own->cut)
            done = false; /* the close_notify or an alert still to go */
    }
    if (done)
        own->cut = true; /* close went both ways, or the input was refused */
    if (own->cut) {
        if (!conn->write_shut && conn->fd >= 0) {
            shutdown(conn->fd, SHUT_WR);
            conn->write_shut = true;
        }
        own_closed(own);
    }
    return more;
}
