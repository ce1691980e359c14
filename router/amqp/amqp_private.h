/*
 * amqp_private.h — the engine's tables of composite types: for each
 * performative, SASL frame body, error, terminus and delivery state, its
 * descriptor (code and symbol) and its fields in list order (2.7, 2.8.14,
 * 3.4, 3.5, 4.5, 5.3.3), each with its kind, whether it is mandatory, its
 * default and where it lives in the C struct. decode.c and encode.c walk
 * these tables, so a field's rules are written once. Included by
 * router/amqp and by the engine's tests and fuzzers.
 */
#ifndef JN_AMQP_PRIVATE_H
#define JN_AMQP_PRIVATE_H 1

#include <junction/amqp_perf.h>

#include <stddef.h>

/* What a field holds on the wire and in its struct member. */
typedef enum jn_amqp_kind {
    JN_K_BOOL,      /* boolean -> bool */
    JN_K_UBYTE,     /* ubyte -> uint8_t (max: highest choice) */
    JN_K_USHORT,    /* ushort -> uint16_t */
    JN_K_UINT,      /* uint -> uint32_t (max: highest choice, 0 any) */
    JN_K_ULONG,     /* ulong -> uint64_t */
    JN_K_SYMBOL,    /* symbol -> jn_iter_t of its octets */
    JN_K_STRING,    /* string -> jn_iter_t of its octets */
    JN_K_BINARY,    /* binary -> jn_iter_t of its octets */
    JN_K_ADDRESS,   /* string or symbol (3.5.3 address) -> jn_iter_t octets */
    JN_K_SYMBOLS,   /* symbol or array of symbols -> jn_iter_t encoding */
    JN_K_MAP,       /* map -> jn_iter_t encoding */
    JN_K_DESCRIBED, /* any described value -> jn_iter_t encoding */
    JN_K_ERROR,     /* error -> jn_amqp_error_t */
    JN_K_SOURCE,    /* source (or other terminus) -> jn_amqp_terminus_t */
    JN_K_TARGET,    /* target (or coordinator, ...) -> jn_amqp_terminus_t */
    JN_K_STATE      /* delivery state -> jn_amqp_state_t */
} jn_amqp_kind_t;

/* One field of a composite type. */
typedef struct jn_amqp_fdesc {
    const char *name; /* the spec's name, for faults */
    uint8_t kind;     /* jn_amqp_kind_t */
    bool mandatory;   /* null is refused (amqp:invalid-field) */
    uint32_t max;     /* ubyte/uint: highest valid value, 0 for any */
    uint16_t offset;  /* of the member in the struct */
    uint32_t def;     /* default of a numeric or boolean field */
} jn_amqp_fdesc_t;

/* One composite type. The struct begins with its `present` mask, at
 * present_at, except states and termini, which keep their own header. */
typedef struct jn_amqp_tdesc {
    uint64_t code;
    const char *name;   /* "open", "error", ... */
    const char *symbol; /* "amqp:open:list", ... */
    const jn_amqp_fdesc_t *fields;
    uint8_t count;
    uint16_t present_at; /* offset of the uint32_t present mask */
    uint16_t size;       /* of the struct (a performative's: its member of the union) */
} jn_amqp_tdesc_t;

/* jn_amqp_is_state: true for the descriptor code of a delivery state
 * known here (3.4; part 4, 4.5.5, 4.5.7). Any thread. */
static inline bool jn_amqp_is_state(uint64_t code)
{
    return (code >= JN_AMQP_RECEIVED && code <= JN_AMQP_MODIFIED) || code == JN_AMQP_DECLARED ||
           code == JN_AMQP_TRANSACTIONAL_STATE;
}

/* jn_amqp_tdesc_by_code: the table of the type with descriptor code, or
 * NULL. Any thread. */
const jn_amqp_tdesc_t *jn_amqp_tdesc_by_code(uint64_t code);

/* jn_amqp_code_by_symbol: the descriptor code of the type whose symbol the
 * octets left in sym spell, or 0. Any thread. */
uint64_t jn_amqp_code_by_symbol(const jn_iter_t *sym);

/* jn_amqp_store_num: store value in the numeric or boolean member at m,
 * of kind (JN_K_BOOL .. JN_K_ULONG), narrowed to the member's width. Any
 * thread. */
static inline void jn_amqp_store_num(jn_amqp_kind_t kind, void *m, uint64_t value)
{
    switch (kind) {
    case JN_K_BOOL:
        *(bool *)m = value != 0;
        break;
    case JN_K_UBYTE:
        *(uint8_t *)m = (uint8_t)value;
        break;
    case JN_K_USHORT:
        *(uint16_t *)m = (uint16_t)value;
        break;
    case JN_K_UINT:
        *(uint32_t *)m = (uint32_t)value;
        break;
    default:
        *(uint64_t *)m = value;
        break;
    }
}

/* jn_amqp_defaults_zeroed: give every field of the struct at obj (of type
 * t), whose t->size octets are all zero already (so its present mask is
 * clear, its views empty, nested states and termini of code 0), its
 * default: only the numeric and boolean fields whose default is not 0 or
 * false need a store. Any thread. */
static inline void jn_amqp_defaults_zeroed(const jn_amqp_tdesc_t *t, void *obj)
{
    for (unsigned i = 0; i < t->count; i++) {
        const jn_amqp_fdesc_t *fd = &t->fields[i];
        if (fd->def)
            jn_amqp_store_num((jn_amqp_kind_t)fd->kind, (uint8_t *)obj + fd->offset, fd->def);
    }
}

/* jn_amqp_fail: fill fault with condition (a static string, borrowed) and
 * the description printf-formatted from fmt (truncated to the fault's
 * buffer); return JN_EPROTO, for `return jn_amqp_fail(...)`. Any thread. */
JN_PRINTF(3, 4)
int jn_amqp_fail(jn_amqp_fault_t *fault, const char *condition, const char *fmt, ...);

/* ---- shared by the SASL layer's two ends (sasl.c, sasl_client.c) ---- */

/* A growable area for one SASL field's octets, made contiguous (the input
 * may span buffers). Owned by its SASL layer; wiped when freed, as it may
 * hold a password. */
typedef struct jn_amqp_sasl_scratch {
    uint8_t *data;
    size_t cap;
} jn_amqp_sasl_scratch_t;

/* jn_amqp_sasl_flat: f's octets (all of them; f not advanced) copied into
 * sc, grown as needed; their number in *len. Returns sc's data (borrowed
 * until the next call on sc; "" for none), or NULL when memory runs out.
 * Any thread (the layer's). */
const uint8_t *jn_amqp_sasl_flat(jn_amqp_sasl_scratch_t *sc, const jn_iter_t *f, size_t *len);

/* jn_amqp_sasl_scratch_free: wipe and free sc's area. Any thread. */
void jn_amqp_sasl_scratch_free(jn_amqp_sasl_scratch_t *sc);

/* jn_amqp_sasl_send: compose the SASL frame with body p (5.3.1: type 1,
 * channel 0) into out, at most max_frame octets. A frame that does not fit
 * is taken back (out as it was). Returns 0, JN_EOVERFLOW (too large) or
 * JN_ENOMEM. Any thread (the layer's). */
int jn_amqp_sasl_send(jn_encoder_t *out, const jn_amqp_perf_t *p, uint32_t max_frame);

/* jn_amqp_sasl_bound: the largest SASL frame a layer takes and composes
 * for a configured max_frame (0: 5.3.1's MIN-MAX-FRAME-SIZE, 512; below
 * 512 is raised to it). */
static inline uint32_t jn_amqp_sasl_bound(uint32_t max_frame)
{
    return max_frame < JN_AMQP_MIN_MAX_FRAME_SIZE ? JN_AMQP_MIN_MAX_FRAME_SIZE : max_frame;
}

#endif /* JN_AMQP_PRIVATE_H */
