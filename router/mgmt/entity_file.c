/*
 * entity_file.c — the config file's side of the entity path (entity.h):
 *
 *   jn_mgmt_plan_config  check every section of a file and read the
 *                        router-wide settings (router, policy) that the
 *                        core and the I/O layer are built with;
 *   jn_mgmt_apply_logs   the file's `log` sections, before anything runs;
 *   jn_mgmt_load_config_CT  the file's listeners, connectors and addresses
 *                        as a sequence of CREATEs: the checks and the
 *                        actions of a management CREATE;
 *   jn_mgmt_reload_CT    read the file again and apply the difference
 *                        between it and what runs from the previous one.
 *
 * A reload checks the whole new file first and changes nothing when it has
 * an error. Entities created through management are never touched by it.
 * Router-wide settings cannot change on a running router: a reload that
 * changes one is refused, naming the attribute.
 */
#include "entity.h"

#include <junction/log.h>
#include <junction/policy.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ---- entities from the file ------------------------------------------------ */

int jn_entity_from_config(const jn_config_entity_t *ce, bool skip_defaults, jn_mgmt_entity_t **out)
{
    const jn_schema_type_t *type = jn_config_entity_type(ce);
    jn_mgmt_entity_t *e = jn_mgmt_entity_new_type(type);
    *out = NULL;
    if (!e)
        return JN_ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < e->n_values && rc == 0; i++) {
        const jn_schema_attr_t *a = jn_schema_type_attr_at(type, i);
        const char *an = jn_schema_attr_name(a);
        if (strcmp(an, "name") == 0 || strcmp(an, "identity") == 0 || strcmp(an, "type") == 0)
            continue;
        const jn_config_value_t *v = jn_config_entity_value(ce, a);
        if (v && !(skip_defaults && jn_config_value_is_default(v)))
            rc = jn_mgmt_value_from_config(v, &e->values[i]);
    }
    /* as 1.19 names a section: the name given, else its identity (for the
     * router.config.* types "address/0", by the section's place in the
     * file, although management shows a decimal identity for it) */
    const jn_config_value_t *given = jn_config_entity_get(ce, "name");
    const char *name = jn_config_entity_name(ce);
    e->name_by_place = !given && strncmp(jn_schema_type_name(type), "router.config.", 14) == 0;
    if (rc == 0 && name && !(e->name = strdup(name)))
        rc = JN_ENOMEM;
    if (rc != 0) {
        jn_mgmt_entity_free(e);
        return rc;
    }
    *out = e;
    return 0;
}

bool jn_entity_equal(jn_mgmt_entity_t *a, jn_mgmt_entity_t *b)
{
    if (a->type != b->type)
        return false;
    bool by_place = a->name_by_place && b->name_by_place; /* names follow the file's order */
    if (!by_place && ((a->name == NULL) != (b->name == NULL) ||
                      (a->name && strcmp(a->name, b->name) != 0)))
        return false;
    const jn_schema_attr_t *port = a->port_any || b->port_any
                                       ? jn_schema_attr_find(a->type, "port")
                                       : NULL;
    for (size_t i = 0; i < a->n_values; i++) {
        if (port && i == jn_schema_attr_index(port)) {
            /* a listener on port 0 shows the port it got: it still is the
             * file's "port: 0" */
            jn_mgmt_entity_t *other = a->port_any ? b : a;
            const char *p = jn_mgmt_entity_str(other, "port");
            if (other->port_any || (p && p[0] && strspn(p, "0") == strlen(p)))
                continue;
            return false;
        }
        if (!jn_mgmt_value_equal(&a->values[i], &b->values[i]))
            return false;
    }
    return true;
}

void jn_entity_file_error(const jn_config_t *cfg, const jn_config_entity_t *ce,
                          const jn_entity_err_t *err, char *out, size_t cap)
{
    const jn_config_value_t *v = err->attr ? jn_config_entity_get(ce, err->attr) : NULL;
    /* inside a vhost's groups: the group's line, or its key's */
    const jn_config_value_t *g = v && err->group[0] ? jn_config_value_lookup(v, err->group) : NULL;
    if (g && jn_config_value_line(g) > 0) {
        const jn_config_value_t *k = err->key[0] ? jn_config_value_lookup(g, err->key) : NULL;
        v = k && jn_config_value_line(k) > 0 ? k : g;
    }
    int line = v && jn_config_value_line(v) > 0 ? jn_config_value_line(v) : jn_config_entity_line(ce);
    snprintf(out, cap, "%s:%d: %s", jn_config_name(cfg), line,
             err->detail[0] ? err->detail : err->text);
}

/* Errors collected as lines in a caller's buffer (cut to fit). */
typedef struct errors {
    char *buf;
    size_t cap, used;
    unsigned count;
} errors_t;

static void add_error(errors_t *errs, const char *line)
{
    errs->count++;
    if (!errs->buf || errs->cap == 0)
        return;
    int n = snprintf(errs->buf + errs->used, errs->cap - errs->used, "%s%s",
                     errs->used ? "\n" : "", line);
    if (n > 0)
        errs->used = errs->used + (size_t)n < errs->cap ? errs->used + (size_t)n : errs->cap - 1;
}

static void add_errorf(errors_t *errs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_errorf(errors_t *errs, const char *fmt, ...)
{
    char line[JN_ENTITY_ERR_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    add_error(errs, line);
}

static void errors_init(errors_t *errs, char *buf, size_t cap)
{
    *errs = (errors_t){buf, cap, 0, 0};
    if (buf && cap)
        buf[0] = '\0';
}

int jn_entity_profile_in_file(void *arg, const char *name)
{
    const jn_config_t *cfg = arg;
    const jn_schema_type_t *t = jn_schema_type_find("sslProfile");
    for (size_t i = 0; cfg && i < jn_config_entity_count(cfg); i++) {
        const jn_config_entity_t *ce = jn_config_entity_at(cfg, i);
        const char *n = jn_config_entity_type(ce) == t ? jn_config_entity_name(ce) : NULL;
        if (n && strcmp(n, name) == 0) {
            const char *ca = jn_config_entity_string(ce, "caCertFile");
            return ca && ca[0] ? 2 : 1;
        }
    }
    return 0;
}

/* ---- router-wide settings ---------------------------------------------------- */

/* A generated router id: "<Mode>_" and 15 random letters and digits, as
 * 1.19 generates ("Standalone_eBeZr2Ce2HFQvyQ"). */
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

static uint32_t u32(jn_mgmt_entity_t *e, const char *attr, uint32_t dflt)
{
    if (!e)
        return dflt;
    int64_t v = jn_mgmt_entity_int(e, attr, dflt);
    return v < 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The settings from the router and policy entities (either may be NULL:
 * the file has no such section). */
static void read_settings(const jn_config_t *cfg, jn_mgmt_entity_t *r, jn_mgmt_entity_t *p,
                          jn_router_settings_t *out)
{
    memset(out, 0, sizeof *out);
    const char *mode = r ? jn_mgmt_entity_str(r, "mode") : NULL;
    snprintf(out->mode, sizeof out->mode, "%s", mode ? mode : "standalone");
    const jn_config_entity_t *rce = jn_config_find(cfg, jn_schema_type_find("router"));
    out->sasl_config_dir = rce ? jn_config_entity_string(rce, "saslConfigDir") : NULL;
    out->sasl_config_name = rce ? jn_config_entity_string(rce, "saslConfigName") : NULL;
    const char *id = r ? jn_mgmt_entity_str(r, "id") : NULL;
    if (id && id[0])
        snprintf(out->id, sizeof out->id, "%s", id);
    else
        generate_router_id(out->id, sizeof out->id, out->mode);
    const jn_config_entity_t *rc = jn_config_find(cfg, jn_schema_type_find("router"));
    const jn_config_value_t *w = rc ? jn_config_entity_get(rc, "workerThreads") : NULL;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    /* not the schema's 4: a file that does not say gets one loop per core */
    out->workers = w && !jn_config_value_is_default(w) ? (unsigned)jn_config_value_int(w)
                                                       : (unsigned)(cores > 0 ? cores : 1);
    const char *dist = r ? jn_mgmt_entity_str(r, "defaultDistribution") : NULL;
    int d = r ? jn_schema_attr_enum_index(jn_schema_attr_find(r->type, "defaultDistribution"),
                                          dist ? dist : "balanced")
              : -1;
    out->default_distribution = d >= 0 ? (jn_distribution_t)d : JN_DIST_BALANCED;
    out->interior = strcmp(out->mode, "interior") == 0;
    out->hello_interval = u32(r, "helloIntervalSeconds", 0);
    out->hello_max_age = u32(r, "helloMaxAgeSeconds", 0);
    out->ra_interval = u32(r, "raIntervalSeconds", 0);
    out->ra_interval_flux = u32(r, "raIntervalFluxSeconds", 0);
    out->remote_ls_max_age = u32(r, "remoteLsMaxAgeSeconds", 0);
    /* Junction's own (docs/connection-limits.md); the schema's defaults */
    out->min_peer_idle_timeout_ms = u32(r, "minPeerIdleTimeoutMs", 100);
    out->write_stall_timeout_s = u32(r, "writeStallTimeoutSeconds", 60);
    out->metrics_address_limit = u32(r, "metricsAddressLimit", 1000); /* docs/protocol.md "HTTP" */
    out->allow_resumable_link_route = !r || jn_mgmt_entity_bool(r, "allowResumableLinkRoute", true);
    int64_t max = p ? jn_mgmt_entity_int(p, "maxMessageSize", 0) : 0;
    out->max_message_size = max > 0 ? (uint64_t)max : 0;
    int64_t conns = p ? jn_mgmt_entity_int(p, "maxConnections", 65535) : 65535;
    out->max_connections = conns < 0 ? 0 : conns >= UINT32_MAX ? UINT32_MAX - 1 : (uint32_t)conns;
    out->enable_vhost_policy = p && jn_mgmt_entity_bool(p, "enableVhostPolicy", false);
    out->enable_vhost_name_patterns = p && jn_mgmt_entity_bool(p, "enableVhostNamePatterns", false);
    const jn_config_entity_t *pce = jn_config_find(cfg, jn_schema_type_find("policy"));
    const char *dv = pce ? jn_config_entity_string(pce, "defaultVhost") : NULL;
    out->default_vhost = dv ? dv : "$default";
    out->policy_dir = pce ? jn_config_entity_string(pce, "policyDir") : NULL;
    const jn_config_value_t *md = rc ? jn_config_entity_get(rc, "metadata") : NULL;
    out->metadata = md ? jn_config_value_string(md) : NULL;
}

/* Attributes that only change how logs look: set, they are reported with a
 * warning (our log lines carry the local time and its UTC offset). */
static const char *const cosmetic_router_attrs[] = {"timestampsInUTC", "timestampFormat"};

static void warn_cosmetic(const jn_config_t *cfg, const jn_config_entity_t *ce)
{
    for (size_t k = 0; k < sizeof cosmetic_router_attrs / sizeof cosmetic_router_attrs[0]; k++) {
        const jn_config_value_t *v = jn_config_entity_get(ce, cosmetic_router_attrs[k]);
        if (v && !jn_config_value_is_default(v))
            JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_WARNING,
                   "%s:%d: router attribute '%s' is ignored by this version of junctiond",
                   jn_config_name(cfg), jn_config_value_line(v), cosmetic_router_attrs[k]);
    }
}

static bool type_is(const jn_config_entity_t *ce, const char *short_name)
{
    return strcmp(jn_schema_type_short_name(jn_config_entity_type(ce)), short_name) == 0;
}

static unsigned check_file(const jn_config_t *cfg, errors_t *errs, jn_mgmt_entity_t **router,
                           jn_mgmt_entity_t **policy, bool warn);

/* The sections of a loaded policy file other than vhost ones (the defaults
 * the loader adds have no line) are refused. */
static void only_vhosts(const jn_config_t *cfg, const char *path, errors_t *errs)
{
    const jn_schema_type_t *vhost = jn_schema_type_find("vhost");
    for (size_t k = 0; k < jn_config_entity_count(cfg); k++) {
        const jn_config_entity_t *ce = jn_config_entity_at(cfg, k);
        if (jn_config_entity_line(ce) != 0 && jn_config_entity_type(ce) != vhost)
            add_errorf(errs,
                       "%s:%d: section '%s' does not belong in a policyDir file (only "
                       "vhost sections do)",
                       path, jn_config_entity_line(ce), jn_config_entity_section(ce));
    }
}

static int json_name(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 5 && strcmp(d->d_name + n - 5, ".json") == 0;
}

int jn_mgmt_policy_dir(const char *dir, int (*fn)(void *arg, const jn_config_t *cfg), void *arg,
                       char *errors, size_t cap)
{
    errors_t errs;
    errors_init(&errs, errors, cap);
    if (!dir || !dir[0])
        return 0;
    struct dirent **names = NULL;
    int n = scandir(dir, &names, json_name, alphasort);
    if (n < 0) {
        add_errorf(&errs, "%s: policyDir cannot be read: %s", dir, strerror(errno));
        return 1;
    }
    jn_config_t **cfgs = calloc((size_t)n + 1, sizeof *cfgs);
    int rc = cfgs ? 0 : JN_ENOMEM;
    for (int i = 0; i < n && rc == 0; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        char err[1024] = "";
        int lr = jn_config_load_file(path, &cfgs[i], err, sizeof err);
        if (lr == JN_ENOMEM) {
            rc = JN_ENOMEM;
        } else if (lr != 0) {
            add_error(&errs, err);
        } else {
            (void)check_file(cfgs[i], &errs, NULL, NULL, false);
            only_vhosts(cfgs[i], path, &errs);
        }
    }
    for (int i = 0; i < n && rc == 0 && errs.count == 0 && fn; i++)
        rc = fn(arg, cfgs[i]);
    for (int i = 0; i < n; i++) {
        if (cfgs)
            jn_config_free(cfgs[i]);
        free(names[i]);
    }
    free(names);
    free(cfgs);
    return rc ? (rc < 0 ? rc : -rc) : (int)errs.count;
}

/* The section being checked, for the refusals a check says one by one
 * (jn_entity_ctx_t.each). */
typedef struct section_errors {
    const jn_config_t *cfg;
    const jn_config_entity_t *ce;
    errors_t *errs;
} section_errors_t;

static void section_error(void *arg, const jn_entity_err_t *err)
{
    section_errors_t *se = arg;
    char line[JN_ENTITY_ERR_MAX + 256];
    jn_entity_file_error(se->cfg, se->ce, err, line, sizeof line);
    add_error(se->errs, line);
}

/* check_file: convert and check every section; the router and policy
 * entities are handed back (owned) when wanted. Returns the error count. */
static unsigned check_file(const jn_config_t *cfg, errors_t *errs, jn_mgmt_entity_t **router,
                           jn_mgmt_entity_t **policy, bool warn)
{
    const jn_config_entity_t *rce = jn_config_find(cfg, jn_schema_type_find("router"));
    const char *mode = rce ? jn_config_entity_string(rce, "mode") : NULL;
    section_errors_t se = {.cfg = cfg, .errs = errs};
    jn_entity_ctx_t ctx = {.mode = mode ? mode : "standalone",
                           .profile = jn_entity_profile_in_file,
                           .profile_arg = (void *)cfg,
                           .each = section_error,
                           .each_arg = &se};
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++) {
        const jn_config_entity_t *ce = jn_config_entity_at(cfg, i);
        se.ce = ce;
        jn_mgmt_entity_t *e = NULL;
        if (jn_entity_from_config(ce, type_is(ce, "log"), &e) != 0) {
            add_errorf(errs, "%s: out of memory", jn_config_name(cfg));
            continue;
        }
        jn_entity_err_t err;
        if (jn_entity_check(&ctx, e, &err) != 0 && !err.said)
            section_error(&se, &err);
        if (warn && type_is(ce, "router"))
            warn_cosmetic(cfg, ce);
        jn_mgmt_entity_t **keep = type_is(ce, "router") ? router
                                  : type_is(ce, "policy") ? policy
                                                          : NULL;
        if (keep && !*keep)
            *keep = e;
        else
            jn_mgmt_entity_free(e);
    }
    return errs->count;
}

/* A policyDir that cannot be read stops start-up (and a reload) at its
 * line in the file, before any of its files is looked for. Returns the
 * refusals (0 or 1). */
static unsigned check_policy_dir(const jn_config_t *cfg, errors_t *errs)
{
    const jn_config_entity_t *pce = jn_config_find(cfg, jn_schema_type_find("policy"));
    const jn_config_value_t *v = pce ? jn_config_entity_get(pce, "policyDir") : NULL;
    const char *dir = v ? jn_config_value_string(v) : NULL;
    if (!dir || !dir[0])
        return 0;
    DIR *d = opendir(dir);
    if (d) {
        closedir(d);
        return 0;
    }
    int line = jn_config_value_line(v);
    add_errorf(errs, "%s:%d: policy attribute 'policyDir' ('%s') cannot be read: %s",
               jn_config_name(cfg), line ? line : jn_config_entity_line(pce), dir,
               strerror(errno));
    return 1;
}

int jn_mgmt_plan_config(const jn_config_t *cfg, jn_router_settings_t *out, char *errors,
                        size_t cap)
{
    errors_t errs;
    errors_init(&errs, errors, cap);
    jn_mgmt_entity_t *r = NULL, *p = NULL;
    unsigned n = check_file(cfg, &errs, out ? &r : NULL, out ? &p : NULL, out != NULL);
    n += check_policy_dir(cfg, &errs);
    if (out)
        read_settings(cfg, r, p, out);
    jn_mgmt_entity_free(r);
    jn_mgmt_entity_free(p);
    return (int)n;
}

int jn_mgmt_apply_logs(const jn_config_t *cfg, char *errors, size_t cap)
{
    errors_t errs;
    errors_init(&errs, errors, cap);
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++) {
        const jn_config_entity_t *ce = jn_config_entity_at(cfg, i);
        jn_mgmt_entity_t *e = NULL;
        if (!type_is(ce, "log"))
            continue;
        jn_entity_err_t err;
        if (jn_entity_from_config(ce, true, &e) != 0) {
            add_errorf(&errs, "%s: out of memory", jn_config_name(cfg));
        } else if (jn_entity_apply_log(e, &err) != 0) {
            char line[JN_ENTITY_ERR_MAX + 256];
            jn_entity_file_error(cfg, ce, &err, line, sizeof line);
            add_error(&errs, line);
        }
        jn_mgmt_entity_free(e);
    }
    return (int)errs.count;
}

/* ---- loading: the file as CREATEs -------------------------------------------- */

static bool stored_type(const jn_config_entity_t *ce)
{
    const jn_mgmt_class_t *cls =
        jn_mgmt_class_find(jn_schema_type_name(jn_config_entity_type(ce)), NULL);
    return cls && cls->stored;
}

/* create_from_file: one stored section through the CREATE path: check,
 * name, identity, act, keep. Returns 0 or the status (err filled). */
static int create_from_file(jn_mgmt_t *agent, const jn_config_entity_t *ce, jn_mgmt_entity_t *e,
                            jn_entity_err_t *err)
{
    jn_entity_ctx_t ctx = {.mode = agent->cfg.mode,
                           .profile = jn_entity_profile_in_store,
                           .profile_arg = agent};
    int st = jn_entity_check(&ctx, e, err);
    if (st)
        return st;
    if (e->name && jn_entity_name_taken(agent, e->cls, e->name))
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "name",
                              "%s name '%s' conflicts with an existing entity",
                              jn_schema_type_short_name(e->type), e->name);
    bool config_type = strncmp(e->cls->name, "router.config.", 14) == 0;
    if (jn_mgmt_entity_set_identity(agent, e, config_type ? NULL : jn_config_entity_identity(ce)))
        return jn_entity_fail(err, JN_MGMT_INTERNAL, NULL, "out of memory");
    st = jn_entity_create_CT(agent, e, err);
    if (st)
        return st;
    e->origin = JN_ORIGIN_FILE;
    jn_mgmt_store_append(agent, e);
    return 0;
}

/* Order of creation: TLS profiles (endpoints name them), auth service
 * plugins (listeners name them), addresses, link routes, auto-links, then
 * connectors, then listeners (1.19's order: a router connects before it
 * accepts), each in file order. */
static const char *const load_order[] = {"sslProfile", "authServicePlugin", "address",
                                         "linkRoute",  "autoLink",          "exchange",
                                         "binding",    "connector",         "listener"};

static int load_stored(jn_mgmt_t *agent, const jn_config_t *cfg, errors_t *errs)
{
    for (size_t pass = 0; pass < sizeof load_order / sizeof load_order[0]; pass++) {
        for (size_t i = 0; i < jn_config_entity_count(cfg); i++) {
            const jn_config_entity_t *ce = jn_config_entity_at(cfg, i);
            if (!type_is(ce, load_order[pass]) || !stored_type(ce))
                continue;
            jn_mgmt_entity_t *e = NULL;
            jn_entity_err_t err;
            if (jn_entity_from_config(ce, false, &e) != 0) {
                add_errorf(errs, "%s: out of memory", jn_config_name(cfg));
                continue;
            }
            if (create_from_file(agent, ce, e, &err) != 0) {
                char line[JN_ENTITY_ERR_MAX + 256];
                jn_entity_file_error(cfg, ce, &err, line, sizeof line);
                add_error(errs, line);
                jn_mgmt_entity_free(e);
            }
        }
    }
    return (int)errs->count;
}

int jn_mgmt_load_config_CT(jn_mgmt_t *agent, jn_config_t *cfg, char *errors, size_t cap)
{
    errors_t errs;
    errors_init(&errs, errors, cap);
    int n = load_stored(agent, cfg, &errs);
    jn_config_free(agent->file);
    agent->file = cfg;
    return n;
}

void jn_mgmt_refresh_ports_CT(jn_mgmt_t *agent)
{
    for (jn_mgmt_entity_t *e = agent->entities; e; e = e->next)
        if (strcmp(e->cls->name, "listener") == 0)
            jn_entity_record_port_CT(agent, e);
}

/* "FILE:LINE" of vhost section ce's hostname (else of the section), heap;
 * NULL on ENOMEM. */
static char *where_of(const jn_config_t *cfg, const jn_config_entity_t *ce)
{
    const jn_config_value_t *v = jn_config_entity_get(ce, "hostname");
    int line =
        v && jn_config_value_line(v) > 0 ? jn_config_value_line(v) : jn_config_entity_line(ce);
    char text[4200];
    snprintf(text, sizeof text, "%s:%d", jn_config_name(cfg), line);
    return strdup(text);
}

int jn_mgmt_load_vhosts_CT(jn_mgmt_t *agent, const jn_config_t *cfg, char *errors, size_t cap)
{
    errors_t errs;
    errors_init(&errs, errors, cap);
    jn_entity_ctx_t ctx = {.mode = agent->cfg.mode};
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++) {
        const jn_config_entity_t *ce = jn_config_entity_at(cfg, i);
        jn_mgmt_entity_t *e = NULL;
        if (!type_is(ce, "vhost"))
            continue;
        if (jn_entity_from_config(ce, false, &e) != 0 || !(e->where = where_of(cfg, ce))) {
            jn_mgmt_entity_free(e);
            return JN_ENOMEM;
        }
        jn_entity_err_t err;
        int st = jn_entity_check(&ctx, e, &err);
        if (!st)
            st = jn_entity_apply_vhost_CT(agent, e, JN_VHOST_FILE, &err);
        if (st == JN_MGMT_INTERNAL) {
            jn_mgmt_entity_free(e);
            return JN_ENOMEM;
        }
        if (st) {
            char line[JN_ENTITY_ERR_MAX + 256];
            jn_entity_file_error(cfg, ce, &err, line, sizeof line);
            add_error(&errs, line);
            jn_mgmt_entity_free(e);
        }
    }
    return (int)errs.count;
}
