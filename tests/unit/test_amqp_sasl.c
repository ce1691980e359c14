/*
 * test_amqp_sasl.c — the engine's SASL layer, server end (junction/
 * amqp_sasl.h): the ANONYMOUS exchange answered with our header,
 * sasl-mechanisms [ANONYMOUS] and sasl-outcome ok; the exact count of the
 * SASL octets, so that an AMQP header and open sent ahead reach the AMQP
 * layer (an engine reads them here); the server speaking first; and each
 * refusal with its condition: a mechanism not offered (outcome auth), a
 * header that is not SASL, a frame out of order, a frame too large. With a
 * mechanism backend (a fake one here): the offer as an array, an initial
 * response checked at once, challenge rounds, the outcome's
 * additional-data, the backend's user, its refusals' codes, no memory, and
 * frames out of order between challenges. Every input runs as plain bytes
 * and split into buffers of 1, 2, 3 and 7 octets, handed whole and octet
 * by octet.
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
    uint64_t codes[8];
    int nframes;
    int outcome;
    char mechanisms[64];
    char challenges[64]; /* each challenge's octets, separated by '|' */
    char data[32];       /* the outcome's additional-data */
    bool has_data;
} answer_t;

/* sasl-server-mechanisms as "A B C": one symbol, or an array of them. */
static void read_mechanisms(jn_iter_t m, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    int code = jn_iter_octet(&m);
    int count = 1;
    if (code == 0xe0) { /* array8: size, count, element code */
        (void)jn_iter_octet(&m);
        count = jn_iter_octet(&m);
        assert_int_equal(jn_iter_octet(&m), JN_AMQP_SYM8);
    } else {
        assert_int_equal(code, JN_AMQP_SYM8);
    }
    for (int i = 0; i < count; i++) {
        int n = jn_iter_octet(&m);
        assert_true(n > 0 && len + (size_t)n + 2 < cap);
        if (len)
            out[len++] = ' ';
        len += jn_iter_copy(&m, out + len, (size_t)n);
        out[len] = '\0';
    }
}

static answer_t read_answer(jn_amqp_sasl_server_t *s)
{
    answer_t a = {.proto = -1, .outcome = -1, .challenges = ""};
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
        assert_true(a.nframes < 8);
        a.codes[a.nframes++] = p.code;
        if (p.code == JN_AMQP_SASL_OUTCOME) {
            a.outcome = p.u.sasl.code;
            a.has_data = (p.u.sasl.present & JN_AMQP_FIELD(1)) != 0;
            jn_iter_copy_string(&p.u.sasl.additional_data, a.data, sizeof a.data);
        }
        if (p.code == JN_AMQP_SASL_MECHANISMS)
            read_mechanisms(p.u.sasl.mechanisms, a.mechanisms, sizeof a.mechanisms);
        if (p.code == JN_AMQP_SASL_CHALLENGE) {
            size_t k = strlen(a.challenges);
            if (k)
                a.challenges[k++] = '|';
            jn_iter_copy_string(&p.u.sasl.challenge, a.challenges + k, sizeof a.challenges - k);
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

/* ---- a mechanism backend --------------------------------------------------
 *
 * The fake: X-CHAL wants initial-response "hello", then answers challenges
 * "c1" and "c2" to responses "r1" and "r2" and succeeds with
 * additional-data "fin" for user "carol"; PLAIN wants "\0carol\0pw" and
 * succeeds with no data; X-SYS refuses with sys-temp; X-NOMEM runs out of
 * memory. Any other response gets auth. */

typedef struct fake {
    const char *offer;
    int round;
    int starts, steps;
    bool had_response; /* the initial-response was present */
    int *freed;
} fake_t;

static const char *fake_mechanisms(void *ctx)
{
    return ((fake_t *)ctx)->offer;
}

static bool is(const uint8_t *p, size_t len, const char *s, size_t n)
{
    return p && len == n && memcmp(p, s, n) == 0;
}

static int fake_start(void *ctx, const char *mech, const uint8_t *resp, size_t len,
                      const uint8_t **out, size_t *out_len)
{
    fake_t *f = ctx;
    f->starts++;
    f->had_response = resp != NULL;
    *out = NULL;
    *out_len = 0;
    if (strcmp(mech, "X-NOMEM") == 0)
        return JN_ENOMEM;
    if (strcmp(mech, "X-SYS") == 0)
        return JN_AMQP_SASL_OUTCOME_SYS_TEMP;
    if (strcmp(mech, "PLAIN") == 0)
        return is(resp, len, "\0carol\0pw", 9) ? JN_AMQP_SASL_OUTCOME_OK
                                               : JN_AMQP_SASL_OUTCOME_AUTH;
    if (strcmp(mech, "X-CHAL") != 0 || !is(resp, len, "hello", 5))
        return JN_AMQP_SASL_OUTCOME_AUTH;
    *out = (const uint8_t *)"c1";
    *out_len = 2;
    f->round = 1;
    return JN_AMQP_SASL_STEP_CHALLENGE;
}

static int fake_step(void *ctx, const uint8_t *resp, size_t len, const uint8_t **out,
                     size_t *out_len)
{
    fake_t *f = ctx;
    f->steps++;
    if (f->round == 1 && is(resp, len, "r1", 2)) {
        f->round = 2;
        *out = (const uint8_t *)"c2";
        *out_len = 2;
        return JN_AMQP_SASL_STEP_CHALLENGE;
    }
    if (f->round == 2 && is(resp, len, "r2", 2)) {
        *out = (const uint8_t *)"fin";
        *out_len = 3;
        return JN_AMQP_SASL_OUTCOME_OK;
    }
    return JN_AMQP_SASL_OUTCOME_AUTH;
}

static const char *fake_user(void *ctx)
{
    (void)ctx;
    return "carol";
}

static void fake_free(void *ctx)
{
    fake_t *f = ctx;
    (*f->freed)++;
}

static const jn_amqp_sasl_mech_ops_t fake_ops = {
    .mechanisms = fake_mechanisms,
    .start = fake_start,
    .step = fake_step,
    .user = fake_user,
    .free = fake_free,
};

static void put_init_with(stream_t *s, const char *mech, const void *resp, size_t len)
{
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_SASL_INIT);
    p.u.sasl.present = JN_AMQP_FIELD(0);
    jn_iter_init_string(&p.u.sasl.mechanism, mech, JN_VIEW_RAW);
    if (resp) {
        p.u.sasl.present |= JN_AMQP_FIELD(1);
        jn_iter_init_bytes(&p.u.sasl.initial_response, resp, len, JN_VIEW_RAW);
    }
    put_frame(s, JN_AMQP_FRAME_SASL, &p);
}

static void put_response(stream_t *s, const char *resp)
{
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_SASL_RESPONSE);
    p.u.sasl.present = JN_AMQP_FIELD(0);
    jn_iter_init_bytes(&p.u.sasl.response, resp, strlen(resp), JN_VIEW_RAW);
    put_frame(s, JN_AMQP_FRAME_SASL, &p);
}

#define OFFER "PLAIN X-CHAL X-SYS X-NOMEM"

/* Run stream s against a server with the fake offering offer, over every
 * split: the result expected, the answer checked by the caller's fn. */
typedef void (*check_fn)(jn_amqp_sasl_server_t *srv, int rc, const fake_t *f, size_t used,
                         size_t len);

static void run_backend(const stream_t *s, const char *offer, check_fn check)
{
    for (size_t sp = 0; sp < NSPLITS; sp++) {
        for (size_t step = 0; step <= 1; step++) {
            int freed = 0;
            fake_t f = {.offer = offer, .freed = &freed};
            jn_amqp_sasl_server_t *srv = jn_amqp_sasl_server_new_with(&fake_ops, &f);
            assert_non_null(srv);
            size_t used;
            int rc = feed(srv, s->e.data, s->e.size, splits[sp], step, &used);
            check(srv, rc, &f, used, s->e.size);
            jn_amqp_sasl_server_free(srv);
            assert_int_equal(freed, 1); /* the backend freed once, with the layer */
        }
    }
}

static size_t amqp_tail; /* octets of the AMQP layer's sent ahead */

static void check_challenge_rounds(jn_amqp_sasl_server_t *srv, int rc, const fake_t *f, size_t used,
                                   size_t len)
{
    assert_int_equal(rc, 1);
    assert_int_equal(used, len - amqp_tail); /* the AMQP header and open are not ours */
    assert_int_equal(f->starts, 1);
    assert_int_equal(f->steps, 2);
    assert_true(jn_amqp_sasl_server_done(srv));
    assert_string_equal(jn_amqp_sasl_server_user(srv), "carol");
    assert_string_equal(jn_amqp_sasl_server_mechanism(srv), "X-CHAL");
    answer_t a = read_answer(srv);
    assert_int_equal(a.proto, JN_AMQP_PROTO_SASL);
    assert_string_equal(a.mechanisms, OFFER);
    assert_int_equal(a.nframes, 4);
    assert_int_equal(a.codes[1], JN_AMQP_SASL_CHALLENGE);
    assert_int_equal(a.codes[2], JN_AMQP_SASL_CHALLENGE);
    assert_string_equal(a.challenges, "c1|c2");
    assert_int_equal(a.outcome, JN_AMQP_SASL_OUTCOME_OK);
    assert_true(a.has_data);
    assert_string_equal(a.data, "fin");
}

static void test_sasl_backend_challenge_rounds_and_additional_data(void **state)
{
    (void)state;
    stream_t s;
    jn_encoder_init(&s.e);
    put_header(&s, JN_AMQP_PROTO_SASL);
    put_init_with(&s, "X-CHAL", "hello", 5);
    put_response(&s, "r1");
    put_response(&s, "r2");
    size_t before = s.e.size;
    put_header(&s, JN_AMQP_PROTO_AMQP);
    put_open(&s);
    amqp_tail = s.e.size - before;
    run_backend(&s, OFFER, check_challenge_rounds);
    jn_encoder_free(&s.e);
}

static void check_plain_ok(jn_amqp_sasl_server_t *srv, int rc, const fake_t *f, size_t used,
                           size_t len)
{
    assert_int_equal(rc, 1);
    assert_int_equal(used, len);
    assert_true(f->had_response);
    assert_int_equal(f->steps, 0);
    assert_string_equal(jn_amqp_sasl_server_user(srv), "carol");
    assert_string_equal(jn_amqp_sasl_server_mechanism(srv), "PLAIN");
    answer_t a = read_answer(srv);
    assert_int_equal(a.nframes, 2);
    assert_int_equal(a.outcome, JN_AMQP_SASL_OUTCOME_OK);
    assert_false(a.has_data); /* none given: the field is left out */
}

static void test_sasl_backend_initial_response_checked_at_once(void **state)
{
    (void)state;
    stream_t s;
    jn_encoder_init(&s.e);
    put_header(&s, JN_AMQP_PROTO_SASL);
    put_init_with(&s, "PLAIN", "\0carol\0pw", 9);
    run_backend(&s, OFFER, check_plain_ok);
    jn_encoder_free(&s.e);
}

static int expected_code;
static const char *expected_condition;

static void check_refused(jn_amqp_sasl_server_t *srv, int rc, const fake_t *f, size_t used,
                          size_t len)
{
    (void)f;
    assert_int_equal(rc, expected_code == -2 ? JN_ENOMEM : JN_EPROTO);
    assert_int_equal(used, len);
    assert_false(jn_amqp_sasl_server_done(srv));
    assert_null(jn_amqp_sasl_server_user(srv));
    assert_null(jn_amqp_sasl_server_mechanism(srv));
    assert_string_equal(jn_amqp_sasl_server_fault(srv)->condition, expected_condition);
    answer_t a = read_answer(srv);
    assert_int_equal(a.outcome,
                     expected_code == -2 ? JN_AMQP_SASL_OUTCOME_SYS_TEMP : expected_code);
}

/* One refused exchange: the client's init (and a response), the outcome
 * code expected (-1: none; -2: out of memory, sys-temp) and condition. */
static void refused_case(const char *mech, const void *resp, size_t len, const char *response,
                         int code, const char *condition)
{
    stream_t s;
    jn_encoder_init(&s.e);
    put_header(&s, JN_AMQP_PROTO_SASL);
    put_init_with(&s, mech, resp, len);
    if (response)
        put_response(&s, response);
    expected_code = code;
    expected_condition = condition;
    run_backend(&s, OFFER, check_refused);
    jn_encoder_free(&s.e);
}

static void test_sasl_backend_refusals_and_their_codes(void **state)
{
    (void)state;
    /* wrong credentials at once, absent initial-response, in a round */
    refused_case("PLAIN", "\0carol\0no", 9, NULL, JN_AMQP_SASL_OUTCOME_AUTH,
                 "amqp:unauthorized-access");
    refused_case("PLAIN", NULL, 0, NULL, JN_AMQP_SASL_OUTCOME_AUTH, "amqp:unauthorized-access");
    refused_case("X-CHAL", "hello", 5, "wrong", JN_AMQP_SASL_OUTCOME_AUTH,
                 "amqp:unauthorized-access");
    /* the backend's own code, and no memory */
    refused_case("X-SYS", "", 0, NULL, JN_AMQP_SASL_OUTCOME_SYS_TEMP, "amqp:unauthorized-access");
    refused_case("X-NOMEM", "", 0, NULL, -2, "amqp:resource-limit-exceeded");
    /* not offered: ANONYMOUS is not in this offer; an unknown name */
    refused_case("ANONYMOUS", NULL, 0, NULL, JN_AMQP_SASL_OUTCOME_AUTH, "amqp:unauthorized-access");
    refused_case("X-OTHER", NULL, 0, NULL, JN_AMQP_SASL_OUTCOME_AUTH, "amqp:unauthorized-access");
}

static void check_out_of_order(jn_amqp_sasl_server_t *srv, int rc, const fake_t *f, size_t used,
                               size_t len)
{
    (void)f;
    (void)used;
    (void)len;
    assert_int_equal(rc, JN_EPROTO);
    assert_string_equal(jn_amqp_sasl_server_fault(srv)->condition, "amqp:illegal-state");
    answer_t a = read_answer(srv);
    assert_int_equal(a.outcome, -1);
}

static void test_sasl_backend_frames_out_of_order(void **state)
{
    (void)state;
    stream_t s;
    jn_encoder_init(&s.e); /* a second sasl-init while a challenge waits */
    put_header(&s, JN_AMQP_PROTO_SASL);
    put_init_with(&s, "X-CHAL", "hello", 5);
    put_init_with(&s, "PLAIN", "\0carol\0pw", 9);
    run_backend(&s, OFFER, check_out_of_order);
    jn_encoder_free(&s.e);
    jn_encoder_init(&s.e); /* a sasl-response before any sasl-init */
    put_header(&s, JN_AMQP_PROTO_SASL);
    put_response(&s, "r1");
    run_backend(&s, OFFER, check_out_of_order);
    jn_encoder_free(&s.e);
}

static void check_anonymous_from_offer(jn_amqp_sasl_server_t *srv, int rc, const fake_t *f,
                                       size_t used, size_t len)
{
    assert_int_equal(rc, 1);
    assert_int_equal(used, len);
    assert_int_equal(f->starts, 0); /* built in: the backend is not asked */
    assert_string_equal(jn_amqp_sasl_server_user(srv), "anonymous");
    assert_string_equal(jn_amqp_sasl_server_mechanism(srv), "ANONYMOUS");
    answer_t a = read_answer(srv);
    assert_string_equal(a.mechanisms, "PLAIN ANONYMOUS");
    assert_int_equal(a.outcome, JN_AMQP_SASL_OUTCOME_OK);
}

static void test_sasl_backend_offering_anonymous_serves_it_built_in(void **state)
{
    (void)state;
    stream_t s;
    jn_encoder_init(&s.e);
    put_header(&s, JN_AMQP_PROTO_SASL);
    put_init(&s, "ANONYMOUS");
    run_backend(&s, "PLAIN ANONYMOUS", check_anonymous_from_offer);
    jn_encoder_free(&s.e);
}

/* ---- a backend that defers: the offer and each answer come later ----------
 *
 * As an auth-service relay does: its mechanisms are NULL until the service
 * offered them, and its start and step answer PENDING, the service's
 * answer (here: the fake's, computed later) handed to
 * jn_amqp_sasl_server_resume. */

typedef struct deferred {
    fake_t f;
    bool ready;   /* the offer is known */
    int kind;     /* pending: 1 a start, 2 a step */
    int pendings; /* starts and steps that answered PENDING */
    char mech[32];
    uint8_t resp[64];
    size_t len;
    bool has_resp;
} deferred_t;

static const char *def_mechanisms(void *ctx)
{
    deferred_t *d = ctx;
    return d->ready ? d->f.offer : NULL;
}

static void def_keep(deferred_t *d, int kind, const uint8_t *resp, size_t len)
{
    assert_true(len <= sizeof d->resp);
    d->kind = kind;
    d->pendings++;
    d->has_resp = resp != NULL;
    d->len = len;
    if (len)
        memcpy(d->resp, resp, len);
}

static int def_start(void *ctx, const char *mech, const uint8_t *resp, size_t len,
                     const uint8_t **out, size_t *out_len)
{
    deferred_t *d = ctx;
    snprintf(d->mech, sizeof d->mech, "%s", mech);
    def_keep(d, 1, resp, len);
    *out = NULL;
    *out_len = 0;
    return JN_AMQP_SASL_STEP_PENDING;
}

static int def_step(void *ctx, const uint8_t *resp, size_t len, const uint8_t **out,
                    size_t *out_len)
{
    def_keep(ctx, 2, resp, len);
    *out = NULL;
    *out_len = 0;
    return JN_AMQP_SASL_STEP_PENDING;
}

static const char *def_user(void *ctx)
{
    return fake_user(&((deferred_t *)ctx)->f);
}

static void def_free(void *ctx)
{
    fake_free(&((deferred_t *)ctx)->f);
}

static const jn_amqp_sasl_mech_ops_t deferred_ops = {
    .mechanisms = def_mechanisms,
    .start = def_start,
    .step = def_step,
    .user = def_user,
    .free = def_free,
};

/* The service answers what is pending: its offer (nothing of ours was
 * written before it: the offer waits), or the fake's answer to the start
 * or step kept. Returns what the SASL layer returns. */
static int service_answers(jn_amqp_sasl_server_t *srv, deferred_t *d)
{
    if (!d->ready) {
        size_t n;
        (void)jn_amqp_sasl_server_output(srv, &n);
        assert_int_equal(n, 0);
        assert_int_equal(jn_amqp_sasl_server_offer_ready(srv), JN_EINVAL); /* still NULL */
        d->ready = true;
        return jn_amqp_sasl_server_offer_ready(srv);
    }
    const uint8_t *out = NULL;
    size_t n = 0;
    const uint8_t *resp = d->has_resp ? d->resp : NULL;
    int code = d->kind == 1 ? fake_start(&d->f, d->mech, resp, d->len, &out, &n)
                            : fake_step(&d->f, d->resp, d->len, &out, &n);
    assert_int_equal(jn_amqp_sasl_server_resume(srv, JN_AMQP_SASL_STEP_PENDING, NULL, 0),
                     JN_EINVAL);
    return jn_amqp_sasl_server_resume(srv, code, out, n);
}

/* As feed, with the service answering whenever the layer waits for it
 * (the offer once the peer's header was read), then the octets held
 * handed again. */
static int feed_deferred(jn_amqp_sasl_server_t *srv, deferred_t *d, const uint8_t *data,
                         size_t len, size_t chunk, size_t step, size_t *used)
{
    size_t have = 0;
    int rc = 0;
    *used = 0;
    while (rc == 0) {
        if (jn_amqp_sasl_server_pending(srv) && *used >= JN_AMQP_HEADER_SIZE) {
            rc = service_answers(srv, d);
            if (rc != 0)
                break;
        } else if (have == len) {
            break;
        } else {
            have = step == 0 || len - have < step ? len : have + step;
        }
        size_t got;
        rc = feed(srv, data + *used, have - *used, chunk, 0, &got);
        *used += got;
    }
    return rc;
}

/* Run stream s against the deferring backend over every split. */
static void run_deferred(const stream_t *s, check_fn check, int pendings)
{
    for (size_t sp = 0; sp < NSPLITS; sp++) {
        for (size_t step = 0; step <= 1; step++) {
            int freed = 0;
            deferred_t d = {.f = {.offer = OFFER, .freed = &freed}};
            jn_amqp_sasl_server_t *srv = jn_amqp_sasl_server_new_with(&deferred_ops, &d);
            assert_non_null(srv);
            assert_true(jn_amqp_sasl_server_pending(srv)); /* the offer */
            size_t used;
            int rc = feed_deferred(srv, &d, s->e.data, s->e.size, splits[sp], step, &used);
            assert_false(jn_amqp_sasl_server_pending(srv));
            assert_int_equal(d.pendings, pendings);
            check(srv, rc, &d.f, used, s->e.size);
            jn_amqp_sasl_server_free(srv);
            assert_int_equal(freed, 1);
        }
    }
}

static void check_deferred_rounds(jn_amqp_sasl_server_t *srv, int rc, const fake_t *f, size_t used,
                                  size_t len)
{
    assert_int_equal(rc, 1);
    assert_int_equal(used, len - amqp_tail); /* the AMQP header and open are not ours */
    assert_int_equal(f->starts, 1);
    assert_int_equal(f->steps, 2);
    assert_string_equal(jn_amqp_sasl_server_user(srv), "carol");
    assert_string_equal(jn_amqp_sasl_server_mechanism(srv), "X-CHAL");
    answer_t a = read_answer(srv);
    assert_int_equal(a.proto, JN_AMQP_PROTO_SASL);
    assert_string_equal(a.mechanisms, OFFER);
    assert_int_equal(a.nframes, 4);
    assert_string_equal(a.challenges, "c1|c2");
    assert_int_equal(a.outcome, JN_AMQP_SASL_OUTCOME_OK);
    assert_string_equal(a.data, "fin");
}

static void test_sasl_deferred_offer_and_pending_steps_resumed(void **state)
{
    (void)state;
    stream_t s;
    jn_encoder_init(&s.e);
    put_header(&s, JN_AMQP_PROTO_SASL);
    put_init_with(&s, "X-CHAL", "hello", 5);
    put_response(&s, "r1");
    put_response(&s, "r2");
    size_t before = s.e.size;
    put_header(&s, JN_AMQP_PROTO_AMQP);
    put_open(&s);
    amqp_tail = s.e.size - before;
    run_deferred(&s, check_deferred_rounds, 3);
    jn_encoder_free(&s.e);
}

static void test_sasl_deferred_refusal_resumed_with_its_code(void **state)
{
    (void)state;
    stream_t s;
    jn_encoder_init(&s.e);
    put_header(&s, JN_AMQP_PROTO_SASL);
    put_init_with(&s, "PLAIN", "\0carol\0no", 9);
    expected_code = JN_AMQP_SASL_OUTCOME_AUTH;
    expected_condition = "amqp:unauthorized-access";
    run_deferred(&s, check_refused, 1);
    jn_encoder_free(&s.e);
    jn_encoder_init(&s.e); /* the service's own code: sys-temp */
    put_header(&s, JN_AMQP_PROTO_SASL);
    put_init_with(&s, "X-SYS", "", 0);
    expected_code = JN_AMQP_SASL_OUTCOME_SYS_TEMP;
    run_deferred(&s, check_refused, 1);
    jn_encoder_free(&s.e);
}

/* While an answer is pending the peer's further frames are held, not read:
 * the layer consumes up to the end of the frame that is waiting. Our
 * header and mechanisms, asked for early (server first), wait for the
 * offer. */
static void test_sasl_deferred_holds_the_peers_frames(void **state)
{
    (void)state;
    stream_t s;
    jn_encoder_init(&s.e);
    put_header(&s, JN_AMQP_PROTO_SASL);
    put_init_with(&s, "X-CHAL", "hello", 5);
    size_t init_end = s.e.size;
    put_response(&s, "r1");
    int freed = 0;
    deferred_t d = {.f = {.offer = OFFER, .freed = &freed}};
    jn_amqp_sasl_server_t *srv = jn_amqp_sasl_server_new_with(&deferred_ops, &d);
    assert_non_null(srv);
    assert_int_equal(jn_amqp_sasl_server_resume(srv, JN_AMQP_SASL_OUTCOME_OK, NULL, 0),
                     JN_EINVAL); /* nothing pending */
    assert_int_equal(jn_amqp_sasl_server_start(srv), 0);
    size_t n, used;
    (void)jn_amqp_sasl_server_output(srv, &n);
    assert_int_equal(n, 0); /* the offer waits */
    d.ready = true;
    assert_int_equal(jn_amqp_sasl_server_offer_ready(srv), 0);
    assert_int_equal(jn_amqp_sasl_server_offer_ready(srv), 0); /* once */
    assert_int_equal(feed(srv, s.e.data, s.e.size, 0, 0, &used), 0);
    assert_int_equal(used, init_end); /* r1 held */
    assert_true(jn_amqp_sasl_server_pending(srv));
    assert_int_equal(feed(srv, s.e.data + used, s.e.size - used, 0, 0, &n), 0);
    assert_int_equal(n, 0); /* still held */
    answer_t a = read_answer(srv);
    assert_int_equal(a.nframes, 1); /* mechanisms, no challenge yet */
    assert_string_equal(a.mechanisms, OFFER);
    assert_int_equal(service_answers(srv, &d), 0); /* c1 */
    assert_int_equal(feed(srv, s.e.data + used, s.e.size - used, 0, 0, &n), 0);
    assert_int_equal(used + n, s.e.size); /* r1 read now, and pending again */
    assert_int_equal(d.pendings, 2);
    a = read_answer(srv);
    assert_string_equal(a.challenges, "c1");
    jn_amqp_sasl_server_free(srv);
    assert_int_equal(freed, 1);
    jn_encoder_free(&s.e);
}

/* A service that fails before any answer is pending (unreachable, or cut
 * between rounds): the offer (here empty) and the outcome go unasked, as
 * proton's server sends them; the exchange is refused and later input
 * ignored. Not while the offer or an answer is pending. */
static void test_sasl_deferred_refusal_unasked(void **state)
{
    (void)state;
    for (size_t sp = 0; sp < NSPLITS; sp++) {
        stream_t s;
        jn_encoder_init(&s.e);
        put_header(&s, JN_AMQP_PROTO_SASL);
        int freed = 0;
        deferred_t d = {.f = {.offer = "", .freed = &freed}};
        jn_amqp_sasl_server_t *srv = jn_amqp_sasl_server_new_with(&deferred_ops, &d);
        assert_non_null(srv);
        size_t used;
        assert_int_equal(feed(srv, s.e.data, s.e.size, splits[sp], 1, &used), 0);
        assert_int_equal(used, s.e.size);
        assert_int_equal(jn_amqp_sasl_server_refuse(srv, JN_AMQP_SASL_OUTCOME_AUTH), JN_EINVAL);
        d.ready = true;
        assert_int_equal(jn_amqp_sasl_server_offer_ready(srv), 0);
        assert_int_equal(jn_amqp_sasl_server_refuse(srv, JN_AMQP_SASL_OUTCOME_OK), JN_EINVAL);
        assert_int_equal(jn_amqp_sasl_server_refuse(srv, JN_AMQP_SASL_OUTCOME_AUTH), JN_EPROTO);
        assert_string_equal(jn_amqp_sasl_server_fault(srv)->condition, "amqp:unauthorized-access");
        answer_t a = read_answer(srv);
        assert_int_equal(a.proto, JN_AMQP_PROTO_SASL);
        assert_int_equal(a.nframes, 2);
        assert_string_equal(a.mechanisms, "");
        assert_int_equal(a.outcome, JN_AMQP_SASL_OUTCOME_AUTH);
        put_init_with(&s, "PLAIN", "\0carol\0pw", 9); /* too late: ignored */
        assert_int_equal(feed(srv, s.e.data + used, s.e.size - used, splits[sp], 1, &used),
                         JN_EPROTO);
        assert_int_equal(d.pendings, 0);
        assert_int_equal(jn_amqp_sasl_server_refuse(srv, JN_AMQP_SASL_OUTCOME_AUTH), JN_EINVAL);
        jn_amqp_sasl_server_free(srv);
        assert_int_equal(freed, 1);
        jn_encoder_free(&s.e);
    }
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
        cmocka_unit_test(test_sasl_backend_challenge_rounds_and_additional_data),
        cmocka_unit_test(test_sasl_backend_initial_response_checked_at_once),
        cmocka_unit_test(test_sasl_backend_refusals_and_their_codes),
        cmocka_unit_test(test_sasl_backend_frames_out_of_order),
        cmocka_unit_test(test_sasl_backend_offering_anonymous_serves_it_built_in),
        cmocka_unit_test(test_sasl_deferred_offer_and_pending_steps_resumed),
        cmocka_unit_test(test_sasl_deferred_refusal_resumed_with_its_code),
        cmocka_unit_test(test_sasl_deferred_holds_the_peers_frames),
        cmocka_unit_test(test_sasl_deferred_refusal_unasked),
        cmocka_unit_test(test_no_leak),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    jn_pool_shutdown();
    return failed;
}
