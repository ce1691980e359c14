/*
 * junction/io.h — the I/O layer: the event loops (one per worker thread),
 * listeners, connectors and AMQP connections (DESIGN.md, router/io).
 *
 * Each worker thread runs an epoll loop of its own (router/io/io_loop.c).
 * A connection belongs to one loop at a time, so everything reachable from
 * it (its proton objects — a pn_connection_driver — its receive buffers,
 * its half of the link and delivery objects) is owned by that thread,
 * without locks; when the core sees two connections exchange most of
 * their deliveries, one of them is handed to the other's loop between two
 * passes, so a flow runs on one thread. The I/O layer turns proton events
 * into core actions (junction/core.h), runs the core inline after each
 * pass over its connections (jn_core_run_inline), and carries out the
 * core's work items when the core wakes a connection, writing everything
 * pending in one go.
 *
 * Threads: jn_io_create/add/start/stop/free on the main thread.
 */
#ifndef JUNCTION_IO_H
#define JUNCTION_IO_H 1

#include <junction/core.h>

typedef struct jn_io jn_io_t;

/* Role of a listener's or connector's connections (schema enum). */
typedef enum jn_conn_role {
    JN_ROLE_NORMAL = 0,
    JN_ROLE_INTER_ROUTER,
    JN_ROLE_ROUTE_CONTAINER,
    JN_ROLE_EDGE
} jn_conn_role_t;

/* stripAnnotations (mesh-protocol.md 9.4). */
typedef enum jn_strip { JN_STRIP_BOTH = 0, JN_STRIP_IN, JN_STRIP_OUT, JN_STRIP_NO } jn_strip_t;

/* The attributes of a `listener` or `connector` entity that the I/O layer
 * uses. Strings are copied. Sizes in octets, times in seconds. Values as
 * configured (main passes the schema defaults the config parser filled in);
 * 0 means the default where said. JN_ROLE_NORMAL, JN_ROLE_ROUTE_CONTAINER
 * (a broker's connection: link routes and auto-links may name it) and
 * JN_ROLE_INTER_ROUTER are accepted (the latter only on an interior
 * router's core: main checks); JN_ROLE_EDGE is JN_EINVAL. */
typedef struct jn_endpoint_config {
    const char *name; /* entity name, for logs */
    const char *host; /* listener: "" or NULL = all interfaces */
    const char *port; /* number or service name ("amqp"); NULL = "amqp" */
    jn_conn_role_t role;
    const char *sasl_mechanisms;   /* space-separated, NULL = all available */
    bool authenticate_peer;        /* listener: SASL required */
    uint32_t max_frame_size;       /* 0 = 16384; below 512 raised to 512 */
    uint32_t max_sessions;         /* 0 or > 32768 = 32768; channel-max = this - 1 */
    uint32_t max_session_frames;   /* incoming session window in frames; 0 = the
                                    * I/O layer's bound (io_private.h) */
    uint32_t idle_timeout_seconds; /* 0 = none; half is advertised, in ms */
    uint64_t max_message_size;     /* 0 = unlimited; larger: the link is detached
                                    * with amqp:link:message-size-exceeded */
    uint32_t link_capacity;        /* 0 = 250 */
    jn_strip_t strip_annotations;
    uint32_t cost;                 /* inter-router: link cost (0 = 1) */
} jn_endpoint_config_t;

typedef struct jn_io_config {
    const char *container_id; /* our AMQP container id (the router id) */
    unsigned worker_threads;  /* >= 1 */
    /* router.minPeerIdleTimeoutMs: a peer whose open asks for an
     * idle-time-out below this many milliseconds (and not 0: none) is
     * refused with amqp:resource-limit-exceeded (AMQP 1.0 2.4.5). 0: no
     * floor. */
    uint32_t min_peer_idle_timeout_ms;
    /* router.writeStallTimeoutSeconds: a connection whose socket took
     * fewer than 1,024 octets (JN_IO_WRITE_STALL_MIN_OCTETS) in this many
     * seconds while our output waited for it is cut
     * (amqp:resource-limit-exceeded). 0: never. */
    uint32_t write_stall_timeout_s;
} jn_io_config_t;

/* jn_io_core_ops: the callbacks the core must be created with. Static.
 * wake takes a small per-connection lock (once per wake, never per
 * message) so that a wake after the connection's transport closed is a
 * no-op; conn_released frees the connection's object. */
const jn_core_io_ops_t *jn_io_core_ops(void);

/* jn_io_create: the I/O layer over core (not started); cfg is copied.
 * Returns NULL on ENOMEM. */
jn_io_t *jn_io_create(jn_core_t *core, const jn_io_config_t *cfg);

/* jn_io_add_listener: listen as cfg says once started (or at once, if
 * already started). Returns 0, JN_EINVAL (bad attribute, or — when already
 * started — an address that cannot be bound; with a log line), JN_ENOMEM.
 * Before the start, a port that cannot be bound is logged (SERVER, error)
 * and reported by jn_io_start. Any thread (management's CREATE runs on the
 * core). */
int jn_io_add_listener(jn_io_t *io, const jn_endpoint_config_t *cfg);

/* jn_io_add_connector: connect as cfg says, retrying after a failure or a
 * lost connection (qdrouterd's retry timing). Returns 0, JN_EINVAL,
 * JN_ENOMEM. */
int jn_io_add_connector(jn_io_t *io, const jn_endpoint_config_t *cfg);

/* jn_io_remove_endpoint: management DELETE of the listener or connector
 * added with cfg->name == name (the first one not removed yet): a listener
 * stops listening (its open connections stay); a connector stops retrying
 * (the caller closes its current connection through the core). The
 * endpoint's memory stays until jn_io_free. Returns 0 or JN_ENOENT. Any
 * thread (management: the core thread); takes the I/O layer's lock. */
int jn_io_remove_endpoint(jn_io_t *io, const char *name);

/* jn_io_listener_port: the port the listener added with cfg->name ==
 * name listens on, as decimal text in buf (cap octets, NUL-terminated): the
 * configured one, or for port 0 the one the system gave (every address of
 * the listener's host gets the same). Returns 0, or JN_ENOENT when no such
 * listener listens (not started, failed, removed). Any thread; takes the
 * I/O layer's lock. */
int jn_io_listener_port(jn_io_t *io, const char *name, char *buf, size_t cap);

/* jn_io_start: start the worker threads, listen, connect. Waits (up to
 * 10 s) until every listener is open or has failed. Returns 0; JN_EINVAL
 * when a listener could not be opened (logged: SERVER error "Listener
 * error on HOST:PORT"); JN_ENOMEM when a thread could not start. Call
 * jn_io_stop afterwards in every case. Main thread. */
int jn_io_start(jn_io_t *io);

/* jn_io_stop: orderly stop: stop listening and retrying, close every
 * connection with a close frame (no error condition), wait up to
 * timeout_ms for them to finish, cut the rest (amqp:connection:forced, up to
 * 1 s more), then stop the threads. Returns when all worker threads have
 * exited and every connection has been reported closed to the core. A
 * no-op when not started. Main thread. */
void jn_io_stop(jn_io_t *io, unsigned timeout_ms);

/* jn_io_free: free a stopped I/O layer. Call after jn_core_free (which
 * releases the connections the core still held). NULL is ignored. Main
 * thread. */
void jn_io_free(jn_io_t *io);

/* ---- tests and fuzzing only (router/io/io_test.c) ----------------------
 *
 * A connection without a socket, driven by the caller's thread through the
 * router's own pass (the loop's conn_pass: proton's events, the core's
 * work, the core run inline), so that a test or a fuzzer can hand a router
 * the octets a peer would send. The I/O layer must have been created with
 * one worker thread and never started (jn_io_start): the test's thread
 * plays loop 0. The core is started (jn_core_start) as usual. Nothing
 * here is used by junctiond. */

typedef struct jn_io_conn jn_io_conn_t;

/* jn_io_test_conn_new: a socketless connection of the listener (incoming:
 * a server transport, as accepted) or the connector (outgoing: a client
 * transport, opened, as connected) named `endpoint`, added before with
 * jn_io_add_listener/jn_io_add_connector. The caller holds a reference
 * until jn_io_test_conn_release. NULL when no such endpoint, or ENOMEM. */
jn_io_conn_t *jn_io_test_conn_new(jn_io_t *io, const char *endpoint);

/* jn_io_test_conn_input: the next octets the peer sends (borrowed until
 * jn_io_test_conn_pending says they are all taken, or the connection
 * closed; octets of an earlier call not yet taken are dropped); data
 * NULL: no new octets, those not yet taken stay. end: the peer's input
 * ends after them. Wakes the connection. */
void jn_io_test_conn_input(jn_io_conn_t *conn, const uint8_t *data, size_t len, bool end);

/* jn_io_test_conn_pending: octets of the last input not yet taken by
 * proton. */
size_t jn_io_test_conn_pending(const jn_io_conn_t *conn);

/* jn_io_test_conn_closed: the transport closed (the router is done with
 * the connection's proton objects). */
bool jn_io_test_conn_closed(const jn_io_conn_t *conn);

/* jn_io_test_conn_abort: close the transport now, both ways (as a socket
 * error would); the next run reports it closed. */
void jn_io_test_conn_abort(jn_io_conn_t *conn);

/* jn_io_test_conn_release: drop the caller's reference (the connection is
 * freed once the core has released it too). */
void jn_io_test_conn_release(jn_io_conn_t *conn);

/* jn_io_test_run: run loop 0's woken connections' passes and the core
 * inline on the calling thread, without waiting (no epoll, no timers).
 * Returns true while work remains (call again). Always the same thread. */
bool jn_io_test_run(jn_io_t *io);

/* jn_io_test_conns: connection objects not yet freed (0 once every test
 * connection was closed, released by the core and by its caller). */
size_t jn_io_test_conns(jn_io_t *io);

#endif /* JUNCTION_IO_H */
