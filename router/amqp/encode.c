/*
 * encode.c — the engine's encoder of performatives (AMQP 1.0 part 2, 2.7),
 * SASL frame bodies (part 5, 5.3.3) and the composites inside them, with
 * the message layer's encoder (junction/encoder.h), driven by the tables
 * in types.c. A field kept as its encoding (maps, multiple symbols, a
 * terminus or state not known here, a state with a symbolic descriptor)
 * is written back byte for byte. The contract is in junction/amqp_perf.h.
 */
#include "amqp_private.h"

#include <stdlib.h>
#include <string.h>

static int encode_composite(jn_encoder_t *e, const jn_amqp_tdesc_t *t, const void *obj);

/* A binary from the octets left in it (not advanced): jn_enc_binary reads
 * plain memory, so octets that span buffers are gathered first. */
static void enc_binary_iter(jn_encoder_t *e, const jn_iter_t *it)
{
    size_t len = jn_iter_length(it);
    if (jn_iter_contiguous(it)) {
        jn_enc_binary(e, it->cursor, len);
        return;
    }
    uint8_t *tmp = malloc(len ? len : 1);
    if (!tmp) {
        if (e->error == 0)
            e->error = JN_ENOMEM;
        return;
    }
    jn_iter_t copy = *it;
    jn_iter_copy(&copy, tmp, len);
    jn_enc_binary(e, tmp, len);
    free(tmp);
}

/* A value kept as its encoding; an empty one cannot stand for a value. */
static int enc_encoded(jn_encoder_t *e, const jn_iter_t *it)
{
    if (jn_iter_length(it) == 0)
        return JN_EINVAL;
    jn_enc_raw_iter(e, it);
    return 0;
}

static int enc_terminus(jn_encoder_t *e, const jn_amqp_terminus_t *term, uint64_t expect)
{
    if (term->code == expect)
        return encode_composite(e, jn_amqp_tdesc_by_code(expect), term);
    return enc_encoded(e, &term->encoded);
}

static int enc_state(jn_encoder_t *e, const jn_amqp_state_t *s)
{
    if (jn_amqp_is_state(s->code) && !s->symbolic && !s->loose)
        return encode_composite(e, jn_amqp_tdesc_by_code(s->code), s);
    return enc_encoded(e, &s->encoded);
}

/* One present field from its member at m. */
static int encode_field(jn_encoder_t *e, const jn_amqp_fdesc_t *fd, const uint8_t *m)
{
    switch (fd->kind) {
    case JN_K_BOOL:
        jn_enc_bool(e, *(const bool *)m);
        return 0;
    case JN_K_UBYTE:
        jn_enc_ubyte(e, *m);
        return 0;
    case JN_K_USHORT:
        jn_enc_ushort(e, *(const uint16_t *)m);
        return 0;
    case JN_K_UINT:
        jn_enc_uint(e, *(const uint32_t *)m);
        return 0;
    case JN_K_ULONG:
        jn_enc_ulong(e, *(const uint64_t *)m);
        return 0;
    case JN_K_SYMBOL:
        jn_enc_symbol_iter(e, (const jn_iter_t *)m);
        return 0;
    case JN_K_STRING:
        jn_enc_string_iter(e, (const jn_iter_t *)m);
        return 0;
    case JN_K_BINARY:
        enc_binary_iter(e, (const jn_iter_t *)m);
        return 0;
    case JN_K_ADDRESS: {
        const jn_amqp_terminus_t *term =
            (const jn_amqp_terminus_t *)(m - offsetof(jn_amqp_terminus_t, address));
        if (term->address_is_symbol)
            jn_enc_symbol_iter(e, (const jn_iter_t *)m);
        else
            jn_enc_string_iter(e, (const jn_iter_t *)m);
        return 0;
    }
    case JN_K_ERROR:
        return encode_composite(e, jn_amqp_tdesc_by_code(JN_AMQP_ERROR), m);
    case JN_K_SOURCE:
        return enc_terminus(e, (const jn_amqp_terminus_t *)m, JN_AMQP_SOURCE);
    case JN_K_TARGET:
        return enc_terminus(e, (const jn_amqp_terminus_t *)m, JN_AMQP_TARGET);
    case JN_K_STATE:
        return enc_state(e, (const jn_amqp_state_t *)m);
    default:
        return enc_encoded(e, (const jn_iter_t *)m);
    }
}

/* obj of type t as a described list: the fields up to the last present
 * one, nulls for the absent ones before it. */
static int encode_composite(jn_encoder_t *e, const jn_amqp_tdesc_t *t, const void *obj)
{
    const uint8_t *base = obj;
    uint32_t present = *(const uint32_t *)(base + t->present_at);
    int last = -1;
    for (unsigned i = 0; i < t->count; i++) {
        if (present & JN_AMQP_FIELD(i))
            last = (int)i;
        else if (t->fields[i].mandatory)
            return JN_EINVAL;
    }
    jn_enc_descriptor_ulong(e, t->code);
    jn_enc_list_begin(e);
    for (int i = 0; i <= last; i++) {
        const jn_amqp_fdesc_t *fd = &t->fields[i];
        if (!(present & JN_AMQP_FIELD(i))) {
            jn_enc_null(e);
            continue;
        }
        int rc = encode_field(e, fd, base + fd->offset);
        if (rc != 0)
            return rc;
    }
    jn_enc_list_end(e);
    return jn_encoder_error(e);
}

int jn_amqp_perf_encode(jn_encoder_t *e, const jn_amqp_perf_t *p)
{
    bool known = (p->code >= JN_AMQP_OPEN && p->code <= JN_AMQP_CLOSE) ||
                 (p->code >= JN_AMQP_SASL_MECHANISMS && p->code <= JN_AMQP_SASL_OUTCOME);
    if (!known)
        return JN_EINVAL;
    int rc = encode_composite(e, jn_amqp_tdesc_by_code(p->code), &p->u);
    return rc != 0 ? rc : jn_encoder_error(e);
}

int jn_amqp_state_encode(jn_encoder_t *e, const jn_amqp_state_t *s)
{
    int rc = enc_state(e, s);
    return rc != 0 ? rc : jn_encoder_error(e);
}
