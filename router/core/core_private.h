/*
 * core_private.h — the router core's structures and its internal functions
 * (router/core only). The delivery struct is in delivery.h.
 *
 * Who owns what, in one picture (docs/design.md, "Layers" and "Threads"):
 *
 *   I/O threads --actions (jn_mpsc, core->actions)--> core thread
 *   core thread --work (jn_mpsc, conn->work)--------> the connection's I/O thread
 *
 * Actions are nodes embedded in the objects they are about (a connection's
 * open/close, a link's attach/detach/flow, a delivery's arrival/continue),
 * so posting them cannot fail; only a disposition update is a separate
 * pooled object (it carries a copy of the disposition).
 *
 * Reference counts (atomic) keep shared objects alive across threads:
 *   jn_core_conn_t: 1 "life" reference from jn_core_conn_opened_IO until the
 *     core has processed the close, plus 1 per link.
 *   jn_core_link_t: 1 "life" reference from jn_core_link_attached_IO until
 *     the core has processed the detach (or the connection's close), plus 1
 *     per delivery on the link, per link work item, per posted flow action,
 *     and while the link waits on the core's credit (dirty) list.
 *   jn_delivery_t: see delivery.h.
 *
 * Functions ending in _CT run on the core thread only; in debug builds they
 * check it at the top with JN_ASSERT_CT. After the core thread has been
 * joined, jn_core_free takes the core thread's role on the main thread to
 * tear down what is left (the check follows it there).
 */
#ifndef JN_CORE_PRIVATE_H
#define JN_CORE_PRIVATE_H 1

#include <junction/core.h>
#include <junction/hash.h>
#include <junction/log.h>
#include <junction/mesh.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>

#include "address_config.h"

/* Actions drained per batch. Credit and continue notices are coalesced per
 * batch, so a larger batch means fewer flow frames under load; it is bounded
 * so that the work of one batch reaches the connections soon. */
#define JN_CORE_BATCH 256

/* Default incoming-link capacity when neither the link nor its connection
 * says (the schema's linkCapacity default). */
#define JN_CORE_DEFAULT_CAPACITY 250

/* A multicast consumer is stuck when it takes no copy for JN_CORE_MC_STUCK_MS
 * while copies wait for it (checked every JN_CORE_MC_CHECK_MS while some
 * wait; forward.c, docs/multicast.md). */
#define JN_CORE_MC_CHECK_MS 250
#define JN_CORE_MC_STUCK_MS 1000
/* The router's deliveriesStuck and linksBlocked (as 1.19): an unsettled
 * delivery held, or a client link without credit, for JN_CORE_STUCK_MS;
 * looked at every JN_CORE_FIGURES_MS (jn_forward_figures_tick_CT). */
#define JN_CORE_STUCK_MS   10000
#define JN_CORE_FIGURES_MS 1000
/* A stuck multicast consumer's parked backlog keeps at most this many
 * message octets (besides at most its link capacity copies): parked copies
 * keep their messages' buffers, which count toward the sending link's
 * octet budget (2 MiB high-water mark, router/io), so a backlog of larger
 * messages must not fill it and pause the sender. A quarter of it. */
#define JN_CORE_MC_BACKLOG_OCTETS (512u * 1024)

/* JN_ASSERT_CT: the calling thread holds core's token: jn_ct_role_
 * (junction/common.h) is core (core.c: set on taking it, cleared on giving
 * it back; the teardown runs in the role on the main thread after the core
 * thread ended). Debug and sanitizer builds. */
#define JN_ASSERT_CT(core)                                                                         \
    JN_DEBUG_CHECK(jn_ct_role_ == (const void *)(core) &&                                          \
                   atomic_load_explicit(&(core)->running, memory_order_relaxed))
/* For _CT functions that are given no way to reach their core. */
#define JN_ASSERT_SOME_CT() JN_DEBUG_CHECK(jn_ct_role_ != NULL)

/* jn_core_self_CT: the core whose role the calling thread holds (borrowed),
 * or NULL in no core role (a unit test driving one module alone). For the
 * rare _CT function given no way to reach its core (a fallback address's
 * primary, link.c); only core threads hold a core's role, so the pointer
 * is a jn_core_t. */
static inline jn_core_t *jn_core_self_CT(void)
{
    return (jn_core_t *)(uintptr_t)jn_ct_role_;
}

/* ---- actions ------------------------------------------------------------ */

typedef enum jn_action_type {
    JN_ACT_CONN_OPENED = 1,
    JN_ACT_CONN_CLOSED,
    JN_ACT_LINK_ATTACHED,
    JN_ACT_LINK_DETACHED,
    JN_ACT_LINK_FLOW,
    JN_ACT_DLV_ARRIVED,
    JN_ACT_DLV_CONTINUED,
    JN_ACT_DLV_UPDATE,
    JN_ACT_CALL,          /* jn_core_call: run a function in the core role */
    JN_ACT_LINK_ANSWERED, /* jn_core_link_answered_IO */
    JN_ACT_STOP
} jn_action_type_t;

/* An action node, embedded in the object it is about. Owned by the core's
 * queue from the post until the core thread pops it; type is immutable. */
typedef struct jn_action {
    jn_mpsc_node_t node;
    uint8_t type; /* jn_action_type_t */
} jn_action_t;

#define JN_CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* A disposition update (jn_core_delivery_update_IO), from the action pool.
 * Written by the posting I/O thread, then owned by the core thread. */
typedef struct jn_update_action {
    jn_action_t base;
    jn_delivery_t *dlv;    /* reference owned by the action */
    jn_disposition_t disp; /* owned copy */
    bool settled;
} jn_update_action_t;

/* ---- addresses ---------------------------------------------------------- */

/* A doubly linked list of deliveries through their ct.prev/ct.next (core
 * thread only). */
typedef struct jn_dlv_list {
    jn_delivery_t *head;
    jn_delivery_t *tail;
    uint32_t count;
} jn_dlv_list_t;

/* An entry of the address table. Core thread only. Lives while some link
 * refers to it (as consumer or producer); freed with the last. */
/* Figures ticks settleRate averages over (1.19: five seconds). */
#define JN_CORE_SETTLE_TICKS 5

typedef struct jn_addr {
    uint8_t *key; /* the JN_VIEW_ADDRESS_HASH key (heap), e.g. "M0q1" */
    size_t key_len;
    jn_distribution_t distribution;
    jn_core_link_t **consumers; /* outgoing links (heap array) */
    uint32_t n_consumers, cap_consumers;
    jn_core_link_t **producers; /* incoming links with this target */
    uint32_t n_producers, cap_producers;
    uint32_t next; /* closest: next consumer; balanced: where ties start */
    /* The mesh (mesh_side.c): remote routers with a destination for it (from
     * their MAUs, or the router itself for its R<id> address). */
    jn_mesh_bits_t remote;
    uint32_t n_remote;
    /* of those, the routers with a route from here now (reachable): only
     * they count as destinations for credit (jn_addr_has_destination) */
    uint32_t n_reachable;
    uint32_t next_remote;         /* closest: where the round robin over remotes starts */
    bool advertised;              /* told the mesh this router has a local destination */
    bool permanent;               /* never freed while the core runs (R<id>, $management) */
    bool mc_backpressure;         /* multicast: a full consumer backlog holds the
                                   * senders back instead of dropping (forward.c) */
    bool fallback;                /* enableFallback: without a destination, its
                                   * deliveries go to the M F <address> one */
    int8_t priority;              /* the address entity's priority (0..9) for
                                   * the inter-router data link; -1: none */
    uint8_t inproc;               /* JN_INPROC_*: served inside the router */
    struct jn_exchange *exchange; /* JN_INPROC_EXCHANGE: the exchange bound
                                   * to it (exchange.c) */
    /* an edge router (edge.c): its receiver / sender for the address on
     * the uplink (requested or attached), and whether the interior said
     * the address has destinations beyond this edge (the sender is then
     * one of its consumers) */
    bool edge_in_asked, edge_out_asked, edge_dest_up;
    bool edge_reported; /* the interior reported on it (tracking) */
    jn_core_link_t *edge_in, *edge_out;
    /* management counters (router.address), forward.c: deliveries that
     * entered the mesh here (from a client), copies to local consumers
     * (egress) and to other routers (transit), deliveries served
     * in-process (to container) and composed by the router (from
     * container) */
    uint64_t ingress, egress, transit, to_container, from_container;
    uint64_t redirected; /* deliveries its fallback took (enableFallback) */
} jn_addr_t;

/* In-process destinations (jn_addr_t.inproc). */
enum { JN_INPROC_NONE = 0, JN_INPROC_MANAGEMENT, JN_INPROC_EXCHANGE };

/* A remote router known to the mesh (mesh_side.c). Core thread only. */
typedef struct jn_router_node {
    int index;     /* the mesh's router index (1..127) */
    char *id;      /* heap */
    char *node_id; /* "0/<id>" (heap), as in x-opt-qd.ingress/trace */
    int link;      /* inter-router connection slot when a neighbour, else -1 */
    int next_hop;  /* router index of the next hop, -1 for a neighbour */
    bool reachable;
    uint32_t cost;
    jn_mesh_bits_t valid_origins;
    jn_mesh_bits_t mc_origins; /* the sure ones, for multicast (mesh.h) */
    jn_addr_t *addr;   /* its R<id> address (permanent while the node lives) */
} jn_router_node_t;

/* ---- connections -------------------------------------------------------- */

struct jn_core_conn {
    /* Immutable after jn_core_conn_opened_IO. */
    jn_core_t *core;
    void *io_conn;
    uint64_t conn_id;
    char *container_id;  /* heap */
    char *host;          /* heap */
    uint8_t *properties; /* heap: encoded map (jn_conn_info_t), or NULL */
    size_t properties_len;
    /* security (jn_conn_info_t): heap strings or NULL */
    char *ssl_proto, *ssl_cipher, *user, *sasl_mechanism;
    uint32_t ssl_ssf;
    bool encrypted, authenticated;
    bool incoming;
    bool strip_inbound;
    bool strip_outbound;
    uint32_t link_capacity;
    bool inter_router;
    bool route_container; /* role route-container */
    bool edge;            /* role edge: an edge router's uplink (edge.c) */
    bool deny_dynamic_link_routes, deny_admin_status_update; /* jn_conn_info_t */
    bool router_peer;    /* inter_router || edge: deliveries to it carry the
                          * to-override of a targeted sender (delivery.c) */
    char *endpoint_name; /* its listener's or connector's name (heap), or NULL */
    /* its tenant space "<vhost>/" (heap), or NULL: a multiTenant listener's
     * connection whose Open named a host (tenant.c) */
    char *tenant;
    size_t tenant_len;
    bool internal;       /* the core's own origin of the messages it composes */
    uint32_t cost;       /* inter-router: effective cost */
    int64_t opened_us;   /* wall clock at jn_core_conn_opened_IO (uptimeSeconds) */

    /* Atomic. */
    atomic_uint refcount;
    atomic_bool close_posted;

    /* Work queue. Producer: the core thread. Consumer: the connection's I/O
     * thread (jn_core_conn_take_work_IO) until the core has processed the
     * close action, then the core thread (it frees what is left). */
    jn_mpsc_t work;

    /* Owned by the action queue while posted. */
    jn_action_t open_action;
    jn_action_t close_action;

    /* Core thread only. */
    struct {
        bool closed;        /* close processed: work is dropped */
        bool admin_deleted; /* closed by management (adminStatus deleted) */
        /* when a delivery last arrived on it or was handed to it (the
         * batch's monotonic clock, ns; 0: none yet): lastDlvSeconds */
        uint64_t last_dlv_ns;
        jn_core_link_t *links;       /* attached links (through link ct.conn_next) */
        jn_core_conn_t *prev, *next; /* the core's connection list */
        /* inter-router (mesh_side.c) */
        int slot;                               /* mesh link slot, -1 while none */
        jn_core_link_t *control_out;            /* outgoing control link */
        jn_core_link_t *data_out[10];           /* outgoing data links by priority */
        bool control_in;                        /* an incoming control link attached */
        uint32_t data_in_count, data_out_count; /* by arrival order (3.3) */
        /* edge connection (edge.c): the edge's tracking link, whether it
         * attached a heartbeat link and when one last arrived (mono ms) */
        jn_core_link_t *edge_tracking;
        bool edge_hb;
        int64_t edge_hb_ms;
        /* affinity (forward.c): the connection this one exchanges most
         * deliveries with, by a majority vote over each window of
         * JN_CORE_AFFINITY_WINDOW deliveries routed to or from it */
        struct {
            uint64_t cand;  /* conn_id of the vote's candidate, 0: none */
            uint32_t votes; /* the candidate's surplus over the others */
            uint32_t n;     /* votes cast in this window */
            uint64_t peer;  /* the last window's result: conn_id of the
                             * connection behind >= 3/4 of it, or 0 */
        } aff;
    } ct;
};

/* ---- links -------------------------------------------------------------- */

typedef enum jn_link_state {
    JN_LINK_ST_NEW = 0,  /* attach not processed yet */
    JN_LINK_ST_ATTACHED, /* routing */
    JN_LINK_ST_REFUSED,  /* LINK_CLOSE sent; waiting for the detach */
    JN_LINK_ST_ROUTING,  /* link-routed: waiting for the far end's attach
                          * (linkroute.c); no credit, no deliveries */
    JN_LINK_ST_DETACHED  /* detach processed; no more work for it */
} jn_link_state_t;

struct jn_core_link {
    /* Immutable after jn_core_link_attached_IO. */
    jn_core_conn_t *conn; /* reference held */
    void *io_link;
    jn_link_dir_t dir;
    bool dynamic;
    bool presettled;
    uint32_t capacity; /* incoming: the most credit outstanding (never 0);
                        * read by the core only, which sets an interior's
                        * lookup and heartbeat links' to 1 and 2 (edge.c) */
    char *name;        /* heap */
    char *address;     /* heap, NULL for none; an auto-link's is replaced by
                        * its router address when paired (linkroute.c), a
                        * dynamic target's set at attach (link.c) */
    jn_link_type_t type;
    int priority; /* data links: 0..9, -1 for extra ones */
    bool local;   /* attached by the router (connector side) */
    /* Atomic. flow: the I/O thread's latest (credit_limit << 1 | drain).
     * peer_limit: the peer's own credit as a limit (sent + its credit,
     * uncapped), for management's creditAvailable only. */
    atomic_uint refcount;
    atomic_uint_least64_t flow;
    atomic_uint_least64_t peer_limit;
    atomic_bool flow_posted;   /* flow_action is on the core's queue */
    atomic_bool detach_posted; /* jn_core_link_detached_IO was called */

    /* Owned by the action queue while posted. */
    jn_action_t attach_action;
    jn_action_t detach_action;
    jn_action_t flow_action;

    /* Core thread only. */
    struct {
        uint64_t id;                           /* [L<id>] in logs */
        uint8_t state;                         /* jn_link_state_t */
        bool anonymous;                        /* incoming, no target: route by each message */
        jn_addr_t *addr;                       /* target/source address (when attached) */
        uint32_t addr_index;                   /* index in addr->consumers or ->producers */
        char *dyn_address;                     /* dynamic source address made (heap) */
        jn_core_link_t *conn_prev, *conn_next; /* conn->ct.links */
        uint64_t deliveries;                   /* deliveries received / handed out */
        /* settled deliveries by outcome (jn_outcome_index): outgoing, as the
         * consumer settled them; incoming, as the sender's were settled */
        uint64_t outcomes[4];
        /* outgoing (the router sends) */
        uint64_t credit_limit; /* from the last flow (core.h semantics) */
        uint64_t handed;       /* deliveries handed to the I/O (+ drained) */
        bool drain;
        jn_dlv_list_t undelivered; /* copies waiting for credit, FIFO */
        jn_dlv_list_t inflight;    /* copies handed out, still tracked */
        /* a stuck multicast consumer (forward.c): drop mode (mc_dropping)
         * from when it took no copy for JN_CORE_MC_STUCK_MS while copies
         * waited (mc_check_handed, mc_idle_checks: the watch) until it
         * took some (handed moved past mc_drop_handed) and its backlog is
         * down to half; copies not made because its backlog was full, in
         * all and in this episode */
        uint64_t mc_dropped, mc_episode_dropped;
        uint64_t mc_check_handed, mc_drop_handed;
        uint64_t mc_parked_octets; /* message octets of its parked copies */
        uint32_t mc_idle_checks;
        bool mc_dropping;
        uint32_t unsettled;        /* of inflight: not settled */
        /* the most unsettled copies the link may hold (link.c, "Unsettled
         * bound"): its capacity, or UINT32_MAX on an inter-router or edge
         * connection; a link at it is handed nothing, as without credit */
        uint32_t unsettled_max;
        /* on core->ct.resume: it was at unsettled_max and a copy settled;
         * pumped at the end of the batch (jn_link_flush_resume_CT) */
        bool resume;
        jn_core_link_t *resume_next;
        /* linksBlocked (jn_forward_figures_tick_CT): since when (monotonic
         * ms, 0: not watched) the figures tick has seen this link without
         * credit and with no delivery since (blocked_handed: handed out,
         * or received on an incoming link) */
        int64_t blocked_since_ms;
        uint64_t blocked_handed;
        /* its unsettled deliveries over 10 s old, as the last figures
         * tick counted them (router.link deliveriesStuck): an outgoing
         * link's copies, an incoming link's deliveries its sender awaits */
        uint32_t stuck;
        /* settleRate: copies settled per second over the last five
         * figures ticks (one a second); the ring holds the settled count
         * at each of them */
        uint32_t settle_rate;
        uint8_t settle_pos;
        uint64_t settle_ring[JN_CORE_SETTLE_TICKS];
        uint64_t next_tag;
        /* incoming (the router receives) */
        uint32_t outstanding;  /* credit granted and not yet used */
        uint32_t held;         /* arrived, not yet handed to every consumer */
        uint32_t unsettled_in; /* arrived unsettled, not settled yet (either side) */
        /* of those, settled 1 to 10 s / over 10 s after they arrived
         * (router.link deliveriesDelayed1Sec / 10Sec) */
        uint64_t delayed1, delayed10;
        bool dirty;            /* on core->ct.dirty (credit to recompute) */
        jn_core_link_t *dirty_next;
        /* link routes (linkroute.c): the link at the other end of the
         * route (each end names the other until either detaches), and
         * the auto-link this link serves, or NULL */
        jn_core_link_t *routed;
        struct jn_autolink *autolink;
        /* a sender of an edge router (edge.c): what the tracking link last
         * said of its address: 0 nothing yet, 1 no destination, 2 some */
        uint8_t edge_reported;
        /* an edge's per-address uplink sender whose last local producer
         * went while copies still waited for the interior's credit: it is
         * closed once they are handed out (jn_link_pump_CT) */
        bool close_when_sent;
        /* a client's targeted sender whose address has no destination:
         * nodest_seen since the loss was first seen (with the deliveries
         * count then); a delivery after it drains the sender (link.c) */
        bool nodest_seen;
        uint64_t nodest_deliveries;
    } ct;

    /* Link routes, auto-links, phases (linkroute.c), apart from the hot
     * fields above. Immutable after jn_core_link_attached_IO: */
    uint8_t *termini; /* the peer's termini as io encodes them (heap), or NULL */
    size_t termini_len;
    void *attach_ref; /* jn_link_info_t.attach_ref (linkroute.c: a request id) */
    bool fallback;    /* outgoing: a fallback destination (qd.fallback) */
    uint8_t waypoint; /* jn_link_info_t.waypoint */
    bool resumable;   /* jn_link_info_t.resumable */
    bool coordinator; /* jn_link_info_t.coordinator (coordinator.c) */
    /* Set by the core when it binds the link to its address, before any
     * copy is made: the phase of its address when not 0 (waypoints,
     * auto-links), sent as x-opt-qd.phase with its deliveries'
     * to-override. */
    uint8_t phase;
    /* Written by the I/O thread before it posts the detach (the post
     * orders it), then read by the core: the peer's detach error. */
    char *detach_condition, *detach_description; /* heap, or NULL */
    bool detach_unclosed;                        /* that detach had closed=false */
    jn_action_t answer_action;                   /* JN_ACT_LINK_ANSWERED (holds a reference) */
    atomic_bool answer_posted;
    /* Written by the I/O thread before it posts the answer, then read by
     * the core: the dynamic source address the peer made (an edge router's
     * JN_LINK_EDGE_REPLY; heap, or NULL). */
    char *answer_address;
    /* Set by the core when it takes the attach of an endpoint link on a
     * connection with a tenant space whose address is mobile (tenant.c):
     * the address as the client named it (heap; the attach is answered
     * with it), address then being the one in the space. NULL otherwise. */
    char *client_address;
};

/* ---- the core ----------------------------------------------------------- */

struct jn_core {
    /* Immutable after jn_core_create. */
    char *router_id; /* heap */
    jn_distribution_t default_distribution;
    jn_core_io_ops_t ops;
    bool edge_mode; /* router.mode edge (edge.c) */
    bool deny_resumable_lr; /* jn_core_config_t.deny_resumable_link_routes */

    /* Written by the main thread before jn_core_start, then read by the
     * core thread only. */
    jn_addr_config_t config;

    /* Action queue: producers any thread, consumer the core thread. wake_fd
     * is an eventfd written by the producer whose push found the queue
     * empty, read (blocking) by the core thread when it has seen it empty.
     * awake (atomic; written by the core thread, read by producers) is
     * false only while the core is about to sleep or asleep: a producer
     * that finds it true skips the eventfd write (core.c). */
    jn_mpsc_t actions;
    int wake_fd;
    atomic_bool awake;
    jn_action_t stop_action;
    /* The core's token: true while some thread runs the core's actions
     * (the core thread, or an I/O loop thread running it inline,
     * jn_core_run_inline). Taken with an atomic exchange, given back with a
     * store, both seq_cst: a thread that finds it taken leaves its actions
     * to the holder, which looks at the queue again after it lets go
     * (core.c). */
    atomic_bool running;
    atomic_bool stop; /* the stop action was carried out */
    /* Some multicast copy may wait on a stuck consumer: watched every
     * JN_CORE_MC_CHECK_MS (forward.c). Written by the holder of the core
     * role, read also by the core thread deciding how long to sleep
     * (relaxed: a stale value costs one wake or one check late). */
    atomic_bool mc_waiting;
    /* The core's one-shot timer (jn_core_timer_at_CT): the monotonic time
     * in ms at which jn_lr_tick_CT is due, 0 for none. Written by the
     * holder of the core role, read by the core thread deciding how long
     * to sleep (relaxed, as mc_waiting). */
    atomic_llong timer_at_ms;

    /* Main thread only. */
    pthread_t thread;
    bool started;
    bool joined;

    /* The mesh (interior mode; NULL otherwise). Created with the core,
     * used by the core thread only. */
    jn_mesh_t *mesh;
    jn_core_request_fn mgmt_fn; /* set before start */
    void *mgmt_ctx;
    char *node_id;                 /* "0/<router id>" (mesh_side.c) */
    jn_core_conn_t *internal_conn; /* origin of composed messages (mesh_side.c) */
    jn_core_link_t *internal_link;

    /* Link routes and auto-links (linkroute.c): core thread only, except
     * the count, which the I/O layer may read (relaxed). */
    struct jn_lr_table *lr;
    /* Exchanges and bindings (exchange.c): core thread only. */
    struct jn_exchange *exchanges;

    /* Core thread only. */
    struct {
        jn_hash_t *addrs;                               /* hash key -> jn_addr_t */
        /* remote destinations of pattern link-route keys (E/F) in addrs:
         * when 0, an attach looks up no pattern of another router */
        uint32_t remote_lr_patterns;
        const jn_core_conn_t *request_from;             /* its connection, or NULL */
        uint64_t request_conn;                          /* the connection of the management request
                                                         * being answered (0: none, or across the
                                                         * mesh; mesh_side.c) */
        jn_router_node_t *routers[JN_MESH_MAX_ROUTERS]; /* by router index */
        jn_core_conn_t *slots[JN_MESH_MAX_LINKS];       /* inter-router conns by slot */
        int64_t next_tick_ms;                           /* when the mesh ticks next */
        int64_t last_flush_ms;                          /* when the mesh last acted on a change */
        bool flush_pending;    /* a change waits for JN_MESH_FLUSH_MS to pass */
        jn_core_conn_t *conns; /* open connections */
        jn_core_link_t *dirty; /* incoming links whose credit to recompute */
        jn_core_link_t *resume; /* outgoing links to pump (link.c) */
        uint64_t batch;        /* number of the batch being processed */
        uint64_t next_link_id;
        int64_t mc_next_check_ms; /* the stuck-consumer watch's next check */
        /* the figures tick's next run (monotonic ms), 0 before the first
         * connection (jn_forward_figures_tick_CT) */
        int64_t figures_at_ms;
        uint32_t edge_conns; /* open edge connections (edge.c) */
        uint32_t hb_links;   /* attached heartbeat senders, any connection (edge.c) */
        /* an edge router (edge.c): the active uplink and its anonymous
         * sender, the L_edge address that sender serves */
        jn_core_conn_t *uplink;
        jn_core_link_t *uplink_out;
        jn_core_link_t *edge_hb_out; /* its heartbeat sender */
        int64_t edge_next_hb_ms;
        int32_t edge_hb_count;
        jn_addr_t *edge_addr;
        uint64_t next_edge_link;
        /* its link-route lookup and management clients (edge_lookup.c) */
        struct jn_edge_clients *edge_clients;
        /* jn_time_mono_ns at the start of the current batch: the clock
         * the delayed-delivery figures read (one read per batch) */
        uint64_t batch_ns;
        bool stop;
    } ct;

    /* Statistics: written by the core thread (relaxed), read anywhere. */
    struct {
        atomic_uint_least64_t ingress, egress, released, accepted, rejected, modified, presettled,
            dropped, addresses, links, connections;
        /* transit: copies handed out on inter-router links (not in egress);
         * ingress_rc/egress_rc: of ingress/egress, on route-container
         * connections; fallback: deliveries sent to a fallback destination
         * for want of a primary one; delayed1/delayed10: incoming deliveries
         * settled 1..10 s / over 10 s after they arrived (docs/design.md,
         * "Router figures") */
        atomic_uint_least64_t transit, ingress_rc, egress_rc, fallback, delayed1, delayed10;
        /* gauges, as the last figures tick saw them: unsettled deliveries
         * held over JN_CORE_STUCK_MS, client links without credit that long */
        atomic_uint_least64_t stuck, links_blocked;
    } stats;
};

/* Add n to a statistic. Core thread only (single writer: a relaxed load and
 * store, no read-modify-write). */
static inline void jn_stat_add(atomic_uint_least64_t *s, int64_t n)
{
    uint64_t v = atomic_load_explicit(s, memory_order_relaxed);
    atomic_store_explicit(s, v + (uint64_t)n, memory_order_relaxed);
}

/* ---- core.c ------------------------------------------------------------- */

/* Post an action on the core's queue and wake the core thread when the
 * queue was empty. Any thread. */
void jn_core_post(jn_core_t *core, jn_action_t *action);

/* A multicast copy waits for credit: start watching for stuck consumers
 * (core->mc_waiting) if not yet, waking the core thread so that it sleeps
 * with the watch's timeout. Core thread. */
void jn_core_watch_mc_CT(jn_core_t *core);

/* Run jn_lr_tick_CT at monotonic time at_ms (jn_time_mono_ms) or soon
 * after, or earlier when already due earlier; wakes the core thread so
 * that it sleeps no longer than that. Core thread. */
void jn_core_timer_at_CT(jn_core_t *core, int64_t at_ms);

/* ---- conn.c ------------------------------------------------------------- */

void jn_conn_unref(jn_core_conn_t *conn);
void jn_conn_opened_CT(jn_core_conn_t *conn);
/* Process a close: detach every link, drop queued work, release io_conn. */
void jn_conn_closed_CT(jn_core_conn_t *conn);

/* Work items: allocate (zeroed) on the core thread; push to the link's or
 * delivery's connection (dropped when it is closed; wakes it on empty ->
 * non-empty). */
jn_work_t *jn_work_new_CT(jn_core_t *core, jn_work_type_t type);
void jn_work_push_CT(jn_core_conn_t *conn, jn_work_t *work);
/* Link work: takes a link reference. Returns 0 or JN_ENOMEM (logged). */
int jn_work_link_CT(jn_core_link_t *link, jn_work_type_t type, const char *address,
                    const char *condition, const char *description, uint32_t credit);
/* Delivery work on dlv's link's connection: takes a delivery reference.
 * disp may be NULL. Returns 0 or JN_ENOMEM (logged). */
int jn_work_dlv_CT(jn_delivery_t *dlv, jn_work_type_t type, uint64_t disp_type,
                   const jn_disposition_t *disp, bool settled);

/* ---- link.c ------------------------------------------------------------- */

jn_core_link_t *jn_link_ref(jn_core_link_t *link);
void jn_link_unref(jn_core_link_t *link);
void jn_link_attached_CT(jn_core_link_t *link);
/* Process a detach; from_conn_close: the connection is closing (no
 * LINK_RELEASED work: ops->conn_released covers it). */
void jn_link_detached_CT(jn_core_link_t *link, bool from_conn_close);
void jn_link_flow_CT(jn_core_link_t *link);
/* Outgoing: hand waiting copies out within the credit; answer a drain. */
void jn_link_pump_CT(jn_core_link_t *link);
/* Incoming: recompute the link's credit at the end of the batch. */
void jn_link_mark_dirty_CT(jn_core_link_t *link);
/* End of a batch: grant the credit of every dirty link (one LINK_CREDIT
 * per link at most). */
void jn_link_flush_credit_CT(jn_core_t *core);
/* Outgoing link that was at its unsettled bound and had a copy settled:
 * queue it to be pumped at the end of the batch (safe inside any loop over
 * its copies: it does not pump now). */
void jn_link_mark_resume_CT(jn_core_link_t *link);
/* End of a batch, before jn_link_flush_credit_CT: pump every link queued by
 * jn_link_mark_resume_CT (and mark a link-routed sender dirty). */
void jn_link_flush_resume_CT(jn_core_t *core);
/* True when the outgoing link holds its bound of unsettled copies. */
static inline bool jn_link_full_CT(const jn_core_link_t *link)
{
    return link->ct.unsettled >= link->ct.unsettled_max;
}
/* Mark every producer of addr dirty (its consumers changed). */
void jn_link_producers_dirty_CT(jn_addr_t *addr);

/* ---- address.c ---------------------------------------------------------- */

/* Find or create the address for a link's terminus address (a C string,
 * read through the hash view) for a link of direction dir: a mobile
 * address configured with phases gets the ingress phase for an incoming
 * link, the egress phase for an outgoing one (else phase 0); a fallback
 * receiver binds to phase 'F'; a waypoint's link (waypoint n, 1..9;
 * 0: none) binds to phase n when incoming, n - 1 when outgoing. *out is NULL
 * when the address's distribution is unavailable (nothing is created).
 * Returns 0 or JN_ENOMEM. */
int jn_addr_get_CT(jn_core_t *core, const char *address, jn_link_dir_t dir, bool fallback,
                   uint8_t waypoint, jn_addr_t **out);
/* jn_addr_unavailable_for_delivery_CT: true when the address an incoming
 * delivery on an anonymous link is sent to (its to-override when its
 * connection's are honoured, else properties.to; in its connection's
 * tenant space when it has one, as routed) is a mobile address whose
 * distribution is configured `unavailable` (an address entity, or the
 * router's defaultDistribution): the router refuses it rather than
 * release it. Not on the hot path (only for messages with no address
 * entry). Core thread. */
bool jn_addr_unavailable_for_delivery_CT(jn_core_t *core, const jn_delivery_t *dlv);

/* ---- tenant.c: tenant spaces (docs/design.md, "Tenant spaces") ---------- */

/* jn_tenant_conn_set: give conn (being opened, not yet posted) the tenant
 * space of vhost (not empty): conn->tenant becomes "<vhost>/". Returns 0,
 * JN_EINVAL when vhost cannot name a space (jn_core_tenant_vhost_usable;
 * the I/O layer refuses such a connection first) or JN_ENOMEM. The
 * opening thread. */
int jn_tenant_conn_set(jn_core_conn_t *conn, const char *vhost);
/* jn_tenant_attach_CT: an endpoint link with an address attaching on a
 * connection with a tenant space: when the address is mobile, moves it
 * into the space (link->address becomes "<vhost>/<address body>", the
 * client's kept in link->client_address). Returns 0 or JN_ENOMEM (the
 * link unchanged). */
int jn_tenant_attach_CT(jn_core_link_t *link);
/* jn_tenant_addr_for_delivery_CT: jn_addr_for_message_CT for a delivery
 * that arrived on an anonymous link of a connection with a tenant space:
 * a mobile address is looked up in the space, and the delivery keeps that
 * address (dlv->to_override, owned) for the copies that go to other
 * routers (x-opt-qd.to). NULL when none exists. */
jn_addr_t *jn_tenant_addr_for_delivery_CT(jn_core_t *core, jn_delivery_t *dlv, bool honour);

/* Look up the address a message is sent to (to-override when honoured, else
 * properties.to); NULL when none exists. */
jn_addr_t *jn_addr_for_message_CT(jn_core_t *core, const jn_message_t *msg,
                                  bool honour_to_override);
/* Add link as a consumer / producer of addr and set link->ct.addr.
 * Returns 0 or JN_ENOMEM (nothing changed). */
int jn_addr_add_consumer_CT(jn_addr_t *addr, jn_core_link_t *link);
int jn_addr_add_producer_CT(jn_addr_t *addr, jn_core_link_t *link);
/* Remove link from its address (link->ct.addr, cleared) and return that
 * address (NULL if none); the caller frees it with
 * jn_addr_release_if_unused_CT once done with it. */
jn_addr_t *jn_addr_remove_link_CT(jn_core_t *core, jn_core_link_t *link);
/* Free addr if no link refers to it. */
void jn_addr_release_if_unused_CT(jn_core_t *core, jn_addr_t *addr);
/* Dynamic addresses: "temp." then JN_ADDR_TEMP_CHARS base64url characters
 * of JN_ADDR_TEMP_RANDOM octets from getrandom(2) (128 bits: not to be
 * guessed, so a receiver cannot wait on another client's reply address;
 * qdrouterd 1.19's discriminator is 16 characters). */
#define JN_ADDR_TEMP_PREFIX "temp."
#define JN_ADDR_TEMP_RANDOM 16
#define JN_ADDR_TEMP_CHARS  22
/* The base64url text (RFC 4648 section 5, no padding) of rnd into out
 * (JN_ADDR_TEMP_CHARS characters and a NUL). Pure; any thread. */
void jn_addr_temp_name(const uint8_t rnd[JN_ADDR_TEMP_RANDOM], char out[JN_ADDR_TEMP_CHARS + 1]);
/* Make a dynamic address "amqp:/_topo/0/<id>/temp.<random>" (the form
 * qdrouterd 1.19 gives; on an edge router "amqp:/_edge/<id>/temp.<random>")
 * into *out (heap, the caller's). Returns 0; JN_AGAIN when the kernel gave
 * no random octets (its pool not ready, or getrandom failed): the caller
 * refuses the attach, there is no guessable fallback; JN_ENOMEM. */
int jn_addr_make_dynamic_CT(jn_core_t *core, char **out);
/* Make the address of a dynamic target (a sender that asks the router to
 * name its node, AMQP 1.0 section 3.5.4): "amqp:/_$temp.<random>", the
 * form qdrouterd 1.19 gives, a mobile address (hash key "M0_$temp.<random>")
 * that a receiver anywhere in the mesh may attach to by that name. Same
 * random part, returns and ownership as jn_addr_make_dynamic_CT. Core
 * thread. */
#define JN_ADDR_DYN_TARGET_PREFIX "_$temp."
int jn_addr_make_dynamic_target_CT(jn_core_t *core, char **out);
/* Why a receiver (outgoing link) attached by name to address is refused,
 * or NULL: address is in this router's dynamic-address space (hash key
 * "Ltemp.", in any spelling the router accepts: with or without "amqp:/",
 * "_topo/0/<id>/", "_topo/all/<id>/", "_edge/<id>/" on an edge,
 * "_local/"), which only a dynamic attach hands out; or it names another
 * router (classes R, A and H; on an edge, its uplink's "L_edge"), where a
 * local consumer would take that router's traffic (another router's
 * dynamic addresses and $management among it). Senders to any of these
 * are not affected. The caller refuses with amqp:unauthorized-access. */
const char *jn_addr_consumer_refusal_CT(jn_core_t *core, const char *address);
/* Pick the consumer for an anycast delivery (closest or balanced). */
jn_core_link_t *jn_addr_pick_consumer_CT(jn_addr_t *addr);
/* Find or create the address for a hash key (a new one gets the
 * configured distribution for mobile keys, else dist). *out NULL when
 * configured unavailable. Returns 0 or JN_ENOMEM. */
int jn_addr_get_key_CT(jn_core_t *core, const uint8_t *key, size_t len, jn_distribution_t dist,
                       jn_addr_t **out);
/* Remote router `router` has / no longer has a destination for addr
 * (remove may free addr). */
void jn_addr_add_remote_CT(jn_core_t *core, jn_addr_t *addr, int router);
void jn_addr_remove_remote_CT(jn_core_t *core, jn_addr_t *addr, int router);
/* jn_addr_remote_reach_CT: router (an index with a node) gained its first
 * route (reachable true) or lost it (false); called where the node's
 * `reachable` flag changes, with nothing in between. Every address with a destination there counts
 * it, or stops counting it, as reachable; senders to an address whose
 * reachable destinations went from none to some, or from some to none, are
 * marked for a credit update (they get credit, or lose it). Walks every
 * address: topology changes only. Core thread. */
void jn_addr_remote_reach_CT(jn_core_t *core, int router, bool reachable);
/* addr has somewhere to send to now: a local consumer, a remote router
 * with a destination that a route reaches (a router known from the link
 * state but not yet or no longer reachable does not count: a sender given
 * credit for it would only have its deliveries released), or an
 * in-process node. */
static inline bool jn_addr_has_destination(const jn_addr_t *addr)
{
    return addr->n_consumers > 0 || addr->n_reachable > 0 || addr->inproc;
}
/* The fallback address of addr (its key with phase 'F'), when addr has
 * enableFallback and that address exists; NULL otherwise. Not on the hot
 * path: only for an address without a destination. */
jn_addr_t *jn_addr_fallback_CT(jn_core_t *core, const jn_addr_t *addr);
/* For a fallback address (phase 'F'): the primary address it serves (phase
 * '0'), if it exists; NULL otherwise. */
jn_addr_t *jn_addr_primary_CT(jn_core_t *core, const jn_addr_t *fallback);
/* addr, or its fallback, has somewhere to send to: senders get credit. */
bool jn_addr_fallback_has_destination_CT(jn_core_t *core, const jn_addr_t *addr);
static inline bool jn_addr_has_destination_or_fallback_CT(jn_core_t *core, const jn_addr_t *addr)
{
    return jn_addr_has_destination(addr) ||
           (JN_UNLIKELY(addr->fallback) && jn_addr_fallback_has_destination_CT(core, addr));
}
/* Tell the mesh whether addr has a local destination now (a consumer or
 * an exchange), when that changed (docs/protocol.md, mobile addresses). */
void jn_addr_advertise_CT(jn_core_t *core, jn_addr_t *addr);
/* Free every address left (teardown). */
void jn_addr_free_all_CT(jn_core_t *core);

/* ---- forward.c ---------------------------------------------------------- */

void jn_forward_arrived_CT(jn_delivery_t *dlv);
void jn_forward_continued_CT(jn_delivery_t *dlv);
void jn_forward_update_CT(jn_delivery_t *dlv, const jn_disposition_t *disp, bool settled);
/* Send dlv (an incoming delivery, or one made on the internal link) as a
 * copy on each of links (n may be 0), multicast-style (one pre-settled copy
 * each) or not; marks it routed and finishes it as forwarding does. */
void jn_forward_to_links_CT(jn_delivery_t *dlv, jn_core_link_t **links, unsigned n, bool multicast);
/* jn_forward_reject_CT: settle an incoming delivery rejected, with the
 * error condition and description (may be NULL), unless it is settled
 * already (a service of the router's that refuses a request; not on the
 * per-message path). Core thread. */
void jn_forward_reject_CT(jn_delivery_t *dlv, const char *condition, const char *description);
/* An outgoing link in drop mode (ct.mc_dropping) handed some out, or is
 * going: once it took a copy and its backlog is down to half its capacity
 * (or it is detached), log the end of the episode with the number dropped
 * and leave drop mode. */
void jn_forward_backlog_check_CT(jn_core_link_t *link);
/* While core->mc_waiting, every JN_CORE_MC_CHECK_MS (one clock read per call):
 * put the outgoing links that took no copy for JN_CORE_MC_STUCK_MS while
 * multicast copies waited in drop mode. */
void jn_forward_mc_tick_CT(jn_core_t *core);
/* Every JN_CORE_FIGURES_MS once armed (jn_forward_figures_arm_CT), from the
 * core timer: count the unsettled deliveries held longer than
 * JN_CORE_STUCK_MS (router deliveriesStuck) and the client links that had
 * no credit and sent nothing that long (linksBlocked), into core->stats;
 * then set the core timer for the next run. Called on every run of the
 * core timer (an early call only sets it again). O(links + stuck
 * deliveries): each link's lists are looked at from their oldest end. */
void jn_forward_figures_tick_CT(jn_core_t *core);
/* Start the figures tick if it is not running (a connection opened). */
void jn_forward_figures_arm_CT(jn_core_t *core);
/* How long the core may sleep (ms, -1: until woken) given the caller's
 * timeout, so that the watch above runs while core->mc_waiting. The core
 * thread, without the core's token (it reads only an atomic flag). */
int jn_forward_mc_sleep_ms(jn_core_t *core, int timeout);
/* Route a composed message's delivery (internal link) by its `to`. */
void jn_forward_composed_CT(jn_delivery_t *dlv);
/* Hand a copy waiting at the head of its link's undelivered list to the
 * I/O layer (the caller checked the credit). */
void jn_forward_hand_out_CT(jn_delivery_t *copy);
/* An outgoing link is going: re-route its undelivered anycast copies to
 * another consumer of addr (its former address, NULL if none; the link is
 * already removed from its consumers), release the others to their
 * senders. */
void jn_forward_consumer_gone_CT(jn_core_link_t *link, jn_addr_t *addr);
/* jn_forward_producer_gone_CT: an incoming link is gone: the copies of its
 * deliveries whose consumers gave an outcome without settling are settled
 * by the router (no sender is left to settle first); forward.c. */
void jn_forward_producer_gone_CT(jn_core_link_t *link);

/* ---- mesh_side.c (the core's side of the mesh) -------------------------- */

/* What routing needs to know of a delivery that came across the mesh:
 * connections (by slot) not to send it back to (the one it came on and
 * those to routers in its trace), its origin router (x-opt-qd.ingress; 0 =
 * this router or unknown), the length of its trace, whether the trace
 * already names this router (a loop), its priority. */
typedef struct jn_route_ctx {
    jn_mesh_bits_t excluded;
    int origin;
    uint32_t trace_count;
    unsigned priority;
    bool looped; /* this router's own id is in the trace: never forward it */
    /* it came from an edge router: never back to that edge (edge.c) */
    const jn_core_conn_t *from_edge;
} jn_route_ctx_t;

/* Create the internal origin of composed messages and, for an interior
 * router, the mesh engine. Returns 0 or JN_ENOMEM. jn_core_create. */
int jn_router_init(jn_core_t *core, const jn_core_config_t *cfg);
/* Core thread start: the in-process addresses. Returns 0 or JN_ENOMEM. */
int jn_router_start_CT(jn_core_t *core);
/* Teardown: free router nodes (core thread role), then the rest. */
void jn_router_fini_CT(jn_core_t *core);
void jn_router_free(jn_core_t *core);
/* Tick the mesh when a second has passed; how long the core may sleep
 * before the next tick (ms; -1: no mesh, sleep until woken). */
void jn_router_tick_CT(jn_core_t *core);
/* A mesh tick this late (ms past its time) means the router itself did not
 * run meanwhile (process stopped or starved): silence is then judged from
 * the moment it runs again (jn_router_tick_CT, jn_edge_stalled_CT). */
#define JN_CORE_STALL_MS 1000
int jn_router_sleep_ms_CT(jn_core_t *core);
/* Connections: take / give back an inter-router slot. */
void jn_router_conn_opened_CT(jn_core_conn_t *conn);
void jn_router_conn_closed_CT(jn_core_conn_t *conn);
/* Links: check an attach against the connection's role and register
 * inter-router links (NULL = fine, else the refusal's description with
 * *condition set); after the attach is accepted; when it detaches. */
const char *jn_router_link_attach_CT(jn_core_link_t *link, const char **condition);
void jn_router_link_attached_CT(jn_core_link_t *link);
void jn_router_link_detached_CT(jn_core_link_t *link);
/* Deliveries served in-process (control messages, management requests),
 * once complete; continued: a waiting one may be complete now. */
void jn_router_control_arrived_CT(jn_delivery_t *dlv);
void jn_router_management_arrived_CT(jn_delivery_t *dlv);
void jn_router_continued_CT(jn_delivery_t *dlv);
/* Routing across the mesh. */
void jn_router_route_ctx_CT(jn_core_t *core, const jn_delivery_t *dlv, jn_route_ctx_t *rc);
jn_core_conn_t *jn_router_conn_CT(jn_core_t *core, const jn_router_node_t *node);
jn_core_link_t *jn_router_data_link_CT(jn_core_conn_t *conn, unsigned priority);
/* The best remote destination's data link for an anycast delivery (NULL:
 * none); *load (may be NULL) gets its balanced score. */
jn_core_link_t *jn_router_pick_remote_CT(jn_core_t *core, jn_addr_t *addr, const jn_route_ctx_t *rc,
                                         uint64_t *load);
/* Data links toward the remote destinations of a multicast address, one
 * per connection; returns how many were put in out (at most max). */
unsigned jn_router_multicast_links_CT(jn_core_t *core, const jn_addr_t *addr,
                                      const jn_route_ctx_t *rc, jn_core_link_t **out, unsigned max);

/* ---- exchange.c (exchanges and bindings) --------------------------------- */

/* jn_exchange_forward_CT: forward dlv, which arrived for addr (an
 * exchange's address, addr->inproc JN_INPROC_EXCHANGE), through its
 * exchange: pre-settled copies to the matching bindings' next hops (or the
 * alternate); the delivery is accepted when some copy was made (settled as
 * the copies are handed out), else released (dropped when pre-settled).
 * rc: the delivery's routing context (its priority is kept). */
void jn_exchange_forward_CT(jn_delivery_t *dlv, jn_addr_t *addr, const jn_route_ctx_t *rc);
/* Free every exchange (jn_core_free; touches no address). */
void jn_exchange_fini(jn_core_t *core);

/* A next hop of an exchange being forwarded to: set on the incoming
 * delivery (ct.reroute) while its copies are made, so that a copy toward
 * another router carries x-opt-qd.to = address and x-opt-qd.phase = phase
 * (delivery.c) and a fresh trace (router/io). */
typedef struct jn_reroute {
    const char *address;
    uint8_t phase;
} jn_reroute_t;

/* jn_forward_route_CT: route dlv to addr as an arrival would (anycast or
 * multicast, local and remote consumers), adding to dlv->ct.pending the
 * copies it makes. For the exchange (exchange.c). */
void jn_forward_route_CT(jn_delivery_t *dlv, jn_addr_t *addr, const jn_route_ctx_t *rc);
/* jn_forward_copies_CT: one copy of dlv (settled as dlv is sent) to each
 * of links (n), added to dlv->ct.pending. For the exchange (exchange.c). */
void jn_forward_copies_CT(jn_delivery_t *dlv, jn_core_link_t **links, unsigned n);
/* ---- edge.c (the interior's side of edge routers) ------------------------- */

/* An edge router: its edge connection conn opened / closed (choose the
 * active uplink: the first opened; on its loss the next open one). */
void jn_edge_conn_opened_CT(jn_core_conn_t *conn);
void jn_edge_conn_closed_CT(jn_core_conn_t *conn);
/* An edge router: addr's local consumers or producers changed (a link not
 * on the uplink attached or detached): ask for or close its links on the
 * uplink. */
void jn_edge_local_changed_CT(jn_core_t *core, jn_addr_t *addr);
/* An edge router: link, a per-address uplink sender whose producers went
 * (ct.close_when_sent), has handed out its last waiting copy: close it. */
void jn_edge_sent_all_CT(jn_core_link_t *link);
/* An edge router: every JN_EDGE_HEARTBEAT_MS, a heartbeat up the uplink
 * (when its heartbeat link has credit); how long the core may sleep until
 * the next one (ms). */
void jn_edge_uplink_tick_CT(jn_core_t *core);
int jn_edge_sleep_ms_CT(jn_core_t *core);
#define JN_EDGE_HEARTBEAT_MS 2000
/* An edge router: a delivery on the tracking link ([key, bool]). */
void jn_edge_tracking_arrived_CT(jn_delivery_t *dlv);
/* A delivery on a link served here (JN_LINK_EDGE_TRACKING, _HEARTBEAT,
 * _LOOKUP, _REPLY): to the one that serves its kind. */
void jn_edge_served_arrived_CT(jn_delivery_t *dlv);

/* ---- edge_lookup.c (link-route lookups and proxies, mesh-protocol 11) -- */

/* An edge router, an endpoint link's attach from a client (not the
 * uplink) with an address and no local link route served here: ask the
 * interior whether the address is link-routed (the link waits in
 * JN_LINK_ST_ROUTING) and return true; false: go on at once (no uplink,
 * or the interior's lookup service not attached). The request is sent
 * when the lookup link has credit (jn_edge_clients_tick_CT tries again). */
bool jn_edge_lookup_CT(jn_core_link_t *link);
/* An interior: a lookup request from an edge, answered to its reply-to. */
void jn_edge_lookup_arrived_CT(jn_delivery_t *dlv);
/* An edge router: an answer on its reply link (lookup or management). */
void jn_edge_reply_arrived_CT(jn_delivery_t *dlv);
/* An edge router: the interior answered the reply link's attach with the
 * dynamic address (link->answer_address). */
void jn_edge_reply_answered_CT(jn_core_link_t *link);
/* An edge router: the uplink (de)activated: attach the lookup and
 * management clients' links / forget them, sending the waiting attaches
 * on as if no link route existed. */
void jn_edge_clients_activate_CT(jn_core_t *core);
void jn_edge_clients_lost_CT(jn_core_t *core);
/* An edge router: one of the clients' own links attached / detached. */
void jn_edge_client_link_attached_CT(jn_core_link_t *link);
void jn_edge_client_link_detached_CT(jn_core_link_t *link);
/* An edge router, each batch: lookups that waited too long
 * (JN_EDGE_LOOKUP_TIMEOUT_MS) go on as if no link route existed; link-route
 * proxies to create or delete are sent. */
void jn_edge_clients_tick_CT(jn_core_t *core);
#define JN_EDGE_LOOKUP_TIMEOUT_MS 3000
/* An edge router: the link routes served here changed (linkroute.c):
 * their proxies are brought in line on the next tick. */
void jn_edge_proxies_changed_CT(jn_core_t *core);
/* Free the clients' state (jn_core_free). */
void jn_edge_clients_fini(jn_core_t *core);
/* Ask the uplink's I/O thread to attach an edge link of kind (a
 * jn_link_type_t) with address at the interior's end (NULL: none). */
void jn_edge_ask_attach_CT(jn_core_t *core, jn_link_dir_t dir, const char *address, uint8_t kind);
/* linkroute.c: fn(arg, key) for each link route (configured or
 * connection-scoped) whose container is connected here (key: C/D/E/F +
 * text, borrowed for the call). */
void jn_lr_each_served_CT(jn_core_t *core, void (*fn)(void *arg, const char *key), void *arg);
/* linkroute.c: the address-table rows (router.address) of this router's
 * own link routes, one per mesh key that the address table does not hold
 * already (a key advertised by another router is its row there), as 1.19
 * lists a link route's address from its creation: fn(ctx, row) for rows
 * [offset, offset + max), false stops; returns the number of such rows.
 * Core thread. */
struct jn_view_addr;
size_t jn_lr_view_keys_CT(jn_core_t *core, size_t offset, size_t max,
                          bool (*fn)(void *ctx, const struct jn_view_addr *addr), void *ctx);
/* linkroute.c: route link's attach over conn (an edge router's uplink) with
 * its own name and address; false: out of memory (the link is refused). */
bool jn_lr_attach_via_CT(jn_core_link_t *link, jn_core_conn_t *conn);
/* linkroute.c: whether address is link-routed in direction dir here (a
 * configured or advertised route) and whether the route has a container
 * anywhere (has_dest), leaving out the connection `except`. */
bool jn_lr_lookup_CT(jn_core_t *core, const char *address, jn_link_dir_t dir,
                     const jn_core_conn_t *except, bool *has_dest);
/* linkroute.c: whether a link route of dir matching address has its
 * container connected here. */
bool jn_lr_local_route_CT(jn_core_t *core, const char *address, jn_link_dir_t dir);
/* An edge router: the uplink's anonymous sender, for a delivery with no
 * local destination that did not come down the uplink; NULL: none. */
jn_core_link_t *jn_edge_uplink_for_CT(jn_core_t *core, const jn_delivery_t *dlv);

/* An edge link (JN_LINK_EDGE_*) the edge attached: bind it, or refuse it
 * (or close the connection of a second edge with an id already attached).
 * Core thread; docs/design.md "Edge routers". */
void jn_edge_link_attached_CT(jn_core_link_t *link);
/* An attached edge link detaches. */
void jn_edge_link_detached_CT(jn_core_link_t *link);
/* A delivery on a heartbeat link: noted and consumed. */
void jn_edge_heartbeat_arrived_CT(jn_delivery_t *dlv);
/* Once a second: close the edge connections whose heartbeat is silent for
 * more than JN_EDGE_HEARTBEAT_TIMEOUT_MS. */
void jn_edge_tick_CT(jn_core_t *core);
/* The router did not run for late_ms more than a tick (its own stall:
 * jn_router_tick_CT): every edge's last heartbeat moves on by late_ms, so
 * that heartbeats still unread in its socket are not taken for silence. */
void jn_edge_stalled_CT(jn_core_t *core, int64_t late_ms);
/* A sender on an edge connection was looked at for credit: tell the edge,
 * on its tracking link, when whether its address has a destination other
 * than the edge itself changed. */
void jn_edge_track_CT(jn_core_link_t *link);
/* addr's consumers changed: senders of edge routers to it are looked at
 * again (jn_edge_track_CT). */
void jn_edge_consumers_changed_CT(jn_core_t *core, jn_addr_t *addr);
/* The first consumer of addr not on conn (for anycast from an edge), from
 * the round robin's place; NULL: none. */
jn_core_link_t *jn_edge_pick_other_CT(jn_addr_t *addr, const jn_core_conn_t *conn);

#define JN_EDGE_HEARTBEAT_TIMEOUT_MS 8000

/* ---- coordinator.c (transaction coordinator targets) ---------------------- */

/* jn_coordinator_refused_CT: link is an endpoint attach that no link
 * route took (jn_lr_attach_CT returned false). When its target is a
 * transaction coordinator (AMQP 1.0 4.5.1), refuse it with
 * amqp:precondition-failed (1.19's words: the router coordinates no
 * transaction itself) and return true; otherwise return false and do
 * nothing. Core thread. */
bool jn_coordinator_refused_CT(jn_core_link_t *link);
/* jn_coordinator_no_route_condition: the error condition for a link
 * route's attach that finds no container: qd:no-route-to-dest for a
 * coordinator target (as 1.19), amqp:not-found for any other link
 * (docs/design.md, "Link routes"). A static string. Any thread. */
const char *jn_coordinator_no_route_condition(const jn_core_link_t *link);

/* ---- linkroute.c (link routes and auto-links) ---------------------------- */

/* Allocate / free the tables (jn_core_create / jn_core_free). */
int jn_lr_init(jn_core_t *core);
void jn_lr_fini(jn_core_t *core);
/* An endpoint link's attach: when a link route matches its address, route
 * it (or refuse it: no container) and return true; false: route it by its
 * address as usual. */
bool jn_lr_attach_CT(jn_core_link_t *link);
/* A link the router attached for a JN_WORK_LINK_ATTACH was reported
 * (link->attach_ref names the request): pair it with what asked for it. */
void jn_lr_local_attached_CT(jn_core_link_t *link);
/* Its peer answered (JN_ACT_LINK_ANSWERED). */
void jn_lr_answered_CT(jn_core_link_t *link);
/* A link that is routed or serves an auto-link (or waits to) is detaching:
 * undo the pairing, detach the other end with the error. */
void jn_lr_link_detached_CT(jn_core_link_t *link, bool from_conn_close);
/* Connections opening and closing: auto-links attach and go; requests
 * waiting on a closed connection are answered. */
void jn_lr_conn_opened_CT(jn_core_conn_t *conn);
void jn_lr_conn_closed_CT(jn_core_conn_t *conn);
/* The core timer fired (jn_core_timer_at_CT): re-attach the auto-links
 * whose retry is due, and set the timer for the next. Core thread. */
void jn_lr_tick_CT(jn_core_t *core);
/* The credit a routed incoming link may be granted now (link.c). */
uint32_t jn_lr_credit_due_CT(const jn_core_link_t *link);

/* link.c: an endpoint link's attach, from the link-route check on: route
 * it, or bind it to its address (what jn_link_attached_CT does after an
 * edge router's lookup, jn_edge_lookup_CT). */
void jn_link_attach_route_CT(jn_core_link_t *link);

/* link.c: refuse an attach with an error (LINK_CLOSE; waits for the
 * detach). */
void jn_link_refuse_CT(jn_core_link_t *link, const char *condition, const char *description);

/* ---- delivery.c ---------------------------------------------------------- */

/* Free an update action the core has taken from its queue. */
void jn_update_action_free(jn_update_action_t *a);

/* ---- lists -------------------------------------------------------------- */

void jn_dlv_list_append_CT(jn_dlv_list_t *list, jn_delivery_t *dlv);
void jn_dlv_list_remove_CT(jn_dlv_list_t *list, jn_delivery_t *dlv);

#endif /* JN_CORE_PRIVATE_H */
