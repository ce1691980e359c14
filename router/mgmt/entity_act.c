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
#include <junction/message.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

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
    if (s && strcmp(s, "edge") == 0)
        return JN_ROLE_EDGE;
    return s && strcmp(s, "inter-router") == 0 ? JN_ROLE_INTER_ROUTER : JN_ROLE_NORMAL;
}

/* A listener served by the HTTP layer: http: yes, or an httpRootDir given
 * (as in 1.19, where a root directory implies http). A connector has
 * neither attribute. */
static bool is_http_listener(jn_mgmt_entity_t *e)
{
    return jn_mgmt_entity_bool(e, "http", false) || jn_mgmt_entity_str(e, "httpRootDir");
}

/* A listener on port 0 records the port the system gave it, so that its
 * `port` attribute (and junction-stat, QUERY) shows where it listens. */
void jn_entity_record_port_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e)
{
    const char *port = jn_mgmt_entity_str(e, "port");
    char bound[16];
    bool http = is_http_listener(e);
    int (*lookup)(void *, const char *, char *, size_t) =
        http ? agent->cfg.http_listener_port : agent->cfg.listener_port;
    bool zero = port && port[0] && strspn(port, "0") == strlen(port); /* "0", "00"... */
    if (!zero || !lookup ||
        lookup(http ? agent->cfg.http_ctx : agent->cfg.io_ctx, e->name, bound, sizeof bound) != 0)
        return;
    jn_mv_t *v = jn_mgmt_entity_get(e, "port");
    jn_mv_t fresh;
    if (jn_mgmt_value_str(&fresh, bound, strlen(bound)) != 0)
        return; /* out of memory: it keeps showing 0 */
    jn_mgmt_value_free(v);
    *v = fresh;
    e->port_any = true;
}

/* A port as a number: decimal, or a TCP service name. -1 if neither. */
static int port_number(const char *port)
{
    if (!port)
        return -1;
    if (port[0] && strspn(port, "0123456789") == strlen(port))
        return atoi(port);
    struct servent *s = getservbyname(port, "tcp");
    return s ? ntohs((uint16_t)s->s_port) : -1;
}

/* messageLoggingComponents as a mask (checked: jn_entity_check). */
static uint32_t log_components_of(const char *v)
{
    uint32_t mask = 0;
    return jn_message_log_components(v, &mask, NULL, NULL) == 0 ? mask : 0;
}

/* socketAddressFamily (a connector's protocolFamily) as an address family. */
static int family_of(const char *v)
{
    if (!v)
        return 0;
    return strcmp(v, "IPv6") == 0 ? AF_INET6 : strcmp(v, "IPv4") == 0 ? AF_INET : 0;
}

static int endpoint_config(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_endpoint_config_t *ec,
                           char *password, size_t cap, jn_entity_err_t *err);
static int check_sasl(jn_mgmt_t *agent, const jn_entity_ctx_t *ctx, jn_mgmt_entity_t *e,
                      const jn_endpoint_config_t *ec, jn_entity_err_t *err);

/* The AMQP side of an http listener with websockets: yes: a bridged
 * listener of the I/O layer of the same name, with the entity's AMQP
 * settings (SASL, limits, role, requireSsl, requireEncryption). TLS is the
 * HTTP layer's; the sslProfile's name stays for its uid map (a client
 * certificate's user for EXTERNAL). */
static int add_bridged_listener(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    if (!agent->cfg.add_listener)
        return 0; /* unit tests: stored only */
    char password[8];
    jn_endpoint_config_t ec;
    jn_entity_ctx_t ctx = {.mode = agent->cfg.mode,
                           .profile = jn_entity_profile_in_store,
                           .profile_arg = agent};
    int st = endpoint_config(agent, e, &ec, password, sizeof password, err);
    if (st == 0)
        st = check_sasl(agent, &ctx, e, &ec, err);
    if (st)
        return st;
    ec.bridged = true;
    int rc = agent->cfg.add_listener(agent->cfg.io_ctx, &ec);
    if (rc != 0)
        return jn_entity_fail(err, rc == JN_ENOMEM ? JN_MGMT_INTERNAL : JN_MGMT_BAD_REQUEST,
                              "websockets", "listener %s: cannot add its AMQP side: %s",
                              e->name ? e->name : "", jn_strerror(rc));
    return 0;
}

/* A listener with http: yes: served by the HTTP layer (and, with
 * websockets: yes, AMQP over WebSocket through a bridged io listener). */
static int create_http_listener(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    if (!agent->cfg.add_http_listener)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "http",
                              "listener attribute 'http' is not supported by this router");
    char why[256] = "";
    jn_endpoint_http_config_t lc = {
        .name = e->name,
        .host = jn_mgmt_entity_str(e, "host"),
        .port = port_number(jn_mgmt_entity_str(e, "port")),
        .root_dir = jn_mgmt_entity_str(e, "httpRootDir"),
        .metrics = jn_mgmt_entity_bool(e, "metrics", true),
        .healthz = jn_mgmt_entity_bool(e, "healthz", true),
        .websockets = jn_mgmt_entity_bool(e, "websockets", true),
        .prometheus_names = jn_mgmt_entity_bool(e, "metricsPrometheusNames", false),
    };
    const char *profile = jn_mgmt_entity_str(e, "sslProfile");
    char key_password[256] = "";
    if (profile && profile[0]) {
        jn_mgmt_entity_t *p =
            jn_mgmt_store_find(agent, jn_mgmt_class_find("sslProfile", NULL), profile, NULL);
        if (!p)
            return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "sslProfile",
                                  "listener: sslProfile '%s' is not defined", profile);
        lc.cert_file = jn_mgmt_entity_str(p, "certFile");
        lc.key_file = jn_mgmt_entity_str(p, "privateKeyFile");
        lc.ca_file = jn_mgmt_entity_str(p, "caCertFile");
        lc.ciphers = jn_mgmt_entity_str(p, "ciphers");
        const char *spec = jn_mgmt_entity_str(p, "password");
        if (spec && agent->cfg.resolve_password &&
            agent->cfg.resolve_password(spec, key_password, sizeof key_password, why,
                                        sizeof why) == 0)
            lc.key_password = key_password;
        if (!lc.cert_file || !lc.cert_file[0])
            return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "sslProfile",
                                  "listener: sslProfile '%s' has no certFile to serve HTTPS with",
                                  profile);
        /* a client certificate is asked for (and must verify against the
         * caCertFile) when authenticatePeer is yes, whatever saslMechanisms
         * says (1.19's HTTP rule: an HTTP request has no SASL), or when
         * EXTERNAL is among saslMechanisms (the TCP listener's rule) */
        jn_endpoint_config_t want = {
            .ssl_profile = profile,
            .sasl_mechanisms = jn_mgmt_entity_str(e, "saslMechanisms"),
            .authenticate_peer = jn_mgmt_entity_bool(e, "authenticatePeer", false),
        };
        lc.client_cert = lc.ca_file && lc.ca_file[0] &&
                         (want.authenticate_peer || jn_endpoint_wants_client_cert(&want));
        /* requireSsl: no serves clients without TLS as well (1.19), unless
         * they would get around a required client certificate or
         * requireEncryption */
        lc.plain_too = !lc.client_cert && !jn_mgmt_entity_bool(e, "requireSsl", false) &&
                       !jn_mgmt_entity_bool(e, "requireEncryption", false);
    }
    if (lc.websockets) {
        int st = add_bridged_listener(agent, e, err);
        if (st) {
            memset(key_password, 0, sizeof key_password);
            return st;
        }
    }
    why[0] = '\0';
    int rc = agent->cfg.add_http_listener(agent->cfg.http_ctx, &lc, why, sizeof why);
    memset(key_password, 0, sizeof key_password);
    if (rc != 0 && lc.websockets && agent->cfg.remove_endpoint && agent->cfg.add_listener)
        agent->cfg.remove_endpoint(agent->cfg.io_ctx, e->name);
    if (rc == JN_EINVAL || rc == JN_EEXIST)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST,
                              strstr(why, "httpRootDir") ? "httpRootDir" : "port",
                              "listener %s: %s", e->name ? e->name : "", why);
    if (rc != 0)
        return jn_entity_fail(err, JN_MGMT_INTERNAL, NULL, "cannot create the listener: %s",
                              jn_strerror(rc));
    jn_entity_record_port_CT(agent, e);
    return 0;
}

/* ---- sslProfile ---------------------------------------------------------------- */

static const char *entity_attr(void *e, const char *attr)
{
    return jn_mgmt_entity_str(e, attr);
}

/* What is wrong with an sslProfile's attribute, in words that give away
 * nothing of the file system (whether a path exists, what it holds). */
static const char *tls_problem(const char *attr)
{
    static const struct {
        const char *attr, *problem;
    } problems[] = {
        {"certFile", "cannot be read as a certificate"},
        {"privateKeyFile", "cannot be read as the certificate's private key"},
        {"password", "cannot be resolved, or does not unlock the private key"},
        {"passwordFile", "cannot be read, or does not unlock the private key"},
        {"caCertFile", "cannot be read as CA certificates"},
        {"ciphers", "no cipher matches"},
        {"protocols", "not a list of TLSv1, TLSv1.1, TLSv1.2, TLSv1.3"},
        {"uidFormat", "its letters are c s l o u n 1 2 5"},
        {"uidNameMappingFile", "cannot be read as a JSON object of strings"},
    };
    for (size_t i = 0; i < sizeof problems / sizeof problems[0]; i++)
        if (strcmp(attr, problems[i].attr) == 0)
            return problems[i].problem;
    return "is not valid";
}

/* Build (and when register_it, register) e's TLS profile. */
static int tls_profile(jn_mgmt_t *agent, jn_mgmt_entity_t *e, bool register_it,
                       jn_entity_err_t *err)
{
    if (!agent->cfg.add_tls_profile)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, NULL,
                              "section 'sslProfile' is not supported by this router");
    char why[400] = "";
    const char *bad = NULL;
    int rc = agent->cfg.add_tls_profile(agent->cfg.io_ctx, e->name ? e->name : "", entity_attr,
                                        e, register_it, why, sizeof why, &bad);
    if (rc == 0)
        return 0;
    const char *name = e->name ? e->name : "";
    if (bad) {
        /* the client learns which attribute and what kind of problem, not
         * whether or what a path holds (the detail: operator only) */
        jn_entity_fail(err, JN_MGMT_BAD_REQUEST, bad, "sslProfile '%s': attribute '%s': %s", name,
                       bad, tls_problem(bad));
        snprintf(err->detail, sizeof err->detail, "sslProfile '%s': attribute '%s': %s", name, bad,
                 why);
        return err->status;
    }
    jn_entity_fail(
        err, rc == JN_ENOMEM ? JN_MGMT_INTERNAL : JN_MGMT_BAD_REQUEST, NULL, "sslProfile '%s': %s",
        name, rc == JN_ENOMEM ? jn_strerror(rc) : "cannot be set up (the router's log says why)");
    snprintf(err->detail, sizeof err->detail, "sslProfile '%s': %s", name,
             why[0] ? why : jn_strerror(rc));
    return err->status;
}

int jn_entity_profile_in_store(void *arg, const char *name)
{
    jn_mgmt_t *agent = arg;
    jn_mgmt_entity_t *p =
        jn_mgmt_store_find(agent, jn_mgmt_class_find("sslProfile", NULL), name, NULL);
    if (!p)
        return 0;
    const char *ca = jn_mgmt_entity_str(p, "caCertFile");
    return ca && ca[0] ? 2 : 1;
}

/* ---- listeners and connectors ------------------------------------------------------ */

/* Fill ec from e; a connector's saslPassword is resolved into password
 * (cap octets). Returns 0 or the status with err filled. */
static int endpoint_config(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_endpoint_config_t *ec,
                           char *password, size_t cap, jn_entity_err_t *err)
{
    bool listener = is(e, "listener");
    *ec = (jn_endpoint_config_t){
        .name = e->name,
        .host = jn_mgmt_entity_str(e, "host"),
        .port = jn_mgmt_entity_str(e, "port"),
        .family = family_of(jn_mgmt_entity_str(e, listener ? "socketAddressFamily"
                                                           : "protocolFamily")),
        .message_logging = log_components_of(jn_mgmt_entity_str(e, "messageLoggingComponents")),
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
        .ssl_profile = jn_mgmt_entity_str(e, "sslProfile"),
        .require_ssl = listener && jn_mgmt_entity_bool(e, "requireSsl", false),
        .require_encryption = listener && jn_mgmt_entity_bool(e, "requireEncryption", false),
        /* a connector verifies the server's name unless told not to (1.19) */
        .verify_hostname = !listener && jn_mgmt_entity_bool(e, "verifyHostname", true),
        .handshake_timeout_seconds = listener ? u32(e, "initialHandshakeTimeoutSeconds") : 0,
        .sasl_username = listener ? NULL : jn_mgmt_entity_str(e, "saslUsername"),
        .policy_vhost = jn_mgmt_entity_str(e, "policyVhost"), /* listener or connector */
        .failover_urls = listener ? jn_mgmt_entity_str(e, "failoverUrls") : NULL,
        .multi_tenant = listener && jn_mgmt_entity_bool(e, "multiTenant", false),
    };
    const jn_mv_t *op = jn_mgmt_entity_get(e, "openProperties");
    if (op && op->kind == JN_MV_RAW) {
        ec->open_properties = op->v.raw;
        ec->open_properties_len = op->len;
    }
    const char *spec = listener ? NULL : jn_mgmt_entity_str(e, "saslPassword");
    if (!spec)
        return 0;
    char why[256] = "";
    if (!agent->cfg.resolve_password ||
        agent->cfg.resolve_password(spec, password, cap, why, sizeof why) != 0) {
        /* 1.19 logged this and sent the unresolved text; refused here,
         * saying nothing of the file or variable to the client */
        jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "saslPassword",
                       "connector attribute 'saslPassword': cannot be resolved");
        snprintf(err->detail, sizeof err->detail, "connector attribute 'saslPassword': %s",
                 why[0] ? why : "cannot be resolved");
        return err->status;
    }
    ec->sasl_password = password;
    return 0;
}

/* A listener's SASL settings against what Cyrus offers. */
static int check_sasl(jn_mgmt_t *agent, const jn_entity_ctx_t *ctx, jn_mgmt_entity_t *e,
                      const jn_endpoint_config_t *ec, jn_entity_err_t *err)
{
    if (!is(e, "listener") || !agent->cfg.check_sasl)
        return 0;
    bool can_external = ec->ssl_profile && ec->ssl_profile[0] && ctx->profile &&
                        ctx->profile(ctx->profile_arg, ec->ssl_profile) == 2;
    jn_endpoint_config_t http_ec;
    if (is_http_listener(e) && can_external && ec->authenticate_peer) {
        /* the HTTP layer requires a verified client certificate: TLS has
         * authenticated the peer before its WebSocket reaches SASL */
        http_ec = *ec;
        http_ec.authenticate_peer = false;
        ec = &http_ec;
    }
    char why[400] = "";
    if (agent->cfg.check_sasl(agent->cfg.io_ctx, ec, can_external, why, sizeof why) == 0)
        return 0;
    return jn_entity_fail(err, JN_MGMT_BAD_REQUEST,
                          strstr(why, "authenticatePeer") ? "authenticatePeer" : "saslMechanisms",
                          "listener: %s", why);
}

int jn_entity_validate_CT(jn_mgmt_t *agent, const jn_entity_ctx_t *ctx, jn_mgmt_entity_t *e,
                          jn_entity_err_t *err)
{
    if (is(e, "sslProfile"))
        return tls_profile(agent, e, false, err);
    if ((!is(e, "listener") && !is(e, "connector")) ||
        (is_http_listener(e) && !jn_mgmt_entity_bool(e, "websockets", true)))
        return 0;
    char password[256];
    jn_endpoint_config_t ec;
    int st = endpoint_config(agent, e, &ec, password, sizeof password, err);
    const char *plugin = jn_mgmt_entity_str(e, "saslPlugin");
    if (st == 0 && !(plugin && plugin[0])) /* an auth service offers its own mechanisms */
        st = check_sasl(agent, ctx, e, &ec, err);
    memset(password, 0, sizeof password);
    return st;
}

/* A port given in an authServicePlugin's deprecated authService
 * ("host:port", "amqp://host:port" or "amqps://host:port"; "[v6]:port"). */
static void split_auth_service(const char *addr, char *host, size_t hcap, char *port, size_t pcap)
{
    const char *p = strstr(addr, "://");
    p = p ? p + 3 : addr;
    const char *colon = strrchr(p, ':');
    const char *close = strchr(p, ']');
    if (p[0] == '[' && close && (!colon || colon < close))
        colon = NULL;
    size_t hlen = colon ? (size_t)(colon - p) : strlen(p);
    if (p[0] == '[' && close && close < p + hlen) { /* [v6] */
        p++;
        hlen = (size_t)(close - p);
    }
    snprintf(host, hcap, "%.*s", (int)hlen, p);
    snprintf(port, pcap, "%s", colon && colon[1] ? colon + 1 : "amqp");
}

/* A listener's saslPlugin: fill ec's auth_service_* from the
 * authServicePlugin it names (host and port, or the deprecated
 * authService; realm; sslProfile), using host and port (hcap, pcap octets)
 * for a split authService. Returns 0 or the status with err filled. */
static int auth_service_config(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_endpoint_config_t *ec,
                               char *host, size_t hcap, char *port, size_t pcap,
                               jn_entity_err_t *err)
{
    const char *name = jn_mgmt_entity_str(e, "saslPlugin");
    if (!name || !name[0] || !is(e, "listener"))
        return 0;
    if (is_http_listener(e))
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "saslPlugin",
                              "listener attribute 'saslPlugin' is not supported on an http "
                              "listener");
    jn_mgmt_entity_t *p =
        jn_mgmt_store_find(agent, jn_mgmt_class_find("authServicePlugin", NULL), name, NULL);
    if (!p)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "saslPlugin",
                              "listener attribute 'saslPlugin': no authServicePlugin named '%s'",
                              name);
    const char *h = jn_mgmt_entity_str(p, "host");
    const char *old = jn_mgmt_entity_str(p, "authService");
    if ((!h || !h[0]) && old && old[0]) {
        split_auth_service(old, host, hcap, port, pcap);
        ec->auth_service_host = host;
        ec->auth_service_port = port;
    } else {
        ec->auth_service_host = h;
        ec->auth_service_port = jn_mgmt_entity_str(p, "port");
    }
    ec->auth_service_realm = jn_mgmt_entity_str(p, "realm");
    ec->auth_service_ssl_profile = jn_mgmt_entity_str(p, "sslProfile");
    return 0;
}

static int create_endpoint(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    if (is(e, "listener") && is_http_listener(e))
        return create_http_listener(agent, e, err);
    bool listener = is(e, "listener");
    int (*add)(void *, const jn_endpoint_config_t *) =
        listener ? agent->cfg.add_listener : agent->cfg.add_connector;
    if (!add)
        return 0; /* unit tests: stored only */
    char password[256];
    jn_endpoint_config_t ec;
    jn_entity_ctx_t ctx = {.mode = agent->cfg.mode,
                           .profile = jn_entity_profile_in_store,
                           .profile_arg = agent};
    char auth_host[256], auth_port[64];
    int st = endpoint_config(agent, e, &ec, password, sizeof password, err);
    if (st == 0)
        st = auth_service_config(agent, e, &ec, auth_host, sizeof auth_host, auth_port,
                                 sizeof auth_port, err);
    if (st == 0 && !ec.auth_service_host) /* else the service offers the mechanisms */
        st = check_sasl(agent, &ctx, e, &ec, err);
    if (st) {
        memset(password, 0, sizeof password);
        return st;
    }
    int rc = add(agent->cfg.io_ctx, &ec); /* copies what it keeps */
    memset(password, 0, sizeof password);
    const char *why = listener && rc == JN_EINVAL && agent->cfg.listen_error
                          ? agent->cfg.listen_error(agent->cfg.io_ctx)
                          : NULL;
    if (why && why[0]) /* the system's reason, as the log line gives it */
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "port",
                              "listener %s: cannot listen on %s:%s: %s", e->name ? e->name : "",
                              ec.host ? ec.host : "", ec.port ? ec.port : "", why);
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
    int priority = (int)jn_mgmt_entity_int(e, "priority", -1);
    if (priority >= 0)
        jn_core_address_config_set_priority_CT(agent->cfg.core, priority);
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
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "name",
                              "linkRoute: a link route named '%s' already exists", c.name);
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

/* A phase attribute: its value, 0 when not given. */
static int phase_of(jn_mgmt_entity_t *e, const char *attr)
{
    jn_mv_t *v = jn_mgmt_entity_get(e, attr);
    return v && v->kind != JN_MV_NULL ? (int)jn_mgmt_entity_int(e, attr, 0) : 0;
}

/* An exchange or binding the core refused: 1.19's description, as a 400
 * (an allocation failure as a 500). */
static int refused_by_core(jn_entity_err_t *err, int rc, const char *attr, const char *why)
{
    return jn_entity_fail(err, rc == JN_ENOMEM ? JN_MGMT_INTERNAL : JN_MGMT_BAD_REQUEST, attr,
                          "%s", why);
}

static int create_exchange(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    if (!agent->cfg.core)
        return 0;
    const char *method = jn_mgmt_entity_str(e, "matchMethod");
    jn_exchange_config_t c = {
        .name = key_of(e),
        .address = jn_mgmt_entity_str(e, "address"),
        .phase = phase_of(e, "phase"),
        .alternate = jn_mgmt_entity_str(e, "alternateAddress"),
        .alternate_phase = phase_of(e, "alternatePhase"),
        .mqtt = method && strcmp(method, "mqtt") == 0,
    };
    const char *why = "";
    int rc = jn_core_exchange_add_CT(agent->cfg.core, &c, &why);
    return rc ? refused_by_core(err, rc, NULL, why) : 0;
}

static int create_binding(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    if (!agent->cfg.core)
        return 0;
    jn_binding_config_t c = {
        .name = key_of(e),
        .exchange = jn_mgmt_entity_str(e, "exchangeName"),
        .key = jn_mgmt_entity_str(e, "bindingKey"),
        .next_hop = jn_mgmt_entity_str(e, "nextHopAddress"),
        .next_hop_phase = phase_of(e, "nextHopPhase"),
    };
    const char *why = "";
    int rc = jn_core_binding_add_CT(agent->cfg.core, &c, &why);
    return rc ? refused_by_core(err, rc, NULL, why) : 0;
}

int jn_entity_create_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    if (is(e, "exchange"))
        return create_exchange(agent, e, err);
    if (is(e, "binding"))
        return create_binding(agent, e, err);
    if (is(e, "sslProfile"))
        return tls_profile(agent, e, true, err);
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

/* The run-time columns of an exchange or binding (1.19's C agent types:
 * int phases, uint bindingCount, ulong counters). */
static void exchange_status_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_mv_t *row)
{
    bool ex = is(e, "exchange");
    jn_exchange_stats_t st;
    uint64_t matched = 0;
    if (ex ? jn_core_exchange_stats_CT(agent->cfg.core, key_of(e), &st) != 0
           : jn_core_binding_matched_CT(agent->cfg.core, key_of(e), &matched) != 0)
        return;
    size_t n = jn_mgmt_class_ncols(e->cls);
    for (size_t c = 0; c < n; c++) {
        const char *col = jn_mgmt_class_col(e->cls, c);
        if (!ex) {
            if (strcmp(col, "matchedCount") == 0)
                row[c] = jn_mv_ulong(matched);
            else if (strcmp(col, "nextHopPhase") == 0)
                row[c] = jn_mv_int(JN_MV_INT, phase_of(e, "nextHopPhase"));
            else if (strcmp(col, "bindingKey") == 0 && !jn_mgmt_entity_str(e, "bindingKey"))
                row[c] = jn_mv_str("#");
            continue;
        }
        if (strcmp(col, "phase") == 0)
            row[c] = jn_mv_int(JN_MV_INT, st.phase);
        else if (strcmp(col, "alternatePhase") == 0)
            row[c] = st.alternate ? jn_mv_int(JN_MV_INT, st.alternate_phase) : jn_mv_null();
        else if (strcmp(col, "bindingCount") == 0)
            row[c] = jn_mv_uint(st.bindings);
        else if (strcmp(col, "receivedCount") == 0)
            row[c] = jn_mv_ulong(st.received);
        else if (strcmp(col, "droppedCount") == 0)
            row[c] = jn_mv_ulong(st.dropped);
        else if (strcmp(col, "forwardedCount") == 0)
            row[c] = jn_mv_ulong(st.forwarded);
        else if (strcmp(col, "divertedCount") == 0)
            row[c] = jn_mv_ulong(st.diverted);
    }
}

/* A connector's connectionStatus and connectionMsg, from the I/O layer
 * (1.19's words: SUCCESS when its connection is open, else CONNECTING),
 * and its failoverUrls (null without backups). */
static void connector_status_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_mv_t *row)
{
    static char msg[400];   /* the core thread's, until the next row */
    static char urls[4096]; /* likewise */
    bool opened = false;
    if (!agent->cfg.connector_status || !e->name ||
        agent->cfg.connector_status(agent->cfg.io_ctx, e->name, &opened, msg, sizeof msg) != 0)
        return;
    if (!agent->cfg.connector_failover_urls ||
        agent->cfg.connector_failover_urls(agent->cfg.io_ctx, e->name, urls, sizeof urls) != 0)
        urls[0] = '\0';
    size_t n = jn_mgmt_class_ncols(e->cls);
    for (size_t c = 0; c < n; c++) {
        const char *col = jn_mgmt_class_col(e->cls, c);
        if (strcmp(col, "connectionStatus") == 0)
            row[c] = jn_mv_str(opened ? "SUCCESS" : "CONNECTING");
        else if (strcmp(col, "connectionMsg") == 0)
            row[c] = msg[0] ? jn_mv_str(msg) : jn_mv_null();
        else if (strcmp(col, "failoverUrls") == 0)
            row[c] = urls[0] ? jn_mv_str(urls) : jn_mv_null();
    }
}

void jn_entity_status_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_mv_t *row)
{
    if (is(e, "connector")) {
        connector_status_CT(agent, e, row);
        return;
    }
    if (agent->cfg.core && key_of(e) && (is(e, "exchange") || is(e, "binding"))) {
        exchange_status_CT(agent, e, row);
        return;
    }
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
        else if (!lr && strcmp(col, "phase") == 0 && row[c].kind == JN_MV_NULL)
            /* the phase it uses, as 1.19's agent shows it: in 1, out 0 */
            row[c] = jn_mv_int(JN_MV_INT, dir_of(e) == JN_LINK_INCOMING ? 1 : 0);
    }
}

/* ---- undo ------------------------------------------------------------------ */

void jn_entity_delete_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e)
{
    if (is(e, "sslProfile")) { /* connections made with it keep it */
        if (agent->cfg.remove_tls_profile)
            agent->cfg.remove_tls_profile(agent->cfg.io_ctx, e->name ? e->name : "");
        return;
    }
    if (is(e, "exchange") || is(e, "binding")) {
        /* an exchange takes its bindings with it (the store forgets their
         * entities: jn_mgmt_store_delete) */
        if (agent->cfg.core && key_of(e)) {
            if (is(e, "exchange"))
                jn_core_exchange_remove_CT(agent->cfg.core, key_of(e), NULL, NULL);
            else
                jn_core_binding_remove_CT(agent->cfg.core, key_of(e));
        }
        return;
    }
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
    if (is(e, "listener") && is_http_listener(e)) {
        if (agent->cfg.remove_http_listener)
            agent->cfg.remove_http_listener(agent->cfg.http_ctx, e->name);
        if (jn_mgmt_entity_bool(e, "websockets", true) && agent->cfg.remove_endpoint)
            agent->cfg.remove_endpoint(agent->cfg.io_ctx, e->name);
        return;
    }
    /* a connector's own connection (and only it) is closed by the I/O
     * layer */
    if (agent->cfg.remove_endpoint && agent->cfg.remove_endpoint(agent->cfg.io_ctx, e->name) != 0)
        JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_WARNING, "Removing %s %s: the I/O layer did not know it",
               jn_schema_type_short_name(e->type), e->name);
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
    if (jn_log_set_output(mod, output, why, sizeof why) != 0) {
        /* why names the file system's reason: the operator's only */
        jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "outputFile", "log %s: outputFile %s",
                       jn_log_module_name(mod), JN_ENTITY_LOG_OUTPUT_PROBLEM);
        snprintf(err->detail, sizeof err->detail, "log %s: outputFile: %s", jn_log_module_name(mod),
                 why);
        return err->status;
    }
    const char *enable = jn_mgmt_entity_str(e, "enable");
    jn_log_set_enable(mod, enable ? enable : "default", NULL, 0);
    jn_log_set_include_timestamp(mod, tristate(e, "includeTimestamp"));
    jn_log_set_include_source(mod, tristate(e, "includeSource"));
    return 0;
}
