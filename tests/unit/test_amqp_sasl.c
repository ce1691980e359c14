/*
 * test_amqp_sasl.c — the engine's SASL layer, server end (junction/
 * amqp_sasl.h): the ANONYMOUS exchange answered with our header,
 * sasl-mechanisms [ANONYMOUS] and sasl-outcome ok; the exact count of the
 * SASL octets, so that an AMQP header and open sent ahead reach the AMQP
 * layer (an engine reads them here); the server speaking first; and each
 * refusal with its condition: a mechanism not offered (outcome auth), a
 * header that is not SASL, a frame out of order, a frame too large. Every
 * input runs as plain bytes and split into buffers of 1, 2, 3 and 7 octets,
 * handed whole and octet by octet.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/amqp_engine.h>
#include <junction/amqp_sasl.h>
#include <junction/pool.h>

#include <stdio.h>
#include <string.h>

static const size_t splits[] = {0, 1, 2, 3, 7, JN_BUFFER_CAPACITY};
#define NSPLITS (sizeof splits / sizeof splits[0])

/* The client's stream: octets composed in order. */
typedef struct stream {
    jn_encoder_t e;
} stream_t;

static void put_header(stream_t *s, jn_amqp_proto_t proto)
{
    uint8_t h[JN_AMQP_HEADER_SIZE];
    jn_amqp_header_write(h, proto);
    jn_enc_raw(&s->e, h, sizeof h);
}

static void put_frame(stream_t *s, uint8_t type, const jn_amqp_perf_t *p)
{
    size_t start = jn_amqp_frame_begin(&s->e, type, 0);
    assert_int_equal(jn_amqp_perf_encode(&s->e, p), 0);
    assert_int_equal(jn_amqp_frame_end(&s->e, start, 65536), 0);
}

static void put_init(stream_t *s, const char *mech)
{
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_SASL_INIT);
    p.u.sasl.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2);
    jn_iter_init_string(&p.u.sasl.mechanism, mech, JN_VIEW_RAW);
    jn_iter_init_bytes(&p.u.sasl.initial_response, "trace@example", 13, JN_VIEW_RAW);
    jn_iter_init_string(&p.u.sasl.hostname, "router.example", JN_VIEW_RAW);
    put_frame(s, JN_AMQP_FRAME_SASL, &p);
}

static void put_open(stream_t *s)
{
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_OPEN);
    p.u.open.present = JN_AMQP_FIELD(0);
    jn_iter_init_string(&p.u.open.container_id, "client", JN_VIEW_RAW);
    put_frame(s, JN_AMQP_FRAME_AMQP, &p);
}

/* Hand data to s as a pump would: in steps of step octets (0: all at
 * once), each time the octets not yet consumed as a view over buffers of
 * chunk octets (0: plain bytes). Stops at the first result other than 0.
 * Returns that result; *used is the octets consumed in all. */
static int feed(jn_amqp_sasl_server_t *s, const uint8_t *data, size_t len, size_t chunk,
                size_t step, size_t *used)
{
    size_t have = 0;
    int rc = 0;
    *used = 0;
    while (rc == 0 && have < len) {
        have = step == 0 || len - have < step ? len : have + step;
        size_t n = have - *used;
        jn_buffer_list_t list;
        jn_iter_t it;
        jn_buffer_list_init(&list);
        if (chunk == 0 || n == 0) {
            jn_iter_init_bytes(&it, data + *used, n, JN_VIEW_RAW);
        } else {
            assert_int_equal(jn_buffer_list_append_split(&list, data + *used, n, chunk), 0);
            assert_int_equal(jn_iter_init(&it, list.head, 0, n, JN_VIEW_RAW), 0);
        }
        size_t consumed = 99999;
        rc = jn_amqp_sasl_server_input(s, &it, &consumed);
        jn_buffer_list_free(&list);
        assert_true(consumed <= n);
        *used += consumed;
    }
    return rc;
}

/* What the server wrote: its header's protocol id (-1: none), the codes of
 * its SASL frames in order (up to 4), and the outcome's code (-1: none). */
typedef struct answer {
    int proto;
    uint64_t codes[4];
    int nframes;
    int outcome;
    char mechanisms[32];
} answer_t;

static answer_t read_answer(jn_amqp_sasl_server_t *s)
{
    answer_t a = {.proto = -1, .outcome = -1};
    size_t len;
    const uint8_t *out = jn_amqp_sasl_server_output(s, &len);
    jn_iter_t it;
    jn_iter_init_bytes(&it, out ? out : (const uint8_t *)"", len, JN_VIEW_RAW);
    jn_amqp_fault_t fault;
    jn_amqp_proto_t proto;
    if (jn_amqp_header_read(&it, &proto, &fault) == JN_AMQP_HEADER_SIZE) {
        a.proto = (int)proto;
        jn_iter_advance(&it, JN_AMQP_HEADER_SIZE);
    }
    jn_amqp_frame_t f;
    while (jn_amqp_frame_read(&it, JN_AMQP_FRAME_SASL, 512, 0, &f, &fault) == 1) {
        jn_amqp_perf_t p;
        assert_int_equal(jn_amqp_perf_decode(&f.body, JN_AMQP_FRAME_SASL, &p, NULL, &fault), 0);
        assert_true(a.nframes < 4);
        a.codes[a.nframes++] = p.code;
        if (p.code == JN_AMQP_SASL_OUTCOME)
            a.outcome = p.u.sasl.code;
        if (p.code == JN_AMQP_SASL_MECHANISMS) {
            /* one symbol (sym8): ours is a single mechanism */
            jn_iter_t m = p.u.sasl.mechanisms;
            assert_int_equal(jn_iter_octet(&m), JN_AMQP_SYM8);
            int n = jn_iter_octet(&m);
            assert_true(n > 0 && n < (int)sizeof a.mechanisms);
            jn_iter_copy_string(&m, a.mechanisms, sizeof a.mechanisms);
        }
        jn_iter_advance(&it, f.size);
    }
    assert_int_equal(jn_iter_length(&it), 0); /* nothing but whole frames */
    jn_amqp_sasl_server_output_done(s, len);
    return a;
}

static void test_sasl_anonymous_exchange_and_pipelined_amqp(void **state)
{
    (void)state;
    stream_t s;
    jn_encoder_init(&s.e);
    put_header(&s, JN_AMQP_PROTO_SASL);
    put_init(&s, "ANONYMOUS");
    size_t sasl_len = s.e.size;
    put_header(&s, JN_AMQP_PROTO_AMQP); /* sent ahead of the outcome */
    put_open(&s);
    for (size_t sp = 0; sp < NSPLITS; sp++) {
        for (size_t step = 0; step <= 1; step++) {
            jn_amqp_sasl_server_t *srv = jn_amqp_sasl_server_new();
            assert_non_null(srv);
            size_t used;
            assert_int_equal(feed(srv, s.e.data, s.e.size, splits[sp], step, &used), 1);
            assert_int_equal(used, sasl_len);
            assert_true(jn_amqp_sasl_server_done(srv));
            assert_string_equal(jn_amqp_sasl_server_user(srv), "anonymous");
            assert_null(jn_amqp_sasl_server_fault(srv)->condition);
            answer_t a = read_answer(srv);
            assert_int_equal(a.proto, JN_AMQP_PROTO_SASL);
            assert_int_equal(a.nframes, 2);
            assert_int_equal(a.codes[0], JN_AMQP_SASL_MECHANISMS);
            assert_string_equal(a.mechanisms, "ANONYMOUS");
            assert_int_equal(a.codes[1], JN_AMQP_SASL_OUTCOME);
            assert_int_equal(a.outcome, 0);
            /* done: nothing more is the SASL layer's */
            jn_iter_t rest;
            jn_iter_init_bytes(&rest, s.e.data + used, s.e.size - used, JN_VIEW_RAW);
            size_t consumed = 1;
            assert_int_equal(jn_amqp_sasl_server_input(srv, &rest, &consumed), 1);
            assert_int_equal(consumed, 0);
            /* the octets left are the AMQP layer's: header and open */
            jn_amqp_conn_config_t cfg = {
                .container_id = "router", .max_frame_size = 16384, .channel_max = 7};
            jn_amqp_conn_t *c = jn_amqp_conn_new(&cfg, NULL);
            assert_non_null(c);
            assert_int_equal(jn_amqp_conn_input(c, &rest, 0, &consumed), 0);
            assert_int_equal(consumed, s.e.size - used);
            assert_int_equal(jn_amqp_conn_remote_max_frame(c), 0xffffffffu);
            jn_amqp_conn_free(c);
            jn_amqp_sasl_server_free(srv);
        }
    }
    jn_encoder_free(&s.e);
}

static void test_sasl_server_speaks_first(void **state)
{
    (void)state;
    jn_amqp_sasl_server_t *srv = jn_amqp_sasl_server_new();
    assert_int_equal(jn_amqp_sasl_server_start(srv), 0);
    assert_int_equal(jn_amqp_sasl_server_start(srv), 0); /* idempotent */
    answer_t a = read_answer(srv);
    assert_int_equal(a.proto, JN_AMQP_PROTO_SASL);
    assert_int_equal(a.nframes, 1);
    assert_int_equal(a.codes[0], JN_AMQP_SASL_MECHANISMS);
    stream_t s;
    jn_encoder_init(&s.e);
    put_header(&s, JN_AMQP_PROTO_SASL);
    put_init(&s, "ANONYMOUS");
    size_t used;
    assert_int_equal(feed(srv, s.e.data, s.e.size, 3, 0, &used), 1);
    assert_int_equal(used, s.e.size);
    a = read_answer(srv);
    assert_int_equal(a.proto, -1); /* not again */
    assert_int_equal(a.nframes, 1);
    assert_int_equal(a.outcome, 0);
    jn_encoder_free(&s.e);
    jn_amqp_sasl_server_free(srv);
}

/* Run a refused exchange over every split: the result, the fault's
 * condition and a word of its description, and the server's answer. */
static void expect_refused(const stream_t *s, const char *condition, const char *word, int proto,
                           int nframes, int outcome)
{
    for (size_t sp = 0; sp < NSPLITS; sp++) {
        for (size_t step = 0; step <= 1; step++) {
            jn_amqp_sasl_server_t *srv = jn_amqp_sasl_server_new();
            size_t used;
            assert_int_equal(feed(srv, s->e.data, s->e.size, splits[sp], step, &used), JN_EPROTO);
            const jn_amqp_fault_t *f = jn_amqp_sasl_server_fault(srv);
            assert_non_null(f->condition);
            assert_string_equal(f->condition, condition);
            if (!strstr(f->description, word))
                fail_msg("'%s' does not name '%s'", f->description, word);
            assert_false(jn_amqp_sasl_server_done(srv));
            assert_null(jn_amqp_sasl_server_user(srv));
            answer_t a = read_answer(srv);
            assert_int_equal(a.proto, proto);
            assert_int_equal(a.nframes, nframes);
            assert_int_equal(a.outcome, outcome);
            /* what follows is consumed and ignored */
            jn_iter_t more;
            jn_iter_init_bytes(&more, "AMQP", 4, JN_VIEW_RAW);
            size_t consumed = 0;
            assert_int_equal(jn_amqp_sasl_server_input(srv, &more, &consumed), JN_EPROTO);
            assert_int_equal(consumed, 4);
            jn_amqp_sasl_server_free(srv);
        }
    }
}

static void test_sasl_mechanism_not_offered_gets_outcome_auth(void **state)
{
    (void)state;
    stream_t s;
    jn_encoder_init(&s.e);
    put_header(&s, JN_AMQP_PROTO_SASL);
    put_init(&s, "PLAIN");
    expect_refused(&s, "amqp:unauthorized-access", "'PLAIN'", JN_AMQP_PROTO_SASL, 2, 1);
    jn_encoder_free(&s.e);
}

static void test_sasl_refuses_an_amqp_header_with_ours(void **state)
{
    (void)state;
    stream_t s;
    jn_encoder_init(&s.e);
    put_header(&s, JN_AMQP_PROTO_AMQP);
    expect_refused(&s, "amqp:connection:framing-error", "SASL (3)", JN_AMQP_PROTO_SASL, 0, -1);
    jn_encoder_free(&s.e);
}

static void test_sasl_refuses_a_frame_out_of_order(void **state)
{
    (void)state;
    stream_t s;
    jn_encoder_init(&s.e);
    put_header(&s, JN_AMQP_PROTO_SASL);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_SASL_RESPONSE);
    p.u.sasl.present = JN_AMQP_FIELD(0);
    jn_iter_init_bytes(&p.u.sasl.response, "x", 1, JN_VIEW_RAW);
    put_frame(&s, JN_AMQP_FRAME_SASL, &p);
    /* no outcome: the SASL layer has no error frame */
    expect_refused(&s, "amqp:illegal-state", "sasl-response", JN_AMQP_PROTO_SASL, 1, -1);
    jn_encoder_free(&s.e);

    jn_encoder_init(&s.e); /* an AMQP frame where a SASL frame belongs */
    put_header(&s, JN_AMQP_PROTO_SASL);
    put_open(&s);
    expect_refused(&s, "amqp:connection:framing-error", "SASL", JN_AMQP_PROTO_SASL, 1, -1);
    jn_encoder_free(&s.e);
}

static void test_sasl_refuses_a_frame_over_512_octets(void **state)
{
    (void)state;
    stream_t s;
    jn_encoder_init(&s.e);
    put_header(&s, JN_AMQP_PROTO_SASL);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_SASL_INIT);
    p.u.sasl.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1);
    jn_iter_init_string(&p.u.sasl.mechanism, "ANONYMOUS", JN_VIEW_RAW);
    static uint8_t big[600];
    jn_iter_init_bytes(&p.u.sasl.initial_response, big, sizeof big, JN_VIEW_RAW);
    put_frame(&s, JN_AMQP_FRAME_SASL, &p);
    expect_refused(&s, "amqp:connection:framing-error", "", JN_AMQP_PROTO_SASL, 1, -1);
    jn_encoder_free(&s.e);
}

static void test_no_leak(void **state)
{
    (void)state;
    jn_pool_thread_exit();
    assert_int_equal(jn_pool_leak_report(stderr), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sasl_anonymous_exchange_and_pipelined_amqp),
        cmocka_unit_test(test_sasl_server_speaks_first),
        cmocka_unit_test(test_sasl_mechanism_not_offered_gets_outcome_auth),
        cmocka_unit_test(test_sasl_refuses_an_amqp_header_with_ours),
        cmocka_unit_test(test_sasl_refuses_a_frame_out_of_order),
        cmocka_unit_test(test_sasl_refuses_a_frame_over_512_octets),
        cmocka_unit_test(test_no_leak),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    jn_pool_shutdown();
    return failed;
}
