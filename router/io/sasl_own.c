/*
 * sasl_own.c — Cyrus SASL (Debian's libsasl2) behind the own engine's SASL
 * layer: a mechanism backend (jn_amqp_sasl_mech_ops_t, junction/
 * amqp_sasl.h) that calls Cyrus's server API directly, and for connectors
 * the client end's backend (jn_amqp_sasl_client_mech_ops_t) over Cyrus's
 * client API (below). The engine frames
 * the SASL performatives (router/amqp/sasl.c) and serves ANONYMOUS itself;
 * Cyrus lists the other mechanisms, computes the challenges and checks the
 * credentials (against the sasldb that its config file names). Cyrus is
 * started once by jn_sasl_init (sasl_cyrus.c: router saslConfigDir and
 * saslConfigName, as qdrouterd 1.19).
 *
 * What a connection offers is what 1.19 offers for the same
 * listener: Cyrus's list with its security properties (no security layer;
 * no ANONYMOUS when authenticatePeer is set; mechanisms that send a
 * password in the clear allowed, as 1.19 allows them without TLS), cut to
 * the listener's saslMechanisms when it names any. Under TLS Cyrus is told
 * the cipher's strength (SASL_SSF_EXTERNAL) and, when the client's
 * certificate was verified, its uid (the sslProfile's uidFormat and
 * uidNameMappingFile, io_tls.c) as SASL_AUTH_EXTERNAL, so that it offers
 * EXTERNAL and authenticates the client as that user, as 1.19 does;
 * for wss:// the TLS its bridge's owner terminated. With
 * an sslProfile the offer is computed when the client's SASL header
 * arrives, which is after the handshake: the certificate is known by
 * then.
 *
 * A refusal is logged once with the peer and Cyrus's reason; the
 * outcome's code is auth (5.3.3.6) whatever the reason, as in 1.19.
 *
 * Threads: jn_io_own_sasl_attach runs where the connection is accepted,
 * before it is started, and jn_io_own_sasl_client on the connector thread
 * before its connection is started; every callback on the connection's
 * I/O thread; each connection has its own Cyrus connection, and Cyrus's
 * global state is read-only after jn_sasl_init.
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
    bool offered;    /* mechs computed (and logged) */
} own_cyrus_t;

static void read_offer(own_cyrus_t *c, const char *conf);

/* TLS facts for Cyrus:
 * the cipher's strength and, when the client's certificate was verified,
 * its uid, which makes Cyrus offer EXTERNAL. Nothing without TLS. */
static void oc_external(own_cyrus_t *c)
{
    const char *proto, *cipher;
    int ssf = 0;
    if (!jn_io_tls_info(c->conn, &proto, &cipher, &ssf))
        return;
    sasl_ssf_t essf = (sasl_ssf_t)ssf;
    sasl_setprop(c->sc, SASL_SSF_EXTERNAL, &essf);
    const char *uid = jn_io_tls_peer_uid(c->conn);
    if (uid)
        sasl_setprop(c->sc, SASL_AUTH_EXTERNAL, uid);
}

/* The offer, computed once: at accept without an sslProfile, else at the
 * client's SASL header (the handshake done). */
static const char *oc_mechanisms(void *ctx)
{
    own_cyrus_t *c = ctx;
    if (!c->offered) {
        jn_io_conn_t *conn = c->conn;
        c->offered = true;
        oc_external(c);
        read_offer(c, conn->endpoint->cfg.sasl_mechanisms);
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
               JN_IO_CONN_FMT
               " SASL on Junction's own AMQP engine, offering: %s",
               conn->id, c->mechs[0] ? c->mechs : "nothing");
    }
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
    /* code auth whatever Cyrus's reason, as 1.19 sends it: the reason is
     * in the log, not on the wire */
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

void jn_io_sasl_offer_cut(const char *conf, const char *list, char *out, size_t cap)
{
    size_t len = 0;
    if (cap == 0)
        return;
    out[0] = '\0';
    for (const char *p = list ? list : ""; *p;) {
        while (*p == ' ')
            p++;
        size_t k = strcspn(p, " ");
        if (k && allowed(conf, p, k) && len + k + 2 <= cap) {
            if (len)
                out[len++] = ' ';
            memcpy(out + len, p, k);
            len += k;
            out[len] = '\0';
        }
        p += k;
    }
}

/* The offer: Cyrus's list for this connection, cut to saslMechanisms. */
static void read_offer(own_cyrus_t *c, const char *conf)
{
    const char *list = NULL;
    c->mechs[0] = '\0';
    if (sasl_listmech(c->sc, NULL, "", " ", "", &list, NULL, NULL) != SASL_OK || !list)
        return;
    jn_io_sasl_offer_cut(conf, list, c->mechs, sizeof c->mechs);
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
    /* with an sslProfile, at the client's SASL header: the handshake (ours,
     * or a wss:// bridge's owner's, linked to conn after this) is done
     * then */
    if (!(cfg->ssl_profile && cfg->ssl_profile[0]))
        (void)oc_mechanisms(c);
    return jn_amqp_transport_set_sasl(t, &own_cyrus_ops, c, cfg->authenticate_peer);
}

/* ---- the built-in ANONYMOUS: listeners without Cyrus ----------------------
 *
 * A listener that does not use Cyrus (jn_endpoint_uses_sasl_plugin false:
 * saslMechanisms naming ANONYMOUS alone in another spelling, "anonymous"
 * or "ANONYMOUS,"; without Cyrus started, any listener) gets the engine's
 * built-in ANONYMOUS, offered as 1.19 offers it: when saslMechanisms is
 * unset or one of its words
 * (separated by spaces only, any case; "ANONYMOUS," is not such a word) is
 * ANONYMOUS, else nothing at all (every sasl-init refused with outcome
 * auth), and SASL required with authenticatePeer. */

/* Does conf (saslMechanisms, set) name ANONYMOUS as 1.19's inclusion
 * list reads it: a space-separated word, any case? */
static bool names_anonymous(const char *conf)
{
    for (const char *p = conf; *p;) {
        while (*p == ' ')
            p++;
        size_t k = strcspn(p, " ");
        if (k == sizeof "ANONYMOUS" - 1 && strncasecmp(p, "ANONYMOUS", k) == 0)
            return true;
        p += k;
    }
    return false;
}

static const char *none_mechanisms(void *ctx)
{
    (void)ctx;
    return "";
}

/* Never called (nothing is offered); a refusal if it were. */
static int none_start(void *ctx, const char *mech, const uint8_t *response, size_t len,
                      const uint8_t **out, size_t *out_len)
{
    (void)ctx;
    (void)mech;
    (void)response;
    (void)len;
    (void)out;
    (void)out_len;
    return JN_AMQP_SASL_OUTCOME_AUTH;
}

static int none_step(void *ctx, const uint8_t *response, size_t len, const uint8_t **out,
                     size_t *out_len)
{
    (void)ctx;
    (void)response;
    (void)len;
    (void)out;
    (void)out_len;
    return JN_AMQP_SASL_OUTCOME_AUTH;
}

static const char *none_user(void *ctx)
{
    (void)ctx;
    return NULL;
}

static const jn_amqp_sasl_mech_ops_t none_ops = {
    .mechanisms = none_mechanisms,
    .start = none_start,
    .step = none_step,
    .user = none_user,
};

int jn_io_own_sasl_builtin(jn_io_conn_t *conn, jn_amqp_transport_t *t)
{
    const jn_endpoint_config_t *cfg = &conn->endpoint->cfg;
    const char *m = cfg->sasl_mechanisms;
    bool anonymous = !m || !m[0] || names_anonymous(m);
    if (anonymous && !cfg->authenticate_peer)
        return 0; /* the transport's default */
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO,
           JN_IO_CONN_FMT " SASL on Junction's own AMQP engine (JUNCTION_ENGINE=own), offering: "
                          "%s (built in%s)",
           conn->id, anonymous ? "ANONYMOUS" : "nothing",
           cfg->authenticate_peer ? ", SASL required" : "");
    return jn_amqp_transport_set_sasl(t, anonymous ? NULL : &none_ops, NULL,
                                      cfg->authenticate_peer);
}

/* ---- the client end: connectors' Cyrus mechanisms -------------------------
 *
 * A connector that uses Cyrus (jn_endpoint_uses_sasl_plugin: a
 * saslUsername, an sslProfile, or a mechanism beyond ANONYMOUS: PLAIN,
 * SCRAM-SHA-*, DIGEST-MD5, EXTERNAL...) gets Cyrus's client as the client
 * end's backend (jn_amqp_sasl_client_mech_ops_t): the server's offer cut
 * to saslMechanisms, Cyrus choosing among them, the connector's
 * saslUsername and saslPassword as the credentials, the server's signature
 * in the outcome checked. */

/* One connection's Cyrus client state (the client backend's ctx). */
typedef struct own_cyrus_client {
    jn_io_conn_t *conn; /* for logs and the connector's config (outlives the transport) */
    sasl_conn_t *sc;
    sasl_callback_t cb[4];
    sasl_secret_t *secret; /* the password for Cyrus (heap, wiped) */
    char mech[64];
} own_cyrus_client_t;

/* Cyrus stores every callback as int (*)(void) and calls it with its real
 * type (sasl.h): the cast goes through void (*)(void), which C allows to
 * convert to any function pointer type, and back at Cyrus's call. */
#define SASL_CB_FN(fn) ((int (*)(void))(void (*)(void))(fn))

static int occ_simple(void *ctx, int id, const char **result, unsigned *len)
{
    own_cyrus_client_t *c = ctx;
    const char *user = c->conn->endpoint->cfg.sasl_username;
    if (id == SASL_CB_AUTHNAME)
        *result = user ? user : "";
    else if (id == SASL_CB_USER)
        *result = ""; /* no separate authorization identity */
    else
        return SASL_BADPARAM;
    if (len)
        *len = (unsigned)strlen(*result);
    return SASL_OK;
}

static int occ_secret(sasl_conn_t *sc, void *ctx, int id, sasl_secret_t **psecret)
{
    (void)sc;
    own_cyrus_client_t *c = ctx;
    const char *pw = c->conn->endpoint->cfg.sasl_password;
    if (id != SASL_CB_PASS)
        return SASL_BADPARAM;
    if (!pw)
        return SASL_FAIL;
    size_t n = strlen(pw);
    if (!c->secret) {
        c->secret = malloc(sizeof(sasl_secret_t) + n + 1);
        if (!c->secret)
            return SASL_NOMEM;
        c->secret->len = n;
        memcpy(c->secret->data, pw, n + 1);
    }
    *psecret = c->secret;
    return SASL_OK;
}

/* TLS facts for Cyrus's client: the strength and, under TLS, a non-empty
 * external id so that Cyrus may use EXTERNAL (our certificate is what the
 * server checks; the id itself is not sent), as sasl_cyrus.c. */
static void occ_external(own_cyrus_client_t *c)
{
    const char *proto, *cipher;
    int ssf = 0;
    if (!jn_io_tls_info(c->conn, &proto, &cipher, &ssf))
        return;
    sasl_ssf_t essf = (sasl_ssf_t)ssf;
    sasl_setprop(c->sc, SASL_SSF_EXTERNAL, &essf);
    const char *user = c->conn->endpoint->cfg.sasl_username;
    sasl_setprop(c->sc, SASL_AUTH_EXTERNAL, user && user[0] ? user : "tls-certificate");
}

static int occ_start(void *ctx, const char *offer, const char **mech, const uint8_t **out,
                     size_t *out_len)
{
    own_cyrus_client_t *c = ctx;
    const char *conf = c->conn->endpoint->cfg.sasl_mechanisms;
    char list[512];
    size_t len = 0;
    list[0] = '\0';
    for (const char *p = offer; *p;) {
        while (*p == ' ')
            p++;
        size_t k = strcspn(p, " ");
        if (k && allowed(conf, p, k) && len + k + 2 < sizeof list) {
            if (len)
                list[len++] = ' ';
            memcpy(list + len, p, k);
            len += k;
            list[len] = '\0';
        }
        p += k;
    }
    occ_external(c); /* the TLS handshake is done by now */
    const char *o = NULL, *chosen = NULL;
    unsigned olen = 0;
    int r = len ? sasl_client_start(c->sc, list, NULL, &o, &olen, &chosen) : SASL_NOMECH;
    if (r != SASL_OK && r != SASL_CONTINUE) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               JN_IO_CONN_FMT " SASL to %s: no mechanism works (the server offers '%s'%s%s): %s",
               c->conn->id, c->conn->host, offer, conf ? ", saslMechanisms " : "",
               conf ? conf : "", sasl_errdetail(c->sc));
        return JN_EPROTO;
    }
    snprintf(c->mech, sizeof c->mech, "%s", chosen ? chosen : "");
    *mech = c->mech;
    *out = (const uint8_t *)o;
    *out_len = o ? olen : 0;
    return 0;
}

static int occ_step(void *ctx, const uint8_t *challenge, size_t len, const uint8_t **out,
                    size_t *out_len)
{
    own_cyrus_client_t *c = ctx;
    const char *o = NULL;
    unsigned olen = 0;
    int r = sasl_client_step(c->sc, (const char *)challenge, (unsigned)len, NULL, &o, &olen);
    if (r != SASL_OK && r != SASL_CONTINUE) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING, JN_IO_CONN_FMT " SASL %s to %s failed: %s",
               c->conn->id, c->mech, c->conn->host, sasl_errdetail(c->sc));
        return JN_EPROTO;
    }
    *out = (const uint8_t *)o;
    *out_len = o ? olen : 0;
    return 0;
}

/* The server's outcome: a refusal logged with the server's reason; an ok's additional-data, the server's last word (SCRAM's
 * server signature), must satisfy Cyrus (none is fine). */
static int occ_outcome(void *ctx, int code, const uint8_t *data, size_t len)
{
    own_cyrus_client_t *c = ctx;
    jn_io_conn_t *conn = c->conn;
    const char *user = conn->endpoint->cfg.sasl_username;
    if (code != JN_AMQP_SASL_OUTCOME_OK) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               JN_IO_CONN_FMT " SASL %s to %s: the server refused the credentials of '%s'",
               conn->id, c->mech, conn->host, user ? user : "");
        return JN_EPROTO;
    }
    if (!len)
        return 0;
    const char *o = NULL;
    unsigned olen = 0;
    int r = sasl_client_step(c->sc, (const char *)data, (unsigned)len, NULL, &o, &olen);
    if (r == SASL_OK)
        return 0;
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
           JN_IO_CONN_FMT " SASL %s to %s: the server's proof is wrong: %s", conn->id, c->mech,
           conn->host, sasl_errdetail(c->sc));
    return JN_EPROTO;
}

static const char *occ_reason(void *ctx)
{
    own_cyrus_client_t *c = ctx;
    return sasl_errdetail(c->sc);
}

static void occ_free(void *ctx)
{
    own_cyrus_client_t *c = ctx;
    if (!c)
        return;
    if (c->sc)
        sasl_dispose(&c->sc);
    if (c->secret) {
        explicit_bzero(c->secret->data, c->secret->len);
        free(c->secret);
    }
    free(c);
}

static const jn_amqp_sasl_client_mech_ops_t own_cyrus_client_ops = {
    .start = occ_start,
    .step = occ_step,
    .outcome = occ_outcome,
    .reason = occ_reason,
    .free = occ_free,
};

int jn_io_own_sasl_client(jn_io_conn_t *conn, const jn_amqp_sasl_client_mech_ops_t **ops,
                          void **ctx)
{
    own_cyrus_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return JN_ENOMEM;
    c->conn = conn;
    c->cb[0] = (sasl_callback_t){SASL_CB_AUTHNAME, SASL_CB_FN(occ_simple), c};
    c->cb[1] = (sasl_callback_t){SASL_CB_USER, SASL_CB_FN(occ_simple), c};
    c->cb[2] = (sasl_callback_t){SASL_CB_PASS, SASL_CB_FN(occ_secret), c};
    c->cb[3] = (sasl_callback_t){SASL_CB_LIST_END, NULL, NULL};
    const char *host = conn->endpoint->cfg.host;
    int r = sasl_client_new("amqp", host && host[0] ? host : "localhost", NULL, NULL, c->cb,
                            SASL_SUCCESS_DATA, &c->sc);
    if (r != SASL_OK) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, JN_IO_CONN_FMT " Cyrus SASL client: %s", conn->id,
               sasl_errstring(r, NULL, NULL));
        occ_free(c);
        return r == SASL_NOMEM ? JN_ENOMEM : JN_EINVAL;
    }
    sasl_security_properties_t sp;
    memset(&sp, 0, sizeof sp);
    sp.max_ssf = 0; /* no SASL security layer: TLS encrypts */
    sasl_setprop(c->sc, SASL_SEC_PROPS, &sp);
    *ops = &own_cyrus_client_ops;
    *ctx = c;
    return 0;
}
