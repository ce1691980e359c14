/*
 * io_own_termini.c — the termini of link-routed links on Junction's own
 * engine (docs/engine.md, stage 3a): the peer's source and target handed
 * to the core with its attach, and given back by the core's
 * JN_WORK_LINK_ATTACH for the link to the container, in the encoding the
 * core carries without reading it (kept from the time two engines met in
 * the core, docs/engine.md stage 5): per
 * terminus, a type octet (0 none, 1 source, 2 target, 3 coordinator),
 * the address (32-bit length and octets, 0xffffffff for none), durability,
 * expiry policy (0 link-detach, 1 session-end, 2 connection-close, 3
 * never), timeout and a reserved word (32 bits each), dynamic and the
 * distribution mode (0 none, 1 copy, 2 move) (an octet each), then the
 * dynamic node properties, capabilities, outcomes and filter, each as its
 * AMQP encoding with a 32-bit length (0: absent). A coordinator (AMQP 1.0
 * 4.5.1) carries only its capabilities. default-outcome is not carried.
 *
 * Also the dynamic node properties' x-opt-qd.address, which a dynamic
 * terminus is link-routed by, as 1.19 reads and writes it.
 *
 * Thread: the connection's I/O thread (nothing here is shared).
 */
#include "io_own.h"

#include <junction/decoder.h>
#include <junction/encoder.h>

#include <stdlib.h>
#include <string.h>

#define DNP_KEY "x-opt-qd.address"

/* Expiry policies and distribution modes in the order of their codes. */
static const char *const expiry_names[] = {"link-detach", "session-end", "connection-close",
                                           "never"};
static const char *const dist_names[] = {NULL, "copy", "move"};

/* ---- writing ------------------------------------------------------------- */

static void put_u32(jn_encoder_t *e, uint32_t v)
{
    uint8_t o[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    jn_enc_raw(e, o, 4);
}

/* A view's octets with their length (0: none). */
static void put_view(jn_encoder_t *e, const jn_iter_t *v, bool present)
{
    size_t n = present ? jn_iter_length(v) : 0;
    put_u32(e, (uint32_t)n);
    if (n)
        jn_enc_raw_iter(e, v);
}

/* The index of the symbol view s among names (n of them), else dflt. */
static uint32_t code_of(const jn_iter_t *s, const char *const *names, uint32_t n, uint32_t dflt)
{
    for (uint32_t i = 0; i < n; i++) {
        if (names[i] && jn_iter_equal(s, names[i]))
            return i;
    }
    return dflt;
}

/* A coordinator's capabilities (its field 0) as their encoding in *caps;
 * false when it has none or is malformed. */
static bool coordinator_caps(const jn_amqp_terminus_t *t, jn_iter_t *caps)
{
    jn_decoder_t d, in;
    jn_field_t f;
    jn_decoder_init(&d, &t->encoded, true);
    if (jn_decoder_next(&d, &f) != 1 || f.type != JN_TYPE_LIST ||
        jn_decoder_enter(&d, &f, &in) != 0 || jn_decoder_next(&in, &f) != 1 ||
        f.type == JN_TYPE_NULL)
        return false;
    *caps = f.encoded;
    return true;
}

static void put_terminus(jn_encoder_t *e, const jn_amqp_terminus_t *t, bool present, bool source)
{
    uint8_t type = !present                         ? 0
                   : t->code == JN_AMQP_SOURCE      ? 1
                   : t->code == JN_AMQP_TARGET      ? 2
                   : t->code == JN_AMQP_COORDINATOR ? 3
                                                    : 0;
    jn_enc_raw(e, &type, 1);
    bool known = type == 1 || type == 2;
    uint32_t p = known ? t->present : 0;
    if (p & JN_AMQP_FIELD(0)) {
        put_view(e, &t->address, true);
    } else {
        put_u32(e, 0xffffffffu);
    }
    put_u32(e, (p & JN_AMQP_FIELD(1)) ? t->durable : 0);
    put_u32(e, (p & JN_AMQP_FIELD(2)) ? code_of(&t->expiry_policy, expiry_names, 4, 1) : 1);
    put_u32(e, (p & JN_AMQP_FIELD(3)) ? t->timeout : 0);
    put_u32(e, 0); /* reserved */
    uint8_t o[2] = {(uint8_t)((p & JN_AMQP_FIELD(4)) && t->dynamic),
                    (uint8_t)(source && (p & JN_AMQP_FIELD(6))
                                  ? code_of(&t->distribution_mode, dist_names, 3, 0)
                                  : 0)};
    jn_enc_raw(e, o, 2);
    put_view(e, &t->dynamic_node_properties, p & JN_AMQP_FIELD(5));
    jn_iter_t caps;
    if (type == 3)
        put_view(e, &caps, coordinator_caps(t, &caps));
    else
        put_view(e, &t->capabilities, p & JN_AMQP_FIELD(source ? 10 : 6));
    put_view(e, &t->outcomes, source && (p & JN_AMQP_FIELD(9)));
    put_view(e, &t->filter, source && (p & JN_AMQP_FIELD(7)));
}

int jn_io_own_termini_encode(const jn_amqp_attach_t *a, uint8_t **out, size_t *len)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    put_terminus(&e, &a->source, a->present & JN_AMQP_FIELD(5), true);
    put_terminus(&e, &a->target, a->present & JN_AMQP_FIELD(6), false);
    size_t n = 0;
    const uint8_t *p = jn_encoder_data(&e, &n);
    int rc = jn_encoder_error(&e);
    *out = rc == 0 && n ? malloc(n) : NULL;
    if (*out)
        memcpy(*out, p, n);
    *len = *out ? n : 0;
    jn_encoder_free(&e);
    return rc ? rc : *out ? 0 : JN_ENOMEM;
}

/* ---- reading ------------------------------------------------------------- */

typedef struct rd {
    const uint8_t *p;
    size_t len, at;
    bool failed;
} rd_t;

static const uint8_t *take(rd_t *r, size_t n)
{
    if (r->failed || r->len - r->at < n) {
        r->failed = true;
        return NULL;
    }
    const uint8_t *p = r->p + r->at;
    r->at += n;
    return p;
}

static uint32_t take_u32(rd_t *r)
{
    const uint8_t *p = take(r, 4);
    return p ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3] : 0;
}

/* An encoded field with its length into *v; whether one was there. */
static bool take_view(rd_t *r, jn_iter_t *v)
{
    uint32_t n = take_u32(r);
    const uint8_t *p = n ? take(r, n) : NULL;
    if (p)
        jn_iter_init_bytes(v, p, n, JN_VIEW_RAW);
    return p != NULL;
}

/* One terminus into *t (views of r's octets; a coordinator's encoding
 * composed into enc); whether it is present. */
static bool take_terminus(rd_t *r, jn_amqp_terminus_t *t, bool source, jn_encoder_t *enc)
{
    memset(t, 0, sizeof *t);
    const uint8_t *type = take(r, 1);
    uint32_t alen = take_u32(r);
    const uint8_t *a = alen != 0xffffffffu ? take(r, alen) : NULL;
    uint32_t durable = take_u32(r), expiry = take_u32(r), timeout = take_u32(r);
    (void)take_u32(r);
    const uint8_t *o = take(r, 2);
    jn_iter_t dnp, caps, outcomes, filter;
    bool has_dnp = take_view(r, &dnp), has_caps = take_view(r, &caps);
    bool has_outcomes = take_view(r, &outcomes), has_filter = take_view(r, &filter);
    if (r->failed || !type || *type == 0 || *type > 3)
        return false;
    if (*type == 3) { /* a coordinator: its capabilities */
        t->code = JN_AMQP_COORDINATOR;
        jn_enc_descriptor_ulong(enc, JN_AMQP_COORDINATOR);
        jn_enc_list_begin(enc);
        if (has_caps)
            jn_enc_raw_iter(enc, &caps);
        jn_enc_list_end(enc);
        return jn_encoder_error(enc) == 0;
    }
    t->code = *type == 1 ? JN_AMQP_SOURCE : JN_AMQP_TARGET;
    if (a) {
        t->present |= JN_AMQP_FIELD(0);
        jn_iter_init_bytes(&t->address, a, alen, JN_VIEW_RAW);
    }
    t->present |= JN_AMQP_FIELD(1) | JN_AMQP_FIELD(3);
    t->durable = durable;
    t->timeout = timeout;
    if (expiry != 1 && expiry < 4) { /* session-end is the default */
        t->present |= JN_AMQP_FIELD(2);
        jn_iter_init_string(&t->expiry_policy, expiry_names[expiry], JN_VIEW_RAW);
    }
    if (o[0]) {
        t->present |= JN_AMQP_FIELD(4);
        t->dynamic = true;
    }
    if (has_dnp) {
        t->present |= JN_AMQP_FIELD(5);
        t->dynamic_node_properties = dnp;
    }
    if (source && o[1] >= 1 && o[1] <= 2) {
        t->present |= JN_AMQP_FIELD(6);
        jn_iter_init_string(&t->distribution_mode, dist_names[o[1]], JN_VIEW_RAW);
    }
    if (has_caps) {
        t->present |= JN_AMQP_FIELD(source ? 10 : 6);
        t->capabilities = caps;
    }
    if (source && has_outcomes) {
        t->present |= JN_AMQP_FIELD(9);
        t->outcomes = outcomes;
    }
    if (source && has_filter) {
        t->present |= JN_AMQP_FIELD(7);
        t->filter = filter;
    }
    return true;
}

int jn_io_own_termini_decode(const uint8_t *p, size_t len, jn_amqp_attach_t *a, jn_encoder_t *enc)
{
    rd_t r = {.p = p, .len = len};
    if (take_terminus(&r, &a->source, true, enc))
        a->present |= JN_AMQP_FIELD(5);
    size_t mark = 0;
    (void)jn_encoder_data(enc, &mark);
    if (take_terminus(&r, &a->target, false, enc))
        a->present |= JN_AMQP_FIELD(6);
    size_t n = 0;
    const uint8_t *e = jn_encoder_data(enc, &n);
    if (jn_encoder_error(enc) != 0)
        return JN_ENOMEM;
    /* a coordinator's encoding, composed (only a target may be one) */
    if (a->target.code == JN_AMQP_COORDINATOR)
        jn_iter_init_bytes(&a->target.encoded, e + mark, n - mark, JN_VIEW_RAW);
    if (a->source.code == JN_AMQP_COORDINATOR)
        a->present &= ~JN_AMQP_FIELD(5);
    return r.failed ? JN_EPROTO : 0;
}

/* ---- dynamic node properties --------------------------------------------- */

char *jn_io_own_dnp_address(const jn_amqp_terminus_t *t)
{
    if (!(t->present & JN_AMQP_FIELD(5)))
        return NULL;
    jn_decoder_t d, in;
    jn_field_t f, k, v;
    jn_decoder_init(&d, &t->dynamic_node_properties, true);
    if (jn_decoder_next(&d, &f) != 1 || f.type != JN_TYPE_MAP || jn_decoder_enter(&d, &f, &in) != 0)
        return NULL;
    while (jn_decoder_next(&in, &k) == 1 && jn_decoder_next(&in, &v) == 1) {
        if ((k.type == JN_TYPE_SYMBOL || k.type == JN_TYPE_STRING) &&
            jn_field_equal_string(&k, DNP_KEY) &&
            (v.type == JN_TYPE_STRING || v.type == JN_TYPE_SYMBOL) && v.size) {
            char *out = malloc((size_t)v.size + 1);
            if (out) {
                jn_iter_t it = v.payload;
                out[jn_iter_copy(&it, out, v.size)] = '\0';
            }
            return out;
        }
    }
    return NULL;
}

int jn_io_own_dnp_set_address(jn_amqp_terminus_t *t, const char *address, jn_encoder_t *enc)
{
    size_t mark = 0;
    (void)jn_encoder_data(enc, &mark);
    jn_enc_map_begin(enc);
    jn_enc_csymbol(enc, DNP_KEY);
    jn_enc_cstring(enc, address);
    jn_decoder_t d, in;
    jn_field_t f, k, v;
    if (t->present & JN_AMQP_FIELD(5)) {
        jn_decoder_init(&d, &t->dynamic_node_properties, true);
        if (jn_decoder_next(&d, &f) == 1 && f.type == JN_TYPE_MAP &&
            jn_decoder_enter(&d, &f, &in) == 0) {
            while (jn_decoder_next(&in, &k) == 1 && jn_decoder_next(&in, &v) == 1) {
                /* fields have symbol keys (AMQP 1.0 3.2): a pair with
                 * another key is malformed, and not passed on */
                if ((k.type != JN_TYPE_SYMBOL && k.type != JN_TYPE_STRING) ||
                    jn_field_equal_string(&k, DNP_KEY))
                    continue;
                jn_enc_raw_iter(enc, &k.encoded);
                jn_enc_raw_iter(enc, &v.encoded);
            }
        }
    }
    jn_enc_map_end(enc);
    size_t n = 0;
    const uint8_t *p = jn_encoder_data(enc, &n);
    if (jn_encoder_error(enc) != 0)
        return JN_ENOMEM;
    t->present |= JN_AMQP_FIELD(5);
    jn_iter_init_bytes(&t->dynamic_node_properties, p + mark, n - mark, JN_VIEW_RAW);
    return 0;
}
