/*
 * checks.c — what 1.19 checks across entities before it starts
 * (docs/protocol.md, "The configuration file"), and the identities it gives them:
 *
 *   - identities ("listener/<host>:<port>[:<name>]", "log/<module>",
 *     "router/<id>", "address/<n>", ...) and names (the configured name, else
 *     the identity), both unique across all entities;
 *   - router.id at most 127 characters, without whitespace or control
 *     characters;
 *   - listener/connector roles against the router mode;
 *   - openProperties: not with the inter-router and edge roles, no reserved
 *     keys;
 *   - saslPlugin names an authServicePlugin.
 *
 * Problems 1.19 only logs while creating entities (an address with both
 * prefix and pattern, a missing sslProfile, ...) are the runtime's to report.
 */
#include "config_private.h"

#include <junction/hash.h>

#include <string.h>

#define ROUTER_ID_MAX 127

/* The result of two checks: out of memory wins, then a refusal. */
static int worse(int a, int b)
{
    return a == JN_ENOMEM || b == JN_ENOMEM ? JN_ENOMEM : (a ? a : b);
}

static bool type_is(const jn_config_entity_t *e, const char *name)
{
    return strcmp(jn_schema_type_name(e->type), name) == 0;
}

static bool is_connection_config(const jn_config_entity_t *e)
{
    return type_is(e, "listener") || type_is(e, "connector");
}

static const char *text_or_none(const jn_config_entity_t *e, const char *attr)
{
    const char *s = jn_config_entity_string(e, attr);
    return s ? s : "None";
}

static int line_of(const jn_config_entity_t *e, const char *attr)
{
    const jn_config_value_t *v = jn_config_entity_get(e, attr);
    return v && v->line ? v->line : e->line;
}

/* 1.19's identity for e; counters[] holds the per-type counters. */
static const char *identity_of(jn_config_ctx_t *ctx, const jn_config_entity_t *e,
                               unsigned *counters)
{
    const char *t = jn_schema_type_short_name(e->type);
    const char *configured = jn_config_entity_string(e, "name");
    if (is_connection_config(e))
        return jn_config_printf(ctx, "%s/%s:%s%s%s", t, text_or_none(e, "host"),
                                text_or_none(e, "port"), configured ? ":" : "",
                                configured ? configured : "");
    if (type_is(e, "log"))
        return jn_config_printf(ctx, "%s/%s", t, text_or_none(e, "module"));
    if (type_is(e, "sslProfile") || type_is(e, "authServicePlugin"))
        return jn_config_printf(ctx, "%s/%s", t, text_or_none(e, "name"));
    if (type_is(e, "vhost"))
        return jn_config_printf(ctx, "%s/%s", t, text_or_none(e, "hostname"));
    if (type_is(e, "router"))
        return jn_config_printf(ctx, "%s/%s", t, text_or_none(e, "id"));
    if (type_is(e, "policy"))
        return jn_config_printf(ctx, "%s/None", t);
    return jn_config_printf(ctx, "%s/%u", t, counters[jn_schema_type_index(e->type)]++);
}

static int assign_identities(jn_config_ctx_t *ctx)
{
    jn_config_t *cfg = ctx->cfg;
    unsigned *counters = jn_config_alloc(ctx, jn_schema_type_count() * sizeof(unsigned));
    if (!counters)
        return jn_config_nomem(ctx);
    for (size_t i = 0; i < cfg->entity_count; i++) {
        jn_config_entity_t *e = cfg->entities[i];
        e->identity = identity_of(ctx, e, counters);
        if (!e->identity)
            return jn_config_nomem(ctx);
        const char *configured = jn_config_entity_string(e, "name");
        e->name = configured ? configured : e->identity;
    }
    return 0;
}

/* The error for e, whose name or identity is already taken by o. */
static int duplicate(jn_config_ctx_t *ctx, const jn_config_entity_t *e, const jn_config_entity_t *o)
{
    const char *other = jn_schema_type_short_name(o->type);
    if (jn_config_entity_string(e, "name") && strcmp(e->name, o->name) == 0)
        return jn_config_fail(ctx, line_of(e, "name"),
                              "name '%s' is already used by the %s section at line %d",
                              jn_config_quote(ctx, e->name), other, o->line);
    return jn_config_fail(
        ctx, e->line, "%s has the same identity '%s' as the %s section at line %d%s",
        jn_schema_type_short_name(e->type), jn_config_quote(ctx, e->identity), other, o->line,
        type_is(e, "log") || type_is(e, "vhost") ? "" : "; give one of them a distinct name");
}

/* Names (configured or defaulted to the identity) and identities are unique
 * across all entities of all types. Two hash tables keep this linear. */
static int check_unique(jn_config_ctx_t *ctx)
{
    jn_config_t *cfg = ctx->cfg;
    jn_hash_t *names = jn_hash_create(cfg->entity_count);
    jn_hash_t *ids = jn_hash_create(cfg->entity_count);
    int rc = names && ids ? 0 : jn_config_nomem(ctx);
    int failed = 0; /* every duplicate is named */
    for (size_t i = 0; i < cfg->entity_count && rc == 0; i++) {
        jn_config_entity_t *e = cfg->entities[i];
        const jn_config_entity_t *o = jn_hash_lookup(names, e->name, strlen(e->name));
        if (!o)
            o = jn_hash_lookup(ids, e->identity, strlen(e->identity));
        if (!o)
            o = jn_hash_lookup(names, e->identity, strlen(e->identity));
        if (o) {
            failed = duplicate(ctx, e, o);
            continue;
        }
        if (jn_hash_insert(names, e->name, strlen(e->name), e) != 0 ||
            (strcmp(e->name, e->identity) != 0 &&
             jn_hash_insert(ids, e->identity, strlen(e->identity), e) != 0))
            rc = jn_config_nomem(ctx);
    }
    jn_hash_free(names);
    jn_hash_free(ids);
    return rc ? rc : failed;
}

static int check_router_id(jn_config_ctx_t *ctx, const jn_config_entity_t *router)
{
    const char *id = jn_config_entity_string(router, "id");
    if (!id)
        return 0;
    size_t chars = 0;
    bool bad = false;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
        chars += (*p & 0xc0) != 0x80; /* count UTF-8 code points */
        bad |= *p <= 0x20 || *p == 0x7f;
    }
    /* the words 1.19 uses (its error's name, its length phrase) are kept:
     * operators and 1.19's tests look for them */
    if (chars > ROUTER_ID_MAX)
        return jn_config_fail(ctx, line_of(router, "id"),
                              "router attribute 'id': longer than %d characters (AttributeError: "
                              "the router id exceeds the maximum allowed length)",
                              ROUTER_ID_MAX);
    if (bad)
        return jn_config_fail(ctx, line_of(router, "id"),
                              "router attribute 'id': '%s' contains whitespace or control "
                              "characters (AttributeError: not allowed in a router id)",
                              jn_config_quote(ctx, id));
    return 0;
}

bool jn_config_open_property_reserved(const char *key)
{
    /* 1.19 also lists the run-together "schemehostname" (a missing comma in
     * its source), so "scheme" and "hostname" are not reserved. */
    static const char *const reserved[] = {"product",      "version", "failover-server-list",
                                           "network-host", "port",    "schemehostname"};
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strcmp(key, reserved[i]) == 0)
            return true;
    return strncmp(key, "qd.", 3) == 0 || strncmp(key, "x-opt-qd.", 9) == 0;
}

bool jn_config_open_properties_allowed(const char *role)
{
    return !role || (strcmp(role, "inter-router") != 0 && strcmp(role, "edge") != 0);
}

const char *jn_config_role_refusal(const char *type, const char *role, const char *mode)
{
    bool mesh_role = role && (strcmp(role, "inter-router") == 0 || strcmp(role, "edge") == 0);
    if (!mode)
        mode = "standalone";
    if (mesh_role && strcmp(mode, "standalone") == 0)
        return "role='standalone' not allowed to connect to or accept connections from other "
               "routers.";
    if (role && strcmp(role, "inter-router") == 0 && strcmp(mode, "interior") != 0)
        return "role='inter-router' only allowed with router mode='interior'";
    if (type && strcmp(type, "listener") == 0 && role && strcmp(role, "edge") == 0 &&
        strcmp(mode, "edge") == 0)
        return "role='edge' only allowed with router mode='interior'";
    return NULL;
}

static int check_role(jn_config_ctx_t *ctx, const jn_config_entity_t *e, const char *mode)
{
    const char *t = jn_schema_type_short_name(e->type);
    const char *role = jn_config_entity_string(e, "role");
    const char *refusal = jn_config_role_refusal(t, role, mode);
    if (refusal)
        return jn_config_fail(ctx, line_of(e, "role"), "%s attribute 'role': %s", t, refusal);
    const jn_config_value_t *props = jn_config_entity_get(e, "openProperties");
    if (!props)
        return 0;
    if (!jn_config_open_properties_allowed(role))
        return jn_config_fail(ctx, props->line,
                              "%s attribute 'openProperties': not allowed "
                              "with role '%s'",
                              t, role);
    for (size_t i = 0; i < props->count; i++)
        if (jn_config_open_property_reserved(props->items[i]->key))
            return jn_config_fail(ctx, props->items[i]->line,
                                  "%s attribute 'openProperties': "
                                  "key '%s' is reserved",
                                  t, props->items[i]->key);
    return 0;
}

static int check_sasl_plugin(jn_config_ctx_t *ctx, const jn_config_entity_t *e)
{
    const char *plugin = jn_config_entity_string(e, "saslPlugin");
    if (!plugin)
        return 0;
    jn_config_t *cfg = ctx->cfg;
    for (size_t i = 0; i < cfg->entity_count; i++) {
        const char *name = jn_config_entity_string(cfg->entities[i], "name");
        if (type_is(cfg->entities[i], "authServicePlugin") && name && strcmp(name, plugin) == 0)
            return 0;
    }
    return jn_config_fail(ctx, line_of(e, "saslPlugin"),
                          "%s attribute 'saslPlugin': no "
                          "authServicePlugin named '%s'",
                          jn_schema_type_short_name(e->type), jn_config_quote(ctx, plugin));
}

static bool value_equal(const jn_config_value_t *a, const jn_config_value_t *b)
{
    if (!a || !b)
        return a == b;
    if (a->kind != b->kind || a->i != b->i || a->count != b->count ||
        (a->kind == JN_CONFIG_DOUBLE && a->d != b->d) || (a->s == NULL) != (b->s == NULL) ||
        (a->s && strcmp(a->s, b->s) != 0) || (a->key == NULL) != (b->key == NULL) ||
        (a->key && strcmp(a->key, b->key) != 0))
        return false;
    for (size_t i = 0; i < a->count; i++)
        if (!value_equal(a->items[i], b->items[i]))
            return false;
    return true;
}

static bool is_address(const jn_config_entity_t *e)
{
    return strcmp(jn_schema_type_short_name(e->type), "address") == 0;
}

static bool entity_repeats(const jn_config_entity_t *a, const jn_config_entity_t *b)
{
    size_t n = jn_schema_type_attr_count(a->type);
    for (size_t k = 0; k < n; k++)
        if (!value_equal(a->values[k], b->values[k]))
            return false;
    return true;
}

/* An unnamed address section that repeats an earlier one attribute for
 * attribute is dropped with a warning: 1.19 logs the second as a
 * duplicate and goes on, and the two could not differ in effect. One that
 * differs is refused later (the entity path), as before. */
static int drop_repeated_addresses(jn_config_ctx_t *ctx)
{
    jn_config_t *cfg = ctx->cfg;
    size_t kept = 0;
    for (size_t i = 0; i < cfg->entity_count; i++) {
        jn_config_entity_t *e = cfg->entities[i];
        const jn_config_entity_t *o = NULL;
        if (is_address(e) && !jn_config_entity_string(e, "name"))
            for (size_t j = 0; j < kept && !o; j++)
                if (is_address(cfg->entities[j]) && entity_repeats(e, cfg->entities[j]))
                    o = cfg->entities[j];
        if (!o) {
            cfg->entities[kept++] = e;
            continue;
        }
        int rc = jn_config_warn(ctx, e->line,
                                "address section repeats the one at line %d; it is ignored", o->line);
        if (rc != 0)
            return rc;
    }
    cfg->entity_count = kept;
    return 0;
}

int jn_config_check(jn_config_ctx_t *ctx)
{
    /* every check runs and names what it finds (jn_config_fail appends);
     * only running out of memory stops them */
    jn_config_t *cfg = ctx->cfg;
    int rc = drop_repeated_addresses(ctx);
    if (rc != 0)
        return rc;
    rc = assign_identities(ctx);
    if (rc != 0)
        return rc;
    int failed = check_unique(ctx);
    const jn_config_entity_t *router = jn_config_find(cfg, jn_schema_type_find("router"));
    if (failed != JN_ENOMEM && router)
        failed = worse(failed, check_router_id(ctx, router));
    const char *mode = router ? jn_config_entity_string(router, "mode") : NULL;
    if (!mode)
        mode = "standalone";
    for (size_t i = 0; i < cfg->entity_count && failed != JN_ENOMEM; i++) {
        if (!is_connection_config(cfg->entities[i]))
            continue;
        failed = worse(failed, check_role(ctx, cfg->entities[i], mode));
        if (failed != JN_ENOMEM)
            failed = worse(failed, check_sasl_plugin(ctx, cfg->entities[i]));
    }
    return failed;
}
