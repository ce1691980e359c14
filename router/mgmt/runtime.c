/*
 * runtime.c — rows of the entities that are not configuration: the router
 * itself, connections, links and addresses (read from the core through
 * junction/core_view.h), router nodes (through the agent's foreach_router
 * hook), allocator pools (junction/pool.h), log modules (junction/log.h)
 * and the management node.
 *
 * Values follow 1.19 (docs/protocol.md, "Management requests"): the AMQP type of each column is the
 * one 1.19 sends (ulong counters, uint capacities, str ids). What the core
 * does not keep is shown as 0 (counters) or null (text), never invented.
 *
 * The columns and their order are the schema's (router/config/schema.json);
 * each row is filled by column name, row[JN_COL_<TYPE>_<COLUMN>], from the
 * generated schema_ids.h, and a column no code fills here is null.
 */
#include "mgmt_private.h"
#include "store.h"

#include <junction/core_view.h>
#include <junction/encoder.h>
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
} sink_t;

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

void jn_mgmt_router_figures(jn_mgmt_t *agent, jn_mgmt_figures_t *out)
{
    memset(out, 0, sizeof *out);
    if (agent->cfg.core)
        jn_core_get_stats(agent->cfg.core, &out->core);
    if (agent->cfg.foreach_router)
        agent->cfg.foreach_router(agent->cfg.nodes_ctx, count_node, &out->nodes);
    out->link_routes =
        jn_mgmt_store_count(agent, jn_mgmt_class_find("router.config.linkRoute", NULL));
    out->auto_links =
        jn_mgmt_store_count(agent, jn_mgmt_class_find("router.config.autoLink", NULL));
}

size_t jn_mgmt_rows_router(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                           jn_mgmt_row_fn fn, void *ctx)
{
    if (offset > 0 || max == 0)
        return 1;
    jn_mgmt_figures_t f;
    jn_mgmt_router_figures(agent, &f);
    const jn_core_stats_t s = f.core;
    int64_t up = (int64_t)time(NULL) - agent->start_time;
    uint64_t mem = memory_usage();
    jn_mv_t r[JN_COLS_ROUTER] = {
        [JN_COL_ROUTER_NAME] = jn_mv_str(agent->cfg.router_id),
        [JN_COL_ROUTER_IDENTITY] = jn_mv_str("1"),
        [JN_COL_ROUTER_ID] = jn_mv_str(agent->cfg.router_id),
        [JN_COL_ROUTER_TYPE] = jn_mv_str(FULL("router")),
        [JN_COL_ROUTER_MODE] = jn_mv_str(agent->cfg.mode),
        [JN_COL_ROUTER_AREA] = jn_mv_str("0"),
        [JN_COL_ROUTER_VERSION] = jn_mv_str(agent->cfg.version),
        [JN_COL_ROUTER_METADATA] = jn_mv_str(agent->cfg.metadata),
        [JN_COL_ROUTER_ADDR_COUNT] = jn_mv_ulong(s.addresses),
        [JN_COL_ROUTER_LINK_COUNT] = jn_mv_ulong(s.links),
        [JN_COL_ROUTER_NODE_COUNT] = jn_mv_ulong(f.nodes),
        [JN_COL_ROUTER_LINK_ROUTE_COUNT] = jn_mv_ulong(f.link_routes),
        [JN_COL_ROUTER_AUTO_LINK_COUNT] = jn_mv_ulong(f.auto_links),
        [JN_COL_ROUTER_CONNECTION_COUNT] = jn_mv_ulong(s.connections),
        [JN_COL_ROUTER_PRESETTLED_DELIVERIES] = jn_mv_ulong(s.deliveries_presettled),
        [JN_COL_ROUTER_DROPPED_PRESETTLED_DELIVERIES] = jn_mv_ulong(s.deliveries_dropped),
        [JN_COL_ROUTER_ACCEPTED_DELIVERIES] = jn_mv_ulong(s.deliveries_accepted),
        [JN_COL_ROUTER_REJECTED_DELIVERIES] = jn_mv_ulong(s.deliveries_rejected),
        [JN_COL_ROUTER_RELEASED_DELIVERIES] = jn_mv_ulong(s.deliveries_released),
        [JN_COL_ROUTER_MODIFIED_DELIVERIES] = jn_mv_ulong(s.deliveries_modified),
        [JN_COL_ROUTER_DELIVERIES_DELAYED1_SEC] = jn_mv_ulong(s.deliveries_delayed_1sec),
        [JN_COL_ROUTER_DELIVERIES_DELAYED10_SEC] = jn_mv_ulong(s.deliveries_delayed_10sec),
        [JN_COL_ROUTER_DELIVERIES_STUCK] = jn_mv_ulong(s.deliveries_stuck),
        [JN_COL_ROUTER_DELIVERIES_INGRESS] = jn_mv_ulong(s.deliveries_ingress),
        [JN_COL_ROUTER_DELIVERIES_EGRESS] = jn_mv_ulong(s.deliveries_egress),
        [JN_COL_ROUTER_DELIVERIES_TRANSIT] = jn_mv_ulong(s.deliveries_transit),
        [JN_COL_ROUTER_DELIVERIES_INGRESS_ROUTE_CONTAINER] =
            jn_mv_ulong(s.deliveries_ingress_route_container),
        [JN_COL_ROUTER_DELIVERIES_EGRESS_ROUTE_CONTAINER] =
            jn_mv_ulong(s.deliveries_egress_route_container),
        [JN_COL_ROUTER_DELIVERIES_REDIRECTED_TO_FALLBACK] =
            jn_mv_ulong(s.deliveries_fallback),
        [JN_COL_ROUTER_LINKS_BLOCKED] = jn_mv_uint((uint32_t)s.links_blocked),
        [JN_COL_ROUTER_UPTIME_SECONDS] = jn_mv_uint((uint64_t)(up > 0 ? up : 0)),
        [JN_COL_ROUTER_MEMORY_USAGE] = mem ? jn_mv_ulong(mem) : jn_mv_null(),
        [JN_COL_ROUTER_WORKER_THREADS] = jn_mv_int(JN_MV_INT, agent->cfg.worker_threads)};
    JN_CHECK(jn_mgmt_class_ncols(cls) == JN_COLS_ROUTER);
    fn(ctx, r);
    return 1;
}

/* ---- connections ----------------------------------------------------------- */

/* Whether connection id's frames are traced: management's choice for
 * it, else the PROTOCOL level. */
static bool conn_traced(uint64_t id)
{
    int choice = jn_log_conn_trace_gen() ? jn_log_conn_traced(id) : -1;
    return choice < 0 ? jn_log_enabled(JN_LOG_MOD_PROTOCOL, JN_LOG_TRACE) : choice == 1;
}

static bool conn_row(void *arg, const jn_view_conn_t *v)
{
    sink_t *k = arg;
    char name[360], id[24];
    int64_t up = v->opened_us > 0 ? (jn_time_wall_us() - v->opened_us) / 1000000 : 0;
    snprintf(name, sizeof name, "connection/%s", v->host);
    snprintf(id, sizeof id, "%" PRIu64, v->id);
    jn_mv_t r[JN_COLS_CONNECTION] = {
        [JN_COL_CONNECTION_NAME] = jn_mv_str(name),
        [JN_COL_CONNECTION_IDENTITY] = jn_mv_str(id),
        [JN_COL_CONNECTION_HOST] = jn_mv_str(v->host),
        [JN_COL_CONNECTION_ROLE] = jn_mv_str(v->inter_router      ? "inter-router"
                                              : v->edge            ? "edge"
                                              : v->route_container ? "route-container"
                                                                   : "normal"),
        [JN_COL_CONNECTION_PROTOCOL] = jn_mv_str("amqp"),
        [JN_COL_CONNECTION_DIR] = jn_mv_str(v->incoming ? "in" : "out"),
        [JN_COL_CONNECTION_CONTAINER] = v->container[0] ? jn_mv_str(v->container) : jn_mv_null(),
        [JN_COL_CONNECTION_SASL] = v->sasl_mechanism ? jn_mv_str(v->sasl_mechanism) : jn_mv_null(),
        [JN_COL_CONNECTION_IS_AUTHENTICATED] = jn_mv_bool(v->authenticated),
        [JN_COL_CONNECTION_USER] = v->user ? jn_mv_str(v->user) : jn_mv_null(),
        [JN_COL_CONNECTION_IS_ENCRYPTED] = jn_mv_bool(v->encrypted),
        [JN_COL_CONNECTION_SSL_PROTO] = v->ssl_proto ? jn_mv_str(v->ssl_proto) : jn_mv_null(),
        [JN_COL_CONNECTION_SSL_CIPHER] = v->ssl_cipher ? jn_mv_str(v->ssl_cipher) : jn_mv_null(),
        [JN_COL_CONNECTION_PROPERTIES] =
            v->properties_len
                ? (jn_mv_t){.kind = JN_MV_RAW, .len = v->properties_len, .v.raw = v->properties}
                : (jn_mv_t){.kind = JN_MV_EMPTY_MAP},
        [JN_COL_CONNECTION_SSL_SSF] = jn_mv_int(JN_MV_LONG, v->ssl_ssf),
        [JN_COL_CONNECTION_TENANT] = v->tenant ? jn_mv_str(v->tenant) : jn_mv_null(),
        [JN_COL_CONNECTION_TYPE] = jn_mv_str(FULL("connection")),
        [JN_COL_CONNECTION_SSL] = jn_mv_bool(v->encrypted),
        [JN_COL_CONNECTION_OPENED] = jn_mv_bool(true),
        [JN_COL_CONNECTION_ACTIVE] = jn_mv_bool(v->active),
        [JN_COL_CONNECTION_ADMIN_STATUS] = jn_mv_str(v->admin_deleted ? "deleted" : "enabled"),
        [JN_COL_CONNECTION_OPER_STATUS] = jn_mv_str("up"),
        [JN_COL_CONNECTION_UPTIME_SECONDS] = jn_mv_uint((uint64_t)(up > 0 ? up : 0)),
        [JN_COL_CONNECTION_LAST_DLV_SECONDS] =
            v->last_dlv_s >= 0 ? jn_mv_uint((uint64_t)v->last_dlv_s) : jn_mv_null(),
        [JN_COL_CONNECTION_ENABLE_PROTOCOL_TRACE] = jn_mv_bool(conn_traced(v->id))};
    return k->fn(k->ctx, r);
}

size_t jn_mgmt_rows_conn(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                         jn_mgmt_row_fn fn, void *ctx)
{
    sink_t k = {fn, ctx};
    JN_CHECK(jn_mgmt_class_ncols(cls) == JN_COLS_CONNECTION);
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
    /* a link-routed link's terminus address as a mobile key, as 1.19 shows it */
    char *routed = NULL;
    if (v->owning_routed && (routed = malloc(v->owning_addr_len + 3)) != NULL) {
        memcpy(routed, "M0", 2);
        memcpy(routed + 2, v->owning_addr, v->owning_addr_len);
        routed[v->owning_addr_len + 2] = '\0';
    }
    jn_mv_t r[JN_COLS_ROUTER_LINK] = {
        [JN_COL_ROUTER_LINK_NAME] = jn_mv_str(v->name),
        [JN_COL_ROUTER_LINK_IDENTITY] = jn_mv_str(id),
        [JN_COL_ROUTER_LINK_TYPE] = jn_mv_str(FULL("router.link")),
        [JN_COL_ROUTER_LINK_LINK_NAME] = jn_mv_str(v->name),
        [JN_COL_ROUTER_LINK_LINK_TYPE] =
            jn_mv_str(v->type == JN_LINK_CONTROL         ? "router-control"
                      : v->type == JN_LINK_DATA          ? "inter-router"
                      : v->type == JN_LINK_EDGE_DOWNLINK ? "edge-downlink" /* as 1.19 */
                                                         : "endpoint"),
        [JN_COL_ROUTER_LINK_LINK_DIR] = jn_mv_str(v->dir == JN_LINK_INCOMING ? "in" : "out"),
        [JN_COL_ROUTER_LINK_OWNING_ADDR] =
            routed          ? jn_mv_str(routed)
            : v->owning_addr ? jn_mv_strn(v->owning_addr, v->owning_addr_len)
                             : jn_mv_null(),
        [JN_COL_ROUTER_LINK_CAPACITY] = jn_mv_uint(v->capacity),
        [JN_COL_ROUTER_LINK_PEER] = v->peer ? jn_mv_str(peer) : jn_mv_null(), /* link-routed: the other end */
        [JN_COL_ROUTER_LINK_UNDELIVERED_COUNT] = jn_mv_ulong(v->undelivered),
        [JN_COL_ROUTER_LINK_UNSETTLED_COUNT] = jn_mv_ulong(v->unsettled),
        [JN_COL_ROUTER_LINK_DELIVERY_COUNT] = jn_mv_ulong(v->deliveries),
        [JN_COL_ROUTER_LINK_CONNECTION_ID] = jn_mv_str(conn),
        [JN_COL_ROUTER_LINK_ADMIN_STATUS] = jn_mv_str("enabled"),
        [JN_COL_ROUTER_LINK_OPER_STATUS] = jn_mv_str("up"),
        [JN_COL_ROUTER_LINK_PRESETTLED_COUNT] = jn_mv_ulong(v->presettled ? v->deliveries : 0),
        [JN_COL_ROUTER_LINK_DROPPED_PRESETTLED_COUNT] = jn_mv_ulong(v->dropped),
        [JN_COL_ROUTER_LINK_ACCEPTED_COUNT] = jn_mv_ulong(v->accepted),
        [JN_COL_ROUTER_LINK_REJECTED_COUNT] = jn_mv_ulong(v->rejected),
        [JN_COL_ROUTER_LINK_RELEASED_COUNT] = jn_mv_ulong(v->released),
        [JN_COL_ROUTER_LINK_MODIFIED_COUNT] = jn_mv_ulong(v->modified),
        [JN_COL_ROUTER_LINK_DELIVERIES_DELAYED1_SEC] = jn_mv_ulong(v->delayed1),
        [JN_COL_ROUTER_LINK_DELIVERIES_DELAYED10_SEC] = jn_mv_ulong(v->delayed10),
        [JN_COL_ROUTER_LINK_DELIVERIES_STUCK] = jn_mv_ulong(v->stuck),
        [JN_COL_ROUTER_LINK_INGRESS_HISTOGRAM] = jn_mv_null(),
        [JN_COL_ROUTER_LINK_PRIORITY] = jn_mv_uint((uint64_t)v->priority),
        [JN_COL_ROUTER_LINK_SETTLE_RATE] = jn_mv_uint(v->settle_rate),
        [JN_COL_ROUTER_LINK_CREDIT_AVAILABLE] = jn_mv_uint(v->credit_available),
        [JN_COL_ROUTER_LINK_ZERO_CREDIT_SECONDS] = jn_mv_uint(v->zero_credit_seconds)};
    bool more = k->fn(k->ctx, r);
    free(routed);
    return more;
}

size_t jn_mgmt_rows_link(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                         jn_mgmt_row_fn fn, void *ctx)
{
    sink_t k = {fn, ctx};
    JN_CHECK(jn_mgmt_class_ncols(cls) == JN_COLS_ROUTER_LINK);
    return agent->cfg.core ? jn_core_view_links_CT(agent->cfg.core, offset, max, link_row, &k) : 0;
}

/* ---- addresses ------------------------------------------------------------- */

static bool addr_row(void *arg, const jn_view_addr_t *v)
{
    sink_t *k = arg;
    jn_mv_t key = jn_mv_strn(v->key, v->key_len), zero = jn_mv_ulong(0);
    jn_mv_t r[JN_COLS_ROUTER_ADDRESS] = {
        [JN_COL_ROUTER_ADDRESS_NAME] = key,
        [JN_COL_ROUTER_ADDRESS_IDENTITY] = key,
        [JN_COL_ROUTER_ADDRESS_TYPE] = jn_mv_str(FULL("router.address")),
        [JN_COL_ROUTER_ADDRESS_KEY] = key,
        [JN_COL_ROUTER_ADDRESS_DISTRIBUTION] =
            jn_mv_str(v->link_route ? "linkBalanced" : dist_name(v->distribution)),
        [JN_COL_ROUTER_ADDRESS_IN_PROCESS] = jn_mv_uint(v->in_process),
        [JN_COL_ROUTER_ADDRESS_SUBSCRIBER_COUNT] = jn_mv_uint(v->consumers),
        [JN_COL_ROUTER_ADDRESS_REMOTE_COUNT] = jn_mv_uint(v->remote),
        [JN_COL_ROUTER_ADDRESS_CONTAINER_COUNT] = jn_mv_uint(v->containers),
        [JN_COL_ROUTER_ADDRESS_REMOTE_HOST_ROUTERS] =
            (jn_mv_t){.kind = JN_MV_STRLIST, .len = v->n_remote_hosts, .v.list = v->remote_hosts},
        [JN_COL_ROUTER_ADDRESS_DELIVERIES_INGRESS] = jn_mv_ulong(v->ingress),
        [JN_COL_ROUTER_ADDRESS_DELIVERIES_EGRESS] = jn_mv_ulong(v->egress),
        [JN_COL_ROUTER_ADDRESS_DELIVERIES_TRANSIT] = jn_mv_ulong(v->transit),
        [JN_COL_ROUTER_ADDRESS_DELIVERIES_TO_CONTAINER] = jn_mv_ulong(v->to_container),
        [JN_COL_ROUTER_ADDRESS_DELIVERIES_FROM_CONTAINER] = jn_mv_ulong(v->from_container),
        /* route-container counters: no link routes */
        [JN_COL_ROUTER_ADDRESS_DELIVERIES_EGRESS_ROUTE_CONTAINER] = zero,
        [JN_COL_ROUTER_ADDRESS_DELIVERIES_INGRESS_ROUTE_CONTAINER] = zero,
        [JN_COL_ROUTER_ADDRESS_TRANSIT_OUTSTANDING] = jn_mv_null(),
        [JN_COL_ROUTER_ADDRESS_TRACKED_DELIVERIES] = jn_mv_int(JN_MV_LONG, 0),
        [JN_COL_ROUTER_ADDRESS_PRIORITY] = jn_mv_int(JN_MV_INT, v->priority),
        [JN_COL_ROUTER_ADDRESS_DELIVERIES_REDIRECTED_TO_FALLBACK] = jn_mv_ulong(v->redirected)};
    return k->fn(k->ctx, r);
}

size_t jn_mgmt_rows_addr(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                         jn_mgmt_row_fn fn, void *ctx)
{
    sink_t k = {fn, ctx};
    JN_CHECK(jn_mgmt_class_ncols(cls) == JN_COLS_ROUTER_ADDRESS);
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
    JN_CHECK(jn_mgmt_class_ncols(cls) == JN_COLS_ALLOCATOR);
    for (size_t i = offset; i < p->n && i - offset < max; i++) {
        const jn_pool_stats_t *s = &p->s[i];
        char ident[160];
        snprintf(ident, sizeof ident, "allocator/%s", s->type_name);
        jn_mv_t row[JN_COLS_ALLOCATOR] = {
            [JN_COL_ALLOCATOR_NAME] = jn_mv_str(ident),
            [JN_COL_ALLOCATOR_IDENTITY] = jn_mv_str(ident),
            [JN_COL_ALLOCATOR_TYPE] = jn_mv_str(FULL("allocator")),
            [JN_COL_ALLOCATOR_TYPE_NAME] = jn_mv_str(s->type_name),
            [JN_COL_ALLOCATOR_TYPE_SIZE] = jn_mv_int(JN_MV_LONG, (int64_t)s->object_size),
            [JN_COL_ALLOCATOR_TRANSFER_BATCH_SIZE] = jn_mv_int(JN_MV_LONG, (int64_t)s->batch_size),
            [JN_COL_ALLOCATOR_LOCAL_FREE_LIST_MAX] =
                jn_mv_int(JN_MV_LONG, 2 * (int64_t)s->batch_size),
            [JN_COL_ALLOCATOR_GLOBAL_FREE_LIST_MAX] = jn_mv_int(JN_MV_LONG, (int64_t)s->shared_max),
            /* ever taken from and given back to the heap (held now: the
             * difference) */
            [JN_COL_ALLOCATOR_TOTAL_ALLOC_FROM_HEAP] =
                jn_mv_int(JN_MV_LONG, (int64_t)(s->total_allocated + s->freed_to_heap)),
            [JN_COL_ALLOCATOR_TOTAL_FREE_TO_HEAP] = jn_mv_int(JN_MV_LONG, (int64_t)s->freed_to_heap),
            [JN_COL_ALLOCATOR_HELD_BY_THREADS] = jn_mv_int(JN_MV_LONG, (int64_t)s->in_free_lists),
            [JN_COL_ALLOCATOR_BATCHES_REBALANCED_TO_THREADS] = jn_mv_int(JN_MV_LONG, 0),
            [JN_COL_ALLOCATOR_BATCHES_REBALANCED_TO_GLOBAL] = jn_mv_int(JN_MV_LONG, 0)};
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
    JN_CHECK(jn_mgmt_class_ncols(cls) == JN_COLS_LOG);
    for (size_t m = offset; m < JN_LOG_SCHEMA_MODULE_COUNT && m - offset < max; m++) {
        jn_log_config_t lc;
        if (jn_log_get_config((jn_log_module_t)m, &lc) != 0)
            continue;
        char ident[64], enable[40];
        const char *module = jn_log_module_name((jn_log_module_t)m);
        snprintf(ident, sizeof ident, "log/%s", module);
        if (!lc.enable_set || jn_log_mask_format(lc.mask, enable, sizeof enable) < 0)
            snprintf(enable, sizeof enable, "default");
        jn_mv_t row[JN_COLS_LOG] = {
            [JN_COL_LOG_NAME] = jn_mv_str(ident),
            [JN_COL_LOG_IDENTITY] = jn_mv_str(ident),
            [JN_COL_LOG_TYPE] = jn_mv_str(FULL("log")),
            [JN_COL_LOG_MODULE] = jn_mv_str(module),
            [JN_COL_LOG_ENABLE] = jn_mv_str(enable),
            [JN_COL_LOG_INCLUDE_TIMESTAMP] = jn_mv_bool(lc.include_timestamp),
            [JN_COL_LOG_INCLUDE_SOURCE] = jn_mv_bool(lc.include_source),
            [JN_COL_LOG_OUTPUT_FILE] = lc.output_set ? jn_mv_str(lc.output) : jn_mv_null()};
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
    JN_CHECK(jn_mgmt_class_ncols(cls) == JN_COLS_MANAGEMENT);
    if (offset == 0 && max > 0) {
        jn_mv_t row[JN_COLS_MANAGEMENT] = {[JN_COL_MANAGEMENT_NAME] = jn_mv_str("self"),
                                           [JN_COL_MANAGEMENT_IDENTITY] = jn_mv_str("self"),
                                           [JN_COL_MANAGEMENT_TYPE] =
                                               jn_mv_str(FULL("management"))};
        fn(ctx, row);
    }
    return 1;
}

/* The policy singleton (1.19's "policy/None" row): its settings and the
 * I/O layer's figures (docs/design.md "Policy"; connectionsDenied counts
 * vhost denials too, linksDenied the attaches refused by link rules). */
size_t jn_mgmt_rows_policy(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset,
                           size_t max, jn_mgmt_row_fn fn, void *ctx)
{
    JN_CHECK(jn_mgmt_class_ncols(cls) == JN_COLS_POLICY);
    if (offset == 0 && max > 0) {
        jn_policy_conn_stats_t st = {0};
        if (agent->cfg.policy_stats)
            agent->cfg.policy_stats(agent->cfg.io_ctx, &st);
        jn_mv_t row[JN_COLS_POLICY] = {
            [JN_COL_POLICY_NAME] = jn_mv_str("policy/None"),
            [JN_COL_POLICY_IDENTITY] = jn_mv_str("policy/None"),
            [JN_COL_POLICY_TYPE] = jn_mv_str(FULL("policy")),
            [JN_COL_POLICY_MAX_CONNECTIONS] = jn_mv_int(JN_MV_LONG, agent->cfg.max_connections),
            [JN_COL_POLICY_MAX_MESSAGE_SIZE] =
                jn_mv_int(JN_MV_LONG, (int64_t)agent->cfg.max_message_size),
            [JN_COL_POLICY_ENABLE_VHOST_POLICY] = jn_mv_bool(agent->cfg.enable_vhost_policy),
            [JN_COL_POLICY_ENABLE_VHOST_NAME_PATTERNS] =
                jn_mv_bool(agent->cfg.enable_vhost_name_patterns),
            [JN_COL_POLICY_POLICY_DIR] = jn_mv_str(agent->cfg.policy_dir),
            [JN_COL_POLICY_DEFAULT_VHOST] = jn_mv_str(agent->cfg.default_vhost),
            [JN_COL_POLICY_CONNECTIONS_PROCESSED] = jn_mv_int(JN_MV_LONG, (int64_t)st.processed),
            [JN_COL_POLICY_CONNECTIONS_DENIED] = jn_mv_int(JN_MV_LONG, (int64_t)st.denied),
            [JN_COL_POLICY_CONNECTIONS_CURRENT] = jn_mv_int(JN_MV_LONG, (int64_t)st.current),
            [JN_COL_POLICY_LINKS_DENIED] = jn_mv_int(JN_MV_LONG, (int64_t)st.links_denied),
            [JN_COL_POLICY_MAX_MESSAGE_SIZE_DENIED] =
                jn_mv_int(JN_MV_LONG, (int64_t)st.max_message_size_denied),
            [JN_COL_POLICY_TOTAL_DENIALS] =
                jn_mv_int(JN_MV_LONG, (int64_t)(st.denied + st.links_denied + st.sessions_denied +
                                                st.max_message_size_denied))};
        fn(ctx, row);
    }
    return 1;
}

/* The vhosts read at start (docs/design.md "Policy"): the file's vhost
 * sections and policyDir's, as their sections give them. READ only: a
 * vhost cannot yet be created, changed or deleted on a running router. */
size_t jn_mgmt_rows_vhost(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset,
                          size_t max, jn_mgmt_row_fn fn, void *ctx)
{
    size_t n = jn_mgmt_class_ncols(cls), total = 0;
    jn_mv_t *row = calloc(n ? n : 1, sizeof *row);
    bool go = row != NULL;
    for (jn_mgmt_entity_t *e = agent->vhosts; e; e = e->next) {
        if (go && total >= offset && total - offset < max) {
            jn_mgmt_entity_row(e, row);
            go = fn(ctx, row);
        }
        total++;
    }
    free(row);
    return total;
}

/* counts (n of them) as an AMQP map of string -> long, encoded into e
 * (initialised by the caller, freed after the row is used); a null value
 * when the encoder runs out of memory. */
static jn_mv_t counts_map(const jn_policy_count_t *counts, size_t n, jn_encoder_t *e)
{
    jn_enc_map_begin(e);
    for (size_t k = 0; k < n; k++) {
        jn_enc_cstring(e, counts[k].key);
        jn_enc_long(e, (int64_t)counts[k].n);
    }
    jn_enc_map_end(e);
    if (jn_encoder_error(e))
        return jn_mv_null();
    return (jn_mv_t){.kind = JN_MV_RAW, .len = e->size, .v.raw = e->data};
}

/* vhostStats (1.19's attributes; docs/design.md "Policy"): one row per
 * vhost with the I/O layer's figures. */
size_t jn_mgmt_rows_vhost_stats(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset,
                                size_t max, jn_mgmt_row_fn fn, void *ctx)
{
    jn_policy_vhost_stats_t *st = NULL;
    size_t count = 0;
    if (!agent->cfg.policy || jn_policy_stats(agent->cfg.policy, &st, &count) != 0)
        return 0;
    size_t n = jn_mgmt_class_ncols(cls);
    jn_mv_t *row = calloc(n ? n : 1, sizeof *row);
    bool go = row != NULL;
    for (size_t i = offset; go && i < count && i - offset < max; i++) {
        char id[1100];
        snprintf(id, sizeof id, "vhostStats/%s", st[i].hostname);
        jn_encoder_t user_map, host_map;
        jn_encoder_init(&user_map);
        jn_encoder_init(&host_map);
        for (size_t c = 0; c < n; c++) {
            const char *col = jn_mgmt_class_col(cls, c);
            jn_mv_t v = jn_mv_null();
            if (strcmp(col, "name") == 0 || strcmp(col, "identity") == 0)
                v = jn_mv_str(id);
            else if (strcmp(col, "type") == 0)
                v = jn_mv_str(FULL("vhostStats"));
            else if (strcmp(col, "id") == 0 || strcmp(col, "hostname") == 0)
                v = jn_mv_str(st[i].hostname);
            else if (strcmp(col, "connectionsApproved") == 0)
                v = jn_mv_int(JN_MV_LONG, (int64_t)st[i].approved);
            else if (strcmp(col, "connectionsDenied") == 0)
                v = jn_mv_int(JN_MV_LONG, (int64_t)st[i].denied);
            else if (strcmp(col, "connectionsCurrent") == 0)
                v = jn_mv_int(JN_MV_LONG, (int64_t)st[i].current);
            else if (strcmp(col, "senderDenied") == 0)
                v = jn_mv_int(JN_MV_LONG, (int64_t)st[i].sender_denied);
            else if (strcmp(col, "receiverDenied") == 0)
                v = jn_mv_int(JN_MV_LONG, (int64_t)st[i].receiver_denied);
            else if (strcmp(col, "sessionDenied") == 0)
                v = jn_mv_int(JN_MV_LONG, (int64_t)st[i].session_denied);
            else if (strcmp(col, "maxMessageSizeDenied") == 0)
                v = jn_mv_int(JN_MV_LONG, (int64_t)st[i].max_size_denied);
            else if (strcmp(col, "perUserState") == 0)
                v = counts_map(st[i].per_user, st[i].n_user, &user_map);
            else if (strcmp(col, "perHostState") == 0)
                v = counts_map(st[i].per_host, st[i].n_host, &host_map);
            row[c] = v;
        }
        go = fn(ctx, row);
        jn_encoder_free(&user_map);
        jn_encoder_free(&host_map);
    }
    free(row);
    jn_policy_stats_free(st, count);
    return count;
}
