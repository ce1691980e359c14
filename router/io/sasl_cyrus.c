/*
 * sasl_cyrus.c — Cyrus SASL (Debian's libsasl2) set up for the router:
 * its start (jn_sasl_init), the mechanisms its server side offers, the
 * check of a listener's SASL settings, and which endpoints use it
 * (jn_endpoint_uses_sasl_plugin). The SASL exchanges themselves are the
 * own engine's, its server and client ends backed by Cyrus in
 * sasl_own.c. The mechanisms are Cyrus's (PLAIN, SCRAM-SHA-1/256,
 * DIGEST-MD5, ANONYMOUS, EXTERNAL, ...): Cyrus computes the challenges and checks the
 * credentials (against the sasldb that the Cyrus config file names).
 *
 * Configured as qdrouterd 1.19: router saslConfigDir (where Cyrus looks
 * for its config file) and saslConfigName (the file is NAME.conf; default
 * "qdrouterd"), read once by jn_sasl_init at start-up.
 *
 * Which endpoints use it (jn_endpoint_uses_sasl_plugin): a listener with
 * authenticatePeer, an sslProfile, or a mechanism other than ANONYMOUS; a
 * connector with saslUsername, an sslProfile, or a mechanism other than
 * ANONYMOUS. The rest (anonymous plain connections: tests, benchmarks,
 * most clients) keep the engine's built-in ANONYMOUS, which costs nothing.
 *
 * Threads: jn_sasl_init on the main thread before the I/O threads start;
 * the rest on any thread (Cyrus's global state is read-only after init).
 */
#include "io_private.h"

#include <sasl/sasl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Cyrus stores every callback as int (*)(void) and calls it with its real
 * type (sasl.h): the cast goes through void (*)(void), which C allows to
 * convert to any function pointer type, and back at Cyrus's call. */
#define SASL_CB_FN(fn) ((int (*)(void))(void (*)(void))(fn))

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
                continue; /* the engine's built-in one */
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
