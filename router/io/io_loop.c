/*
 * io_loop.c — the event loops: one per worker thread, each with its own
 * epoll instance, its own eventfd and its own ready queue of woken
 * connections; and what every connection's pass shares: its socket's
 * registration, connect and errors, its start, its moves and its end.
 *
 * Why our own loop (docs/performance.md, "Own event loop"): proton's epoll
 * proactor hands every connection's work between its threads through a
 * mutex and condition variable, re-arms each descriptor with epoll_ctl
 * after every event (EPOLLONESHOT) and wakes a connection through a shared
 * eventfd: about 24 futex calls and 6 epoll_waits per ping-pong round
 * trip through the router. Here a connection belongs to one loop at a
 * time (it moves only to join the connection it exchanges its deliveries
 * with: "Moving a connection" below), its socket is registered once per
 * loop, edge-triggered, and a wake from the loop's own thread (the common
 * case) costs no syscall.
 *
 * A connection is Junction's own AMQP engine (router/amqp, driven by
 * io_own.c) over a non-blocking TCP socket, a TLS session (io_tls.c), a
 * WebSocket bridge (io_bridge.c) or a test's buffers (io_test.c).
 *
 * The pass (conn_pass, then io_own.c's jn_io_own_pass_IO), run when epoll
 * reports the socket or a wake names the connection: read into pooled
 * buffers until a short read, EAGAIN, end of stream or
 * JN_IO_READS_PER_PASS reads (then the connection is run again in the
 * next pass, after the loop's others), never asking first whether the
 * socket is readable (epoll said so once, edge-triggered, and a short
 * read means it is drained); the engine's frames and the core's work; and
 * everything framed leaves in one writev. So a pass that moved many
 * deliveries writes them in one syscall.
 *
 * Wakes (jn_io_conn_wake, any thread): the waker sets the connection's
 * wake_queued flag; the one that set it takes a reference and pushes the
 * connection on its loop's ready queue, and writes the loop's eventfd only
 * when the push found the queue empty and the loop is not awake (the
 * handshake described at jn_io_loop.awake). The loop clears the flag when
 * it takes the connection, before running it, so a wake that comes during
 * the pass runs it again.
 *
 * Loop 0 also keeps the timers (io.c: their earliest deadline bounds its
 * sleep) and the listening sockets (it alone accepts on them).
 */
#include "io_own.h"

#include <junction/pool.h>
#include <junction/time.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* Rounds of passes and inline core runs per loop iteration (see
 * jn_io_loop_main) before the loop polls its sockets again. */
#define LOOP_ROUNDS 4

/* ---- loops -------------------------------------------------------------- */

_Thread_local jn_io_loop_t *jn_io_loop_self_;

jn_io_loop_t *jn_io_adopt(jn_io_conn_t *conn)
{
    jn_io_loop_t *was = jn_io_loop_self_;
    jn_io_loop_self_ = atomic_load_explicit(&conn->loop, memory_order_acquire);
    jn_io_role_ = jn_io_loop_self_;
    return was;
}

void jn_io_adopt_end(jn_io_loop_t *was)
{
    jn_io_loop_self_ = was;
    jn_io_role_ = was;
}

/* jn_io_loop_init: epoll instance, eventfd (registered, level-triggered)
 * and ready queue for loop index of io. 0 or JN_ENOMEM (descriptors).
 * Main thread, before the loop's thread starts. */
int jn_io_loop_init(jn_io_loop_t *loop, jn_io_t *io, unsigned index)
{
    memset(loop, 0, sizeof *loop);
    loop->handle.kind = JN_POLL_WAKE;
    loop->io = io;
    loop->index = index;
    jn_mpsc_init(&loop->ready);
    atomic_init(&loop->awake, true);
    loop->epfd = epoll_create1(EPOLL_CLOEXEC);
    loop->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &loop->handle};
    if (loop->epfd < 0 || loop->evfd < 0 ||
        epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->evfd, &ev) != 0) {
        jn_io_loop_fini(loop);
        return JN_ENOMEM;
    }
    return 0;
}

/* jn_io_loop_fini: close the loop's descriptors. Main thread, after its
 * thread ended. */
void jn_io_loop_fini(jn_io_loop_t *loop)
{
    if (loop->epfd >= 0)
        close(loop->epfd);
    if (loop->evfd >= 0)
        close(loop->evfd);
    loop->epfd = loop->evfd = -1;
}

/* jn_io_loop_notify: make the loop leave epoll_wait now (timers moved,
 * listener requests, stop). Any thread. */
void jn_io_loop_notify(jn_io_loop_t *loop)
{
    uint64_t one = 1;
    ssize_t n;
    do {
        n = write(loop->evfd, &one, sizeof one);
    } while (n < 0 && errno == EINTR);
    /* EAGAIN: the counter is near overflow, the loop is woken anyway */
}

/* jn_io_loop_pick: the loop a new connection goes to (round robin). Any
 * thread. */
jn_io_loop_t *jn_io_loop_pick(jn_io_t *io)
{
    unsigned n = atomic_fetch_add_explicit(&io->next_loop, 1, memory_order_relaxed);
    return &io->loops[n % io->worker_threads];
}

/* Put conn on this loop's pass list (once), with a reference for the pass:
 * at the tail, or at the head when first. The loop's thread. */
static void pass_add_at(jn_io_loop_t *loop, jn_io_conn_t *conn, bool first)
{
    if (conn->in_pass)
        return;
    atomic_fetch_add_explicit(&conn->refs, 1, memory_order_relaxed);
    conn->in_pass = true;
    if (first) {
        conn->pass_next = loop->pass_head;
        loop->pass_head = conn;
        if (!loop->pass_tail)
            loop->pass_tail = conn;
        return;
    }
    conn->pass_next = NULL;
    if (loop->pass_tail)
        loop->pass_tail->pass_next = conn;
    else
        loop->pass_head = conn;
    loop->pass_tail = conn;
}

static void pass_add(jn_io_loop_t *loop, jn_io_conn_t *conn)
{
    pass_add_at(loop, conn, false);
}

/* jn_io_conn_wake: run a pass of the connection soon, on its loop. Any
 * thread (the core, timers, budget wakers, stop). No syscall when the loop
 * is awake.
 *
 * The caller must hold a reference on conn for the whole call, or know
 * that one is held meanwhile (the budget waker: the I/O side's, until
 * on_transport_closed has cleared the waker, io_conn.c). The queue's
 * reference is taken by adding 1 to the count, which is only sound while
 * the count cannot be 0: a wake of a connection whose count already fell
 * to 0 would put its node on the ready queue while conn_free returns the
 * connection to its pool, and the loop's next drain would read the freed
 * node (the use-after-poison in jn_mpsc_drain seen at stop, when the stop
 * woke every registered connection without a reference of its own; see
 * jn_io_conn_tryref for a caller that has none). Debug and sanitizer
 * builds check it. */
void jn_io_conn_wake(jn_io_conn_t *conn)
{
    /* Not started yet (jn_io_conn_start still runs on another thread, e.g.
     * a connector's attempt that a management DELETE wakes): no pass may
     * run beside it, and the wake it ends with, after `started`, comes
     * anyway and sees what this one was for. Checked before wake_queued is
     * touched, so that this cannot swallow that wake. */
    if (JN_UNLIKELY(!atomic_load_explicit(&conn->started, memory_order_acquire)))
        return;
    if (atomic_exchange_explicit(&conn->wake_queued, true, memory_order_acq_rel))
        return; /* queued already, not yet taken: that pass will see this */
    /* the queue's reference, next to the caller's (above) */
    unsigned held = atomic_fetch_add_explicit(&conn->refs, 1, memory_order_relaxed);
    JN_DEBUG_CHECK(held > 0);
    (void)held;
    /* A loop that receives the node after the connection moved away hands
     * it on (take_ready). */
    jn_io_loop_t *loop = atomic_load_explicit(&conn->loop, memory_order_acquire);
    /* The loops are leaving (or gone) when io->exiting is set: a node queued
     * then would outlive their last drain (the core thread's timers may
     * still give connections work during stop). Nothing runs passes any
     * more, so the wake is dropped. (A waker that read exiting just before
     * it was set may still queue its node after that last drain: jn_io_free
     * drains the queues once more when no waker is left.) */
    if (JN_UNLIKELY(!loop || atomic_load_explicit(&conn->io->exiting, memory_order_acquire))) {
        /* registered, not yet handed to a loop (an accept in progress when
         * the router stops): its first pass comes anyway and sees what the
         * wake was for. The caller's reference is held, so this is not the
         * last one. */
        atomic_fetch_sub_explicit(&conn->refs, 1, memory_order_relaxed);
        atomic_store_explicit(&conn->wake_queued, false, memory_order_release);
        return;
    }
    if (!jn_mpsc_push(&loop->ready, &conn->wake_node))
        return;
    if (atomic_load_explicit(&loop->awake, memory_order_seq_cst))
        return; /* running: it looks at the queue before it sleeps */
    jn_io_loop_notify(loop);
}

/* jn_io_loop_drain_exit: drop the references of the wakes left on loop's
 * ready queue, once the loop runs no more passes: its own thread at its
 * end, then jn_io_free's (the loop's thread joined, no waker left), which
 * is the queue's consumer from then on. Returns how many it dropped. */
size_t jn_io_loop_drain_exit(jn_io_loop_t *loop)
{
    jn_mpsc_node_t *nodes[64];
    size_t total = 0;
    /* a push counted and not yet linked cannot remain (its thread ended),
     * but never spin without bound on a count that says otherwise */
    for (int idle = 0; idle < 1000;) {
        size_t n = jn_mpsc_drain(&loop->ready, nodes, 64);
        for (size_t i = 0; i < n; i++) {
            jn_io_conn_t *w = (jn_io_conn_t *)((char *)nodes[i] - offsetof(jn_io_conn_t, wake_node));
            atomic_store_explicit(&w->wake_queued, false, memory_order_release);
            jn_io_conn_unref(w);
        }
        total += n;
        if (n > 0)
            continue;
        if (jn_mpsc_empty(&loop->ready))
            break;
        idle++;
        sched_yield();
    }
    return total;
}

/* ---- the connection's socket ---------------------------------------------- */

/* The socket failed or ended badly: the engine's transport ends with the
 * error (io_own.c). */
static void conn_io_error(jn_io_conn_t *conn, int err, const char *what)
{
    jn_io_own_io_error(conn, err, what);
}

/* jn_io_conn_io_error_IO: conn's socket failed (err, an errno; what: the
 * operation, "on read from"...): as conn_io_error. The connection's I/O
 * thread. (jn_io_conn_start, on the thread starting conn before any loop
 * runs it, calls conn_io_error itself.) */
void jn_io_conn_io_error_IO(jn_io_conn_t *conn, int err, const char *what)
{
    JN_ASSERT_IO(conn);
    conn_io_error(conn, err, what);
}

static void conn_unregister(jn_io_conn_t *conn)
{
    if (conn->fd < 0)
        return;
    jn_io_loop_t *loop = atomic_load_explicit(&conn->loop, memory_order_relaxed);
    epoll_ctl(loop->epfd, EPOLL_CTL_DEL, conn->fd, NULL);
    close(conn->fd);
    conn->fd = -1;
}

/* Register conn->fd with its loop: edge-triggered, once per loop. */
static int conn_register(jn_io_conn_t *conn)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                             .data.ptr = &conn->handle};
    jn_io_loop_t *loop = atomic_load_explicit(&conn->loop, memory_order_relaxed);
    return epoll_ctl(loop->epfd, EPOLL_CTL_ADD, conn->fd, &ev);
}

static void set_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int lowat = JN_IO_NOTSENT_LOWAT;
    setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof lowat);
}

/* Start a non-blocking connect to the next address in conn->ai_next;
 * false when none is left (errno: the last failure). */
static bool connect_next(jn_io_conn_t *conn)
{
    int err = ECONNREFUSED;
    while (conn->ai_next) {
        struct addrinfo *ai = conn->ai_next;
        conn->ai_next = ai->ai_next;
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        set_nodelay(fd);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
            err = errno;
            close(fd);
            continue;
        }
        conn->fd = fd;
        conn->connecting = true;
        conn->readable = conn->writable = false;
        if (conn_register(conn) != 0) {
            err = errno;
            close(fd);
            conn->fd = -1;
            conn->connecting = false;
            continue;
        }
        return true;
    }
    errno = err;
    return false;
}

/* jn_io_conn_start: hand conn (new, reference 1: the I/O side's; its
 * engine attached: jn_io_own_attach or jn_io_own_attach_client) to a loop
 * (conn->place, or the next by round robin) with socket fd (accepted,
 * non-blocking; taken), or fd -1 for a connector with conn->ai_list set
 * (the addresses to try, taken) or, when resolving failed, none (its
 * first pass then ends it as a refused connect; the caller logged why),
 * or a bridged connection (conn->bridge). Nothing may touch conn from
 * the caller's thread afterwards. Returns 0. Any thread. */
int jn_io_conn_start(jn_io_conn_t *conn, int fd)
{
    jn_io_loop_t *loop = conn->place ? conn->place : jn_io_loop_pick(conn->io);
    atomic_store_explicit(&conn->loop, loop, memory_order_relaxed); /* published by the wake */
    atomic_fetch_add_explicit(&loop->conns, 1, memory_order_relaxed);
    conn->fd = -1;
    /* Once the socket is registered the loop may run the connection, close
     * it and drop the I/O side's reference before this returns: hold one
     * of our own until the wake below is queued. */
    atomic_fetch_add_explicit(&conn->refs, 1, memory_order_relaxed);
    if (fd >= 0) {
        set_nodelay(fd);
        conn->fd = fd;
        if (conn_register(conn) != 0) {
            int err = errno;
            close(fd);
            conn->fd = -1;
            conn_io_error(conn, err, "registering");
        }
    } else if (conn->bridge) {
        /* bridged (io_bridge.c): no socket; its owner feeds it */
    } else if (conn->ai_list) {
        conn->ai_next = conn->ai_list;
        if (!connect_next(conn))
            conn_io_error(conn, errno, "connecting to");
    } /* else: resolving failed; the first pass ends it (io_own.c) */
    uint32_t hs = conn->endpoint->cfg.handshake_timeout_seconds;
    if ((conn->incoming || conn->authsvc) && hs > 0) { /* authsvc.c: the service's answer */
        conn->handshake_at = (int64_t)jn_time_mono_ms() + (int64_t)hs * 1000;
        atomic_fetch_add(&conn->refs, 1); /* the timer's */
        jn_io_timer_arm_at(conn->io, &conn->handshake, conn->handshake_at);
    }
    atomic_store_explicit(&conn->started, true, memory_order_release);
    jn_io_conn_wake(conn);
    jn_io_conn_unref(conn); /* ours; the queued wake holds one */
    return 0;
}

/* A connect in progress reported writable (or an error): see how it went;
 * on failure try the next address, then give up with the error. */
void jn_io_conn_connect_done_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    conn->connecting = false;
    if (err == 0) {
        conn->tick_at = 0; /* the transport starts now: ask its idle clock */
        freeaddrinfo(conn->ai_list);
        conn->ai_list = conn->ai_next = NULL;
        return;
    }
    conn_unregister(conn);
    if (!connect_next(conn))
        jn_io_conn_io_error_IO(conn, err, "connecting to");
}

/* ---- moving a connection ----------------------------------------------------------

 * The core asks for two connections that exchange most of their deliveries
 * with each other to share a thread (jn_core_io_ops_t.colocate): a delivery
 * and its outcome then go from one to the other inside one pass round and
 * one inline core run, with no wake of another thread and no cache line
 * crossing between cores (docs/performance.md, "Credit before
 * deliveries, and a flow on one thread"). Placement stays round robin, so
 * separate flows still spread.
 *
 * The owner hands a connection over at the end of one of its passes
 * (conn_move): it takes the socket out of its epoll set, marks the socket
 * readable and writable (an edge it may have taken with it is not lost:
 * the next pass reads and writes until EAGAIN), counts the connection to
 * the new loop, publishes the new loop in conn->loop (release) and wakes
 * it there. From then on the new loop owns it: its first pass registers
 * the socket with its own epoll set (conn_arrive; an edge-triggered
 * registration reports the socket's current state, so nothing arriving
 * meanwhile is missed). A wake that read the old loop before the store
 * lands on the old loop's ready queue; that loop hands it on (take_ready),
 * and until it does the wake flag keeps every other waker off. */

/* jn_io_colocate: the core found a and b exchanging most of their
 * deliveries (jn_core_io_ops_t.colocate). When they are on different
 * loops, ask one of them to move to the other's: the one on the loop with
 * more connections, or on a tie the newer one (higher id). Asking is an
 * atomic store and a wake; the owner moves it after its next pass. Both
 * connections must be valid (the core holds them). The core's thread. */
void jn_io_colocate(jn_io_conn_t *a, jn_io_conn_t *b)
{
    jn_io_t *io = a->io;
    if (io->worker_threads < 2 || atomic_load_explicit(&io->stopping, memory_order_relaxed))
        return;
    jn_io_loop_t *la = atomic_load_explicit(&a->loop, memory_order_acquire);
    jn_io_loop_t *lb = atomic_load_explicit(&b->loop, memory_order_acquire);
    if (la == lb || !la || !lb)
        return;
    unsigned ca = atomic_load_explicit(&la->conns, memory_order_relaxed);
    unsigned cb = atomic_load_explicit(&lb->conns, memory_order_relaxed);
    jn_io_conn_t *mover = b;
    jn_io_loop_t *to = la;
    if (cb < ca || (ca == cb && b->id < a->id)) {
        mover = a;
        to = lb;
    }
    if ((int64_t)jn_time_mono_ms() < atomic_load_explicit(&mover->move_after, memory_order_relaxed))
        return; /* it moved lately: it stays a while (JN_IO_MOVE_HOLD_MS) */
    atomic_store_explicit(&mover->move_to, to, memory_order_relaxed);
    jn_io_conn_wake(mover);
}

/* Hand conn over from loop (its owner, the calling thread) to to, at the
 * end of a pass; false when it stays (closing, connecting, stopping). */
static bool conn_move(jn_io_loop_t *loop, jn_io_conn_t *conn, jn_io_loop_t *to)
{
    if (conn->fd < 0 || conn->connecting || conn->closing || conn->transport_closed ||
        conn->destroyed || atomic_load_explicit(&conn->io->stopping, memory_order_relaxed))
        return false;
    epoll_ctl(loop->epfd, EPOLL_CTL_DEL, conn->fd, NULL);
    conn->readable = conn->writable = true;
    conn->moved = true;
    unsigned shift = conn->moves < 16 ? conn->moves : 16;
    int64_t hold = (int64_t)JN_IO_MOVE_HOLD_MS << shift;
    if (hold > JN_IO_MOVE_HOLD_MAX_MS)
        hold = JN_IO_MOVE_HOLD_MAX_MS;
    conn->moves++;
    atomic_store_explicit(&conn->move_after, (int64_t)jn_time_mono_ms() + hold,
                          memory_order_relaxed);
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_DEBUG,
           JN_IO_CONN_FMT " Moved from worker thread %u to %u (shares its deliveries' flow)",
           conn->id, loop->index, to->index);
    atomic_fetch_sub_explicit(&loop->conns, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&to->conns, 1, memory_order_relaxed);
    atomic_store_explicit(&conn->loop, to, memory_order_release);
    jn_io_conn_wake(conn);
    return true;
}

/* conn's first pass on the loop it moved to: register its socket here. */
static void conn_arrive(jn_io_conn_t *conn)
{
    conn->moved = false;
    if (conn->fd >= 0 && conn_register(conn) != 0) {
        int err = errno;
        conn_unregister(conn);
        jn_io_conn_io_error_IO(conn, err, "registering");
    }
}

/* ---- our own stalls -------------------------------------------------------

  * A deadline that guards against a silent or stuck peer (the engine's idle
  * timeout, a write stall, the initial handshake) may be met long after it
  * passed when the router itself did not run: the process was stopped
  * (SIGSTOP, a paused VM, swap, a debugger) or starved of the CPU. The
  * peer's octets sent meanwhile then wait unread in the socket, and epoll
  * may not have reported them yet to the loop that owns the connection;
  * judging the peer silent on that pass closed healthy connections the
  * moment the router came back. So a deadline met more than JN_IO_STALL_MS
  * late is not judged as it stands: the engine's idle clock reads the
  * socket first (io_own.c: any input resets it), a write-stall period and
  * the handshake deadline start again from now (io_watch.c:
  * jn_io_stall_judge_IO, jn_io_handshake_check_IO). The core does the same
  * for edge heartbeats and HELLOs (router/core/mesh_side.c,
  * jn_router_tick_CT). Only the passes that meet a deadline look; the
  * others pay nothing. */

/* jn_io_conn_destroy_IO: the transport is closed and reported: close the
 * socket and free what carried the connection. The owning loop's thread
 * (or the main thread at exit, when no loop runs). */
void jn_io_conn_destroy_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    if (conn->destroyed)
        return;
    conn->destroyed = true;
    conn_unregister(conn);
    if (jn_log_conn_trace_gen() != 0) /* management chose for some connection */
        jn_log_conn_trace_forget(conn->id);
    jn_io_loop_t *loop = atomic_load_explicit(&conn->loop, memory_order_relaxed);
    if (loop)
        atomic_fetch_sub_explicit(&loop->conns, 1, memory_order_relaxed);
    jn_io_tls_free(conn);
    jn_io_bridge_gone_IO(conn);
    if (conn->ai_list)
        freeaddrinfo(conn->ai_list);
    conn->ai_list = conn->ai_next = NULL;
}

/* The end of a pass: move conn to the loop the core asked for
 * (jn_io_colocate), if any; true when it moved. */
static bool move_asked(jn_io_loop_t *loop, jn_io_conn_t *conn)
{
    jn_io_loop_t *to = atomic_load_explicit(&conn->move_to, memory_order_relaxed);
    if (!to)
        return false;
    atomic_store_explicit(&conn->move_to, NULL, memory_order_relaxed);
    return to != loop && conn_move(loop, conn, to);
}

/* One pass of conn (see the top) on Junction's own engine (io_own.c); a
 * move to its peer's loop (jn_io_colocate) is made at its end. The loop's
 * thread; the caller holds a reference. */
static void conn_pass(jn_io_loop_t *loop, jn_io_conn_t *conn)
{
    if (conn->destroyed)
        return;
    if (conn->moved)
        conn_arrive(conn);
    jn_io_trace_check_IO(conn);
    bool more = jn_io_own_pass_IO(loop, conn);
    if (conn->transport_closed) {
        jn_io_conn_destroy_IO(conn);
        jn_io_conn_unref(conn); /* the I/O side's reference */
        return;
    }
    if (move_asked(loop, conn))
        return; /* the new loop runs the rest (and what "more" meant) */
    if (more)
        pass_add(loop, conn);
}

/* ---- the loop ----------------------------------------------------------------- */

/* Take the woken connections into the pass list, the latest woken first.
 *
 * Why that order: the core wakes a consumer's connection when the first
 * delivery of its batch is handed to it, and a producer's connection when
 * the batch ends and the credit it earned (and the settlements) are
 * flushed. Running the latest woken first puts that credit on the wire
 * before the long pass that encodes and writes the batch's deliveries, so
 * the producing client sends its next batch while the router writes this
 * one, instead of waiting for it (docs/performance.md, "Credit before
 * deliveries": with one worker thread, single hop pre-settled 278k ->
 * 541k msgs/s). Every connection taken runs in this round whatever its
 * place, so the order costs none of them a pass. */
static void take_ready(jn_io_loop_t *loop)
{
    jn_mpsc_node_t *nodes[64];
    size_t n;
    do {
        n = jn_mpsc_drain(&loop->ready, nodes, 64);
        for (size_t i = 0; i < n; i++) {
            jn_io_conn_t *c = (jn_io_conn_t *)((char *)nodes[i] - offsetof(jn_io_conn_t, wake_node));
            atomic_store_explicit(&c->wake_queued, false, memory_order_release);
            if (atomic_load_explicit(&c->loop, memory_order_acquire) != loop)
                jn_io_conn_wake(c); /* it moved away after the waker looked: hand it on */
            else
                pass_add_at(loop, c, true);
            jn_io_conn_unref(c); /* the queue's; the pass holds its own */
        }
    } while (n == 64);
}

/* Run the pass list; connections re-added meanwhile go to the next pass. */
static void run_passes(jn_io_loop_t *loop)
{
    jn_io_conn_t *c = loop->pass_head;
    loop->pass_head = loop->pass_tail = NULL;
    while (c) {
        jn_io_conn_t *next = c->pass_next;
        c->in_pass = false;
        conn_pass(loop, c);
        jn_io_conn_unref(c); /* the pass's */
        c = next;
    }
}

/* jn_io_loop_work: one iteration's work after epoll: passes, then the
 * core inline (what they posted is routed here, on this thread), then the
 * passes of the connections the core gave work to on this loop, so a
 * delivery read in this iteration leaves in it; bounded, so epoll is not
 * starved. Returns true when the core has actions left for this thread.
 * The loop's thread (or a test's thread driving a loop that has none,
 * io_test.c). */
bool jn_io_loop_work(jn_io_loop_t *loop)
{
    jn_io_loop_self_ = loop; /* jn_io_loop_main's already, or a test's */
    jn_io_role_ = loop;
    bool core_more = false;
    for (int round = 0; round < LOOP_ROUNDS; round++) {
        take_ready(loop);
        run_passes(loop);
        core_more = jn_core_run_inline(loop->io->core);
        if (!loop->pass_head &&
            atomic_load_explicit(&loop->ready.pending, memory_order_relaxed) == 0)
            break;
    }
    return core_more;
}

/* How long loop 0 may sleep for its timers: ms, or -1. */
static int timer_timeout(jn_io_t *io)
{
    int64_t next = atomic_load_explicit(&io->timer_next, memory_order_acquire);
    if (next == INT64_MAX)
        return -1;
    int64_t now = (int64_t)jn_time_mono_ms();
    if (next <= now)
        return 0;
    return next - now > 60000 ? 60000 : (int)(next - now);
}

/* jn_io_loop_main: the worker thread's body (pthread start routine; arg is
 * the loop). Returns when io->exiting is set and the loop is notified. */
void *jn_io_loop_main(void *arg)
{
    jn_io_loop_t *loop = arg;
    jn_io_t *io = loop->io;
    struct epoll_event evs[JN_IO_EPOLL_EVENTS];
    bool core_more = false; /* the core has actions left for this thread */
    jn_io_loop_self_ = loop;
    jn_io_role_ = loop;
    jn_core_inline_thread_begin();
    while (!atomic_load_explicit(&io->exiting, memory_order_acquire)) {
        int timeout = loop->index == 0 ? timer_timeout(io) : -1;
        if (loop->pass_head || core_more) {
            timeout = 0;
        } else if (timeout != 0) {
            atomic_store_explicit(&loop->awake, false, memory_order_seq_cst);
            if (atomic_load_explicit(&loop->ready.pending, memory_order_seq_cst) != 0)
                timeout = 0;
        }
        int n = epoll_wait(loop->epfd, evs, JN_IO_EPOLL_EVENTS, timeout);
        atomic_store_explicit(&loop->awake, true, memory_order_relaxed);
        for (int i = 0; i < n; i++) {
            jn_io_poll_t *p = evs[i].data.ptr;
            switch ((jn_poll_kind_t)p->kind) {
            case JN_POLL_WAKE: {
                uint64_t count;
                while (read(loop->evfd, &count, sizeof count) < 0 && errno == EINTR) {
                }
                break;
            }
            case JN_POLL_LISTENER:
                jn_io_accept((jn_io_lsock_t *)p);
                break;
            case JN_POLL_CONN: {
                jn_io_conn_t *c = (jn_io_conn_t *)p;
                uint32_t ev = evs[i].events;
                if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                    c->readable = true;
                if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                    c->read_end = true; /* read on to the end of stream */
                if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR))
                    c->writable = true;
                pass_add(loop, c);
                break;
            }
            }
        }
        if (loop->index == 0 && timer_timeout(io) == 0)
            jn_io_timers_run(io);
        core_more = jn_io_loop_work(loop);
        /* A waker mid-push (counted, not yet linked) leaves the queue's
         * count above 0 with nothing to take: the next wait does not block
         * (timeout 0) until its node appears, within instructions. */
    }
    /* Wakes and passes still listed hold references: drop them (stop is
     * over, every connection is closed or forced, none moves). */
    jn_io_loop_drain_exit(loop);
    jn_io_conn_t *c = loop->pass_head;
    loop->pass_head = loop->pass_tail = NULL;
    while (c) {
        jn_io_conn_t *next = c->pass_next;
        c->in_pass = false;
        jn_io_conn_unref(c);
        c = next;
    }
    jn_pool_thread_exit();
    return NULL;
}
