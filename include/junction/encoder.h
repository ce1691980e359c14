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

#define JN_ENCODER_INLINE    256
#define JN_ENCODER_MAX_DEPTH 32

typedef struct jn_encoder {
    uint8_t *data;          /* the scratch area (inline or heap) */
    size_t size;            /* octets written */
    size_t capacity;        /* octets available in data */
    int error;              /* first error, or 0 */
    uint8_t depth;          /* open compounds */
    bool described_pending; /* a descriptor waits for its described value */
    struct jn_encoder_open {
        size_t start;      /* offset of the compound's size field (its format
                            * code, if it has one, is just before it) */
        uint32_t count;    /* elements written so far */
        uint8_t kind;      /* list, map or array */
        uint8_t elem_code; /* arrays: element format code */
        bool elem_written; /* arrays: element constructor written */
        uint8_t form;      /* 0: own format code, smallest form picked at the
                            * end; else the enclosing array's element code,
                            * which fixes the form (no format code written) */
    } open[JN_ENCODER_MAX_DEPTH];
    uint8_t inline_data[JN_ENCODER_INLINE];
} jn_encoder_t;

/* jn_encoder_init: make *e an empty encoder using its inline area. The
 * struct must not be copied or moved while in use (data may point into it).
 * Cannot fail. Thread of e. */
void jn_encoder_init(jn_encoder_t *e);

/* jn_encoder_free: release the heap area, if any, and leave e empty (as
 * after jn_encoder_init). Thread of e. */
void jn_encoder_free(jn_encoder_t *e);

/* jn_encoder_error: 0, or the first error: JN_ENOMEM, JN_EOVERFLOW (nesting
 * beyond JN_ENCODER_MAX_DEPTH, or a value larger than 4 GiB), JN_EINVAL
 * (compound end without a begin, an array element of the wrong type, a map
 * closed with an odd count). */
static inline int jn_encoder_error(const jn_encoder_t *e)
{
    return e->error;
}

/* Scalars (part 1, 1.6.1 - 1.6.20). Each writes one value in its smallest
 * encoding and counts it as one element of the open compound. Inside an
 * array, only the element's data is written, in the form the array's element
 * code fixes (the constructor is written once); a value of another type, or
 * too large for that form (e.g. 300 in an array of JN_AMQP_SMALLUINT), sets
 * JN_EINVAL. Errors: sticky, see jn_encoder_error(). Thread of e. */
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

/* Variable width (1.6.21 - 1.6.23): len octets at data (borrowed, copied;
 * data may be NULL when len is 0), as vbin8/str8/sym8 up to 255 octets, else
 * the 32 forms. The octets are not checked (a string should be UTF-8, a
 * symbol ASCII). Errors (sticky): JN_EOVERFLOW above 4 GiB - 1, JN_ENOMEM,
 * JN_EINVAL (array of another type, or 8 form too small). Thread of e. */
void jn_enc_binary(jn_encoder_t *e, const void *data, size_t len);
void jn_enc_string(jn_encoder_t *e, const char *data, size_t len);
void jn_enc_symbol(jn_encoder_t *e, const char *data, size_t len);
/* ... from a NUL-terminated C string */
void jn_enc_cstring(jn_encoder_t *e, const char *s);
void jn_enc_csymbol(jn_encoder_t *e, const char *s);
/* ... from the octets left in an iterator (not advanced). */
void jn_enc_string_iter(jn_encoder_t *e, const jn_iter_t *it);
void jn_enc_symbol_iter(jn_encoder_t *e, const jn_iter_t *it);

/* Described values (1.5): write the descriptor (smallest ulong encoding, or
 * sym8/sym32); the next value written is the described value, and the two
 * count as one element. Right after jn_enc_array_begin (before the first
 * element) the descriptor becomes part of the array's element constructor,
 * so every element is described by it; later in an array it sets JN_EINVAL.
 * A descriptor still waiting for its value makes the enclosing *_end and
 * jn_encoder_to_buffers fail with JN_EINVAL. Thread of e. */
void jn_enc_descriptor_ulong(jn_encoder_t *e, uint64_t code);
void jn_enc_descriptor_symbol(jn_encoder_t *e, const char *s);

/* Compounds (1.6.24 - 1.6.26): begin, write the elements (maps: key, value,
 * key, value...), end. Arrays take the format code their elements are
 * written with (e.g. JN_AMQP_SYM8 or JN_AMQP_SYM32, JN_AMQP_UINT,
 * JN_AMQP_ULONG); a value that does not fit that code sets JN_EINVAL. An
 * empty list ends as list0 (as an array element, in the array's form); an
 * empty array still carries its element constructor.
 * Errors (sticky): JN_EOVERFLOW beyond JN_ENCODER_MAX_DEPTH open compounds
 * or above 4 GiB; JN_EINVAL for an end that does not match the innermost
 * begin, a map with an odd count, an invalid array element code, or a
 * compound of the wrong kind or too large for an array's element code.
 * Thread of e. */
void jn_enc_list_begin(jn_encoder_t *e);
void jn_enc_list_end(jn_encoder_t *e);
void jn_enc_map_begin(jn_encoder_t *e);
void jn_enc_map_end(jn_encoder_t *e);
void jn_enc_array_begin(jn_encoder_t *e, uint8_t elem_code);
void jn_enc_array_end(jn_encoder_t *e);

/* jn_enc_raw: append len already-encoded octets (borrowed, copied) as one
 * value, counted as one element of the open compound; they are not checked.
 * Not allowed as an array element (JN_EINVAL). Errors: sticky. Thread of e. */
void jn_enc_raw(jn_encoder_t *e, const void *data, size_t len);

/* jn_enc_raw_iter: as jn_enc_raw, from the octets left in an iterator (not
 * advanced). */
void jn_enc_raw_iter(jn_encoder_t *e, const jn_iter_t *it);

/* jn_encoder_data: the encoded octets so far (borrowed; valid until the next
 * call on e) and their count in *len. Complete only when no compound is
 * open and jn_encoder_error() is 0. Thread of e. */
const uint8_t *jn_encoder_data(const jn_encoder_t *e, size_t *len);

/* jn_encoder_to_buffers: append (copy) the encoded octets to list, owned by
 * the caller's thread. Returns 0, the sticky error, JN_EINVAL if a compound
 * (or a descriptor's value) is still open, or JN_ENOMEM (octets copied before
 * the failure stay in list). Thread of e. */
int jn_encoder_to_buffers(const jn_encoder_t *e, jn_buffer_list_t *list);

#endif /* JUNCTION_ENCODER_H */
