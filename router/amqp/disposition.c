/*
 * disposition.c — the connection engine's deliveries by delivery-id and
 * dispositions both ways (AMQP 1.0 part 2: 2.6.12-2.6.14, 2.7.6). Each
 * session holds the deliveries this end has not settled, one table per
 * direction indexed by delivery-id, so that the peer's disposition of a
 * range first..last reaches each one it names in time proportional to the
 * range. Our dispositions are held in a list on the connection and composed
 * as ranges (consecutive delivery-ids of one session and role with the
 * same state and settled flag become one frame) when the output is taken
 * or before any other frame. The contract is in junction/amqp_delivery.h.
 */
#include "engine_private.h"

#include <junction/pool.h>

#include <stdlib.h>
#include <string.h>

/* ---- the tables ---------------------------------------------------------- */

static jn_amqp_delivery_t **dslot(const jn_amqp_dtable_t *t, uint32_t i)
{
    return &t->at[(t->head + i) & (t->cap - 1)];
}

/* Double the ring, keeping the ids in order from slot 0. */
static int dtable_grow(jn_amqp_dtable_t *t, uint32_t need)
{
    uint32_t cap = t->cap ? t->cap : 16;
    while (cap < need) {
        if (cap >= 0x80000000u)
            return JN_ENOMEM;
        cap *= 2;
    }
    if (cap == t->cap)
        return 0;
    jn_amqp_delivery_t **at = calloc(cap, sizeof *at);
    if (!at)
        return JN_ENOMEM;
    for (uint32_t i = 0; i < t->count; i++)
        at[i] = *dslot(t, i);
    free(t->at);
    t->at = at;
    t->cap = cap;
    t->head = 0;
    return 0;
}

int jn_amqp_dtable_put_any(jn_amqp_dtable_t *t, uint32_t id, jn_amqp_delivery_t *d)
{
    if (!t->started) {
        t->started = true;
        t->base = id;
        t->count = 0;
    }
    uint32_t i = id - t->base;
    if (i < t->count)
        return JN_EINVAL;
    if (i >= 0x80000000u) /* before base: an id already seen */
        return JN_EINVAL;
    if (t->count == 0) { /* nothing held: start the ring at id */
        t->base = id;
        t->head = 0;
        i = 0;
    }
    int rc = dtable_grow(t, i + 1);
    if (rc != 0)
        return rc;
    for (uint32_t k = t->count; k < i; k++)
        *dslot(t, k) = NULL;
    *dslot(t, i) = d;
    t->count = i + 1;
    return 0;
}

/* Drop the empty slots at the front (base moves on; base + count, the next
 * id, stays). */
static void dtable_trim(jn_amqp_dtable_t *t)
{
    while (t->count > 0 && !*dslot(t, 0)) {
        t->head = (t->head + 1) & (t->cap - 1);
        t->base++;
        t->count--;
    }
    if (t->count == 0)
        t->head = 0;
}

/* Empty id's slot. */
static void dtable_remove(jn_amqp_dtable_t *t, uint32_t id)
{
    uint32_t i = id - t->base;
    if (!t->started || i >= t->count)
        return;
    *dslot(t, i) = NULL;
    if (i != 0)
        return; /* an older id still held: base stays */
    /* the oldest went (the usual order): base moves on past it, and past
     * any later ones gone before it */
    t->head = (t->head + 1) & (t->cap - 1);
    t->base++;
    t->count--;
    if (t->count == 0)
        t->head = 0;
    else if (JN_UNLIKELY(!*dslot(t, 0)))
        dtable_trim(t);
}

/* ---- deliveries ---------------------------------------------------------- */

static jn_amqp_dtable_t *table_of(const jn_amqp_delivery_t *d)
{
    jn_amqp_session_t *s = d->link->session;
    return d->outgoing ? &s->sent : &s->received;
}

static _Atomic(jn_pool_t *) delivery_pool;

static inline jn_pool_t *dpool(void)
{
    jn_pool_t *p = atomic_load_explicit(&delivery_pool, memory_order_acquire);
    if (JN_LIKELY(p != NULL))
        return p;
    return jn_pool_get_once(&delivery_pool, "jn_amqp_delivery", sizeof(jn_amqp_delivery_t), 0);
}

jn_amqp_delivery_t *jn_amqp_delivery_alloc(void)
{
    jn_pool_t *p = dpool();
    jn_amqp_delivery_t *d = p ? jn_pool_alloc(p) : NULL;
    if (d)
        memset(d, 0, sizeof *d);
    return d;
}

void jn_amqp_delivery_free(jn_amqp_delivery_t *d)
{
    if (d->held)
        dtable_remove(table_of(d), d->id);
    if (d->link->current == d)
        d->link->current = NULL;
    if (JN_UNLIKELY(d->state != NULL))
        free(d->state);
    jn_pool_free(dpool(), d);
}

static void dtable_free_link(jn_amqp_dtable_t *t, const jn_amqp_link_t *l)
{
    for (uint32_t i = 0; i < t->count; i++) {
        jn_amqp_delivery_t *d = *dslot(t, i);
        if (d && (!l || d->link == l)) {
            *dslot(t, i) = NULL;
            d->held = false;
            jn_amqp_delivery_free(d);
        }
    }
    if (t->cap)
        dtable_trim(t);
}

void jn_amqp_deliveries_free(jn_amqp_session_t *s, const jn_amqp_link_t *l)
{
    dtable_free_link(&s->sent, l);
    dtable_free_link(&s->received, l);
    if (l)
        return;
    free(s->sent.at);
    free(s->received.at);
    jn_amqp_conn_t *c = s->conn;
    uint32_t keep = 0;
    for (uint32_t i = 0; i < c->npending; i++) {
        if (c->pending[i].session == s)
            free(c->pending[i].state);
        else
            c->pending[keep++] = c->pending[i];
    }
    c->npending = keep;
}

/* The user pointers of l's deliveries in t, cleared and passed to fn. */
static void dtable_users_clear(const jn_amqp_dtable_t *t, const jn_amqp_link_t *l,
                               jn_amqp_user_fn fn, void *ctx)
{
    for (uint32_t i = 0; i < t->count; i++) {
        jn_amqp_delivery_t *d = *dslot(t, i);
        if (d && d->link == l && d->user) {
            void *user = d->user;
            d->user = NULL;
            fn(ctx, user);
        }
    }
}

void jn_amqp_link_users_clear(jn_amqp_link_t *l, jn_amqp_user_fn fn, void *ctx)
{
    jn_amqp_session_t *s = l->session;
    dtable_users_clear(&s->sent, l, fn, ctx);
    dtable_users_clear(&s->received, l, fn, ctx);
    jn_amqp_delivery_t *d = l->current; /* not held: not begun, or settled already */
    if (d && !d->held && d->user) {
        void *user = d->user;
        d->user = NULL;
        fn(ctx, user);
    }
}

/* ---- the peer's dispositions (2.7.6) ------------------------------------- */

/* d is settled at either end: freed when whole, else no longer held (its
 * frames still come or go; freed at its last). */
static void settled_out(jn_amqp_delivery_t *d)
{
    if (d->complete) {
        jn_amqp_delivery_free(d);
        return;
    }
    if (d->held)
        dtable_remove(table_of(d), d->id);
    d->held = false;
}

int jn_amqp_disposition_input(jn_amqp_session_t *s, const jn_amqp_disposition_t *disp)
{
    /* the peer as receiver disposes of what we sent, and the other way */
    jn_amqp_dtable_t *t = disp->role == JN_AMQP_RECEIVER ? &s->sent : &s->received;
    uint32_t first = disp->first;
    uint32_t last = (disp->present & JN_AMQP_FIELD(2)) ? disp->last : first;
    if (!t->started || t->count == 0 || jn_amqp_serial_lt(last, first))
        return 0;
    if (jn_amqp_serial_lt(last, t->base))
        return 0;
    jn_amqp_conn_t *c = s->conn;
    /* ids from the later of first and base; a callback may settle and so
     * move base on, but never past the id after the one in hand */
    uint32_t id = jn_amqp_serial_lt(first, t->base) ? t->base : first;
    while ((uint32_t)(id - t->base) < t->count) {
        jn_amqp_delivery_t *d = jn_amqp_dtable_get(t, id);
        if (d) {
            if (disp->settled)
                d->remote_settled = true;
            d->busy = true;
            if (c->h.on_disposition)
                c->h.on_disposition(c->h.ctx, d, disp);
            d->busy = false;
            if (d->remote_settled || d->settled)
                settled_out(d);
        }
        if (id == last)
            break;
        id++;
    }
    return 0;
}

/* ---- our dispositions ----------------------------------------------------- */

/* Whether the len octets at a and b are the same. The usual state,
 * accepted or released (4 octets), is one compare, not a call. */
static inline bool same_state(const uint8_t *a, const uint8_t *b, size_t len)
{
    if (len == 4) {
        uint32_t x, y;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        return x == y;
    }
    return len == 0 || memcmp(a, b, len) == 0;
}

/* Append our disposition of id to the held list, extending the last range
 * when it is the same session, role, settled flag and state. */
static int hold(jn_amqp_conn_t *c, jn_amqp_session_t *s, bool role, uint32_t id, bool settled,
                const uint8_t *state, size_t state_len)
{
    if (c->npending) {
        jn_amqp_pending_t *p = &c->pending[c->npending - 1];
        if (p->session == s && p->role == role && p->settled == settled && p->last + 1 == id &&
            p->state_len == state_len && same_state(p->state, state, state_len)) {
            p->last = id;
            return 0;
        }
    }
    if (c->npending == c->pending_cap) {
        uint32_t cap = c->pending_cap ? c->pending_cap * 2 : 8;
        jn_amqp_pending_t *n = realloc(c->pending, cap * sizeof *n);
        if (!n)
            return JN_ENOMEM;
        c->pending = n;
        c->pending_cap = cap;
    }
    uint8_t *copy = NULL;
    if (state_len) {
        copy = malloc(state_len);
        if (!copy)
            return JN_ENOMEM;
        memcpy(copy, state, state_len);
    }
    c->pending[c->npending++] = (jn_amqp_pending_t){.session = s,
                                                    .role = role,
                                                    .settled = settled,
                                                    .first = id,
                                                    .last = id,
                                                    .state_len = (uint32_t)state_len,
                                                    .state = copy};
    return 0;
}

int jn_amqp_delivery_update(jn_amqp_delivery_t *d, const jn_amqp_state_t *state, bool settle)
{
    jn_amqp_session_t *s = d->link->session;
    if (!d->started || d->settled || !jn_amqp_link_sendable(d->link))
        return JN_EPERM;
    bool role = d->outgoing ? JN_AMQP_SENDER : JN_AMQP_RECEIVER;
    int rc;
    if (!state) {
        rc = hold(s->conn, s, role, d->id, settle, NULL, 0);
    } else if (!state->symbolic &&
               (state->code == JN_AMQP_ACCEPTED || state->code == JN_AMQP_RELEASED)) {
        /* the outcomes of almost every delivery: fields none, so one
         * encoding (3.4.2, 3.4.4), as jn_amqp_state_encode writes it */
        const uint8_t enc[] = {0x00, 0x53, (uint8_t)state->code, 0x45};
        rc = hold(s->conn, s, role, d->id, settle, enc, sizeof enc);
    } else {
        jn_encoder_t e;
        jn_encoder_init(&e);
        rc = jn_amqp_state_encode(&e, state);
        size_t len = 0;
        const uint8_t *enc = jn_encoder_data(&e, &len);
        if (rc == 0)
            rc = hold(s->conn, s, role, d->id, settle, enc, len);
        jn_encoder_free(&e);
    }
    if (rc != 0 || !settle)
        return rc;
    d->settled = true;
    if (!(d->complete && d->busy)) /* in a callback, freed when it returns */
        settled_out(d);
    return 0;
}

/* One held range as a disposition frame. */
static int send_pending(jn_amqp_conn_t *c, const jn_amqp_pending_t *h)
{
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_DISPOSITION);
    jn_amqp_disposition_t *d = &p.u.disposition;
    d->present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(3);
    d->role = h->role;
    d->first = h->first;
    d->settled = h->settled;
    if (h->last != h->first) {
        d->present |= JN_AMQP_FIELD(2);
        d->last = h->last;
    }
    if (h->state_len) { /* written as encoded (code 0: not decoded here) */
        d->present |= JN_AMQP_FIELD(4);
        jn_iter_init_bytes(&d->state.encoded, h->state, h->state_len, JN_VIEW_RAW);
    }
    return jn_amqp_conn_send(c, h->session->channel, &p);
}

int jn_amqp_conn_flush(jn_amqp_conn_t *c)
{
    if (c->flushing)
        return 0;
    c->flushing = true;
    int rc = 0;
    uint32_t i = 0;
    for (; i < c->npending && rc == 0; i++) {
        const jn_amqp_pending_t *h = &c->pending[i];
        if (!h->session->end_sent && !c->close_sent)
            rc = send_pending(c, h);
        free(h->state);
    }
    if (rc != 0) /* the output failed: what is held goes */
        for (; i < c->npending; i++)
            free(c->pending[i].state);
    c->npending = 0;
    c->flushing = false;
    return rc;
}

/* ---- accessors ----------------------------------------------------------- */

uint32_t jn_amqp_delivery_id(const jn_amqp_delivery_t *d)
{
    return d->id;
}

const uint8_t *jn_amqp_delivery_tag(const jn_amqp_delivery_t *d, size_t *len)
{
    *len = d->tag_len;
    return d->tag;
}

bool jn_amqp_delivery_tag_cut(const jn_amqp_delivery_t *d)
{
    return d->tag_cut;
}

jn_amqp_link_t *jn_amqp_delivery_link(const jn_amqp_delivery_t *d)
{
    return d->link;
}

bool jn_amqp_delivery_remote_settled(const jn_amqp_delivery_t *d)
{
    return d->remote_settled;
}

uint8_t jn_amqp_delivery_rcv_settle_mode(const jn_amqp_delivery_t *d)
{
    return d->rcv_settle_mode;
}

void jn_amqp_delivery_set_user(jn_amqp_delivery_t *d, void *user)
{
    d->user = user;
}

void *jn_amqp_delivery_user(const jn_amqp_delivery_t *d)
{
    return d->user;
}
