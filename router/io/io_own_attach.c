/*
 * io_own_attach.c — attach and detach of a connection's links on
 * Junction's own engine (docs/engine.md, stage 2b(ii)): the peer's attach
 * checked (a terminus the engine cannot serve, the vhost policy's rules),
 * reported to the core with its terminus address and answered when the
 * core opens the link; a detach,
 * an end or the connection's loss letting go of what the link held.
 * Sending and the core's work are in io_own_link.c, receiving in
 * io_own_rx.c. The engine calls the on_* functions on the connection's
 * loop thread, inside jn_amqp_transport_process.
 */
#include "io_own.h"

#include <junction/decoder.h>
#include <junction/pool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOT_IMPLEMENTED "amqp:not-implemented"

/* ---- attach and detach --------------------------------------------------- */

/* Why the own path cannot serve the peer's attach a (NULL: it can). The
 * router's terminus capabilities (qd.waypoint*, qd.fallback, qd.router*)
 * are served, read by jn_io_own_mesh_classify_IO. */
static const char *refusal(const jn_amqp_attach_t *a)
{
    if (a->role == JN_AMQP_SENDER && (a->present & JN_AMQP_FIELD(6)) &&
        a->target.code != JN_AMQP_TARGET && a->target.code != JN_AMQP_COORDINATOR)
        return "a target type other than target and coordinator on Junction's own engine";
    return NULL;
}

/* Refuse the peer's attach (2.6.3: attach with no terminus, then detach
 * with the error: condition, why). */
static void refuse_attach_with(jn_amqp_link_t *l, const jn_amqp_attach_t *a, const char *condition,
                               const char *why)
{
    jn_amqp_attach_t answer = *a;
    answer.present = 0;
    (void)jn_amqp_link_attach(l, &answer, 0);
    (void)jn_amqp_link_detach(l, true, condition, why);
}

static void refuse_attach(jn_amqp_link_t *l, const jn_amqp_attach_t *a, const char *why)
{
    refuse_attach_with(l, a, NOT_IMPLEMENTED, why);
}

/* A symbol field f's octets start with prefix (exact: are prefix). */
static bool symbol_claims(const jn_field_t *f, const char *prefix, bool exact)
{
    if (f->type != JN_TYPE_SYMBOL)
        return false;
    jn_iter_t v = f->payload;
    return exact ? jn_iter_equal(&v, prefix) : jn_iter_prefix(&v, prefix);
}

/* Some capability of the peer's terminus t (its field cap_field: a symbol
 * or an array of symbols) starts with prefix (exact: is prefix), for the
 * vhost rules (io_policy.c). */
static bool caps_claim(const jn_amqp_terminus_t *t, uint32_t cap_field, const char *prefix,
                       bool exact)
{
    if (!(t->present & cap_field))
        return false;
    jn_decoder_t d, in;
    jn_field_t f, e;
    jn_decoder_init(&d, &t->capabilities, true);
    if (jn_decoder_next(&d, &f) != 1)
        return false;
    if (f.type != JN_TYPE_ARRAY)
        return symbol_claims(&f, prefix, exact);
    if (jn_decoder_enter(&d, &f, &in) != 0)
        return false;
    while (jn_decoder_next(&in, &e) == 1)
        if (symbol_claims(&e, prefix, exact))
            return true;
    return false;
}

/* The vhost policy's rules for the peer's attach a on link (a record not
 * yet known to the core; address its terminus's, "" when absent): NULL
 * when allowed (counted; the per-message checks and the group's
 * maxMessageSize set on link), else the condition to refuse it with
 * (logged and counted, io_policy.c). */
static const char *policy_attach(jn_io_own_link_t *link, const jn_amqp_attach_t *a,
                                 const char *address, bool dynamic)
{
    jn_io_conn_t *conn = link->own->conn;
    const jn_amqp_terminus_t *t = link->incoming ? &a->target : &a->source;
    uint32_t cap_field = link->incoming ? JN_AMQP_FIELD(6) : JN_AMQP_FIELD(10);
    jn_io_vhost_attach_t va = {.link_id = link->id,
                               .incoming = link->incoming,
                               .address = address[0] ? address : NULL,
                               .dynamic = dynamic,
                               .waypoint = caps_claim(t, cap_field, "qd.waypoint", false),
                               .fallback = caps_claim(t, cap_field, "qd.fallback", true)};
    const char *denied = jn_io_vhost_link_judge_IO(conn, &va, &link->max_message_size);
    if (denied)
        return denied;
    link->policy_counted = true;
    if (link->incoming && !address[0] && !dynamic)
        link->rx_checks |= JN_IO_RX_CHECK_TARGET; /* the core routes each message by its to */
    else if (link->incoming && jn_io_vhost_names_management(address))
        link->rx_checks |= JN_IO_RX_CHECK_REPLY; /* the router answers at the reply-to */
    return NULL;
}

bool jn_io_own_dynamic_address_IO(const jn_io_conn_t *conn, const char *reply)
{
    JN_ASSERT_IO(conn);
    for (const jn_io_own_link_t *l = conn->own->links; l; l = l->next)
        if (!l->incoming && l->l && l->core && jn_io_vhost_same_address(l->dynamic_address, reply))
            return true;
    return false;
}

unsigned jn_io_own_sessions_IO(const jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    return conn->own->n_sessions;
}

/* The peer's attach, kept encoded for our answer (its views end with the
 * callback). */
static int keep_attach(jn_io_own_link_t *link, const jn_amqp_attach_t *a)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_ATTACH);
    p.u.attach = *a;
    p.u.attach.present &= JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2) |
                          JN_AMQP_FIELD(3) | JN_AMQP_FIELD(5) | JN_AMQP_FIELD(6) |
                          JN_AMQP_FIELD(9); /* a sender's is mandatory */
    int rc = jn_amqp_perf_encode(&e, &p);
    if (rc == 0 && (link->attach = malloc(e.size)) != NULL) {
        memcpy(link->attach, e.data, e.size);
        link->attach_len = e.size;
    } else if (rc == 0) {
        rc = JN_ENOMEM;
    }
    jn_encoder_free(&e);
    return rc;
}

void jn_io_own_link_free(jn_io_own_link_t *link)
{
    jn_io_own_t *own = link->own;
    if (link->policy_counted)
        jn_io_vhost_uncount_link_IO(own->conn, link->incoming);
    free(link->dynamic_address);
    if (link->route_ssn)
        jn_io_own_route_session_idle_IO(own, link->route_ssn);
    if (link->prev)
        link->prev->next = link->next;
    else
        own->links = link->next;
    if (link->next)
        link->next->prev = link->prev;
    free(link->attach);
    free(link);
}

jn_io_own_link_t *jn_io_own_link_new(jn_io_own_t *own, jn_amqp_link_t *l, bool incoming)
{
    jn_io_own_link_t *link = calloc(1, sizeof *link);
    if (!link)
        return NULL;
    link->own = own;
    link->id = own->next_link_id++;
    link->l = l;
    link->incoming = incoming;
    link->tx_slot = -1;
    link->tx_seg_head = link->tx_nsegs = link->tx_seg_off = 0;
    link->pend_len = 0;
    if (link->incoming)
        jn_io_own_rx_init_IO(link);
    link->next = own->links;
    if (own->links)
        own->links->prev = link;
    own->links = link;
    if (l)
        jn_amqp_link_set_user(l, link);
    return link;
}

/* What the core routes the peer's link by, beyond its address (t the
 * terminus at our end): control and data links (io_own_mesh.c); a dynamic
 * terminus link-routed by the address its node properties name, as in 1.19
 * (*dnp, heap); a coordinator by JN_COORDINATOR_ADDRESS
 * (router/core/coordinator.c); the termini a link route may copy
 * (*termini, heap; none when out of memory). The caller frees *dnp and
 * *termini once the core has info. */
static void attach_routing(jn_io_own_link_t *link, const jn_amqp_attach_t *a,
                           const jn_amqp_terminus_t *t, jn_link_info_t *info, char **dnp,
                           uint8_t **termini)
{
    jn_io_own_mesh_classify_IO(link, a, info);
    info->resumable =
        ((t->present & JN_AMQP_FIELD(2)) && jn_iter_equal(&t->expiry_policy, "never")) ||
        ((t->present & JN_AMQP_FIELD(3)) && t->timeout > 0);
    if (info->dynamic)
        info->address = *dnp = jn_io_own_dnp_address(t);
    if (link->incoming && (a->present & JN_AMQP_FIELD(6)) && a->target.code == JN_AMQP_COORDINATOR)
        info->address = JN_COORDINATOR_ADDRESS, info->coordinator = true;
    if (info->address && info->address[0])
        (void)jn_io_own_termini_encode(a, termini, &info->termini_len);
    info->termini = *termini;
}

/* A link record given up before the core heard of it: freed, and the
 * engine's link no longer ours (the caller answers the peer). */
static void link_abandon(jn_io_own_link_t *link, jn_amqp_link_t *l)
{
    jn_io_own_rx_gone(link);
    jn_amqp_link_set_user(l, NULL);
    jn_io_own_link_free(link); /* uncounts it */
}

void jn_io_own_on_attach(void *ctx, jn_amqp_link_t *l, const jn_amqp_attach_t *a)
{
    jn_io_own_t *own = ctx;
    jn_io_conn_t *conn = own->conn;
    JN_ASSERT_IO(conn);
    jn_io_own_link_t *ours = jn_amqp_link_user(l);
    if (ours) { /* the peer's answer to an attach of ours (io_own_route.c) */
        if (ours->routed)
            jn_io_own_route_answered_IO(ours, a);
        return;
    }
    const char *why = !conn->core                       ? "the connection is not open"
                      : jn_io_own_mesh_link_ok(own, a) ? NULL
                                                        : refusal(a);
    if (why && !(conn->core && conn->vhost_rules)) {
        refuse_attach(l, a, why);
        return;
    }
    jn_io_own_link_t *link = jn_io_own_link_new(own, l, a->role == JN_AMQP_SENDER);
    if (!link || keep_attach(link, a) != 0) {
        if (link)
            link_abandon(link, l);
        refuse_attach(l, a, "router out of memory");
        return;
    }
    link->presettled = (a->present & JN_AMQP_FIELD(3)) && a->snd_settle_mode == 1;
    const jn_amqp_terminus_t *t = link->incoming ? &a->target : &a->source;
    char address[1024] = "";
    if (t->present & JN_AMQP_FIELD(0))
        jn_iter_copy_string(&t->address, address, sizeof address);
    /* the vhost rules first: a link they deny gets
     * their answer even where this engine could not serve it */
    const char *denied =
        conn->vhost_rules
            ? policy_attach(link, a, address, (t->present & JN_AMQP_FIELD(4)) && t->dynamic)
            : NULL;
    if (denied || why) {
        link_abandon(link, l);
        if (denied)
            refuse_attach_with(l, a, denied, "link disallowed by local policy");
        else
            refuse_attach(l, a, why);
        return;
    }
    if (conn->check_user)
        link->rx_checks |= JN_IO_RX_CHECK_USER_ID;
    jn_link_info_t info = {
        .dir = link->incoming ? JN_LINK_INCOMING : JN_LINK_OUTGOING,
        .name = jn_amqp_link_name(l),
        .address = address,
        .presettled = (a->present & JN_AMQP_FIELD(3)) && a->snd_settle_mode == 1,
        /* a dynamic source or target (3.5.4): the core makes its address */
        .dynamic = (t->present & JN_AMQP_FIELD(4)) && t->dynamic,
        .capacity = conn->endpoint->cfg.link_capacity,
        .type = JN_LINK_ENDPOINT,
        .priority = -1,
    };
    char *dnp = NULL;
    uint8_t *termini = NULL;
    attach_routing(link, a, t, &info, &dnp, &termini);
    link->core = jn_core_link_attached_IO(conn->core, link, &info);
    free(termini);
    free(dnp);
    if (!link->core) {
        link_abandon(link, l);
        refuse_attach(l, a, "router out of memory");
        return;
    }
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_DEBUG, JN_IO_LINK_FMT " Link attached: dir=%s address=%s",
           conn->id, link->id, link->incoming ? "in" : "out", info.address ? info.address : "");
}

/* A delivery of a link going (jn_amqp_link_users_clear), bound to dlv:
 * its binding undone (jn_io_own_unbind), the engine's side cleared
 * already. The core releases or modifies what it must with the detach. */
static void unbound(void *ctx, void *dlv)
{
    (void)ctx;
    jn_delivery_set_io(dlv, NULL);
    jn_delivery_unref(dlv);
}

/* The engine's link is gone: its deliveries with it (the engine frees
 * them after on_detach or on_end, or with the transport). The core hears
 * of the detach once; the record lives on until the core releases it. */
static void link_gone(jn_io_own_link_t *link)
{
    jn_io_own_rx_gone(link); /* the delivery being received, unbound */
    if (link->tx_bound) /* the copy being sent: jn_io_own_tx_abandon drops the reference */
        jn_io_own_forget(link->tx_d, link->tx_dlv);
    link->tx_bound = false;
    if (link->l) /* its other unsettled deliveries, from the engine's tables */
        jn_amqp_link_users_clear(link->l, unbound, NULL);
    jn_io_own_tx_abandon(link);
    link->l = NULL;
    link->tx_d = NULL;
    if (link->core) {
        jn_core_link_detached_IO(link->core);
        link->core = NULL;
    }
    if (link->released)
        jn_io_own_link_free(link);
}

void jn_io_own_on_detach(void *ctx, jn_amqp_link_t *l, const jn_amqp_detach_t *d)
{
    jn_io_own_t *own = ctx;
    JN_ASSERT_IO(own->conn);
    (void)own;
    jn_io_own_link_t *link = jn_amqp_link_user(l);
    if (!link)
        return; /* one we refused */
    if (JN_UNLIKELY(link->passthrough)) {
        /* a link-routed link's answer is the far end's (linkroute.c): the
         * core sends it, or at the latest the release does */
        bool hold = link->core && !link->released;
        /* not held when our detach went first (l goes with this one) */
        link->held = jn_amqp_link_hold_detach(l, hold) ? l : NULL;
        link->held_closed = d->closed;
    }
    if (link->core && (d->present & JN_AMQP_FIELD(2))) {
        char cond[128], desc[256] = "";
        jn_iter_copy_string(&d->error.condition, cond, sizeof cond);
        if (d->error.present & JN_AMQP_FIELD(1))
            jn_iter_copy_string(&d->error.description, desc, sizeof desc);
        jn_core_link_set_error_IO(link->core, cond, desc[0] ? desc : NULL);
    }
    if (link->core && !d->closed)
        jn_core_link_set_unclosed_IO(link->core); /* a routed link passes it on as a detach */
    link_gone(link);
}

void jn_io_own_session_gone_IO(jn_io_own_t *own, jn_amqp_session_t *s)
{
    JN_ASSERT_IO(own->conn);
    jn_io_own_route_session_gone_IO(own, s);
    jn_io_own_link_t *next;
    for (jn_io_own_link_t *link = own->links; link; link = next) {
        next = link->next;
        if (link->route_ssn == s)
            link->route_ssn = NULL; /* the engine frees it */
        if (link->held && jn_amqp_link_session(link->held) == s)
            link->held = NULL; /* so does it the held link */
        if (link->l && jn_amqp_link_session(link->l) == s)
            link_gone(link);
    }
}

void jn_io_own_links_free(jn_io_own_t *own)
{
    while (own->links) {
        jn_io_own_link_t *link = own->links;
        link->core = NULL; /* the core counts them detached with the connection */
        link->released = true;
        link->policy_counted = false; /* the close line counts them (io_policy.c) */
        link_gone(link); /* frees it */
    }
}

