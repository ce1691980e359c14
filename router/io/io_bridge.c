/*
 * io_bridge.c — bridged connections (junction/io.h, "bridged
 * connections"): an accepted AMQP connection whose octets come from and go
 * to another thread through two bounded buffers instead of a socket. Used
 * for AMQP over WebSocket (docs/design.md, "HTTP").
 *
 * How it fits: a bridged connection is an ordinary io_conn of a listener
 * whose cfg.bridged is set, started on a loop by jn_io_conn_start with no
 * socket; conn->bridge is set, so that conn_pass (io_loop.c) reads with
 * jn_io_bridge_read_IO instead of recv() and writes with
 * jn_io_bridge_write_IO instead of send(). Everything else — SASL, the
 * own engine, the core's work, the idle timeout, the initial handshake
 * timeout, the write-stall cut — is the daemon's code for every
 * connection.
 *
 * Sharing: the bridge is refcounted (the owner's reference, dropped by
 * jn_io_bridge_close; the connection's, dropped when it is destroyed).
 * Its buffers and flags are under its own mutex, taken once per read or
 * write step of the connection and once per push or pull of the owner —
 * per batch of frames, never per message. The owner also holds a
 * reference on the connection (to wake it) until it closes.
 */
#include "io_own.h"
#include "io_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Octets of the own engine's output gathered per move into the output
 * buffer (its runs are many and small: frame headers, performatives). */
#define JN_IO_BRIDGE_STAGE 16384

/* A growable octet buffer: data[off, len) is pending. */
typedef struct bbuf {
    uint8_t *data;
    size_t off, len, cap;
} bbuf_t;

struct jn_io_bridge {
    atomic_int refs;
    jn_io_conn_t *conn; /* the owner's reference; immutable */
    pthread_mutex_t lock;
    /* under lock */
    bbuf_t in, out;
    bool in_full;     /* a push found the input full: notify once it has room */
    bool owner_gone;  /* jn_io_bridge_close: input ends, no more notify */
    bool conn_gone;   /* the connection was destroyed: output ends */
    jn_io_bridge_notify_fn notify;
    void *ctx;
    /* the owner's TLS (jn_io_bridge_tls_t), immutable after open */
    bool tls;
    int ssf;
    char proto[24];
    char cipher[64];
    char peer_uid[256]; /* the verified client certificate's user, "" if none */
};

static void bridge_unref(jn_io_bridge_t *b)
{
    if (atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&b->lock);
    free(b->in.data);
    free(b->out.data);
    free(b);
}

static size_t pending(const bbuf_t *x)
{
    return x->len - x->off;
}

/* Append n octets to x (growing it). false on ENOMEM. */
static bool bbuf_append(bbuf_t *x, const uint8_t *data, size_t n)
{
    if (x->off > 0 && x->len + n > x->cap) { /* compact first */
        memmove(x->data, x->data + x->off, x->len - x->off);
        x->len -= x->off;
        x->off = 0;
    }
    if (x->len + n > x->cap) {
        size_t cap = x->cap ? x->cap : 16384;
        while (cap < x->len + n)
            cap *= 2;
        uint8_t *d = realloc(x->data, cap);
        if (!d)
            return false;
        x->data = d;
        x->cap = cap;
    }
    memcpy(x->data + x->len, data, n);
    x->len += n;
    return true;
}

/* Take up to cap octets out of x into buf. */
static size_t bbuf_take(bbuf_t *x, uint8_t *buf, size_t cap)
{
    size_t n = pending(x) < cap ? pending(x) : cap;
    if (n == 0)
        return 0; /* x->data may be NULL */
    memcpy(buf, x->data + x->off, n);
    x->off += n;
    if (x->off == x->len)
        x->off = x->len = 0;
    return n;
}

/* b's copy of the owner's TLS facts; the client certificate's uid by the
 * listener's profile (uidFormat, uidNameMappingFile), as io_tls.c does
 * for a TCP connection. */
static void bridge_set_tls(jn_io_bridge_t *b, jn_io_t *io, const jn_endpoint_config_t *cfg,
                           const jn_io_bridge_tls_t *tls)
{
    b->tls = true;
    b->ssf = tls->ssf;
    snprintf(b->proto, sizeof b->proto, "%s", tls->proto ? tls->proto : "");
    snprintf(b->cipher, sizeof b->cipher, "%s", tls->cipher ? tls->cipher : "");
    if (!tls->peer_cert || !tls->peer_verified)
        return;
    jn_tls_profile_t *p = cfg->ssl_profile ? jn_io_tls_profile_get(io, cfg->ssl_profile) : NULL;
    if (jn_tls_profile_peer_uid(p, tls->peer_cert, b->peer_uid, sizeof b->peer_uid) != 0)
        b->peer_uid[0] = '\0';
    jn_tls_profile_unref(p);
}

static jn_io_bridge_t *bridge_open(jn_io_t *io, jn_io_endpoint_t *ep, size_t live,
                                   const char *peer, const jn_io_bridge_tls_t *tls,
                                   jn_io_bridge_notify_fn notify, void *ctx, int *err);

jn_io_bridge_t *jn_io_bridge_open(jn_io_t *io, const char *listener, const char *peer,
                                  const jn_io_bridge_tls_t *tls, jn_io_bridge_notify_fn notify,
                                  void *ctx, int *err)
{
    *err = JN_ENOENT;
    pthread_mutex_lock(&io->lock);
    jn_io_endpoint_t *ep = io->endpoints;
    while (ep && !(ep->is_listener && ep->cfg.bridged && !atomic_load(&ep->removed) &&
                   ep->cfg.name && strcmp(ep->cfg.name, listener) == 0))
        ep = ep->next;
    size_t live = io->live_conns;
    bool up = io->started && !atomic_load(&io->stopping);
    if (ep && up)
        ep->users++; /* a management DELETE meanwhile must not free it */
    pthread_mutex_unlock(&io->lock);
    if (!ep || !up)
        return NULL;
    jn_io_bridge_t *b = bridge_open(io, ep, live, peer, tls, notify, ctx, err);
    jn_io_endpoint_release(ep); /* the connection, if made, holds it now */
    return b;
}

/* jn_io_bridge_open for listener ep (held by the caller), with live
 * connections open. */
static jn_io_bridge_t *bridge_open(jn_io_t *io, jn_io_endpoint_t *ep, size_t live,
                                   const char *peer, const jn_io_bridge_tls_t *tls,
                                   jn_io_bridge_notify_fn notify, void *ctx, int *err)
{
    if (live >= io->max_conns) {
        *err = JN_EOVERFLOW;
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               "Refusing a WebSocket connection from %s on %s: %zu open, the limit from the "
               "file-descriptor limit (ulimit -n) is %zu",
               peer, ep->shown, live, io->max_conns);
        return NULL;
    }
    if (!tls && (ep->cfg.require_ssl || ep->cfg.require_encryption)) {
        /* the owner serves TLS only on such a listener: a second guard */
        *err = JN_EINVAL;
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               "Refusing a WebSocket connection from %s on %s: it is not encrypted and the "
               "listener has %s",
               peer, ep->shown, ep->cfg.require_ssl ? "requireSsl" : "requireEncryption");
        return NULL;
    }
    *err = JN_ENOMEM;
    jn_io_bridge_t *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    atomic_init(&b->refs, 2); /* the owner's, the connection's */
    pthread_mutex_init(&b->lock, NULL);
    b->notify = notify;
    b->ctx = ctx;
    if (tls)
        bridge_set_tls(b, io, &ep->cfg, tls);
    jn_io_conn_t *conn = jn_io_conn_new(io, ep, true);
    /* a bridged client's SASL is Cyrus's (or the built-in ANONYMOUS),
     * never the auth service's relay: the relay is made only for a socket
     * accepted on the listener (io_endpoint.c) */
    if (!conn || jn_io_own_attach(conn) != 0) {
        if (conn)
            jn_io_conn_unref(conn); /* never started: freed here */
        pthread_mutex_destroy(&b->lock);
        free(b);
        return NULL;
    }
    snprintf(conn->host, sizeof conn->host, "%s", peer);
    conn->bridge = b;
    b->conn = conn;
    atomic_fetch_add(&conn->refs, 1); /* the owner's, through b */
    (void)jn_io_conn_start(conn, -1);
    *err = 0;
    return b;
}

bool jn_io_bridge_tls_info(const jn_io_conn_t *conn, const char **proto, const char **cipher,
                           int *ssf, const char **peer_uid)
{
    const jn_io_bridge_t *b = conn->bridge;
    if (!b || !b->tls)
        return false;
    *proto = b->proto;
    *cipher = b->cipher;
    *ssf = b->ssf;
    *peer_uid = b->peer_uid[0] ? b->peer_uid : NULL;
    return true;
}

bool jn_io_bridge_push(jn_io_bridge_t *b, const uint8_t *data, size_t len)
{
    pthread_mutex_lock(&b->lock);
    bool was_empty = pending(&b->in) == 0;
    bool ok = b->conn_gone || bbuf_append(&b->in, data, len);
    bool room = pending(&b->in) < JN_IO_BRIDGE_IN_CAP;
    if (!room)
        b->in_full = true;
    pthread_mutex_unlock(&b->lock);
    if (!ok) { /* out of memory: the connection cannot go on */
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR,
               JN_IO_CONN_FMT " Out of memory taking a WebSocket peer's input", b->conn->id);
        room = false;
    }
    if (was_empty && len > 0)
        jn_io_conn_wake(b->conn);
    return room;
}

bool jn_io_bridge_has_room(jn_io_bridge_t *b)
{
    pthread_mutex_lock(&b->lock);
    bool room = b->conn_gone || pending(&b->in) < JN_IO_BRIDGE_IN_CAP;
    pthread_mutex_unlock(&b->lock);
    return room;
}

size_t jn_io_bridge_input_pending(jn_io_bridge_t *b)
{
    pthread_mutex_lock(&b->lock);
    size_t n = pending(&b->in);
    pthread_mutex_unlock(&b->lock);
    return n;
}

size_t jn_io_bridge_pull(jn_io_bridge_t *b, uint8_t *buf, size_t cap, bool *ended)
{
    pthread_mutex_lock(&b->lock);
    bool was_full = pending(&b->out) >= JN_IO_BRIDGE_OUT_CAP;
    size_t n = bbuf_take(&b->out, buf, cap);
    *ended = b->conn_gone && pending(&b->out) == 0;
    pthread_mutex_unlock(&b->lock);
    if (was_full && n > 0)
        jn_io_conn_wake(b->conn); /* room for more of the engine's output */
    return n;
}

void jn_io_bridge_close(jn_io_bridge_t *b)
{
    pthread_mutex_lock(&b->lock);
    b->owner_gone = true;
    b->notify = NULL;
    pthread_mutex_unlock(&b->lock);
    jn_io_conn_wake(b->conn); /* its pass ends the input */
    jn_io_conn_unref(b->conn);
    bridge_unref(b);
}

/* The read step of a pass: the owner's octets into the connection's
 * engine (io_plain.c), then
 * the end of input once the owner is gone and all is taken. */
void jn_io_bridge_read_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    jn_io_bridge_t *b = conn->bridge;
    bool ended = false, tell = false;
    while (!jn_io_plain_in_closed(conn)) {
        uint8_t *space = NULL;
        size_t room = jn_io_plain_in_space_IO(conn, &space);
        if (room == 0)
            break; /* the engine holds all it will take: it reads on after events */
        pthread_mutex_lock(&b->lock);
        size_t n = bbuf_take(&b->in, space, room);
        ended = b->owner_gone && pending(&b->in) == 0;
        if (b->in_full && pending(&b->in) < JN_IO_BRIDGE_IN_CAP / 2 && b->notify) {
            b->in_full = false;
            tell = true;
        }
        pthread_mutex_unlock(&b->lock);
        if (n == 0)
            break;
        if (!jn_io_plain_in_IO(conn, space, n))
            break; /* refused: closing */
    }
    if (!ended) {
        pthread_mutex_lock(&b->lock);
        ended = b->owner_gone && pending(&b->in) == 0;
        pthread_mutex_unlock(&b->lock);
    }
    if (ended && !jn_io_plain_in_closed(conn))
        jn_io_plain_in_end_IO(conn); /* as a socket's end of stream */
    if (jn_io_plain_in_closed(conn)) { /* the rest is dropped */
        pthread_mutex_lock(&b->lock);
        b->in.off = b->in.len = 0;
        pthread_mutex_unlock(&b->lock);
    }
    if (tell) {
        pthread_mutex_lock(&b->lock);
        jn_io_bridge_notify_fn notify = b->notify;
        void *ctx = b->ctx;
        if (notify)
            notify(ctx); /* under the lock: close cannot free ctx meanwhile */
        pthread_mutex_unlock(&b->lock);
    }
}

/* The write step of a pass: move what the engine framed into the output
 * buffer, up to JN_IO_BRIDGE_OUT_CAP (a full buffer is a socket refusing
 * output: conn->writable false, the write-stall watch starts), and tell
 * the owner when output appeared. */
void jn_io_bridge_write_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    jn_io_bridge_t *b = conn->bridge;
    uint8_t stage[JN_IO_BRIDGE_STAGE]; /* the own engine's runs, gathered */
    pthread_mutex_lock(&b->lock);
    bool was_empty = pending(&b->out) == 0;
    size_t moved = 0;
    bool ok = true;
    for (;;) {
        size_t room = JN_IO_BRIDGE_OUT_CAP - (pending(&b->out) < JN_IO_BRIDGE_OUT_CAP
                                                  ? pending(&b->out)
                                                  : JN_IO_BRIDGE_OUT_CAP);
        if (room == 0)
            break; /* asking the engine for its output would frame more: not now */
        const uint8_t *p = NULL;
        size_t len = jn_io_plain_out_IO(conn, stage, sizeof stage, &p);
        if (len == 0)
            break;
        size_t n = len < room ? len : room;
        if (b->owner_gone) {
            /* nobody reads: the output is thrown away */
        } else if (!bbuf_append(&b->out, p, n)) {
            ok = false;
            break;
        }
        jn_io_plain_out_done_IO(conn, n);
        moved += n;
    }
    conn->octets_written += moved;
    bool full = pending(&b->out) >= JN_IO_BRIDGE_OUT_CAP;
    if (was_empty && moved > 0 && b->notify)
        b->notify(b->ctx);
    pthread_mutex_unlock(&b->lock);
    if (!ok)
        jn_io_conn_io_error_IO(conn, ENOMEM, "on write to");
    conn->writable = !full;
    if (full)
        jn_io_stall_watch_IO(conn);
}

/* The connection is destroyed: its output ends (the owner closes its peer
 * once it pulled the rest) and the connection's reference goes. */
void jn_io_bridge_gone_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    jn_io_bridge_t *b = conn->bridge;
    if (!b)
        return;
    conn->bridge = NULL;
    pthread_mutex_lock(&b->lock);
    b->conn_gone = true;
    b->in.off = b->in.len = 0;
    if (b->notify)
        b->notify(b->ctx);
    pthread_mutex_unlock(&b->lock);
    bridge_unref(b);
}
