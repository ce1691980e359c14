/*
 * test_util_common.c — the shared helpers of junction/common.h: UTF-8 of a
 * code point at each length boundary, code points that are not scalar
 * values written as nothing, result-code texts, optional string copies.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/common.h>

#include <stdlib.h>
#include <string.h>

static void expect_utf8(uint32_t cp, const char *want, size_t len)
{
    char out[4] = {0};
    assert_int_equal(jn_utf8_put(out, cp), len);
    assert_memory_equal(out, want, len);
}

static void test_utf8_at_each_length_boundary(void **state)
{
    (void)state;
    expect_utf8(0x00, "\x00", 1);
    expect_utf8(0x41, "A", 1);
    expect_utf8(0x7f, "\x7f", 1);
    expect_utf8(0x80, "\xc2\x80", 2);
    expect_utf8(0xe9, "\xc3\xa9", 2);
    expect_utf8(0x7ff, "\xdf\xbf", 2);
    expect_utf8(0x800, "\xe0\xa0\x80", 3);
    expect_utf8(0xd7ff, "\xed\x9f\xbf", 3);
    expect_utf8(0xe000, "\xee\x80\x80", 3);
    expect_utf8(0x20ac, "\xe2\x82\xac", 3);
    expect_utf8(0xffff, "\xef\xbf\xbf", 3);
    expect_utf8(0x10000, "\xf0\x90\x80\x80", 4);
    expect_utf8(0x1f600, "\xf0\x9f\x98\x80", 4);
    expect_utf8(0x10ffff, "\xf4\x8f\xbf\xbf", 4);
}

static void test_utf8_writes_nothing_for_a_non_scalar_value(void **state)
{
    (void)state;
    const uint32_t bad[] = {0xd800, 0xdbff, 0xdc00, 0xdfff, 0x110000, 0xffffffffu};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char out[4] = {'x', 'x', 'x', 'x'};
        assert_int_equal(jn_utf8_put(out, bad[i]), 0);
        assert_memory_equal(out, "xxxx", 4);
    }
}

static void test_strerror_names_known_codes(void **state)
{
    (void)state;
    assert_non_null(jn_strerror(JN_EPROTO));
    assert_string_not_equal(jn_strerror(JN_EPROTO), jn_strerror(JN_EINVAL));
    assert_string_equal(jn_strerror(12345), "unknown error");
}

static void test_strdup_opt_copies_or_passes_null(void **state)
{
    (void)state;
    bool failed = false;
    assert_null(jn_strdup_opt(NULL, &failed));
    assert_false(failed);
    char *d = jn_strdup_opt("amqp", &failed);
    assert_string_equal(d, "amqp");
    assert_false(failed);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_at_each_length_boundary),
        cmocka_unit_test(test_utf8_writes_nothing_for_a_non_scalar_value),
        cmocka_unit_test(test_strerror_names_known_codes),
        cmocka_unit_test(test_strdup_opt_copies_or_passes_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
