/*
 * engine.c — the routing protocol engine's life, its node table, its tick
 * and the entry points of junction/mesh.h (docs/protocol.md, "The mesh":
 * "Link state and routes", "Timers").
 *
 * The engine keeps one record per known remote router (jn_mesh_node_t),
 * indexed by router index (the lowest free of 1..127 when created) and by
 * id. The handlers of incoming HELLO, RA, LSR and LSU live in linkstate.c,
 * the route computation in path.c, mobile addresses in mobile.c.
 *
 * The tick (once per JN_MESH_TICK_MS of the core's clock) runs, in order:
 * the mobile batch timer (differential MAU), HELLO (seen-list expiry and
 * sending, every hello_interval ticks), the node tracker (neighbour and
 * link-state expiry, unreferenced-node deletion, ls_seq bump, path
 * computation, pending LSR and MAR requests) and the RA timer. 1.19 sends
 * its timer RA before the node tracker and the "own link state changed" RA
 * after it; this engine sends one RA at the end of the tick when either is
 * due (or a differential MAU went out), so it always carries the newest
 * sequences. Core thread only.
 */
#include "mesh_private.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SECS_MS(v, dflt) ((int64_t)((v) ? (v) : (dflt)) * 1000)

jn_mesh_t *jn_mesh_create(const jn_mesh_config_t *cfg, const jn_mesh_ops_t *ops)
{
    if (!cfg || !ops || !cfg->router_id || !cfg->router_id[0] ||
        strlen(cfg->router_id) > JN_MESH_ID_MAX)
        return NULL;
    jn_mesh_t *mesh = calloc(1, sizeof *mesh);
    if (!mesh)
        return NULL;
    mesh->id = strdup(cfg->router_id);
    mesh->id_len = mesh->id ? strlen(mesh->id) : 0;
    mesh->instance = cfg->instance ? cfg->instance : (int64_t)time(NULL);
    mesh->hello_interval = cfg->hello_interval ? cfg->hello_interval : 1;
    mesh->hello_max_age_ms = SECS_MS(cfg->hello_max_age, 3);
    mesh->ra_ms = SECS_MS(cfg->ra_interval, 30);
    mesh->ra_flux_ms = SECS_MS(cfg->ra_interval_flux, 4);
    mesh->ls_max_age_ms = SECS_MS(cfg->remote_ls_max_age, 60);
    mesh->ops = *ops;
    mesh->ct_role = cfg->ct_role;
    mesh->by_id = jn_hash_create(0);
    mesh->pv_logged = jn_hash_create(0);
    if (!mesh->id || !mesh->by_id || !mesh->pv_logged || jn_mesh_mobile_init(mesh) != 0) {
        jn_mesh_free(mesh);
        return NULL;
    }
    return mesh;
}

static void node_free(jn_mesh_node_t *node)
{
    jn_hash_free(node->mobile); /* values are hints, nothing to free */
    jn_mesh_strs_free(&node->peers);
    free(node->peer_costs);
    free(node->id);
    free(node);
}

void jn_mesh_free(jn_mesh_t *mesh)
{
    if (!mesh)
        return;
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++)
        if (mesh->nodes[i])
            node_free(mesh->nodes[i]);
    jn_hash_free(mesh->by_id);
    jn_hash_free(mesh->pv_logged);
    jn_mesh_mobile_fini(mesh);
    jn_mesh_strs_free(&mesh->seen);
    jn_mesh_strs_free(&mesh->peers);
    free(mesh->id);
    free(mesh);
}

/* ---- node table --------------------------------------------------------- */

jn_mesh_node_t *jn_mesh_node_find_CT(const jn_mesh_t *mesh, const char *id, size_t len)
{
    JN_ASSERT_CT(mesh);
    return jn_hash_lookup(mesh->by_id, id, len);
}

jn_mesh_node_t *jn_mesh_node_get_CT(jn_mesh_t *mesh, const char *id, size_t len)
{
    JN_ASSERT_CT(mesh);
    jn_mesh_node_t *node = jn_mesh_node_find_CT(mesh, id, len);
    if (node)
        return node;
    int index = 1;
    while (index < JN_MESH_MAX_ROUTERS && mesh->nodes[index])
        index++;
    if (index == JN_MESH_MAX_ROUTERS) {
        if (jn_mesh_complain_CT(mesh))
            JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_ERROR,
                   "Cannot add router %.*s: %d remote routers are known already", (int)len, id,
                   JN_MESH_MAX_ROUTERS - 1);
        return NULL;
    }
    node = calloc(1, sizeof *node);
    if (!node || !(node->id = malloc(len + 1)) || !(node->mobile = jn_hash_create(0)))
        goto nomem;
    memcpy(node->id, id, len);
    node->id[len] = '\0';
    node->id_len = len;
    node->index = index;
    node->link = -1;
    node->first_hop = -1;
    node->rep_link = -1;
    node->rep_next_hop = -1;
    node->ls_seen_ms = mesh->now_ms;
    node->last_topo_change_ms = mesh->now_ms;
    node->lsr_pending = true;
    if (jn_hash_insert(mesh->by_id, node->id, len, node) != 0)
        goto nomem;
    mesh->nodes[index] = node;
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO, "Router %s added (index %d)", node->id, index);
    if (mesh->ops.router_added)
        mesh->ops.router_added(mesh->ops.ctx, index, node->id);
    return node;
nomem:
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_ERROR, "Cannot add router %.*s: out of memory", (int)len, id);
    if (node)
        node_free(node);
    return NULL;
}

bool jn_mesh_node_reachable(const jn_mesh_node_t *node)
{
    return node->rep_reachable;
}

static void node_delete_CT(jn_mesh_t *mesh, jn_mesh_node_t *node)
{
    JN_ASSERT_CT(mesh);
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO, "Router %s removed (index %d)", node->id, node->index);
    jn_mesh_mobile_forget_CT(mesh, node);
    jn_hash_remove(mesh->by_id, node->id, node->id_len, NULL);
    mesh->nodes[node->index] = NULL;
    int index = node->index;
    node_free(node);
    if (mesh->ops.router_removed)
        mesh->ops.router_removed(mesh->ops.ctx, index);
}

/* A node with an empty link state, not a neighbour and in nobody's peers
 * is deleted on the third tick it is found so ("Link state and routes"). */
static void sweep_unreferenced_CT(jn_mesh_t *mesh)
{
    JN_ASSERT_CT(mesh);
    jn_mesh_bits_t referenced = {{0, 0}};
    for (size_t i = 0; i < mesh->peers.n; i++) {
        jn_mesh_node_t *p = jn_mesh_node_find_CT(mesh, mesh->peers.s[i], mesh->peers.len[i]);
        if (p)
            jn_mesh_bits_set(&referenced, (unsigned)p->index);
    }
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++) {
        jn_mesh_node_t *x = mesh->nodes[i];
        for (size_t j = 0; x && j < x->peers.n; j++) {
            jn_mesh_node_t *p = jn_mesh_node_find_CT(mesh, x->peers.s[j], x->peers.len[j]);
            if (p && p != x)
                jn_mesh_bits_set(&referenced, (unsigned)p->index);
        }
    }
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++) {
        jn_mesh_node_t *x = mesh->nodes[i];
        if (!x || x->peers.n || x->link >= 0 || jn_mesh_bits_has(&referenced, (unsigned)i))
            continue;
        if (++x->unref_ticks >= JN_MESH_UNREF_TICKS)
            node_delete_CT(mesh, x);
    }
}

/* ---- the tick ----------------------------------------------------------- */

static void send_ra_CT(jn_mesh_t *mesh)
{
    JN_ASSERT_CT(mesh);
    jn_message_t *m = jn_mesh_compose_ra(mesh->id, mesh->instance, mesh->ls_seq, mesh->mobile_seq);
    if (m)
        mesh->ops.send_to_all(mesh->ops.ctx, m);
    mesh->ra_sent = true;
    mesh->last_ra_ms = mesh->now_ms;
    mesh->mobile_changed = false;
}

/* Section 7.3, tick order; see the file comment. */
static void do_tick_CT(jn_mesh_t *mesh)
{
    JN_ASSERT_CT(mesh);
    jn_mesh_mobile_flush_CT(mesh);
    jn_mesh_hello_tick_CT(mesh);
    jn_mesh_expire_CT(mesh);
    sweep_unreferenced_CT(mesh);
    bool bumped = false;
    if (mesh->own_changed) {
        mesh->own_changed = false;
        mesh->ls_seq++;
        mesh->recompute = true;
        bumped = true;
        JN_LOG(JN_LOG_MOD_ROUTER_LS, JN_LOG_DEBUG, "Own link state changed: ls_seq %llu",
               (unsigned long long)mesh->ls_seq);
    }
    if (mesh->recompute) {
        mesh->recompute = false;
        mesh->last_topo_change_ms = mesh->now_ms;
        jn_mesh_compute_CT(mesh);
    }
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++) {
        jn_mesh_node_t *x = mesh->nodes[i];
        /* an LSR lost on the way (sent along a route that was changing)
         * is sent again every tick while the link state held is stale,
         * not only at its next RA (4 s, 30 s): a stale link state holds
         * back multicast (path.c) */
        bool stale = x && (x->ls_seq == 0 || x->ls_seq < x->ra_ls_seq);
        if (x && (x->lsr_pending || stale) && jn_mesh_node_reachable(x))
            jn_mesh_send_lsr_CT(mesh, x);
        if (x && x->lsu_pending && jn_mesh_node_reachable(x))
            jn_mesh_send_lsu_CT(mesh, x);
    }
    jn_mesh_mobile_requests_CT(mesh);
    bool flux = mesh->now_ms - mesh->last_topo_change_ms <= 2 * mesh->ra_flux_ms;
    int64_t interval = flux ? mesh->ra_flux_ms : mesh->ra_ms;
    if (!mesh->ra_sent || mesh->now_ms - mesh->last_ra_ms >= interval || bumped ||
        mesh->mobile_changed)
        send_ra_CT(mesh);
    mesh->ticks++;
}

/* The clock starts: what was received before the first tick was stamped
 * with time 0; move those stamps to now so they do not look ancient. */
static void first_tick_CT(jn_mesh_t *mesh, int64_t now_ms)
{
    JN_ASSERT_CT(mesh);
    mesh->started = true;
    mesh->next_tick_ms = now_ms;
    mesh->last_topo_change_ms = now_ms;
    for (size_t i = 0; i < mesh->seen.n; i++)
        mesh->seen.val[i] = now_ms;
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++) {
        jn_mesh_node_t *x = mesh->nodes[i];
        if (x) {
            x->neighbour_ms = now_ms;
            x->ls_seen_ms = now_ms;
            x->last_topo_change_ms = now_ms;
        }
    }
}

/* The tick came late_ms after its time: this router did not run
 * meanwhile (the process was stopped: SIGSTOP, a paused VM, swap, a
 * debugger; or starved). Its neighbours' HELLOs and RAs of that time may
 * wait unread in its sockets, and expiring them now would drop healthy
 * neighbours (and close their connections: link_silent) the moment the
 * router came back. So the time it stood still is not counted against
 * anyone: every "last heard" stamp moves on by late_ms, as if the stall
 * had not happened. A neighbour that is really silent expires that much
 * later. */
static void resume_CT(jn_mesh_t *mesh, int64_t late_ms)
{
    JN_ASSERT_CT(mesh);
    JN_LOG(JN_LOG_MOD_ROUTER_HELLO, JN_LOG_INFO,
           "Tick %lld ms late (this router did not run meanwhile): HELLO and link-state ages "
           "resume from now",
           (long long)late_ms);
    for (size_t i = 0; i < mesh->seen.n; i++)
        mesh->seen.val[i] += late_ms;
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++) {
        jn_mesh_node_t *x = mesh->nodes[i];
        if (x) {
            x->neighbour_ms += late_ms;
            x->ls_seen_ms += late_ms;
        }
    }
}

void jn_mesh_tick_CT(jn_mesh_t *mesh, int64_t now_ms)
{
    JN_ASSERT_CT(mesh);
    if (mesh->started && now_ms < mesh->now_ms)
        now_ms = mesh->now_ms; /* never backwards */
    if (mesh->started && now_ms - mesh->next_tick_ms > JN_MESH_STALL_MS)
        resume_CT(mesh, now_ms - mesh->next_tick_ms);
    mesh->now_ms = now_ms;
    if (!mesh->started)
        first_tick_CT(mesh, now_ms);
    if (now_ms + JN_MESH_SLACK_MS < mesh->next_tick_ms)
        return;
    mesh->next_tick_ms += JN_MESH_TICK_MS;
    if (mesh->next_tick_ms <= now_ms)
        mesh->next_tick_ms = now_ms + JN_MESH_TICK_MS;
    do_tick_CT(mesh);
}

bool jn_mesh_flush_CT(jn_mesh_t *mesh)
{
    JN_ASSERT_CT(mesh);
    if (!mesh->started)
        return false;
    bool bumped = false;
    if (mesh->own_changed) {
        mesh->own_changed = false;
        mesh->ls_seq++;
        mesh->recompute = true;
        bumped = true;
        JN_LOG(JN_LOG_MOD_ROUTER_LS, JN_LOG_DEBUG, "Own link state changed: ls_seq %llu",
               (unsigned long long)mesh->ls_seq);
    }
    if (!mesh->recompute)
        return false;
    mesh->recompute = false;
    mesh->last_topo_change_ms = mesh->now_ms;
    jn_mesh_compute_CT(mesh);
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++) {
        jn_mesh_node_t *x = mesh->nodes[i];
        if (x && x->lsr_pending && jn_mesh_node_reachable(x))
            jn_mesh_send_lsr_CT(mesh, x);
        if (x && x->lsu_pending && jn_mesh_node_reachable(x))
            jn_mesh_send_lsu_CT(mesh, x);
    }
    /* a router that just got a route asks for mobile addresses now, not
     * on the next tick: until it knows them it drops the multicast copies
     * its neighbours already route through it */
    jn_mesh_mobile_requests_CT(mesh);
    if (bumped)
        send_ra_CT(mesh);
    return true;
}

/* ---- links -------------------------------------------------------------- */

void jn_mesh_link_added_CT(jn_mesh_t *mesh, int link, uint32_t cost)
{
    JN_ASSERT_CT(mesh);
    if (link < 0 || link >= JN_MESH_MAX_LINKS)
        return;
    mesh->links[link].present = true;
    mesh->links[link].cost = cost ? cost : 1;
}

void jn_mesh_link_lost_CT(jn_mesh_t *mesh, int link)
{
    JN_ASSERT_CT(mesh);
    if (link < 0 || link >= JN_MESH_MAX_LINKS)
        return;
    mesh->links[link].present = false;
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++) {
        jn_mesh_node_t *x = mesh->nodes[i];
        if (!x || x->link != link)
            continue;
        JN_LOG(JN_LOG_MOD_ROUTER_HELLO, JN_LOG_INFO, "Neighbour %s lost with link %d", x->id, link);
        x->link = -1;
        long p = jn_mesh_strs_find(&mesh->peers, x->id, x->id_len);
        if (p >= 0) {
            jn_mesh_strs_remove(&mesh->peers, (size_t)p);
            mesh->own_changed = true;
        }
    }
}

/* ---- receiving ---------------------------------------------------------- */

/* pv > 1 is ignored, logged once per sender id (1.19 does the same). */
static bool version_ok_CT(jn_mesh_t *mesh, const jn_mesh_msg_t *m)
{
    JN_ASSERT_CT(mesh);
    if (m->pv <= 1)
        return true;
    if (!jn_hash_lookup(mesh->pv_logged, m->id, m->id_len)) {
        jn_hash_insert(mesh->pv_logged, m->id, m->id_len, mesh);
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_WARNING,
               "Ignoring control messages from router %s: protocol version %lld (this router "
               "speaks 1)",
               m->id, (long long)m->pv);
    }
    return false;
}

/* A HELLO or RA carrying this router's id: another router with the same
 * id (a different instance) is logged once; our own echo is ignored. */
static void own_id_seen_CT(jn_mesh_t *mesh, const jn_mesh_msg_t *m)
{
    JN_ASSERT_CT(mesh);
    if ((m->op != JN_MESH_OP_HELLO && m->op != JN_MESH_OP_RA) || m->instance == mesh->instance ||
        mesh->dup_logged)
        return;
    mesh->dup_logged = true;
    JN_LOG(JN_LOG_MOD_ROUTER_HELLO, JN_LOG_CRITICAL,
           "Detected duplicate router id '%s' (instance %lld, ours %lld): another router uses "
           "this router's id; its messages are ignored",
           mesh->id, (long long)m->instance, (long long)mesh->instance);
}

bool jn_mesh_complain_CT(jn_mesh_t *mesh)
{
    JN_ASSERT_CT(mesh);
    if (mesh->complain_ms != mesh->now_ms) {
        if (mesh->suppressed > 0)
            JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_ERROR,
                   "%u more bad control messages or router records were ignored without a "
                   "log line",
                   mesh->suppressed);
        mesh->complain_ms = mesh->now_ms;
        mesh->complaints = mesh->suppressed = 0;
    }
    if (mesh->complaints < JN_MESH_COMPLAINTS) {
        mesh->complaints++;
        return true;
    }
    mesh->suppressed++;
    return false;
}

int jn_mesh_receive_CT(jn_mesh_t *mesh, int link, uint32_t cost, jn_message_t *msg)
{
    JN_ASSERT_CT(mesh);
    jn_mesh_msg_t m;
    const char *reason = NULL;
    int rc = jn_mesh_parse(msg, &m, &reason);
    if (rc != 0) {
        if (jn_mesh_complain_CT(mesh))
            JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_ERROR, "Malformed control message on link %d: %s",
                   link, reason ? reason : jn_strerror(rc));
        jn_mesh_msg_fini(&m);
        return rc == JN_ENOMEM ? rc : JN_EPROTO;
    }
    if (link >= 0 && link < JN_MESH_MAX_LINKS) {
        mesh->links[link].present = true;
        mesh->links[link].cost = cost ? cost : 1;
    }
    if (m.op == JN_MESH_OP_UNKNOWN || !version_ok_CT(mesh, &m)) {
        jn_mesh_msg_fini(&m);
        return 0;
    }
    if (m.id_len == mesh->id_len && memcmp(m.id, mesh->id, m.id_len) == 0) {
        own_id_seen_CT(mesh, &m);
        jn_mesh_msg_fini(&m);
        return 0;
    }
    switch (m.op) {
    case JN_MESH_OP_HELLO:
        rc = jn_mesh_on_hello_CT(mesh, link, cost ? cost : 1, &m);
        break;
    case JN_MESH_OP_RA:
        rc = jn_mesh_on_ra_CT(mesh, &m);
        break;
    case JN_MESH_OP_LSR:
        rc = jn_mesh_on_lsr_CT(mesh, &m);
        break;
    case JN_MESH_OP_LSU:
        rc = jn_mesh_on_lsu_CT(mesh, &m);
        break;
    case JN_MESH_OP_MAU:
        rc = jn_mesh_on_mau_CT(mesh, &m);
        break;
    case JN_MESH_OP_MAR:
        rc = jn_mesh_on_mar_CT(mesh, &m);
        break;
    default:
        break;
    }
    jn_mesh_msg_fini(&m);
    return rc;
}

/* ---- queries ------------------------------------------------------------ */

uint32_t jn_mesh_radius_CT(const jn_mesh_t *mesh)
{
    JN_ASSERT_CT(mesh);
    return mesh->radius;
}

int jn_mesh_router_index_CT(const jn_mesh_t *mesh, const char *id, size_t len)
{
    JN_ASSERT_CT(mesh);
    const jn_mesh_node_t *node = jn_mesh_node_find_CT(mesh, id, len);
    return node ? node->index : -1;
}

/* The node's peer costs as uint32 (they are kept as the int64 values of
 * its peer list), in a buffer the node owns; NULL on ENOMEM. */
static const uint32_t *peer_costs(jn_mesh_node_t *x)
{
    if (x->peer_costs_cap < x->peers.n || !x->peer_costs) {
        size_t cap = x->peers.n ? x->peers.n : 1;
        uint32_t *p = realloc(x->peer_costs, cap * sizeof *p);
        if (!p)
            return NULL;
        x->peer_costs = p;
        x->peer_costs_cap = cap;
    }
    for (size_t j = 0; j < x->peers.n; j++)
        x->peer_costs[j] = (uint32_t)x->peers.val[j];
    return x->peer_costs;
}

void jn_mesh_foreach_router_CT(const jn_mesh_t *mesh,
                            bool (*fn)(void *arg, const jn_mesh_router_info_t *info), void *arg)
{
    JN_ASSERT_CT(mesh);
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++) {
        jn_mesh_node_t *x = mesh->nodes[i];
        if (!x)
            continue;
        jn_mesh_router_info_t info = {
            .index = x->index,
            .id = x->id,
            .link = x->link,
            .next_hop = x->rep_reachable ? x->rep_next_hop : -1,
            .reachable = x->rep_reachable,
            .cost = x->rep_cost,
            .valid_origins = x->rep_vo,
            .ls_seq = x->ls_seq,
            .mobile_seq = x->mobile_seq,
            .instance = x->instance,
            .last_topo_change_ms = x->last_topo_change_ms,
            .peer_ids = (const char *const *)x->peers.s,
            .peer_costs = peer_costs(x),
            .peer_count = x->peers.n,
        };
        if (!info.peer_costs)
            info.peer_count = 0; /* out of memory: show no peers */
        if (!fn(arg, &info))
            return;
    }
}

void jn_mesh_own_state_CT(const jn_mesh_t *mesh, uint64_t *ls_seq, uint64_t *mobile_seq)
{
    JN_ASSERT_CT(mesh);
    if (ls_seq)
        *ls_seq = mesh->ls_seq;
    if (mobile_seq)
        *mobile_seq = mesh->mobile_seq;
}
