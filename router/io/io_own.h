/*
 * io_own.h — connections on Junction's own AMQP engine (docs/engine.md,
 * stage 2b(ii)), shared by io_own.c (which configurations it serves, the
 * connection: socket,
 * pass, open and close), io_own_link.c (links, deliveries sent, states and
 * the core's work), io_own_rx.c (deliveries received) and the files that hand such a connection over
 * (io_endpoint.c at accept, io_loop.c for its pass, io_conn.c when it is
 * freed). Nothing else in router/io sees these structs.
 *
 * Every connection keeps its jn_io_conn_t (loop, refcount, registry,
 * timers, socket); its stream runs through a jn_amqp_transport_t
 * (junction/amqp_transport.h), and its links are jn_io_own_link_t. A
 * delivery the router holds unsettled on an own link (incoming: the
 * peer's, until the router's outcome is settled or the peer settles;
 * outgoing: a copy, until the consumer or the sender settles) has no
 * record of its own: the engine's delivery's user pointer names the
 * core's delivery, whose io pointer names the engine's in turn, and the
 * glue holds one reference on the core's delivery for the pair
 * (jn_io_own_bind): while the delivery is being received or sent it is
 * the one the link holds for that (rx_dlv, tx_dlv), which passes to the
 * pair once the last frame is in or out; a link's end finds them through
 * the engine's tables (jn_amqp_link_users_clear). Everything here belongs
 * to the connection's loop thread.
 */
#ifndef JN_IO_OWN_H
#define JN_IO_OWN_H 1

#include "io_private.h"

#include <junction/amqp_delivery.h>
#include <junction/amqp_trace.h>
#include <junction/amqp_transport.h>
#include <junction/decoder.h>
#include <junction/encoder.h>

typedef struct jn_io_own jn_io_own_t;

/* Idle sessions of router-attached links kept per connection
 * (io_own_route.c). */
#define JN_IO_OWN_ROUTE_IDLE 8
typedef struct jn_io_own_link jn_io_own_link_t;
typedef struct jn_io_own_tx jn_io_own_tx_t;

/* One segment of an outgoing copy not yet framed: len octets at off in
 * buf's data (a reference held). */
typedef struct jn_io_own_seg {
    jn_buffer_t *buf;
    uint32_t off, len;
} jn_io_own_seg_t;

/* Segments of a copy held ahead of the engine at most (each at most one
 * buffer: 16 KiB of 512-octet buffers), handed to jn_amqp_delivery_send_runs at
 * once. */
#define JN_IO_OWN_TX_SEGS 32

/* A copy waiting on an outgoing link for the one being sent. */
struct jn_io_own_tx {
    jn_io_own_tx_t *next;
    jn_delivery_t *dlv; /* the work item's reference */
    bool settled;       /* the sender settled meanwhile */
};

/* One link on an own connection. */
struct jn_io_own_link {
    jn_io_own_link_t *prev, *next; /* the connection's list */
    jn_io_own_t *own;
    uint64_t id;          /* [L<id>] */
    jn_amqp_link_t *l;    /* the engine's, NULL once it freed it */
    jn_core_link_t *core; /* NULL once its detach was reported */
    bool incoming;        /* the peer sends (the router receives) */
    bool presettled;      /* the peer's snd-settle-mode settled (incoming) */
    bool released;        /* JN_WORK_LINK_RELEASED came */
    bool local;           /* the router attached it (io_own_route.c, io_own_mesh.c) */
    bool routed;          /* an auto-link's, a link route's far end's or an edge's
                           * reply link: the peer's answer names the address */
    bool streaming;       /* a streaming link (io_own_mesh.c): copies say so */
    bool passthrough;     /* link-routed: deliveries pass as they came (io_own_termini.c) */
    bool drain_passed;    /* incoming, link-routed: a drain passed to the sender,
                           * answered to the core once its credit is used up */
    /* link-routed: the engine's link whose peer detached, our answer held
     * for the far end's (jn_amqp_link_hold_detach), closed as the peer's */
    jn_amqp_link_t *held;
    bool held_closed;
    jn_amqp_session_t *route_ssn; /* local: its own session, NULL once ended */
    uint8_t *attach;      /* the peer's attach, encoded (owned), for our answer */
    /* the vhost policy (io_policy.c): counted in the group's
     * maxSenders/maxReceivers; a transfer denial logged; the per-message
     * checks (JN_IO_RX_CHECK_*: the user-id, an anonymous sender's targets,
     * a management request's reply-to; 0 on most links, one branch on the
     * receive path); an outgoing dynamic source's address (owned, NULL:
     * none), which a management request may name as its reply-to */
    bool policy_counted;
    bool policy_transfer_logged;
    uint8_t rx_checks;
    char *dynamic_address;
    size_t attach_len;
    /* incoming: the delivery being received (io_own_rx.c), from its first
     * frame (rx_d set) to its last: the message while octets still come
     * (our reference), the core's delivery once routed (a reference), the
     * outcome to settle with once the last octet is in */
    jn_amqp_delivery_t *rx_d;
    jn_message_t *rx_msg;
    jn_delivery_t *rx_dlv;
    jn_disposition_t rx_final;
    jn_disposition_t rx_state; /* the sender's, from a frame before routing */
    size_t rx_trimmed_at; /* message length at the last trim */
    bool rx_settled;      /* the peer settled it */
    bool rx_discard;      /* not routed, or no longer read: octets dropped */
    bool rx_settle_pending;
    bool rx_notify; /* octets for the core's copies since the last pass */
    bool rx_paused; /* copies behind by JN_IO_RX_HIGH_WATER: window held */
    /* incoming: holding (the budget and credit meter of io_private.h's
     * marks) and the listener's maxMessageSize */
    jn_rx_budget_t *budget;
    bool rx_stopped; /* over the budget: credit and window held */
    uint32_t credit_deferred;
    size_t rx_avg_size;
    uint64_t max_message_size;
    /* outgoing: credit used (deliveries begun, and credit drained) */
    uint64_t sent;
    /* outgoing: the credit limit told to the core, cut to a cap past sent
     * (tx_limit in io_own_link.c); the
     * octets of the last copy sent */
    uint64_t flow_cap, flow_sent;
    bool flow_capped;
    size_t tx_msg_size;
    /* outgoing: the copy being sent, its segments not yet framed (segs,
     * a ring of tx_nsegs from tx_seg_head, the first from tx_seg_off; each
     * holds a reference on its buffer of the message or of the composed
     * annotations: the engine references them in turn, nothing is
     * copied), and the copies waiting */
    jn_delivery_t *tx_dlv;
    jn_amqp_delivery_t *tx_d;
    bool tx_bound; /* tx_d is bound to tx_dlv (jn_io_own_bind): unsettled */
    jn_message_out_t tx_out;
    int tx_slot;
    bool tx_ended; /* tx_out produced all its octets */
    bool tx_settle_when_done;
    jn_io_own_seg_t segs[JN_IO_OWN_TX_SEGS];
    uint32_t tx_seg_head, tx_nsegs, tx_seg_off;
    size_t pend_len; /* octets in segs from tx_seg_off */
    jn_io_own_tx_t *txq, *txq_tail;
};

/* The own side of a connection. */
struct jn_io_own {
    jn_io_conn_t *conn;
    jn_amqp_transport_t *t;
    jn_io_own_link_t *links; /* every link not yet freed */
    uint64_t next_link_id;
    uint32_t session_window; /* our incoming window per session, frames */
    bool close_sent;         /* our close is in the output */
    bool cut;                /* end the transport once the output is out */
    bool aborted;            /* cut with no close frame: the output is dropped */
    bool refused_logged;
    bool rx_busy; /* a link has work for the pass's end (jn_io_own_rx_flush_IO) */
    bool tx_held; /* a copy waits for the output to fall under JN_IO_OWN_OUTPUT_LIMIT */
    unsigned n_sessions; /* the peer's sessions begun and not ended */
    /* sessions of links the router attached, kept for the next such link
     * once theirs is freed (io_own_route.c) */
    jn_amqp_session_t *route_idle[JN_IO_OWN_ROUTE_IDLE];
    unsigned n_route_idle;
    /* inter-router: data links the peer attached each way so far, their
     * order giving their priority (io_own_mesh.c) */
    uint32_t data_in, data_out;
    /* the protocol trace (io_own.c), each way, while conn->tracing;
     * trace_out_ahead: octets at the front of the output traced already
     * (our frames are traced as they go to the socket, not once taken) */
    jn_amqp_tracer_t trace_in, trace_out;
    size_t trace_out_ahead;
    /* the socket's error, "" while none (io_loop.c's conn_io_error): said
     * where the connection's end is reported (an auth service's) */
    char io_error[128];
};

/* jn_io_own_attach: give conn (new, not started) its own-engine side.
 * Returns 0 or JN_ENOMEM. The accepting thread, before jn_io_conn_start. */
int jn_io_own_attach(jn_io_conn_t *conn);

/* jn_io_own_attach_client: give conn (new, made by a connector, not
 * started) its own-engine side in the client role (5.3.1): our SASL
 * header, then our AMQP header and open (hostname host, borrowed; the SASL
 * client end offers the connector's saslMechanisms, saslUsername and
 * saslPassword) wait in its output for the connect. Returns 0 or
 * JN_ENOMEM. The connector thread, before jn_io_conn_start. */
int jn_io_own_attach_client(jn_io_conn_t *conn, const char *host);

/* jn_io_own_free: free conn's own side (its links, deliveries, transport
 * and buffers), if any. When conn is freed (any thread: nothing else
 * refers to it then). */
void jn_io_own_free(jn_io_conn_t *conn);

/* jn_io_own_pass_IO: one pass of conn on the own engine (io_loop.c's
 * conn_pass hands it here): read into pooled buffers, run the engine, the
 * core's work, the copies to send, the engine's clock, write. Returns true
 * when the socket may hold more (run again in the next pass). When the
 * transport ended, conn->transport_closed is set (the caller destroys it).
 * The loop's thread. */
bool jn_io_own_pass_IO(jn_io_loop_t *loop, jn_io_conn_t *conn);

/* jn_io_own_close_IO: close conn (on the own engine) with an error: our
 * close (AMQP 1.0 2.4.3, condition and description, copied; sent after our
 * open, or at once where the SASL or header exchange is not done) goes
 * into the output, and the transport ends once the output is written; the
 * peer is not waited for. Used by the initial handshake's timeout
 * (io_watch.c). The loop's thread. */
void jn_io_own_close_IO(jn_io_conn_t *conn, const char *condition, const char *description);

/* jn_io_own_io_error: conn's (an own connection's) socket failed (err, an
 * errno; what: "connecting to", "on read from"...): the first such error
 * is kept as own->io_error ("<strerror> - <what> <host>", proton's words)
 * and the transport ends. The connection's I/O thread, or the thread
 * starting it before any loop runs it (jn_io_conn_start). */
void jn_io_own_io_error(jn_io_conn_t *conn, int err, const char *what);

/* jn_io_own_note_IO: what ("TLS handshake") failed on conn (an own
 * connection) for why: kept as own->io_error ("<what> failed: <why>", as
 * 1.19 words its transport's condition) unless an error came
 * first. The connection's I/O thread. */
void jn_io_own_note_IO(jn_io_conn_t *conn, const char *what, const char *why);

/* jn_io_own_shut_IO: end conn (on the own engine) without an error: our
 * close goes into the output (an open first where none went; at once
 * where the SASL exchange is not done) and, with cut, the transport ends
 * once the output is written, the peer not waited for (the caller logged
 * why, if anything). An auth service's connection the relay lets go
 * (authsvc.c). The loop's thread. */
void jn_io_own_shut_IO(jn_io_conn_t *conn, bool cut);

/* jn_io_own_dynamic_address_IO: reply (NUL-terminated, a JN_VIEW_ADDRESS
 * copy) is the address the router made for a dynamic source of one of
 * conn's (an own connection's) receivers still attached (the vhost
 * policy's reply-to check, io_policy.c). The loop's thread. */
bool jn_io_own_dynamic_address_IO(const jn_io_conn_t *conn, const char *reply);

/* jn_io_own_sessions_IO: the sessions the peer of conn (an own connection)
 * began and has not ended (the vhost policy's close line). The loop's
 * thread. */
unsigned jn_io_own_sessions_IO(const jn_io_conn_t *conn);

/* io_own_link.c, the engine's link and delivery events and the core's
 * work on an own connection (the loop's thread): */
void jn_io_own_on_attach(void *ctx, jn_amqp_link_t *l, const jn_amqp_attach_t *a);
void jn_io_own_on_detach(void *ctx, jn_amqp_link_t *l, const jn_amqp_detach_t *d);
void jn_io_own_on_flow(void *ctx, jn_amqp_session_t *s, jn_amqp_link_t *l, const jn_amqp_flow_t *f);
void jn_io_own_on_transfer(void *ctx, jn_amqp_link_t *l, jn_amqp_delivery_t *d,
                           const jn_amqp_transfer_t *t, const jn_iter_t *payload);
void jn_io_own_on_disposition(void *ctx, jn_amqp_delivery_t *d, const jn_amqp_disposition_t *disp);

/* jn_io_own_link_new: a record for engine link l (its user from now on)
 * on own, incoming when the peer sends; NULL when memory runs out.
 * jn_io_own_link_free: unlink and free a record whose engine link and
 * deliveries are gone (its session, if the router began it, kept for the
 * next link, io_own_route.c). The loop's thread. */
jn_io_own_link_t *jn_io_own_link_new(jn_io_own_t *own, jn_amqp_link_t *l, bool incoming);
void jn_io_own_link_free(jn_io_own_link_t *link);

/* io_own_route.c, links the router attaches on an own connection (the
 * loop's thread):
 * jn_io_own_route_attach_IO: JN_WORK_LINK_ATTACH (w borrowed): an
 * auto-link's link, or a link route's far end (the client's termini),
 * attached on a session of its own, the core told (info.local); edge and
 * streaming links are not served (the core hears of a link detached with
 * amqp:not-implemented). jn_io_own_route_answered_IO: the peer's
 * attach a answering ours: the core told with the address it named.
 * jn_io_own_route_session_idle_IO: a local link's session s is free
 * (kept for the next, or ended). jn_io_own_route_session_gone_IO: the
 * peer ended s (forgotten). */
void jn_io_own_route_attach_IO(jn_io_own_t *own, jn_work_t *w);
void jn_io_own_route_answered_IO(jn_io_own_link_t *link, const jn_amqp_attach_t *a);
void jn_io_own_route_session_idle_IO(jn_io_own_t *own, jn_amqp_session_t *s);
void jn_io_own_route_session_gone_IO(jn_io_own_t *own, jn_amqp_session_t *s);

/* io_own_termini.c, the termini of link-routed links (the loop's thread):
 * jn_io_own_termini_encode: the peer's source and target in attach a
 * (views valid in the callback) in the core's encoding of termini, which
 * the core hands to a link route's far end (jn_link_info_t.termini): *out
 * on the heap (the caller frees it), *len. Returns 0, JN_ENOMEM.
 * jn_io_own_termini_decode: that encoding (p, len: borrowed) into a's
 * source and target (present bits set for each one there), views of p,
 * a coordinator's encoding composed into enc (the caller's, freed after
 * a is used). Returns 0, JN_EPROTO (cut short: what was read is set),
 * JN_ENOMEM. jn_io_own_dnp_address: the address named by x-opt-qd.address
 * in t's dynamic node properties (heap, the caller frees it), or NULL.
 * jn_io_own_dnp_set_address: t's dynamic node properties with
 * x-opt-qd.address set to address (other pairs with a symbol or string key
 * kept), composed into enc (the caller's; t's view refers to it, so enc
 * takes nothing else while t is used). Returns 0 or JN_ENOMEM. */
int jn_io_own_termini_encode(const jn_amqp_attach_t *a, uint8_t **out, size_t *len);
int jn_io_own_termini_decode(const uint8_t *p, size_t len, jn_amqp_attach_t *a,
                             jn_encoder_t *enc);
char *jn_io_own_dnp_address(const jn_amqp_terminus_t *t);
int jn_io_own_dnp_set_address(jn_amqp_terminus_t *t, const char *address, jn_encoder_t *enc);
/* io_own_mesh.c, inter-router connections (the loop's thread, but for the
 * two helpers that touch no connection):
 * jn_io_own_mesh_open_IO: the peer's open o (container its container id;
 * its properties read by io_own_peer.c) fills info's streaming_links, on
 * an edge connection edge, on an inter-router connection inter_router and
 * cost; false when the peer has this router's id (our close sent, logged).
 * jn_io_own_mesh_attach_links_IO: the connector side, once open: 11
 * sessions, 2 control and 20 data links, the core told of each.
 * jn_io_own_mesh_classify_IO: the peer attached link (attach a): info's
 * type and priority (control and data links, by capability and order, on
 * any connection, the core refusing them where not inter-router; an edge
 * router's links by capability and address; the lookup and heartbeat
 * services on any other) and an endpoint's waypoint phase (qd.waypoint,
 * qd.waypoint.<n>) and fallback (a receiver's qd.fallback), as 1.19
 * reads them.
 * jn_io_own_mesh_link_ok: a's terminus at our end carries qd.router or
 * qd.router-data on an inter-router connection, or the downlink's or a
 * waypoint's capability on an edge connection (a router's link, not
 * judged by io_own_link.c's refusal).
 * jn_io_own_mesh_stream_attach: our attach of streaming link l (w's
 * attach.stream): 0 or the engine's error. jn_io_own_mesh_edge_attach:
 * the same for an edge router's uplink link (w's attach.edge).
 * jn_io_own_mesh_silent_IO: the pass's clock now (ms): the octets heard
 * noted; true when the silence watch (io_watch.c) says cut now.
 * jn_io_own_caps_first: the first symbol of an encoded symbol or array of
 * symbols enc is cap (the one 1.19 looks at). Any thread. */
bool jn_io_own_mesh_open_IO(jn_io_own_t *own, const jn_amqp_open_t *o, const char *container,
                            jn_conn_info_t *info);
void jn_io_own_mesh_attach_links_IO(jn_io_own_t *own);
void jn_io_own_mesh_classify_IO(jn_io_own_link_t *link, const jn_amqp_attach_t *a,
                                jn_link_info_t *info);
bool jn_io_own_mesh_link_ok(const jn_io_own_t *own, const jn_amqp_attach_t *a);
int jn_io_own_mesh_stream_attach(jn_amqp_link_t *l, const jn_work_t *w);
int jn_io_own_mesh_edge_attach(jn_amqp_link_t *l, const jn_work_t *w);
bool jn_io_own_mesh_silent_IO(jn_io_own_t *own, int64_t now);
bool jn_io_own_caps_first(const jn_iter_t *enc, const char *cap);

/* io_own_props.c and io_own_peer.c: a peer's open properties and
 * capabilities read, and our open's properties written, with the message
 * layer's decoder and encoder (AMQP 1.0 part 2, 2.7.1; docs/protocol.md,
 * "Open properties"). props and caps: raw views of one encoded value
 * (borrowed; empty: absent). Any thread unless named _IO (the
 * connection's loop).
 * jn_io_own_props_first: the first value of v decoded into *f by *d (d's
 * octets are v's); false when v is empty or that value is not well-formed
 * all through (a compound's every element decodes).
 * jn_io_own_props_render: props rendered for management (a map with
 * string keys, values JSON can carry, others as their text; the file's
 * comment) into *out (heap, the caller frees it) and *len. Returns 0,
 * JN_EPROTO (props is not a well-formed map: *out NULL) or JN_ENOMEM.
 * jn_io_own_open_properties: the properties map of conn's open (product,
 * version, qd.conn-id; on a router's connection qd.inter-router-cost
 * above 1 and qd.annotations-version; a listener's failoverUrls as
 * failover-server-list; the endpoint's openProperties) into *out (heap,
 * the caller's) and *len. Returns 0 or JN_ENOMEM (*out NULL).
 * jn_io_own_failover_read: the entries of props' failover-server-list
 * (a list of maps; at most cap, owned by the caller: free each field)
 * into add; *found false when props has no such list (a symbol key, a
 * list value). Returns the entries with a network-host.
 * jn_io_own_failover_take_IO: a connector's conn takes them (the
 * connector's list keeps its host and the one in use, then the peer's);
 * no list: nothing changes. Logged (SERVER). Incoming: nothing.
 * jn_io_own_props_cost: the peer's qd.inter-router-cost (an int above 0;
 * the last such; the search stops at a key that is not a symbol), else 0.
 * jn_io_own_props_version: the peer's qd.annotations-version (the first
 * int value of that symbol key) into *version; false when none.
 * jn_io_own_props_log_version_IO: the same logged (ROUTER debug, 1.19's
 * words).
 * jn_io_own_caps_streaming: caps (offered capabilities: a symbol or an
 * array of symbols) holds qd.streaming-links (mesh-protocol 2.2).
 * jn_io_own_link_name: a link name as 1.19 makes them, "qdlink." and 15
 * characters from [a-zA-Z0-9+_] (getrandom, else a clock-seeded
 * sequence), into out (NUL-terminated). */
bool jn_io_own_props_first(const jn_iter_t *v, jn_decoder_t *d, jn_field_t *f);
int jn_io_own_props_render(const jn_iter_t *props, uint8_t **out, size_t *len);
int jn_io_own_open_properties(const jn_io_conn_t *conn, uint8_t **out, size_t *len);
unsigned jn_io_own_failover_read(const jn_iter_t *props, jn_io_failover_url_t *add,
                                 unsigned cap, bool *found);
void jn_io_own_failover_take_IO(jn_io_conn_t *conn, const jn_iter_t *props);
uint32_t jn_io_own_props_cost(const jn_iter_t *props);
bool jn_io_own_props_version(const jn_iter_t *props, int32_t *version);
void jn_io_own_props_log_version_IO(jn_io_conn_t *conn, const jn_iter_t *props);
bool jn_io_own_caps_streaming(const jn_iter_t *caps);
void jn_io_own_link_name(char out[23]);

/* jn_io_own_session_gone_IO: session s ended: its links went with it
 * (the engine frees them without a detach): each counts as detached. */
void jn_io_own_session_gone_IO(jn_io_own_t *own, jn_amqp_session_t *s);

/* jn_io_own_work_IO: carry out one work item of the core on an own
 * connection; frees it (or keeps its delivery). */
void jn_io_own_work_IO(jn_io_own_t *own, jn_work_t *w);

/* jn_io_own_links_free: the transport ended, or the connection is freed:
 * every link's deliveries and copies are let go (the core releases what it
 * must on jn_core_conn_closed_IO, and hears of no link again) and the
 * links freed. The loop's thread, or the thread freeing the connection. */
void jn_io_own_links_free(jn_io_own_t *own);

/* The glue's hold on a delivery unsettled on an own link (the top of this
 * file), shared by io_own_link.c, io_own_rx.c and io_own_attach.c (the
 * loop's thread). Inline: two per unsettled message, one each way (hot
 * path); each is a pointer set on either side and the reference.
 * jn_io_own_bind: bind the engine's d and the core's dlv (a reference,
 * taken over, or the one the link holds while d is being received or
 * sent, passed on at its end): d's user pointer names dlv and dlv's io
 * pointer names d until jn_io_own_unbind, jn_io_own_forget or
 * jn_io_own_settle. Never fails.
 * jn_io_own_forget: d (bound to dlv) no longer is: both pointers cleared;
 * the reference is the link's still (d is being received or sent), which
 * drops it. jn_io_own_unbind: the same, once the reference is the pair's:
 * it is dropped. Either is for a d that is, or is about to be, freed by
 * the engine, or no longer followed (a copy the engine refused).
 * jn_io_own_settle: our disposition of d (bound to dlv) with settle (state
 * may be NULL; AMQP 1.0 2.7.6), once unbound: the engine frees a whole
 * delivery it settles. */
static inline void jn_io_own_bind(jn_amqp_delivery_t *d, jn_delivery_t *dlv)
{
    jn_amqp_delivery_set_user(d, dlv);
    jn_delivery_set_io(dlv, d);
}

static inline void jn_io_own_forget(jn_amqp_delivery_t *d, jn_delivery_t *dlv)
{
    jn_amqp_delivery_set_user(d, NULL);
    jn_delivery_set_io(dlv, NULL);
}

static inline void jn_io_own_unbind(jn_amqp_delivery_t *d, jn_delivery_t *dlv)
{
    jn_io_own_forget(d, dlv);
    jn_delivery_unref(dlv);
}

static inline void jn_io_own_settle(jn_amqp_delivery_t *d, jn_delivery_t *dlv,
                                    const jn_amqp_state_t *state)
{
    jn_amqp_delivery_set_user(d, NULL);
    jn_delivery_set_io(dlv, NULL);
    (void)jn_amqp_delivery_update(d, state, true);
    jn_delivery_unref(dlv);
}

/* Shared by io_own_link.c and io_own_rx.c (the loop's thread):
 * jn_io_own_state_out: the core's state d as the engine's st, every field
 * (io_own_state.c): st borrows d's strings and octets, and *heap (NULL, or
 * octets st refers to that the caller frees after using st); false when
 * the state does not go (none, a transaction's, out of memory). For
 * accepted and released only code, symbolic and present are set: the
 * engine reads nothing else of a state without fields.
 * jn_io_own_state_in: the engine's st (views valid in the callback only)
 * as the core's d, every field copied to the heap (jn_disposition_clear
 * frees them), one named by a symbolic descriptor as JN_DISP_RAW (its
 * encoding); false, d as none, for one the core does not carry
 * (descriptor 0, out of memory). jn_io_own_state_known: whether
 * the code is one of the five states of 3.4. */
bool jn_io_own_state_out(const jn_disposition_t *d, jn_amqp_state_t *st, uint8_t **heap);
bool jn_io_own_state_in(const jn_amqp_state_t *st, jn_disposition_t *d);
bool jn_io_own_state_known(uint64_t code);

/* io_own_rx.c, the receive side of an own link (the loop's thread, but
 * for jn_io_own_rx_gone below):
 * jn_io_own_rx_init_IO: a new incoming link: its budget (left unbounded
 * when out of memory) and maxMessageSize. jn_io_own_rx_gone: the link
 * is going: the delivery being received ends (its copies are aborted),
 * the budget is let go; idempotent (also on the thread freeing the
 * connection, as jn_io_own_links_free). jn_io_own_rx_credit_IO: the core's
 * JN_WORK_LINK_CREDIT (metered: io_private.h, JN_IO_LINK_HIGH_WATER).
 * jn_io_own_rx_flow_IO: the peer's flow on an incoming link (credit held
 * back may go now). jn_io_own_rx_update_IO: the core's outcome (w, a
 * JN_WORK_DELIVERY_UPDATE) for the incoming delivery d of link, bound to
 * w->dlv.
 * jn_io_own_rx_flush_IO: the pass's end: the core told of new octets
 * (once per pass), paused and stopped links resumed when they may. */
void jn_io_own_rx_init_IO(jn_io_own_link_t *link);
void jn_io_own_rx_gone(jn_io_own_link_t *link);
void jn_io_own_rx_credit_IO(jn_io_own_link_t *link, uint32_t credit, bool drain);
void jn_io_own_rx_flow_IO(jn_io_own_link_t *link);
void jn_io_own_rx_update_IO(jn_io_own_link_t *link, jn_amqp_delivery_t *d, jn_work_t *w);
void jn_io_own_rx_flush_IO(jn_io_own_t *own);

/* jn_io_own_tx_resume_IO: send more of the copies in progress (after the
 * peer's flow opened its window, or the output fell under
 * JN_IO_OWN_OUTPUT_LIMIT). */
void jn_io_own_tx_resume_IO(jn_io_own_t *own);

/* jn_io_own_tx_abandon: the engine's link of an outgoing link is gone:
 * drop the copy in progress (its message's stream slot given back) and
 * the copies queued, each delivery's reference released; the core hears
 * of them with the detach. The connection's loop thread (io_own_attach.c). */
void jn_io_own_tx_abandon(jn_io_own_link_t *link);

/* jn_io_own_trace_in_IO / _out_IO / _out_done_IO: the protocol trace
 * (while own->trace_in.on / trace_out.on) of octets that do not pass
 * own_read and own_write (TLS, the WebSocket bridge: io_own_plain.c): n
 * octets read at p (borrowed); the output's k runs about to be taken
 * (traced once, however often they are offered); n octets of them taken.
 * The connection's loop thread. */
void jn_io_own_trace_in_IO(jn_io_own_t *own, const uint8_t *p, size_t n);
void jn_io_own_trace_out_IO(jn_io_own_t *own, const struct iovec *iov, int k);
void jn_io_own_trace_out_done_IO(jn_io_own_t *own, size_t n);

/* ---- octets without a socket (io_own_plain.c, through io_plain.c) -------
 * The byte side of an own connection under TLS or on a WebSocket bridge.
 * All on the connection's loop thread. */

/* Runs of the output gathered per call of jn_io_own_plain_out_IO. */
#define JN_IO_OWN_PLAIN_IOV 64

/* jn_io_own_plain_in_space_IO: where the next octets may be written: *p and
 * the octets free there (borrowed from the transport's pooled buffers until
 * the next call on own). 0 when the transport takes no more input (ended,
 * or no buffer could be had: own->cut is then set). */
size_t jn_io_own_plain_in_space_IO(jn_io_own_t *own, uint8_t **p);

/* jn_io_own_plain_in_IO: n plaintext octets were written at p, the space
 * last given; run the engine over them at the pass's time. Returns false when
 * the transport takes no more (ended, refused the input, or out of
 * memory). */
bool jn_io_own_plain_in_IO(jn_io_own_t *own, const uint8_t *p, size_t n);

/* jn_io_own_plain_in_closed: the transport reads no more plaintext. */
bool jn_io_own_plain_in_closed(const jn_io_own_t *own);

/* jn_io_own_plain_in_end_IO: the peer ended its stream (TLS's
 * close_notify, the end of the socket's, the bridge's owner gone): the
 * transport ends. */
void jn_io_own_plain_in_end_IO(jn_io_own_t *own);

/* jn_io_own_plain_out_IO: the next octets to send: *p (borrowed until
 * jn_io_own_plain_out_done_IO), at most cap octets gathered into stage (the
 * caller's, cap octets) from the output's runs, or one run where it lies
 * when it is alone or at least cap long. Returns its length; 0 when the
 * output is empty. */
size_t jn_io_own_plain_out_IO(jn_io_own_t *own, uint8_t *stage, size_t cap, const uint8_t **p);

/* jn_io_own_plain_out_done_IO: n octets of the last given were taken
 * (encrypted, or moved to the bridge): drop them from the output. */
void jn_io_own_plain_out_done_IO(jn_io_own_t *own, size_t n);

/* jn_io_own_plain_out_drop_IO: nothing more can be sent (TLS failed, the
 * bridge's owner is gone): the output is dropped. */
void jn_io_own_plain_out_drop_IO(jn_io_own_t *own);

/* jn_io_own_output_empty: nothing of the engine's output is left to take
 * (io_own_plain.c; io_own.c's pass asks it too). */
bool jn_io_own_output_empty(jn_io_own_t *own);

/* jn_io_own_plain_out_closed: the engine will frame nothing more and all it
 * framed was encrypted: time for TLS's close_notify. */
bool jn_io_own_plain_out_closed(jn_io_own_t *own);

#endif /* JN_IO_OWN_H */
