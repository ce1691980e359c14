/*
 * update.c — UPDATE of the entities that allow it:
 *
 *   log         enable, includeTimestamp, includeSource, outputFile; they
 *               take effect at once (junction/log.h), through the entity
 *               path's one check and one apply (entity_check.c,
 *               entity_act.c) as the file and a reload set them.
 *   connection  adminStatus ("deleted" closes the connection through the
 *               core; "enabled" changes nothing) and enableProtocolTrace
 *               (its AMQP frames to the PROTOCOL log whatever its level:
 *               router/io/io_trace.c), as 1.19's C agent (1.19's columns);
 *               a body with neither is a bad request, an identity no
 *               connection has too (400, as 1.19).
 *   router.link adminStatus "enabled" only: nothing to change, the
 *               link's map is the answer; "disabled" is refused by name
 *               (docs/compat.md).
 *   sslProfile, dummy: any attribute the schema lets UPDATE change.
 *
 * The answer is the entity's full attribute map (200).
 */
#include "mgmt_private.h"
#include "entity.h"

#include <junction/core_view.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int field_bool(const jn_field_t *v, bool *out)
{
    char text[8];
    if (v->type == JN_TYPE_BOOLEAN)
        return *out = v->value.b, 0;
    if (jn_mgmt_field_string(v, text, sizeof text) != 0)
        return JN_EINVAL;
    if (strcmp(text, "true") == 0 || strcmp(text, "yes") == 0 || strcmp(text, "on") == 0)
        return *out = true, 0;
    if (strcmp(text, "false") == 0 || strcmp(text, "no") == 0 || strcmp(text, "off") == 0)
        return *out = false, 0;
    return JN_EINVAL;
}

/* Iterate the body map: fn(key, value) for each entry. */
static int each_entry(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply,
                      int (*fn)(const char *key, const jn_field_t *v, void *ctx,
                                jn_mgmt_reply_t *reply),
                      void *ctx)
{
    jn_decoder_t map;
    jn_field_t k, v;
    if (!req->has_body)
        return 0;
    if (req->body.type != JN_TYPE_MAP || jn_decoder_enter(&req->body_dec, &req->body, &map) != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Body of request must be a map");
    int rc;
    while ((rc = jn_decoder_next(&map, &k)) == 1 && jn_decoder_next(&map, &v) == 1) {
        char key[128];
        if (jn_mgmt_field_string(&k, key, sizeof key) != 0)
            return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Attribute names must be strings");
        int st = fn(key, &v, ctx, reply);
        if (st)
            return st;
    }
    if (rc < 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Malformed body: %s",
                                 jn_decoder_reason(&map));
    return 0;
}

/* ---- connection ---------------------------------------------------------------- */

typedef struct conn_change {
    bool delete_it, any;
    int trace; /* enableProtocolTrace: -1 not given, 0 off, 1 on */
} conn_change_t;

static int conn_entry_cb(const char *key, const jn_field_t *v, void *ctx, jn_mgmt_reply_t *reply)
{
    conn_change_t *c = ctx;
    char text[16];
    bool b;
    if (strcmp(key, "adminStatus") == 0) {
        if (jn_mgmt_field_string(v, text, sizeof text) != 0 ||
            (strcmp(text, "enabled") != 0 && strcmp(text, "deleted") != 0))
            return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                     "Invalid value for attribute 'adminStatus': expected "
                                     "'enabled' or 'deleted'");
        c->delete_it = strcmp(text, "deleted") == 0;
        c->any = true;
    } else if (strcmp(key, "enableProtocolTrace") == 0) {
        if (field_bool(v, &b) != 0)
            return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                     "Invalid value for attribute 'enableProtocolTrace': expected "
                                     "boolean");
        c->trace = b;
        c->any = true;
    }
    return 0;
}

static int update_conn(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                       jn_mgmt_reply_t *reply)
{
    if (!req->has_identity) /* the name is not unique (1.19 refuses it too) */
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Name not supported. Identity required");
    conn_change_t c = {false, false, -1};
    int st = each_entry(req, reply, conn_entry_cb, &c);
    if (st)
        return st;
    if (!c.any)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "UPDATE of a connection needs 'adminStatus' or "
                                 "'enableProtocolTrace'");
    jn_encoder_t probe; /* is there such a connection? 1.19 answers 400 if not */
    jn_encoder_init(&probe);
    int found = jn_mgmt_read_row(agent, cls, req, &probe);
    jn_encoder_free(&probe);
    if (found != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "No connection with identity=%s",
                                 req->identity);
    /* its AMQP frames to the PROTOCOL log, whatever the level (io_trace.c) */
    if (c.trace >= 0 && jn_log_conn_trace_set(strtoull(req->identity, NULL, 10), c.trace == 1) != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Protocol trace is on for 64 connections already");
    /* the vhost group's allowAdminStatusUpdate: 403, as 1.19 answers */
    if (c.delete_it && agent->cfg.core && jn_core_request_denied_CT(agent->cfg.core, 1))
        return jn_mgmt_reply_set(reply, JN_MGMT_FORBIDDEN,
                                 "You are not allowed to perform this operation.");
    /* closed first, so that the answer shows adminStatus "deleted" (as
     * 1.19's does); the identity is the decimal connection id */
    int rc =
        c.delete_it && agent->cfg.core
            ? jn_core_conn_close_CT(agent->cfg.core, strtoull(req->identity, NULL, 10),
                                    "amqp:connection:forced", "Connection closed by management")
            : 0;
    if (rc == JN_EPERM)
        return jn_mgmt_reply_set(reply, JN_MGMT_FORBIDDEN, /* inter-router, edge: 1.19's words */
                                 "You are not allowed to perform this operation.");
    if (rc == JN_ENOMEM)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    jn_encoder_t *row = malloc(sizeof *row);
    if (!row)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    jn_encoder_init(row);
    if (jn_mgmt_read_row(agent, cls, req, row) != 0) {
        jn_encoder_free(row);
        free(row);
        return jn_mgmt_reply_set(reply, JN_MGMT_NOT_FOUND, "No entity with %s=%s",
                                 req->has_identity ? "identity" : "name",
                                 req->has_identity ? req->identity : req->name);
    }
    size_t len;
    const uint8_t *data = jn_encoder_data(row, &len);
    jn_enc_raw(&reply->body, data, len);
    jn_encoder_free(row);
    free(row);
    return jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
}

/* ---- router.link: adminStatus ------------------------------------------------ */

static int link_entry_cb(const char *key, const jn_field_t *v, void *ctx, jn_mgmt_reply_t *reply)
{
    bool *any = ctx;
    char text[16];
    if (strcmp(key, "name") == 0 || strcmp(key, "identity") == 0 || strcmp(key, "type") == 0)
        return 0; /* who it is, not a change */
    if (strcmp(key, "adminStatus") != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Cannot update attribute '%s' in UPDATE", key);
    if (jn_mgmt_field_string(v, text, sizeof text) != 0 ||
        (strcmp(text, "enabled") != 0 && strcmp(text, "disabled") != 0))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Invalid value for attribute 'adminStatus': expected "
                                 "'enabled' or 'disabled'");
    if (strcmp(text, "disabled") == 0) /* docs/compat.md: 1.19 answers 200, changes nothing */
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Attribute 'adminStatus' of router.link: a link cannot be "
                                 "disabled (close its connection: UPDATE of the connection's "
                                 "adminStatus to 'deleted')");
    *any = true;
    return 0;
}

/* UPDATE of a link (1.19 lists it): the body must give adminStatus (400
 * without, as 1.19). "enabled", what every link is, changes nothing and
 * the answer is the link's map; "disabled" and any other attribute are
 * refused by name, never taken and ignored. */
static int update_link(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                       jn_mgmt_reply_t *reply)
{
    bool any = false;
    int st = each_entry(req, reply, link_entry_cb, &any);
    if (st)
        return st;
    if (!any)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "UPDATE of a link needs 'adminStatus'");
    if (jn_mgmt_read_row(agent, cls, req, &reply->body) != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_NOT_FOUND, "No entity with %s=%s",
                                 req->has_identity ? "identity" : "name",
                                 req->has_identity ? req->identity : req->name);
    return jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
}

/* ---- stored entities: sslProfile (certificate rotation), dummy ------------------ */

typedef struct stored_change {
    jn_mgmt_entity_t *copy;
    const char *current_name; /* the entity's name: a body may repeat it only */
} stored_change_t;

static int stored_entry_cb(const char *key, const jn_field_t *v, void *ctx, jn_mgmt_reply_t *reply)
{
    stored_change_t *c = ctx;
    const char *tname = jn_schema_type_short_name(c->copy->type);
    char text[JN_MGMT_STR_MAX];
    if (strcmp(key, "name") == 0 && c->current_name &&
        jn_mgmt_field_string(v, text, sizeof text) == 0 && strcmp(text, c->current_name) != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Conflicting values for 'name'");
    if (strcmp(key, "name") == 0 || strcmp(key, "identity") == 0 || strcmp(key, "type") == 0)
        return 0; /* who it is, not a change */
    const jn_schema_attr_t *a = jn_schema_attr_find(c->copy->type, key);
    if (!a)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Unknown attributes ['%s'] for type %s.", key, tname);
    if (!(jn_schema_attr_flags(a) & JN_SCHEMA_ATTR_UPDATE))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Cannot update attribute '%s' in UPDATE", key);
    int rc = jn_mgmt_entity_set_field(c->copy, a, v, reply);
    if (rc == JN_MGMT_INTERNAL)
        return rc;
    if (rc != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Invalid value for attribute '%s' of %s: expected %s", key, tname,
                                 jn_schema_kind_name(jn_schema_attr_kind(a)));
    return 0;
}

/* ---- log ------------------------------------------------------------------------ */

/* The module a log request names ("log/DEFAULT", "DEFAULT"), or -1. */
static int log_module(const jn_mgmt_request_t *req)
{
    const char *key = req->has_identity ? req->identity : req->name;
    if (strncmp(key, "log/", 4) == 0)
        key += 4;
    int m = jn_log_module_from_name(key);
    return m >= 0 && m < JN_LOG_SCHEMA_MODULE_COUNT ? m : -1;
}

/* The log entity of module m as the module is set now: each attribute it
 * sets itself, null where it follows DEFAULT (so that an UPDATE leaves
 * those following it: jn_entity_apply_log). NULL on ENOMEM. */
static jn_mgmt_entity_t *log_entity_now(jn_log_module_t m)
{
    jn_log_config_t lc;
    jn_mgmt_entity_t *e = jn_mgmt_entity_new_type(jn_schema_type_find("log"));
    if (!e || jn_log_get_config(m, &lc) != 0) {
        jn_mgmt_entity_free(e);
        return NULL;
    }
    const char *module = jn_log_module_name(m);
    char enable[40];
    int rc = jn_mgmt_value_str(jn_mgmt_entity_get(e, "module"), module, strlen(module));
    if (!rc && lc.enable_set && jn_log_mask_format(lc.mask, enable, sizeof enable) >= 0)
        rc = jn_mgmt_value_str(jn_mgmt_entity_get(e, "enable"), enable, strlen(enable));
    if (!rc && lc.output_set)
        rc = jn_mgmt_value_str(jn_mgmt_entity_get(e, "outputFile"), lc.output, strlen(lc.output));
    if (lc.timestamp_set)
        *jn_mgmt_entity_get(e, "includeTimestamp") = jn_mv_bool(lc.include_timestamp);
    if (lc.source_set)
        *jn_mgmt_entity_get(e, "includeSource") = jn_mv_bool(lc.include_source);
    if (rc) {
        jn_mgmt_entity_free(e);
        return NULL;
    }
    return e;
}

/* A log UPDATE's body: the attributes the schema lets UPDATE change (by
 * their names or their deprecated ones), as for a stored entity; the
 * module a body names is not a change (the request's name or identity
 * says which module, as 1.19). */
static int log_entry_cb(const char *key, const jn_field_t *v, void *ctx, jn_mgmt_reply_t *reply)
{
    if (strcmp(key, "module") == 0)
        return 0;
    return stored_entry_cb(key, v, ctx, reply);
}

/* UPDATE of a log module through the entity path, as the file, a reload
 * and CREATE go: the module's entity as it is now takes the body's
 * changes, then one check (jn_entity_check: enable's syntax, an outputFile
 * a running router may open) and one apply (jn_entity_apply_log: the
 * output first, the one step that can fail, so that on any error the
 * module is unchanged). The answer is the module's row. */
static int update_log(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                      jn_mgmt_reply_t *reply)
{
    int m = log_module(req);
    if (m < 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_NOT_FOUND, "No entity with %s=%s",
                                 req->has_identity ? "identity" : "name",
                                 req->has_identity ? req->identity : req->name);
    stored_change_t c = {log_entity_now((jn_log_module_t)m), NULL};
    if (!c.copy)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    int st = each_entry(req, reply, log_entry_cb, &c);
    jn_entity_ctx_t ctx = {.mode = agent->cfg.mode};
    jn_entity_err_t err;
    if (!st && (jn_entity_check(&ctx, c.copy, &err) != 0 || jn_entity_apply_log(c.copy, &err) != 0)) {
        /* the client is not told whether or what an outputFile path is:
         * err's detail, for the operator's log, is */
        jn_entity_err_log(&err);
        st = jn_mgmt_reply_set(reply, err.status, "%s", err.text);
    }
    jn_mgmt_entity_free(c.copy);
    if (st)
        return st;
    JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_INFO, "Updated log module %s",
           jn_log_module_name((jn_log_module_t)m));
    jn_mgmt_read_row(agent, cls, req, &reply->body);
    return jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
}

/* UPDATE of a kept entity whose type lists UPDATE: a copy takes the
 * changed attributes, is checked and acted on (an sslProfile, Junction's
 * own, 1.19 cannot: the new profile is built from the files as they are
 * now and replaces the old one for the connections made from now on, the
 * open ones keep theirs), and its values become the entity's. On any
 * error the entity is unchanged. */
static int update_stored(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                         jn_mgmt_reply_t *reply)
{
    jn_mgmt_entity_t *e = jn_mgmt_store_find(agent, cls, req->has_identity ? NULL : req->name,
                                             req->has_identity ? req->identity : NULL);
    if (!e)
        return jn_mgmt_reply_set(reply, JN_MGMT_NOT_FOUND, "No entity with %s=%s",
                                 req->has_identity ? "identity" : "name",
                                 req->has_identity ? req->identity : req->name);
    stored_change_t c = {jn_mgmt_entity_clone(e), e->name};
    if (!c.copy)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    int st = each_entry(req, reply, stored_entry_cb, &c);
    jn_entity_ctx_t ctx = {
        .mode = agent->cfg.mode, .profile = jn_entity_profile_in_store, .profile_arg = agent};
    jn_entity_err_t err;
    if (!st && (jn_entity_check(&ctx, c.copy, &err) != 0 ||
                jn_entity_create_CT(agent, c.copy, &err) != 0)) {
        jn_entity_err_log(&err);
        st = jn_mgmt_reply_set(reply, err.status, "%s", err.text);
    }
    if (!st) { /* what runs is the copy's now: keep its values */
        for (size_t i = 0; i < e->n_values; i++) {
            jn_mv_t tmp = e->values[i];
            e->values[i] = c.copy->values[i];
            c.copy->values[i] = tmp;
        }
        if (strcmp(cls->name, "sslProfile") == 0)
            JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_INFO, "Updated sslProfile %s: new connections use it",
                   e->name ? e->name : "");
    }
    jn_mgmt_entity_free(c.copy);
    if (st)
        return st;
    jn_mgmt_read_row(agent, cls, req, &reply->body);
    return jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
}

int jn_mgmt_update(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                   jn_mgmt_reply_t *reply)
{
    if (cls->stored && jn_schema_type_has_op(jn_mgmt_class_type(cls), "UPDATE"))
        return update_stored(agent, cls, req, reply);
    if (strcmp(cls->name, "log") == 0)
        return update_log(agent, cls, req, reply);
    if (strcmp(cls->name, "connection") == 0)
        return update_conn(agent, cls, req, reply);
    if (strcmp(cls->name, "router.link") == 0)
        return update_link(agent, cls, req, reply);
    return jn_mgmt_reply_set(reply, JN_MGMT_NOT_IMPLEMENTED,
                             "Operation 'UPDATE' not implemented for '%s'", cls->name);
}
