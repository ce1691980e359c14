/*
 * io_own_props.c — open properties on the own path (docs/engine.md, stage
 * 5), read and written with the message layer's decoder and encoder:
 *
 * - the peer's properties (AMQP 1.0 part 2, 2.7.1, open.properties: a map
 *   with symbol keys whose values may be of any AMQP type) rendered for
 *   management, where the connection entity's `properties` attribute is
 *   printed as JSON: keys become strings; null, booleans, integers,
 *   floats, strings, symbols, lists, arrays and maps keep their shape
 *   (unsigned integers as ulong, signed ones and timestamps as long,
 *   floats as double, symbols as strings, arrays as lists); anything JSON
 *   cannot carry (binary, uuid, char, decimals, described values, values
 *   nested deeper than RENDER_MAX_DEPTH) becomes its text, e.g. b"\x01";
 * - the properties of our own open: product and version as qdrouterd 1.19
 *   names them, qd.conn-id, on a router's connection
 *   qd.inter-router-cost and qd.annotations-version, a listener's
 *   failoverUrls as failover-server-list, and the endpoint's
 *   openProperties rendered as above.
 *
 * A peer's properties that do not decode as one well-formed value (the
 * decoder's checks, junction/decoder.h), or hold more than
 * JN_IO_OWN_PROPS_MAX_VALUES values, are treated as absent. The
 * results equal those of the proton codec that served this before
 * (tests/unit/test_io_owncodec.c compares them over a wide set of maps).
 *
 * Not on the hot path: once per connection. Any thread (the connection's
 * loop in practice); nothing here is shared.
 */
#include "io_own.h"

#include <junction/decoder.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Compounds nested deeper than this are rendered as their text, and texts
 * of compounds deeper than it as "...". */
#define RENDER_MAX_DEPTH 16

/* The most values one peer's properties may hold (a described value
 * counting three): the proton codec that read them before held no more,
 * and more are taken as absent (a few octets of zero-width array elements
 * would otherwise render as many octets of nulls). */
#define JN_IO_OWN_PROPS_MAX_VALUES 65535u

/* A bounded text; what does not fit ends in "...". */
typedef struct own_text {
    char b[512];
    size_t n;
} own_text_t;

JN_PRINTF(2, 3) static void text_add(own_text_t *t, const char *fmt, ...)
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
    if (t->n >= sizeof t->b - 4) { /* cut: the mark goes after the room's end */
        t->n = sizeof t->b - 4;
        memcpy(t->b + t->n, "...", 3);
        t->n += 3;
    }
}

/* The octets of a string, symbol or binary payload, quoted, printable
 * ASCII kept and every other octet as \xNN. */
static void text_quoted(own_text_t *t, const jn_iter_t *payload, bool binary)
{
    jn_iter_t it = *payload;
    text_add(t, binary ? "b\"" : "\"");
    for (int c = jn_iter_octet(&it); c != JN_ITER_END; c = jn_iter_octet(&it)) {
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            text_add(t, "%c", c);
        else
            text_add(t, "\\x%02x", (unsigned)c);
    }
    text_add(t, "\"");
}

/* A char (a Unicode code point) as UTF-8; one outside Unicode (a
 * surrogate, or above 0x10FFFF) as "U+" and at least four hex digits. */
static void text_char(own_text_t *t, uint32_t c)
{
    char u[4];
    size_t n = jn_utf8_put(u, c);
    if (n == 0)
        text_add(t, "U+%04X", (unsigned)c);
    for (size_t i = 0; i < n; i++) /* %c, as U+0000 is one octet too */
        text_add(t, "%c", u[i]);
}

/* The network-order octets of a uuid (as 8-4-4-4-12 hex) or a decimal (as
 * 0x and its hex). */
static void text_octets(own_text_t *t, const jn_field_t *f)
{
    const uint8_t *b = f->value.bytes;
    if (f->type == JN_TYPE_UUID) {
        text_add(t, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                 b[13], b[14], b[15]);
        return;
    }
    size_t n = f->type == JN_TYPE_DECIMAL32 ? 4 : f->type == JN_TYPE_DECIMAL64 ? 8 : 16;
    text_add(t, "0x");
    for (size_t i = 0; i < n; i++)
        text_add(t, "%02x", b[i]);
}

/* The text of a scalar f (not described). */
static void text_scalar(own_text_t *t, const jn_field_t *f)
{
    switch (f->type) {
    case JN_TYPE_NULL: text_add(t, "null"); return;
    case JN_TYPE_BOOLEAN: text_add(t, f->value.b ? "true" : "false"); return;
    case JN_TYPE_UBYTE:
    case JN_TYPE_USHORT:
    case JN_TYPE_UINT:
    case JN_TYPE_ULONG: text_add(t, "%llu", (unsigned long long)f->value.u); return;
    case JN_TYPE_BYTE:
    case JN_TYPE_SHORT:
    case JN_TYPE_INT:
    case JN_TYPE_LONG:
    case JN_TYPE_TIMESTAMP: text_add(t, "%lld", (long long)f->value.i); return;
    case JN_TYPE_FLOAT: text_add(t, "%g", (double)f->value.f); return;
    case JN_TYPE_DOUBLE: text_add(t, "%g", f->value.d); return;
    case JN_TYPE_CHAR: text_char(t, (uint32_t)f->value.u); return;
    case JN_TYPE_STRING: text_quoted(t, &f->payload, false); return;
    case JN_TYPE_SYMBOL:
        text_add(t, ":");
        text_quoted(t, &f->payload, false);
        return;
    case JN_TYPE_BINARY: text_quoted(t, &f->payload, true); return;
    case JN_TYPE_UUID:
    case JN_TYPE_DECIMAL32:
    case JN_TYPE_DECIMAL64:
    case JN_TYPE_DECIMAL128: text_octets(t, f); return;
    default: text_add(t, "?"); return;
    }
}

/* A described value's descriptor (a ulong code or a symbol, 1.5). */
static void text_descriptor(own_text_t *t, bool symbol, uint64_t code, const jn_iter_t *sym)
{
    if (symbol) {
        text_add(t, ":");
        text_quoted(t, sym, false);
    } else {
        text_add(t, "%llu", (unsigned long long)code);
    }
}

static void text_of(own_text_t *t, const jn_decoder_t *d, const jn_field_t *f, int depth,
                    bool bare);

/* The elements of compound f as "{k=v, k=v}" or "[a, b]"; an array's
 * element descriptor first, as one more element. */
static void text_compound(own_text_t *t, const jn_decoder_t *d, const jn_field_t *f, int depth)
{
    bool map = f->type == JN_TYPE_MAP;
    text_add(t, "%s", map ? "{" : "[");
    jn_decoder_t in;
    jn_field_t e;
    int i = 0;
    if (jn_decoder_enter(d, f, &in) == 0) {
        if (f->type == JN_TYPE_ARRAY && in.elem_described) {
            text_descriptor(t, in.elem_descriptor_is_symbol, in.elem_descriptor_code,
                            &in.elem_descriptor_symbol);
            i++;
        }
        for (; jn_decoder_next(&in, &e) == 1; i++) {
            if (i)
                text_add(t, map && i % 2 ? "=" : ", ");
            text_of(t, &in, &e, depth + 1, in.in_array);
        }
    }
    text_add(t, "%s", map ? "}" : "]");
}

/* The text of f (decoded by d) at nesting depth. bare: f is an array's
 * element, whose shared descriptor was shown with the array. */
static void text_of(own_text_t *t, const jn_decoder_t *d, const jn_field_t *f, int depth,
                    bool bare)
{
    bool described = f->described && !bare;
    bool compound = f->type == JN_TYPE_LIST || f->type == JN_TYPE_MAP || f->type == JN_TYPE_ARRAY;
    if ((described || compound) && depth >= RENDER_MAX_DEPTH) {
        text_add(t, "...");
        return;
    }
    if (described) { /* "@descriptor value", both one level down */
        jn_iter_t it = f->encoded;
        jn_decoder_t in;
        jn_field_t x;
        (void)jn_iter_octet(&it); /* the descriptor constructor, 0x00 */
        jn_decoder_init(&in, &it, true);
        text_add(t, "@");
        /* the value read again from its encoding: a value described more
         * than once shows each descriptor, as the field keeps only the
         * first */
        for (int i = 0; i < 2 && jn_decoder_next(&in, &x) == 1; i++) {
            text_add(t, i ? " " : "");
            text_of(t, &in, &x, depth + 1, false);
        }
        return;
    }
    if (compound)
        text_compound(t, d, f, depth);
    else
        text_scalar(t, f);
}

/* f's text, as a string, into e. */
static void put_text(jn_encoder_t *e, const jn_decoder_t *d, const jn_field_t *f, bool bare)
{
    own_text_t t = {.n = 0};
    text_of(&t, d, f, 0, bare);
    jn_enc_string(e, t.b, t.n);
}

/* An array's element descriptor as its rendered element: a code as ulong,
 * a symbol as string. */
static void put_descriptor(jn_encoder_t *e, const jn_decoder_t *in)
{
    if (in->elem_descriptor_is_symbol)
        jn_enc_string_iter(e, &in->elem_descriptor_symbol);
    else
        jn_enc_ulong(e, in->elem_descriptor_code);
}

static void render_value(jn_encoder_t *e, const jn_decoder_t *d, const jn_field_t *f, int depth,
                         bool bare);

/* The elements of compound f rendered into e's open compound; a map's keys
 * (keys true) as strings: a string or symbol's octets, another key's
 * text. */
static void render_elements(jn_encoder_t *e, const jn_decoder_t *d, const jn_field_t *f,
                            int depth, bool keys)
{
    jn_decoder_t in;
    jn_field_t x;
    if (jn_decoder_enter(d, f, &in) != 0)
        return;
    if (f->type == JN_TYPE_ARRAY && in.elem_described)
        put_descriptor(e, &in);
    for (bool key = keys; jn_decoder_next(&in, &x) == 1; key = keys && !key) {
        bool plain = !x.described || in.in_array;
        if (key && plain && (x.type == JN_TYPE_STRING || x.type == JN_TYPE_SYMBOL))
            jn_enc_string_iter(e, &x.payload);
        else if (key)
            put_text(e, &in, &x, in.in_array); /* an integer, binary... key: its text */
        else
            render_value(e, &in, &x, depth, in.in_array);
    }
}

/* f (decoded by d; bare: an array's element) as JSON can carry it, into e
 * (see the file's comment). */
static void render_value(jn_encoder_t *e, const jn_decoder_t *d, const jn_field_t *f, int depth,
                         bool bare)
{
    if (f->described && !bare) {
        put_text(e, d, f, bare);
        return;
    }
    switch (f->type) {
    case JN_TYPE_NULL: jn_enc_null(e); return;
    case JN_TYPE_BOOLEAN: jn_enc_bool(e, f->value.b); return;
    case JN_TYPE_UBYTE:
    case JN_TYPE_USHORT:
    case JN_TYPE_UINT:
    case JN_TYPE_ULONG: jn_enc_ulong(e, f->value.u); return;
    case JN_TYPE_BYTE:
    case JN_TYPE_SHORT:
    case JN_TYPE_INT:
    case JN_TYPE_LONG:
    case JN_TYPE_TIMESTAMP: jn_enc_long(e, f->value.i); return;
    case JN_TYPE_FLOAT: jn_enc_double(e, (double)f->value.f); return;
    case JN_TYPE_DOUBLE: jn_enc_double(e, f->value.d); return;
    case JN_TYPE_STRING:
    case JN_TYPE_SYMBOL: jn_enc_string_iter(e, &f->payload); return;
    case JN_TYPE_LIST:
    case JN_TYPE_ARRAY:
    case JN_TYPE_MAP:
        if (depth >= RENDER_MAX_DEPTH)
            break;
        if (f->type == JN_TYPE_MAP)
            jn_enc_map_begin(e);
        else
            jn_enc_list_begin(e);
        render_elements(e, d, f, depth + 1, f->type == JN_TYPE_MAP);
        if (f->type == JN_TYPE_MAP)
            jn_enc_map_end(e);
        else
            jn_enc_list_end(e);
        return;
    default: break;
    }
    put_text(e, d, f, bare); /* binary, uuid, char, decimals, too deep */
}

/* The values f stands for as the proton codec held them: a described
 * value is three (itself, its descriptor, the value), more when the
 * value is described again. */
static uint32_t own_nodes(const jn_field_t *f)
{
    if (!f->described)
        return 1;
    jn_iter_t it = f->encoded;
    jn_decoder_t in;
    jn_field_t x;
    (void)jn_iter_octet(&it); /* 0x00 */
    jn_decoder_init(&in, &it, true);
    if (jn_decoder_next(&in, &x) != 1 || jn_decoder_next(&in, &x) != 1)
        return 3;
    return 2 + own_nodes(&x);
}

/* Whether every value inside f (decoded by d) decodes, however deep, and
 * *nodes (the values counted so far, own_nodes) stays within
 * JN_IO_OWN_PROPS_MAX_VALUES: a value is rendered only when all of it is
 * well-formed. */
static bool own_well_formed(const jn_decoder_t *d, const jn_field_t *f, bool bare,
                            uint32_t *nodes)
{
    *nodes += bare ? 1 : own_nodes(f);
    if (*nodes > JN_IO_OWN_PROPS_MAX_VALUES)
        return false;
    if (f->type != JN_TYPE_LIST && f->type != JN_TYPE_MAP && f->type != JN_TYPE_ARRAY)
        return true;
    jn_decoder_t in;
    jn_field_t x;
    if (jn_decoder_enter(d, f, &in) != 0)
        return false;
    *nodes += f->type == JN_TYPE_ARRAY && in.elem_described; /* the shared descriptor */
    int rc;
    while ((rc = jn_decoder_next(&in, &x)) == 1)
        if (!own_well_formed(&in, &x, in.in_array, nodes))
            return false;
    return rc == 0;
}

bool jn_io_own_props_first(const jn_iter_t *v, jn_decoder_t *d, jn_field_t *f)
{
    jn_iter_t it = *v;
    if (jn_iter_length(&it) == 0)
        return false;
    jn_decoder_init(d, &it, true);
    uint32_t nodes = 0;
    return jn_decoder_next(d, f) == 1 && own_well_formed(d, f, false, &nodes);
}

int jn_io_own_props_render(const jn_iter_t *props, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    jn_decoder_t d;
    jn_field_t f;
    if (!jn_io_own_props_first(props, &d, &f) || f.type != JN_TYPE_MAP || f.described)
        return JN_EPROTO;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_map_begin(&e);
    render_elements(&e, &d, &f, 1, true);
    jn_enc_map_end(&e);
    int rc = jn_encoder_error(&e);
    size_t n = 0;
    const uint8_t *data = jn_encoder_data(&e, &n);
    if (rc == 0 && !(*out = malloc(n)))
        rc = JN_ENOMEM;
    if (rc == 0) {
        memcpy(*out, data, n);
        *len = n;
    }
    jn_encoder_free(&e);
    return rc;
}

/* ---- our open's properties ---------------------------------------------- */

/* One failover URL "[scheme://]host[:port]" (n octets at s, trimmed) as
 * the map clients read: scheme (when given), network-host, port (when
 * given); an IPv6 host keeps its brackets. */
static void put_failover_url(jn_encoder_t *e, const char *s, size_t n)
{
    jn_enc_map_begin(e);
    const char *sep = NULL;
    for (size_t i = 0; i + 3 <= n && !sep; i++)
        if (memcmp(s + i, "://", 3) == 0)
            sep = s + i;
    if (sep) {
        jn_enc_csymbol(e, "scheme");
        jn_enc_string(e, s, (size_t)(sep - s));
        n -= (size_t)(sep + 3 - s);
        s = sep + 3;
    }
    size_t colon = n; /* the last ':' after any ']' */
    for (size_t i = n; i > 0 && s[i - 1] != ']'; i--)
        if (s[i - 1] == ':') {
            colon = i - 1;
            break;
        }
    jn_enc_csymbol(e, "network-host");
    jn_enc_string(e, s, colon);
    if (colon < n) {
        jn_enc_csymbol(e, "port");
        jn_enc_string(e, s + colon + 1, n - colon - 1);
    }
    jn_enc_map_end(e);
}

/* A listener's failoverUrls (comma-separated) as failover-server-list:
 * a list of one map per non-empty URL, blanks around each trimmed. */
static void put_failover_list(jn_encoder_t *e, const char *urls)
{
    jn_enc_csymbol(e, "failover-server-list");
    jn_enc_list_begin(e);
    for (const char *p = urls; *p;) {
        size_t n = strcspn(p, ",");
        const char *s = p;
        size_t len = n;
        for (; len && (*s == ' ' || *s == '\t'); len--)
            s++;
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
        if (len)
            put_failover_url(e, s, len);
        p += n + (p[n] == ',');
    }
    jn_enc_list_end(e);
}

/* The endpoint's openProperties (an encoded map, from the configuration)
 * into e's open map: each entry with a string or symbol key, the key as a
 * symbol and the value rendered as a peer's is; other keys are left out
 * (the configuration allows string keys only). */
static void put_configured(jn_encoder_t *e, const uint8_t *raw, size_t len)
{
    jn_iter_t v;
    jn_decoder_t d, in;
    jn_field_t f, k, x;
    jn_iter_init_bytes(&v, raw, len, JN_VIEW_RAW);
    if (!jn_io_own_props_first(&v, &d, &f) || f.type != JN_TYPE_MAP || f.described ||
        jn_decoder_enter(&d, &f, &in) != 0)
        return;
    while (jn_decoder_next(&in, &k) == 1 && jn_decoder_next(&in, &x) == 1) {
        if (k.described || (k.type != JN_TYPE_STRING && k.type != JN_TYPE_SYMBOL))
            continue;
        jn_enc_symbol_iter(e, &k.payload);
        render_value(e, &in, &x, 1, false);
    }
}

int jn_io_own_open_properties(const jn_io_conn_t *conn, uint8_t **out, size_t *len)
{
    const jn_endpoint_config_t *cfg = &conn->endpoint->cfg;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_map_begin(&e);
    jn_enc_csymbol(&e, "product");
    jn_enc_cstring(&e, "qpid-dispatch-router");
    jn_enc_csymbol(&e, "version");
    jn_enc_cstring(&e, "1.19.0");
    jn_enc_csymbol(&e, "qd.conn-id");
    jn_enc_int(&e, (int32_t)conn->id);
    if (conn->inter_router && cfg->cost > 1) {
        jn_enc_csymbol(&e, "qd.inter-router-cost");
        jn_enc_int(&e, (int32_t)cfg->cost);
    }
    if (conn->inter_router || conn->edge) {
        jn_enc_csymbol(&e, "qd.annotations-version");
        jn_enc_int(&e, 1);
    }
    if (conn->incoming && cfg->failover_urls)
        put_failover_list(&e, cfg->failover_urls);
    if (cfg->open_properties)
        put_configured(&e, cfg->open_properties, cfg->open_properties_len);
    jn_enc_map_end(&e);
    size_t n = 0;
    const uint8_t *data = jn_encoder_data(&e, &n);
    int rc = jn_encoder_error(&e);
    *out = rc == 0 ? malloc(n) : NULL;
    *len = *out ? n : 0;
    if (*out)
        memcpy(*out, data, n);
    else if (rc == 0)
        rc = JN_ENOMEM;
    jn_encoder_free(&e);
    return rc;
}
