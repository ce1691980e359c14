/*
 * store_act.c — management's side of the entity path (entity.h): CREATE
 * reads the request body into an entity (type and name from the
 * application properties or the body, CREATE-able attributes only, typed
 * values, schema defaults; docs/protocol.md, "Management"), then the
 * entity goes through the checks and the actions every configured entity
 * goes through (entity_check.c, entity_act.c), exactly as a config file's
 * section does; DELETE undoes the action and forgets it.
 *
 * Every refusal is a 400 whose description names the attribute; the text
 * is the one the config file prints after FILE:LINE.
 */
#include "mgmt_private.h"
#include "entity.h"

#include <junction/core_view.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONN_LR "router.connection.linkRoute"

static bool is(const jn_mgmt_class_t *cls, const char *name)
{
    return strcmp(cls->name, name) == 0;
}

static const jn_schema_attr_t *find_attr(const jn_mgmt_entity_t *e, const char *key)
{
    if (is(e->cls, "router.config.address") && strcmp(key, "fallback") == 0)
        key = "enableFallback"; /* the C agent's name for it */
    return jn_schema_attr_find(e->type, key);
}

/* invalid_value: the 400 for a value of the wrong kind; for an enum, the
 * value given and the values allowed, as the config file says them. */
static int invalid_value(const jn_mgmt_entity_t *e, const jn_schema_attr_t *a, const char *key,
                         const jn_field_t *v, jn_mgmt_reply_t *reply)
{
    size_t n = jn_schema_attr_enum_count(a);
    char given[128];
    if (is(e->cls, CONN_LR) && strcmp(key, "direction") == 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Invalid value for 'direction'");
    if (is(e->cls, "router.config.exchange") && strcmp(key, "matchMethod") == 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Exchange matchMethod must be either 'amqp' or 'mqtt'");
    if (jn_schema_attr_kind(a) != JN_SCHEMA_ENUM || n == 0 ||
        jn_mgmt_field_string(v, given, sizeof given) != 0)
        return jn_mgmt_reply_set(
            reply, JN_MGMT_BAD_REQUEST, "Invalid value for attribute '%s' of %s: expected %s", key,
            jn_schema_type_name(e->type), jn_schema_kind_name(jn_schema_attr_kind(a)));
    char list[512];
    size_t len = 0;
    list[0] = '\0';
    for (size_t i = 0; i < n && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                jn_schema_attr_enum_value(a, i));
    return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                             "Invalid value for attribute '%s' of %s: '%s' is not one of %s", key,
                             jn_schema_type_name(e->type), given, list);
}

/* One body entry: key k (a string, copied to key), value v. */
static int body_entry(jn_mgmt_entity_t *e, const char *key, const jn_field_t *v, char *name,
                      bool *has_name, char *unknown, size_t unknown_cap, jn_mgmt_reply_t *reply)
{
    char text[JN_MGMT_STR_MAX];
    if (strcmp(key, "name") == 0 || strcmp(key, "type") == 0) {
        if (v->type == JN_TYPE_NULL)
            return 0;
        if (jn_mgmt_field_string(v, text, sizeof text) != 0)
            return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "'%s' must be a string", key);
        if (key[0] == 't') {
            if (jn_mgmt_class_find(text, NULL) != e->cls)
                return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                         "Conflicting values for 'type'");
            return 0;
        }
        if (*has_name && strcmp(name, text) != 0)
            return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Conflicting values for 'name'");
        snprintf(name, JN_MGMT_STR_MAX, "%s", text);
        *has_name = true;
        return 0;
    }
    const jn_schema_attr_t *a = find_attr(e, key);
    if (!a && v->type == JN_TYPE_NULL)
        return 0; /* null: not given (as 1.19; `qdmanage create ... a=b ` sends '': null) */
    if (!a) {
        size_t used = strlen(unknown);
        snprintf(unknown + used, unknown_cap - used, "%s'%s'", used ? ", " : "", key);
        return 0;
    }
    if (!jn_schema_attr_create(a))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Cannot set attribute '%s' in CREATE",
                                 key);
    /* a link route's or address's prefix or pattern is a string: no
     * number taken for its digits (1.19's words) */
    bool matched = is(e->cls, "router.config.linkRoute") || is(e->cls, "router.config.address");
    if (matched && (!strcmp(key, "prefix") || !strcmp(key, "pattern")) && v->type != JN_TYPE_NULL &&
        v->type != JN_TYPE_STRING)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "%s must be a non-empty string type",
                                 key[1] == 'r' ? "Prefix" : "Pattern");
    int rc = jn_mgmt_entity_set_field(e, a, v, reply);
    if (rc == JN_MGMT_INTERNAL)
        return rc;
    if (rc != 0)
        return invalid_value(e, a, key, v, reply);
    return 0;
}

/* Read the CREATE body into e (values) and name. Returns 0 or the status. */
static int read_body(jn_mgmt_entity_t *e, const jn_mgmt_request_t *req, char *name, bool *has_name,
                     jn_mgmt_reply_t *reply)
{
    if (!req->has_body)
        return 0;
    jn_decoder_t map;
    if (req->body.type != JN_TYPE_MAP || jn_decoder_enter(&req->body_dec, &req->body, &map) != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Body of request must be a map");
    char unknown[512] = "";
    jn_field_t k, v;
    int rc;
    while ((rc = jn_decoder_next(&map, &k)) == 1 && jn_decoder_next(&map, &v) == 1) {
        char key[128];
        if (jn_mgmt_field_string(&k, key, sizeof key) != 0)
            return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Attribute names must be strings");
        if (strcmp(key, "identity") == 0)
            return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                     "Cannot set attribute 'identity' in CREATE");
        int st = body_entry(e, key, &v, name, has_name, unknown, sizeof unknown, reply);
        if (st)
            return st;
    }
    if (rc < 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Malformed body: %s",
                                 jn_decoder_reason(&map));
    if (unknown[0])
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Unknown attributes [%s] for type %s.",
                                 unknown, jn_schema_type_name(e->type));
    return 0;
}

/* Defaults for attributes not given; required ones must be there. */
static int fill_defaults(jn_mgmt_entity_t *e, jn_mgmt_reply_t *reply)
{
    for (size_t i = 0; i < e->n_values; i++) {
        const jn_schema_attr_t *a = jn_schema_type_attr_at(e->type, i);
        const char *an = jn_schema_attr_name(a);
        if (e->values[i].kind != JN_MV_NULL || strcmp(an, "type") == 0)
            continue;
        if (jn_mgmt_value_default(a, &e->values[i]) != 0)
            return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
        /* address, direction, exchangeName, nextHopAddress: the checks
         * below and the core word these as 1.19 */
        if (e->values[i].kind == JN_MV_NULL && jn_schema_attr_required(a) &&
            strcmp(an, "direction") != 0 && strcmp(an, "address") != 0 &&
            strcmp(an, "exchangeName") != 0 && strcmp(an, "nextHopAddress") != 0)
            return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                     "Missing required attribute '%s' for type %s", an,
                                     jn_schema_type_name(e->type));
    }
    return 0;
}

/* ---- CREATE / DELETE ---------------------------------------------------------- */

bool jn_entity_same_names(const jn_mgmt_class_t *a, const jn_mgmt_class_t *b)
{
    /* listeners and connectors share the I/O layer's names */
    bool a_ep = is(a, "listener") || is(a, "connector");
    bool b_ep = is(b, "listener") || is(b, "connector");
    return a == b || (a_ep && b_ep);
}

bool jn_entity_name_taken(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const char *name)
{
    for (jn_mgmt_entity_t *e = agent->entities; e; e = e->next)
        if (e->name && strcmp(e->name, name) == 0 && jn_entity_same_names(e->cls, cls))
            return true;
    return false;
}

/* A refusal of the entity path as the answer's status. */
static int refused(jn_mgmt_reply_t *reply, const jn_entity_err_t *err)
{
    jn_entity_err_log(err);
    return jn_mgmt_reply_set(reply, err->status, "%s", err->text);
}

static int create_checked(jn_mgmt_t *agent, jn_mgmt_entity_t *e, const jn_mgmt_request_t *req,
                          jn_mgmt_reply_t *reply)
{
    char *name = malloc(JN_MGMT_STR_MAX);
    if (!name)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    bool has_name = req->has_name;
    snprintf(name, JN_MGMT_STR_MAX, "%s", req->name);
    int st = read_body(e, req, name, &has_name, reply);
    if (!st)
        st = fill_defaults(e, reply);
    jn_entity_ctx_t ctx = {.mode = agent->cfg.mode,
                           .profile = jn_entity_profile_in_store,
                           .profile_arg = agent};
    jn_entity_err_t err;
    if (!st && jn_entity_check(&ctx, e, &err) != 0)
        st = refused(reply, &err);
    /* an exchange's or binding's name is checked by the core, in 1.19's
     * words ("duplicate exchange name", "Duplicate next hop name") */
    bool own_names = is(e->cls, "router.config.exchange") || is(e->cls, "router.config.binding");
    /* bindings are named by the exchange they join; an exchange by its
     * own name, which a CREATE must give (1.19's words) */
    if (!st && !has_name && is(e->cls, "router.config.exchange"))
        st = jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "exchange requires a unique name");
    if (!st && has_name && !own_names && jn_entity_name_taken(agent, e->cls, name))
        st =
            jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Name conflicts with an existing entity");
    if (!st && has_name && !(e->name = strdup(name)))
        st = jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    free(name);
    if (!st && jn_mgmt_entity_set_identity(agent, e, NULL) != 0)
        st = jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    if (!st && !has_name && jn_entity_name_taken(agent, e->cls, e->name ? e->name : ""))
        st =
            jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Name conflicts with an existing entity");
    if (!st && jn_entity_create_CT(agent, e, &err) != 0)
        st = refused(reply, &err);
    return st;
}

int jn_mgmt_store_create(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                         jn_mgmt_reply_t *reply)
{
    jn_mgmt_entity_t *e = jn_mgmt_entity_new(cls);
    if (!e)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    int st = create_checked(agent, e, req, reply);
    if (st) {
        jn_mgmt_entity_free(e);
        return st;
    }
    jn_mgmt_store_append(agent, e);
    JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_INFO, "Created %s %s (identity %s)", cls->name,
           e->name ? e->name : "(unnamed)", e->identity);
    return jn_mgmt_answer_entity(reply, cls, e, JN_MGMT_CREATED, "Created");
}

/* An exchange deleted took its bindings with it (the core's): forget
 * their entities too, as 1.19 does. */
static void forget_bindings(jn_mgmt_t *agent, const char *exchange)
{
    jn_mgmt_entity_t *e = agent->entities;
    while (e) {
        jn_mgmt_entity_t *next = e->next;
        const char *x = is(e->cls, "router.config.binding")
                            ? jn_mgmt_entity_str(e, "exchangeName")
                            : NULL;
        if (x && strcmp(x, exchange) == 0) {
            jn_mgmt_store_unlink(agent, e);
            jn_mgmt_entity_free(e);
        }
        e = next;
    }
}

int jn_mgmt_store_delete(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                         jn_mgmt_reply_t *reply)
{
    jn_mgmt_entity_t *e = jn_mgmt_store_find(agent, cls, NULL, req->identity);
    if (!req->has_identity)
        e = jn_mgmt_store_find(agent, cls, req->name, NULL);
    if (!e)
        return jn_mgmt_reply_set(reply, JN_MGMT_NOT_FOUND, "No entity with %s=%s",
                                 req->has_identity ? "identity" : "name",
                                 req->has_identity ? req->identity : req->name);
    jn_entity_delete_CT(agent, e);
    JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_INFO, "Deleted %s %s (identity %s)", cls->name,
           e->name ? e->name : "(unnamed)", e->identity);
    if (is(cls, "router.config.exchange") && e->name)
        forget_bindings(agent, e->name);
    jn_mgmt_store_unlink(agent, e);
    jn_mgmt_entity_free(e);
    jn_enc_map_begin(&reply->body);
    jn_enc_map_end(&reply->body);
    return jn_mgmt_reply_set(reply, JN_MGMT_NO_CONTENT, "No Content");
}

/* ---- router.connection.linkRoute ------------------------------------------------ */


/* The row of one connection-scoped link route (columns by name). */
static void conn_lr_row(const jn_mgmt_class_t *cls, const jn_conn_link_route_t *r, char *id,
                        size_t id_cap, jn_mv_t *row)
{
    snprintf(id, id_cap, "%" PRIu64, r->identity);
    for (size_t c = 0; c < jn_mgmt_class_ncols(cls); c++) {
        const char *col = jn_mgmt_class_col(cls, c);
        row[c] = strcmp(col, "name") == 0        ? jn_mv_str(r->name[0] ? r->name : NULL)
                 : strcmp(col, "identity") == 0  ? jn_mv_str(id)
                 : strcmp(col, "type") == 0      ? jn_mv_str(JN_SCHEMA_PREFIX "." CONN_LR)
                 : strcmp(col, "pattern") == 0   ? jn_mv_str(r->pattern)
                 : strcmp(col, "direction") == 0 ? jn_mv_str(r->dir == JN_LINK_INCOMING ? "in"
                                                                                        : "out")
                 : strcmp(col, "containerId") == 0 ? jn_mv_str(r->container_id)
                                                   : jn_mv_null();
    }
}

size_t jn_mgmt_rows_conn_link_routes(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset,
                                     size_t max, jn_mgmt_row_fn fn, void *ctx)
{
    jn_core_t *core = agent->cfg.core;
    uint64_t conn = core ? jn_core_request_conn_CT(core) : 0;
    size_t n = jn_mgmt_class_ncols(cls), total = 0;
    jn_mv_t *row = calloc(n ? n : 1, sizeof *row);
    bool go = row != NULL;
    jn_conn_link_route_t r;
    char id[24];
    while (conn && jn_core_conn_link_route_at_CT(core, conn, total, &r) == 0) {
        if (go && total >= offset && total - offset < max) {
            conn_lr_row(cls, &r, id, sizeof id, row);
            go = fn(ctx, row);
        }
        total++;
    }
    free(row);
    return total;
}

/* CREATE over the connection the link route is for (1.19's descriptions). */
static int conn_lr_create(jn_mgmt_t *agent, const jn_mgmt_class_t *cls,
                          const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    jn_core_t *core = agent->cfg.core;
    uint64_t conn = core ? jn_core_request_conn_CT(core) : 0;
    if (!conn)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Parent connection no longer exists");
    if (jn_core_request_denied_CT(core, 0)) /* the vhost group's allowDynamicLinkRoutes */
        return jn_mgmt_reply_set(reply, JN_MGMT_FORBIDDEN,
                                 "You are not allowed to perform this operation.");
    jn_mgmt_entity_t *e = jn_mgmt_entity_new(cls);
    char *name = malloc(JN_MGMT_STR_MAX);
    if (!e || !name) {
        jn_mgmt_entity_free(e);
        free(name);
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    }
    bool has_name = req->has_name;
    snprintf(name, JN_MGMT_STR_MAX, "%s", req->has_name ? req->name : "");
    int st = read_body(e, req, name, &has_name, reply);
    const char *pattern = st ? NULL : jn_mgmt_entity_str(e, "pattern");
    const char *dir = st ? NULL : jn_mgmt_entity_str(e, "direction");
    if (!st && (!pattern || !pattern[0]))
        st = jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Pattern field is required");
    if (!st && !dir)
        st = jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Missing value for 'direction'");
    uint64_t identity = 0;
    int rc = st ? 0
                : jn_core_conn_link_route_add_CT(core, conn, has_name ? name : "", pattern,
                                                 strcmp(dir, "in") == 0 ? JN_LINK_INCOMING
                                                                        : JN_LINK_OUTGOING,
                                                 &identity);
    if (!st && rc == JN_ENOENT)
        st = jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Parent connection no longer exists");
    else if (!st && rc == JN_EEXIST)
        st = jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                               "creation failed: a link route with that name exists on this "
                               "connection");
    else if (!st && rc != 0)
        st = jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "creation failed: %s", jn_strerror(rc));
    jn_mgmt_entity_free(e);
    free(name);
    if (st)
        return st;
    jn_conn_link_route_t r = {.name = ""};
    for (size_t i = 0; jn_core_conn_link_route_at_CT(core, conn, i, &r) == 0; i++) {
        if (r.identity != identity)
            continue;
        jn_mv_t *row = calloc(jn_mgmt_class_ncols(cls), sizeof *row);
        char id[24];
        if (!row)
            return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
        conn_lr_row(cls, &r, id, sizeof id, row);
        jn_mgmt_encode_row_map(&reply->body, cls, row);
        free(row);
        break;
    }
    JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_INFO, "Created %s %s on connection %" PRIu64, cls->name,
           r.name, conn);
    return jn_mgmt_reply_set(reply, JN_MGMT_CREATED, "Created");
}

/* DELETE by identity or name; gone with its connection: 204, as 1.19. */
static int conn_lr_delete(jn_mgmt_t *agent, const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    jn_core_t *core = agent->cfg.core;
    uint64_t conn = core ? jn_core_request_conn_CT(core) : 0;
    if (!req->has_name && !req->has_identity)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "No name or identity provided");
    uint64_t identity = 0;
    if (req->has_identity) {
        char *end = NULL;
        identity = strtoull(req->identity, &end, 10);
        if (!end || *end || identity == 0)
            return jn_mgmt_reply_set(reply, JN_MGMT_NOT_FOUND, "No entity with identity=%s",
                                     req->identity);
    }
    if (conn && jn_core_conn_link_route_remove_CT(core, conn, req->has_name ? req->name : NULL,
                                                  identity) != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_NOT_FOUND, "No entity with %s=%s",
                                 req->has_identity ? "identity" : "name",
                                 req->has_identity ? req->identity : req->name);
    jn_enc_map_begin(&reply->body);
    jn_enc_map_end(&reply->body);
    return jn_mgmt_reply_set(reply, JN_MGMT_NO_CONTENT, "No Content");
}

int jn_mgmt_conn_link_route_op(jn_mgmt_t *agent, const jn_mgmt_class_t *cls,
                               const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    if (strcmp(req->operation, "CREATE") == 0)
        return conn_lr_create(agent, cls, req, reply);
    return conn_lr_delete(agent, req, reply);
}
