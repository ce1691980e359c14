/*
 * form_conf.c — the conf form of the configuration file, read line by line
 * into raw sections (docs/protocol.md, "The configuration file").
 *
 * 1.19 rewrites each line into JSON and parses the result; we recognise the
 * same line shapes directly and refuse everything else with a message that
 * names the line:
 *
 *   (blank) or "# ..."          ignored
 *   pattern|bindingKey|hostname: TOKEN ...
 *                               the first blank-free token, '#' included
 *   NAME {                      opens a section (top level only)
 *   NAME: {  /  $NAME: {        opens an attribute map (inside a section)
 *   NAME: VALUE                 an attribute; VALUE may not start with '{'
 *   }                           closes the innermost section or map
 *
 * Elsewhere '#' starts a comment. Values are the body of a JSON string
 * literal (escapes decoded, '"' refused). The maps named, as written,
 * openProperties or groups are taken as raw JSON up to the line that brings
 * the line-based brace count back to zero; as in 1.19, a ',' before a '}' or
 * ']' there is dropped (one-line groups each ending in ',').
 */
#include "config_private.h"

#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES 32

typedef struct {
    const char *name; /* as written */
    int line;
    jn_config_value_t *container; /* section: LIST of attrs; map: MAP */
    bool is_section;
} frame_t;

typedef struct {
    jn_config_ctx_t *ctx;
    frame_t frames[MAX_FRAMES];
    int depth;
    /* raw-JSON attribute map being collected */
    bool raw;
    int raw_depth, raw_line;
    const char *raw_name;
    char *raw_buf;
    size_t raw_len, raw_cap;
} conf_t;

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
           (c >= 0x1c && c <= 0x1f);
}

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

static void trim(const char **s, size_t *n)
{
    while (*n && is_blank(**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n && is_blank((*s)[*n - 1]))
        (*n)--;
}

static size_t name_len(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && is_name_char(s[i]))
        i++;
    return i;
}

static size_t skip_sp_tab(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i;
}

/* "NAME[ \t]*:[ \t]*" at s: the length of NAME (after `dollars` leading '$'
 * when allowed) and in *value the offset after the blanks; 0 when no match. */
static size_t attr_prefix(const char *s, size_t n, bool dollars, size_t *value)
{
    size_t i = 0;
    while (dollars && i < n && s[i] == '$')
        i++;
    size_t nl = name_len(s + i, n - i);
    if (nl == 0)
        return 0;
    size_t j = skip_sp_tab(s, n, i + nl);
    if (j >= n || s[j] != ':')
        return 0;
    *value = skip_sp_tab(s, n, j + 1);
    return i + nl;
}

/* Add a value under key to the innermost frame. */
static int frame_add(conf_t *st, const char *key, jn_config_value_t *v)
{
    frame_t *f = &st->frames[st->depth - 1];
    v->key = key;
    return f->is_section ? jn_config_value_append(st->ctx, f->container, v)
                         : jn_config_map_put(st->ctx, f->container, v);
}

static int add_text(conf_t *st, const char *name, size_t nlen, const char *val, size_t vlen,
                    int line)
{
    jn_config_ctx_t *ctx = st->ctx;
    char *key = jn_config_strndup(ctx, name, nlen);
    if (!key)
        return jn_config_nomem(ctx);
    if (st->depth == 0)
        return jn_config_fail(ctx, line, "attribute '%s' outside of any section", key);
    const char *what = jn_config_printf(ctx, "invalid value of '%s'", key);
    jn_config_value_t *v = jn_config_value_new(ctx, JN_CONFIG_STRING, line);
    if (!what || !v)
        return jn_config_nomem(ctx);
    int rc = jn_config_unescape(ctx, val, vlen, line, what, (char **)&v->s);
    return rc ? rc : frame_add(st, key, v);
}

static int open_frame(conf_t *st, const char *name, size_t nlen, bool is_section, int line)
{
    jn_config_ctx_t *ctx = st->ctx;
    char *key = jn_config_strndup(ctx, name, nlen);
    if (!key)
        return jn_config_nomem(ctx);
    if (is_section && st->depth > 0)
        return jn_config_fail(ctx, line,
                              "section '%s' cannot be opened inside '%s' (line %d); "
                              "is a '}' missing?",
                              key, st->frames[0].name, st->frames[0].line);
    if (!is_section && st->depth == 0)
        return jn_config_fail(ctx, line, "attribute '%s' outside of any section", key);
    if (st->depth == MAX_FRAMES)
        return jn_config_fail(ctx, line, "attribute maps nested too deeply");
    frame_t *f = &st->frames[st->depth];
    f->name = key;
    f->line = line;
    f->is_section = is_section;
    if (is_section) {
        jn_config_section_t *sec = jn_config_section_add(ctx, key, line);
        if (!sec)
            return jn_config_nomem(ctx);
        f->container = sec->attrs;
    } else if (strcmp(key, "openProperties") == 0 || strcmp(key, "groups") == 0) {
        st->raw = true;
        st->raw_depth = 1;
        st->raw_line = line;
        st->raw_name = key;
        st->raw_len = 0;
        return 0; /* no frame: the JSON text is collected instead */
    } else {
        f->container = jn_config_value_new(ctx, JN_CONFIG_MAP, line);
        if (!f->container)
            return jn_config_nomem(ctx);
    }
    st->depth++;
    return 0;
}

static int close_frame(conf_t *st, int line)
{
    if (st->depth == 0)
        return jn_config_fail(st->ctx, line, "'}' without an open section");
    frame_t *f = &st->frames[--st->depth];
    if (f->is_section)
        return 0;
    return frame_add(st, f->name, f->container);
}

static int raw_append(conf_t *st, const char *s, size_t n)
{
    if (st->raw_len + n + 1 > st->raw_cap) {
        size_t cap = st->raw_cap ? st->raw_cap : 1024;
        while (cap < st->raw_len + n + 1)
            cap *= 2;
        char *b = realloc(st->raw_buf, cap);
        if (!b)
            return jn_config_nomem(st->ctx);
        st->raw_buf = b;
        st->raw_cap = cap;
    }
    memcpy(st->raw_buf + st->raw_len, s, n);
    st->raw_len += n;
    return 0;
}

/* One line of a raw-JSON map (already trimmed). */
static int raw_line(conf_t *st, const char *s, size_t n)
{
    int rc = st->raw_len == 0 ? raw_append(st, "{\n", 2) : 0;
    bool comment = n == 0 || s[0] == '#';
    if (rc == 0 && !comment)
        rc = raw_append(st, s, n);
    if (rc == 0)
        rc = raw_append(st, "\n", 1);
    if (rc != 0 || comment)
        return rc;
    if (s[n - 1] == '{')
        st->raw_depth++;
    else if (s[n - 1] == '}')
        st->raw_depth--;
    if (st->raw_depth > 0)
        return 0;
    st->raw = false;
    jn_config_ctx_t *ctx = st->ctx;
    const char *what = jn_config_printf(ctx, "invalid JSON in '%s'", st->raw_name);
    if (!what)
        return jn_config_nomem(ctx);
    jn_config_value_t *v = NULL;
    rc = jn_config_json_parse(ctx, st->raw_buf, st->raw_len, st->raw_line, what, false, true, &v);
    if (rc != 0)
        return rc;
    v->line = st->raw_line;
    return frame_add(st, st->raw_name, v);
}

/* Explain a line that has none of the accepted shapes. */
static int syntax_error(conf_t *st, const char *s, size_t n, int line)
{
    size_t v = 0;
    size_t nl = name_len(s, n);
    bool has_open = memchr(s, '{', n) != NULL;
    if (attr_prefix(s, n, true, &v) && v < n && s[v] == '{')
        return jn_config_fail(st->ctx, line,
                              "invalid syntax: a map cannot be written on one "
                              "line; put '{' last on the line and each entry on its own line");
    size_t after = skip_sp_tab(s, n, nl);
    if (nl && has_open && after < n && s[after] == '{')
        return jn_config_fail(st->ctx, line,
                              "invalid syntax: a section cannot be written on one "
                              "line; put '{' last on the line and each attribute on its own line");
    if (s[0] == '}')
        return jn_config_fail(st->ctx, line, "invalid syntax: '}' must be alone on its line");
    if (attr_prefix(s, n, false, &v) && v == n)
        return jn_config_fail(st->ctx, line, "invalid syntax: attribute '%.*s' has no value",
                              (int)name_len(s, n), s);
    return jn_config_fail(st->ctx, line, "invalid syntax: expected 'name {', 'name: value' or '}'");
}

static int conf_line(conf_t *st, const char *s, size_t n, int line)
{
    static const char *const keep_hash[] = {"pattern", "bindingKey", "hostname"};
    if (memchr(s, '\0', n))
        return jn_config_fail(st->ctx, line, "NUL byte in the file");
    trim(&s, &n);
    if (st->raw)
        return raw_line(st, s, n);
    if (n == 0 || s[0] == '#')
        return 0;
    size_t v = 0, nl = attr_prefix(s, n, false, &v);
    for (size_t k = 0; nl && v < n && k < 3; k++) {
        if (strlen(keep_hash[k]) == nl && memcmp(s, keep_hash[k], nl) == 0) {
            size_t e = v;
            while (e < n && !is_blank(s[e]))
                e++;
            return add_text(st, s, nl, s + v, e - v, line);
        }
    }
    const char *hash = memchr(s, '#', n);
    if (hash)
        n = (size_t)(hash - s);
    trim(&s, &n);
    if (n == 1 && s[0] == '}')
        return close_frame(st, line);
    if (s[n - 1] == '{') {
        size_t body = n - 1;
        while (body && (s[body - 1] == ' ' || s[body - 1] == '\t'))
            body--;
        if (body && name_len(s, body) == body)
            return open_frame(st, s, body, true, line);
        nl = attr_prefix(s, body, true, &v);
        if (nl && v == body)
            return open_frame(st, s, nl, false, line);
    }
    nl = attr_prefix(s, n, false, &v);
    if (nl && v < n && s[v] != '{')
        return add_text(st, s, nl, s + v, n - v, line);
    return syntax_error(st, s, n, line);
}

int jn_config_read_conf(jn_config_ctx_t *ctx, const char *text, size_t len)
{
    conf_t st = {.ctx = ctx};
    const char *p = text, *end = text + len;
    int line = 0, rc = 0;
    while (p < end && rc == 0) {
        line++;
        const char *eol = p;
        while (eol < end && *eol != '\n' && *eol != '\r')
            eol++;
        rc = conf_line(&st, p, (size_t)(eol - p), line);
        p = eol;
        if (p < end)
            p += (*p == '\r' && p + 1 < end && p[1] == '\n') ? 2 : 1;
    }
    free(st.raw_buf);
    if (rc != 0)
        return rc;
    if (st.raw)
        return jn_config_fail(ctx, st.raw_line, "attribute map '%s' is not closed", st.raw_name);
    if (st.depth > 0) {
        frame_t *f = &st.frames[st.depth - 1];
        return jn_config_fail(ctx, f->line, "%s '%s' is not closed",
                              f->is_section ? "section" : "attribute map", f->name);
    }
    return 0;
}
