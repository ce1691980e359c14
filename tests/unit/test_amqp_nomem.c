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

/* a (max frame 65536) opens to b, begins a session and attaches a sender
 * that b grants credit to. Returns a's link. */
static jn_amqp_link_t *sender_pair(peer_t *a, peer_t *b)
{
    peer_init(a, "client", 65536, 255, 0);
    peer_init(b, "server", 65536, 255, 0);
    assert_int_equal(jn_amqp_conn_open(a->c), 0);
    jn_amqp_session_t *s = jn_amqp_session_new(a->c);
    assert_int_equal(jn_amqp_session_begin(s, 0, 100, 100), 0);
    jn_amqp_link_t *l = jn_amqp_link_new(s, "out", JN_AMQP_SENDER);
    assert_int_equal(jn_amqp_link_attach(l, &(jn_amqp_attach_t){0}, 0xFFFFFFFFu), 0);
    pump(a, b);
    assert_non_null(b->last_link);
    assert_int_equal(jn_amqp_link_flow(b->last_link, 10, false, false), 0);
    pump(a, b);
    return l;
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
    static const size_t lens[3] = {7, 82, 153};
    uint8_t msg[242];
    for (size_t k = 0; k < sizeof msg; k++)
        msg[k] = (uint8_t)(k * 3 + 2);
    peer_t a, b;
    jn_amqp_link_t *l = sender_pair(&a, &b);
    jn_buffer_list_t lists[3];
    jn_amqp_run_t runs[3];
    size_t at = 0;
    for (size_t k = 0; k < 3; k++) {
        jn_buffer_list_init(&lists[k]);
        assert_int_equal(jn_buffer_list_append_split(&lists[k], msg + at, lens[k], 512), 0);
        jn_buffer_t *bf = lists[k].head;
        runs[k] = (jn_amqp_run_t){.data = bf->data, .len = lens[k], .buf = jn_buffer_ref(bf)};
        at += lens[k];
    }
    jn_amqp_delivery_t *d;
    assert_int_equal(jn_amqp_delivery_new(l, "m", 1, 0, false, &d), 0);
    size_t taken = 0;
    fail_callocs = 1; /* the unsettled table's first slots */
    assert_int_equal(jn_amqp_delivery_send_runs(d, runs, 3, false, true, &taken), JN_ENOMEM);
    fail_callocs = 0;
    assert_int_equal(taken, sizeof msg); /* every run given: none is the caller's */
    assert_int_equal(atomic_load(&lists[0].head->refcount), 1);
    assert_int_equal(atomic_load(&lists[1].head->refcount), 1);
    assert_int_equal(atomic_load(&lists[2].head->refcount), 2); /* the output's */
    pump(&a, &b);
    assert_int_equal(b.transfers, 1);
    assert_int_equal(b.npayload, sizeof msg);
    assert_memory_equal(b.payload, msg, sizeof msg);
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(atomic_load(&lists[k].head->refcount), 1);
        jn_buffer_list_free(&lists[k]);
    }
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
