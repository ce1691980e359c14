/*
 * nodes.c — the routers of the mesh as management shows them: router.node
 * rows (1.19's columns) and GET-MGMT-NODES (docs/protocol.md, "Management requests"), both from
 * the agent's foreach_router hook (the shape of jn_mesh_foreach_router_CT).
 * Without the hook — a standalone router — both are empty, as in 1.19.
 *
 * The hook's strings are valid only until the next engine call, so the ids
 * of all routers are copied first (next hops and valid origins name other
 * routers by index), then the rows are produced in a second walk.
 */
#include "mgmt_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FULL_NODE JN_SCHEMA_PREFIX ".router.node"

typedef struct node_ids {
    char *ids[JN_MESH_MAX_ROUTERS];
} node_ids_t;

static bool collect_id(void *arg, const jn_mesh_router_info_t *info)
{
    node_ids_t *t = arg;
    if (info->index > 0 && info->index < JN_MESH_MAX_ROUTERS && !t->ids[info->index])
        t->ids[info->index] = strdup(info->id ? info->id : "");
    return true;
}

static void ids_free(node_ids_t *t)
{
    for (size_t i = 0; i < JN_MESH_MAX_ROUTERS; i++)
        free(t->ids[i]);
}

typedef struct node_walk {
    jn_mgmt_t *agent;
    const jn_mgmt_class_t *cls;
    node_ids_t ids;
    size_t offset, max, seen; /* rows before this one (local row included) */
    jn_mgmt_row_fn fn;
    void *ctx;
    bool go;
    /* the local row's link state: neighbour ids */
    const char *neighbours[JN_MESH_MAX_ROUTERS];
    size_t n_neighbours;
} node_walk_t;

static void put(const jn_mgmt_class_t *cls, jn_mv_t *row, const char *col, jn_mv_t v)
{
    int i = jn_mgmt_class_col_index(cls, col);
    if (i >= 0)
        row[i] = v;
}

static bool collect_neighbour(void *arg, const jn_mesh_router_info_t *info)
{
    node_walk_t *w = arg;
    if (info->link >= 0 && info->index > 0 && info->index < JN_MESH_MAX_ROUTERS &&
        w->ids.ids[info->index])
        w->neighbours[w->n_neighbours++] = w->ids.ids[info->index];
    return true;
}

/* Fill the columns every row has. */
static void node_common(node_walk_t *w, jn_mv_t *row, const char *id, char *ident, size_t ident_cap,
                        char *addr, size_t addr_cap)
{
    size_t n = jn_mgmt_class_ncols(w->cls);
    for (size_t c = 0; c < n; c++)
        row[c] = jn_mv_null();
    snprintf(ident, ident_cap, "router.node/%s", id);
    snprintf(addr, addr_cap, "amqp:/_topo/0/%s", id);
    put(w->cls, row, "name", jn_mv_str(ident));
    put(w->cls, row, "identity", jn_mv_str(ident));
    put(w->cls, row, "type", jn_mv_str(FULL_NODE));
    put(w->cls, row, "id", jn_mv_str(id));
    put(w->cls, row, "protocolVersion", jn_mv_int(JN_MV_LONG, 1));
    put(w->cls, row, "address", jn_mv_str(addr));
}

static bool remote_row(void *arg, const jn_mesh_router_info_t *info)
{
    node_walk_t *w = arg;
    size_t i = w->seen++;
    if (i < w->offset || i - w->offset >= w->max || !w->go)
        return true;
    jn_mv_t row[24];
    char ident[300], addr[300];
    node_common(w, row, info->id ? info->id : "", ident, sizeof ident, addr, sizeof addr);
    const char *origins[JN_MESH_MAX_ROUTERS];
    size_t n_origins = 0;
    for (unsigned b = 1; b < JN_MESH_MAX_ROUTERS; b++)
        if (jn_mesh_bits_has(&info->valid_origins, b) && w->ids.ids[b])
            origins[n_origins++] = w->ids.ids[b];
    const char *next = info->next_hop > 0 && info->next_hop < JN_MESH_MAX_ROUTERS
                           ? w->ids.ids[info->next_hop]
                           : NULL;
    put(w->cls, row, "instance",
        info->instance ? jn_mv_int(JN_MV_LONG, info->instance) : jn_mv_null());
    put(w->cls, row, "linkState",
        (jn_mv_t){.kind = JN_MV_STRLIST, .len = info->peer_count, .v.list = info->peer_ids});
    put(w->cls, row, "nextHop", jn_mv_str(next));
    put(w->cls, row, "validOrigins",
        (jn_mv_t){.kind = JN_MV_STRLIST, .len = n_origins, .v.list = origins});
    put(w->cls, row, "routerLink",
        info->link >= 0 ? jn_mv_int(JN_MV_LONG, info->link) : jn_mv_null());
    put(w->cls, row, "cost", info->reachable ? jn_mv_int(JN_MV_LONG, info->cost) : jn_mv_null());
    put(w->cls, row, "index", jn_mv_int(JN_MV_LONG, info->index));
    w->go = w->fn(w->ctx, row);
    return true;
}

size_t jn_mgmt_rows_node(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                         jn_mgmt_row_fn fn, void *ctx)
{
    if (!agent->cfg.foreach_router)
        return 0;
    node_walk_t *w = calloc(1, sizeof *w);
    if (!w)
        return 0;
    *w = (node_walk_t){
        .agent = agent, .cls = cls, .offset = offset, .max = max, .fn = fn, .ctx = ctx, .go = true};
    agent->cfg.foreach_router(agent->cfg.nodes_ctx, collect_id, &w->ids);
    agent->cfg.foreach_router(agent->cfg.nodes_ctx, collect_neighbour, w);
    if (offset == 0 && max > 0) {
        jn_mv_t row[24];
        char ident[300], addr[300];
        node_common(w, row, agent->cfg.router_id, ident, sizeof ident, addr, sizeof addr);
        put(cls, row, "linkState",
            (jn_mv_t){.kind = JN_MV_STRLIST, .len = w->n_neighbours, .v.list = w->neighbours});
        put(cls, row, "nextHop", jn_mv_str("(self)"));
        put(cls, row, "validOrigins", (jn_mv_t){.kind = JN_MV_EMPTY_LIST});
        put(cls, row, "lastTopoChange", jn_mv_int(JN_MV_LONG, 0));
        put(cls, row, "index", jn_mv_int(JN_MV_LONG, 0));
        w->go = fn(ctx, row);
    }
    w->seen = 1;
    agent->cfg.foreach_router(agent->cfg.nodes_ctx, remote_row, w);
    size_t total = w->seen;
    ids_free(&w->ids);
    free(w);
    return total;
}

typedef struct mgmt_nodes {
    jn_encoder_t *e;
} mgmt_nodes_t;

static bool node_address(void *arg, const jn_mesh_router_info_t *info)
{
    mgmt_nodes_t *m = arg;
    if (!info->reachable || !info->id)
        return true;
    char addr[300];
    snprintf(addr, sizeof addr, "amqp:/_topo/0/%s/$management", info->id);
    jn_enc_cstring(m->e, addr);
    return true;
}

int jn_mgmt_get_mgmt_nodes(jn_mgmt_t *agent, const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    (void)req;
    jn_encoder_t *e = &reply->body;
    jn_enc_list_begin(e);
    if (agent->cfg.foreach_router) {
        char addr[300];
        snprintf(addr, sizeof addr, "amqp:/_topo/0/%s/$management", agent->cfg.router_id);
        jn_enc_cstring(e, addr);
        mgmt_nodes_t m = {e};
        agent->cfg.foreach_router(agent->cfg.nodes_ctx, node_address, &m);
    }
    jn_enc_list_end(e);
    return jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
}
