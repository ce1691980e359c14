/*
 * fuzz_amqp_diff.c — differential libFuzzer target: the engine's decode of
 * every performative and SASL body (junction/amqp_perf.h) must agree with
 * an independent decoder, proton's pn_data codec, linked into this fuzzer
 * only (junctiond's engine does not use it for this).
 *
 * Input: a control octet (fuzz_input.h: buffer split size; top bit = a SASL
 * frame body, else AMQP) then a frame body. When the engine accepts the
 * performative, proton must decode the same octets too, and agree on the
 * descriptor and, field by field (through the engine's own tables, so every
 * field of every type is compared): null or not, every scalar's value,
 * every string, symbol and binary's octets, the type and element count of
 * maps and multiple-symbol fields, and the fields of nested errors, termini
 * and delivery states. A disagreement aborts. Where the engine refuses what
 * proton accepts, the engine is the stricter of the two by design (types
 * the spec gives, mandatory fields): not a finding.
 */
#include "fuzz_input.h"

#include "amqp/amqp_private.h"

#include <proton/codec.h>
#include <stdlib.h>
#include <string.h>

static bool iter_equals(const jn_iter_t *it, pn_bytes_t b)
{
    if (jn_iter_length(it) != b.size)
        return false;
    uint8_t tmp[512];
    jn_iter_t c = *it;
    size_t off = 0;
    while (off < b.size) {
        size_t n = jn_iter_copy(&c, tmp, sizeof tmp);
        if (n == 0 || memcmp(tmp, b.start + off, n) != 0)
            return false;
        off += n;
    }
    return true;
}

/* The element count of the encoded compound (or 1 for a single value). */
static size_t encoded_count(const jn_iter_t *enc)
{
    jn_decoder_t d;
    jn_field_t f;
    jn_decoder_init(&d, enc, true);
    if (jn_decoder_next(&d, &f) != 1)
        abort();
    return f.type == JN_TYPE_LIST || f.type == JN_TYPE_MAP || f.type == JN_TYPE_ARRAY ? f.count : 1;
}

static void compare_composite(pn_data_t *pd, const jn_amqp_tdesc_t *t, const void *obj);

/* proton is positioned on a described value whose descriptor the engine
 * read as code: compare the descriptor, then the fields if t is given. */
static void compare_described(pn_data_t *pd, uint64_t code, const jn_amqp_tdesc_t *t,
                              const void *obj)
{
    if (pn_data_type(pd) != PN_DESCRIBED || !pn_data_enter(pd) || !pn_data_next(pd))
        abort();
    if (pn_data_type(pd) == PN_ULONG && code != 0 && pn_data_get_ulong(pd) != code)
        abort();
    if (!pn_data_next(pd))
        abort();
    if (t)
        compare_composite(pd, t, obj);
    pn_data_exit(pd);
}

static void compare_encoded(pn_data_t *pd, uint8_t kind, const jn_iter_t *enc)
{
    pn_type_t type = pn_data_type(pd);
    size_t count = encoded_count(enc);
    switch (kind) {
    case JN_K_SYMBOLS:
        if (type == PN_SYMBOL ? count != 1 : type != PN_ARRAY || pn_data_get_array(pd) != count)
            abort();
        break;
    case JN_K_MAP:
        if (type != PN_MAP || pn_data_get_map(pd) != count)
            abort();
        break;
    default:
        if (type != PN_DESCRIBED)
            abort();
    }
}

/* One field: the engine's member at m against proton's current node. */
static void compare_field(pn_data_t *pd, const jn_amqp_fdesc_t *fd, const uint8_t *m)
{
    switch (fd->kind) {
    case JN_K_BOOL:
        if (pn_data_get_bool(pd) != *(const bool *)m)
            abort();
        break;
    case JN_K_UBYTE:
        if (pn_data_get_ubyte(pd) != *m)
            abort();
        break;
    case JN_K_USHORT:
        if (pn_data_get_ushort(pd) != *(const uint16_t *)m)
            abort();
        break;
    case JN_K_UINT:
        if (pn_data_get_uint(pd) != *(const uint32_t *)m)
            abort();
        break;
    case JN_K_ULONG:
        if (pn_data_get_ulong(pd) != *(const uint64_t *)m)
            abort();
        break;
    case JN_K_SYMBOL:
        if (!iter_equals((const jn_iter_t *)m, pn_data_get_symbol(pd)))
            abort();
        break;
    case JN_K_STRING:
        if (!iter_equals((const jn_iter_t *)m, pn_data_get_string(pd)))
            abort();
        break;
    case JN_K_BINARY:
        if (!iter_equals((const jn_iter_t *)m, pn_data_get_binary(pd)))
            abort();
        break;
    case JN_K_ADDRESS:
        if (!iter_equals((const jn_iter_t *)m, pn_data_get_bytes(pd)))
            abort();
        break;
    case JN_K_ERROR:
        compare_described(pd, JN_AMQP_ERROR, jn_amqp_tdesc_by_code(JN_AMQP_ERROR), m);
        break;
    case JN_K_SOURCE:
    case JN_K_TARGET: {
        const jn_amqp_terminus_t *term = (const jn_amqp_terminus_t *)m;
        uint64_t want = fd->kind == JN_K_SOURCE ? JN_AMQP_SOURCE : JN_AMQP_TARGET;
        compare_described(pd, term->code, term->code == want ? jn_amqp_tdesc_by_code(want) : NULL,
                          term);
        break;
    }
    case JN_K_STATE: {
        const jn_amqp_state_t *s = (const jn_amqp_state_t *)m;
        compare_described(pd, s->code,
                          jn_amqp_is_state(s->code) ? jn_amqp_tdesc_by_code(s->code) : NULL, s);
        break;
    }
    default:
        compare_encoded(pd, fd->kind, (const jn_iter_t *)m);
    }
}

/* proton is positioned on the list of a composite of type t. */
static void compare_composite(pn_data_t *pd, const jn_amqp_tdesc_t *t, const void *obj)
{
    const uint8_t *base = obj;
    uint32_t present = *(const uint32_t *)(base + t->present_at);
    if (pn_data_type(pd) != PN_LIST)
        abort();
    size_t count = pn_data_get_list(pd);
    pn_data_enter(pd);
    for (unsigned i = 0; i < t->count; i++) {
        bool there = i < count && pn_data_next(pd) && pn_data_type(pd) != PN_NULL;
        if (there != ((present & JN_AMQP_FIELD(i)) != 0))
            abort(); /* null on one side only */
        if (there)
            compare_field(pd, &t->fields[i], base + t->fields[i].offset);
    }
    pn_data_exit(pd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t type = jn_fuzz_flag(data[0]) ? JN_AMQP_FRAME_SASL : JN_AMQP_FRAME_AMQP;
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    jn_iter_t body, payload;
    if (size > 1) {
        if (jn_buffer_list_append_split(&list, data + 1, size - 1, jn_fuzz_chunk(data[0])) != 0)
            abort();
        if (jn_iter_init(&body, list.head, 0, size - 1, JN_VIEW_RAW) != 0)
            abort();
    } else {
        jn_iter_init_bytes(&body, "", 0, JN_VIEW_RAW);
    }
    jn_amqp_perf_t p;
    jn_amqp_fault_t fault;
    if (jn_amqp_perf_decode(&body, type, &p, &payload, &fault) == 0) {
        size_t perf_len = size - 1 - jn_iter_length(&payload);
        pn_data_t *pd = pn_data(0);
        ssize_t used = pn_data_decode(pd, (const char *)data + 1, perf_len);
        if (used != (ssize_t)perf_len)
            abort(); /* the engine took octets proton cannot decode */
        pn_data_rewind(pd);
        if (!pn_data_next(pd))
            abort();
        compare_described(pd, p.code, jn_amqp_tdesc_by_code(p.code), &p.u);
        pn_data_free(pd);
    }
    jn_buffer_list_free(&list);
    return 0;
}
