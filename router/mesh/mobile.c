/*
 * mobile.c — mobile-address synchronisation (docs/protocol.md, "The mesh":
 * "Mobile addresses", and the MAU and MAR of "Control messages").
 *
 * Sender side: the core reports each mobile-class key that gains its first
 * or loses its last local destination (jn_mesh_local_mobile_CT). Changes are
 * collected in a pending add set and a pending delete set, where an add
 * and a delete of the same key cancel out. The batch timer (the engine
 * tick) sends them as one differential MAU with mobile_seq + 1 to every
 * router, then an RA carrying the new sequence. A MAR whose have_seq is
 * older than ours is answered with an absolute MAU: every key owned now or
 * pending deletion, minus the pending adds, with the current sequence.
 *
 * Receiver side: a differential MAU whose sequence is not the next one
 * asks the originator for everything (MAR) unless a MAR is outstanding; an
 * absolute MAU replaces what is known of the originator. RA catch-up: an RA
 * with a newer mobile_seq makes the next tick send a MAR once the
 * originator is reachable. Every change reaches the core through
 * mobile_added / mobile_removed. Core thread only.
 */
#include "mesh_private.h"

#include <string.h>

int jn_mesh_mobile_init(jn_mesh_t *mesh)
{
    mesh->local = jn_hash_create(0);
    mesh->pending_add = jn_hash_create(0);
    mesh->pending_del = jn_hash_create(0);
    return mesh->local && mesh->pending_add && mesh->pending_del ? 0 : JN_ENOMEM;
}

void jn_mesh_mobile_fini(jn_mesh_t *mesh)
{
    jn_hash_free(mesh->local);
    jn_hash_free(mesh->pending_add);
    jn_hash_free(mesh->pending_del);
}

/* ---- sender side -------------------------------------------------------- */

void jn_mesh_local_mobile_CT(jn_mesh_t *mesh, const uint8_t *key, size_t len, bool added, int hint)
{
    JN_ASSERT_CT(mesh);
    void *had = jn_hash_lookup(mesh->local, key, len);
    if (added) {
        if (had)
            return;
        if (jn_hash_remove(mesh->pending_del, key, len, NULL) != 0)
            jn_hash_insert(mesh->pending_add, key, len, jn_mesh_hint_value(hint));
        jn_hash_insert(mesh->local, key, len, jn_mesh_hint_value(hint));
        return;
    }
    if (!had)
        return;
    if (jn_hash_remove(mesh->pending_add, key, len, NULL) != 0)
        jn_hash_insert(mesh->pending_del, key, len, had);
    jn_hash_remove(mesh->local, key, len, NULL);
}

/* Append every key of set (val = its hint) to l, skipping keys in `except`
 * (may be NULL). */
static int collect(const jn_hash_t *set, const jn_hash_t *except, jn_mesh_strs_t *l)
{
    jn_hash_iter_t it;
    const uint8_t *key;
    size_t len;
    void *v;
    jn_hash_iter_init(set, &it);
    while (jn_hash_iter_next(&it, &key, &len, &v)) {
        if (except && jn_hash_lookup(except, key, len))
            continue;
        if (jn_mesh_strs_add(l, key, len, jn_mesh_value_hint(v)) != 0)
            return JN_ENOMEM;
    }
    return 0;
}

static void clear_set(jn_hash_t *set)
{
    jn_hash_iter_t it;
    const uint8_t *key;
    size_t len;
    jn_hash_iter_init(set, &it);
    while (jn_hash_iter_next(&it, &key, &len, NULL))
        jn_hash_remove(set, key, len, NULL);
}

void jn_mesh_mobile_flush_CT(jn_mesh_t *mesh)
{
    JN_ASSERT_CT(mesh);
    if (jn_hash_count(mesh->pending_add) == 0 && jn_hash_count(mesh->pending_del) == 0)
        return;
    jn_mesh_strs_t add = {0}, del = {0};
    if (collect(mesh->pending_add, NULL, &add) == 0 &&
        collect(mesh->pending_del, NULL, &del) == 0) {
        jn_message_t *m = jn_mesh_compose_mau_diff(mesh->id, mesh->mobile_seq + 1, &add, &del);
        if (m) {
            mesh->mobile_seq++;
            mesh->mobile_changed = true;
            clear_set(mesh->pending_add);
            clear_set(mesh->pending_del);
            JN_LOG(JN_LOG_MOD_ROUTER_MA, JN_LOG_DEBUG,
                   "Sending MAU: mobile_seq %llu, %zu added, %zu deleted",
                   (unsigned long long)mesh->mobile_seq, add.n, del.n);
            mesh->ops.send_to_all(mesh->ops.ctx, m);
        }
    }
    jn_mesh_strs_free(&add);
    jn_mesh_strs_free(&del);
}

static void send_absolute_CT(jn_mesh_t *mesh, jn_mesh_node_t *to)
{
    JN_ASSERT_CT(mesh);
    jn_mesh_strs_t exist = {0};
    if (collect(mesh->local, mesh->pending_add, &exist) == 0 &&
        collect(mesh->pending_del, NULL, &exist) == 0) {
        jn_message_t *m = jn_mesh_compose_mau_abs(mesh->id, to->id, mesh->mobile_seq, &exist);
        if (m)
            mesh->ops.send_to_router(mesh->ops.ctx, to->index, m);
    }
    jn_mesh_strs_free(&exist);
}

/* ---- receiver side ------------------------------------------------------ */

static void send_mar_CT(jn_mesh_t *mesh, jn_mesh_node_t *node)
{
    JN_ASSERT_CT(mesh);
    node->mar_pending = false;
    node->mar_outstanding = true;
    jn_message_t *m = jn_mesh_compose_mar(mesh->id, node->id, node->mobile_seq);
    if (m)
        mesh->ops.send_to_router(mesh->ops.ctx, node->index, m);
}

void jn_mesh_mobile_forget_CT(jn_mesh_t *mesh, jn_mesh_node_t *node)
{
    JN_ASSERT_CT(mesh);
    jn_hash_iter_t it;
    const uint8_t *key;
    size_t len;
    jn_hash_iter_init(node->mobile, &it);
    while (jn_hash_iter_next(&it, &key, &len, NULL)) {
        if (mesh->ops.mobile_removed)
            mesh->ops.mobile_removed(mesh->ops.ctx, node->index, key, len);
        jn_hash_remove(node->mobile, key, len, NULL);
    }
    node->mobile_seq = 0;
    node->ra_mobile_seq = 0;
    node->mar_pending = false;
    node->mar_outstanding = false;
}

void jn_mesh_mobile_requests_CT(jn_mesh_t *mesh)
{
    JN_ASSERT_CT(mesh);
    for (int i = 1; i < JN_MESH_MAX_ROUTERS; i++) {
        jn_mesh_node_t *x = mesh->nodes[i];
        if (!x || !x->mar_pending || !jn_mesh_node_reachable(x))
            continue;
        if (x->mobile_seq < x->ra_mobile_seq)
            send_mar_CT(mesh, x);
        else
            x->mar_pending = false; /* a MAU caught up meanwhile */
    }
}

static void add_key_CT(jn_mesh_t *mesh, jn_mesh_node_t *node, const char *key, size_t len, int hint)
{
    JN_ASSERT_CT(mesh);
    if (jn_hash_lookup(node->mobile, key, len))
        return;
    if (jn_hash_insert(node->mobile, key, len, jn_mesh_hint_value(hint)) != 0)
        return;
    if (mesh->ops.mobile_added)
        mesh->ops.mobile_added(mesh->ops.ctx, node->index, (const uint8_t *)key, len, hint);
}

static void remove_key_CT(jn_mesh_t *mesh, jn_mesh_node_t *node, const uint8_t *key, size_t len)
{
    JN_ASSERT_CT(mesh);
    if (mesh->ops.mobile_removed)
        mesh->ops.mobile_removed(mesh->ops.ctx, node->index, key, len);
    jn_hash_remove(node->mobile, key, len, NULL);
}

/* Absolute MAU: after adding `exist`, drop every other key of node. */
static int drop_missing_CT(jn_mesh_t *mesh, jn_mesh_node_t *node, const jn_mesh_strs_t *exist)
{
    JN_ASSERT_CT(mesh);
    jn_hash_t *keep = jn_hash_create(exist->n);
    if (!keep)
        return JN_ENOMEM;
    for (size_t i = 0; i < exist->n; i++)
        jn_hash_insert(keep, exist->s[i], exist->len[i], mesh);
    jn_hash_iter_t it;
    const uint8_t *key;
    size_t len;
    jn_hash_iter_init(node->mobile, &it);
    while (jn_hash_iter_next(&it, &key, &len, NULL))
        if (!jn_hash_lookup(keep, key, len))
            remove_key_CT(mesh, node, key, len);
    jn_hash_free(keep);
    return 0;
}

int jn_mesh_on_mau_CT(jn_mesh_t *mesh, jn_mesh_msg_t *m)
{
    JN_ASSERT_CT(mesh);
    jn_mesh_node_t *node = jn_mesh_node_find_CT(mesh, m->id, m->id_len);
    if (!node) {
        if (jn_mesh_complain_CT(mesh))
            JN_LOG(JN_LOG_MOD_ROUTER_MA, JN_LOG_ERROR, "Ignoring MAU from unknown router %s",
                   m->id);
        return 0;
    }
    bool absolute = m->has_exist;
    if (!absolute && m->mobile_seq != node->mobile_seq + 1 && !node->mar_outstanding) {
        JN_LOG(JN_LOG_MOD_ROUTER_MA, JN_LOG_DEBUG,
               "MAU from %s out of sequence (%llu after %llu): asking for all", node->id,
               (unsigned long long)m->mobile_seq, (unsigned long long)node->mobile_seq);
        send_mar_CT(mesh, node);
        return 0;
    }
    node->mar_outstanding = false;
    node->mobile_seq = m->mobile_seq;
    const jn_mesh_strs_t *adds = absolute ? &m->exist : &m->add;
    for (size_t i = 0; i < adds->n; i++)
        add_key_CT(mesh, node, adds->s[i], adds->len[i], (int)adds->val[i]);
    if (absolute)
        return drop_missing_CT(mesh, node, &m->exist);
    else {
        for (size_t i = 0; i < m->del.n; i++)
            if (jn_hash_lookup(node->mobile, m->del.s[i], m->del.len[i]))
                remove_key_CT(mesh, node, (const uint8_t *)m->del.s[i], m->del.len[i]);
    }
    return 0;
}

int jn_mesh_on_mar_CT(jn_mesh_t *mesh, jn_mesh_msg_t *m)
{
    JN_ASSERT_CT(mesh);
    jn_mesh_node_t *node = jn_mesh_node_find_CT(mesh, m->id, m->id_len);
    if (!node) {
        if (jn_mesh_complain_CT(mesh))
            JN_LOG(JN_LOG_MOD_ROUTER_MA, JN_LOG_ERROR, "Ignoring MAR from unknown router %s",
                   m->id);
        return 0;
    }
    if (m->have_seq < mesh->mobile_seq)
        send_absolute_CT(mesh, node);
    return 0;
}
