/*
 * message_out.c — outgoing copies of a message (jn_message_out_t in
 * junction/message.h).
 *
 * A copy is the original octets with one range replaced: the message
 * annotations (an empty range after the header and delivery annotations
 * when there are none) give way to the message-annotations section
 * composed for this hop. Delivery annotations pass as they came, as 1.19
 * forwards them (the router acts on none of them). The cursor
 * hands out segments that point into the shared buffers — nothing of the
 * original is copied — in three stages: the original up to skip_from, the
 * composed section, the original from skip_to to the end.
 *
 * The copy may start while the message is still arriving: the cursor reads
 * the published sizes and links with acquire order and says JN_AGAIN when it
 * has caught up with the writer. It reads the complete flag before the
 * sizes, so "nothing more and complete" is never decided on a stale size.
 */
#include "message_private.h"

enum { STAGE_HEAD = 0, STAGE_ANNOTATIONS, STAGE_REST, STAGE_DONE };

int jn_message_out_init(jn_message_out_t *o, jn_message_t *m, jn_buffer_list_t *annotations)
{
    if (m->malformed || jn_msg_parsed(m) < JN_DEPTH_MESSAGE_ANNOTATIONS)
        return JN_EINVAL;
    o->message = jn_message_ref(m);
    o->annotations = *annotations;
    jn_buffer_list_init(annotations);
    o->buffer = NULL;
    o->buffer_start = 0;
    o->position = 0;
    o->skip_from = m->skip_from;
    o->skip_to = m->skip_to;
    o->ann_buffer = o->annotations.head;
    o->stage = STAGE_HEAD;
    if (!o->ann_buffer && o->skip_from == o->skip_to) {
        /* Nothing is replaced (no section composed, none skipped: a
         * message without annotations toward a client): the copy is the
         * original as it is, so the header is not cut off into a segment
         * of its own. Hot path: one pn_link_send per copy, not two. */
        o->skip_from = o->skip_to = 0;
        o->stage = STAGE_REST;
    }
    return 0;
}

int jn_message_out_init_verbatim(jn_message_out_t *o, jn_message_t *m)
{
    o->message = jn_message_ref(m);
    jn_buffer_list_init(&o->annotations);
    o->buffer = NULL;
    o->buffer_start = 0;
    o->position = 0;
    o->skip_from = o->skip_to = 0; /* nothing replaced: one run, from octet 0 */
    o->ann_buffer = NULL;
    o->stage = STAGE_REST;
    return 0;
}

/* The next run of original octets from o->position, at most up to limit;
 * flags are the message's, loaded before the sizes. Returns 1 with a
 * segment, 0 at the end of the complete message, JN_AGAIN when the next
 * octet is not published yet. */
static inline int original(jn_message_out_t *o, unsigned flags, size_t limit, const uint8_t **ptr,
                           size_t *len, const jn_buffer_t **buf)
{
    const jn_buffer_t *b = o->buffer;
    if (JN_UNLIKELY(!b)) {
        b = atomic_load_explicit(&o->message->head, memory_order_acquire);
        o->buffer_start = 0;
        if (!b)
            return (flags & JN_MSG_COMPLETE) ? 0 : JN_AGAIN;
        o->buffer = b;
    }
    for (;;) {
        const jn_buffer_t *next = jn_buffer_next(b); /* before size */
        size_t end = o->buffer_start + jn_buffer_size(b);
        if (o->position < end) {
            size_t n = (limit < end ? limit : end) - o->position;
            *ptr = b->data + (o->position - o->buffer_start);
            *len = n;
            *buf = b;
            o->position += n;
            return 1;
        }
        if (!next)
            return (flags & JN_MSG_COMPLETE) && o->position == end ? 0 : JN_AGAIN;
        o->buffer_start = end;
        o->buffer = b = next;
    }
}

/* out_next() before the rest of the original: the original up to
 * skip_from, then the composed section. */
static int out_head(jn_message_out_t *o, unsigned flags, const uint8_t **ptr, size_t *len,
                    const jn_buffer_t **buf)
{
    if (o->stage == STAGE_DONE)
        return 0;
    if (o->stage == STAGE_HEAD) {
        if (o->position < o->skip_from) {
            int rc = original(o, flags, o->skip_from, ptr, len, buf);
            JN_CHECK(rc == 1); /* the parser has seen these octets */
            return 1;
        }
        o->stage = STAGE_ANNOTATIONS;
    }
    while (o->ann_buffer) {
        const jn_buffer_t *b = o->ann_buffer;
        o->ann_buffer = jn_buffer_next(b);
        if (jn_buffer_size(b) > 0) {
            *ptr = b->data;
            *len = jn_buffer_size(b);
            *buf = b;
            return 1;
        }
    }
    o->stage = STAGE_REST;
    o->position = o->skip_to;
    return 2; /* go on with the rest */
}

/* The next segment, its buffer in *buf. Inlined into both entries. Hot
 * path: a copy that replaces nothing starts in STAGE_REST, and each call
 * is one flags load and the walk of the current buffer. */
static inline int out_next(jn_message_out_t *o, const uint8_t **ptr, size_t *len,
                           const jn_buffer_t **buf)
{
    unsigned flags = jn_msg_flags(o->message); /* before the sizes */
    if (flags & JN_MSG_ABORTED)
        return JN_EPROTO;
    if (JN_UNLIKELY(o->stage != STAGE_REST)) {
        int rc = out_head(o, flags, ptr, len, buf);
        if (rc != 2)
            return rc;
    }
    int rc = original(o, flags, SIZE_MAX, ptr, len, buf);
    if (rc == 0)
        o->stage = STAGE_DONE;
    return rc;
}

int jn_message_out_next(jn_message_out_t *o, const uint8_t **ptr, size_t *len)
{
    const jn_buffer_t *buf;
    return out_next(o, ptr, len, &buf);
}

int jn_message_out_next_buffer(jn_message_out_t *o, const jn_buffer_t **buf, size_t *offset,
                               size_t *len)
{
    const uint8_t *p;
    int rc = out_next(o, &p, len, buf);
    if (rc == 1)
        *offset = (size_t)(p - (*buf)->data);
    return rc;
}

void jn_message_out_fini(jn_message_out_t *o)
{
    if (o->annotations.head) /* none composed: the common copy toward an endpoint */
        jn_buffer_list_free(&o->annotations);
    jn_message_unref(o->message);
    o->message = NULL;
    o->ann_buffer = NULL;
    o->buffer = NULL;
}
