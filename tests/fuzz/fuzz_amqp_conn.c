/*
 * fuzz_amqp_conn.c — libFuzzer target for the connection engine
 * (junction/amqp_engine.h): a peer's octet stream driving a connection,
 * its sessions and links, with a user that answers every open, begin and
 * attach, grants credit to each receiver, reports drains and available on
 * each sender, and ends or detaches now and then; and deliveries
 * (junction/amqp_delivery.h): each sender sends a message of 1,500 octets
 * from pooled buffers whenever it has credit (pre-settled on odd handles,
 * aborted when the window holds it back), each transfer received is
 * accepted, settled or left by its delivery-id, the incoming window is
 * reopened when low, and the peer's dispositions are settled now and then.
 *
 * Input: a control octet (fuzz_input.h: the size of each piece of the
 * stream as it arrives, and the buffer split; top bit: we open first) then
 * the stream. The stream is handed to the engine piece by piece as a
 * socket would, the unconsumed rest kept and handed again; the clock
 * advances with each piece and drives the idle timer.
 *
 * Checks, any of which aborts: the engine returns only 0 or JN_EPROTO;
 * once it refuses, its fault has a condition and the connection is
 * finished; when it has not, what it left unconsumed is less than one
 * whole frame (it always progresses or closes); its output is our protocol
 * header then whole frames, each within the peer's max-frame-size, that
 * decode as performatives (a transfer's payload within its frame), and a
 * refusal after the header exchange ends it with a close. No read out of
 * bounds, no leak, no hang.
 */
#include "fuzz_input.h"

#include <junction/amqp_delivery.h>
#include <junction/pool.h>
#include <stdlib.h>
#include <string.h>

static void on_open(void *ctx, jn_amqp_conn_t *c, const jn_amqp_open_t *o)
{
    (void)ctx;
    (void)o;
    (void)jn_amqp_conn_open(c);
}

static void on_begin(void *ctx, jn_amqp_session_t *s, const jn_amqp_begin_t *b)
{
    (void)ctx;
    (void)jn_amqp_session_begin(s, b->next_outgoing_id ^ 0x80000000u, 100, 100);
}

static void on_attach(void *ctx, jn_amqp_link_t *l, const jn_amqp_attach_t *a)
{
    (void)ctx;
    jn_amqp_attach_t answer = *a; /* the peer's termini back */
    answer.present &= JN_AMQP_FIELD(5) | JN_AMQP_FIELD(6) | JN_AMQP_FIELD(3) | JN_AMQP_FIELD(4);
    (void)jn_amqp_link_attach(l, &answer, 0xFFFFFFF0u);
    if (jn_amqp_link_role(l) == JN_AMQP_RECEIVER)
        (void)jn_amqp_link_flow(l, 10, a->handle % 3 == 0, a->handle % 5 == 0);
    else if (a->handle % 7 == 0)
        (void)jn_amqp_link_detach(l, true, "amqp:not-found", "no such node");
}

/* The message every sender sends, in pooled buffers (the input's split). */
static jn_buffer_list_t message;

static void send_message(jn_amqp_link_t *l)
{
    jn_amqp_delivery_t *d;
    uint32_t h = jn_amqp_link_handle(l);
    if (jn_amqp_delivery_new(l, "tag", 3, 0, h % 2 == 1, &d) != 0)
        return;
    jn_iter_t pieces[2];
    size_t len = jn_buffer_list_length(&message);
    if (jn_iter_init(&pieces[0], message.head, 0, len / 3, JN_VIEW_RAW) != 0 ||
        jn_iter_init(&pieces[1], message.head, len / 3, len - len / 3, JN_VIEW_RAW) != 0)
        abort();
    size_t taken;
    int rc = jn_amqp_delivery_send(d, pieces, 2, false, &taken);
    if (rc != 0 && rc != 1 && rc != JN_ENOMEM)
        abort();
    if (rc == 0)
        (void)jn_amqp_delivery_abort(d); /* the window held it back */
}

static void on_transfer(void *ctx, jn_amqp_link_t *l, jn_amqp_delivery_t *d,
                        const jn_amqp_transfer_t *t, const jn_iter_t *payload)
{
    (void)ctx;
    (void)payload;
    jn_amqp_session_t *s = jn_amqp_link_session(l);
    if (jn_amqp_session_window(s).incoming_window < 2)
        (void)jn_amqp_session_set_incoming_window(s, 10);
    if (t->more || t->aborted)
        return;
    jn_amqp_state_t accepted = {.code = JN_AMQP_ACCEPTED};
    switch (jn_amqp_delivery_id(d) % 3) {
    case 0:
        (void)jn_amqp_delivery_update(d, &accepted, true);
        break;
    case 1:
        (void)jn_amqp_delivery_update(d, (t->present & JN_AMQP_FIELD(7)) ? &t->state : NULL, false);
        break;
    default:
        break;
    }
    if (jn_amqp_link_state(l).credit == 0)
        (void)jn_amqp_link_flow(l, 3, false, false);
}

static void on_disposition(void *ctx, jn_amqp_delivery_t *d, const jn_amqp_disposition_t *disp)
{
    (void)ctx;
    if (!disp->settled && jn_amqp_delivery_id(d) % 2 == 0)
        (void)jn_amqp_delivery_update(d, NULL, true);
}

static void on_flow(void *ctx, jn_amqp_session_t *s, jn_amqp_link_t *l, const jn_amqp_flow_t *f)
{
    (void)ctx;
    if (!l) {
        if (f->incoming_window == 13)
            (void)jn_amqp_session_end(s, "amqp:internal-error", NULL);
        return;
    }
    if (jn_amqp_link_role(l) == JN_AMQP_SENDER) {
        if (jn_amqp_link_state(l).credit > 0 && f->link_credit % 4 != 3)
            send_message(l);
        if (jn_amqp_link_drained(l) == 0)
            (void)jn_amqp_link_available(l, f->link_credit / 2);
    } else if (jn_amqp_link_state(l).credit == 0) {
        (void)jn_amqp_link_flow(l, 5, false, false);
    }
}

/* Take c's output and check it: our protocol header first, then whole
 * frames within the peer's max-frame-size, each decoding; *last_close
 * tells whether the last frame was a close. */
static void take_output(jn_amqp_conn_t *c, bool *header_seen, bool *last_close)
{
    /* every run (frames and the payload referenced between them) */
    struct iovec iov[64];
    size_t len = 0, cap = 0;
    uint8_t *out = NULL;
    int n;
    while ((n = jn_amqp_conn_output_iov(c, iov, 64)) > 0) {
        size_t took = 0;
        for (int i = 0; i < n; i++) {
            if (len + iov[i].iov_len > cap) {
                cap = (len + iov[i].iov_len) * 2;
                out = realloc(out, cap);
                if (!out)
                    abort();
            }
            memcpy(out + len, iov[i].iov_base, iov[i].iov_len);
            len += iov[i].iov_len;
            took += iov[i].iov_len;
        }
        jn_amqp_conn_output_done(c, took);
    }
    jn_iter_t it;
    jn_iter_init_bytes(&it, len ? out : (const uint8_t *)"", len, JN_VIEW_RAW);
    if (!*header_seen && len > 0) {
        if (len < JN_AMQP_HEADER_SIZE || memcmp(out, "AMQP\x00\x01\x00\x00", 8) != 0)
            abort();
        *header_seen = true;
        jn_iter_advance(&it, JN_AMQP_HEADER_SIZE);
    }
    jn_amqp_frame_t f;
    jn_amqp_fault_t fault;
    while (jn_iter_length(&it) > 0) {
        if (jn_amqp_frame_read(&it, JN_AMQP_FRAME_AMQP, jn_amqp_conn_remote_max_frame(c), 65535, &f,
                               &fault) != 1)
            abort(); /* only whole frames within the peer's max-frame-size */
        jn_amqp_perf_t p = {0};
        if (f.body_size && jn_amqp_perf_decode(&f.body, JN_AMQP_FRAME_AMQP, &p, NULL, &fault) != 0)
            abort();
        *last_close = p.code == JN_AMQP_CLOSE;
        jn_iter_advance(&it, f.size);
    }
    free(out);
}

/* After an input call: the documented results only, and progress. */
static void check_input(jn_amqp_conn_t *c, int rc, const jn_iter_t *left, bool header_rcvd)
{
    if (rc != 0 && rc != JN_EPROTO)
        abort();
    if (rc == JN_EPROTO) {
        if (!jn_amqp_conn_fault(c)->condition || !jn_amqp_conn_finished(c))
            abort();
        return;
    }
    if (jn_amqp_conn_finished(c) || jn_iter_length(left) == 0)
        return;
    jn_amqp_frame_t f;
    jn_amqp_fault_t fault;
    jn_amqp_proto_t proto;
    int again = header_rcvd ? jn_amqp_frame_read(left, JN_AMQP_FRAME_AMQP, 65536, 255, &f, &fault)
                            : jn_amqp_header_read(left, &proto, &fault);
    if (again != JN_AGAIN)
        abort(); /* a whole frame (or header) left unread without a refusal */
}

static void drive(jn_amqp_conn_t *c, const uint8_t *data, size_t size, size_t piece, size_t chunk)
{
    jn_buffer_list_t list;
    bool header_seen = false, last_close = false, header_rcvd = false;
    size_t done = 0, have = 0;
    uint64_t now = 1000;
    int rc = 0;
    while (have < size) {
        have = have + piece < size ? have + piece : size;
        now += 7;
        jn_buffer_list_init(&list);
        if (jn_buffer_list_append_split(&list, data + done, have - done, chunk) != 0)
            abort();
        jn_iter_t in;
        if (jn_iter_init(&in, list.head, 0, have - done, JN_VIEW_RAW) != 0)
            abort();
        size_t consumed;
        rc = jn_amqp_conn_input(c, &in, now, &consumed);
        if (consumed > have - done)
            abort();
        jn_iter_advance(&in, consumed);
        done += consumed;
        header_rcvd = header_rcvd || (rc == 0 && done >= JN_AMQP_HEADER_SIZE);
        check_input(c, rc, &in, header_rcvd);
        jn_buffer_list_free(&list);
        (void)jn_amqp_conn_tick(c, now);
        take_output(c, &header_seen, &last_close);
    }
    if (rc == JN_EPROTO && header_rcvd && !last_close)
        abort(); /* a refusal after the header exchange ends with a close */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    jn_amqp_conn_config_t cfg = {
        .container_id = "fuzz", .max_frame_size = 65536, .channel_max = 255, .idle_time_out = 500};
    jn_amqp_handler_t h = {.on_open = on_open,
                           .on_begin = on_begin,
                           .on_attach = on_attach,
                           .on_flow = on_flow,
                           .on_transfer = on_transfer,
                           .on_disposition = on_disposition};
    static uint8_t body[1500];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (uint8_t)i;
    jn_buffer_list_init(&message);
    size_t chunk = jn_fuzz_chunk(data[0]) * 16; /* buffers of 16 to 512 octets */
    if (jn_buffer_list_append_split(&message, body, sizeof body,
                                    chunk < JN_BUFFER_CAPACITY ? chunk : JN_BUFFER_CAPACITY) != 0)
        abort();
    jn_amqp_conn_t *c = jn_amqp_conn_new(&cfg, &h);
    if (!c)
        abort();
    if (jn_fuzz_flag(data[0])) {
        (void)jn_amqp_conn_open(c);
        jn_amqp_session_t *s = jn_amqp_session_new(c);
        if (s && jn_amqp_session_begin(s, 0xFFFFFFFFu, 10, 10) == 0) {
            jn_amqp_link_t *l = jn_amqp_link_new(s, "fuzz-out", JN_AMQP_SENDER);
            if (l)
                (void)jn_amqp_link_attach(l, &(jn_amqp_attach_t){0}, 0);
        }
    }
    static const size_t pieces[8] = {1, 3, 8, 17, 64, 512, 4096, 1 << 20};
    drive(c, data + 1, size - 1, pieces[(data[0] >> 3) & 7], jn_fuzz_chunk(data[0]));
    jn_amqp_conn_free(c);
    jn_buffer_list_free(&message);
    return 0;
}
