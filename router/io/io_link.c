/*
 * io_link.c — sessions and links of a connection (its I/O thread only):
 * the peer's begin and end, its attach and detach, our objects for its
 * links (jn_io_link_t, pooled), and the link work items of the core (open,
 * detach, close, release). What flows on a link is io_recv.c's and
 * io_send.c's; the connection around it is io_conn.c's, which hands these
 * functions proton's events and the core's work.
 *
 * A link lives on its connection's list from its attach until the core
 * releases it (JN_WORK_LINK_RELEASED) or, when the core never knew it
 * (refused), until its detach; or until the connection is freed.
 */
#include "io_private.h"

#include <junction/pool.h>

#include <proton/codec.h>

#include <stdlib.h>
#include <string.h>

static _Atomic(jn_pool_t *) link_pool;

/* Take link off its connection's list and its busy list. */
static void link_unlink(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    jn_io_conn_t *conn = link->conn;
    if (link->prev)
        link->prev->next = link->next;
    else
        conn->links = link->next;
    if (link->next)
        link->next->prev = link->prev;
    if (link->busy) {
        for (jn_io_link_t **p = &conn->busy; *p; p = &(*p)->busy_next) {
            if (*p == link) {
                *p = link->busy_next;
                break;
            }
        }
        link->busy = false;
    }
}

/* jn_io_link_free_IO: release what link holds (its receive and send
 * state, its budget) and give it back to the pool; it is off its
 * connection's lists on return. The connection's I/O thread (or the thread
 * freeing the connection, which adopts it). */
void jn_io_link_free_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    jn_io_vhost_link_gone_IO(link);
    jn_io_rx_link_gone_IO(link);
    jn_io_tx_link_gone_IO(link);
    /* after this the budget's waker no longer names the connection
     * (messages still charged to it may outlive both) */
    jn_rx_budget_set_waker(link->budget, NULL, NULL);
    jn_rx_budget_unref(link->budget);
    link->budget = NULL;
    link_unlink(link);
    jn_pool_free(atomic_load_explicit(&link_pool, memory_order_acquire), link);
}

/* jn_io_session_remote_open_IO: the peer began session ssn on conn: ours
 * begins too, with its incoming window (maxSessionFrames, or the vhost
 * group's maxSessionWindow). The connection's I/O thread. */
void jn_io_session_remote_open_IO(jn_io_conn_t *conn, pn_session_t *ssn)
{
    JN_ASSERT_IO(conn);
    if (!(pn_session_state(ssn) & PN_LOCAL_UNINIT))
        return;
    const jn_endpoint_config_t *cfg = &conn->endpoint->cfg;
    size_t frame = cfg->max_frame_size;
    size_t cap;
    if (cfg->max_session_frames) {
        /* as configured; the AMQP window is a 31-bit frame count */
        size_t frames =
            cfg->max_session_frames < 0x7fffffffu ? cfg->max_session_frames : 0x7fffffffu;
        cap = frame * frames;
    } else {
        cap = frame * JN_IO_SESSION_FRAMES;
        if (cap > JN_IO_SESSION_CAPACITY_MAX)
            cap = JN_IO_SESSION_CAPACITY_MAX > 2 * frame ? JN_IO_SESSION_CAPACITY_MAX : 2 * frame;
    }
    size_t window = jn_io_vhost_session_window(conn); /* a vhost group's maxSessionWindow */
    if (window)
        cap = window > frame ? window : frame;
    pn_session_set_incoming_capacity(ssn, cap);
    pn_session_open(ssn);
}

/* The link is gone on the peer's side (detach, or its session ended):
 * release what it holds and tell the core once. */
static void link_detached_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    jn_io_vhost_link_gone_IO(link);
    jn_io_rx_link_gone_IO(link);
    jn_io_tx_link_gone_IO(link);
    if (link->detached)
        return;
    link->detached = true;
    if (link->core) {
        jn_core_link_detached_IO(link->core); /* JN_WORK_LINK_RELEASED follows */
    } else {
        if (link->pn)
            pn_link_set_context(link->pn, NULL);
        jn_io_link_free_IO(link);
    }
}

/* jn_io_session_remote_close_IO: the peer ended session ssn on conn: its links are gone with it. Our link objects
 * let go of their proton links (work items about them are then no-ops) so
 * that the session and its links can be freed now rather than with the
 * connection: a client that opens a session per request does not grow the
 * connection. */
void jn_io_session_remote_close_IO(jn_io_conn_t *conn, pn_session_t *ssn)
{
    JN_ASSERT_IO(conn);
    jn_io_link_t *next;
    for (jn_io_link_t *l = conn->links; l; l = next) {
        next = l->next;
        if (!l->pn || pn_link_session(l->pn) != ssn)
            continue;
        if (!l->local_closed) {
            pn_link_close(l->pn);
            l->local_closed = true;
        }
        if (l->detached && !l->core) { /* refused before the core knew it */
            pn_link_set_context(l->pn, NULL);
            jn_io_link_free_IO(l);
            continue;
        }
        link_detached_IO(l); /* may free l */
    }
    for (jn_io_link_t *l = conn->links; l; l = l->next) {
        if (l->pn && pn_link_session(l->pn) == ssn) {
            pn_link_set_context(l->pn, NULL);
            l->pn = NULL;
        }
    }
    jn_io_route_session_gone_IO(conn, ssn);
    if (!(pn_session_state(ssn) & PN_LOCAL_CLOSED))
        pn_session_close(ssn);
    pn_session_free(ssn);
}

/* The maxMessageSize that applies to what conn's peer sends (0: none). As
 * 1.19, a message is checked where it enters the mesh: not on inter-router
 * connections, nor on an edge router's own connection to its interior
 * (the interior's limit applies past it); an interior checks its edges. */
static uint64_t endpoint_max_message_size(const jn_io_conn_t *conn)
{
    if (conn->inter_router || (conn->edge && !conn->incoming))
        return 0;
    return conn->endpoint->cfg.max_message_size;
}

/* jn_io_link_new_IO: our object for proton link pl on conn, registered on
 * the connection; NULL on ENOMEM. The connection's I/O thread. */
jn_io_link_t *jn_io_link_new_IO(jn_io_conn_t *conn, pn_link_t *pl)
{
    JN_ASSERT_IO(conn);
    jn_pool_t *pool = jn_pool_get_once(&link_pool, "jn_io_link", sizeof(jn_io_link_t), 0);
    jn_io_link_t *link = pool ? jn_pool_alloc(pool) : NULL;
    if (!link)
        return NULL;
    memset(link, 0, sizeof *link);
    link->conn = conn;
    link->id = conn->next_link_id++;
    link->pn = pl;
    link->dir = pn_link_is_sender(pl) ? JN_LINK_OUTGOING : JN_LINK_INCOMING;
    link->next = conn->links;
    if (conn->links)
        conn->links->prev = link;
    conn->links = link;
    pn_link_set_context(pl, link);
    link->max_message_size = endpoint_max_message_size(conn);
    if (link->dir == JN_LINK_INCOMING && conn->check_user)
        link->rx_checks = JN_IO_RX_CHECK_USER_ID;
    if (link->dir == JN_LINK_INCOMING)
        jn_io_rx_init_IO(link);
    return link;
}

/* jn_io_link_remote_open_IO: the peer attached pl on conn (or answered our
 * attach): a new link is checked (vhost rules), classified and offered to
 * the core, or closed with an error condition. The connection's I/O
 * thread. */
void jn_io_link_remote_open_IO(jn_io_conn_t *conn, pn_link_t *pl)
{
    JN_ASSERT_IO(conn);
    if (!(pn_link_state(pl) & PN_LOCAL_UNINIT)) {
        jn_io_link_t *ours = pn_link_get_context(pl);
        if (ours && (ours->routed || ours->edge_reply) && ours->core && !ours->detached) {
            /* the peer answered: with the address of the terminus it
             * answered for (an edge's reply link receives: its source) */
            pn_terminus_t *t = ours->dir == JN_LINK_OUTGOING ? pn_link_remote_target(pl)
                                                              : pn_link_remote_source(pl);
            jn_core_link_answered_address_IO(ours->core, pn_terminus_get_address(t));
        }
        return;
    }
    jn_io_link_t *link = jn_io_link_new_IO(conn, pl);
    if (!link) {
        pn_condition_set_name(pn_link_condition(pl), "amqp:resource-limit-exceeded");
        pn_link_close(pl);
        return;
    }
    pn_terminus_t *term =
        link->dir == JN_LINK_OUTGOING ? pn_link_remote_source(pl) : pn_link_remote_target(pl);
    jn_link_info_t info = {
        .dir = link->dir,
        .name = pn_link_name(pl),
        .address = pn_terminus_get_address(term),
        .dynamic = pn_terminus_is_dynamic(term), /* a source or a target (3.5.4) */
        .presettled = pn_link_remote_snd_settle_mode(pl) == PN_SND_SETTLED,
        .capacity = conn->endpoint->cfg.link_capacity,
        .priority = -1,
    };
    jn_io_ir_classify_IO(link, &info);
    const char *denied = info.type == JN_LINK_ENDPOINT && conn->vhost_rules
                             ? jn_io_vhost_link_check_IO(link, info.address, info.dynamic)
                             : NULL;
    if (denied) {
        link->detached = true; /* the core never knows it */
        jn_io_link_close_IO(link, denied, "link disallowed by local policy");
        return;
    }
    if (info.type == JN_LINK_ENDPOINT && conn->vhost_rules && link->dir == JN_LINK_INCOMING &&
        (!info.address || !info.address[0]) && !info.dynamic)
        link->rx_checks |= JN_IO_RX_CHECK_TARGET; /* the core routes each message by its to */
    else if (info.type == JN_LINK_ENDPOINT && conn->vhost_rules && link->dir == JN_LINK_INCOMING &&
             jn_io_vhost_names_management(info.address))
        link->rx_checks |= JN_IO_RX_CHECK_REPLY; /* the router answers at the reply-to */
    info.fallback = info.type == JN_LINK_ENDPOINT && jn_io_fallback_receiver_IO(pl);
    info.waypoint = info.type == JN_LINK_ENDPOINT ? jn_io_waypoint_IO(pl) : 0;
    info.resumable = pn_terminus_get_expiry_policy(term) == PN_EXPIRE_NEVER ||
                     pn_terminus_get_timeout(term) > 0;
    if (info.type == JN_LINK_ENDPOINT && jn_io_coordinator_IO(pl))
        info.address = JN_COORDINATOR_ADDRESS, info.coordinator = true;
    if (info.type == JN_LINK_CONTROL)
        jn_io_ir_cap_control_IO(link);
    /* a dynamic terminus is link-routed by the address in its node
     * properties, as in 1.19; any address it gave is not its (3.5.4) */
    char *dnp = info.type == JN_LINK_ENDPOINT && info.dynamic ? jn_io_dnp_address_IO(term) : NULL;
    if (info.type == JN_LINK_ENDPOINT && info.dynamic)
        info.address = dnp;
    uint8_t *termini = NULL;
    if (info.type == JN_LINK_ENDPOINT && info.address) /* a link route may copy them */
        jn_io_termini_encode_IO(pl, &termini, &info.termini_len);
    info.termini = termini;
    if (conn->core && !conn->closing)
        link->core = jn_core_link_attached_IO(conn->core, link, &info);
    free(termini);
    free(dnp);
    if (!link->core) {
        link->detached = true; /* the core never knew it */
        jn_io_link_close_IO(link, "amqp:resource-limit-exceeded", "link refused");
    }
}

/* jn_io_link_remote_close_IO: the peer detached pl on conn (closed: and
 * closed it): ours ends too, and the core is told once. The connection's
 * I/O thread. */
void jn_io_link_remote_close_IO(jn_io_conn_t *conn, pn_link_t *pl, bool closed)
{
    JN_ASSERT_IO(conn);
    jn_io_link_t *link = pn_link_get_context(pl);
    if (!link)
        return;
    pn_condition_t *c = pn_link_remote_condition(pl);
    if (pn_condition_is_set(c)) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_DEBUG, JN_IO_LINK_FMT " Link detached by peer: %s %s",
               link->conn->id, link->id, pn_condition_get_name(c),
               pn_condition_get_description(c) ? pn_condition_get_description(c) : "");
        if (link->core && !link->detached) /* a routed link passes it on */
            jn_core_link_set_error_IO(link->core, pn_condition_get_name(c),
                                      pn_condition_get_description(c));
    }
    if (!closed && link->core && !link->detached)
        jn_core_link_set_unclosed_IO(link->core); /* so does it a detach */
    link->remote_unclosed = !closed;
    /* a link-routed link's answer is the far end's (linkroute.c): the
     * core sends it, or at the latest the release does */
    bool answer_later = link->passthrough && link->core && !link->detached;
    if (!link->local_closed && !answer_later) {
        if (closed)
            pn_link_close(pl);
        else
            pn_link_detach(pl);
        link->local_closed = true;
    }
    if (link->detached && !link->core) {
        pn_link_set_context(pl, NULL);
        jn_io_link_free_IO(link);
        return;
    }
    link_detached_IO(link);
}

/* Close (closed=true) or only detach our end of the link, with an error
 * condition when condition is not NULL. The peer's detach follows. */
static void link_end_IO(jn_io_link_t *link, bool close, const char *condition,
                        const char *description)
{
    JN_ASSERT_IO(link->conn);
    if (!link->pn || link->local_closed)
        return;
    if (condition) {
        pn_condition_t *c = pn_link_condition(link->pn);
        pn_condition_set_name(c, condition);
        if (description)
            pn_condition_set_description(c, description);
    }
    jn_io_tx_abort_IO(link); /* a partial copy ends aborted, before the detach */
    (close ? pn_link_close : pn_link_detach)(link->pn);
    link->local_closed = true;
}

/* jn_io_link_close_IO: close our end of the link, with an error condition
 * when condition is not NULL. The peer's detach follows. */
void jn_io_link_close_IO(jn_io_link_t *link, const char *condition, const char *description)
{
    JN_ASSERT_IO(link->conn);
    link_end_IO(link, true, condition, description);
}

/* jn_io_link_detach_IO: JN_WORK_LINK_DETACH: detach our end without closing it (closed=false),
 * with an error condition when condition is not NULL. */
void jn_io_link_detach_IO(jn_io_link_t *link, const char *condition, const char *description)
{
    JN_ASSERT_IO(link->conn);
    link_end_IO(link, false, condition, description);
}

/* jn_io_link_open_IO: JN_WORK_LINK_OPEN: attach our end with the termini the peer asked for,
 * address set as the core says. */
void jn_io_link_open_IO(jn_io_link_t *link, const char *address)
{
    JN_ASSERT_IO(link->conn);
    pn_link_t *pl = link->pn;
    if (!pl || link->detached || link->local_closed || link->local)
        return; /* a link we attached ourselves is open already */
    pn_terminus_copy(pn_link_source(pl), pn_link_remote_source(pl));
    pn_terminus_copy(pn_link_target(pl), pn_link_remote_target(pl));
    /* proton 0.37 leaves a received source without an address unspecified;
     * answer with a source and a target as qdrouterd does */
    if (pn_terminus_get_type(pn_link_source(pl)) == PN_UNSPECIFIED)
        pn_terminus_set_type(pn_link_source(pl), PN_SOURCE);
    if (pn_terminus_get_type(pn_link_target(pl)) == PN_UNSPECIFIED)
        pn_terminus_set_type(pn_link_target(pl), PN_TARGET);
    if (address) {
        pn_terminus_t *t = link->dir == JN_LINK_OUTGOING ? pn_link_source(pl) : pn_link_target(pl);
        pn_terminus_set_address(t, address);
    }
    pn_link_set_snd_settle_mode(pl, pn_link_remote_snd_settle_mode(pl));
    pn_link_set_rcv_settle_mode(pl, PN_RCV_FIRST);
    /* the policy's, or the vhost group's for a link the vhost rules let in
     * (not the cap on inter-router control links, which 1.19 does not
     * advertise) */
    uint64_t max =
        link->policy_counted ? link->max_message_size : endpoint_max_message_size(link->conn);
    if (link->dir == JN_LINK_INCOMING && max)
        pn_link_set_max_message_size(pl, max);
    pn_link_open(pl);
}

/* jn_io_link_release_IO: JN_WORK_LINK_RELEASED: the core is done with the
 * link: its proton link is freed when both ends closed, and link is
 * freed. */
void jn_io_link_release_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    pn_link_t *pl = link->pn;
    if (pl) {
        pn_session_t *ssn = pn_link_session(pl);
        pn_link_set_context(pl, NULL);
        pn_state_t st = pn_link_state(pl);
        if (!link->local_closed && (st & PN_REMOTE_CLOSED)) {
            /* a detach whose answer waited for the far end's (above) */
            (link->remote_unclosed ? pn_link_detach : pn_link_close)(pl);
            link->local_closed = true;
            st = pn_link_state(pl);
        }
        if ((st & PN_LOCAL_CLOSED) && (st & PN_REMOTE_CLOSED))
            pn_link_free(pl);
        link->pn = NULL;
        /* a link the core asked for had its own session (io_route.c):
         * kept for the next one */
        if (link->routed || link->streaming)
            jn_io_route_session_idle_IO(link->conn, ssn);
    }
    jn_io_link_free_IO(link);
}

