/*
 * buffer.c — refcounted fixed-size buffers and the chains that hold message
 * octets (junction/buffer.h).
 *
 * Every buffer comes from one pool ("jn_buffer"), created on first use
 * through jn_pool_get_once, so allocation and release are a per-thread cache
 * pop and push; nothing here takes a lock.
 *
 * Publication. A chain is written by one thread (its owner) and may be read
 * by others at the same time. The writer copies octets into data[] past the
 * published size and then publishes them with a release store of `size`; a
 * new buffer is filled and published before it is linked with a release
 * store of the tail's `next`. The tail is the only buffer ever topped up, so
 * a buffer's size is final once its `next` is set: a reader that loads `next`
 * (acquire) before `size` therefore always sees the final size of every
 * buffer that has a successor. The field iterator relies on that order.
 */
#include <junction/buffer.h>
#include <junction/pool.h>

#include <string.h>

/* data[] 16-octet aligned inside a 16-octet aligned pool object. */
_Static_assert(offsetof(jn_buffer_t, data) % 16 == 0, "jn_buffer_t.data alignment");

static _Atomic(jn_pool_t *) buffer_pool;

/* The buffer pool, created on first use. NULL only on ENOMEM. */
static inline jn_pool_t *pool(void)
{
    jn_pool_t *p = atomic_load_explicit(&buffer_pool, memory_order_acquire);
    if (JN_LIKELY(p != NULL))
        return p;
    return jn_pool_get_once(&buffer_pool, "jn_buffer", sizeof(jn_buffer_t), 0);
}

jn_buffer_t *jn_buffer_new(void)
{
    jn_pool_t *p = pool();
    if (JN_UNLIKELY(p == NULL))
        return NULL;
    jn_buffer_t *buf = jn_pool_alloc(p);
    if (JN_UNLIKELY(buf == NULL))
        return NULL;
    /* The object is ours alone until it is linked or handed out, so plain
     * initialisation of the atomics is enough. */
    atomic_init(&buf->next, NULL);
    atomic_init(&buf->size, 0);
    atomic_init(&buf->refcount, 1);
    return buf;
}

void jn_buffer_unref(jn_buffer_t *buf)
{
    if (buf == NULL)
        return;
    /* acq_rel: every use of the buffer by other holders happens before the
     * last holder gives it back to the pool. */
    unsigned prev = atomic_fetch_sub_explicit(&buf->refcount, 1, memory_order_acq_rel);
    JN_CHECK(prev != 0);
    if (prev == 1)
        jn_pool_free(pool(), buf);
}

void jn_buffer_list_append(jn_buffer_list_t *list, jn_buffer_t *buf)
{
    JN_CHECK(buf != NULL);
    if (list->tail != NULL)
        atomic_store_explicit(&list->tail->next, buf, memory_order_release);
    else
        list->head = buf;
    list->tail = buf;
}

/* Copy len octets into fresh buffers of at most chunk octets each, appended
 * to list. Each buffer is filled and published before it is linked. */
static int append_fresh(jn_buffer_list_t *list, const uint8_t *src, size_t len, size_t chunk)
{
    while (len > 0) {
        jn_buffer_t *buf = jn_buffer_new();
        if (buf == NULL)
            return JN_ENOMEM;
        size_t n = len < chunk ? len : chunk;
        memcpy(buf->data, src, n);
        jn_buffer_publish(buf, (uint32_t)n);
        jn_buffer_list_append(list, buf);
        src += n;
        len -= n;
    }
    return 0;
}

int jn_buffer_list_append_bytes(jn_buffer_list_t *list, const void *data, size_t len)
{
    const uint8_t *src = data;
    jn_buffer_t *tail = list->tail;
    if (tail != NULL && len > 0) {
        uint32_t space = jn_buffer_space(tail);
        size_t n = len < space ? len : space;
        if (n > 0) {
            uint32_t size = atomic_load_explicit(&tail->size, memory_order_relaxed);
            memcpy(tail->data + size, src, n);
            jn_buffer_publish(tail, (uint32_t)n);
            src += n;
            len -= n;
        }
    }
    return append_fresh(list, src, len, JN_BUFFER_CAPACITY);
}

int jn_buffer_list_append_split(jn_buffer_list_t *list, const void *data, size_t len, size_t chunk)
{
    if (chunk == 0 || chunk > JN_BUFFER_CAPACITY)
        return JN_EINVAL;
    return append_fresh(list, data, len, chunk);
}

size_t jn_buffer_list_length(const jn_buffer_list_t *list)
{
    size_t total = 0;
    const jn_buffer_t *next;
    for (const jn_buffer_t *b = list->head; b != NULL; b = next) {
        next = jn_buffer_next(b); /* before size: see the top of this file */
        total += jn_buffer_size(b);
    }
    return total;
}

size_t jn_buffer_list_copy_out(const jn_buffer_list_t *list, size_t offset, void *dst, size_t cap)
{
    uint8_t *out = dst;
    size_t copied = 0;
    const jn_buffer_t *next;
    for (const jn_buffer_t *b = list->head; b != NULL && copied < cap; b = next) {
        next = jn_buffer_next(b); /* before size: see the top of this file */
        size_t size = jn_buffer_size(b);
        if (offset >= size) {
            offset -= size;
            continue;
        }
        size_t n = size - offset;
        if (n > cap - copied)
            n = cap - copied;
        memcpy(out + copied, b->data + offset, n);
        copied += n;
        offset = 0;
    }
    return copied;
}

void jn_buffer_list_free(jn_buffer_list_t *list)
{
    jn_buffer_t *b = list->head;
    while (b != NULL) {
        jn_buffer_t *next = jn_buffer_next(b);
        jn_buffer_unref(b);
        b = next;
    }
    jn_buffer_list_init(list);
}
