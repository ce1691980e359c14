/*
 * io_own_link.c — links and deliveries of a connection on Junction's own
 * engine (docs/engine.md, stage 2b(ii)), mapped to the core's: the
 * peer's credit; copies sent as their octets arrive, with the sender's
 * state on their first transfer, while the output has room; delivery
 * states with every field (io_own_state.c), dispositions and settlement
 * both ways; the core's work. Attach and detach are in io_own_attach.c,
 * receiving in io_own_rx.c. The structs are in io_own.h; the engine calls
 * the on_* functions on the connection's loop thread, inside
 * jn_amqp_transport_process.
 */
#include "io_own.h"

#include <junction/decoder.h>

#include <junction/annotations.h>
#include <junction/decoder.h>
#include <junction/pool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Drop the segments of the copy in progress not yet framed. */
static void segs_free(jn_io_own_link_t *link)
{
    while (link->tx_nsegs > 0) {
        jn_buffer_unref(link->segs[link->tx_seg_head].buf);
        link->tx_seg_head = (link->tx_seg_head + 1) % JN_IO_OWN_TX_SEGS;
        link->tx_nsegs--;
    }
    link->tx_seg_head = link->tx_seg_off = 0;
    link->pend_len = 0;
}

/* ---- queue entries ------------------------------------------------------- */

/* A copy that cannot start at once waits in an entry from a pool
 * (junction/pool.h). */
static _Atomic(jn_pool_t *) tx_pool;

static jn_pool_t *tx_pool_get(void)
{
    return jn_pool_get_once(&tx_pool, "jn_io_own_tx", sizeof(jn_io_own_tx_t), 0);
}

static void tx_entry_free(jn_io_own_tx_t *q)
{
    jn_pool_free(atomic_load_explicit(&tx_pool, memory_order_acquire), q);
}

/* ---- sending ------------------------------------------------------------- */

void jn_io_own_tx_abandon(jn_io_own_link_t *link)
{
    if (link->tx_dlv) {
        jn_message_stream_copy_end(link->tx_out.message, link->tx_slot);
        jn_message_out_fini(&link->tx_out);
        jn_delivery_unref(link->tx_dlv);
        link->tx_dlv = NULL;
    }
    segs_free(link);
    while (link->txq) {
        jn_io_own_tx_t *q = link->txq;
        link->txq = q->next;
        jn_delivery_unref(q->dlv);
        tx_entry_free(q);
    }
    link->txq_tail = NULL;
}

/* The copy in progress is done: it stays bound for the outcome unless it
 * is settled. */
static void tx_done(jn_io_own_link_t *link)
{
    link->tx_msg_size = link->tx_out.position; /* the octets of this copy (tx_tell_flow) */
    jn_message_stream_copy_end(link->tx_out.message, link->tx_slot);
    jn_message_out_fini(&link->tx_out);
    /* the work item's reference: the binding's from now on, or dropped */
    if (!link->tx_bound)
        jn_delivery_unref(link->tx_dlv);
    else if (link->tx_settle_when_done)
        jn_io_own_settle(link->tx_d, link->tx_dlv, NULL);
    link->tx_dlv = NULL;
    link->tx_bound = false;
    link->tx_d = NULL;
    segs_free(link);
}

/* The copy cannot go (no message parse, no memory): released to its
 * sender. */
static void tx_fail(jn_io_own_link_t *link, jn_delivery_t *dlv)
{
    jn_disposition_t rel = {.type = JN_DISP_RELEASED};
    jn_core_delivery_update_IO(dlv, &rel, true);
    jn_delivery_unref(dlv);
}

/* Start sending dlv (the reference of its work item or queue entry, taken
 * here unless it cannot start), settled when the core settled it already.
 * Returns false when it could not start (no credit: the core's count says
 * there is, a race with a drain), dlv then still the caller's. */
static bool tx_begin(jn_io_own_link_t *link, jn_delivery_t *dlv, bool settled)
{
    jn_message_t *m = jn_delivery_message(dlv);
    jn_buffer_list_t ann;
    jn_buffer_list_init(&ann);
    jn_ra_hop_t hop = {.to_router = !link->own->conn->strip_outbound,
                       .node_id = link->own->conn->io->node_id,
                       .stream = link->streaming};
    const char *to_override = jn_delivery_to_override(dlv);
    jn_iter_t to_it;
    if (to_override && hop.to_router) {
        jn_iter_init_string(&to_it, to_override, JN_VIEW_RAW);
        hop.to_override = &to_it;
        hop.phase = jn_delivery_phase(dlv);
    }
    size_t tag_len;
    const uint8_t *tag = jn_delivery_tag(dlv, &tag_len);
    bool presettled = jn_delivery_presettled(dlv) || settled;
    jn_amqp_delivery_t *d = NULL;
    int rc = jn_amqp_delivery_new(link->l, tag, tag_len, 0, presettled, &d);
    if (rc == JN_AGAIN || rc == JN_EPERM)
        return false;
    link->sent++;
    const jn_disposition_t *state = jn_delivery_state(dlv);
    if (JN_UNLIKELY(state != NULL) && rc == 0) { /* the sender's: on our first transfer too */
        jn_amqp_state_t st;
        uint8_t *heap;
        if (jn_io_own_state_out(state, &st, &heap))
            (void)jn_amqp_delivery_set_state(d, &st); /* out of memory: sent without it */
        free(heap);
    }
    const jn_ra_t *ra = jn_message_annotations(m);
    jn_ra_t fresh, tenant_ra;
    if (JN_UNLIKELY(link->passthrough)) { /* link-routed: the octets as they came */
        if (rc == 0)
            rc = jn_message_out_init_verbatim(&link->tx_out, m);
    } else {
        if (JN_UNLIKELY(to_override && hop.to_router && ra && jn_delivery_rerouted(dlv))) {
            /* an exchange's copy goes to a new address: a new trace and
             * ingress, as 1.19 gives it */
            fresh = *ra;
            fresh.has_trace = false;
            fresh.has_ingress = false;
            ra = &fresh;
        }
        if (JN_UNLIKELY(link->own->conn->tenant) && hop.to_router && ra && ra->has_to)
            ra = jn_io_tenant_ra_IO(link->own->conn, ra, &tenant_ra); /* the client's own address */
        if (rc == 0)
            rc = jn_ra_compose(ra, &hop, &ann);
        if (rc == 0)
            rc = jn_message_out_init(&link->tx_out, m, &ann);
    }
    if (rc != 0) {
        jn_buffer_list_free(&ann);
        if (d)
            (void)jn_amqp_delivery_abort(d);
        tx_fail(link, dlv);
        return true;
    }
    link->tx_dlv = dlv;
    link->tx_d = d;
    link->tx_slot = jn_message_stream_copy_begin(m);
    link->tx_ended = false;
    link->tx_settle_when_done = false;
    link->tx_bound = !presettled;
    if (!presettled) /* the consumer's outcome comes back (on_disposition) */
        jn_io_own_bind(d, dlv); /* the reference tx_dlv holds, the binding's at tx_done */
    jn_io_residence_note_IO(dlv);
    return true;
}

/* Start sending the copy at the head of the queue. Returns false when
 * nothing could start (no credit, or nothing queued). */
static bool tx_start(jn_io_own_link_t *link)
{
    jn_io_own_tx_t *q = link->txq;
    if (!q || !link->l || !tx_begin(link, q->dlv, q->settled))
        return false;
    link->txq = q->next;
    if (!link->txq)
        link->txq_tail = NULL;
    tx_entry_free(q);
    return true;
}

/* Take up to JN_IO_OWN_TX_SEGS segments of the copy into segs, a
 * reference on each buffer (the message's own, or the composed
 * annotations'): the engine references them in its output, so no octet is
 * copied here. Returns JN_EPROTO when the incoming delivery was aborted. */
static int tx_fill(jn_io_own_link_t *link)
{
    while (!link->tx_ended && link->tx_nsegs < JN_IO_OWN_TX_SEGS) {
        const jn_buffer_t *b;
        size_t off, len;
        int rc = jn_message_out_next_buffer(&link->tx_out, &b, &off, &len);
        if (rc == 0) {
            link->tx_ended = true;
        } else if (rc == JN_AGAIN) {
            break; /* its progress still counts: the sender's link may be paused on it */
        } else if (rc < 0) {
            return rc;
        } else {
            uint32_t i = (link->tx_seg_head + link->tx_nsegs++) % JN_IO_OWN_TX_SEGS;
            link->segs[i] = (jn_io_own_seg_t){
                .buf = jn_buffer_ref((jn_buffer_t *)b), .off = (uint32_t)off, .len = (uint32_t)len};
            link->pend_len += len;
        }
    }
    jn_message_stream_copy_progress(link->tx_out.message, link->tx_slot, &link->tx_out);
    return 0;
}

/* Drop the n octets of segs the engine took: a segment taken whole gave
 * its reference to the output (jn_amqp_delivery_send_runs with give), one
 * taken in part keeps it. */
static void pend_drop(jn_io_own_link_t *link, size_t n)
{
    link->pend_len -= n;
    while (n > 0) {
        jn_io_own_seg_t *sg = &link->segs[link->tx_seg_head];
        size_t left = sg->len - link->tx_seg_off;
        if (n < left) {
            link->tx_seg_off += (uint32_t)n;
            return;
        }
        n -= left;
        link->tx_seg_head = (link->tx_seg_head + 1) % JN_IO_OWN_TX_SEGS;
        link->tx_nsegs--;
        link->tx_seg_off = 0;
    }
}

/* The segments as runs in r[] (n of them); returns n. A segment lies in
 * its one buffer's published octets (the cursor handed it out so). */
static size_t segs_runs(const jn_io_own_link_t *link, jn_amqp_run_t *r)
{
    for (uint32_t k = 0; k < link->tx_nsegs; k++) {
        const jn_io_own_seg_t *sg = &link->segs[(link->tx_seg_head + k) % JN_IO_OWN_TX_SEGS];
        uint32_t skip = k == 0 ? link->tx_seg_off : 0;
        r[k] = (jn_amqp_run_t){
            .data = sg->buf->data + sg->off + skip, .len = sg->len - skip, .buf = sg->buf};
    }
    return link->tx_nsegs;
}

/* The copy in progress ends here: aborted, or the engine refused it. */
static void tx_drop(jn_io_own_link_t *link)
{
    if (link->tx_bound) /* tx_done drops the reference */
        jn_io_own_forget(link->tx_d, link->tx_dlv);
    link->tx_bound = false;
    tx_done(link);
}

/* Whether the connection's output holds JN_IO_OWN_OUTPUT_LIMIT octets not
 * yet written: then no more is composed into it until the pass after the
 * socket took some (jn_io_own_pass_IO). */
static bool output_full(jn_io_own_t *own)
{
    if (jn_amqp_conn_output_pending(jn_amqp_transport_conn(own->t)) < JN_IO_OWN_OUTPUT_LIMIT)
        return false;
    own->tx_held = true;
    return true;
}

/* Send what there is of the copy in progress, composing more as the
 * engine takes it. Returns true when it was sent whole (or dropped), false
 * when it waits: for octets (JN_WORK_DELIVERY_CONTINUE) or for the peer's
 * window (the pass after its flow). */
static bool tx_push(jn_io_own_link_t *link)
{
    for (;;) {
        if (tx_fill(link) != 0) { /* aborted (or no memory): the consumer sees it aborted */
            if (link->tx_bound) /* unbound first: the engine frees it */
                jn_io_own_forget(link->tx_d, link->tx_dlv);
            link->tx_bound = false;
            (void)jn_amqp_delivery_abort(link->tx_d);
            tx_done(link);
            return true;
        }
        if (link->pend_len == 0 && !link->tx_ended)
            return false;
        jn_amqp_run_t runs[JN_IO_OWN_TX_SEGS];
        size_t n = segs_runs(link, runs);
        size_t taken = 0;
        int rc = jn_amqp_delivery_send_runs(link->tx_d, runs, n, !link->tx_ended, true, &taken);
        pend_drop(link, taken);
        if (rc == 1) {
            if (JN_UNLIKELY(link->own->conn->msg_log)) /* io_msglog.c */
                jn_io_msg_log_IO(link->own->conn, "Sent", link->tx_out.message);
            if (!link->tx_bound) /* pre-settled, or settled by the peer: the engine freed it */
                link->tx_d = NULL;
            tx_done(link);
            return true;
        }
        if (rc < 0) {
            tx_drop(link);
            return true;
        }
        if (link->pend_len > 0)
            return false; /* the peer's window is shut */
        if (JN_UNLIKELY(output_full(link->own)))
            return false; /* a large copy goes on once the socket took some */
    }
}

/* Tell the core the credit limit it may hand out to (core.h): the
 * copies sent so far plus the peer's credit, but at most a cap past those
 * sent: linkCapacity, or
 * fewer when that many copies of the last one's size would hold more than
 * JN_IO_TX_AHEAD_OCTETS (at least 2). So a consumer that grants a large
 * credit and stops reading leaves the copies in the core's bounded backlog
 * (docs/multicast.md), not queued here. A link-routed link passes the
 * peer's credit as it is (the core bounds it). Told again once half a cap
 * more was sent (tx_run). */
static void tx_tell_flow(jn_io_own_link_t *link)
{
    jn_amqp_link_state_t st = jn_amqp_link_state(link->l);
    uint64_t credit = st.credit, cap = 0;
    if (!link->passthrough) {
        cap = link->own->conn->endpoint->cfg.link_capacity;
        uint64_t by_octets = link->tx_msg_size ? JN_IO_TX_AHEAD_OCTETS / link->tx_msg_size
                                               : JN_IO_TX_FIRST_AHEAD;
        if (by_octets < 2)
            by_octets = 2; /* one in progress and the next ready */
        if (cap == 0 || by_octets < cap)
            cap = by_octets;
    }
    link->flow_cap = cap;
    link->flow_capped = cap > 0 && credit > cap;
    link->flow_sent = link->sent;
    jn_core_link_flow_IO(link->core, link->sent + (link->flow_capped ? cap : credit), st.drain);
    jn_core_link_peer_credit_IO(link->core, link->sent + credit);
}

/* Send on link: the copy in progress, then the queued ones, each begun
 * while the output has room. A copy in progress when called (its octets
 * came, JN_WORK_DELIVERY_CONTINUE; the peer's flow; another copy queued;
 * the pass after the socket took some) goes on only while the output has
 * room too: were it given a round of segments first, every such call
 * would add up to JN_IO_OWN_TX_SEGS buffers past the limit, and a stream
 * whose receive side calls often (large payloads taken by reference,
 * io_own_rx.c) ran the output tens of MB ahead of the socket
 * (docs/engine.md, "Copies per hop"). A copy begun here sends its first
 * round at once (tx_push checks the limit after each round); a small
 * message's send makes the tests it made before. */
static void tx_run(jn_io_own_link_t *link)
{
    for (;;) {
        if (!link->tx_dlv) {
            if (!link->txq || JN_UNLIKELY(output_full(link->own)) || !tx_start(link))
                break;
            if (!link->tx_dlv)
                continue; /* refused at its start: the next one */
        } else if (JN_UNLIKELY(output_full(link->own))) {
            break; /* the pass after the socket took some goes on */
        }
        if (!tx_push(link))
            break;
    }
    if (link->flow_capped && link->core && (link->sent - link->flow_sent) * 2 >= link->flow_cap)
        tx_tell_flow(link); /* a capped limit moves on with what was sent */
}

void jn_io_own_tx_resume_IO(jn_io_own_t *own)
{
    JN_ASSERT_IO(own->conn);
    for (jn_io_own_link_t *link = own->links; link; link = link->next)
        if (!link->incoming && link->l && (link->tx_dlv || link->txq))
            tx_run(link);
}

void jn_io_own_on_flow(void *ctx, jn_amqp_session_t *s, jn_amqp_link_t *l, const jn_amqp_flow_t *f)
{
    jn_io_own_t *own = ctx;
    (void)s;
    (void)f;
    (void)own;
    JN_ASSERT_IO(own->conn);
    jn_io_own_link_t *link = l ? jn_amqp_link_user(l) : NULL;
    if (!link || !link->core)
        return; /* the session's window: the pass resumes every copy */
    if (link->incoming) {
        jn_io_own_rx_flow_IO(link);
        return;
    }
    tx_tell_flow(link);
}

/* ---- dispositions -------------------------------------------------------- */

void jn_io_own_on_disposition(void *ctx, jn_amqp_delivery_t *d, const jn_amqp_disposition_t *disp)
{
    jn_io_own_t *own = ctx;
    JN_ASSERT_IO(own->conn);
    (void)own;
    jn_delivery_t *dlv = jn_amqp_delivery_user(d);
    if (!dlv)
        return;
    bool settled = jn_amqp_delivery_remote_settled(d);
    jn_disposition_t state = {.type = JN_DISP_NONE};
    if ((disp->present & JN_AMQP_FIELD(4)) && !jn_io_own_state_in(&disp->state, &state))
        jn_disposition_clear(&state); /* one the core does not carry: as none */
    jn_core_delivery_update_IO(dlv, state.type ? &state : NULL, settled);
    jn_disposition_clear(&state);
    if (settled) {
        /* the engine frees d when this returns, or, settled before its
         * last frame, once that frame went (the copy goes on, unbound) */
        jn_io_own_link_t *link = jn_amqp_link_user(jn_amqp_delivery_link(d));
        if (link && (link->tx_d == d || link->rx_d == d)) {
            /* being sent or received: the reference stays the link's */
            link->tx_bound = false;
            jn_io_own_forget(d, dlv);
        } else {
            jn_io_own_unbind(d, dlv);
        }
    }
}

/* A state the sender put on a later transfer frame of the copy of w
 * (jn_delivery_late_state_CT) on outgoing link: on the copy's next frame
 * when it is being sent, on its first when it still waits, in a
 * disposition of ours (2.7.6, role sender) when its last frame went and
 * it is not settled; else it has no one to reach. */
static void tx_late_state(jn_io_own_link_t *link, jn_amqp_delivery_t *bound, jn_work_t *w)
{
    for (jn_io_own_tx_t *q = link->txq; q; q = q->next) {
        if (q->dlv == w->dlv) {
            if (jn_delivery_set_later_state_IO(q->dlv, &w->disp) != 0)
                JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR,
                       JN_IO_LINK_FMT " Out of memory for a sender's later state: not passed on",
                       link->own->conn->id, link->id);
            return;
        }
    }
    jn_amqp_state_t st;
    uint8_t *heap;
    if (!jn_io_own_state_out(&w->disp, &st, &heap))
        return;
    int rc = JN_EPERM;
    if (w->dlv == link->tx_dlv && link->tx_d)
        rc = jn_amqp_delivery_set_state(link->tx_d, &st);
    if (rc == JN_EPERM && bound)
        rc = jn_amqp_delivery_update(bound, &st, false);
    if (rc != 0)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_DEBUG,
               JN_IO_LINK_FMT " A sender's later state not passed on (%d)", link->own->conn->id,
               link->id, rc);
    free(heap);
}

/* The core's outcome for an incoming delivery, or the sender's settlement
 * of a copy. */
static void work_update(jn_io_own_link_t *link, jn_work_t *w)
{
    jn_amqp_delivery_t *d = jn_delivery_io(w->dlv); /* bound on this link, or NULL */
    if (d && (!link->l || jn_amqp_delivery_link(d) != link->l))
        d = NULL;
    if (!d) {
        if (JN_UNLIKELY(!w->settled)) { /* a sender's later state, or nothing */
            if (!link->incoming && w->disp.type != JN_DISP_NONE)
                tx_late_state(link, NULL, w);
            return;
        }
        if (!link->incoming && w->dlv == link->tx_dlv)
            link->tx_settle_when_done = true;
        for (jn_io_own_tx_t *q = link->txq; q; q = q->next)
            if (q->dlv == w->dlv)
                q->settled = q->settled || w->settled;
        return;
    }
    if (!link->incoming) {
        if (!w->settled) {
            if (JN_UNLIKELY(w->disp.type != JN_DISP_NONE))
                tx_late_state(link, d, w); /* a sender's later state */
            return;
        }
        if (link->tx_bound && d == link->tx_d) {
            link->tx_settle_when_done = true;
            return;
        }
        jn_io_own_settle(d, w->dlv, NULL);
        return;
    }
    jn_io_own_rx_update_IO(link, d, w);
}

/* ---- the core's work ----------------------------------------------------- */

/* JN_WORK_LINK_OPEN: our attach, the peer's termini back (2.6.3). */
static void work_open(jn_io_own_link_t *link, jn_work_t *w)
{
    if (!link->l || link->local)
        return; /* a link we attached ourselves is open already */
    /* a link route: the far end answered; deliveries pass as they came */
    link->passthrough = w->passthrough;
    if (w->passthrough) /* its detach answered by the far end's */
        (void)jn_amqp_link_hold_detach(link->l, true);
    jn_iter_t body;
    jn_iter_init_bytes(&body, link->attach, link->attach_len, JN_VIEW_RAW);
    jn_amqp_perf_t p;
    jn_amqp_fault_t fault;
    if (jn_amqp_perf_decode(&body, JN_AMQP_FRAME_AMQP, &p, NULL, &fault) != 0)
        return;
    jn_amqp_attach_t a = p.u.attach;
    a.present &= JN_AMQP_FIELD(3) | JN_AMQP_FIELD(5) | JN_AMQP_FIELD(6);
    jn_amqp_terminus_t *t = link->incoming ? &a.target : &a.source;
    uint32_t field = link->incoming ? JN_AMQP_FIELD(6) : JN_AMQP_FIELD(5);
    if (w->address && (a.present & field) && (t->present & JN_AMQP_FIELD(4)) && t->dynamic) {
        /* the address the core (or the container) made for the dynamic node */
        t->present |= JN_AMQP_FIELD(0);
        t->address_is_symbol = false;
        jn_iter_init_string(&t->address, w->address, JN_VIEW_RAW);
        if (!link->incoming) { /* a dynamic source: the reply-to policy's check */
            free(link->dynamic_address);
            link->dynamic_address = strdup(w->address); /* NULL: no reply-to may name it */
        }
    }
    if (link->incoming && link->max_message_size) { /* as 1.19 advertises it */
        a.present |= JN_AMQP_FIELD(10);
        a.max_message_size = link->max_message_size;
    }
    (void)jn_amqp_link_attach(link->l, &a, 0);
}

static void work_drained(jn_io_own_link_t *link)
{
    if (!link->l)
        return;
    uint32_t credit = jn_amqp_link_state(link->l).credit;
    if (jn_amqp_link_drained(link->l) == 1)
        link->sent += credit;
}

static void work_send(jn_io_own_link_t *link, jn_work_t *w)
{
    bool settled = w->settled;
    jn_delivery_t *dlv = jn_work_take_dlv(w);
    if (!link->l) {
        tx_fail(link, dlv);
        return;
    }
    if (!link->txq && !link->tx_dlv && !output_full(link->own) && tx_begin(link, dlv, settled)) {
        tx_run(link); /* begun at once, without a queue entry: its octets go */
        return;
    }
    jn_pool_t *pool = tx_pool_get();
    jn_io_own_tx_t *q = pool ? jn_pool_alloc(pool) : NULL;
    if (!q) {
        tx_fail(link, dlv);
        return;
    }
    q->next = NULL;
    q->dlv = dlv;
    q->settled = settled;
    if (link->txq_tail)
        link->txq_tail->next = q;
    else
        link->txq = q;
    link->txq_tail = q;
    tx_run(link);
}

void jn_io_own_work_IO(jn_io_own_t *own, jn_work_t *w)
{
    JN_ASSERT_IO(own->conn);
    jn_core_link_t *cl = w->link ? w->link : (w->dlv ? jn_delivery_link(w->dlv) : NULL);
    jn_io_own_link_t *link = cl ? jn_core_link_io(cl) : NULL;
    if (!link && w->type == JN_WORK_LINK_ATTACH)
        jn_io_own_route_attach_IO(own, w); /* an auto-link's (io_own_route.c) */
    if (!link) {
        jn_work_free(w);
        return;
    }
    switch (w->type) {
    case JN_WORK_LINK_OPEN:
        work_open(link, w);
        break;
    case JN_WORK_LINK_CLOSE:
    case JN_WORK_LINK_DETACH:
        if (link->held) { /* the answer to the peer's detach: the far end's (freed with it) */
            jn_amqp_link_t *h = link->held;
            link->held = NULL;
            (void)jn_amqp_link_detach(h, w->type == JN_WORK_LINK_CLOSE, w->condition,
                                      w->description);
        } else if (link->l &&
                   jn_amqp_link_detach(link->l, w->type == JN_WORK_LINK_CLOSE, w->condition,
                                       w->description) == JN_EPERM &&
                   jn_amqp_link_attach(link->l, &(jn_amqp_attach_t){0}, 0) == 0) {
            /* the core refused the peer's link before answering it: our
             * attach without terminus first (2.6.3), then the detach */
            (void)jn_amqp_link_detach(link->l, w->type == JN_WORK_LINK_CLOSE, w->condition,
                                      w->description);
        }
        break;
    case JN_WORK_LINK_RELEASED:
        link->released = true;
        if (link->held) { /* a detach whose answer waited for the far end's */
            jn_amqp_link_t *h = link->held;
            link->held = NULL;
            (void)jn_amqp_link_detach(h, link->held_closed, NULL, NULL);
        }
        if (!link->l) {
            jn_work_free(w);
            jn_io_own_link_free(link);
            return;
        }
        break;
    case JN_WORK_LINK_CREDIT:
        if (link->incoming)
            jn_io_own_rx_credit_IO(link, w->credit, w->drain);
        break;
    case JN_WORK_LINK_DRAINED:
        work_drained(link);
        break;
    case JN_WORK_DELIVERY_SEND:
        work_send(link, w); /* takes w */
        return;
    case JN_WORK_DELIVERY_CONTINUE:
        if (link->tx_dlv)
            tx_run(link);
        break;
    case JN_WORK_DELIVERY_UPDATE:
        work_update(link, w);
        break;
    case JN_WORK_LINK_ATTACH:
        /* a link route's far end (io_own_route.c): w->link, and so link,
         * is the client's link, on another connection: not used here */
        jn_io_own_route_attach_IO(own, w);
        break;
    default:
        break;
    }
    jn_work_free(w);
}
