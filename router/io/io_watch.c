/*
 * io_watch.c — two watchdogs of a connection, both judged in its pass
 * (io_loop.c, conn_pass) when their timer wakes it: a peer that stops
 * taking our output (write stalls) and one that never completes its
 * opening handshake (initialHandshakeTimeoutSeconds). A deadline met long
 * after it passed because the router itself did not run is not held
 * against the peer ("Our own stalls", io_loop.c).
 */
#include "io_own.h"

#include <junction/log.h>
#include <junction/time.h>

#include <inttypes.h>
#include <stdio.h>

/* ---- write stalls ------------------------------------------------------------

 * A peer that stops reading (or reads a few octets a second: "slowloris")
 * holds its connection, the unsettled deliveries sent to it and what the
 * router buffers for it, for as long as it likes: the engine's idle timeout
 * does not see it (the peer may keep sending), and a close frame cannot
 * reach it. So, when router.writeStallTimeoutSeconds is not 0: the first
 * time the socket refuses output (a short send or EAGAIN), a period of that
 * many seconds starts with the count of octets the socket took so far
 * (conn->octets_written, the one store per send on the hot path). At its
 * end (the stall timer wakes the connection; the pass looks), if the
 * socket has not become writable again (epoll's EPOLLOUT edge comes when
 * the kernel's send buffer drained by a third) and took fewer than
 * JN_IO_WRITE_STALL_MIN_OCTETS octets in the period, the connection is cut
 * with amqp:resource-limit-exceeded (logged once by io_conn.c as the
 * transport's error, with the peer's address); if it took more, another
 * period starts; if it became writable, watching stops until the next
 * refusal. Arming costs the timer lock once per period, and only while
 * the socket refuses output. */

/* The socket refused output: start a period, unless one is running. */
void jn_io_stall_watch_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    if (conn->stall_watch || conn->io->write_stall_ms == 0)
        return;
    conn->stall_watch = true;
    conn->stall_mark = conn->octets_written;
    conn->stall_check_at = (int64_t)jn_time_mono_ms() + conn->io->write_stall_ms;
    atomic_fetch_add(&conn->refs, 1); /* the timer's */
    if (jn_io_timer_cancel(conn->io, &conn->stall))
        jn_io_conn_unref(conn); /* it was armed: one reference is enough */
    jn_io_timer_arm_at(conn->io, &conn->stall, conn->stall_check_at);
}

/* A period ended (conn->stall_check_at <= now): go on, stop, or cut. A
 * check this loop made far too late (its own stall: "Our own stalls"
 * io_loop.c) starts the period again instead: the peer may have drained the
 * socket meanwhile, with the edge that says so not yet taken from epoll,
 * and it was given nothing to take while the router stood still. */
bool jn_io_stall_judge_IO(jn_io_conn_t *conn, int64_t now, bool output_done, uint64_t *taken)
{
    JN_ASSERT_IO(conn);
    conn->stall_watch = false;
    if (JN_UNLIKELY(now - conn->stall_check_at > JN_IO_STALL_MS)) {
        jn_io_stall_watch_IO(conn);
        return false;
    }
    if (conn->writable || output_done)
        return false; /* drained (or nothing left to write): watch the next refusal */
    *taken = conn->octets_written - conn->stall_mark;
    if (*taken >= JN_IO_WRITE_STALL_MIN_OCTETS) {
        jn_io_stall_watch_IO(conn); /* slow but moving: another period */
        return false;
    }
    return true;
}

/* ---- the initial handshake's timeout -------------------------------------

 * A listener's initialHandshakeTimeoutSeconds: the handshake timer (armed
 * by jn_io_conn_start, one reference) wakes the connection at the
 * deadline; if the peer's open has not arrived by then (it stopped in the
 * TLS handshake, in SASL, or never sent anything), the connection is
 * closed with one log line. Cost: one timer per accepted connection, none
 * per message. A deadline this loop met far too late (its own stall) is
 * moved JN_IO_STALL_MS on: an open that arrived meanwhile is read and
 * handled first. */
void jn_io_handshake_check_IO(jn_io_conn_t *conn, int64_t now)
{
    JN_ASSERT_IO(conn);
    if (JN_UNLIKELY(now - conn->handshake_at > JN_IO_STALL_MS)) {
        conn->handshake_at = now + JN_IO_STALL_MS;
        atomic_fetch_add(&conn->refs, 1); /* the timer's */
        if (jn_io_timer_cancel(conn->io, &conn->handshake))
            jn_io_conn_unref(conn); /* it was armed: one reference is enough */
        jn_io_timer_arm_at(conn->io, &conn->handshake, conn->handshake_at);
        return;
    }
    conn->handshake_at = 0;
    if (conn->authsvc) {
        jn_io_authsvc_timeout_IO(conn); /* the auth service did not answer in time */
        return;
    }
    if (conn->opened || conn->closing || conn->transport_closed)
        return;
    conn->handshake_expired = true;
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
           JN_IO_CONN_FMT " Connection from %s (to %s) closed: no AMQP open within %" PRIu32
                          " s (initialHandshakeTimeoutSeconds)",
           conn->id, conn->host, conn->endpoint->shown,
           conn->endpoint->cfg.handshake_timeout_seconds);
    jn_io_tls_abandon_IO(conn); /* a TLS handshake not finished can carry nothing */
    char desc[96];
    snprintf(desc, sizeof desc,
             "no AMQP open within %" PRIu32 " s (initialHandshakeTimeoutSeconds)",
             conn->endpoint->cfg.handshake_timeout_seconds);
    jn_io_own_close_IO(conn, "amqp:resource-limit-exceeded", desc);
}

/* ---- the silence watch ---------------------------------------------------

 * When a neighbour's HELLOs age out (router/core/mesh_side.c), its
 * inter-router connection is most likely half-open, and is closed at once
 * (docs/compat.md, "A silent inter-router connection is closed") — unless
 * octets arrived on it within the last helloMaxAgeSeconds: its HELLOs are
 * then late behind bulk transfers in the sockets' buffers, or its router
 * was briefly starved, and closing it would lose what is routed over it.
 * It stays open, as in 1.19, and is watched: once nothing at all has
 * arrived for helloMaxAgeSeconds it is cut. A live peer sends a HELLO every
 * helloIntervalSeconds, so a healthy connection never trips it; the watch
 * is re-armed from the last octet heard (conn->heard_ms, kept by the pass)
 * and stays on for the connection's life. A deadline met late because the
 * router itself did not run is not held against the peer. */

static void silence_arm(jn_io_conn_t *conn, int64_t at)
{
    conn->silence_watch = true;
    conn->silence_at = at;
    atomic_fetch_add(&conn->refs, 1); /* the timer's */
    if (jn_io_timer_cancel(conn->io, &conn->silence))
        jn_io_conn_unref(conn); /* it was armed: one reference is enough */
    jn_io_timer_arm_at(conn->io, &conn->silence, at);
}

bool jn_io_silence_judge_IO(jn_io_conn_t *conn, const jn_work_t *w)
{
    JN_ASSERT_IO(conn);
    const char *why = w->description ? w->description : "no HELLO";
    int64_t now = (int64_t)jn_time_mono_ms();
    if (conn->heard_ms && now - conn->heard_ms < (int64_t)w->unheard_ms) {
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO,
               "[C%" PRIu64 "] Inter-router connection kept open: %s, but octets arrived "
               "within the last %" PRIu32 " ms",
               conn->id, why, w->unheard_ms);
        conn->silence_ms = w->unheard_ms;
        silence_arm(conn, conn->heard_ms + w->unheard_ms);
        return true;
    }
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_WARNING,
           "[C%" PRIu64 "] Inter-router connection closed: %s, and nothing else arrived "
           "within the last %" PRIu32 " ms",
           conn->id, why, w->unheard_ms);
    return false;
}

bool jn_io_silence_expired_IO(jn_io_conn_t *conn, int64_t now)
{
    JN_ASSERT_IO(conn);
    conn->silence_watch = false;
    if (JN_UNLIKELY(now - conn->silence_at > JN_IO_STALL_MS)) {
        silence_arm(conn, now + conn->silence_ms); /* our own stall: start again */
        return false;
    }
    if (now - conn->heard_ms < (int64_t)conn->silence_ms) {
        silence_arm(conn, conn->heard_ms + conn->silence_ms); /* heard: watch on */
        return false;
    }
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_WARNING,
           "[C%" PRIu64 "] Inter-router connection closed: nothing arrived within the last "
           "%" PRIu32 " ms after its neighbour's HELLOs aged out",
           conn->id, conn->silence_ms);
    return true;
}
