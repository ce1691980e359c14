/*
 * transfer.c — the connection engine's transfers both ways (AMQP 1.0 part
 * 2: 2.6.12 transferring a message, 2.7.5 transfer), with the windows and
 * credit they use (2.5.6 session windows, 2.6.7 link credit).
 *
 * Incoming: each frame is checked and counted against the session's
 * incoming window, the first frame of a delivery against the link's credit,
 * and then handed to the user with its payload as a view of the input
 * octets (never copied). Outgoing: the user's message octets, given as raw
 * views, are split at the peer's max-frame-size; for each frame the engine
 * composes the header and the transfer performative and references the
 * payload runs after it (output.c), or copies a short run in (INLINE_MAX),
 * within the peer's incoming window. The contract is in
 * junction/amqp_delivery.h.
 */
#include "engine_private.h"

#include <junction/copies.h>

#include <stdlib.h>
#include <string.h>

#define INVALID_FIELD "amqp:invalid-field"

/* ---- incoming ------------------------------------------------------------ */

/* The first frame of a delivery (2.6.12, 2.7.5): a delivery-id after the
 * last one and a tag are required, and one link credit is used (2.6.7).
 * Returns 0 with *out, 1 when the frame is dropped (its link or session
 * failed), or a negative result. */
static int delivery_start(jn_amqp_link_t *l, const jn_amqp_transfer_t *t, jn_amqp_delivery_t **out)
{
    jn_amqp_session_t *s = l->session;
    jn_amqp_conn_t *c = s->conn;
    if (!(t->present & JN_AMQP_FIELD(1)) || !(t->present & JN_AMQP_FIELD(2)))
        return jn_amqp_conn_refuse(
            c, INVALID_FIELD, "transfer on handle %u starts a delivery without a %s", t->handle,
            (t->present & JN_AMQP_FIELD(1)) ? "delivery-tag" : "delivery-id");
    /* a tag above 2.8.7's 32 octets is the user's to judge: kept cut, and
     * said (jn_amqp_delivery_tag_cut) */
    size_t tag_len = jn_iter_length(&t->delivery_tag);
    bool tag_cut = false;
    if (JN_UNLIKELY(tag_len > JN_AMQP_TAG_MAX)) {
        tag_len = JN_AMQP_TAG_MAX;
        tag_cut = true;
    }
    uint32_t next;
    if (jn_amqp_dtable_next(&s->received, &next) && jn_amqp_serial_lt(t->delivery_id, next))
        return jn_amqp_conn_refuse(c, INVALID_FIELD, "delivery-id %u, where %u or later belongs",
                                   t->delivery_id, next);
    if (s->received.count && (uint32_t)(t->delivery_id - s->received.base) >= JN_AMQP_SPAN_MAX) {
        int rc = jn_amqp_session_fail(s, "amqp:resource-limit-exceeded",
                                      "delivery-id %u is %u past the oldest one unsettled here",
                                      t->delivery_id, t->delivery_id - s->received.base);
        return rc < 0 ? rc : 1;
    }
    if (l->credit == 0) { /* 2.6.7: the sender has no credit */
        int rc = l->attach_sent ? 0 : jn_amqp_link_attach(l, &(jn_amqp_attach_t){0}, 0);
        if (rc == 0)
            rc = jn_amqp_link_detach(l, true, "amqp:link:transfer-limit-exceeded",
                                     "a delivery beyond the link's credit");
        return rc == JN_ENOMEM ? JN_ENOMEM : 1;
    }
    jn_amqp_delivery_t *d = jn_amqp_delivery_alloc();
    if (!d)
        return JN_ENOMEM;
    d->link = l;
    d->id = t->delivery_id;
    d->started = true;
    d->rcv_settle_mode = l->rcv_settle_mode;
    jn_iter_t tag = t->delivery_tag; /* tag_len <= JN_AMQP_TAG_MAX, cut above */
    if (JN_UNLIKELY(tag_cut))
        d->tag_cut = true; /* the rest of d was cleared */
    if (jn_iter_contiguous(&tag)) { /* the usual tag: one run */
        memcpy(d->tag, tag.cursor, tag_len);
        d->tag_len = (uint8_t)tag_len;
    } else {
        d->tag_len = (uint8_t)jn_iter_copy(&tag, d->tag, sizeof d->tag);
    }
    d->message_format = t->message_format;
    /* held under its id, even pre-settled, so the next id is known */
    if (jn_amqp_dtable_put(&s->received, d->id, d) != 0) {
        jn_amqp_delivery_free(d);
        return JN_ENOMEM;
    }
    d->held = true;
    l->delivery_count++;
    l->credit--;
    l->current = d;
    *out = d;
    return 0;
}

/* Checks of a transfer's link and fields that do not depend on its
 * delivery: a link we receive on, rcv-settle-mode (2.7.5). 1: drop it. */
static int transfer_check(jn_amqp_link_t *l, const jn_amqp_transfer_t *t)
{
    jn_amqp_conn_t *c = l->session->conn;
    if (l->role != JN_AMQP_RECEIVER)
        return jn_amqp_conn_refuse(c, "amqp:illegal-state",
                                   "transfer on handle %u, a link the peer attached as receiver",
                                   t->handle);
    if ((t->present & JN_AMQP_FIELD(6)) && t->rcv_settle_mode == 1 && l->rcv_settle_mode == 0)
        return jn_amqp_conn_refuse(
            c, INVALID_FIELD, "transfer with rcv-settle-mode second on a link negotiated first");
    if (l->detach_sent)
        return 1; /* we detached: its transfers until the peer's detach are dropped */
    jn_amqp_delivery_t *d = l->current;
    if (d && (t->present & JN_AMQP_FIELD(1)) && t->delivery_id != d->id)
        return jn_amqp_conn_refuse(
            c, INVALID_FIELD, "transfer on handle %u continues delivery %u with delivery-id %u",
            t->handle, d->id, t->delivery_id);
    return 0;
}

int jn_amqp_transfer_input(jn_amqp_session_t *s, const jn_amqp_transfer_t *t,
                           const jn_iter_t *payload)
{
    jn_amqp_conn_t *c = s->conn;
    jn_amqp_link_t *l = jn_amqp_slots_get(&s->remote_links, t->handle);
    if (!l)
        return jn_amqp_conn_refuse(c, "amqp:session:unattached-handle", /* as the screen */
                                   "transfer on handle %u, which is not attached", t->handle);
    if (s->w.incoming_window == 0) /* 2.5.6 */
        return jn_amqp_session_fail(s, "amqp:session:window-violation",
                                    "transfer %u beyond the session's incoming window",
                                    s->w.next_incoming_id);
    s->w.next_incoming_id++;
    s->w.incoming_window--;
    if (s->w.remote_outgoing_window)
        s->w.remote_outgoing_window--;
    int rc = transfer_check(l, t);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    jn_amqp_delivery_t *d = l->current;
    if (!d) {
        rc = delivery_start(l, t, &d);
        if (rc != 0)
            return rc < 0 ? rc : 0;
    }
    if (t->settled)
        d->remote_settled = true;
    if (!t->more || t->aborted) {
        d->complete = true;
        l->current = NULL;
    }
    d->busy = true;
    if (c->h.on_transfer)
        c->h.on_transfer(c->h.ctx, l, d, t, payload);
    d->busy = false;
    if (d->complete && (t->aborted || d->remote_settled || d->settled))
        jn_amqp_delivery_free(d);
    return 0;
}

/* ---- outgoing ------------------------------------------------------------ */

int jn_amqp_delivery_new(jn_amqp_link_t *l, const void *tag, size_t tag_len,
                         uint32_t message_format, bool settled, jn_amqp_delivery_t **out)
{
    if (l->role != JN_AMQP_SENDER || !l->attach_sent || !l->attach_rcvd || l->detach_sent ||
        l->current || !jn_amqp_link_sendable(l))
        return JN_EPERM;
    if (tag_len > JN_AMQP_TAG_MAX)
        return JN_EINVAL;
    if (l->credit == 0)
        return JN_AGAIN;
    jn_amqp_delivery_t *d = jn_amqp_delivery_alloc();
    if (!d)
        return JN_ENOMEM;
    d->link = l;
    d->outgoing = true;
    d->settled = settled;
    d->rcv_settle_mode = l->rcv_settle_mode;
    d->tag_len = (uint8_t)tag_len;
    if (tag_len)
        memcpy(d->tag, tag, tag_len);
    d->message_format = message_format;
    l->delivery_count++; /* 2.6.7: the credit is taken now */
    l->credit--;
    l->current = d;
    *out = d;
    return 0;
}

int jn_amqp_delivery_set_state(jn_amqp_delivery_t *d, const jn_amqp_state_t *state)
{
    if (!d->outgoing || d->complete)
        return JN_EPERM;
    jn_encoder_t e;
    jn_encoder_init(&e);
    int rc = jn_amqp_state_encode(&e, state);
    size_t len = 0;
    const uint8_t *enc = jn_encoder_data(&e, &len);
    uint8_t *copy = rc == 0 && len ? malloc(len) : NULL;
    if (rc == 0 && !copy)
        rc = len ? JN_ENOMEM : JN_EINVAL;
    if (rc == 0) {
        memcpy(copy, enc, len);
        free(d->state);
        d->state = copy;
        d->state_len = (uint32_t)len;
        d->state_at = 0; /* not composed yet */
    }
    jn_encoder_free(&e);
    return rc;
}

/* The octets a send takes its frames' payload from: raw views (pieces,
 * the one in hand copied in *cur) or runs (off octets of runs[k] taken;
 * give: the caller's references pass to the output with each run's last
 * octet, jn_amqp_delivery_send_runs). */
typedef struct payload {
    const jn_iter_t *pieces;
    const jn_amqp_run_t *runs;
    size_t n, k, off;
    jn_iter_t *cur;
    bool give;
} payload_t;

/* A payload run of at most INLINE_MAX octets is copied into the composed
 * output instead of referenced. The kernel pays for each iovec of a
 * sendmsg, about 33 ns on a loopback socket (docs/performance.md, "Short
 * runs copied into the output"), several times what copying 128 octets
 * and taking and dropping a buffer reference cost here. The short runs
 * are the pieces a router cuts a message into around the annotations it
 * re-encodes: the header section before them and the annotations
 * themselves (82 octets on a message that crossed one router). The rest
 * of a message, its properties and body, stays referenced when longer: a
 * 100-octet body with junction-bench's properties is a 153-octet run and
 * is not copied on its way out; a smaller message is, which costs less
 * than its iovec would. */
#define INLINE_MAX 128

/* Whether len payload octets go into the output as a copy: short, and
 * the output has room for them as it is, so the copy cannot fail (a run
 * given must not fail once its reference was taken over). */
static inline bool inline_fits(const jn_amqp_conn_t *c, size_t len)
{
    return len <= INLINE_MAX && c->out.capacity - c->out.size >= len && c->out.error == 0;
}

/* Copy len octets at data after what is composed in c's output (room
 * checked by inline_fits). They are a message's octets: counted. */
static inline void inline_run(jn_amqp_conn_t *c, const uint8_t *data, size_t len)
{
    memcpy(c->out.data + c->out.size, data, len);
    c->out.size += len;
    JN_COPIES_NOTE(len);
}

/* Reference (or copy, when short: inline_fits) n octets of src's runs
 * from run k on. A run given ends in a reference that takes the caller's
 * over, or is copied and the caller's reference dropped: room for one
 * reference per run is made first, so that nothing fails after one was
 * taken over (a frame rolled back would drop it). */
static int ref_runs(jn_amqp_conn_t *c, payload_t *src, size_t n)
{
    while (src->give && JN_UNLIKELY(c->refs_cap - c->nrefs < src->n - src->k))
        if (jn_amqp_out_refs_grow(c) != 0)
            return JN_ENOMEM;
    while (n > 0 && src->k < src->n) {
        const jn_amqp_run_t *r = &src->runs[src->k];
        size_t run = r->len - src->off;
        if (run > n) {
            run = n;
        } else if (src->give) { /* its last octet: the caller's reference goes with it */
            if (inline_fits(c, run)) {
                inline_run(c, r->data + src->off, run);
                jn_buffer_unref((jn_buffer_t *)r->buf); /* the caller's, given */
            } else {
                jn_amqp_out_ref_given(c, r->data + src->off, run, r->buf);
            }
            n -= run;
            src->k++;
            src->off = 0;
            continue;
        }
        if (run && inline_fits(c, run))
            inline_run(c, r->data + src->off, run);
        else if (run && jn_amqp_out_ref(c, r->data + src->off, run, r->buf) != 0)
            return JN_ENOMEM;
        src->off += run;
        n -= run;
        if (src->off == r->len) {
            src->k++;
            src->off = 0;
        }
    }
    return 0;
}

/* Reference (or copy, when short: inline_fits) n octets of src from its
 * piece k on (that piece's copy in *cur). A run is consumed by moving the
 * cursor inside it (the pieces are raw views with no prefix left,
 * jn_amqp_delivery_send checked): jn_iter_run moves to the next buffer
 * when the cursor reaches the run's end. */
static int ref_payload(jn_amqp_conn_t *c, payload_t *src, size_t n)
{
    if (src->runs)
        return ref_runs(c, src, n);
    while (n > 0 && src->k < src->n) {
        const uint8_t *p;
        const jn_buffer_t *buf;
        size_t run = jn_iter_run(src->cur, &p, &buf);
        if (run == 0) {
            if (++src->k < src->n)
                *src->cur = src->pieces[src->k];
            continue;
        }
        if (run > n)
            run = n;
        if (inline_fits(c, run))
            inline_run(c, p, run);
        else if (jn_amqp_out_ref(c, p, run, buf) != 0)
            return JN_ENOMEM;
        src->cur->cursor += run; /* as jn_iter_advance within a run */
        n -= run;
    }
    return 0;
}

/* Append uint v (AMQP 1.0 1.6.8) in its shortest encoding at o. Returns
 * the octets written (1, 2 or 5). */
static size_t put_uint(uint8_t *o, uint32_t v)
{
    if (v == 0) {
        o[0] = 0x43; /* uint0 */
        return 1;
    }
    if (v <= 0xff) {
        o[0] = 0x52; /* smalluint */
        o[1] = (uint8_t)v;
        return 2;
    }
    o[0] = 0x70;
    o[1] = (uint8_t)(v >> 24);
    o[2] = (uint8_t)(v >> 16);
    o[3] = (uint8_t)(v >> 8);
    o[4] = (uint8_t)v;
    return 5;
}

/* A frame header and the transfer performative of d's next frame (2.7.5),
 * more as given, composed straight into the output: this runs for every
 * frame a link sends, and the fields are few and known (the generic
 * encoder, jn_amqp_perf_encode, makes the same list). The first frame
 * carries handle, delivery-id, delivery-tag, message-format and settled
 * when set; a later one handle alone; more=true ends either. A list8
 * always holds it: at most 3 + 3 + 5 + 5 + 2 + JN_AMQP_TAG_MAX + 5 + 1 + 1
 * octets after the header's 8, so COMPOSE_MAX octets. When the output has
 * that room (it keeps what it grew to, so all but the first frames of a
 * connection), the octets are written in place, not composed aside and
 * copied in. */
#define COMPOSE_MAX (JN_AMQP_FRAME_HEADER_SIZE + 64)

static int compose_transfer_state(jn_amqp_conn_t *c, jn_amqp_delivery_t *d, bool more);

static int compose_transfer(jn_amqp_conn_t *c, jn_amqp_delivery_t *d, bool more)
{
    if (JN_UNLIKELY(d->state_len)) /* until a frame carrying it went out */
        return compose_transfer_state(c, d, more);
    jn_encoder_t *e = &c->out;
    uint8_t aside[COMPOSE_MAX];
    bool in_place = e->error == 0 && e->depth == 0 && e->capacity - e->size >= COMPOSE_MAX;
    uint8_t *o = in_place ? e->data + e->size : aside;
    const jn_amqp_link_t *l = d->link;
    uint16_t channel = l->session->channel;
    /* the frame header (2.3.1), its size written when the payload is
     * known; then the descriptor, smallulong 0x14, and list8's code */
    const uint8_t h[] = {0, 0, 0, 0, 2, JN_AMQP_FRAME_AMQP, (uint8_t)(channel >> 8),
                         (uint8_t)channel, 0x00, 0x53, (uint8_t)JN_AMQP_TRANSFER, 0xc0};
    memcpy(o, h, sizeof h);
    size_t n = sizeof h;
    size_t size_at = n++; /* list8: size and count follow */
    size_t count_at = n++;
    uint8_t count = 1;
    n += put_uint(o + n, l->handle);
    if (!d->started) {
        n += put_uint(o + n, l->session->next_delivery_id);
        o[n++] = 0xa0; /* vbin8 */
        o[n++] = (uint8_t)d->tag_len;
        /* the whole tag array, a fixed size copied inline, not a call:
         * the octets past tag_len are overwritten by the fields after it
         * or lie past the frame's end, and the room (COMPOSE_MAX) holds
         * the longest tag's */
        memcpy(o + n, d->tag, sizeof d->tag);
        n += d->tag_len;
        n += put_uint(o + n, d->message_format);
        count = 4;
        if (d->settled) {
            o[n++] = 0x41; /* true */
            count = 5;
        }
    }
    if (more) {
        while (count < 5) {
            o[n++] = 0x40; /* null */
            count++;
        }
        o[n++] = 0x41; /* more: true */
        count = 6;
    }
    o[size_at] = (uint8_t)(n - count_at);
    o[count_at] = count;
    if (JN_LIKELY(in_place)) {
        e->size += n; /* as jn_enc_raw leaves a top-level encoder */
        e->described_pending = false;
        return 0;
    }
    jn_enc_raw(e, o, n);
    return jn_encoder_error(e);
}

/* compose_transfer for a frame with a state (jn_amqp_delivery_set_state):
 * the fields up to state (7), rcv-settle-mode null, in a list32 since a
 * state may be of any size. A later frame has handle, more and state only
 * (2.7.5: a continuation may leave delivery-id, tag and format out). */
static int compose_transfer_state(jn_amqp_conn_t *c, jn_amqp_delivery_t *d, bool more)
{
    uint16_t frame_id = (uint16_t)(0x8000 | (d->link->session->w.next_outgoing_id & 0x7fff));
    if (d->state_at && d->state_at != frame_id) {
        /* the frame it was composed into went out (frame_sent moved the
         * id on; a frame rolled back did not): it goes on that one only */
        free(d->state);
        d->state = NULL;
        d->state_len = 0;
        return compose_transfer(c, d, more);
    }
    d->state_at = frame_id;
    uint8_t f[64]; /* 5 + 5 + 2 + JN_AMQP_TAG_MAX + 5 + 3 */
    size_t k = put_uint(f, d->link->handle);
    if (d->started) {
        memset(f + k, 0x40, 4); /* delivery-id, tag, format, settled: null */
        k += 4;
    } else {
        k += put_uint(f + k, d->link->session->next_delivery_id);
        f[k++] = 0xa0; /* vbin8 */
        f[k++] = (uint8_t)d->tag_len;
        memcpy(f + k, d->tag, d->tag_len);
        k += d->tag_len;
        k += put_uint(f + k, d->message_format);
        f[k++] = d->settled ? 0x41 : 0x40; /* settled: true or null */
    }
    f[k++] = more ? 0x41 : 0x40;       /* more: true or null */
    f[k++] = 0x40;                     /* rcv-settle-mode: null */
    uint16_t channel = d->link->session->channel;
    uint32_t size = (uint32_t)(4 + k + d->state_len); /* after the size: count, fields */
    const uint8_t o[] = {0, 0, 0, 0, 2, JN_AMQP_FRAME_AMQP, (uint8_t)(channel >> 8),
                         (uint8_t)channel, 0x00, 0x53, (uint8_t)JN_AMQP_TRANSFER,
                         0xd0, /* list32: size and count follow */
                         (uint8_t)(size >> 24), (uint8_t)(size >> 16), (uint8_t)(size >> 8),
                         (uint8_t)size, 0, 0, 0, 8};
    jn_enc_raw(&c->out, o, sizeof o);
    jn_enc_raw(&c->out, f, k);
    jn_enc_raw(&c->out, d->state, d->state_len);
    return jn_encoder_error(&c->out);
}

/* A frame of d went out: the delivery-id is taken on the first, and one
 * transfer of the peer's incoming window (2.5.6). */
static int frame_sent(jn_amqp_delivery_t *d)
{
    jn_amqp_session_t *s = d->link->session;
    s->w.next_outgoing_id++;
    s->w.remote_incoming_window--;
    s->conn->last_out = s->conn->now;
    if (d->started)
        return 0;
    d->started = true;
    d->id = s->next_delivery_id++;
    if (d->settled)
        return 0;
    int rc = jn_amqp_dtable_put(&s->sent, d->id, d);
    d->held = rc == 0;
    return rc;
}

/* Write the size of the frame begun at start: head octets composed
 * before its payload, and payload octets (referenced, or copied in after
 * the head). */
static void frame_size(jn_amqp_conn_t *c, size_t start, size_t head, size_t payload)
{
    uint32_t size = (uint32_t)(head + payload);
    uint8_t *h = c->out.data + start;
    h[0] = (uint8_t)(size >> 24);
    h[1] = (uint8_t)(size >> 16);
    h[2] = (uint8_t)(size >> 8);
    h[3] = (uint8_t)size;
}

/* One frame of d with up to *left payload octets from the pieces; *n is
 * set to the octets it carries (0 when it was rolled back; a frame whose
 * only failure is frame_sent's, the unsettled table out of memory, stays
 * in the output with them). The performative is first composed as the
 * last frame's (more=false, the shorter encoding): a message that fits one
 * frame, the common case, is composed once; only when the payload does not
 * fit is it composed again with more=true, which leaves less room, so the
 * frame is then not the last. Returns 0 or an output error. */
static int send_frame(jn_amqp_delivery_t *d, payload_t *src, size_t left, bool more, size_t *n)
{
    jn_amqp_conn_t *c = d->link->session->conn;
    size_t start = c->out.size;
    int rc = compose_transfer(c, d, more);
    size_t head = c->out.size - start;
    if (rc == 0 && !more && head < c->remote_max_frame && left > c->remote_max_frame - head) {
        jn_amqp_out_rollback(c, start); /* not the last frame after all */
        rc = compose_transfer(c, d, true);
        head = c->out.size - start;
    }
    if (rc == 0 && head >= c->remote_max_frame)
        rc = JN_EOVERFLOW;
    if (rc == 0) {
        size_t room = c->remote_max_frame - head;
        *n = left < room ? left : room;
        rc = ref_payload(c, src, *n);
    }
    if (rc == 0)
        rc = jn_encoder_error(&c->out);
    if (rc != 0) {
        jn_amqp_out_rollback(c, start);
        *n = 0; /* nothing of it stays in the output */
        return rc;
    }
    frame_size(c, start, head, *n);
    return frame_sent(d);
}

static bool can_send(const jn_amqp_delivery_t *d)
{
    const jn_amqp_link_t *l = d->link;
    return d->outgoing && !d->complete && l->current == d && !l->detach_sent &&
           jn_amqp_link_sendable(l);
}

/* The frames of the left octets of src (both send calls). */
static int send_payload(jn_amqp_delivery_t *d, payload_t *src, size_t left, bool more,
                        size_t *taken)
{
    jn_amqp_session_t *s = d->link->session;
    jn_amqp_conn_t *c = s->conn;
    int rc = c->npending ? jn_amqp_conn_flush(c) : 0;
    if (rc == 0)
        rc = jn_amqp_out_header(c);
    if (rc != 0)
        return rc;
    while (s->w.remote_incoming_window > 0 && (left > 0 || !more)) {
        size_t sent = 0;
        rc = send_frame(d, src, left, more, &sent);
        *taken += sent; /* a frame that failed only in frame_sent is out */
        if (rc != 0)
            return rc;
        left -= sent;
        if (left == 0 && !more) {
            d->complete = true;
            d->link->current = NULL;
            if (d->settled || d->remote_settled)
                jn_amqp_delivery_free(d);
            return 1;
        }
    }
    return 0;
}

int jn_amqp_delivery_send(jn_amqp_delivery_t *d, const jn_iter_t *pieces, size_t n, bool more,
                          size_t *taken)
{
    *taken = 0;
    if (!can_send(d))
        return JN_EPERM;
    size_t left = 0;
    for (size_t i = 0; i < n; i++) {
        if (pieces[i].view != JN_VIEW_RAW || pieces[i].prefix_pos < pieces[i].prefix_len)
            return JN_EINVAL;
        left += jn_iter_length(&pieces[i]);
    }
    jn_iter_t cur = n ? pieces[0] : (jn_iter_t){0};
    payload_t src = {.pieces = pieces, .n = n, .cur = &cur};
    return send_payload(d, &src, left, more, taken);
}

int jn_amqp_delivery_send_runs(jn_amqp_delivery_t *d, const jn_amqp_run_t *runs, size_t n,
                               bool more, bool give, size_t *taken)
{
    *taken = 0;
    if (!can_send(d))
        return JN_EPERM;
    size_t left = 0;
    for (size_t i = 0; i < n; i++)
        left += runs[i].len;
    payload_t src = {.runs = runs, .n = n, .give = give};
    return send_payload(d, &src, left, more, taken);
}

int jn_amqp_delivery_abort(jn_amqp_delivery_t *d)
{
    jn_amqp_link_t *l = d->link;
    if (!d->outgoing || d->complete)
        return JN_EPERM;
    if (!d->started) { /* nothing went out: the credit comes back */
        l->delivery_count--;
        l->credit++;
        jn_amqp_delivery_free(d);
        return 0;
    }
    if (!can_send(d)) {
        jn_amqp_delivery_free(d);
        return 0;
    }
    jn_amqp_session_t *s = l->session;
    if (s->w.remote_incoming_window == 0)
        return JN_AGAIN;
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_TRANSFER);
    p.u.transfer.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(9);
    p.u.transfer.handle = l->handle;
    p.u.transfer.aborted = true;
    int rc = jn_amqp_conn_send(s->conn, s->channel, &p);
    if (rc != 0)
        return rc;
    s->w.next_outgoing_id++;
    s->w.remote_incoming_window--;
    jn_amqp_delivery_free(d);
    return 0;
}
