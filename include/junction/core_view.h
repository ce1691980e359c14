/*
 * junction/core_view.h — a read-only view of the core's state for the
 * management agent (router/mgmt), and the few run-time changes management
 * makes to the core (address configuration, closing a connection).
 *
 * The view functions walk the core's own structures (connections, links,
 * the address table) and fill plain structs, one per item, handing each to
 * a callback. Strings in those structs are borrowed from the core and are
 * valid only during the callback. Nothing is copied or locked: every
 * function here runs on the core thread (hence _CT), typically inside the
 * jn_core_request_fn the agent registered, where no other thread changes
 * these structures.
 *
 * Paging: each walk takes an offset (items to skip) and a maximum (items
 * to hand to the callback) and returns the total number of items, so the
 * agent can answer a QUERY page by page (docs/protocol.md, "Management requests"). A
 * walk costs one pointer step per item, whatever the page.
 *
 * Counters the core does not keep (delayed and stuck deliveries, settle
 * rates, per-connection last delivery) are not in these structs;
 * management reports them as 0 or null.
 */
#ifndef JUNCTION_CORE_VIEW_H
#define JUNCTION_CORE_VIEW_H 1

#include <junction/core.h>
#include <junction/mesh.h>

#include <string.h>

/* One connection (management `connection`). */
typedef struct jn_view_conn {
    uint64_t id;           /* connection id, as in logs [C<id>] */
    const char *container; /* the peer's container id ("" if none) */
    const char *host;      /* peer "host:port" (incoming) or connector "host:port" */
    bool incoming;         /* accepted by a listener */
    bool inter_router;     /* role inter-router */
    bool edge;             /* role edge (an edge router's uplink to us) */
    bool route_container;  /* role route-container */
    /* false only for an edge router's connection of role edge that is not
     * its uplink (a standby interior, 1.19's `active`) */
    bool active;
    uint32_t link_capacity;
    uint32_t links;    /* links attached on it */
    /* the peer's open properties, an encoded map with string keys
     * (jn_conn_info_t), or NULL/0; valid during the callback */
    const uint8_t *properties;
    size_t properties_len;
    int64_t opened_us; /* wall clock when it opened (microseconds since the epoch) */
    /* seconds since a delivery last arrived on it or was handed to it
     * (lastDlvSeconds), -1 when none has yet */
    int64_t last_dlv_s;
    /* security (jn_conn_info_t): strings NULL when none */
    bool encrypted;
    const char *ssl_proto, *ssl_cipher;
    uint32_t ssl_ssf;
    bool authenticated;
    const char *user, *sasl_mechanism;
    bool admin_deleted; /* closing by management (adminStatus "deleted") */
    const char *tenant; /* its tenant space "<vhost>/", or NULL (tenant.c) */
} jn_view_conn_t;

/* One link (management `router.link`). */
typedef struct jn_view_link {
    uint64_t id;      /* link id, as in logs [L<id>] */
    uint64_t conn_id; /* its connection */
    const char *name; /* AMQP link name */
    jn_link_dir_t dir;
    jn_link_type_t type; /* endpoint, or inter-router control / data */
    /* the address table key it is attached to (e.g. "M0q1"), key_len
     * octets, not NUL-terminated; NULL for an anonymous sender or none;
     * a link-routed link: its terminus address, owning_routed set */
    const uint8_t *owning_addr;
    size_t owning_addr_len;
    bool owning_routed; /* link-routed: shown as "M0" + the terminus address, as 1.19 */
    uint32_t capacity;    /* incoming: the link's; outgoing: its connection's */
    uint64_t deliveries;  /* received (incoming) / handed out (outgoing) */
    uint64_t undelivered; /* outgoing: copies waiting for credit; incoming: held */
    uint64_t unsettled;   /* outgoing: handed out, not settled; incoming:
                           * arrived unsettled, not settled yet */
    /* settled deliveries by outcome: outgoing, the consumer's; incoming,
     * the outcome the sender's deliveries were settled with */
    uint64_t accepted, rejected, released, modified;
    uint64_t credit_available; /* outgoing: credit left; incoming: credit outstanding */
    bool presettled;           /* the sender's snd-settle-mode is settled */
    /* outgoing: multicast copies dropped because its backlog was full
     * (droppedPresettledCount, docs/multicast.md) */
    uint64_t dropped;
    /* link-routed: the id of the link at the other end of the route
     * (management's `peer`), 0 otherwise */
    uint64_t peer;
    /* management's priority: an inter-router data link's (0..9, by attach
     * order), 9 for a control link (1.19's), 4 (the default message
     * priority) for the others and for data links past the first ten */
    int priority;
    /* incoming: deliveries settled 1 to 10 s / over 10 s after they
     * arrived; outgoing: unsettled copies over 10 s old (as of the last
     * figures tick, once a second) */
    uint64_t delayed1, delayed10;
    uint32_t stuck;
    /* outgoing: copies settled per second over the last five seconds */
    uint32_t settle_rate;
    /* a client's outgoing link without credit: since how many seconds
     * (seen by the figures tick); 0 otherwise */
    uint64_t zero_credit_seconds;
} jn_view_link_t;

/* Whether an address-table key (jn_view_addr_t.key) is one of this
 * router's dynamic addresses ("Ltemp.<random>", handed out by dynamic
 * attaches): such names are secrets of the client that has them, so
 * /metrics counts them together and never shows them. Any thread. */
static inline bool jn_view_key_is_dynamic(const uint8_t *key, size_t len)
{
    return len >= 6 && memcmp(key, "Ltemp.", 6) == 0;
}

/* One entry of the address table (management `router.address`). */
typedef struct jn_view_addr {
    const uint8_t *key; /* hash key, e.g. "M0q1" (key_len octets, no NUL) */
    size_t key_len;
    jn_distribution_t distribution;
    uint32_t consumers;  /* local outgoing links */
    uint32_t producers;  /* local incoming links */
    uint32_t in_process; /* in-process destinations (the management agent) */
    uint32_t remote;     /* remote routers with a destination for it */
    /* their router ids (n_remote_hosts of them; borrowed for the callback) */
    const char *const *remote_hosts;
    uint32_t n_remote_hosts;
    /* deliveries: entered the mesh here, copies to local consumers, copies
     * to other routers, served in-process, composed by the router */
    uint64_t ingress, egress, transit, to_container, from_container;
    int priority; /* the address entity's priority, -1 when none */
    uint64_t redirected; /* deliveries that went to its fallback */
    /* a link route's key (C/D/E/F): distribution linkBalanced, and its
     * containers connected here (routes of this router only) */
    bool link_route;
    uint32_t containers;
} jn_view_addr_t;

/* jn_core_view_conns_CT / _links_CT / _addrs_CT: call fn(ctx, item) for
 * items [offset, offset + max) in the core's order (connections: newest
 * first; links: by connection, then newest first; addresses: table order);
 * fn returning false stops the calls (not the count). Return the total
 * number of items. max 0 only counts. Core thread. */
size_t jn_core_view_conns_CT(jn_core_t *core, size_t offset, size_t max,
                             bool (*fn)(void *ctx, const jn_view_conn_t *conn), void *ctx);
size_t jn_core_view_links_CT(jn_core_t *core, size_t offset, size_t max,
                             bool (*fn)(void *ctx, const jn_view_link_t *link), void *ctx);
size_t jn_core_view_addrs_CT(jn_core_t *core, size_t offset, size_t max,
                             bool (*fn)(void *ctx, const jn_view_addr_t *addr), void *ctx);

/* jn_core_view_conn_CT / _link_CT: the one connection / link with id, into
 * *out (strings borrowed until the core thread goes back to its loop).
 * Returns 0 or JN_ENOENT. Core thread. */
int jn_core_view_conn_CT(jn_core_t *core, uint64_t id, jn_view_conn_t *out);
int jn_core_view_link_CT(jn_core_t *core, uint64_t id, jn_view_link_t *out);

/* jn_core_view_routers_CT: call fn(arg, info) for every remote router the
 * mesh knows (jn_mesh_foreach_router_CT; info borrowed for the call), until
 * fn returns false. Nothing on a router without a mesh (not interior).
 * The shape of jn_mgmt_config_t.foreach_router with ctx = the core. Core
 * thread. */
void jn_core_view_routers_CT(void *core, bool (*fn)(void *arg, const jn_mesh_router_info_t *info),
                             void *arg);

/* jn_core_conn_close_CT: close connection id with an optional error
 * condition and description (copied; NULL for none), as a
 * JN_WORK_CONN_CLOSE to its I/O thread; until it is gone its view says
 * admin_deleted. Returns 0 (also when it is closing by management
 * already), JN_ENOENT (no such open connection), JN_EPERM (an inter-router
 * or edge connection: never closed by management, as 1.19), JN_ENOMEM. Core
 * thread. */
int jn_core_conn_close_CT(jn_core_t *core, uint64_t id, const char *condition,
                          const char *description);

/* jn_core_address_config_add_CT: an `address` entity created at run time:
 * as jn_core_add_address_config (same matching, same errors except that
 * the core may be running), for addresses created from now on (an address
 * already in the table keeps its distribution); mc_backpressure as
 * jn_core_set_address_backpressure. Core thread. */
int jn_core_address_config_add_CT(jn_core_t *core, const char *prefix_or_pattern, bool pattern,
                                  jn_distribution_t distribution, bool mc_backpressure);

/* jn_core_address_config_set_phases_CT: the entry added last (by
 * jn_core_address_config_add_CT, which must have returned 0 just before)
 * has these phases (0..9; `waypoint: yes` is egress 1): links attached
 * from now on to a matching address use the ingress phase when they send
 * to the router, the egress phase when they receive (the address-hash key
 * M<phase><address>, docs/protocol.md, "Address keys"). Returns 0, or JN_EINVAL for a
 * phase out of range or no entry. Core thread. */
int jn_core_address_config_set_phases_CT(jn_core_t *core, int ingress, int egress);

/* jn_core_address_config_set_fallback_CT: the entry added last has
 * enableFallback: a delivery to a matching address (created from now on)
 * that finds no destination goes to the destinations of its fallback
 * (key M F <address>: receivers with the qd.fallback capability, fallback
 * auto-links), and its senders get credit while either has one. Returns
 * 0, or JN_EINVAL when there is no entry. Core thread. */
int jn_core_address_config_set_fallback_CT(jn_core_t *core, bool on);

/* jn_core_address_config_set_priority_CT: the entry added last has this
 * priority (0..9; -1: none): deliveries to a matching address (created
 * from now on) leave for another router on the inter-router data link of
 * that priority, whatever their header's priority says (1.19's address
 * priority; the next routers go by the header again unless they have one
 * of their own). Returns 0, or JN_EINVAL for a priority out of range or no
 * entry. Core thread. */
int jn_core_address_config_set_priority_CT(jn_core_t *core, int priority);

/* jn_core_address_config_remove_CT: remove the entry added with the same
 * text and kind (compared as stored: separators at the end dropped, a
 * pattern's '#' runs collapsed). Addresses
 * already in the table keep their distribution. Returns 0 or JN_ENOENT.
 * Core thread. */
int jn_core_address_config_remove_CT(jn_core_t *core, const char *prefix_or_pattern, bool pattern);

/* ---- link routes and auto-links (router/core/linkroute*.c, autolink.c) - */

/* A `linkRoute` entity (docs/design.md, "Link routes and auto-links").
 * Strings are copied; NULL for an attribute not given. */
typedef struct jn_link_route_config {
    const char *name;    /* the entity's name (the key for removal) */
    const char *prefix;  /* exactly one of prefix and pattern */
    const char *pattern;
    /* JN_LINK_INCOMING for direction `in` (the client sends: the router
     * receives on the link), JN_LINK_OUTGOING for `out` */
    jn_link_dir_t dir;
    /* the container's connection, which must be of role route-container
     * (as in 1.19): its container id, or its listener's/connector's name */
    const char *container_id;
    const char *connection;
    const char *add_external_prefix; /* put before the address toward the container */
    const char *del_external_prefix; /* taken off its start first, when there */
    /* router.connection.linkRoute: the id of the connection that is its
     * container (removed when that connection closes); 0 otherwise */
    uint64_t conn_id;
} jn_link_route_config_t;

/* jn_core_link_route_add_CT: route attaches whose address matches (prefix
 * or pattern, address_config.h's matching, a '.' or '/' ending it
 * dropped for matching and for the mesh key; the most specific wins) and
 * whose direction is dir to the container, from now on. Link routes with
 * the same prefix or pattern and direction coexist, as in 1.19: an attach
 * goes to the first of them (in the order added) whose container is
 * connected here, else across the mesh. Returns 0; JN_EEXIST when a link
 * route of that name exists; JN_EINVAL for a missing (or only-separator)
 * prefix/pattern or name; JN_ENOMEM. A link route naming no container
 * (neither containerId nor connection) only relays: its attaches go to
 * the router that advertises the container, or are refused. Core
 * thread. */
int jn_core_link_route_add_CT(jn_core_t *core, const jn_link_route_config_t *cfg);

/* jn_core_link_route_remove_CT: remove the link route named name; links
 * routed already stay routed. Returns 0 or JN_ENOENT. Core thread. */
int jn_core_link_route_remove_CT(jn_core_t *core, const char *name);

/* jn_core_link_route_status_CT: "active" while a connection to the link
 * route's container (route-container) is open, else "inactive"; NULL when no such link
 * route. Static string. Core thread. */
const char *jn_core_link_route_status_CT(jn_core_t *core, const char *name);

/* jn_core_conn_link_route_add_CT: a router.connection.linkRoute created
 * over connection conn_id (docs/design.md, "Link routes and auto-links"):
 * attaches matching pattern in direction dir are routed to that
 * connection until it closes or the route is removed. name: unique on
 * that connection; *identity (may be NULL) gets the route's identity.
 * Returns 0; JN_ENOENT (no such open normal connection), JN_EINVAL (no
 * name or pattern), JN_EEXIST (the name on that connection, or the
 * pattern and direction of another link route), JN_ENOMEM. Core thread. */
int jn_core_conn_link_route_add_CT(jn_core_t *core, uint64_t conn_id, const char *name,
                                   const char *pattern, jn_link_dir_t dir, uint64_t *identity);

/* jn_core_conn_link_route_remove_CT: remove connection conn_id's link
 * route with identity (when not 0), else named name. 0 or JN_ENOENT. Core
 * thread. */
int jn_core_conn_link_route_remove_CT(jn_core_t *core, uint64_t conn_id, const char *name,
                                      uint64_t identity);

/* One connection-scoped link route; strings borrowed until the next core
 * change. */
typedef struct jn_conn_link_route {
    const char *name;
    uint64_t identity;
    const char *pattern;
    jn_link_dir_t dir;
    const char *container_id; /* its connection's container id */
} jn_conn_link_route_t;

/* jn_core_conn_link_route_at_CT: the index-th (from 0) link route of
 * connection conn_id in *out. 0, or JN_ENOENT past the last. Core
 * thread. */
int jn_core_conn_link_route_at_CT(jn_core_t *core, uint64_t conn_id, size_t index,
                                  jn_conn_link_route_t *out);

/* An `autoLink` entity. Strings copied; NULL when not given. */
typedef struct jn_autolink_config {
    const char *name;
    const char *address;          /* the router's address */
    /* JN_LINK_INCOMING for direction `in` (from the container into the
     * router), JN_LINK_OUTGOING for `out` */
    jn_link_dir_t dir;
    int phase;                    /* -1: the default (in 1, out 0) */
    /* the container's route-container connection, as a link route's */
    const char *container_id;
    const char *connection;
    const char *external_address; /* the container's address (NULL: address) */
    bool fallback;
} jn_autolink_config_t;

/* jn_core_autolink_add_CT: attach a link on every open connection to the
 * container (or made by the named listener or connector): now on those
 * open, later on each that opens. Returns 0; JN_EEXIST (same
 * name); JN_EINVAL (no address or name); JN_ENOMEM. One naming no
 * container never attaches. Core thread. */
int jn_core_autolink_add_CT(jn_core_t *core, const jn_autolink_config_t *cfg);

/* jn_core_autolink_remove_CT: detach its links and forget it. 0 or
 * JN_ENOENT. Core thread. */
int jn_core_autolink_remove_CT(jn_core_t *core, const char *name);

/* jn_core_autolink_status_CT: the auto-link's operStatus ("inactive": no
 * connection to its container, "attaching", "failed", "active"; static;
 * with several connections the best: active, attaching, failed) and its
 * lastError (borrowed until the next core change, NULL: none) and the id
 * of the link with that status (0: none). Returns 0 or JN_ENOENT. Core thread. */
int jn_core_autolink_status_CT(jn_core_t *core, const char *name, const char **oper_status,
                               const char **last_error, uint64_t *link_id);

/* ---- exchanges and bindings (router/core/exchange.c) -------------------- */

/* A `router.config.exchange` entity (docs/design.md, "Exchanges and
 * bindings"). Strings are copied; NULL for an attribute not given. */
typedef struct jn_exchange_config {
    const char *name;      /* the entity's name (the key for removal) */
    const char *address;   /* the address senders send to */
    int phase;             /* 0..9 */
    const char *alternate; /* alternateAddress, or NULL */
    int alternate_phase;   /* 0..9 */
    bool mqtt;             /* matchMethod mqtt ('/', '+', '#'), else amqp */
} jn_exchange_config_t;

/* jn_core_exchange_add_CT: from now on, deliveries that reach this router
 * for M<phase><address> go through the exchange: matched by their subject
 * against its bindings' keys, a pre-settled copy to each distinct next hop
 * that matches, else to the alternate address; the address is advertised
 * to the mesh while the exchange lives. Returns 0, or a negative code
 * with *why set to 1.19's description (static): JN_EEXIST ("duplicate
 * exchange address" / "duplicate exchange name"), JN_EINVAL (a phase out
 * of 0..9, no name or address), JN_ENOMEM. Core thread. */
int jn_core_exchange_add_CT(jn_core_t *core, const jn_exchange_config_t *cfg, const char **why);

/* jn_core_exchange_remove_CT: remove the exchange named name and all its
 * bindings (their names are given to gone(ctx, name) first, may be NULL);
 * the address goes back to an ordinary one. Returns 0 or JN_ENOENT. Core
 * thread. */
int jn_core_exchange_remove_CT(jn_core_t *core, const char *name,
                               void (*gone)(void *ctx, const char *binding), void *ctx);

/* A `router.config.binding` entity. Strings copied; NULL when not given. */
typedef struct jn_binding_config {
    const char *name;     /* the entity's name (or identity) */
    const char *exchange; /* exchangeName */
    const char *key;      /* bindingKey; NULL: "#" (every subject) */
    const char *next_hop; /* nextHopAddress */
    int next_hop_phase;   /* 0..9 */
} jn_binding_config_t;

/* jn_core_binding_add_CT: add a binding to its exchange. Returns 0, or a
 * negative code with *why set to 1.19's description (static): JN_ENOENT
 * ("Named exchange does not exist"), JN_EINVAL ("The binding key pattern
 * is invalid", "phase must be in the range 0-9", "No next hop
 * specified"), JN_EEXIST ("Duplicate next hop name", "Next hop for key
 * already exists"), JN_ENOMEM. Core thread. */
int jn_core_binding_add_CT(jn_core_t *core, const jn_binding_config_t *cfg, const char **why);

/* jn_core_binding_remove_CT: remove the binding named name. 0 or
 * JN_ENOENT. Core thread. */
int jn_core_binding_remove_CT(jn_core_t *core, const char *name);

/* An exchange's management figures (router.config.exchange). */
typedef struct jn_exchange_stats {
    int phase;
    const char *alternate; /* borrowed until the next core change; NULL: none */
    int alternate_phase;
    uint64_t bindings, received, dropped, forwarded, diverted;
} jn_exchange_stats_t;

/* jn_core_exchange_stats_CT / jn_core_binding_matched_CT: an exchange's
 * figures; a binding's matchedCount. 0 or JN_ENOENT. Core thread. */
int jn_core_exchange_stats_CT(jn_core_t *core, const char *name, jn_exchange_stats_t *out);
int jn_core_binding_matched_CT(jn_core_t *core, const char *name, uint64_t *out);

#endif /* JUNCTION_CORE_VIEW_H */
