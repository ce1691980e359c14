/*
 * test_core_routing.c — where deliveries go: balanced and closest anycast,
 * multicast, the anonymous relay (properties.to, to-override when honoured),
 * dynamic addresses, and release when nobody consumes.
 */
#include "core/core_private.h"

#include "test_core_util.h"

static int setup_closest(void **state)
{
    (void)state;
    core_up(JN_DIST_CLOSEST, NULL);
    return 0;
}

static int setup_multicast(void **state)
{
    (void)state;
    core_up(JN_DIST_MULTICAST, NULL);
    return 0;
}

/* Which of n consumer connections has work now (after a barrier); -1 if
 * none, -2 if more than one. The work is freed. */
static int who_got_it(fake_conn_t **c, int n)
{
    core_sync();
    int got = -1;
    for (int i = 0; i < n; i++) {
        take_all(c[i]);
        if (c[i]->head == c[i]->tail)
            continue;
        got = got == -1 ? i : -2;
        discard_work(c[i]);
    }
    return got;
}

static void test_balanced_spreads_300_deliveries_over_3_consumers(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c[3] = {open_conn("c0"), open_conn("c1"), open_conn("c2")};
    for (int i = 0; i < 3; i++)
        attach_consumer(c[i], "q", 1000);
    jn_core_link_t *in = attach_producer(p, "q", 500);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    for (int i = 0; i < 300; i++)
        send_msg(p, in, false);
    for (int i = 0; i < 3; i++)
        assert_int_equal(count_work(c[i], JN_WORK_DELIVERY_SEND, NULL), 100);
}

static void test_balanced_prefers_the_consumer_with_fewest_unsettled(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c[2] = {open_conn("c0"), open_conn("c1")};
    attach_consumer(c[0], "q", 100);
    attach_consumer(c[1], "q", 100);
    jn_core_link_t *in = attach_producer(p, "q", 100);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    for (int i = 0; i < 4; i++)
        send_msg(p, in, false);
    jn_delivery_t *a = expect_send(c[0]);
    jn_delivery_t *b = expect_send(c[0]);
    expect_send(c[1]);
    expect_send(c[1]);
    consumer_settles(a, JN_DISP_ACCEPTED);
    consumer_settles(b, JN_DISP_ACCEPTED);
    core_sync();
    /* c0: 0 unsettled, c1: 2: the next two both go to c0 */
    send_msg(p, in, false);
    assert_int_equal(who_got_it(c, 2), 0);
    send_msg(p, in, false);
    assert_int_equal(who_got_it(c, 2), 0);
    /* now 2 and 2: a tie, shared again */
    send_msg(p, in, false);
    int first = who_got_it(c, 2);
    send_msg(p, in, false);
    int second = who_got_it(c, 2);
    assert_true(first >= 0 && second >= 0 && first != second);
}

static void test_balanced_counts_undelivered_too(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c[2] = {open_conn("c0"), open_conn("c1")};
    attach_consumer(c[0], "q", 0); /* no credit: its deliveries wait */
    attach_consumer(c[1], "q", 100);
    jn_core_link_t *in = attach_producer(p, "q", 100);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    for (int i = 0; i < 6; i++)
        send_msg(p, in, true); /* pre-settled: c1's copies leave no load */
    /* c0 holds one waiting delivery; everything else goes to c1 */
    assert_int_equal(count_work(c[1], JN_WORK_DELIVERY_SEND, NULL), 5);
    expect_no_work(c[0]);
}

static void test_closest_round_robins_among_consumers(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c[3] = {open_conn("c0"), open_conn("c1"), open_conn("c2")};
    for (int i = 0; i < 3; i++)
        attach_consumer(c[i], "q", 100);
    jn_core_link_t *in = attach_producer(p, "q", 100);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    int order[9];
    for (int i = 0; i < 9; i++) {
        send_msg(p, in, false); /* unsettled: closest ignores load */
        order[i] = who_got_it(c, 3);
        assert_true(order[i] >= 0);
    }
    assert_true(order[0] != order[1] && order[1] != order[2] && order[0] != order[2]);
    for (int i = 3; i < 9; i++)
        assert_int_equal(order[i], order[i - 3]);
}

static void test_multicast_copies_to_every_consumer_and_settles_the_sender(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c[3] = {open_conn("c0"), open_conn("c1"), open_conn("c2")};
    for (int i = 0; i < 3; i++)
        attach_consumer(c[i], "topic", 10);
    jn_core_link_t *in = attach_producer(p, "topic", 10);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    jn_delivery_t *d = send_msg(p, in, false);
    jn_delivery_t *copy[3];
    for (int i = 0; i < 3; i++) {
        copy[i] = expect_send(c[i]);
        assert_false(jn_delivery_presettled(copy[i])); /* unsettled, as the sender's */
        assert_ptr_equal(jn_delivery_message(copy[i]), jn_delivery_message(d));
    }
    /* the sender is settled once every consumer settled, with the
     * strongest outcome (rejected > accepted > modified > released) */
    jn_disposition_t acc = {.type = JN_DISP_ACCEPTED}, rel = {.type = JN_DISP_RELEASED};
    jn_core_delivery_update_IO(copy[0], &rel, true);
    jn_core_delivery_update_IO(copy[1], &acc, true);
    expect_no_update(p);
    jn_core_delivery_update_IO(copy[2], &rel, true);
    expect_update(p, d, JN_DISP_ACCEPTED, true);
    for (int i = 0; i < 3; i++)
        expect_no_work(c[i]);

    /* a rejection wins; all released gives released */
    jn_delivery_t *d2 = send_msg(p, in, false);
    jn_disposition_t rej = {.type = JN_DISP_REJECTED};
    for (int i = 0; i < 3; i++)
        jn_core_delivery_update_IO(expect_send(c[i]), i == 1 ? &rej : &acc, true);
    expect_update(p, d2, JN_DISP_REJECTED, true);
    jn_delivery_t *d3 = send_msg(p, in, false);
    for (int i = 0; i < 3; i++)
        jn_core_delivery_update_IO(expect_send(c[i]), &rel, true);
    expect_update(p, d3, JN_DISP_RELEASED, true);
}

static void test_multicast_settles_the_sender_once_every_copy_is_handed_out(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c[2] = {open_conn("c0"), open_conn("c1")};
    attach_consumer(c[0], "topic", 10);
    jn_core_link_t *slow = attach_consumer(c[1], "topic", 0);
    jn_core_link_t *in = attach_producer(p, "topic", 10);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    jn_delivery_t *d = send_msg(p, in, false);
    jn_delivery_t *c0 = expect_send(c[0]);
    jn_disposition_t acc = {.type = JN_DISP_ACCEPTED};
    jn_core_delivery_update_IO(c0, &acc, true);
    expect_no_update(p); /* one copy still waits for credit */
    jn_core_link_flow_IO(slow, 1, false);
    jn_delivery_t *c1 = expect_send(c[1]);
    expect_no_update(p); /* handed out, not settled yet */
    jn_core_delivery_update_IO(c1, &acc, true);
    expect_update(p, d, JN_DISP_ACCEPTED, true);
}

static void test_multicast_presettled_sender_gets_no_update(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("c0");
    attach_consumer(c, "topic", 10);
    jn_core_link_t *in = attach_producer(p, "topic", 10);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    send_msg(p, in, true);
    expect_send(c);
    assert_int_equal(count_work(p, JN_WORK_DELIVERY_UPDATE, NULL), 0);
}

static void test_anonymous_relay_routes_by_to(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    attach_consumer(c, "q2", 10);
    jn_core_link_t *in = attach_producer(p, NULL, 10);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    jn_delivery_t *d = send_full(p, in, "q2", NULL, false, true);
    jn_delivery_t *copy = expect_send(c);
    assert_ptr_equal(jn_delivery_message(copy), jn_delivery_message(d));
    /* the address view: scheme and host are not part of the address */
    send_full(p, in, "amqp://somehost/q2", NULL, false, true);
    expect_send(c);
    expect_no_work(c);
}

static void test_anonymous_relay_releases_when_nobody_consumes(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    /* capacity 6: the 3 deliveries use half, so their credit comes back */
    jn_core_link_t *in = attach_producer(p, NULL, 6);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    jn_delivery_t *d1 = send_full(p, in, "nowhere", NULL, false, true);
    jn_delivery_t *d2 = send_full(p, in, NULL, NULL, false, true); /* no `to` at all */
    send_full(p, in, "nowhere", NULL, true, true);                 /* pre-settled: dropped */
    core_sync();
    take_all(p);
    uint64_t credit = 0;
    int released1 = 0, released2 = 0, others = 0;
    while (p->head != p->tail) {
        jn_work_t *w = p->items[p->head++ % MAX_ITEMS];
        if (w->type == JN_WORK_LINK_CREDIT)
            credit += w->credit;
        else if (w->type == JN_WORK_DELIVERY_UPDATE && w->disp.type == JN_DISP_RELEASED &&
                 w->settled)
            released1 += w->dlv == d1, released2 += w->dlv == d2;
        else
            others++;
        jn_work_free(w);
    }
    assert_int_equal(released1, 1);
    assert_int_equal(released2, 1);
    assert_int_equal(others, 0);
    assert_int_equal(credit, 3); /* the credit came back */
    jn_core_stats_t st;
    jn_core_get_stats(h.core, &st);
    /* the pre-settled one is counted dropped, not released (1.19) */
    assert_int_equal(st.deliveries_released, 2);
    assert_int_equal(st.deliveries_dropped, 1);
    assert_int_equal(st.deliveries_ingress, 3);
    assert_int_equal(st.deliveries_egress, 0);
}

static void test_anonymous_relay_uses_to_override_only_when_honoured(void **state)
{
    (void)state;
    fake_conn_t *honouring = open_conn_opts("inter-router", false, 250);
    fake_conn_t *stripping = open_conn_opts("client", true, 250);
    fake_conn_t *c[2] = {open_conn("to"), open_conn("override")};
    attach_consumer(c[0], "q1", 10);
    attach_consumer(c[1], "q2", 10);
    jn_core_link_t *in1 = attach_producer(honouring, NULL, 10);
    jn_core_link_t *in2 = attach_producer(stripping, NULL, 10);
    expect_and_free(honouring, JN_WORK_LINK_CREDIT);
    expect_and_free(stripping, JN_WORK_LINK_CREDIT);
    send_full(honouring, in1, "q1", "q2", true, true);
    assert_int_equal(who_got_it(c, 2), 1);
    send_full(stripping, in2, "q1", "q2", true, true);
    assert_int_equal(who_got_it(c, 2), 0);
}

/* An anonymous link keeps the last address it found (address.c's memo):
 * a message to another address goes where the table says, and once that
 * address is freed the memo is not used: a message to it is released, and
 * reaches the consumer of the address made again. */
static void test_anonymous_relay_memo_follows_the_address_table(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c[2] = {open_conn("a"), open_conn("b")};
    jn_core_link_t *a = attach_consumer(c[0], "m1", 10);
    attach_consumer(c[1], "m2", 10);
    jn_core_link_t *in = attach_producer(p, NULL, 10);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    const char *to[] = {"m1", "m1", "m2", "m1", "amqp://h/m2"};
    const int want[] = {0, 0, 1, 0, 1};
    for (int i = 0; i < 5; i++) {
        send_full(p, in, to[i], NULL, true, true);
        assert_int_equal(who_got_it(c, 2), want[i]);
    }
    detach(c[0], a);
    core_sync();
    jn_core_stats_t st;
    jn_core_get_stats(h.core, &st);
    assert_int_equal(st.addresses, 1); /* m1 is gone */
    /* the memo (kept for m1) is stale: read after the barrier above */
    assert_ptr_not_equal(in->ct.addr_memo.addr, NULL);
    assert_int_not_equal(in->ct.addr_memo.epoch, h.core->ct.addr_epoch);
    jn_delivery_t *d = send_full(p, in, "m1", NULL, false, true);
    core_sync();
    expect_update(p, d, JN_DISP_RELEASED, true);
    assert_int_equal(who_got_it(c, 2), -1);
    attach_consumer(c[1], "m1", 10);
    send_full(p, in, "m1", NULL, true, true);
    assert_int_equal(who_got_it(c, 2), 1);
}

static void test_dynamic_source_gets_a_router_unique_address_messages_reach(void **state)
{
    (void)state;
    fake_conn_t *c = open_conn("requester");
    fake_conn_t *p = open_conn("responder");
    char *a1 = NULL, *a2 = NULL;
    jn_core_link_t *reply = attach_full(c, JN_LINK_OUTGOING, NULL, true, 0, &a1);
    attach_full(c, JN_LINK_OUTGOING, NULL, true, 0, &a2);
    assert_non_null(a1);
    assert_non_null(a2);
    /* the form qdrouterd 1.19 gives dynamic addresses, with 22 base64url
     * characters (128 random bits) after "temp." */
    assert_true(strncmp(a1, "amqp:/_topo/0/Junction/temp.", 28) == 0);
    assert_int_equal(strlen(a1), 28 + JN_ADDR_TEMP_CHARS);
    assert_int_equal(
        strspn(a1 + 28, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
        JN_ADDR_TEMP_CHARS);
    assert_string_not_equal(a1, a2);
    jn_core_link_flow_IO(reply, 10, false);
    /* a responder sends to the reply address through the anonymous relay */
    jn_core_link_t *anon = attach_producer(p, NULL, 10);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    jn_delivery_t *d = send_full(p, anon, a1, NULL, false, true);
    jn_delivery_t *copy = expect_send(c);
    assert_ptr_equal(jn_delivery_link(copy), reply);
    assert_ptr_equal(jn_delivery_message(copy), jn_delivery_message(d));
    core_sync();
    discard_work(p); /* the anonymous link's credit coming back */
    /* or through a link whose target is that address */
    jn_core_link_t *direct = attach_producer(p, a1, 5);
    jn_work_t *w = expect_work(p, JN_WORK_LINK_CREDIT);
    assert_ptr_equal(w->link, direct);
    jn_work_free(w);
    send_msg(p, direct, true);
    copy = expect_send(c);
    assert_ptr_equal(jn_delivery_link(copy), reply);
    expect_no_work(c);
    free(a1);
    free(a2);
}

/* Affinity (jn_core_io_ops_t.colocate): a producer and a consumer that
 * exchange all their deliveries are named together once a window of
 * JN_CORE_AFFINITY_WINDOW deliveries closes, not before, and again at each
 * window while it stays so. */
static void test_colocate_names_a_producer_consumer_pair_each_window(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    attach_consumer(c, "q", 4 * JN_CORE_AFFINITY_WINDOW);
    jn_core_link_t *in = attach_producer(p, "q", 4 * JN_CORE_AFFINITY_WINDOW);
    for (unsigned i = 0; i + 1 < JN_CORE_AFFINITY_WINDOW; i++)
        send_msg(p, in, true);
    core_sync();
    assert_int_equal(colocations(), 0);
    send_msg(p, in, true);
    core_sync();
    assert_int_equal(colocations(), 1);
    assert_ptr_equal(h.coloc[0][0], p);
    assert_ptr_equal(h.coloc[0][1], c);
    for (unsigned i = 0; i < JN_CORE_AFFINITY_WINDOW; i++)
        send_msg(p, in, true);
    core_sync();
    assert_int_equal(colocations(), 2);
    discard_work(c);
    discard_work(p);
}

/* A flow of large messages, each streamed in many rounds of octets, is
 * placed by those rounds: each CONTINUE handed to the consumer counts like a
 * delivery, so the pair is named within one message here, not after a
 * window of whole messages. */
static void test_colocate_counts_the_rounds_of_a_streaming_message(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    attach_consumer(c, "q", 10);
    jn_core_link_t *in = attach_producer(p, "q", 10);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    jn_delivery_t *d = send_full(p, in, NULL, NULL, true, false); /* still arriving */
    expect_send(c);
    jn_message_t *m = jn_delivery_message(d);
    /* the SEND was one vote: WINDOW - 2 more rounds leave it one short */
    for (unsigned i = 0; i + 2 < JN_CORE_AFFINITY_WINDOW; i++) {
        assert_int_equal(jn_message_append(m, "more", 4), 0);
        jn_core_delivery_continued_IO(d);
        core_sync(); /* one batch each: one CONTINUE each */
    }
    assert_int_equal(count_work(c, JN_WORK_DELIVERY_CONTINUE, NULL), JN_CORE_AFFINITY_WINDOW - 2);
    assert_int_equal(colocations(), 0);
    jn_message_set_complete(m);
    jn_core_delivery_continued_IO(d);
    core_sync();
    assert_int_equal(colocations(), 1);
    assert_ptr_equal(h.coloc[0][0], p);
    assert_ptr_equal(h.coloc[0][1], c);
    discard_work(c);
    discard_work(p);
}

/* A window that closes with copies of a closed producer's deliveries
 * (held for want of credit) names no one: the producer's I/O connection is
 * released at its close and may be freed. */
static void test_colocate_never_names_a_closed_connection(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    jn_core_link_t *out = attach_consumer(c, "q", JN_CORE_AFFINITY_WINDOW - 10);
    jn_core_link_t *in = attach_producer(p, "q", 4 * JN_CORE_AFFINITY_WINDOW);
    for (unsigned i = 0; i < JN_CORE_AFFINITY_WINDOW; i++)
        send_msg(p, in, true);
    core_sync();
    discard_work(p);
    close_conn(p);
    core_sync();
    jn_core_link_flow_IO(out, 2 * JN_CORE_AFFINITY_WINDOW, false);
    core_sync();
    assert_int_equal(count_work(c, JN_WORK_DELIVERY_SEND, NULL), JN_CORE_AFFINITY_WINDOW);
    assert_int_equal(colocations(), 0);
}

/* A hub names no one: a producer whose deliveries are spread over two
 * consumers (balanced), or copied to both (multicast), has no connection
 * behind 3 in 4 of them, so nothing is colocated though each consumer
 * gets all its deliveries from the producer. */
static void hub_names_no_one(void)
{
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c[2] = {open_conn("c0"), open_conn("c1")};
    for (int i = 0; i < 2; i++)
        attach_consumer(c[i], "q", 4 * JN_CORE_AFFINITY_WINDOW);
    jn_core_link_t *in = attach_producer(p, "q", 4 * JN_CORE_AFFINITY_WINDOW);
    for (unsigned i = 0; i < 2 * JN_CORE_AFFINITY_WINDOW; i++) {
        send_msg(p, in, true);
        if (i % 256 == 0)
            for (int k = 0; k < 2; k++)
                discard_work(c[k]);
    }
    core_sync();
    assert_int_equal(colocations(), 0);
    for (int k = 0; k < 2; k++)
        discard_work(c[k]);
    discard_work(p);
}

static void test_colocate_not_for_a_balanced_fan_out(void **state)
{
    (void)state;
    hub_names_no_one();
}

static void test_colocate_not_for_a_multicast_fan_out(void **state)
{
    (void)state;
    hub_names_no_one();
}

static void test_receiver_without_source_is_refused(void **state)
{
    (void)state;
    fake_conn_t *c = open_conn("client");
    jn_link_info_t info = {.dir = JN_LINK_OUTGOING, .name = "r"};
    static int io;
    jn_core_link_t *l = jn_core_link_attached_IO(c->conn, &io, &info);
    jn_work_t *w = expect_work(c, JN_WORK_LINK_CLOSE);
    assert_ptr_equal(w->link, l);
    assert_non_null(w->condition);
    jn_work_free(w);
    detach(c, l);
}

static void test_addresses_come_and_go_with_their_links(void **state)
{
    (void)state;
    fake_conn_t *c = open_conn("client");
    jn_core_link_t *a = attach_consumer(c, "q", 0);
    jn_core_link_t *b = attach_producer(c, "q", 10);
    expect_and_free(c, JN_WORK_LINK_CREDIT);
    jn_core_link_t *x = attach_consumer(c, "x", 0);
    core_sync();
    jn_core_stats_t st;
    jn_core_get_stats(h.core, &st);
    assert_int_equal(st.addresses, 2);
    jn_core_link_detached_IO(a);
    expect_and_free(c, JN_WORK_LINK_RELEASED);
    core_sync();
    jn_core_get_stats(h.core, &st);
    assert_int_equal(st.addresses, 2); /* q still has its producer */
    detach(c, b);
    detach(c, x);
    core_sync();
    jn_core_get_stats(h.core, &st);
    assert_int_equal(st.addresses, 0);
}

static bool is_released(fake_conn_t *fc)
{
    pthread_mutex_lock(&h.mu);
    bool r = fc->released;
    pthread_mutex_unlock(&h.mu);
    return r;
}

static void test_stop_carries_out_the_closes_reported_before_it(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    attach_consumer(c, "q", 1);
    jn_core_link_t *in = attach_producer(p, "q", 10);
    send_msg(p, in, false); /* handed out, unsettled */
    send_msg(p, in, false); /* waiting for credit */
    send_msg(p, in, true);
    for (size_t i = 0; i < h.n_conns; i++) {
        h.conns[i].closed = true;
        jn_core_conn_closed_IO(h.conns[i].conn);
    }
    jn_core_stop(h.core); /* no wait in between */
    for (size_t i = 0; i < h.n_conns; i++)
        assert_true(is_released(&h.conns[i]));
    jn_core_stats_t st;
    jn_core_get_stats(h.core, &st);
    assert_int_equal(st.connections, 0);
    assert_int_equal(st.links, 0);
    assert_int_equal(st.addresses, 0);
    /* teardown frees the core and checks that nothing leaked */
}

static void test_free_closes_connections_never_reported_closed(void **state)
{
    (void)state;
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c = open_conn("consumer");
    attach_consumer(c, "q", 10);
    jn_core_link_t *in = attach_producer(p, "q", 10);
    send_msg(p, in, false);
    expect_send(c);
    core_sync();
    jn_log_set_enable(JN_LOG_MOD_ROUTER_CORE, "error+", NULL, 0); /* the expected warning */
    for (size_t i = 0; i < h.n_conns; i++)
        h.conns[i].closed = true; /* teardown must not report them either */
    jn_core_stop(h.core);
    assert_false(is_released(p));
    /* teardown: jn_core_free closes them (conn_released) and nothing leaks */
}

static void test_temp_name_is_base64url_of_all_128_bits(void **state)
{
    (void)state;
    uint8_t rnd[JN_ADDR_TEMP_RANDOM];
    char out[JN_ADDR_TEMP_CHARS + 1];
    memset(rnd, 0, sizeof rnd);
    jn_addr_temp_name(rnd, out);
    assert_string_equal(out, "AAAAAAAAAAAAAAAAAAAAAA");
    memset(rnd, 0xff, sizeof rnd);
    jn_addr_temp_name(rnd, out);
    /* the last character carries the last 2 bits, padded with zeros */
    assert_string_equal(out, "_____________________w");
    for (size_t i = 0; i < sizeof rnd; i++)
        rnd[i] = (uint8_t)(0xfb + i);
    jn_addr_temp_name(rnd, out); /* RFC 4648 alphabet: 62 '-', 63 '_' */
    assert_string_equal(out, "-_z9_v8AAQIDBAUGBwgJCg");
    /* every input bit reaches the text */
    memset(rnd, 0, sizeof rnd);
    char zero[JN_ADDR_TEMP_CHARS + 1];
    jn_addr_temp_name(rnd, zero);
    for (size_t bit = 0; bit < 8 * sizeof rnd; bit++) {
        memset(rnd, 0, sizeof rnd);
        rnd[bit / 8] = (uint8_t)(0x80u >> (bit % 8));
        jn_addr_temp_name(rnd, out);
        assert_string_not_equal(out, zero);
    }
}

static void test_dynamic_addresses_are_not_sequential(void **state)
{
    (void)state;
    fake_conn_t *c = open_conn("requester");
    enum { N = 64 };
    char *a[N];
    for (int i = 0; i < N; i++)
        attach_full(c, JN_LINK_OUTGOING, NULL, true, 0, &a[i]);
    /* no two share a prefix of the random part longer than chance allows
     * (8 characters, 48 bits, would be shared by a counter's names) */
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            assert_true(strncmp(a[i] + 28, a[j] + 28, 8) != 0);
    for (int i = 0; i < N; i++)
        free(a[i]);
}

/* Attach a receiver to address and expect it refused as unauthorized. */
static void expect_unauthorized(fake_conn_t *fc, const char *address)
{
    static int io;
    jn_link_info_t info = {.dir = JN_LINK_OUTGOING, .name = "thief", .address = address};
    jn_core_link_t *l = jn_core_link_attached_IO(fc->conn, &io, &info);
    assert_non_null(l);
    jn_work_t *w = expect_work(fc, JN_WORK_LINK_CLOSE);
    assert_ptr_equal(w->link, l);
    assert_string_equal(w->condition, "amqp:unauthorized-access");
    assert_non_null(w->description);
    jn_work_free(w);
    detach(fc, l);
}

static void test_receiver_by_name_on_a_dynamic_or_other_routers_address_is_refused(void **state)
{
    (void)state;
    fake_conn_t *c = open_conn("requester");
    fake_conn_t *thief = open_conn("thief");
    fake_conn_t *p = open_conn("responder");
    char *a = NULL;
    jn_core_link_t *reply = attach_full(c, JN_LINK_OUTGOING, NULL, true, 0, &a);
    jn_core_link_flow_IO(reply, 10, false);
    const char *tail = strstr(a, "temp.");
    assert_non_null(tail);
    char buf[256];
    expect_unauthorized(thief, a);
    const char *forms[] = {"%s",
                           "/_topo/0/Junction/%s",
                           "_topo/0/Junction/%s",
                           "_topo/all/Junction/%s",
                           "amqp://host/_topo/0/Junction/%s",
                           "_local/%s",
                           "amqp:/_local/%s"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        snprintf(buf, sizeof buf, forms[i], i == 0 ? a : tail);
        expect_unauthorized(thief, buf);
    }
    /* and a temp name nobody has been given yet */
    expect_unauthorized(thief, "_topo/0/Junction/temp.guess");
    /* another router's space: its traffic would come here */
    expect_unauthorized(thief, "amqp:/_topo/0/Other/temp.x");
    expect_unauthorized(thief, "_topo/0/Other/$management");
    expect_unauthorized(thief, "_topo/1/Other/x");
    expect_unauthorized(thief, "_edge/E9/temp.x");
    /* not the router's temp space: attaches as usual */
    attach_consumer(thief, "_topo/0/all/x", 0);
    attach_consumer(thief, "_local/x", 0);
    attach_consumer(thief, "_topo/0/Junction/tempest", 0);
    attach_consumer(thief, "temp.mobile", 0);
    /* a sender to the dynamic address still works from any connection */
    jn_core_link_t *direct = attach_producer(p, a, 5);
    jn_work_t *w = expect_work(p, JN_WORK_LINK_CREDIT);
    assert_ptr_equal(w->link, direct);
    jn_work_free(w);
    send_msg(p, direct, true);
    jn_delivery_t *copy = expect_send(c);
    assert_ptr_equal(jn_delivery_link(copy), reply);
    expect_no_work(thief);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_balanced_spreads_300_deliveries_over_3_consumers,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_balanced_prefers_the_consumer_with_fewest_unsettled,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_balanced_counts_undelivered_too, setup_balanced,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(test_closest_round_robins_among_consumers, setup_closest,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(
            test_multicast_copies_to_every_consumer_and_settles_the_sender, setup_multicast,
            teardown_core),
        cmocka_unit_test_setup_teardown(
            test_multicast_settles_the_sender_once_every_copy_is_handed_out, setup_multicast,
            teardown_core),
        cmocka_unit_test_setup_teardown(test_multicast_presettled_sender_gets_no_update,
                                        setup_multicast, teardown_core),
        cmocka_unit_test_setup_teardown(test_anonymous_relay_routes_by_to, setup_balanced,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(test_anonymous_relay_releases_when_nobody_consumes,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_anonymous_relay_uses_to_override_only_when_honoured,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_anonymous_relay_memo_follows_the_address_table,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(
            test_dynamic_source_gets_a_router_unique_address_messages_reach, setup_balanced,
            teardown_core),
        cmocka_unit_test(test_temp_name_is_base64url_of_all_128_bits),
        cmocka_unit_test_setup_teardown(test_dynamic_addresses_are_not_sequential, setup_balanced,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(
            test_receiver_by_name_on_a_dynamic_or_other_routers_address_is_refused, setup_balanced,
            teardown_core),
        cmocka_unit_test_setup_teardown(test_colocate_names_a_producer_consumer_pair_each_window,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_colocate_counts_the_rounds_of_a_streaming_message,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_colocate_never_names_a_closed_connection,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_colocate_not_for_a_balanced_fan_out, setup_balanced,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(test_colocate_not_for_a_multicast_fan_out, setup_multicast,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(test_receiver_without_source_is_refused, setup_balanced,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(test_addresses_come_and_go_with_their_links, setup_balanced,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(test_stop_carries_out_the_closes_reported_before_it,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_free_closes_connections_never_reported_closed,
                                        setup_balanced, teardown_core),
    };
    return RUN_CORE_TESTS(tests);
}
