/*
 * forward_gone.c — forwarding when a link goes away (core thread only).
 * A producer's link gone: copies whose consumers wait for the sender to
 * settle are settled by the router. A consumer's link gone: its copies not
 * handed out go to another consumer (anycast) or back to their senders
 * released; those handed out and unsettled are modified (delivery-failed)
 * toward their senders, since they may have been delivered (forward.c,
 * "Settlement").
 */
#include "forward_private.h"

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
                    jn_fwd_settle_copy_CT(copy);
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
            jn_fwd_mc_discard_parked_CT(copy); /* never sent */
            continue;
        }
        (void)addr; /* the link is off its address already: route again */
        jn_addr_t *to = peer->ct.multicast ? NULL : jn_fwd_addr_of_CT(core, peer);
        jn_core_link_t *next = NULL;
        if (to) {
            jn_route_ctx_t rc;
            jn_router_route_ctx_CT(core, peer, &rc, true);
            next = jn_fwd_pick_anycast_CT(core, to, &rc);
        }
        if (next && next != link) {
            jn_delivery_t *again = jn_delivery_copy_CT(peer, next, peer->presettled);
            if (again) {
                jn_fwd_finish_copy_CT(copy); /* peer keeps the new copy: not done */
                jn_fwd_enqueue_CT(again);
                continue;
            }
        }
        if (--peer->ct.pending == 0)
            jn_fwd_all_handed_CT(core, peer); /* released, or accepted (multicast) */
        jn_fwd_finish_copy_CT(copy);
    }
    while ((copy = link->ct.inflight.head) != NULL) {
        jn_delivery_t *peer = copy->ct.peer;
        if (!copy->ct.settled && peer->ct.multicast && !copy->ct.mc_outcome_in)
            jn_fwd_mc_merge_CT(peer, JN_DISP_MODIFIED); /* lost with its consumer */
        if (!copy->ct.settled && !peer->ct.multicast) {
            if (copy->ct.outcome_counted) {
                /* its consumer's outcome reached the sender already (not
                 * settled, waiting for the sender to settle first): settle
                 * with that outcome, never a second, different one */
                jn_fwd_settle_incoming_CT(peer, JN_DISP_NONE);
            } else if (jn_fwd_settle_incoming_CT(peer, JN_DISP_MODIFIED)) {
                /* handed out: it may have reached its consumer (or one
                 * beyond a lost router, edge or broker) whose outcome is
                 * lost with the link: modified, delivery-failed, never
                 * released (docs/protocol.md, "Forwarding across routers") */
                jn_stat_add(&core->stats.modified, 1);
            }
        }
        jn_fwd_finish_copy_CT(copy);
    }
}
