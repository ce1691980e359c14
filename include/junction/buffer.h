/*
 * junction/buffer.h — refcounted fixed-size buffers and chains of them.
 *
 * Message octets live in chains of buffers taken from a pool. A buffer's
 * octets are written once, by the thread that receives them, and only ever
 * appended; other threads may read the octets that have been published to
 * them (see "Publication" below). Buffers are freed when their refcount
 * drops to zero.
 *
 * The struct is visible because the field iterator's inline fast path
 * (junction/iterator.h) reads it; code outside router/message treats it as
 * read-only.
 *
 * Publication: `size` and `next` are atomics. A writer fills data[], then
 * stores size with release order; a new buffer is linked with a release store
 * of `next`. A reader loads them with acquire order, so it never sees octets
 * that were not yet written. That lets one thread append to a message while
 * others already forward its beginning (streaming), without a lock.
 * Only the tail buffer is ever topped up, so a buffer's size is final once
 * its `next` is set: a reader walking a chain that may still grow loads
 * `next` before `size`, and then sees the final size of every buffer that
 * has a successor.
 */
#ifndef JUNCTION_BUFFER_H
#define JUNCTION_BUFFER_H 1

#include <junction/common.h>
#include <stdatomic.h>

/* JN_BUFFER_CAPACITY: octets per buffer, fixed at build time.
 *
 * Why 512: a typical routed message (header, annotations, properties and a
 * 100-octet body: about 200-300 octets) fits in one buffer, so the common
 * message costs one pool object and its walks never cross a boundary; memory
 * held per in-flight small message stays at about half a KiB, which keeps the
 * router's footprint bounded when many links have a full window of small
 * messages. Larger messages cost one pn_link_recv call and one iterator
 * boundary crossing per 512 octets, which is small next to copying them.
 * The build option JN_BUFFER_CAPACITY overrides it for measurement. */
#ifndef JN_BUFFER_CAPACITY
#define JN_BUFFER_CAPACITY 512
#endif

typedef struct jn_buffer jn_buffer_t;

/* One buffer. Ownership: refcount (atomic). data[0..size) is immutable once
 * published; only the writer that appends may store size and next. */
struct jn_buffer {
    _Atomic(jn_buffer_t *) next; /* next buffer of the chain, or NULL */
    atomic_uint size;            /* octets of data[] published so far */
    atomic_uint refcount;        /* references held; freed at zero */
    /* data[] starts 16 octets in, so it is 16-octet aligned (pool objects
     * are); buffer.c asserts this at compile time. */
    uint8_t data[JN_BUFFER_CAPACITY];
};

/* A chain of buffers owned by one holder (one reference on each buffer).
 * Not shared between threads unless its owner publishes it. */
typedef struct jn_buffer_list {
    jn_buffer_t *head;
    jn_buffer_t *tail;
} jn_buffer_list_t;

/* jn_buffer_new: a buffer from the buffer pool with size 0, next NULL and
 * refcount 1. Returns NULL on ENOMEM. Any thread; hot path. */
jn_buffer_t *jn_buffer_new(void);

/* jn_buffer_ref: add a reference; returns buf. Any thread. */
static inline jn_buffer_t *jn_buffer_ref(jn_buffer_t *buf)
{
    atomic_fetch_add_explicit(&buf->refcount, 1, memory_order_relaxed);
    return buf;
}

/* jn_buffer_unref: drop a reference; at zero the buffer goes back to the
 * pool (its `next` is not followed: chains are released with
 * jn_buffer_list_free). NULL is ignored. Any thread; hot path. */
void jn_buffer_unref(jn_buffer_t *buf);

/* jn_buffer_size: octets published in buf (acquire load). Any thread. */
static inline uint32_t jn_buffer_size(const jn_buffer_t *buf)
{
    return atomic_load_explicit(&((jn_buffer_t *)buf)->size, memory_order_acquire);
}

/* jn_buffer_next: the next buffer of the chain, or NULL (acquire load). */
static inline jn_buffer_t *jn_buffer_next(const jn_buffer_t *buf)
{
    return atomic_load_explicit(&((jn_buffer_t *)buf)->next, memory_order_acquire);
}

/* jn_buffer_space: octets still free at the end of buf. Writer only. */
static inline uint32_t jn_buffer_space(const jn_buffer_t *buf)
{
    return JN_BUFFER_CAPACITY -
           atomic_load_explicit(&((jn_buffer_t *)buf)->size, memory_order_relaxed);
}

/* jn_buffer_publish: the writer has filled n more octets after the current
 * size; make them visible to readers (release store). n <= space. */
static inline void jn_buffer_publish(jn_buffer_t *buf, uint32_t n)
{
    uint32_t size = atomic_load_explicit(&buf->size, memory_order_relaxed);
    atomic_store_explicit(&buf->size, size + n, memory_order_release);
}

/* jn_buffer_list_init: an empty chain. */
static inline void jn_buffer_list_init(jn_buffer_list_t *list)
{
    list->head = list->tail = NULL;
}

/* jn_buffer_list_append: link buf (whose reference passes to the list) at the
 * tail, publishing it with a release store. Owner of the list only. */
void jn_buffer_list_append(jn_buffer_list_t *list, jn_buffer_t *buf);

/* jn_buffer_list_append_bytes: copy len octets from data to the end of the
 * chain, filling the tail buffer first and then new buffers.
 * Returns 0, or JN_ENOMEM (the octets copied before the failure stay).
 * Owner of the list only. */
int jn_buffer_list_append_bytes(jn_buffer_list_t *list, const void *data, size_t len);

/* jn_buffer_list_append_split: as jn_buffer_list_append_bytes, but each new
 * buffer receives at most chunk octets (chunk >= 1) and the tail buffer is
 * never topped up. For tests that split every field at every boundary.
 * Returns 0 or JN_ENOMEM or JN_EINVAL (chunk 0 or > capacity). */
int jn_buffer_list_append_split(jn_buffer_list_t *list, const void *data, size_t len,
                                size_t chunk);

/* jn_buffer_list_length: total published octets in the chain. */
size_t jn_buffer_list_length(const jn_buffer_list_t *list);

/* jn_buffer_list_copy_out: copy up to cap octets, starting offset octets into
 * the chain, to dst. Returns the number copied. */
size_t jn_buffer_list_copy_out(const jn_buffer_list_t *list, size_t offset, void *dst,
                               size_t cap);

/* jn_buffer_list_free: drop the list's reference on every buffer and leave it
 * empty. Owner of the list only. */
void jn_buffer_list_free(jn_buffer_list_t *list);

#endif /* JUNCTION_BUFFER_H */
