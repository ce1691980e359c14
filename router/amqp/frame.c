/*
 * frame.c — the engine's transport layer (AMQP 1.0 part 2, 2.2 and 2.3;
 * part 5, 5.1 and 5.3.1): protocol headers, frame headers read in place
 * from the caller's buffers, and frames composed into an encoder. The rules
 * are those the frame screen enforces today (docs/protocol.md, "The frame
 * screen"), each refused with amqp:connection:framing-error. The contract
 * is in junction/amqp_frame.h.
 */
#include "amqp_private.h"

#include <stdarg.h>
#include <stdio.h>

#define FRAMING "amqp:connection:framing-error"

int jn_amqp_header_read(const jn_iter_t *in, jn_amqp_proto_t *proto, jn_amqp_fault_t *fault)
{
    uint8_t h[JN_AMQP_HEADER_SIZE];
    jn_iter_t it = *in;
    size_t n = jn_iter_copy(&it, h, sizeof h);
    static const uint8_t want[] = {'A', 'M', 'Q', 'P', 0, 1, 0, 0};
    for (size_t i = 0; i < n; i++) {
        bool ok = i == 4 ? (h[4] == 0 || h[4] == 2 || h[4] == 3) : h[i] == want[i];
        if (!ok)
            return jn_amqp_fail(fault, FRAMING,
                                "protocol header is not AMQP 1.0.0 with protocol id 0, 2 or 3 "
                                "(octet %zu is 0x%02x)",
                                i, h[i]);
    }
    if (n < sizeof h)
        return JN_AGAIN;
    *proto = (jn_amqp_proto_t)h[4];
    return JN_AMQP_HEADER_SIZE;
}

void jn_amqp_header_write(uint8_t out[JN_AMQP_HEADER_SIZE], jn_amqp_proto_t proto)
{
    const uint8_t h[] = {'A', 'M', 'Q', 'P', (uint8_t)proto, 1, 0, 0};
    for (size_t i = 0; i < sizeof h; i++)
        out[i] = h[i];
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The checks that need only the frame header's octets. */
static int check_header(const uint8_t *h, uint8_t type, uint32_t max_frame, uint16_t channel_max,
                        jn_amqp_fault_t *fault)
{
    uint32_t size = get32(h);
    if (size < JN_AMQP_FRAME_HEADER_SIZE)
        return jn_amqp_fail(fault, FRAMING, "frame size %u is below 8", size);
    if (size > max_frame)
        return jn_amqp_fail(fault, FRAMING, "frame size %u is above the max-frame-size %u", size,
                            max_frame);
    if (h[4] < 2)
        return jn_amqp_fail(fault, FRAMING, "frame data offset %u is below 2", h[4]);
    if ((uint32_t)h[4] * 4 > size)
        return jn_amqp_fail(fault, FRAMING, "frame data offset %u lies past the frame's %u octets",
                            h[4], size);
    if (h[5] != type)
        return jn_amqp_fail(fault, FRAMING, "frame type %u where a %s frame belongs", h[5],
                            type == JN_AMQP_FRAME_SASL ? "SASL" : "AMQP");
    uint16_t channel = (uint16_t)(h[6] << 8 | h[7]);
    if (type == JN_AMQP_FRAME_AMQP && channel > channel_max)
        return jn_amqp_fail(fault, FRAMING, "frame on channel %u, above the channel-max %u",
                            channel, channel_max);
    return 0;
}

/* The usual case: the whole frame lies in the input's current run, read
 * where it lies. Returns 1 with *f, 0 when it does not lie so, or a
 * check_header fault. */
static inline int frame_in_run(const jn_iter_t *in, uint8_t type, uint32_t max_frame,
                               uint16_t channel_max, jn_amqp_frame_t *f, jn_amqp_fault_t *fault)
{
    size_t run = (size_t)(in->limit - in->cursor);
    if (in->prefix_pos < in->prefix_len || run < JN_AMQP_FRAME_HEADER_SIZE)
        return 0;
    const uint8_t *h = in->cursor;
    uint32_t size = get32(h);
    if (size > run)
        return 0;
    int rc = check_header(h, type, max_frame, channel_max, fault);
    if (rc != 0)
        return rc;
    f->size = size;
    f->doff = h[4];
    f->type = h[5];
    f->channel = (uint16_t)(h[6] << 8 | h[7]);
    f->body_size = size - (uint32_t)f->doff * 4;
    jn_iter_raw_run(&f->body, in->buffer, h + (uint32_t)f->doff * 4, f->body_size);
    return 1;
}

/* A frame the current run does not hold whole (it goes on in the next
 * buffers, or is not all there yet): its header read where it lies when
 * the run holds it (else copied), its body a view across the buffers.
 * With after, *after is set to the octets past the frame. Results as
 * jn_amqp_frame_read's. */
static int frame_across(const jn_iter_t *in, uint8_t type, uint32_t max_frame,
                        uint16_t channel_max, jn_amqp_frame_t *f, jn_amqp_fault_t *fault,
                        jn_iter_t *after)
{
    uint8_t copy[JN_AMQP_FRAME_HEADER_SIZE];
    const uint8_t *h = copy;
    jn_iter_t it = *in;
    size_t n;
    if (it.prefix_pos >= it.prefix_len &&
        (size_t)(it.limit - it.cursor) >= JN_AMQP_FRAME_HEADER_SIZE) {
        h = it.cursor;
        it.cursor += JN_AMQP_FRAME_HEADER_SIZE;
        n = JN_AMQP_FRAME_HEADER_SIZE;
    } else {
        n = jn_iter_copy(&it, copy, sizeof copy);
    }
    if (n >= 4) { /* refuse an impossible size before waiting for it */
        uint32_t size = get32(h);
        if (size < JN_AMQP_FRAME_HEADER_SIZE || size > max_frame)
            return check_header(h, type, max_frame, channel_max, fault);
    }
    if (n < JN_AMQP_FRAME_HEADER_SIZE)
        return JN_AGAIN;
    int rc = check_header(h, type, max_frame, channel_max, fault);
    if (rc != 0)
        return rc;
    uint32_t size = get32(h);
    if (jn_iter_length(in) < size)
        return JN_AGAIN;
    f->size = size;
    f->doff = h[4];
    f->type = h[5];
    f->channel = (uint16_t)(h[6] << 8 | h[7]);
    uint32_t skip = (uint32_t)f->doff * 4 - JN_AMQP_FRAME_HEADER_SIZE; /* extended header */
    if (skip)
        jn_iter_advance(&it, skip);
    f->body_size = size - (uint32_t)f->doff * 4;
    jn_iter_sub(&it, f->body_size, &f->body);
    if (after) {
        jn_iter_advance(&it, f->body_size);
        *after = it;
    }
    return 1;
}

int jn_amqp_frame_read(const jn_iter_t *in, uint8_t type, uint32_t max_frame, uint16_t channel_max,
                       jn_amqp_frame_t *f, jn_amqp_fault_t *fault)
{
    int rc = frame_in_run(in, type, max_frame, channel_max, f, fault);
    if (rc != 0)
        return rc;
    return frame_across(in, type, max_frame, channel_max, f, fault, NULL);
}

int jn_amqp_frame_next(jn_iter_t *in, uint8_t type, uint32_t max_frame, uint16_t channel_max,
                       jn_amqp_frame_t *f, jn_amqp_fault_t *fault)
{
    int rc = frame_in_run(in, type, max_frame, channel_max, f, fault);
    if (rc == 1) {
        in->cursor += f->size; /* within the current run */
        return 1;
    }
    if (rc != 0)
        return rc;
    jn_iter_t after;
    rc = frame_across(in, type, max_frame, channel_max, f, fault, &after);
    if (rc == 1)
        *in = after;
    return rc;
}

size_t jn_amqp_frame_begin(jn_encoder_t *e, uint8_t type, uint16_t channel)
{
    size_t start;
    (void)jn_encoder_data(e, &start);
    const uint8_t h[] = {0, 0, 0, 0, 2, type, (uint8_t)(channel >> 8), (uint8_t)channel};
    jn_enc_raw(e, h, sizeof h);
    return start;
}

int jn_amqp_frame_end(jn_encoder_t *e, size_t start, uint32_t max_frame)
{
    if (jn_encoder_error(e))
        return jn_encoder_error(e);
    size_t size;
    (void)jn_encoder_data(e, &size);
    if (start + JN_AMQP_FRAME_HEADER_SIZE > size || e->data[start + 4] != 2)
        return JN_EINVAL;
    size -= start;
    if (size > max_frame)
        return JN_EOVERFLOW;
    /* the header was written by jn_amqp_frame_begin into e's own area */
    e->data[start] = (uint8_t)(size >> 24);
    e->data[start + 1] = (uint8_t)(size >> 16);
    e->data[start + 2] = (uint8_t)(size >> 8);
    e->data[start + 3] = (uint8_t)size;
    return 0;
}

void jn_amqp_heartbeat_write(uint8_t out[JN_AMQP_FRAME_HEADER_SIZE])
{
    const uint8_t h[] = {0, 0, 0, 8, 2, 0, 0, 0};
    for (size_t i = 0; i < sizeof h; i++)
        out[i] = h[i];
}
