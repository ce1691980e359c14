/*
 * io_policy.c — the vhost policy's connection check (docs/design.md
 * "Policy"): the vhost table, the user group a connection falls in, and the
 * per-vhost, per-user and per-host connection counts, and the link rules:
 * at attach, and for each message of an anonymous sender its target. The
 * table and counts are under io->lock, taken once per incoming client Open
 * and once per close, and for a denial (to count it) — never per message
 * allowed.
 */
#include "io_private.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <junction/encoder.h>
#include <junction/annotations.h>
#include <junction/iterator.h>
#include <junction/log.h>
#include <junction/message.h>
#include <junction/wildcard.h>

/* A group's link rules; a connection holds its own copy. */
struct jn_io_vhost_rules {
    char *sources, *targets, *source_pattern, *target_pattern;
    bool allow_anonymous_sender, allow_dynamic_source, allow_user_id_proxy;
    uint32_t max_frame_size, max_sessions, max_session_window; /* 0: not set */
    bool has_max_message_size; /* the group's, else the vhost's, if set */
    uint64_t max_message_size;
    uint32_t max_senders, max_receivers;
    bool allow_waypoint_links, allow_fallback_links, allow_dynamic_link_routes,
        allow_admin_status_update;
    bool outgoing; /* a connector's ($connector group): no transport settings */
    char *vhost;   /* the vhost whose figures count this connection's denials */
};

typedef struct jn_io_vhost_group_entry {
    char *name, *users, *remote_hosts;
    uint32_t max_per_user, max_per_host;
    uint32_t max_connections; /* of the group at once; NO_POLICY_LIMIT: none */
    struct jn_io_vhost_rules rules;
} group_t;

static void rules_clear(struct jn_io_vhost_rules *r)
{
    free(r->sources);
    free(r->targets);
    free(r->source_pattern);
    free(r->target_pattern);
    free(r->vhost);
    memset(r, 0, sizeof *r);
}

struct jn_io_vhost_entry {
    struct jn_io_vhost_entry *next;
    char *hostname;
    char *aliases;
    uint32_t max_connections, max_per_user, max_per_host;
    bool allow_unknown_user;
    bool has_max_message_size;
    uint64_t max_message_size;
    group_t *groups;
    size_t group_count;
    /* vhostStats, under io->lock */
    uint64_t approved, denied, sender_denied, receiver_denied, session_denied, max_size_denied;
};

/* One count: the connections of a vhost (kind TOTAL), of one user in it
 * (USER), from one remote host (HOST) or of one user group (GROUP, key the
 * group's name, "" for none). */
enum { COUNT_TOTAL, COUNT_USER, COUNT_HOST, COUNT_GROUP };
struct jn_io_vhost_count {
    struct jn_io_vhost_count *next;
    char *vhost;
    char *key; /* "" for TOTAL */
    int kind;
    uint32_t n;
};

static void vhost_free(struct jn_io_vhost_entry *v)
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

static char *dup0(const char *s)
{
    return strdup(s ? s : "");
}

int jn_io_vhost_policy(jn_io_t *io, const char *default_vhost, bool name_patterns)
{
    char *d = dup0(default_vhost);
    if (!d)
        return JN_ENOMEM;
    pthread_mutex_lock(&io->lock);
    free(io->default_vhost);
    io->default_vhost = d;
    io->vhost_policy = true;
    io->vhost_name_patterns = name_patterns;
    pthread_mutex_unlock(&io->lock);
    return 0;
}

int jn_io_vhost_add(jn_io_t *io, const jn_io_vhost_t *vh)
{
    struct jn_io_vhost_entry *v = calloc(1, sizeof *v);
    if (!v)
        return JN_ENOMEM;
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
    for (size_t i = 0; ok && i < vh->group_count; i++) {
        const jn_io_vhost_group_t *g = &vh->groups[i];
        group_t *c = &v->groups[v->group_count++];
        c->name = dup0(g->name);
        c->users = dup0(g->users);
        c->remote_hosts = dup0(g->remote_hosts);
        c->max_per_user = g->max_per_user;
        c->max_per_host = g->max_per_host;
        c->max_connections = g->max_connections;
        c->rules =
            (struct jn_io_vhost_rules){.sources = dup0(g->sources),
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
        ok = c->name && c->users && c->remote_hosts && c->rules.sources && c->rules.targets &&
             c->rules.source_pattern && c->rules.target_pattern;
    }
    if (!ok) {
        vhost_free(v);
        return JN_ENOMEM;
    }
    pthread_mutex_lock(&io->lock);
    struct jn_io_vhost_entry **pp = &io->vhosts;
    while (*pp && strcmp((*pp)->hostname, v->hostname) != 0)
        pp = &(*pp)->next;
    struct jn_io_vhost_entry *old = *pp;
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
    pthread_mutex_unlock(&io->lock);
    vhost_free(old);
    return 0;
}

int jn_io_vhost_remove(jn_io_t *io, const char *hostname)
{
    pthread_mutex_lock(&io->lock);
    struct jn_io_vhost_entry **pp = &io->vhosts;
    while (*pp && strcmp((*pp)->hostname, hostname) != 0)
        pp = &(*pp)->next;
    struct jn_io_vhost_entry *old = *pp;
    if (old)
        *pp = old->next;
    pthread_mutex_unlock(&io->lock);
    vhost_free(old);
    return old ? 0 : JN_ENOENT;
}

void jn_io_vhost_free_all(jn_io_t *io)
{
    while (io->vhosts) {
        struct jn_io_vhost_entry *v = io->vhosts;
        io->vhosts = v->next;
        vhost_free(v);
    }
    while (io->vhost_counts) {
        struct jn_io_vhost_count *c = io->vhost_counts;
        io->vhost_counts = c->next;
        free(c->vhost);
        free(c->key);
        free(c);
    }
    free(io->default_vhost);
    io->default_vhost = NULL;
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

/* name is one of the comma-separated items of list, exactly. */
static bool in_aliases(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ')
            e++;
        if ((size_t)(e - p) == n && n && memcmp(p, name, n) == 0)
            return true;
        p = e;
    }
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

/* The best vhost whose hostname or an alias, read as a pattern ('.' or
 * '/' between tokens, '*' one token, '#' any number), matches hostname:
 * the fewest wildcards wins, then table order (policy.
 * enableVhostNamePatterns). */
static struct jn_io_vhost_entry *vhost_find_pattern(jn_io_t *io, const char *hostname)
{
    struct jn_io_vhost_entry *best = NULL;
    unsigned best_w = UINT32_MAX;
    size_t hlen = strlen(hostname);
    for (struct jn_io_vhost_entry *v = io->vhosts; v; v = v->next) {
        size_t n = strlen(v->hostname);
        unsigned w = pattern_weight(v->hostname, n);
        if (w < best_w && jn_wildcard_match(v->hostname, n, hostname, hlen, "./", '*')) {
            best = v;
            best_w = w;
        }
        for (const char *p = v->aliases; *p;) {
            while (*p == ' ' || *p == ',')
                p++;
            const char *e = p;
            while (*e && *e != ',' && *e != ' ')
                e++;
            w = pattern_weight(p, (size_t)(e - p));
            if (e > p && w < best_w &&
                jn_wildcard_match(p, (size_t)(e - p), hostname, hlen, "./", '*')) {
                best = v;
                best_w = w;
            }
            p = e;
        }
    }
    return best;
}

/* The vhost whose hostname is hostname, else the first that has it among
 * its aliases, else (name patterns on) the best pattern that matches. */
static struct jn_io_vhost_entry *vhost_find(jn_io_t *io, const char *hostname)
{
    if (!hostname)
        return NULL;
    for (struct jn_io_vhost_entry *v = io->vhosts; v; v = v->next)
        if (strcmp(v->hostname, hostname) == 0)
            return v;
    for (struct jn_io_vhost_entry *v = io->vhosts; v; v = v->next)
        if (in_aliases(v->aliases, hostname))
            return v;
    return io->vhost_name_patterns ? vhost_find_pattern(io, hostname) : NULL;
}

static struct jn_io_vhost_count *count_find(jn_io_t *io, const char *vhost, int kind,
                                            const char *key, bool make)
{
    for (struct jn_io_vhost_count *c = io->vhost_counts; c; c = c->next)
        if (c->kind == kind && strcmp(c->vhost, vhost) == 0 && strcmp(c->key, key) == 0)
            return c;
    if (!make)
        return NULL;
    struct jn_io_vhost_count *c = calloc(1, sizeof *c);
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
    c->next = io->vhost_counts;
    io->vhost_counts = c;
    return c;
}

static uint32_t count_of(jn_io_t *io, const char *vhost, int kind, const char *key)
{
    struct jn_io_vhost_count *c = count_find(io, vhost, kind, key, false);
    return c ? c->n : 0;
}

static void count_drop(jn_io_t *io, const char *vhost, int kind, const char *key)
{
    for (struct jn_io_vhost_count **pp = &io->vhost_counts; *pp; pp = &(*pp)->next) {
        struct jn_io_vhost_count *c = *pp;
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

/* The remote host of conn: its address without the port ("1.2.3.4:5" ->
 * "1.2.3.4", "[::1]:5" -> "::1"). */
static void remote_host(const jn_io_conn_t *conn, char *out, size_t cap)
{
    const char *h = conn->host;
    const char *colon = strrchr(h, ':');
    size_t len = colon ? (size_t)(colon - h) : strlen(h);
    if (len >= 2 && h[0] == '[' && h[len - 1] == ']') {
        h++;
        len -= 2;
    }
    if (len >= cap)
        len = cap - 1;
    memcpy(out, h, len);
    out[len] = '\0';
}

/* A connection's copy of group g's rules of vhost v (g NULL: the rules
 * of no group, which allow no link), with the maxMessageSize that applies
 * (the group's, else the vhost's); NULL when out of memory. */
static struct jn_io_vhost_rules *rules_new(const struct jn_io_vhost_entry *v, const group_t *g)
{
    struct jn_io_vhost_rules *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    if (g) {
        *r = g->rules;
        r->sources = strdup(g->rules.sources);
        r->targets = strdup(g->rules.targets);
        r->source_pattern = strdup(g->rules.source_pattern);
        r->target_pattern = strdup(g->rules.target_pattern);
    } else {
        r->sources = strdup("");
        r->targets = strdup("");
        r->source_pattern = strdup("");
        r->target_pattern = strdup("");
        r->max_senders = r->max_receivers = INT32_MAX;
    }
    r->vhost = strdup(v->hostname);
    if (!r->has_max_message_size && v->has_max_message_size) {
        r->has_max_message_size = true;
        r->max_message_size = v->max_message_size;
    }
    if (!r->sources || !r->targets || !r->source_pattern || !r->target_pattern || !r->vhost) {
        rules_clear(r);
        free(r);
        return NULL;
    }
    return r;
}

/* Decide under io->lock: NULL when admitted (counted), else the rule
 * that denied it (static text; "out of memory" included). */
static const char *admit_locked(jn_io_t *io, jn_io_conn_t *conn, const char *user,
                                const char *hostname, const char *rhost, const char **vhost_out)
{
    struct jn_io_vhost_entry *v = vhost_find(io, hostname);
    if (!v && io->default_vhost[0])
        v = vhost_find(io, io->default_vhost);
    if (!v)
        return "no vhost policy for the open hostname and no default vhost";
    *vhost_out = v->hostname;
    const group_t *g = NULL;
    for (size_t i = 0; i < v->group_count && !g; i++)
        if (strcmp(v->groups[i].name, "$default") != 0 && in_list(v->groups[i].users, user))
            g = &v->groups[i];
    for (size_t i = 0; i < v->group_count && !g; i++)
        if (strcmp(v->groups[i].name, "$default") == 0)
            g = &v->groups[i];
    if (!g && !v->allow_unknown_user)
        return "user is in no user group and the vhost has no $default group";
    if (g && !in_list(g->remote_hosts, rhost))
        return "remote host not allowed by the user group's remoteHosts";
    uint32_t per_user =
        g && g->max_per_user != JN_IO_NO_POLICY_LIMIT ? g->max_per_user : v->max_per_user;
    uint32_t per_host =
        g && g->max_per_host != JN_IO_NO_POLICY_LIMIT ? g->max_per_host : v->max_per_host;
    if (count_of(io, v->hostname, COUNT_TOTAL, "") >= v->max_connections)
        return "vhost maxConnections reached";
    if (count_of(io, v->hostname, COUNT_USER, user) >= per_user)
        return "maxConnectionsPerUser reached";
    if (count_of(io, v->hostname, COUNT_HOST, rhost) >= per_host)
        return "maxConnectionsPerHost reached";
    const char *gname = g ? g->name : "";
    if (g && count_of(io, v->hostname, COUNT_GROUP, gname) >= g->max_connections)
        return "user group maxConnections reached";
    struct jn_io_vhost_count *t = count_find(io, v->hostname, COUNT_TOTAL, "", true);
    struct jn_io_vhost_count *u = t ? count_find(io, v->hostname, COUNT_USER, user, true) : NULL;
    struct jn_io_vhost_count *h = u ? count_find(io, v->hostname, COUNT_HOST, rhost, true) : NULL;
    struct jn_io_vhost_count *gc = h ? count_find(io, v->hostname, COUNT_GROUP, gname, true) : NULL;
    conn->vhost_name = gc ? strdup(v->hostname) : NULL;
    conn->vhost_user = conn->vhost_name ? strdup(user) : NULL;
    conn->vhost_host = conn->vhost_user ? strdup(rhost) : NULL;
    conn->vhost_group = conn->vhost_host ? strdup(gname) : NULL;
    struct jn_io_vhost_rules *r = conn->vhost_group ? rules_new(v, g) : NULL;
    if (!r) { /* counts made at 0 are dropped with the others */
        free(conn->vhost_name);
        free(conn->vhost_user);
        free(conn->vhost_host);
        free(conn->vhost_group);
        conn->vhost_name = conn->vhost_user = conn->vhost_host = conn->vhost_group = NULL;
        return "out of memory";
    }
    conn->vhost_rules = r;
    t->n++;
    u->n++;
    h->n++;
    gc->n++;
    return NULL;
}

/* A connector's connection under its policyVhost: the vhost's
 * "$connector" group's link rules, not counted. False (logged) when the
 * vhost or its group is missing or memory is short. */
static bool admit_connector_IO(jn_io_conn_t *conn, const char *vhost)
{
    JN_ASSERT_IO(conn);
    jn_io_t *io = conn->io;
    pthread_mutex_lock(&io->lock);
    struct jn_io_vhost_entry *v = vhost_find(io, vhost);
    const group_t *g = NULL;
    for (size_t i = 0; v && i < v->group_count && !g; i++)
        if (strcmp(v->groups[i].name, "$connector") == 0)
            g = &v->groups[i];
    struct jn_io_vhost_rules *r = g ? rules_new(v, g) : NULL;
    pthread_mutex_unlock(&io->lock);
    if (!r) {
        JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_ERROR,
               JN_IO_CONN_FMT " DENY connector connection to %s, policyVhost '%s': %s", conn->id,
               conn->host, vhost,
               !v   ? "no such vhost"
               : !g ? "the vhost has no '$connector' group"
                    : "out of memory");
        return false;
    }
    r->outgoing = true;
    conn->vhost_rules = r;
    return true;
}

bool jn_io_vhost_admit_IO(jn_io_conn_t *conn, const char *user, const char *hostname)
{
    JN_ASSERT_IO(conn);
    jn_io_t *io = conn->io;
    if (!io->vhost_policy)
        return true;
    if (!conn->incoming) {
        const char *pv = conn->endpoint->cfg.policy_vhost;
        jn_conn_role_t role = conn->endpoint->cfg.role;
        if (!pv || !pv[0] || (role != JN_ROLE_NORMAL && role != JN_ROLE_ROUTE_CONTAINER))
            return true;
        return admit_connector_IO(conn, pv);
    }
    if (conn->endpoint->cfg.role != JN_ROLE_NORMAL)
        return true;
    if (!user || !user[0])
        user = "anonymous"; /* as 1.19 checks an unauthenticated client */
    char rhost[300];
    remote_host(conn, rhost, sizeof rhost);
    const char *vhost = NULL;
    pthread_mutex_lock(&io->lock);
    const char *why = admit_locked(io, conn, user, hostname, rhost, &vhost);
    if (why)
        io->policy_denied++; /* the policy entity's connectionsDenied, as 1.19 */
    struct jn_io_vhost_entry *counted = vhost ? vhost_find(io, vhost) : NULL;
    if (counted && why)
        counted->denied++;
    else if (counted)
        counted->approved++;
    char shown[256];
    snprintf(shown, sizeof shown, "%s", vhost ? vhost : (hostname ? hostname : ""));
    pthread_mutex_unlock(&io->lock);
    if (!why)
        return true;
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO,
           "DENY AMQP Open for user '%s', rhost '%s', vhost '%s': %s (connection %s)", user, rhost,
           shown, why, conn->host);
    return false;
}

void jn_io_vhost_uncount_locked(jn_io_t *io, jn_io_conn_t *conn)
{
    if (conn->vhost_name) {
        count_drop(io, conn->vhost_name, COUNT_TOTAL, "");
        count_drop(io, conn->vhost_name, COUNT_USER, conn->vhost_user);
        count_drop(io, conn->vhost_name, COUNT_HOST, conn->vhost_host);
        count_drop(io, conn->vhost_name, COUNT_GROUP, conn->vhost_group);
    }
    free(conn->vhost_name);
    free(conn->vhost_user);
    free(conn->vhost_host);
    free(conn->vhost_group);
    conn->vhost_name = conn->vhost_user = conn->vhost_host = conn->vhost_group = NULL;
    if (conn->vhost_rules) {
        rules_clear(conn->vhost_rules);
        free(conn->vhost_rules);
        conn->vhost_rules = NULL;
    }
}

/* ---- link rules ---------------------------------------------------------- */

/* item (len octets) with each "${user}" replaced by user, into buf (cap
 * octets, NUL-terminated); false when it does not fit (the item then
 * allows nothing: a cut item could allow more than the whole one). */
static bool expand_user(const char *item, size_t len, const char *user, char *buf, size_t cap,
                        size_t *out)
{
    size_t n = 0, ul = strlen(user);
    for (size_t i = 0; i < len; i++) {
        if (len - i >= 7 && memcmp(item + i, "${user}", 7) == 0) {
            if (n + ul >= cap)
                return false;
            memcpy(buf + n, user, ul);
            n += ul;
            i += 6;
        } else {
            if (n + 1 >= cap)
                return false;
            buf[n++] = item[i];
        }
    }
    buf[n] = '\0';
    *out = n;
    return true;
}

/* One item of a sources/targets list against address: "*" any, "abc*" a
 * prefix, "${user}" replaced by user, else equal. The user's name is
 * literal, as in 1.19: a '*' in it is no wildcard (the item's own last
 * octet says whether it is a prefix). */
static bool item_matches(const char *item, size_t len, const char *address, const char *user)
{
    if (len == 1 && item[0] == '*')
        return true;
    bool prefix = item[len - 1] == '*';
    char buf[1024];
    size_t n;
    if (!expand_user(item, prefix ? len - 1 : len, user, buf, sizeof buf, &n))
        return false;
    return prefix ? strncmp(address, buf, n) == 0 : strcmp(address, buf) == 0;
}

static bool list_allows(const char *list, const char *address, const char *user)
{
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ')
            e++;
        if (e > p && item_matches(p, (size_t)(e - p), address, user))
            return true;
        p = e;
    }
    return false;
}

/* Some token of user (between '.' or '/') is a pattern wildcard ("*" or
 * "#"): put into a pattern it would match more than the name itself. */
static bool user_has_wildcard_token(const char *user)
{
    const char *t = user;
    for (const char *q = user;; q++) {
        if (*q == '.' || *q == '/' || *q == '\0') {
            if (q - t == 1 && (*t == '*' || *t == '#'))
                return true;
            if (*q == '\0')
                return false;
            t = q + 1;
        }
    }
}

static bool patterns_allow(const char *list, const char *address, const char *user)
{
    bool wild_user = user_has_wildcard_token(user);
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ')
            e++;
        size_t len = (size_t)(e - p);
        char buf[1024];
        size_t n;
        /* ${user} as in the lists; a user whose name holds a wildcard
         * token gets nothing from a pattern naming ${user} (1.19 matched
         * the name literally; a pattern cannot) */
        bool names_user = len >= 7 && memmem(p, len, "${user}", 7) != NULL;
        if (len > 0 && !(names_user && wild_user) &&
            expand_user(p, len, user, buf, sizeof buf, &n) &&
            jn_wildcard_match(buf, n, address, strlen(address), "./", '*'))
            return true;
        p = e;
    }
    return false;
}

/* Some capability of t (a symbol, or a symbol in an array) starts with
 * prefix (exact: is prefix). 1.19 looks at the first capability only, so a
 * client that lists the capability second passes its policy; every one is
 * looked at here. */
static bool terminus_claims(pn_terminus_t *t, const char *prefix, bool exact)
{
    pn_data_t *d = pn_terminus_capabilities(t);
    if (!d)
        return false;
    size_t n = strlen(prefix);
    bool found = false;
    pn_data_rewind(d);
    while (!found && pn_data_next(d)) {
        bool array = pn_data_type(d) == PN_ARRAY;
        if (array && !pn_data_enter(d))
            continue;
        while (!found && (!array || pn_data_next(d))) {
            if (pn_data_type(d) == PN_SYMBOL) {
                pn_bytes_t b = pn_data_get_symbol(d);
                found = exact ? b.size == n && memcmp(b.start, prefix, n) == 0
                              : b.size >= n && memcmp(b.start, prefix, n) == 0;
            }
            if (!array)
                break;
        }
        if (array)
            pn_data_exit(d);
    }
    pn_data_rewind(d);
    return found;
}

/* The rule of r that denies link (what the client attaches: incoming =
 * its sender), or NULL; *limit set when the reason is a maxSenders /
 * maxReceivers limit (amqp:resource-limit-exceeded, as 1.19). */
static const char *link_denial(const jn_io_conn_t *conn, const struct jn_io_vhost_rules *r,
                               pn_link_t *pl, bool incoming, const char *address, bool dynamic,
                               const char *user, bool *limit)
{
    *limit = false;
    if (incoming ? conn->policy_senders >= r->max_senders
                 : conn->policy_receivers >= r->max_receivers) {
        *limit = true;
        return incoming ? "maxSenders limit reached" : "maxReceivers limit reached";
    }
    pn_terminus_t *t = incoming ? pn_link_remote_target(pl) : pn_link_remote_source(pl);
    if (incoming && (!address || !address[0]))
        return r->allow_anonymous_sender ? NULL : "anonymous sender not allowed";
    if (!incoming && dynamic)
        return r->allow_dynamic_source ? NULL : "dynamic source not allowed";
    if (!r->allow_waypoint_links && terminus_claims(t, "qd.waypoint", false))
        return "waypoint capability not permitted (allowWaypointLinks)";
    if (!r->allow_fallback_links && terminus_claims(t, "qd.fallback", true))
        return "fallback capability not permitted (allowFallbackLinks)";
    if (incoming)
        return list_allows(r->targets, address, user) ||
                       patterns_allow(r->target_pattern, address, user)
                   ? NULL
                   : "target not allowed by the group's targets/targetPattern";
    return address && address[0] &&
                   (list_allows(r->sources, address, user) ||
                    patterns_allow(r->source_pattern, address, user))
               ? NULL
               : "source not allowed by the group's sources/sourcePattern";
}

const char *jn_io_vhost_link_check_IO(jn_io_link_t *link, const char *address, bool dynamic)
{
    JN_ASSERT_IO(link->conn);
    jn_io_conn_t *conn = link->conn;
    const struct jn_io_vhost_rules *r = conn->vhost_rules;
    if (!r)
        return NULL;
    bool incoming = link->dir == JN_LINK_INCOMING;
    const char *user = conn->vhost_user ? conn->vhost_user : "anonymous";
    bool limit;
    const char *why = link_denial(conn, r, link->pn, incoming, address, dynamic, user, &limit);
    if (!why) {
        link->policy_counted = true;
        if (incoming)
            link->conn->policy_senders++;
        else
            link->conn->policy_receivers++;
        if (incoming && r->has_max_message_size)
            link->max_message_size = r->max_message_size;
        return NULL;
    }
    jn_io_t *io = conn->io;
    pthread_mutex_lock(&io->lock);
    io->policy_links_denied++;
    struct jn_io_vhost_entry *v = vhost_find(io, r->vhost);
    if (v && incoming)
        v->sender_denied++; /* the client's sender, as 1.19 counts it */
    else if (v)
        v->receiver_denied++;
    pthread_mutex_unlock(&io->lock);
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO,
           JN_IO_LINK_FMT
           " DENY AMQP Attach %s for user '%s', rhost '%s', vhost '%s', address '%s': %s",
           conn->id, link->id, incoming ? "sender" : "receiver", user,
           conn->vhost_host ? conn->vhost_host : conn->host, r->vhost, address ? address : "", why);
    return limit ? "amqp:resource-limit-exceeded" : "amqp:unauthorized-access";
}

/* The address it names, read as the core routes on it (scheme and host
 * removed), copied to buf: allowed as a target by r for user? False when it
 * does not fit buf or holds a NUL octet (no rule could name it). */
static bool relay_target_allowed(const struct jn_io_vhost_rules *r, jn_iter_t *it, const char *user,
                                 char *buf, size_t cap)
{
    jn_iter_set_view(it, JN_VIEW_ADDRESS);
    size_t len = jn_iter_copy_string(it, buf, cap);
    if (len >= cap || memchr(buf, '\0', len))
        return false;
    return list_allows(r->targets, buf, user) || patterns_allow(r->target_pattern, buf, user);
}

/* A message of link refused by r: counted in the vhost's senderDenied,
 * the first on the link logged (a flood writes one line). why says which
 * rule; addr is the address refused. */
static void transfer_denied_IO(jn_io_link_t *link, const struct jn_io_vhost_rules *r,
                               const char *user, const char *addr, const char *why)
{
    JN_ASSERT_IO(link->conn);
    jn_io_conn_t *conn = link->conn;
    jn_io_t *io = conn->io;
    pthread_mutex_lock(&io->lock);
    struct jn_io_vhost_entry *v = vhost_find(io, r->vhost);
    if (v)
        v->sender_denied++; /* the client's sender, as at attach */
    pthread_mutex_unlock(&io->lock);
    if (!link->policy_transfer_logged) { /* a flood logs one line */
        link->policy_transfer_logged = true;
        JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO,
               JN_IO_LINK_FMT " DENY AMQP Transfer for user '%s', rhost '%s', vhost '%s', "
                              "address '%s': %s (further denials on this link are not "
                              "logged)",
               conn->id, link->id, user, conn->vhost_host ? conn->vhost_host : conn->host, r->vhost,
               addr, why);
    }
}

bool jn_io_vhost_relay_allows_IO(jn_io_link_t *link, const jn_message_t *m)
{
    JN_ASSERT_IO(link->conn);
    jn_io_conn_t *conn = link->conn;
    const struct jn_io_vhost_rules *r = conn->vhost_rules;
    if (!r) /* dropped as the transport closed: nothing more goes through */
        return false;
    const char *user = conn->vhost_user ? conn->vhost_user : "anonymous";
    char addr[1024];
    jn_iter_t it;
    int rc = jn_message_to(m, &it);
    bool ok = rc == JN_ENOENT || (rc == 0 && relay_target_allowed(r, &it, user, addr, sizeof addr));
    if (rc != 0)
        snprintf(addr, sizeof addr, "%s", rc == JN_ENOENT ? "" : "(unreadable)");
    /* the core routes on the to-override instead when the connection keeps
     * inbound router annotations: both must pass */
    const jn_ra_t *ra = conn->strip_inbound ? NULL : jn_message_annotations(m);
    if (ok && ra && ra->has_to) {
        it = ra->to;
        ok = relay_target_allowed(r, &it, user, addr, sizeof addr);
    }
    if (!ok)
        transfer_denied_IO(link, r, user, addr,
                           "target not allowed by the group's targets/targetPattern");
    return ok;
}

/* The octets of it (a JN_VIEW_ADDRESS view) name a management node: the
 * address is `$management` or ends in `/$management`. */
static bool view_names_management(jn_iter_t *it)
{
    static const char node[] = "$management";
    const size_t n = sizeof node - 1;
    char buf[1024];
    size_t len = jn_iter_copy_string(it, buf, sizeof buf);
    if (len >= sizeof buf || len < n || memcmp(buf + len - n, node, n) != 0)
        return false;
    return len == n || buf[len - n - 1] == '/';
}

bool jn_io_vhost_names_management(const char *address)
{
    if (!address)
        return false;
    jn_iter_t it;
    jn_iter_init_string(&it, address, JN_VIEW_ADDRESS);
    return view_names_management(&it);
}

/* A request of an anonymous sender's message m goes to a management node:
 * its properties.to or, when honoured, its to-override names one. */
static bool relay_to_management(const jn_io_conn_t *conn, const jn_message_t *m)
{
    jn_iter_t it;
    if (jn_message_to(m, &it) == 0) {
        jn_iter_set_view(&it, JN_VIEW_ADDRESS);
        if (view_names_management(&it))
            return true;
    }
    const jn_ra_t *ra = conn->strip_inbound ? NULL : jn_message_annotations(m);
    if (!ra || !ra->has_to)
        return false;
    it = ra->to;
    jn_iter_set_view(&it, JN_VIEW_ADDRESS);
    return view_names_management(&it);
}

/* reply (NUL-terminated, a JN_VIEW_ADDRESS copy) is the address of one of
 * conn's dynamic receivers: a reply address the router made for it. */
static bool own_dynamic_address(const jn_io_conn_t *conn, const char *reply)
{
    for (const jn_io_link_t *l = conn->links; l; l = l->next) {
        if (l->dir != JN_LINK_OUTGOING || !l->pn || l->detached ||
            !pn_terminus_is_dynamic(pn_link_remote_source(l->pn)))
            continue;
        const char *a = pn_terminus_get_address(pn_link_source(l->pn));
        if (!a)
            continue;
        char buf[1024];
        jn_iter_t it;
        jn_iter_init_string(&it, a, JN_VIEW_ADDRESS);
        size_t len = jn_iter_copy_string(&it, buf, sizeof buf);
        if (len < sizeof buf && strcmp(buf, reply) == 0)
            return true;
    }
    return false;
}

bool jn_io_vhost_reply_allows_IO(jn_io_link_t *link, const jn_message_t *m)
{
    JN_ASSERT_IO(link->conn);
    jn_io_conn_t *conn = link->conn;
    const struct jn_io_vhost_rules *r = conn->vhost_rules;
    if (!r) /* dropped as the transport closed: nothing more goes through */
        return false;
    if (!(link->rx_checks & JN_IO_RX_CHECK_REPLY) && !relay_to_management(conn, m))
        return true;
    jn_iter_t it;
    int rc = jn_message_reply_to(m, &it);
    if (rc == JN_ENOENT)
        return true; /* no answer is sent */
    const char *user = conn->vhost_user ? conn->vhost_user : "anonymous";
    char addr[1024];
    bool ok = false;
    if (rc == 0) {
        ok = relay_target_allowed(r, &it, user, addr, sizeof addr);
        size_t len = jn_iter_copy_string(&it, addr, sizeof addr); /* as it was judged */
        if (!ok && len < sizeof addr && !memchr(addr, '\0', len))
            ok = own_dynamic_address(conn, addr);
    } else {
        snprintf(addr, sizeof addr, "(unreadable)");
    }
    if (!ok)
        transfer_denied_IO(link, r, user, addr,
                           "reply-to of a management request not allowed by the group's "
                           "targets/targetPattern, nor a dynamic address of this connection");
    return ok;
}

void jn_io_vhost_link_gone_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    if (!link->policy_counted)
        return;
    link->policy_counted = false;
    if (link->dir == JN_LINK_INCOMING)
        link->conn->policy_senders--;
    else
        link->conn->policy_receivers--;
}

/* Under the policy's figures: one more denial of kind (0 session, 1
 * message size) in conn's vhost. */
static void count_denial(jn_io_conn_t *conn, int kind)
{
    jn_io_t *io = conn->io;
    pthread_mutex_lock(&io->lock);
    struct jn_io_vhost_entry *v =
        conn->vhost_rules ? vhost_find(io, conn->vhost_rules->vhost) : NULL;
    if (v && kind == 0)
        v->session_denied++;
    else if (v)
        v->max_size_denied++;
    if (kind == 0)
        io->policy_sessions_denied++;
    pthread_mutex_unlock(&io->lock);
}

void jn_io_vhost_session_denied_IO(jn_io_conn_t *conn, pn_transport_t *t)
{
    JN_ASSERT_IO(conn);
    const struct jn_io_vhost_rules *r = conn->vhost_rules;
    pn_condition_t *c = pn_transport_condition(t);
    const char *desc = pn_condition_get_description(c);
    if (!r || !r->max_sessions || r->outgoing || !pn_condition_is_set(c) ||
        strcmp(pn_condition_get_name(c), "amqp:connection:framing-error") != 0 || !desc ||
        !strstr(desc, "above negotiated channel_max"))
        return;
    count_denial(conn, 0);
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO,
           JN_IO_CONN_FMT " DENY AMQP Begin Session for user '%s', rhost '%s', vhost '%s': "
                          "maxSessions %" PRIu32 " reached (the peer began a session past the "
                          "channel-max it was given)",
           conn->id, conn->vhost_user ? conn->vhost_user : "anonymous",
           conn->vhost_host ? conn->vhost_host : conn->host, r->vhost, r->max_sessions);
}

void jn_io_vhost_log_close_IO(jn_io_conn_t *conn, uint64_t n_connections)
{
    if (!conn->vhost_rules || conn->vhost_rules->outgoing)
        return;
    unsigned sessions = 0;
    for (pn_session_t *s = pn_session_head(conn->pn_io, 0); s; s = pn_session_next(s, 0))
        sessions++;
    /* the denials are the vhost's so far, as 1.19 reports them (its
     * connections share their vhost's counts) */
    uint64_t sd = 0, snd = 0, rcv = 0;
    jn_io_t *io = conn->io;
    pthread_mutex_lock(&io->lock);
    struct jn_io_vhost_entry *v = vhost_find(io, conn->vhost_rules->vhost);
    if (v) {
        sd = v->session_denied;
        snd = v->sender_denied;
        rcv = v->receiver_denied;
    }
    pthread_mutex_unlock(&io->lock);
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_DEBUG,
           JN_IO_CONN_FMT " Connection '%s' closed with resources n_sessions=%u, n_senders=%" PRIu32
                          ", n_receivers=%" PRIu32 ", sessions_denied=%" PRIu64
                          ", senders_denied=%" PRIu64 ", receivers_denied=%" PRIu64
                          ". nConnections= %" PRIu64 ".",
           conn->id, conn->host, sessions, conn->policy_senders, conn->policy_receivers, sd, snd,
           rcv, n_connections);
}

bool jn_io_vhost_oversize_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    jn_io_conn_t *conn = link->conn;
    const struct jn_io_vhost_rules *r = conn->vhost_rules;
    if (!r)
        return false;
    count_denial(conn, 1);
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO,
           JN_IO_LINK_FMT " DENY AMQP Transfer for user '%s', rhost '%s', vhost '%s': message "
                          "exceeds maxMessageSize %" PRIu64 ": link detached, connection closed",
           conn->id, link->id, conn->vhost_user ? conn->vhost_user : "anonymous",
           conn->vhost_host ? conn->vhost_host : conn->host, r->vhost, link->max_message_size);
    return true;
}

void jn_io_vhost_rights_IO(const jn_io_conn_t *conn, bool *deny_dynamic_link_routes,
                           bool *deny_admin_status_update)
{
    JN_ASSERT_IO(conn);
    const struct jn_io_vhost_rules *r = conn->vhost_rules;
    *deny_dynamic_link_routes = r && !r->allow_dynamic_link_routes;
    *deny_admin_status_update = r && !r->allow_admin_status_update;
}

void jn_io_vhost_transport_IO(jn_io_conn_t *conn, pn_transport_t *t)
{
    JN_ASSERT_IO(conn);
    const struct jn_io_vhost_rules *r = conn->vhost_rules;
    if (!r || r->outgoing) /* a connector's group: 1.19 uses no transport setting */
        return;
    if (r->max_frame_size)
        pn_transport_set_max_frame(t, r->max_frame_size < 512 ? 512 : r->max_frame_size);
    if (r->max_sessions)
        pn_transport_set_channel_max(
            t, (uint16_t)(r->max_sessions > 65536 ? 65535 : r->max_sessions - 1));
}

size_t jn_io_vhost_session_window(const jn_io_conn_t *conn)
{
    const struct jn_io_vhost_rules *r = conn->vhost_rules;
    return r && !r->outgoing ? r->max_session_window : 0;
}

bool jn_io_vhost_user_id_proxy(const jn_io_conn_t *conn)
{
    return conn->vhost_rules && conn->vhost_rules->allow_user_id_proxy;
}

/* ---- vhostStats ------------------------------------------------------------ */

/* The open connections of one vhost per user or host as an AMQP map. */
static int encode_counts(jn_io_t *io, const char *vhost, int kind, uint8_t **out, size_t *len)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_map_begin(&e);
    for (struct jn_io_vhost_count *c = io->vhost_counts; c; c = c->next) {
        if (c->kind != kind || c->n == 0 || strcmp(c->vhost, vhost) != 0)
            continue;
        jn_enc_cstring(&e, c->key);
        jn_enc_long(&e, c->n);
    }
    jn_enc_map_end(&e);
    int rc = jn_encoder_error(&e);
    *out = rc ? NULL : malloc(e.size ? e.size : 1);
    if (*out)
        memcpy(*out, e.data, e.size);
    *len = *out ? e.size : 0;
    jn_encoder_free(&e);
    return *out ? 0 : JN_ENOMEM;
}

int jn_io_vhost_stats(jn_io_t *io, jn_io_vhost_stats_t **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    pthread_mutex_lock(&io->lock);
    size_t n = 0;
    for (struct jn_io_vhost_entry *v = io->vhosts; v; v = v->next)
        n++;
    jn_io_vhost_stats_t *st = calloc(n ? n : 1, sizeof *st);
    int rc = st ? 0 : JN_ENOMEM;
    size_t i = 0;
    for (struct jn_io_vhost_entry *v = io->vhosts; v && rc == 0; v = v->next, i++) {
        st[i] = (jn_io_vhost_stats_t){.hostname = strdup(v->hostname),
                                      .approved = v->approved,
                                      .denied = v->denied,
                                      .current = count_of(io, v->hostname, COUNT_TOTAL, ""),
                                      .sender_denied = v->sender_denied,
                                      .receiver_denied = v->receiver_denied,
                                      .session_denied = v->session_denied,
                                      .max_size_denied = v->max_size_denied};
        if (!st[i].hostname ||
            encode_counts(io, v->hostname, COUNT_USER, &st[i].per_user, &st[i].per_user_len) ||
            encode_counts(io, v->hostname, COUNT_HOST, &st[i].per_host, &st[i].per_host_len))
            rc = JN_ENOMEM;
    }
    pthread_mutex_unlock(&io->lock);
    if (rc) {
        jn_io_vhost_stats_free(st, n);
        return rc;
    }
    *out = st;
    *count = n;
    return 0;
}

void jn_io_vhost_stats_free(jn_io_vhost_stats_t *st, size_t count)
{
    for (size_t i = 0; st && i < count; i++) {
        free(st[i].hostname);
        free(st[i].per_user);
        free(st[i].per_host);
    }
    free(st);
}
