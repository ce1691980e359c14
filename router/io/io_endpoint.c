/*
 * io_endpoint.c — listeners and connectors (the `listener` and `connector`
 * entities): their checked copy of the configuration, the listener's
 * events (each accepted connection given Junction's own engine: io_own.c),
 * and the connector's attempts and retry timing.
 *
 * Retry timing (connector): the first attempt is made at start. After a
 * connection that reached open is lost, the next attempt comes 100 ms later;
 * each further attempt that fails before open doubles the delay, up to 5 s,
 * where it stays (100, 200, 400, 800 ms, 1.6, 3.2, 5, 5, ... s). qdrouterd
 * 1.19 waits 2 s after a loss and 5 s after a failure; a faster first retry
 * brings a restarted peer back sooner, and the 5 s ceiling keeps an absent
 * peer at qdrouterd's rate.
 *
 * Listening: the sockets are bound when the listener is added (or at start),
 * so a port that cannot be bound is known at once; loop 0 accepts on them
 * (level-triggered: what it leaves in the backlog it sees again) and alone
 * closes them. Each accepted connection goes to a loop, round robin.
 *
 * Threads: jn_io_add_* on the main thread before start, or any thread
 * (management) after; accepting on loop 0; connection attempts (name
 * resolution may block) on the connector thread, asked for by the retry
 * timers (loop 0) and at start; endpoint state under io->lock.
 */
#include "io_own.h"

#include <junction/time.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* How long a listener stops accepting after the process ran out of
 * descriptors (EMFILE/ENFILE): level-triggered, it would otherwise spin. */
#define ACCEPT_PAUSE_MS 100u

#define RETRY_FIRST_MS 100u
#define RETRY_MAX_MS   5000u

static void connector_retry_fire(jn_io_timer_t *timer);
static void accept_pause_fire(jn_io_timer_t *timer);
static void endpoint_removed_fire(jn_io_timer_t *timer);

static const char *role_name(jn_conn_role_t role)
{
    switch (role) {
    case JN_ROLE_NORMAL:
        return "normal";
    case JN_ROLE_INTER_ROUTER:
        return "inter-router";
    case JN_ROLE_ROUTE_CONTAINER:
        return "route-container";
    case JN_ROLE_EDGE:
        return "edge";
    }
    return "?";
}

void jn_io_endpoint_free(jn_io_endpoint_t *ep)
{
    if (!ep)
        return;
    free((char *)ep->cfg.name);
    free((char *)ep->cfg.host);
    free((char *)ep->cfg.port);
    free((char *)ep->cfg.sasl_mechanisms);
    free((char *)ep->cfg.ssl_profile);
    free((char *)ep->cfg.sasl_username);
    free((char *)ep->cfg.policy_vhost);
    free((char *)ep->cfg.failover_urls);
    jn_io_failover_free(&ep->failover);
    free((void *)ep->cfg.open_properties);
    free((char *)ep->cfg.auth_service_host);
    free((char *)ep->cfg.auth_service_port);
    free((char *)ep->cfg.auth_service_realm);
    free((char *)ep->cfg.auth_service_ssl_profile);
    jn_io_endpoint_free(ep->authsvc);
    if (ep->cfg.sasl_password) {
        char *pw = (char *)ep->cfg.sasl_password;
        memset(pw, 0, strlen(pw));
        free(pw);
    }
    free(ep);
}

/* Fill the defaults io.h promises; copy the strings. */
static int endpoint_copy(jn_io_endpoint_t *ep, const jn_endpoint_config_t *cfg)
{
    bool failed = false;
    ep->cfg = *cfg;
    if (cfg->message_logging) /* message logging: receivers locate what it reads */
        atomic_store_explicit(&jn_io_msg_log_any_, true, memory_order_relaxed);
    ep->cfg.name = jn_strdup_opt(cfg->name, &failed);
    ep->cfg.host = jn_strdup_opt(cfg->host ? cfg->host : "", &failed);
    ep->cfg.port = jn_strdup_opt(cfg->port && cfg->port[0] ? cfg->port : "amqp", &failed);
    ep->cfg.sasl_mechanisms = jn_strdup_opt(cfg->sasl_mechanisms, &failed);
    ep->cfg.sasl_username = jn_strdup_opt(cfg->sasl_username, &failed);
    ep->cfg.policy_vhost = cfg->policy_vhost && cfg->policy_vhost[0]
                               ? jn_strdup_opt(cfg->policy_vhost, &failed)
                               : NULL;
    ep->cfg.sasl_password = jn_strdup_opt(cfg->sasl_password, &failed);
    ep->cfg.failover_urls = cfg->failover_urls && cfg->failover_urls[0]
                                ? jn_strdup_opt(cfg->failover_urls, &failed)
                                : NULL;
    ep->cfg.open_properties = NULL;
    ep->cfg.open_properties_len = 0;
    if (cfg->open_properties && cfg->open_properties_len) {
        uint8_t *op = malloc(cfg->open_properties_len);
        if (op) {
            memcpy(op, cfg->open_properties, cfg->open_properties_len);
            ep->cfg.open_properties = op;
            ep->cfg.open_properties_len = cfg->open_properties_len;
        } else {
            failed = true;
        }
    }
    ep->cfg.ssl_profile =
        cfg->ssl_profile && cfg->ssl_profile[0] ? jn_strdup_opt(cfg->ssl_profile, &failed) : NULL;
    bool auth = cfg->auth_service_host && cfg->auth_service_host[0];
    ep->cfg.auth_service_host = auth ? jn_strdup_opt(cfg->auth_service_host, &failed) : NULL;
    ep->cfg.auth_service_port =
        auth ? jn_strdup_opt(cfg->auth_service_port && cfg->auth_service_port[0]
                                 ? cfg->auth_service_port
                                 : "amqp",
                             &failed)
             : NULL;
    ep->cfg.auth_service_realm = auth && cfg->auth_service_realm && cfg->auth_service_realm[0]
                                     ? jn_strdup_opt(cfg->auth_service_realm, &failed)
                                     : NULL;
    ep->cfg.auth_service_ssl_profile =
        auth && cfg->auth_service_ssl_profile && cfg->auth_service_ssl_profile[0]
            ? jn_strdup_opt(cfg->auth_service_ssl_profile, &failed)
            : NULL;
    if (failed)
        return JN_ENOMEM;
    if (ep->cfg.max_frame_size == 0)
        ep->cfg.max_frame_size = 16384;
    if (ep->cfg.max_frame_size < 512)
        ep->cfg.max_frame_size = 512;
    if (ep->cfg.max_sessions == 0 || ep->cfg.max_sessions > 32768)
        ep->cfg.max_sessions = 32768;
    if (ep->cfg.link_capacity == 0)
        ep->cfg.link_capacity = 250;
    return 0;
}

/* Why the last listener opened on this thread failed (jn_io_last_listen_error). */
static _Thread_local char last_listen_error[256];

static int endpoint_add(jn_io_t *io, const jn_endpoint_config_t *cfg, bool listener)
{
    const char *kind = listener ? "Listener" : "Connector";
    jn_io_endpoint_t *ep = calloc(1, sizeof *ep);
    if (!ep)
        return JN_ENOMEM;
    ep->io = io;
    ep->is_listener = listener;
    ep->retry.fire = connector_retry_fire;
    ep->accept_pause.fire = accept_pause_fire;
    if (endpoint_copy(ep, cfg) != 0) {
        jn_io_endpoint_free(ep);
        return JN_ENOMEM;
    }
    int n = snprintf(ep->shown, sizeof ep->shown, "%s:%s", ep->cfg.host, ep->cfg.port);
    if (n < 0 || (size_t)n >= sizeof ep->shown) {
        JN_LOG(JN_LOG_MOD_CONN_MGR, JN_LOG_ERROR, "%s %s: address too long", kind, ep->shown);
        jn_io_endpoint_free(ep);
        return JN_EINVAL;
    }
    if (listener && ep->cfg.auth_service_host) {
        int rc = jn_io_authsvc_prepare(ep, last_listen_error, sizeof last_listen_error);
        if (rc != 0) {
            JN_LOG(JN_LOG_MOD_AUTHSERVICE, JN_LOG_ERROR, "%s %s: %s", kind, ep->shown,
                   last_listen_error);
            jn_io_endpoint_free(ep);
            return rc;
        }
    }
    pthread_mutex_lock(&io->lock);
    jn_io_endpoint_t **p = &io->endpoints;
    while (*p)
        p = &(*p)->next;
    *p = ep;
    bool started = io->started;
    pthread_mutex_unlock(&io->lock);
    JN_LOG(JN_LOG_MOD_CONN_MGR, JN_LOG_INFO, "Configured %s: %s proto=any, role=%s%s%s", kind,
           ep->shown, role_name(ep->cfg.role), ep->cfg.ssl_profile ? ", sslProfile=" : "",
           ep->cfg.ssl_profile ? ep->cfg.ssl_profile : "");
    if (started) {
        if (listener) {
            pthread_mutex_lock(&io->lock);
            int rc = jn_io_listen(io, ep);
            if (rc != 0) {
                ep->retry.fire = endpoint_removed_fire; /* dead: lookups skip it */
                atomic_store(&ep->removed, true);
            }
            pthread_mutex_unlock(&io->lock);
            if (rc != 0)
                return rc; /* cannot listen (logged): management answers 400 */
        } else {
            jn_io_connect(ep);
        }
    }
    return 0;
}

int jn_io_add_listener(jn_io_t *io, const jn_endpoint_config_t *cfg)
{
    return endpoint_add(io, cfg, true);
}

int jn_io_add_connector(jn_io_t *io, const jn_endpoint_config_t *cfg)
{
    return endpoint_add(io, cfg, false);
}

/* Give conn (not started) TLS when its endpoint has an sslProfile: the
 * profile registered under that name now. Returns 0 (TLS set up, or none
 * wanted), JN_ENOENT (no such profile: logged) or JN_ENOMEM. */
static int endpoint_tls(jn_io_endpoint_t *ep, jn_io_conn_t *conn, bool server)
{
    const jn_endpoint_config_t *cfg = &ep->cfg;
    if (!cfg->ssl_profile)
        return 0;
    jn_tls_profile_t *p = jn_io_tls_profile_get(ep->io, cfg->ssl_profile);
    if (!p) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               JN_IO_CONN_FMT " Connection %s %s refused: sslProfile '%s' is not configured",
               conn->id, server ? "from" : "to", conn->host, cfg->ssl_profile);
        return JN_ENOENT;
    }
    bool detect = server && !cfg->require_ssl && !cfg->require_encryption;
    int rc = jn_io_tls_attach(conn, p, server, detect);
    jn_tls_profile_unref(p);
    return rc;
}

/* The port a bound socket got (host order; 0 when unknown). */
static uint16_t bound_port(int fd)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        return 0;
    if (sa.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&sa)->sin_port);
    if (sa.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
    return 0;
}

static void set_port(struct sockaddr *sa, uint16_t port)
{
    if (sa->sa_family == AF_INET)
        ((struct sockaddr_in *)sa)->sin_port = htons(port);
    else if (sa->sa_family == AF_INET6)
        ((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

/* Resolve host:port (ep's own when host is NULL) for ep (passive for a
 * listener); NULL with the error in err. */
static struct addrinfo *resolve_at(jn_io_endpoint_t *ep, const char *host, const char *port,
                                   bool passive, char *err, size_t errlen)
{
    struct addrinfo hints = {
        .ai_family = ep->cfg.family, .ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP};
    if (passive)
        hints.ai_flags = AI_PASSIVE;
    if (!host) {
        host = ep->cfg.host;
        port = ep->cfg.port;
    }
    if (host && !host[0])
        host = NULL;
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "%s", rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        return NULL;
    }
    return res;
}

const char *jn_io_last_listen_error(void)
{
    return last_listen_error;
}

/* jn_io_listen: bind and listen on every address ep's host resolves to and
 * register the sockets with loop 0. state becomes OPEN, or FAILED with the
 * error logged (JN_EINVAL). io->lock held. */
int jn_io_listen(jn_io_t *io, jn_io_endpoint_t *ep)
{
    if (ep->cfg.bridged) { /* no socket: its connections come through jn_io_bridge_open */
        ep->nsocks = 0;
        ep->state = JN_EP_OPEN;
        return 0;
    }
    char err[256] = "";
    struct addrinfo *res = resolve_at(ep, NULL, NULL, true, err, sizeof err);
    ep->nsocks = 0;
    ep->bound_port = 0;
    for (struct addrinfo *ai = res; ai && ep->nsocks < JN_IO_MAX_LISTEN_SOCKETS;
         ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        ai->ai_protocol);
        if (fd < 0) {
            snprintf(err, sizeof err, "%s", strerror(errno));
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (ai->ai_family == AF_INET6)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        if (ep->bound_port) /* port 0: every address gets the port the first got */
            set_port(ai->ai_addr, ep->bound_port);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
            listen(fd, JN_IO_LISTEN_BACKLOG) != 0) {
            snprintf(err, sizeof err, "%s", strerror(errno));
            close(fd);
            continue;
        }
        jn_io_lsock_t *ls = &ep->socks[ep->nsocks];
        ls->handle.kind = JN_POLL_LISTENER;
        ls->fd = fd;
        ls->ep = ep;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ls->handle};
        if (epoll_ctl(io->loops[0].epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            snprintf(err, sizeof err, "%s", strerror(errno));
            close(fd);
            continue;
        }
        if (ep->nsocks == 0)
            ep->bound_port = bound_port(fd);
        ep->nsocks++;
    }
    if (res)
        freeaddrinfo(res);
    if (ep->nsocks == 0) {
        ep->state = JN_EP_FAILED;
        snprintf(last_listen_error, sizeof last_listen_error, "%s", err[0] ? err : "no address");
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, "Listener error on %s: %s (proton:io)", ep->shown,
               last_listen_error);
        return JN_EINVAL;
    }
    ep->state = JN_EP_OPEN;
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_NOTICE, "Listening on %s:%u", ep->cfg.host, ep->bound_port);
    return 0;
}

int jn_io_listener_port(jn_io_t *io, const char *name, char *buf, size_t cap)
{
    int rc = JN_ENOENT;
    pthread_mutex_lock(&io->lock);
    for (jn_io_endpoint_t *ep = io->endpoints; ep && rc != 0; ep = ep->next)
        if (ep->is_listener && !atomic_load(&ep->removed) && ep->state == JN_EP_OPEN &&
            ep->cfg.name && name && strcmp(ep->cfg.name, name) == 0) {
            snprintf(buf, cap, "%u", ep->bound_port);
            rc = 0;
        }
    pthread_mutex_unlock(&io->lock);
    return rc;
}

int jn_io_connector_status(jn_io_t *io, const char *name, bool *opened, char *msg, size_t cap)
{
    int rc = JN_ENOENT;
    pthread_mutex_lock(&io->lock);
    for (jn_io_endpoint_t *ep = io->endpoints; ep && rc != 0; ep = ep->next)
        if (!ep->is_listener && !atomic_load(&ep->removed) && ep->cfg.name && name &&
            strcmp(ep->cfg.name, name) == 0) {
            *opened = ep->status_opened;
            snprintf(msg, cap, "%s", ep->status_msg);
            rc = 0;
        }
    pthread_mutex_unlock(&io->lock);
    return rc;
}

void jn_io_connector_note_IO(jn_io_conn_t *conn, bool opened, const char *fmt, ...)
{
    JN_ASSERT_IO(conn);
    jn_io_endpoint_t *ep = conn->endpoint;
    if (conn->incoming || !ep || ep->is_listener)
        return;
    pthread_mutex_lock(&conn->io->lock);
    ep->status_opened = opened;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ep->status_msg, sizeof ep->status_msg, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&conn->io->lock);
}

/* jn_io_listener_close_locked: close ep's listening sockets now (stop,
 * management DELETE), so the port is free when this returns. Loop 0 may
 * hold an epoll event for a socket closed here: jn_io_accept looks at the
 * state under the lock before it uses the descriptor. io->lock held; any
 * thread. */
void jn_io_listener_close_locked(jn_io_t *io, jn_io_endpoint_t *ep)
{
    if (ep->state != JN_EP_OPEN)
        return;
    for (unsigned i = 0; i < ep->nsocks; i++) {
        epoll_ctl(io->loops[0].epfd, EPOLL_CTL_DEL, ep->socks[i].fd, NULL);
        close(ep->socks[i].fd);
        ep->socks[i].fd = -1;
    }
    ep->nsocks = 0;
    ep->state = JN_EP_CLOSED;
    pthread_cond_broadcast(&io->cond);
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO, "Stopped listening on %s", ep->shown);
}
static void accept_pause_fire(jn_io_timer_t *timer)
{
    jn_io_endpoint_t *ep =
        (jn_io_endpoint_t *)((char *)timer - offsetof(jn_io_endpoint_t, accept_pause));
    jn_io_t *io = ep->io;
    pthread_mutex_lock(&io->lock);
    for (unsigned i = 0; ep->state == JN_EP_OPEN && i < ep->nsocks; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ep->socks[i].handle};
        epoll_ctl(io->loops[0].epfd, EPOLL_CTL_MOD, ep->socks[i].fd, &ev);
    }
    pthread_mutex_unlock(&io->lock);
}

/* "host:port" of a peer address ("[v6]:port" for IPv6). */
static void peer_name(const struct sockaddr_storage *sa, char *out, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        snprintf(out, len, "%s:%u", host, port);
    } else if (sa->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        snprintf(out, len, "[%s]:%u", host, port);
    } else {
        snprintf(out, len, "?");
    }
}

/* refuse: a connection over the limit is closed at once (no AMQP: the
 * descriptor is what we are short of). Logged at most once a second. */
static void refuse(jn_io_t *io, jn_io_endpoint_t *ep, int fd, size_t live)
{
    close(fd);
    int64_t now = jn_time_mono_ms();
    pthread_mutex_lock(&io->lock);
    bool log = now - io->refused_logged_at >= 1000;
    if (log)
        io->refused_logged_at = now;
    pthread_mutex_unlock(&io->lock);
    if (log)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               "Refusing connections on %s: %zu open, the limit from the file-descriptor limit "
               "(ulimit -n) is %zu",
               ep->shown, live, io->max_conns);
}

/* policy.maxConnections (docs/design.md "Policy"): count conn, a new
 * incoming connection, or deny it (false: the caller closes the socket,
 * before any AMQP, as 1.19 does) with one log line. Loop 0's thread. */
static bool policy_accept(jn_io_t *io, jn_io_conn_t *conn)
{
    pthread_mutex_lock(&io->lock);
    io->policy_processed++;
    bool ok = io->policy_max_conns == JN_IO_NO_POLICY_LIMIT ||
              io->policy_current < io->policy_max_conns;
    if (ok) {
        io->policy_current++;
        conn->policy_counted = true;
    } else {
        io->policy_denied++;
    }
    uint64_t current = io->policy_current;
    pthread_mutex_unlock(&io->lock);
    if (!ok)
        JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO,
               "DENY Connection '%s' based on global connection count. nConnections= %" PRIu64
               " (policy maxConnections %" PRIu32 ", listener %s)",
               conn->host, current, io->policy_max_conns, conn->endpoint->shown);
    return ok;
}

/* jn_io_accept: take every connection queued on ls (epoll said readable)
 * and hand each to a loop. Loop 0's thread. */
void jn_io_accept(jn_io_lsock_t *ls)
{
    jn_io_endpoint_t *ep = ls->ep;
    jn_io_t *io = ep->io;
    for (int i = 0; i < JN_IO_LISTEN_BACKLOG; i++) {
        struct sockaddr_storage sa;
        socklen_t salen = sizeof sa;
        /* under the lock: a DELETE or stop may close the socket meanwhile */
        pthread_mutex_lock(&io->lock);
        int fd = ep->state == JN_EP_OPEN && ls->fd >= 0
                     ? accept4(ls->fd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC)
                     : (errno = EBADF, -1);
        int accept_errno = errno;
        size_t live = io->live_conns;
        pthread_mutex_unlock(&io->lock);
        errno = accept_errno;
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
                       "Cannot accept on %s: %s; pausing for %u ms", ep->shown, strerror(errno),
                       ACCEPT_PAUSE_MS);
                struct epoll_event ev = {.events = 0, .data.ptr = &ls->handle};
                epoll_ctl(io->loops[0].epfd, EPOLL_CTL_MOD, ls->fd, &ev);
                jn_io_timer_arm(io, &ep->accept_pause, ACCEPT_PAUSE_MS);
            }
            return; /* EAGAIN: all taken (EBADF: closed meanwhile) */
        }
        if (live >= io->max_conns) {
            refuse(io, ep, fd, live);
            continue;
        }
        jn_io_conn_t *conn = jn_io_conn_new(io, ep, true);
        if (conn)
            peer_name(&sa, conn->host, sizeof conn->host);
        if (conn && !policy_accept(io, conn)) {
            close(fd);
            jn_io_conn_unref(conn); /* never started: freed here */
            continue;
        }
        int tls_rc = conn ? endpoint_tls(ep, conn, true) : 0;
        if (tls_rc == JN_ENOENT) {
            close(fd);
            jn_io_conn_unref(conn); /* never started: freed here */
            continue;
        }
        if (!conn || tls_rc != 0 || (ep->authsvc && jn_io_authsvc_attach(conn) != 0) ||
            jn_io_own_attach(conn) != 0) {
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, "Out of memory accepting a connection on %s",
                   ep->shown);
            close(fd);
            if (conn) {
                jn_io_authsvc_forget(conn); /* its relay, when no engine took it */
                jn_io_conn_unref(conn);     /* never started: freed here */
            }
            continue;
        }
        (void)jn_io_conn_start(conn, fd);
    }
}

/* ---- connectors ---------------------------------------------------------- */

static void connector_retry_fire(jn_io_timer_t *timer)
{
    jn_io_endpoint_t *ep = (jn_io_endpoint_t *)((char *)timer - offsetof(jn_io_endpoint_t, retry));
    jn_io_connect(ep);
}

/* jn_io_connect: ask for one connection attempt for connector ep. The
 * attempt is made on the connector thread (jn_io_connector_main), because
 * resolving a host name (getaddrinfo) may block for seconds and must not
 * stop a loop. Any thread. */
void jn_io_connect(jn_io_endpoint_t *ep)
{
    jn_io_t *io = ep->io;
    pthread_mutex_lock(&io->lock);
    if (!ep->connect_queued) {
        ep->connect_queued = true;
        ep->connect_next = NULL;
        jn_io_endpoint_t **p = &io->connect_queue;
        while (*p)
            p = &(*p)->connect_next;
        *p = ep;
        pthread_cond_broadcast(&io->connect_cond);
    }
    pthread_mutex_unlock(&io->lock);
}

/* One connection attempt for connector ep: resolve its host, start a
 * non-blocking connect to the first address and hand the connection to a
 * loop, which tries the next address if that one fails. A failure to
 * resolve closes the connection at its first pass with the error, and the
 * retry timing goes on as for any failed attempt. The connector thread. */
static void connect_now(jn_io_endpoint_t *ep)
{
    jn_io_t *io = ep->io;
    if (atomic_load(&io->stopping) || atomic_load(&ep->removed))
        return;
    jn_io_conn_t *conn = jn_io_conn_new(io, ep, false);
    int tls_rc = conn ? endpoint_tls(ep, conn, false) : 0;
    if (tls_rc == JN_ENOENT) {
        jn_io_conn_unref(conn); /* never started: freed here */
        jn_io_timer_arm(io, &ep->retry, RETRY_MAX_MS);
        return;
    }
    if (!conn || tls_rc != 0) {
        if (conn)
            jn_io_conn_unref(conn); /* never started: freed here */
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, "Out of memory connecting to %s", ep->shown);
        jn_io_timer_arm(io, &ep->retry, RETRY_MAX_MS);
        return;
    }
    char host[JN_IO_FAILOVER_HOST_MAX], port[32];
    pthread_mutex_lock(&io->lock);
    ep->conn = conn;
    ep->state = JN_EP_PENDING;
    jn_io_failover_target_locked(ep, host, sizeof host, port, sizeof port);
    pthread_mutex_unlock(&io->lock);
    snprintf(conn->host, sizeof conn->host, "%s:%s", host, port);
    if (jn_io_own_attach_client(conn, host) != 0) {
        pthread_mutex_lock(&io->lock);
        if (ep->conn == conn)
            ep->conn = NULL;
        ep->state = JN_EP_IDLE;
        pthread_mutex_unlock(&io->lock);
        jn_io_conn_unref(conn); /* never started: freed here */
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, "Out of memory connecting to %s", ep->shown);
        jn_io_timer_arm(io, &ep->retry, RETRY_MAX_MS);
        return;
    }
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO, JN_IO_CONN_FMT " Connecting to %s", conn->id, conn->host);
    char err[256] = "";
    conn->ai_list = resolve_at(ep, host, port, false, err, sizeof err);
    if (!conn->ai_list) /* its first pass ends it as a refused connect */
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
               JN_IO_CONN_FMT " Connection to %s failed: %s - resolving %s", conn->id, conn->host,
               err[0] ? err : "unknown host", host);
    (void)jn_io_conn_start(conn, -1); /* conn now belongs to its loop */
}

/* jn_io_connector_main: the connector thread (pthread start routine, arg
 * the jn_io_t): makes the attempts jn_io_connect queues, one at a time,
 * until io->connector_exit. */
void *jn_io_connector_main(void *arg)
{
    jn_io_t *io = arg;
    pthread_mutex_lock(&io->lock);
    while (!io->connector_exit) {
        jn_io_endpoint_t *ep = io->connect_queue;
        if (!ep) {
            pthread_cond_wait(&io->connect_cond, &io->lock);
            continue;
        }
        io->connect_queue = ep->connect_next;
        ep->connect_next = NULL;
        ep->connect_queued = false;
        ep->users++; /* a management DELETE meanwhile must not free it */
        pthread_mutex_unlock(&io->lock);
        connect_now(ep);
        pthread_mutex_lock(&io->lock);
        ep->users--;
    }
    pthread_mutex_unlock(&io->lock);
    return NULL;
}

/* jn_io_connector_closed_IO: conn, made by connector ep, is gone; was_open
 * when it had reached open. Schedules the next attempt. */
void jn_io_connector_closed_IO(jn_io_endpoint_t *ep, jn_io_conn_t *conn, bool was_open)
{
    JN_ASSERT_IO(conn);
    jn_io_t *io = ep->io;
    pthread_mutex_lock(&io->lock);
    if (ep->conn == conn)
        ep->conn = NULL;
    ep->state = JN_EP_IDLE;
    ep->status_opened = false; /* connecting again */
    if (was_open)
        ep->failures = 0;
    unsigned delay = RETRY_FIRST_MS;
    for (unsigned i = 0; i < ep->failures && delay < RETRY_MAX_MS; i++)
        delay *= 2;
    if (delay > RETRY_MAX_MS)
        delay = RETRY_MAX_MS;
    if (!was_open)
        ep->failures++;
    jn_io_failover_advance_locked(ep); /* the next host of its list, if any */
    bool stopping = atomic_load(&io->stopping);
    pthread_mutex_unlock(&io->lock);
    if (stopping || atomic_load(&ep->removed))
        return;
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO, "Connector %s: retrying in %u ms", ep->shown, delay);
    jn_io_timer_arm(io, &ep->retry, delay);
}

/* ---- removal (management DELETE) ----------------------------------------- */

/* The retry function of a removed endpoint: it does nothing, so a removed
 * connector never connects again (its current connection, if any, is
 * closed by the core at management's request). Also marks a removed
 * listener, whose retry timer is never used. */
static void endpoint_removed_fire(jn_io_timer_t *timer)
{
    (void)timer;
}

/* Whether removed endpoint ep can be freed now: nothing uses it (its
 * connections and its auth-service child's are gone, no thread holds it),
 * no attempt of it is queued and none of its timers is armed. io->lock
 * held. */
static bool endpoint_unused_locked(const jn_io_endpoint_t *ep)
{
    return ep->users == 0 && !ep->connect_queued && !ep->retry.armed && !ep->accept_pause.armed &&
           (!ep->authsvc || (ep->authsvc->users == 0 && !ep->authsvc->retry.armed));
}

/* The sweep (loop 0's timer, so after the events of its pass: a listening
 * socket's event read before the DELETE closed it has been handled, and
 * no timer of an endpoint is firing): frees every removed endpoint that
 * nothing uses any more, and comes back in a second while one is left. */
static void endpoint_sweep_fire(jn_io_timer_t *timer)
{
    jn_io_t *io = (jn_io_t *)((char *)timer - offsetof(jn_io_t, endpoint_sweep));
    jn_io_endpoint_t *gone = NULL;
    bool left = false;
    pthread_mutex_lock(&io->lock);
    for (jn_io_endpoint_t **p = &io->endpoints; *p;) {
        jn_io_endpoint_t *ep = *p;
        if (!atomic_load(&ep->removed) || ep->retry.fire != endpoint_removed_fire) {
            p = &ep->next;
        } else if (!endpoint_unused_locked(ep)) {
            left = true;
            p = &ep->next;
        } else {
            *p = ep->next;
            ep->next = gone;
            gone = ep;
        }
    }
    if (left && !atomic_load(&io->stopping))
        jn_io_timer_arm_at_locked(io, &io->endpoint_sweep, (int64_t)jn_time_mono_ms() + 1000);
    pthread_mutex_unlock(&io->lock);
    while (gone) {
        jn_io_endpoint_t *next = gone->next;
        JN_LOG(JN_LOG_MOD_CONN_MGR, JN_LOG_DEBUG, "Freed the removed %s %s (%s): nothing uses it",
               gone->is_listener ? "listener" : "connector",
               gone->cfg.name ? gone->cfg.name : "", gone->shown);
        jn_io_endpoint_free(gone);
        gone = next;
    }
}

void jn_io_endpoint_release(jn_io_endpoint_t *ep)
{
    jn_io_t *io = ep->io;
    pthread_mutex_lock(&io->lock);
    ep->users--;
    pthread_mutex_unlock(&io->lock);
}

int jn_io_remove_endpoint(jn_io_t *io, const char *name)
{
    if (!io || !name)
        return JN_ENOENT;
    pthread_mutex_lock(&io->lock);
    jn_io_endpoint_t *ep = io->endpoints;
    while (ep && (ep->retry.fire == endpoint_removed_fire || !ep->cfg.name ||
                  strcmp(ep->cfg.name, name) != 0))
        ep = ep->next;
    if (!ep) {
        pthread_mutex_unlock(&io->lock);
        return JN_ENOENT;
    }
    ep->retry.fire = endpoint_removed_fire;
    atomic_store(&ep->removed, true);
    jn_io_conn_t *attempt = NULL;
    if (ep->is_listener) {
        jn_io_listener_close_locked(io, ep);
    } else {
        if (ep->conn) {
            attempt = ep->conn; /* an attempt not yet open ends at its next pass */
            if (!jn_io_conn_tryref(attempt))
                attempt = NULL; /* being freed: nothing to end */
        }
        if (ep->retry.armed)
            jn_io_timer_cancel_locked(io, &ep->retry);
    }
    JN_LOG(JN_LOG_MOD_CONN_MGR, JN_LOG_INFO, "Removed %s %s (%s)",
           ep->is_listener ? "listener" : "connector", name, ep->shown);
    /* the endpoint is freed by the sweep once nothing uses it (ep may be
     * gone once the lock is dropped) */
    io->endpoint_sweep.fire = endpoint_sweep_fire;
    if (io->started && !io->endpoint_sweep.armed && !atomic_load(&io->stopping))
        jn_io_timer_arm_at_locked(io, &io->endpoint_sweep, (int64_t)jn_time_mono_ms() + 1000);
    pthread_mutex_unlock(&io->lock);
    if (attempt) {
        jn_io_conn_wake(attempt);
        jn_io_conn_unref(attempt);
    }
    return 0;
}
