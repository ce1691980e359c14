/*
 * junction/io.h — the I/O layer: the event loops (one per worker thread),
 * listeners, connectors and AMQP connections (docs/design.md, "Layers", "Threads").
 *
 * Each worker thread runs an epoll loop of its own (router/io/io_loop.c).
 * A connection belongs to one loop at a time, so everything reachable from
 * it (its AMQP engine — junction/amqp_transport.h — its receive buffers,
 * its half of the link and delivery objects) is owned by that thread,
 * without locks; when the core sees two connections exchange most of
 * their deliveries, one of them is handed to the other's loop between two
 * passes, so a flow runs on one thread. The I/O layer turns the engine's
 * events into core actions (junction/core.h), runs the core inline after each
 * pass over its connections (jn_core_run_inline), and carries out the
 * core's work items when the core wakes a connection, writing everything
 * pending in one go. Under a vhost policy it gathers the facts of each
 * client Open and attach, asks the policy layer (junction/policy.h, whose
 * table main.c hands it with jn_io_vhost_policy) and acts on the answer.
 * What a listener or connector asks for (jn_endpoint_config_t) is
 * described in junction/endpoint.h, below this layer, so that the agent
 * can fill it in without including this header.
 *
 * Threads: jn_io_create/add/start/stop/free on the main thread.
 */
#ifndef JUNCTION_IO_H
#define JUNCTION_IO_H 1

#include <junction/core.h>
#include <junction/endpoint.h>
#include <junction/policy.h>
#include <junction/tls.h>

typedef struct jn_io jn_io_t;

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
    /* policy.maxConnections: incoming connections (every listener, any
     * role) open at once; one more is closed at accept, before any AMQP,
     * as 1.19 does (docs/design.md "Policy"). 0 refuses every incoming
     * connection (1.19's meaning). JN_IO_NO_POLICY_LIMIT: no limit (unit
     * tests). */
    uint32_t max_connections;
} jn_io_config_t;

#define JN_IO_NO_POLICY_LIMIT UINT32_MAX

/* jn_io_vhost_policy: turn the vhost policy on (policy.enableVhostPolicy)
 * with the vhost table policy (junction/policy.h; borrowed: it outlives
 * io, and its vhosts may change while io runs). From then on every
 * incoming client connection (role normal) is checked at its Open by
 * jn_policy_admit with its user, its Open hostname (or the listener's
 * policyVhost) and its remote host: a refusal closes it with
 * amqp:resource-limit-exceeded and one POLICY log line; an admitted
 * connection gets its user group's transport settings, and each attach
 * is checked by jn_policy_link_denial. A connector with a policyVhost
 * takes that vhost's "$connector" group's link rules. Main thread, before
 * jn_io_start. */
void jn_io_vhost_policy(jn_io_t *io, jn_policy_t *policy);

/* jn_io_residence_read: the sums over every loop of the residence
 * histogram (jn_residence_t, junction/core.h), into *out. A copy counted while this reads may be in a
 * bucket and not yet in the sum (or the reverse): the figures are each
 * monotonic, not a snapshot of one instant. Any thread; no lock. */
void jn_io_residence_read(jn_io_t *io, jn_residence_t *out);

/* jn_io_policy_stats: the policy entity's connection figures
 * (jn_policy_conn_stats_t, junction/policy.h) into *out. Any thread (takes the
 * layer's lock briefly). */
void jn_io_policy_stats(jn_io_t *io, jn_policy_conn_stats_t *out);

/* ---- SASL (Cyrus SASL behind the engine's SASL layer) -------------------
 *
 * A listener or connector that authenticates (listener: authenticatePeer,
 * an sslProfile, or a saslMechanisms naming more than ANONYMOUS;
 * connector: saslUsername, an sslProfile, or such a saslMechanisms) runs
 * its SASL exchange through Cyrus SASL; the others keep the engine's
 * built-in ANONYMOUS. */

/* jn_sasl_init: start Cyrus SASL as 1.19's router saslConfigDir (the
 * folder of Cyrus's config file; NULL = Cyrus's default, /etc/sasl2) and
 * saslConfigName (the file is NAME.conf; NULL = "qdrouterd") say. Once per
 * process (later calls do nothing and return 0), before jn_io_start.
 * Returns 0, JN_EINVAL (err, errlen octets, says why) or JN_ENOMEM. Main
 * thread. */
int jn_sasl_init(const char *config_dir, const char *config_name, char *err, size_t errlen);

/* jn_endpoint_uses_sasl_plugin: cfg's connections (server: a listener's)
 * run SASL through Cyrus (see above) once jn_sasl_init has run. Any
 * thread. */
bool jn_endpoint_uses_sasl_plugin(const jn_endpoint_config_t *cfg, bool server);

/* jn_sasl_check_listener: whether a listener's SASL settings can work, so
 * that a router never starts and then refuses every client: each
 * mechanism of ec->sasl_mechanisms must be offered by Cyrus as configured
 * (ANONYMOUS is the engine's own when Cyrus is not used), EXTERNAL needs
 * can_external (an sslProfile with a caCertFile: the client certificate is
 * the identity), and authenticate_peer needs a mechanism that
 * authenticates. Returns 0, or JN_EINVAL with a reason in err (errlen
 * octets). After jn_sasl_init. Any thread. */
int jn_sasl_check_listener(const jn_endpoint_config_t *ec, bool can_external, char *err,
                           size_t errlen);

/* jn_sasl_shutdown: release Cyrus SASL (after jn_io_free). Main thread. */
void jn_sasl_shutdown(void);

/* jn_sasl_server_offers: Cyrus (as configured: its config file's
 * mech_list) has a server mechanism of that name. EXTERNAL is offered to a
 * client only with a verified TLS client certificate. False before
 * jn_sasl_init. Any thread after it. */
bool jn_sasl_server_offers(const char *mech);

/* jn_sasl_server_mechanisms: the server mechanisms Cyrus has, space
 * separated, into out (outlen octets, NUL-terminated, cut to fit);
 * returns the length. For error messages. */
size_t jn_sasl_server_mechanisms(char *out, size_t outlen);

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
 * and its current connection, opened or not, is closed (amqp:connection:
 * forced, "connector deleted"); no other connection is touched. The
 * endpoint's memory is freed by loop 0 once nothing uses it (its
 * connections are gone, no attempt or timer of it is pending). Returns 0
 * or JN_ENOENT. Any
 * thread (management: the core thread); takes the I/O layer's lock. */
int jn_io_remove_endpoint(jn_io_t *io, const char *name);

/* jn_io_listener_port: the port the listener added with cfg->name ==
 * name listens on, as decimal text in buf (cap octets, NUL-terminated): the
 * configured one, or for port 0 the one the system gave (every address of
 * the listener's host gets the same). Returns 0, or JN_ENOENT when no such
 * listener listens (not started, failed, removed). Any thread; takes the
 * I/O layer's lock. */
int jn_io_listener_port(jn_io_t *io, const char *name, char *buf, size_t cap);

/* jn_io_connector_status: how the connector added with cfg->name == name
 * fares, as 1.19's connector entity shows it: *opened when its connection
 * is open ("SUCCESS"; else it is connecting or waiting to retry,
 * "CONNECTING"), and in msg (cap octets) the router's log line of its last
 * event ("[C3] Connection Opened: dir=out ...", "[C4] Connection to ...
 * failed: ..."; empty before any). Returns 0, or JN_ENOENT when there is
 * no such connector. Any thread; takes the I/O layer's lock. */
int jn_io_connector_status(jn_io_t *io, const char *name, bool *opened, char *msg, size_t cap);

/* jn_io_connector_failover_urls: the failover list of the connector added
 * with cfg->name == name, as 1.19's connector entity shows it
 * (failoverUrls): "scheme://host:port" entries joined by ", ", starting
 * with the one its next (or current) connection goes to, then round
 * robin; its own host is "amqp://" ("amqps://" with an sslProfile) host
 * and port. Empty when no peer sent it a failover-server-list. buf: cap
 * octets, NUL-terminated. Returns 0, JN_ENOENT when there is no such
 * connector, JN_EINVAL when the list does not fit (buf empty). Any
 * thread; takes the I/O layer's lock. */
int jn_io_connector_failover_urls(jn_io_t *io, const char *name, char *buf, size_t cap);

/* jn_io_set_tls_profile: register profile p under name (an sslProfile
 * entity), replacing the profile registered under that name before; p
 * NULL removes the name. The registry takes its own reference to p (the
 * caller keeps its own) and drops the replaced one's. Connections take the
 * profile registered when they are accepted or connected and keep it for
 * their life, so a replacement (certificate rotation) changes only the
 * connections made afterwards. Returns 0 or JN_ENOMEM. Any thread (the
 * main thread at start-up, the core thread for management's CREATE and
 * UPDATE); takes the I/O layer's lock. */
int jn_io_set_tls_profile(jn_io_t *io, const char *name, jn_tls_profile_t *p);

/* jn_io_last_listen_error: why the last listener that could not be opened
 * on the calling thread failed (the system's words, e.g. "Address already
 * in use"; what the "Listener error" log line says), "" if none did. For
 * management's answer to a CREATE. Any thread; the text is the thread's. */
const char *jn_io_last_listen_error(void);

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

/* ---- bridged connections (router/io/io_bridge.c) ------------------------
 *
 * An AMQP connection whose octets travel over something other than a socket
 * of ours: AMQP over WebSocket (router/http, docs/design.md, "HTTP"). It is
 * an ordinary connection of a listener (its SASL, the engine's checks,
 * limits, role, idle timeout, the core's every feature), run by an event
 * loop as any accepted connection, except that its input comes from and its
 * output goes to two bounded buffers that another thread (the bridge's
 * owner, e.g. libwebsockets' service thread) fills and drains:
 *
 *   owner --jn_io_bridge_push--> input (JN_IO_BRIDGE_IN_CAP) --> engine
 *   engine --> output (JN_IO_BRIDGE_OUT_CAP) --jn_io_bridge_pull--> owner
 *
 * Backpressure both ways: push says when the input is full (the owner
 * stops reading its peer until notified), and the loop stops taking
 * the engine's output while the output buffer is full (the engine and the
 * router's own send limits then hold the rest, as for a socket that
 * refuses output; router.writeStallTimeoutSeconds applies).
 *
 * The listener: an endpoint added with jn_endpoint_config_t.bridged set
 * (no socket of its own). */

/* Octets the input buffer takes before push reports it full (the owner
 * may push one more read's worth past it: push never drops octets). */
#define JN_IO_BRIDGE_IN_CAP (256u * 1024)
/* Octets of the engine's output the loop moves into the output buffer at
 * most: what a peer that stops reading holds here. */
#define JN_IO_BRIDGE_OUT_CAP (256u * 1024)

typedef struct jn_io_bridge jn_io_bridge_t;

/* jn_io_bridge_notify_fn: called by the connection's loop thread, with
 * no lock of the caller's held, when output became available or ended, or
 * when the input has room again after a push reported it full. It must
 * not call jn_io_bridge_* itself (it should wake its owner's thread). */
typedef void (*jn_io_bridge_notify_fn)(void *ctx);

/* The TLS a bridge's owner terminated (wss://), as the connection then
 * shows it: to the core it is an ordinary TLS connection (isEncrypted,
 * sslProto, sslCipher, sslSsf; requireSsl and requireEncryption met) and
 * a verified client certificate is SASL EXTERNAL's identity, mapped by
 * the listener's sslProfile (uidFormat, uidNameMappingFile) as on a TCP
 * listener. All borrowed for the call; copied. */
typedef struct jn_io_bridge_tls {
    const char *proto;  /* "TLSv1.3" */
    const char *cipher; /* OpenSSL's name */
    int ssf;            /* the cipher's strength in bits */
    void *peer_cert;    /* X509 *: the client's certificate, or NULL */
    bool peer_verified; /* it was verified against the profile's caCertFile */
} jn_io_bridge_tls_t;

/* jn_io_bridge_open: a new bridged connection accepted on the listener
 * named listener (added with cfg.bridged), its peer described by peer
 * (host:port text, copied, for logs and management), over the TLS tls
 * describes (NULL: none). notify(ctx) as above until jn_io_bridge_close.
 * Returns the bridge (the caller's reference), or NULL: no such bridged
 * listener (JN_ENOENT in *err), the connection limit (JN_EOVERFLOW), no
 * TLS on a listener with requireSsl or requireEncryption (JN_EINVAL,
 * logged), ENOMEM. Any thread. */
jn_io_bridge_t *jn_io_bridge_open(jn_io_t *io, const char *listener, const char *peer,
                                  const jn_io_bridge_tls_t *tls, jn_io_bridge_notify_fn notify,
                                  void *ctx, int *err);

/* jn_io_bridge_push: the peer's next len octets (copied). Returns true
 * while the input has room, false when it is full (the octets are still
 * taken): stop reading the peer until notified. Octets pushed after the
 * connection ended are dropped. The owner's thread. */
bool jn_io_bridge_push(jn_io_bridge_t *b, const uint8_t *data, size_t len);

/* jn_io_bridge_has_room: the input is below its cap again. Owner's thread. */
bool jn_io_bridge_has_room(jn_io_bridge_t *b);

/* jn_io_bridge_input_pending: octets pushed and not yet taken by the
 * connection (may exceed JN_IO_BRIDGE_IN_CAP when the owner cannot stop
 * reading its peer). Owner's thread. */
size_t jn_io_bridge_input_pending(jn_io_bridge_t *b);

/* jn_io_bridge_pull: up to cap octets of output into buf; returns how many
 * (0: none now). *ended is set true once the connection is over and all
 * its output was pulled (the owner then closes its peer). The owner's
 * thread. */
size_t jn_io_bridge_pull(jn_io_bridge_t *b, uint8_t *buf, size_t cap, bool *ended);

/* jn_io_bridge_close: the peer is gone (or the owner closes it): the
 * connection's input ends (a connection not closed by AMQP is closed as a
 * socket's end of stream closes it), notify is not called after this
 * returns, and the caller's reference is dropped (b must not be used
 * again). The owner's thread. */
void jn_io_bridge_close(jn_io_bridge_t *b);

/* ---- tests and fuzzing only (router/io/io_test.c) ----------------------
 *
 * A connection without a socket, driven by the caller's thread through the
 * router's own pass (the loop's conn_pass: the engine's events, the core's
 * work, the core run inline), so that a test or a fuzzer can hand a router
 * the octets a peer would send. The I/O layer must have been created with
 * one worker thread and never started (jn_io_start): the test's thread
 * plays loop 0. The core is started (jn_core_start) as usual. Nothing here
 * is used by junctiond. */

typedef struct jn_io_conn jn_io_conn_t;

/* jn_io_test_conn_new: a socketless connection of the listener (incoming:
 * a server transport, as accepted) or the connector (outgoing: a client
 * transport, opened, as connected) named `endpoint`, added before with
 * jn_io_add_listener/jn_io_add_connector, on Junction's own AMQP engine
 * as an accepted or connected one. The caller holds a reference until
 * jn_io_test_conn_release. NULL when no such endpoint, when the engine
 * does not serve its configuration (as an accepted one is refused:
 * docs/engine.md, stage 5), or ENOMEM. Test thread. */
jn_io_conn_t *jn_io_test_conn_new(jn_io_t *io, const char *endpoint);

/* jn_io_test_conn_input: the next octets the peer sends (borrowed until
 * jn_io_test_conn_pending says they are all taken, or the connection
 * closed; octets of an earlier call not yet taken are dropped); data
 * NULL: no new octets, those not yet taken stay. end: the peer's input
 * ends after them. Wakes the connection. */
void jn_io_test_conn_input(jn_io_conn_t *conn, const uint8_t *data, size_t len, bool end);

/* jn_io_test_conn_pending: octets of the last input not yet taken by
 * the engine. */
size_t jn_io_test_conn_pending(const jn_io_conn_t *conn);

/* jn_io_test_conn_own: whether conn has Junction's own AMQP engine
 * attached (every connection has, since stage 5). Test thread. */
bool jn_io_test_conn_own(const jn_io_conn_t *conn);

/* jn_io_test_conn_closed: the transport closed (the router is done with
 * the connection's engine objects). */
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
