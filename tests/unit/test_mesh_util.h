/*
 * test_mesh_util.h — a fake core and a fake network for the routing
 * protocol engine's unit tests.
 *
 * Each fake router owns one engine and records what the engine tells its
 * core: router records, routes (as the core would hold them), mobile
 * addresses per router, and optionally every message it sends. Routers are
 * joined by connections whose slot number is the link number on both
 * sides. Messages are queued and delivered after the engine call that sent
 * them (callbacks must not call the engine): a HELLO crosses its one link;
 * a message for a router is forwarded hop by hop along the routes each fake
 * core holds (no trace, no loops: at most 16 hops); a message "to all"
 * goes, as a unicast copy, to every router the sender can reach. A test may
 * install a filter to drop messages. The clock moves in whole ticks.
 * Static functions only (each test file is its own program).
 */
#ifndef JN_TEST_MESH_UTIL_H
#define JN_TEST_MESH_UTIL_H 1

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/decoder.h>
#include <junction/encoder.h>
#include <junction/log.h>
#include <junction/mesh.h>
#include <junction/message.h>
#include <junction/pool.h>

#include "mesh/mesh_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T_MAX_ROUTERS 8
#define T_MAX_CONNS   16
#define T_MAX_QUEUE   8192
#define T_MAX_MOBILE  64
#define T_MAX_CAPTURE 512

typedef struct froute {
    bool reachable;
    int link, next_hop;
    uint32_t cost;
    jn_mesh_bits_t vo;
    jn_mesh_bits_t mc; /* multicast origins */
} froute_t;

typedef struct fmobile {
    int router;
    char key[64];
    int hint;
} fmobile_t;

/* A message the engine handed to the core. */
typedef struct fsent {
    int kind; /* 'L' on link, 'R' to router, 'A' to all */
    int target;
    jn_message_t *msg; /* referenced */
} fsent_t;

struct net;

typedef struct frouter {
    struct net *net;
    int n;
    char id[32];
    jn_mesh_t *mesh;
    bool up;
    int64_t instance;
    bool known[JN_MESH_MAX_ROUTERS];
    char ids[JN_MESH_MAX_ROUTERS][32];
    froute_t routes[JN_MESH_MAX_ROUTERS];
    unsigned added, removed, route_calls, unreachable_calls, mob_added, mob_removed;
    unsigned silent_calls; /* link_silent: how often, the last link */
    int silent_link;
    fmobile_t mobile[T_MAX_MOBILE];
    size_t n_mobile;
    bool capture;
    fsent_t sent[T_MAX_CAPTURE];
    size_t n_sent;
} frouter_t;

typedef struct fconn {
    int a, b;
    uint32_t cost;
    bool up;
    bool blackhole; /* silently drops everything */
} fconn_t;

typedef struct fdelivery {
    int to, link;
    jn_message_t *msg;
} fdelivery_t;

typedef struct net {
    frouter_t r[T_MAX_ROUTERS];
    size_t n_r;
    fconn_t c[T_MAX_CONNS];
    size_t n_c;
    fdelivery_t q[T_MAX_QUEUE];
    size_t head, tail;
    int64_t now;
    /* drop a message from router `from` to router `to` when true */
    bool (*filter)(struct net *net, int from, int to, jn_message_t *msg);
    void *filter_ctx;
    uint32_t ra_flux, ls_max_age; /* config for new routers (0: default) */
} net_t;

/* ---- decoding helpers ---------------------------------------------------- */

/* The opcode of a control message ("" when none). */
static inline const char *msg_opname(jn_message_t *msg)
{
    static const char *const names[] = {"?", "HELLO", "RA", "LSR", "LSU", "MAU", "MAR"};
    jn_mesh_msg_t m;
    const char *reason;
    int rc = jn_mesh_parse(msg, &m, &reason);
    jn_mesh_op_t op = m.op;
    jn_mesh_msg_fini(&m);
    return rc == 0 ? names[op] : "";
}

/* ---- fake core callbacks ------------------------------------------------ */

static inline void net_enqueue(net_t *net, int to, int link, jn_message_t *msg)
{
    assert_true(net->tail - net->head < T_MAX_QUEUE);
    net->q[net->tail % T_MAX_QUEUE] = (fdelivery_t){to, link, msg};
    net->tail++;
}

static inline void capture(frouter_t *r, int kind, int target, jn_message_t *msg)
{
    if (!r->capture || r->n_sent >= T_MAX_CAPTURE)
        return;
    r->sent[r->n_sent++] = (fsent_t){kind, target, jn_message_ref(msg)};
}

static inline int conn_other(const fconn_t *c, int me)
{
    return c->a == me ? c->b : c->a;
}

static inline void f_send_on_link(void *ctx, int link, jn_message_t *msg)
{
    frouter_t *r = ctx;
    net_t *net = r->net;
    capture(r, 'L', link, msg);
    fconn_t *c = link >= 0 && (size_t)link < net->n_c ? &net->c[link] : NULL;
    if (!c || !c->up || c->blackhole || (c->a != r->n && c->b != r->n)) {
        jn_message_unref(msg);
        return;
    }
    int to = conn_other(c, r->n);
    if (net->filter && net->filter(net, r->n, to, msg)) {
        jn_message_unref(msg);
        return;
    }
    net_enqueue(net, to, link, msg);
}

static inline int find_known(const frouter_t *r, const char *id)
{
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++)
        if (r->known[i] && strcmp(r->ids[i], id) == 0)
            return i;
    return -1;
}

/* Forward msg (reference taken) from router `from` toward router id. */
static inline void net_forward(net_t *net, int from, const char *id, jn_message_t *msg)
{
    int cur = from;
    for (int hop = 0; hop < 16; hop++) {
        frouter_t *r = &net->r[cur];
        int idx = find_known(r, id);
        if (idx < 0 || !r->routes[idx].reachable)
            break;
        int link = r->routes[idx].link;
        if (link < 0)
            link = r->routes[r->routes[idx].next_hop].link;
        if (link < 0 || (size_t)link >= net->n_c || !net->c[link].up || net->c[link].blackhole)
            break;
        int nxt = conn_other(&net->c[link], cur);
        if (strcmp(net->r[nxt].id, id) == 0) {
            if (net->filter && net->filter(net, from, nxt, msg))
                break;
            net_enqueue(net, nxt, link, msg);
            return;
        }
        cur = nxt;
    }
    jn_message_unref(msg);
}

static inline void f_send_to_router(void *ctx, int router, jn_message_t *msg)
{
    frouter_t *r = ctx;
    capture(r, 'R', router, msg);
    assert_true(router > 0 && router < JN_MESH_MAX_ROUTERS && r->known[router]);
    net_forward(r->net, r->n, r->ids[router], msg);
}

static inline void f_send_to_all(void *ctx, jn_message_t *msg)
{
    frouter_t *r = ctx;
    capture(r, 'A', -1, msg);
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++)
        if (r->known[i] && r->routes[i].reachable)
            net_forward(r->net, r->n, r->ids[i], jn_message_ref(msg));
    jn_message_unref(msg);
}

static inline void f_router_added(void *ctx, int router, const char *id)
{
    frouter_t *r = ctx;
    assert_false(r->known[router]);
    r->known[router] = true;
    snprintf(r->ids[router], sizeof r->ids[router], "%s", id);
    memset(&r->routes[router], 0, sizeof r->routes[router]);
    r->added++;
}

static inline void f_router_removed(void *ctx, int router)
{
    frouter_t *r = ctx;
    assert_true(r->known[router]);
    for (size_t i = 0; i < r->n_mobile; i++)
        assert_int_not_equal(r->mobile[i].router, router);
    r->known[router] = false;
    memset(&r->routes[router], 0, sizeof r->routes[router]);
    r->removed++;
}

static inline void f_router_route(void *ctx, int router, int link, int next_hop, uint32_t cost,
                                  const jn_mesh_bits_t *vo, const jn_mesh_bits_t *mc)
{
    frouter_t *r = ctx;
    /* the multicast origins are some of the valid origins, with this router */
    assert_true(jn_mesh_bits_has(mc, 0));
    assert_true((mc->w[0] & ~vo->w[0]) == 0 && (mc->w[1] & ~vo->w[1]) == 0);
    assert_true(r->known[router]);
    assert_true((link >= 0) != (next_hop >= 0));
    assert_true(jn_mesh_bits_has(vo, 0));
    r->routes[router] = (froute_t){true, link, next_hop, cost, *vo, *mc};
    r->route_calls++;
}

static inline void f_router_unreachable(void *ctx, int router)
{
    frouter_t *r = ctx;
    assert_true(r->known[router] && r->routes[router].reachable);
    r->routes[router].reachable = false;
    r->unreachable_calls++;
}

static inline long find_mobile(const frouter_t *r, int router, const uint8_t *key, size_t len)
{
    for (size_t i = 0; i < r->n_mobile; i++)
        if (r->mobile[i].router == router && strlen(r->mobile[i].key) == len &&
            memcmp(r->mobile[i].key, key, len) == 0)
            return (long)i;
    return -1;
}

static inline void f_mobile_added(void *ctx, int router, const uint8_t *key, size_t len, int hint)
{
    frouter_t *r = ctx;
    assert_true(r->known[router]);
    assert_true(find_mobile(r, router, key, len) < 0);
    assert_true(r->n_mobile < T_MAX_MOBILE && len < 64);
    fmobile_t *m = &r->mobile[r->n_mobile++];
    m->router = router;
    memcpy(m->key, key, len);
    m->key[len] = '\0';
    m->hint = hint;
    r->mob_added++;
}

static inline void f_mobile_removed(void *ctx, int router, const uint8_t *key, size_t len)
{
    frouter_t *r = ctx;
    long i = find_mobile(r, router, key, len);
    assert_true(i >= 0);
    r->mobile[i] = r->mobile[--r->n_mobile];
    r->mob_removed++;
}

static inline void f_link_silent(void *ctx, int link, const char *id)
{
    frouter_t *r = ctx;
    assert_non_null(id);
    r->silent_calls++;
    r->silent_link = link;
}

/* ---- building the network ------------------------------------------------ */

static inline void router_start(net_t *net, int n)
{
    frouter_t *r = &net->r[n];
    jn_mesh_config_t cfg = {.router_id = r->id,
                            .instance = r->instance,
                            .ra_interval_flux = net->ra_flux,
                            .remote_ls_max_age = net->ls_max_age};
    jn_mesh_ops_t ops = {.ctx = r,
                         .send_on_link = f_send_on_link,
                         .send_to_router = f_send_to_router,
                         .send_to_all = f_send_to_all,
                         .router_added = f_router_added,
                         .router_removed = f_router_removed,
                         .router_route = f_router_route,
                         .router_unreachable = f_router_unreachable,
                         .mobile_added = f_mobile_added,
                         .mobile_removed = f_mobile_removed,
                         .link_silent = f_link_silent};
    memset(r->known, 0, sizeof r->known);
    memset(r->routes, 0, sizeof r->routes);
    r->n_mobile = 0;
    r->mesh = jn_mesh_create(&cfg, &ops);
    assert_non_null(r->mesh);
    r->up = true;
}

static inline int net_add(net_t *net, const char *id)
{
    assert_true(net->n_r < T_MAX_ROUTERS);
    int n = (int)net->n_r++;
    frouter_t *r = &net->r[n];
    r->net = net;
    r->n = n;
    snprintf(r->id, sizeof r->id, "%s", id);
    r->instance = 1700000000 + n;
    router_start(net, n);
    return n;
}

static inline int net_connect(net_t *net, int a, int b, uint32_t cost)
{
    assert_true(net->n_c < T_MAX_CONNS);
    int c = (int)net->n_c++;
    net->c[c] = (fconn_t){a, b, cost, true, false};
    jn_mesh_link_added_CT(net->r[a].mesh, c, cost);
    jn_mesh_link_added_CT(net->r[b].mesh, c, cost);
    return c;
}

static inline void net_disconnect(net_t *net, int c)
{
    net->c[c].up = false;
    if (net->r[net->c[c].a].up)
        jn_mesh_link_lost_CT(net->r[net->c[c].a].mesh, c);
    if (net->r[net->c[c].b].up)
        jn_mesh_link_lost_CT(net->r[net->c[c].b].mesh, c);
}

static inline void net_reconnect(net_t *net, int c)
{
    net->c[c].up = true;
    jn_mesh_link_added_CT(net->r[net->c[c].a].mesh, c, net->c[c].cost);
    jn_mesh_link_added_CT(net->r[net->c[c].b].mesh, c, net->c[c].cost);
}

/* Deliver everything queued (and what that causes). */
static inline void net_pump(net_t *net)
{
    while (net->head != net->tail) {
        fdelivery_t d = net->q[net->head % T_MAX_QUEUE];
        net->head++;
        frouter_t *r = &net->r[d.to];
        if (r->up) {
            int rc = jn_mesh_receive_CT(r->mesh, d.link, net->c[d.link].cost, d.msg);
            assert_int_equal(rc, 0);
        }
        jn_message_unref(d.msg);
    }
}

/* One tick (1 s) of every running router, then deliver. */
static inline void net_tick(net_t *net)
{
    net->now += JN_MESH_TICK_MS;
    for (size_t i = 0; i < net->n_r; i++)
        if (net->r[i].up)
            jn_mesh_tick_CT(net->r[i].mesh, net->now);
    net_pump(net);
}

static inline void net_run(net_t *net, int ticks)
{
    for (int i = 0; i < ticks; i++)
        net_tick(net);
}

static inline void capture_clear(frouter_t *r)
{
    for (size_t i = 0; i < r->n_sent; i++)
        jn_message_unref(r->sent[i].msg);
    r->n_sent = 0;
}

/* Restart router n as a new process: its connections drop and come back. */
static inline void net_restart(net_t *net, int n)
{
    frouter_t *r = &net->r[n];
    for (size_t c = 0; c < net->n_c; c++)
        if (net->c[c].up && (net->c[c].a == n || net->c[c].b == n))
            net_disconnect(net, (int)c);
    jn_mesh_free(r->mesh);
    r->up = false;
    r->instance += 100;
    router_start(net, n);
    for (size_t c = 0; c < net->n_c; c++)
        if (net->c[c].a == n || net->c[c].b == n)
            net_reconnect(net, (int)c);
}

static inline void net_free(net_t *net)
{
    net_pump(net);
    for (size_t i = 0; i < net->n_r; i++) {
        capture_clear(&net->r[i]);
        jn_mesh_free(net->r[i].mesh);
    }
    free(net);
}

static net_t *net_new(void)
{
    net_t *net = calloc(1, sizeof *net);
    assert_non_null(net);
    net->now = 100000;
    return net;
}

/* ---- checks ------------------------------------------------------------ */

static inline int rid(const net_t *net, const char *id)
{
    for (size_t i = 0; i < net->n_r; i++)
        if (strcmp(net->r[i].id, id) == 0)
            return (int)i;
    fail_msg("no router %s", id);
    return -1;
}

/* The route router `at` holds toward router `to`. */
static const froute_t *route(const net_t *net, const char *at, const char *to)
{
    const frouter_t *r = &net->r[rid(net, at)];
    int idx = find_known(r, to);
    if (idx < 0)
        fail_msg("%s does not know %s", at, to);
    return &r->routes[idx];
}

/* Assert at's route to `to`: direct over link (via NULL), or via next hop. */
static inline void assert_route(const net_t *net, const char *at, const char *to, const char *via,
                                int link, uint32_t cost)
{
    const froute_t *rt = route(net, at, to);
    const frouter_t *r = &net->r[rid(net, at)];
    if (!rt->reachable)
        fail_msg("%s: %s unreachable", at, to);
    if (via) {
        assert_int_equal(rt->link, -1);
        assert_true(rt->next_hop > 0);
        if (strcmp(r->ids[rt->next_hop], via) != 0)
            fail_msg("%s -> %s: next hop %s, expected %s", at, to, r->ids[rt->next_hop], via);
    } else {
        assert_int_equal(rt->next_hop, -1);
        assert_int_equal(rt->link, link);
    }
    assert_int_equal(rt->cost, cost);
}

/* Is id's router index (as `at` knows it) in at's valid origins for `to`? */
static inline bool valid_origin(const net_t *net, const char *at, const char *to,
                                const char *origin)
{
    const frouter_t *r = &net->r[rid(net, at)];
    const froute_t *rt = route(net, at, to);
    int o = find_known(r, origin);
    assert_true(o > 0);
    return jn_mesh_bits_has(&rt->vo, (unsigned)o);
}

/* Is origin in at's multicast origins for `to`? */
static inline bool mc_origin(const net_t *net, const char *at, const char *to, const char *origin)
{
    const frouter_t *r = &net->r[rid(net, at)];
    const froute_t *rt = route(net, at, to);
    int o = find_known(r, origin);
    assert_true(o > 0);
    return jn_mesh_bits_has(&rt->mc, (unsigned)o);
}

static inline unsigned bits_count(const jn_mesh_bits_t *b)
{
    return (unsigned)(__builtin_popcountll(b->w[0]) + __builtin_popcountll(b->w[1]));
}

/* Does `at` hold mobile key for router `owner`? */
static inline bool has_mobile(const net_t *net, const char *at, const char *owner, const char *key)
{
    const frouter_t *r = &net->r[rid(net, at)];
    int o = find_known(r, owner);
    return o > 0 && find_mobile(r, o, (const uint8_t *)key, strlen(key)) >= 0;
}

static inline void local_mobile(net_t *net, const char *at, const char *key, bool added, int hint)
{
    jn_mesh_local_mobile_CT(net->r[rid(net, at)].mesh, (const uint8_t *)key, strlen(key), added,
                            hint);
}

/* Exit status with the pool leak check (as the other unit tests). */
static inline int finish_mesh_tests(int failures)
{
    jn_pool_thread_exit();
    uint64_t leaked = jn_pool_leak_report(stderr);
    if (leaked != 0)
        fprintf(stderr, "leak: %llu pooled objects still in use\n", (unsigned long long)leaked);
    jn_pool_shutdown();
    return failures != 0 || leaked != 0;
}

/* Quiet logs below warning unless JN_TEST_LOG is set. */
static inline void quiet_logs(void)
{
    if (getenv("JN_TEST_LOG") && strcmp(getenv("JN_TEST_LOG"), "debug") == 0)
        jn_log_set_mask(JN_LOG_MOD_DEFAULT, JN_LOG_MASK_AND_ABOVE(JN_LOG_DEBUG));
    else if (!getenv("JN_TEST_LOG"))
        jn_log_set_mask(JN_LOG_MOD_DEFAULT, JN_LOG_MASK_AND_ABOVE(JN_LOG_ERROR));
}

#endif /* JN_TEST_MESH_UTIL_H */
