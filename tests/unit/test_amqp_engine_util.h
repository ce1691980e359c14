/*
 * test_amqp_engine_util.h — shared by the connection engine's unit tests
 * (test_amqp_conn.c, test_amqp_session.c, test_amqp_link.c): a peer is an
 * engine with a handler that records every event (copying what it needs,
 * since views live only during a callback); pump() carries each engine's
 * output to the other, split into buffers of a chosen size; raw frames
 * can be fed to an engine as a hostile peer would, and an engine's output
 * read back as frames; a sender link set up between two peers, and a
 * routed message's runs (test_amqp_transfer.c, test_amqp_nomem.c).
 */
#ifndef TEST_AMQP_ENGINE_UTIL_H
#define TEST_AMQP_ENGINE_UTIL_H 1

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/amqp_delivery.h>
#include <junction/pool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct peer {
    jn_amqp_conn_t *c;
    uint8_t pending[65536]; /* octets from the other side not yet consumed */
    size_t npending;
    size_t chunk; /* buffer size the input is split into (0: one run) */
    uint64_t now;
    bool answer; /* answer the peer's open, begin and attach */
    int opens, closes, closed, begins, ends, attaches, detaches, flows;
    char condition[128]; /* the last close, end, detach or fault condition */
    jn_amqp_session_t *last_session;
    jn_amqp_link_t *last_link;
    jn_amqp_flow_t last_flow;
    char last_address[64]; /* the last attach's target (or source) address */
    bool last_role;
    /* deliveries (test_amqp_transfer.c, test_amqp_disposition.c) */
    int transfers, dispositions;
    uint8_t payload[16384]; /* the payloads of the transfers, appended */
    size_t npayload;
    jn_amqp_delivery_t *last_delivery;
    jn_amqp_transfer_t last_transfer; /* views not valid after the callback */
    uint64_t last_state_code;         /* of the last transfer or disposition with one */
    bool last_state_symbolic;
    uint8_t last_state[64]; /* its encoding */
    size_t last_state_len;
    jn_amqp_disposition_t last_disposition;
    bool settle_on_disposition; /* settle each delivery the peer disposes of */
    bool last_remote_settled;   /* jn_amqp_delivery_remote_settled in the callback */
} peer_t;

static inline void copy_error(peer_t *p, const jn_amqp_error_t *err)
{
    p->condition[0] = 0;
    if (err->present & JN_AMQP_FIELD(0))
        jn_iter_copy_string(&err->condition, p->condition, sizeof p->condition);
}

static inline void ev_open(void *ctx, jn_amqp_conn_t *c, const jn_amqp_open_t *o)
{
    peer_t *p = ctx;
    p->opens++;
    (void)o;
    if (p->answer)
        (void)jn_amqp_conn_open(c);
}

static inline void ev_close(void *ctx, jn_amqp_conn_t *c, const jn_amqp_end_close_t *cl)
{
    peer_t *p = ctx;
    (void)c;
    p->closes++;
    copy_error(p, &cl->error);
}

static inline void ev_closed(void *ctx, jn_amqp_conn_t *c, const jn_amqp_fault_t *fault)
{
    peer_t *p = ctx;
    (void)c;
    p->closed++;
    snprintf(p->condition, sizeof p->condition, "%s", fault->condition);
}

static inline void ev_begin(void *ctx, jn_amqp_session_t *s, const jn_amqp_begin_t *b)
{
    peer_t *p = ctx;
    p->begins++;
    p->last_session = s;
    if (p->answer && !(b->present & JN_AMQP_FIELD(0)))
        assert_int_equal(jn_amqp_session_begin(s, 0, 100, 100), 0);
}

static inline void ev_end(void *ctx, jn_amqp_session_t *s, const jn_amqp_end_close_t *e)
{
    peer_t *p = ctx;
    p->ends++;
    if (p->last_session == s)
        p->last_session = NULL;
    copy_error(p, &e->error);
}

static inline void ev_attach(void *ctx, jn_amqp_link_t *l, const jn_amqp_attach_t *a)
{
    peer_t *p = ctx;
    p->attaches++;
    p->last_link = l;
    p->last_role = a->role;
    const jn_amqp_terminus_t *t = a->role == JN_AMQP_SENDER ? &a->target : &a->source;
    jn_iter_copy_string(&t->address, p->last_address, sizeof p->last_address);
    if (p->answer) {                  /* JN_EPERM when it answers ours */
        jn_amqp_attach_t answer = *a; /* the same termini back */
        answer.present &= JN_AMQP_FIELD(5) | JN_AMQP_FIELD(6);
        (void)jn_amqp_link_attach(l, &answer, 0);
    }
}

static inline void ev_detach(void *ctx, jn_amqp_link_t *l, const jn_amqp_detach_t *d)
{
    peer_t *p = ctx;
    p->detaches++;
    if (p->last_link == l)
        p->last_link = NULL;
    copy_error(p, &d->error);
}

static inline void ev_flow(void *ctx, jn_amqp_session_t *s, jn_amqp_link_t *l,
                           const jn_amqp_flow_t *f)
{
    peer_t *p = ctx;
    (void)s;
    (void)l;
    p->flows++;
    p->last_flow = *f;
}

static inline void copy_state(peer_t *p, const jn_amqp_state_t *st)
{
    p->last_state_code = st->code;
    p->last_state_symbolic = st->symbolic;
    jn_iter_t it = st->encoded;
    p->last_state_len = jn_iter_copy(&it, p->last_state, sizeof p->last_state);
}

static inline void ev_transfer(void *ctx, jn_amqp_link_t *l, jn_amqp_delivery_t *d,
                               const jn_amqp_transfer_t *t, const jn_iter_t *payload)
{
    peer_t *p = ctx;
    (void)l;
    p->transfers++;
    p->last_delivery = d;
    p->last_transfer = *t;
    if (t->present & JN_AMQP_FIELD(7))
        copy_state(p, &t->state);
    jn_iter_t it = *payload;
    p->npayload += jn_iter_copy(&it, p->payload + p->npayload, sizeof p->payload - p->npayload);
}

static inline void ev_disposition(void *ctx, jn_amqp_delivery_t *d,
                                  const jn_amqp_disposition_t *disp)
{
    peer_t *p = ctx;
    p->dispositions++;
    p->last_delivery = d;
    p->last_disposition = *disp;
    p->last_remote_settled = jn_amqp_delivery_remote_settled(d);
    if (disp->present & JN_AMQP_FIELD(4))
        copy_state(p, &disp->state);
    if (p->settle_on_disposition)
        assert_int_equal(jn_amqp_delivery_update(d, NULL, true), 0);
}

static inline void peer_init(peer_t *p, const char *id, uint32_t max_frame, uint16_t channel_max,
                             uint32_t idle)
{
    memset(p, 0, sizeof *p);
    p->answer = true;
    jn_amqp_conn_config_t cfg = {.container_id = id,
                                 .max_frame_size = max_frame,
                                 .channel_max = channel_max,
                                 .idle_time_out = idle};
    jn_amqp_handler_t h = {.ctx = p,
                           .on_open = ev_open,
                           .on_close = ev_close,
                           .on_closed = ev_closed,
                           .on_begin = ev_begin,
                           .on_end = ev_end,
                           .on_attach = ev_attach,
                           .on_detach = ev_detach,
                           .on_flow = ev_flow,
                           .on_transfer = ev_transfer,
                           .on_disposition = ev_disposition};
    p->c = jn_amqp_conn_new(&cfg, &h);
    assert_non_null(p->c);
}

static inline void peer_free(peer_t *p)
{
    jn_amqp_conn_free(p->c);
    p->c = NULL;
}

/* Feed p's pending octets to its engine, split into p->chunk-octet
 * buffers; keep what it did not consume. Returns the engine's result. */
static inline int peer_feed(peer_t *p)
{
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    jn_iter_t it;
    if (p->chunk == 0 || p->npending == 0) {
        jn_iter_init_bytes(&it, p->npending ? p->pending : (const uint8_t *)"", p->npending,
                           JN_VIEW_RAW);
    } else {
        assert_int_equal(jn_buffer_list_append_split(&list, p->pending, p->npending, p->chunk), 0);
        assert_int_equal(jn_iter_init(&it, list.head, 0, p->npending, JN_VIEW_RAW), 0);
    }
    size_t consumed = 0;
    int rc = jn_amqp_conn_input(p->c, &it, p->now, &consumed);
    jn_buffer_list_free(&list);
    assert_true(consumed <= p->npending);
    memmove(p->pending, p->pending + consumed, p->npending - consumed);
    p->npending -= consumed;
    return rc;
}

/* Append octets to p's pending input and feed them. */
static inline int peer_input(peer_t *p, const void *data, size_t len)
{
    assert_true(p->npending + len <= sizeof p->pending);
    memcpy(p->pending + p->npending, data, len);
    p->npending += len;
    return peer_feed(p);
}

/* a's whole output (every run, jn_amqp_conn_output_iov) copied to buf
 * (cap octets) and taken. Returns its length. */
static inline size_t take_all(peer_t *a, uint8_t *buf, size_t cap)
{
    struct iovec iov[64];
    size_t len = 0;
    int n;
    while ((n = jn_amqp_conn_output_iov(a->c, iov, 64)) > 0) {
        size_t took = 0;
        for (int i = 0; i < n; i++) {
            assert_true(len + iov[i].iov_len <= cap);
            memcpy(buf + len, iov[i].iov_base, iov[i].iov_len);
            len += iov[i].iov_len;
            took += iov[i].iov_len;
        }
        jn_amqp_conn_output_done(a->c, took);
    }
    return len;
}

/* Move a's output to b's input. Returns the octets moved. */
static inline size_t carry(peer_t *a, peer_t *b)
{
    static uint8_t buf[65536];
    size_t len = take_all(a, buf, sizeof buf);
    if (len)
        (void)peer_input(b, buf, len);
    return len;
}

/* Carry output both ways until neither side has any. */
static inline void pump(peer_t *a, peer_t *b)
{
    for (int i = 0; i < 100; i++)
        if (carry(a, b) + carry(b, a) == 0)
            return;
    fail_msg("the two engines never went quiet");
}

/* a (max frame a_max) and b (max frame b_max) open, a begins a session
 * and attaches a sender that b answers; b grants credit. Returns a's link. */
static inline jn_amqp_link_t *sender_pair(peer_t *a, peer_t *b, size_t chunk, uint32_t b_max,
                                   uint32_t credit)
{
    peer_init(a, "client", 65536, 255, 0);
    peer_init(b, "server", b_max, 255, 0);
    a->chunk = b->chunk = chunk;
    assert_int_equal(jn_amqp_conn_open(a->c), 0);
    jn_amqp_session_t *s = jn_amqp_session_new(a->c);
    assert_int_equal(jn_amqp_session_begin(s, 0xFFFFFFFEu, 100, 100), 0);
    jn_amqp_link_t *l = jn_amqp_link_new(s, "out", JN_AMQP_SENDER);
    assert_int_equal(jn_amqp_link_attach(l, &(jn_amqp_attach_t){0}, 0xFFFFFFFFu), 0);
    pump(a, b);
    assert_non_null(b->last_link);
    assert_int_equal(jn_amqp_link_flow(b->last_link, credit, false, false), 0);
    pump(a, b);
    assert_int_equal(jn_amqp_link_state(l).credit, credit);
    return l;
}

/* A message as a router sends it, cut into the runs it hands the engine:
 * a 7-octet header section, 82 octets of annotations and 153 of
 * properties and body (ROUTED_LEN in all, from msg), each in a buffer of
 * its own in lists[k], as runs[k] and as raw views pieces[k] (NULL: no
 * views). give: a reference of ours on each buffer, to be handed over. */
#define ROUTED_RUNS 3
#define ROUTED_LEN 242
static const size_t routed_lens[ROUTED_RUNS] = {7, 82, 153};

static inline void routed_runs(const uint8_t *msg, jn_buffer_list_t *lists, jn_amqp_run_t *runs,
                               jn_iter_t *pieces, bool give)
{
    size_t at = 0;
    for (size_t k = 0; k < ROUTED_RUNS; k++) {
        jn_buffer_list_init(&lists[k]);
        assert_int_equal(jn_buffer_list_append_split(&lists[k], msg + at, routed_lens[k], 512), 0);
        jn_buffer_t *bf = lists[k].head;
        runs[k] = (jn_amqp_run_t){.data = bf->data, .len = routed_lens[k], .buf = bf};
        if (pieces)
            assert_int_equal(jn_iter_init(&pieces[k], bf, 0, routed_lens[k], JN_VIEW_RAW), 0);
        if (give)
            (void)jn_buffer_ref(bf);
        at += routed_lens[k];
    }
}

/* After the output holding routed_runs' buffers was written: each is
 * back to its list's one reference; the lists are freed. */
static inline void routed_runs_free(jn_buffer_list_t *lists)
{
    for (size_t k = 0; k < ROUTED_RUNS; k++) {
        assert_int_equal(atomic_load(&lists[k].head->refcount), 1);
        jn_buffer_list_free(&lists[k]);
    }
}

/* Two engines open to each other (a starts). */
static inline void open_pair(peer_t *a, peer_t *b, size_t chunk)
{
    peer_init(a, "client", 65536, 255, 0);
    peer_init(b, "server", 65536, 255, 0);
    a->chunk = b->chunk = chunk;
    assert_int_equal(jn_amqp_conn_open(a->c), 0);
    pump(a, b);
    assert_int_equal(a->opens, 1);
    assert_int_equal(b->opens, 1);
}

/* ---- raw frames --------------------------------------------------------- */

/* Append p as one frame on channel to e. */
static inline void raw_frame(jn_encoder_t *e, uint16_t channel, const jn_amqp_perf_t *p)
{
    size_t start = jn_amqp_frame_begin(e, JN_AMQP_FRAME_AMQP, channel);
    assert_int_equal(jn_amqp_perf_encode(e, p), 0);
    assert_int_equal(jn_amqp_frame_end(e, start, UINT32_MAX), 0);
}

/* Feed p as one frame on channel to the engine of peer x. */
static inline int raw_send(peer_t *x, uint16_t channel, const jn_amqp_perf_t *p)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    raw_frame(&e, channel, p);
    size_t len;
    const uint8_t *d = jn_encoder_data(&e, &len);
    int rc = peer_input(x, d, len);
    jn_encoder_free(&e);
    return rc;
}

/* The codes of the frames in x's output (after a protocol header, if
 * any), in order, into codes (0 for a heartbeat); the output is taken.
 * If err is not NULL, the condition of the last close, end or detach is
 * copied there. Returns the count. */
static inline int out_frames(peer_t *x, uint64_t *codes, int max, char *err, size_t errcap)
{
    static uint8_t out[65536];
    size_t len = take_all(x, out, sizeof out);
    jn_iter_t it;
    jn_iter_init_bytes(&it, len ? out : (const uint8_t *)"", len, JN_VIEW_RAW);
    if (len >= 8 && memcmp(out, "AMQP", 4) == 0)
        jn_iter_advance(&it, 8);
    int n = 0;
    jn_amqp_frame_t f;
    jn_amqp_fault_t fault;
    while (jn_amqp_frame_read(&it, JN_AMQP_FRAME_AMQP, UINT32_MAX, 65535, &f, &fault) == 1) {
        jn_amqp_perf_t p = {0};
        if (f.body_size)
            assert_int_equal(jn_amqp_perf_decode(&f.body, JN_AMQP_FRAME_AMQP, &p, NULL, &fault), 0);
        if (n < max)
            codes[n] = p.code;
        n++;
        const jn_amqp_error_t *e = p.code == JN_AMQP_CLOSE    ? &p.u.close.error
                                   : p.code == JN_AMQP_END    ? &p.u.end.error
                                   : p.code == JN_AMQP_DETACH ? &p.u.detach.error
                                                              : NULL;
        if (err && e) {
            err[0] = 0;
            if (e->present & JN_AMQP_FIELD(0))
                jn_iter_copy_string(&e->condition, err, errcap);
        }
        jn_iter_advance(&it, f.size);
    }
    assert_int_equal(jn_iter_length(&it), 0);
    return n;
}

/* A raw peer's protocol header and open (container "raw"). */
static inline void raw_open(peer_t *x, uint32_t max_frame, uint16_t channel_max, uint32_t idle)
{
    uint8_t h[8];
    jn_amqp_header_write(h, JN_AMQP_PROTO_AMQP);
    assert_int_equal(peer_input(x, h, 8), 0);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_OPEN);
    p.u.open.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(2) | JN_AMQP_FIELD(3);
    jn_iter_init_string(&p.u.open.container_id, "raw", JN_VIEW_RAW);
    p.u.open.max_frame_size = max_frame;
    p.u.open.channel_max = channel_max;
    if (idle) {
        p.u.open.present |= JN_AMQP_FIELD(4);
        p.u.open.idle_time_out = idle;
    }
    assert_int_equal(raw_send(x, 0, &p), 0);
}

#endif
