/*
 * io_send.c — the send path (hot): the core's outgoing copies become
 * pn_deliveries on the link; each copy's octets are the original header, a
 * message-annotations section composed for this hop, then the original
 * octets shared with every other copy, handed to pn_link_send segment by
 * segment without copying them first (a link-routed link's copy is the
 * original octets alone, with its sender's tag: nothing is composed). The
 * consumer's dispositions go back to the core, and the peer's credit is reported as a limit
 * (core.h).
 *
 * A link sends one delivery at a time (transfers are sequential). A copy
 * whose message is still arriving stays the link's delivery in progress
 * (jn_io_link_t.tx) and continues on JN_WORK_DELIVERY_CONTINUE; copies
 * handed over meanwhile wait, in order, in the link's queue of work items
 * (the taken item's own queue node links them: no allocation). The
 * sender's settlement of a copy that waits there is kept on its item and
 * applied when the copy is sent (it has no pn_delivery before that).
 *
 * Proton reference: an unsettled copy's pn_delivery is held (jn_io_pd_keep,
 * jn_io_pd_release) while its context names the copy, as io_recv.c does for
 * incoming deliveries and for the same reason: proton's transient
 * references then cost a counter update, not a pn_delivery_finalize round
 * trip. Pre-settled copies are settled as soon as they are sent (or, while
 * streaming, stay tx.pd): they get neither the reference nor the context.
 *
 * The core hands out copies within the credit limit this file tells it
 * (jn_io_tx_flow_IO). That limit is the peer's credit (on a link-routed
 * link, as it is: the core bounds it), but at most a cap past the copies
 * already sent: the link's capacity (linkCapacity), or
 * fewer when that many copies of the messages seen lately would hold more
 * than JN_IO_TX_AHEAD_OCTETS (at least 2; JN_IO_TX_FIRST_AHEAD before a
 * size is known). Copies handed over and not yet
 * sent keep their messages' octets, which count toward their sending
 * link's budget (JN_IO_LINK_HIGH_WATER), so a consumer that grants a large
 * credit and stops reading its socket would otherwise make the router keep
 * up to that credit's worth of copies here, pausing their senders, outside
 * the core's bounded backlog for a stuck multicast consumer
 * (docs/multicast.md). When the cap cut the credit, the limit is told again
 * each time half a cap more was sent.
 *
 * Nothing is written here: proton buffers what pn_link_send gets and the
 * connection's loop writes all of it after the pass (io_loop.c). Because that buffer has no
 * limit of its own, a copy stops while the session holds more than
 * JN_IO_TX_SESSION_LIMIT unframed octets, and goes on when proton reports
 * that it framed some (PN_LINK_FLOW), or at the next poll.
 */
#include "io_private.h"

#include <junction/copies.h>

#include <proton/disposition.h>
#include <string.h>

/* ---- the queue of waiting copies --------------------------------------- */

static void wait_push(jn_io_link_t *link, jn_work_t *w)
{
    atomic_store_explicit(&w->node.next, NULL, memory_order_relaxed);
    if (link->tx.wait_tail)
        atomic_store_explicit(&link->tx.wait_tail->node.next, &w->node, memory_order_relaxed);
    else
        link->tx.wait_head = w;
    link->tx.wait_tail = w;
}

static jn_work_t *wait_pop(jn_io_link_t *link)
{
    jn_work_t *w = link->tx.wait_head;
    if (!w)
        return NULL;
    jn_mpsc_node_t *next = atomic_load_explicit(&w->node.next, memory_order_relaxed);
    link->tx.wait_head = next ? (jn_work_t *)((char *)next - offsetof(jn_work_t, node)) : NULL;
    if (!link->tx.wait_head)
        link->tx.wait_tail = NULL;
    return w;
}

/* ---- one copy ----------------------------------------------------------- */

/* A copy that will never be sent: it still counts as one of its message's
 * copies, which must not wait for it (message_stream.c). Frees w. */
static void tx_drop(jn_work_t *w)
{
    jn_message_t *m = jn_delivery_message(w->dlv);
    jn_message_stream_copy_end(m, jn_message_stream_copy_begin(m));
    jn_work_free(w);
}

static bool link_can_send(const jn_io_link_t *link)
{
    return link->pn && !link->detached && !link->local_closed;
}

/* The copy in progress is done (sent, aborted or failed): settle it if it
 * is ours to settle, keep its reference in the pn_delivery's context if
 * the consumer's outcome is still to come. */
static void tx_done_IO(jn_io_link_t *link, bool settle)
{
    JN_ASSERT_IO(link->conn);
    jn_delivery_t *dlv = link->tx.dlv;
    pn_delivery_t *pd = link->tx.pd;
    jn_message_stream_copy_end(link->tx.out.message, link->tx.slot);
    jn_message_out_fini(&link->tx.out);
    if (settle || link->tx.settle_when_done || jn_delivery_presettled(dlv))
        jn_io_pd_release(pd, dlv, true);
    link->tx.dlv = NULL;
    link->tx.pd = NULL;
    link->tx.settle_when_done = false;
}

/* Short segments are gathered into one pn_link_send: a copy that gets
 * annotations for its next hop is three segments (the original header, the
 * message annotations composed for the hop, the rest), and a pn_link_send
 * costs more than copying a few hundred octets. A copy of one segment (the
 * usual single hop) is sent from where it lies, without the copy. */
#define TX_GATHER 512

/* A segment held back (ptr, borrowed from the message or its annotations,
 * valid until the copy's out state moves on: flushed before that) or the
 * octets gathered so far (ptr == data). */
typedef struct tx_gather {
    const uint8_t *ptr;
    size_t n;
    uint8_t data[TX_GATHER];
} tx_gather_t;

static void gather_flush(pn_link_t *pl, tx_gather_t *g)
{
    if (g->n) {
        JN_COPIES_NOTE(g->n); /* pn_link_send copies into proton's buffer */
        pn_link_send(pl, (const char *)g->ptr, g->n);
    }
    g->ptr = g->data;
    g->n = 0;
}

/* Add segment p[0..n) after what g holds, sending what must go first. */
static void gather_add(pn_link_t *pl, tx_gather_t *g, const uint8_t *p, size_t n)
{
    if (g->n == 0 && n < TX_GATHER) {
        g->ptr = p; /* held back, not copied: it may be the only one */
        g->n = n;
        return;
    }
    if (g->n + n <= TX_GATHER) {
        if (g->ptr != g->data) {
            JN_COPIES_NOTE(g->n);
            memcpy(g->data, g->ptr, g->n);
            g->ptr = g->data;
        }
        JN_COPIES_NOTE(n);
        memcpy(g->data + g->n, p, n);
        g->n += n;
        return;
    }
    gather_flush(pl, g);
    if (n < TX_GATHER) {
        g->ptr = p;
        g->n = n;
    } else {
        JN_COPIES_NOTE(n);
        pn_link_send(pl, (const char *)p, n);
    }
}

/* Hand the copy's next octets to proton. Returns true when the copy is
 * finished (the next may start). */
static bool tx_write_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    pn_link_t *pl = link->pn;
    pn_session_t *ssn = pn_link_session(pl);
    tx_gather_t g;
    const uint8_t *p;
    size_t n;
    int rc;
    g.ptr = g.data;
    g.n = 0;
    link->tx.stalled = false;
    for (;;) {
        if (pn_session_outgoing_bytes(ssn) + g.n > JN_IO_TX_SESSION_LIMIT) {
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_TRACE, JN_IO_LINK_FMT " send stalled at %zu",
                   link->conn->id, link->id, link->tx.out.position);
            link->tx.stalled = true;
            jn_io_link_set_busy_IO(link);
            rc = JN_AGAIN;
            break;
        }
        rc = jn_message_out_next(&link->tx.out, &p, &n);
        if (rc != 1)
            break;
        gather_add(pl, &g, p, n);
    }
    gather_flush(pl, &g);
    jn_message_stream_copy_progress(link->tx.out.message, link->tx.slot, &link->tx.out);
    if (rc == JN_AGAIN)
        return false;
    link->tx.sent++; /* advance and abort both consume the credit */
    if (rc == 0) {
        link->tx.msg_size = link->tx.out.position; /* the octets of this copy (tx_limit) */
        if (JN_UNLIKELY(link->conn->msg_log))
            jn_io_msg_log_IO(link->conn, "Sent", link->tx.out.message);
        pn_link_advance(pl);
        tx_done_IO(link, false);
    } else {
        pn_delivery_abort(link->tx.pd); /* the incoming delivery was aborted */
        tx_done_IO(link, true);
    }
    return true;
}

/* Start sending the copy of work w (a DELIVERY_SEND item; freed here). */
static void tx_start_IO(jn_io_link_t *link, jn_work_t *w)
{
    JN_ASSERT_IO(link->conn);
    bool settled = w->settled; /* its sender settled while it waited */
    jn_delivery_t *dlv = jn_work_take_dlv(w);
    jn_message_t *m = jn_delivery_message(dlv);
    size_t tag_len;
    const uint8_t *tag = jn_delivery_tag(dlv, &tag_len);
    pn_delivery_t *pd = pn_delivery(link->pn, pn_dtag((const char *)tag, tag_len));
    const jn_disposition_t *state = jn_delivery_state(dlv);
    /* the sender's: on our first transfer too; one proton cannot name
     * (JN_DISP_RAW: a symbolic descriptor) stays behind */
    if (JN_UNLIKELY(state != NULL) && state->type != JN_DISP_RAW) {
        jn_io_state_apply_IO(pn_delivery_local(pd), state);
        pn_delivery_update(pd, state->type);
    }
    if (JN_UNLIKELY(link->passthrough)) {
        /* link-routed: the octets as they came, nothing composed */
        jn_message_out_init_verbatim(&link->tx.out, m);
        link->tx.dlv = dlv;
        link->tx.pd = pd;
        link->tx.slot = jn_message_stream_copy_begin(m);
        link->tx.settle_when_done = settled;
        jn_io_pd_keep(pd, dlv);
        return;
    }
    jn_buffer_list_t ann;
    jn_buffer_list_init(&ann);
    jn_ra_hop_t hop = {.to_router = !link->conn->strip_outbound,
                       .node_id = link->conn->io->node_id,
                       .stream = link->streaming};
    const char *to_override = jn_delivery_to_override(dlv);
    jn_iter_t to_it;
    if (to_override && hop.to_router) {
        /* the router routed it by its link's target: tell the next router
         * (docs/protocol.md, "Router annotations") */
        jn_iter_init_string(&to_it, to_override, JN_VIEW_RAW);
        hop.to_override = &to_it;
        hop.phase = jn_delivery_phase(dlv);
    }
    const jn_ra_t *ra = jn_message_annotations(m);
    jn_ra_t fresh;
    if (JN_UNLIKELY(to_override && hop.to_router && ra && jn_delivery_rerouted(dlv))) {
        /* an exchange's copy goes to a new address: a new trace and
         * ingress, as it may go back the way it came (docs/design.md,
         * "Exchanges and bindings") */
        fresh = *ra;
        fresh.has_trace = false;
        fresh.has_ingress = false;
        ra = &fresh;
    }
    if (JN_UNLIKELY(link->conn->tenant) && hop.to_router && ra && ra->has_to)
        ra = jn_io_tenant_ra_IO(link->conn, ra, &fresh); /* the client's own address */
    int rc = jn_ra_compose(ra, &hop, &ann);
    if (rc == 0)
        rc = jn_message_out_init(&link->tx.out, m, &ann);
    if (rc != 0) {
        jn_buffer_list_free(&ann);
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING, JN_IO_LINK_FMT " Cannot send a copy: %s",
               link->conn->id, link->id, jn_strerror(rc));
        link->tx.sent++;
        jn_message_stream_copy_end(m, jn_message_stream_copy_begin(m));
        pn_delivery_abort(pd);
        jn_disposition_t rel = {.type = JN_DISP_RELEASED};
        jn_core_delivery_update_IO(dlv, &rel, true);
        jn_delivery_unref(dlv);
        return;
    }
    link->tx.dlv = dlv; /* also the pn_delivery context's reference */
    link->tx.pd = pd;
    link->tx.slot = jn_message_stream_copy_begin(m);
    link->tx.settle_when_done = settled;
    jn_io_pd_keep(pd, dlv);
    jn_io_residence_note_IO(dlv); /* its first transfer starts: residence ends */
}

/* Drained credit is taken once nothing handed over is left to send (the
 * deliveries still in progress need their credit). */
static void tx_maybe_drained_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    if (!link->tx.drain_pending || link->tx.dlv || link->tx.wait_head || !link->pn)
        return;
    link->tx.drain_pending = false;
    link->tx.sent += (uint64_t)pn_link_drained(link->pn);
}

/* The credit limit the core may hand out to (see the top); sets
 * tx.flow_cap and tx.flow_capped (the cap cut the peer's credit). */
static uint64_t tx_limit(jn_io_link_t *link, int credit)
{
    uint64_t c = credit > 0 ? (uint64_t)credit : 0;
    if (JN_UNLIKELY(link->passthrough)) {
        /* a link route passes the receiver's credit to the sender at the
         * far end as it is (1.19); what that sender may have in flight is
         * bounded by the core (the link's unsettled bound, linkroute.c) */
        link->tx.flow_cap = 0;
        link->tx.flow_capped = false;
        return link->tx.sent + c;
    }
    uint64_t cap = link->conn->endpoint->cfg.link_capacity;
    /* before the first copy, its size is not known: a few ahead, and told
     * again (with its size) once half of them are sent */
    uint64_t by_octets =
        link->tx.msg_size > 0 ? JN_IO_TX_AHEAD_OCTETS / link->tx.msg_size : JN_IO_TX_FIRST_AHEAD;
    if (by_octets < 2)
        by_octets = 2; /* one in progress and the next ready */
    if (cap == 0 || by_octets < cap)
        cap = by_octets;
    link->tx.flow_cap = cap;
    link->tx.flow_capped = cap > 0 && c > cap;
    return link->tx.sent + (link->tx.flow_capped ? cap : c);
}

/* Send the copy in progress and then the waiting ones, as far as they go. */
static void tx_pump_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    while (link_can_send(link)) {
        if (!link->tx.dlv) {
            jn_work_t *w = wait_pop(link);
            if (!w)
                break;
            tx_start_IO(link, w);
            if (!link->tx.dlv)
                continue;
        }
        if (!tx_write_IO(link))
            return;
    }
    /* a capped limit moves on with what was sent (see the top); the
     * uncapped case costs this one test */
    if (link->tx.flow_capped && (link->tx.sent - link->tx.flow_sent) * 2 >= link->tx.flow_cap)
        jn_io_tx_flow_IO(link);
    tx_maybe_drained_IO(link);
}

/* ---- entry points ----------------------------------------------------------- */

/* jn_io_tx_send_IO: JN_WORK_DELIVERY_SEND: send w's copy (now or after the
 * ones before it). Takes w. */
void jn_io_tx_send_IO(jn_io_link_t *link, jn_work_t *w)
{
    JN_ASSERT_IO(link->conn);
    if (!link || !link_can_send(link)) {
        tx_drop(w); /* the core released it when the link went */
        return;
    }
    wait_push(link, w);
    if (!link->tx.dlv && !link->tx.stalled)
        tx_pump_IO(link);
}

/* jn_io_tx_continue_IO: more of dlv's message arrived (or it ended): if it
 * is the copy in progress, go on at the end of the batch (once, however
 * many continues came). */
void jn_io_tx_continue_IO(jn_io_link_t *link, jn_delivery_t *dlv)
{
    JN_ASSERT_IO(link->conn);
    if (link && link->tx.dlv == dlv)
        jn_io_link_set_busy_IO(link);
}

/* jn_io_tx_resume_IO: end of batch for a busy outgoing link: go on with
 * the copy in progress and the waiting ones. Returns true when any octet
 * or delivery went out. */
bool jn_io_tx_resume_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    const jn_delivery_t *dlv = link->tx.dlv;
    size_t position = dlv ? link->tx.out.position : 0;
    uint64_t sent = link->tx.sent;
    tx_pump_IO(link);
    return link->tx.dlv != dlv || link->tx.sent != sent ||
           (dlv && link->tx.out.position != position);
}

/* A copy the sender settled before it left: it waits behind the copy in
 * progress (its DELIVERY_SEND in the link's queue, see the top), or it is
 * gone (sent and settled, or dropped). A waiting one is marked to be
 * settled once sent (tx_start_IO). Not the hot path: only the sender's
 * settlement of a copy not begun gets here, and the queue is bounded by
 * the credit the core may use (tx_limit). */
static void tx_settle_waiting_IO(jn_io_link_t *link, const jn_delivery_t *dlv)
{
    JN_ASSERT_IO(link->conn);
    for (jn_work_t *w = link->tx.wait_head; w;) {
        if (w->dlv == dlv) {
            w->settled = true;
            return;
        }
        jn_mpsc_node_t *next = atomic_load_explicit(&w->node.next, memory_order_relaxed);
        w = next ? (jn_work_t *)((char *)next - offsetof(jn_work_t, node)) : NULL;
    }
}

/* jn_io_tx_update_IO: JN_WORK_DELIVERY_UPDATE for an outgoing copy: the
 * sender settled, so settle the copy (its outcome no longer matters): now,
 * or once its last octet is sent when it is in progress or still waits for
 * the copies before it. */
void jn_io_tx_update_IO(jn_io_link_t *link, jn_work_t *work)
{
    JN_ASSERT_IO(link->conn);
    jn_delivery_t *dlv = work->dlv;
    pn_delivery_t *pd = jn_delivery_io(dlv);
    if (!link->pn || !work->settled)
        return;
    if (!pd) {
        tx_settle_waiting_IO(link, dlv);
        return;
    }
    if (pd == link->tx.pd) {
        link->tx.settle_when_done = true;
        return;
    }
    jn_io_pd_release(pd, dlv, true);
}

/* jn_io_tx_delivery_IO: PN_DELIVERY on an outgoing link: the consumer's
 * disposition and/or settlement of a copy; passed to the core. */
void jn_io_tx_delivery_IO(jn_io_link_t *link, pn_delivery_t *pd)
{
    JN_ASSERT_IO(link->conn);
    jn_delivery_t *dlv = pn_delivery_get_context(pd);
    if (!dlv || !pn_delivery_updated(pd))
        return;
    jn_disposition_t d = {.type = pn_delivery_remote_state(pd)};
    if (d.type != JN_DISP_ACCEPTED)
        jn_io_state_read_IO(pn_delivery_remote(pd), &d); /* every field */
    bool settled = pn_delivery_settled(pd);
    pn_delivery_clear(pd);
    jn_core_delivery_update_IO(dlv, &d, settled); /* the core copies d */
    if (d.type != JN_DISP_ACCEPTED)
        jn_io_state_release_IO(&d);
    if (!settled)
        return;
    if (pd == link->tx.pd) {
        link->tx.settle_when_done = true; /* still sending its octets */
        return;
    }
    jn_io_pd_release(pd, dlv, true);
}

/* jn_io_tx_flow_IO: PN_LINK_FLOW on an outgoing link (the peer's flow, or
 * proton framed buffered octets), or a capped limit to move on: resume a
 * stalled copy; tell the core the credit limit (core.h: deliveries sent so
 * far plus the credit left, at most linkCapacity of it: see the top) when
 * it or the drain flag changed. */
void jn_io_tx_flow_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    if (!link->core || link->detached || !link->pn)
        return;
    if (link->tx.stalled)
        jn_io_link_set_busy_IO(link); /* proton framed some: top it up */
    int credit = pn_link_credit(link->pn);
    uint64_t limit = tx_limit(link, credit);
    bool drain = pn_link_get_drain(link->pn);
    jn_core_link_peer_credit_IO(link->core, link->tx.sent + (uint64_t)(credit > 0 ? credit : 0));

    link->tx.flow_sent = link->tx.sent;
    if (link->tx.flow_told && limit == link->tx.flow_limit && drain == link->tx.flow_drain)
        return;
    link->tx.flow_told = true;
    link->tx.flow_limit = limit;
    link->tx.flow_drain = drain;
    jn_core_link_flow_IO(link->core, limit, drain);
}

/* jn_io_tx_drained_IO: JN_WORK_LINK_DRAINED: the core has nothing more for
 * a draining peer: give up the remaining credit (pn_link_drained). */
void jn_io_tx_drained_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    if (!link || !link->pn)
        return;
    link->tx.drain_pending = true;
    tx_maybe_drained_IO(link);
}

/* jn_io_tx_abort_IO: our end of outgoing link is about to be detached or
 * closed: a copy whose transfers have begun cannot end on it, so it is
 * aborted (AMQP 1.0 2.7.5, transfer aborted) and settled, and the consumer
 * sees it end rather than the link end under a partial delivery, as 1.19
 * does (a link-routed sender that detaches mid-message). A copy not yet
 * begun is left to jn_io_tx_link_gone_IO. */
void jn_io_tx_abort_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    if (link->dir != JN_LINK_OUTGOING || !link->tx.dlv || !link->pn ||
        link->tx.out.position == 0)
        return;
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_DEBUG,
           JN_IO_LINK_FMT " Delivery aborted: the link ends at octet %zu of it", link->conn->id,
           link->id, link->tx.out.position);
    link->tx.sent++; /* an abort consumes the credit (tx_write_IO) */
    pn_delivery_abort(link->tx.pd);
    tx_done_IO(link, true);
}

/* jn_io_tx_link_gone_IO: the link or its connection is going: drop the
 * copy in progress, the waiting ones and the references held for
 * unsettled copies (the core releases them to their senders). Idempotent. */
void jn_io_tx_link_gone_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    if (link->dir != JN_LINK_OUTGOING)
        return;
    if (link->tx.dlv) {
        jn_message_stream_copy_end(link->tx.out.message, link->tx.slot);
        jn_message_out_fini(&link->tx.out);
        if (link->pn) {
            jn_io_pd_release(link->tx.pd, link->tx.dlv, false);
        } else {
            jn_delivery_set_io(link->tx.dlv, NULL);
            jn_delivery_unref(link->tx.dlv);
        }
        link->tx.dlv = NULL;
        link->tx.pd = NULL;
    }
    jn_work_t *w;
    while ((w = wait_pop(link)) != NULL)
        tx_drop(w);
    link->tx.stalled = false;
    if (link->pn)
        jn_io_release_unsettled_IO(link->pn);
}
