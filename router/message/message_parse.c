/*
 * message_parse.c — locating the sections of a message as its octets arrive
 * (AMQP 1.0 part 3, 3.2), for jn_message_parse() in junction/message.h.
 *
 * The parser is resumable. Its whole state is the content offset of the
 * next section (`pos`, with a buffer at or before it so that the chain is
 * not walked from the head each time), the kind of the last section located
 * (for the order check) and the depth reached. Each step reads the head of
 * the section at `pos` — the 0x00 of a described type, the descriptor, the
 * value's constructor and size — straight from the buffers; if those octets
 * are not all published yet it returns JN_AGAIN and the next call starts
 * the same step again. Sections before the body (header, delivery- and
 * message-annotations, properties, application-properties) are taken only
 * once all their octets are in, because they are decoded or may be read as
 * a whole; body sections and the footer are stepped over by their size, so
 * `pos` may run ahead of the octets received (streaming).
 *
 * Only the header fields, the message annotations (jn_ra_parse) and the
 * properties `to` and `reply-to` are decoded. Anything else is checked only
 * for being a described value of the right descriptor and format code.
 *
 * Each call first lets the one-buffer way (message_parse_fast.c) take the
 * sections that lie whole in the buffer at `pos`; this file's steps go on
 * from where it stopped, and are the only way for everything else.
 */
#include "message_private.h"

#include <junction/amqp.h>
#include <junction/decoder.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DECODE_ERROR  "amqp:decode-error"
#define INVALID_FIELD "amqp:invalid-field"

/* Section kinds in the order the spec requires them (== jn_section_t). */
enum {
    KIND_HEADER = JN_SEC_HEADER,
    KIND_DELIVERY_ANNOTATIONS = JN_SEC_DELIVERY_ANNOTATIONS,
    KIND_MESSAGE_ANNOTATIONS = JN_SEC_MESSAGE_ANNOTATIONS,
    KIND_PROPERTIES = JN_SEC_PROPERTIES,
    KIND_APPLICATION_PROPERTIES = JN_SEC_APPLICATION_PROPERTIES,
    KIND_BODY = JN_SEC_BODY,
    KIND_FOOTER = JN_SEC_FOOTER
};

/* The nine descriptors, indexed by code - JN_SECTION_HEADER. */
static const struct {
    const char *symbol; /* descriptor as a symbol */
    const char *name;   /* for messages */
    int kind;
} sections[] = {
    {"amqp:header:list", "header", KIND_HEADER},
    {"amqp:delivery-annotations:map", "delivery-annotations", KIND_DELIVERY_ANNOTATIONS},
    {"amqp:message-annotations:map", "message-annotations", KIND_MESSAGE_ANNOTATIONS},
    {"amqp:properties:list", "properties", KIND_PROPERTIES},
    {"amqp:application-properties:map", "application-properties", KIND_APPLICATION_PROPERTIES},
    {"amqp:data:binary", "data", KIND_BODY},
    {"amqp:amqp-sequence:list", "amqp-sequence", KIND_BODY},
    {"amqp:amqp-value:*", "amqp-value", KIND_BODY},
    {"amqp:footer:map", "footer", KIND_FOOTER},
};
#define SECTION_TYPES (sizeof sections / sizeof sections[0])

static const char *const kind_name[JN_SEC_COUNT] = {
    "header",     "delivery-annotations",   "message-annotations",
    "properties", "application-properties", "body",
    "footer"};
#define SYMBOL_MAX 32 /* longer than any section descriptor symbol */

/* The head of one section as read at pos. */
typedef struct sec_head {
    unsigned type;     /* index into sections[] */
    int kind;          /* KIND_* */
    uint8_t code;      /* format code of the section's value */
    bool described;    /* the value itself is described (amqp-value) */
    size_t start, end; /* content offsets */
} sec_head_t;

static int fail(jn_message_t *m, const char *condition, const char *fmt, ...) JN_PRINTF(3, 4);

static int fail(jn_message_t *m, const char *condition, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->error_text, sizeof m->error_text, fmt, ap);
    va_end(ap);
    m->error = m->error_text;
    m->condition = condition;
    m->malformed = true;
    return JN_EPROTO;
}

/* --- reading octets from the chain ------------------------------------- */

/* Move pos_buffer forward to the buffer that holds content offset at (or
 * the last buffer, if at is not published yet). `next` is loaded before
 * `size`, so a buffer that has a successor is seen with its final size. */
static void seek(jn_message_t *m, size_t at)
{
    if (!m->pos_buffer) {
        m->pos_buffer = jn_message_buffers(m);
        m->pos_buffer_start = 0;
        if (!m->pos_buffer)
            return;
    }
    for (;;) {
        const jn_buffer_t *next = jn_buffer_next(m->pos_buffer);
        size_t size = jn_buffer_size(m->pos_buffer);
        if (at < m->pos_buffer_start + size || !next)
            return;
        m->pos_buffer_start += size;
        m->pos_buffer = next;
    }
}

/* peek's way across buffers. */
static bool peek_slow(jn_message_t *m, size_t at, void *dst, size_t n)
{
    seek(m, m->pos);
    const jn_buffer_t *b = m->pos_buffer;
    size_t start = m->pos_buffer_start;
    uint8_t *d = dst;
    while (n > 0) {
        if (!b)
            return false;
        const jn_buffer_t *next = jn_buffer_next(b);
        size_t size = jn_buffer_size(b);
        if (at < start + size) {
            size_t k = start + size - at < n ? start + size - at : n;
            memcpy(d, b->data + (at - start), k);
            d += k;
            at += k;
            n -= k;
        }
        start += size;
        b = next;
    }
    return true;
}

/* The n octets at content offset at (>= pos): a pointer to them in place
 * when they lie in pos_buffer, else a copy in scratch (n octets); NULL when
 * they are not all published yet. pos_buffer moves only up to pos, so that
 * the section starting at pos can still be located from it. Hot path: the
 * octets usually sit in pos_buffer (read_head seeks it to pos first), and
 * are then read where they are. */
static inline const uint8_t *peek(jn_message_t *m, size_t at, void *scratch, size_t n)
{
    const jn_buffer_t *b = m->pos_buffer;
    if (JN_LIKELY(b != NULL)) {
        size_t start = m->pos_buffer_start;
        if (at + n <= start + jn_buffer_size(b))
            return b->data + (at - start);
    }
    return peek_slow(m, at, scratch, n) ? scratch : NULL;
}

static uint64_t be_read(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Octets of the fixed-width data after format code c, or -1 for a
 * variable-width code, -2 for an unknown one (part 1, 1.6). The valid codes
 * of each width class are a run from 0x_0: 0x40-0x45, 0x50-0x56, 0x60-0x61,
 * 0x70-0x74, 0x80-0x84; then 0x94 and 0x98; variable width: 0xa0, 0xa1,
 * 0xa3, 0xb0, 0xb1, 0xb3, 0xc0, 0xc1, 0xd0, 0xd1, 0xe0, 0xf0. */
static int fixed_width(uint8_t c)
{
    static const int8_t width[9] = {[4] = 0, [5] = 1, [6] = 2, [7] = 4, [8] = 8};
    static const uint8_t last[9] = {[4] = 0x5, [5] = 0x6, [6] = 0x1, [7] = 0x4, [8] = 0x4};
    unsigned hi = c >> 4, lo = c & 0x0f;
    if (hi >= 4 && hi <= 8)
        return lo <= last[hi] ? width[hi] : -2;
    if (c == JN_AMQP_DECIMAL128 || c == JN_AMQP_UUID)
        return 16;
    if ((hi == 0xa || hi == 0xb) && (lo == 0 || lo == 1 || lo == 3))
        return -1;
    if ((hi == 0xc || hi == 0xd) && lo <= 1)
        return -1;
    if ((hi == 0xe || hi == 0xf) && lo == 0)
        return -1;
    return -2;
}

/* The extent of the encoded value at content offset at: its length in
 * *total, its format code after any descriptors in *code, whether it is
 * described in *described. Reads only constructors and sizes. Returns 0,
 * JN_AGAIN (those octets are not in yet) or JN_EPROTO (error set). */
static int value_extent(jn_message_t *m, size_t at, int depth, size_t *total, uint8_t *code,
                        bool *described)
{
    uint8_t scratch;
    const uint8_t *q = peek(m, at, &scratch, 1);
    if (!q)
        return JN_AGAIN;
    uint8_t c = *q;
    if (c == JN_AMQP_DESCRIBED) {
        if (depth >= JN_DECODE_MAX_DEPTH)
            return fail(m, DECODE_ERROR, "described types nested too deep at octet %zu", at);
        size_t dlen, vlen;
        uint8_t dcode;
        bool ddesc;
        int rc = value_extent(m, at + 1, depth + 1, &dlen, &dcode, &ddesc);
        if (rc == 0)
            rc = value_extent(m, at + 1 + dlen, depth + 1, &vlen, code, &ddesc);
        if (rc != 0)
            return rc;
        *total = 1 + dlen + vlen;
        *described = true;
        return 0;
    }
    *code = c;
    *described = false;
    int width = fixed_width(c);
    if (width == -2)
        return fail(m, DECODE_ERROR, "unknown format code 0x%02x at octet %zu", c, at);
    if (width >= 0) {
        *total = 1 + (size_t)width;
        return 0;
    }
    unsigned size_width = (c & 0x10) ? 4 : 1; /* 0xb_, 0xd_, 0xf_: 32-bit sizes */
    uint8_t raw[4];
    if (!(q = peek(m, at + 1, raw, size_width)))
        return JN_AGAIN;
    size_t size = (size_t)be_read(q, size_width);
    size_t least = c >= 0xe0 ? size_width + 1 : c >= 0xc0 ? size_width : 0;
    if (size < least)
        return fail(m, DECODE_ERROR, "compound at octet %zu is too small for its count", at);
    *total = 1 + size_width + size;
    return 0;
}

/* Read the descriptor at at (just after the 0x00): the section type in
 * *type and the offset after the descriptor in *after. */
static int read_descriptor(jn_message_t *m, size_t at, unsigned *type, size_t *after)
{
    uint8_t raw[8];
    uint64_t code;
    const uint8_t *q = peek(m, at, raw, 1);
    if (!q)
        return JN_AGAIN;
    uint8_t c = *q;
    at++;
    if (c == JN_AMQP_SMALLULONG || c == JN_AMQP_ULONG) {
        unsigned n = c == JN_AMQP_SMALLULONG ? 1 : 8;
        if (!(q = peek(m, at, raw, n)))
            return JN_AGAIN;
        code = be_read(q, n);
        at += n;
    } else if (c == JN_AMQP_ULONG0) {
        code = 0;
    } else if (c == JN_AMQP_SYM8 || c == JN_AMQP_SYM32) {
        unsigned n = c == JN_AMQP_SYM8 ? 1 : 4;
        char sym_copy[SYMBOL_MAX];
        if (!(q = peek(m, at, raw, n)))
            return JN_AGAIN;
        uint64_t len = be_read(q, n);
        if (len > SYMBOL_MAX)
            return fail(m, DECODE_ERROR, "unknown section descriptor at octet %zu", at - 1);
        const uint8_t *sym = peek(m, at + n, sym_copy, (size_t)len);
        if (!sym)
            return JN_AGAIN;
        at += n + (size_t)len;
        code = UINT64_MAX;
        for (unsigned i = 0; i < SECTION_TYPES; i++)
            if (strlen(sections[i].symbol) == len && memcmp(sections[i].symbol, sym, len) == 0)
                code = JN_SECTION_HEADER + i;
    } else {
        return fail(m, DECODE_ERROR,
                    "section descriptor at octet %zu is neither a ulong nor a symbol", at - 1);
    }
    if (code < JN_SECTION_HEADER || code > JN_SECTION_FOOTER)
        return fail(m, DECODE_ERROR, "unknown section descriptor at octet %zu", at - 1);
    *type = (unsigned)(code - JN_SECTION_HEADER);
    *after = at;
    return 0;
}

/* Whether a section of the given type may hold a value of format code c. */
static bool value_allowed(unsigned type, uint8_t c, bool described)
{
    uint64_t code = JN_SECTION_HEADER + type;
    if (code == JN_SECTION_AMQP_VALUE)
        return true;
    if (described)
        return false;
    switch (code) {
    case JN_SECTION_HEADER:
    case JN_SECTION_PROPERTIES:
    case JN_SECTION_AMQP_SEQUENCE:
        return c == JN_AMQP_LIST0 || c == JN_AMQP_LIST8 || c == JN_AMQP_LIST32;
    case JN_SECTION_DATA:
        return c == JN_AMQP_VBIN8 || c == JN_AMQP_VBIN32;
    default: /* annotations and application-properties */
        return c == JN_AMQP_MAP8 || c == JN_AMQP_MAP32;
    }
}

/* read_head()'s fast path: the common section head — 0x00, a smallulong
 * descriptor, an undescribed list, map or binary with its size — lying in
 * pos_buffer (seeked to pos), read in place. Returns 0, or 1 for anything
 * else (read_head then reads it the general way, which also finds every
 * error). */
static int read_head_fast(jn_message_t *m, sec_head_t *h)
{
    const jn_buffer_t *b = m->pos_buffer;
    if (!b)
        return 1;
    size_t off = m->pos - m->pos_buffer_start, size = jn_buffer_size(b);
    if (off > size || size - off < 9) /* the longest head: 3 + 1 + 4 + 1 */
        return 1;
    const uint8_t *p = b->data + off;
    if (p[0] != JN_AMQP_DESCRIBED || p[1] != JN_AMQP_SMALLULONG || p[2] < JN_SECTION_HEADER ||
        p[2] > JN_SECTION_FOOTER)
        return 1;
    unsigned type = p[2] - JN_SECTION_HEADER;
    uint8_t c = p[3];
    size_t total; /* octets of the value */
    switch (c) {
    case JN_AMQP_LIST0:
        total = 1;
        break;
    case JN_AMQP_LIST8:
    case JN_AMQP_MAP8:
        if (p[4] < 1) /* too small for its count */
            return 1;
        /* fall through */
    case JN_AMQP_VBIN8:
        total = 2 + (size_t)p[4];
        break;
    case JN_AMQP_LIST32:
    case JN_AMQP_MAP32:
    case JN_AMQP_VBIN32: {
        size_t n = (size_t)be_read(p + 4, 4);
        if (c != JN_AMQP_VBIN32 && n < 4)
            return 1;
        total = 5 + n;
        break;
    }
    default:
        return 1;
    }
    if (!value_allowed(type, c, false))
        return 1;
    h->type = type;
    h->code = c;
    h->described = false;
    h->kind = sections[type].kind;
    h->start = m->pos;
    h->end = m->pos + 3 + total;
    return 0;
}

/* Read the head of the section at m->pos into *h. Returns 0, JN_AGAIN or
 * JN_EPROTO (error set). */
static int read_head(jn_message_t *m, sec_head_t *h)
{
    uint8_t scratch;
    seek(m, m->pos);
    if (read_head_fast(m, h) == 0)
        return 0;
    const uint8_t *q = peek(m, m->pos, &scratch, 1);
    if (!q)
        return JN_AGAIN;
    uint8_t c = *q;
    if (c != JN_AMQP_DESCRIBED)
        return fail(m, DECODE_ERROR,
                    "octet %zu should start a section (a described type), found format code "
                    "0x%02x",
                    m->pos, c);
    size_t value_at = 0, total = 0;
    int rc = read_descriptor(m, m->pos + 1, &h->type, &value_at);
    if (rc == 0)
        rc = value_extent(m, value_at, 1, &total, &h->code, &h->described);
    if (rc != 0)
        return rc;
    static const char *const expected[SECTION_TYPES] = {
        "a list", "a map", "a map", "a list", "a map", "a binary", "a list", "", "a map"};
    if (!value_allowed(h->type, h->code, h->described))
        return fail(m, DECODE_ERROR, "%s section at octet %zu is not %s", sections[h->type].name,
                    m->pos, expected[h->type]);
    h->kind = sections[h->type].kind;
    h->start = m->pos;
    h->end = value_at + total;
    return 0;
}

/* --- decoding the sections routing needs ------------------------------- */

static void loc_at(jn_message_t *m, const sec_head_t *h, jn_msg_loc_t *loc)
{
    seek(m, h->start);
    loc->buffer = m->pos_buffer;
    loc->offset = h->start - m->pos_buffer_start;
    loc->start = h->start;
    loc->length = h->end - h->start;
}

/* A raw view of the located octets. Hot path: a section inside one buffer
 * (the common case) is viewed in place, without walking the chain. */
static void loc_iter(const jn_msg_loc_t *loc, jn_iter_t *it)
{
    if (loc->offset + loc->length <= jn_buffer_size(loc->buffer)) {
        jn_iter_raw_run(it, loc->buffer, loc->buffer->data + loc->offset, loc->length);
        return;
    }
    int rc = jn_iter_init(it, loc->buffer, loc->offset, loc->length, JN_VIEW_RAW);
    JN_CHECK(rc == 0); /* sections are taken once all their octets are in */
}

/* A decoder over the fields of the described list in loc. */
static int enter_list(jn_message_t *m, const jn_msg_loc_t *loc, const char *what,
                      jn_decoder_t *fields)
{
    jn_iter_t it;
    jn_decoder_t d;
    jn_value_t list; /* read_head found a list: stepped over, then entered */
    loc_iter(loc, &it);
    jn_decoder_init(&d, &it, true);
    int rc = jn_decoder_skip(&d, &list);
    if (rc == 0)
        rc = JN_EPROTO;
    if (rc == 1)
        rc = jn_decoder_enter_value(&d, &list, fields);
    if (rc < 0)
        return fail(m, DECODE_ERROR, "%s section: %s", what, jn_strerror(rc));
    return 0;
}

/* Read an unsigned integer header field (any integer encoding) up to max. */
static int header_uint(jn_message_t *m, const jn_field_t *f, const char *name, uint64_t max,
                       uint64_t *out)
{
    if (jn_field_to_uint64(f, out) != 0 || *out > max)
        return fail(m, DECODE_ERROR, "header field %s is not an unsigned integer up to %llu (%s)",
                    name, (unsigned long long)max, jn_amqp_type_name(f->type));
    return 0;
}

static int header_bool(jn_message_t *m, const jn_field_t *f, const char *name, bool *out)
{
    if (f->type != JN_TYPE_BOOLEAN)
        return fail(m, DECODE_ERROR, "header field %s is %s, not a boolean", name,
                    jn_amqp_type_name(f->type));
    *out = f->value.b;
    return 0;
}

/* The fast way into a described list section lying in one buffer (when
 * the one-buffer way, message_parse_fast.c, left it): up to max of its
 * fields stepped over in place by the decoder's fast reader, each with
 * buffer set. Returns the number of fields read (the list's count when
 * below max), or -1 for anything the fast reader leaves (a section across
 * buffers, a field it does not take, octets after the last field when it
 * read them all); the caller then takes the decoder's way, which also
 * finds every error. */
static int list_fields_fast(const jn_msg_loc_t *loc, jn_value_t *fields, int max)
{
    if (loc->offset + loc->length > jn_buffer_size(loc->buffer))
        return -1;
    const uint8_t *p = loc->buffer->data + loc->offset;
    size_t at = 3; /* 0x00, smallulong, code: read_head_fast's shape */
    jn_value_t list;
    if (loc->length < at || p[0] != JN_AMQP_DESCRIBED || p[1] != JN_AMQP_SMALLULONG ||
        jn_decode_peek(p + at, loc->length - at, 0, &list) == 0 || list.type != JN_TYPE_LIST)
        return -1;
    const uint8_t *q = list.data, *end = list.data + list.size;
    int n = list.count < (uint32_t)max ? (int)list.count : max;
    for (int i = 0; i < n; i++) {
        size_t k = jn_decode_peek(q, (size_t)(end - q), 1, &fields[i]);
        if (k == 0 || fields[i].described)
            return -1;
        fields[i].buffer = loc->buffer;
        q += k;
    }
    if ((uint32_t)n == list.count && q != end)
        return -1; /* octets after the last field: the decoder's way refuses them */
    return n;
}

/* An unsigned integer in one of the encodings senders use for the header's
 * fields (uint0, ulong0, ubyte, smalluint, smallulong, ushort, uint,
 * ulong); false for any other encoding (the decoder's way then reads it). */
static bool uint_fast(const jn_value_t *v, uint64_t *out)
{
    switch (v->code) {
    case JN_AMQP_UINT0:
    case JN_AMQP_ULONG0:
        *out = 0;
        return true;
    case JN_AMQP_UBYTE:
    case JN_AMQP_SMALLUINT:
    case JN_AMQP_SMALLULONG:
    case JN_AMQP_USHORT:
    case JN_AMQP_UINT:
    case JN_AMQP_ULONG:
        *out = be_read(v->data, v->size);
        return true;
    default:
        return false;
    }
}

/* decode_header()'s fast path: every field null, a boolean or an unsigned
 * integer within its range, read in place. Writes m->header only when it
 * takes the whole section; returns false to leave it to the decoder's way
 * (other encodings, values out of range, malformed sections). */
static bool decode_header_fast(jn_message_t *m, const jn_msg_loc_t *loc)
{
    jn_value_t f[5];
    int n = list_fields_fast(loc, f, 5);
    if (n < 0)
        return false;
    jn_message_header_t h = m->header;
    static const uint64_t max[5] = {0, UINT8_MAX, UINT32_MAX, 0, UINT32_MAX};
    for (int i = 0; i < n; i++) {
        uint64_t v;
        if (f[i].type == JN_TYPE_NULL)
            continue;
        if (i == 0 || i == 3) {
            if (f[i].type != JN_TYPE_BOOLEAN)
                return false;
            bool b = f[i].code == JN_AMQP_TRUE ||
                     (f[i].code == JN_AMQP_BOOLEAN && f[i].size == 1 && f[i].data[0] == 1);
            *(i == 0 ? &h.durable : &h.first_acquirer) = b;
            continue;
        }
        if (!uint_fast(&f[i], &v) || v > max[i])
            return false;
        if (i == 1) {
            h.priority = (uint8_t)v;
        } else if (i == 2) {
            h.has_ttl = true;
            h.ttl = (uint32_t)v;
        } else {
            h.delivery_count = (uint32_t)v;
        }
    }
    m->header = h;
    return true;
}

/* Header fields (3.2.1): durable, priority, ttl, first-acquirer,
 * delivery-count; null or missing fields keep their defaults. */
static int decode_header(jn_message_t *m, const jn_msg_loc_t *loc)
{
    if (decode_header_fast(m, loc))
        return 0;
    jn_decoder_t d;
    jn_field_t f;
    jn_message_header_t *h = &m->header;
    uint64_t v;
    int rc = enter_list(m, loc, "header", &d);
    for (int i = 0; rc == 0 && i < 5; i++) {
        rc = jn_decoder_next(&d, &f);
        if (rc <= 0)
            return rc < 0 ? fail(m, DECODE_ERROR, "header section: %s", jn_strerror(rc)) : 0;
        rc = 0;
        if (f.type == JN_TYPE_NULL)
            continue;
        switch (i) {
        case 0:
            rc = header_bool(m, &f, "durable", &h->durable);
            break;
        case 1:
            if ((rc = header_uint(m, &f, "priority", UINT8_MAX, &v)) == 0)
                h->priority = (uint8_t)v;
            break;
        case 2:
            if ((rc = header_uint(m, &f, "ttl", UINT32_MAX, &v)) == 0) {
                h->has_ttl = true;
                h->ttl = (uint32_t)v;
            }
            break;
        case 3:
            rc = header_bool(m, &f, "first-acquirer", &h->first_acquirer);
            break;
        default:
            if ((rc = header_uint(m, &f, "delivery-count", UINT32_MAX, &v)) == 0)
                h->delivery_count = (uint32_t)v;
            break;
        }
    }
    return rc;
}

/* Properties (3.2.4): only `to` (field 2) and `reply-to` (field 4), which
 * must be strings or null. */
static int decode_properties(jn_message_t *m, const jn_msg_loc_t *loc)
{
    jn_value_t v[5];
    int n = list_fields_fast(loc, v, 5);
    if (n >= 0 && (n <= 2 || v[2].type == JN_TYPE_NULL || v[2].type == JN_TYPE_STRING) &&
        (n <= 4 || v[4].type == JN_TYPE_NULL || v[4].type == JN_TYPE_STRING)) {
        if (n > 2 && v[2].type == JN_TYPE_STRING) {
            m->has_to = true;
            jn_value_payload(&v[2], &m->to);
        }
        if (n > 4 && v[4].type == JN_TYPE_STRING) {
            m->has_reply_to = true;
            jn_value_payload(&v[4], &m->reply_to);
        }
        return 0;
    }
    jn_decoder_t d;
    jn_value_t f; /* fields are stepped over; only to and reply-to get views */
    int rc = enter_list(m, loc, "properties", &d);
    for (int i = 0; rc == 0 && i <= 4; i++) {
        rc = jn_decoder_skip(&d, &f);
        if (rc <= 0)
            return rc < 0 ? fail(m, DECODE_ERROR, "properties section: %s", jn_strerror(rc)) : 0;
        rc = 0;
        if ((i != 2 && i != 4) || f.type == JN_TYPE_NULL)
            continue;
        if (f.type != JN_TYPE_STRING)
            return fail(m, DECODE_ERROR, "properties field %s is %s, not a string",
                        i == 2 ? "to" : "reply-to", jn_amqp_type_name(f.type));
        if (i == 2) {
            m->has_to = true;
            jn_value_payload(&f, &m->to);
        } else {
            m->has_reply_to = true;
            jn_value_payload(&f, &m->reply_to);
        }
    }
    return rc;
}

/* jn_message_user_id (junction/message.h): the properties section is
 * walked again up to its second field, only when asked (the policy's
 * user-id check, docs/design.md "The user-id check"); the parse of every
 * message does not decode user-id. */
int jn_message_user_id(const jn_message_t *m, jn_iter_t *out)
{
    if (jn_msg_parsed(m) < JN_DEPTH_PROPERTIES)
        return JN_AGAIN;
    if (!(m->present & (1u << JN_SEC_PROPERTIES)))
        return JN_ENOENT;
    const jn_msg_loc_t *loc = &m->sections[JN_SEC_PROPERTIES];
    jn_value_t v;
    /* Fast: a section inside one buffer (the common case) is peeked at in
     * place; anything the peek leaves goes to the decoder below. */
    if (loc->offset + loc->length <= jn_buffer_size(loc->buffer)) {
        const uint8_t *p = loc->buffer->data + loc->offset;
        jn_value_t list;
        if (jn_decode_peek(p, loc->length, 0, &list) && list.type == JN_TYPE_LIST) {
            if (list.count < 2)
                return JN_ENOENT; /* the list ends before user-id */
            const uint8_t *q = list.data, *end = list.data + list.size;
            size_t n = jn_decode_peek(q, (size_t)(end - q), 1, &v);
            if (n)
                n = jn_decode_peek(q + n, (size_t)(end - q - n), 1, &v);
            if (n) {
                v.buffer = loc->buffer;
                goto found;
            }
        }
    }
    jn_iter_t it;
    jn_decoder_t d, fields;
    loc_iter(loc, &it);
    jn_decoder_init(&d, &it, true);
    if (jn_decoder_skip(&d, &v) != 1 || jn_decoder_enter_value(&d, &v, &fields) < 0)
        return JN_EINVAL;
    for (int i = 0; i <= 1; i++) {
        int rc = jn_decoder_skip(&fields, &v);
        if (rc < 0)
            return JN_EINVAL;
        if (rc == 0)
            return JN_ENOENT; /* the list ends before user-id */
    }
found:
    if (v.type == JN_TYPE_NULL)
        return JN_ENOENT;
    if (v.type != JN_TYPE_BINARY && v.type != JN_TYPE_STRING)
        return JN_EINVAL;
    jn_value_payload(&v, out);
    return 0;
}

int jn_msg_decode_annotations(jn_message_t *m, const jn_msg_loc_t *loc)
{
    jn_iter_t it;
    const char *why = NULL;
    loc_iter(loc, &it);
    int rc = jn_ra_parse(&it, m->honour_router_keys, &m->ra, &why);
    if (rc == JN_EINVAL)
        return fail(m, INVALID_FIELD, "%s", why ? why : "router annotation of the wrong type");
    if (rc != 0)
        return fail(m, DECODE_ERROR, "message-annotations section: %s",
                    why ? why : jn_strerror(rc));
    return 0;
}

/* --- the steps --------------------------------------------------------- */

/* Take the section whose head is h: decode it if routing needs it, record
 * where it is, and step past it. JN_AGAIN when a section before the body
 * is not all in yet. */
static int take_section(jn_message_t *m, const sec_head_t *h)
{
    if (h->kind < KIND_BODY && h->end > jn_message_length(m))
        return JN_AGAIN;
    jn_msg_loc_t loc;
    loc_at(m, h, &loc);
    int rc = 0;
    if (h->kind == KIND_HEADER)
        rc = decode_header(m, &loc);
    else if (h->kind == KIND_MESSAGE_ANNOTATIONS)
        rc = jn_msg_decode_annotations(m, &loc);
    else if (h->kind == KIND_PROPERTIES)
        rc = decode_properties(m, &loc);
    if (rc != 0)
        return rc;
    if (h->kind == KIND_BODY && (m->present & (1u << JN_SEC_BODY)))
        m->sections[JN_SEC_BODY].length = h->end - m->sections[JN_SEC_BODY].start;
    else
        m->sections[h->kind] = loc;
    m->present |= (uint8_t)(1u << h->kind);
    m->last_kind = (int8_t)h->kind;
    m->pos = h->end;
    jn_msg_raise_depth(m, h->kind < KIND_BODY ? h->kind + 1 : JN_DEPTH_BODY);
    return 0;
}

/* More octets are needed: JN_AGAIN, or malformed when none will come. */
static int need_more(jn_message_t *m, bool complete)
{
    if (complete)
        return fail(m, DECODE_ERROR, "the message ends inside the section at octet %zu", m->pos);
    if (jn_message_is_aborted(m))
        return fail(m, DECODE_ERROR, "the sender aborted the delivery");
    return JN_AGAIN;
}

/* The general way's steps, from where the one-buffer way stopped. Out of
 * line, so that a parse the one-buffer way finishes does not pay for its
 * frame. */
__attribute__((noinline)) static int parse_steps(jn_message_t *m, jn_message_depth_t depth)
{
    for (;;) {
        if (atomic_load_explicit(&m->parsed, memory_order_relaxed) >= (int)depth)
            return 0;
        bool complete = jn_message_is_complete(m);
        size_t length = jn_message_length(m);
        if (complete && m->pos >= length) {
            if (m->pos > length)
                return fail(m, DECODE_ERROR,
                            "the message ends %zu octets before the end of its last section",
                            m->pos - length);
            jn_msg_raise_depth(m, JN_DEPTH_ALL);
            continue;
        }
        sec_head_t h;
        int rc = read_head(m, &h);
        if (rc == JN_AGAIN)
            return need_more(m, complete);
        if (rc != 0)
            return rc;
        if (m->last_kind >= 0 &&
            (h.kind < m->last_kind || (h.kind == m->last_kind && h.kind != KIND_BODY)))
            return fail(m, DECODE_ERROR, "%s section at octet %zu comes after a %s section",
                        sections[h.type].name, h.start, kind_name[m->last_kind]);
        /* every section before this one is now known to be absent */
        jn_msg_raise_depth(m, h.kind);
        if (atomic_load_explicit(&m->parsed, memory_order_relaxed) >= (int)depth)
            return 0;
        rc = take_section(m, &h);
        if (rc == JN_AGAIN)
            return need_more(m, complete);
        if (rc != 0)
            return rc;
    }
}

int jn_message_parse(jn_message_t *m, jn_message_depth_t depth)
{
    if (m->malformed)
        return JN_EPROTO;
    if (atomic_load_explicit(&m->parsed, memory_order_relaxed) >= (int)depth)
        return 0;
    int fast = jn_msg_parse_fast(m, (int)depth);
    if (fast <= 0)
        return fast; /* depth reached, or malformed */
    return parse_steps(m, depth);
}
