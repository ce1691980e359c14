/*
 * junction/amqp_trace.h — the protocol trace of a connection on the own
 * engine (docs/engine.md): each protocol header and frame of a stream, one
 * direction at a time, as one line of text in the form of 1.19's
 * PROTOCOL log at trace level (router/io/io_trace.c writes it):
 *
 *     "  <- AMQP"                                   a protocol header
 *     "0 -> @open(16) [container-id=\"x\", ...]"   a frame: channel, arrow,
 *                                                  the performative with
 *                                                  its fields by name
 *     "0 <- @transfer(20) [...] (24) \x00Sp..."    and the payload's size
 *                                                  and octets
 *     "0 <- (EMPTY FRAME)"                          a heartbeat
 *
 * Values: unsigned integers in hex (0x10), signed ones in decimal, strings
 * quoted, symbols after ':' (quoted when not a plain word), binaries b"..",
 * octets outside printable ASCII as \xNN; lists [..], maps {k=v, ..},
 * arrays @<type>[..]; a described list whose descriptor the engine knows
 * as @name(code) [field=value, ..] with null fields left out. A line longer
 * than JN_AMQP_TRACE_LINE ends with " ... (truncated)".
 *
 * The tracer reads the octets as they pass the socket (what was read, what
 * was written), so the engine's hot path is untouched: a connection that
 * traces nothing costs a branch per read and write. Part of router/amqp:
 * no sockets, no threads; a tracer belongs to its connection's thread.
 */
#ifndef JUNCTION_AMQP_TRACE_H
#define JUNCTION_AMQP_TRACE_H 1

#include <junction/common.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* The longest line, terminator included. */
#define JN_AMQP_TRACE_LINE 1024

/* The largest frame the tracer holds to render; a larger one (a peer's
 * stream that is not AMQP, or a max-frame-size above it) is named by its
 * size and passed over. */
#define JN_AMQP_TRACE_FRAME_MAX (4u << 20)

/* One line: called once per header or frame, line NUL-terminated and
 * borrowed for the call. */
typedef void jn_amqp_trace_sink_t(void *ctx, const char *line);

/* One direction of one connection's stream. Owned by the caller (in its
 * connection); zero-initialised by jn_amqp_tracer_init. */
typedef struct jn_amqp_tracer {
    bool on;       /* reading: started at a boundary and not stopped */
    bool outgoing; /* "->" (ours), else "<-" (the peer's) */
    uint8_t *buf;  /* octets of a header or frame not yet whole (heap) */
    size_t len, cap;
    uint64_t skip; /* octets of an untraced frame still to pass over */
} jn_amqp_tracer_t;

/* jn_amqp_tracer_init: t, off, for the direction outgoing says. Cannot
 * fail. The connection's thread. */
void jn_amqp_tracer_init(jn_amqp_tracer_t *t, bool outgoing);

/* jn_amqp_tracer_start: the stream is at a boundary now (its start, or no
 * partial header or frame is in flight): read from the next octet on. */
void jn_amqp_tracer_start(jn_amqp_tracer_t *t);

/* jn_amqp_tracer_stop: read no more; a partial frame held is dropped. */
void jn_amqp_tracer_stop(jn_amqp_tracer_t *t);

/* jn_amqp_tracer_free: free what t holds (t may be traced again after
 * jn_amqp_tracer_init). */
void jn_amqp_tracer_free(jn_amqp_tracer_t *t);

/* jn_amqp_tracer_feed: the next len octets of the stream, the first len
 * of the n iovecs iov (borrowed for the call); each header and frame
 * completed by them goes to sink as a line. Nothing happens unless t is
 * on. Octets that cannot be AMQP's (a frame size below 8, a data offset
 * outside its frame) are named in a line and the tracer stops; out of
 * memory it stops too. */
void jn_amqp_tracer_feed(jn_amqp_tracer_t *t, const struct iovec *iov, int n, size_t len,
                         jn_amqp_trace_sink_t *sink, void *ctx);

/* jn_amqp_trace_frame: the line of one frame of channel whose body (the
 * octets after its data offset, size octets; none for a heartbeat) is at
 * body, into out (cap octets, at least 32; NUL-terminated). Returns the
 * line's length. Any thread. */
size_t jn_amqp_trace_frame(char *out, size_t cap, bool outgoing, uint16_t channel,
                           const uint8_t *body, size_t size);

#endif /* JUNCTION_AMQP_TRACE_H */
