/*
 * test_core_settle.c — settlement and delivery state: consumers' outcomes
 * travelling back to senders, pre-settled forwarding, senders settling
 * first, consumers going away with deliveries (re-routed or released, never
 * lost), streaming continuations, and the statistics they feed.
 */
#include "test_core_util.h"

static int setup_multicast(void **state)
{
    (void)state;
    core_up(JN_DIST_MULTICAST, NULL);
    return 0;
}

/* A producer and a consumer on "q", the producer's credit taken. */
typedef struct pair {
    fake_conn_t *p, *c;
    jn_core_link_t *in, *out;
} pair_t;

static pair_t make_pair(uint64_t consumer_credit)
{
    pair_t x;
    x.p = open_conn("producer");
    x.c = open_conn("consumer");
    x.out = attach_consumer(x.c, "q", consumer_credit);
    x.in = attach_producer(x.p, "q", 100);
    expect_and_free(x.p, JN_WORK_LINK_CREDIT);
    return x;
}

/* Take the next DELIVERY_UPDATE of fc for dlv (credit items before it are
 * skipped) and return it; the caller frees it. */
static jn_work_t *next_update_for(fake_conn_t *fc, jn_delivery_t *dlv)
{
    for (;;) {
        jn_work_t *w = next_work(fc);
        if (!w)
            fail_msg("%s: no update", fc->name);
        if (w->type == JN_WORK_LINK_CREDIT) {
            jn_work_free(w);
            continue;
        }
        assert_int_equal(w->type, JN_WORK_DELIVERY_UPDATE);
        assert_ptr_equal(w->dlv, dlv);
        return w;
    }
}

static void test_accepted_outcome_travels_back_to_the_sender(void **state)
{
    (void)state;
    pair_t x = make_pair(10);
    jn_delivery_t *d = send_msg(x.p, x.in, false);
    jn_delivery_t *copy = expect_send(x.c);
    assert_false(jn_delivery_presettled(copy));
    assert_int_equal(count_work(x.p, JN_WORK_DELIVERY_UPDATE, NULL), 0);
    consumer_settles(copy, JN_DISP_ACCEPTED);
    jn_work_t *w = next_update_for(x.p, d);
    assert_int_equal(w->disp.type, JN_DISP_ACCEPTED);
    assert_true(w->settled);
    jn_work_free(w);
}

static void test_rejected_outcome_carries_condition_and_description(void **state)
{
    (void)state;
    pair_t x = make_pair(10);
    jn_delivery_t *d = send_msg(x.p, x.in, false);
    jn_delivery_t *copy = expect_send(x.c);
    char cond[] = "amqp:precondition-failed", desc[] = "order 42 is closed";
    jn_disposition_t r = {.type = JN_DISP_REJECTED, .condition = cond, .description = desc};
    jn_core_delivery_update_IO(copy, &r, true);
    jn_work_t *w = next_update_for(x.p, d);
    assert_int_equal(w->disp.type, JN_DISP_REJECTED);
    assert_string_equal(w->disp.condition, "amqp:precondition-failed");
    assert_string_equal(w->disp.description, "order 42 is closed");
    assert_true(w->settled);
    jn_work_free(w);
}

static void test_modified_outcome_carries_its_flags(void **state)
{
    (void)state;
    pair_t x = make_pair(10);
    jn_delivery_t *d = send_msg(x.p, x.in, false);
    jn_delivery_t *copy = expect_send(x.c);
    jn_disposition_t m = {
        .type = JN_DISP_MODIFIED, .delivery_failed = true, .undeliverable_here = true};
    jn_core_delivery_update_IO(copy, &m, true);
    jn_work_t *w = next_update_for(x.p, d);
    assert_int_equal(w->disp.type, JN_DISP_MODIFIED);
    assert_true(w->disp.delivery_failed);
    assert_true(w->disp.undeliverable_here);
    jn_work_free(w);
    /* and the other combination */
    d = send_msg(x.p, x.in, false);
    copy = expect_send(x.c);
    m.delivery_failed = true;
    m.undeliverable_here = false;
    jn_core_delivery_update_IO(copy, &m, true);
    w = next_update_for(x.p, d);
    assert_true(w->disp.delivery_failed);
    assert_false(w->disp.undeliverable_here);
    jn_work_free(w);
}

static void test_released_by_the_consumer_travels_back(void **state)
{
    (void)state;
    pair_t x = make_pair(10);
    jn_delivery_t *d = send_msg(x.p, x.in, false);
    consumer_settles(expect_send(x.c), JN_DISP_RELEASED);
    jn_work_t *w = next_update_for(x.p, d);
    assert_int_equal(w->disp.type, JN_DISP_RELEASED);
    assert_true(w->settled);
    jn_work_free(w);
}

static void test_outcome_and_settlement_may_arrive_apart(void **state)
{
    (void)state;
    pair_t x = make_pair(10);
    jn_delivery_t *d = send_msg(x.p, x.in, false);
    jn_delivery_t *copy = expect_send(x.c);
    jn_disposition_t a = {.type = JN_DISP_ACCEPTED};
    jn_core_delivery_update_IO(copy, &a, false);
    jn_work_t *w = next_update_for(x.p, d);
    assert_int_equal(w->disp.type, JN_DISP_ACCEPTED);
    assert_false(w->settled);
    jn_work_free(w);
    jn_disposition_t none = {.type = JN_DISP_NONE};
    jn_core_delivery_update_IO(copy, &none, true);
    w = next_update_for(x.p, d);
    assert_int_equal(w->disp.type, JN_DISP_NONE);
    assert_true(w->settled);
    jn_work_free(w);
    /* settled: a late disposition goes nowhere */
    consumer_settles(copy, JN_DISP_REJECTED);
    assert_int_equal(count_work(x.p, JN_WORK_DELIVERY_UPDATE, NULL), 0);
}

/* A delivery's work item and its disposition update are its own the
 * first time (delivery.h); a second one while the first is still out comes
 * from a pool and neither spoils the other. Here the core is held inside
 * the first update (its wake of the producer's connection) while the
 * consumer's second update is posted, and the first UPDATE work item is
 * still queued when the core makes the second. */
static void test_a_second_update_while_the_first_is_out_is_kept_apart(void **state)
{
    (void)state;
    pair_t x = make_pair(10);
    jn_delivery_t *d = send_msg(x.p, x.in, false);
    jn_delivery_t *copy = expect_send(x.c);
    core_sync();
    discard_work(x.p); /* credit coming back: other tests look at it */
    gate_close(x.p);
    jn_disposition_t a = {.type = JN_DISP_ACCEPTED};
    jn_core_delivery_update_IO(copy, &a, false);
    gate_wait_blocked(x.p); /* the first update's action is still the core's */
    jn_disposition_t none = {.type = JN_DISP_NONE};
    jn_core_delivery_update_IO(copy, &none, true);
    gate_open(x.p);
    jn_work_t *w1 = next_update_for(x.p, d);
    jn_work_t *w2 = next_update_for(x.p, d);
    assert_ptr_not_equal(w1, w2);
    assert_int_equal(w1->disp.type, JN_DISP_ACCEPTED);
    assert_false(w1->settled);
    assert_int_equal(w2->disp.type, JN_DISP_NONE);
    assert_true(w2->settled);
    jn_work_free(w2);
    jn_work_free(w1);
    /* both given back: the next delivery's outcome travels as before */
    d = send_msg(x.p, x.in, false);
    consumer_settles(expect_send(x.c), JN_DISP_ACCEPTED);
    expect_update(x.p, d, JN_DISP_ACCEPTED, true);
}

static void test_presettled_deliveries_are_forwarded_presettled(void **state)
{
    (void)state;
    pair_t x = make_pair(10);
    send_msg(x.p, x.in, true);
    jn_delivery_t *copy = expect_send(x.c);
    assert_true(jn_delivery_presettled(copy));
    consumer_settles(copy, JN_DISP_ACCEPTED); /* a confused peer: ignored */
    assert_int_equal(count_work(x.p, JN_WORK_DELIVERY_UPDATE, NULL), 0);
}

static void test_sender_settling_first_settles_the_copies(void **state)
{
    (void)state;
    pair_t x = make_pair(1);
    jn_delivery_t *d1 = send_msg(x.p, x.in, false);
    jn_delivery_t *d2 = send_msg(x.p, x.in, false); /* waits for credit */
    jn_delivery_t *c1 = expect_send(x.c);
    expect_no_work(x.c);
    jn_core_delivery_update_IO(d1, NULL, true);
    expect_update(x.c, c1, JN_DISP_NONE, true);
    /* the consumer's outcome now has nobody to go to */
    consumer_settles(c1, JN_DISP_ACCEPTED);
    assert_int_equal(count_work(x.p, JN_WORK_DELIVERY_UPDATE, NULL), 0);
    /* settled while waiting: sent, then settled at once */
    jn_core_delivery_update_IO(d2, NULL, true);
    expect_no_work(x.c);
    jn_core_link_flow_IO(x.out, 2, false);
    jn_delivery_t *c2 = expect_send(x.c);
    expect_update(x.c, c2, JN_DISP_NONE, true);
    expect_no_work(x.c);
}

/* A raw state (JN_DISP_RAW: a symbolic descriptor's, its whole encoding
 * in extra->data) with its octets in d (owned; jn_disposition_clear). */
static void raw_state(jn_disposition_t *d, const uint8_t *octets, size_t len)
{
    *d = (jn_disposition_t){.type = JN_DISP_RAW, .extra = calloc(1, sizeof *d->extra)};
    assert_non_null(d->extra);
    d->extra->data = malloc(len);
    assert_non_null(d->extra->data);
    memcpy(d->extra->data, octets, len);
    d->extra->data_len = len;
}

static void assert_raw(const jn_disposition_t *d, const uint8_t *octets, size_t len)
{
    assert_non_null(d);
    assert_true(d->type == JN_DISP_RAW);
    assert_non_null(d->extra);
    assert_int_equal(d->extra->data_len, len);
    assert_memory_equal(d->extra->data, octets, len);
}

/* A raw state crosses the core octet for octet both ways, as no outcome;
 * a sender's later state (an update of its delivery, not settled) reaches
 * a copy handed out as an update not settled, and replaces the state of a
 * copy still waiting for credit, which carries it on its first transfer. */
static void test_raw_and_later_states_reach_the_other_end(void **state)
{
    (void)state;
    static const uint8_t list_state[] = {0x00, 0xa3, 0x03, 'x', ':', 's', 0xc0, 0x02, 0x01, 0x41};
    static const uint8_t map_state[] = {0x00, 0xa3, 0x03, 'x', ':', 't', 0xc1, 0x01, 0x00};
    pair_t x = make_pair(1);
    jn_delivery_t *d1 = send_msg(x.p, x.in, false);
    jn_delivery_t *d2 = send_msg(x.p, x.in, false); /* waits for credit */
    jn_delivery_t *c1 = expect_send(x.c);
    expect_no_work(x.c);
    jn_disposition_t raw;
    /* the consumer's raw state, not settled: back to the sender as it is */
    raw_state(&raw, list_state, sizeof list_state);
    jn_core_delivery_update_IO(c1, &raw, false);
    jn_work_t *w = next_update_for(x.p, d1);
    assert_raw(&w->disp, list_state, sizeof list_state);
    assert_false(w->settled);
    jn_work_free(w);
    jn_disposition_clear(&raw);
    /* the sender's later state: to the copy handed out, not settling it */
    raw_state(&raw, map_state, sizeof map_state);
    jn_core_delivery_update_IO(d1, &raw, false);
    w = next_update_for(x.c, c1);
    assert_raw(&w->disp, map_state, sizeof map_state);
    assert_false(w->settled);
    jn_work_free(w);
    assert_raw(jn_delivery_state(d1), map_state, sizeof map_state);
    /* and to the copy still waiting: on its first transfer */
    jn_core_delivery_update_IO(d2, &raw, false);
    core_sync();
    expect_no_work(x.c);
    jn_disposition_clear(&raw);
    consumer_settles(c1, JN_DISP_ACCEPTED);
    jn_core_link_flow_IO(x.out, 2, false);
    jn_delivery_t *c2 = expect_send(x.c);
    assert_raw(jn_delivery_state(c2), map_state, sizeof map_state);
    /* a state with the sender's settlement is moot: the copy is settled */
    raw_state(&raw, list_state, sizeof list_state);
    jn_core_delivery_update_IO(d2, &raw, true);
    jn_disposition_clear(&raw);
    expect_update(x.c, c2, JN_DISP_NONE, true);
    expect_no_work(x.c);
}

static void test_consumer_detach_modifies_unsettled_and_reroutes_undelivered(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c0 = open_conn("c0");
    fake_conn_t *c1 = open_conn("c1");
    jn_core_link_t *out0 = attach_consumer(c0, "q", 0);
    jn_core_link_t *in = attach_producer(p, "q", 100);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    jn_delivery_t *d1 = send_msg(p, in, false);
    jn_delivery_t *d2 = send_msg(p, in, false);
    core_sync(); /* both wait on c0, which has no credit */
    jn_core_link_t *out1 = attach_consumer(c1, "q", 10);
    expect_no_work(c1);

    detach(c0, out0); /* undelivered: re-routed to c1 */
    jn_delivery_t *s1 = expect_send(c1);
    jn_delivery_t *s2 = expect_send(c1);
    assert_ptr_equal(jn_delivery_message(s1), jn_delivery_message(d1));
    assert_ptr_equal(jn_delivery_message(s2), jn_delivery_message(d2));
    assert_ptr_equal(jn_delivery_link(s1), out1);
    assert_int_equal(count_work(p, JN_WORK_DELIVERY_UPDATE, NULL), 0);

    /* sent and unsettled: they may have been delivered, so modified
     * (delivery-failed) to the sender, never released */
    detach(c1, out1);
    jn_work_t *w1 = next_update_for(p, d1);
    assert_int_equal(w1->disp.type, JN_DISP_MODIFIED);
    assert_true(w1->disp.delivery_failed);
    assert_true(w1->settled);
    jn_work_free(w1);
    jn_work_t *w2 = next_update_for(p, d2);
    assert_int_equal(w2->disp.type, JN_DISP_MODIFIED);
    assert_true(w2->disp.delivery_failed);
    assert_true(w2->settled);
    jn_work_free(w2);
    /* the consumer's late disposition on a lost copy goes nowhere */
    consumer_settles(s1, JN_DISP_ACCEPTED);
    assert_int_equal(count_work(p, JN_WORK_DELIVERY_UPDATE, NULL), 0);
}

static void test_consumer_detach_releases_undelivered_when_no_other_consumer(void **state)
{
    (void)state;
    pair_t x = make_pair(0);
    jn_delivery_t *d = send_msg(x.p, x.in, false);
    send_msg(x.p, x.in, true); /* a pre-settled one is just dropped */
    core_sync();
    detach(x.c, x.out);
    jn_work_t *w = next_update_for(x.p, d);
    assert_int_equal(w->disp.type, JN_DISP_RELEASED);
    assert_true(w->settled);
    jn_work_free(w);
    assert_int_equal(count_work(x.p, JN_WORK_DELIVERY_UPDATE, NULL), 0);
}

static void test_consumer_connection_close_modifies_sent_releases_unsent(void **state)
{
    (void)state;
    pair_t x = make_pair(1);
    jn_delivery_t *d1 = send_msg(x.p, x.in, false);
    jn_delivery_t *d2 = send_msg(x.p, x.in, false); /* undelivered */
    expect_send(x.c);
    core_sync();
    close_conn(x.c);
    /* d1 was sent (it may have been delivered): modified, delivery-failed;
     * d2 never went out: released */
    bool modified1 = false, released2 = false;
    for (int i = 0; i < 2; i++) {
        jn_work_t *w;
        while ((w = next_work(x.p)) != NULL && w->type == JN_WORK_LINK_CREDIT)
            jn_work_free(w);
        assert_non_null(w);
        assert_int_equal(w->type, JN_WORK_DELIVERY_UPDATE);
        assert_true(w->settled);
        if (w->dlv == d1) {
            assert_int_equal(w->disp.type, JN_DISP_MODIFIED);
            assert_true(w->disp.delivery_failed);
            modified1 = true;
        } else {
            assert_ptr_equal(w->dlv, d2);
            assert_int_equal(w->disp.type, JN_DISP_RELEASED);
            released2 = true;
        }
        jn_work_free(w);
    }
    assert_true(modified1 && released2);
    jn_core_stats_t st;
    jn_core_get_stats(h.core, &st);
    assert_int_equal(st.connections, 2); /* the producer and the sync one */
}

static void test_sender_connection_close_leaves_copies_deliverable(void **state)
{
    (void)state;
    pair_t x = make_pair(0);
    send_msg(x.p, x.in, false);
    jn_delivery_t *d2 = send_msg(x.p, x.in, false);
    core_sync();
    close_conn(x.p);
    jn_core_link_flow_IO(x.out, 1, false);
    jn_delivery_t *copy = expect_send(x.c);
    consumer_settles(copy, JN_DISP_ACCEPTED); /* nobody to tell: dropped */
    expect_no_work(x.c);
    /* the I/O layer may still settle a delivery it holds after the close */
    jn_core_delivery_update_IO(d2, NULL, true);
    jn_core_link_flow_IO(x.out, 2, false);
    jn_delivery_t *copy2 = expect_send(x.c);
    expect_update(x.c, copy2, JN_DISP_NONE, true);
    expect_no_work(x.c);
}

static void test_multicast_copy_waiting_on_a_departing_consumer_is_dropped(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c0 = open_conn("c0");
    fake_conn_t *c1 = open_conn("c1");
    attach_consumer(c0, "topic", 10);
    jn_core_link_t *slow = attach_consumer(c1, "topic", 0);
    jn_core_link_t *in = attach_producer(p, "topic", 10);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    jn_delivery_t *d = send_msg(p, in, false);
    jn_delivery_t *copy = expect_send(c0);
    core_sync();
    detach(c1, slow);
    expect_no_update(p); /* c0 has not settled its copy yet */
    jn_disposition_t acc = {.type = JN_DISP_ACCEPTED};
    jn_core_delivery_update_IO(copy, &acc, true);
    jn_work_t *w = next_update_for(p, d);
    assert_int_equal(w->disp.type, JN_DISP_ACCEPTED); /* c0 took its copy */
    jn_work_free(w);
}

static void test_multicast_copy_lost_with_its_consumer_counts_as_modified(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c0 = open_conn("c0");
    jn_core_link_t *out = attach_consumer(c0, "topic", 10);
    jn_core_link_t *in = attach_producer(p, "topic", 10);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    jn_delivery_t *d = send_msg(p, in, false);
    expect_send(c0);
    detach(c0, out); /* gone before settling: never told accepted */
    jn_work_t *w = next_update_for(p, d);
    assert_int_equal(w->disp.type, JN_DISP_MODIFIED);
    assert_true(w->disp.delivery_failed);
    assert_true(w->settled);
    jn_work_free(w);
}

static void test_streaming_continue_reaches_each_handed_copy_once_per_batch(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c[3] = {open_conn("c0"), open_conn("c1"), open_conn("c2")};
    attach_consumer(c[0], "topic", 10);
    attach_consumer(c[1], "topic", 10);
    jn_core_link_t *late = attach_consumer(c[2], "topic", 0);
    jn_core_link_t *in = attach_producer(p, "topic", 10);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    jn_delivery_t *d = send_full(p, in, NULL, NULL, true, false); /* still arriving */
    expect_send(c[0]);
    expect_send(c[1]);
    expect_no_work(c[2]);

    /* Three continues; the core is held in its wake of c0 during the
     * first, so the other two reach it as one later batch. */
    jn_message_t *m = jn_delivery_message(d);
    gate_close(c[0]);
    jn_core_delivery_continued_IO(d);
    gate_wait_blocked(c[0]);
    assert_int_equal(jn_message_append(m, "more", 4), 0);
    jn_core_delivery_continued_IO(d);
    assert_int_equal(jn_message_append(m, "more", 4), 0);
    jn_core_delivery_continued_IO(d);
    gate_open(c[0]);
    assert_int_equal(count_work(c[0], JN_WORK_DELIVERY_CONTINUE, NULL), 2);
    assert_int_equal(count_work(c[1], JN_WORK_DELIVERY_CONTINUE, NULL), 2);
    expect_no_work(c[2]); /* not handed out yet: its SEND will carry all */

    jn_core_link_flow_IO(late, 1, false);
    expect_send(c[2]);
    jn_message_set_complete(m);
    jn_core_delivery_continued_IO(d);
    for (int i = 0; i < 3; i++)
        assert_int_equal(count_work(c[i], JN_WORK_DELIVERY_CONTINUE, NULL), 1);
    /* complete: no further continues (the copies are finished) */
    jn_core_delivery_continued_IO(d);
    for (int i = 0; i < 3; i++)
        expect_no_work(c[i]);
}

static void test_statistics_count_deliveries_and_outcomes(void **state)
{
    (void)state;
    pair_t x = make_pair(10);
    static const uint64_t outcomes[] = {JN_DISP_ACCEPTED, JN_DISP_ACCEPTED, JN_DISP_REJECTED,
                                        JN_DISP_MODIFIED, JN_DISP_RELEASED};
    for (size_t i = 0; i < 5; i++) {
        send_msg(x.p, x.in, false);
        consumer_settles(expect_send(x.c), outcomes[i]);
    }
    send_msg(x.p, x.in, true);
    expect_send(x.c);
    core_sync();
    jn_core_stats_t st;
    jn_core_get_stats(h.core, &st);
    assert_int_equal(st.deliveries_ingress, 6);
    assert_int_equal(st.deliveries_egress, 6);
    assert_int_equal(st.deliveries_presettled, 1);
    assert_int_equal(st.deliveries_accepted, 2);
    assert_int_equal(st.deliveries_rejected, 1);
    assert_int_equal(st.deliveries_modified, 1);
    assert_int_equal(st.deliveries_released, 1);
    assert_int_equal(st.connections, 3);
    assert_int_equal(st.links, 2);
    assert_int_equal(st.addresses, 1);
}

#define T(name, setup) cmocka_unit_test_setup_teardown(name, setup, teardown_core)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_accepted_outcome_travels_back_to_the_sender, setup_balanced),
        T(test_rejected_outcome_carries_condition_and_description, setup_balanced),
        T(test_modified_outcome_carries_its_flags, setup_balanced),
        T(test_released_by_the_consumer_travels_back, setup_balanced),
        T(test_outcome_and_settlement_may_arrive_apart, setup_balanced),
        T(test_a_second_update_while_the_first_is_out_is_kept_apart, setup_balanced),
        T(test_presettled_deliveries_are_forwarded_presettled, setup_balanced),
        T(test_sender_settling_first_settles_the_copies, setup_balanced),
        T(test_raw_and_later_states_reach_the_other_end, setup_balanced),
        T(test_consumer_detach_modifies_unsettled_and_reroutes_undelivered, setup_balanced),
        T(test_consumer_detach_releases_undelivered_when_no_other_consumer, setup_balanced),
        T(test_consumer_connection_close_modifies_sent_releases_unsent, setup_balanced),
        T(test_sender_connection_close_leaves_copies_deliverable, setup_balanced),
        T(test_multicast_copy_waiting_on_a_departing_consumer_is_dropped, setup_multicast),
        T(test_multicast_copy_lost_with_its_consumer_counts_as_modified, setup_multicast),
        T(test_streaming_continue_reaches_each_handed_copy_once_per_batch, setup_multicast),
        T(test_statistics_count_deliveries_and_outcomes, setup_balanced),
    };
    return RUN_CORE_TESTS(tests);
}
