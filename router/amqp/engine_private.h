/*
 * engine_private.h — the structs of the connection engine
 * (junction/amqp_engine.h) and the calls between its files: conn.c (the
 * protocol header, open, close, idle-time-out, the input loop and the
 * input loop), output.c (the output: composed frames with referenced
 * payload runs between them), session.c (begin, end, channel maps, session
 * windows), link.c (attach, detach, handle maps, link flow state),
 * transfer.c (transfers both ways) and disposition.c (deliveries by id,
 * dispositions both ways). Every struct belongs to the thread that owns the
 * connection.
 */
#ifndef JN_AMQP_ENGINE_PRIVATE_H
#define JN_AMQP_ENGINE_PRIVATE_H 1

#include <junction/amqp_delivery.h>

#include "amqp_private.h"

/* The highest handle we let the peer use on a session (2.7.2 handle-max):
 * handles index a table that grows on demand, so the bound keeps a peer
 * from making us allocate for a handle it picked at random. */
#define JN_AMQP_HANDLE_MAX 65535u

/* The widest span of delivery-ids from the oldest one we hold unsettled
 * to a new one the peer starts (2.6.12): the table of a session's
 * deliveries is indexed by id, so the bound keeps a peer from making us
 * allocate for an id it picked at random. A wider one ends the session
 * with amqp:resource-limit-exceeded. */
#define JN_AMQP_SPAN_MAX (1u << 20)

/* A table of pointers indexed by channel or handle, grown on demand. */
typedef struct jn_amqp_slots {
    void **at;
    uint32_t cap;
} jn_amqp_slots_t;

/* Deliveries of one direction of a session by delivery-id (2.6.12): a ring
 * of the ids from base (the oldest still held) to base + count - 1, the
 * next id expected; a slot is NULL once its delivery was freed. */
typedef struct jn_amqp_dtable {
    jn_amqp_delivery_t **at;
    uint32_t cap;   /* a power of two, or 0 */
    uint32_t head;  /* slot of base */
    uint32_t base;  /* serial */
    uint32_t count; /* ids from base */
    bool started;   /* an id was taken (base is meaningful) */
} jn_amqp_dtable_t;

struct jn_amqp_delivery {
    jn_amqp_link_t *link;
    uint32_t id;             /* delivery-id, once the first frame went or came */
    bool outgoing;           /* we send it */
    bool started;            /* its first frame went or came (id valid) */
    bool complete;           /* its last frame went or came */
    bool settled;            /* by us: sent pre-settled, or settled before its end */
    bool remote_settled;     /* the peer settled it */
    bool held;               /* in its session's table */
    bool busy;               /* in a callback: settling it does not free it */
    uint8_t rcv_settle_mode; /* 2.8.3 */
    uint8_t tag_len;
    bool tag_cut; /* incoming: the peer's tag was longer than JN_AMQP_TAG_MAX */
    uint8_t tag[JN_AMQP_TAG_MAX];
    /* 0, or state went into the frame whose transfer id (2.5.6) ends in
     * the 15 bits state_at & 0x7fff (0x8000 set): once that frame went
     * out, state is dropped. It sits in the padding after tag, so the
     * struct stays 80 octets (one memset per delivery); 32,768 frames of
     * the session between two frames of one delivery would be needed to
     * mistake one id for another. */
    uint16_t state_at;
    uint32_t message_format;
    uint32_t state_len; /* outgoing: the state for its next frame (0: none) */
    uint8_t *state;     /* owned, encoded; NULL when state_len is 0 */
    void *user;
};

/* One of our dispositions held for batching (2.7.6): ids first .. last of
 * role, settled, with the state's encoding (state_len 0: none). */
typedef struct jn_amqp_pending {
    jn_amqp_session_t *session;
    bool role;
    bool settled;
    uint32_t first, last;
    uint32_t state_len;
    uint8_t *state; /* owned; NULL when state_len is 0 */
} jn_amqp_pending_t;

/* A run of payload octets referenced in the output (output.c): it goes
 * after the first `at` octets of the composed frames. buf holds one
 * reference (NULL for plain bytes the caller keeps). */
typedef struct jn_amqp_oref {
    size_t at;
    const uint8_t *data;
    size_t len;
    jn_buffer_t *buf;
} jn_amqp_oref_t;

struct jn_amqp_link {
    jn_amqp_session_t *session;
    char *name;
    bool role;             /* ours: JN_AMQP_SENDER or JN_AMQP_RECEIVER */
    uint32_t handle;       /* ours */
    int64_t remote_handle; /* the peer's, -1 before its attach (or after detach) */
    bool attach_sent, attach_rcvd, detach_sent, detach_rcvd;
    bool hold_detach; /* the user answers the peer's detach (jn_amqp_link_hold_detach) */
    uint32_t initial_delivery_count; /* the sender's attach (2.7.3) */
    uint32_t delivery_count;         /* serial (2.6.7) */
    uint32_t credit;                 /* link-credit */
    uint32_t limit;                  /* receiver: delivery-count + credit granted */
    uint32_t available;
    bool drain;
    uint8_t rcv_settle_mode;     /* the receiver's attach (2.7.3) */
    jn_amqp_delivery_t *current; /* a delivery not yet whole, either way */
    void *user;
};

struct jn_amqp_session {
    jn_amqp_conn_t *conn;
    uint16_t channel;
    int32_t remote_channel; /* -1 before the peer's begin (or after its end) */
    bool begin_sent, begin_rcvd, end_sent, end_rcvd;
    uint32_t initial_outgoing_id; /* our begin's next-outgoing-id */
    jn_amqp_window_t w;           /* 2.5.6 */
    uint32_t remote_handle_max;   /* the peer's begin (2.7.2) */
    jn_amqp_slots_t links;        /* by our handle */
    jn_amqp_slots_t remote_links; /* by the peer's handle */
    uint32_t next_delivery_id;    /* the next of ours (2.6.12) */
    jn_amqp_dtable_t sent;        /* our deliveries, unsettled by us */
    jn_amqp_dtable_t received;    /* the peer's, unsettled by us */
    void *user;
};

struct jn_amqp_conn {
    jn_amqp_conn_config_t cfg; /* strings owned (copies) */
    jn_amqp_handler_t h;
    bool header_rcvd, header_sent, open_sent, open_rcvd, close_sent, close_rcvd, refused;
    uint32_t remote_max_frame;
    uint16_t remote_channel_max;
    uint32_t remote_idle_time_out;
    bool clock_set;
    uint64_t last_in, last_out; /* ms, the caller's clock */
    uint64_t now;
    jn_amqp_fault_t fault;
    jn_amqp_slots_t sessions;        /* by our channel */
    jn_amqp_slots_t remote_sessions; /* by the peer's channel */
    jn_encoder_t out;                /* frames composed, not yet taken */
    size_t out_pos;                  /* octets of out taken */
    jn_amqp_oref_t *refs;            /* payload runs between them */
    uint32_t nrefs, refs_cap, ref_head;
    size_t ref_off;             /* octets of refs[ref_head] taken */
    size_t ref_octets;          /* octets referenced and not yet taken */
    jn_amqp_pending_t *pending; /* our dispositions held (disposition.c) */
    uint32_t npending, pending_cap;
    bool flushing;
};

/* jn_amqp_slots_set: at[i] = v, growing the table (zeroed) as needed.
 * Returns 0 or JN_ENOMEM. Any thread. */
int jn_amqp_slots_set(jn_amqp_slots_t *t, uint32_t i, void *v);

/* jn_amqp_slots_get: at[i], NULL past the table. Any thread. */
static inline void *jn_amqp_slots_get(const jn_amqp_slots_t *t, uint32_t i)
{
    return i < t->cap ? t->at[i] : NULL;
}

/* jn_amqp_slots_free_index: the lowest index up to max whose slot is
 * empty, or -1. Any thread. */
int64_t jn_amqp_slots_free_index(const jn_amqp_slots_t *t, uint32_t max);

/* jn_amqp_conn_send: compose p as one frame on channel into c's output
 * (2.3.1), at most the peer's max-frame-size. On failure nothing is left
 * in the output. Returns 0, JN_EINVAL (p cannot be encoded), JN_EOVERFLOW
 * (larger than the peer's max-frame-size), JN_ENOMEM. Owning thread. */
int jn_amqp_conn_send(jn_amqp_conn_t *c, uint16_t channel, const jn_amqp_perf_t *p);

/* jn_amqp_conn_flush: compose our held dispositions (before any other
 * frame, so that order holds). Returns 0 or an output error. Owning
 * thread. */
int jn_amqp_conn_flush(jn_amqp_conn_t *c);

/* jn_amqp_out_header: our protocol header into the output, if not sent
 * yet. Returns 0 or the output's error. Owning thread. */
int jn_amqp_out_header(jn_amqp_conn_t *c);

/* jn_amqp_out_refs_grow: room for more references in c's output (the
 * list doubled). Returns 0 or JN_ENOMEM. Owning thread. */
int jn_amqp_out_refs_grow(jn_amqp_conn_t *c);

/* jn_amqp_out_ref: reference len octets at data (in buf, which gets a
 * reference, or plain bytes when buf is NULL) after what is composed so
 * far. Returns 0 or JN_ENOMEM. Owning thread. Inline: every frame of a
 * transfer references its payload (hot path); the list grows out of
 * line. */
static inline int jn_amqp_out_ref(jn_amqp_conn_t *c, const uint8_t *data, size_t len,
                                  const jn_buffer_t *buf)
{
    if (len == 0)
        return 0;
    if (JN_UNLIKELY(c->nrefs == c->refs_cap) && jn_amqp_out_refs_grow(c) != 0)
        return JN_ENOMEM;
    jn_buffer_t *b = buf ? jn_buffer_ref((jn_buffer_t *)buf) : NULL;
    c->refs[c->nrefs++] = (jn_amqp_oref_t){.at = c->out.size, .data = data, .len = len, .buf = b};
    c->ref_octets += len;
    return 0;
}

/* jn_amqp_out_ref_given: jn_amqp_out_ref of a run whose reference on buf
 * (not NULL, len not 0) the caller hands over, where the list has room
 * (the caller made it). Owning thread. Inline: the last frame of each run
 * a copy sends (hot path). */
static inline void jn_amqp_out_ref_given(jn_amqp_conn_t *c, const uint8_t *data, size_t len,
                                         const jn_buffer_t *buf)
{
    c->refs[c->nrefs++] =
        (jn_amqp_oref_t){.at = c->out.size, .data = data, .len = len, .buf = (jn_buffer_t *)buf};
    c->ref_octets += len;
}

/* jn_amqp_out_rollback: drop what was composed and referenced after the
 * first start octets of the composed frames. Owning thread. */
void jn_amqp_out_rollback(jn_amqp_conn_t *c, size_t start);

/* jn_amqp_out_free: drop the whole output with its references, and our
 * dispositions held. Owning thread. */
void jn_amqp_out_free(jn_amqp_conn_t *c);

/* jn_amqp_conn_refuse: the peer broke a rule: record the fault, send open
 * (if not yet) and close with its condition (2.7.9), stop reading, call
 * on_closed. Returns JN_EPROTO (JN_ENOMEM if the output failed). Owning
 * thread. */
JN_PRINTF(3, 4)
int jn_amqp_conn_refuse(jn_amqp_conn_t *c, const char *condition, const char *fmt, ...);

/* jn_amqp_error_set: fill err with condition and description (C strings,
 * borrowed; description may be NULL) and mark it present. Any thread. */
void jn_amqp_error_set(jn_amqp_error_t *err, const char *condition, const char *description);

/* jn_amqp_session_input: apply the peer's begin, end, attach, flow,
 * transfer (payload the view of its payload), disposition or detach p, read
 * on channel (2.5, 2.6). Returns 0, JN_EPROTO (the connection was
 * refused), JN_ENOMEM. Owning thread. */
int jn_amqp_session_input(jn_amqp_conn_t *c, uint16_t channel, const jn_amqp_perf_t *p,
                          const jn_iter_t *payload);

/* jn_amqp_session_fail: a session error (2.5.3): end s with condition and
 * the description; its frames are then dropped until the peer's end.
 * Returns 0 or JN_ENOMEM. Owning thread. */
JN_PRINTF(3, 4)
int jn_amqp_session_fail(jn_amqp_session_t *s, const char *condition, const char *fmt, ...);

/* jn_amqp_session_flow_fields: p becomes a flow with s's window fields
 * (2.7.4, 2.5.6). Owning thread. */
void jn_amqp_session_flow_fields(const jn_amqp_session_t *s, jn_amqp_perf_t *p);

/* jn_amqp_sessions_free: free every session of c with its links. Owning
 * thread. */
void jn_amqp_sessions_free(jn_amqp_conn_t *c);

/* jn_amqp_link_input: apply the peer's attach, flow (with a handle) or
 * detach p on the begun session s (2.6, 2.7.3, 2.7.4, 2.7.7). Returns 0,
 * JN_EPROTO (the connection was refused), JN_ENOMEM. Owning thread. */
int jn_amqp_link_input(jn_amqp_session_t *s, const jn_amqp_perf_t *p);

/* jn_amqp_link_free: unmap l from its session's tables and free it with
 * its deliveries. Owning thread. */
void jn_amqp_link_free(jn_amqp_link_t *l);

/* jn_amqp_link_sendable: may l send frames: its session begun and not
 * ended, the connection not closing. Owning thread. Inline: asked on
 * every delivery's start, frame and disposition (hot path). */
static inline bool jn_amqp_link_sendable(const jn_amqp_link_t *l)
{
    const jn_amqp_session_t *s = l->session;
    return s->begin_sent && !s->end_sent && !s->conn->close_sent;
}

/* jn_amqp_transfer_input: the peer's transfer t on s, payload the view of
 * its payload (2.7.5): counted, checked and reported (transfer.c). Returns
 * 0, JN_EPROTO, JN_ENOMEM. Owning thread. */
int jn_amqp_transfer_input(jn_amqp_session_t *s, const jn_amqp_transfer_t *t,
                           const jn_iter_t *payload);

/* jn_amqp_disposition_input: the peer's disposition on s (2.7.6), reported
 * per delivery held (disposition.c). Returns 0. Owning thread. */
int jn_amqp_disposition_input(jn_amqp_session_t *s, const jn_amqp_disposition_t *d);

/* jn_amqp_dtable_put (and _any, the general path it calls): hold d
 * under id in t, the next id or later (ids skipped get empty slots).
 * Returns 0, JN_EINVAL (id before the next one expected), JN_ENOMEM.
 * Owning thread. */
int jn_amqp_dtable_put_any(jn_amqp_dtable_t *t, uint32_t id, jn_amqp_delivery_t *d);

/* The usual put inline (hot path: two per unsettled message, one each
 * way): the next id into a ring with room, where every check of
 * jn_amqp_dtable_put_any holds as it stands; any other goes there. */
static inline int jn_amqp_dtable_put(jn_amqp_dtable_t *t, uint32_t id, jn_amqp_delivery_t *d)
{
    if (JN_LIKELY(t->count != 0 && id == t->base + t->count && t->count < t->cap)) {
        t->at[(t->head + t->count) & (t->cap - 1)] = d;
        t->count++;
        return 0;
    }
    return jn_amqp_dtable_put_any(t, id, d);
}

/* jn_amqp_dtable_get: the delivery held under id in t, or NULL. Owning
 * thread. */
static inline jn_amqp_delivery_t *jn_amqp_dtable_get(const jn_amqp_dtable_t *t, uint32_t id)
{
    uint32_t i = id - t->base;
    return t->started && i < t->count ? t->at[(t->head + i) & (t->cap - 1)] : NULL;
}

/* jn_amqp_dtable_next: the next id t expects (after every id it saw), and
 * whether it has seen any (false: any id is next). Owning thread. */
static inline bool jn_amqp_dtable_next(const jn_amqp_dtable_t *t, uint32_t *id)
{
    *id = t->base + t->count;
    return t->started;
}

/* jn_amqp_delivery_alloc: a zeroed delivery from the engine's pool (one
 * per delivery, so a pool, not the heap: junction/pool.h; its figures are
 * the "jn_amqp_delivery" row of management's pool statistics). NULL on
 * ENOMEM. The connection's thread. */
jn_amqp_delivery_t *jn_amqp_delivery_alloc(void);

/* jn_amqp_delivery_free: take d out of its session's table (if held) and
 * of its link's current slot, and free it. Owning thread. */
void jn_amqp_delivery_free(jn_amqp_delivery_t *d);

/* jn_amqp_deliveries_free: free the deliveries of session s that belong to
 * l (every one when l is NULL), and with l NULL the tables and s's held
 * dispositions. Owning thread. */
void jn_amqp_deliveries_free(jn_amqp_session_t *s, const jn_amqp_link_t *l);

/* jn_amqp_state_encode: append state s (2.7.6, 3.4) as encoded, a known
 * state field by field and any other as it came. Returns 0, JN_EINVAL, or
 * e's error. Thread of e. */
int jn_amqp_state_encode(jn_encoder_t *e, const jn_amqp_state_t *s);

#endif /* JN_AMQP_ENGINE_PRIVATE_H */
