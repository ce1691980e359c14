/*
 * linkroute_private.h — the link-route and auto-link tables of the core
 * (jn_lr_table_t, core->lr) and the functions linkroute.c,
 * linkroute_table.c and autolink.c share. Nothing outside router/core
 * sees it. Core thread, all of it.
 */
#ifndef JN_CORE_LINKROUTE_PRIVATE_H
#define JN_CORE_LINKROUTE_PRIVATE_H 1

#include "core_private.h"
#include "address_config.h"

/* An auto-link whose link the container detached without an error (it
 * ended the session: RabbitMQ 3.10 does so on trouble of its own) attaches
 * again at once, at most this many times per connection. Past that, and
 * after a detach with an error (a refusal), it stays `failed` and attaches
 * again on the core timer while the connection stays up, as 1.19 does:
 * the first time after AUTOLINK_FIRST_RETRY_MS, then every
 * AUTOLINK_RETRY_MS until it is active again (or the connection closes). */
#define AUTOLINK_RETRIES        3
#define AUTOLINK_FIRST_RETRY_MS 2000
#define AUTOLINK_RETRY_MS       5000

#define LR_LOST_CONDITION   "qd:routed-link-lost"
#define LR_LOST_DESCRIPTION "Connectivity to the peer container was lost"

typedef struct jn_link_route {
    /* the next link route with the same prefix or pattern and direction
     * (they coexist, as in 1.19: one match entry, a chain in the order
     * added; an attach goes to the first whose container is here) */
    struct jn_link_route *same;
    char *name;
    char *key;       /* its mesh key (C/D/E/F + text, route_key) */
    bool advertised; /* the mesh was told this router has its container
                      * (on one route of a chain only: the key is theirs) */
    jn_link_dir_t dir;
    char *container_id, *connection;
    char *add_prefix, *del_prefix;
    /* router.connection.linkRoute: the connection that created it and is
     * its container (0: a configured link route), and its identity */
    uint64_t conn_id, identity;
} jn_link_route_t;

typedef enum { AL_INACTIVE = 0, AL_ATTACHING, AL_FAILED, AL_ACTIVE } al_state_t;

/* An auto-link on one connection. An auto-link attaches on every open
 * connection that serves it (each connection of its container, or each
 * one its named listener or connector made), as 1.19 does: two instances
 * of a container on one listener each get the link, and share the
 * address's deliveries. */
typedef struct jn_al_conn {
    struct jn_al_conn *next;
    uint64_t conn_id;     /* the connection */
    al_state_t state;     /* of its link on that connection */
    jn_core_link_t *link; /* its link while attached or answering */
    unsigned retries;     /* re-attaches on the connection (AUTOLINK_RETRIES) */
    unsigned timed;       /* timed re-attaches since it was last active */
    int64_t retry_at;     /* the next timed re-attach (jn_time_mono_ms), 0: none */
    uint64_t pending;     /* the request id while one is out, else 0 */
} jn_al_conn_t;

typedef struct jn_autolink {
    struct jn_autolink *next;
    char *name, *address, *external;
    char *container_id, *connection;
    jn_link_dir_t dir;
    char phase;
    bool fallback;
    char *last_error;   /* heap, or NULL: the last error on any connection */
    jn_al_conn_t *conns; /* one per connection that serves it (heap) */
} jn_autolink_t;

/* A request for a link on a container's connection (see the top). */
typedef struct lr_request {
    struct lr_request *next;
    uint64_t id;
    jn_core_conn_t *conn;    /* compared only */
    jn_core_link_t *client;  /* link route: the client's link (referenced) */
    jn_autolink_t *autolink; /* auto-link */
} lr_request_t;

typedef struct jn_lr_table {
    jn_addr_config_t match[2];   /* by jn_link_dir_t of the client's link */
    jn_link_route_t **routes[2]; /* parallel to match[d].entries: chain heads */
    size_t cap[2];
    jn_autolink_t *autolinks;
    lr_request_t *requests;
    uint64_t next_id;
    uint64_t next_identity; /* connection-scoped link routes */
} jn_lr_table_t;

/* linkroute.c: whether c is the container a route or auto-link names by
 * container id or connection name: c must be open and of role
 * route-container (1.19: no other connection is a container). */
bool jn_lr_conn_serves(const jn_core_conn_t *c, const char *container_id, const char *connection);
/* linkroute.c: the first such connection but not (NULL when none). */
jn_core_conn_t *jn_lr_find_conn_CT(jn_core_t *core, const char *container_id,
                                   const char *connection, const jn_core_conn_t *not_this);
/* linkroute.c: a request for a link on conn (NULL: out of memory), and the
 * request with id taken off the list (NULL: none; the caller frees it). */
lr_request_t *jn_lr_request_new_CT(jn_core_t *core, jn_core_conn_t *conn);
lr_request_t *jn_lr_request_take_CT(jn_core_t *core, uint64_t id);
/* linkroute.c: ask conn's I/O to attach a link (dir, name, address; its
 * terminus copied from copy_of when given) answering request id: 0 or
 * JN_ENOMEM. */
int jn_lr_push_attach_CT(jn_core_conn_t *conn, jn_link_dir_t dir, const char *name,
                         const char *address, bool presettled, jn_core_link_t *copy_of,
                         uint64_t id);
/* linkroute.c: address as r sends it to its container (delPrefix taken
 * off, addPrefix put on): malloc'd, NULL on ENOMEM. */
char *jn_lr_external_address(const jn_link_route_t *r, const char *address);
/* linkroute.c: the connection r's container is on, not `not` (NULL: not
 * connected): for a connection-scoped route the connection that created
 * it, else the first open route-container connection it names. */
jn_core_conn_t *jn_lr_route_conn_CT(jn_core_t *core, const jn_link_route_t *r,
                                    const jn_core_conn_t *not_this);
/* linkroute_table.c: free a link route (NULL: nothing). */
void jn_lr_route_free(jn_link_route_t *r);
/* linkroute_table.c: tell the mesh which link-route keys have their
 * container here (an edge: update its proxies on the interior); call after
 * a container connection or a link route came or went. */
void jn_lr_advertise_CT(jn_core_t *core);
/* linkroute_table.c: the connection toward the nearest router that
 * advertised a link-route key matching address for links of dir, not
 * `not_this`; NULL: none (or no mesh). */
jn_core_conn_t *jn_lr_remote_conn_CT(jn_core_t *core, const char *address, jn_link_dir_t dir,
                                     const jn_core_conn_t *not_this);
/* linkroute.c: free an auto-link. */
void jn_lr_autolink_free(jn_autolink_t *al);
/* autolink.c: link, attached by conn's I/O for request rq, is al's on its
 * connection: false when al no longer waits for it there (the caller
 * closes it). */
bool jn_lr_autolink_attached_CT(jn_autolink_t *al, uint64_t rq_id, jn_core_link_t *link);
/* autolink.c: its link answered (bound to the address when the answer
 * named an address, else left attaching); its link detached
 * (from_conn_close: its connection closed). */
void jn_lr_autolink_answered_CT(jn_core_link_t *link);
void jn_lr_autolink_detached_CT(jn_core_link_t *link, bool from_conn_close);
/* autolink.c: conn opened: every auto-link it serves attaches on it;
 * conn closed: the auto-links forget it (their links detached already). */
void jn_lr_autolinks_conn_opened_CT(jn_core_conn_t *conn);
void jn_lr_autolinks_conn_closed_CT(jn_core_conn_t *conn);

#endif /* JN_CORE_LINKROUTE_PRIVATE_H */
