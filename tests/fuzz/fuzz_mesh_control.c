/*
 * fuzz_mesh_control.c — libFuzzer target for the routing protocol: the
 * control-message parser (HELLO, RA, LSR, LSU, MAU, MAR) and the engine
 * that acts on what it reads.
 *
 * Input: a selector octet, then the octets that follow the
 * application-properties section of a control message — the amqp-value body
 * section, descriptor included. The selector's low three bits pick the
 * opcode put in application-properties (HELLO, RA, LSR, LSU, MAU, MAR, an
 * unknown opcode, or none); bits 3 to 6 pick the mesh it is delivered to:
 *
 *   not all set (the quick case, fifteen inputs in sixteen): a fresh engine A
 *     with one link, 0, that has just had a HELLO from its neighbour B
 *     (which sees A); the message arrives on link 0, then the engine acts
 *     on what changed (jn_mesh_flush_CT) and runs one tick;
 *   all set (the deep case, about ten times slower): a fresh mesh of three
 *     engines in a line, A -(0)- B -(1)- C, joined by a fake core (as
 *     tests/unit/test_mesh_util.h builds one) and run until it has
 *     converged (C has a mobile address); the message goes to A from B over
 *     link 0, or with bit 7 to B from C over link 1, and the mesh runs three
 *     more ticks.
 *
 * The properties checked, on every callback: a router is added only once
 * and removed only when known and without mobile addresses; a route names
 * exactly one of link and next hop (a known router) and has this router
 * among its valid origins; a router turns unreachable only when it was
 * reachable; a mobile address is added once and removed only when present;
 * jn_mesh_receive_CT returns 0, JN_EPROTO or JN_ENOMEM.
 *
 * With JN_FUZZ_MESH_SEEDS=DIR in the environment, every control message
 * the engines send is also written to DIR in this input format (the seed
 * corpus comes from there).
 */
#include <junction/decoder.h>
#include <junction/encoder.h>
#include <junction/log.h>
#include <junction/mesh.h>
#include <junction/message.h>
#include <mesh/mesh_private.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUTERS 3
#define LINKS   2
#define QUEUE   4096
#define MOBILE  64

typedef struct fmobile {
    int router;
    size_t len;
    uint8_t key[64];
} fmobile_t;

typedef struct frouter {
    int n;
    char id[8];
    jn_mesh_t *mesh;
    bool known[JN_MESH_MAX_ROUTERS];
    char ids[JN_MESH_MAX_ROUTERS][64];
    int link[JN_MESH_MAX_ROUTERS], next_hop[JN_MESH_MAX_ROUTERS];
    bool reachable[JN_MESH_MAX_ROUTERS];
    fmobile_t mobile[MOBILE];
    size_t n_mobile;
} frouter_t;

typedef struct delivery {
    int to, link;
    jn_message_t *msg;
} delivery_t;

static struct {
    frouter_t r[ROUTERS];
    int link_a[LINKS], link_b[LINKS]; /* the routers each link joins */
    delivery_t q[QUEUE];
    size_t head, tail;
    int64_t now;
    const char *seed_dir;
} net;

static void check(bool ok)
{
    if (!ok)
        abort();
}

/* ---- seeds --------------------------------------------------------------- */

static void dump_seed(jn_message_t *msg)
{
    static const char *const names[] = {"?", "HELLO", "RA", "LSR", "LSU", "MAU", "MAR"};
    jn_mesh_msg_t m;
    const char *reason;
    int rc = jn_mesh_parse(msg, &m, &reason);
    jn_mesh_op_t op = m.op;
    jn_mesh_msg_fini(&m);
    jn_iter_t body;
    if (rc != 0 || op == JN_MESH_OP_UNKNOWN || jn_message_section(msg, JN_SEC_BODY, &body) != 0)
        return;
    size_t len = jn_iter_length(&body);
    uint8_t *octets = malloc(len + 1);
    check(octets != NULL);
    octets[0] = (uint8_t)(op - 1);
    jn_iter_copy(&body, octets + 1, len);
    char path[4096];
    static unsigned count;
    snprintf(path, sizeof path, "%s/%s-%u", net.seed_dir, names[op], count++);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(octets, 1, len + 1, f);
        fclose(f);
    }
    free(octets);
}

/* ---- the fake core ------------------------------------------------------- */

static void enqueue(int to, int link, jn_message_t *msg)
{
    if (net.seed_dir)
        dump_seed(msg);
    if (net.tail - net.head >= QUEUE) {
        jn_message_unref(msg); /* a storm: drop, as a full link would */
        return;
    }
    net.q[net.tail++ % QUEUE] = (delivery_t){to, link, msg};
}

static int other_end(int link, int me)
{
    return net.link_a[link] == me ? net.link_b[link] : net.link_a[link];
}

static void f_send_on_link(void *ctx, int link, jn_message_t *msg)
{
    frouter_t *r = ctx;
    if (link < 0 || link >= LINKS || (net.link_a[link] != r->n && net.link_b[link] != r->n)) {
        jn_message_unref(msg);
        return;
    }
    enqueue(other_end(link, r->n), link, msg);
}

static int find_known(const frouter_t *r, const char *id)
{
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++)
        if (r->known[i] && strcmp(r->ids[i], id) == 0)
            return i;
    return -1;
}

/* Forward msg hop by hop along the routes the fake cores hold. */
static void forward(int from, const char *id, jn_message_t *msg)
{
    int cur = from;
    for (int hop = 0; hop < 8; hop++) {
        frouter_t *r = &net.r[cur];
        int idx = find_known(r, id);
        if (idx < 0 || !r->reachable[idx])
            break;
        int link = r->link[idx] >= 0 ? r->link[idx] : r->link[r->next_hop[idx]];
        if (link < 0 || link >= LINKS || (net.link_a[link] != cur && net.link_b[link] != cur))
            break;
        int next = other_end(link, cur);
        if (strcmp(net.r[next].id, id) == 0) {
            enqueue(next, link, msg);
            return;
        }
        cur = next;
    }
    jn_message_unref(msg);
}

static void f_send_to_router(void *ctx, int router, jn_message_t *msg)
{
    frouter_t *r = ctx;
    check(router > 0 && router < JN_MESH_MAX_ROUTERS && r->known[router]);
    forward(r->n, r->ids[router], msg);
}

static void f_send_to_all(void *ctx, jn_message_t *msg)
{
    frouter_t *r = ctx;
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++)
        if (r->known[i] && r->reachable[i])
            forward(r->n, r->ids[i], jn_message_ref(msg));
    jn_message_unref(msg);
}

static void f_router_added(void *ctx, int router, const char *id)
{
    frouter_t *r = ctx;
    check(router > 0 && router < JN_MESH_MAX_ROUTERS && !r->known[router]);
    r->known[router] = true;
    snprintf(r->ids[router], sizeof r->ids[router], "%s", id);
    r->reachable[router] = false;
}

static void f_router_removed(void *ctx, int router)
{
    frouter_t *r = ctx;
    check(router > 0 && router < JN_MESH_MAX_ROUTERS && r->known[router]);
    for (size_t i = 0; i < r->n_mobile; i++)
        check(r->mobile[i].router != router);
    r->known[router] = false;
    r->reachable[router] = false;
}

static void f_router_route(void *ctx, int router, int link, int next_hop, uint32_t cost,
                           const jn_mesh_bits_t *vo, const jn_mesh_bits_t *mc)
{
    frouter_t *r = ctx;
    check(jn_mesh_bits_has(mc, 0) && (mc->w[0] & ~vo->w[0]) == 0 && (mc->w[1] & ~vo->w[1]) == 0);
    check(router > 0 && router < JN_MESH_MAX_ROUTERS && r->known[router]);
    check((link >= 0) != (next_hop >= 0));
    check(next_hop < 0 || (next_hop < JN_MESH_MAX_ROUTERS && r->known[next_hop]));
    check(jn_mesh_bits_has(vo, 0));
    r->reachable[router] = true;
    r->link[router] = link;
    r->next_hop[router] = next_hop;
}

static void f_router_unreachable(void *ctx, int router)
{
    frouter_t *r = ctx;
    check(router > 0 && router < JN_MESH_MAX_ROUTERS && r->known[router] && r->reachable[router]);
    r->reachable[router] = false;
}

static long find_mobile(const frouter_t *r, int router, const uint8_t *key, size_t len)
{
    for (size_t i = 0; i < r->n_mobile; i++)
        if (r->mobile[i].router == router && r->mobile[i].len == len &&
            memcmp(r->mobile[i].key, key, len) == 0)
            return (long)i;
    return -1;
}

static void f_mobile_added(void *ctx, int router, const uint8_t *key, size_t len, int hint)
{
    frouter_t *r = ctx;
    check(router > 0 && router < JN_MESH_MAX_ROUTERS && r->known[router]);
    check(find_mobile(r, router, key, len) < 0);
    check(hint >= -1);
    if (r->n_mobile == MOBILE || len > sizeof r->mobile[0].key)
        return; /* not kept: removal of it is not checked either */
    fmobile_t *m = &r->mobile[r->n_mobile++];
    m->router = router;
    m->len = len;
    memcpy(m->key, key, len);
}

static void f_mobile_removed(void *ctx, int router, const uint8_t *key, size_t len)
{
    frouter_t *r = ctx;
    long i = find_mobile(r, router, key, len);
    if (i < 0) {
        check(r->n_mobile == MOBILE || len > sizeof r->mobile[0].key);
        return;
    }
    r->mobile[i] = r->mobile[--r->n_mobile];
}

/* ---- the mesh ------------------------------------------------------------- */

static void start(int n, const char *id)
{
    frouter_t *r = &net.r[n];
    memset(r, 0, sizeof *r);
    r->n = n;
    snprintf(r->id, sizeof r->id, "%s", id);
    jn_mesh_config_t cfg = {.router_id = r->id, .instance = 1700000000 + n};
    jn_mesh_ops_t ops = {.ctx = r,
                         .send_on_link = f_send_on_link,
                         .send_to_router = f_send_to_router,
                         .send_to_all = f_send_to_all,
                         .router_added = f_router_added,
                         .router_removed = f_router_removed,
                         .router_route = f_router_route,
                         .router_unreachable = f_router_unreachable,
                         .mobile_added = f_mobile_added,
                         .mobile_removed = f_mobile_removed};
    r->mesh = jn_mesh_create(&cfg, &ops);
    check(r->mesh != NULL);
}

static void deliver(int to, int link, jn_message_t *msg)
{
    int rc = jn_mesh_receive_CT(net.r[to].mesh, link, 1, msg);
    check(rc == 0 || rc == JN_EPROTO || rc == JN_ENOMEM);
}

static void pump(void)
{
    while (net.head != net.tail) {
        delivery_t d = net.q[net.head++ % QUEUE];
        if (net.r[d.to].mesh) /* the quick case's B has no engine */
            deliver(d.to, d.link, d.msg);
        jn_message_unref(d.msg);
    }
}

static void tick(int count)
{
    for (int i = 0; i < count; i++) {
        net.now += JN_MESH_TICK_MS;
        for (int n = 0; n < ROUTERS; n++)
            jn_mesh_tick_CT(net.r[n].mesh, net.now);
        pump();
    }
}

static void mesh_up(void)
{
    static const char *const ids[ROUTERS] = {"A", "B", "C"};
    net.head = net.tail = 0;
    net.now = 100000;
    for (int n = 0; n < ROUTERS; n++)
        start(n, ids[n]);
    for (int l = 0; l < LINKS; l++) {
        net.link_a[l] = l;
        net.link_b[l] = l + 1;
        jn_mesh_link_added_CT(net.r[l].mesh, l, 1);
        jn_mesh_link_added_CT(net.r[l + 1].mesh, l, 1);
    }
    tick(3);
    jn_mesh_local_mobile_CT(net.r[2].mesh, (const uint8_t *)"M0queue", 7, true,
                            JN_MESH_HINT_BALANCED);
    tick(3);
}

static void mesh_down(void)
{
    pump();
    for (int n = 0; n < ROUTERS; n++) {
        jn_mesh_free(net.r[n].mesh);
        net.r[n].mesh = NULL;
    }
}

/* The control message of the input (see the top of the file). */
static jn_message_t *make_message(const uint8_t *data, size_t size)
{
    static const char *const opcodes[] = {"HELLO", "RA", "LSR", "LSU", "MAU", "MAR", "NOPE"};
    jn_encoder_t e;
    jn_encoder_init(&e);
    unsigned op = data[0] & 7;
    if (op < 7) {
        jn_enc_descriptor_ulong(&e, JN_SECTION_APPLICATION_PROPERTIES);
        jn_enc_map_begin(&e);
        jn_enc_cstring(&e, "opcode");
        jn_enc_cstring(&e, opcodes[op]);
        jn_enc_map_end(&e);
    }
    size_t len;
    const uint8_t *p = jn_encoder_data(&e, &len);
    check(jn_encoder_error(&e) == 0);
    jn_message_t *m = jn_message_new();
    check(m != NULL);
    check(len == 0 || jn_message_append(m, p, len) == 0);
    check(size <= 1 || jn_message_append(m, data + 1, size - 1) == 0);
    jn_message_set_complete(m);
    jn_encoder_free(&e);
    return m;
}

/* The quick case's engine: A, with neighbour B on link 0. */
static void quick_up(void)
{
    net.head = net.tail = 0;
    net.now = 100000;
    start(0, "A");
    memset(&net.r[1], 0, sizeof net.r[1]); /* B: no engine, a name only */
    net.r[1].n = 1;
    snprintf(net.r[1].id, sizeof net.r[1].id, "B");
    net.link_a[0] = 0;
    net.link_b[0] = 1;
    jn_mesh_link_added_CT(net.r[0].mesh, 0, 1);
    jn_mesh_tick_CT(net.r[0].mesh, net.now);

    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_APPLICATION_PROPERTIES);
    jn_enc_map_begin(&e);
    jn_enc_cstring(&e, "opcode");
    jn_enc_cstring(&e, "HELLO");
    jn_enc_map_end(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_AMQP_VALUE);
    jn_enc_map_begin(&e);
    jn_enc_cstring(&e, "id");
    jn_enc_cstring(&e, "B");
    jn_enc_cstring(&e, "pv");
    jn_enc_long(&e, 1);
    jn_enc_cstring(&e, "instance");
    jn_enc_long(&e, 1700000001);
    jn_enc_cstring(&e, "seen");
    jn_enc_list_begin(&e);
    jn_enc_cstring(&e, "A");
    jn_enc_list_end(&e);
    jn_enc_map_end(&e);
    size_t len;
    const uint8_t *p = jn_encoder_data(&e, &len);
    check(jn_encoder_error(&e) == 0);
    jn_message_t *hello = jn_message_new();
    check(hello && jn_message_append(hello, p, len) == 0);
    jn_message_set_complete(hello);
    jn_encoder_free(&e);
    deliver(0, 0, hello);
    jn_message_unref(hello);
    pump(); /* A's answers go to B, which has no engine: dropped */
    check(find_known(&net.r[0], "B") > 0); /* B is A's neighbour */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool once;
    if (!once) {
        once = true;
        net.seed_dir = getenv("JN_FUZZ_MESH_SEEDS");
        if (!net.seed_dir)
            jn_log_set_mask(JN_LOG_MOD_DEFAULT, JN_LOG_MASK_AND_ABOVE(JN_LOG_CRITICAL));
    }
    if (size < 1)
        return 0;
    bool deep = (data[0] & 0x78) == 0x78;
    if (deep)
        mesh_up();
    else
        quick_up();
    jn_message_t *m = make_message(data, size);
    if (deep && (data[0] & 0x80))
        deliver(1, 1, m); /* to B, from C */
    else
        deliver(0, 0, m); /* to A, from B */
    jn_message_unref(m);
    pump();
    if (deep) {
        tick(3);
        mesh_down();
        return 0;
    }
    (void)jn_mesh_flush_CT(net.r[0].mesh);
    pump();
    net.now += JN_MESH_TICK_MS;
    jn_mesh_tick_CT(net.r[0].mesh, net.now);
    pump();
    jn_mesh_free(net.r[0].mesh);
    net.r[0].mesh = NULL;
    return 0;
}
