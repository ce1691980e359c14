/*
 * test_message_encoder.c — the AMQP 1.0 encoder (junction/encoder.h): the
 * exact octets of each value's smallest encoding, compounds shrunk to their
 * 8 forms (and kept in their 32 forms when they do not fit), arrays with one
 * shared element constructor, descriptors, raw values, growth past the
 * inline area, copying to buffers, and every error (sticky). Decoding what
 * the encoder writes is tested in test_message_decoder.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/encoder.h>
#include <junction/pool.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})

static void print_hex(const char *what, const uint8_t *p, size_t len)
{
    print_error("%s (%zu):", what, len);
    for (size_t i = 0; i < len; i++)
        print_error(" %02x", p[i]);
    print_error("\n");
}

/* e holds no error and exactly the octets want. */
static void expect_bytes(const jn_encoder_t *e, const uint8_t *want, size_t want_len)
{
    size_t len;
    const uint8_t *p = jn_encoder_data(e, &len);
    assert_int_equal(jn_encoder_error(e), 0);
    if (len != want_len || memcmp(p, want, len) != 0) {
        print_hex("got   ", p, len);
        print_hex("expect", want, want_len);
    }
    assert_int_equal(len, want_len);
    assert_memory_equal(p, want, len);
}

/* e's first error is rc. */
static void expect_error(const jn_encoder_t *e, int rc)
{
    assert_int_equal(jn_encoder_error(e), rc);
}

static void test_smallest_unsigned_encodings(void **state)
{
    (void)state;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_uint(&e, 0);
    jn_enc_uint(&e, 1);
    jn_enc_uint(&e, 255);
    jn_enc_uint(&e, 256);
    jn_enc_uint(&e, UINT32_MAX);
    expect_bytes(
        &e, BYTES(0x43, 0x52, 0x01, 0x52, 0xff, 0x70, 0, 0, 1, 0, 0x70, 0xff, 0xff, 0xff, 0xff));
    jn_encoder_free(&e);
    jn_enc_ulong(&e, 0);
    jn_enc_ulong(&e, 255);
    jn_enc_ulong(&e, 256);
    jn_enc_ulong(&e, UINT64_MAX);
    expect_bytes(&e, BYTES(0x44, 0x53, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 1, 0, 0x80, 0xff, 0xff, 0xff,
                           0xff, 0xff, 0xff, 0xff, 0xff));
    jn_encoder_free(&e);
    jn_enc_ubyte(&e, 0);
    jn_enc_ubyte(&e, 255);
    jn_enc_ushort(&e, 0);
    jn_enc_ushort(&e, 0xabcd);
    expect_bytes(&e, BYTES(0x50, 0x00, 0x50, 0xff, 0x60, 0, 0, 0x60, 0xab, 0xcd));
    jn_encoder_free(&e);
}

static void test_smallest_signed_encodings(void **state)
{
    (void)state;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_int(&e, 0);
    jn_enc_int(&e, -128);
    jn_enc_int(&e, 127);
    jn_enc_int(&e, 128);
    jn_enc_int(&e, -129);
    jn_enc_int(&e, INT32_MIN);
    expect_bytes(&e, BYTES(0x54, 0x00, 0x54, 0x80, 0x54, 0x7f, 0x71, 0, 0, 0, 0x80, 0x71, 0xff,
                           0xff, 0xff, 0x7f, 0x71, 0x80, 0, 0, 0));
    jn_encoder_free(&e);
    jn_enc_long(&e, -1);
    jn_enc_long(&e, 128);
    jn_enc_long(&e, INT64_MIN);
    jn_enc_long(&e, INT64_MAX);
    expect_bytes(&e, BYTES(0x55, 0xff, 0x81, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x81, 0x80, 0, 0, 0, 0, 0,
                           0, 0, 0x81, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff));
    jn_encoder_free(&e);
    jn_enc_byte(&e, -1);
    jn_enc_byte(&e, 0);
    jn_enc_short(&e, INT16_MIN);
    jn_enc_short(&e, 1);
    expect_bytes(&e, BYTES(0x51, 0xff, 0x51, 0x00, 0x61, 0x80, 0x00, 0x61, 0x00, 0x01));
    jn_encoder_free(&e);
}

static void test_null_bool_and_other_fixed_encodings(void **state)
{
    (void)state;
    static const uint8_t uuid[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_null(&e);
    jn_enc_bool(&e, true);
    jn_enc_bool(&e, false);
    jn_enc_char(&e, 0x1f600);
    jn_enc_timestamp(&e, -2);
    jn_enc_uuid(&e, uuid);
    expect_bytes(&e, BYTES(0x40, 0x41, 0x42, 0x73, 0x00, 0x01, 0xf6, 0x00, 0x83, 0xff, 0xff, 0xff,
                           0xff, 0xff, 0xff, 0xff, 0xfe, 0x98, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                           12, 13, 14, 15));
    jn_encoder_free(&e);
}

static void test_float_double_nan_inf_encodings(void **state)
{
    (void)state;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_float(&e, 1.0f);
    jn_enc_float(&e, INFINITY);
    jn_enc_float(&e, -INFINITY);
    jn_enc_float(&e, NAN);
    jn_enc_double(&e, -INFINITY);
    jn_enc_double(&e, NAN);
    jn_enc_double(&e, 0.5);
    expect_bytes(&e, BYTES(0x72, 0x3f, 0x80, 0, 0, 0x72, 0x7f, 0x80, 0, 0, 0x72, 0xff, 0x80, 0, 0,
                           0x72, 0x7f, 0xc0, 0, 0, 0x82, 0xff, 0xf0, 0, 0, 0, 0, 0, 0, 0x82, 0x7f,
                           0xf8, 0, 0, 0, 0, 0, 0, 0x82, 0x3f, 0xe0, 0, 0, 0, 0, 0, 0));
    jn_encoder_free(&e);
}

static void test_variable_width_str8_str32_edges(void **state)
{
    (void)state;
    uint8_t s[300], want[600];
    memset(s, 'x', sizeof s);
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_string(&e, "", 0);
    jn_enc_binary(&e, NULL, 0);
    jn_enc_symbol(&e, "ab", 2);
    jn_enc_cstring(&e, "hi");
    jn_enc_csymbol(&e, "");
    expect_bytes(
        &e, BYTES(0xa1, 0x00, 0xa0, 0x00, 0xa3, 0x02, 'a', 'b', 0xa1, 0x02, 'h', 'i', 0xa3, 0x00));
    jn_encoder_free(&e);
    /* 255 octets: str8; 256: str32 */
    jn_enc_string(&e, (const char *)s, 255);
    want[0] = 0xa1;
    want[1] = 0xff;
    memset(want + 2, 'x', 255);
    expect_bytes(&e, want, 257);
    jn_encoder_free(&e);
    jn_enc_string(&e, (const char *)s, 256);
    memcpy(want, (const uint8_t[]){0xb1, 0, 0, 1, 0}, 5);
    memset(want + 5, 'x', 256);
    expect_bytes(&e, want, 261);
    jn_encoder_free(&e);
    jn_enc_binary(&e, s, 256);
    want[0] = 0xb0;
    expect_bytes(&e, want, 261);
    jn_encoder_free(&e);
    jn_enc_symbol(&e, (const char *)s, 256);
    want[0] = 0xb3;
    expect_bytes(&e, want, 261);
    jn_encoder_free(&e);
}

/* Iterators over a chain split into 1-, 2-, 3-, 7-octet and full buffers. */
static void test_string_and_symbol_from_iterator(void **state)
{
    (void)state;
    static const size_t splits[] = {1, 2, 3, 7, JN_BUFFER_CAPACITY};
    uint8_t s[300], want[310];
    for (size_t i = 0; i < sizeof s; i++)
        s[i] = (uint8_t)('a' + i % 26);
    for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
        jn_buffer_list_t list;
        jn_iter_t it;
        jn_encoder_t e;
        jn_buffer_list_init(&list);
        assert_int_equal(jn_buffer_list_append_split(&list, s, sizeof s, splits[k]), 0);
        assert_int_equal(jn_iter_init(&it, list.head, 10, 5, JN_VIEW_RAW), 0);
        jn_encoder_init(&e);
        jn_enc_string_iter(&e, &it);
        jn_enc_symbol_iter(&e, &it);
        assert_int_equal(jn_iter_length(&it), 5); /* not advanced */
        expect_bytes(
            &e, BYTES(0xa1, 0x05, 'k', 'l', 'm', 'n', 'o', 0xa3, 0x05, 'k', 'l', 'm', 'n', 'o'));
        jn_encoder_free(&e);
        assert_int_equal(jn_iter_init(&it, list.head, 0, sizeof s, JN_VIEW_RAW), 0);
        jn_enc_symbol_iter(&e, &it);
        memcpy(want, (const uint8_t[]){0xb3, 0, 0, 0x01, 0x2c}, 5);
        memcpy(want + 5, s, sizeof s);
        expect_bytes(&e, want, 5 + sizeof s);
        jn_encoder_free(&e);
        jn_buffer_list_free(&list);
    }
}

static void test_empty_compounds(void **state)
{
    (void)state;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_list_begin(&e);
    jn_enc_list_end(&e);
    jn_enc_map_begin(&e);
    jn_enc_map_end(&e);
    jn_enc_array_begin(&e, JN_AMQP_SYM8);
    jn_enc_array_end(&e);
    expect_bytes(&e, BYTES(0x45, 0xc1, 0x01, 0x00, 0xe0, 0x02, 0x00, 0xa3));
    jn_encoder_free(&e);
}

static void test_compounds_shrink_to_8_forms(void **state)
{
    (void)state;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_list_begin(&e);
    jn_enc_uint(&e, 1);
    jn_enc_null(&e);
    jn_enc_list_end(&e);
    jn_enc_map_begin(&e);
    jn_enc_csymbol(&e, "k");
    jn_enc_bool(&e, true);
    jn_enc_map_end(&e);
    expect_bytes(
        &e, BYTES(0xc0, 0x04, 0x02, 0x52, 0x01, 0x40, 0xc1, 0x05, 0x02, 0xa3, 0x01, 'k', 0x41));
    jn_encoder_free(&e);
    /* nested: the inner compounds shrink first */
    jn_enc_list_begin(&e);
    jn_enc_map_begin(&e);
    jn_enc_csymbol(&e, "k");
    jn_enc_list_begin(&e);
    jn_enc_list_end(&e);
    jn_enc_map_end(&e);
    jn_enc_list_end(&e);
    expect_bytes(&e, BYTES(0xc0, 0x08, 0x01, 0xc1, 0x05, 0x02, 0xa3, 0x01, 'k', 0x45));
    jn_encoder_free(&e);
}

/* A list of n nulls: list8 while its size (count octet + n) fits an octet. */
static void test_list8_list32_boundary(void **state)
{
    (void)state;
    jn_encoder_t e;
    uint8_t want[300];
    jn_encoder_init(&e);
    jn_enc_list_begin(&e);
    for (int i = 0; i < 254; i++)
        jn_enc_null(&e);
    jn_enc_list_end(&e);
    want[0] = 0xc0;
    want[1] = 0xff;
    want[2] = 254;
    memset(want + 3, 0x40, 254);
    expect_bytes(&e, want, 257);
    jn_encoder_free(&e);

    jn_enc_list_begin(&e);
    for (int i = 0; i < 255; i++)
        jn_enc_null(&e);
    jn_enc_list_end(&e);
    memcpy(want, (const uint8_t[]){0xd0, 0, 0, 0x01, 0x03, 0, 0, 0, 0xff}, 9);
    memset(want + 9, 0x40, 255);
    expect_bytes(&e, want, 264);
    jn_encoder_free(&e);

    /* count over 255 in a small size cannot happen, but a map of 128 pairs
     * of empty values has count 256: map32 */
    jn_enc_map_begin(&e);
    for (int i = 0; i < 256; i++)
        jn_enc_null(&e);
    jn_enc_map_end(&e);
    size_t len;
    const uint8_t *p = jn_encoder_data(&e, &len);
    assert_int_equal(len, 9 + 256);
    assert_memory_equal(p, ((const uint8_t[]){0xd1, 0, 0, 0x01, 0x04, 0, 0, 0x01, 0x00}), 9);
    jn_encoder_free(&e);
}

static void test_array_constructor_written_once(void **state)
{
    (void)state;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_array_begin(&e, JN_AMQP_UINT);
    jn_enc_uint(&e, 1);
    jn_enc_uint(&e, 2);
    jn_enc_array_end(&e);
    jn_enc_array_begin(&e, JN_AMQP_SMALLUINT);
    jn_enc_uint(&e, 3);
    jn_enc_array_end(&e);
    jn_enc_array_begin(&e, JN_AMQP_SYM8);
    jn_enc_csymbol(&e, "a");
    jn_enc_csymbol(&e, "bc");
    jn_enc_array_end(&e);
    jn_enc_array_begin(&e, JN_AMQP_SYM32);
    jn_enc_csymbol(&e, "a");
    jn_enc_array_end(&e);
    expect_bytes(&e, BYTES(0xe0, 0x0a, 0x02, 0x70, 0, 0, 0, 1, 0, 0, 0, 2,    /* uint */
                           0xe0, 0x03, 0x01, 0x52, 0x03,                      /* smalluint */
                           0xe0, 0x07, 0x02, 0xa3, 0x01, 'a', 0x02, 'b', 'c', /* sym8 */
                           0xe0, 0x07, 0x01, 0xb3, 0, 0, 0, 1, 'a'));         /* sym32 */
    jn_encoder_free(&e);
    jn_enc_array_begin(&e, JN_AMQP_BOOLEAN);
    jn_enc_bool(&e, true);
    jn_enc_bool(&e, false);
    jn_enc_array_end(&e);
    jn_enc_array_begin(&e, JN_AMQP_TRUE);
    jn_enc_bool(&e, true);
    jn_enc_bool(&e, true);
    jn_enc_array_end(&e);
    jn_enc_array_begin(&e, JN_AMQP_ULONG0);
    jn_enc_ulong(&e, 0);
    jn_enc_array_end(&e);
    jn_enc_array_begin(&e, JN_AMQP_LONG);
    jn_enc_long(&e, -1);
    jn_enc_array_end(&e);
    expect_bytes(&e, BYTES(0xe0, 0x04, 0x02, 0x56, 0x01, 0x00, 0xe0, 0x02, 0x02, 0x41, 0xe0, 0x02,
                           0x01, 0x44, 0xe0, 0x0a, 0x01, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                           0xff, 0xff));
    jn_encoder_free(&e);
}

static void test_array_of_described_elements(void **state)
{
    (void)state;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_array_begin(&e, JN_AMQP_SMALLUINT);
    jn_enc_descriptor_ulong(&e, 0x21);
    jn_enc_uint(&e, 1);
    jn_enc_uint(&e, 2);
    jn_enc_array_end(&e);
    jn_enc_array_begin(&e, JN_AMQP_LIST8);
    jn_enc_descriptor_symbol(&e, "xy");
    jn_enc_array_end(&e);
    expect_bytes(&e, BYTES(0xe0, 0x07, 0x02, 0x00, 0x53, 0x21, 0x52, 0x01, 0x02, 0xe0, 0x07, 0x00,
                           0x00, 0xa3, 0x02, 'x', 'y', 0xc0));
    jn_encoder_free(&e);
}

static void test_array_of_compound_elements(void **state)
{
    (void)state;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_array_begin(&e, JN_AMQP_LIST8);
    jn_enc_list_begin(&e);
    jn_enc_null(&e);
    jn_enc_list_end(&e);
    jn_enc_list_begin(&e);
    jn_enc_list_end(&e);
    jn_enc_array_end(&e);
    expect_bytes(&e, BYTES(0xe0, 0x07, 0x02, 0xc0, 0x02, 0x01, 0x40, 0x01, 0x00));
    jn_encoder_free(&e);
    jn_enc_array_begin(&e, JN_AMQP_LIST32);
    jn_enc_list_begin(&e);
    jn_enc_null(&e);
    jn_enc_list_end(&e);
    jn_enc_array_end(&e);
    jn_enc_array_begin(&e, JN_AMQP_LIST0);
    jn_enc_list_begin(&e);
    jn_enc_list_end(&e);
    jn_enc_list_begin(&e);
    jn_enc_list_end(&e);
    jn_enc_array_end(&e);
    expect_bytes(
        &e, BYTES(0xe0, 0x0b, 0x01, 0xd0, 0, 0, 0, 5, 0, 0, 0, 1, 0x40, 0xe0, 0x02, 0x02, 0x45));
    jn_encoder_free(&e);
    /* arrays of maps and of arrays (each inner array has its constructor) */
    jn_enc_array_begin(&e, JN_AMQP_MAP8);
    jn_enc_map_begin(&e);
    jn_enc_bool(&e, true);
    jn_enc_bool(&e, false);
    jn_enc_map_end(&e);
    jn_enc_array_end(&e);
    jn_enc_array_begin(&e, JN_AMQP_ARRAY8);
    jn_enc_array_begin(&e, JN_AMQP_UBYTE);
    jn_enc_ubyte(&e, 7);
    jn_enc_array_end(&e);
    jn_enc_array_begin(&e, JN_AMQP_STR8);
    jn_enc_string(&e, "", 0);
    jn_enc_string(&e, "", 0);
    jn_enc_array_end(&e);
    jn_enc_array_end(&e);
    expect_bytes(&e, BYTES(0xe0, 0x06, 0x01, 0xc1, 0x03, 0x02, 0x41, 0x42, 0xe0, 0x0b, 0x02, 0xe0,
                           0x03, 0x01, 0x50, 0x07, 0x04, 0x02, 0xa1, 0x00, 0x00));
    jn_encoder_free(&e);
}

static void test_descriptors(void **state)
{
    (void)state;
    char sym[300];
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_descriptor_ulong(&e, 0);
    jn_enc_null(&e);
    jn_enc_descriptor_ulong(&e, 0x70);
    jn_enc_list_begin(&e);
    jn_enc_descriptor_ulong(&e, 0x100);
    jn_enc_bool(&e, true);
    jn_enc_list_end(&e);
    jn_enc_descriptor_symbol(&e, "x");
    jn_enc_descriptor_ulong(&e, 1); /* a described described value */
    jn_enc_uint(&e, 0);
    expect_bytes(&e, BYTES(0x00, 0x44, 0x40, 0x00, 0x53, 0x70, 0xc0, 0x0c, 0x01, 0x00, 0x80, 0, 0,
                           0, 0, 0, 0, 1, 0, 0x41, 0x00, 0xa3, 0x01, 'x', 0x00, 0x53, 0x01, 0x43));
    jn_encoder_free(&e);
    memset(sym, 's', sizeof sym - 1);
    sym[sizeof sym - 1] = 0;
    jn_enc_descriptor_symbol(&e, sym);
    jn_enc_null(&e);
    size_t len;
    const uint8_t *p = jn_encoder_data(&e, &len);
    assert_int_equal(len, 1 + 5 + 299 + 1);
    assert_memory_equal(p, ((const uint8_t[]){0x00, 0xb3, 0, 0, 0x01, 0x2b, 's'}), 7);
    assert_int_equal(p[len - 1], 0x40);
    jn_encoder_free(&e);
}

static void test_raw_values_count_as_one_element(void **state)
{
    (void)state;
    static const uint8_t raw[] = {0xa1, 0x01, 'a'};
    jn_encoder_t e;
    jn_buffer_list_t list;
    jn_iter_t it;
    jn_encoder_init(&e);
    jn_buffer_list_init(&list);
    assert_int_equal(jn_buffer_list_append_split(&list, raw, sizeof raw, 1), 0);
    assert_int_equal(jn_iter_init(&it, list.head, 0, sizeof raw, JN_VIEW_RAW), 0);
    jn_enc_list_begin(&e);
    jn_enc_raw(&e, raw, sizeof raw);
    jn_enc_raw_iter(&e, &it);
    jn_enc_descriptor_ulong(&e, 2);
    jn_enc_raw(&e, raw, sizeof raw);
    jn_enc_list_end(&e);
    expect_bytes(&e, BYTES(0xc0, 0x0d, 0x03, 0xa1, 0x01, 'a', 0xa1, 0x01, 'a', 0x00, 0x53, 0x02,
                           0xa1, 0x01, 'a'));
    assert_int_equal(jn_iter_length(&it), 3);
    jn_encoder_free(&e);
    jn_buffer_list_free(&list);
}

static void test_growth_past_inline_area_and_to_buffers(void **state)
{
    (void)state;
    jn_encoder_t e;
    jn_buffer_list_t list;
    uint8_t copy[8192];
    jn_encoder_init(&e);
    jn_enc_list_begin(&e);
    for (unsigned i = 0; i < 1000; i++)
        jn_enc_uint(&e, 1000 + i); /* 5 octets each */
    jn_enc_list_end(&e);
    assert_int_equal(jn_encoder_error(&e), 0);
    size_t len;
    const uint8_t *p = jn_encoder_data(&e, &len);
    assert_int_equal(len, 9 + 5000);
    assert_true(p != e.inline_data);
    assert_memory_equal(
        p, ((const uint8_t[]){0xd0, 0, 0, 0x13, 0x8c, 0, 0, 0x03, 0xe8, 0x70, 0, 0, 0x03, 0xe8}),
        14);
    jn_buffer_list_init(&list);
    assert_int_equal(jn_encoder_to_buffers(&e, &list), 0);
    assert_int_equal(jn_buffer_list_length(&list), len);
    assert_int_equal(jn_buffer_list_copy_out(&list, 0, copy, sizeof copy), len);
    assert_memory_equal(copy, p, len);
    jn_buffer_list_free(&list);
    jn_encoder_free(&e);
    /* free leaves an empty encoder on its inline area */
    p = jn_encoder_data(&e, &len);
    assert_int_equal(len, 0);
    assert_true(p == e.inline_data);
    jn_enc_null(&e);
    expect_bytes(&e, BYTES(0x40));
    jn_encoder_free(&e);
}

static void test_array_element_errors(void **state)
{
    (void)state;
    char big[300];
    memset(big, 'b', sizeof big);
    jn_encoder_t e;
    struct {
        const char *what;
        uint8_t code;
        int step;
    } cases[] = {
        {"uint in a sym8 array", JN_AMQP_SYM8, 0},
        {"300 in a smalluint array", JN_AMQP_SMALLUINT, 1},
        {"1 in a uint0 array", JN_AMQP_UINT0, 2},
        {"256-octet string in a str8 array", JN_AMQP_STR8, 3},
        {"false in a true array", JN_AMQP_TRUE, 4},
        {"200 in a smallint array", JN_AMQP_SMALLINT, 5},
        {"raw value in an array", JN_AMQP_UINT, 6},
        {"descriptor after the first element", JN_AMQP_NULL, 7},
        {"list in a map8 array", JN_AMQP_MAP8, 8},
        {"element in a list0 element", JN_AMQP_LIST0, 9},
        {"list element too large for list8", JN_AMQP_LIST8, 10},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        jn_encoder_init(&e);
        jn_enc_array_begin(&e, cases[i].code);
        switch (cases[i].step) {
        case 0:
            jn_enc_uint(&e, 1);
            break;
        case 1:
            jn_enc_uint(&e, 300);
            break;
        case 2:
            jn_enc_uint(&e, 1);
            break;
        case 3:
            jn_enc_string(&e, big, 256);
            break;
        case 4:
            jn_enc_bool(&e, false);
            break;
        case 5:
            jn_enc_int(&e, 200);
            break;
        case 6:
            jn_enc_raw(&e, "\x40", 1);
            break;
        case 7:
            jn_enc_null(&e);
            jn_enc_descriptor_ulong(&e, 1);
            break;
        case 8:
            jn_enc_list_begin(&e);
            break;
        case 9:
            jn_enc_list_begin(&e);
            jn_enc_null(&e);
            jn_enc_list_end(&e);
            break;
        case 10:
            jn_enc_list_begin(&e);
            jn_enc_string(&e, big, 254);
            jn_enc_list_end(&e);
            break;
        }
        if (jn_encoder_error(&e) != JN_EINVAL)
            print_error("case: %s\n", cases[i].what);
        expect_error(&e, JN_EINVAL);
        jn_encoder_free(&e);
    }
    /* invalid element codes */
    static const uint8_t bad[] = {0x00, 0x01, 0x3f, 0x46, 0x99, 0xa2, 0xff};
    for (size_t i = 0; i < sizeof bad; i++) {
        jn_encoder_init(&e);
        jn_enc_array_begin(&e, bad[i]);
        expect_error(&e, JN_EINVAL);
        jn_encoder_free(&e);
    }
}

static void test_compound_end_errors(void **state)
{
    (void)state;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_list_end(&e); /* no begin */
    expect_error(&e, JN_EINVAL);
    jn_encoder_free(&e);
    jn_enc_map_begin(&e);
    jn_enc_list_end(&e); /* wrong kind */
    expect_error(&e, JN_EINVAL);
    jn_encoder_free(&e);
    jn_enc_map_begin(&e);
    jn_enc_null(&e);
    jn_enc_map_end(&e); /* odd count */
    expect_error(&e, JN_EINVAL);
    jn_encoder_free(&e);
    jn_enc_list_begin(&e);
    jn_enc_descriptor_ulong(&e, 1);
    jn_enc_list_end(&e); /* descriptor without its value */
    expect_error(&e, JN_EINVAL);
    jn_encoder_free(&e);
    for (int i = 0; i < JN_ENCODER_MAX_DEPTH; i++)
        jn_enc_list_begin(&e);
    assert_int_equal(jn_encoder_error(&e), 0);
    jn_enc_list_begin(&e); /* one too deep */
    expect_error(&e, JN_EOVERFLOW);
    jn_encoder_free(&e);
}

static void test_to_buffers_errors(void **state)
{
    (void)state;
    jn_encoder_t e;
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    jn_encoder_init(&e);
    assert_int_equal(jn_encoder_to_buffers(&e, &list), 0); /* empty: nothing appended */
    assert_null(list.head);
    jn_enc_list_begin(&e);
    assert_int_equal(jn_encoder_to_buffers(&e, &list), JN_EINVAL); /* still open */
    jn_enc_list_end(&e);
    jn_enc_descriptor_ulong(&e, 3);
    assert_int_equal(jn_encoder_to_buffers(&e, &list), JN_EINVAL); /* value missing */
    jn_enc_null(&e);
    assert_int_equal(jn_encoder_to_buffers(&e, &list), 0);
    assert_int_equal(jn_buffer_list_length(&list), 5); /* 45 00 53 03 40 */
    jn_buffer_list_free(&list);
    jn_encoder_free(&e);
}

static void test_errors_are_sticky(void **state)
{
    (void)state;
    jn_encoder_t e;
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    jn_encoder_init(&e);
    jn_enc_uint(&e, 1);
    jn_enc_map_end(&e); /* first error */
    size_t len;
    jn_encoder_data(&e, &len);
    assert_int_equal(len, 2);
    for (int i = 0; i < JN_ENCODER_MAX_DEPTH + 2; i++)
        jn_enc_list_begin(&e); /* would be EOVERFLOW */
    jn_enc_null(&e);
    jn_enc_cstring(&e, "ignored");
    jn_enc_descriptor_ulong(&e, 1);
    jn_enc_raw(&e, "\x40", 1);
    jn_enc_array_begin(&e, 0x00);
    jn_encoder_data(&e, &len);
    assert_int_equal(len, 2);
    expect_error(&e, JN_EINVAL);
    assert_int_equal(jn_encoder_to_buffers(&e, &list), JN_EINVAL);
    assert_null(list.head);
    jn_encoder_free(&e);
    assert_int_equal(jn_encoder_error(&e), 0); /* cleared by free */
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
        cmocka_unit_test(test_smallest_unsigned_encodings),
        cmocka_unit_test(test_smallest_signed_encodings),
        cmocka_unit_test(test_null_bool_and_other_fixed_encodings),
        cmocka_unit_test(test_float_double_nan_inf_encodings),
        cmocka_unit_test(test_variable_width_str8_str32_edges),
        cmocka_unit_test(test_string_and_symbol_from_iterator),
        cmocka_unit_test(test_empty_compounds),
        cmocka_unit_test(test_compounds_shrink_to_8_forms),
        cmocka_unit_test(test_list8_list32_boundary),
        cmocka_unit_test(test_array_constructor_written_once),
        cmocka_unit_test(test_array_of_described_elements),
        cmocka_unit_test(test_array_of_compound_elements),
        cmocka_unit_test(test_descriptors),
        cmocka_unit_test(test_raw_values_count_as_one_element),
        cmocka_unit_test(test_growth_past_inline_area_and_to_buffers),
        cmocka_unit_test(test_array_element_errors),
        cmocka_unit_test(test_compound_end_errors),
        cmocka_unit_test(test_to_buffers_errors),
        cmocka_unit_test(test_errors_are_sticky),
        cmocka_unit_test(test_no_leak),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    jn_pool_shutdown();
    return failed;
}
