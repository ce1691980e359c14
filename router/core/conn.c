/*
 * conn.c — connections as the core sees them, and their work queues
 * (junction/core.h, "connections" and "work").
 *
 * Each connection has one MPSC queue of work items. The core thread is its
 * only producer; the connection's I/O thread is its consumer (the loop
 * that owns the connection at the time: a move between loops hands it
 * over, which orders their accesses). The core calls ops->wake only when a push found
 * the queue empty (jn_mpsc_push returned true); jn_core_conn_take_work_IO
 * drains until the queue is empty or the caller's array is full, so every
 * item pushed before the next wake is taken, and none is missed: if the
 * queue is left non-empty the caller was told to call again (it got max).
 *
 * Once the core has processed the close, it becomes the consumer: it frees
 * what the I/O thread did not take, then calls ops->conn_released.
 */
#include "delivery.h"

#include <junction/pool.h>
#include <junction/time.h>

#include <sched.h>
#include <stdlib.h>
#include <string.h>

static _Atomic(jn_pool_t *) conn_pool;
static _Atomic(jn_pool_t *) work_pool;

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

/* The heap strings of c (c itself is not freed). */
static void conn_free_fields(jn_core_conn_t *c)
{
    free(c->container_id);
    free(c->host);
    free(c->properties);
    free(c->ssl_proto);
    free(c->ssl_cipher);
    free(c->user);
    free(c->sasl_mechanism);
    free(c->endpoint_name);
    free(c->tenant);
}

jn_core_conn_t *jn_core_conn_opened_IO(jn_core_t *core, void *io_conn, const jn_conn_info_t *info)
{
    JN_ASSERT_IO_CALLER();
    jn_pool_t *pool = jn_pool_get_once(&conn_pool, "jn_core_conn", sizeof(jn_core_conn_t), 16);
    jn_core_conn_t *c = pool ? jn_pool_alloc(pool) : NULL;
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    c->container_id = dup_or_empty(info->container_id);
    c->host = dup_or_empty(info->host);
    if (info->properties && info->properties_len) {
        c->properties = malloc(info->properties_len);
        if (c->properties) {
            memcpy(c->properties, info->properties, info->properties_len);
            c->properties_len = info->properties_len;
        }
    }
    bool sec_failed = false;
    char **sec[] = {&c->ssl_proto, &c->ssl_cipher, &c->user, &c->sasl_mechanism,
                    &c->endpoint_name};
    const char *sec_in[] = {info->ssl_proto, info->ssl_cipher, info->user, info->sasl_mechanism,
                            info->endpoint_name};
    for (int i = 0; i < 5; i++)
        if (sec_in[i] && !(*sec[i] = strdup(sec_in[i])))
            sec_failed = true;
    if (!c->container_id || !c->host || (info->properties_len && !c->properties) || sec_failed) {
        for (int i = 0; i < 5; i++)
            free(*sec[i]);
        free(c->properties);
        free(c->container_id);
        free(c->host);
        jn_pool_free(pool, c);
        return NULL;
    }
    c->core = core;
    c->io_conn = io_conn;
    c->conn_id = info->conn_id;
    c->incoming = info->incoming;
    c->strip_inbound = info->strip_inbound;
    c->strip_outbound = info->strip_outbound;
    c->link_capacity = info->link_capacity;
    c->inter_router = info->inter_router;
    c->route_container = info->route_container;
    c->streaming_links = info->streaming_links;
    c->edge = info->edge;
    c->deny_dynamic_link_routes = info->deny_dynamic_link_routes;
    c->deny_admin_status_update = info->deny_admin_status_update;
    c->router_peer = c->inter_router || c->edge;
    c->cost = info->cost ? info->cost : 1;
    c->encrypted = info->encrypted;
    c->ssl_ssf = info->ssl_ssf;
    c->authenticated = info->authenticated;
    c->opened_us = jn_time_wall_us(); /* once per connection, for uptimeSeconds */
    if (info->tenant_vhost && info->tenant_vhost[0] && jn_tenant_conn_set(c, info->tenant_vhost)) {
        conn_free_fields(c);
        jn_pool_free(pool, c);
        return NULL;
    }
    if (c->router_peer)
        c->strip_inbound = c->strip_outbound = false; /* docs/protocol.md */
    atomic_init(&c->refcount, 1);
    atomic_init(&c->close_posted, false);
    jn_mpsc_init(&c->work);
    c->open_action.type = JN_ACT_CONN_OPENED;
    c->close_action.type = JN_ACT_CONN_CLOSED;
    jn_core_post(core, &c->open_action);
    return c;
}

const char *jn_core_conn_tenant(const jn_core_conn_t *conn)
{
    return conn->tenant;
}

void jn_core_conn_closed_IO(jn_core_conn_t *conn)
{
    JN_ASSERT_IO_CALLER();
    if (atomic_exchange_explicit(&conn->close_posted, true, memory_order_acq_rel))
        return;
    jn_core_post(conn->core, &conn->close_action);
}

void jn_conn_unref(jn_core_conn_t *conn)
{
    unsigned before = atomic_fetch_sub_explicit(&conn->refcount, 1, memory_order_acq_rel);
    JN_CHECK(before > 0);
    if (before != 1)
        return;
    conn_free_fields(conn);
    jn_pool_free(atomic_load_explicit(&conn_pool, memory_order_acquire), conn);
}

void jn_conn_opened_CT(jn_core_conn_t *conn)
{
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    conn->ct.next = core->ct.conns;
    if (core->ct.conns)
        core->ct.conns->ct.prev = conn;
    core->ct.conns = conn;
    jn_stat_add(&core->stats.connections, 1);
    jn_forward_figures_arm_CT(core);
    if (conn->edge)
        core->ct.edge_conns++;
    jn_router_conn_opened_CT(conn);
    if (conn->edge)
        jn_edge_conn_opened_CT(conn);
    jn_lr_conn_opened_CT(conn);
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_DEBUG,
           "[C%" PRIu64 "] Connection opened: container=%s host=%s %s", conn->conn_id,
           conn->container_id, conn->host, conn->incoming ? "incoming" : "outgoing");
}

void jn_conn_closed_CT(jn_core_conn_t *conn)
{
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    conn->ct.closed = true; /* from here on, work for it is dropped */
    jn_router_conn_closed_CT(conn); /* before its links: no route through it */
    while (conn->ct.links)
        jn_link_detached_CT(conn->ct.links, true);
    jn_stream_conn_closed_CT(conn); /* deliveries waiting for a streaming link */
    jn_lr_conn_closed_CT(conn);
    if (conn->edge) {
        core->ct.edge_conns--;
        jn_edge_conn_closed_CT(conn);
    }
    /* The I/O thread takes no more work: the core is the consumer now. */
    jn_mpsc_node_t *nodes[64];
    for (;;) {
        size_t n = jn_mpsc_drain(&conn->work, nodes, 64);
        for (size_t i = 0; i < n; i++)
            jn_work_free(JN_CONTAINER_OF(nodes[i], jn_work_t, node));
        if (n == 0 && jn_mpsc_empty(&conn->work))
            break;
    }
    if (conn->ct.prev)
        conn->ct.prev->ct.next = conn->ct.next;
    else
        core->ct.conns = conn->ct.next;
    if (conn->ct.next)
        conn->ct.next->ct.prev = conn->ct.prev;
    jn_stat_add(&core->stats.connections, -1);
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_DEBUG, "[C%" PRIu64 "] Connection closed", conn->conn_id);
    core->ops.conn_released(conn->io_conn);
    jn_conn_unref(conn); /* the life reference */
}

/* ---- work ------------------------------------------------------------------ */

jn_work_t *jn_work_new_CT(jn_core_t *core, jn_work_type_t type)
{
    JN_ASSERT_CT(core);
    jn_pool_t *pool = jn_pool_get_once(&work_pool, "jn_work", sizeof(jn_work_t), 0);
    jn_work_t *w = pool ? jn_pool_alloc(pool) : NULL;
    if (!w)
        return NULL;
    memset(w, 0, sizeof *w);
    w->type = type;
    return w;
}

int jn_work_link_CT(jn_core_link_t *link, jn_work_type_t type, const char *address,
                    const char *condition, const char *description, uint32_t credit)
{
    JN_ASSERT_CT(link->conn->core);
    jn_core_conn_t *conn = link->conn;
    jn_work_t *w = jn_work_new_CT(conn->core, type);
    bool failed = w == NULL;
    if (w) {
        w->link = jn_link_ref(link);
        w->credit = credit;
        w->address = jn_strdup_opt(address, &failed);
        w->condition = jn_strdup_opt(condition, &failed);
        w->description = jn_strdup_opt(description, &failed);
    }
    if (failed) {
        if (w)
            jn_work_free(w);
        JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_ERROR,
               "[C%" PRIu64 "][L%" PRIu64 "] Out of memory for link work", conn->conn_id,
               link->ct.id);
        return JN_ENOMEM;
    }
    jn_work_push_CT(conn, w);
    return 0;
}

int jn_work_drain_CT(jn_core_link_t *link, uint32_t credit)
{
    JN_ASSERT_CT(link->conn->core);
    jn_work_t *w = jn_work_new_CT(link->conn->core, JN_WORK_LINK_CREDIT);
    if (!w)
        return JN_ENOMEM;
    w->link = jn_link_ref(link);
    w->drain = true;
    w->credit = credit;
    jn_work_push_CT(link->conn, w);
    return 0;
}

/* A delivery work item for dlv: dlv's own (delivery.h) when the I/O
 * thread gave it back, else one from the pool (NULL: ENOMEM). Only the
 * core sets work_busy, so a load then a store is enough; the acquire
 * pairs with the release of whoever freed it last (jn_work_free). */
static jn_work_t *dlv_work_new_CT(jn_core_t *core, jn_delivery_t *dlv, jn_work_type_t type)
{
    JN_ASSERT_CT(core);
    if (atomic_load_explicit(&dlv->work_busy, memory_order_acquire))
        return jn_work_new_CT(core, type);
    atomic_store_explicit(&dlv->work_busy, true, memory_order_relaxed);
    jn_work_t *w = &dlv->work;
    *w = (jn_work_t){.type = type, .home = JN_WORK_HOME_DLV};
    return w;
}

int jn_work_dlv_slow_CT(jn_delivery_t *dlv, jn_work_type_t type, uint64_t disp_type,
                        const jn_disposition_t *disp, bool settled)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    jn_core_conn_t *conn = dlv->link->conn;
    jn_work_t *w = dlv_work_new_CT(conn->core, dlv, type);
    if (w && disp && jn_disposition_copy(&w->disp, disp) != 0) {
        w->dlv = jn_dlv_ref(dlv); /* jn_work_free drops it */
        jn_work_free(w);
        w = NULL;
    }
    if (!w) {
        JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_ERROR,
               "[C%" PRIu64 "][L%" PRIu64 "] Out of memory for delivery work", conn->conn_id,
               dlv->link->ct.id);
        return JN_ENOMEM;
    }
    if (!disp)
        w->disp.type = disp_type;
    w->dlv = jn_dlv_ref(dlv);
    w->link = dlv->link; /* kept alive by the delivery reference */
    w->settled = settled;
    jn_work_push_CT(conn, w);
    return 0;
}

size_t jn_core_conn_take_work_IO(jn_core_conn_t *conn, jn_work_t **out, size_t max)
{
    JN_ASSERT_IO_CALLER();
    jn_mpsc_node_t *nodes[64];
    size_t taken = 0;
    while (taken < max) {
        size_t want = max - taken < 64 ? max - taken : 64;
        size_t n = jn_mpsc_drain(&conn->work, nodes, want);
        for (size_t i = 0; i < n; i++)
            out[taken++] = JN_CONTAINER_OF(nodes[i], jn_work_t, node);
        if (n == want)
            continue;
        if (jn_mpsc_empty(&conn->work))
            break;
        /* The core is between the two steps of a push: its wake went to
         * an earlier transition, so this item must be taken now. */
        sched_yield();
    }
    return taken;
}

/* An item that lives in its delivery (home JN_WORK_HOME_DLV) is the
 * core's to fill again once given back: the release orders the taker's
 * reads of it before the core's next writes (dlv_work_new_CT). */
static inline void dlv_work_give_back(jn_work_t *work)
{
    jn_disposition_clear(&work->disp);
    atomic_store_explicit(&work->dlv->work_busy, false, memory_order_release);
}

jn_delivery_t *jn_work_take_dlv(jn_work_t *work)
{
    jn_delivery_t *dlv = work->dlv;
    if (JN_LIKELY(work->home == JN_WORK_HOME_DLV)) {
        dlv_work_give_back(work); /* its reference passes to the caller */
        return dlv;
    }
    if (dlv) {
        work->dlv = NULL;
        work->link = NULL; /* borrowed from dlv */
    }
    jn_work_free(work);
    return dlv;
}

void jn_work_free(jn_work_t *work)
{
    if (!work)
        return;
    if (work->home == JN_WORK_HOME_DLV) {
        jn_delivery_t *dlv = work->dlv;
        dlv_work_give_back(work);
        jn_dlv_unref(dlv); /* the item's reference (dlv holds the item) */
        return;
    }
    if (work->dlv)
        jn_dlv_unref(work->dlv); /* work->link was borrowed from it */
    else if (work->link)
        jn_link_unref(work->link);
    if (work->type == JN_WORK_LINK_ATTACH)
        free(work->attach.name);
    else
        jn_disposition_clear(&work->disp);
    if (JN_UNLIKELY(work->address || work->condition || work->description)) {
        free(work->address); /* link work's strings: delivery work has none */
        free(work->condition);
        free(work->description);
    }
    jn_pool_free(atomic_load_explicit(&work_pool, memory_order_acquire), work);
}
