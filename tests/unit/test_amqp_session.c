/*
 * test_amqp_session.c — the connection engine's sessions
 * (junction/amqp_engine.h; AMQP 1.0 2.5, 2.7.2, 2.7.4, 2.7.8): begin and
 * end both ways, the mapping of our channels to the peer's, the session
 * windows of 2.5.6 with wrapping serial numbers (RFC 1982), session flows
 * and echo, and the faults: a frame on a channel without a session, a
 * begin on a channel in use, a begin answering no begin of ours.
 */
#include "test_amqp_engine_util.h"

static void test_serial_numbers_wrap(void **state)
{
    (void)state;
    assert_true(jn_amqp_serial_lt(0, 1));
    assert_false(jn_amqp_serial_lt(1, 0));
    assert_false(jn_amqp_serial_lt(7, 7));
    assert_true(jn_amqp_serial_lt(0xFFFFFFFFu, 0));
    assert_true(jn_amqp_serial_lt(0xFFFFFFF0u, 5));
    assert_false(jn_amqp_serial_lt(5, 0xFFFFFFF0u));
    assert_true(jn_amqp_serial_lt(0, 0x7FFFFFFFu));
    assert_false(jn_amqp_serial_lt(0, 0x80000000u)); /* undefined in RFC 1982: neither */
    assert_false(jn_amqp_serial_lt(0x80000000u, 0));
}

static void test_begin_both_ways_with_windows(void **state)
{
    (void)state;
    const size_t chunks[] = {0, 1, 3, 7};
    for (size_t i = 0; i < 4; i++) {
        peer_t a, b;
        open_pair(&a, &b, chunks[i]);
        jn_amqp_session_t *s = jn_amqp_session_new(a.c);
        assert_non_null(s);
        assert_int_equal(jn_amqp_session_remote_channel(s), -1);
        assert_int_equal(jn_amqp_session_begin(s, 0xFFFFFFFEu, 1000, 50), 0);
        assert_int_equal(jn_amqp_session_begin(s, 0, 0, 0), JN_EPERM);
        pump(&a, &b);
        assert_int_equal(b.begins, 1);
        assert_int_equal(a.begins, 1); /* b's answer */
        assert_int_equal(jn_amqp_session_remote_channel(s), 0);
        jn_amqp_window_t w = jn_amqp_session_window(s);
        assert_int_equal(w.next_outgoing_id, 0xFFFFFFFEu);
        assert_int_equal(w.incoming_window, 1000);
        assert_int_equal(w.outgoing_window, 50);
        assert_int_equal(w.next_incoming_id, 0); /* b's next-outgoing-id */
        assert_int_equal(w.remote_incoming_window, 100);
        assert_int_equal(w.remote_outgoing_window, 100);
        jn_amqp_window_t wb = jn_amqp_session_window(b.last_session);
        assert_int_equal(wb.next_incoming_id, 0xFFFFFFFEu);
        assert_int_equal(wb.remote_incoming_window, 1000);
        assert_int_equal(wb.remote_outgoing_window, 50);
        peer_free(&a);
        peer_free(&b);
    }
}

static void test_channels_mapped_each_way(void **state)
{
    (void)state;
    peer_t a, b;
    open_pair(&a, &b, 0);
    /* b takes its channel 0 first, so a's channel 0 maps to b's 1 */
    jn_amqp_session_t *sb = jn_amqp_session_new(b.c);
    assert_int_equal(jn_amqp_session_begin(sb, 0, 10, 10), 0);
    pump(&a, &b);
    jn_amqp_session_t *sa_answer = a.last_session;
    assert_int_equal(jn_amqp_session_channel(sa_answer), 0);
    assert_int_equal(jn_amqp_session_remote_channel(sa_answer), 0);
    jn_amqp_session_t *s1 = jn_amqp_session_new(a.c);
    assert_int_equal(jn_amqp_session_channel(s1), 1);
    assert_int_equal(jn_amqp_session_begin(s1, 0, 10, 10), 0);
    pump(&a, &b);
    assert_int_equal(jn_amqp_session_remote_channel(s1), 1);
    assert_int_equal(jn_amqp_session_channel(b.last_session), 1);
    assert_int_equal(jn_amqp_session_remote_channel(b.last_session), 1);
    assert_ptr_equal(jn_amqp_session_conn(s1), a.c);
    peer_free(&a);
    peer_free(&b);
}

static void test_channel_max_bounds_our_channels(void **state)
{
    (void)state;
    peer_t a, b;
    peer_init(&a, "client", 4096, 255, 0);
    peer_init(&b, "server", 4096, 1, 0); /* b takes channels 0 and 1 */
    assert_int_equal(jn_amqp_conn_open(a.c), 0);
    pump(&a, &b);
    assert_non_null(jn_amqp_session_new(a.c));
    assert_non_null(jn_amqp_session_new(a.c));
    assert_null(jn_amqp_session_new(a.c));
    peer_free(&a);
    peer_free(&b);
}

static void test_end_both_ways_with_error(void **state)
{
    (void)state;
    peer_t a, b;
    open_pair(&a, &b, 2);
    jn_amqp_session_t *s = jn_amqp_session_new(a.c);
    assert_int_equal(jn_amqp_session_begin(s, 0, 10, 10), 0);
    pump(&a, &b);
    assert_int_equal(jn_amqp_session_end(s, "amqp:internal-error", "bye"), 0);
    assert_int_equal(jn_amqp_session_end(s, NULL, NULL), JN_EPERM);
    pump(&a, &b);
    assert_int_equal(b.ends, 1);
    assert_string_equal(b.condition, "amqp:internal-error");
    assert_null(b.last_session);
    assert_int_equal(a.ends, 1); /* b answered on its own; s is freed */
    assert_string_equal(a.condition, "");
    /* the channel is free again, and a new session takes it */
    jn_amqp_session_t *s2 = jn_amqp_session_new(a.c);
    assert_int_equal(jn_amqp_session_channel(s2), 0);
    assert_int_equal(jn_amqp_session_begin(s2, 0, 10, 10), 0);
    pump(&a, &b);
    assert_int_equal(b.begins, 2);
    assert_int_equal(a.closed + b.closed, 0);
    peer_free(&a);
    peer_free(&b);
}

/* A raw peer opened to x and begun on its channel 3 (x answers on 0). */
static void raw_begun(peer_t *x)
{
    peer_init(x, "server", 4096, 7, 0);
    raw_open(x, 4096, 7, 0);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_BEGIN);
    p.u.begin.present = JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2) | JN_AMQP_FIELD(3);
    p.u.begin.next_outgoing_id = 0xFFFFFFFFu;
    p.u.begin.incoming_window = 10;
    p.u.begin.outgoing_window = 10;
    assert_int_equal(raw_send(x, 3, &p), 0);
    assert_int_equal(x->begins, 1);
    assert_int_equal(jn_amqp_session_remote_channel(x->last_session), 3);
    (void)out_frames(x, (uint64_t[8]){0}, 8, NULL, 0);
}

static void test_flow_windows_wrap(void **state)
{
    (void)state;
    peer_t x;
    raw_begun(&x);
    jn_amqp_session_t *s = x.last_session;
    jn_amqp_window_t w = jn_amqp_session_window(s);
    assert_int_equal(w.next_incoming_id, 0xFFFFFFFFu);
    /* x's next-outgoing-id is 0 (its answering begin); the peer reports
     * next-incoming-id 0xFFFFFFFB, five before it across the wrap (five
     * transfers in flight), with a window of 20: x may send 15 more */
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_FLOW);
    p.u.flow.present = 0xF;
    p.u.flow.next_incoming_id = 0xFFFFFFFBu;
    p.u.flow.incoming_window = 20;
    p.u.flow.next_outgoing_id = 0xFFFFFFFFu;
    p.u.flow.outgoing_window = 7;
    assert_int_equal(raw_send(&x, 3, &p), 0);
    w = jn_amqp_session_window(s);
    assert_int_equal(w.remote_incoming_window, 15); /* 0xFFFFFFFB + 20 - 0 */
    assert_int_equal(w.remote_outgoing_window, 7);
    assert_int_equal(x.flows, 1);
    /* without next-incoming-id the window counts from our first id */
    p.u.flow.present = 0xE;
    p.u.flow.incoming_window = 9;
    assert_int_equal(raw_send(&x, 3, &p), 0);
    assert_int_equal(jn_amqp_session_window(s).remote_incoming_window, 9);
    peer_free(&x);
}

static void test_session_flow_echo_answered(void **state)
{
    (void)state;
    peer_t a, b;
    open_pair(&a, &b, 0);
    jn_amqp_session_t *s = jn_amqp_session_new(a.c);
    assert_int_equal(jn_amqp_session_begin(s, 5, 10, 10), 0);
    pump(&a, &b);
    assert_int_equal(jn_amqp_session_flow(s, true), 0);
    pump(&a, &b);
    assert_int_equal(b.flows, 1);
    assert_true(b.last_flow.echo);
    assert_int_equal(b.last_flow.next_outgoing_id, 5);
    assert_int_equal(a.flows, 1); /* b's answer, without echo */
    assert_false(a.last_flow.echo);
    assert_int_equal(a.last_flow.next_incoming_id, 5);
    assert_int_equal(a.last_flow.incoming_window, 100);
    peer_free(&a);
    peer_free(&b);
}

static void expect_illegal(peer_t *x, int rc)
{
    assert_int_equal(rc, JN_EPROTO);
    assert_int_equal(x->closed, 1);
    assert_string_equal(x->condition, "amqp:illegal-state");
    assert_true(jn_amqp_conn_finished(x->c));
}

static void test_frame_on_channel_without_session_is_illegal_state(void **state)
{
    (void)state;
    peer_t x;
    raw_begun(&x);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_END);
    expect_illegal(&x, raw_send(&x, 4, &p));
    peer_free(&x);
}

static void test_begin_on_channel_in_use_is_illegal_state(void **state)
{
    (void)state;
    peer_t x;
    raw_begun(&x);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_BEGIN);
    p.u.begin.present = JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2) | JN_AMQP_FIELD(3);
    expect_illegal(&x, raw_send(&x, 3, &p));
    peer_free(&x);
}

static void test_begin_answering_nothing_is_illegal_state(void **state)
{
    (void)state;
    peer_t x;
    raw_begun(&x);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_BEGIN);
    p.u.begin.present = 0xF;
    p.u.begin.remote_channel = 5; /* no begin of x's on 5 */
    expect_illegal(&x, raw_send(&x, 4, &p));
    peer_free(&x);
}

static void test_frames_after_our_end_are_dropped(void **state)
{
    (void)state;
    peer_t x;
    raw_begun(&x);
    jn_amqp_session_t *s = x.last_session;
    assert_int_equal(jn_amqp_session_end(s, NULL, NULL), 0);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_DETACH);
    p.u.detach.present = 1;
    p.u.detach.handle = 9; /* not attached: dropped, not a session error */
    assert_int_equal(raw_send(&x, 3, &p), 0);
    jn_amqp_perf_init(&p, JN_AMQP_END);
    assert_int_equal(raw_send(&x, 3, &p), 0);
    assert_int_equal(x.ends, 1);
    uint64_t codes[4];
    assert_int_equal(out_frames(&x, codes, 4, NULL, 0), 1); /* our end only */
    assert_int_equal(codes[0], JN_AMQP_END);
    assert_int_equal(x.closed, 0);
    peer_free(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serial_numbers_wrap),
        cmocka_unit_test(test_begin_both_ways_with_windows),
        cmocka_unit_test(test_channels_mapped_each_way),
        cmocka_unit_test(test_channel_max_bounds_our_channels),
        cmocka_unit_test(test_end_both_ways_with_error),
        cmocka_unit_test(test_flow_windows_wrap),
        cmocka_unit_test(test_session_flow_echo_answered),
        cmocka_unit_test(test_frame_on_channel_without_session_is_illegal_state),
        cmocka_unit_test(test_begin_on_channel_in_use_is_illegal_state),
        cmocka_unit_test(test_begin_answering_nothing_is_illegal_state),
        cmocka_unit_test(test_frames_after_our_end_are_dropped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
