/*
 * decode.c — the engine's decoder of performatives (AMQP 1.0 part 2, 2.7),
 * SASL frame bodies (part 5, 5.3.3) and the composites inside them, in
 * place: the message layer's decoder (junction/decoder.h) reads each field
 * where it lies, and a variable-width or compound field is kept as a raw
 * view of the frame's own octets. Which fields a type has, and their rules,
 * come from the tables in types.c; this file only walks them, so every
 * type is decoded and checked the same way. The contract is in
 * junction/amqp_perf.h.
 */
#include "amqp_private.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DECODE_ERROR  "amqp:decode-error"
#define INVALID_FIELD "amqp:invalid-field"

/* Walk every value left in d, entering compounds, so that a field kept as
 * a raw view is known to be a valid encoding all the way down. Returns 0
 * or the decoder's error. */
static int check_values(jn_decoder_t *d)
{
    jn_field_t f;
    int rc;
    while ((rc = jn_decoder_next(d, &f)) == 1) {
        if (f.type != JN_TYPE_LIST && f.type != JN_TYPE_MAP && f.type != JN_TYPE_ARRAY)
            continue;
        jn_decoder_t child;
        if ((rc = jn_decoder_enter(d, &f, &child)) != 0 || (rc = check_values(&child)) != 0) {
            d->reason = child.reason;
            return rc < 0 ? rc : JN_EPROTO;
        }
    }
    return rc;
}

/* check_values() for the one compound f of d. */
static int check_compound(const jn_decoder_t *d, const jn_field_t *f, jn_amqp_fault_t *fault,
                          const char *where)
{
    if (f->type != JN_TYPE_LIST && f->type != JN_TYPE_MAP && f->type != JN_TYPE_ARRAY)
        return 0;
    jn_decoder_t child;
    int rc = jn_decoder_enter(d, f, &child);
    if (rc == 0)
        rc = check_values(&child);
    if (rc == 0)
        return 0;
    return jn_amqp_fail(fault, DECODE_ERROR, "%s cannot be decoded: %s", where,
                        jn_decoder_reason(&child));
}

/* The descriptor code of a described field: its ulong, or the code its
 * symbol names (0: none known). */
static uint64_t descriptor_of(const jn_field_t *f)
{
    return f->descriptor_is_symbol ? jn_amqp_code_by_symbol(&f->descriptor_symbol)
                                   : f->descriptor_code;
}

static int decode_composite(const jn_decoder_t *d, const jn_field_t *f, const jn_amqp_tdesc_t *t,
                            void *obj, jn_amqp_fault_t *fault);

/* True when the described field f carries a second descriptor after its
 * first (1.5 allows it): the decoder reports the outermost one, so the
 * value is then itself a described value, not the type's list. */
static bool stacked_descriptors(const jn_field_t *f)
{
    jn_iter_t it = f->encoded;
    size_t skip;
    (void)jn_iter_octet(&it); /* the 0x00 */
    switch (jn_iter_octet(&it)) {
    case 0x44:
        skip = 0;
        break;
    case 0x53:
        skip = 1;
        break;
    case 0x80:
        skip = 8;
        break;
    case 0xa3:
        skip = 1 + jn_iter_length(&f->descriptor_symbol);
        break;
    default:
        skip = 4 + jn_iter_length(&f->descriptor_symbol);
        break; /* 0xb3 */
    }
    jn_iter_advance(&it, skip);
    return jn_iter_octet(&it) == 0x00;
}

/* A scalar field (bool, ubyte, ushort, uint, ulong) into its member. */
static int decode_scalar(const jn_field_t *f, const jn_amqp_fdesc_t *fd, void *m, const char *tname,
                         jn_amqp_fault_t *fault)
{
    static const jn_amqp_type_t want[] = {[JN_K_BOOL] = JN_TYPE_BOOLEAN,
                                          [JN_K_UBYTE] = JN_TYPE_UBYTE,
                                          [JN_K_USHORT] = JN_TYPE_USHORT,
                                          [JN_K_UINT] = JN_TYPE_UINT,
                                          [JN_K_ULONG] = JN_TYPE_ULONG};
    if (f->described || f->type != want[fd->kind])
        return jn_amqp_fail(fault, INVALID_FIELD, "%s field %s is %s%s, not %s", tname, fd->name,
                            f->described ? "a described " : "", jn_amqp_type_name(f->type),
                            jn_amqp_type_name(want[fd->kind]));
    if (fd->max && f->value.u > fd->max)
        return jn_amqp_fail(fault, INVALID_FIELD, "%s field %s is %llu, above its highest value %u",
                            tname, fd->name, (unsigned long long)f->value.u, fd->max);
    jn_amqp_store_num((jn_amqp_kind_t)fd->kind, m, fd->kind == JN_K_BOOL ? f->value.b : f->value.u);
    return 0;
}

/* A symbol, string, binary or address field: the view of its octets. */
static int decode_bytes(const jn_field_t *f, const jn_amqp_fdesc_t *fd, void *m, const char *tname,
                        jn_amqp_fault_t *fault)
{
    bool ok = !f->described;
    switch (fd->kind) {
    case JN_K_SYMBOL:
        ok = ok && f->type == JN_TYPE_SYMBOL;
        break;
    case JN_K_STRING:
        ok = ok && f->type == JN_TYPE_STRING;
        break;
    case JN_K_BINARY:
        ok = ok && f->type == JN_TYPE_BINARY;
        break;
    default:
        ok = ok && (f->type == JN_TYPE_STRING || f->type == JN_TYPE_SYMBOL);
        break;
    }
    if (!ok)
        return jn_amqp_fail(fault, INVALID_FIELD, "%s field %s is %s%s, not %s", tname, fd->name,
                            f->described ? "a described " : "", jn_amqp_type_name(f->type),
                            fd->kind == JN_K_BINARY   ? "binary"
                            : fd->kind == JN_K_SYMBOL ? "symbol"
                                                      : "string");
    *(jn_iter_t *)m = f->payload;
    if (fd->kind == JN_K_ADDRESS) /* the terminus's address_is_symbol, just before it */
        ((jn_amqp_terminus_t *)((uint8_t *)m - offsetof(jn_amqp_terminus_t, address)))
            ->address_is_symbol = f->type == JN_TYPE_SYMBOL;
    return 0;
}

/* A field kept whole as its encoding: multiple symbols, a map, or any
 * described value. */
static int decode_encoded(const jn_decoder_t *d, const jn_field_t *f, const jn_amqp_fdesc_t *fd,
                          void *m, const char *tname, jn_amqp_fault_t *fault)
{
    bool ok;
    if (fd->kind == JN_K_SYMBOLS)
        ok = !f->described && (f->type == JN_TYPE_SYMBOL ||
                               (f->type == JN_TYPE_ARRAY && !f->elem_described &&
                                (f->elem_code == JN_AMQP_SYM8 || f->elem_code == JN_AMQP_SYM32)));
    else if (fd->kind == JN_K_MAP)
        ok = !f->described && f->type == JN_TYPE_MAP;
    else
        ok = f->described;
    if (!ok)
        return jn_amqp_fail(fault, INVALID_FIELD, "%s field %s is %s%s, not %s", tname, fd->name,
                            f->described ? "a described " : "", jn_amqp_type_name(f->type),
                            fd->kind == JN_K_SYMBOLS ? "a symbol or an array of symbols"
                            : fd->kind == JN_K_MAP   ? "a map"
                                                     : "a described value");
    char where[96];
    snprintf(where, sizeof where, "%s field %s", tname, fd->name);
    int rc = check_compound(d, f, fault, where);
    if (rc == 0)
        *(jn_iter_t *)m = f->encoded;
    return rc;
}

/* A delivery state: a known one field by field, any other kept as it came. */
static int decode_state(const jn_decoder_t *d, const jn_field_t *f, jn_amqp_state_t *s,
                        const char *tname, const char *fname, jn_amqp_fault_t *fault)
{
    if (!f->described)
        return jn_amqp_fail(fault, INVALID_FIELD, "%s field %s is a plain %s, not a delivery state",
                            tname, fname, jn_amqp_type_name(f->type));
    s->code = descriptor_of(f);
    s->symbolic = f->descriptor_is_symbol;
    s->loose = false;
    if (s->symbolic)
        s->descriptor_symbol = f->descriptor_symbol;
    s->encoded = f->encoded;
    if (JN_UNLIKELY(s->code == JN_AMQP_DECLARED || s->code == JN_AMQP_TRANSACTIONAL_STATE) &&
        !s->symbolic) {
        /* a transaction's state (part 4, 4.5.5, 4.5.7) is carried, never
         * read, by a router: one whose fields are not of their types (a
         * string txn-id, say) is kept as it came, as 1.19 keeps it, rather
         * than closing the connection */
        jn_amqp_fault_t scratch;
        if (decode_composite(d, f, jn_amqp_tdesc_by_code(s->code), s, &scratch) == 0)
            return 0;
        s->present = 0;
        s->loose = true;
    } else if (jn_amqp_is_state(s->code)) {
        return decode_composite(d, f, jn_amqp_tdesc_by_code(s->code), s, fault);
    }
    char where[96];
    snprintf(where, sizeof where, "%s field %s", tname, fname);
    return check_compound(d, f, fault, where);
}

/* A source or target: field by field when it is the one expected, any
 * other terminus (a coordinator, 4.5.1) kept as it came. */
static int decode_terminus(const jn_decoder_t *d, const jn_field_t *f, jn_amqp_terminus_t *term,
                           uint64_t expect, const char *tname, const char *fname,
                           jn_amqp_fault_t *fault)
{
    if (!f->described)
        return jn_amqp_fail(fault, INVALID_FIELD, "%s field %s is a plain %s, not a terminus",
                            tname, fname, jn_amqp_type_name(f->type));
    term->code = descriptor_of(f);
    term->encoded = f->encoded;
    if (term->code == expect)
        return decode_composite(d, f, jn_amqp_tdesc_by_code(expect), term, fault);
    char where[96];
    snprintf(where, sizeof where, "%s field %s", tname, fname);
    return check_compound(d, f, fault, where);
}

/* One non-null field into its member. */
static int decode_field(const jn_decoder_t *d, const jn_field_t *f, const jn_amqp_fdesc_t *fd,
                        void *m, const char *tname, jn_amqp_fault_t *fault)
{
    switch (fd->kind) {
    case JN_K_BOOL:
    case JN_K_UBYTE:
    case JN_K_USHORT:
    case JN_K_UINT:
    case JN_K_ULONG:
        return decode_scalar(f, fd, m, tname, fault);
    case JN_K_SYMBOL:
    case JN_K_STRING:
    case JN_K_BINARY:
    case JN_K_ADDRESS:
        return decode_bytes(f, fd, m, tname, fault);
    case JN_K_ERROR:
        if (!f->described || descriptor_of(f) != JN_AMQP_ERROR)
            return jn_amqp_fail(fault, INVALID_FIELD, "%s field %s is not an error", tname,
                                fd->name);
        return decode_composite(d, f, jn_amqp_tdesc_by_code(JN_AMQP_ERROR), m, fault);
    case JN_K_SOURCE:
        return decode_terminus(d, f, m, JN_AMQP_SOURCE, tname, fd->name, fault);
    case JN_K_TARGET:
        return decode_terminus(d, f, m, JN_AMQP_TARGET, tname, fd->name, fault);
    case JN_K_STATE:
        return decode_state(d, f, m, tname, fd->name, fault);
    default:
        return decode_encoded(d, f, fd, m, tname, fault);
    }
}

/* The described list f of d, of type t, into obj: every field, then the
 * mandatory ones checked. */
static int decode_composite(const jn_decoder_t *d, const jn_field_t *f, const jn_amqp_tdesc_t *t,
                            void *obj, jn_amqp_fault_t *fault)
{
    uint8_t *base = obj;
    jn_amqp_defaults_zeroed(t, obj); /* obj lies in the performative zeroed below */
    if (f->type != JN_TYPE_LIST || stacked_descriptors(f))
        return jn_amqp_fail(fault, DECODE_ERROR, "%s is a described %s%s, not a list", t->name,
                            stacked_descriptors(f) ? "described " : "", jn_amqp_type_name(f->type));
    jn_decoder_t child;
    if (jn_decoder_enter(d, f, &child) != 0)
        return jn_amqp_fail(fault, DECODE_ERROR, "%s cannot be decoded: %s", t->name,
                            jn_decoder_reason(&child));
    uint32_t *present = (uint32_t *)(base + t->present_at);
    jn_field_t v;
    for (uint32_t i = 0;; i++) {
        int rc = jn_decoder_next(&child, &v);
        if (rc == 0)
            break;
        if (rc < 0)
            return jn_amqp_fail(fault, DECODE_ERROR, "%s field %u cannot be decoded: %s", t->name,
                                (unsigned)i, jn_decoder_reason(&child));
        if (i >= t->count) { /* a field of a later version: checked, ignored */
            char where[64];
            snprintf(where, sizeof where, "%s field %u", t->name, (unsigned)i);
            if ((rc = check_compound(&child, &v, fault, where)) != 0)
                return rc;
            continue;
        }
        if (v.type == JN_TYPE_NULL && !v.described)
            continue;
        const jn_amqp_fdesc_t *fd = &t->fields[i];
        if ((rc = decode_field(&child, &v, fd, base + fd->offset, t->name, fault)) != 0)
            return rc;
        *present |= JN_AMQP_FIELD(i);
    }
    for (unsigned i = 0; i < t->count; i++)
        if (t->fields[i].mandatory && !(*present & JN_AMQP_FIELD(i)))
            return jn_amqp_fail(fault, INVALID_FIELD, "%s field %s is mandatory but null", t->name,
                                t->fields[i].name);
    return 0;
}

/* A uint field's value at *q (uint0, smalluint or uint, 1.6.8) into *v,
 * *q moved past it. Returns false for any other encoding or when it does
 * not fit before lim. */
__attribute__((always_inline)) static inline bool fast_uint(const uint8_t **q, const uint8_t *lim,
                                                            uint8_t code, uint32_t *v)
{
    const uint8_t *o = *q;
    switch (code) {
    case 0x43:
        *v = 0;
        return true;
    case 0x52:
        if (lim - o < 1)
            return false;
        *v = o[0];
        *q = o + 1;
        return true;
    case 0x70:
        if (lim - o < 4)
            return false;
        *v = (uint32_t)o[0] << 24 | (uint32_t)o[1] << 16 | (uint32_t)o[2] << 8 | o[3];
        *q = o + 4;
        return true;
    default:
        return false;
    }
}

/* A boolean field's value at *q (true, false, or boolean with its octet
 * 0 or 1) into *v. Returns false for any other encoding. */
static bool fast_bool(const uint8_t **q, const uint8_t *lim, uint8_t code, bool *v)
{
    if (code == 0x41 || code == 0x42) {
        *v = code == 0x41;
        return true;
    }
    if (code != 0x56 || lim - *q < 1 || **q > 1)
        return false;
    *v = **q;
    (*q)++;
    return true;
}

/* One field i of a transfer at *q (its constructor octet read as code).
 * Returns false when it is not in a shape taken here. */
__attribute__((always_inline)) static inline bool
fast_transfer_field(jn_amqp_transfer_t *t, unsigned i, uint8_t code, const uint8_t **q,
                    const uint8_t *lim, const jn_buffer_t *buffer)
{
    switch (i) {
    case 0:
        return fast_uint(q, lim, code, &t->handle);
    case 1:
        return fast_uint(q, lim, code, &t->delivery_id);
    case 2: {
        if (code != 0xa0 || lim - *q < 1 || (size_t)(lim - *q - 1) < **q)
            return false;
        size_t len = **q;
        jn_iter_raw_run(&t->delivery_tag, buffer, *q + 1, len);
        *q += 1 + len;
        return true;
    }
    case 3:
        return fast_uint(q, lim, code, &t->message_format);
    case 4:
        return fast_bool(q, lim, code, &t->settled);
    case 5:
        return fast_bool(q, lim, code, &t->more);
    case 6:
        if (code != 0x50 || lim - *q < 1 || **q > 1)
            return false;
        t->rcv_settle_mode = *(*q)++;
        return true;
    case 8:
        return fast_bool(q, lim, code, &t->resume);
    case 9:
        return fast_bool(q, lim, code, &t->aborted);
    case 10:
        return fast_bool(q, lim, code, &t->batchable);
    default: /* a state, or a field of a later version */
        return false;
    }
}

/* Field i of a transfer at *q, null or in a shape fast_transfer_field
 * takes, *q moved past it. False for anything else. Inlined with i a
 * constant for the first four fields, so their switch folds away. */
__attribute__((always_inline)) static inline bool
fast_transfer_next(jn_amqp_transfer_t *t, unsigned i, const uint8_t **q, const uint8_t *lim,
                   const jn_buffer_t *buffer)
{
    if (*q >= lim)
        return false;
    uint8_t code = *(*q)++;
    if (code == 0x40)
        return true;
    if (!fast_transfer_field(t, i, code, q, lim, buffer))
        return false;
    t->present |= JN_AMQP_FIELD(i);
    return true;
}

/* The transfer performative (2.7.5) in the shape senders write, read
 * straight from the octets: it runs for every frame a link receives. Taken
 * here: descriptor 0x14 as a smallulong, a list8 within the input's
 * current run, and fields 0-6 and 8-10 each null or in their plain
 * encodings (uint0/smalluint/uint, vbin8, true/false/boolean, ubyte).
 * Returns 1 with *p and *payload set as the table-driven decoder sets them,
 * or 0 for anything else (a state, a described or wider field, a list32,
 * a value out of range, a null handle, a malformed list), which that
 * decoder then decodes or refuses with its fault. */
static int decode_transfer_fast(const jn_iter_t *body, jn_amqp_perf_t *p, jn_iter_t *payload)
{
    const uint8_t *q = body->cursor;
    if (body->view != JN_VIEW_RAW || body->prefix_pos < body->prefix_len || body->limit - q < 6 ||
        q[0] != 0x00 || q[1] != 0x53 || q[2] != JN_AMQP_TRANSFER || q[3] != 0xc0)
        return 0;
    size_t size = q[4];
    unsigned count = q[5];
    if (size < 1 || (size_t)(body->limit - q - 5) < size || count == 0 || count > 11)
        return 0;
    const uint8_t *lim = q + 5 + size;
    q += 6;
    /* every default is 0 or false; the state (field 7, which this path
     * never takes) is left as it was: it is read only when present */
    memset(p, 0, offsetof(jn_amqp_perf_t, u) + offsetof(jn_amqp_transfer_t, state));
    p->code = JN_AMQP_TRANSFER;
    jn_amqp_transfer_t *t = &p->u.transfer;
    t->resume = t->aborted = t->batchable = false;
    /* handle, delivery-id, delivery-tag, message-format: nearly every
     * first frame's fields, each read without a loop round */
    const jn_buffer_t *b = body->buffer;
    if (!fast_transfer_next(t, 0, &q, lim, b) ||
        (count > 1 && !fast_transfer_next(t, 1, &q, lim, b)) ||
        (count > 2 && !fast_transfer_next(t, 2, &q, lim, b)) ||
        (count > 3 && !fast_transfer_next(t, 3, &q, lim, b)))
        return 0;
    for (unsigned i = 4; i < count; i++)
        if (!fast_transfer_next(t, i, &q, lim, b))
            return 0;
    if (q != lim || !(t->present & JN_AMQP_FIELD(0)))
        return 0;
    if (payload) { /* the rest of the body: lim lies in the same run */
        *payload = *body;
        payload->cursor = lim;
    }
    return 1;
}

/* One field i of a disposition at *q (its constructor octet read as
 * code; start: where that octet lies). The state is taken only as
 * accepted or released with an empty list, the outcomes receivers send
 * most. Returns false when the field is not in a shape taken here. */
static bool fast_disposition_field(jn_amqp_disposition_t *t, unsigned i, uint8_t code,
                                   const uint8_t *start, const uint8_t **q, const uint8_t *lim,
                                   const jn_buffer_t *buffer)
{
    switch (i) {
    case 0:
        return fast_bool(q, lim, code, &t->role);
    case 1:
        return fast_uint(q, lim, code, &t->first);
    case 2:
        return fast_uint(q, lim, code, &t->last);
    case 3:
        return fast_bool(q, lim, code, &t->settled);
    case 4: {
        const uint8_t *o = *q;
        if (code != 0x00 || lim - o < 3 || o[0] != 0x53 ||
            (o[1] != JN_AMQP_ACCEPTED && o[1] != JN_AMQP_RELEASED) || o[2] != 0x45)
            return false;
        t->state.code = o[1];
        jn_iter_raw_run(&t->state.encoded, buffer, start, 4);
        *q = o + 3;
        return true;
    }
    case 5:
        return fast_bool(q, lim, code, &t->batchable);
    default:
        return false;
    }
}

/* The disposition performative (2.7.6) in the shape receivers write, read
 * straight from the octets as decode_transfer_fast reads a transfer:
 * descriptor 0x15 as a smallulong, a list8 within the input's current run,
 * fields 0-5 each null or in their plain encodings, the state accepted or
 * released. Returns 1 with *p set as the table-driven decoder sets it, or
 * 0 for anything else, which that decoder then decodes or refuses. */
static int decode_disposition_fast(const jn_iter_t *body, jn_amqp_perf_t *p, jn_iter_t *payload)
{
    const uint8_t *q = body->cursor;
    if (body->view != JN_VIEW_RAW || body->prefix_pos < body->prefix_len || body->limit - q < 6 ||
        q[0] != 0x00 || q[1] != 0x53 || q[2] != JN_AMQP_DISPOSITION || q[3] != 0xc0)
        return 0;
    size_t size = q[4];
    unsigned count = q[5];
    if (size < 1 || (size_t)(body->limit - q - 5) < size || count == 0 || count > 6)
        return 0;
    const uint8_t *lim = q + 5 + size;
    q += 6;
    memset(p, 0, offsetof(jn_amqp_perf_t, u) + sizeof(jn_amqp_disposition_t));
    p->code = JN_AMQP_DISPOSITION;
    jn_amqp_disposition_t *t = &p->u.disposition; /* every default is 0 or false */
    for (unsigned i = 0; i < count; i++) {
        if (q >= lim)
            return 0;
        const uint8_t *start = q;
        uint8_t code = *q++;
        if (code == 0x40)
            continue;
        if (!fast_disposition_field(t, i, code, start, &q, lim, body->buffer))
            return 0;
        t->present |= JN_AMQP_FIELD(i);
    }
    if (q != lim || (t->present & (JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1))) !=
                        (JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1)))
        return 0;
    if (payload) { /* the rest of the body: lim lies in the same run */
        *payload = *body;
        payload->cursor = lim;
    }
    return 1;
}

/* A transfer or disposition whose performative the input's current run
 * cuts (the frame straddles two of the transport's buffers, one frame in
 * twenty or so): its list8 (at most JN_AMQP_PERF_HEAD octets) copied into
 * scratch and read there by the fast paths, *payload the body's octets
 * after it where they lie. Returns 1, or 0 for any other shape (the
 * table-driven decoder then reads the body where it lies). */
static int decode_split_fast(const jn_iter_t *body, jn_amqp_perf_t *p, jn_iter_t *payload,
                             uint8_t scratch[JN_AMQP_PERF_HEAD])
{
    if (body->view != JN_VIEW_RAW || body->prefix_pos < body->prefix_len || body->remaining == 0)
        return 0;
    jn_iter_t it = *body;
    if (jn_iter_copy(&it, scratch, 6) != 6 || scratch[0] != 0x00 || scratch[1] != 0x53 ||
        scratch[3] != 0xc0)
        return 0;
    size_t size = scratch[4]; /* octets after the size: count and fields */
    if (size < 1 || jn_iter_copy(&it, scratch + 6, size - 1) != size - 1)
        return 0;
    jn_iter_t flat;
    jn_iter_init_bytes(&flat, scratch, 5 + size, JN_VIEW_RAW);
    if (!decode_transfer_fast(&flat, p, NULL) && !decode_disposition_fast(&flat, p, NULL))
        return 0;
    if (payload)
        *payload = it; /* the octets after the list, where they lie */
    return 1;
}

int jn_amqp_perf_decode_frame(const jn_iter_t *body, jn_amqp_perf_t *p, jn_iter_t *payload,
                              uint8_t scratch[JN_AMQP_PERF_HEAD], jn_amqp_fault_t *fault)
{
    if (JN_LIKELY(decode_transfer_fast(body, p, payload)))
        return 0;
    if (decode_split_fast(body, p, payload, scratch))
        return 0;
    return jn_amqp_perf_decode(body, JN_AMQP_FRAME_AMQP, p, payload, fault);
}

int jn_amqp_perf_decode(const jn_iter_t *body, uint8_t frame_type, jn_amqp_perf_t *p,
                        jn_iter_t *payload, jn_amqp_fault_t *fault)
{
    if (frame_type == JN_AMQP_FRAME_AMQP && decode_transfer_fast(body, p, payload))
        return 0;
    if (frame_type == JN_AMQP_FRAME_AMQP && decode_disposition_fast(body, p, payload))
        return 0;
    jn_decoder_t d;
    jn_field_t f;
    jn_decoder_init(&d, body, true);
    int rc = jn_decoder_next(&d, &f);
    if (rc == 0)
        return jn_amqp_fail(fault, DECODE_ERROR, "frame body holds no performative");
    if (rc < 0)
        return jn_amqp_fail(fault, DECODE_ERROR, "performative cannot be decoded: %s",
                            jn_decoder_reason(&d));
    if (!f.described)
        return jn_amqp_fail(fault, DECODE_ERROR,
                            "frame body is a plain %s, not a described performative",
                            jn_amqp_type_name(f.type));
    uint64_t code = descriptor_of(&f);
    bool sasl = frame_type == JN_AMQP_FRAME_SASL;
    uint64_t lo = sasl ? JN_AMQP_SASL_MECHANISMS : JN_AMQP_OPEN;
    uint64_t hi = sasl ? JN_AMQP_SASL_OUTCOME : JN_AMQP_CLOSE;
    if (code < lo || code > hi)
        return jn_amqp_fail(fault, DECODE_ERROR, "descriptor 0x%llx names no %s performative",
                            (unsigned long long)code, sasl ? "SASL" : "AMQP");
    const jn_amqp_tdesc_t *t = jn_amqp_tdesc_by_code(code);
    memset(p, 0, offsetof(jn_amqp_perf_t, u) + t->size); /* the member code names */
    p->code = code;
    p->symbolic = f.descriptor_is_symbol;
    if ((rc = decode_composite(&d, &f, t, &p->u, fault)) != 0)
        return rc;
    if (payload)
        jn_decoder_mark(&d, payload);
    return 0;
}
