/*
 * io_tls.c — TLS on a connection: OpenSSL between the socket and Junction's
 * own engine (docs/design.md, "TLS").
 *
 *   socket --recv--> [net BIO | ssl BIO] --SSL_read--> plaintext
 *          --> jn_io_plain_in_IO --> the engine's transport (io_own_plain.c)
 *   the engine's output --SSL_write--> [ssl BIO | net BIO] --send--> socket
 *
 * The two BIOs are an OpenSSL BIO pair: ring buffers that SSL reads from
 * and writes to on one side while this file fills and empties them on the
 * other, in place (BIO_nwrite0/BIO_nread0): recv() writes ciphertext
 * straight into the pair and send() takes it straight out, so TLS adds no
 * copy of its own beyond OpenSSL's encryption and decryption, and no
 * syscall: a pass reads until EAGAIN as the plain path does, encrypts all
 * that the engine framed (up to the pair's size, JN_IO_TLS_OUT_SIZE) and sends
 * it in one send(). A ring emptied by the send starts over at its front,
 * so the next pass's output is again one contiguous send.
 *
 * The engine never sees TLS: to it the connection is plain, and it checks
 * every plaintext octet the peer sends.
 *
 * The handshake is non-blocking: it advances whenever the peer's octets
 * arrive (SSL_read drives it) and, on a connector, with our first write
 * (the ClientHello). Peer verification is OpenSSL's (SSL_VERIFY_PEER
 * against the profile's caCertFile, and the host name check of
 * SSL_set1_host / X509_VERIFY_PARAM_set1_ip_asc). A TLS failure closes only
 * its connection, with one log line (SERVER, warning) naming the peer and
 * OpenSSL's reason; the alert OpenSSL framed is still sent, the engine's
 * output is dropped (it can no longer be encrypted).
 *
 * A listener with sslProfile and requireSsl no serves both: the first
 * octet tells (0x16, a TLS handshake record, or 'A' of "AMQP"), peeked
 * with MSG_PEEK once per connection before anything is read.
 *
 * Threads: everything here runs on the connection's loop thread (_IO),
 * except jn_io_tls_attach (any thread, before the connection is started)
 * and jn_io_tls_free (whoever frees the connection).
 */
#include "io_own.h"
#include "io_private.h"

#include <junction/tls.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct jn_io_tls {
    SSL *ssl;
    BIO *net;                  /* our side of the pair (the SSL owns the other) */
    jn_tls_profile_t *profile; /* a reference, for the connection's life */
    bool detect;               /* listener requireSsl no: TLS or plain, by the first octet */
    bool handshake_done;
    bool failed;        /* TLS is over: drop the engine's output, send what SSL framed */
    bool shutdown_sent; /* close_notify framed */
    char proto[24];
    char cipher[64];
    int ssf;
    char peer_uid[256]; /* the peer certificate's uid (uidFormat), "" if none */
};

/* Ciphertext buffered per direction (the BIO pair's two rings, allocated
 * by OpenSSL at first use). Out: what one pass encrypts before it sends;
 * the engine's output beyond this waits for the next round of the same
 * pass (the pass writes until the engine has nothing left). In: what one recv()
 * takes, as the plain path's JN_IO_READ_SIZE. */
#define JN_IO_TLS_OUT_SIZE (256u * 1024)
#define JN_IO_TLS_IN_SIZE  JN_IO_READ_SIZE

/* Plaintext gathered per SSL_write from the own engine's output runs: one
 * TLS record's worth (RFC 8446, 5.1: 2^14 octets). */
#define JN_IO_TLS_RECORD 16384

/* jn_io_tls_attach: make conn a TLS connection with profile p (a
 * reference is taken): server for an accepted connection, client for a
 * connector's (with cfg's verify_hostname against cfg->host). detect:
 * decide TLS or plain by the first octet (listener, requireSsl no).
 * Returns 0 or JN_ENOMEM. Before jn_io_conn_start (the caller's thread). */
int jn_io_tls_attach(jn_io_conn_t *conn, jn_tls_profile_t *p, bool server, bool detect)
{
    const jn_endpoint_config_t *cfg = &conn->endpoint->cfg;
    jn_io_tls_t *tls = calloc(1, sizeof *tls);
    if (!tls)
        return JN_ENOMEM;
    tls->ssl = SSL_new(jn_tls_profile_ctx(p));
    BIO *inner = NULL;
    if (!tls->ssl ||
        BIO_new_bio_pair(&inner, JN_IO_TLS_OUT_SIZE, &tls->net, JN_IO_TLS_IN_SIZE) != 1) {
        SSL_free(tls->ssl);
        free(tls);
        ERR_clear_error();
        return JN_ENOMEM;
    }
    SSL_set_bio(tls->ssl, inner, inner);
    tls->profile = jn_tls_profile_ref(p);
    tls->detect = detect;
    if (server) {
        SSL_set_accept_state(tls->ssl);
        /* otherwise no certificate is asked for (1.19's anonymous peer) */
        if (jn_endpoint_wants_client_cert(cfg))
            SSL_set_verify(tls->ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    } else {
        SSL_set_connect_state(tls->ssl);
        /* a connector always verifies the server (1.19): against caCertFile,
         * or the system's CAs when the profile has none (tls_profile.c) */
        SSL_set_verify(tls->ssl, SSL_VERIFY_PEER, NULL);
        const char *host = cfg->host;
        if (host && host[0]) {
            unsigned char ipbuf[16];
            bool ip = inet_pton(AF_INET, host, ipbuf) == 1 || inet_pton(AF_INET6, host, ipbuf) == 1;
            if (!ip)
                SSL_set_tlsext_host_name(tls->ssl, host);
            if (cfg->verify_hostname) {
                if (ip)
                    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(tls->ssl), host);
                else
                    SSL_set1_host(tls->ssl, host);
            }
        }
    }
    ERR_clear_error();
    conn->tls = tls;
    return 0;
}

/* jn_io_tls_free: free conn's TLS state (NULL-safe). */
void jn_io_tls_free(jn_io_conn_t *conn)
{
    jn_io_tls_t *tls = conn->tls;
    if (!tls)
        return;
    conn->tls = NULL;
    SSL_free(tls->ssl); /* frees the inner BIO */
    BIO_free(tls->net);
    jn_tls_profile_unref(tls->profile);
    free(tls);
}

/* jn_io_tls_info: what management shows of conn's TLS (NULL/0 while the
 * handshake is not done): ours, or for a bridged connection (wss://) the
 * TLS its owner terminated. The connection's loop thread. */
bool jn_io_tls_info(const jn_io_conn_t *conn, const char **proto, const char **cipher, int *ssf)
{
    const jn_io_tls_t *tls = conn->tls;
    const char *uid;
    if (!tls && jn_io_bridge_tls_info(conn, proto, cipher, ssf, &uid))
        return true;
    if (!tls || !tls->handshake_done) {
        *proto = *cipher = NULL;
        *ssf = 0;
        return false;
    }
    *proto = tls->proto;
    *cipher = tls->cipher;
    *ssf = tls->ssf;
    return true;
}

/* jn_io_tls_peer_uid: the verified peer certificate's uid (ours, or the
 * bridge owner's for wss://), or NULL. */
const char *jn_io_tls_peer_uid(const jn_io_conn_t *conn)
{
    const jn_io_tls_t *tls = conn->tls;
    const char *proto, *cipher, *uid;
    int ssf;
    if (!tls && jn_io_bridge_tls_info(conn, &proto, &cipher, &ssf, &uid))
        return uid;
    return tls && tls->handshake_done && tls->peer_uid[0] ? tls->peer_uid : NULL;
}

/* TLS failed on conn: log once, close the transport with the reason. */
static void tls_fail_IO(jn_io_conn_t *conn, const char *what, const char *reason)
{
    JN_ASSERT_IO(conn);
    jn_io_tls_t *tls = conn->tls;
    if (tls->failed)
        return;
    tls->failed = true;
    conn->refused_logged = true; /* io_conn.c logs nothing more of it */
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING, JN_IO_CONN_FMT " %s %s %s (%s) failed: %s", conn->id,
           what, conn->incoming ? "from" : "to", conn->host,
           conn->endpoint->cfg.name ? conn->endpoint->cfg.name : conn->endpoint->shown, reason);
    /* the own pass ends the transport once the alert is out (tls->failed) */
    jn_io_own_note_IO(conn, what, reason);
}

/* OpenSSL's reason for the failed call that returned rc. */
static void tls_fail_ssl_IO(jn_io_conn_t *conn, int rc)
{
    JN_ASSERT_IO(conn);
    jn_io_tls_t *tls = conn->tls;
    int err = SSL_get_error(tls->ssl, rc);
    char reason[256];
    long vr = SSL_get_verify_result(tls->ssl);
    unsigned long e = ERR_peek_last_error();
    if (vr != X509_V_OK && !tls->handshake_done) {
        snprintf(reason, sizeof reason, "certificate verify failed: %s",
                 X509_verify_cert_error_string(vr));
    } else if (e) {
        const char *r = ERR_reason_error_string(e);
        snprintf(reason, sizeof reason, "%s", r ? r : "TLS error");
    } else if (err == SSL_ERROR_SYSCALL) {
        snprintf(reason, sizeof reason, "the peer ended the stream mid-record");
    } else {
        snprintf(reason, sizeof reason, "TLS error %d", err);
    }
    ERR_clear_error();
    tls_fail_IO(conn, tls->handshake_done ? "TLS" : "TLS handshake", reason);
}

static void handshake_done_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    jn_io_tls_t *tls = conn->tls;
    tls->handshake_done = true;
    snprintf(tls->proto, sizeof tls->proto, "%s", SSL_get_version(tls->ssl));
    const char *c = SSL_get_cipher_name(tls->ssl);
    snprintf(tls->cipher, sizeof tls->cipher, "%s", c ? c : "");
    tls->ssf = SSL_get_cipher_bits(tls->ssl, NULL);
    X509 *peer = SSL_get0_peer_certificate(tls->ssl);
    if (peer && SSL_get_verify_result(tls->ssl) == X509_V_OK &&
        jn_tls_profile_peer_uid(tls->profile, peer, tls->peer_uid, sizeof tls->peer_uid) != 0)
        tls->peer_uid[0] = '\0';
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_DEBUG, JN_IO_CONN_FMT " TLS %s %s: %s %s", conn->id,
           conn->incoming ? "from" : "to", conn->host, tls->proto, tls->cipher);
}

/* Plaintext out of SSL into the engine. Returns 1 when plaintext waits but
 * the engine's input is full (read again after events), 0 when SSL needs
 * more ciphertext, -1 when the input ended or failed. */
static int tls_drain_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    jn_io_tls_t *tls = conn->tls;
    for (;;) {
        if (tls->failed || jn_io_plain_in_closed(conn))
            return -1;
        if (!tls->handshake_done) {
            int rc = SSL_do_handshake(tls->ssl);
            if (rc != 1) {
                int err = SSL_get_error(tls->ssl, rc);
                if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
                    return 0; /* WANT_WRITE: the out ring is full; the write step empties it */
                tls_fail_ssl_IO(conn, rc);
                return -1;
            }
            handshake_done_IO(conn);
        }
        uint8_t *space = NULL;
        size_t room = jn_io_plain_in_space_IO(conn, &space);
        if (room == 0)
            return SSL_pending(tls->ssl) > 0 || BIO_ctrl_pending(SSL_get_rbio(tls->ssl)) > 0;
        int n = SSL_read(tls->ssl, space, room > INT_MAX ? INT_MAX : (int)room);
        if (n > 0) {
            if (!jn_io_plain_in_IO(conn, space, (size_t)n))
                return -1;
            continue;
        }
        int err = SSL_get_error(tls->ssl, n);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
            return 0;
        if (err == SSL_ERROR_ZERO_RETURN) {
            jn_io_plain_in_end_IO(conn); /* the peer's close_notify */
            return -1;
        }
        tls_fail_ssl_IO(conn, n);
        return -1;
    }
}

/* Listener with requireSsl no: peek at the first octet. Returns true when
 * the connection stays TLS, false when it is plain (TLS dropped: the plain
 * read path takes over) or nothing arrived yet (conn->readable cleared). */
static bool tls_detect_IO(jn_io_conn_t *conn, bool *decided)
{
    JN_ASSERT_IO(conn);
    unsigned char first;
    ssize_t n = recv(conn->fd, &first, 1, MSG_PEEK);
    *decided = false;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (errno != EINTR)
            conn->readable = false;
        return true;
    }
    *decided = true;
    if (n == 1 && first == 0x16) {
        conn->tls->detect = false;
        return true;
    }
    /* plain AMQP (or the end, or an error: the plain read sees it) */
    jn_io_tls_free(conn);
    return false;
}

/* jn_io_tls_read_IO: step 1 of a TLS connection's pass: ciphertext from
 * the socket into the pair (in place), plaintext out into the engine,
 * until EAGAIN or JN_IO_READS_PER_PASS reads. Returns true
 * when more may be waiting (run the connection again); *plain set when the
 * connection turned out plain (its caller reads it the plain way). */
bool jn_io_tls_read_IO(jn_io_conn_t *conn, bool *plain)
{
    JN_ASSERT_IO(conn);
    jn_io_tls_t *tls = conn->tls;
    *plain = false;
    if (tls->detect) {
        bool decided;
        if (!conn->readable)
            return false;
        if (!tls_detect_IO(conn, &decided)) {
            *plain = true;
            return false;
        }
        if (!decided)
            return false;
    } else if (conn->incoming && !tls->handshake_done && conn->readable && !conn->tls_peeked) {
        /* requireSsl: a plain AMQP client gets a line that says so rather
         * than OpenSSL's "wrong version number" */
        unsigned char first;
        ssize_t pn = recv(conn->fd, &first, 1, MSG_PEEK);
        if (pn == 1) {
            conn->tls_peeked = true;
            if (first == 'A') {
                tls_fail_IO(conn, "TLS handshake",
                            "the client speaks plain AMQP and the listener requires TLS "
                            "(requireSsl)");
                return false;
            }
        }
    }
    int reads = 0;
    for (;;) {
        int r = tls_drain_IO(conn);
        if (r != 0)
            return r > 0;
        if (!conn->readable)
            return false;
        if (reads++ == JN_IO_READS_PER_PASS)
            return true;
        char *space = NULL;
        ssize_t room = BIO_nwrite0(tls->net, &space);
        if (room <= 0)
            return true; /* SSL has a full ring to decrypt first (the engine is full) */
        ssize_t n = recv(conn->fd, space, (size_t)room, 0);
        if (n > 0) {
            BIO_nwrite(tls->net, &space, (int)n);
            if (n < room && !conn->read_end)
                conn->readable = false;
            continue;
        }
        if (n == 0) {
            conn->readable = false;
            tls_drain_IO(conn); /* what arrived with the end */
            if (!tls->failed && !tls->handshake_done)
                tls_fail_IO(conn, "TLS handshake", "the peer closed the connection");
            else
                jn_io_plain_in_end_IO(conn);
            return false;
        }
        if (errno == EINTR)
            continue;
        conn->readable = false;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return false;
        jn_io_conn_io_error_IO(conn, errno, "on read from");
        return false;
    }
}

/* Send the ciphertext in the pair. Returns false when the socket refused
 * some (conn->writable cleared) or failed. */
static bool tls_send_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    jn_io_tls_t *tls = conn->tls;
    while (conn->writable) {
        char *data = NULL;
        ssize_t avail = BIO_nread0(tls->net, &data);
        if (avail <= 0)
            return true;
        ssize_t n = send(conn->fd, data, (size_t)avail, MSG_NOSIGNAL);
        if (n > 0) {
            BIO_nread(tls->net, &data, (int)n);
            conn->octets_written += (size_t)n;
            if (n < avail) {
                conn->writable = false; /* full; EPOLLOUT comes when it drains */
                jn_io_stall_watch_IO(conn);
                return false;
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        conn->writable = false;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            jn_io_stall_watch_IO(conn);
            return false;
        }
        jn_io_conn_io_error_IO(conn, n < 0 ? errno : EPIPE, "on write to");
        return false;
    }
    return false;
}

/* jn_io_tls_write_IO: step 3 of a TLS connection's pass: encrypt what
 * the engine framed (as much as the out ring takes), send it, and again
 * while the socket takes it all; after the engine's last octet, the
 * close_notify. Returns true when every octet framed so far has left (the
 * plain path's "write buffer empty"). */
bool jn_io_tls_write_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    jn_io_tls_t *tls = conn->tls;
    uint8_t stage[JN_IO_TLS_RECORD]; /* the own engine's runs, gathered */
    const uint8_t *p = NULL;
    for (;;) {
        if (tls->failed)
            jn_io_plain_out_drop_IO(conn); /* nothing more can be encrypted */
        bool blocked = false;
        while (!tls->failed) {
            size_t len = jn_io_plain_out_IO(conn, stage, sizeof stage, &p);
            if (len == 0)
                break;
            int n = SSL_write(tls->ssl, p, len > INT_MAX ? INT_MAX : (int)len);
            if (n > 0) {
                jn_io_plain_out_done_IO(conn, (size_t)n);
                continue;
            }
            int err = SSL_get_error(tls->ssl, n);
            if (err != SSL_ERROR_WANT_WRITE && err != SSL_ERROR_WANT_READ)
                tls_fail_ssl_IO(conn, n);
            blocked = err == SSL_ERROR_WANT_WRITE; /* the ring is full: send, then on */
            break;
        }
        if (!tls->failed && !tls->shutdown_sent && tls->handshake_done && jn_io_plain_out_closed(conn)) {
            SSL_shutdown(tls->ssl); /* close_notify into the ring */
            ERR_clear_error();
            tls->shutdown_sent = true;
        }
        if (!tls_send_IO(conn) || !blocked)
            break;
    }
    return BIO_ctrl_pending(tls->net) == 0 && !jn_io_plain_out_pending(conn);
}

/* jn_io_tls_failed: TLS on conn is over (failed): nothing more can be
 * encrypted; what OpenSSL framed (an alert) may still be waiting to be
 * sent (jn_io_tls_pending_out). */
bool jn_io_tls_failed(const jn_io_conn_t *conn)
{
    return conn->tls && conn->tls->failed;
}

/* jn_io_tls_abandon_IO: the connection is being closed before TLS was
 * established (a handshake timeout): nothing the engine frames can be
 * encrypted any more. */
void jn_io_tls_abandon_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    if (conn->tls && !conn->tls->handshake_done)
        conn->tls->failed = true;
}

/* jn_io_tls_pending_out: ciphertext framed and not yet sent. */
bool jn_io_tls_pending_out(const jn_io_conn_t *conn)
{
    return conn->tls && BIO_ctrl_pending(conn->tls->net) > 0;
}
