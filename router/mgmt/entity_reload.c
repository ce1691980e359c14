/*
 * entity_reload.c — config reload without restart (SIGHUP, or the RELOAD
 * operation on the router entity): read the file again, check all of it,
 * and apply the difference between the entities it declares and those
 * running from the previous file, through the entity path (entity.h).
 *
 * What is compared: a stored entity (listener, connector, address) from
 * the old file that has an equal one in the new file (same type, name and
 * every value) keeps running untouched; the others are deleted; the new
 * file's entities without an equal one are created. A `log` section that
 * changed is applied to its module; a module whose section went away goes
 * back to following DEFAULT. The router and policy sections cannot change
 * on a running router: a difference refuses the whole reload, naming the
 * attribute. Entities created through management are never touched.
 *
 * Order: every check first (the file parses, each entity passes the
 * checks, no new name conflicts with one that stays) — any error and
 * nothing changes; then the deletions (so that a listener moved to another
 * entity can take its port), the log changes, the creations. A creation
 * the system refuses at that point (a port another process holds) is
 * reported and the rest is still applied: the old entity is gone by then,
 * as the new file asked.
 */
#include "entity.h"

#include <junction/log.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The result text, cut to fit. */
typedef struct out {
    char *buf;
    size_t cap, used;
} out_t;

static void say(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(out_t *o, const char *fmt, ...)
{
    if (!o->buf || o->used + 1 >= o->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->used, o->cap - o->used, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->used = o->used + (size_t)n < o->cap ? o->used + (size_t)n : o->cap - 1;
}

static bool type_is(const jn_config_entity_t *ce, const char *short_name)
{
    return strcmp(jn_schema_type_short_name(jn_config_entity_type(ce)), short_name) == 0;
}

/* One section of the new file that is a stored type, converted. */
typedef struct planned {
    const jn_config_entity_t *ce;
    jn_mgmt_entity_t *e;       /* owned until created */
    bool keep;                 /* an equal one runs: nothing to do */
    jn_mgmt_entity_t *running; /* keep: that one (in the store) */
} planned_t;

/* A router-wide section (router, policy) of cfg, converted; NULL when the
 * file has none or memory ran out (*oom then set). */
static jn_mgmt_entity_t *singleton(const jn_config_t *cfg, const char *type, bool *oom)
{
    const jn_config_entity_t *ce = cfg ? jn_config_find(cfg, jn_schema_type_find(type)) : NULL;
    jn_mgmt_entity_t *e = NULL;
    if (ce && jn_entity_from_config(ce, false, &e) != 0)
        *oom = true;
    return e;
}

/* The worker threads a file gives: its router.workerThreads when set,
 * else one per online core (what junctiond runs with). */
static long effective_workers(const jn_config_t *cfg)
{
    const jn_config_entity_t *r = cfg ? jn_config_find(cfg, jn_schema_type_find("router")) : NULL;
    const jn_config_value_t *w = r ? jn_config_entity_get(r, "workerThreads") : NULL;
    if (w && !jn_config_value_is_default(w))
        return (long)jn_config_value_int(w);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 ? cores : 1;
}

/* The i-th vhost section of cfg (file order), or NULL. */
static const jn_config_entity_t *vhost_at(const jn_config_t *cfg, size_t i)
{
    const jn_schema_type_t *type = jn_schema_type_find("vhost");
    for (size_t k = 0; cfg && k < jn_config_entity_count(cfg); k++) {
        const jn_config_entity_t *ce = jn_config_entity_at(cfg, k);
        if (jn_config_entity_type(ce) == type && i-- == 0)
            return ce;
    }
    return NULL;
}

/* The vhost sections are read at start only (docs/design.md "Policy"):
 * a reload that adds, removes or changes one is refused. Returns 0, or -1
 * with the refusal said. */
static int compare_vhosts(jn_mgmt_t *agent, const jn_config_t *next, out_t *o)
{
    for (size_t i = 0;; i++) {
        const jn_config_entity_t *a = vhost_at(agent->file, i), *b = vhost_at(next, i);
        if (!a && !b)
            return 0;
        bool same = a && b;
        jn_mgmt_entity_t *x = NULL, *y = NULL;
        if (same && (jn_entity_from_config(a, false, &x) != 0 ||
                     jn_entity_from_config(b, false, &y) != 0)) {
            jn_mgmt_entity_free(x);
            jn_mgmt_entity_free(y);
            say(o, "out of memory");
            return -1;
        }
        for (size_t k = 0; same && k < x->n_values; k++)
            same = jn_mgmt_value_equal(&x->values[k], &y->values[k]);
        jn_mgmt_entity_free(x);
        jn_mgmt_entity_free(y);
        if (same)
            continue;
        say(o,
            "%s:%d: vhost sections cannot change on a running router (restart junctiond to "
            "change them)",
            jn_config_name(next), b ? jn_config_entity_line(b) : 0);
        return -1;
    }
}

/* Router-wide settings must stay as they are. Returns 0, or -1 with the
 * refusal said. */
static int compare_fixed(jn_mgmt_t *agent, const jn_config_t *next, out_t *o)
{
    static const char *const types[] = {"router", "policy"};
    int rc = 0;
    for (size_t t = 0; t < 2 && rc == 0; t++) {
        bool oom = false;
        jn_mgmt_entity_t *a = singleton(agent->file, types[t], &oom);
        jn_mgmt_entity_t *b = singleton(next, types[t], &oom);
        jn_mgmt_entity_t *fresh = NULL;
        if (!oom && (!a || !b)) /* a section added or removed: compare with defaults */
            oom = jn_mgmt_entity_defaults(jn_schema_type_find(types[t]), &fresh) != 0;
        jn_mgmt_entity_t *x = a ? a : fresh, *y = b ? b : fresh;
        if (oom) {
            say(o, "out of memory");
            rc = -1;
        }
        for (size_t i = 0; rc == 0 && x && y && i < x->n_values; i++) {
            const char *attr = jn_schema_attr_name(jn_schema_type_attr_at(x->type, i));
            bool same = strcmp(attr, "workerThreads") == 0
                            ? effective_workers(agent->file) == effective_workers(next)
                            : jn_mgmt_value_equal(&x->values[i], &y->values[i]);
            if (same)
                continue;
            const jn_config_entity_t *ce = jn_config_find(next, jn_schema_type_find(types[t]));
            const jn_config_value_t *v = ce ? jn_config_entity_get(ce, attr) : NULL;
            int line = v && jn_config_value_line(v) ? jn_config_value_line(v)
                       : ce                         ? jn_config_entity_line(ce)
                                                    : 0;
            if (line)
                say(o,
                    "%s:%d: %s attribute '%s' cannot change on a running router (restart "
                    "junctiond to change it)",
                    jn_config_name(next), line, types[t], attr);
            else
                say(o,
                    "%s: the %s section was removed: %s attribute '%s' cannot change on a "
                    "running router (restart junctiond to change it)",
                    jn_config_name(next), types[t], types[t], attr);
            rc = -1;
        }
        jn_mgmt_entity_free(a);
        jn_mgmt_entity_free(b);
        jn_mgmt_entity_free(fresh);
    }
    return rc;
}

/* A hash of what jn_entity_equal compares (a listener's port left out: a
 * port-0 listener shows the port it got). */
static uint64_t entity_hash(jn_mgmt_entity_t *e)
{
    uint64_t h = 1469598103934665603ull;
#define MIX(p, n)                                                                                  \
    for (size_t k_ = 0; k_ < (n); k_++)                                                           \
    h = (h ^ ((const uint8_t *)(p))[k_]) * 1099511628211ull
    const char *type = jn_schema_type_name(e->type);
    MIX(type, strlen(type));
    if (e->name && !e->name_by_place) /* compared without it (jn_entity_equal) */
        MIX(e->name, strlen(e->name));
    const jn_schema_attr_t *port = jn_schema_attr_find(e->type, "port");
    for (size_t i = 0; i < e->n_values; i++) {
        const jn_mv_t *v = &e->values[i];
        if (port && i == jn_schema_attr_index(port))
            continue;
        MIX(&v->kind, 1);
        if (v->kind == JN_MV_STR)
            MIX(v->v.s, v->len);
        else if (v->kind == JN_MV_RAW)
            MIX(v->v.raw, v->len);
        else if (v->kind != JN_MV_STRLIST)
            MIX(&v->v, sizeof v->v.u);
    }
#undef MIX
    return h;
}

typedef struct hashed {
    uint64_t hash;
    jn_mgmt_entity_t *e;
} hashed_t;

static int by_hash(const void *x, const void *y)
{
    uint64_t a = ((const hashed_t *)x)->hash, b = ((const hashed_t *)y)->hash;
    return a < b ? -1 : a > b;
}

/* Convert the new file's stored sections; mark those that run already
 * (matched through a sorted hash index: a file of thousands of sections
 * must not hold the core thread for seconds). Returns the array (n in
 * *count) or NULL on ENOMEM. */
static planned_t *plan_stored(jn_mgmt_t *agent, const jn_config_t *next, size_t *count)
{
    size_t n = jn_config_entity_count(next), k = 0, m = 0;
    for (jn_mgmt_entity_t *e = agent->entities; e; e = e->next) {
        e->matched = false;
        m += e->origin == JN_ORIGIN_FILE;
    }
    planned_t *p = calloc(n ? n : 1, sizeof *p);
    hashed_t *index = calloc(m ? m : 1, sizeof *index);
    if (!p || !index)
        goto oom;
    m = 0;
    for (jn_mgmt_entity_t *e = agent->entities; e; e = e->next)
        if (e->origin == JN_ORIGIN_FILE)
            index[m++] = (hashed_t){entity_hash(e), e};
    qsort(index, m, sizeof *index, by_hash);
    for (size_t i = 0; i < n; i++) {
        const jn_config_entity_t *ce = jn_config_entity_at(next, i);
        const jn_mgmt_class_t *cls =
            jn_mgmt_class_find(jn_schema_type_name(jn_config_entity_type(ce)), NULL);
        if (!cls || !cls->stored)
            continue;
        p[k].ce = ce;
        if (jn_entity_from_config(ce, false, &p[k].e) != 0)
            goto oom;
        hashed_t key = {entity_hash(p[k].e), NULL};
        hashed_t *hit = m ? bsearch(&key, index, m, sizeof *index, by_hash) : NULL;
        while (hit && hit > index && hit[-1].hash == key.hash)
            hit--; /* the first of its run */
        for (; hit && hit < index + m && hit->hash == key.hash && !p[k].keep; hit++)
            if (!hit->e->matched && jn_entity_equal(hit->e, p[k].e))
                hit->e->matched = p[k].keep = true, p[k].running = hit->e;
        k++;
    }
    free(index);
    *count = k;
    return p;
oom:
    for (size_t i = 0; p && i <= k && i < n; i++)
        jn_mgmt_entity_free(p[i].e);
    free(p);
    free(index);
    return NULL;
}

/* An exchange that goes (deleted, or changed: deleted then created) takes
 * its bindings with it in the core (exchange.c): a binding kept by the new
 * file whose exchange does not stay is not kept either, so it is deleted
 * and created again on the new exchange. */
static void unkeep_orphan_bindings(jn_mgmt_t *agent, planned_t *p, size_t n)
{
    for (jn_mgmt_entity_t *b = agent->entities; b; b = b->next) {
        if (!b->matched || strcmp(jn_schema_type_short_name(b->type), "binding") != 0)
            continue;
        const char *ex = jn_mgmt_entity_str(b, "exchangeName");
        bool stays = false;
        for (jn_mgmt_entity_t *x = agent->entities; x && ex && !stays; x = x->next)
            stays = x->matched && x->name && strcmp(x->name, ex) == 0 &&
                    strcmp(jn_schema_type_short_name(x->type), "exchange") == 0;
        if (stays)
            continue;
        b->matched = false;
        for (size_t i = 0; i < n; i++)
            if (p[i].running == b)
                p[i].keep = false, p[i].running = NULL;
    }
}

/* A listener copies the authServicePlugin its saslPlugin names when it is
 * created (io_endpoint.c): one kept by the new file whose plugin does not
 * stay unchanged is not kept either, so it is created again with the new
 * plugin's settings (its open connections stay, as for any listener). */
static void unkeep_plugin_listeners(jn_mgmt_t *agent, planned_t *p, size_t n)
{
    for (jn_mgmt_entity_t *l = agent->entities; l; l = l->next) {
        if (!l->matched || strcmp(jn_schema_type_short_name(l->type), "listener") != 0)
            continue;
        const char *plugin = jn_mgmt_entity_str(l, "saslPlugin");
        if (!plugin || !plugin[0])
            continue;
        bool stays = false;
        for (jn_mgmt_entity_t *x = agent->entities; x && !stays; x = x->next)
            stays = x->matched && x->name && strcmp(x->name, plugin) == 0 &&
                    strcmp(jn_schema_type_short_name(x->type), "authServicePlugin") == 0;
        if (stays)
            continue;
        l->matched = false;
        for (size_t i = 0; i < n; i++)
            if (p[i].running == l)
                p[i].keep = false, p[i].running = NULL;
    }
}

static void free_plan(planned_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        jn_mgmt_entity_free(p[i].e);
    free(p);
}

/* What two entities may not share besides a name: an address's prefix
 * or pattern, a listener's host and port (port 0 aside). The key is
 * written to key (cap octets); false when e has none. */
static bool clash_key(jn_mgmt_entity_t *e, char *key, size_t cap)
{
    const char *type = jn_schema_type_short_name(e->type);
    if (strcmp(type, "address") == 0) {
        const char *prefix = jn_mgmt_entity_str(e, "prefix");
        const char *pattern = jn_mgmt_entity_str(e, "pattern");
        snprintf(key, cap, "%s '%s'", prefix ? "prefix" : "pattern", prefix ? prefix : pattern);
        return prefix || pattern;
    }
    if (strcmp(type, "listener") == 0 && !e->port_any) {
        const char *host = jn_mgmt_entity_str(e, "host"), *port = jn_mgmt_entity_str(e, "port");
        if (!port || strspn(port, "0") == strlen(port))
            return false;
        snprintf(key, cap, "address %s:%s", host ? host : "", port);
        return true;
    }
    return false;
}

static bool clashes(jn_mgmt_entity_t *a, jn_mgmt_entity_t *b, const char *key_a, char *key_b,
                    size_t cap)
{
    return a->type == b->type && clash_key(b, key_b, cap) && strcmp(key_a, key_b) == 0;
}

/* Every check a creation of the new file could still fail, done before
 * anything changes: a name, an address prefix/pattern or a listener
 * address taken by an entity that stays or twice in the file. */
static int check_clashes(jn_mgmt_t *agent, const jn_config_t *next, planned_t *p, size_t n,
                         out_t *o)
{
    char key[600], other[600];
    for (size_t i = 0; i < n; i++) {
        if (p[i].keep)
            continue;
        jn_mgmt_entity_t *e = p[i].e;
        const char *what = NULL;
        if (e->name) {
            for (jn_mgmt_entity_t *x = agent->entities; x && !what; x = x->next)
                /* a kept entity named by its place is renamed by its new
                 * place (rename_kept), and the file's own names are unique */
                if ((x->origin != JN_ORIGIN_FILE || (x->matched && !x->name_by_place)) &&
                    x->name &&
                    strcmp(x->name, e->name) == 0 && jn_entity_same_names(x->cls, e->cls))
                    what = "name";
            for (size_t j = 0; j < i && !what; j++)
                if (!p[j].keep && p[j].e->name && strcmp(p[j].e->name, e->name) == 0 &&
                    jn_entity_same_names(p[j].e->cls, e->cls))
                    what = "name";
        }
        if (what) {
            say(o, "%s:%d: %s name '%s' conflicts with an existing entity",
                jn_config_name(next), jn_config_entity_line(p[i].ce),
                jn_schema_type_short_name(e->type), e->name);
            return -1;
        }
        if (!clash_key(e, key, sizeof key))
            continue;
        bool taken = false;
        for (jn_mgmt_entity_t *x = agent->entities; x && !taken; x = x->next)
            taken = (x->origin != JN_ORIGIN_FILE || x->matched) &&
                    clashes(e, x, key, other, sizeof other);
        for (size_t j = 0; j < i && !taken; j++)
            taken = !p[j].keep && clashes(e, p[j].e, key, other, sizeof other);
        if (taken) {
            say(o, "%s:%d: %s: %s is already used by another %s", jn_config_name(next),
                jn_config_entity_line(p[i].ce), jn_schema_type_short_name(e->type), key,
                jn_schema_type_short_name(e->type));
            return -1;
        }
    }
    return 0;
}

/* A profile for the new file's entities: in the new file, else running. */
static int profile_for_reload(void *arg, const char *name)
{
    void **two = arg;
    int found = jn_entity_profile_in_file(two[0], name);
    return found ? found : jn_entity_profile_in_store(two[1], name);
}

/* The system's checks of every creation (TLS files and passwords, SASL
 * mechanisms), before anything changes. */
static int validate_new(jn_mgmt_t *agent, const jn_config_t *next, planned_t *p, size_t n,
                        out_t *o)
{
    void *two[2] = {(void *)next, agent};
    jn_entity_ctx_t ctx = {.mode = agent->cfg.mode, .profile = profile_for_reload,
                           .profile_arg = two};
    for (size_t i = 0; i < n; i++) {
        jn_entity_err_t err;
        if (p[i].keep || (jn_entity_check(&ctx, p[i].e, &err) == 0 &&
                          jn_entity_validate_CT(agent, &ctx, p[i].e, &err) == 0))
            continue;
        char line[JN_ENTITY_ERR_MAX + 256];
        jn_entity_file_error(next, p[i].ce, &err, line, sizeof line);
        say(o, "%s", line);
        return -1;
    }
    return 0;
}

/* ---- applying ---------------------------------------------------------------- */

static bool replaced_profile(jn_mgmt_entity_t *e, planned_t *p, size_t n)
{
    if (strcmp(jn_schema_type_short_name(e->type), "sslProfile") != 0 || !e->name)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!p[i].keep && p[i].e->type == e->type && p[i].e->name &&
            strcmp(p[i].e->name, e->name) == 0)
            return true;
    return false;
}

/* rename_kept: a kept section named by its place in the file ("address/2")
 * takes the name of its place in the new file. Returns 0 or JN_ENOMEM
 * (the old name stays). */
static int rename_kept(planned_t *p, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        jn_mgmt_entity_t *e = p[i].running;
        if (!p[i].keep || !e || !e->name_by_place || !p[i].e->name ||
            (e->name && strcmp(e->name, p[i].e->name) == 0))
            continue;
        char *name = strdup(p[i].e->name);
        if (!name) {
            rc = JN_ENOMEM;
            continue;
        }
        free(e->name);
        e->name = name;
    }
    return rc;
}

static unsigned delete_unmatched(jn_mgmt_t *agent, planned_t *p, size_t np, out_t *o)
{
    unsigned n = 0;
    jn_mgmt_entity_t *e = agent->entities;
    while (e) {
        jn_mgmt_entity_t *next = e->next;
        if (e->origin == JN_ORIGIN_FILE && !e->matched) {
            /* an sslProfile the new file redefines is replaced in one step
             * by its creation: no connection in between finds none */
            if (!replaced_profile(e, p, np))
                jn_entity_delete_CT(agent, e);
            say(o, "%sdeleted %s %s", n ? "; " : "", e->cls->name, e->identity);
            JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_INFO, "Reload: deleted %s %s", e->cls->name,
                   e->identity);
            jn_mgmt_store_unlink(agent, e);
            jn_mgmt_entity_free(e);
            n++;
        }
        e = next;
    }
    return n;
}

/* The `log` section for module m in cfg (converted, skip defaults), or
 * NULL. */
static jn_mgmt_entity_t *log_section(const jn_config_t *cfg, const char *module)
{
    for (size_t i = 0; cfg && i < jn_config_entity_count(cfg); i++) {
        const jn_config_entity_t *ce = jn_config_entity_at(cfg, i);
        const char *m = type_is(ce, "log") ? jn_config_entity_string(ce, "module") : NULL;
        jn_mgmt_entity_t *e = NULL;
        if (m && strcmp(m, module) == 0 && jn_entity_from_config(ce, true, &e) == 0)
            return e;
    }
    return NULL;
}

/* The `log` section for module in cfg (for its line). */
static const jn_config_entity_t *log_section_ce(const jn_config_t *cfg, const char *module)
{
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++) {
        const jn_config_entity_t *ce = jn_config_entity_at(cfg, i);
        const char *m = type_is(ce, "log") ? jn_config_entity_string(ce, "module") : NULL;
        if (m && strcmp(m, module) == 0)
            return ce;
    }
    return jn_config_entity_at(cfg, 0);
}

static void continue_free(jn_mgmt_entity_t *a, jn_mgmt_entity_t *b)
{
    jn_mgmt_entity_free(a);
    jn_mgmt_entity_free(b);
}

static unsigned apply_logs(jn_mgmt_t *agent, const jn_config_t *next, unsigned done,
                           unsigned *failed, out_t *o)
{
    unsigned n = 0;
    for (int m = 0; m < JN_LOG_SCHEMA_MODULE_COUNT; m++) {
        const char *module = jn_log_module_name((jn_log_module_t)m);
        jn_mgmt_entity_t *was = log_section(agent->file, module);
        jn_mgmt_entity_t *now = log_section(next, module);
        jn_entity_err_t err;
        bool retry = agent->log_failed & (1u << m);
        if (now && (!was || retry || !jn_entity_equal(was, now))) {
            if (jn_entity_apply_log(now, &err) != 0) {
                /* reported as failed, and tried again by the next reload */
                char line[JN_ENTITY_ERR_MAX + 256];
                jn_entity_file_error(next, log_section_ce(next, module), &err, line,
                                     sizeof line);
                say(o, "%s%s", done + n + *failed ? "; " : "", line);
                JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_ERROR, "Reload: %s", line);
                agent->log_failed |= 1u << m;
                (*failed)++;
                continue_free(was, now);
                continue;
            }
            agent->log_failed &= ~(1u << m);
            say(o, "%slog %s changed", done + n + *failed ? "; " : "", module);
            n++;
        } else if (was && !now) {
            jn_entity_reset_log(was);
            say(o, "%slog %s back to default", done + n ? "; " : "", module);
            n++;
        }
        jn_mgmt_entity_free(was);
        jn_mgmt_entity_free(now);
    }
    return n;
}

static unsigned create_new(jn_mgmt_t *agent, const jn_config_t *next, planned_t *p, size_t n,
                           unsigned done, unsigned *failed, out_t *o)
{
    /* as at start-up (entity_file.c): profiles, auth service plugins,
     * addresses, link routes, auto-links, exchanges before their bindings,
     * connectors, listeners */
    static const char *const order[] = {"sslProfile", "authServicePlugin", "address",
                                        "linkRoute",  "autoLink",          "exchange",
                                        "binding",    "connector",         "listener"};
    const size_t passes = sizeof order / sizeof order[0];
    unsigned made = 0;
    for (size_t pass = 0, i = 0; pass < passes; i = i + 1 < n ? i + 1 : (pass++, 0)) {
        if (n == 0)
            break;
        if (p[i].keep || !p[i].e ||
            strcmp(jn_schema_type_short_name(p[i].e->type), order[pass]) != 0)
            continue;
        jn_mgmt_entity_t *e = p[i].e;
        bool config_type = strncmp(e->cls->name, "router.config.", 14) == 0;
        jn_entity_err_t err;
        int st = jn_mgmt_entity_set_identity(agent, e,
                                             config_type ? NULL
                                                         : jn_config_entity_identity(p[i].ce))
                     ? jn_entity_fail(&err, JN_MGMT_INTERNAL, NULL, "out of memory")
                     : jn_entity_create_CT(agent, e, &err);
        if (st) {
            char line[JN_ENTITY_ERR_MAX + 256];
            jn_entity_file_error(next, p[i].ce, &err, line, sizeof line);
            say(o, "%s%s", done + made + *failed ? "; " : "", line);
            JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_ERROR, "Reload: %s", line);
            (*failed)++;
            continue;
        }
        e->origin = JN_ORIGIN_FILE;
        jn_mgmt_store_append(agent, e);
        p[i].e = NULL; /* the store's now */
        say(o, "%screated %s %s", done + made + *failed ? "; " : "", e->cls->name, e->identity);
        JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_INFO, "Reload: created %s %s", e->cls->name, e->identity);
        made++;
    }
    return made;
}

int jn_mgmt_reload_CT(jn_mgmt_t *agent, char *result, size_t cap)
{
    out_t o = {result, cap, 0};
    if (result && cap)
        result[0] = '\0';
    if (!agent->cfg.config_path) {
        say(&o, "junctiond runs on its built-in configuration (no -c FILE): nothing to reload");
        return JN_MGMT_BAD_REQUEST;
    }
    jn_config_t *next = NULL;
    char err[JN_CONFIG_ERROR_MAX];
    if (jn_config_load_file(agent->cfg.config_path, &next, err, sizeof err) != 0) {
        say(&o, "%s", err);
        return JN_MGMT_BAD_REQUEST;
    }
    char *errors = malloc(4096);
    int n_err = errors ? jn_mgmt_plan_config(next, NULL, errors, 4096) : 1;
    if (n_err) {
        say(&o, "%s", errors ? errors : "out of memory");
        free(errors);
        jn_config_free(next);
        return JN_MGMT_BAD_REQUEST;
    }
    free(errors);
    size_t n = 0;
    planned_t *p = NULL;
    if (compare_fixed(agent, next, &o) != 0 || compare_vhosts(agent, next, &o) != 0 ||
        !(p = plan_stored(agent, next, &n)) ||
        (unkeep_orphan_bindings(agent, p, n), unkeep_plugin_listeners(agent, p, n), false) ||
        check_clashes(agent, next, p, n, &o) != 0 || validate_new(agent, next, p, n, &o) != 0) {
        if (!p && o.used == 0)
            say(&o, "out of memory");
        free_plan(p, n);
        jn_config_free(next);
        return JN_MGMT_BAD_REQUEST;
    }
    unsigned failed = 0;
    unsigned done = delete_unmatched(agent, p, n, &o);
    if (rename_kept(p, n) != 0)
        JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_ERROR, "Reload: out of memory renaming kept entities");
    done += apply_logs(agent, next, done, &failed, &o);
    done += create_new(agent, next, p, n, done, &failed, &o);
    free_plan(p, n);
    jn_config_free(agent->file);
    agent->file = next;
    if (done + failed == 0)
        say(&o, "no change");
    JN_LOG(JN_LOG_MOD_AGENT, failed ? JN_LOG_ERROR : JN_LOG_NOTICE,
           "Reloaded %s: %u change%s applied, %u failed", agent->cfg.config_path, done,
           done == 1 ? "" : "s", failed);
    return failed ? JN_MGMT_BAD_REQUEST : JN_MGMT_OK;
}
