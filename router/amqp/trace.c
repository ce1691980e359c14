/*
 * trace.c — the protocol trace of a stream (junction/amqp_trace.h): a
 * tracer per direction finds headers and frames in the octets as they pass
 * (holding a partial one until it is whole), and each is rendered as one
 * line in 1.19's PROTOCOL trace form, the performative's fields named from the
 * engine's own tables (types.c). Only a connection whose trace is on runs
 * any of this.
 */
#include "amqp_private.h"

#include <junction/amqp_frame.h>
#include <junction/amqp_trace.h>
#include <junction/decoder.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- rendering ----------------------------------------------------------- */

#define TRUNCATED " ... (truncated)"

/* A line being written; once full it takes nothing more. */
typedef struct line {
    char *b;
    size_t cap, n; /* cap includes the terminator */
    bool full;
} line_t;

JN_PRINTF(2, 3) static void add(line_t *l, const char *fmt, ...)
{
    if (l->full)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(l->b + l->n, l->cap - l->n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= l->cap - l->n) {
        l->n = l->cap - 1;
        l->full = true;
        return;
    }
    l->n += (size_t)k;
}

/* The octets of it, printable ASCII as it is and others as \xNN. */
static void add_quoted(line_t *l, const jn_iter_t *it)
{
    jn_iter_t c = *it;
    int o;
    while (!l->full && (o = jn_iter_octet(&c)) >= 0) {
        if (o >= 0x20 && o < 0x7f)
            add(l, "%c", o);
        else
            add(l, "\\x%02x", o);
    }
}

/* A symbol that is a plain word goes unquoted (:ANONYMOUS-RELAY). */
static bool plain_word(const jn_iter_t *it)
{
    jn_iter_t c = *it;
    int o;
    bool any = false;
    while ((o = jn_iter_octet(&c)) >= 0) {
        if (!((o >= 'a' && o <= 'z') || (o >= 'A' && o <= 'Z') || (o >= '0' && o <= '9') ||
              o == '-' || o == '_'))
            return false;
        any = true;
    }
    return any;
}

static void add_value(line_t *l, const jn_decoder_t *d, const jn_field_t *f, unsigned depth);

/* The elements of compound f: for a map k=v, for a described list of a
 * known type name=value without the nulls (names from t). */
static void add_elements(line_t *l, const jn_decoder_t *d, const jn_field_t *f,
                         const jn_amqp_tdesc_t *t, unsigned depth)
{
    jn_decoder_t child;
    if (jn_decoder_enter(d, f, &child) != 0) {
        add(l, "?");
        return;
    }
    jn_field_t e;
    bool first = true;
    for (unsigned i = 0; !l->full && jn_decoder_next(&child, &e) == 1; i++) {
        if (t && e.type == JN_TYPE_NULL && !e.described)
            continue;
        bool value_of_map = f->type == JN_TYPE_MAP && i % 2 == 1;
        if (!first && !value_of_map)
            add(l, ", ");
        first = false;
        if (value_of_map)
            add(l, "=");
        else if (t && i < t->count)
            add(l, "%s=", t->fields[i].name);
        add_value(l, &child, &e, depth + 1);
    }
}

static void add_described(line_t *l, const jn_decoder_t *d, const jn_field_t *f, unsigned depth)
{
    const jn_amqp_tdesc_t *t = NULL;
    if (f->descriptor_is_symbol) {
        add(l, "@:");
        add_quoted(l, &f->descriptor_symbol);
    } else {
        t = jn_amqp_tdesc_by_code(f->descriptor_code);
        if (t)
            add(l, "@%s(%" PRIu64 ")", t->name, f->descriptor_code);
        else
            add(l, "@0x%" PRIx64, f->descriptor_code);
    }
    add(l, " ");
    jn_field_t plain = *f;
    plain.described = false;
    if (t && f->type == JN_TYPE_LIST) {
        add(l, "[");
        add_elements(l, d, f, t, depth);
        add(l, "]");
        return;
    }
    add_value(l, d, &plain, depth);
}

static void add_scalar(line_t *l, const jn_field_t *f)
{
    switch (f->type) {
    case JN_TYPE_NULL:
        add(l, "null");
        return;
    case JN_TYPE_BOOLEAN:
        add(l, f->value.b ? "true" : "false");
        return;
    case JN_TYPE_UBYTE:
    case JN_TYPE_USHORT:
    case JN_TYPE_UINT:
    case JN_TYPE_ULONG:
        add(l, "0x%" PRIx64, f->value.u);
        return;
    case JN_TYPE_BYTE:
    case JN_TYPE_SHORT:
    case JN_TYPE_INT:
    case JN_TYPE_LONG:
    case JN_TYPE_TIMESTAMP:
        add(l, "%" PRId64, f->value.i);
        return;
    case JN_TYPE_FLOAT:
        add(l, "%g", (double)f->value.f);
        return;
    case JN_TYPE_DOUBLE:
        add(l, "%g", f->value.d);
        return;
    case JN_TYPE_CHAR:
        add(l, "U+%04" PRIx64, f->value.u);
        return;
    default:
        break;
    }
    /* decimals and uuid: their octets */
    size_t n = f->type == JN_TYPE_DECIMAL32 ? 4 : f->type == JN_TYPE_DECIMAL64 ? 8 : 16;
    add(l, "%s", f->type == JN_TYPE_UUID ? "UUID(" : "D(");
    for (size_t i = 0; i < n; i++)
        add(l, "%02x", f->value.bytes[i]);
    add(l, ")");
}

static void add_value(line_t *l, const jn_decoder_t *d, const jn_field_t *f, unsigned depth)
{
    if (depth > JN_DECODE_MAX_DEPTH) {
        add(l, "...");
        return;
    }
    if (f->described) {
        add_described(l, d, f, depth);
        return;
    }
    switch (f->type) {
    case JN_TYPE_STRING:
    case JN_TYPE_BINARY:
        add(l, f->type == JN_TYPE_BINARY ? "b\"" : "\"");
        add_quoted(l, &f->payload);
        add(l, "\"");
        return;
    case JN_TYPE_SYMBOL:
        if (plain_word(&f->payload)) {
            add(l, ":");
            add_quoted(l, &f->payload);
        } else {
            add(l, ":\"");
            add_quoted(l, &f->payload);
            add(l, "\"");
        }
        return;
    case JN_TYPE_LIST:
    case JN_TYPE_MAP:
    case JN_TYPE_ARRAY: {
        bool map = f->type == JN_TYPE_MAP;
        if (f->type == JN_TYPE_ARRAY) {
            jn_field_t probe = {.type = JN_TYPE_NULL};
            jn_decoder_t child;
            if (jn_decoder_enter(d, f, &child) == 0 && jn_decoder_next(&child, &probe) == 1)
                add(l, "@<%s>", jn_amqp_type_name(probe.type));
        }
        add(l, map ? "{" : "[");
        add_elements(l, d, f, NULL, depth);
        add(l, map ? "}" : "]");
        return;
    }
    default:
        add_scalar(l, f);
        return;
    }
}

size_t jn_amqp_trace_frame(char *out, size_t cap, bool outgoing, uint16_t channel,
                           const uint8_t *body, size_t size)
{
    line_t l = {.b = out, .cap = cap};
    out[0] = '\0';
    const char *arrow = outgoing ? "->" : "<-";
    if (size == 0) {
        add(&l, "%u %s (EMPTY FRAME)", channel, arrow);
        return l.n;
    }
    add(&l, "%u %s ", channel, arrow);
    jn_iter_t it;
    jn_iter_init_bytes(&it, body, size, JN_VIEW_RAW);
    jn_decoder_t d;
    jn_decoder_init(&d, &it, true);
    jn_field_t f;
    if (jn_decoder_next(&d, &f) != 1) {
        add(&l, "(undecodable frame body, %zu octets)", size);
    } else {
        add_value(&l, &d, &f, 0);
        size_t rest = jn_iter_length(&d.it);
        if (rest > 0) {
            add(&l, " (%zu) ", rest);
            add_quoted(&l, &d.it);
        }
    }
    if (l.full) {
        size_t k = sizeof TRUNCATED; /* with its terminator */
        memcpy(out + cap - k, TRUNCATED, k);
        l.n = cap - 1;
    }
    return l.n;
}

/* ---- the stream ---------------------------------------------------------- */

void jn_amqp_tracer_init(jn_amqp_tracer_t *t, bool outgoing)
{
    memset(t, 0, sizeof *t);
    t->outgoing = outgoing;
}

void jn_amqp_tracer_start(jn_amqp_tracer_t *t)
{
    t->on = true;
    t->len = 0;
    t->skip = 0;
}

void jn_amqp_tracer_stop(jn_amqp_tracer_t *t)
{
    t->on = false;
    t->len = 0;
    t->skip = 0;
}

void jn_amqp_tracer_free(jn_amqp_tracer_t *t)
{
    free(t->buf);
    jn_amqp_tracer_init(t, t->outgoing);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Render what is whole at the front of t->buf and drop it; false when the
 * front needs more octets (or the tracer stopped). */
static bool one(jn_amqp_tracer_t *t, jn_amqp_trace_sink_t *sink, void *ctx)
{
    const char *arrow = t->outgoing ? "->" : "<-";
    char line[JN_AMQP_TRACE_LINE];
    if (t->len < 4)
        return false;
    size_t take;
    if (memcmp(t->buf, "AMQP", 4) == 0) { /* a header (no frame is that large) */
        if (t->len < JN_AMQP_HEADER_SIZE)
            return false;
        uint8_t id = t->buf[4];
        snprintf(line, sizeof line, "  %s %s", arrow,
                 id == JN_AMQP_PROTO_SASL  ? "SASL"
                 : id == JN_AMQP_PROTO_TLS ? "TLS"
                                           : "AMQP");
        take = JN_AMQP_HEADER_SIZE;
    } else {
        uint32_t size = be32(t->buf);
        if (size < JN_AMQP_FRAME_HEADER_SIZE ||
            (t->len >= 5 && (t->buf[4] < 2 || (size_t)t->buf[4] * 4 > size))) {
            snprintf(line, sizeof line, "  %s (octets that are not AMQP frames: trace stopped)",
                     arrow);
            sink(ctx, line);
            jn_amqp_tracer_stop(t);
            return false;
        }
        if (size > JN_AMQP_TRACE_FRAME_MAX) {
            snprintf(line, sizeof line, "  %s (a frame of %" PRIu32 " octets, not traced)", arrow,
                     size);
            sink(ctx, line);
            take = t->len < size ? t->len : size;
            t->skip = size - take; /* passed over as it comes (jn_amqp_tracer_feed) */
            memmove(t->buf, t->buf + take, t->len - take);
            t->len -= take;
            return t->skip == 0;
        }
        if (t->len < size)
            return false;
        size_t doff = (size_t)t->buf[4] * 4;
        uint16_t channel = (uint16_t)(t->buf[6] << 8 | t->buf[7]);
        jn_amqp_trace_frame(line, sizeof line, t->outgoing, channel, t->buf + doff, size - doff);
        take = size;
    }
    sink(ctx, line);
    memmove(t->buf, t->buf + take, t->len - take);
    t->len -= take;
    return true;
}

/* Append len octets at p to t->buf; false out of memory (t stops). */
static bool hold(jn_amqp_tracer_t *t, const uint8_t *p, size_t len)
{
    if (t->len + len > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + len)
            cap *= 2;
        uint8_t *b = realloc(t->buf, cap);
        if (!b) {
            jn_amqp_tracer_stop(t);
            return false;
        }
        t->buf = b;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, p, len);
    t->len += len;
    return true;
}

void jn_amqp_tracer_feed(jn_amqp_tracer_t *t, const struct iovec *iov, int n, size_t len,
                         jn_amqp_trace_sink_t *sink, void *ctx)
{
    for (int i = 0; i < n && len > 0 && t->on; i++) {
        const uint8_t *p = iov[i].iov_base;
        size_t k = iov[i].iov_len < len ? iov[i].iov_len : len;
        len -= k;
        while (k > 0 && t->on) {
            if (t->skip) { /* the rest of an untraced frame */
                size_t s = k < t->skip ? k : (size_t)t->skip;
                t->skip -= s;
                p += s;
                k -= s;
                continue;
            }
            /* at most one frame's worth more than held, so that a frame
             * too large to trace is not held whole */
            size_t chunk = k < JN_AMQP_TRACE_FRAME_MAX ? k : JN_AMQP_TRACE_FRAME_MAX;
            if (!hold(t, p, chunk))
                return;
            p += chunk;
            k -= chunk;
            while (one(t, sink, ctx))
                ;
        }
    }
}
