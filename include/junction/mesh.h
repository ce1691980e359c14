/*
 * junction/mesh.h — the inter-router routing protocol engine: neighbour
 * discovery (HELLO), link state (RA, LSR, LSU), path computation, and
 * mobile-address synchronisation (MAU, MAR), wire-compatible with qdrouterd
 * 1.19 (docs/protocol.md, "The mesh").
 *
 * The engine is a pure state machine. It owns no connection and no link: the
 * core gives it the control messages that arrive, the ticks of its clock and
 * the changes of its own mobile addresses, and the engine answers through the
 * callbacks of jn_mesh_ops_t — messages to send, and the routing results
 * (which routers exist, how to reach each, which mobile addresses each has).
 * That keeps it testable without sockets: a unit test is a fake core.
 *
 * Identifiers used in this interface:
 *   router index: 1..JN_MESH_MAX_ROUTERS-1, the mask bit of a remote router
 *     (index 0 is this router); the lowest free index is given to a new
 *     router, and is freed when the router is deleted ("Link state and routes": ageing).
 *   link: 0..JN_MESH_MAX_LINKS-1, the slot of an inter-router connection,
 *     chosen by the core (the "link id" of 1.19's neighbour refresh).
 *
 * Threads: every function runs on the core thread (hence _CT; debug and
 * sanitizer builds assert it at the top of each, against the role given in
 * jn_mesh_config_t.ct_role), and every callback is called on it, from
 * inside the jn_mesh_* call that caused it.
 * Callbacks must not call back into the engine.
 */
#ifndef JUNCTION_MESH_H
#define JUNCTION_MESH_H 1

#include <junction/message.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 1.19's bitmask width: index 0 is this router, at most 127 remote ones. */
#define JN_MESH_MAX_ROUTERS 128
/* Inter-router connections at once (1.19: 128). */
#define JN_MESH_MAX_LINKS 128

typedef struct jn_mesh jn_mesh_t;

/* A set of router indices (bit i = router index i). */
typedef struct jn_mesh_bits {
    uint64_t w[2];
} jn_mesh_bits_t;

static inline bool jn_mesh_bits_has(const jn_mesh_bits_t *b, unsigned i)
{
    return i < JN_MESH_MAX_ROUTERS && ((b->w[i >> 6] >> (i & 63)) & 1u);
}
static inline void jn_mesh_bits_set(jn_mesh_bits_t *b, unsigned i)
{
    if (i < JN_MESH_MAX_ROUTERS)
        b->w[i >> 6] |= (uint64_t)1 << (i & 63);
}
static inline void jn_mesh_bits_clear(jn_mesh_bits_t *b, unsigned i)
{
    if (i < JN_MESH_MAX_ROUTERS)
        b->w[i >> 6] &= ~((uint64_t)1 << (i & 63));
}
/* jn_mesh_bits_next: the lowest index >= from whose bit is set, or -1.
 * Two word scans, not a loop over 128 indices (the per-message route
 * choice walks the routers that have a destination this way). */
static inline int jn_mesh_bits_next(const jn_mesh_bits_t *b, unsigned from)
{
    for (unsigned w = from >> 6; w < 2; w++) {
        uint64_t m = b->w[w];
        if (w == from >> 6)
            m &= ~(uint64_t)0 << (from & 63);
        if (m)
            return (int)(w * 64 + (unsigned)__builtin_ctzll(m));
    }
    return -1;
}

/* Timers, in seconds; 0 = the 1.19 default ("Timers"). */
typedef struct jn_mesh_config {
    const char *router_id;      /* copied; required */
    uint32_t hello_interval;    /* router.helloIntervalSeconds, 1 */
    uint32_t hello_max_age;     /* router.helloMaxAgeSeconds, 3 */
    uint32_t ra_interval;       /* router.raIntervalSeconds, 30 */
    uint32_t ra_interval_flux;  /* router.raIntervalFluxSeconds, 4 */
    uint32_t remote_ls_max_age; /* router.remoteLsMaxAgeSeconds, 60 */
    int64_t instance;           /* HELLO/RA instance; 0 = time(NULL) */
    /* The role the engine runs in: its calls must come from the thread
     * whose jn_ct_role_ (junction/common.h) is this (the core; checked by
     * JN_ASSERT_CT in debug builds). NULL: a thread in no core role (a unit
     * test driving the engine itself). */
    const void *ct_role;
} jn_mesh_config_t;

/* Treatment hints carried in MAU ("Control messages"). */
enum {
    JN_MESH_HINT_FLOOD = 0,
    JN_MESH_HINT_MULTICAST = 1,
    JN_MESH_HINT_CLOSEST = 2,
    JN_MESH_HINT_BALANCED = 3,
    JN_MESH_HINT_LINK_BALANCED = 4,
    JN_MESH_HINT_UNAVAILABLE = 5
};

/* What the engine asks of the core. Every callback runs on the core thread,
 * inside the engine call that caused it, and must not call the engine.
 * Messages passed to the send callbacks are complete, parsed to
 * JN_DEPTH_PROPERTIES, carry properties.to as the reference says, and are
 * handed over with their reference (the core sends them pre-settled on
 * control links, or drops them and unrefs when it cannot). */
typedef struct jn_mesh_ops {
    void *ctx;
    /* HELLO: send msg on the outgoing control link of inter-router
     * connection `link` (one hop). */
    void (*send_on_link)(void *ctx, int link, jn_message_t *msg);
    /* LSR, LSU, MAR, absolute MAU: send msg toward remote router `router`
     * (over its link if a neighbour, else over its next hop's). The core
     * drops it when it has no route. */
    void (*send_to_router)(void *ctx, int router, jn_message_t *msg);
    /* RA, differential MAU originated here: send msg to every reachable
     * router (one copy per distinct next-hop connection). */
    void (*send_to_all)(void *ctx, jn_message_t *msg);

    /* A router record was created (router index, its id; id borrowed for
     * the call) / deleted (its routes and mobile addresses are gone: the
     * engine has already called mobile_removed for each of its keys). */
    void (*router_added)(void *ctx, int router, const char *id);
    void (*router_removed)(void *ctx, int router);
    /* After a path computation, for every router whose route changed (and
     * for every router on the first computation it is reachable in):
     * reachable over `link` directly (a neighbour: next_hop = -1), or
     * through neighbour router `next_hop` (link = -1); total cost; the
     * routers whose traffic to it legitimately passes through this router
     * ("Link state and routes"; bit 0, this router, is always set); of
     * those, the ones this router is sure of, for multicast (mc_origins, a
     * subset: none whose path might run through a router whose link state
     * is missing or stale here; router/mesh/path.c). */
    void (*router_route)(void *ctx, int router, int link, int next_hop, uint32_t cost,
                         const jn_mesh_bits_t *valid_origins, const jn_mesh_bits_t *mc_origins);
    /* The router is no longer reachable (no path in the last computation). */
    void (*router_unreachable)(void *ctx, int router);

    /* Remote router `router` has / no longer has a destination for mobile
     * key (hash key as in "Address keys", e.g. "M0q1"; borrowed for the call).
     * hint: the treatment from the MAU (JN_MESH_HINT_*), or -1 when the MAU
     * gave none. */
    void (*mobile_added)(void *ctx, int router, const uint8_t *key, size_t len, int hint);
    void (*mobile_removed)(void *ctx, int router, const uint8_t *key, size_t len);

    /* Neighbour `id` (borrowed for the call), bound to inter-router
     * connection `link`, sent no HELLO over it for longer than
     * helloMaxAgeSeconds while the link is still there: the connection is
     * most likely half-open (a path that stopped carrying anything without
     * closing), and what is routed over it would wait for the idle timeout.
     * The core closes it at once ("The mesh" in docs/design.md). Not called
     * for a tick the router itself was late for (its own stall). May be
     * NULL. */
    void (*link_silent)(void *ctx, int link, const char *id);
} jn_mesh_ops_t;

/* jn_mesh_create: an engine with no neighbours. cfg and ops are copied.
 * Returns NULL on ENOMEM or a NULL/empty router id. Any thread (before
 * the core starts). */
jn_mesh_t *jn_mesh_create(const jn_mesh_config_t *cfg, const jn_mesh_ops_t *ops);

/* jn_mesh_free: free the engine and everything it holds; no callback is
 * called. NULL is ignored. */
void jn_mesh_free(jn_mesh_t *mesh);

/* jn_mesh_tick_CT: advance the engine's clock to now_ms (monotonic
 * milliseconds). The core calls it about every second (more often is
 * harmless: the engine acts when a whole tick has passed). Does the engine
 * tick of "Link state and routes": HELLO, RA timer, neighbour and link-state expiry,
 * ls_seq bump, path computation, LSR/MAR requests, and the mobile-sync
 * timer of "Mobile addresses" (differential MAU then RA). */
void jn_mesh_tick_CT(jn_mesh_t *mesh, int64_t now_ms);

/* jn_mesh_receive_CT: a control message arrived on the incoming control
 * link of inter-router connection `link`, whose effective cost (section
 * "Inter-router connections") is `cost`. msg is complete and borrowed for the call; the engine
 * parses what it needs (application-properties opcode, amqp-value body).
 * Handles HELLO, RA, LSR, LSU, MAU and MAR; ignores unknown opcodes,
 * messages from this router's own id, and pv > 1 (logged once per id).
 * Returns 0, or JN_EPROTO for a malformed message (logged with the reason;
 * nothing changed), or JN_ENOMEM when memory ran out while handling it. */
int jn_mesh_receive_CT(jn_mesh_t *mesh, int link, uint32_t cost, jn_message_t *msg);

/* jn_mesh_link_added_CT: inter-router connection `link` has its outgoing
 * control link, with effective cost `cost` ("Inter-router connections"): HELLOs go out on
 * it from the next tick. */
void jn_mesh_link_added_CT(jn_mesh_t *mesh, int link, uint32_t cost);

/* jn_mesh_link_added_CT: the control links of inter-router connection
 * `link` (0..JN_MESH_MAX_LINKS-1; others are ignored) are attached, so
 * HELLOs may be sent on it: the engine sends them there from its next tick
 * on ("Control messages", HELLO). cost: the connection's effective cost ("Inter-router connections";
 * 0 is taken as 1), used for the own link state when the neighbour is
 * confirmed. Calling it again for a present link updates the cost only.
 * A jn_mesh_receive_CT on an unknown link makes it known as well. */
void jn_mesh_link_added_CT(jn_mesh_t *mesh, int link, uint32_t cost);

/* jn_mesh_link_lost_CT: inter-router connection `link` is gone: the
 * neighbour reached over it is removed from the own link state at once
 * ("Inter-router connections"), without waiting for HELLO expiry; recomputation follows on
 * the next tick (or at once: the engine may compute immediately). */
void jn_mesh_link_lost_CT(jn_mesh_t *mesh, int link);

/* jn_mesh_local_mobile_CT: this router gained its first (added) or lost
 * its last local destination for mobile key ("Mobile addresses"; in-process
 * subscribers do not count). hint: JN_MESH_HINT_* of the address's
 * distribution. Collected and sent in the next differential MAU (section
 * 8.2: an add then a delete before the timer fires cancel out). */
void jn_mesh_local_mobile_CT(jn_mesh_t *mesh, const uint8_t *key, size_t len, bool added, int hint);

/* jn_mesh_flush_CT: act at once on a topology change made since the last
 * tick (a lost link, a newer link state) instead of waiting for the next
 * tick: bump the own ls_seq and send an RA if the own link state changed,
 * recompute the paths, send the LSRs that became possible. The core calls
 * it after jn_mesh_receive_CT and jn_mesh_link_lost_CT; it does nothing
 * when nothing changed, or before the first tick. 1.19 waits for its next
 * 1-s tick for each of these steps; acting at once shortens
 * reconvergence by a tick or two per hop, and changes nothing on the wire
 * but the timing. Returns true when it had something to do. */
bool jn_mesh_flush_CT(jn_mesh_t *mesh);

/* jn_mesh_radius_CT: the largest hop count to any reachable router (section
 * "Link state and routes"), 0 with no neighbours. Core thread. */
uint32_t jn_mesh_radius_CT(const jn_mesh_t *mesh);

/* jn_mesh_router_index_CT: the index of the router with id (length len), or
 * -1 when unknown. Core thread. */
int jn_mesh_router_index_CT(const jn_mesh_t *mesh, const char *id, size_t len);

/* What management shows of one known router (router.node). Strings
 * borrowed from the engine; valid until the next engine call. */
typedef struct jn_mesh_router_info {
    int index;      /* router index */
    const char *id; /* router id */
    int link;       /* neighbour: its inter-router connection slot, else -1 */
    int next_hop;   /* router index of the next hop, -1 for a neighbour or unreachable */
    bool reachable;
    uint32_t cost; /* total cost (when reachable) */
    jn_mesh_bits_t valid_origins;
    uint64_t ls_seq;             /* its last link state's sequence */
    uint64_t mobile_seq;         /* its mobile sequence as known here */
    int64_t instance;            /* its instance (0 = not known) */
    int64_t last_topo_change_ms; /* when its link state last changed (monotonic ms) */
    /* its link state's peers: ids and costs (borrowed), count */
    const char *const *peer_ids;
    const uint32_t *peer_costs;
    size_t peer_count;
} jn_mesh_router_info_t;

/* jn_mesh_foreach_router_CT: call fn for every known remote router, in index
 * order; stop early when fn returns false. Core thread. */
void jn_mesh_foreach_router_CT(const jn_mesh_t *mesh,
                            bool (*fn)(void *arg, const jn_mesh_router_info_t *info), void *arg);

/* jn_mesh_own_state_CT: this router's own link-state sequence and mobile
 * sequence (management: router entity). Core thread. */
void jn_mesh_own_state_CT(const jn_mesh_t *mesh, uint64_t *ls_seq, uint64_t *mobile_seq);

#endif /* JUNCTION_MESH_H */
