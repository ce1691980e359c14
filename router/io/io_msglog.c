/*
 * io_msglog.c — message logging (1.19's messageLoggingComponents of a
 * listener or connector): a MESSAGE line at info level for each message
 * received or sent on such a connection, "[C<id>] Received Message{...}"
 * or "Sent Message{...}", with the properties and application properties
 * the components name, each as 1.19 writes it (strings "...", binary
 * b"...", symbols :"...", timestamps "YYYY-MM-DD HH:MM:SS.mmm", lists
 * [a, b], maps {k=v}).
 *
 * Cost: none for a message on a connection that logs nothing (one load
 * and branch in io_own_rx.c and io_own_link.c). While some endpoint logs
 * messages, each message received is parsed to its application
 * properties by the loop that receives it, before any other thread can
 * see it (jn_message_parse's rule), so a sender on another loop only
 * reads sections located already.
 */
#include "io_private.h"

#include <junction/decoder.h>
#include <junction/message.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

atomic_bool jn_io_msg_log_any_;

#define N_FIELDS           JN_MESSAGE_PROPERTY_COUNT
#define APP_PROPERTIES_BIT JN_MESSAGE_LOG_APP_PROPERTIES

/* A growing line in a fixed buffer (cut when full). */
typedef struct line {
    char *p;
    size_t cap, n;
} line_t;

static void put(line_t *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(line_t *l, const char *fmt, ...)
{
    if (l->n >= l->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(l->p + l->n, l->cap - l->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        l->n = l->n + (size_t)k < l->cap ? l->n + (size_t)k : l->cap;
}

static void put_text(line_t *l, const char *prefix, jn_iter_t it, uint32_t size)
{
    put(l, "%s\"", prefix);
    for (uint32_t i = 0; i < size && l->n + 5 < l->cap; i++) {
        int c = jn_iter_octet(&it);
        if (c < 0)
            break;
        if (c == '"' || c == '\\')
            put(l, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            put(l, "\\x%02x", c);
        else
            put(l, "%c", c);
    }
    put(l, "\"");
}

static void put_value(line_t *l, const jn_decoder_t *d, const jn_field_t *f, int depth);

static void put_compound(line_t *l, const jn_decoder_t *d, const jn_field_t *f, int depth)
{
    jn_decoder_t in;
    jn_field_t k, v;
    bool map = f->type == JN_TYPE_MAP;
    if (depth > 8 || jn_decoder_enter(d, f, &in) != 0) {
        put(l, "...");
        return;
    }
    put(l, map ? "{" : "[");
    for (bool first = true; jn_decoder_next(&in, &k) == 1; first = false) {
        if (!first)
            put(l, ", ");
        put_value(l, &in, &k, depth + 1);
        if (map && jn_decoder_next(&in, &v) == 1) {
            put(l, "=");
            put_value(l, &in, &v, depth + 1);
        }
    }
    put(l, map ? "}" : "]");
}

static void put_value(line_t *l, const jn_decoder_t *d, const jn_field_t *f, int depth)
{
    struct tm tm;
    time_t secs;
    switch (f->type) {
    case JN_TYPE_NULL:
        put(l, "null");
        return;
    case JN_TYPE_BOOLEAN:
        put(l, f->value.b ? "true" : "false");
        return;
    case JN_TYPE_UBYTE:
    case JN_TYPE_USHORT:
    case JN_TYPE_UINT:
    case JN_TYPE_ULONG:
    case JN_TYPE_CHAR:
        put(l, "%" PRIu64, f->value.u);
        return;
    case JN_TYPE_BYTE:
    case JN_TYPE_SHORT:
    case JN_TYPE_INT:
    case JN_TYPE_LONG:
        put(l, "%" PRId64, f->value.i);
        return;
    case JN_TYPE_FLOAT:
        put(l, "%g", (double)f->value.f);
        return;
    case JN_TYPE_DOUBLE:
        put(l, "%g", f->value.d);
        return;
    case JN_TYPE_TIMESTAMP:
        secs = (time_t)(f->value.i / 1000);
        gmtime_r(&secs, &tm);
        put(l, "\"%04d-%02d-%02d %02d:%02d:%02d.%03d\"", tm.tm_year + 1900, tm.tm_mon + 1,
            tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(f->value.i % 1000));
        return;
    case JN_TYPE_UUID:
        put(l, "UUID(");
        for (int i = 0; i < 16; i++)
            put(l, "%02x%s", f->value.bytes[i], i == 3 || i == 5 || i == 7 || i == 9 ? "-" : "");
        put(l, ")");
        return;
    case JN_TYPE_STRING:
        put_text(l, "", f->payload, f->size);
        return;
    case JN_TYPE_SYMBOL:
        put_text(l, ":", f->payload, f->size);
        return;
    case JN_TYPE_BINARY:
        put_text(l, "b", f->payload, f->size);
        return;
    case JN_TYPE_LIST:
    case JN_TYPE_MAP:
    case JN_TYPE_ARRAY:
        put_compound(l, d, f, depth);
        return;
    default:
        put(l, "?");
        return;
    }
}

/* The value of a described section (its list or map), entered. */
static bool section_value(const jn_message_t *m, jn_section_t s, jn_decoder_t *outer, jn_field_t *f)
{
    jn_iter_t raw;
    if (jn_message_section(m, s, &raw) != 0)
        return false;
    jn_decoder_init(outer, &raw, true);
    return jn_decoder_next(outer, f) == 1;
}

void jn_io_msg_log_IO(const jn_io_conn_t *conn, const char *what, const jn_message_t *m)
{
    JN_ASSERT_IO(conn);
    if (!jn_log_enabled(JN_LOG_MOD_MESSAGE, JN_LOG_INFO))
        return;
    char buf[JN_LOG_TEXT_MAX];
    line_t l = {buf, sizeof buf, 0};
    put(&l, "[C%" PRIu64 "] %s Message{", conn->id, what);
    bool first = true;
    jn_decoder_t outer, in;
    jn_field_t f;
    if (section_value(m, JN_SEC_PROPERTIES, &outer, &f) && jn_decoder_enter(&outer, &f, &in) == 0) {
        jn_field_t v;
        for (size_t i = 0; i < N_FIELDS && jn_decoder_next(&in, &v) == 1; i++) {
            if (!(conn->msg_log & (1u << i)) || v.type == JN_TYPE_NULL)
                continue;
            put(&l, "%s%s=", first ? "" : ", ", jn_message_property_name(i));
            put_value(&l, &in, &v, 0);
            first = false;
        }
    }
    if ((conn->msg_log & APP_PROPERTIES_BIT) &&
        section_value(m, JN_SEC_APPLICATION_PROPERTIES, &outer, &f)) {
        put(&l, "%sapp-properties=", first ? "" : ", ");
        put_value(&l, &outer, &f, 0);
    }
    put(&l, "}");
    jn_log_write(JN_LOG_MOD_MESSAGE, JN_LOG_INFO, __FILE__, __LINE__, "%s", buf);
}

int jn_io_msg_log_received_IO(const jn_io_conn_t *conn, jn_message_t *m, bool all_in)
{
    JN_ASSERT_IO(conn);
    /* the writer's thread, before the delivery is handed over: locate what
     * a sender's log reads */
    int rc = jn_message_parse(m, JN_DEPTH_APPLICATION_PROPERTIES);
    if (rc == JN_AGAIN && !all_in)
        return rc; /* routed when they are in */
    if (rc == 0 && conn->msg_log)
        jn_io_msg_log_IO(conn, "Received", m);
    return 0;
}
