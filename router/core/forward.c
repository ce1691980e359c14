/*
 * forward.c — forwarding and settlement: what happens to a delivery from its
 * arrival to the moment the core is done with it (core thread only).
 *
 * Routing. An incoming delivery goes to its link's target address, or, on an
 * anonymous link, to the address its message names (to-override when the
 * connection honours router annotations, else properties.to). Anycast
 * (closest, balanced) makes one copy for one consumer; multicast one copy
 * per consumer (and per next-hop router), settled as the incoming delivery
 * was sent. No address or no consumer: the delivery is released (and
 * settled) at once; a pre-settled one is dropped.
 *
 * Handing out. A copy is queued on its link's undelivered FIFO and handed
 * to the I/O layer (JN_WORK_DELIVERY_SEND) while the link has credit. Once
 * every copy of a delivery is handed out (or dropped), its credit goes back
 * to its incoming link (link.c). A multicast delivery none of whose copies
 * went out is released. An unsettled multicast delivery is settled toward
 * its sender once every copy handed out is settled, with the strongest of
 * their outcomes (rejected > accepted > modified > released, as qdrouterd
 * 1.19, docs/protocol.md "Forwarding across routers"); a copy lost with its consumer's connection
 * counts as modified. When every copy gave an outcome but some consumers
 * wait for the sender to settle first, that outcome goes to the sender
 * unsettled, and its settlement settles the copies. So a sender is never told accepted for a
 * message no consumer took.
 *
 * A stuck multicast consumer (docs/multicast.md). A consumer of a multicast
 * address (a local outgoing link; never a link toward another router,
 * inter-router or edge: that router judges its own consumers, and a slow
 * peer or a busy machine must not cost the healthy consumers behind it
 * their copies) that keeps taking copies paces the senders as above: a copy
 * waiting for its credit holds its incoming delivery. One that takes no
 * copy for JN_CORE_MC_STUCK_MS while copies wait for it is stuck (the watch,
 * jn_forward_mc_tick_CT, runs only while some multicast copy waits): its
 * waiting copies are "parked" (counted as handed, so they no longer hold
 * their senders' credit), and until it catches up (takes a copy and has at
 * most half its capacity waiting) its new copies are parked too, or, past
 * a backlog of its link's capacity, not made at all: dropped and counted
 * (the link's droppedPresettledCount, the router's
 * droppedPresettledDeliveries), with one log line when it is found stuck
 * and one when it catches up or goes. A dropped copy, and a parked one
 * whose link goes before it is sent, count as released in the merged
 * outcome of an unsettled delivery; a delivery no copy of which went out is
 * released. An address with multicastBackpressure is never watched: the
 * slowest consumer, stuck or not, paces the senders (qdrouterd 1.19).
 *
 * Settlement (unsettled anycast). The consumer's outcome and settlement go
 * back to the incoming delivery as they come (JN_WORK_DELIVERY_UPDATE). If
 * the sender settles first, the copies handed out are settled toward their
 * consumers. A consumer that goes away: its undelivered copies are re-routed
 * to another consumer of the address (anycast) or released to their
 * senders; its copies handed out and not settled may have been delivered:
 * modified (delivery-failed) to their senders, whatever the link (a
 * client's, an edge uplink, a link-route end, an auto-link or an
 * inter-router link). Released means "never handed out" only.
 *
 * Lifetimes. A copy is finished — removed from its link and its incoming
 * delivery, and its core reference dropped — when it is settled and needs no
 * more CONTINUE, or when its link goes. A copy needs no more CONTINUE once
 * its SEND or a CONTINUE was queued after the core had seen the message
 * complete or aborted (ct.final): the core reads that state before it
 * queues the work, never after, because the I/O layer may carry the work
 * out before a later change of the message becomes visible to it. The core
 * is done with an incoming delivery when it has been routed, every copy is
 * handed out and every copy is finished.
 */
#include "delivery.h"

#include <junction/pool.h>
#include <junction/time.h>

#include <string.h>

static bool message_finished(const jn_message_t *m)
{
    return jn_message_is_complete(m) || jn_message_is_aborted(m);
}

/* Drop the core's reference on an incoming delivery it has no more use for. */
static void check_done_CT(jn_delivery_t *dlv)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    if (dlv->ct.done || !dlv->ct.routed || dlv->ct.pending > 0 || dlv->ct.copies)
        return;
    dlv->ct.done = true;
    jn_delivery_unref(dlv);
}

/* Management counters of a link (router.link acceptedCount...): one
 * increment per settled delivery, core thread only. */
static inline void count_link_outcome_CT(jn_core_link_t *link, uint64_t type)
{
    JN_ASSERT_CT(link->conn->core);
    if (type >= JN_DISP_ACCEPTED && type <= JN_DISP_MODIFIED)
        link->ct.outcomes[type - JN_DISP_ACCEPTED]++;
}

/* An incoming delivery is about to be settled for the first time (by the
 * router or its sender): one less unsettled on its link. */
static inline void incoming_settling_CT(jn_delivery_t *dlv)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    jn_core_link_t *in = dlv->link;
    if (dlv->presettled || dlv->ct.sender_settled || dlv->ct.router_settled)
        return;
    if (in->ct.unsettled_in > 0)
        in->ct.unsettled_in--;
    /* held 1 s or more (router deliveriesDelayed1Sec/10Sec): the batch's
     * clock, no clock read here; composed deliveries (arrived_ns 0) are
     * not measured */
    jn_core_t *core = in->conn->core;
    uint64_t now = core->ct.batch_ns;
    if (JN_UNLIKELY(now > dlv->arrived_ns + 1000000000u) && dlv->arrived_ns != 0) {
        bool ten = now > dlv->arrived_ns + 10000000000u;
        jn_stat_add(ten ? &core->stats.delayed10 : &core->stats.delayed1, 1);
        ++*(ten ? &in->ct.delayed10 : &in->ct.delayed1); /* the link's */
    }
}

/* Settle an incoming delivery toward its sender with outcome type, sent as
 * d when given (else as the bare type; modified with delivery-failed;
 * JN_DISP_NONE: the outcome it already has, settled), unless it is settled
 * already; its link gone, only the bookkeeping. Returns true when this
 * settled it. */
static bool settle_incoming_with_CT(jn_delivery_t *dlv, uint64_t type, const jn_disposition_t *d)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    if (dlv->presettled || dlv->ct.sender_settled || dlv->ct.router_settled)
        return false;
    incoming_settling_CT(dlv);
    count_link_outcome_CT(dlv->link, type);
    dlv->ct.router_settled = true;
    if (dlv->link->ct.state == JN_LINK_ST_DETACHED)
        return true;
    jn_disposition_t failed = {.type = JN_DISP_MODIFIED, .delivery_failed = true};
    if (!d && type == JN_DISP_MODIFIED)
        d = &failed;
    jn_work_dlv_CT(dlv, JN_WORK_DELIVERY_UPDATE, type, d, true);
    return true;
}

static bool settle_incoming_CT(jn_delivery_t *dlv, uint64_t type)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    return settle_incoming_with_CT(dlv, type, NULL);
}

void jn_forward_reject_CT(jn_delivery_t *dlv, const char *condition, const char *description)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    jn_disposition_t d = {.type = JN_DISP_REJECTED,
                          .condition = (char *)condition,
                          .description = (char *)description};
    if (settle_incoming_with_CT(dlv, JN_DISP_REJECTED, &d))
        jn_stat_add(&jn_delivery_core(dlv)->stats.rejected, 1);
}

/* Refuse an anonymous-relay delivery whose address is configured
 * unavailable: rejected with amqp:not-found, as a link attach to that
 * address is refused (link.c), and as qdrouterd 1.19 answers. */
static void refuse_unavailable_CT(jn_core_t *core, jn_delivery_t *dlv)
{
    JN_ASSERT_CT(core);
    jn_disposition_t d = {.type = JN_DISP_REJECTED,
                          .condition = (char *)"amqp:not-found",
                          .description =
                              (char *)"Deliveries cannot be sent to an unavailable address"};
    if (settle_incoming_with_CT(dlv, JN_DISP_REJECTED, &d))
        jn_stat_add(&core->stats.rejected, 1);
}

/* Multicast outcome ranks: the strongest wins (10.3). */
enum { JN_MC_NONE = 0, JN_MC_RELEASED, JN_MC_MODIFIED, JN_MC_ACCEPTED, JN_MC_REJECTED };

static uint8_t mc_rank(uint64_t type)
{
    return type == JN_DISP_REJECTED   ? JN_MC_REJECTED
           : type == JN_DISP_ACCEPTED ? JN_MC_ACCEPTED
           : type == JN_DISP_MODIFIED ? JN_MC_MODIFIED
           : type == JN_DISP_RELEASED ? JN_MC_RELEASED
                                      : JN_MC_NONE;
}

static void mc_merge_CT(jn_delivery_t *peer, uint64_t type)
{
    JN_ASSERT_CT(jn_delivery_core(peer));
    uint8_t r = mc_rank(type);
    if (r > peer->ct.mc_outcome)
        peer->ct.mc_outcome = r;
}

static const uint64_t mc_types[] = {JN_DISP_ACCEPTED, JN_DISP_RELEASED, JN_DISP_MODIFIED,
                                    JN_DISP_ACCEPTED, JN_DISP_REJECTED};

/* An unsettled multicast delivery whose copies are all handed out and all
 * settled: settle it with their strongest outcome. */
static void mc_check_CT(jn_delivery_t *dlv)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    if (!dlv->ct.multicast || !dlv->ct.credit_returned || dlv->ct.mc_unsettled > 0 ||
        dlv->ct.handed == 0)
        return;
    settle_incoming_CT(dlv, mc_types[dlv->ct.mc_outcome]);
}

/* An unsettled multicast delivery whose copies are all handed out and have
 * all given an outcome, some without settling (consumers that wait for the
 * sender to settle first): their strongest outcome goes to the sender
 * unsettled, once, as 1.19 sums them up; the sender's settlement then
 * settles the copies (sender_update_CT), or the last copy's settles it. */
static void mc_tell_CT(jn_delivery_t *dlv)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    if (!dlv->ct.multicast || !dlv->ct.credit_returned || dlv->ct.mc_waiting > 0 ||
        dlv->ct.mc_unsettled == 0 || dlv->ct.handed == 0 || dlv->ct.mc_told || dlv->presettled ||
        dlv->ct.sender_settled || dlv->ct.router_settled ||
        dlv->link->ct.state == JN_LINK_ST_DETACHED)
        return;
    dlv->ct.mc_told = true;
    uint64_t type = mc_types[dlv->ct.mc_outcome];
    jn_disposition_t failed = {.type = JN_DISP_MODIFIED, .delivery_failed = true};
    jn_work_dlv_CT(dlv, JN_WORK_DELIVERY_UPDATE, type, type == JN_DISP_MODIFIED ? &failed : NULL,
                   false);
}

/* A multicast copy's outcome is in (merged by the caller): one less its
 * peer waits for. */
static void mc_outcome_in_CT(jn_delivery_t *copy)
{
    JN_ASSERT_CT(jn_delivery_core(copy));
    jn_delivery_t *peer = copy->ct.peer;
    if (copy->ct.mc_outcome_in || !peer)
        return;
    copy->ct.mc_outcome_in = true;
    if (peer->ct.mc_waiting > 0)
        peer->ct.mc_waiting--;
}

/* Every copy of dlv is handed out or dropped: return its credit, tell the
 * message how many copies it has, settle it if the router decides. */
static void all_handed_CT(jn_core_t *core, jn_delivery_t *dlv)
{
    JN_ASSERT_CT(core);
    if (dlv->ct.credit_returned)
        return;
    dlv->ct.credit_returned = true;
    /* no copy of it will start any more: a streaming message can be
     * released from behind as its copies progress (junction/message.h) */
    jn_core_link_t *in = dlv->link;
    /* (a message the router composed may be sent in several deliveries,
     * e.g. one HELLO to every neighbour: it keeps its buffers until freed) */
    if (!in->conn->internal)
        jn_message_stream_set_copies(dlv->message, dlv->ct.handed);
    if (in->ct.held > 0)
        in->ct.held--;
    jn_link_mark_dirty_CT(in);
    if (dlv->ct.handed == 0 && !dlv->ct.served) {
        /* a pre-settled one that no consumer took is dropped, counted in
         * droppedPresettledDeliveries as 1.19 counts it (a multicast one's
         * dropped copies are counted one by one, mc_drop_CT) */
        if (!in->conn->internal && !dlv->ct.router_settled) {
            if (!dlv->presettled)
                jn_stat_add(&core->stats.released, 1);
            else if (!dlv->ct.multicast)
                jn_stat_add(&core->stats.dropped, 1);
        }
        settle_incoming_CT(dlv, JN_DISP_RELEASED);

    } else if (dlv->ct.served) {
        settle_incoming_CT(dlv, JN_DISP_ACCEPTED);
    } else if (dlv->ct.multicast) {
        mc_check_CT(dlv); /* or when the last copy settles */
        mc_tell_CT(dlv);
    }
}

/* Mark a copy settled on the consumer's side (keeps the link's count). */
static void copy_settle_CT(jn_delivery_t *copy)
{
    JN_ASSERT_CT(jn_delivery_core(copy));
    if (copy->ct.settled)
        return;
    copy->ct.settled = true;
    if (!copy->ct.handed_out || copy->presettled)
        return;
    jn_core_link_t *link = copy->link;
    /* below its unsettled bound again: pumped at the end of the batch (not
     * here, this runs inside loops over the link's copies; link.c) */
    if (JN_UNLIKELY(link->ct.unsettled-- >= link->ct.unsettled_max) &&
        (link->ct.undelivered.head || link->ct.routed))
        jn_link_mark_resume_CT(link);
    jn_delivery_t *peer = copy->ct.peer;
    if (peer && peer->ct.multicast && peer->ct.mc_unsettled > 0) {
        mc_outcome_in_CT(copy);
        peer->ct.mc_unsettled--;
        mc_check_CT(peer);
    }
}

/* Finish a copy: off its link and its incoming delivery, core reference
 * dropped. The incoming delivery may be done afterwards. */
static void finish_copy_CT(jn_delivery_t *copy)
{
    JN_ASSERT_CT(jn_delivery_core(copy));
    jn_core_link_t *link = copy->link;
    copy_settle_CT(copy);
    if (copy->ct.list == JN_DLV_ON_UNDELIVERED)
        jn_dlv_list_remove_CT(&link->ct.undelivered, copy);
    else if (copy->ct.list == JN_DLV_ON_INFLIGHT)
        jn_dlv_list_remove_CT(&link->ct.inflight, copy);
    copy->ct.list = JN_DLV_ON_NONE;
    jn_delivery_t *peer = copy->ct.peer;
    if (copy->ct.copy_prev)
        copy->ct.copy_prev->ct.copy_next = copy->ct.copy_next;
    else
        peer->ct.copies = copy->ct.copy_next;
    if (copy->ct.copy_next)
        copy->ct.copy_next->ct.copy_prev = copy->ct.copy_prev;
    copy->ct.peer = copy->ct.copy_prev = copy->ct.copy_next = NULL;
    jn_delivery_unref(copy);
    check_done_CT(peer);
    jn_delivery_unref(peer); /* the copy's reference */
}

/* Queue a copy on its link and hand out what the credit allows. */
static void enqueue_CT(jn_delivery_t *copy)
{
    JN_ASSERT_CT(jn_delivery_core(copy));
    jn_dlv_list_append_CT(&copy->link->ct.undelivered, copy);
    copy->ct.list = JN_DLV_ON_UNDELIVERED;
    jn_link_pump_CT(copy->link);
}

/* One vote for peer in c's affinity window; true when the vote closed the
 * window (c->ct.aff.peer then holds its result). Boyer-Moore majority: the
 * surplus left at the end is at least (2f - 1) x window for a candidate
 * behind a fraction f of the votes, so surplus >= window / 2 means f >= 3/4
 * (and no other connection can have that). */
static bool affinity_vote_CT(jn_core_conn_t *c, uint64_t peer)
{
    JN_ASSERT_CT(c->core);
    if (c->ct.aff.cand == peer) {
        c->ct.aff.votes++;
    } else if (c->ct.aff.votes == 0) {
        c->ct.aff.cand = peer;
        c->ct.aff.votes = 1;
    } else {
        c->ct.aff.votes--;
    }
    if (++c->ct.aff.n < JN_CORE_AFFINITY_WINDOW)
        return false;
    c->ct.aff.peer = c->ct.aff.votes * 2 >= c->ct.aff.n ? c->ct.aff.cand : 0;
    c->ct.aff.n = 0;
    c->ct.aff.votes = 0;
    return true;
}

/* A copy from connection in to connection out is handed out: count it in
 * both affinities, and when they name each other, tell the I/O layer
 * (jn_core_io_ops_t.colocate): a single producer-consumer flow (or a
 * request-reply pair) then runs on one thread instead of crossing between
 * two for every delivery and outcome. Fan-in and fan-out split a hub's
 * votes, so their hub names no one and nothing moves. */
static inline void affinity_CT(jn_core_t *core, jn_core_conn_t *in, jn_core_conn_t *out)
{
    JN_ASSERT_CT(core);
    /* a closed connection's io_conn is released (and may be freed): its
     * copies still handed out later must not name it */
    if (in == out || in->internal || out->internal || in->ct.closed || out->ct.closed ||
        !core->ops.colocate)
        return;
    bool closed = affinity_vote_CT(in, out->conn_id);
    closed |= affinity_vote_CT(out, in->conn_id);
    if (closed && in->ct.aff.peer == out->conn_id && out->ct.aff.peer == in->conn_id)
        core->ops.colocate(in->io_conn, out->io_conn);
}

/* A parked copy leaves its link's parked backlog (handed out, or about to
 * be dropped). A message that grew since it was parked (streaming) counts
 * its length now: the total only errs low. */
static void mc_unpark_CT(jn_delivery_t *copy)
{
    JN_ASSERT_CT(jn_delivery_core(copy));
    jn_core_link_t *link = copy->link;
    uint64_t n = jn_message_length(copy->message);
    copy->ct.parked = false;
    link->ct.mc_parked_octets = link->ct.mc_parked_octets > n ? link->ct.mc_parked_octets - n : 0;
}

static void count_outcome_CT(jn_core_t *core, jn_delivery_t *copy, uint64_t type);

/* An unsettled anycast delivery's copy goes settled to a consumer that
 * asked for settled deliveries (jn_delivery_copy_CT): accepted on the
 * consumer's behalf, which settles the sender's delivery, as 1.19 does.
 * (A multicast one counts as accepted in the merged outcome.) */
static void accept_for_consumer_CT(jn_core_t *core, jn_delivery_t *copy)
{
    JN_ASSERT_CT(core);
    jn_delivery_t *peer = copy->ct.peer;
    count_outcome_CT(core, copy, JN_DISP_ACCEPTED);
    if (peer->ct.sender_settled || peer->ct.router_settled)
        return;
    if (peer->link->ct.state != JN_LINK_ST_DETACHED)
        jn_work_dlv_CT(peer, JN_WORK_DELIVERY_UPDATE, JN_DISP_ACCEPTED, NULL, true);
    incoming_settling_CT(peer);
    peer->ct.router_settled = true;
}

void jn_forward_hand_out_CT(jn_delivery_t *copy)
{
    jn_core_link_t *link = copy->link;
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    jn_delivery_t *peer = copy->ct.peer;
    bool final = message_finished(copy->message); /* before the SEND: see top */
    jn_dlv_list_remove_CT(&link->ct.undelivered, copy);
    jn_dlv_list_append_CT(&link->ct.inflight, copy);
    copy->ct.list = JN_DLV_ON_INFLIGHT;
    copy->ct.handed_out = true;
    link->ct.handed++;
    link->ct.deliveries++;
    link->conn->ct.last_dlv_ns = core->ct.batch_ns;
    if (link->conn->inter_router) { /* to another router: transit, but control */
        if (link->type == JN_LINK_DATA)
            jn_stat_add(&core->stats.transit, 1);
    } else {
        jn_stat_add(&core->stats.egress, 1);
        if (JN_UNLIKELY(link->conn->route_container))
            jn_stat_add(&core->stats.egress_rc, 1);
    }
    jn_work_dlv_CT(copy, JN_WORK_DELIVERY_SEND, JN_DISP_NONE, NULL, false);
    copy->ct.final = final;
    if (copy->presettled) {
        copy->ct.settled = true;
        if (JN_UNLIKELY(!peer->presettled) && !peer->ct.multicast && !peer->ct.served)
            accept_for_consumer_CT(core, copy);
    } else {
        link->ct.unsettled++;
        if (peer->ct.multicast && !copy->ct.parked) {
            peer->ct.mc_unsettled++;
            peer->ct.mc_waiting++;
        }
    }
    if (peer->ct.sender_settled && !copy->ct.settled) {
        /* the sender settled while this copy waited for credit */
        jn_work_dlv_CT(copy, JN_WORK_DELIVERY_UPDATE, JN_DISP_NONE, NULL, true);
        copy_settle_CT(copy);
    }
    affinity_CT(core, peer->link->conn, link->conn);
    if (copy->ct.parked) {
        mc_unpark_CT(copy); /* counted out of peer when it was parked */
    } else {
        peer->ct.handed++;
        if (--peer->ct.pending == 0)
            all_handed_CT(core, peer);
    }
    if (copy->ct.settled && copy->ct.final)
        finish_copy_CT(copy);
}

/* The consumer for an anycast delivery: closest prefers a local consumer,
 * then the cheapest remote router (a local one at its unsettled bound only
 * when no other way is open); balanced takes the least loaded of the
 * best local consumer and the best remote one (load + cost). NULL: none. */
static jn_core_link_t *pick_anycast_CT(jn_core_t *core, jn_addr_t *addr, const jn_route_ctx_t *rc)
{
    JN_ASSERT_CT(core);
    jn_core_link_t *local = addr->n_consumers ? jn_addr_pick_consumer_CT(addr) : NULL;
    if (JN_UNLIKELY(rc->from_edge) && local && local->conn == rc->from_edge)
        local = jn_edge_pick_other_CT(addr, rc->from_edge); /* not back to the edge */
    else if (JN_UNLIKELY(local && local->type == JN_LINK_EDGE_ADDR) && addr->n_consumers > 1 &&
             addr->distribution == JN_DIST_CLOSEST)
        local = jn_edge_pick_other_CT(addr, local->conn); /* closest: this edge first */
    /* closest: a local consumer at its unsettled bound (the pick already
     * skipped it if another local one had room) yields to a remote path */
    if (local && addr->distribution != JN_DIST_BALANCED && JN_LIKELY(!jn_link_full_CT(local)))
        return local;
    uint64_t remote_load = UINT64_MAX;
    jn_core_link_t *remote = jn_router_pick_remote_CT(core, addr, rc, &remote_load);
    if (!local)
        return remote;
    if (addr->distribution != JN_DIST_BALANCED)
        return remote ? remote : local;
    uint64_t local_load = (uint64_t)local->ct.undelivered.count + local->ct.unsettled;
    return remote && remote_load < local_load ? remote : local;
}

/* A message the router composed (a management reply, a control message)
 * has no sender to push back on: toward a link that already has
 * JN_CORE_DEFAULT_CAPACITY copies waiting for credit (a reply-to nobody
 * reads, a peer that grants no credit) it is dropped instead of queued, so
 * a client flooding requests cannot make the router hold their replies
 * without bound. Deliveries from senders are bounded by their credit. */
static bool backlogged_CT(const jn_delivery_t *dlv, const jn_core_link_t *to)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    return dlv->link->conn->internal && to->ct.undelivered.count >= JN_CORE_DEFAULT_CAPACITY;
}

/* One copy of dlv to the consumer anycast picks for addr (or, with none,
 * for addr's fallback). Returns true when a copy was made. */
static bool forward_anycast_CT(jn_delivery_t *dlv, jn_addr_t *addr, const jn_route_ctx_t *rc)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    jn_core_link_t *to = pick_anycast_CT(core, addr, rc);
    jn_addr_t *redirected = NULL; /* the primary, when its fallback takes it */
    if (JN_UNLIKELY(!to && addr->fallback)) {
        /* no destination: the fallback's (enableFallback) */
        jn_addr_t *fb = jn_addr_fallback_CT(core, addr);
        if (fb) {
            redirected = addr;
            addr = fb;
            to = pick_anycast_CT(core, fb, rc);
        }
    }
    if (to && backlogged_CT(dlv, to))
        to = NULL; /* dropped: see backlogged */
    jn_delivery_t *copy = to ? jn_delivery_copy_CT(dlv, to, dlv->presettled) : NULL;
    if (!copy)
        return false; /* pending stays 0: released */
    if (JN_UNLIKELY(redirected != NULL)) {
        jn_stat_add(&core->stats.fallback, 1);
        redirected->redirected++;
    }
    if (to->conn->inter_router)
        addr->transit++;
    else
        addr->egress++;
    dlv->ct.pending++; /* (an exchange may route one delivery several times) */
    enqueue_CT(copy);
    return true;
}

/* Multicast toward a consumer in drop mode whose backlog is full: the copy
 * is not made, only counted (on the link and the router). */
static void mc_drop_CT(jn_core_t *core, jn_core_link_t *to)
{
    JN_ASSERT_CT(core);
    to->ct.mc_dropped++;
    to->ct.mc_episode_dropped++;
    jn_stat_add(&core->stats.dropped, 1);
}

/* A multicast copy that waits for its link's credit stops holding its
 * incoming delivery back: it counts as handed (so the delivery's credit
 * can go back to its sender once the other copies are out) and, unsettled,
 * as one of the copies whose outcome the sender waits for. */
static void mc_park_CT(jn_core_t *core, jn_delivery_t *copy)
{
    JN_ASSERT_CT(core);
    jn_delivery_t *peer = copy->ct.peer;
    copy->ct.parked = true;
    copy->link->ct.mc_parked_octets += jn_message_length(copy->message);
    peer->ct.handed++;
    if (!copy->presettled) {
        peer->ct.mc_unsettled++;
        peer->ct.mc_waiting++;
    }
    if (--peer->ct.pending == 0)
        all_handed_CT(core, peer);
}

/* A parked copy is never sent (its link is going, or its backlog is over
 * JN_CORE_MC_BACKLOG_OCTETS): released in its delivery's merged outcome
 * (see the top), and finished. */
static void mc_discard_parked_CT(jn_delivery_t *copy)
{
    JN_ASSERT_CT(jn_delivery_core(copy));
    jn_delivery_t *peer = copy->ct.peer;
    mc_unpark_CT(copy);
    if (!copy->presettled && peer->ct.mc_unsettled > 0) {
        mc_outcome_in_CT(copy);
        peer->ct.mc_unsettled--;
        mc_merge_CT(peer, JN_DISP_RELEASED);
        mc_check_CT(peer);
        mc_tell_CT(peer);
    }
    finish_copy_CT(copy);
}

/* Keep a stuck link's parked backlog within JN_CORE_MC_BACKLOG_OCTETS:
 * drop its newest parked copies (the oldest go out first when it comes
 * back), counted as dropped. */
static void mc_trim_CT(jn_core_t *core, jn_core_link_t *link)
{
    JN_ASSERT_CT(core);
    jn_delivery_t *prev;
    for (jn_delivery_t *c = link->ct.undelivered.tail;
         c && link->ct.mc_parked_octets > JN_CORE_MC_BACKLOG_OCTETS; c = prev) {
        prev = c->ct.prev;
        if (!c->ct.parked)
            continue;
        mc_drop_CT(core, link);
        mc_discard_parked_CT(c);
    }
}

/* A stuck link's parked copies may be of messages still arriving (counted
 * at their length when parked): count them again, and trim. */
static void mc_recount_CT(jn_core_t *core, jn_core_link_t *link)
{
    JN_ASSERT_CT(core);
    uint64_t octets = 0;
    for (jn_delivery_t *c = link->ct.undelivered.head; c; c = c->ct.next)
        if (c->ct.parked)
            octets += jn_message_length(c->message);
    link->ct.mc_parked_octets = octets;
    mc_trim_CT(core, link);
}

/* The link took no copy for JN_CORE_MC_STUCK_MS while droppable multicast
 * copies waited for it: drop mode. Its waiting droppable copies are parked
 * (their senders get their credit back) and, until it catches up, copies
 * past a full backlog are dropped. False when it had no droppable copy. */
static bool mc_stuck_CT(jn_core_t *core, jn_core_link_t *link)
{
    JN_ASSERT_CT(core);
    uint32_t waiting = link->ct.undelivered.count;
    bool any = false;
    jn_delivery_t *next;
    for (jn_delivery_t *c = link->ct.undelivered.head; c; c = next) {
        next = c->ct.next;
        if (!c->ct.mc_droppable || c->ct.parked)
            continue;
        any = true;
        mc_park_CT(core, c);
    }
    if (!any)
        return false;
    mc_trim_CT(core, link);
    link->ct.mc_dropping = true;
    link->ct.mc_drop_handed = link->ct.handed;
    /* a receiver's link names its address; an inter-router link carries
     * many: named by its link name */
    const jn_addr_t *addr = link->ct.addr;
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_WARNING,
           "[C%" PRIu64 "][L%" PRIu64
           "] Multicast consumer stuck: no copy taken for %d ms with %" PRIu32
           " waiting; copies %s %.*s past a backlog of %" PRIu32 " are dropped until it catches up",
           link->conn->conn_id, link->ct.id, JN_CORE_MC_STUCK_MS, waiting, addr ? "of" : "on link",
           addr ? (int)addr->key_len : (int)strlen(link->name),
           addr ? (const char *)addr->key : link->name, link->capacity);
    return true;
}

void jn_forward_mc_tick_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    int64_t now = (int64_t)jn_time_mono_ms();
    if (now < core->ct.mc_next_check_ms)
        return;
    core->ct.mc_next_check_ms = now + JN_CORE_MC_CHECK_MS;
    bool waiting = false;
    for (jn_core_conn_t *c = core->ct.conns; c; c = c->ct.next) {
        for (jn_core_link_t *l = c->ct.links; l; l = l->ct.conn_next) {
            if (l->dir != JN_LINK_OUTGOING || !l->ct.undelivered.head || c->router_peer) {
                l->ct.mc_idle_checks = 0;
                continue;
            }
            if (l->ct.mc_dropping) {
                waiting = true;
                mc_recount_CT(core, l);
                continue;
            }
            waiting = true;
            if (l->ct.handed != l->ct.mc_check_handed) {
                l->ct.mc_check_handed = l->ct.handed; /* it moves: not stuck */
                l->ct.mc_idle_checks = 0;
                continue;
            }
            if (++l->ct.mc_idle_checks * JN_CORE_MC_CHECK_MS >= JN_CORE_MC_STUCK_MS)
                mc_stuck_CT(core, l);
        }
    }
    atomic_store_explicit(&core->mc_waiting, waiting, memory_order_relaxed);
}

int jn_forward_mc_sleep_ms(jn_core_t *core, int timeout)
{
    /* runs without the core's token (core.c, core_sleep): only the flag */
    if (!atomic_load_explicit(&core->mc_waiting, memory_order_relaxed))
        return timeout;
    return timeout < 0 || JN_CORE_MC_CHECK_MS < timeout ? JN_CORE_MC_CHECK_MS : timeout;
}

void jn_forward_backlog_check_CT(jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    bool attached = link->ct.state == JN_LINK_ST_ATTACHED;
    if (attached && ((uint64_t)link->ct.undelivered.count * 2 > link->capacity ||
                     link->ct.handed == link->ct.mc_drop_handed))
        return; /* still behind, or no copy taken since it was found stuck */
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO,
           "[C%" PRIu64 "][L%" PRIu64 "] Multicast consumer %s: %" PRIu64
           " copies dropped while it was stuck",
           link->conn->conn_id, link->ct.id, attached ? "caught up" : "gone",
           link->ct.mc_episode_dropped);
    link->ct.mc_dropping = false;
    link->ct.mc_episode_dropped = 0;
    link->ct.mc_idle_checks = 0;
}

/* One copy, settled as dlv was sent, to each of links (n of them), and to each of more
 * (n_more; may be NULL). The pending count covers all of them before the
 * first is handed out: until every copy exists, the set of copies is not
 * final (all_handed_CT). addr: a multicast address without backpressure
 * (its consumers' copies may be parked and dropped, see the top), else
 * NULL. */
static void copy_to_links_CT(jn_delivery_t *dlv, jn_core_link_t **links, unsigned n,
                             jn_core_link_t **more, unsigned n_more, const jn_addr_t *addr,
                             const jn_core_conn_t *skip)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    dlv->ct.pending += n + n_more;
    for (unsigned i = 0; i < n + n_more; i++) {
        jn_core_link_t *to = i < n ? links[i] : more[i - n];
        if (JN_UNLIKELY(skip != NULL) && to->conn == skip) {
            dlv->ct.pending--; /* the edge it came from has its own copies */
            continue;
        }
        if (addr && to->ct.mc_dropping &&
            (to->ct.undelivered.count >= to->capacity ||
             to->ct.mc_parked_octets >= JN_CORE_MC_BACKLOG_OCTETS)) {
            mc_drop_CT(core, to);
            dlv->ct.pending--;
            continue;
        }
        jn_delivery_t *copy =
            backlogged_CT(dlv, to) ? NULL : jn_delivery_copy_CT(dlv, to, dlv->presettled);
        if (!copy) {
            dlv->ct.pending--;
            continue;
        }
        enqueue_CT(copy);
        /* a copy handed out may be finished (freed) already: only its
         * address is compared; one not handed out is the backlog's tail */
        if (addr && to->ct.undelivered.tail == copy && !to->conn->router_peer) {
            /* no credit for it now (the uncommon case); never toward a
             * router (inter-router or edge): not a consumer, it paces the
             * senders (see the top) */
            copy->ct.mc_droppable = true;
            if (to->ct.mc_dropping)
                mc_park_CT(core, copy);
            else if (!atomic_load_explicit(&core->mc_waiting, memory_order_relaxed))
                jn_core_watch_mc_CT(core); /* jn_forward_mc_tick_CT watches it */
        }
    }
}

static void forward_multicast_CT(jn_delivery_t *dlv, jn_addr_t *addr, const jn_route_ctx_t *rc)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    dlv->ct.multicast = true;
    jn_core_link_t *remote[JN_MESH_MAX_LINKS];
    unsigned n = addr->n_remote > 0
                     ? jn_router_multicast_links_CT(core, addr, rc, remote, JN_MESH_MAX_LINKS)
                     : 0;
    if (JN_UNLIKELY(core->edge_mode) && !rc->from_edge &&
        !(addr->edge_out && addr->edge_out->ct.addr == addr) &&
        (dlv->link->ct.anonymous || !addr->edge_reported)) {
        /* an edge router: one copy up the anonymous uplink sender for the
         * consumers beyond this edge when the address's own uplink sender
         * (bound while the interior reports some) does not take one: from
         * an anonymous sender (the interior reports only on addresses the
         * edge has senders for), or before the interior's first report */
        jn_core_link_t *up = core->ct.uplink_out;
        if (up && up->ct.state == JN_LINK_ST_ATTACHED && n < JN_MESH_MAX_LINKS)
            remote[n++] = up;
    }
    if (JN_UNLIKELY(addr->fallback) && addr->n_consumers == 0 && n == 0) {
        /* no consumer here nor on any router it may go to: the fallback's
         * destination (enableFallback), one copy as for anycast, as 1.19
         * does (its fallback address is balanced); the outcome is that
         * copy's */
        jn_addr_t *fb = jn_addr_fallback_CT(core, addr);
        if (fb && jn_addr_has_destination(fb)) {
            dlv->ct.multicast = false;
            if (forward_anycast_CT(dlv, fb, rc)) {
                jn_stat_add(&core->stats.fallback, 1);
                addr->redirected++;
            }
            return;
        }
    }
    addr->egress += addr->n_consumers;
    addr->transit += n;
    copy_to_links_CT(dlv, addr->consumers, addr->n_consumers, remote, n,
                     addr->mc_backpressure ? NULL : addr, rc->from_edge);
}

static void route_CT(jn_delivery_t *dlv, jn_addr_t *addr, const jn_route_ctx_t *rc)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    if (!addr)
        return;
    /* the class its copies' residence time is counted under (/metrics) */
    switch (addr->key_len ? addr->key[0] : 0) {
    case JN_ADDR_CLASS_MOBILE:
        dlv->ct.res_class = JN_RES_CLASS_MOBILE;
        break;
    case JN_ADDR_CLASS_LOCAL:
        dlv->ct.res_class = JN_RES_CLASS_LOCAL;
        break;
    case JN_ADDR_CLASS_ROUTER:
    case JN_ADDR_CLASS_TOPOLOGICAL:
    case JN_ADDR_CLASS_AREA:
        dlv->ct.res_class = JN_RES_CLASS_ROUTER;
        break;
    default:
        dlv->ct.res_class = JN_RES_CLASS_OTHER;
        break;
    }
    if (addr->distribution == JN_DIST_MULTICAST)
        forward_multicast_CT(dlv, addr, rc);
    else
        forward_anycast_CT(dlv, addr, rc);
}

void jn_forward_route_CT(jn_delivery_t *dlv, jn_addr_t *addr, const jn_route_ctx_t *rc)
{
    route_CT(dlv, addr, rc);
}

void jn_forward_copies_CT(jn_delivery_t *dlv, jn_core_link_t **links, unsigned n)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    copy_to_links_CT(dlv, links, n, NULL, 0, NULL, NULL);
}

/* The address an incoming delivery goes to (NULL: none). */
static jn_addr_t *addr_of_CT(jn_core_t *core, jn_delivery_t *dlv)
{
    JN_ASSERT_CT(core);
    const jn_core_link_t *in = dlv->link;
    if (in->ct.state != JN_LINK_ST_ATTACHED)
        return NULL;
    if (!in->ct.anonymous)
        return in->ct.addr;
    bool honour = in->conn->inter_router || (!in->conn->internal && !in->conn->strip_inbound);
    if (JN_UNLIKELY(in->conn->tenant != NULL)) /* in its tenant space (tenant.c) */
        return jn_tenant_addr_for_delivery_CT(core, dlv, honour);
    return jn_addr_for_message_CT(core, dlv->message, honour);
}

void jn_forward_to_links_CT(jn_delivery_t *dlv, jn_core_link_t **links, unsigned n, bool multicast)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    dlv->ct.multicast = multicast;
    copy_to_links_CT(dlv, links, n, NULL, 0, NULL, NULL);
    dlv->ct.routed = true;
    if (dlv->ct.pending == 0)
        all_handed_CT(core, dlv);
    check_done_CT(dlv);
}

void jn_forward_composed_CT(jn_delivery_t *dlv)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    jn_route_ctx_t rc;
    jn_router_route_ctx_CT(core, dlv, &rc);
    jn_addr_t *addr = addr_of_CT(core, dlv);
    if (addr && !addr->inproc) {
        addr->from_container++;
        route_CT(dlv, addr, &rc);
    }
    dlv->ct.routed = true;
    if (dlv->ct.pending == 0)
        all_handed_CT(core, dlv);
    check_done_CT(dlv);
}

void jn_forward_arrived_CT(jn_delivery_t *dlv)
{
    jn_core_link_t *in = dlv->link;
    jn_core_t *core = in->conn->core;
    JN_ASSERT_CT(core);
    if (!in->conn->inter_router) { /* from another router: its transit */
        jn_stat_add(&core->stats.ingress, 1);
        if (JN_UNLIKELY(in->conn->route_container))
            jn_stat_add(&core->stats.ingress_rc, 1);
    }
    if (dlv->presettled)
        jn_stat_add(&core->stats.presettled, 1);
    in->ct.deliveries++;
    in->conn->ct.last_dlv_ns = core->ct.batch_ns;
    if (!dlv->presettled)
        in->ct.unsettled_in++;
    if (in->ct.outstanding > 0)
        in->ct.outstanding--;
    in->ct.held++;
    if ((uint64_t)in->ct.outstanding * 2 <= in->capacity)
        jn_link_mark_dirty_CT(in); /* credit is batched at half (link.c) */
    if (in->type == JN_LINK_CONTROL && in->ct.state == JN_LINK_ST_ATTACHED) {
        jn_router_control_arrived_CT(dlv);
        return;
    }
    if (JN_UNLIKELY((unsigned)in->type - JN_LINK_EDGE_TRACKING <= 3u)) {
        /* served here: an interior's heartbeat and lookup links from an
         * edge, an edge router's tracking and reply links (JN_LINK_EDGE_
         * TRACKING, _HEARTBEAT, _LOOKUP, _REPLY are adjacent: one test) */
        jn_edge_served_arrived_CT(dlv);
        return;
    }
    if (JN_UNLIKELY(in->ct.routed != NULL) && in->ct.state == JN_LINK_ST_ATTACHED) {
        /* link-routed: to the link at the other end of the route, as is */
        jn_forward_to_links_CT(dlv, &in->ct.routed, 1, false);
        return;
    }
    jn_addr_t *addr = addr_of_CT(core, dlv);
    if (addr && !in->conn->inter_router)
        addr->ingress++; /* it enters the mesh here */
    if (JN_UNLIKELY(!addr) && in->ct.anonymous && in->ct.state == JN_LINK_ST_ATTACHED &&
        jn_addr_unavailable_for_delivery_CT(core, dlv))
        refuse_unavailable_CT(core, dlv); /* then no route: its credit comes back below */
    if (addr && addr->inproc == JN_INPROC_MANAGEMENT) {
        addr->to_container++;
        jn_router_management_arrived_CT(dlv);
        return;
    }
    jn_route_ctx_t rc;
    jn_router_route_ctx_CT(core, dlv, &rc);
    if (JN_UNLIKELY(core->edge_mode) && (!addr || !jn_addr_has_destination(addr)) &&
        !rc.from_edge && core->ct.edge_addr && core->ct.uplink_out)
        addr = core->ct.edge_addr; /* an edge router: no destination here, up */
    /* a delivery that went round more routers than the mesh is wide is
     * looping (docs/protocol.md, "Link state and routes": radius): released */
    if (!rc.looped && !(core->mesh && rc.trace_count > jn_mesh_radius_CT(core->mesh) + 1)) {
        if (JN_UNLIKELY(addr && addr->inproc == JN_INPROC_EXCHANGE))
            jn_exchange_forward_CT(dlv, addr, &rc); /* bound to an exchange */
        else
            route_CT(dlv, addr, &rc);
    }
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_TRACE,
           "[C%" PRIu64 "][L%" PRIu64 "] Delivery routed: fanout=%" PRIu32 "%s", in->conn->conn_id,
           in->ct.id, dlv->ct.pending, dlv->presettled ? " (pre-settled)" : "");
    dlv->ct.routed = true;
    if (dlv->ct.pending == 0)
        all_handed_CT(core, dlv); /* no consumer (or no memory): released */
    check_done_CT(dlv);
}

void jn_forward_continued_CT(jn_delivery_t *dlv)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    /* Clear the flag, then read the progress: octets published or a
     * completion after this post a new continue. */
    atomic_exchange_explicit(&dlv->continue_posted, false, memory_order_acq_rel);
    if (dlv->ct.wait != JN_DLV_WAIT_NONE) {
        jn_router_continued_CT(dlv); /* served in-process once complete */
        return;
    }
    bool final = message_finished(dlv->message);
    if (dlv->ct.continue_batch == core->ct.batch)
        return; /* this batch's CONTINUE round is done (see delivery.c) */
    dlv->ct.continue_batch = core->ct.batch;
    jn_delivery_t *next;
    for (jn_delivery_t *c = dlv->ct.copies; c; c = next) {
        next = c->ct.copy_next;
        if (!c->ct.handed_out || c->ct.final)
            continue;
        jn_work_dlv_CT(c, JN_WORK_DELIVERY_CONTINUE, JN_DISP_NONE, NULL, false);
        /* each round of a large message's octets is handed over like a
         * delivery: a flow of such messages (a few a window) is placed
         * by them */
        affinity_CT(core, dlv->link->conn, c->link->conn);
        c->ct.final = final;
        if (c->ct.settled && c->ct.final)
            finish_copy_CT(c);
    }
}

static void count_outcome_CT(jn_core_t *core, jn_delivery_t *copy, uint64_t type)
{
    JN_ASSERT_CT(core);
    if (copy->ct.outcome_counted)
        return;
    atomic_uint_least64_t *s = type == JN_DISP_ACCEPTED   ? &core->stats.accepted
                               : type == JN_DISP_REJECTED ? &core->stats.rejected
                               : type == JN_DISP_MODIFIED ? &core->stats.modified
                               : type == JN_DISP_RELEASED ? &core->stats.released
                                                          : NULL;
    if (!s)
        return;
    copy->ct.outcome_counted = true;
    jn_stat_add(s, 1);
    count_link_outcome_CT(copy->link, type);
    if (copy->ct.peer && !copy->ct.peer->ct.multicast)
        count_link_outcome_CT(copy->ct.peer->link, type); /* the sender's outcome */
}

static inline bool is_terminal(uint64_t type)
{
    return type == JN_DISP_ACCEPTED || type == JN_DISP_REJECTED || type == JN_DISP_RELEASED ||
           type == JN_DISP_MODIFIED;
}

/* Settle a copy toward its consumer (its sender settled, or is gone), and
 * finish it when nothing more will be sent. */
static void settle_copy_CT(jn_delivery_t *copy)
{
    JN_ASSERT_CT(jn_delivery_core(copy));
    if (copy->ct.settled)
        return;
    jn_work_dlv_CT(copy, JN_WORK_DELIVERY_UPDATE, JN_DISP_NONE, NULL, true);
    copy_settle_CT(copy);
    if (copy->ct.final)
        finish_copy_CT(copy);
}

/* The sender changed its delivery: only its settlement matters. */
static void sender_update_CT(jn_delivery_t *dlv, bool settled)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    if (!settled || dlv->ct.sender_settled)
        return;
    incoming_settling_CT(dlv);
    dlv->ct.sender_settled = true;
    jn_delivery_t *next;
    for (jn_delivery_t *c = dlv->ct.copies; c; c = next) {
        next = c->ct.copy_next;
        if (c->ct.handed_out)
            settle_copy_CT(c); /* undelivered ones are settled when handed out */
    }
}

void jn_forward_update_CT(jn_delivery_t *dlv, const jn_disposition_t *disp, bool settled)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    if (!dlv->outgoing) {
        sender_update_CT(dlv, settled);
        return;
    }
    jn_delivery_t *peer = dlv->ct.peer;
    if (!peer || dlv->presettled || dlv->ct.settled)
        return; /* finished, pre-settled, or settled by the sender already */
    if (peer->ct.multicast) {
        /* merged into the sender's outcome once every copy settled */
        if (disp->type != JN_DISP_NONE)
            count_outcome_CT(core, dlv, disp->type);
        if (!settled && !is_terminal(disp->type))
            return;
        if (!dlv->ct.mc_outcome_in)
            mc_merge_CT(peer, disp->type != JN_DISP_NONE ? disp->type : JN_DISP_ACCEPTED);
        mc_outcome_in_CT(dlv);
        if (!settled) {
            mc_tell_CT(peer); /* settled by the sender, or when the copies settle */
            return;
        }
        copy_settle_CT(dlv);
        if (!dlv->ct.handed_out || dlv->ct.final)
            finish_copy_CT(dlv);
        return;
    }
    jn_disposition_t failed;
    if (JN_UNLIKELY(disp->type == JN_DISP_MODIFIED && !disp->delivery_failed)) {
        /* modified goes back with delivery-failed set, as 1.19 sends it
         * (the consumer's other fields as they came) */
        failed = *disp;
        failed.delivery_failed = true;
        disp = &failed;
    }
    if (disp->type != JN_DISP_NONE || settled) {
        if (disp->type != JN_DISP_NONE)
            count_outcome_CT(core, dlv, disp->type);

        if (!peer->presettled && !peer->ct.sender_settled && !peer->ct.router_settled &&
            peer->link->ct.state != JN_LINK_ST_DETACHED)
            jn_work_dlv_CT(peer, JN_WORK_DELIVERY_UPDATE, JN_DISP_NONE, disp, settled);
        if (settled) {
            incoming_settling_CT(peer);
            peer->ct.router_settled = true;
        }
    }
    if (!settled && is_terminal(disp->type) && peer->link->ct.state == JN_LINK_ST_DETACHED) {
        settle_copy_CT(dlv); /* no sender left to settle it: we do */
        return;
    }
    if (!settled)
        return;
    copy_settle_CT(dlv);
    if (!dlv->ct.handed_out || dlv->ct.final)
        finish_copy_CT(dlv);
}

/* The sender's link is gone: every copy of its deliveries that its consumer
 * gave a terminal outcome without settling (waiting for the sender to
 * settle first, as receivers in rcv-settle-mode second do, or clients that
 * settle only when the sender has) is settled by the router now; copies
 * still without an outcome are settled as soon as they get one
 * (jn_forward_update_CT). Otherwise such deliveries stayed unsettled on
 * the consumer's link for good — after a transit router died, at the
 * egress router. Walks the outgoing links' in-flight lists: only when the
 * link had unsettled deliveries, and a link detach is rare. */
void jn_forward_producer_gone_CT(jn_core_link_t *link)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    if (link->dir != JN_LINK_INCOMING || link->ct.unsettled_in == 0)
        return;
    for (jn_core_conn_t *c = core->ct.conns; c; c = c->ct.next) {
        for (jn_core_link_t *out = c->ct.links; out; out = out->ct.conn_next) {
            if (out->dir != JN_LINK_OUTGOING)
                continue;
            jn_delivery_t *next;
            for (jn_delivery_t *copy = out->ct.inflight.head; copy; copy = next) {
                next = copy->ct.next;
                jn_delivery_t *peer = copy->ct.peer;
                if (peer && peer->link == link && !copy->ct.settled &&
                    copy->ct.outcome_counted && !peer->ct.multicast)
                    settle_copy_CT(copy);
            }
        }
    }
}

void jn_forward_consumer_gone_CT(jn_core_link_t *link, jn_addr_t *addr)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    jn_delivery_t *copy;
    if (link->ct.mc_dropping)
        jn_forward_backlog_check_CT(link); /* the episode ends with the link */
    while ((copy = link->ct.undelivered.head) != NULL) {
        jn_delivery_t *peer = copy->ct.peer;
        if (copy->ct.parked) {
            mc_discard_parked_CT(copy); /* never sent */
            continue;
        }
        (void)addr; /* the link is off its address already: route again */
        jn_addr_t *to = peer->ct.multicast ? NULL : addr_of_CT(core, peer);
        jn_core_link_t *next = NULL;
        if (to) {
            jn_route_ctx_t rc;
            jn_router_route_ctx_CT(core, peer, &rc);
            next = pick_anycast_CT(core, to, &rc);
        }
        if (next && next != link) {
            jn_delivery_t *again = jn_delivery_copy_CT(peer, next, peer->presettled);
            if (again) {
                finish_copy_CT(copy); /* peer keeps the new copy: not done */
                enqueue_CT(again);
                continue;
            }
        }
        if (--peer->ct.pending == 0)
            all_handed_CT(core, peer); /* released, or accepted (multicast) */
        finish_copy_CT(copy);
    }
    while ((copy = link->ct.inflight.head) != NULL) {
        jn_delivery_t *peer = copy->ct.peer;
        if (!copy->ct.settled && peer->ct.multicast && !copy->ct.mc_outcome_in)
            mc_merge_CT(peer, JN_DISP_MODIFIED); /* lost with its consumer */
        if (!copy->ct.settled && !peer->ct.multicast) {
            if (copy->ct.outcome_counted) {
                /* its consumer's outcome reached the sender already (not
                 * settled, waiting for the sender to settle first): settle
                 * with that outcome, never a second, different one */
                settle_incoming_CT(peer, JN_DISP_NONE);
            } else if (settle_incoming_CT(peer, JN_DISP_MODIFIED)) {
                /* handed out: it may have reached its consumer (or one
                 * beyond a lost router, edge or broker) whose outcome is
                 * lost with the link: modified, delivery-failed, never
                 * released (docs/protocol.md, "Forwarding across routers") */
                jn_stat_add(&core->stats.modified, 1);
            }
        }
        finish_copy_CT(copy);
    }
}

/* ---- the router's stuck and blocked figures ------------------------------ */

/* Unsettled deliveries that arrived before old_ns, counted on each link
 * they are on as 1.19 counts them: each copy on list (from its oldest end)
 * unsettled toward its consumer, and its incoming delivery, still
 * unsettled toward its sender, once (by its first copy). Returns both;
 * the copies go to *copies, and each incoming delivery counted adds one to
 * its own link's figure (ct.stuck, set to 0 by the tick first). The first
 * younger copy ends the count: a link's lists are in arrival order, so at
 * most a reordered few are missed. */
static uint64_t count_stuck_CT(const jn_dlv_list_t *list, uint64_t old_ns, uint64_t *copies)
{
    uint64_t n = 0;
    for (const jn_delivery_t *c = list->head; c; c = c->ct.next) {
        const jn_delivery_t *peer = c->ct.peer;
        if (peer->arrived_ns == 0)
            continue; /* composed by the router: not measured */
        if (peer->arrived_ns >= old_ns)
            break;
        if (!c->presettled && !c->ct.settled) {
            n++;
            (*copies)++;
        }
        if (!c->ct.copy_prev && !peer->presettled && !peer->ct.sender_settled &&
            !peer->ct.router_settled) {
            n++;
            if (peer->link->ct.stuck < UINT32_MAX)
                peer->link->ct.stuck++;
        }
    }
    return n;
}

/* 1 when a client's receiver has had no credit for JN_CORE_STUCK_MS (the
 * router's linksBlocked); watched from the tick that first saw it so, and
 * again after each delivery. (1.19 also counts a sender the router gives
 * no credit; counting incoming links here kept an unknown link blocked in
 * 1.19's edge test, system_tests_stuck_deliveries, so it is left for now.) */
static uint64_t link_blocked_CT(jn_core_link_t *l, int64_t now)
{
    JN_ASSERT_CT(l->conn->core);
    bool out = l->dir == JN_LINK_OUTGOING;
    if (!out)
        return 0;
    uint64_t progress = out ? l->ct.handed : l->ct.deliveries;
    bool no_credit = l->type == JN_LINK_ENDPOINT && !l->conn->internal &&
                     l->ct.state == JN_LINK_ST_ATTACHED &&
                     (out ? l->ct.handed >= l->ct.credit_limit : l->ct.outstanding == 0);
    if (!no_credit) {
        l->ct.blocked_since_ms = 0;
    } else if (l->ct.blocked_since_ms == 0 || l->ct.blocked_handed != progress) {
        l->ct.blocked_since_ms = now; /* watched from now */
        l->ct.blocked_handed = progress;
    } else if (now - l->ct.blocked_since_ms >= JN_CORE_STUCK_MS) {
        return 1;
    }
    return 0;
}

void jn_forward_figures_arm_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    if (core->ct.figures_at_ms != 0)
        return;
    core->ct.figures_at_ms = (int64_t)jn_time_mono_ms() + JN_CORE_FIGURES_MS;
    jn_core_timer_at_CT(core, core->ct.figures_at_ms);
}

void jn_forward_figures_tick_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    if (core->ct.figures_at_ms == 0)
        return;
    int64_t now = (int64_t)jn_time_mono_ms();
    if (now < core->ct.figures_at_ms) {
        jn_core_timer_at_CT(core, core->ct.figures_at_ms);
        return;
    }
    uint64_t now_ns = jn_time_mono_ns();
    uint64_t old_ns = now_ns > (uint64_t)JN_CORE_STUCK_MS * 1000000u
                          ? now_ns - (uint64_t)JN_CORE_STUCK_MS * 1000000u
                          : 0;
    uint64_t stuck = 0, blocked = 0;
    for (jn_core_conn_t *c = core->ct.conns; c; c = c->ct.next)
        for (jn_core_link_t *l = c->ct.links; l; l = l->ct.conn_next)
            l->ct.stuck = 0; /* counted again below, incoming links by their copies */
    for (jn_core_conn_t *c = core->ct.conns; c; c = c->ct.next) {
        for (jn_core_link_t *l = c->ct.links; l; l = l->ct.conn_next) {
            blocked += link_blocked_CT(l, now);
            if (l->dir != JN_LINK_OUTGOING)
                continue;
            uint64_t copies = 0;
            stuck += count_stuck_CT(&l->ct.undelivered, old_ns, &copies) +
                     count_stuck_CT(&l->ct.inflight, old_ns, &copies);
            l->ct.stuck = copies > UINT32_MAX ? UINT32_MAX : (uint32_t)copies;
            uint64_t settled = l->ct.deliveries - l->ct.unsettled;
            uint64_t *then = &l->ct.settle_ring[l->ct.settle_pos];
            uint64_t rate = (settled - *then) / JN_CORE_SETTLE_TICKS;
            l->ct.settle_rate = rate > UINT32_MAX ? UINT32_MAX : (uint32_t)rate;
            *then = settled;
            l->ct.settle_pos = (uint8_t)((l->ct.settle_pos + 1) % JN_CORE_SETTLE_TICKS);
        }
    }
    atomic_store_explicit(&core->stats.stuck, stuck, memory_order_relaxed);
    atomic_store_explicit(&core->stats.links_blocked, blocked, memory_order_relaxed);
    /* memory the pools gave back after a burst goes back to the system
     * once they stop shrinking (junction/pool.h); once a second at most */
    jn_pool_trim_heap();
    core->ct.figures_at_ms = now + JN_CORE_FIGURES_MS;
    jn_core_timer_at_CT(core, core->ct.figures_at_ms);
}
