/*
 * path.c — route computation (docs/protocol.md, "The mesh": "Link state and
 * routes").
 *
 * The graph has a vertex per router index (0 = this router) and a directed
 * edge from X to each of X's peers, with the cost X gives it: this router's
 * own peers, and every stored remote link state (a router whose LSU has not
 * arrived has no outgoing edges). It is held as a 128 x 128 cost matrix,
 * built once per computation.
 *
 * Dijkstra runs from this router for cost, first hop and hop count (radius
 * is the largest hop count), and once more from every other router R for
 * the valid origins: R is a valid origin of destination D when this router
 * lies strictly inside R's shortest path to D. The queue takes the lowest
 * cost first, ties by ascending router id (byte order, as 1.19's Python
 * string compare), and a path replaces another only when strictly cheaper,
 * so the results equal 1.19's. Cost: O(V^2) per run, O(V^3) in all, about
 * two million steps for a full 128-router mesh, once per changed tick.
 *
 * Multicast origins. Valid origins computed from link states that differ
 * between routers (a router restarted, a link state on its way or its LSR
 * lost) can make two routers both forward a multicast copy toward the
 * same router, which then delivers it twice, until they agree again. So
 * the valid origins multicast uses are only those this router is sure of:
 * R is a multicast origin of D here when R is a valid origin of D and no
 * router U whose link state this router lacks or knows to be stale (its
 * RA announced a newer ls_seq) could offer R another path to D as cheap:
 * every such U (other than D) is at least as far from R as D is (a link
 * costs at least 1, so a path through U costs more than the one through
 * here). A link one end's link state lists and the other's does not
 * (mark_one_sided) makes both ends unknown the same way. Until the link
 * states arrive, copies that might be duplicates are not forwarded
 * (multicast is at most once; the ingress router always forwards its
 * own). Anycast and control messages keep the valid origins.
 *
 * Afterwards the core is told, for every router, what changed: a new or
 * changed route (router_route), or the loss of any route
 * (router_unreachable). Core thread only.
 */
#include "mesh_private.h"

#include <stdlib.h>
#include <string.h>

#define N         JN_MESH_MAX_ROUTERS
#define NO_EDGE   UINT32_MAX
#define UNREACHED UINT64_MAX

typedef struct graph {
    /* vertices 0..n-1 may be present (n: the highest present index + 1):
     * the searches scan those only, so a mesh of a few routers costs a few
     * steps per search, not N */
    int n;
    bool present[N];
    const char *id[N];
    uint32_t cost[N][N]; /* cost[from][to], NO_EDGE when none */
} graph_t;

/* One shortest-path tree. */
typedef struct tree {
    uint64_t dist[N];
    int prev[N];
    int order[N]; /* vertices in the order they were settled */
    int settled;
} tree_t;

static int vertex_of_CT(const jn_mesh_t *mesh, const char *id, size_t len)
{
    JN_ASSERT_CT(mesh);
    if (len == mesh->id_len && memcmp(id, mesh->id, len) == 0)
        return 0;
    const jn_mesh_node_t *node = jn_mesh_node_find_CT(mesh, id, len);
    return node ? node->index : -1;
}

static void add_edges_CT(const jn_mesh_t *mesh, graph_t *g, int from, const jn_mesh_strs_t *peers)
{
    JN_ASSERT_CT(mesh);
    for (size_t i = 0; i < peers->n; i++) {
        int to = vertex_of_CT(mesh, peers->s[i], peers->len[i]);
        if (to >= 0 && to != from)
            g->cost[from][to] = (uint32_t)peers->val[i];
    }
}

static void build_graph_CT(const jn_mesh_t *mesh, graph_t *g)
{
    JN_ASSERT_CT(mesh);
    memset(g->present, 0, sizeof g->present);
    memset(g->cost, 0xff, sizeof g->cost);
    g->present[0] = true;
    g->id[0] = mesh->id;
    g->n = 1;
    add_edges_CT(mesh, g, 0, &mesh->peers);
    for (int i = 1; i < N; i++) {
        const jn_mesh_node_t *x = mesh->nodes[i];
        if (!x)
            continue;
        g->present[i] = true;
        g->n = i + 1;
        g->id[i] = x->id;
        add_edges_CT(mesh, g, i, &x->peers);
    }
}

/* Does (da, a) come before (db, b) in the queue? */
static bool queue_before(const graph_t *g, uint64_t da, int a, uint64_t db, int b)
{
    if (da != db)
        return da < db;
    return strcmp(g->id[a], g->id[b]) < 0;
}

static void dijkstra(const graph_t *g, int root, tree_t *t)
{
    bool done[N] = {false};
    for (int i = 0; i < N; i++) {
        t->dist[i] = UNREACHED;
        t->prev[i] = -1;
    }
    t->dist[root] = 0;
    t->settled = 0;
    for (;;) {
        int u = -1;
        for (int v = 0; v < g->n; v++)
            if (g->present[v] && !done[v] && t->dist[v] != UNREACHED &&
                (u < 0 || queue_before(g, t->dist[v], v, t->dist[u], u)))
                u = v;
        if (u < 0)
            break;
        done[u] = true;
        t->order[t->settled++] = u;
        for (int v = 0; v < g->n; v++) {
            if (!g->present[v] || done[v] || g->cost[u][v] == NO_EDGE)
                continue;
            uint64_t alt = t->dist[u] + g->cost[u][v];
            if (alt < t->dist[v]) {
                t->dist[v] = alt;
                t->prev[v] = u;
            }
        }
    }
}

/* Add R (root of t) to the valid origins (vo) of every D whose path from R
 * passes through this router (vertex 0), and to its multicast origins (mc)
 * unless a router whose link state is not known here (unknown[U]) is as
 * close to R as D is (see the top). */
static void add_valid_origins(const tree_t *t, int root, const bool *unknown, jn_mesh_bits_t *vo,
                              jn_mesh_bits_t *mc)
{
    /* the two unknown routers closest to R (a D that is itself unknown is
     * compared with the other one) */
    uint64_t d1 = UNREACHED, d2 = UNREACHED;
    int u1 = -1;
    for (int k = 1; k < t->settled; k++) {
        int u = t->order[k]; /* settled in order of distance */
        if (!unknown[u])
            continue;
        if (u1 < 0) {
            u1 = u;
            d1 = t->dist[u];
        } else {
            d2 = t->dist[u];
            break;
        }
    }
    /* R's own link state not known: any path of R's may exist */
    bool sure = !unknown[root];
    bool through[N] = {false};
    for (int k = 1; k < t->settled; k++) { /* order[0] is the root */
        int v = t->order[k];
        int p = t->prev[v];
        through[v] = p == 0 || (p != root && through[p]);
        if (v == 0 || !through[v])
            continue;
        jn_mesh_bits_set(&vo[v], (unsigned)root);
        if (sure && t->dist[v] <= (v == u1 ? d2 : d1))
            jn_mesh_bits_set(&mc[v], (unsigned)root);
    }
}

/* Mark as unknown both ends of every one-sided link between two routers
 * this router reaches and whose link states it holds as current: X's link
 * state lists Y and Y's does not list X (or this router's own peers and a
 * peer's link state disagree). A router already unknown (its link state
 * missing or known stale) has no edges or old ones, so its links look
 * one-sided; it is left out, or its peers would wait on it too. Links come
 * and go on both ends within milliseconds, so one of the two link states
 * is out of date and its newer one is on its way, without an RA yet to
 * say so (a router that came back from a stall: docs/design.md, "The
 * mesh"). A router out of reach (gone, its last link state kept until it
 * ages out) is left alone: nothing reaches it, so it offers no path. Uses
 * t as scratch. */
static void mark_one_sided(const graph_t *g, tree_t *t, bool *unknown)
{
    bool known[N];
    for (int i = 0; i < g->n; i++)
        known[i] = g->present[i] && !unknown[i];
    dijkstra(g, 0, t);
    for (int i = 0; i < g->n; i++) {
        if (!known[i] || t->dist[i] == UNREACHED)
            continue;
        for (int j = i + 1; j < g->n; j++) {
            if (!known[j] || t->dist[j] == UNREACHED)
                continue;
            if ((g->cost[i][j] != NO_EDGE) == (g->cost[j][i] != NO_EDGE))
                continue;
            if (i != 0) /* this router's own view is never out of date */
                unknown[i] = true;
            unknown[j] = true;
        }
    }
}

static bool bits_equal(const jn_mesh_bits_t *a, const jn_mesh_bits_t *b)
{
    return a->w[0] == b->w[0] && a->w[1] == b->w[1];
}

/* Tell the core what changed for node since it was last told. */
static void report_CT(jn_mesh_t *mesh, jn_mesh_node_t *x)
{
    JN_ASSERT_CT(mesh);
    if (!x->reachable) {
        if (x->rep_reachable) {
            x->rep_reachable = false;
            JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO, "Router %s is unreachable", x->id);
            if (mesh->ops.router_unreachable)
                mesh->ops.router_unreachable(mesh->ops.ctx, x->index);
        }
        return;
    }
    bool direct = x->first_hop == x->index;
    int link = direct ? x->link : -1;
    int next_hop = direct ? -1 : x->first_hop;
    if (x->rep_reachable && x->rep_link == link && x->rep_next_hop == next_hop &&
        x->rep_cost == x->cost && bits_equal(&x->rep_vo, &x->valid_origins) &&
        bits_equal(&x->rep_mc, &x->mc_origins))
        return;
    x->rep_reachable = true;
    x->rep_link = link;
    x->rep_next_hop = next_hop;
    x->rep_cost = x->cost;
    x->rep_vo = x->valid_origins;
    x->rep_mc = x->mc_origins;
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_DEBUG, "Route to router %s: link %d, next hop %d, cost %u",
           x->id, link, next_hop, x->cost);
    if (mesh->ops.router_route)
        mesh->ops.router_route(mesh->ops.ctx, x->index, link, next_hop, x->cost, &x->valid_origins,
                               &x->mc_origins);
}

void jn_mesh_compute_CT(jn_mesh_t *mesh)
{
    JN_ASSERT_CT(mesh);
    graph_t *g = malloc(sizeof *g);
    tree_t *t = malloc(sizeof *t);
    jn_mesh_bits_t *vo = calloc(2 * N, sizeof *vo), *mc = vo ? vo + N : NULL;
    if (!g || !t || !vo) {
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_ERROR, "Cannot compute routes: out of memory");
        mesh->recompute = true; /* try again on the next tick */
        goto out;
    }
    build_graph_CT(mesh, g);
    /* routers whose link state is missing or stale (multicast origins) */
    bool unknown[N] = {false};
    for (int i = 1; i < g->n; i++) {
        const jn_mesh_node_t *x = mesh->nodes[i];
        unknown[i] = x && (x->ls_seq == 0 || x->ls_seq < x->ra_ls_seq);
    }
    mark_one_sided(g, t, unknown);
    for (int r = 1; r < g->n; r++) {
        if (!g->present[r])
            continue;
        dijkstra(g, r, t);
        add_valid_origins(t, r, unknown, vo, mc);
    }
    dijkstra(g, 0, t);
    int first[N], hops[N];
    uint32_t radius = 0;
    first[0] = -1;
    hops[0] = 0;
    for (int k = 1; k < t->settled; k++) {
        int v = t->order[k], p = t->prev[v];
        first[v] = p == 0 ? v : first[p];
        hops[v] = hops[p] + 1;
        if ((uint32_t)hops[v] > radius)
            radius = (uint32_t)hops[v];
    }
    mesh->radius = radius;
    for (int i = 1; i < N; i++) {
        jn_mesh_node_t *x = mesh->nodes[i];
        if (!x)
            continue;
        x->reachable = t->dist[i] != UNREACHED;
        if (x->reachable) {
            x->first_hop = first[i];
            x->hops = (uint32_t)hops[i];
            x->cost = t->dist[i] > UINT32_MAX ? UINT32_MAX : (uint32_t)t->dist[i];
            x->valid_origins = vo[i];
            jn_mesh_bits_set(&x->valid_origins, 0);
            x->mc_origins = mc[i];
            jn_mesh_bits_set(&x->mc_origins, 0);
        }
        report_CT(mesh, x);
    }
out:
    free(g);
    free(t);
    free(vo);
}
