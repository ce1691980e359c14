/*
 * test_core_mcast.c — a stuck multicast consumer (router/core/forward_mc.c,
 * docs/multicast.md): once it has taken no copy for JN_CORE_MC_STUCK_MS
 * while copies wait, its waiting copies stop holding the sender's credit,
 * copies past its backlog (its link's capacity) are dropped and counted,
 * and it gets its backlog when it grants credit again. The outcome of an
 * unsettled delivery is merged from the copies that went out (a dropped or
 * never-sent copy counts as released). An address with
 * multicastBackpressure keeps the old pacing.
 *
 * The consumers' connections have a link capacity of 4 (the backlog) and
 * the producer's link 8, so a few deliveries show every step. The tests
 * wait a little longer than JN_CORE_MC_STUCK_MS for the core to find the
 * stuck consumer.
 */
#include "test_core_util.h"

#include <unistd.h>

#define BACKLOG       4
#define STUCK_WAIT_US 1400000 /* JN_CORE_MC_STUCK_MS (1 s) plus a check interval and more */

static int setup_multicast(void **state)
{
    (void)state;
    core_up(JN_DIST_MULTICAST, NULL);
    return 0;
}

static void backpressure_config(jn_core_t *core)
{
    assert_int_equal(jn_core_add_address_config(core, "topic", false, JN_DIST_MULTICAST), 0);
    assert_int_equal(jn_core_set_address_backpressure(core, true), 0);
}

static int setup_backpressure(void **state)
{
    (void)state;
    core_up(JN_DIST_BALANCED, backpressure_config);
    return 0;
}

typedef struct fan {
    fake_conn_t *p, *fast, *stuck;
    jn_core_link_t *in, *fast_out, *stuck_out;
} fan_t;

/* A producer on "topic" (credit taken), a consumer with plenty of credit
 * (unless with_fast is false) and one with none, both with a backlog of
 * BACKLOG. */
static fan_t make_fan(bool with_fast)
{
    fan_t f = {0};
    f.p = open_conn("producer");
    if (with_fast) {
        f.fast = open_conn_opts("fast", true, BACKLOG);
        f.fast_out = attach_consumer(f.fast, "topic", 1000);
    }
    f.stuck = open_conn_opts("stuck", true, BACKLOG);
    f.stuck_out = attach_consumer(f.stuck, "topic", 0);
    f.in = attach_producer(f.p, "topic", 2 * BACKLOG);
    jn_work_t *w = expect_work(f.p, JN_WORK_LINK_CREDIT);
    assert_int_equal(w->credit, 2 * BACKLOG);
    jn_work_free(w);
    return f;
}

static uint64_t dropped(void)
{
    jn_core_stats_t st;
    jn_core_get_stats(h.core, &st);
    return st.deliveries_dropped;
}

/* The producer's next LINK_CREDIT (nothing else before it). */
static uint32_t next_credit(fake_conn_t *p)
{
    jn_work_t *w = expect_work(p, JN_WORK_LINK_CREDIT);
    uint32_t c = w->credit;
    jn_work_free(w);
    return c;
}

static void test_stuck_consumer_gives_credit_back_and_drops_past_its_backlog(void **state)
{
    (void)state;
    fan_t f = make_fan(true);
    for (int i = 0; i < BACKLOG; i++) {
        send_msg(f.p, f.in, true);
        expect_send(f.fast);
    }
    /* the stuck consumer's backlog holds every delivery: no credit yet */
    expect_no_work(f.p);
    usleep(STUCK_WAIT_US);
    /* found stuck: its waiting copies no longer hold the producer */
    assert_int_equal(next_credit(f.p), BACKLOG);
    for (int i = 0; i < 3; i++) {
        send_msg(f.p, f.in, true);
        expect_send(f.fast);
    }
    expect_no_work(f.stuck);
    assert_int_equal(dropped(), 3);
    /* it grants credit: it gets its backlog, nothing of what was dropped */
    jn_core_link_flow_IO(f.stuck_out, 100, false);
    for (int i = 0; i < BACKLOG; i++)
        expect_send(f.stuck);
    expect_no_work(f.stuck);
    /* caught up: the next delivery reaches it again */
    send_msg(f.p, f.in, true);
    expect_send(f.fast);
    expect_send(f.stuck);
    assert_int_equal(dropped(), 3);
}

static void test_consumer_that_moves_is_never_dropped(void **state)
{
    (void)state;
    fan_t f = make_fan(true);
    /* one copy a little more than every check interval: slow, not stuck */
    for (int round = 0; round < 6; round++) {
        send_msg(f.p, f.in, true);
        expect_send(f.fast);
        usleep(300000);
        jn_core_link_flow_IO(f.stuck_out, (uint64_t)round + 1, false);
        expect_send(f.stuck);
    }
    assert_int_equal(dropped(), 0);
}

static void test_backpressure_address_keeps_the_sender_waiting(void **state)
{
    (void)state;
    fan_t f = make_fan(true);
    for (int i = 0; i < BACKLOG; i++) {
        send_msg(f.p, f.in, true);
        expect_send(f.fast);
    }
    usleep(STUCK_WAIT_US);
    expect_no_work(f.p); /* still held by the stuck consumer's backlog */
    assert_int_equal(dropped(), 0);
    jn_core_link_flow_IO(f.stuck_out, 100, false);
    for (int i = 0; i < BACKLOG; i++)
        expect_send(f.stuck);
    assert_int_equal(next_credit(f.p), BACKLOG);
}

static void test_unsettled_outcome_merged_from_copies_that_went_out(void **state)
{
    (void)state;
    fan_t f = make_fan(true);
    jn_delivery_t *d[BACKLOG];
    for (int i = 0; i < BACKLOG; i++) {
        d[i] = send_msg(f.p, f.in, false);
        consumer_settles(expect_send(f.fast), JN_DISP_ACCEPTED);
    }
    expect_no_work(f.p); /* each still has a copy waiting for the stuck consumer */
    usleep(STUCK_WAIT_US);
    assert_int_equal(next_credit(f.p), BACKLOG);
    expect_no_work(f.p); /* parked copies can still go out: outcome not known */
    /* a delivery whose stuck copy is dropped: the fast consumer decides */
    jn_delivery_t *late = send_msg(f.p, f.in, false);
    consumer_settles(expect_send(f.fast), JN_DISP_ACCEPTED);
    expect_update(f.p, late, JN_DISP_ACCEPTED, true);
    assert_int_equal(dropped(), 1);
    /* the stuck consumer goes: its never-sent copies count as released */
    detach(f.stuck, f.stuck_out);
    for (int i = 0; i < BACKLOG; i++)
        expect_update(f.p, d[i], JN_DISP_ACCEPTED, true);
}

static void test_unsettled_every_copy_dropped_is_released(void **state)
{
    (void)state;
    fan_t f = make_fan(false);
    jn_delivery_t *d[BACKLOG];
    for (int i = 0; i < BACKLOG; i++)
        d[i] = send_msg(f.p, f.in, false);
    usleep(STUCK_WAIT_US);
    assert_int_equal(next_credit(f.p), BACKLOG);
    jn_delivery_t *late = send_msg(f.p, f.in, false);
    expect_update(f.p, late, JN_DISP_RELEASED, true); /* no copy went out */
    detach(f.stuck, f.stuck_out);
    for (int i = 0; i < BACKLOG; i++)
        expect_update(f.p, d[i], JN_DISP_RELEASED, true);
}

#define T(name, setup) cmocka_unit_test_setup_teardown(name, setup, teardown_core)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_stuck_consumer_gives_credit_back_and_drops_past_its_backlog, setup_multicast),
        T(test_consumer_that_moves_is_never_dropped, setup_multicast),
        T(test_backpressure_address_keeps_the_sender_waiting, setup_backpressure),
        T(test_unsettled_outcome_merged_from_copies_that_went_out, setup_multicast),
        T(test_unsettled_every_copy_dropped_is_released, setup_multicast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
