/*
 * test_message_annotations.c — router annotations (junction/annotations.h;
 * docs/protocol.md, "The mesh": "Router annotations"): reading the router keys and their
 * types, user annotations kept byte for byte (also after a router key, the
 * 1.19 quirk we fix), the strip policy, malformed sections, composing the
 * section for a router hop and for an endpoint (exact bytes, built with the
 * encoder), trace append and lookup, and a 3-entry-trace inter-router
 * message taken through a full receive/forward round trip. Every section is
 * read from buffers of 1, 2, 3 and 7 octets as well as from one buffer.
 */
#include "test_message_util.h"
#include <junction/decoder.h>

/* A message-annotations section whose map entries fill() writes. */
static void section(bytes_t *b, void (*fill)(jn_encoder_t *e))
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    enc_section_map_begin(&e, JN_SECTION_MESSAGE_ANNOTATIONS);
    fill(&e);
    jn_enc_map_end(&e);
    b->len = 0;
    bytes_take(b, &e);
    jn_encoder_free(&e);
}

/* Put b in a chain of chunk-octet buffers (0: as few as possible), kept in
 * *list, and read it. */
static int parse_in(const bytes_t *b, size_t chunk, bool honour, jn_ra_t *ra, const char **why,
                    jn_buffer_list_t *list)
{
    jn_iter_t it;
    jn_buffer_list_init(list);
    if (chunk == 0)
        assert_int_equal(jn_buffer_list_append_bytes(list, b->data, b->len), 0);
    else
        assert_int_equal(jn_buffer_list_append_split(list, b->data, b->len, chunk), 0);
    assert_int_equal(jn_iter_init(&it, list->head, 0, b->len, JN_VIEW_RAW), 0);
    return jn_ra_parse(&it, honour, ra, why);
}

/* Compose for hop and return the octets in out. */
static void compose(const jn_ra_t *ra, const jn_ra_hop_t *hop, bytes_t *out)
{
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    assert_int_equal(jn_ra_compose(ra, hop, &list), 0);
    out->len = jn_buffer_list_length(&list);
    assert_int_equal(jn_buffer_list_copy_out(&list, 0, out->data, sizeof out->data), out->len);
    jn_buffer_list_free(&list);
}

static void assert_bytes_equal(const bytes_t *got, const bytes_t *want)
{
    assert_int_equal(got->len, want->len);
    assert_memory_equal(got->data, want->data, want->len);
}

/* For every chunk size: read `in` and compose for hop; expect `want`. */
static void expect_compose(const bytes_t *in, bool honour, const jn_ra_hop_t *hop,
                           const bytes_t *want)
{
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        jn_ra_t ra;
        jn_buffer_list_t list;
        bytes_t got;
        assert_int_equal(parse_in(in, tiny_chunks[c], honour, &ra, NULL, &list), 0);
        compose(&ra, hop, &got);
        assert_bytes_equal(&got, want);
        jn_buffer_list_free(&list);
    }
}

static void key_str(jn_encoder_t *e, const char *key, const char *value)
{
    jn_enc_csymbol(e, key);
    jn_enc_cstring(e, value);
}

static void key_trace(jn_encoder_t *e, const char *const *ids, size_t n)
{
    jn_enc_csymbol(e, JN_RA_TRACE);
    enc_string_list(e, ids, n);
}

/* --- reading ----------------------------------------------------------- */

static void test_absent_section_reads_as_nothing(void **state)
{
    (void)state;
    jn_ra_t ra;
    const char *why = "unset";
    memset(&ra, 0xff, sizeof ra);
    assert_int_equal(jn_ra_parse(NULL, true, &ra, &why), 0);
    assert_null(why);
    assert_false(ra.section_present);
    assert_false(ra.has_to || ra.has_ingress || ra.has_trace || ra.stream);
    assert_int_equal(ra.phase, 0);
    assert_int_equal(ra.user_count, 0);
    jn_iter_t empty;
    jn_iter_init_bytes(&empty, "", 0, JN_VIEW_RAW);
    assert_int_equal(jn_ra_parse(&empty, true, &ra, NULL), 0);
    assert_false(ra.section_present);
    assert_false(jn_ra_trace_contains(&ra, "0/A"));
    assert_false(jn_ra_trace_contains(NULL, "0/A"));
}

static void fill_all_router_keys(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/A", "0/B"};
    key_str(e, "x-opt-app", "1");
    key_str(e, JN_RA_TO, "dest");
    jn_enc_csymbol(e, JN_RA_PHASE);
    jn_enc_int(e, 3);
    key_str(e, JN_RA_INGRESS, "0/A");
    key_trace(e, trace, 2);
    jn_enc_csymbol(e, JN_RA_STREAM);
    jn_enc_int(e, 1);
}

static void test_router_keys_are_read_with_their_types(void **state)
{
    (void)state;
    bytes_t b;
    section(&b, fill_all_router_keys);
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        jn_ra_t ra;
        jn_buffer_list_t list;
        assert_int_equal(parse_in(&b, tiny_chunks[c], true, &ra, NULL, &list), 0);
        assert_true(ra.section_present);
        assert_true(ra.has_to);
        assert_true(jn_iter_equal(&ra.to, "dest"));
        assert_int_equal(ra.phase, 3);
        assert_true(ra.has_ingress);
        assert_true(jn_iter_equal(&ra.ingress, "0/A"));
        assert_true(ra.has_trace);
        assert_int_equal(ra.trace_count, 2);
        assert_int_equal(ra.trace_size, 10);
        assert_true(ra.stream);
        assert_int_equal(ra.user_count, 1);
        assert_int_equal(ra.user_run_count, 1);
        assert_int_equal(ra.user_size, 2 + 9 + 3); /* sym8 "x-opt-app", str8 "1" */
        assert_true(jn_ra_trace_contains(&ra, "0/A"));
        assert_true(jn_ra_trace_contains(&ra, "0/B"));
        assert_false(jn_ra_trace_contains(&ra, "0/C"));
        jn_buffer_list_free(&list);
    }
}

/* qdrouterd 1.19 treats every entry after the first router key as router-
 * owned and drops it; we keep user entries wherever they are and send them
 * first, in their original order. */
static void fill_user_after_router_keys(jn_encoder_t *e)
{
    key_str(e, "u1", "x");
    key_str(e, JN_RA_TO, "d");
    key_str(e, "u2", "y");
    key_str(e, JN_RA_INGRESS, "0/A");
    jn_enc_ulong(e, 42);
    jn_enc_int(e, 5);
}

static void fill_user_after_router_keys_endpoint(jn_encoder_t *e)
{
    key_str(e, "u1", "x");
    key_str(e, "u2", "y");
    jn_enc_ulong(e, 42);
    jn_enc_int(e, 5);
}

static void fill_user_after_router_keys_router(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/Me"};
    fill_user_after_router_keys_endpoint(e);
    key_str(e, JN_RA_TO, "d");
    key_str(e, JN_RA_INGRESS, "0/A");
    key_trace(e, trace, 1);
}

static void test_user_annotations_after_a_router_key_are_kept_unlike_qdrouterd_1_19(void **state)
{
    (void)state;
    bytes_t in, to_endpoint, to_router;
    section(&in, fill_user_after_router_keys);
    section(&to_endpoint, fill_user_after_router_keys_endpoint);
    section(&to_router, fill_user_after_router_keys_router);
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        jn_ra_t ra;
        jn_buffer_list_t list;
        assert_int_equal(parse_in(&in, tiny_chunks[c], true, &ra, NULL, &list), 0);
        assert_int_equal(ra.user_count, 3);
        assert_int_equal(ra.user_run_count, 3);
        assert_true(ra.has_to && ra.has_ingress);
        jn_buffer_list_free(&list);
    }
    jn_ra_hop_t endpoint = {.to_router = false, .node_id = "0/Me"};
    jn_ra_hop_t router = {.to_router = true, .node_id = "0/Me"};
    expect_compose(&in, true, &endpoint, &to_endpoint);
    expect_compose(&in, true, &router, &to_router);
    expect_compose(&in, false, &endpoint, &to_endpoint);
}

static void fill_string_keys_like_router_keys(jn_encoder_t *e)
{
    jn_enc_cstring(e, JN_RA_TO);
    jn_enc_cstring(e, "not-routing");
    jn_enc_cstring(e, JN_RA_TRACE);
    jn_enc_int(e, 9); /* a user value: no type rule applies */
}

static void test_string_keys_that_look_like_router_keys_are_user_annotations(void **state)
{
    (void)state;
    bytes_t in;
    section(&in, fill_string_keys_like_router_keys);
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        jn_ra_t ra;
        jn_buffer_list_t list;
        assert_int_equal(parse_in(&in, tiny_chunks[c], true, &ra, NULL, &list), 0);
        assert_false(ra.has_to);
        assert_false(ra.has_trace);
        assert_int_equal(ra.user_count, 2);
        jn_buffer_list_free(&list);
    }
    jn_ra_hop_t endpoint = {.to_router = false, .node_id = "0/Me"};
    expect_compose(&in, true, &endpoint, &in);
}

static void fill_dropped_router_keys(jn_encoder_t *e)
{
    key_str(e, JN_RA_CLASS, "c");
    jn_enc_csymbol(e, JN_RA_PREFIX);
    jn_enc_int(e, 1);
    key_str(e, "x-opt-qd.unknown", "2");
    jn_enc_csymbol(e, "x-opt-other");
    jn_enc_ulong(e, 7);
    jn_enc_ulong(e, 1000);
    jn_enc_cstring(e, "ulong-keyed");
}

static void fill_dropped_router_keys_kept(jn_encoder_t *e)
{
    jn_enc_csymbol(e, "x-opt-other");
    jn_enc_ulong(e, 7);
    jn_enc_ulong(e, 1000);
    jn_enc_cstring(e, "ulong-keyed");
}

static void test_class_bare_prefix_and_unknown_router_keys_are_dropped(void **state)
{
    (void)state;
    bytes_t in, want;
    section(&in, fill_dropped_router_keys);
    section(&want, fill_dropped_router_keys_kept);
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        jn_ra_t ra;
        jn_buffer_list_t list;
        assert_int_equal(parse_in(&in, tiny_chunks[c], true, &ra, NULL, &list), 0);
        assert_int_equal(ra.user_count, 2);
        assert_int_equal(ra.user_run_count, 1);
        jn_buffer_list_free(&list);
    }
    jn_ra_hop_t endpoint = {.to_router = false, .node_id = "0/Me"};
    expect_compose(&in, true, &endpoint, &want);
}

static void expect_parse_error(const uint8_t *octets, size_t len, bool honour, int code)
{
    bytes_t b = {.len = 0};
    bytes_add(&b, octets, len);
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        jn_ra_t ra;
        jn_buffer_list_t list;
        const char *why = NULL;
        assert_int_equal(parse_in(&b, tiny_chunks[c], honour, &ra, &why, &list), code);
        if (code != 0) {
            assert_non_null(why);
            assert_true(strlen(why) > 0);
        }
        jn_buffer_list_free(&list);
    }
}

#define EXPECT_PARSE(honour, code, ...)                                                            \
    do {                                                                                           \
        const uint8_t octets_[] = {__VA_ARGS__};                                                   \
        expect_parse_error(octets_, sizeof octets_, honour, code);                                 \
    } while (0)

static void test_bad_key_type_is_malformed(void **state)
{
    (void)state;
    /* int key, binary key, null key, described key */
    EXPECT_PARSE(false, JN_EPROTO, 0x00, 0x53, 0x72, 0xc1, 0x05, 0x02, 0x54, 0x01, 0x54, 0x02);
    EXPECT_PARSE(true, JN_EPROTO, 0x00, 0x53, 0x72, 0xc1, 0x05, 0x02, 0xa0, 0x01, 'k', 0x40);
    EXPECT_PARSE(true, JN_EPROTO, 0x00, 0x53, 0x72, 0xc1, 0x03, 0x02, 0x40, 0x40);
    EXPECT_PARSE(false, JN_EPROTO, 0x00, 0x53, 0x72, 0xc1, 0x08, 0x02, 0x00, 0x53, 0x01, 0xa3, 0x01,
                 'k', 0x40);
    /* ulong and string keys are fine */
    EXPECT_PARSE(true, 0, 0x00, 0x53, 0x72, 0xc1, 0x05, 0x02, 0x53, 0x01, 0x54, 0x02);
    EXPECT_PARSE(true, 0, 0x00, 0x53, 0x72, 0xc1, 0x05, 0x02, 0xa1, 0x01, 'k', 0x40);
}

static void test_section_not_a_map_or_odd_count_is_malformed(void **state)
{
    (void)state;
    /* a list */
    EXPECT_PARSE(true, JN_EPROTO, 0x00, 0x53, 0x72, 0x45);
    /* odd count */
    EXPECT_PARSE(true, JN_EPROTO, 0x00, 0x53, 0x72, 0xc1, 0x04, 0x01, 0xa3, 0x01, 'k');
    /* map32 with an odd count */
    EXPECT_PARSE(false, JN_EPROTO, 0x00, 0x53, 0x72, 0xd1, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,
                 0x01, 0xa3, 0x01, 'k');
    /* the delivery-annotations descriptor; no descriptor; truncated map */
    EXPECT_PARSE(true, JN_EPROTO, 0x00, 0x53, 0x71, 0xc1, 0x01, 0x00);
    EXPECT_PARSE(true, JN_EPROTO, 0xc1, 0x01, 0x00);
    EXPECT_PARSE(true, JN_EPROTO, 0x00, 0x53, 0x72, 0xc1, 0x09, 0x02, 0xa3, 0x01, 'k');
    /* an empty map is fine, also with the symbol descriptor */
    EXPECT_PARSE(true, 0, 0x00, 0x53, 0x72, 0xc1, 0x01, 0x00);
    EXPECT_PARSE(true, 0, 0x00, 0xa3, 28, 'a', 'm', 'q', 'p', ':', 'm', 'e', 's', 's', 'a', 'g',
                 'e', '-', 'a', 'n', 'n', 'o', 't', 'a', 't', 'i', 'o', 'n', 's', ':', 'm', 'a',
                 'p', 0xc1, 0x01, 0x00);
}

/* Sections with one router key of the wrong type. */
static void fill_to_symbol(jn_encoder_t *e)
{
    jn_enc_csymbol(e, JN_RA_TO);
    jn_enc_csymbol(e, "q");
}
static void fill_to_int(jn_encoder_t *e)
{
    jn_enc_csymbol(e, JN_RA_TO);
    jn_enc_int(e, 1);
}
static void fill_ingress_symbol(jn_encoder_t *e)
{
    jn_enc_csymbol(e, JN_RA_INGRESS);
    jn_enc_csymbol(e, "0/A");
}
static void fill_trace_string(jn_encoder_t *e)
{
    key_str(e, JN_RA_TRACE, "0/A");
}
static void fill_trace_with_int(jn_encoder_t *e)
{
    jn_enc_csymbol(e, JN_RA_TRACE);
    jn_enc_list_begin(e);
    jn_enc_cstring(e, "0/A");
    jn_enc_int(e, 2);
    jn_enc_list_end(e);
}
static void fill_trace_with_symbol(jn_encoder_t *e)
{
    jn_enc_csymbol(e, JN_RA_TRACE);
    jn_enc_list_begin(e);
    jn_enc_csymbol(e, "0/A");
    jn_enc_list_end(e);
}
static void fill_phase_string(jn_encoder_t *e)
{
    key_str(e, JN_RA_PHASE, "1");
}
static void fill_phase_too_big(jn_encoder_t *e)
{
    jn_enc_csymbol(e, JN_RA_PHASE);
    jn_enc_long(e, 1LL << 40);
}
static void fill_stream_string(jn_encoder_t *e)
{
    key_str(e, JN_RA_STREAM, "yes");
}

static void test_wrong_typed_router_values_are_invalid_field(void **state)
{
    (void)state;
    void (*fills[])(jn_encoder_t *) = {
        fill_to_symbol,    fill_to_int,         fill_ingress_symbol,
        fill_trace_string, fill_trace_with_int, fill_trace_with_symbol,
        fill_phase_string, fill_phase_too_big,  fill_stream_string};
    for (size_t i = 0; i < sizeof fills / sizeof fills[0]; i++) {
        bytes_t b;
        section(&b, fills[i]);
        expect_parse_error(b.data, b.len, true, JN_EINVAL);
        /* with router keys not honoured, the same key is simply dropped */
        for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
            jn_ra_t ra;
            jn_buffer_list_t list;
            assert_int_equal(parse_in(&b, tiny_chunks[c], false, &ra, NULL, &list), 0);
            assert_false(ra.has_to || ra.has_ingress || ra.has_trace || ra.stream);
            assert_int_equal(ra.phase, 0);
            assert_int_equal(ra.user_count, 0);
            jn_buffer_list_free(&list);
        }
    }
}

static void fill_strip_expected_router(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/Me"};
    key_str(e, "x-opt-app", "1");
    key_str(e, JN_RA_INGRESS, "0/Me");
    key_trace(e, trace, 1);
}

static void test_strip_policy_drops_router_keys_and_keeps_user_annotations(void **state)
{
    (void)state;
    bytes_t in, want;
    section(&in, fill_all_router_keys);
    section(&want, fill_strip_expected_router);
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        jn_ra_t ra;
        jn_buffer_list_t list;
        assert_int_equal(parse_in(&in, tiny_chunks[c], false, &ra, NULL, &list), 0);
        assert_true(ra.section_present);
        assert_false(ra.has_to || ra.has_ingress || ra.has_trace || ra.stream);
        assert_int_equal(ra.phase, 0);
        assert_int_equal(ra.user_count, 1);
        jn_buffer_list_free(&list);
    }
    /* toward a router we become the ingress and the whole trace */
    jn_ra_hop_t router = {.to_router = true, .node_id = "0/Me"};
    expect_compose(&in, false, &router, &want);
}

/* --- composing --------------------------------------------------------- */

static void fill_simple_in(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/A"};
    key_str(e, "u", "v");
    key_str(e, JN_RA_TO, "q");
    key_str(e, JN_RA_INGRESS, "0/A");
    key_trace(e, trace, 1);
}

static void fill_simple_to_router(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/A", "0/B"};
    key_str(e, "u", "v");
    key_str(e, JN_RA_TO, "q");
    key_str(e, JN_RA_INGRESS, "0/A");
    key_trace(e, trace, 2);
}

static void fill_simple_to_endpoint(jn_encoder_t *e)
{
    key_str(e, "u", "v");
}

static void test_compose_toward_router_and_endpoint_exact_bytes(void **state)
{
    (void)state;
    bytes_t in, to_router, to_endpoint;
    section(&in, fill_simple_in);
    section(&to_router, fill_simple_to_router);
    section(&to_endpoint, fill_simple_to_endpoint);
    jn_ra_hop_t router = {.to_router = true, .node_id = "0/B"};
    jn_ra_hop_t endpoint = {.to_router = false, .node_id = "0/B"};
    expect_compose(&in, true, &router, &to_router);
    expect_compose(&in, true, &endpoint, &to_endpoint);
}

static void fill_no_user(jn_encoder_t *e)
{
    key_str(e, JN_RA_TO, "q");
    key_str(e, JN_RA_INGRESS, "0/A");
}

static void test_compose_toward_endpoint_without_user_annotations_appends_nothing(void **state)
{
    (void)state;
    bytes_t in, empty = {.len = 0};
    section(&in, fill_no_user);
    jn_ra_hop_t endpoint = {.to_router = false, .node_id = "0/B"};
    expect_compose(&in, true, &endpoint, &empty);
    bytes_t got;
    compose(NULL, &endpoint, &got);
    assert_int_equal(got.len, 0);
    jn_ra_hop_t no_id = {.to_router = true};
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    assert_int_equal(jn_ra_compose(NULL, &no_id, &list), JN_EINVAL);
    assert_null(list.head);
}

static void fill_own_only(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/B"};
    key_str(e, JN_RA_INGRESS, "0/B");
    key_trace(e, trace, 1);
}

static void test_compose_without_received_annotations_makes_us_ingress(void **state)
{
    (void)state;
    bytes_t want, got;
    section(&want, fill_own_only);
    jn_ra_hop_t router = {.to_router = true, .node_id = "0/B"};
    compose(NULL, &router, &got);
    assert_bytes_equal(&got, &want);
    jn_ra_t none;
    assert_int_equal(jn_ra_parse(NULL, true, &none, NULL), 0);
    compose(&none, &router, &got);
    assert_bytes_equal(&got, &want);
}

static void fill_override_expected(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/A", "0/B"};
    key_str(e, "u", "v");
    jn_enc_csymbol(e, JN_RA_PHASE);
    jn_enc_int(e, 2);
    jn_enc_csymbol(e, JN_RA_STREAM);
    jn_enc_int(e, 1);
    key_str(e, JN_RA_TO, "other");
    key_str(e, JN_RA_INGRESS, "0/A");
    key_trace(e, trace, 2);
}

static void fill_fallback_expected(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/A", "0/B"};
    key_str(e, "u", "v");
    jn_enc_csymbol(e, JN_RA_PHASE);
    jn_enc_int(e, JN_RA_PHASE_FALLBACK);
    key_str(e, JN_RA_TO, "other");
    key_str(e, JN_RA_INGRESS, "0/A");
    key_trace(e, trace, 2);
}

static void fill_big_phase_expected(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/A", "0/B"};
    key_str(e, "u", "v");
    jn_enc_csymbol(e, JN_RA_PHASE);
    jn_enc_int(e, 300);
    key_str(e, JN_RA_TO, "other");
    key_str(e, JN_RA_INGRESS, "0/A");
    key_trace(e, trace, 2);
}

static void test_compose_with_override_phase_and_stream_exact_bytes(void **state)
{
    (void)state;
    bytes_t in, want;
    jn_iter_t other;
    jn_iter_init_string(&other, "other", JN_VIEW_RAW);
    section(&in, fill_simple_in);
    section(&want, fill_override_expected);
    jn_ra_hop_t hop = {
        .to_router = true, .node_id = "0/B", .to_override = &other, .phase = 2, .stream = true};
    expect_compose(&in, true, &hop, &want);
    section(&want, fill_fallback_expected);
    hop.phase = JN_RA_PHASE_FALLBACK;
    hop.stream = false;
    expect_compose(&in, true, &hop, &want);
    section(&want, fill_big_phase_expected);
    hop.phase = 300;
    expect_compose(&in, true, &hop, &want);
}

static void fill_phase_in(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/A"};
    jn_enc_csymbol(e, JN_RA_PHASE);
    jn_enc_int(e, 3);
    jn_enc_csymbol(e, JN_RA_STREAM);
    jn_enc_int(e, 1);
    key_str(e, JN_RA_TO, "q");
    key_str(e, JN_RA_INGRESS, "0/A");
    key_trace(e, trace, 1);
}

static void fill_phase_forwarded(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/A", "0/B"};
    jn_enc_csymbol(e, JN_RA_PHASE);
    jn_enc_int(e, 3);
    jn_enc_csymbol(e, JN_RA_STREAM);
    jn_enc_int(e, 1);
    key_str(e, JN_RA_TO, "q");
    key_str(e, JN_RA_INGRESS, "0/A");
    key_trace(e, trace, 2);
}

static void test_compose_keeps_received_phase_and_stream_without_override(void **state)
{
    (void)state;
    bytes_t in, want;
    section(&in, fill_phase_in);
    section(&want, fill_phase_forwarded);
    jn_ra_hop_t hop = {.to_router = true, .node_id = "0/B"};
    expect_compose(&in, true, &hop, &want);
}

static char long_text[301];

static void fill_long_user(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/A"};
    key_str(e, "big", long_text);
    key_str(e, JN_RA_INGRESS, "0/A");
    key_trace(e, trace, 1);
}

static void fill_long_expected(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/A", "0/B"};
    key_str(e, "big", long_text);
    key_str(e, JN_RA_TO, long_text);
    key_str(e, JN_RA_INGRESS, "0/A");
    key_trace(e, trace, 2);
}

static void test_compose_uses_map32_and_str32_when_large(void **state)
{
    (void)state;
    memset(long_text, 'L', 300);
    long_text[300] = '\0';
    bytes_t in, want;
    jn_iter_t to;
    jn_iter_init_string(&to, long_text, JN_VIEW_RAW);
    section(&in, fill_long_user);
    section(&want, fill_long_expected);
    assert_int_equal(in.data[3], JN_AMQP_MAP32);
    assert_int_equal(want.data[3], JN_AMQP_MAP32);
    jn_ra_hop_t hop = {.to_router = true, .node_id = "0/B", .to_override = &to};
    expect_compose(&in, true, &hop, &want);
}

/* User entries in six separate runs (more than JN_RA_MAX_USER_RUNS), each
 * followed by a router key. */
static void fill_many_runs(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/A"};
    key_str(e, "u0", "a");
    key_str(e, JN_RA_TO, "q");
    key_str(e, "u1", "b");
    key_str(e, JN_RA_CLASS, "c");
    jn_enc_ulong(e, 2);
    jn_enc_cstring(e, "c");
    key_str(e, JN_RA_INGRESS, "0/A");
    key_str(e, "u3", "d");
    key_str(e, "u3b", "dd");
    jn_enc_csymbol(e, JN_RA_PHASE);
    jn_enc_int(e, 4);
    key_str(e, "u4", "e");
    key_trace(e, trace, 1);
    key_str(e, "u5", "f");
}

static void fill_many_runs_expected(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/A", "0/B"};
    key_str(e, "u0", "a");
    key_str(e, "u1", "b");
    jn_enc_ulong(e, 2);
    jn_enc_cstring(e, "c");
    key_str(e, "u3", "d");
    key_str(e, "u3b", "dd");
    key_str(e, "u4", "e");
    key_str(e, "u5", "f");
    jn_enc_csymbol(e, JN_RA_PHASE);
    jn_enc_int(e, 4);
    key_str(e, JN_RA_TO, "q");
    key_str(e, JN_RA_INGRESS, "0/A");
    key_trace(e, trace, 2);
}

static void test_compose_with_more_user_runs_than_remembered_walks_the_map(void **state)
{
    (void)state;
    bytes_t in, want;
    section(&in, fill_many_runs);
    section(&want, fill_many_runs_expected);
    jn_ra_t ra;
    jn_buffer_list_t list;
    assert_int_equal(parse_in(&in, 0, true, &ra, NULL, &list), 0);
    assert_int_equal(ra.user_count, 7);
    assert_int_equal(ra.user_run_count, 6);
    assert_true(ra.user_run_count > JN_RA_MAX_USER_RUNS);
    jn_buffer_list_free(&list);
    jn_ra_hop_t hop = {.to_router = true, .node_id = "0/B"};
    expect_compose(&in, true, &hop, &want);
}

static void test_trace_append_and_trace_contains(void **state)
{
    (void)state;
    bytes_t in, out;
    section(&in, fill_simple_to_router); /* trace 0/A, 0/B */
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        jn_ra_t ra, next;
        jn_buffer_list_t list, list2;
        assert_int_equal(parse_in(&in, tiny_chunks[c], true, &ra, NULL, &list), 0);
        assert_true(jn_ra_trace_contains(&ra, "0/A"));
        assert_true(jn_ra_trace_contains(&ra, "0/B"));
        assert_false(jn_ra_trace_contains(&ra, "0/C"));
        assert_false(jn_ra_trace_contains(&ra, "0/"));
        assert_false(jn_ra_trace_contains(&ra, "0/AB"));
        jn_ra_hop_t hop = {.to_router = true, .node_id = "0/C"};
        compose(&ra, &hop, &out);
        assert_int_equal(parse_in(&out, tiny_chunks[c], true, &next, NULL, &list2), 0);
        assert_int_equal(next.trace_count, 3);
        assert_true(jn_ra_trace_contains(&next, "0/A"));
        assert_true(jn_ra_trace_contains(&next, "0/B"));
        assert_true(jn_ra_trace_contains(&next, "0/C"));
        assert_true(jn_iter_equal(&next.ingress, "0/A"));
        jn_buffer_list_free(&list);
        jn_buffer_list_free(&list2);
    }
}

static void test_compose_appends_after_existing_buffers(void **state)
{
    (void)state;
    bytes_t in, want = {.len = 0};
    section(&in, fill_simple_in);
    bytes_add(&want, "abc", 3);
    jn_ra_t ra;
    jn_buffer_list_t src, out;
    assert_int_equal(parse_in(&in, 2, true, &ra, NULL, &src), 0);
    jn_buffer_list_init(&out);
    assert_int_equal(jn_buffer_list_append_split(&out, "abc", 3, 1), 0);
    jn_ra_hop_t hop = {.to_router = false, .node_id = "0/B"};
    assert_int_equal(jn_ra_compose(&ra, &hop, &out), 0);
    bytes_t section_only;
    section(&section_only, fill_simple_to_endpoint);
    bytes_add(&want, section_only.data, section_only.len);
    bytes_t got;
    got.len = jn_buffer_list_length(&out);
    assert_int_equal(jn_buffer_list_copy_out(&out, 0, got.data, sizeof got.data), got.len);
    assert_bytes_equal(&got, &want);
    jn_buffer_list_free(&out);
    jn_buffer_list_free(&src);
}

/* --- a whole inter-router message -------------------------------------- */

static void build_inter_router_message(bytes_t *b, const uint8_t *body, size_t body_len)
{
    static const char *const trace[] = {"0/A", "0/B", "0/C"};
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_HEADER);
    jn_enc_list_begin(&e);
    jn_enc_bool(&e, true);
    jn_enc_list_end(&e);
    enc_section_map_begin(&e, JN_SECTION_MESSAGE_ANNOTATIONS);
    key_str(&e, "x-opt-app", "kept");
    key_str(&e, JN_RA_TO, "svc");
    key_str(&e, JN_RA_INGRESS, "0/A");
    key_trace(&e, trace, 3);
    jn_enc_map_end(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_PROPERTIES);
    jn_enc_list_begin(&e);
    jn_enc_cstring(&e, "id-7");
    jn_enc_null(&e);
    jn_enc_cstring(&e, "svc");
    jn_enc_list_end(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_DATA);
    jn_enc_binary(&e, body, body_len);
    b->len = 0;
    bytes_take(b, &e);
    jn_encoder_free(&e);
}

static void fill_forwarded_annotations(jn_encoder_t *e)
{
    static const char *const trace[] = {"0/A", "0/B", "0/C", "0/D"};
    key_str(e, "x-opt-app", "kept");
    key_str(e, JN_RA_TO, "svc");
    key_str(e, JN_RA_INGRESS, "0/A");
    key_trace(e, trace, 4);
}

/* One outgoing copy of msg for hop, as octets. */
static void forward(jn_message_t *msg, const jn_ra_hop_t *hop, bytes_t *out)
{
    jn_buffer_list_t ma;
    jn_message_out_t o;
    jn_buffer_list_init(&ma);
    assert_int_equal(jn_ra_compose(jn_message_annotations(msg), hop, &ma), 0);
    assert_int_equal(jn_message_out_init(&o, msg, &ma), 0);
    out->len = 0;
    assert_int_equal(drain_out(&o, out), 0);
    jn_message_out_fini(&o);
}

static void fill_delivered_annotations(jn_encoder_t *e)
{
    key_str(e, "x-opt-app", "kept");
}

/* header of wire + ann + everything of wire after its annotations */
static void expected_copy(const bytes_t *wire, size_t header_len, size_t ma_len, const bytes_t *ann,
                          bytes_t *out)
{
    out->len = 0;
    bytes_add(out, wire->data, header_len);
    bytes_add(out, ann->data, ann->len);
    bytes_add(out, wire->data + header_len + ma_len, wire->len - header_len - ma_len);
}

static void test_three_entry_trace_inter_router_message_round_trip(void **state)
{
    (void)state;
    uint8_t body[700];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (uint8_t)(i ^ 0x5a);
    bytes_t wire, ann, ann_delivered;
    build_inter_router_message(&wire, body, sizeof body);
    section(&ann, fill_forwarded_annotations);
    section(&ann_delivered, fill_delivered_annotations);
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        /* router D receives it on an inter-router link */
        jn_message_t *msg = message_from(wire.data, wire.len, tiny_chunks[c], true);
        assert_int_equal(jn_message_parse(msg, JN_DEPTH_PROPERTIES), 0);
        const jn_ra_t *ra = jn_message_annotations(msg);
        assert_int_equal(ra->trace_count, 3); /* distance 3 */
        assert_true(jn_ra_trace_contains(ra, "0/A"));
        assert_true(jn_ra_trace_contains(ra, "0/C"));
        assert_false(jn_ra_trace_contains(ra, "0/D"));
        assert_true(jn_iter_equal(&ra->to, "svc"));
        assert_true(jn_iter_equal(&ra->ingress, "0/A"));
        jn_iter_t header, ma;
        assert_int_equal(jn_message_section(msg, JN_SEC_HEADER, &header), 0);
        assert_int_equal(jn_message_section(msg, JN_SEC_MESSAGE_ANNOTATIONS, &ma), 0);
        size_t header_len = jn_iter_length(&header), ma_len = jn_iter_length(&ma);

        /* and forwards it to router E: header + new annotations + the rest */
        jn_ra_hop_t to_e = {.to_router = true, .node_id = "0/D"};
        bytes_t copy, want;
        forward(msg, &to_e, &copy);
        expected_copy(&wire, header_len, ma_len, &ann, &want);
        assert_bytes_equal(&copy, &want);

        /* E reads the copy: same user annotation and `to`, trace one longer */
        jn_message_t *at_e = message_from(copy.data, copy.len, tiny_chunks[c], true);
        assert_int_equal(jn_message_parse(at_e, JN_DEPTH_ALL), 0);
        const jn_ra_t *ra_e = jn_message_annotations(at_e);
        assert_int_equal(ra_e->trace_count, 4);
        assert_true(jn_ra_trace_contains(ra_e, "0/D"));
        assert_true(jn_iter_equal(&ra_e->ingress, "0/A"));
        assert_true(jn_iter_equal(&ra_e->to, "svc"));
        assert_int_equal(ra_e->user_count, 1);
        jn_iter_t view;
        assert_int_equal(jn_message_section(at_e, JN_SEC_BODY, &view), 0);
        assert_int_equal(jn_iter_length(&view), 3 + 5 + sizeof body); /* 00 53 75 b0 <4> */
        assert_int_equal(jn_message_to(at_e, &view), 0);
        assert_true(jn_iter_equal(&view, "svc"));

        /* E delivers to a consumer: only the user annotation is left */
        jn_ra_hop_t consumer = {.to_router = false, .node_id = "0/E"};
        bytes_t delivered;
        forward(at_e, &consumer, &delivered);
        expected_copy(&wire, header_len, ma_len, &ann_delivered, &want);
        assert_bytes_equal(&delivered, &want);
        jn_message_t *check = message_from(delivered.data, delivered.len, tiny_chunks[c], true);
        assert_int_equal(jn_message_parse(check, JN_DEPTH_ALL), 0);
        const jn_ra_t *ra_c = jn_message_annotations(check);
        assert_int_equal(ra_c->user_count, 1);
        assert_false(ra_c->has_trace || ra_c->has_to || ra_c->has_ingress);
        jn_message_unref(check);
        jn_message_unref(at_e);
        jn_message_unref(msg);
    }
}

/* jn_ra_trace_each's step for the test below: copies each entry into the
 * next of three slots; stops after ctx's limit. */
typedef struct trace_seen {
    char ids[3][8];
    int n, limit;
} trace_seen_t;

static bool trace_seen_step(void *ctx, const jn_iter_t *id)
{
    trace_seen_t *t = ctx;
    assert_true(t->n < 3);
    jn_iter_copy_string(id, t->ids[t->n], sizeof t->ids[t->n]);
    return ++t->n < t->limit;
}

/* jn_ra_trace_each walks a trace of str32 and str8 entries read by the
 * fast parse in place (trace_plain), in order, stopping when told; the
 * decoder's walk (trace_plain off) gives the same entries. */
static void test_trace_each_walks_str8_and_str32_entries(void **state)
{
    (void)state;
    static const uint8_t b[] = {
        0x00, 0x53, 0x72, 0xc1, 0x21, 0x02,                         /* map8, 2 items */
        0xa3, 0x0e, 'x', '-', 'o', 'p', 't', '-', 'q', 'd', '.', 't', 'r', 'a', 'c', 'e',
        0xc0, 0x0e, 0x02,                                           /* list8, 2 entries */
        0xb1, 0x00, 0x00, 0x00, 0x03, '0', '/', 'A',                /* str32 */
        0xa1, 0x03, '0', '/', 'B'};                                 /* str8 */
    jn_iter_t it;
    jn_ra_t ra;
    jn_iter_init_bytes(&it, b, sizeof b, JN_VIEW_RAW);
    assert_int_equal(jn_ra_parse(&it, true, &ra, NULL), 0);
    assert_true(ra.has_trace);
    assert_true(ra.trace_plain);
    for (int plain = 1; plain >= 0; plain--) {
        ra.trace_plain = plain;
        trace_seen_t all = {.limit = 3}, first = {.limit = 1};
        jn_ra_trace_each(&ra, trace_seen_step, &all);
        assert_int_equal(all.n, 2);
        assert_string_equal(all.ids[0], "0/A");
        assert_string_equal(all.ids[1], "0/B");
        jn_ra_trace_each(&ra, trace_seen_step, &first);
        assert_int_equal(first.n, 1);
        assert_true(jn_ra_trace_contains(&ra, "0/B"));
    }
}

/* jn_decode_peek_small, the annotations parser's in-place reader, gives
 * what jn_decode_peek gives for every shape it reads itself, the shapes it
 * leaves, and the malformed ones (cut short, a count past the size, a
 * map's odd count), at every length the octets may be cut to. */
static void test_peek_small_agrees_with_peek(void **state)
{
    (void)state;
    static const struct {
        uint8_t len;
        uint8_t b[8];
    } cases[] = {
        {4, {0xa1, 0x02, 'h', 'i'}},             /* str8 */
        {3, {0xa3, 0x01, 'x'}},                  /* sym8 */
        {2, {0xa1, 0x00}},                       /* empty str8 */
        {5, {0xc0, 0x03, 0x02, 0x40, 0x40}},     /* list8 of two nulls */
        {3, {0xc0, 0x01, 0x00}},                 /* empty list8 */
        {6, {0xc1, 0x04, 0x02, 0x40, 0x40, 0}},  /* map8 of one pair */
        {5, {0xc1, 0x03, 0x01, 0x40, 0x40}},     /* map8 with an odd count */
        {5, {0xc0, 0x03, 0x05, 0x40, 0x40}},     /* count past the size */
        {3, {0xc0, 0x00, 0x00}},                 /* size 0: no room for the count */
        {4, {0xa1, 0x05, 'h', 'i'}},             /* str8 cut short */
        {2, {0x52, 0x07}},                       /* smallulong: left to peek */
        {1, {0x40}},                             /* null */
        {6, {0x00, 0x53, 0x70, 0xc0, 0x01, 0}},  /* described: left to peek */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (size_t avail = 1; avail <= cases[i].len; avail++) {
            jn_value_t a, b;
            memset(&a, 0, sizeof a);
            memset(&b, 0, sizeof b);
            const uint8_t *p = cases[i].b;
            size_t na = jn_decode_peek_small(p, p + avail, 1, &a);
            size_t nb = jn_decode_peek(p, avail, 1, &b);
            assert_int_equal(na, nb);
            if (nb == 0)
                continue;
            assert_int_equal(a.type, b.type);
            assert_int_equal(a.code, b.code);
            assert_int_equal(a.described, b.described);
            assert_int_equal(a.contiguous, b.contiguous);
            assert_int_equal(a.size, b.size);
            assert_int_equal(a.count, b.count);
            assert_ptr_equal(a.buffer, b.buffer);
            assert_ptr_equal(a.data, b.data);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent_section_reads_as_nothing),
        cmocka_unit_test(test_router_keys_are_read_with_their_types),
        cmocka_unit_test(test_user_annotations_after_a_router_key_are_kept_unlike_qdrouterd_1_19),
        cmocka_unit_test(test_string_keys_that_look_like_router_keys_are_user_annotations),
        cmocka_unit_test(test_class_bare_prefix_and_unknown_router_keys_are_dropped),
        cmocka_unit_test(test_bad_key_type_is_malformed),
        cmocka_unit_test(test_section_not_a_map_or_odd_count_is_malformed),
        cmocka_unit_test(test_wrong_typed_router_values_are_invalid_field),
        cmocka_unit_test(test_strip_policy_drops_router_keys_and_keeps_user_annotations),
        cmocka_unit_test(test_compose_toward_router_and_endpoint_exact_bytes),
        cmocka_unit_test(test_compose_toward_endpoint_without_user_annotations_appends_nothing),
        cmocka_unit_test(test_compose_without_received_annotations_makes_us_ingress),
        cmocka_unit_test(test_compose_with_override_phase_and_stream_exact_bytes),
        cmocka_unit_test(test_compose_keeps_received_phase_and_stream_without_override),
        cmocka_unit_test(test_compose_uses_map32_and_str32_when_large),
        cmocka_unit_test(test_compose_with_more_user_runs_than_remembered_walks_the_map),
        cmocka_unit_test(test_trace_append_and_trace_contains),
        cmocka_unit_test(test_compose_appends_after_existing_buffers),
        cmocka_unit_test(test_three_entry_trace_inter_router_message_round_trip),
        cmocka_unit_test(test_peek_small_agrees_with_peek),
        cmocka_unit_test(test_trace_each_walks_str8_and_str32_entries),
    };
    return finish_tests(cmocka_run_group_tests(tests, NULL, NULL));
}
