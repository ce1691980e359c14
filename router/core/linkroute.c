/*
 * linkroute.c — link routes and auto-links: links the router attaches to a
 * container (a broker) on a connection it picked by the container's id or
 * its listener's/connector's name (docs/design.md, "Link routes and
 * auto-links").
 *
 * Link routes. An endpoint attach whose address matches a link route of
 * its direction (address_config.h's matching, one table per direction)
 * is not bound to an address: the core asks the container's connection to
 * attach a link of the opposite direction with the same name and termini
 * (JN_WORK_LINK_ATTACH; the address changed by del/addExternalPrefix),
 * and answers the client only when the container answered. From then on
 * the two links are paired (link->ct.routed names the other end): each
 * delivery on the incoming one is copied to the outgoing one (forward.c),
 * dispositions and settlement come back as for any copy, the incoming
 * end's credit follows the outgoing end's (jn_lr_credit_due_CT), and a
 * detach at either end detaches the other with the same error. No
 * container connection (of role route-container, as in 1.19) here or
 * behind another router: the attach is refused with qd:no-route-to-dest,
 * 1.19's condition.
 *
 * Auto-links. An autoLink entity names an address, a direction and a
 * container; whenever a connection to that container is open the router
 * attaches one link on it (source or target: the external address), and
 * once the container answers the link is a consumer (out) or producer (in)
 * of the address with the auto-link's phase, like a client's link.
 *
 * Requests. Between the JN_WORK_LINK_ATTACH and the link the I/O layer
 * reports for it, the core keeps a request (id, what asked for it, the
 * connection); the link carries the id back (attach_ref), so nothing in
 * flight points at an object that may be gone: a request whose client
 * detached meanwhile finds nothing and its link is closed; one whose
 * connection closed first is answered not-found.
 *
 * Threads: everything here runs on the core thread.
 */
#include "address_config.h"
#include "delivery.h"

#include <junction/core_view.h>
#include <junction/iterator.h>
#include <junction/time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linkroute_private.h" /* the tables, shared with autolink.c */

static void advertise_CT(jn_core_t *core);
static jn_core_conn_t *remote_conn_CT(jn_core_t *core, const char *address, jn_link_dir_t dir,
                                      const jn_core_conn_t * not );

/* ---- set-up ------------------------------------------------------------------ */

int jn_lr_init(jn_core_t *core)
{
    core->lr = calloc(1, sizeof *core->lr);
    if (!core->lr)
        return JN_ENOMEM;
    jn_addr_config_init(&core->lr->match[0]);
    jn_addr_config_init(&core->lr->match[1]);
    return 0;
}

static void route_free(jn_link_route_t *r)
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

void jn_lr_autolink_free(jn_autolink_t *al)
{
    free(al->name);
    free(al->address);
    free(al->external);
    free(al->container_id);
    free(al->connection);
    free(al->last_error);
    free(al);
}

void jn_lr_fini(jn_core_t *core)
{
    jn_lr_table_t *t = core->lr;
    if (!t)
        return;
    for (int d = 0; d < 2; d++) {
        for (size_t i = 0; i < t->match[d].count; i++) {
            jn_link_route_t *next;
            for (jn_link_route_t *r = t->routes[d][i]; r; r = next) {
                next = r->same;
                route_free(r);
            }
        }
        free(t->routes[d]);
        jn_addr_config_fini(&t->match[d]);
    }
    while (t->autolinks) {
        jn_autolink_t *al = t->autolinks;
        t->autolinks = al->next;
        jn_lr_autolink_free(al);
    }
    while (t->requests) {
        lr_request_t *rq = t->requests;
        t->requests = rq->next;
        if (rq->client)
            jn_link_unref(rq->client);
        free(rq);
    }
    free(t);
    core->lr = NULL;
}

/* ---- matching a container's connection -------------------------------------- */

bool jn_lr_conn_serves(const jn_core_conn_t *c, const char *container_id, const char *connection)
{
    /* only a route-container connection is a container, as in 1.19: a
     * client on a normal listener that opens with a broker's container id
     * (or comes in on a listener named like a route's connection) must not
     * take the broker's link-routed or auto-linked traffic */
    if (c->ct.closed || !c->route_container || c->inter_router || c->internal)
        return false;
    if (connection)
        return c->endpoint_name && strcmp(c->endpoint_name, connection) == 0;
    return container_id && strcmp(c->container_id, container_id) == 0;
}

jn_core_conn_t *jn_lr_find_conn_CT(jn_core_t *core, const char *container_id,
                                    const char *connection, const jn_core_conn_t * not )
{
    JN_ASSERT_CT(core);
    for (jn_core_conn_t *c = core->ct.conns; c; c = c->ct.next)
        if (c != not &&jn_lr_conn_serves(c, container_id, connection))
            return c;
    return NULL;
}

/* The connection a link route's container is on (not `not`), or NULL: for
 * a connection-scoped one the connection that created it, else the first
 * that serves its containerId or connection. */
static jn_core_conn_t *route_conn_CT(jn_core_t *core, const jn_link_route_t *r,
                                     const jn_core_conn_t * not )
{
    JN_ASSERT_CT(core);
    if (!r->conn_id)
        return jn_lr_find_conn_CT(core, r->container_id, r->connection, not );
    for (jn_core_conn_t *c = core->ct.conns; c; c = c->ct.next)
        if (c->conn_id == r->conn_id)
            return c != not &&!c->ct.closed ? c : NULL;
    return NULL;
}

/* ---- requests ---------------------------------------------------------------- */

lr_request_t *jn_lr_request_new_CT(jn_core_t *core, jn_core_conn_t *conn)
{
    JN_ASSERT_CT(core);
    lr_request_t *rq = calloc(1, sizeof *rq);
    if (!rq)
        return NULL;
    rq->id = ++core->lr->next_id;
    rq->conn = conn;
    rq->next = core->lr->requests;
    core->lr->requests = rq;
    return rq;
}

/* Take the request out of the list (the caller frees it). */
lr_request_t *jn_lr_request_take_CT(jn_core_t *core, uint64_t id)
{
    JN_ASSERT_CT(core);
    for (lr_request_t **p = &core->lr->requests; *p; p = &(*p)->next) {
        if ((*p)->id == id) {
            lr_request_t *rq = *p;
            *p = rq->next;
            return rq;
        }
    }
    return NULL;
}

/* Ask conn's I/O thread to attach a link (JN_WORK_LINK_ATTACH). */
int jn_lr_push_attach_CT(jn_core_conn_t *conn, jn_link_dir_t dir, const char *name,
                          const char *address, bool presettled, jn_core_link_t *copy_of,
                          uint64_t id)
{
    JN_ASSERT_CT(conn->core);
    jn_work_t *w = jn_work_new_CT(conn->core, JN_WORK_LINK_ATTACH);
    if (!w)
        return JN_ENOMEM;
    w->attach.dir = dir;
    w->attach.name = strdup(name);
    w->address = address ? strdup(address) : NULL;
    w->attach.presettled = presettled;
    w->attach.ref = (void *)(uintptr_t)id;
    if (!w->attach.name || (address && !w->address)) {
        jn_work_free(w);
        return JN_ENOMEM;
    }
    if (copy_of) {
        w->link = jn_link_ref(copy_of);
        w->passthrough = true; /* a link route's far end */
    }
    jn_work_push_CT(conn, w);
    return 0;
}

/* ---- link routes --------------------------------------------------------------- */

/* The address toward the container: del prefix off, add prefix on (heap). */
char *jn_lr_external_address(const jn_link_route_t *r, const char *address)
{
    const char *rest = address;
    size_t dl = r->del_prefix ? strlen(r->del_prefix) : 0;
    if (dl && strncmp(address, r->del_prefix, dl) == 0)
        rest = address + dl;
    const char *add = r->add_prefix ? r->add_prefix : "";
    size_t n = strlen(add) + strlen(rest) + 1;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s%s", add, rest);
    return out;
}

/* Of the link routes with one prefix or pattern (the chain at *head, not
 * empty), the first whose container is connected here, not counting from
 * (the attaching connection): its connection, with *route that link
 * route; it goes to the chain's end, so attaches take turns among the
 * containers, as in 1.19. NULL when none is connected (*route: the
 * chain's first). Core thread. */
static jn_core_conn_t *take_turn_CT(jn_core_t *core, jn_link_route_t **head,
                                    jn_core_conn_t *from, const jn_link_route_t **route)
{
    jn_core_conn_t *to = NULL;
    jn_link_route_t **p = head, **at = NULL;
    *route = *p;
    for (; *p && !to; p = &(*p)->same)
        if ((to = route_conn_CT(core, *p, from)) != NULL)
            at = p;
    if (!at)
        return NULL;
    jn_link_route_t *x = *at;
    *route = x;
    if (x->same) {
        jn_link_route_t **tail = &x->same;
        while (*tail)
            tail = &(*tail)->same;
        *at = x->same;
        *tail = x;
        x->same = NULL;
    }
    return to;
}

bool jn_lr_attach_CT(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    jn_lr_table_t *t = core->lr;
    int d = link->dir == JN_LINK_INCOMING ? 0 : 1;
    if (!link->address || link->dynamic || conn->internal ||
        (t->match[d].count == 0 && !core->mesh))
        return false;
    const jn_link_route_t *r = NULL;
    int i = t->match[d].count
                ? jn_addr_config_match(&t->match[d], link->address, strlen(link->address))
                : -1;
    jn_core_conn_t *to = i >= 0 ? take_turn_CT(core, &t->routes[d][i], conn, &r) : NULL;
    char *ext = NULL, *name = NULL;
    if (to) {
        ext = jn_lr_external_address(r, link->address);
    } else {
        /* the container is behind another router (10.6): the same address
         * to the next hop, the name made unique unless it came from one */
        to = remote_conn_CT(core, link->address, link->dir, conn);
        /* not link-routed: an address like any other, except on an
         * inter-router connection, where an endpoint attach is always a
         * link-routed one whose route went meanwhile: bound to a mobile
         * address it would be advertised back to the mesh for as long as
         * the client keeps it (a consumer of nothing) */
        if (!to && !r && !conn->inter_router)
            return false;
        if (!to) {
            jn_link_refuse_CT(link, JN_LR_NO_ROUTE_CONDITION, JN_LR_NO_ROUTE_DESCRIPTION);
            return true;
        }
        ext = strdup(link->address);
        if (!conn->inter_router) {
            size_t n = strlen(link->name) + strlen(conn->container_id) + 2;
            name = malloc(n);
            if (name)
                snprintf(name, n, "%s@%s", link->name, conn->container_id);
        }
    }
    if (link->resumable && core->deny_resumable_lr && !conn->inter_router) {
        free(ext);
        free(name);
        jn_link_refuse_CT(link, "amqp:not-allowed",
                          "resumable link routes are not allowed (router.allowResumableLinkRoute)");
        return true;
    }
    lr_request_t *rq = ext ? jn_lr_request_new_CT(core, to) : NULL;
    if (!rq || jn_lr_push_attach_CT(to, d == 0 ? JN_LINK_OUTGOING : JN_LINK_INCOMING,
                              name ? name : link->name, ext, link->presettled, link, rq->id) != 0) {
        if (rq)
            free(jn_lr_request_take_CT(core, rq->id));
        free(ext);
        free(name);
        jn_link_refuse_CT(link, "amqp:resource-limit-exceeded", "out of memory");
        return true;
    }
    rq->client = jn_link_ref(link);
    link->ct.state = JN_LINK_ST_ROUTING;
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO,
           "[C%" PRIu64 "][L%" PRIu64 "] Link routed%s%s to connection [C%" PRIu64 "] as %s",
           conn->conn_id, link->ct.id, r ? " by " : "", r ? r->name : "", to->conn_id, ext);
    free(ext);
    free(name);
    return true;
}

/* Pair the container's new link with the client's (both wait for the
 * container's answer in ROUTING). */
static void pair_CT(jn_core_link_t *client, jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    client->ct.routed = link;
    link->ct.routed = client;
    link->ct.state = JN_LINK_ST_ROUTING;
}

void jn_lr_local_attached_CT(jn_core_link_t *link)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    lr_request_t *rq = jn_lr_request_take_CT(core, (uint64_t)(uintptr_t)link->attach_ref);
    jn_core_link_t *client = rq ? rq->client : NULL;
    jn_autolink_t *al = rq ? rq->autolink : NULL;
    free(rq);
    if (client) {
        bool waiting = client->ct.state == JN_LINK_ST_ROUTING && !client->ct.routed;
        if (waiting)
            pair_CT(client, link);
        jn_link_unref(client); /* the request's reference */
        if (waiting)
            return;
    } else if (al) {
        al->pending = 0;
        al->link = link;
        link->ct.autolink = al;
        link->ct.state = JN_LINK_ST_ROUTING;
        /* the link is the router's address (the I/O layer gave the
         * container's): its deliveries cross the mesh to that address, with
         * the auto-link's phase; no copy exists yet */
        char *address = strdup(al->address);
        if (address) {
            free(link->address);
            link->address = address;
        }
        link->phase = al->phase >= '1' && al->phase <= '9' ? (uint8_t)(al->phase - '0') : 0;
        return;
    }
    /* nothing wants it any more: close it (its detach follows) */
    link->ct.state = JN_LINK_ST_REFUSED;
    jn_work_link_CT(link, JN_WORK_LINK_CLOSE, NULL, NULL, NULL, 0);
}

void jn_lr_answered_CT(jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    if (link->ct.state != JN_LINK_ST_ROUTING)
        return;
    if (link->ct.autolink) {
        jn_lr_autolink_answered_CT(link);
        return;
    }
    jn_core_link_t *client = link->ct.routed;
    if (!client || client->ct.state != JN_LINK_ST_ROUTING)
        return;
    link->ct.state = JN_LINK_ST_ATTACHED;
    client->ct.state = JN_LINK_ST_ATTACHED;
    /* the client's answer; from now on the two links pass deliveries
     * octet for octet with their senders' tags (docs/protocol.md, "Link routes, auto-links and
     * phases on the wire") */
    jn_work_t *w = jn_work_new_CT(client->conn->core, JN_WORK_LINK_OPEN);
    if (w) {
        w->link = jn_link_ref(client);
        w->passthrough = true;
        jn_work_push_CT(client->conn, w);
    } else {
        JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_ERROR,
               "[C%" PRIu64 "][L%" PRIu64 "] Out of memory for link work", client->conn->conn_id,
               client->ct.id);
    }
    jn_core_link_t *in = link->dir == JN_LINK_INCOMING ? link : client;
    jn_core_link_t *out = in == link ? client : link;
    /* a flow that came while it waited was not applied (link.c): now */
    uint64_t word = atomic_load_explicit(&out->flow, memory_order_acquire);
    out->ct.credit_limit = word >> 1;
    out->ct.drain = (word & 1u) != 0;
    jn_link_mark_dirty_CT(in);
    jn_link_pump_CT(out);
}

uint32_t jn_lr_credit_due_CT(const jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    const jn_core_link_t *out = link->ct.routed;
    if (out->ct.state != JN_LINK_ST_ATTACHED || out->ct.credit_limit <= out->ct.handed)
        return 0;
    uint64_t avail = out->ct.credit_limit - out->ct.handed;
    /* the receiving end's unsettled bound (link.c) limits it too: a
     * receiver that never settles stops its sender (copies waiting on it
     * are the held ones, subtracted below) */
    uint64_t room = out->ct.unsettled < out->ct.unsettled_max
                        ? (uint64_t)out->ct.unsettled_max - out->ct.unsettled
                        : 0;
    if (room < avail)
        avail = room;
    uint64_t used = (uint64_t)link->ct.outstanding + link->ct.held;
    if (avail <= used)
        return 0;
    avail -= used;
    return avail > UINT32_MAX ? UINT32_MAX : (uint32_t)avail;
}

void jn_lr_link_detached_CT(jn_core_link_t *link, bool from_conn_close)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    if (link->ct.autolink) {
        jn_lr_autolink_detached_CT(link, from_conn_close);
        return;
    }
    jn_core_link_t *peer = link->ct.routed;
    if (!peer) {
        /* a client still waiting for its request: forget the request */
        for (lr_request_t *rq = core->lr->requests; rq; rq = rq->next)
            if (rq->client == link) {
                jn_link_unref(rq->client);
                rq->client = NULL;
            }
        return;
    }
    link->ct.routed = NULL;
    peer->ct.routed = NULL;
    if (peer->ct.state != JN_LINK_ST_ATTACHED && peer->ct.state != JN_LINK_ST_ROUTING)
        return;
    const char *cond = link->detach_condition, *desc = link->detach_description;
    if (!cond && from_conn_close) {
        cond = LR_LOST_CONDITION;
        desc = LR_LOST_DESCRIPTION;
    }
    peer->ct.state = JN_LINK_ST_REFUSED; /* waits for its detach */
    /* a detach that did not close (closed=false) passes on as such */
    jn_work_link_CT(peer, link->detach_unclosed && !from_conn_close ? JN_WORK_LINK_DETACH
                                                                     : JN_WORK_LINK_CLOSE,
                    NULL, cond, desc, 0);
}

void jn_lr_conn_opened_CT(jn_core_conn_t *conn)
{
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    for (jn_autolink_t *al = core->lr->autolinks; al; al = al->next)
        if (!al->link && !al->pending && jn_lr_conn_serves(conn, al->container_id, al->connection)) {
            al->retries = 0;
            al->timed = 0;
            al->retry_at = 0;
            jn_lr_autolink_try_CT(core, al, conn);
        }
    advertise_CT(core);
}

void jn_lr_conn_closed_CT(jn_core_conn_t *conn)
{
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    lr_request_t **p = &core->lr->requests;
    while (*p) {
        lr_request_t *rq = *p;
        if (rq->conn != conn) {
            p = &rq->next;
            continue;
        }
        *p = rq->next;
        if (rq->client) {
            if (rq->client->ct.state == JN_LINK_ST_ROUTING)
                jn_link_refuse_CT(rq->client, LR_LOST_CONDITION, LR_LOST_DESCRIPTION);
            jn_link_unref(rq->client);
        }
        if (rq->autolink) {
            rq->autolink->pending = 0;
            rq->autolink->state = AL_INACTIVE;
        }
        free(rq);
    }
    /* its connection-scoped link routes go with it */
    for (int d = 0; d < 2; d++)
        for (size_t i = core->lr->match[d].count; i-- > 0;) {
            jn_link_route_t *next;
            for (jn_link_route_t *r = core->lr->routes[d][i]; r; r = next) {
                next = r->same; /* r and, when r was its last, the entry go */
                if (r->conn_id == conn->conn_id)
                    jn_core_link_route_remove_CT(core, r->name);
            }
        }
    /* an auto-link that was on it moves to another connection to its
     * container, else it is inactive (its lastError kept) */
    for (jn_autolink_t *al = core->lr->autolinks; al; al = al->next) {
        if (al->link || al->pending || al->conn_id != conn->conn_id)
            continue;
        jn_core_conn_t *other = jn_lr_find_conn_CT(core, al->container_id, al->connection, conn);
        al->state = AL_INACTIVE;
        al->retry_at = 0; /* the connection it waited on is gone */
        al->timed = 0;
        if (other)
            jn_lr_autolink_try_CT(core, al, other);
    }
    advertise_CT(core);
}

/* ---- across the mesh -------------------------------------------------------------- */

/* The link route's mesh key (docs/protocol.md, "Link routes, auto-links and phases on the wire"): a
 * prefix P is the pattern "P.#", and a pattern with no '*' whose only '#'
 * is its last token is prefix-style: 'C' (in) or 'D' (out) and the text
 * without the trailing "#" and separator; any other pattern keeps its
 * wildcards after 'E' (in) or 'F' (out). Heap, or NULL. */
static char *route_key(const char *text, bool pattern, jn_link_dir_t dir)
{
    bool in = dir == JN_LINK_INCOMING;
    size_t n = strlen(text);
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
static void advertise_CT(jn_core_t *core)
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
                    want = want || route_conn_CT(core, r, NULL) != NULL;
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
static jn_core_conn_t *remote_conn_CT(jn_core_t *core, const char *address, jn_link_dir_t dir,
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
    if (!cfg->name || !text || !*text)
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
        route_free(r);
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
            route_free(r);
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
    advertise_CT(core);
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
        route_free(r);
        advertise_CT(core);
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
    route_free(r);
    jn_addr_config_t *m = &t->match[d];
    free(m->entries[i].text);
    memmove(&m->entries[i], &m->entries[i + 1], (m->count - i - 1) * sizeof m->entries[0]);
    memmove(&t->routes[d][i], &t->routes[d][i + 1], (m->count - i - 1) * sizeof t->routes[d][0]);
    m->count--;
    if (other != SIZE_MAX)
        advertise_CT(core);
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
    return route_conn_CT(core, r, NULL) ? "active" : "inactive";
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
    jn_core_conn_t *to = r ? route_conn_CT(core, r, except) : NULL;
    if (!to)
        to = remote_conn_CT(core, address, dir, except);
    *has_dest = to != NULL;
    return r != NULL || to != NULL;
}

bool jn_lr_local_route_CT(jn_core_t *core, const char *address, jn_link_dir_t dir)
{
    JN_ASSERT_CT(core);
    const jn_link_route_t *r = route_match_CT(core, address, dir);
    return r && route_conn_CT(core, r, NULL) != NULL;
}

bool jn_lr_attach_via_CT(jn_core_link_t *link, jn_core_conn_t *conn)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    lr_request_t *rq = jn_lr_request_new_CT(core, conn);
    if (!rq || jn_lr_push_attach_CT(conn, link->dir == JN_LINK_INCOMING ? JN_LINK_OUTGOING
                                                                    : JN_LINK_INCOMING,
                              link->name, link->address, link->presettled, link, rq->id) != 0) {
        if (rq)
            free(jn_lr_request_take_CT(core, rq->id));
        link->ct.state = JN_LINK_ST_NEW;
        jn_link_refuse_CT(link, "amqp:resource-limit-exceeded", "out of memory");
        return false;
    }
    rq->client = jn_link_ref(link);
    link->ct.state = JN_LINK_ST_ROUTING;
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO,
           "[C%" PRIu64 "][L%" PRIu64 "] Link routed up the edge uplink [C%" PRIu64 "] as %s",
           link->conn->conn_id, link->ct.id, conn->conn_id, link->address);
    return true;
}

void jn_lr_each_served_CT(jn_core_t *core, void (*fn)(void *arg, const char *key), void *arg)
{
    JN_ASSERT_CT(core);
    jn_lr_table_t *t = core->lr;
    for (int d = 0; d < 2; d++)
        for (size_t i = 0; i < t->match[d].count; i++) {
            const jn_link_route_t *r = t->routes[d][i];
            if (r->key && route_conn_CT(core, r, NULL))
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
                        containers += route_conn_CT(core, r, NULL) != NULL;
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
