/*
 * junction/mgmt.h — the `$management` agent: answers AMQP management
 * requests as qdrouterd 1.19 does (docs/protocol.md,
 * "Management requests"), so that qdmanage, qdstat and junction-manage work.
 *
 * The core hands each request message to the agent on the core thread
 * (jn_core_set_management with jn_mgmt_request_CT); the agent decodes its
 * application properties and body, carries out the operation and sends the
 * reply — properties `to` = the request's reply-to, correlation-id = the
 * request's correlation-id (else its message-id), application properties
 * statusCode/statusDescription, amqp-value body — back through the core.
 *
 * What it serves:
 *   - configured entities it keeps itself (from the config file at start,
 *     then CREATE/DELETE): listener, connector (both acting on the I/O layer
 *     through the hooks below), router.config.address (acting on the core's
 *     address configuration), sslProfile, router.config.linkRoute and
 *     router.config.autoLink (stored and listed only);
 *   - run-time entities read from the core (junction/core_view.h):
 *     connection, router.link, router.address, router, and router.node
 *     (through the foreach_router hook; none without it);
 *   - log (one per module, UPDATE acts at once), allocator (pool
 *     statistics, junction/pool.h) and the management node itself;
 *   - the node operations GET-TYPES, GET-ATTRIBUTES, GET-OPERATIONS,
 *     GET-ANNOTATIONS, GET-MGMT-NODES, GET-SCHEMA, GET-LOG.
 *
 * Threads: jn_mgmt_create, jn_mgmt_load_config and jn_mgmt_free on the main
 * thread (before the core starts / after it stopped); everything else on
 * the core thread. The agent has no lock and no thread of its own.
 */
#ifndef JUNCTION_MGMT_H
#define JUNCTION_MGMT_H 1

/* The largest management request answered, in octets (whole message).
 * Real requests are a few KiB (a CREATE with every attribute, a QUERY
 * naming 256 attributes); decoding one runs on the core thread, so a
 * larger one is dropped with a log line instead (a 61 MB CREATE held all
 * routing up for 1.5 s). */
#define JN_MGMT_MAX_REQUEST (1024u * 1024)

#include <junction/config.h>
#include <junction/core.h>
#include <junction/io.h>
#include <junction/mesh.h>

typedef struct jn_mgmt jn_mgmt_t;

/* How the agent reaches what is outside jn_mgmt. Every hook is called on
 * the core thread, inside a request, and must not block for long. */
typedef struct jn_mgmt_config {
    const char *router_id; /* copied; required */
    const char *mode;      /* "standalone", "interior", "edge" (copied; NULL: standalone) */
    const char *version;   /* router version shown (copied; NULL: "unknown") */
    const char *metadata;  /* router.metadata (copied; may be NULL) */
    unsigned worker_threads;
    uint64_t max_message_size; /* policy.maxMessageSize for created endpoints (0: none) */

    /* The core whose state is shown (connections, links, addresses,
     * statistics) and to which address entities apply. NULL (unit tests):
     * no run-time rows, statistics 0, address entities stored only. */
    jn_core_t *core;

    /* send: hand a reply over (the reference passes in every case).
     * NULL: jn_core_send_CT. Returns 0 or a JN_E* code (logged). */
    int (*send)(void *send_ctx, jn_core_t *core, jn_message_t *reply);
    void *send_ctx;

    /* I/O hooks for CREATE/DELETE of listener and connector (typically
     * jn_io_add_listener, jn_io_add_connector, jn_io_remove_endpoint with
     * io_ctx the jn_io_t). The endpoint's name is the entity's name. A hook
     * left NULL makes the operation store/forget the entity without
     * acting. add_* return 0, JN_EINVAL (bad attribute: 400), JN_ENOMEM;
     * remove returns 0 or JN_ENOENT. */
    void *io_ctx;
    int (*add_listener)(void *io_ctx, const jn_endpoint_config_t *cfg);
    int (*add_connector)(void *io_ctx, const jn_endpoint_config_t *cfg);
    int (*remove_endpoint)(void *io_ctx, const char *name);

    /* Router nodes (router.node, GET-MGMT-NODES): call fn(arg, info) for
     * every known remote router, stopping when fn returns false — the
     * shape of jn_mesh_foreach_router_CT. NULL (standalone): router.node and
     * GET-MGMT-NODES answer empty lists, as 1.19 does on a standalone
     * router. When set, the local router is listed first (index
     * 0, nextHop "(self)"). */
    void (*foreach_router)(void *nodes_ctx,
                           bool (*fn)(void *arg, const jn_mesh_router_info_t *info), void *arg);
    void *nodes_ctx;
} jn_mgmt_config_t;

/* jn_mgmt_create: an agent with no configured entities. cfg is copied
 * (strings too). Returns NULL on ENOMEM or a NULL/empty router id. Main
 * thread. */
jn_mgmt_t *jn_mgmt_create(const jn_mgmt_config_t *cfg);

/* jn_mgmt_free: free the agent and the entities it keeps (acting on
 * nothing). NULL is ignored. Main thread, after the core stopped. */
void jn_mgmt_free(jn_mgmt_t *agent);

/* jn_mgmt_load_config: keep the configured entities of cfg (listener,
 * connector, address, sslProfile, linkRoute, autoLink) so that QUERY and
 * READ list them, in file order, with the identities 1.19 gives. It does
 * not act on them (junctiond's main has already applied the file). cfg is
 * only read during the call. Returns 0 or JN_ENOMEM. Main thread, before
 * jn_core_start. */
int jn_mgmt_load_config(jn_mgmt_t *agent, const jn_config_t *cfg);

/* jn_mgmt_request_CT: answer one request (a jn_core_request_fn: pass it
 * with the agent as ctx to jn_core_set_management). request is complete,
 * parsed to JN_DEPTH_ALL, borrowed. A request without reply-to is dropped
 * with a log line (AGENT, info); a malformed one is answered 400 when it
 * has a reply-to. Core thread. */
void jn_mgmt_request_CT(void *agent, jn_core_t *core, jn_message_t *request);

/* jn_mgmt_entity_count: how many configured entities the agent keeps (for
 * tests and logs). Core thread (or main before start). */
size_t jn_mgmt_entity_count(const jn_mgmt_t *agent);

#endif /* JUNCTION_MGMT_H */
