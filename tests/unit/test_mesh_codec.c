/*
 * test_mesh_codec.c — the wire form of the six control messages
 * (docs/protocol.md, "The mesh": "Control messages"): exact octets of what this engine
 * composes, the key and value types of every message (str vs sym keys, int
 * vs long, list not array, `to` addresses), 1.19's own list32/map32
 * encodings accepted, and malformed messages refused with JN_EPROTO
 * without any change to the engine.
 */
#include "test_mesh_util.h"

/* ---- octet builders ------------------------------------------------------ */

typedef struct obuf {
    uint8_t d[2048];
    size_t n;
} obuf_t;

static void put(obuf_t *b, const void *p, size_t n)
{
    assert_true(b->n + n <= sizeof b->d);
    memcpy(b->d + b->n, p, n);
    b->n += n;
}

static void put1(obuf_t *b, uint8_t v)
{
    put(b, &v, 1);
}

static void put32(obuf_t *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    put(b, x, 4);
}

static void str8(obuf_t *b, uint8_t code, const char *s)
{
    put1(b, code);
    put1(b, (uint8_t)strlen(s));
    put(b, s, strlen(s));
}

/* A compound (list/map) around inner's octets: 8-bit or 32-bit form. */
static void compound(obuf_t *b, uint8_t code, uint32_t count, const obuf_t *inner)
{
    put1(b, code);
    if (code == JN_AMQP_LIST32 || code == JN_AMQP_MAP32) {
        put32(b, (uint32_t)inner->n + 4);
        put32(b, count);
    } else {
        put1(b, (uint8_t)(inner->n + 1));
        put1(b, (uint8_t)count);
    }
    put(b, inner->d, inner->n);
}

static void section(obuf_t *b, uint8_t descriptor)
{
    put1(b, 0x00);
    put1(b, JN_AMQP_SMALLULONG);
    put1(b, descriptor);
}

/* Header [false], properties [null, null, to (, null x3)], application
 * properties {opcode: op}: in 8-bit or 32-bit compound forms. */
static void envelope(obuf_t *b, bool wide, bool python, const char *to, const char *op)
{
    uint8_t list = wide ? JN_AMQP_LIST32 : JN_AMQP_LIST8;
    uint8_t map = wide ? JN_AMQP_MAP32 : JN_AMQP_MAP8;
    obuf_t in = {.n = 0};
    put1(&in, JN_AMQP_FALSE);
    section(b, JN_SECTION_HEADER);
    compound(b, list, 1, &in);
    in.n = 0;
    put1(&in, JN_AMQP_NULL);
    put1(&in, JN_AMQP_NULL);
    str8(&in, JN_AMQP_STR8, to);
    for (int i = 0; python && i < 3; i++)
        put1(&in, JN_AMQP_NULL);
    section(b, JN_SECTION_PROPERTIES);
    compound(b, list, python ? 6 : 3, &in);
    in.n = 0;
    str8(&in, python ? JN_AMQP_STR8 : JN_AMQP_SYM8, "opcode");
    str8(&in, JN_AMQP_STR8, op);
    section(b, JN_SECTION_APPLICATION_PROPERTIES);
    compound(b, map, 2, &in);
}

/* The HELLO body entries of a capture of 1.19's HELLO ("Control messages"), with
 * `seen` as given (octets of one list value). */
static void hello_entries(obuf_t *e, const char *id, const obuf_t *seen)
{
    str8(e, JN_AMQP_STR8, "id");
    str8(e, JN_AMQP_STR8, id);
    str8(e, JN_AMQP_STR8, "pv");
    put1(e, JN_AMQP_SMALLINT);
    put1(e, 1);
    str8(e, JN_AMQP_STR8, "area");
    str8(e, JN_AMQP_STR8, "0");
    str8(e, JN_AMQP_STR8, "instance");
    put1(e, JN_AMQP_INT);
    put32(e, 1796037900);
    str8(e, JN_AMQP_STR8, "seen");
    put(e, seen->d, seen->n);
}

static jn_message_t *message_of(const obuf_t *b)
{
    jn_message_t *m = jn_message_new();
    assert_non_null(m);
    assert_int_equal(jn_message_append(m, b->d, b->n), 0);
    jn_message_set_complete(m);
    return m;
}

static void message_octets(const jn_message_t *m, obuf_t *out)
{
    out->n = 0;
    for (const jn_buffer_t *x = jn_message_buffers(m); x; x = jn_buffer_next(x))
        put(out, x->data, jn_buffer_size(x));
}

/* ---- a single engine as the fake core sees it ---------------------------- */

static net_t *one_router(void)
{
    net_t *net = net_new();
    net_add(net, "A");
    jn_mesh_link_added_CT(net->r[0].mesh, 0, 1);
    net->r[0].capture = true;
    return net;
}

static int feed(net_t *net, jn_message_t *m)
{
    int rc = jn_mesh_receive_CT(net->r[0].mesh, 0, 1, m);
    jn_message_unref(m);
    return rc;
}

static unsigned callbacks(const frouter_t *r)
{
    return r->added + r->removed + r->route_calls + r->unreachable_calls + r->mob_added +
           r->mob_removed;
}

/* ---- exact octets --------------------------------------------------------- */

/* Our HELLO is 1.19's captured HELLO in 8-bit compound forms. */
static void test_hello_octets_match_the_capture(void **state)
{
    jn_mesh_strs_t seen = {0};
    jn_message_t *m = jn_mesh_compose_hello("A", 1796037900, &seen);
    assert_non_null(m);
    obuf_t got, want = {.n = 0}, e = {.n = 0}, list0 = {.n = 0};
    put1(&list0, JN_AMQP_LIST0);
    envelope(&want, false, true, "amqp:/_local/qdhello", "HELLO");
    hello_entries(&e, "A", &list0);
    section(&want, JN_SECTION_AMQP_VALUE);
    compound(&want, JN_AMQP_MAP8, 10, &e);
    message_octets(m, &got);
    assert_int_equal(got.n, want.n);
    assert_memory_equal(got.d, want.d, want.n);
    jn_message_unref(m);
}

/* Our differential MAU is 1.19's captured one (8-bit forms). */
static void test_mau_octets_match_the_capture(void **state)
{
    jn_mesh_strs_t add = {0}, del = {0};
    assert_int_equal(jn_mesh_strs_add(&add, "M0q1", 4, 3), 0);
    jn_message_t *m = jn_mesh_compose_mau_diff("A", 1, &add, &del);
    assert_non_null(m);
    obuf_t got, want = {.n = 0}, e = {.n = 0}, in = {.n = 0};
    envelope(&want, false, false, "_topo/0/all/qdrouter.ma", "MAU");
    str8(&e, JN_AMQP_SYM8, "id");
    str8(&e, JN_AMQP_STR8, "A");
    str8(&e, JN_AMQP_SYM8, "pv");
    put1(&e, JN_AMQP_SMALLLONG);
    put1(&e, 1);
    str8(&e, JN_AMQP_SYM8, "area");
    str8(&e, JN_AMQP_STR8, "0");
    str8(&e, JN_AMQP_SYM8, "mobile_seq");
    put1(&e, JN_AMQP_SMALLLONG);
    put1(&e, 1);
    str8(&e, JN_AMQP_SYM8, "hints");
    put1(&in, JN_AMQP_SMALLINT);
    put1(&in, 3);
    compound(&e, JN_AMQP_LIST8, 1, &in);
    str8(&e, JN_AMQP_SYM8, "add");
    in.n = 0;
    str8(&in, JN_AMQP_STR8, "M0q1");
    compound(&e, JN_AMQP_LIST8, 1, &in);
    str8(&e, JN_AMQP_SYM8, "del");
    put1(&e, JN_AMQP_LIST0);
    section(&want, JN_SECTION_AMQP_VALUE);
    compound(&want, JN_AMQP_MAP8, 14, &e);
    message_octets(m, &got);
    assert_int_equal(got.n, want.n);
    assert_memory_equal(got.d, want.d, want.n);
    jn_message_unref(m);
    jn_mesh_strs_free(&add);
}

/* ---- structure of each message ----------------------------------------- */

/* One expected body entry: key, key type, value type (and for integers
 * the format code). */
typedef struct entry {
    const char *key;
    jn_amqp_type_t key_type, value_type;
    uint8_t code; /* 0: any */
} entry_t;

static void check_properties(jn_message_t *m, unsigned count, const char *to)
{
    jn_iter_t sec;
    jn_decoder_t d, c;
    jn_field_t f;
    assert_int_equal(jn_message_parse(m, JN_DEPTH_ALL), 0);
    assert_int_equal(jn_message_section(m, JN_SEC_HEADER, &sec), 0);
    jn_decoder_init(&d, &sec, true);
    assert_int_equal(jn_decoder_next(&d, &f), 1);
    assert_int_equal(f.count, 1);
    assert_int_equal(jn_decoder_enter(&d, &f, &c), 0);
    assert_int_equal(jn_decoder_next(&c, &f), 1);
    assert_int_equal(f.type, JN_TYPE_BOOLEAN);
    assert_false(f.value.b);
    assert_int_equal(jn_message_section(m, JN_SEC_PROPERTIES, &sec), 0);
    jn_decoder_init(&d, &sec, true);
    assert_int_equal(jn_decoder_next(&d, &f), 1);
    assert_int_equal(f.count, count);
    assert_int_equal(jn_decoder_enter(&d, &f, &c), 0);
    for (unsigned i = 0; i < count; i++) {
        assert_int_equal(jn_decoder_next(&c, &f), 1);
        if (i == 2) {
            assert_int_equal(f.type, JN_TYPE_STRING);
            assert_true(jn_field_equal_string(&f, to));
        } else {
            assert_int_equal(f.type, JN_TYPE_NULL);
        }
    }
}

static void check_map(jn_decoder_t *d, const jn_field_t *map, const entry_t *want, size_t n)
{
    jn_decoder_t c;
    jn_field_t k, v;
    assert_int_equal(map->type, JN_TYPE_MAP);
    assert_int_equal(map->count, 2 * n);
    assert_int_equal(jn_decoder_enter(d, map, &c), 0);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(jn_decoder_next(&c, &k), 1);
        assert_int_equal(jn_decoder_next(&c, &v), 1);
        if (!jn_field_equal_string(&k, want[i].key))
            fail_msg("entry %zu is not %s", i, want[i].key);
        assert_int_equal(k.type, want[i].key_type);
        if (v.type != want[i].value_type)
            fail_msg("%s: %s, expected %s", want[i].key, jn_amqp_type_name(v.type),
                     jn_amqp_type_name(want[i].value_type));
        if (want[i].code)
            assert_int_equal(v.code, want[i].code);
    }
}

/* application-properties {opcode: op} with the key type; the body map. */
static void check_body(jn_message_t *m, jn_amqp_type_t key_type, const char *op,
                       const entry_t *want, size_t n)
{
    const entry_t opcode[] = {{"opcode", key_type, JN_TYPE_STRING, 0}};
    jn_iter_t sec;
    jn_decoder_t d;
    jn_field_t f;
    assert_int_equal(jn_message_parse(m, JN_DEPTH_ALL), 0);
    assert_int_equal(jn_message_section(m, JN_SEC_APPLICATION_PROPERTIES, &sec), 0);
    jn_decoder_init(&d, &sec, true);
    assert_int_equal(jn_decoder_next(&d, &f), 1);
    check_map(&d, &f, opcode, 1);
    assert_string_equal(msg_opname(m), op);
    assert_int_equal(jn_message_section(m, JN_SEC_BODY, &sec), 0);
    jn_decoder_init(&d, &sec, true);
    assert_int_equal(jn_decoder_next(&d, &f), 1);
    assert_true(f.described);
    assert_int_equal(f.descriptor_code, JN_SECTION_AMQP_VALUE);
    check_map(&d, &f, want, n);
}

#define S JN_TYPE_STRING
#define Y JN_TYPE_SYMBOL

static void test_python_composed_messages(void **state)
{
    jn_mesh_strs_t seen = {0}, peers = {0};
    assert_int_equal(jn_mesh_strs_add(&seen, "B", 1, 0), 0);
    assert_int_equal(jn_mesh_strs_add(&peers, "B", 1, 7), 0);
    const entry_t hello[] = {{"id", S, S, JN_AMQP_STR8},
                             {"pv", S, JN_TYPE_INT, JN_AMQP_SMALLINT},
                             {"area", S, S, 0},
                             {"instance", S, JN_TYPE_INT, JN_AMQP_INT},
                             {"seen", S, JN_TYPE_LIST, 0}};
    jn_message_t *m = jn_mesh_compose_hello("A", 1796037900, &seen);
    check_properties(m, 6, "amqp:/_local/qdhello");
    check_body(m, S, "HELLO", hello, 5);
    jn_message_unref(m);

    const entry_t ra[] = {{"id", S, S, 0},
                          {"pv", S, JN_TYPE_INT, 0},
                          {"area", S, S, 0},
                          {"instance", S, JN_TYPE_INT, 0},
                          {"ls_seq", S, JN_TYPE_INT, JN_AMQP_SMALLINT},
                          {"mobile_seq", S, JN_TYPE_INT, JN_AMQP_INT}};
    m = jn_mesh_compose_ra("A", 1796037900, 3, 1000);
    check_properties(m, 6, "amqp:/_topo/0/all/qdrouter");
    check_body(m, S, "RA", ra, 6);
    jn_message_unref(m);

    /* a sequence beyond 32 bits becomes long, as a Python int does */
    const entry_t ra_long[] = {{"id", S, S, 0},
                               {"pv", S, JN_TYPE_INT, 0},
                               {"area", S, S, 0},
                               {"instance", S, JN_TYPE_INT, 0},
                               {"ls_seq", S, JN_TYPE_LONG, 0},
                               {"mobile_seq", S, JN_TYPE_INT, 0}};
    m = jn_mesh_compose_ra("A", 1796037900, 1ull << 33, 0);
    check_body(m, S, "RA", ra_long, 6);
    jn_message_unref(m);

    const entry_t lsr[] = {{"id", S, S, 0}, {"pv", S, JN_TYPE_INT, 0}, {"area", S, S, 0}};
    m = jn_mesh_compose_lsr("A", "B");
    check_properties(m, 6, "amqp:/_topo/0/B/qdrouter");
    check_body(m, S, "LSR", lsr, 3);
    jn_message_unref(m);

    const entry_t lsu[] = {{"id", S, S, 0},
                           {"pv", S, JN_TYPE_INT, 0},
                           {"area", S, S, 0},
                           {"instance", S, JN_TYPE_INT, 0},
                           {"ls_seq", S, JN_TYPE_INT, 0},
                           {"ls", S, JN_TYPE_MAP, 0}};
    m = jn_mesh_compose_lsu("A", 1796037900, "B", 4, &peers);
    check_properties(m, 6, "amqp:/_topo/0/B/qdrouter");
    check_body(m, S, "LSU", lsu, 6);
    jn_mesh_msg_t p;
    const char *why;
    assert_int_equal(jn_mesh_parse(m, &p, &why), 0);
    assert_int_equal(p.ls_inner_seq, 4);
    assert_int_equal(p.peers.n, 1);
    assert_string_equal(p.peers.s[0], "B");
    assert_int_equal(p.peers.val[0], 7);
    jn_mesh_msg_fini(&p);
    jn_message_unref(m);
    jn_mesh_strs_free(&seen);
    jn_mesh_strs_free(&peers);
}

static void test_core_composed_messages(void **state)
{
    jn_mesh_strs_t keys = {0}, none = {0};
    assert_int_equal(jn_mesh_strs_add(&keys, "M0q1", 4, 2), 0);
    const entry_t diff[] = {{"id", Y, S, 0},
                            {"pv", Y, JN_TYPE_LONG, JN_AMQP_SMALLLONG},
                            {"area", Y, S, 0},
                            {"mobile_seq", Y, JN_TYPE_LONG, 0},
                            {"hints", Y, JN_TYPE_LIST, 0},
                            {"add", Y, JN_TYPE_LIST, 0},
                            {"del", Y, JN_TYPE_LIST, 0}};
    jn_message_t *m = jn_mesh_compose_mau_diff("A", 300, &keys, &none);
    check_properties(m, 3, "_topo/0/all/qdrouter.ma");
    check_body(m, Y, "MAU", diff, 7);
    jn_message_unref(m);

    const entry_t abs[] = {{"id", Y, S, 0},
                           {"pv", Y, JN_TYPE_LONG, 0},
                           {"area", Y, S, 0},
                           {"mobile_seq", Y, JN_TYPE_LONG, 0},
                           {"exist", Y, JN_TYPE_LIST, 0},
                           {"hints", Y, JN_TYPE_LIST, 0}};
    m = jn_mesh_compose_mau_abs("A", "B", 5, &keys);
    check_properties(m, 3, "amqp:/_topo/0/B/qdrouter.ma");
    check_body(m, Y, "MAU", abs, 6);
    jn_mesh_msg_t p;
    const char *why;
    assert_int_equal(jn_mesh_parse(m, &p, &why), 0);
    assert_true(p.has_exist);
    assert_int_equal(p.exist.n, 1);
    assert_int_equal(p.exist.val[0], 2); /* the hint came back */
    jn_mesh_msg_fini(&p);
    jn_message_unref(m);

    const entry_t mar[] = {{"id", Y, S, 0},
                           {"pv", Y, JN_TYPE_LONG, 0},
                           {"area", Y, S, 0},
                           {"have_seq", Y, JN_TYPE_LONG, JN_AMQP_SMALLLONG}};
    m = jn_mesh_compose_mar("A", "B", 0);
    check_properties(m, 3, "amqp:/_topo/0/B/qdrouter.ma");
    check_body(m, Y, "MAR", mar, 4);
    jn_message_unref(m);
    jn_mesh_strs_free(&keys);
}

/* What the engine sends goes where "Control messages" says. */
static void test_engine_sends_to_the_right_places(void **state)
{
    net_t *net = one_router();
    frouter_t *a = &net->r[0];
    net_tick(net);
    assert_int_equal(a->n_sent, 2);
    assert_int_equal(a->sent[0].kind, 'L');
    assert_int_equal(a->sent[0].target, 0);
    assert_string_equal(msg_opname(a->sent[0].msg), "HELLO");
    assert_int_equal(a->sent[1].kind, 'A');
    assert_string_equal(msg_opname(a->sent[1].msg), "RA");
    jn_iter_t to;
    assert_int_equal(jn_message_to(a->sent[0].msg, &to), 0);
    net_free(net);
}

/* ---- 1.19's encodings accepted ------------------------------------------- */

static jn_message_t *wide_hello(const char *id, const char *seen_id)
{
    obuf_t b = {.n = 0}, e = {.n = 0}, seen = {.n = 0}, in = {.n = 0};
    if (seen_id)
        str8(&in, JN_AMQP_STR8, seen_id);
    compound(&seen, JN_AMQP_LIST32, seen_id ? 1 : 0, &in);
    envelope(&b, true, true, "amqp:/_local/qdhello", "HELLO");
    hello_entries(&e, id, &seen);
    section(&b, JN_SECTION_AMQP_VALUE);
    compound(&b, JN_AMQP_MAP32, 10, &e);
    return message_of(&b);
}

static void test_wide_forms_of_1_19_are_accepted(void **state)
{
    net_t *net = one_router();
    frouter_t *a = &net->r[0];
    net_tick(net);
    capture_clear(a);
    /* captured form with list0 seen: B only gets into A's seen list */
    assert_int_equal(feed(net, wide_hello("B", NULL)), 0);
    assert_int_equal(a->added, 0);
    /* list32 seen naming A: B becomes a neighbour */
    assert_int_equal(feed(net, wide_hello("B", "A")), 0);
    assert_int_equal(a->added, 1);
    jn_mesh_node_t *nb = jn_mesh_node_find_CT(a->mesh, "B", 1);
    assert_non_null(nb);
    assert_int_equal(nb->link, 0);
    assert_int_equal(nb->instance, 1796037900);
    net_tick(net);
    assert_true(route(net, "A", "B")->reachable);
    /* A's next HELLO lists B */
    assert_string_equal(msg_opname(a->sent[0].msg), "HELLO");
    jn_mesh_msg_t p;
    const char *why;
    assert_int_equal(jn_mesh_parse(a->sent[0].msg, &p, &why), 0);
    assert_int_equal(p.seen.n, 1);
    assert_string_equal(p.seen.s[0], "B");
    jn_mesh_msg_fini(&p);

    /* the captured differential MAU, list32 everywhere */
    obuf_t b = {.n = 0}, e = {.n = 0}, in = {.n = 0};
    envelope(&b, true, false, "_topo/0/all/qdrouter.ma", "MAU");
    str8(&e, JN_AMQP_SYM8, "id");
    str8(&e, JN_AMQP_STR8, "B");
    str8(&e, JN_AMQP_SYM8, "pv");
    put1(&e, JN_AMQP_SMALLLONG);
    put1(&e, 1);
    str8(&e, JN_AMQP_SYM8, "area");
    str8(&e, JN_AMQP_STR8, "0");
    str8(&e, JN_AMQP_SYM8, "mobile_seq");
    put1(&e, JN_AMQP_SMALLLONG);
    put1(&e, 1);
    str8(&e, JN_AMQP_SYM8, "hints");
    put1(&in, JN_AMQP_SMALLINT);
    put1(&in, 3);
    compound(&e, JN_AMQP_LIST32, 1, &in);
    str8(&e, JN_AMQP_SYM8, "add");
    in.n = 0;
    str8(&in, JN_AMQP_STR8, "M0q1");
    compound(&e, JN_AMQP_LIST32, 1, &in);
    str8(&e, JN_AMQP_SYM8, "del");
    in.n = 0;
    compound(&e, JN_AMQP_LIST32, 0, &in);
    section(&b, JN_SECTION_AMQP_VALUE);
    compound(&b, JN_AMQP_MAP32, 14, &e);
    assert_int_equal(feed(net, message_of(&b)), 0);
    assert_true(has_mobile(net, "A", "B", "M0q1"));
    assert_int_equal(a->mobile[0].hint, JN_MESH_HINT_BALANCED);
    net_free(net);
}

/* Every message parses the same when its octets are split into buffers of
 * 1, 2, 3 and 7 octets (every field cut at every boundary). */
static void test_parse_in_tiny_buffers(void **state)
{
    static const size_t chunks[] = {1, 2, 3, 7};
    jn_mesh_strs_t peers = {0};
    assert_int_equal(jn_mesh_strs_add(&peers, "B-router", 8, 3), 0);
    assert_int_equal(jn_mesh_strs_add(&peers, "C", 1, 1), 0);
    jn_message_t *src[] = {wide_hello("B", "A"),
                           jn_mesh_compose_lsu("A", 1796037900, "B", 9, &peers),
                           jn_mesh_compose_mau_diff("A", 2, &peers, &peers)};
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++) {
        obuf_t octets;
        message_octets(src[i], &octets);
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
            jn_buffer_list_t list;
            jn_buffer_list_init(&list);
            assert_int_equal(jn_buffer_list_append_split(&list, octets.d, octets.n, chunks[c]), 0);
            jn_message_t *m = jn_message_new();
            assert_int_equal(jn_message_append_buffers(m, &list), 0);
            jn_message_set_complete(m);
            jn_mesh_msg_t p;
            const char *why;
            assert_int_equal(jn_mesh_parse(m, &p, &why), 0);
            if (i == 0) {
                assert_string_equal(p.id, "B");
                assert_int_equal(p.instance, 1796037900);
                assert_int_equal(p.seen.n, 1);
                assert_string_equal(p.seen.s[0], "A");
            } else if (i == 1) {
                assert_int_equal(p.ls_inner_seq, 9);
                assert_int_equal(p.peers.n, 2);
                assert_string_equal(p.peers.s[0], "B-router");
                assert_int_equal(p.peers.val[0], 3);
            } else {
                assert_int_equal(p.mobile_seq, 2);
                assert_int_equal(p.add.n, 2);
                assert_int_equal(p.add.val[1], 1);
                assert_int_equal(p.del.n, 2);
            }
            jn_mesh_msg_fini(&p);
            jn_message_unref(m);
        }
        jn_message_unref(src[i]);
    }
    jn_mesh_strs_free(&peers);
}

/* ---- building arbitrary control messages ------------------------------- */

typedef void (*body_fn)(jn_encoder_t *e);

/* A Python-style control message whose body map entries body() writes. */
static jn_message_t *build(const char *op, body_fn body)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_APPLICATION_PROPERTIES);
    jn_enc_map_begin(&e);
    jn_enc_cstring(&e, "opcode");
    jn_enc_cstring(&e, op);
    jn_enc_map_end(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_AMQP_VALUE);
    jn_enc_map_begin(&e);
    body(&e);
    jn_enc_map_end(&e);
    assert_int_equal(jn_encoder_error(&e), 0);
    size_t n;
    const uint8_t *p = jn_encoder_data(&e, &n);
    jn_message_t *m = jn_message_new();
    assert_int_equal(jn_message_append(m, p, n), 0);
    jn_message_set_complete(m);
    jn_encoder_free(&e);
    return m;
}

static void kv_str(jn_encoder_t *e, const char *k, const char *v)
{
    jn_enc_cstring(e, k);
    jn_enc_cstring(e, v);
}

static void seen_a(jn_encoder_t *e)
{
    jn_enc_cstring(e, "seen");
    jn_enc_list_begin(e);
    jn_enc_cstring(e, "A");
    jn_enc_list_end(e);
}

static void hello_ok_sym_keys_and_odd_ints(jn_encoder_t *e)
{
    jn_enc_csymbol(e, "id");
    jn_enc_csymbol(e, "B");
    jn_enc_csymbol(e, "pv");
    jn_enc_ulong(e, 1);
    jn_enc_csymbol(e, "instance");
    jn_enc_uint(e, 77);
    jn_enc_csymbol(e, "unknown");
    jn_enc_bool(e, true);
    jn_enc_csymbol(e, "seen");
    jn_enc_list_begin(e);
    jn_enc_csymbol(e, "A");
    jn_enc_list_end(e);
}

static void hello_no_id(jn_encoder_t *e)
{
    seen_a(e);
}

static void hello_id_not_string(jn_encoder_t *e)
{
    jn_enc_cstring(e, "id");
    jn_enc_int(e, 5);
    seen_a(e);
}

static void hello_seen_not_list(jn_encoder_t *e)
{
    kv_str(e, "id", "B");
    kv_str(e, "seen", "A");
}

static void hello_seen_array(jn_encoder_t *e)
{
    kv_str(e, "id", "B");
    jn_enc_cstring(e, "seen");
    jn_enc_array_begin(e, JN_AMQP_STR8);
    jn_enc_cstring(e, "A");
    jn_enc_array_end(e);
}

static void hello_no_seen(jn_encoder_t *e)
{
    kv_str(e, "id", "B");
}

static void hello_instance_bool(jn_encoder_t *e)
{
    kv_str(e, "id", "B");
    jn_enc_cstring(e, "instance");
    jn_enc_bool(e, true);
    seen_a(e);
}

static void ra_ls_seq_bool(jn_encoder_t *e)
{
    kv_str(e, "id", "B");
    jn_enc_cstring(e, "ls_seq");
    jn_enc_bool(e, true);
    jn_enc_cstring(e, "mobile_seq");
    jn_enc_int(e, 0);
}

static void ra_no_mobile_seq(jn_encoder_t *e)
{
    kv_str(e, "id", "B");
    jn_enc_cstring(e, "ls_seq");
    jn_enc_int(e, 1);
}

static void lsu_peers_array(jn_encoder_t *e)
{
    kv_str(e, "id", "B");
    jn_enc_cstring(e, "ls_seq");
    jn_enc_int(e, 1);
    jn_enc_cstring(e, "ls");
    jn_enc_map_begin(e);
    kv_str(e, "id", "B");
    jn_enc_cstring(e, "ls_seq");
    jn_enc_int(e, 1);
    jn_enc_cstring(e, "peers");
    jn_enc_array_begin(e, JN_AMQP_STR8);
    jn_enc_cstring(e, "A");
    jn_enc_array_end(e);
    jn_enc_map_end(e);
}

static void lsu_cost_bool(jn_encoder_t *e)
{
    kv_str(e, "id", "B");
    jn_enc_cstring(e, "ls_seq");
    jn_enc_int(e, 1);
    jn_enc_cstring(e, "ls");
    jn_enc_map_begin(e);
    kv_str(e, "id", "B");
    jn_enc_cstring(e, "ls_seq");
    jn_enc_int(e, 1);
    jn_enc_cstring(e, "peers");
    jn_enc_map_begin(e);
    jn_enc_cstring(e, "A");
    jn_enc_bool(e, true);
    jn_enc_map_end(e);
    jn_enc_map_end(e);
}

static void mau_exist_and_add(jn_encoder_t *e)
{
    kv_str(e, "id", "B");
    jn_enc_cstring(e, "mobile_seq");
    jn_enc_long(e, 1);
    jn_enc_cstring(e, "exist");
    jn_enc_list_begin(e);
    jn_enc_list_end(e);
    jn_enc_cstring(e, "add");
    jn_enc_list_begin(e);
    jn_enc_list_end(e);
}

static void mau_add_without_del(jn_encoder_t *e)
{
    kv_str(e, "id", "B");
    jn_enc_cstring(e, "mobile_seq");
    jn_enc_long(e, 1);
    jn_enc_cstring(e, "add");
    jn_enc_list_begin(e);
    jn_enc_list_end(e);
}

static void mar_seq_bool(jn_encoder_t *e)
{
    kv_str(e, "id", "B");
    jn_enc_cstring(e, "have_seq");
    jn_enc_bool(e, false);
}

/* Malformed messages: JN_EPROTO, no callback, nothing sent, no record. */
static void test_malformed_messages_change_nothing(void **state)
{
    static const struct {
        const char *op;
        body_fn body;
    } cases[] = {
        {"HELLO", hello_no_id},      {"HELLO", hello_id_not_string}, {"HELLO", hello_seen_not_list},
        {"HELLO", hello_seen_array}, {"HELLO", hello_no_seen},       {"HELLO", hello_instance_bool},
        {"RA", ra_ls_seq_bool},      {"RA", ra_no_mobile_seq},       {"LSU", lsu_peers_array},
        {"LSU", lsu_cost_bool},      {"MAU", mau_exist_and_add},     {"MAU", mau_add_without_del},
        {"MAR", mar_seq_bool},
    };
    net_t *net = one_router();
    frouter_t *a = &net->r[0];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        jn_message_t *m = build(cases[i].op, cases[i].body);
        if (feed(net, m) != JN_EPROTO)
            fail_msg("case %zu (%s) was accepted", i, cases[i].op);
        assert_int_equal(callbacks(a), 0);
        assert_int_equal(a->n_sent, 0);
        assert_int_equal(a->mesh->seen.n, 0);
    }
    /* no application-properties at all */
    obuf_t b = {.n = 0}, in = {.n = 0};
    section(&b, JN_SECTION_AMQP_VALUE);
    compound(&b, JN_AMQP_MAP8, 0, &in);
    assert_int_equal(feed(net, message_of(&b)), JN_EPROTO);
    /* body not a map */
    b.n = 0;
    envelope(&b, false, true, "amqp:/_local/qdhello", "HELLO");
    section(&b, JN_SECTION_AMQP_VALUE);
    str8(&b, JN_AMQP_STR8, "hello");
    assert_int_equal(feed(net, message_of(&b)), JN_EPROTO);
    assert_int_equal(callbacks(a), 0);
    /* a well-formed HELLO with symbol keys and other integer types works */
    assert_int_equal(feed(net, build("HELLO", hello_ok_sym_keys_and_odd_ints)), 0);
    assert_int_equal(a->added, 1);
    assert_int_equal(jn_mesh_node_find_CT(a->mesh, "B", 1)->instance, 77);
    net_free(net);
}

static void hello_pv2(jn_encoder_t *e)
{
    kv_str(e, "id", "B");
    jn_enc_cstring(e, "pv");
    jn_enc_int(e, 2);
    seen_a(e);
}

static void hello_own_id_other_instance(jn_encoder_t *e)
{
    kv_str(e, "id", "A");
    jn_enc_cstring(e, "instance");
    jn_enc_int(e, 42);
    seen_a(e);
}

static void unknown_body(jn_encoder_t *e)
{
    kv_str(e, "id", "B");
}

/* Ignored (0, nothing done): pv > 1 (logged once), unknown opcodes, own
 * id (a duplicate logged once at critical level). */
static void test_ignored_messages(void **state)
{
    net_t *net = one_router();
    frouter_t *a = &net->r[0];
    jn_log_set_mask(JN_LOG_MOD_ROUTER_HELLO, JN_LOG_MASK(JN_LOG_CRITICAL));
    uint64_t before[JN_LOG_LEVEL_COUNT], after[JN_LOG_LEVEL_COUNT];
    jn_log_get_counts(JN_LOG_MOD_ROUTER_HELLO, before);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(feed(net, build("HELLO", hello_pv2)), 0);
        assert_int_equal(feed(net, build("XYZ", unknown_body)), 0);
        assert_int_equal(feed(net, build("HELLO", hello_own_id_other_instance)), 0);
    }
    jn_log_get_counts(JN_LOG_MOD_ROUTER_HELLO, after);
    assert_int_equal(after[JN_LOG_CRITICAL] - before[JN_LOG_CRITICAL], 1);
    assert_int_equal(callbacks(a), 0);
    assert_int_equal(a->mesh->seen.n, 0);
    assert_int_equal(jn_hash_count(a->mesh->pv_logged), 1);
    assert_true(a->mesh->dup_logged);
    jn_log_set_mask(JN_LOG_MOD_ROUTER_HELLO, JN_LOG_MASK_INHERIT);
    net_free(net);
}

int main(void)
{
    quiet_logs();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello_octets_match_the_capture),
        cmocka_unit_test(test_mau_octets_match_the_capture),
        cmocka_unit_test(test_python_composed_messages),
        cmocka_unit_test(test_core_composed_messages),
        cmocka_unit_test(test_engine_sends_to_the_right_places),
        cmocka_unit_test(test_wide_forms_of_1_19_are_accepted),
        cmocka_unit_test(test_parse_in_tiny_buffers),
        cmocka_unit_test(test_malformed_messages_change_nothing),
        cmocka_unit_test(test_ignored_messages),
    };
    return finish_mesh_tests(cmocka_run_group_tests(tests, NULL, NULL));
}
