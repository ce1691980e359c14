/*
 * test_message_out.c — outgoing copies of a message (jn_message_out_t in
 * junction/message.h): references, abort, the copy being the header and
 * delivery annotations, then the new message annotations, then the rest of
 * the original, for every combination of sections in buffers of 1,
 * 2, 3 and 7 octets; a copy produced while the message arrives; and a copy
 * produced by one thread while another writes the message. Ends with a pool
 * leak check.
 */
#include "test_message_build.h"

#include <pthread.h>

static void test_references_keep_content_alive(void **state)
{
    (void)state;
    jn_message_unref(NULL);
    const uint8_t v[] = {0x00, 0x53, 0x77, 0xa1, 0x02, 'h', 'i'};
    jn_message_t *msg = message_from(v, sizeof v, 0, false);
    assert_ptr_equal(jn_message_ref(msg), msg);
    jn_message_unref(msg);
    assert_int_equal(jn_message_parse(msg, JN_DEPTH_ALL), 0);
    jn_message_out_t o;
    jn_buffer_list_t none;
    jn_buffer_list_init(&none);
    assert_int_equal(jn_message_out_init(&o, msg, &none), 0);
    jn_message_unref(msg); /* the copy still holds it */
    bytes_t got = {.len = 0};
    assert_int_equal(drain_out(&o, &got), 0);
    assert_int_equal(got.len, sizeof v);
    assert_memory_equal(got.data, v, sizeof v);
    jn_message_out_fini(&o);
}

static void test_aborted_delivery_stops_parse_and_copy(void **state)
{
    (void)state;
    built_t m;
    build(&m, S_HEADER | S_PROPS | S_BODY, 0);
    jn_message_t *msg = jn_message_new();
    feed_octets(msg, m.b.data, m.end[JN_SEC_PROPERTIES], 3);
    assert_int_equal(jn_message_parse(msg, JN_DEPTH_MESSAGE_ANNOTATIONS), 0);
    jn_message_out_t o;
    jn_buffer_list_t none;
    jn_buffer_list_init(&none);
    assert_int_equal(jn_message_out_init(&o, msg, &none), 0);
    bytes_t got = {.len = 0};
    assert_int_equal(drain_out(&o, &got), JN_AGAIN);
    assert_false(jn_message_is_aborted(msg));
    jn_message_set_aborted(msg);
    assert_true(jn_message_is_aborted(msg));
    assert_int_equal(jn_message_out_next(&o, &(const uint8_t *){NULL}, &(size_t){0}), JN_EPROTO);
    assert_int_equal(jn_message_parse(msg, JN_DEPTH_ALL), JN_EPROTO);
    jn_message_out_fini(&o);
    jn_message_unref(msg);
}

/* --- outgoing copies --------------------------------------------------- */

static void router_hop_annotations(jn_message_t *msg, jn_buffer_list_t *ma, bytes_t *expected)
{
    jn_ra_hop_t hop = {.to_router = true, .node_id = "0/B"};
    jn_buffer_list_init(ma);
    assert_int_equal(jn_ra_compose(jn_message_annotations(msg), &hop, ma), 0);
    expected->len = jn_buffer_list_length(ma);
    assert_int_equal(jn_buffer_list_copy_out(ma, 0, expected->data, sizeof expected->data),
                     expected->len);
}

static void test_out_copy_is_header_then_new_annotations_then_the_rest(void **state)
{
    (void)state;
    for (unsigned mask = 0; mask <= S_ALL; mask++) {
        built_t m;
        build(&m, mask, 1);
        for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
            jn_message_t *msg = message_from(m.b.data, m.b.len, tiny_chunks[c], true);
            assert_int_equal(jn_message_parse(msg, JN_DEPTH_MESSAGE_ANNOTATIONS), 0);
            jn_buffer_list_t ma;
            bytes_t ann, want, got = {.len = 0};
            router_hop_annotations(msg, &ma, &ann);
            assert_true(ann.len > 0);
            expected_copy(&m, &ann, &want);
            jn_message_out_t o;
            assert_int_equal(jn_message_out_init(&o, msg, &ma), 0);
            assert_int_equal(drain_out(&o, &got), 0);
            assert_int_equal(drain_out(&o, &got), 0); /* stays at the end */
            jn_message_out_fini(&o);
            assert_int_equal(got.len, want.len);
            assert_memory_equal(got.data, want.data, want.len);
            jn_message_unref(msg);
        }
    }
}

static void test_out_copy_works_while_the_message_arrives(void **state)
{
    (void)state;
    built_t m;
    build(&m, S_HEADER | S_DA | S_MA | S_PROPS | S_AP, 0);
    /* a long data body, so that the copy streams across many buffers */
    uint8_t body[1300];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (uint8_t)(i * 31 + 7);
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_DATA);
    jn_enc_binary(&e, body, sizeof body);
    bytes_take(&m.b, &e);
    jn_encoder_free(&e);
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        size_t chunk = tiny_chunks[c] ? tiny_chunks[c] : 100;
        jn_message_t *msg = jn_message_new();
        jn_message_set_annotation_policy(msg, true);
        jn_message_out_t o;
        jn_buffer_list_t ma;
        bytes_t ann, want, got = {.len = 0};
        bool started = false;
        for (size_t done = 0; done < m.b.len;) {
            size_t n = m.b.len - done < chunk ? m.b.len - done : chunk;
            feed_octets(msg, m.b.data + done, n, tiny_chunks[c]);
            done += n;
            if (!started) {
                int rc = jn_message_parse(msg, JN_DEPTH_MESSAGE_ANNOTATIONS);
                if (rc == JN_AGAIN)
                    continue;
                assert_int_equal(rc, 0);
                assert_true(done >= m.end[JN_SEC_MESSAGE_ANNOTATIONS]);
                router_hop_annotations(msg, &ma, &ann);
                assert_int_equal(jn_message_out_init(&o, msg, &ma), 0);
                started = true;
            }
            assert_int_equal(drain_out(&o, &got), JN_AGAIN);
        }
        assert_true(started);
        jn_message_set_complete(msg);
        assert_int_equal(drain_out(&o, &got), 0);
        expected_copy(&m, &ann, &want);
        /* the body is not a section of `m`; expected_copy took it from b */
        assert_int_equal(got.len, want.len);
        assert_memory_equal(got.data, want.data, want.len);
        jn_message_out_fini(&o);
        assert_int_equal(jn_message_parse(msg, JN_DEPTH_ALL), 0);
        jn_message_unref(msg);
    }
}

/* One thread writes a long message in small commits while another produces
 * an outgoing copy of it (run under TSan to check the publication). */
typedef struct stream_ctx {
    jn_message_t *msg;
    const bytes_t *source;
    size_t from;
} stream_ctx_t;

static void *writer_thread(void *arg)
{
    stream_ctx_t *ctx = arg;
    for (size_t done = ctx->from; done < ctx->source->len;) {
        uint8_t *p;
        size_t space;
        if (jn_message_write_space(ctx->msg, &p, &space) != 0)
            abort();
        size_t n = ctx->source->len - done;
        n = n < space ? n : space;
        n = n < 37 ? n : 37;
        memcpy(p, ctx->source->data + done, n);
        jn_message_write_commit(ctx->msg, n);
        done += n;
    }
    jn_message_set_complete(ctx->msg);
    jn_pool_thread_exit();
    return NULL;
}

static void test_out_copy_concurrent_with_the_writer_thread(void **state)
{
    (void)state;
    static bytes_t src;
    built_t m;
    build(&m, S_HEADER | S_MA | S_PROPS, 0);
    src.len = 0;
    bytes_add(&src, m.b.data, m.b.len);
    uint8_t head[] = {0x00, 0x53, 0x75, 0xb0, 0x00, 0x00, 0x17, 0x70}; /* 6000 octets */
    bytes_add(&src, head, sizeof head);
    for (size_t i = 0; i < 6000; i++)
        src.data[src.len++] = (uint8_t)(i * 5);
    jn_message_t *msg = jn_message_new();
    jn_message_set_annotation_policy(msg, true);
    assert_int_equal(jn_message_append(msg, src.data, m.b.len + 3), 0);
    assert_int_equal(jn_message_parse(msg, JN_DEPTH_PROPERTIES), 0);
    jn_buffer_list_t ma;
    bytes_t ann, got = {.len = 0};
    router_hop_annotations(msg, &ma, &ann);
    jn_message_out_t o;
    assert_int_equal(jn_message_out_init(&o, msg, &ma), 0);
    stream_ctx_t ctx = {.msg = msg, .source = &src, .from = m.b.len + 3};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, writer_thread, &ctx), 0);
    int rc;
    while ((rc = drain_out(&o, &got)) == JN_AGAIN)
        ;
    assert_int_equal(rc, 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    jn_message_out_fini(&o);
    bytes_t want;
    built_t whole = m;
    whole.b = src;
    expected_copy(&whole, &ann, &want);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.data, want.data, want.len);
    jn_message_unref(msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_references_keep_content_alive),
        cmocka_unit_test(test_aborted_delivery_stops_parse_and_copy),
        cmocka_unit_test(test_out_copy_is_header_then_new_annotations_then_the_rest),
        cmocka_unit_test(test_out_copy_works_while_the_message_arrives),
        cmocka_unit_test(test_out_copy_concurrent_with_the_writer_thread),
    };
    return finish_tests(cmocka_run_group_tests(tests, NULL, NULL));
}
