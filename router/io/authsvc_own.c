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
 * The relay's steps are authsvc_private.h's.
 *
 * Threads: as authsvc.c: the client's loop, which is the service
 * connection's too.
 */
#include "authsvc_private.h"

#include <junction/time.h>

#include <stdlib.h>
#include <string.h>

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
    pn_bytes_t b = pn_bytes(len, (const char *)response);
    r->own_waiting = true;
    jn_io_relay_init(r, mech, response ? &b : NULL);
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
    pn_bytes_t b = pn_bytes(len, len ? (const char *)response : "");
    r->own_waiting = true;
    jn_io_relay_response(r, &b);
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
    r->own = true;
    return jn_amqp_transport_set_sasl(t, &own_relay_ops, r, conn->endpoint->cfg.authenticate_peer);
}

/* jn_io_authsvc_own_pass_IO: the client's pass (io_own.c), conn->relay
 * set: the first connects to the service (as proton's SASL start does on
 * its path); then the service's offer or answer posted since is handed to
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
    pn_bytes_t b = pn_bytes(len, len ? (const char *)challenge : "");
    jn_io_relay_challenge(r, &b);
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
 * proton's path sends it. The thread starting svc. */
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

/* jn_io_authsvc_own_svc_open_IO: the service's Open on svc (its
 * properties, a view valid in the call): the identity decides the
 * client's outcome; a service no relay waits on any more is closed. svc's
 * loop. */
void jn_io_authsvc_own_svc_open_IO(jn_io_conn_t *svc, const jn_iter_t *properties)
{
    JN_ASSERT_IO(svc);
    jn_io_relay_t *r = svc->relay;
    if (!r) {
        jn_io_own_shut_IO(svc, false);
        return;
    }
    pn_data_t *props = jn_io_own_view_data(properties);
    pn_data_t *none = props ? NULL : pn_data(0);
    if (!props && !none)
        jn_io_relay_fail(r, DETACH_CLOSE, "router out of memory");
    else
        jn_io_relay_opened(r, props ? props : none);
    pn_data_free(props);
    pn_data_free(none);
}

/* jn_io_authsvc_own_svc_closed_IO: svc's transport ended (f: the engine's
 * fault, if it refused the service's input; io_error: the socket's error,
 * "" when none): a client still waiting is failed, saying why (a service
 * that answered before the client's init as proton's path says it).
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
