/*
 * store.c — the configured entities the agent keeps: listener, connector,
 * sslProfile, router.config.address, router.config.linkRoute and
 * router.config.autoLink, from the config file (jn_mgmt_load_config) and
 * from CREATE; forgotten by DELETE. Each keeps one owned value per schema
 * attribute (defaults filled in), its identity and its name.
 *
 * Identities are those 1.19 gives: "listener/<host>:<port>[:<name>]",
 * "sslProfile/<name>" (the Python agent's), and a decimal number for the
 * router.config.* types (the C agent's). Rows show the schema's columns
 * (router/config/schema.json): for router.config.* the order of 1.19's C
 * agent, with its aliases (`dir`, `addr`, `externalAddr`, `fallback`
 * for the schema's enableFallback) and its computed columns.
 *
 * What CREATE and DELETE do to the running router is in store_act.c.
 */
#include "mgmt_private.h"
#include "entity.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FULL(t) JN_SCHEMA_PREFIX "." t

jn_mgmt_entity_t *jn_mgmt_entity_new(const jn_mgmt_class_t *cls)
{
    const jn_schema_type_t *type = jn_mgmt_class_type(cls);
    size_t n = jn_schema_type_attr_count(type);
    jn_mgmt_entity_t *e = calloc(1, sizeof *e + n * sizeof(jn_mv_t));
    if (!e)
        return NULL;
    e->cls = cls;
    e->type = type;
    e->n_values = n;
    return e;
}

jn_mgmt_entity_t *jn_mgmt_entity_new_type(const jn_schema_type_t *type)
{
    size_t n = jn_schema_type_attr_count(type);
    jn_mgmt_entity_t *e = calloc(1, sizeof *e + n * sizeof(jn_mv_t));
    if (!e)
        return NULL;
    e->cls = jn_mgmt_class_find(jn_schema_type_name(type), NULL);
    e->type = type;
    e->n_values = n;
    return e;
}

jn_mgmt_entity_t *jn_mgmt_entity_clone(const jn_mgmt_entity_t *e)
{
    jn_mgmt_entity_t *c = jn_mgmt_entity_new_type(e->type);
    if (!c)
        return NULL;
    c->cls = e->cls;
    c->origin = e->origin;
    c->port_any = e->port_any;
    bool ok = (!e->name || (c->name = strdup(e->name))) &&
              (!e->identity || (c->identity = strdup(e->identity)));
    for (size_t i = 0; ok && i < e->n_values; i++) {
        const jn_mv_t *v = &e->values[i];
        if (v->kind == JN_MV_STR) {
            ok = jn_mgmt_value_str(&c->values[i], v->v.s, v->len) == 0;
        } else if (v->kind == JN_MV_RAW) {
            uint8_t *copy = malloc(v->len ? v->len : 1);
            ok = copy != NULL;
            if (ok) {
                memcpy(copy, v->v.raw, v->len);
                c->values[i] = (jn_mv_t){.kind = JN_MV_RAW, .len = v->len, .v.raw = copy};
            }
        } else if (v->kind == JN_MV_STRLIST) {
            ok = false; /* stored entities hold none (values.c) */
        } else {
            c->values[i] = *v;
        }
    }
    if (!ok) {
        jn_mgmt_entity_free(c);
        return NULL;
    }
    return c;
}

int jn_mgmt_entity_defaults(const jn_schema_type_t *type, jn_mgmt_entity_t **out)
{
    jn_mgmt_entity_t *e = jn_mgmt_entity_new_type(type);
    *out = NULL;
    if (!e)
        return JN_ENOMEM;
    for (size_t i = 0; i < e->n_values; i++) {
        const char *an = jn_schema_attr_name(jn_schema_type_attr_at(type, i));
        if (strcmp(an, "name") == 0 || strcmp(an, "identity") == 0 || strcmp(an, "type") == 0)
            continue;
        if (jn_mgmt_value_default(jn_schema_type_attr_at(type, i), &e->values[i]) != 0) {
            jn_mgmt_entity_free(e);
            return JN_ENOMEM;
        }
    }
    *out = e;
    return 0;
}

void jn_mgmt_entity_free(jn_mgmt_entity_t *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->n_values; i++)
        jn_mgmt_value_free(&e->values[i]);
    free(e->identity);
    free(e->name);
    free(e->where);
    free(e);
}

jn_mv_t *jn_mgmt_entity_get(jn_mgmt_entity_t *e, const char *attr)
{
    const jn_schema_attr_t *a = jn_schema_attr_find(e->type, attr);
    return a ? &e->values[jn_schema_attr_index(a)] : NULL;
}

const char *jn_mgmt_entity_str(jn_mgmt_entity_t *e, const char *attr)
{
    jn_mv_t *v = jn_mgmt_entity_get(e, attr);
    return v ? jn_mgmt_value_cstr(v) : NULL;
}

int64_t jn_mgmt_entity_int(jn_mgmt_entity_t *e, const char *attr, int64_t dflt)
{
    jn_mv_t *v = jn_mgmt_entity_get(e, attr);
    return v && v->kind == JN_MV_LONG ? v->v.i : dflt;
}

bool jn_mgmt_entity_bool(jn_mgmt_entity_t *e, const char *attr, bool dflt)
{
    jn_mv_t *v = jn_mgmt_entity_get(e, attr);
    return v && v->kind == JN_MV_BOOL ? v->v.b : dflt;
}

/* ---- rows ----------------------------------------------------------------- */

/* The value of a computed column (the schema's "computed": true) of a
 * router.config.* entity, as 1.19's C agent shows it; null for any other. */
static jn_mv_t computed_column(jn_mgmt_entity_t *e, size_t col)
{
    switch (jn_schema_type_index(e->type)) {
    case JN_ENTITY_ROUTER_CONFIG_ADDRESS:
        switch (col) {
        case JN_COL_ROUTER_CONFIG_ADDRESS_PRIORITY:
            return jn_mv_int(JN_MV_INT, jn_mgmt_entity_int(e, "priority", -1));
        case JN_COL_ROUTER_CONFIG_ADDRESS_INGRESS_PHASE:
            return jn_mv_int(JN_MV_INT, jn_mgmt_entity_int(e, "ingressPhase", 0));
        case JN_COL_ROUTER_CONFIG_ADDRESS_EGRESS_PHASE: {
            bool waypoint = jn_mgmt_entity_bool(e, "waypoint", false);
            return jn_mv_int(JN_MV_INT, jn_mgmt_entity_int(e, "egressPhase", waypoint ? 1 : 0));
        }
        }
        break;
    case JN_ENTITY_ROUTER_CONFIG_LINK_ROUTE:
        if (col == JN_COL_ROUTER_CONFIG_LINK_ROUTE_OPER_STATUS)
            return jn_mv_str("inactive"); /* link routes are not implemented */
        break;
    case JN_ENTITY_ROUTER_CONFIG_AUTO_LINK: /* linkRef and lastError stay null */
        if (col == JN_COL_ROUTER_CONFIG_AUTO_LINK_OPER_STATUS)
            return jn_mv_str("inactive"); /* auto links are not implemented */
        break;
    }
    return jn_mv_null();
}

/* The value a column shows of attribute a: name, identity and type are
 * the entity's own; a hidden attribute (a password) is null. */
static jn_mv_t attribute_column(jn_mgmt_entity_t *e, const jn_schema_attr_t *a)
{
    const char *an = jn_schema_attr_name(a);
    if (strcmp(an, "name") == 0)
        return jn_mv_str(e->name);
    if (strcmp(an, "identity") == 0)
        return jn_mv_str(e->identity);
    if (strcmp(an, "type") == 0)
        return jn_mv_str(jn_schema_type_full_name(e->type));
    if (jn_schema_attr_flags(a) & JN_SCHEMA_ATTR_HIDDEN)
        return jn_mv_null();
    jn_mv_t v = e->values[jn_schema_attr_index(a)];
    if (v.kind == JN_MV_LONG && strncmp(jn_schema_type_name(e->type), "router.config.", 14) == 0)
        v.kind = JN_MV_INT; /* the C agent's int */
    return v;
}

/* The columns are the schema's (the C agent's order for router.config.*,
 * with its aliases `dir`, `addr`, `externalAddr` and `fallback` for
 * enableFallback, and its computed columns). */
int jn_mgmt_entity_set_field(jn_mgmt_entity_t *e, const jn_schema_attr_t *a, const jn_field_t *v,
                             jn_mgmt_reply_t *reply)
{
    jn_mv_t *slot = &e->values[jn_schema_attr_index(a)];
    jn_mgmt_value_free(slot);
    int rc = jn_mgmt_value_from_field(a, v, slot);
    if (rc == JN_ENOMEM)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    return rc;
}

int jn_mgmt_answer_entity(jn_mgmt_reply_t *reply, const jn_mgmt_class_t *cls, jn_mgmt_entity_t *e,
                          int status, const char *desc)
{
    jn_mv_t *row = calloc(jn_mgmt_class_ncols(cls), sizeof *row);
    if (!row)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    jn_mgmt_entity_row(e, row);
    jn_mgmt_encode_row_map(&reply->body, cls, row);
    free(row);
    return jn_mgmt_reply_set(reply, status, "%s", desc);
}

void jn_mgmt_entity_row(jn_mgmt_entity_t *e, jn_mv_t *row)
{
    size_t n = jn_schema_type_column_count(e->type);
    for (size_t c = 0; c < n; c++) {
        const jn_schema_attr_t *a = jn_schema_type_column_attr(e->type, c);
        row[c] = a ? attribute_column(e, a) : computed_column(e, c);
    }
}

size_t jn_mgmt_store_rows(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                          jn_mgmt_row_fn fn, void *ctx)
{
    size_t n = jn_mgmt_class_ncols(cls), total = 0;
    jn_mv_t *row = calloc(n ? n : 1, sizeof *row);
    bool go = row != NULL;
    for (jn_mgmt_entity_t *e = agent->entities; e; e = e->next) {
        if (e->cls != cls)
            continue;
        if (go && total >= offset && total - offset < max) {
            jn_mgmt_entity_row(e, row);
            jn_entity_status_CT(agent, e, row);
            go = fn(ctx, row);
        }
        total++;
    }
    free(row);
    return total;
}

size_t jn_mgmt_store_count(const jn_mgmt_t *agent, const jn_mgmt_class_t *cls)
{
    size_t n = 0;
    for (const jn_mgmt_entity_t *e = agent->entities; e; e = e->next)
        n += !cls || e->cls == cls;
    return n;
}

void jn_mgmt_store_free(jn_mgmt_t *agent)
{
    while (agent->entities) {
        jn_mgmt_entity_t *e = agent->entities;
        agent->entities = e->next;
        jn_mgmt_entity_free(e);
    }
    agent->tail = NULL;
}

void jn_mgmt_store_append(jn_mgmt_t *agent, jn_mgmt_entity_t *e)
{
    e->next = NULL;
    if (agent->tail)
        agent->tail->next = e;
    else
        agent->entities = e;
    agent->tail = e;
}

void jn_mgmt_store_unlink(jn_mgmt_t *agent, jn_mgmt_entity_t *e)
{
    jn_mgmt_entity_t **p = &agent->entities, *prev = NULL;
    while (*p && *p != e) {
        prev = *p;
        p = &(*p)->next;
    }
    if (!*p)
        return;
    *p = e->next;
    if (agent->tail == e)
        agent->tail = prev;
    e->next = NULL;
}

jn_mgmt_entity_t *jn_mgmt_store_find(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const char *name,
                                     const char *identity)
{
    for (jn_mgmt_entity_t *e = agent->entities; e; e = e->next) {
        if (cls && e->cls != cls)
            continue;
        if (identity && strcmp(e->identity, identity) == 0)
            return e;
        if (name && e->name && strcmp(e->name, name) == 0)
            return e;
    }
    return NULL;
}

/* ---- identities ------------------------------------------------------------ */

int jn_mgmt_entity_set_identity(jn_mgmt_t *agent, jn_mgmt_entity_t *e, const char *given)
{
    char buf[2 * JN_MGMT_STR_MAX + 64];
    const char *t = e->cls->name;
    if (given) {
        snprintf(buf, sizeof buf, "%s", given);
    } else if (strncmp(t, "router.config.", 14) == 0) {
        /* one counter with the links', as 1.19 (core.h); an agent with
         * no core (unit tests) counts alone */
        snprintf(buf, sizeof buf, "%" PRIu64,
                 agent->cfg.core ? jn_core_next_identity(agent->cfg.core) : agent->next_id);
    } else if (strcmp(t, "dummy") == 0) { /* 1.19: a count of its own */
        snprintf(buf, sizeof buf, "dummy/%" PRIu64, agent->next_dummy++);
    } else if (strcmp(t, "listener") == 0 || strcmp(t, "connector") == 0) {
        const char *host = jn_mgmt_entity_str(e, "host"), *port = jn_mgmt_entity_str(e, "port");
        int n = snprintf(buf, sizeof buf, "%s/%s:%s", t, host ? host : "", port ? port : "");
        if (e->name && n > 0 && (size_t)n < sizeof buf)
            snprintf(buf + n, sizeof buf - (size_t)n, ":%s", e->name);
    } else {
        snprintf(buf, sizeof buf, "%s/%s", jn_schema_type_short_name(e->type),
                 e->name ? e->name : "");
    }
    if (strncmp(t, "router.config.", 14) == 0)
        agent->next_id++;
    e->identity = strdup(buf);
    if (e->identity && !e->name && strncmp(t, "router.config.", 14) != 0)
        e->name = strdup(e->identity); /* 1.19: name defaults to the identity */
    return e->identity && (e->name || strncmp(t, "router.config.", 14) == 0) ? 0 : JN_ENOMEM;
}
