/*
 * output.c — the connection engine's output (junction/amqp_engine.h): the
 * frames it composes go into one encoder; an outgoing transfer's payload
 * is not copied there but referenced (transfer.c): a list of runs, each
 * placed after a given count of composed octets. The caller takes the
 * output as runs in order: composed octets up to the next reference, the
 * referenced run, composed octets up to the one after, and so on. A run
 * in a jn_buffer_t holds a reference on it until it is taken.
 */
#include "engine_private.h"

#include <stdlib.h>
#include <string.h>

int jn_amqp_out_header(jn_amqp_conn_t *c)
{
    if (c->header_sent)
        return 0;
    uint8_t h[JN_AMQP_HEADER_SIZE];
    jn_amqp_header_write(h, JN_AMQP_PROTO_AMQP);
    jn_enc_raw(&c->out, h, sizeof h);
    c->header_sent = true;
    c->last_out = c->now;
    return jn_encoder_error(&c->out);
}

int jn_amqp_out_refs_grow(jn_amqp_conn_t *c)
{
    uint32_t cap = c->refs_cap ? c->refs_cap * 2 : 8;
    jn_amqp_oref_t *r = realloc(c->refs, cap * sizeof *r);
    if (!r)
        return JN_ENOMEM;
    c->refs = r;
    c->refs_cap = cap;
    return 0;
}

void jn_amqp_out_rollback(jn_amqp_conn_t *c, size_t start)
{
    jn_encoder_t *e = &c->out;
    while (c->nrefs > c->ref_head && c->refs[c->nrefs - 1].at > start &&
           (c->nrefs - 1 > c->ref_head || c->ref_off == 0)) {
        c->nrefs--;
        c->ref_octets -= c->refs[c->nrefs].len;
        jn_buffer_unref(c->refs[c->nrefs].buf);
    }
    e->size = start;
    e->depth = 0;
    e->described_pending = false;
    if (e->error != JN_ENOMEM)
        e->error = 0;
}

void jn_amqp_out_free(jn_amqp_conn_t *c)
{
    for (uint32_t i = 0; i < c->npending; i++)
        free(c->pending[i].state);
    free(c->pending);
    c->pending = NULL;
    c->npending = c->pending_cap = 0;
    for (uint32_t i = c->ref_head; i < c->nrefs; i++)
        jn_buffer_unref(c->refs[i].buf);
    free(c->refs);
    c->refs = NULL;
    c->nrefs = c->refs_cap = c->ref_head = 0;
    c->ref_octets = 0;
    jn_encoder_free(&c->out);
}

int jn_amqp_conn_send(jn_amqp_conn_t *c, uint16_t channel, const jn_amqp_perf_t *p)
{
    int rc = c->npending && !c->flushing ? jn_amqp_conn_flush(c) : 0;
    if (rc == 0)
        rc = jn_amqp_out_header(c);
    if (rc != 0)
        return rc;
    size_t start = jn_amqp_frame_begin(&c->out, JN_AMQP_FRAME_AMQP, channel);
    rc = jn_amqp_perf_encode(&c->out, p);
    if (rc == 0)
        rc = jn_amqp_frame_end(&c->out, start, c->remote_max_frame);
    if (rc != 0) {
        jn_amqp_out_rollback(c, start);
        return rc;
    }
    c->last_out = c->now;
    return 0;
}

/* The run at the front of the output: composed octets up to the next
 * reference, or that reference's octets. */
static const uint8_t *front(const jn_amqp_conn_t *c, size_t *len)
{
    if (c->ref_head < c->nrefs) {
        const jn_amqp_oref_t *r = &c->refs[c->ref_head];
        if (c->out_pos < r->at) {
            *len = r->at - c->out_pos;
            return c->out.data + c->out_pos;
        }
        *len = r->len - c->ref_off;
        return r->data + c->ref_off;
    }
    *len = c->out.size - c->out_pos;
    return *len ? c->out.data + c->out_pos : NULL;
}

const uint8_t *jn_amqp_conn_output(jn_amqp_conn_t *c, size_t *len)
{
    if (c->npending)
        (void)jn_amqp_conn_flush(c); /* ENOMEM is sticky in the output */
    return front(c, len);
}

int jn_amqp_conn_output_iov(jn_amqp_conn_t *c, struct iovec *iov, int max)
{
    if (c->npending)
        (void)jn_amqp_conn_flush(c);
    int n = 0;
    size_t pos = c->out_pos, off = c->ref_off;
    for (uint32_t i = c->ref_head; n < max; i++) {
        size_t upto = i < c->nrefs ? c->refs[i].at : c->out.size;
        if (pos < upto)
            iov[n++] = (struct iovec){.iov_base = c->out.data + pos, .iov_len = upto - pos};
        pos = upto;
        if (i >= c->nrefs || n == max)
            break;
        const jn_amqp_oref_t *r = &c->refs[i];
        iov[n++] = (struct iovec){.iov_base = (void *)(r->data + off), .iov_len = r->len - off};
        off = 0;
    }
    return n;
}

size_t jn_amqp_conn_output_pending(const jn_amqp_conn_t *c)
{
    return (c->out.size - c->out_pos) + c->ref_octets;
}

void jn_amqp_conn_output_done(jn_amqp_conn_t *c, size_t n)
{
    if (n > 0 && n == jn_amqp_conn_output_pending(c)) {
        /* the usual write, all of it taken: every reference goes, the
         * composed octets with them, without walking the runs */
        for (uint32_t i = c->ref_head; i < c->nrefs; i++)
            jn_buffer_unref(c->refs[i].buf);
        c->nrefs = c->ref_head = 0;
        c->ref_off = 0;
        c->ref_octets = 0;
        c->out.size = 0;
        c->out_pos = 0;
        return;
    }
    while (n > 0) {
        size_t len;
        if (!front(c, &len) || len == 0)
            break;
        size_t k = n < len ? n : len;
        if (c->ref_head < c->nrefs && c->out_pos >= c->refs[c->ref_head].at) {
            c->ref_off += k;
            c->ref_octets -= k;
            if (c->ref_off == c->refs[c->ref_head].len) {
                jn_buffer_unref(c->refs[c->ref_head].buf);
                c->ref_head++;
                c->ref_off = 0;
            }
        } else {
            c->out_pos += k;
        }
        n -= k;
    }
    if (c->ref_head < c->nrefs)
        return; /* references wait: the composed octets stay where they are */
    c->nrefs = c->ref_head = 0;
    memmove(c->out.data, c->out.data + c->out_pos, c->out.size - c->out_pos);
    c->out.size -= c->out_pos;
    c->out_pos = 0;
}
