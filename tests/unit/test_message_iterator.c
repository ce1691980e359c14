/*
 * test_message_iterator.c — the field iterator (junction/iterator.h).
 *
 * Every input is tried in a chain split into buffers of 1, 2, 3, 7 and full
 * capacity octets, at offset 0 and at an offset past the first buffer(s), and
 * as plain bytes; every operation must give the same result in each layout.
 * Covers the three views, every row of docs/protocol.md "Address keys" (router
 * "B", area "0"; interior and edge), phases, sub-iterators, bounds checks,
 * buffer return to the pool, and a writer thread publishing octets while a
 * reader walks them (run under ThreadSanitizer too).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/hash.h>
#include <junction/iterator.h>
#include <junction/pool.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

static const size_t chunks[] = {1, 2, 3, 7, JN_BUFFER_CAPACITY};
#define N_CHUNKS (sizeof chunks / sizeof chunks[0])

/* ---- helpers ------------------------------------------------------------ */

struct find_ctx {
    uint64_t in_use;
};

static void find_pool(const jn_pool_stats_t *stats, void *ctx)
{
    if (strcmp(stats->type_name, "jn_buffer") == 0)
        ((struct find_ctx *)ctx)->in_use = stats->in_use;
}

static uint64_t buffers_in_use(void)
{
    struct find_ctx f = {0};
    jn_pool_foreach(find_pool, &f);
    return f.in_use;
}

/* Padding before the field: none, a few octets, and more than one full
 * buffer, so the field starts past the first buffer in every layout. */
static const size_t pads[] = {0, 5, JN_BUFFER_CAPACITY + 3};
#define N_PADS (sizeof pads / sizeof pads[0])

/* A chain: pad octets of '#', the input, then "~~~" after it. */
static void build(jn_buffer_list_t *list, const char *input, size_t len, size_t pad, size_t chunk)
{
    static char junk[JN_BUFFER_CAPACITY + 16];
    memset(junk, '#', sizeof junk);
    assert_true(pad <= sizeof junk);
    jn_buffer_list_init(list);
    if (pad > 0)
        assert_int_equal(jn_buffer_list_append_split(list, junk, pad, chunk), 0);
    if (len > 0)
        assert_int_equal(jn_buffer_list_append_split(list, input, len, chunk), 0);
    assert_int_equal(jn_buffer_list_append_split(list, "~~~", 3, chunk), 0);
}

/* The view's octets left, as a string (for messages that print both). */
static const char *rest(const jn_iter_t *it)
{
    static char buf[1024];
    size_t n = jn_iter_copy_string(it, buf, sizeof buf);
    assert_true(n < sizeof buf);
    return buf;
}

/* Octet by octet: each value, jn_iter_end and jn_iter_length exact. */
static void check_octets(const jn_iter_t *it, const char *expected)
{
    size_t len = strlen(expected);
    jn_iter_t t = *it;
    for (size_t i = 0; i < len; i++) {
        assert_false(jn_iter_end(&t));
        assert_int_equal(jn_iter_length(&t), len - i);
        assert_int_equal(jn_iter_octet(&t), (uint8_t)expected[i]);
    }
    assert_true(jn_iter_end(&t));
    assert_int_equal(jn_iter_length(&t), 0);
    assert_int_equal(jn_iter_octet(&t), JN_ITER_END);
    assert_int_equal(jn_iter_octet(&t), JN_ITER_END);
    assert_true(jn_iter_end(&t));
}

/* equal, equal_iter, hash, copy_string (whole and cut short), copy. */
static void check_compare_copy(const jn_iter_t *it, const char *expected)
{
    size_t len = strlen(expected);
    char buf[1024];
    assert_string_equal(rest(it), expected);
    assert_true(jn_iter_equal(it, expected));
    snprintf(buf, sizeof buf, "%sx", expected);
    assert_false(jn_iter_equal(it, buf));
    if (len > 0) {
        memcpy(buf, expected, len);
        buf[len - 1] ^= 1;
        buf[len] = '\0';
        assert_false(jn_iter_equal(it, buf));
        buf[len - 1] = '\0';
        assert_false(jn_iter_equal(it, buf));
    }
    /* equal_bytes from every position, a prefix's octets part read
     * included, and with each end's octet changed */
    for (size_t k = 0; k <= len; k++) {
        jn_iter_t at = *it;
        assert_int_equal(jn_iter_advance(&at, k), k);
        assert_true(jn_iter_equal_bytes(&at, expected + k, len - k));
        assert_false(jn_iter_equal_bytes(&at, expected + k, len - k + 1));
        if (k < len) {
            memcpy(buf, expected + k, len - k);
            buf[0] ^= 1;
            assert_false(jn_iter_equal_bytes(&at, buf, len - k));
            buf[0] ^= 1;
            buf[len - k - 1] ^= 1;
            assert_false(jn_iter_equal_bytes(&at, buf, len - k));
        }
    }
    jn_iter_t plain;
    jn_iter_init_string(&plain, expected, JN_VIEW_RAW);
    assert_true(jn_iter_equal_iter(it, &plain));
    assert_true(jn_iter_equal_iter(&plain, it));
    assert_int_equal(jn_iter_hash(it), jn_hash_bytes(expected, len));

    /* copy_string cut short: returns the full length, like snprintf */
    char small[4];
    assert_int_equal(jn_iter_copy_string(it, small, sizeof small), len);
    assert_int_equal(strlen(small), len < 3 ? len : 3);
    assert_memory_equal(small, expected, strlen(small));
    assert_int_equal(jn_iter_copy_string(it, small, 1), len);
    assert_string_equal(small, "");

    /* copy in pieces of 3, advancing */
    jn_iter_t t = *it;
    size_t got = 0, n;
    while ((n = jn_iter_copy(&t, buf + got, 3)) > 0) {
        assert_true(n <= 3);
        got += n;
    }
    assert_int_equal(got, len);
    assert_memory_equal(buf, expected, len);
    assert_true(jn_iter_end(&t));
}

/* advance by every count, prefix by every leading part, reset, sub. */
static void check_moves(const jn_iter_t *it, const char *expected, jn_iter_view_t view)
{
    size_t len = strlen(expected);
    char buf[1024];
    for (size_t k = 0; k <= len + 1; k++) {
        jn_iter_t t = *it;
        size_t want = k < len ? k : len;
        assert_int_equal(jn_iter_advance(&t, k), want);
        assert_string_equal(rest(&t), expected + want);
        assert_int_equal(jn_iter_end(&t), want == len);
        assert_int_equal(jn_iter_hash(&t), jn_hash_bytes(expected + want, len - want));
        if (k <= len) {
            jn_iter_t p = *it;
            memcpy(buf, expected, k);
            buf[k] = '\0';
            assert_true(jn_iter_prefix(&p, buf));
            assert_string_equal(rest(&p), expected + k);
        }
    }
    jn_iter_t t = *it;
    snprintf(buf, sizeof buf, "%sx", expected);
    assert_false(jn_iter_prefix(&t, buf));
    assert_string_equal(rest(&t), expected);
    if (len > 0) {
        buf[0] = expected[0] == 'z' ? 'y' : 'z';
        buf[1] = '\0';
        assert_false(jn_iter_prefix(&t, buf));
        assert_string_equal(rest(&t), expected);
    }

    jn_iter_advance(&t, len / 2 + 1);
    jn_iter_reset(&t);
    check_octets(&t, expected);

    /* sub covers only the body: the hash view's class and phase are left out */
    size_t plen = 0;
    if (view == JN_VIEW_ADDRESS_HASH)
        plen = expected[0] == JN_ADDR_CLASS_MOBILE ? 2 : 1;
    jn_iter_t s;
    jn_iter_sub(it, SIZE_MAX, &s);
    assert_string_equal(rest(&s), expected + plen);
    check_octets(&s, expected + plen);
    if (len > plen + 1) {
        jn_iter_sub(it, 1, &s);
        assert_int_equal(jn_iter_length(&s), 1);
        assert_int_equal(jn_iter_octet(&s), (uint8_t)expected[plen]);
        assert_true(jn_iter_end(&s));
    }
}

static void check_all(const jn_iter_t *it, const char *expected, jn_iter_view_t view)
{
    check_octets(it, expected);
    check_compare_copy(it, expected);
    check_moves(it, expected, view);
}

/* input read through view gives expected, in every layout. */
static void check_view(const char *input, jn_iter_view_t view, const char *expected)
{
    size_t len = strlen(input);
    jn_iter_t it;
    jn_iter_init_string(&it, input, view);
    check_all(&it, expected, view);
    for (size_t c = 0; c < N_CHUNKS; c++) {
        for (size_t p = 0; p < N_PADS; p++) {
            jn_buffer_list_t list;
            build(&list, input, len, pads[p], chunks[c]);
            assert_int_equal(jn_iter_init(&it, list.head, pads[p], len, view), 0);
            check_all(&it, expected, view);
            /* the same through set_view from another view */
            assert_int_equal(jn_iter_init(&it, list.head, pads[p], len, JN_VIEW_RAW), 0);
            assert_string_equal(rest(&it), input);
            jn_iter_advance(&it, 2);
            jn_iter_set_view(&it, view);
            check_all(&it, expected, view);
            jn_iter_set_view(&it, JN_VIEW_RAW);
            assert_string_equal(rest(&it), input);
            jn_buffer_list_free(&list);
        }
    }
    assert_int_equal(buffers_in_use(), 0);
}

static int setup_interior(void **state)
{
    (void)state;
    return jn_iter_configure("0", "B", false);
}

static int setup_edge(void **state)
{
    (void)state;
    return jn_iter_configure("0", "B", true);
}

/* ---- views -------------------------------------------------------------- */

static void test_raw_view(void **state)
{
    (void)state;
    check_view("", JN_VIEW_RAW, "");
    check_view("x", JN_VIEW_RAW, "x");
    check_view("amqp://host:5672/queue.", JN_VIEW_RAW, "amqp://host:5672/queue.");
    check_view("\x01\xff\x80 binary octets", JN_VIEW_RAW, "\x01\xff\x80 binary octets");
}

static void test_address_view(void **state)
{
    (void)state;
    static const char *cases[][2] = {
        {"x", "x"},
        {"amqp://host:5672/x", "x"},
        {"amqp://host/a/b", "a/b"},
        {"amqps://host/x", "x"},
        {"amqp:/x", "x"},
        {"amqp:///x", "x"},
        {"/x", "x"},
        {"//host/x", "x"},
        {"//host:5672/_topo/0/B/y", "_topo/0/B/y"},
        {"a.b+c-d:/x", "x"},
        /* one trailing '.' or '/' dropped */
        {"queue.", "queue"},
        {"queue/", "queue"},
        {"queue./", "queue."},
        {"queue..", "queue."},
        {"amqp:/x/", "x"},
        {"amqp://host/x.", "x"},
        /* empty and degenerate forms */
        {"", ""},
        {"/", ""},
        {".", ""},
        {"//host/", ""},
        {"//host", "//host"},
        {"amqp://host", "amqp://host"},
        {"amqp:/", "amqp:"},
        {"amqp:", "amqp:"},
        /* no scheme: a colon not followed by '/', or not after a scheme */
        {"my:queue", "my:queue"},
        {"1abc:/x", "1abc:/x"},
        {"_a:/x", "_a:/x"},
        {"$management", "$management"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        print_message("address %s\n", cases[i][0]);
        check_view(cases[i][0], JN_VIEW_ADDRESS, cases[i][1]);
    }
}

/* Section 6 rows on an interior router with id "B" in area "0". */
static void test_hash_view_interior(void **state)
{
    (void)state;
    static const char *cases[][2] = {
        {"_local/x", "Lx"},
        {"amqp:/_local/qdhello", "Lqdhello"},
        {"_local/$_management_internal", "L$_management_internal"},
        {"_topo/0/all/qdrouter", "Tqdrouter"},
        {"_topo/all/all/q", "Tq"},
        {"amqp:/_topo/0/all/qdrouter.ma", "Tqdrouter.ma"},
        {"_topo/0/B/qdrouter", "Lqdrouter"},
        {"_topo/all/B/$management", "L$management"},
        {"amqp:/_topo/0/B/temp.abcdefghijklmno", "Ltemp.abcdefghijklmno"},
        {"_topo/0/C/temp.xyz", "RC"},
        {"_topo/0/C/a/b/c", "RC"},
        {"_topo/0/C", "RC"},
        {"_topo/all/Router.X/y", "RRouter.X"},
        {"_topo/0/BB/y", "RBB"},
        {"_topo/0/B", "RB"}, /* no '/' after B: the router address */
        {"_topo/1/C/x", "A1"},
        {"_topo/area9", "Aarea9"},
        {"_edge/B/x", "Lx"},
        {"_edge/E1/temp.q", "HE1"},
        {"_edge/E1", "HE1"},
        {"q1", "M0q1"},
        {"amqp://h:5672/q1", "M0q1"},
        {"/q1/", "M0q1"},
        {"q1.", "M0q1"},
        {"$management", "M0$management"},
        {"_$temp.abc", "M0_$temp.abc"},
        {"_$qd.edge_heartbeat", "M0_$qd.edge_heartbeat"},
        {"_local", "M0_local"},
        {"_localx/y", "M0_localx/y"},
        {"_top/0/B/x", "M0_top/0/B/x"},
        {"", "M0"},
        {"/", "M0"},
        {"//host/_local/x", "Lx"},
        {"/_topo/0/C/x", "RC"},
        {"_local/x/", "Lx"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        print_message("interior %s\n", cases[i][0]);
        check_view(cases[i][0], JN_VIEW_ADDRESS_HASH, cases[i][1]);
    }
}

/* Section 6 rows on an edge router with id "B" in area "0". */
static void test_hash_view_edge(void **state)
{
    (void)state;
    static const char *cases[][2] = {
        {"_local/x", "Lx"},
        {"_topo/0/all/qdrouter", "Tqdrouter"},
        {"_topo/all/all/q", "Tq"},
        {"_topo/0/B/x", "Lx"},
        {"_topo/all/B/x", "Lx"},
        {"_topo/0/C/x", "L_edge"},
        {"_topo/all/C", "L_edge"},
        {"_topo/1/C/x", "L_edge"},
        {"_edge/B/temp.x", "Ltemp.x"},
        {"_edge/C/temp.x", "L_edge"},
        {"amqp:/_edge/C", "L_edge"},
        {"q1", "M0q1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        print_message("edge %s\n", cases[i][0]);
        check_view(cases[i][0], JN_VIEW_ADDRESS_HASH, cases[i][1]);
    }
}

static void test_configure(void **state)
{
    (void)state;
    char longid[200];
    memset(longid, 'r', sizeof longid);
    longid[128] = '\0';
    assert_int_equal(jn_iter_configure("0", longid, false), JN_EINVAL);
    assert_int_equal(jn_iter_configure(longid, "B", false), JN_EINVAL);
    longid[127] = '\0';
    assert_int_equal(jn_iter_configure("0", longid, false), 0);
    char addr[300];
    snprintf(addr, sizeof addr, "_topo/0/%s/x", longid);
    check_view(addr, JN_VIEW_ADDRESS_HASH, "Lx");
    snprintf(addr, sizeof addr, "_topo/7/%s/x", longid);
    assert_int_equal(jn_iter_configure("7", longid, false), 0);
    check_view(addr, JN_VIEW_ADDRESS_HASH, "Lx");
    check_view("_topo/0/all/x", JN_VIEW_ADDRESS_HASH, "A0");
    assert_int_equal(jn_iter_configure("0", "B", false), 0);
}

static void test_phase(void **state)
{
    (void)state;
    jn_buffer_list_t list;
    for (size_t c = 0; c < N_CHUNKS; c++) {
        build(&list, "amqp:/q1.", 9, 4, chunks[c]);
        jn_iter_t it;
        assert_int_equal(jn_iter_init(&it, list.head, 4, 9, JN_VIEW_ADDRESS_HASH), 0);
        assert_string_equal(rest(&it), "M0q1");
        jn_iter_advance(&it, 3);
        jn_iter_set_phase(&it, '1');
        check_all(&it, "M1q1", JN_VIEW_ADDRESS_HASH);
        jn_iter_set_phase(&it, 'F');
        assert_string_equal(rest(&it), "MFq1");
        assert_int_equal(jn_iter_hash(&it), jn_hash_bytes("MFq1", 4));
        /* the phase survives a change of view */
        jn_iter_set_view(&it, JN_VIEW_RAW);
        assert_string_equal(rest(&it), "amqp:/q1.");
        jn_iter_set_view(&it, JN_VIEW_ADDRESS_HASH);
        assert_string_equal(rest(&it), "MFq1");
        jn_buffer_list_free(&list);

        /* ignored for other classes */
        build(&list, "_local/x", 8, 0, chunks[c]);
        assert_int_equal(jn_iter_init(&it, list.head, 0, 8, JN_VIEW_ADDRESS_HASH), 0);
        jn_iter_set_phase(&it, '2');
        check_all(&it, "Lx", JN_VIEW_ADDRESS_HASH);
        jn_buffer_list_free(&list);
    }
    assert_int_equal(buffers_in_use(), 0);
}

/* ---- bounds, sub-iterators, comparisons --------------------------------- */

static void test_init_bounds(void **state)
{
    (void)state;
    jn_iter_t it;
    assert_int_equal(jn_iter_init(&it, NULL, 0, 0, JN_VIEW_RAW), 0);
    assert_true(jn_iter_end(&it));
    assert_int_equal(jn_iter_init(&it, NULL, 0, 0, JN_VIEW_ADDRESS_HASH), 0);
    assert_string_equal(rest(&it), "M0");
    assert_int_equal(jn_iter_init(&it, NULL, 1, 0, JN_VIEW_RAW), JN_EINVAL);
    assert_int_equal(jn_iter_init(&it, NULL, 0, 1, JN_VIEW_RAW), JN_EINVAL);
    jn_iter_init_bytes(&it, NULL, 0, JN_VIEW_RAW);
    assert_true(jn_iter_end(&it));

    for (size_t c = 0; c < N_CHUNKS; c++) {
        jn_buffer_list_t list;
        jn_buffer_list_init(&list);
        assert_int_equal(jn_buffer_list_append_split(&list, "0123456789", 10, chunks[c]), 0);
        assert_int_equal(jn_iter_init(&it, list.head, 0, 11, JN_VIEW_RAW), JN_EINVAL);
        assert_int_equal(jn_iter_init(&it, list.head, 11, 0, JN_VIEW_RAW), JN_EINVAL);
        assert_int_equal(jn_iter_init(&it, list.head, 5, 6, JN_VIEW_RAW), JN_EINVAL);
        assert_int_equal(jn_iter_init(&it, list.head, SIZE_MAX, 2, JN_VIEW_RAW), JN_EINVAL);
        assert_int_equal(jn_iter_init(&it, list.head, 2, SIZE_MAX, JN_VIEW_RAW), JN_EINVAL);
        assert_int_equal(jn_iter_init(&it, list.head, 10, 0, JN_VIEW_RAW), 0);
        assert_true(jn_iter_end(&it));
        assert_int_equal(jn_iter_octet(&it), JN_ITER_END);
        assert_int_equal(jn_iter_init(&it, list.head, 10, 0, JN_VIEW_ADDRESS_HASH), 0);
        assert_string_equal(rest(&it), "M0");
        assert_int_equal(jn_iter_init(&it, list.head, 5, 5, JN_VIEW_RAW), 0);
        check_all(&it, "56789", JN_VIEW_RAW);
        assert_int_equal(jn_iter_init(&it, list.head, 0, 10, JN_VIEW_RAW), 0);
        check_all(&it, "0123456789", JN_VIEW_RAW);
        /* a view in the middle of the chain */
        assert_int_equal(jn_iter_init(&it, list.head, 3, 4, JN_VIEW_RAW), 0);
        check_all(&it, "3456", JN_VIEW_RAW);

        /* an empty buffer inside the chain is walked past */
        jn_buffer_t *empty = jn_buffer_new();
        assert_non_null(empty);
        jn_buffer_list_append(&list, empty);
        assert_int_equal(jn_buffer_list_append_split(&list, "ab", 2, chunks[c]), 0);
        assert_int_equal(jn_iter_init(&it, list.head, 8, 4, JN_VIEW_RAW), 0);
        check_all(&it, "89ab", JN_VIEW_RAW);
        assert_int_equal(jn_iter_init(&it, list.head, 10, 2, JN_VIEW_RAW), 0);
        check_all(&it, "ab", JN_VIEW_RAW);
        jn_buffer_list_free(&list);
    }
    assert_int_equal(buffers_in_use(), 0);
}

static void test_sub(void **state)
{
    (void)state;
    const char *text = "xxamqp:/q1.yy hello world";
    for (size_t c = 0; c < N_CHUNKS; c++) {
        jn_buffer_list_t list;
        build(&list, text, strlen(text), 9, chunks[c]);
        jn_iter_t it, s, s2;
        assert_int_equal(jn_iter_init(&it, list.head, 9, strlen(text), JN_VIEW_RAW), 0);
        jn_iter_advance(&it, 2);
        jn_iter_sub(&it, 9, &s);
        check_all(&s, "amqp:/q1.", JN_VIEW_RAW);
        assert_string_equal(rest(&it), text + 2); /* it did not move */
        /* a sub-view can be read through another view */
        jn_iter_set_view(&s, JN_VIEW_ADDRESS_HASH);
        check_all(&s, "M0q1", JN_VIEW_ADDRESS_HASH);
        jn_iter_set_view(&s, JN_VIEW_ADDRESS);
        check_all(&s, "q1", JN_VIEW_ADDRESS);
        /* sub of a sub, and length cut to what is left */
        jn_iter_advance(&it, 12);
        jn_iter_sub(&it, 1000, &s);
        check_all(&s, "hello world", JN_VIEW_RAW);
        jn_iter_advance(&s, 6);
        jn_iter_sub(&s, 3, &s2);
        check_all(&s2, "wor", JN_VIEW_RAW);
        jn_iter_sub(&s2, 0, &s);
        assert_true(jn_iter_end(&s));
        /* at the end: an empty sub */
        jn_iter_advance(&it, 1000);
        jn_iter_sub(&it, 5, &s);
        assert_true(jn_iter_end(&s));
        assert_int_equal(jn_iter_length(&s), 0);
        /* of a hash view part-way through its prefix: body only */
        assert_int_equal(jn_iter_init(&it, list.head, 11, 9, JN_VIEW_ADDRESS_HASH), 0);
        assert_int_equal(jn_iter_octet(&it), 'M');
        jn_iter_sub(&it, 100, &s);
        check_all(&s, "q1", JN_VIEW_RAW);
        assert_string_equal(rest(&it), "0q1");
        jn_buffer_list_free(&list);
    }
    assert_int_equal(buffers_in_use(), 0);
}

static void test_equal_iter_layouts(void **state)
{
    (void)state;
    const char *a = "_topo/0/C/some.long.address.name";
    for (size_t c1 = 0; c1 < N_CHUNKS; c1++) {
        for (size_t c2 = 0; c2 < N_CHUNKS; c2++) {
            jn_buffer_list_t l1, l2;
            build(&l1, a, strlen(a), 1, chunks[c1]);
            build(&l2, a, strlen(a), 0, chunks[c2]);
            jn_iter_t i1, i2;
            assert_int_equal(jn_iter_init(&i1, l1.head, 1, strlen(a), JN_VIEW_RAW), 0);
            assert_int_equal(jn_iter_init(&i2, l2.head, 0, strlen(a), JN_VIEW_RAW), 0);
            assert_true(jn_iter_equal_iter(&i1, &i2));
            jn_iter_advance(&i1, 1);
            assert_false(jn_iter_equal_iter(&i1, &i2));
            jn_iter_advance(&i2, 1);
            assert_true(jn_iter_equal_iter(&i1, &i2));
            assert_int_equal(jn_iter_hash(&i1), jn_iter_hash(&i2));
            /* one octet longer, or differing in the last octet */
            assert_int_equal(jn_iter_init(&i1, l1.head, 1, strlen(a) + 1, JN_VIEW_RAW), 0);
            assert_int_equal(jn_iter_init(&i2, l2.head, 0, strlen(a), JN_VIEW_RAW), 0);
            assert_false(jn_iter_equal_iter(&i1, &i2));
            jn_iter_t i3;
            jn_iter_init_string(&i3, "_topo/0/C/some.long.address.namf", JN_VIEW_RAW);
            assert_false(jn_iter_equal_iter(&i2, &i3));
            /* views compare by their octets */
            jn_iter_set_view(&i2, JN_VIEW_ADDRESS_HASH);
            jn_iter_init_string(&i3, "RC", JN_VIEW_RAW);
            assert_true(jn_iter_equal_iter(&i2, &i3));
            jn_iter_init_string(&i3, "amqp://h/_topo/0/C/", JN_VIEW_ADDRESS_HASH);
            assert_true(jn_iter_equal_iter(&i2, &i3));
            jn_buffer_list_free(&l1);
            jn_buffer_list_free(&l2);
        }
    }
    assert_int_equal(buffers_in_use(), 0);
}

static void test_copy_truncation(void **state)
{
    (void)state;
    for (size_t c = 0; c < N_CHUNKS; c++) {
        jn_buffer_list_t list;
        build(&list, "amqp:/queue1", 12, 0, chunks[c]);
        jn_iter_t it;
        assert_int_equal(jn_iter_init(&it, list.head, 0, 12, JN_VIEW_ADDRESS_HASH), 0);
        char out[16];
        memset(out, '*', sizeof out);
        assert_int_equal(jn_iter_copy(&it, out, 0), 0);
        assert_int_equal(jn_iter_copy(&it, out, 3), 3);
        assert_memory_equal(out, "M0q*", 4);
        assert_int_equal(jn_iter_copy_string(&it, out, 4), 5);
        assert_string_equal(out, "ueu");
        assert_int_equal(jn_iter_copy(&it, out, sizeof out), 5);
        assert_memory_equal(out, "ueue1", 5);
        assert_true(jn_iter_end(&it));
        assert_int_equal(jn_iter_copy(&it, out, sizeof out), 0);
        assert_int_equal(jn_iter_copy_string(&it, out, sizeof out), 0);
        assert_string_equal(out, "");
        jn_buffer_list_free(&list);
    }
    assert_int_equal(buffers_in_use(), 0);
}

/* A long field: advance crosses many buffers a run at a time. */
static void test_advance_long(void **state)
{
    (void)state;
    enum { LEN = 5000 };
    static uint8_t data[LEN];
    for (size_t i = 0; i < LEN; i++)
        data[i] = (uint8_t)(i * 13 + 5);
    for (size_t c = 0; c < N_CHUNKS; c++) {
        jn_buffer_list_t list;
        jn_buffer_list_init(&list);
        assert_int_equal(jn_buffer_list_append_split(&list, data, LEN, chunks[c]), 0);
        jn_iter_t it;
        assert_int_equal(jn_iter_init(&it, list.head, 100, LEN - 200, JN_VIEW_RAW), 0);
        assert_int_equal(jn_iter_hash(&it), jn_hash_bytes(data + 100, LEN - 200));
        size_t pos = 100;
        for (size_t step = 1; pos < LEN - 100; step = step * 3 + 1) {
            assert_int_equal(jn_iter_octet(&it), data[pos]);
            pos++;
            size_t want = LEN - 100 - pos < step ? LEN - 100 - pos : step;
            assert_int_equal(jn_iter_advance(&it, step), want);
            pos += want;
            assert_int_equal(jn_iter_length(&it), LEN - 100 - pos);
        }
        assert_true(jn_iter_end(&it));
        jn_buffer_list_free(&list);
    }
    assert_int_equal(buffers_in_use(), 0);
}

/* ---- a writer thread publishing while a reader walks -------------------- */

enum { STREAM_LEN = 100000 };

static uint8_t stream_octet(size_t i)
{
    return (uint8_t)(i * 31 + (i >> 9));
}

struct stream {
    jn_buffer_list_t list; /* the writer's; the reader uses only head */
};

static void *writer_main(void *arg)
{
    struct stream *st = arg;
    uint8_t piece[16];
    size_t pos = 0;
    for (unsigned n = 0; pos < STREAM_LEN; n++) {
        size_t len = 1 + n % 13;
        if (len > STREAM_LEN - pos)
            len = STREAM_LEN - pos;
        for (size_t i = 0; i < len; i++)
            piece[i] = stream_octet(pos + i);
        int rc = n % 5 == 0 ? jn_buffer_list_append_split(&st->list, piece, len, 3)
                            : jn_buffer_list_append_bytes(&st->list, piece, len);
        if (rc != 0)
            break;
        pos += len;
        if (n % 8 == 0)
            sched_yield();
    }
    jn_pool_thread_exit();
    return NULL;
}

/* Published octets from (*bufp, whose first octet is *basep) on; moves the
 * pair to the last buffer seen so the next call starts there. */
static size_t published(const jn_buffer_t **bufp, size_t *basep)
{
    const jn_buffer_t *b = *bufp;
    for (;;) {
        const jn_buffer_t *next = jn_buffer_next(b); /* before size */
        size_t size = jn_buffer_size(b);
        if (next == NULL)
            return *basep + size;
        *basep += size;
        b = next;
        *bufp = b;
    }
}

static void test_concurrent_publish(void **state)
{
    (void)state;
    struct stream st;
    jn_buffer_list_init(&st.list);
    jn_buffer_t *first = jn_buffer_new();
    assert_non_null(first);
    jn_buffer_list_append(&st.list, first);
    const jn_buffer_t *head = first;

    pthread_t writer;
    assert_int_equal(pthread_create(&writer, NULL, writer_main, &st), 0);

    const jn_buffer_t *last = head, *at = head;
    size_t last_base = 0, at_base = 0, seen = 0;
    unsigned rounds = 0, bad = 0;
    while (seen < STREAM_LEN) {
        size_t total = published(&last, &last_base);
        if (total == seen) {
            sched_yield();
            continue;
        }
        /* `at`: the buffer holding octet `seen` (or one before it) */
        for (;;) {
            const jn_buffer_t *next = jn_buffer_next(at); /* before size */
            size_t size = jn_buffer_size(at);
            if (next == NULL || seen < at_base + size)
                break;
            at_base += size;
            at = next;
        }
        jn_iter_t it;
        if (rounds++ % 16 == 0) {
            /* from the head, and past the end of what will ever be published */
            assert_int_equal(jn_iter_init(&it, head, 0, STREAM_LEN + 1, JN_VIEW_RAW), JN_EINVAL);
            assert_int_equal(jn_iter_init(&it, head, seen, total - seen, JN_VIEW_RAW), 0);
        } else {
            assert_int_equal(jn_iter_init(&it, at, seen - at_base, total - seen, JN_VIEW_RAW), 0);
        }
        uint32_t h = JN_HASH_SEED;
        for (size_t i = seen; i < total; i++) {
            int o = jn_iter_octet(&it);
            h = jn_hash_octet(h, (uint8_t)o);
            if (o != stream_octet(i))
                bad++;
        }
        assert_true(jn_iter_end(&it));
        jn_iter_reset(&it);
        assert_int_equal(jn_iter_hash(&it), h);
        seen = total;
    }
    print_message("reader caught up with the writer %u times\n", rounds);
    assert_int_equal(bad, 0);
    assert_int_equal(pthread_join(writer, NULL), 0);
    assert_int_equal(jn_buffer_list_length(&st.list), STREAM_LEN);
    jn_buffer_list_free(&st.list);
    assert_int_equal(buffers_in_use(), 0);
}

/* Runs last: every pool object was returned. */
static void test_no_leak(void **state)
{
    (void)state;
    assert_int_equal(buffers_in_use(), 0);
    assert_int_equal(jn_pool_leak_report(stderr), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_raw_view, setup_interior),
        cmocka_unit_test_setup(test_address_view, setup_interior),
        cmocka_unit_test_setup(test_hash_view_interior, setup_interior),
        cmocka_unit_test_setup(test_hash_view_edge, setup_edge),
        cmocka_unit_test_setup(test_configure, setup_interior),
        cmocka_unit_test_setup(test_phase, setup_interior),
        cmocka_unit_test_setup(test_init_bounds, setup_interior),
        cmocka_unit_test_setup(test_sub, setup_interior),
        cmocka_unit_test_setup(test_equal_iter_layouts, setup_interior),
        cmocka_unit_test_setup(test_copy_truncation, setup_interior),
        cmocka_unit_test_setup(test_advance_long, setup_interior),
        cmocka_unit_test_setup(test_concurrent_publish, setup_interior),
        cmocka_unit_test(test_no_leak),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    jn_pool_shutdown();
    return failed;
}
