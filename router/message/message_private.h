/*
 * message_private.h — the body of jn_message_t, shared by the files of the
 * message content module: message.c (lifetime, writing, accessors),
 * message_parse.c (locating sections) and message_out.c (outgoing copies).
 * Nothing outside router/message includes it.
 *
 * Who owns what (field groups below say it again):
 *   - refcount, flags, head, length: atomics, any thread;
 *   - tail: the one writer thread;
 *   - parse state: the parsing thread (the writer, or any one thread once
 *     the message is complete), in message_parse.c (the general way) and
 *     message_parse_fast.c (the one-buffer way). Everything a parse step records (section
 *     locations, header fields, `to`, router annotations, skip range) is
 *     written before `parsed` is raised with a release store and never
 *     changes afterwards, so another thread that reads `parsed` with acquire
 *     order may read what it covers.
 */
#ifndef JN_MESSAGE_PRIVATE_H
#define JN_MESSAGE_PRIVATE_H 1

#include <junction/message.h>
#include <stdatomic.h>

/* flags */
#define JN_MSG_COMPLETE 1u
#define JN_MSG_ABORTED  2u

/* Where a located item starts and how long it is. buffer holds the first
 * octet, offset is the octet's index in buffer->data, start its offset in
 * the whole content. */
typedef struct jn_msg_loc {
    const jn_buffer_t *buffer;
    size_t offset;
    size_t start;
    size_t length;
} jn_msg_loc_t;

struct jn_message {
    /* atomics, any thread */
    atomic_uint refcount;
    atomic_uint flags;           /* JN_MSG_COMPLETE, JN_MSG_ABORTED */
    _Atomic(jn_buffer_t *) head; /* first buffer; set once, release */
    atomic_size_t length;        /* octets published; writer stores, release */
    atomic_int parsed;           /* jn_message_depth_t reached; release */

    /* the writer thread */
    jn_buffer_t *tail;

    /* parse state: the parsing thread */
    bool honour_router_keys;
    bool malformed;
    int8_t last_kind;              /* section kind last located, -1: none */
    size_t pos;                    /* content offset of the next section */
    const jn_buffer_t *pos_buffer; /* a buffer at or before the one holding pos */
    size_t pos_buffer_start;       /* content offset of pos_buffer's first octet */
    const char *error;             /* why malformed, or NULL */
    const char *condition;         /* AMQP error condition, or NULL */
    char error_text[128];

    /* results (immutable once `parsed` covers them) */
    uint8_t present; /* bit per jn_section_t located */
    jn_msg_loc_t sections[JN_SEC_COUNT];
    jn_message_header_t header;
    bool has_to, has_reply_to;
    jn_iter_t to, reply_to;    /* the string octets (raw views) */
    size_t skip_from, skip_to; /* octets an outgoing copy replaces */
    jn_ra_t ra;

    /* streaming (message_stream.c). stream_copies, stream_registered,
     * stream_pos: atomics, any thread. stream_keep, stream_keep_end: the
     * writer thread. */
    atomic_int stream_copies;      /* -1 until the set of copies is final */
    atomic_uint stream_registered; /* copies registered (may exceed slots) */
    atomic_size_t stream_pos[JN_MESSAGE_STREAM_SLOTS]; /* per copy: passed up to */
    jn_buffer_t *stream_keep;      /* last buffer of the pinned prefix */
    size_t stream_keep_end;        /* content offset just after stream_keep */
    size_t stream_released;        /* writer: octets released by trimming */

    /* holding (message_stream.c). stream_gate: atomic, any thread; the
     * call that brings it to 0 releases the content. budget, charged:
     * written by the writer before its gate decrement, then read only by
     * the thread that releases the content (or frees the message). */
    atomic_llong stream_gate;
    jn_rx_budget_t *budget; /* referenced while charged */
    size_t charged;
};

/* Keeps a message's stream gate far from 0 until the set of copies is
 * final (more than any number of copies that can end before it;
 * message_stream.c). */
#define JN_STREAM_GATE_BIAS (1ll << 40)

/* jn_message_parse_init: set the parse state of a new message. Inline in
 * jn_message_new (hot path: one message per delivery received). */
static inline void jn_message_parse_init(jn_message_t *m)
{
    m->honour_router_keys = false;
    m->malformed = false;
    m->last_kind = -1;
    m->pos = 0;
    m->pos_buffer = NULL;
    m->pos_buffer_start = 0;
    m->error = NULL;
    m->condition = NULL;
    m->error_text[0] = '\0';
    m->present = 0;
    /* m->sections[k] is read only under its bit in m->present: not cleared
     * (about 40 instructions per message) */
    m->header = (jn_message_header_t){.priority = 4};
    m->has_to = m->has_reply_to = false;
    m->skip_from = m->skip_to = 0;
    /* m->ra is written when the parse passes the message annotations: by
     * jn_ra_parse, or by jn_msg_raise_depth (jn_ra_set_absent) when there
     * are none. */
    atomic_init(&m->parsed, JN_DEPTH_NONE);
}

/* jn_message_stream_init: set the streaming state of a new message
 * (message_stream.c). Inline in jn_message_new, the slots set one by one
 * (the loop was not unrolled: 12 instructions a message). */
static inline void jn_message_stream_init(jn_message_t *m)
{
    _Static_assert(JN_MESSAGE_STREAM_SLOTS == 4, "one store per slot below");
    atomic_init(&m->stream_copies, -1);
    atomic_init(&m->stream_registered, 0);
    atomic_init(&m->stream_pos[0], 0);
    atomic_init(&m->stream_pos[1], 0);
    atomic_init(&m->stream_pos[2], 0);
    atomic_init(&m->stream_pos[3], 0);
    m->stream_keep = NULL;
    m->stream_keep_end = 0;
    m->stream_released = 0;
    atomic_init(&m->stream_gate, JN_STREAM_GATE_BIAS + 1);
    m->budget = NULL;
    m->charged = 0;
}

/* jn_message_stream_fini: give back a charge not yet given back (the
 * message is being freed). */
void jn_message_stream_fini(jn_message_t *m);

/* jn_msg_parse_fast: the one-buffer way through the sections
 * (message_parse_fast.c): takes the sections that lie whole in the buffer
 * at m->pos, as the general way would, until depth is reached. Returns 0
 * (depth reached), 1 (stopped at a section start, nothing of that section
 * recorded: the general way goes on from there) or JN_EPROTO (the message
 * annotations are malformed; error set). The parsing thread. */
int jn_msg_parse_fast(jn_message_t *m, int depth);

/* jn_msg_decode_annotations: read the router annotations of the
 * message-annotations section at loc into m->ra (jn_ra_parse). Returns 0,
 * or JN_EPROTO with the error set. The parsing thread (message_parse.c). */
int jn_msg_decode_annotations(jn_message_t *m, const jn_msg_loc_t *loc);

/* jn_msg_raise_depth: raise the depth reached to depth (never lowers it),
 * with a release store, once what it covers is recorded. Passing the
 * message annotations fixes the octets an outgoing copy replaces: its
 * message annotations (none when it has none), after the header and
 * delivery annotations, which pass as they came (as 1.19 forwards them).
 * The parsing thread. */
static inline void jn_msg_raise_depth(jn_message_t *m, int depth)
{
    int old = atomic_load_explicit(&m->parsed, memory_order_relaxed);
    if (depth <= old)
        return;
    if (old < JN_DEPTH_MESSAGE_ANNOTATIONS && depth >= JN_DEPTH_MESSAGE_ANNOTATIONS) {
        const jn_msg_loc_t *s = m->sections;
        m->skip_from = 0;
        for (int k = JN_SEC_HEADER; k <= JN_SEC_DELIVERY_ANNOTATIONS; k++)
            if (m->present & (1u << k))
                m->skip_from = s[k].start + s[k].length;
        m->skip_to = m->skip_from;
        if (m->present & (1u << JN_SEC_MESSAGE_ANNOTATIONS))
            m->skip_to = s[JN_SEC_MESSAGE_ANNOTATIONS].start + s[JN_SEC_MESSAGE_ANNOTATIONS].length;
        else
            jn_ra_set_absent(&m->ra); /* none: all absent */
    }
    atomic_store_explicit(&m->parsed, depth, memory_order_release);
}

/* jn_msg_flags: JN_MSG_COMPLETE and JN_MSG_ABORTED, acquire (a reader that
 * sees a flag sees every octet published before it was set). Any thread;
 * hot path: one load where jn_message_is_complete() and
 * jn_message_is_aborted() are two calls. */
static inline unsigned jn_msg_flags(const jn_message_t *m)
{
    return atomic_load_explicit(&((jn_message_t *)m)->flags, memory_order_acquire);
}

/* jn_msg_parsed: the depth reached, acquire (see the top comment). */
static inline int jn_msg_parsed(const jn_message_t *m)
{
    return atomic_load_explicit(&((jn_message_t *)m)->parsed, memory_order_acquire);
}

#endif /* JN_MESSAGE_PRIVATE_H */
