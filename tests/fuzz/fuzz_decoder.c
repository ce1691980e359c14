/*
 * fuzz_decoder.c — libFuzzer target for the AMQP decoder.
 *
 * Input: a control octet (see fuzz_input.h: buffer split size; top bit = the
 * data is complete) then octets to decode as a sequence of AMQP values. Every
 * value is decoded, every compound entered, every variable-width value read
 * through its iterator (copy, hash, compare), and integers converted, so each
 * path of the decoder is reached. The decoder must never read out of bounds,
 * never abort, and always end with 0, JN_AGAIN, JN_EPROTO or JN_EOVERFLOW.
 */
#include "fuzz_input.h"

#include <junction/decoder.h>
#include <junction/pool.h>
#include <stdlib.h>

static void touch_field(const jn_field_t *f)
{
    char text[64];
    int64_t i;
    uint64_t u;
    (void)jn_field_to_int64(f, &i);
    (void)jn_field_to_uint64(f, &u);
    (void)jn_amqp_type_name(f->type);
    if (f->type == JN_TYPE_STRING || f->type == JN_TYPE_SYMBOL || f->type == JN_TYPE_BINARY) {
        jn_iter_t it = f->payload;
        (void)jn_iter_copy_string(&it, text, sizeof text);
        (void)jn_iter_hash(&it);
        (void)jn_field_equal_string(f, "x-opt-qd.to");
        jn_iter_set_view(&it, JN_VIEW_ADDRESS_HASH);
        while (jn_iter_octet(&it) != JN_ITER_END) {
        }
    }
    if (f->described && f->descriptor_is_symbol) {
        jn_iter_t it = f->descriptor_symbol;
        (void)jn_iter_copy_string(&it, text, sizeof text);
    }
    jn_iter_t enc = f->encoded;
    (void)jn_iter_advance(&enc, jn_iter_length(&enc));
}

static int walk(jn_decoder_t *d)
{
    jn_field_t f;
    int rc;
    while ((rc = jn_decoder_next(d, &f)) == 1) {
        touch_field(&f);
        if (f.type == JN_TYPE_LIST || f.type == JN_TYPE_MAP || f.type == JN_TYPE_ARRAY) {
            jn_decoder_t child;
            if (jn_decoder_enter(d, &f, &child) == 0) {
                int crc = walk(&child);
                if (crc < 0)
                    return crc;
            }
        }
    }
    if (rc != 0 && rc != JN_AGAIN && rc != JN_EPROTO && rc != JN_EOVERFLOW)
        abort(); /* an undocumented result is a bug */
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    if (size > 1 && jn_buffer_list_append_split(&list, data + 1, size - 1, jn_fuzz_chunk(data[0])) != 0)
        abort();
    jn_iter_t it;
    if (list.head) {
        if (jn_iter_init(&it, list.head, 0, size - 1, JN_VIEW_RAW) != 0)
            abort();
    } else {
        jn_iter_init_bytes(&it, "", 0, JN_VIEW_RAW);
    }
    jn_decoder_t d;
    jn_decoder_init(&d, &it, jn_fuzz_flag(data[0]));
    (void)walk(&d);
    jn_buffer_list_free(&list);
    return 0;
}
