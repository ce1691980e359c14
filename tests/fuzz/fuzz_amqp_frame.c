/*
 * fuzz_amqp_frame.c — libFuzzer target for the engine's input side
 * (junction/amqp_frame.h, junction/amqp_perf.h): a peer's octet stream read
 * as the engine will read it.
 *
 * Input: a control octet (fuzz_input.h: buffer split size; top bit = the
 * stream is in the SASL layer, else AMQP) then the stream: an optional
 * protocol header, then frames. Each frame is read in place with a
 * max-frame-size of 64 KiB and a channel-max of 255; each non-empty body is
 * decoded as a performative; a decoded performative is encoded again, and
 * that encoding must decode to the same encoding (the codec is stable). Every
 * call must end in a documented result: no read out of bounds, no abort, no
 * leak, no hang.
 */
#include "fuzz_input.h"

#include <junction/amqp_perf.h>
#include <junction/pool.h>
#include <stdlib.h>
#include <string.h>

/* The performative p encoded; its re-decode must encode the same. */
static void check_stable(const jn_amqp_perf_t *p, uint8_t type)
{
    jn_encoder_t e1, e2;
    jn_encoder_init(&e1);
    jn_encoder_init(&e2);
    if (jn_amqp_perf_encode(&e1, p) == 0) {
        size_t n1, n2;
        const uint8_t *d1 = jn_encoder_data(&e1, &n1);
        jn_iter_t it;
        jn_amqp_perf_t again;
        jn_amqp_fault_t fault;
        jn_iter_init_bytes(&it, d1, n1, JN_VIEW_RAW);
        if (jn_amqp_perf_decode(&it, type, &again, NULL, &fault) != 0)
            abort(); /* our own encoding refused */
        if (jn_amqp_perf_encode(&e2, &again) != 0)
            abort();
        const uint8_t *d2 = jn_encoder_data(&e2, &n2);
        if (n1 != n2 || memcmp(d1, d2, n1) != 0)
            abort(); /* encode(decode(encode(p))) differs from encode(p) */
    }
    jn_encoder_free(&e1);
    jn_encoder_free(&e2);
}

static void read_frames(jn_iter_t *in, uint8_t type)
{
    jn_amqp_frame_t f;
    jn_amqp_fault_t fault;
    for (int frames = 0; frames < 4096; frames++) {
        int rc = jn_amqp_frame_read(in, type, 65536, 255, &f, &fault);
        if (rc != 1)
            return;
        if (f.body_size > 0) {
            jn_amqp_perf_t p;
            jn_iter_t payload;
            if (jn_amqp_perf_decode(&f.body, type, &p, &payload, &fault) == 0)
                check_stable(&p, type);
            else if (!fault.condition)
                abort();
        }
        jn_iter_advance(in, f.size);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t type = jn_fuzz_flag(data[0]) ? JN_AMQP_FRAME_SASL : JN_AMQP_FRAME_AMQP;
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    jn_iter_t in;
    if (size > 1) {
        if (jn_buffer_list_append_split(&list, data + 1, size - 1, jn_fuzz_chunk(data[0])) != 0)
            abort();
        if (jn_iter_init(&in, list.head, 0, size - 1, JN_VIEW_RAW) != 0)
            abort();
    } else {
        jn_iter_init_bytes(&in, "", 0, JN_VIEW_RAW);
    }
    jn_amqp_proto_t proto;
    jn_amqp_fault_t fault;
    if (jn_amqp_header_read(&in, &proto, &fault) == JN_AMQP_HEADER_SIZE)
        jn_iter_advance(&in, JN_AMQP_HEADER_SIZE);
    read_frames(&in, type);
    jn_buffer_list_free(&list);
    return 0;
}
