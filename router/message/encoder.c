/*
 * encoder.c — the AMQP 1.0 encoder (junction/encoder.h; spec part 1,
 * section 1.6 "Type Encodings" and 1.5 "Composite Type Representation").
 *
 * Used to compose management replies and mesh control messages, not on the
 * per-message hot path, so it favours simplicity: values are appended to one
 * contiguous scratch area (inline in the struct, moved to the heap when it
 * outgrows it).
 *
 * Smallest encodings. A scalar picks its smallest format code from its value
 * (uint 0 -> uint0, <= 255 -> smalluint, ...). A compound's final size is not
 * known when it begins, so it is written in its 4-octet form (code, size,
 * count) and, when it ends, rewritten in place: an empty list becomes list0,
 * and a compound whose size and count fit one octet becomes list8/map8/
 * array8 by moving its elements 6 octets down (one memmove per compound).
 *
 * Arrays (1.6.26). The element constructor (any descriptors given right after
 * jn_enc_array_begin, then the element code) is written once, just before the
 * first element or at the end of an empty array; each element then writes its
 * data only, in the form the element code fixes. A value that cannot be
 * written in that form (wrong type, too large) is an error. A compound
 * element has no format code of its own and keeps the form of the code.
 *
 * Errors are sticky: the first one is kept in e->error and every later call
 * returns at once.
 */
#include <junction/encoder.h>

#include <stdlib.h>
#include <string.h>

enum { KIND_LIST = 1, KIND_MAP, KIND_ARRAY };

typedef struct jn_encoder_open open_t;

/* Keep the first error. */
static void set_error(jn_encoder_t *e, int rc)
{
    if (e->error == 0)
        e->error = rc;
}

/* Make room for n more octets. False (and a sticky error) on failure. */
static bool reserve(jn_encoder_t *e, size_t n)
{
    if (JN_LIKELY(e->capacity - e->size >= n))
        return true;
    if (n > ((size_t)1 << 40) - e->size) { /* far past any AMQP size */
        set_error(e, JN_EOVERFLOW);
        return false;
    }
    size_t cap = e->capacity * 2;
    if (cap < e->size + n)
        cap = e->size + n;
    uint8_t *p;
    if (e->data == e->inline_data) {
        p = malloc(cap);
        if (p != NULL)
            memcpy(p, e->data, e->size);
    } else {
        p = realloc(e->data, cap);
    }
    if (p == NULL) {
        set_error(e, JN_ENOMEM);
        return false;
    }
    e->data = p;
    e->capacity = cap;
    return true;
}

/* Append n octets from src. */
static void put(jn_encoder_t *e, const void *src, size_t n)
{
    if (n == 0 || !reserve(e, n))
        return;
    memcpy(e->data + e->size, src, n);
    e->size += n;
}

/* Append the low width octets of v, most significant first. */
static void put_be(jn_encoder_t *e, uint64_t v, unsigned width)
{
    if (!reserve(e, width))
        return;
    for (unsigned i = 0; i < width; i++)
        e->data[e->size++] = (uint8_t)(v >> (8 * (width - 1 - i)));
}

static void put1(jn_encoder_t *e, uint8_t octet)
{
    put_be(e, octet, 1);
}

/* Store v as 4 octets, most significant first, at offset at. */
static void store_be32(uint8_t *at, uint32_t v)
{
    at[0] = (uint8_t)(v >> 24);
    at[1] = (uint8_t)(v >> 16);
    at[2] = (uint8_t)(v >> 8);
    at[3] = (uint8_t)v;
}

/* The innermost open compound, or NULL. */
static inline open_t *top(jn_encoder_t *e)
{
    return e->depth ? &e->open[e->depth - 1] : NULL;
}

/* The element code of the open array the next value belongs to, or 0 when
 * the next value is not an array element. */
static inline uint8_t array_code(jn_encoder_t *e)
{
    open_t *o = top(e);
    return o != NULL && o->kind == KIND_ARRAY ? o->elem_code : 0;
}

/* Start one value with format code `code`: count it in the open compound;
 * in an array, write the shared constructor the first time instead of the
 * code (the caller has checked that code is the array's element code).
 * Returns false when nothing may be written (sticky error). */
static bool element_begin(jn_encoder_t *e, uint8_t code)
{
    if (e->error)
        return false;
    open_t *o = top(e);
    if (o != NULL) {
        o->count++;
        if (o->kind == KIND_ARRAY) {
            if (!o->elem_written) {
                put1(e, o->elem_code);
                o->elem_written = true;
            }
            return e->error == 0;
        }
    }
    e->described_pending = false;
    put1(e, code);
    return e->error == 0;
}

/* A value of a type with a single format code (and width octets of data,
 * the low octets of bits). */
static void enc_single(jn_encoder_t *e, uint8_t code, unsigned width, uint64_t bits)
{
    uint8_t ac = array_code(e);
    if (ac != 0 && ac != code) {
        set_error(e, JN_EINVAL);
        return;
    }
    if (element_begin(e, code))
        put_be(e, bits, width);
}

/* An unsigned integer: big (width octets), or small (1 octet, v <= 255) or
 * zero (no data, v == 0) where the type has them (0 where not). */
static void enc_unsigned(jn_encoder_t *e, uint8_t big, unsigned width, uint8_t small, uint8_t zero,
                         uint64_t v)
{
    uint8_t ac = array_code(e);
    uint8_t code = big;
    if (ac == 0) {
        if (zero != 0 && v == 0)
            code = zero;
        else if (small != 0 && v <= 255)
            code = small;
    } else if (ac != big) {
        if (small != 0 && ac == small && v <= 255)
            code = small;
        else if (zero != 0 && ac == zero && v == 0)
            code = zero;
        else {
            set_error(e, JN_EINVAL);
            return;
        }
    }
    if (element_begin(e, code))
        put_be(e, v, code == big ? width : code == small ? 1 : 0);
}

/* A signed integer: big (width octets) or small (1 octet, -128..127) where
 * the type has it (0 where not). */
static void enc_signed(jn_encoder_t *e, uint8_t big, unsigned width, uint8_t small, int64_t v)
{
    uint8_t ac = array_code(e);
    bool fits_small = small != 0 && v >= -128 && v <= 127;
    uint8_t code = big;
    if (ac == 0) {
        if (fits_small)
            code = small;
    } else if (ac != big) {
        if (ac != small || !fits_small) {
            set_error(e, JN_EINVAL);
            return;
        }
        code = small;
    }
    if (element_begin(e, code))
        put_be(e, (uint64_t)v, code == big ? width : 1);
}

void jn_encoder_init(jn_encoder_t *e)
{
    e->data = e->inline_data;
    e->size = 0;
    e->capacity = JN_ENCODER_INLINE;
    e->error = 0;
    e->depth = 0;
    e->described_pending = false;
}

void jn_encoder_free(jn_encoder_t *e)
{
    if (e->data != e->inline_data)
        free(e->data);
    jn_encoder_init(e);
}

void jn_enc_null(jn_encoder_t *e)
{
    enc_single(e, JN_AMQP_NULL, 0, 0);
}

void jn_enc_bool(jn_encoder_t *e, bool v)
{
    uint8_t ac = array_code(e);
    if (ac == JN_AMQP_BOOLEAN)
        enc_single(e, JN_AMQP_BOOLEAN, 1, v ? 1 : 0);
    else
        enc_single(e, v ? JN_AMQP_TRUE : JN_AMQP_FALSE, 0, 0);
}

void jn_enc_ubyte(jn_encoder_t *e, uint8_t v)
{
    enc_single(e, JN_AMQP_UBYTE, 1, v);
}

void jn_enc_ushort(jn_encoder_t *e, uint16_t v)
{
    enc_single(e, JN_AMQP_USHORT, 2, v);
}

void jn_enc_uint(jn_encoder_t *e, uint32_t v)
{
    enc_unsigned(e, JN_AMQP_UINT, 4, JN_AMQP_SMALLUINT, JN_AMQP_UINT0, v);
}

void jn_enc_ulong(jn_encoder_t *e, uint64_t v)
{
    enc_unsigned(e, JN_AMQP_ULONG, 8, JN_AMQP_SMALLULONG, JN_AMQP_ULONG0, v);
}

void jn_enc_byte(jn_encoder_t *e, int8_t v)
{
    enc_single(e, JN_AMQP_BYTE, 1, (uint8_t)v);
}

void jn_enc_short(jn_encoder_t *e, int16_t v)
{
    enc_single(e, JN_AMQP_SHORT, 2, (uint16_t)v);
}

void jn_enc_int(jn_encoder_t *e, int32_t v)
{
    enc_signed(e, JN_AMQP_INT, 4, JN_AMQP_SMALLINT, v);
}

void jn_enc_long(jn_encoder_t *e, int64_t v)
{
    enc_signed(e, JN_AMQP_LONG, 8, JN_AMQP_SMALLLONG, v);
}

void jn_enc_float(jn_encoder_t *e, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    enc_single(e, JN_AMQP_FLOAT, 4, bits);
}

void jn_enc_double(jn_encoder_t *e, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    enc_single(e, JN_AMQP_DOUBLE, 8, bits);
}

void jn_enc_char(jn_encoder_t *e, uint32_t code_point)
{
    enc_single(e, JN_AMQP_CHAR, 4, code_point);
}

void jn_enc_timestamp(jn_encoder_t *e, int64_t ms_since_epoch)
{
    enc_single(e, JN_AMQP_TIMESTAMP, 8, (uint64_t)ms_since_epoch);
}

void jn_enc_uuid(jn_encoder_t *e, const uint8_t uuid[16])
{
    uint8_t ac = array_code(e);
    if (ac != 0 && ac != JN_AMQP_UUID) {
        set_error(e, JN_EINVAL);
        return;
    }
    if (element_begin(e, JN_AMQP_UUID))
        put(e, uuid, 16);
}

/* binary, string or symbol: len octets from data, or (data NULL) from the
 * iterator it, with code8 (len <= 255) or code32. */
static void enc_variable(jn_encoder_t *e, uint8_t code8, uint8_t code32, const void *data,
                         const jn_iter_t *it, size_t len)
{
    if (e->error)
        return;
    if (len > UINT32_MAX) {
        set_error(e, JN_EOVERFLOW);
        return;
    }
    uint8_t ac = array_code(e);
    uint8_t code = len <= 255 ? code8 : code32;
    if (ac == code32)
        code = code32;
    else if (ac != 0 && (ac != code8 || len > 255)) {
        set_error(e, JN_EINVAL);
        return;
    }
    if (!reserve(e, 5 + len) || !element_begin(e, code))
        return;
    put_be(e, len, code == code8 ? 1 : 4);
    if (data != NULL) {
        put(e, data, len);
    } else {
        jn_iter_t copy = *it;
        e->size += jn_iter_copy(&copy, e->data + e->size, len);
    }
}

void jn_enc_binary(jn_encoder_t *e, const void *data, size_t len)
{
    enc_variable(e, JN_AMQP_VBIN8, JN_AMQP_VBIN32, len ? data : "", NULL, len);
}

void jn_enc_string(jn_encoder_t *e, const char *data, size_t len)
{
    enc_variable(e, JN_AMQP_STR8, JN_AMQP_STR32, len ? data : "", NULL, len);
}

void jn_enc_symbol(jn_encoder_t *e, const char *data, size_t len)
{
    enc_variable(e, JN_AMQP_SYM8, JN_AMQP_SYM32, len ? data : "", NULL, len);
}

void jn_enc_cstring(jn_encoder_t *e, const char *s)
{
    jn_enc_string(e, s, strlen(s));
}

void jn_enc_csymbol(jn_encoder_t *e, const char *s)
{
    jn_enc_symbol(e, s, strlen(s));
}

void jn_enc_string_iter(jn_encoder_t *e, const jn_iter_t *it)
{
    enc_variable(e, JN_AMQP_STR8, JN_AMQP_STR32, NULL, it, jn_iter_length(it));
}

void jn_enc_symbol_iter(jn_encoder_t *e, const jn_iter_t *it)
{
    enc_variable(e, JN_AMQP_SYM8, JN_AMQP_SYM32, NULL, it, jn_iter_length(it));
}

/* Write the 0x00 of a descriptor. In an array, a descriptor is part of the
 * element constructor, so it may only come before the first element. */
static bool descriptor_begin(jn_encoder_t *e)
{
    if (e->error)
        return false;
    open_t *o = top(e);
    if (o != NULL && o->kind == KIND_ARRAY) {
        if (o->elem_written) {
            set_error(e, JN_EINVAL);
            return false;
        }
    } else {
        e->described_pending = true;
    }
    put1(e, JN_AMQP_DESCRIBED);
    return e->error == 0;
}

void jn_enc_descriptor_ulong(jn_encoder_t *e, uint64_t code)
{
    if (!descriptor_begin(e))
        return;
    if (code == 0) {
        put1(e, JN_AMQP_ULONG0);
    } else if (code <= 255) {
        put1(e, JN_AMQP_SMALLULONG);
        put1(e, (uint8_t)code);
    } else {
        put1(e, JN_AMQP_ULONG);
        put_be(e, code, 8);
    }
}

void jn_enc_descriptor_symbol(jn_encoder_t *e, const char *s)
{
    size_t len = strlen(s);
    if (e->error == 0 && len > UINT32_MAX)
        set_error(e, JN_EOVERFLOW);
    if (!descriptor_begin(e))
        return;
    if (len <= 255) {
        put1(e, JN_AMQP_SYM8);
        put1(e, (uint8_t)len);
    } else {
        put1(e, JN_AMQP_SYM32);
        put_be(e, len, 4);
    }
    put(e, s, len);
}

/* True when code is a format code an array may give its elements. */
static bool valid_element_code(uint8_t code)
{
    switch (code) {
    case JN_AMQP_NULL:
    case JN_AMQP_BOOLEAN:
    case JN_AMQP_TRUE:
    case JN_AMQP_FALSE:
    case JN_AMQP_UBYTE:
    case JN_AMQP_USHORT:
    case JN_AMQP_UINT:
    case JN_AMQP_SMALLUINT:
    case JN_AMQP_UINT0:
    case JN_AMQP_ULONG:
    case JN_AMQP_SMALLULONG:
    case JN_AMQP_ULONG0:
    case JN_AMQP_BYTE:
    case JN_AMQP_SHORT:
    case JN_AMQP_INT:
    case JN_AMQP_SMALLINT:
    case JN_AMQP_LONG:
    case JN_AMQP_SMALLLONG:
    case JN_AMQP_FLOAT:
    case JN_AMQP_DOUBLE:
    case JN_AMQP_DECIMAL32:
    case JN_AMQP_DECIMAL64:
    case JN_AMQP_DECIMAL128:
    case JN_AMQP_CHAR:
    case JN_AMQP_TIMESTAMP:
    case JN_AMQP_UUID:
    case JN_AMQP_VBIN8:
    case JN_AMQP_VBIN32:
    case JN_AMQP_STR8:
    case JN_AMQP_STR32:
    case JN_AMQP_SYM8:
    case JN_AMQP_SYM32:
    case JN_AMQP_LIST0:
    case JN_AMQP_LIST8:
    case JN_AMQP_LIST32:
    case JN_AMQP_MAP8:
    case JN_AMQP_MAP32:
    case JN_AMQP_ARRAY8:
    case JN_AMQP_ARRAY32:
        return true;
    default:
        return false;
    }
}

/* Format codes of a compound kind: its 1-octet and 4-octet forms. */
static void kind_codes(uint8_t kind, uint8_t *code8, uint8_t *code32)
{
    *code8 = kind == KIND_LIST ? JN_AMQP_LIST8 : kind == KIND_MAP ? JN_AMQP_MAP8 : JN_AMQP_ARRAY8;
    *code32 = kind == KIND_LIST  ? JN_AMQP_LIST32
              : kind == KIND_MAP ? JN_AMQP_MAP32
                                 : JN_AMQP_ARRAY32;
}

static void compound_begin(jn_encoder_t *e, uint8_t kind, uint8_t elem_code)
{
    static const uint8_t placeholder[8] = {0};
    uint8_t code8, code32;
    if (e->error)
        return;
    if (e->depth >= JN_ENCODER_MAX_DEPTH) {
        set_error(e, JN_EOVERFLOW);
        return;
    }
    kind_codes(kind, &code8, &code32);
    uint8_t ac = array_code(e);
    if (ac != 0 && ac != code8 && ac != code32 && !(kind == KIND_LIST && ac == JN_AMQP_LIST0)) {
        set_error(e, JN_EINVAL);
        return;
    }
    if (!element_begin(e, code32))
        return;
    open_t *o = &e->open[e->depth++];
    o->start = e->size;
    o->count = 0;
    o->kind = kind;
    o->elem_code = elem_code;
    o->elem_written = false;
    o->form = ac;
    if (ac != JN_AMQP_LIST0)
        put(e, placeholder, sizeof placeholder); /* size and count, 4 octets each */
}

/* Rewrite the closed compound o in its final form (see the file comment). */
static void compound_finish(jn_encoder_t *e, const open_t *o)
{
    uint8_t code8, code32;
    kind_codes(o->kind, &code8, &code32);
    if (o->form == JN_AMQP_LIST0) {
        if (o->count != 0)
            set_error(e, JN_EINVAL);
        return;
    }
    uint8_t *at = e->data + o->start;
    size_t content = e->size - (o->start + 8);
    bool fits8 = content + 1 <= 255 && o->count <= 255;
    if (o->form == 0 && o->kind == KIND_LIST && o->count == 0) {
        at[-1] = JN_AMQP_LIST0;
        e->size = o->start;
        return;
    }
    if ((o->form == 0 && fits8) || o->form == code8) {
        if (!fits8) {
            set_error(e, JN_EINVAL);
            return;
        }
        if (o->form == 0)
            at[-1] = code8;
        at[0] = (uint8_t)(content + 1);
        at[1] = (uint8_t)o->count;
        memmove(at + 2, at + 8, content);
        e->size -= 6;
        return;
    }
    if (content + 4 > UINT32_MAX) {
        set_error(e, JN_EOVERFLOW);
        return;
    }
    store_be32(at, (uint32_t)(content + 4));
    store_be32(at + 4, o->count);
}

static void compound_end(jn_encoder_t *e, uint8_t kind)
{
    if (e->error)
        return;
    open_t *o = top(e);
    if (o == NULL || o->kind != kind || e->described_pending ||
        (kind == KIND_MAP && (o->count & 1) != 0)) {
        set_error(e, JN_EINVAL);
        return;
    }
    if (kind == KIND_ARRAY && !o->elem_written) { /* empty: constructor still due */
        put1(e, o->elem_code);
        o->elem_written = true;
    }
    e->depth--;
    if (e->error == 0)
        compound_finish(e, o);
}

void jn_enc_list_begin(jn_encoder_t *e)
{
    compound_begin(e, KIND_LIST, 0);
}

void jn_enc_list_end(jn_encoder_t *e)
{
    compound_end(e, KIND_LIST);
}

void jn_enc_map_begin(jn_encoder_t *e)
{
    compound_begin(e, KIND_MAP, 0);
}

void jn_enc_map_end(jn_encoder_t *e)
{
    compound_end(e, KIND_MAP);
}

void jn_enc_array_begin(jn_encoder_t *e, uint8_t elem_code)
{
    if (e->error == 0 && !valid_element_code(elem_code)) {
        set_error(e, JN_EINVAL);
        return;
    }
    compound_begin(e, KIND_ARRAY, elem_code);
}

void jn_enc_array_end(jn_encoder_t *e)
{
    compound_end(e, KIND_ARRAY);
}

/* Count one already-encoded value (not allowed as an array element, whose
 * data would lack the shared constructor's meaning). */
static bool raw_begin(jn_encoder_t *e)
{
    if (e->error)
        return false;
    open_t *o = top(e);
    if (o != NULL && o->kind == KIND_ARRAY) {
        set_error(e, JN_EINVAL);
        return false;
    }
    if (o != NULL)
        o->count++;
    e->described_pending = false;
    return true;
}

void jn_enc_raw(jn_encoder_t *e, const void *data, size_t len)
{
    if (raw_begin(e))
        put(e, data, len);
}

void jn_enc_raw_iter(jn_encoder_t *e, const jn_iter_t *it)
{
    size_t len = jn_iter_length(it);
    if (!raw_begin(e) || !reserve(e, len))
        return;
    jn_iter_t copy = *it;
    e->size += jn_iter_copy(&copy, e->data + e->size, len);
}

const uint8_t *jn_encoder_data(const jn_encoder_t *e, size_t *len)
{
    *len = e->size;
    return e->data;
}

int jn_encoder_to_buffers(const jn_encoder_t *e, jn_buffer_list_t *list)
{
    if (e->error)
        return e->error;
    if (e->depth != 0 || e->described_pending)
        return JN_EINVAL;
    if (e->size == 0)
        return 0;
    return jn_buffer_list_append_bytes(list, e->data, e->size);
}
