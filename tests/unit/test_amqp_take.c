/*
 * test_amqp_take.c — input by reference (jn_amqp_transport_take in
 * junction/amqp_transport.h): a receiver that keeps each transfer's
 * payload in a message takes the whole buffers inside it out of the
 * transport's input and links them into the message, copying only the
 * octets around them, as router/io/io_own_rx.c does. Proven against the
 * engine as a sending peer, with frames of 1,024, 4,096 and 16,384 octets
 * read in pieces of 1, 7, 100, 512, 1,000 and 65,536 octets: the messages
 * arrive exactly (the frames after each splice are read right, so the
 * input chain stayed whole), most octets of a large one are taken, at
 * most two buffers' worth per frame are copied, every buffer taken is
 * full and lay inside the payload; a delivery aborted midway leaves
 * nothing behind; a small payload and a call outside on_transfer take
 * nothing. Every buffer is back in the pool at the end (the leak check).
 */
#include "test_amqp_engine_util.h"
#include "test_message_util.h"

#include <junction/amqp_transport.h>

#define N_MSG 3
static const size_t bodies[N_MSG] = {20000, 300, 9000};
static uint8_t sent[N_MSG][20000];

/* ---- the receiver: a transport whose user keeps payloads in messages --- */

typedef struct srv {
    jn_amqp_transport_t *t;
    jn_message_t *msg;    /* the delivery being received */
    size_t taken, copied; /* octets of payloads linked, and copied */
    size_t frames;        /* transfer frames with a payload */
    int done, aborted;
    uint8_t got[N_MSG][20000]; /* the messages received whole */
    size_t got_len[N_MSG];
} srv_t;

static void srv_open(void *ctx, jn_amqp_conn_t *c, const jn_amqp_open_t *o)
{
    (void)ctx;
    (void)o;
    assert_int_equal(jn_amqp_conn_open(c), 0);
}

static void srv_begin(void *ctx, jn_amqp_session_t *s, const jn_amqp_begin_t *b)
{
    (void)ctx;
    if (!(b->present & JN_AMQP_FIELD(0)))
        assert_int_equal(jn_amqp_session_begin(s, 0, 1000, 1000), 0);
}

static void srv_attach(void *ctx, jn_amqp_link_t *l, const jn_amqp_attach_t *a)
{
    (void)ctx;
    jn_amqp_attach_t answer = *a;
    answer.present &= JN_AMQP_FIELD(5) | JN_AMQP_FIELD(6);
    assert_int_equal(jn_amqp_link_attach(l, &answer, 0), 0);
    assert_int_equal(jn_amqp_link_flow(l, 10, false, false), 0);
}

/* Copy the octets left in it to the end of m. */
static size_t copy_into(jn_message_t *m, jn_iter_t *it)
{
    size_t n = 0;
    while (!jn_iter_end(it)) {
        uint8_t *p;
        size_t cap;
        assert_int_equal(jn_message_write_space(m, &p, &cap), 0);
        size_t k = jn_iter_copy(it, p, cap);
        jn_message_write_commit(m, k);
        n += k;
    }
    return n;
}

static void srv_transfer(void *ctx, jn_amqp_link_t *l, jn_amqp_delivery_t *d,
                         const jn_amqp_transfer_t *t, const jn_iter_t *payload)
{
    srv_t *s = ctx;
    (void)l;
    (void)d;
    if (!s->msg)
        assert_non_null(s->msg = jn_message_new());
    if (t->aborted) {
        s->aborted++;
        jn_message_unref(s->msg);
        s->msg = NULL;
        return;
    }
    size_t len = jn_iter_length(payload);
    s->frames += len > 0;
    jn_iter_t it = *payload, rest;
    jn_buffer_list_t whole;
    size_t taken = jn_amqp_transport_take(s->t, &it, &whole, &rest);
    size_t head = jn_iter_length(&it), tail = jn_iter_length(&rest);
    assert_int_equal(head + taken + tail, len);
    if (len <= JN_BUFFER_CAPACITY + 1)
        assert_int_equal(taken, 0);
    size_t k = 0;
    for (const jn_buffer_t *b = whole.head; b; b = jn_buffer_next(b), k++)
        assert_int_equal(jn_buffer_size(b), JN_BUFFER_CAPACITY); /* full, whole */
    assert_int_equal(k * JN_BUFFER_CAPACITY, taken);
    /* what the message gets is the payload, in order */
    s->copied += copy_into(s->msg, &it);
    assert_int_equal(jn_message_append_buffers(s->msg, &whole), 0);
    s->taken += taken;
    s->copied += copy_into(s->msg, &rest);
    if (t->more)
        return;
    assert_true(s->done < N_MSG);
    size_t n = jn_message_length(s->msg);
    assert_true(n <= sizeof s->got[0]);
    jn_iter_t all;
    assert_int_equal(jn_iter_init(&all, jn_message_buffers(s->msg), 0, n, JN_VIEW_RAW), 0);
    s->got_len[s->done] = jn_iter_copy(&all, s->got[s->done], n);
    s->done++;
    jn_message_unref(s->msg);
    s->msg = NULL;
}

static void srv_init(srv_t *s, uint32_t max_frame)
{
    memset(s, 0, sizeof *s);
    jn_amqp_conn_config_t cfg = {
        .container_id = "router", .max_frame_size = max_frame, .channel_max = 31};
    jn_amqp_handler_t h = {.ctx = s,
                           .on_open = srv_open,
                           .on_begin = srv_begin,
                           .on_attach = srv_attach,
                           .on_transfer = srv_transfer};
    s->t = jn_amqp_transport_new(&cfg, &h);
    assert_non_null(s->t);
}

/* ---- carrying octets --------------------------------------------------- */

/* The client's output into the transport, in reads of at most chunk
 * octets scattered over the iovecs offered (as readv would); each read is
 * processed at once. */
static void client_to_srv(peer_t *a, srv_t *s, size_t chunk)
{
    static uint8_t out[262144];
    size_t len = take_all(a, out, sizeof out), at = 0;
    while (at < len) {
        size_t n = len - at < chunk ? len - at : chunk, done = 0;
        struct iovec iov[8];
        int k = jn_amqp_transport_read_space(s->t, iov, 8, n);
        assert_true(k >= 1);
        for (int i = 0; i < k && done < n; i++) {
            size_t m = n - done < iov[i].iov_len ? n - done : iov[i].iov_len;
            memcpy(iov[i].iov_base, out + at + done, m);
            done += m;
        }
        jn_amqp_transport_read_done(s->t, done);
        assert_int_equal(jn_amqp_transport_process(s->t, 0), 0);
        at += done;
    }
}

static size_t srv_to_client(srv_t *s, peer_t *a)
{
    static uint8_t buf[65536];
    struct iovec iov[64];
    size_t len = 0;
    int n;
    while ((n = jn_amqp_transport_output_iov(s->t, iov, 64)) > 0) {
        size_t took = 0;
        for (int i = 0; i < n; i++) {
            assert_true(len + iov[i].iov_len <= sizeof buf);
            memcpy(buf + len, iov[i].iov_base, iov[i].iov_len);
            len += iov[i].iov_len;
            took += iov[i].iov_len;
        }
        jn_amqp_transport_output_done(s->t, took);
    }
    if (len)
        (void)peer_input(a, buf, len);
    return len;
}

static void pump_both(peer_t *a, srv_t *s, size_t chunk)
{
    for (int i = 0; i < 100; i++) {
        client_to_srv(a, s, chunk);
        if (srv_to_client(s, a) == 0)
            return;
    }
    fail_msg("the two sides never went quiet");
}

/* ---- the tests --------------------------------------------------------- */

/* The client sends the N_MSG bodies on one link; with abort, the second is
 * aborted after its first 3,000 octets went out. */
static void exchange(uint32_t max_frame, size_t chunk, bool abort)
{
    for (size_t m = 0; m < N_MSG; m++)
        for (size_t i = 0; i < bodies[m]; i++)
            sent[m][i] = (uint8_t)(i * 7 + (i >> 9) + m * 5);
    srv_t s;
    peer_t a;
    srv_init(&s, max_frame);
    peer_init(&a, "client", 65536, 255, 0);
    assert_int_equal(jn_amqp_conn_open(a.c), 0);
    jn_amqp_session_t *ss = jn_amqp_session_new(a.c);
    assert_int_equal(jn_amqp_session_begin(ss, 0xFFFFFFFEu, 1000, 1000), 0);
    jn_amqp_link_t *l = jn_amqp_link_new(ss, "in", JN_AMQP_SENDER);
    assert_int_equal(jn_amqp_link_attach(l, &(jn_amqp_attach_t){0}, 0xFFFFFFFFu), 0);
    pump_both(&a, &s, chunk);
    for (size_t m = 0; m < N_MSG; m++) {
        jn_amqp_delivery_t *d;
        assert_int_equal(jn_amqp_delivery_new(l, &m, 1, 0, true, &d), 0);
        jn_iter_t piece;
        size_t taken;
        if (abort && m == 1) {
            jn_iter_init_bytes(&piece, sent[m], 3000, JN_VIEW_RAW);
            assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, true, &taken), 0);
            pump_both(&a, &s, chunk);
            assert_int_equal(jn_amqp_delivery_abort(d), 0);
        } else {
            jn_iter_init_bytes(&piece, sent[m], bodies[m], JN_VIEW_RAW);
            assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, false, &taken), 1);
        }
        pump_both(&a, &s, chunk);
    }
    assert_int_equal(s.done, abort ? N_MSG - 1 : N_MSG);
    assert_int_equal(s.aborted, abort ? 1 : 0);
    for (size_t m = 0, g = 0; m < N_MSG; m++) {
        if (abort && m == 1)
            continue;
        assert_int_equal(s.got_len[g], bodies[m]);
        assert_memory_equal(s.got[g], sent[m], bodies[m]);
        g++;
    }
    /* at most two buffers' worth copied per frame; the rest taken */
    assert_true(s.copied <= s.frames * 2 * JN_BUFFER_CAPACITY);
    assert_true(s.taken > 0);
    if (max_frame >= 4096)
        assert_true(s.taken * 2 > s.taken + s.copied); /* most of it */
    assert_null(jn_amqp_transport_fault(s.t)->condition);
    jn_message_unref(s.msg);
    jn_amqp_transport_free(s.t);
    peer_free(&a);
}

static const size_t chunks[] = {1, 7, 100, 512, 1000, 65536};
#define N_CHUNKS (sizeof chunks / sizeof chunks[0])

static void test_take_links_whole_buffers_and_the_stream_reads_on(void **state)
{
    (void)state;
    static const uint32_t frames[] = {1024, 4096, 16384};
    for (size_t f = 0; f < 3; f++)
        for (size_t c = 0; c < N_CHUNKS; c++)
            exchange(frames[f], chunks[c], false);
}

static void test_take_with_an_aborted_delivery_between(void **state)
{
    (void)state;
    for (size_t c = 0; c < N_CHUNKS; c++)
        exchange(4096, chunks[c], true);
}

static void test_take_outside_on_transfer_takes_nothing(void **state)
{
    (void)state;
    srv_t s;
    srv_init(&s, 4096);
    jn_buffer_list_t list, whole;
    jn_buffer_list_init(&list);
    for (size_t i = 0; i < 3 * JN_BUFFER_CAPACITY; i++)
        sent[0][i] = (uint8_t)i;
    assert_int_equal(jn_buffer_list_append_bytes(&list, sent[0], 3 * JN_BUFFER_CAPACITY), 0);
    jn_iter_t it, rest;
    assert_int_equal(jn_iter_init(&it, list.head, 1, 2 * JN_BUFFER_CAPACITY, JN_VIEW_RAW), 0);
    assert_int_equal(jn_amqp_transport_take(s.t, &it, &whole, &rest), 0);
    assert_null(whole.head);
    assert_int_equal(jn_iter_length(&it), 2 * JN_BUFFER_CAPACITY);
    assert_int_equal(jn_iter_length(&rest), 0);
    jn_buffer_list_free(&list);
    jn_amqp_transport_free(s.t);
}

static void test_no_leak(void **state)
{
    (void)state;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_take_links_whole_buffers_and_the_stream_reads_on),
        cmocka_unit_test(test_take_with_an_aborted_delivery_between),
        cmocka_unit_test(test_take_outside_on_transfer_takes_nothing),
        cmocka_unit_test(test_no_leak),
    };
    return finish_tests(cmocka_run_group_tests(tests, NULL, NULL));
}
