/*
 * test_amqp_disposition.c — the connection engine's dispositions (junction/
 * amqp_delivery.h; AMQP 1.0 2.6.12-2.6.14, 2.7.6) through 1, 2, 3 and
 * 7-octet buffers: ours held and sent as ranges (consecutive delivery-ids
 * with the same state and settled flag in one frame, a change of state or
 * settled flag starting the next), the peer's reaching the user once per
 * delivery of its range with its state (known states decoded, a state with
 * a symbolic descriptor passed as it came), settlement freeing deliveries
 * at both ends, the sender's own disposition, a range naming ids no
 * longer held, and a link's user pointers cleared and handed back
 * (jn_amqp_link_users_clear) for its deliveries alone.
 */
#include "test_amqp_engine_util.h"

static const size_t chunks[] = {0, 1, 2, 3, 7};
#define NCHUNKS (sizeof chunks / sizeof chunks[0])

/* a's sender and b's receiver with credit; a sends n unsettled one-frame
 * deliveries, kept in ds; b's deliveries in bd. */
static jn_amqp_link_t *sent_pair(peer_t *a, peer_t *b, size_t chunk, int n, jn_amqp_delivery_t **ds,
                                 jn_amqp_delivery_t **bd)
{
    peer_init(a, "client", 65536, 255, 0);
    peer_init(b, "server", 65536, 255, 0);
    a->chunk = b->chunk = chunk;
    assert_int_equal(jn_amqp_conn_open(a->c), 0);
    jn_amqp_session_t *s = jn_amqp_session_new(a->c);
    assert_int_equal(jn_amqp_session_begin(s, 7, 100, 100), 0);
    jn_amqp_link_t *l = jn_amqp_link_new(s, "out", JN_AMQP_SENDER);
    assert_int_equal(jn_amqp_link_attach(l, &(jn_amqp_attach_t){0}, 0), 0);
    pump(a, b);
    assert_int_equal(jn_amqp_link_flow(b->last_link, 100, false, false), 0);
    pump(a, b);
    for (int i = 0; i < n; i++) {
        char tag[8];
        snprintf(tag, sizeof tag, "d%d", i);
        assert_int_equal(jn_amqp_delivery_new(l, tag, strlen(tag), 0, false, &ds[i]), 0);
        jn_iter_t piece;
        jn_iter_init_bytes(&piece, "m", 1, JN_VIEW_RAW);
        size_t taken;
        assert_int_equal(jn_amqp_delivery_send(ds[i], &piece, 1, false, &taken), 1);
        pump(a, b);
        bd[i] = b->last_delivery;
        assert_int_equal(jn_amqp_delivery_id(bd[i]), (uint32_t)i);
    }
    return l;
}

static void state_init(jn_amqp_state_t *st, uint64_t code)
{
    memset(st, 0, sizeof *st);
    st->code = code;
}

/* The dispositions in x's output: their first, last and settled, taken. */
static int out_dispositions(peer_t *x, uint32_t *first, uint32_t *last, uint64_t *code, int max)
{
    static uint8_t out[65536];
    size_t len = take_all(x, out, sizeof out);
    jn_iter_t it;
    jn_iter_init_bytes(&it, len ? out : (const uint8_t *)"", len, JN_VIEW_RAW);
    int n = 0;
    jn_amqp_frame_t f;
    jn_amqp_fault_t fault;
    while (jn_amqp_frame_read(&it, JN_AMQP_FRAME_AMQP, UINT32_MAX, 65535, &f, &fault) == 1) {
        jn_amqp_perf_t p = {0};
        assert_int_equal(jn_amqp_perf_decode(&f.body, JN_AMQP_FRAME_AMQP, &p, NULL, &fault), 0);
        if (p.code == JN_AMQP_DISPOSITION && n < max) {
            first[n] = p.u.disposition.first;
            last[n] = (p.u.disposition.present & JN_AMQP_FIELD(2)) ? p.u.disposition.last
                                                                   : p.u.disposition.first;
            code[n] = p.u.disposition.state.code;
            n++;
        }
        jn_iter_advance(&it, f.size);
    }
    return n;
}

static void test_consecutive_same_state_one_range(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCHUNKS; i++) {
        peer_t a, b;
        jn_amqp_delivery_t *ds[5], *bd[5];
        (void)sent_pair(&a, &b, chunks[i], 5, ds, bd);
        jn_amqp_state_t accepted;
        state_init(&accepted, JN_AMQP_ACCEPTED);
        for (int k = 0; k < 5; k++)
            assert_int_equal(jn_amqp_delivery_update(bd[k], &accepted, true), 0);
        /* one frame: first 0, last 4 */
        uint32_t first[8], last[8];
        uint64_t code[8];
        static uint8_t copy[65536];
        size_t len;
        {
            /* look at b's output without taking it from the pump */
            struct iovec iov[8];
            int n = jn_amqp_conn_output_iov(b.c, iov, 8);
            len = 0;
            for (int k = 0; k < n; k++) {
                memcpy(copy + len, iov[k].iov_base, iov[k].iov_len);
                len += iov[k].iov_len;
            }
        }
        assert_int_equal(out_dispositions(&b, first, last, code, 8), 1);
        assert_int_equal(first[0], 0);
        assert_int_equal(last[0], 4);
        assert_int_equal(code[0], JN_AMQP_ACCEPTED);
        (void)peer_input(&a, copy, len);
        assert_int_equal(a.dispositions, 5);
        assert_true(a.last_disposition.settled);
        assert_int_equal(a.last_state_code, JN_AMQP_ACCEPTED);
        assert_true(a.last_remote_settled); /* then freed */
        peer_free(&a);
        peer_free(&b);
    }
}

static void test_state_or_settled_change_starts_a_range(void **state)
{
    (void)state;
    peer_t a, b;
    jn_amqp_delivery_t *ds[6], *bd[6];
    (void)sent_pair(&a, &b, 3, 6, ds, bd);
    jn_amqp_state_t accepted, rejected;
    state_init(&accepted, JN_AMQP_ACCEPTED);
    state_init(&rejected, JN_AMQP_REJECTED);
    rejected.present = JN_AMQP_FIELD(0);
    rejected.error.present = JN_AMQP_FIELD(0);
    jn_iter_init_string(&rejected.error.condition, "amqp:decode-error", JN_VIEW_RAW);
    assert_int_equal(jn_amqp_delivery_update(bd[0], &accepted, true), 0);
    assert_int_equal(jn_amqp_delivery_update(bd[1], &accepted, true), 0);
    assert_int_equal(jn_amqp_delivery_update(bd[2], &rejected, true), 0);
    assert_int_equal(jn_amqp_delivery_update(bd[3], &accepted, true), 0);
    assert_int_equal(jn_amqp_delivery_update(bd[4], &accepted, false), 0); /* not settled */
    assert_int_equal(jn_amqp_delivery_update(bd[5], NULL, true), 0);       /* no state */
    uint32_t first[8], last[8];
    uint64_t code[8];
    assert_int_equal(out_dispositions(&b, first, last, code, 8), 5);
    assert_int_equal(first[0], 0);
    assert_int_equal(last[0], 1);
    assert_int_equal(first[1], 2);
    assert_int_equal(last[1], 2);
    assert_int_equal(first[2], 3);
    assert_int_equal(first[3], 4);
    assert_int_equal(first[4], 5);
    assert_int_equal(code[4], 0);
    peer_free(&a);
    peer_free(&b);
}

static void test_peer_disposition_per_delivery_and_settle_frees(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCHUNKS; i++) {
        peer_t a, b;
        jn_amqp_delivery_t *ds[4], *bd[4];
        (void)sent_pair(&a, &b, chunks[i], 4, ds, bd);
        jn_amqp_state_t received;
        state_init(&received, JN_AMQP_RECEIVED);
        received.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1);
        received.section_number = 2;
        received.section_offset = 9;
        for (int k = 0; k < 4; k++)
            assert_int_equal(jn_amqp_delivery_update(bd[k], &received, false), 0);
        pump(&a, &b);
        assert_int_equal(a.dispositions, 4); /* not settled: a's deliveries stay */
        assert_int_equal(a.last_state_code, JN_AMQP_RECEIVED);
        assert_false(a.last_disposition.settled);
        /* a settles its side as the sender (role sender) */
        a.settle_on_disposition = false;
        jn_amqp_state_t accepted;
        state_init(&accepted, JN_AMQP_ACCEPTED);
        for (int k = 0; k < 4; k++)
            assert_int_equal(jn_amqp_delivery_update(ds[k], &accepted, true), 0);
        pump(&a, &b);
        assert_int_equal(b.dispositions, 4);
        assert_true(b.last_disposition.settled);
        assert_int_equal(b.last_disposition.role, JN_AMQP_SENDER);
        assert_int_equal(b.last_state_code, JN_AMQP_ACCEPTED);
        /* b's deliveries went with the sender's settlement: the same range
         * again names nothing */
        jn_amqp_perf_t p;
        jn_amqp_perf_init(&p, JN_AMQP_DISPOSITION);
        p.u.disposition.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2);
        p.u.disposition.role = JN_AMQP_SENDER;
        p.u.disposition.last = 3;
        assert_int_equal(raw_send(&b, 0, &p), 0);
        assert_int_equal(b.dispositions, 4);
        peer_free(&a);
        peer_free(&b);
    }
}

static void test_settle_inside_callback_and_stale_range(void **state)
{
    (void)state;
    peer_t a, b;
    jn_amqp_delivery_t *ds[3], *bd[3];
    (void)sent_pair(&a, &b, 1, 3, ds, bd);
    a.settle_on_disposition = true; /* a settles each in on_disposition */
    jn_amqp_state_t released;
    state_init(&released, JN_AMQP_RELEASED);
    for (int k = 0; k < 3; k++)
        assert_int_equal(jn_amqp_delivery_update(bd[k], &released, false), 0);
    pump(&a, &b);
    assert_int_equal(a.dispositions, 3);
    assert_int_equal(b.dispositions, 3); /* a's settlement, one range */
    assert_true(b.last_disposition.settled);
    /* a disposition naming ids nobody holds any more is ignored */
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_DISPOSITION);
    p.u.disposition.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2);
    p.u.disposition.role = JN_AMQP_RECEIVER;
    p.u.disposition.first = 0;
    p.u.disposition.last = 0xFFFFFFF0u;
    assert_int_equal(raw_send(&a, 0, &p), 0);
    assert_int_equal(a.dispositions, 3);
    peer_free(&a);
    peer_free(&b);
}

static void test_unknown_state_passes_both_ways(void **state)
{
    (void)state;
    peer_t a, b;
    jn_amqp_delivery_t *ds[2], *bd[2];
    (void)sent_pair(&a, &b, 7, 2, ds, bd);
    static const uint8_t custom[] = {0x00, 0xa3, 0x0a, 'x', ':',  'o',  'u',  't',  'c',
                                     'o',  'm',  'e',  '!', 0xc0, 0x03, 0x01, 0x50, 0x07};
    jn_amqp_state_t st;
    memset(&st, 0, sizeof st);
    st.symbolic = true;
    jn_iter_init_bytes(&st.encoded, custom, sizeof custom, JN_VIEW_RAW);
    assert_int_equal(jn_amqp_delivery_update(bd[0], &st, false), 0);
    assert_int_equal(jn_amqp_delivery_update(bd[1], &st, false), 0);
    pump(&a, &b);
    assert_int_equal(a.dispositions, 2);
    assert_true(a.last_state_symbolic);
    assert_int_equal(a.last_state_len, sizeof custom);
    assert_memory_equal(a.last_state, custom, sizeof custom);
    /* and back from the sender */
    assert_int_equal(jn_amqp_delivery_update(ds[1], &st, true), 0);
    pump(&a, &b);
    assert_int_equal(b.dispositions, 1);
    assert_memory_equal(b.last_state, custom, sizeof custom);
    peer_free(&a);
    peer_free(&b);
}

static void test_settled_before_its_last_frame_lives_to_its_end(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCHUNKS; i++) {
        peer_t a, b;
        jn_amqp_delivery_t *ds[1], *bd[1];
        jn_amqp_link_t *l = sent_pair(&a, &b, chunks[i], 1, ds, bd);
        jn_amqp_delivery_t *d;
        assert_int_equal(jn_amqp_delivery_new(l, "m", 1, 0, false, &d), 0);
        jn_iter_t piece;
        size_t taken;
        jn_iter_init_bytes(&piece, "head", 4, JN_VIEW_RAW);
        assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, true, &taken), 0);
        pump(&a, &b);
        /* both ends settle after the first frame */
        jn_amqp_delivery_t *rd = b.last_delivery;
        jn_amqp_state_t released;
        state_init(&released, JN_AMQP_RELEASED);
        assert_int_equal(jn_amqp_delivery_update(rd, &released, true), 0);
        assert_int_equal(jn_amqp_delivery_update(rd, NULL, true), JN_EPERM);
        assert_int_equal(jn_amqp_delivery_update(d, NULL, true), 0);
        pump(&a, &b);
        /* the rest still goes and comes, then both are freed */
        jn_iter_init_bytes(&piece, "tail", 4, JN_VIEW_RAW);
        assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, false, &taken), 1);
        pump(&a, &b);
        assert_int_equal(b.npayload, 1 + 8);
        assert_memory_equal(b.payload + 1, "headtail", 8);
        assert_false(b.last_transfer.more);
        assert_false(jn_amqp_conn_finished(a.c) || jn_amqp_conn_finished(b.c));
        /* each end settled before the other's disposition came: neither
         * holds the delivery, so neither reports it */
        assert_int_equal(a.dispositions, 0);
        assert_int_equal(b.dispositions, 0);
        peer_free(&a);
        peer_free(&b);
    }
}

static void test_peer_settles_before_our_last_frame(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCHUNKS; i++) {
        peer_t a, b;
        jn_amqp_delivery_t *ds[1], *bd[1];
        jn_amqp_link_t *l = sent_pair(&a, &b, chunks[i], 1, ds, bd);
        jn_amqp_delivery_t *d;
        assert_int_equal(jn_amqp_delivery_new(l, "m", 1, 0, false, &d), 0);
        jn_iter_t piece;
        size_t taken;
        jn_iter_init_bytes(&piece, "head", 4, JN_VIEW_RAW);
        assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, true, &taken), 0);
        pump(&a, &b);
        jn_amqp_state_t rejected;
        state_init(&rejected, JN_AMQP_REJECTED);
        assert_int_equal(jn_amqp_delivery_update(b.last_delivery, &rejected, true), 0);
        pump(&a, &b);
        assert_int_equal(a.dispositions, 1);
        assert_true(a.last_remote_settled);
        assert_int_equal(a.last_state_code, JN_AMQP_REJECTED);
        /* d lives until its last frame, then goes (ASan would see a use after free) */
        jn_iter_init_bytes(&piece, "tail", 4, JN_VIEW_RAW);
        assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, false, &taken), 1);
        pump(&a, &b);
        assert_memory_equal(b.payload + 1, "headtail", 8);
        assert_false(jn_amqp_conn_finished(a.c) || jn_amqp_conn_finished(b.c));
        peer_free(&a);
        peer_free(&b);
    }
}

/* jn_amqp_link_users_clear's fn: counts, and marks what it was given. */
static void user_cleared(void *ctx, void *user)
{
    (*(int *)ctx)++;
    (*(int *)user)++;
}

static void test_link_users_cleared_for_its_deliveries_alone(void **state)
{
    (void)state;
    peer_t a, b;
    jn_amqp_delivery_t *ds[3], *bd[3];
    jn_amqp_link_t *l = sent_pair(&a, &b, 7, 3, ds, bd);
    jn_amqp_link_t *rl = b.last_link;
    /* a second sending link of the same session, one delivery on it */
    jn_amqp_link_t *l2 = jn_amqp_link_new(jn_amqp_link_session(l), "out2", JN_AMQP_SENDER);
    assert_int_equal(jn_amqp_link_attach(l2, &(jn_amqp_attach_t){0}, 0), 0);
    pump(&a, &b);
    assert_int_equal(jn_amqp_link_flow(b.last_link, 10, false, false), 0);
    pump(&a, &b);
    jn_amqp_delivery_t *other, *later;
    assert_int_equal(jn_amqp_delivery_new(l2, "o", 1, 0, false, &other), 0);
    jn_iter_t piece;
    jn_iter_init_bytes(&piece, "m", 1, JN_VIEW_RAW);
    size_t taken;
    assert_int_equal(jn_amqp_delivery_send(other, &piece, 1, false, &taken), 1);
    /* one more on l, not begun: no frame of it went out */
    assert_int_equal(jn_amqp_delivery_new(l, "n", 1, 0, false, &later), 0);
    int marks[5] = {0};
    jn_amqp_delivery_set_user(ds[0], &marks[0]);
    jn_amqp_delivery_set_user(ds[2], &marks[2]); /* ds[1] has none */
    jn_amqp_delivery_set_user(later, &marks[3]);
    jn_amqp_delivery_set_user(other, &marks[4]);
    int calls = 0;
    jn_amqp_link_users_clear(l, user_cleared, &calls);
    assert_int_equal(calls, 3);
    assert_int_equal(marks[0], 1);
    assert_int_equal(marks[1], 0);
    assert_int_equal(marks[2], 1);
    assert_int_equal(marks[3], 1);
    assert_int_equal(marks[4], 0); /* another link's */
    assert_null(jn_amqp_delivery_user(ds[0]));
    assert_null(jn_amqp_delivery_user(later));
    assert_ptr_equal(jn_amqp_delivery_user(other), &marks[4]);
    calls = 0;
    jn_amqp_link_users_clear(l, user_cleared, &calls); /* nothing left to pass */
    assert_int_equal(calls, 0);
    /* the receiving end: its deliveries held by id */
    for (int k = 0; k < 3; k++)
        jn_amqp_delivery_set_user(bd[k], &marks[k]);
    jn_amqp_link_users_clear(rl, user_cleared, &calls);
    assert_int_equal(calls, 3);
    assert_int_equal(marks[1], 1);
    peer_free(&a);
    peer_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_consecutive_same_state_one_range),
        cmocka_unit_test(test_state_or_settled_change_starts_a_range),
        cmocka_unit_test(test_peer_disposition_per_delivery_and_settle_frees),
        cmocka_unit_test(test_settle_inside_callback_and_stale_range),
        cmocka_unit_test(test_unknown_state_passes_both_ways),
        cmocka_unit_test(test_settled_before_its_last_frame_lives_to_its_end),
        cmocka_unit_test(test_peer_settles_before_our_last_frame),
        cmocka_unit_test(test_link_users_cleared_for_its_deliveries_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
