/*
 * io_own_rx.c — the receive side of a link on Junction's own engine
 * (docs/engine.md, stage 2b(ii) round 2): each transfer frame's payload is
 * appended to the message being received; the delivery goes to the core as
 * soon as its headers and annotations parse (the rest follows,
 * JN_WORK_DELIVERY_CONTINUE for its copies, told once per pass); a
 * delivery aborted after it was routed aborts its copies, one aborted or
 * refused before leaves the core unaware and gives its credit back.
 *
 * Flow control, with io_private.h's marks: a routed message whose copies lag
 * more than JN_IO_RX_HIGH_WATER behind its arrival pauses the link (the
 * session's incoming window is not reopened; it is again once below
 * JN_IO_RX_LOW_WATER, looked at by a poll); a link whose held messages
 * pass its budget (JN_IO_LINK_HIGH_WATER) stops at its next delivery (the
 * window and new credit are held until the budget's waker says it is below
 * the low mark); and the core's credit is metered (JN_IO_LINK_FIRST_CREDIT
 * before the first message, then JN_IO_LINK_HIGH_WATER / recent size). A
 * frame inside the window the peer was given is always taken: the engine
 * has read it. The session window (io_own.c: maxSessionFrames frames) thus
 * bounds what arrives past the marks.
 *
 * Everything here runs on the connection's loop thread, inside the
 * engine's on_transfer and on_flow, the core's work, or the pass's end.
 */
#include "io_own.h"

#include <junction/copies.h>

#include <stdlib.h>
#include <string.h>

/* ---- credit and window --------------------------------------------------- */

/* Whether a link of session s holds the peer's window shut. */
static bool window_held(const jn_io_own_t *own, const jn_amqp_session_t *s)
{
    for (const jn_io_own_link_t *k = own->links; k; k = k->next)
        if (k->incoming && k->l && (k->rx_paused || k->rx_stopped) &&
            jn_amqp_link_session(k->l) == s)
            return true;
    return false;
}

/* Keep the peer's session window open (2.5.6): reopen it when half used
 * (or at once with force), unless one of its links is paused or stopped. */
static void rx_window(jn_io_own_link_t *link, bool force)
{
    jn_amqp_session_t *s = jn_amqp_link_session(link->l);
    uint32_t w = link->own->session_window;
    uint32_t open = jn_amqp_session_window(s).incoming_window;
    if (open >= w || (!force && open >= w / 2) || window_held(link->own, s))
        return;
    (void)jn_amqp_session_set_incoming_window(s, w);
}

/* Grant what the meter allows of the credit held back (io_private.h,
 * JN_IO_LINK_HIGH_WATER and JN_IO_LINK_FIRST_CREDIT). */
static void credit_grant(jn_io_own_link_t *link)
{
    if (!link->l || link->rx_stopped)
        return;
    jn_amqp_link_state_t st = jn_amqp_link_state(link->l);
    if (!link->credit_deferred && !st.drain)
        return;
    /* before the first message: a link the router attached to a route
     * container (an auto-link, a link route's container end) gets it all,
     * as 1.19 grants it; a client's link gets
     * JN_IO_LINK_FIRST_CREDIT */
    size_t most = link->rx_avg_size ? JN_IO_LINK_HIGH_WATER / link->rx_avg_size
                  : link->local     ? SIZE_MAX
                                    : JN_IO_LINK_FIRST_CREDIT;
    if (most < 1)
        most = 1;
    size_t room = st.credit < most ? most - st.credit : 0;
    uint32_t give = link->credit_deferred < room ? link->credit_deferred : (uint32_t)room;
    if (give == 0 && !st.drain)
        return;
    link->credit_deferred -= give;
    (void)jn_amqp_link_flow(link->l, st.credit + give, false, false); /* drain off again */
}

/* A drain passed to a link-routed sender (jn_io_own_rx_credit_IO) is
 * answered once the sender holds no credit: its flow advanced the
 * delivery-count, or its deliveries used the credit up (AMQP 1.0 2.6.7).
 * The core is told (after the deliveries before it) and answers the
 * receiver's drain. */
static void rx_drain_check(jn_io_own_link_t *link)
{
    if (!link->drain_passed || !link->l || link->rx_d || !link->core ||
        jn_amqp_link_state(link->l).credit > 0)
        return;
    link->drain_passed = false;
    jn_core_link_drained_IO(link->core);
}

void jn_io_own_rx_credit_IO(jn_io_own_link_t *link, uint32_t credit, bool drain)
{
    JN_ASSERT_IO(link->own->conn);
    if (!link->l)
        return;
    if (drain) {
        /* credit 1 (a broker's link): what was held back is dropped and
         * the credit goes down to 0 without the drain flag; credit 0 (the
         * address lost its last consumer): the sender keeps all the core
         * granted, with the drain flag, as 1.19 holds it
         * (2.6.7) */
        uint32_t deferred = link->credit_deferred;
        link->credit_deferred = 0;
        uint32_t have = jn_amqp_link_state(link->l).credit;
        (void)jn_amqp_link_flow(link->l, credit ? 0 : have + deferred, credit == 0, false);
        if (credit == 0 && link->passthrough) { /* a link route's receiver drains: told back */
            link->drain_passed = true;
            rx_drain_check(link);
        }
        return;
    }
    link->credit_deferred += credit;
    credit_grant(link);
}

void jn_io_own_rx_flow_IO(jn_io_own_link_t *link)
{
    JN_ASSERT_IO(link->own->conn);
    if (link->credit_deferred && link->l && !jn_amqp_link_state(link->l).drain)
        credit_grant(link); /* the sender's flow lowered its credit (a drain answered) */
    if (JN_UNLIKELY(link->drain_passed))
        rx_drain_check(link);
}

/* A delivery the core never saw: its credit back to the sender. */
static void credit_back(jn_io_own_link_t *link)
{
    if (link->l)
        (void)jn_amqp_link_flow(link->l, jn_amqp_link_state(link->l).credit + 1, false, false);
}

/* ---- one delivery -------------------------------------------------------- */

/* Settle the delivery being received with outcome d (JN_DISP_NONE: none)
 * once its last octet is in. */
static void rx_settle_later(jn_io_own_link_t *link, const jn_disposition_t *d)
{
    link->rx_settle_pending = true;
    if (d->type == JN_DISP_NONE)
        return;
    jn_disposition_clear(&link->rx_final);
    if (jn_disposition_copy(&link->rx_final, d) != 0) {
        jn_disposition_clear(&link->rx_final);
        link->rx_final.type = d->type; /* its fields lost: the outcome still goes */
    }
}

/* Reject the delivery being received; the rest of its octets are dropped
 * and it is settled once they are in. */
static void rx_reject(jn_io_own_link_t *link, const char *condition, const char *description)
{
    JN_LOG(JN_LOG_MOD_MESSAGE, JN_LOG_INFO, JN_IO_LINK_FMT " Rejected malformed message: %s %s",
           link->own->conn->id, link->id, condition, description);
    jn_disposition_t d = {.type = JN_DISP_REJECTED,
                          .condition = (char *)condition,
                          .description = (char *)description};
    rx_settle_later(link, &d);
    link->rx_discard = true;
}

/* Release what every copy has passed; return the octets received and not
 * yet handed on by every copy. */
static size_t rx_backlog(jn_io_own_link_t *link)
{
    if (!link->rx_dlv || !link->rx_msg)
        return 0;
    link->rx_trimmed_at = jn_message_length(link->rx_msg);
    return jn_message_stream_trim(link->rx_msg);
}

/* The budget's waker (any thread): the link may take deliveries again.
 * Cleared (jn_io_own_rx_gone) before the connection can go. */
static void rx_wake(void *io_conn)
{
    jn_io_conn_wake(io_conn);
}

void jn_io_own_rx_init_IO(jn_io_own_link_t *link)
{
    JN_ASSERT_IO(link->own->conn);
    /* checked where a message enters the mesh, as 1.19 checks it: not on
     * inter-router connections */
    const jn_io_conn_t *conn = link->own->conn;
    link->max_message_size = conn->inter_router || (conn->edge && !conn->incoming)
                                 ? 0
                                 : conn->endpoint->cfg.max_message_size;
    link->budget = jn_rx_budget_new(JN_IO_LINK_HIGH_WATER, JN_IO_LINK_LOW_WATER);
    jn_rx_budget_set_waker(link->budget, rx_wake, link->own->conn);
}

/* The first frame of a delivery: a message to fill. */
static void rx_begin(jn_io_own_link_t *link, jn_amqp_delivery_t *d)
{
    link->rx_d = d;
    link->rx_trimmed_at = 0;
    if (link->budget && !link->rx_stopped && jn_rx_budget_stop(link->budget)) {
        link->rx_stopped = true; /* this one is in the window already: taken */
        link->own->rx_busy = true;
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_TRACE, JN_IO_LINK_FMT " stopped: %zu octets held",
               link->own->conn->id, link->id, jn_rx_budget_held(link->budget));
    }
    link->rx_msg = jn_message_new();
    if (!link->rx_msg) {
        rx_reject(link, "amqp:resource-limit-exceeded", "router out of memory");
        return;
    }
    jn_message_set_annotation_policy(link->rx_msg, !link->own->conn->strip_inbound);
}

/* The user-id check (docs/design.md "The user-id check"): on a connection
 * whose peer a SASL mechanism authenticated (conn->check_user), a message
 * whose properties user-id is present, not empty and not that user is
 * rejected with amqp:unauthorized-access; the core never sees it, its
 * credit goes back (rx_finish) and the link goes on. Returns true when m
 * may be routed. Called only when conn->check_user is set (the hot path
 * tests that alone). */
static bool rx_user_id_ok(jn_io_own_link_t *link, const jn_message_t *m)
{
    const char *user = link->own->conn->check_user;
    jn_iter_t uid;
    int rc = jn_message_user_id(m, &uid);
    if (rc == JN_ENOENT || (rc == 0 && (jn_iter_length(&uid) == 0 || jn_iter_equal(&uid, user))))
        return true;
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_DEBUG,
           JN_IO_LINK_FMT " Message rejected due to user_id proxy violation. User:%s",
           link->own->conn->id, link->id, user);
    jn_disposition_t d = {.type = JN_DISP_REJECTED,
                          .condition = (char *)"amqp:unauthorized-access",
                          .description = (char *)"user_id proxy violation"};
    rx_settle_later(link, &d);
    link->rx_discard = true;
    return false;
}

/* The per-message checks of link (link->rx_checks, not 0): the user-id
 * check, then the vhost policy's target check of an anonymous sender's
 * message and its reply-to check of a management request (io_policy.c). A
 * message that fails is rejected on its own delivery with
 * amqp:unauthorized-access and never reaches the core; the link goes on.
 * Returns true when m may be routed. */
static bool rx_checks_ok(jn_io_own_link_t *link, const jn_message_t *m)
{
    jn_io_conn_t *conn = link->own->conn;
    if ((link->rx_checks & JN_IO_RX_CHECK_USER_ID) && conn->check_user && !rx_user_id_ok(link, m))
        return false;
    const char *why = NULL;
    if ((link->rx_checks & JN_IO_RX_CHECK_TARGET) &&
        !jn_io_vhost_relay_judge_IO(conn, link->id, &link->policy_transfer_logged, m))
        why = "policy violation on target";
    else if ((link->rx_checks & (JN_IO_RX_CHECK_TARGET | JN_IO_RX_CHECK_REPLY)) &&
             !jn_io_vhost_reply_judge_IO(conn, link->id, &link->policy_transfer_logged,
                                         (link->rx_checks & JN_IO_RX_CHECK_REPLY) != 0, m))
        why = "policy violation on reply-to";
    if (!why)
        return true;
    jn_disposition_t d = {.type = JN_DISP_REJECTED,
                          .condition = (char *)"amqp:unauthorized-access",
                          .description = (char *)why};
    rx_settle_later(link, &d);
    link->rx_discard = true;
    return false;
}

/* Parse what arrived; hand the delivery to the core once it is routable. */
static void rx_try_route(jn_io_own_link_t *link, bool all_in)
{
    jn_message_t *m = link->rx_msg;
    if (all_in && jn_message_length(m) == 0) {
        rx_reject(link, "amqp:decode-error", "empty delivery: a message needs at least one section");
        return;
    }
    if (all_in)
        jn_message_set_complete_unshared(m); /* no delivery holds it yet */
    int rc;
    if (JN_UNLIKELY(link->passthrough)) {
        /* not routed before its first octet: transfers with none at all
         * are rejected whole (above), as 1.19 rejects them (its
         * DISPATCH-1988 test) */
        if (!all_in && jn_message_length(m) == 0)
            return;
        if (jn_amqp_delivery_tag_cut(link->rx_d)) {
            /* a link route carries the sender's tag, which AMQP 1.0
             * (2.8.7) bounds at 32 octets: cut, it could repeat another;
             * as 1.19 */
            rx_reject(link, "amqp:invalid-field", "delivery-tag longer than 32 octets");
            return;
        }
        /* passed on as it came, unread (the user-id check excepted) */
        rc = link->own->conn->check_user ? jn_message_parse(m, JN_DEPTH_PROPERTIES) : 0;
    } else {
        rc = jn_message_parse(m, JN_DEPTH_PROPERTIES);
    }
    if (rc == JN_AGAIN && !all_in)
        return;
    if (rc != 0) {
        const char *cond = jn_message_error_condition(m);
        const char *why = jn_message_error(m);
        rx_reject(link, cond ? cond : "amqp:decode-error", why ? why : "malformed message");
        return;
    }
    if (JN_UNLIKELY(link->rx_checks != 0) && !rx_checks_ok(link, m))
        return;
    if (JN_UNLIKELY(atomic_load_explicit(&jn_io_msg_log_any_, memory_order_relaxed)) &&
        jn_io_msg_log_received_IO(link->own->conn, m, all_in) == JN_AGAIN)
        return; /* message logging reads its application properties: wait for them */
    /* the delivery takes a reference; ours stays while octets still come */
    jn_message_t *given = all_in ? m : jn_message_ref(m);
    if (all_in)
        link->rx_msg = NULL;
    /* the tag as the engine holds it: rx_d is the delivery in hand
     * (called from jn_io_own_on_transfer alone) */
    size_t tag_len;
    const uint8_t *tag = jn_amqp_delivery_tag(link->rx_d, &tag_len);
    jn_delivery_t *dlv = jn_delivery_new_IO(link->core, given, link->rx_settled, tag, tag_len);
    if (!dlv) {
        jn_message_unref(given);
        rx_reject(link, "amqp:resource-limit-exceeded", "router out of memory");
        return;
    }
    if (JN_UNLIKELY(link->rx_state.type != JN_DISP_NONE)) { /* every copy carries it */
        if (jn_delivery_set_state_IO(dlv, &link->rx_state) != 0)
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR,
                   JN_IO_LINK_FMT " Out of memory for a delivery's state: forwarded without it",
                   link->own->conn->id, link->id);
        jn_disposition_clear(&link->rx_state);
    }
    link->rx_dlv = dlv;
    if (!link->rx_settled) /* the outcome goes back to the peer */
        jn_io_own_bind(link->rx_d, dlv); /* rx_dlv's reference, the binding's at rx_finish */
    if (JN_LIKELY(jn_io_loop_self_ != NULL))
        jn_delivery_set_arrival_IO(dlv, jn_io_loop_self_->pass_ns);
    jn_core_delivery_arrived_IO(dlv);
}

/* The delivery's last octet is in, it was aborted, or it ends here (over
 * maxMessageSize): settle what is ours to settle, forget it. */
static void rx_finish(jn_io_own_link_t *link, bool aborted)
{
    jn_delivery_t *dlv = link->rx_dlv;
    /* rx_d bound to dlv: unless the peer settled it, or it was not routed */
    bool bound = dlv && jn_delivery_io(dlv) == link->rx_d;
    if (dlv) {
        if (link->rx_notify)
            jn_core_delivery_continued_IO(dlv);
        jn_message_t *m = jn_delivery_message(dlv);
        size_t size = jn_message_length(m);
        link->rx_avg_size = link->rx_avg_size ? (link->rx_avg_size * 3 + size) / 4 : size;
        if (!link->rx_avg_size)
            link->rx_avg_size = 1;
        jn_message_stream_writer_done(m, link->budget);
    }
    jn_message_unref(link->rx_msg);
    link->rx_msg = NULL;
    bool ours = link->rx_settle_pending && !aborted && !link->rx_settled;
    /* the outcome to settle with, made only when ours to send */
    jn_amqp_state_t st;
    uint8_t *heap = NULL;
    bool known = ours && jn_io_own_state_out(&link->rx_final, &st, &heap);
    if (dlv && (aborted || link->rx_discard || (link->rx_settled && !jn_delivery_presettled(dlv)))) {
        jn_disposition_t none = {.type = JN_DISP_NONE};
        jn_core_delivery_update_IO(dlv, &none, true);
    }
    if (bound) {
        if (ours)
            jn_io_own_settle(link->rx_d, dlv, known ? &st : NULL);
        else if (aborted || link->rx_settled)
            jn_io_own_unbind(link->rx_d, dlv); /* the engine frees it once whole */
    } else if (!dlv && ours) {
        (void)jn_amqp_delivery_update(link->rx_d, known ? &st : NULL, true);
    }
    if (JN_UNLIKELY(heap != NULL))
        free(heap);
    if (!dlv)
        credit_back(link);
    jn_disposition_clear(&link->rx_final);
    jn_disposition_clear(&link->rx_state);
    if (!bound) /* else the binding's now, or dropped with it above */
        jn_delivery_unref(dlv);
    link->rx_dlv = NULL;
    link->rx_d = NULL;
    link->rx_settled = link->rx_discard = link->rx_settle_pending = false;
    link->rx_notify = link->rx_paused = false;
    if (link->credit_deferred)
        credit_grant(link); /* the sender used one */
    if (JN_UNLIKELY(link->drain_passed))
        rx_drain_check(link); /* the sender may have used the credit up */
}

/* The message passed the listener's maxMessageSize, as 1.19 answers it:
 * rejected with amqp:link:message-size-exceeded and settled now, its
 * copies aborted, the link closed (no error: the outcome carries it) and
 * the connection closed with amqp:connection:forced "Message size exceeded". */
static void rx_oversize(jn_io_own_link_t *link)
{
    jn_io_own_t *own = link->own;
    atomic_fetch_add_explicit(&own->conn->io->policy_maxsize_denied, 1, memory_order_relaxed);
    if (!jn_io_vhost_oversize_judge_IO(own->conn, link->id, link->max_message_size)) {
        /* else counted and logged for its vhost (io_policy.c) */
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
               JN_IO_LINK_FMT " Message exceeds maxMessageSize %" PRIu64
                              ": link detached, connection closed",
               own->conn->id, link->id, link->max_message_size);
    }
    if (link->rx_dlv && link->rx_msg) {
        jn_message_set_aborted(link->rx_msg);
        link->rx_notify = true;
    }
    rx_reject(link, "amqp:link:message-size-exceeded", "message exceeds maxMessageSize");
    rx_finish(link, false);
    (void)jn_amqp_link_detach(link->l, true, NULL, NULL); /* its frames are dropped now */
    if (!own->close_sent)
        (void)jn_amqp_conn_close(jn_amqp_transport_conn(own->t), "amqp:connection:forced",
                                 "Message size exceeded");
    own->close_sent = true;
}

/* Copy the octets of it to the end of m. Returns false when memory ran
 * out (the octets copied until then stay). Inlined: it is every small
 * message's receive (hot path). */
__attribute__((always_inline)) static inline bool rx_copy(jn_message_t *m, jn_iter_t *it)
{
    while (!jn_iter_end(it)) {
        uint8_t *p;
        size_t cap;
        if (jn_message_write_space(m, &p, &cap) != 0)
            return false;
        size_t n = jn_iter_copy(it, p, cap);
        JN_COPIES_NOTE(n);
        jn_message_write_commit(m, n);
    }
    return true;
}

/* A payload longer than a buffer: the transport's whole buffers inside
 * it are linked into m (jn_amqp_transport_take), the octets around them
 * copied. Returns false when memory ran out. */
__attribute__((noinline)) static bool rx_take(jn_io_own_link_t *link, jn_message_t *m,
                                              jn_iter_t *it)
{
    jn_iter_t rest;
    jn_buffer_list_t whole;
    if (jn_amqp_transport_take(link->own->t, it, &whole, &rest) == 0)
        return rx_copy(m, it);
    bool ok = rx_copy(m, it);
    if (ok) {
        (void)jn_message_append_buffers(m, &whole); /* never fails */
        return rx_copy(m, &rest);
    }
    jn_buffer_list_free(&whole); /* not appended: memory ran out before */
    return false;
}

/* Append the frame's payload to the message: a payload longer than a
 * buffer gives the message the transport's whole buffers inside it
 * (rx_take: linked, not copied), however far into the message; a shorter
 * one is copied once, into the message's own buffers (cheaper than a
 * buffer of its own for a few hundred octets). Linked buffers are
 * published as copied octets are (the message's length, release order),
 * so the copies send them as they come and the streaming marks below
 * count them alike. Returns false when the delivery ended here. */
static bool rx_append(jn_io_own_link_t *link, const jn_iter_t *payload)
{
    jn_message_t *m = link->rx_msg;
    jn_iter_t it = *payload;
    bool ok = jn_iter_length(&it) > JN_BUFFER_CAPACITY ? rx_take(link, m, &it) : rx_copy(m, &it);
    if (!ok) {
        if (link->rx_dlv) {
            jn_message_set_aborted(m); /* its copies end */
            link->rx_notify = true;
        }
        rx_reject(link, "amqp:resource-limit-exceeded", "router out of memory");
        return true;
    }
    if (JN_UNLIKELY(link->max_message_size) && jn_message_length(m) > link->max_message_size) {
        rx_oversize(link);
        return false;
    }
    /* every 64 KiB: release what the copies passed, pause if far ahead */
    if (link->rx_dlv && jn_message_length(m) - link->rx_trimmed_at >= 65536 &&
        rx_backlog(link) > JN_IO_RX_HIGH_WATER && !link->rx_paused) {
        link->rx_paused = true;
        link->own->rx_busy = true;
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_TRACE, JN_IO_LINK_FMT " paused at %zu",
               link->own->conn->id, link->id, jn_message_length(m));
    }
    return true;
}

/* A state on a transfer frame of the delivery being received: the latest
 * counts. Before the delivery is routed it is kept for its copies' first
 * transfers; after, it goes to them through the core (on their next frame,
 * jn_delivery_late_state_CT). */
static void rx_sender_state(jn_io_own_link_t *link, const jn_amqp_state_t *st)
{
    if (!link->rx_dlv) {
        jn_disposition_clear(&link->rx_state);
        if (!jn_io_own_state_in(st, &link->rx_state))
            jn_disposition_clear(&link->rx_state);
        return;
    }
    jn_disposition_t d;
    if (jn_io_own_state_in(st, &d))
        jn_core_delivery_update_IO(link->rx_dlv, &d, false);
    jn_disposition_clear(&d);
}

void jn_io_own_on_transfer(void *ctx, jn_amqp_link_t *l, jn_amqp_delivery_t *d,
                           const jn_amqp_transfer_t *t, const jn_iter_t *payload)
{
    jn_io_own_t *own = ctx;
    JN_ASSERT_IO(own->conn);
    jn_io_own_link_t *link = jn_amqp_link_user(l);
    if (!link || !link->core)
        return;
    rx_window(link, false);
    if (!link->rx_d)
        rx_begin(link, d);
    else if (link->rx_d != d)
        return; /* the rest of one ended early (never here: its link detached) */
    if (t->settled)
        link->rx_settled = true;
    if (JN_UNLIKELY(t->present & JN_AMQP_FIELD(7))) /* the sender's state (2.7.5) */
        rx_sender_state(link, &t->state);
    if (t->aborted) {
        if (link->rx_dlv && link->rx_msg) {
            jn_message_set_aborted(link->rx_msg);
            link->rx_notify = true;
        }
        rx_finish(link, true);
        return;
    }
    if (!link->rx_discard && !rx_append(link, payload))
        return;
    bool all_in = !t->more;
    if (!link->rx_discard) {
        if (!link->rx_dlv) {
            rx_try_route(link, all_in);
        } else {
            if (all_in)
                jn_message_set_complete(link->rx_msg);
            link->rx_notify = true;
            own->rx_busy = true;
        }
    }
    if (all_in)
        rx_finish(link, false);
}

/* ---- the core's outcomes ------------------------------------------------- */

void jn_io_own_rx_update_IO(jn_io_own_link_t *link, jn_amqp_delivery_t *d, jn_work_t *w)
{
    JN_ASSERT_IO(link->own->conn);
    if (d == link->rx_d) {
        /* still arriving: a settled outcome waits for the last octet (one
         * terminal disposition, not two) */
        if (w->settled) {
            rx_settle_later(link, &w->disp);
            return;
        }
    }
    jn_amqp_state_t st;
    uint8_t *heap;
    bool known = jn_io_own_state_out(&w->disp, &st, &heap);
    if (w->settled)
        jn_io_own_settle(d, w->dlv, known ? &st : NULL);
    else
        (void)jn_amqp_delivery_update(d, known ? &st : NULL, false);
    if (JN_UNLIKELY(heap != NULL)) /* the usual outcome has no fields: none */
        free(heap);
}

/* ---- the pass's end and the link's end ----------------------------------- */

/* One link's part of jn_io_own_rx_flush_IO. Returns true when it still
 * has something to look at next pass. */
static bool rx_flush_link(jn_io_own_link_t *link)
{
    if (link->rx_notify && link->rx_dlv) {
        link->rx_notify = false;
        jn_core_delivery_continued_IO(link->rx_dlv);
    }
    bool busy = false;
    if (link->rx_stopped) {
        if (jn_rx_budget_waiting(link->budget)) {
            busy = true; /* its waker wakes the connection */
        } else {
            link->rx_stopped = false;
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_TRACE, JN_IO_LINK_FMT " going on: %zu octets held",
                   link->own->conn->id, link->id, jn_rx_budget_held(link->budget));
            credit_grant(link);
            if (link->l)
                rx_window(link, true);
        }
    }
    if (link->rx_paused) {
        if (rx_backlog(link) >= JN_IO_RX_LOW_WATER) {
            jn_io_conn_poll_later_IO(link->own->conn, false); /* look again */
            busy = true;
        } else {
            link->rx_paused = false;
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_TRACE, JN_IO_LINK_FMT " resumed at %zu",
                   link->own->conn->id, link->id, jn_message_length(link->rx_msg));
            if (link->l)
                rx_window(link, true);
        }
    }
    return busy;
}

void jn_io_own_rx_flush_IO(jn_io_own_t *own)
{
    JN_ASSERT_IO(own->conn);
    if (!own->rx_busy)
        return;
    bool busy = false;
    for (jn_io_own_link_t *link = own->links; link; link = link->next)
        if (link->incoming && link->core && rx_flush_link(link))
            busy = true;
    own->rx_busy = busy;
}

void jn_io_own_rx_gone(jn_io_own_link_t *link)
{
    if (!link->incoming)
        return;
    jn_delivery_t *dlv = link->rx_dlv;
    if (dlv) {
        if (link->rx_msg && !jn_message_is_complete(link->rx_msg)) {
            jn_message_set_aborted(link->rx_msg); /* its copies end aborted */
            jn_core_delivery_continued_IO(dlv);
        }
        jn_message_stream_writer_done(jn_delivery_message(dlv), link->budget);
        if (jn_delivery_io(dlv) == link->rx_d) /* bound: the reference is ours still */
            jn_io_own_forget(link->rx_d, dlv);
        jn_delivery_unref(dlv);
    }
    jn_message_unref(link->rx_msg);
    jn_disposition_clear(&link->rx_final);
    jn_disposition_clear(&link->rx_state);
    link->rx_msg = NULL;
    link->rx_dlv = NULL;
    link->rx_d = NULL;
    link->rx_settled = link->rx_discard = link->rx_settle_pending = false;
    link->rx_notify = link->rx_paused = link->rx_stopped = false;
    if (link->budget) {
        jn_rx_budget_set_waker(link->budget, NULL, NULL);
        jn_rx_budget_unref(link->budget);
        link->budget = NULL;
    }
}
