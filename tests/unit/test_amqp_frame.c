/*
 * test_amqp_frame.c — the engine's transport layer (junction/amqp_frame.h):
 * protocol header exchange (AMQP, SASL, TLS detection), frame headers read
 * in place with every framing rule and its condition, the extended header
 * skipped, heartbeats, and frames composed with their size. Every read runs
 * over the same octets as plain bytes and split into buffers of 1, 2, 3 and
 * 7 octets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/amqp_frame.h>
#include <junction/pool.h>

#include <stdio.h>
#include <string.h>

static const size_t splits[] = {0, 1, 2, 3, 7, JN_BUFFER_CAPACITY};
#define NSPLITS (sizeof splits / sizeof splits[0])

static void make_iter(jn_buffer_list_t *list, jn_iter_t *it, const uint8_t *data, size_t len,
                      size_t chunk)
{
    jn_buffer_list_init(list);
    if (chunk == 0 || len == 0) {
        jn_iter_init_bytes(it, len ? data : (const uint8_t *)"", len, JN_VIEW_RAW);
        return;
    }
    assert_int_equal(jn_buffer_list_append_split(list, data, len, chunk), 0);
    assert_int_equal(jn_iter_init(it, list->head, 0, len, JN_VIEW_RAW), 0);
}

static int header_read(const uint8_t *h, size_t len, jn_amqp_proto_t *proto, jn_amqp_fault_t *fault)
{
    int first = 0;
    for (size_t s = 0; s < NSPLITS; s++) {
        jn_buffer_list_t list;
        jn_iter_t it;
        make_iter(&list, &it, h, len, splits[s]);
        int rc = jn_amqp_header_read(&it, proto, fault);
        jn_buffer_list_free(&list);
        if (s == 0)
            first = rc;
        assert_int_equal(rc, first);
    }
    return first;
}

static void test_protocol_headers_amqp_sasl_tls(void **state)
{
    jn_amqp_proto_t proto;
    jn_amqp_fault_t fault = {0};
    const jn_amqp_proto_t ids[] = {JN_AMQP_PROTO_AMQP, JN_AMQP_PROTO_TLS, JN_AMQP_PROTO_SASL};
    for (size_t i = 0; i < 3; i++) {
        uint8_t h[8];
        jn_amqp_header_write(h, ids[i]);
        assert_memory_equal(h, "AMQP", 4);
        assert_int_equal(h[4], ids[i]);
        assert_int_equal(header_read(h, 8, &proto, &fault), 8);
        assert_int_equal(proto, ids[i]);
        for (size_t n = 0; n < 8; n++) /* a partial header waits */
            assert_int_equal(header_read(h, n, &proto, &fault), JN_AGAIN);
    }
}

static void test_protocol_header_refused_with_framing_error(void **state)
{
    jn_amqp_proto_t proto;
    const char *bad[] = {"AMQP\x01\x01\x00\x00",
                         "AMQP\x00\x01\x00\x0a",
                         "AMQP\x00\x02\x00\x00",
                         "AMQP\x03\x01\x01\x00",
                         "HTTP/1.1",
                         "AMQ\x00\x00\x01\x00\x00"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        jn_amqp_fault_t fault = {0};
        assert_int_equal(header_read((const uint8_t *)bad[i], 8, &proto, &fault), JN_EPROTO);
        assert_string_equal(fault.condition, "amqp:connection:framing-error");
    }
    /* a wrong octet is refused as soon as it is there */
    jn_amqp_fault_t fault = {0};
    assert_int_equal(header_read((const uint8_t *)"HT", 2, &proto, &fault), JN_EPROTO);
}

/* Read a frame from data under every split; all must agree. */
/* jn_amqp_frame_next on in gives what jn_amqp_frame_read gave (rc, f, the
 * fault's condition) and moves its iterator past the frame on 1 only. */
static void next_agrees(const jn_iter_t *in, uint8_t type, uint32_t max, uint16_t chmax, int rc,
                        const jn_amqp_frame_t *f, const jn_amqp_fault_t *fault)
{
    jn_iter_t it = *in;
    jn_amqp_frame_t g;
    jn_amqp_fault_t gf = {0};
    assert_int_equal(jn_amqp_frame_next(&it, type, max, chmax, &g, &gf), rc);
    size_t moved = jn_iter_length(in) - jn_iter_length(&it);
    if (rc != 1) {
        assert_int_equal(moved, 0);
        if (rc == JN_EPROTO)
            assert_string_equal(gf.condition, fault->condition);
        return;
    }
    assert_int_equal(moved, f->size);
    assert_int_equal(g.size, f->size);
    assert_int_equal(g.doff, f->doff);
    assert_int_equal(g.channel, f->channel);
    assert_int_equal(g.body_size, f->body_size);
    assert_true(jn_iter_equal_iter(&g.body, &f->body));
}

static int frame_read(const uint8_t *data, size_t len, uint8_t type, uint32_t max, uint16_t chmax,
                      jn_amqp_frame_t *out, uint8_t *body, jn_amqp_fault_t *fault)
{
    int first = 0;
    for (size_t s = 0; s < NSPLITS; s++) {
        jn_buffer_list_t list;
        jn_iter_t it;
        jn_amqp_frame_t f;
        make_iter(&list, &it, data, len, splits[s]);
        int rc = jn_amqp_frame_read(&it, type, max, chmax, &f, fault);
        next_agrees(&it, type, max, chmax, rc, &f, fault);
        if (s == 0) {
            first = rc;
            if (rc == 1) {
                *out = f;
                jn_iter_t b = f.body;
                assert_int_equal(jn_iter_copy(&b, body, f.body_size), f.body_size);
            }
        }
        assert_int_equal(rc, first);
        if (rc == 1) {
            uint8_t again[1024];
            jn_iter_t b = f.body;
            assert_int_equal(jn_iter_copy(&b, again, sizeof again), out->body_size);
            assert_memory_equal(again, body, out->body_size);
        }
        jn_buffer_list_free(&list);
    }
    return first;
}

static void test_frame_read_in_place_with_extended_header_skipped(void **state)
{
    /* size 16, doff 3 (4 octets of extended header), AMQP, channel 0x0102 */
    const uint8_t frame[] = {0, 0, 0, 16, 3, 0, 1, 2, 0xee, 0xee, 0xee, 0xee, 'b', 'o', 'd', 'y'};
    jn_amqp_frame_t f;
    uint8_t body[64];
    jn_amqp_fault_t fault = {0};
    assert_int_equal(frame_read(frame, sizeof frame, 0, 512, 65535, &f, body, &fault), 1);
    assert_int_equal(f.size, 16);
    assert_int_equal(f.doff, 3);
    assert_int_equal(f.type, JN_AMQP_FRAME_AMQP);
    assert_int_equal(f.channel, 0x0102);
    assert_int_equal(f.body_size, 4);
    assert_memory_equal(body, "body", 4);
    /* in place: the body view points into the input */
    jn_iter_t it;
    jn_iter_init_bytes(&it, frame, sizeof frame, JN_VIEW_RAW);
    assert_int_equal(jn_amqp_frame_read(&it, 0, 512, 65535, &f, &fault), 1);
    assert_ptr_equal(f.body.cursor, frame + 12);
    /* a frame not all there yet waits, at every length */
    for (size_t n = 0; n < sizeof frame; n++)
        assert_int_equal(frame_read(frame, n, 0, 512, 65535, &f, body, &fault), JN_AGAIN);
}

/* Frames one after another, split into buffers of every size from 1
 * octet to the whole stream: jn_amqp_frame_next reads each (its body the
 * octets sent, an extended header skipped) and moves past it, frames cut
 * by a buffer's end included. */
static void test_frames_in_a_row_read_and_passed_at_every_split(void **state)
{
    (void)state;
    static const uint8_t stream[] = {
        0, 0, 0, 13, 2, 0, 0, 1, 'f',  'i',  'r',  's',  't',                /* channel 1 */
        0, 0, 0, 16, 3, 0, 0, 2, 0xee, 0xee, 0xee, 0xee, 'b', 'o', 'd', 'y', /* doff 3 */
        0, 0, 0, 8,  2, 0, 0, 0,                                             /* heartbeat */
        0, 0, 0, 14, 2, 0, 0, 3, 't',  'h',  'i',  'r',  'd', '!'};
    static const char *bodies[] = {"first", "body", "", "third!"};
    static const uint16_t channels[] = {1, 2, 0, 3};
    for (size_t chunk = 1; chunk <= sizeof stream; chunk++) {
        jn_buffer_list_t list;
        jn_iter_t it;
        make_iter(&list, &it, stream, sizeof stream, chunk);
        for (uint16_t k = 0; k < 4; k++) {
            jn_amqp_frame_t f;
            jn_amqp_fault_t fault = {0};
            assert_int_equal(jn_amqp_frame_next(&it, 0, 512, 65535, &f, &fault), 1);
            assert_int_equal(f.channel, channels[k]);
            char body[16] = {0};
            jn_iter_t b = f.body;
            assert_int_equal(jn_iter_copy(&b, body, sizeof body), strlen(bodies[k]));
            assert_string_equal(body, bodies[k]);
        }
        assert_int_equal(jn_iter_length(&it), 0);
        jn_buffer_list_free(&list);
    }
}

static void test_empty_frame_is_a_heartbeat(void **state)
{
    uint8_t hb[8];
    jn_amqp_heartbeat_write(hb);
    assert_memory_equal(hb, "\x00\x00\x00\x08\x02\x00\x00\x00", 8);
    jn_amqp_frame_t f;
    uint8_t body[8];
    jn_amqp_fault_t fault = {0};
    assert_int_equal(frame_read(hb, 8, 0, 512, 0, &f, body, &fault), 1);
    assert_int_equal(f.body_size, 0);
    assert_int_equal(f.size, 8);
}

static void expect_framing(const uint8_t *data, size_t len, uint8_t type, uint32_t max,
                           uint16_t chmax, const char *words)
{
    jn_amqp_frame_t f;
    uint8_t body[256];
    jn_amqp_fault_t fault = {0};
    assert_int_equal(frame_read(data, len, type, max, chmax, &f, body, &fault), JN_EPROTO);
    assert_string_equal(fault.condition, "amqp:connection:framing-error");
    if (!strstr(fault.description, words))
        fail_msg("'%s' does not say '%s'", fault.description, words);
}

static void test_framing_rules_each_with_framing_error(void **state)
{
    const uint8_t small[] = {0, 0, 0, 7, 2, 0, 0, 0};
    expect_framing(small, 8, 0, 512, 0, "below 8");
    const uint8_t big[] = {0, 0, 2, 1, 2, 0, 0, 0};
    expect_framing(big, 8, 0, 512, 0, "above the max-frame-size");
    expect_framing(big, 4, 0, 512, 0, "above the max-frame-size"); /* known from 4 octets */
    const uint8_t doff1[] = {0, 0, 0, 8, 1, 0, 0, 0};
    expect_framing(doff1, 8, 0, 512, 0, "below 2");
    const uint8_t doff_past[] = {0, 0, 0, 12, 4, 0, 0, 0, 0, 0, 0, 0};
    expect_framing(doff_past, 12, 0, 512, 0, "past the frame");
    const uint8_t sasl[] = {0, 0, 0, 8, 2, 1, 0, 0};
    expect_framing(sasl, 8, JN_AMQP_FRAME_AMQP, 512, 0, "where a AMQP frame belongs");
    const uint8_t amqp[] = {0, 0, 0, 8, 2, 0, 0, 0};
    expect_framing(amqp, 8, JN_AMQP_FRAME_SASL, 512, 0, "where a SASL frame belongs");
    const uint8_t ch[] = {0, 0, 0, 8, 2, 0, 0, 5};
    expect_framing(ch, 8, 0, 512, 4, "above the channel-max");
    /* a SASL frame's channel is ignored */
    const uint8_t sasl_ch[] = {0, 0, 0, 8, 2, 1, 0, 5};
    jn_amqp_frame_t f;
    uint8_t body[512];
    jn_amqp_fault_t fault = {0};
    assert_int_equal(frame_read(sasl_ch, 8, JN_AMQP_FRAME_SASL, 512, 0, &f, body, &fault), 1);
    /* max-frame-size exactly is allowed */
    uint8_t exact[512] = {0, 0, 2, 0, 2, 0, 0, 0};
    assert_int_equal(frame_read(exact, 512, 0, 512, 0, &f, body, &fault), 1);
}

static void test_frame_compose_fills_size_and_enforces_max(void **state)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_raw(&e, "x", 1); /* frames may follow other octets */
    size_t start = jn_amqp_frame_begin(&e, JN_AMQP_FRAME_SASL, 0x0304);
    assert_int_equal(start, 1);
    jn_enc_descriptor_ulong(&e, 0x17);
    jn_enc_list_begin(&e);
    jn_enc_list_end(&e);
    assert_int_equal(jn_amqp_frame_end(&e, start, 512), 0);
    size_t len;
    const uint8_t *p = jn_encoder_data(&e, &len);
    const uint8_t want[] = {'x', 0, 0, 0, 12, 2, 1, 3, 4, 0x00, 0x53, 0x17, 0x45};
    assert_int_equal(len, sizeof want);
    assert_memory_equal(p, want, sizeof want);
    /* and read back */
    jn_iter_t it;
    jn_amqp_frame_t f;
    jn_amqp_fault_t fault = {0};
    jn_iter_init_bytes(&it, p + 1, len - 1, JN_VIEW_RAW);
    assert_int_equal(jn_amqp_frame_read(&it, JN_AMQP_FRAME_SASL, 512, 0, &f, &fault), 1);
    assert_int_equal(f.body_size, 4);
    /* over the peer's max-frame-size */
    start = jn_amqp_frame_begin(&e, 0, 0);
    uint8_t fill[600] = {0};
    jn_enc_raw(&e, fill, sizeof fill);
    assert_int_equal(jn_amqp_frame_end(&e, start, 512), JN_EOVERFLOW);
    /* not a frame's start */
    assert_int_equal(jn_amqp_frame_end(&e, 0, 4096), JN_EINVAL);
    jn_encoder_free(&e);
}

static void test_no_leak(void **state)
{
    jn_pool_thread_exit();
    assert_int_equal(jn_pool_leak_report(stderr), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_protocol_headers_amqp_sasl_tls),
        cmocka_unit_test(test_protocol_header_refused_with_framing_error),
        cmocka_unit_test(test_frame_read_in_place_with_extended_header_skipped),
        cmocka_unit_test(test_frames_in_a_row_read_and_passed_at_every_split),
        cmocka_unit_test(test_empty_frame_is_a_heartbeat),
        cmocka_unit_test(test_framing_rules_each_with_framing_error),
        cmocka_unit_test(test_frame_compose_fills_size_and_enforces_max),
        cmocka_unit_test(test_no_leak),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    jn_pool_shutdown();
    return failed;
}
