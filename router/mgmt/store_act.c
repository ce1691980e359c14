/*
 * store_act.c — CREATE and DELETE of configured entities: reading and
 * checking the CREATE body against the schema (reference sections 2.1,
 * 5.2 and 7.1: type and name from the application properties or the body,
 * CREATE-able attributes only, typed values, defaults, the per-type rules
 * of the C agent), and acting on the running router:
 *
 *   listener, connector  the agent's I/O hooks (listen / connect at once;
 *                        DELETE stops listening / retrying, and the
 *                        connector's open connection is closed through
 *                        the core);
 *   router.config.address the core's address configuration (applies to
 *                        addresses created afterwards);
 *   sslProfile, router.config.linkRoute, router.config.autoLink
 *                        kept and listed only.
 *
 * Every refusal is a 400 whose description names the attribute.
 */
#include "mgmt_private.h"
#include "store.h"

#include <junction/core_view.h>

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (!a) {
        size_t used = strlen(unknown);
        snprintf(unknown + used, unknown_cap - used, "%s'%s'", used ? ", " : "", key);
        return 0;
    }
    if (!jn_schema_attr_create(a))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Cannot set attribute '%s' in CREATE",
                                 key);
    jn_mv_t *slot = &e->values[jn_schema_attr_index(a)];
    jn_mgmt_value_free(slot);
    int rc = jn_mgmt_value_from_field(a, v, slot);
    if (rc == JN_ENOMEM)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    if (rc != 0)
        return jn_mgmt_reply_set(
            reply, JN_MGMT_BAD_REQUEST, "Invalid value for attribute '%s' of %s: expected %s", key,
            jn_schema_type_name(e->type), jn_schema_kind_name(jn_schema_attr_kind(a)));
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
        /* address, direction: the type checks below word these as 1.19 */
        if (e->values[i].kind == JN_MV_NULL && jn_schema_attr_required(a) &&
            strcmp(an, "direction") != 0 && strcmp(an, "address") != 0)
            return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                     "Missing required attribute '%s' for type %s", an,
                                     jn_schema_type_name(e->type));
    }
    return 0;
}

static bool given(jn_mgmt_entity_t *e, const char *attr)
{
    jn_mv_t *v = jn_mgmt_entity_get(e, attr);
    return v && v->kind != JN_MV_NULL;
}

static int check_prefix_pattern(jn_mgmt_entity_t *e, jn_mgmt_reply_t *reply)
{
    bool prefix = given(e, "prefix"), pattern = given(e, "pattern");
    if (prefix && pattern)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Cannot specify both a 'prefix' and a 'pattern' attribute");
    if (!prefix && !pattern)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Either a 'prefix' or 'pattern' attribute must be provided");
    return 0;
}

static bool phase_bad(jn_mgmt_entity_t *e, const char *attr)
{
    int64_t p = jn_mgmt_entity_int(e, attr, 0);
    return p < 0 || p > 9;
}

static int check_address(jn_mgmt_entity_t *e, jn_mgmt_reply_t *reply)
{
    int st = check_prefix_pattern(e, reply);
    if (st)
        return st;
    if (phase_bad(e, "ingressPhase") || phase_bad(e, "egressPhase"))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Phase values must be between 0 and 9");
    if (given(e, "priority") && phase_bad(e, "priority"))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Priority values must be between 0 and 9");
    static const char *const unsupported[] = {"ingressPhase", "egressPhase", "priority"};
    for (size_t i = 0; i < 3; i++)
        if (given(e, unsupported[i]))
            return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                     "Attribute '%s' is not supported by this version",
                                     unsupported[i]);
    if (jn_mgmt_entity_bool(e, "waypoint", false) ||
        jn_mgmt_entity_bool(e, "enableFallback", false))
        return jn_mgmt_reply_set(
            reply, JN_MGMT_BAD_REQUEST, "Attribute '%s' is not supported by this version",
            jn_mgmt_entity_bool(e, "waypoint", false) ? "waypoint" : "enableFallback");
    return 0;
}

static int check_link_config(jn_mgmt_entity_t *e, jn_mgmt_reply_t *reply)
{
    bool auto_link = is(e->cls, "router.config.autoLink");
    if (auto_link && (!given(e, "address") || !given(e, "direction")))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "address and direction fields are mandatory");
    if (!auto_link && !given(e, "direction"))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "No 'direction' attribute provided - it is mandatory");
    if (!auto_link) {
        int st = check_prefix_pattern(e, reply);
        if (st)
            return st;
    }
    if (auto_link && phase_bad(e, "phase"))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "autoLink phase must be between 0 and 9");
    if (given(e, "connection") && given(e, "containerId"))
        return jn_mgmt_reply_set(
            reply, JN_MGMT_BAD_REQUEST,
            "Both connection and containerId cannot be specified. Specify only one");
    return 0;
}

static int check_endpoint(jn_mgmt_entity_t *e, jn_mgmt_reply_t *reply)
{
    const char *role = jn_mgmt_entity_str(e, "role");
    if (role && strcmp(role, "normal") != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Attribute 'role' value '%s' is not supported by this version",
                                 role);
    if (given(e, "sslProfile"))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Attribute 'sslProfile' (TLS) is not supported by this version");
    if (jn_mgmt_entity_bool(e, "http", false))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Attribute 'http' is not supported by this version");
    const char *port = jn_mgmt_entity_str(e, "port");
    if (!port || !port[0])
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Attribute 'port' must not be empty");
    /* as the config file's check (router/main.c): a CREATE is refused
     * where a config file would stop start-up */
    bool digits = strspn(port, "0123456789") == strlen(port);
    if (digits ? strlen(port) > 5 || atol(port) > 65535 : getservbyname(port, "tcp") == NULL)
        return jn_mgmt_reply_set(
            reply, JN_MGMT_BAD_REQUEST,
            "Attribute 'port' value '%.80s' is neither a number from 0 to 65535 nor a TCP "
            "service name",
            port);
    return 0;
}

static int check_entity(jn_mgmt_entity_t *e, jn_mgmt_reply_t *reply)
{
    if (is(e->cls, "router.config.address"))
        return check_address(e, reply);
    if (is(e->cls, "router.config.linkRoute") || is(e->cls, "router.config.autoLink"))
        return check_link_config(e, reply);
    if (is(e->cls, "listener") || is(e->cls, "connector"))
        return check_endpoint(e, reply);
    return 0;
}

/* ---- acting ---------------------------------------------------------------- */

static uint32_t u32(jn_mgmt_entity_t *e, const char *attr)
{
    int64_t v = jn_mgmt_entity_int(e, attr, 0);
    return v < 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static jn_strip_t strip_of(const char *s)
{
    if (s && strcmp(s, "in") == 0)
        return JN_STRIP_IN;
    if (s && strcmp(s, "out") == 0)
        return JN_STRIP_OUT;
    return s && strcmp(s, "no") == 0 ? JN_STRIP_NO : JN_STRIP_BOTH;
}

static int act_endpoint(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_mgmt_reply_t *reply)
{
    bool listener = is(e->cls, "listener");
    int (*add)(void *, const jn_endpoint_config_t *) =
        listener ? agent->cfg.add_listener : agent->cfg.add_connector;
    if (!add)
        return 0;
    jn_endpoint_config_t ec = {
        .name = e->name,
        .host = jn_mgmt_entity_str(e, "host"),
        .port = jn_mgmt_entity_str(e, "port"),
        .role = JN_ROLE_NORMAL,
        .sasl_mechanisms = jn_mgmt_entity_str(e, "saslMechanisms"),
        .authenticate_peer = listener && jn_mgmt_entity_bool(e, "authenticatePeer", false),
        .max_frame_size = u32(e, "maxFrameSize"),
        .max_sessions = u32(e, "maxSessions"),
        .max_session_frames = u32(e, "maxSessionFrames"),
        .idle_timeout_seconds = u32(e, "idleTimeoutSeconds"),
        .max_message_size = agent->cfg.max_message_size,
        .link_capacity = u32(e, "linkCapacity"),
        .strip_annotations = strip_of(jn_mgmt_entity_str(e, "stripAnnotations")),
    };
    int rc = add(agent->cfg.io_ctx, &ec);
    if (rc == JN_EINVAL)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "The %s was refused by the I/O layer (host '%s', port '%s')",
                                 e->cls->name, ec.host ? ec.host : "", ec.port ? ec.port : "");
    if (rc != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Cannot create the %s: %s", e->cls->name,
                                 jn_strerror(rc));
    return 0;
}

static int act_address(jn_mgmt_t *agent, jn_mgmt_entity_t *e, bool add, jn_mgmt_reply_t *reply)
{
    if (!agent->cfg.core)
        return 0;
    const char *prefix = jn_mgmt_entity_str(e, "prefix");
    const char *text = prefix ? prefix : jn_mgmt_entity_str(e, "pattern");
    if (!add) {
        jn_core_address_config_remove_CT(agent->cfg.core, text, prefix == NULL);
        return 0;
    }
    jn_mv_t *d = jn_mgmt_entity_get(e, "distribution");
    int dist = jn_schema_attr_enum_index(jn_schema_attr_find(e->type, "distribution"),
                                         d ? jn_mgmt_value_cstr(d) : "balanced");
    int rc = jn_core_address_config_add_CT(agent->cfg.core, text, prefix == NULL,
                                           dist >= 0 ? (jn_distribution_t)dist : JN_DIST_BALANCED,
                                           jn_mgmt_entity_bool(e, "multicastBackpressure", false));
    if (rc == JN_EEXIST)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "An address with %s '%s' already exists",
                                 prefix ? "prefix" : "pattern", text);
    if (rc != 0)
        return jn_mgmt_reply_set(reply, rc == JN_ENOMEM ? JN_MGMT_INTERNAL : JN_MGMT_BAD_REQUEST,
                                 "Cannot add the address: %s", jn_strerror(rc));
    return 0;
}

typedef struct close_ctx {
    jn_core_t *core;
    const char *host;
} close_ctx_t;

static bool close_if_connector(void *arg, const jn_view_conn_t *c)
{
    close_ctx_t *cc = arg;
    if (!c->incoming && strcmp(c->host, cc->host) == 0)
        jn_core_conn_close_CT(cc->core, c->id, NULL, NULL);
    return true;
}

static void act_remove_endpoint(jn_mgmt_t *agent, jn_mgmt_entity_t *e)
{
    if (agent->cfg.remove_endpoint && agent->cfg.remove_endpoint(agent->cfg.io_ctx, e->name) != 0)
        JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_WARNING, "DELETE %s %s: the I/O layer did not know it",
               e->cls->name, e->name);
    if (is(e->cls, "connector") && agent->cfg.core) {
        char host[600];
        const char *h = jn_mgmt_entity_str(e, "host"), *p = jn_mgmt_entity_str(e, "port");
        snprintf(host, sizeof host, "%s:%s", h ? h : "", p ? p : "amqp");
        close_ctx_t cc = {agent->cfg.core, host};
        jn_core_view_conns_CT(agent->cfg.core, 0, SIZE_MAX, close_if_connector, &cc);
    }
}

/* ---- CREATE / DELETE ---------------------------------------------------------- */

static bool name_taken(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const char *name)
{
    if (jn_mgmt_store_find(agent, cls, name, NULL))
        return true;
    /* listeners and connectors share the I/O layer's names */
    const char *other = is(cls, "listener")    ? "connector"
                        : is(cls, "connector") ? "listener"
                                               : NULL;
    return other && jn_mgmt_store_find(agent, jn_mgmt_class_find(other, NULL), name, NULL);
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
    if (!st)
        st = check_entity(e, reply);
    if (!st && has_name && name_taken(agent, e->cls, name))
        st =
            jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Name conflicts with an existing entity");
    if (!st && has_name && !(e->name = strdup(name)))
        st = jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    free(name);
    if (!st && jn_mgmt_entity_set_identity(agent, e, NULL) != 0)
        st = jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    if (!st && !has_name && name_taken(agent, e->cls, e->name ? e->name : ""))
        st =
            jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Name conflicts with an existing entity");
    if (!st && (is(e->cls, "listener") || is(e->cls, "connector")))
        st = act_endpoint(agent, e, reply);
    if (!st && is(e->cls, "router.config.address"))
        st = act_address(agent, e, true, reply);
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
    jn_mv_t *row = calloc(jn_mgmt_class_ncols(cls), sizeof *row);
    if (!row)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    jn_mgmt_entity_row(e, row);
    jn_mgmt_encode_row_map(&reply->body, cls, row);
    free(row);
    return jn_mgmt_reply_set(reply, JN_MGMT_CREATED, "Created");
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
    if (is(cls, "listener") || is(cls, "connector"))
        act_remove_endpoint(agent, e);
    if (is(cls, "router.config.address"))
        act_address(agent, e, false, reply);
    JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_INFO, "Deleted %s %s (identity %s)", cls->name,
           e->name ? e->name : "(unnamed)", e->identity);
    jn_mgmt_store_unlink(agent, e);
    jn_mgmt_entity_free(e);
    jn_enc_map_begin(&reply->body);
    jn_enc_map_end(&reply->body);
    return jn_mgmt_reply_set(reply, JN_MGMT_NO_CONTENT, "No Content");
}
