/*
 * view.c — the management agent's read-only view of the core
 * (junction/core_view.h): walks of the connection list, the links of each
 * connection and the address table, filling plain structs.
 *
 * Core thread only. Every walk steps over the whole list to return the
 * total (one pointer step per item) and fills a struct only for the items
 * of the requested page, so a QUERY page over many connections costs
 * little more than the rows it returns.
 *
 * Connections and links are listed in the order they opened and attached
 * (as 1.19 lists them; the core's lists keep the newest first), so a
 * client that opens connections one after another finds its own at the
 * index it expects: each walk first steps to the oldest end.
 */
#include <junction/core_view.h>
#include <junction/time.h>

#include "core_private.h"

/* The oldest connection (the end of the newest-first list), or NULL. */
static const jn_core_conn_t *oldest_conn(const jn_core_t *core)
{
    const jn_core_conn_t *c = core->ct.conns;
    while (c && c->ct.next)
        c = c->ct.next;
    return c;
}

/* The first link attached on c that is still there, or NULL. */
static const jn_core_link_t *oldest_link(const jn_core_conn_t *c)
{
    const jn_core_link_t *l = c->ct.links;
    while (l && l->ct.conn_next)
        l = l->ct.conn_next;
    return l;
}

static void conn_fill_CT(const jn_core_conn_t *c, jn_view_conn_t *out)
{
    JN_ASSERT_CT(c->core);
    out->id = c->conn_id;
    out->container = c->container_id ? c->container_id : "";
    out->host = c->host ? c->host : "";
    out->properties = c->properties;
    out->properties_len = c->properties_len;
    out->incoming = c->incoming;
    out->inter_router = c->inter_router;
    out->edge = c->edge;
    out->route_container = c->route_container;
    out->active = !(c->core->edge_mode && c->edge && c != c->core->ct.uplink);
    out->link_capacity = c->link_capacity ? c->link_capacity : JN_CORE_DEFAULT_CAPACITY;
    uint32_t n = 0;
    for (const jn_core_link_t *l = c->ct.links; l; l = l->ct.conn_next)
        n += l->ct.state == JN_LINK_ST_ATTACHED;
    out->links = n;
    out->opened_us = c->opened_us;
    out->last_dlv_s =
        c->ct.last_dlv_ns ? (int64_t)((jn_time_mono_ns() - c->ct.last_dlv_ns) / 1000000000u) : -1;
    out->encrypted = c->encrypted;
    out->ssl_proto = c->ssl_proto;
    out->ssl_cipher = c->ssl_cipher;
    out->ssl_ssf = c->ssl_ssf;
    out->authenticated = c->authenticated;
    out->user = c->user;
    out->sasl_mechanism = c->sasl_mechanism;
    out->admin_deleted = c->ct.admin_deleted;
    out->tenant = c->tenant;
}

static void link_fill_CT(const jn_core_link_t *l, jn_view_link_t *out)
{
    JN_ASSERT_CT(l->conn->core);
    const jn_core_conn_t *c = l->conn;
    out->id = l->ct.id;
    out->conn_id = c->conn_id;
    out->name = l->name ? l->name : "";
    out->dir = l->dir;
    out->type = l->type;
    out->owning_addr = l->ct.addr ? l->ct.addr->key : NULL;
    out->owning_addr_len = l->ct.addr ? l->ct.addr->key_len : 0;
    out->owning_routed = false;
    if (!l->ct.addr && l->ct.routed && l->address) {
        /* link-routed: bound to no address; its terminus address, as 1.19 */
        out->owning_addr = (const uint8_t *)l->address;
        out->owning_addr_len = strlen(l->address);
        out->owning_routed = true;
    }
    out->deliveries = l->ct.deliveries;
    out->presettled = l->presettled;
    out->accepted = l->ct.outcomes[0];
    out->rejected = l->ct.outcomes[1];
    out->released = l->ct.outcomes[2];
    out->modified = l->ct.outcomes[3];
    out->dropped = 0;
    out->peer = l->ct.routed ? l->ct.routed->ct.id : 0;
    out->priority = l->type == JN_LINK_CONTROL                      ? 9
                    : l->type == JN_LINK_DATA && l->priority >= 0 ? l->priority
                                                                    : 4;
    out->delayed1 = l->ct.delayed1;
    out->delayed10 = l->ct.delayed10;
    out->stuck = l->ct.stuck;
    out->settle_rate = l->dir == JN_LINK_OUTGOING ? l->ct.settle_rate : 0;
    int64_t since = l->dir == JN_LINK_OUTGOING ? l->ct.blocked_since_ms : 0;
    int64_t now = since ? (int64_t)jn_time_mono_ms() : 0;
    out->zero_credit_seconds = since && now > since ? (uint64_t)(now - since) / 1000 : 0;
    if (l->dir == JN_LINK_INCOMING) {
        out->capacity = l->capacity;
        out->undelivered = l->ct.held;
        out->unsettled = l->ct.unsettled_in;
        out->credit_available = l->ct.outstanding;
    } else {
        out->capacity = c->link_capacity ? c->link_capacity : JN_CORE_DEFAULT_CAPACITY;
        out->undelivered = l->ct.undelivered.count;
        out->unsettled = l->ct.unsettled;
        out->dropped = l->ct.mc_dropped;
        /* the peer's credit (the I/O layer may let the core use less of
         * it, io_own_link.c) */
        uint64_t peer = atomic_load_explicit(&l->peer_limit, memory_order_relaxed);
        if (peer < l->ct.credit_limit)
            peer = l->ct.credit_limit;
        out->credit_available = peer > l->ct.handed ? peer - l->ct.handed : 0;
    }
}

size_t jn_core_view_conns_CT(jn_core_t *core, size_t offset, size_t max,
                             bool (*fn)(void *ctx, const jn_view_conn_t *conn), void *ctx)
{
    JN_ASSERT_CT(core);
    size_t total = 0;
    bool more = true;
    for (const jn_core_conn_t *c = oldest_conn(core); c; c = c->ct.prev, total++) {
        if (!more || total < offset || total - offset >= max)
            continue;
        jn_view_conn_t v;
        conn_fill_CT(c, &v);
        more = fn(ctx, &v);
    }
    return total;
}

size_t jn_core_view_links_CT(jn_core_t *core, size_t offset, size_t max,
                             bool (*fn)(void *ctx, const jn_view_link_t *link), void *ctx)
{
    JN_ASSERT_CT(core);
    size_t total = 0;
    bool more = true;
    for (const jn_core_conn_t *c = oldest_conn(core); c; c = c->ct.prev) {
        for (const jn_core_link_t *l = oldest_link(c); l; l = l->ct.conn_prev) {
            if (l->ct.state != JN_LINK_ST_ATTACHED)
                continue;
            if (more && total >= offset && total - offset < max) {
                jn_view_link_t v;
                link_fill_CT(l, &v);
                more = fn(ctx, &v);
            }
            total++;
        }
    }
    return total;
}

size_t jn_core_view_addrs_CT(jn_core_t *core, size_t offset, size_t max,
                             bool (*fn)(void *ctx, const jn_view_addr_t *addr), void *ctx)
{
    JN_ASSERT_CT(core);
    size_t in_table = jn_hash_count(core->ct.addrs);
    size_t total = in_table + jn_lr_view_keys_CT(core, 0, 0, NULL, NULL);
    if (max == 0 || offset >= total)
        return total;
    jn_hash_iter_t it;
    jn_hash_iter_init(core->ct.addrs, &it);
    void *value;
    size_t shown = 0;
    for (size_t i = 0; offset < in_table && jn_hash_iter_next(&it, NULL, NULL, &value); i++) {
        if (i < offset)
            continue;
        if (shown >= max)
            return total;
        shown++;
        const jn_addr_t *a = value;
        const char *hosts[JN_MESH_MAX_ROUTERS];
        uint32_t n_hosts = 0;
        for (unsigned r = 1; a->n_remote > 0 && r < JN_MESH_MAX_ROUTERS; r++)
            if (jn_mesh_bits_has(&a->remote, r) && core->ct.routers[r])
                hosts[n_hosts++] = core->ct.routers[r]->id;
        char c = a->key_len ? (char)a->key[0] : 0;
        jn_view_addr_t v = {.key = a->key,
                            .key_len = a->key_len,
                            .distribution = a->distribution,
                            .consumers = a->n_consumers,
                            .producers = a->n_producers,
                            .in_process = a->inproc != JN_INPROC_NONE,
                            .remote = a->n_remote,
                            .remote_hosts = hosts,
                            .n_remote_hosts = n_hosts,
                            .ingress = a->ingress,
                            .egress = a->egress,
                            .transit = a->transit,
                            .to_container = a->to_container,
                            .from_container = a->from_container,
                            .priority = a->priority,
                            .redirected = a->redirected,
                            .link_route = c == JN_ADDR_CLASS_LINK_IN || c == JN_ADDR_CLASS_LINK_OUT ||
                                          c == JN_ADDR_CLASS_LINK_IN_PATTERN ||
                                          c == JN_ADDR_CLASS_LINK_OUT_PATTERN};
        if (!fn(ctx, &v))
            return total;
    }
    if (shown < max) /* then this router's own link routes' keys */
        jn_lr_view_keys_CT(core, offset > in_table ? offset - in_table : 0, max - shown, fn, ctx);
    return total;
}

static jn_core_conn_t *conn_find_CT(jn_core_t *core, uint64_t id)
{
    JN_ASSERT_CT(core);
    for (jn_core_conn_t *c = core->ct.conns; c; c = c->ct.next)
        if (c->conn_id == id)
            return c;
    return NULL;
}

int jn_core_view_conn_CT(jn_core_t *core, uint64_t id, jn_view_conn_t *out)
{
    JN_ASSERT_CT(core);
    const jn_core_conn_t *c = conn_find_CT(core, id);
    if (!c)
        return JN_ENOENT;
    conn_fill_CT(c, out);
    return 0;
}

int jn_core_view_link_CT(jn_core_t *core, uint64_t id, jn_view_link_t *out)
{
    JN_ASSERT_CT(core);
    for (const jn_core_conn_t *c = core->ct.conns; c; c = c->ct.next) {
        for (const jn_core_link_t *l = c->ct.links; l; l = l->ct.conn_next) {
            if (l->ct.id == id && l->ct.state == JN_LINK_ST_ATTACHED) {
                link_fill_CT(l, out);
                return 0;
            }
        }
    }
    return JN_ENOENT;
}

void jn_core_view_routers_CT(void *ctx, bool (*fn)(void *arg, const jn_mesh_router_info_t *info),
                             void *arg)
{
    jn_core_t *core = ctx;
    JN_ASSERT_CT(core);
    if (core->mesh)
        jn_mesh_foreach_router_CT(core->mesh, fn, arg);
}
