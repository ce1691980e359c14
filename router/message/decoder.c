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

void jn_decoder_init(jn_decoder_t *d, const jn_iter_t *raw, bool complete)
{
    memset(d, 0, sizeof *d);
    d->it = *raw;
    d->items_left = UINT32_MAX;
    d->complete = complete;
}

int jn_decoder_next(jn_decoder_t *d, jn_field_t *f)
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

int jn_decoder_enter(const jn_decoder_t *d, const jn_field_t *f, jn_decoder_t *child)
{
    if (f->type != JN_TYPE_LIST && f->type != JN_TYPE_MAP && f->type != JN_TYPE_ARRAY)
        return JN_EINVAL;
    memset(child, 0, sizeof *child);
    child->it = f->payload;
    child->items_left = f->count;
    child->depth = (uint8_t)(d->depth + 1u);
    child->complete = true;
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
