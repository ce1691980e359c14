/*
 * test_amqp_transfer.c — the connection engine's transfers (junction/
 * amqp_delivery.h; AMQP 1.0 2.5.6, 2.6.7, 2.6.12, 2.7.5): one-frame and
 * multi-frame deliveries both ways through 1, 2, 3 and 7-octet buffers, the
 * payload referenced from the sender's buffers (runs of at most 128 octets
 * copied into the output) and handed to the receiver as a view of its
 * input, the peer's max-frame-size, the session windows
 * and link credit both ends count, pre-settled deliveries, aborts, a state
 * on a later frame, a state we put on our first frame; and the faults: a delivery beyond credit, a transfer
 * beyond the incoming window, a first transfer without delivery-id or tag,
 * a continuation with another delivery-id, a transfer on the peer's
 * receiving link, rcv-settle-mode second on a link negotiated first.
 */
#include "test_amqp_engine_util.h"

#include <junction/encoder.h>

static const size_t chunks[] = {0, 1, 2, 3, 7};
#define NCHUNKS (sizeof chunks / sizeof chunks[0])

static int send_bytes(jn_amqp_link_t *l, const char *tag, const void *data, size_t len,
                      bool settled, jn_amqp_delivery_t **d)
{
    assert_int_equal(jn_amqp_delivery_new(l, tag, strlen(tag), 0, settled, d), 0);
    jn_iter_t piece;
    jn_iter_init_bytes(&piece, data, len, JN_VIEW_RAW);
    size_t taken = 0;
    int rc = jn_amqp_delivery_send(*d, &piece, 1, false, &taken);
    return rc;
}

static void test_one_frame_delivery_both_ends_count(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCHUNKS; i++) {
        peer_t a, b;
        jn_amqp_link_t *l = sender_pair(&a, &b, chunks[i], 65536, 10);
        jn_amqp_delivery_t *d;
        assert_int_equal(send_bytes(l, "t1", "hello", 5, false, &d), 1);
        pump(&a, &b);
        assert_int_equal(b.transfers, 1);
        assert_int_equal(b.npayload, 5);
        assert_memory_equal(b.payload, "hello", 5);
        assert_int_equal(b.last_transfer.delivery_id, 0);
        assert_false(b.last_transfer.more);
        size_t tl;
        const uint8_t *tag = jn_amqp_delivery_tag(b.last_delivery, &tl);
        assert_int_equal(tl, 2);
        assert_memory_equal(tag, "t1", 2);
        assert_int_equal(jn_amqp_delivery_id(d), 0);
        /* 2.6.7 both ends; 2.5.6 both ends, across the 2^32 wrap */
        assert_int_equal(jn_amqp_link_state(l).credit, 9);
        assert_int_equal(jn_amqp_link_state(l).delivery_count, 0);
        assert_int_equal(jn_amqp_link_state(b.last_link).credit, 9);
        assert_int_equal(jn_amqp_link_state(b.last_link).delivery_count, 0);
        jn_amqp_window_t wa = jn_amqp_session_window(jn_amqp_link_session(l));
        jn_amqp_window_t wb = jn_amqp_session_window(b.last_session);
        assert_int_equal(wa.next_outgoing_id, 0xFFFFFFFFu);
        assert_int_equal(wb.next_incoming_id, 0xFFFFFFFFu);
        assert_int_equal(wb.incoming_window, 99);
        assert_int_equal(wa.remote_incoming_window, 99);
        peer_free(&a);
        peer_free(&b);
    }
}

static void test_multi_frame_split_at_max_frame_and_referenced(void **state)
{
    (void)state;
    uint8_t msg[3000];
    for (size_t k = 0; k < sizeof msg; k++)
        msg[k] = (uint8_t)(k * 7 + 3);
    for (size_t i = 0; i < NCHUNKS; i++) {
        peer_t a, b;
        jn_amqp_link_t *l = sender_pair(&a, &b, chunks[i], 512, 10);
        /* the message in pooled buffers of 1, 2, 3, 7 or 200 octets, as
         * two pieces: each frame references runs of several buffers */
        jn_buffer_list_t list;
        jn_buffer_list_init(&list);
        size_t split = chunks[i] ? chunks[i] : 200;
        assert_int_equal(jn_buffer_list_append_split(&list, msg, sizeof msg, split), 0);
        jn_iter_t pieces[2];
        assert_int_equal(jn_iter_init(&pieces[0], list.head, 0, 1000, JN_VIEW_RAW), 0);
        assert_int_equal(jn_iter_init(&pieces[1], list.head, 1000, 2000, JN_VIEW_RAW), 0);
        jn_amqp_delivery_t *d;
        assert_int_equal(jn_amqp_delivery_new(l, "big", 3, 0, false, &d), 0);
        size_t taken;
        assert_int_equal(jn_amqp_delivery_send(d, pieces, 2, false, &taken), 1);
        assert_int_equal(taken, sizeof msg);
        /* referenced, not copied: the output holds the first buffer; runs
         * of at most 128 octets are copied into the output instead */
        if (split > 128)
            assert_true(atomic_load(&list.head->refcount) > 1);
        else
            assert_int_equal(atomic_load(&list.head->refcount), 1);
        pump(&a, &b);
        assert_int_equal(atomic_load(&list.head->refcount), 1);
        jn_buffer_list_free(&list);
        assert_true(b.transfers >= 6); /* 3000 octets in frames of 512 */
        assert_int_equal(b.npayload, sizeof msg);
        assert_memory_equal(b.payload, msg, sizeof msg);
        assert_false(b.last_transfer.more);
        assert_int_equal(jn_amqp_session_window(b.last_session).incoming_window,
                         100 - (uint32_t)b.transfers);
        assert_int_equal(jn_amqp_link_state(b.last_link).credit, 9); /* one delivery */
        peer_free(&a);
        peer_free(&b);
    }
}

/* jn_amqp_delivery_send_runs frames the message as jn_amqp_delivery_send
 * does with the same octets as views: the same frames, octet for octet,
 * split at the peer's max-frame-size, the runs' buffers referenced until
 * the output is taken, and an empty run passed over. */
static void test_runs_send_the_frames_the_views_send(void **state)
{
    (void)state;
    uint8_t msg[3000];
    for (size_t k = 0; k < sizeof msg; k++)
        msg[k] = (uint8_t)(k * 5 + 1);
    static uint8_t out_views[8192], out_runs[8192];
    size_t n_views = 0, n_runs = 0;
    for (int pass = 0; pass < 2; pass++) {
        peer_t a, b;
        jn_amqp_link_t *l = sender_pair(&a, &b, 0, 512, 10);
        jn_buffer_list_t list;
        jn_buffer_list_init(&list);
        assert_int_equal(jn_buffer_list_append_split(&list, msg, sizeof msg, 500), 0);
        jn_amqp_delivery_t *d;
        assert_int_equal(jn_amqp_delivery_new(l, "runs", 4, 0, false, &d), 0);
        size_t taken = 0;
        if (pass == 0) {
            jn_iter_t piece;
            assert_int_equal(jn_iter_init(&piece, list.head, 0, sizeof msg, JN_VIEW_RAW), 0);
            assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, false, &taken), 1);
            n_views = take_all(&a, out_views, sizeof out_views);
        } else {
            jn_amqp_run_t runs[8];
            size_t n = 0;
            for (jn_buffer_t *bf = list.head; bf; bf = jn_buffer_next(bf)) {
                runs[n++] = (jn_amqp_run_t){.data = bf->data, .len = jn_buffer_size(bf), .buf = bf};
                if (n == 1)
                    runs[n++] = (jn_amqp_run_t){.data = bf->data, .len = 0, .buf = bf};
            }
            assert_int_equal(n, 7); /* six buffers and the empty run */
            assert_int_equal(jn_amqp_delivery_send_runs(d, runs, n, false, false, &taken), 1);
            assert_true(atomic_load(&list.head->refcount) > 1); /* referenced */
            n_runs = take_all(&a, out_runs, sizeof out_runs);
            assert_int_equal(atomic_load(&list.head->refcount), 1);
        }
        assert_int_equal(taken, sizeof msg);
        jn_buffer_list_free(&list);
        peer_free(&a);
        peer_free(&b);
    }
    assert_true(n_views > sizeof msg);
    assert_int_equal(n_runs, n_views);
    assert_memory_equal(out_runs, out_views, n_views);
}

/* The octets a first transfer frame's header and performative take for
 * handle 0, delivery-id 0, tag "t1", message-format 0 and more as given. */
static size_t first_frame_head(bool more)
{
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_TRANSFER);
    jn_amqp_transfer_t *t = &p.u.transfer;
    t->present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2) | JN_AMQP_FIELD(3);
    t->handle = 0;
    t->delivery_id = 0;
    jn_iter_init_bytes(&t->delivery_tag, "t1", 2, JN_VIEW_RAW);
    t->message_format = 0;
    if (more) {
        t->present |= JN_AMQP_FIELD(5);
        t->more = true;
    }
    jn_encoder_t e;
    jn_encoder_init(&e);
    size_t start = jn_amqp_frame_begin(&e, JN_AMQP_FRAME_AMQP, 0);
    assert_int_equal(jn_amqp_perf_encode(&e, &p), 0);
    size_t head = e.size - start;
    jn_encoder_free(&e);
    return head;
}

/* Short runs are copied into the output, longer ones referenced: a
 * message as a router sends it, a 7-octet header section, 82 octets of
 * annotations and 153 octets of the rest, goes out as two runs of the
 * output (the composed frame with the two short runs after it, and the
 * rest's buffer), with the given references of the short runs dropped at
 * once and the long one's passed to the output; then the same through
 * views, which take references of their own. */
static void test_short_runs_copied_into_the_output(void **state)
{
    (void)state;
    uint8_t msg[ROUTED_LEN];
    for (size_t k = 0; k < sizeof msg; k++)
        msg[k] = (uint8_t)(k * 5 + 1);
    for (int views = 0; views <= 1; views++) {
        peer_t a, b;
        jn_amqp_link_t *l = sender_pair(&a, &b, 0, 65536, 10);
        jn_buffer_list_t lists[ROUTED_RUNS];
        jn_amqp_run_t runs[ROUTED_RUNS];
        jn_iter_t pieces[ROUTED_RUNS];
        routed_runs(msg, lists, runs, pieces, !views); /* runs given, or views */
        jn_amqp_delivery_t *d;
        assert_int_equal(jn_amqp_delivery_new(l, "s", 1, 0, false, &d), 0);
        size_t taken = 0;
        if (views)
            assert_int_equal(jn_amqp_delivery_send(d, pieces, ROUTED_RUNS, false, &taken), 1);
        else
            assert_int_equal(jn_amqp_delivery_send_runs(d, runs, ROUTED_RUNS, false, true, &taken), 1);
        assert_int_equal(taken, sizeof msg);
        assert_int_equal(atomic_load(&lists[0].head->refcount), 1); /* copied */
        assert_int_equal(atomic_load(&lists[1].head->refcount), 1);
        assert_int_equal(atomic_load(&lists[2].head->refcount), 2); /* the output's */
        struct iovec iov[8];
        assert_int_equal(jn_amqp_conn_output_iov(a.c, iov, 8), 2);
        assert_memory_equal((const uint8_t *)iov[0].iov_base + iov[0].iov_len - 89, msg, 89);
        assert_ptr_equal(iov[1].iov_base, lists[2].head->data);
        assert_int_equal(iov[1].iov_len, 153);
        pump(&a, &b);
        assert_int_equal(b.transfers, 1);
        assert_int_equal(b.npayload, sizeof msg);
        assert_memory_equal(b.payload, msg, sizeof msg);
        routed_runs_free(lists);
        peer_free(&a);
        peer_free(&b);
    }
}

/* A payload that fits the peer's max-frame-size after the last frame's
 * (shorter) performative goes in one frame, even though it would not fit
 * after a performative with more=true; one octet more takes two frames,
 * none over the max. */
static void test_payload_filling_the_last_frame_exactly(void **state)
{
    (void)state;
    static uint8_t msg[512];
    memset(msg, 'x', sizeof msg);
    size_t room = 512 - first_frame_head(false);
    assert_true(first_frame_head(true) > first_frame_head(false));
    for (size_t extra = 0; extra < 2; extra++) {
        peer_t a, b;
        jn_amqp_link_t *l = sender_pair(&a, &b, 0, 512, 10);
        jn_amqp_delivery_t *d;
        assert_int_equal(send_bytes(l, "t1", msg, room + extra, false, &d), 1);
        pump(&a, &b);
        assert_int_equal(b.transfers, extra ? 2 : 1);
        assert_int_equal(b.npayload, room + extra);
        assert_false(b.last_transfer.more);
        assert_int_equal(jn_amqp_link_state(b.last_link).credit, 9);
        peer_free(&a);
        peer_free(&b);
    }
}

static void test_output_taken_a_few_octets_at_a_time(void **state)
{
    (void)state;
    static uint8_t msg[2000], wire[8192];
    for (size_t k = 0; k < sizeof msg; k++)
        msg[k] = (uint8_t)(k ^ 0x5a);
    peer_t a, b;
    jn_amqp_link_t *l = sender_pair(&a, &b, 0, 512, 10);
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    assert_int_equal(jn_buffer_list_append_split(&list, msg, sizeof msg, 300), 0);
    jn_iter_t piece;
    assert_int_equal(jn_iter_init(&piece, list.head, 0, sizeof msg, JN_VIEW_RAW), 0);
    jn_amqp_delivery_t *d;
    size_t taken;
    assert_int_equal(jn_amqp_delivery_new(l, "f", 1, 0, true, &d), 0);
    assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, false, &taken), 1);
    jn_buffer_list_free(&list); /* the output holds its own references */
    size_t len = 0, run;
    const uint8_t *out;
    while ((out = jn_amqp_conn_output(a.c, &run)) && run > 0) {
        size_t k = run < 5 ? run : 5; /* part of a run: the rest stays first */
        memcpy(wire + len, out, k);
        len += k;
        jn_amqp_conn_output_done(a.c, k);
    }
    assert_int_equal(peer_input(&b, wire, len), 0);
    assert_int_equal(b.npayload, sizeof msg);
    assert_memory_equal(b.payload, msg, sizeof msg);
    peer_free(&a);
    peer_free(&b);
}

/* Runs given (jn_amqp_delivery_send_runs with give): a run taken whole
 * hands the caller's reference to the output, one taken in part or not at
 * all leaves it the caller's; the frames are those of runs not given, and
 * every reference is dropped once the output is taken. */
static void test_runs_given_hand_their_references_over(void **state)
{
    (void)state;
    static uint8_t msg[3000];
    for (size_t k = 0; k < sizeof msg; k++)
        msg[k] = (uint8_t)(k * 7 + 3);
    peer_t a, b;
    jn_amqp_link_t *l = sender_pair(&a, &b, 3, 512, 10);
    assert_int_equal(jn_amqp_session_set_incoming_window(b.last_session, 2), 0);
    pump(&a, &b);
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    assert_int_equal(jn_buffer_list_append_split(&list, msg, sizeof msg, 500), 0);
    jn_amqp_run_t runs[6];
    jn_buffer_t *bufs[6];
    size_t n = 0;
    for (jn_buffer_t *bf = list.head; bf; bf = jn_buffer_next(bf), n++) {
        bufs[n] = jn_buffer_ref(bf); /* the caller's, given */
        runs[n] = (jn_amqp_run_t){.data = bf->data, .len = jn_buffer_size(bf), .buf = bf};
    }
    assert_int_equal(n, 6);
    jn_amqp_delivery_t *d;
    assert_int_equal(jn_amqp_delivery_new(l, "g", 1, 0, false, &d), 0);
    size_t taken;
    assert_int_equal(jn_amqp_delivery_send_runs(d, runs, n, false, true, &taken), 0);
    assert_true(taken > 500 && taken < 1024); /* two frames: the first run whole, the second not */
    /* the first run spans both frames: the first frame's reference; its
     * last octets, under 128, are copied into the second frame and ours,
     * given, is dropped; the second run's is ours still, beside the second
     * frame's; the third's is ours alone */
    assert_int_equal(atomic_load(&bufs[0]->refcount), 2); /* the list's and a frame's */
    assert_int_equal(atomic_load(&bufs[1]->refcount), 3); /* the list's, ours, a frame's */
    assert_int_equal(atomic_load(&bufs[2]->refcount), 2);
    pump(&a, &b);
    assert_int_equal(atomic_load(&bufs[0]->refcount), 1); /* taken: the list's alone */
    assert_int_equal(atomic_load(&bufs[1]->refcount), 2);
    /* the window reopened: the rest, from where the second run stopped */
    assert_int_equal(jn_amqp_session_set_incoming_window(b.last_session, 100), 0);
    pump(&a, &b);
    runs[1].data += taken - 500;
    runs[1].len -= taken - 500;
    size_t more;
    assert_int_equal(jn_amqp_delivery_send_runs(d, runs + 1, n - 1, false, true, &more), 1);
    assert_int_equal(taken + more, sizeof msg);
    pump(&a, &b);
    for (size_t k = 0; k < n; k++)
        assert_int_equal(atomic_load(&bufs[k]->refcount), 1); /* every given one dropped */
    assert_int_equal(b.npayload, sizeof msg);
    assert_memory_equal(b.payload, msg, sizeof msg);
    jn_buffer_list_free(&list);
    peer_free(&a);
    peer_free(&b);
}

static void test_remote_incoming_window_holds_frames_back(void **state)
{
    (void)state;
    static uint8_t msg[4000];
    memset(msg, 'x', sizeof msg);
    peer_t a, b;
    jn_amqp_link_t *l = sender_pair(&a, &b, 3, 512, 10);
    assert_int_equal(jn_amqp_session_set_incoming_window(b.last_session, 2), 0);
    pump(&a, &b);
    jn_amqp_delivery_t *d;
    assert_int_equal(jn_amqp_delivery_new(l, "w", 1, 0, false, &d), 0);
    jn_iter_t piece;
    jn_iter_init_bytes(&piece, msg, sizeof msg, JN_VIEW_RAW);
    size_t taken;
    assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, false, &taken), 0);
    assert_true(taken > 0 && taken < 1024); /* two frames */
    pump(&a, &b);
    assert_int_equal(b.transfers, 2);
    assert_true(b.last_transfer.more);
    /* a window reopened: the rest goes */
    assert_int_equal(jn_amqp_session_set_incoming_window(b.last_session, 100), 0);
    pump(&a, &b);
    size_t more;
    jn_iter_advance(&piece, taken);
    assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, false, &more), 1);
    assert_int_equal(taken + more, sizeof msg);
    pump(&a, &b);
    assert_int_equal(b.npayload, sizeof msg);
    assert_false(b.last_transfer.more);
    peer_free(&a);
    peer_free(&b);
}

static void test_streamed_delivery_with_more(void **state)
{
    (void)state;
    peer_t a, b;
    jn_amqp_link_t *l = sender_pair(&a, &b, 2, 65536, 10);
    jn_amqp_delivery_t *d;
    assert_int_equal(jn_amqp_delivery_new(l, "s", 1, 0, false, &d), 0);
    jn_iter_t piece;
    size_t taken;
    jn_iter_init_bytes(&piece, "first ", 6, JN_VIEW_RAW);
    assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, true, &taken), 0);
    assert_int_equal(jn_amqp_delivery_new(l, "t", 1, 0, false, &(jn_amqp_delivery_t *){0}),
                     JN_EPERM); /* one delivery in progress per link */
    pump(&a, &b);
    assert_true(b.last_transfer.more);
    jn_iter_init_bytes(&piece, "second", 6, JN_VIEW_RAW);
    assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, false, &taken), 1);
    pump(&a, &b);
    assert_int_equal(b.transfers, 2);
    assert_int_equal(b.npayload, 12);
    assert_memory_equal(b.payload, "first second", 12);
    assert_false(b.last_transfer.present & JN_AMQP_FIELD(1)); /* id on the first frame only */
    peer_free(&a);
    peer_free(&b);
}

static void test_presettled_delivery_freed_both_ends(void **state)
{
    (void)state;
    peer_t a, b;
    jn_amqp_link_t *l = sender_pair(&a, &b, 7, 65536, 10);
    jn_amqp_delivery_t *d;
    assert_int_equal(send_bytes(l, "p", "abc", 3, true, &d), 1); /* d is gone */
    pump(&a, &b);
    assert_int_equal(b.transfers, 1);
    assert_true(b.last_transfer.settled);
    /* the receiver's delivery went when on_transfer returned: a second
     * delivery takes the next id */
    assert_int_equal(send_bytes(l, "q", "def", 3, true, &d), 1);
    pump(&a, &b);
    assert_int_equal(b.last_transfer.delivery_id, 1);
    peer_free(&a);
    peer_free(&b);
}

static void test_abort_midway_and_before_any_frame(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCHUNKS; i++) {
        peer_t a, b;
        jn_amqp_link_t *l = sender_pair(&a, &b, chunks[i], 65536, 10);
        jn_amqp_delivery_t *d;
        assert_int_equal(jn_amqp_delivery_new(l, "x", 1, 0, false, &d), 0);
        jn_iter_t piece;
        size_t taken;
        jn_iter_init_bytes(&piece, "part", 4, JN_VIEW_RAW);
        assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, true, &taken), 0);
        assert_int_equal(jn_amqp_delivery_abort(d), 0);
        pump(&a, &b);
        assert_int_equal(b.transfers, 2);
        assert_true(b.last_transfer.aborted);
        /* before any frame: the credit comes back */
        assert_int_equal(jn_amqp_delivery_new(l, "y", 1, 0, false, &d), 0);
        assert_int_equal(jn_amqp_link_state(l).credit, 8);
        assert_int_equal(jn_amqp_delivery_abort(d), 0);
        assert_int_equal(jn_amqp_link_state(l).credit, 9);
        /* the link goes on with the next id */
        assert_int_equal(send_bytes(l, "z", "ok", 2, false, &d), 1);
        pump(&a, &b);
        assert_int_equal(b.transfers, 3);
        assert_int_equal(b.last_transfer.delivery_id, 1);
        peer_free(&a);
        peer_free(&b);
    }
}

static void test_no_credit_no_delivery(void **state)
{
    (void)state;
    peer_t a, b;
    jn_amqp_link_t *l = sender_pair(&a, &b, 0, 65536, 1);
    jn_amqp_delivery_t *d;
    assert_int_equal(send_bytes(l, "1", "a", 1, true, &d), 1);
    assert_int_equal(jn_amqp_delivery_new(l, "2", 1, 0, true, &d), JN_AGAIN);
    assert_int_equal(jn_amqp_delivery_new(l, "012345678901234567890123456789012", 33, 0, true, &d),
                     JN_EINVAL);
    peer_free(&a);
    peer_free(&b);
}

/* ---- a raw peer's transfers ---------------------------------------------- */

/* x is a server engine; a raw peer opens, begins on channel 1 and attaches
 * a sender on handle 0 (rcv-settle-mode of ours as given). */
static void raw_sender(peer_t *x, uint32_t window)
{
    peer_init(x, "server", 65536, 7, 0);
    raw_open(x, 65536, 7, 0);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_BEGIN);
    p.u.begin.present = JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2) | JN_AMQP_FIELD(3);
    p.u.begin.next_outgoing_id = 0;
    p.u.begin.incoming_window = p.u.begin.outgoing_window = 100;
    assert_int_equal(raw_send(x, 1, &p), 0);
    if (window != 100)
        assert_int_equal(jn_amqp_session_set_incoming_window(x->last_session, window), 0);
    jn_amqp_perf_init(&p, JN_AMQP_ATTACH);
    p.u.attach.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2) | JN_AMQP_FIELD(9);
    jn_iter_init_string(&p.u.attach.name, "in", JN_VIEW_RAW);
    p.u.attach.role = JN_AMQP_SENDER;
    assert_int_equal(raw_send(x, 1, &p), 0);
    (void)out_frames(x, (uint64_t[16]){0}, 16, NULL, 0);
}

/* A transfer frame on channel 1 with payload. */
static int raw_transfer(peer_t *x, const jn_amqp_perf_t *p, const char *payload)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    size_t start = jn_amqp_frame_begin(&e, JN_AMQP_FRAME_AMQP, 1);
    assert_int_equal(jn_amqp_perf_encode(&e, p), 0);
    jn_enc_raw(&e, payload, strlen(payload));
    assert_int_equal(jn_amqp_frame_end(&e, start, UINT32_MAX), 0);
    size_t len;
    const uint8_t *data = jn_encoder_data(&e, &len);
    int rc = peer_input(x, data, len);
    jn_encoder_free(&e);
    return rc;
}

static void transfer_init(jn_amqp_perf_t *p, uint32_t id, bool more)
{
    jn_amqp_perf_init(p, JN_AMQP_TRANSFER);
    p->u.transfer.present =
        JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2) | JN_AMQP_FIELD(5);
    p->u.transfer.delivery_id = id;
    jn_iter_init_string(&p->u.transfer.delivery_tag, "tag", JN_VIEW_RAW);
    p->u.transfer.more = more;
}

static void test_delivery_beyond_credit_detaches_the_link(void **state)
{
    (void)state;
    peer_t x;
    raw_sender(&x, 100);
    jn_amqp_perf_t p;
    transfer_init(&p, 0, false);
    assert_int_equal(raw_transfer(&x, &p, "m"), 0);
    char err[64];
    uint64_t codes[4];
    assert_int_equal(out_frames(&x, codes, 4, err, sizeof err), 1);
    assert_int_equal(codes[0], JN_AMQP_DETACH);
    assert_string_equal(err, "amqp:link:transfer-limit-exceeded");
    assert_int_equal(x.transfers, 0);
    peer_free(&x);
}

/* A delivery-tag over 2.8.7's 32 octets is taken, cut to 32, and said
 * (jn_amqp_delivery_tag_cut): the user judges it (a link route rejects
 * it), the connection goes on. */
static void test_tag_over_32_octets_is_taken_cut(void **state)
{
    (void)state;
    peer_t x;
    raw_sender(&x, 100);
    assert_int_equal(jn_amqp_link_flow(x.last_link, 10, false, false), 0);
    (void)out_frames(&x, (uint64_t[4]){0}, 4, NULL, 0);
    jn_amqp_perf_t p;
    transfer_init(&p, 0, false);
    static const char long_tag[] = "0123456789012345678901234567890123456789"; /* 40 */
    jn_iter_init_string(&p.u.transfer.delivery_tag, long_tag, JN_VIEW_RAW);
    assert_int_equal(raw_transfer(&x, &p, "a"), 0);
    assert_int_equal(x.transfers, 1);
    size_t tl;
    const uint8_t *tag = jn_amqp_delivery_tag(x.last_delivery, &tl);
    assert_int_equal(tl, JN_AMQP_TAG_MAX);
    assert_memory_equal(tag, long_tag, JN_AMQP_TAG_MAX);
    assert_true(jn_amqp_delivery_tag_cut(x.last_delivery));
    transfer_init(&p, 1, false); /* the usual tag: not cut */
    assert_int_equal(raw_transfer(&x, &p, "b"), 0);
    assert_int_equal(x.transfers, 2);
    assert_false(jn_amqp_delivery_tag_cut(x.last_delivery));
    assert_int_equal(x.closed, 0);
    peer_free(&x);
}

static void test_transfer_beyond_window_ends_the_session(void **state)
{
    (void)state;
    peer_t x;
    raw_sender(&x, 1);
    assert_int_equal(jn_amqp_link_flow(x.last_link, 10, false, false), 0);
    (void)out_frames(&x, (uint64_t[4]){0}, 4, NULL, 0);
    jn_amqp_perf_t p;
    transfer_init(&p, 0, true);
    assert_int_equal(raw_transfer(&x, &p, "a"), 0);
    jn_amqp_perf_init(&p, JN_AMQP_TRANSFER);
    p.u.transfer.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(5);
    assert_int_equal(raw_transfer(&x, &p, "b"), 0);
    char err[64];
    uint64_t codes[4];
    assert_int_equal(out_frames(&x, codes, 4, err, sizeof err), 1);
    assert_int_equal(codes[0], JN_AMQP_END);
    assert_string_equal(err, "amqp:session:window-violation");
    assert_int_equal(x.transfers, 1);
    peer_free(&x);
}

static void test_first_transfer_without_id_or_tag_is_invalid_field(void **state)
{
    (void)state;
    for (int which = 0; which < 2; which++) {
        peer_t x;
        raw_sender(&x, 100);
        assert_int_equal(jn_amqp_link_flow(x.last_link, 10, false, false), 0);
        jn_amqp_perf_t p;
        transfer_init(&p, 0, false);
        p.u.transfer.present &= ~JN_AMQP_FIELD(which ? 2 : 1);
        assert_int_equal(raw_transfer(&x, &p, "m"), JN_EPROTO);
        assert_string_equal(jn_amqp_conn_fault(x.c)->condition, "amqp:invalid-field");
        peer_free(&x);
    }
}

static void test_continuation_with_another_id_is_invalid_field(void **state)
{
    (void)state;
    peer_t x;
    raw_sender(&x, 100);
    assert_int_equal(jn_amqp_link_flow(x.last_link, 10, false, false), 0);
    jn_amqp_perf_t p;
    transfer_init(&p, 4, true);
    assert_int_equal(raw_transfer(&x, &p, "a"), 0);
    transfer_init(&p, 5, false);
    assert_int_equal(raw_transfer(&x, &p, "b"), JN_EPROTO);
    assert_string_equal(jn_amqp_conn_fault(x.c)->condition, "amqp:invalid-field");
    peer_free(&x);
}

static void test_transfer_on_peers_receiving_link_is_illegal_state(void **state)
{
    (void)state;
    peer_t a, b;
    jn_amqp_link_t *l = sender_pair(&a, &b, 0, 65536, 10);
    (void)l;
    /* b's link is a receiver; a frame from b's side claiming to send on
     * the handle a knows as the peer's receiver */
    jn_amqp_perf_t p;
    transfer_init(&p, 0, false);
    p.u.transfer.handle = 0;
    assert_int_equal(raw_transfer(&a, &p, "m"), JN_EPROTO);
    assert_string_equal(jn_amqp_conn_fault(a.c)->condition, "amqp:illegal-state");
    peer_free(&a);
    peer_free(&b);
}

static void test_rcv_settle_mode_second_on_first_link_is_invalid_field(void **state)
{
    (void)state;
    peer_t x;
    raw_sender(&x, 100);
    assert_int_equal(jn_amqp_link_flow(x.last_link, 10, false, false), 0);
    jn_amqp_perf_t p;
    transfer_init(&p, 0, false);
    p.u.transfer.present |= JN_AMQP_FIELD(6);
    p.u.transfer.rcv_settle_mode = 1;
    assert_int_equal(raw_transfer(&x, &p, "m"), JN_EPROTO);
    assert_string_equal(jn_amqp_conn_fault(x.c)->condition, "amqp:invalid-field");
    peer_free(&x);
}

static void test_delivery_id_far_past_the_oldest_unsettled_ends_session(void **state)
{
    (void)state;
    peer_t x;
    raw_sender(&x, 100);
    assert_int_equal(jn_amqp_link_flow(x.last_link, 10, false, false), 0);
    (void)out_frames(&x, (uint64_t[4]){0}, 4, NULL, 0);
    jn_amqp_perf_t p;
    transfer_init(&p, 0, false);
    assert_int_equal(raw_transfer(&x, &p, "a"), 0); /* held: unsettled */
    transfer_init(&p, 5, false);
    assert_int_equal(raw_transfer(&x, &p, "b"), 0); /* a gap is fine */
    transfer_init(&p, 1u << 20, false);
    assert_int_equal(raw_transfer(&x, &p, "c"), 0);
    char err[64];
    uint64_t codes[4];
    assert_int_equal(out_frames(&x, codes, 4, err, sizeof err), 1);
    assert_int_equal(codes[0], JN_AMQP_END);
    assert_string_equal(err, "amqp:resource-limit-exceeded");
    assert_int_equal(x.transfers, 2);
    peer_free(&x);
}

static void test_state_on_a_later_frame_reaches_the_user(void **state)
{
    (void)state;
    peer_t x;
    raw_sender(&x, 100);
    assert_int_equal(jn_amqp_link_flow(x.last_link, 10, false, false), 0);
    jn_amqp_perf_t p;
    transfer_init(&p, 0, true);
    assert_int_equal(raw_transfer(&x, &p, "one"), 0);
    assert_int_equal(x.last_state_code, 0);
    /* the last frame: settled, with a state of a symbolic descriptor */
    static const uint8_t custom[] = {0x00, 0xa3, 0x08, 'x', ':', 'c',
                                     'u',  's',  't',  'o', 'm', 0x45};
    jn_amqp_perf_init(&p, JN_AMQP_TRANSFER);
    p.u.transfer.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(4) | JN_AMQP_FIELD(7);
    p.u.transfer.settled = true;
    jn_iter_init_bytes(&p.u.transfer.state.encoded, custom, sizeof custom, JN_VIEW_RAW);
    assert_int_equal(raw_transfer(&x, &p, "two"), 0);
    assert_int_equal(x.transfers, 2);
    assert_true(x.last_state_symbolic);
    assert_int_equal(x.last_state_len, sizeof custom);
    assert_memory_equal(x.last_state, custom, sizeof custom);
    assert_true(x.last_transfer.settled);
    assert_int_equal(x.npayload, 6);
    assert_memory_equal(x.payload, "onetwo", 6);
    assert_int_equal(jn_amqp_link_state(x.last_link).credit, 9);
    peer_free(&x);
}

/* jn_amqp_delivery_set_state: the state goes on the delivery's first frame
 * only (a list32 transfer), whatever its type, and the frames after it are
 * plain continuations; too late once the first frame went out. */
static void test_state_set_goes_on_the_first_frame_only(void **state)
{
    (void)state;
    uint8_t msg[1500];
    memset(msg, 'm', sizeof msg);
    /* descriptor 0x9999 (not a state of 3.4), value [1, "two"] */
    static const uint8_t custom[] = {0x00, 0x80, 0, 0, 0, 0, 0, 0, 0x99, 0x99, 0xc0,
                                     0x08, 0x02, 0x52, 0x01, 0xa1, 0x03, 't',  'w',  'o'};
    for (size_t i = 0; i < NCHUNKS; i++) {
        peer_t a, b;
        jn_amqp_link_t *l = sender_pair(&a, &b, chunks[i], 512, 10);
        jn_amqp_delivery_t *d;
        assert_int_equal(jn_amqp_delivery_new(l, "st", 2, 0, false, &d), 0);
        jn_amqp_state_t st = {.code = 0x9999};
        jn_iter_init_bytes(&st.encoded, custom, sizeof custom, JN_VIEW_RAW);
        assert_int_equal(jn_amqp_delivery_set_state(d, &st), 0);
        jn_iter_t piece;
        jn_iter_init_bytes(&piece, msg, sizeof msg, JN_VIEW_RAW);
        size_t taken;
        assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, false, &taken), 1);
        assert_int_equal(jn_amqp_delivery_set_state(d, &st), JN_EPERM);
        pump(&a, &b);
        assert_true(b.transfers >= 3); /* 1500 octets in frames of 512 */
        assert_int_equal(b.npayload, sizeof msg);
        assert_memory_equal(b.payload, msg, sizeof msg);
        assert_int_equal(b.last_state_code, 0x9999);
        assert_int_equal(b.last_state_len, sizeof custom);
        assert_memory_equal(b.last_state, custom, sizeof custom);
        assert_false(b.last_transfer.present & JN_AMQP_FIELD(7)); /* the last frame: none */
        /* received (3.4.1), pre-settled, one frame */
        b.last_state_code = 0;
        assert_int_equal(jn_amqp_delivery_new(l, "rc", 2, 0, true, &d), 0);
        jn_amqp_state_t rc = {.code = JN_AMQP_RECEIVED,
                              .present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1),
                              .section_number = 2,
                              .section_offset = 5};
        assert_int_equal(jn_amqp_delivery_set_state(d, &rc), 0);
        jn_iter_init_bytes(&piece, "x", 1, JN_VIEW_RAW);
        assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, false, &taken), 1);
        pump(&a, &b);
        assert_int_equal(b.last_state_code, JN_AMQP_RECEIVED);
        assert_true(b.last_transfer.present & JN_AMQP_FIELD(7));
        assert_int_equal(b.last_transfer.state.section_number, 2);
        assert_int_equal(b.last_transfer.state.section_offset, 5);
        assert_true(b.last_transfer.settled);
        peer_free(&a);
        peer_free(&b);
    }
}

/* jn_amqp_delivery_set_state on a delivery in progress: its next frame
 * carries the state (a symbolic descriptor, octet for octet), as a
 * continuation (no delivery-id or tag), and only that frame. */
static void test_state_set_midway_goes_on_the_next_frame(void **state)
{
    (void)state;
    static const uint8_t custom[] = {0x00, 0xa3, 0x08, 'x', ':', 'c', 'u', 's',
                                     't',  'o',  'm',  0xc1, 0x03, 0x02, 0x41, 0x40};
    for (size_t i = 0; i < NCHUNKS; i++) {
        peer_t a, b;
        jn_amqp_link_t *l = sender_pair(&a, &b, chunks[i], 65536, 10);
        jn_amqp_delivery_t *d;
        assert_int_equal(jn_amqp_delivery_new(l, "m", 1, 0, false, &d), 0);
        jn_iter_t piece;
        size_t taken;
        jn_iter_init_bytes(&piece, "one", 3, JN_VIEW_RAW);
        assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, true, &taken), 0);
        pump(&a, &b);
        assert_false(b.last_transfer.present & JN_AMQP_FIELD(7));
        jn_amqp_state_t st = {.symbolic = true};
        jn_iter_init_bytes(&st.encoded, custom, sizeof custom, JN_VIEW_RAW);
        assert_int_equal(jn_amqp_delivery_set_state(d, &st), 0);
        jn_iter_init_bytes(&piece, "two", 3, JN_VIEW_RAW);
        assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, true, &taken), 0);
        pump(&a, &b);
        assert_int_equal(b.transfers, 2);
        assert_true(b.last_transfer.present & JN_AMQP_FIELD(7));
        assert_false(b.last_transfer.present & JN_AMQP_FIELD(1)); /* a continuation */
        assert_true(b.last_transfer.more);
        assert_true(b.last_state_symbolic);
        assert_int_equal(b.last_state_len, sizeof custom);
        assert_memory_equal(b.last_state, custom, sizeof custom);
        jn_iter_init_bytes(&piece, "three", 5, JN_VIEW_RAW);
        assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, false, &taken), 1);
        pump(&a, &b);
        assert_int_equal(b.transfers, 3);
        assert_false(b.last_transfer.present & JN_AMQP_FIELD(7)); /* that frame only */
        assert_int_equal(b.npayload, 11);
        assert_memory_equal(b.payload, "onetwothree", 11);
        assert_int_equal(jn_amqp_delivery_set_state(d, &st), JN_EPERM); /* sent whole */
        peer_free(&a);
        peer_free(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_frame_delivery_both_ends_count),
        cmocka_unit_test(test_multi_frame_split_at_max_frame_and_referenced),
        cmocka_unit_test(test_runs_send_the_frames_the_views_send),
        cmocka_unit_test(test_runs_given_hand_their_references_over),
        cmocka_unit_test(test_short_runs_copied_into_the_output),
        cmocka_unit_test(test_payload_filling_the_last_frame_exactly),
        cmocka_unit_test(test_output_taken_a_few_octets_at_a_time),
        cmocka_unit_test(test_remote_incoming_window_holds_frames_back),
        cmocka_unit_test(test_streamed_delivery_with_more),
        cmocka_unit_test(test_presettled_delivery_freed_both_ends),
        cmocka_unit_test(test_abort_midway_and_before_any_frame),
        cmocka_unit_test(test_no_credit_no_delivery),
        cmocka_unit_test(test_delivery_beyond_credit_detaches_the_link),
        cmocka_unit_test(test_tag_over_32_octets_is_taken_cut),
        cmocka_unit_test(test_transfer_beyond_window_ends_the_session),
        cmocka_unit_test(test_first_transfer_without_id_or_tag_is_invalid_field),
        cmocka_unit_test(test_continuation_with_another_id_is_invalid_field),
        cmocka_unit_test(test_transfer_on_peers_receiving_link_is_illegal_state),
        cmocka_unit_test(test_rcv_settle_mode_second_on_first_link_is_invalid_field),
        cmocka_unit_test(test_delivery_id_far_past_the_oldest_unsettled_ends_session),
        cmocka_unit_test(test_state_on_a_later_frame_reaches_the_user),
        cmocka_unit_test(test_state_set_goes_on_the_first_frame_only),
        cmocka_unit_test(test_state_set_midway_goes_on_the_next_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
