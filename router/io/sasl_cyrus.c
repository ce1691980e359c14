/*
 * sasl_cyrus.c — Cyrus SASL (Debian's libsasl2) behind proton's SASL layer,
 * through proton's extension point (proton/sasl_plugin.h,
 * pnx_sasl_set_implementation on each transport). Debian's proton is built
 * without Cyrus: on its own it offers a server ANONYMOUS only (EXTERNAL
 * needs proton's own TLS, which we do not use). The mechanisms are Cyrus's
 * (PLAIN, SCRAM-SHA-1/256, DIGEST-MD5, ANONYMOUS, EXTERNAL, ...); this file
 * is only the glue: proton frames the SASL performatives, Cyrus computes
 * the challenges and checks the credentials (against the sasldb that the
 * Cyrus config file names).
 *
 * Configured as qdrouterd 1.19: router saslConfigDir (where Cyrus looks
 * for its config file) and saslConfigName (the file is NAME.conf; default
 * "qdrouterd"), read once by jn_sasl_init at start-up.
 *
 * EXTERNAL: the identity is the TLS client certificate's uid (sslProfile
 * uidFormat, io_tls.c), given to Cyrus as SASL_AUTH_EXTERNAL once the
 * handshake has verified the certificate; without a verified certificate
 * Cyrus does not offer EXTERNAL. The TLS cipher's strength is given as
 * SASL_SSF_EXTERNAL. No SASL security layer is negotiated (max_ssf 0):
 * encryption is TLS's.
 *
 * Which transports use it (jn_endpoint_uses_sasl_plugin): a listener with
 * authenticatePeer, an sslProfile, or a mechanism other than ANONYMOUS; a
 * connector with saslUsername, an sslProfile, or a mechanism other than
 * ANONYMOUS. The rest (anonymous plain connections: tests, benchmarks,
 * most clients) keep proton's built-in ANONYMOUS, which costs nothing.
 *
 * Threads: jn_sasl_init on the main thread before the I/O threads start;
 * the rest on the owning loop's thread of each connection (Cyrus objects
 * are per connection; its global state is read-only after init).
 */
#include "io_private.h"

#include <proton/sasl.h>
#include <proton/sasl_plugin.h>

#include <sasl/sasl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Cyrus stores every callback as int (*)(void) and calls it with its real
 * type (sasl.h): the cast goes through void (*)(void), which C allows to
 * convert to any function pointer type, and back at Cyrus's call. */
#define SASL_CB_FN(fn) ((int (*)(void))(void (*)(void))(fn))

/* One transport's Cyrus state (the implementation's context). */
typedef struct cyrus {
    jn_io_conn_t *conn; /* for logs and TLS facts (outlives the transport) */
    pn_transport_t *t;
    sasl_conn_t *sc;
    bool server;
    sasl_callback_t cb[4];
    sasl_secret_t *secret; /* client password for Cyrus (heap) */
    /* our copy of the octets proton is to send next (pnx_sasl_set_bytes_out
     * keeps the pointer until it writes the frame; Cyrus may free its own
     * buffer meanwhile, e.g. when the next step fails) */
    char *out;
    size_t out_len;
    char mech[64]; /* the mechanism in use, for logs */
} cyrus_t;

static bool cyrus_ready;
static void read_server_mechs(void);
static char sasl_init_error[256];

static int log_cb(void *ctx, int level, const char *message)
{
    (void)ctx;
    if (level <= SASL_LOG_ERR)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING, "Cyrus SASL: %s", message);
    else
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_DEBUG, "Cyrus SASL: %s", message);
    return SASL_OK;
}

static char *conf_dir;

static int getconfpath_cb(void *ctx, const char **path)
{
    (void)ctx;
    *path = conf_dir;
    return SASL_OK;
}

int jn_sasl_init(const char *config_dir, const char *config_name, char *err, size_t errlen)
{
    static sasl_callback_t global_cb[3];
    if (cyrus_ready)
        return 0;
    int n = 0;
    global_cb[n++] = (sasl_callback_t){SASL_CB_LOG, SASL_CB_FN(log_cb), NULL};
    if (config_dir && config_dir[0]) {
        conf_dir = strdup(config_dir);
        if (!conf_dir)
            return JN_ENOMEM;
        global_cb[n++] = (sasl_callback_t){SASL_CB_GETCONFPATH, SASL_CB_FN(getconfpath_cb), NULL};
    }
    global_cb[n] = (sasl_callback_t){SASL_CB_LIST_END, NULL, NULL};
    const char *name = config_name && config_name[0] ? config_name : "qdrouterd";
    int r = sasl_server_init(global_cb, name);
    if (r == SASL_OK)
        r = sasl_client_init(global_cb);
    if (r != SASL_OK) {
        snprintf(sasl_init_error, sizeof sasl_init_error, "%s", sasl_errstring(r, NULL, NULL));
        if (err && errlen)
            snprintf(err, errlen, "Cyrus SASL cannot start (config '%s.conf' in %s): %s", name,
                     conf_dir ? conf_dir : "its default folder", sasl_init_error);
        return JN_EINVAL;
    }
    cyrus_ready = true;
    read_server_mechs();
    return 0;
}

void jn_sasl_shutdown(void)
{
    if (!cyrus_ready)
        return;
    sasl_done();
    cyrus_ready = false;
    free(conf_dir);
    conf_dir = NULL;
}

/* The server mechanisms as Cyrus's config allows them (its mech_list):
 * what a connection would list (sasl_global_listmech names every plugin
 * loaded, whatever mech_list says), read once at init. */
static char server_mechs[512];

static void read_server_mechs(void)
{
    sasl_conn_t *probe = NULL;
    const char *list = NULL;
    server_mechs[0] = '\0';
    if (sasl_server_new("amqp", NULL, NULL, NULL, NULL, NULL, 0, &probe) != SASL_OK)
        return;
    if (sasl_listmech(probe, NULL, "", " ", "", &list, NULL, NULL) == SASL_OK && list)
        snprintf(server_mechs, sizeof server_mechs, "%s", list);
    sasl_dispose(&probe);
}

bool jn_sasl_server_offers(const char *mech)
{
    if (!cyrus_ready || !mech || !mech[0])
        return false;
    size_t n = strlen(mech);
    for (const char *p = server_mechs; *p;) {
        size_t k = strcspn(p, " ");
        if (k == n && strncasecmp(p, mech, n) == 0)
            return true;
        p += k;
        while (*p == ' ')
            p++;
    }
    return false;
}

size_t jn_sasl_server_mechanisms(char *out, size_t outlen)
{
    if (!outlen)
        return 0;
    snprintf(out, outlen, "%s", cyrus_ready ? server_mechs : "");
    return strlen(out);
}

/* Does mechs (space- or comma-separated) name anything but ANONYMOUS? */
static bool names_real_mech(const char *mechs)
{
    if (!mechs || !mechs[0])
        return false;
    const char *p = mechs;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, " ,");
        if (n && !(n == 9 && strncasecmp(p, "ANONYMOUS", 9) == 0))
            return true;
        p += n;
    }
    return false;
}

int jn_sasl_check_listener(const jn_endpoint_config_t *ec, bool can_external, char *err,
                           size_t errlen)
{
    bool cyrus = jn_endpoint_uses_sasl_plugin(ec, true);
    char offered[512];
    jn_sasl_server_mechanisms(offered, sizeof offered);
    bool authenticates = false;
    const char *m = ec->sasl_mechanisms;
    if (m && m[0]) {
        for (const char *p = m; *p;) {
            while (*p == ' ' || *p == ',')
                p++;
            size_t n = strcspn(p, " ,");
            if (n == 0)
                break;
            char mech[64];
            snprintf(mech, sizeof mech, "%.*s", (int)n, p);
            p += n;
            if (strcmp(mech, "EXTERNAL") == 0) {
                if (!can_external) {
                    snprintf(err, errlen,
                             "saslMechanisms 'EXTERNAL' needs an sslProfile with a caCertFile "
                             "(the client certificate is the identity)");
                    return JN_EINVAL;
                }
                authenticates = true;
                continue;
            }
            if (strcmp(mech, "ANONYMOUS") == 0 && !cyrus)
                continue; /* proton's own */
            if (!jn_sasl_server_offers(mech)) {
                snprintf(err, errlen,
                         "SASL mechanism '%s' is not available (Cyrus SASL offers: %s; see router "
                         "saslConfigDir/saslConfigName and mech_list)",
                         mech, offered[0] ? offered : "none");
                return JN_EINVAL;
            }
            authenticates = authenticates || strcmp(mech, "ANONYMOUS") != 0;
        }
    } else {
        authenticates = can_external;
        for (const char *p = offered; *p && !authenticates;) {
            size_t n = strcspn(p, " ");
            authenticates = !(n == 9 && strncmp(p, "ANONYMOUS", 9) == 0) &&
                            !(n == 8 && strncmp(p, "EXTERNAL", 8) == 0);
            p += n;
            while (*p == ' ')
                p++;
        }
    }
    if (ec->authenticate_peer && !authenticates) {
        snprintf(err, errlen,
                 "authenticatePeer needs a SASL mechanism that authenticates (saslMechanisms "
                 "%s; Cyrus SASL offers: %s)",
                 m && m[0] ? m : "not set", offered[0] ? offered : "none");
        return JN_EINVAL;
    }
    return 0;
}

bool jn_endpoint_uses_sasl_plugin(const jn_endpoint_config_t *cfg, bool server)
{
    if (!cyrus_ready)
        return false;
    bool tls = cfg->ssl_profile && cfg->ssl_profile[0];
    if (server)
        return cfg->authenticate_peer || tls || names_real_mech(cfg->sasl_mechanisms);
    return (cfg->sasl_username && cfg->sasl_username[0]) || tls ||
           names_real_mech(cfg->sasl_mechanisms);
}

/* ---- the implementation's entry points -------------------------------------- */

static cyrus_t *ctx_of(pn_transport_t *t)
{
    return pnx_sasl_get_context(t);
}

/* Hand proton octets to send (a copy of ours). out NULL: the field is
 * absent; out not NULL and len 0: present and empty (an EXTERNAL client's
 * empty initial response must be sent as such, or the server asks for it). */
static void set_out(cyrus_t *c, const char *out, unsigned len)
{
    static const char empty[1];
    free(c->out);
    c->out = NULL;
    c->out_len = 0;
    if (out && len && (c->out = malloc(len)) != NULL) {
        memcpy(c->out, out, len);
        c->out_len = len;
    }
    pnx_sasl_set_bytes_out(c->t, pn_bytes(c->out_len, c->out ? c->out : out ? empty : NULL));
}

static void cyrus_free(pn_transport_t *t)
{
    cyrus_t *c = ctx_of(t);
    if (!c)
        return;
    if (c->sc)
        sasl_dispose(&c->sc);
    if (c->secret) {
        memset(c->secret->data, 0, c->secret->len);
        free(c->secret);
    }
    free(c->out);
    free(c);
    pnx_sasl_set_context(t, NULL);
}

static const char *cyrus_list_mechs(pn_transport_t *t)
{
    cyrus_t *c = ctx_of(t);
    const char *result = NULL;
    if (!c || !c->sc || sasl_listmech(c->sc, NULL, "", " ", "", &result, NULL, NULL) != SASL_OK)
        return "";
    return result;
}

/* TLS facts for Cyrus: the external SSF and, when the peer's certificate
 * was verified, the external identity (EXTERNAL). */
static void set_external(cyrus_t *c)
{
    const char *proto, *cipher;
    int ssf = 0;
    if (!jn_io_tls_info(c->conn, &proto, &cipher, &ssf))
        return;
    sasl_ssf_t essf = (sasl_ssf_t)ssf;
    sasl_setprop(c->sc, SASL_SSF_EXTERNAL, &essf);
    const char *uid = jn_io_tls_peer_uid(c->conn);
    if (c->server && uid)
        sasl_setprop(c->sc, SASL_AUTH_EXTERNAL, uid);
    else if (!c->server) {
        /* our own certificate is what the server checks; Cyrus only needs
         * a non-empty external id to offer EXTERNAL (it does not send it:
         * the authorization identity sent is SASL_CB_USER's, empty) */
        const char *user = pnx_sasl_get_username(c->t);
        sasl_setprop(c->sc, SASL_AUTH_EXTERNAL, user && user[0] ? user : "tls-certificate");
    }
}

static void set_secprops(cyrus_t *c)
{
    sasl_security_properties_t sp;
    memset(&sp, 0, sizeof sp);
    sp.min_ssf = 0;
    sp.max_ssf = 0; /* no SASL security layer: TLS encrypts */
    sp.maxbufsize = 0;
    if (c->server && pnx_sasl_get_authentication_required(c->t))
        sp.security_flags |= SASL_SEC_NOANONYMOUS;
    const char *proto, *cipher;
    int ssf;
    if (!pnx_sasl_get_allow_insecure_mechanisms(c->t) &&
        !jn_io_tls_info(c->conn, &proto, &cipher, &ssf))
        sp.security_flags |= SASL_SEC_NOPLAINTEXT;
    sasl_setprop(c->sc, SASL_SEC_PROPS, &sp);
}

static bool cyrus_init_server(pn_transport_t *t)
{
    cyrus_t *c = ctx_of(t);
    c->t = t;
    c->server = true;
    /* SASL_SUCCESS_DATA: AMQP's outcome carries the server's last word
     * (SCRAM's server signature), so no extra challenge round */
    int r = sasl_server_new("amqp", NULL, NULL, NULL, NULL, NULL, SASL_SUCCESS_DATA, &c->sc);
    if (r != SASL_OK) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, JN_IO_CONN_FMT " Cyrus SASL server: %s",
               c->conn->id, sasl_errstring(r, NULL, NULL));
        return false;
    }
    set_secprops(c);
    set_external(c);
    pnx_sasl_set_desired_state(t, SASL_POSTED_MECHANISMS);
    return true;
}

/* A server step's result: success, a challenge, or the refusal (logged
 * once, with the peer and Cyrus's reason). */
static void server_result(cyrus_t *c, int r, const char *out, unsigned outlen)
{
    pn_transport_t *t = c->t;
    if (r == SASL_OK) {
        const void *user = NULL;
        sasl_getprop(c->sc, SASL_USERNAME, &user);
        set_out(c, out, outlen); /* SCRAM's server-final, or nothing */
        pnx_sasl_set_succeeded(t, user ? (const char *)user : "", NULL);
        pnx_sasl_set_desired_state(t, SASL_POSTED_OUTCOME);
        return;
    }
    if (r == SASL_CONTINUE) {
        set_out(c, out, outlen);
        pnx_sasl_set_desired_state(t, SASL_POSTED_CHALLENGE);
        return;
    }
    const char *detail = sasl_errdetail(c->sc);
    c->conn->refused_logged = true;
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
           JN_IO_CONN_FMT " SASL %s authentication from %s (to %s) failed: %s", c->conn->id,
           c->mech[0] ? c->mech : "?", c->conn->host, c->conn->endpoint->shown,
           detail ? detail : sasl_errstring(r, NULL, NULL));
    set_out(c, NULL, 0);
    pnx_sasl_set_failed(t);
    pnx_sasl_set_desired_state(t, SASL_POSTED_OUTCOME);
}

static void cyrus_process_init(pn_transport_t *t, const char *mech, const pn_bytes_t *recv)
{
    cyrus_t *c = ctx_of(t);
    snprintf(c->mech, sizeof c->mech, "%s", mech ? mech : "");
    const char *out = NULL;
    unsigned outlen = 0;
    int r = sasl_server_start(c->sc, mech, recv && recv->start ? recv->start : NULL,
                              recv ? (unsigned)recv->size : 0, &out, &outlen);
    server_result(c, r, out, outlen);
}

static void cyrus_process_response(pn_transport_t *t, const pn_bytes_t *recv)
{
    cyrus_t *c = ctx_of(t);
    const char *out = NULL;
    unsigned outlen = 0;
    int r = sasl_server_step(c->sc, recv->start, (unsigned)recv->size, &out, &outlen);
    server_result(c, r, out, outlen);
}

/* ---- client ----------------------------------------------------------------- */

static int client_simple_cb(void *ctx, int id, const char **result, unsigned *len)
{
    cyrus_t *c = ctx;
    const char *user = pnx_sasl_get_username(c->t);
    switch (id) {
    case SASL_CB_AUTHNAME:
        *result = user ? user : "";
        break;
    case SASL_CB_USER:
        *result = ""; /* no separate authorization identity */
        break;
    default:
        return SASL_BADPARAM;
    }
    if (len)
        *len = (unsigned)strlen(*result);
    return SASL_OK;
}

static int client_secret_cb(sasl_conn_t *sc, void *ctx, int id, sasl_secret_t **psecret)
{
    (void)sc;
    cyrus_t *c = ctx;
    if (id != SASL_CB_PASS)
        return SASL_BADPARAM;
    const char *pw = pnx_sasl_get_password(c->t);
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

static bool cyrus_init_client(pn_transport_t *t)
{
    cyrus_t *c = ctx_of(t);
    c->t = t;
    c->server = false;
    c->cb[0] = (sasl_callback_t){SASL_CB_AUTHNAME, SASL_CB_FN(client_simple_cb), c};
    c->cb[1] = (sasl_callback_t){SASL_CB_USER, SASL_CB_FN(client_simple_cb), c};
    c->cb[2] = (sasl_callback_t){SASL_CB_PASS, SASL_CB_FN(client_secret_cb), c};
    c->cb[3] = (sasl_callback_t){SASL_CB_LIST_END, NULL, NULL};
    const char *host = c->conn->endpoint->cfg.host;
    int r = sasl_client_new("amqp", host && host[0] ? host : "localhost", NULL, NULL, c->cb,
                            SASL_SUCCESS_DATA, &c->sc);
    if (r != SASL_OK) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, JN_IO_CONN_FMT " Cyrus SASL client: %s",
               c->conn->id, sasl_errstring(r, NULL, NULL));
        return false;
    }
    set_secprops(c);
    set_external(c);
    return true;
}

static bool cyrus_process_mechanisms(pn_transport_t *t, const char *mechs)
{
    cyrus_t *c = ctx_of(t);
    /* the server's offer, cut to the connector's saslMechanisms */
    char list[512];
    size_t len = 0;
    list[0] = '\0';
    for (const char *p = mechs; p && *p;) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n && pnx_sasl_is_mechanism_included(t, pn_bytes(n, p)) && len + n + 2 < sizeof list) {
            if (len)
                list[len++] = ' ';
            memcpy(list + len, p, n);
            len += n;
            list[len] = '\0';
        }
        p += n;
    }
    /* the TLS handshake is done by now (proton may have set the client up
     * before it): EXTERNAL needs its facts */
    set_external(c);
    const char *out = NULL, *chosen = NULL;
    unsigned outlen = 0;
    int r = len ? sasl_client_start(c->sc, list, NULL, &out, &outlen, &chosen) : SASL_NOMECH;
    if (r != SASL_OK && r != SASL_CONTINUE) {
        c->conn->refused_logged = true;
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               JN_IO_CONN_FMT " SASL to %s: no mechanism works (the server offers '%s'%s%s): %s",
               c->conn->id, c->conn->host, mechs ? mechs : "",
               c->conn->endpoint->cfg.sasl_mechanisms ? ", saslMechanisms " : "",
               c->conn->endpoint->cfg.sasl_mechanisms ? c->conn->endpoint->cfg.sasl_mechanisms : "",
               sasl_errdetail(c->sc));
        return false;
    }
    snprintf(c->mech, sizeof c->mech, "%s", chosen ? chosen : "");
    pnx_sasl_set_selected_mechanism(t, chosen);
    set_out(c, out, outlen);
    pnx_sasl_set_desired_state(t, SASL_POSTED_INIT);
    return true;
}

static void cyrus_process_challenge(pn_transport_t *t, const pn_bytes_t *recv)
{
    cyrus_t *c = ctx_of(t);
    const char *out = NULL;
    unsigned outlen = 0;
    int r = sasl_client_step(c->sc, recv->start, (unsigned)recv->size, NULL, &out, &outlen);
    if (r != SASL_OK && r != SASL_CONTINUE) {
        c->conn->refused_logged = true;
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING, JN_IO_CONN_FMT " SASL %s to %s failed: %s",
               c->conn->id, c->mech, c->conn->host, sasl_errdetail(c->sc));
        pnx_sasl_error(t, "SASL client step failed", "amqp:unauthorized-access");
        return;
    }
    set_out(c, out, outlen);
    pnx_sasl_set_desired_state(t, SASL_POSTED_RESPONSE);
}

static void cyrus_process_outcome(pn_transport_t *t, const pn_bytes_t *recv)
{
    cyrus_t *c = ctx_of(t);
    if (pn_sasl_outcome(pn_sasl(t)) != PN_SASL_OK) {
        c->conn->refused_logged = true;
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               JN_IO_CONN_FMT " SASL %s to %s: the server refused the credentials of '%s'",
               c->conn->id, c->mech, c->conn->host,
               pnx_sasl_get_username(t) ? pnx_sasl_get_username(t) : "");
        return;
    }
    if (recv && recv->size) {
        /* the server's final word (SCRAM's server signature): check it */
        const char *out = NULL;
        unsigned outlen = 0;
        int r = sasl_client_step(c->sc, recv->start, (unsigned)recv->size, NULL, &out, &outlen);
        if (r != SASL_OK) {
            c->conn->refused_logged = true;
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
                   JN_IO_CONN_FMT " SASL %s to %s: the server's proof is wrong: %s", c->conn->id,
                   c->mech, c->conn->host, sasl_errdetail(c->sc));
            pnx_sasl_error(t, "the server's SASL proof is wrong", "amqp:unauthorized-access");
            return;
        }
    }
    pnx_sasl_set_succeeded(t, pnx_sasl_get_username(t), NULL);
}

static void cyrus_prepare_write(pn_transport_t *t)
{
    (void)t;
}

static bool cyrus_can_encrypt(pn_transport_t *t)
{
    (void)t;
    return false;
}

static ssize_t cyrus_max_encrypt_size(pn_transport_t *t)
{
    (void)t;
    return 0;
}

static ssize_t cyrus_encode(pn_transport_t *t, pn_bytes_t in, pn_bytes_t *out)
{
    (void)t;
    (void)in;
    (void)out;
    return -1; /* never called: no security layer */
}

static const pnx_sasl_implementation cyrus_impl = {
    .free = cyrus_free,
    .list_mechanisms = cyrus_list_mechs,
    .init_server = cyrus_init_server,
    .init_client = cyrus_init_client,
    .prepare_write = cyrus_prepare_write,
    .process_init = cyrus_process_init,
    .process_response = cyrus_process_response,
    .process_mechanisms = cyrus_process_mechanisms,
    .process_challenge = cyrus_process_challenge,
    .process_outcome = cyrus_process_outcome,
    .can_encrypt = cyrus_can_encrypt,
    .max_encrypt_size = cyrus_max_encrypt_size,
    .encode = cyrus_encode,
    .decode = cyrus_encode,
};

int jn_io_sasl_attach(jn_io_conn_t *conn, pn_transport_t *t)
{
    cyrus_t *c = calloc(1, sizeof *c);
    if (!c)
        return JN_ENOMEM;
    c->conn = conn;
    c->t = t;
    pnx_sasl_set_implementation(t, &cyrus_impl, c);
    return 0;
}
