/*
 * message.c — message content (junction/message.h): its lifetime, the one
 * writer that appends received octets, and the accessors of what the parser
 * found. Locating sections is in message_parse.c, outgoing copies in
 * message_out.c; the struct is in message_private.h.
 *
 * Octets are appended to a chain of pooled buffers (junction/buffer.h). The
 * writer fills the tail buffer in place (pn_link_recv writes straight into
 * jn_message_write_space()) and publishes each commit with a release store
 * of the buffer's size and of the content's length; new buffers are linked
 * with a release store. Readers on other threads load with acquire order,
 * so they may send the first octets of a message while the rest arrives.
 * Buffers filled elsewhere may be linked whole (jn_message_append_buffers:
 * composed sections, or a large transfer's buffers taken from the input);
 * the tail they follow then keeps its size for good, short or not, so a
 * chain may hold short buffers mid-chain, and every walker (the iterator,
 * the parser, the copies, trimming) goes by each buffer's size.
 * The complete and aborted flags are set with release order after the last
 * octet is published.
 */
#include "message_private.h"

#include <junction/pool.h>
#include <string.h>

static _Atomic(jn_pool_t *) message_pool;

jn_message_t *jn_message_new(void)
{
    jn_pool_t *pool = jn_pool_get_once(&message_pool, "jn_message", sizeof(jn_message_t), 0);
    if (!pool)
        return NULL;
    jn_message_t *m = jn_pool_alloc(pool);
    if (!m)
        return NULL;
    atomic_init(&m->refcount, 1);
    atomic_init(&m->flags, 0);
    atomic_init(&m->head, NULL);
    atomic_init(&m->length, 0);
    m->tail = NULL;
    jn_message_parse_init(m);
    jn_message_stream_init(m);
    return m;
}

jn_message_t *jn_message_ref(jn_message_t *m)
{
    atomic_fetch_add_explicit(&m->refcount, 1, memory_order_relaxed);
    return m;
}

void jn_message_unref(jn_message_t *m)
{
    if (!m)
        return;
    unsigned before = atomic_fetch_sub_explicit(&m->refcount, 1, memory_order_acq_rel);
    JN_CHECK(before > 0);
    if (before != 1)
        return;
    jn_message_stream_fini(m);
    jn_buffer_t *b = atomic_load_explicit(&m->head, memory_order_acquire);
    while (b) {
        jn_buffer_t *next = jn_buffer_next(b);
        jn_buffer_unref(b);
        b = next;
    }
    jn_pool_free(atomic_load_explicit(&message_pool, memory_order_acquire), m);
}

/* Link b (and whatever follows it) after the tail; release stores, so a
 * reader that finds it sees its published octets. */
static void link_buffers(jn_message_t *m, jn_buffer_t *first, jn_buffer_t *last)
{
    if (m->tail)
        atomic_store_explicit(&m->tail->next, first, memory_order_release);
    else
        atomic_store_explicit(&m->head, first, memory_order_release);
    m->tail = last;
}

static void add_length(jn_message_t *m, size_t n)
{
    size_t len = atomic_load_explicit(&m->length, memory_order_relaxed);
    atomic_store_explicit(&m->length, len + n, memory_order_release);
}

int jn_message_write_space(jn_message_t *m, uint8_t **ptr, size_t *len)
{
    jn_buffer_t *t = m->tail;
    if (JN_UNLIKELY(!t || jn_buffer_space(t) == 0)) {
        t = jn_buffer_new();
        if (!t)
            return JN_ENOMEM;
        link_buffers(m, t, t);
    }
    uint32_t size = atomic_load_explicit(&t->size, memory_order_relaxed);
    *ptr = t->data + size;
    *len = JN_BUFFER_CAPACITY - size;
    return 0;
}

void jn_message_write_commit(jn_message_t *m, size_t n)
{
    if (n == 0)
        return;
    JN_CHECK(m->tail && n <= jn_buffer_space(m->tail));
    jn_buffer_publish(m->tail, (uint32_t)n);
    add_length(m, n);
}

int jn_message_append(jn_message_t *m, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        uint8_t *dst;
        size_t space;
        int rc = jn_message_write_space(m, &dst, &space);
        if (rc != 0)
            return rc;
        size_t n = len < space ? len : space;
        memcpy(dst, p, n);
        jn_message_write_commit(m, n);
        p += n;
        len -= n;
    }
    return 0;
}

int jn_message_append_buffers(jn_message_t *m, jn_buffer_list_t *list)
{
    if (!list->head)
        return 0;
    size_t n = jn_buffer_list_length(list);
    jn_buffer_t *first = list->head, *last = list->tail;
    jn_buffer_list_init(list);
    link_buffers(m, first, last);
    add_length(m, n);
    return 0;
}

void jn_message_set_complete(jn_message_t *m)
{
    atomic_fetch_or_explicit(&m->flags, JN_MSG_COMPLETE, memory_order_release);
}

void jn_message_set_complete_unshared(jn_message_t *m)
{
    unsigned f = atomic_load_explicit(&m->flags, memory_order_relaxed);
    atomic_store_explicit(&m->flags, f | JN_MSG_COMPLETE, memory_order_relaxed);
}

void jn_message_set_aborted(jn_message_t *m)
{
    atomic_fetch_or_explicit(&m->flags, JN_MSG_ABORTED, memory_order_release);
}

bool jn_message_is_complete(const jn_message_t *m)
{
    jn_message_t *mm = (jn_message_t *)m;
    return (atomic_load_explicit(&mm->flags, memory_order_acquire) & JN_MSG_COMPLETE) != 0;
}

bool jn_message_is_aborted(const jn_message_t *m)
{
    jn_message_t *mm = (jn_message_t *)m;
    return (atomic_load_explicit(&mm->flags, memory_order_acquire) & JN_MSG_ABORTED) != 0;
}

size_t jn_message_length(const jn_message_t *m)
{
    return atomic_load_explicit(&((jn_message_t *)m)->length, memory_order_acquire);
}

const jn_buffer_t *jn_message_buffers(const jn_message_t *m)
{
    return atomic_load_explicit(&((jn_message_t *)m)->head, memory_order_acquire);
}

void jn_message_set_annotation_policy(jn_message_t *m, bool honour_router_keys)
{
    m->honour_router_keys = honour_router_keys;
}

const char *jn_message_error(const jn_message_t *m)
{
    return m->malformed ? m->error : NULL;
}

const char *jn_message_error_condition(const jn_message_t *m)
{
    return m->malformed ? m->condition : NULL;
}

/* The depth at which a section's location is final. Body and footer are
 * final only once the whole message has been walked. */
static int section_depth(jn_section_t s)
{
    static const int depth[JN_SEC_COUNT] = {
        [JN_SEC_HEADER] = JN_DEPTH_HEADER,
        [JN_SEC_DELIVERY_ANNOTATIONS] = JN_DEPTH_DELIVERY_ANNOTATIONS,
        [JN_SEC_MESSAGE_ANNOTATIONS] = JN_DEPTH_MESSAGE_ANNOTATIONS,
        [JN_SEC_PROPERTIES] = JN_DEPTH_PROPERTIES,
        [JN_SEC_APPLICATION_PROPERTIES] = JN_DEPTH_APPLICATION_PROPERTIES,
        [JN_SEC_BODY] = JN_DEPTH_ALL,
        [JN_SEC_FOOTER] = JN_DEPTH_ALL,
    };
    return depth[s];
}

static void loc_view(const jn_msg_loc_t *loc, jn_iter_view_t view, jn_iter_t *out)
{
    int rc = jn_iter_init(out, loc->buffer, loc->offset, loc->length, view);
    JN_CHECK(rc == 0); /* located octets are always published */
}

int jn_message_section(const jn_message_t *m, jn_section_t section, jn_iter_t *out)
{
    if ((unsigned)section >= JN_SEC_COUNT)
        return JN_EINVAL;
    if (jn_msg_parsed(m) < section_depth(section))
        return JN_AGAIN;
    if (!(m->present & (1u << section)))
        return JN_ENOENT;
    loc_view(&m->sections[section], JN_VIEW_RAW, out);
    return 0;
}

int jn_message_get_header(const jn_message_t *m, jn_message_header_t *out)
{
    if (jn_msg_parsed(m) < JN_DEPTH_HEADER)
        return JN_AGAIN;
    *out = m->header;
    return 0;
}

int jn_message_to(const jn_message_t *m, jn_iter_t *out)
{
    if (jn_msg_parsed(m) < JN_DEPTH_PROPERTIES)
        return JN_AGAIN;
    if (!m->has_to)
        return JN_ENOENT;
    *out = m->to;
    jn_iter_set_view(out, JN_VIEW_ADDRESS);
    return 0;
}

int jn_message_to_field(const jn_message_t *m, jn_iter_t *out)
{
    if (jn_msg_parsed(m) < JN_DEPTH_PROPERTIES)
        return JN_AGAIN;
    if (!m->has_to)
        return JN_ENOENT;
    *out = m->to;
    return 0;
}

int jn_message_reply_to(const jn_message_t *m, jn_iter_t *out)
{
    if (jn_msg_parsed(m) < JN_DEPTH_PROPERTIES)
        return JN_AGAIN;
    if (!m->has_reply_to)
        return JN_ENOENT;
    *out = m->reply_to;
    jn_iter_set_view(out, JN_VIEW_ADDRESS);
    return 0;
}

const jn_ra_t *jn_message_annotations(const jn_message_t *m)
{
    if (jn_msg_parsed(m) < JN_DEPTH_MESSAGE_ANNOTATIONS)
        return NULL;
    return &m->ra;
}
