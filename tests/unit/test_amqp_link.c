/*
 * test_amqp_link.c — the connection engine's links (junction/amqp_engine.h;
 * AMQP 1.0 2.6, 2.7.3, 2.7.4, 2.7.7): attach and detach both ways by
 * handle, role, termini seen as decoded views, and the flow state of
 * 2.6.7 — delivery-count across the 2^32 wrap, link-credit, drain, echo
 * and available — from both ends; and the faults: a handle in use, an
 * unattached handle (a flow or transfer on it; both close the connection,
 * as the proton path's frame screen does), a handle above handle-max, a
 * receiver's delivery-count ahead of the sender's; a sender's attach
 * without initial-delivery-count, taken as 1.19 takes it (from 0); a
 * peer's detach held for the user's answer (jn_amqp_link_hold_detach).
 */
#include "test_amqp_engine_util.h"

/* a and b open with one session (a's s). */
static jn_amqp_session_t *begun_pair(peer_t *a, peer_t *b, size_t chunk)
{
    open_pair(a, b, chunk);
    jn_amqp_session_t *s = jn_amqp_session_new(a->c);
    assert_int_equal(jn_amqp_session_begin(s, 0, 100, 100), 0);
    pump(a, b);
    return s;
}

/* a attaches a link of role to address, b answers. */
static jn_amqp_link_t *attached(peer_t *a, peer_t *b, jn_amqp_session_t *s, const char *name,
                                bool role, const char *address, uint32_t initial)
{
    jn_amqp_link_t *l = jn_amqp_link_new(s, name, role);
    assert_non_null(l);
    jn_amqp_attach_t at = {0};
    at.present = JN_AMQP_FIELD(5) | JN_AMQP_FIELD(6);
    at.source.code = JN_AMQP_SOURCE;
    at.target.code = JN_AMQP_TARGET;
    jn_amqp_terminus_t *t = role == JN_AMQP_SENDER ? &at.target : &at.source;
    t->present = JN_AMQP_FIELD(0);
    jn_iter_init_string(&t->address, address, JN_VIEW_RAW);
    assert_int_equal(jn_amqp_link_attach(l, &at, initial), 0);
    assert_int_equal(jn_amqp_link_attach(l, &at, initial), JN_EPERM);
    pump(a, b);
    return l;
}

static void test_attach_both_ways_with_termini(void **state)
{
    (void)state;
    const size_t chunks[] = {0, 1, 2, 7};
    for (size_t i = 0; i < 4; i++) {
        peer_t a, b;
        jn_amqp_session_t *s = begun_pair(&a, &b, chunks[i]);
        jn_amqp_link_t *l = attached(&a, &b, s, "to-queue", JN_AMQP_SENDER, "queue.a", 0);
        assert_int_equal(b.attaches, 1);
        assert_int_equal(b.last_role, JN_AMQP_SENDER);
        assert_string_equal(b.last_address, "queue.a");
        jn_amqp_link_t *lb = b.last_link;
        assert_int_equal(jn_amqp_link_role(lb), JN_AMQP_RECEIVER);
        assert_string_equal(jn_amqp_link_name(lb), "to-queue");
        assert_int_equal(jn_amqp_link_remote_handle(lb), 0);
        assert_int_equal(a.attaches, 1); /* b's answer, paired by name and role */
        assert_ptr_equal(a.last_link, l);
        assert_int_equal(a.last_role, JN_AMQP_RECEIVER);
        assert_int_equal(jn_amqp_link_remote_handle(l), 0);
        assert_int_equal(jn_amqp_link_handle(l), 0);
        assert_ptr_equal(jn_amqp_link_session(l), s);
        /* a second link takes the next handle; the same name in the other
         * direction is another link (2.6.1) */
        jn_amqp_link_t *l2 = attached(&a, &b, s, "to-queue", JN_AMQP_RECEIVER, "queue.b", 0);
        assert_int_equal(jn_amqp_link_handle(l2), 1);
        assert_int_equal(jn_amqp_link_remote_handle(l2), 1);
        assert_string_equal(b.last_address, "queue.b");
        jn_amqp_link_set_user(l2, &a);
        assert_ptr_equal(jn_amqp_link_user(l2), &a);
        peer_free(&a);
        peer_free(&b);
    }
}

static void test_credit_and_drain_across_the_wrap(void **state)
{
    (void)state;
    peer_t a, b;
    jn_amqp_session_t *s = begun_pair(&a, &b, 3);
    jn_amqp_link_t *snd = attached(&a, &b, s, "l", JN_AMQP_SENDER, "q", 0xFFFFFFFBu);
    jn_amqp_link_t *rcv = b.last_link;
    assert_int_equal(jn_amqp_link_state(rcv).delivery_count, 0xFFFFFFFBu);
    assert_int_equal(jn_amqp_link_flow(snd, 5, false, false), JN_EPERM); /* not a receiver */
    assert_int_equal(jn_amqp_link_flow(rcv, 10, false, false), 0);
    pump(&a, &b);
    jn_amqp_link_state_t st = jn_amqp_link_state(snd);
    assert_int_equal(st.credit, 10);
    assert_int_equal(st.delivery_count, 0xFFFFFFFBu);
    assert_false(st.drain);
    assert_int_equal(jn_amqp_link_drained(snd), 0); /* no drain asked */
    /* drain: the sender uses the credit up, delivery-count wraps to 5 */
    assert_int_equal(jn_amqp_link_flow(rcv, 10, true, false), 0);
    pump(&a, &b);
    assert_true(jn_amqp_link_state(snd).drain);
    assert_int_equal(jn_amqp_link_drained(snd), 1);
    st = jn_amqp_link_state(snd);
    assert_int_equal(st.delivery_count, 5);
    assert_int_equal(st.credit, 0);
    pump(&a, &b);
    st = jn_amqp_link_state(rcv);
    assert_int_equal(st.delivery_count, 5);
    assert_int_equal(st.credit, 0);
    assert_false(st.drain); /* done */
    /* new credit from the wrapped count */
    assert_int_equal(jn_amqp_link_flow(rcv, 3, false, false), 0);
    pump(&a, &b);
    assert_int_equal(jn_amqp_link_state(snd).credit, 3);
    peer_free(&a);
    peer_free(&b);
}

static void test_available_and_echo(void **state)
{
    (void)state;
    peer_t a, b;
    jn_amqp_session_t *s = begun_pair(&a, &b, 0);
    jn_amqp_link_t *snd = attached(&a, &b, s, "l", JN_AMQP_SENDER, "q", 0);
    jn_amqp_link_t *rcv = b.last_link;
    assert_int_equal(jn_amqp_link_available(rcv, 1), JN_EPERM); /* not a sender */
    assert_int_equal(jn_amqp_link_available(snd, 7), 0);
    pump(&a, &b);
    assert_int_equal(jn_amqp_link_state(rcv).available, 7);
    int before = a.flows;
    assert_int_equal(jn_amqp_link_flow(rcv, 2, false, true), 0); /* echo */
    pump(&a, &b);
    assert_int_equal(a.flows, before + 1);
    assert_true(a.last_flow.echo);
    assert_int_equal(a.last_flow.link_credit, 2);
    assert_int_equal(b.last_flow.available, 7); /* the sender's echo */
    assert_int_equal(b.last_flow.link_credit, 2);
    assert_false(b.last_flow.echo);
    peer_free(&a);
    peer_free(&b);
}

static void test_detach_both_ways_with_error(void **state)
{
    (void)state;
    peer_t a, b;
    jn_amqp_session_t *s = begun_pair(&a, &b, 1);
    jn_amqp_link_t *l = attached(&a, &b, s, "l", JN_AMQP_RECEIVER, "q", 0);
    assert_int_equal(jn_amqp_link_detach(l, true, "amqp:not-found", "no such node"), 0);
    assert_int_equal(jn_amqp_link_detach(l, true, NULL, NULL), JN_EPERM);
    pump(&a, &b);
    assert_int_equal(b.detaches, 1);
    assert_string_equal(b.condition, "amqp:not-found");
    assert_null(b.last_link);
    assert_int_equal(a.detaches, 1); /* b answered on its own; l is freed */
    /* the handle is free again */
    jn_amqp_link_t *l2 = attached(&a, &b, s, "l2", JN_AMQP_SENDER, "q", 0);
    assert_int_equal(jn_amqp_link_handle(l2), 0);
    assert_int_equal(a.closed + b.closed + a.ends + b.ends, 0);
    peer_free(&a);
    peer_free(&b);
}

/* jn_amqp_link_hold_detach: the peer's detach waits for the user's answer,
 * which carries the user's error and closed flag (a link router answers
 * with the far end's); a link whose detach went first is not held. */
static void test_held_detach_is_answered_by_the_user(void **state)
{
    (void)state;
    peer_t a, b;
    jn_amqp_session_t *s = begun_pair(&a, &b, 1);
    jn_amqp_link_t *l = attached(&a, &b, s, "l", JN_AMQP_RECEIVER, "q", 0);
    jn_amqp_link_t *lb = b.last_link;
    assert_true(jn_amqp_link_hold_detach(lb, true));
    assert_int_equal(jn_amqp_link_detach(l, false, "x:client", "gone"), 0);
    pump(&a, &b);
    assert_int_equal(b.detaches, 1);
    assert_string_equal(b.condition, "x:client");
    assert_int_equal(a.detaches, 0); /* held: no answer yet */
    assert_int_equal(jn_amqp_link_detach(lb, true, "x:far", "the far end's"), 0); /* frees lb */
    pump(&a, &b);
    assert_int_equal(a.detaches, 1);
    assert_string_equal(a.condition, "x:far");
    /* both handles are free again */
    jn_amqp_link_t *l2 = attached(&a, &b, s, "l2", JN_AMQP_SENDER, "q", 0);
    assert_int_equal(jn_amqp_link_handle(l2), 0);
    assert_int_equal(jn_amqp_link_handle(b.last_link), 0);
    /* our detach first: the peer's is its answer, nothing is held */
    lb = b.last_link;
    assert_int_equal(jn_amqp_link_detach(lb, true, NULL, NULL), 0);
    assert_false(jn_amqp_link_hold_detach(lb, true));
    pump(&a, &b);
    assert_int_equal(b.detaches, 2); /* a's answer; lb is freed */
    assert_int_equal(a.closed + b.closed + a.ends + b.ends, 0);
    peer_free(&a);
    peer_free(&b);
}

/* A raw peer opened and begun to x on channel 0, with a sender attached
 * on handle 4 (x's receiver). */
static void raw_attached(peer_t *x)
{
    peer_init(x, "server", 4096, 7, 0);
    raw_open(x, 4096, 7, 0);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_BEGIN);
    p.u.begin.present = JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2) | JN_AMQP_FIELD(3);
    assert_int_equal(raw_send(x, 0, &p), 0);
    jn_amqp_perf_init(&p, JN_AMQP_ATTACH);
    p.u.attach.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2) | JN_AMQP_FIELD(9);
    jn_iter_init_string(&p.u.attach.name, "raw-link", JN_VIEW_RAW);
    p.u.attach.handle = 4;
    p.u.attach.role = JN_AMQP_SENDER;
    p.u.attach.initial_delivery_count = 100;
    assert_int_equal(raw_send(x, 0, &p), 0);
    assert_int_equal(x->attaches, 1);
    assert_int_equal(jn_amqp_link_state(x->last_link).delivery_count, 100);
    (void)out_frames(x, (uint64_t[8]){0}, 8, NULL, 0);
}

/* x ended its session with condition, and the connection stays open. */
/* The connection closed with condition, as the frame screen closes the
 * proton path's (router/io/screen.c): a close frame carrying it, the
 * engine's on_closed with it, and nothing more read. */
static void expect_connection_error(peer_t *x, int rc, const char *condition)
{
    assert_int_equal(rc, JN_EPROTO);
    assert_string_equal(x->condition, condition);
    char err[64] = "";
    uint64_t codes[4];
    assert_int_equal(out_frames(x, codes, 4, err, sizeof err), 1);
    assert_int_equal(codes[0], JN_AMQP_CLOSE);
    assert_string_equal(err, condition);
    assert_int_equal(x->closed, 1);
}

static void test_attach_on_handle_in_use_closes_the_connection(void **state)
{
    (void)state;
    peer_t x;
    raw_attached(&x);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_ATTACH);
    p.u.attach.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2);
    jn_iter_init_string(&p.u.attach.name, "other", JN_VIEW_RAW);
    p.u.attach.handle = 4;
    p.u.attach.role = JN_AMQP_RECEIVER;
    expect_connection_error(&x, raw_send(&x, 0, &p), "amqp:session:handle-in-use");
    peer_free(&x);
}

static void test_flow_on_unattached_handle_closes_the_connection(void **state)
{
    (void)state;
    peer_t x;
    raw_attached(&x);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_FLOW);
    p.u.flow.present = 0xE | JN_AMQP_FIELD(4);
    p.u.flow.handle = 5;
    expect_connection_error(&x, raw_send(&x, 0, &p), "amqp:session:unattached-handle");
    peer_free(&x);
}

static void test_transfer_on_unattached_handle_closes_the_connection(void **state)
{
    (void)state;
    peer_t x;
    raw_attached(&x);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_TRANSFER);
    p.u.transfer.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2);
    p.u.transfer.handle = 7; /* never attached */
    p.u.transfer.delivery_id = 0;
    jn_iter_init_bytes(&p.u.transfer.delivery_tag, "t", 1, JN_VIEW_RAW);
    expect_connection_error(&x, raw_send(&x, 0, &p), "amqp:session:unattached-handle");
    peer_free(&x);
}

/* A sender's attach without initial-delivery-count (2.7.3 wants one; 1.19
 * and proton take it): the link is attached and counts from 0, and a
 * transfer within the credit granted arrives. */
static void test_sender_attach_without_initial_count_counts_from_zero(void **state)
{
    (void)state;
    peer_t x;
    raw_attached(&x);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_ATTACH);
    p.u.attach.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2);
    jn_iter_init_string(&p.u.attach.name, "other", JN_VIEW_RAW);
    p.u.attach.handle = 6;
    p.u.attach.role = JN_AMQP_SENDER;
    assert_int_equal(raw_send(&x, 0, &p), 0);
    assert_int_equal(x.attaches, 2);
    assert_int_equal(x.closed, 0);
    jn_amqp_link_t *l = x.last_link;
    assert_int_equal(jn_amqp_link_remote_handle(l), 6);
    assert_int_equal(jn_amqp_link_state(l).delivery_count, 0);
    assert_int_equal(jn_amqp_link_flow(l, 3, false, false), 0); /* x answered the attach */
    uint64_t codes[4];
    assert_int_equal(out_frames(&x, codes, 4, NULL, 0), 2);
    assert_int_equal(codes[0], JN_AMQP_ATTACH);
    assert_int_equal(codes[1], JN_AMQP_FLOW);
    jn_amqp_perf_init(&p, JN_AMQP_TRANSFER);
    p.u.transfer.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2);
    p.u.transfer.handle = 6;
    p.u.transfer.delivery_id = 0;
    jn_iter_init_bytes(&p.u.transfer.delivery_tag, "t", 1, JN_VIEW_RAW);
    assert_int_equal(raw_send(&x, 0, &p), 0);
    assert_int_equal(x.transfers, 1);
    assert_int_equal(x.closed, 0);
    jn_amqp_link_state_t st = jn_amqp_link_state(l);
    assert_int_equal(st.delivery_count, 1);
    assert_int_equal(st.credit, 2);
    peer_free(&x);
}

static void test_handle_above_handle_max_is_framing_error(void **state)
{
    (void)state;
    peer_t x;
    raw_attached(&x);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_ATTACH);
    p.u.attach.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2);
    jn_iter_init_string(&p.u.attach.name, "far", JN_VIEW_RAW);
    p.u.attach.handle = 70000;
    p.u.attach.role = JN_AMQP_RECEIVER;
    assert_int_equal(raw_send(&x, 0, &p), JN_EPROTO);
    assert_string_equal(x.condition, "amqp:connection:framing-error");
    peer_free(&x);
}

static void test_receiver_count_ahead_of_sender_is_invalid_field(void **state)
{
    (void)state;
    peer_t x;
    raw_attached(&x);
    /* x's own sender, answered by the raw peer as receiver on handle 0 */
    jn_amqp_link_t *l = jn_amqp_link_new(x.last_session, "out", JN_AMQP_SENDER);
    assert_int_equal(jn_amqp_link_attach(l, &(jn_amqp_attach_t){0}, 0xFFFFFFFFu), 0);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_ATTACH);
    p.u.attach.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2);
    jn_iter_init_string(&p.u.attach.name, "out", JN_VIEW_RAW);
    p.u.attach.handle = 0;
    p.u.attach.role = JN_AMQP_RECEIVER;
    assert_int_equal(raw_send(&x, 0, &p), 0);
    assert_ptr_equal(x.last_link, l);
    jn_amqp_perf_init(&p, JN_AMQP_FLOW);
    p.u.flow.present = 0xE | JN_AMQP_FIELD(4) | JN_AMQP_FIELD(5) | JN_AMQP_FIELD(6);
    p.u.flow.handle = 0;
    p.u.flow.delivery_count = 0xFFFFFFFFu; /* x's own count: fine */
    p.u.flow.link_credit = 4;
    assert_int_equal(raw_send(&x, 0, &p), 0);
    assert_int_equal(jn_amqp_link_state(l).credit, 4);
    p.u.flow.delivery_count = 1; /* two past x's count, across the wrap */
    assert_int_equal(raw_send(&x, 0, &p), JN_EPROTO);
    assert_string_equal(x.condition, "amqp:invalid-field");
    peer_free(&x);
}

static void test_peer_detach_before_our_answer_is_answered(void **state)
{
    (void)state;
    peer_t x;
    peer_init(&x, "server", 4096, 7, 0);
    x.answer = false;
    raw_open(&x, 4096, 7, 0);
    assert_int_equal(jn_amqp_conn_open(x.c), 0);
    x.answer = true; /* begin answered, attach answered by hand below */
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_BEGIN);
    p.u.begin.present = JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2) | JN_AMQP_FIELD(3);
    assert_int_equal(raw_send(&x, 0, &p), 0);
    x.answer = false;
    jn_amqp_perf_init(&p, JN_AMQP_ATTACH);
    p.u.attach.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2);
    jn_iter_init_string(&p.u.attach.name, "r", JN_VIEW_RAW);
    p.u.attach.role = JN_AMQP_RECEIVER;
    assert_int_equal(raw_send(&x, 0, &p), 0);
    (void)out_frames(&x, (uint64_t[8]){0}, 8, NULL, 0);
    jn_amqp_perf_init(&p, JN_AMQP_DETACH);
    p.u.detach.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1);
    p.u.detach.closed = true;
    assert_int_equal(raw_send(&x, 0, &p), 0);
    uint64_t codes[4];
    assert_int_equal(out_frames(&x, codes, 4, NULL, 0), 2); /* attach, then detach (2.6.5) */
    assert_int_equal(codes[0], JN_AMQP_ATTACH);
    assert_int_equal(codes[1], JN_AMQP_DETACH);
    peer_free(&x);
}

static void test_pipelined_open_begin_attach(void **state)
{
    (void)state;
    peer_t a, b;
    peer_init(&a, "client", 4096, 7, 0);
    peer_init(&b, "server", 4096, 7, 0);
    b.chunk = 3;
    /* begin before open sends the open first; all before b answers */
    jn_amqp_session_t *s = jn_amqp_session_new(a.c);
    assert_int_equal(jn_amqp_session_begin(s, 0, 10, 10), 0);
    jn_amqp_link_t *l = jn_amqp_link_new(s, "early", JN_AMQP_RECEIVER);
    assert_int_equal(jn_amqp_link_attach(l, &(jn_amqp_attach_t){0}, 0), 0);
    assert_int_equal(jn_amqp_link_flow(l, 4, false, false), 0);
    pump(&a, &b);
    assert_int_equal(b.opens, 1);
    assert_int_equal(b.begins, 1);
    assert_int_equal(b.attaches, 1);
    assert_int_equal(a.attaches, 1);
    assert_int_equal(jn_amqp_link_state(b.last_link).credit, 4);
    assert_int_equal(a.closed + b.closed + a.ends + b.ends, 0);
    peer_free(&a);
    peer_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attach_both_ways_with_termini),
        cmocka_unit_test(test_credit_and_drain_across_the_wrap),
        cmocka_unit_test(test_available_and_echo),
        cmocka_unit_test(test_detach_both_ways_with_error),
        cmocka_unit_test(test_held_detach_is_answered_by_the_user),
        cmocka_unit_test(test_attach_on_handle_in_use_closes_the_connection),
        cmocka_unit_test(test_flow_on_unattached_handle_closes_the_connection),
        cmocka_unit_test(test_transfer_on_unattached_handle_closes_the_connection),
        cmocka_unit_test(test_sender_attach_without_initial_count_counts_from_zero),
        cmocka_unit_test(test_handle_above_handle_max_is_framing_error),
        cmocka_unit_test(test_receiver_count_ahead_of_sender_is_invalid_field),
        cmocka_unit_test(test_peer_detach_before_our_answer_is_answered),
        cmocka_unit_test(test_pipelined_open_begin_attach),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
