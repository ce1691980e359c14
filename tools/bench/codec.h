/*
 * codec.h — the bench message: encoded once, stamped per send, read back.
 *
 * A bench message is an AMQP message with an application-properties section
 * holding one entry, "jn-bench" -> binary(20): the sender index (uint32),
 * the sequence number (uint64) and the send time (int64, CLOCK_MONOTONIC
 * nanoseconds), all big-endian; then a data section of --body-size octets.
 * The message is encoded once with pn_message into a template; a sender
 * copies the template and rewrites only those 20 octets before each
 * pn_link_send. Receivers find the stamp by walking the sections, so
 * sections a router adds (message annotations, a header) do not matter.
 */
#ifndef JN_BENCH_CODEC_H
#define JN_BENCH_CODEC_H

#include <stddef.h>
#include <stdint.h>

#define JN_BENCH_STAMP_SIZE 20 /* octets of the stamp value */
#define JN_BENCH_STAMP_KEY  "jn-bench"

/* The encoded message every sender copies. Immutable once built. */
typedef struct {
    uint8_t *bytes;
    size_t size;
    size_t stamp_offset; /* where the 20 stamp octets start */
} jn_bench_template_t;

/* What a stamp says. */
typedef struct {
    uint32_t sender;
    uint64_t seq;
    int64_t send_ns;
} jn_bench_stamp_t;

/* Encode the template for a body of body_size octets, with properties.to
 * set to `to` when it is not NULL (an anonymous-relay sender). Returns 0
 * or -1. */
int jn_bench_template_init(jn_bench_template_t *tmpl, size_t body_size, const char *to);

/* Release the template's memory. */
void jn_bench_template_fini(jn_bench_template_t *tmpl);

static inline void jn_bench_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void jn_bench_put_be64(uint8_t *p, uint64_t v)
{
    jn_bench_put_be32(p, (uint32_t)(v >> 32));
    jn_bench_put_be32(p + 4, (uint32_t)v);
}

/*
 * Write a stamp into a copy of the template (msg points at its first
 * octet). Hot path: called once per message sent; 20 octet stores.
 */
static inline void jn_bench_stamp_write(uint8_t *msg, size_t stamp_offset, uint32_t sender,
                                        uint64_t seq, int64_t send_ns)
{
    uint8_t *p = msg + stamp_offset;
    jn_bench_put_be32(p, sender);
    jn_bench_put_be64(p + 4, seq);
    jn_bench_put_be64(p + 12, (uint64_t)send_ns);
}

/*
 * Find and decode the stamp of an encoded message. Returns 0, or -1 when
 * the message is malformed or carries no stamp. Called once per message
 * received; it skips sections by their encoded sizes without copying.
 */
int jn_bench_stamp_read(const uint8_t *msg, size_t size, jn_bench_stamp_t *stamp);

#endif
