/*
 * decoder_scan.h — the decoder's fast path, part one: reading one value
 * that lies in one run of memory (router/message/decoder.c's only include
 * of it; every function here is static and inlined into the decoder's
 * loops, which is why this is a header and not a file of its own).
 */
#ifndef JN_MESSAGE_DECODER_SCAN_H
#define JN_MESSAGE_DECODER_SCAN_H 1

#include <junction/decoder.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the fast path: a value in one run of memory ----------------------
 * Most values sit inside one buffer: the decoder's octets left are then one
 * run [cursor, limit) (jn_iter_contiguous) and a value is decoded straight
 * from memory, with its views built in place (jn_iter_raw_run) and no
 * iterator copies, walks or length counts. The result is exactly what the
 * general path gives. Anything this path does not handle by itself — a
 * value cut short, a malformed one, nested descriptors, arrays, array
 * elements, 32-bit descriptor symbols — returns SLOW before changing d, and
 * the general path decodes it (and reports the error) as always. */
#define SLOW 2

/* A big-endian number of w octets (0, 1, 2, 4 or 8) at p. */
static inline uint64_t be_at(const uint8_t *p, unsigned w)
{
    switch (w) {
    case 0:
        return 0;
    case 1:
        return p[0];
    case 2:
        return (uint64_t)p[0] << 8 | p[1];
    case 4:
        return (uint64_t)p[0] << 24 | (uint64_t)p[1] << 16 | (uint64_t)p[2] << 8 | p[3];
    default: {
        uint64_t v = 0;
        for (unsigned i = 0; i < w; i++)
            v = (v << 8) | p[i];
        return v;
    }
    }
}

/* One value read from memory by scan_run(): where its parts are. */
typedef struct run_value {
    const uint8_t *start;    /* its first octet (descriptor included) */
    const uint8_t *payload;  /* its data (compounds: the elements) */
    const uint8_t *end;      /* just after it */
    uint64_t desc_code;      /* ulong descriptor, or 0 */
    const uint8_t *desc_sym; /* symbol descriptor's octets, or NULL */
    uint32_t desc_sym_len;
    uint32_t size;  /* octets at payload */
    uint32_t count; /* compounds: elements */
    uint8_t code;   /* format code after the descriptor */
    bool described;
} run_value_t;

/* Whether d's next value may be read by scan_run(): octets left, all in
 * one run, a container not yet done, and not the elements of an array
 * (whose constructor is shared). */
static inline bool run_ready(const jn_decoder_t *d)
{
    return d->it.cursor < d->it.limit && jn_iter_contiguous(&d->it) && d->items_left != 0 &&
           !d->in_array;
}

/* Read the descriptor at p (just after its 0x00 constructor; p <= end)
 * into v. Returns where the described value's constructor is, or NULL
 * (SLOW) for anything but a ulong or sym8 descriptor of a value that is
 * there and not itself described. */
__attribute__((always_inline)) static inline const uint8_t *scan_descriptor(const uint8_t *p,
                                                                            const uint8_t *end,
                                                                            run_value_t *v)
{
    if (p == end)
        return NULL;
    uint8_t dc = *p++;
    size_t left = (size_t)(end - p);
    if (dc == JN_AMQP_SMALLULONG && left >= 1) {
        v->desc_code = *p++;
    } else if (dc == JN_AMQP_ULONG0) {
        v->desc_code = 0;
    } else if (dc == JN_AMQP_ULONG && left >= 8) {
        v->desc_code = be_at(p, 8);
        p += 8;
    } else if (dc == JN_AMQP_SYM8 && left >= 1 && left - 1 >= p[0]) {
        v->desc_sym_len = p[0];
        v->desc_sym = p + 1;
        p += 1 + p[0];
    } else {
        return NULL;
    }
    v->described = true;
    if (p == end || *p == JN_AMQP_DESCRIBED)
        return NULL;
    return p;
}

/* A list or map (map: is_map) whose size field (width octets: 1 or 4,
 * then a count of the same width) starts at p, left octets readable: its
 * elements into v. 0, or SLOW when it does not fit, its count cannot be,
 * or a map has an odd count. */
__attribute__((always_inline)) static inline int scan_compound(unsigned width, bool is_map,
                                                               const uint8_t *p, size_t left,
                                                               run_value_t *v)
{
    uint64_t n, count;
    if (left < 2 * width || (n = be_at(p, width)) < width || left - width < n)
        return SLOW;
    count = be_at(p + width, width);
    if ((is_map && (count & 1) != 0) || count > n - width)
        return SLOW;
    v->payload = p + 2 * width;
    v->size = (uint32_t)(n - width);
    v->count = (uint32_t)count;
    v->end = p + width + n;
    return 0;
}

/* A binary, string or symbol whose length field (width octets) starts at
 * p, left octets readable: its octets into v. 0, or SLOW when they do not
 * fit. */
__attribute__((always_inline)) static inline int scan_variable(unsigned width, const uint8_t *p,
                                                               size_t left, run_value_t *v)
{
    uint64_t n;
    if (left < width || left - width < (n = be_at(p, width)))
        return SLOW;
    v->payload = p + width;
    v->size = (uint32_t)n;
    v->end = p + width + n;
    return 0;
}

/* Read the value at p (p < end; [p, end) readable memory) into *v; depth
 * is the nesting level of the sequence it is in. Returns 0, or SLOW for
 * anything the general path must decide. Checks what the general path
 * checks, and bails out where it would fail. */
__attribute__((always_inline)) static inline int scan_mem(const uint8_t *p, const uint8_t *end,
                                                          unsigned depth, run_value_t *v)
{
    v->start = p;
    v->described = false;
    v->desc_code = 0;
    v->desc_sym = NULL;
    v->desc_sym_len = 0;
    uint8_t code = *p++;
    if (code == JN_AMQP_DESCRIBED) {
        if (depth + 1u > JN_DECODE_MAX_DEPTH || !(p = scan_descriptor(p, end, v)))
            return SLOW;
        code = *p++;
    }
    size_t left = (size_t)(end - p);
    unsigned w;
    v->code = code;
    v->count = 0;
    /* One case per format code (the same widths and shapes as code_table),
     * so each value costs a jump and straight-line code: a table lookup
     * for the fixed widths measured 26 instructions more per message
     * parsed (bench_message under callgrind), which is why this function
     * is longer than the budget (tests/lint/check_budgets.py). */
    switch (code) {
    case JN_AMQP_NULL:
    case JN_AMQP_TRUE:
    case JN_AMQP_FALSE:
    case JN_AMQP_UINT0:
    case JN_AMQP_ULONG0:
    case JN_AMQP_LIST0:
        v->payload = v->end = p;
        v->size = 0;
        return 0;
    case JN_AMQP_BOOLEAN:
        if (left < 1 || p[0] > 1)
            return SLOW;
        w = 1;
        break;
    case JN_AMQP_UBYTE:
    case JN_AMQP_BYTE:
    case JN_AMQP_SMALLUINT:
    case JN_AMQP_SMALLULONG:
    case JN_AMQP_SMALLINT:
    case JN_AMQP_SMALLLONG:
        w = 1;
        break;
    case JN_AMQP_USHORT:
    case JN_AMQP_SHORT:
        w = 2;
        break;
    case JN_AMQP_UINT:
    case JN_AMQP_INT:
    case JN_AMQP_FLOAT:
    case JN_AMQP_CHAR:
    case JN_AMQP_DECIMAL32:
        w = 4;
        break;
    case JN_AMQP_ULONG:
    case JN_AMQP_LONG:
    case JN_AMQP_DOUBLE:
    case JN_AMQP_TIMESTAMP:
    case JN_AMQP_DECIMAL64:
        w = 8;
        break;
    case JN_AMQP_DECIMAL128:
    case JN_AMQP_UUID:
        w = 16;
        break;
    case JN_AMQP_VBIN8:
    case JN_AMQP_STR8:
    case JN_AMQP_SYM8:
        return scan_variable(1, p, left, v);
    case JN_AMQP_VBIN32:
    case JN_AMQP_STR32:
    case JN_AMQP_SYM32:
        return scan_variable(4, p, left, v);
    case JN_AMQP_LIST8:
        return scan_compound(1, false, p, left, v);
    case JN_AMQP_MAP8:
        return scan_compound(1, true, p, left, v);
    case JN_AMQP_LIST32:
        return scan_compound(4, false, p, left, v);
    case JN_AMQP_MAP32:
        return scan_compound(4, true, p, left, v);
    default: /* arrays, unknown codes */
        return SLOW;
    }
    /* fixed width 1 to 16 */
    if (left < w)
        return SLOW;
    v->payload = p;
    v->size = w;
    v->end = p + w;
    return 0;
}

#endif /* JN_MESSAGE_DECODER_SCAN_H */
