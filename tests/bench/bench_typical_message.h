/*
 * bench_typical_message.h — the message the engine benchmarks send
 * (bench_amqp_engine.c, bench_proton_engine.c), so that both engines carry
 * the same octets.
 */
#ifndef BENCH_TYPICAL_MESSAGE_H
#define BENCH_TYPICAL_MESSAGE_H 1

#include <junction/encoder.h>
#include <junction/message.h>

#include <string.h>

/* bench_typical_message: encode the benchmarks' typical message into out
 * (cap octets): header, message annotations with an ingress and a
 * one-entry trace, properties with a message-id and a to, and a 100-octet
 * data body; 206 octets. Returns its length, or 0 when it does not fit. */
static inline size_t bench_typical_message(uint8_t *out, size_t cap)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_HEADER);
    jn_enc_list_begin(&e);
    jn_enc_bool(&e, true);
    jn_enc_list_end(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_MESSAGE_ANNOTATIONS);
    jn_enc_map_begin(&e);
    jn_enc_csymbol(&e, JN_RA_INGRESS);
    jn_enc_cstring(&e, "0/RouterA");
    jn_enc_csymbol(&e, JN_RA_TRACE);
    jn_enc_list_begin(&e);
    jn_enc_cstring(&e, "0/RouterA");
    jn_enc_list_end(&e);
    jn_enc_map_end(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_PROPERTIES);
    jn_enc_list_begin(&e);
    jn_enc_cstring(&e, "id-1");
    jn_enc_null(&e);
    jn_enc_cstring(&e, "service.orders");
    jn_enc_list_end(&e);
    static const char body[100] = "a 100-octet body";
    jn_enc_descriptor_ulong(&e, JN_SECTION_DATA);
    jn_enc_binary(&e, body, sizeof body);
    size_t len;
    const uint8_t *d = jn_encoder_data(&e, &len);
    if (!d || len > cap) {
        jn_encoder_free(&e);
        return 0;
    }
    memcpy(out, d, len);
    jn_encoder_free(&e);
    return len;
}

#endif /* BENCH_TYPICAL_MESSAGE_H */
