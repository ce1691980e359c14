/*
 * test_core_credit.c — credit in both directions: the credit the router
 * grants senders (only while their address has a consumer, kept but not
 * renewed when the last goes, up to the link's capacity, returned as
 * deliveries are handed out, one LINK_CREDIT per link per batch and only
 * once the sender holds half its capacity or less), and the
 * credit consumers give the router (deliveries handed out only within it,
 * drain), and the bound on a consumer's unsettled deliveries (twice its
 * link's capacity: past it, nothing more is handed out until it settles).
 */
#include "test_core_util.h"

static void expect_credit_at(fake_conn_t *fc, jn_core_link_t *link, uint32_t credit,
                             const char *file, int line)
{
    jn_work_t *w = expect_work_at(fc, JN_WORK_LINK_CREDIT, file, line);
    assert_ptr_equal(w->link, link);
    if (w->credit != credit || w->drain)
        fail_msg("%s:%d: credit %u drain %d, expected %u", file, line, w->credit, w->drain, credit);
    jn_work_free(w);
}
#define expect_credit(fc, link, credit) expect_credit_at((fc), (link), (credit), __FILE__, __LINE__)

static void test_credit_appears_only_once_a_consumer_attaches_and_goes_with_the_last(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    jn_core_link_t *in = attach_producer(p, "q", 10);
    expect_no_work(p);

    jn_core_link_t *c1 = attach_consumer(c, "q", 0);
    expect_credit(p, in, 10);
    jn_core_link_t *c2 = attach_consumer(c, "q", 0);
    expect_no_work(p); /* a second consumer adds no credit */
    detach(c, c1);
    expect_no_work(p);
    detach(c, c2);
    /* the last consumer went: the sender keeps its credit (1.19), no more */
    expect_no_work(p);

    /* what it sends with it is released at once; that delivery's credit
     * comes back and the sender is asked to drain (as 1.19), once */
    jn_delivery_t *d = send_msg(p, in, false);
    expect_update(p, d, JN_DISP_RELEASED, true);
    expect_credit(p, in, 1);
    jn_work_t *w = expect_work(p, JN_WORK_LINK_CREDIT);
    assert_ptr_equal(w->link, in);
    assert_true(w->drain);
    assert_int_equal(w->credit, 0); /* the drain flag, not credit 0 */
    jn_work_free(w);
    expect_no_work(p);
    for (int i = 0; i < 5; i++) { /* a sender that does not honour it */
        d = send_msg(p, in, false);
        expect_update(p, d, JN_DISP_RELEASED, true);
    }
    expect_no_work(p);

    /* a consumer again: the drained credit is the capacity again */
    attach_consumer(c, "q", 0);
    expect_credit(p, in, 10);
    expect_no_work(p);
}

static void test_other_addresses_consumers_give_no_credit(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    attach_producer(p, "q", 10);
    attach_consumer(c, "other", 10);
    attach_consumer(c, "q.sub", 10);
    expect_no_work(p);
}

static void test_anonymous_sender_gets_capacity_credit_at_once(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    jn_core_link_t *in = attach_producer(p, NULL, 7);
    expect_credit(p, in, 7);
    /* capacity 0: the connection's linkCapacity */
    fake_conn_t *p2 = open_conn_opts("producer2", true, 33);
    jn_core_link_t *in2 = attach_producer(p2, NULL, 0);
    expect_credit(p2, in2, 33);
    expect_no_work(p);
    expect_no_work(p2);
}

static void test_credit_returns_as_deliveries_are_handed_to_consumers(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    /* capacity 2: credit goes back once the sender holds half or less */
    jn_core_link_t *in = attach_producer(p, "q", 2);
    jn_core_link_t *out = attach_consumer(c, "q", 1);
    expect_credit(p, in, 2);
    for (int i = 0; i < 2; i++)
        send_msg(p, in, false);
    expect_send(c);
    uint64_t sum;
    /* one handed out: one credit back; one waits for the consumer's credit */
    assert_int_equal(count_work(p, JN_WORK_LINK_CREDIT, &sum), 1);
    assert_int_equal(sum, 1);
    expect_no_work(c);
    jn_core_link_flow_IO(out, 2, false);
    expect_send(c);
    assert_int_equal(count_work(p, JN_WORK_LINK_CREDIT, &sum), 1);
    assert_int_equal(sum, 1);
}

static void test_credit_returns_in_batches_of_half_the_capacity(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    jn_core_link_t *in = attach_producer(p, "q", 10);
    attach_consumer(c, "q", 100);
    expect_credit(p, in, 10);
    /* one at a time, as a ping-pong sends: no flow while the sender holds
     * more than half its credit, then all that is due in one */
    for (int i = 0; i < 4; i++) {
        send_msg(p, in, true);
        expect_send(c);
        expect_no_work(p);
    }
    send_msg(p, in, true);
    expect_send(c);
    expect_credit(p, in, 5);
    expect_no_work(p);
    /* a sender whose deliveries wait (no consumer credit) still gets what
     * is due once it holds half or less */
    fake_conn_t *p2 = open_conn("producer2");
    jn_core_link_t *in2 = attach_producer(p2, "q2", 4);
    jn_core_link_t *out2 = attach_consumer(c, "q2", 1);
    expect_credit(p2, in2, 4);
    send_msg(p2, in2, false); /* handed out: 3 left, more than half */
    expect_send(c);
    expect_no_work(p2);
    send_msg(p2, in2, false); /* waits; 2 left: half, so 1 is due */
    expect_credit(p2, in2, 1);
    expect_no_work(p2);
    jn_core_link_flow_IO(out2, 2, false);
    expect_send(c);
    expect_no_work(p2); /* it holds 3 of 4 again */
    expect_no_work(c);
}

static void test_credit_replenishment_is_batched(void **state)
{
    (void)state;
    enum { N = 50 };
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    jn_core_link_t *in = attach_producer(p, "q", 100);
    attach_consumer(c, "q", 1000);
    expect_credit(p, in, 100);
    expect_no_work(c);

    /* Hold the core inside its wake of the consumer (the first delivery's
     * SEND) while the other deliveries are posted: it then finds them all
     * in its next batch. */
    gate_close(c);
    send_msg(p, in, true);
    gate_wait_blocked(c);
    for (int i = 1; i < N; i++)
        send_msg(p, in, true);
    gate_open(c);
    /* Take the SENDs before anything else is posted: a post racing with the
     * core's drain could cut that batch short (a node being linked is not
     * visible yet), which is allowed but would make the count vary. */
    for (int i = 0; i < N; i++)
        expect_send(c);

    uint64_t sum;
    unsigned items = count_work(p, JN_WORK_LINK_CREDIT, &sum);
    assert_int_equal(sum, N);   /* every delivery's credit came back */
    assert_int_equal(items, 1); /* in one item once half was used, not one per delivery */
}

static void test_deliveries_are_handed_out_only_within_the_consumers_credit(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    jn_core_link_t *in = attach_producer(p, "q", 10);
    jn_core_link_t *out = attach_consumer(c, "q", 2);
    jn_delivery_t *d[4];
    for (int i = 0; i < 4; i++)
        d[i] = send_msg(p, in, true);
    jn_delivery_t *s0 = expect_send(c);
    jn_delivery_t *s1 = expect_send(c);
    expect_no_work(c);
    assert_ptr_equal(jn_delivery_message(s0), jn_delivery_message(d[0]));
    assert_ptr_equal(jn_delivery_message(s1), jn_delivery_message(d[1]));
    jn_core_link_flow_IO(out, 3, false); /* one more */
    jn_delivery_t *s2 = expect_send(c);
    assert_ptr_equal(jn_delivery_message(s2), jn_delivery_message(d[2]));
    expect_no_work(c);
    jn_core_link_flow_IO(out, 10, false);
    jn_delivery_t *s3 = expect_send(c);
    assert_ptr_equal(jn_delivery_message(s3), jn_delivery_message(d[3]));
    expect_no_work(c);
    /* copies get fresh 8-octet tags */
    size_t len;
    jn_delivery_tag(s3, &len);
    assert_int_equal(len, 8);
}

static void test_consumer_at_its_unsettled_bound_gets_more_only_as_it_settles(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    jn_core_link_t *in = attach_producer(p, "q", 20);
    /* capacity 3, so a bound of 6, credit 20: the bound, not the credit,
     * stops it */
    jn_core_link_t *out = attach_full(c, JN_LINK_OUTGOING, "q", false, 3, NULL);
    jn_core_link_flow_IO(out, 20, false);
    jn_delivery_t *d[9];
    for (int i = 0; i < 9; i++)
        d[i] = send_msg(p, in, false);
    jn_delivery_t *s[9];
    for (int i = 0; i < 6; i++)
        s[i] = expect_send(c);
    expect_no_work(c);
    consumer_settles(s[0], JN_DISP_ACCEPTED);
    s[6] = expect_send(c); /* one settled: one more */
    expect_no_work(c);
    consumer_settles(s[1], JN_DISP_ACCEPTED);
    consumer_settles(s[2], JN_DISP_ACCEPTED);
    s[7] = expect_send(c);
    s[8] = expect_send(c);
    expect_no_work(c);
    for (int i = 0; i < 9; i++)
        assert_ptr_equal(jn_delivery_message(s[i]), jn_delivery_message(d[i]));
    for (int i = 3; i < 9; i++)
        consumer_settles(s[i], JN_DISP_ACCEPTED);
    core_sync();
}

static void test_latest_flow_wins(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    jn_core_link_t *in = attach_producer(p, "q", 10);
    jn_core_link_t *out = attach_consumer(c, "q", 0);
    for (int i = 0; i < 5; i++)
        send_msg(p, in, true);
    expect_no_work(c);
    jn_core_link_flow_IO(out, 1, false);
    jn_core_link_flow_IO(out, 2, false);
    jn_core_link_flow_IO(out, 3, false);
    assert_int_equal(count_work(c, JN_WORK_DELIVERY_SEND, NULL), 3);
}

static void test_drain_with_nothing_waiting_answers_drained(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    jn_core_link_t *in = attach_producer(p, "q", 10);
    jn_core_link_t *out = attach_consumer(c, "q", 0);
    jn_core_link_flow_IO(out, 5, true);
    jn_work_t *w = expect_work(c, JN_WORK_LINK_DRAINED);
    assert_ptr_equal(w->link, out);
    jn_work_free(w);
    expect_no_work(c);
    /* the drained credit is used up: nothing goes until more comes */
    send_msg(p, in, true);
    expect_no_work(c);
    jn_core_link_flow_IO(out, 6, false);
    expect_send(c);
    expect_no_work(c);
}

static void test_drain_sends_what_waits_then_drained(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    jn_core_link_t *in = attach_producer(p, "q", 10);
    jn_core_link_t *out = attach_consumer(c, "q", 0);
    send_msg(p, in, true);
    send_msg(p, in, true);
    core_sync();
    jn_core_link_flow_IO(out, 5, true);
    expect_send(c);
    expect_send(c);
    expect_and_free(c, JN_WORK_LINK_DRAINED);
    expect_no_work(c);
}

static void test_drain_with_credit_used_up_sends_no_drained(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    jn_core_link_t *in = attach_producer(p, "q", 10);
    jn_core_link_t *out = attach_consumer(c, "q", 0);
    for (int i = 0; i < 3; i++)
        send_msg(p, in, true);
    core_sync();
    jn_core_link_flow_IO(out, 2, true);
    expect_send(c);
    expect_send(c);
    expect_no_work(c); /* no credit left to drain; the third still waits */
    jn_core_link_flow_IO(out, 3, false);
    expect_send(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_credit_appears_only_once_a_consumer_attaches_and_goes_with_the_last,
            setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_other_addresses_consumers_give_no_credit,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_anonymous_sender_gets_capacity_credit_at_once,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_credit_returns_as_deliveries_are_handed_to_consumers,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_credit_returns_in_batches_of_half_the_capacity,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_credit_replenishment_is_batched, setup_balanced,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(
            test_deliveries_are_handed_out_only_within_the_consumers_credit, setup_balanced,
            teardown_core),
        cmocka_unit_test_setup_teardown(
            test_consumer_at_its_unsettled_bound_gets_more_only_as_it_settles, setup_balanced,
            teardown_core),
        cmocka_unit_test_setup_teardown(test_latest_flow_wins, setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_drain_with_nothing_waiting_answers_drained,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_drain_sends_what_waits_then_drained, setup_balanced,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(test_drain_with_credit_used_up_sends_no_drained,
                                        setup_balanced, teardown_core),
    };
    return RUN_CORE_TESTS(tests);
}
