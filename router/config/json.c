/*
 * json.c — a small JSON reader for configuration files: the JSON form, the
 * raw-JSON attribute maps of the conf form (openProperties, groups) and the
 * escapes inside conf-form values, which 1.19 reads as the body of a JSON
 * string literal.
 *
 * It follows what Python's json module (which 1.19 uses) accepts: strict
 * strings (no raw control characters) and NaN / Infinity / -Infinity. Some
 * things Python accepts are refused because they cannot be represented here
 * — the escape \u0000 and unpaired surrogates, integers outside int64_t,
 * numbers too large for a double — or because they hide a mistake: a key
 * repeated in one object (Python silently keeps the last value). In the raw
 * maps of the conf form, a spare comma before '}' or ']' is dropped, as 1.19
 * drops it everywhere in that form before reading it as JSON. Every value
 * records the line it starts on so that later checks can point at it, and
 * every error names a line: where the problem is seen, or for a list, object
 * or string the text ends inside, the line where it was opened.
 */
#include "config_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

typedef struct {
    jn_config_ctx_t *ctx;
    const char *start, *p, *end;
    int line;
    const char *what; /* prefix of messages, e.g. "invalid JSON" */
    int depth;
    bool whole_file;   /* the text is the whole file (the JSON form) */
    bool spare_commas; /* a ',' before '}' or ']' is dropped (conf form) */
    /* the line and opening character of each open list or object, by depth */
    int open_line[JSON_MAX_DEPTH + 2];
    char open_char[JSON_MAX_DEPTH + 2];
} jp_t;

static int fail(jp_t *jp, const char *problem)
{
    if (jp->p < jp->end)
        return jn_config_fail(jp->ctx, jp->line, "%s: %s", jp->what, problem);
    /* At the end of a file inside a list or object: point at where it was
     * opened (a raw map of the conf form ends where its braces balanced by
     * line: the last line is the one to look at). */
    if (jp->whole_file && jp->depth > 0 && jp->depth <= JSON_MAX_DEPTH)
        return jn_config_fail(jp->ctx, jp->open_line[jp->depth],
                              "%s: the %s opened by '%c' on this line is not closed "
                              "(the text ends first)",
                              jp->what, jp->open_char[jp->depth] == '[' ? "list" : "object",
                              jp->open_char[jp->depth]);
    /* At the end of a lone value: point at the last line that has text. */
    int line = jp->line;
    for (const char *q = jp->end; q > jp->start && q[-1] && strchr(" \t\r\n", q[-1]); q--)
        line -= q[-1] == '\n';
    return jn_config_fail(jp->ctx, line, "%s: unexpected end (%s)", jp->what, problem);
}

static void skip_blanks(jp_t *jp)
{
    while (jp->p < jp->end) {
        char c = *jp->p;
        if (c == '\n')
            jp->line++;
        else if (c != ' ' && c != '\t' && c != '\r')
            return;
        jp->p++;
    }
}

static int hex4(const char *p, const char *end, uint32_t *out)
{
    if (end - p < 4)
        return -1;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = (c >= '0' && c <= '9')   ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                         : -1;
        if (d < 0)
            return -1;
        v = v * 16 + (uint32_t)d;
    }
    *out = v;
    return 0;
}

/* Decode a \uXXXX escape (and the low half of a surrogate pair) at *pp,
 * which points just after the 'u'. Returns the code point or -1 with
 * *problem set. */
static long unicode_escape(const char **pp, const char *end, const char **problem)
{
    uint32_t cp, lo;
    if (hex4(*pp, end, &cp) != 0) {
        *problem = "invalid \\u escape (four hex digits needed)";
        return -1;
    }
    *pp += 4;
    if (cp >= 0xdc00 && cp <= 0xdfff) {
        *problem = "unpaired surrogate in \\u escape";
        return -1;
    }
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (end - *pp < 6 || (*pp)[0] != '\\' || (*pp)[1] != 'u' || hex4(*pp + 2, end, &lo) != 0 ||
            lo < 0xdc00 || lo > 0xdfff) {
            *problem = "unpaired surrogate in \\u escape";
            return -1;
        }
        *pp += 6;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    if (cp == 0) {
        *problem = "the character \\u0000 is not allowed";
        return -1;
    }
    return (long)cp;
}

int jn_config_unescape(jn_config_ctx_t *ctx, const char *s, size_t len, int line, const char *what,
                       char **out)
{
    char *buf = jn_config_alloc(ctx, len + 1); /* decoding never grows the text */
    if (!buf)
        return jn_config_nomem(ctx);
    const char *p = s, *end = s + len;
    size_t n = 0;
    const char *problem = NULL;
    while (p < end && !problem) {
        unsigned char c = (unsigned char)*p++;
        if (c == '"') {
            problem = "a '\"' may not appear in a value (do not quote values)";
        } else if (c < 0x20) {
            problem = "control character (write it as an escape such as \\t)";
        } else if (c != '\\') {
            buf[n++] = (char)c;
        } else if (p == end) {
            problem = "'\\' at the end (write '\\\\' for a backslash)";
        } else {
            char e = *p++;
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
            const char *hit = strchr(from, e);
            if (e == 'u') {
                long cp = unicode_escape(&p, end, &problem);
                if (cp > 0)
                    n += jn_utf8_put(buf + n, (uint32_t)cp); /* a scalar value: checked above */
            } else if (e != '\0' && hit) {
                buf[n++] = to[hit - from];
            } else {
                problem = "invalid escape (use \\\\ for a backslash)";
            }
        }
    }
    if (problem)
        return jn_config_fail(ctx, line, "%s: %s", what, problem);
    buf[n] = '\0';
    *out = buf;
    return 0;
}

static int parse_value(jp_t *jp, jn_config_value_t **out);

/* A string literal at jp->p (on the opening quote) -> *out (arena). */
static int parse_string(jp_t *jp, char **out)
{
    const char *start = ++jp->p;
    while (jp->p < jp->end && *jp->p != '"') {
        if ((unsigned char)*jp->p < 0x20)
            return fail(jp, *jp->p == '\n' ? "unterminated string" : "control character in string");
        if (*jp->p == '\\' && jp->p + 1 < jp->end)
            jp->p++;
        jp->p++;
    }
    if (jp->p >= jp->end) /* a string never spans lines: jp->line is where it opened */
        return jn_config_fail(jp->ctx, jp->line, "%s: unterminated string (the text ends first)",
                              jp->what);
    size_t len = (size_t)(jp->p - start);
    jp->p++;
    return jn_config_unescape(jp->ctx, start, len, jp->line, jp->what, out);
}

static int parse_number(jp_t *jp, jn_config_value_t *v)
{
    const char *s = jp->p, *p = jp->p;
    bool is_int = true;
    if (p < jp->end && *p == '-')
        p++;
    if (p < jp->end && *p == '0') {
        p++;
    } else if (p < jp->end && *p >= '1' && *p <= '9') {
        while (p < jp->end && *p >= '0' && *p <= '9')
            p++;
    } else {
        return fail(jp, "expected a value");
    }
    if (p < jp->end && *p == '.') {
        is_int = false;
        if (++p >= jp->end || *p < '0' || *p > '9')
            return fail(jp, "digits expected after '.'");
        while (p < jp->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < jp->end && (*p == 'e' || *p == 'E')) {
        is_int = false;
        if (++p < jp->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= jp->end || *p < '0' || *p > '9')
            return fail(jp, "digits expected in exponent");
        while (p < jp->end && *p >= '0' && *p <= '9')
            p++;
    }
    char tmp[64];
    size_t len = (size_t)(p - s);
    if (len >= sizeof(tmp))
        return fail(jp, "number too long");
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    jp->p = p;
    if (is_int) {
        v->kind = JN_CONFIG_INT;
        int rc = jn_config_parse_int(tmp, &v->i);
        return rc == 0 ? 0 : fail(jp, "integer out of range");
    }
    v->kind = JN_CONFIG_DOUBLE;
    v->d = strtod(tmp, NULL);
    if (isinf(v->d)) { /* Python reads it as inf; no attribute wants that */
        jp->p = s;
        return fail(jp, "number out of range");
    }
    return 0;
}

static bool take_word(jp_t *jp, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(jp->end - jp->p) < n || memcmp(jp->p, word, n) != 0)
        return false;
    jp->p += n;
    return true;
}

static int parse_container(jp_t *jp, jn_config_value_t *v, bool is_map)
{
    char close = is_map ? '}' : ']';
    v->kind = is_map ? JN_CONFIG_MAP : JN_CONFIG_LIST;
    if (++jp->depth > JSON_MAX_DEPTH)
        return fail(jp, "nested too deeply");
    jp->open_line[jp->depth] = jp->line;
    jp->open_char[jp->depth] = *jp->p;
    jp->p++;
    skip_blanks(jp);
    if (jp->p < jp->end && *jp->p == close) {
        jp->p++;
        jp->depth--;
        return 0;
    }
    for (;;) {
        skip_blanks(jp);
        char *key = NULL;
        int key_line = jp->line;
        if (is_map) {
            if (jp->p >= jp->end || *jp->p != '"')
                return fail(jp, "expected a key in double quotes");
            int rc = parse_string(jp, &key);
            if (rc != 0)
                return rc;
            skip_blanks(jp);
            if (jp->p >= jp->end || *jp->p != ':')
                return fail(jp, "expected ':' after the key");
            jp->p++;
        }
        jn_config_value_t *item = NULL;
        int rc = parse_value(jp, &item);
        if (rc != 0)
            return rc;
        if (is_map) {
            item->key = key;
            item->line = key_line;
            for (size_t i = 0; i < v->count; i++)
                if (strcmp(v->items[i]->key, key) == 0)
                    return jn_config_fail(jp->ctx, key_line,
                                          "%s: duplicate key '%s' (first on line %d)", jp->what,
                                          jn_config_quote(jp->ctx, key), v->items[i]->line);
            rc = jn_config_value_append(jp->ctx, v, item);
        } else {
            rc = jn_config_value_append(jp->ctx, v, item);
        }
        if (rc != 0)
            return rc;
        skip_blanks(jp);
        if (jp->p < jp->end && *jp->p == ',') {
            int comma_line = jp->line;
            jp->p++;
            skip_blanks(jp);
            if (jp->p < jp->end && *jp->p == close && !jp->spare_commas)
                return jn_config_fail(jp->ctx, comma_line, "%s: trailing ',' before '%c'", jp->what,
                                      close);
            if (jp->p >= jp->end || *jp->p != close)
                continue;
        }
        if (jp->p < jp->end && *jp->p == close) {
            jp->p++;
            jp->depth--;
            return 0;
        }
        return fail(jp, is_map ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int parse_value(jp_t *jp, jn_config_value_t **out)
{
    skip_blanks(jp);
    jn_config_value_t *v = jn_config_value_new(jp->ctx, JN_CONFIG_NULL, jp->line);
    if (!v)
        return jn_config_nomem(jp->ctx);
    *out = v;
    if (jp->p >= jp->end)
        return fail(jp, "expected a value");
    char c = *jp->p;
    if (c == '{' || c == '[')
        return parse_container(jp, v, c == '{');
    if (c == '"') {
        v->kind = JN_CONFIG_STRING;
        return parse_string(jp, (char **)&v->s);
    }
    static const struct {
        const char *word;
        jn_config_kind_t kind;
        int64_t i;
        double d;
    } words[] = {{"true", JN_CONFIG_BOOL, 1, 0},
                 {"false", JN_CONFIG_BOOL, 0, 0},
                 {"null", JN_CONFIG_NULL, 0, 0},
                 {"NaN", JN_CONFIG_DOUBLE, 0, NAN},
                 {"Infinity", JN_CONFIG_DOUBLE, 0, INFINITY},
                 {"-Infinity", JN_CONFIG_DOUBLE, 0, -INFINITY}};
    for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
        if (take_word(jp, words[w].word)) {
            v->kind = (uint8_t)words[w].kind;
            v->i = words[w].i;
            v->d = words[w].d;
            return 0;
        }
    }
    return parse_number(jp, v);
}

int jn_config_json_parse(jn_config_ctx_t *ctx, const char *text, size_t len, int first_line,
                         const char *what, bool whole_file, bool spare_commas,
                         jn_config_value_t **out)
{
    jp_t jp = {.ctx = ctx,
               .start = text,
               .p = text,
               .end = text + len,
               .line = first_line,
               .what = what,
               .whole_file = whole_file,
               .spare_commas = spare_commas};
    int rc = parse_value(&jp, out);
    if (rc != 0)
        return rc;
    skip_blanks(&jp);
    if (jp.p < jp.end)
        return fail(&jp, "unexpected text after the end of the JSON value");
    return 0;
}
