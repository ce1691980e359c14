/*
 * values.c — the typed values of configured entities kept by the agent:
 * converting a value from a request body or from the config file into an
 * owned jn_mv_t of the attribute's schema kind, schema defaults, and
 * freeing. The conversions follow the 1.19 schema's rules: strings stay
 * strings (integers are accepted and written in decimal), integers may be
 * given as decimal strings (qdmanage sends A=V as text), booleans as
 * true/false/yes/no/on/off, enums by value or zero-based index, maps and
 * lists are kept as their encoding.
 */
#include "mgmt_private.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Owned values: STR and RAW point to heap copies. */
void jn_mgmt_value_free(jn_mv_t *v)
{
    if (v->kind == JN_MV_STR || v->kind == JN_MV_RAW)
        free((void *)v->v.raw);
    *v = jn_mv_null();
}

int jn_mgmt_value_str(jn_mv_t *out, const char *s, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return JN_ENOMEM;
    memcpy(copy, s, len);
    copy[len] = '\0';
    *out = jn_mv_strn(copy, len);
    return 0;
}

static int value_raw(jn_mv_t *out, const jn_iter_t *encoded)
{
    jn_iter_t it = *encoded;
    size_t len = jn_iter_length(&it);
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return JN_ENOMEM;
    jn_iter_copy(&it, copy, len);
    *out = (jn_mv_t){.kind = JN_MV_RAW, .len = len, .v.raw = copy};
    return 0;
}

static int parse_bool_text(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return *out = true, 0;
        if (strcasecmp(s, no[i]) == 0)
            return *out = false, 0;
    }
    return JN_EINVAL;
}

static int parse_int_text(const char *s, int64_t *out)
{
    char *end;
    if (!s[0] || isspace((unsigned char)s[0]))
        return JN_EINVAL;
    long long v = strtoll(s, &end, 10);
    if (*end)
        return JN_EINVAL;
    *out = v;
    return 0;
}

static int enum_value(const jn_schema_attr_t *attr, jn_mv_t *out, const char *text,
                      const jn_field_t *f)
{
    int64_t idx = -1;
    if (text) {
        idx = jn_schema_attr_enum_index(attr, text);
    } else if (jn_field_to_int64(f, &idx) != 0) {
        idx = -1;
    }
    if (idx < 0 || (size_t)idx >= jn_schema_attr_enum_count(attr))
        return JN_EINVAL;
    const char *v = jn_schema_attr_enum_value(attr, (size_t)idx);
    return jn_mgmt_value_str(out, v, strlen(v));
}

/* The value of a request field for attr. Returns 0 (out set; a null field
 * leaves it null), JN_EINVAL (wrong type or value), JN_ENOMEM. */
int jn_mgmt_value_from_field(const jn_schema_attr_t *attr, const jn_field_t *f, jn_mv_t *out)
{
    *out = jn_mv_null();
    if (f->type == JN_TYPE_NULL)
        return 0;
    char text[JN_MGMT_STR_MAX];
    bool is_text = jn_mgmt_field_string(f, text, sizeof text) == 0;
    int64_t n;
    bool b;
    switch (jn_schema_attr_kind(attr)) {
    case JN_SCHEMA_STRING:
    case JN_SCHEMA_PATH:
    case JN_SCHEMA_ENTITY_ID:
        if (!is_text && jn_field_to_int64(f, &n) == 0)
            snprintf(text, sizeof text, "%lld", (long long)n), is_text = true;
        return is_text ? jn_mgmt_value_str(out, text, strlen(text)) : JN_EINVAL;
    case JN_SCHEMA_INTEGER:
        if (jn_field_to_int64(f, &n) != 0 && !(is_text && parse_int_text(text, &n) == 0))
            return JN_EINVAL;
        *out = jn_mv_int(JN_MV_LONG, n);
        return 0;
    case JN_SCHEMA_BOOLEAN:
        if (f->type == JN_TYPE_BOOLEAN)
            b = f->value.b;
        else if (!is_text || parse_bool_text(text, &b) != 0)
            return JN_EINVAL;
        *out = jn_mv_bool(b);
        return 0;
    case JN_SCHEMA_ENUM:
        if (!is_text && !jn_field_is_integer(f))
            return JN_EINVAL;
        return enum_value(attr, out, is_text ? text : NULL, f);
    case JN_SCHEMA_MAP:
    case JN_SCHEMA_PROPERTIES:
        return f->type == JN_TYPE_MAP ? value_raw(out, &f->encoded) : JN_EINVAL;
    case JN_SCHEMA_LIST:
        return f->type == JN_TYPE_LIST ? value_raw(out, &f->encoded) : JN_EINVAL;
    }
    return JN_EINVAL;
}

/* Encode a config-file value (any kind, maps and lists recursively). */
static void encode_config_value(jn_encoder_t *e, const jn_config_value_t *v)
{
    switch (jn_config_value_kind(v)) {
    case JN_CONFIG_NULL:
        jn_enc_null(e);
        break;
    case JN_CONFIG_BOOL:
        jn_enc_bool(e, jn_config_value_bool(v));
        break;
    case JN_CONFIG_INT:
        jn_enc_long(e, jn_config_value_int(v));
        break;
    case JN_CONFIG_DOUBLE:
        jn_enc_double(e, jn_config_value_double(v));
        break;
    case JN_CONFIG_STRING:
    case JN_CONFIG_ENUM:
        jn_enc_cstring(e, jn_config_value_string(v));
        break;
    case JN_CONFIG_MAP:
        jn_enc_map_begin(e);
        for (size_t i = 0; i < jn_config_value_count(v); i++) {
            jn_enc_cstring(e, jn_config_value_key(v, i));
            encode_config_value(e, jn_config_value_item(v, i));
        }
        jn_enc_map_end(e);
        break;
    case JN_CONFIG_LIST:
        jn_enc_list_begin(e);
        for (size_t i = 0; i < jn_config_value_count(v); i++)
            encode_config_value(e, jn_config_value_item(v, i));
        jn_enc_list_end(e);
        break;
    }
}

/* The value of a config-file value. Returns 0 or JN_ENOMEM. */
int jn_mgmt_value_from_config(const jn_config_value_t *v, jn_mv_t *out)
{
    *out = jn_mv_null();
    switch (jn_config_value_kind(v)) {
    case JN_CONFIG_NULL:
        return 0;
    case JN_CONFIG_BOOL:
        *out = jn_mv_bool(jn_config_value_bool(v));
        return 0;
    case JN_CONFIG_INT:
        *out = jn_mv_int(JN_MV_LONG, jn_config_value_int(v));
        return 0;
    case JN_CONFIG_STRING:
    case JN_CONFIG_ENUM: {
        const char *s = jn_config_value_string(v);
        return jn_mgmt_value_str(out, s, strlen(s));
    }
    default: {
        jn_encoder_t *e = malloc(sizeof *e);
        if (!e)
            return JN_ENOMEM;
        jn_encoder_init(e);
        encode_config_value(e, v);
        size_t len = 0;
        const uint8_t *data = jn_encoder_data(e, &len);
        uint8_t *copy = jn_encoder_error(e) == 0 ? malloc(len ? len : 1) : NULL;
        if (copy) {
            memcpy(copy, data, len);
            *out = (jn_mv_t){.kind = JN_MV_RAW, .len = len, .v.raw = copy};
        }
        jn_encoder_free(e);
        free(e);
        return copy ? 0 : JN_ENOMEM;
    }
    }
}

/* The schema default of attr (null when it has none). Returns 0 or
 * JN_ENOMEM. */
int jn_mgmt_value_default(const jn_schema_attr_t *attr, jn_mv_t *out)
{
    *out = jn_mv_null();
    const char *text = jn_schema_attr_default(attr);
    if (!text)
        return 0;
    int64_t n;
    switch (jn_schema_attr_kind(attr)) {
    case JN_SCHEMA_INTEGER:
        if (jn_schema_attr_default_int(attr, &n) == 0)
            *out = jn_mv_int(JN_MV_LONG, n);
        return 0;
    case JN_SCHEMA_BOOLEAN:
        *out = jn_mv_bool(strcmp(text, "true") == 0);
        return 0;
    case JN_SCHEMA_MAP:
    case JN_SCHEMA_PROPERTIES:
    case JN_SCHEMA_LIST:
        return 0;
    default:
        return jn_mgmt_value_str(out, text, strlen(text));
    }
}

/* A C string of a stored string value (NULL when not a string). Stored
 * strings are NUL-terminated (jn_mgmt_value_str). */
bool jn_mgmt_value_equal(const jn_mv_t *a, const jn_mv_t *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case JN_MV_BOOL:
        return a->v.b == b->v.b;
    case JN_MV_INT:
    case JN_MV_LONG:
        return a->v.i == b->v.i;
    case JN_MV_UINT:
    case JN_MV_ULONG:
        return a->v.u == b->v.u;
    case JN_MV_STR:
        return a->len == b->len && memcmp(a->v.s, b->v.s, a->len) == 0;
    case JN_MV_RAW:
        return a->len == b->len && memcmp(a->v.raw, b->v.raw, a->len) == 0;
    case JN_MV_STRLIST:
        if (a->len != b->len)
            return false;
        for (size_t i = 0; i < a->len; i++)
            if (strcmp(a->v.list[i], b->v.list[i]) != 0)
                return false;
        return true;
    default: /* null, empty map, empty list */
        return true;
    }
}

const char *jn_mgmt_value_cstr(const jn_mv_t *v)
{
    return v->kind == JN_MV_STR ? v->v.s : NULL;
}
