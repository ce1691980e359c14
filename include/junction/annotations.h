/*
 * junction/annotations.h — router annotations: the router's own keys in the
 * message-annotations section (docs/protocol.md, "The mesh": "Router annotations"), read
 * on the way in and composed on the way out.
 *
 * Reading (jn_ra_parse) finds the router keys x-opt-qd.to, .phase, .ingress,
 * .trace and .stream, checks their types, and records where the user's
 * annotations are so they can be copied byte for byte. Router keys are
 * symbols; a string key that looks like one is a user annotation, as in
 * qdrouterd 1.19. x-opt-qd.class, the bare prefix "x-opt-qd." and any other
 * symbol key in the x-opt-qd. namespace are router-owned and dropped.
 *
 * Unlike 1.19, which drops every entry after the first router key, user
 * annotations placed after a router key are kept (they are copied out in
 * their original order, before the router keys). On the wire we still emit
 * the router keys last, as 1.19 expects.
 *
 * Composing (jn_ra_compose) writes a whole message-annotations section: the
 * user annotations, then, toward another router, x-opt-qd.phase (if not 0),
 * x-opt-qd.stream (if set), x-opt-qd.to, x-opt-qd.ingress and x-opt-qd.trace
 * with this router's node id appended — in that order.
 *
 * Threads: the thread that holds the message.
 */
#ifndef JUNCTION_ANNOTATIONS_H
#define JUNCTION_ANNOTATIONS_H 1

#include <junction/buffer.h>
#include <junction/iterator.h>

/* Most separate runs of user entries remembered; more runs are still
 * handled, by walking the section again when composing. */
#define JN_RA_MAX_USER_RUNS 4

/* What was read from one message-annotations section. Views point into the
 * message's buffers; valid while the message is referenced. */
typedef struct jn_ra {
    bool section_present; /* the message has a message-annotations section */
    bool has_to;
    bool has_ingress;
    bool has_trace;
    bool stream;
    bool trace_plain;     /* has_trace, and the fast parse saw every entry a
                           * plain str8 or str32 filling the run exactly */
    int32_t phase;        /* x-opt-qd.phase, 0 when absent */
    jn_iter_t to;         /* x-opt-qd.to (str octets, raw view) */
    jn_iter_t ingress;    /* x-opt-qd.ingress (str octets) */
    jn_iter_t trace;      /* x-opt-qd.trace: the encoded list elements */
    uint32_t trace_count; /* entries in the trace list */
    uint32_t trace_size;  /* octets of the encoded trace elements */
    /* user annotations */
    uint32_t user_count;                      /* user entries (a key with its value = 1) */
    uint32_t user_size;                       /* octets of their encodings */
    uint32_t user_run_count;                  /* separate runs of user entries */
    jn_iter_t user_runs[JN_RA_MAX_USER_RUNS]; /* raw views, in order */
    jn_iter_t section_map;                    /* the map's encoded entries (for > MAX runs) */
} jn_ra_t;

/* jn_ra_set_absent: make *ra say "no message-annotations section": every
 * flag and count 0, as a zeroed jn_ra_t. The views are left as they are:
 * none is read while its flag or count says it is absent (to, ingress and
 * trace only under has_to, has_ingress, has_trace; user_runs[i] only for
 * i < user_run_count; section_map only when user_run_count is above
 * JN_RA_MAX_USER_RUNS). A reader must keep to that. Hot path: a message
 * without annotations (the common case) costs a few stores here instead of
 * clearing the whole struct (about 700 octets). */
static inline void jn_ra_set_absent(jn_ra_t *ra)
{
    ra->section_present = false;
    ra->has_to = false;
    ra->has_ingress = false;
    ra->has_trace = false;
    ra->stream = false;
    ra->trace_plain = false;
    ra->phase = 0;
    ra->trace_count = 0;
    ra->trace_size = 0;
    ra->user_count = 0;
    ra->user_size = 0;
    ra->user_run_count = 0;
}

/* What this router adds on one outgoing hop. Borrowed strings. */
typedef struct jn_ra_hop {
    bool to_router;               /* false: toward an endpoint, user keys only */
    const char *node_id;          /* this router's node id, "0/<id>" */
    const jn_iter_t *to_override; /* set by this router: the octets left in
                                   * the view are sent (NULL: keep received) */
    int32_t phase;                /* phase to send with to_override (0: none);
                                   * without to_override, 0 keeps the received
                                   * phase and non-zero replaces it */
    bool stream;                  /* send x-opt-qd.stream (also sent when the
                                   * received message had it) */
} jn_ra_hop_t;

/* jn_ra_parse: read the message-annotations section whose whole encoding
 * (descriptor included) is in section (a raw view; NULL or an empty view when
 * the message has none) into *out. With honour_router_keys false, router
 * keys are not read (nor type-checked) and are dropped (stripAnnotations
 * in/both). why may be NULL. *out is set as jn_ra_set_absent leaves it,
 * then filled: a view is valid only under its flag or count (as there).
 * Returns 0; JN_EPROTO for a malformed section (not a described map of the
 * message-annotations descriptor, odd count, bad encoding, a key that is not
 * a symbol, ulong or string) with *why set to a static description; or
 * JN_EINVAL for a router key of the wrong type (to or ingress not str, trace
 * not a list of str, phase or stream not an integer), with *why set, which
 * is rejected as amqp:invalid-field (docs/protocol.md, "Router annotations"). */
int jn_ra_parse(const jn_iter_t *section, bool honour_router_keys, jn_ra_t *out, const char **why);

/* jn_ra_trace_contains: true when the trace read by jn_ra_parse lists
 * node_id (e.g. "0/A"). ra may be NULL (false). */
bool jn_ra_trace_contains(const jn_ra_t *ra, const char *node_id);

/* jn_ra_parse_in_place: jn_ra_parse() of the section's len octets at p,
 * which lie in one run of memory (in buffer's published octets, or plain
 * memory when buffer is NULL), for the common shapes only (the descriptor
 * a smallulong, keys and values the fast reader takes, router values as
 * senders write them). Returns 0 with *out filled as jn_ra_parse() fills
 * it, or 1 with *out as jn_ra_set_absent() leaves it when the section is
 * anything else, malformed included: jn_ra_parse() then reads it and
 * reports any error. Hot path (the message parse's one-buffer way, every
 * message on an inter-router link): no iterator is built. The thread that
 * holds the message. */
int jn_ra_parse_in_place(const jn_buffer_t *buffer, const uint8_t *p, size_t len,
                         bool honour_router_keys, jn_ra_t *out);

/* A step of jn_ra_trace_each: ctx as passed there, entry a raw view of one
 * trace entry's string octets (borrowed for the call). Returns true to go
 * on to the next entry, false to stop. */
typedef bool jn_ra_trace_fn(void *ctx, const jn_iter_t *entry);

/* jn_ra_trace_each: call fn for each string entry of the trace that
 * jn_ra_parse read into ra (x-opt-qd.trace, docs/protocol.md "Router
 * annotations"), in order, until fn returns false. Nothing when ra is NULL
 * or has no trace. Hot path (an inter-router message's trace, walked for
 * the links it may not go back on): a trace in one run of plain str8 or
 * str32 entries is read in place, without a decoder; any other through the
 * decoder, with the same entries. The thread that holds the message. */
void jn_ra_trace_each(const jn_ra_t *ra, jn_ra_trace_fn *fn, void *ctx);

/* jn_ra_compose_section: jn_ra_compose() once there is a section to write;
 * do not call directly. */
int jn_ra_compose_section(const jn_ra_t *in, const jn_ra_hop_t *hop, jn_buffer_list_t *out);

/* jn_ra_compose: append to out the message-annotations section for one hop:
 * descriptor, map (smallest encoding), user entries byte for byte, then the
 * router keys for the hop. in may be NULL (a message without annotations,
 * e.g. one this router made). Appends nothing when there is nothing to send
 * (no user entries and !hop->to_router). Returns 0; JN_ENOMEM (out is left
 * as it was); JN_EINVAL when hop->to_router and hop->node_id is NULL;
 * JN_EOVERFLOW when the section would exceed 4 GiB. Hot path: no heap;
 * sizes are computed first, then octets are written once; the common copy
 * toward an endpoint of a message without user annotations (nothing to
 * send) is decided inline, without a call. The thread that holds the
 * message. */
static inline int jn_ra_compose(const jn_ra_t *in, const jn_ra_hop_t *hop, jn_buffer_list_t *out)
{
    if (!hop->to_router && (!in || in->user_count == 0))
        return 0;
    return jn_ra_compose_section(in, hop, out);
}

#endif /* JUNCTION_ANNOTATIONS_H */
