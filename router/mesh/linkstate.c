/*
 * linkstate.c — neighbours and link state: HELLO, RA, LSR and LSU
 * (docs/protocol.md, "The mesh": "Control messages"), the own link state,
 * ageing of neighbours and stored link states and restart detection
 * ("Link state and routes").
 *
 * A router becomes a neighbour when its HELLO lists this router's id in
 * `seen`: it is bound to the link the HELLO came over and added to the own
 * peers with that link's cost (the ls_seq bump happens at the end of the
 * tick, engine.c). While bound, only HELLOs over its bound link keep it
 * fresh; a HELLO of the same router over another link rebinds it only once
 * the bound link is gone or the binding has expired (1.19 rebinds on every
 * HELLO from another link, which flaps between two parallel links). A
 * router heard for the first time gets a HELLO back at once on its link,
 * not on the next tick: the handshake takes a round trip, not a hello
 * interval (1.19 waits for the tick).
 *
 * Link states are pulled: an RA with a newer ls_seq makes this router send
 * an LSR, answered by an LSU. Core thread only.
 */
#include "mesh_private.h"

#include <string.h>

/* ---- own link state ----------------------------------------------------- */

static void own_add_peer_CT(jn_mesh_t *mesh, const jn_mesh_node_t *node, uint32_t cost)
{
    JN_ASSERT_CT(mesh);
    /* an existing peer's cost is not updated ("Link state and routes") */
    if (jn_mesh_strs_find(&mesh->peers, node->id, node->id_len) >= 0)
        return;
    if (jn_mesh_strs_add(&mesh->peers, node->id, node->id_len, cost) == 0)
        mesh->own_changed = true;
}

static void own_remove_peer_CT(jn_mesh_t *mesh, const jn_mesh_node_t *node)
{
    JN_ASSERT_CT(mesh);
    long p = jn_mesh_strs_find(&mesh->peers, node->id, node->id_len);
    if (p >= 0) {
        jn_mesh_strs_remove(&mesh->peers, (size_t)p);
        mesh->own_changed = true;
    }
}

/* ---- restart detection -------------------------------------------------- */

/* Returns false when the message is from the newcomer of two live routers
 * with one id (a mesh needs unique ids), which is ignored. A
 * restart changes the instance once; if the instance from before it is
 * heard again in a later tick (not a straggler still in flight: a restart
 * takes far longer than a message's trip), two routers use this id: the one that started first (the smaller
 * instance, seconds since the epoch) keeps it; the newcomer is logged and
 * ignored from then on. */
static bool check_instance_CT(jn_mesh_t *mesh, jn_mesh_node_t *node, int64_t instance)
{
    JN_ASSERT_CT(mesh);
    if (instance == 0 || node->instance == instance)
        return true;
    if (node->instance == 0) {
        node->instance = instance;
        return true;
    }
    if (instance == node->banned_instance)
        return false;
    bool dup = instance == node->prev_instance && mesh->now_ms > node->restart_ms;
    if (dup) {
        int64_t newcomer = instance > node->instance ? instance : node->instance;
        JN_LOG(JN_LOG_MOD_ROUTER_LS, JN_LOG_CRITICAL,
               "Duplicate router id %s: two routers use it (instances %lld and %lld); the "
               "newcomer (instance %lld) is ignored: give every router its own id",
               node->id, (long long)instance, (long long)node->instance, (long long)newcomer);
        node->banned_instance = newcomer;
        node->prev_instance = 0;
        if (newcomer == instance)
            return false; /* the first one stays as it is */
    } else {
        JN_LOG(JN_LOG_MOD_ROUTER_LS, JN_LOG_INFO,
               "Router %s restarted (instance %lld, was %lld): its state is reset", node->id,
               (long long)instance, (long long)node->instance);
        node->prev_instance = node->instance;
    }
    node->restart_ms = mesh->now_ms;
    node->instance = instance;
    jn_mesh_strs_clear(&node->peers);
    node->ls_seq = 0;
    node->ra_ls_seq = 0;
    node->last_topo_change_ms = mesh->now_ms;
    jn_mesh_mobile_forget_CT(mesh, node);
    node->lsr_pending = true;
    mesh->recompute = true;
    return true;
}

/* ---- sending ------------------------------------------------------------ */

void jn_mesh_send_lsr_CT(jn_mesh_t *mesh, jn_mesh_node_t *node)
{
    JN_ASSERT_CT(mesh);
    node->lsr_pending = false;
    jn_message_t *m = jn_mesh_compose_lsr(mesh->id, node->id);
    if (m)
        mesh->ops.send_to_router(mesh->ops.ctx, node->index, m);
}

void jn_mesh_send_lsu_CT(jn_mesh_t *mesh, jn_mesh_node_t *node)
{
    JN_ASSERT_CT(mesh);
    node->lsu_pending = false;
    jn_message_t *m =
        jn_mesh_compose_lsu(mesh->id, mesh->instance, node->id, mesh->ls_seq, &mesh->peers);
    if (m)
        mesh->ops.send_to_router(mesh->ops.ctx, node->index, m);
}

/* A HELLO (the current seen list) on link alone, out of turn. */
static void hello_on_link_CT(jn_mesh_t *mesh, int link)
{
    JN_ASSERT_CT(mesh);
    jn_message_t *m = jn_mesh_compose_hello(mesh->id, mesh->instance, &mesh->seen);
    if (m)
        mesh->ops.send_on_link(mesh->ops.ctx, link, m);
}

/* Expire the seen list and send HELLO on every link, every hello_interval
 * ticks ("Control messages", HELLO). */
void jn_mesh_hello_tick_CT(jn_mesh_t *mesh)
{
    JN_ASSERT_CT(mesh);
    for (size_t i = mesh->seen.n; i-- > 0;)
        if (mesh->now_ms - mesh->seen.val[i] > mesh->hello_max_age_ms)
            jn_mesh_strs_remove(&mesh->seen, i);
    if (mesh->ticks % mesh->hello_interval != 0)
        return;
    jn_message_t *m = NULL;
    for (int link = 0; link < JN_MESH_MAX_LINKS; link++) {
        if (!mesh->links[link].present)
            continue;
        if (!m && !(m = jn_mesh_compose_hello(mesh->id, mesh->instance, &mesh->seen)))
            return;
        mesh->ops.send_on_link(mesh->ops.ctx, link, jn_message_ref(m));
    }
    jn_message_unref(m);
}

/* Neighbour expiry by HELLO age, stored link-state expiry ("Link state
 * and routes"). */
void jn_mesh_expire_CT(jn_mesh_t *mesh)
{
    JN_ASSERT_CT(mesh);
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++) {
        jn_mesh_node_t *x = mesh->nodes[i];
        if (!x)
            continue;
        if (x->link >= 0 && mesh->now_ms - x->neighbour_ms > mesh->hello_max_age_ms) {
            JN_LOG(JN_LOG_MOD_ROUTER_HELLO, JN_LOG_INFO, "Neighbour %s expired (no HELLO)", x->id);
            int link = x->link;
            x->link = -1;
            own_remove_peer_CT(mesh, x);
            /* its connection is still up but carries nothing: close it */
            if (mesh->links[link].present && mesh->ops.link_silent)
                mesh->ops.link_silent(mesh->ops.ctx, link, x->id);
        }
        if ((x->peers.n || x->ls_seq) && mesh->now_ms - x->ls_seen_ms > mesh->ls_max_age_ms) {
            JN_LOG(JN_LOG_MOD_ROUTER_LS, JN_LOG_INFO, "Link state of router %s expired", x->id);
            jn_mesh_strs_clear(&x->peers);
            x->ls_seq = 0;
            x->last_topo_change_ms = mesh->now_ms;
            mesh->recompute = true;
        }
    }
}

/* ---- receiving ---------------------------------------------------------- */

static void refresh_neighbour_CT(jn_mesh_t *mesh, jn_mesh_node_t *node, int link, uint32_t cost)
{
    JN_ASSERT_CT(mesh);
    if (node->link != link) {
        bool bound = node->link >= 0 && mesh->links[node->link].present &&
                     mesh->now_ms - node->neighbour_ms <= mesh->hello_max_age_ms;
        if (bound)
            return; /* keep the first link; see the file comment */
        JN_LOG(JN_LOG_MOD_ROUTER_HELLO, JN_LOG_INFO, "Router %s is a neighbour over link %d",
               node->id, link);
        node->link = link;
        node->lsr_pending = true;
        own_add_peer_CT(mesh, node, cost);
        mesh->recompute = true; /* the route to it now uses this link */
    }
    node->neighbour_ms = mesh->now_ms;
}

/* The node record of m's sender (made when new), its protocol version
 * taken from m when not yet known; NULL when it cannot be made (out of
 * memory, or all 127 router indices taken: logged, and the message is
 * ignored as a lost one). Core thread. */
static jn_mesh_node_t *sender_node_CT(jn_mesh_t *mesh, const jn_mesh_msg_t *m)
{
    jn_mesh_node_t *node = jn_mesh_node_get_CT(mesh, m->id, m->id_len);
    if (node && node->version == 0)
        node->version = m->pv;
    return node;
}

int jn_mesh_on_hello_CT(jn_mesh_t *mesh, int link, uint32_t cost, const jn_mesh_msg_t *m)
{
    JN_ASSERT_CT(mesh);
    long i = jn_mesh_strs_find(&mesh->seen, m->id, m->id_len);
    if (i >= 0) {
        mesh->seen.val[i] = mesh->now_ms;
    } else {
        if (jn_mesh_strs_add(&mesh->seen, m->id, m->id_len, mesh->now_ms) != 0)
            return JN_ENOMEM;
        /* A router heard for the first time is answered at once on its
         * link: its next HELLO, a hello interval away, would otherwise be
         * the first to list this router, and it would become a neighbour
         * that much later (a router both routers know from the RAs, with
         * no route between them meanwhile). Once per newcomer: the seen
         * list holds it from now on. */
        if (link >= 0 && link < JN_MESH_MAX_LINKS && mesh->links[link].present)
            hello_on_link_CT(mesh, link);
    }
    if (jn_mesh_strs_find(&m->seen, mesh->id, mesh->id_len) < 0)
        return 0;
    if (link < 0 || link >= JN_MESH_MAX_LINKS)
        return 0;
    jn_mesh_node_t *node = sender_node_CT(mesh, m);
    if (!node)
        return 0;
    if (!check_instance_CT(mesh, node, m->instance))
        return 0;
    refresh_neighbour_CT(mesh, node, link, cost);
    return 0;
}

int jn_mesh_on_ra_CT(jn_mesh_t *mesh, const jn_mesh_msg_t *m)
{
    JN_ASSERT_CT(mesh);
    jn_mesh_node_t *node = sender_node_CT(mesh, m);
    if (!node)
        return 0;
    if (!check_instance_CT(mesh, node, m->instance))
        return 0;
    node->ls_seen_ms = mesh->now_ms;
    if (node->ra_ls_seq < m->ls_seq) {
        node->ra_ls_seq = m->ls_seq;
        /* the link state held is stale from now on: its multicast
         * origins change (path.c) until the LSU comes */
        if (node->ls_seq < m->ls_seq)
            mesh->recompute = true;
    }
    if (node->ls_seq < m->ls_seq) {
        /* sent now when the core can route it, else on a later tick (and
         * again every tick until the LSU comes, engine.c) */
        if (jn_mesh_node_reachable(node))
            jn_mesh_send_lsr_CT(mesh, node);
        else
            node->lsr_pending = true;
    }
    if (node->mobile_seq < m->mobile_seq) {
        if (node->ra_mobile_seq < m->mobile_seq)
            node->ra_mobile_seq = m->mobile_seq;
        node->mar_pending = true;
    }
    return 0;
}

int jn_mesh_on_lsr_CT(jn_mesh_t *mesh, const jn_mesh_msg_t *m)
{
    JN_ASSERT_CT(mesh);
    jn_mesh_node_t *node = sender_node_CT(mesh, m);
    if (!node)
        return 0;
    if (!jn_mesh_node_reachable(node)) {
        /* no route back yet (it just came, or came back): an answer now
         * would be dropped and the asker would wait for our next RA */
        node->lsu_pending = true;
        return 0;
    }
    jn_mesh_send_lsu_CT(mesh, node);
    return 0;
}

int jn_mesh_on_lsu_CT(jn_mesh_t *mesh, const jn_mesh_msg_t *m)
{
    JN_ASSERT_CT(mesh);
    bool known = jn_mesh_node_find_CT(mesh, m->id, m->id_len) != NULL;
    jn_mesh_node_t *node = jn_mesh_node_get_CT(mesh, m->id, m->id_len);
    if (!node)
        return 0;
    if (!known) {
        node->instance = m->instance;
        node->version = m->pv;
    }
    if (m->ls_inner_seq <= node->ls_seq)
        return 0;
    jn_mesh_strs_clear(&node->peers);
    for (size_t i = 0; i < m->peers.n; i++)
        if (jn_mesh_strs_add(&node->peers, m->peers.s[i], m->peers.len[i], m->peers.val[i]) != 0)
            return JN_ENOMEM;
    node->ls_seq = m->ls_inner_seq;
    node->ls_seen_ms = mesh->now_ms;
    node->last_topo_change_ms = mesh->now_ms;
    mesh->recompute = true;
    JN_LOG(JN_LOG_MOD_ROUTER_LS, JN_LOG_DEBUG, "Link state of router %s: ls_seq %llu, %zu peers",
           node->id, (unsigned long long)node->ls_seq, node->peers.n);
    for (size_t i = 0; i < m->peers.n; i++) {
        const char *p = m->peers.s[i];
        size_t len = m->peers.len[i];
        if (len != mesh->id_len || memcmp(p, mesh->id, len) != 0)
            jn_mesh_node_get_CT(mesh, p, len);
    }
    return 0;
}
