/*
 * test_message_hold.c — holding (junction/message.h, "holding"): a
 * message's buffers go as soon as the writer is done, the set of copies is
 * final and every copy has ended, in any order; the octets are charged to
 * the link's budget and given back then (or when the message is freed);
 * the budget stops above its high-water mark and calls its waker once
 * below its low-water mark; a copy ending on another thread. Ends with a
 * pool leak check.
 */
#include "test_message_util.h"

#include <pthread.h>
#include <string.h>

static jn_message_t *filled(size_t n)
{
    jn_message_t *m = jn_message_new();
    assert_non_null(m);
    uint8_t chunk[1000];
    memset(chunk, 0x41, sizeof chunk);
    for (size_t done = 0; done < n; done += sizeof chunk)
        assert_int_equal(
            jn_message_append(m, chunk, n - done < sizeof chunk ? n - done : sizeof chunk), 0);
    jn_message_set_complete(m);
    return m;
}

static int wakes;
static void count_wake(void *ctx)
{
    (void)ctx;
    wakes++;
}

/* The parties in the given order: 'w' writer done, 's' set copies (2),
 * 'c' one copy ends. The buffers go with the last one. */
static void hold_in_order(const char *order)
{
    jn_rx_budget_t *b = jn_rx_budget_new(100000, 50000);
    assert_non_null(b);
    jn_message_t *m = filled(5000);
    size_t n = strlen(order);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(jn_message_buffers(m));
        if (order[i] == 'w') {
            jn_message_stream_writer_done(m, b);
            assert_int_equal(jn_rx_budget_held(b), i + 1 == n ? 0 : 5000);
        } else if (order[i] == 's') {
            jn_message_stream_set_copies(m, 2);
        } else {
            jn_message_stream_copy_end(m, jn_message_stream_copy_begin(m));
        }
    }
    assert_null(jn_message_buffers(m));
    assert_int_equal(jn_rx_budget_held(b), 0);
    assert_int_equal(jn_message_length(m), 5000);
    jn_message_unref(m);
    jn_rx_budget_unref(b);
}

static void test_content_goes_with_the_last_party_in_any_order(void **state)
{
    (void)state;
    const char *orders[] = {"wscc", "sccw", "cswc", "ccsw", "wccs", "cwcs"};
    for (size_t i = 0; i < sizeof orders / sizeof *orders; i++)
        hold_in_order(orders[i]);
}

static void test_open_set_of_copies_keeps_content_and_free_gives_back(void **state)
{
    (void)state;
    jn_rx_budget_t *b = jn_rx_budget_new(100000, 50000);
    jn_message_t *m = filled(3000);
    jn_message_stream_writer_done(m, b);
    /* copies end, but the set is not final (a copy waits or is re-routed) */
    for (int i = 0; i < 5; i++)
        jn_message_stream_copy_end(m, jn_message_stream_copy_begin(m));
    assert_non_null(jn_message_buffers(m));
    assert_int_equal(jn_rx_budget_held(b), 3000);
    jn_message_unref(m); /* freed: the charge comes back */
    assert_int_equal(jn_rx_budget_held(b), 0);
    jn_rx_budget_unref(b);
}

static void test_budget_stops_above_high_and_wakes_below_low(void **state)
{
    (void)state;
    jn_rx_budget_t *b = jn_rx_budget_new(10000, 5000);
    jn_rx_budget_set_waker(b, count_wake, NULL);
    wakes = 0;
    jn_message_t *m[4];
    for (int i = 0; i < 4; i++) {
        m[i] = filled(4000);
        jn_message_stream_writer_done(m[i], b);
        jn_message_stream_set_copies(m[i], 1);
    }
    assert_int_equal(jn_rx_budget_held(b), 16000);
    assert_true(jn_rx_budget_stop(b));
    assert_true(jn_rx_budget_waiting(b));
    jn_message_stream_copy_end(m[0], -1); /* 12000: above high */
    jn_message_stream_copy_end(m[1], -1); /* 8000: above low */
    assert_int_equal(wakes, 0);
    assert_true(jn_rx_budget_waiting(b));
    jn_message_stream_copy_end(m[2], -1); /* 4000: below low */
    assert_int_equal(wakes, 1);
    assert_false(jn_rx_budget_waiting(b));
    jn_message_stream_copy_end(m[3], -1);
    assert_int_equal(wakes, 1); /* once per stop */
    assert_false(jn_rx_budget_stop(b));
    assert_false(jn_rx_budget_stop(NULL));
    jn_rx_budget_set_waker(b, NULL, NULL);
    for (int i = 0; i < 4; i++)
        jn_message_unref(m[i]);
    jn_rx_budget_unref(b);
}

static void *end_copy(void *arg)
{
    jn_message_t *m = arg;
    jn_message_stream_copy_end(m, jn_message_stream_copy_begin(m));
    jn_message_unref(m);
    jn_pool_thread_exit();
    return NULL;
}

static void test_copies_end_on_other_threads(void **state)
{
    (void)state;
    jn_rx_budget_t *b = jn_rx_budget_new(1u << 20, 1u << 19);
    for (int round = 0; round < 200; round++) {
        jn_message_t *m = filled(2000);
        jn_message_stream_set_copies(m, 2);
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_create(&t[i], NULL, end_copy, jn_message_ref(m)), 0);
        jn_message_stream_writer_done(m, b);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        assert_null(jn_message_buffers(m));
        jn_message_unref(m);
    }
    assert_int_equal(jn_rx_budget_held(b), 0);
    jn_rx_budget_unref(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_content_goes_with_the_last_party_in_any_order),
        cmocka_unit_test(test_open_set_of_copies_keeps_content_and_free_gives_back),
        cmocka_unit_test(test_budget_stops_above_high_and_wakes_below_low),
        cmocka_unit_test(test_copies_end_on_other_threads),
    };
    return finish_tests(cmocka_run_group_tests(tests, NULL, NULL));
}
