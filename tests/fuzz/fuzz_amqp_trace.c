/*
 * fuzz_amqp_trace.c — libFuzzer target for the own engine's protocol trace
 * (junction/amqp_trace.h): a peer's octet stream, any octets at all, fed to
 * a tracer in pieces as a socket would hand them over.
 *
 * Input: a control octet (fuzz_input.h: piece size; top bit = the outgoing
 * direction) then the stream. Every line must be NUL-terminated within
 * JN_AMQP_TRACE_LINE octets, the tracer must hold no more than one frame's
 * worth beyond a piece, and nothing may read out of bounds, abort, leak or
 * hang.
 */
#include "fuzz_input.h"

#include <junction/amqp_trace.h>
#include <stdlib.h>
#include <string.h>

static void sink(void *ctx, const char *line)
{
    size_t *lines = ctx;
    if (strnlen(line, JN_AMQP_TRACE_LINE) >= JN_AMQP_TRACE_LINE)
        abort(); /* a line past its bound */
    (*lines)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t chunk = jn_fuzz_chunk(data[0]);
    jn_amqp_tracer_t t;
    jn_amqp_tracer_init(&t, jn_fuzz_flag(data[0]));
    jn_amqp_tracer_start(&t);
    size_t lines = 0;
    for (size_t at = 1; at < size; at += chunk) {
        size_t k = size - at < chunk ? size - at : chunk;
        /* a copy of each piece, so that reading past it is caught */
        uint8_t *piece = malloc(k);
        if (!piece)
            abort();
        memcpy(piece, data + at, k);
        struct iovec iov = {.iov_base = piece, .iov_len = k};
        jn_amqp_tracer_feed(&t, &iov, 1, k, sink, &lines);
        free(piece);
        if (t.len > JN_AMQP_TRACE_FRAME_MAX + k)
            abort(); /* held more than one frame's worth */
    }
    jn_amqp_tracer_free(&t);
    return 0;
}
