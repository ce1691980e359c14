/*
 * sasl_own.c — Cyrus SASL (Debian's libsasl2) behind the own engine's SASL
 * layer: a mechanism backend (jn_amqp_sasl_mech_ops_t, junction/
 * amqp_sasl.h) that calls Cyrus's server API directly. The engine frames
 * the SASL performatives (router/amqp/sasl.c) and serves ANONYMOUS itself;
 * Cyrus lists the other mechanisms, computes the challenges and checks the
 * credentials (against the sasldb that its config file names). Cyrus is
 * started once by jn_sasl_init (sasl_cyrus.c: router saslConfigDir and
 * saslConfigName, as qdrouterd 1.19); the proton path's glue stays there.
 *
 * What a connection offers is what the proton path offers for the same
 * listener: Cyrus's list with its security properties (no security layer;
 * no ANONYMOUS when authenticatePeer is set; mechanisms that send a
 * password in the clear allowed, as 1.19 allows them without TLS), cut to
 * the listener's saslMechanisms when it names any. No TLS here (the own
 * path takes no TLS listener yet), so no EXTERNAL.
 *
 * A refusal is logged once with the peer and Cyrus's reason, in the proton
 * path's words; the outcome's code is auth (5.3.3.6) whatever the reason,
 * as on proton's path and in 1.19.
 *
 * Threads: jn_io_own_sasl_attach runs where the connection is accepted,
 * before it is started; every callback on the connection's I/O thread; each connection has its own
 * Cyrus connection, and Cyrus's global state is read-only after jn_sasl_init.
 */
#include "sasl_own.h"

#include <sasl/sasl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* One connection's Cyrus server state (the backend's ctx). */
typedef struct own_cyrus {
    jn_io_conn_t *conn; /* for logs (outlives the transport) */
    sasl_conn_t *sc;
    char mech[64];   /* the mechanism the peer chose, for logs */
    char mechs[512]; /* the offer, space-separated */
} own_cyrus_t;

static const char *oc_mechanisms(void *ctx)
{
    own_cyrus_t *c = ctx;
    return c->mechs;
}

/* A start's or step's result r: a challenge, success (with SCRAM's
 * server-final as additional-data), or the refusal, logged. */
static int oc_result(own_cyrus_t *c, int r, const char *out, unsigned outlen, const uint8_t **o,
                     size_t *olen)
{
    *o = (const uint8_t *)out;
    *olen = out ? outlen : 0;
    if (r == SASL_OK)
        return JN_AMQP_SASL_OUTCOME_OK;
    if (r == SASL_CONTINUE)
        return JN_AMQP_SASL_STEP_CHALLENGE;
    jn_io_conn_t *conn = c->conn;
    const char *detail = sasl_errdetail(c->sc);
    conn->refused_logged = true;
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
           JN_IO_CONN_FMT " SASL %s authentication from %s (to %s) failed: %s", conn->id,
           c->mech[0] ? c->mech : "?", conn->host, conn->endpoint->shown,
           detail ? detail : sasl_errstring(r, NULL, NULL));
    /* code auth whatever Cyrus's reason, as proton's path (and 1.19) send
     * it: the reason is in the log, not on the wire */
    return JN_AMQP_SASL_OUTCOME_AUTH;
}

static int oc_start(void *ctx, const char *mech, const uint8_t *response, size_t len,
                    const uint8_t **out, size_t *out_len)
{
    own_cyrus_t *c = ctx;
    snprintf(c->mech, sizeof c->mech, "%s", mech);
    const char *o = NULL;
    unsigned olen = 0;
    /* NULL: no initial response (Cyrus then asks with an empty challenge);
     * present and empty is sent as such */
    int r = sasl_server_start(c->sc, mech, (const char *)response, (unsigned)len, &o, &olen);
    return oc_result(c, r, o, olen, out, out_len);
}

static int oc_step(void *ctx, const uint8_t *response, size_t len, const uint8_t **out,
                   size_t *out_len)
{
    own_cyrus_t *c = ctx;
    const char *o = NULL;
    unsigned olen = 0;
    int r = sasl_server_step(c->sc, len ? (const char *)response : "", (unsigned)len, &o, &olen);
    return oc_result(c, r, o, olen, out, out_len);
}

static const char *oc_user(void *ctx)
{
    own_cyrus_t *c = ctx;
    const void *user = NULL;
    if (sasl_getprop(c->sc, SASL_USERNAME, &user) != SASL_OK)
        return NULL;
    return user;
}

static void oc_free(void *ctx)
{
    own_cyrus_t *c = ctx;
    if (c->sc)
        sasl_dispose(&c->sc);
    free(c);
}

static const jn_amqp_sasl_mech_ops_t own_cyrus_ops = {
    .mechanisms = oc_mechanisms,
    .start = oc_start,
    .step = oc_step,
    .user = oc_user,
    .free = oc_free,
};

/* Does the listener's saslMechanisms (spaces or commas; NULL or empty:
 * every mechanism) name mech (n octets)? */
static bool allowed(const char *conf, const char *mech, size_t n)
{
    if (!conf || !conf[0])
        return true;
    for (const char *p = conf; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t k = strcspn(p, " ,");
        if (k == n && strncasecmp(p, mech, n) == 0)
            return true;
        p += k;
    }
    return false;
}

/* The offer: Cyrus's list for this connection, cut to saslMechanisms. */
static void read_offer(own_cyrus_t *c, const char *conf)
{
    const char *list = NULL;
    size_t len = 0;
    c->mechs[0] = '\0';
    if (sasl_listmech(c->sc, NULL, "", " ", "", &list, NULL, NULL) != SASL_OK || !list)
        return;
    for (const char *p = list; *p;) {
        while (*p == ' ')
            p++;
        size_t k = strcspn(p, " ");
        if (k && allowed(conf, p, k) && len + k + 2 < sizeof c->mechs) {
            if (len)
                c->mechs[len++] = ' ';
            memcpy(c->mechs + len, p, k);
            len += k;
            c->mechs[len] = '\0';
        }
        p += k;
    }
}

int jn_io_own_sasl_attach(jn_io_conn_t *conn, jn_amqp_transport_t *t)
{
    const jn_endpoint_config_t *cfg = &conn->endpoint->cfg;
    own_cyrus_t *c = calloc(1, sizeof *c);
    if (!c)
        return JN_ENOMEM;
    c->conn = conn;
    /* SASL_SUCCESS_DATA: AMQP's outcome carries the server's last word
     * (SCRAM's server signature), so no extra challenge round */
    int r = sasl_server_new("amqp", NULL, NULL, NULL, NULL, NULL, SASL_SUCCESS_DATA, &c->sc);
    if (r != SASL_OK) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, JN_IO_CONN_FMT " Cyrus SASL server: %s", conn->id,
               sasl_errstring(r, NULL, NULL));
        oc_free(c);
        return r == SASL_NOMEM ? JN_ENOMEM : JN_EINVAL;
    }
    sasl_security_properties_t sp;
    memset(&sp, 0, sizeof sp);
    sp.max_ssf = 0; /* no SASL security layer */
    if (cfg->authenticate_peer)
        sp.security_flags |= SASL_SEC_NOANONYMOUS;
    sasl_setprop(c->sc, SASL_SEC_PROPS, &sp);
    read_offer(c, cfg->sasl_mechanisms);
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
           JN_IO_CONN_FMT " SASL on Junction's own AMQP engine (JUNCTION_ENGINE=own), offering: %s",
           conn->id, c->mechs[0] ? c->mechs : "nothing");
    return jn_amqp_transport_set_sasl(t, &own_cyrus_ops, c, cfg->authenticate_peer);
}
