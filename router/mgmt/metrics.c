/*
 * metrics.c — the pages the HTTP layer serves from management's figures
 * (junction/mgmt.h: jn_mgmt_metrics_CT, jn_mgmt_mesh_health_CT), rendered on
 * the core thread from the very sources the `router` and `allocator`
 * entities read, so /metrics and `junction-stat -g` agree at any moment.
 *
 * /metrics is the Prometheus text format 0.0.4 (docs/protocol.md, "HTTP"):
 * first the 22 router figures qdrouterd 1.19 exports, with its types and
 * names (eight of its gauges lose their `_total` suffix unless the scrape
 * asks for `compat=qdrouterd`: see figure()); then Junction's own: uptime,
 * worker threads, and per allocation pool the objects in use, held in free
 * lists and allocated in all, labelled by pool. Every figure has a HELP
 * line, so `promtool check metrics` accepts the page.
 */
#include "mgmt_private.h"
#include "store.h"

#include <junction/pool.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A growing text buffer; on ENOMEM it is freed and stays NULL. */
typedef struct text {
    char *buf;
    size_t len, cap;
    bool failed;
} text_t;

static void put(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text_t *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            break;
        }
        if (t->buf && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? t->cap * 2 : 4096;
        while (cap < t->len + (size_t)n + 1)
            cap *= 2;
        char *grown = realloc(t->buf, cap);
        if (!grown) {
            t->failed = true;
            break;
        }
        t->buf = grown;
        t->cap = cap;
    }
    free(t->buf);
    t->buf = NULL;
}

static bool count_reachable(void *arg, const jn_mesh_router_info_t *info)
{
    if (info->reachable)
        ++*(size_t *)arg;
    return true;
}

/* One of 1.19's figures. 1.19 names eight gauges with a `_total` suffix,
 * which the Prometheus conventions (and `promtool check metrics`) keep for
 * counters: by default they are exported without it; with compat, under
 * 1.19's exact names. Each gets a `# HELP` line (1.19 has none). */
static void figure(text_t *t, bool compat, const char *name, const char *type, const char *help,
                   uint64_t value)
{
    size_t n = strlen(name);
    bool strip =
        !compat && strcmp(type, "gauge") == 0 && n > 6 && strcmp(name + n - 6, "_total") == 0;
    int len = (int)(strip ? n - 6 : n);
    put(t, "# HELP %.*s %s\n# TYPE %.*s %s\n%.*s %" PRIu64 "\n", len, name, help, len, name, type,
        len, name, value);
}

typedef struct pool_text {
    text_t *t;
    int pass;
} pool_text_t;

static void pool_line(const jn_pool_stats_t *s, void *arg)
{
    pool_text_t *p = arg;
    uint64_t v = p->pass == 0 ? s->in_use : p->pass == 1 ? s->in_free_lists : s->total_allocated;
    static const char *const names[] = {"junction_pool_objects_in_use",
                                        "junction_pool_objects_free",
                                        "junction_pool_objects_allocated_total"};
    put(p->t, "%s{pool=\"%s\"} %" PRIu64 "\n", names[p->pass], s->type_name, v);
}

int jn_mgmt_metrics_CT(jn_mgmt_t *agent, const char *query, char **body, size_t *len)
{
    jn_mgmt_figures_t f; /* as the router entity reads them */
    jn_mgmt_router_figures(agent, &f);
    const jn_core_stats_t s = f.core;
    bool c = query && strstr(query, "compat=qdrouterd") != NULL;
    text_t t = {0};
    figure(&t, c, "qdr_connections_total", "gauge", "Open connections.", s.connections);
    figure(&t, c, "qdr_links_total", "gauge", "Attached links.", s.links);
    figure(&t, c, "qdr_addresses_total", "gauge", "Addresses in the address table.", s.addresses);
    figure(&t, c, "qdr_routers_total", "gauge", "Other routers known in the mesh.", f.nodes);
    figure(&t, c, "qdr_link_routes_total", "gauge", "Configured link routes.", f.link_routes);
    figure(&t, c, "qdr_auto_links_total", "gauge", "Configured auto-links.", f.auto_links);
    figure(&t, c, "qdr_presettled_deliveries_total", "counter",
           "Deliveries that arrived pre-settled.", s.deliveries_presettled);
    figure(&t, c, "qdr_dropped_presettled_deliveries_total", "counter",
           "Pre-settled deliveries dropped.", s.deliveries_dropped);
    figure(&t, c, "qdr_accepted_deliveries_total", "counter", "Deliveries a consumer accepted.",
           s.deliveries_accepted);
    figure(&t, c, "qdr_released_deliveries_total", "counter", "Deliveries released.",
           s.deliveries_released);
    figure(&t, c, "qdr_rejected_deliveries_total", "counter", "Deliveries a consumer rejected.",
           s.deliveries_rejected);
    figure(&t, c, "qdr_modified_deliveries_total", "counter", "Deliveries a consumer modified.",
           s.deliveries_modified);
    figure(&t, c, "qdr_deliveries_ingress_total", "counter", "Deliveries received from clients.",
           s.deliveries_ingress);
    figure(&t, c, "qdr_deliveries_egress_total", "counter", "Deliveries sent to clients.",
           s.deliveries_egress);
    /* the router entity shows these as 0 too: not counted yet */
    figure(&t, c, "qdr_deliveries_transit_total", "counter",
           "Deliveries that crossed this router between two others.", 0);
    figure(&t, c, "qdr_deliveries_ingress_route_container_total", "counter",
           "Deliveries received from route containers.", 0);
    figure(&t, c, "qdr_deliveries_egress_route_container_total", "counter",
           "Deliveries sent to route containers.", 0);
    figure(&t, c, "qdr_deliveries_delayed_1sec_total", "counter",
           "Deliveries unsettled for more than 1 s.", 0);
    figure(&t, c, "qdr_deliveries_delayed_10sec_total", "counter",
           "Deliveries unsettled for more than 10 s.", 0);
    figure(&t, c, "qdr_deliveries_stuck_total", "gauge", "Deliveries stuck now.", 0);
    figure(&t, c, "qdr_links_blocked_total", "gauge", "Links blocked now.", 0);
    figure(&t, c, "qdr_deliveries_redirected_to_fallback_total", "counter",
           "Deliveries sent to a fallback destination.", 0);
    int64_t up = (int64_t)time(NULL) - agent->start_time;
    put(&t,
        "# HELP junction_uptime_seconds Seconds since the router started.\n"
        "# TYPE junction_uptime_seconds gauge\n"
        "junction_uptime_seconds %" PRId64 "\n"
        "# HELP junction_worker_threads I/O worker threads.\n"
        "# TYPE junction_worker_threads gauge\n"
        "junction_worker_threads %u\n",
        up > 0 ? up : 0, agent->cfg.worker_threads);
    static const char *const pool_help[] = {
        "# HELP junction_pool_objects_in_use Objects of an allocation pool in use.\n"
        "# TYPE junction_pool_objects_in_use gauge\n",
        "# HELP junction_pool_objects_free Objects of an allocation pool held in free lists.\n"
        "# TYPE junction_pool_objects_free gauge\n",
        "# HELP junction_pool_objects_allocated_total Objects an allocation pool took from the "
        "heap.\n"
        "# TYPE junction_pool_objects_allocated_total counter\n"};
    for (int pass = 0; pass < 3; pass++) {
        put(&t, "%s", pool_help[pass]);
        pool_text_t p = {&t, pass};
        jn_pool_foreach(pool_line, &p);
    }
    if (t.failed)
        return 500;
    *body = t.buf;
    *len = t.len;
    return 200;
}

int jn_mgmt_mesh_health_CT(jn_mgmt_t *agent, const char *query, char **body, size_t *len)
{
    text_t t = {0};
    int status;
    if (!agent->cfg.foreach_router) {
        put(&t, "mode %s: no mesh\n", agent->cfg.mode);
        status = 200; /* a standalone router is as ready as it gets */
    } else {
        size_t reachable = 0;
        agent->cfg.foreach_router(agent->cfg.nodes_ctx, count_reachable, &reachable);
        /* ?routers=N: ready once N other routers are reachable (default 1) */
        long want = 1;
        const char *arg = query ? strstr(query, "routers=") : NULL;
        if (arg)
            want = strtol(arg + 8, NULL, 10);
        status = (long)reachable >= want ? 200 : 503;
        put(&t, "reachable routers %zu, wanted %ld\n", reachable, want);
    }
    if (t.failed)
        return 500;
    *body = t.buf;
    *len = t.len;
    return status;
}
