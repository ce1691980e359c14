/*
 * form_json.c — the JSON form of the configuration file (docs/protocol.md, "The configuration file"):
 * a JSON list of [section-name, {attribute: value, ...}] pairs. Lines whose
 * first non-blank character is '#' are dropped first (kept as empty lines so
 * that line numbers stay right); no other comments exist. Values keep their
 * JSON types here; validate.c converts them.
 */
#include "config_private.h"

#include <stdlib.h>
#include <string.h>

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1f);
}

/* Copy text with "\n" line ends and comment lines emptied. */
static int strip_comment_lines(jn_config_ctx_t *ctx, const char *text, size_t len, char **out,
                               size_t *out_len)
{
    char *buf = malloc(len + 1);
    if (!buf)
        return jn_config_nomem(ctx);
    const char *p = text, *end = text + len;
    size_t n = 0;
    int line = 0;
    while (p < end) {
        line++;
        const char *eol = p;
        while (eol < end && *eol != '\n' && *eol != '\r')
            eol++;
        if (memchr(p, '\0', (size_t)(eol - p))) {
            free(buf);
            return jn_config_fail(ctx, line, "NUL byte in the file");
        }
        const char *q = p;
        while (q < eol && is_blank(*q))
            q++;
        if (q == eol || *q != '#') {
            memcpy(buf + n, p, (size_t)(eol - p));
            n += (size_t)(eol - p);
        }
        p = eol;
        if (p < end) {
            p += (*p == '\r' && p + 1 < end && p[1] == '\n') ? 2 : 1;
            buf[n++] = '\n';
        }
    }
    buf[n] = '\0';
    *out = buf;
    *out_len = n;
    return 0;
}

static int take_sections(jn_config_ctx_t *ctx, const jn_config_value_t *top)
{
    if (top->kind != JN_CONFIG_LIST)
        return jn_config_fail(ctx, top->line,
                              "the JSON form must be a list of "
                              "[\"section\", {attributes}] pairs");
    for (size_t i = 0; i < top->count; i++) {
        const jn_config_value_t *pair = top->items[i];
        if (pair->kind != JN_CONFIG_LIST || pair->count != 2)
            return jn_config_fail(ctx, pair->line,
                                  "each section must be a list of two "
                                  "items: [\"section\", {attributes}]");
        const jn_config_value_t *name = pair->items[0], *attrs = pair->items[1];
        if (name->kind != JN_CONFIG_STRING)
            return jn_config_fail(ctx, name->line, "a section name must be a string");
        if (attrs->kind != JN_CONFIG_MAP)
            return jn_config_fail(ctx, attrs->line,
                                  "the attributes of section '%s' must be "
                                  "a map",
                                  jn_config_quote(ctx, name->s));
        jn_config_section_t *sec = jn_config_section_add(ctx, name->s, name->line);
        if (!sec)
            return jn_config_nomem(ctx);
        for (size_t a = 0; a < attrs->count; a++)
            if (jn_config_value_append(ctx, sec->attrs, attrs->items[a]) != 0)
                return JN_ENOMEM;
    }
    return 0;
}

int jn_config_read_json(jn_config_ctx_t *ctx, const char *text, size_t len)
{
    char *clean = NULL;
    size_t clean_len = 0;
    int rc = strip_comment_lines(ctx, text, len, &clean, &clean_len);
    if (rc != 0)
        return rc;
    jn_config_value_t *top = NULL;
    rc = jn_config_json_parse(ctx, clean, clean_len, 1, "invalid JSON", true, false, &top);
    free(clean);
    return rc ? rc : take_sections(ctx, top);
}
