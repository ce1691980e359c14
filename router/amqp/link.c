/*
 * link.c — the connection engine's links (AMQP 1.0 part 2: 2.6 links,
 * 2.7.3 attach, 2.7.4 flow, 2.7.7 detach): our handles and the peer's
 * mapped to one link each, a link paired by name and role when the peer
 * answers our attach, attach and detach both ways, and the flow state of
 * 2.6.7: delivery-count (a serial number), link-credit, available, drain
 * and echo, as the sender and as the receiver see them. The contract is in
 * junction/amqp_engine.h.
 */
#include "engine_private.h"

#include <stdlib.h>
#include <string.h>

#define INVALID_FIELD "amqp:invalid-field"

static jn_amqp_link_t *link_alloc(jn_amqp_session_t *s, const char *name, size_t name_len,
                                  bool role)
{
    int64_t handle = jn_amqp_slots_free_index(&s->links, s->remote_handle_max < JN_AMQP_HANDLE_MAX
                                                             ? s->remote_handle_max
                                                             : JN_AMQP_HANDLE_MAX);
    if (handle < 0)
        return NULL;
    jn_amqp_link_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->name = malloc(name_len + 1);
    if (!l->name || jn_amqp_slots_set(&s->links, (uint32_t)handle, l) != 0) {
        free(l->name);
        free(l);
        return NULL;
    }
    memcpy(l->name, name, name_len);
    l->name[name_len] = 0;
    l->session = s;
    l->role = role;
    l->handle = (uint32_t)handle;
    l->remote_handle = -1;
    return l;
}

jn_amqp_link_t *jn_amqp_link_new(jn_amqp_session_t *s, const char *name, bool role)
{
    if (s->end_sent || s->end_rcvd)
        return NULL;
    return link_alloc(s, name, strlen(name), role);
}

void jn_amqp_link_free(jn_amqp_link_t *l)
{
    jn_amqp_session_t *s = l->session;
    if (l->current && !l->current->held) /* a delivery of ours not yet begun */
        jn_amqp_delivery_free(l->current);
    jn_amqp_deliveries_free(s, l);
    (void)jn_amqp_slots_set(&s->links, l->handle, NULL);
    if (l->remote_handle >= 0)
        (void)jn_amqp_slots_set(&s->remote_links, (uint32_t)l->remote_handle, NULL);
    free(l->name);
    free(l);
}

int jn_amqp_link_attach(jn_amqp_link_t *l, const jn_amqp_attach_t *a,
                        uint32_t initial_delivery_count)
{
    if (l->attach_sent || !jn_amqp_link_sendable(l))
        return JN_EPERM;
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_ATTACH);
    p.u.attach = *a;
    jn_amqp_attach_t *at = &p.u.attach;
    at->present |= JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2);
    jn_iter_init_string(&at->name, l->name, JN_VIEW_RAW);
    at->handle = l->handle;
    at->role = l->role;
    at->present &= ~JN_AMQP_FIELD(9);
    if (l->role == JN_AMQP_SENDER) { /* mandatory for a sender (2.7.3) */
        at->present |= JN_AMQP_FIELD(9);
        at->initial_delivery_count = initial_delivery_count;
    }
    int rc = jn_amqp_conn_send(l->session->conn, l->session->channel, &p);
    if (rc != 0)
        return rc;
    l->attach_sent = true;
    if (l->role == JN_AMQP_RECEIVER) /* the receiver's mode rules (2.7.3) */
        l->rcv_settle_mode = (a->present & JN_AMQP_FIELD(4)) ? a->rcv_settle_mode : 0;
    if (l->role == JN_AMQP_SENDER) {
        l->initial_delivery_count = initial_delivery_count;
        l->delivery_count = initial_delivery_count;
    }
    return 0;
}

/* Whether a detach of the peer's would wait for the user's answer now. */
static bool hold_now(const jn_amqp_link_t *l)
{
    return l->hold_detach && l->attach_sent && !l->detach_sent && jn_amqp_link_sendable(l);
}

int jn_amqp_link_detach(jn_amqp_link_t *l, bool closed, const char *condition,
                        const char *description)
{
    if (!l->attach_sent || l->detach_sent || !jn_amqp_link_sendable(l))
        return JN_EPERM;
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_DETACH);
    jn_amqp_detach_t *d = &p.u.detach;
    d->present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1);
    d->handle = l->handle;
    d->closed = closed;
    if (condition) {
        d->present |= JN_AMQP_FIELD(2);
        jn_amqp_error_set(&d->error, condition, description);
    }
    int rc = jn_amqp_conn_send(l->session->conn, l->session->channel, &p);
    if (rc == JN_EOVERFLOW && description)
        return jn_amqp_link_detach(l, closed, condition, NULL);
    if (rc == 0)
        l->detach_sent = true;
    if (rc == 0 && l->hold_detach && l->detach_rcvd)
        jn_amqp_link_free(l); /* the answer to a detach held for the user */
    return rc;
}

bool jn_amqp_link_hold_detach(jn_amqp_link_t *l, bool hold)
{
    l->hold_detach = hold;
    return hold_now(l);
}

/* A flow for l (2.7.4) with the session's windows and l's flow state. */
static int send_link_flow(jn_amqp_link_t *l, bool echo)
{
    jn_amqp_perf_t p;
    jn_amqp_session_flow_fields(l->session, &p);
    jn_amqp_flow_t *f = &p.u.flow;
    f->present |= JN_AMQP_FIELD(4) | JN_AMQP_FIELD(5) | JN_AMQP_FIELD(6) | JN_AMQP_FIELD(8);
    f->handle = l->handle;
    f->delivery_count = l->delivery_count;
    f->link_credit = l->credit;
    f->drain = l->drain;
    if (l->role == JN_AMQP_SENDER) {
        f->present |= JN_AMQP_FIELD(7);
        f->available = l->available;
    }
    if (echo) {
        f->present |= JN_AMQP_FIELD(9);
        f->echo = true;
    }
    return jn_amqp_conn_send(l->session->conn, l->session->channel, &p);
}

int jn_amqp_link_flow(jn_amqp_link_t *l, uint32_t credit, bool drain, bool echo)
{
    if (l->role != JN_AMQP_RECEIVER || !l->attach_sent || l->detach_sent ||
        !jn_amqp_link_sendable(l))
        return JN_EPERM;
    l->credit = credit;
    l->limit = l->delivery_count + credit; /* serial: may wrap */
    l->drain = drain;
    return send_link_flow(l, echo);
}

int jn_amqp_link_available(jn_amqp_link_t *l, uint32_t available)
{
    if (l->role != JN_AMQP_SENDER || !l->attach_sent || l->detach_sent || !jn_amqp_link_sendable(l))
        return JN_EPERM;
    l->available = available;
    return send_link_flow(l, false);
}

int jn_amqp_link_drained(jn_amqp_link_t *l)
{
    if (l->role != JN_AMQP_SENDER || !l->attach_sent || l->detach_sent || !jn_amqp_link_sendable(l))
        return JN_EPERM;
    if (!l->drain)
        return 0;
    l->delivery_count += l->credit; /* the credit is used up (2.6.7) */
    l->credit = 0;
    int rc = send_link_flow(l, false);
    return rc == 0 ? 1 : rc;
}

/* ---- input --------------------------------------------------------------- */

/* Our link the peer's attach answers: same name, the other role, attached
 * by us and not yet by the peer (2.6.3). */
static jn_amqp_link_t *find_pending(const jn_amqp_session_t *s, const jn_amqp_attach_t *a)
{
    for (uint32_t i = 0; i < s->links.cap; i++) {
        jn_amqp_link_t *l = s->links.at[i];
        if (l && l->attach_sent && !l->attach_rcvd && l->role != a->role &&
            jn_iter_equal(&a->name, l->name))
            return l;
    }
    return NULL;
}

/* The peer's attach (2.6.3, 2.7.3). */
static int attach_input(jn_amqp_session_t *s, const jn_amqp_attach_t *a)
{
    jn_amqp_conn_t *c = s->conn;
    if (a->handle > JN_AMQP_HANDLE_MAX) /* outside our handle-max (2.7.2) */
        return jn_amqp_conn_refuse(c, "amqp:connection:framing-error",
                                   "attach with handle %u, above the handle-max %u", a->handle,
                                   JN_AMQP_HANDLE_MAX);
    if (jn_amqp_slots_get(&s->remote_links, a->handle))
        return jn_amqp_conn_refuse(c, "amqp:session:handle-in-use", /* as the frame screen */
                                   "attach with handle %u, which is in use", a->handle);
    jn_amqp_link_t *l = find_pending(s, a);
    if (!l) {
        size_t n = jn_iter_length(&a->name);
        char *name = malloc(n ? n : 1);
        if (!name)
            return JN_ENOMEM;
        jn_iter_t it = a->name;
        jn_iter_copy(&it, name, n);
        l = link_alloc(s, name, n, !a->role);
        free(name);
        if (!l)
            return jn_amqp_session_fail(s, "amqp:resource-limit-exceeded",
                                        "no handle of ours is free for the peer's link");
    }
    if (jn_amqp_slots_set(&s->remote_links, a->handle, l) != 0)
        return JN_ENOMEM;
    l->remote_handle = a->handle;
    l->attach_rcvd = true;
    if (l->role == JN_AMQP_SENDER)
        l->rcv_settle_mode = (a->present & JN_AMQP_FIELD(4)) ? a->rcv_settle_mode : 0;
    /* the peer sends: its count rules (2.6.7); an attach without one
     * counts from 0 (the codec leaves it 0), as 1.19 and proton accept */
    if (l->role == JN_AMQP_RECEIVER) {
        l->initial_delivery_count = a->initial_delivery_count;
        l->delivery_count = a->initial_delivery_count;
        l->limit = l->delivery_count + l->credit;
    }
    if (c->h.on_attach)
        c->h.on_attach(c->h.ctx, l, a);
    return 0;
}

/* The peer's detach (2.6.5, 2.7.7): reported, answered, and l freed. */
static int detach_input(jn_amqp_link_t *l, const jn_amqp_detach_t *d)
{
    jn_amqp_conn_t *c = l->session->conn;
    l->detach_rcvd = true;
    if (c->h.on_detach)
        c->h.on_detach(c->h.ctx, l, d);
    if (hold_now(l)) {
        /* the user answers; the peer's handle is free from now on */
        jn_amqp_session_t *s = l->session;
        if (l->remote_handle >= 0)
            (void)jn_amqp_slots_set(&s->remote_links, (uint32_t)l->remote_handle, NULL);
        l->remote_handle = -1;
        return 0;
    }
    l->hold_detach = false; /* answered here, and freed */
    int rc = 0;
    if (!l->detach_sent && jn_amqp_link_sendable(l)) {
        if (!l->attach_sent) /* a link detached before we answered its attach */
            rc = jn_amqp_link_attach(l, &(jn_amqp_attach_t){0}, 0);
        if (rc == 0)
            rc = jn_amqp_link_detach(l, d->closed, NULL, NULL);
    }
    jn_amqp_link_free(l);
    return rc == JN_ENOMEM ? JN_ENOMEM : 0;
}

/* The flow state of the peer's flow (2.6.7). Our sender: the receiver's
 * delivery-count (its view; our initial count when it has none yet) plus
 * its link-credit gives the last delivery it will take. Our receiver: the
 * sender's delivery-count rules, and the credit we granted shrinks by what
 * it advanced (a drain). */
static int link_flow_input(jn_amqp_link_t *l, const jn_amqp_flow_t *f)
{
    if (l->role == JN_AMQP_SENDER) {
        uint32_t dc =
            (f->present & JN_AMQP_FIELD(5)) ? f->delivery_count : l->initial_delivery_count;
        if (jn_amqp_serial_lt(l->delivery_count, dc))
            return jn_amqp_conn_refuse(l->session->conn, INVALID_FIELD,
                                       "flow's delivery-count %u is ahead of the sender's %u", dc,
                                       l->delivery_count);
        if (f->present & JN_AMQP_FIELD(6))
            l->credit = dc + f->link_credit - l->delivery_count;
        l->drain = f->drain;
        return 0;
    }
    if (f->present & JN_AMQP_FIELD(5))
        l->delivery_count = f->delivery_count;
    l->credit = jn_amqp_serial_lt(l->delivery_count, l->limit) ? l->limit - l->delivery_count : 0;
    l->available = f->available;
    if (l->credit == 0)
        l->drain = false; /* a drain asked for is done */
    return 0;
}

int jn_amqp_link_input(jn_amqp_session_t *s, const jn_amqp_perf_t *p)
{
    if (p->code == JN_AMQP_ATTACH)
        return attach_input(s, &p->u.attach);
    uint32_t handle = p->code == JN_AMQP_DETACH ? p->u.detach.handle : p->u.flow.handle;
    jn_amqp_link_t *l = jn_amqp_slots_get(&s->remote_links, handle);
    if (!l)
        return jn_amqp_conn_refuse(s->conn, "amqp:session:unattached-handle", /* as the screen */
                                   "%s on handle %u, which is not attached",
                                   jn_amqp_perf_name(p->code), handle);
    if (p->code == JN_AMQP_DETACH)
        return detach_input(l, &p->u.detach);
    int rc = link_flow_input(l, &p->u.flow);
    if (rc != 0)
        return rc;
    jn_amqp_conn_t *c = s->conn;
    if (c->h.on_flow)
        c->h.on_flow(c->h.ctx, s, l, &p->u.flow);
    if (p->u.flow.echo && l->attach_sent && !l->detach_sent && jn_amqp_link_sendable(l))
        rc = send_link_flow(l, false);
    return rc == JN_ENOMEM ? JN_ENOMEM : 0;
}

/* ---- accessors ----------------------------------------------------------- */

jn_amqp_link_state_t jn_amqp_link_state(const jn_amqp_link_t *l)
{
    return (jn_amqp_link_state_t){.delivery_count = l->delivery_count,
                                  .credit = l->credit,
                                  .available = l->available,
                                  .drain = l->drain};
}

bool jn_amqp_link_role(const jn_amqp_link_t *l)
{
    return l->role;
}

uint32_t jn_amqp_link_handle(const jn_amqp_link_t *l)
{
    return l->handle;
}

int64_t jn_amqp_link_remote_handle(const jn_amqp_link_t *l)
{
    return l->remote_handle;
}

jn_amqp_session_t *jn_amqp_link_session(const jn_amqp_link_t *l)
{
    return l->session;
}

const char *jn_amqp_link_name(const jn_amqp_link_t *l)
{
    return l->name;
}

void jn_amqp_link_set_user(jn_amqp_link_t *l, void *user)
{
    l->user = user;
}

void *jn_amqp_link_user(const jn_amqp_link_t *l)
{
    return l->user;
}
