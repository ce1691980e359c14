/*
 * mesh_route.c — routes across the mesh for one delivery (the core's side
 * of the mesh, with mesh_side.c): what a delivery's router annotations say
 * about where it may go (its origin, the routers in its trace, a loop), and
 * the remote destination or destinations an anycast or multicast delivery
 * takes (docs/protocol.md, "Forwarding across routers"). Core thread only.
 *
 * A delivery for a consumer on this router needs none of it but the loop
 * check: jn_router_route_ctx_CT leaves the lookups of the routers in its
 * trace to the first look for a remote route (jn_route_ctx_t.full).
 */
#include "delivery.h"

#include <junction/iterator.h>

#include <string.h>

/* The longest node id ("0/<router id>") read from a message's router
 * annotations; a longer one names no router. */
#define JN_MESH_NODE_ID_MAX 160

/* The router node whose node id ("0/<id>", as x-opt-qd.ingress and trace
 * carry it) the view holds, or NULL. Per routed message (an ingress and
 * each trace entry): the node found last is tried first, since a mesh's
 * messages name the same few routers in turn, and a contiguous id is
 * looked up where it lies, without a copy. */
static jn_router_node_t *node_by_node_id_CT(jn_core_t *core, const jn_iter_t *node_id)
{
    JN_ASSERT_CT(core);
    if (!core->mesh)
        return NULL;
    jn_router_node_t *memo = jn_router_node_at_CT(core, core->ct.node_memo);
    if (memo && jn_iter_equal_bytes(node_id, memo->node_id, memo->node_id_len))
        return memo;
    char buf[JN_MESH_NODE_ID_MAX];
    const char *id = buf;
    size_t n = jn_iter_length(node_id);
    if (jn_iter_contiguous(node_id)) {
        id = (const char *)node_id->cursor;
    } else {
        jn_iter_t it = *node_id;
        if (n > sizeof buf || jn_iter_copy(&it, buf, n) != n)
            return NULL;
    }
    if (n < 3 || id[0] != '0' || id[1] != '/')
        return NULL;
    jn_router_node_t *found = jn_router_node_at_CT(core, jn_mesh_router_index_CT(core->mesh, id + 2, n - 2));
    if (found)
        core->ct.node_memo = found->index;
    return found;
}

/* One entry of a delivery's trace (jn_router_route_ctx_CT, through
 * jn_ra_trace_each): this router's id marks a loop; another router's link
 * is one the delivery may not go back on. */
typedef struct trace_walk {
    jn_core_t *core;
    jn_route_ctx_t *rc;
} trace_walk_t;

static bool trace_entry_CT(void *ctx, const jn_iter_t *id)
{
    trace_walk_t *w = ctx;
    JN_ASSERT_CT(w->core);
    if (jn_iter_equal_bytes(id, w->core->node_id, w->core->node_id_len)) {
        w->rc->looped = true; /* it has been here before */
        return true;
    }
    jn_router_node_t *n = node_by_node_id_CT(w->core, id);
    if (n && n->link >= 0)
        jn_mesh_bits_set(&w->rc->excluded, (unsigned)n->link);
    return true;
}

/* The loop check alone (jn_router_route_ctx_CT, full false): this
 * router's own id in the trace; no other router is looked up. */
static bool trace_self_CT(void *ctx, const jn_iter_t *id)
{
    trace_walk_t *w = ctx;
    JN_ASSERT_CT(w->core);
    if (!jn_iter_equal_bytes(id, w->core->node_id, w->core->node_id_len))
        return true;
    w->rc->looped = true;
    return false; /* nothing more to know from it here */
}

/* The loop check (rc->looped) of a trace, through memo, its link's memo of
 * the last trace it walked: a mesh's deliveries on one link carry the same
 * trace in turn, so the same octets give the same answer without the walk
 * (hot path on the egress router). */
static void loop_check_CT(jn_core_t *core, jn_route_ctx_t *rc, const jn_ra_t *ra,
                          jn_trace_memo_t *memo)
{
    JN_ASSERT_CT(core);
    const jn_iter_t *t = &ra->trace;
    size_t len = (size_t)(t->limit - t->cursor);
    bool keepable = jn_iter_contiguous(t) && len <= JN_TRACE_MEMO_MAX;
    if (keepable && memo->valid && memo->len == len && memo->count == ra->trace_count &&
        memcmp(memo->raw, t->cursor, len) == 0) {
        rc->looped = memo->looped;
        return;
    }
    trace_walk_t walk = {.core = core, .rc = rc};
    jn_ra_trace_each(ra, trace_self_CT, &walk);
    if (!keepable)
        return;
    memo->valid = true;
    memo->looped = rc->looped;
    memo->len = (uint8_t)len;
    memo->count = ra->trace_count;
    memcpy(memo->raw, t->cursor, len);
}

/* The rest of rc (see jn_route_ctx_t): priority, origin, excluded. */
static void route_ctx_fill_CT(jn_core_t *core, jn_route_ctx_t *rc)
{
    JN_ASSERT_CT(core);
    const jn_delivery_t *dlv = rc->dlv;
    rc->full = true;
    jn_message_header_t h;
    if (jn_message_get_header(dlv->message, &h) == 0)
        rc->priority = h.priority;
    const jn_core_conn_t *in = dlv->link->conn;
    if (in->internal)
        return; /* router keys are read only where honoured (jn_message_parse) */
    if (in->ct.slot >= 0)
        jn_mesh_bits_set(&rc->excluded, (unsigned)in->ct.slot);
    const jn_ra_t *ra = jn_message_annotations(dlv->message);
    if (!ra)
        return;
    if (ra->has_ingress) {
        jn_router_node_t *o = node_by_node_id_CT(core, &ra->ingress);
        rc->origin = o ? o->index : 0;
    }
    trace_walk_t walk = {.core = core, .rc = rc};
    jn_ra_trace_each(ra, trace_entry_CT, &walk); /* looped too, as trace_self_CT */
}

void jn_router_route_ctx_CT(jn_core_t *core, const jn_delivery_t *dlv, jn_route_ctx_t *rc,
                            bool full)
{
    JN_ASSERT_CT(core);
    memset(rc, 0, sizeof *rc);
    rc->priority = 4;
    rc->dlv = dlv;
    if (JN_UNLIKELY(dlv->link->conn->edge))
        rc->from_edge = dlv->link->conn; /* never back to that edge / up again */
    if (!core->mesh) {
        rc->full = true; /* a standalone router: nothing more to know (hot path) */
        return;
    }
    const jn_ra_t *ra = dlv->link->conn->internal ? NULL : jn_message_annotations(dlv->message);
    if (ra) {
        rc->trace_count = ra->has_trace ? ra->trace_count : 0;
        if (!full && ra->has_trace)
            loop_check_CT(core, rc, ra, &dlv->link->ct.trace_memo);
    }
    if (full)
        route_ctx_fill_CT(core, rc);
}

/* The connection to reach node through, unless excluded. */
jn_core_conn_t *jn_router_usable_conn_CT(jn_core_t *core, const jn_router_node_t *node,
                                      const jn_route_ctx_t *rc)
{
    JN_ASSERT_CT(core);
    jn_core_conn_t *c = jn_router_conn_CT(core, node);
    if (!c || c->ct.slot < 0 || jn_mesh_bits_has(&rc->excluded, (unsigned)c->ct.slot))
        return NULL;
    return c;
}

/* The priority of the data link a delivery to addr takes: the address
 * entity's, else the message header's (1.19). */
static inline unsigned effective_priority(const jn_addr_t *addr, const jn_route_ctx_t *rc)
{
    return addr->priority >= 0 ? (unsigned)addr->priority : rc->priority;
}

/* Load of an outgoing link for balanced (copies waiting plus unsettled). */
static uint64_t link_load_CT(const jn_core_link_t *l)
{
    JN_ASSERT_CT(l->conn->core);
    return (uint64_t)l->ct.undelivered.count + l->ct.unsettled;
}

jn_core_link_t *jn_router_pick_remote_CT(jn_core_t *core, jn_addr_t *addr, jn_route_ctx_t *rc,
                                         uint64_t *load)
{
    JN_ASSERT_CT(core);
    if (addr->n_remote == 0)
        return NULL;
    if (!rc->full)
        route_ctx_fill_CT(core, rc);
    unsigned priority = effective_priority(addr, rc);
    bool balanced = addr->distribution == JN_DIST_BALANCED;
    jn_core_link_t *best = NULL;
    uint64_t best_score = UINT64_MAX;
    unsigned start = addr->next_remote % JN_MESH_MAX_ROUTERS, chosen = start;
    /* the routers with a destination, from start round to start - 1 */
    int i = jn_mesh_bits_next(&addr->remote, start);
    bool wrapped = false;
    for (;; i = jn_mesh_bits_next(&addr->remote, (unsigned)i + 1)) {
        if (i < 0 || (wrapped && (unsigned)i >= start)) {
            if (wrapped || start == 0)
                break;
            wrapped = true;
            i = jn_mesh_bits_next(&addr->remote, 0);
            if (i < 0 || (unsigned)i >= start)
                break;
        }
        jn_router_node_t *n = jn_router_node_at_CT(core, i);
        if (!n)
            continue;
        /* balanced: only where this router lies on the origin's path
         * (as 1.19); closest goes by cost alone */
        if (balanced && !jn_mesh_bits_has(&n->valid_origins, (unsigned)rc->origin))
            continue;
        jn_core_conn_t *c = jn_router_usable_conn_CT(core, n, rc);
        jn_core_link_t *l = c ? jn_router_data_link_CT(c, priority) : NULL;
        if (!l)
            continue;
        uint64_t score = balanced ? link_load_CT(l) + n->cost : n->cost;
        if (score < best_score) {
            best_score = score;
            best = l;
            chosen = (unsigned)i;
        }
    }
    if (best)
        addr->next_remote = chosen + 1;
    if (load)
        *load = best_score;
    return best;
}

unsigned jn_router_multicast_links_CT(jn_core_t *core, const jn_addr_t *addr, jn_route_ctx_t *rc,
                                      jn_core_link_t **out, unsigned max)
{
    JN_ASSERT_CT(core);
    if (!rc->full)
        route_ctx_fill_CT(core, rc);
    unsigned n = 0, priority = effective_priority(addr, rc);
    jn_mesh_bits_t used = {{0, 0}};
    for (int i = jn_mesh_bits_next(&addr->remote, 1); i > 0 && n < max;
         i = jn_mesh_bits_next(&addr->remote, (unsigned)i + 1)) {
        jn_router_node_t *node = jn_router_node_at_CT(core, i);
        /* valid origins: a copy goes toward a router only from the routers
         * whose shortest path to it passes here, so each router gets one
         * copy even in a mesh with cycles (a 1.19 quirk); only those this
         * router is sure of while link states change (router/mesh/path.c,
         * "Multicast origins") */
        if (!node || !jn_mesh_bits_has(&node->mc_origins, (unsigned)rc->origin))
            continue;
        jn_core_conn_t *c = jn_router_usable_conn_CT(core, node, rc);
        if (!c || jn_mesh_bits_has(&used, (unsigned)c->ct.slot))
            continue;
        jn_core_link_t *l = jn_router_data_link_CT(c, priority);
        if (!l)
            continue;
        jn_mesh_bits_set(&used, (unsigned)c->ct.slot);
        out[n++] = l;
    }
    return n;
}
