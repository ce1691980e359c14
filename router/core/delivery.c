/*
 * delivery.c — delivery objects (delivery.h): creation by the receiving I/O
 * thread and by the core (copies), references, accessors, the delivery
 * actions the I/O layer posts, dispositions, and the intrusive lists the
 * core keeps them on.
 *
 * Posting without allocating: a delivery carries its own arrival and
 * continue action nodes. Arrival happens once. A continue is posted only
 * when none is queued (continue_posted), so a burst of frames of one
 * streaming message costs one action; the core clears the flag (an atomic
 * exchange) before it reads the message's progress, so octets published
 * after that always lead to another continue. A disposition update uses
 * the delivery's own update action (update_busy), and takes one from a
 * pool only while that one is still posted; the core's work items about a
 * delivery likewise use its own `work` first (conn.c).
 */
#include "delivery.h"

#include <junction/pool.h>

#include <stdlib.h>
#include <string.h>

static _Atomic(jn_pool_t *) delivery_pool;
static _Atomic(jn_pool_t *) update_pool;

/* A new delivery on link carrying message (its reference passes to it),
 * refcount 1. Only the fields up to `tag` are cleared (delivery.h): the
 * tag, the embedded work item and update action are written before they
 * are read, so a delivery costs a third less to make. */
static inline jn_delivery_t *delivery_alloc(jn_core_link_t *link, jn_message_t *message)
{
    jn_pool_t *pool = jn_pool_get_once(&delivery_pool, "jn_delivery", sizeof(jn_delivery_t), 0);
    jn_delivery_t *d = pool ? jn_pool_alloc(pool) : NULL;
    if (!d)
        return NULL;
    memset(d, 0, offsetof(jn_delivery_t, tag));
    atomic_init(&d->refcount, 1);
    d->link = jn_link_ref(link);
    d->message = message;
    d->arrive_action.type = JN_ACT_DLV_ARRIVED;
    d->continue_action.type = JN_ACT_DLV_CONTINUED;
    return d;
}

/* A copy of state for dlv: 0 or JN_ENOMEM. */
static int delivery_set_state(jn_delivery_t *dlv, const jn_disposition_t *state)
{
    jn_disposition_t *s = malloc(sizeof *s);
    if (!s || jn_disposition_copy(s, state) != 0) {
        free(s);
        return JN_ENOMEM;
    }
    dlv->state = s;
    return 0;
}

jn_delivery_t *jn_delivery_new_IO(jn_core_link_t *link, jn_message_t *message, bool settled,
                                  const void *tag, size_t tag_len)
{
    JN_ASSERT_IO_CALLER();
    jn_delivery_t *d = delivery_alloc(link, message);
    if (!d)
        return NULL;
    d->presettled = settled;
    /* AMQP limits tags to 32 octets (part 2, 2.8.7); proton does not check
     * what a peer sends, so a longer one is cut rather than trusted. */
    if (tag_len > JN_DELIVERY_TAG_MAX)
        tag_len = JN_DELIVERY_TAG_MAX;
    if (tag_len)
        memcpy(d->tag, tag, tag_len);
    d->tag_len = (uint8_t)tag_len;
    return d;
}

jn_delivery_t *jn_delivery_internal_CT(jn_core_t *core, jn_message_t *message)
{
    JN_ASSERT_CT(core);
    jn_delivery_t *d = delivery_alloc(core->internal_link, message);
    if (d)
        d->presettled = true;
    return d;
}

jn_delivery_t *jn_delivery_copy_CT(jn_delivery_t *peer, jn_core_link_t *link, bool presettled)
{
    JN_ASSERT_CT(jn_delivery_core(peer));
    jn_delivery_t *c = delivery_alloc(link, jn_message_ref(peer->message));
    if (!c) {
        jn_message_unref(peer->message);
        return NULL;
    }
    c->outgoing = true;
    /* a consumer that asked for settled deliveries (snd-settle-mode
     * settled) gets every copy settled, as 1.19 sends them (forward.c
     * accepts an unsettled sender's delivery on its behalf) */
    c->presettled =
        presettled || (link->presettled && link->type == JN_LINK_ENDPOINT && !link->ct.routed);
    c->arrived_ns = peer->arrived_ns;
    c->res_class = peer->ct.res_class;
    if (JN_UNLIKELY(link->ct.routed != NULL)) {
        /* a link-routed copy keeps the sender's tag (unique on the one
         * link it came from) and nothing else is added: it is passed on as
         * it came (docs/protocol.md, "Link routes, auto-links and
         * phases on the wire") */
        memcpy(c->tag, peer->tag, peer->tag_len);
        c->tag_len = peer->tag_len;
    } else {
        uint64_t t = __builtin_bswap64(link->ct.next_tag++); /* big-endian, as 8 octets */
        memcpy(c->tag, &t, 8);
        c->tag_len = 8;
    }
    if (link->conn->router_peer && !link->ct.routed) {
        if (JN_UNLIKELY(peer->ct.reroute != NULL)) {
            /* an exchange's copy: to its next hop (exchange.c) */
            c->to_override = strdup(peer->ct.reroute->address);
            c->owns_to = c->rerouted = c->to_override != NULL;
            c->phase = peer->ct.reroute->phase;
        } else if (!peer->link->ct.anonymous && peer->link->address) {
            c->origin_link = jn_link_ref(peer->link);
            c->to_override = peer->link->address;
            c->phase = peer->link->phase;
        } else if (JN_UNLIKELY(peer->owns_to)) {
            /* sent in a tenant space: the next router routes by the
             * address in the space (tenant.c) */
            c->to_override = strdup(peer->to_override);
            c->owns_to = c->to_override != NULL;
        }
    }
    if (JN_UNLIKELY(peer->state) && delivery_set_state(c, peer->state) != 0)
        JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_ERROR,
               "Out of memory for a delivery's state: the copy goes without it");
    c->ct.peer = jn_dlv_ref(peer);
    c->ct.copy_next = peer->ct.copies;
    if (peer->ct.copies)
        peer->ct.copies->ct.copy_prev = c;
    peer->ct.copies = c;
    return c;
}

jn_delivery_t *jn_delivery_ref(jn_delivery_t *dlv)
{
    return jn_dlv_ref(dlv);
}

void jn_delivery_unref(jn_delivery_t *dlv)
{
    if (dlv)
        jn_dlv_unref(dlv);
}

void jn_delivery_free_(jn_delivery_t *dlv)
{
    jn_message_unref(dlv->message);
    if (JN_UNLIKELY(dlv->state)) {
        jn_disposition_clear(dlv->state);
        free(dlv->state);
    }
    if (dlv->origin_link)
        jn_link_unref(dlv->origin_link);
    if (JN_UNLIKELY(dlv->owns_to))
        free((char *)dlv->to_override);
    jn_link_unref(dlv->link);
    jn_pool_free(atomic_load_explicit(&delivery_pool, memory_order_acquire), dlv);
}

int jn_delivery_set_state_IO(jn_delivery_t *dlv, const jn_disposition_t *state)
{
    JN_ASSERT_IO_CALLER();
    return delivery_set_state(dlv, state);
}

const jn_disposition_t *jn_delivery_state(const jn_delivery_t *dlv)
{
    return dlv->state;
}

/* dlv's state becomes a copy of state (the old one freed). Out of memory:
 * the old one stays. Core thread, for a delivery no I/O thread reads. */
static void replace_state_CT(jn_delivery_t *dlv, const jn_disposition_t *state)
{
    jn_disposition_t *old = dlv->state;
    if (delivery_set_state(dlv, state) != 0) {
        JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_ERROR,
               "Out of memory for a delivery's later state: not passed on");
        return;
    }
    if (old) {
        jn_disposition_clear(old);
        free(old);
    }
}

int jn_delivery_set_later_state_IO(jn_delivery_t *dlv, const jn_disposition_t *state)
{
    JN_ASSERT_IO_CALLER();
    jn_disposition_t *old = dlv->state;
    if (delivery_set_state(dlv, state) != 0)
        return JN_ENOMEM;
    if (old) {
        jn_disposition_clear(old);
        free(old);
    }
    return 0;
}

void jn_delivery_late_state_CT(jn_delivery_t *dlv, const jn_disposition_t *state)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    if (state->type == JN_DISP_NONE)
        return;
    replace_state_CT(dlv, state); /* for copies made from now on */
    for (jn_delivery_t *c = dlv->ct.copies; c; c = c->ct.copy_next) {
        if (!c->ct.handed_out)
            replace_state_CT(c, state); /* its first transfer carries it */
        else if (!c->ct.settled) /* on its next frame, or a disposition */
            (void)jn_work_dlv_CT(c, JN_WORK_DELIVERY_UPDATE, JN_DISP_NONE, state, false);
    }
}

const char *jn_delivery_to_override(const jn_delivery_t *dlv)
{
    return dlv->to_override;
}

bool jn_delivery_rerouted(const jn_delivery_t *dlv)
{
    return dlv->rerouted;
}

int jn_delivery_phase(const jn_delivery_t *dlv)
{
    return dlv->phase;
}

jn_message_t *jn_delivery_message(const jn_delivery_t *dlv)
{
    return dlv->message;
}

jn_core_link_t *jn_delivery_link(const jn_delivery_t *dlv)
{
    return dlv->link;
}

bool jn_delivery_presettled(const jn_delivery_t *dlv)
{
    return dlv->presettled;
}

const uint8_t *jn_delivery_tag(const jn_delivery_t *dlv, size_t *len)
{
    *len = dlv->tag_len;
    return dlv->tag;
}

void jn_delivery_set_arrival_IO(jn_delivery_t *dlv, uint64_t ns)
{
    JN_ASSERT_IO_CALLER();
    dlv->arrived_ns = ns;
}

uint64_t jn_delivery_residence_since(const jn_delivery_t *dlv, unsigned *res_class)
{
    *res_class = dlv->res_class;
    return dlv->arrived_ns;
}

void *jn_delivery_io(const jn_delivery_t *dlv)
{
    return dlv->io;
}

void jn_delivery_set_io(jn_delivery_t *dlv, void *io)
{
    dlv->io = io;
}

/* ---- actions ------------------------------------------------------------- */

void jn_core_delivery_arrived_IO(jn_delivery_t *dlv)
{
    JN_ASSERT_IO_CALLER();
    jn_dlv_ref(dlv); /* the core's reference, dropped when it is done */
    jn_core_post(jn_delivery_core(dlv), &dlv->arrive_action);
}

void jn_core_delivery_continued_IO(jn_delivery_t *dlv)
{
    JN_ASSERT_IO_CALLER();
    if (atomic_exchange_explicit(&dlv->continue_posted, true, memory_order_acq_rel))
        return; /* one is queued: the core reads the progress after this */
    jn_dlv_ref(dlv);
    jn_core_post(jn_delivery_core(dlv), &dlv->continue_action);
}

void jn_core_delivery_update_IO(jn_delivery_t *dlv, const jn_disposition_t *disp, bool settled)
{
    JN_ASSERT_IO_CALLER();
    jn_update_action_t *a = &dlv->update;
    /* the delivery's own when it is not posted already (the usual case:
     * one update per delivery), else one from the pool; the acquire pairs
     * with the core's release in jn_update_action_free */
    bool embedded = !atomic_exchange_explicit(&dlv->update_busy, true, memory_order_acquire);
    if (JN_UNLIKELY(!embedded)) {
        jn_pool_t *pool =
            jn_pool_get_once(&update_pool, "jn_core_update", sizeof(jn_update_action_t), 0);
        a = pool ? jn_pool_alloc(pool) : NULL;
        /* No return value to report through, and losing a settlement would
         * leak the delivery at both ends: out of memory here is fatal. */
        JN_CHECK(a != NULL);
    }
    a->base.type = JN_ACT_DLV_UPDATE;
    a->dlv = jn_dlv_ref(dlv);
    a->settled = settled;
    a->embedded = embedded;
    if (!disp) {
        a->disp = (jn_disposition_t){.type = JN_DISP_NONE};
    } else if (jn_disposition_copy(&a->disp, disp) != 0) {
        /* ENOMEM: keep the outcome, lose the text */
        a->disp.type = disp->type;
        a->disp.delivery_failed = disp->delivery_failed;
        a->disp.undeliverable_here = disp->undeliverable_here;
    }
    jn_core_post(jn_delivery_core(dlv), &a->base);
}

void jn_update_action_free(jn_update_action_t *a)
{
    jn_delivery_t *dlv = a->dlv;
    jn_disposition_clear(&a->disp);
    if (JN_LIKELY(a->embedded))
        /* dlv's own: the I/O thread may post it again from here on (the
         * release orders this thread's reads of it before its reuse) */
        atomic_store_explicit(&dlv->update_busy, false, memory_order_release);
    else
        jn_pool_free(atomic_load_explicit(&update_pool, memory_order_acquire), a);
    jn_dlv_unref(dlv);
}

/* ---- dispositions --------------------------------------------------------- */

void jn_disposition_clear_owned(jn_disposition_t *d)
{
    free(d->condition);
    free(d->description);
    if (d->extra) {
        free(d->extra->info);
        free(d->extra->annotations);
        free(d->extra->data);
        free(d->extra);
    }
    *d = (jn_disposition_t){.type = JN_DISP_NONE};
}

static int dup_octets(uint8_t **dst, size_t *dst_len, const uint8_t *src, size_t len)
{
    *dst = NULL;
    *dst_len = 0;
    if (!src || !len)
        return 0;
    *dst = malloc(len);
    if (!*dst)
        return JN_ENOMEM;
    memcpy(*dst, src, len);
    *dst_len = len;
    return 0;
}

static int dup_string(char **dst, const char *src)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : JN_ENOMEM;
}

int jn_disposition_copy_owned(jn_disposition_t *dst, const jn_disposition_t *src)
{
    memset(dst, 0, sizeof *dst);
    dst->type = src->type;
    dst->delivery_failed = src->delivery_failed;
    dst->undeliverable_here = src->undeliverable_here;
    if (dup_string(&dst->condition, src->condition) != 0 ||
        dup_string(&dst->description, src->description) != 0)
        goto nomem;
    if (src->extra) {
        const jn_disposition_extra_t *x = src->extra;
        jn_disposition_extra_t *y = calloc(1, sizeof *y);
        if (!y)
            goto nomem;
        dst->extra = y;
        y->has_section = x->has_section;
        y->section_number = x->section_number;
        y->section_offset = x->section_offset;
        if (dup_octets(&y->info, &y->info_len, x->info, x->info_len) != 0 ||
            dup_octets(&y->annotations, &y->annotations_len, x->annotations,
                       x->annotations_len) != 0 ||
            dup_octets(&y->data, &y->data_len, x->data, x->data_len) != 0)
            goto nomem;
    }
    return 0;
nomem:
    jn_disposition_clear(dst);
    return JN_ENOMEM;
}
