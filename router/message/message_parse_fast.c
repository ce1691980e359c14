/*
 * message_parse_fast.c — the parser's one-buffer way (AMQP 1.0 part 3,
 * 3.2), tried first by jn_message_parse() in junction/message.h; the
 * general, resumable way is message_parse.c.
 *
 * Most messages arrive with every section before the body, and the body's
 * head, inside the buffer the parse is at (a small message is one buffer).
 * This way walks those sections with a pointer over that buffer's
 * published octets: each section head is read in place, the header and
 * properties lists are read field by field in one pass (no decoder, no
 * peek or seek over the chain), and each section is recorded as the
 * general way records it (location, present bit, order, position), with
 * the depth raised once at the end. Anything it does not take at a glance
 * stops it at the start of that section, with nothing of it recorded: a
 * section that crosses into the next buffer or is not all in, a descriptor
 * or format code out of the common shapes, a header or properties field
 * in another encoding or out of range, any malformation. The general way
 * then goes on from there, reads the same octets again and decides (or
 * reports the error) as it always did. So this way never takes what the
 * general way refuses, and what it takes it records identically
 * (test_message_content.c compares the two on every shape it stops at;
 * fuzz_message.c compares them on every corpus input).
 *
 * The message annotations are read in place by jn_ra_parse_in_place, or
 * by jn_ra_parse (as the general way reads them) when it leaves them; the
 * other sections are only located.
 */
#include "message_private.h"

#include <junction/amqp.h>

/* Section types (descriptor code - JN_SECTION_HEADER) whose value may be a
 * list, a map or a binary (part 3, 3.2): header, properties,
 * amqp-sequence; the annotations, application-properties and footer; data;
 * amqp-value takes any value. */
#define TYPE_BIT(code) (1u << ((code)-JN_SECTION_HEADER))
#define TYPES_ANY      TYPE_BIT(JN_SECTION_AMQP_VALUE)
#define TYPES_LIST                                                                                 \
    (TYPE_BIT(JN_SECTION_HEADER) | TYPE_BIT(JN_SECTION_PROPERTIES) |                               \
     TYPE_BIT(JN_SECTION_AMQP_SEQUENCE) | TYPES_ANY)
#define TYPES_MAP                                                                                  \
    (TYPE_BIT(JN_SECTION_DELIVERY_ANNOTATIONS) | TYPE_BIT(JN_SECTION_MESSAGE_ANNOTATIONS) |        \
     TYPE_BIT(JN_SECTION_APPLICATION_PROPERTIES) | TYPE_BIT(JN_SECTION_FOOTER) | TYPES_ANY)
#define TYPES_BINARY (TYPE_BIT(JN_SECTION_DATA) | TYPES_ANY)

static inline uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The section value whose constructor is at v, left octets readable: its
 * octets (constructor included), and in *types the section types it may
 * be the value of; 0 for any other shape (a described value, another
 * format code, a size field not all readable, a compound too small for its
 * count), which the general way reads. */
static inline size_t value_shape(const uint8_t *v, size_t left, unsigned *types)
{
    uint8_t c = v[0];
    size_t n;
    switch (c) {
    case JN_AMQP_LIST0:
        *types = TYPES_LIST;
        return 1;
    case JN_AMQP_LIST8:
    case JN_AMQP_MAP8:
    case JN_AMQP_VBIN8:
        if (left < 2 || (c != JN_AMQP_VBIN8 && v[1] < 1))
            return 0;
        *types = c == JN_AMQP_LIST8 ? TYPES_LIST : c == JN_AMQP_MAP8 ? TYPES_MAP : TYPES_BINARY;
        return 2 + (size_t)v[1];
    case JN_AMQP_LIST32:
    case JN_AMQP_MAP32:
    case JN_AMQP_VBIN32:
        if (left < 5 || ((n = be32(v + 1)) < 4 && c != JN_AMQP_VBIN32))
            return 0;
        *types = c == JN_AMQP_LIST32 ? TYPES_LIST : c == JN_AMQP_MAP32 ? TYPES_MAP : TYPES_BINARY;
        return 5 + n;
    default:
        return 0;
    }
}

/* The fields of the list value at v (value_shape took it, so its size and
 * count octets are there): the first field's octet in *q, the end of the
 * list's data in *end, the count in *count. false for a count that cannot
 * fit the size (the general way reports it). */
static inline bool list_fields(const uint8_t *v, const uint8_t **q, const uint8_t **end,
                               uint32_t *count)
{
    uint32_t size;
    switch (v[0]) {
    case JN_AMQP_LIST0:
        *q = *end = v + 1;
        *count = 0;
        return true;
    case JN_AMQP_LIST8:
        size = v[1];
        *count = v[2];
        *q = v + 3;
        *end = v + 2 + size;
        return *count <= size - 1;
    default: /* list32 */
        size = be32(v + 1);
        *count = be32(v + 5);
        *q = v + 9;
        *end = v + 5 + size;
        return *count <= size - 4;
    }
}

/* The unsigned integer at q (q < end) in one of the encodings senders use
 * for the header's fields (uint0, ulong0, ubyte, smalluint, smallulong,
 * ushort, uint, ulong; part 1, 1.6): its value in *v and the octet after
 * it; NULL for another encoding or one cut by end. */
static inline const uint8_t *uint_at(const uint8_t *q, const uint8_t *end, uint64_t *v)
{
    size_t w;
    switch (q[0]) {
    case JN_AMQP_UINT0:
    case JN_AMQP_ULONG0:
        *v = 0;
        return q + 1;
    case JN_AMQP_UBYTE:
    case JN_AMQP_SMALLUINT:
    case JN_AMQP_SMALLULONG:
        w = 1;
        break;
    case JN_AMQP_USHORT:
        w = 2;
        break;
    case JN_AMQP_UINT:
        w = 4;
        break;
    case JN_AMQP_ULONG:
        w = 8;
        break;
    default:
        return NULL;
    }
    if ((size_t)(end - q) <= w)
        return NULL;
    uint64_t x = 0;
    for (size_t i = 1; i <= w; i++)
        x = (x << 8) | q[i];
    *v = x;
    return q + 1 + w;
}

/* The header (3.2.1) whose list value is at v, read into *h: every field
 * null, a boolean, or an unsigned integer within its range (priority a
 * ubyte, ttl and delivery-count uints). Writes *h only when it takes the
 * whole list; false leaves it to the general way. */
static bool header_fast(const uint8_t *v, jn_message_header_t *h)
{
    const uint8_t *q, *end;
    uint32_t count;
    if (!list_fields(v, &q, &end, &count))
        return false;
    jn_message_header_t x = *h;
    uint32_t n = count < 5 ? count : 5;
    for (uint32_t i = 0; i < n; i++) {
        if (q >= end)
            return false;
        uint8_t c = q[0];
        if (c == JN_AMQP_NULL) {
            q++;
        } else if (i == 0 || i == 3) { /* durable, first-acquirer */
            bool b;
            if (c == JN_AMQP_TRUE || c == JN_AMQP_FALSE) {
                b = c == JN_AMQP_TRUE;
                q++;
            } else if (c == JN_AMQP_BOOLEAN && end - q >= 2 && q[1] <= 1) {
                b = q[1] == 1;
                q += 2;
            } else {
                return false;
            }
            *(i == 0 ? &x.durable : &x.first_acquirer) = b;
        } else { /* priority, ttl, delivery-count */
            uint64_t u;
            if (!(q = uint_at(q, end, &u)) || u > (i == 1 ? UINT8_MAX : UINT32_MAX))
                return false;
            if (i == 1) {
                x.priority = (uint8_t)u;
            } else if (i == 2) {
                x.has_ttl = true;
                x.ttl = (uint32_t)u;
            } else {
                x.delivery_count = (uint32_t)u;
            }
        }
    }
    if (n == count && q != end)
        return false; /* octets after the last field */
    *h = x;
    return true;
}

/* Step over the plain value at q (q < end) of a properties field routing
 * does not read (message-id, user-id, subject: part 3, 3.2.4): the octet
 * after it, or NULL for a shape left to the general way (described,
 * arrays, compounds, other codes) or one cut by end. */
static inline const uint8_t *skip_plain(const uint8_t *q, const uint8_t *end)
{
    size_t left = (size_t)(end - q) - 1, w;
    switch (q[0]) {
    case JN_AMQP_NULL:
    case JN_AMQP_TRUE:
    case JN_AMQP_FALSE:
    case JN_AMQP_UINT0:
    case JN_AMQP_ULONG0:
        return q + 1;
    case JN_AMQP_UBYTE:
    case JN_AMQP_SMALLUINT:
    case JN_AMQP_SMALLULONG:
        w = 1;
        break;
    case JN_AMQP_USHORT:
        w = 2;
        break;
    case JN_AMQP_UINT:
        w = 4;
        break;
    case JN_AMQP_ULONG:
    case JN_AMQP_TIMESTAMP:
        w = 8;
        break;
    case JN_AMQP_UUID:
        w = 16;
        break;
    case JN_AMQP_VBIN8:
    case JN_AMQP_STR8:
    case JN_AMQP_SYM8:
        if (left < 1)
            return NULL;
        w = 1 + (size_t)q[1];
        break;
    case JN_AMQP_VBIN32:
    case JN_AMQP_STR32:
    case JN_AMQP_SYM32:
        if (left < 4)
            return NULL;
        w = 4 + (size_t)be32(q + 1);
        break;
    default:
        return NULL;
    }
    return left >= w ? q + 1 + w : NULL;
}

/* The string or null at q (q < end) of properties field `to` or
 * `reply-to`: its octets in *s and *len (*s NULL for null), the octet
 * after it; NULL for anything else (the general way reads it, and refuses
 * what is not a string). */
static inline const uint8_t *string_at(const uint8_t *q, const uint8_t *end, const uint8_t **s,
                                       size_t *len)
{
    size_t left = (size_t)(end - q) - 1, w;
    switch (q[0]) {
    case JN_AMQP_NULL:
        *s = NULL;
        return q + 1;
    case JN_AMQP_STR8:
        if (left < 1)
            return NULL;
        w = 1;
        *len = q[1];
        break;
    case JN_AMQP_STR32:
        if (left < 4)
            return NULL;
        w = 4;
        *len = be32(q + 1);
        break;
    default:
        return NULL;
    }
    if (left - w < *len)
        return NULL;
    *s = q + 1 + w;
    return *s + *len;
}

/* Properties (3.2.4) whose list value is at v, in buffer b: `to` (field 2)
 * and `reply-to` (field 4), strings or null, as views in place; the fields
 * before them are stepped over. Writes m only when it takes the list;
 * false leaves it to the general way. */
static bool properties_fast(jn_message_t *m, const jn_buffer_t *b, const uint8_t *v)
{
    const uint8_t *q, *end, *to = NULL, *reply_to = NULL;
    size_t to_len = 0, reply_to_len = 0;
    uint32_t count;
    if (!list_fields(v, &q, &end, &count))
        return false;
    uint32_t n = count < 5 ? count : 5;
    for (uint32_t i = 0; i < n && q; i++) {
        if (q >= end)
            return false;
        if (i == 2)
            q = string_at(q, end, &to, &to_len);
        else if (i == 4)
            q = string_at(q, end, &reply_to, &reply_to_len);
        else
            q = skip_plain(q, end);
    }
    if (!q || (n == count && q != end))
        return false; /* a field left to the general way, or octets after the last */
    if (to) {
        m->has_to = true;
        jn_iter_raw_run(&m->to, b, to, to_len);
    }
    if (reply_to) {
        m->has_reply_to = true;
        jn_iter_raw_run(&m->reply_to, b, reply_to, reply_to_len);
    }
    return true;
}

/* Record the section taken (kind, loc) as the general way does. */
static inline void record(jn_message_t *m, int kind, const jn_msg_loc_t *loc)
{
    if (kind == JN_SEC_BODY && (m->present & (1u << JN_SEC_BODY)))
        m->sections[JN_SEC_BODY].length = loc->start + loc->length - m->sections[JN_SEC_BODY].start;
    else
        m->sections[kind] = *loc;
    m->present |= (uint8_t)(1u << kind);
    m->last_kind = (int8_t)kind;
    m->pos = loc->start + loc->length;
}

int jn_msg_parse_fast(jn_message_t *m, int depth)
{
    const jn_buffer_t *b = m->pos_buffer;
    if (!b) {
        if (!(b = atomic_load_explicit(&m->head, memory_order_acquire)))
            return 1;
        m->pos_buffer = b;
        m->pos_buffer_start = 0;
    }
    size_t start = m->pos_buffer_start; /* <= m->pos */
    size_t limit = start + jn_buffer_size(b);
    size_t length = atomic_load_explicit(&m->length, memory_order_acquire);
    if (length < limit)
        limit = length; /* octets readable in place and published */
    int reach = atomic_load_explicit(&m->parsed, memory_order_relaxed), rc = 1;
    size_t pos = m->pos;
    while (pos < limit) {
        size_t left = limit - pos, total;
        const uint8_t *p = b->data + (pos - start);
        if (left < 4 || p[0] != JN_AMQP_DESCRIBED || p[1] != JN_AMQP_SMALLULONG)
            break;
        unsigned type = (unsigned)p[2] - JN_SECTION_HEADER, types = 0;
        if (type > JN_SECTION_FOOTER - JN_SECTION_HEADER ||
            (total = value_shape(p + 3, left - 3, &types)) == 0 || !(types & (1u << type)))
            break;
        /* data, amqp-sequence and amqp-value are all the body */
        int kind = type < JN_SEC_BODY ? (int)type : type < 8 ? JN_SEC_BODY : JN_SEC_FOOTER;
        int last = m->last_kind;
        if (last >= 0 && (kind < last || (kind == last && kind != JN_SEC_BODY)))
            break; /* out of order: the general way says so */
        if (kind > reach)
            reach = kind; /* every section before this one is absent */
        if (reach >= depth) {
            rc = 0;
            break;
        }
        if (kind < JN_SEC_BODY && total > left - 3)
            break; /* taken only once all in: the general way waits or reads across */
        jn_msg_loc_t loc = {.buffer = b, .offset = pos - start, .start = pos, .length = 3 + total};
        if (kind == JN_SEC_HEADER) {
            if (!header_fast(p + 3, &m->header))
                break;
        } else if (kind == JN_SEC_PROPERTIES) {
            if (!properties_fast(m, b, p + 3))
                break;
        } else if (kind == JN_SEC_MESSAGE_ANNOTATIONS &&
                   jn_ra_parse_in_place(b, p, 3 + total, m->honour_router_keys, &m->ra) != 0) {
            if ((rc = jn_msg_decode_annotations(m, &loc)) != 0)
                break; /* malformed (error set) */
            rc = 1;
        }
        record(m, kind, &loc);
        pos = m->pos;
        int after = kind < JN_SEC_BODY ? kind + 1 : JN_DEPTH_BODY;
        if (after > reach)
            reach = after;
        if (reach >= depth) {
            rc = 0;
            break;
        }
    }
    jn_msg_raise_depth(m, reach);
    return rc;
}
