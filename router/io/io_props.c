/*
 * io_props.c — a peer's open properties, rendered for management.
 *
 * The `properties` attribute of a `connection` entity is a map that the
 * agent sends as it is and that qdmanage-style tools print as JSON. A peer
 * may put any AMQP type in its open properties (binary or integer keys,
 * UUIDs, timestamps, described values, nested lists and maps). Here the
 * map is copied once, when the connection opens, into a map that JSON can
 * carry: keys become strings, and values keep their type when JSON has
 * one (null, boolean, integers, floats, strings, lists, maps) and become
 * their text otherwise (e.g. b"\x01" for a binary, a UUID's text). The
 * result is encoded AMQP, handed to the core with the connection.
 * Not on the hot path: once per connection.
 */
#include "io_private.h"

#include <proton/codec.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RENDER_MAX_DEPTH 16

/* A bounded text buffer; past its end the text is cut with "...". */
typedef struct text {
    char b[512];
    size_t n;
} text_t;

JN_PRINTF(2, 3) static void text_add(text_t *t, const char *fmt, ...)
{
    if (t->n >= sizeof t->b - 4)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->b + t->n, sizeof t->b - 4 - t->n, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    t->n += (size_t)k;
    if (t->n >= sizeof t->b - 4) {
        t->n = sizeof t->b - 4;
        memcpy(t->b + t->n, "...", 3);
        t->n += 3;
    }
}

static void text_bytes(text_t *t, pn_bytes_t b, bool binary)
{
    text_add(t, binary ? "b\"" : "\"");
    for (size_t i = 0; i < b.size; i++) {
        unsigned char c = (unsigned char)b.start[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            text_add(t, "%c", c);
        else
            text_add(t, "\\x%02x", c);
    }
    text_add(t, "\"");
}

/* The text of the value at src's position (src keeps its position; a
 * compound is entered and left). */
static void text_of(text_t *t, pn_data_t *src, int depth)
{
    switch (pn_data_type(src)) {
    case PN_NULL: text_add(t, "null"); return;
    case PN_BOOL: text_add(t, pn_data_get_bool(src) ? "true" : "false"); return;
    case PN_UBYTE: text_add(t, "%u", pn_data_get_ubyte(src)); return;
    case PN_USHORT: text_add(t, "%u", pn_data_get_ushort(src)); return;
    case PN_UINT: text_add(t, "%u", pn_data_get_uint(src)); return;
    case PN_ULONG: text_add(t, "%llu", (unsigned long long)pn_data_get_ulong(src)); return;
    case PN_BYTE: text_add(t, "%d", pn_data_get_byte(src)); return;
    case PN_SHORT: text_add(t, "%d", pn_data_get_short(src)); return;
    case PN_INT: text_add(t, "%d", pn_data_get_int(src)); return;
    case PN_LONG: text_add(t, "%lld", (long long)pn_data_get_long(src)); return;
    case PN_TIMESTAMP: text_add(t, "%lld", (long long)pn_data_get_timestamp(src)); return;
    case PN_FLOAT: text_add(t, "%g", (double)pn_data_get_float(src)); return;
    case PN_DOUBLE: text_add(t, "%g", pn_data_get_double(src)); return;
    case PN_CHAR: {
        uint32_t c = (uint32_t)pn_data_get_char(src); /* a code point, as UTF-8 */
        if (c < 0x80)
            text_add(t, "%c", (char)c);
        else if (c < 0x800)
            text_add(t, "%c%c", (char)(0xc0 | c >> 6), (char)(0x80 | (c & 0x3f)));
        else if (c < 0x10000 && (c < 0xd800 || c > 0xdfff))
            text_add(t, "%c%c%c", (char)(0xe0 | c >> 12), (char)(0x80 | (c >> 6 & 0x3f)),
                     (char)(0x80 | (c & 0x3f)));
        else if (c >= 0x10000 && c < 0x110000)
            text_add(t, "%c%c%c%c", (char)(0xf0 | c >> 18), (char)(0x80 | (c >> 12 & 0x3f)),
                     (char)(0x80 | (c >> 6 & 0x3f)), (char)(0x80 | (c & 0x3f)));
        else
            text_add(t, "U+%04X", (unsigned)c);
        return;
    }
    case PN_STRING: text_bytes(t, pn_data_get_string(src), false); return;
    case PN_SYMBOL: text_add(t, ":"), text_bytes(t, pn_data_get_symbol(src), false); return;
    case PN_BINARY: text_bytes(t, pn_data_get_binary(src), true); return;
    case PN_UUID: {
        pn_uuid_t u = pn_data_get_uuid(src);
        const unsigned char *b = (const unsigned char *)u.bytes;
        text_add(t, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                 b[14], b[15]);
        return;
    }
    case PN_DECIMAL32: text_add(t, "0x%08x", (unsigned)pn_data_get_decimal32(src)); return;
    case PN_DECIMAL64:
        text_add(t, "0x%016llx", (unsigned long long)pn_data_get_decimal64(src));
        return;
    case PN_DECIMAL128: {
        pn_decimal128_t d = pn_data_get_decimal128(src);
        text_add(t, "0x");
        for (int i = 0; i < 16; i++)
            text_add(t, "%02x", (unsigned char)d.bytes[i]);
        return;
    }
    case PN_DESCRIBED:
    case PN_LIST:
    case PN_ARRAY:
    case PN_MAP: {
        pn_type_t type = pn_data_type(src);
        if (depth >= RENDER_MAX_DEPTH) {
            text_add(t, "...");
            return;
        }
        const char *open = type == PN_DESCRIBED ? "@" : type == PN_MAP ? "{" : "[";
        const char *close = type == PN_DESCRIBED ? "" : type == PN_MAP ? "}" : "]";
        text_add(t, "%s", open);
        pn_data_enter(src);
        for (int i = 0; pn_data_next(src); i++) {
            if (i)
                text_add(t, type == PN_DESCRIBED ? " " : type == PN_MAP && i % 2 ? "=" : ", ");
            text_of(t, src, depth + 1);
        }
        pn_data_exit(src);
        text_add(t, "%s", close);
        return;
    }
    default: text_add(t, "?"); return;
    }
}

/* The text of the value at src's position, into dst as a string. */
static void put_text(pn_data_t *dst, pn_data_t *src)
{
    text_t t = {.n = 0};
    text_of(&t, src, 0);
    pn_data_put_string(dst, pn_bytes(t.n, t.b));
}

static void render_value(pn_data_t *dst, pn_data_t *src, int depth);

/* The elements of the compound at src's position (entered by the caller). */
static void render_elements(pn_data_t *dst, pn_data_t *src, int depth, bool keys)
{
    bool key = keys;
    while (pn_data_next(src)) {
        pn_type_t t = pn_data_type(src);
        if (key && t != PN_STRING && t != PN_SYMBOL)
            put_text(dst, src); /* an integer, binary... key: its text */
        else if (key)
            pn_data_put_string(dst, t == PN_STRING ? pn_data_get_string(src)
                                                   : pn_data_get_symbol(src));
        else
            render_value(dst, src, depth);
        key = keys && !key;
    }
}

static void render_value(pn_data_t *dst, pn_data_t *src, int depth)
{
    pn_type_t t = pn_data_type(src);
    switch (t) {
    case PN_NULL: pn_data_put_null(dst); return;
    case PN_BOOL: pn_data_put_bool(dst, pn_data_get_bool(src)); return;
    case PN_UBYTE: pn_data_put_ulong(dst, pn_data_get_ubyte(src)); return;
    case PN_USHORT: pn_data_put_ulong(dst, pn_data_get_ushort(src)); return;
    case PN_UINT: pn_data_put_ulong(dst, pn_data_get_uint(src)); return;
    case PN_ULONG: pn_data_put_ulong(dst, pn_data_get_ulong(src)); return;
    case PN_BYTE: pn_data_put_long(dst, pn_data_get_byte(src)); return;
    case PN_SHORT: pn_data_put_long(dst, pn_data_get_short(src)); return;
    case PN_INT: pn_data_put_long(dst, pn_data_get_int(src)); return;
    case PN_LONG: pn_data_put_long(dst, pn_data_get_long(src)); return;
    case PN_TIMESTAMP: pn_data_put_long(dst, pn_data_get_timestamp(src)); return;
    case PN_FLOAT: pn_data_put_double(dst, pn_data_get_float(src)); return;
    case PN_DOUBLE: pn_data_put_double(dst, pn_data_get_double(src)); return;
    case PN_STRING: pn_data_put_string(dst, pn_data_get_string(src)); return;
    case PN_SYMBOL: pn_data_put_string(dst, pn_data_get_symbol(src)); return;
    case PN_LIST:
    case PN_ARRAY:
    case PN_MAP:
        if (depth < RENDER_MAX_DEPTH) {
            if (t == PN_MAP)
                pn_data_put_map(dst);
            else
                pn_data_put_list(dst);
            pn_data_enter(dst);
            pn_data_enter(src);
            render_elements(dst, src, depth + 1, t == PN_MAP);
            pn_data_exit(src);
            pn_data_exit(dst);
            return;
        }
        break;
    default:
        break;
    }
    put_text(dst, src); /* binary, uuid, timestamp, char, decimals, described */
}

void jn_io_put_open_properties(pn_data_t *props, const uint8_t *raw, size_t len)
{
    pn_data_t *src = pn_data(16);
    if (!src)
        return;
    if (pn_data_decode(src, (const char *)raw, len) > 0) {
        pn_data_rewind(src);
        if (pn_data_next(src) && pn_data_type(src) == PN_MAP) {
            pn_data_enter(src);
            while (pn_data_next(src)) {
                pn_type_t t = pn_data_type(src);
                pn_bytes_t k = t == PN_STRING   ? pn_data_get_string(src)
                               : t == PN_SYMBOL ? pn_data_get_symbol(src)
                                                : pn_bytes(0, NULL);
                if (!pn_data_next(src))
                    break;
                if (!k.start)
                    continue; /* the config checks allow string keys only */
                pn_data_put_symbol(props, k);
                render_value(props, src, 1);
            }
        }
    }
    pn_data_free(src);
}

/* jn_io_render_properties_IO: the peer's open properties (props, at its
 * start; NULL or empty: none) rendered as above. *out (heap, owned by the
 * caller) and *len are set to the encoded map, or NULL/0 when there is
 * none, or nothing could be rendered (out of memory, not a map). The
 * connection's loop thread. */
void jn_io_render_properties_IO(pn_data_t *props, uint8_t **out, size_t *len)
{
    JN_ASSERT_SOME_IO();
    *out = NULL;
    *len = 0;
    if (!props || pn_data_size(props) == 0)
        return;
    pn_data_rewind(props);
    if (!pn_data_next(props) || pn_data_type(props) != PN_MAP)
        return;
    pn_data_t *dst = pn_data(16);
    if (!dst)
        return;
    pn_data_put_map(dst);
    pn_data_enter(dst);
    pn_data_enter(props);
    render_elements(dst, props, 1, true);
    pn_data_exit(props);
    pn_data_exit(dst);
    pn_data_rewind(props);
    jn_io_data_encode(dst, out, len);
    pn_data_free(dst);
}
