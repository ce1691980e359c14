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
 * so posting them cannot fail; a disposition update carries a copy of the
 * disposition: the delivery's own (delivery.h, `update`), or a pooled one
 * while that is posted. A delivery's first work item toward its
 * connection is its own too (`work`, conn.c).
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
 * wait; forward_mc.c, docs/multicast.md). */
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

/* jn_work_t.home: a work item from the work pool (jn_work_new_CT), or the
 * delivery's own (jn_delivery_t.work, conn.c). */
enum { JN_WORK_HOME_POOL = 0, JN_WORK_HOME_DLV = 1 };

#define JN_CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* A disposition update (jn_core_delivery_update_IO): the delivery's own
 * (embedded: its `update`, delivery.h) or one from the action pool.
 * Written by the posting I/O thread, then owned by the core thread. */
typedef struct jn_update_action {
    jn_action_t base;
    jn_delivery_t *dlv;    /* reference owned by the action */
    jn_disposition_t disp; /* owned copy */
    bool settled;
    bool embedded; /* dlv's own `update`: given back, not freed */
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
    /* an edge router's fallback phase (key M F) while its primary has
     * senders here: kept (jn_addr_release_if_unused_CT) for the uplink
     * sender that proxies them to the fallback beyond this edge */
    bool edge_hold;
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
    size_t node_id_len;
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
    bool streaming_links; /* the peer offered qd.streaming-links (stream.c) */
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
        /* streaming links (stream.c): the idle ones (through link
         * ct.stream_next, the most recently used first) and how many;
         * deliveries waiting for a new one, oldest first */
        jn_core_link_t *stream_idle;
        uint32_t stream_idle_count;
        struct jn_stream_wait *stream_wait, *stream_wait_tail;
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

/* Octets of the longest address a link's memo keeps (longer ones are looked
 * up every time). */
#define JN_ADDR_MEMO_MAX 46

/* Octets of the longest encoded trace an incoming link's trace memo keeps
 * (jn_trace_memo_t; longer ones are walked every time). */
#define JN_TRACE_MEMO_MAX 48

/* An incoming link's memo of the trace of its last delivery that came
 * across the mesh (mesh_route.c, the loop check): the encoded entries
 * (x-opt-qd.trace's list elements, len octets of raw, count of them) and
 * whether they named this router. The answer depends on nothing else (the
 * router's own id never changes), so the memo never goes stale. Core
 * thread only (a part of the link's ct state). */
typedef struct jn_trace_memo {
    bool valid;
    bool looped;
    uint8_t len;
    uint32_t count;
    uint8_t raw[JN_TRACE_MEMO_MAX];
} jn_trace_memo_t;

/* An anonymous incoming link's memo of the last address its messages were
 * routed to (address.c, jn_addr_for_message_memo_CT): the raw octets of the
 * field the address was found from, the phase applied, and the address.
 * Valid only while epoch equals core->ct.addr_epoch, which moves whenever
 * an address is freed: the memo never reads an address that may be gone.
 * Core thread only (a part of the link's ct state). */
typedef struct jn_addr_memo {
    jn_addr_t *addr; /* NULL: nothing kept */
    uint64_t epoch;
    uint8_t phase; /* the phase set on the view: 0 for none, 1..9 */
    uint8_t len;
    uint8_t raw[JN_ADDR_MEMO_MAX];
} jn_addr_memo_t;

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
        jn_addr_memo_t addr_memo;              /* anonymous: the last address found */
        jn_trace_memo_t trace_memo;            /* the last trace's loop check */
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
        /* a stuck multicast consumer (forward_mc.c): drop mode (mc_dropping)
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
         * bound"): twice its capacity, or UINT32_MAX on an inter-router or edge
         * connection; a link at it is handed nothing, as without credit */
        uint32_t unsettled_max;
        /* on core->ct.resume: it was at unsettled_max and a copy settled;
         * pumped at the end of the batch (jn_link_flush_resume_CT) */
        bool resume;
        jn_core_link_t *resume_next;
        /* linksBlocked (forward_figures.c): since when (monotonic ms, 0:
         * not watched) the link has had no credit as counted there: an
         * outgoing link from attach until its first credit, an incoming
         * link while the router gives its sender none. blocked: counted
         * in core->stats.links_blocked (watched JN_CORE_STUCK_MS); credit
         * arriving ends both at once */
        int64_t blocked_since_ms;
        bool blocked;
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
        /* a link-routed incoming link: the receiver's drain was passed to
         * its sender, whose answer is awaited (linkroute.c) */
        bool lr_draining;
        struct jn_autolink *autolink;
        /* link routes: the other end, when it detached first and its
         * answer (detach or close, as this link's own detach) waits for
         * this link's (referenced; its LINK_RELEASED waits too) */
        jn_core_link_t *echo;
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
        /* one of its deliveries was released, taken by no consumer, while
         * its address had no destination: it also counts as sent into
         * nothing (forward.c; it may have been counted before the loss was
         * noted: routed to a consumer whose detach came after it) */
        bool released_nodest;
        /* an outgoing streaming link (stream.c): the copy it carries
         * (borrowed; NULL: none), whether it is in its connection's pool,
         * and the next one there */
        bool streaming;
        bool stream_pooled;
        bool stream_scrub_mark; /* idle since the scrubber's last pass */
        jn_delivery_t *stream_copy;
        jn_core_link_t *stream_next;
    } ct;

    /* Link routes, auto-links, phases (linkroute.c), apart from the hot
     * fields above. Immutable after jn_core_link_attached_IO: */
    uint8_t *termini; /* the peer's termini as io encodes them (heap), or NULL */
    size_t termini_len;
    void *attach_ref; /* jn_link_info_t.attach_ref (linkroute.c: a request id) */
    bool fallback;    /* outgoing: a fallback destination (qd.fallback);
                       * incoming on an edge connection: feeds phase F */
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
    /* Written by the I/O thread before it posts the answer, then read by
     * the core: the peer's answering attach named no address in the
     * terminus it answered for (our outgoing link's target, our incoming
     * link's source); an auto-link stays attaching then (autolink.c). */
    bool answer_unaddressed;
    /* Set by the core when it takes the attach of an endpoint link on a
     * connection with a tenant space whose address is mobile (tenant.c):
     * the address as the client named it (heap; the attach is answered
     * with it), address then being the one in the space. NULL otherwise. */
    char *client_address;
};

/* ---- the core ----------------------------------------------------------- */

/* The streaming link scrubber (stream.c; mesh-protocol 3.5, as 1.19): its
 * period, the idle links a connection keeps, the most it detaches per
 * pass; with -T/--test-hooks, the period and the pool as 1.19's test mode
 * makes them. */
#define JN_STREAM_SCRUB_MS         30000
#define JN_STREAM_POOL_MAX         128
#define JN_STREAM_SCRUB_BATCH      10
#define JN_STREAM_TEST_SCRUB_MS    5000
#define JN_STREAM_TEST_POOL_MAX    2

struct jn_core {
    /* Immutable after jn_core_create. */
    char *router_id; /* heap */
    jn_distribution_t default_distribution;
    jn_core_io_ops_t ops;
    bool edge_mode; /* router.mode edge (edge.c) */
    bool deny_resumable_lr; /* jn_core_config_t.deny_resumable_link_routes */
    uint32_t hello_max_age_ms; /* router.helloMaxAgeSeconds (3 s when unset), in ms:
                                * op_link_silent_CT (mesh_side.c) */
    int64_t stream_scrub_ms;  /* the scrubber's period (stream.c) */
    uint32_t stream_pool_max; /* idle streaming links a connection keeps */

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
     * JN_CORE_MC_CHECK_MS (forward_mc.c). Written by the holder of the core
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
    size_t node_id_len;
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
        int node_memo; /* the router index node_by_node_id_CT found last (mesh_side.c) */
        /* moves on whenever an address is freed: links' address memos
         * (jn_addr_memo_t) taken before it are stale */
        uint64_t addr_epoch;
        jn_core_conn_t *slots[JN_MESH_MAX_LINKS];       /* inter-router conns by slot */
        int64_t next_tick_ms;                           /* when the mesh ticks next */
        int64_t last_flush_ms;                          /* when the mesh last acted on a change */
        bool flush_pending;    /* a change waits for JN_MESH_FLUSH_MS to pass */
        jn_core_conn_t *conns; /* open connections */
        jn_core_link_t *dirty; /* incoming links whose credit to recompute */
        jn_core_link_t *resume; /* outgoing links to pump (link.c) */
        uint64_t batch;        /* number of the batch being processed */
        uint64_t next_link_id; /* links' and router.config.* entities' identities
                                * (jn_core_next_identity; the main thread too,
                                * before the core starts) */
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
        int64_t stream_scrub_at_ms; /* the scrubber's next pass (stream.c), 0: not yet set */
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

#include "core_fns.h" /* the functions shared between the files */

#endif /* JN_CORE_PRIVATE_H */
