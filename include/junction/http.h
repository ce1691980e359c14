/*
 * junction/http.h — HTTP on libwebsockets: the listeners a config file or
 * management declares with `http: yes` (docs/design.md, "HTTP").
 *
 * What an http listener serves:
 *   /metrics        the Prometheus text exposition format 0.0.4 (when the
 *                   listener's `metrics` is true); the page is rendered on
 *                   the core thread by the owner's render hook, so its
 *                   figures are those management shows at that moment;
 *   /healthz        200 "OK" while the router is operational, 503 while it
 *                   stops (when `healthz` is true); nothing is served
 *                   while it starts (clients wait to be accepted);
 *   /healthz/mesh   readiness of an interior router's mesh, rendered by the
 *                   hook (200 or 503 with the figures);
 *   other paths     files under `httpRootDir`; without one, the console's
 *                   files (jn_http_config_t.console_dir; none: 404).
 * AMQP over WebSocket (`websockets: yes`, docs/protocol.md, "HTTP"): a
 * WebSocket upgrade with subprotocol `amqp` (or `binary`) on any path
 * becomes a bridged AMQP connection of the I/O layer (junction/io.h,
 * "bridged connections") of the io listener of the same name, whose
 * binary messages carry the AMQP octets both ways. With an sslProfile the
 * listener speaks TLS only (https:// and wss://). An http listener's
 * settings (jn_endpoint_http_config_t) are described in junction/endpoint.h,
 * below this layer, so that the agent fills them in without including
 * this header.
 *
 * Threads: one service thread of its own runs libwebsockets; every
 * listener is created and removed on it (calls from other threads are
 * handed over and waited for). A page that needs the core is rendered by a
 * jn_core_call and handed back, so the service thread never waits for the
 * core and the core never waits for it.
 */
#ifndef JUNCTION_HTTP_H
#define JUNCTION_HTTP_H 1

#include <junction/core.h>
#include <junction/endpoint.h>
#include <junction/io.h>

#include <stdbool.h>
#include <stddef.h>

typedef struct jn_http jn_http_t;

/* Pages rendered by the owner on the core thread. */
typedef enum jn_http_page { JN_HTTP_PAGE_METRICS = 0, JN_HTTP_PAGE_MESH_HEALTH } jn_http_page_t;

/* jn_http_render_fn: render page into a heap buffer (*body, *len octets,
 * taken over by the HTTP layer, which frees it) and return the HTTP status
 * (200, 503...). query is the request's query string ("" when none,
 * borrowed for the call); prometheus_names is the listener's
 * metricsPrometheusNames (/metrics: the Prometheus convention's names for
 * 1.19's `_total` gauges instead of 1.19's own). Returns 500 with *body
 * NULL when memory ran out. Core thread. */
typedef int (*jn_http_render_fn)(void *ctx, jn_http_page_t page, const char *query,
                                 bool prometheus_names, char **body, size_t *len);

/* jn_http_format_fn: finish page on the service thread of the listener
 * that answers it, from what render made of it on the core thread (*body,
 * *len: taken over) — so the core only copies figures and the printing
 * happens here (router/mgmt/metrics.c). Sets *body (heap, *len octets,
 * the HTTP layer's) and returns the HTTP status; 500 with *body NULL when
 * memory ran out. Called only after render returned 200. The listener's
 * service thread; it blocks that listener (not routing) while it runs. */
typedef int (*jn_http_format_fn)(void *ctx, jn_http_page_t page, char **body, size_t *len);

typedef struct jn_http_config {
    jn_core_t *core;            /* where pages are rendered (jn_core_call) */
    jn_io_t *io;                /* where WebSocket connections go (NULL: refused) */
    const char *console_dir;    /* the console's files, served under / when a
                                 * listener has no httpRootDir (NULL: none);
                                 * borrowed for the layer's life */
    jn_http_render_fn render;   /* NULL: /metrics and /healthz/mesh answer 404 */
    jn_http_format_fn format;   /* NULL: render's body is the page */
    void *render_ctx;           /* ctx of both */
} jn_http_config_t;

/* Router states /healthz reports. */
typedef enum jn_http_state {
    JN_HTTP_STARTING = 0, /* nothing served yet: requests wait */
    JN_HTTP_OPERATIONAL,  /* 200 */
    JN_HTTP_STOPPING      /* 503 */
} jn_http_state_t;

/* jn_http_create: the HTTP layer with no listener, its service thread
 * running. cfg is copied. Returns NULL when libwebsockets or the thread
 * could not start (logged) or on ENOMEM. Main thread. */
jn_http_t *jn_http_create(const jn_http_config_t *cfg);

/* jn_http_set_render_ctx: the ctx the render hook gets (when it could not
 * be known at jn_http_create). Main thread, before any listener is added. */
void jn_http_set_render_ctx(jn_http_t *http, void *ctx);

/* jn_http_add_listener: listen as cfg says, now: the socket is bound when
 * this returns. Returns 0; JN_EEXIST (an http listener of that name);
 * JN_EINVAL (the address cannot be bound or a root directory that is not
 * a readable directory; err, errlen octets, says why); JN_ENOMEM. Any
 * thread but the service thread; waits for it (a few milliseconds). */
int jn_http_add_listener(jn_http_t *http, const jn_endpoint_http_config_t *cfg, char *err,
                         size_t errlen);

/* jn_http_remove_listener: stop listening (requests in progress finish).
 * Returns 0 or JN_ENOENT. Any thread but the service thread; waits. */
int jn_http_remove_listener(jn_http_t *http, const char *name);

/* jn_http_listener_port: the port listener name listens on, as decimal
 * text in buf (cap octets). Returns 0 or JN_ENOENT. Any thread. */
int jn_http_listener_port(jn_http_t *http, const char *name, char *buf, size_t cap);

/* jn_http_set_state: what /healthz answers from now on. Any thread. */
void jn_http_set_state(jn_http_t *http, jn_http_state_t state);

/* jn_http_stop: close every listener and connection and join the service
 * thread. Pages still being rendered on the core are dropped when they
 * come back. Idempotent. Main thread, before the core stops. */
void jn_http_stop(jn_http_t *http);

/* jn_http_free: free a stopped HTTP layer. Call after jn_core_free (which
 * runs the render calls still queued). NULL is ignored. Main thread. */
void jn_http_free(jn_http_t *http);

#endif /* JUNCTION_HTTP_H */
