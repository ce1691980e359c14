/*
 * validate.c — from raw sections to entities (docs/protocol.md, "The configuration file"): section and attribute names normalised to camelCase, the section
 * mapped to its entity type, each attribute found by name or by its old
 * (deprecated) name and converted to its type, required attributes checked,
 * defaults filled in, at most one section per singleton type, and the router
 * and policy singletons added when the file has none.
 *
 * The schema's `create` flag is not checked: like 1.19, a file may set any
 * attribute of its type.
 */
#include "config_private.h"

#include <string.h>

/* The special defaults of the DEFAULT log module (qdrouterd 1.19 gives them
 * to `log { module: DEFAULT }`; the schema has no defaults for these). */
static const struct {
    const char *attr, *value;
} log_default_defaults[] = {
    {"enable", "info+"},
    {"includeTimestamp", "true"},
    {"includeSource", "false"},
    {"outputFile", "stderr"},
};

/* Singletons added with all defaults when the file has none. */
static const char *const implied_singletons[] = {"router", "policy"};

static bool is_separator(char c)
{
    return c == ' ' || c == '\t' || c == '_' || c == '-' || c == '.';
}

static char ascii_upper(char c)
{
    return (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
}

static char ascii_lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

char *jn_config_camel_case(jn_config_ctx_t *ctx, const char *name)
{
    size_t len = strlen(name), n = 0;
    char *out = jn_config_alloc(ctx, len + 1);
    if (!out)
        return NULL;
    bool first_part = true, part_start = false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (is_separator(c)) {
            first_part = false;
            part_start = true;
        } else if (first_part) {
            out[n++] = c;
        } else {
            out[n++] = part_start ? ascii_upper(c) : ascii_lower(c);
            part_start = false;
        }
    }
    out[n] = '\0';
    return out;
}

static const jn_schema_type_t *section_type(const char *camel)
{
    for (size_t i = 0; i < jn_schema_type_count(); i++) {
        const jn_schema_type_t *t = jn_schema_type_at(i);
        if (strcmp(jn_schema_type_short_name(t), camel) == 0)
            return t;
    }
    return NULL;
}

static int add_entity(jn_config_ctx_t *ctx, jn_config_entity_t *e)
{
    jn_config_t *cfg = ctx->cfg;
    if (cfg->entity_count == cfg->entity_cap) {
        size_t cap = cfg->entity_cap ? cfg->entity_cap * 2 : 16;
        jn_config_entity_t **a = jn_config_alloc(ctx, cap * sizeof(*a));
        if (!a)
            return jn_config_nomem(ctx);
        if (cfg->entity_count)
            memcpy(a, cfg->entities, cfg->entity_count * sizeof(*a));
        cfg->entities = a;
        cfg->entity_cap = cap;
    }
    cfg->entities[cfg->entity_count++] = e;
    return 0;
}

static jn_config_entity_t *new_entity(jn_config_ctx_t *ctx, const jn_schema_type_t *type,
                                      const char *section, int line)
{
    jn_config_entity_t *e = jn_config_alloc(ctx, sizeof(*e));
    if (!e)
        return NULL;
    e->type = type;
    e->section = section;
    e->line = line;
    e->values = jn_config_alloc(ctx, jn_schema_type_attr_count(type) * sizeof(*e->values) + 1);
    return e->values ? e : NULL;
}

/* Where each attribute of the entity being built was given. */
typedef struct {
    const jn_config_value_t *item; /* the last item giving it; NULL: not given */
    bool via_old;                  /* given under its deprecated name */
} given_t;

/* Resolve one attribute as written (item->key) to the attribute of e's type
 * it sets, in *out (NULL for an ignored one); an attribute given twice in
 * one section (under any spelling) is refused, naming the first line. */
static int resolve_attr(jn_config_ctx_t *ctx, const jn_config_entity_t *e, given_t *given,
                        const jn_config_value_t *item, const jn_schema_attr_t **out)
{
    *out = NULL;
    const char *tname = jn_schema_type_short_name(e->type);
    const char *name = jn_config_camel_case(ctx, item->key);
    if (!name)
        return jn_config_nomem(ctx);
    if (strcmp(name, "identity") == 0)
        return jn_config_fail(ctx, item->line,
                              "%s attribute 'identity' cannot be set "
                              "(identities are assigned by the router)",
                              tname);
    if (strcmp(name, "type") == 0)
        return jn_config_warn(ctx, item->line,
                              "%s attribute 'type' ignored (the section "
                              "name gives the type)",
                              tname);
    const jn_schema_attr_t *attr = jn_schema_attr_find(e->type, name);
    if (!attr) {
        if (strcmp(name, item->key) != 0)
            return jn_config_fail(ctx, item->line,
                                  "unknown attribute '%s' (written '%s') in "
                                  "section '%s'",
                                  jn_config_quote(ctx, name), jn_config_quote(ctx, item->key),
                                  tname);
        return jn_config_fail(ctx, item->line, "unknown attribute '%s' in section '%s'",
                              jn_config_quote(ctx, name), tname);
    }
    const char *aname = jn_schema_attr_name(attr);
    bool via_old = strcmp(aname, name) != 0;
    given_t *g = &given[jn_schema_attr_index(attr)];
    int rc = 0;
    if (g->item && g->via_old != via_old) {
        const char *old = jn_schema_attr_deprecation_name(attr);
        /* 1.19's words (operators and its tests read them), then where */
        return jn_config_fail(ctx, item->line,
                              "%s: Both '%s' and '%s' cannot be specified for entity '%s' "
                              "(the old name of '%s'; the other is at line %d)",
                              jn_schema_type_full_name(e->type), old, aname, tname, aname,
                              g->item->line);
    }
    if (g->item) /* 1.19 keeps the last silently; one of the two is a mistake */
        return jn_config_fail(ctx, item->line,
                              "%s attribute '%s' is set twice in one section (first at line %d)",
                              tname, aname, g->item->line);
    if (via_old)
        rc = jn_config_warn(ctx, item->line,
                            "Attribute '%s' of entity '%s' has been deprecated. Use '%s' instead",
                            name, tname, aname);
    if (rc == 0 && (jn_schema_attr_flags(attr) & JN_SCHEMA_ATTR_DEPRECATED))
        rc = jn_config_warn(ctx, item->line, "%s attribute '%s' is deprecated", tname, aname);
    if (rc != 0)
        return rc;
    g->item = item;
    g->via_old = via_old;
    *out = attr;
    return 0;
}

/* Resolve every attribute of sec, then convert the winning values in file
 * order. */
static int take_attrs(jn_config_ctx_t *ctx, jn_config_entity_t *e, const jn_config_section_t *sec)
{
    size_t n = sec->attrs->count;
    given_t *given = jn_config_alloc(ctx, jn_schema_type_attr_count(e->type) * sizeof(*given) + 1);
    const jn_schema_attr_t **attrs = jn_config_alloc(ctx, n * sizeof(*attrs) + 1);
    if (!given || !attrs)
        return jn_config_nomem(ctx);
    for (size_t i = 0; i < n; i++) {
        int rc = resolve_attr(ctx, e, given, sec->attrs->items[i], &attrs[i]);
        if (rc != 0)
            return rc;
    }
    /* every value that cannot be converted is reported, not only the first */
    const char *tname = jn_schema_type_short_name(e->type);
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        const jn_config_value_t *item = sec->attrs->items[i];
        size_t idx = attrs[i] ? jn_schema_attr_index(attrs[i]) : 0;
        if (!attrs[i] || given[idx].item != item)
            continue;
        int rc = jn_config_convert(ctx, tname, attrs[i], item, &e->values[idx]);
        if (rc == JN_EINVAL)
            failed = rc;
        else if (rc != 0)
            return rc;
    }
    return failed;
}

/* A default value for attr from text (schema or special defaults). */
static int set_default(jn_config_ctx_t *ctx, jn_config_entity_t *e, const jn_schema_attr_t *attr,
                       const char *text)
{
    jn_config_value_t raw = {.kind = JN_CONFIG_STRING, .s = text};
    jn_config_value_t **slot = &e->values[jn_schema_attr_index(attr)];
    int rc = jn_config_convert(ctx, jn_schema_type_short_name(e->type), attr, &raw, slot);
    if (rc == 0)
        (*slot)->is_default = true;
    return rc;
}

static int fill_defaults(jn_config_ctx_t *ctx, jn_config_entity_t *e)
{
    const jn_schema_type_t *t = e->type;
    if (strcmp(jn_schema_type_name(t), "log") == 0) {
        const char *module = jn_config_entity_string(e, "module");
        for (size_t i = 0; module && strcmp(module, "DEFAULT") == 0 && i < 4; i++) {
            const jn_schema_attr_t *attr = jn_schema_attr_find(t, log_default_defaults[i].attr);
            if (attr && !e->values[jn_schema_attr_index(attr)]) {
                int rc = set_default(ctx, e, attr, log_default_defaults[i].value);
                if (rc != 0)
                    return rc;
            }
        }
    }
    for (size_t i = 0; i < jn_schema_type_attr_count(t); i++) {
        const jn_schema_attr_t *attr = jn_schema_type_attr_at(t, i);
        const char *text = jn_schema_attr_default(attr);
        if (text && !e->values[i]) {
            int rc = set_default(ctx, e, attr, text);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

/* Whether e lacks a required attribute (check_required without the error). */
static bool missing_required(const jn_config_entity_t *e)
{
    for (size_t i = 0; i < jn_schema_type_attr_count(e->type); i++) {
        const jn_schema_attr_t *attr = jn_schema_type_attr_at(e->type, i);
        if (jn_schema_attr_required(attr) && !e->values[i] &&
            strcmp(jn_schema_attr_name(attr), "type") != 0)
            return true;
    }
    return false;
}

static int check_required(jn_config_ctx_t *ctx, const jn_config_entity_t *e)
{
    for (size_t i = 0; i < jn_schema_type_attr_count(e->type); i++) {
        const jn_schema_attr_t *attr = jn_schema_type_attr_at(e->type, i);
        if (jn_schema_attr_required(attr) && !e->values[i] &&
            strcmp(jn_schema_attr_name(attr), "type") != 0)
            return jn_config_fail(ctx, e->line, "section '%s' is missing required attribute '%s'",
                                  jn_schema_type_short_name(e->type), jn_schema_attr_name(attr));
    }
    return 0;
}

static int check_singleton(jn_config_ctx_t *ctx, const jn_schema_type_t *type, int line)
{
    if (!(jn_schema_type_flags(type) & JN_SCHEMA_TYPE_SINGLETON))
        return 0;
    const jn_config_entity_t *first = jn_config_find(ctx->cfg, type);
    if (!first)
        return 0;
    return jn_config_fail(ctx, line,
                          "a second '%s' section; only one is allowed (the first is "
                          "at line %d)",
                          jn_schema_type_short_name(type), first->line);
}

static int build_entity(jn_config_ctx_t *ctx, const jn_config_section_t *sec)
{
    const char *camel = jn_config_camel_case(ctx, sec->name);
    if (!camel)
        return jn_config_nomem(ctx);
    const jn_schema_type_t *type = section_type(camel);
    if (!type)
        return jn_config_fail(ctx, sec->line,
                              "unknown section '%s' (no such entity type "
                              "'%s.%s')",
                              jn_config_quote(ctx, sec->name), JN_SCHEMA_PREFIX,
                              jn_config_quote(ctx, camel));
    if (!(jn_schema_type_flags(type) & JN_SCHEMA_TYPE_CONFIG))
        return jn_config_fail(ctx, sec->line,
                              "section '%s': entity type '%s' cannot be "
                              "configured in a file",
                              jn_config_quote(ctx, sec->name), jn_schema_type_full_name(type));
    int rc = check_singleton(ctx, type, sec->line);
    if (rc == 0 && (jn_schema_type_flags(type) & JN_SCHEMA_TYPE_DEPRECATED))
        rc = jn_config_warn(ctx, sec->line, "section '%s' is deprecated", camel);
    if (rc != 0)
        return rc;
    jn_config_entity_t *e = new_entity(ctx, type, sec->name, sec->line);
    if (!e)
        return jn_config_nomem(ctx);
    rc = take_attrs(ctx, e, sec);
    if (rc == JN_EINVAL && ctx->keep_going && !missing_required(e)) {
        /* --check: the section's other values are checked further, its
         * wrong ones left out (their errors are named already) */
        rc = fill_defaults(ctx, e);
        if (rc == 0)
            rc = add_entity(ctx, e);
        return rc ? rc : JN_EINVAL;
    }
    if (rc == 0)
        rc = check_required(ctx, e);
    if (rc == 0)
        rc = fill_defaults(ctx, e);
    return rc ? rc : add_entity(ctx, e);
}

int jn_config_validate(jn_config_ctx_t *ctx)
{
    /* A section that is wrong is reported and the next one checked, so one
     * load names every such error (jn_config_fail appends); the first
     * other failure (out of memory) stops. */
    int failed = 0;
    for (size_t i = 0; i < ctx->section_count; i++) {
        int rc = build_entity(ctx, &ctx->sections[i]);
        if (rc == JN_EINVAL)
            failed = rc;
        else if (rc != 0)
            return rc;
    }
    if (failed && !ctx->keep_going)
        return failed;
    for (size_t i = 0; i < sizeof(implied_singletons) / sizeof(implied_singletons[0]); i++) {
        const jn_schema_type_t *type = jn_schema_type_find(implied_singletons[i]);
        if (!type || jn_config_find(ctx->cfg, type))
            continue;
        jn_config_entity_t *e = new_entity(ctx, type, jn_schema_type_short_name(type), 0);
        if (!e)
            return jn_config_nomem(ctx);
        int rc = fill_defaults(ctx, e);
        if (rc == 0)
            rc = add_entity(ctx, e);
        if (rc != 0)
            return rc;
    }
    return failed;
}
