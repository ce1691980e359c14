/*
 * junction/amqp_engine.h — the AMQP 1.0 engine's connection, session and
 * link state (AMQP 1.0 part 2: 2.4 connections, 2.5 sessions, 2.6 links,
 * 2.7 performatives). Part of router/amqp (docs/engine.md, stage 2a): no
 * sockets, no threads, no knowledge of the core. router/io drives it for
 * connections on the own engine (stage 2b(ii): junction/amqp_transport.h).
 *
 * One jn_amqp_conn_t per transport connection, after any SASL or TLS layer
 * (the caller detects those from the first protocol header, as today):
 *
 *   - input: the caller hands the octets it received, as a raw view of its
 *     own buffers (jn_amqp_conn_input); the engine reads the protocol
 *     header and each whole frame in place (stage 1's frame reader and
 *     decoder), applies it to its state, and calls the handler's callbacks;
 *     it says how many octets it consumed, so that the caller keeps the
 *     rest (a partial frame) for the next call;
 *   - output: every frame the engine composes (answers, heartbeats, and the
 *     frames the user's calls ask for) is appended to one output area
 *     (jn_amqp_conn_output, jn_amqp_conn_output_done) that the caller writes
 *     to its socket;
 *   - time: the caller passes the time with each input and drives
 *     jn_amqp_conn_tick at the deadline it returns (idle-time-out, 2.4.5).
 *
 * A fault in the peer's input (framing, decoding, order, state) closes the
 * connection with the spec's condition (2.7.9) — a handle in use or not
 * attached too, with its session condition, as 1.19 answers it — or,
 * for a session's window and span errors, ends that session with it
 * (2.7.8); the engine then reads no more of that connection (or ignores
 * that session's frames until the peer's end). Deliveries (transfer,
 * disposition) are in junction/amqp_delivery.h.
 *
 * Threads: a connection and its sessions and links belong to the one thread
 * that owns the connection (an I/O thread once wired in); nothing here takes
 * a lock or keeps global state, so connections on different threads are
 * independent. Callbacks run on that thread, inside jn_amqp_conn_input; they
 * may call any function of this header on the same connection.
 *
 * Lifetimes: the connection owns its sessions and links. A link is freed
 * when both detaches have been exchanged, right after its on_detach
 * callback returns (the engine answers a peer's detach itself if the
 * callback did not); a session likewise after on_end. Everything goes with
 * jn_amqp_conn_free. The performative a callback receives, and every view
 * in it, borrows the input octets and is valid only during the callback.
 */
#ifndef JUNCTION_AMQP_ENGINE_H
#define JUNCTION_AMQP_ENGINE_H 1

#include <junction/amqp_perf.h>

#include <sys/uio.h>

typedef struct jn_amqp_conn jn_amqp_conn_t;
typedef struct jn_amqp_session jn_amqp_session_t;
typedef struct jn_amqp_link jn_amqp_link_t;
typedef struct jn_amqp_delivery jn_amqp_delivery_t;

/* jn_amqp_serial_lt: serial number order (RFC 1982 with SERIAL_BITS 32;
 * AMQP 1.0 2.8 sequence-no, the type of transfer-ids and delivery-count):
 * a precedes b when b - a, taken modulo 2^32, is in 1 .. 2^31 - 1. Any
 * thread. */
static inline bool jn_amqp_serial_lt(uint32_t a, uint32_t b)
{
    return a != b && (uint32_t)(b - a) < 0x80000000u;
}

/* What a connection announces in its open (2.7.1). Strings are copied by
 * jn_amqp_conn_new. */
typedef struct jn_amqp_conn_config {
    const char *container_id; /* mandatory */
    const char *hostname;     /* NULL: not sent */
    uint32_t max_frame_size;  /* the largest frame we accept, >= 512 */
    uint16_t channel_max;     /* the highest channel the peer may use */
    uint32_t idle_time_out;   /* ms; 0: none. Silent that long: we close */
    /* ms; what our open announces as idle-time-out (2.4.5), 0: the same as
     * idle_time_out. Below it, the peer has slack before we close: proton's
     * server announces half its limit, and the router keeps that */
    uint32_t idle_time_out_announced;
    /* ms; 0: none. A peer's open asking for a shorter (non-zero)
     * idle-time-out is refused with amqp:resource-limit-exceeded (2.4.5
     * lets a peer refuse one it cannot meet; router.minPeerIdleTimeoutMs) */
    uint32_t min_peer_idle_time_out;
    /* our open's offered-capabilities and desired-capabilities (each
     * encoded: a symbol or an array of symbols) and properties (an encoded
     * map), copied; NULL: not sent (2.7.1) */
    const uint8_t *offered_capabilities;
    size_t offered_capabilities_len;
    const uint8_t *desired_capabilities;
    size_t desired_capabilities_len;
    const uint8_t *properties;
    size_t properties_len;
} jn_amqp_conn_config_t;

/* The events of a connection, each called on the connection's thread from
 * inside jn_amqp_conn_input (or jn_amqp_conn_tick for on_closed). Any may be
 * NULL. ctx is the handler's context. Every performative is the peer's, as
 * decoded, after the engine applied it to its state. */
typedef struct jn_amqp_handler {
    void *ctx;
    /* The peer's open (2.4.1). The user sends its own with
     * jn_amqp_conn_open, before or after. */
    void (*on_open)(void *ctx, jn_amqp_conn_t *c, const jn_amqp_open_t *open);
    /* The peer's close (2.4.3, 2.7.9). The engine answers with its own
     * close when on_close returns, unless the user closed already. */
    void (*on_close)(void *ctx, jn_amqp_conn_t *c, const jn_amqp_end_close_t *close);
    /* The engine closed the connection on its own: a fault in the peer's
     * input or an idle peer. fault says why (its condition went to the
     * peer). No more input is read. */
    void (*on_closed)(void *ctx, jn_amqp_conn_t *c, const jn_amqp_fault_t *fault);
    /* The peer's begin (2.5.1, 2.7.2): a new session the peer starts (the
     * user answers with jn_amqp_session_begin) or its answer to ours. */
    void (*on_begin)(void *ctx, jn_amqp_session_t *s, const jn_amqp_begin_t *begin);
    /* The peer's end (2.5.3, 2.7.8). The engine answers with an end when it
     * returns, unless the user ended already; s is then freed. */
    void (*on_end)(void *ctx, jn_amqp_session_t *s, const jn_amqp_end_close_t *end);
    /* The peer's attach (2.6.3, 2.7.3): a new link the peer starts (the user
     * answers with jn_amqp_link_attach) or its answer to ours. */
    void (*on_attach)(void *ctx, jn_amqp_link_t *l, const jn_amqp_attach_t *attach);
    /* The peer's detach (2.6.5, 2.7.7). The engine answers with a detach
     * (closed as the peer's) when it returns, unless the user detached
     * already; l is then freed. */
    void (*on_detach)(void *ctx, jn_amqp_link_t *l, const jn_amqp_detach_t *detach);
    /* The peer's flow (2.7.4), after the engine updated the session's
     * windows and, when a handle is given, the link's flow state (2.6.7):
     * l is NULL for a session-only flow. An echo was already answered. */
    void (*on_flow)(void *ctx, jn_amqp_session_t *s, jn_amqp_link_t *l, const jn_amqp_flow_t *flow);
    /* One transfer frame of a delivery on our receiving link l (2.7.5),
     * after the engine counted it (junction/amqp_delivery.h): t as decoded
     * (its state, settled, more and aborted as this frame says), payload a
     * raw view of the frame's payload in the input octets (it borrows them:
     * to keep them, take a reference on the jn_buffer_t they lie in). d stays
     * valid during the call even if the user settles it there; it is freed
     * when this returns if this was its last frame and it was aborted or is
     * settled (by the peer, or by the user). */
    void (*on_transfer)(void *ctx, jn_amqp_link_t *l, jn_amqp_delivery_t *d,
                        const jn_amqp_transfer_t *t, const jn_iter_t *payload);
    /* The peer's disposition (2.7.6) of delivery d, once per delivery of
     * its range that this end still holds. d stays valid during the call;
     * when the disposition or the user settles it, it is freed when this
     * returns if it is whole (else at its last frame). */
    void (*on_disposition)(void *ctx, jn_amqp_delivery_t *d, const jn_amqp_disposition_t *disp);
} jn_amqp_handler_t;

/* ---- connection (2.4) ---------------------------------------------------- */

/* jn_amqp_conn_new: a connection engine with our open's settings (config,
 * copied) and the user's handler (copied; ctx borrowed). Nothing is sent
 * until jn_amqp_conn_open or the peer's protocol header. Returns NULL when
 * memory runs out or config is invalid (no container-id, max_frame_size
 * below 512). The caller frees it with jn_amqp_conn_free. Any thread; it
 * then belongs to the caller's thread. */
jn_amqp_conn_t *jn_amqp_conn_new(const jn_amqp_conn_config_t *config,
                                 const jn_amqp_handler_t *handler);

/* jn_amqp_conn_free: free c with its sessions, links and output. NULL is
 * ignored. Not from inside one of c's callbacks. Owning thread. */
void jn_amqp_conn_free(jn_amqp_conn_t *c);

/* jn_amqp_conn_input: read the octets left in in (a raw view of the
 * caller's buffers; not advanced) at time now_ms (any monotonic clock in
 * milliseconds, the one given to jn_amqp_conn_tick): the peer's protocol
 * header (2.2; answered with ours if not sent yet) then whole frames
 * (2.3), each applied and reported through the handler. *consumed is set to
 * the octets read; the caller drops them and hands the rest again with
 * more. Returns 0; JN_EPROTO once the peer's input was refused (a protocol
 * header other than AMQP 1.0.0 id 0 is answered with ours and nothing more,
 * 2.2; any later fault closes with its condition, 2.7.9; see
 * jn_amqp_conn_fault) — input is then consumed and ignored; JN_ENOMEM when
 * the output could not grow (the connection is then unusable: drop it).
 * Owning thread. */
int jn_amqp_conn_input(jn_amqp_conn_t *c, const jn_iter_t *in, uint64_t now_ms, size_t *consumed);

/* jn_amqp_conn_tick: drive the idle-time-out (2.4.5) at time now_ms: when
 * the peer has sent nothing for our idle-time-out, close with
 * amqp:resource-limit-exceeded (on_closed is called); when we have sent
 * nothing for half the peer's idle-time-out, append a heartbeat (an empty
 * frame). Returns the next time (ms) at which to call again, or UINT64_MAX
 * when no timer runs. Owning thread. */
uint64_t jn_amqp_conn_tick(jn_amqp_conn_t *c, uint64_t now_ms);

/* jn_amqp_conn_open: send our protocol header (if not yet) and open
 * (2.4.1) with the config's settings. Returns 0, JN_EPERM when open was
 * sent already or the connection is closed, JN_ENOMEM. Owning thread. */
int jn_amqp_conn_open(jn_amqp_conn_t *c);

/* jn_amqp_conn_close: send close (2.4.3, 2.7.9), with an error when
 * condition is not NULL (description may be NULL); an open is sent first if
 * it was not. Frames the peer sends until its close are read and dropped.
 * Returns 0, JN_EPERM when close was sent already, JN_ENOMEM. Owning
 * thread. */
int jn_amqp_conn_close(jn_amqp_conn_t *c, const char *condition, const char *description);

/* jn_amqp_conn_output: the first contiguous run of the octets composed and
 * not yet taken (borrowed; valid until the next call on c), its length in
 * *len (0 when none). The output is the frames the engine composed with the
 * payload octets of outgoing transfers referenced between them, so it may
 * be several runs: take each with jn_amqp_conn_output_done and ask again,
 * or take them all at once with jn_amqp_conn_output_iov. Our dispositions
 * held for batching are composed first. Owning thread. */
const uint8_t *jn_amqp_conn_output(jn_amqp_conn_t *c, size_t *len);

/* jn_amqp_conn_output_iov: up to max runs of the output, in order, into
 * iov (for one writev/sendmsg); returns how many were filled (0 when the
 * output is empty). Borrowed until the next call on c. Our dispositions
 * held for batching are composed first. Owning thread. */
int jn_amqp_conn_output_iov(jn_amqp_conn_t *c, struct iovec *iov, int max);

/* jn_amqp_conn_output_pending: the octets of the output not yet taken,
 * composed and referenced (our dispositions held for batching not
 * counted): what a caller bounds before it sends more on c (the peer may
 * stop reading while its credit and window stay open). Owning thread. */
size_t jn_amqp_conn_output_pending(const jn_amqp_conn_t *c);

/* jn_amqp_conn_output_done: n octets of the output were written; they are
 * dropped (n at most what was offered), with the references the engine held
 * on payload buffers they came from. Owning thread. */
void jn_amqp_conn_output_done(jn_amqp_conn_t *c, size_t n);

/* jn_amqp_conn_finished: true when nothing more will happen on c: the
 * engine refused the peer's input (its close, or its protocol header, is
 * in the output), or close went both ways; the caller writes the output
 * left and closes the transport. Owning thread. */
bool jn_amqp_conn_finished(const jn_amqp_conn_t *c);

/* jn_amqp_conn_fault: why the engine refused the peer's input (condition
 * NULL while it has not). Borrowed from c. Owning thread. */
const jn_amqp_fault_t *jn_amqp_conn_fault(const jn_amqp_conn_t *c);

/* jn_amqp_conn_set_limits: before our open is sent, replace the
 * max-frame-size (raised to 512 at least) and channel-max of c's config
 * (2.7.1): our open announces them and the peer's frames are held to them
 * from now on. max_frame_size 0 keeps the configured one; channel_max
 * below 0 keeps the configured one. Used where the limits depend on who
 * the peer is (a vhost policy's user group, decided at the peer's open).
 * Returns 0, or JN_EPERM when our open was sent already. Owning thread. */
int jn_amqp_conn_set_limits(jn_amqp_conn_t *c, uint32_t max_frame_size, int32_t channel_max);

/* jn_amqp_conn_remote_max_frame / _channel_max / _idle_time_out: the peer's
 * open's settings (2.7.1), with the spec's defaults (512 before the peer's
 * open for max-frame-size, 2.4.1). The idle-time-out is the peer's also
 * when the engine refused it (below min_peer_idle_time_out), so the user
 * can tell that refusal from the others. Owning thread. */
uint32_t jn_amqp_conn_remote_max_frame(const jn_amqp_conn_t *c);
uint16_t jn_amqp_conn_remote_channel_max(const jn_amqp_conn_t *c);
uint32_t jn_amqp_conn_remote_idle_time_out(const jn_amqp_conn_t *c);

/* ---- sessions (2.5) ------------------------------------------------------ */

/* jn_amqp_session_new: a session of ours on the lowest free channel,
 * not yet begun; jn_amqp_session_begin sends its begin. Returns NULL when
 * every channel up to the peer's channel-max is taken, or memory runs out.
 * Owned by c. Owning thread. */
jn_amqp_session_t *jn_amqp_session_new(jn_amqp_conn_t *c);

/* jn_amqp_session_begin: send s's begin (2.5.1, 2.7.2) with
 * next-outgoing-id next_outgoing_id (any value; it wraps), incoming-window
 * incoming_window and outgoing-window outgoing_window; for a session the
 * peer began, remote-channel is its channel. An open is sent first if it
 * was not. Returns 0, JN_EPERM (begun already, or the connection closed),
 * JN_ENOMEM. Owning thread. */
int jn_amqp_session_begin(jn_amqp_session_t *s, uint32_t next_outgoing_id, uint32_t incoming_window,
                          uint32_t outgoing_window);

/* jn_amqp_session_end: send end (2.5.3, 2.7.8), with an error when
 * condition is not NULL. The peer's frames on it until its end are dropped.
 * Returns 0, JN_EPERM (not begun, or ended already), JN_ENOMEM. Owning
 * thread. */
int jn_amqp_session_end(jn_amqp_session_t *s, const char *condition, const char *description);

/* jn_amqp_session_flow: send a flow without a handle (2.7.4) with the
 * session's window state, echo as given. Returns 0, JN_EPERM (not begun or
 * ended), JN_ENOMEM. Owning thread. */
int jn_amqp_session_flow(jn_amqp_session_t *s, bool echo);

/* The session's window state (2.5.6), all serial numbers or counts:
 * next_incoming_id and the remote windows are the peer's as last heard. */
typedef struct jn_amqp_window {
    uint32_t next_incoming_id, incoming_window;
    uint32_t next_outgoing_id, outgoing_window;
    uint32_t remote_incoming_window, remote_outgoing_window;
} jn_amqp_window_t;

/* jn_amqp_session_window: s's window state. Owning thread. */
jn_amqp_window_t jn_amqp_session_window(const jn_amqp_session_t *s);

/* jn_amqp_session_channel / _remote_channel: our channel for s; the peer's
 * (-1 before its begin). Owning thread. */
uint16_t jn_amqp_session_channel(const jn_amqp_session_t *s);
int jn_amqp_session_remote_channel(const jn_amqp_session_t *s);

/* jn_amqp_session_conn: the connection of s. Owning thread. */
jn_amqp_conn_t *jn_amqp_session_conn(const jn_amqp_session_t *s);

/* ---- links (2.6) --------------------------------------------------------- */

/* Roles (2.8.1): the value of attach's role field. */
enum { JN_AMQP_SENDER = 0, JN_AMQP_RECEIVER = 1 };

/* jn_amqp_link_new: a link of ours on s, named name (copied), of role
 * role (ours), on the lowest free handle, not yet attached. Returns NULL
 * when no handle up to the peer's handle-max is free, or memory runs out.
 * Owned by s. Owning thread. */
jn_amqp_link_t *jn_amqp_link_new(jn_amqp_session_t *s, const char *name, bool role);

/* jn_amqp_link_attach: send l's attach (2.6.3, 2.7.3) with the fields of
 * a (source, target, settle modes, capabilities, properties; a's name,
 * handle, role and initial-delivery-count are the engine's: a sender's
 * initial delivery-count is initial_delivery_count). a is borrowed. For a
 * link the peer attached, l's role is the opposite of the peer's. Returns
 * 0, JN_EPERM (attached already, or the session is not begun or has
 * ended), JN_EINVAL (a's fields cannot be encoded), JN_ENOMEM. Owning
 * thread. */
int jn_amqp_link_attach(jn_amqp_link_t *l, const jn_amqp_attach_t *a,
                        uint32_t initial_delivery_count);

/* jn_amqp_link_detach: send detach (2.6.5, 2.7.7), closed as given, with
 * an error when condition is not NULL. Returns 0, JN_EPERM (not attached
 * or detached already), JN_ENOMEM. When it answers a detach held for the
 * user (jn_amqp_link_hold_detach), l is freed once it returned 0. Owning
 * thread. */
int jn_amqp_link_detach(jn_amqp_link_t *l, bool closed, const char *condition,
                        const char *description);

/* jn_amqp_link_hold_detach: whether the peer's detach of l waits for the
 * user's answer (2.6.5) instead of the engine's at once (the default).
 * While held, on_detach reports the peer's detach and l lives on (the
 * peer's handle is free) until the user's jn_amqp_link_detach, which
 * sends the answer and frees l (l must not be used after it returned 0),
 * or until its session or connection goes. A link router passes one
 * end's detach to the other end and answers with that end's (AMQP 1.0
 * gives the answer's closed and error to the answering end). Set it
 * before the peer's detach, or from on_detach. Returns whether a detach
 * of the peer's would be held now: false when hold is false, when our
 * detach went already (the peer's is its answer, and l is freed with it),
 * or when l cannot send (not attached by us, its session or connection
 * ending). Owning thread. */
bool jn_amqp_link_hold_detach(jn_amqp_link_t *l, bool hold);

/* jn_amqp_link_flow: a receiver grants credit (2.6.7): link-credit becomes
 * credit from the current delivery-count, drain as given, and a flow is
 * sent with the session's windows and echo as given. Returns 0, JN_EPERM
 * (not a receiver, or not attached by us), JN_ENOMEM. Owning thread. */
int jn_amqp_link_flow(jn_amqp_link_t *l, uint32_t credit, bool drain, bool echo);

/* jn_amqp_link_available: a sender tells how many messages it has ready
 * (2.6.7 available) and sends a flow with it. Returns 0, JN_EPERM (not a
 * sender, or not attached by us), JN_ENOMEM. Owning thread. */
int jn_amqp_link_available(jn_amqp_link_t *l, uint32_t available);

/* jn_amqp_link_drained: a sender that has nothing more to send while the
 * receiver asked to drain (2.6.7): delivery-count advances by the credit
 * left, credit becomes 0, and a flow tells the receiver. Returns 1 when it
 * drained, 0 when drain was not set (nothing is sent), JN_EPERM (not a
 * sender, or not attached by us), JN_ENOMEM. Owning thread. */
int jn_amqp_link_drained(jn_amqp_link_t *l);

/* A link's flow state (2.6.7) as this end sees it. */
typedef struct jn_amqp_link_state {
    uint32_t delivery_count; /* serial */
    uint32_t credit;         /* link-credit */
    uint32_t available;
    bool drain;
} jn_amqp_link_state_t;

/* jn_amqp_link_state: l's flow state. Owning thread. */
jn_amqp_link_state_t jn_amqp_link_state(const jn_amqp_link_t *l);

/* jn_amqp_link_role / _handle / _remote_handle / _session: our role; our
 * handle; the peer's (-1 before its attach); the session. Owning thread. */
bool jn_amqp_link_role(const jn_amqp_link_t *l);
uint32_t jn_amqp_link_handle(const jn_amqp_link_t *l);
int64_t jn_amqp_link_remote_handle(const jn_amqp_link_t *l);
jn_amqp_session_t *jn_amqp_link_session(const jn_amqp_link_t *l);

/* jn_amqp_link_name: l's name, NUL-terminated (owned by l). Owning
 * thread. */
const char *jn_amqp_link_name(const jn_amqp_link_t *l);

/* jn_amqp_link_set_user / _user, jn_amqp_session_set_user / _user: one
 * pointer the user keeps on a link or session (not touched by the
 * engine). Owning thread. */
void jn_amqp_link_set_user(jn_amqp_link_t *l, void *user);
void *jn_amqp_link_user(const jn_amqp_link_t *l);
void jn_amqp_session_set_user(jn_amqp_session_t *s, void *user);
void *jn_amqp_session_user(const jn_amqp_session_t *s);

#endif /* JUNCTION_AMQP_ENGINE_H */
