/*
 * mesh_side.c — the core's side of the mesh (docs/protocol.md, "The mesh"):
 * inter-router connections and their links, the remote routers the mesh
 * engine (junction/mesh.h) knows and how to reach each, remote
 * destinations of addresses, the control messages that arrive and those the
 * engine sends, and the messages the router composes itself (management
 * replies). Core thread only.
 *
 * Reaching a router. The engine tells, for each reachable router, either the
 * inter-router connection slot it is a neighbour on, or the neighbour that
 * is its next hop. The connection is looked up from the slot each time it
 * is needed (jn_router_conn_CT), so a connection that closes is never used
 * again even before the engine has recomputed.
 *
 * Control messages ("Control messages") arrive on incoming control links and are
 * dispatched by the hash key of their properties.to: Lqdhello, Lqdrouter
 * and Lqdrouter.ma go to the engine; Tqdrouter (RA) and Tqdrouter.ma
 * (differential MAU) go to the engine and are relayed to every other router,
 * one copy per next-hop connection, skipping connections to routers already
 * in the trace — and, for Tqdrouter.ma, routers for which the message's
 * origin is not a valid origin (1.19 skips that check and so delivers
 * duplicates in cyclic meshes, "Mobile addresses"); R<id> is relayed toward that
 * router. A message waits until it is complete before it is served.
 *
 * Composed messages (control messages, management replies) come from an
 * internal connection and link that no I/O layer knows: work for them is
 * dropped (the connection is marked closed) and they are pre-settled.
 */
#include "delivery.h"

#include <junction/iterator.h>
#include <junction/time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- remote routers ------------------------------------------------------ */

jn_core_conn_t *jn_router_conn_CT(jn_core_t *core, const jn_router_node_t *node)
{
    JN_ASSERT_CT(core);
    if (!node || !node->reachable)
        return NULL;
    int slot = node->link;
    if (slot < 0) {
        const jn_router_node_t *hop = jn_router_node_at_CT(core, node->next_hop);
        if (!hop)
            return NULL;
        slot = hop->link;
    }
    if (slot < 0 || slot >= JN_MESH_MAX_LINKS)
        return NULL;
    jn_core_conn_t *c = core->ct.slots[slot];
    return c && !c->ct.closed ? c : NULL;
}

jn_core_link_t *jn_router_data_link_CT(jn_core_conn_t *conn, unsigned priority)
{
    JN_ASSERT_CT(conn->core);
    if (priority > 9)
        priority = 9;
    /* the link of that priority, else the next lower one (as 1.19), else any */
    for (int p = (int)priority; p >= 0; p--)
        if (conn->ct.data_out[p])
            return conn->ct.data_out[p];
    for (unsigned p = priority + 1; p < 10; p++)
        if (conn->ct.data_out[p])
            return conn->ct.data_out[p];
    return NULL;
}

/* The router whose node id ("0/<id>") is in it (a raw view of str octets). */
/* ---- the engine's callbacks ---------------------------------------------- */

/* Send a composed message pre-settled on the given outgoing links. Takes
 * the message reference. */
static void send_on_links_CT(jn_core_t *core, jn_message_t *msg, jn_core_link_t **links,
                             unsigned n)
{
    JN_ASSERT_CT(core);
    jn_delivery_t *dlv = jn_delivery_internal_CT(core, msg);
    if (!dlv) {
        jn_message_unref(msg);
        return;
    }
    jn_forward_to_links_CT(dlv, links, n, true);
}

static void send_on_conn_CT(jn_core_t *core, jn_core_conn_t *conn, jn_message_t *msg)
{
    JN_ASSERT_CT(core);
    jn_core_link_t *l = conn && !conn->ct.closed ? conn->ct.control_out : NULL;
    send_on_links_CT(core, msg, &l, l ? 1 : 0);
}

static void op_send_on_link_CT(void *ctx, int link, jn_message_t *msg)
{
    jn_core_t *core = ctx;
    JN_ASSERT_CT(core);
    send_on_conn_CT(core, link >= 0 && link < JN_MESH_MAX_LINKS ? core->ct.slots[link] : NULL,
                    msg);
}

static void op_send_to_router_CT(void *ctx, int router, jn_message_t *msg)
{
    jn_core_t *core = ctx;
    JN_ASSERT_CT(core);
    send_on_conn_CT(core, jn_router_conn_CT(core, jn_router_node_at_CT(core, router)), msg);
}

/* Control links toward every reachable router, one per connection, minus
 * the excluded connections; origin filtering when origin >= 0. */
static unsigned control_fanout_CT(jn_core_t *core, const jn_route_ctx_t *rc, int origin,
                                  jn_core_link_t **out)
{
    JN_ASSERT_CT(core);
    unsigned n = 0;
    jn_mesh_bits_t used = {{0, 0}};
    for (unsigned i = 1; i < JN_MESH_MAX_ROUTERS; i++) {
        jn_router_node_t *node = core->ct.routers[i];
        if (!node || (origin >= 0 && !jn_mesh_bits_has(&node->valid_origins, (unsigned)origin)))
            continue;
        jn_core_conn_t *c = jn_router_usable_conn_CT(core, node, rc);
        if (!c || !c->ct.control_out || jn_mesh_bits_has(&used, (unsigned)c->ct.slot))
            continue;
        jn_mesh_bits_set(&used, (unsigned)c->ct.slot);
        out[n++] = c->ct.control_out;
    }
    return n;
}

static void op_send_to_all_CT(void *ctx, jn_message_t *msg)
{
    jn_core_t *core = ctx;
    JN_ASSERT_CT(core);
    jn_route_ctx_t rc;
    memset(&rc, 0, sizeof rc);
    jn_core_link_t *links[JN_MESH_MAX_LINKS];
    unsigned n = control_fanout_CT(core, &rc, -1, links);
    send_on_links_CT(core, msg, links, n);
}

static void op_router_added_CT(void *ctx, int router, const char *id)
{
    jn_core_t *core = ctx;
    JN_ASSERT_CT(core);
    if (router <= 0 || router >= JN_MESH_MAX_ROUTERS || core->ct.routers[router])
        return;
    jn_router_node_t *n = calloc(1, sizeof *n);
    size_t len = strlen(id);
    char *node_id = malloc(len + 3);
    char *key = malloc(len + 2);
    char *dup = strdup(id);
    jn_addr_t *addr = NULL;
    if (n && node_id && key && dup) {
        snprintf(node_id, len + 3, "0/%s", id);
        key[0] = JN_ADDR_CLASS_ROUTER;
        memcpy(key + 1, id, len);
        jn_addr_get_key_CT(core, (const uint8_t *)key, len + 1, JN_DIST_CLOSEST, &addr);
    }
    free(key);
    if (!addr) {
        free(n);
        free(node_id);
        free(dup);
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_ERROR, "Out of memory adding router %s", id);
        return;
    }
    n->index = router;
    n->id = dup;
    n->node_id = node_id;
    n->node_id_len = len + 2;
    n->link = n->next_hop = -1;
    n->addr = addr;
    addr->permanent = true;
    core->ct.routers[router] = n;
    jn_addr_add_remote_CT(core, addr, router);
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO, "Router added: %s (index %d)", id, router);
}

static void op_router_removed_CT(void *ctx, int router)
{
    jn_core_t *core = ctx;
    JN_ASSERT_CT(core);
    jn_router_node_t *n = jn_router_node_at_CT(core, router);
    if (!n)
        return;
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO, "Router removed: %s", n->id);
    if (n->reachable) {
        n->reachable = false;
        jn_addr_remote_reach_CT(core, router, false);
    }
    core->ct.routers[router] = NULL;
    n->addr->permanent = false;
    jn_addr_remove_remote_CT(core, n->addr, router); /* may free it */
    free(n->id);
    free(n->node_id);
    free(n);
}

static void op_router_route_CT(void *ctx, int router, int link, int next_hop, uint32_t cost,
                               const jn_mesh_bits_t *valid_origins,
                               const jn_mesh_bits_t *mc_origins)
{
    jn_core_t *core = ctx;
    JN_ASSERT_CT(core);
    jn_router_node_t *n = jn_router_node_at_CT(core, router);
    if (!n)
        return;
    bool was = n->reachable;
    n->link = link;
    n->next_hop = next_hop;
    n->cost = cost;
    n->valid_origins = *valid_origins;
    jn_mesh_bits_set(&n->valid_origins, 0);
    n->mc_origins = *mc_origins;
    jn_mesh_bits_set(&n->mc_origins, 0);
    n->reachable = true;
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_DEBUG,
           "Route to %s: %s %d, cost %" PRIu32 ", valid origins %016" PRIx64 "%016" PRIx64
           ", multicast %016" PRIx64 "%016" PRIx64,
           n->id, link >= 0 ? "link" : "next hop", link >= 0 ? link : next_hop, cost,
           n->valid_origins.w[1], n->valid_origins.w[0], n->mc_origins.w[1], n->mc_origins.w[0]);
    if (!was)
        jn_addr_remote_reach_CT(core, router, true); /* waiting senders get credit */
}

static void op_router_unreachable_CT(void *ctx, int router)
{
    jn_core_t *core = ctx;
    JN_ASSERT_CT(core);
    jn_router_node_t *n = jn_router_node_at_CT(core, router);
    if (n && n->reachable) {
        n->reachable = false;
        jn_addr_remote_reach_CT(core, router, false); /* its senders lose their credit */
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO, "Router unreachable: %s", n->id);
    }
}

static jn_distribution_t distribution_of_hint(int hint, jn_distribution_t dflt)
{
    switch (hint) {
    case JN_MESH_HINT_FLOOD:
    case JN_MESH_HINT_MULTICAST:
        return JN_DIST_MULTICAST;
    case JN_MESH_HINT_CLOSEST:
        return JN_DIST_CLOSEST;
    case JN_MESH_HINT_BALANCED:
    case JN_MESH_HINT_LINK_BALANCED:
        return JN_DIST_BALANCED;
    default:
        return dflt == JN_DIST_UNAVAILABLE ? JN_DIST_BALANCED : dflt;
    }
}

static void op_mobile_added_CT(void *ctx, int router, const uint8_t *key, size_t len, int hint)
{
    jn_core_t *core = ctx;
    JN_ASSERT_CT(core);
    if (!jn_router_node_at_CT(core, router))
        return;
    jn_addr_t *addr = NULL;
    jn_distribution_t d = distribution_of_hint(hint, core->default_distribution);
    if (jn_addr_get_key_CT(core, key, len, d, &addr) != 0 || !addr)
        return; /* out of memory (logged), or configured unavailable */
    jn_addr_add_remote_CT(core, addr, router);
}

static void op_mobile_removed_CT(void *ctx, int router, const uint8_t *key, size_t len)
{
    jn_core_t *core = ctx;
    JN_ASSERT_CT(core);
    jn_addr_t *addr = jn_hash_lookup(core->ct.addrs, key, len);
    if (addr)
        jn_addr_remove_remote_CT(core, addr, router);
}

/* A neighbour's HELLOs aged out on inter-router connection slot `link`
 * while the connection is still up. When it carries nothing (most likely
 * half-open: a path that stopped forwarding without closing), its
 * unsettled deliveries would wait, with their senders' credit, until the
 * idle timeout (16 s by default); closed now, they come back to their
 * senders modified and new ones take another path. The transport is
 * closed at once: a close frame would get no answer. The connector, if
 * this side has one, reconnects as after any loss. The I/O thread closes
 * it only if nothing at all arrived on it within helloMaxAgeSeconds
 * (unheard_ms): one whose HELLOs are merely late behind bulk transfers in
 * the sockets' buffers is heard all the time, and stays up with what is
 * routed over it, as in 1.19 (the neighbour is out of the link state
 * until its next HELLO arrives); it is watched, and cut once it falls
 * silent for that long (io_watch.c, the silence watch). */
static void op_link_silent_CT(void *ctx, int link, const char *id)
{
    jn_core_t *core = ctx;
    JN_ASSERT_CT(core);
    jn_core_conn_t *c = link >= 0 && link < JN_MESH_MAX_LINKS ? core->ct.slots[link] : NULL;
    if (!c || c->ct.closed)
        return;
    jn_work_t *w = jn_work_new_CT(core, JN_WORK_CONN_CLOSE);
    if (!w)
        return;
    w->abort = true;
    w->unheard_ms = core->hello_max_age_ms; /* the I/O thread logs what it did */
    w->condition = strdup("amqp:resource-limit-exceeded");
    size_t n = strlen(id) + 64;
    if ((w->description = malloc(n)) != NULL)
        snprintf(w->description, n, "no HELLO from router '%s' within helloMaxAgeSeconds", id);
    jn_work_push_CT(c, w);
}

/* ---- set-up and teardown ------------------------------------------------- */

int jn_router_init(jn_core_t *core, const jn_core_config_t *cfg)
{
    core->hello_max_age_ms = (cfg->hello_max_age ? cfg->hello_max_age : 3u) * 1000u;
    jn_core_conn_t *c = calloc(1, sizeof *c);
    jn_core_link_t *l = calloc(1, sizeof *l);
    if (!c || !l) {
        free(c);
        free(l);
        return JN_ENOMEM;
    }
    c->core = core;
    c->internal = true;
    c->ct.closed = true; /* work for it is dropped: nobody takes it */
    c->ct.slot = -1;
    c->container_id = strdup("");
    c->host = strdup("");
    atomic_init(&c->refcount, 2); /* the core's, and the link's */
    jn_mpsc_init(&c->work);
    l->conn = c;
    l->dir = JN_LINK_INCOMING;
    l->presettled = true;
    l->capacity = 1;
    l->name = strdup("internal");
    atomic_init(&l->refcount, 1);
    l->ct.state = JN_LINK_ST_ATTACHED;
    l->ct.anonymous = true;
    core->internal_conn = c;
    core->internal_link = l;
    size_t idlen = strlen(core->router_id);
    core->node_id = malloc(idlen + 3);
    if (!c->container_id || !c->host || !l->name || !core->node_id)
        return JN_ENOMEM;
    snprintf(core->node_id, idlen + 3, "0/%s", core->router_id);
    core->node_id_len = idlen + 2;
    for (int i = 0; i < JN_MESH_MAX_LINKS; i++)
        core->ct.slots[i] = NULL;
    if (!cfg->interior)
        return 0;
    jn_mesh_config_t mc = {
        .router_id = core->router_id,
        .hello_interval = cfg->hello_interval,
        .hello_max_age = cfg->hello_max_age,
        .ra_interval = cfg->ra_interval,
        .ra_interval_flux = cfg->ra_interval_flux,
        .remote_ls_max_age = cfg->remote_ls_max_age,
        .ct_role = core,
    };
    jn_mesh_ops_t ops = {
        .ctx = core,
        .send_on_link = op_send_on_link_CT,
        .send_to_router = op_send_to_router_CT,
        .send_to_all = op_send_to_all_CT,
        .router_added = op_router_added_CT,
        .router_removed = op_router_removed_CT,
        .router_route = op_router_route_CT,
        .router_unreachable = op_router_unreachable_CT,
        .mobile_added = op_mobile_added_CT,
        .mobile_removed = op_mobile_removed_CT,
        .link_silent = op_link_silent_CT,
    };
    core->mesh = jn_mesh_create(&mc, &ops);
    return core->mesh ? 0 : JN_ENOMEM;
}

int jn_router_start_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    if (!core->mgmt_fn)
        return 0;
    /* $management (mobile class, never advertised) and _local/$management
     * (also _topo/0/<this router>/$management) are served in-process */
    static const char *const keys[] = {"M0$management", "L$management"};
    for (size_t i = 0; i < 2; i++) {
        jn_addr_t *addr = NULL;
        int rc = jn_addr_get_key_CT(core, (const uint8_t *)keys[i], strlen(keys[i]),
                                    JN_DIST_CLOSEST, &addr);
        if (rc != 0 || !addr)
            return JN_ENOMEM;
        addr->permanent = true;
        addr->inproc = JN_INPROC_MANAGEMENT;
    }
    return 0;
}

/* Free the router nodes (teardown, on the core thread's role). */
void jn_router_fini_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++) {
        jn_router_node_t *n = core->ct.routers[i];
        if (!n)
            continue;
        core->ct.routers[i] = NULL;
        n->addr->permanent = false;
        free(n->id);
        free(n->node_id);
        free(n);
    }
}

void jn_router_free(jn_core_t *core)
{
    jn_mesh_free(core->mesh);
    core->mesh = NULL;
    free(core->node_id);
    core->node_id = NULL;
    if (core->internal_link) {
        free(core->internal_link->name);
        free(core->internal_link);
    }
    if (core->internal_conn) {
        free(core->internal_conn->container_id);
        free(core->internal_conn->host);
        free(core->internal_conn);
    }
    core->internal_link = NULL;
    core->internal_conn = NULL;
}

static int64_t now_ms(void)
{
    return (int64_t)jn_time_mono_ms();
}

/* The mesh acts on a topology change at once (jn_mesh_flush_CT), but at
 * most once per JN_MESH_FLUSH_MS: in a large mesh a change brings a burst
 * of link-state updates, and each recomputation runs a shortest-path search
 * per router (valid origins); the burst then costs one computation per
 * interval instead of one per message. One deferred is done by
 * jn_router_tick_CT: after a later batch, or when the core thread wakes for
 * it (it may sleep till the next tick while a loop runs the core inline). */
#define JN_MESH_FLUSH_MS 20

static void mesh_flush_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    int64_t now = now_ms();
    if (now - core->ct.last_flush_ms < JN_MESH_FLUSH_MS) {
        if (!core->ct.flush_pending)
            jn_core_resleep_CT(core);
        core->ct.flush_pending = true;
        return;
    }
    core->ct.flush_pending = false;
    /* only a flush that computed starts the interval: the many that find
     * nothing to do (one per HELLO) must not delay a real change */
    if (jn_mesh_flush_CT(core->mesh))
        core->ct.last_flush_ms = now;
}

void jn_router_tick_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    if (!core->mesh) {
        if (core->edge_mode)
            jn_edge_uplink_tick_CT(core); /* an edge router's heartbeat */
        return;
    }
    int64_t now = now_ms();
    if (core->ct.flush_pending && now - core->ct.last_flush_ms >= JN_MESH_FLUSH_MS)
        mesh_flush_CT(core);
    if (now < core->ct.next_tick_ms)
        return;
    /* A tick far later than its time: this router did not run meanwhile
     * (stopped or starved), and its edges' heartbeats of that time may
     * wait unread; they get the time back (the mesh engine does the same
     * for HELLOs, and the I/O loops for the idle-time-out: io_loop.c,
     * "Our own stalls"). */
    int64_t late = core->ct.next_tick_ms ? now - core->ct.next_tick_ms : 0;
    if (late > JN_CORE_STALL_MS) {
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_WARNING,
               "The router did not run for %lld ms (process stopped or starved): peers' "
               "silence is judged from now",
               (long long)late + 1000);
        if (core->ct.edge_conns > 0 || core->ct.hb_links > 0)
            jn_edge_stalled_CT(core, late);
    }
    /* one tick a second, as 1.19's engine; a late tick is not repeated */
    core->ct.next_tick_ms = now + 1000;
    jn_mesh_tick_CT(core->mesh, now);
    if (core->ct.edge_conns > 0 || core->ct.hb_links > 0)
        jn_edge_tick_CT(core);
}

int jn_router_sleep_ms_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    if (!core->mesh)
        return core->edge_mode ? jn_edge_sleep_ms_CT(core) : -1;
    int64_t now = now_ms();
    int64_t left = core->ct.next_tick_ms - now;
    if (core->ct.flush_pending) {
        int64_t flush = core->ct.last_flush_ms + JN_MESH_FLUSH_MS - now;
        if (flush < left)
            left = flush;
    }
    return left < 0 ? 0 : left > 1000 ? 1000 : (int)left;
}

/* ---- connections and links ----------------------------------------------- */

/* A second inter-router connection whose peer has the id of a router
 * already connected: two routers with one id (or the same router twice).
 * The newcomer's connection is closed with a log line; the mesh goes on
 * with the first. */
static void refuse_duplicate_CT(jn_core_conn_t *conn, const jn_core_conn_t *first)
{
    JN_ASSERT_CT(conn->core);
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_CRITICAL,
           "[C%" PRIu64 "] Duplicate router id: the inter-router peer at %s has id '%s', as the "
           "router already connected on [C%" PRIu64 "]; connection refused",
           conn->conn_id, conn->host, conn->container_id, first->conn_id);
    jn_work_t *w = jn_work_new_CT(conn->core, JN_WORK_CONN_CLOSE);
    if (!w)
        return;
    w->condition = strdup("amqp:not-allowed");
    w->description = strdup("duplicate router id: a router with this id is already connected");
    jn_work_push_CT(conn, w);
}

void jn_router_conn_opened_CT(jn_core_conn_t *conn)
{
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    conn->ct.slot = -1;
    if (!conn->inter_router)
        return;
    if (!core->mesh) {
        conn->inter_router = false; /* not interior: main refuses this config */
        return;
    }
    for (int i = 0; i < JN_MESH_MAX_LINKS; i++) {
        jn_core_conn_t *other = core->ct.slots[i];
        if (other && strcmp(other->container_id, conn->container_id) == 0) {
            refuse_duplicate_CT(conn, other);
            return;
        }
    }
    for (int i = 0; i < JN_MESH_MAX_LINKS; i++) {
        if (!core->ct.slots[i]) {
            core->ct.slots[i] = conn;
            conn->ct.slot = i;
            return;
        }
    }
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_ERROR,
           "[C%" PRIu64 "] Exceeded maximum inter-router connection count (%d)", conn->conn_id,
           JN_MESH_MAX_LINKS);
}

void jn_router_conn_closed_CT(jn_core_conn_t *conn)
{
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    int slot = conn->ct.slot;
    if (slot < 0)
        return;
    core->ct.slots[slot] = NULL;
    conn->ct.slot = -1;
    if (core->mesh) {
        jn_mesh_link_lost_CT(core->mesh, slot);
        mesh_flush_CT(core);
    }
}

const char *jn_router_link_attach_CT(jn_core_link_t *link, const char **condition)
{
    jn_core_conn_t *conn = link->conn;
    JN_ASSERT_CT(conn->core);
    if (link->type == JN_LINK_ENDPOINT) {
        if (conn->ct.slot >= 0 && !conn->ct.control_in && !conn->ct.control_out) {
            *condition = "qd:connection-role";
            return "Link attach forbidden on inter-router connection";
        }
        return NULL;
    }
    if (conn->ct.slot < 0) {
        *condition = "qd:forbidden";
        return "Connectivity to the node is forbidden";
    }
    bool out = link->dir == JN_LINK_OUTGOING;
    if (link->type == JN_LINK_CONTROL) {
        if (out && !conn->ct.control_out)
            conn->ct.control_out = link;
        if (!out)
            conn->ct.control_in = true;
    } else if (out && link->priority >= 0 && link->priority < 10 &&
               !conn->ct.data_out[link->priority]) {
        conn->ct.data_out[link->priority] = link;
    }
    return NULL;
}

void jn_router_link_attached_CT(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    if (link->type == JN_LINK_CONTROL && conn->ct.control_out == link && core->mesh)
        jn_mesh_link_added_CT(core->mesh, conn->ct.slot, conn->cost);
}

void jn_router_link_detached_CT(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    if (conn->ct.control_out == link) {
        conn->ct.control_out = NULL;
        if (core->mesh && conn->ct.slot >= 0 && !conn->ct.closed) {
            jn_mesh_link_lost_CT(core->mesh, conn->ct.slot);
            mesh_flush_CT(core);
        }
    }
    for (int p = 0; p < 10; p++)
        if (conn->ct.data_out[p] == link)
            conn->ct.data_out[p] = NULL;
}

/* ---- control messages that arrive ------------------------------------------ */

/* The hash key of the message's properties.to into buf (NUL-terminated);
 * its length, or 0 when absent or too long. */
static size_t to_key(const jn_message_t *msg, char *buf, size_t cap)
{
    jn_iter_t it;
    if (jn_message_to(msg, &it) != 0)
        return 0;
    jn_iter_set_view(&it, JN_VIEW_ADDRESS_HASH);
    size_t n = jn_iter_length(&it);
    if (n == 0 || n >= cap)
        return 0;
    n = jn_iter_copy(&it, buf, cap - 1);
    buf[n] = '\0';
    return n;
}

/* Serve a complete control message: to the engine and/or on toward other
 * routers; the delivery is done afterwards. */
static void control_serve_CT(jn_core_t *core, jn_delivery_t *dlv)
{
    JN_ASSERT_CT(core);
    jn_core_link_t *links[JN_MESH_MAX_LINKS];
    unsigned n = 0;
    jn_message_t *msg = dlv->message;
    jn_route_ctx_t rc;
    char key[200];
    size_t klen = 0;
    if (!jn_message_is_aborted(msg) && jn_message_parse(msg, JN_DEPTH_ALL) == 0)
        klen = to_key(msg, key, sizeof key);
    jn_router_route_ctx_CT(core, dlv, &rc, true);
    if (klen == 0 || !core->mesh || rc.looped ||
        rc.trace_count > jn_mesh_radius_CT(core->mesh) + 1) {
        jn_forward_to_links_CT(dlv, NULL, 0, true); /* dropped */
        return;
    }
    jn_core_conn_t *in = dlv->link->conn;
    bool to_engine = false;
    if (strcmp(key, "Lqdhello") == 0 || strcmp(key, "Lqdrouter") == 0 ||
        strcmp(key, "Lqdrouter.ma") == 0) {
        to_engine = true;
    } else if (strcmp(key, "Tqdrouter") == 0) {
        to_engine = true;
        n = control_fanout_CT(core, &rc, -1, links); /* flood (RA) */
    } else if (strcmp(key, "Tqdrouter.ma") == 0) {
        to_engine = true;
        n = control_fanout_CT(core, &rc, rc.origin, links); /* multicast-once */
    } else if (key[0] == JN_ADDR_CLASS_ROUTER) {
        int idx = jn_mesh_router_index_CT(core->mesh, key + 1, klen - 1);
        jn_core_conn_t *c = jn_router_usable_conn_CT(core, jn_router_node_at_CT(core, idx), &rc);
        if (c && c->ct.control_out)
            links[n++] = c->ct.control_out;
    }
    if (to_engine && in->ct.slot >= 0) {
        jn_mesh_receive_CT(core->mesh, in->ct.slot, in->cost, msg);
        mesh_flush_CT(core);
    }
    dlv->ct.served = to_engine;
    jn_forward_to_links_CT(dlv, links, n, true);
}

void jn_router_control_arrived_CT(jn_delivery_t *dlv)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    if (jn_message_is_complete(dlv->message) || jn_message_is_aborted(dlv->message)) {
        control_serve_CT(core, dlv);
        return;
    }
    dlv->ct.wait = JN_DLV_WAIT_CONTROL; /* served by jn_router_continued_CT */
}

/* ---- in-process management ------------------------------------------------ */

static void management_serve_CT(jn_core_t *core, jn_delivery_t *dlv)
{
    JN_ASSERT_CT(core);
    jn_message_t *msg = dlv->message;
    bool ok = !jn_message_is_aborted(msg) && jn_message_parse(msg, JN_DEPTH_ALL) == 0;
    dlv->ct.served = ok;
    /* the agent reads the request before the delivery is finished: that
     * may drop the last reference and release the octets */
    if (ok && core->mgmt_fn) {
        const jn_core_conn_t *in = dlv->link->conn;
        core->ct.request_conn = in->inter_router || in->internal ? 0 : in->conn_id;
        core->ct.request_from = in->inter_router || in->internal ? NULL : in;
        core->mgmt_fn(core->mgmt_ctx, core, msg);
        core->ct.request_conn = 0;
        core->ct.request_from = NULL;
    }
    jn_forward_to_links_CT(dlv, NULL, 0, false); /* accepted (served) or released */
}

uint64_t jn_core_request_conn_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    return core->ct.request_conn;
}

bool jn_core_request_denied_CT(jn_core_t *core, int right)
{
    JN_ASSERT_CT(core);
    const jn_core_conn_t *c = core->ct.request_from;
    if (!c || !(right == 0 ? c->deny_dynamic_link_routes : c->deny_admin_status_update))
        return false;
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO,
           "[C%" PRIu64 "] DENY management %s for user '%s', rhost '%s': %s is false in the "
           "connection's vhost user group",
           c->conn_id,
           right == 0 ? "CREATE router.connection.linkRoute" : "UPDATE connection adminStatus",
           c->user ? c->user : "anonymous", c->host ? c->host : "",
           right == 0 ? "allowDynamicLinkRoutes" : "allowAdminStatusUpdate");
    return true;
}

void jn_router_management_arrived_CT(jn_delivery_t *dlv)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    if (jn_message_is_complete(dlv->message) || jn_message_is_aborted(dlv->message)) {
        management_serve_CT(core, dlv);
        return;
    }
    dlv->ct.wait = JN_DLV_WAIT_MANAGEMENT;
}

void jn_router_continued_CT(jn_delivery_t *dlv)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    if (!jn_message_is_complete(dlv->message) && !jn_message_is_aborted(dlv->message))
        return;
    uint8_t wait = dlv->ct.wait;
    dlv->ct.wait = JN_DLV_WAIT_NONE;
    if (wait == JN_DLV_WAIT_CONTROL)
        control_serve_CT(core, dlv);
    else if (wait == JN_DLV_WAIT_MANAGEMENT)
        management_serve_CT(core, dlv);
    else if (wait == JN_DLV_WAIT_TRACKING)
        jn_edge_served_arrived_CT(dlv);
}

/* ---- public ---------------------------------------------------------------- */

void jn_core_set_management(jn_core_t *core, jn_core_request_fn fn, void *ctx)
{
    if (core->started)
        return;
    core->mgmt_fn = fn;
    core->mgmt_ctx = ctx;
}

const char *jn_core_router_id(const jn_core_t *core)
{
    return core->router_id;
}

int jn_core_send_CT(jn_core_t *core, jn_message_t *msg)
{
    JN_ASSERT_CT(core);
    jn_iter_t to;
    if (jn_message_parse(msg, JN_DEPTH_PROPERTIES) != 0 || jn_message_to(msg, &to) != 0) {
        jn_message_unref(msg);
        return JN_EINVAL;
    }
    jn_delivery_t *dlv = jn_delivery_internal_CT(core, msg);
    if (!dlv) {
        jn_message_unref(msg);
        return JN_ENOMEM;
    }
    jn_forward_composed_CT(dlv);
    return 0;
}
