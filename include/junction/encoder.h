/*
 * junction/encoder.h — the AMQP 1.0 encoder (spec part 1, "Types").
 *
 * Builds a sequence of encoded values, for management replies and mesh
 * control messages (not the per-message hot path). Each value gets its
 * smallest encoding: uint0/smalluint/uint, smallint/int, str8/str32, list0/
 * list8/list32, map8/map32, array8/array32 (compounds are written with a
 * 4-octet size and count and shrunk when they are closed).
 *
 * The encoder writes into a contiguous scratch area that starts inside the
 * struct (JN_ENCODER_INLINE octets, no heap for small values) and grows on the
 * heap. Errors are sticky: after a failure every call is a no-op and
 * jn_encoder_error() says what went wrong, so a composer checks once at the
 * end.
 *
 * Threads: an encoder belongs to the thread using it.
 */
#ifndef JUNCTION_ENCODER_H
#define JUNCTION_ENCODER_H 1

#include <junction/amqp.h>
#include <junction/buffer.h>
#include <junction/iterator.h>

#define JN_ENCODER_INLINE 256
#define JN_ENCODER_MAX_DEPTH 32

typedef struct jn_encoder {
    uint8_t *data;      /* the scratch area (inline or heap) */
    size_t size;        /* octets written */
    size_t capacity;    /* octets available in data */
    int error;          /* first error, or 0 */
    uint8_t depth;      /* open compounds */
    struct {
        size_t start;   /* offset of the compound's format code */
        uint32_t count; /* elements written so far */
        uint8_t kind;   /* list, map or array */
        uint8_t elem_code; /* arrays: element format code */
        bool elem_written; /* arrays: first element's constructor written */
    } open[JN_ENCODER_MAX_DEPTH];
    uint8_t inline_data[JN_ENCODER_INLINE];
} jn_encoder_t;

/* jn_encoder_init: an empty encoder. */
void jn_encoder_init(jn_encoder_t *e);

/* jn_encoder_free: release the heap area, if any. The encoder may be
 * initialised again. */
void jn_encoder_free(jn_encoder_t *e);

/* jn_encoder_error: 0, or the first error: JN_ENOMEM, JN_EOVERFLOW (nesting
 * beyond JN_ENCODER_MAX_DEPTH, or a value larger than 4 GiB), JN_EINVAL
 * (compound end without a begin, an array element of the wrong type, a map
 * closed with an odd count). */
static inline int jn_encoder_error(const jn_encoder_t *e)
{
    return e->error;
}

/* Scalars. Each writes one value in its smallest encoding. Inside an array,
 * only the element's data is written (the constructor is written once). */
void jn_enc_null(jn_encoder_t *e);
void jn_enc_bool(jn_encoder_t *e, bool v);
void jn_enc_ubyte(jn_encoder_t *e, uint8_t v);
void jn_enc_ushort(jn_encoder_t *e, uint16_t v);
void jn_enc_uint(jn_encoder_t *e, uint32_t v);
void jn_enc_ulong(jn_encoder_t *e, uint64_t v);
void jn_enc_byte(jn_encoder_t *e, int8_t v);
void jn_enc_short(jn_encoder_t *e, int16_t v);
void jn_enc_int(jn_encoder_t *e, int32_t v);
void jn_enc_long(jn_encoder_t *e, int64_t v);
void jn_enc_float(jn_encoder_t *e, float v);
void jn_enc_double(jn_encoder_t *e, double v);
void jn_enc_char(jn_encoder_t *e, uint32_t code_point);
void jn_enc_timestamp(jn_encoder_t *e, int64_t ms_since_epoch);
void jn_enc_uuid(jn_encoder_t *e, const uint8_t uuid[16]);

/* Variable width: len octets at data (borrowed, copied). */
void jn_enc_binary(jn_encoder_t *e, const void *data, size_t len);
void jn_enc_string(jn_encoder_t *e, const char *data, size_t len);
void jn_enc_symbol(jn_encoder_t *e, const char *data, size_t len);
/* ... from a NUL-terminated C string */
void jn_enc_cstring(jn_encoder_t *e, const char *s);
void jn_enc_csymbol(jn_encoder_t *e, const char *s);
/* ... from the octets left in an iterator (not advanced). */
void jn_enc_string_iter(jn_encoder_t *e, const jn_iter_t *it);
void jn_enc_symbol_iter(jn_encoder_t *e, const jn_iter_t *it);

/* Described values: write the descriptor; the next value written is the
 * described value. */
void jn_enc_descriptor_ulong(jn_encoder_t *e, uint64_t code);
void jn_enc_descriptor_symbol(jn_encoder_t *e, const char *s);

/* Compounds: begin, write the elements (maps: key, value, key, value...),
 * end. Arrays take the format code their elements are written with
 * (e.g. JN_AMQP_SYM8 or JN_AMQP_SYM32, JN_AMQP_UINT, JN_AMQP_ULONG); a
 * value that does not fit that code sets JN_EINVAL. */
void jn_enc_list_begin(jn_encoder_t *e);
void jn_enc_list_end(jn_encoder_t *e);
void jn_enc_map_begin(jn_encoder_t *e);
void jn_enc_map_end(jn_encoder_t *e);
void jn_enc_array_begin(jn_encoder_t *e, uint8_t elem_code);
void jn_enc_array_end(jn_encoder_t *e);

/* jn_enc_raw: append len already-encoded octets as one value (counted as
 * one element of the open compound). */
void jn_enc_raw(jn_encoder_t *e, const void *data, size_t len);

/* jn_enc_raw_iter: as jn_enc_raw, from the octets left in an iterator. */
void jn_enc_raw_iter(jn_encoder_t *e, const jn_iter_t *it);

/* jn_encoder_data: the encoded octets so far (borrowed; valid until the next
 * call on e) and their count in *len. */
const uint8_t *jn_encoder_data(const jn_encoder_t *e, size_t *len);

/* jn_encoder_to_buffers: append the encoded octets to list. Returns 0,
 * the sticky error, JN_EINVAL if a compound is still open, or JN_ENOMEM. */
int jn_encoder_to_buffers(const jn_encoder_t *e, jn_buffer_list_t *list);

#endif /* JUNCTION_ENCODER_H */
