/*
 * test_amqp_send_message.c — an outgoing copy of a routed message sent on
 * the own engine without copying its octets (docs/engine.md, "Zero copy,
 * output"; router/io/io_own_link.c does the same; only segments of at most
 * 128 octets are copied into the output): the segments
 * jn_message_out_next_buffer hands out (the message's buffers and the
 * composed message annotations) go to jn_amqp_delivery_send as raw views of
 * those buffers, the engine references them, the message and the copy may
 * be released before the output is taken, the peer gets the copy's octets
 * exactly, and once it is written every buffer is back in the pool.
 */
#include "test_amqp_engine_util.h"
#include "test_message_util.h"

#include <junction/annotations.h>

/* A message: a header and a data section of body octets (k * 13 + 1). */
static size_t encode_message(uint8_t *out, size_t body)
{
    size_t n = 0;
    const uint8_t header[] = {0x00, 0x53, 0x70, 0x45}; /* header, list0 */
    memcpy(out, header, sizeof header);
    n += sizeof header;
    const uint8_t data[] = {0x00, 0x53, 0x75, 0xb0};
    memcpy(out + n, data, sizeof data);
    n += sizeof data;
    for (int s = 24; s >= 0; s -= 8)
        out[n++] = (uint8_t)(body >> s);
    for (size_t k = 0; k < body; k++)
        out[n++] = (uint8_t)(k * 13 + 1);
    return n;
}

/* A copy toward a router (annotations composed for the hop): its octets as
 * jn_message_out_next gives them, for comparison. */
static void expected_copy_of(jn_message_t *msg, bytes_t *want)
{
    jn_buffer_list_t ma;
    jn_buffer_list_init(&ma);
    jn_ra_hop_t hop = {.to_router = true, .node_id = "0/B"};
    assert_int_equal(jn_ra_compose(jn_message_annotations(msg), &hop, &ma), 0);
    jn_message_out_t o;
    assert_int_equal(jn_message_out_init(&o, msg, &ma), 0);
    want->len = 0;
    assert_int_equal(drain_out(&o, want), 0);
    jn_message_out_fini(&o);
}

static void test_copy_referenced_not_copied_and_buffers_back_in_pool(void **state)
{
    (void)state;
    static const size_t bodies[] = {100, 6000};
    static const size_t chunks_in[] = {0, 100, 512};
    static uint8_t raw[8192];
    static bytes_t want;
    for (size_t bi = 0; bi < 2; bi++) {
        for (size_t ci = 0; ci < 3; ci++) {
            uint64_t before = buffers_in_use();
            size_t len = encode_message(raw, bodies[bi]);
            jn_message_t *msg = message_from(raw, len, chunks_in[ci], true);
            assert_int_equal(jn_message_parse(msg, JN_DEPTH_MESSAGE_ANNOTATIONS), 0);
            expected_copy_of(msg, &want);
            peer_t a, b;
            peer_init(&a, "client", 65536, 255, 0);
            peer_init(&b, "server", 1024, 255, 0);
            assert_int_equal(jn_amqp_conn_open(a.c), 0);
            jn_amqp_session_t *s = jn_amqp_session_new(a.c);
            assert_int_equal(jn_amqp_session_begin(s, 0xFFFFFFFEu, 100, 100), 0);
            jn_amqp_link_t *l = jn_amqp_link_new(s, "out", JN_AMQP_SENDER);
            assert_int_equal(jn_amqp_link_attach(l, &(jn_amqp_attach_t){0}, 0xFFFFFFFFu), 0);
            pump(&a, &b);
            assert_int_equal(jn_amqp_link_flow(b.last_link, 10, false, false), 0);
            pump(&a, &b);
            /* the copy's segments as views of the buffers they lie in */
            jn_buffer_list_t ma;
            jn_buffer_list_init(&ma);
            jn_ra_hop_t hop = {.to_router = true, .node_id = "0/B"};
            assert_int_equal(jn_ra_compose(jn_message_annotations(msg), &hop, &ma), 0);
            jn_message_out_t o;
            assert_int_equal(jn_message_out_init(&o, msg, &ma), 0);
            jn_iter_t pieces[128];
            size_t n = 0, total = 0, off, seg;
            const jn_buffer_t *buf;
            int rc;
            bool referenced = false; /* a segment over 128 octets: not copied */
            while ((rc = jn_message_out_next_buffer(&o, &buf, &off, &seg)) == 1) {
                assert_true(n < 128);
                assert_true(off + seg <= jn_buffer_size(buf));
                assert_int_equal(jn_iter_init(&pieces[n++], buf, off, seg, JN_VIEW_RAW), 0);
                total += seg;
                referenced |= seg > 128;
            }
            assert_int_equal(rc, 0);
            assert_int_equal(total, want.len);
            jn_amqp_delivery_t *d;
            assert_int_equal(jn_amqp_delivery_new(l, "t", 1, 0, false, &d), 0);
            size_t taken;
            assert_int_equal(jn_amqp_delivery_send(d, pieces, n, false, &taken), 1);
            assert_int_equal(taken, want.len);
            /* the copy and the message go before the output is written:
             * the engine's references keep the octets (segments of at
             * most 128 octets, all of them when the message came in
             * 100-octet buffers, were copied into the output instead, and
             * the peer gets them all the same) */
            jn_message_out_fini(&o);
            jn_message_unref(msg);
            if (referenced)
                assert_true(buffers_in_use() > before);
            pump(&a, &b);
            assert_int_equal(b.npayload, want.len);
            assert_memory_equal(b.payload, want.data, want.len);
            peer_free(&a);
            peer_free(&b);
            assert_int_equal(buffers_in_use(), before);
        }
    }
}

/* jn_message_out_next_buffer hands out the same segments as
 * jn_message_out_next, each as its buffer and offset. */
static void test_next_buffer_gives_the_segments_of_next(void **state)
{
    (void)state;
    static uint8_t raw[8192];
    static bytes_t want;
    size_t len = encode_message(raw, 3000);
    for (size_t chunk = 0; chunk <= 512; chunk += 97) {
        jn_message_t *msg = message_from(raw, len, chunk, true);
        assert_int_equal(jn_message_parse(msg, JN_DEPTH_MESSAGE_ANNOTATIONS), 0);
        expected_copy_of(msg, &want);
        jn_buffer_list_t ma;
        jn_buffer_list_init(&ma);
        jn_ra_hop_t hop = {.to_router = true, .node_id = "0/B"};
        assert_int_equal(jn_ra_compose(jn_message_annotations(msg), &hop, &ma), 0);
        jn_message_out_t o;
        assert_int_equal(jn_message_out_init(&o, msg, &ma), 0);
        size_t at = 0, off, seg;
        const jn_buffer_t *buf;
        int rc;
        while ((rc = jn_message_out_next_buffer(&o, &buf, &off, &seg)) == 1) {
            assert_true(seg > 0 && off + seg <= jn_buffer_size(buf));
            assert_true(at + seg <= want.len);
            assert_memory_equal(buf->data + off, want.data + at, seg);
            at += seg;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(at, want.len);
        jn_message_out_fini(&o);
        jn_message_unref(msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_referenced_not_copied_and_buffers_back_in_pool),
        cmocka_unit_test(test_next_buffer_gives_the_segments_of_next),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
