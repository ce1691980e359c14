/*
 * io_own_route.c — links the router attaches itself on a connection on
 * Junction's own engine (docs/engine.md, stage 3a): the core's
 * JN_WORK_LINK_ATTACH for an auto-link or a link route's far end
 * (router/core/linkroute.c).
 *
 * An auto-link's link carries a plain source and target, the address at
 * the peer's end (the target of a link the router sends on, the source of
 * one it receives on), snd-settle-mode as the core asks and rcv-settle-mode
 * first. The core hears of the link at once (info.local, its attach_ref)
 * and of the peer's answer with the address the peer named; its LINK_OPEN
 * for the link is then a no-op (io_own_link.c, work_open).
 *
 * Sessions: each such link goes on a session of its own, so that a broker
 * that ends a session over one link's trouble (RabbitMQ does) takes no
 * other link with it. A session whose link was freed is kept for the next
 * such link (up to JN_IO_OWN_ROUTE_IDLE of them) rather than ended, so
 * that no end goes out while the engine is still answering the link's
 * detach; beyond that many it is ended.
 *
 * A link route's far end (passthrough) carries the client's termini as
 * the core hands them back (io_own_termini.c), the address at the
 * container's end changed; the core
 * hears of the container's answer, or its refusal, and pairs the two
 * links (router/core/linkroute.c).
 *
 * Streaming links (inter-router, stage 3b) go the same way, named as
 * 1.19 names its own, their attach io_own_mesh.c's; the peer's answer is
 * not reported (the core asked for no address).
 *
 * An edge router's uplink links too (their attach io_own_mesh.c's).
 *
 * Not served here: the core's attach for a link it already has that is
 * not link-routed. Should the core
 * still ask for one, the core hears of a link that detached at once with
 * amqp:not-implemented, so that the link waiting on it is refused rather
 * than left hanging.
 *
 * Thread: the connection's I/O thread.
 */
#include "io_own.h"

#include <stdlib.h>
#include <string.h>

/* A session for a new local link: an idle one, else a new one begun. */
static jn_amqp_session_t *route_session(jn_io_own_t *own)
{
    if (own->n_route_idle)
        return own->route_idle[--own->n_route_idle];
    jn_amqp_session_t *s = jn_amqp_session_new(jn_amqp_transport_conn(own->t));
    if (s && jn_amqp_session_begin(s, 0, own->session_window, UINT32_MAX) != 0)
        return NULL; /* the connection is closing: the engine frees s with it */
    return s;
}

/* The core asked for a link this path does not serve: it hears of one
 * that is gone at once, with the reason. */
static void route_refused(jn_io_own_t *own, jn_work_t *w, const jn_link_info_t *info)
{
    jn_io_own_link_t *link = jn_io_own_link_new(own, NULL, info->dir == JN_LINK_INCOMING);
    if (!link)
        return;
    link->local = true;
    link->core = jn_core_link_attached_IO(own->conn->core, link, info);
    if (!link->core) {
        jn_io_own_rx_gone(link);
        jn_io_own_link_free(link);
        return;
    }
    jn_core_link_set_error_IO(link->core, "amqp:not-implemented",
                              "this link type on Junction's own engine");
    jn_core_link_detached_IO(link->core);
    link->core = NULL; /* the record goes with the core's LINK_RELEASED */
}

/* The termini of a link route's far end (w->link's, as the client sent
 * them: io_own_termini.c) into a, with the address at the container's end
 * replaced; a dynamic node keeps no address and names the address it was
 * routed by in its node properties (x-opt-qd.address, as 1.19 names it);
 * a coordinator has none (AMQP 1.0 4.5.1). Views of the
 * termini, w->address, and the encoders' octets. */
static void route_termini(jn_io_own_t *own, jn_amqp_attach_t *a, const jn_work_t *w,
                          jn_encoder_t *coord, jn_encoder_t *dnp)
{
    size_t len = 0;
    const uint8_t *t = jn_core_link_termini(w->link, &len);
    if (t && len && jn_io_own_termini_decode(t, len, a, coord) != 0)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR,
               JN_IO_CONN_FMT " Link %s: the client's termini are cut short: attached with what "
                              "was read",
               own->conn->id, w->attach.name);
    bool send = w->attach.dir == JN_LINK_OUTGOING;
    jn_amqp_terminus_t *far = send ? &a->target : &a->source;
    uint32_t field = send ? JN_AMQP_FIELD(6) : JN_AMQP_FIELD(5);
    if (!(a->present & field)) {
        a->present |= field;
        memset(far, 0, sizeof *far);
        far->code = send ? JN_AMQP_TARGET : JN_AMQP_SOURCE;
    }
    if (!(a->present & JN_AMQP_FIELD(5)))
        a->present |= JN_AMQP_FIELD(5), a->source.code = JN_AMQP_SOURCE;
    if (!(a->present & JN_AMQP_FIELD(6)))
        a->present |= JN_AMQP_FIELD(6), a->target.code = JN_AMQP_TARGET;
    if (far->code == JN_AMQP_COORDINATOR || !w->address)
        return;
    if ((far->present & JN_AMQP_FIELD(4)) && far->dynamic) {
        char *asked = jn_io_own_dnp_address(far);
        bool same = asked && strcmp(asked, w->address) == 0;
        free(asked);
        if (!same && jn_io_own_dnp_set_address(far, w->address, dnp) != 0)
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR,
                   JN_IO_CONN_FMT " Out of memory for a dynamic terminus's node properties: "
                                  "link %s attached with the client's",
                   own->conn->id, w->attach.name);
        return;
    }
    far->present |= JN_AMQP_FIELD(0);
    far->address_is_symbol = false;
    jn_iter_init_string(&far->address, w->address, JN_VIEW_RAW);
}

/* Our attach for l (2.6.3): an auto-link's plain source and target with
 * the address at the peer's end, or a link route's copy of the client's
 * termini (route_termini). */
static int route_send_attach(jn_io_own_t *own, jn_amqp_link_t *l, const jn_work_t *w)
{
    bool send = w->attach.dir == JN_LINK_OUTGOING;
    jn_amqp_attach_t a;
    memset(&a, 0, sizeof a);
    a.present = JN_AMQP_FIELD(3) | JN_AMQP_FIELD(4);
    a.snd_settle_mode = w->attach.presettled ? 1 : 0; /* settled : unsettled */
    a.rcv_settle_mode = 0;                            /* first */
    if (w->passthrough && w->link) {
        jn_encoder_t coord, dnp;
        jn_encoder_init(&coord);
        jn_encoder_init(&dnp);
        route_termini(own, &a, w, &coord, &dnp);
        int rc = jn_amqp_link_attach(l, &a, 0);
        jn_encoder_free(&coord);
        jn_encoder_free(&dnp);
        return rc;
    }
    a.present |= JN_AMQP_FIELD(5) | JN_AMQP_FIELD(6);
    a.source.code = JN_AMQP_SOURCE;
    a.target.code = JN_AMQP_TARGET;
    jn_amqp_terminus_t *far = send ? &a.target : &a.source;
    if (w->address) {
        far->present |= JN_AMQP_FIELD(0);
        jn_iter_init_string(&far->address, w->address, JN_VIEW_RAW);
    }
    return jn_amqp_link_attach(l, &a, 0);
}

/* Whether the container's end of a link route is a dynamic node (it has
 * no address until the container names it). */
static bool route_dynamic(const jn_work_t *w)
{
    if (!w->passthrough || !w->link)
        return false;
    size_t len = 0;
    const uint8_t *t = jn_core_link_termini(w->link, &len);
    jn_amqp_attach_t a;
    memset(&a, 0, sizeof a);
    jn_encoder_t coord;
    jn_encoder_init(&coord);
    if (t && len)
        (void)jn_io_own_termini_decode(t, len, &a, &coord);
    jn_encoder_free(&coord);
    const jn_amqp_terminus_t *far = w->attach.dir == JN_LINK_OUTGOING ? &a.target : &a.source;
    return (far->present & JN_AMQP_FIELD(4)) && far->dynamic;
}

void jn_io_own_route_attach_IO(jn_io_own_t *own, jn_work_t *w)
{
    jn_io_conn_t *conn = own->conn;
    JN_ASSERT_IO(conn);
    if (!conn->core || own->close_sent || !w->attach.name)
        return; /* the connection is going: the core learns it from the close */
    bool send = w->attach.dir == JN_LINK_OUTGOING;
    jn_link_info_t info = {
        .dir = w->attach.dir,
        .name = w->attach.name,
        .address = route_dynamic(w) ? NULL : w->address,
        .presettled = w->attach.presettled,
        .capacity = conn->endpoint->cfg.link_capacity,
        .type = JN_LINK_ENDPOINT,
        .priority = -1,
        .local = true,
        .attach_ref = w->attach.edge ? NULL : w->attach.ref,
    };
    if (w->link && !w->passthrough) {
        route_refused(own, w, &info);
        return;
    }
    char stream_name[23];
    if (w->attach.stream) { /* unique on the connection, as 1.19 names its own */
        jn_io_own_link_name(stream_name);
        info.name = stream_name;
        info.type = w->attach.stream == JN_STREAM_ATTACH_DATA ? JN_LINK_DATA : JN_LINK_ENDPOINT;
    }
    if (w->attach.edge) {
        info.type = (jn_link_type_t)w->attach.edge;
        info.address = w->attach.edge == JN_LINK_EDGE_REPLY ? NULL : w->address;
        info.fallback = w->attach.fallback;
    }
    jn_amqp_session_t *s = route_session(own);
    jn_amqp_link_t *l =
        s ? jn_amqp_link_new(s, info.name, send ? JN_AMQP_SENDER : JN_AMQP_RECEIVER) : NULL;
    jn_io_own_link_t *link = l ? jn_io_own_link_new(own, l, !send) : NULL;
    if (!link) {
        if (s)
            jn_io_own_route_session_idle_IO(own, s);
        return; /* out of memory: the auto-link stays unattached (1.19 too) */
    }
    link->local = true;
    link->routed = !w->attach.stream && (!w->attach.edge || w->attach.edge == JN_LINK_EDGE_REPLY);
    link->streaming = w->attach.stream != 0;
    link->route_ssn = s;
    link->presettled = w->attach.presettled;
    link->passthrough = w->passthrough;
    if (w->passthrough) /* its detach answered by the client's (io_own_link.c) */
        (void)jn_amqp_link_hold_detach(l, true);
    int rc = w->attach.stream ? jn_io_own_mesh_stream_attach(l, w)
             : w->attach.edge ? jn_io_own_mesh_edge_attach(l, w)
                              : route_send_attach(own, l, w);
    if (rc != 0) {
        jn_io_own_rx_gone(link);
        jn_amqp_link_set_user(l, NULL);
        link->l = NULL;
        jn_io_own_link_free(link); /* its session kept for the next */
        return;
    }
    link->core = jn_core_link_attached_IO(conn->core, link, &info);
    if (!link->core) {
        (void)jn_amqp_link_detach(l, true, "amqp:resource-limit-exceeded", "router out of memory");
        return; /* the peer's detach frees the record */
    }
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_DEBUG, JN_IO_LINK_FMT " Attaching %s link %s to %s", conn->id,
           link->id, send ? "sending" : "receiving", info.name, w->address ? w->address : "");
}

void jn_io_own_route_answered_IO(jn_io_own_link_t *link, const jn_amqp_attach_t *a)
{
    JN_ASSERT_IO(link->own->conn);
    if (!link->core)
        return;
    /* the terminus it answered for: the target when the router sends */
    const jn_amqp_terminus_t *t = link->incoming ? &a->source : &a->target;
    uint32_t field = link->incoming ? JN_AMQP_FIELD(5) : JN_AMQP_FIELD(6);
    char address[1024] = "";
    if ((a->present & field) && (t->present & JN_AMQP_FIELD(0)))
        jn_iter_copy_string(&t->address, address, sizeof address);
    if (link->incoming) /* the peer sends: its settle mode rules */
        link->presettled = (a->present & JN_AMQP_FIELD(3)) && a->snd_settle_mode == 1;
    jn_core_link_answered_address_IO(link->core, address[0] ? address : NULL);
}

void jn_io_own_route_session_idle_IO(jn_io_own_t *own, jn_amqp_session_t *s)
{
    JN_ASSERT_IO(own->conn);
    for (unsigned i = 0; i < own->n_route_idle; i++)
        if (own->route_idle[i] == s)
            return;
    if (own->n_route_idle < JN_IO_OWN_ROUTE_IDLE) {
        own->route_idle[own->n_route_idle++] = s;
        return;
    }
    (void)jn_amqp_session_end(s, NULL, NULL); /* enough kept: the peer's end frees it */
}

void jn_io_own_route_session_gone_IO(jn_io_own_t *own, jn_amqp_session_t *s)
{
    JN_ASSERT_IO(own->conn);
    for (unsigned i = 0; i < own->n_route_idle; i++) {
        if (own->route_idle[i] == s) {
            own->route_idle[i] = own->route_idle[--own->n_route_idle];
            return;
        }
    }
}
