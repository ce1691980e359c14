/*
 * entity_check.c — the checks every configured entity passes, once,
 * whichever way it came (config file, CREATE, reload): see entity.h.
 *
 * First what the router implements, read from the schema's flags
 * (router/config/schema.json: a type's and an attribute's `implemented`,
 * an enum's `implementedValues`), so that a section or attribute Junction
 * does not act on is refused by name instead of stored and ignored; then
 * the value rules of each type that the schema's types cannot express.
 * 1.19 logs some of these and runs on without the entity; we refuse.
 */
#include "entity.h"

#include <junction/config.h>
#include <junction/decoder.h>
#include <junction/log.h>
#include <junction/message.h>

#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Most worker threads a router may be configured with. */
#define JN_MAX_WORKER_THREADS 128

int jn_entity_fail(jn_entity_err_t *err, int status, const char *attr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->text, sizeof err->text, fmt, ap);
    va_end(ap);
    err->detail[0] = '\0';
    err->group[0] = '\0';
    err->key[0] = '\0';
    err->said = false;
    err->attr = attr;
    err->status = status;
    return status;
}

void jn_entity_err_log(const jn_entity_err_t *err)
{
    if (err->detail[0])
        JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_WARNING, "Management request refused: %s (%s)", err->text,
               err->detail);
}

static const char *type_of(jn_mgmt_entity_t *e)
{
    return jn_schema_type_short_name(e->type);
}

static bool is(jn_mgmt_entity_t *e, const char *short_name)
{
    return strcmp(type_of(e), short_name) == 0;
}

static bool given(jn_mgmt_entity_t *e, const char *attr)
{
    jn_mv_t *v = jn_mgmt_entity_get(e, attr);
    return v && v->kind != JN_MV_NULL;
}

/* value_is_default: v equals attr's schema default (or neither has one). */
static bool value_is_default(const jn_schema_attr_t *attr, const jn_mv_t *v)
{
    if (v->kind == JN_MV_NULL)
        return true;
    jn_mv_t d;
    if (jn_mgmt_value_default(attr, &d) != 0)
        return false;
    bool same = jn_mgmt_value_equal(v, &d);
    jn_mgmt_value_free(&d);
    return same;
}

/* ---- what is implemented ---------------------------------------------------- */

static int check_implemented(jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    const char *type = type_of(e);
    if (!jn_schema_type_implemented(e->type))
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, NULL,
                              "section '%s' is not supported by this version of junctiond", type);
    for (size_t i = 0; i < e->n_values; i++) {
        const jn_schema_attr_t *a = jn_schema_type_attr_at(e->type, i);
        const jn_mv_t *v = &e->values[i];
        const char *name = jn_schema_attr_name(a);
        if (!jn_schema_attr_implemented(a) && !value_is_default(a, v))
            return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, name,
                                  "%s attribute '%s' is not supported by this version of junctiond",
                                  type, name);
        const char *text = v->kind == JN_MV_STR ? v->v.s : NULL;
        if (text && jn_schema_attr_kind(a) == JN_SCHEMA_ENUM &&
            !jn_schema_attr_value_implemented(a, text))
            return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, name,
                                  "%s %s '%s' is not supported by this version of junctiond", type,
                                  name, text);
    }
    return 0;
}

/* ---- value rules, per type -------------------------------------------------- */

static int check_router(jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    const char *id = jn_mgmt_entity_str(e, "id");
    if (id && strlen(id) > 127)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "id",
                              "router id is longer than 127 characters");
    for (const char *c = id; c && *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7f || *c == '/')
            return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "id",
                                  "router id may not contain whitespace, control characters or "
                                  "'/' (it is part of topological addresses)");
    int64_t w = jn_mgmt_entity_int(e, "workerThreads", 1);
    if (w < 1 || w > JN_MAX_WORKER_THREADS)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "workerThreads",
                              "router workerThreads must be from 1 to %d", JN_MAX_WORKER_THREADS);
    static const char *const non_negative[] = {"minPeerIdleTimeoutMs", "writeStallTimeoutSeconds",
                                               "metricsAddressLimit"};
    for (size_t i = 0; i < sizeof non_negative / sizeof non_negative[0]; i++) {
        int64_t v = jn_mgmt_entity_int(e, non_negative[i], 0);
        if (v < 0 || v > UINT32_MAX)
            return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, non_negative[i],
                                  "router %s must be from 0 (off) to %" PRIu32, non_negative[i],
                                  UINT32_MAX);
    }
    return 0;
}

static int check_policy(jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    if (jn_mgmt_entity_int(e, "maxMessageSize", 0) < 0)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "maxMessageSize",
                              "policy maxMessageSize must be 0 (no limit) or more octets");
    int64_t conns = jn_mgmt_entity_int(e, "maxConnections", 65535);
    if (conns < 0 || conns >= UINT32_MAX)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "maxConnections",
                              "policy maxConnections must be from 0 to %" PRIu32, UINT32_MAX - 1);
    return 0;
}

static bool phase_bad(jn_mgmt_entity_t *e, const char *attr)
{
    int64_t p = jn_mgmt_entity_int(e, attr, 0);
    return p < 0 || p > 9;
}

static int check_address(jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    bool prefix = given(e, "prefix"), pattern = given(e, "pattern");
    if (prefix && pattern)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, NULL,
                              "address: cannot specify both a 'prefix' and a 'pattern' attribute");
    if (!prefix && !pattern)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, NULL,
                              "address: either a 'prefix' or 'pattern' attribute must be provided");
    const char *text = jn_mgmt_entity_str(e, prefix ? "prefix" : "pattern");
    if (!text || !text[0])
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, prefix ? "prefix" : "pattern",
                              "address: attribute '%s' must not be empty",
                              prefix ? "prefix" : "pattern");
    if (prefix && text[strspn(text, "./")] == '\0') /* as a linkRoute's */
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "prefix",
                              "address: attribute 'prefix' has no tokens");
    static const char *const phases[] = {"ingressPhase", "egressPhase"};
    for (size_t i = 0; i < 2; i++)
        if (phase_bad(e, phases[i]))
            return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, phases[i],
                                  "address: %s must be between 0 and 9", phases[i]);
    if (given(e, "priority") && jn_mgmt_entity_int(e, "priority", -1) != -1 &&
        phase_bad(e, "priority"))
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "priority",
                              "address: priority must be between 0 and 9");
    return 0;
}

/* linkRoute and autoLink: 1.19's rules and messages. The schema marks
 * address and direction required; the entity path leaves their absence to
 * this check, which words it as 1.19 does. */
static int check_link_config(jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    bool auto_link = is(e, "autoLink");
    if (auto_link && (!given(e, "address") || !given(e, "direction")))
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST,
                              given(e, "address") ? "direction" : "address",
                              "address and direction fields are mandatory");
    if (!auto_link && !given(e, "direction"))
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "direction",
                              "No 'direction' attribute provided - it is mandatory");
    if (!auto_link) {
        bool prefix = given(e, "prefix"), pattern = given(e, "pattern");
        if (prefix && pattern)
            return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, NULL,
                                  "Cannot specify both a 'prefix' and a 'pattern' attribute");
        if (!prefix && !pattern)
            return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, NULL,
                                  "Either a 'prefix' or 'pattern' attribute must be provided");
        const char *text = jn_mgmt_entity_str(e, prefix ? "prefix" : "pattern");
        if (!text || !text[0])
            return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, prefix ? "prefix" : "pattern",
                                  "linkRoute: attribute '%s' must not be empty",
                                  prefix ? "prefix" : "pattern");
        /* separators at the end are dropped (jn_addr_config_add): one
         * that is nothing else has no tokens */
        if (text[strspn(text, "./")] == '\0')
            return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, prefix ? "prefix" : "pattern",
                                  "linkRoute: attribute '%s' has no tokens",
                                  prefix ? "prefix" : "pattern");
    } else if (!jn_mgmt_entity_str(e, "address")[0]) {
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "address",
                              "autoLink: attribute 'address' must not be empty");
    } else if (given(e, "externalAddress") && !jn_mgmt_entity_str(e, "externalAddress")[0]) {
        /* the link would be attached with an empty address: leave it out
         * to use `address` (docs/compat.md) */
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "externalAddress",
                              "autoLink: attribute 'externalAddress' must not be empty (leave it "
                              "out to use 'address')");
    }
    if (auto_link && given(e, "phase") && phase_bad(e, "phase"))
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "phase",
                              "autoLink phase must be between 0 and 9");
    if (given(e, "connection") && given(e, "containerId"))
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "connection",
                              "Both connection and containerId cannot be specified. Specify only "
                              "one");
    return 0;
}

/* port_ok: a decimal port 0..65535, or a TCP service name ("amqp"). */
static bool port_ok(const char *port)
{
    if (!port || !port[0])
        return false;
    if (strspn(port, "0123456789") == strlen(port))
        return strlen(port) <= 5 && atol(port) <= 65535;
    return getservbyname(port, "tcp") != NULL;
}

/* A listener's or connector's openProperties (an encoded map, as the
 * entity keeps it) against the configuration file's rules
 * (jn_config_open_properties_allowed, jn_config_open_property_reserved):
 * 0, or a 400 naming the attribute, in the file's words. */
static int check_open_properties(const char *type, const char *role, jn_mgmt_entity_t *e,
                                 jn_entity_err_t *err)
{
    const jn_mv_t *v = jn_mgmt_entity_get(e, "openProperties");
    if (!v || v->kind != JN_MV_RAW)
        return 0;
    if (!jn_config_open_properties_allowed(role))
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "openProperties",
                              "%s attribute 'openProperties': not allowed with role '%s'", type,
                              role);
    jn_iter_t raw;
    jn_iter_raw_run(&raw, NULL, v->v.raw, v->len);
    jn_decoder_t d, in;
    jn_field_t map, key, value;
    jn_decoder_init(&d, &raw, true);
    if (jn_decoder_next(&d, &map) != 1 || jn_decoder_enter(&d, &map, &in) != 0)
        return 0; /* not a map: the value's own check says so */
    while (jn_decoder_next(&in, &key) == 1 && jn_decoder_next(&in, &value) == 1) {
        char text[128];
        if ((key.type != JN_TYPE_STRING && key.type != JN_TYPE_SYMBOL) ||
            jn_iter_copy_string(&key.payload, text, sizeof text) >= sizeof text)
            continue; /* no reserved key is that long, or other than text */
        if (jn_config_open_property_reserved(text))
            return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "openProperties",
                                  "%s attribute 'openProperties': key '%s' is reserved", type,
                                  text);
    }
    return 0;
}

/* A listener's or connector's counts and timeouts: none is meaningful
 * below 0 (0 means "none" for a timeout, the default for a count); each
 * goes to the wire or to a timer as an unsigned 32-bit value, an idle
 * time-out in milliseconds (AMQP 1.0 2.7.1, open idle-time-out). */
static int check_endpoint_counts(jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    static const struct {
        const char *attr;
        int64_t max;
    } counts[] = {{"idleTimeoutSeconds", UINT32_MAX / 1000},
                  {"initialHandshakeTimeoutSeconds", UINT32_MAX / 1000},
                  {"maxFrameSize", UINT32_MAX},
                  {"maxSessions", UINT32_MAX},
                  {"maxSessionFrames", UINT32_MAX},
                  {"linkCapacity", UINT32_MAX}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        int64_t v = jn_mgmt_entity_int(e, counts[i].attr, 0);
        if (v < 0 || v > counts[i].max)
            return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, counts[i].attr,
                                  "%s attribute '%s' must be from 0 to %" PRId64, type_of(e),
                                  counts[i].attr, counts[i].max);
    }
    return 0;
}

static int check_endpoint(const jn_entity_ctx_t *ctx, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    const char *type = type_of(e);
    const char *role = jn_mgmt_entity_str(e, "role");
    const char *refusal = jn_config_role_refusal(type, role, ctx->mode);
    if (refusal) /* the configuration file's rule (router/config/checks.c) */
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "role", "%s", refusal);
    if (check_open_properties(type, role, e, err) != 0)
        return err->status;

    const char *bad;
    size_t bad_len;
    uint32_t mask;
    if (jn_message_log_components(jn_mgmt_entity_str(e, "messageLoggingComponents"), &mask, &bad,
                                  &bad_len) != 0)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "messageLoggingComponents",
                              "%s messageLoggingComponents: '%.*s' is not a message property, "
                              "app-properties, all or none",
                              type, (int)(bad_len < 64 ? bad_len : 64), bad);
    const char *profile = jn_mgmt_entity_str(e, "sslProfile");
    if (profile && profile[0] && ctx->profile && ctx->profile(ctx->profile_arg, profile) == 0)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "sslProfile",
                              "%s: sslProfile '%s' is not defined", type, profile);
    static const char *const need_tls[] = {"requireSsl", "requireEncryption"};
    for (size_t k = 0; k < 2 && strcmp(type, "listener") == 0; k++)
        if (jn_mgmt_entity_bool(e, need_tls[k], false) && !(profile && profile[0]))
            /* without TLS only a SASL security layer could meet it, and
             * this version offers none */
            return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, need_tls[k],
                                  "listener attribute '%s' needs an sslProfile", need_tls[k]);
    int st = check_endpoint_counts(e, err);
    if (st)
        return st;
    int64_t cost = jn_mgmt_entity_int(e, "cost", 1);
    /* sent as an AMQP int in the open (docs/protocol.md) and summed along paths */
    if (cost < 1 || cost > INT32_MAX)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "cost",
                              "%s cost must be from 1 to 2147483647", type);
    const char *port = jn_mgmt_entity_str(e, "port");
    if (!port_ok(port))
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "port",
                              "%s port '%.80s' is neither a number from 0 to 65535 nor a TCP "
                              "service name",
                              type, port ? port : "");
    return 0;
}

/* An authServicePlugin: where the service is (host, or the deprecated
 * authService) and a TLS profile that exists. */
static int check_auth_plugin(const jn_entity_ctx_t *ctx, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    const char *host = jn_mgmt_entity_str(e, "host");
    const char *old = jn_mgmt_entity_str(e, "authService");
    if ((!host || !host[0]) && !(old && old[0]))
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "host",
                              "authServicePlugin needs host (or the deprecated authService)");
    const char *port = jn_mgmt_entity_str(e, "port");
    if (host && host[0] && !port_ok(port))
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "port",
                              "authServicePlugin port '%.80s' is neither a number from 1 to "
                              "65535 nor a TCP service name",
                              port ? port : "");
    const char *profile = jn_mgmt_entity_str(e, "sslProfile");
    if (profile && profile[0] && ctx->profile && ctx->profile(ctx->profile_arg, profile) == 0)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "sslProfile",
                              "authServicePlugin: sslProfile '%s' is not defined", profile);
    return 0;
}

/* An outputFile a running router may open on its core thread: stderr,
 * stdout, syslog, or a path that is a regular file or does not exist yet.
 * A FIFO or a device could block open() and with it all routing. */
static bool output_ok(const char *path)
{
    if (strcmp(path, "stderr") == 0 || strcmp(path, "stdout") == 0 || strcmp(path, "syslog") == 0)
        return true;
    struct stat st;
    return stat(path, &st) != 0 || S_ISREG(st.st_mode);
}

static int check_log(jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    const char *module = jn_mgmt_entity_str(e, "module");
    int m = module ? jn_log_module_from_name(module) : -1;
    if (m < 0 || m >= JN_LOG_SCHEMA_MODULE_COUNT)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "module", "log: unknown module '%s'",
                              module ? module : "");
    const char *enable = jn_mgmt_entity_str(e, "enable");
    unsigned mask;
    char why[160];
    if (enable && jn_log_parse_enable(enable, &mask, why, sizeof why) != 0)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "enable", "log %s: enable: %s", module,
                              why);
    const char *output = jn_mgmt_entity_str(e, "outputFile");
    if (output && (!output[0] || !output_ok(output))) {
        /* the client is not told whether or what the path is (detail:
         * the operator's log and a config file's errors) */
        jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "outputFile", "log %s: outputFile %s", module,
                       JN_ENTITY_LOG_OUTPUT_PROBLEM);
        snprintf(err->detail, sizeof err->detail,
                 "log %s: outputFile '%s' exists and is not a regular file", module, output);
        return err->status;
    }
    return 0;
}

/* Longest name and host an entity may have: management must be able to
 * address it (names up to JN_MGMT_STR_MAX - 1 octets in a request) by its
 * name and by its identity ("listener/<host>:<port>:<name>"). */
#define JN_ENTITY_NAME_MAX 500
#define JN_ENTITY_HOST_MAX 255

int jn_entity_check(const jn_entity_ctx_t *ctx, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    if (e->name && strlen(e->name) > JN_ENTITY_NAME_MAX)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "name",
                              "%s name is longer than %d characters", type_of(e),
                              JN_ENTITY_NAME_MAX);
    const char *host = jn_mgmt_entity_str(e, "host");
    if (host && strlen(host) > JN_ENTITY_HOST_MAX)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "host",
                              "%s host is longer than %d characters", type_of(e),
                              JN_ENTITY_HOST_MAX);
    int st = check_implemented(e, err);
    if (st)
        return st;
    if (is(e, "router"))
        return check_router(e, err);
    if (is(e, "policy"))
        return check_policy(e, err);
    if (is(e, "address"))
        return check_address(e, err);
    if (is(e, "listener") || is(e, "connector"))
        return check_endpoint(ctx, e, err);
    if (is(e, "log"))
        return check_log(e, err);
    if (is(e, "authServicePlugin"))
        return check_auth_plugin(ctx, e, err);
    if (is(e, "linkRoute") || is(e, "autoLink"))
        return check_link_config(e, err);
    if (is(e, "vhost"))
        return jn_entity_check_vhost(ctx, e, err);
    return 0;
}
