/*
 * edge.c — the interior router's side of edge routers (docs/design.md,
 * "Edge routers"; the wire facts in docs/protocol.md, "Edge routers").
 *
 * An edge router connects to a listener with role edge. Besides ordinary
 * endpoint links (its per-address senders and receivers, its anonymous
 * uplink sender), which the core routes as it routes a client's, it
 * attaches four kinds of links that the I/O layer recognises on such a
 * connection (jn_link_type_t):
 *
 *   downlink   the router's outgoing link whose source carries the
 *              capability qd.router-edge-downlink: the one consumer of the
 *              address H<edge-id> (the edge's container id), which the mesh
 *              advertises like a mobile address, so that _edge/<edge-id>/...
 *              reaches the edge from anywhere. A second edge with an id
 *              already attached has its connection closed.
 *   tracking   the router's outgoing link with source
 *              _$qd.edge_addr_tracking: for each sender the edge attached to
 *              an address, the router tells, pre-settled, [key, bool]:
 *              whether the address has a destination other than that edge.
 *              It is told when the sender is first looked at for credit and
 *              each time the answer changes.
 *   heartbeat  an incoming link with target _$qd.edge_heartbeat, on any
 *              connection but an inter-router one, as 1.19 (an edge's, or a
 *              client's): each delivery is noted and consumed; once one is
 *              attached, a connection silent for more than
 *              JN_EDGE_HEARTBEAT_TIMEOUT_MS is closed (checked on the mesh's
 *              1 s tick, ct.hb_links). A receiver on it is refused.
 *   lookup     an incoming link with target _$qd.addr_lookup: link-route
 *              lookups, answered by edge_lookup.c (credit 1, as 1.19).
 *
 * The edge's own link-route lookup and management clients, and the
 * link-route proxies, are edge_lookup.c's.
 *
 * A delivery from an edge never goes back to that edge (forward.c, through
 * jn_route_ctx_t.from_edge): the edge delivered to its own consumers
 * already. Core thread only.
 */
#include "address_config.h"
#include "delivery.h"

#include <junction/compose.h>
#include <junction/decoder.h>
#include <junction/time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void own_link_attached_CT(jn_core_link_t *link);
static void own_link_detached_CT(jn_core_link_t *link);

/* Close conn with an error (JN_WORK_CONN_CLOSE); abort: its transport is
 * cut at once, with no close frame, for a peer whose close would never
 * come. One work item, so the I/O side never sends the close of a
 * connection it is about to cut. */
static void close_conn_CT(jn_core_conn_t *conn, const char *condition, const char *description,
                          bool abort)
{
    JN_ASSERT_CT(conn->core);
    jn_work_t *w = jn_work_new_CT(conn->core, JN_WORK_CONN_CLOSE);
    if (!w)
        return;
    w->condition = strdup(condition);
    w->description = strdup(description);
    w->abort = abort;
    jn_work_push_CT(conn, w);
}

/* The downlink: bind it to H<edge-id>. */
static void downlink_attached_CT(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    const char *id = conn->container_id ? conn->container_id : "";
    size_t n = strlen(id);
    if (n == 0 || n > 127 || strchr(id, '/')) {
        jn_link_refuse_CT(link, "amqp:invalid-field", "edge router id missing or not valid");
        return;
    }
    uint8_t key[130];
    key[0] = JN_ADDR_CLASS_EDGE_SUMMARY;
    memcpy(key + 1, id, n);
    jn_addr_t *addr = jn_hash_lookup(core->ct.addrs, key, n + 1);
    if (addr && addr->n_consumers > 0) {
        const jn_core_link_t *first = addr->consumers[0];
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_CRITICAL,
               "[C%" PRIu64 "] Duplicate edge id: the edge router at %s has id '%s', as the edge "
               "already attached on [C%" PRIu64 "]; connection refused",
               conn->conn_id, conn->host, id, first->conn->conn_id);
        jn_link_refuse_CT(link, "amqp:not-allowed", "duplicate edge router id");
        close_conn_CT(conn, "amqp:not-allowed",
                      "duplicate edge router id: an edge with this id is already attached", false);
        return;
    }
    if (!addr && jn_addr_get_key_CT(core, key, n + 1, JN_DIST_CLOSEST, &addr) != 0) {
        jn_link_refuse_CT(link, "amqp:resource-limit-exceeded", "out of memory");
        return;
    }
    if (!addr || jn_addr_add_consumer_CT(addr, link) != 0) {
        if (addr)
            jn_addr_release_if_unused_CT(core, addr);
        jn_link_refuse_CT(link, "amqp:resource-limit-exceeded", "out of memory");
        return;
    }
    addr->distribution = JN_DIST_CLOSEST;
    link->ct.state = JN_LINK_ST_ATTACHED;
    jn_work_link_CT(link, JN_WORK_LINK_OPEN, NULL, NULL, NULL, 0);
    jn_link_producers_dirty_CT(addr);
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO, "[C%" PRIu64 "] Edge router '%s' attached",
           conn->conn_id, id);
}

void jn_edge_link_attached_CT(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    JN_ASSERT_CT(conn->core);
    if (link->local) {
        own_link_attached_CT(link); /* an edge router's own uplink link */
        return;
    }
    switch (link->type) {
    case JN_LINK_EDGE_DOWNLINK:
        downlink_attached_CT(link);
        return;
    case JN_LINK_EDGE_TRACKING:
        if (conn->ct.edge_tracking) {
            jn_link_refuse_CT(link, "amqp:not-allowed", "an address-tracking link is attached");
            return;
        }
        conn->ct.edge_tracking = link;
        link->ct.state = JN_LINK_ST_ATTACHED;
        jn_work_link_CT(link, JN_WORK_LINK_OPEN, NULL, NULL, NULL, 0);
        /* tell it about the senders attached before it */
        for (jn_core_link_t *l = conn->ct.links; l; l = l->ct.conn_next) {
            if (l->dir == JN_LINK_INCOMING && l->ct.addr) {
                l->ct.edge_reported = 0;
                jn_link_mark_dirty_CT(l);
            }
        }
        return;
    case JN_LINK_EDGE_LOOKUP:
        if (link->dir == JN_LINK_OUTGOING || !conn->edge) {
            /* only an edge router's sender may ask (as 1.19) */
            jn_link_refuse_CT(link, "qd:forbidden", "Connectivity to the node is forbidden");
            return;
        }
        link->ct.anonymous = true; /* bound to no address: served here */
        /* one request at a time, credit 1 replenished per request, as
         * 1.19 grants it (the core alone reads capacity) */
        link->capacity = 1;
        link->ct.state = JN_LINK_ST_ATTACHED;
        jn_work_link_CT(link, JN_WORK_LINK_OPEN, NULL, NULL, NULL, 0);
        jn_link_mark_dirty_CT(link);
        return;
    case JN_LINK_EDGE_HEARTBEAT:
        if (link->dir == JN_LINK_OUTGOING || conn->ct.edge_hb) {
            /* closed without an error condition, as 1.19 */
            link->ct.state = JN_LINK_ST_REFUSED;
            JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO,
                   "[C%" PRIu64 "][L%" PRIu64 "] Link refused: not a heartbeat sender",
                   conn->conn_id, link->ct.id);
            jn_work_link_CT(link, JN_WORK_LINK_CLOSE, NULL, NULL, NULL, 0);
            return;
        }
        link->ct.anonymous = true; /* bound to no address: served here */
        link->capacity = 2;        /* as 1.19 grants it, replenished per beat */
        link->ct.state = JN_LINK_ST_ATTACHED;
        conn->ct.edge_hb = true;
        conn->core->ct.hb_links++; /* the tick watches it (jn_edge_tick_CT) */
        conn->ct.edge_hb_ms = (int64_t)jn_time_mono_ms();
        jn_work_link_CT(link, JN_WORK_LINK_OPEN, NULL, NULL, NULL, 0);
        jn_link_mark_dirty_CT(link);
        return;
    default:
        jn_link_refuse_CT(link, "qd:forbidden", "Connectivity to the node is forbidden");
        return;
    }
}

void jn_edge_link_detached_CT(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    JN_ASSERT_CT(conn->core);
    if (link->local) {
        own_link_detached_CT(link);
        return;
    }
    if (conn->ct.edge_tracking == link)
        conn->ct.edge_tracking = NULL;
    if (link->type == JN_LINK_EDGE_HEARTBEAT && link->dir == JN_LINK_INCOMING &&
        link->ct.state != JN_LINK_ST_REFUSED && conn->ct.edge_hb) {
        conn->ct.edge_hb = false;
        conn->core->ct.hb_links--;
    }
}

void jn_edge_heartbeat_arrived_CT(jn_delivery_t *dlv)
{
    jn_core_conn_t *conn = dlv->link->conn;
    JN_ASSERT_CT(conn->core);
    conn->ct.edge_hb_ms = (int64_t)jn_time_mono_ms();
    dlv->ct.served = true;
    jn_forward_to_links_CT(dlv, NULL, 0, false); /* consumed */
}

void jn_edge_tick_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    int64_t now = (int64_t)jn_time_mono_ms();
    for (jn_core_conn_t *c = core->ct.conns; c; c = c->ct.next) {
        if (!c->ct.edge_hb || c->ct.closed ||
            now - c->ct.edge_hb_ms <= JN_EDGE_HEARTBEAT_TIMEOUT_MS)
            continue;
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_WARNING,
               "[C%" PRIu64 "] Edge router '%s' sent no heartbeat for %d ms: connection closed",
               c->conn_id, c->container_id ? c->container_id : "", JN_EDGE_HEARTBEAT_TIMEOUT_MS);
        c->ct.edge_hb = false; /* closed once */
        core->ct.hb_links--;
        /* a client's transport is cut at once, as 1.19 does; an edge
         * router's gets the close */
        close_conn_CT(c, "amqp:resource-limit-exceeded", "edge heartbeat timed out", !c->edge);
    }
}

void jn_edge_stalled_CT(jn_core_t *core, int64_t late_ms)
{
    JN_ASSERT_CT(core);
    for (jn_core_conn_t *c = core->ct.conns; c; c = c->ct.next)
        if (c->edge && c->ct.edge_hb)
            c->ct.edge_hb_ms += late_ms;
}

/* addr has a destination other than links on conn. */
static bool has_other_destination_CT(const jn_addr_t *addr, const jn_core_conn_t *conn)
{
    JN_ASSERT_CT(conn->core);
    if (addr->n_remote > 0 || addr->inproc)
        return true;
    for (uint32_t i = 0; i < addr->n_consumers; i++)
        if (addr->consumers[i]->conn != conn)
            return true;
    return false;
}

/* Compose [key, has] (amqp-value list) and send it pre-settled on link. */
static void send_tracking_CT(jn_core_t *core, jn_core_link_t *link, const jn_addr_t *addr, bool has)
{
    JN_ASSERT_CT(core);
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_compose_props_t props = {.to = NULL, .fields = 3};
    jn_compose_head(&e, &props);
    jn_enc_descriptor_ulong(&e, JN_SECTION_AMQP_VALUE);
    jn_enc_list_begin(&e);
    jn_enc_string(&e, (const char *)addr->key, addr->key_len);
    jn_enc_bool(&e, has);
    jn_enc_list_end(&e);
    int rc = 0;
    jn_message_t *msg = jn_compose_message(&e, JN_DEPTH_PROPERTIES, &rc);
    if (!msg) {
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_ERROR, "Cannot compose an address-tracking update: %s",
               jn_strerror(rc));
        return;
    }
    jn_delivery_t *dlv = jn_delivery_internal_CT(core, msg);
    if (!dlv) {
        jn_message_unref(msg);
        return;
    }
    jn_forward_to_links_CT(dlv, &link, 1, true);
}

void jn_edge_track_CT(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    jn_core_link_t *tracking = conn->ct.edge_tracking;
    if (!tracking || tracking->ct.state != JN_LINK_ST_ATTACHED ||
        link->ct.state != JN_LINK_ST_ATTACHED || link->dir != JN_LINK_INCOMING || !link->ct.addr)
        return;
    uint8_t want = has_other_destination_CT(link->ct.addr, conn) ? 2 : 1;
    if (want == link->ct.edge_reported)
        return;
    link->ct.edge_reported = want;
    send_tracking_CT(core, tracking, link->ct.addr, want == 2);
}

void jn_edge_consumers_changed_CT(jn_core_t *core, jn_addr_t *addr)
{
    JN_ASSERT_CT(core);
    for (uint32_t i = 0; i < addr->n_producers; i++)
        if (addr->producers[i]->conn->edge)
            jn_link_mark_dirty_CT(addr->producers[i]);
}

jn_core_link_t *jn_edge_pick_other_CT(jn_addr_t *addr, const jn_core_conn_t *conn)
{
    JN_ASSERT_CT(conn->core);
    uint32_t n = addr->n_consumers;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = (addr->next + k) % n;
        if (addr->consumers[i]->conn != conn) {
            addr->next = (i + 1) % n;
            return addr->consumers[i];
        }
    }
    return NULL;
}

/* ---- the edge router's side ------------------------------------------------ */

/* Ask for an uplink link (jn_edge_ask_attach_CT), with a waypoint
 * capability of that ordinal when not 0, with qd.fallback when fallback
 * (the interior binds it to the address's fallback phase, as 1.19). */
static void ask_attach_CT(jn_core_t *core, jn_link_dir_t dir, const char *address, uint8_t kind,
                          uint8_t waypoint, bool fallback)
{
    JN_ASSERT_CT(core);
    jn_core_conn_t *up = core->ct.uplink;
    if (!up || up->ct.closed)
        return;
    char name[40];
    snprintf(name, sizeof name, "qdlink.edge%" PRIu64, ++core->ct.next_edge_link);
    jn_work_t *w = jn_work_new_CT(core, JN_WORK_LINK_ATTACH);
    if (!w)
        return;
    w->attach.dir = dir;
    w->attach.name = strdup(name);
    w->attach.edge = kind;
    w->attach.waypoint = waypoint;
    w->attach.fallback = fallback;
    w->address = address ? strdup(address) : NULL;
    if (!w->attach.name || (address && !w->address)) {
        jn_work_free(w);
        return;
    }
    jn_work_push_CT(up, w);
}

void jn_edge_ask_attach_CT(jn_core_t *core, jn_link_dir_t dir, const char *address, uint8_t kind)
{
    ask_attach_CT(core, dir, address, kind, 0, false);
}

/* The waypoint ordinal an address link of the edge's for phase (a
 * digit) of address needs, so that the interior binds it to that phase
 * (as 1.19): none (0) when the interior's own configuration gives it that
 * phase anyway (the edge's and the interior's address entities must
 * match, as with 1.19): the egress phase for our incoming link (the
 * interior's outgoing one), the ingress phase for our outgoing one. */
static uint8_t addr_link_waypoint_CT(jn_core_t *core, const char *address, char phase, bool in)
{
    int p = phase - '0';
    int i = core->config.count ? jn_addr_config_match(&core->config, address, strlen(address)) : -1;
    int egress = i >= 0 ? core->config.entries[i].egress_phase : 0;
    int ingress = i >= 0 ? core->config.entries[i].ingress_phase : 0;
    if (in)
        return p == egress || p + 1 > 9 ? 0 : (uint8_t)(p + 1);
    return p == ingress || p < 1 ? 0 : (uint8_t)p;
}

static void close_link_CT(jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    if (link->ct.state == JN_LINK_ST_ATTACHED)
        jn_work_link_CT(link, JN_WORK_LINK_CLOSE, NULL, NULL, NULL, 0);
}

void jn_edge_sent_all_CT(jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    link->ct.close_when_sent = false;
    close_link_CT(link);
}

/* Bind / unbind the address's uplink sender as one of its consumers, as
 * the interior's tracking says. */
static void bind_out_CT(jn_core_t *core, jn_addr_t *addr, bool bind)
{
    JN_ASSERT_CT(core);
    jn_core_link_t *out = addr->edge_out;
    if (!out || out->ct.state != JN_LINK_ST_ATTACHED)
        return;
    bool bound = out->ct.addr == addr;
    if (bind && !bound) {
        if (jn_addr_add_consumer_CT(addr, out) == 0 && addr->n_consumers == 1)
            jn_link_producers_dirty_CT(addr);
    } else if (!bind && bound) {
        /* senders lose credit when none is left; copies already queued on
         * it still go up (the interior releases what it cannot place) */
        jn_addr_remove_link_CT(core, out);
    }
}

/* Ask for or close addr's links on the uplink: a receiver while it has
 * consumers here, a sender while it has producers (fallback: both with
 * qd.fallback, and no waypoint). */
static void edge_addr_links_CT(jn_core_t *core, jn_addr_t *addr, uint32_t consumers,
                               uint32_t producers, bool fallback)
{
    JN_ASSERT_CT(core);
    char address[256];
    size_t n = addr->key_len - 2;
    if (n >= sizeof address)
        return;
    memcpy(address, addr->key + 2, n);
    address[n] = '\0';
    if (consumers > 0 && !addr->edge_in_asked) {
        addr->edge_in_asked = true;
        ask_attach_CT(core, JN_LINK_INCOMING, address, JN_LINK_EDGE_ADDR,
                      fallback ? 0 : addr_link_waypoint_CT(core, address, (char)addr->key[1], true),
                      fallback);
    } else if (consumers == 0 && addr->edge_in_asked) {
        addr->edge_in_asked = false;
        if (addr->edge_in)
            close_link_CT(addr->edge_in);
    }
    if (producers > 0 && addr->edge_out && addr->edge_out->ct.close_when_sent) {
        addr->edge_out->ct.close_when_sent = false; /* a producer again: it stays */
        addr->edge_out_asked = true;
    } else if (producers > 0 && !addr->edge_out_asked) {
        addr->edge_out_asked = true;
        ask_attach_CT(core, JN_LINK_OUTGOING, address, JN_LINK_EDGE_ADDR,
                      fallback ? 0
                               : addr_link_waypoint_CT(core, address, (char)addr->key[1], false),
                      fallback);
    } else if (producers == 0 && addr->edge_out_asked) {
        addr->edge_out_asked = false;
        /* copies of the producers that went may still wait for the
         * interior's credit: they go up first (pre-settled ones would be
         * lost, unsettled ones released, by a close now) */
        if (addr->edge_out && addr->edge_out->ct.undelivered.head)
            addr->edge_out->ct.close_when_sent = true;
        else if (addr->edge_out)
            close_link_CT(addr->edge_out);
    }
}

/* An edge router: the fallback phase of addr (enableFallback), made when
 * addr has senders here (producers) and held while it has them, so that
 * the uplink sender that proxies them to fallback destinations beyond
 * this edge can be asked for; NULL when there is none. */
static jn_addr_t *fallback_held_CT(jn_core_t *core, jn_addr_t *addr, uint32_t producers)
{
    JN_ASSERT_CT(core);
    jn_addr_t *fb = jn_addr_fallback_CT(core, addr);
    if (!fb && producers > 0 && addr->key_len <= 257) {
        uint8_t key[257];
        memcpy(key, addr->key, addr->key_len);
        key[1] = 'F';
        if (jn_addr_get_key_CT(core, key, addr->key_len, JN_DIST_BALANCED, &fb) != 0)
            fb = NULL;
    }
    if (fb)
        fb->edge_hold = producers > 0;
    return fb;
}

/* addr's local producers: not its uplink receiver's; for a fallback
 * phase, its primary's (they are what the fallback's uplink sender
 * proxies). */
static uint32_t local_producers_CT(jn_core_t *core, const jn_addr_t *addr)
{
    JN_ASSERT_CT(core);
    if (addr->key[1] == 'F') {
        addr = jn_addr_primary_CT(core, addr);
        if (!addr || !addr->fallback)
            return 0;
    }
    uint32_t producers = addr->n_producers;
    if (addr->edge_in && addr->edge_in->ct.addr == addr)
        producers--;
    return producers;
}

/* jn_edge_local_changed_CT; follow: addr's fallback phase follows (not
 * while activate_CT walks the addresses: it visits that phase itself). */
static void local_changed_CT(jn_core_t *core, jn_addr_t *addr, bool follow)
{
    JN_ASSERT_CT(core);
    if (!core->edge_mode || addr->key_len < 3 || addr->key[0] != JN_ADDR_CLASS_MOBILE ||
        ((addr->key[1] < '0' || addr->key[1] > '9') && addr->key[1] != 'F'))
        return; /* mobile addresses of a phase (waypoints too) and fallbacks */
    bool fallback = addr->key[1] == 'F';
    uint32_t producers = local_producers_CT(core, addr);
    jn_addr_t *fb = follow && addr->fallback ? fallback_held_CT(core, addr, producers) : NULL;
    jn_core_conn_t *up = core->ct.uplink;
    if (up && !up->ct.closed) {
        uint32_t consumers = addr->n_consumers;
        if (addr->edge_out && addr->edge_out->ct.addr == addr)
            consumers--;
        edge_addr_links_CT(core, addr, consumers, producers, fallback);
        if (fb)
            local_changed_CT(core, fb, false);
    }
    if (fb)
        jn_addr_release_if_unused_CT(core, fb);
}

void jn_edge_local_changed_CT(jn_core_t *core, jn_addr_t *addr)
{
    local_changed_CT(core, addr, true);
}

/* Make conn the active uplink: attach the anonymous sender, the downlink
 * and the tracking receiver, and the per-address links. */
static void activate_CT(jn_core_t *core, jn_core_conn_t *conn)
{
    JN_ASSERT_CT(core);
    core->ct.uplink = conn;
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO, "[C%" PRIu64 "] Edge uplink active: interior '%s' at %s",
           conn->conn_id, conn->container_id ? conn->container_id : "", conn->host);
    jn_edge_ask_attach_CT(core, JN_LINK_OUTGOING, NULL, JN_LINK_EDGE_UPLINK);
    jn_edge_ask_attach_CT(core, JN_LINK_INCOMING, core->router_id, JN_LINK_EDGE_DOWNLINK);
    jn_edge_ask_attach_CT(core, JN_LINK_INCOMING, "_$qd.edge_addr_tracking", JN_LINK_EDGE_TRACKING);
    jn_edge_ask_attach_CT(core, JN_LINK_OUTGOING, "_$qd.edge_heartbeat", JN_LINK_EDGE_HEARTBEAT);
    jn_edge_clients_activate_CT(core); /* link-route lookups and proxies */
    jn_hash_iter_t it;
    void *value;
    jn_hash_iter_init(core->ct.addrs, &it);
    while (jn_hash_iter_next(&it, NULL, NULL, &value)) {
        jn_addr_t *addr = value;
        addr->edge_in_asked = addr->edge_out_asked = false;
    }
    /* (a fallback phase its primary's senders need is held: it exists) */
    jn_hash_iter_init(core->ct.addrs, &it);
    while (jn_hash_iter_next(&it, NULL, NULL, &value))
        local_changed_CT(core, value, false);
}

void jn_edge_conn_opened_CT(jn_core_conn_t *conn)
{
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    if (!core->edge_mode || conn->incoming || !conn->edge)
        return;
    if (!core->ct.uplink)
        activate_CT(core, conn);
}

void jn_edge_conn_closed_CT(jn_core_conn_t *conn)
{
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    if (!core->edge_mode || core->ct.uplink != conn)
        return;
    core->ct.uplink = NULL;
    core->ct.uplink_out = NULL;
    core->ct.edge_hb_out = NULL;
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO, "[C%" PRIu64 "] Edge uplink lost", conn->conn_id);
    jn_edge_clients_lost_CT(core);
    jn_hash_iter_t it;
    void *value;
    jn_hash_iter_init(core->ct.addrs, &it);
    while (jn_hash_iter_next(&it, NULL, NULL, &value)) {
        jn_addr_t *addr = value;
        addr->edge_in_asked = addr->edge_out_asked = addr->edge_dest_up = false;
        addr->edge_reported = false;
    }
    for (jn_core_conn_t *c = core->ct.conns; c; c = c->ct.next) {
        if (c != conn && c->edge && !c->incoming && !c->ct.closed) {
            activate_CT(core, c); /* failover: the next open one */
            return;
        }
    }
}

jn_core_link_t *jn_edge_uplink_for_CT(jn_core_t *core, const jn_delivery_t *dlv)
{
    JN_ASSERT_CT(core);
    jn_core_link_t *out = core->ct.uplink_out;
    if (!out || out->ct.state != JN_LINK_ST_ATTACHED || dlv->link->conn == out->conn)
        return NULL;
    return out;
}

/* The address an edge link of ours serves or is asked for, by its
 * terminus address (the plain address: the interior applies its own
 * address configuration, as 1.19's edge expects) and direction: of the
 * phases of that address, the first that asked for a link of link's
 * direction and has none yet, or whose link it is (`mine`). */
static jn_addr_t *edge_link_addr_CT(jn_core_t *core, const jn_core_link_t *link, bool mine)
{
    JN_ASSERT_CT(core);
    if (!link->address)
        return NULL;
    size_t n = strlen(link->address);
    uint8_t key[260];
    if (n + 2 > sizeof key)
        return NULL;
    key[0] = JN_ADDR_CLASS_MOBILE;
    memcpy(key + 2, link->address, n);
    bool in = link->dir == JN_LINK_INCOMING; /* edge_in: for local consumers */
    /* a fallback's link (qd.fallback) serves the fallback phase only */
    for (char phase = link->fallback ? 'F' : '0'; phase <= (link->fallback ? 'F' : '9'); phase++) {
        key[1] = (uint8_t)phase;
        jn_addr_t *addr = jn_hash_lookup(core->ct.addrs, key, n + 2);
        if (!addr)
            continue;
        const jn_core_link_t *have = in ? addr->edge_in : addr->edge_out;
        bool asked = in ? addr->edge_in_asked : addr->edge_out_asked;
        if (mine ? have == link : (asked && !have))
            return addr;
    }
    return NULL;
}

/* One of our own uplink links was reported attached. */
static void own_link_attached_CT(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    if (conn != core->ct.uplink) {
        link->ct.state = JN_LINK_ST_ATTACHED;
        close_link_CT(link); /* the uplink changed meanwhile */
        return;
    }
    bool in = link->dir == JN_LINK_INCOMING;
    link->ct.state = JN_LINK_ST_ATTACHED;
    switch (link->type) {
    case JN_LINK_EDGE_UPLINK: {
        static const uint8_t key[] = "L_edge";
        jn_addr_t *addr = core->ct.edge_addr;
        if (!addr && jn_addr_get_key_CT(core, key, sizeof key - 1, JN_DIST_CLOSEST, &addr) == 0 &&
            addr) {
            addr->permanent = true;
            core->ct.edge_addr = addr;
        }
        if (!addr || jn_addr_add_consumer_CT(addr, link) != 0) {
            close_link_CT(link);
            return;
        }
        core->ct.uplink_out = link;
        return;
    }
    case JN_LINK_EDGE_DOWNLINK:
    case JN_LINK_EDGE_TRACKING:
        link->ct.anonymous = true; /* routed by each message / served here */
        jn_link_mark_dirty_CT(link);
        return;
    case JN_LINK_EDGE_HEARTBEAT:
        link->ct.anonymous = true; /* bound to no address */
        core->ct.edge_hb_out = link;
        return;
    case JN_LINK_EDGE_LOOKUP:
    case JN_LINK_EDGE_REPLY:
    case JN_LINK_EDGE_MGMT:
        jn_edge_client_link_attached_CT(link);
        return;
    case JN_LINK_EDGE_ADDR: {
        jn_addr_t *addr = edge_link_addr_CT(core, link, false);
        if (!addr) {
            close_link_CT(link);
            return;
        }
        if (in) {
            if (addr->edge_in || !addr->edge_in_asked || jn_addr_add_producer_CT(addr, link) != 0) {
                jn_addr_release_if_unused_CT(core, addr);
                close_link_CT(link);
                return;
            }
            addr->edge_in = link;
            jn_link_mark_dirty_CT(link);
        } else {
            if (addr->edge_out || !addr->edge_out_asked) {
                jn_addr_release_if_unused_CT(core, addr);
                close_link_CT(link);
                return;
            }
            addr->edge_out = link;
            link->ct.anonymous = true; /* bound only while the interior says */
            if (addr->edge_dest_up)
                bind_out_CT(core, addr, true);
            jn_addr_release_if_unused_CT(core, addr);
        }
        return;
    }
    default:
        close_link_CT(link);
        return;
    }
}

static void own_link_detached_CT(jn_core_link_t *link)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    if (core->ct.uplink_out == link)
        core->ct.uplink_out = NULL;
    if (core->ct.edge_hb_out == link)
        core->ct.edge_hb_out = NULL;
    jn_edge_client_link_detached_CT(link);
    if (link->type != JN_LINK_EDGE_ADDR)
        return;
    jn_addr_t *addr = link->ct.addr ? link->ct.addr : edge_link_addr_CT(core, link, true);
    if (!addr)
        return;
    if (addr->edge_in == link)
        addr->edge_in = NULL;
    if (addr->edge_out == link) {
        addr->edge_out = NULL;
        addr->edge_reported = addr->edge_dest_up = false;
        if (link->ct.addr == addr)
            link->ct.anonymous = false; /* bound: the detach unbinds it */
    }
}

void jn_edge_tracking_arrived_CT(jn_delivery_t *dlv)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    jn_message_t *msg = dlv->message;
    if (!jn_message_is_complete(msg) && !jn_message_is_aborted(msg)) {
        dlv->ct.wait = JN_DLV_WAIT_TRACKING; /* jn_router_continued_CT */
        return;
    }
    jn_iter_t body;
    char key[260];
    size_t klen = 0;
    bool has = false, ok = false;
    if (!jn_message_is_aborted(msg) && jn_message_parse(msg, JN_DEPTH_ALL) == 0 &&
        jn_message_section(msg, JN_SEC_BODY, &body) == 0) {
        jn_decoder_t d, list;
        jn_field_t f, k, b;
        jn_decoder_init(&d, &body, true);
        if (jn_decoder_next(&d, &f) == 1 && f.type == JN_TYPE_LIST &&
            jn_decoder_enter(&d, &f, &list) == 0 && jn_decoder_next(&list, &k) == 1 &&
            k.type == JN_TYPE_STRING && k.size < sizeof key && jn_decoder_next(&list, &b) == 1 &&
            b.type == JN_TYPE_BOOLEAN) {
            klen = jn_iter_copy_string(&k.payload, key, sizeof key);
            has = b.value.b;
            ok = klen > 0;
        }
    }
    if (ok) {
        jn_addr_t *addr = jn_hash_lookup(core->ct.addrs, key, klen);
        if (addr) {
            addr->edge_dest_up = has;
            addr->edge_reported = true;
            bind_out_CT(core, addr, has);
        }
    }
    dlv->ct.served = ok;
    jn_forward_to_links_CT(dlv, NULL, 0, false);
}

void jn_edge_served_arrived_CT(jn_delivery_t *dlv)
{
    JN_ASSERT_CT(jn_delivery_core(dlv));
    switch (dlv->link->type) {
    case JN_LINK_EDGE_HEARTBEAT:
        jn_edge_heartbeat_arrived_CT(dlv);
        return;
    case JN_LINK_EDGE_TRACKING:
        jn_edge_tracking_arrived_CT(dlv);
        return;
    default:
        break;
    }
    jn_message_t *msg = dlv->message;
    if (!jn_message_is_complete(msg) && !jn_message_is_aborted(msg)) {
        dlv->ct.wait = JN_DLV_WAIT_TRACKING; /* jn_router_continued_CT */
        return;
    }
    if (dlv->link->type == JN_LINK_EDGE_LOOKUP)
        jn_edge_lookup_arrived_CT(dlv);
    else
        jn_edge_reply_arrived_CT(dlv);
}

void jn_edge_uplink_tick_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    jn_edge_clients_tick_CT(core);
    int64_t now = (int64_t)jn_time_mono_ms();
    if (now < core->ct.edge_next_hb_ms)
        return;
    core->ct.edge_next_hb_ms = now + JN_EDGE_HEARTBEAT_MS;
    jn_core_link_t *hb = core->ct.edge_hb_out;
    /* only with credit: a heartbeat never waits (the next one is as good) */
    if (!hb || hb->ct.state != JN_LINK_ST_ATTACHED || hb->ct.handed >= hb->ct.credit_limit ||
        hb->ct.undelivered.count > 0)
        return;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_compose_props_t props = {.to = NULL, .fields = 3};
    jn_compose_head(&e, &props);
    jn_enc_descriptor_ulong(&e, JN_SECTION_AMQP_VALUE);
    jn_enc_int(&e, core->ct.edge_hb_count++);
    int rc = 0;
    jn_message_t *msg = jn_compose_message(&e, JN_DEPTH_PROPERTIES, &rc);
    if (!msg)
        return;
    jn_delivery_t *dlv = jn_delivery_internal_CT(core, msg);
    if (!dlv) {
        jn_message_unref(msg);
        return;
    }
    jn_forward_to_links_CT(dlv, &hb, 1, true);
}

int jn_edge_sleep_ms_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    /* never -1 (sleep until woken): the uplink's links may be attached by
     * an I/O thread running the core inline, which wakes no one */
    int64_t left = core->ct.edge_next_hb_ms - (int64_t)jn_time_mono_ms();
    return left < 0 ? 0 : left > JN_EDGE_HEARTBEAT_MS ? JN_EDGE_HEARTBEAT_MS : (int)left;
}
