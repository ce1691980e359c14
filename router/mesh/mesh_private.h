/*
 * mesh_private.h — the inside of the routing protocol engine (mesh.h):
 * the engine and node-record structs shared by its files, and the
 * functions each file offers the others.
 *
 *   engine.c     the engine's life, the node table, the tick, receive
 *                dispatch and the queries;
 *   linkstate.c  HELLO, RA, LSR and LSU handling, the own link state,
 *                ageing and restart detection;
 *   path.c       the route computation: Dijkstra, next hops, radius, valid
 *                origins, and the route callbacks;
 *   mobile.c     mobile-address synchronisation: local changes, MAU and
 *                MAR;
 *   compose.c    composing the six control messages;
 *   parse.c      parsing them;
 *   strs.c       small owned string lists used by all of the above.
 *
 * The protocol itself: docs/protocol.md, "The mesh" (its subsections are named
 * below by title).
 *
 * Threads: everything here belongs to the core thread (the engine is only
 * ever called there), so nothing is locked.
 */
#ifndef JUNCTION_MESH_PRIVATE_H
#define JUNCTION_MESH_PRIVATE_H 1

#include <junction/common.h>
#include <junction/hash.h>
#include <junction/log.h>
#include <junction/mesh.h>

/* JN_ASSERT_CT: the calling thread runs in the role the engine was made
 * for (jn_mesh_config_t.ct_role: the core's token, held). At the top of
 * every _CT function here; debug and sanitizer builds. */
#define JN_ASSERT_CT(mesh) JN_DEBUG_CHECK(jn_ct_role_ == (mesh)->ct_role)

/* Longest router id ("Timers"). */
#define JN_MESH_ID_MAX 127

/* The engine's tick ("Timers") and the slack allowed to a core timer that
 * fires a little early. */
#define JN_MESH_TICK_MS  1000
#define JN_MESH_SLACK_MS 10

/* A tick this late (ms past its time) means the router itself did not
 * run meanwhile (the process was stopped or starved): the HELLOs and link
 * states its neighbours sent may still wait unread, so the ages of what
 * was heard are moved on by the lateness before anything is expired
 * (engine.c, resume_CT). */
#define JN_MESH_STALL_MS 1000

/* Ticks an unreferenced node survives ("Link state and routes", ageing). */
#define JN_MESH_UNREF_TICKS 3

/* ---- strs.c: a list of owned strings, each with an integer ------------- */

/* A growable list of NUL-terminated string copies, each with a value (a
 * cost, a time, a hint). Owned by its holder; free with jn_mesh_strs_free. */
typedef struct jn_mesh_strs {
    char **s;
    size_t *len;
    int64_t *val;
    size_t n, cap;
} jn_mesh_strs_t;

/* append a copy of len octets at p with value val: 0 or JN_ENOMEM */
int jn_mesh_strs_add(jn_mesh_strs_t *l, const void *p, size_t len, int64_t val);
/* index of the entry equal to len octets at p, or -1 */
long jn_mesh_strs_find(const jn_mesh_strs_t *l, const void *p, size_t len);
/* remove entry i (the last entry takes its place) */
void jn_mesh_strs_remove(jn_mesh_strs_t *l, size_t i);
/* remove every entry (capacity kept) */
void jn_mesh_strs_clear(jn_mesh_strs_t *l);
/* free everything and leave l empty */
void jn_mesh_strs_free(jn_mesh_strs_t *l);

/* A hash key's hint stored as a jn_hash_t value (values must be non-NULL). */
static inline void *jn_mesh_hint_value(int hint)
{
    return (void *)(uintptr_t)(hint + 2);
}
static inline int jn_mesh_value_hint(void *v)
{
    return (int)(uintptr_t)v - 2;
}

/* ---- compose.c, parse.c: the six control messages ----------------------- */

typedef enum jn_mesh_op {
    JN_MESH_OP_UNKNOWN = 0,
    JN_MESH_OP_HELLO,
    JN_MESH_OP_RA,
    JN_MESH_OP_LSR,
    JN_MESH_OP_LSU,
    JN_MESH_OP_MAU,
    JN_MESH_OP_MAR
} jn_mesh_op_t;

/* A parsed control message ("Control messages"). Fields not carried by the opcode
 * stay zero/empty. Owned by the caller; free with jn_mesh_msg_fini. */
typedef struct jn_mesh_msg {
    jn_mesh_op_t op;
    char id[JN_MESH_ID_MAX + 1]; /* sender (originator) id */
    size_t id_len;
    int64_t pv;       /* 0 when absent */
    int64_t instance; /* 0 when absent */
    uint64_t ls_seq;  /* RA; LSU: the outer one */
    uint64_t mobile_seq;
    uint64_t have_seq;
    jn_mesh_strs_t seen;   /* HELLO */
    uint64_t ls_inner_seq; /* LSU: ls.ls_seq */
    jn_mesh_strs_t peers;  /* LSU: ls.peers, val = cost */
    /* MAU: keys; val = hint (-1 when no usable hint) */
    bool has_add, has_del, has_exist;
    jn_mesh_strs_t add, del, exist;
    /* MAU hints as read (applied to add/exist by the parser) */
    int64_t *hints;
    size_t n_hints;
} jn_mesh_msg_t;

/* jn_mesh_parse: read msg (complete) into *out (zeroed first). Returns 0
 * (out->op JN_MESH_OP_UNKNOWN for an opcode this engine does not handle),
 * JN_EPROTO with *reason set (static string) for a malformed message, or
 * JN_ENOMEM. out must be released with jn_mesh_msg_fini in every case. */
int jn_mesh_parse(jn_message_t *msg, jn_mesh_msg_t *out, const char **reason);
void jn_mesh_msg_fini(jn_mesh_msg_t *m);

/* Composers ("Control messages", the envelopes): a complete message parsed to
 * JN_DEPTH_PROPERTIES, or NULL on ENOMEM. id/target are NUL-terminated. */
jn_message_t *jn_mesh_compose_hello(const char *id, int64_t instance, const jn_mesh_strs_t *seen);
jn_message_t *jn_mesh_compose_ra(const char *id, int64_t instance, uint64_t ls_seq,
                                 uint64_t mobile_seq);
jn_message_t *jn_mesh_compose_lsr(const char *id, const char *target);
/* peers: val = cost */
jn_message_t *jn_mesh_compose_lsu(const char *id, int64_t instance, const char *target,
                                  uint64_t ls_seq, const jn_mesh_strs_t *peers);
/* add/exist: val = hint */
jn_message_t *jn_mesh_compose_mau_diff(const char *id, uint64_t mobile_seq,
                                       const jn_mesh_strs_t *add, const jn_mesh_strs_t *del);
jn_message_t *jn_mesh_compose_mau_abs(const char *id, const char *target, uint64_t mobile_seq,
                                      const jn_mesh_strs_t *exist);
jn_message_t *jn_mesh_compose_mar(const char *id, const char *target, uint64_t have_seq);

/* ---- the engine --------------------------------------------------------- */

/* One known remote router ("Link state and routes"). Core thread only. */
typedef struct jn_mesh_node {
    int index; /* router index 1..127 */
    char *id;
    size_t id_len;
    /* neighbour: the bound inter-router link, or -1; last confirming HELLO */
    int link;
    int64_t neighbour_ms;
    /* its link state as last received (peers: val = cost); the highest
     * ls_seq its RAs announced for this instance (above ls_seq: the link
     * state held is stale, path.c) */
    uint64_t ls_seq;
    uint64_t ra_ls_seq;
    jn_mesh_strs_t peers;
    uint32_t *peer_costs; /* peers' costs as uint32, for jn_mesh_foreach_router_CT */
    size_t peer_costs_cap;
    int64_t ls_seen_ms;
    int64_t last_topo_change_ms;
    int64_t instance; /* 0 = not known */
    int64_t version;  /* pv it was created with */
    /* duplicate id detection (linkstate.c): the instance before the last
     * restart, when that restart was seen, and an instance found to be a
     * second live router with this id (its messages are ignored) */
    int64_t prev_instance, restart_ms, banned_instance;
    bool lsr_pending;
    /* it asked for this router's link state before this router had a
     * route to it: answered once it has one (linkstate.c) */
    bool lsu_pending;
    unsigned unref_ticks; /* ticks found unreferenced (never reset) */
    /* result of the last computation (path.c) */
    bool reachable;
    int first_hop; /* index of the neighbour the path starts with */
    uint32_t cost;
    uint32_t hops;
    jn_mesh_bits_t valid_origins;
    jn_mesh_bits_t mc_origins; /* the valid origins sure to hold (path.c) */
    /* what the core was last told (path.c) */
    bool rep_reachable;
    int rep_link, rep_next_hop;
    uint32_t rep_cost;
    jn_mesh_bits_t rep_vo, rep_mc;
    /* mobile addresses it advertised: key -> hint (jn_mesh_hint_value) */
    jn_hash_t *mobile;
    uint64_t mobile_seq;    /* S, "Mobile addresses" */
    uint64_t ra_mobile_seq; /* highest mobile_seq seen in its RAs */
    bool mar_pending;
    bool mar_outstanding;
} jn_mesh_node_t;

/* One inter-router link slot as the engine knows it. */
typedef struct jn_mesh_link {
    bool present;
    uint32_t cost;
} jn_mesh_link_t;

struct jn_mesh {
    /* error lines about peers' bad input, per tick (engine.c complain) */
    int64_t complain_ms;
    unsigned complaints, suppressed;
    /* identity and configuration (immutable after create; times in ms) */
    char *id;
    size_t id_len;
    int64_t instance;
    uint32_t hello_interval; /* in ticks */
    int64_t hello_max_age_ms;
    int64_t ra_ms, ra_flux_ms;
    int64_t ls_max_age_ms;
    jn_mesh_ops_t ops;
    const void *ct_role; /* JN_ASSERT_CT */

    /* clock */
    bool started;
    int64_t now_ms;
    int64_t next_tick_ms;
    uint64_t ticks;
    bool ra_sent;
    int64_t last_ra_ms;
    int64_t last_topo_change_ms;

    jn_mesh_link_t links[JN_MESH_MAX_LINKS];

    /* HELLO: ids heard within hello_max_age (val = time heard) */
    jn_mesh_strs_t seen;
    bool dup_logged;
    jn_hash_t *pv_logged; /* ids whose pv > 1 was logged */

    /* own link state (val = cost) */
    uint64_t ls_seq;
    jn_mesh_strs_t peers;
    bool own_changed; /* peers changed since the last tick */
    bool recompute;

    /* node table: by index (0 unused) and by id */
    jn_mesh_node_t *nodes[JN_MESH_MAX_ROUTERS];
    jn_hash_t *by_id;
    uint32_t radius;

    /* mobile (mobile.c): key -> hint */
    uint64_t mobile_seq;
    jn_hash_t *local;       /* keys with a local destination now */
    jn_hash_t *pending_add; /* to go in the next differential MAU */
    jn_hash_t *pending_del;
    bool mobile_changed; /* a differential MAU went out this tick */
};

/* engine.c */
jn_mesh_node_t *jn_mesh_node_find_CT(const jn_mesh_t *mesh, const char *id, size_t len);
/* find or create (router_added is called for a new one); NULL on ENOMEM or
 * when all 127 indices are taken (logged) */
jn_mesh_node_t *jn_mesh_node_get_CT(jn_mesh_t *mesh, const char *id, size_t len);
/* neighbour, or has a path in the last computation */
bool jn_mesh_node_reachable(const jn_mesh_node_t *node);
/* true when an error line about a peer's bad input may be written now: at
 * most JN_MESH_COMPLAINTS per tick, the rest are counted and summed up in
 * one line on the next tick, so a hostile or broken peer cannot flood the
 * log */
#define JN_MESH_COMPLAINTS 5
bool jn_mesh_complain_CT(jn_mesh_t *mesh);

/* linkstate.c */
/* expire the seen list; send HELLO when this tick is a hello tick */
void jn_mesh_hello_tick_CT(jn_mesh_t *mesh);
/* neighbour (HELLO age) and stored link-state (remote_ls_max_age) expiry */
void jn_mesh_expire_CT(jn_mesh_t *mesh);
/* handlers of parsed messages from another router: 0 or JN_ENOMEM */
int jn_mesh_on_hello_CT(jn_mesh_t *mesh, int link, uint32_t cost, const jn_mesh_msg_t *m);
int jn_mesh_on_ra_CT(jn_mesh_t *mesh, const jn_mesh_msg_t *m);
int jn_mesh_on_lsr_CT(jn_mesh_t *mesh, const jn_mesh_msg_t *m);
int jn_mesh_on_lsu_CT(jn_mesh_t *mesh, const jn_mesh_msg_t *m);
/* send an LSR to node now and clear its pending flag */
void jn_mesh_send_lsr_CT(jn_mesh_t *mesh, jn_mesh_node_t *node);
/* send node this router's link state (an LSU answering its LSR) now and
 * clear its pending flag */
void jn_mesh_send_lsu_CT(jn_mesh_t *mesh, jn_mesh_node_t *node);

/* path.c: recompute routes from the own and stored link states and tell
 * the core what changed. */
void jn_mesh_compute_CT(jn_mesh_t *mesh);

/* mobile.c */
int jn_mesh_mobile_init(jn_mesh_t *mesh);
void jn_mesh_mobile_fini(jn_mesh_t *mesh);
/* the batch timer: send the pending differential MAU, if any */
void jn_mesh_mobile_flush_CT(jn_mesh_t *mesh);
/* unmap every key learned from node (mobile_removed each) and reset S(X) */
void jn_mesh_mobile_forget_CT(jn_mesh_t *mesh, jn_mesh_node_t *node);
/* the tick's MAR requests ("Mobile addresses") */
void jn_mesh_mobile_requests_CT(jn_mesh_t *mesh);
int jn_mesh_on_mau_CT(jn_mesh_t *mesh, jn_mesh_msg_t *m);
int jn_mesh_on_mar_CT(jn_mesh_t *mesh, jn_mesh_msg_t *m);

#endif /* JUNCTION_MESH_PRIVATE_H */
