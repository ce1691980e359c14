/*
 * sasl.c — the engine's SASL layer, server end (AMQP 1.0 part 5, 5.3):
 * ANONYMOUS built in (RFC 4505), every other mechanism a backend's. It
 * reads the peer's SASL header and frames in place with stage 1's header
 * and frame readers and decoder, answers with our header, sasl-mechanisms,
 * the backend's challenges and sasl-outcome, and stops at the exact end of
 * the peer's last SASL frame so that the AMQP layer reads the rest. The
 * contract is in junction/amqp_sasl.h.
 */
#include "amqp_private.h"

#include <junction/amqp_sasl.h>

#include <stdlib.h>
#include <string.h>

/* The built-in mechanism (RFC 4505). */
#define MECH_ANONYMOUS "ANONYMOUS"

/* The longest mechanism name (RFC 4422 3.1: 20 characters). */
#define MECH_MAX 64

struct jn_amqp_sasl_server {
    jn_encoder_t out; /* composed and not yet taken from taken on */
    size_t taken;
    const jn_amqp_sasl_mech_ops_t *ops; /* NULL: ANONYMOUS only */
    void *ctx;                          /* the backend's (owned) */
    jn_encoder_t mechs;                 /* sasl-server-mechanisms, encoded */
    bool anonymous;                     /* ANONYMOUS is offered */
    bool started;                       /* our header and mechanisms are in the output */
    bool header_rcvd;                   /* the peer's SASL header was read */
    bool init_rcvd;                     /* the peer's sasl-init was read */
    bool challenged;                    /* a challenge awaits the peer's response */
    bool done;                          /* outcome ok composed */
    bool refused;                       /* the peer's input was refused: fault says why */
    bool offer_pending;                 /* the backend's offer is not known yet */
    bool start_wanted;                  /* our header and mechanisms go once it is */
    bool step_pending;                  /* a start or step answered PENDING */
    char mech[MECH_MAX];                /* the mechanism the peer chose */
    char *user;                         /* a backend's user (owned) */
    uint32_t max_frame;                 /* the largest SASL frame, in and out */
    jn_amqp_sasl_scratch_t scratch;     /* the peer's response, contiguous */
    jn_amqp_fault_t fault;
};

/* The offer as sasl-server-mechanisms (multiple symbols, 1.6.22): one
 * symbol alone, an array for more, an empty array for none. */
static int encode_mechs(jn_amqp_sasl_server_t *s, const char *list)
{
    size_t n = 0;
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, " ");
        n += k > 0;
        p += k + (p[k] == ' ');
    }
    if (n != 1)
        jn_enc_array_begin(&s->mechs, JN_AMQP_SYM8);
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, " ");
        if (k > 0)
            jn_enc_symbol(&s->mechs, p, k);
        if (k == sizeof MECH_ANONYMOUS - 1 && memcmp(p, MECH_ANONYMOUS, k) == 0)
            s->anonymous = true;
        p += k + (p[k] == ' ');
    }
    if (n != 1)
        jn_enc_array_end(&s->mechs);
    return jn_encoder_error(&s->mechs);
}

jn_amqp_sasl_server_t *jn_amqp_sasl_server_new_with(const jn_amqp_sasl_mech_ops_t *ops, void *ctx)
{
    jn_amqp_sasl_server_t *s = calloc(1, sizeof *s);
    if (!s) {
        if (ops && ops->free)
            ops->free(ctx);
        return NULL;
    }
    jn_encoder_init(&s->out);
    jn_encoder_init(&s->mechs);
    s->ops = ops;
    s->ctx = ctx;
    s->max_frame = JN_AMQP_MIN_MAX_FRAME_SIZE;
    const char *list = ops ? ops->mechanisms(ctx) : MECH_ANONYMOUS;
    s->offer_pending = list == NULL; /* the backend says when: _offer_ready */
    if (list && encode_mechs(s, list) != 0) {
        jn_amqp_sasl_server_free(s);
        return NULL;
    }
    return s;
}

jn_amqp_sasl_server_t *jn_amqp_sasl_server_new(void)
{
    return jn_amqp_sasl_server_new_with(NULL, NULL);
}

void jn_amqp_sasl_server_free(jn_amqp_sasl_server_t *s)
{
    if (!s)
        return;
    if (s->ops && s->ops->free)
        s->ops->free(s->ctx);
    jn_encoder_free(&s->out);
    jn_encoder_free(&s->mechs);
    free(s->user);
    jn_amqp_sasl_scratch_free(&s->scratch);
    free(s);
}

void jn_amqp_sasl_server_set_max_frame(jn_amqp_sasl_server_t *s, uint32_t max_frame)
{
    s->max_frame = jn_amqp_sasl_bound(max_frame);
}

/* One SASL frame with body p (5.3.1: channel 0), within our bound. */
static int send_frame(jn_amqp_sasl_server_t *s, const jn_amqp_perf_t *p)
{
    return jn_amqp_sasl_send(&s->out, p, s->max_frame);
}

int jn_amqp_sasl_server_start(jn_amqp_sasl_server_t *s)
{
    if (s->started)
        return 0;
    if (s->offer_pending) {
        s->start_wanted = true; /* sent by jn_amqp_sasl_server_offer_ready */
        return 0;
    }
    uint8_t h[JN_AMQP_HEADER_SIZE];
    jn_amqp_header_write(h, JN_AMQP_PROTO_SASL);
    jn_enc_raw(&s->out, h, sizeof h);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_SASL_MECHANISMS);
    p.u.sasl.present = JN_AMQP_FIELD(0);
    jn_iter_init_bytes(&p.u.sasl.mechanisms, s->mechs.data, s->mechs.size, JN_VIEW_RAW);
    int rc = send_frame(s, &p);
    if (rc != 0)
        return rc == JN_ENOMEM ? JN_ENOMEM : rc;
    s->started = true;
    return 0;
}

/* sasl-outcome with code and, for ok, the backend's additional-data. */
static int outcome(jn_amqp_sasl_server_t *s, uint8_t code, const uint8_t *data, size_t len)
{
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_SASL_OUTCOME);
    p.u.sasl.present = JN_AMQP_FIELD(0);
    p.u.sasl.code = code;
    if (code == JN_AMQP_SASL_OUTCOME_OK && len > 0) {
        p.u.sasl.present |= JN_AMQP_FIELD(1);
        jn_iter_init_bytes(&p.u.sasl.additional_data, data, len, JN_VIEW_RAW);
    }
    return send_frame(s, &p);
}

/* Refuse the peer's input: the fault is set; what is in the output goes. */
static int refuse(jn_amqp_sasl_server_t *s, int rc)
{
    s->refused = true;
    return rc == JN_ENOMEM ? JN_ENOMEM : JN_EPROTO;
}

/* Success: outcome ok (with data), the user kept. Returns 1. */
static int succeed(jn_amqp_sasl_server_t *s, const char *user, const uint8_t *data, size_t len)
{
    if (!(s->user = strdup(user ? user : "")))
        return refuse(s, JN_ENOMEM);
    int rc = outcome(s, JN_AMQP_SASL_OUTCOME_OK, data, len);
    if (rc != 0)
        return refuse(s, rc);
    s->done = true;
    return 1;
}

/* A backend's answer rc to start or step: a challenge, success or a
 * refusal (its outcome code). Returns 0 (a challenge went), 1 or a
 * refusal's result. */
static int backend_answer(jn_amqp_sasl_server_t *s, int rc, const uint8_t *out, size_t len)
{
    if (rc == JN_AMQP_SASL_STEP_PENDING) {
        s->step_pending = true; /* the answer comes by jn_amqp_sasl_server_resume */
        return 0;
    }
    if (rc == JN_AMQP_SASL_STEP_CHALLENGE) {
        jn_amqp_perf_t p;
        jn_amqp_perf_init(&p, JN_AMQP_SASL_CHALLENGE);
        p.u.sasl.present = JN_AMQP_FIELD(0);
        jn_iter_init_bytes(&p.u.sasl.challenge, len ? out : (const uint8_t *)"", len, JN_VIEW_RAW);
        int e = send_frame(s, &p);
        if (e != 0) {
            (void)jn_amqp_fail(&s->fault, "amqp:internal-error",
                               "the SASL %s challenge does not fit in a SASL frame", s->mech);
            return refuse(s, e);
        }
        s->challenged = true;
        return 0;
    }
    if (rc == JN_AMQP_SASL_OUTCOME_OK)
        return succeed(s, s->ops->user(s->ctx), out, len);
    if (rc < 0) { /* no memory: a temporary system error, as far as the peer knows */
        (void)jn_amqp_fail(&s->fault, "amqp:resource-limit-exceeded", "SASL %s: out of memory",
                           s->mech);
        (void)outcome(s, JN_AMQP_SASL_OUTCOME_SYS_TEMP, NULL, 0);
        return refuse(s, rc);
    }
    uint8_t code = rc >= JN_AMQP_SASL_OUTCOME_AUTH && rc <= JN_AMQP_SASL_OUTCOME_SYS_TEMP
                       ? (uint8_t)rc
                       : JN_AMQP_SASL_OUTCOME_SYS;
    (void)jn_amqp_fail(&s->fault, "amqp:unauthorized-access",
                       "SASL %s authentication failed (outcome %d)", s->mech, code);
    return refuse(s, outcome(s, code, NULL, 0));
}

/* Is mech one of those offered? */
static bool offered(const jn_amqp_sasl_server_t *s, const char *mech)
{
    if (strcmp(mech, MECH_ANONYMOUS) == 0)
        return s->anonymous;
    if (!s->ops || !mech[0])
        return false;
    const char *list = s->ops->mechanisms(s->ctx);
    size_t n = strlen(mech);
    for (const char *p = list ? list : ""; *p;) {
        size_t k = strcspn(p, " ");
        if (k == n && memcmp(p, mech, n) == 0)
            return true;
        p += k + (p[k] == ' ');
    }
    return false;
}

/* A binary field's octets, contiguous (the input may span buffers), in
 * the layer's scratch; NULL (the fault set) when memory runs out. */
static const uint8_t *field_octets(jn_amqp_sasl_server_t *s, const jn_iter_t *f, size_t *len)
{
    const uint8_t *p = jn_amqp_sasl_flat(&s->scratch, f, len);
    if (!p)
        (void)jn_amqp_fail(&s->fault, "amqp:resource-limit-exceeded", "SASL %s: out of memory",
                           s->mech);
    return p;
}

/* The peer's sasl-init (5.3.3.2): ANONYMOUS succeeds whatever its
 * initial-response (RFC 4505: optional trace information, not checked);
 * another mechanism offered goes to the backend. */
static int init_input(jn_amqp_sasl_server_t *s, const jn_amqp_sasl_t *init)
{
    s->init_rcvd = true;
    size_t n = jn_iter_length(&init->mechanism);
    jn_iter_copy_string(&init->mechanism, s->mech, sizeof s->mech);
    if (n < sizeof s->mech && offered(s, s->mech)) {
        if (strcmp(s->mech, MECH_ANONYMOUS) == 0)
            return succeed(s, JN_AMQP_SASL_ANONYMOUS_USER, NULL, 0);
        size_t len = 0;
        const uint8_t *resp = NULL;
        if ((init->present & JN_AMQP_FIELD(1)) &&
            !(resp = field_octets(s, &init->initial_response, &len)))
            return refuse(s, JN_ENOMEM);
        const uint8_t *out = NULL;
        size_t out_len = 0;
        int rc = s->ops->start(s->ctx, s->mech, resp, len, &out, &out_len);
        return backend_answer(s, rc, out, out_len);
    }
    (void)jn_amqp_fail(&s->fault, "amqp:unauthorized-access",
                       "SASL mechanism '%s' is not offered on this connection", s->mech);
    return refuse(s, outcome(s, JN_AMQP_SASL_OUTCOME_AUTH, NULL, 0));
}

/* The peer's sasl-response (5.3.3.4) to our challenge. */
static int response_input(jn_amqp_sasl_server_t *s, const jn_amqp_sasl_t *r)
{
    s->challenged = false;
    size_t len = 0;
    const uint8_t *resp = field_octets(s, &r->response, &len);
    if (!resp)
        return refuse(s, JN_ENOMEM);
    const uint8_t *out = NULL;
    size_t out_len = 0;
    int rc = s->ops->step(s->ctx, resp, len, &out, &out_len);
    return backend_answer(s, rc, out, out_len);
}

/* One whole SASL frame (5.3.1): the client's sasl-init first, then a
 * sasl-response to each challenge (5.3.2); nothing else. */
static int frame_input(jn_amqp_sasl_server_t *s, const jn_amqp_frame_t *f)
{
    if (f->body_size == 0)
        return 0; /* an empty frame carries nothing (2.3.2) */
    jn_amqp_perf_t p;
    if (jn_amqp_perf_decode(&f->body, JN_AMQP_FRAME_SASL, &p, NULL, &s->fault) != 0)
        return refuse(s, JN_EPROTO);
    if (p.code == JN_AMQP_SASL_INIT && !s->init_rcvd)
        return init_input(s, &p.u.sasl);
    if (p.code == JN_AMQP_SASL_RESPONSE && s->challenged)
        return response_input(s, &p.u.sasl);
    (void)jn_amqp_fail(&s->fault, "amqp:illegal-state", "a %s frame where the client's %s belongs",
                       jn_amqp_perf_name(p.code), s->init_rcvd ? "sasl-response" : "sasl-init");
    return refuse(s, JN_EPROTO);
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
    /* while the offer or an answer is pending, the peer's frames wait */
    while (rc == 0 && !s->offer_pending && !s->step_pending) {
        jn_amqp_frame_t f;
        rc = jn_amqp_frame_read(&it, JN_AMQP_FRAME_SASL, s->max_frame, 0, &f, &s->fault);
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

int jn_amqp_sasl_server_offer_ready(jn_amqp_sasl_server_t *s)
{
    if (!s->offer_pending)
        return 0;
    const char *list = s->ops->mechanisms(s->ctx);
    if (!list)
        return JN_EINVAL;
    s->offer_pending = false;
    if (encode_mechs(s, list) != 0)
        return refuse(s, JN_ENOMEM);
    if (!s->start_wanted && !s->header_rcvd)
        return 0;
    int rc = jn_amqp_sasl_server_start(s);
    return rc != 0 ? refuse(s, rc) : 0;
}

int jn_amqp_sasl_server_resume(jn_amqp_sasl_server_t *s, int rc, const uint8_t *out, size_t len)
{
    if (!s->step_pending || rc == JN_AMQP_SASL_STEP_PENDING)
        return JN_EINVAL;
    s->step_pending = false;
    if (s->refused)
        return JN_EPROTO;
    return backend_answer(s, rc, out, len);
}

int jn_amqp_sasl_server_refuse(jn_amqp_sasl_server_t *s, int code)
{
    if (s->done || s->refused || s->offer_pending || s->step_pending ||
        code < JN_AMQP_SASL_OUTCOME_AUTH || code > JN_AMQP_SASL_OUTCOME_SYS_TEMP)
        return JN_EINVAL;
    int rc = jn_amqp_sasl_server_start(s);
    if (rc == 0)
        rc = outcome(s, (uint8_t)code, NULL, 0);
    (void)jn_amqp_fail(&s->fault, "amqp:unauthorized-access",
                       "SASL authentication failed (outcome %d, before the client's answer)", code);
    return refuse(s, rc);
}

bool jn_amqp_sasl_server_pending(const jn_amqp_sasl_server_t *s)
{
    return s->offer_pending || s->step_pending;
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
    return s->done ? s->user : NULL;
}

const char *jn_amqp_sasl_server_mechanism(const jn_amqp_sasl_server_t *s)
{
    return s->done ? s->mech : NULL;
}

const jn_amqp_fault_t *jn_amqp_sasl_server_fault(const jn_amqp_sasl_server_t *s)
{
    return &s->fault;
}

/* ---- shared by both ends (amqp_private.h) ------------------------------- */

const uint8_t *jn_amqp_sasl_flat(jn_amqp_sasl_scratch_t *sc, const jn_iter_t *f, size_t *len)
{
    size_t n = jn_iter_length(f);
    *len = 0;
    if (n == 0)
        return (const uint8_t *)"";
    if (n > sc->cap) {
        uint8_t *d = malloc(n); /* not realloc: the old octets are wiped first */
        if (!d)
            return NULL;
        jn_amqp_sasl_scratch_free(sc);
        sc->data = d;
        sc->cap = n;
    }
    jn_iter_t it = *f;
    *len = jn_iter_copy(&it, sc->data, n);
    return sc->data;
}

void jn_amqp_sasl_scratch_free(jn_amqp_sasl_scratch_t *sc)
{
    if (sc->data)
        explicit_bzero(sc->data, sc->cap);
    free(sc->data);
    sc->data = NULL;
    sc->cap = 0;
}

int jn_amqp_sasl_send(jn_encoder_t *out, const jn_amqp_perf_t *p, uint32_t max_frame)
{
    size_t start = jn_amqp_frame_begin(out, JN_AMQP_FRAME_SASL, 0);
    int rc = jn_amqp_perf_encode(out, p);
    if (rc == 0)
        rc = jn_amqp_frame_end(out, start, max_frame);
    if (rc == JN_EOVERFLOW)
        out->size = start; /* taken back: what was composed before stays whole */
    return rc;
}
