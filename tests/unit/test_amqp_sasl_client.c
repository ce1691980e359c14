/*
 * test_amqp_sasl_client.c — the engine's SASL layer, client end (junction/
 * amqp_sasl.h), and the transport's client role (junction/
 * amqp_transport.h). Against the engine's own server end (a PLAIN and
 * EXTERNAL backend here): the mechanism chosen from the offer (PLAIN with a
 * user and password, else ANONYMOUS; the configured list's order; EXTERNAL
 * only when listed), a wrong password (outcome auth), no mechanism in
 * common, an empty challenge answered with the initial response again, a
 * server header that is not SASL's, a frame out of order; the octets moved
 * in pieces of 1, 2, 3, 7 and 512 and read across buffers of those sizes.
 * A client mechanism backend (a toy of two steps, as the router's Cyrus
 * client): its choice from the offer, no initial response, a challenge
 * answered, the server's proof in the outcome checked (a forged one
 * refused), a refusal's code handed to it, no mechanism found, its
 * context freed by the layer. A backend that answers later (as the
 * auth-service relay's): its init and response composed on resume, the
 * server's frames held while a step's answer is pending, and a challenge,
 * an outcome or a second sasl-mechanisms while the start's is pending
 * refused.
 * Against proton's connection driver as the server (linked into this test
 * only): our transport in the client role, SASL ANONYMOUS (proton's
 * built-in server mechanism) then open both ways, and a PLAIN-only client
 * finding nothing in common.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_amqp_sasl_util.h"

#include <junction/amqp_engine.h>
#include <junction/amqp_sasl.h>
#include <junction/amqp_transport.h>
#include <junction/pool.h>

#include <proton/connection.h>
#include <proton/connection_driver.h>
#include <proton/event.h>
#include <proton/sasl.h>
#include <proton/transport.h>

#include <stdio.h>
#include <string.h>

static const size_t pieces[] = {1, 2, 3, 7, 512};
#define NPIECES (sizeof pieces / sizeof pieces[0])

/* ---- the server end's backend: PLAIN (carol/secret) and EXTERNAL ------- */

static const char *offer = "PLAIN ANONYMOUS";
static bool ask_first; /* answer a sasl-init without data with an empty challenge */

static const char *srv_mechanisms(void *ctx)
{
    (void)ctx;
    return offer;
}

static int srv_start(void *ctx, const char *mech, const uint8_t *resp, size_t len,
                     const uint8_t **out, size_t *out_len)
{
    (void)ctx;
    *out = NULL;
    *out_len = 0;
    if (ask_first && (!resp || len == 0) && strcmp(mech, "EXTERNAL") != 0)
        return JN_AMQP_SASL_STEP_CHALLENGE;
    if (strcmp(mech, "EXTERNAL") == 0)
        return resp && len == 0 ? JN_AMQP_SASL_OUTCOME_OK : JN_AMQP_SASL_OUTCOME_AUTH;
    bool good = resp && len == 13 && memcmp(resp, "\0carol\0secret", 13) == 0;
    return good ? JN_AMQP_SASL_OUTCOME_OK : JN_AMQP_SASL_OUTCOME_AUTH;
}

static int srv_step(void *ctx, const uint8_t *resp, size_t len, const uint8_t **out,
                    size_t *out_len)
{
    ask_first = false; /* the initial response, asked again */
    return srv_start(ctx, "PLAIN", resp, len, out, out_len);
}

static const char *srv_user(void *ctx)
{
    (void)ctx;
    return "carol";
}

static const jn_amqp_sasl_mech_ops_t srv_ops = {
    .mechanisms = srv_mechanisms,
    .start = srv_start,
    .step = srv_step,
    .user = srv_user,
};

/* ---- moving octets between the two ends -------------------------------- */

typedef struct result {
    int client_rc, server_rc;
    size_t server_left; /* octets the server did not take (the AMQP layer's) */
} result_t;

/* Run client and server to the end, piece octets at a time. */
static result_t run_pair(jn_amqp_sasl_client_t *c, jn_amqp_sasl_server_t *s, size_t piece)
{
    inbox_t to_server = {.len = 0}, to_client = {.len = 0};
    result_t r = {0, 0, 0};
    for (int round = 0; round < 10000; round++) {
        size_t len, moved = 0;
        const uint8_t *out = jn_amqp_sasl_client_output(c, &len);
        if (len) {
            size_t n = move(out, len, &to_server, piece);
            jn_amqp_sasl_client_output_done(c, n);
            moved += n;
        }
        out = jn_amqp_sasl_server_output(s, &len);
        if (len) {
            size_t n = move(out, len, &to_client, piece);
            jn_amqp_sasl_server_output_done(s, n);
            moved += n;
        }
        if (r.server_rc == 0)
            r.server_rc = deliver(&to_server, s, server_input, piece);
        if (r.client_rc == 0)
            r.client_rc = deliver(&to_client, c, client_input, piece);
        if (moved == 0 && (r.client_rc != 0 || r.server_rc != 0)) {
            jn_amqp_sasl_client_output(c, &len);
            size_t slen;
            jn_amqp_sasl_server_output(s, &slen);
            if (len == 0 && slen == 0)
                break;
        }
    }
    r.server_left = to_server.len;
    return r;
}

/* One exchange over every piece size: the client with cfg against a
 * server offering offer_ (with the backend); checks by the caller. */
typedef void (*pair_check)(jn_amqp_sasl_client_t *c, jn_amqp_sasl_server_t *s, result_t r);

static void each_piece(const jn_amqp_sasl_client_config_t *cfg, const char *offer_, bool ask,
                       pair_check check)
{
    for (size_t i = 0; i < NPIECES; i++) {
        offer = offer_;
        ask_first = ask;
        jn_amqp_sasl_client_t *c = jn_amqp_sasl_client_new(cfg);
        jn_amqp_sasl_server_t *s = jn_amqp_sasl_server_new_with(&srv_ops, NULL);
        assert_non_null(c);
        assert_non_null(s);
        result_t r = run_pair(c, s, pieces[i]);
        check(c, s, r);
        jn_amqp_sasl_client_free(c);
        jn_amqp_sasl_server_free(s);
    }
}

static void check_plain_ok(jn_amqp_sasl_client_t *c, jn_amqp_sasl_server_t *s, result_t r)
{
    assert_int_equal(r.client_rc, 1);
    assert_int_equal(r.server_rc, 1);
    assert_true(jn_amqp_sasl_client_done(c));
    assert_string_equal(jn_amqp_sasl_client_mechanism(c), "PLAIN");
    assert_string_equal(jn_amqp_sasl_server_mechanism(s), "PLAIN");
    assert_string_equal(jn_amqp_sasl_server_user(s), "carol");
    assert_null(jn_amqp_sasl_client_fault(c)->condition);
}

static void test_client_plain_with_a_user_and_password(void **state)
{
    (void)state;
    jn_amqp_sasl_client_config_t cfg = {
        .user = "carol", .password = "secret", .hostname = "router.example"};
    each_piece(&cfg, "ANONYMOUS PLAIN", false, check_plain_ok);
    /* an empty challenge asks for the initial response again */
    each_piece(&cfg, "PLAIN", true, check_plain_ok);
}

static void check_anonymous_ok(jn_amqp_sasl_client_t *c, jn_amqp_sasl_server_t *s, result_t r)
{
    assert_int_equal(r.client_rc, 1);
    assert_string_equal(jn_amqp_sasl_client_mechanism(c), "ANONYMOUS");
    assert_string_equal(jn_amqp_sasl_server_user(s), "anonymous");
}

static void test_client_anonymous_without_credentials(void **state)
{
    (void)state;
    jn_amqp_sasl_client_config_t cfg = {.user = NULL};
    each_piece(&cfg, "PLAIN ANONYMOUS", false, check_anonymous_ok);
    /* the configured order wins over the offer's */
    jn_amqp_sasl_client_config_t listed = {
        .mechanisms = "ANONYMOUS,PLAIN", .user = "carol", .password = "secret"};
    each_piece(&listed, "PLAIN ANONYMOUS", false, check_anonymous_ok);
}

static void check_external_ok(jn_amqp_sasl_client_t *c, jn_amqp_sasl_server_t *s, result_t r)
{
    assert_int_equal(r.client_rc, 1);
    assert_string_equal(jn_amqp_sasl_client_mechanism(c), "EXTERNAL");
    assert_string_equal(jn_amqp_sasl_server_mechanism(s), "EXTERNAL");
}

static void check_no_common(jn_amqp_sasl_client_t *c, jn_amqp_sasl_server_t *s, result_t r)
{
    (void)s;
    assert_int_equal(r.client_rc, JN_EPROTO);
    assert_int_equal(r.server_rc, 0); /* it waits for an init that never comes */
    assert_null(jn_amqp_sasl_client_mechanism(c));
    assert_string_equal(jn_amqp_sasl_client_fault(c)->condition, "amqp:unauthorized-access");
    assert_non_null(strstr(jn_amqp_sasl_client_fault(c)->description, "in common"));
}

static void test_client_external_only_when_listed(void **state)
{
    (void)state;
    jn_amqp_sasl_client_config_t listed = {.mechanisms = "EXTERNAL PLAIN"};
    each_piece(&listed, "PLAIN EXTERNAL", false, check_external_ok);
    jn_amqp_sasl_client_config_t unlisted = {.user = NULL};
    each_piece(&unlisted, "EXTERNAL", false, check_no_common);
    /* PLAIN listed without a password is not usable */
    jn_amqp_sasl_client_config_t nopw = {.mechanisms = "PLAIN", .user = "carol"};
    each_piece(&nopw, "PLAIN ANONYMOUS", false, check_no_common);
}

static void check_refused(jn_amqp_sasl_client_t *c, jn_amqp_sasl_server_t *s, result_t r)
{
    (void)s;
    assert_int_equal(r.client_rc, JN_EPROTO);
    assert_int_equal(r.server_rc, JN_EPROTO);
    assert_false(jn_amqp_sasl_client_done(c));
    assert_string_equal(jn_amqp_sasl_client_fault(c)->condition, "amqp:unauthorized-access");
    assert_non_null(strstr(jn_amqp_sasl_client_fault(c)->description, "auth"));
}

static void test_client_wrong_password_gets_outcome_auth(void **state)
{
    (void)state;
    jn_amqp_sasl_client_config_t cfg = {.user = "carol", .password = "wrong"};
    each_piece(&cfg, "PLAIN", false, check_refused);
}

/* ---- a client mechanism backend (as router/io/sasl_own.c's Cyrus client):
 * X-TOY, a mechanism of two steps: no initial response, the server's
 * challenge "n1" answered with "n1+carol", the outcome's additional-data
 * "proof" checked by the client. */

static const char *toy_proof = "proof"; /* what the toy server sends in its outcome */

static int toy_srv_start(void *ctx, const char *mech, const uint8_t *resp, size_t len,
                         const uint8_t **out, size_t *out_len)
{
    (void)ctx;
    (void)len;
    assert_string_equal(mech, "X-TOY");
    assert_null(resp); /* the client sent no initial response */
    *out = (const uint8_t *)"n1";
    *out_len = 2;
    return JN_AMQP_SASL_STEP_CHALLENGE;
}

static int toy_srv_step(void *ctx, const uint8_t *resp, size_t len, const uint8_t **out,
                        size_t *out_len)
{
    (void)ctx;
    *out = (const uint8_t *)toy_proof;
    *out_len = strlen(toy_proof);
    return len == 8 && memcmp(resp, "n1+carol", 8) == 0 ? JN_AMQP_SASL_OUTCOME_OK
                                                        : JN_AMQP_SASL_OUTCOME_AUTH;
}

static const char *toy_srv_mechanisms(void *ctx)
{
    (void)ctx;
    return "PLAIN X-TOY";
}

static const jn_amqp_sasl_mech_ops_t toy_srv_ops = {
    .mechanisms = toy_srv_mechanisms,
    .start = toy_srv_start,
    .step = toy_srv_step,
    .user = srv_user,
};

typedef struct toy_client {
    const char *answer; /* the response to "n1" */
    bool refuse_start;  /* no mechanism works */
    int outcome_code;   /* the last outcome's code seen, -1 before */
    int frees;
} toy_client_t;

static int toy_start(void *ctx, const char *offer_, const char **mech, const uint8_t **out,
                     size_t *out_len)
{
    toy_client_t *t = ctx;
    assert_string_equal(offer_, "PLAIN X-TOY"); /* the server's array, as a string */
    if (t->refuse_start)
        return JN_EPROTO;
    *mech = "X-TOY";
    *out = NULL; /* no initial response: the field is absent */
    *out_len = 0;
    return 0;
}

static int toy_step(void *ctx, const uint8_t *challenge, size_t len, const uint8_t **out,
                    size_t *out_len)
{
    toy_client_t *t = ctx;
    if (len != 2 || memcmp(challenge, "n1", 2) != 0)
        return JN_EPROTO;
    *out = (const uint8_t *)t->answer;
    *out_len = strlen(t->answer);
    return 0;
}

static int toy_outcome(void *ctx, int code, const uint8_t *data, size_t len)
{
    toy_client_t *t = ctx;
    t->outcome_code = code;
    return len == 5 && memcmp(data, "proof", 5) == 0 ? 0 : JN_EPROTO;
}

static const char *toy_reason(void *ctx)
{
    (void)ctx;
    return "toy reason";
}

static void toy_free(void *ctx)
{
    toy_client_t *t = ctx;
    t->frees++;
}

static const jn_amqp_sasl_client_mech_ops_t toy_ops = {
    .start = toy_start,
    .step = toy_step,
    .outcome = toy_outcome,
    .reason = toy_reason,
    .free = toy_free,
};

/* One X-TOY exchange per piece size; returns the last one's results (the
 * client's fault's description in why, cap octets). */
static result_t toy_run(toy_client_t *t, const char *proof, char *why, size_t cap)
{
    result_t r = {0, 0, 0};
    for (size_t i = 0; i < NPIECES; i++) {
        toy_proof = proof;
        t->outcome_code = -1;
        jn_amqp_sasl_client_config_t cfg = {.ops = &toy_ops, .ctx = t};
        jn_amqp_sasl_client_t *c = jn_amqp_sasl_client_new(&cfg);
        jn_amqp_sasl_server_t *s = jn_amqp_sasl_server_new_with(&toy_srv_ops, NULL);
        assert_non_null(c);
        assert_non_null(s);
        r = run_pair(c, s, pieces[i]);
        const jn_amqp_fault_t *f = jn_amqp_sasl_client_fault(c);
        snprintf(why, cap, "%s", f->condition ? f->description : "");
        if (r.client_rc == 1)
            assert_string_equal(jn_amqp_sasl_client_mechanism(c), "X-TOY");
        jn_amqp_sasl_client_free(c);
        jn_amqp_sasl_server_free(s);
    }
    toy_proof = "proof";
    return r;
}

static void test_client_backend_challenge_rounds_and_the_servers_proof(void **state)
{
    (void)state;
    char why[256];
    toy_client_t t = {.answer = "n1+carol"};
    result_t r = toy_run(&t, "proof", why, sizeof why);
    assert_int_equal(r.client_rc, 1);
    assert_int_equal(r.server_rc, 1);
    assert_int_equal(t.outcome_code, JN_AMQP_SASL_OUTCOME_OK);
    assert_int_equal(t.frees, (int)NPIECES); /* the layer frees the backend's ctx */
    /* the server's proof is wrong: the client refuses the outcome ok */
    r = toy_run(&t, "forged", why, sizeof why);
    assert_int_equal(r.client_rc, JN_EPROTO);
    assert_non_null(strstr(why, "SASL X-TOY: the server's proof is wrong: toy reason"));
    /* a wrong answer: the server's refusal reaches the backend (to log) */
    t.answer = "n1+mallory";
    r = toy_run(&t, "proof", why, sizeof why);
    assert_int_equal(r.client_rc, JN_EPROTO);
    assert_int_equal(t.outcome_code, JN_AMQP_SASL_OUTCOME_AUTH);
    assert_non_null(strstr(why, "refused by the server (auth"));
    /* the backend finds no mechanism */
    t.refuse_start = true;
    r = toy_run(&t, "proof", why, sizeof why);
    assert_int_equal(r.client_rc, JN_EPROTO);
    assert_non_null(strstr(why, "no mechanism works: toy reason"));
    assert_int_equal(t.frees, 4 * (int)NPIECES);
}

/* The server's octets handed straight to a client. */
static int client_reads(jn_amqp_sasl_client_t *c, const uint8_t *data, size_t len)
{
    jn_iter_t it;
    jn_iter_init_bytes(&it, data, len, JN_VIEW_RAW);
    size_t consumed;
    return jn_amqp_sasl_client_input(c, &it, &consumed);
}

/* ---- a deferring client backend (as the auth-service relay's connection
 * to its service, router/io/authsvc_own.c): its start and step answer
 * JN_AMQP_SASL_STEP_PENDING, the answers come by jn_amqp_sasl_client_resume. */

typedef struct defer_client {
    int starts, steps;
    char offer[32], challenge[8];
    bool proof_ok;
} defer_client_t;

static int defer_start(void *ctx, const char *offer_, const char **mech, const uint8_t **out,
                       size_t *out_len)
{
    defer_client_t *d = ctx;
    d->starts++;
    snprintf(d->offer, sizeof d->offer, "%s", offer_);
    *mech = NULL;
    *out = NULL;
    *out_len = 0;
    return JN_AMQP_SASL_STEP_PENDING;
}

static int defer_step(void *ctx, const uint8_t *challenge, size_t len, const uint8_t **out,
                      size_t *out_len)
{
    defer_client_t *d = ctx;
    d->steps++;
    snprintf(d->challenge, sizeof d->challenge, "%.*s", (int)len, (const char *)challenge);
    *out = NULL;
    *out_len = 0;
    return JN_AMQP_SASL_STEP_PENDING;
}

static int defer_outcome(void *ctx, int code, const uint8_t *data, size_t len)
{
    defer_client_t *d = ctx;
    d->proof_ok = code == JN_AMQP_SASL_OUTCOME_OK && len == 5 && memcmp(data, "proof", 5) == 0;
    return d->proof_ok ? 0 : JN_EPROTO;
}

static const jn_amqp_sasl_client_mech_ops_t defer_ops = {
    .start = defer_start,
    .step = defer_step,
    .outcome = defer_outcome,
};

/* X-TOY against our server end, each answer given later: nothing goes
 * while one is pending, and the server's frames wait while a step's is. */
static void test_client_backend_answers_later(void **state)
{
    (void)state;
    for (size_t i = 0; i < NPIECES; i++) {
        defer_client_t d = {0};
        jn_amqp_sasl_client_config_t cfg = {.ops = &defer_ops, .ctx = &d};
        jn_amqp_sasl_client_t *c = jn_amqp_sasl_client_new(&cfg);
        jn_amqp_sasl_server_t *s = jn_amqp_sasl_server_new_with(&toy_srv_ops, NULL);
        assert_int_equal(jn_amqp_sasl_client_resume(c, 0, "X-TOY", NULL, 0), JN_EINVAL);
        result_t r = run_pair(c, s, pieces[i]);
        assert_int_equal(r.client_rc, 0);
        assert_int_equal(d.starts, 1);
        assert_string_equal(d.offer, "PLAIN X-TOY");
        assert_true(jn_amqp_sasl_client_pending(c));
        assert_int_equal(jn_amqp_sasl_client_resume(c, 0, NULL, NULL, 0), JN_EINVAL); /* no mech */
        assert_int_equal(jn_amqp_sasl_client_resume(c, 0, "X-TOY", NULL, 0), 0); /* init, no data */
        assert_false(jn_amqp_sasl_client_pending(c));
        r = run_pair(c, s, pieces[i]);
        assert_int_equal(d.steps, 1);
        assert_string_equal(d.challenge, "n1");
        assert_int_equal(r.server_rc, 0); /* the server waits for our response */
        assert_int_equal(jn_amqp_sasl_client_resume(c, 0, NULL, (const uint8_t *)"n1+carol", 8), 0);
        r = run_pair(c, s, pieces[i]);
        assert_int_equal(r.client_rc, 1);
        assert_int_equal(r.server_rc, 1);
        assert_true(d.proof_ok);
        assert_string_equal(jn_amqp_sasl_client_mechanism(c), "X-TOY");
        jn_amqp_sasl_client_free(c);
        jn_amqp_sasl_server_free(s);
    }
}

/* The server's header, sasl-mechanisms [PLAIN], then a frame of code
 * (0: none) in one stream, into e. */
static void server_stream(jn_encoder_t *e, uint64_t code)
{
    uint8_t h[8];
    jn_amqp_header_write(h, JN_AMQP_PROTO_SASL);
    jn_enc_raw(e, h, 8);
    uint64_t codes[] = {JN_AMQP_SASL_MECHANISMS, code};
    for (int k = 0; k < 2 && codes[k]; k++) {
        jn_amqp_perf_t p;
        jn_amqp_perf_init(&p, codes[k]);
        p.u.sasl.present = JN_AMQP_FIELD(0);
        jn_iter_init_bytes(&p.u.sasl.mechanisms, "\xa3\x05PLAIN", 7, JN_VIEW_RAW);
        jn_iter_init_bytes(&p.u.sasl.challenge, "early", 5, JN_VIEW_RAW);
        p.u.sasl.code = JN_AMQP_SASL_OUTCOME_OK;
        size_t start = jn_amqp_frame_begin(e, JN_AMQP_FRAME_SASL, 0);
        assert_int_equal(jn_amqp_perf_encode(e, &p), 0);
        assert_int_equal(jn_amqp_frame_end(e, start, 512), 0);
    }
}

/* While the start's answer is pending, a challenge or an outcome from the
 * server (before our init) ends the exchange; so does a second
 * sasl-mechanisms; a failure handed to resume ends it with the reason. */
static void test_client_frames_while_the_start_is_pending(void **state)
{
    (void)state;
    const uint64_t early[] = {JN_AMQP_SASL_OUTCOME, JN_AMQP_SASL_CHALLENGE,
                              JN_AMQP_SASL_MECHANISMS};
    const char *why[] = {"the server's sasl-outcome came before our sasl-init",
                         "the server's sasl-challenge came before our sasl-init",
                         "a second sasl-mechanisms frame"};
    for (int k = 0; k < 3; k++) {
        defer_client_t d = {0};
        jn_amqp_sasl_client_config_t cfg = {.ops = &defer_ops, .ctx = &d};
        jn_amqp_sasl_client_t *c = jn_amqp_sasl_client_new(&cfg);
        jn_encoder_t e;
        jn_encoder_init(&e);
        server_stream(&e, early[k]);
        assert_int_equal(client_reads(c, e.data, e.size), JN_EPROTO);
        assert_int_equal(d.starts, 1);
        assert_int_equal(d.steps, 0);
        const jn_amqp_fault_t *f = jn_amqp_sasl_client_fault(c);
        assert_string_equal(f->condition, "amqp:illegal-state");
        if (!strstr(f->description, why[k]))
            fail_msg("%s: not %s", f->description, why[k]);
        size_t len;
        (void)jn_amqp_sasl_client_output(c, &len);
        assert_int_equal(len, 8); /* our header alone: no init went */
        jn_encoder_free(&e);
        jn_amqp_sasl_client_free(c);
    }
    defer_client_t d = {0};
    jn_amqp_sasl_client_config_t cfg = {.ops = &defer_ops, .ctx = &d};
    jn_amqp_sasl_client_t *c = jn_amqp_sasl_client_new(&cfg);
    jn_encoder_t e;
    jn_encoder_init(&e);
    server_stream(&e, 0);
    assert_int_equal(client_reads(c, e.data, e.size), 0);
    assert_int_equal(jn_amqp_sasl_client_resume(c, JN_EPROTO, NULL, NULL, 0), JN_EPROTO);
    assert_string_equal(jn_amqp_sasl_client_fault(c)->condition, "amqp:unauthorized-access");
    assert_non_null(strstr(jn_amqp_sasl_client_fault(c)->description, "no mechanism works"));
    jn_encoder_free(&e);
    jn_amqp_sasl_client_free(c);
}

static void test_client_refuses_a_wrong_header_and_frames_out_of_order(void **state)
{
    (void)state;
    jn_amqp_sasl_client_config_t cfg = {.user = NULL};
    jn_amqp_sasl_client_t *c = jn_amqp_sasl_client_new(&cfg);
    size_t len;
    const uint8_t *out = jn_amqp_sasl_client_output(c, &len);
    assert_int_equal(len, 8); /* our SASL header, first */
    assert_memory_equal(out, "AMQP\3\1\0\0", 8);
    assert_int_equal(client_reads(c, (const uint8_t *)"AMQP\0\1\0\0", 8), JN_EPROTO);
    assert_string_equal(jn_amqp_sasl_client_fault(c)->condition, "amqp:connection:framing-error");
    jn_amqp_sasl_client_free(c);

    /* an outcome before our init: the server's header, then sasl-outcome */
    c = jn_amqp_sasl_client_new(&cfg);
    jn_encoder_t e;
    jn_encoder_init(&e);
    uint8_t h[8];
    jn_amqp_header_write(h, JN_AMQP_PROTO_SASL);
    jn_enc_raw(&e, h, 8);
    size_t start = jn_amqp_frame_begin(&e, JN_AMQP_FRAME_SASL, 0);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_SASL_OUTCOME);
    p.u.sasl.present = JN_AMQP_FIELD(0);
    p.u.sasl.code = 0;
    assert_int_equal(jn_amqp_perf_encode(&e, &p), 0);
    assert_int_equal(jn_amqp_frame_end(&e, start, 512), 0);
    assert_int_equal(client_reads(c, e.data, e.size), JN_EPROTO);
    assert_string_equal(jn_amqp_sasl_client_fault(c)->condition, "amqp:illegal-state");
    assert_false(jn_amqp_sasl_client_done(c));
    jn_encoder_free(&e);
    jn_amqp_sasl_client_free(c);
}

/* ---- the transport's client role against proton's server --------------- */

typedef struct peer {
    pn_connection_driver_t d;
    bool opened; /* the client's open reached proton */
    char error[128];
} peer_t;

static bool our_open_seen;

static void on_open(void *ctx, jn_amqp_conn_t *c, const jn_amqp_open_t *o)
{
    (void)ctx;
    (void)c;
    (void)o;
    our_open_seen = true;
}

static void peer_events(peer_t *p)
{
    pn_event_t *e;
    while ((e = pn_connection_driver_next_event(&p->d)) != NULL) {
        if (pn_event_type(e) == PN_CONNECTION_REMOTE_OPEN) {
            p->opened = true;
            pn_connection_open(p->d.connection);
        }
        if (pn_event_type(e) == PN_TRANSPORT_ERROR) {
            pn_condition_t *cond = pn_transport_condition(p->d.transport);
            snprintf(p->error, sizeof p->error, "%s", pn_condition_get_name(cond));
        }
    }
}

/* Move octets both ways until nothing moves. */
static void pump(jn_amqp_transport_t *t, peer_t *p, size_t piece)
{
    for (int round = 0; round < 10000; round++) {
        bool moved = false;
        peer_events(p);
        pn_bytes_t out = pn_connection_driver_write_buffer(&p->d);
        if (out.size > 0 && !jn_amqp_transport_finished(t)) {
            size_t n = out.size < piece ? out.size : piece;
            struct iovec iov[4];
            int k = jn_amqp_transport_read_space(t, iov, 4, n);
            size_t done = 0;
            for (int i = 0; i < k && done < n; i++) {
                size_t m = n - done < iov[i].iov_len ? n - done : iov[i].iov_len;
                memcpy(iov[i].iov_base, out.start + done, m);
                done += m;
            }
            jn_amqp_transport_read_done(t, done);
            pn_connection_driver_write_done(&p->d, done);
            int rc = jn_amqp_transport_process(t, 0);
            assert_true(rc == 0 || rc == JN_EPROTO);
            moved = true;
        }
        struct iovec iov[8];
        int k = jn_amqp_transport_output_iov(t, iov, 8);
        size_t written = 0;
        for (int i = 0; i < k; i++) {
            pn_rwbytes_t in = pn_connection_driver_read_buffer(&p->d);
            size_t m = iov[i].iov_len < in.size ? iov[i].iov_len : in.size;
            m = m < piece ? m : piece;
            if (m == 0)
                break;
            memcpy(in.start, iov[i].iov_base, m);
            pn_connection_driver_read_done(&p->d, m);
            written += m;
            if (m < iov[i].iov_len)
                break;
        }
        if (written) {
            jn_amqp_transport_output_done(t, written);
            moved = true;
        }
        if (!moved && !pn_connection_driver_has_event(&p->d))
            return;
    }
    fail_msg("the pump did not settle");
}

static void peer_init(peer_t *p)
{
    memset(p, 0, sizeof *p);
    assert_int_equal(pn_connection_driver_init(&p->d, NULL, NULL), 0);
    pn_transport_set_server(p->d.transport);
    pn_sasl(p->d.transport); /* SASL on: proton's built-in server mechanisms */
    pn_connection_set_container(p->d.connection, "proton-server");
    pn_connection_driver_bind(&p->d);
}

static jn_amqp_transport_t *client_transport(const jn_amqp_sasl_client_config_t *sasl)
{
    jn_amqp_conn_config_t cfg = {
        .container_id = "router", .max_frame_size = 16384, .channel_max = 7};
    jn_amqp_handler_t h = {.on_open = on_open};
    jn_amqp_transport_t *t = jn_amqp_transport_new_client(&cfg, &h, sasl);
    assert_non_null(t);
    assert_int_equal(jn_amqp_transport_set_sasl(t, NULL, NULL, false), JN_EINVAL);
    /* open at once: its frames wait for the SASL outcome */
    assert_int_equal(jn_amqp_conn_open(jn_amqp_transport_conn(t)), 0);
    return t;
}

static void test_transport_client_role_against_proton_anonymous(void **state)
{
    (void)state;
    const size_t sizes[] = {1, 7, 65536};
    for (size_t i = 0; i < 3; i++) {
        our_open_seen = false;
        peer_t p;
        peer_init(&p);
        jn_amqp_sasl_client_config_t sasl = {.hostname = "localhost"};
        jn_amqp_transport_t *t = client_transport(&sasl);
        pump(t, &p, sizes[i]);
        assert_string_equal(p.error, "");
        assert_true(p.opened);
        assert_true(our_open_seen); /* proton's open reached our AMQP layer */
        assert_string_equal(pn_sasl_get_mech(pn_sasl(p.d.transport)), "ANONYMOUS");
        assert_string_equal(jn_amqp_transport_sasl_mechanism(t), "ANONYMOUS");
        assert_null(jn_amqp_transport_user(t));
        assert_null(jn_amqp_transport_fault(t)->condition);
        assert_int_equal(jn_amqp_transport_held(t), 0);
        jn_amqp_transport_free(t);
        pn_connection_driver_destroy(&p.d);
    }
}

static void test_transport_client_role_without_sasl_against_proton(void **state)
{
    (void)state;
    our_open_seen = false;
    peer_t p;
    memset(&p, 0, sizeof p);
    assert_int_equal(pn_connection_driver_init(&p.d, NULL, NULL), 0);
    pn_transport_set_server(p.d.transport);
    pn_connection_driver_bind(&p.d);
    jn_amqp_transport_t *t = client_transport(NULL);
    pump(t, &p, 7);
    assert_true(p.opened);
    assert_true(our_open_seen);
    assert_null(jn_amqp_transport_sasl_mechanism(t));
    jn_amqp_transport_free(t);
    pn_connection_driver_destroy(&p.d);
}

static void test_transport_client_role_plain_only_finds_nothing_in_proton(void **state)
{
    (void)state;
    our_open_seen = false;
    peer_t p;
    peer_init(&p);
    jn_amqp_sasl_client_config_t sasl = {
        .mechanisms = "PLAIN", .user = "carol", .password = "secret"};
    jn_amqp_transport_t *t = client_transport(&sasl);
    pump(t, &p, 100);
    assert_true(jn_amqp_transport_finished(t));
    assert_string_equal(jn_amqp_transport_fault(t)->condition, "amqp:unauthorized-access");
    assert_false(p.opened); /* our open never went */
    assert_false(our_open_seen);
    jn_amqp_transport_free(t);
    pn_connection_driver_destroy(&p.d);
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
        cmocka_unit_test(test_client_plain_with_a_user_and_password),
        cmocka_unit_test(test_client_anonymous_without_credentials),
        cmocka_unit_test(test_client_external_only_when_listed),
        cmocka_unit_test(test_client_wrong_password_gets_outcome_auth),
        cmocka_unit_test(test_client_backend_challenge_rounds_and_the_servers_proof),
        cmocka_unit_test(test_client_refuses_a_wrong_header_and_frames_out_of_order),
        cmocka_unit_test(test_client_backend_answers_later),
        cmocka_unit_test(test_client_frames_while_the_start_is_pending),
        cmocka_unit_test(test_transport_client_role_against_proton_anonymous),
        cmocka_unit_test(test_transport_client_role_without_sasl_against_proton),
        cmocka_unit_test(test_transport_client_role_plain_only_finds_nothing_in_proton),
        cmocka_unit_test(test_no_leak),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    jn_pool_shutdown();
    return failed;
}
