/*
 * test_util_time.c — clocks and the wall-clock text (junction/time.h):
 * monotonic time never goes back, ms agrees with ns, wall time is near
 * time(), and the qdrouterd timestamp format for known instants and zones.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/time.h>

#include <stdlib.h>
#include <time.h>

static void test_monotonic_never_goes_back(void **state)
{
    (void)state;
    uint64_t prev = jn_time_mono_ns();
    for (int i = 0; i < 100000; i++) {
        uint64_t now = jn_time_mono_ns();
        assert_true(now >= prev);
        prev = now;
    }
    uint64_t ms = jn_time_mono_ms();
    uint64_t ns = jn_time_mono_ns();
    assert_in_range(ns / JN_NS_PER_MS - ms, 0, 1000);
}

static void test_wall_clock_is_near_time(void **state)
{
    (void)state;
    int64_t us = jn_time_wall_us();
    int64_t s = (int64_t)time(NULL);
    assert_in_range(us / JN_US_PER_S, s - 2, s + 2);
}

static void test_format_wall_utc(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    tzset();
    char buf[JN_TIME_WALL_TEXT_MAX];
    assert_int_equal(jn_time_format_wall(0, buf, sizeof(buf)), 32);
    assert_string_equal(buf, "1970-01-01 00:00:00.000000 +0000");
    assert_int_equal(jn_time_format_wall(1700000000123456ll, buf, sizeof(buf)), 32);
    assert_string_equal(buf, "2023-11-14 22:13:20.123456 +0000");
    /* same second again: served from the per-thread cache */
    assert_int_equal(jn_time_format_wall(1700000000999999ll, buf, sizeof(buf)), 32);
    assert_string_equal(buf, "2023-11-14 22:13:20.999999 +0000");
    assert_int_equal(jn_time_format_wall(-1, buf, sizeof(buf)), 32);
    assert_string_equal(buf, "1969-12-31 23:59:59.999999 +0000");
}

static void test_format_wall_offset_zone(void **state)
{
    (void)state;
    setenv("TZ", "XYZ-02:30", 1); /* POSIX: 2h30 east of UTC */
    tzset();
    char buf[JN_TIME_WALL_TEXT_MAX];
    assert_int_equal(jn_time_format_wall(1600000000000001ll, buf, sizeof(buf)), 32);
    assert_string_equal(buf, "2020-09-13 14:56:40.000001 +0230");
}

static void test_format_wall_small_buffer_is_erange(void **state)
{
    (void)state;
    char buf[10];
    assert_int_equal(jn_time_format_wall(0, buf, sizeof(buf)), JN_ERANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_monotonic_never_goes_back),
        cmocka_unit_test(test_wall_clock_is_near_time),
        cmocka_unit_test(test_format_wall_utc),
        cmocka_unit_test(test_format_wall_offset_zone),
        cmocka_unit_test(test_format_wall_small_buffer_is_erange),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
