/*
 * forward_figures.c — the router's stuck and blocked figures (core thread
 * only): once a second while armed (jn_forward_figures_arm_CT, from the
 * first connection), the core's timer counts the deliveries unsettled for
 * JN_CORE_STUCK_MS (router deliveriesStuck, link deliveriesStuck), the
 * client links without credit for as long (linksBlocked: dropped at once
 * when credit comes, jn_forward_credit_given_CT), and each
 * link's settle rate; and gives the pools' spare memory back.
 */
#include "forward_private.h"

#include <junction/pool.h>
#include <junction/time.h>

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

/* 1 when a client's link has been blocked for JN_CORE_STUCK_MS (the
 * router's linksBlocked): an outgoing link (a client's receiver) that has
 * had no credit since its attach, an incoming link (a client's sender)
 * while the router gives it none. A receiver that used the credit it gave
 * up is idle, not blocked (a reply link granting one at a time, as 1.19's
 * management clients do): the I/O layer's credit limit may step back and
 * forth while copies are in flight (io_own_link.c), so a flow seeming to take
 * credit away is no sign of a receiver that stopped. The watch starts
 * here, at the tick that first sees the link so; credit ends it at once
 * (jn_forward_credit_given_CT). Logged once when it starts to count. */
static uint64_t link_blocked_CT(jn_core_link_t *l, int64_t now)
{
    JN_ASSERT_CT(l->conn->core);
    if (l->type != JN_LINK_ENDPOINT || l->conn->internal || l->ct.state != JN_LINK_ST_ATTACHED)
        return 0;
    bool none = l->dir == JN_LINK_OUTGOING ? l->ct.credit_limit == 0 : l->ct.outstanding == 0;
    if (!none) {
        if (l->ct.blocked_since_ms != 0)
            jn_forward_credit_given_CT(l); /* credit by another way: ends it */
        return 0;
    }
    if (l->ct.blocked_since_ms == 0) {
        l->ct.blocked_since_ms = now; /* watched from now */
        return 0;
    }
    if (!l->ct.blocked && now - l->ct.blocked_since_ms >= JN_CORE_STUCK_MS) {
        l->ct.blocked = true;
        JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO,
               "[C%" PRIu64 "][L%" PRIu64 "] Link blocked with zero credit for %" PRId64 " seconds",
               l->conn->conn_id, l->ct.id, (now - l->ct.blocked_since_ms) / 1000);
    }
    return l->ct.blocked ? 1 : 0;
}

void jn_forward_credit_given_CT(jn_core_link_t *link)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    link->ct.blocked_since_ms = 0;
    if (!link->ct.blocked)
        return;
    link->ct.blocked = false;
    /* the figure drops now, not at the next tick; the tick recounts */
    uint64_t n = atomic_load_explicit(&core->stats.links_blocked, memory_order_relaxed);
    if (n > 0)
        atomic_store_explicit(&core->stats.links_blocked, n - 1, memory_order_relaxed);
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
    jn_stream_tick_CT(core, now); /* idle streaming links beyond the pool */
    core->ct.figures_at_ms = now + JN_CORE_FIGURES_MS;
    jn_core_timer_at_CT(core, core->ct.figures_at_ms);
}
