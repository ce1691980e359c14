/*
 * io_private.h — the I/O layer's own structures, shared by the files of
 * router/io and by nothing else:
 *
 *   io.c          the core's callbacks, start and orderly stop;
 *   io_timer.c    the one-shot timers;
 *   io_loop.c     the event loops (one per worker thread: epoll, sockets,
 *                 the connection's pass: read, events, work, write);
 *   io_endpoint.c listeners and connectors (addresses, sockets, transports,
 *                 SASL, the connector's retry timing);
 *   io_conn.c     a connection's object: creation, references, release;
 *   io_own*.c     a connection's engine: Junction's own (io_own.h); the
 *                 peer's open properties read and ours written
 *                 (io_own_props.c, io_own_peer.c);
 *   io_failover.c a connector's failover list;
 *   io_bridge.c   bridged connections: no socket, their octets through
 *                 buffers another thread fills and drains (AMQP over
 *                 WebSocket);
 *   io_test.c     test hooks: socketless connections driven by the
 *                 caller's thread (tests and fuzzing only).
 *
 * Ownership in one paragraph: every connection belongs to one event loop
 * (one worker thread) at a time, chosen when it is accepted or connected,
 * so a jn_io_conn_t, its engine (io_own.h: transport, sessions, links)
 * and its links are owned by that thread
 * — no lock. The owner may hand it to another loop between two passes
 * (io_loop.c, "Moving a connection"; conn->loop is published with release
 * and every hand-over goes through the new loop's ready queue). The only
 * fields touched from other threads are the refcount, the loop, the move
 * request and the wake flag and node (atomics, the loop's ready queue),
 * and the registry/timer links under jn_io_t.lock (connection open/close,
 * timers, stop — never per message).
 */
#ifndef JN_IO_PRIVATE_H
#define JN_IO_PRIVATE_H 1

#include <junction/io.h>
#include <junction/log.h>

#include <junction/queue.h>


#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>

typedef struct jn_io_conn jn_io_conn_t;
typedef struct jn_io_endpoint jn_io_endpoint_t;
typedef struct jn_io_timer jn_io_timer_t;
typedef struct jn_io_loop jn_io_loop_t;
typedef struct jn_io_tls jn_io_tls_t;
typedef struct jn_io_tls_entry jn_io_tls_entry_t;

/* One backup host of a connector's failover list (io_failover.c): the
 * fields of a peer's failover-server-list entry, owned; scheme and port
 * NULL when the peer left them out. */
#define JN_IO_FAILOVER_HOST_MAX 256 /* a host name's octets, and its NUL */
typedef struct jn_io_failover_url {
    char *scheme;
    char *host;
    char *port;
} jn_io_failover_url_t;

/* A connector's failover list (io_failover.c), under jn_io_t.lock: entry 0
 * is the connector's own host and port (not stored), entries 1..n are
 * urls[0..n-1]; cur is the entry the connector connects to. */
typedef struct jn_io_failover {
    jn_io_failover_url_t *urls;
    unsigned n, cur;
} jn_io_failover_t;

/* One registered TLS profile (jn_io_set_tls_profile): jn_io_t.lock. */
struct jn_io_tls_entry {
    jn_io_tls_entry_t *next;
    char *name;
    jn_tls_profile_t *profile; /* the registry's reference */
};

/* ---- tuning (each value says why) ------------------------------------- */

/* Receive side: stop reading an incoming delivery when more than this many
 * octets have been received but not yet sent on by every copy;
 * resume below JN_IO_RX_LOW_WATER. Bounds what one streaming message holds
 * in our buffers. The gap between the two keeps a paused link from
 * flapping. */
#define JN_IO_RX_HIGH_WATER (2u * 1024 * 1024)
#define JN_IO_RX_LOW_WATER  (1u * 1024 * 1024)

/* Receive side, per incoming link: stop taking new deliveries while the
 * messages received on the link whose octets the router still holds (not
 * yet sent by every copy: waiting for a consumer's credit, or being sent)
 * add up to more than this; resume below JN_IO_LINK_LOW_WATER (the link's
 * jn_rx_budget_t, junction/message.h "holding"). While stopped, the link's
 * new credit is held back. Credit is also metered while going: the sender
 * holds at most max(1, JN_IO_LINK_HIGH_WATER / recent message size) credits
 * at a time (JN_IO_LINK_FIRST_CREDIT before the first message); the core's
 * credit above that waits (the own link's credit_deferred) and is granted
 * as deliveries arrive, when a stopped link goes on, or when the sender's
 * flow lowered its credit (a drain answered). So what the engine takes in
 * for the link (octets sent on credit that the router has not passed on)
 * stays near the mark too, instead of filling the session window. Small
 * messages are not metered (linkCapacity x size is below the mark). One
 * incoming link thus holds about twice the high-water mark plus the message
 * being received (itself bounded by JN_IO_RX_HIGH_WATER once it streams).
 * Same values as the per-message marks. */
#define JN_IO_LINK_HIGH_WATER JN_IO_RX_HIGH_WATER
#define JN_IO_LINK_LOW_WATER  JN_IO_RX_LOW_WATER

/* Send side, per outgoing link: the octets of the copies handed over by
 * the core and not yet sent are kept at about this (io_own_link.c), so that a
 * consumer that stops reading holds its senders' budgets well below their
 * high-water mark (with the core's JN_CORE_MC_BACKLOG_OCTETS for a stuck
 * multicast consumer, at most the low-water mark together). */
#define JN_IO_TX_AHEAD_OCTETS (JN_IO_LINK_LOW_WATER / 2)
#define JN_IO_TX_FIRST_AHEAD  2

/* Credits a client's sender holds at most before the link has seen a
 * message (its size unknown): its first burst is at most this many
 * messages, not linkCapacity of them (docs/compat.md, "A new link's first
 * credit"). A link the router attached itself to a route container (an
 * auto-link, a link route's container end: jn_io_link_t.routed) gets the
 * core's credit at once, as 1.19 grants it. After the first delivery the meter above applies
 * (for small messages: no limit), so it costs one round trip at most. */
#define JN_IO_LINK_FIRST_CREDIT 4u

/* Send side: no copy is composed into a connection's output while it
 * holds this many octets not yet written (jn_amqp_conn_output_pending),
 * whatever credit and window the peer gave; the pass after the socket
 * takes some goes on. A peer that stops reading costs at most this in
 * output, plus what the core's backlog holds for its links (linkCapacity,
 * docs/multicast.md). */
#define JN_IO_OWN_OUTPUT_LIMIT (256u * 1024)

/* A session's incoming window (in octets: JN_IO_SESSION_FRAMES x
 * max-frame-size, at most JN_IO_SESSION_CAPACITY_MAX unless
 * maxSessionFrames says otherwise; io_own.c). It bounds what the engine
 * takes in for a session whose links we stopped reading, so a paused
 * streaming message costs at most this plus JN_IO_RX_HIGH_WATER.
 * The trade-off, measured: a proton 0.37 client that hands a whole large
 * message to pn_link_send at once straightens (rotates octet by octet) its
 * remaining buffer on every session-window round, so a smaller window costs
 * such a client CPU in proportion to (message size / window) x message size
 * (junction-bench -b 200000000: 0.6 s direct, ~11 s through a 64 MiB
 * window). Clients that stream in chunks are unaffected. qdrouterd 1.19
 * defaults to an effectively unbounded window (and unbounded memory). */
#define JN_IO_SESSION_FRAMES       1024u
#define JN_IO_SESSION_CAPACITY_MAX (16u * 1024 * 1024)

/* How soon a paused receive or a stalled send looks again (nothing tells
 * a receiving connection that the copies caught up; a stalled send also
 * resumes when its output drains). The delay doubles, up to JN_IO_POLL_MAX_MS,
 * while polls find nothing changed (a consumer that stopped reading), and
 * drops back to JN_IO_POLL_MS once something moves. */
#define JN_IO_POLL_MS     2u
#define JN_IO_POLL_MAX_MS 64u

/* TCP_NOTSENT_LOWAT on every connection's socket: the kernel takes no more
 * output while this many octets wait unsent in it (the peer's window is
 * shut), so a peer that stops reading holds at most this much in the
 * kernel, plus the engine's output (JN_IO_OWN_OUTPUT_LIMIT), instead of a
 * send buffer the kernel may grow to tcp_wmem's maximum (4 MiB here) -- and
 * with it that many octets' worth of messages and unsettled deliveries in
 * the router. */
#ifndef JN_IO_NOTSENT_LOWAT
#define JN_IO_NOTSENT_LOWAT (256 * 1024)
#endif

/* Write stall (router.writeStallTimeoutSeconds, io_watch.c): a socket that
 * refused our output and then took fewer octets in a whole period is cut:
 * a peer reading a few octets a second to hold the connection is caught,
 * a live consumer moves far more in any period of seconds. */
#define JN_IO_WRITE_STALL_MIN_OCTETS 1024u

/* A deadline met this late (ms) means the loop itself did not run
 * meanwhile (the process was stopped or starved): what the peer sent may
 * still wait unread in the socket, so no verdict of silence is given on
 * that pass (io_loop.c, "Our own stalls"). One second: far above a
 * timer's normal lateness, far below every period it guards. */
#define JN_IO_STALL_MS 1000

/* The largest control message (HELLO, RA, LSU, MAU, ...) taken on an
 * inter-router control link: the core holds a control message until it is
 * complete, so an endless one would grow without bound. Real ones are a
 * few KiB (an MAU of 10,000 addresses is about 200 KiB); a larger one
 * detaches the link with amqp:link:message-size-exceeded. */
#define JN_IO_CONTROL_MAX_MESSAGE (4u * 1024 * 1024)

/* Work items taken from the core per call. */
#define JN_IO_WORK_BATCH 64

/* Socket reads per connection per pass of its loop: a connection whose
 * peer keeps the socket full yields to the loop's other connections after
 * this many reads and continues in the next pass (fairness). */
#define JN_IO_READS_PER_PASS 4

/* Octets asked of the engine's input for one read: one read takes
 * about this much, so a busy sender's frames arrive in few syscalls. */
#define JN_IO_READ_SIZE (64u * 1024)

/* Events taken from epoll per wait. */
#define JN_IO_EPOLL_EVENTS 64

/* After a connection moved to another loop (io_loop.c, "Moving a
 * connection"), it stays JN_IO_MOVE_HOLD_MS x 2^(moves - 1), at most
 * JN_IO_MOVE_HOLD_MAX_MS: a pairing that keeps changing (balanced
 * consumers whose share follows their speed, which follows where they
 * run) settles instead of moving to and fro, and a stable pair moves
 * once. */
#define JN_IO_MOVE_HOLD_MS     1000
#define JN_IO_MOVE_HOLD_MAX_MS 64000

/* ---- timers ------------------------------------------------------------ */

/* A one-shot timer. Embedded in its owner. next, deadline, armed:
 * jn_io_t.lock. fire runs on the first event loop's thread (the one that
 * keeps the timers), without the lock held. */
struct jn_io_timer {
    jn_io_timer_t *next;
    int64_t deadline; /* jn_time_mono_ms() milliseconds */
    bool armed;
    void (*fire)(jn_io_timer_t *timer);
    /* immutable: the connection whose reference the armed timer holds (its
     * fire drops it; so does a successful cancel, and the stop's
     * jn_io_timers_cancel_all), or NULL (a listener's or connector's) */
    jn_io_conn_t *conn;
};

/* ---- listeners and connectors ------------------------------------------ */

typedef enum {
    JN_EP_IDLE = 0, /* not started */
    JN_EP_PENDING,  /* listen/connect requested */
    JN_EP_OPEN,     /* listening / connection up */
    JN_EP_FAILED,   /* listen failed */
    JN_EP_CLOSED    /* closed (stop) */
} jn_ep_state_t;

/* What an epoll registration points at (epoll_event.data.ptr): the first
 * member of a connection, a listening socket or a loop. */
typedef enum { JN_POLL_WAKE = 1, JN_POLL_LISTENER, JN_POLL_CONN } jn_poll_kind_t;
typedef struct jn_io_poll {
    uint8_t kind; /* jn_poll_kind_t */
} jn_io_poll_t;

/* Listening sockets per listener: one per address its host resolves to
 * (0.0.0.0 and ::, or 127.0.0.1 and ::1). */
#define JN_IO_MAX_LISTEN_SOCKETS 4

/* One listening socket. Registered (level-triggered) with the first event
 * loop, which alone accepts on it and closes it. */
typedef struct jn_io_lsock {
    jn_io_poll_t handle; /* JN_POLL_LISTENER */
    int fd;
    jn_io_endpoint_t *ep;
} jn_io_lsock_t;

/* A listener or connector. cfg and its strings: immutable after
 * jn_io_add_*. socks: the first loop's thread once open. The rest:
 * jn_io_t.lock. */
struct jn_io_endpoint {
    jn_io_endpoint_t *next;
    jn_io_t *io;
    bool is_listener;
    jn_endpoint_config_t cfg; /* strings owned (strdup) */
    char shown[300];          /* "host:port" for logs */
    jn_ep_state_t state;
    /* listener: its sockets while state is OPEN (closed at once by stop
     * and management DELETE, jn_io_listener_close_locked) */
    jn_io_lsock_t socks[JN_IO_MAX_LISTEN_SOCKETS];
    unsigned nsocks;
    uint16_t bound_port; /* the port the listening sockets got (under io->lock) */
    atomic_bool removed; /* management DELETE (any thread reads it) */
    jn_io_timer_t accept_pause; /* re-enables accepting after EMFILE */
    /* connector */
    jn_io_endpoint_t *connect_next; /* jn_io_t.connect_queue (jn_io_t.lock) */
    bool connect_queued;
    jn_io_timer_t retry;
    unsigned failures;  /* consecutive attempts that never opened */
    jn_io_conn_t *conn; /* the current connection, or NULL */
    bool status_opened;       /* its connection is open (jn_io_t.lock) */
    char status_msg[400];     /* the log line of its last event (jn_io_t.lock) */
    jn_io_failover_t failover; /* the hosts it tries in turn (jn_io_t.lock) */
    /* listener with a saslPlugin (authsvc.c): the endpoint its connections
     * to the auth service are made with (owned; immutable after
     * jn_io_add_listener), or NULL. In that child: the service's address
     * as resolved when the listener was added (numeric, so a connection
     * attempt on a loop never waits for a name server). */
    jn_io_endpoint_t *authsvc;
    char numeric_host[64];
    char numeric_port[8];
    /* what may still reach it besides jn_io_t.endpoints (jn_io_t.lock):
     * its connections (jn_io_conn_new to conn_free) and a thread that
     * found it under the lock and goes on without it (the connector
     * thread's attempt, a WebSocket bridge being made). A removed endpoint
     * is freed by the sweep (io_endpoint.c) once this is 0. */
    unsigned users;
};

/* ---- the I/O layer ----------------------------------------------------- */

/* One event loop: a worker thread, its epoll instance and its ready queue
 * of woken connections. */
struct jn_io_loop {
    jn_io_poll_t handle; /* JN_POLL_WAKE: the eventfd's registration */
    jn_io_t *io;
    unsigned index; /* 0 keeps the timers and the listening sockets */
    int epfd, evfd; /* immutable after jn_io_create */
    pthread_t thread;
    /* Connections woken by any thread (jn_io_conn_wake), consumed by this
     * loop. The wake handshake is the core's (core.c): a waker pushes then
     * loads awake; the loop stores awake = false then loads the queue's
     * count before it blocks in epoll_wait; so either the loop sees the
     * connection or the waker sees false and writes the eventfd. */
    jn_mpsc_t ready;
    atomic_bool awake;
    /* connections that belong to this loop (started or moved here, not yet
     * destroyed): where a colocated pair goes (jn_io_colocate) */
    atomic_uint conns;
    /* this loop's thread only: connections to run in the current pass */
    jn_io_conn_t *pass_head, *pass_tail;
    /* this loop's thread only: when the current connection's pass began
     * (jn_time_mono_ns, taken once per pass: the clock it reads for its
     * timers), the arrival time of the deliveries read in it and the
     * departure time of the copies sent in it */
    uint64_t pass_ns;
    /* router residence time of the copies this loop sent (/metrics,
     * junction/io.h jn_io_residence_read): written by this loop's thread
     * only (a relaxed load and store, no read-modify-write), read by any
     * thread with relaxed loads. Counts per bucket, not cumulative. */
    _Atomic uint64_t res_count[JN_RES_CLASSES][JN_RES_BUCKETS];
    _Atomic uint64_t res_sum_ns[JN_RES_CLASSES];
};

/* The event loop whose thread this is (io_loop.c: set by jn_io_loop_main,
 * and by jn_io_loop_work for a test that drives loop 0 on its own thread);
 * NULL on other threads. After the loops have ended, jn_io_adopt lets the
 * thread that frees what is left act as a connection's loop. */
extern _Thread_local jn_io_loop_t *jn_io_loop_self_;

/* JN_ASSERT_IO(conn): the calling thread is the loop that owns conn. At the
 * top of every _IO function; debug and sanitizer builds (JN_DEBUG_CHECK:
 * nothing at all in release builds). */
#define JN_ASSERT_IO(conn)                                                                         \
    JN_DEBUG_CHECK(jn_io_loop_self_ != NULL &&                                                     \
                   atomic_load_explicit(&(conn)->loop, memory_order_relaxed) == jn_io_loop_self_)
/* For _IO functions given no way to reach their connection. */
#define JN_ASSERT_SOME_IO() JN_DEBUG_CHECK(jn_io_loop_self_ != NULL)

/* jn_io_residence_note_IO: count a copy of dlv sent now (its departure:
 * the current pass's start) in this loop's residence histogram. Hot path:
 * one call per copy sent; a thread-local load, two loads from the
 * delivery, a subtraction, four compares (whatever the time) and two relaxed
 * load/store pairs on memory only this thread writes. Loop thread. */
_Static_assert(JN_RES_BUCKETS == 16, "jn_io_residence_note_IO searches 16 buckets");
static inline void jn_io_residence_note_IO(const jn_delivery_t *dlv)
{
    JN_ASSERT_SOME_IO();
    jn_io_loop_t *loop = jn_io_loop_self_;
    unsigned cls;
    uint64_t since = jn_delivery_residence_since(dlv, &cls);
    if (JN_UNLIKELY(since == 0 || loop == NULL || cls >= JN_RES_CLASSES))
        return; /* composed by the router, or no loop (stop) */
    uint64_t ns = loop->pass_ns > since ? loop->pass_ns - since : 0;
    /* the first bucket whose bound is >= ns: four steps of a binary
     * search over the 15 bounds (the 16th bucket has none) */
    unsigned b = ns > jn_res_bounds_ns[7] ? 8 : 0;
    b += ns > jn_res_bounds_ns[b + 3] ? 4 : 0;
    b += ns > jn_res_bounds_ns[b + 1] ? 2 : 0;
    b += ns > jn_res_bounds_ns[b] ? 1 : 0;
    _Atomic uint64_t *c = &loop->res_count[cls][b], *s = &loop->res_sum_ns[cls];
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(s, atomic_load_explicit(s, memory_order_relaxed) + ns,
                          memory_order_relaxed);
}


struct jn_io {
    /* immutable after jn_io_create */
    jn_core_t *core;
    jn_io_loop_t *loops; /* worker_threads of them */
    char *container_id;
    char *node_id; /* "0/<container id>" for router annotations */
    unsigned worker_threads;
    uint32_t min_peer_idle_timeout_ms; /* router.minPeerIdleTimeoutMs, 0 = none */
    uint32_t write_stall_ms;           /* router.writeStallTimeoutSeconds x 1000, 0 = never */

    /* main thread */
    unsigned threads_started;

    /* lock: endpoints, the connection registry and counts, timers, the exit
     * flag. Taken when a connection or listener opens or closes, when a
     * timer is armed or fires, and during stop — never per message. */
    pthread_mutex_t lock;
    pthread_cond_t cond; /* signalled when a count below changes */
    jn_io_endpoint_t *endpoints;
    jn_io_conn_t *conns;      /* every live connection (registry) */
    size_t live_conns;        /* connections whose transport is not closed */
    size_t max_conns;         /* accept no more than this many (file descriptors) */
    /* policy.maxConnections (jn_io_config_t.max_connections) and its
     * figures (jn_policy_conn_stats_t): incoming connections counted at
     * accept (conn->policy_counted), uncounted when their transport
     * closes */
    uint32_t policy_max_conns;
    uint64_t policy_processed, policy_denied, policy_current;
    atomic_uint_fast64_t policy_maxsize_denied; /* any loop, relaxed */
    int64_t refused_logged_at; /* ms of the last "too many connections" log line */
    jn_io_timer_t *timers;    /* armed timers, by deadline */
    jn_io_tls_entry_t *tls_profiles; /* sslProfile registry (jn_io_set_tls_profile) */
    /* the vhost policy's table (jn_io_vhost_policy; borrowed, with its
     * own lock), NULL when the vhost policy is off; set before start */
    jn_policy_t *policy;
    bool started;
    /* loop 0: frees the removed endpoints nothing uses any more
     * (io_endpoint.c, "removal"); armed while any is left */
    jn_io_timer_t endpoint_sweep;
    /* the connector thread's queue of attempts to make (io_endpoint.c) */
    jn_io_endpoint_t *connect_queue;
    pthread_cond_t connect_cond;
    pthread_t connector_thread;
    bool connector_started;
    bool connector_exit;

    /* atomics */
    atomic_bool stopping; /* jn_io_stop began: close everything, no retry
                           * (written under lock, read per pass without) */
    atomic_bool forcing;  /* stop's deadline passed: cut every connection */
    atomic_bool exiting;  /* the loops leave */
    atomic_int_fast64_t timer_next; /* deadline of the earliest timer (ms),
                                     * INT64_MAX when none: the first loop
                                     * sleeps no longer than that */
    atomic_uint next_loop;          /* round-robin placement of connections */

    atomic_uint_fast64_t next_conn_id;
    atomic_uint pending_frees; /* io_conns allocated and not yet freed */
};

/* Listen backlog: how many connections the kernel queues for accept. The
 * first loop accepts what is queued in one go, so up to this many
 * descriptors can be taken at once. */
#define JN_IO_LISTEN_BACKLOG 128

/* ---- connections ------------------------------------------------------- */

/* One AMQP connection. */
struct jn_io_conn {
    jn_io_poll_t handle; /* JN_POLL_CONN (first member: epoll's data.ptr) */
    /* immutable after creation */
    jn_io_t *io;
    uint64_t id;                /* [C<id>] */
    jn_io_endpoint_t *endpoint; /* its listener or connector */
    bool incoming;
    bool strip_inbound, strip_outbound;
    uint32_t msg_log; /* messageLoggingComponents (io_msglog.c); immutable */
    bool policy_counted; /* counted in io->policy_current (set at accept) */
    /* its admission by the vhost policy (io_policy.c), NULL when the
     * policy does not govern it: set at the Open on conn's loop, released
     * under io->lock when its transport closes. vhost_rules points at its
     * rules, vhost_user / vhost_host at the user and remote host it was
     * counted as (NULL for a connector's, which is not counted). */
    jn_policy_admission_t *vhost_adm;
    const jn_policy_rules_t *vhost_rules;
    const char *vhost_user, *vhost_host;
    /* the client's links its vhost group counts (maxSenders,
     * maxReceivers): its senders and receivers attached now; conn's loop */
    uint32_t policy_senders, policy_receivers;

    /* atomic: the I/O side holds one reference until the pass that saw
     * PN_TRANSPORT_CLOSED is done, the core one from conn_opened until
     * ops->conn_released, an armed poll, tick, stall or handshake timer
     * one, a queued wake one, a pass that runs it one. Freed at zero, and
     * never taken again from zero: a thread that reaches the connection
     * without holding one (the registry, under jn_io_t.lock) takes it with
     * jn_io_conn_tryref. */
    atomic_uint refs;

    /* The loop (thread) that owns it: written by the owner when it hands
     * the connection to another loop (release; io_loop.c, "Moving a
     * connection"), read by wakers (acquire). */
    _Atomic(jn_io_loop_t *) loop;
    /* A loop the core asked it to join (jn_io_colocate), or NULL: taken by
     * the owner at the end of a pass. */
    _Atomic(jn_io_loop_t *) move_to;
    /* No move before this (jn_time_mono_ms() ms): written by the owner when
     * it moves the connection, read by jn_io_colocate. */
    atomic_int_fast64_t move_after;
    unsigned moves; /* times moved (the owning loop's thread) */

    /* the wake: set by the waker that queued wake_node on loop->ready,
     * cleared by the loop when it takes the node (io_loop.c) */
    atomic_bool wake_queued;
    jn_mpsc_node_t wake_node;
    /* set once jn_io_conn_start has handed it to its loop (release), read
     * by the stop's wakes (acquire): before that a wake must not queue it */
    atomic_bool started;

    /* jn_io_t.lock: the registry and the timers */
    jn_io_conn_t *reg_prev, *reg_next;
    /* jn_io_stop's list of the connections it wakes, each with a
     * reference (the main thread) */
    jn_io_conn_t *stop_next;
    jn_io_timer_t poll;
    jn_io_timer_t tick;  /* the engine's next idle-timeout deadline */
    jn_io_timer_t stall; /* the write-stall check (io_loop.c, "Write stalls") */
    jn_io_timer_t handshake; /* initialHandshakeTimeoutSeconds (io_loop.c) */
    jn_io_timer_t silence;   /* the silence watch (io_watch.c) */

    /* the owning loop's thread */
    int fd;                 /* the socket, or -1 */
    bool moved;             /* handed over by another loop: register fd here */
    bool tracing;           /* frames traced (io_trace.c) */
    bool trace_log;         /* PROTOCOL at trace when last checked */
    int8_t trace_choice;    /* management's for this connection: 1 on, 0 off, -1 none */
    unsigned trace_gen;     /* jn_log_conn_trace_gen when trace_forced was read */
    bool readable, writable; /* edge-triggered readiness not yet used up */
    bool read_end;           /* epoll saw the peer's end of stream (or an error) */
    bool connecting;         /* connect() in progress */
    bool write_shut;         /* shutdown(SHUT_WR) done */
    bool destroyed;          /* engine's carrier gone, socket closed */
    bool in_pass;            /* on loop->pass list */
    jn_io_conn_t *pass_next;
    struct addrinfo *ai_list, *ai_next; /* connector: addresses to try */
    int64_t tick_at;         /* when the engine's idle clock wants a tick (ms), 0: now */
    int64_t tick_armed_at;   /* the deadline the tick timer was last armed for (ms), 0: never;
                              * at or before tick_at (io_own.c, own_tick) */
    bool closing_removed;   /* closed because its connector was deleted (loop) */
    jn_core_conn_t *core;   /* NULL until opened, and after closed */
    char host[300];         /* peer address, for logs and the core */
    bool opened;            /* reported to the core */
    bool inter_router;      /* role inter-router (immutable after creation) */
    bool edge;              /* role edge: an edge router's uplink (immutable) */
    bool tenant;            /* in a tenant space (io_tenant.c; set at the open) */
    uint32_t data_in, data_out; /* inter-router data links attached, by our
                                 * direction (priority = arrival order, 3.3) */
    bool closing;           /* we closed our end */
    bool transport_closed;
    /* TLS (io_tls.c): NULL for plain AMQP; owned. refused_logged: TLS or
     * SASL (sasl_cyrus.c) refused it and logged why (io_conn.c logs no
     * more of it); tls_peeked: the first
     * octet was looked at. handshake_at: when the peer must have opened
     * (initialHandshakeTimeoutSeconds, jn_time_mono_ms() ms), 0 = never;
     * handshake_expired: closed for it (logged). */
    /* The user-id check (io_own_rx.c; docs/design.md "The user-id check"):
     * set at the peer's open on an incoming connection of role normal that
     * authenticated with a real mechanism and may not proxy: the user a
     * message's properties user-id, when present and not empty, must
     * equal; owned. NULL: no check (and no user-id is read). */
    char *check_user;
    jn_io_tls_t *tls;
    /* Junction's own engine (io_own.c): set before the connection is
     * started (jn_io_own_attach / _attach_client); owned; the loop's
     * thread */
    struct jn_io_own *own;
    bool refused_logged;
    bool tls_peeked;
    bool handshake_expired;
    int64_t handshake_at;
    uint64_t next_link_id;
    unsigned poll_ms;    /* next poll delay (JN_IO_POLL_MS doubling) */
    /* write stalls (io_loop.c): octets the socket took, in all; and while
     * a refused write is being watched, the count at the period's start
     * and when the period ends (jn_time_mono_ms() ms) */
    uint64_t octets_written;
    /* octets of the peer's stream handed to the engine, in all
     * (io_own_plain.c); heard_octets: that count at the pass that
     * last saw it grow, heard_ms (jn_time_mono_ms()) that pass's time */
    uint64_t octets_read;
    uint64_t heard_octets;
    int64_t heard_ms;
    /* the silence watch (io_watch.c): on while silence_watch; the
     * connection is cut once nothing arrived for silence_ms; its next
     * check is at silence_at (jn_time_mono_ms()) */
    int64_t silence_at;
    uint32_t silence_ms;
    bool silence_watch;
    uint64_t stall_mark;
    int64_t stall_check_at;
    bool stall_watch;

    /* Tests and fuzzing only (io_test.c): a connection without a socket.
     * Its pass reads from test_in (borrowed from the caller of
     * jn_io_test_conn_input until taken) and discards what the engine
     * writes; test_end: after test_in, the
     * input ends (as a socket's end of stream). The owning
     * loop's thread (the test's thread). */
    bool test_io;
    bool test_end;
    /* A bridged connection (io_bridge.c): no socket; its octets go
     * through this (the connection's reference), NULL once destroyed. */
    jn_io_bridge_t *bridge;
    const uint8_t *test_in;
    size_t test_in_len;

    /* The auth service relay (authsvc.c): on a client's connection whose
     * listener names an authServicePlugin, and on the connection to the
     * service made for it (authsvc set), the relay they share while both
     * are attached (NULL once detached). place: the loop jn_io_conn_start
     * puts it on (NULL: round robin): a service connection runs on its
     * client's loop, so the two never need a lock. The owning loop's
     * thread. */
    struct jn_io_relay *relay;
    bool authsvc;
    jn_io_loop_t *place;
};

/* ---- links -------------------------------------------------------------- */

/* The per-message checks of an incoming link (io_own_rx.c): the user-id
 * check (docs/design.md "The user-id check"), the vhost policy's target
 * check of each message on an anonymous sender, and its reply-to check of
 * each message on a sender whose target is a management node
 * (docs/design.md "Policy"). */
#define JN_IO_RX_CHECK_USER_ID 0x1
#define JN_IO_RX_CHECK_TARGET  0x2
#define JN_IO_RX_CHECK_REPLY   0x4

#include "io_fns.h" /* the functions shared between the files */

#endif /* JN_IO_PRIVATE_H */
