/*
 * junction/decoder.h — the AMQP 1.0 decoder (spec part 1, "Types").
 *
 * A decoder walks a sequence of encoded values and yields each as a typed
 * jn_field_t. Nothing is copied: a variable-width or compound value is
 * described by a raw iterator over its payload octets in the buffers.
 * Fixed-width values are decoded into the field. Compound values (list, map,
 * array) are entered with jn_decoder_enter(), which gives a child decoder
 * over their elements; a caller that does not enter one skips it whole.
 *
 * Every entry point is bounds-checked: a value that claims more octets than
 * its container (or the data) holds, an element count that cannot fit its
 * size, an unknown format code, a map with an odd count, or described types
 * nested deeper than JN_DECODE_MAX_DEPTH give JN_EPROTO (or JN_EOVERFLOW for
 * depth), never a read past the data or an abort.
 *
 * Threads: a decoder belongs to the thread using it; the octets it reads must
 * stay referenced and published while it is used.
 */
#ifndef JUNCTION_DECODER_H
#define JUNCTION_DECODER_H 1

#include <junction/amqp.h>
#include <junction/iterator.h>

/* Deepest nesting of described types and compounds the decoder accepts. */
#define JN_DECODE_MAX_DEPTH 32

/* Most elements an array of zero-width elements (null, true, false, uint0,
 * ulong0, list0) may claim: such an array carries nothing but its count, so
 * a larger one is refused (JN_EPROTO) instead of costing a decode step per
 * claimed element. */
#define JN_DECODE_MAX_EMPTY_ELEMENTS 65536

/* The AMQP type of a decoded field (one per type, whatever its encoding). */
typedef enum jn_amqp_type {
    JN_TYPE_NULL = 0,
    JN_TYPE_BOOLEAN,
    JN_TYPE_UBYTE,
    JN_TYPE_USHORT,
    JN_TYPE_UINT,
    JN_TYPE_ULONG,
    JN_TYPE_BYTE,
    JN_TYPE_SHORT,
    JN_TYPE_INT,
    JN_TYPE_LONG,
    JN_TYPE_FLOAT,
    JN_TYPE_DOUBLE,
    JN_TYPE_DECIMAL32,
    JN_TYPE_DECIMAL64,
    JN_TYPE_DECIMAL128,
    JN_TYPE_CHAR,
    JN_TYPE_TIMESTAMP,
    JN_TYPE_UUID,
    JN_TYPE_BINARY,
    JN_TYPE_STRING,
    JN_TYPE_SYMBOL,
    JN_TYPE_LIST,
    JN_TYPE_MAP,
    JN_TYPE_ARRAY
} jn_amqp_type_t;

/* One decoded value. Owned by the caller (usually on the stack). */
typedef struct jn_field {
    jn_amqp_type_t type;
    uint8_t code;        /* format code as on the wire (after any descriptor) */
    uint8_t elem_code;   /* arrays: the elements' format code */
    bool described;      /* a descriptor preceded the value */
    bool elem_described; /* arrays: the element constructor is described */
    /* descriptor, when described: a ulong code, or a symbol (raw view) */
    bool descriptor_is_symbol;
    uint64_t descriptor_code;
    jn_iter_t descriptor_symbol;
    /* scalar value, for fixed-width types: b for boolean; u for ubyte,
     * ushort, uint, ulong, char (UTF-32 code point); i for byte, short, int,
     * long, timestamp (ms since the epoch); f and d for float and double;
     * bytes for decimal32/64/128 (network order) and uuid. */
    union {
        bool b;
        uint64_t u;
        int64_t i;
        float f;
        double d;
        uint8_t bytes[16];
    } value;
    /* variable width: the data octets; compound: the encoded elements (for an
     * array, after the element constructor). Raw view; size is its length. */
    jn_iter_t payload;
    uint32_t size;  /* octets in payload */
    uint32_t count; /* list/array: elements; map: keys + values (even) */
    /* the whole encoding of the value, descriptor included (raw view), for
     * copying it byte for byte. An array element has no constructor of its
     * own (the array's is shared), so its view holds only its data. */
    jn_iter_t encoded;
} jn_field_t;

/* A cursor over a sequence of encoded values. Owned by the caller. */
typedef struct jn_decoder {
    jn_iter_t it;        /* raw view over the octets left */
    uint32_t items_left; /* elements left in the container, or UINT32_MAX */
    uint8_t depth;       /* nesting depth of this sequence */
    bool complete;       /* false: data may still grow (gives JN_AGAIN) */
    /* arrays: the shared element constructor */
    bool in_array;
    uint8_t elem_code;
    bool elem_described;
    bool elem_descriptor_is_symbol;
    uint64_t elem_descriptor_code;
    jn_iter_t elem_descriptor_symbol;
    /* why the last call failed (static string), or NULL */
    const char *reason;
} jn_decoder_t;

/* jn_decoder_init: a decoder over the octets left in raw (a JN_VIEW_RAW
 * iterator, copied). complete says whether those octets are all there will
 * ever be: if false, a value cut short by the end of the data gives JN_AGAIN
 * (more octets may arrive), if true it gives JN_EPROTO. Cannot fail. Thread
 * of the octets' reader. */
void jn_decoder_init(jn_decoder_t *d, const jn_iter_t *raw, bool complete);

/* jn_decoder_next: decode the next value (part 1, 1.6; described values
 * 1.5) into *f, positioned after it. Returns 1 with a field, 0 at the end of
 * the sequence (or container), JN_AGAIN (see init; the decoder is unchanged
 * and may be called again after more octets are published through a fresh
 * iterator), JN_EPROTO for malformed input (unknown format code, size beyond
 * the data or the container, count impossible in its size, odd map count,
 * bad descriptor, boolean octet other than 0/1, bad array element
 * constructor, octets left in a container after its last element),
 * JN_EOVERFLOW for described values nested deeper than JN_DECODE_MAX_DEPTH.
 * After an error, jn_decoder_reason(d) says which. *f is undefined unless 1
 * is returned. Thread of d. */
int jn_decoder_next(jn_decoder_t *d, jn_field_t *f);

/* A value stepped over by jn_decoder_skip(): its head and where its data
 * lie, without the views of a jn_field_t (see jn_value_payload). Owned by
 * the caller; valid while the octets stay referenced. */
typedef struct jn_value {
    jn_amqp_type_t type;
    uint8_t code;              /* format code as on the wire (after any descriptor) */
    bool described;            /* a descriptor preceded the value */
    bool contiguous;           /* all size octets lie at data, in one run */
    uint32_t size;             /* as jn_field_t.size */
    uint32_t count;            /* as jn_field_t.count */
    const jn_buffer_t *buffer; /* buffer holding the data's first octet (NULL: plain memory) */
    const uint8_t *data;       /* the data's first octet (as in jn_field_t.payload) */
} jn_value_t;

/* jn_decoder_skip: step over the next value exactly as jn_decoder_next()
 * would — the same checks, return values, position and reason — but fill
 * only the light *v (no views, no scalar value). For parsers that step over
 * values they do not read, or need only their type, size and octets.
 * Hot path: a value inside one buffer is read straight from memory. */
int jn_decoder_skip(jn_decoder_t *d, jn_value_t *v);

/* jn_decode_peek: the fast reader behind jn_decoder_skip(), for scanners of
 * plain memory: read the value at p (avail readable, published octets) as a
 * decoder at nesting level depth would step over it inside a container,
 * fill *v (buffer NULL: the caller knows which buffer p is in) and return
 * the octets it takes. Returns 0 when the fast reader leaves the value to
 * a decoder: it is cut short or malformed (the decoder then says why), or
 * it is an array, has nested descriptors or a 32-bit descriptor symbol.
 * A value it takes is one jn_decoder_next() would take the same way. */
size_t jn_decode_peek(const uint8_t *p, size_t avail, unsigned depth, jn_value_t *v);

/* The plain value at p (not described) whose encoding is its code, a size
 * octet and, for a compound (head 3), a count octet: *v as jn_decode_peek()
 * fills it. Returns the octets of the encoding. Part of
 * jn_decode_peek_small(); do not call directly. */
static inline size_t jn_decode_small_at(const uint8_t *p, jn_amqp_type_t type, uint32_t count,
                                        unsigned head, jn_value_t *v)
{
    v->type = type;
    v->code = p[0];
    v->described = false;
    v->contiguous = true;
    v->size = p[1] - (uint32_t)(head - 2u);
    v->count = count;
    v->buffer = NULL;
    v->data = p + head;
    return 2u + p[1];
}

/* jn_decode_peek_small: jn_decode_peek() (same arguments but end, the first
 * octet not readable, same result) with the shapes small routing fields
 * have read in place first: str8 and sym8 (part 1, 1.6.20-21), list8 and
 * map8 (1.6.22-23) with jn_decode_peek's checks (the count fits the size,
 * a map's count is even). Hot path: inlined, a few compares instead of the
 * general reader's call (about 40 instructions for a string, 60 for a
 * compound); other shapes cost two compares more than jn_decode_peek.
 * Any thread. */
static inline size_t jn_decode_peek_small(const uint8_t *p, const uint8_t *end, unsigned depth,
                                          jn_value_t *v)
{
    size_t left = (size_t)(end - p);
    if (left >= 2 && (p[0] == JN_AMQP_STR8 || p[0] == JN_AMQP_SYM8) && left - 2 >= p[1])
        return jn_decode_small_at(p, p[0] == JN_AMQP_STR8 ? JN_TYPE_STRING : JN_TYPE_SYMBOL, 0,
                                  2, v);
    if (left >= 3 && (p[0] == JN_AMQP_LIST8 || p[0] == JN_AMQP_MAP8) && p[1] >= 1 &&
        left - 2 >= p[1] && p[2] <= p[1] - 1u) {
        bool map = p[0] == JN_AMQP_MAP8;
        if (!map || (p[2] & 1u) == 0)
            return jn_decode_small_at(p, map ? JN_TYPE_MAP : JN_TYPE_LIST, p[2], 3, v);
    }
    return jn_decode_peek(p, left, depth, v);
}

/* jn_value_payload: a raw view of v's data, the same octets as
 * jn_field_t.payload of the same value. Cheap when v->contiguous. */
void jn_value_payload(const jn_value_t *v, jn_iter_t *out);

/* jn_decoder_enter: a child decoder over the elements of f, which must be a
 * list, map or array field returned by d (part 1, 1.6.24 - 1.6.26). The
 * child is complete (its octets are all present), so a child never gives
 * JN_AGAIN. Returns 0, JN_EINVAL if f is not compound, JN_EOVERFLOW past
 * JN_DECODE_MAX_DEPTH, JN_EPROTO if the array's element constructor is
 * malformed; on error jn_decoder_reason(child) says why. Thread of d. */
int jn_decoder_enter(const jn_decoder_t *d, const jn_field_t *f, jn_decoder_t *child);

/* jn_decoder_enter_value: jn_decoder_enter() for a list or map that d
 * stepped over with jn_decoder_skip() (or jn_decode_peek, with v->buffer
 * set to the buffer holding v->data). Returns 0, JN_EINVAL if v is not a
 * list or map (an array is entered from its jn_field_t), JN_EOVERFLOW past
 * JN_DECODE_MAX_DEPTH. Thread of d. */
int jn_decoder_enter_value(const jn_decoder_t *d, const jn_value_t *v, jn_decoder_t *child);

/* jn_decoder_mark: a raw view of the octets left in d (the position of the
 * next value), e.g. to remember where an entry starts. */
static inline void jn_decoder_mark(const jn_decoder_t *d, jn_iter_t *out)
{
    *out = d->it;
}

/* jn_decoder_reason: a static English sentence saying why the last
 * jn_decoder_next() on d (or the jn_decoder_enter() that filled d as its
 * child) failed with JN_EPROTO or JN_EOVERFLOW, e.g. "map has an odd number
 * of keys and values"; "no error" when none did. Never NULL. Thread of d. */
const char *jn_decoder_reason(const jn_decoder_t *d);

/* jn_field_equal_string: true when f is a string or symbol whose octets
 * (left in f->payload) equal the NUL-terminated s. Any thread reading f. */
bool jn_field_equal_string(const jn_field_t *f, const char *s);

/* jn_field_is_integer / jn_field_to_int64 / jn_field_to_uint64: read any
 * integer type (ubyte, ushort, uint, ulong, byte, short, int, long; not
 * timestamp or char). is_integer says whether f is one; the others return 0
 * or JN_ERANGE (value does not fit) or JN_EINVAL (not an integer). Any
 * thread reading f. */
bool jn_field_is_integer(const jn_field_t *f);
int jn_field_to_int64(const jn_field_t *f, int64_t *out);
int jn_field_to_uint64(const jn_field_t *f, uint64_t *out);

/* jn_amqp_type_name: "ulong", "string", ... (the spec's type names) for
 * messages; "unknown" for a value outside the enum. Static string. Any
 * thread. */
const char *jn_amqp_type_name(jn_amqp_type_t type);

#endif /* JUNCTION_DECODER_H */
