/*
 * junction/amqp_perf.h — the AMQP 1.0 engine's performatives: decode and
 * encode of the nine AMQP performatives (part 2, 2.7), the five SASL frame
 * bodies (part 5, 5.3.3), and the composite types they carry: error
 * (2.8.14), source and target (part 3, 3.5.3, 3.5.4) and the delivery
 * states (3.4, part 4 4.5.5 and 4.5.7). Part of router/amqp
 * (docs/engine.md).
 *
 * Decoding is in place with the message layer's decoder (junction/
 * decoder.h): a string, symbol, binary, map or multiple field is a raw view
 * (jn_iter_t) of the frame's own octets, never a copy, so a decoded
 * performative is valid while those octets stay referenced. Descriptors are
 * read by code or by symbol (1.5); a list may hold fewer fields than the
 * type has (the rest are null), and more (the extra ones are decoded and
 * ignored). A null field leaves its bit in `present` clear and its member
 * at the spec's default (0, false or empty where the spec gives none).
 *
 * Validation: a field of the wrong type, a described value where a plain
 * one belongs, a mandatory field that is null, or a value outside the
 * type's choices is refused with "amqp:invalid-field"; octets that are not
 * a valid encoding with "amqp:decode-error". The fault says which field.
 * One mandatory rule is not enforced: a sender's attach without
 * initial-delivery-count (2.7.3) is taken as 0, as qdrouterd 1.19 and
 * proton take it (bit 9 stays clear).
 *
 * Encoding writes each field whose bit is set in `present`, nulls for the
 * absent ones before it, and nothing after the last present one.
 *
 * Threads: any thread, on the caller's data.
 */
#ifndef JUNCTION_AMQP_PERF_H
#define JUNCTION_AMQP_PERF_H 1

#include <junction/amqp_frame.h>
#include <junction/decoder.h>

/* Descriptor codes (2.7, 2.8.14, 3.4, 3.5, 4.5, 5.3.3). */
enum {
    JN_AMQP_OPEN = 0x10,
    JN_AMQP_BEGIN = 0x11,
    JN_AMQP_ATTACH = 0x12,
    JN_AMQP_FLOW = 0x13,
    JN_AMQP_TRANSFER = 0x14,
    JN_AMQP_DISPOSITION = 0x15,
    JN_AMQP_DETACH = 0x16,
    JN_AMQP_END = 0x17,
    JN_AMQP_CLOSE = 0x18,
    JN_AMQP_ERROR = 0x1d,
    JN_AMQP_RECEIVED = 0x23,
    JN_AMQP_ACCEPTED = 0x24,
    JN_AMQP_REJECTED = 0x25,
    JN_AMQP_RELEASED = 0x26,
    JN_AMQP_MODIFIED = 0x27,
    JN_AMQP_SOURCE = 0x28,
    JN_AMQP_TARGET = 0x29,
    JN_AMQP_COORDINATOR = 0x30,
    JN_AMQP_DECLARED = 0x33,
    JN_AMQP_TRANSACTIONAL_STATE = 0x34,
    JN_AMQP_SASL_MECHANISMS = 0x40,
    JN_AMQP_SASL_INIT = 0x41,
    JN_AMQP_SASL_CHALLENGE = 0x42,
    JN_AMQP_SASL_RESPONSE = 0x43,
    JN_AMQP_SASL_OUTCOME = 0x44
};

/* The bit of field number i (0 = the first field of the list) in a
 * struct's `present` mask. */
#define JN_AMQP_FIELD(i) (1u << (i))

/* error (2.8.14). Fields: condition (0, mandatory), description, info. */
typedef struct jn_amqp_error {
    uint32_t present;
    jn_iter_t condition;   /* symbol octets */
    jn_iter_t description; /* string octets */
    jn_iter_t info;        /* the encoded map (fields) */
} jn_amqp_error_t;

/* A delivery state or outcome (3.4; declared and transactional-state, part
 * 4, 4.5.5 and 4.5.7). code is the descriptor code, 0 for a symbolic
 * descriptor that names no state known here (descriptor_symbol holds it).
 * encoded is the whole described value as it came, so that any state,
 * known or not, passes through byte for byte: jn_amqp_perf_encode() writes
 * encoded for an unknown code, and the fields below for a known one. Field
 * numbers (a state with a symbolic descriptor is also encoded as it came):
 * received 0 section-number (mandatory), 1 section-offset
 * (mandatory); rejected 0 error; modified 0 delivery-failed, 1
 * undeliverable-here, 2 message-annotations; declared 0 txn-id
 * (mandatory); transactional-state 0 txn-id (mandatory), 1 outcome. */
typedef struct jn_amqp_state {
    uint64_t code;
    bool symbolic; /* the descriptor was a symbol on the wire */
    /* a declared or transactional-state whose fields are not of their
     * types (a string txn-id, say): fields unread (present 0), written
     * back as encoded, as it came */
    bool loose;
    jn_iter_t descriptor_symbol;
    jn_iter_t encoded;
    uint32_t present;
    uint32_t section_number;
    uint64_t section_offset;
    jn_amqp_error_t error;
    bool delivery_failed;
    bool undeliverable_here;
    jn_iter_t message_annotations; /* encoded map */
    jn_iter_t txn_id;              /* binary octets */
    jn_iter_t outcome;             /* transactional-state: the encoded outcome */
} jn_amqp_state_t;

/* source or target (3.5.3, 3.5.4). code JN_AMQP_SOURCE or JN_AMQP_TARGET
 * (decoded field by field), or another descriptor (a coordinator, 4.5.1,
 * or unknown: encoded only, passed through as it came). Field numbers:
 * 0 address, 1 durable, 2 expiry-policy, 3 timeout, 4 dynamic, 5
 * dynamic-node-properties, then for a source 6 distribution-mode, 7
 * filter, 8 default-outcome, 9 outcomes, 10 capabilities, for a target 6
 * capabilities. */
typedef struct jn_amqp_terminus {
    uint64_t code;
    jn_iter_t encoded;
    uint32_t present;
    jn_iter_t address;       /* string (or symbol) octets */
    bool address_is_symbol;  /* the address came (and goes) as a symbol */
    uint32_t durable;        /* terminus-durability, default 0 (none) */
    jn_iter_t expiry_policy; /* symbol octets; absent: session-end */
    uint32_t timeout;        /* seconds */
    bool dynamic;
    jn_iter_t dynamic_node_properties; /* encoded map */
    jn_iter_t distribution_mode;       /* symbol octets */
    jn_iter_t filter;                  /* encoded map */
    jn_amqp_state_t default_outcome;
    jn_iter_t outcomes;     /* encoded symbol or array of symbols */
    jn_iter_t capabilities; /* encoded symbol or array of symbols */
} jn_amqp_terminus_t;

/* A multiple-symbol field (1.5 "multiple") is kept as its encoding: a
 * symbol or an array of symbols. So are maps (fields, filter-set, ...). */

typedef struct jn_amqp_open { /* 2.7.1 */
    uint32_t present;
    jn_iter_t container_id;                               /* 0 mandatory */
    jn_iter_t hostname;                                   /* 1 */
    uint32_t max_frame_size;                              /* 2, default 4294967295 */
    uint16_t channel_max;                                 /* 3, default 65535 */
    uint32_t idle_time_out;                               /* 4, milliseconds */
    jn_iter_t outgoing_locales, incoming_locales;         /* 5, 6 */
    jn_iter_t offered_capabilities, desired_capabilities; /* 7, 8 */
    jn_iter_t properties;                                 /* 9 */
} jn_amqp_open_t;

typedef struct jn_amqp_begin { /* 2.7.2 */
    uint32_t present;
    uint16_t remote_channel;                                          /* 0 */
    uint32_t next_outgoing_id;                                        /* 1 mandatory */
    uint32_t incoming_window;                                         /* 2 mandatory */
    uint32_t outgoing_window;                                         /* 3 mandatory */
    uint32_t handle_max;                                              /* 4, default 4294967295 */
    jn_iter_t offered_capabilities, desired_capabilities, properties; /* 5-7 */
} jn_amqp_begin_t;

typedef struct jn_amqp_attach { /* 2.7.3 */
    uint32_t present;
    jn_iter_t name;                    /* 0 mandatory */
    uint32_t handle;                   /* 1 mandatory */
    bool role;                         /* 2 mandatory: false sender, true receiver */
    uint8_t snd_settle_mode;           /* 3, default 2 (mixed) */
    uint8_t rcv_settle_mode;           /* 4, default 0 (first) */
    jn_amqp_terminus_t source, target; /* 5, 6 */
    jn_iter_t unsettled;               /* 7 */
    bool incomplete_unsettled;         /* 8 */
    uint32_t initial_delivery_count;   /* 9: a sender's; absent: 0 */
    uint64_t max_message_size;         /* 10 */
    jn_iter_t offered_capabilities, desired_capabilities, properties; /* 11-13 */
} jn_amqp_attach_t;

typedef struct jn_amqp_flow { /* 2.7.4 */
    uint32_t present;
    uint32_t next_incoming_id;                               /* 0 */
    uint32_t incoming_window;                                /* 1 mandatory */
    uint32_t next_outgoing_id;                               /* 2 mandatory */
    uint32_t outgoing_window;                                /* 3 mandatory */
    uint32_t handle, delivery_count, link_credit, available; /* 4-7 */
    bool drain, echo;                                        /* 8, 9 */
    jn_iter_t properties;                                    /* 10 */
} jn_amqp_flow_t;

typedef struct jn_amqp_transfer { /* 2.7.5 */
    uint32_t present;
    uint32_t handle;                 /* 0 mandatory */
    uint32_t delivery_id;            /* 1 */
    jn_iter_t delivery_tag;          /* 2, binary octets */
    uint32_t message_format;         /* 3 */
    bool settled, more;              /* 4, 5 */
    uint8_t rcv_settle_mode;         /* 6 */
    jn_amqp_state_t state;           /* 7 */
    bool resume, aborted, batchable; /* 8-10 */
} jn_amqp_transfer_t;

typedef struct jn_amqp_disposition { /* 2.7.6 */
    uint32_t present;
    bool role;             /* 0 mandatory */
    uint32_t first;        /* 1 mandatory */
    uint32_t last;         /* 2 */
    bool settled;          /* 3 */
    jn_amqp_state_t state; /* 4 */
    bool batchable;        /* 5 */
} jn_amqp_disposition_t;

typedef struct jn_amqp_detach { /* 2.7.7 */
    uint32_t present;
    uint32_t handle;       /* 0 mandatory */
    bool closed;           /* 1 */
    jn_amqp_error_t error; /* 2 */
} jn_amqp_detach_t;

typedef struct jn_amqp_end_close { /* end 2.7.8, close 2.7.9 */
    uint32_t present;
    jn_amqp_error_t error; /* 0 */
} jn_amqp_end_close_t;

typedef struct jn_amqp_sasl { /* 5.3.3.1 - 5.3.3.6 */
    uint32_t present;
    /* sasl-mechanisms: 0 sasl-server-mechanisms (mandatory, encoded) */
    jn_iter_t mechanisms;
    /* sasl-init: 0 mechanism (mandatory), 1 initial-response, 2 hostname */
    jn_iter_t mechanism, initial_response, hostname;
    /* sasl-challenge 0 challenge, sasl-response 0 response (mandatory) */
    jn_iter_t challenge, response;
    /* sasl-outcome: 0 code (mandatory, 0-4), 1 additional-data */
    uint8_t code;
    jn_iter_t additional_data;
} jn_amqp_sasl_t;

/* A performative or SASL frame body. code says which member is valid. */
typedef struct jn_amqp_perf {
    uint64_t code;
    bool symbolic; /* the descriptor was a symbol on the wire */
    /* a declared or transactional-state whose fields are not of their
     * types (a string txn-id, say): fields unread (present 0), written
     * back as encoded, as it came */
    bool loose;
    union {
        jn_amqp_open_t open;
        jn_amqp_begin_t begin;
        jn_amqp_attach_t attach;
        jn_amqp_flow_t flow;
        jn_amqp_transfer_t transfer;
        jn_amqp_disposition_t disposition;
        jn_amqp_detach_t detach;
        jn_amqp_end_close_t end, close;
        jn_amqp_sasl_t sasl;
    } u;
} jn_amqp_perf_t;

/* jn_amqp_perf_decode: decode the performative at the start of a frame's
 * body (2.3.2, 2.7; 5.3.3 for frame_type JN_AMQP_FRAME_SASL) into *p,
 * every field, in place. *payload (may be NULL) becomes a raw view of the
 * octets after the performative (a transfer's payload, 2.7.5). Returns 0;
 * JN_EPROTO with *fault set: "amqp:decode-error" when the body is empty, is
 * not a described list, names no performative of the frame's type, or is
 * not a valid encoding (truncated, bad sizes, ...); "amqp:invalid-field"
 * for a field of the wrong type or a null mandatory field (see the top of
 * this file). *p borrows body's octets. Any thread. */
int jn_amqp_perf_decode(const jn_iter_t *body, uint8_t frame_type, jn_amqp_perf_t *p,
                        jn_iter_t *payload, jn_amqp_fault_t *fault);

/* The octets of the longest list8 performative (descriptor, list code,
 * size and its 255 octets): the scratch jn_amqp_perf_decode_frame needs. */
#define JN_AMQP_PERF_HEAD (5 + 255)

/* jn_amqp_perf_decode_frame: jn_amqp_perf_decode of an AMQP frame's body
 * (frame type 0), the same results and faults, for the engine's input:
 * when the body's first run cuts a transfer or disposition in its usual
 * shape, its performative is copied into scratch (the caller's, at least
 * JN_AMQP_PERF_HEAD octets) and read there, not by the table-driven
 * decoder; *p's views then borrow scratch (valid while it is), *payload
 * still the body's octets where they lie. Hot path: every frame a
 * connection on the own engine receives. Any thread. */
int jn_amqp_perf_decode_frame(const jn_iter_t *body, jn_amqp_perf_t *p, jn_iter_t *payload,
                              uint8_t scratch[JN_AMQP_PERF_HEAD], jn_amqp_fault_t *fault);

/* jn_amqp_perf_encode: append p as a described list with its ulong
 * descriptor to e (2.7; 5.3.3), fields as described at the top of this
 * file; raw views are copied into e. Returns 0, e's sticky error, or
 * JN_EINVAL for an unknown code or a mandatory field not present. Thread
 * of e. */
int jn_amqp_perf_encode(jn_encoder_t *e, const jn_amqp_perf_t *p);

/* jn_amqp_perf_init: make *p an empty performative of the given code, every
 * field absent and at its default. Any thread. */
void jn_amqp_perf_init(jn_amqp_perf_t *p, uint64_t code);

/* jn_amqp_perf_name: "open", "sasl-init", ... for a performative code, or
 * "unknown". Static string. Any thread. */
const char *jn_amqp_perf_name(uint64_t code);

#endif /* JUNCTION_AMQP_PERF_H */
