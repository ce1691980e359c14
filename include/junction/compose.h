/*
 * junction/compose.h — messages the router writes itself: the mesh's
 * control messages (router/mesh/compose.c) and management replies
 * (router/mgmt/reply.c). Both start with the same two sections and end the
 * same way, so that is written once here.
 *
 * A composer encodes the header and properties (jn_compose_head), then its
 * own sections with the encoder, then turns the octets into a complete
 * message (jn_compose_message). Not the per-message hot path.
 *
 * Threads: the caller's; the encoder and the message are its own until it
 * hands the message over.
 */
#ifndef JUNCTION_COMPOSE_H
#define JUNCTION_COMPOSE_H 1

#include <junction/encoder.h>
#include <junction/iterator.h>
#include <junction/message.h>

/* What goes in the properties section. message-id, user-id and subject
 * are always null. */
typedef struct jn_compose_props {
    const char *to;       /* properties.to, a str (null when NULL) */
    const char *reply_to; /* properties.reply-to, a str (null when NULL) */
    /* correlation-id: a value's encoded octets copied as they are (type
     * and all), or else correlation_str as a str, or null */
    const jn_iter_t *correlation;
    const char *correlation_str;
    /* fields written: 3 (the list ends with `to`) or 6 (through
     * correlation-id); 1.19 writes 3 in the messages its C core composes
     * and 6 in the others, and the mesh copies it octet for octet. */
    unsigned fields;
} jn_compose_props_t;

/* jn_compose_head: encode a header section (durable = false) and the
 * properties section p describes. Errors are the encoder's (sticky). */
void jn_compose_head(jn_encoder_t *e, const jn_compose_props_t *p);

/* jn_compose_message: the octets encoded in e as a new complete message
 * (refcount 1), parsed to depth; e's storage is freed (jn_encoder_free) in
 * every case. NULL on failure, with *rc (when rc is not NULL) saying why:
 * the encoder's error, JN_ENOMEM, or the parser's. */
jn_message_t *jn_compose_message(jn_encoder_t *e, jn_message_depth_t depth, int *rc);

#endif /* JUNCTION_COMPOSE_H */
