/*
 * test_message_content.c — message content (junction/message.h): writing,
 * locating sections as octets arrive (every combination of sections, fed
 * whole and in buffers of 1, 2, 3 and 7 octets), the header fields,
 * properties `to` and `reply-to`, and malformed messages with their error
 * conditions. Outgoing copies are in test_message_out.c. Ends with a pool
 * leak check.
 */
#include "test_message_build.h"

static int depth_of_section(int s)
{
    return s >= JN_SEC_BODY ? JN_DEPTH_ALL : s + 1;
}

/* Every section is where it was put, or absent. */
static void check_sections(jn_message_t *msg, const built_t *m)
{
    for (int s = 0; s < JN_SEC_COUNT; s++) {
        jn_iter_t it;
        int rc = jn_message_section(msg, (jn_section_t)s, &it);
        if (m->mask & (1u << s)) {
            assert_int_equal(rc, 0);
            assert_view_equals(&it, m->b.data + m->start[s], m->end[s] - m->start[s]);
        } else {
            assert_int_equal(rc, JN_ENOENT);
        }
    }
}

static void check_fields(jn_message_t *msg, const built_t *m)
{
    jn_message_header_t h;
    jn_iter_t it;
    assert_int_equal(jn_message_get_header(msg, &h), 0);
    bool hdr = (m->mask & S_HEADER) != 0;
    assert_int_equal(h.durable, hdr);
    assert_int_equal(h.priority, hdr ? 7 : 4);
    assert_int_equal(h.has_ttl, hdr);
    assert_int_equal(h.ttl, hdr ? 1000 : 0);
    assert_false(h.first_acquirer);
    assert_int_equal(h.delivery_count, hdr ? 2 : 0);
    bool props = (m->mask & S_PROPS) != 0;
    assert_int_equal(jn_message_to(msg, &it), props ? 0 : JN_ENOENT);
    if (props)
        assert_true(jn_iter_equal(&it, "q1"));
    assert_int_equal(jn_message_reply_to(msg, &it), props ? 0 : JN_ENOENT);
    if (props)
        assert_true(jn_iter_equal(&it, "rq"));
    const jn_ra_t *ra = jn_message_annotations(msg);
    assert_non_null(ra);
    bool ma = (m->mask & S_MA) != 0;
    assert_int_equal(ra->section_present, ma);
    assert_int_equal(ra->user_count, ma ? 1 : 0);
    assert_int_equal(ra->has_to, ma);
    assert_int_equal(ra->has_trace, ma);
    if (ma)
        assert_true(jn_iter_equal(&ra->to, "override"));
}

/* What parse(JN_DEPTH_PROPERTIES) must say once all octets are in but the
 * message is not complete: 0 if properties, or a section after them, were
 * seen; JN_AGAIN if the parser cannot yet know properties are absent. */
static int props_result_before_complete(unsigned mask)
{
    return (mask & (S_PROPS | S_AP | S_BODY | S_FOOTER)) ? 0 : JN_AGAIN;
}

/* Lowest number of octets with which parse(JN_DEPTH_PROPERTIES) can
 * succeed before the message is complete. */
static size_t props_lower_bound(const built_t *m)
{
    if (m->mask & S_PROPS)
        return m->end[JN_SEC_PROPERTIES];
    for (int s = JN_SEC_APPLICATION_PROPERTIES; s < JN_SEC_COUNT; s++)
        if (m->mask & (1u << s))
            return m->start[s] + 3; /* 0x00, descriptor, a constructor */
    return SIZE_MAX;
}

/* Feed m's octets chunk by chunk, parsing between pieces; then complete. */
static jn_message_t *feed_and_parse(const built_t *m, size_t chunk)
{
    jn_message_t *msg = jn_message_new();
    assert_non_null(msg);
    jn_message_set_annotation_policy(msg, true);
    size_t step = chunk ? chunk : m->b.len, first_ok = SIZE_MAX;
    for (size_t done = 0; done < m->b.len;) {
        size_t n = m->b.len - done < step ? m->b.len - done : step;
        feed_octets(msg, m->b.data + done, n, chunk);
        done += n;
        int rc = jn_message_parse(msg, JN_DEPTH_PROPERTIES);
        if (first_ok != SIZE_MAX) {
            assert_int_equal(rc, 0); /* once located, stays located */
            continue;
        }
        if (rc == JN_AGAIN)
            continue;
        assert_int_equal(rc, 0);
        first_ok = done;
        assert_true(first_ok >= props_lower_bound(m));
    }
    assert_int_equal(jn_message_parse(msg, JN_DEPTH_PROPERTIES),
                     props_result_before_complete(m->mask));
    assert_int_equal(jn_message_length(msg), m->b.len);
    assert_int_equal(jn_message_section(msg, JN_SEC_BODY, &(jn_iter_t){0}), JN_AGAIN);
    jn_message_set_complete(msg);
    assert_int_equal(jn_message_parse(msg, JN_DEPTH_ALL), 0);
    assert_null(jn_message_error(msg));
    assert_null(jn_message_error_condition(msg));
    return msg;
}

static void check_endpoint_copy(jn_message_t *msg, const built_t *m)
{
    jn_buffer_list_t ma;
    jn_ra_hop_t hop = {.to_router = false, .node_id = "0/Me"};
    bytes_t ann = {.len = 0}, want, got = {.len = 0};
    jn_message_out_t o;
    jn_buffer_list_init(&ma);
    assert_int_equal(jn_ra_compose(jn_message_annotations(msg), &hop, &ma), 0);
    if (m->mask & S_MA)
        expected_endpoint_annotations(&ann);
    expected_copy(m, &ann, &want);
    assert_int_equal(jn_message_out_init(&o, msg, &ma), 0);
    assert_null(ma.head);
    assert_int_equal(drain_out(&o, &got), 0);
    jn_message_out_fini(&o);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.data, want.data, want.len);
}

static void test_every_section_combination_is_located_whole_and_in_tiny_buffers(void **state)
{
    (void)state;
    for (unsigned mask = 0; mask <= S_ALL; mask++) {
        built_t m;
        build(&m, mask, (int)(mask % 4));
        for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
            jn_message_t *msg = feed_and_parse(&m, tiny_chunks[c]);
            check_sections(msg, &m);
            check_fields(msg, &m);
            check_endpoint_copy(msg, &m);
            jn_message_unref(msg);
        }
    }
}

static void test_each_body_variant_is_located_without_decoding(void **state)
{
    (void)state;
    for (int variant = 0; variant < 4; variant++) {
        built_t m;
        build(&m, S_HEADER | S_BODY | S_FOOTER, variant);
        for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
            jn_message_t *msg = feed_and_parse(&m, tiny_chunks[c]);
            check_sections(msg, &m);
            jn_message_unref(msg);
        }
    }
}

/* parse(d) makes every section of depth <= d known; deeper ones may still
 * answer JN_AGAIN. */
static void test_parse_stops_at_the_requested_depth(void **state)
{
    (void)state;
    built_t m;
    build(&m, S_ALL, 0);
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        jn_message_t *msg = message_from(m.b.data, m.b.len, tiny_chunks[c], true);
        jn_iter_t it;
        assert_null(jn_message_annotations(msg));
        assert_int_equal(jn_message_to(msg, &it), JN_AGAIN);
        assert_int_equal(jn_message_get_header(msg, &(jn_message_header_t){0}), JN_AGAIN);
        for (int d = JN_DEPTH_NONE; d <= JN_DEPTH_ALL; d++) {
            assert_int_equal(jn_message_parse(msg, (jn_message_depth_t)d), 0);
            for (int s = 0; s < JN_SEC_COUNT; s++) {
                int rc = jn_message_section(msg, (jn_section_t)s, &it);
                if (depth_of_section(s) <= d)
                    assert_int_equal(rc, 0);
            }
        }
        assert_int_equal(jn_message_section(msg, JN_SEC_COUNT, &it), JN_EINVAL);
        jn_message_unref(msg);
    }
}

static void test_sections_with_symbol_descriptors_are_accepted(void **state)
{
    (void)state;
    jn_encoder_t e;
    bytes_t b = {.len = 0};
    jn_encoder_init(&e);
    jn_enc_descriptor_symbol(&e, "amqp:header:list");
    jn_enc_list_begin(&e);
    jn_enc_bool(&e, true);
    jn_enc_list_end(&e);
    jn_enc_descriptor_symbol(&e, "amqp:message-annotations:map");
    jn_enc_map_begin(&e);
    jn_enc_csymbol(&e, "k");
    jn_enc_cstring(&e, "v");
    jn_enc_map_end(&e);
    jn_enc_descriptor_symbol(&e, "amqp:properties:list");
    jn_enc_list_begin(&e);
    jn_enc_null(&e);
    jn_enc_null(&e);
    jn_enc_cstring(&e, "sym-to");
    jn_enc_list_end(&e);
    jn_enc_descriptor_symbol(&e, "amqp:data:binary");
    jn_enc_binary(&e, "x", 1);
    jn_enc_descriptor_symbol(&e, "amqp:footer:map");
    jn_enc_map_begin(&e);
    jn_enc_map_end(&e);
    bytes_take(&b, &e);
    jn_encoder_free(&e);
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        jn_message_t *msg = message_from(b.data, b.len, tiny_chunks[c], false);
        jn_message_header_t h;
        jn_iter_t it;
        assert_int_equal(jn_message_parse(msg, JN_DEPTH_ALL), 0);
        assert_int_equal(jn_message_get_header(msg, &h), 0);
        assert_true(h.durable);
        assert_int_equal(jn_message_to(msg, &it), 0);
        assert_true(jn_iter_equal(&it, "sym-to"));
        assert_int_equal(jn_message_reply_to(msg, &it), JN_ENOENT);
        assert_int_equal(jn_message_annotations(msg)->user_count, 1);
        assert_int_equal(jn_message_section(msg, JN_SEC_FOOTER, &it), 0);
        jn_message_unref(msg);
    }
}

/* --- header and properties --------------------------------------------- */

static jn_message_t *parse_bytes(const bytes_t *b, size_t chunk, bool honour, int expect)
{
    jn_message_t *msg = message_from(b->data, b->len, chunk, honour);
    assert_int_equal(jn_message_parse(msg, JN_DEPTH_ALL), expect);
    return msg;
}

static void header_with(bytes_t *b, void (*fields)(jn_encoder_t *e))
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_HEADER);
    jn_enc_list_begin(&e);
    fields(&e);
    jn_enc_list_end(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_AMQP_VALUE);
    jn_enc_null(&e);
    b->len = 0;
    bytes_take(b, &e);
    jn_encoder_free(&e);
}

static void fields_none(jn_encoder_t *e)
{
    (void)e;
}

static void fields_nulls(jn_encoder_t *e)
{
    for (int i = 0; i < 5; i++)
        jn_enc_null(e);
}

static void fields_values(jn_encoder_t *e)
{
    jn_enc_bool(e, true);
    jn_enc_ubyte(e, 9);
    jn_enc_uint(e, 70000);
    jn_enc_bool(e, true);
    jn_enc_uint(e, 300);
}

static void fields_durable_only(jn_encoder_t *e)
{
    jn_enc_bool(e, true);
}

/* Every encoding of the header's fields: the in-place reader takes the
 * unsigned ones and the booleans, the decoder's way the rest (a signed
 * integer, a described value); both must give the same header. */
static void fields_wide_encodings(jn_encoder_t *e)
{
    static const uint8_t bool_octet[] = {0x56, 0x01};
    jn_enc_raw(e, bool_octet, sizeof bool_octet);
    jn_enc_ushort(e, 200);
    jn_enc_ulong(e, 4000000000u);
    jn_enc_bool(e, false);
    jn_enc_ulong(e, 7);
}

static void fields_signed_and_zero(jn_encoder_t *e)
{
    static const uint8_t uint0[] = {0x43};
    jn_enc_bool(e, false);
    jn_enc_int(e, 3);
    jn_enc_raw(e, uint0, sizeof uint0);
    jn_enc_null(e);
    jn_enc_long(e, 12);
}

static void fields_described_priority(jn_encoder_t *e)
{
    jn_enc_null(e);
    jn_enc_descriptor_ulong(e, 0x99);
    jn_enc_ubyte(e, 5);
}

static void fields_durable_int(jn_encoder_t *e)
{
    jn_enc_int(e, 1);
}

static void fields_priority_too_big(jn_encoder_t *e)
{
    jn_enc_null(e);
    jn_enc_uint(e, 256);
}

static void check_header(void (*fields)(jn_encoder_t *), jn_message_header_t want)
{
    bytes_t b;
    header_with(&b, fields);
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        jn_message_t *msg = parse_bytes(&b, tiny_chunks[c], false, 0);
        jn_message_header_t h;
        assert_int_equal(jn_message_get_header(msg, &h), 0);
        assert_int_equal(h.durable, want.durable);
        assert_int_equal(h.priority, want.priority);
        assert_int_equal(h.has_ttl, want.has_ttl);
        assert_int_equal(h.ttl, want.ttl);
        assert_int_equal(h.first_acquirer, want.first_acquirer);
        assert_int_equal(h.delivery_count, want.delivery_count);
        jn_message_unref(msg);
    }
}

static void test_header_defaults_when_absent_empty_or_null(void **state)
{
    (void)state;
    jn_message_header_t defaults = {.priority = 4};
    check_header(fields_none, defaults);
    check_header(fields_nulls, defaults);
    bytes_t b = {.len = 0};
    uint8_t value_only[] = {0x00, 0x53, 0x77, 0x40};
    bytes_add(&b, value_only, sizeof value_only);
    jn_message_t *msg = parse_bytes(&b, 1, false, 0);
    jn_message_header_t h;
    assert_int_equal(jn_message_get_header(msg, &h), 0);
    assert_int_equal(h.priority, 4);
    assert_false(h.durable);
    assert_false(h.has_ttl);
    jn_iter_t it;
    assert_int_equal(jn_message_section(msg, JN_SEC_HEADER, &it), JN_ENOENT);
    jn_message_unref(msg);
}

static void test_header_values_are_read(void **state)
{
    (void)state;
    check_header(fields_values, (jn_message_header_t){.durable = true,
                                                      .priority = 9,
                                                      .has_ttl = true,
                                                      .ttl = 70000,
                                                      .first_acquirer = true,
                                                      .delivery_count = 300});
    check_header(fields_durable_only, (jn_message_header_t){.durable = true, .priority = 4});
    check_header(fields_wide_encodings, (jn_message_header_t){.durable = true,
                                                              .priority = 200,
                                                              .has_ttl = true,
                                                              .ttl = 4000000000u,
                                                              .delivery_count = 7});
    check_header(fields_signed_and_zero,
                 (jn_message_header_t){.priority = 3, .has_ttl = true, .delivery_count = 12});
    check_header(fields_described_priority, (jn_message_header_t){.priority = 5});
}

static void test_header_field_of_wrong_type_is_decode_error(void **state)
{
    (void)state;
    void (*bad[])(jn_encoder_t *) = {fields_durable_int, fields_priority_too_big};
    for (size_t i = 0; i < 2; i++) {
        bytes_t b;
        header_with(&b, bad[i]);
        for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
            jn_message_t *msg = parse_bytes(&b, tiny_chunks[c], false, JN_EPROTO);
            assert_string_equal(jn_message_error_condition(msg), "amqp:decode-error");
            assert_non_null(jn_message_error(msg));
            jn_message_unref(msg);
        }
    }
}

/* Properties with `to` and `reply-to` given as: 0 absent (short list),
 * 1 null, 2 a string, 3 a ulong, 4 a symbol. */
static void properties_with(bytes_t *b, int to, int reply_to)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_PROPERTIES);
    jn_enc_list_begin(&e);
    int fields = reply_to ? 5 : to ? 3 : 1;
    for (int i = 0; i < fields; i++) {
        int how = i == 2 ? to : i == 4 ? reply_to : 1;
        if (i == 0)
            jn_enc_ulong(&e, 77); /* message-id */
        else if (how <= 1)
            jn_enc_null(&e);
        else if (how == 2)
            jn_enc_cstring(&e, i == 2 ? "amqp://host:5672/dest.q" : "reply.q");
        else if (how == 3)
            jn_enc_ulong(&e, 5);
        else
            jn_enc_csymbol(&e, "dest");
    }
    jn_enc_list_end(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_DATA);
    jn_enc_binary(&e, "b", 1);
    b->len = 0;
    bytes_take(b, &e);
    jn_encoder_free(&e);
}

static void test_to_and_reply_to_absent_null_or_present(void **state)
{
    (void)state;
    for (int to = 0; to <= 2; to++) {
        for (int rt = 0; rt <= 2; rt++) {
            bytes_t b;
            properties_with(&b, to, rt);
            for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
                jn_message_t *msg = parse_bytes(&b, tiny_chunks[c], false, 0);
                jn_iter_t it;
                assert_int_equal(jn_message_to(msg, &it), to == 2 ? 0 : JN_ENOENT);
                if (to == 2) /* the address view drops scheme and host */
                    assert_true(jn_iter_equal(&it, "dest.q"));
                assert_int_equal(jn_message_reply_to(msg, &it), rt == 2 ? 0 : JN_ENOENT);
                if (rt == 2)
                    assert_true(jn_iter_equal(&it, "reply.q"));
                jn_message_unref(msg);
            }
        }
    }
    /* no properties section at all */
    bytes_t b = {.len = 0};
    uint8_t value_only[] = {0x00, 0x53, 0x77, 0x40};
    bytes_add(&b, value_only, sizeof value_only);
    jn_message_t *msg = parse_bytes(&b, 2, false, 0);
    jn_iter_t it;
    assert_int_equal(jn_message_to(msg, &it), JN_ENOENT);
    assert_int_equal(jn_message_reply_to(msg, &it), JN_ENOENT);
    jn_message_unref(msg);
    /* an empty properties list (list0) */
    uint8_t list0[] = {0x00, 0x53, 0x73, 0x45};
    b.len = 0;
    bytes_add(&b, list0, sizeof list0);
    msg = parse_bytes(&b, 1, false, 0);
    assert_int_equal(jn_message_to(msg, &it), JN_ENOENT);
    jn_message_unref(msg);
}

/* user-id (read on demand, jn_message_user_id): absent, null, empty,
 * binary, string, another type, a list that ends before it, no section. */
static void test_user_id_read_on_demand(void **state)
{
    (void)state;
    static const struct {
        uint8_t octets[16];
        size_t len;
        int rc;
        const char *want;
    } cases[] = {
        /* properties list8 [message-id null, user-id ...] then a value body */
        {{0x00, 0x53, 0x73, 0xc0, 0x07, 0x02, 0x40, 0xa0, 0x03, 'b', 'o', 'b'}, 12, 0, "bob"},
        {{0x00, 0x53, 0x73, 0xc0, 0x07, 0x02, 0x40, 0xa1, 0x03, 'e', 'v', 'e'}, 12, 0, "eve"},
        {{0x00, 0x53, 0x73, 0xc0, 0x04, 0x02, 0x40, 0xa0, 0x00}, 9, 0, ""},
        {{0x00, 0x53, 0x73, 0xc0, 0x03, 0x02, 0x40, 0x40}, 8, JN_ENOENT, NULL},
        {{0x00, 0x53, 0x73, 0xc0, 0x02, 0x01, 0x40}, 7, JN_ENOENT, NULL},
        {{0x00, 0x53, 0x73, 0x45}, 4, JN_ENOENT, NULL},
        {{0x00, 0x53, 0x73, 0xc0, 0x04, 0x02, 0x40, 0x52, 0x07}, 9, JN_EINVAL, NULL},
        {{0x00, 0x53, 0x77, 0x40}, 4, JN_ENOENT, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bytes_t b = {.len = 0};
        bytes_add(&b, cases[i].octets, cases[i].len);
        if (cases[i].octets[2] == 0x73) {
            uint8_t body[] = {0x00, 0x53, 0x77, 0x40};
            bytes_add(&b, body, sizeof body);
        }
        for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
            jn_message_t *msg = parse_bytes(&b, tiny_chunks[c], false, 0);
            jn_iter_t it;
            assert_int_equal(jn_message_user_id(msg, &it), cases[i].rc);
            if (cases[i].want)
                assert_true(jn_iter_equal(&it, cases[i].want));
            jn_message_unref(msg);
        }
    }
}

static void test_to_or_reply_to_not_a_string_is_decode_error(void **state)
{
    (void)state;
    int cases[][2] = {{3, 0}, {4, 0}, {2, 3}, {1, 4}};
    for (size_t i = 0; i < 4; i++) {
        bytes_t b;
        properties_with(&b, cases[i][0], cases[i][1]);
        for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
            jn_message_t *msg = parse_bytes(&b, tiny_chunks[c], false, JN_EPROTO);
            assert_string_equal(jn_message_error_condition(msg), "amqp:decode-error");
            jn_iter_t it;
            assert_int_equal(jn_message_to(msg, &it), JN_AGAIN);
            jn_message_unref(msg);
        }
    }
}

/* --- malformed messages ------------------------------------------------ */

static void expect_malformed(const uint8_t *data, size_t len, bool honour, const char *condition)
{
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        jn_message_t *msg = message_from(data, len, tiny_chunks[c], honour);
        assert_int_equal(jn_message_parse(msg, JN_DEPTH_ALL), JN_EPROTO);
        assert_non_null(jn_message_error(msg));
        assert_string_equal(jn_message_error_condition(msg), condition);
        /* it stays malformed, and cannot be copied */
        assert_int_equal(jn_message_parse(msg, JN_DEPTH_HEADER), JN_EPROTO);
        jn_message_out_t o;
        jn_buffer_list_t none;
        jn_buffer_list_init(&none);
        assert_int_equal(jn_message_out_init(&o, msg, &none), JN_EINVAL);
        jn_message_unref(msg);
    }
}

#define EXPECT_MALFORMED(honour, condition, ...)                                                   \
    do {                                                                                           \
        const uint8_t octets_[] = {__VA_ARGS__};                                                   \
        expect_malformed(octets_, sizeof octets_, honour, condition);                              \
    } while (0)

#define DECODE  "amqp:decode-error"
#define INVALID "amqp:invalid-field"

static void test_truncated_sections_are_decode_errors(void **state)
{
    (void)state;
    built_t m;
    build(&m, S_ALL, 3);
    for (size_t len = 0; len <= m.b.len; len++) {
        bool boundary = len == 0;
        for (size_t i = 0; i < m.n_boundaries; i++)
            boundary = boundary || m.boundaries[i] == len;
        for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
            jn_message_t *msg = message_from(m.b.data, len, tiny_chunks[c], true);
            int rc = jn_message_parse(msg, JN_DEPTH_ALL);
            assert_int_equal(rc, boundary ? 0 : JN_EPROTO);
            if (!boundary)
                assert_string_equal(jn_message_error_condition(msg), DECODE);
            jn_message_unref(msg);
        }
    }
}

static void test_wrong_or_unknown_descriptor_is_decode_error(void **state)
{
    (void)state;
    /* ulong 0x79: no such section */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x79, 0x45);
    /* ulong0 */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x44, 0x45);
    /* long descriptor form with a wrong code */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x80, 0, 0, 0, 1, 0, 0, 0, 0x70, 0x45);
    /* a string descriptor */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0xa1, 0x01, 'x', 0x45);
    /* an unknown symbol descriptor */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0xa3, 0x0d, 'a', 'm', 'q', 'p', ':', 'f', 'o', 'o', ':',
                     'l', 'i', 's', 't', 0x45);
    /* not described at all */
    EXPECT_MALFORMED(false, DECODE, 0x45);
    /* header that is a map; data that is a string; map section as list */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x70, 0xc1, 0x01, 0x00);
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x75, 0xa1, 0x01, 'x');
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x74, 0x45);
    /* an unknown format code as the amqp-value */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x77, 0x99);
    /* a list8 whose size cannot hold its count */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x76, 0xc0, 0x00);
}

static void test_sections_out_of_order_are_decode_errors(void **state)
{
    (void)state;
    /* properties, then message annotations */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x73, 0x45, 0x00, 0x53, 0x72, 0xc1, 0x01, 0x00);
    /* properties, then header */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x73, 0x45, 0x00, 0x53, 0x70, 0x45);
    /* two headers */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x70, 0x45, 0x00, 0x53, 0x70, 0x45);
    /* body, then application properties */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x77, 0x40, 0x00, 0x53, 0x74, 0xc1, 0x01, 0x00);
    /* footer, then a body section; two footers */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x78, 0xc1, 0x01, 0x00, 0x00, 0x53, 0x77, 0x40);
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x78, 0xc1, 0x01, 0x00, 0x00, 0x53, 0x78, 0xc1,
                     0x01, 0x00);
    /* trailing octets that are not a section */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x77, 0x40, 0x40);
}

static void test_properties_not_a_list_is_decode_error(void **state)
{
    (void)state;
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x73, 0xc1, 0x01, 0x00);
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x73, 0xa1, 0x02, 'q', '1');
}

static void test_malformed_message_annotations(void **state)
{
    (void)state;
    /* not a map */
    EXPECT_MALFORMED(true, DECODE, 0x00, 0x53, 0x72, 0x45);
    /* odd count: map8 with one item */
    EXPECT_MALFORMED(true, DECODE, 0x00, 0x53, 0x72, 0xc1, 0x04, 0x01, 0xa3, 0x01, 'k');
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x72, 0xc1, 0x04, 0x01, 0xa3, 0x01, 'k');
    /* a key that is an int */
    EXPECT_MALFORMED(false, DECODE, 0x00, 0x53, 0x72, 0xc1, 0x05, 0x02, 0x54, 0x01, 0x54, 0x02);
    /* x-opt-qd.to as a symbol, honoured: invalid-field */
    EXPECT_MALFORMED(true, INVALID, 0x00, 0x53, 0x72, 0xc1, 0x11, 0x02, 0xa3, 0x0b, 'x', '-', 'o',
                     'p', 't', '-', 'q', 'd', '.', 't', 'o', 0xa3, 0x01, 'q');
    /* x-opt-qd.trace with a non-string entry: invalid-field */
    EXPECT_MALFORMED(true, INVALID, 0x00, 0x53, 0x72, 0xc1, 0x16, 0x02, 0xa3, 0x0e, 'x', '-', 'o',
                     'p', 't', '-', 'q', 'd', '.', 't', 'r', 'a', 'c', 'e', 0xc0, 0x03, 0x01, 0x54,
                     0x07);
}

static void test_wrong_typed_router_key_is_ignored_when_not_honoured(void **state)
{
    (void)state;
    const uint8_t bad_to[] = {0x00, 0x53, 0x72, 0xc1, 0x11, 0x02, 0xa3, 0x0b, 'x',  '-',  'o',
                              'p',  't',  '-',  'q',  'd',  '.',  't',  'o',  0xa3, 0x01, 'q'};
    bytes_t b = {.len = 0};
    bytes_add(&b, bad_to, sizeof bad_to);
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        jn_message_t *msg = parse_bytes(&b, tiny_chunks[c], false, 0);
        const jn_ra_t *ra = jn_message_annotations(msg);
        assert_true(ra->section_present);
        assert_false(ra->has_to);
        assert_int_equal(ra->user_count, 0);
        jn_message_unref(msg);
    }
}

/* --- writing ------------------------------------------------------------ */

static void test_write_space_and_commit_fill_buffers_in_place(void **state)
{
    (void)state;
    jn_message_t *msg = jn_message_new();
    uint8_t body[1500];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (uint8_t)(i * 13);
    bytes_t b = {.len = 0};
    uint8_t head[] = {0x00, 0x53, 0x75, 0xb0, 0x00, 0x00, 0x05, 0xdc};
    bytes_add(&b, head, sizeof head);
    bytes_add(&b, body, sizeof body);
    size_t done = 0;
    while (done < b.len) {
        uint8_t *p;
        size_t space;
        assert_int_equal(jn_message_write_space(msg, &p, &space), 0);
        assert_true(space > 0 && space <= JN_BUFFER_CAPACITY);
        size_t n = b.len - done < space ? b.len - done : space;
        if (n > 100)
            n = 100; /* partial commits */
        memcpy(p, b.data + done, n);
        jn_message_write_commit(msg, n);
        done += n;
        assert_int_equal(jn_message_length(msg), done);
    }
    size_t buffers = 0;
    for (const jn_buffer_t *x = jn_message_buffers(msg); x; x = jn_buffer_next(x))
        buffers++;
    assert_int_equal(buffers, (b.len + JN_BUFFER_CAPACITY - 1) / JN_BUFFER_CAPACITY);
    assert_int_equal(jn_message_parse(msg, JN_DEPTH_BODY), 0);
    assert_int_equal(jn_message_parse(msg, JN_DEPTH_ALL), JN_AGAIN);
    assert_false(jn_message_is_complete(msg));
    jn_message_set_complete(msg);
    assert_true(jn_message_is_complete(msg));
    assert_int_equal(jn_message_parse(msg, JN_DEPTH_ALL), 0);
    jn_iter_t it;
    assert_int_equal(jn_message_section(msg, JN_SEC_BODY, &it), 0);
    assert_view_equals(&it, b.data, b.len);
    jn_message_unref(msg);
}

/* messageLoggingComponents: all, none, a list of property names and
 * app-properties; an unknown name is refused and named. */
static void test_log_components(void **state)
{
    (void)state;
    uint32_t mask = 7;
    const char *bad = NULL;
    size_t bad_len = 0;
    assert_int_equal(jn_message_log_components(NULL, &mask, NULL, NULL), 0);
    assert_int_equal(mask, 0);
    assert_int_equal(jn_message_log_components("none", &mask, NULL, NULL), 0);
    assert_int_equal(mask, 0);
    assert_int_equal(jn_message_log_components("all", &mask, NULL, NULL), 0);
    assert_int_equal(mask, (JN_MESSAGE_LOG_APP_PROPERTIES << 1) - 1);
    assert_int_equal(jn_message_log_components("user-id,subject, reply-to", &mask, NULL, NULL),
                     0);
    assert_int_equal(mask, (1u << 1) | (1u << 3) | (1u << 4));
    assert_string_equal(jn_message_property_name(4), "reply-to");
    assert_null(jn_message_property_name(JN_MESSAGE_PROPERTY_COUNT));
    assert_int_equal(jn_message_log_components("app-properties,to", &mask, NULL, NULL), 0);
    assert_int_equal(mask, JN_MESSAGE_LOG_APP_PROPERTIES | (1u << 2));
    assert_int_equal(jn_message_log_components("subject,bogus", &mask, &bad, &bad_len), JN_EINVAL);
    assert_int_equal(bad_len, 5);
    assert_memory_equal(bad, "bogus", 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_section_combination_is_located_whole_and_in_tiny_buffers),
        cmocka_unit_test(test_each_body_variant_is_located_without_decoding),
        cmocka_unit_test(test_parse_stops_at_the_requested_depth),
        cmocka_unit_test(test_sections_with_symbol_descriptors_are_accepted),
        cmocka_unit_test(test_header_defaults_when_absent_empty_or_null),
        cmocka_unit_test(test_header_values_are_read),
        cmocka_unit_test(test_header_field_of_wrong_type_is_decode_error),
        cmocka_unit_test(test_to_and_reply_to_absent_null_or_present),
        cmocka_unit_test(test_to_or_reply_to_not_a_string_is_decode_error),
        cmocka_unit_test(test_truncated_sections_are_decode_errors),
        cmocka_unit_test(test_wrong_or_unknown_descriptor_is_decode_error),
        cmocka_unit_test(test_sections_out_of_order_are_decode_errors),
        cmocka_unit_test(test_properties_not_a_list_is_decode_error),
        cmocka_unit_test(test_malformed_message_annotations),
        cmocka_unit_test(test_wrong_typed_router_key_is_ignored_when_not_honoured),
        cmocka_unit_test(test_write_space_and_commit_fill_buffers_in_place),
        cmocka_unit_test(test_user_id_read_on_demand),
        cmocka_unit_test(test_log_components),
    };
    return finish_tests(cmocka_run_group_tests(tests, NULL, NULL));
}
