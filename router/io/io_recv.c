/*
 * io_recv.c — the receive path (hot): octets of incoming deliveries go from
 * pn_link_recv straight into the message's pooled buffers, are parsed as far
 * as routing needs, and are handed to the core; outcomes coming back from
 * consumers are applied to the sender's delivery.
 *
 * One delivery per link is being received at a time (AMQP transfers of a
 * link are sequential), so its state lives in the link (jn_io_link_t.rx),
 * not in a per-delivery allocation. Once routed, the delivery's reference is
 * kept in the pn_delivery's context (one reference shared with rx.dlv while
 * receiving; a pre-settled one is only rx.dlv's, see jn_io_pd_keep) until it is
 * settled on our side, and jn_delivery_io() leads back to the pn_delivery
 * for the core's updates.
 *
 * A delivery that is never given to the core (malformed, too large, aborted
 * before it could be routed, out of memory) is settled here and its credit
 * is given back to the sender at once, because the core, which manages the
 * link's credit, never saw it.
 *
 * Proton reference: while an unsettled routed delivery's context names its
 * jn_delivery, we also hold a reference on its pn_delivery (jn_io_pd_keep,
 * jn_io_pd_release). Without it the link's implicit reference is the only one,
 * and every transient reference proton takes and drops (each PN_DELIVERY
 * event, each pass over the transport's work list, the session's
 * delivery map) parks the pn_delivery again in pn_delivery_finalize, with
 * a link and session reference round trip: several hundred instructions
 * each. Pre-settled deliveries are settled in the batch that routes them
 * (or, while streaming, stay rx.pd): they get neither the reference, which
 * would cost more than it saves, nor the context.
 *
 * Streaming: a routed delivery whose message is still arriving is read only
 * while the octets received but not yet handed on by every copy stay under
 * JN_IO_RX_HIGH_WATER (message_stream.c keeps that count); above it the link
 * pauses, proton's session window (incoming capacity) stops the sender, and
 * a poll resumes reading once the copies are below JN_IO_RX_LOW_WATER.
 *
 * Holding: each incoming link has a budget (junction/message.h,
 * "holding") to which every message it received is charged, when its last
 * octet is in, with what it still holds; the octets are given back when
 * every copy has been sent. Before starting a new delivery the link checks
 * the budget: above JN_IO_LINK_HIGH_WATER it stops (no pn_link_recv, and
 * new credit from the core is held back), and proton's session window
 * stops the sender. The thread that brings the budget below
 * JN_IO_LINK_LOW_WATER wakes the connection (no poll); the link resumes at
 * the end of that batch and gives the held-back credit.
 */
#include "io_private.h"

#include <junction/copies.h>

#include <proton/disposition.h>

#include <string.h>

/* ---- helpers -------------------------------------------------------------- */

/* AMQP 1.0 2.8.7: a delivery-tag is at most 32 octets (core.h: the core
 * keeps that many) */
#define JN_IO_TAG_MAX 32


/* Give credit for a delivery the core never saw. */
static void credit_back_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    if (link->pn && !link->local_closed && !link->detached)
        pn_link_flow(link->pn, 1);
}

/* A drain passed to a link-routed sender (jn_io_rx_credit_IO) is answered
 * once the sender holds no credit: its flow advanced the delivery-count,
 * or its deliveries used the credit up (AMQP 1.0 2.6.7). Tell the core
 * (after the deliveries before it), which answers the receiver's drain. */
static void rx_drain_check_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    if (!link->pn || link->rx.pd || pn_link_credit(link->pn) > 0 || pn_link_queued(link->pn) > 0 ||
        !link->core)
        return;
    link->drain_passed = false;
    jn_core_link_drained_IO(link->core);
}

/* Set our disposition of pd (not yet settled) as d says. A state proton
 * cannot name (JN_DISP_RAW: a symbolic descriptor) goes as none. */
static void disposition_apply(pn_delivery_t *pd, const jn_disposition_t *d)
{
    uint64_t type = d->type;
    if (type != JN_DISP_ACCEPTED) {
        if (JN_UNLIKELY(type == JN_DISP_RAW))
            type = JN_DISP_NONE;
        else
            jn_io_state_apply_IO(pn_delivery_local(pd), d); /* every field */
    }
    pn_delivery_update(pd, type);
}

/* Settle the delivery being received with outcome d (JN_DISP_NONE: none)
 * once its last octet is in, in one disposition. When d cannot be kept
 * (out of memory) the delivery is still settled, with the outcome applied
 * now. */
static void rx_settle_later_IO(jn_io_link_t *link, const jn_disposition_t *d)
{
    JN_ASSERT_IO(link->conn);
    link->rx.settle_pending = true;
    if (d->type == JN_DISP_NONE || pn_delivery_settled(link->rx.pd))
        return;
    jn_disposition_clear(&link->rx.final_disp);
    if (jn_disposition_copy(&link->rx.final_disp, d) != 0) {
        jn_disposition_clear(&link->rx.final_disp);
        disposition_apply(link->rx.pd, d);
    }
}

/* Reject the delivery being received with condition/description; the rest
 * of its octets are dropped and it is settled once they are in. */
static void rx_reject_IO(jn_io_link_t *link, const char *condition, const char *description)
{
    JN_ASSERT_IO(link->conn);
    jn_disposition_t d = {.type = JN_DISP_REJECTED,
                          .condition = (char *)condition,
                          .description = (char *)description};
    rx_settle_later_IO(link, &d);
    link->rx.discard = true;
}

/* Release what every copy has passed; return the octets received but not
 * yet handed on by every copy (0 when the message does not track them). */
static size_t rx_backlog(jn_io_link_t *link)
{
    if (!link->rx.dlv)
        return 0;
    link->rx.trimmed_at = jn_message_length(link->rx.msg);
    return jn_message_stream_trim(link->rx.msg);
}

/* The budget's waker (any thread): the link may take deliveries again. It
 * holds no reference on the connection: the I/O side's is held until the
 * transport closes, and on_transport_closed (io_conn.c) clears the waker
 * under the budget's lock before that reference can go. */
static void rx_wake(void *io_conn)
{
    jn_io_conn_wake(io_conn);
}

/* Stop taking deliveries while the link holds too much. Returns true when
 * stopped (the connection is woken when it may go on). */
static bool rx_stop_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    if (link->rx_stopped)
        return true;
    if (!jn_rx_budget_stop(link->budget))
        return false;
    link->rx_stopped = true;
    jn_io_link_set_busy_IO(link); /* looked at again at each batch end */
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_TRACE, JN_IO_LINK_FMT " stopped: %zu octets held",
           link->conn->id, link->id, jn_rx_budget_held(link->budget));
    return true;
}


/* ---- one delivery ----------------------------------------------------------- */

static void rx_begin_IO(jn_io_link_t *link, pn_delivery_t *pd)
{
    JN_ASSERT_IO(link->conn);
    memset(&link->rx, 0, sizeof link->rx);
    link->rx.pd = pd;
    if (!link->core || link->detached || link->local_closed) {
        link->rx.discard = true; /* the link is going: drop it */
        link->rx.settle_pending = true;
        return;
    }
    link->rx.msg = jn_message_new();
    if (!link->rx.msg) {
        rx_reject_IO(link, "amqp:resource-limit-exceeded", "router out of memory");
        return;
    }
    jn_message_set_annotation_policy(link->rx.msg, !link->conn->strip_inbound);
}

/* The message is too large for the link, as qdrouterd 1.19 answers it:
 * the delivery is rejected with amqp:link:message-size-exceeded and
 * settled at once, before the rest of it is in (its copies, if it was
 * routed already, are aborted), the link is closed (no error on the
 * detach: the outcome carries it) and the connection closed with
 * amqp:connection:forced "Message size exceeded" (what the peer sends
 * until its close is read and dropped). Counted in the policy's
 * maxMessageSizeDenied. rx_read_IO finishes the delivery
 * (link->rx.settle_now). */
static void rx_oversize_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    uint64_t max = link->max_message_size;
    atomic_fetch_add_explicit(&link->conn->io->policy_maxsize_denied, 1, memory_order_relaxed);
    if (!jn_io_vhost_oversize_IO(link)) /* else counted and logged for its vhost */
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
               JN_IO_LINK_FMT " Message exceeds maxMessageSize %" PRIu64
                              ": link detached, connection closed",
               link->conn->id, link->id, max);
    if (link->rx.dlv) {
        jn_message_set_aborted(link->rx.msg);
        link->rx.notify = true;
    }
    rx_reject_IO(link, "amqp:link:message-size-exceeded", "message exceeds maxMessageSize");
    link->rx.settle_now = true;
    jn_io_link_close_IO(link, NULL, NULL);
    jn_io_conn_close_IO(link->conn, "amqp:connection:forced", "Message size exceeded");
}

/* Copy what proton holds for the delivery into the message, up to the
 * high-water mark. Returns the number of octets read. */
static size_t rx_copy_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    pn_delivery_t *pd = link->rx.pd;
    jn_message_t *m = link->rx.msg;
    uint64_t max = link->max_message_size;
    size_t got = 0;
    size_t pending;
    while ((pending = pn_delivery_pending(pd)) > 0) {
        /* every 64 KiB: release what the copies passed, pause if far ahead */
        if (link->rx.dlv && jn_message_length(m) - link->rx.trimmed_at >= 65536 &&
            rx_backlog(link) > JN_IO_RX_HIGH_WATER) {
            link->rx.paused = true;
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_TRACE, JN_IO_LINK_FMT " paused at %zu", link->conn->id,
                   link->id, jn_message_length(m));
            break;
        }
        uint8_t *space;
        size_t len;
        if (jn_message_write_space(m, &space, &len) != 0) {
            if (link->rx.dlv) {
                jn_message_set_aborted(m); /* its copies end */
                link->rx.notify = true;
            }
            rx_reject_IO(link, "amqp:resource-limit-exceeded", "router out of memory");
            break;
        }
        ssize_t n = pn_link_recv(link->pn, (char *)space, len < pending ? len : pending);
        if (n <= 0)
            break;
        JN_COPIES_NOTE((size_t)n); /* pn_link_recv copies from proton's buffer */
        jn_message_write_commit(m, (size_t)n);
        got += (size_t)n;
        if (max && jn_message_length(m) > max) {
            rx_oversize_IO(link);
            break;
        }
    }
    return got;
}

/* Drop what proton holds for a delivery we are not keeping. */
static void rx_drain_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    char scratch[4096];
    while (pn_link_recv(link->pn, scratch, sizeof scratch) > 0) {
    }
}

/* The user-id check (docs/design.md "The user-id check"): a message whose
 * properties user-id is present, not empty, and not the connection's user
 * (authenticated, or "anonymous" under a vhost policy) is rejected with
 * amqp:unauthorized-access, its credit given back; the link and the
 * connection go on. Returns true when the message may go on. Called only
 * on links that check. */
static bool rx_user_id_ok_IO(jn_io_link_t *link, const jn_message_t *m)
{
    JN_ASSERT_IO(link->conn);
    jn_iter_t uid;
    int rc = jn_message_user_id(m, &uid);
    if (rc == JN_ENOENT || (rc == 0 && jn_iter_length(&uid) == 0))
        return true;
    if (rc == 0 && jn_iter_equal(&uid, link->conn->check_user))
        return true;
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_DEBUG,
           JN_IO_LINK_FMT " Message rejected due to user_id proxy violation. User:%s",
           link->conn->id, link->id, link->conn->check_user);
    rx_reject_IO(link, "amqp:unauthorized-access", "user_id proxy violation");
    return false;
}

/* The per-message checks of link (link->rx_checks, not 0): the user-id
 * check, then the vhost policy's target check of an anonymous sender's
 * message and its reply-to check of a management request (docs/design.md
 * "Policy"). A message that fails is rejected on
 * its own delivery with amqp:unauthorized-access, never given to the core
 * (so its credit is given back and nothing is delivered); the link goes
 * on. Returns true when the message may go on. */
static bool rx_checks_ok_IO(jn_io_link_t *link, const jn_message_t *m)
{
    JN_ASSERT_IO(link->conn);
    if ((link->rx_checks & JN_IO_RX_CHECK_USER_ID) && !rx_user_id_ok_IO(link, m))
        return false;
    if ((link->rx_checks & JN_IO_RX_CHECK_TARGET) && !jn_io_vhost_relay_allows_IO(link, m)) {
        rx_reject_IO(link, "amqp:unauthorized-access", "policy violation on target");
        return false;
    }
    if ((link->rx_checks & (JN_IO_RX_CHECK_TARGET | JN_IO_RX_CHECK_REPLY)) &&
        !jn_io_vhost_reply_allows_IO(link, m)) {
        rx_reject_IO(link, "amqp:unauthorized-access", "policy violation on reply-to");
        return false;
    }
    return true;
}

/* Parse what arrived; hand the delivery to the core once it is routable. */
static void rx_try_route_IO(jn_io_link_t *link, bool all_in)
{
    JN_ASSERT_IO(link->conn);
    jn_message_t *m = link->rx.msg;
    if (all_in && jn_message_length(m) == 0) {
        /* transfers with no octets at all: not a message (a bare message
         * has at least one section, AMQP 1.0 part 3, 3.2) */
        JN_LOG(JN_LOG_MOD_MESSAGE, JN_LOG_INFO,
               JN_IO_LINK_FMT " Rejected empty delivery: amqp:decode-error no message sections",
               link->conn->id, link->id);
        rx_reject_IO(link, "amqp:decode-error", "empty delivery: a message needs at least one section");
        return;
    }
    if (all_in)
        jn_message_set_complete_unshared(m); /* no delivery holds it yet */
    /* a link-routed delivery is passed on as it came, unread (the user-id
     * check excepted), as 1.19 does (docs/protocol.md, "Link routes,
     * auto-links and phases on the wire") */
    int rc = JN_UNLIKELY(link->passthrough) && !(link->rx_checks & JN_IO_RX_CHECK_USER_ID)
                 ? 0
                 : jn_message_parse(m, JN_DEPTH_PROPERTIES);
    if (rc == JN_AGAIN && !all_in)
        return;
    if (rc != 0) {
        const char *cond = jn_message_error_condition(m);
        const char *why = jn_message_error(m);
        if (!cond)
            cond = "amqp:decode-error";
        JN_LOG(JN_LOG_MOD_MESSAGE, JN_LOG_INFO, JN_IO_LINK_FMT " Rejected malformed message: %s %s",
               link->conn->id, link->id, cond, why ? why : "");
        rx_reject_IO(link, cond, why ? why : "malformed message");
        return;
    }
    if (JN_UNLIKELY(link->rx_checks != 0) && !rx_checks_ok_IO(link, m))
        return;
    if (JN_UNLIKELY(atomic_load_explicit(&jn_io_msg_log_any_, memory_order_relaxed)) &&
        jn_io_msg_log_received_IO(link->conn, m, all_in) == JN_AGAIN)
        return; /* message logging reads its application properties: wait for them */
    pn_delivery_t *pd = link->rx.pd;
    pn_delivery_tag_t tag = pn_delivery_tag(pd);
    if (JN_UNLIKELY(link->passthrough) && tag.size > JN_IO_TAG_MAX) {
        /* a link route carries the sender's tag, which AMQP 1.0 (2.8.7)
         * bounds at 32 octets: cut, it could repeat another; as 1.19 */
        rx_reject_IO(link, "amqp:invalid-field", "delivery-tag longer than 32 octets");
        return;
    }
    /* The delivery takes a reference; keep ours while octets still come. */
    jn_message_t *given = all_in ? m : jn_message_ref(m);
    if (all_in)
        link->rx.msg = NULL;
    jn_delivery_t *dlv =
        jn_delivery_new_IO(link->core, given, pn_delivery_settled(pd), tag.start, tag.size);
    if (!dlv) {
        jn_message_unref(given);
        rx_reject_IO(link, "amqp:resource-limit-exceeded", "router out of memory");
        return;
    }
    uint64_t state = pn_delivery_remote_state(pd);
    if (JN_UNLIKELY(state != 0)) { /* a state on the transfer: every copy carries it */
        jn_disposition_t d = {.type = state};
        jn_io_state_read_IO(pn_delivery_remote(pd), &d);
        if (jn_delivery_set_state_IO(dlv, &d) != 0)
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR,
                   JN_IO_LINK_FMT " Out of memory for a delivery's state: forwarded without it",
                   link->conn->id, link->id);
        jn_io_state_release_IO(&d);
    }
    link->rx.dlv = dlv; /* also the pn_delivery context's reference */
    jn_io_pd_keep(pd, dlv);
    if (JN_LIKELY(jn_io_loop_self_ != NULL)) /* its pass's start: residence begins */
        jn_delivery_set_arrival_IO(dlv, jn_io_loop_self_->pass_ns);
    jn_core_delivery_arrived_IO(dlv);
}

/* The delivery's last octet is in (or it was aborted): settle what is ours
 * to settle, move proton to the next delivery, forget rx. */
static void rx_finish_IO(jn_io_link_t *link, bool aborted)
{
    JN_ASSERT_IO(link->conn);
    pn_delivery_t *pd = link->rx.pd;
    jn_delivery_t *dlv = link->rx.dlv;
    if (dlv && link->rx.notify)
        jn_core_delivery_continued_IO(dlv);
    if (dlv) { /* the last touch of its octets here */
        jn_message_t *m = jn_delivery_message(dlv);
        size_t size = jn_message_length(m);
        link->rx_avg_size = link->rx_avg_size ? (link->rx_avg_size * 3 + size) / 4 : size;
        if (!link->rx_avg_size)
            link->rx_avg_size = 1;
        jn_message_stream_writer_done(m, link->budget);
    }
    jn_message_unref(link->rx.msg);
    bool settle = link->rx.settle_pending || aborted || pn_delivery_settled(pd);
    if (JN_UNLIKELY(link->rx.final_disp.type != JN_DISP_NONE)) {
        if (!aborted && !pn_delivery_settled(pd))
            disposition_apply(pd, &link->rx.final_disp); /* with the settlement below */
        jn_disposition_clear(&link->rx.final_disp);
    }
    pn_link_advance(link->pn);
    if (!dlv) {
        pn_delivery_settle(pd);
        credit_back_IO(link);
    } else if (settle) {
        if (aborted || link->rx.discard ||
            (pn_delivery_settled(pd) && !jn_delivery_presettled(dlv))) {
            jn_disposition_t none = {.type = JN_DISP_NONE};
            jn_core_delivery_update_IO(dlv, &none, true);
        }
        jn_io_pd_release(pd, dlv, true);
    }
    memset(&link->rx, 0, sizeof link->rx);
    if (JN_UNLIKELY(link->drain_passed))
        rx_drain_check_IO(link); /* the sender may have used the credit up */
    if (link->credit_deferred)
        jn_io_rx_credit_IO(link, 0, false); /* the sender used one */
}

/* Read as much of the current delivery as allowed. Returns true when it is
 * finished (the link may start the next one). */
static bool rx_read_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    pn_delivery_t *pd = link->rx.pd;
    link->rx.paused = false;
    size_t got = link->rx.discard ? 0 : rx_copy_IO(link);
    if (link->rx.discard) {
        if (JN_UNLIKELY(link->rx.settle_now)) { /* over maxMessageSize */
            rx_finish_IO(link, false);
            return true;
        }
        rx_drain_IO(link);
    }
    bool aborted = pn_delivery_aborted(pd);
    bool all_in = aborted || (!pn_delivery_partial(pd) && pn_delivery_pending(pd) == 0);
    if (!link->rx.discard) {
        if (!link->rx.dlv) {
            if (aborted) {
                link->rx.discard = true; /* aborted before it could be routed */
            } else {
                rx_try_route_IO(link, all_in);
            }
        } else {
            if (aborted)
                jn_message_set_aborted(link->rx.msg);
            else if (all_in)
                jn_message_set_complete(link->rx.msg);
            link->rx.notify = link->rx.notify || got > 0 || all_in;
        }
    }
    if (all_in) {
        rx_finish_IO(link, aborted);
        return true;
    }
    if (link->rx.notify || link->rx.paused)
        jn_io_link_set_busy_IO(link);
    return false;
}

/* Start and read deliveries while proton has them and we are not paused. */
static void rx_pump_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    while (link->pn) {
        if (!link->rx.pd) {
            pn_delivery_t *pd = pn_link_current(link->pn);
            if (!pd || pn_delivery_get_context(pd) || !pn_delivery_readable(pd))
                return;
            if (rx_stop_IO(link))
                return;
            rx_begin_IO(link, pd);
        }
        if (!rx_read_IO(link))
            return;
    }
}

/* ---- entry points ----------------------------------------------------------- */

/* jn_io_rx_delivery_IO: PN_DELIVERY on incoming link: new octets, a new
 * delivery, or the sender settled an earlier one. */
void jn_io_rx_delivery_IO(jn_io_link_t *link, pn_delivery_t *pd)
{
    JN_ASSERT_IO(link->conn);
    if (pd != link->rx.pd) {
        jn_delivery_t *dlv = pn_delivery_get_context(pd);
        if (dlv) {
            if (pn_delivery_settled(pd)) {
                jn_disposition_t none = {.type = JN_DISP_NONE};
                jn_core_delivery_update_IO(dlv, &none, true);
                jn_io_pd_release(pd, dlv, true);
            }
            return;
        }
    }
    if (link->rx.paused || link->rx_stopped)
        return; /* the poll / the budget's wake resumes it */
    rx_pump_IO(link);
}

/* jn_io_rx_resume_IO: end of batch for a busy incoming link: tell the core
 * of new octets (once per batch), and resume a paused link below the
 * low-water mark. Returns true when a paused link resumed. */
bool jn_io_rx_resume_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    if (link->rx.notify && link->rx.dlv) {
        link->rx.notify = false;
        jn_core_delivery_continued_IO(link->rx.dlv);
    }
    if (link->rx_stopped) {
        if (jn_rx_budget_waiting(link->budget)) {
            jn_io_link_set_busy_IO(link); /* still above the low mark */
            return false;
        }
        link->rx_stopped = false;
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_TRACE, JN_IO_LINK_FMT " going on: %zu octets held",
               link->conn->id, link->id, jn_rx_budget_held(link->budget));
        if (link->credit_deferred)
            jn_io_rx_credit_IO(link, 0, false);
        rx_pump_IO(link);
        return true;
    }
    if (!link->rx.paused)
        return false;
    if (rx_backlog(link) >= JN_IO_RX_LOW_WATER) {
        jn_io_link_set_busy_IO(link); /* still paused: poll again */
        return false;
    }
    link->rx.paused = false;
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_TRACE, JN_IO_LINK_FMT " resumed at %zu", link->conn->id,
           link->id, jn_message_length(link->rx.msg));
    rx_pump_IO(link);
    if (link->rx.notify && link->rx.dlv) {
        link->rx.notify = false;
        jn_core_delivery_continued_IO(link->rx.dlv);
    }
    return true;
}

/* jn_io_rx_update_IO: JN_WORK_DELIVERY_UPDATE for an incoming delivery:
 * the consumer's outcome and/or settlement, passed to the sender. */
void jn_io_rx_update_IO(jn_io_link_t *link, jn_work_t *work)
{
    JN_ASSERT_IO(link->conn);
    jn_delivery_t *dlv = work->dlv;
    pn_delivery_t *pd = jn_delivery_io(dlv);
    if (!pd || !link->pn)
        return;
    if (work->settled && pd == link->rx.pd) {
        /* still arriving: its outcome goes with its settlement, once the
         * last octet is in (one terminal disposition, not two) */
        rx_settle_later_IO(link, &work->disp);
        return;
    }
    if (work->disp.type != JN_DISP_NONE && !pn_delivery_settled(pd))
        disposition_apply(pd, &work->disp);
    if (!work->settled)
        return;
    jn_io_pd_release(pd, dlv, true);
}

/* jn_io_rx_link_gone_IO: the link or its connection is going: end the
 * delivery being received (its copies are aborted) and drop the references
 * held for unsettled deliveries. Idempotent. */
void jn_io_rx_link_gone_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    if (link->dir != JN_LINK_INCOMING)
        return;
    if (link->rx.pd) {
        jn_delivery_t *dlv = link->rx.dlv;
        if (dlv) {
            if (link->rx.msg && !jn_message_is_complete(link->rx.msg)) {
                jn_message_set_aborted(link->rx.msg);
                jn_core_delivery_continued_IO(dlv);
            }
            jn_message_stream_writer_done(jn_delivery_message(dlv), link->budget);
            if (link->pn) {
                jn_io_pd_release(link->rx.pd, dlv, false);
            } else {
                jn_delivery_set_io(dlv, NULL);
                jn_delivery_unref(dlv);
            }
        }
        jn_message_unref(link->rx.msg);
        jn_disposition_clear(&link->rx.final_disp);
        memset(&link->rx, 0, sizeof link->rx);
    }
    if (link->pn)
        jn_io_release_unsettled_IO(link->pn);
}

/* jn_io_rx_init_IO: a new incoming link: its budget. Out of memory leaves
 * it unbounded (as before budgets) rather than refusing the link. */
void jn_io_rx_init_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    link->budget = jn_rx_budget_new(JN_IO_LINK_HIGH_WATER, JN_IO_LINK_LOW_WATER);
    jn_rx_budget_set_waker(link->budget, rx_wake, link->conn);
}

/* jn_io_rx_credit_IO: JN_WORK_LINK_CREDIT: grant more credit (with
 * drain: withdraw the credit, by draining the sender). Plain credit is
 * metered (io_private.h, JN_IO_LINK_HIGH_WATER and JN_IO_LINK_FIRST_CREDIT):
 * what is not granted now is granted as deliveries arrive, when a stopped
 * link goes on, or when the sender's flow lowered its credit (call with
 * credit 0 then). I/O thread of the link's connection. */
void jn_io_rx_credit_IO(jn_io_link_t *link, uint32_t credit, bool drain)
{
    JN_ASSERT_IO(link->conn);
    if (!link->pn || link->detached || link->local_closed)
        return;
    if (drain) {
        /* credit 1 (a broker's link): what was not granted yet is dropped
         * and the link's credit goes down to 0, without the drain flag
         * (2.6.7). credit 0 (a client's sender that sent to an address
         * without destination, link.c): the credit the core granted is
         * all the sender's now, with the drain flag, as 1.19 holds it: a
         * sender that does not honour the drain sends on and each
         * delivery is released at once, none left unsent; one that does
         * gives it all back. */
        uint32_t deferred = link->credit_deferred;
        link->credit_deferred = 0;
        if (credit) {
            pn_link_flow(link->pn, -pn_link_credit(link->pn));
            return;
        }
        pn_link_drain(link->pn, (int)deferred);
        if (link->passthrough) { /* a link route's receiver drains: told back */
            link->drain_passed = true;
            rx_drain_check_IO(link);
        }
        return;
    }
    link->credit_deferred += credit;
    if (pn_link_get_drain(link->pn))
        pn_link_set_drain(link->pn, false); /* credit again after a withdrawal */
    if (link->rx_stopped || !link->credit_deferred)
        return;
    uint32_t give = link->credit_deferred;
    /* before the first message: a link the router attached to a route
     * container (an auto-link, a link route's container end) gets it all,
     * as 1.19 grants it; a client's link gets JN_IO_LINK_FIRST_CREDIT */
    size_t most = link->rx_avg_size ? JN_IO_LINK_HIGH_WATER / link->rx_avg_size
                  : link->routed    ? SIZE_MAX
                                    : JN_IO_LINK_FIRST_CREDIT;
    if (most < 1)
        most = 1;
    int credit_now = pn_link_credit(link->pn);
    size_t have = credit_now > 0 ? (size_t)credit_now : 0;
    size_t room = have < most ? most - have : 0;
    if (give > room)
        give = (uint32_t)room;
    if (give == 0)
        return;
    link->credit_deferred -= give;
    pn_link_flow(link->pn, (int)give);
}

/* jn_io_rx_flow_IO: PN_LINK_FLOW on an incoming link. The sender's flow
 * may have lowered its credit without a delivery: a drain answered by
 * advancing the delivery-count (AMQP 1.0 2.6.7), possibly after the core
 * granted new credit that the meter held back because the drained credit
 * still counted. No delivery would follow to grant it, so grant the
 * metered credit held back now. I/O thread of the link's connection. */
void jn_io_rx_flow_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    if (JN_UNLIKELY(link->drain_passed))
        rx_drain_check_IO(link);
    if (link->credit_deferred && link->pn && !pn_link_get_drain(link->pn))
        jn_io_rx_credit_IO(link, 0, false);
}
