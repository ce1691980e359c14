/*
 * http.c — the HTTP layer (junction/http.h) on libwebsockets.
 *
 * Each http listener is a libwebsockets context of its own, run by a
 * service thread of its own. (libwebsockets 4.1 cannot reliably close the
 * listening socket of one vhost of a running context: a listener deleted
 * by management or a reload would keep its port. A context is created
 * before its thread starts and destroyed after it has been joined, so the
 * port is free when jn_http_remove_listener returns.) libwebsockets is not
 * thread-safe: only a server's own thread touches its context while it
 * runs.
 *
 * A page the core renders (/metrics, /healthz/mesh) is a request object
 * shared by the connection and a jn_core_call, with a reference count. The
 * core thread puts the rendered request on its server's `ready` list and
 * wakes that server's thread (lws_cancel_service → the
 * LWS_CALLBACK_EVENT_WAIT_CANCELLED callback), which asks for a writable
 * callback and writes it. A connection that closes first unhooks its
 * request under `lock`, so a late render is freed without touching it; a
 * server is marked dying under the lock before it is stopped, so no wake
 * reaches a context being destroyed.
 *
 * AMQP over WebSocket: an upgrade with subprotocol `amqp` (or `binary`)
 * gets a ws_conn_t and a bridged connection of the I/O layer (junction/io.h,
 * "bridged connections"). A received message's payload is pushed into
 * the bridge (when the bridge says its input is full, the WebSocket stops
 * being read: lws_rx_flow_control); when the connection's loop has output
 * (or room again, or the connection ended) it calls ws_notify, which puts
 * the ws_conn_t on its server's `ws_ready` list and wakes the service
 * thread as a rendered page does; the thread then asks for a writable
 * callback, which sends what the bridge holds (up to WS_CHUNK octets: all
 * the frames the engine framed since the last write, many deliveries in one
 * WebSocket message). A ws_conn_t is freed on the service thread after
 * jn_io_bridge_close, after which no notify comes; it is taken off
 * `ws_ready` under the lock first.
 *
 * Nothing here is on the message path of TCP connections: the lock is
 * taken per HTTP request, per listener change, and per WebSocket wake (a
 * batch of frames).
 */
#include <junction/http.h>
#include <junction/log.h>

#include <libwebsockets.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REQ_QUERY_MAX 256
#define WRITE_CHUNK 8192
/* The most a WebSocket write sends (one binary message): whatever the
 * bridge holds, up to this. */
#define WS_CHUNK (64 * 1024)
/* A wss peer's input the router holds at most before it cuts the
 * connection (see LWS_CALLBACK_RECEIVE: TLS WebSockets are never paused). */
#define WS_TLS_IN_LIMIT (64u * 1024 * 1024)
/* An HTTP request's headers may take this many octets at most; a larger
 * request is refused by libwebsockets (and logged here). */
#define HEADER_MAX 8192
/* Seconds a client has to finish its request headers (a slowloris client
 * is cut after this) and for libwebsockets' other round trips. */
#define HTTP_TIMEOUT_S 10

typedef struct server server_t;

/* One HTTP request's answer. Refcounted: the connection's reference
 * (dropped when it closes), the render call's while the core renders it,
 * the ready list's while it waits there. Fields under http->lock once a
 * render was posted. */
typedef struct http_req {
    atomic_int refs;
    jn_http_t *http;
    server_t *srv;   /* valid while wsi is set (under http->lock) */
    struct lws *wsi; /* NULL once the connection closed */
    jn_http_page_t page;
    bool prometheus_names; /* its listener's metricsPrometheusNames */
    char query[REQ_QUERY_MAX];
    int status;
    const char *content_type;
    char *body; /* heap */
    size_t len, sent;
    bool ready, headers_sent, queued;
    bool to_format; /* body is render's: cfg.format makes the page of it */
    struct http_req *next_ready;
} http_req_t;

/* Per-connection data libwebsockets allocates (per_session_data_size). */
typedef struct pss {
    http_req_t *req;
} pss_t;

/* The opaque user data of an accepted connection until its first complete
 * request is its peer's name (heap): one that is destroyed with it never
 * sent one (it timed out: a slowloris client; its headers did not fit; or
 * it left), which is logged. wsi: the one a request came on; over HTTP/2
 * (TLS with ALPN h2) that is a stream, and the name is held by the
 * connection's network wsi, cleared too. */
static void awaiting_clear(struct lws *wsi)
{
    struct lws *net = lws_get_network_wsi(wsi);
    free(lws_get_opaque_user_data(wsi));
    lws_set_opaque_user_data(wsi, NULL);
    if (net && net != wsi) {
        free(lws_get_opaque_user_data(net));
        lws_set_opaque_user_data(net, NULL);
    }
}

/* One AMQP-over-WebSocket connection. wsi, bridge, rx_paused: the service
 * thread; queued, next_ready: under http->lock. */
typedef struct ws_conn {
    server_t *srv;
    struct lws *wsi;
    jn_io_bridge_t *bridge;
    bool rx_paused;
    bool tls; /* wss:// (a TLS listener may serve plain clients too) */
    bool queued;
    struct ws_conn *next_ready;
    char peer[64];
} ws_conn_t;

/* Per-connection data of the amqp protocol. */
typedef struct ws_pss {
    ws_conn_t *ws;
} ws_pss_t;

/* One http listener: its own context and service thread. */
struct server {
    server_t *next; /* http->servers, under lock */
    jn_http_t *http;
    char *name, *host, *root_dir;
    bool metrics, healthz, websockets, tls;
    bool client_cert; /* TLS asks for a client certificate that must verify */
    bool plain_too;   /* TLS, and clients without TLS served as well */
    bool prometheus_names; /* /metrics: metricsPrometheusNames */
    bool console; /* root_dir is the console's, not an httpRootDir */
    ws_conn_t *ws_ready;   /* under lock: WebSocket connections to service */
    unsigned char *ws_buf; /* LWS_PRE + WS_CHUNK: the service thread's */
    int port; /* bound */
    struct lws_context *ctx;
    pthread_t thread;
    atomic_bool stopping;  /* the service loop ends */
    bool dying;            /* under lock: no more wakes */
    http_req_t *ready;     /* under lock */
    struct lws_http_mount mounts[3]; /* /metrics, /healthz, / (root_dir) */
};

struct jn_http {
    jn_http_config_t cfg;
    atomic_int state; /* jn_http_state_t */
    bool stopped;
    pthread_mutex_t lock;
    server_t *servers; /* under lock */
    /* A client TLS context handed to every HTTPS listener's libwebsockets
     * context (never used: the router makes no HTTP requests). Without it
     * libwebsockets 4.1 makes one per context and, with two or more
     * contexts, loses track of all but the last at destroy (it finds them
     * through an OpenSSL ex_data index that each context's set-up
     * renumbers): memory kept for each HTTPS listener ever started. Made
     * with the first HTTPS listener (a router without one never pays for
     * OpenSSL's set-up), under lock; NULL when out of memory (libwebsockets
     * then makes its own). Freed by jn_http_free. */
    SSL_CTX *client_tls;
};

/* ---- requests ------------------------------------------------------------ */

static void req_unref(http_req_t *req)
{
    if (atomic_fetch_sub(&req->refs, 1) == 1) {
        free(req->body);
        free(req);
    }
}

static void set_text(http_req_t *req, int status, const char *text)
{
    req->status = status;
    req->content_type = "text/plain; charset=utf-8";
    req->body = strdup(text);
    req->len = req->body ? strlen(text) : 0;
    req->ready = true;
}

/* The core rendered req's page: hand it to its server's thread. Core
 * thread. */
static void render_call(void *arg, jn_core_t *core)
{
    (void)core;
    http_req_t *req = arg;
    jn_http_t *http = req->http; /* freed only after the core (jn_http_free) */
    char *body = NULL;
    size_t len = 0;
    int status = http->cfg.render(http->cfg.render_ctx, req->page, req->query,
                                  req->prometheus_names, &body, &len);
    pthread_mutex_lock(&http->lock);
    req->status = body ? status : 500;
    req->content_type = req->page == JN_HTTP_PAGE_METRICS
                            ? "text/plain; version=0.0.4; charset=utf-8"
                            : "text/plain; charset=utf-8";
    req->body = body;
    req->len = body ? len : 0;
    req->to_format = body && status == 200 && http->cfg.format;
    req->ready = true;
    server_t *srv = req->srv;
    if (req->wsi && !srv->dying) { /* wsi set: its server is alive */
        req->next_ready = srv->ready;
        srv->ready = req;
        req->queued = true;
        atomic_fetch_add(&req->refs, 1); /* the ready list's */
        lws_cancel_service(srv->ctx);    /* under the lock: see `dying` */
    }
    pthread_mutex_unlock(&http->lock);
    req_unref(req); /* the render call's */
}

/* Start answering a request for path. Service thread. */
static int begin_request(server_t *srv, struct lws *wsi, pss_t *pss, const char *path)
{
    jn_http_t *http = srv->http;
    http_req_t *req = calloc(1, sizeof *req);
    if (!req)
        return -1;
    atomic_init(&req->refs, 1);
    req->http = http;
    req->srv = srv;
    req->wsi = wsi;
    pss->req = req;
    lws_hdr_copy(wsi, req->query, sizeof req->query, WSI_TOKEN_HTTP_URI_ARGS);
    bool metrics = srv->metrics && strcmp(path, "/metrics") == 0;
    bool mesh = srv->healthz && strcmp(path, "/healthz/mesh") == 0;
    if (srv->healthz && strcmp(path, "/healthz") == 0) {
        bool up = atomic_load(&http->state) == JN_HTTP_OPERATIONAL;
        set_text(req, up ? 200 : 503, up ? "OK\n" : "Service Unavailable\n");
    } else if ((metrics || mesh) && http->cfg.render) {
        req->page = metrics ? JN_HTTP_PAGE_METRICS : JN_HTTP_PAGE_MESH_HEALTH;
        req->prometheus_names = srv->prometheus_names;
        atomic_fetch_add(&req->refs, 1); /* the render call's */
        if (jn_core_call(http->cfg.core, render_call, req) == 0)
            return 0; /* written once rendered */
        atomic_fetch_sub(&req->refs, 1);
        set_text(req, 500, "Out of memory\n");
    } else {
        set_text(req, 404, "Not Found\n");
    }
    lws_callback_on_writable(wsi);
    return 0;
}

/* Write what req has: 0 more to write (a writable callback is asked
 * for), 1 all written (the caller ends the request, then completes the
 * transaction: completing it may free the connection's pss), -1 failed
 * (close). Service thread. */
static int write_answer(struct lws *wsi, http_req_t *req)
{
    unsigned char buf[LWS_PRE + WRITE_CHUNK];
    unsigned char *start = buf + LWS_PRE, *p = start, *end = buf + sizeof buf - 1;
    if (!req->headers_sent) {
        req->headers_sent = true;
        if (req->to_format) { /* rendered and off the ready list: ours alone */
            jn_http_t *http = req->http;
            req->to_format = false;
            char *body = req->body;
            size_t len = req->len;
            req->body = NULL;
            int status = http->cfg.format(http->cfg.render_ctx, req->page, &body, &len);
            if (!body) {
                set_text(req, 500, "Internal Server Error\n");
            } else {
                req->status = status;
                req->body = body;
                req->len = len;
            }
        }
        if (lws_add_http_common_headers(wsi, (unsigned)req->status, req->content_type,
                                        (lws_filepos_t)req->len, &p, end) ||
            lws_finalize_write_http_header(wsi, start, &p, end))
            return -1;
        if (req->len == 0)
            return 1;
        lws_callback_on_writable(wsi);
        return 0;
    }
    if (req->sent == req->len)
        return 1; /* the last write went out whole: libwebsockets calls back
                   * for a write only once what it held back is sent */
    size_t n = req->len - req->sent < WRITE_CHUNK ? req->len - req->sent : WRITE_CHUNK;
    bool last = req->sent + n == req->len;
    memcpy(start, req->body + req->sent, n);
    if (lws_write(wsi, start, n, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) != (int)n)
        return -1;
    req->sent += n;
    lws_callback_on_writable(wsi); /* for the next chunk, or the end (above) */
    return 0;
}

/* The connection of pss closed, or is on to its next request: unhook its
 * request. Its server's thread, or the thread destroying the server's
 * context. */
static void end_request(server_t *srv, pss_t *pss)
{
    http_req_t *req = pss->req;
    if (!req)
        return;
    pss->req = NULL;
    pthread_mutex_lock(&srv->http->lock);
    req->wsi = NULL;
    bool queued = req->queued;
    if (queued) { /* rendered but not picked up yet */
        for (http_req_t **p = &srv->ready; *p; p = &(*p)->next_ready)
            if (*p == req) {
                *p = req->next_ready;
                break;
            }
        req->queued = false;
    }
    pthread_mutex_unlock(&srv->http->lock);
    if (queued)
        req_unref(req);
    req_unref(req);
}

/* Ask for writes of the pages rendered since the last wake. Service
 * thread. */
static void service_wake(server_t *srv)
{
    pthread_mutex_lock(&srv->http->lock);
    http_req_t *ready = srv->ready;
    srv->ready = NULL;
    for (http_req_t *r = ready; r; r = r->next_ready) {
        r->queued = false;
        if (r->wsi)
            lws_callback_on_writable(r->wsi);
    }
    ws_conn_t *ws = srv->ws_ready;
    srv->ws_ready = NULL;
    for (ws_conn_t *w = ws; w; w = w->next_ready)
        w->queued = false;
    pthread_mutex_unlock(&srv->http->lock);
    /* ws_conn_t's are freed on this thread only: the ones taken are alive */
    while (ws) {
        ws_conn_t *w = ws;
        ws = w->next_ready;
        lws_callback_on_writable(w->wsi);
        if (w->rx_paused && jn_io_bridge_has_room(w->bridge)) {
            w->rx_paused = false;
            lws_rx_flow_control(w->wsi, 1);
        }
    }
    while (ready) {
        http_req_t *r = ready;
        ready = r->next_ready;
        req_unref(r); /* the ready list's */
    }
}

/* "address:port" of wsi's peer into out. */
static void peer_name(struct lws *wsi, char *out, size_t cap)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    lws_sockfd_type fd = lws_get_socket_fd(wsi);
    if (fd >= 0 && getpeername(fd, (struct sockaddr *)&sa, &len) == 0) {
        if (sa.ss_family == AF_INET) {
            struct sockaddr_in *in = (struct sockaddr_in *)&sa;
            inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
            port = ntohs(in->sin_port);
        } else if (sa.ss_family == AF_INET6) {
            struct sockaddr_in6 *in = (struct sockaddr_in6 *)&sa;
            inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
            port = ntohs(in->sin6_port);
        }
    }
    snprintf(out, cap, "%s:%d", host, port);
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    if (reason == LWS_CALLBACK_OPENSSL_PERFORM_CLIENT_CERT_VERIFICATION)
        /* OpenSSL's verdict on a client certificate (len: preverify_ok)
         * stands, said here rather than left to libwebsockets' default:
         * 0 accepts, 1 refuses (no wsi context here: nothing else to do) */
        return len ? 0 : 1;
    server_t *srv = lws_context_user(lws_get_context(wsi));
    pss_t *pss = user;
    switch (reason) {
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        service_wake(srv);
        return 0;
    case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
    {
        char peer[64];
        peer_name(wsi, peer, sizeof peer);
        lws_set_opaque_user_data(wsi, strdup(peer)); /* NULL: not logged */
        return 0;
    }
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: {
        awaiting_clear(wsi);
        char proto[128] = "";
        lws_hdr_copy(wsi, proto, sizeof proto, WSI_TOKEN_PROTOCOL);
        bool amqp = false;
        for (char *save = NULL, *t = strtok_r(proto, ", ", &save); t && !amqp;
             t = strtok_r(NULL, ", ", &save))
            amqp = strcmp(t, "amqp") == 0 || strcmp(t, "binary") == 0;
        if (in && strcmp(in, "websocket") == 0 && amqp && srv->websockets)
            return 0;
        char peer[64];
        peer_name(wsi, peer, sizeof peer);
        JN_LOG(JN_LOG_MOD_HTTP, JN_LOG_WARNING,
               "Upgrade to '%s' from %s on listener %s refused: %s", in ? (char *)in : "", peer,
               srv->name,
               !srv->websockets ? "the listener has websockets: no"
                                : "AMQP over WebSocket needs the subprotocol amqp");
        lws_return_http_status(wsi, HTTP_STATUS_BAD_REQUEST, NULL);
        return 1;
    }
    case LWS_CALLBACK_HTTP: {
        awaiting_clear(wsi);
        /* behind a mount `in` is the path below it: use the whole one */
        char path[256];
        if (lws_hdr_copy(wsi, path, sizeof path, WSI_TOKEN_GET_URI) <= 0)
            snprintf(path, sizeof path, "%.*s", (int)(len < 255 ? len : 255),
                     in ? (char *)in : "");
        end_request(srv, pss); /* the previous request of a kept-alive connection */
        return begin_request(srv, wsi, pss, path) ? -1 : 0;
    }
    case LWS_CALLBACK_HTTP_WRITEABLE: {
        if (!pss || !pss->req || !pss->req->ready)
            return 0;
        int rc = write_answer(wsi, pss->req);
        if (rc == 0)
            return 0;
        end_request(srv, pss); /* answered (or failed): done with it, before pss may go */
        return rc < 0 || lws_http_transaction_completed(wsi) ? -1 : 0;
    }
    case LWS_CALLBACK_CLOSED_HTTP:
    case LWS_CALLBACK_WSI_DESTROY:
        if (reason == LWS_CALLBACK_WSI_DESTROY && lws_get_opaque_user_data(wsi)) {
            /* info: browsers open connections ahead and may leave them unused */
            JN_LOG(JN_LOG_MOD_HTTP, JN_LOG_INFO,
                   "HTTP connection from %s on listener %s closed without a complete request "
                   "(its headers must arrive within %d s and fit in %d octets)",
                   (char *)lws_get_opaque_user_data(wsi), srv->name, HTTP_TIMEOUT_S,
                   HEADER_MAX);
            awaiting_clear(wsi);
        }
        /* pss only on CLOSED_HTTP: by WSI_DESTROY libwebsockets may have
         * freed it already (a refused or completed upgrade) */
        if (pss && reason == LWS_CALLBACK_CLOSED_HTTP)
            end_request(srv, pss);
        return 0;
    default:
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    }
}

/* ---- AMQP over WebSocket ------------------------------------------------ */

/* The bridge has something for ws (output, room for input, or its end):
 * wake its server's thread. The connection's loop thread, under the
 * bridge's lock (so ws is alive: jn_io_bridge_close comes first). */
static void ws_notify(void *ctx)
{
    ws_conn_t *ws = ctx;
    server_t *srv = ws->srv;
    pthread_mutex_lock(&srv->http->lock);
    if (!ws->queued && !srv->dying) {
        ws->queued = true;
        ws->next_ready = srv->ws_ready;
        srv->ws_ready = ws;
        lws_cancel_service(srv->ctx); /* under the lock: see `dying` */
    }
    pthread_mutex_unlock(&srv->http->lock);
}

/* The WebSocket of ws closed: end its connection, free ws. Service
 * thread (or the thread destroying the context). */
static void ws_end(ws_conn_t *ws)
{
    server_t *srv = ws->srv;
    jn_io_bridge_close(ws->bridge); /* no ws_notify after this */
    pthread_mutex_lock(&srv->http->lock);
    if (ws->queued)
        for (ws_conn_t **p = &srv->ws_ready; *p; p = &(*p)->next_ready)
            if (*p == ws) {
                *p = ws->next_ready;
                break;
            }
    pthread_mutex_unlock(&srv->http->lock);
    free(ws);
}

/* A WebSocket upgrade asks for an AMQP subprotocol: refused (1) unless srv
 * has websockets and the router's I/O is up. Service thread. */
static int ws_on_filter(server_t *srv, struct lws *wsi)
{
    if (srv->websockets && srv->http->cfg.io)
        return 0;
    char peer[64];
    peer_name(wsi, peer, sizeof peer);
    JN_LOG(JN_LOG_MOD_HTTP, JN_LOG_WARNING,
           "WebSocket upgrade from %s refused: listener %s has websockets: no", peer, srv->name);
    return 1;
}

/* A WebSocket is up: open its AMQP connection through a bridge (a TLS one
 * for wss://), hung on pss. Returns 0, or -1 to close the WebSocket when the
 * bridge cannot open. Service thread. */
static int ws_on_established(server_t *srv, struct lws *wsi, ws_pss_t *pss)
{
    ws_conn_t *ws = calloc(1, sizeof *ws);
    if (!ws)
        return -1;
    ws->srv = srv;
    ws->wsi = wsi;
    peer_name(wsi, ws->peer, sizeof ws->peer);
    int err = 0;
    jn_io_bridge_tls_t tls = {0};
    SSL *ssl = srv->tls ? lws_get_ssl(wsi) : NULL;
    if (ssl) { /* wss://: the connection is a TLS connection to the core */
        tls.proto = SSL_get_version(ssl);
        tls.cipher = SSL_get_cipher_name(ssl);
        tls.ssf = SSL_get_cipher_bits(ssl, NULL);
        tls.peer_cert = SSL_get0_peer_certificate(ssl);
        tls.peer_verified = tls.peer_cert && SSL_get_verify_result(ssl) == X509_V_OK;
    }
    ws->bridge = jn_io_bridge_open(srv->http->cfg.io, srv->name, ws->peer, ssl ? &tls : NULL,
                                   ws_notify, ws, &err);
    if (!ws->bridge) {
        JN_LOG(JN_LOG_MOD_HTTP, JN_LOG_WARNING,
               "WebSocket connection from %s on listener %s refused: %s", ws->peer, srv->name,
               jn_strerror(err));
        free(ws);
        return -1;
    }
    pss->ws = ws;
    ws->tls = ssl != NULL;
    JN_LOG(JN_LOG_MOD_HTTP, JN_LOG_INFO, "WebSocket connection from %s on listener %s%s",
           ws->peer, srv->name, ssl ? " (TLS)" : "");
    return 0;
}

/* len octets of a WebSocket message arrived: pushed to ws's bridge; when it
 * is full, the WebSocket's input is paused (plain) or, over TLS, cut once
 * the peer is too far ahead. Returns 0, or -1 to close the WebSocket (a
 * text message, the TLS input limit). Service thread. */
static int ws_on_receive(ws_conn_t *ws, struct lws *wsi, const void *in, size_t len)
{
    if (!lws_frame_is_binary(wsi)) {
        JN_LOG(JN_LOG_MOD_HTTP, JN_LOG_WARNING,
               "WebSocket connection from %s closed: a text message (AMQP travels in "
               "binary messages)",
               ws->peer);
        lws_close_reason(wsi, LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE,
                         (unsigned char *)"binary messages only", 20);
        return -1;
    }
    if (jn_io_bridge_push(ws->bridge, in, len))
        return 0;
    if (!ws->tls) {
        if (!ws->rx_paused) {
            ws->rx_paused = true; /* backpressure: read on when the bridge has room */
            lws_rx_flow_control(wsi, 0);
        }
        return 0;
    }
    if (jn_io_bridge_input_pending(ws->bridge) <= WS_TLS_IN_LIMIT)
        return 0;
    /* Over TLS, Debian's libwebsockets (4.1) cannot pause a peer: with its
     * receive flow disabled it keeps reading the decrypted input into a
     * buffer of its own, in a loop that never ends (memory grows and the
     * service thread never stops). So a wss connection is never paused;
     * what bounds its input is AMQP's session window, which the
     * connection's loop enforces as it takes the input. A peer that gets
     * this far ahead of it is cut. */
    JN_LOG(JN_LOG_MOD_HTTP, JN_LOG_WARNING,
           "WebSocket connection from %s closed: more than %u octets sent ahead of "
           "the router (AMQP over TLS WebSocket cannot be paused)",
           ws->peer, (unsigned)WS_TLS_IN_LIMIT);
    lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, (unsigned char *)"input limit", 11);
    return -1;
}

/* The WebSocket can take output: one chunk of ws's bridge output is
 * written, or, when the AMQP connection has ended and all of it went out,
 * the WebSocket is closed (-1). Service thread. */
static int ws_on_writeable(server_t *srv, ws_conn_t *ws, struct lws *wsi)
{
    bool ended = false;
    unsigned char *start = srv->ws_buf + LWS_PRE;
    size_t n = jn_io_bridge_pull(ws->bridge, start, WS_CHUNK, &ended);
    if (n > 0) {
        if (lws_write(wsi, start, n, LWS_WRITE_BINARY) < (int)n)
            return -1;
        lws_callback_on_writable(wsi); /* there may be more */
        return 0;
    }
    if (ended) { /* the AMQP connection is over and all of it was sent */
        lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
        return -1;
    }
    return 0;
}

/* libwebsockets' callback for the AMQP subprotocols: one handler per event
 * family. Service thread. */
static int ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                       size_t len)
{
    server_t *srv = lws_context_user(lws_get_context(wsi));
    ws_pss_t *pss = user;
    ws_conn_t *ws = pss ? pss->ws : NULL;
    switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        return ws_on_filter(srv, wsi);
    case LWS_CALLBACK_ESTABLISHED:
        return ws_on_established(srv, wsi, pss);
    case LWS_CALLBACK_RECEIVE:
        return ws ? ws_on_receive(ws, wsi, in, len) : -1;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return ws ? ws_on_writeable(srv, ws, wsi) : 0;
    case LWS_CALLBACK_CLOSED: /* (not WSI_DESTROY: pss may be freed by then) */
        if (ws) {
            ws_end(ws);
            pss->ws = NULL;
        }
        return 0;
    default:
        return 0;
    }
}

static const struct lws_protocols protocols[] = {
    {"junction-http", callback, sizeof(pss_t), 0, 0, NULL, 0},
    {"amqp", ws_callback, sizeof(ws_pss_t), WS_CHUNK, 0, NULL, 0},
    {"binary", ws_callback, sizeof(ws_pss_t), WS_CHUNK, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* ---- servers -------------------------------------------------------------- */

static void lws_log(int level, const char *line)
{
    char text[512];
    snprintf(text, sizeof text, "%s", line);
    size_t n = strlen(text);
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r'))
        text[--n] = '\0';
    JN_LOG(JN_LOG_MOD_HTTP, level == LLL_ERR ? JN_LOG_ERROR : JN_LOG_WARNING, "%s", text);
}

static void *service_main(void *arg)
{
    server_t *srv = arg;
    /* A listener from the config file listens before the router has
     * finished starting: its clients wait in the accept queue until the
     * router is operational (the AMQP listeners bound), so a probe that
     * connected as soon as the port opened is answered 200, not 503
     * (1.19's tests wait only for the ports). A few milliseconds. */
    while (atomic_load(&srv->http->state) == JN_HTTP_STARTING && !atomic_load(&srv->stopping))
        usleep(2000);
    while (!atomic_load(&srv->stopping))
        if (lws_service(srv->ctx, 0) < 0)
            break;
    return NULL;
}

static void server_free(server_t *srv)
{
    if (!srv)
        return;
    free(srv->name);
    free(srv->host);
    free(srv->root_dir);
    free(srv->ws_buf);
    free(srv);
}

static void set_mount(struct lws_http_mount *m, const char *mountpoint, const char *origin,
                      unsigned char protocol, const char *def)
{
    memset(m, 0, sizeof *m);
    m->mountpoint = mountpoint;
    m->mountpoint_len = (unsigned char)strlen(mountpoint);
    m->origin = origin;
    m->origin_protocol = protocol;
    m->def = def;
}

/* Stop srv's thread and destroy its context (its connections close, their
 * requests unhook). srv is no longer on http->servers. */
static void server_stop(server_t *srv)
{
    pthread_mutex_lock(&srv->http->lock);
    srv->dying = true;
    pthread_mutex_unlock(&srv->http->lock);
    atomic_store(&srv->stopping, true);
    lws_cancel_service(srv->ctx);
    pthread_join(srv->thread, NULL);
    lws_context_destroy(srv->ctx);
    JN_LOG(JN_LOG_MOD_HTTP, JN_LOG_INFO, "Stopped listening for HTTP on %s:%d",
           srv->host ? srv->host : "", srv->port);
    server_free(srv);
}

jn_http_t *jn_http_create(const jn_http_config_t *cfg)
{
    jn_http_t *http = calloc(1, sizeof *http);
    if (!http)
        return NULL;
    http->cfg = *cfg;
    atomic_init(&http->state, JN_HTTP_STARTING);
    pthread_mutex_init(&http->lock, NULL);
    lws_set_log_level(LLL_ERR | LLL_WARN, lws_log);
    return http;
}

/* A new server for cfg, not yet listening: its fields set from cfg, the
 * console's folder as its root when it has no httpRootDir. Returns 0, or
 * JN_EEXIST (the name is taken), JN_EINVAL (a bad httpRootDir, said in why;
 * or the HTTP side is stopped) or JN_ENOMEM; *out is then NULL. Caller's
 * thread (management or start-up). */
static int server_new(jn_http_t *http, const jn_endpoint_http_config_t *cfg, char *why,
                      size_t whylen, server_t **out)
{
    *out = NULL;
    int rc = 0;
    pthread_mutex_lock(&http->lock);
    for (server_t *x = http->servers; x && rc == 0; x = x->next)
        if (strcmp(x->name, cfg->name) == 0)
            rc = JN_EEXIST;
    bool stopped = http->stopped;
    pthread_mutex_unlock(&http->lock);
    if (rc != 0)
        return rc;
    struct stat st;
    if (cfg->root_dir && cfg->root_dir[0] &&
        (stat(cfg->root_dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
         access(cfg->root_dir, R_OK | X_OK) != 0)) {
        snprintf(why, whylen, "httpRootDir '%s' is not a readable directory", cfg->root_dir);
        return JN_EINVAL;
    }
    if (stopped)
        return JN_EINVAL;
    server_t *srv = calloc(1, sizeof *srv);
    if (!srv || !(srv->name = strdup(cfg->name)) ||
        (cfg->host && cfg->host[0] && !(srv->host = strdup(cfg->host))) ||
        (cfg->root_dir && cfg->root_dir[0] && !(srv->root_dir = strdup(cfg->root_dir))) ||
        !(srv->ws_buf = malloc(LWS_PRE + WS_CHUNK))) {
        server_free(srv);
        return JN_ENOMEM;
    }
    srv->http = http;
    srv->metrics = cfg->metrics;
    srv->healthz = cfg->healthz;
    srv->websockets = cfg->websockets;
    srv->tls = cfg->cert_file && cfg->cert_file[0];
    srv->client_cert = srv->tls && cfg->client_cert;
    srv->plain_too = srv->tls && cfg->plain_too && !srv->client_cert;
    srv->prometheus_names = cfg->prometheus_names;
    /* no httpRootDir: the console (when its files are installed) */
    if (!srv->root_dir && http->cfg.console_dir && http->cfg.console_dir[0]) {
        srv->console = true;
        if (!(srv->root_dir = strdup(http->cfg.console_dir))) {
            server_free(srv);
            return JN_ENOMEM;
        }
    }
    atomic_init(&srv->stopping, false);
    *out = srv;
    return 0;
}

/* srv's libwebsockets context, listening on cfg's port (0: any), with the
 * file mounts when srv has a root folder and TLS when cfg has a
 * certificate. Returns 0, or JN_EINVAL with why set (the port or the
 * certificate refused). Caller's thread; srv is not yet shared. */
static int server_listen(server_t *srv, const jn_endpoint_http_config_t *cfg, char *why,
                         size_t whylen)
{
    if (srv->root_dir) { /* our paths stay ours; the rest are files */
        set_mount(&srv->mounts[0], "/metrics", "junction-http", LWSMPRO_CALLBACK, NULL);
        set_mount(&srv->mounts[1], "/healthz", "junction-http", LWSMPRO_CALLBACK, NULL);
        set_mount(&srv->mounts[2], "/", srv->root_dir, LWSMPRO_FILE, "index.html");
        srv->mounts[0].mount_next = &srv->mounts[1];
        srv->mounts[1].mount_next = &srv->mounts[2];
    }
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = cfg->port;
    info.iface = srv->host;
    info.protocols = protocols;
    info.mounts = srv->root_dir ? &srv->mounts[0] : NULL;
    info.vhost_name = srv->name;
    info.options = LWS_SERVER_OPTION_VALIDATE_UTF8 | LWS_SERVER_OPTION_DISABLE_IPV6;
    info.max_http_header_data = HEADER_MAX;
    info.timeout_secs = HTTP_TIMEOUT_S;
    info.timeout_secs_ah_idle = HTTP_TIMEOUT_S;
    if (srv->tls) {
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        pthread_mutex_lock(&srv->http->lock);
        if (!srv->http->client_tls)
            srv->http->client_tls = SSL_CTX_new(TLS_client_method());
        info.provided_client_ssl_ctx = srv->http->client_tls;
        pthread_mutex_unlock(&srv->http->lock);
        info.ssl_cert_filepath = cfg->cert_file;
        info.ssl_private_key_filepath = cfg->key_file;
        info.ssl_ca_filepath = cfg->ca_file && cfg->ca_file[0] ? cfg->ca_file : NULL;
        info.ssl_private_key_password = cfg->key_password;
        info.ssl_cipher_list = cfg->ciphers && cfg->ciphers[0] ? cfg->ciphers : NULL;
        if (srv->client_cert)
            info.options |= LWS_SERVER_OPTION_REQUIRE_VALID_OPENSSL_CLIENT_CERT;
        if (srv->plain_too) /* lws tells the two apart by the first octet */
            info.options |= LWS_SERVER_OPTION_ALLOW_NON_SSL_ON_SSL_PORT |
                            LWS_SERVER_OPTION_ALLOW_HTTP_ON_HTTPS_LISTENER;
    }
    info.gid = -1;
    info.uid = -1;
    info.user = srv;
    errno = 0;
    srv->ctx = lws_create_context(&info);
    if (!srv->ctx) {
        snprintf(why, whylen, "cannot listen on %s:%d%s%s", srv->host ? srv->host : "",
                 cfg->port, errno ? ": " : "", errno ? strerror(errno) : "");
        return JN_EINVAL;
    }
    srv->port = lws_get_vhost_listen_port(lws_get_vhost_by_name(srv->ctx, srv->name));
    return 0;
}

int jn_http_add_listener(jn_http_t *http, const jn_endpoint_http_config_t *cfg, char *err,
                         size_t errlen)
{
    char why[256] = "";
    server_t *srv = NULL;
    int rc = server_new(http, cfg, why, sizeof why, &srv);
    if (rc == 0)
        rc = server_listen(srv, cfg, why, sizeof why);
    if (rc == 0 && pthread_create(&srv->thread, NULL, service_main, srv) != 0) {
        lws_context_destroy(srv->ctx);
        rc = JN_ENOMEM;
    }
    if (rc != 0) {
        server_free(srv);
        if (err && errlen)
            snprintf(err, errlen, "%s",
                     why[0]                ? why
                     : rc == JN_EEXIST     ? "an http listener has that name"
                                           : jn_strerror(rc));
        return rc;
    }
    pthread_mutex_lock(&http->lock);
    srv->next = http->servers;
    http->servers = srv;
    pthread_mutex_unlock(&http->lock);
    JN_LOG(JN_LOG_MOD_HTTP, JN_LOG_NOTICE, "Listening for HTTP%s on %s:%d%s%s%s%s",
           srv->tls ? "S" : "", srv->host ? srv->host : "", srv->port,
           srv->metrics ? " (/metrics)" : "", srv->healthz ? " (/healthz)" : "",
           srv->console ? " (console)" : srv->root_dir ? " (files)" : "",
           srv->websockets ? " (AMQP over WebSocket)" : "");
    return 0;
}

int jn_http_remove_listener(jn_http_t *http, const char *name)
{
    server_t *srv = NULL;
    pthread_mutex_lock(&http->lock);
    for (server_t **p = &http->servers; *p; p = &(*p)->next)
        if (strcmp((*p)->name, name) == 0) {
            srv = *p;
            *p = srv->next;
            break;
        }
    pthread_mutex_unlock(&http->lock);
    if (!srv)
        return JN_ENOENT;
    server_stop(srv);
    return 0;
}

int jn_http_listener_port(jn_http_t *http, const char *name, char *buf, size_t cap)
{
    int rc = JN_ENOENT;
    pthread_mutex_lock(&http->lock);
    for (server_t *l = http->servers; l; l = l->next)
        if (name && strcmp(l->name, name) == 0) {
            snprintf(buf, cap, "%d", l->port);
            rc = 0;
            break;
        }
    pthread_mutex_unlock(&http->lock);
    return rc;
}

void jn_http_set_render_ctx(jn_http_t *http, void *ctx)
{
    http->cfg.render_ctx = ctx;
}

void jn_http_set_state(jn_http_t *http, jn_http_state_t state)
{
    if (http)
        atomic_store(&http->state, state);
}

void jn_http_stop(jn_http_t *http)
{
    if (!http)
        return;
    atomic_store(&http->state, JN_HTTP_STOPPING);
    pthread_mutex_lock(&http->lock);
    http->stopped = true;
    server_t *all = http->servers;
    http->servers = NULL;
    pthread_mutex_unlock(&http->lock);
    while (all) {
        server_t *srv = all;
        all = srv->next;
        server_stop(srv);
    }
}

void jn_http_free(jn_http_t *http)
{
    if (!http)
        return;
    jn_http_stop(http);
    SSL_CTX_free(http->client_tls);
    pthread_mutex_destroy(&http->lock);
    free(http);
}
