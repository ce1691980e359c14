/*
 * config.c — the public face of the config parser: loading a file or a
 * string, the arena every configuration lives in, error and warning text, and
 * the read accessors of entities and values.
 *
 * A load builds everything in one arena (a list of chunks) hanging off the
 * jn_config_t, so freeing a configuration is one walk over its chunks, and a
 * failed load frees whatever it had built the same way.
 */
#include "config_private.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JN_CONFIG_MAX_FILE (64u * 1024 * 1024) /* a larger file is refused */
#define CHUNK_SIZE         16384

struct jn_config_chunk {
    jn_config_chunk_t *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
};

/* ---- arena ---- */

void *jn_config_alloc(jn_config_ctx_t *ctx, size_t size)
{
    jn_config_t *cfg = ctx->cfg;
    size = (size + 15) & ~(size_t)15;
    jn_config_chunk_t *c = cfg->chunks;
    if (!c || c->size - c->used < size) {
        size_t cap = size > CHUNK_SIZE ? size : CHUNK_SIZE;
        c = malloc(sizeof(*c) + cap);
        if (!c)
            return NULL;
        c->size = cap;
        c->used = 0;
        c->next = cfg->chunks;
        cfg->chunks = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

char *jn_config_strndup(jn_config_ctx_t *ctx, const char *s, size_t len)
{
    char *p = jn_config_alloc(ctx, len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

static char *vprintf_arena(jn_config_ctx_t *ctx, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return NULL;
    char *p = jn_config_alloc(ctx, (size_t)n + 1);
    if (p)
        vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *jn_config_printf(jn_config_ctx_t *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = vprintf_arena(ctx, fmt, ap);
    va_end(ap);
    return p;
}

/* ---- messages ---- */

static void format_located(char *buf, size_t size, const char *file, int line, const char *fmt,
                           va_list ap)
{
    if (!buf || size == 0)
        return;
    int n =
        line > 0 ? snprintf(buf, size, "%s:%d: ", file, line) : snprintf(buf, size, "%s: ", file);
    if (n < 0 || (size_t)n >= size)
        return;
    vsnprintf(buf + n, size - (size_t)n, fmt, ap);
}

int jn_config_fail(jn_config_ctx_t *ctx, int line, const char *fmt, ...)
{
    /* a second error goes on a line of its own after the first */
    char *buf = ctx->err;
    size_t size = ctx->err_size;
    size_t used = buf && size ? strnlen(buf, size) : 0;
    if (used && used + 2 < size) {
        buf[used++] = '\n';
        buf[used] = '\0';
    } else if (used) {
        return JN_EINVAL; /* full: the first errors are kept */
    }
    va_list ap;
    va_start(ap, fmt);
    format_located(buf ? buf + used : NULL, size - used, ctx->file, line, fmt, ap);
    va_end(ap);
    return JN_EINVAL;
}

int jn_config_nomem(jn_config_ctx_t *ctx)
{
    if (ctx->err && ctx->err_size)
        snprintf(ctx->err, ctx->err_size, "%s: out of memory", ctx->file);
    return JN_ENOMEM;
}

int jn_config_warn(jn_config_ctx_t *ctx, int line, const char *fmt, ...)
{
    char buf[JN_CONFIG_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    format_located(buf, sizeof(buf), ctx->file, line, fmt, ap);
    va_end(ap);
    jn_config_t *cfg = ctx->cfg;
    if (cfg->warning_count == cfg->warning_cap) {
        size_t cap = cfg->warning_cap ? cfg->warning_cap * 2 : 8;
        const char **w = jn_config_alloc(ctx, cap * sizeof(*w));
        if (!w)
            return jn_config_nomem(ctx);
        if (cfg->warning_count)
            memcpy(w, cfg->warnings, cfg->warning_count * sizeof(*w));
        cfg->warnings = w;
        cfg->warning_cap = cap;
    }
    const char *copy = jn_config_strndup(ctx, buf, strlen(buf));
    if (!copy)
        return jn_config_nomem(ctx);
    cfg->warnings[cfg->warning_count++] = copy;
    return 0;
}

const char *jn_config_quote(jn_config_ctx_t *ctx, const char *text)
{
    enum { MAX = 60 };
    size_t len = strlen(text);
    size_t keep = len > MAX ? MAX : len;
    char *q = jn_config_alloc(ctx, keep + 4);
    if (!q)
        return "?";
    for (size_t i = 0; i < keep; i++) {
        unsigned char c = (unsigned char)text[i];
        q[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (len > MAX)
        memcpy(q + keep, "...", 4);
    else
        q[keep] = '\0';
    return q;
}

/* ---- values ---- */

jn_config_value_t *jn_config_value_new(jn_config_ctx_t *ctx, jn_config_kind_t kind, int line)
{
    jn_config_value_t *v = jn_config_alloc(ctx, sizeof(*v));
    if (v) {
        v->kind = (uint8_t)kind;
        v->line = line;
    }
    return v;
}

int jn_config_value_append(jn_config_ctx_t *ctx, jn_config_value_t *container,
                           jn_config_value_t *item)
{
    if (container->count == container->cap) {
        size_t cap = container->cap ? container->cap * 2 : 8;
        jn_config_value_t **items = jn_config_alloc(ctx, cap * sizeof(*items));
        if (!items)
            return jn_config_nomem(ctx);
        if (container->count)
            memcpy(items, container->items, container->count * sizeof(*items));
        container->items = items;
        container->cap = cap;
    }
    container->items[container->count++] = item;
    return 0;
}

int jn_config_map_put(jn_config_ctx_t *ctx, jn_config_value_t *map, jn_config_value_t *item)
{
    for (size_t i = 0; i < map->count; i++) {
        if (strcmp(map->items[i]->key, item->key) == 0) {
            map->items[i] = item;
            return 0;
        }
    }
    return jn_config_value_append(ctx, map, item);
}

jn_config_section_t *jn_config_section_add(jn_config_ctx_t *ctx, const char *name, int line)
{
    if (ctx->section_count == ctx->section_cap) {
        size_t cap = ctx->section_cap ? ctx->section_cap * 2 : 16;
        jn_config_section_t *s = jn_config_alloc(ctx, cap * sizeof(*s));
        if (!s)
            return NULL;
        if (ctx->section_count)
            memcpy(s, ctx->sections, ctx->section_count * sizeof(*s));
        ctx->sections = s;
        ctx->section_cap = cap;
    }
    jn_config_section_t *sec = &ctx->sections[ctx->section_count];
    sec->name = name;
    sec->line = line;
    sec->attrs = jn_config_value_new(ctx, JN_CONFIG_LIST, line);
    if (!sec->attrs)
        return NULL;
    ctx->section_count++;
    return sec;
}

/* ---- loading ---- */

/* Length of the well-formed UTF-8 sequence at s (n octets left): 1 to 4, or
 * 0 when it is not one (a stray continuation octet, a truncated sequence,
 * an overlong form, a surrogate or a code point past U+10FFFF — what
 * Python's strict UTF-8 decoder, which 1.19 reads the file with, refuses). */
static size_t utf8_length(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4
                                          : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) || (c == 0xf0 && s[1] < 0x90) ||
        (c == 0xf4 && s[1] > 0x8f))
        return 0; /* overlong, surrogate, or past U+10FFFF */
    return len;
}

/* Refuse a NUL octet or text that is not UTF-8, naming the line (lines end
 * at "\n", "\r\n" or "\r", as both readers count them) and the column. */
static int check_text(jn_config_ctx_t *ctx, const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + len, *bol = p;
    int line = 1;
    while (p < end) {
        if (*p == '\n' || *p == '\r') {
            p += (*p == '\r' && p + 1 < end && p[1] == '\n') ? 2 : 1;
            line++;
            bol = p;
            continue;
        }
        if (*p == '\0')
            return jn_config_fail(ctx, line, "NUL byte in the file");
        size_t n = utf8_length(p, (size_t)(end - p));
        if (n == 0)
            return jn_config_fail(ctx, line, "invalid UTF-8 (octet 0x%02x at column %zu)", *p,
                                  (size_t)(p - bol) + 1);
        p += n;
    }
    return 0;
}

static bool is_json_name(const char *name)
{
    size_t n = strlen(name);
    return n >= 5 && strcmp(name + n - 5, ".json") == 0;
}

/* append_warnings: a file that is refused still shows its warnings (a
 * deprecated name, ...) after its errors, one a line in err. */
static void append_warnings(jn_config_ctx_t *ctx)
{
    size_t used = ctx->err && ctx->err_size ? strnlen(ctx->err, ctx->err_size) : 0;
    for (size_t i = 0; used && i < ctx->cfg->warning_count; i++) {
        int n = snprintf(ctx->err + used, ctx->err_size - used, "\n%s", ctx->cfg->warnings[i]);
        if (n < 0 || (size_t)n >= ctx->err_size - used) {
            ctx->err[used] = '\0'; /* full: the errors are kept whole */
            return;
        }
        used += (size_t)n;
    }
}

/* load_text: jn_config_load_string; keep_going as jn_config_load_file_all. */
static int load_text(const char *display_name, const char *text, size_t len, jn_config_t **out,
                     char *err, size_t err_size, bool keep_going)
{
    *out = NULL;
    if (err && err_size)
        err[0] = '\0';
    if (!display_name)
        display_name = "(string)";
    jn_config_ctx_t ctx = {
        .file = display_name, .err = err, .err_size = err_size, .keep_going = keep_going};
    if (len == 0) {
        jn_config_fail(&ctx, 0, "configuration file was empty");
        return JN_ENOENT;
    }
    jn_config_t *cfg = calloc(1, sizeof(*cfg));
    if (!cfg)
        return jn_config_nomem(&ctx);
    ctx.cfg = cfg;
    int rc = 0;
    cfg->name = jn_config_strndup(&ctx, display_name, strlen(display_name));
    if (!cfg->name)
        rc = jn_config_nomem(&ctx);
    if (rc == 0)
        rc = check_text(&ctx, text, len);
    if (rc == 0)
        rc = is_json_name(display_name) ? jn_config_read_json(&ctx, text, len)
                                        : jn_config_read_conf(&ctx, text, len);
    bool partial = false; /* keep_going past sections with errors */
    if (rc == 0) {
        rc = jn_config_validate(&ctx);
        /* the sections with errors are left out; the checks across
         * entities still run on the others */
        partial = keep_going && (rc == 0 || rc == JN_EINVAL);
    }
    if (rc == 0 || partial) {
        int rc2 = jn_config_check(&ctx);
        rc = rc ? (rc2 == JN_ENOMEM ? rc2 : rc) : rc2;
    }
    if (rc != 0 && !(partial && rc == JN_EINVAL)) {
        append_warnings(&ctx);
        jn_config_free(cfg);
        return rc;
    }
    *out = cfg;
    return rc;
}

int jn_config_load_string(const char *display_name, const char *text, size_t len, jn_config_t **out,
                          char *err, size_t err_size)
{
    return load_text(display_name, text, len, out, err, err_size, false);
}

/* Read the whole file into a malloc'd buffer; noun names it in messages
 * ("configuration file"). */
static int read_file(jn_config_ctx_t *ctx, const char *path, const char *noun, char **text,
                     size_t *len)
{
    /* Only a regular file: a FIFO or a device could block the reader (a
     * reload runs on the core thread) or never end. O_NONBLOCK so that
     * opening a FIFO does not wait for a writer. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        jn_config_fail(ctx, 0, "%s could not be opened: %s", noun, strerror(errno));
        if (fd >= 0)
            close(fd);
        return JN_ENOENT;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        jn_config_fail(ctx, 0, "%s is not a regular file", noun);
        return JN_ENOENT;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        jn_config_fail(ctx, 0, "%s could not be opened: %s", noun, strerror(errno));
        return JN_ENOENT;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    int rc = buf ? 0 : jn_config_nomem(ctx);
    while (rc == 0) {
        if (n == cap) {
            char *nb = cap < JN_CONFIG_MAX_FILE ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                rc = cap < JN_CONFIG_MAX_FILE
                         ? jn_config_nomem(ctx)
                         : jn_config_fail(ctx, 0, "%s is too large", noun);
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                jn_config_fail(ctx, 0, "%s could not be read: %s", noun, strerror(errno));
                rc = JN_ENOENT;
            }
            break;
        }
    }
    fclose(f);
    if (rc == 0 && n == 0) {
        jn_config_fail(ctx, 0, "%s was empty", noun);
        rc = JN_ENOENT;
    }
    if (rc != 0) {
        free(buf);
        return rc;
    }
    *text = buf;
    *len = n;
    return 0;
}

/* jn_config_load_file and jn_config_load_file_all: keep_going as load_text. */
static int load_file(const char *path, jn_config_t **out, char *err, size_t err_size,
                     bool keep_going)
{
    *out = NULL;
    if (err && err_size)
        err[0] = '\0';
    jn_config_ctx_t ctx = {.file = path, .err = err, .err_size = err_size};
    char *text = NULL;
    size_t len = 0;
    int rc = read_file(&ctx, path, "configuration file", &text, &len);
    if (rc != 0)
        return rc;
    rc = load_text(path, text, len, out, err, err_size, keep_going);
    free(text);
    return rc;
}

int jn_config_load_file(const char *path, jn_config_t **out, char *err, size_t err_size)
{
    return load_file(path, out, err, err_size, false);
}

int jn_config_load_file_all(const char *path, jn_config_t **out, char *err, size_t err_size)
{
    return load_file(path, out, err, err_size, true);
}

int jn_config_load_string_map(const char *path, const char *noun, jn_config_strmap_t *out,
                              char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    if (err && err_size)
        err[0] = '\0';
    jn_config_ctx_t ctx = {.file = path, .err = err, .err_size = err_size};
    char *text = NULL;
    size_t len = 0;
    int rc = read_file(&ctx, path, noun, &text, &len);
    if (rc != 0)
        return rc == JN_ENOMEM ? rc : JN_EINVAL;
    jn_config_t *cfg = calloc(1, sizeof(*cfg));
    if (!cfg) {
        free(text);
        return jn_config_nomem(&ctx);
    }
    ctx.cfg = cfg;
    jn_config_value_t *root = NULL;
    rc = check_text(&ctx, text, len);
    if (rc == 0)
        rc = jn_config_json_parse(&ctx, text, len, 1, "invalid JSON", true, false, &root);
    free(text);
    if (rc == 0 && root->kind != JN_CONFIG_MAP)
        rc = jn_config_fail(&ctx, root->line, "%s is not a JSON object", noun);
    for (size_t k = 0; rc == 0 && k < root->count; k++) {
        const jn_config_value_t *v = root->items[k];
        if (v->kind != JN_CONFIG_STRING)
            rc = jn_config_fail(&ctx, v->line, "the value of '%s' is not a string",
                                jn_config_quote(&ctx, v->key));
    }
    if (rc == 0 && root->count) {
        out->keys = calloc(root->count, sizeof *out->keys);
        out->values = calloc(root->count, sizeof *out->values);
        if (!out->keys || !out->values)
            rc = jn_config_nomem(&ctx);
        for (size_t k = 0; rc == 0 && k < root->count; k++) {
            out->keys[k] = strdup(root->items[k]->key);
            out->values[k] = strdup(root->items[k]->s);
            out->count = k + 1;
            if (!out->keys[k] || !out->values[k])
                rc = jn_config_nomem(&ctx);
        }
    }
    jn_config_free(cfg);
    if (rc != 0)
        jn_config_strmap_clear(out);
    return rc;
}

void jn_config_strmap_clear(jn_config_strmap_t *m)
{
    for (size_t k = 0; k < m->count; k++) {
        free(m->keys ? m->keys[k] : NULL);
        free(m->values ? m->values[k] : NULL);
    }
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

void jn_config_free(jn_config_t *cfg)
{
    if (!cfg)
        return;
    jn_config_chunk_t *c = cfg->chunks;
    while (c) {
        jn_config_chunk_t *next = c->next;
        free(c);
        c = next;
    }
    free(cfg);
}

/* ---- configuration accessors ---- */

const char *jn_config_name(const jn_config_t *cfg)
{
    return cfg->name;
}

size_t jn_config_warning_count(const jn_config_t *cfg)
{
    return cfg->warning_count;
}

const char *jn_config_warning_at(const jn_config_t *cfg, size_t index)
{
    return index < cfg->warning_count ? cfg->warnings[index] : NULL;
}

size_t jn_config_entity_count(const jn_config_t *cfg)
{
    return cfg->entity_count;
}

const jn_config_entity_t *jn_config_entity_at(const jn_config_t *cfg, size_t index)
{
    return index < cfg->entity_count ? cfg->entities[index] : NULL;
}

const jn_config_entity_t *jn_config_find(const jn_config_t *cfg, const jn_schema_type_t *type)
{
    for (size_t i = 0; i < cfg->entity_count; i++)
        if (cfg->entities[i]->type == type)
            return cfg->entities[i];
    return NULL;
}
