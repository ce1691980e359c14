/*
 * table.c — the vhost table (junction/policy.h, docs/design.md "Policy"):
 * the vhosts by hostname (exact, alias, then name pattern), the open
 * connections counted per vhost, user, remote host and user group, the
 * admission of a client's Open against them, and each vhost's figures.
 * Everything is under the table's own mutex, taken once per Open, once
 * per close and once per denial — never per message allowed. No I/O: the
 * I/O layer passes the facts in and acts on the answer.
 */
#include "policy_private.h"

#include <junction/policy.h>
#include <junction/wildcard.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct group {
    char *name, *users, *remote_hosts;
    uint32_t max_per_user, max_per_host;
    uint32_t max_connections; /* of the group at once; JN_POLICY_NO_LIMIT: none */
    jn_policy_rules_t rules;  /* vhost NULL here: filled in a copy */
} group_t;

typedef struct vhost {
    struct vhost *next;
    char *hostname, *aliases;
    uint32_t max_connections, max_per_user, max_per_host;
    bool allow_unknown_user;
    bool has_max_message_size;
    uint64_t max_message_size;
    group_t *groups;
    size_t group_count;
    uint64_t approved, denied, sender_denied, receiver_denied, session_denied, max_size_denied;
} vhost_t;

/* One count: the connections of a vhost (kind TOTAL), of one user in it
 * (USER), from one remote host (HOST) or of one user group (GROUP, key the
 * group's name, "" for none). Dropped when it reaches 0. */
enum { COUNT_TOTAL, COUNT_USER, COUNT_HOST, COUNT_GROUP };
typedef struct count {
    struct count *next;
    char *vhost;
    char *key; /* "" for TOTAL */
    int kind;
    uint32_t n;
} count_t;

struct jn_policy {
    pthread_mutex_t lock; /* everything below */
    char *default_vhost;  /* "" for none */
    bool name_patterns;
    vhost_t *vhosts;
    count_t *counts;
    uint64_t links_denied, sessions_denied;
};

static char *dup0(const char *s)
{
    return strdup(s ? s : "");
}

static void rules_clear(jn_policy_rules_t *r)
{
    free(r->sources);
    free(r->targets);
    free(r->source_pattern);
    free(r->target_pattern);
    free(r->vhost);
    memset(r, 0, sizeof *r);
}

static void vhost_free(vhost_t *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->group_count; i++) {
        free(v->groups[i].name);
        free(v->groups[i].users);
        free(v->groups[i].remote_hosts);
        rules_clear(&v->groups[i].rules);
    }
    free(v->groups);
    free(v->hostname);
    free(v->aliases);
    free(v);
}

jn_policy_t *jn_policy_create(void)
{
    jn_policy_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->default_vhost = strdup("");
    if (!p->default_vhost) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    return p;
}

void jn_policy_free(jn_policy_t *p)
{
    if (!p)
        return;
    while (p->vhosts) {
        vhost_t *v = p->vhosts;
        p->vhosts = v->next;
        vhost_free(v);
    }
    while (p->counts) {
        count_t *c = p->counts;
        p->counts = c->next;
        free(c->vhost);
        free(c->key);
        free(c);
    }
    free(p->default_vhost);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

int jn_policy_configure(jn_policy_t *p, const char *default_vhost, bool name_patterns)
{
    char *d = dup0(default_vhost);
    if (!d)
        return JN_ENOMEM;
    pthread_mutex_lock(&p->lock);
    free(p->default_vhost);
    p->default_vhost = d;
    p->name_patterns = name_patterns;
    pthread_mutex_unlock(&p->lock);
    return 0;
}

/* g's copy into c (a group of the table); false when out of memory (what
 * was copied is freed with the vhost). */
static bool group_copy(group_t *c, const jn_policy_group_t *g)
{
    c->name = dup0(g->name);
    c->users = dup0(g->users);
    c->remote_hosts = dup0(g->remote_hosts);
    c->max_per_user = g->max_per_user;
    c->max_per_host = g->max_per_host;
    c->max_connections = g->max_connections;
    c->rules = (jn_policy_rules_t){.sources = dup0(g->sources),
                                   .targets = dup0(g->targets),
                                   .source_pattern = dup0(g->source_pattern),
                                   .target_pattern = dup0(g->target_pattern),
                                   .allow_anonymous_sender = g->allow_anonymous_sender,
                                   .allow_dynamic_source = g->allow_dynamic_source,
                                   .allow_user_id_proxy = g->allow_user_id_proxy,
                                   .max_frame_size = g->max_frame_size,
                                   .max_sessions = g->max_sessions,
                                   .max_session_window = g->max_session_window,
                                   .has_max_message_size = g->has_max_message_size,
                                   .max_message_size = g->max_message_size,
                                   .max_senders = g->max_senders,
                                   .max_receivers = g->max_receivers,
                                   .allow_waypoint_links = g->allow_waypoint_links,
                                   .allow_fallback_links = g->allow_fallback_links,
                                   .allow_dynamic_link_routes = g->allow_dynamic_link_routes,
                                   .allow_admin_status_update = g->allow_admin_status_update};
    return c->name && c->users && c->remote_hosts && c->rules.sources && c->rules.targets &&
           c->rules.source_pattern && c->rules.target_pattern;
}

static vhost_t *vhost_copy(const jn_policy_vhost_t *vh)
{
    vhost_t *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->hostname = dup0(vh->hostname);
    v->aliases = dup0(vh->aliases);
    v->max_connections = vh->max_connections;
    v->max_per_user = vh->max_per_user;
    v->max_per_host = vh->max_per_host;
    v->allow_unknown_user = vh->allow_unknown_user;
    v->has_max_message_size = vh->has_max_message_size;
    v->max_message_size = vh->max_message_size;
    v->groups = vh->group_count ? calloc(vh->group_count, sizeof *v->groups) : NULL;
    bool ok = v->hostname && v->aliases && (v->groups || !vh->group_count);
    for (size_t i = 0; ok && i < vh->group_count; i++)
        ok = group_copy(&v->groups[v->group_count++], &vh->groups[i]);
    if (!ok) {
        vhost_free(v);
        return NULL;
    }
    return v;
}

int jn_policy_vhost_add(jn_policy_t *p, const jn_policy_vhost_t *vh)
{
    vhost_t *v = vhost_copy(vh);
    if (!v)
        return JN_ENOMEM;
    pthread_mutex_lock(&p->lock);
    vhost_t **pp = &p->vhosts;
    while (*pp && strcmp((*pp)->hostname, v->hostname) != 0)
        pp = &(*pp)->next;
    vhost_t *old = *pp;
    v->next = old ? old->next : NULL;
    if (old) { /* replaced (management UPDATE): its figures go on */
        v->approved = old->approved;
        v->denied = old->denied;
        v->sender_denied = old->sender_denied;
        v->receiver_denied = old->receiver_denied;
        v->session_denied = old->session_denied;
        v->max_size_denied = old->max_size_denied;
    }
    *pp = v;
    pthread_mutex_unlock(&p->lock);
    vhost_free(old);
    return 0;
}

int jn_policy_vhost_remove(jn_policy_t *p, const char *hostname)
{
    pthread_mutex_lock(&p->lock);
    vhost_t **pp = &p->vhosts;
    while (*pp && strcmp((*pp)->hostname, hostname) != 0)
        pp = &(*pp)->next;
    vhost_t *old = *pp;
    if (old)
        *pp = old->next;
    pthread_mutex_unlock(&p->lock);
    vhost_free(old);
    return old ? 0 : JN_ENOENT;
}

/* name is one of the comma-separated items of list (spaces around an item
 * ignored), or list has the item "*". */
static bool in_list(const char *list, const char *name)
{
    const char *p = list;
    size_t n = strlen(name);
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && t[-1] == ' ')
            t--;
        size_t len = (size_t)(t - p);
        if ((len == 1 && *p == '*') || (len == n && memcmp(p, name, n) == 0))
            return true;
        p = e;
    }
    return false;
}

/* name is one of the comma- or space-separated items of list, exactly. */
static bool in_aliases(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *e, *p = jn_policy_next_item(list, &e); *p; p = jn_policy_next_item(e, &e))
        if ((size_t)(e - p) == n && memcmp(p, name, n) == 0)
            return true;
    return false;
}

/* How general a vhost name pattern is: each '#' token weighs more than
 * any number of '*' tokens, so the most specific match wins. */
static unsigned pattern_weight(const char *p, size_t len)
{
    unsigned w = 0;
    for (size_t i = 0; i < len; i++) {
        bool starts = i == 0 || p[i - 1] == '.' || p[i - 1] == '/';
        bool ends = i + 1 == len || p[i + 1] == '.' || p[i + 1] == '/';
        if (starts && ends && p[i] == '#')
            w += 1000;
        else if (starts && ends && p[i] == '*')
            w += 1;
    }
    return w;
}

/* The best vhost whose hostname or an alias, read as a pattern, matches
 * hostname: the fewest wildcards wins, then table order. */
static vhost_t *vhost_find_pattern(jn_policy_t *p, const char *hostname)
{
    vhost_t *best = NULL;
    unsigned best_w = UINT32_MAX;
    size_t hlen = strlen(hostname);
    for (vhost_t *v = p->vhosts; v; v = v->next) {
        size_t n = strlen(v->hostname);
        unsigned w = pattern_weight(v->hostname, n);
        if (w < best_w && jn_wildcard_match(v->hostname, n, hostname, hlen, "./", '*')) {
            best = v;
            best_w = w;
        }
        for (const char *e, *a = jn_policy_next_item(v->aliases, &e); *a;
             a = jn_policy_next_item(e, &e)) {
            w = pattern_weight(a, (size_t)(e - a));
            if (w < best_w && jn_wildcard_match(a, (size_t)(e - a), hostname, hlen, "./", '*')) {
                best = v;
                best_w = w;
            }
        }
    }
    return best;
}

/* The vhost whose hostname is hostname, else the first that has it among
 * its aliases, else (name patterns on) the best pattern that matches.
 * Under p->lock. */
static vhost_t *vhost_find(jn_policy_t *p, const char *hostname)
{
    if (!hostname)
        return NULL;
    for (vhost_t *v = p->vhosts; v; v = v->next)
        if (strcmp(v->hostname, hostname) == 0)
            return v;
    for (vhost_t *v = p->vhosts; v; v = v->next)
        if (in_aliases(v->aliases, hostname))
            return v;
    return p->name_patterns ? vhost_find_pattern(p, hostname) : NULL;
}

static count_t *count_find(jn_policy_t *p, const char *vhost, int kind, const char *key, bool make)
{
    for (count_t *c = p->counts; c; c = c->next)
        if (c->kind == kind && strcmp(c->vhost, vhost) == 0 && strcmp(c->key, key) == 0)
            return c;
    if (!make)
        return NULL;
    count_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->vhost = strdup(vhost);
    c->key = strdup(key);
    c->kind = kind;
    if (!c->vhost || !c->key) {
        free(c->vhost);
        free(c->key);
        free(c);
        return NULL;
    }
    c->next = p->counts;
    p->counts = c;
    return c;
}

static uint32_t count_of(jn_policy_t *p, const char *vhost, int kind, const char *key)
{
    count_t *c = count_find(p, vhost, kind, key, false);
    return c ? c->n : 0;
}

static void count_drop(jn_policy_t *p, const char *vhost, int kind, const char *key)
{
    for (count_t **pp = &p->counts; *pp; pp = &(*pp)->next) {
        count_t *c = *pp;
        if (c->kind != kind || strcmp(c->vhost, vhost) != 0 || strcmp(c->key, key) != 0)
            continue;
        if (c->n > 0 && --c->n == 0) {
            *pp = c->next;
            free(c->vhost);
            free(c->key);
            free(c);
        }
        return;
    }
}

/* An admission with group g's rules of vhost v (g NULL: the rules of no
 * group, which allow no address), with the maxMessageSize that applies
 * (the group's, else the vhost's); NULL when out of memory. */
static jn_policy_admission_t *admission_new(const vhost_t *v, const group_t *g)
{
    jn_policy_admission_t *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    jn_policy_rules_t *r = &a->rules;
    if (g)
        *r = g->rules;
    else
        r->max_senders = r->max_receivers = INT32_MAX;
    r->sources = dup0(g ? g->rules.sources : NULL);
    r->targets = dup0(g ? g->rules.targets : NULL);
    r->source_pattern = dup0(g ? g->rules.source_pattern : NULL);
    r->target_pattern = dup0(g ? g->rules.target_pattern : NULL);
    r->vhost = strdup(v->hostname);
    if (!r->has_max_message_size && v->has_max_message_size) {
        r->has_max_message_size = true;
        r->max_message_size = v->max_message_size;
    }
    if (!r->sources || !r->targets || !r->source_pattern || !r->target_pattern || !r->vhost) {
        rules_clear(r);
        free(a);
        return NULL;
    }
    return a;
}

/* The user group of v that user falls in: the first other than
 * "$default" that lists the user, else "$default", else NULL. */
static const group_t *group_of(const vhost_t *v, const char *user)
{
    for (size_t i = 0; i < v->group_count; i++)
        if (strcmp(v->groups[i].name, "$default") != 0 && in_list(v->groups[i].users, user))
            return &v->groups[i];
    for (size_t i = 0; i < v->group_count; i++)
        if (strcmp(v->groups[i].name, "$default") == 0)
            return &v->groups[i];
    return NULL;
}

/* The limit of v and g that f's connection would pass, or NULL. */
static const char *limit_reached(jn_policy_t *p, const vhost_t *v, const group_t *g,
                                 const jn_policy_open_facts_t *f)
{
    uint32_t per_user =
        g && g->max_per_user != JN_POLICY_NO_LIMIT ? g->max_per_user : v->max_per_user;
    uint32_t per_host =
        g && g->max_per_host != JN_POLICY_NO_LIMIT ? g->max_per_host : v->max_per_host;
    if (count_of(p, v->hostname, COUNT_TOTAL, "") >= v->max_connections)
        return "vhost maxConnections reached";
    if (count_of(p, v->hostname, COUNT_USER, f->user) >= per_user)
        return "maxConnectionsPerUser reached";
    if (count_of(p, v->hostname, COUNT_HOST, f->rhost) >= per_host)
        return "maxConnectionsPerHost reached";
    if (g && count_of(p, v->hostname, COUNT_GROUP, g->name) >= g->max_connections)
        return "user group maxConnections reached";
    return NULL;
}

/* Count f's connection in v (group g) and make its admission: NULL when
 * out of memory (counts made at 0 are dropped with the others). */
static jn_policy_admission_t *count_in(jn_policy_t *p, const vhost_t *v, const group_t *g,
                                       const jn_policy_open_facts_t *f)
{
    const char *gname = g ? g->name : "";
    count_t *t = count_find(p, v->hostname, COUNT_TOTAL, "", true);
    count_t *u = t ? count_find(p, v->hostname, COUNT_USER, f->user, true) : NULL;
    count_t *h = u ? count_find(p, v->hostname, COUNT_HOST, f->rhost, true) : NULL;
    count_t *gc = h ? count_find(p, v->hostname, COUNT_GROUP, gname, true) : NULL;
    jn_policy_admission_t *a = gc ? admission_new(v, g) : NULL;
    if (a) {
        a->vhost = strdup(v->hostname);
        a->user = strdup(f->user);
        a->rhost = strdup(f->rhost);
        a->group = strdup(gname);
    }
    if (a && (!a->vhost || !a->user || !a->rhost || !a->group)) {
        free(a->vhost); /* nothing counted yet: release only frees */
        a->vhost = NULL;
        jn_policy_release(p, a);
        a = NULL;
    }
    if (!a)
        return NULL;
    t->n++;
    u->n++;
    h->n++;
    gc->n++;
    return a;
}

/* Decide under p->lock: NULL when admitted (counted, *out set), else the
 * rule that denied it. *vp: the vhost found, or NULL. */
static const char *admit_locked(jn_policy_t *p, const jn_policy_open_facts_t *f,
                                jn_policy_admission_t **out, vhost_t **vp)
{
    vhost_t *v = vhost_find(p, f->hostname);
    if (!v && p->default_vhost[0])
        v = vhost_find(p, p->default_vhost);
    *vp = v;
    if (!v)
        return "no vhost policy for the open hostname and no default vhost";
    const group_t *g = group_of(v, f->user);
    if (!g && !v->allow_unknown_user)
        return "user is in no user group and the vhost has no $default group";
    if (g && !in_list(g->remote_hosts, f->rhost))
        return "remote host not allowed by the user group's remoteHosts";
    const char *why = limit_reached(p, v, g, f);
    if (why)
        return why;
    *out = count_in(p, v, g, f);
    return *out ? NULL : "out of memory";
}

const char *jn_policy_admit(jn_policy_t *p, const jn_policy_open_facts_t *f,
                            jn_policy_admission_t **out, char *shown, size_t cap)
{
    *out = NULL;
    jn_policy_open_facts_t facts = {.user = f->user && f->user[0] ? f->user : "anonymous",
                                    .hostname = f->hostname,
                                    .rhost = f->rhost ? f->rhost : ""};
    vhost_t *v = NULL;
    pthread_mutex_lock(&p->lock);
    const char *why = admit_locked(p, &facts, out, &v);
    if (v && why)
        v->denied++;
    else if (v)
        v->approved++;
    if (cap > 0)
        snprintf(shown, cap, "%s", v ? v->hostname : (f->hostname ? f->hostname : ""));
    pthread_mutex_unlock(&p->lock);
    return why;
}

const char *jn_policy_admit_connector(jn_policy_t *p, const char *vhost,
                                      jn_policy_admission_t **out)
{
    pthread_mutex_lock(&p->lock);
    vhost_t *v = vhost_find(p, vhost);
    const group_t *g = NULL;
    for (size_t i = 0; v && i < v->group_count && !g; i++)
        if (strcmp(v->groups[i].name, "$connector") == 0)
            g = &v->groups[i];
    *out = g ? admission_new(v, g) : NULL;
    pthread_mutex_unlock(&p->lock);
    if (!*out)
        return !v ? "no such vhost" : !g ? "the vhost has no '$connector' group" : "out of memory";
    (*out)->rules.outgoing = true;
    return NULL;
}

void jn_policy_release(jn_policy_t *p, jn_policy_admission_t *a)
{
    if (!a)
        return;
    if (a->vhost) {
        pthread_mutex_lock(&p->lock);
        count_drop(p, a->vhost, COUNT_TOTAL, "");
        count_drop(p, a->vhost, COUNT_USER, a->user);
        count_drop(p, a->vhost, COUNT_HOST, a->rhost);
        count_drop(p, a->vhost, COUNT_GROUP, a->group);
        pthread_mutex_unlock(&p->lock);
    }
    free(a->vhost);
    free(a->user);
    free(a->rhost);
    free(a->group);
    rules_clear(&a->rules);
    free(a);
}

void jn_policy_note_denial(jn_policy_t *p, const char *vhost, jn_policy_denial_t kind)
{
    pthread_mutex_lock(&p->lock);
    vhost_t *v = vhost_find(p, vhost);
    switch (kind) {
    case JN_POLICY_DENIED_SENDER:
    case JN_POLICY_DENIED_RECEIVER:
        p->links_denied++;
        if (v && kind == JN_POLICY_DENIED_SENDER)
            v->sender_denied++;
        else if (v)
            v->receiver_denied++;
        break;
    case JN_POLICY_DENIED_TRANSFER:
        if (v)
            v->sender_denied++; /* the client's sender, as at attach */
        break;
    case JN_POLICY_DENIED_SESSION:
        p->sessions_denied++;
        if (v)
            v->session_denied++;
        break;
    case JN_POLICY_DENIED_MAX_SIZE:
        if (v)
            v->max_size_denied++;
        break;
    }
    pthread_mutex_unlock(&p->lock);
}

void jn_policy_vhost_denials(jn_policy_t *p, const char *vhost, uint64_t *sessions,
                             uint64_t *senders, uint64_t *receivers)
{
    pthread_mutex_lock(&p->lock);
    vhost_t *v = vhost_find(p, vhost);
    *sessions = v ? v->session_denied : 0;
    *senders = v ? v->sender_denied : 0;
    *receivers = v ? v->receiver_denied : 0;
    pthread_mutex_unlock(&p->lock);
}

void jn_policy_totals(jn_policy_t *p, uint64_t *links_denied, uint64_t *sessions_denied)
{
    pthread_mutex_lock(&p->lock);
    *links_denied = p->links_denied;
    *sessions_denied = p->sessions_denied;
    pthread_mutex_unlock(&p->lock);
}

/* ---- vhostStats ------------------------------------------------------------ */

/* The open connections of vhost per user or host (kind) into a new array
 * *out of *n. Under p->lock. */
static int counts_copy(jn_policy_t *p, const char *vhost, int kind, jn_policy_count_t **out,
                       size_t *n)
{
    size_t k = 0;
    for (count_t *c = p->counts; c; c = c->next)
        k += c->kind == kind && c->n > 0 && strcmp(c->vhost, vhost) == 0;
    *out = calloc(k ? k : 1, sizeof **out);
    *n = 0;
    if (!*out)
        return JN_ENOMEM;
    for (count_t *c = p->counts; c; c = c->next) {
        if (c->kind != kind || c->n == 0 || strcmp(c->vhost, vhost) != 0)
            continue;
        (*out)[*n].n = c->n;
        (*out)[*n].key = strdup(c->key);
        if (!(*out)[(*n)++].key)
            return JN_ENOMEM;
    }
    return 0;
}

int jn_policy_stats(jn_policy_t *p, jn_policy_vhost_stats_t **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    pthread_mutex_lock(&p->lock);
    size_t n = 0;
    for (vhost_t *v = p->vhosts; v; v = v->next)
        n++;
    jn_policy_vhost_stats_t *st = calloc(n ? n : 1, sizeof *st);
    int rc = st ? 0 : JN_ENOMEM;
    size_t i = 0;
    for (vhost_t *v = p->vhosts; v && rc == 0; v = v->next, i++) {
        st[i] = (jn_policy_vhost_stats_t){.hostname = strdup(v->hostname),
                                          .approved = v->approved,
                                          .denied = v->denied,
                                          .current = count_of(p, v->hostname, COUNT_TOTAL, ""),
                                          .sender_denied = v->sender_denied,
                                          .receiver_denied = v->receiver_denied,
                                          .session_denied = v->session_denied,
                                          .max_size_denied = v->max_size_denied};
        if (!st[i].hostname ||
            counts_copy(p, v->hostname, COUNT_USER, &st[i].per_user, &st[i].n_user) ||
            counts_copy(p, v->hostname, COUNT_HOST, &st[i].per_host, &st[i].n_host))
            rc = JN_ENOMEM;
    }
    pthread_mutex_unlock(&p->lock);
    if (rc) {
        jn_policy_stats_free(st, n);
        return rc;
    }
    *out = st;
    *count = n;
    return 0;
}

void jn_policy_stats_free(jn_policy_vhost_stats_t *st, size_t count)
{
    for (size_t i = 0; st && i < count; i++) {
        free(st[i].hostname);
        for (size_t k = 0; k < st[i].n_user; k++)
            free(st[i].per_user[k].key);
        for (size_t k = 0; k < st[i].n_host; k++)
            free(st[i].per_host[k].key);
        free(st[i].per_user);
        free(st[i].per_host);
    }
    free(st);
}
