/*
 * junction/core.h — the router core and the two queues that connect it to the
 * I/O layer (docs/design.md, "Layers" and "Threads").
 *
 * The core thread owns every routing structure: addresses, links' routing
 * state, deliveries' routing state. The I/O layer never touches them; it
 * talks to the core only through this API:
 *
 *   worker -> core: the *_IO functions below. Each one posts an action on the
 *     core's multi-producer/single-consumer queue and returns at once. The
 *     core thread drains the queue in batches and sleeps only when it is
 *     empty (one wakeup per empty->non-empty transition).
 *
 *   core -> worker: work items (jn_work_t) on a per-connection queue. When a
 *     connection's queue goes from empty to non-empty the core calls
 *     ops->wake(io_conn) once (e.g. pn_connection_wake); the connection's I/O
 *     thread then takes all the work with jn_core_conn_take_work_IO and
 *     carries it out before writing, so many deliveries leave in one write.
 *
 * Shared objects and their lifetimes:
 *   jn_core_conn_t, jn_core_link_t: allocated by the I/O thread when the
 *     connection opens / the link attaches (so it can use the pointer at once:
 *     the queue keeps actions in order), initialised by the core thread when
 *     it takes the action. Their io context pointer (the I/O layer's own
 *     object) is immutable after the allocating call. Everything else in them
 *     is the core's. The core keeps them until it has processed the
 *     closed/detached action, then tells the I/O layer it no longer refers to
 *     the io context (ops->conn_released, JN_WORK_LINK_RELEASED); the I/O layer
 *     must keep its own object alive until then.
 *   jn_delivery_t: one transfer on one link, refcounted (atomic). An incoming
 *     delivery is created by the I/O thread that receives it; outgoing copies
 *     are created by the core. Its fields are grouped by owner in
 *     router/core/delivery.h; outside router/core only the accessors below are
 *     used.
 *
 * Naming: functions ending in _IO run on the I/O thread that currently owns
 * the connection concerned; _CT on the core thread only; the rest anywhere
 * (said in each comment).
 */
#ifndef JUNCTION_CORE_H
#define JUNCTION_CORE_H 1

#include <junction/message.h>
#include <junction/queue.h>

typedef struct jn_core jn_core_t;
typedef struct jn_core_conn jn_core_conn_t;
typedef struct jn_core_link jn_core_link_t;
typedef struct jn_delivery jn_delivery_t;

/* ---- configuration ------------------------------------------------------ */

/* Distribution of an address (qdrouterd's names). */
typedef enum jn_distribution {
    JN_DIST_MULTICAST = 0,
    JN_DIST_CLOSEST,
    JN_DIST_BALANCED,
    JN_DIST_UNAVAILABLE /* no traffic: senders get no credit, attaches fail */
} jn_distribution_t;

/* What the I/O layer provides to the core. Both callbacks run on the core
 * thread and must not block. */
typedef struct jn_core_io_ops {
    /* wake: io_conn's work queue went from empty to non-empty; make its I/O
     * thread call jn_core_conn_take_work_IO soon (pn_connection_wake). */
    void (*wake)(void *io_conn);
    /* conn_released: the core will never refer to io_conn again (no more
     * wake, no more work); the I/O layer may free it. */
    void (*conn_released)(void *io_conn);
    /* colocate (optional, NULL: never called): io_a and io_b, two open
     * connections, exchange most of their deliveries with each other
     * (each is the other's source or destination of at least 3 in 4 of
     * its last JN_CORE_AFFINITY_WINDOW deliveries routed between two
     * client or router connections); the I/O layer may move one to the
     * other's thread. Called again each window while it stays so. Both
     * are valid for the call (the core has not released them). */
    void (*colocate)(void *io_a, void *io_b);
} jn_core_io_ops_t;

/* Deliveries per connection between two looks at its affinity (see
 * jn_core_io_ops_t.colocate). */
#define JN_CORE_AFFINITY_WINDOW 1024u

typedef struct jn_core_config {
    const char *router_id;           /* copied; e.g. "Junction" (NULL: "Junction") */
    jn_distribution_t default_distribution; /* router.defaultDistribution */
    /* router.mode interior: run the mesh (junction/mesh.h) with these
     * timers in seconds (0 = the 1.19 defaults, docs/protocol.md "Timers"). */
    bool interior;
    /* router.mode edge (docs/design.md, "Edge routers"): no mesh; the
     * first open connection of a connector with role edge is the uplink */
    bool edge;
    uint32_t hello_interval, hello_max_age, ra_interval, ra_interval_flux, remote_ls_max_age;
    /* router.allowResumableLinkRoute false: a link-routed attach whose
     * client terminus may be resumed (jn_link_info_t.resumable) is refused */
    bool deny_resumable_link_routes;
    /* qdrouterd's -T/--test-hooks: the streaming link scrubber runs every
     * 5 s and keeps 2 idle links per connection (not 30 s and 128;
     * router/core/stream.c) */
    bool test_hooks;
} jn_core_config_t;

/* jn_core_create: a core that is not running yet. cfg and ops are copied.
 * Also calls jn_iter_configure("0", router_id, cfg->edge), so that the
 * address hash view knows this router. Returns NULL on ENOMEM, or when ops
 * lacks a callback or the default distribution is out of range. Main
 * thread, before other threads use iterators. */
jn_core_t *jn_core_create(const jn_core_config_t *cfg, const jn_core_io_ops_t *ops);

/* jn_core_add_address_config: an `address` entity: prefix (when pattern is
 * false: matches the address itself and anything starting with prefix
 * followed by '.' or '/', longest prefix wins) or pattern (tokens separated
 * by '.' or '/', '*' = one token, '#' = zero or more; a prefix beats a
 * pattern of the same length as qdrouterd) with its distribution; a '.'
 * or '/' ending the text is dropped ("a." is "a", as 1.19 reads it).
 * Ties between equally specific matches, and the exact rule, are in
 * router/core/address_config.h. Mobile addresses only; the distribution is
 * decided when an address is first attached to.
 * Returns 0, JN_EEXIST (same prefix/pattern twice), JN_EINVAL (NULL,
 * empty or only-separator text, bad distribution, or the core already
 * started), JN_ENOMEM. Main thread before jn_core_start. */
int jn_core_add_address_config(jn_core_t *core, const char *prefix_or_pattern, bool pattern,
                               jn_distribution_t distribution);

/* jn_core_set_address_backpressure: the `address` entity added last (by
 * jn_core_add_address_config, which must have returned 0 just before) has
 * multicastBackpressure set to on: when its distribution is multicast, a
 * consumer whose backlog is full holds the senders back (each copy waits
 * for credit, as in qdrouterd 1.19) instead of missing copies
 * (docs/multicast.md). Returns 0, or JN_EINVAL when no entry was added or
 * the core already started. Main thread before jn_core_start. */
int jn_core_set_address_backpressure(jn_core_t *core, bool on);

/* jn_core_next_identity: take the next number of the one counter that
 * link identities (router.link) and the identities of router.config.*
 * entities (address, linkRoute, autoLink, exchange, binding) share, as
 * 1.19 numbers them all from one counter: a linkRoute made at start-up
 * is 1, 2, ...; an autoLink created once links exist gets a number past
 * theirs (system_tests_link_routes test_aaa_qdmanage_query_link_route).
 * Returns a number > 0, never the same twice. Core thread, or the main
 * thread before jn_core_start (config file load). */
uint64_t jn_core_next_identity(jn_core_t *core);

/* jn_core_start: start the core thread. Returns 0 or JN_ENOMEM. Main thread. */
int jn_core_start(jn_core_t *core);

/* jn_core_inline_thread_begin: mark the calling thread as one that runs
 * the core inline (an I/O loop thread): its jn_core_post calls never wake
 * the core thread, so it must call jn_core_run_inline after posting and
 * before it blocks. Call once, at the thread's start. */
void jn_core_inline_thread_begin(void);

/* jn_core_run_inline: carry out the core's pending actions on the calling
 * thread (which becomes the core thread for the time: its structures,
 * JN_ASSERT_CT), unless another thread is doing so already — that thread
 * then also carries out what the caller posted. Runs at most a bounded
 * number of batches (router/core/core.c). Returns true when actions are
 * left for a further call (the caller should call again without
 * sleeping), false when the queue is empty or another thread holds the
 * core. Threads marked with jn_core_inline_thread_begin, after
 * jn_core_start and before jn_core_stop. */
bool jn_core_run_inline(jn_core_t *core);

/* jn_core_stop: stop and join the core thread. Every connection must have
 * been reported closed first (the I/O layer is stopped): the core processes
 * those closes (calling ops->conn_released) before it stops. A no-op when
 * not started or already stopped. Main thread. */
void jn_core_stop(jn_core_t *core);

/* jn_core_free: free a stopped (or never started) core; stops it first if
 * needed. Actions still queued are carried out on the calling thread, and a
 * connection never reported closed is closed (ops->conn_released is called
 * for it, with a warning), so nothing leaks. NULL is ignored. Main thread. */
void jn_core_free(jn_core_t *core);

/* ---- connections -------------------------------------------------------- */

typedef struct jn_conn_info {
    uint64_t conn_id;          /* the router's connection number (logs: [C12]) */
    const char *container_id;  /* the peer's container id (copied) */
    const char *host;          /* "127.0.0.1:40312" (copied) */
    bool incoming;             /* accepted by a listener (vs. a connector) */
    bool strip_inbound;        /* ignore router annotations from this peer */
    bool strip_outbound;       /* send only user annotations to this peer */
    uint32_t link_capacity;    /* the listener/connector's linkCapacity */
    /* role inter-router (docs/protocol.md, "The mesh"): router annotations honoured
     * both ways whatever strip_* say; cost is the effective cost, max of
     * ours and the peer's qd.inter-router-cost (2.2), >= 1. */
    bool inter_router;
    uint32_t cost;
    /* the peer's open properties as management shows them: an AMQP-encoded
     * map with string keys (io renders other keys and values that JSON
     * cannot carry as strings), or NULL/0 when it sent none (copied) */
    const uint8_t *properties;
    size_t properties_len;
    /* security, as the connection entity shows it (isEncrypted, sslProto,
     * sslCipher, sslSsf, isAuthenticated, user, sasl): strings copied, NULL
     * when none (not TLS; no SASL mechanism); user is the transport's, as
     * 1.19 shows it ("anonymous" for ANONYMOUS or a peer without SASL) */
    bool encrypted;
    const char *ssl_proto;  /* "TLSv1.3" */
    const char *ssl_cipher; /* OpenSSL's name: "TLS_AES_256_GCM_SHA384" */
    uint32_t ssl_ssf;       /* the cipher's strength in bits */
    bool authenticated;     /* a SASL mechanism other than ANONYMOUS succeeded */
    const char *user;
    const char *sasl_mechanism;
    /* the listener's or connector's entity name (copied; NULL: none): a
     * link route's or auto-link's `connection` names it */
    const char *endpoint_name;
    bool route_container; /* role route-container */
    /* role edge on an interior's listener (docs/protocol.md, "Edge
     * routers"): router annotations honoured both ways whatever strip_*
     * say; the peer's edge links are recognised (jn_link_type_t) */
    bool edge;
    /* a vhost policy's rights (1.19's allowDynamicLinkRoutes and
     * allowAdminStatusUpdate of the connection's user group) turned off:
     * management requests arriving on this connection may not create
     * router.connection.linkRoute, nor set another connection's
     * adminStatus. false (the default) when no policy governs it. */
    bool deny_dynamic_link_routes, deny_admin_status_update;
    /* a listener with multiTenant: the Open's hostname, the vhost whose
     * tenant space "<vhost>/" the connection's mobile addresses live in
     * (docs/design.md, "Tenant spaces"); it must pass
     * jn_core_tenant_vhost_usable. NULL or "": no space (copied). */
    const char *tenant_vhost;
    /* the peer's open offered the capability qd.streaming-links (as a
     * symbol or in an array): balanced copies toward it may take a
     * streaming link (router/core/stream.c) */
    bool streaming_links;
} jn_conn_info_t;

/* JN_CORE_TENANT_VHOST_MAX: the longest hostname that names a tenant
 * space, in octets (a DNS name's limit). */
#define JN_CORE_TENANT_VHOST_MAX 255

/* jn_core_tenant_vhost_usable: whether vhost (NUL-terminated, not NULL)
 * can name a tenant space: not empty, at most JN_CORE_TENANT_VHOST_MAX
 * octets, and "<vhost>/<address>" reads back as the mobile address in that
 * space (no scheme, no host part, no leading _local/, _topo/ or _edge/
 * segment that would move the tenant's addresses out of it). Pure; any
 * thread, after jn_core_create (router/core/tenant.c). */
bool jn_core_tenant_vhost_usable(const char *vhost);

/* jn_core_conn_opened_IO: an AMQP connection is open. Allocates the core's
 * connection object (io_conn is the I/O layer's object, immutable) and posts
 * the action. Returns NULL on ENOMEM (the caller closes the connection with
 * amqp:resource-limit-exceeded). */
jn_core_conn_t *jn_core_conn_opened_IO(jn_core_t *core, void *io_conn, const jn_conn_info_t *info);

/* jn_core_conn_tenant: conn's tenant space, "<vhost>/" (jn_conn_info_t.
 * tenant_vhost), or NULL. Immutable: valid while conn is (until
 * ops->conn_released); any thread. */
const char *jn_core_conn_tenant(const jn_core_conn_t *conn);

/* jn_core_conn_closed_IO: the connection is gone (closed or failed). Every
 * link on it counts as detached; unsettled deliveries it was sending to are
 * released to their senders. The core later calls ops->conn_released. After
 * this call the I/O layer must not use conn again, nor its links (no
 * jn_core_link_detached_IO for them: they need none). A second call is
 * ignored. Deliveries the I/O layer still holds references to may still be
 * passed to jn_core_delivery_continued_IO / _update_IO (to abort or settle
 * them): the core ignores what no longer applies. */
void jn_core_conn_closed_IO(jn_core_conn_t *conn);

/* ---- links -------------------------------------------------------------- */

/* Direction, from the router's point of view. */
typedef enum jn_link_dir {
    JN_LINK_INCOMING = 0, /* the peer sends messages to the router (its sender) */
    JN_LINK_OUTGOING      /* the router sends messages to the peer (its receiver) */
} jn_link_dir_t;

/* What a link carries (docs/protocol.md, "Inter-router connections"). */
typedef enum jn_link_type {
    JN_LINK_ENDPOINT = 0, /* a client's link, routed by its terminus address */
    JN_LINK_CONTROL,      /* inter-router control (qd.router) */
    JN_LINK_DATA,         /* inter-router data (qd.router-data) */
    /* Links an edge router attaches on its edge connection to an interior
     * (docs/protocol.md, "Edge routers"); recognised only on a connection
     * of a listener with role edge: */
    JN_LINK_EDGE_DOWNLINK, /* outgoing, source capability qd.router-edge-downlink:
                            * the edge's H<edge-id> destination */
    JN_LINK_EDGE_TRACKING, /* outgoing, source _$qd.edge_addr_tracking: the
                            * router reports [key, has-destinations] on it */
    JN_LINK_EDGE_HEARTBEAT, /* incoming, target _$qd.edge_heartbeat (right
                             * after _TRACKING: forward.c classifies the four
                             * served kinds _TRACKING.._REPLY at once) */
    JN_LINK_EDGE_LOOKUP,    /* incoming, target _$qd.addr_lookup: link-route
                             * lookups (mesh-protocol 11); on an edge router,
                             * its own sender to it */
    JN_LINK_EDGE_REPLY,     /* an edge router's own receiver with a dynamic
                             * source: the answers to its lookups and
                             * management requests */
    /* On an edge router, links it attaches itself on its uplink
     * (JN_WORK_LINK_ATTACH with attach.edge; local): the anonymous sender
     * that carries all traffic up, and its per-address links (a receiver
     * per address with local consumers, a sender per address with local
     * producers). The downlink and tracking receivers use the types above. */
    JN_LINK_EDGE_UPLINK,
    JN_LINK_EDGE_ADDR,
    JN_LINK_EDGE_MGMT /* an edge router's own sender to the interior's
                       * $management (link-route proxies) */
} jn_link_type_t;

typedef struct jn_link_info {
    jn_link_dir_t dir;
    const char *name;     /* link name (copied) */
    /* incoming: the target address; outgoing: the source address. NULL or ""
     * on an incoming link = anonymous relay (route by each message's `to`).
     * Copied. */
    const char *address;
    bool dynamic;          /* the source (outgoing) or target (incoming) asks for a
                            * dynamic address, AMQP 1.0 section 3.5.4 */
    bool presettled;       /* the sender's snd-settle-mode is settled */
    uint32_t capacity;     /* incoming: the most credit to keep outstanding */
    /* Inter-router links (docs/protocol.md, "Inter-router connections"): the terminus capability
     * qd.router (control) or qd.router-data (data). priority: a data link's
     * priority 0..9 by attach order per direction (3.3), -1 beyond the
     * first ten (extra/streaming data links). local: the router attached
     * it itself (the connector side's 22 links): the core's LINK_OPEN for
     * it is then a no-op for the I/O layer. */
    jn_link_type_t type;
    int priority;
    bool local;
    /* Endpoint links the peer attached: its source and target as the I/O
     * layer encodes them (opaque to the core; copied), so that a link
     * route can attach the same termini to the container
     * (router/io/io_own_termini.c); NULL/0: none. */
    const uint8_t *termini;
    size_t termini_len;
    /* A link the router attached for a JN_WORK_LINK_ATTACH: the item's
     * attach.ref (the core's; NULL otherwise). */
    void *attach_ref;
    /* outgoing: the source has the qd.fallback capability: the receiver
     * is a fallback destination of the address (docs/protocol.md, "Link routes,
     * auto-links and phases on the wire"); incoming, on an edge connection
     * only (the core ignores it elsewhere): the target has it, the sender
     * feeds the address's fallback phase (an edge router's proxy for its
     * senders, as 1.19; an edge's own such link: attach.fallback) */
    bool fallback;
    /* the client's terminus (a sender's target, a receiver's source) has
     * the capability qd.waypoint (1) or qd.waypoint.<n> (n, 1..9): a
     * waypoint's link, bound to phase n (incoming) or n - 1 (outgoing)
     * whatever the address's configured phases, as 1.19; 0: none */
    uint8_t waypoint;
    /* the client's terminus (a sender's target, a receiver's source) asks
     * to outlive the link: expiry-policy never, or a timeout > 0 (AMQP
     * 1.0 3.5.3); see jn_core_config_t.deny_resumable_link_routes */
    bool resumable;
    /* incoming: the peer's target is a transaction coordinator (AMQP 1.0
     * 4.5.1); address is then JN_COORDINATOR_ADDRESS, the name a link
     * route names it by (router/core/coordinator.c) */
    bool coordinator;
} jn_link_info_t;

/* The address a coordinator target is routed by: a link route whose
 * prefix or pattern matches it carries transactions to a broker. */
#define JN_COORDINATOR_ADDRESS "$coordinator"

/* jn_core_link_attached_IO: the peer attached a link on conn. Allocates the
 * core's link object (io_link immutable) and posts the action. The core
 * answers with JN_WORK_LINK_OPEN (attach our end; for a dynamic source, with
 * the address it made) or JN_WORK_LINK_CLOSE (refuse, with an error). Returns
 * NULL on ENOMEM. */
jn_core_link_t *jn_core_link_attached_IO(jn_core_conn_t *conn, void *io_link,
                                         const jn_link_info_t *info);

/* jn_core_link_detached_IO: the peer detached (or closed) the link, or it
 * went with its session. Unsettled deliveries sent on an outgoing link are
 * released to their senders; deliveries still waiting for its credit are
 * re-routed to another consumer of the address, or released. The core
 * answers with JN_WORK_LINK_RELEASED (the last work item about the link);
 * the I/O layer must keep io_link alive until then and must not use link
 * after this call (work items taken later still name it: that is fine). A
 * second call is ignored. Deliveries on it may still be updated, as after
 * jn_core_conn_closed_IO. */
void jn_core_link_detached_IO(jn_core_link_t *link);

/* jn_core_link_flow_IO: on an outgoing link, the peer's flow changed.
 * credit_limit is the total number of deliveries the peer allows the router
 * to have sent on this link since it attached: the deliveries the I/O layer
 * has sent on it so far (including credit consumed by pn_link_drained) plus
 * pn_link_credit() (below 2^63). The core, which counts the deliveries it
 * has handed to the link, may hand over (credit_limit - handed) more;
 * stating the limit rather than the credit keeps the count right while
 * sends are in flight. drain is the peer's drain flag. Posts the action; calls made while one
 * is queued only update it (the core reads the latest). Incoming links
 * ignore it. */
void jn_core_link_flow_IO(jn_core_link_t *link, uint64_t credit_limit, bool drain);

/* jn_core_link_peer_credit_IO: on an outgoing link, the peer's own credit
 * as a limit (as credit_limit above, but not cut by the I/O layer's cap),
 * shown by management as the link's creditAvailable (what the peer gave,
 * as 1.19 shows it). A relaxed store, no action: the core reads it when
 * asked. Thread: the I/O thread owning the link's connection. */
void jn_core_link_peer_credit_IO(jn_core_link_t *link, uint64_t peer_limit);

/* jn_core_link_drained_IO: on a link-routed incoming link, the sender
 * answered the drain the core passed to it (JN_WORK_LINK_CREDIT with
 * drain and credit 0): its flow advanced the delivery-count and left it
 * no credit, or its deliveries used the credit up (AMQP 1.0 2.6.7). The
 * deliveries it sent before the answer must have been passed to the core
 * first. The core then answers the drain of the receiver at the link
 * route's other end. Shares the flow mailbox (one action at most queued).
 * Thread: the I/O thread owning the link's connection. */
void jn_core_link_drained_IO(jn_core_link_t *link);

/* jn_core_link_answered_IO: the peer answered an attach the router made
 * for a JN_WORK_LINK_ATTACH (its attach arrived; a refusal's detach
 * follows it). Posts the action once. */
void jn_core_link_answered_IO(jn_core_link_t *link);

/* jn_core_link_answered_address_IO: as jn_core_link_answered_IO, and
 * gives the address the peer's answering attach named in the terminus it
 * answered for (the target of a link the router sends on, the source of
 * one it receives on; AMQP 1.0 2.7.3, 3.5.3, 3.5.4): address (borrowed,
 * copied; NULL or "" for none). The core binds an auto-link only when
 * there is one, as 1.19 does (a container that answers with no address
 * made no node for it), answers a dynamic link-routed client with it, and
 * an edge router's JN_LINK_EDGE_REPLY learns its reply address from it.
 * A second call is ignored. I/O thread of the link's connection. On
 * ENOMEM the address is lost and the core sees none. */
void jn_core_link_answered_address_IO(jn_core_link_t *link, const char *address);

/* jn_core_link_set_error_IO: the error condition and description
 * (either may be NULL) the peer's detach carried; call before
 * jn_core_link_detached_IO, which passes it on (a routed link's other end
 * is detached with it). Copied; out of memory loses it. Once per link. */
void jn_core_link_set_error_IO(jn_core_link_t *link, const char *condition,
                               const char *description);

/* jn_core_link_set_unclosed_IO: the peer's detach had closed=false (the
 * link may be resumed, AMQP 1.0 2.6.5); call before
 * jn_core_link_detached_IO, which passes it on: a link-routed link's other
 * end is detached the same way (JN_WORK_LINK_DETACH), not closed. No
 * allocation, no error. I/O thread of the link's connection. */
void jn_core_link_set_unclosed_IO(jn_core_link_t *link);

/* jn_core_link_termini: the termini given at attach (jn_link_info_t),
 * or NULL (*len 0). Immutable; any thread holding the link. */
const uint8_t *jn_core_link_termini(const jn_core_link_t *link, size_t *len);

/* jn_core_link_name: the link name given at attach. Immutable; any
 * thread holding the link. */
const char *jn_core_link_name(const jn_core_link_t *link);

/* jn_core_link_io: the io_link given at attach (immutable). Any thread. */
void *jn_core_link_io(const jn_core_link_t *link);

/* ---- deliveries --------------------------------------------------------- */

/* Delivery states (AMQP 1.0 part 3, 3.4) by descriptor code. */
enum {
    JN_DISP_NONE = 0,
    JN_DISP_RECEIVED = 0x23,
    JN_DISP_ACCEPTED = 0x24,
    JN_DISP_REJECTED = 0x25,
    JN_DISP_RELEASED = 0x26,
    JN_DISP_MODIFIED = 0x27
};

/* JN_DISP_RAW: a delivery state the router does not interpret and carries
 * as it came (AMQP 1.0 part 3, 3.4; 1.5 descriptors): one named by a
 * symbolic descriptor, which the numeric codes above cannot name. Its
 * whole encoding (descriptor and value) is extra->data. The engine reads
 * and writes it octet for octet. The
 * value is the ulong descriptor no type is given (all ones), so it names
 * no state that could arrive numbered; one that does arrive so is carried
 * raw too. */
#define JN_DISP_RAW UINT64_MAX

/* A disposition as it travels between links. Strings are owned by the
 * struct (freed with jn_disposition_clear). */
/* The rarer parts of a delivery state, kept apart so that the usual
 * dispositions (accepted, released) stay small on the hot path. */
typedef struct jn_disposition_extra {
    /* received (AMQP 1.0 part 3, 3.4.1): where the receiver got to */
    bool has_section;
    uint32_t section_number;
    uint64_t section_offset;
    /* Each one AMQP-encoded value (heap, owned; NULL/0 when absent):
     * rejected: the error's info map; modified: the message-annotations
     * map; any other state type: its value (what follows the descriptor);
     * JN_DISP_RAW: the whole state, descriptor included. Carried octet for
     * octet, so a state crosses any number of hops unchanged. */
    uint8_t *info;
    size_t info_len;
    uint8_t *annotations;
    size_t annotations_len;
    uint8_t *data;
    size_t data_len;
} jn_disposition_extra_t;

typedef struct jn_disposition {
    uint64_t type;             /* JN_DISP_*, or another state's descriptor code,
                                * or JN_DISP_RAW */
    char *condition;           /* rejected: error condition, or NULL */
    char *description;         /* rejected: error description, or NULL */
    bool delivery_failed;      /* modified */
    bool undeliverable_here;   /* modified */
    jn_disposition_extra_t *extra; /* the other fields (heap, owned), or NULL */
} jn_disposition_t;

/* jn_disposition_clear_owned: jn_disposition_clear's slow half, for a
 * disposition that owns strings or extra fields. Any thread. */
void jn_disposition_clear_owned(jn_disposition_t *d);

/* jn_disposition_clear: free the strings and extra fields (owned) and set
 * type to JN_DISP_NONE, the other fields zero. Any thread. Inline: it runs
 * several times per delivery (work items, updates, states), and most
 * dispositions own nothing. */
static inline void jn_disposition_clear(jn_disposition_t *d)
{
    if (__builtin_expect(d->condition || d->description || d->extra, 0)) {
        jn_disposition_clear_owned(d);
        return;
    }
    *d = (jn_disposition_t){.type = JN_DISP_NONE};
}

/* jn_disposition_copy_owned: jn_disposition_copy's slow half, for a
 * source that has strings or extra fields. Any thread. */
int jn_disposition_copy_owned(jn_disposition_t *dst, const jn_disposition_t *src);

/* jn_disposition_copy: deep copy of src (a delivery state, AMQP 1.0 part
 * 3, 3.4; borrowed) into dst (dst's old contents are not freed; the copy's
 * strings and extra fields are dst's own). Returns 0 or JN_ENOMEM (dst then
 * holds nothing). Any thread.
 * Inline: a delivery's outcome is copied twice on its way back (into the
 * update action, into the work item), and it almost never has anything
 * but its type to copy. */
static inline int jn_disposition_copy(jn_disposition_t *dst, const jn_disposition_t *src)
{
    if (__builtin_expect(src->condition || src->description || src->extra, 0))
        return jn_disposition_copy_owned(dst, src);
    *dst = (jn_disposition_t){.type = src->type,
                              .delivery_failed = src->delivery_failed,
                              .undeliverable_here = src->undeliverable_here};
    return 0;
}

/* jn_delivery_new_IO: a delivery arriving on incoming link, carrying
 * message (the reference passes to the delivery), settled as the sender
 * sent it, with its delivery tag (tag_len <= 32 octets, copied; a longer
 * tag is cut to 32). Refcount 1, held by the caller. Returns NULL on ENOMEM
 * (the message reference then stays with the caller). */
jn_delivery_t *jn_delivery_new_IO(jn_core_link_t *link, jn_message_t *message, bool settled,
                                  const void *tag, size_t tag_len);

/* jn_core_delivery_arrived_IO: the delivery's message is parsed as far as
 * routing needs (JN_DEPTH_PROPERTIES, see jn_message_parse); route it. The
 * core takes its own reference. A message that failed to parse is not
 * passed here: the I/O layer rejects it on its own delivery. Call once per
 * delivery, before any continued/update call for it. */
void jn_core_delivery_arrived_IO(jn_delivery_t *dlv);

/* jn_core_delivery_continued_IO: more octets of the (streaming) incoming
 * delivery's message were published, or it became complete or aborted. The
 * core tells every connection sending a copy (JN_WORK_DELIVERY_CONTINUE),
 * at most once per copy per core batch. Call at most once per received
 * batch, not per frame (a call while one is queued costs one atomic
 * exchange and posts nothing). */
void jn_core_delivery_continued_IO(jn_delivery_t *dlv);

/* jn_core_delivery_update_IO: the peer changed the delivery's state: its
 * outcome (disp, copied; may be JN_DISP_NONE, or disp NULL, when only
 * settled changed) and/or settled. On an outgoing copy (a consumer's
 * disposition) the core passes the outcome and settlement back to the
 * incoming delivery; on an incoming delivery (the sender settled) it
 * settles the copies; a state there without settled (the sender's, on a
 * later transfer frame of the delivery, AMQP 1.0 part 2, 2.7.5 `state`, or
 * in a disposition of its own, 2.7.6) goes to every copy: one not yet
 * handed out carries it on its first transfer instead of the first frame's
 * state, one handed out gets it as a JN_WORK_DELIVERY_UPDATE not settled.
 * Posts the delivery's own action, or, while that one is still posted, a
 * pooled one; aborts the process when memory for that is exhausted (a
 * lost settlement would leak deliveries at both ends). The I/O thread of
 * the delivery's link's connection. */
void jn_core_delivery_update_IO(jn_delivery_t *dlv, const jn_disposition_t *disp, bool settled);

/* Accessors, any thread holding a reference: */
jn_message_t *jn_delivery_message(const jn_delivery_t *dlv);      /* borrowed */
jn_core_link_t *jn_delivery_link(const jn_delivery_t *dlv);       /* immutable */
bool jn_delivery_presettled(const jn_delivery_t *dlv); /* sent settled (immutable) */
/* tag of an incoming delivery; outgoing copies get a fresh 8-octet tag */
const uint8_t *jn_delivery_tag(const jn_delivery_t *dlv, size_t *len);
jn_delivery_t *jn_delivery_ref(jn_delivery_t *dlv);
void jn_delivery_unref(jn_delivery_t *dlv);

/* Address classes of the residence-time histogram (/metrics,
 * junction_delivery_residence_seconds): by the first character of the
 * address key a delivery was routed by. */
enum {
    JN_RES_CLASS_OTHER = 0, /* link-routed, edge summaries, direct copies */
    JN_RES_CLASS_MOBILE,    /* M */
    JN_RES_CLASS_LOCAL,     /* L */
    JN_RES_CLASS_ROUTER,    /* R, T, A: topological */
    JN_RES_CLASSES
};

/* Router residence time (/metrics junction_delivery_residence_seconds,
 * docs/design.md "HTTP"): for each copy whose sending starts, the time
 * from the start of the I/O pass in which its delivery became routable
 * (read as far as its headers: the pass that read it, for all but large
 * messages) to the start of the pass that hands the copy to its outgoing
 * link, per JN_RES_CLASS_* of the address it was routed by (above).
 * The I/O layer counts it (jn_io_residence_read), /metrics shows it
 * (router/mgmt/metrics.c). Both ends are the clock reading each pass takes
 * anyway; the figure includes the outgoing connection's wait for its
 * pass, and leaves out the encoding and write that follow in that pass.
 * Fixed buckets: upper bounds jn_res_bounds_ns[0 ..
 * JN_RES_BUCKETS - 2] in ns, and the last bucket for the rest. */
#define JN_RES_BUCKETS 16
static const uint64_t jn_res_bounds_ns[JN_RES_BUCKETS - 1] = {
    10000,   25000,    50000,    100000,   250000,    500000,    1000000,   2500000,
    5000000, 10000000, 25000000, 50000000, 100000000, 250000000, 1000000000};

typedef struct jn_residence {
    uint64_t count[JN_RES_CLASSES][JN_RES_BUCKETS]; /* per bucket, not cumulative */
    uint64_t sum_ns[JN_RES_CLASSES];
} jn_residence_t;

/* jn_delivery_set_arrival_IO: ns (jn_time_mono_ns) is when the I/O pass
 * that read incoming delivery dlv began; its copies carry it, so the pass
 * that sends a copy knows how long the router held it. Only before the
 * delivery is posted (jn_core_delivery_arrived_IO). Not set (0): not
 * measured. The receiving link's I/O thread. */
void jn_delivery_set_arrival_IO(jn_delivery_t *dlv, uint64_t ns);

/* jn_delivery_residence_since: an outgoing copy's arrival time (as set on
 * its incoming delivery; 0: not measured) and, in *res_class, the
 * JN_RES_CLASS_* of the address it was routed by. Immutable once the copy
 * is handed out; any thread holding a reference. Hot path (one call per
 * copy sent): two loads. */
uint64_t jn_delivery_residence_since(const jn_delivery_t *dlv, unsigned *res_class);

/* jn_delivery_set_state_IO: the state the sender put on the delivery's
 * first transfer (AMQP 1.0 part 2, 2.7.5 `state`; any type, every field),
 * copied into dlv, which owns it. Only before the delivery is posted
 * (jn_core_delivery_arrived_IO); the core copies it into each outgoing
 * copy, which carries it on its own first transfer, so every receiver
 * sees it. Returns 0 or JN_ENOMEM (the delivery then goes without it).
 * The receiving link's I/O thread. */
int jn_delivery_set_state_IO(jn_delivery_t *dlv, const jn_disposition_t *state);

/* jn_delivery_set_later_state_IO: outgoing copy dlv, handed to its
 * connection (JN_WORK_DELIVERY_SEND) and waiting there for its first
 * transfer, is to carry state (copied; the one it had is freed) instead:
 * its sender put a later one on a later transfer frame (the core's
 * JN_WORK_DELIVERY_UPDATE not settled says so). Returns 0 or JN_ENOMEM (the
 * copy keeps its state). The I/O thread of the copy's link, which alone
 * reads the copy's state once it is handed out. */
int jn_delivery_set_later_state_IO(jn_delivery_t *dlv, const jn_disposition_t *state);

/* jn_delivery_state: the state set above (incoming) or copied (outgoing),
 * or NULL. Borrowed, valid while dlv is referenced. Once the delivery is
 * posted only the core thread changes it (a later state,
 * jn_core_delivery_update_IO), on an incoming delivery or a copy not yet
 * handed out; a copy handed out, only its link's I/O thread
 * (jn_delivery_set_later_state_IO), which alone reads it then. */
const jn_disposition_t *jn_delivery_state(const jn_delivery_t *dlv);

/* jn_delivery_to_override: for an outgoing copy toward another router,
 * the address to send as x-opt-qd.to when this router set it (the copy's
 * message came in on a link with a target address), else NULL (send the
 * received one, if any). Borrowed, valid while dlv is referenced.
 * Immutable; any thread holding a reference. */
const char *jn_delivery_to_override(const jn_delivery_t *dlv);

/* jn_delivery_rerouted: true for a copy an exchange made toward another
 * router (docs/design.md, "Exchanges and bindings"): its to-override is
 * the exchange's next hop and it starts a new trace (the copy may go back
 * the way the message came). Immutable; any thread holding a reference. */
bool jn_delivery_rerouted(const jn_delivery_t *dlv);

/* jn_delivery_phase: for a copy with a to-override, the address phase to
 * send with it (x-opt-qd.phase, docs/protocol.md, "Router annotations"; 0: none): the phase
 * its incoming link's address has (a waypoint's, an auto-link's).
 * Immutable; any thread holding a reference. */
int jn_delivery_phase(const jn_delivery_t *dlv);

/* jn_delivery_io / jn_delivery_set_io: the I/O layer's per-delivery context
 * (e.g. its pn_delivery_t). Owned by the I/O thread of the delivery's link's
 * connection; the core never reads it. */
void *jn_delivery_io(const jn_delivery_t *dlv);
void jn_delivery_set_io(jn_delivery_t *dlv, void *io);

/* ---- work (core -> connection) ------------------------------------------ */

typedef enum jn_work_type {
    /* open our end of a link the peer attached: address is the terminus
     * address to set (for a dynamic source: the address made for it). */
    JN_WORK_LINK_OPEN,
    /* close the link with error condition/description (may be NULL). */
    JN_WORK_LINK_CLOSE,
    /* the core no longer refers to the link's io_link: free it. */
    JN_WORK_LINK_RELEASED,
    /* incoming link: grant `credit` more credit (pn_link_flow); with drain
     * set, withdraw the credit instead: the address has no destination any
     * more, so the sender is drained (credit 0, drain flag) and gets new
     * credit only with a later LINK_CREDIT; drain with credit 1: credit 0
     * without the drain flag (an auto-link's broker, linkroute.c). */
    JN_WORK_LINK_CREDIT,
    /* outgoing link: the link's drain request has been satisfied: advance
     * the delivery count and send the flow (pn_link_drained). */
    JN_WORK_LINK_DRAINED,
    /* outgoing link: start sending dlv (an outgoing copy; its message may
     * still be arriving: send what is there, more comes with CONTINUE). */
    JN_WORK_DELIVERY_SEND,
    /* outgoing copy: more of its message arrived, or it completed/aborted. */
    JN_WORK_DELIVERY_CONTINUE,
    /* apply disp and/or settled to dlv (an incoming delivery: the outcome
     * from the consumer; an outgoing copy: the sender settled). */
    JN_WORK_DELIVERY_UPDATE,
    /* close the connection with error condition/description (may be NULL);
     * with `abort` set, close the transport at once rather than wait for
     * the peer's close (a peer that is not heard: its close would never
     * come). */
    JN_WORK_CONN_CLOSE,
    /* attach a new link on this connection (link routes, auto-links;
     * router/core/linkroute.c): attach.dir from the router's view,
     * attach.name, `address` for the terminus at the far end (the target
     * of an outgoing link, the source of an incoming one),
     * attach.presettled for the sender's settle mode; `link`, when set, is
     * the link whose termini (jn_core_link_termini) to copy, address
     * replaced (a dynamic terminus keeps none: `address` becomes its node
     * properties' x-opt-qd.address, the address it is link-routed by).
     * Report it with jn_core_link_attached_IO (info.local,
     * info.attach_ref = attach.ref), and its peer's answer with
     * jn_core_link_answered_IO. */
    JN_WORK_LINK_ATTACH,
    /* as LINK_CLOSE, but detach our end without closing it (closed=false):
     * a link-routed link whose other end was detached so (AMQP 1.0 2.6.5,
     * link resumption passes across link routes). */
    JN_WORK_LINK_DETACH
} jn_work_type_t;

/* jn_work_t.attach.stream */
enum { JN_STREAM_ATTACH_DATA = 1, JN_STREAM_ATTACH_ANONYMOUS = 2 };

/* One work item. Owned by the queue until taken, then by the taker, who
 * frees it with jn_work_free. */
typedef struct jn_work {
    jn_mpsc_node_t node;      /* queue link (private) */
    jn_work_type_t type;
    /* private to router/core: where the item lives (0: its own pool
     * object; else inside the delivery it is about, which jn_work_free
     * and jn_work_take_dlv give it back to) */
    uint8_t home;
    jn_core_link_t *link;     /* link work: a reference owned by the item;
                               * delivery work: the delivery's link (kept
                               * alive by dlv); jn_core_link_io(link) = io_link */
    jn_delivery_t *dlv;       /* delivery work: a reference owned by the item */
    uint32_t credit;          /* LINK_CREDIT */
    bool drain;               /* LINK_CREDIT */
    bool settled;             /* DELIVERY_UPDATE; on a DELIVERY_SEND that the
                               * I/O layer holds until the copies before it
                               * are sent: the sender settled meanwhile
                               * (io_own_link.c; false when queued) */
    bool abort;               /* CONN_CLOSE: at once, without the peer's close */
    bool forced;              /* CONN_CLOSE: once our close is written, read
                               * no more (management deleted it: the peer's
                               * close is not awaited) */
    /* LINK_OPEN, LINK_ATTACH: the link is link-routed: its deliveries pass
     * octet for octet, neither parsed nor given router annotations
     * (docs/design.md, "Link routes and auto-links") */
    bool passthrough;
    union {
        jn_disposition_t disp; /* DELIVERY_UPDATE */
        struct {               /* LINK_ATTACH (shares the space: no item grows) */
            jn_link_dir_t dir;
            bool presettled;
            char *name;        /* owned */
            void *ref;         /* the core's, for jn_link_info_t.attach_ref */
            uint8_t edge;      /* an edge router's uplink link: its
                                * jn_link_type_t (JN_LINK_EDGE_*; ref NULL),
                                * 0 otherwise */
            uint8_t waypoint;  /* edge: capability qd.waypoint.<n> on it
                                * (1..9; 0: none) */
            bool fallback;     /* edge: capability qd.fallback on it (a
                                * fallback destination's link, phase F) */
            uint8_t stream;    /* a streaming link (router/core/stream.c),
                                * outgoing, named qdlink.<15> by the I/O
                                * layer, reported with attach_ref = ref:
                                * JN_STREAM_ATTACH_DATA: a data link
                                * (capability qd.router-data), reported
                                * as JN_LINK_DATA with priority -1;
                                * _ANONYMOUS: a sender without target
                                * address (edge connections), reported
                                * as JN_LINK_ENDPOINT; 0: not one */
        } attach;
        /* CONN_CLOSE with abort: close only when nothing at all arrived
         * on the connection for this many ms (the I/O thread judges; it
         * logs and keeps a connection that was heard); 0: close anyway */
        uint32_t unheard_ms;
    };
    char *address;            /* LINK_OPEN (owned) */
    char *condition;          /* LINK_CLOSE, LINK_DETACH, CONN_CLOSE (owned, may be NULL) */
    char *description;        /* LINK_CLOSE, LINK_DETACH, CONN_CLOSE (owned, may be NULL) */
} jn_work_t;

/* jn_core_conn_take_work_IO: move up to max pending work items of conn to
 * out[], in the order the core queued them. Returns the number taken (0 when
 * none). Call until it returns fewer than max. */
size_t jn_core_conn_take_work_IO(jn_core_conn_t *conn, jn_work_t **out, size_t max);

/* jn_work_free: free an item and what it owns (drops its delivery
 * reference). Any thread. */
void jn_work_free(jn_work_t *work);

/* jn_work_take_dlv: free a delivery work item but keep its delivery
 * reference: returns it (owned by the caller from now on; NULL when the
 * item had none). Costs no reference count update, unlike
 * jn_delivery_ref + jn_work_free. Any thread. */
jn_delivery_t *jn_work_take_dlv(jn_work_t *work);

/* ---- in-process services and messages the router composes -------------- */

/* jn_core_request_fn: a request for the management agent arrived (a
 * message to `$management`, `_local/$management` or
 * `_topo/0/<this router>/$management`, from a normal connection or across
 * the mesh). request is complete, parsed to JN_DEPTH_ALL, borrowed for the
 * call. The agent answers, if at all, with jn_core_send_CT. The delivery
 * that carried it is accepted (unless pre-settled) right after. Core
 * thread; must not block for long (page big answers). */
typedef void (*jn_core_request_fn)(void *ctx, jn_core_t *core, jn_message_t *request);

/* jn_core_request_conn_CT: inside a jn_core_request_fn, the id of the
 * normal connection the request arrived on (router.connection.linkRoute
 * acts on it); 0 when it came across the mesh or from the router itself,
 * and outside a request. Core thread. */
uint64_t jn_core_request_conn_CT(jn_core_t *core);

/* jn_core_request_denied_CT: inside a jn_core_request_fn, whether the
 * vhost policy of the connection the request arrived on forbids
 * connection-scoped link routes (right 0) or updating another
 * connection's adminStatus (right 1): jn_conn_info_t.deny_*; a denial is
 * logged (POLICY, info) with the user, host and rule. False outside a
 * request and for requests from the mesh or the router. Core thread. */
bool jn_core_request_denied_CT(jn_core_t *core, int right);

/* jn_core_set_management: register the management agent (fn NULL: none;
 * requests are then released as to an address without consumers). Main
 * thread, before jn_core_start. */
void jn_core_set_management(jn_core_t *core, jn_core_request_fn fn, void *ctx);

/* jn_core_send_CT: route a message this router composed (e.g. a management
 * reply), pre-settled, by its properties.to, exactly as an anonymous
 * delivery from a local producer: to local consumers or across the mesh.
 * msg must be complete and parseable to JN_DEPTH_PROPERTIES; the reference
 * is taken over in every case. Returns 0 (sent, or dropped because nothing
 * consumes the address: a pre-settled message has no one to tell),
 * JN_EINVAL (no `to`, or malformed), JN_ENOMEM. Core thread (typically from
 * inside a jn_core_request_fn). */
int jn_core_send_CT(jn_core_t *core, jn_message_t *msg);

/* jn_core_call_fn: a function run in the core role (jn_core_call): core
 * is the router's core, arg the caller's. Runs on the core thread (or an
 * I/O loop holding the core token); may call any _CT function; must not
 * block for long (all routing waits for it). */
typedef void (*jn_core_call_fn)(void *arg, jn_core_t *core);

/* jn_core_call: run fn(arg, core) in the core role, after the actions
 * already queued: how a thread without the token (the main thread: start-up
 * configuration, SIGHUP reload) changes core state. Asynchronous: the
 * caller learns of completion through arg if it needs to. Runs once the
 * core is started; calls still queued at jn_core_free are run there (on
 * the main thread, in the core role). Returns 0, or JN_ENOMEM (nothing
 * queued). Any thread. */
int jn_core_call(jn_core_t *core, jn_core_call_fn fn, void *arg);

/* jn_core_router_id: this router's id (immutable, borrowed). Any thread. */
const char *jn_core_router_id(const jn_core_t *core);

/* ---- statistics (management, later) ------------------------------------- */

typedef struct jn_core_stats {
    uint64_t deliveries_ingress;   /* deliveries received from endpoints */
    uint64_t deliveries_egress;    /* copies sent to endpoints */
    uint64_t deliveries_released;  /* released: for lack of a consumer (or a
                                    * pre-settled one dropped), because the
                                    * consumer went, or by the consumer */
    uint64_t addresses;            /* addresses in the table */
    uint64_t links;                /* links known */
    uint64_t connections;          /* connections known */
    /* added by router/core: outcomes given by consumers (once per copy) */
    uint64_t deliveries_accepted;
    uint64_t deliveries_rejected;
    uint64_t deliveries_modified;
    uint64_t deliveries_presettled; /* of ingress: sent pre-settled */
    /* multicast copies not sent because their consumer's backlog was full
     * (docs/multicast.md), and pre-settled deliveries no consumer took
     * (router droppedPresettledDeliveries, as 1.19 counts them) */
    uint64_t deliveries_dropped;
    /* router deliveriesTransit: copies sent to other routers (not counted
     * in deliveries_egress, nor those received from them in ingress) */
    uint64_t deliveries_transit;
    /* of ingress / egress: on connections with role route-container */
    uint64_t deliveries_ingress_route_container;
    uint64_t deliveries_egress_route_container;
    /* deliveries sent to an address's fallback destination because the
     * primary had none (enableFallback) */
    uint64_t deliveries_fallback;
    /* unsettled deliveries the router settled (or saw settled) 1 to 10 s,
     * and more than 10 s, after they arrived (per batch clock: +-1 batch) */
    uint64_t deliveries_delayed_1sec;
    uint64_t deliveries_delayed_10sec;
    /* gauges, refreshed every second: unsettled deliveries held over 10 s
     * now (deliveriesStuck); client links that have had no credit and
     * sent nothing for 10 s (linksBlocked) */
    uint64_t deliveries_stuck;
    uint64_t links_blocked;
} jn_core_stats_t;

/* jn_core_get_stats: a snapshot (relaxed atomics). Any thread. */
void jn_core_get_stats(jn_core_t *core, jn_core_stats_t *out);

#endif /* JUNCTION_CORE_H */
