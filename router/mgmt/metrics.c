/*
 * metrics.c — the pages the HTTP layer serves from management's figures
 * (junction/mgmt.h: jn_mgmt_metrics_snapshot_CT / jn_mgmt_metrics_format,
 * jn_mgmt_mesh_health_CT), read on the core thread from the very sources
 * the `router`, `router.address` and `allocator` entities read, so
 * /metrics and `junction-stat -g`/`-a` agree at any moment.
 *
 * /metrics is the Prometheus text format 0.0.4 (docs/protocol.md, "HTTP"):
 * first the 22 router figures qdrouterd 1.19 exports, with its types and
 * exact names (or, on a listener with metricsPrometheusNames, eight of its
 * gauges without their `_total` suffix: see figure()); then Junction's own: uptime,
 * worker threads, per allocation pool its objects and octets, per address
 * its five delivery counters (at most router.metricsAddressLimit
 * addresses, and a gauge of those left out), the router residence-time
 * histogram per address class, and the process's resident memory. Every
 * figure has a HELP line, so `promtool check metrics` accepts the page
 * with metricsPrometheusNames (1.19's names break its `_total` rule).
 *
 * Two steps, so that a scrape of 10,000 addresses does not hold the core
 * role while it prints (docs/performance.md, "/metrics and routing"): the
 * core thread renders the few router-wide lines and copies each address's
 * counters and key into one flat snapshot (no pointer into the core's
 * memory survives); the HTTP service thread that answers the scrape turns
 * the snapshot into text.
 */
#include "mgmt_private.h"
#include "store.h"

#include <junction/core_view.h>
#include <junction/pool.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
 * counters: with compat (the default, so 1.19's dashboards and alerts keep
 * working) they keep 1.19's exact names; a listener with
 * metricsPrometheusNames exports them without it. Each gets a `# HELP`
 * line (1.19 has none). */
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
    uint64_t v = p->pass == 0   ? s->in_use
                 : p->pass == 1 ? s->in_free_lists
                 : p->pass == 2 ? s->total_allocated + s->freed_to_heap /* ever: a counter */
                                : s->total_allocated * (uint64_t)s->object_size;
    static const char *const names[] = {
        "junction_pool_objects_in_use", "junction_pool_objects_free",
        "junction_pool_objects_allocated_total", "junction_pool_object_bytes"};
    put(p->t, "%s{pool=\"%s\"} %" PRIu64 "\n", names[p->pass], s->type_name, v);
}

/* ---- the snapshot (core thread) -------------------------------------------------- */

/* One address of a snapshot: its counters, then key_len octets of its key,
 * then padding to 8 octets. Read with memcpy: the records follow the text
 * unaligned. */
typedef struct snap_addr {
    uint64_t ingress, egress, transit, to_container, from_container;
    uint64_t key_len;
} snap_addr_t;

/* The head of a snapshot, followed by text_len octets of text (the
 * router-wide figures, rendered) and n_addrs snap_addr_t records. */
typedef struct snap_head {
    uint64_t magic;
    uint64_t text_len;
    uint64_t n_addrs;   /* records that follow */
    uint64_t addrs_all; /* addresses in the table */
    uint64_t n_dynamic; /* dynamic addresses among them (never in the records) */
    bool addr_series;   /* metricsAddressLimit > 0: the per-address series are shown */
    /* their five counters summed (ingress, egress, transit, to/from container) */
    uint64_t dynamic[5];
    bool has_residence;
    jn_residence_t residence;
} snap_head_t;

#define SNAP_MAGIC 0x6a6e6d6574726963ull /* "jnmetric" */

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* Append n octets to t (as put does, without a format). */
static void put_raw(text_t *t, const void *p, size_t n)
{
    if (t->failed)
        return;
    if (t->len + n > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n)
            cap *= 2;
        char *grown = realloc(t->buf, cap);
        if (!grown) {
            free(t->buf);
            t->buf = NULL;
            t->failed = true;
            return;
        }
        t->buf = grown;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, p, n);
    t->len += n;
}

typedef struct addr_copy {
    text_t *out;
    snap_head_t *h;
    uint64_t n, limit;
} addr_copy_t;

/* Each address: a dynamic one is only summed (its name is its owner's
 * secret), any other copied while fewer than the limit are. */
static bool addr_copy(void *arg, const jn_view_addr_t *v)
{
    addr_copy_t *a = arg;
    if (jn_view_key_is_dynamic(v->key, v->key_len)) {
        uint64_t *d = a->h->dynamic;
        a->h->n_dynamic++;
        d[0] += v->ingress;
        d[1] += v->egress;
        d[2] += v->transit;
        d[3] += v->to_container;
        d[4] += v->from_container;
        return true;
    }
    if (a->n >= a->limit)
        return true;
    snap_addr_t r = {v->ingress,      v->egress,         v->transit,
                     v->to_container, v->from_container, v->key_len};
    static const uint8_t zeros[8];
    put_raw(a->out, &r, sizeof r);
    put_raw(a->out, v->key, v->key_len);
    put_raw(a->out, zeros, pad8(v->key_len) - v->key_len);
    a->n++;
    return !a->out->failed;
}

typedef struct series {
    text_t *t;
    bool compat; /* qdrouterd's names (gauges keep _total) */
} series_t;

/* jn_mgmt_rows_router's callback: one series per schema metric of the
 * router, from the row management READ shows. Core thread. */
static bool router_series(void *ctx, const jn_mv_t *row)
{
    series_t *x = ctx;
    for (size_t i = 0; i < jn_schema_metric_count(); i++) {
        const jn_schema_metric_t *m = jn_schema_metric_at(i);
        if (m->type_index != JN_ENTITY_ROUTER)
            continue;
        const jn_mv_t *v = &row[m->column];
        uint64_t n = v->kind == JN_MV_UINT || v->kind == JN_MV_ULONG ? v->v.u
                     : (v->kind == JN_MV_INT || v->kind == JN_MV_LONG) && v->v.i > 0
                         ? (uint64_t)v->v.i
                         : 0;
        figure(x->t, x->compat, m->name, m->counter ? "counter" : "gauge", m->help, n);
    }
    return true;
}

int jn_mgmt_metrics_snapshot_CT(jn_mgmt_t *agent, const char *query, bool prometheus_names,
                                char **snap, size_t *len)
{
    *snap = NULL;
    *len = 0;
    text_t t = {0};
    /* the router's figures: the series schema.json lists, read from the
     * row a management READ of the router shows */
    series_t x = {&t, !prometheus_names || (query && strstr(query, "compat=qdrouterd") != NULL)};
    jn_mgmt_rows_router(agent, jn_mgmt_class_find("router", NULL), 0, 1, router_series, &x);
    static const char *const pool_help[] = {
        "# HELP junction_pool_objects_in_use Objects of an allocation pool in use.\n"
        "# TYPE junction_pool_objects_in_use gauge\n",
        "# HELP junction_pool_objects_free Objects of an allocation pool held in free lists.\n"
        "# TYPE junction_pool_objects_free gauge\n",
        "# HELP junction_pool_objects_allocated_total Objects an allocation pool took from the "
        "heap.\n"
        "# TYPE junction_pool_objects_allocated_total counter\n",
        "# HELP junction_pool_object_bytes Octets of the objects an allocation pool holds from "
        "the heap, in use or free (pools give nothing back before exit).\n"
        "# TYPE junction_pool_object_bytes gauge\n"};
    for (int pass = 0; pass < 4; pass++) {
        put(&t, "%s", pool_help[pass]);
        pool_text_t p = {&t, pass};
        jn_pool_foreach(pool_line, &p);
    }
    if (t.failed)
        return 500;
    snap_head_t h = {.magic = SNAP_MAGIC, .text_len = t.len};
    if (agent->cfg.residence) {
        h.has_residence = true;
        agent->cfg.residence(agent->cfg.io_ctx, &h.residence);
    }
    text_t out = {0};
    put_raw(&out, &h, sizeof h);
    put_raw(&out, t.buf, t.len);
    free(t.buf);
    /* every address is visited (a dynamic one does not take a place
     * under the limit); only the limit's worth are copied */
    addr_copy_t a = {&out, &h, 0, agent->cfg.metrics_address_limit};
    h.addr_series = a.limit > 0;
    if (agent->cfg.core)
        h.addrs_all = jn_core_view_addrs_CT(agent->cfg.core, 0, SIZE_MAX, addr_copy, &a);
    if (out.failed)
        return 500;
    h.n_addrs = a.n;
    memcpy(out.buf, &h, sizeof h);
    *snap = out.buf;
    *len = out.len;
    return 200;
}

/* ---- the text (any thread) -------------------------------------------------------- */

/* The class of an address key, as junction-stat names it. */
static const char *key_class(const uint8_t *key, size_t len)
{
    switch (len ? key[0] : 0) {
    case 'M':
        return "mobile";
    case 'R':
        return "router";
    case 'A':
        return "area";
    case 'L':
        return "local";
    case 'T':
        return "topo";
    case 'C':
    case 'E':
        return "link-in";
    case 'D':
    case 'F':
        return "link-out";
    case 'H':
        return "edge";
    default:
        return "unknown";
    }
}

/* The length of the valid UTF-8 sequence at p (n octets left), or 0. */
static size_t utf8_len(const uint8_t *p, size_t n)
{
    size_t want = p[0] < 0x80             ? 1
                  : (p[0] & 0xe0) == 0xc0 ? 2
                  : (p[0] & 0xf0) == 0xe0 ? 3
                  : (p[0] & 0xf8) == 0xf0 ? 4
                                          : 0;
    if (want == 0 || want > n || (want == 2 && p[0] < 0xc2))
        return 0;
    for (size_t i = 1; i < want; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    uint32_t cp = want == 1   ? p[0]
                  : want == 2 ? (p[0] & 0x1fu)
                  : want == 3 ? (p[0] & 0x0fu)
                              : (p[0] & 0x07u);
    for (size_t i = 1; i < want; i++)
        cp = (cp << 6) | (p[i] & 0x3fu);
    if ((want == 3 && cp < 0x800) || (want == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return want;
}

/* p[0..n) as a label value of the text format: backslash, double quote
 * and line feed escaped (`\\`, `\"`, `\n`); an octet that does not start a
 * valid UTF-8 sequence becomes U+FFFD (the format is UTF-8). */
static void put_label(text_t *t, const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '\\' && p[run] != '"')
            run++;
        put_raw(t, p + i, run - i);
        i = run;
        if (i == n)
            break;
        if (p[i] == '\\' || p[i] == '"') {
            put_raw(t, "\\", 1);
            put_raw(t, p + i, 1);
            i++;
        } else if (p[i] == '\n') {
            put_raw(t, "\\n", 2);
            i++;
        } else {
            size_t u = utf8_len(p + i, n - i);
            if (u)
                put_raw(t, p + i, u);
            else
                put_raw(t, "\xef\xbf\xbd", 3);
            i += u ? u : 1;
        }
    }
}

static void put_str(text_t *t, const char *s)
{
    put_raw(t, s, strlen(s));
}

/* " <v>\n" without printf: ~50,000 of these for 10,000 addresses. */
static void put_value(text_t *t, uint64_t v)
{
    char buf[24];
    char *p = buf + sizeof buf;
    *--p = '\n';
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    *--p = ' ';
    put_raw(t, p, (size_t)(buf + sizeof buf - p));
}

/* The labels of the address whose key is key[0..len): class, phase (mobile
 * addresses: the key's second character) and the address itself, as
 * junction-stat -a shows them; together they name the key, so no two
 * addresses share a label set. */
static void put_addr_labels(text_t *t, const uint8_t *key, size_t len)
{
    bool mobile = len >= 2 && key[0] == 'M';
    put_str(t, "{class=\"");
    put_str(t, key_class(key, len));
    put_str(t, "\",");
    if (mobile) {
        put_str(t, "phase=\"");
        put_label(t, key + 1, 1);
        put_str(t, "\",");
    }
    size_t skip = mobile ? 2 : len ? 1 : 0;
    put_str(t, "address=\"");
    put_label(t, key + skip, len - skip);
    put_str(t, "\"}");
}

static void per_address(text_t *t, const snap_head_t *h, const uint8_t *recs, size_t recs_len)
{
    static const struct {
        const char *name, *help;
    } fam[] = {{"junction_address_deliveries_ingress_total",
                "Deliveries that entered the mesh here for the address (router.address "
                "deliveriesIngress)."},
               {"junction_address_deliveries_egress_total",
                "Copies sent to local consumers of the address (deliveriesEgress)."},
               {"junction_address_deliveries_transit_total",
                "Copies sent to other routers for the address (deliveriesTransit)."},
               {"junction_address_deliveries_to_container_total",
                "Deliveries to the address served inside the router (deliveriesToContainer)."},
               {"junction_address_deliveries_from_container_total",
                "Deliveries to the address the router composed (deliveriesFromContainer)."}};
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
        put(t, "# HELP %s %s\n# TYPE %s counter\n", fam[f].name, fam[f].help, fam[f].name);
        size_t off = 0;
        for (uint64_t i = 0; i < h->n_addrs && off + sizeof(snap_addr_t) <= recs_len; i++) {
            snap_addr_t r;
            memcpy(&r, recs + off, sizeof r);
            const uint8_t *key = recs + off + sizeof r;
            if (r.key_len > recs_len - off - sizeof r)
                break;
            uint64_t v[] = {r.ingress, r.egress, r.transit, r.to_container, r.from_container};
            put_str(t, fam[f].name);
            put_addr_labels(t, key, r.key_len);
            put_value(t, v[f]);
            off += sizeof r + pad8(r.key_len);
        }
        /* the dynamic addresses, summed under one label set (their names
         * are their owners' secrets) */
        if (h->addr_series) {
            put_str(t, fam[f].name);
            put_str(t, "{class=\"dynamic\",address=\"$dynamic\"}");
            put_value(t, h->dynamic[f]);
        }
    }
    uint64_t named = h->addrs_all > h->n_dynamic ? h->addrs_all - h->n_dynamic : 0;
    put(t,
        "# HELP junction_metrics_addresses_omitted Addresses whose counters this page leaves out "
        "(router metricsAddressLimit; dynamic addresses not counted).\n"
        "# TYPE junction_metrics_addresses_omitted gauge\n"
        "junction_metrics_addresses_omitted %" PRIu64 "\n"
        "# HELP junction_dynamic_addresses Dynamic (reply) addresses in the address table; "
        "never named here: their counters are summed in the series labelled class dynamic, "
        "address $dynamic.\n"
        "# TYPE junction_dynamic_addresses gauge\n"
        "junction_dynamic_addresses %" PRIu64 "\n",
        named > h->n_addrs ? named - h->n_addrs : 0, h->n_dynamic);
}

static void residence(text_t *t, const jn_residence_t *r)
{
    static const char *const cls[JN_RES_CLASSES] = {"other", "mobile", "local", "router"};
    put(t, "# HELP junction_delivery_residence_seconds Time from the I/O pass that read a delivery "
           "to the pass that started sending a copy of it, per class of the address it was "
           "routed by.\n"
           "# TYPE junction_delivery_residence_seconds histogram\n");
    for (unsigned c = 0; c < JN_RES_CLASSES; c++) {
        uint64_t cum = 0;
        for (unsigned b = 0; b < JN_RES_BUCKETS; b++) {
            cum += r->count[c][b];
            if (b < JN_RES_BUCKETS - 1)
                put(t,
                    "junction_delivery_residence_seconds_bucket{class=\"%s\",le=\"%g\"} %" PRIu64
                    "\n",
                    cls[c], (double)jn_res_bounds_ns[b] / 1e9, cum);
            else
                put(t,
                    "junction_delivery_residence_seconds_bucket{class=\"%s\",le=\"+Inf\"} %" PRIu64
                    "\n",
                    cls[c], cum);
        }
        put(t, "junction_delivery_residence_seconds_sum{class=\"%s\"} %" PRIu64 ".%09" PRIu64 "\n",
            cls[c], r->sum_ns[c] / 1000000000u, r->sum_ns[c] % 1000000000u);
        put(t, "junction_delivery_residence_seconds_count{class=\"%s\"} %" PRIu64 "\n", cls[c],
            cum);
    }
}

/* The process's resident set in octets (/proc/self/statm), or -1. */
static int64_t resident_octets(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    unsigned long size, rss;
    int n = fscanf(f, "%lu %lu", &size, &rss);
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return n == 2 && page > 0 ? (int64_t)rss * page : -1;
}

int jn_mgmt_metrics_format(char *snap, size_t snap_len, char **body, size_t *len)
{
    *body = NULL;
    *len = 0;
    snap_head_t h;
    if (!snap || snap_len < sizeof h) {
        free(snap);
        return 500;
    }
    memcpy(&h, snap, sizeof h);
    if (h.magic != SNAP_MAGIC || h.text_len > snap_len - sizeof h) {
        free(snap);
        return 500;
    }
    text_t t = {0};
    put_raw(&t, snap + sizeof h, h.text_len);
    size_t recs = sizeof h + h.text_len;
    per_address(&t, &h, (const uint8_t *)snap + recs, snap_len - recs);
    if (h.has_residence)
        residence(&t, &h.residence);
    int64_t rss = resident_octets();
    if (rss >= 0)
        put(&t,
            "# HELP process_resident_memory_bytes Resident memory of the router process "
            "(/proc/self/statm).\n"
            "# TYPE process_resident_memory_bytes gauge\n"
            "process_resident_memory_bytes %" PRId64 "\n",
            rss);
    free(snap);
    if (t.failed)
        return 500;
    *body = t.buf;
    *len = t.len;
    return 200;
}

int jn_mgmt_metrics_CT(jn_mgmt_t *agent, const char *query, bool prometheus_names, char **body,
                       size_t *len)
{
    char *snap;
    size_t n;
    int status = jn_mgmt_metrics_snapshot_CT(agent, query, prometheus_names, &snap, &n);
    if (status != 200) {
        *body = NULL;
        *len = 0;
        return status;
    }
    return jn_mgmt_metrics_format(snap, n, body, len);
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
