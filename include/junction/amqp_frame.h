/*
 * junction/amqp_frame.h — the AMQP 1.0 engine's transport layer: the
 * protocol header exchange (AMQP 1.0 part 2, 2.2; part 5, 5.1 and 5.3.1)
 * and frames (2.3). Part of router/amqp (docs/engine.md): no sockets, no
 * threads, no knowledge of the core.
 *
 * Input is read where it lies: a frame's body is a raw view (jn_iter_t) of
 * the octets in the caller's buffers, not a copy. Output is composed into
 * a jn_encoder_t (junction/encoder.h).
 *
 * Threads: every function works on the caller's data only and may be called
 * from any thread; a connection's engine runs on the I/O thread that owns
 * the connection.
 */
#ifndef JUNCTION_AMQP_FRAME_H
#define JUNCTION_AMQP_FRAME_H 1

#include <junction/encoder.h>
#include <junction/iterator.h>

/* Protocol ids of the protocol header "AMQP" id 1 0 0 (2.2, 5.1, 5.3.1). */
typedef enum jn_amqp_proto {
    JN_AMQP_PROTO_AMQP = 0,
    JN_AMQP_PROTO_TLS = 2,
    JN_AMQP_PROTO_SASL = 3
} jn_amqp_proto_t;

/* Frame types (2.3.2, 5.3.1). */
enum { JN_AMQP_FRAME_AMQP = 0, JN_AMQP_FRAME_SASL = 1 };

/* Octets of a protocol header and of a frame header (2.2, 2.3.1). */
#define JN_AMQP_HEADER_SIZE       8
#define JN_AMQP_FRAME_HEADER_SIZE 8
/* The smallest max-frame-size a peer may announce (2.7.1, open). */
#define JN_AMQP_MIN_MAX_FRAME_SIZE 512

/* Why an input was refused: the AMQP error condition (a static symbol such
 * as "amqp:connection:framing-error") and a sentence a person can act on.
 * Owned by the caller. */
typedef struct jn_amqp_fault {
    const char *condition;
    char description[160];
} jn_amqp_fault_t;

/* One frame, read in place (2.3.1). body is a raw view of the frame body
 * (after the extended header, which is skipped); it borrows the input's
 * octets, which must stay referenced while it is used. An empty body is a
 * heartbeat (2.4.5). */
typedef struct jn_amqp_frame {
    uint32_t size;    /* SIZE: the whole frame, header included */
    uint8_t doff;     /* DOFF: data offset in 4-octet words (>= 2) */
    uint8_t type;     /* JN_AMQP_FRAME_AMQP or JN_AMQP_FRAME_SASL */
    uint16_t channel; /* the channel (AMQP frames; ignored for SASL) */
    jn_iter_t body;   /* raw view of the body */
    uint32_t body_size;
} jn_amqp_frame_t;

/* jn_amqp_header_read: read a protocol header (2.2) from the octets left in
 * in (not advanced). Returns JN_AGAIN while fewer than 8 octets are there
 * and those that are agree with a header; 8 with *proto set once a whole
 * header of major 1, minor 0, revision 0 with protocol id 0, 2 or 3 is
 * read; JN_EPROTO otherwise, with fault's condition
 * "amqp:connection:framing-error" (the caller answers with its own header
 * and closes, 2.2). Any thread. */
int jn_amqp_header_read(const jn_iter_t *in, jn_amqp_proto_t *proto, jn_amqp_fault_t *fault);

/* jn_amqp_header_write: the 8 octets of the protocol header for proto into
 * out (2.2). Any thread. */
void jn_amqp_header_write(uint8_t out[JN_AMQP_HEADER_SIZE], jn_amqp_proto_t proto);

/* jn_amqp_frame_read: read the frame at the start of the octets left in in
 * (not advanced) into *f (2.3.1). type is the frame type the layer expects
 * (JN_AMQP_FRAME_AMQP or JN_AMQP_FRAME_SASL); max_frame the max-frame-size
 * this side announced (a frame larger is refused, 2.7.1; before open it is
 * 512, 2.4.1); channel_max the highest channel this side allows (AMQP
 * frames only). Returns 1 with *f filled (advance in by f->size), JN_AGAIN
 * when the frame is not all there yet (nothing is read), or JN_EPROTO with
 * fault's condition "amqp:connection:framing-error" for a size below 8 or
 * above max_frame, a DOFF below 2 or past the frame, another frame type,
 * or a channel above channel_max. Any thread. */
int jn_amqp_frame_read(const jn_iter_t *in, uint8_t type, uint32_t max_frame, uint16_t channel_max,
                       jn_amqp_frame_t *f, jn_amqp_fault_t *fault);

/* jn_amqp_frame_next: jn_amqp_frame_read, and on 1 in is advanced past
 * the frame (by f->size), so a frame that goes on in the next buffers is
 * walked over once, not once to read and again to advance. The same
 * results and faults; nothing is advanced otherwise. Hot path: every frame
 * the AMQP layer reads. Any thread. */
int jn_amqp_frame_next(jn_iter_t *in, uint8_t type, uint32_t max_frame, uint16_t channel_max,
                       jn_amqp_frame_t *f, jn_amqp_fault_t *fault);

/* jn_amqp_frame_begin: start a frame in e (2.3.1): an 8-octet header of
 * the given type and channel whose size jn_amqp_frame_end() fills in.
 * Returns the frame's offset in e, to give to jn_amqp_frame_end. The body
 * (a performative, jn_amqp_perf_encode, and any payload) is written to e
 * between the two. Errors are e's (sticky). Thread of e. */
size_t jn_amqp_frame_begin(jn_encoder_t *e, uint8_t type, uint16_t channel);

/* jn_amqp_frame_end: close the frame begun at offset start: write its size.
 * Returns 0, e's sticky error, JN_EINVAL if start is not a frame begun in e,
 * or JN_EOVERFLOW if the frame is larger than max_frame (the peer's
 * max-frame-size, 2.7.1: the caller splits a transfer before; a
 * performative that does not fit alone is the spec's
 * amqp:frame-size-too-small, 2.8.15). Thread of e. */
int jn_amqp_frame_end(jn_encoder_t *e, size_t start, uint32_t max_frame);

/* jn_amqp_heartbeat_write: the 8 octets of an empty AMQP frame on channel
 * 0 (2.4.5) into out. Any thread. */
void jn_amqp_heartbeat_write(uint8_t out[JN_AMQP_FRAME_HEADER_SIZE]);

#endif /* JUNCTION_AMQP_FRAME_H */
