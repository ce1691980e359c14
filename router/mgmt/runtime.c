/*
 * runtime.c — rows of the entities that are not configuration: the router
 * itself, connections, links and addresses (read from the core through
 * junction/core_view.h), router nodes (through the agent's foreach_router
 * hook), allocator pools (junction/pool.h), log modules (junction/log.h)
 * and the management node.
 *
 * Values follow reference section 7: the AMQP type of each column is the
 * one 1.19 sends (ulong counters, uint capacities, str ids). What the core
 * does not keep is shown as 0 (counters) or null (text), never invented.
 */
#include "mgmt_private.h"

#include <junction/core_view.h>
#include <junction/pool.h>
#include <junction/time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FULL(t) JN_SCHEMA_PREFIX "." t

typedef struct sink {
    jn_mgmt_row_fn fn;
    void *ctx;
    const jn_mgmt_class_t *cls;
} sink_t;

/* Set column col of a row (schema-ordered classes). */
static void put(const jn_mgmt_class_t *cls, jn_mv_t *row, const char *col, jn_mv_t v)
{
    int i = jn_mgmt_class_col_index(cls, col);
    if (i >= 0)
        row[i] = v;
}

static const char *const dist_names[] = {"multicast", "closest", "balanced", "unavailable"};

static const char *dist_name(jn_distribution_t d)
{
    return (unsigned)d < 4 ? dist_names[d] : "unavailable";
}

/* ---- router --------------------------------------------------------------- */

/* VmSize in octets, or 0 when unknown. */
static uint64_t memory_usage(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long pages = 0;
    if (f) {
        if (fscanf(f, "%llu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    long page = sysconf(_SC_PAGESIZE);
    return pages * (uint64_t)(page > 0 ? page : 4096);
}

static bool count_node(void *arg, const jn_mesh_router_info_t *info)
{
    (void)info;
    ++*(size_t *)arg;
    return true;
}

size_t jn_mgmt_rows_router(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                           jn_mgmt_row_fn fn, void *ctx)
{
    if (offset > 0 || max == 0)
        return 1;
    jn_core_stats_t s;
    memset(&s, 0, sizeof s);
    if (agent->cfg.core)
        jn_core_get_stats(agent->cfg.core, &s);
    size_t nodes = 0;
    if (agent->cfg.foreach_router)
        agent->cfg.foreach_router(agent->cfg.nodes_ctx, count_node, &nodes);
    const jn_mgmt_class_t *lr = jn_mgmt_class_find("router.config.linkRoute", NULL);
    const jn_mgmt_class_t *al = jn_mgmt_class_find("router.config.autoLink", NULL);
    int64_t up = (int64_t)time(NULL) - agent->start_time;
    uint64_t mem = memory_usage();
    jn_mv_t r[] = {jn_mv_str(agent->cfg.router_id),
                   jn_mv_str("1"),
                   jn_mv_str(agent->cfg.router_id),
                   jn_mv_str(FULL("router")),
                   jn_mv_str(agent->cfg.mode),
                   jn_mv_str("0"),
                   jn_mv_str(agent->cfg.version),
                   jn_mv_str(agent->cfg.metadata),
                   jn_mv_ulong(s.addresses),
                   jn_mv_ulong(s.links),
                   jn_mv_ulong(nodes),
                   jn_mv_ulong(jn_mgmt_store_count(agent, lr)),
                   jn_mv_ulong(jn_mgmt_store_count(agent, al)),
                   jn_mv_ulong(s.connections),
                   jn_mv_ulong(s.deliveries_presettled),
                   jn_mv_ulong(s.deliveries_dropped), /* droppedPresettledDeliveries */
                   jn_mv_ulong(s.deliveries_accepted),
                   jn_mv_ulong(s.deliveries_rejected),
                   jn_mv_ulong(s.deliveries_released),
                   jn_mv_ulong(s.deliveries_modified),
                   jn_mv_ulong(0),
                   jn_mv_ulong(0),
                   jn_mv_ulong(0), /* delayed 1 s, 10 s, stuck */
                   jn_mv_ulong(s.deliveries_ingress),
                   jn_mv_ulong(s.deliveries_egress),
                   jn_mv_ulong(0),
                   jn_mv_ulong(0),
                   jn_mv_ulong(0),
                   jn_mv_ulong(0), /* transit, route
                                     containers, fallback */
                   jn_mv_uint(0),
                   jn_mv_uint((uint64_t)(up > 0 ? up : 0)),
                   mem ? jn_mv_ulong(mem) : jn_mv_null(),
                   jn_mv_int(JN_MV_INT, agent->cfg.worker_threads)};
    JN_CHECK(sizeof r / sizeof r[0] == jn_mgmt_class_ncols(cls));
    fn(ctx, r);
    return 1;
}

/* ---- connections ----------------------------------------------------------- */

static bool conn_row(void *arg, const jn_view_conn_t *v)
{
    sink_t *k = arg;
    char name[360], id[24];
    int64_t up = v->opened_us > 0 ? (jn_time_wall_us() - v->opened_us) / 1000000 : 0;
    snprintf(name, sizeof name, "connection/%s", v->host);
    snprintf(id, sizeof id, "%" PRIu64, v->id);
    jn_mv_t r[] = {jn_mv_str(name),
                   jn_mv_str(id),
                   jn_mv_str(v->host),
                   jn_mv_str(v->inter_router ? "inter-router" : "normal"),
                   jn_mv_str("amqp"),
                   jn_mv_str(v->incoming ? "in" : "out"),
                   v->container[0] ? jn_mv_str(v->container) : jn_mv_null(),
                   jn_mv_null(), /* sasl: not known to the core */
                   jn_mv_bool(false),
                   jn_mv_null(), /* user */
                   jn_mv_bool(false),
                   jn_mv_null(),
                   jn_mv_null(),
                   v->properties_len ? (jn_mv_t){.kind = JN_MV_RAW,
                                                 .len = v->properties_len,
                                                 .v.raw = v->properties}
                                     : (jn_mv_t){.kind = JN_MV_EMPTY_MAP},
                   jn_mv_int(JN_MV_LONG, 0),
                   jn_mv_null(), /* tenant */
                   jn_mv_str(FULL("connection")),
                   jn_mv_bool(false),
                   jn_mv_bool(true),
                   jn_mv_bool(true),
                   jn_mv_str("enabled"),
                   jn_mv_str("up"),
                   jn_mv_uint((uint64_t)(up > 0 ? up : 0)),
                   jn_mv_null(), /* lastDlvSeconds: not kept */
                   jn_mv_bool(false)};
    return k->fn(k->ctx, r);
}

size_t jn_mgmt_rows_conn(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                         jn_mgmt_row_fn fn, void *ctx)
{
    sink_t k = {fn, ctx, cls};
    return agent->cfg.core ? jn_core_view_conns_CT(agent->cfg.core, offset, max, conn_row, &k) : 0;
}

/* ---- links ----------------------------------------------------------------- */

static bool link_row(void *arg, const jn_view_link_t *v)
{
    sink_t *k = arg;
    char id[24], conn[24], peer[24];
    snprintf(id, sizeof id, "%" PRIu64, v->id);
    snprintf(conn, sizeof conn, "%" PRIu64, v->conn_id);
    snprintf(peer, sizeof peer, "%" PRIu64, v->peer);
    jn_mv_t zero = jn_mv_ulong(0);
    jn_mv_t r[] = {jn_mv_str(v->name),
                   jn_mv_str(id),
                   jn_mv_str(FULL("router.link")),
                   jn_mv_str(v->name),
                   jn_mv_str(v->type == JN_LINK_CONTROL ? "router-control"
                             : v->type == JN_LINK_DATA  ? "inter-router"
                                                        : "endpoint"),
                   jn_mv_str(v->dir == JN_LINK_INCOMING ? "in" : "out"),
                   v->owning_addr ? jn_mv_strn(v->owning_addr, v->owning_addr_len) : jn_mv_null(),
                   jn_mv_uint(v->capacity),
                   v->peer ? jn_mv_str(peer) : jn_mv_null(), /* link-routed: the other end */
                   jn_mv_ulong(v->undelivered),
                   jn_mv_ulong(v->unsettled),
                   jn_mv_ulong(v->deliveries),
                   jn_mv_str(conn),
                   jn_mv_str("enabled"),
                   jn_mv_str("up"),
                   jn_mv_ulong(v->presettled ? v->deliveries : 0),
                   jn_mv_ulong(v->dropped), /* droppedPresettledCount */
                   jn_mv_ulong(v->accepted),
                   jn_mv_ulong(v->rejected),
                   jn_mv_ulong(v->released),
                   jn_mv_ulong(v->modified),
                   zero, /* delayed 1 s, 10 s, stuck: not kept */
                   zero,
                   zero,
                   jn_mv_null(), /* ingressHistogram */
                   jn_mv_uint(4),
                   jn_mv_uint(0), /* settleRate */
                   jn_mv_uint(v->credit_available),
                   jn_mv_uint(0)};
    return k->fn(k->ctx, r);
}

size_t jn_mgmt_rows_link(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                         jn_mgmt_row_fn fn, void *ctx)
{
    sink_t k = {fn, ctx, cls};
    return agent->cfg.core ? jn_core_view_links_CT(agent->cfg.core, offset, max, link_row, &k) : 0;
}

/* ---- addresses ------------------------------------------------------------- */

static bool addr_row(void *arg, const jn_view_addr_t *v)
{
    sink_t *k = arg;
    jn_mv_t key = jn_mv_strn(v->key, v->key_len), zero = jn_mv_ulong(0);
    jn_mv_t r[] = {
        key,
        key,
        jn_mv_str(FULL("router.address")),
        key,
        jn_mv_str(dist_name(v->distribution)),
        jn_mv_uint(v->in_process),
        jn_mv_uint(v->consumers),
        jn_mv_uint(v->remote),
        jn_mv_uint(0),
        (jn_mv_t){.kind = JN_MV_STRLIST, .len = v->n_remote_hosts, .v.list = v->remote_hosts},
        jn_mv_ulong(v->ingress),
        jn_mv_ulong(v->egress),
        jn_mv_ulong(v->transit),
        jn_mv_ulong(v->to_container),
        jn_mv_ulong(v->from_container),
        zero, /* route-container counters: no link routes */
        zero,
        jn_mv_null(),
        jn_mv_int(JN_MV_LONG, 0),
        jn_mv_int(JN_MV_INT, -1),
        zero};
    return k->fn(k->ctx, r);
}

size_t jn_mgmt_rows_addr(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                         jn_mgmt_row_fn fn, void *ctx)
{
    sink_t k = {fn, ctx, cls};
    return agent->cfg.core ? jn_core_view_addrs_CT(agent->cfg.core, offset, max, addr_row, &k) : 0;
}

/* ---- allocator ------------------------------------------------------------- */

typedef struct pools {
    jn_pool_stats_t s[JN_POOL_MAX];
    size_t n;
} pools_t;

static void pool_collect(const jn_pool_stats_t *stats, void *ctx)
{
    pools_t *p = ctx;
    if (p->n < JN_POOL_MAX)
        p->s[p->n++] = *stats;
}

size_t jn_mgmt_rows_alloc(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                          jn_mgmt_row_fn fn, void *ctx)
{
    (void)agent;
    pools_t *p = calloc(1, sizeof *p);
    if (!p)
        return 0;
    jn_pool_foreach(pool_collect, p);
    size_t n = jn_mgmt_class_ncols(cls);
    jn_mv_t row[32];
    JN_CHECK(n <= 32);
    for (size_t i = offset; i < p->n && i - offset < max; i++) {
        const jn_pool_stats_t *s = &p->s[i];
        char ident[160];
        snprintf(ident, sizeof ident, "allocator/%s", s->type_name);
        for (size_t c = 0; c < n; c++)
            row[c] = jn_mv_null();
        put(cls, row, "name", jn_mv_str(ident));
        put(cls, row, "identity", jn_mv_str(ident));
        put(cls, row, "type", jn_mv_str(FULL("allocator")));
        put(cls, row, "typeName", jn_mv_str(s->type_name));
        put(cls, row, "typeSize", jn_mv_int(JN_MV_LONG, (int64_t)s->object_size));
        put(cls, row, "transferBatchSize", jn_mv_int(JN_MV_LONG, (int64_t)s->batch_size));
        put(cls, row, "localFreeListMax", jn_mv_int(JN_MV_LONG, 2 * (int64_t)s->batch_size));
        put(cls, row, "globalFreeListMax", jn_mv_int(JN_MV_LONG, 0));
        put(cls, row, "totalAllocFromHeap", jn_mv_int(JN_MV_LONG, (int64_t)s->total_allocated));
        put(cls, row, "totalFreeToHeap", jn_mv_int(JN_MV_LONG, 0));
        put(cls, row, "heldByThreads", jn_mv_int(JN_MV_LONG, (int64_t)s->in_free_lists));
        put(cls, row, "batchesRebalancedToThreads", jn_mv_int(JN_MV_LONG, 0));
        put(cls, row, "batchesRebalancedToGlobal", jn_mv_int(JN_MV_LONG, 0));
        if (!fn(ctx, row))
            break;
    }
    size_t total = p->n;
    free(p);
    return total;
}

/* ---- log modules ------------------------------------------------------------ */

size_t jn_mgmt_rows_log(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                        jn_mgmt_row_fn fn, void *ctx)
{
    (void)agent;
    size_t n = jn_mgmt_class_ncols(cls);
    jn_mv_t row[16];
    JN_CHECK(n <= 16);
    for (size_t m = offset; m < JN_LOG_SCHEMA_MODULE_COUNT && m - offset < max; m++) {
        jn_log_config_t lc;
        if (jn_log_get_config((jn_log_module_t)m, &lc) != 0)
            continue;
        char ident[64], enable[40];
        const char *module = jn_log_module_name((jn_log_module_t)m);
        snprintf(ident, sizeof ident, "log/%s", module);
        if (!lc.enable_set || jn_log_mask_format(lc.mask, enable, sizeof enable) < 0)
            snprintf(enable, sizeof enable, "default");
        for (size_t c = 0; c < n; c++)
            row[c] = jn_mv_null();
        put(cls, row, "name", jn_mv_str(ident));
        put(cls, row, "identity", jn_mv_str(ident));
        put(cls, row, "type", jn_mv_str(FULL("log")));
        put(cls, row, "module", jn_mv_str(module));
        put(cls, row, "enable", jn_mv_str(enable));
        put(cls, row, "includeTimestamp", jn_mv_bool(lc.include_timestamp));
        put(cls, row, "includeSource", jn_mv_bool(lc.include_source));
        put(cls, row, "outputFile", lc.output_set ? jn_mv_str(lc.output) : jn_mv_null());
        if (!fn(ctx, row))
            break;
    }
    return JN_LOG_SCHEMA_MODULE_COUNT;
}

/* ---- the management node ------------------------------------------------------ */

size_t jn_mgmt_rows_self(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                         jn_mgmt_row_fn fn, void *ctx)
{
    (void)agent;
    jn_mv_t row[8];
    size_t n = jn_mgmt_class_ncols(cls);
    JN_CHECK(n <= 8);
    if (offset == 0 && max > 0) {
        for (size_t c = 0; c < n; c++)
            row[c] = jn_mv_null();
        put(cls, row, "name", jn_mv_str("self"));
        put(cls, row, "identity", jn_mv_str("self"));
        put(cls, row, "type", jn_mv_str(FULL("management")));
        fn(ctx, row);
    }
    return 1;
}
