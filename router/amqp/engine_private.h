/*
 * engine_private.h — the structs of the connection engine
 * (junction/amqp_engine.h) and the calls between its files: conn.c (the
 * protocol header, open, close, idle-time-out, the input loop and the
 * output), session.c (begin, end, channel maps, session windows) and link.c
 * (attach, detach, handle maps, link flow state). Every struct belongs to
 * the thread that owns the connection.
 */
#ifndef JN_AMQP_ENGINE_PRIVATE_H
#define JN_AMQP_ENGINE_PRIVATE_H 1

#include <junction/amqp_engine.h>

#include "amqp_private.h"

/* The highest handle we let the peer use on a session (2.7.2 handle-max):
 * handles index a table that grows on demand, so the bound keeps a peer
 * from making us allocate for a handle it picked at random. */
#define JN_AMQP_HANDLE_MAX 65535u

/* A table of pointers indexed by channel or handle, grown on demand. */
typedef struct jn_amqp_slots {
    void **at;
    uint32_t cap;
} jn_amqp_slots_t;

struct jn_amqp_link {
    jn_amqp_session_t *session;
    char *name;
    bool role;             /* ours: JN_AMQP_SENDER or JN_AMQP_RECEIVER */
    uint32_t handle;       /* ours */
    int64_t remote_handle; /* the peer's, -1 before its attach (or after detach) */
    bool attach_sent, attach_rcvd, detach_sent, detach_rcvd;
    uint32_t initial_delivery_count; /* the sender's attach (2.7.3) */
    uint32_t delivery_count;         /* serial (2.6.7) */
    uint32_t credit;                 /* link-credit */
    uint32_t limit;                  /* receiver: delivery-count + credit granted */
    uint32_t available;
    bool drain;
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

/* jn_amqp_conn_refuse: the peer broke a rule: record the fault, send open
 * (if not yet) and close with its condition (2.7.9), stop reading, call
 * on_closed. Returns JN_EPROTO (JN_ENOMEM if the output failed). Owning
 * thread. */
JN_PRINTF(3, 4)
int jn_amqp_conn_refuse(jn_amqp_conn_t *c, const char *condition, const char *fmt, ...);

/* jn_amqp_error_set: fill err with condition and description (C strings,
 * borrowed; description may be NULL) and mark it present. Any thread. */
void jn_amqp_error_set(jn_amqp_error_t *err, const char *condition, const char *description);

/* jn_amqp_session_input: apply the peer's begin, end, attach, flow or
 * detach p, read on channel (2.5, 2.6). Returns 0, JN_EPROTO (the
 * connection was refused), JN_ENOMEM. Owning thread. */
int jn_amqp_session_input(jn_amqp_conn_t *c, uint16_t channel, const jn_amqp_perf_t *p);

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

/* jn_amqp_link_free: unmap l from its session's tables and free it.
 * Owning thread. */
void jn_amqp_link_free(jn_amqp_link_t *l);

#endif /* JN_AMQP_ENGINE_PRIVATE_H */
