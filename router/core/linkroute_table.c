/*
 * linkroute_table.c — the link-route table (core->lr, linkroute_private.h):
 * what link routes exist and where their containers are, apart from what
 * happens to an attach they take (linkroute.c).
 *
 * - Entries: linkRoute entities added and removed by configuration and
 *   management (one address_config.h match entry per prefix or pattern and
 *   direction, a chain of the link routes that share it), their status,
 *   and the connection-scoped ones (router.connection.linkRoute) a
 *   connection creates for itself and that go with it.
 * - The mesh: each link route's key (C/D/E/F + text), advertised while a
 *   container of it is connected here (jn_lr_advertise_CT; on an edge,
 *   the proxies on the interior instead), and the connection toward the
 *   nearest router that advertised a key matching an address
 *   (jn_lr_remote_conn_CT).
 * - What edge_lookup.c and the management view ask: whether an address is
 *   link-routed and has a container somewhere, the keys served here, the
 *   keys as addresses.
 *
 * Threads: everything here runs on the core thread.
 */
#include "address_config.h"

#include <junction/core_view.h>
#include <junction/iterator.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linkroute_private.h"

/* ---- entries ------------------------------------------------------------------ */

void jn_lr_route_free(jn_link_route_t *r)
{
    if (!r)
        return;
    free(r->name);
    free(r->key);
    free(r->container_id);
    free(r->connection);
    free(r->add_prefix);
    free(r->del_prefix);
    free(r);
}

/* ---- across the mesh -------------------------------------------------------------- */

/* The link route's mesh key (docs/protocol.md, "Link routes, auto-links and phases on the wire"): a
 * prefix P is the pattern "P.#" (separators at P's end dropped), and a
 * pattern with no '*' whose only '#' is its last token is prefix-style: 'C' (in) or 'D' (out) and
 * the text without the trailing "#" and separator; any other pattern keeps its wildcards after 'E'
 * (in) or 'F' (out). Heap, or NULL. */
static char *route_key(const char *text, bool pattern, jn_link_dir_t dir)
{
    bool in = dir == JN_LINK_INCOMING;
    size_t n = jn_addr_config_text_len(text); /* "a." is "a", as it matches */
    bool prefix_style = !pattern;
    if (pattern && !strchr(text, '*')) {
        const char *hash = strchr(text, '#');
        prefix_style =
            hash && hash == text + n - 1 && (n == 1 || text[n - 2] == '.' || text[n - 2] == '/');
        if (prefix_style)
            n = n >= 2 ? n - 2 : 0;
    }
    char *key = malloc(n + 2);
    if (!key)
        return NULL;
    key[0] = prefix_style ? (in ? JN_ADDR_CLASS_LINK_IN : JN_ADDR_CLASS_LINK_OUT)
                          : (in ? JN_ADDR_CLASS_LINK_IN_PATTERN : JN_ADDR_CLASS_LINK_OUT_PATTERN);
    memcpy(key + 1, text, n);
    key[n + 1] = '\0';
    return key;
}

/* Whether a chain before chain i of direction d has the same mesh key. */
static bool key_seen_before(const jn_lr_table_t *t, int d, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (strcmp(t->routes[d][j]->key, t->routes[d][i]->key) == 0)
            return true;
    return false;
}

/* Tell the mesh which link routes have their container here: a key is
 * advertised (hint link-balanced) while a connection to it is open. */
void jn_lr_advertise_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    if (!core->mesh) {
        if (core->edge_mode)
            jn_edge_proxies_changed_CT(core); /* their proxies on the interior */
        return;
    }
    jn_lr_table_t *t = core->lr;
    for (int d = 0; d < 2; d++) {
        for (size_t i = 0; i < t->match[d].count; i++) {
            /* One key, wanted while any container of any route with that
             * key is here: a chain holds the routes with the same text,
             * and two chains can still make one key (prefix "a" and
             * pattern "a.#"). The key is done at its first chain; its
             * advertised flag lives on that chain's head. */
            jn_link_route_t *head = t->routes[d][i];
            if (key_seen_before(t, d, i))
                continue;
            bool want = false, have = false;
            for (size_t j = i; j < t->match[d].count; j++) {
                if (strcmp(t->routes[d][j]->key, head->key) != 0)
                    continue;
                for (jn_link_route_t *r = t->routes[d][j]; r; r = r->same) {
                    want = want || jn_lr_route_conn_CT(core, r, NULL) != NULL;
                    have = have || r->advertised;
                    r->advertised = false;
                }
            }
            head->advertised = want;
            if (want != have)
                jn_mesh_local_mobile_CT(core->mesh, (const uint8_t *)head->key, strlen(head->key),
                                        want, JN_MESH_HINT_LINK_BALANCED);
        }
    }
}

/* The connection toward the nearest router with a destination for addr,
 * not `not`; NULL: none. */
static jn_core_conn_t *nearest_conn_CT(jn_core_t *core, const jn_addr_t *addr,
                                       const jn_core_conn_t * not )
{
    jn_core_conn_t *best = NULL;
    uint32_t best_cost = UINT32_MAX;
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++) {
        const jn_router_node_t *node = core->ct.routers[i];
        if (!node || !jn_mesh_bits_has(&addr->remote, (unsigned)i) || node->cost >= best_cost)
            continue;
        jn_core_conn_t *c = jn_router_conn_CT(core, node);
        if (c && c != not ) {
            best = c;
            best_cost = node->cost;
        }
    }
    return best;
}

/* The pattern link-route keys (class cls) other routers advertised: the
 * most specific one matching address (address_config.h's matcher), or
 * NULL. Scans the address table: only while some exist
 * (ct.remote_lr_patterns), once per attach. */
static const jn_addr_t *remote_pattern_CT(jn_core_t *core, const char *address, char cls)
{
    jn_addr_config_t cfg;
    jn_addr_config_init(&cfg);
    const jn_addr_t **keys = NULL;
    size_t n = 0;
    jn_hash_iter_t it;
    void *value;
    jn_hash_iter_init(core->ct.addrs, &it);
    while (jn_hash_iter_next(&it, NULL, NULL, &value)) {
        const jn_addr_t *a = value;
        if (a->key_len < 2 || a->key[0] != (uint8_t)cls || a->n_remote == 0)
            continue;
        const jn_addr_t **more = realloc(keys, (n + 1) * sizeof *keys);
        char *text = strndup((const char *)a->key + 1, a->key_len - 1);
        if (!more || !text || jn_addr_config_add(&cfg, text, true, JN_DIST_BALANCED) != 0) {
            free(text);
            if (more)
                keys = more;
            break;
        }
        free(text);
        keys = more;
        keys[n++] = a;
    }
    int i = cfg.count == n && n ? jn_addr_config_match(&cfg, address, strlen(address)) : -1;
    const jn_addr_t *found = i >= 0 ? keys[i] : NULL;
    jn_addr_config_fini(&cfg);
    free(keys);
    return found;
}

/* The connection toward the nearest router that advertised a link-route
 * key matching address for links of direction dir (prefix-style keys: the
 * address itself, then each shorter prefix ending before a '.' or '/';
 * then pattern keys), not `not`; NULL: none. */
jn_core_conn_t *jn_lr_remote_conn_CT(jn_core_t *core, const char *address, jn_link_dir_t dir,
                                     const jn_core_conn_t * not )
{
    JN_ASSERT_CT(core);
    if (!core->mesh)
        return NULL;
    size_t n = strlen(address);
    uint8_t *key = malloc(n + 1);
    if (!key)
        return NULL;
    bool in = dir == JN_LINK_INCOMING;
    key[0] = in ? JN_ADDR_CLASS_LINK_IN : JN_ADDR_CLASS_LINK_OUT;
    memcpy(key + 1, address, n);
    jn_core_conn_t *best = NULL;
    for (size_t len = n; len > 0 && !best; len--) {
        if (len < n && address[len] != '.' && address[len] != '/')
            continue;
        const jn_addr_t *addr = jn_hash_lookup(core->ct.addrs, key, len + 1);
        if (addr && addr->n_remote > 0)
            best = nearest_conn_CT(core, addr, not );
    }
    free(key);
    if (!best && core->ct.remote_lr_patterns > 0) {
        const jn_addr_t *addr = remote_pattern_CT(
            core, address, in ? JN_ADDR_CLASS_LINK_IN_PATTERN : JN_ADDR_CLASS_LINK_OUT_PATTERN);
        if (addr)
            best = nearest_conn_CT(core, addr, not );
    }
    return best;
}

/* ---- management: link routes ------------------------------------------------- */

/* The link route named name, with its direction's table d and match entry
 * i (its chain), or NULL. */
static const jn_link_route_t *route_find(jn_lr_table_t *t, const char *name, int *d, size_t *i)
{
    for (int k = 0; k < 2; k++)
        for (size_t j = 0; j < t->match[k].count; j++)
            for (jn_link_route_t *r = t->routes[k][j]; r; r = r->same)
                if (strcmp(r->name, name) == 0) {
                    *d = k;
                    *i = j;
                    return r;
                }
    return NULL;
}

/* The match entry of direction d holding text (a prefix, or a pattern as
 * jn_addr_config_add stores it), or -1. */
static int entry_of(const jn_addr_config_t *m, const char *text, bool pattern)
{
    jn_addr_config_t one;
    jn_addr_config_init(&one);
    if (jn_addr_config_add(&one, text, pattern, JN_DIST_BALANCED) != 0)
        return -1; /* out of memory: then a new entry is tried, and fails */
    int found = -1;
    for (size_t i = 0; i < m->count && found < 0; i++)
        if (m->entries[i].pattern == pattern &&
            strcmp(m->entries[i].text, one.entries[0].text) == 0)
            found = (int)i;
    jn_addr_config_fini(&one);
    return found;
}

int jn_core_link_route_add_CT(jn_core_t *core, const jn_link_route_config_t *cfg)
{
    JN_ASSERT_CT(core);
    jn_lr_table_t *t = core->lr;
    const char *text = cfg->prefix ? cfg->prefix : cfg->pattern;
    if (!cfg->name || !text || jn_addr_config_text_len(text) == 0)
        return JN_EINVAL;
    int d = cfg->dir == JN_LINK_INCOMING ? 0 : 1;
    size_t i;
    int dd;
    if (route_find(t, cfg->name, &dd, &i))
        return JN_EEXIST;
    if (t->match[d].count == t->cap[d]) {
        size_t cap = t->cap[d] ? t->cap[d] * 2 : 8;
        jn_link_route_t **r = realloc(t->routes[d], cap * sizeof *r);
        if (!r)
            return JN_ENOMEM;
        t->routes[d] = r;
        t->cap[d] = cap;
    }
    bool failed = false;
    jn_link_route_t *r = calloc(1, sizeof *r);
    if (!r)
        return JN_ENOMEM;
    r->name = jn_strdup_opt(cfg->name, &failed);
    r->dir = cfg->dir;
    r->container_id = jn_strdup_opt(cfg->container_id, &failed);
    r->connection = jn_strdup_opt(cfg->connection, &failed);
    r->add_prefix = jn_strdup_opt(cfg->add_external_prefix, &failed);
    r->del_prefix = jn_strdup_opt(cfg->del_external_prefix, &failed);
    r->key = route_key(text, cfg->pattern != NULL, cfg->dir);
    r->conn_id = cfg->conn_id;
    r->identity = ++t->next_identity;
    if (failed || !r->key) {
        jn_lr_route_free(r);
        return JN_ENOMEM;
    }
    int same = entry_of(&t->match[d], text, cfg->pattern != NULL);
    if (same >= 0) {
        /* the same prefix or pattern as another: both stay (1.19) */
        jn_link_route_t **tail = &t->routes[d][same];
        while (*tail)
            tail = &(*tail)->same;
        *tail = r;
    } else {
        int rc = jn_addr_config_add(&t->match[d], text, cfg->pattern != NULL, JN_DIST_BALANCED);
        if (rc != 0) {
            jn_lr_route_free(r);
            return rc;
        }
        t->routes[d][t->match[d].count - 1] = r; /* the new entry is the last */
    }
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO, "Link route %s: %s %s '%s' to %s %s", r->name,
           d == 0 ? "in" : "out", cfg->prefix ? "prefix" : "pattern", text,
           r->conn_id      ? "its own connection"
           : r->connection ? "connection"
                           : "container",
           r->conn_id        ? ""
           : r->connection   ? r->connection
           : r->container_id ? r->container_id
                             : "(none)");
    jn_lr_advertise_CT(core);
    return 0;
}

int jn_core_link_route_remove_CT(jn_core_t *core, const char *name)
{
    JN_ASSERT_CT(core);
    jn_lr_table_t *t = core->lr;
    int d;
    size_t i;
    if (!name || !route_find(t, name, &d, &i))
        return JN_ENOENT;
    jn_link_route_t **p = &t->routes[d][i];
    while (strcmp((*p)->name, name) != 0)
        p = &(*p)->same;
    jn_link_route_t *r = *p;
    *p = r->same;
    if (t->routes[d][i]) {
        /* others with the same prefix or pattern stay: the key is theirs
         * now, advertised while one of their containers is here */
        t->routes[d][i]->advertised = t->routes[d][i]->advertised || r->advertised;
        jn_lr_route_free(r);
        jn_lr_advertise_CT(core);
        return 0;
    }
    /* the last route of its chain: another chain may make the same key
     * (prefix "a", pattern "a.#"); the key's advertised flag moves to it,
     * and advertise_CT withdraws the key only if none of them wants it */
    size_t other = SIZE_MAX;
    for (size_t j = 0; j < t->match[d].count && other == SIZE_MAX; j++)
        if (j != i && strcmp(t->routes[d][j]->key, r->key) == 0)
            other = j;
    if (other != SIZE_MAX)
        t->routes[d][other]->advertised = t->routes[d][other]->advertised || r->advertised;
    else if (r->advertised && core->mesh)
        jn_mesh_local_mobile_CT(core->mesh, (const uint8_t *)r->key, strlen(r->key), false,
                                JN_MESH_HINT_LINK_BALANCED);
    jn_lr_route_free(r);
    jn_addr_config_t *m = &t->match[d];
    free(m->entries[i].text);
    memmove(&m->entries[i], &m->entries[i + 1], (m->count - i - 1) * sizeof m->entries[0]);
    memmove(&t->routes[d][i], &t->routes[d][i + 1], (m->count - i - 1) * sizeof t->routes[d][0]);
    m->count--;
    if (other != SIZE_MAX)
        jn_lr_advertise_CT(core);
    return 0;
}

const char *jn_core_link_route_status_CT(jn_core_t *core, const char *name)
{
    JN_ASSERT_CT(core);
    int d;
    size_t i;
    const jn_link_route_t *r = name ? route_find(core->lr, name, &d, &i) : NULL;
    if (!r)
        return NULL;
    return jn_lr_route_conn_CT(core, r, NULL) ? "active" : "inactive";
}

/* ---- connection-scoped link routes ------------------------------------------ */

/* The core's name of connection conn_id's link route `name`: unique among
 * all link routes, and no configured name looks like it. Heap or NULL. */
static char *scoped_name(uint64_t conn_id, const char *name)
{
    size_t n = strlen(name) + 32;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "$conn/%" PRIu64 "/%s", conn_id, name);
    return s;
}

static jn_link_route_t *scoped_find(jn_lr_table_t *t, uint64_t conn_id, const char *name,
                                    uint64_t identity)
{
    for (int d = 0; d < 2; d++)
        for (size_t i = 0; i < t->match[d].count; i++)
            for (jn_link_route_t *r = t->routes[d][i]; r; r = r->same) {
                if (r->conn_id != conn_id)
                    continue;
                if (identity
                        ? r->identity == identity
                        : name && strcmp(strchr(strchr(r->name + 1, '/') + 1, '/') + 1, name) == 0)
                    return r;
            }
    return NULL;
}

int jn_core_conn_link_route_add_CT(jn_core_t *core, uint64_t conn_id, const char *name,
                                   const char *pattern, jn_link_dir_t dir, uint64_t *identity)
{
    JN_ASSERT_CT(core);
    jn_core_conn_t *c = core->ct.conns;
    while (c && c->conn_id != conn_id)
        c = c->ct.next;
    if (!conn_id || !c || c->ct.closed || c->inter_router || c->internal)
        return JN_ENOENT;
    if (!name || !pattern || !*pattern)
        return JN_EINVAL;
    if (scoped_find(core->lr, conn_id, name, 0))
        return JN_EEXIST;
    char *full = scoped_name(conn_id, name);
    if (!full)
        return JN_ENOMEM;
    jn_link_route_config_t cfg = {.name = full, .pattern = pattern, .dir = dir, .conn_id = conn_id};
    int rc = jn_core_link_route_add_CT(core, &cfg);
    if (rc == 0 && identity) {
        int d;
        size_t i;
        *identity = route_find(core->lr, full, &d, &i)->identity;
    }
    free(full);
    return rc;
}

int jn_core_conn_link_route_remove_CT(jn_core_t *core, uint64_t conn_id, const char *name,
                                      uint64_t identity)
{
    JN_ASSERT_CT(core);
    jn_link_route_t *r = scoped_find(core->lr, conn_id, name, identity);
    return r ? jn_core_link_route_remove_CT(core, r->name) : JN_ENOENT;
}

int jn_core_conn_link_route_at_CT(jn_core_t *core, uint64_t conn_id, size_t index,
                                  jn_conn_link_route_t *out)
{
    JN_ASSERT_CT(core);
    jn_lr_table_t *t = core->lr;
    jn_core_conn_t *c = core->ct.conns;
    while (c && c->conn_id != conn_id)
        c = c->ct.next;
    for (int d = 0; d < 2; d++)
        for (size_t i = 0; i < t->match[d].count; i++)
            for (jn_link_route_t *r = t->routes[d][i]; r; r = r->same) {
                if (!conn_id || r->conn_id != conn_id || index-- > 0)
                    continue;
                out->name = strchr(strchr(r->name + 1, '/') + 1, '/') + 1;
                out->identity = r->identity;
                out->pattern = t->match[d].entries[i].text;
                out->dir = r->dir;
                out->container_id = c ? c->container_id : NULL;
                return 0;
            }
    return JN_ENOENT;
}

/* ---- edge routers (edge_lookup.c) ----------------------------------------------- */

/* The configured link route of dir matching address, or NULL. */
static const jn_link_route_t *route_match_CT(jn_core_t *core, const char *address,
                                             jn_link_dir_t dir)
{
    JN_ASSERT_CT(core);
    jn_lr_table_t *t = core->lr;
    int d = dir == JN_LINK_INCOMING ? 0 : 1;
    if (!address || t->match[d].count == 0)
        return NULL;
    int i = jn_addr_config_match(&t->match[d], address, strlen(address));
    return i >= 0 ? t->routes[d][i] : NULL;
}

bool jn_lr_lookup_CT(jn_core_t *core, const char *address, jn_link_dir_t dir,
                     const jn_core_conn_t *except, bool *has_dest)
{
    JN_ASSERT_CT(core);
    const jn_link_route_t *r = route_match_CT(core, address, dir);
    jn_core_conn_t *to = r ? jn_lr_route_conn_CT(core, r, except) : NULL;
    if (!to)
        to = jn_lr_remote_conn_CT(core, address, dir, except);
    *has_dest = to != NULL;
    return r != NULL || to != NULL;
}

bool jn_lr_local_route_CT(jn_core_t *core, const char *address, jn_link_dir_t dir)
{
    JN_ASSERT_CT(core);
    const jn_link_route_t *r = route_match_CT(core, address, dir);
    return r && jn_lr_route_conn_CT(core, r, NULL) != NULL;
}

void jn_lr_each_served_CT(jn_core_t *core, void (*fn)(void *arg, const char *key), void *arg)
{
    JN_ASSERT_CT(core);
    jn_lr_table_t *t = core->lr;
    for (int d = 0; d < 2; d++)
        for (size_t i = 0; i < t->match[d].count; i++) {
            const jn_link_route_t *r = t->routes[d][i];
            if (r->key && jn_lr_route_conn_CT(core, r, NULL))
                fn(arg, r->key);
        }
}

size_t jn_lr_view_keys_CT(jn_core_t *core, size_t offset, size_t max,
                          bool (*fn)(void *ctx, const jn_view_addr_t *addr), void *ctx)
{
    JN_ASSERT_CT(core);
    jn_lr_table_t *t = core->lr;
    size_t n = 0;
    for (int d = 0; d < 2; d++)
        for (size_t i = 0; i < t->match[d].count; i++) {
            const char *key = t->routes[d][i]->key;
            if (!key || key_seen_before(t, d, i) ||
                jn_hash_lookup(core->ct.addrs, (const uint8_t *)key, strlen(key)))
                continue;
            if (n++ < offset || n - offset > max)
                continue;
            uint32_t containers = 0;
            for (size_t j = i; j < t->match[d].count; j++)
                if (t->routes[d][j]->key && strcmp(t->routes[d][j]->key, key) == 0)
                    for (const jn_link_route_t *r = t->routes[d][j]; r; r = r->same)
                        containers += jn_lr_route_conn_CT(core, r, NULL) != NULL;
            jn_view_addr_t v = {.key = (const uint8_t *)key,
                                .key_len = strlen(key),
                                .distribution = JN_DIST_BALANCED,
                                .link_route = true,
                                .containers = containers,
                                .priority = -1};
            if (!fn(ctx, &v))
                max = 0; /* count the rest only */
        }
    return n;
}
