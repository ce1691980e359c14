/*
 * test_amqp_sasl_large.c — SASL frames over 512 octets, both ends of the
 * engine's SASL layer (junction/amqp_sasl.h, "Frame size"). 5.3.1 holds
 * SASL frames to 512 octets; proton's SASL layer takes and sends them up
 * to its transport's max-frame-size, so ours do up to the bound the caller
 * sets (jn_amqp_sasl_server_set_max_frame, the client config's max_frame),
 * 512 by default.
 *
 * Covered: a mechanism whose every datum is over 512 octets (X-BIG: an
 * initial response, a challenge, a response and the outcome's
 * additional-data, each checked octet for octet by the other end) between
 * our client end and our server end, the octets moved in pieces of 1, 2,
 * 3, 7 and 512 and read across buffers of those sizes; a frame of exactly
 * the bound taken and one octet more refused with
 * amqp:connection:framing-error, at 512 (the default, and a bound set
 * below it) and at 4096, by either end; a challenge or an initial response
 * too large for the bound refused with nothing of it left in the output
 * (the frames before it whole).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_amqp_sasl_util.h"

#include <junction/amqp_engine.h>
#include <junction/amqp_sasl.h>
#include <junction/pool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t pieces[] = {1, 2, 3, 7, 512};
#define NPIECES (sizeof pieces / sizeof pieces[0])

/* X-BIG's data: each a pattern of its own, all over 512 octets. */
enum { INIT_LEN = 700, CHALLENGE_LEN = 1300, RESPONSE_LEN = 900, DATA_LEN = 600 };
enum { SEED_INIT = 1, SEED_CHALLENGE = 2, SEED_RESPONSE = 3, SEED_DATA = 4 };

static uint8_t *pattern(size_t len, unsigned seed)
{
    uint8_t *p = malloc(len);
    assert_non_null(p);
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)(i * 31u + seed * 101u + i / 251u);
    return p;
}

static bool is_pattern(const uint8_t *p, size_t len, size_t want, unsigned seed)
{
    if (len != want || !p)
        return false;
    uint8_t *q = pattern(len, seed);
    bool same = memcmp(p, q, len) == 0;
    free(q);
    return same;
}

/* ---- the server end's backend: X-BIG ----------------------------------- */

typedef struct big_server {
    uint8_t *challenge, *data; /* what it sends */
    size_t challenge_len;      /* CHALLENGE_LEN unless a test says */
    int starts, steps;
} big_server_t;

static big_server_t srv;

static const char *srv_mechanisms(void *ctx)
{
    (void)ctx;
    return "PLAIN X-BIG";
}

static int srv_start(void *ctx, const char *mech, const uint8_t *resp, size_t len,
                     const uint8_t **out, size_t *out_len)
{
    (void)ctx;
    srv.starts++;
    assert_string_equal(mech, "X-BIG");
    if (!is_pattern(resp, len, INIT_LEN, SEED_INIT))
        return JN_AMQP_SASL_OUTCOME_AUTH;
    *out = srv.challenge;
    *out_len = srv.challenge_len;
    return JN_AMQP_SASL_STEP_CHALLENGE;
}

static int srv_step(void *ctx, const uint8_t *resp, size_t len, const uint8_t **out,
                    size_t *out_len)
{
    (void)ctx;
    srv.steps++;
    if (!is_pattern(resp, len, RESPONSE_LEN, SEED_RESPONSE))
        return JN_AMQP_SASL_OUTCOME_AUTH;
    *out = srv.data;
    *out_len = DATA_LEN;
    return JN_AMQP_SASL_OUTCOME_OK;
}

static const char *srv_user(void *ctx)
{
    (void)ctx;
    return "big";
}

static const jn_amqp_sasl_mech_ops_t srv_ops = {
    .mechanisms = srv_mechanisms,
    .start = srv_start,
    .step = srv_step,
    .user = srv_user,
};

/* ---- the client end's backend: X-BIG ----------------------------------- */

typedef struct big_client {
    uint8_t *init, *response;
    size_t init_len;  /* INIT_LEN unless a test says */
    bool proof_ok;    /* the outcome's additional-data was X-BIG's */
    int frees;
} big_client_t;

static int cli_start(void *ctx, const char *offer, const char **mech, const uint8_t **out,
                     size_t *out_len)
{
    big_client_t *b = ctx;
    assert_string_equal(offer, "PLAIN X-BIG");
    *mech = "X-BIG";
    *out = b->init;
    *out_len = b->init_len;
    return 0;
}

static int cli_step(void *ctx, const uint8_t *challenge, size_t len, const uint8_t **out,
                    size_t *out_len)
{
    big_client_t *b = ctx;
    if (!is_pattern(challenge, len, CHALLENGE_LEN, SEED_CHALLENGE))
        return JN_EPROTO;
    *out = b->response;
    *out_len = RESPONSE_LEN;
    return 0;
}

static int cli_outcome(void *ctx, int code, const uint8_t *data, size_t len)
{
    big_client_t *b = ctx;
    b->proof_ok = code == JN_AMQP_SASL_OUTCOME_OK && is_pattern(data, len, DATA_LEN, SEED_DATA);
    return b->proof_ok ? 0 : JN_EPROTO;
}

static void cli_free(void *ctx)
{
    ((big_client_t *)ctx)->frees++;
}

static const jn_amqp_sasl_client_mech_ops_t cli_ops = {
    .start = cli_start,
    .step = cli_step,
    .outcome = cli_outcome,
    .free = cli_free,
};

/* ---- moving octets between the two ends -------------------------------- */

/* Run client and server until neither has anything to say, piece octets
 * at a time. Each end's last result in *crc and *src. */
static void run_pair(jn_amqp_sasl_client_t *c, jn_amqp_sasl_server_t *s, size_t piece, int *crc,
                     int *src)
{
    inbox_t *to_server = calloc(1, sizeof *to_server), *to_client = calloc(1, sizeof *to_client);
    assert_non_null(to_server);
    assert_non_null(to_client);
    *crc = *src = 0;
    for (int round = 0; round < 100000; round++) {
        size_t len, slen, moved = 0;
        const uint8_t *out = jn_amqp_sasl_client_output(c, &len);
        if (len) {
            size_t n = move(out, len, to_server, piece);
            jn_amqp_sasl_client_output_done(c, n);
            moved += n;
        }
        out = jn_amqp_sasl_server_output(s, &len);
        if (len) {
            size_t n = move(out, len, to_client, piece);
            jn_amqp_sasl_server_output_done(s, n);
            moved += n;
        }
        if (*src == 0)
            *src = deliver(to_server, s, server_input, piece);
        if (*crc == 0)
            *crc = deliver(to_client, c, client_input, piece);
        (void)jn_amqp_sasl_client_output(c, &len);
        (void)jn_amqp_sasl_server_output(s, &slen);
        if (moved == 0 && len == 0 && slen == 0)
            break;
    }
    free(to_server);
    free(to_client);
}

static void big_setup(big_client_t *b)
{
    memset(&srv, 0, sizeof srv);
    srv.challenge = pattern(CHALLENGE_LEN, SEED_CHALLENGE);
    srv.challenge_len = CHALLENGE_LEN;
    srv.data = pattern(DATA_LEN, SEED_DATA);
    memset(b, 0, sizeof *b);
    b->init = pattern(INIT_LEN, SEED_INIT);
    b->init_len = INIT_LEN;
    b->response = pattern(RESPONSE_LEN, SEED_RESPONSE);
}

static void big_teardown(big_client_t *b)
{
    free(srv.challenge);
    free(srv.data);
    free(b->init);
    free(b->response);
}

/* ---- the cases --------------------------------------------------------- */

static void test_every_datum_over_512_octets_both_ends(void **state)
{
    (void)state;
    for (size_t i = 0; i < NPIECES; i++) {
        big_client_t b;
        big_setup(&b);
        jn_amqp_sasl_client_config_t cfg = {.ops = &cli_ops, .ctx = &b, .max_frame = 16384};
        jn_amqp_sasl_client_t *c = jn_amqp_sasl_client_new(&cfg);
        jn_amqp_sasl_server_t *s = jn_amqp_sasl_server_new_with(&srv_ops, NULL);
        assert_non_null(c);
        assert_non_null(s);
        jn_amqp_sasl_server_set_max_frame(s, 16384);
        int crc, src;
        run_pair(c, s, pieces[i], &crc, &src);
        assert_int_equal(src, 1);
        assert_int_equal(crc, 1);
        assert_int_equal(srv.starts, 1);
        assert_int_equal(srv.steps, 1);
        assert_true(b.proof_ok);
        assert_string_equal(jn_amqp_sasl_server_user(s), "big");
        assert_string_equal(jn_amqp_sasl_server_mechanism(s), "X-BIG");
        assert_string_equal(jn_amqp_sasl_client_mechanism(c), "X-BIG");
        jn_amqp_sasl_client_free(c);
        jn_amqp_sasl_server_free(s);
        assert_int_equal(b.frees, 1);
        big_teardown(&b);
    }
}

/* By default (512) the client's 700-octet initial response does not go. */
static void test_the_default_bound_is_512(void **state)
{
    (void)state;
    big_client_t b;
    big_setup(&b);
    jn_amqp_sasl_client_config_t cfg = {.ops = &cli_ops, .ctx = &b}; /* max_frame 0: 512 */
    jn_amqp_sasl_client_t *c = jn_amqp_sasl_client_new(&cfg);
    jn_amqp_sasl_server_t *s = jn_amqp_sasl_server_new_with(&srv_ops, NULL);
    int crc, src;
    run_pair(c, s, 512, &crc, &src);
    assert_int_equal(crc, JN_EPROTO); /* its init does not fit: never sent */
    assert_string_equal(jn_amqp_sasl_client_fault(c)->condition, "amqp:unauthorized-access");
    assert_non_null(strstr(jn_amqp_sasl_client_fault(c)->description, "does not fit"));
    assert_int_equal(srv.starts, 0);
    jn_amqp_sasl_client_free(c);
    jn_amqp_sasl_server_free(s);
    big_teardown(&b);
}

/* A sasl-init frame of exactly size octets: ANONYMOUS with trace octets. */
static void put_init_of(jn_encoder_t *e, size_t size)
{
    size_t n = size; /* the response's length, adjusted until the frame fits exactly */
    for (int tries = 0; tries < 8; tries++) {
        uint8_t *resp = calloc(1, n + 1);
        assert_non_null(resp);
        jn_amqp_perf_t p;
        jn_amqp_perf_init(&p, JN_AMQP_SASL_INIT);
        p.u.sasl.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1);
        jn_iter_init_string(&p.u.sasl.mechanism, "ANONYMOUS", JN_VIEW_RAW);
        jn_iter_init_bytes(&p.u.sasl.initial_response, resp, n, JN_VIEW_RAW);
        size_t at = e->size;
        size_t start = jn_amqp_frame_begin(e, JN_AMQP_FRAME_SASL, 0);
        assert_int_equal(jn_amqp_perf_encode(e, &p), 0);
        assert_int_equal(jn_amqp_frame_end(e, start, 1u << 20), 0);
        free(resp);
        size_t got = e->size - at;
        if (got == size)
            return;
        e->size = at;
        n = n + size - got;
    }
    fail_msg("no sasl-init of %zu octets", size);
}

/* Our server end with bound (0: not set) against a sasl-init frame of size
 * octets, read across buffers of each piece size. Returns the last
 * result (the same for every piece size). */
static int server_against_init_of(uint32_t bound, size_t size)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    uint8_t h[JN_AMQP_HEADER_SIZE];
    jn_amqp_header_write(h, JN_AMQP_PROTO_SASL);
    jn_enc_raw(&e, h, sizeof h);
    put_init_of(&e, size);
    int first = 99;
    for (size_t i = 0; i < NPIECES; i++) {
        jn_amqp_sasl_server_t *s = jn_amqp_sasl_server_new();
        if (bound)
            jn_amqp_sasl_server_set_max_frame(s, bound);
        inbox_t *box = calloc(1, sizeof *box);
        assert_non_null(box);
        int rc = 0;
        for (size_t at = 0; rc == 0 && at < e.size;) { /* piece octets arrive at a time */
            at += move(e.data + at, e.size - at, box, pieces[i]);
            rc = deliver(box, s, server_input, pieces[i]);
        }
        if (rc == 1) {
            assert_string_equal(jn_amqp_sasl_server_user(s), JN_AMQP_SASL_ANONYMOUS_USER);
        } else {
            assert_int_equal(rc, JN_EPROTO);
            const jn_amqp_fault_t *f = jn_amqp_sasl_server_fault(s);
            assert_string_equal(f->condition, "amqp:connection:framing-error");
            assert_non_null(strstr(f->description, "above the max-frame-size"));
        }
        if (first == 99)
            first = rc;
        assert_int_equal(rc, first);
        free(box);
        jn_amqp_sasl_server_free(s);
    }
    jn_encoder_free(&e);
    return first;
}

static void test_server_takes_frames_up_to_its_bound(void **state)
{
    (void)state;
    assert_int_equal(server_against_init_of(0, 512), 1);
    assert_int_equal(server_against_init_of(0, 513), JN_EPROTO);
    assert_int_equal(server_against_init_of(100, 512), 1); /* below 512 means 512 */
    assert_int_equal(server_against_init_of(100, 513), JN_EPROTO);
    assert_int_equal(server_against_init_of(4096, 4096), 1);
    assert_int_equal(server_against_init_of(4096, 4097), JN_EPROTO);
}

/* The server's 1300-octet challenge against a client bound of 1024: the
 * client refuses the frame (framing-error). Against a server bound of
 * 1024: the server cannot send it (internal-error), and its output holds
 * its header and sasl-mechanisms whole, nothing of the challenge. */
static void test_a_challenge_over_the_bound(void **state)
{
    (void)state;
    big_client_t b;
    big_setup(&b);
    jn_amqp_sasl_client_config_t cfg = {.ops = &cli_ops, .ctx = &b, .max_frame = 1024};
    jn_amqp_sasl_client_t *c = jn_amqp_sasl_client_new(&cfg);
    jn_amqp_sasl_server_t *s = jn_amqp_sasl_server_new_with(&srv_ops, NULL);
    jn_amqp_sasl_server_set_max_frame(s, 16384);
    int crc, src;
    run_pair(c, s, 7, &crc, &src);
    assert_int_equal(crc, JN_EPROTO);
    assert_string_equal(jn_amqp_sasl_client_fault(c)->condition, "amqp:connection:framing-error");
    assert_int_equal(srv.starts, 1); /* the 700-octet init went */
    jn_amqp_sasl_client_free(c);
    jn_amqp_sasl_server_free(s);
    big_teardown(&b);

    big_setup(&b);
    cfg.max_frame = 16384;
    c = jn_amqp_sasl_client_new(&cfg);
    s = jn_amqp_sasl_server_new_with(&srv_ops, NULL);
    jn_amqp_sasl_server_set_max_frame(s, 1024);
    /* the server's header and mechanisms to the client, whose header and
     * init then go to the server whole */
    inbox_t *box = calloc(1, sizeof *box);
    assert_non_null(box);
    assert_int_equal(jn_amqp_sasl_server_start(s), 0); /* header and sasl-mechanisms */
    size_t len;
    jn_iter_t it;
    const uint8_t *out = jn_amqp_sasl_server_output(s, &len);
    assert_true(len > JN_AMQP_HEADER_SIZE);
    jn_iter_init_bytes(&it, out, len, JN_VIEW_RAW);
    size_t consumed;
    assert_int_equal(jn_amqp_sasl_client_input(c, &it, &consumed), 0); /* init composed */
    jn_amqp_sasl_server_output_done(s, len);
    out = jn_amqp_sasl_client_output(c, &len);
    move(out, len, box, len);
    assert_int_equal(deliver(box, s, server_input, 3), JN_EPROTO);
    assert_string_equal(jn_amqp_sasl_server_fault(s)->condition, "amqp:internal-error");
    (void)jn_amqp_sasl_server_output(s, &len);
    assert_int_equal(len, 0); /* nothing of the challenge was left behind */
    free(box);
    jn_amqp_sasl_client_free(c);
    jn_amqp_sasl_server_free(s);
    big_teardown(&b);
}

/* A response over the client's bound: refused as it is composed, the
 * output left with what went before. */
static void test_an_initial_response_over_the_client_bound(void **state)
{
    (void)state;
    big_client_t b;
    big_setup(&b);
    jn_amqp_sasl_client_config_t cfg = {.ops = &cli_ops, .ctx = &b, .max_frame = 700};
    jn_amqp_sasl_client_t *c = jn_amqp_sasl_client_new(&cfg);
    jn_amqp_sasl_server_t *s = jn_amqp_sasl_server_new_with(&srv_ops, NULL);
    jn_amqp_sasl_server_set_max_frame(s, 16384);
    int crc, src;
    run_pair(c, s, 2, &crc, &src); /* 700 octets of data and the frame's own: over 700 */
    assert_int_equal(crc, JN_EPROTO);
    assert_string_equal(jn_amqp_sasl_client_fault(c)->condition, "amqp:internal-error");
    assert_non_null(strstr(jn_amqp_sasl_client_fault(c)->description, "does not fit"));
    assert_int_equal(srv.starts, 0);
    assert_int_equal(src, 0); /* the server heard the header only, and waits */
    jn_amqp_sasl_client_free(c);
    jn_amqp_sasl_server_free(s);
    big_teardown(&b);
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
        cmocka_unit_test(test_every_datum_over_512_octets_both_ends),
        cmocka_unit_test(test_the_default_bound_is_512),
        cmocka_unit_test(test_server_takes_frames_up_to_its_bound),
        cmocka_unit_test(test_a_challenge_over_the_bound),
        cmocka_unit_test(test_an_initial_response_over_the_client_bound),
        cmocka_unit_test(test_no_leak),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    jn_pool_shutdown();
    return failed;
}
