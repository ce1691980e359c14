/*
 * test_amqp_nomem.c — the connection engine when memory runs out after a
 * transfer frame went into the output (junction/amqp_delivery.h,
 * jn_amqp_delivery_send_runs with give). The first frame of an unsettled
 * delivery takes a slot in the session's table of unsettled deliveries;
 * when that table cannot grow, the frame is already composed, its runs
 * copied or referenced. The call then fails with JN_ENOMEM but counts the
 * frame in *taken, so a caller dropping the references of the runs not
 * taken (as router/io/io_own_link.c does) drops none twice.
 *
 * Built with -Wl,--wrap=calloc (CMakeLists.txt): __wrap_calloc fails the
 * calls it is told to, every other goes to the C library.
 */
#include "test_amqp_engine_util.h"

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

static int fail_callocs; /* the next calls to fail */

void *__wrap_calloc(size_t n, size_t size)
{
    if (fail_callocs > 0) {
        fail_callocs--;
        return NULL;
    }
    return __real_calloc(n, size);
}

/* A message as a router sends it, runs of 7, 82 and 153 octets, each with
 * a reference given: the table of unsettled deliveries cannot take the
 * delivery, the call fails, and *taken says the whole frame went out, so
 * every given reference is the engine's (the short runs' dropped at once,
 * the long one's held by the output). The peer still gets the octets; each
 * buffer is back to its list's one reference once the output is written. */
static void test_unsettled_table_out_of_memory_counts_the_frame_sent(void **state)
{
    (void)state;
    uint8_t msg[ROUTED_LEN];
    for (size_t k = 0; k < sizeof msg; k++)
        msg[k] = (uint8_t)(k * 3 + 2);
    peer_t a, b;
    jn_amqp_link_t *l = sender_pair(&a, &b, 0, 65536, 10);
    jn_buffer_list_t lists[ROUTED_RUNS];
    jn_amqp_run_t runs[ROUTED_RUNS];
    routed_runs(msg, lists, runs, NULL, true);
    jn_amqp_delivery_t *d;
    assert_int_equal(jn_amqp_delivery_new(l, "m", 1, 0, false, &d), 0);
    size_t taken = 0;
    fail_callocs = 1; /* the unsettled table's first slots */
    assert_int_equal(jn_amqp_delivery_send_runs(d, runs, ROUTED_RUNS, false, true, &taken), JN_ENOMEM);
    fail_callocs = 0;
    assert_int_equal(taken, sizeof msg); /* every run given: none is the caller's */
    assert_int_equal(atomic_load(&lists[0].head->refcount), 1);
    assert_int_equal(atomic_load(&lists[1].head->refcount), 1);
    assert_int_equal(atomic_load(&lists[2].head->refcount), 2); /* the output's */
    pump(&a, &b);
    assert_int_equal(b.transfers, 1);
    assert_int_equal(b.npayload, sizeof msg);
    assert_memory_equal(b.payload, msg, sizeof msg);
    routed_runs_free(lists);
    peer_free(&a);
    peer_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unsettled_table_out_of_memory_counts_the_frame_sent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
