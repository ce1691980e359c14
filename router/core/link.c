/*
 * link.c — links as the core sees them: attach and detach, the outgoing
 * side's credit (the peer's flow) and the incoming side's credit (what the
 * router grants).
 *
 * Incoming credit. An incoming link is "active" while it is anonymous, or
 * its target address has at least one consumer. The router keeps
 *   outstanding + held <= capacity
 * where outstanding is the credit granted and not yet used by the sender,
 * and held the deliveries that arrived on the link and are not yet handed to
 * every consumer they were routed to (waiting for a consumer's credit).
 * So credit comes back as deliveries are handed out (or released), and a
 * consumer without credit pushes back on the sender. Whenever one of those
 * changes, the link is marked dirty; at the end of the action batch each
 * dirty, active link gets one LINK_CREDIT for (capacity - outstanding -
 * held), if that is positive and outstanding is at most half the capacity
 * (credit goes back in batches, not a flow frame per delivery). An
 * inactive link gets nothing: credit it already has is left with the
 * sender (deliveries sent with it and finding no consumer are released).
 *
 * Outgoing credit. The I/O layer reports the peer's credit as a limit on
 * the number of deliveries handed to the link since it attached (core.h).
 * The flow mailbox holds the latest (limit, drain) in one atomic word, and
 * one flow action at most is queued per link (flow_posted), so a storm of
 * flow frames costs one action per batch.
 *
 * Unsettled bound. An outgoing link holds at most ct.unsettled_max copies
 * handed out and not settled by the consumer: twice its capacity (the
 * connection's linkCapacity, 250 by default, as qdrouterd 1.19). Twice,
 * not once: a consumer settles a batch of copies only after it took them,
 * so with room for one capacity only, the next batch could not be handed
 * out until that batch's settlements came back, and a prompt consumer's
 * flow turned into stop-and-wait (docs/performance.md, "The unsettled
 * bound and the pipeline"); with room for two, one batch travels while
 * the one before is being settled. At the
 * bound it is handed nothing more, as if it had no credit: its copies wait
 * on its undelivered list, where they hold their senders' credit, so the
 * senders wait too, and a consumer that takes and never settles cannot make
 * the router hold an unbounded number of messages. A settlement that takes
 * the link below its bound queues it (jn_link_mark_resume_CT; settlements
 * happen inside loops over the link's copies, so it is not pumped there)
 * and it is pumped at the end of the batch. Links on inter-router and edge
 * connections are not bounded: each carries the flows of many consumers,
 * and a bound there would let one consumer that never settles throttle
 * unrelated ones; the router that holds the consumer bounds its link, which
 * takes its credit away, and that reaches back here hop by hop.
 */
#include "delivery.h"

#include <junction/pool.h>

#include <stdlib.h>
#include <string.h>

static _Atomic(jn_pool_t *) link_pool;

jn_core_link_t *jn_core_link_attached_IO(jn_core_conn_t *conn, void *io_link,
                                         const jn_link_info_t *info)
{
    JN_ASSERT_IO_CALLER();
    jn_pool_t *pool = jn_pool_get_once(&link_pool, "jn_core_link", sizeof(jn_core_link_t), 0);
    jn_core_link_t *l = pool ? jn_pool_alloc(pool) : NULL;
    if (!l)
        return NULL;
    memset(l, 0, sizeof *l);
    l->name = strdup(info->name ? info->name : "");
    bool has_address = info->address && *info->address;
    l->address = has_address ? strdup(info->address) : NULL;
    if (!l->name || (has_address && !l->address)) {
        free(l->name);
        free(l->address);
        jn_pool_free(pool, l);
        return NULL;
    }
    if (info->termini && info->termini_len) {
        l->termini = malloc(info->termini_len);
        if (!l->termini) {
            free(l->name);
            free(l->address);
            jn_pool_free(pool, l);
            return NULL;
        }
        memcpy(l->termini, info->termini, info->termini_len);
        l->termini_len = info->termini_len;
    }
    l->attach_ref = info->attach_ref;
    /* a sender feeds the fallback phase only on an edge connection: an
     * edge router's proxy for its senders to a fallback (as 1.19) */
    l->fallback = info->fallback && (info->dir == JN_LINK_OUTGOING || conn->edge);
    l->waypoint = info->waypoint <= 9 ? info->waypoint : 0;
    l->resumable = info->resumable;
    l->coordinator = info->coordinator && info->dir == JN_LINK_INCOMING;
    l->io_link = io_link;
    l->type = info->type;
    l->priority = info->priority;
    l->local = info->local;
    l->dir = info->dir;
    l->dynamic = info->dynamic;
    l->presettled = info->presettled;
    l->capacity = info->capacity        ? info->capacity
                  : conn->link_capacity ? conn->link_capacity
                                        : JN_CORE_DEFAULT_CAPACITY;
    /* Unsettled bound (see the top): a client's link only */
    l->ct.unsettled_max = conn->inter_router || conn->edge || l->capacity > UINT32_MAX / 2
                              ? UINT32_MAX
                              : 2 * l->capacity;
    atomic_init(&l->refcount, 1); /* the life reference */
    atomic_init(&l->flow, 0);
    atomic_init(&l->peer_limit, 0);
    atomic_init(&l->flow_posted, false);
    atomic_init(&l->detach_posted, false);
    l->attach_action.type = JN_ACT_LINK_ATTACHED;
    l->detach_action.type = JN_ACT_LINK_DETACHED;
    l->flow_action.type = JN_ACT_LINK_FLOW;
    l->answer_action.type = JN_ACT_LINK_ANSWERED;
    atomic_init(&l->answer_posted, false);
    atomic_fetch_add_explicit(&conn->refcount, 1, memory_order_relaxed);
    l->conn = conn;
    jn_core_post(conn->core, &l->attach_action);
    return l;
}

void jn_core_link_detached_IO(jn_core_link_t *link)
{
    JN_ASSERT_IO_CALLER();
    if (atomic_exchange_explicit(&link->detach_posted, true, memory_order_acq_rel))
        return;
    jn_core_post(link->conn->core, &link->detach_action);
}

void jn_core_link_flow_IO(jn_core_link_t *link, uint64_t credit_limit, bool drain)
{
    JN_ASSERT_IO_CALLER();
    /* the limit keeps 63 bits: 2^63 deliveries are never sent on one link */
    uint64_t word = (credit_limit << 1) | (drain ? 1u : 0u);
    atomic_store_explicit(&link->flow, word, memory_order_release);
    if (atomic_exchange_explicit(&link->flow_posted, true, memory_order_acq_rel))
        return; /* queued already: the core reads the word after this store */
    jn_link_ref(link);
    jn_core_post(link->conn->core, &link->flow_action);
}

void jn_core_link_drained_IO(jn_core_link_t *link)
{
    JN_ASSERT_IO_CALLER();
    /* an incoming link's flow word says only this (jn_link_flow_CT) */
    atomic_store_explicit(&link->flow, 1u, memory_order_release);
    if (atomic_exchange_explicit(&link->flow_posted, true, memory_order_acq_rel))
        return;
    jn_link_ref(link);
    jn_core_post(link->conn->core, &link->flow_action);
}

void jn_core_link_peer_credit_IO(jn_core_link_t *link, uint64_t peer_limit)
{
    JN_ASSERT_IO_CALLER();
    atomic_store_explicit(&link->peer_limit, peer_limit, memory_order_relaxed);
}

void jn_core_link_answered_IO(jn_core_link_t *link)
{
    JN_ASSERT_IO_CALLER();
    if (atomic_exchange_explicit(&link->answer_posted, true, memory_order_acq_rel))
        return;
    jn_link_ref(link);
    jn_core_post(link->conn->core, &link->answer_action);
}

void jn_core_link_answered_address_IO(jn_core_link_t *link, const char *address)
{
    JN_ASSERT_IO_CALLER();
    if (atomic_load_explicit(&link->answer_posted, memory_order_acquire))
        return;
    bool addressed = address && *address;
    link->answer_unaddressed = !addressed; /* ordered by the post below */
    if (addressed && !link->answer_address)
        link->answer_address = strdup(address);
    jn_core_link_answered_IO(link);
}

void jn_core_link_set_error_IO(jn_core_link_t *link, const char *condition, const char *description)
{
    JN_ASSERT_IO_CALLER();
    if (link->detach_condition || atomic_load(&link->detach_posted))
        return;
    link->detach_condition = condition ? strdup(condition) : NULL;
    link->detach_description = description ? strdup(description) : NULL;
}

void jn_core_link_set_unclosed_IO(jn_core_link_t *link)
{
    JN_ASSERT_IO_CALLER();
    if (!atomic_load(&link->detach_posted))
        link->detach_unclosed = true; /* ordered by the detach's post */
}

const uint8_t *jn_core_link_termini(const jn_core_link_t *link, size_t *len)
{
    *len = link->termini_len;
    return link->termini;
}

const char *jn_core_link_name(const jn_core_link_t *link)
{
    return link->name;
}

void *jn_core_link_io(const jn_core_link_t *link)
{
    return link->io_link;
}

void jn_link_free_(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    free(link->name);
    free(link->address);
    free(link->ct.dyn_address);
    free(link->termini);
    free(link->detach_condition);
    free(link->detach_description);
    free(link->answer_address);
    free(link->client_address);
    jn_pool_free(atomic_load_explicit(&link_pool, memory_order_acquire), link);
    jn_conn_unref(conn);
}

static const char *terminus(const char *s)
{
    return s ? s : "<none>";
}

/* Refuse the link: LINK_CLOSE with an error; it waits for its detach. */
void jn_link_refuse_CT(jn_core_link_t *link, const char *condition, const char *description)
{
    JN_ASSERT_CT(link->conn->core);
    link->ct.state = JN_LINK_ST_REFUSED;
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO,
           "[C%" PRIu64 "][L%" PRIu64 "] Link refused: %s (%s)", link->conn->conn_id, link->ct.id,
           description, condition);
    jn_work_link_CT(link, JN_WORK_LINK_CLOSE, NULL, condition, description, 0);
}

/* Find the link's address (or make its dynamic one); NULL after refusing. */
static jn_addr_t *attach_address_CT(jn_core_t *core, jn_core_link_t *link, const char **open_as)
{
    JN_ASSERT_CT(core);
    const char *address = link->address;
    if (link->dynamic && link->dir == JN_LINK_INCOMING) {
        /* a sender's node: its target address from now on (any address
         * the peer gave with dynamic is not its), so that copies toward
         * other routers carry it as their to-override like any targeted
         * sender's (delivery.c); no delivery exists before the attach */
        free(link->address);
        link->address = NULL;
    }
    if (link->dynamic) { /* a receiver's reply address, or a sender's node */
        int rc = link->dir == JN_LINK_OUTGOING
                     ? jn_addr_make_dynamic_CT(core, &link->ct.dyn_address)
                     : jn_addr_make_dynamic_target_CT(core, &link->address);
        address = link->dir == JN_LINK_OUTGOING ? link->ct.dyn_address : link->address;
        if (rc == JN_AGAIN) {
            jn_link_refuse_CT(link, "amqp:internal-error",
                              "no random octets from the kernel for a dynamic address");
            return NULL;
        }
        if (rc != 0) {
            jn_link_refuse_CT(link, "amqp:resource-limit-exceeded", "out of memory");
            return NULL;
        }
    } else if (!address) {
        jn_link_refuse_CT(link, "amqp:invalid-field", "receiver link has no source address");
        return NULL;
    } else if (link->dir == JN_LINK_OUTGOING) {
        /* another client's reply address, or another router's traffic
         * (docs/compat.md) */
        const char *refusal = jn_addr_consumer_refusal_CT(core, address);
        if (refusal) {
            jn_link_refuse_CT(link, "amqp:unauthorized-access", refusal);
            return NULL;
        }
    }
    jn_addr_t *addr = NULL;
    if (jn_addr_get_CT(core, address, link->dir, link->fallback, link->waypoint, &addr) != 0) {
        jn_link_refuse_CT(link, "amqp:resource-limit-exceeded", "out of memory");
        return NULL;
    }
    if (!addr) {
        /* configured unavailable: 1.19's words, which clients read */
        jn_link_refuse_CT(link, "amqp:not-found", "Node not found");
        return NULL;
    }
    /* a tenant's link is answered with the address it gave (tenant.c) */
    *open_as = link->client_address ? link->client_address : address;
    return addr;
}

void jn_link_attached_CT(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    link->ct.id = ++core->ct.next_link_id;
    link->ct.conn_next = conn->ct.links;
    if (conn->ct.links)
        conn->ct.links->ct.conn_prev = link;
    conn->ct.links = link;
    jn_stat_add(&core->stats.links, 1);
    bool in = link->dir == JN_LINK_INCOMING;
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO,
           "[C%" PRIu64 "][L%" PRIu64 "] Link attached: dir=%s name=%s source=%s target=%s%s",
           conn->conn_id, link->ct.id, in ? "in" : "out", link->name,
           in ? "<any>" : terminus(link->address), in ? terminus(link->address) : "<any>",
           link->dynamic ? " (dynamic)" : "");

    if (JN_UNLIKELY(link->local && jn_stream_is_ref(link->attach_ref))) {
        jn_stream_attached_CT(link); /* a streaming link (stream.c) */
        return;
    }
    if (link->local && link->attach_ref) {
        jn_lr_local_attached_CT(link); /* one the router asked for */
        return;
    }
    if (JN_UNLIKELY(link->type >= JN_LINK_EDGE_DOWNLINK)) {
        jn_edge_link_attached_CT(link); /* an edge router's own links */
        return;
    }
    if (JN_UNLIKELY(conn->tenant != NULL) && link->type == JN_LINK_ENDPOINT && link->address &&
        jn_tenant_attach_CT(link) != 0) {
        jn_link_refuse_CT(link, "amqp:resource-limit-exceeded", "out of memory");
        return;
    }
    const char *condition = NULL;
    const char *refusal = jn_router_link_attach_CT(link, &condition);
    if (refusal) {
        jn_link_refuse_CT(link, condition, refusal);
        return;
    }
    if (link->type != JN_LINK_ENDPOINT) {
        /* inter-router: incoming ones are routed by each message, outgoing
         * ones are chosen by the mesh (mesh_side.c) */
        link->ct.anonymous = in;
        link->ct.state = JN_LINK_ST_ATTACHED;
        jn_work_link_CT(link, JN_WORK_LINK_OPEN, NULL, NULL, NULL, 0);
        if (in)
            jn_link_mark_dirty_CT(link);
        jn_router_link_attached_CT(link);
        return;
    }
    if (in && !link->address && !link->dynamic) {
        link->ct.anonymous = true;
        link->ct.state = JN_LINK_ST_ATTACHED;
        jn_work_link_CT(link, JN_WORK_LINK_OPEN, NULL, NULL, NULL, 0);
        jn_link_mark_dirty_CT(link);
        return;
    }
    if (JN_UNLIKELY(core->edge_mode) && jn_edge_lookup_CT(link))
        return; /* the interior is asked first; jn_link_attach_route_CT then */
    jn_link_attach_route_CT(link);
}

void jn_link_attach_route_CT(jn_core_link_t *link)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    bool in = link->dir == JN_LINK_INCOMING;
    if (jn_lr_attach_CT(link) || jn_coordinator_refused_CT(link))
        return; /* link-routed (or refused for want of its container) */
    const char *open_as = NULL;
    jn_addr_t *addr = attach_address_CT(core, link, &open_as);
    if (!addr)
        return;
    int rc = in ? jn_addr_add_producer_CT(addr, link) : jn_addr_add_consumer_CT(addr, link);
    if (rc != 0) {
        jn_addr_release_if_unused_CT(core, addr);
        jn_link_refuse_CT(link, "amqp:resource-limit-exceeded", "out of memory");
        return;
    }
    if (addr->key_len >= 2 && addr->key[0] == 'M' && addr->key[1] > '0' && addr->key[1] <= '9')
        link->phase = (uint8_t)(addr->key[1] - '0'); /* a waypoint phase */
    link->ct.state = JN_LINK_ST_ATTACHED;
    jn_work_link_CT(link, JN_WORK_LINK_OPEN, open_as, NULL, NULL, 0);
    if (in)
        jn_link_mark_dirty_CT(link);
    else if (addr->n_consumers == 1)
        jn_link_producers_dirty_CT(addr); /* first consumer: senders get credit */
    if (!in && JN_UNLIKELY(core->ct.edge_conns > 0))
        jn_edge_consumers_changed_CT(core, addr);
    if (JN_UNLIKELY(core->edge_mode))
        jn_edge_local_changed_CT(core, addr); /* links on the uplink follow */
}

void jn_link_detached_CT(jn_core_link_t *link, bool from_conn_close)
{
    jn_core_conn_t *conn = link->conn;
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    JN_CHECK(link->ct.state != JN_LINK_ST_DETACHED);
    bool was_attached = link->ct.state == JN_LINK_ST_ATTACHED;
    bool answer_later = false; /* the far end's detach is its answer (linkroute.c) */
    if (link->ct.routed || link->ct.autolink || link->ct.echo ||
        link->ct.state == JN_LINK_ST_ROUTING)
        answer_later = jn_lr_link_detached_CT(link, from_conn_close);
    link->ct.state = JN_LINK_ST_DETACHED; /* no more work for it from here */
    if (JN_UNLIKELY(link->ct.streaming))
        jn_stream_link_gone_CT(link);
    jn_addr_t *addr = NULL;
    if (was_attached && link->type >= JN_LINK_EDGE_DOWNLINK)
        jn_edge_link_detached_CT(link);
    else if (was_attached && link->type != JN_LINK_ENDPOINT)
        jn_router_link_detached_CT(link);
    if (was_attached && !link->ct.anonymous)
        addr = jn_addr_remove_link_CT(core, link);
    if (link->dir == JN_LINK_OUTGOING)
        jn_forward_consumer_gone_CT(link, addr);
    else
        jn_forward_producer_gone_CT(link);
    if (addr && JN_UNLIKELY(core->edge_mode) && link->type == JN_LINK_ENDPOINT)
        jn_edge_local_changed_CT(core, addr);
    if (addr)
        jn_addr_release_if_unused_CT(core, addr);
    if (link->ct.conn_prev)
        link->ct.conn_prev->ct.conn_next = link->ct.conn_next;
    else
        conn->ct.links = link->ct.conn_next;
    if (link->ct.conn_next)
        link->ct.conn_next->ct.conn_prev = link->ct.conn_prev;
    link->ct.conn_prev = link->ct.conn_next = NULL;
    jn_stat_add(&core->stats.links, -1);
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO,
           "[C%" PRIu64 "][L%" PRIu64 "] Link detached: dir=%s deliveries=%" PRIu64 "%s",
           conn->conn_id, link->ct.id, link->dir == JN_LINK_INCOMING ? "in" : "out",
           link->ct.deliveries, from_conn_close ? " (connection closed)" : "");
    if (!from_conn_close && !answer_later) {
        /* the last work item about the link; it cannot be dropped (the I/O
         * layer frees its link on it), so out of memory here is fatal */
        jn_work_t *w = jn_work_new_CT(core, JN_WORK_LINK_RELEASED);
        JN_CHECK(w != NULL);
        w->link = jn_link_ref(link);
        jn_work_push_CT(conn, w);
    }
    jn_link_unref(link); /* the life reference */
}

void jn_link_flow_CT(jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    /* Clear the flag first: a flow stored after this posts a new action. */
    atomic_exchange_explicit(&link->flow_posted, false, memory_order_acq_rel);
    uint64_t word = atomic_load_explicit(&link->flow, memory_order_acquire);
    if (link->ct.state != JN_LINK_ST_ATTACHED)
        return;
    if (link->dir != JN_LINK_OUTGOING) {
        if (link->ct.routed && (word & 1u))
            jn_lr_sender_drained_CT(link); /* jn_core_link_drained_IO */
        return;
    }
    link->ct.credit_limit = word >> 1;
    link->ct.drain = (word & 1u) != 0;
    if (JN_UNLIKELY(link->ct.blocked_since_ms != 0) && link->ct.credit_limit > link->ct.handed)
        jn_forward_credit_given_CT(link); /* linksBlocked */
    jn_link_pump_CT(link);
    if (link->ct.routed)
        jn_link_mark_dirty_CT(link->ct.routed); /* its sender's credit follows */
}

void jn_link_pump_CT(jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    if (link->ct.state != JN_LINK_ST_ATTACHED || link->conn->ct.closed)
        return; /* a closing connection's links are about to go: hold */
    while (link->ct.handed < link->ct.credit_limit && link->ct.undelivered.head &&
           !jn_link_full_CT(link))
        jn_forward_hand_out_CT(link->ct.undelivered.head);
    if (link->ct.mc_dropping)
        jn_forward_backlog_check_CT(link);
    if (JN_UNLIKELY(link->ct.close_when_sent) && !link->ct.undelivered.head)
        jn_edge_sent_all_CT(link); /* an edge's uplink sender left by its producers */
    /* a drain with nothing it may send now (none waiting, or at its
     * unsettled bound) is answered at once; a link-routed one when the
     * sender at the far end answered it (linkroute.c) */
    if (link->ct.drain && !link->ct.routed)
        jn_link_answer_drain_CT(link);
}

void jn_link_answer_drain_CT(jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    if ((!link->ct.undelivered.head || jn_link_full_CT(link)) &&
        link->ct.handed < link->ct.credit_limit) {
        /* the I/O layer uses the rest of the credit up (pn_link_drained) */
        link->ct.handed = link->ct.credit_limit;
        jn_work_link_CT(link, JN_WORK_LINK_DRAINED, NULL, NULL, NULL, 0);
    }
}

void jn_link_mark_resume_CT(jn_core_link_t *link)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    if (link->ct.resume || link->ct.state != JN_LINK_ST_ATTACHED)
        return;
    link->ct.resume = true;
    link->ct.resume_next = core->ct.resume;
    core->ct.resume = jn_link_ref(link);
}

void jn_link_flush_resume_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    while (core->ct.resume) {
        jn_core_link_t *link = core->ct.resume;
        core->ct.resume = link->ct.resume_next;
        link->ct.resume_next = NULL;
        link->ct.resume = false;
        jn_link_pump_CT(link);
        if (link->ct.routed)
            jn_link_mark_dirty_CT(link->ct.routed); /* its sender's credit follows */
        jn_link_unref(link);                        /* the resume list's reference */
    }
}

void jn_link_mark_dirty_CT(jn_core_link_t *link)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    if (link->ct.dirty || link->dir != JN_LINK_INCOMING || link->ct.state != JN_LINK_ST_ATTACHED ||
        link->conn->internal)
        return;
    link->ct.dirty = true;
    link->ct.dirty_next = core->ct.dirty;
    core->ct.dirty = jn_link_ref(link);
}

void jn_link_producers_dirty_CT(jn_addr_t *addr)
{
    JN_ASSERT_SOME_CT();
    for (uint32_t i = 0; i < addr->n_producers; i++)
        jn_link_mark_dirty_CT(addr->producers[i]);
    if (JN_UNLIKELY(addr->key_len >= 2 && addr->key[1] == 'F' && addr->key[0] == 'M')) {
        /* a fallback's destinations changed: the primary's senders too */
        jn_core_t *core = jn_core_self_CT();
        jn_addr_t *primary = core ? jn_addr_primary_CT(core, addr) : NULL;
        if (primary && primary->fallback)
            for (uint32_t i = 0; i < primary->n_producers; i++)
                jn_link_mark_dirty_CT(primary->producers[i]);
    }
}

/* True when link, a client's targeted sender whose address has no
 * destination (noted by credit_due_CT: nodest_seen), sent a delivery
 * since its address lost its last destination (here or anywhere in the
 * mesh), or had one released while the address had none (released_nodest:
 * routed to a consumer whose detach the core saw after the delivery).
 * Called only while nodest_seen, off the hot path. */
static bool sent_into_nothing_CT(jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    if (jn_addr_has_destination_or_fallback_CT(link->conn->core, link->ct.addr)) {
        link->ct.nodest_seen = link->ct.released_nodest = false; /* a destination again */
        return false;
    }
    return link->ct.deliveries != link->ct.nodest_deliveries || link->ct.released_nodest;
}

/* A link-routed sender is left alone: its receiver's drain passes to it
 * (jn_lr_pass_drain_CT). A client's targeted sender whose address lost its last
 * destination keeps the credit it has, as in 1.19, until it sends with it:
 * that delivery is released (or, pre-settled, dropped and counted) at
 * once, its credit is given back and the sender is asked to drain (AMQP
 * 1.0 2.6.7), as 1.19 does; a sender that honours the drain then holds no
 * credit until a destination appears, one that does not sends on and gets
 * each delivery released. It gets no new credit meanwhile. (Taking its
 * credit away at the loss itself left a client that does not honour drain
 * with its messages unsent and no outcome.) An auto-link's broker loses
 * its credit at the loss: it would take each released message back and
 * send it again, round and round. */
static void withdraw_credit_CT(jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    if (link->ct.state != JN_LINK_ST_ATTACHED || link->ct.outstanding == 0)
        return;
    if (link->ct.routed)
        return; /* its receiver's drain passes to it (jn_lr_pass_drain_CT) */
    if (!link->ct.autolink) {
        if (!link->ct.nodest_seen || !sent_into_nothing_CT(link))
            return;
        /* the released delivery's credit back first, as 1.19 replenishes it */
        if (jn_work_link_CT(link, JN_WORK_LINK_CREDIT, NULL, NULL, NULL, 1) != 0)
            return;
    } else if (link->ct.anonymous || !link->ct.addr ||
               jn_addr_has_destination_or_fallback_CT(link->conn->core, link->ct.addr)) {
        return;
    }

    /* an auto-link's broker gets credit 0 without the drain flag:
     * RabbitMQ 3.10's AMQP 1.0 plugin ends the whole session when a drain
     * completes (a link route passes its receiver's own drain instead) */
    if (jn_work_drain_CT(link, link->ct.autolink ? 1 : 0) != 0)
        return; /* out of memory: the credit stays with the sender */
    link->ct.outstanding = 0;
    link->ct.released_nodest = false;
}

/* The credit to grant link now (0: none). A client's targeted sender
 * found without a destination the first time has its deliveries count
 * noted (withdraw_credit_CT drains it after its next delivery). */
static uint32_t credit_due_CT(jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    if (link->ct.state != JN_LINK_ST_ATTACHED)
        return 0;
    if (link->ct.routed)
        return jn_lr_credit_due_CT(link);
    if (!link->ct.anonymous) {
        const jn_addr_t *addr = link->ct.addr;
        if (!addr || !jn_addr_has_destination_or_fallback_CT(link->conn->core, addr)) {
            if (addr && !link->ct.nodest_seen && !link->ct.autolink && !link->conn->internal) {
                link->ct.nodest_seen = true;
                link->ct.nodest_deliveries = link->ct.deliveries;
            }
            return 0;
        }
    }
    /* Batched: nothing while the sender still holds more than half the
     * capacity, so a stream or a ping-pong costs one flow frame per
     * capacity/2 deliveries, not one per delivery (docs/performance.md). A
     * sender with half or less always gets what is due, so none stalls. */
    if ((uint64_t)link->ct.outstanding * 2 > link->capacity)
        return 0;
    uint64_t used = (uint64_t)link->ct.outstanding + link->ct.held;
    return used < link->capacity ? (uint32_t)(link->capacity - used) : 0;
}

void jn_link_flush_credit_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    while (core->ct.dirty) {
        jn_core_link_t *link = core->ct.dirty;
        core->ct.dirty = link->ct.dirty_next;
        link->ct.dirty_next = NULL;
        link->ct.dirty = false;
        if (JN_UNLIKELY(link->conn->edge) && link->ct.addr)
            jn_edge_track_CT(link);
        uint32_t credit = credit_due_CT(link);
        if (credit > 0 && jn_work_link_CT(link, JN_WORK_LINK_CREDIT, NULL, NULL, NULL, credit) == 0) {
            link->ct.outstanding += credit;
            link->ct.nodest_seen = link->ct.released_nodest = false; /* a destination again */
            if (JN_UNLIKELY(link->ct.blocked_since_ms != 0))
                jn_forward_credit_given_CT(link); /* linksBlocked */
        }
        else if (credit == 0)
            withdraw_credit_CT(link);
        if (JN_UNLIKELY(link->ct.routed != NULL))
            jn_lr_pass_drain_CT(link);
        jn_link_unref(link); /* the dirty list's reference */
    }
}
