/*
 * junctiond — the Junction router daemon: arguments, configuration, logging,
 * signals, start and orderly stop.
 *
 * Start-up: read the configuration (the file given with -c, or the built-in
 * default: a standalone router listening on 127.0.0.1:5672 with SASL
 * ANONYMOUS), refuse by name — "FILE:LINE: ..." and exit status 1 — any
 * section, mode or role this version does not implement, apply the `log`
 * sections, build the core (router id, default distribution, `address`
 * entities) and the I/O layer (worker threads, listeners, connectors),
 * optionally daemonize and write a pid file, then start: a listener that
 * cannot be opened fails the start (exit status 1), as a required listener
 * does in qdrouterd.
 *
 * Stop: on SIGTERM or SIGINT, close every connection with a close frame
 * (bounded: 3 s, then the rest are cut), stop the core, free everything and
 * report pool objects still in use; a leak makes the exit status 3.
 *
 * Defaults chosen here:
 *   - router id: a file without `router.id` gets "<Mode>_" followed by 15
 *     random letters and digits, as qdrouterd 1.19 generates
 *     ("Standalone_eBeZr2Ce2HFQvyQ"); the built-in default config says
 *     "Junction".
 *   - workerThreads: the file's value; when the file does not set it, the
 *     number of online cores (DESIGN.md), not the schema's 4.
 */
#include <junction/config.h>
#include <junction/core.h>
#include <junction/core_view.h>
#include <junction/io.h>
#include <junction/log.h>
#include <junction/mgmt.h>
#include <junction/pool.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <sys/resource.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef JN_VERSION
#define JN_VERSION "unknown"
#endif

/* How long connections get to close on SIGTERM before they are cut; the
 * rest of the 5 s budget is for cutting them and stopping the core. */
#define STOP_CLOSE_MS 3000

/* The configuration used when no -c is given (qdrouterd.conf syntax). */
static const char default_config[] = "router {\n"
                                     "    mode: standalone\n"
                                     "    id: Junction\n"
                                     "}\n"
                                     "listener {\n"
                                     "    host: 127.0.0.1\n"
                                     "    port: 5672\n"
                                     "    role: normal\n"
                                     "    saslMechanisms: ANONYMOUS\n"
                                     "    authenticatePeer: no\n"
                                     "}\n";

/* Section types this version implements (short schema names). */
static const char *const implemented[] = {"router", "listener", "connector", "address",
                                          "log",    "policy",   "sslProfile"};

typedef struct options {
    const char *config_path; /* NULL: built-in default */
    const char *pid_file;    /* NULL: none */
    bool daemonize;
} options_t;

/* What main builds from the configuration (main thread only). */
typedef struct daemon_state {
    const jn_config_t *cfg;
    char router_id[128];
    const char *mode;
    unsigned workers;
    jn_distribution_t default_distribution;
    uint64_t max_message_size; /* policy.maxMessageSize, 0 = none */
    bool interior;             /* router.mode interior: the mesh runs */
    uint32_t hello_interval, hello_max_age, ra_interval, ra_interval_flux,
        remote_ls_max_age;             /* router timers, seconds (0 = default) */
    uint32_t min_peer_idle_timeout_ms; /* router.minPeerIdleTimeoutMs (0 = no floor) */
    uint32_t write_stall_timeout_s;    /* router.writeStallTimeoutSeconds (0 = never) */
    jn_core_t *core;
    jn_io_t *io;
} daemon_state_t;

static void usage(FILE *out)
{
    fprintf(out, "Usage: junctiond [OPTIONS]\n"
                 "Junction AMQP 1.0 message router.\n\n"
                 "  -c, --config FILE    read the configuration from FILE (qdrouterd.conf\n"
                 "                       syntax, or JSON when FILE ends in .json); without\n"
                 "                       it: a standalone router on 127.0.0.1:5672, SASL\n"
                 "                       ANONYMOUS\n"
                 "  -d, --daemon         run in the background\n"
                 "  -P, --pidfile FILE   write the process id to FILE\n"
                 "  -v, --version        print the version and exit\n"
                 "  -h, --help           print this help and exit\n");
}

/* parse_args: fill *opts from argv. Returns -1 to continue, or an exit
 * status (0 after --help/--version, 2 for a usage error). */
static int parse_args(int argc, char **argv, options_t *opts)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},  {"daemon", no_argument, NULL, 'd'},
        {"pidfile", required_argument, NULL, 'P'}, {"version", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
    int c;
    memset(opts, 0, sizeof *opts);
    while ((c = getopt_long(argc, argv, "c:dP:vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            opts->config_path = optarg;
            break;
        case 'd':
            opts->daemonize = true;
            break;
        case 'P':
            opts->pid_file = optarg;
            break;
        case 'v':
            printf("junctiond %s\n", JN_VERSION);
            return 0;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "junctiond: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return -1;
}

/* ---- checks: what this version refuses -------------------------------- */

static const char *entity_type(const jn_config_entity_t *e)
{
    return jn_schema_type_short_name(jn_config_entity_type(e));
}

/* refuse: print "FILE:LINE: ..." for entity e (line of attr when given and
 * known) to stderr. Returns -1. */
static int refuse(const jn_config_t *cfg, const jn_config_entity_t *e, const char *attr,
                  const char *what)
{
    const jn_config_value_t *v = attr ? jn_config_entity_get(e, attr) : NULL;
    int line = v && jn_config_value_line(v) ? jn_config_value_line(v) : jn_config_entity_line(e);
    fprintf(stderr, "%s:%d: %s is not supported by this version of junctiond\n",
            jn_config_name(cfg), line, what);
    return -1;
}

/* ---- TLS (sslProfile) ------------------------------------------------------
 *
 * The lead's entity module is to take this over; kept in one place so it can
 * move: check_endpoint_tls (references and combinations), add_tls_profiles
 * (every sslProfile section into a profile registered with the I/O layer),
 * and the TLS fields of add_endpoint. */

/* An sslProfile section by name, or NULL. */
static const jn_config_entity_t *find_ssl_profile(const jn_config_t *cfg, const char *name)
{
    const jn_schema_type_t *t = jn_schema_type_find("sslProfile");
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++) {
        const jn_config_entity_t *e = jn_config_entity_at(cfg, i);
        const char *n = jn_config_entity_type(e) == t ? jn_config_entity_name(e) : NULL;
        if (n && strcmp(n, name) == 0)
            return e;
    }
    return NULL;
}

/* A listener's or connector's TLS attributes: the sslProfile it names must
 * exist (1.19 started and failed each connection; we stop with FILE:LINE);
 * requireSsl and requireEncryption need one (without TLS they could only be
 * met by a SASL security layer, which this version does not offer). */
static int check_endpoint_tls(const jn_config_t *cfg, const jn_config_entity_t *e)
{
    const char *type = entity_type(e);
    const char *profile = jn_config_entity_string(e, "sslProfile");
    if (profile && profile[0] && !find_ssl_profile(cfg, profile)) {
        const jn_config_value_t *v = jn_config_entity_get(e, "sslProfile");
        fprintf(stderr, "%s:%d: %s: sslProfile '%s' is not defined\n", jn_config_name(cfg),
                v && jn_config_value_line(v) ? jn_config_value_line(v) : jn_config_entity_line(e),
                type, profile);
        return -1;
    }
    static const char *const need_tls[] = {"requireSsl", "requireEncryption"};
    for (size_t k = 0; k < 2 && strcmp(type, "listener") == 0; k++) {
        bool on = false;
        if (jn_config_entity_bool(e, need_tls[k], &on) == 0 && on && !(profile && profile[0])) {
            char what[160];
            snprintf(what, sizeof what, "listener attribute '%s' without an sslProfile",
                     need_tls[k]);
            return refuse(cfg, e, need_tls[k], what);
        }
    }
    return 0;
}

/* An attribute of a config-file entity (jn_tls_profile_config_fill's getter). */
static const char *config_attr(void *ctx, const char *attr)
{
    return jn_config_entity_string(ctx, attr);
}

/* add_tls_profiles: every sslProfile section into a profile, registered with
 * the I/O layer under its name. A file that cannot be read, a wrong password,
 * a key that does not match: "FILE:LINE: sslProfile 'NAME': attribute 'ATTR':
 * REASON" on stderr, and -1. */
static int add_tls_profiles(const jn_config_t *cfg, jn_io_t *io)
{
    const jn_schema_type_t *t = jn_schema_type_find("sslProfile");
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++) {
        const jn_config_entity_t *e = jn_config_entity_at(cfg, i);
        if (jn_config_entity_type(e) != t)
            continue;
        jn_tls_profile_config_t pc;
        const char *name = jn_config_entity_name(e);
        jn_tls_profile_config_fill(&pc, name, config_attr, (void *)e);
        jn_tls_profile_t *p = NULL;
        char err[512];
        const char *bad = NULL;
        int rc = jn_tls_profile_create(&pc, &p, err, sizeof err, &bad);
        if (rc == 0) {
            rc = jn_io_set_tls_profile(io, name ? name : "", p);
            jn_tls_profile_unref(p);
            if (rc == 0)
                continue;
            snprintf(err, sizeof err, "%s", jn_strerror(rc));
        }
        const jn_config_value_t *v = bad ? jn_config_entity_get(e, bad) : NULL;
        int line =
            v && jn_config_value_line(v) ? jn_config_value_line(v) : jn_config_entity_line(e);
        if (bad)
            fprintf(stderr, "%s:%d: sslProfile '%s': attribute '%s': %s\n", jn_config_name(cfg),
                    line, name ? name : "", bad, err);
        else
            fprintf(stderr, "%s:%d: sslProfile '%s': %s\n", jn_config_name(cfg), line,
                    name ? name : "", err[0] ? err : jn_strerror(rc));
        return -1;
    }
    return 0;
}

/* ---- SASL (Cyrus) ------------------------------------------------------------
 *
 * start_sasl (router saslConfigDir/saslConfigName into jn_sasl_init) and
 * check_endpoint_sasl (a listener's saslMechanisms and authenticatePeer
 * against what can work), for the entity module to take over as well. */

/* start_sasl: Cyrus SASL as the router section says. Returns 0 or -1
 * after "FILE:LINE: router: ..." on stderr. */
static int start_sasl(const jn_config_t *cfg)
{
    const jn_config_entity_t *r = jn_config_find(cfg, jn_schema_type_find("router"));
    const char *dir = r ? jn_config_entity_string(r, "saslConfigDir") : NULL;
    const char *name = r ? jn_config_entity_string(r, "saslConfigName") : NULL;
    char err[512];
    if (jn_sasl_init(dir, name, err, sizeof err) == 0)
        return 0;
    const jn_config_value_t *v = r ? jn_config_entity_get(r, "saslConfigDir") : NULL;
    fprintf(stderr, "%s:%d: router: %s\n", jn_config_name(cfg),
            v && jn_config_value_line(v) ? jn_config_value_line(v)
                                         : (r ? jn_config_entity_line(r) : 0),
            err);
    return -1;
}

/* check_endpoint_sasl: a listener whose saslMechanisms names a mechanism
 * that cannot work (not offered by Cyrus as configured; EXTERNAL without an
 * sslProfile with a caCertFile), or whose authenticatePeer has no mechanism
 * that authenticates, would start and then refuse every client: stop with
 * FILE:LINE instead. After start_sasl. */
static int check_endpoint_sasl(const jn_config_t *cfg, const jn_config_entity_t *e,
                               const jn_endpoint_config_t *ec)
{
    const jn_config_value_t *v = jn_config_entity_get(e, "saslMechanisms");
    int line = v && jn_config_value_line(v) ? jn_config_value_line(v) : jn_config_entity_line(e);
    const jn_config_entity_t *prof =
        ec->ssl_profile ? find_ssl_profile(cfg, ec->ssl_profile) : NULL;
    const char *ca = prof ? jn_config_entity_string(prof, "caCertFile") : NULL;
    bool can_external = ca && ca[0];
    bool cyrus = jn_endpoint_uses_sasl_plugin(ec, true);
    char offered[512];
    jn_sasl_server_mechanisms(offered, sizeof offered);
    bool authenticates = false;
    const char *m = ec->sasl_mechanisms;
    if (m && m[0]) {
        for (const char *p = m; *p;) {
            while (*p == ' ' || *p == ',')
                p++;
            size_t n = strcspn(p, " ,");
            if (n == 0)
                break;
            char mech[64];
            snprintf(mech, sizeof mech, "%.*s", (int)n, p);
            p += n;
            if (strcmp(mech, "EXTERNAL") == 0) {
                if (!can_external) {
                    fprintf(stderr,
                            "%s:%d: listener: saslMechanisms 'EXTERNAL' needs an sslProfile "
                            "with a caCertFile (the client certificate is the identity)\n",
                            jn_config_name(cfg), line);
                    return -1;
                }
                authenticates = true;
                continue;
            }
            if (strcmp(mech, "ANONYMOUS") == 0 && !cyrus)
                continue; /* proton's own */
            if (!jn_sasl_server_offers(mech)) {
                fprintf(stderr,
                        "%s:%d: listener: SASL mechanism '%s' is not available (Cyrus SASL "
                        "offers: %s; see router saslConfigDir/saslConfigName and mech_list)\n",
                        jn_config_name(cfg), line, mech, offered[0] ? offered : "none");
                return -1;
            }
            authenticates = authenticates || strcmp(mech, "ANONYMOUS") != 0;
        }
    } else {
        authenticates = can_external;
        for (const char *p = offered; *p && !authenticates;) {
            size_t n = strcspn(p, " ");
            authenticates = !(n == 9 && strncmp(p, "ANONYMOUS", 9) == 0) &&
                            !(n == 8 && strncmp(p, "EXTERNAL", 8) == 0);
            p += n;
            while (*p == ' ')
                p++;
        }
    }
    if (ec->authenticate_peer && !authenticates) {
        const jn_config_value_t *a = jn_config_entity_get(e, "authenticatePeer");
        fprintf(stderr,
                "%s:%d: listener: authenticatePeer needs a SASL mechanism that authenticates "
                "(saslMechanisms %s; Cyrus SASL offers: %s)\n",
                jn_config_name(cfg), a && jn_config_value_line(a) ? jn_config_value_line(a) : line,
                m && m[0] ? m : "not set", offered[0] ? offered : "none");
        return -1;
    }
    return 0;
}

/* An endpoint (listener/connector) attribute this version refuses. */
static int check_endpoint(const jn_config_t *cfg, const jn_config_entity_t *e)
{
    char what[160];
    const char *type = entity_type(e);
    const char *role = jn_config_entity_string(e, "role");
    if (role && strcmp(role, "inter-router") == 0) {
        const jn_config_entity_t *r = jn_config_find(cfg, jn_schema_type_find("router"));
        const char *mode = r ? jn_config_entity_string(r, "mode") : NULL;
        if (!mode || strcmp(mode, "interior") != 0) {
            const jn_config_value_t *v = jn_config_entity_get(e, "role");
            fprintf(stderr, "%s:%d: %s role 'inter-router' needs router mode 'interior'\n",
                    jn_config_name(cfg),
                    v && jn_config_value_line(v) ? jn_config_value_line(v)
                                                 : jn_config_entity_line(e),
                    type);
            return -1;
        }
    } else if (role && strcmp(role, "normal") != 0) {
        snprintf(what, sizeof what, "%s role '%s'", type, role);
        return refuse(cfg, e, "role", what);
    }
    if (check_endpoint_tls(cfg, e) != 0)
        return -1;
    bool http = false;
    if (jn_config_entity_bool(e, "http", &http) == 0 && http) {
        snprintf(what, sizeof what, "%s http", type);
        return refuse(cfg, e, "http", what);
    }
    return 0;
}

/* Attributes of implemented sections whose behaviour this version does not
 * have yet: set in a file to anything but their default, they are refused by
 * name rather than silently ignored (a listener that asked for requireSsl
 * must not run in clear). Attributes that change nothing here (names, mesh
 * timers on a standalone router, metadata) are not listed. */
static const struct {
    const char *type;
    const char *attr;
} unimplemented_attrs[] = {
    {"listener", "saslPlugin"},
    {"listener", "multiTenant"},
    {"listener", "openProperties"},
    {"listener", "policyVhost"},
    {"listener", "failoverUrls"},
    {"listener", "messageLoggingComponents"},
    {"listener", "trustedCertsFile"},
    {"listener", "websockets"},
    {"listener", "socketAddressFamily"},
    {"connector", "openProperties"},
    {"connector", "policyVhost"},
    {"connector", "failoverUrls"},
    {"connector", "protocolFamily"},
    {"connector", "messageLoggingComponents"},
    {"address", "waypoint"},
    {"address", "ingressPhase"},
    {"address", "egressPhase"},
    {"address", "enableFallback"},
    {"address", "priority"},
    {"policy", "maxConnections"},
    {"policy", "enableVhostPolicy"},
    {"policy", "enableVhostNamePatterns"},
    {"policy", "policyDir"},
    {"policy", "defaultVhost"},
};

/* value_is_default: true when v equals attr's schema default (or neither
 * has one). */
static bool value_is_default(const jn_schema_attr_t *attr, const jn_config_value_t *v)
{
    if (!v || jn_config_value_is_default(v))
        return true;
    const char *text = jn_config_value_string(v);
    const char *dflt = jn_schema_attr_default(attr);
    if (text)
        return dflt && strcmp(text, dflt) == 0;
    int64_t n;
    if (jn_schema_attr_default_int(attr, &n) == 0)
        return jn_config_value_int(v) == n;
    return false;
}

/* Attributes that only change how logs look: set, they are reported with a
 * warning (log lines carry the local time and its UTC offset) and start-up
 * goes on. */
static const char *const cosmetic_router_attrs[] = {"timestampsInUTC", "timestampFormat"};

/* check_attributes: refuse an attribute of unimplemented_attrs set to other
 * than its default; warn about a cosmetic one. */
static int check_attributes(const jn_config_t *cfg, const jn_config_entity_t *e)
{
    const char *type = entity_type(e);
    size_t n_cosmetic = sizeof cosmetic_router_attrs / sizeof cosmetic_router_attrs[0];
    for (size_t k = 0; strcmp(type, "router") == 0 && k < n_cosmetic; k++) {
        const jn_schema_attr_t *attr =
            jn_schema_attr_find(jn_config_entity_type(e), cosmetic_router_attrs[k]);
        const jn_config_value_t *v = attr ? jn_config_entity_value(e, attr) : NULL;
        if (attr && !value_is_default(attr, v))
            JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_WARNING,
                   "%s:%d: router attribute '%s' is ignored by this version of junctiond",
                   jn_config_name(cfg), jn_config_value_line(v), cosmetic_router_attrs[k]);
    }
    for (size_t k = 0; k < sizeof unimplemented_attrs / sizeof unimplemented_attrs[0]; k++) {
        if (strcmp(type, unimplemented_attrs[k].type) != 0)
            continue;
        const char *name = unimplemented_attrs[k].attr;
        const jn_schema_attr_t *attr = jn_schema_attr_find(jn_config_entity_type(e), name);
        if (!attr || value_is_default(attr, jn_config_entity_value(e, attr)))
            continue;
        char what[160];
        snprintf(what, sizeof what, "%s attribute '%s'", type, name);
        return refuse(cfg, e, name, what);
    }
    return 0;
}

/* check_implemented: refuse, by name, a section, router mode or role this
 * version does not implement. Returns 0, or -1 after printing
 * "FILE:LINE: ..." to stderr. */
static int check_implemented(const jn_config_t *cfg)
{
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++) {
        const jn_config_entity_t *e = jn_config_entity_at(cfg, i);
        const char *type = entity_type(e);
        bool ok = false;
        for (size_t k = 0; k < sizeof implemented / sizeof implemented[0]; k++)
            ok = ok || strcmp(type, implemented[k]) == 0;
        if (!ok) {
            char what[160];
            snprintf(what, sizeof what, "section '%s'", jn_config_entity_section(e));
            return refuse(cfg, e, NULL, what);
        }
        const char *mode = strcmp(type, "router") == 0 ? jn_config_entity_string(e, "mode") : NULL;
        if (mode && strcmp(mode, "standalone") != 0 && strcmp(mode, "interior") != 0) {
            char what[160];
            snprintf(what, sizeof what, "router mode '%s'", mode);
            return refuse(cfg, e, "mode", what);
        }
        if ((strcmp(type, "listener") == 0 || strcmp(type, "connector") == 0) &&
            check_endpoint(cfg, e) != 0)
            return -1;
        if (check_attributes(cfg, e) != 0)
            return -1;
    }
    return 0;
}

/* apply_log_entity: configure one module from a `log` section. Returns 0, or
 * -1 after printing "FILE:LINE: ..." to stderr. */
static int apply_log_entity(const jn_config_t *cfg, const jn_config_entity_t *e)
{
    char err[256] = "";
    const char *module_name = jn_config_entity_string(e, "module");
    int module = module_name ? jn_log_module_from_name(module_name) : -1;
    int rc = module < 0 ? JN_EINVAL : 0;
    if (rc != 0)
        snprintf(err, sizeof err, "unknown log module '%s'", module_name ? module_name : "");
    const char *enable = jn_config_entity_string(e, "enable");
    if (rc == 0 && enable)
        rc = jn_log_set_enable((jn_log_module_t)module, enable, err, sizeof err);
    const char *output = jn_config_entity_string(e, "outputFile");
    if (rc == 0 && output)
        rc = jn_log_set_output((jn_log_module_t)module, output, err, sizeof err);
    bool flag;
    if (rc == 0 && jn_config_entity_bool(e, "includeTimestamp", &flag) == 0)
        rc = jn_log_set_include_timestamp((jn_log_module_t)module, flag);
    if (rc == 0 && jn_config_entity_bool(e, "includeSource", &flag) == 0)
        rc = jn_log_set_include_source((jn_log_module_t)module, flag);
    if (rc != 0) {
        fprintf(stderr, "%s:%d: log: %s\n", jn_config_name(cfg), jn_config_entity_line(e),
                err[0] ? err : jn_strerror(rc));
        return -1;
    }
    return 0;
}

/* ---- the router entity ---------------------------------------------------- */

static int64_t entity_int(const jn_config_entity_t *e, const char *name, int64_t dflt)
{
    int64_t v;
    return jn_config_entity_int(e, name, &v) == 0 ? v : dflt;
}

static int distribution_from_name(const char *name)
{
    static const char *const names[] = {"multicast", "closest", "balanced", "unavailable"};
    for (int i = 0; name && i < 4; i++)
        if (strcmp(name, names[i]) == 0)
            return i; /* the order of jn_distribution_t */
    return JN_EINVAL;
}

/* A generated router id: "<Mode>_" and 15 random letters and digits. */
static void generate_router_id(char *out, size_t size, const char *mode)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char rnd[15];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
        for (size_t i = 0; i < sizeof rnd; i++)
            rnd[i] = (unsigned char)rand_r(&seed);
    }
    char suffix[sizeof rnd + 1];
    for (size_t i = 0; i < sizeof rnd; i++)
        suffix[i] = alphabet[rnd[i] % (sizeof alphabet - 1)];
    suffix[sizeof rnd] = '\0';
    char m[32];
    snprintf(m, sizeof m, "%s", mode);
    m[0] = (char)(m[0] >= 'a' && m[0] <= 'z' ? m[0] - 'a' + 'A' : m[0]);
    snprintf(out, size, "%s_%s", m, suffix);
}

static uint32_t u32_attr(const jn_config_entity_t *e, const char *name)
{
    int64_t v = entity_int(e, name, 0);
    return v < 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* read_router: router id, mode, workers, default distribution, and the
 * policy's maxMessageSize. */
static void read_router(daemon_state_t *st)
{
    const jn_config_t *cfg = st->cfg;
    const jn_config_entity_t *r = jn_config_find(cfg, jn_schema_type_find("router"));
    const char *mode = r ? jn_config_entity_string(r, "mode") : NULL;
    st->mode = mode ? mode : "standalone";
    const char *id = r ? jn_config_entity_string(r, "id") : NULL;
    if (id && id[0])
        snprintf(st->router_id, sizeof st->router_id, "%s", id);
    else
        generate_router_id(st->router_id, sizeof st->router_id, st->mode);
    const jn_config_value_t *w = r ? jn_config_entity_get(r, "workerThreads") : NULL;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    st->workers = w && !jn_config_value_is_default(w) ? (unsigned)jn_config_value_int(w)
                                                      : (unsigned)(cores > 0 ? cores : 1);
    if (st->workers < 1)
        st->workers = 1;
    int d = distribution_from_name(r ? jn_config_entity_string(r, "defaultDistribution") : NULL);
    st->default_distribution = d >= 0 ? (jn_distribution_t)d : JN_DIST_BALANCED;
    st->interior = strcmp(st->mode, "interior") == 0;
    st->hello_interval = r ? u32_attr(r, "helloIntervalSeconds") : 0;
    st->hello_max_age = r ? u32_attr(r, "helloMaxAgeSeconds") : 0;
    st->ra_interval = r ? u32_attr(r, "raIntervalSeconds") : 0;
    st->ra_interval_flux = r ? u32_attr(r, "raIntervalFluxSeconds") : 0;
    st->remote_ls_max_age = r ? u32_attr(r, "remoteLsMaxAgeSeconds") : 0;
    /* Junction's own (not in 1.19); the schema's defaults when absent */
    st->min_peer_idle_timeout_ms = r ? u32_attr(r, "minPeerIdleTimeoutMs") : 100;
    st->write_stall_timeout_s = r ? u32_attr(r, "writeStallTimeoutSeconds") : 60;
    const jn_config_entity_t *p = jn_config_find(cfg, jn_schema_type_find("policy"));
    int64_t max = p ? entity_int(p, "maxMessageSize", 0) : 0;
    st->max_message_size = max > 0 ? (uint64_t)max : 0;
}

/* ---- addresses, listeners, connectors ------------------------------------ */

/* add_address: one `address` entity. Problems are logged and the entity is
 * ignored, as qdrouterd 1.19 does. */
static void add_address(daemon_state_t *st, const jn_config_entity_t *e)
{
    const char *prefix = jn_config_entity_string(e, "prefix");
    const char *pattern = jn_config_entity_string(e, "pattern");
    const char *where = jn_config_name(st->cfg);
    int line = jn_config_entity_line(e);
    if ((prefix != NULL) == (pattern != NULL)) {
        JN_LOG(JN_LOG_MOD_CONN_MGR, JN_LOG_WARNING,
               "%s:%d: address needs exactly one of prefix and pattern; ignored", where, line);
        return;
    }
    int d = distribution_from_name(jn_config_entity_string(e, "distribution"));
    int rc = jn_core_add_address_config(st->core, prefix ? prefix : pattern, pattern != NULL,
                                        d >= 0 ? (jn_distribution_t)d : JN_DIST_BALANCED);
    bool backpressure = false;
    if (rc == 0 && jn_config_entity_bool(e, "multicastBackpressure", &backpressure) == 0 &&
        backpressure)
        rc = jn_core_set_address_backpressure(st->core, true);
    if (rc != 0)
        JN_LOG(JN_LOG_MOD_CONN_MGR, JN_LOG_WARNING, "%s:%d: address %s '%s' ignored: %s", where,
               line, prefix ? "prefix" : "pattern", prefix ? prefix : pattern, jn_strerror(rc));
}

static jn_strip_t strip_from_name(const char *name)
{
    if (name && strcmp(name, "in") == 0)
        return JN_STRIP_IN;
    if (name && strcmp(name, "out") == 0)
        return JN_STRIP_OUT;
    if (name && strcmp(name, "no") == 0)
        return JN_STRIP_NO;
    return JN_STRIP_BOTH;
}

static jn_conn_role_t role_of(const char *name)
{
    return name && strcmp(name, "inter-router") == 0 ? JN_ROLE_INTER_ROUTER : JN_ROLE_NORMAL;
}

/* add_endpoint: one listener or connector. Returns 0 or -1 (logged). */
static int add_endpoint(daemon_state_t *st, const jn_config_entity_t *e, bool listener)
{
    bool auth = false;
    jn_config_entity_bool(e, "authenticatePeer", &auth);
    jn_endpoint_config_t ec = {
        .name = jn_config_entity_name(e),
        .host = jn_config_entity_string(e, "host"),
        .port = jn_config_entity_string(e, "port"),
        .role = role_of(jn_config_entity_string(e, "role")),
        .cost = u32_attr(e, "cost"),
        .sasl_mechanisms = jn_config_entity_string(e, "saslMechanisms"),
        .authenticate_peer = listener && auth,
        .max_frame_size = u32_attr(e, "maxFrameSize"),
        .max_sessions = u32_attr(e, "maxSessions"),
        .max_session_frames = u32_attr(e, "maxSessionFrames"),
        .idle_timeout_seconds = u32_attr(e, "idleTimeoutSeconds"),
        .max_message_size = st->max_message_size,
        .link_capacity = u32_attr(e, "linkCapacity"),
        .strip_annotations = strip_from_name(jn_config_entity_string(e, "stripAnnotations")),
        .ssl_profile = jn_config_entity_string(e, "sslProfile"),
        .verify_hostname = !listener,
        .handshake_timeout_seconds = listener ? u32_attr(e, "initialHandshakeTimeoutSeconds") : 0,
    };
    char password[JN_TLS_PASSWORD_MAX + 1];
    if (listener) {
        jn_config_entity_bool(e, "requireSsl", &ec.require_ssl);
        jn_config_entity_bool(e, "requireEncryption", &ec.require_encryption);
        if (check_endpoint_sasl(st->cfg, e, &ec) != 0)
            return -1;
    } else {
        jn_config_entity_bool(e, "verifyHostname", &ec.verify_hostname);
        ec.sasl_username = jn_config_entity_string(e, "saslUsername");
        const char *spec = jn_config_entity_string(e, "saslPassword");
        char err[256];
        if (spec && jn_tls_password_resolve(spec, password, sizeof password, err, sizeof err)) {
            /* 1.19 logged this and used the unresolved text; a connector that
             * cannot authenticate is refused here instead */
            const jn_config_value_t *v = jn_config_entity_get(e, "saslPassword");
            fprintf(
                stderr, "%s:%d: connector: attribute 'saslPassword': %s\n", jn_config_name(st->cfg),
                v && jn_config_value_line(v) ? jn_config_value_line(v) : jn_config_entity_line(e),
                err);
            return -1;
        }
        ec.sasl_password = spec ? password : NULL;
    }
    int rc = listener ? jn_io_add_listener(st->io, &ec) : jn_io_add_connector(st->io, &ec);
    memset(password, 0, sizeof password);
    if (rc != 0) {
        fprintf(stderr, "%s:%d: %s: %s\n", jn_config_name(st->cfg), jn_config_entity_line(e),
                entity_type(e), jn_strerror(rc));
        return -1;
    }
    return 0;
}

/* ---- management (router/mgmt) ------------------------------------------- */

/* The $management agent: it keeps the configured entities, reads the core,
 * and reaches the I/O layer through these hooks (jn_mgmt does not link
 * jn_io). Made by build, freed by teardown after the core. */
static jn_mgmt_t *mgmt_agent;

static int mgmt_add_listener(void *io, const jn_endpoint_config_t *cfg)
{
    return jn_io_add_listener(io, cfg);
}

static int mgmt_add_connector(void *io, const jn_endpoint_config_t *cfg)
{
    return jn_io_add_connector(io, cfg);
}

static int mgmt_remove_endpoint(void *io, const char *name)
{
    return jn_io_remove_endpoint(io, name);
}

/* start_management: the agent, loaded with the file's entities and
 * registered with the core (before jn_core_start). Returns 0 or -1. */
static int start_management(daemon_state_t *st)
{
    const jn_config_entity_t *r = jn_config_find(st->cfg, jn_schema_type_find("router"));
    jn_mgmt_config_t mc = {.router_id = st->router_id,
                           .mode = st->mode,
                           .version = JN_VERSION,
                           .metadata = r ? jn_config_entity_string(r, "metadata") : NULL,
                           .worker_threads = st->workers,
                           .max_message_size = st->max_message_size,
                           .core = st->core,
                           .io_ctx = st->io,
                           .add_listener = mgmt_add_listener,
                           .add_connector = mgmt_add_connector,
                           .remove_endpoint = mgmt_remove_endpoint,
                           .foreach_router = st->interior ? jn_core_view_routers_CT : NULL,
                           .nodes_ctx = st->core};
    mgmt_agent = jn_mgmt_create(&mc);
    if (!mgmt_agent || jn_mgmt_load_config(mgmt_agent, st->cfg) != 0) {
        fprintf(stderr, "junctiond: out of memory\n");
        return -1;
    }
    jn_core_set_management(st->core, jn_mgmt_request_CT, mgmt_agent);
    return 0;
}

/* build: the core and the I/O layer with every address, listener and
 * connector of the configuration (not started). Returns 0 or -1. */
static int build(daemon_state_t *st)
{
    jn_core_config_t cc = {.router_id = st->router_id,
                           .default_distribution = st->default_distribution,
                           .interior = st->interior,
                           .hello_interval = st->hello_interval,
                           .hello_max_age = st->hello_max_age,
                           .ra_interval = st->ra_interval,
                           .ra_interval_flux = st->ra_interval_flux,
                           .remote_ls_max_age = st->remote_ls_max_age};
    st->core = jn_core_create(&cc, jn_io_core_ops());
    jn_io_config_t ic = {.container_id = st->router_id,
                         .worker_threads = st->workers,
                         .min_peer_idle_timeout_ms = st->min_peer_idle_timeout_ms,
                         .write_stall_timeout_s = st->write_stall_timeout_s};
    st->io = st->core ? jn_io_create(st->core, &ic) : NULL;
    if (!st->io) {
        fprintf(stderr, "junctiond: out of memory\n");
        return -1;
    }
    if (add_tls_profiles(st->cfg, st->io) != 0 || start_sasl(st->cfg) != 0)
        return -1;
    for (size_t i = 0; i < jn_config_entity_count(st->cfg); i++) {
        const jn_config_entity_t *e = jn_config_entity_at(st->cfg, i);
        if (strcmp(entity_type(e), "address") == 0)
            add_address(st, e);
    }
    /* connectors first, then listeners: qdrouterd's order */
    for (int pass = 0; pass < 2; pass++) {
        const char *want = pass == 0 ? "connector" : "listener";
        for (size_t i = 0; i < jn_config_entity_count(st->cfg); i++) {
            const jn_config_entity_t *e = jn_config_entity_at(st->cfg, i);
            if (strcmp(entity_type(e), want) == 0 && add_endpoint(st, e, pass == 1) != 0)
                return -1;
        }
    }
    return start_management(st);
}

/* apply_config: check the configuration and apply its `log` sections. */
/* Most worker threads a router may be configured with. */
#define JN_MAX_WORKER_THREADS 128

/* value_error: print "FILE:LINE: <type>: <text>" for an attribute's value
 * (or the section's line when the value has none) and return -1. */
static int value_error(const jn_config_t *cfg, const jn_config_entity_t *e,
                       const jn_config_value_t *v, const char *text)
{
    int line =
        v && jn_config_value_line(v) > 0 ? jn_config_value_line(v) : jn_config_entity_line(e);
    fprintf(stderr, "%s:%d: %s: %s\n", jn_config_name(cfg), line, jn_config_entity_section(e),
            text);
    return -1;
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

/* check_entity_values: the value checks the schema cannot express, so that a
 * bad value stops start-up with FILE:LINE instead of failing later. (1.19
 * only logs some of these and runs on without the entity; we refuse.) */
static int check_entity_values(const jn_config_t *cfg, const jn_config_entity_t *e)
{
    const char *type = jn_schema_type_short_name(jn_config_entity_type(e));
    const jn_config_value_t *v;
    if (strcmp(type, "router") == 0) {
        v = jn_config_entity_get(e, "id");
        const char *id = jn_config_value_string(v);
        if (id && strlen(id) > 127)
            return value_error(cfg, e, v, "id is longer than 127 characters");
        for (const char *c = id; c && *c; c++)
            if ((unsigned char)*c <= ' ' || *c == 0x7f || *c == '/')
                return value_error(cfg, e, v,
                                   "id may not contain whitespace, control characters or '/' "
                                   "(it is part of topological addresses)");
        v = jn_config_entity_get(e, "workerThreads");
        if (v && !jn_config_value_is_default(v) &&
            (jn_config_value_int(v) < 1 || jn_config_value_int(v) > JN_MAX_WORKER_THREADS)) {
            char text[96];
            snprintf(text, sizeof text, "workerThreads must be from 1 to %d",
                     JN_MAX_WORKER_THREADS);
            return value_error(cfg, e, v, text);
        }
        static const char *const non_negative[] = {"minPeerIdleTimeoutMs",
                                                   "writeStallTimeoutSeconds"};
        for (size_t i = 0; i < sizeof non_negative / sizeof non_negative[0]; i++) {
            v = jn_config_entity_get(e, non_negative[i]);
            if (v && (jn_config_value_int(v) < 0 || jn_config_value_int(v) > UINT32_MAX)) {
                char text[96];
                snprintf(text, sizeof text, "%s must be from 0 (off) to %" PRIu32, non_negative[i],
                         UINT32_MAX);
                return value_error(cfg, e, v, text);
            }
        }
    } else if (strcmp(type, "policy") == 0) {
        v = jn_config_entity_get(e, "maxMessageSize");
        if (v && jn_config_value_int(v) < 0)
            return value_error(cfg, e, v, "maxMessageSize must be 0 (no limit) or more octets");
    } else if (strcmp(type, "address") == 0) {
        bool prefix = jn_config_entity_string(e, "prefix") != NULL;
        bool pattern = jn_config_entity_string(e, "pattern") != NULL;
        if (prefix == pattern)
            return value_error(cfg, e, NULL, "needs exactly one of prefix and pattern");
    } else if (strcmp(type, "listener") == 0 || strcmp(type, "connector") == 0) {
        v = jn_config_entity_get(e, "cost");
        /* sent as an AMQP int (mesh-protocol.md 2.2) and summed along paths */
        if (v && !jn_config_value_is_default(v) &&
            (jn_config_value_int(v) < 1 || jn_config_value_int(v) > INT32_MAX))
            return value_error(cfg, e, v, "cost must be from 1 to 2147483647");
        v = jn_config_entity_get(e, "port");
        if (!port_ok(jn_config_value_string(v))) {
            char text[160];
            snprintf(text, sizeof text,
                     "port '%.80s' is neither a number from 0 to 65535 nor a TCP service name",
                     jn_config_value_string(v) ? jn_config_value_string(v) : "");
            return value_error(cfg, e, v, text);
        }
    }
    return 0;
}

static int apply_config(const jn_config_t *cfg)
{
    if (check_implemented(cfg) != 0)
        return -1;
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++)
        if (check_entity_values(cfg, jn_config_entity_at(cfg, i)) != 0)
            return -1;
    const jn_schema_type_t *log_type = jn_schema_type_find("log");
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++) {
        const jn_config_entity_t *e = jn_config_entity_at(cfg, i);
        if (jn_config_entity_type(e) == log_type && apply_log_entity(cfg, e) != 0)
            return -1;
    }
    for (size_t i = 0; i < jn_config_warning_count(cfg); i++)
        JN_LOG(JN_LOG_MOD_CONN_MGR, JN_LOG_WARNING, "%s", jn_config_warning_at(cfg, i));
    return 0;
}

/* ---- process ----------------------------------------------------------------- */

/* raise_descriptor_limit: every connection takes a file descriptor, and the
 * I/O layer refuses connections near the soft limit (router/io/io.c); raise
 * the soft limit to the hard one so a router is not held to 1024 by a shell
 * default. Logged; failure is not fatal. */
static void raise_descriptor_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO, "File-descriptor limit raised from %llu to %llu",
               (unsigned long long)was, (unsigned long long)rl.rlim_cur);
}

static int write_pid_file(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0) {
        fprintf(stderr, "junctiond: cannot write pid file %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* daemonize: fork into the background, detach from the terminal, and
 * redirect standard streams to /dev/null (logging to stderr is then lost;
 * configure a log outputFile). Returns 0 in the child; the parent exits. */
static int daemonize(void)
{
    pid_t pid = fork();
    if (pid < 0) {
        perror("junctiond: fork");
        return -1;
    }
    if (pid > 0)
        _exit(0);
    if (setsid() < 0) {
        perror("junctiond: setsid");
        return -1;
    }
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0)
        _exit(0);
    int fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, STDIN_FILENO);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        if (fd > STDERR_FILENO)
            close(fd);
    }
    return chdir("/") == 0 ? 0 : -1;
}

/* teardown: stop and free what build made (either may be NULL). */
static void teardown(daemon_state_t *st)
{
    if (st->io)
        jn_io_stop(st->io, STOP_CLOSE_MS);
    if (st->core) {
        jn_core_stop(st->core);
        jn_core_free(st->core); /* releases any io connection still held */
    }
    jn_io_free(st->io);
    jn_sasl_shutdown();       /* after the transports that used it */
    jn_mgmt_free(mgmt_agent); /* after the core: it called the agent */
    mgmt_agent = NULL;
    st->core = NULL;
    st->io = NULL;
}

/* finish: free the configuration and the pools; the exit status (3 when
 * pool objects leaked). */
static int finish(jn_config_t *cfg, int status)
{
    jn_config_free(cfg);
    jn_log_shutdown();
    jn_pool_thread_exit();
    uint64_t leaked = jn_pool_leak_report(stderr);
    jn_pool_shutdown();
    return leaked && status == 0 ? 3 : status;
}

/* run: start, wait for SIGTERM/SIGINT (blocked in stop), stop. */
static int run(daemon_state_t *st, const sigset_t *stop)
{
    if (jn_core_start(st->core) != 0) {
        fprintf(stderr, "junctiond: cannot start the core\n");
        return 1;
    }
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO, "Router started in %s mode, id=%s, version %s", st->mode,
           st->router_id, JN_VERSION);
    if (jn_io_start(st->io) != 0) {
        JN_LOG(JN_LOG_MOD_MAIN, JN_LOG_CRITICAL,
               "Router start-up failed: a listener could not be opened");
        return 1;
    }
    int sig = 0;
    sigwait(stop, &sig);
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_NOTICE, "Shutting down on %s",
           sig == SIGTERM ? "SIGTERM" : "SIGINT");
    return 0;
}

int main(int argc, char **argv)
{
    options_t opts;
    int status = parse_args(argc, argv, &opts);
    if (status >= 0)
        return status;

    char err[JN_CONFIG_ERROR_MAX];
    jn_config_t *cfg = NULL;
    int rc = opts.config_path
                 ? jn_config_load_file(opts.config_path, &cfg, err, sizeof err)
                 : jn_config_load_string("<built-in default>", default_config,
                                         sizeof default_config - 1, &cfg, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    raise_descriptor_limit();
    daemon_state_t st = {.cfg = cfg};
    if (apply_config(cfg) != 0)
        return finish(cfg, 1);
    read_router(&st);

    /* Every thread started from here on inherits the blocked signals; only
     * sigwait below takes them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    if ((opts.daemonize && daemonize() != 0) ||
        (opts.pid_file && write_pid_file(opts.pid_file) != 0))
        return finish(cfg, 1);
    if (build(&st) != 0) {
        teardown(&st);
        return finish(cfg, 1);
    }
    status = run(&st, &stop);
    teardown(&st);
    if (status == 0)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_NOTICE, "Shut Down");
    if (opts.pid_file)
        unlink(opts.pid_file);
    return finish(cfg, status);
}
