/*
 * linkroute.c — link routes and auto-links: links the router attaches to a
 * container (a broker) on a connection it picked by the container's id or
 * its listener's/connector's name (docs/design.md, "Link routes and
 * auto-links"). Only a connection of role route-container is a container,
 * as in 1.19. This file is what happens to the links; the table of link
 * routes (management, mesh keys, remote routes, edge lookups) is
 * linkroute_table.c, auto-links' own life autolink.c.
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
 * end's credit follows the outgoing end's (jn_lr_credit_due_CT), the
 * receiver's drain passes to the sender and its answer back
 * (jn_lr_pass_drain_CT, jn_lr_sender_drained_CT), and a detach at either
 * end detaches the other with the same error; the first end's answer
 * waits for the other end's detach and is the same, closed or not
 * (ct.echo; the I/O layer holds back its own answer). A dynamic source or
 * target is link-routed by the address its node properties name
 * (x-opt-qd.address, as 1.19): the container's link keeps it dynamic with
 * no address and names the address it was routed by in its node
 * properties (a tenant's in its space, as the next router must see it),
 * and the client is answered with the address the container made. No
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linkroute_private.h" /* the tables, shared with linkroute_table.c and autolink.c */

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

void jn_lr_autolink_free(jn_autolink_t *al)
{
    free(al->name);
    free(al->address);
    free(al->external);
    free(al->container_id);
    free(al->connection);
    free(al->last_error);
    while (al->conns) {
        jn_al_conn_t *ac = al->conns;
        al->conns = ac->next;
        free(ac);
    }
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
                jn_lr_route_free(r);
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

/* The connection a link route's container is on (linkroute_private.h). */
jn_core_conn_t *jn_lr_route_conn_CT(jn_core_t *core, const jn_link_route_t *r,
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
                         const char *address, bool presettled, jn_core_link_t *copy_of, uint64_t id)
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
 * empty), the first whose container is connected here: its connection,
 * with *route that link route; it goes to the chain's end, so attaches
 * take turns among the containers, as in 1.19. The attaching connection
 * counts like any other: a container that attaches to an address it
 * serves itself gets the link back on its own connection, the other
 * direction, as 1.19 routes it. NULL when none is connected (*route: the
 * chain's first). Core thread. */
static jn_core_conn_t *take_turn_CT(jn_core_t *core, jn_link_route_t **head,
                                    const jn_link_route_t **route)
{
    jn_core_conn_t *to = NULL;
    jn_link_route_t **p = head, **at = NULL;
    *route = *p;
    for (; *p && !to; p = &(*p)->same)
        if ((to = jn_lr_route_conn_CT(core, *p, NULL)) != NULL)
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
    /* a dynamic terminus: by the address its node properties ask for
     * (io_own_attach.c), and the container makes its node; the address it was
     * matched by (a tenant's in its space, tenant.c) goes on in its node
     * properties (io_own_route.c), so that the next router routes it the
     * same, and no external prefix is applied to it */
    if (!link->address || conn->internal ||
        (t->match[d].count == 0 && !core->mesh))
        return false;
    const jn_link_route_t *r = NULL;
    int i = t->match[d].count
                ? jn_addr_config_match(&t->match[d], link->address, strlen(link->address))
                : -1;
    jn_core_conn_t *to = i >= 0 ? take_turn_CT(core, &t->routes[d][i], &r) : NULL;
    char *ext = NULL, *name = NULL;
    if (to) {
        ext = link->dynamic ? strdup(link->address) : jn_lr_external_address(r, link->address);
    } else {
        /* the container is behind another router (10.6): the same address
         * to the next hop, the name made unique unless it came from one */
        to = jn_lr_remote_conn_CT(core, link->address, link->dir, conn);
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
    if (!rq ||
        jn_lr_push_attach_CT(to, d == 0 ? JN_LINK_OUTGOING : JN_LINK_INCOMING,
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
           "[C%" PRIu64 "][L%" PRIu64 "] Link routed%s%s to connection [C%" PRIu64 "] as %s%s",
           conn->conn_id, link->ct.id, r ? " by " : "", r ? r->name : "", to->conn_id,
           link->dynamic ? "dynamic, by " : "", ext);
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
    } else if (al && jn_lr_autolink_attached_CT(al, (uint64_t)(uintptr_t)link->attach_ref, link)) {
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
    if (w && client->dynamic && link->answer_address &&
        !(w->address = strdup(link->answer_address))) {
        jn_work_free(w);
        w = NULL;
    }
    if (w) {
        /* a dynamic node's address is the one the container made */
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
    /* while a passed drain is awaited, the sender gets nothing more: new
     * credit would clear the drain flag before it answered */
    if (out->ct.state != JN_LINK_ST_ATTACHED || out->ct.credit_limit <= out->ct.handed ||
        link->ct.lr_draining)
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

void jn_lr_pass_drain_CT(jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    jn_core_link_t *out = link->ct.routed;
    if (!out->ct.drain || link->ct.lr_draining || link->ct.state != JN_LINK_ST_ATTACHED)
        return; /* no drain, or one awaited already */
    if (link->ct.outstanding == 0) {
        /* the sender holds none of the receiver's credit (none could be
         * granted in this flush): nothing can come, answer now */
        jn_link_answer_drain_CT(out);
        return;
    }
    /* drain with credit 0: the credit granted stays the sender's, with the
     * drain flag (io_own_rx.c), so the sender sends what it has or gives
     * the credit back (AMQP 1.0 2.6.7), as 1.19 passes a drain on */
    if (jn_work_drain_CT(link, 0) != 0)
        return; /* out of memory: the receiver's drain waits for the next flow */
    link->ct.lr_draining = true;
}

void jn_lr_sender_drained_CT(jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    jn_core_link_t *out = link->ct.routed;
    if (!link->ct.lr_draining || !out)
        return;
    link->ct.lr_draining = false;
    link->ct.outstanding = 0;
    jn_link_pump_CT(out); /* copies that waited for the receiver's credit */
    if (out->ct.drain)
        jn_link_answer_drain_CT(out);
    jn_link_mark_dirty_CT(link); /* credit the receiver gave meanwhile */
}

/* The far end answered (detached) the detach of echo, which came first:
 * echo gets the same (closed or not, the error), then its release.
 * from_conn_close: the far end's connection closed instead. */
static void answer_echo_CT(jn_core_link_t *link, bool from_conn_close)
{
    jn_core_link_t *echo = link->ct.echo;
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    link->ct.echo = NULL;
    if (!echo->conn->ct.closed) {
        const char *cond = link->detach_condition, *desc = link->detach_description;
        if (!cond && from_conn_close) {
            cond = LR_LOST_CONDITION;
            desc = LR_LOST_DESCRIPTION;
        }
        bool unclosed = link->detach_unclosed && !from_conn_close;
        jn_work_link_CT(echo, unclosed ? JN_WORK_LINK_DETACH : JN_WORK_LINK_CLOSE, NULL, cond,
                        desc, 0);
        /* the last work item about it (link.c's rule: fatal if lost) */
        jn_work_t *w = jn_work_new_CT(core, JN_WORK_LINK_RELEASED);
        JN_CHECK(w != NULL);
        w->link = jn_link_ref(echo);
        jn_work_push_CT(echo->conn, w);
    }
    jn_link_unref(echo);
}

bool jn_lr_link_detached_CT(jn_core_link_t *link, bool from_conn_close)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    if (link->ct.echo)
        answer_echo_CT(link, from_conn_close);
    if (link->ct.autolink) {
        jn_lr_autolink_detached_CT(link, from_conn_close);
        return false;
    }
    jn_core_link_t *peer = link->ct.routed;
    if (!peer) {
        /* a client still waiting for its request: forget the request */
        for (lr_request_t *rq = core->lr->requests; rq; rq = rq->next)
            if (rq->client == link) {
                jn_link_unref(rq->client);
                rq->client = NULL;
            }
        return false;
    }
    link->ct.routed = NULL;
    peer->ct.routed = NULL;
    if (peer->ct.state != JN_LINK_ST_ATTACHED && peer->ct.state != JN_LINK_ST_ROUTING)
        return false;
    const char *cond = link->detach_condition, *desc = link->detach_description;
    if (!cond && from_conn_close) {
        cond = LR_LOST_CONDITION;
        desc = LR_LOST_DESCRIPTION;
    }
    peer->ct.state = JN_LINK_ST_REFUSED; /* waits for its detach */
    /* a detach that did not close (closed=false) passes on as such */
    jn_work_link_CT(
        peer, link->detach_unclosed && !from_conn_close ? JN_WORK_LINK_DETACH : JN_WORK_LINK_CLOSE,
        NULL, cond, desc, 0);
    /* an attached end's detach is answered by the far end's, closed or
     * not as that one is (1.19); the I/O layer holds its answer (io_own_attach.c) */
    if (from_conn_close || link->ct.state != JN_LINK_ST_ATTACHED)
        return false;
    peer->ct.echo = jn_link_ref(link);
    return true;
}

void jn_lr_conn_opened_CT(jn_core_conn_t *conn)
{
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    jn_lr_autolinks_conn_opened_CT(conn);
    jn_lr_advertise_CT(core);
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
        free(rq); /* an auto-link's: jn_lr_autolinks_conn_closed_CT forgets it */
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
    jn_lr_autolinks_conn_closed_CT(conn);
    jn_lr_advertise_CT(core);
}

bool jn_lr_attach_via_CT(jn_core_link_t *link, jn_core_conn_t *conn)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    lr_request_t *rq = jn_lr_request_new_CT(core, conn);
    if (!rq || jn_lr_push_attach_CT(
                   conn, link->dir == JN_LINK_INCOMING ? JN_LINK_OUTGOING : JN_LINK_INCOMING,
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
