/*
 * message_stream.c — streaming a large message through the router with
 * bounded memory: how far every outgoing copy has got, and releasing the
 * buffers all of them have passed while the message is still arriving
 * (junction/message.h, "streaming").
 *
 * The picture, for one message:
 *
 *   head ... keep | released ... | B_k ... B_n (tail)
 *   [pinned      ]                 ^ slowest copy's buffer      ^ writer
 *
 * The pinned prefix (every buffer up to the one holding the parser's next
 * section, i.e. header, annotations and properties) is never released:
 * the router annotations, `to` and each copy's replaced range point into
 * it. After it, buffers that every copy has passed are unlinked from the
 * chain (keep->next jumps over them) and unreferenced.
 *
 * Who may release what, and why it is safe without a lock:
 *   - Each copy (jn_message_out_t on some sending thread) publishes, with a
 *     release store in its own slot, the content offset of the buffer its
 *     cursor holds. The cursor never moves backwards, so every buffer that
 *     ends at or before that offset is behind it for good.
 *   - Only the writer (the receiving thread) unlinks and releases, and only
 *     once the set of copies is final (the core says how many, after the
 *     last one was handed out: no copy can start later and need octet 0)
 *     and every one of them has registered. It never releases the tail
 *     buffer (it is still writing into it) nor anything a copy has not
 *     passed, so no reader ever follows a pointer into a released buffer.
 *   - A message with more copies than slots is not tracked (nothing is
 *     released; the receiver is not held back).
 *
 * The receiving side calls jn_message_stream_trim() as it reads: it
 * releases what it can and returns the backlog (octets received that the
 * slowest registered copy has not passed), which the I/O layer compares
 * with its high- and low-water marks to pause and resume reading.
 */
#include "message_private.h"

void jn_message_stream_init(jn_message_t *m)
{
    atomic_init(&m->stream_copies, -1);
    atomic_init(&m->stream_registered, 0);
    for (int i = 0; i < JN_MESSAGE_STREAM_SLOTS; i++)
        atomic_init(&m->stream_pos[i], 0);
    m->stream_keep = NULL;
    m->stream_keep_end = 0;
}

void jn_message_stream_set_copies(jn_message_t *m, unsigned copies)
{
    atomic_store_explicit(&m->stream_copies, (int)copies, memory_order_release);
}

int jn_message_stream_copy_begin(jn_message_t *m)
{
    unsigned slot = atomic_fetch_add_explicit(&m->stream_registered, 1, memory_order_acq_rel);
    return slot < JN_MESSAGE_STREAM_SLOTS ? (int)slot : -1;
}

void jn_message_stream_copy_progress(jn_message_t *m, int slot, const jn_message_out_t *o)
{
    if (slot >= 0)
        atomic_store_explicit(&m->stream_pos[slot], o->buffer ? o->buffer_start : 0,
                              memory_order_release);
}

void jn_message_stream_copy_end(jn_message_t *m, int slot)
{
    if (slot >= 0)
        atomic_store_explicit(&m->stream_pos[slot], SIZE_MAX, memory_order_release);
}

/* Find the last pinned buffer once it has a successor (its size is then
 * final). Writer thread. */
static bool find_keep(jn_message_t *m)
{
    if (m->stream_keep)
        return true;
    jn_buffer_t *b = atomic_load_explicit(&m->head, memory_order_acquire);
    size_t start = 0;
    while (b) {
        jn_buffer_t *next = jn_buffer_next(b);
        size_t end = start + jn_buffer_size(b);
        if (!next)
            return false; /* the pinned part reaches the tail: nothing to do */
        if (m->pos < end) {
            m->stream_keep = b;
            m->stream_keep_end = end;
            return true;
        }
        start = end;
        b = next;
    }
    return false;
}

/* Release the buffers after the pinned prefix that end at or before
 * boundary (content offset), never the tail. Writer thread. */
static void release_before(jn_message_t *m, size_t boundary)
{
    if (!find_keep(m))
        return;
    jn_buffer_t *keep = m->stream_keep;
    jn_buffer_t *first = jn_buffer_next(keep);
    jn_buffer_t *b = first;
    size_t start = m->stream_keep_end;
    while (b && b != m->tail) {
        size_t end = start + jn_buffer_size(b);
        if (end > boundary)
            break;
        start = end;
        b = jn_buffer_next(b);
    }
    if (b == first)
        return;
    /* Unlink first: no reader is at or before these buffers any more. */
    atomic_store_explicit(&keep->next, b, memory_order_release);
    m->stream_keep_end = start;
    while (first != b) {
        jn_buffer_t *next = jn_buffer_next(first);
        jn_buffer_unref(first);
        first = next;
    }
}

size_t jn_message_stream_trim(jn_message_t *m)
{
    int copies = atomic_load_explicit(&m->stream_copies, memory_order_acquire);
    if (copies < 0)
        return 0; /* not final yet: do not hold the receiver back */
    unsigned registered = atomic_load_explicit(&m->stream_registered, memory_order_acquire);
    if (registered > JN_MESSAGE_STREAM_SLOTS)
        return 0; /* untracked */
    size_t length = atomic_load_explicit(&m->length, memory_order_relaxed);
    size_t slowest = SIZE_MAX;
    for (unsigned i = 0; i < registered; i++) {
        size_t pos = atomic_load_explicit(&m->stream_pos[i], memory_order_acquire);
        if (pos < slowest)
            slowest = pos;
    }
    if (slowest > length)
        slowest = length; /* no copy left (or none at all): all passed */
    if (registered == (unsigned)copies)
        release_before(m, slowest);
    return length - slowest;
}
