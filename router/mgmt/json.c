/*
 * json.c — GET-JSON-SCHEMA (docs/protocol.md, "Management
 * requests"): the GET-SCHEMA answer
 * as JSON text, indented by the request's `indent` property.
 *
 * The schema map is encoded once as for GET-SCHEMA, then walked with the
 * decoder and written as JSON, so both operations always say the same
 * thing. Only the types GET-SCHEMA uses need to be rendered (maps, lists,
 * strings, symbols, booleans, integers, null); anything else becomes null.
 * Layout as Python's json.dumps: without indent one line with ", " and ": "
 * separators; with indent N each member on its own line, N spaces deeper
 * per level.
 */
#include "mgmt_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jbuf {
    char *s;
    size_t len, cap;
    bool failed;
} jbuf_t;

static void put(jbuf_t *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *s2 = realloc(b->s, cap);
        if (!s2) {
            b->failed = true;
            return;
        }
        b->s = s2;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void puts_(jbuf_t *b, const char *s)
{
    put(b, s, strlen(s));
}

static void newline(jbuf_t *b, int indent, int depth)
{
    put(b, "\n", 1);
    for (int i = 0; i < indent * depth; i++)
        put(b, " ", 1);
}

static void json_string(jbuf_t *b, const jn_field_t *f)
{
    jn_iter_t it = f->payload;
    put(b, "\"", 1);
    int c;
    while ((c = jn_iter_octet(&it)) >= 0) {
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(b, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            puts_(b, esc);
        } else {
            esc[0] = (char)c;
            put(b, esc, 1);
        }
    }
    put(b, "\"", 1);
}

static void json_value(jbuf_t *b, const jn_decoder_t *d, const jn_field_t *f, int indent,
                       int depth);

static void json_compound(jbuf_t *b, const jn_decoder_t *d, const jn_field_t *f, int indent,
                          int depth)
{
    bool map = f->type == JN_TYPE_MAP;
    jn_decoder_t child;
    jn_field_t k, v;
    puts_(b, map ? "{" : "[");
    if (jn_decoder_enter(d, f, &child) != 0 || f->count == 0) {
        puts_(b, map ? "}" : "]");
        return;
    }
    for (uint32_t i = 0; jn_decoder_next(&child, &k) == 1; i++) {
        if (i > 0)
            puts_(b, indent >= 0 ? "," : ", ");
        if (indent >= 0)
            newline(b, indent, depth + 1);
        if (map) {
            if (jn_decoder_next(&child, &v) != 1)
                break;
            if (k.type == JN_TYPE_STRING || k.type == JN_TYPE_SYMBOL)
                json_string(b, &k);
            else
                puts_(b, "\"\"");
            puts_(b, ": ");
            json_value(b, &child, &v, indent, depth + 1);
        } else {
            json_value(b, &child, &k, indent, depth + 1);
        }
    }
    if (indent >= 0)
        newline(b, indent, depth);
    puts_(b, map ? "}" : "]");
}

static void json_value(jbuf_t *b, const jn_decoder_t *d, const jn_field_t *f, int indent, int depth)
{
    char num[32];
    int64_t i;
    uint64_t u;
    if (f->type == JN_TYPE_MAP || f->type == JN_TYPE_LIST || f->type == JN_TYPE_ARRAY) {
        json_compound(b, d, f, indent, depth);
    } else if (f->type == JN_TYPE_STRING || f->type == JN_TYPE_SYMBOL) {
        json_string(b, f);
    } else if (f->type == JN_TYPE_BOOLEAN) {
        puts_(b, f->value.b ? "true" : "false");
    } else if (jn_field_is_integer(f) && jn_field_to_int64(f, &i) == 0) {
        snprintf(num, sizeof num, "%" PRId64, i);
        puts_(b, num);
    } else if (jn_field_is_integer(f) && jn_field_to_uint64(f, &u) == 0) {
        snprintf(num, sizeof num, "%" PRIu64, u);
        puts_(b, num);
    } else {
        puts_(b, "null");
    }
}

int jn_mgmt_get_json_schema(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    jn_mgmt_reply_t *schema = malloc(sizeof *schema);
    if (!schema)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    jn_encoder_init(&schema->body);
    jn_mgmt_get_schema(req, schema);
    size_t len = 0;
    const uint8_t *data = jn_encoder_data(&schema->body, &len);
    jbuf_t b = {.s = NULL};
    jn_iter_t it;
    jn_decoder_t d;
    jn_field_t f;
    jn_iter_init_bytes(&it, data, len, JN_VIEW_RAW);
    jn_decoder_init(&d, &it, true);
    if (jn_encoder_error(&schema->body) == 0 && jn_decoder_next(&d, &f) == 1)
        json_value(&b, &d, &f, req->has_indent ? (int)req->indent : -1, 0);
    else
        b.failed = true;
    int status;
    if (b.failed) {
        status = jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Cannot render the schema as JSON");
    } else {
        jn_enc_string(&reply->body, b.s, b.len);
        status = jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
    }
    free(b.s);
    jn_encoder_free(&schema->body);
    free(schema);
    return status;
}
