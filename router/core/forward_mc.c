/*
 * forward_mc.c — stuck multicast consumers (core thread only): parking,
 * dropping and the watch that finds them; and the outcome an unsettled
 * multicast delivery's copies add up to (at the end). The copies themselves
 * are made and handed out by forward.c.
 *
 * A consumer of a multicast address (a local outgoing link; never a link toward another router,
 * inter-router or edge: that router judges its own consumers, and a slow
 * peer or a busy machine must not cost the healthy consumers behind it
 * their copies) that keeps taking copies paces the senders (forward.c, "Handing
 * out"): a copy
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
 */
#include "forward_private.h"

#include <junction/time.h>

#include <string.h>

/* A parked copy leaves its link's parked backlog (handed out, or about to
 * be dropped). A message that grew since it was parked (streaming) counts
 * its length now: the total only errs low. */
void jn_fwd_mc_unpark_CT(jn_delivery_t *copy)
{
    JN_ASSERT_CT(jn_delivery_core(copy));
    jn_core_link_t *link = copy->link;
    uint64_t n = jn_message_length(copy->message);
    copy->ct.parked = false;
    link->ct.mc_parked_octets = link->ct.mc_parked_octets > n ? link->ct.mc_parked_octets - n : 0;
}

/* Multicast toward a consumer in drop mode whose backlog is full: the copy
 * is not made, only counted (on the link and the router). */
void jn_fwd_mc_drop_CT(jn_core_t *core, jn_core_link_t *to)
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
void jn_fwd_mc_park_CT(jn_core_t *core, jn_delivery_t *copy)
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
        jn_fwd_all_handed_CT(core, peer);
}

/* A parked copy is never sent (its link is going, or its backlog is over
 * JN_CORE_MC_BACKLOG_OCTETS): released in its delivery's merged outcome
 * (see the top), and finished. */
void jn_fwd_mc_discard_parked_CT(jn_delivery_t *copy)
{
    JN_ASSERT_CT(jn_delivery_core(copy));
    jn_delivery_t *peer = copy->ct.peer;
    jn_fwd_mc_unpark_CT(copy);
    if (!copy->presettled && peer->ct.mc_unsettled > 0) {
        jn_fwd_mc_outcome_in_CT(copy);
        peer->ct.mc_unsettled--;
        jn_fwd_mc_merge_CT(peer, JN_DISP_RELEASED);
        jn_fwd_mc_check_CT(peer);
        jn_fwd_mc_tell_CT(peer);
    }
    jn_fwd_finish_copy_CT(copy);
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
        jn_fwd_mc_drop_CT(core, link);
        jn_fwd_mc_discard_parked_CT(c);
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
        jn_fwd_mc_park_CT(core, c);
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

/* ---- outcomes of unsettled multicast deliveries (forward.c, "Handing
 * out") --------------------------------------------------------------- */

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

void jn_fwd_mc_merge_CT(jn_delivery_t *peer, uint64_t type)
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
void jn_fwd_mc_check_CT(jn_delivery_t *dlv)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    if (!dlv->ct.multicast || !dlv->ct.credit_returned || dlv->ct.mc_unsettled > 0 ||
        dlv->ct.handed == 0)
        return;
    jn_fwd_settle_incoming_CT(dlv, mc_types[dlv->ct.mc_outcome]);
}

/* An unsettled multicast delivery whose copies are all handed out and have
 * all given an outcome, some without settling (consumers that wait for the
 * sender to settle first): their strongest outcome goes to the sender
 * unsettled, once, as 1.19 sums them up; the sender's settlement then
 * settles the copies (sender_update_CT), or the last copy's settles it. */
void jn_fwd_mc_tell_CT(jn_delivery_t *dlv)
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
void jn_fwd_mc_outcome_in_CT(jn_delivery_t *copy)
{
    JN_ASSERT_CT(jn_delivery_core(copy));
    jn_delivery_t *peer = copy->ct.peer;
    if (copy->ct.mc_outcome_in || !peer)
        return;
    copy->ct.mc_outcome_in = true;
    if (peer->ct.mc_waiting > 0)
        peer->ct.mc_waiting--;
}
