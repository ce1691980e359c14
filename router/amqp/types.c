/*
 * types.c — the tables of the engine's composite types (amqp_private.h):
 * every performative (AMQP 1.0 part 2, 2.7), SASL frame body (part 5,
 * 5.3.3), error (2.8.14), terminus (part 3, 3.5.3 and 3.5.4) and delivery
 * state (3.4; part 4, 4.5.5 and 4.5.7), with their fields in list order.
 * The decoder (decode.c) and encoder (encode.c) are driven by them.
 */
#include "amqp_private.h"

#include <stdarg.h>
#include <stdio.h>

#include <string.h>

#define F(T, n, k, m, member, d)                                                                   \
    {                                                                                              \
        n, JN_K_##k, m, 0, (uint16_t)offsetof(T, member), d                                        \
    }
#define FMAX(T, n, k, m, member, d, mx)                                                            \
    {                                                                                              \
        n, JN_K_##k, m, mx, (uint16_t)offsetof(T, member), d                                       \
    }
#define N(a) (uint8_t)(sizeof a / sizeof a[0])

static const jn_amqp_fdesc_t open_f[] = {
    F(jn_amqp_open_t, "container-id", STRING, true, container_id, 0),
    F(jn_amqp_open_t, "hostname", STRING, false, hostname, 0),
    F(jn_amqp_open_t, "max-frame-size", UINT, false, max_frame_size, UINT32_MAX),
    F(jn_amqp_open_t, "channel-max", USHORT, false, channel_max, 65535),
    F(jn_amqp_open_t, "idle-time-out", UINT, false, idle_time_out, 0),
    F(jn_amqp_open_t, "outgoing-locales", SYMBOLS, false, outgoing_locales, 0),
    F(jn_amqp_open_t, "incoming-locales", SYMBOLS, false, incoming_locales, 0),
    F(jn_amqp_open_t, "offered-capabilities", SYMBOLS, false, offered_capabilities, 0),
    F(jn_amqp_open_t, "desired-capabilities", SYMBOLS, false, desired_capabilities, 0),
    F(jn_amqp_open_t, "properties", MAP, false, properties, 0),
};

static const jn_amqp_fdesc_t begin_f[] = {
    F(jn_amqp_begin_t, "remote-channel", USHORT, false, remote_channel, 0),
    F(jn_amqp_begin_t, "next-outgoing-id", UINT, true, next_outgoing_id, 0),
    F(jn_amqp_begin_t, "incoming-window", UINT, true, incoming_window, 0),
    F(jn_amqp_begin_t, "outgoing-window", UINT, true, outgoing_window, 0),
    F(jn_amqp_begin_t, "handle-max", UINT, false, handle_max, UINT32_MAX),
    F(jn_amqp_begin_t, "offered-capabilities", SYMBOLS, false, offered_capabilities, 0),
    F(jn_amqp_begin_t, "desired-capabilities", SYMBOLS, false, desired_capabilities, 0),
    F(jn_amqp_begin_t, "properties", MAP, false, properties, 0),
};

static const jn_amqp_fdesc_t attach_f[] = {
    F(jn_amqp_attach_t, "name", STRING, true, name, 0),
    F(jn_amqp_attach_t, "handle", UINT, true, handle, 0),
    F(jn_amqp_attach_t, "role", BOOL, true, role, 0),
    FMAX(jn_amqp_attach_t, "snd-settle-mode", UBYTE, false, snd_settle_mode, 2, 2),
    FMAX(jn_amqp_attach_t, "rcv-settle-mode", UBYTE, false, rcv_settle_mode, 0, 1),
    F(jn_amqp_attach_t, "source", SOURCE, false, source, 0),
    F(jn_amqp_attach_t, "target", TARGET, false, target, 0),
    F(jn_amqp_attach_t, "unsettled", MAP, false, unsettled, 0),
    F(jn_amqp_attach_t, "incomplete-unsettled", BOOL, false, incomplete_unsettled, 0),
    F(jn_amqp_attach_t, "initial-delivery-count", UINT, false, initial_delivery_count, 0),
    F(jn_amqp_attach_t, "max-message-size", ULONG, false, max_message_size, 0),
    F(jn_amqp_attach_t, "offered-capabilities", SYMBOLS, false, offered_capabilities, 0),
    F(jn_amqp_attach_t, "desired-capabilities", SYMBOLS, false, desired_capabilities, 0),
    F(jn_amqp_attach_t, "properties", MAP, false, properties, 0),
};

static const jn_amqp_fdesc_t flow_f[] = {
    F(jn_amqp_flow_t, "next-incoming-id", UINT, false, next_incoming_id, 0),
    F(jn_amqp_flow_t, "incoming-window", UINT, true, incoming_window, 0),
    F(jn_amqp_flow_t, "next-outgoing-id", UINT, true, next_outgoing_id, 0),
    F(jn_amqp_flow_t, "outgoing-window", UINT, true, outgoing_window, 0),
    F(jn_amqp_flow_t, "handle", UINT, false, handle, 0),
    F(jn_amqp_flow_t, "delivery-count", UINT, false, delivery_count, 0),
    F(jn_amqp_flow_t, "link-credit", UINT, false, link_credit, 0),
    F(jn_amqp_flow_t, "available", UINT, false, available, 0),
    F(jn_amqp_flow_t, "drain", BOOL, false, drain, 0),
    F(jn_amqp_flow_t, "echo", BOOL, false, echo, 0),
    F(jn_amqp_flow_t, "properties", MAP, false, properties, 0),
};

static const jn_amqp_fdesc_t transfer_f[] = {
    F(jn_amqp_transfer_t, "handle", UINT, true, handle, 0),
    F(jn_amqp_transfer_t, "delivery-id", UINT, false, delivery_id, 0),
    F(jn_amqp_transfer_t, "delivery-tag", BINARY, false, delivery_tag, 0),
    F(jn_amqp_transfer_t, "message-format", UINT, false, message_format, 0),
    F(jn_amqp_transfer_t, "settled", BOOL, false, settled, 0),
    F(jn_amqp_transfer_t, "more", BOOL, false, more, 0),
    FMAX(jn_amqp_transfer_t, "rcv-settle-mode", UBYTE, false, rcv_settle_mode, 0, 1),
    F(jn_amqp_transfer_t, "state", STATE, false, state, 0),
    F(jn_amqp_transfer_t, "resume", BOOL, false, resume, 0),
    F(jn_amqp_transfer_t, "aborted", BOOL, false, aborted, 0),
    F(jn_amqp_transfer_t, "batchable", BOOL, false, batchable, 0),
};

static const jn_amqp_fdesc_t disposition_f[] = {
    F(jn_amqp_disposition_t, "role", BOOL, true, role, 0),
    F(jn_amqp_disposition_t, "first", UINT, true, first, 0),
    F(jn_amqp_disposition_t, "last", UINT, false, last, 0),
    F(jn_amqp_disposition_t, "settled", BOOL, false, settled, 0),
    F(jn_amqp_disposition_t, "state", STATE, false, state, 0),
    F(jn_amqp_disposition_t, "batchable", BOOL, false, batchable, 0),
};

static const jn_amqp_fdesc_t detach_f[] = {
    F(jn_amqp_detach_t, "handle", UINT, true, handle, 0),
    F(jn_amqp_detach_t, "closed", BOOL, false, closed, 0),
    F(jn_amqp_detach_t, "error", ERROR, false, error, 0),
};

static const jn_amqp_fdesc_t end_close_f[] = {
    F(jn_amqp_end_close_t, "error", ERROR, false, error, 0),
};

static const jn_amqp_fdesc_t mechanisms_f[] = {
    F(jn_amqp_sasl_t, "sasl-server-mechanisms", SYMBOLS, true, mechanisms, 0),
};
static const jn_amqp_fdesc_t init_f[] = {
    F(jn_amqp_sasl_t, "mechanism", SYMBOL, true, mechanism, 0),
    F(jn_amqp_sasl_t, "initial-response", BINARY, false, initial_response, 0),
    F(jn_amqp_sasl_t, "hostname", STRING, false, hostname, 0),
};
static const jn_amqp_fdesc_t challenge_f[] = {
    F(jn_amqp_sasl_t, "challenge", BINARY, true, challenge, 0),
};
static const jn_amqp_fdesc_t response_f[] = {
    F(jn_amqp_sasl_t, "response", BINARY, true, response, 0),
};
static const jn_amqp_fdesc_t outcome_f[] = {
    FMAX(jn_amqp_sasl_t, "code", UBYTE, true, code, 0, 4),
    F(jn_amqp_sasl_t, "additional-data", BINARY, false, additional_data, 0),
};

static const jn_amqp_fdesc_t error_f[] = {
    F(jn_amqp_error_t, "condition", SYMBOL, true, condition, 0),
    F(jn_amqp_error_t, "description", STRING, false, description, 0),
    F(jn_amqp_error_t, "info", MAP, false, info, 0),
};

/* The target's fields are the source's first six and its capabilities. */
#define TERMINUS_COMMON                                                                            \
    F(jn_amqp_terminus_t, "address", ADDRESS, false, address, 0),                                  \
        FMAX(jn_amqp_terminus_t, "durable", UINT, false, durable, 0, 2),                           \
        F(jn_amqp_terminus_t, "expiry-policy", SYMBOL, false, expiry_policy, 0),                   \
        F(jn_amqp_terminus_t, "timeout", UINT, false, timeout, 0),                                 \
        F(jn_amqp_terminus_t, "dynamic", BOOL, false, dynamic, 0),                                 \
        F(jn_amqp_terminus_t, "dynamic-node-properties", MAP, false, dynamic_node_properties, 0)

static const jn_amqp_fdesc_t source_f[] = {
    TERMINUS_COMMON,
    F(jn_amqp_terminus_t, "distribution-mode", SYMBOL, false, distribution_mode, 0),
    F(jn_amqp_terminus_t, "filter", MAP, false, filter, 0),
    F(jn_amqp_terminus_t, "default-outcome", STATE, false, default_outcome, 0),
    F(jn_amqp_terminus_t, "outcomes", SYMBOLS, false, outcomes, 0),
    F(jn_amqp_terminus_t, "capabilities", SYMBOLS, false, capabilities, 0),
};
static const jn_amqp_fdesc_t target_f[] = {
    TERMINUS_COMMON,
    F(jn_amqp_terminus_t, "capabilities", SYMBOLS, false, capabilities, 0),
};

static const jn_amqp_fdesc_t received_f[] = {
    F(jn_amqp_state_t, "section-number", UINT, true, section_number, 0),
    F(jn_amqp_state_t, "section-offset", ULONG, true, section_offset, 0),
};
static const jn_amqp_fdesc_t rejected_f[] = {
    F(jn_amqp_state_t, "error", ERROR, false, error, 0),
};
static const jn_amqp_fdesc_t modified_f[] = {
    F(jn_amqp_state_t, "delivery-failed", BOOL, false, delivery_failed, 0),
    F(jn_amqp_state_t, "undeliverable-here", BOOL, false, undeliverable_here, 0),
    F(jn_amqp_state_t, "message-annotations", MAP, false, message_annotations, 0),
};
static const jn_amqp_fdesc_t declared_f[] = {
    F(jn_amqp_state_t, "txn-id", BINARY, true, txn_id, 0),
};
static const jn_amqp_fdesc_t txn_state_f[] = {
    F(jn_amqp_state_t, "txn-id", BINARY, true, txn_id, 0),
    F(jn_amqp_state_t, "outcome", DESCRIBED, false, outcome, 0),
};

#define PERF(code, name, f, T)                                                                     \
    {                                                                                              \
        code, name, "amqp:" name ":list", f, N(f), 0, sizeof(T)                                    \
    }
#define NESTED(code, name, f, T)                                                                   \
    {                                                                                              \
        code, name, "amqp:" name ":list", f, N(f), offsetof(T, present), sizeof(T)                 \
    }
#define EMPTY(code, name)                                                                          \
    {                                                                                              \
        code, name, "amqp:" name ":list", NULL, 0, offsetof(jn_amqp_state_t, present),             \
            sizeof(jn_amqp_state_t)                                                                \
    }

/* The performatives first, in code order (jn_amqp_tdesc_by_code indexes them). */
static const jn_amqp_tdesc_t types[] = {
    PERF(JN_AMQP_OPEN, "open", open_f, jn_amqp_open_t),
    PERF(JN_AMQP_BEGIN, "begin", begin_f, jn_amqp_begin_t),
    PERF(JN_AMQP_ATTACH, "attach", attach_f, jn_amqp_attach_t),
    PERF(JN_AMQP_FLOW, "flow", flow_f, jn_amqp_flow_t),
    PERF(JN_AMQP_TRANSFER, "transfer", transfer_f, jn_amqp_transfer_t),
    PERF(JN_AMQP_DISPOSITION, "disposition", disposition_f, jn_amqp_disposition_t),
    PERF(JN_AMQP_DETACH, "detach", detach_f, jn_amqp_detach_t),
    PERF(JN_AMQP_END, "end", end_close_f, jn_amqp_end_close_t),
    PERF(JN_AMQP_CLOSE, "close", end_close_f, jn_amqp_end_close_t),
    PERF(JN_AMQP_SASL_MECHANISMS, "sasl-mechanisms", mechanisms_f, jn_amqp_sasl_t),
    PERF(JN_AMQP_SASL_INIT, "sasl-init", init_f, jn_amqp_sasl_t),
    PERF(JN_AMQP_SASL_CHALLENGE, "sasl-challenge", challenge_f, jn_amqp_sasl_t),
    PERF(JN_AMQP_SASL_RESPONSE, "sasl-response", response_f, jn_amqp_sasl_t),
    PERF(JN_AMQP_SASL_OUTCOME, "sasl-outcome", outcome_f, jn_amqp_sasl_t),
    PERF(JN_AMQP_ERROR, "error", error_f, jn_amqp_error_t),
    NESTED(JN_AMQP_SOURCE, "source", source_f, jn_amqp_terminus_t),
    NESTED(JN_AMQP_TARGET, "target", target_f, jn_amqp_terminus_t),
    NESTED(JN_AMQP_RECEIVED, "received", received_f, jn_amqp_state_t),
    EMPTY(JN_AMQP_ACCEPTED, "accepted"),
    NESTED(JN_AMQP_REJECTED, "rejected", rejected_f, jn_amqp_state_t),
    EMPTY(JN_AMQP_RELEASED, "released"),
    NESTED(JN_AMQP_MODIFIED, "modified", modified_f, jn_amqp_state_t),
    NESTED(JN_AMQP_DECLARED, "declared", declared_f, jn_amqp_state_t),
    NESTED(JN_AMQP_TRANSACTIONAL_STATE, "transactional-state", txn_state_f, jn_amqp_state_t),
};

const jn_amqp_tdesc_t *jn_amqp_tdesc_by_code(uint64_t code)
{
    /* the performatives first, in code order: a transfer, disposition or
     * flow is found by index, not by a search */
    if (code >= JN_AMQP_OPEN && code <= JN_AMQP_CLOSE)
        return &types[code - JN_AMQP_OPEN];
    for (size_t i = JN_AMQP_CLOSE - JN_AMQP_OPEN + 1; i < sizeof types / sizeof types[0]; i++)
        if (types[i].code == code)
            return &types[i];
    return NULL;
}

uint64_t jn_amqp_code_by_symbol(const jn_iter_t *sym)
{
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (jn_iter_equal(sym, types[i].symbol))
            return types[i].code;
    /* the coordinator target (part 4, 4.5.1) has no table: passed through */
    return jn_iter_equal(sym, "amqp:coordinator:list") ? JN_AMQP_COORDINATOR : 0;
}

void jn_amqp_perf_init(jn_amqp_perf_t *p, uint64_t code)
{
    const jn_amqp_tdesc_t *t = jn_amqp_tdesc_by_code(code);
    bool perf = t && t->present_at == 0;
    /* only the member of the union that code names: the encoder reads no other */
    memset(p, 0, perf ? offsetof(jn_amqp_perf_t, u) + t->size : sizeof *p);
    p->code = code;
    if (perf)
        jn_amqp_defaults_zeroed(t, &p->u);
}

const char *jn_amqp_perf_name(uint64_t code)
{
    const jn_amqp_tdesc_t *t = jn_amqp_tdesc_by_code(code);
    return t ? t->name : "unknown";
}

int jn_amqp_fail(jn_amqp_fault_t *fault, const char *condition, const char *fmt, ...)
{
    va_list ap;
    fault->condition = condition;
    va_start(ap, fmt);
    vsnprintf(fault->description, sizeof fault->description, fmt, ap);
    va_end(ap);
    return JN_EPROTO;
}
