/*
 * sasl_client.c — the engine's SASL layer, client end (AMQP 1.0 part 5,
 * 5.3): our SASL header first, the server's header and sasl-mechanisms
 * read in place, our choice among ANONYMOUS, PLAIN and EXTERNAL (or a
 * mechanism backend's choice and its responses to each challenge) sent as
 * sasl-init with its initial response, the outcome read, and the exact end
 * of the server's last SASL frame reported so that the AMQP layer reads
 * the rest. The contract is in junction/amqp_sasl.h.
 */
#include "amqp_private.h"

#include <junction/amqp_sasl.h>
#include <junction/decoder.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The mechanisms built in, and the order used without a configured list. */
#define MECH_ANONYMOUS "ANONYMOUS"
#define MECH_PLAIN     "PLAIN"
#define MECH_EXTERNAL  "EXTERNAL"

struct jn_amqp_sasl_client {
    jn_encoder_t out; /* composed and not yet taken from taken on */
    size_t taken;
    char *mechanisms, *user, *password, *hostname; /* the config (owned) */
    bool header_rcvd;                              /* the server's SASL header was read */
    bool init_sent;                                /* our sasl-init is in the output */
    bool done;                                     /* outcome ok read */
    bool failed;                                   /* fault says why */
    bool mechs_rcvd;                               /* the server's sasl-mechanisms were read */
    bool pending;                                  /* the backend's start or step answers later */
    char mech[24];                                 /* the mechanism chosen */
    jn_amqp_sasl_scratch_t resp;                   /* the next response (init's, a challenge's) */
    size_t resp_len;
    jn_amqp_sasl_scratch_t in;                     /* a challenge or outcome data, contiguous */
    uint32_t max_frame;                            /* the largest SASL frame, in and out */
    bool resp_absent;                              /* sasl-init without one */
    const jn_amqp_sasl_client_mech_ops_t *ops;     /* a backend, or NULL */
    void *ctx;                                     /* ops's (owned) */
    jn_amqp_fault_t fault;
};

static char *dup_or_null(const char *s, bool *nomem)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    *nomem = *nomem || !d;
    return d;
}

static int send_frame(jn_amqp_sasl_client_t *c, const jn_amqp_perf_t *p)
{
    return jn_amqp_sasl_send(&c->out, p, c->max_frame);
}

/* Keep len octets from p (NULL: none; they may lie in c->in) as the next
 * response. False when memory runs out or they could not fit in a frame. */
static bool set_response(jn_amqp_sasl_client_t *c, const uint8_t *p, size_t len)
{
    jn_iter_t it;
    jn_iter_init_bytes(&it, len ? p : (const uint8_t *)"", len, JN_VIEW_RAW);
    c->resp_len = 0;
    if (len > c->max_frame || !jn_amqp_sasl_flat(&c->resp, &it, &c->resp_len))
        return false;
    return true;
}

jn_amqp_sasl_client_t *jn_amqp_sasl_client_new(const jn_amqp_sasl_client_config_t *cfg)
{
    jn_amqp_sasl_client_t *c = calloc(1, sizeof *c);
    if (!c) {
        if (cfg->ops && cfg->ops->free)
            cfg->ops->free(cfg->ctx);
        return NULL;
    }
    jn_encoder_init(&c->out);
    c->ops = cfg->ops;
    c->ctx = cfg->ctx;
    c->max_frame = jn_amqp_sasl_bound(cfg->max_frame);
    bool nomem = false;
    c->mechanisms = dup_or_null(cfg->mechanisms, &nomem);
    c->user = dup_or_null(cfg->user, &nomem);
    c->password = dup_or_null(cfg->password, &nomem);
    c->hostname = dup_or_null(cfg->hostname, &nomem);
    uint8_t h[JN_AMQP_HEADER_SIZE];
    jn_amqp_header_write(h, JN_AMQP_PROTO_SASL);
    jn_enc_raw(&c->out, h, sizeof h);
    if (nomem || jn_encoder_error(&c->out)) {
        jn_amqp_sasl_client_free(c);
        return NULL;
    }
    return c;
}

void jn_amqp_sasl_client_free(jn_amqp_sasl_client_t *c)
{
    if (!c)
        return;
    if (c->password)
        explicit_bzero(c->password, strlen(c->password));
    jn_amqp_sasl_scratch_free(&c->resp);
    jn_amqp_sasl_scratch_free(&c->in);
    if (c->ops && c->ops->free)
        c->ops->free(c->ctx);
    jn_encoder_free(&c->out);
    free(c->mechanisms);
    free(c->user);
    free(c->password);
    free(c->hostname);
    free(c);
}

/* End the exchange: the fault is set by the caller. */
static int fail(jn_amqp_sasl_client_t *c, int rc)
{
    c->failed = true;
    return rc == JN_ENOMEM ? JN_ENOMEM : JN_EPROTO;
}

/* Can we use mech (n octets), and is it in our list? Its initial response
 * is composed into c->resp when so. */
static bool usable(jn_amqp_sasl_client_t *c, const char *mech, size_t n)
{
    bool plain_ok = c->user && c->password;
    if (n == sizeof MECH_PLAIN - 1 && strncasecmp(mech, MECH_PLAIN, n) == 0 && plain_ok) {
        size_t u = strlen(c->user), p = strlen(c->password);
        if (2 + u + p > c->max_frame)
            return false;
        uint8_t *d = malloc(2 + u + p); /* the response's own area, wiped as it goes */
        if (!d)
            return false;
        d[0] = 0; /* no authorization identity (RFC 4616) */
        memcpy(d + 1, c->user, u);
        d[1 + u] = 0;
        memcpy(d + 2 + u, c->password, p);
        bool ok = set_response(c, d, 2 + u + p);
        explicit_bzero(d, 2 + u + p);
        free(d);
        return ok;
    }
    if (n == sizeof MECH_ANONYMOUS - 1 && strncasecmp(mech, MECH_ANONYMOUS, n) == 0) {
        size_t u = c->user ? strlen(c->user) : 0; /* trace information (RFC 4505) */
        if (!set_response(c, (const uint8_t *)c->user, u))
            return set_response(c, NULL, 0); /* too long to trace: none */
        return true;
    }
    if (n == sizeof MECH_EXTERNAL - 1 && strncasecmp(mech, MECH_EXTERNAL, n) == 0) {
        c->resp_len = 0; /* the identity is the certificate's */
        return true;
    }
    return false;
}

/* Is f the symbol mech (n octets, any case)? */
static bool symbol_is(const jn_field_t *f, const char *mech, size_t n)
{
    char name[24];
    return f->type == JN_TYPE_SYMBOL && f->size == n && n < sizeof name &&
           jn_iter_copy_string(&f->payload, name, sizeof name) == n &&
           strncasecmp(name, mech, n) == 0;
}

/* Does the server's offer (sasl-server-mechanisms: a symbol, an array of
 * them, or null) name mech (n octets)? */
static bool offers(const jn_iter_t *offer, const char *mech, size_t n)
{
    jn_decoder_t d, items;
    jn_field_t f, e;
    jn_decoder_init(&d, offer, true);
    if (jn_decoder_next(&d, &f) != 1)
        return false;
    if (f.type != JN_TYPE_ARRAY)
        return symbol_is(&f, mech, n);
    if (jn_decoder_enter(&d, &f, &items) != 0)
        return false;
    while (jn_decoder_next(&items, &e) == 1)
        if (symbol_is(&e, mech, n))
            return true;
    return false;
}

/* Choose our mechanism from the offer, in our order. True when found
 * (c->mech and c->resp set). */
static bool choose(jn_amqp_sasl_client_t *c, const jn_iter_t *offer)
{
    const char *order = c->mechanisms ? c->mechanisms : "PLAIN ANONYMOUS";
    for (const char *p = order; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, " ,");
        char name[24];
        if (n > 0 && n < sizeof name) {
            memcpy(name, p, n);
            name[n] = '\0';
            if (offers(offer, name, n) && usable(c, name, n)) {
                /* the mechanism's own spelling, whatever the list's case
                 * ("anonymous" configured: ANONYMOUS in the sasl-init) */
                for (size_t i = 0; i <= n; i++)
                    c->mech[i] = (char)toupper((unsigned char)name[i]);
                return true;
            }
        }
        p += n;
    }
    return false;
}

static int send_init(jn_amqp_sasl_client_t *c)
{
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_SASL_INIT);
    p.u.sasl.present = JN_AMQP_FIELD(0) | (c->resp_absent ? 0 : JN_AMQP_FIELD(1));
    jn_iter_init_string(&p.u.sasl.mechanism, c->mech, JN_VIEW_RAW);
    jn_iter_init_bytes(&p.u.sasl.initial_response, c->resp_len ? c->resp.data : (uint8_t *)"",
                       c->resp_len, JN_VIEW_RAW);
    if (c->hostname) {
        p.u.sasl.present |= JN_AMQP_FIELD(2);
        jn_iter_init_string(&p.u.sasl.hostname, c->hostname, JN_VIEW_RAW);
    }
    int rc = send_frame(c, &p);
    if (rc != 0) {
        (void)jn_amqp_fail(&c->fault, "amqp:internal-error",
                           "the SASL %s initial response does not fit in a SASL frame", c->mech);
        return fail(c, rc);
    }
    c->init_sent = true;
    return 0;
}

/* The backend's last failure as the fault (condition, what failed). */
static int backend_fail(jn_amqp_sasl_client_t *c, const char *what)
{
    const char *why = c->ops->reason ? c->ops->reason(c->ctx) : NULL;
    (void)jn_amqp_fail(&c->fault, "amqp:unauthorized-access", "SASL %s: %s%s%s",
                       c->mech[0] ? c->mech : "client", what, why ? ": " : "", why ? why : "");
    return fail(c, JN_EPROTO);
}

/* Keep the backend's response out (*out NULL: absent) for the next frame.
 * False when memory runs out or it is larger than any frame we send (the
 * frame's bound is checked exactly as it is composed). */
static bool keep_response(jn_amqp_sasl_client_t *c, const uint8_t *out, size_t len)
{
    c->resp_absent = out == NULL;
    return set_response(c, out, len);
}

/* The server's offer as a string of names separated by spaces (into buf,
 * cap octets; names that do not fit are left out). */
static void offer_string(const jn_iter_t *offer, char *buf, size_t cap)
{
    jn_decoder_t d, items;
    jn_field_t f, e;
    size_t len = 0;
    buf[0] = '\0';
    jn_decoder_init(&d, offer, true);
    if (jn_decoder_next(&d, &f) != 1)
        return;
    if (f.type != JN_TYPE_ARRAY) {
        if (f.type == JN_TYPE_SYMBOL)
            jn_iter_copy_string(&f.payload, buf, cap);
        return;
    }
    if (jn_decoder_enter(&d, &f, &items) != 0)
        return;
    while (jn_decoder_next(&items, &e) == 1) {
        if (e.type != JN_TYPE_SYMBOL || len + e.size + 2 > cap)
            continue;
        if (len)
            buf[len++] = ' ';
        len += jn_iter_copy_string(&e.payload, buf + len, cap - len);
    }
}

/* The server's sasl-mechanisms, with a backend: its choice and initial
 * response go as sasl-init. */
static int backend_start(jn_amqp_sasl_client_t *c, const jn_amqp_sasl_t *m)
{
    char offer[512];
    offer_string(&m->mechanisms, offer, sizeof offer);
    const char *mech = NULL;
    const uint8_t *out = NULL;
    size_t len = 0;
    int rc = c->ops->start(c->ctx, offer, &mech, &out, &len);
    if (rc == JN_AMQP_SASL_STEP_PENDING) {
        c->pending = true; /* the init goes by jn_amqp_sasl_client_resume */
        return 0;
    }
    if (rc != 0 || !mech)
        return backend_fail(c, "no mechanism works");
    snprintf(c->mech, sizeof c->mech, "%s", mech);
    if (!keep_response(c, out, len))
        return backend_fail(c, "the initial response does not fit in a SASL frame (or no memory)");
    return send_init(c);
}

/* The server's sasl-mechanisms (5.3.3.1): our choice goes as sasl-init. */
static int mechanisms_input(jn_amqp_sasl_client_t *c, const jn_amqp_sasl_t *m)
{
    c->mechs_rcvd = true;
    if (c->ops)
        return backend_start(c, m);
    if (choose(c, &m->mechanisms))
        return send_init(c);
    char offer[128] = "";
    jn_decoder_t d;
    jn_field_t f;
    jn_decoder_init(&d, &m->mechanisms, true);
    if (jn_decoder_next(&d, &f) == 1 && f.type == JN_TYPE_SYMBOL)
        jn_iter_copy_string(&f.payload, offer, sizeof offer);
    (void)jn_amqp_fail(&c->fault, "amqp:unauthorized-access",
                       "no SASL mechanism in common: the server offers %s; we may use %s",
                       offer[0] ? offer : "several (none of ours)",
                       c->mechanisms ? c->mechanisms
                                     : "PLAIN (with a user and password), ANONYMOUS");
    return fail(c, JN_EPROTO);
}

static int send_response(jn_amqp_sasl_client_t *c);

/* A challenge (5.3.3.3): an empty one asks for the initial response again
 * (RFC 4422 3.3); none of ours has a second step. */
static int challenge_input(jn_amqp_sasl_client_t *c, const jn_amqp_sasl_t *ch)
{
    if (c->ops) {
        size_t n = 0;
        const uint8_t *in = jn_amqp_sasl_flat(&c->in, &ch->challenge, &n);
        if (!in)
            return backend_fail(c, "out of memory");
        const uint8_t *out = NULL;
        size_t len = 0;
        int rc = c->ops->step(c->ctx, in, n, &out, &len);
        if (rc == JN_AMQP_SASL_STEP_PENDING) {
            c->pending = true; /* the response goes by jn_amqp_sasl_client_resume */
            return 0;
        }
        if (rc != 0)
            return backend_fail(c, "the server's challenge was refused");
        if (!keep_response(c, out ? out : in, len))
            return backend_fail(c, "the response does not fit in a SASL frame (or no memory)");
    } else if (jn_iter_length(&ch->challenge) != 0) {
        (void)jn_amqp_fail(&c->fault, "amqp:illegal-state",
                           "a SASL challenge of %zu octets: %s has no second step",
                           jn_iter_length(&ch->challenge), c->mech);
        return fail(c, JN_EPROTO);
    }
    return send_response(c);
}

/* Our sasl-response (5.3.3.4) with the response kept. */
static int send_response(jn_amqp_sasl_client_t *c)
{
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_SASL_RESPONSE);
    p.u.sasl.present = JN_AMQP_FIELD(0);
    jn_iter_init_bytes(&p.u.sasl.response, c->resp_len ? c->resp.data : (uint8_t *)"",
                       c->resp_len, JN_VIEW_RAW);
    int rc = send_frame(c, &p);
    if (rc == JN_EOVERFLOW)
        (void)jn_amqp_fail(&c->fault, "amqp:internal-error",
                           "the SASL %s response does not fit in a SASL frame", c->mech);
    return rc != 0 ? fail(c, rc) : 0;
}

static int outcome_input(jn_amqp_sasl_client_t *c, const jn_amqp_sasl_t *o)
{
    if (c->ops) {
        size_t n = 0;
        const uint8_t *data = (const uint8_t *)"";
        if ((o->present & JN_AMQP_FIELD(1)) && !(data = jn_amqp_sasl_flat(&c->in, &o->additional_data, &n)))
            return backend_fail(c, "out of memory");
        if (c->ops->outcome(c->ctx, o->code, data, n) != 0 && o->code == JN_AMQP_SASL_OUTCOME_OK)
            return backend_fail(c, "the server's proof is wrong");
    }
    if (o->code == JN_AMQP_SASL_OUTCOME_OK) {
        c->done = true;
        return 1;
    }
    static const char *const what[] = {"ok", "auth: the credentials were refused",
                                       "sys: a system error", "sys-perm: a lasting system error",
                                       "sys-temp: a passing system error"};
    (void)jn_amqp_fail(&c->fault, "amqp:unauthorized-access", "SASL %s refused by the server (%s)",
                       c->mech, o->code < 5 ? what[o->code] : "an unknown code");
    return fail(c, JN_EPROTO);
}

/* One whole SASL frame from the server, in the order 5.3.2 gives. */
static int frame_input(jn_amqp_sasl_client_t *c, const jn_amqp_frame_t *f)
{
    if (f->body_size == 0)
        return 0;
    jn_amqp_perf_t p;
    if (jn_amqp_perf_decode(&f->body, JN_AMQP_FRAME_SASL, &p, NULL, &c->fault) != 0)
        return fail(c, JN_EPROTO);
    if (c->pending && (p.code == JN_AMQP_SASL_CHALLENGE || p.code == JN_AMQP_SASL_OUTCOME)) {
        (void)jn_amqp_fail(&c->fault, "amqp:illegal-state", "the server's %s came before our sasl-init",
                           jn_amqp_perf_name(p.code));
        return fail(c, JN_EPROTO);
    }
    if (p.code == JN_AMQP_SASL_MECHANISMS && !c->mechs_rcvd)
        return mechanisms_input(c, &p.u.sasl);
    if (p.code == JN_AMQP_SASL_CHALLENGE && c->init_sent)
        return challenge_input(c, &p.u.sasl);
    if (p.code == JN_AMQP_SASL_OUTCOME && c->init_sent)
        return outcome_input(c, &p.u.sasl);
    if (p.code == JN_AMQP_SASL_MECHANISMS && c->mechs_rcvd)
        (void)jn_amqp_fail(&c->fault, "amqp:illegal-state", "a second sasl-mechanisms frame");
    else
        (void)jn_amqp_fail(&c->fault, "amqp:illegal-state",
                           "a %s frame where the server's %s belongs", jn_amqp_perf_name(p.code),
                           c->init_sent ? "sasl-challenge or sasl-outcome" : "sasl-mechanisms");
    return fail(c, JN_EPROTO);
}

static int header_input(jn_amqp_sasl_client_t *c, jn_iter_t *it)
{
    jn_amqp_proto_t proto = JN_AMQP_PROTO_SASL;
    int rc = jn_amqp_header_read(it, &proto, &c->fault);
    if (rc == JN_AGAIN)
        return JN_AGAIN;
    if (rc == JN_AMQP_HEADER_SIZE && proto != JN_AMQP_PROTO_SASL)
        rc = jn_amqp_fail(&c->fault, "amqp:connection:framing-error",
                          "the server answered with protocol id %d where SASL (3) belongs", proto);
    if (rc < 0)
        return fail(c, rc);
    jn_iter_advance(it, JN_AMQP_HEADER_SIZE);
    c->header_rcvd = true;
    return 0;
}

int jn_amqp_sasl_client_input(jn_amqp_sasl_client_t *c, const jn_iter_t *in, size_t *consumed)
{
    size_t len = jn_iter_length(in);
    *consumed = 0;
    if (c->done)
        return 1;
    if (c->failed) {
        *consumed = len;
        return JN_EPROTO;
    }
    jn_iter_t it = *in;
    int rc = c->header_rcvd ? 0 : header_input(c, &it);
    /* while a step's answer is pending, the server's frames wait (while the
     * start's is, they are read: any is out of order) */
    while (rc == 0 && !(c->pending && c->init_sent)) {
        jn_amqp_frame_t f;
        rc = jn_amqp_frame_read(&it, JN_AMQP_FRAME_SASL, c->max_frame, 0, &f, &c->fault);
        if (rc == JN_AGAIN)
            break;
        if (rc < 0) {
            rc = fail(c, rc);
            break;
        }
        jn_iter_advance(&it, f.size);
        rc = frame_input(c, &f);
    }
    if (rc == JN_AGAIN)
        rc = 0;
    *consumed = c->failed ? len : len - jn_iter_length(&it);
    return rc;
}

int jn_amqp_sasl_client_resume(jn_amqp_sasl_client_t *c, int rc, const char *mech,
                               const uint8_t *out, size_t len)
{
    if (!c->pending || (!c->init_sent && rc == 0 && !mech))
        return JN_EINVAL;
    c->pending = false;
    if (c->failed)
        return JN_EPROTO;
    if (rc != 0)
        return backend_fail(c, c->init_sent ? "the server's challenge was refused"
                                            : "no mechanism works");
    if (!c->init_sent) {
        snprintf(c->mech, sizeof c->mech, "%s", mech);
        if (!keep_response(c, out, len))
            return backend_fail(c, "the initial response does not fit in a SASL frame (or no memory)");
        return send_init(c);
    }
    if (!keep_response(c, out ? out : (const uint8_t *)"", len))
        return backend_fail(c, "the response does not fit in a SASL frame (or no memory)");
    return send_response(c);
}

bool jn_amqp_sasl_client_pending(const jn_amqp_sasl_client_t *c)
{
    return c->pending;
}

const uint8_t *jn_amqp_sasl_client_output(jn_amqp_sasl_client_t *c, size_t *len)
{
    *len = c->out.size - c->taken;
    return *len ? c->out.data + c->taken : NULL;
}

void jn_amqp_sasl_client_output_done(jn_amqp_sasl_client_t *c, size_t n)
{
    size_t left = c->out.size - c->taken;
    c->taken += n < left ? n : left;
    if (c->taken == c->out.size) {
        c->out.size = 0;
        c->taken = 0;
    }
}

bool jn_amqp_sasl_client_done(const jn_amqp_sasl_client_t *c)
{
    return c->done;
}

const char *jn_amqp_sasl_client_mechanism(const jn_amqp_sasl_client_t *c)
{
    return c->mech[0] ? c->mech : NULL;
}

const jn_amqp_fault_t *jn_amqp_sasl_client_fault(const jn_amqp_sasl_client_t *c)
{
    return &c->fault;
}
