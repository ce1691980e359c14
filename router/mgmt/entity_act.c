/*
 * entity_act.c — what a configured entity does to the running router, and
 * its undo (entity.h): listeners and connectors through the agent's I/O
 * hooks, address rules through the core, log settings through the log
 * module. The same code runs for the config file at start, for management
 * CREATE/DELETE and for a reload, so the three cannot drift apart.
 */
#include "entity.h"

#include <junction/core_view.h>
#include <junction/log.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is(jn_mgmt_entity_t *e, const char *short_name)
{
    return strcmp(jn_schema_type_short_name(e->type), short_name) == 0;
}

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

static jn_conn_role_t role_of(const char *s)
{
    if (s && strcmp(s, "route-container") == 0)
        return JN_ROLE_ROUTE_CONTAINER;
    return s && strcmp(s, "inter-router") == 0 ? JN_ROLE_INTER_ROUTER : JN_ROLE_NORMAL;
}

/* A listener on port 0 records the port the system gave it, so that its
 * `port` attribute (and junction-stat, QUERY) shows where it listens. */
void jn_entity_record_port_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e)
{
    const char *port = jn_mgmt_entity_str(e, "port");
    char bound[16];
    if (!port || strcmp(port, "0") != 0 || !agent->cfg.listener_port ||
        agent->cfg.listener_port(agent->cfg.io_ctx, e->name, bound, sizeof bound) != 0)
        return;
    jn_mv_t *v = jn_mgmt_entity_get(e, "port");
    jn_mv_t fresh;
    if (jn_mgmt_value_str(&fresh, bound, strlen(bound)) != 0)
        return; /* out of memory: it keeps showing 0 */
    jn_mgmt_value_free(v);
    *v = fresh;
}

static int create_endpoint(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    bool listener = is(e, "listener");
    int (*add)(void *, const jn_endpoint_config_t *) =
        listener ? agent->cfg.add_listener : agent->cfg.add_connector;
    if (!add)
        return 0; /* unit tests: stored only */
    jn_endpoint_config_t ec = {
        .name = e->name,
        .host = jn_mgmt_entity_str(e, "host"),
        .port = jn_mgmt_entity_str(e, "port"),
        .role = role_of(jn_mgmt_entity_str(e, "role")),
        .cost = u32(e, "cost"),
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
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "port",
                              "%s %s: cannot %s %s:%s (the router's log says why)",
                              listener ? "listener" : "connector", e->name ? e->name : "",
                              listener ? "listen on" : "connect to", ec.host ? ec.host : "",
                              ec.port ? ec.port : "");
    if (rc != 0)
        return jn_entity_fail(err, JN_MGMT_INTERNAL, NULL, "cannot create the %s: %s",
                              listener ? "listener" : "connector", jn_strerror(rc));
    if (listener)
        jn_entity_record_port_CT(agent, e);
    return 0;
}

static int distribution_of(jn_mgmt_entity_t *e)
{
    const char *d = jn_mgmt_entity_str(e, "distribution");
    int i = jn_schema_attr_enum_index(jn_schema_attr_find(e->type, "distribution"),
                                      d ? d : "balanced");
    return i >= 0 ? i : JN_DIST_BALANCED; /* the schema's order is jn_distribution_t's */
}

static int create_address(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    if (!agent->cfg.core)
        return 0;
    const char *prefix = jn_mgmt_entity_str(e, "prefix");
    const char *text = prefix ? prefix : jn_mgmt_entity_str(e, "pattern");
    int rc = jn_core_address_config_add_CT(agent->cfg.core, text, prefix == NULL,
                                           (jn_distribution_t)distribution_of(e),
                                           jn_mgmt_entity_bool(e, "multicastBackpressure", false));
    if (rc == JN_EEXIST)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, prefix ? "prefix" : "pattern",
                              "address: an address with %s '%s' already exists",
                              prefix ? "prefix" : "pattern", text);
    if (rc != 0)
        return jn_entity_fail(err, rc == JN_ENOMEM ? JN_MGMT_INTERNAL : JN_MGMT_BAD_REQUEST, NULL,
                              "address: cannot add it: %s", jn_strerror(rc));
    bool waypoint = jn_mgmt_entity_bool(e, "waypoint", false);
    int ingress = (int)jn_mgmt_entity_int(e, "ingressPhase", 0);
    int egress = (int)jn_mgmt_entity_int(e, "egressPhase", waypoint ? 1 : 0);
    if (ingress || egress)
        jn_core_address_config_set_phases_CT(agent->cfg.core, ingress, egress);
    if (jn_mgmt_entity_bool(e, "enableFallback", false))
        jn_core_address_config_set_fallback_CT(agent->cfg.core, true);
    return 0;
}

/* The core's key for a link route or auto-link: its name, else its
 * identity (a file section may have no name; both are unique). */
static const char *key_of(jn_mgmt_entity_t *e)
{
    return e->name ? e->name : e->identity;
}

static jn_link_dir_t dir_of(jn_mgmt_entity_t *e)
{
    const char *d = jn_mgmt_entity_str(e, "direction");
    return d && strcmp(d, "in") == 0 ? JN_LINK_INCOMING : JN_LINK_OUTGOING;
}

static int create_link_route(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    if (!agent->cfg.core)
        return 0;
    jn_link_route_config_t c = {
        .name = key_of(e),
        .prefix = jn_mgmt_entity_str(e, "prefix"),
        .pattern = jn_mgmt_entity_str(e, "pattern"),
        .dir = dir_of(e),
        .container_id = jn_mgmt_entity_str(e, "containerId"),
        .connection = jn_mgmt_entity_str(e, "connection"),
        .add_external_prefix = jn_mgmt_entity_str(e, "addExternalPrefix"),
        .del_external_prefix = jn_mgmt_entity_str(e, "delExternalPrefix"),
    };
    int rc = jn_core_link_route_add_CT(agent->cfg.core, &c);
    if (rc == JN_EEXIST)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, c.prefix ? "prefix" : "pattern",
                              "linkRoute: a link route with %s '%s' and direction '%s' already "
                              "exists",
                              c.prefix ? "prefix" : "pattern", c.prefix ? c.prefix : c.pattern,
                              c.dir == JN_LINK_INCOMING ? "in" : "out");
    if (rc != 0)
        return jn_entity_fail(err, rc == JN_ENOMEM ? JN_MGMT_INTERNAL : JN_MGMT_BAD_REQUEST, NULL,
                              "linkRoute: cannot add it: %s", jn_strerror(rc));
    return 0;
}

static int create_autolink(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    if (!agent->cfg.core)
        return 0;
    jn_mv_t *phase = jn_mgmt_entity_get(e, "phase");
    jn_autolink_config_t c = {
        .name = key_of(e),
        .address = jn_mgmt_entity_str(e, "address"),
        .dir = dir_of(e),
        .phase = phase && phase->kind != JN_MV_NULL ? (int)jn_mgmt_entity_int(e, "phase", 0) : -1,
        .container_id = jn_mgmt_entity_str(e, "containerId"),
        .connection = jn_mgmt_entity_str(e, "connection"),
        .external_address = jn_mgmt_entity_str(e, "externalAddress"),
        .fallback = jn_mgmt_entity_bool(e, "fallback", false),
    };
    int rc = jn_core_autolink_add_CT(agent->cfg.core, &c);
    if (rc != 0)
        return jn_entity_fail(err, rc == JN_ENOMEM ? JN_MGMT_INTERNAL : JN_MGMT_BAD_REQUEST, NULL,
                              "autoLink: cannot add it: %s", jn_strerror(rc));
    return 0;
}

int jn_entity_create_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    if (is(e, "listener") || is(e, "connector"))
        return create_endpoint(agent, e, err);
    if (is(e, "address"))
        return create_address(agent, e, err);
    if (is(e, "linkRoute"))
        return create_link_route(agent, e, err);
    if (is(e, "autoLink"))
        return create_autolink(agent, e, err);
    return 0;
}

void jn_entity_status_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_mv_t *row)
{
    bool lr = is(e, "linkRoute");
    if (!agent->cfg.core || (!lr && !is(e, "autoLink")) || !key_of(e))
        return;
    const char *status = NULL, *last_error = NULL;
    uint64_t link_id = 0;
    if (lr)
        status = jn_core_link_route_status_CT(agent->cfg.core, key_of(e));
    else if (jn_core_autolink_status_CT(agent->cfg.core, key_of(e), &status, &last_error,
                                        &link_id) != 0)
        status = NULL;
    size_t n = jn_mgmt_class_ncols(e->cls);
    for (size_t c = 0; c < n && status; c++) {
        const char *col = jn_mgmt_class_col(e->cls, c);
        if (strcmp(col, "operStatus") == 0)
            row[c] = jn_mv_str(status);
        else if (!lr && strcmp(col, "lastError") == 0)
            row[c] = last_error ? jn_mv_str(last_error) : jn_mv_null();
    }
}

/* ---- undo ------------------------------------------------------------------ */

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

void jn_entity_delete_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e)
{
    if (is(e, "linkRoute") || is(e, "autoLink")) {
        if (agent->cfg.core && key_of(e)) {
            if (is(e, "linkRoute"))
                jn_core_link_route_remove_CT(agent->cfg.core, key_of(e));
            else
                jn_core_autolink_remove_CT(agent->cfg.core, key_of(e));
        }
        return;
    }
    if (is(e, "address")) {
        const char *prefix = jn_mgmt_entity_str(e, "prefix");
        if (agent->cfg.core)
            jn_core_address_config_remove_CT(agent->cfg.core,
                                             prefix ? prefix : jn_mgmt_entity_str(e, "pattern"),
                                             prefix == NULL);
        return;
    }
    if (!is(e, "listener") && !is(e, "connector"))
        return;
    if (agent->cfg.remove_endpoint && agent->cfg.remove_endpoint(agent->cfg.io_ctx, e->name) != 0)
        JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_WARNING, "Removing %s %s: the I/O layer did not know it",
               jn_schema_type_short_name(e->type), e->name);
    if (is(e, "connector") && agent->cfg.core) {
        char host[600];
        const char *h = jn_mgmt_entity_str(e, "host"), *p = jn_mgmt_entity_str(e, "port");
        snprintf(host, sizeof host, "%s:%s", h ? h : "", p ? p : "amqp");
        close_ctx_t cc = {agent->cfg.core, host};
        jn_core_view_conns_CT(agent->cfg.core, 0, SIZE_MAX, close_if_connector, &cc);
    }
}

/* ---- log --------------------------------------------------------------------- */

static int log_module_of(jn_mgmt_entity_t *e)
{
    const char *name = jn_mgmt_entity_str(e, "module");
    return name ? jn_log_module_from_name(name) : -1;
}

void jn_entity_reset_log(jn_mgmt_entity_t *e)
{
    int m = log_module_of(e);
    if (m < 0)
        return;
    jn_log_set_enable((jn_log_module_t)m, "default", NULL, 0);
    jn_log_set_include_timestamp((jn_log_module_t)m, JN_LOG_INHERIT);
    jn_log_set_include_source((jn_log_module_t)m, JN_LOG_INHERIT);
    jn_log_set_output((jn_log_module_t)m, NULL, NULL, 0);
}

static int tristate(jn_mgmt_entity_t *e, const char *attr)
{
    jn_mv_t *v = jn_mgmt_entity_get(e, attr);
    return v && v->kind == JN_MV_BOOL ? v->v.b : JN_LOG_INHERIT;
}

int jn_entity_apply_log(jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    int m = log_module_of(e);
    if (m < 0)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "module", "log: unknown module");
    jn_log_module_t mod = (jn_log_module_t)m;
    const char *output = jn_mgmt_entity_str(e, "outputFile");
    char why[256] = "";
    /* the output first: the one step that can fail, before anything changed */
    if (jn_log_set_output(mod, output, why, sizeof why) != 0)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "outputFile", "log %s: outputFile: %s",
                              jn_log_module_name(mod), why);
    const char *enable = jn_mgmt_entity_str(e, "enable");
    jn_log_set_enable(mod, enable ? enable : "default", NULL, 0);
    jn_log_set_include_timestamp(mod, tristate(e, "includeTimestamp"));
    jn_log_set_include_source(mod, tristate(e, "includeSource"));
    return 0;
}
