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
 * A stuck multicast consumer's copies are parked or dropped instead of
 * holding their senders back: forward_mc.c (docs/multicast.md). Links
 * going away: forward_gone.c. The router's stuck and blocked figures:
 * forward_figures.c. What these files share: forward_private.h.
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
#include "forward_private.h"

static bool message_finished(const jn_message_t *m)
{
    return jn_message_is_complete(m) || jn_message_is_aborted(m);
}

/* Drop the core's reference on an incoming delivery it has no more use for. */
static inline void check_done_CT(jn_delivery_t *dlv)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    if (dlv->ct.done || !dlv->ct.routed || dlv->ct.pending > 0 || dlv->ct.copies)
        return;
    dlv->ct.done = true;
    jn_dlv_unref(dlv);
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

bool jn_fwd_settle_incoming_CT(jn_delivery_t *dlv, uint64_t type)
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

/* Every copy of dlv is handed out or dropped: return its credit, tell the
 * message how many copies it has, settle it if the router decides. */
void jn_fwd_all_handed_CT(jn_core_t *core, jn_delivery_t *dlv)
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
    if (!in->ct.dirty) /* (mostly it is already: arrivals mark it) */
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
        if (!in->ct.anonymous && in->ct.addr && !in->ct.autolink && !in->conn->internal &&
            !jn_addr_has_destination_or_fallback_CT(core, in->ct.addr))
            in->ct.released_nodest = true; /* its sender is drained (link.c) */
        jn_fwd_settle_incoming_CT(dlv, JN_DISP_RELEASED);

    } else if (dlv->ct.served) {
        jn_fwd_settle_incoming_CT(dlv, JN_DISP_ACCEPTED);
    } else if (dlv->ct.multicast) {
        jn_fwd_mc_check_CT(dlv); /* or when the last copy settles */
        jn_fwd_mc_tell_CT(dlv);
    }
}

/* Mark a copy settled on the consumer's side (keeps the link's count). */
static inline void copy_settle_CT(jn_delivery_t *copy)
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
        jn_fwd_mc_outcome_in_CT(copy);
        peer->ct.mc_unsettled--;
        jn_fwd_mc_check_CT(peer);
    }
}

/* Finish a copy: off its link and its incoming delivery, core reference
 * dropped. The incoming delivery may be done afterwards. */
void jn_fwd_finish_copy_CT(jn_delivery_t *copy)
{
    JN_ASSERT_CT(jn_delivery_core(copy));
    jn_core_link_t *link = copy->link;
    copy_settle_CT(copy);
    if (JN_UNLIKELY(link->ct.stream_copy == copy))
        jn_stream_done_CT(link);
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
    jn_dlv_unref(copy);
    check_done_CT(peer);
    jn_dlv_unref(peer); /* the copy's reference */
}

/* Queue a copy on its link and hand out what the credit allows. */
static void enqueue_CT(jn_delivery_t *copy)
{
    JN_ASSERT_CT(jn_delivery_core(copy));
    jn_dlv_list_append_CT(&copy->link->ct.undelivered, copy);
    copy->ct.list = JN_DLV_ON_UNDELIVERED;
    if (JN_UNLIKELY(copy->link->ct.streaming))
        copy->link->ct.stream_copy = copy; /* its one message (stream.c) */
    jn_link_pump_CT(copy->link);
}

/* One vote for peer in c's affinity window; true when the vote closed the
 * window (c->ct.aff.peer then holds its result). Boyer-Moore majority: the
 * surplus left at the end is at least (2f - 1) x window for a candidate
 * behind a fraction f of the votes, so surplus >= window / 2 means f >= 3/4
 * (and no other connection can have that). */
static inline bool affinity_vote_CT(jn_core_conn_t *c, uint64_t peer)
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

static inline void count_outcome_CT(jn_core_t *core, jn_delivery_t *copy, uint64_t type);

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
    if (JN_UNLIKELY(link->ct.stream_copy == copy) && final)
        jn_stream_done_CT(link);
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
        jn_fwd_mc_unpark_CT(copy); /* counted out of peer when it was parked */
    } else {
        peer->ct.handed++;
        if (--peer->ct.pending == 0)
            jn_fwd_all_handed_CT(core, peer);
    }
    if (copy->ct.settled && copy->ct.final)
        jn_fwd_finish_copy_CT(copy);
}

/* The consumer for an anycast delivery: closest prefers a local consumer,
 * then the cheapest remote router (a local one at its unsettled bound only
 * when no other way is open); balanced takes the least loaded of the
 * best local consumer and the best remote one (load + cost). NULL: none. */
static jn_core_link_t *pick_anycast_CT(jn_core_t *core, jn_addr_t *addr, jn_route_ctx_t *rc)
{
    JN_ASSERT_CT(core);
    /* one local consumer and no router to weigh it against (the usual
     * queue): it, whatever its load, as the general case below finds */
    if (JN_LIKELY(addr->n_consumers == 1 && addr->n_remote == 0 && !rc->from_edge)) {
        addr->next = 0;
        return addr->consumers[0];
    }
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
static bool forward_anycast_CT(jn_delivery_t *dlv, jn_addr_t *addr, jn_route_ctx_t *rc)
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
    jn_core_link_t *via = to;
    if (JN_UNLIKELY(to && to->conn->router_peer) &&
        !(via = jn_stream_route_CT(dlv, to, addr->distribution == JN_DIST_BALANCED))) {
        dlv->ct.pending++; /* its copy waits for a streaming link (stream.c) */
        ++*(to->conn->inter_router ? &addr->transit : &addr->egress);
        return true;
    }
    to = via;
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
            jn_fwd_mc_drop_CT(core, to);
            dlv->ct.pending--;
            continue;
        }
        if (JN_UNLIKELY(to->conn->router_peer) && !(to = jn_stream_route_CT(dlv, to, false)))
            continue; /* its copy waits for a streaming link, pending (stream.c) */
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
                jn_fwd_mc_park_CT(core, copy);
            else if (!atomic_load_explicit(&core->mc_waiting, memory_order_relaxed))
                jn_core_watch_mc_CT(core); /* jn_forward_mc_tick_CT watches it */
        }
    }
}

static void forward_multicast_CT(jn_delivery_t *dlv, jn_addr_t *addr, jn_route_ctx_t *rc)
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

/* The class dlv's copies' residence time is counted under (/metrics): the
 * class of the address it is routed by. */
static const uint8_t res_class_of[256] = {
    [JN_ADDR_CLASS_MOBILE] = JN_RES_CLASS_MOBILE,     [JN_ADDR_CLASS_LOCAL] = JN_RES_CLASS_LOCAL,
    [JN_ADDR_CLASS_ROUTER] = JN_RES_CLASS_ROUTER,     [JN_ADDR_CLASS_TOPOLOGICAL] = JN_RES_CLASS_ROUTER,
    [JN_ADDR_CLASS_AREA] = JN_RES_CLASS_ROUTER, /* any other: JN_RES_CLASS_OTHER (0) */
};

static inline void res_class_CT(jn_delivery_t *dlv, const jn_addr_t *addr)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    dlv->ct.res_class = addr->key_len ? res_class_of[addr->key[0]] : JN_RES_CLASS_OTHER;
}

/* Route dlv to addr by its distribution (NULL: nowhere). */
static void route_CT(jn_delivery_t *dlv, jn_addr_t *addr, jn_route_ctx_t *rc)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    if (!addr)
        return;
    res_class_CT(dlv, addr);
    if (addr->distribution == JN_DIST_MULTICAST)
        forward_multicast_CT(dlv, addr, rc);
    else
        forward_anycast_CT(dlv, addr, rc);
}

void jn_forward_route_CT(jn_delivery_t *dlv, jn_addr_t *addr, jn_route_ctx_t *rc)
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
    jn_core_link_t *in = dlv->link;
    if (in->ct.state != JN_LINK_ST_ATTACHED)
        return NULL;
    if (!in->ct.anonymous)
        return in->ct.addr;
    bool honour = in->conn->inter_router || (!in->conn->internal && !in->conn->strip_inbound);
    if (JN_UNLIKELY(in->conn->tenant != NULL)) /* in its tenant space (tenant.c) */
        return jn_tenant_addr_for_delivery_CT(core, dlv, honour);
    return jn_addr_for_message_memo_CT(core, dlv->message, honour, &in->ct.addr_memo);
}

void jn_forward_to_links_CT(jn_delivery_t *dlv, jn_core_link_t **links, unsigned n, bool multicast)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    dlv->ct.multicast = multicast;
    copy_to_links_CT(dlv, links, n, NULL, 0, NULL, NULL);
    dlv->ct.routed = true;
    if (dlv->ct.pending == 0)
        jn_fwd_all_handed_CT(core, dlv);
    check_done_CT(dlv);
}

void jn_forward_composed_CT(jn_delivery_t *dlv)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    jn_route_ctx_t rc;
    jn_router_route_ctx_CT(core, dlv, &rc, true);
    jn_addr_t *addr = addr_of_CT(core, dlv);
    if (addr && !addr->inproc) {
        addr->from_container++;
        route_CT(dlv, addr, &rc);
    }
    dlv->ct.routed = true;
    if (dlv->ct.pending == 0)
        jn_fwd_all_handed_CT(core, dlv);
    check_done_CT(dlv);
}

/* Classify an incoming delivery, once: first by its link (control, edge
 * served, link-routed), then by its address. */
static inline jn_fwd_kind_t classify_CT(jn_core_t *core, jn_delivery_t *dlv, jn_fwd_route_t *r)
{
    JN_ASSERT_CT(core);
    const jn_core_link_t *in = dlv->link;
    bool attached = in->ct.state == JN_LINK_ST_ATTACHED;
    r->named = r->addr = NULL;
    if (in->type == JN_LINK_CONTROL && attached)
        return JN_FWD_CONTROL;
    /* JN_LINK_EDGE_TRACKING, _HEARTBEAT, _LOOKUP and _REPLY are adjacent */
    if (JN_UNLIKELY((unsigned)in->type - JN_LINK_EDGE_TRACKING <= 3u))
        return JN_FWD_EDGE_SERVED;
    if (JN_UNLIKELY(in->ct.routed != NULL) && attached)
        return JN_FWD_LINK_ROUTED;
    jn_addr_t *addr = r->named = addr_of_CT(core, dlv);
    if (addr && addr->inproc == JN_INPROC_MANAGEMENT)
        return JN_FWD_MANAGEMENT;
    if (JN_UNLIKELY(!addr) && in->ct.anonymous && attached &&
        jn_addr_unavailable_for_delivery_CT(core, dlv))
        return JN_FWD_UNAVAILABLE;
    bool far = addr && (addr->n_remote || addr->inproc == JN_INPROC_EXCHANGE); /* see mesh_route.c */
    jn_router_route_ctx_CT(core, dlv, &r->rc, far);
    if (JN_UNLIKELY(core->edge_mode) &&
        (!addr || !jn_addr_has_destination_or_fallback_CT(core, addr)) && !r->rc.from_edge &&
        core->ct.edge_addr && core->ct.uplink_out)
        addr = core->ct.edge_addr; /* an edge router: no destination here (nor a fallback), up */
    r->addr = addr;
    /* a delivery that went round more routers than the mesh is wide is
     * looping (docs/protocol.md, "Link state and routes": radius) */
    if (!addr || r->rc.looped ||
        (core->mesh && r->rc.trace_count > jn_mesh_radius_CT(core->mesh) + 1))
        return JN_FWD_NO_ROUTE;
    if (JN_UNLIKELY(addr->inproc == JN_INPROC_EXCHANGE))
        return JN_FWD_EXCHANGE;
    return addr->distribution == JN_DIST_MULTICAST ? JN_FWD_MULTICAST : JN_FWD_ANYCAST;
}

/* An arrival's figures: the router's ingress (but another router's
 * transit), its link's and connection's, and its link's credit, given
 * back in batches (link.c). */
static inline void count_arrival_CT(jn_core_t *core, jn_core_link_t *in, const jn_delivery_t *dlv)
{
    JN_ASSERT_CT(core);
    if (!in->conn->inter_router) {
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
}

void jn_forward_arrived_CT(jn_delivery_t *dlv)
{
    jn_core_link_t *in = dlv->link;
    jn_core_t *core = in->conn->core;
    JN_ASSERT_CT(core);
    count_arrival_CT(core, in, dlv);
    jn_fwd_route_t r;
    jn_fwd_kind_t kind = classify_CT(core, dlv, &r);
    if (r.named && !in->conn->inter_router)
        r.named->ingress++; /* it enters the mesh here */
    switch (kind) {
    case JN_FWD_CONTROL:
        jn_router_control_arrived_CT(dlv);
        return;
    case JN_FWD_EDGE_SERVED:
        jn_edge_served_arrived_CT(dlv);
        return;
    case JN_FWD_LINK_ROUTED:
        jn_forward_to_links_CT(dlv, &in->ct.routed, 1, false);
        return;
    case JN_FWD_MANAGEMENT:
        r.named->to_container++;
        jn_router_management_arrived_CT(dlv);
        return;
    case JN_FWD_UNAVAILABLE:
        refuse_unavailable_CT(core, dlv); /* its credit comes back below */
        break;
    case JN_FWD_EXCHANGE:
        jn_exchange_forward_CT(dlv, r.addr, &r.rc);
        break;
    case JN_FWD_MULTICAST:
        res_class_CT(dlv, r.addr);
        forward_multicast_CT(dlv, r.addr, &r.rc);
        break;
    case JN_FWD_ANYCAST:
        res_class_CT(dlv, r.addr);
        forward_anycast_CT(dlv, r.addr, &r.rc);
        break;
    case JN_FWD_NO_ROUTE:
        break;
    }
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_TRACE,
           "[C%" PRIu64 "][L%" PRIu64 "] Delivery routed: fanout=%" PRIu32 "%s", in->conn->conn_id,
           in->ct.id, dlv->ct.pending, dlv->presettled ? " (pre-settled)" : "");
    dlv->ct.routed = true;
    if (dlv->ct.pending == 0)
        jn_fwd_all_handed_CT(core, dlv); /* no consumer (or no memory): released */
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
        if (JN_UNLIKELY(c->link->ct.stream_copy == c) && final)
            jn_stream_done_CT(c->link);
        if (c->ct.settled && c->ct.final)
            jn_fwd_finish_copy_CT(c);
    }
}

static inline void count_outcome_CT(jn_core_t *core, jn_delivery_t *copy, uint64_t type)
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
void jn_fwd_settle_copy_CT(jn_delivery_t *copy)
{
    JN_ASSERT_CT(jn_delivery_core(copy));
    if (copy->ct.settled)
        return;
    jn_work_dlv_CT(copy, JN_WORK_DELIVERY_UPDATE, JN_DISP_NONE, NULL, true);
    copy_settle_CT(copy);
    if (copy->ct.final)
        jn_fwd_finish_copy_CT(copy);
}

/* The sender settled its delivery, or gave it a state (not settling it). */
static void sender_update_CT(jn_delivery_t *dlv, const jn_disposition_t *disp, bool settled)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    if (!settled) { /* a settling one's state is moot */
        jn_delivery_late_state_CT(dlv, disp);
        return;
    }
    if (dlv->ct.sender_settled)
        return;
    incoming_settling_CT(dlv);
    dlv->ct.sender_settled = true;
    jn_delivery_t *next;
    for (jn_delivery_t *c = dlv->ct.copies; c; c = next) {
        next = c->ct.copy_next;
        if (c->ct.handed_out)
            jn_fwd_settle_copy_CT(c); /* undelivered ones are settled when handed out */
    }
}

void jn_forward_update_CT(jn_delivery_t *dlv, const jn_disposition_t *disp, bool settled)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    if (!dlv->outgoing) {
        sender_update_CT(dlv, disp, settled);
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
            jn_fwd_mc_merge_CT(peer, disp->type != JN_DISP_NONE ? disp->type : JN_DISP_ACCEPTED);
        jn_fwd_mc_outcome_in_CT(dlv);
        if (!settled) {
            jn_fwd_mc_tell_CT(peer); /* settled by the sender, or when the copies settle */
            return;
        }
        copy_settle_CT(dlv);
        if (!dlv->ct.handed_out || dlv->ct.final)
            jn_fwd_finish_copy_CT(dlv);
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
        jn_fwd_settle_copy_CT(dlv); /* no sender left to settle it: we do */
        return;
    }
    if (!settled)
        return;
    copy_settle_CT(dlv);
    if (!dlv->ct.handed_out || dlv->ct.final)
        jn_fwd_finish_copy_CT(dlv);
}

/* ---- for the other forwarding files (forward_private.h) ------------------ */

/* (addr_of_CT, pick_anycast_CT and enqueue_CT stay static so that the
 * per-message path inlines them; links going away call them through
 * these.) */
jn_addr_t *jn_fwd_addr_of_CT(jn_core_t *core, jn_delivery_t *dlv)
{
    JN_ASSERT_CT(core);
    return addr_of_CT(core, dlv);
}

jn_core_link_t *jn_fwd_pick_anycast_CT(jn_core_t *core, jn_addr_t *addr, jn_route_ctx_t *rc)
{
    JN_ASSERT_CT(core);
    return pick_anycast_CT(core, addr, rc);
}

void jn_fwd_enqueue_CT(jn_delivery_t *copy)
{
    JN_ASSERT_CT(jn_delivery_core(copy));
    enqueue_CT(copy);
}

void jn_fwd_deferred_copy_CT(jn_delivery_t *dlv, jn_core_link_t *to)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    jn_delivery_t *copy = to ? jn_delivery_copy_CT(dlv, to, dlv->presettled) : NULL;
    if (copy)
        enqueue_CT(copy);
    else if (--dlv->ct.pending == 0 && dlv->ct.routed)
        jn_fwd_all_handed_CT(core, dlv);
    check_done_CT(dlv);
}
