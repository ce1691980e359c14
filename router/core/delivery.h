/*
 * delivery.h — the delivery object shared by the I/O layer and the core
 * (router/core only; others use the accessors of junction/core.h).
 *
 * An incoming delivery is made by the I/O thread that receives it; the core
 * makes one outgoing copy per consumer it forwards it to. A copy shares the
 * incoming delivery's message (refcounted content, no octet copied).
 *
 * References (atomic refcount):
 *   incoming: the I/O layer's (from jn_delivery_new_IO); the core's, taken
 *     by jn_core_delivery_arrived_IO and dropped when the core is done with
 *     it (routed, every copy finished: ct.done); one per copy (ct.peer); one
 *     per posted action and per work item.
 *   copy: the core's, from creation until the copy is finished (settled,
 *     and no more CONTINUE needed, or its link gone); one per work item; the
 *     I/O layer takes its own from the SEND work item if it keeps the copy.
 * The last unref frees it (any thread): it drops the message and the link.
 */
#ifndef JN_CORE_DELIVERY_H
#define JN_CORE_DELIVERY_H 1

#include "core_private.h"

#define JN_DELIVERY_TAG_MAX 32

/* What an incoming delivery waits for its message to complete for. */
enum { JN_DLV_WAIT_NONE = 0, JN_DLV_WAIT_CONTROL, JN_DLV_WAIT_MANAGEMENT, JN_DLV_WAIT_TRACKING };

/* Which list of its link an outgoing copy is on (ct.list). */
enum { JN_DLV_ON_NONE = 0, JN_DLV_ON_UNDELIVERED, JN_DLV_ON_INFLIGHT };

struct jn_delivery {
    /* Immutable after creation (jn_delivery_new_IO, or the core's copy).
     * Everything from here to `tag` is cleared when the delivery is made;
     * the fields after it are set before they are read (delivery_alloc). */
    jn_core_link_t *link;  /* reference held */
    jn_message_t *message; /* reference held */
    bool outgoing;         /* a copy made by the core */
    bool presettled;       /* sent settled (copies: pre-settled forwarding) */
    uint8_t phase;         /* copies toward another router: x-opt-qd.phase
                            * to send with to_override (0: none) */
    uint8_t tag_len;
    uint8_t res_class;     /* residence class (arrived_ns, below) */
    /* to_override is the delivery's own (heap) */
    bool owns_to;
    /* an exchange's copy: to_override is its next hop, sent with a fresh
     * trace (exchange.c) */
    bool rerouted;

    /* Atomic. continue_posted: continue_action is on the core's queue (set
     * by the receiving I/O thread, cleared by the core when it takes it).
     * work_busy: `work` below is queued or held by the I/O thread (set by
     * the core when it takes it, cleared by whoever frees the item).
     * update_busy: `update` below is posted (set by the I/O thread that
     * takes it, cleared by the core when it is done with it). */
    atomic_uint refcount;
    atomic_bool continue_posted;
    atomic_bool work_busy;
    atomic_bool update_busy;

    /* copies toward another router: the x-opt-qd.to this router sets (the
     * address of origin_link, a reference held), or NULL. An incoming
     * delivery from an anonymous link of a connection with a tenant space:
     * the address it was routed by, in the space (owned; set by the core
     * when it routes it, tenant.c), which its copies to routers carry. */
    const char *to_override;
    jn_core_link_t *origin_link;
    /* the sender's transfer state (jn_delivery_set_state_IO), owned, or
     * NULL (almost always) */
    jn_disposition_t *state;
    /* residence time (/metrics): when the receiving I/O pass began
     * (jn_time_mono_ns; 0: composed by the router, not measured), and,
     * on a copy, the class of the address it was routed by (res_class
     * above, JN_RES_CLASS_*, copied from its peer's ct.res_class) */
    uint64_t arrived_ns;

    /* The I/O thread of the link's connection only. */
    void *io;

    /* Core thread only. */
    struct {
        /* incoming deliveries */
        jn_delivery_t *copies;   /* copies not finished (through copy_next) */
        uint32_t pending;        /* copies not yet handed out (or dropped, or parked) */
        uint32_t handed;         /* copies handed out or parked */
        uint64_t continue_batch; /* batch of the last CONTINUE round */
        bool routed;             /* forwarding decided */
        bool multicast;
        /* unsettled multicast: copies handed out and not settled yet,
         * those of them whose outcome is not in yet (no terminal
         * disposition, settled or not), the strongest outcome they gave
         * (JN_MC_* rank, forward.c), and whether that outcome went to the
         * sender unsettled (every copy gave one, some not settled) */
        uint8_t mc_outcome;
        bool mc_told;
        uint32_t mc_unsettled;
        uint32_t mc_waiting;
        bool sender_settled;  /* the sender settled (or sent it settled) */
        bool router_settled;  /* the router settled it toward the sender */
        bool credit_returned; /* counted back into its link's credit */
        bool done;            /* the core dropped its reference */
        uint8_t wait;         /* JN_DLV_WAIT_*: served once the message is complete */
        bool served;          /* consumed in-process (control, management) */
        uint8_t res_class;    /* JN_RES_CLASS_* of the address routed by */
        const jn_reroute_t *reroute; /* while an exchange makes its copies */
        /* outgoing copies */
        jn_delivery_t *peer;                  /* the incoming delivery (reference held) */
        jn_delivery_t *copy_prev, *copy_next; /* peer->ct.copies */
        jn_delivery_t *prev, *next;           /* the link list ct.list says */
        uint8_t list;                         /* JN_DLV_ON_* */
        bool handed_out;                      /* JN_WORK_DELIVERY_SEND queued */
        bool mc_droppable;                    /* a multicast copy that waited for
                                               * credit: may be parked (forward_mc.c) */
        bool parked;                          /* multicast copy waiting for credit
                                               * that no longer holds its incoming
                                               * delivery back: counted in its
                                               * peer's handed (and mc_unsettled)
                                               * already (forward_mc.c) */
        bool settled;                         /* settled on the consumer's side */
        bool mc_outcome_in;                   /* multicast: its outcome is merged
                                               * into its peer's (forward.c) */
        bool outcome_counted;                 /* its outcome is in the statistics */
        bool final;                           /* its last SEND/CONTINUE was queued after
                                               * the core saw the message complete or
                                               * aborted: it needs no more CONTINUE */
    } ct;

    /* Not cleared when the delivery is made (see the top). */
    uint8_t tag[JN_DELIVERY_TAG_MAX]; /* tag_len octets of it */

    /* Owned by the action queue while posted (type set when made). */
    jn_action_t arrive_action;
    jn_action_t continue_action;

    /* The delivery's own work item and update action, so that the usual
     * delivery (one SEND or one UPDATE toward its connection, one update
     * from it) takes none from a pool: `work` while work_busy is false is
     * the core's to fill (jn_work_dlv_CT); `update` while update_busy is
     * false is the I/O thread's (jn_core_delivery_update_IO). A second
     * one while the first is still out comes from the pool as before. */
    jn_work_t work;
    jn_update_action_t update;
};

/* jn_dlv_ref, jn_dlv_unref: jn_delivery_ref and jn_delivery_unref inline,
 * for router/core's own per-message path (a delivery takes and drops
 * several references in its life, and a call each cost 15 to 20
 * instructions when it was not the last). Any thread; the last unref
 * frees (jn_delivery_free_). */
void jn_delivery_free_(jn_delivery_t *dlv);

static inline jn_delivery_t *jn_dlv_ref(jn_delivery_t *dlv)
{
    atomic_fetch_add_explicit(&dlv->refcount, 1, memory_order_relaxed);
    return dlv;
}

static inline void jn_dlv_unref(jn_delivery_t *dlv)
{
    unsigned before = atomic_fetch_sub_explicit(&dlv->refcount, 1, memory_order_acq_rel);
    JN_CHECK(before > 0);
    if (before == 1)
        jn_delivery_free_(dlv);
}

/* jn_dlv_list_append_CT / jn_dlv_list_remove_CT: put dlv at the tail of
 * list / take it off list (it is on it), through dlv->ct.prev and next.
 * Core thread. Inline: a copy moves from its link's undelivered list to
 * its inflight list and off it again, once each per message. */
static inline void jn_dlv_list_append_CT(jn_dlv_list_t *list, jn_delivery_t *dlv)
{
    JN_ASSERT_SOME_CT();
    dlv->ct.next = NULL;
    dlv->ct.prev = list->tail;
    if (list->tail)
        list->tail->ct.next = dlv;
    else
        list->head = dlv;
    list->tail = dlv;
    list->count++;
}

static inline void jn_dlv_list_remove_CT(jn_dlv_list_t *list, jn_delivery_t *dlv)
{
    JN_ASSERT_SOME_CT();
    if (dlv->ct.prev)
        dlv->ct.prev->ct.next = dlv->ct.next;
    else
        list->head = dlv->ct.next;
    if (dlv->ct.next)
        dlv->ct.next->ct.prev = dlv->ct.prev;
    else
        list->tail = dlv->ct.prev;
    dlv->ct.prev = dlv->ct.next = NULL;
    list->count--;
}

/* jn_delivery_internal_CT: a pre-settled delivery of the core's own, on
 * its internal link (a message the core originates: edge and mesh control,
 * address lookups), carrying message (the reference passes to the
 * delivery). Refcount 1, held by the caller. NULL on ENOMEM (the message
 * reference then stays with the caller). Core thread. */
jn_delivery_t *jn_delivery_internal_CT(jn_core_t *core, jn_message_t *message);

/* jn_delivery_late_state_CT: incoming delivery dlv's sender put state
 * (borrowed; JN_DISP_NONE: nothing is done) on a later transfer frame
 * (AMQP 1.0 part 2, 2.7.5) or in a disposition not settling it: it
 * replaces dlv's state, and each copy's that is not handed out yet (it
 * goes on the copy's first transfer); a copy handed out and not settled
 * gets it as a JN_WORK_DELIVERY_UPDATE not settled (its connection puts it
 * on the copy's next frame, or in a disposition when none is left). Out of
 * memory: logged, not passed on. Core thread. */
void jn_delivery_late_state_CT(jn_delivery_t *dlv, const jn_disposition_t *state);

/* jn_delivery_copy_CT: a new outgoing copy of incoming delivery peer for
 * outgoing link, pre-settled when presettled or when link is a client's
 * receiver that asked for settled deliveries (link->presettled: its
 * snd-settle-mode is settled; not a link-routed one); refcount 1 (the core's). It
 * holds references on peer, peer's message and link, and is put on peer's
 * copy list (not on a link list). Its tag is the next of link's counter,
 * or, on a link-routed link (link->ct.routed), peer's own tag. Returns
 * NULL on ENOMEM. */
jn_delivery_t *jn_delivery_copy_CT(jn_delivery_t *peer, jn_core_link_t *link, bool presettled);

/* The core a delivery belongs to. Any thread. */
static inline jn_core_t *jn_delivery_core(const jn_delivery_t *dlv)
{
    return dlv->link->conn->core;
}

/* jn_work_dlv_CT below sets each field of a jn_work_t by name: a field
 * added to it must be added there too (LP64 size). */
_Static_assert(sizeof(void *) != 8 || sizeof(jn_work_t) == 112,
               "jn_work_t changed: set its new field in jn_work_dlv_CT");

/* jn_work_dlv_CT: queue work of type about dlv on its link's connection:
 * the item takes a delivery reference, carries a copy of disp (may be
 * NULL: then an outcome of disp_type and nothing else) and settled. Hot
 * path, inline: dlv's own item (delivery.h, `work`) when it is back from
 * the I/O thread and disp owns nothing, so a SEND or an UPDATE costs no
 * pool object and no call; else jn_work_dlv_slow_CT (conn.c). Returns 0 or
 * JN_ENOMEM (logged, nothing queued). Core thread. */
static inline int jn_work_dlv_CT(jn_delivery_t *dlv, jn_work_type_t type, uint64_t disp_type,
                                 const jn_disposition_t *disp, bool settled)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    if (JN_UNLIKELY(atomic_load_explicit(&dlv->work_busy, memory_order_acquire)) ||
        (disp && JN_UNLIKELY(disp->condition || disp->description || disp->extra)))
        return jn_work_dlv_slow_CT(dlv, type, disp_type, disp, settled);
    /* only the core sets it: no other thread races this store (conn.c) */
    atomic_store_explicit(&dlv->work_busy, true, memory_order_relaxed);
    jn_work_t *w = &dlv->work;
    /* every field, one store each (node: jn_mpsc_push sets it) */
    w->type = type;
    w->home = JN_WORK_HOME_DLV;
    w->link = dlv->link; /* kept alive by the delivery reference */
    w->dlv = jn_dlv_ref(dlv);
    w->credit = 0;
    w->drain = w->abort = w->forced = w->passthrough = false;
    w->settled = settled;
    w->disp = (jn_disposition_t){.type = disp ? disp->type : disp_type,
                                 .delivery_failed = disp && disp->delivery_failed,
                                 .undeliverable_here = disp && disp->undeliverable_here};
    w->address = w->condition = w->description = NULL;
    jn_work_push_CT(dlv->link->conn, w);
    return 0;
}

#endif /* JN_CORE_DELIVERY_H */
