/*
 * sasl.c — the engine's SASL layer, server end, mechanism ANONYMOUS (AMQP
 * 1.0 part 5, 5.3; RFC 4505). It reads the peer's SASL header and frames in
 * place with stage 1's header and frame readers and decoder, answers with
 * our header, sasl-mechanisms and sasl-outcome, and stops at the exact end
 * of the peer's last SASL frame so that the AMQP layer reads the rest. The
 * contract is in junction/amqp_sasl.h.
 */
#include "amqp_private.h"

#include <junction/amqp_sasl.h>

#include <stdlib.h>
#include <string.h>

/* The one mechanism offered (RFC 4505). */
#define MECH_ANONYMOUS "ANONYMOUS"

/* sasl-outcome codes (5.3.3.6). */
enum { OUTCOME_OK = 0, OUTCOME_AUTH = 1 };

struct jn_amqp_sasl_server {
    jn_encoder_t out; /* composed and not yet taken from taken on */
    size_t taken;
    bool started;     /* our header and mechanisms are in the output */
    bool header_rcvd; /* the peer's SASL header was read */
    bool done;        /* outcome ok composed */
    bool refused;     /* the peer's input was refused: fault says why */
    jn_amqp_fault_t fault;
};

jn_amqp_sasl_server_t *jn_amqp_sasl_server_new(void)
{
    jn_amqp_sasl_server_t *s = calloc(1, sizeof *s);
    if (s)
        jn_encoder_init(&s->out);
    return s;
}

void jn_amqp_sasl_server_free(jn_amqp_sasl_server_t *s)
{
    if (!s)
        return;
    jn_encoder_free(&s->out);
    free(s);
}

/* One SASL frame with body p (5.3.1: channel 0; it fits in 512 octets). */
static int send_frame(jn_amqp_sasl_server_t *s, const jn_amqp_perf_t *p)
{
    size_t start = jn_amqp_frame_begin(&s->out, JN_AMQP_FRAME_SASL, 0);
    int rc = jn_amqp_perf_encode(&s->out, p);
    if (rc == 0)
        rc = jn_amqp_frame_end(&s->out, start, JN_AMQP_MIN_MAX_FRAME_SIZE);
    return rc;
}

int jn_amqp_sasl_server_start(jn_amqp_sasl_server_t *s)
{
    if (s->started)
        return 0;
    uint8_t h[JN_AMQP_HEADER_SIZE];
    jn_amqp_header_write(h, JN_AMQP_PROTO_SASL);
    jn_enc_raw(&s->out, h, sizeof h);
    /* sasl-server-mechanisms is multiple symbols: one symbol stands for an
     * array of one (1.6.22 "multiple") */
    uint8_t mech[2 + sizeof MECH_ANONYMOUS - 1] = {JN_AMQP_SYM8, sizeof MECH_ANONYMOUS - 1};
    memcpy(mech + 2, MECH_ANONYMOUS, sizeof MECH_ANONYMOUS - 1);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_SASL_MECHANISMS);
    p.u.sasl.present = JN_AMQP_FIELD(0);
    jn_iter_init_bytes(&p.u.sasl.mechanisms, mech, sizeof mech, JN_VIEW_RAW);
    int rc = send_frame(s, &p);
    if (rc != 0)
        return rc == JN_ENOMEM ? JN_ENOMEM : rc;
    s->started = true;
    return 0;
}

static int outcome(jn_amqp_sasl_server_t *s, uint8_t code)
{
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_SASL_OUTCOME);
    p.u.sasl.present = JN_AMQP_FIELD(0);
    p.u.sasl.code = code;
    return send_frame(s, &p);
}

/* Refuse the peer's input: the fault is set; what is in the output goes. */
static int refuse(jn_amqp_sasl_server_t *s, int rc)
{
    s->refused = true;
    return rc == JN_ENOMEM ? JN_ENOMEM : JN_EPROTO;
}

/* The peer's sasl-init (5.3.3.2): ANONYMOUS succeeds whatever its
 * initial-response (RFC 4505: optional trace information, not checked). */
static int init_input(jn_amqp_sasl_server_t *s, const jn_amqp_sasl_t *init)
{
    if (jn_iter_equal(&init->mechanism, MECH_ANONYMOUS)) {
        int rc = outcome(s, OUTCOME_OK);
        if (rc != 0)
            return refuse(s, rc);
        s->done = true;
        return 1;
    }
    char mech[64];
    jn_iter_copy_string(&init->mechanism, mech, sizeof mech);
    (void)jn_amqp_fail(&s->fault, "amqp:unauthorized-access",
                       "SASL mechanism '%s' is not offered on this connection (ANONYMOUS is)",
                       mech);
    return refuse(s, outcome(s, OUTCOME_AUTH));
}

/* One whole SASL frame (5.3.1): only sasl-init is the client's to send
 * before the outcome (5.3.2: the server offers no challenge for
 * ANONYMOUS). */
static int frame_input(jn_amqp_sasl_server_t *s, const jn_amqp_frame_t *f)
{
    if (f->body_size == 0)
        return 0; /* an empty frame carries nothing (2.3.2) */
    jn_amqp_perf_t p;
    if (jn_amqp_perf_decode(&f->body, JN_AMQP_FRAME_SASL, &p, NULL, &s->fault) != 0)
        return refuse(s, JN_EPROTO);
    if (p.code != JN_AMQP_SASL_INIT) {
        (void)jn_amqp_fail(&s->fault, "amqp:illegal-state",
                           "a %s frame where the client's sasl-init belongs",
                           jn_amqp_perf_name(p.code));
        return refuse(s, JN_EPROTO);
    }
    return init_input(s, &p.u.sasl);
}

/* The peer's protocol header (5.3.1, 2.2): SASL 1.0.0 id 3 only; anything
 * else is answered with ours and nothing more. */
static int header_input(jn_amqp_sasl_server_t *s, jn_iter_t *it)
{
    jn_amqp_proto_t proto = JN_AMQP_PROTO_SASL;
    int rc = jn_amqp_header_read(it, &proto, &s->fault);
    if (rc == JN_AGAIN)
        return JN_AGAIN;
    if (rc == JN_AMQP_HEADER_SIZE && proto != JN_AMQP_PROTO_SASL)
        rc = jn_amqp_fail(&s->fault, "amqp:connection:framing-error",
                          "protocol header with protocol id %d where SASL (3) belongs", proto);
    if (rc < 0) {
        uint8_t h[JN_AMQP_HEADER_SIZE];
        jn_amqp_header_write(h, JN_AMQP_PROTO_SASL);
        if (!s->started) /* ours, and nothing more (2.2) */
            jn_enc_raw(&s->out, h, sizeof h);
        return refuse(s, jn_encoder_error(&s->out));
    }
    jn_iter_advance(it, JN_AMQP_HEADER_SIZE);
    s->header_rcvd = true;
    rc = jn_amqp_sasl_server_start(s);
    return rc != 0 ? refuse(s, rc) : 0;
}

int jn_amqp_sasl_server_input(jn_amqp_sasl_server_t *s, const jn_iter_t *in, size_t *consumed)
{
    size_t len = jn_iter_length(in);
    *consumed = 0;
    if (s->done)
        return 1;
    if (s->refused) {
        *consumed = len;
        return JN_EPROTO;
    }
    jn_iter_t it = *in;
    int rc = s->header_rcvd ? 0 : header_input(s, &it);
    while (rc == 0) {
        jn_amqp_frame_t f;
        rc = jn_amqp_frame_read(&it, JN_AMQP_FRAME_SASL, JN_AMQP_MIN_MAX_FRAME_SIZE, 0, &f,
                                &s->fault);
        if (rc == JN_AGAIN)
            break;
        if (rc < 0) {
            rc = refuse(s, rc);
            break;
        }
        jn_iter_advance(&it, f.size);
        rc = frame_input(s, &f);
    }
    if (rc == JN_AGAIN)
        rc = 0;
    *consumed = s->refused ? len : len - jn_iter_length(&it);
    return rc;
}

const uint8_t *jn_amqp_sasl_server_output(jn_amqp_sasl_server_t *s, size_t *len)
{
    *len = s->out.size - s->taken;
    return *len ? s->out.data + s->taken : NULL;
}

void jn_amqp_sasl_server_output_done(jn_amqp_sasl_server_t *s, size_t n)
{
    size_t left = s->out.size - s->taken;
    s->taken += n < left ? n : left;
    if (s->taken == s->out.size) { /* all written: start the area afresh */
        s->out.size = 0;
        s->taken = 0;
    }
}

bool jn_amqp_sasl_server_done(const jn_amqp_sasl_server_t *s)
{
    return s->done;
}

const char *jn_amqp_sasl_server_user(const jn_amqp_sasl_server_t *s)
{
    return s->done ? JN_AMQP_SASL_ANONYMOUS_USER : NULL;
}

const jn_amqp_fault_t *jn_amqp_sasl_server_fault(const jn_amqp_sasl_server_t *s)
{
    return &s->fault;
}
