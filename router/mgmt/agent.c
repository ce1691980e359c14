/*
 * agent.c — the management agent (junction/mgmt.h): its life, the request
 * entry point the core calls, and dispatch by operation (docs/protocol.md,
 * "Management requests").
 *
 * A request is decoded (request.c), answered into a jn_mgmt_reply_t
 * (status, description, body), composed into a message (reply.c) and sent
 * through the core. Every request that has a reply-to gets an answer:
 * where 1.19 stays silent (section 5.1 "no reply") this agent answers 501.
 */
#include "mgmt_private.h"
#include "entity.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NODE_TYPE JN_SCHEMA_PREFIX ".management"

static char *dup_or(const char *s, const char *dflt)
{
    return strdup(s ? s : dflt);
}

jn_mgmt_t *jn_mgmt_create(const jn_mgmt_config_t *cfg)
{
    if (!cfg || !cfg->router_id || !cfg->router_id[0])
        return NULL;
    jn_mgmt_t *agent = calloc(1, sizeof *agent);
    if (!agent)
        return NULL;
    agent->cfg = *cfg;
    agent->cfg.router_id = strdup(cfg->router_id);
    agent->cfg.mode = dup_or(cfg->mode, "standalone");
    agent->cfg.version = dup_or(cfg->version, "unknown");
    agent->cfg.metadata = cfg->metadata ? strdup(cfg->metadata) : NULL;
    agent->cfg.config_path = cfg->config_path ? strdup(cfg->config_path) : NULL;
    agent->cfg.default_vhost = dup_or(cfg->default_vhost, "$default");
    agent->cfg.policy_dir = dup_or(cfg->policy_dir, "");
    agent->start_time = (int64_t)time(NULL);
    agent->next_id = 1;
    if (!agent->cfg.router_id || !agent->cfg.mode || !agent->cfg.version ||
        (cfg->metadata && !agent->cfg.metadata) || (cfg->config_path && !agent->cfg.config_path) ||
        !agent->cfg.default_vhost || !agent->cfg.policy_dir) {
        jn_mgmt_free(agent);
        return NULL;
    }
    return agent;
}

void jn_mgmt_free(jn_mgmt_t *agent)
{
    if (!agent)
        return;
    jn_mgmt_store_free(agent);
    while (agent->vhosts) {
        jn_mgmt_entity_t *e = agent->vhosts;
        agent->vhosts = e->next;
        jn_mgmt_entity_free(e);
    }
    free((char *)agent->cfg.router_id);
    free((char *)agent->cfg.mode);
    free((char *)agent->cfg.version);
    free((char *)agent->cfg.metadata);
    free((char *)agent->cfg.config_path);
    free((char *)agent->cfg.default_vhost);
    free((char *)agent->cfg.policy_dir);
    jn_config_free(agent->file);
    free(agent);
}

size_t jn_mgmt_entity_count(const jn_mgmt_t *agent)
{
    return jn_mgmt_store_count(agent, NULL);
}

/* ---- dispatch -------------------------------------------------------------- */

/* The management node's schema type: the operations a request to the node
 * itself may ask for. */
static const jn_schema_type_t *node_schema_type(void)
{
    return jn_schema_type_find("management");
}

/* Refuse operation op on type st (NULL: the node), which does not list it
 * among its schema operations: 501 naming the operation, the type and the
 * operations it has, in 1.19's words ("Operation 'X' not implemented for
 * 'T' ['A', 'B']"). Returns the status. */
static int not_implemented(jn_mgmt_reply_t *reply, const char *op, const jn_schema_type_t *st)
{
    if (!st)
        st = node_schema_type();
    char list[256] = "";
    size_t used = 0;
    for (size_t i = 0; st && i < jn_schema_type_op_count(st); i++) {
        int n = snprintf(list + used, sizeof list - used, "%s'%s'", used ? ", " : "",
                         jn_schema_type_op_at(st, i));
        if (n < 0 || (size_t)n >= sizeof list - used)
            break;
        used += (size_t)n;
    }
    return jn_mgmt_reply_set(reply, JN_MGMT_NOT_IMPLEMENTED,
                             "Operation '%s' not implemented for '%s' [%s]", op,
                             st ? jn_schema_type_name(st) : NODE_TYPE, list);
}

/* Is this type name the management node (org.amqp.management or
 * management, in any of their spellings)? */
static bool is_node_type(const char *t)
{
    const jn_schema_type_t *st = t[0] ? jn_schema_type_find(t) : NULL;
    return st && (strcmp(jn_schema_type_name(st), "org.amqp.management") == 0 ||
                  strcmp(jn_schema_type_name(st), "management") == 0);
}

/* The `type` of a CREATE given only in the body (accepted, docs/protocol.md "Management requests").
 */
static bool body_type(const jn_mgmt_request_t *req, char *out, size_t cap)
{
    jn_decoder_t map;
    jn_field_t k, v;
    if (!req->has_body || req->body.type != JN_TYPE_MAP ||
        jn_decoder_enter(&req->body_dec, &req->body, &map) != 0)
        return false;
    while (jn_decoder_next(&map, &k) == 1 && jn_decoder_next(&map, &v) == 1)
        if (jn_field_equal_string(&k, "type"))
            return jn_mgmt_field_string(&v, out, cap) == 0;
    return false;
}

static int node_read(jn_mgmt_reply_t *reply)
{
    jn_encoder_t *e = &reply->body;
    jn_enc_map_begin(e);
    jn_enc_cstring(e, "identity");
    jn_enc_cstring(e, "self");
    jn_enc_cstring(e, "name");
    jn_enc_cstring(e, "self");
    jn_enc_cstring(e, "type");
    jn_enc_cstring(e, NODE_TYPE);
    jn_enc_map_end(e);
    return jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
}

/* A READ, UPDATE or DELETE that names its entity (identity or name) but
 * gives no type: the class holding that entity, as 1.19's agent finds it
 * (its harness reads `router.node/R2` so). The identity's own prefix before
 * '/' is tried first (identities are "TYPE/KEY"), then every class in
 * table order; NULL when none holds it. Core thread (the agent's). */
static const jn_mgmt_class_t *class_of_entity(jn_mgmt_t *agent, const jn_mgmt_request_t *req,
                                              const jn_schema_type_t **st)
{
    const char *key = req->has_identity ? req->identity : req->name;
    const char *slash = strchr(key, '/');
    char prefix[JN_MGMT_STR_MAX];
    const jn_mgmt_class_t *first = NULL;
    if (slash && (size_t)(slash - key) < sizeof prefix) {
        memcpy(prefix, key, (size_t)(slash - key));
        prefix[slash - key] = '\0';
        first = jn_mgmt_class_find(prefix, NULL);
    }
    jn_encoder_t scratch;
    jn_encoder_init(&scratch);
    const jn_mgmt_class_t *found = NULL;
    if (first && jn_schema_type_has_op(jn_mgmt_class_type(first), "READ") &&
        jn_mgmt_read_row(agent, first, req, &scratch) == 0)
        found = first;
    for (size_t i = 0; !found && i < jn_mgmt_class_count(); i++) {
        const jn_mgmt_class_t *c = jn_mgmt_class_at(i);
        if (c == first || !jn_schema_type_has_op(jn_mgmt_class_type(c), "READ"))
            continue;
        jn_encoder_free(&scratch);
        jn_encoder_init(&scratch);
        if (jn_mgmt_read_row(agent, c, req, &scratch) == 0)
            found = c;
    }
    jn_encoder_free(&scratch);
    if (found)
        jn_mgmt_class_find(found->name, st);
    return found;
}

/* What 1.19 forbids (403) rather than lacks: creating or deleting the
 * router, deleting a connection (a connection is closed by an UPDATE of
 * its adminStatus). None of them is among the type's schema operations. */
static bool forbidden(const jn_mgmt_class_t *cls, const char *op)
{
    if (!cls)
        return false;
    if (strcmp(cls->name, "router") == 0)
        return strcmp(op, "CREATE") == 0 || strcmp(op, "DELETE") == 0;
    return strcmp(cls->name, "connection") == 0 && strcmp(op, "DELETE") == 0;
}

/* A READ, UPDATE or DELETE of type st found no such entity: when an
 * entity of another type has that name or identity, the request named the
 * wrong type (400, as 1.19's Python agent answers); else the 404 stands. */
static int other_type(jn_mgmt_t *agent, const jn_schema_type_t *st, const jn_mgmt_request_t *req,
                      jn_mgmt_reply_t *reply)
{
    const jn_schema_type_t *found = NULL;
    if (!class_of_entity(agent, req, &found) || !found || found == st)
        return reply->status;
    jn_encoder_free(&reply->body);
    jn_encoder_init(&reply->body);
    return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Entity %s=%s is of type %s, not %s",
                             req->has_identity ? "identity" : "name",
                             req->has_identity ? req->identity : req->name,
                             jn_schema_type_full_name(found), jn_schema_type_full_name(st));
}

static int no_entity(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    return jn_mgmt_reply_set(reply, JN_MGMT_NOT_FOUND, "No entity with %s=%s",
                             req->has_identity ? "identity" : "name",
                             req->has_identity ? req->identity : req->name);
}

/* READ of a type that has no class of its own (an abstract type such as
 * configurationEntity, or one Junction does not act on, such as console):
 * the entity of that kind the request names, else 404 (none of a type
 * Junction does not act on ever exists). */
static int read_unserved(jn_mgmt_t *agent, const jn_schema_type_t *st, const jn_mgmt_request_t *req,
                         jn_mgmt_reply_t *reply)
{
    if (!req->has_name && !req->has_identity)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "No name or identity provided");
    const jn_schema_type_t *found = NULL;
    const jn_mgmt_class_t *cls = NULL;
    if (jn_schema_type_flags(st) & JN_SCHEMA_TYPE_ABSTRACT)
        cls = class_of_entity(agent, req, &found);
    if (!cls || !found || !jn_schema_type_is_a(found, st) ||
        jn_mgmt_read_row(agent, cls, req, &reply->body) != 0)
        return no_entity(req, reply);
    return jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
}

/* CALLME on a dummy (1.19's test operation): the answer's body is the
 * request's application properties, as they came. */
static int callme(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                  jn_mgmt_reply_t *reply)
{
    if (!req->has_name && !req->has_identity)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "No name or identity provided");
    jn_encoder_t scratch;
    jn_encoder_init(&scratch);
    int found = jn_mgmt_read_row(agent, cls, req, &scratch);
    jn_encoder_free(&scratch);
    if (found != 0)
        return no_entity(req, reply);
    jn_iter_t it = req->properties; /* parsed already: well formed */
    jn_decoder_t d, map;
    jn_field_t f, k, v;
    jn_decoder_init(&d, &it, true);
    jn_enc_map_begin(&reply->body);
    if (jn_decoder_next(&d, &f) == 1 && jn_decoder_enter(&d, &f, &map) == 0)
        while (jn_decoder_next(&map, &k) == 1 && jn_decoder_next(&map, &v) == 1) {
            jn_enc_raw_iter(&reply->body, &k.encoded);
            jn_enc_raw_iter(&reply->body, &v.encoded);
        }
    jn_enc_map_end(&reply->body);
    return jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
}

/* RELOAD on the router entity: Junction's own operation (1.19 has no
 * reload); the body of the answer is empty, the description says what
 * changed or why nothing did. */
static int reload(jn_mgmt_t *agent, jn_mgmt_reply_t *reply)
{
    char *text = malloc(sizeof reply->description);
    if (!text)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    int status = jn_mgmt_reload_CT(agent, text, sizeof reply->description);
    if (status != JN_MGMT_OK) /* as a reload on SIGHUP is */
        JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_ERROR, "Reload by management: %s", text);
    jn_enc_map_begin(&reply->body);
    jn_enc_map_end(&reply->body);
    jn_mgmt_reply_set(reply, status, "%s", text);
    free(text);
    return status;
}

/* The type (and its class, NULL when Junction serves none) an entity
 * request is about: its `type` (or a CREATE body's), else the type of the
 * entity it names. Returns 0, or the status of the refusal it set. */
static int entity_type_of(jn_mgmt_t *agent, const jn_mgmt_request_t *req, const char *type,
                          const jn_schema_type_t **st, const jn_mgmt_class_t **cls,
                          jn_mgmt_reply_t *reply)
{
    *st = NULL;
    if (type[0] || (!req->has_name && !req->has_identity)) {
        *cls = jn_mgmt_class_find(type, st);
    } else if (!(*cls = class_of_entity(agent, req, st))) { /* by identity or name alone */
        return no_entity(req, reply);
    }
    if (!*st)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "No such entity type '%s'", type);
    return 0;
}

/* CREATE, READ, UPDATE, DELETE (and the types' own: CALLME, RELOAD) of
 * one entity, and any operation the node does not answer itself. The
 * operation must be one of the type's schema operations (what
 * GET-OPERATIONS lists for it): any other is refused, 501 (403 where 1.19
 * forbids it), before anything is looked at. */
static int entity_op(jn_mgmt_t *agent, const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    const char *op = req->operation;
    char type[JN_MGMT_STR_MAX];
    snprintf(type, sizeof type, "%s", req->has_type ? req->type : "");
    if (!type[0] && strcmp(op, "CREATE") == 0 && !body_type(req, type, sizeof type))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "No 'type' attribute provided");
    bool unnamed = !req->has_name && !req->has_identity;
    if (is_node_type(type) || (!type[0] && (unnamed || strcmp(req->name, "self") == 0))) {
        if (strcmp(op, "READ") == 0)
            return node_read(reply);
        return not_implemented(reply, op, NULL);
    }
    const jn_schema_type_t *st;
    const jn_mgmt_class_t *cls;
    if (entity_type_of(agent, req, type, &st, &cls, reply))
        return reply->status;
    if (forbidden(cls, op))
        return jn_mgmt_reply_set(reply, JN_MGMT_FORBIDDEN,
                                 "You are not allowed to perform this operation (%s of %s).", op,
                                 cls->name);
    if (!jn_schema_type_has_op(st, op))
        return not_implemented(reply, op, st);
    if (!cls && strcmp(op, "READ") == 0)
        return read_unserved(agent, st, req, reply);
    if (!cls) /* the schema lists an operation no code serves */
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Operation '%s' of '%s' has no handler",
                                 op, jn_schema_type_name(st));
    if (strcmp(op, "RELOAD") == 0)
        return reload(agent, reply);
    if (strcmp(op, "CALLME") == 0)
        return callme(agent, cls, req, reply);
    bool conn_lr = strcmp(cls->name, "router.connection.linkRoute") == 0;
    if (conn_lr && (strcmp(op, "CREATE") == 0 || strcmp(op, "DELETE") == 0))
        return jn_mgmt_conn_link_route_op(agent, cls, req, reply);
    if (strcmp(cls->name, "vhost") == 0 && strcmp(op, "READ") != 0) {
        if (strcmp(op, "CREATE") != 0 && unnamed)
            return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "No name or identity provided");
        return jn_mgmt_vhost_op(agent, cls, req, reply);
    }
    if (strcmp(op, "CREATE") == 0)
        return jn_mgmt_store_create(agent, cls, req, reply);
    bool singleton = jn_schema_type_flags(st) & JN_SCHEMA_TYPE_SINGLETON;
    if (unnamed && !singleton)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "No name or identity provided");
    int status;
    if (strcmp(op, "DELETE") == 0)
        status = jn_mgmt_store_delete(agent, cls, req, reply);
    else if (strcmp(op, "UPDATE") == 0)
        status = jn_mgmt_update(agent, cls, req, reply);
    else if (strcmp(op, "READ") != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Operation '%s' of '%s' has no handler",
                                 op, cls->name);
    else if (jn_mgmt_read_row(agent, cls, req, &reply->body) != 0)
        status = jn_mgmt_is_c_agent_type(jn_schema_type_full_name(st))
                     ? jn_mgmt_reply_set(reply, JN_MGMT_NOT_FOUND, "Not Found") /* 1.19's C agent */
                     : no_entity(req, reply);
    else
        status = jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
    return status == JN_MGMT_NOT_FOUND && !unnamed ? other_type(agent, st, req, reply) : status;
}

void jn_mgmt_reload_call(void *arg, jn_core_t *core)
{
    (void)core;
    char text[2048];
    jn_mgmt_t *agent = arg;
    int status = jn_mgmt_reload_CT(agent, text, sizeof text);
    if (status != JN_MGMT_OK)
        JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_ERROR, "Reload on SIGHUP: %s", text);
}

/* The management node's own operations (QUERY and the GET-* of
 * org.amqp.management and management) are answered whatever type the
 * request names; every other operation is about an entity (entity_op). */
static int dispatch(jn_mgmt_t *agent, const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    const char *op = req->operation;
    if (strcmp(op, "QUERY") == 0)
        return jn_mgmt_query(agent, req, reply);
    if (strcmp(op, "GET-TYPES") == 0)
        return jn_mgmt_get_types(req, reply);
    if (strcmp(op, "GET-ATTRIBUTES") == 0)
        return jn_mgmt_get_attributes(req, reply);
    if (strcmp(op, "GET-OPERATIONS") == 0)
        return jn_mgmt_get_operations(req, reply);
    if (strcmp(op, "GET-MGMT-NODES") == 0)
        return jn_mgmt_get_mgmt_nodes(agent, req, reply);
    if (strcmp(op, "GET-SCHEMA") == 0)
        return jn_mgmt_get_schema(req, reply);
    if (strcmp(op, "GET-JSON-SCHEMA") == 0)
        return jn_mgmt_get_json_schema(req, reply);
    if (strcmp(op, "GET-LOG") == 0)
        return jn_mgmt_get_log(req, reply);
    if (strcmp(op, "GET-ANNOTATIONS") == 0) {
        jn_enc_map_begin(&reply->body);
        jn_enc_map_end(&reply->body);
        return jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
    }
    return entity_op(agent, req, reply);
}

static int send_reply(jn_mgmt_t *agent, jn_core_t *core, jn_message_t *msg)
{
    if (agent->cfg.send)
        return agent->cfg.send(agent->cfg.send_ctx, core, msg);
    return jn_core_send_CT(core, msg);
}

void jn_mgmt_request_CT(void *ctx, jn_core_t *core, jn_message_t *request)
{
    jn_mgmt_t *agent = ctx;
    size_t size = jn_message_length(request);
    jn_mgmt_request_t *req = malloc(sizeof *req);
    jn_mgmt_reply_t *reply = malloc(sizeof *reply);
    if (!req || !reply) {
        JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_ERROR, "Out of memory answering a management request");
        free(req);
        free(reply);
        return;
    }
    reply->status = 0;
    reply->description[0] = '\0';
    jn_encoder_init(&reply->body);
    int rc;
    if (size > JN_MGMT_MAX_REQUEST) {
        /* decoding it would hold up the core thread (all routing): only
         * the properties, to answer it */
        JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_WARNING,
               "Management request of %zu octets refused: the limit is %u", size,
               JN_MGMT_MAX_REQUEST);
        rc = jn_mgmt_request_parse_head(request, req, reply);
        if (rc == 0)
            rc = jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                   "Request of %zu octets is above the agent's limit of %u octets",
                                   size, JN_MGMT_MAX_REQUEST);
    } else {
        rc = jn_mgmt_request_parse(request, req, reply);
    }
    if (!req->has_reply_to) {
        JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_INFO, "Management request %s without reply-to dropped",
               req->operation[0] ? req->operation : "(no operation)");
    } else {
        if (rc == 0) {
            JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_DEBUG, "Agent request %s type=%s name=%s",
                   req->operation_sent, jn_mgmt_request_type(req, true),
                   req->has_identity ? req->identity : req->name);
            dispatch(agent, req, reply);
        }
        if (reply->status >= 400) /* 1.19's words: operators (and its tests) look for them */
            JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_ERROR, "Error performing %s: %s",
                   req->operation[0] ? req->operation : "(no operation)", reply->description);
        JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_DEBUG, "%s type=%s name=%s: %d %s", req->operation,
               jn_mgmt_request_type(req, true), req->has_identity ? req->identity : req->name,
               reply->status, reply->description);
        jn_message_t *msg = jn_mgmt_reply_compose(req, reply);
        int sent = msg ? send_reply(agent, core, msg) : JN_ENOMEM;
        if (sent != 0)
            JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_WARNING, "Management reply to %s not sent: %s",
                   req->reply_to, jn_strerror(sent));
    }
    jn_encoder_free(&reply->body);
    free(req);
    free(reply);
}

