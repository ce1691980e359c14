/*
 * convert.c — converting a value read from the file to its attribute's type,
 * as 1.19's schema validation does (docs/protocol.md, "The configuration file"):
 *
 *   integer  Python int() of the text: optional sign, decimal digits with
 *            single '_' between them (so "+3", "1_0"); no hex. JSON numbers
 *            are truncated, JSON booleans are 0/1.
 *   boolean  yes/true/on or no/false/off, any case; a JSON non-string is
 *            taken by truthiness.
 *   enum     the exact spelling, or a zero-based index (Python int() text or
 *            JSON number); a negative index counts from the end.
 *   string, path, entityId
 *            text unchanged; a JSON number or boolean becomes its Python
 *            text ("43217", "1.5", "True").
 *   map      a map; properties: a map whose keys are ASCII.
 *
 * A JSON null counts as "not given".
 */
#include "config_private.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int jn_config_parse_int(const char *text, int64_t *out)
{
    const char *p = text;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' || *p == '\f')
        p++;
    bool neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    if (*p < '0' || *p > '9')
        return JN_EINVAL;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    bool range = false;
    for (;;) {
        unsigned d = (unsigned)(*p++ - '0');
        if (v > (limit - d) / 10)
            range = true;
        else
            v = v * 10 + d;
        if (*p == '_')
            p++;
        if (*p < '0' || *p > '9')
            break;
    }
    if (p[-1] == '_')
        return JN_EINVAL;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' || *p == '\f')
        p++;
    if (*p != '\0')
        return JN_EINVAL;
    if (range)
        return JN_ERANGE;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/* Python's repr() of a float: the shortest text that reads back the same,
 * positional for exponents -4..15, else d.ddde+XX. */
static void float_text(double d, char *buf, size_t size)
{
    if (isnan(d) || isinf(d)) {
        snprintf(buf, size, "%s", isnan(d) ? "nan" : d < 0 ? "-inf" : "inf");
        return;
    }
    char e[40];
    for (int prec = 0; prec < 17; prec++) {
        snprintf(e, sizeof(e), "%.*e", prec, d);
        if (strtod(e, NULL) == d)
            break;
    }
    char digits[24];
    size_t nd = 0;
    const char *p = e;
    bool neg = *p == '-';
    for (p += neg; *p != 'e'; p++)
        if (*p != '.')
            digits[nd++] = *p;
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    size_t n = 0;
    if (neg)
        buf[n++] = '-';
    if (exp < -4 || exp >= 16) {
        n +=
            (size_t)snprintf(buf + n, size - n, "%c%s%s", digits[0], nd > 1 ? "." : "", digits + 1);
        snprintf(buf + n, size - n, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        return;
    }
    if (exp < 0) {
        buf[n++] = '0';
        buf[n++] = '.';
        for (int i = 0; i < -exp - 1; i++)
            buf[n++] = '0';
        snprintf(buf + n, size - n, "%s", digits);
        return;
    }
    for (int i = 0; i <= exp; i++)
        buf[n++] = (size_t)i < nd ? digits[i] : '0';
    buf[n++] = '.';
    snprintf(buf + n, size - n, "%s", nd > (size_t)exp + 1 ? digits + exp + 1 : "0");
}

static const char *kind_word(const jn_config_value_t *v)
{
    return v->kind == JN_CONFIG_MAP ? "a map" : v->kind == JN_CONFIG_LIST ? "a list" : "a value";
}

static int to_text(jn_config_ctx_t *ctx, const jn_config_value_t *raw, jn_config_value_t *v,
                   const char *section, const char *name)
{
    char buf[64];
    v->kind = JN_CONFIG_STRING;
    switch ((jn_config_kind_t)raw->kind) {
    case JN_CONFIG_STRING:
    case JN_CONFIG_ENUM:
        v->s = raw->s;
        return 0;
    case JN_CONFIG_INT:
        snprintf(buf, sizeof(buf), "%lld", (long long)raw->i);
        break;
    case JN_CONFIG_DOUBLE:
        float_text(raw->d, buf, sizeof(buf));
        break;
    case JN_CONFIG_BOOL:
        snprintf(buf, sizeof(buf), "%s", raw->i ? "True" : "False");
        break;
    default:
        return jn_config_fail(ctx, raw->line, "%s attribute '%s': expected text, not %s", section,
                              name, kind_word(raw));
    }
    v->s = jn_config_strndup(ctx, buf, strlen(buf));
    return v->s ? 0 : jn_config_nomem(ctx);
}

/* An integer from raw (used for integers and enum indexes): 0, JN_EINVAL,
 * JN_ERANGE. */
static int number_of(const jn_config_value_t *raw, int64_t *out)
{
    switch ((jn_config_kind_t)raw->kind) {
    case JN_CONFIG_STRING:
        return jn_config_parse_int(raw->s, out);
    case JN_CONFIG_INT:
    case JN_CONFIG_BOOL:
        *out = raw->i;
        return 0;
    case JN_CONFIG_DOUBLE:
        if (isnan(raw->d))
            return JN_EINVAL;
        if (!(raw->d >= -9223372036854775808.0 && raw->d < 9223372036854775808.0))
            return JN_ERANGE;
        *out = (int64_t)raw->d;
        return 0;
    default:
        return JN_EINVAL;
    }
}

static const char *raw_text(jn_config_ctx_t *ctx, const jn_config_value_t *raw)
{
    jn_config_value_t tmp = {0};
    if (raw->kind == JN_CONFIG_MAP || raw->kind == JN_CONFIG_LIST)
        return kind_word(raw);
    if (to_text(ctx, raw, &tmp, "", "") != 0)
        return "?";
    return jn_config_printf(ctx, "'%s'", jn_config_quote(ctx, tmp.s));
}

static int to_int(jn_config_ctx_t *ctx, const jn_config_value_t *raw, jn_config_value_t *v,
                  const char *section, const char *name)
{
    v->kind = JN_CONFIG_INT;
    int rc = number_of(raw, &v->i);
    if (rc == 0)
        return 0;
    return jn_config_fail(ctx, raw->line, "%s attribute '%s': %s is %s", section, name,
                          raw_text(ctx, raw), rc == JN_ERANGE ? "out of range" : "not an integer");
}

static int to_bool(jn_config_ctx_t *ctx, const jn_config_value_t *raw, jn_config_value_t *v,
                   const char *section, const char *name)
{
    static const char *const yes[] = {"yes", "true", "on"}, *const no[] = {"no", "false", "off"};
    v->kind = JN_CONFIG_BOOL;
    switch ((jn_config_kind_t)raw->kind) {
    case JN_CONFIG_STRING:
        for (int i = 0; i < 3; i++) {
            if (strcasecmp(raw->s, yes[i]) == 0 || strcasecmp(raw->s, no[i]) == 0) {
                v->i = strcasecmp(raw->s, yes[i]) == 0;
                return 0;
            }
        }
        return jn_config_fail(ctx, raw->line,
                              "%s attribute '%s': '%s' is not a boolean "
                              "(use yes/no, true/false or on/off)",
                              section, name, jn_config_quote(ctx, raw->s));
    case JN_CONFIG_DOUBLE:
        v->i = raw->d != 0;
        return 0;
    case JN_CONFIG_MAP:
    case JN_CONFIG_LIST:
        v->i = raw->count != 0;
        return 0;
    default:
        v->i = raw->i != 0;
        return 0;
    }
}

static int to_enum(jn_config_ctx_t *ctx, const jn_schema_attr_t *attr, const jn_config_value_t *raw,
                   jn_config_value_t *v, const char *section)
{
    int64_t n = (int64_t)jn_schema_attr_enum_count(attr), idx = -1;
    bool ok = false;
    v->kind = JN_CONFIG_ENUM;
    if (raw->kind == JN_CONFIG_STRING) {
        idx = jn_schema_attr_enum_index(attr, raw->s);
        ok = idx >= 0;
    }
    if (!ok && number_of(raw, &idx) == 0 && idx >= -n && idx < n) {
        idx += idx < 0 ? n : 0;
        ok = true;
    }
    if (!ok) {
        char list[512];
        size_t len = 0;
        list[0] = '\0';
        for (int64_t i = 0; i < n && len < sizeof(list); i++)
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "",
                                    jn_schema_attr_enum_value(attr, (size_t)i));
        return jn_config_fail(ctx, raw->line, "%s attribute '%s': %s is not one of %s", section,
                              jn_schema_attr_name(attr), raw_text(ctx, raw), list);
    }
    v->i = idx;
    v->s = jn_schema_attr_enum_value(attr, (size_t)idx);
    return 0;
}

static int to_map(jn_config_ctx_t *ctx, const jn_config_value_t *raw, jn_config_value_t *v,
                  const char *section, const char *name, bool ascii_keys)
{
    if (raw->kind != JN_CONFIG_MAP)
        return jn_config_fail(ctx, raw->line, "%s attribute '%s': expected a map, not %s", section,
                              name, raw_text(ctx, raw));
    for (size_t i = 0; ascii_keys && i < raw->count; i++)
        for (const char *k = raw->items[i]->key; *k; k++)
            if ((unsigned char)*k >= 0x80)
                return jn_config_fail(ctx, raw->items[i]->line,
                                      "%s attribute '%s': key '%s' "
                                      "is not ASCII",
                                      section, name, jn_config_quote(ctx, raw->items[i]->key));
    v->kind = JN_CONFIG_MAP;
    v->items = raw->items;
    v->count = v->cap = raw->count;
    return 0;
}

int jn_config_convert(jn_config_ctx_t *ctx, const char *section, const jn_schema_attr_t *attr,
                      const jn_config_value_t *raw, jn_config_value_t **out)
{
    *out = NULL;
    if (raw->kind == JN_CONFIG_NULL)
        return 0;
    jn_config_value_t *v = jn_config_value_new(ctx, JN_CONFIG_NULL, raw->line);
    if (!v)
        return jn_config_nomem(ctx);
    const char *name = jn_schema_attr_name(attr);
    int rc;
    switch (jn_schema_attr_kind(attr)) {
    case JN_SCHEMA_INTEGER:
        rc = to_int(ctx, raw, v, section, name);
        break;
    case JN_SCHEMA_BOOLEAN:
        rc = to_bool(ctx, raw, v, section, name);
        break;
    case JN_SCHEMA_ENUM:
        rc = to_enum(ctx, attr, raw, v, section);
        break;
    case JN_SCHEMA_MAP:
        rc = to_map(ctx, raw, v, section, name, false);
        break;
    case JN_SCHEMA_PROPERTIES:
        rc = to_map(ctx, raw, v, section, name, true);
        break;
    case JN_SCHEMA_LIST:
        if (raw->kind != JN_CONFIG_LIST)
            return jn_config_fail(ctx, raw->line, "%s attribute '%s': expected a list, not %s",
                                  section, name, raw_text(ctx, raw));
        *v = *raw;
        v->key = NULL;
        rc = 0;
        break;
    default:
        rc = to_text(ctx, raw, v, section, name);
        break;
    }
    if (rc == 0)
        *out = v;
    return rc;
}
