/*
 * stream.c — streaming links: the extra data links on which a message that
 * is still arriving crosses to another router, so that it does not hold up
 * the messages behind it on the shared priority link (docs/protocol.md,
 * "Streaming links"). Core thread only.
 *
 * Which deliveries. A copy the forwarding picks an inter-router priority
 * data link for streams when its message is not complete yet when it is
 * routed, or carries x-opt-qd.stream (an earlier router streamed it).
 * Closest and multicast copies always stream; balanced ones only toward a
 * peer whose open offered qd.streaming-links (as 1.19). On an edge
 * connection whose peer offered them, a copy toward a sender of either
 * end streams too (an interior's copy for an edge's consumers, an edge's
 * copy up its uplink): its streaming link is an anonymous sender, whose
 * copies carry their address as x-opt-qd.to, as the edge's uplink does.
 * The I/O layer marks what it sends on a streaming link with
 * x-opt-qd.stream, so the routers after this one stream it too.
 *
 * The pool. Each inter-router connection keeps its idle streaming links
 * (conn->ct.stream_idle, the most recently used first). A streaming copy
 * takes one; with none idle, its delivery waits on the connection
 * (conn->ct.stream_wait, counted in its pending copies) and the I/O layer
 * is asked for a new link (JN_WORK_LINK_ATTACH with attach.stream: its own
 * session, capability qd.router-data on both termini, as 1.19 attaches
 * them); the copy is made on it when it attaches, one waiting delivery per
 * link asked for. A link carries one message at a time
 * (link->ct.stream_copy): once the last of it is queued to the I/O layer,
 * or the copy is finished earlier, the link goes back to the pool.
 *
 * The scrubber. Every JN_STREAM_SCRUB_MS (from the figures tick), a
 * connection with more than JN_STREAM_POOL_MAX idle links detaches up to
 * JN_STREAM_SCRUB_BATCH of them, the least recently used first (1.19's
 * constants; its --test-hooks make them 5 s and 2, and so do ours). Only
 * links idle since the previous pass, with no copy unsettled, are
 * detached: one whose last message is still being written would abort it.
 *
 * A peer's extra qd.router-data links need nothing here: they are
 * ordinary incoming data links (link.c, mesh_side.c).
 */
#include "forward_private.h"

#include <stdlib.h>
#include <string.h>

/* A delivery waiting for a streaming link of its next hop's connection. */
typedef struct jn_stream_wait {
    jn_delivery_t *dlv; /* reference owned by the entry */
    struct jn_stream_wait *next;
} jn_stream_wait_t;

/* attach_ref of the links asked for here: its address tells them apart
 * from link-route requests (which carry request ids). */
static const char stream_ref;

bool jn_stream_is_ref(const void *ref)
{
    return ref == &stream_ref;
}

/* Ask conn's I/O thread for one more streaming link: a data link on an
 * inter-router connection, an anonymous sender on an edge connection.
 * Returns 0 or JN_ENOMEM. */
static int ask_link_CT(jn_core_conn_t *conn)
{
    JN_ASSERT_CT(conn->core);
    jn_work_t *w = jn_work_new_CT(conn->core, JN_WORK_LINK_ATTACH);
    if (!w)
        return JN_ENOMEM;
    w->attach.dir = JN_LINK_OUTGOING;
    w->attach.name = strdup("qdlink.stream"); /* the I/O layer names it qdlink.<15> */
    w->attach.ref = (void *)&stream_ref;
    w->attach.stream = conn->inter_router ? JN_STREAM_ATTACH_DATA : JN_STREAM_ATTACH_ANONYMOUS;
    if (!w->attach.name) {
        jn_work_free(w);
        return JN_ENOMEM;
    }
    jn_work_push_CT(conn, w);
    return 0;
}

/* Whether the link `to` may be replaced by a streaming link: a priority
 * data link (balanced: toward a peer that offered streaming links), or a
 * sender on an edge connection whose peer offered them (either end: an
 * interior's to an edge's consumers, an edge's uplink senders). */
static bool streamable_CT(const jn_core_link_t *to, bool balanced)
{
    const jn_core_conn_t *c = to->conn;
    JN_ASSERT_CT(c->core);
    if (to->dir != JN_LINK_OUTGOING || to->ct.streaming || to->ct.routed ||
        to->ct.state != JN_LINK_ST_ATTACHED)
        return false;
    if (c->inter_router)
        return to->type == JN_LINK_DATA && to->priority >= 0 &&
               (!balanced || c->streaming_links);
    return c->edge && c->streaming_links &&
           (to->type == JN_LINK_ENDPOINT || to->type == JN_LINK_EDGE_DOWNLINK ||
            to->type == JN_LINK_EDGE_UPLINK || to->type == JN_LINK_EDGE_ADDR);
}

/* Whether a copy of dlv toward `to` streams. */
static bool wanted_CT(const jn_delivery_t *dlv, const jn_core_link_t *to, bool balanced)
{
    JN_ASSERT_CT(to->conn->core);
    if (dlv->link->conn->internal || !streamable_CT(to, balanced))
        return false;
    const jn_message_t *m = dlv->message;
    if (!jn_message_is_complete(m) && !jn_message_is_aborted(m))
        return true;
    const jn_ra_t *ra = jn_message_annotations(m);
    return ra && ra->stream;
}

jn_core_link_t *jn_stream_route_CT(jn_delivery_t *dlv, jn_core_link_t *to, bool balanced)
{
    JN_ASSERT_CT(to->conn->core);
    if (!wanted_CT(dlv, to, balanced))
        return to;
    jn_core_conn_t *conn = to->conn;
    jn_core_link_t *l = conn->ct.stream_idle;
    if (l) {
        conn->ct.stream_idle = l->ct.stream_next;
        conn->ct.stream_idle_count--;
        l->ct.stream_next = NULL;
        l->ct.stream_pooled = false;
        l->ct.stream_scrub_mark = false;
        return l;
    }
    jn_stream_wait_t *w = malloc(sizeof *w);
    if (!w || ask_link_CT(conn) != 0) {
        free(w);
        return to; /* no memory: the priority link carries it */
    }
    w->dlv = jn_delivery_ref(dlv);
    w->next = NULL;
    if (conn->ct.stream_wait_tail)
        conn->ct.stream_wait_tail->next = w;
    else
        conn->ct.stream_wait = w;
    conn->ct.stream_wait_tail = w;
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_DEBUG,
           "[C%" PRIu64 "] Streaming delivery waits for a new streaming link", conn->conn_id);
    return NULL;
}

/* Put an idle streaming link at the head of its connection's pool. */
static void pool_put_CT(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    JN_ASSERT_CT(conn->core);
    if (link->ct.state != JN_LINK_ST_ATTACHED || conn->ct.closed)
        return;
    link->ct.stream_pooled = true;
    link->ct.stream_next = conn->ct.stream_idle;
    conn->ct.stream_idle = link;
    conn->ct.stream_idle_count++;
}

void jn_stream_done_CT(jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    link->ct.stream_copy = NULL;
    pool_put_CT(link);
}

/* The oldest waiting delivery of conn, taken off its list (NULL: none). */
static jn_delivery_t *wait_pop_CT(jn_core_conn_t *conn)
{
    JN_ASSERT_CT(conn->core);
    jn_stream_wait_t *w = conn->ct.stream_wait;
    if (!w)
        return NULL;
    conn->ct.stream_wait = w->next;
    if (!w->next)
        conn->ct.stream_wait_tail = NULL;
    jn_delivery_t *dlv = w->dlv;
    free(w);
    return dlv;
}

void jn_stream_attached_CT(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    JN_ASSERT_CT(conn->core);
    const char *condition = NULL;
    const char *refusal = jn_router_link_attach_CT(link, &condition);
    if (refusal) {
        jn_link_refuse_CT(link, condition, refusal);
    } else {
        link->ct.state = JN_LINK_ST_ATTACHED;
        link->ct.streaming = true;
        jn_work_link_CT(link, JN_WORK_LINK_OPEN, NULL, NULL, NULL, 0);
    }
    jn_delivery_t *dlv = wait_pop_CT(conn);
    if (!dlv) {
        if (!refusal)
            pool_put_CT(link);
        return;
    }
    jn_fwd_deferred_copy_CT(dlv, refusal ? NULL : link);
    jn_delivery_unref(dlv);
}

void jn_stream_link_gone_CT(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    JN_ASSERT_CT(conn->core);
    link->ct.stream_copy = NULL;
    if (!link->ct.stream_pooled)
        return;
    for (jn_core_link_t **p = &conn->ct.stream_idle; *p; p = &(*p)->ct.stream_next) {
        if (*p == link) {
            *p = link->ct.stream_next;
            conn->ct.stream_idle_count--;
            break;
        }
    }
    link->ct.stream_pooled = false;
    link->ct.stream_next = NULL;
}

void jn_stream_conn_closed_CT(jn_core_conn_t *conn)
{
    JN_ASSERT_CT(conn->core);
    jn_delivery_t *dlv;
    while ((dlv = wait_pop_CT(conn)) != NULL) {
        jn_fwd_deferred_copy_CT(dlv, NULL); /* as a copy that could not be made */
        jn_delivery_unref(dlv);
    }
}

/* Where in conn's pool the least recently used link that may be detached
 * is (NULL: none): idle since the scrubber's previous pass at least
 * (stream_scrub_mark), so that the last octets of a message queued just
 * before (a pre-settled one leaves no copy behind) have been written, and
 * with no copy left unsettled. */
static jn_core_link_t **scrub_candidate_CT(jn_core_conn_t *conn)
{
    JN_ASSERT_CT(conn->core);
    jn_core_link_t **found = NULL;
    for (jn_core_link_t **p = &conn->ct.stream_idle; *p; p = &(*p)->ct.stream_next)
        if ((*p)->ct.stream_scrub_mark && !(*p)->ct.inflight.head && !(*p)->ct.undelivered.head)
            found = p;
    return found;
}

/* Detach up to JN_STREAM_SCRUB_BATCH idle links of conn beyond the pool's
 * size, the least recently used (the pool's tail) first; the links left
 * in the pool are marked for the next pass. */
static void scrub_conn_CT(jn_core_t *core, jn_core_conn_t *conn)
{
    JN_ASSERT_CT(core);
    uint32_t n = 0;
    jn_core_link_t **p;
    while (conn->ct.stream_idle_count > core->stream_pool_max && n < JN_STREAM_SCRUB_BATCH &&
           (p = scrub_candidate_CT(conn)) != NULL) {
        jn_core_link_t *link = *p;
        *p = link->ct.stream_next;
        link->ct.stream_next = NULL;
        conn->ct.stream_idle_count--;
        link->ct.stream_pooled = false;
        link->ct.state = JN_LINK_ST_REFUSED; /* no more copies; gone from management */
        jn_work_link_CT(link, JN_WORK_LINK_CLOSE, NULL, NULL, NULL, 0);
        n++;
    }
    for (jn_core_link_t *l = conn->ct.stream_idle; l; l = l->ct.stream_next)
        l->ct.stream_scrub_mark = true;
    if (n)
        JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_DEBUG,
               "[C%" PRIu64 "] Streaming link scrubber: detached %" PRIu32 " idle links",
               conn->conn_id, n);
}

void jn_stream_tick_CT(jn_core_t *core, int64_t now_ms)
{
    JN_ASSERT_CT(core);
    if (core->ct.stream_scrub_at_ms == 0)
        core->ct.stream_scrub_at_ms = now_ms + core->stream_scrub_ms;
    if (now_ms < core->ct.stream_scrub_at_ms)
        return;
    core->ct.stream_scrub_at_ms = now_ms + core->stream_scrub_ms;
    for (jn_core_conn_t *c = core->ct.conns; c; c = c->ct.next)
        if (c->ct.stream_idle_count > core->stream_pool_max)
            scrub_conn_CT(core, c);
}
