/*
 * authsvc_own.c — the auth-service relay (authsvc.c) on Junction's own
 * AMQP engine (docs/engine.md, stage 4d and 4e), both of its ends:
 *   - the client's connection (accepted on a listener with a saslPlugin,
 *     with the switch on for accepted connections): the relay is the
 *     mechanism backend of the engine's SASL server layer
 *     (junction/amqp_sasl.h), whose offer is the service's (NULL until the
 *     service's mechanisms came) and whose start and step send the
 *     client's init or response to the service and answer
 *     JN_AMQP_SASL_STEP_PENDING; the service's answer is posted
 *     (jn_io_relay_own_post) and handed to the layer in the client's next
 *     pass;
 *   - the service's connection (with the switch on for connections the
 *     router makes): the relay is the backend of the engine's SASL client
 *     layer, whose start takes the service's offer to the client and
 *     answers pending until the client's init came (posted, svc_post, and
 *     resumed in the service connection's next pass), whose step takes a
 *     challenge to the client and waits for its response the same way,
 *     and whose outcome decides: a refusal fails the client, a success
 *     waits for the service's Open, whose properties carry the identity.
 * The relay's two ends run on the own engine: what passes between them
 * (the client's init and responses, the service's challenges and Open)
 * is carried by this file's steps; the relay's record, its failures and
 * its end are authsvc_private.h's.
 *
 * Threads: as authsvc.c: the client's loop, which is the service
 * connection's too.
 */
#include "authsvc_private.h"

#include <junction/decoder.h>
#include <junction/time.h>

#include <stdlib.h>
#include <string.h>

/* The longest identity taken from the service (a user name), as on the
 * relay's other end (authsvc.c). */
#define JN_IO_AUTHSVC_OWN_USER_MAX 255u

/* ---- the relay's steps, both ends on the own engine -------------------- */

/* b becomes a copy of the len octets at p; present: the field was sent
 * (an empty one differs from an absent one). Out of memory leaves it
 * present and empty. */
static void own_bytes_set(owned_bytes_t *b, const uint8_t *p, size_t len, bool present)
{
    free(b->start);
    b->start = NULL;
    b->size = 0;
    b->present = present;
    if (present && len && (b->start = malloc(len)) != NULL) {
        memcpy(b->start, p, len);
        b->size = len;
    }
}

/* The client's sasl-init (init true: mechanism mech, initial response
 * present or not) or sasl-response (5.3.3.2, 5.3.3.4): to the service,
 * whose connection's next pass sends it. */
static void own_to_svc(jn_io_relay_t *r, const char *mech, bool init, const uint8_t *p,
                       size_t len, bool present)
{
    if (init) {
        free(r->mech);
        r->mech = strdup(mech ? mech : "");
    }
    own_bytes_set(&r->to_svc, p, len, present);
    if (!r->svc || r->done || !r->mech) {
        jn_io_relay_fail(r, DETACH_FORCE, "the connection to the service is gone");
        return;
    }
    r->svc_post = true;
    jn_io_conn_wake(r->svc);
}

/* The service's challenge (5.3.3.3): to the client, whose next pass hands
 * it to its SASL layer. */
static void svc_to_client(jn_io_relay_t *r, const uint8_t *p, size_t len)
{
    if (!r->client || r->done)
        return;
    if (!r->mech) { /* a challenge answers an init */
        jn_io_relay_fail(r, DETACH_ONLY, "the service sent a challenge before the client's init");
        return;
    }
    own_bytes_set(&r->to_client, p, len, true);
    jn_io_relay_own_post(r, false, JN_AMQP_SASL_STEP_CHALLENGE);
}

/* ---- the client on Junction's own engine ------------------------------- */

static const char *own_mechanisms(void *ctx)
{
    return ((jn_io_relay_t *)ctx)->svc_mechs;
}

/* After the client's init or response went (or failed at once): an answer
 * already posted (a failure) is the step's own, else the layer waits. */
static int own_answer_now(jn_io_relay_t *r)
{
    if (!r->own_answer)
        return JN_AMQP_SASL_STEP_PENDING;
    int code = r->own_answer - 1;
    r->own_answer = 0;
    r->own_waiting = false;
    return code;
}

static int own_start(void *ctx, const char *mech, const uint8_t *response, size_t len,
                     const uint8_t **out, size_t *out_len)
{
    jn_io_relay_t *r = ctx;
    *out = NULL;
    *out_len = 0;
    if (r->done)
        return JN_AMQP_SASL_OUTCOME_AUTH; /* failed already (logged) */
    r->own_waiting = true;
    own_to_svc(r, mech, true, response, len, response != NULL);
    return own_answer_now(r);
}

static int own_step(void *ctx, const uint8_t *response, size_t len, const uint8_t **out,
                    size_t *out_len)
{
    jn_io_relay_t *r = ctx;
    *out = NULL;
    *out_len = 0;
    if (r->done)
        return JN_AMQP_SASL_OUTCOME_AUTH;
    r->own_waiting = true;
    own_to_svc(r, NULL, false, response, len, true);
    return own_answer_now(r);
}

static const char *own_user(void *ctx)
{
    return ((jn_io_relay_t *)ctx)->user;
}

static void own_free(void *ctx)
{
    jn_io_relay_end(ctx);
}

static const jn_amqp_sasl_mech_ops_t own_relay_ops = {
    .mechanisms = own_mechanisms,
    .start = own_start,
    .step = own_step,
    .user = own_user,
    .free = own_free,
};

/* jn_io_authsvc_own_attach: conn (accepted on a listener with a
 * saslPlugin, its relay made by jn_io_authsvc_attach) runs on the own
 * engine: the relay becomes t's SASL layer's backend (t owns it from now
 * on), SASL required under authenticatePeer. Returns 0, or
 * JN_EINVAL (the relay is then freed). The accepting thread, before conn
 * is started (io_own.c). */
int jn_io_authsvc_own_attach(jn_io_conn_t *conn, jn_amqp_transport_t *t)
{
    jn_io_relay_t *r = conn->relay;
    if (!r)
        return JN_EINVAL;
    return jn_amqp_transport_set_sasl(t, &own_relay_ops, r, conn->endpoint->cfg.authenticate_peer);
}

/* jn_io_authsvc_own_pass_IO: the client's pass (io_own.c), conn->relay
 * set: the first connects to the service (as 1.19 does when its SASL
 * layer starts); then the service's offer or answer posted since is handed to
 * t's SASL layer and the octets held are processed at now. Returns 0 or
 * JN_ENOMEM (the connection is unusable). Client's loop. */
int jn_io_authsvc_own_pass_IO(jn_io_conn_t *client, jn_amqp_transport_t *t, uint64_t now)
{
    JN_ASSERT_IO(client);
    jn_io_relay_t *r = client->relay;
    if (!r->started) {
        char why[200];
        r->started = true;
        if (jn_io_relay_start_svc(r, why, sizeof why) != 0)
            jn_io_relay_fail(r, DETACH_ONLY, "cannot reach the service: %s", why);
    }
    bool any = r->own_offer;
    int rc = 0;
    if (r->own_offer) {
        r->own_offer = false;
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
               JN_IO_CONN_FMT " SASL on Junction's own AMQP engine, "
                              "offering: %s (auth service %s)",
               client->id, r->svc_mechs && r->svc_mechs[0] ? r->svc_mechs : "nothing",
               jn_io_relay_svc_shown(r));
        rc = jn_amqp_transport_sasl_offer_ready(t);
    }
    if (rc != JN_ENOMEM && r->own_refuse) {
        int e = jn_amqp_transport_sasl_refuse(t, r->own_answer - 1);
        if (e != JN_AGAIN) { /* else the client's header is still to come */
            r->own_refuse = false;
            r->own_answer = 0;
        }
        rc = e == JN_ENOMEM ? e : 0;
    }
    if (rc != JN_ENOMEM && r->own_answer && r->own_waiting) {
        int code = own_answer_now(r);
        bool chal = code == JN_AMQP_SASL_STEP_CHALLENGE;
        rc = jn_amqp_transport_sasl_resume(t, code, chal ? (const uint8_t *)r->to_client.start : NULL,
                                           chal ? r->to_client.size : 0);
        any = true;
    }
    if (rc != JN_ENOMEM && any)
        rc = jn_amqp_transport_process(t, now);
    return rc == JN_ENOMEM ? JN_ENOMEM : 0;
}

/* ---- the service's connection on Junction's own engine ------------------ */

/* The relay of the service's connection ctx (NULL once detached: the
 * layer outlives the relay's interest). */
static jn_io_relay_t *svc_relay(void *ctx)
{
    return ((jn_io_conn_t *)ctx)->relay;
}

/* The service's sasl-mechanisms: offered to the client; our sasl-init
 * waits for the client's. */
static int svc_start(void *ctx, const char *offer, const char **mech, const uint8_t **out,
                     size_t *out_len)
{
    jn_io_relay_t *r = svc_relay(ctx);
    *mech = NULL;
    *out = NULL;
    *out_len = 0;
    if (!r || !jn_io_relay_mechanisms(r, offer))
        return JN_EPROTO;
    return JN_AMQP_SASL_STEP_PENDING;
}

/* The service's challenge: to the client; our response waits for its. */
static int svc_step(void *ctx, const uint8_t *challenge, size_t len, const uint8_t **out,
                    size_t *out_len)
{
    jn_io_relay_t *r = svc_relay(ctx);
    *out = NULL;
    *out_len = 0;
    if (!r)
        return JN_EPROTO;
    svc_to_client(r, challenge, len);
    return r->done ? JN_EPROTO : JN_AMQP_SASL_STEP_PENDING;
}

/* The service's outcome: a refusal fails the client (logged there); a
 * success waits for the service's Open. */
static int svc_outcome(void *ctx, int code, const uint8_t *data, size_t len)
{
    jn_io_relay_t *r = svc_relay(ctx);
    (void)data;
    (void)len;
    if (!r)
        return JN_EPROTO;
    jn_io_relay_outcome(r, code == JN_AMQP_SASL_OUTCOME_OK);
    return r->svc_sasl_ok && !r->done ? 0 : JN_EPROTO;
}

static const jn_amqp_sasl_client_mech_ops_t svc_ops = {
    .start = svc_start,
    .step = svc_step,
    .outcome = svc_outcome,
};

/* jn_io_authsvc_own_svc_sasl: the SASL client end's config for svc, a
 * connection to an auth service on the own engine (svc->relay set): the
 * relay as the backend (ctx svc, borrowed: it outlives its transport),
 * the sasl-init's hostname the listener's realm (absent without one), as
 * 1.19 sends it. The thread starting svc. */
void jn_io_authsvc_own_svc_sasl(jn_io_conn_t *svc, jn_amqp_sasl_client_config_t *sc)
{
    *sc = (jn_amqp_sasl_client_config_t){
        .hostname = svc->relay->client->endpoint->cfg.auth_service_realm,
        .ops = &svc_ops,
        .ctx = svc};
}

/* jn_io_authsvc_own_svc_pass_IO: the pass of svc (io_own.c), svc->relay
 * set: the client's init or response posted since goes to t's SASL
 * client layer, and the octets held are processed at now. Returns 0 or
 * JN_ENOMEM (the connection is unusable). svc's loop. */
int jn_io_authsvc_own_svc_pass_IO(jn_io_conn_t *svc, jn_amqp_transport_t *t, uint64_t now)
{
    JN_ASSERT_IO(svc);
    jn_io_relay_t *r = svc->relay;
    if (!r->svc_post)
        return 0;
    r->svc_post = false;
    const owned_bytes_t *b = &r->to_svc;
    const uint8_t *p = !b->present ? NULL : b->start ? (const uint8_t *)b->start : (const uint8_t *)"";
    int rc = jn_amqp_transport_sasl_client_resume(t, 0, r->mech, p, b->size);
    if (rc != JN_ENOMEM)
        rc = jn_amqp_transport_process(t, now);
    return rc == JN_ENOMEM ? JN_ENOMEM : 0;
}

/* The entry of the map f (decoded by d) whose key, a symbol or a string,
 * is key: its value into *val, decoded by *in; false when f is not a map
 * or has no such key. */
static bool svc_map_seek(const jn_decoder_t *d, const jn_field_t *f, const char *key,
                         jn_decoder_t *in, jn_field_t *val)
{
    jn_field_t k;
    if (f->type != JN_TYPE_MAP || f->described || jn_decoder_enter(d, f, in) != 0)
        return false;
    while (jn_decoder_next(in, &k) == 1 && jn_decoder_next(in, val) == 1)
        if (!k.described && jn_field_equal_string(&k, key))
            return true;
    return false;
}

/* The identity in f (decoded by d), the service's authenticated-identity
 * map: its sub, else its preferred_username (a string or symbol, not
 * empty), copied into who (cap octets, NUL-terminated). Returns the
 * identity's octets, or 0 (who empty) when none, or too long, or holding a
 * NUL. */
static size_t svc_identity(const jn_decoder_t *d, const jn_field_t *f, char *who, size_t cap)
{
    static const char *const keys[2] = {"sub", "preferred_username"};
    for (int i = 0; i < 2; i++) {
        jn_decoder_t in;
        jn_field_t v;
        if (!svc_map_seek(d, f, keys[i], &in, &v) || v.described ||
            (v.type != JN_TYPE_STRING && v.type != JN_TYPE_SYMBOL) || v.size == 0)
            continue;
        if (v.size >= cap)
            break;
        jn_iter_t it = v.payload;
        size_t n = jn_iter_copy(&it, who, v.size);
        who[n] = '\0';
        if (n == v.size && strlen(who) == n)
            return n;
        break;
    }
    if (cap)
        who[0] = '\0';
    return 0;
}

/* jn_io_authsvc_own_identity: what an auth service's Open properties
 * (props, a raw view of one encoded value; empty: none) say of the
 * client: JN_EPERM when they carry address-authz permissions (a map key),
 * else the identity's octets (authenticated-identity's sub, else its
 * preferred_username: a string or symbol of 1 to cap - 1 octets without
 * a NUL), copied into who (cap octets, NUL-terminated), or 0 when there
 * is none (malformed properties included). Any thread. */
int jn_io_authsvc_own_identity(const jn_iter_t *props, char *who, size_t cap)
{
    jn_decoder_t d, in;
    jn_field_t f, v;
    if (!jn_io_own_props_first(props, &d, &f)) /* malformed: none */
        return 0;
    if (svc_map_seek(&d, &f, "address-authz", &in, &v))
        return JN_EPERM;
    if (!svc_map_seek(&d, &f, "authenticated-identity", &in, &v))
        return 0;
    return (int)svc_identity(&in, &v, who, cap);
}

/* The client's success: r's user, logged, the outcome to the client's
 * next pass, and the service's connection closed (its work is done). */
static void svc_succeeded(jn_io_relay_t *r)
{
    jn_io_conn_t *c = r->client, *svc = r->svc;
    r->done = true;
    JN_LOG(JN_LOG_MOD_AUTHSERVICE, JN_LOG_INFO,
           JN_IO_CONN_FMT " SASL %s authentication from %s (to %s): user %s (auth service %s)",
           c->id, r->mech ? r->mech : "?", c->host, c->endpoint->shown, r->user,
           jn_io_relay_svc_shown(r));
    jn_io_relay_own_post(r, false, JN_AMQP_SASL_OUTCOME_OK);
    if (!svc)
        return;
    r->svc = NULL;
    svc->relay = NULL;
    if (!svc->transport_closed) {
        jn_io_own_shut_IO(svc, false);
        jn_io_conn_wake(svc);
    }
}

/* jn_io_authsvc_own_svc_open_IO: the service's Open on svc (its
 * properties, a raw view valid in the call; empty: none): the identity
 * decides the client's outcome: address-authz permissions refuse it (not
 * enforced here, so refusing is the only safe answer: docs/design.md "The
 * auth service"); authenticated-identity's sub, else preferred_username
 * (1 to JN_IO_AUTHSVC_OWN_USER_MAX octets) is the client's user; none
 * refuses it. A service no relay waits on any more is closed. svc's
 * loop. */
void jn_io_authsvc_own_svc_open_IO(jn_io_conn_t *svc, const jn_iter_t *properties)
{
    JN_ASSERT_IO(svc);
    jn_io_relay_t *r = svc->relay;
    if (!r) {
        jn_io_own_shut_IO(svc, false);
        return;
    }
    if (r->done)
        return;
    char who[JN_IO_AUTHSVC_OWN_USER_MAX + 1];
    int id = jn_io_authsvc_own_identity(properties, who, sizeof who);
    if (!r->svc_sasl_ok)
        jn_io_relay_fail(r, DETACH_CLOSE, "the service opened without a SASL outcome");
    else if (id == JN_EPERM)
        jn_io_relay_fail(r, DETACH_CLOSE,
                         "the service sent address-authz permissions, which this router does "
                         "not enforce");
    else if (id <= 0)
        jn_io_relay_fail(r, DETACH_CLOSE,
                         "the service accepted the credentials but reported no usable "
                         "authenticated-identity (sub or preferred_username)");
    else if (!(r->user = strdup(who)))
        jn_io_relay_fail(r, DETACH_CLOSE, "router out of memory");
    else
        svc_succeeded(r);
}

/* jn_io_authsvc_own_svc_closed_IO: svc's transport ended (f: the engine's
 * fault, if it refused the service's input; io_error: the socket's error,
 * "" when none): a client still waiting is failed, saying why (a service
 * that answered before the client's init as 1.19 says it).
 * svc's loop. */
void jn_io_authsvc_own_svc_closed_IO(jn_io_conn_t *svc, const jn_amqp_fault_t *f,
                                     const char *io_error)
{
    JN_ASSERT_IO(svc);
    jn_io_relay_t *r = svc->relay;
    if (!r)
        return;
    const char *desc = f && f->condition ? f->description : NULL;
    if (desc && strstr(desc, "sasl-outcome came before our sasl-init"))
        jn_io_relay_fail(r, DETACH_ONLY, "the service sent an outcome before the client's init");
    else if (desc && strstr(desc, "sasl-challenge came before our sasl-init"))
        jn_io_relay_fail(r, DETACH_ONLY, "the service sent a challenge before the client's init");
    else if (desc)
        jn_io_relay_fail(r, DETACH_ONLY, "the connection to the service ended: %s %s",
                         f->condition, desc);
    else
        jn_io_relay_fail(r, DETACH_ONLY, "the connection to the service ended: %s",
                         io_error && io_error[0] ? io_error : "closed by the service");
}
