/*
 * io_own_mesh.c — inter-router connections on Junction's own engine
 * (docs/engine.md, stage 3b; docs/protocol.md, "Inter-router
 * connections"), as qdrouterd 1.19 serves them:
 *
 * - the peer's open: a peer with this router's own id is refused
 *   (amqp:not-allowed), the cost is the larger of both ends' (the peer's
 *   qd.inter-router-cost), its qd.annotations-version is logged, and
 *   qd.streaming-links in its offered capabilities lets the core ask for
 *   streaming links; the properties are read by io_own_peer.c, 1.19's
 *   quirks included;
 * - the connector side then begins eleven sessions and attaches the two
 *   control links (capability qd.router) and twenty data links
 *   (qd.router-data, priorities 0 to 9), in 1.19's order;
 * - the links the peer attaches are classified by the capability at our
 *   end (the first symbol) and, for data links, by their order;
 * - streaming links the core asks for (JN_WORK_LINK_ATTACH with
 *   attach.stream, router/core/stream.c), each on a session of the
 *   router's (io_own_route.c);
 * - the silence watch: the core's close of a connection whose neighbour's
 *   HELLOs aged out is judged by io_watch.c on the octets heard.
 *
 * Edge connections too: the interior classifies an edge router's links
 * (downlink, address tracking, heartbeat, link-route lookup, a phase's
 * waypoint) and the edge attaches its uplink links as the core asks
 * (JN_WORK_LINK_ATTACH with attach.edge: snd-settle-mode mixed, the
 * downlink's and a phase's capabilities, the reply link's dynamic source,
 * whose answer names the edge's reply address).
 *
 * Thread: the connection's I/O thread, inside the engine's callbacks or
 * the pass.
 */
#include "io_own.h"

#include <junction/decoder.h>

#include <stdlib.h>
#include <string.h>

#define CAP_CONTROL "qd.router"
#define CAP_DATA    "qd.router-data"

/* A symbol (encoded, 1.6.21, sym8) with octets text (under 62 octets),
 * the single capability 1.19 recognises; returns the octets written. */
static size_t symbol_encode(uint8_t out[64], const char *text)
{
    size_t n = strlen(text);
    out[0] = 0xa3; /* sym8 */
    out[1] = (uint8_t)n;
    memcpy(out + 2, text, n);
    return n + 2;
}

bool jn_io_own_caps_first(const jn_iter_t *enc, const char *cap)
{
    jn_iter_t it = *enc;
    if (jn_iter_length(&it) == 0)
        return false;
    jn_decoder_t d, arr;
    jn_field_t f;
    jn_decoder_init(&d, &it, true);
    if (jn_decoder_next(&d, &f) != 1)
        return false;
    if (f.type == JN_TYPE_ARRAY) {
        if (jn_decoder_enter(&d, &f, &arr) != 0 || jn_decoder_next(&arr, &f) != 1)
            return false;
    }
    return f.type == JN_TYPE_SYMBOL && jn_field_equal_string(&f, cap);
}

bool jn_io_own_mesh_open_IO(jn_io_own_t *own, const jn_amqp_open_t *o, const char *container,
                            jn_conn_info_t *info)
{
    jn_io_conn_t *conn = own->conn;
    JN_ASSERT_IO(conn);
    jn_iter_t none;
    jn_iter_init_bytes(&none, NULL, 0, JN_VIEW_RAW);
    const jn_iter_t *props = o->present & JN_AMQP_FIELD(9) ? &o->properties : &none;
    if (o->present & JN_AMQP_FIELD(7))
        info->streaming_links = jn_io_own_caps_streaming(&o->offered_capabilities);
    if (conn->edge) {
        jn_io_own_props_log_version_IO(conn, props);
        info->edge = true;
        return true;
    }
    if (!conn->inter_router)
        return true;
    if (strcmp(container, conn->io->container_id) == 0) {
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_CRITICAL,
               JN_IO_CONN_FMT " Duplicate router id: the inter-router peer at %s has this "
                              "router's id '%s'; connection refused",
               conn->id, conn->host, container);
        (void)jn_amqp_conn_close(jn_amqp_transport_conn(own->t), "amqp:not-allowed",
                                 "duplicate router id: this router already has that id");
        own->close_sent = true;
        return false;
    }
    uint32_t remote = jn_io_own_props_cost(props);
    if (remote > info->cost)
        info->cost = remote; /* both ends agree on the larger (mesh 2.2) */
    jn_io_own_props_log_version_IO(conn, props);
    info->inter_router = true;
    return true;
}

/* Source and target with capability cap alone (a plain symbol, the only
 * form 1.19 recognises) and expiry-policy link-detach. */
static int mesh_send_attach(jn_amqp_link_t *l, const char *cap)
{
    uint8_t enc[64];
    size_t n = symbol_encode(enc, cap);
    jn_amqp_attach_t a;
    memset(&a, 0, sizeof a);
    a.present = JN_AMQP_FIELD(5) | JN_AMQP_FIELD(6);
    a.source.code = JN_AMQP_SOURCE;
    a.target.code = JN_AMQP_TARGET;
    a.source.present = JN_AMQP_FIELD(2) | JN_AMQP_FIELD(10);
    a.target.present = JN_AMQP_FIELD(2) | JN_AMQP_FIELD(6);
    jn_iter_init_string(&a.source.expiry_policy, "link-detach", JN_VIEW_RAW);
    a.target.expiry_policy = a.source.expiry_policy;
    jn_iter_init_bytes(&a.source.capabilities, enc, n, JN_VIEW_RAW);
    a.target.capabilities = a.source.capabilities;
    return jn_amqp_link_attach(l, &a, 0);
}

/* One control or data link of ours on s, the core told of it. */
static void mesh_attach_one(jn_io_own_t *own, jn_amqp_session_t *s, bool send, bool control,
                            int priority)
{
    jn_io_conn_t *conn = own->conn;
    char name[23];
    jn_io_own_link_name(name);
    jn_amqp_link_t *l = jn_amqp_link_new(s, name, send ? JN_AMQP_SENDER : JN_AMQP_RECEIVER);
    jn_io_own_link_t *link = l ? jn_io_own_link_new(own, l, !send) : NULL;
    if (!link)
        return; /* out of memory: the mesh goes without this link (1.19 too) */
    link->local = true;
    if (control)
        link->max_message_size = JN_IO_CONTROL_MAX_MESSAGE;
    if (mesh_send_attach(l, control ? CAP_CONTROL : CAP_DATA) != 0) {
        jn_io_own_rx_gone(link);
        jn_amqp_link_set_user(l, NULL);
        link->l = NULL;
        jn_io_own_link_free(link);
        return;
    }
    jn_link_info_t info = {
        .dir = send ? JN_LINK_OUTGOING : JN_LINK_INCOMING,
        .name = name,
        .capacity = conn->endpoint->cfg.link_capacity,
        .type = control ? JN_LINK_CONTROL : JN_LINK_DATA,
        .priority = control ? -1 : priority,
        .local = true,
    };
    link->core = jn_core_link_attached_IO(conn->core, link, &info);
    if (!link->core)
        (void)jn_amqp_link_detach(l, true, "amqp:resource-limit-exceeded", "router out of memory");
}

void jn_io_own_mesh_attach_links_IO(jn_io_own_t *own)
{
    jn_io_conn_t *conn = own->conn;
    JN_ASSERT_IO(conn);
    if (!conn->core || own->close_sent)
        return;
    /* all eleven begins first, then the attaches, as 1.19 does */
    jn_amqp_session_t *ssn[11];
    for (int i = 0; i < 11; i++) {
        ssn[i] = jn_amqp_session_new(jn_amqp_transport_conn(own->t));
        if (!ssn[i] || jn_amqp_session_begin(ssn[i], 0, own->session_window, UINT32_MAX) != 0)
            return;
    }
    mesh_attach_one(own, ssn[0], false, true, -1);
    mesh_attach_one(own, ssn[0], true, true, -1);
    for (int p = 0; p < 10; p++) {
        mesh_attach_one(own, ssn[p + 1], false, false, p);
        mesh_attach_one(own, ssn[p + 1], true, false, p);
    }
    own->data_in = own->data_out = 10;
}

/* The waypoint phase a terminus's capabilities name (qd.waypoint is 1,
 * qd.waypoint.<n> is n; docs/protocol.md), or 0. */
static uint8_t caps_waypoint(const jn_iter_t *enc)
{
    jn_iter_t it = *enc;
    jn_decoder_t d, arr;
    jn_field_t f;
    jn_decoder_init(&d, &it, true);
    if (jn_iter_length(&it) == 0 || jn_decoder_next(&d, &f) != 1)
        return 0;
    bool array = f.type == JN_TYPE_ARRAY;
    if (array && jn_decoder_enter(&d, &f, &arr) != 0)
        return 0;
    for (;;) {
        if (array && jn_decoder_next(&arr, &f) != 1)
            return 0;
        if (f.type == JN_TYPE_SYMBOL) {
            char sym[16] = "";
            jn_iter_t p = f.payload;
            if (f.size < sizeof sym)
                (void)jn_iter_copy(&p, (uint8_t *)sym, f.size);
            if (strcmp(sym, "qd.waypoint") == 0)
                return 1;
            if (strncmp(sym, "qd.waypoint.", 12) == 0 && sym[12] >= '1' && sym[12] <= '9' &&
                sym[13] == '\0')
                return (uint8_t)(sym[12] - '0');
        }
        if (!array)
            return 0;
    }
}

/* The address of terminus t as a C string into out (empty: none). */
static void term_address(const jn_amqp_terminus_t *t, bool present, char *out, size_t cap)
{
    out[0] = '\0';
    if (present && (t->present & JN_AMQP_FIELD(0)))
        jn_iter_copy_string(&t->address, out, cap);
}

/* An edge connection's links, and the two service addresses served on
 * every connection that is not inter-router (docs/protocol.md, "Edge
 * routers"); true when info->type was set. */
static bool classify_edge(jn_io_own_link_t *link, const jn_amqp_terminus_t *t, bool present,
                          uint32_t field, jn_link_info_t *info)
{
    const jn_io_conn_t *conn = link->own->conn;
    char addr[64];
    term_address(t, present, addr, sizeof addr);
    if (!conn->inter_router && strcmp(addr, "_$qd.addr_lookup") == 0)
        info->type = JN_LINK_EDGE_LOOKUP;
    else if (!conn->inter_router && strcmp(addr, "_$qd.edge_heartbeat") == 0)
        info->type = JN_LINK_EDGE_HEARTBEAT;
    else if (conn->edge && !link->incoming && present && (t->present & field) &&
             jn_io_own_caps_first(&t->capabilities, "qd.router-edge-downlink"))
        info->type = JN_LINK_EDGE_DOWNLINK;
    else if (conn->edge && !link->incoming && strcmp(addr, "_$qd.edge_addr_tracking") == 0)
        info->type = JN_LINK_EDGE_TRACKING;
    return info->type != JN_LINK_ENDPOINT;
}

void jn_io_own_mesh_classify_IO(jn_io_own_link_t *link, const jn_amqp_attach_t *a,
                                jn_link_info_t *info)
{
    jn_io_own_t *own = link->own;
    JN_ASSERT_IO(own->conn);
    /* the terminus at our end: the peer's target when it sends to us */
    const jn_amqp_terminus_t *t = link->incoming ? &a->target : &a->source;
    bool present = a->present & (link->incoming ? JN_AMQP_FIELD(6) : JN_AMQP_FIELD(5));
    uint32_t field = link->incoming ? JN_AMQP_FIELD(6) : JN_AMQP_FIELD(10);
    if (classify_edge(link, t, present, field, info))
        return;
    if (!present || !(t->present & field))
        return;
    /* control and data links are classified as such on every connection:
     * the core refuses them on one that is not inter-router */
    if (jn_io_own_caps_first(&t->capabilities, CAP_CONTROL)) {
        info->type = JN_LINK_CONTROL;
        link->max_message_size = JN_IO_CONTROL_MAX_MESSAGE;
    } else if (jn_io_own_caps_first(&t->capabilities, CAP_DATA)) {
        info->type = JN_LINK_DATA;
        uint32_t *count = link->incoming ? &own->data_in : &own->data_out;
        info->priority = *count < 10 ? (int)*count : -1;
        (*count)++;
    } else {
        /* an endpoint's: a waypoint's phase (a client's, 1.19's waypoints
         * and auto-links, or an edge's uplink), and a receiver that is a
         * fallback destination, as 1.19 reads them */
        info->waypoint = caps_waypoint(&t->capabilities);
        info->fallback = (!link->incoming || own->conn->edge) &&
                         jn_io_own_caps_first(&t->capabilities, "qd.fallback");
    }
}

bool jn_io_own_mesh_link_ok(const jn_io_own_t *own, const jn_amqp_attach_t *a)
{
    bool peer_sends = a->role == JN_AMQP_SENDER;
    const jn_amqp_terminus_t *t = peer_sends ? &a->target : &a->source;
    uint32_t field = peer_sends ? JN_AMQP_FIELD(6) : JN_AMQP_FIELD(10);
    if (!(t->present & field))
        return false;
    if (!own->conn->inter_router && !own->conn->edge)
        return false;
    if (jn_io_own_caps_first(&t->capabilities, CAP_CONTROL) ||
        jn_io_own_caps_first(&t->capabilities, CAP_DATA))
        return true; /* on an edge connection the core refuses them */
    /* an edge router's uplink links: its downlink, and a phase's waypoint */
    return own->conn->edge &&
           ((!peer_sends && jn_io_own_caps_first(&t->capabilities, "qd.router-edge-downlink")) ||
            caps_waypoint(&t->capabilities) != 0 ||
            jn_io_own_caps_first(&t->capabilities, "qd.fallback"));
}

int jn_io_own_mesh_edge_attach(jn_amqp_link_t *l, const jn_work_t *w)
{
    uint8_t enc[64];
    size_t n = 0;
    char wp[] = "qd.waypoint.0";
    if (w->attach.edge == JN_LINK_EDGE_DOWNLINK)
        n = symbol_encode(enc, "qd.router-edge-downlink");
    else if (w->attach.waypoint >= 1 && w->attach.waypoint <= 9) {
        wp[12] = (char)('0' + w->attach.waypoint); /* the phase, for the interior */
        n = symbol_encode(enc, wp);
    } else if (w->attach.fallback)
        n = symbol_encode(enc, "qd.fallback"); /* the fallback phase, for the interior */
    jn_amqp_attach_t a;
    memset(&a, 0, sizeof a);
    a.present = JN_AMQP_FIELD(3) | JN_AMQP_FIELD(4) | JN_AMQP_FIELD(5) | JN_AMQP_FIELD(6);
    a.snd_settle_mode = 2; /* mixed */
    a.rcv_settle_mode = 0; /* first */
    a.source.code = JN_AMQP_SOURCE;
    a.target.code = JN_AMQP_TARGET;
    if (n) { /* the capability alone, expiry-policy link-detach (1.19's) */
        a.source.present = JN_AMQP_FIELD(2) | JN_AMQP_FIELD(10);
        a.target.present = JN_AMQP_FIELD(2) | JN_AMQP_FIELD(6);
        jn_iter_init_string(&a.source.expiry_policy, "link-detach", JN_VIEW_RAW);
        a.target.expiry_policy = a.source.expiry_policy;
        jn_iter_init_bytes(&a.source.capabilities, enc, n, JN_VIEW_RAW);
        a.target.capabilities = a.source.capabilities;
    }
    jn_amqp_terminus_t *far = w->attach.dir == JN_LINK_OUTGOING ? &a.target : &a.source;
    if (w->address) {
        far->present |= JN_AMQP_FIELD(0);
        jn_iter_init_string(&far->address, w->address, JN_VIEW_RAW);
    }
    if (w->attach.edge == JN_LINK_EDGE_REPLY) { /* the answers' address */
        a.source.present |= JN_AMQP_FIELD(4);
        a.source.dynamic = true;
    }
    return jn_amqp_link_attach(l, &a, 0);
}

int jn_io_own_mesh_stream_attach(jn_amqp_link_t *l, const jn_work_t *w)
{
    if (w->attach.stream == JN_STREAM_ATTACH_DATA) /* router/core/stream.c */
        return mesh_send_attach(l, CAP_DATA);
    jn_amqp_attach_t a;
    memset(&a, 0, sizeof a);
    a.present = JN_AMQP_FIELD(5) | JN_AMQP_FIELD(6);
    a.source.code = JN_AMQP_SOURCE;
    a.target.code = JN_AMQP_TARGET;
    jn_amqp_terminus_t *far = w->attach.dir == JN_LINK_OUTGOING ? &a.target : &a.source;
    if (w->address) {
        far->present |= JN_AMQP_FIELD(0);
        jn_iter_init_string(&far->address, w->address, JN_VIEW_RAW);
    }
    return jn_amqp_link_attach(l, &a, 0);
}

bool jn_io_own_mesh_silent_IO(jn_io_own_t *own, int64_t now)
{
    jn_io_conn_t *conn = own->conn;
    JN_ASSERT_IO(conn);
    if (conn->octets_read != conn->heard_octets) { /* something arrived (io_watch.c) */
        conn->heard_octets = conn->octets_read;
        conn->heard_ms = now;
    }
    return conn->silence_watch && now >= conn->silence_at && jn_io_silence_expired_IO(conn, now);
}
