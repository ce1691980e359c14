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
 *     then CREATE/DELETE and reload, all through one entity path):
 *     listener, connector (acting on the I/O layer through the hooks
 *     below), router.config.address (acting on the core's address
 *     configuration); a type the router does not implement yet
 *     (sslProfile, linkRoute, autoLink...) is refused by name;
 *   - run-time entities read from the core (junction/core_view.h):
 *     connection, router.link, router.address, router, and router.node
 *     (through the foreach_router hook; none without it);
 *   - log (one per module, UPDATE acts at once), allocator (pool
 *     statistics, junction/pool.h) and the management node itself;
 *   - the node operations GET-TYPES, GET-ATTRIBUTES, GET-OPERATIONS,
 *     GET-ANNOTATIONS, GET-MGMT-NODES, GET-SCHEMA, GET-LOG;
 *   - vhost (CREATE, UPDATE, DELETE act on the policy layer's table,
 *     jn_mgmt_config_t.policy) and vhostStats (read from that table).
 *
 * The agent acts on the I/O and HTTP layers (above it) only through the
 * hooks of jn_mgmt_config_t that main.c fills in at start; the data those
 * hooks carry are described below both: endpoints in junction/endpoint.h,
 * the residence histogram in junction/core.h, the policy entity's
 * connection figures in junction/policy.h (lint.layers holds this).
 *
 * Threads: jn_mgmt_create and jn_mgmt_free on the main thread (before the
 * core starts / after it stopped), jn_mgmt_plan_config anywhere,
 * jn_mgmt_apply_logs on the main thread; everything else on the core
 * thread. The agent has no lock and no thread of its own.
 */
#ifndef JUNCTION_MGMT_H
#define JUNCTION_MGMT_H 1

/* The largest management request answered, in octets (whole message).
 * Real requests are a few KiB (a CREATE with every attribute, a QUERY
 * naming 256 attributes); decoding one runs on the core thread, so a
 * larger one is not decoded (a 61 MB CREATE held all routing up for
 * 1.5 s): only its properties are read, and it is answered with status
 * 400 naming the limit (docs/compat.md). */
#define JN_MGMT_MAX_REQUEST (1024u * 1024)

#include <junction/config.h>
#include <junction/core.h>
#include <junction/endpoint.h>
#include <junction/mesh.h>
#include <junction/policy.h>
#include <stdio.h>

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
    uint32_t max_connections;  /* policy.maxConnections, shown by the policy entity */
    bool enable_vhost_policy;  /* policy.enableVhostPolicy, shown */
    bool enable_vhost_name_patterns; /* policy.enableVhostNamePatterns, shown */
    const char *default_vhost; /* policy.defaultVhost, shown (copied; NULL: "$default") */
    const char *policy_dir;    /* policy.policyDir, shown (copied; NULL: "") */
    /* policy_stats: the policy entity's connection figures (typically
     * jn_io_policy_stats over io_ctx). NULL: shown as 0. */
    void (*policy_stats)(void *io_ctx, jn_policy_conn_stats_t *out);
    /* policy: the vhost policy's table (junction/policy.h; borrowed, it
     * outlives the agent): vhostStats reads its figures, and a vhost
     * created, updated (replaced by hostname) or deleted through
     * management goes into it. NULL: no vhostStats rows, and vhosts
     * cannot change at run time. */
    jn_policy_t *policy;
    /* residence: the residence-time histogram (/metrics; typically
     * jn_io_residence_read over io_ctx). Any thread. NULL: not shown. */
    void (*residence)(void *io_ctx, jn_residence_t *out);
    /* router.metricsAddressLimit: /metrics shows per-address counters for
     * at most this many addresses (0: none) */
    uint32_t metrics_address_limit;

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
    /* listener_port: the port the listener called name listens on (a
     * listener configured with port 0 gets one from the system), as
     * decimal text in buf (cap octets). Returns 0, or JN_ENOENT when no
     * such listener listens. May be NULL. */
    int (*listener_port)(void *io_ctx, const char *name, char *buf, size_t cap);
    /* connector_status: jn_io_connector_status (a connector's
     * connectionStatus and connectionMsg); NULL: not shown. */
    int (*connector_status)(void *io_ctx, const char *name, bool *opened, char *msg, size_t cap);
    /* connector_failover_urls: jn_io_connector_failover_urls (a
     * connector's failoverUrls); NULL: not shown. */
    int (*connector_failover_urls)(void *io_ctx, const char *name, char *buf, size_t cap);
    /* listen_error: why the last add_listener that failed on this thread
     * could not listen (the system's words: "Address already in use"),
     * for the 400's description; "" when unknown. May be NULL. */
    const char *(*listen_error)(void *io_ctx);

    /* TLS and SASL hooks (typically over junction/tls.h and the I/O
     * layer's profile registry and Cyrus checks). Each may be NULL: the
     * feature is then refused by name.
     *   add_tls_profile: build an sslProfile from attribute values (get(
     *     get_ctx, "certFile")...) and, when register_it, register it with
     *     the I/O layer under name (replacing one of that name: new
     *     connections use it, open ones keep theirs). Returns 0, or an
     *     error with err (errlen octets) and *bad_attr (the attribute at
     *     fault, or NULL) set.
     *   remove_tls_profile: unregister name.
     *   resolve_password: 1.19's password forms (pass:, env:, file:,
     *     literal) of spec into out (outlen octets). 0, or an error with err.
     *   check_sasl: whether a listener's SASL settings can work (its
     *     mechanisms offered by Cyrus as configured, EXTERNAL only with a
     *     profile that has CAs, authenticatePeer with a mechanism that
     *     authenticates). 0, or JN_EINVAL with err. */
    int (*add_tls_profile)(void *io_ctx, const char *name,
                           const char *(*get)(void *get_ctx, const char *attr), void *get_ctx,
                           bool register_it, char *err, size_t errlen, const char **bad_attr);
    int (*remove_tls_profile)(void *io_ctx, const char *name);
    int (*resolve_password)(const char *spec, char *out, size_t outlen, char *err,
                            size_t errlen);
    int (*check_sasl)(void *io_ctx, const jn_endpoint_config_t *ec, bool can_external,
                      char *err, size_t errlen);

    /* HTTP hooks for listeners with `http: yes` (typically the HTTP layer's
     * jn_http_add_listener, jn_http_remove_listener, jn_http_listener_port
     * with http_ctx the jn_http_t). port is decimal (service names are
     * resolved before). add returns 0, JN_EINVAL (err says why: 400),
     * JN_EEXIST, JN_ENOMEM. NULL: http listeners are refused by name. A
     * listener with websockets: yes is also added to the I/O layer as a
     * bridged listener of the same name (add_listener, cfg.bridged) before
     * add_http_listener, and removed with it. */
    void *http_ctx;
    int (*add_http_listener)(void *http_ctx, const jn_endpoint_http_config_t *cfg, char *err,
                             size_t errlen);
    int (*remove_http_listener)(void *http_ctx, const char *name);
    int (*http_listener_port)(void *http_ctx, const char *name, char *buf, size_t cap);

    /* The config file junctiond was started with (copied; NULL: the
     * built-in configuration, which cannot be reloaded). */
    const char *config_path;

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

/* ---- the entity path: config file, reload (router/mgmt/entity*.c) ---- */

/* The router-wide settings a config file gives (its router and policy
 * sections, with 1.19's defaults and Junction's: see jn_mgmt_plan_config),
 * that the core and the I/O layer are built with. */
typedef struct jn_router_settings {
    char id[128];     /* router.id, or generated: "<Mode>_" + 15 letters/digits */
    const char *sasl_config_dir;  /* router.saslConfigDir (borrowed; NULL: Cyrus's) */
    const char *sasl_config_name; /* router.saslConfigName (borrowed; NULL: "qdrouterd") */
    char mode[16];    /* "standalone" or "interior" */
    const char *metadata; /* router.metadata (borrowed from the config; may be NULL) */
    unsigned workers; /* router.workerThreads; not set: the number of online cores */
    jn_distribution_t default_distribution;
    bool interior;             /* mode interior: the mesh runs */
    uint64_t max_message_size; /* policy.maxMessageSize, octets (0: no limit) */
    uint32_t max_connections;  /* policy.maxConnections (default 65535; 0: refuse all) */
    bool enable_vhost_policy;  /* policy.enableVhostPolicy */
    bool enable_vhost_name_patterns; /* policy.enableVhostNamePatterns */
    const char *default_vhost; /* policy.defaultVhost (borrowed from the config) */
    const char *policy_dir;    /* policy.policyDir (borrowed; NULL or "": none) */
    uint32_t hello_interval, hello_max_age, ra_interval, ra_interval_flux,
        remote_ls_max_age;             /* mesh timers, seconds (0: the defaults) */
    uint32_t min_peer_idle_timeout_ms; /* router.minPeerIdleTimeoutMs (0: no floor) */
    uint32_t write_stall_timeout_s;    /* router.writeStallTimeoutSeconds (0: never) */
    uint32_t metrics_address_limit;    /* router.metricsAddressLimit (0: no per-address series) */
    bool allow_resumable_link_route;   /* router.allowResumableLinkRoute */
} jn_router_settings_t;

/* jn_mgmt_load_vhosts_CT: the vhost sections of cfg (the config file, or a
 * policyDir file that jn_mgmt_policy_dir read), in file order, through
 * the entity path as a management CREATE's vhost goes (router/mgmt
 * entity.h: one check, one apply): each becomes one of the policy layer's
 * vhosts (the jn_mgmt_config_t's policy) and a vhost row shown by READ and
 * QUERY (docs/design.md "Policy"). errors (cap octets) receives one
 * "FILE:LINE: what is wrong" line per vhost refused (a hostname an
 * earlier file or section defined, naming where; with
 * policy.enableVhostNamePatterns, a hostname pattern that matches the
 * names an earlier vhost's does). Returns the
 * number refused, or JN_ENOMEM. Main thread before the agent serves
 * requests. */
int jn_mgmt_load_vhosts_CT(jn_mgmt_t *agent, const jn_config_t *cfg, char *errors, size_t cap);

/* jn_mgmt_vhost_conflicts_in: the hostnames jn_mgmt_load_vhosts_CT
 * refuses among the vhost sections of cfg (a checked configuration) and
 * those of policy_dir (checked; NULL or "" for none), in the order a start
 * meets them: a hostname defined a second time and, when patterns
 * (policy.enableVhostNamePatterns), a hostname pattern that conflicts with
 * an earlier one; one "FILE:LINE: reason" line per vhost refused, written
 * to out. For `junctiond --check`. Returns the number of refusals, or
 * JN_ENOMEM. Main thread. */
int jn_mgmt_vhost_conflicts_in(const jn_config_t *cfg, const char *policy_dir, bool patterns,
                               FILE *out);

/* jn_mgmt_policy_dir: the vhost files of policy.policyDir (dir; NULL or
 * "": none), as 1.19 reads them: every regular file whose name ends in
 * ".json", in name order, each the JSON form of the configuration holding
 * only vhost sections. Each file is read and checked as the config file's
 * vhost sections are (a section of another type is refused); when every
 * file is sound and fn is not NULL, fn(arg, cfg) is called for each file's
 * configuration (borrowed for the call; e.g. jn_mgmt_load_vhosts_CT's).
 * errors (cap octets) receives "FILE:LINE: reason" lines ("DIR: reason"
 * when the directory cannot be read). Returns the number of refusals (0:
 * loaded), or JN_ENOMEM / fn's non-zero result as a negative count. Main
 * thread, at start. */
int jn_mgmt_policy_dir(const char *dir, int (*fn)(void *arg, const jn_config_t *cfg), void *arg,
                       char *errors, size_t cap);

/* jn_mgmt_plan_config: check every section of cfg as a CREATE would (what
 * the router implements, the value rules of each type) and, when out is
 * not NULL, read the router-wide settings into *out (warning, in the log,
 * about router attributes that only change how logs look). Nothing is
 * changed. errors (cap octets, may be NULL) receives one line per
 * refusal, "FILE:LINE: what is wrong", separated by newlines and cut to
 * fit. Returns the number of refusals (0: the file can be loaded). Any
 * thread. */
int jn_mgmt_plan_config(const jn_config_t *cfg, jn_router_settings_t *out, char *errors,
                        size_t cap);

/* jn_mgmt_apply_logs: apply cfg's `log` sections to their modules (an
 * attribute a section does not set follows DEFAULT). errors as
 * jn_mgmt_plan_config (an outputFile that cannot be opened). Returns the
 * number of errors. Main thread, before other threads log. */
int jn_mgmt_apply_logs(const jn_config_t *cfg, char *errors, size_t cap);

/* jn_mgmt_load_config_CT: create cfg's listeners, connectors and
 * addresses through the path of a management CREATE (the same checks, the
 * same actions: addresses first, then connectors, then listeners, each in
 * file order), and keep cfg as the file a reload compares with. cfg must
 * have passed jn_mgmt_plan_config; it is taken over (freed by the agent)
 * in every case. Before jn_io_start the I/O layer only records the
 * endpoints; it listens and connects when started. errors as
 * jn_mgmt_plan_config. Returns the number of refusals (an entity refused
 * is not created; the others are). Core thread (jn_core_call), or any
 * thread when the agent has no core (tests). */
int jn_mgmt_load_config_CT(jn_mgmt_t *agent, jn_config_t *cfg, char *errors, size_t cap);

/* jn_mgmt_refresh_ports_CT: a listener configured with port 0 shows the
 * port the system gave it in its `port` attribute. Call once the I/O
 * layer is started (a listener created later records it at once). Core
 * thread. */
void jn_mgmt_refresh_ports_CT(jn_mgmt_t *agent);

/* jn_mgmt_reload_CT: read the config file again (cfg.config_path), check
 * all of it, and apply the difference with the entities running from the
 * previous file (docs/design.md, "Config reload"): new listeners listen,
 * removed connectors close, new addresses apply to new addresses, log
 * sections apply; entities created through management stay. A file that
 * does not parse or pass the checks, or that changes a router-wide
 * setting, changes nothing. result (cap octets) receives a one-line
 * summary or the errors. Returns 200 (applied), 400 (refused, nothing
 * changed; or some creations failed, the rest applied, as result says).
 * Core thread (the RELOAD operation, or jn_core_call on SIGHUP). */
int jn_mgmt_reload_CT(jn_mgmt_t *agent, char *result, size_t cap);

/* jn_mgmt_reload_call: a jn_core_call_fn for SIGHUP: jn_mgmt_reload_CT
 * with agent as arg, the result logged (AGENT). */
void jn_mgmt_reload_call(void *agent, jn_core_t *core);

/* /metrics (Prometheus text format 0.0.4, router/mgmt/metrics.c) is made
 * in two steps so that the core thread only copies figures: the snapshot
 * on the core thread, the text on the thread that answers the request.
 *
 * jn_mgmt_metrics_snapshot_CT: copy the figures /metrics shows, the very
 * ones the `router`, `router.address` and `allocator` entities show at
 * this moment (1.19's qdr_* figures, rendered as text already: a few
 * hundred octets; each address's counters and key, for at most
 * router.metricsAddressLimit addresses, in address-table order, and how
 * many more there are; the residence histogram) into *snap (heap, *len
 * octets, one allocation: the caller's, to free() or to give to
 * jn_mgmt_metrics_format). query: the request's query string (may be
 * NULL). 1.19's figures keep 1.19's exact names, unless prometheus_names
 * (the listener's metricsPrometheusNames) asks for the Prometheus
 * convention's: its eight `_total` gauges without the suffix (a query
 * "compat=qdrouterd" still gets 1.19's there). Returns 200, or 500 with
 * *snap NULL when memory ran out. Core thread; costs a copy of ~60
 * octets per address shown.
 *
 * jn_mgmt_metrics_format: the page's text from a snapshot (snap, len,
 * taken over: freed in every case) into *body (heap, *len octets, the
 * caller's): the core's figures, then per address
 * junction_address_deliveries_{ingress,egress,transit,to_container,
 * from_container}_total labelled class/phase/address, the count of
 * addresses left out, the residence histogram per address class, and the
 * process's resident memory. Returns 200, or 500 with *body NULL (memory
 * ran out, or snap is not a snapshot). Any thread (the HTTP service
 * thread).
 *
 * jn_mgmt_metrics_CT: both steps in one (tests). Core thread. */
int jn_mgmt_metrics_snapshot_CT(jn_mgmt_t *agent, const char *query, bool prometheus_names,
                                char **snap, size_t *len);
int jn_mgmt_metrics_format(char *snap, size_t snap_len, char **body, size_t *len);
int jn_mgmt_metrics_CT(jn_mgmt_t *agent, const char *query, bool prometheus_names, char **body,
                       size_t *len);

/* jn_mgmt_mesh_health_CT: the /healthz/mesh page: 200 when this interior
 * router reaches at least N other routers (query "routers=N", default 1),
 * else 503; a router without a mesh answers 200. *body as
 * jn_mgmt_metrics_CT. Core thread. */
int jn_mgmt_mesh_health_CT(jn_mgmt_t *agent, const char *query, char **body, size_t *len);

/* jn_mgmt_request_CT: answer one request (a jn_core_request_fn: pass it
 * with the agent as ctx to jn_core_set_management). request is complete,
 * parsed to JN_DEPTH_ALL, borrowed. A request without reply-to is dropped
 * with a log line (AGENT, info); a malformed one, or one larger than
 * JN_MGMT_MAX_REQUEST (not decoded past its properties), is answered 400
 * when it has a reply-to. Core thread. */
void jn_mgmt_request_CT(void *agent, jn_core_t *core, jn_message_t *request);

/* jn_mgmt_entity_count: how many configured entities the agent keeps (for
 * tests and logs). Core thread (or main before start). */
size_t jn_mgmt_entity_count(const jn_mgmt_t *agent);

#endif /* JUNCTION_MGMT_H */
