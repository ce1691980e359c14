/*
 * io_fns.h — the functions router/io's files share, grouped by the file that
 * defines each. Included by io_private.h only (after the structures they
 * take); nothing outside router/io sees it.
 */
#ifndef JN_IO_FNS_H
#define JN_IO_FNS_H 1

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

/* The facts of a client's attach the vhost rules judge, from the own
 * engine's link (borrowed for the call): its [L<id>], incoming when the
 * client sends (address its target's; NULL: an anonymous sender), else its
 * source's address (dynamic: a dynamic source), and whether its terminus
 * claims a qd.waypoint capability (prefix) or qd.fallback (exact). */
typedef struct jn_io_vhost_attach {
    uint64_t link_id;
    bool incoming;
    const char *address;
    bool dynamic, waypoint, fallback;
} jn_io_vhost_attach_t;

/* jn_io_vhost_link_judge_IO: the rules of conn's user group for attach a,
 * a link the client attaches (docs/design.md "Policy"; io_own_attach.c
 * calls it): maxSenders/maxReceivers, the qd.waypoint and qd.fallback
 * capabilities, the sources/targets. NULL when allowed or no rules apply;
 * when rules applied and allowed, the link is counted in
 * conn->policy_senders/receivers (the caller marks it counted and later
 * calls jn_io_vhost_uncount_link_IO) and *max_message_size (incoming)
 * takes the group's maxMessageSize if it has one. Else the condition to
 * refuse it with (amqp:resource-limit-exceeded for a count limit, else
 * amqp:unauthorized-access), the denial logged once and counted in
 * linksDenied and the vhost's senderDenied/receiverDenied. Conn's loop. */
const char *jn_io_vhost_link_judge_IO(jn_io_conn_t *conn, const jn_io_vhost_attach_t *a,
                                      uint64_t *max_message_size);

/* jn_io_vhost_uncount_link_IO: a link counted by jn_io_vhost_link_judge_IO
 * (incoming: a sender) no longer counts. Conn's loop. */
void jn_io_vhost_uncount_link_IO(jn_io_conn_t *conn, bool incoming);

/* jn_io_vhost_relay_judge_IO: the target check of one message m (parsed
 * through its properties) received on link link_id, an anonymous sender of
 * conn, a connection under a vhost policy (docs/design.md "Policy"): true
 * when the user group's targets/targetPattern allow every address the core
 * could route it on (properties.to, and the to-override annotation when the
 * connection keeps inbound router annotations), or it has none. False (also
 * once the connection's rules are dropped as it closes): counted in the
 * vhost's senderDenied and logged once per link; the caller rejects the
 * delivery with amqp:unauthorized-access. An address too long to judge (1
 * KiB or more) or holding a NUL octet is denied. *logged is the link's "a
 * denial was logged" flag (set by the first denial logged). Conn's loop;
 * not on the path of links without the check. */
bool jn_io_vhost_relay_judge_IO(jn_io_conn_t *conn, uint64_t link_id, bool *logged,
                                const jn_message_t *m);

/* jn_io_vhost_names_management: whether address (a terminus address or a
 * message's, scheme and host allowed) names a management node: this
 * router's or another's, by any spelling the routers serve
 * (`$management` alone or as its last segment). Any thread. */
bool jn_io_vhost_names_management(const char *address);

/* jn_io_vhost_reply_judge_IO: the reply-to check of one message m (parsed
 * through its properties) received on link link_id of conn, a sender of a
 * connection under a vhost policy whose target is a management node
 * (to_management: JN_IO_RX_CHECK_REPLY),
 * or an anonymous sender (JN_IO_RX_CHECK_TARGET; only its messages to a
 * management node are checked): the router answers a request at its
 * reply-to, so the client's group must allow that address as a target, or
 * it must be one of the connection's own dynamic (reply) addresses
 * (docs/compat.md). True when allowed, or the message has no reply-to or is not
 * a request to a management node. False (also once the connection's rules
 * are dropped): counted in the vhost's senderDenied and logged once per
 * link (*logged as for jn_io_vhost_relay_judge_IO); the caller rejects
 * the delivery with amqp:unauthorized-access. Conn's loop; not on the
 * path of links without the check. */
bool jn_io_vhost_reply_judge_IO(jn_io_conn_t *conn, uint64_t link_id, bool *logged,
                                bool to_management, const jn_message_t *m);
/* jn_io_vhost_same_address: address a (a terminus's, NULL: none) read as
 * the core routes on it (JN_VIEW_ADDRESS) is reply (NUL-terminated, read
 * so already). Any thread. */
bool jn_io_vhost_same_address(const char *a, const char *reply);

/* jn_io_vhost_session_denied_IO: conn's transport failed with condition and
 * description (either may be NULL); when the engine refused a Begin past
 * the channel-max the group's maxSessions set, count it in the vhost's
 * sessionDenied and log the denial once. Conn's loop. */
void jn_io_vhost_session_denied_IO(jn_io_conn_t *conn, const char *condition,
                                   const char *description);

/* jn_io_vhost_oversize_judge_IO: a message over the maxMessageSize (max
 * octets) of link link_id on conn: under a vhost, count it in the vhost's
 * maxMessageSizeDenied and log the denial (user, host, vhost, limit) and
 * return true; false (nothing done) when no vhost governs the connection.
 * Conn's loop (not the per-message path: once per oversize message). */
bool jn_io_vhost_oversize_judge_IO(jn_io_conn_t *conn, uint64_t link_id, uint64_t max);

/* jn_io_vhost_rights_IO: whether conn's user group turns off
 * allowDynamicLinkRoutes / allowAdminStatusUpdate (both false when no
 * vhost policy governs it). Conn's loop, after the Open. */
void jn_io_vhost_rights_IO(const jn_io_conn_t *conn, bool *deny_dynamic_link_routes,
                           bool *deny_admin_status_update);

/* jn_io_vhost_limits_IO: conn's user group's transport limits (applied
 * before our Open is written): *max_frame the maxFrameSize (at least 512;
 * 0: none), *channel_max maxSessions - 1 (at most 65535; -1: none). Conn's
 * loop. */
void jn_io_vhost_limits_IO(const jn_io_conn_t *conn, uint32_t *max_frame, int32_t *channel_max);

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

/* jn_io_vhost_uncount_locked: release conn's admission by the vhost
 * policy (jn_policy_release: out of its vhost's counts, its rules freed;
 * a no-op when it has none). Any thread, io->lock held (the policy's own
 * lock is taken inside it, never the other way round). */
void jn_io_vhost_uncount_locked(jn_io_t *io, jn_io_conn_t *conn);

/* jn_io_max_connections: the connection limit derived from the
 * file-descriptor limit. Any thread. */
size_t jn_io_max_connections(void);

/* io_timer.c: the one-shot timers (any thread arms; loop 0 fires) */
void jn_io_timer_arm(jn_io_t *io, jn_io_timer_t *timer, unsigned delay_ms);
void jn_io_timer_arm_at(jn_io_t *io, jn_io_timer_t *timer, int64_t deadline_ms);
void jn_io_timer_arm_at_locked(jn_io_t *io, jn_io_timer_t *timer, int64_t deadline_ms);
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
int jn_io_conn_start(jn_io_conn_t *conn, int fd);
void jn_io_conn_destroy_IO(jn_io_conn_t *conn);
bool jn_io_loop_work(jn_io_loop_t *loop);
void jn_io_conn_wake(jn_io_conn_t *conn);
size_t jn_io_loop_drain_exit(jn_io_loop_t *loop);
/* no loop can reach conn any more (its last reference is gone, or the
 * loops have ended): the calling thread acts as conn's loop (JN_ASSERT_IO)
 * until jn_io_adopt_end; returns what to give jn_io_adopt_end */
jn_io_loop_t *jn_io_adopt(jn_io_conn_t *conn);
void jn_io_adopt_end(jn_io_loop_t *was);

/* io_loop.c, for io_tls.c and io_bridge.c: the socket failed (the engine's
 * transport ends with the error, io_own.c). io_watch.c: the socket refused
 * output (start a write-stall period); a period or the initial handshake
 * deadline came due (now: ms, monotonic): judge it. The loop owning conn. */
void jn_io_conn_io_error_IO(jn_io_conn_t *conn, int err, const char *what);

/* jn_io_conn_connect_done_IO: conn's connect in progress (conn->connecting)
 * reported writable, readable or an error: done (conn->connecting false)
 * or the next address tried; none left, conn_io_error with the failure
 * (io_loop.c). The engine's pass. The connection's I/O thread. */
void jn_io_conn_connect_done_IO(jn_io_conn_t *conn);
void jn_io_stall_watch_IO(jn_io_conn_t *conn);
/* io_watch.c, the silence watch: a CONN_CLOSE with unheard_ms (a
 * neighbour's HELLOs aged out): true when conn was heard within the last
 * unheard_ms, so it stays open and is watched (cut once nothing arrives
 * for that long); false: close it now. Either way one line is logged.
 * jn_io_silence_expired_IO: the watch's deadline came (now: ms,
 * monotonic): true when conn is to be cut now (logged; the caller cuts it
 * with amqp:resource-limit-exceeded and JN_IO_SILENCE_DESC), false when it
 * was heard (watched on) or the deadline came late by our own stall. The
 * loop owning conn. */
#define JN_IO_SILENCE_DESC "nothing heard from the neighbour within helloMaxAgeSeconds"
bool jn_io_silence_judge_IO(jn_io_conn_t *conn, const jn_work_t *w);
bool jn_io_silence_expired_IO(jn_io_conn_t *conn, int64_t now);
/* jn_io_stall_judge_IO: a write-stall period of conn ended (now: ms,
 * monotonic); output_done says the engine has nothing left to write. True
 * when conn must be cut (*taken: the octets the socket took in the
 * period; the cut's description is JN_IO_STALL_FMT with taken and the
 * timeout in seconds); false when the watch stopped or went on. The
 * engine's pass (io_own.c). The loop owning conn. */
bool jn_io_stall_judge_IO(jn_io_conn_t *conn, int64_t now, bool output_done, uint64_t *taken);
#define JN_IO_STALL_FMT                                                                            \
    "write stalled: the peer took %" PRIu64 " octets in %" PRIu32                                  \
    " s with output waiting (router writeStallTimeoutSeconds)"
void jn_io_handshake_check_IO(jn_io_conn_t *conn, int64_t now);

/* io_plain.c: a connection's AMQP octets, in and out of its engine, for
 * the layers without a socket of their own (TLS, the WebSocket bridge,
 * the test hooks).
 * in_space: where the next octets may be written (*p, borrowed until the
 * next call; 0: no room now). in: n octets were written there; false when
 * the engine takes no more input. in_closed: it takes no more. in_end: the
 * peer's stream ended. out: the next octets to send (*p, borrowed until
 * out_done; at most cap gathered into stage, the caller's, when the engine
 * gives them in runs; 0: none). out_done: n of them were taken. out_drop:
 * nothing more can be sent: the output is dropped. out_pending: the engine
 * framed octets not taken yet (nothing gathered). out_closed: the engine
 * will frame nothing more and all it framed was taken. The connection's
 * loop thread. */
size_t jn_io_plain_in_space_IO(jn_io_conn_t *conn, uint8_t **p);
bool jn_io_plain_in_IO(jn_io_conn_t *conn, uint8_t *p, size_t n);
bool jn_io_plain_in_closed(jn_io_conn_t *conn);
void jn_io_plain_in_end_IO(jn_io_conn_t *conn);
size_t jn_io_plain_out_IO(jn_io_conn_t *conn, uint8_t *stage, size_t cap, const uint8_t **p);
void jn_io_plain_out_done_IO(jn_io_conn_t *conn, size_t n);
void jn_io_plain_out_drop_IO(jn_io_conn_t *conn);
bool jn_io_plain_out_pending(jn_io_conn_t *conn);
bool jn_io_plain_out_closed(jn_io_conn_t *conn);

/* io_tls.c (TLS on a connection; comments there) */
int jn_io_tls_attach(jn_io_conn_t *conn, jn_tls_profile_t *p, bool server, bool detect);
void jn_io_tls_free(jn_io_conn_t *conn);
bool jn_io_tls_read_IO(jn_io_conn_t *conn, bool *plain);
bool jn_io_tls_write_IO(jn_io_conn_t *conn);
void jn_io_tls_abandon_IO(jn_io_conn_t *conn);
bool jn_io_tls_pending_out(const jn_io_conn_t *conn);
bool jn_io_tls_failed(const jn_io_conn_t *conn);
bool jn_io_tls_info(const jn_io_conn_t *conn, const char **proto, const char **cipher, int *ssf);
const char *jn_io_tls_peer_uid(const jn_io_conn_t *conn);
/* io_bridge.c: the TLS a bridged connection's owner terminated (wss://):
 * true with its facts (borrowed, immutable while the connection lives;
 * *peer_uid NULL without a verified client certificate), false when it
 * has none. The connection's loop thread. */
bool jn_io_bridge_tls_info(const jn_io_conn_t *conn, const char **proto, const char **cipher,
                           int *ssf, const char **peer_uid);
/* authsvc.c: SASL relayed to an auth service (docs/design.md "The auth
 * service"; comments there) */
int jn_io_authsvc_prepare(jn_io_endpoint_t *ep, char *err, size_t errlen);
int jn_io_authsvc_attach(jn_io_conn_t *conn);
void jn_io_authsvc_forget(jn_io_conn_t *conn);
void jn_io_authsvc_client_closed_IO(jn_io_conn_t *client);
void jn_io_authsvc_timeout_IO(jn_io_conn_t *svc);
void jn_io_authsvc_stop_IO(jn_io_conn_t *svc);
/* io.c: the profile registered under name, with a reference for the
 * caller, or NULL. Any thread (takes io->lock). */
jn_tls_profile_t *jn_io_tls_profile_get(jn_io_t *io, const char *name);

/* io_test.c (tests and fuzzing only): a socketless connection's read and
 * write steps of its pass (jn_io_own_pass_IO in io_own.c); both go
 * through io_plain.c. */
void jn_io_test_read_IO(jn_io_conn_t *conn);
void jn_io_test_write_IO(jn_io_conn_t *conn);

/* io_bridge.c: a bridged connection's read and write steps of conn_pass,
 * and its end (the connection is destroyed: the owner is told). */
void jn_io_bridge_read_IO(jn_io_conn_t *conn);
void jn_io_bridge_write_IO(jn_io_conn_t *conn);
void jn_io_bridge_gone_IO(jn_io_conn_t *conn);

/* io_endpoint.c: listeners, connectors, accepting and connecting */
void jn_io_endpoint_free(jn_io_endpoint_t *ep);

/* jn_io_endpoint_release: drop a use of ep that its holder took under
 * jn_io_t.lock (ep->users++) after finding it: a removed endpoint nothing
 * uses any more is then freed by the next sweep. Any thread; takes the
 * lock. */
void jn_io_endpoint_release(jn_io_endpoint_t *ep);
int jn_io_listen(jn_io_t *io, jn_io_endpoint_t *ep);
void jn_io_connect(jn_io_endpoint_t *ep);
void *jn_io_connector_main(void *arg);
void jn_io_accept(jn_io_lsock_t *ls);
void jn_io_listener_close_locked(jn_io_t *io, jn_io_endpoint_t *ep);
void jn_io_connector_closed_IO(jn_io_endpoint_t *ep, jn_io_conn_t *conn, bool was_open);

/* io_conn.c: a connection's object, its references, its poll timer */
jn_io_conn_t *jn_io_conn_new(jn_io_t *io, jn_io_endpoint_t *ep, bool incoming);
void jn_io_conn_unref(jn_io_conn_t *conn);
bool jn_io_conn_tryref(jn_io_conn_t *conn);
void jn_io_conn_poll_later_IO(jn_io_conn_t *conn, bool progressed);
/* jn_io_tenant_IO (io_tenant.c): the vhost whose tenant space conn lives
 * in, into info->tenant_vhost: its Open's hostname (host, NUL-terminated,
 * NULL when absent; borrowed, the caller keeps it valid until the core has
 * the connection) when a listener with multiTenant accepted it (not of
 * role inter-router or edge); NULL when none (no hostname, another
 * listener). Returns false when the hostname cannot name a space (logged):
 * the caller closes conn with amqp:invalid-field, "the hostname cannot
 * name a tenant space" (JN_IO_TENANT_REFUSED), and returns. Once the Open
 * has arrived; conn's I/O thread. */
#define JN_IO_TENANT_REFUSED "the hostname cannot name a tenant space"
bool jn_io_tenant_IO(jn_io_conn_t *conn, const char *host, jn_conn_info_t *info);

/* jn_io_tenant_ra_IO (io_tenant.c): the router annotations to send to
 * conn, a connection in a tenant space (conn->tenant) that is sent router
 * annotations: ra itself, or, when its x-opt-qd.to is an address in conn's
 * space, *fresh: ra with that address as the client names it (the space
 * cut off), so the space is invisible to the client. ra (not NULL, with
 * has_to) and fresh are the caller's; the result is valid while both are.
 * conn's I/O thread, per copy sent to such a connection only. */
const jn_ra_t *jn_io_tenant_ra_IO(const jn_io_conn_t *conn, const jn_ra_t *ra, jn_ra_t *fresh);

/* jn_io_conn_transport_closed_IO: conn's transport ended (the own
 * engine's end, io_own.c, its links freed by the caller): its timers
 * cancelled, the core told (jn_core_conn_closed_IO), the
 * registry's counts and the vhost policy's updated; the loop destroys it
 * after this pass. The loop's thread of conn. */
void jn_io_conn_transport_closed_IO(jn_io_conn_t *conn);

/* Log prefix helpers: "[C12]" and "[C12][L3]". */
#define JN_IO_CONN_FMT "[C%" PRIu64 "]"
#define JN_IO_LINK_FMT "[C%" PRIu64 "][L%" PRIu64 "]"

/* jn_io_connector_note_IO: conn, if a connector's, opened (opened) or
 * failed: its connector's status and message (jn_io_connector_status)
 * become that, the message printf-style. The loop's thread of conn. */
void jn_io_connector_note_IO(jn_io_conn_t *conn, bool opened, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Failover lists (io_failover.c; the peer's list is read from its open
 * by io_own_peer.c). jn_io_failover_replace_locked: f's backups become
 * the one in use now (if a backup) followed by the n entries of add (taken
 * over: their strings become f's). Returns 0 or JN_ENOMEM (f unchanged,
 * add's strings freed). jn_io_t.lock held.
 * jn_io_failover_url_free: free u's strings and clear it. Any thread. */
int jn_io_failover_replace_locked(jn_io_failover_t *f, jn_io_failover_url_t *add, unsigned n);
void jn_io_failover_url_free(jn_io_failover_url_t *u);
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
    JN_ASSERT_IO(conn);
    unsigned gen = jn_log_conn_trace_gen();
    bool log_on = jn_log_enabled(JN_LOG_MOD_PROTOCOL, JN_LOG_TRACE);
    if (JN_UNLIKELY(gen != conn->trace_gen || log_on != conn->trace_log))
        jn_io_trace_update_IO(conn, gen, log_on);
}

#endif /* JN_IO_FNS_H */
