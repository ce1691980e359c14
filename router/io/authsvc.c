/*
 * authsvc.c — SASL delegated to an auth service (qdrouterd 1.19's
 * authServicePlugin, a listener's saslPlugin): the router relays each
 * client's SASL exchange to a remote AMQP service and takes the service's
 * outcome and the identity it reports. docs/design.md "The auth service"
 * has the picture; docs/protocol.md "The auth service on the wire" the
 * wire (AMQP 1.0 part 5.3, SASL; part 2.7.1, the service's Open).
 *
 * Two connections on Junction's own engine share one relay:
 *   - the client's (the engine's SASL server, the relay its backend:
 *     authsvc_own.c): its mechanisms are the ones the service offers, its
 *     init and responses go to the service;
 *   - the service's (the engine's SASL client end, a connection this file
 *     makes when the client's SASL layer starts): its challenges go to the
 *     client; its outcome, and after a success the properties of the
 *     service's Open (the authenticated identity), decide the client's.
 * Nothing blocks: the offer is deferred and each answer pending until the
 * other side's is posted (jn_io_relay_own_post, the svc_post flag), and
 * each side wakes the other connection, whose next pass hands it over.
 *
 * Threads: the service's connection is started on its client's loop
 * (jn_io_conn_t.place) and neither connection can move before the
 * client's Open (only the core moves connections, and it hears of a
 * client at its Open, when the relay is over), so every function here
 * runs on that one loop's thread, without locks. jn_io_authsvc_prepare
 * runs where listeners are added (main thread, or management's).
 *
 * Lifetimes: the relay is the client's SASL layer's backend and is freed
 * with it (jn_io_relay_end). The service's connection points at it only
 * while attached: the relay detaches it as soon as the outcome is known,
 * when the client goes, or when the service's transport closes.
 */
#include "authsvc_private.h"

#include <junction/time.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <sys/socket.h>

/* How long the service may take to finish one client's exchange when the
 * listener has no initialHandshakeTimeoutSeconds of its own (which, when
 * set, bounds it instead): a service that stops answering fails the
 * client with a log line, never holds it. */
#define JN_IO_AUTHSVC_TIMEOUT_S 30u

/* The longest identity taken from the service (a user name). */
#define JN_IO_AUTHSVC_USER_MAX 255u

const char *jn_io_relay_svc_shown(const jn_io_relay_t *r)
{
    return r->client ? r->client->endpoint->authsvc->shown : "?";
}

/* The own engine's client: the service's offer, or the answer to the
 * client's init or response (code; a challenge's octets in to_client),
 * goes to its SASL layer in the client's next pass. */
void jn_io_relay_own_post(jn_io_relay_t *r, bool offer, int code)
{
    if (offer)
        r->own_offer = true;
    else
        r->own_answer = code + 1;
    if (r->client)
        jn_io_conn_wake(r->client);
}

/* Detach the service's connection from r: it no longer calls back, and
 * how says whether to close it (DETACH_CLOSE: an AMQP close after its
 * Open; DETACH_FORCE: cut, mid-SASL; DETACH_ONLY: its engine is closing
 * it already, or this runs inside its own input processing). */
static void detach_svc(jn_io_relay_t *r, detach_t how)
{
    jn_io_conn_t *svc = r->svc;
    if (!svc)
        return;
    r->svc = NULL;
    svc->relay = NULL;
    if (svc->transport_closed)
        return;
    if (how != DETACH_ONLY) /* on the own engine's client end (authsvc_own.c) */
        jn_io_own_shut_IO(svc, how == DETACH_FORCE);
    jn_io_conn_wake(svc);
}

/* The client's outcome: failed, with one log line naming the client, the
 * listener, the service and why. how: what becomes of the service's
 * connection (detach_svc). */
void jn_io_relay_fail(jn_io_relay_t *r, detach_t how, const char *fmt, ...)
{
    if (!r->done && r->client) {
        char why[300];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
        jn_io_conn_t *c = r->client;
        c->refused_logged = true;
        JN_LOG(JN_LOG_MOD_AUTHSERVICE, JN_LOG_WARNING,
               JN_IO_CONN_FMT
               " SASL %s authentication from %s (to %s) failed: %s (auth service %s)",
               c->id, r->mech ? r->mech : "(none chosen)", c->host, c->endpoint->shown, why,
               jn_io_relay_svc_shown(r));
        if (!r->svc_mechs && (r->svc_mechs = strdup("")) != NULL)
            jn_io_relay_own_post(r, true, 0); /* nothing to offer: no init can succeed */
        if (r->own_waiting) {
            jn_io_relay_own_post(r, false, JN_AMQP_SASL_OUTCOME_AUTH);
        } else { /* the outcome unasked, as 1.19's server sends it */
            r->own_refuse = true;
            jn_io_relay_own_post(r, false, JN_AMQP_SASL_OUTCOME_AUTH);
        }
    }
    r->done = true;
    detach_svc(r, how);
}

/* ---- the service's connection --------------------------------------------- */

static int svc_addresses(jn_io_endpoint_t *sep, struct addrinfo **out)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                             .ai_protocol = IPPROTO_TCP,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
    return getaddrinfo(sep->numeric_host, sep->numeric_port, &hints, out);
}

/* Make and start the connection to the service for r, on the client's
 * loop. Returns 0, or a negative code with why filled. */
int jn_io_relay_start_svc(jn_io_relay_t *r, char *why, size_t whylen)
{
    jn_io_conn_t *client = r->client;
    jn_io_endpoint_t *sep = client->endpoint->authsvc;
    jn_io_conn_t *svc = jn_io_conn_new(client->io, sep, false);
    if (!svc) {
        snprintf(why, whylen, "router out of memory");
        return JN_ENOMEM;
    }
    svc->authsvc = true;
    if (sep->cfg.ssl_profile) {
        jn_tls_profile_t *p = jn_io_tls_profile_get(client->io, sep->cfg.ssl_profile);
        int rc = p ? jn_io_tls_attach(svc, p, false, false) : JN_ENOENT;
        if (p)
            jn_tls_profile_unref(p);
        if (rc != 0) {
            snprintf(why, whylen,
                     rc == JN_ENOENT ? "sslProfile '%s' is not configured"
                                     : "router out of memory (TLS to %s)",
                     sep->cfg.ssl_profile);
            jn_io_conn_unref(svc); /* never started: freed here */
            return rc;
        }
    }
    svc->relay = r;
    r->svc = svc;
    /* the service's Open names the service host, as 1.19's; the realm
     * goes in the SASL init (authsvc_own.c) */
    if (jn_io_own_attach_client(svc, sep->cfg.host) != 0) {
        r->svc = NULL;
        svc->relay = NULL;
        jn_io_conn_unref(svc);
        snprintf(why, whylen, "router out of memory");
        return JN_ENOMEM;
    }
    struct addrinfo *ai = NULL;
    int gai = svc_addresses(sep, &ai);
    svc->ai_list = gai == 0 ? ai : NULL;
    if (gai != 0) /* its first pass ends it as a refused connect */
        JN_LOG(JN_LOG_MOD_AUTHSERVICE, JN_LOG_WARNING,
               JN_IO_CONN_FMT " Cannot resolve auth service %s: %s", svc->id, sep->shown,
               gai_strerror(gai));
    svc->place = atomic_load_explicit(&client->loop, memory_order_relaxed);
    (void)jn_io_conn_start(svc, -1);
    JN_LOG(JN_LOG_MOD_AUTHSERVICE, JN_LOG_DEBUG,
           JN_IO_CONN_FMT " Connecting to auth service %s for the SASL of " JN_IO_CONN_FMT, svc->id,
           sep->shown, client->id);
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
           JN_IO_CONN_FMT " Connection to auth service %s runs on Junction's own AMQP engine",
           svc->id, sep->shown);
    return 0;
}

/* jn_io_authsvc_client_closed_IO: client's transport closed: its relay
 * ends (the service's connection is cut if the exchange was not over).
 * Client's loop. */
void jn_io_authsvc_client_closed_IO(jn_io_conn_t *client)
{
    JN_ASSERT_IO(client);
    jn_io_relay_t *r = client->relay;
    client->relay = NULL;
    if (!r)
        return;
    if (!r->done)
        JN_LOG(JN_LOG_MOD_AUTHSERVICE, JN_LOG_WARNING,
               JN_IO_CONN_FMT " SASL authentication from %s (to %s) abandoned: the client left "
                              "before the auth service %s answered",
               client->id, client->host, client->endpoint->shown, jn_io_relay_svc_shown(r));
    r->done = true;
    detach_svc(r, DETACH_FORCE);
    r->client = NULL;
}

/* jn_io_authsvc_timeout_IO: svc's deadline passed (its handshake timer,
 * io_loop.c): a client still waiting is failed; the connection is cut in
 * any case (a service that does not answer our close included). svc's
 * loop. */
void jn_io_authsvc_timeout_IO(jn_io_conn_t *svc)
{
    JN_ASSERT_IO(svc);
    jn_io_relay_t *r = svc->relay;
    if (r)
        jn_io_relay_fail(r, DETACH_FORCE, "the service did not answer within %" PRIu32 " s",
                    svc->endpoint->cfg.handshake_timeout_seconds);
    if (!svc->transport_closed)
        jn_io_own_shut_IO(svc, true);
}

/* jn_io_authsvc_stop_IO: the router is stopping: a client still waiting
 * on svc is failed now and svc cut (a close frame cannot end a SASL
 * exchange, so neither would close before the stop's deadline). svc's
 * loop. */
void jn_io_authsvc_stop_IO(jn_io_conn_t *svc)
{
    JN_ASSERT_IO(svc);
    jn_io_relay_t *r = svc->relay;
    if (r)
        jn_io_relay_fail(r, DETACH_FORCE, "the router is shutting down");
    else if (!svc->transport_closed)
        jn_io_own_shut_IO(svc, true);
    svc->closing = true;
}

/* ---- the SASL implementation of both transports ---------------------------- */

/* r's client side is gone (its transport freed): r ends and is freed. */
void jn_io_relay_end(jn_io_relay_t *r)
{
    if (r->client)
        r->client->relay = NULL;
    r->done = true;
    detach_svc(r, DETACH_FORCE);
    free(r->svc_mechs);
    free(r->mech);
    free(r->to_svc.start);
    free(r->to_client.start);
    free(r->user);
    free(r);
}

bool jn_io_relay_mechanisms(jn_io_relay_t *r, const char *mechs)
{
    if (!r->client || r->done)
        return false;
    free(r->svc_mechs);
    r->svc_mechs = strdup(mechs ? mechs : "");
    if (!r->svc_mechs) {
        jn_io_relay_fail(r, DETACH_ONLY, "router out of memory");
        return false;
    }
    /* cut to the listener's saslMechanisms */
    jn_io_sasl_offer_cut(r->client->endpoint->cfg.sasl_mechanisms, mechs, r->svc_mechs,
                         strlen(r->svc_mechs) + 1);
    jn_io_relay_own_post(r, true, 0);
    return true;
}

void jn_io_relay_outcome(jn_io_relay_t *r, bool ok)
{
    if (r->done)
        return;
    if (!r->mech) { /* part 5.3.3.6: the outcome ends an exchange the init began */
        if (r->svc)
            r->svc->refused_logged = true;
        jn_io_relay_fail(r, DETACH_ONLY, "the service sent an outcome before the client's init");
        return;
    }
    if (ok) {
        r->svc_sasl_ok = true;
        return;
    }
    if (r->svc)
        r->svc->refused_logged = true; /* its engine closes it; the client's line says why */
    jn_io_relay_fail(r, DETACH_ONLY, "the service refused the credentials");
}

/* ---- set-up ----------------------------------------------------------------- */

/* jn_io_authsvc_attach: give conn (accepted on a listener with a
 * saslPlugin, not yet started, before its engine is attached) the relay
 * of its SASL to the listener's auth service (conn->relay; the own
 * engine's SASL layer takes it as its backend, authsvc_own.c, and ends it
 * with jn_io_relay_end). Returns 0 or JN_ENOMEM. The accepting thread
 * (before jn_io_conn_start). */
int jn_io_authsvc_attach(jn_io_conn_t *conn)
{
    jn_io_relay_t *r = calloc(1, sizeof *r);
    if (!r)
        return JN_ENOMEM;
    r->client = conn;
    conn->relay = r;
    return 0;
}

/* jn_io_authsvc_forget: conn (given a relay by jn_io_authsvc_attach) is
 * not started after all (no memory for its engine): its relay, if no
 * engine took it, is freed. The accepting thread. */
void jn_io_authsvc_forget(jn_io_conn_t *conn)
{
    if (conn->relay)
        jn_io_relay_end(conn->relay); /* clears conn->relay */
}

/* jn_io_authsvc_prepare: give listener ep (its cfg copied, with
 * auth_service_host set) the child endpoint its service connections are
 * made with, the service's address resolved now (numeric, for the loops).
 * Returns 0, JN_EINVAL (the host or port cannot be resolved: err says
 * why) or JN_ENOMEM. The thread adding the listener (may block on the
 * name service). */
int jn_io_authsvc_prepare(jn_io_endpoint_t *ep, char *err, size_t errlen)
{
    const jn_endpoint_config_t *lc = &ep->cfg;
    jn_io_endpoint_t *sep = calloc(1, sizeof *sep);
    if (!sep)
        return JN_ENOMEM;
    sep->io = ep->io;
    bool failed = false;
    sep->cfg.name = jn_strdup_opt(lc->name, &failed);
    sep->cfg.host = jn_strdup_opt(lc->auth_service_host, &failed);
    sep->cfg.port = jn_strdup_opt(lc->auth_service_port, &failed);
    sep->cfg.ssl_profile =
        lc->auth_service_ssl_profile ? jn_strdup_opt(lc->auth_service_ssl_profile, &failed) : NULL;
    if (failed) {
        jn_io_endpoint_free(sep);
        return JN_ENOMEM;
    }
    sep->cfg.role = JN_ROLE_NORMAL;
    sep->cfg.max_frame_size = 16384;
    sep->cfg.max_sessions = 32768;
    sep->cfg.link_capacity = 250;
    sep->cfg.idle_timeout_seconds = lc->idle_timeout_seconds;
    sep->cfg.verify_hostname = true; /* the service's certificate must name its host */
    sep->cfg.handshake_timeout_seconds =
        lc->handshake_timeout_seconds ? lc->handshake_timeout_seconds : JN_IO_AUTHSVC_TIMEOUT_S;
    snprintf(sep->shown, sizeof sep->shown, "%s:%s", sep->cfg.host, sep->cfg.port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(sep->cfg.host[0] ? sep->cfg.host : NULL, sep->cfg.port, &hints, &res);
    if (rc == 0 && res &&
        getnameinfo(res->ai_addr, res->ai_addrlen, sep->numeric_host, sizeof sep->numeric_host,
                    sep->numeric_port, sizeof sep->numeric_port,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        rc = EAI_FAIL;
    if (res)
        freeaddrinfo(res);
    if (rc != 0) {
        snprintf(err, errlen, "the auth service address %s cannot be resolved: %s", sep->shown,
                 rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        jn_io_endpoint_free(sep);
        return JN_EINVAL;
    }
    ep->authsvc = sep;
    return 0;
}
