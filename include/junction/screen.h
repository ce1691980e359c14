/*
 * junction/screen.h — the frame screen: a check of a peer's octet stream
 * that runs between recv() and proton's input buffer.
 *
 * Why: Debian builds proton with its assertions on, and a few frame
 * sequences that break the AMQP 1.0 rules reach an assert() inside the
 * engine instead of an error (a first transfer of a delivery without a
 * delivery-id aborts the process). Proton never reports those, so the
 * router screens the stream itself and closes the one offending connection
 * with the error the spec names, before proton sees the frame.
 *
 * What it follows (AMQP 1.0 part 2): the protocol headers (2.2) and the
 * SASL layer (5.3), frame headers (2.3), and just enough of the
 * performatives (2.7) to know each channel's session, each handle's link
 * and role, and each receiving link's delivery in progress. It reads the
 * octets where they lie (the input buffer proton gave to recv()), copying
 * only a performative that is split between two reads, never a payload.
 * See docs/protocol.md, "The frame screen", for the rules and why each one.
 *
 * Threads: a screen belongs to its connection, and so to the I/O thread that
 * owns the connection; no locking.
 */
#ifndef JUNCTION_SCREEN_H
#define JUNCTION_SCREEN_H 1

#include <junction/common.h>

typedef struct jn_screen jn_screen_t;

/* jn_screen_new: a screen for a new connection, expecting a protocol header
 * first. max_frame: the max-frame-size this side announces (octets, >= 512;
 * a larger frame is a framing error, 2.7.1); channel_max: the highest
 * channel this side allows (2.7.1). Returns NULL when out of memory. Any
 * thread (the connection is not yet shared). */
jn_screen_t *jn_screen_new(uint32_t max_frame, uint16_t channel_max);

/* jn_screen_free: free s (NULL is ignored). The owning thread. */
void jn_screen_free(jn_screen_t *s);

/* jn_screen_feed: screen the next len octets of the peer's stream, at data
 * (borrowed for the call; they may continue a frame or performative begun
 * in an earlier call). *passed is set to how many of them may go on to
 * proton. Returns 0 when the stream is in order: *passed == len, or less
 * once the stream has ended for proton (after the peer's close frame, or
 * after a protocol header proton will refuse) — the rest is dropped, not an
 * error. Returns JN_EPROTO when the
 * stream breaks a rule: *passed then stops short of the offending frame's
 * last octet (proton acts only on whole frames, so it never sees that
 * frame), jn_screen_condition()/jn_screen_description() say why, and every
 * later call passes nothing and returns JN_EPROTO again. The owning thread.
 * Hot path: a transfer frame whose performative lies in one read costs a
 * header check, a walk over the transfer's fields and a cached lookup. */
int jn_screen_feed(jn_screen_t *s, const uint8_t *data, size_t len, size_t *passed);

/* jn_screen_condition: the AMQP error condition of the rule broken (a
 * static symbol such as "amqp:invalid-field"), or NULL when none is.
 * The owning thread. */
const char *jn_screen_condition(const jn_screen_t *s);

/* jn_screen_description: a sentence a person can act on, saying which rule
 * was broken and by which frame (e.g. "transfer on channel 0 handle 0
 * starts a delivery without a delivery-id"); "" when none is. Borrowed from
 * s, valid until it is freed. The owning thread. */
const char *jn_screen_description(const jn_screen_t *s);

/* jn_screen_sessions_begun: the router is about to begin a session of its
 * own on this connection, after it has handled every frame the screen
 * passed so far: a begin of the peer may answer one of our channels whose
 * earlier session the peer has ended (proton reuses the channel), once
 * more. The owning thread. */
void jn_screen_sessions_begun(jn_screen_t *s);

/* jn_screen_in_sasl: true when the rule was broken in the protocol header
 * or the SASL layer, where no AMQP close frame can carry the error (the
 * connection is then cut without one). The owning thread. */
bool jn_screen_in_sasl(const jn_screen_t *s);

#endif /* JUNCTION_SCREEN_H */
