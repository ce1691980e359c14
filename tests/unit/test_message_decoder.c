/*
 * test_message_decoder.c — the AMQP 1.0 decoder (junction/decoder.h).
 *
 * Every decoding is rendered as text by dump() — each value as
 * "<code>:<type>=<value>", compounds with their elements in brackets, a
 * failure as "!<code>(<reason>)" — and every test compares that text, for
 * the same octets split into buffers of 1, 2, 3 and 7 octets, one full
 * buffer, and plain (non-buffer) bytes: the results must be identical.
 * dump() also checks on each field that its payload view has `size` octets
 * and that its `encoded` view decodes again, alone, to the same value.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/decoder.h>
#include <junction/encoder.h>
#include <junction/pool.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t splits[] = {1, 2, 3, 7, JN_BUFFER_CAPACITY, 0 /* plain bytes */};
#define NSPLITS (sizeof splits / sizeof splits[0])

/* ---- rendering ---------------------------------------------------------- */

typedef struct out {
    size_t len;
    char buf[1 << 16];
} out_t;

static void JN_PRINTF(2, 3) outf(out_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, sizeof o->buf - o->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n < sizeof o->buf - o->len ? (size_t)n : sizeof o->buf - o->len - 1;
}

/* FNV-1a of len octets, to render long strings compactly. */
static uint32_t fnv(const uint8_t *p, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* Octets as a quoted string with \xNN escapes; above 40 octets as a count
 * and a hash (long_text() renders the expectation the same way). */
static void out_octets(out_t *o, const jn_iter_t *view)
{
    static uint8_t tmp[1 << 17];
    jn_iter_t it = *view;
    size_t n = jn_iter_copy(&it, tmp, sizeof tmp);
    assert_int_equal(n, jn_iter_length(view));
    if (n > 40) {
        outf(o, "(%zu octets, %08x)", n, fnv(tmp, n));
        return;
    }
    outf(o, "\"");
    for (size_t i = 0; i < n; i++) {
        if (tmp[i] >= 0x20 && tmp[i] < 0x7f && tmp[i] != '"' && tmp[i] != '\\')
            outf(o, "%c", tmp[i]);
        else
            outf(o, "\\x%02x", tmp[i]);
    }
    outf(o, "\"");
}

static const char *long_text(char *dst, size_t cap, const void *p, size_t len)
{
    snprintf(dst, cap, "(%zu octets, %08x)", len, fnv(p, len));
    return dst;
}

static const char *rc_name(int rc)
{
    switch (rc) {
    case JN_AGAIN:
        return "AGAIN";
    case JN_EPROTO:
        return "EPROTO";
    case JN_EOVERFLOW:
        return "EOVERFLOW";
    case JN_EINVAL:
        return "EINVAL";
    default:
        return "?";
    }
}

static void out_error(out_t *o, const jn_decoder_t *d, int rc)
{
    if (rc == JN_EPROTO || rc == JN_EOVERFLOW)
        outf(o, "!%s(%s)", rc_name(rc), jn_decoder_reason(d));
    else
        outf(o, "!%s", rc_name(rc));
}

static void out_scalar(out_t *o, const jn_field_t *f)
{
    switch (f->type) {
    case JN_TYPE_NULL:
        break;
    case JN_TYPE_BOOLEAN:
        outf(o, "=%s", f->value.b ? "true" : "false");
        break;
    case JN_TYPE_UBYTE:
    case JN_TYPE_USHORT:
    case JN_TYPE_UINT:
    case JN_TYPE_ULONG:
        outf(o, "=%llu", (unsigned long long)f->value.u);
        break;
    case JN_TYPE_CHAR:
        outf(o, "=U+%04llX", (unsigned long long)f->value.u);
        break;
    case JN_TYPE_BYTE:
    case JN_TYPE_SHORT:
    case JN_TYPE_INT:
    case JN_TYPE_LONG:
    case JN_TYPE_TIMESTAMP:
        outf(o, "=%lld", (long long)f->value.i);
        break;
    case JN_TYPE_FLOAT: {
        uint32_t bits;
        memcpy(&bits, &f->value.f, 4);
        outf(o, "=%08x", bits);
        break;
    }
    case JN_TYPE_DOUBLE: {
        uint64_t bits;
        memcpy(&bits, &f->value.d, 8);
        outf(o, "=%016llx", (unsigned long long)bits);
        break;
    }
    case JN_TYPE_DECIMAL32:
    case JN_TYPE_DECIMAL64:
    case JN_TYPE_DECIMAL128:
    case JN_TYPE_UUID:
        outf(o, "=");
        for (uint32_t i = 0; i < f->size; i++)
            outf(o, "%02x", f->value.bytes[i]);
        break;
    default:
        outf(o, "=");
        out_octets(o, &f->payload);
        break;
    }
}

/* The checks dump() makes on every field (see the file comment). */
static void check_views(const jn_decoder_t *d, const jn_field_t *f)
{
    assert_int_equal(jn_iter_length(&f->payload), f->size);
    if (d->in_array)
        return; /* an element's encoding lacks the shared constructor */
    jn_decoder_t again;
    jn_field_t g;
    jn_decoder_init(&again, &f->encoded, true);
    assert_int_equal(jn_decoder_next(&again, &g), 1);
    assert_int_equal(g.code, f->code);
    assert_int_equal(g.type, f->type);
    assert_int_equal(g.described, f->described);
    assert_int_equal(g.size, f->size);
    assert_int_equal(g.count, f->count);
    assert_int_equal(jn_decoder_next(&again, &g), 0);
}

static int dump_seq(out_t *o, jn_decoder_t *d);

static int dump_field(out_t *o, const jn_decoder_t *d, const jn_field_t *f)
{
    if (f->described) {
        if (f->descriptor_is_symbol) {
            outf(o, "d:");
            out_octets(o, &f->descriptor_symbol);
            outf(o, " ");
        } else {
            outf(o, "d:0x%llx ", (unsigned long long)f->descriptor_code);
        }
    }
    outf(o, "%02x:%s", f->code, jn_amqp_type_name(f->type));
    if (f->type != JN_TYPE_LIST && f->type != JN_TYPE_MAP && f->type != JN_TYPE_ARRAY) {
        out_scalar(o, f);
        return 0;
    }
    if (f->type == JN_TYPE_ARRAY)
        outf(o, "<%s%02x>", f->elem_described ? "d" : "", f->elem_code);
    jn_decoder_t child;
    int rc = jn_decoder_enter(d, f, &child);
    if (rc != 0) {
        out_error(o, &child, rc);
        return rc;
    }
    outf(o, f->type == JN_TYPE_MAP ? "{" : "[");
    rc = dump_seq(o, &child);
    outf(o, f->type == JN_TYPE_MAP ? "}" : "]");
    return rc < 0 ? rc : 0;
}

/* Render every value left in d; returns 0 or the first error. */
static int dump_seq(out_t *o, jn_decoder_t *d)
{
    jn_field_t f;
    int rc;
    bool first = true;
    while ((rc = jn_decoder_next(d, &f)) == 1) {
        outf(o, first ? "" : " ");
        first = false;
        check_views(d, &f);
        if ((rc = dump_field(o, d, &f)) < 0)
            return rc;
    }
    if (rc < 0) {
        outf(o, first ? "" : " ");
        out_error(o, d, rc);
    }
    return rc;
}

/* ---- chains ------------------------------------------------------------- */

/* A raw iterator over data: split into buffers of chunk octets (0: plain
 * bytes, no buffers). */
static void make_iter(jn_buffer_list_t *list, jn_iter_t *it, const uint8_t *data, size_t len,
                      size_t chunk)
{
    jn_buffer_list_init(list);
    if (chunk == 0 || len == 0) {
        jn_iter_init_bytes(it, len ? data : (const uint8_t *)"", len, JN_VIEW_RAW);
        return;
    }
    assert_int_equal(jn_buffer_list_append_split(list, data, len, chunk), 0);
    assert_int_equal(jn_iter_init(it, list->head, 0, len, JN_VIEW_RAW), 0);
}

/* Decode data (split as chunk) and render it into o. */
static int dump_split(out_t *o, const uint8_t *data, size_t len, bool complete, size_t chunk)
{
    jn_buffer_list_t list;
    jn_iter_t it;
    jn_decoder_t d;
    make_iter(&list, &it, data, len, chunk);
    jn_decoder_init(&d, &it, complete);
    o->len = 0;
    o->buf[0] = 0;
    int rc = dump_seq(o, &d);
    jn_buffer_list_free(&list);
    return rc;
}

/* Decoding data under every split renders exactly expect. */
static void expect_dump(const void *data, size_t len, bool complete, const char *expect)
{
    out_t *o = malloc(sizeof *o);
    assert_non_null(o);
    for (size_t s = 0; s < NSPLITS; s++) {
        dump_split(o, data, len, complete, splits[s]);
        if (strcmp(o->buf, expect) != 0)
            print_error("split %zu, complete %d:\n  got    %s\n  expect %s\n", splits[s], complete,
                        o->buf, expect);
        assert_string_equal(o->buf, expect);
    }
    free(o);
}

/* As expect_dump, with the data complete and again as possibly incomplete
 * (identical when the input is whole and valid). */
static void expect_both(const void *data, size_t len, const char *expect)
{
    expect_dump(data, len, true, expect);
    expect_dump(data, len, false, expect);
}

#define BYTES(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})

/* ---- valid values ------------------------------------------------------- */

static void test_fixed_width_values_decode(void **state)
{
    (void)state;
    expect_both(BYTES(0x40), "40:null");
    expect_both(BYTES(0x41, 0x42, 0x56, 0x00, 0x56, 0x01),
                "41:boolean=true 42:boolean=false 56:boolean=false 56:boolean=true");
    expect_both(BYTES(0x50, 0xff, 0x60, 0xab, 0xcd), "50:ubyte=255 60:ushort=43981");
    expect_both(BYTES(0x43, 0x52, 0x07, 0x70, 0xff, 0xff, 0xff, 0xff),
                "43:uint=0 52:uint=7 70:uint=4294967295");
    expect_both(BYTES(0x44, 0x53, 0xff, 0x80, 1, 2, 3, 4, 5, 6, 7, 8),
                "44:ulong=0 53:ulong=255 80:ulong=72623859790382856");
    expect_both(BYTES(0x51, 0x80, 0x61, 0xff, 0xfe, 0x54, 0xff, 0x71, 0x80, 0, 0, 0),
                "51:byte=-128 61:short=-2 54:int=-1 71:int=-2147483648");
    expect_both(BYTES(0x55, 0x7f, 0x81, 0x80, 0, 0, 0, 0, 0, 0, 0),
                "55:long=127 81:long=-9223372036854775808");
    expect_both(
        BYTES(0x73, 0x00, 0x01, 0xf6, 0x00, 0x83, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
        "73:char=U+1F600 83:timestamp=-1");
    expect_both(BYTES(0x74, 1, 2, 3, 4, 0x84, 1, 2, 3, 4, 5, 6, 7, 8),
                "74:decimal32=01020304 84:decimal64=0102030405060708");
    expect_both(BYTES(0x94, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0x98, 0xf0, 1, 2,
                      3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff),
                "94:decimal128=000102030405060708090a0b0c0d0e0f "
                "98:uuid=f00102030405060708090a0b0c0d0eff");
}

static void test_float_double_nan_inf_decode(void **state)
{
    (void)state;
    expect_both(BYTES(0x72, 0x7f, 0xc0, 0, 0, 0x72, 0x7f, 0x80, 0, 0, 0x72, 0xff, 0x80, 0, 0, 0x72,
                      0x3f, 0x80, 0, 0),
                "72:float=7fc00000 72:float=7f800000 72:float=ff800000 72:float=3f800000");
    expect_both(BYTES(0x82, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0, 0x82, 0xff, 0xf0, 0, 0, 0, 0, 0, 0),
                "82:double=7ff8000000000000 82:double=fff0000000000000");
    /* the values themselves */
    jn_iter_t it;
    jn_decoder_t d;
    jn_field_t f;
    jn_iter_init_bytes(
        &it, (const uint8_t[]){0x72, 0xff, 0x80, 0, 0, 0x82, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0}, 14,
        JN_VIEW_RAW);
    jn_decoder_init(&d, &it, true);
    assert_int_equal(jn_decoder_next(&d, &f), 1);
    assert_true(isinf(f.value.f) && f.value.f < 0);
    assert_int_equal(jn_decoder_next(&d, &f), 1);
    assert_true(isnan(f.value.d));
}

static void test_variable_width_decode(void **state)
{
    (void)state;
    expect_both(BYTES(0xa1, 0x00, 0xa1, 0x02, 'h', 'i', 0xb1, 0, 0, 0, 1, 'x'),
                "a1:string=\"\" a1:string=\"hi\" b1:string=\"x\"");
    expect_both(BYTES(0xa0, 0x02, 0x00, 0xff, 0xb0, 0, 0, 0, 0),
                "a0:binary=\"\\x00\\xff\" b0:binary=\"\"");
    expect_both(BYTES(0xa3, 0x03, 'a', 'b', 'c', 0xb3, 0, 0, 0, 2, 'd', 'e'),
                "a3:symbol=\"abc\" b3:symbol=\"de\"");
}

static void test_described_values_decode(void **state)
{
    (void)state;
    /* descriptors in each ulong and symbol encoding */
    expect_both(BYTES(0x00, 0x44, 0x40, 0x00, 0x53, 0x70, 0x45, 0x00, 0x80, 0, 0, 0, 1, 0, 0, 0, 2,
                      0x52, 9),
                "d:0x0 40:null d:0x70 45:list[] d:0x100000002 52:uint=9");
    expect_both(
        BYTES(0x00, 0xa3, 0x03, 'f', 'o', 'o', 0xa1, 0x01, 'x', 0x00, 0xb3, 0, 0, 0, 1, 'q', 0x41),
        "d:\"foo\" a1:string=\"x\" d:\"q\" 41:boolean=true");
    /* a described described value keeps the outer descriptor */
    expect_both(BYTES(0x00, 0x53, 0x01, 0x00, 0x53, 0x02, 0x52, 0x03), "d:0x1 52:uint=3");
    /* a message section: properties with a `to` */
    expect_both(BYTES(0x00, 0x53, 0x73, 0xc0, 0x06, 0x03, 0x40, 0x40, 0xa1, 0x01, 'q'),
                "d:0x73 c0:list[40:null 40:null a1:string=\"q\"]");
}

static void test_lists_and_maps_decode(void **state)
{
    (void)state;
    expect_both(BYTES(0x45, 0xc0, 0x01, 0x00, 0xd0, 0, 0, 0, 4, 0, 0, 0, 0),
                "45:list[] c0:list[] d0:list[]");
    expect_both(BYTES(0xc1, 0x01, 0x00, 0xd1, 0, 0, 0, 4, 0, 0, 0, 0), "c1:map{} d1:map{}");
    expect_both(BYTES(0xc0, 0x04, 0x02, 0x52, 0x01, 0x40), "c0:list[52:uint=1 40:null]");
    expect_both(BYTES(0xd0, 0, 0, 0, 8, 0, 0, 0, 2, 0x41, 0xa1, 0x01, 'z'),
                "d0:list[41:boolean=true a1:string=\"z\"]");
    expect_both(BYTES(0xc1, 0x07, 0x02, 0xa3, 0x01, 'k', 0xa1, 0x01, 'v'),
                "c1:map{a3:symbol=\"k\" a1:string=\"v\"}");
    expect_both(BYTES(0xd1, 0, 0, 0, 8, 0, 0, 0, 2, 0x53, 0x01, 0x50, 0x02),
                "d1:map{53:ulong=1 50:ubyte=2}");
}

static void test_nested_lists_and_maps_decode(void **state)
{
    (void)state;
    expect_both(BYTES(0xc0, 0x15, 0x03, 0x45, 0xc1, 0x07, 0x02, 0xa1, 0x01, 'a', 0xc0, 0x01, 0x00,
                      0xd0, 0, 0, 0, 5, 0, 0, 0, 1, 0x40),
                "c0:list[45:list[] c1:map{a1:string=\"a\" c0:list[]} d0:list[40:null]]");
}

static void test_arrays_decode(void **state)
{
    (void)state;
    /* fixed-width elements: data only */
    expect_both(BYTES(0xe0, 0x04, 0x02, 0x52, 0x05, 0x06), "e0:array<52>[52:uint=5 52:uint=6]");
    expect_both(BYTES(0xf0, 0, 0, 0, 13, 0, 0, 0, 2, 0x70, 0, 0, 0, 1, 0, 0, 0, 2),
                "f0:array<70>[70:uint=1 70:uint=2]");
    expect_both(BYTES(0xe0, 0x05, 0x03, 0x56, 0x01, 0x00, 0x01),
                "e0:array<56>[56:boolean=true 56:boolean=false 56:boolean=true]");
    expect_both(BYTES(0xe0, 0x02, 0x03, 0x40), "e0:array<40>[40:null 40:null 40:null]");
    expect_both(BYTES(0xe0, 0x02, 0x00, 0xa3), "e0:array<a3>[]");
    /* variable-width elements */
    expect_both(BYTES(0xe0, 0x07, 0x02, 0xa3, 0x01, 'a', 0x02, 'b', 'c'),
                "e0:array<a3>[a3:symbol=\"a\" a3:symbol=\"bc\"]");
    /* compound elements: lists, maps, arrays */
    expect_both(BYTES(0xe0, 0x08, 0x02, 0xc0, 0x01, 0x00, 0x03, 0x01, 0x52, 0x01),
                "e0:array<c0>[c0:list[] c0:list[52:uint=1]]");
    expect_both(BYTES(0xe0, 0x06, 0x01, 0xc1, 0x03, 0x02, 0x41, 0x42),
                "e0:array<c1>[c1:map{41:boolean=true 42:boolean=false}]");
    expect_both(
        BYTES(0xe0, 0x0b, 0x02, 0xe0, 0x03, 0x01, 0x50, 0x07, 0x04, 0x02, 0xa1, 0x00, 0x00),
        "e0:array<e0>[e0:array<50>[50:ubyte=7] e0:array<a1>[a1:string=\"\" a1:string=\"\"]]");
    expect_both(BYTES(0xe0, 0x02, 0x02, 0x45), "e0:array<45>[45:list[] 45:list[]]");
}

static void test_array_of_described_elements_decode(void **state)
{
    (void)state;
    expect_both(BYTES(0xe0, 0x07, 0x02, 0x00, 0x53, 0x21, 0x52, 0x01, 0x02),
                "e0:array<d52>[d:0x21 52:uint=1 d:0x21 52:uint=2]");
    expect_both(BYTES(0xe0, 0x0a, 0x01, 0x00, 0xa3, 0x02, 'x', 'y', 0xc0, 0x02, 0x01, 0x40),
                "e0:array<dc0>[d:\"xy\" c0:list[40:null]]");
    /* an array of described lists nested in a described list */
    expect_both(BYTES(0x00, 0x53, 0x10, 0xc0, 0x0b, 0x01, 0xe0, 0x08, 0x02, 0x00, 0x44, 0xc0, 0x01,
                      0x00, 0x01, 0x00),
                "d:0x10 c0:list[e0:array<dc0>[d:0x0 c0:list[] d:0x0 c0:list[]]]");
}

static void test_empty_input_is_end_of_sequence(void **state)
{
    (void)state;
    expect_dump("", 0, true, "");
    expect_dump("", 0, false, "");
}

static void test_encoded_view_includes_descriptor(void **state)
{
    (void)state;
    static const uint8_t data[] = {0x00, 0x53, 0x75, 0xa0, 0x02, 'h', 'i', 0x40};
    for (size_t s = 0; s < NSPLITS; s++) {
        jn_buffer_list_t list;
        jn_iter_t it;
        jn_decoder_t d;
        jn_field_t f;
        uint8_t copy[16];
        make_iter(&list, &it, data, sizeof data, splits[s]);
        jn_decoder_init(&d, &it, true);
        assert_int_equal(jn_decoder_next(&d, &f), 1);
        assert_int_equal(jn_iter_length(&f.encoded), 7);
        assert_int_equal(jn_iter_copy(&f.encoded, copy, sizeof copy), 7);
        assert_memory_equal(copy, data, 7);
        assert_int_equal(f.size, 2);
        assert_true(jn_iter_equal(&f.payload, "hi"));
        jn_iter_t mark;
        jn_decoder_mark(&d, &mark);
        assert_int_equal(jn_iter_length(&mark), 1);
        jn_buffer_list_free(&list);
    }
}

static void test_field_conversions_and_names(void **state)
{
    (void)state;
    static const uint8_t data[] = {
        0x81, 0x80, 0,    0,    0,    0,    0,    0,    0, /* INT64_MIN */
        0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x54, 0xfe, 0x52, 0x05, 0xa3,
        0x02, 'i',  'd',  0x40, 0x83, 0,    0,    0,    0,    0,    0,    0,    1};
    jn_iter_t it;
    jn_decoder_t d;
    jn_field_t f;
    int64_t i;
    uint64_t u;
    jn_iter_init_bytes(&it, data, sizeof data, JN_VIEW_RAW);
    jn_decoder_init(&d, &it, true);
    assert_int_equal(jn_decoder_next(&d, &f), 1);
    assert_int_equal(jn_field_to_int64(&f, &i), 0);
    assert_true(i == INT64_MIN);
    assert_int_equal(jn_field_to_uint64(&f, &u), JN_ERANGE);
    assert_int_equal(jn_decoder_next(&d, &f), 1);
    assert_int_equal(jn_field_to_uint64(&f, &u), 0);
    assert_true(u == UINT64_MAX);
    assert_int_equal(jn_field_to_int64(&f, &i), JN_ERANGE);
    assert_int_equal(jn_decoder_next(&d, &f), 1); /* smallint -2 */
    assert_int_equal(jn_field_to_int64(&f, &i), 0);
    assert_int_equal(i, -2);
    assert_int_equal(jn_field_to_uint64(&f, &u), JN_ERANGE);
    assert_int_equal(jn_decoder_next(&d, &f), 1); /* smalluint 5 */
    assert_true(jn_field_is_integer(&f));
    assert_int_equal(jn_field_to_int64(&f, &i), 0);
    assert_int_equal(i, 5);
    assert_int_equal(jn_decoder_next(&d, &f), 1); /* symbol "id" */
    assert_false(jn_field_is_integer(&f));
    assert_int_equal(jn_field_to_int64(&f, &i), JN_EINVAL);
    assert_true(jn_field_equal_string(&f, "id"));
    assert_false(jn_field_equal_string(&f, "i"));
    assert_false(jn_field_equal_string(&f, "idx"));
    assert_int_equal(jn_decoder_next(&d, &f), 1); /* null */
    assert_false(jn_field_equal_string(&f, ""));
    assert_int_equal(jn_decoder_enter(&d, &f, &(jn_decoder_t){0}), JN_EINVAL);
    assert_int_equal(jn_decoder_next(&d, &f), 1); /* timestamp is not an integer */
    assert_int_equal(jn_field_to_uint64(&f, &u), JN_EINVAL);
    assert_int_equal(jn_decoder_next(&d, &f), 0);
    assert_string_equal(jn_amqp_type_name(JN_TYPE_ULONG), "ulong");
    assert_string_equal(jn_amqp_type_name(JN_TYPE_ARRAY), "array");
    assert_string_equal(jn_amqp_type_name((jn_amqp_type_t)99), "unknown");
    assert_string_equal(jn_decoder_reason(&d), "no error");
}

/* ---- round trip through the encoder --------------------------------------- */

static void expect_encoded(jn_encoder_t *e, const char *expect)
{
    size_t len;
    const uint8_t *p = jn_encoder_data(e, &len);
    assert_int_equal(jn_encoder_error(e), 0);
    expect_both(p, len, expect);
}

static void test_round_trip_every_type(void **state)
{
    (void)state;
    static const uint8_t uuid[16] = {0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_null(&e);
    jn_enc_bool(&e, true);
    jn_enc_bool(&e, false);
    jn_enc_ubyte(&e, 200);
    jn_enc_ushort(&e, 65535);
    jn_enc_uint(&e, 0);
    jn_enc_uint(&e, 255);
    jn_enc_uint(&e, 256);
    jn_enc_ulong(&e, 0);
    jn_enc_ulong(&e, 7);
    jn_enc_ulong(&e, UINT64_MAX);
    jn_enc_byte(&e, -1);
    jn_enc_short(&e, INT16_MIN);
    jn_enc_int(&e, -128);
    jn_enc_int(&e, 128);
    jn_enc_int(&e, INT32_MIN);
    jn_enc_long(&e, 127);
    jn_enc_long(&e, INT64_MIN);
    jn_enc_long(&e, INT64_MAX);
    jn_enc_float(&e, 1.0f);
    jn_enc_float(&e, NAN);
    jn_enc_float(&e, -INFINITY);
    jn_enc_double(&e, INFINITY);
    jn_enc_double(&e, -0.0);
    jn_enc_char(&e, 0x10ffff);
    jn_enc_timestamp(&e, 1700000000000);
    jn_enc_uuid(&e, uuid);
    jn_enc_binary(&e, "\x00\x01", 2);
    jn_enc_cstring(&e, "");
    jn_enc_csymbol(&e, "amqp:ok");
    expect_encoded(&e, "40:null 41:boolean=true 42:boolean=false 50:ubyte=200 60:ushort=65535 "
                       "43:uint=0 52:uint=255 70:uint=256 44:ulong=0 53:ulong=7 "
                       "80:ulong=18446744073709551615 51:byte=-1 61:short=-32768 54:int=-128 "
                       "71:int=128 71:int=-2147483648 55:long=127 81:long=-9223372036854775808 "
                       "81:long=9223372036854775807 72:float=3f800000 72:float=7fc00000 "
                       "72:float=ff800000 82:double=7ff0000000000000 82:double=8000000000000000 "
                       "73:char=U+10FFFF 83:timestamp=1700000000000 "
                       "98:uuid=deadbeef000102030405060708090a0b a0:binary=\"\\x00\\x01\" "
                       "a1:string=\"\" a3:symbol=\"amqp:ok\"");
    jn_encoder_free(&e);
}

static void test_round_trip_string_edges(void **state)
{
    (void)state;
    char s[70000], t1[64], t2[64], t3[64], expect[256];
    memset(s, 'a', sizeof s);
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_string(&e, s, 255);
    jn_enc_string(&e, s, 256);
    jn_enc_symbol(&e, s, sizeof s);
    snprintf(expect, sizeof expect, "a1:string=%s b1:string=%s b3:symbol=%s",
             long_text(t1, sizeof t1, s, 255), long_text(t2, sizeof t2, s, 256),
             long_text(t3, sizeof t3, s, sizeof s));
    expect_encoded(&e, expect);
    jn_encoder_free(&e);
}

static void test_round_trip_compounds(void **state)
{
    (void)state;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_list_begin(&e);
    jn_enc_list_end(&e);
    jn_enc_map_begin(&e);
    jn_enc_map_end(&e);
    jn_enc_descriptor_ulong(&e, 0x73);
    jn_enc_list_begin(&e);
    jn_enc_cstring(&e, "id");
    jn_enc_map_begin(&e);
    jn_enc_csymbol(&e, "k");
    jn_enc_list_begin(&e);
    jn_enc_int(&e, -5);
    jn_enc_list_end(&e);
    jn_enc_map_end(&e);
    jn_enc_array_begin(&e, JN_AMQP_SYM8);
    jn_enc_csymbol(&e, "a");
    jn_enc_csymbol(&e, "b");
    jn_enc_array_end(&e);
    jn_enc_list_end(&e);
    /* an array of described values */
    jn_enc_array_begin(&e, JN_AMQP_LIST8);
    jn_enc_descriptor_symbol(&e, "x:y");
    jn_enc_list_begin(&e);
    jn_enc_null(&e);
    jn_enc_list_end(&e);
    jn_enc_list_begin(&e);
    jn_enc_list_end(&e);
    jn_enc_array_end(&e);
    expect_encoded(&e, "45:list[] c1:map{} d:0x73 c0:list[a1:string=\"id\" "
                       "c1:map{a3:symbol=\"k\" c0:list[54:int=-5]} "
                       "e0:array<a3>[a3:symbol=\"a\" a3:symbol=\"b\"]] "
                       "e0:array<dc0>[d:\"x:y\" c0:list[40:null] d:\"x:y\" c0:list[]]");
    jn_encoder_free(&e);
}

static void test_round_trip_large_list32_and_map32(void **state)
{
    (void)state;
    jn_encoder_t e;
    out_t *o = malloc(sizeof *o);
    assert_non_null(o);
    jn_encoder_init(&e);
    jn_enc_list_begin(&e);
    for (unsigned i = 0; i < 300; i++)
        jn_enc_uint(&e, i);
    jn_enc_list_end(&e);
    size_t len;
    const uint8_t *p = jn_encoder_data(&e, &len);
    assert_int_equal(p[0], JN_AMQP_LIST32);
    size_t list_len = len;
    o->len = 0;
    for (unsigned i = 0; i < 300; i++)
        outf(o, "%s%s=%u", i ? " " : "", i == 0 ? "43:uint" : i < 256 ? "52:uint" : "70:uint", i);
    char *expect = strdup(o->buf);
    /* a map of 128 pairs: count 256 needs map32 */
    jn_enc_map_begin(&e);
    o->len = 0;
    for (unsigned i = 0; i < 128; i++) {
        jn_enc_ulong(&e, 1000 + i);
        jn_enc_bool(&e, i & 1);
        outf(o, "%s80:ulong=%u %s", i ? " " : "", 1000 + i,
             i & 1 ? "41:boolean=true" : "42:boolean=false");
    }
    jn_enc_map_end(&e);
    p = jn_encoder_data(&e, &len);
    assert_int_equal(p[list_len], JN_AMQP_MAP32);
    size_t need = strlen(expect) + strlen(o->buf) + 32;
    char *full = malloc(need);
    assert_non_null(full);
    snprintf(full, need, "d0:list[%s] d1:map{%s}", expect, o->buf);
    expect_encoded(&e, full);
    free(full);
    free(expect);
    free(o);
    jn_encoder_free(&e);
}

/* ---- truncation and resumption -------------------------------------------- */

/* Valid single values, each prefix of which is incomplete. */
static const struct sample {
    size_t len;
    uint8_t octets[32];
} samples[] = {
    {1, {0x40}},
    {2, {0x56, 0x01}},
    {3, {0x60, 0x01, 0x02}},
    {9, {0x80, 1, 2, 3, 4, 5, 6, 7, 8}},
    {17, {0x98, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
    {5, {0xa1, 0x03, 'a', 'b', 'c'}},
    {7, {0xb0, 0, 0, 0, 2, 'a', 'b'}},
    {7, {0x00, 0xa3, 0x02, 'd', 'x', 0x52, 0x01}},
    {11, {0x00, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x70, 0x45}},
    {8, {0xc0, 0x06, 0x03, 0x40, 0xa1, 0x01, 'x', 0x41}},
    {11, {0xd1, 0, 0, 0, 6, 0, 0, 0, 2, 0x43, 0x44}},
    {9, {0xe0, 0x07, 0x02, 0x00, 0x53, 0x21, 0x52, 0x01, 0x02}},
    {16, {0xf0, 0, 0, 0, 11, 0, 0, 0, 1, 0xc0, 0x05, 0x02, 0x52, 0x09, 0xa1, 0x00}},
};

/* Decode a prefix: the first call gives want and, for JN_AGAIN, leaves the
 * decoder exactly as it was. */
static void check_prefix(const uint8_t *data, size_t len, size_t chunk, bool complete, int want)
{
    jn_buffer_list_t list;
    jn_iter_t it;
    jn_decoder_t d, before;
    jn_field_t f;
    make_iter(&list, &it, data, len, chunk);
    jn_decoder_init(&d, &it, complete);
    before = d;
    int rc = jn_decoder_next(&d, &f);
    if (rc != want)
        print_error("prefix %zu of %02x.., split %zu: rc %d\n", len, data[0], chunk, rc);
    assert_int_equal(rc, want);
    if (rc == JN_AGAIN) {
        assert_memory_equal(&d, &before, sizeof d);
        assert_int_equal(jn_decoder_next(&d, &f), JN_AGAIN);
    }
    jn_buffer_list_free(&list);
}

static void test_truncated_at_every_octet(void **state)
{
    (void)state;
    for (size_t n = 0; n < sizeof samples / sizeof samples[0]; n++) {
        const struct sample *sm = &samples[n];
        for (size_t s = 0; s < NSPLITS; s++) {
            for (size_t len = 1; len < sm->len; len++) {
                check_prefix(sm->octets, len, splits[s], false, JN_AGAIN);
                check_prefix(sm->octets, len, splits[s], true, JN_EPROTO);
            }
            check_prefix(sm->octets, sm->len, splits[s], false, 1);
            check_prefix(sm->octets, sm->len, splits[s], true, 1);
        }
    }
    /* and the reason given when the data is complete */
    expect_dump(BYTES(0xa1, 0x05, 'a', 'b'), true,
                "!EPROTO(value is cut short by the end of the data)");
    expect_dump(BYTES(0xa1, 0x05, 'a', 'b'), false, "!AGAIN");
}

/* Octets arrive one at a time (appended to the chain as new buffers, or
 * topping up the tail buffer); after each, decoding resumes from the end of
 * the last whole value through a fresh iterator. The values found are those
 * of decoding everything at once. */
static void test_resume_after_again_as_octets_arrive(void **state)
{
    (void)state;
    uint8_t data[512];
    size_t len = 0;
    for (size_t n = 0; n < sizeof samples / sizeof samples[0]; n++) {
        memcpy(data + len, samples[n].octets, samples[n].len);
        len += samples[n].len;
    }
    out_t *whole = malloc(sizeof *whole), *o = malloc(sizeof *o);
    assert_non_null(whole);
    assert_non_null(o);
    assert_int_equal(dump_split(whole, data, len, true, JN_BUFFER_CAPACITY), 0);
    for (int topup = 0; topup < 2; topup++) {
        jn_buffer_list_t list;
        size_t consumed = 0, agains = 0;
        jn_buffer_list_init(&list);
        o->len = 0;
        o->buf[0] = 0;
        for (size_t i = 0; i < len; i++) {
            if (topup)
                assert_int_equal(jn_buffer_list_append_bytes(&list, data + i, 1), 0);
            else
                assert_int_equal(jn_buffer_list_append_split(&list, data + i, 1, 1), 0);
            for (;;) {
                jn_iter_t it;
                jn_decoder_t d;
                jn_field_t f;
                assert_int_equal(
                    jn_iter_init(&it, list.head, consumed, i + 1 - consumed, JN_VIEW_RAW), 0);
                jn_decoder_init(&d, &it, false);
                int rc = jn_decoder_next(&d, &f);
                if (rc == JN_AGAIN)
                    agains++;
                if (rc != 1)
                    break;
                outf(o, consumed ? " " : "");
                assert_int_equal(dump_field(o, &d, &f), 0);
                consumed += jn_iter_length(&f.encoded);
            }
        }
        assert_int_equal(consumed, len);
        assert_true(agains > 0);
        assert_string_equal(o->buf, whole->buf);
        jn_buffer_list_free(&list);
    }
    free(whole);
    free(o);
}

/* ---- malformed input ----------------------------------------------------- */

static void test_value_larger_than_data_or_container(void **state)
{
    (void)state;
    expect_dump(BYTES(0xb0, 0xff, 0xff, 0xff, 0xff, 0x00), true,
                "!EPROTO(value is cut short by the end of the data)");
    expect_dump(BYTES(0xb0, 0xff, 0xff, 0xff, 0xff, 0x00), false, "!AGAIN");
    expect_dump(BYTES(0x40, 0xd0, 0x00, 0x00, 0x01, 0x00, 0x00), true,
                "40:null !EPROTO(value is cut short by the end of the data)");
    expect_dump(BYTES(0x40, 0xd0, 0x00, 0x00, 0x01, 0x00, 0x00), false, "40:null !AGAIN");
    /* inside a container whose size is all there, it is malformed either way */
    expect_both(BYTES(0xc0, 0x03, 0x01, 0xa1, 0x05),
                "c0:list[!EPROTO(element runs past the end of its container)]");
    expect_both(BYTES(0xc0, 0x03, 0x02, 0xa1, 0x00),
                "c0:list[a1:string=\"\" !EPROTO(element runs past the end of its container)]");
    expect_both(BYTES(0xe0, 0x03, 0x01, 0xa1, 0x05),
                "e0:array<a1>[!EPROTO(element runs past the end of its container)]");
}

static void test_count_larger_than_size_allows(void **state)
{
    (void)state;
    const char *list_reason = "!EPROTO(element count is larger than the compound's size allows)";
    expect_both(BYTES(0xc0, 0x01, 0xc8), list_reason); /* list8 size 1, count 200 */
    expect_both(BYTES(0xd0, 0, 0, 0, 4, 0, 0, 0, 5), list_reason);
    expect_both(BYTES(0xc1, 0x03, 0x04, 0x40, 0x40), list_reason);
    expect_both(BYTES(0xe0, 0x03, 0x03, 0x52, 0x01),
                "!EPROTO(array size does not match its count of fixed-width elements)");
    expect_both(BYTES(0xe0, 0x03, 0x03, 0xa1, 0x00),
                "!EPROTO(element count is larger than the array's size allows)");
    expect_both(BYTES(0xf0, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0x40),
                "!EPROTO(array has too many elements that take no octets)");
}

/* Found by fuzzing: an array of zero-width elements can claim billions of
 * them in a few octets; such counts are refused, small ones still decode. */
static void test_zero_width_array_count_is_bounded(void **state)
{
    (void)state;
    expect_both(BYTES(0xe0, 0x02, 0x03, 0x40), "e0:array<40>[40:null 40:null 40:null]");
    expect_both(BYTES(0xf0, 0, 0, 0, 5, 0xa1, 0x99, 0x99, 0x87, 0x45),
                "!EPROTO(array has too many elements that take no octets)");
    expect_both(BYTES(0xf0, 0, 0, 0, 5, 0, 1, 0, 1, 0x43),
                "!EPROTO(array has too many elements that take no octets)");
}

static void test_size_too_small_for_count(void **state)
{
    (void)state;
    expect_both(BYTES(0xc0, 0x00), "!EPROTO(compound size is too small to hold its count)");
    expect_both(BYTES(0xd1, 0, 0, 0, 3, 0, 0, 0),
                "!EPROTO(compound size is too small to hold its count)");
    expect_both(BYTES(0xe0, 0x01, 0x00),
                "!EPROTO(array size is too small to hold its count and constructor)");
    expect_both(BYTES(0xe0, 0x04, 0x01, 0xc0, 0x00, 0x00),
                "e0:array<c0>[!EPROTO(compound size is too small to hold its count)]");
}

static void test_octets_after_last_element_of_container(void **state)
{
    (void)state;
    expect_both(BYTES(0xc0, 0x03, 0x01, 0x40, 0x40),
                "c0:list[40:null !EPROTO(container has octets after its last element)]");
}

static void test_odd_map_count(void **state)
{
    (void)state;
    expect_both(BYTES(0xc1, 0x02, 0x01, 0x40), "!EPROTO(map has an odd number of keys and values)");
    expect_both(BYTES(0xd1, 0, 0, 0, 7, 0, 0, 0, 3, 0x40, 0x40, 0x40),
                "!EPROTO(map has an odd number of keys and values)");
}

static void test_bad_descriptor_and_boolean(void **state)
{
    (void)state;
    expect_both(BYTES(0x00, 0xa1, 0x01, 'a', 0x40),
                "!EPROTO(a descriptor is neither a ulong nor a symbol)");
    expect_both(BYTES(0x00, 0x52, 0x01, 0x40),
                "!EPROTO(a descriptor is neither a ulong nor a symbol)");
    expect_both(BYTES(0x00, 0x00, 0x53, 0x01, 0x40),
                "!EPROTO(a descriptor is itself a described value)");
    expect_both(BYTES(0xe0, 0x03, 0x00, 0x00, 0x40),
                "!EPROTO(a descriptor is neither a ulong nor a symbol)");
    expect_both(BYTES(0x56, 0x02), "!EPROTO(boolean octet is neither 0x00 nor 0x01)");
}

static bool is_known_code(unsigned code)
{
    static const uint8_t known[] = {0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x50, 0x51, 0x52, 0x53,
                                    0x54, 0x55, 0x56, 0x60, 0x61, 0x70, 0x71, 0x72, 0x73, 0x74,
                                    0x80, 0x81, 0x82, 0x83, 0x84, 0x94, 0x98, 0xa0, 0xa1, 0xa3,
                                    0xb0, 0xb1, 0xb3, 0xc0, 0xc1, 0xd0, 0xd1, 0xe0, 0xf0};
    for (size_t i = 0; i < sizeof known; i++)
        if (known[i] == code)
            return true;
    return false;
}

/* Decode under every split; all renderings must be identical. Returns the
 * rendering in o. */
static void same_dump(out_t *o, out_t *tmp, const uint8_t *data, size_t len, bool complete)
{
    dump_split(o, data, len, complete, splits[0]);
    for (size_t s = 1; s < NSPLITS; s++) {
        dump_split(tmp, data, len, complete, splits[s]);
        assert_string_equal(tmp->buf, o->buf);
    }
}

static void test_every_first_octet(void **state)
{
    (void)state;
    out_t *o = malloc(sizeof *o), *tmp = malloc(sizeof *tmp);
    assert_non_null(o);
    assert_non_null(tmp);
    uint8_t data[24];
    for (unsigned code = 0; code < 256; code++) {
        for (int fill = 0; fill < 2; fill++) { /* followed by 0x00s or by 0x40s */
            memset(data, fill ? 0x40 : 0x00, sizeof data);
            data[0] = (uint8_t)code;
            for (int complete = 0; complete < 2; complete++) {
                same_dump(o, tmp, data, sizeof data, complete);
                bool unknown = strncmp(o->buf, "!EPROTO(unknown format code)", 28) == 0;
                if (unknown != (!is_known_code(code) && code != 0))
                    print_error("code %02x: %s\n", code, o->buf);
                assert_int_equal(unknown, !is_known_code(code) && code != 0);
            }
        }
    }
    free(o);
    free(tmp);
}

static void test_every_array_element_code(void **state)
{
    (void)state;
    char expect[64];
    for (unsigned code = 0; code < 256; code++) {
        const uint8_t data[] = {0xe0, 0x02, 0x00, (uint8_t)code};
        if (code == 0)
            snprintf(expect, sizeof expect,
                     "!EPROTO(array element constructor runs past the array's size)");
        else if (!is_known_code(code))
            snprintf(expect, sizeof expect, "!EPROTO(array element format code is unknown)");
        else
            snprintf(expect, sizeof expect, "e0:array<%02x>[]", code);
        expect_both(data, sizeof data, expect);
    }
}

/* n descriptors (00 53 01) before a smalluint 7, inside `lists` list8s. */
static size_t nested_described(uint8_t *data, unsigned n, bool in_list)
{
    size_t len = 0;
    if (in_list) {
        data[len++] = 0xc0;
        data[len++] = (uint8_t)(3 * n + 3);
        data[len++] = 0x01;
    }
    for (unsigned i = 0; i < n; i++) {
        data[len++] = 0x00;
        data[len++] = 0x53;
        data[len++] = 0x01;
    }
    data[len++] = 0x52;
    data[len++] = 0x07;
    return len;
}

static void test_described_nesting_too_deep(void **state)
{
    (void)state;
    uint8_t data[256];
    size_t len = nested_described(data, JN_DECODE_MAX_DEPTH, false);
    expect_both(data, len, "d:0x1 52:uint=7");
    len = nested_described(data, JN_DECODE_MAX_DEPTH + 1, false);
    expect_both(data, len, "!EOVERFLOW(described values are nested too deeply)");
    len = nested_described(data, JN_DECODE_MAX_DEPTH - 1, true);
    expect_both(data, len, "c0:list[d:0x1 52:uint=7]");
    len = nested_described(data, JN_DECODE_MAX_DEPTH, true);
    expect_both(data, len, "c0:list[!EOVERFLOW(described values are nested too deeply)]");
}

/* n list8s, one inside the other, around a null. */
static size_t nested_lists(uint8_t *data, unsigned n)
{
    size_t len = 3 * (size_t)n + 1;
    for (unsigned i = 0; i < n; i++) {
        data[3 * i] = 0xc0;
        data[3 * i + 1] = (uint8_t)(len - 3 * i - 2);
        data[3 * i + 2] = 0x01;
    }
    data[3 * n] = 0x40;
    return len;
}

static void test_compound_nesting_too_deep(void **state)
{
    (void)state;
    uint8_t data[256];
    char expect[1024];
    size_t len = nested_lists(data, JN_DECODE_MAX_DEPTH);
    expect[0] = 0;
    for (unsigned i = 0; i < JN_DECODE_MAX_DEPTH; i++)
        strcat(expect, "c0:list[");
    strcat(expect, "40:null");
    for (unsigned i = 0; i < JN_DECODE_MAX_DEPTH; i++)
        strcat(expect, "]");
    expect_both(data, len, expect);

    len = nested_lists(data, JN_DECODE_MAX_DEPTH + 8);
    expect[0] = 0;
    for (unsigned i = 0; i < JN_DECODE_MAX_DEPTH; i++)
        strcat(expect, "c0:list[");
    strcat(expect, "c0:list!EOVERFLOW(compounds are nested too deeply)");
    for (unsigned i = 0; i < JN_DECODE_MAX_DEPTH; i++)
        strcat(expect, "]");
    expect_both(data, len, expect);
}

static void test_no_leak(void **state)
{
    (void)state;
    jn_pool_thread_exit();
    assert_int_equal(jn_pool_leak_report(stderr), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_width_values_decode),
        cmocka_unit_test(test_float_double_nan_inf_decode),
        cmocka_unit_test(test_variable_width_decode),
        cmocka_unit_test(test_described_values_decode),
        cmocka_unit_test(test_lists_and_maps_decode),
        cmocka_unit_test(test_nested_lists_and_maps_decode),
        cmocka_unit_test(test_arrays_decode),
        cmocka_unit_test(test_array_of_described_elements_decode),
        cmocka_unit_test(test_empty_input_is_end_of_sequence),
        cmocka_unit_test(test_encoded_view_includes_descriptor),
        cmocka_unit_test(test_field_conversions_and_names),
        cmocka_unit_test(test_round_trip_every_type),
        cmocka_unit_test(test_round_trip_string_edges),
        cmocka_unit_test(test_round_trip_compounds),
        cmocka_unit_test(test_round_trip_large_list32_and_map32),
        cmocka_unit_test(test_truncated_at_every_octet),
        cmocka_unit_test(test_resume_after_again_as_octets_arrive),
        cmocka_unit_test(test_value_larger_than_data_or_container),
        cmocka_unit_test(test_count_larger_than_size_allows),
        cmocka_unit_test(test_zero_width_array_count_is_bounded),
        cmocka_unit_test(test_size_too_small_for_count),
        cmocka_unit_test(test_octets_after_last_element_of_container),
        cmocka_unit_test(test_odd_map_count),
        cmocka_unit_test(test_bad_descriptor_and_boolean),
        cmocka_unit_test(test_every_first_octet),
        cmocka_unit_test(test_every_array_element_code),
        cmocka_unit_test(test_described_nesting_too_deep),
        cmocka_unit_test(test_compound_nesting_too_deep),
        cmocka_unit_test(test_no_leak),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    jn_pool_shutdown();
    return failed;
}
