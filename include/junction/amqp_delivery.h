/*
 * junction/amqp_delivery.h — the AMQP 1.0 engine's deliveries (part 2: 2.6.12
 * transferring a message, 2.6.13-2.6.14 settlement, 2.7.5 transfer, 2.7.6
 * disposition; 2.5.6 and 2.6.7 for the windows and credit they use). Part
 * of router/amqp (docs/engine.md, stage 2b(i)); used by router/io for
 * connections on the own engine (stage 2b(ii), io_own_link.c).
 *
 * Incoming: each transfer frame of a delivery on one of our receiving links
 * reaches the user through the handler's on_transfer (junction/
 * amqp_engine.h) with its performative and its payload, a raw view of the
 * input octets where they lie, never a copy. The engine checks and counts
 * each frame: the session's incoming window (2.5.6; exceeded: the session
 * ends with amqp:session:window-violation), the link's credit on a
 * delivery's first frame (2.6.7; exceeded: the link detaches with
 * amqp:link:transfer-limit-exceeded), the delivery-id and tag on the first
 * frame and the same id on the others (2.7.5; amqp:invalid-field), a
 * transfer on a link the peer attached as receiver (amqp:illegal-state),
 * and rcv-settle-mode second on a link negotiated first (amqp:invalid-field).
 *
 * Outgoing: the user starts a delivery on a sending link with credit
 * (jn_amqp_delivery_new) and hands its message octets as raw views
 * (jn_amqp_delivery_send); the engine composes each transfer's frame header
 * and performative and references the octets after it in the output (the
 * jn_buffer_t they lie in gets a reference until the output is taken; a
 * run of at most 128 octets is copied in instead), split at the peer's
 * max-frame-size and within its incoming window.
 *
 * Dispositions: the peer's reach the user per delivery (on_disposition),
 * known and unknown states alike; ours (jn_amqp_delivery_update) are held
 * and composed as ranges (consecutive delivery-ids of one role with the same
 * state and settled flag become one frame) when the output is next taken or
 * before any other frame of ours.
 *
 * Lifetimes: a delivery belongs to its link. The engine frees it once it
 * is whole (its last frame went or came) and settled as far as this end
 * needs to know: when the user settles it (jn_amqp_delivery_update with
 * settle; before its last frame, at that frame), when the peer settles it
 * (after on_transfer or on_disposition returns), when it was aborted, and
 * when a sent delivery that was settled on sending has gone out whole. A
 * delivery the peer settles before it is whole is reported and dropped by
 * the peer, not held here. Every delivery goes with its link (after
 * on_detach) and its connection.
 *
 * Limits: delivery-tags of at most 32 octets (2.8.7); a peer's delivery-id
 * at most 2^20 past the oldest delivery this end holds unsettled on that
 * session (a wider one ends the session with amqp:resource-limit-exceeded,
 * since deliveries are found by id in a table).
 *
 * Threads: the connection's owning thread, as junction/amqp_engine.h.
 */
#ifndef JUNCTION_AMQP_DELIVERY_H
#define JUNCTION_AMQP_DELIVERY_H 1

#include <junction/amqp_engine.h>

/* The longest delivery-tag (2.8.7: binary of at most 32 octets). */
#define JN_AMQP_TAG_MAX 32

/* jn_amqp_delivery_new: start a delivery on l, our sending link (2.6.12):
 * it takes one link credit now (delivery-count + 1, 2.6.7); its
 * delivery-id is given when its first frame goes out. tag (tag_len octets,
 * copied, at most JN_AMQP_TAG_MAX) and message_format go on that frame;
 * settled sends it pre-settled. Only one delivery per link is in progress
 * (not yet sent whole) at a time. *out is the delivery, owned by l. Returns
 * 0; JN_AGAIN when l has no credit; JN_EPERM when l is not our attached
 * sender, its session or connection is ending, or a delivery of l is in
 * progress; JN_EINVAL for a tag too long; JN_ENOMEM. Owning thread. */
int jn_amqp_delivery_new(jn_amqp_link_t *l, const void *tag, size_t tag_len,
                         uint32_t message_format, bool settled, jn_amqp_delivery_t **out);

/* jn_amqp_delivery_set_state: the delivery state (2.7.5 transfer field
 * state; any state, unknown ones and symbolic descriptors passed as
 * encoded) that d's next transfer frame carries, as a sender tells the
 * receiver where a resumed or forwarded delivery stands: called before d's
 * first frame, that frame carries it; called later, while d is in progress
 * (not sent whole), its next frame does (a later call before that frame
 * replaces it). state is borrowed (encoded here). Returns 0, JN_EPERM (d
 * is not ours, or its last frame went out), JN_EINVAL (a state that cannot
 * be encoded), JN_ENOMEM. Owning thread. */
int jn_amqp_delivery_set_state(jn_amqp_delivery_t *d, const jn_amqp_state_t *state);

/* jn_amqp_delivery_send: send more of d's message: the octets of the n
 * raw views in pieces (each from its position to its end; not advanced),
 * as transfer frames of at most the peer's max-frame-size while the peer's
 * incoming window lasts (2.5.6). The octets are referenced in the output,
 * not copied: a piece in a jn_buffer_t chain gets a reference on each buffer
 * until the output holding it is taken; a piece of plain bytes is borrowed
 * and must stay until then. Only a run of at most 128 octets (within one
 * buffer and one frame) is copied into the composed output instead, when
 * the output has room for it: an iovec costs the kernel more than that
 * copy. more says that the message goes on beyond these pieces (a later
 * call brings the rest). *taken is set to the octets framed, with an error
 * too (the caller hands the rest again, after on_flow, when it is less
 * than all).
 * Returns 1 when the last frame went out (more false, every octet taken): a
 * settled d is then freed; 0 when octets or the message's end remain; JN_EPERM
 * when d is not an outgoing delivery in progress, or its link or session is
 * ending; JN_EINVAL for a piece that is not a raw view; JN_ENOMEM. Owning
 * thread. */
int jn_amqp_delivery_send(jn_amqp_delivery_t *d, const jn_iter_t *pieces, size_t n, bool more,
                          size_t *taken);

/* One run of a message's octets for jn_amqp_delivery_send_runs: len
 * octets at data, inside buf's published octets (buf NULL: plain bytes
 * the caller keeps until the output holding them is taken). */
typedef struct jn_amqp_run {
    const uint8_t *data;
    size_t len;
    const jn_buffer_t *buf;
} jn_amqp_run_t;

/* jn_amqp_delivery_send_runs: jn_amqp_delivery_send with the octets given
 * as n runs (borrowed; each run's buffer gets its own reference as
 * jn_amqp_delivery_send's pieces do), so a caller that holds its octets as
 * (buffer, offset, length) needs no view built for each. With give, each
 * run has a buffer and at least one octet, and the caller holds a
 * reference on each run's buffer that passes to the output for every run
 * taken whole (its last octet within *taken; the caller drops it no more),
 * while a run taken in part or not at all stays the caller's (each frame
 * of it referenced as without give): a caller whose runs are its own
 * references spares a reference taken and dropped per run. The same
 * frames, results and errors, but for JN_EINVAL, which it never returns
 * (with an error, the references given are those of the runs within
 * *taken: the frames that went into the output before it, none when
 * nothing did). Hot path: every copy a connection on the own engine
 * sends. Owning thread. */
int jn_amqp_delivery_send_runs(jn_amqp_delivery_t *d, const jn_amqp_run_t *runs, size_t n,
                               bool more, bool give, size_t *taken);

/* jn_amqp_delivery_abort: abort d, an outgoing delivery in progress (2.7.5
 * aborted): when frames of it went out, a transfer with aborted set ends it;
 * when none did, its credit is given back. d is freed. Returns 0, JN_AGAIN
 * (the peer's incoming window is closed: call again after on_flow), JN_EPERM
 * (d was sent whole, or is incoming), JN_ENOMEM. Owning thread. */
int jn_amqp_delivery_abort(jn_amqp_delivery_t *d);

/* jn_amqp_delivery_update: our disposition of d (2.7.6): state (borrowed;
 * NULL for none; any state, unknown ones passed as encoded) and settle. It
 * is held and sent in a range with its neighbours (see the top). With
 * settle, d is freed when it is whole; a delivery settled before its last
 * frame lives on until that frame (incoming: its frames still reach
 * on_transfer; outgoing: the user still sends or aborts it). Returns 0,
 * JN_EPERM (an outgoing d whose first frame has not gone out, d settled by
 * us already, or the session or connection is ending), JN_EINVAL (a state
 * that cannot be encoded), JN_ENOMEM. Owning thread. */
int jn_amqp_delivery_update(jn_amqp_delivery_t *d, const jn_amqp_state_t *state, bool settle);

/* jn_amqp_delivery_id / _tag / _link / _remote_settled / _rcv_settle_mode:
 * d's delivery-id (valid once its first frame went or came); its tag
 * (*len octets, owned by d); its link; whether the peer settled it; the
 * receiver's settle mode for it (2.8.3: 0 first, 1 second), so that a
 * receiver in mode second settles only after the sender. Owning thread. */
uint32_t jn_amqp_delivery_id(const jn_amqp_delivery_t *d);
const uint8_t *jn_amqp_delivery_tag(const jn_amqp_delivery_t *d, size_t *len);
/* jn_amqp_delivery_tag_cut: whether the peer's tag of incoming d was
 * longer than AMQP 1.0 2.8.7 allows (JN_AMQP_TAG_MAX octets): its first
 * JN_AMQP_TAG_MAX octets are d's tag. The engine takes such a delivery; the
 * user judges it (a link router rejects it, as the sender's tag would be
 * passed on cut). Owning thread. */
bool jn_amqp_delivery_tag_cut(const jn_amqp_delivery_t *d);
jn_amqp_link_t *jn_amqp_delivery_link(const jn_amqp_delivery_t *d);
bool jn_amqp_delivery_remote_settled(const jn_amqp_delivery_t *d);
uint8_t jn_amqp_delivery_rcv_settle_mode(const jn_amqp_delivery_t *d);

/* jn_amqp_delivery_set_user / _user: one pointer the user keeps on d. */
void jn_amqp_delivery_set_user(jn_amqp_delivery_t *d, void *user);
void *jn_amqp_delivery_user(const jn_amqp_delivery_t *d);

/* A user's function for jn_amqp_link_users_clear: user is the pointer
 * that was set on one delivery (not NULL); ctx the caller's. It must not
 * call the engine. */
typedef void (*jn_amqp_user_fn)(void *ctx, void *user);

/* jn_amqp_link_users_clear: every delivery of l that has a user pointer
 * (jn_amqp_delivery_set_user) has it cleared, then fn(ctx, pointer) is
 * called for it: the deliveries its session holds by delivery-id either
 * way (2.6.12: those this end has not settled) and the one not yet whole
 * (not yet begun, or settled before its last frame). So a user that keeps
 * something per delivery (a reference) lets go of it for every delivery of
 * a link before the engine frees them with the link: after on_detach, on
 * on_end, or before jn_amqp_transport_free. A delivery without a user
 * pointer is not passed. Time: the session's deliveries held. Owning
 * thread. */
void jn_amqp_link_users_clear(jn_amqp_link_t *l, jn_amqp_user_fn fn, void *ctx);

/* jn_amqp_session_set_incoming_window: our incoming window becomes window
 * transfers from next-incoming-id (2.5.6), and a session flow tells the
 * peer. Returns 0, JN_EPERM (not begun or ended), JN_ENOMEM. Owning
 * thread. */
int jn_amqp_session_set_incoming_window(jn_amqp_session_t *s, uint32_t window);

#endif /* JUNCTION_AMQP_DELIVERY_H */
