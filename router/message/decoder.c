/*
 * decoder.c — the AMQP 1.0 decoder (junction/decoder.h; spec part 1,
 * section 1.6 "Type Encodings" and 1.5 "Composite Type Representation").
 *
 * How it works. Every format code maps, through code_table, to its category
 * (fixed, variable, compound, array), the width of its data or of its size
 * field, and the AMQP type it carries. jn_decoder_next() reads one value:
 * its constructor (a format code, possibly preceded by 0x00 and descriptors),
 * then its data by category. Fixed-width data is decoded into the field;
 * everything else is described by raw iterator views over the buffers
 * (jn_iter_sub), so no octet is copied. A compound is checked (its size must
 * hold its count, and its count must be possible in its size) but its
 * elements are only read when the caller enters it with jn_decoder_enter(),
 * which gives a child decoder bounded to the compound's payload.
 *
 * Octets are read only through the iterator. Each read works on a copy of
 * the decoder's iterator and commits it when the whole value was present;
 * running out of octets is reported inside this file as JN_AGAIN and turned
 * into JN_AGAIN (top level, data still growing) or JN_EPROTO (data complete,
 * or inside a container whose size already said how much there is) by
 * jn_decoder_next(). So a failed call never changes the decoder's position.
 *
 * Depth. A value's nesting level is its decoder's depth plus the number of
 * descriptors in front of it; a child decoder is one deeper than its parent.
 * Neither may exceed JN_DECODE_MAX_DEPTH (JN_EOVERFLOW), so a caller that
 * recurses over nested values has a bounded stack.
 */
#include <junction/decoder.h>

#include <string.h>

/* Category of a format code (part 1, 1.6 and the subcategories of 1.2). */
enum {
    CAT_INVALID = 0, /* not an AMQP 1.0 format code */
    CAT_FIXED,       /* width octets of data */
    CAT_VARIABLE,    /* width-octet size, then that many octets */
    CAT_COMPOUND,    /* width-octet size and count, then the elements */
    CAT_ARRAY        /* as compound, then one element constructor */
};

typedef struct code_info {
    uint8_t category; /* CAT_* */
    uint8_t width;    /* fixed: octets of data; else octets of size and count */
    uint8_t type;     /* jn_amqp_type_t */
} code_info_t;

static const code_info_t code_table[256] = {
    [JN_AMQP_NULL] = {CAT_FIXED, 0, JN_TYPE_NULL},
    [JN_AMQP_TRUE] = {CAT_FIXED, 0, JN_TYPE_BOOLEAN},
    [JN_AMQP_FALSE] = {CAT_FIXED, 0, JN_TYPE_BOOLEAN},
    [JN_AMQP_UINT0] = {CAT_FIXED, 0, JN_TYPE_UINT},
    [JN_AMQP_ULONG0] = {CAT_FIXED, 0, JN_TYPE_ULONG},
    [JN_AMQP_LIST0] = {CAT_COMPOUND, 0, JN_TYPE_LIST},
    [JN_AMQP_BOOLEAN] = {CAT_FIXED, 1, JN_TYPE_BOOLEAN},
    [JN_AMQP_UBYTE] = {CAT_FIXED, 1, JN_TYPE_UBYTE},
    [JN_AMQP_BYTE] = {CAT_FIXED, 1, JN_TYPE_BYTE},
    [JN_AMQP_SMALLUINT] = {CAT_FIXED, 1, JN_TYPE_UINT},
    [JN_AMQP_SMALLULONG] = {CAT_FIXED, 1, JN_TYPE_ULONG},
    [JN_AMQP_SMALLINT] = {CAT_FIXED, 1, JN_TYPE_INT},
    [JN_AMQP_SMALLLONG] = {CAT_FIXED, 1, JN_TYPE_LONG},
    [JN_AMQP_USHORT] = {CAT_FIXED, 2, JN_TYPE_USHORT},
    [JN_AMQP_SHORT] = {CAT_FIXED, 2, JN_TYPE_SHORT},
    [JN_AMQP_UINT] = {CAT_FIXED, 4, JN_TYPE_UINT},
    [JN_AMQP_INT] = {CAT_FIXED, 4, JN_TYPE_INT},
    [JN_AMQP_FLOAT] = {CAT_FIXED, 4, JN_TYPE_FLOAT},
    [JN_AMQP_CHAR] = {CAT_FIXED, 4, JN_TYPE_CHAR},
    [JN_AMQP_DECIMAL32] = {CAT_FIXED, 4, JN_TYPE_DECIMAL32},
    [JN_AMQP_ULONG] = {CAT_FIXED, 8, JN_TYPE_ULONG},
    [JN_AMQP_LONG] = {CAT_FIXED, 8, JN_TYPE_LONG},
    [JN_AMQP_DOUBLE] = {CAT_FIXED, 8, JN_TYPE_DOUBLE},
    [JN_AMQP_TIMESTAMP] = {CAT_FIXED, 8, JN_TYPE_TIMESTAMP},
    [JN_AMQP_DECIMAL64] = {CAT_FIXED, 8, JN_TYPE_DECIMAL64},
    [JN_AMQP_DECIMAL128] = {CAT_FIXED, 16, JN_TYPE_DECIMAL128},
    [JN_AMQP_UUID] = {CAT_FIXED, 16, JN_TYPE_UUID},
    [JN_AMQP_VBIN8] = {CAT_VARIABLE, 1, JN_TYPE_BINARY},
    [JN_AMQP_STR8] = {CAT_VARIABLE, 1, JN_TYPE_STRING},
    [JN_AMQP_SYM8] = {CAT_VARIABLE, 1, JN_TYPE_SYMBOL},
    [JN_AMQP_VBIN32] = {CAT_VARIABLE, 4, JN_TYPE_BINARY},
    [JN_AMQP_STR32] = {CAT_VARIABLE, 4, JN_TYPE_STRING},
    [JN_AMQP_SYM32] = {CAT_VARIABLE, 4, JN_TYPE_SYMBOL},
    [JN_AMQP_LIST8] = {CAT_COMPOUND, 1, JN_TYPE_LIST},
    [JN_AMQP_MAP8] = {CAT_COMPOUND, 1, JN_TYPE_MAP},
    [JN_AMQP_LIST32] = {CAT_COMPOUND, 4, JN_TYPE_LIST},
    [JN_AMQP_MAP32] = {CAT_COMPOUND, 4, JN_TYPE_MAP},
    [JN_AMQP_ARRAY8] = {CAT_ARRAY, 1, JN_TYPE_ARRAY},
    [JN_AMQP_ARRAY32] = {CAT_ARRAY, 4, JN_TYPE_ARRAY},
};

/* A parsed constructor: the format code and the outermost descriptor. */
typedef struct ctor {
    uint8_t code;
    bool described;
    bool desc_is_symbol;
    uint64_t desc_code;
    jn_iter_t desc_symbol;
} ctor_t;

/* Record why d failed and return rc. */
static int fail(jn_decoder_t *d, int rc, const char *reason)
{
    d->reason = reason;
    return rc;
}

/* Read a width-octet big-endian unsigned number (width <= 8). Returns 0, or
 * JN_AGAIN when the data ends first. */
static inline int read_be(jn_iter_t *it, unsigned width, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < width; i++) {
        int o = jn_iter_octet(it);
        if (JN_UNLIKELY(o == JN_ITER_END))
            return JN_AGAIN;
        v = (v << 8) | (unsigned)o;
    }
    *out = v;
    return 0;
}

/* Make *view a raw view of the next n octets and skip them. Returns 0, or
 * JN_AGAIN when fewer than n are left. */
static inline int take(jn_iter_t *it, uint64_t n, jn_iter_t *view)
{
    if (JN_UNLIKELY(jn_iter_length(it) < n))
        return JN_AGAIN;
    jn_iter_sub(it, (size_t)n, view);
    jn_iter_advance(it, (size_t)n);
    return 0;
}

/* Read one descriptor (the value after a 0x00): a ulong in any of its
 * encodings or a symbol (part 1, 1.5). Recorded in c when keep. */
static int read_descriptor(jn_decoder_t *d, jn_iter_t *it, bool keep, ctor_t *c)
{
    int code = jn_iter_octet(it);
    if (code == JN_ITER_END)
        return JN_AGAIN;
    const code_info_t *ci = &code_table[code];
    uint64_t v;
    int rc;
    if (ci->category == CAT_FIXED && ci->type == JN_TYPE_ULONG) {
        if ((rc = read_be(it, ci->width, &v)) != 0)
            return rc;
        if (keep) {
            c->desc_is_symbol = false;
            c->desc_code = v;
        }
        return 0;
    }
    if (ci->category == CAT_VARIABLE && ci->type == JN_TYPE_SYMBOL) {
        jn_iter_t sym;
        if ((rc = read_be(it, ci->width, &v)) != 0 || (rc = take(it, v, &sym)) != 0)
            return rc;
        if (keep) {
            c->desc_is_symbol = true;
            c->desc_code = 0;
            c->desc_symbol = sym;
        }
        return 0;
    }
    if (code == JN_AMQP_DESCRIBED)
        return fail(d, JN_EPROTO, "a descriptor is itself a described value");
    return fail(d, JN_EPROTO, "a descriptor is neither a ulong nor a symbol");
}

/* Read a constructor: descriptors (each after 0x00), then a format code.
 * depth is the nesting level of the value before its descriptors. Returns 0,
 * JN_AGAIN, JN_EPROTO (bad descriptor) or JN_EOVERFLOW (too many). The
 * format code is not checked. */
static int read_constructor(jn_decoder_t *d, jn_iter_t *it, unsigned depth, ctor_t *c)
{
    c->described = false;
    c->desc_is_symbol = false;
    c->desc_code = 0;
    for (;;) {
        int code = jn_iter_octet(it);
        if (code == JN_ITER_END)
            return JN_AGAIN;
        if (JN_LIKELY(code != JN_AMQP_DESCRIBED)) {
            c->code = (uint8_t)code;
            return 0;
        }
        if (++depth > JN_DECODE_MAX_DEPTH)
            return fail(d, JN_EOVERFLOW, "described values are nested too deeply");
        int rc = read_descriptor(d, it, !c->described, c);
        if (rc != 0)
            return rc;
        c->described = true;
    }
}

/* Store the fixed-width value v (w octets, w < 16, read big-endian) of
 * format code f->code into f->value (zeroed by the caller). */
static int set_fixed(jn_decoder_t *d, unsigned w, uint64_t v, jn_field_t *f)
{
    switch (f->code) {
    case JN_AMQP_TRUE:
        f->value.b = true;
        break;
    case JN_AMQP_FALSE:
        f->value.b = false;
        break;
    case JN_AMQP_BOOLEAN:
        if (v > 1)
            return fail(d, JN_EPROTO, "boolean octet is neither 0x00 nor 0x01");
        f->value.b = v != 0;
        break;
    case JN_AMQP_BYTE:
    case JN_AMQP_SMALLINT:
    case JN_AMQP_SMALLLONG:
        f->value.i = (int8_t)(uint8_t)v;
        break;
    case JN_AMQP_SHORT:
        f->value.i = (int16_t)(uint16_t)v;
        break;
    case JN_AMQP_INT:
        f->value.i = (int32_t)(uint32_t)v;
        break;
    case JN_AMQP_LONG:
    case JN_AMQP_TIMESTAMP:
        f->value.i = (int64_t)v;
        break;
    case JN_AMQP_FLOAT: {
        uint32_t bits = (uint32_t)v;
        memcpy(&f->value.f, &bits, sizeof bits);
        break;
    }
    case JN_AMQP_DOUBLE:
        memcpy(&f->value.d, &v, sizeof v);
        break;
    case JN_AMQP_DECIMAL32:
    case JN_AMQP_DECIMAL64:
        for (unsigned i = 0; i < w; i++)
            f->value.bytes[i] = (uint8_t)(v >> (8 * (w - 1 - i)));
        break;
    default: /* null, unsigned integers, char */
        f->value.u = v;
        break;
    }
    return 0;
}

/* Fixed width: decode the value into f (part 1, 1.6.1 - 1.6.20). */
static int decode_fixed(jn_decoder_t *d, jn_iter_t *it, const code_info_t *ci, jn_field_t *f)
{
    unsigned w = ci->width;
    uint64_t v;
    jn_iter_sub(it, w, &f->payload);
    f->size = w;
    if (w == 16) { /* decimal128, uuid: kept as octets */
        for (unsigned i = 0; i < 16; i++) {
            int o = jn_iter_octet(it);
            if (o == JN_ITER_END)
                return JN_AGAIN;
            f->value.bytes[i] = (uint8_t)o;
        }
        return 0;
    }
    if (read_be(it, w, &v) != 0)
        return JN_AGAIN;
    return set_fixed(d, w, v, f);
}

/* Variable width: size, then the octets, viewed in place (1.6.21 - 1.6.23). */
static int decode_variable(jn_iter_t *it, const code_info_t *ci, jn_field_t *f)
{
    uint64_t n;
    if (read_be(it, ci->width, &n) != 0 || take(it, n, &f->payload) != 0)
        return JN_AGAIN;
    f->size = (uint32_t)n;
    return 0;
}

/* List or map: size, count, then the elements, checked but not read
 * (1.6.24 - 1.6.25). */
static int decode_compound(jn_decoder_t *d, jn_iter_t *it, const code_info_t *ci, jn_field_t *f)
{
    unsigned w = ci->width;
    uint64_t size, count = 0;
    if (w == 0) { /* list0 */
        jn_iter_sub(it, 0, &f->payload);
        return 0;
    }
    if (read_be(it, w, &size) != 0)
        return JN_AGAIN;
    if (size < w)
        return fail(d, JN_EPROTO, "compound size is too small to hold its count");
    if (jn_iter_length(it) < size)
        return JN_AGAIN;
    (void)read_be(it, w, &count);
    uint64_t content = size - w;
    if (ci->type == JN_TYPE_MAP && (count & 1) != 0)
        return fail(d, JN_EPROTO, "map has an odd number of keys and values");
    if (count > content) /* each element takes at least its format code */
        return fail(d, JN_EPROTO, "element count is larger than the compound's size allows");
    (void)take(it, content, &f->payload);
    f->size = (uint32_t)content;
    f->count = (uint32_t)count;
    return 0;
}

/* Octets the smallest element of an array with this element code takes. */
static unsigned element_min_octets(const code_info_t *ci)
{
    switch (ci->category) {
    case CAT_COMPOUND:
        return 2u * ci->width; /* size and count (list0: none) */
    case CAT_ARRAY:
        return 2u * ci->width + 1; /* size, count and a format code */
    default:
        return ci->width; /* fixed data, or the size of variable data */
    }
}

/* Read and check an array's element constructor from body (the array's
 * octets after its count); count is the array's. depth is the elements'
 * nesting level. On success body is positioned at the first element. */
static int read_element_ctor(jn_decoder_t *d, jn_iter_t *body, unsigned depth, uint64_t count,
                             ctor_t *c)
{
    int rc = read_constructor(d, body, depth, c);
    if (rc == JN_AGAIN)
        return fail(d, JN_EPROTO, "array element constructor runs past the array's size");
    if (rc != 0)
        return rc;
    const code_info_t *ci = &code_table[c->code];
    if (ci->category == CAT_INVALID)
        return fail(d, JN_EPROTO, "array element format code is unknown");
    uint64_t data = jn_iter_length(body);
    /* Elements that take no octets (null, true, false, uint0, ulong0,
     * list0) would let a few octets claim billions of elements, each costing
     * a decode step: bound their count (found by fuzzing). */
    if (element_min_octets(ci) == 0 && count > JN_DECODE_MAX_EMPTY_ELEMENTS)
        return fail(d, JN_EPROTO, "array has too many elements that take no octets");
    if (ci->category == CAT_FIXED) {
        if (count * ci->width != data)
            return fail(d, JN_EPROTO,
                        "array size does not match its count of fixed-width elements");
        if (count == UINT32_MAX) /* reserved by jn_decoder_t.items_left */
            return fail(d, JN_EPROTO, "array count is too large");
    } else if (count * element_min_octets(ci) > data) {
        return fail(d, JN_EPROTO, "element count is larger than the array's size allows");
    }
    return 0;
}

/* Array: size, count, element constructor, then the elements' data
 * (1.6.26). The payload starts after the element constructor. */
static int decode_array(jn_decoder_t *d, jn_iter_t *it, const code_info_t *ci, jn_field_t *f)
{
    unsigned w = ci->width;
    uint64_t size, count = 0;
    jn_iter_t body;
    ctor_t c;
    if (read_be(it, w, &size) != 0)
        return JN_AGAIN;
    if (size < w + 1u)
        return fail(d, JN_EPROTO, "array size is too small to hold its count and constructor");
    if (jn_iter_length(it) < size)
        return JN_AGAIN;
    (void)read_be(it, w, &count);
    (void)take(it, size - w, &body);
    int rc = read_element_ctor(d, &body, d->depth + 1u, count, &c);
    if (rc != 0)
        return rc;
    f->elem_code = c.code;
    f->elem_described = c.described;
    f->size = (uint32_t)jn_iter_length(&body);
    f->count = (uint32_t)count;
    jn_iter_sub(&body, f->size, &f->payload);
    return 0;
}

/* Decode the value at *it into f; *it moves past it. */
static int decode_value(jn_decoder_t *d, jn_iter_t *it, jn_field_t *f)
{
    uint8_t code;
    if (d->in_array) {
        code = d->elem_code;
        f->described = d->elem_described;
        f->descriptor_is_symbol = d->elem_descriptor_is_symbol;
        f->descriptor_code = d->elem_descriptor_code;
        if (d->elem_descriptor_is_symbol)
            f->descriptor_symbol = d->elem_descriptor_symbol;
    } else {
        ctor_t c;
        int rc = read_constructor(d, it, d->depth, &c);
        if (rc != 0)
            return rc;
        code = c.code;
        f->described = c.described;
        f->descriptor_is_symbol = c.desc_is_symbol;
        f->descriptor_code = c.desc_code;
        if (c.desc_is_symbol)
            f->descriptor_symbol = c.desc_symbol;
    }
    const code_info_t *ci = &code_table[code];
    f->type = (jn_amqp_type_t)ci->type;
    f->code = code;
    f->elem_code = 0;
    f->elem_described = false;
    f->size = 0;
    f->count = 0;
    memset(&f->value, 0, sizeof f->value);
    switch (ci->category) {
    case CAT_FIXED:
        return decode_fixed(d, it, ci, f);
    case CAT_VARIABLE:
        return decode_variable(it, ci, f);
    case CAT_COMPOUND:
        return decode_compound(d, it, ci, f);
    case CAT_ARRAY:
        return decode_array(d, it, ci, f);
    default:
        return fail(d, JN_EPROTO, "unknown format code");
    }
}

#include "decoder_scan.h" /* SLOW, run_value_t, run_ready, scan_mem */

/* Read the value at d->it.cursor (run_ready(d)) into *v: 0 or SLOW (d is
 * never changed). */
__attribute__((always_inline)) static inline int scan_run(const jn_decoder_t *d, run_value_t *v)
{
    return scan_mem(d->it.cursor, d->it.limit, d->depth, v);
}

/* Move d past the value v that scan_run() read. */
static inline void run_commit(jn_decoder_t *d, const run_value_t *v)
{
    d->it.cursor = v->end;
    if (d->items_left != UINT32_MAX)
        d->items_left--;
}

/* A decoder at depth over the octets of it: everything else cleared.
 * Field by field, not memset: the element descriptor symbol (72 octets) is
 * read only when elem_descriptor_is_symbol says it was set. Hot path: one
 * per section or compound entered. */
static inline void decoder_at(jn_decoder_t *d, const jn_iter_t *it, uint32_t items_left,
                              unsigned depth, bool complete)
{
    d->it = *it;
    d->items_left = items_left;
    d->depth = (uint8_t)depth;
    d->complete = complete;
    d->in_array = false;
    d->elem_code = 0;
    d->elem_described = false;
    d->elem_descriptor_is_symbol = false;
    d->elem_descriptor_code = 0;
    d->reason = NULL;
}

void jn_decoder_init(jn_decoder_t *d, const jn_iter_t *raw, bool complete)
{
    decoder_at(d, raw, UINT32_MAX, 0, complete);
}

/* jn_decoder_next() for everything the fast path leaves: the general,
 * iterator-based decode. */
__attribute__((noinline)) static int next_general(jn_decoder_t *d, jn_field_t *f)
{
    bool top = d->items_left == UINT32_MAX;
    if (d->items_left == 0) {
        if (!jn_iter_end(&d->it))
            return fail(d, JN_EPROTO, "container has octets after its last element");
        return 0;
    }
    if (top && jn_iter_end(&d->it))
        return 0;
    jn_iter_t it = d->it;
    int rc = decode_value(d, &it, f);
    if (JN_UNLIKELY(rc != 0)) {
        if (rc != JN_AGAIN)
            return rc;
        if (!top)
            return fail(d, JN_EPROTO, "element runs past the end of its container");
        if (d->complete)
            return fail(d, JN_EPROTO, "value is cut short by the end of the data");
        return JN_AGAIN;
    }
    size_t used = jn_iter_length(&d->it) - jn_iter_length(&it);
    jn_iter_sub(&d->it, used, &f->encoded);
    d->it = it;
    if (!top)
        d->items_left--;
    return 1;
}

#ifdef JN_DEBUG
/* Debug builds check every value the fast path takes against the general
 * path: same result, same field, same position. */
static bool same_view(const jn_iter_t *a, const jn_iter_t *b)
{
    return a->cursor == b->cursor && jn_iter_length(a) == jn_iter_length(b) &&
           jn_iter_equal_iter(a, b);
}

static void check_fast(const jn_decoder_t *before, const jn_decoder_t *after, const jn_field_t *f,
                       const jn_value_t *v)
{
    jn_decoder_t g = *before;
    jn_field_t e;
    JN_CHECK(next_general(&g, &e) == 1);
    JN_CHECK(g.it.cursor == after->it.cursor && g.items_left == after->items_left);
    if (v) {
        JN_CHECK(v->type == e.type && v->code == e.code && v->described == e.described &&
                 v->size == e.size && v->count == e.count && v->contiguous &&
                 v->data == e.payload.cursor);
        return;
    }
    JN_CHECK(f->type == e.type && f->code == e.code && f->described == e.described &&
             f->descriptor_is_symbol == e.descriptor_is_symbol &&
             f->descriptor_code == e.descriptor_code && f->size == e.size && f->count == e.count &&
             f->elem_code == e.elem_code && f->elem_described == e.elem_described &&
             memcmp(&f->value, &e.value, sizeof e.value) == 0);
    JN_CHECK(!f->descriptor_is_symbol || same_view(&f->descriptor_symbol, &e.descriptor_symbol));
    JN_CHECK(same_view(&f->payload, &e.payload) && same_view(&f->encoded, &e.encoded));
}
#define CHECK_FAST(before, after, f, v) check_fast(before, after, f, v)
#else
#define CHECK_FAST(before, after, f, v) ((void)0)
#endif

/* used_up_in_memory: the end of a sequence, or of a container whose
 * elements are all read, with the position in memory: the fast paths answer
 * 0 for it without the general path. */
static inline bool used_up_in_memory(const jn_decoder_t *d)
{
    return d->it.cursor == d->it.limit && jn_iter_contiguous(&d->it) &&
           (d->items_left == 0 || d->items_left == UINT32_MAX);
}

int jn_decoder_next(jn_decoder_t *d, jn_field_t *f)
{
#ifdef JN_DEBUG
    const jn_decoder_t before = *d;
#endif
    run_value_t v;
    if (JN_UNLIKELY(!run_ready(d) || scan_run(d, &v) != 0))
        return used_up_in_memory(d) ? 0 : next_general(d, f);
    /* Fast path: fill f from memory; the same field the general path
     * gives. */
    const jn_buffer_t *b = d->it.buffer;
    const code_info_t *ci = &code_table[v.code];
    f->type = (jn_amqp_type_t)ci->type;
    f->code = v.code;
    f->elem_code = 0;
    f->elem_described = false;
    f->described = v.described;
    f->descriptor_is_symbol = v.desc_sym != NULL;
    f->descriptor_code = v.desc_code;
    if (v.desc_sym)
        jn_iter_raw_run(&f->descriptor_symbol, b, v.desc_sym, v.desc_sym_len);
    memset(&f->value, 0, sizeof f->value);
    if (ci->category == CAT_FIXED) {
        if (v.size == 16)
            memcpy(f->value.bytes, v.payload, 16);
        else
            (void)set_fixed(d, v.size, be_at(v.payload, v.size), f); /* checked by scan_run */
    }
    jn_iter_raw_run(&f->payload, b, v.payload, v.size);
    f->size = v.size;
    f->count = v.count;
    jn_iter_raw_run(&f->encoded, b, v.start, (size_t)(v.end - v.start));
    run_commit(d, &v);
    CHECK_FAST(&before, d, f, NULL);
    return 1;
}

/* jn_decoder_skip() for everything the fast path leaves. */
__attribute__((noinline)) static int skip_general(jn_decoder_t *d, jn_value_t *out)
{
    jn_field_t f;
    int rc = next_general(d, &f);
    if (rc == 1) {
        out->type = f.type;
        out->code = f.code;
        out->described = f.described;
        out->size = f.size;
        out->count = f.count;
        /* a fresh view's cursor is at its first octet */
        out->buffer = f.payload.buffer;
        out->data = f.payload.cursor;
        out->contiguous = jn_iter_contiguous(&f.payload);
    }
    return rc;
}

int jn_decoder_skip(jn_decoder_t *d, jn_value_t *out)
{
#ifdef JN_DEBUG
    const jn_decoder_t before = *d;
#endif
    run_value_t v;
    if (JN_UNLIKELY(!run_ready(d) || scan_run(d, &v) != 0))
        return used_up_in_memory(d) ? 0 : skip_general(d, out);
    out->type = (jn_amqp_type_t)code_table[v.code].type;
    out->code = v.code;
    out->described = v.described;
    out->contiguous = true;
    out->size = v.size;
    out->count = v.count;
    out->buffer = d->it.buffer;
    out->data = v.payload;
    run_commit(d, &v);
    CHECK_FAST(&before, d, NULL, out);
    return 1;
}

size_t jn_decode_peek(const uint8_t *p, size_t avail, unsigned depth, jn_value_t *out)
{
    run_value_t v;
    if (avail == 0 || scan_mem(p, p + avail, depth, &v) != 0)
        return 0;
    out->type = (jn_amqp_type_t)code_table[v.code].type;
    out->code = v.code;
    out->described = v.described;
    out->contiguous = true;
    out->size = v.size;
    out->count = v.count;
    out->buffer = NULL;
    out->data = v.payload;
#ifdef JN_DEBUG
    {
        jn_iter_t it;
        jn_decoder_t g, after;
        jn_iter_init_bytes(&it, p, avail, JN_VIEW_RAW);
        decoder_at(&g, &it, 1, depth, true);
        after = g;
        after.it.cursor = v.end;
        after.items_left = 0;
        CHECK_FAST(&g, &after, NULL, out);
    }
#endif
    return (size_t)(v.end - p);
}

void jn_value_payload(const jn_value_t *v, jn_iter_t *out)
{
    if (v->contiguous || v->buffer == NULL) {
        jn_iter_raw_run(out, v->buffer, v->data, v->size);
        return;
    }
    int rc =
        jn_iter_init(out, v->buffer, (size_t)(v->data - v->buffer->data), v->size, JN_VIEW_RAW);
    JN_CHECK(rc == 0); /* the decoder saw these octets published */
}

int jn_decoder_enter(const jn_decoder_t *d, const jn_field_t *f, jn_decoder_t *child)
{
    if (f->type != JN_TYPE_LIST && f->type != JN_TYPE_MAP && f->type != JN_TYPE_ARRAY)
        return JN_EINVAL;
    decoder_at(child, &f->payload, f->count, d->depth + 1u, true);
    if (d->depth + 1u > JN_DECODE_MAX_DEPTH)
        return fail(child, JN_EOVERFLOW, "compounds are nested too deeply");
    if (f->type != JN_TYPE_ARRAY)
        return 0;
    /* The element constructor sits between the count and the payload:
     * find it again from the array's own encoding. */
    jn_iter_t it = f->encoded;
    ctor_t c;
    uint8_t code = d->elem_code;
    int rc;
    if (!d->in_array) {
        if ((rc = read_constructor(child, &it, d->depth, &c)) != 0)
            return rc == JN_AGAIN ? fail(child, JN_EPROTO, "array encoding is cut short") : rc;
        code = c.code;
    }
    if (code_table[code].category != CAT_ARRAY)
        return JN_EINVAL;
    jn_iter_advance(&it, 2u * code_table[code].width);
    if ((rc = read_element_ctor(child, &it, child->depth, f->count, &c)) != 0)
        return rc;
    child->in_array = true;
    child->elem_code = c.code;
    child->elem_described = c.described;
    child->elem_descriptor_is_symbol = c.desc_is_symbol;
    child->elem_descriptor_code = c.desc_code;
    if (c.desc_is_symbol)
        child->elem_descriptor_symbol = c.desc_symbol;
    return 0;
}

int jn_decoder_enter_value(const jn_decoder_t *d, const jn_value_t *v, jn_decoder_t *child)
{
    if (v->type != JN_TYPE_LIST && v->type != JN_TYPE_MAP)
        return JN_EINVAL;
    jn_iter_t payload;
    jn_value_payload(v, &payload);
    decoder_at(child, &payload, v->count, d->depth + 1u, true);
    if (d->depth + 1u > JN_DECODE_MAX_DEPTH)
        return fail(child, JN_EOVERFLOW, "compounds are nested too deeply");
    return 0;
}

const char *jn_decoder_reason(const jn_decoder_t *d)
{
    return d->reason ? d->reason : "no error";
}

bool jn_field_equal_string(const jn_field_t *f, const char *s)
{
    if (f->type != JN_TYPE_STRING && f->type != JN_TYPE_SYMBOL)
        return false;
    return jn_iter_equal(&f->payload, s);
}

bool jn_field_is_integer(const jn_field_t *f)
{
    switch (f->type) {
    case JN_TYPE_UBYTE:
    case JN_TYPE_USHORT:
    case JN_TYPE_UINT:
    case JN_TYPE_ULONG:
    case JN_TYPE_BYTE:
    case JN_TYPE_SHORT:
    case JN_TYPE_INT:
    case JN_TYPE_LONG:
        return true;
    default:
        return false;
    }
}

/* True for the signed integer types (value in f->value.i). */
static bool is_signed(const jn_field_t *f)
{
    return f->type == JN_TYPE_BYTE || f->type == JN_TYPE_SHORT || f->type == JN_TYPE_INT ||
           f->type == JN_TYPE_LONG;
}

int jn_field_to_int64(const jn_field_t *f, int64_t *out)
{
    if (!jn_field_is_integer(f))
        return JN_EINVAL;
    if (is_signed(f)) {
        *out = f->value.i;
        return 0;
    }
    if (f->value.u > (uint64_t)INT64_MAX)
        return JN_ERANGE;
    *out = (int64_t)f->value.u;
    return 0;
}

int jn_field_to_uint64(const jn_field_t *f, uint64_t *out)
{
    if (!jn_field_is_integer(f))
        return JN_EINVAL;
    if (is_signed(f)) {
        if (f->value.i < 0)
            return JN_ERANGE;
        *out = (uint64_t)f->value.i;
        return 0;
    }
    *out = f->value.u;
    return 0;
}

const char *jn_amqp_type_name(jn_amqp_type_t type)
{
    static const char *const names[] = {
        [JN_TYPE_NULL] = "null",
        [JN_TYPE_BOOLEAN] = "boolean",
        [JN_TYPE_UBYTE] = "ubyte",
        [JN_TYPE_USHORT] = "ushort",
        [JN_TYPE_UINT] = "uint",
        [JN_TYPE_ULONG] = "ulong",
        [JN_TYPE_BYTE] = "byte",
        [JN_TYPE_SHORT] = "short",
        [JN_TYPE_INT] = "int",
        [JN_TYPE_LONG] = "long",
        [JN_TYPE_FLOAT] = "float",
        [JN_TYPE_DOUBLE] = "double",
        [JN_TYPE_DECIMAL32] = "decimal32",
        [JN_TYPE_DECIMAL64] = "decimal64",
        [JN_TYPE_DECIMAL128] = "decimal128",
        [JN_TYPE_CHAR] = "char",
        [JN_TYPE_TIMESTAMP] = "timestamp",
        [JN_TYPE_UUID] = "uuid",
        [JN_TYPE_BINARY] = "binary",
        [JN_TYPE_STRING] = "string",
        [JN_TYPE_SYMBOL] = "symbol",
        [JN_TYPE_LIST] = "list",
        [JN_TYPE_MAP] = "map",
        [JN_TYPE_ARRAY] = "array",
    };
    if ((unsigned)type >= sizeof names / sizeof names[0] || names[type] == NULL)
        return "unknown";
    return names[type];
}
