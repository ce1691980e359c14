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
 *   io_conn.c     a connection's life: open, sessions, link attach/detach,
 *                 the core's work, the wake guard, release;
 *   io_recv.c     the receive path (incoming links, hot);
 *   io_send.c     the send path (outgoing links, hot);
 *   io_state.c    delivery states between proton and the core;
 *   io_props.c    a peer's open properties, for management;
 *   io_mesh.c     inter-router connections: cost, standard links;
 *   screen.c      the frame screen (junction/screen.h);
 *   io_bridge.c   bridged connections: no socket, their octets through
 *                 buffers another thread fills and drains (AMQP over
 *                 WebSocket);
 *   io_test.c     test hooks: socketless connections driven by the
 *                 caller's thread (tests and fuzzing only).
 *
 * Ownership in one paragraph: every connection belongs to one event loop
 * (one worker thread) at a time, chosen when it is accepted or connected,
 * so a jn_io_conn_t, its proton objects (a pn_connection_driver:
 * connection, transport, collector) and its links are owned by that thread
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

#include <junction/screen.h>
#include <junction/io.h>
#include <junction/log.h>

#include <junction/queue.h>

#include <proton/connection.h>
#include <proton/connection_driver.h>
#include <proton/delivery.h>
#include <proton/disposition.h>
#include <proton/link.h>
#include <proton/object.h>
#include <proton/session.h>
#include <proton/transport.h>

#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>

typedef struct jn_io_conn jn_io_conn_t;
typedef struct jn_io_link jn_io_link_t;
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
 * octets have been received but not yet handed to proton by every copy;
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
 * holds at most max(1, JN_IO_LINK_HIGH_WATER / recent message size)
 * credits at a time (JN_IO_LINK_FIRST_CREDIT before the first message);
 * the core's credit above that waits and is granted as deliveries arrive.
 * So what proton buffers for the link (octets sent on credit that we have
 * not read) stays near the mark too, instead of filling the session
 * window. Small messages are not metered (linkCapacity x size is below the
 * mark). One incoming link thus holds about twice the high-water mark plus
 * the message being received (itself bounded by JN_IO_RX_HIGH_WATER once
 * it streams). Same values as the per-message marks. */
#define JN_IO_LINK_HIGH_WATER JN_IO_RX_HIGH_WATER
#define JN_IO_LINK_LOW_WATER  JN_IO_RX_LOW_WATER

/* Send side, per outgoing link: the octets of the copies handed over by
 * the core and not yet sent are kept at about this (io_send.c), so that a
 * consumer that stops reading holds its senders' budgets well below their
 * high-water mark (with the core's JN_CORE_MC_BACKLOG_OCTETS for a stuck
 * multicast consumer, at most the low-water mark together). */
#define JN_IO_TX_AHEAD_OCTETS (JN_IO_LINK_LOW_WATER / 2)
#define JN_IO_TX_FIRST_AHEAD  2

/* Credits a sender holds at most before the link has seen a message (its
 * size unknown): its first burst is at most this many messages, not
 * linkCapacity of them. After the first delivery the meter above applies
 * (for small messages: no limit), so it costs one round trip at most. */
#define JN_IO_LINK_FIRST_CREDIT 4u

/* Send side: stop handing a delivery's octets to proton while the session
 * already buffers this many octets that are not yet framed (proton's
 * pn_link_send buffer is unbounded). Proton posts PN_LINK_FLOW each time
 * it frames buffered octets, which resumes the copy. Kept small because
 * proton 0.37 straightens (rotates, octet by octet) a delivery's whole
 * buffer every time it frames part of it: the cost of that grows with what
 * is buffered. */
#define JN_IO_TX_SESSION_LIMIT (256u * 1024)

/* Session incoming capacity (pn_session_set_incoming_capacity, in octets:
 * JN_IO_SESSION_FRAMES x max-frame-size, at most JN_IO_SESSION_CAPACITY_MAX
 * unless maxSessionFrames says otherwise). It bounds what proton itself
 * buffers for a session whose links we stopped reading, so a paused
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
 * resumes on PN_LINK_FLOW). The delay doubles, up to JN_IO_POLL_MAX_MS,
 * while polls find nothing changed (a consumer that stopped reading), and
 * drops back to JN_IO_POLL_MS once something moves. */
#define JN_IO_POLL_MS     2u
#define JN_IO_POLL_MAX_MS 64u

/* TCP_NOTSENT_LOWAT on every connection's socket: the kernel takes no more
 * output while this many octets wait unsent in it (the peer's window is
 * shut), so a peer that stops reading holds at most this much in the
 * kernel, plus what proton holds (JN_IO_TX_SESSION_LIMIT unframed, and
 * what it framed), instead of a send buffer the kernel may grow to
 * tcp_wmem's maximum (4 MiB here) -- and with it that many octets' worth
 * of messages and unsettled deliveries in the router. */
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

/* Octets asked of proton's input buffer for one read: one read takes
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
    _Atomic uint64_t res_count[JN_RES_CLASSES][JN_IO_RES_BUCKETS];
    _Atomic uint64_t res_sum_ns[JN_RES_CLASSES];
};

/* The event loop whose thread this is (io_loop.c: set by jn_io_loop_main,
 * and by jn_io_loop_work for a test that drives loop 0 on its own thread);
 * NULL on other threads. After the loops have ended, jn_io_adopt lets the
 * thread that frees what is left act as a connection's loop. */
extern _Thread_local jn_io_loop_t *jn_io_loop_self_;

/* jn_io_residence_note_IO: count a copy of dlv sent now (its departure:
 * the current pass's start) in this loop's residence histogram. Hot path:
 * one call per copy sent; a thread-local load, two loads from the
 * delivery, a subtraction, four compares (whatever the time) and two relaxed
 * load/store pairs on memory only this thread writes. Loop thread. */
_Static_assert(JN_IO_RES_BUCKETS == 16, "jn_io_residence_note_IO searches 16 buckets");
static inline void jn_io_residence_note_IO(const jn_delivery_t *dlv)
{
    jn_io_loop_t *loop = jn_io_loop_self_;
    unsigned cls;
    uint64_t since = jn_delivery_residence_since(dlv, &cls);
    if (JN_UNLIKELY(since == 0 || loop == NULL || cls >= JN_RES_CLASSES))
        return; /* composed by the router, or no loop (stop) */
    uint64_t ns = loop->pass_ns > since ? loop->pass_ns - since : 0;
    /* the first bucket whose bound is >= ns: four steps of a binary
     * search over the 15 bounds (the 16th bucket has none) */
    unsigned b = ns > jn_io_res_bounds_ns[7] ? 8 : 0;
    b += ns > jn_io_res_bounds_ns[b + 3] ? 4 : 0;
    b += ns > jn_io_res_bounds_ns[b + 1] ? 2 : 0;
    b += ns > jn_io_res_bounds_ns[b] ? 1 : 0;
    _Atomic uint64_t *c = &loop->res_count[cls][b], *s = &loop->res_sum_ns[cls];
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(s, atomic_load_explicit(s, memory_order_relaxed) + ns,
                          memory_order_relaxed);
}

/* JN_ASSERT_IO(conn): the calling thread is the loop that owns conn. At the
 * top of every _IO function; debug and sanitizer builds (JN_DEBUG_CHECK:
 * nothing at all in release builds). */
#define JN_ASSERT_IO(conn)                                                                         \
    JN_DEBUG_CHECK(jn_io_loop_self_ != NULL &&                                                     \
                   atomic_load_explicit(&(conn)->loop, memory_order_relaxed) == jn_io_loop_self_)
/* For _IO functions given no way to reach their connection. */
#define JN_ASSERT_SOME_IO() JN_DEBUG_CHECK(jn_io_loop_self_ != NULL)

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
     * figures (jn_io_policy_stats_t): incoming connections counted at
     * accept (conn->policy_counted), uncounted when their transport
     * closes */
    uint32_t policy_max_conns;
    uint64_t policy_processed, policy_denied, policy_current;
    uint64_t policy_links_denied;               /* under lock */
    uint64_t policy_sessions_denied;            /* under lock */
    atomic_uint_fast64_t policy_maxsize_denied; /* any loop, relaxed */
    int64_t refused_logged_at; /* ms of the last "too many connections" log line */
    jn_io_timer_t *timers;    /* armed timers, by deadline */
    jn_io_tls_entry_t *tls_profiles; /* sslProfile registry (jn_io_set_tls_profile) */
    /* vhost policy (io_policy.c): on when vhost_policy; the vhosts and the
     * per-vhost/user/host connection counts, all under lock */
    bool vhost_policy;
    bool vhost_name_patterns; /* policy.enableVhostNamePatterns */
    char *default_vhost;
    struct jn_io_vhost_entry *vhosts;
    struct jn_io_vhost_count *vhost_counts;
    bool started;
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
    /* counted in its vhost's figures (io_policy.c; under io->lock): the
     * vhost's hostname, the user, the remote host and the user group
     * ("" for none) it was counted as */
    char *vhost_name, *vhost_user, *vhost_host, *vhost_group;
    /* the link rules of its user group (io_policy.c), NULL when the vhost
     * policy does not govern it; conn's loop after the Open */
    struct jn_io_vhost_rules *vhost_rules;
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
    jn_io_timer_t tick;  /* proton's next idle-timeout deadline */
    jn_io_timer_t stall; /* the write-stall check (io_loop.c, "Write stalls") */
    jn_io_timer_t handshake; /* initialHandshakeTimeoutSeconds (io_loop.c) */

    /* the owning loop's thread */
    pn_connection_driver_t driver; /* connection, transport, collector */
    pn_connection_t *pn_io; /* the connection (driver.connection once started);
                             * NULL from PN_TRANSPORT_CLOSED on */
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
    bool destroyed;          /* driver destroyed, socket closed */
    bool in_pass;            /* on loop->pass list */
    jn_io_conn_t *pass_next;
    struct addrinfo *ai_list, *ai_next; /* connector: addresses to try */
    int64_t tick_at;         /* when proton wants pn_transport_tick (ms), 0: now */
    bool tick_restart;       /* proton's clock had not started: tick after the write */
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
    jn_screen_t *screen;     /* the peer's octets, screened before proton
                              * (junction/screen.h); owned */
    bool screened_out;       /* the screen refused the stream: read no more
                              * once our close is out */
    bool screen_eos;         /* refused before the peer's open: end the input with
                              * the screen's error once what is framed is written
                              * (io_loop.c, conn_write) */
    bool transport_closed;
    /* TLS (io_tls.c): NULL for plain AMQP; owned. refused_logged: TLS or
     * SASL (sasl_cyrus.c) refused it and logged why (io_conn.c logs no
     * more of it); tls_peeked: the first
     * octet was looked at. handshake_at: when the peer must have opened
     * (initialHandshakeTimeoutSeconds, jn_time_mono_ms() ms), 0 = never;
     * handshake_expired: closed for it (logged). */
    /* The user-id check (io_recv.c; docs/design.md "The user-id check"):
     * set at the peer's open on an incoming connection of role normal that
     * authenticated with a real mechanism and may not proxy: the user a
     * message's properties user-id, when present and not empty, must
     * equal; owned. NULL: no check (and no user-id is read). */
    char *check_user;
    jn_io_tls_t *tls;
    bool refused_logged;
    bool tls_peeked;
    bool handshake_expired;
    int64_t handshake_at;
    /* sessions the router began for links the core asked for, whose link
     * is gone, kept for the next one (io_route.c): never ended by us, so
     * proton never reuses a channel the peer may still answer on */
    pn_session_t *route_idle[8];
    unsigned n_route_idle;
    uint64_t next_link_id;
    jn_io_link_t *links; /* every io_link not yet released */
    jn_io_link_t *busy;  /* links with something to finish at batch end */
    unsigned poll_ms;    /* next poll delay (JN_IO_POLL_MS doubling) */
    /* write stalls (io_loop.c): octets the socket took, in all; and while
     * a refused write is being watched, the count at the period's start
     * and when the period ends (jn_time_mono_ms() ms) */
    uint64_t octets_written;
    uint64_t stall_mark;
    int64_t stall_check_at;
    bool stall_watch;

    /* Tests and fuzzing only (io_test.c): a connection without a socket.
     * Its pass reads from test_in (borrowed from the caller of
     * jn_io_test_conn_input until taken) and discards what proton writes;
     * test_end: after test_in, the input ends (read_close). The owning
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

/* jn_io_link_t.rx_checks: the user-id check (docs/design.md "The user-id
 * check"), the vhost policy's target check of each message on an
 * anonymous sender, and its reply-to check of each message on a sender
 * whose target is a management node (docs/design.md "Policy"). */
#define JN_IO_RX_CHECK_USER_ID 0x1
#define JN_IO_RX_CHECK_TARGET  0x2
#define JN_IO_RX_CHECK_REPLY   0x4

/* One link. Owned by the I/O thread of its connection; freed on
 * JN_WORK_LINK_RELEASED (or with the connection). */
struct jn_io_link {
    jn_io_conn_t *conn;   /* immutable */
    uint64_t id;          /* [L<id>] */
    jn_link_dir_t dir;    /* immutable */
    pn_link_t *pn;        /* NULL once proton is done with it */
    jn_core_link_t *core; /* NULL when refused before the core */
    bool detached;        /* reported detached (or never attached) */
    bool local;           /* we attached it (inter-router, connector side) */
    bool routed;          /* attached for the core (io_route.c): report the answer */
    bool passthrough;     /* link-routed (JN_WORK_LINK_OPEN/ATTACH said so): deliveries
                           * are received unparsed and sent octet for octet */
    bool edge_reply;      /* an edge router's dynamic reply receiver: report the
                           * answer with the address the peer made */
    uint64_t max_message_size; /* incoming: octets, 0 = unlimited (maxMessageSize;
                                * JN_IO_CONTROL_MAX_MESSAGE on control links) */
    bool local_closed;
    bool policy_counted; /* in conn->policy_senders/receivers (io_policy.c) */
    /* incoming: the per-message checks of this link, set before its first
     * delivery (JN_IO_RX_CHECK_*); 0 on most links, so the receive path
     * pays one predictable branch for both */
    uint8_t rx_checks;
    bool policy_transfer_logged; /* a denied transfer was logged (io_policy.c) */
    jn_io_link_t *prev, *next;   /* conn->links */
    jn_io_link_t *busy_next;     /* conn->busy */
    bool busy;

    /* incoming: what the link holds (JN_IO_LINK_HIGH_WATER). budget: a
     * reference (NULL when out of memory: unbounded), shared with the
     * messages charged to it; its waker wakes this connection. */
    jn_rx_budget_t *budget;
    bool rx_stopped;          /* not taking deliveries: waiting for the wake */
    uint32_t credit_deferred; /* LINK_CREDIT from the core not granted yet */
    size_t rx_avg_size;       /* recent message size (0: none yet) */

    /* incoming: the delivery being received (one at a time per link) */
    struct {
        pn_delivery_t *pd;
        jn_message_t *msg;   /* our reference while receiving */
        jn_delivery_t *dlv;  /* our reference once routed */
        bool discard;        /* rejected/oversize: drop the octets */
        bool settle_pending; /* settle when the last octet is in */
        bool settle_now;     /* oversize: settle without the rest */
        /* the outcome to settle it with then (JN_DISP_NONE: none); owned.
         * A terminal outcome is sent with the settlement, in one
         * disposition, never once unsettled and again settled. */
        jn_disposition_t final_disp;
        bool notify;         /* tell the core at batch end */
        bool paused;         /* stopped reading (high-water mark) */
        size_t trimmed_at;   /* message length at the last trim */
    } rx;

    /* outgoing: the copy being sent, and copies waiting for it */
    struct {
        jn_message_out_t out;
        jn_delivery_t *dlv; /* our reference while sending */
        pn_delivery_t *pd;
        jn_work_t *wait_head, *wait_tail; /* DELIVERY_SEND items, in order */
        uint64_t sent;                    /* deliveries that consumed credit */
        uint64_t flow_limit;              /* last credit limit told to the core */
        /* the limit told is at most flow_cap past sent: linkCapacity, or
         * fewer for large messages (io_send.c); when that cut the peer's
         * credit (flow_capped) it is told again after each half cap sent
         * (sent at the last telling: flow_sent) */
        uint64_t flow_sent;
        uint64_t flow_cap;  /* the cap at the last telling */
        size_t msg_size;    /* a recent copy's message length (0: none seen) */
        bool flow_capped;
        bool flow_drain;
        bool flow_told;
        int slot;     /* jn_message_stream_copy_begin's */
        bool stalled; /* proton's buffer is full: poll */
        bool settle_when_done;
        bool drain_pending; /* pn_link_drained once idle */
    } tx;
};

/* ---- functions shared between the files, by the file that defines them - */

/* io.c: the layer's frame */
/* jn_io_vhost_admit_IO: the vhost policy's check of an incoming client
 * connection at its Open (docs/design.md "Policy"): user is the
 * authenticated user (NULL: "anonymous"), hostname the Open's (may be
 * NULL; the listener's policyVhost when it has one). True: admitted (and
 * counted when the policy is on); false: denied, logged once and counted;
 * the caller closes it with amqp:resource-limit-exceeded. Out of memory
 * denies. A connector's connection (role normal or route-container) with
 * a policyVhost takes that vhost's "$connector" group's rules, uncounted;
 * no such vhost or group denies it (1.19). Conn's loop. */
bool jn_io_vhost_admit_IO(jn_io_conn_t *conn, const char *user, const char *hostname);

/* jn_io_vhost_link_check_IO: the rules of link's connection's user group
 * for a link the client attaches (docs/design.md "Policy"): link->dir
 * JN_LINK_INCOMING (the client sends to address; NULL: an anonymous
 * sender) or JN_LINK_OUTGOING (the client receives from address; dynamic:
 * a dynamic source); maxSenders/maxReceivers, the qd.waypoint and
 * qd.fallback capabilities, the sources/targets. NULL when allowed or no
 * rules apply (the link is then counted, and takes the group's
 * maxMessageSize); else the condition to detach it with
 * (amqp:resource-limit-exceeded for a count limit, else
 * amqp:unauthorized-access), the denial logged once and counted in
 * linksDenied and the vhost's senderDenied/receiverDenied. Conn's loop. */
const char *jn_io_vhost_link_check_IO(jn_io_link_t *link, const char *address, bool dynamic);

/* jn_io_vhost_relay_allows_IO: the target check of one message m (parsed
 * through its properties) received on link, an anonymous sender of a
 * connection under a vhost policy (docs/design.md "Policy"): true when the
 * user group's targets/targetPattern allow every address the core could
 * route it on (properties.to, and the to-override annotation when the
 * connection keeps inbound router annotations), or it has none. False
 * (also once the connection's rules are dropped as it closes): counted in the vhost's senderDenied
 * and logged once per link; the caller rejects the delivery with amqp:unauthorized-access. An
 * address too long to judge (1 KiB or more) or holding a NUL octet is denied. Conn's loop; not on
 * the path of links without the check. */
bool jn_io_vhost_relay_allows_IO(jn_io_link_t *link, const jn_message_t *m);

/* jn_io_vhost_names_management: whether address (a terminus address or a
 * message's, scheme and host allowed) names a management node: this
 * router's or another's, by any spelling the routers serve
 * (`$management` alone or as its last segment). Any thread. */
bool jn_io_vhost_names_management(const char *address);

/* jn_io_vhost_reply_allows_IO: the reply-to check of one message m (parsed
 * through its properties) received on link, a sender of a connection under
 * a vhost policy whose target is a management node (JN_IO_RX_CHECK_REPLY),
 * or an anonymous sender (JN_IO_RX_CHECK_TARGET; only its messages to a
 * management node are checked): the router answers a request at its
 * reply-to, so the client's group must allow that address as a target, or
 * it must be one of the connection's own dynamic (reply) addresses
 * (docs/compat.md). True when allowed, or the message has no reply-to or is not
 * a request to a management node. False (also once the connection's rules
 * are dropped): counted in the vhost's senderDenied and logged once per
 * link; the caller rejects the delivery with amqp:unauthorized-access.
 * Conn's loop; not on the path of links without the check. */
bool jn_io_vhost_reply_allows_IO(jn_io_link_t *link, const jn_message_t *m);

/* jn_io_vhost_link_gone_IO: link no longer counts against its group's
 * maxSenders/maxReceivers (a no-op when it never did). Conn's loop. */
void jn_io_vhost_link_gone_IO(jn_io_link_t *link);

/* jn_io_vhost_session_denied_IO: transport t failed; when proton refused a
 * Begin past the channel-max the group's maxSessions set, count it in the
 * vhost's sessionDenied and log the denial once. Conn's loop. */
void jn_io_vhost_session_denied_IO(jn_io_conn_t *conn, pn_transport_t *t);

/* jn_io_vhost_oversize_IO: a message over link's maxMessageSize: under a
 * vhost, count it in the vhost's maxMessageSizeDenied and log the denial
 * (user, host, vhost, limit) and return true; false (nothing done) when no
 * vhost governs the connection. Conn's loop (not the per-message path:
 * once per oversize message). */
bool jn_io_vhost_oversize_IO(jn_io_link_t *link);

/* jn_io_vhost_rights_IO: whether conn's user group turns off
 * allowDynamicLinkRoutes / allowAdminStatusUpdate (both false when no
 * vhost policy governs it). Conn's loop, after the Open. */
void jn_io_vhost_rights_IO(const jn_io_conn_t *conn, bool *deny_dynamic_link_routes,
                           bool *deny_admin_status_update);

/* jn_io_vhost_transport_IO: apply conn's user group's maxFrameSize and
 * maxSessions to transport t (before our Open is written). Conn's loop. */
void jn_io_vhost_transport_IO(jn_io_conn_t *conn, pn_transport_t *t);

/* jn_io_vhost_session_window: conn's group's maxSessionWindow in octets, 0
 * when none applies. Conn's loop. */
size_t jn_io_vhost_session_window(const jn_io_conn_t *conn);

/* jn_io_vhost_user_id_proxy: whether conn's user group allows any user-id
 * (allowUserIdProxy); false when no vhost policy governs it. Conn's
 * loop. */
bool jn_io_vhost_user_id_proxy(const jn_io_conn_t *conn);
/* jn_io_vhost_log_close_IO: for a connection the vhost policy governed,
 * the POLICY debug line 1.19 writes when it closes ("closed with
 * resources ..."): its sessions and links now, the denials of its vhost
 * so far (1.19's connections share their vhost's counts), and
 * n_connections (the policy's current count). conn's loop, not under
 * io->lock. */
void jn_io_vhost_log_close_IO(jn_io_conn_t *conn, uint64_t n_connections);

/* jn_io_vhost_uncount_locked: take conn out of its vhost's counts (a no-op
 * when it is not counted). Any thread, io->lock held. */
void jn_io_vhost_uncount_locked(jn_io_t *io, jn_io_conn_t *conn);

/* jn_io_vhost_free_all: free the vhost table and counts. Main thread, at
 * jn_io_free. */
void jn_io_vhost_free_all(jn_io_t *io);

/* jn_io_max_connections: the connection limit derived from the
 * file-descriptor limit. Any thread. */
size_t jn_io_max_connections(void);

/* io_timer.c: the one-shot timers (any thread arms; loop 0 fires) */
void jn_io_timer_arm(jn_io_t *io, jn_io_timer_t *timer, unsigned delay_ms);
void jn_io_timer_arm_at(jn_io_t *io, jn_io_timer_t *timer, int64_t deadline_ms);
bool jn_io_timer_cancel(jn_io_t *io, jn_io_timer_t *timer);
void jn_io_timer_cancel_locked(jn_io_t *io, jn_io_timer_t *timer);
/* jn_io_timers_cancel_all: disarm every timer and drop the connection
 * references the armed ones held (may free connections). Main thread,
 * io->lock not held, once the loops have ended (jn_io_stop). */
void jn_io_timers_cancel_all(jn_io_t *io);
void jn_io_timers_run(jn_io_t *io);

/* io_loop.c: the loops, a connection's start, wake, move and pass */
int jn_io_loop_init(jn_io_loop_t *loop, jn_io_t *io, unsigned index);
void jn_io_loop_fini(jn_io_loop_t *loop);
void *jn_io_loop_main(void *arg);
void jn_io_loop_notify(jn_io_loop_t *loop);
jn_io_loop_t *jn_io_loop_pick(jn_io_t *io);
void jn_io_colocate(jn_io_conn_t *a, jn_io_conn_t *b);
int jn_io_conn_start(jn_io_conn_t *conn, pn_transport_t *t, int fd, const char *resolve_err);
void jn_io_conn_destroy_IO(jn_io_conn_t *conn);
bool jn_io_loop_work(jn_io_loop_t *loop);
void jn_io_conn_wake(jn_io_conn_t *conn);
size_t jn_io_loop_drain_exit(jn_io_loop_t *loop);
/* no loop can reach conn any more (its last reference is gone, or the
 * loops have ended): the calling thread acts as conn's loop (JN_ASSERT_IO)
 * until jn_io_adopt_end; returns what to give jn_io_adopt_end */
jn_io_loop_t *jn_io_adopt(jn_io_conn_t *conn);
void jn_io_adopt_end(jn_io_loop_t *was);
/* the peer's octets through the screen into proton, and the end of a
 * refused stream's input once our answer is written */
bool jn_io_conn_input_IO(jn_io_conn_t *conn, char *start, size_t n);
void jn_io_conn_written_IO(jn_io_conn_t *conn, bool writable);

/* io_loop.c, for io_tls.c: the socket failed (a transport error named
 * proton:io, both directions closed). io_watch.c: the socket refused
 * output (start a write-stall period); a period or the initial handshake
 * deadline came due (now: ms, monotonic): judge it. The loop owning conn. */
void jn_io_conn_io_error_IO(jn_io_conn_t *conn, int err, const char *what);
void jn_io_stall_watch_IO(jn_io_conn_t *conn);
void jn_io_stall_check_IO(jn_io_conn_t *conn, int64_t now);
void jn_io_handshake_check_IO(jn_io_conn_t *conn, int64_t now);

/* io_tls.c (TLS on a connection; comments there) */
int jn_io_tls_attach(jn_io_conn_t *conn, jn_tls_profile_t *p, bool server, bool detect);
void jn_io_tls_free(jn_io_conn_t *conn);
bool jn_io_tls_read_IO(jn_io_conn_t *conn, bool *plain);
bool jn_io_tls_write_IO(jn_io_conn_t *conn);
void jn_io_tls_abandon_IO(jn_io_conn_t *conn);
bool jn_io_tls_pending_out(const jn_io_conn_t *conn);
bool jn_io_tls_info(const jn_io_conn_t *conn, const char **proto, const char **cipher, int *ssf);
const char *jn_io_tls_peer_uid(const jn_io_conn_t *conn);
/* io_bridge.c: the TLS a bridged connection's owner terminated (wss://):
 * true with its facts (borrowed, immutable while the connection lives;
 * *peer_uid NULL without a verified client certificate), false when it
 * has none. The connection's loop thread. */
bool jn_io_bridge_tls_info(const jn_io_conn_t *conn, const char **proto, const char **cipher,
                           int *ssf, const char **peer_uid);
/* sasl_cyrus.c: does an endpoint's transport run Cyrus (server: accepted
 * connections)? jn_io_sasl_attach: plug Cyrus into t (conn's transport,
 * not yet started): 0 or JN_ENOMEM. */
int jn_io_sasl_attach(jn_io_conn_t *conn, pn_transport_t *t);
/* authsvc.c: SASL relayed to an auth service (docs/design.md "The auth
 * service"; comments there) */
int jn_io_authsvc_prepare(jn_io_endpoint_t *ep, char *err, size_t errlen);
int jn_io_authsvc_attach(jn_io_conn_t *conn, pn_transport_t *t);
void jn_io_authsvc_event_IO(jn_io_conn_t *svc, pn_event_t *event);
void jn_io_authsvc_client_closed_IO(jn_io_conn_t *client);
void jn_io_authsvc_timeout_IO(jn_io_conn_t *svc);
void jn_io_authsvc_stop_IO(jn_io_conn_t *svc);
/* io.c: the profile registered under name, with a reference for the
 * caller, or NULL. Any thread (takes io->lock). */
jn_tls_profile_t *jn_io_tls_profile_get(jn_io_t *io, const char *name);

/* io_test.c (tests and fuzzing only): a socketless connection's read and
 * write steps of conn_pass. */
void jn_io_test_read_IO(jn_io_conn_t *conn);
void jn_io_test_write_IO(jn_io_conn_t *conn);

/* io_bridge.c: a bridged connection's read and write steps of conn_pass,
 * and its end (the connection is destroyed: the owner is told). */
void jn_io_bridge_read_IO(jn_io_conn_t *conn);
void jn_io_bridge_write_IO(jn_io_conn_t *conn);
void jn_io_bridge_gone_IO(jn_io_conn_t *conn);

/* io_endpoint.c: listeners, connectors, accepting and connecting */
void jn_io_endpoint_free(jn_io_endpoint_t *ep);
int jn_io_listen(jn_io_t *io, jn_io_endpoint_t *ep);
void jn_io_connect(jn_io_endpoint_t *ep);
void *jn_io_connector_main(void *arg);
void jn_io_accept(jn_io_lsock_t *ls);
void jn_io_listener_close_locked(jn_io_t *io, jn_io_endpoint_t *ep);
void jn_io_connector_closed_IO(jn_io_endpoint_t *ep, jn_io_conn_t *conn, bool was_open);
pn_transport_t *jn_io_transport_new(const jn_endpoint_config_t *cfg, bool server);

/* io_conn.c: a connection's life, proton's events, the core's work */
jn_io_conn_t *jn_io_conn_new(jn_io_t *io, jn_io_endpoint_t *ep, bool incoming);
void jn_io_conn_unref(jn_io_conn_t *conn);
bool jn_io_conn_tryref(jn_io_conn_t *conn);
/* jn_io_conn_refuse_IO: close conn with its screen's error. */
void jn_io_conn_refuse_IO(jn_io_conn_t *conn);
void jn_io_conn_event_IO(jn_io_conn_t *conn, pn_event_t *event);
void jn_io_conn_batch_end_IO(jn_io_conn_t *conn);
void jn_io_conn_poll_later_IO(jn_io_conn_t *conn, bool progressed);
/* jn_io_link_new_IO: our object for proton link pl on conn. */
jn_io_link_t *jn_io_link_new_IO(jn_io_conn_t *conn, pn_link_t *pl);
void jn_io_link_set_busy_IO(jn_io_link_t *link);
void jn_io_link_close_IO(jn_io_link_t *link, const char *condition, const char *description);
/* io_open.c: the peer's open, on PN_CONNECTION_REMOTE_OPEN (the core is
 * told of the connection, or it is refused and closed). */
void jn_io_conn_remote_open_IO(jn_io_conn_t *conn, pn_transport_t *t);
/* io_conn.c: close the connection with an error (once). */
void jn_io_conn_close_IO(jn_io_conn_t *conn, const char *condition, const char *description);
/* Unsettled deliveries: the pn_delivery's context holds a reference on
 * the jn_delivery_t, and we hold a proton reference on the pn_delivery
 * (io_recv.c explains why); drop them all when the link or connection
 * goes. */
void jn_io_release_unsettled_IO(pn_link_t *pl);

/* io_state.c: a delivery state, every field, between proton and the core */
void jn_io_data_encode(pn_data_t *data, uint8_t **out, size_t *len);
void jn_io_state_read_IO(pn_disposition_t *remote, jn_disposition_t *d);
void jn_io_state_release_IO(jn_disposition_t *d);
void jn_io_state_apply_IO(pn_disposition_t *local, const jn_disposition_t *d);

/* io_props.c: a peer's open properties, rendered for management */
/* jn_io_tenant_IO (io_tenant.c): the vhost whose tenant space conn lives
 * in, into info->tenant_vhost: its Open's hostname (pc's, borrowed, valid
 * while pc is) when a listener with multiTenant accepted it (not of role
 * inter-router or edge); NULL when none (no hostname, another listener).
 * Returns false when the hostname cannot name a space: conn is then
 * closed (amqp:invalid-field, logged) and the caller returns. Once the
 * Open has arrived; conn's I/O thread. */
bool jn_io_tenant_IO(jn_io_conn_t *conn, pn_connection_t *pc, jn_conn_info_t *info);

/* jn_io_tenant_ra_IO (io_tenant.c): the router annotations to send to
 * conn, a connection in a tenant space (conn->tenant) that is sent router
 * annotations: ra itself, or, when its x-opt-qd.to is an address in conn's
 * space, *fresh: ra with that address as the client names it (the space
 * cut off), so the space is invisible to the client. ra (not NULL, with
 * has_to) and fresh are the caller's; the result is valid while both are.
 * conn's I/O thread, per copy sent to such a connection only. */
const jn_ra_t *jn_io_tenant_ra_IO(const jn_io_conn_t *conn, const jn_ra_t *ra, jn_ra_t *fresh);

/* jn_io_render_properties_IO: a peer's open properties as management shows
 * them (an encoded map with string keys; heap, the caller's), or NULL/0. */
void jn_io_render_properties_IO(pn_data_t *props, uint8_t **out, size_t *len);
/* jn_io_put_open_properties: the entries of the AMQP-encoded map raw (len
 * octets: an endpoint's openProperties) added to props, an open map being
 * written: keys as symbols, values as jn_io_render_properties_IO keeps
 * them. Nothing on a decode error. Any thread (props is the caller's). */
void jn_io_put_open_properties(pn_data_t *props, const uint8_t *raw, size_t len);

/* io_recv.c: the receive path (incoming links) */
void jn_io_rx_delivery_IO(jn_io_link_t *link, pn_delivery_t *pd);
bool jn_io_rx_resume_IO(jn_io_link_t *link);
void jn_io_rx_init_IO(jn_io_link_t *link);
void jn_io_rx_credit_IO(jn_io_link_t *link, uint32_t credit, bool drain);
void jn_io_rx_update_IO(jn_io_link_t *link, jn_work_t *work);
void jn_io_rx_link_gone_IO(jn_io_link_t *link);

/* io_route.c: links attached for the core (link routes, auto-links) */
void jn_io_route_attach_IO(jn_io_conn_t *conn, jn_work_t *w);
/* A routed link's session is free again (its link released): keep it for
 * the next routed link, or end it when enough are kept. */
void jn_io_route_session_idle_IO(jn_io_conn_t *conn, pn_session_t *ssn);
/* The peer ended ssn: forget it if it was kept. */
void jn_io_route_session_gone_IO(jn_io_conn_t *conn, pn_session_t *ssn);
/* The peer's source and target of pl, encoded for the core (heap, the
 * caller's; NULL/0 when out of memory). */
void jn_io_termini_encode_IO(pn_link_t *pl, uint8_t **out, size_t *len);
/* jn_io_coordinator_IO: the peer attached pl as a sender whose target is
 * a transaction coordinator (AMQP 1.0 4.5.1): jn_link_info_t.coordinator.
 * The connection's I/O thread. */
bool jn_io_coordinator_IO(pn_link_t *pl);

/* io_send.c: the send path (outgoing links) */
void jn_io_tx_send_IO(jn_io_link_t *link, jn_work_t *work);
void jn_io_tx_continue_IO(jn_io_link_t *link, jn_delivery_t *dlv);
bool jn_io_tx_resume_IO(jn_io_link_t *link);
void jn_io_tx_update_IO(jn_io_link_t *link, jn_work_t *work);
void jn_io_tx_delivery_IO(jn_io_link_t *link, pn_delivery_t *pd);
void jn_io_tx_flow_IO(jn_io_link_t *link);
void jn_io_tx_drained_IO(jn_io_link_t *link);
void jn_io_tx_link_gone_IO(jn_io_link_t *link);
/* jn_io_tx_abort_IO: before our end of an outgoing link is detached or
 * closed, abort the copy being sent, if it has begun (AMQP 1.0 2.7.5).
 * The loop's thread of the link's connection. */
void jn_io_tx_abort_IO(jn_io_link_t *link);

/* io_mesh.c: inter-router connections (docs/protocol.md, "The mesh") */
/* The peer's qd.inter-router-cost from its open's properties (an AMQP int
 * only, docs/protocol.md, "Inter-router connections"), or 0. */
uint32_t jn_io_ir_remote_cost(pn_connection_t *pc);
/* Log (ROUTER debug, 1.19's words, which tools and tests grep) the
 * qd.annotations-version an inter-router or edge peer's open states. The
 * connection's loop thread. */
void jn_io_ir_log_annotations_version_IO(jn_io_conn_t *conn, pn_connection_t *pc);
/* Connector side of an inter-router connection, once open: begin the 11
 * sessions and attach the 2 control and 20 data links in 1.19's order,
 * each reported to the core as a local link. */
void jn_io_ir_attach_links_IO(jn_io_conn_t *conn);
/* A link the peer attached: set info->type and info->priority from the
 * terminus capability at our end and the attach order. */
void jn_io_ir_classify_IO(jn_io_link_t *link, jn_link_info_t *info);
/* Put the single symbol cap as the capability of both of pl's local
 * termini (expiry policy link-detach, as 1.19's router links). The
 * connection's I/O thread; docs/protocol.md, "Edge routers". */
void jn_io_set_capability(pn_link_t *pl, const char *cap);
/* A receiver whose source has the qd.fallback capability (the first one,
 * docs/protocol.md, "Link routes, auto-links and phases on the wire"): a
 * fallback destination. */
bool jn_io_fallback_receiver_IO(pn_link_t *pl);
/* jn_io_waypoint_IO: the waypoint ordinal of the link the peer attached
 * (jn_link_info_t.waypoint): its sender's target or receiver's source has
 * the capability qd.waypoint (1) or qd.waypoint.<n> (n, 1..9); 0: none.
 * I/O thread of the link's connection. */
uint8_t jn_io_waypoint_IO(pn_link_t *pl);
/* A control link takes messages of at most JN_IO_CONTROL_MAX_MESSAGE. */
void jn_io_ir_cap_control_IO(jn_io_link_t *link);

/* Inline helpers of io_recv.c and io_send.c: */

/* jn_io_pd_keep: keep dlv (one reference, passed in) for pd: pd's context
 * names it and a proton reference is held on pd. A pre-settled one is
 * settled before any event could look for it in the context (in the same
 * pass, or, while its octets stream, as the link's delivery in progress,
 * found through the link): it gets neither. The connection's loop thread. */
static inline void jn_io_pd_keep(pn_delivery_t *pd, jn_delivery_t *dlv)
{
    jn_delivery_set_io(dlv, pd);
    if (jn_delivery_presettled(dlv))
        return;
    pn_delivery_set_context(pd, dlv);
    pn_incref(pd);
}

/* jn_io_pd_release: undo jn_io_pd_keep: clear the context, settle pd when
 * settle says so, drop the proton reference (pd must not be used after
 * this) and dlv's. The connection's loop thread. */
static inline void jn_io_pd_release(pn_delivery_t *pd, jn_delivery_t *dlv, bool settle)
{
    bool held = !jn_delivery_presettled(dlv);
    jn_delivery_set_io(dlv, NULL);
    if (held)
        pn_delivery_set_context(pd, NULL);
    if (settle)
        pn_delivery_settle(pd);
    if (held)
        pn_decref(pd);
    jn_delivery_unref(dlv);
}

/* Log prefix helpers: "[C12]" and "[C12][L3]". */
#define JN_IO_CONN_FMT "[C%" PRIu64 "]"
#define JN_IO_LINK_FMT "[C%" PRIu64 "][L%" PRIu64 "]"

/* jn_io_connector_note_IO: conn, if a connector's, opened (opened) or
 * failed: its connector's status and message (jn_io_connector_status)
 * become that, the message printf-style; on open, the connector takes the
 * peer's failover-server-list (jn_io_failover_take_IO). The loop's thread
 * of conn. */
void jn_io_connector_note_IO(jn_io_conn_t *conn, bool opened, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Failover lists (io_failover.c). jn_io_failover_take_IO: conn, made by a
 * connector, is open: when the peer's open properties carry
 * failover-server-list (a list of maps with network-host, and optionally
 * port and scheme), the connector's backups become the one it is
 * connected to (if a backup) followed by the peer's entries (at most 32;
 * an entry without a usable network-host is skipped). Without the
 * property nothing changes. On ENOMEM the list stays and the error is
 * logged. The loop's thread of conn; takes jn_io_t.lock. */
void jn_io_failover_take_IO(jn_io_conn_t *conn);
/* jn_io_failover_advance_locked: connector ep's connection was lost or
 * its attempt failed: its next attempt goes to the next entry of its
 * list, round robin (no change without backups). jn_io_t.lock held. */
void jn_io_failover_advance_locked(jn_io_endpoint_t *ep);
/* jn_io_failover_target_locked: the host and port (NUL-terminated, cut
 * to hcap and pcap octets) connector ep's next attempt goes to; an IPv6
 * literal without its brackets. jn_io_t.lock held. */
void jn_io_failover_target_locked(const jn_io_endpoint_t *ep, char *host, size_t hcap,
                                  char *port, size_t pcap);
/* jn_io_failover_free: free f's backups and empty it. The endpoint's
 * owner (no lock needed once the endpoint is unreachable). */
void jn_io_failover_free(jn_io_failover_t *f);

/* Message logging (io_msglog.c). jn_io_msg_log_any_: some endpoint logs
 * messages (set for good when one is added; relaxed). */
extern atomic_bool jn_io_msg_log_any_;
/* jn_io_msg_log_IO: log m as "[C<id>] <what> Message{...}" by conn's
 * components (MESSAGE, info). The loop's thread of conn. */
void jn_io_msg_log_IO(const jn_io_conn_t *conn, const char *what, const jn_message_t *m);
/* jn_io_msg_log_received_IO: m arrives on conn (all_in: all of it is
 * there): parse it to its application properties and log it if conn logs
 * messages. Before the delivery is handed over. Returns 0, or JN_AGAIN
 * when its application properties are not all in yet (route it later). */
int jn_io_msg_log_received_IO(const jn_io_conn_t *conn, jn_message_t *m, bool all_in);

/* jn_io_trace_update_IO: switch conn's frame trace on or off after the
 * PROTOCOL level or the traced connections changed (io_trace.c). */
void jn_io_trace_update_IO(jn_io_conn_t *conn, unsigned gen, bool log_on);

/* jn_io_trace_check_IO: once per pass over conn: whether its frame trace
 * must be switched. Two relaxed loads while nothing changes. The loop's
 * thread of conn. */
static inline void jn_io_trace_check_IO(jn_io_conn_t *conn)
{
    unsigned gen = jn_log_conn_trace_gen();
    bool log_on = jn_log_enabled(JN_LOG_MOD_PROTOCOL, JN_LOG_TRACE);
    if (JN_UNLIKELY(gen != conn->trace_gen || log_on != conn->trace_log))
        jn_io_trace_update_IO(conn, gen, log_on);
}

#endif /* JN_IO_PRIVATE_H */
