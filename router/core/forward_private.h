/*
 * forward_private.h — what the forwarding files share among themselves
 * (router/core/forward*.c only; the rest of the core calls the
 * jn_forward_* functions of core_fns.h).
 *
 * Forwarding is split by concern:
 *   forward.c         arrival (one dispatch on what the delivery is),
 *                     routing, handing out, outcomes and settlement: the
 *                     per-message path, kept in one file so that the
 *                     compiler inlines it;
 *   forward_mc.c      stuck multicast consumers: parking, dropping, the
 *                     watch (docs/multicast.md);
 *   forward_gone.c    a producer's or a consumer's link going away;
 *   forward_figures.c the router's stuck and blocked figures.
 * Everything here runs on the core thread only (each function asserts it).
 */
#ifndef JN_CORE_FORWARD_PRIVATE_H
#define JN_CORE_FORWARD_PRIVATE_H 1

#include "delivery.h"

/* ---- forward.c ----------------------------------------------------------- */

/* What an incoming delivery is, for forwarding: the one decision
 * jn_forward_arrived_CT dispatches on (classify_CT). */
typedef enum {
    JN_FWD_CONTROL,     /* on an inter-router control link: the mesh's (router.c) */
    JN_FWD_EDGE_SERVED, /* on an edge's tracking, heartbeat, lookup or reply link (edge.c) */
    JN_FWD_LINK_ROUTED, /* on a link-routed link: to the link at its other end, as is */
    JN_FWD_MANAGEMENT,  /* to $management: the core's own endpoint (router.c) */
    JN_FWD_UNAVAILABLE, /* anonymous, to an address configured unavailable: rejected */
    JN_FWD_EXCHANGE,    /* to an address bound to an exchange (exchange.c) */
    JN_FWD_MULTICAST,   /* one copy per consumer and per next-hop router */
    JN_FWD_ANYCAST,     /* one copy to one consumer (closest or balanced) */
    JN_FWD_NO_ROUTE,    /* no address, or looping: released (pre-settled: dropped) */
} jn_fwd_kind_t;

/* Where an incoming delivery goes (classify_CT): its kind, the address it
 * names (counted as its ingress), the address it is routed by (the
 * edge's uplink address when nothing here takes it) and its route
 * context (set for the routed kinds only). */
typedef struct {
    jn_addr_t *named;
    jn_addr_t *addr;
    jn_route_ctx_t rc;
} jn_fwd_route_t;

/* The address an incoming delivery goes to: its link's target, or on an
 * anonymous link the one its message names; NULL: none (or its link is
 * not attached). Borrowed, not referenced. */
jn_addr_t *jn_fwd_addr_of_CT(jn_core_t *core, jn_delivery_t *dlv);
/* The consumer an anycast delivery goes to for addr (closest or balanced,
 * rc: where it came from); NULL: none. Borrowed. */
jn_core_link_t *jn_fwd_pick_anycast_CT(jn_core_t *core, jn_addr_t *addr, jn_route_ctx_t *rc);
/* Queue a new copy (the core's reference moves to its link's undelivered
 * list) and hand out what its link's credit allows. */
void jn_fwd_enqueue_CT(jn_delivery_t *copy);
/* A copy of dlv counted in its pending copies and not made then (it
 * waited for a streaming link, stream.c): make it on `to` and queue it,
 * or with `to` NULL (or no memory), count it as not made. dlv is
 * borrowed (the caller keeps a reference across the call). */
void jn_fwd_deferred_copy_CT(jn_delivery_t *dlv, jn_core_link_t *to);
/* Every copy of dlv is handed out or dropped: its credit goes back to its
 * link, and the router settles it when the decision is the router's. */
void jn_fwd_all_handed_CT(jn_core_t *core, jn_delivery_t *dlv);
/* Finish a copy: off its link and its incoming delivery, the core's
 * reference dropped (copy may be freed on return). */
void jn_fwd_finish_copy_CT(jn_delivery_t *copy);
/* Settle a copy toward its consumer, finished when nothing more will be
 * sent on it. */
void jn_fwd_settle_copy_CT(jn_delivery_t *copy);
/* Settle an incoming delivery toward its sender with outcome type
 * (JN_DISP_NONE: the outcome it has); true when this settled it. */
bool jn_fwd_settle_incoming_CT(jn_delivery_t *dlv, uint64_t type);
/* Multicast outcomes: merge type into peer's strongest outcome; a copy's
 * outcome is in; settle peer once every copy settled (check); tell the
 * sender the merged outcome unsettled once every copy gave one (tell). */
void jn_fwd_mc_merge_CT(jn_delivery_t *peer, uint64_t type);
void jn_fwd_mc_outcome_in_CT(jn_delivery_t *copy);
void jn_fwd_mc_check_CT(jn_delivery_t *dlv);
void jn_fwd_mc_tell_CT(jn_delivery_t *dlv);

/* ---- forward_mc.c -------------------------------------------------------- */

/* A multicast copy toward a stuck consumer whose backlog is full is not
 * made: counted as dropped (on to and the router). */
void jn_fwd_mc_drop_CT(jn_core_t *core, jn_core_link_t *to);
/* A multicast copy waiting for credit stops holding its incoming
 * delivery (counted as handed); it stays on its link's list. */
void jn_fwd_mc_park_CT(jn_core_t *core, jn_delivery_t *copy);
/* A parked copy leaves its link's parked backlog (it is handed out). */
void jn_fwd_mc_unpark_CT(jn_delivery_t *copy);
/* A parked copy is never sent: released in its delivery's merged outcome
 * and finished (copy may be freed on return). */
void jn_fwd_mc_discard_parked_CT(jn_delivery_t *copy);

#endif
