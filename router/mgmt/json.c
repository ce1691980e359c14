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
    bool odd; /* a value JSON cannot carry was written as null */
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
        if (f->type != JN_TYPE_NULL)
            b->odd = true;
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

/* Is key (a map key field) one of the NULL-ended names? */
static bool key_in(const jn_field_t *key, const char *const *names)
{
    char text[128];
    if (jn_mgmt_field_string(key, text, sizeof text) != 0)
        return false;
    for (size_t i = 0; names && names[i]; i++)
        if (strcmp(text, names[i]) == 0)
            return true;
    return false;
}

/* Does map (a decoded map field of d) have key? */
static bool map_has(const jn_decoder_t *d, const jn_field_t *map, const jn_field_t *key)
{
    char want[128], text[128];
    jn_decoder_t child;
    jn_field_t k, v;
    if (!map || jn_mgmt_field_string(key, want, sizeof want) != 0 ||
        jn_decoder_enter(d, map, &child) != 0)
        return false;
    while (jn_decoder_next(&child, &k) == 1 && jn_decoder_next(&child, &v) == 1)
        if (jn_mgmt_field_string(&k, text, sizeof text) == 0 && strcmp(text, want) == 0)
            return true;
    return false;
}

/* The members of map f (of d) into b, but for keys in skip or in the map
 * `unless` (of ud); *first says whether none was written yet. bad (NULL:
 * not asked): the key of the first member whose value holds a type JSON
 * cannot carry (a float, a UUID, binary...), "" when none. */
static void json_members(jbuf_t *b, const jn_decoder_t *d, const jn_field_t *f,
                         const jn_decoder_t *ud, const jn_field_t *unless, const char *const *skip,
                         bool *first, char *bad, size_t badlen)
{
    jn_decoder_t child;
    jn_field_t k, v;
    if (!f || jn_decoder_enter(d, f, &child) != 0)
        return;
    while (jn_decoder_next(&child, &k) == 1 && jn_decoder_next(&child, &v) == 1) {
        if (v.type == JN_TYPE_NULL || key_in(&k, skip) || (unless && map_has(ud, unless, &k)))
            continue;
        if (!*first)
            puts_(b, ", ");
        *first = false;
        json_string(b, &k);
        puts_(b, ": ");
        b->odd = false;
        json_value(b, &child, &v, -1, 1);
        if (b->odd && bad && !bad[0] && jn_mgmt_field_string(&k, bad, badlen) != 0)
            snprintf(bad, badlen, "?");
    }
}

char *jn_mgmt_json_merge(const jn_decoder_t *bd, const jn_field_t *base, const jn_decoder_t *od,
                         const jn_field_t *over, const char *const *skip, char *bad, size_t badlen)
{
    jbuf_t b = {0};
    bool first = true;
    bad[0] = '\0';
    puts_(&b, "{");
    json_members(&b, bd, base, od, over, skip, &first, NULL, 0);
    json_members(&b, od, over, NULL, NULL, skip, &first, bad, badlen);
    puts_(&b, "}");
    if (b.failed || bad[0]) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
