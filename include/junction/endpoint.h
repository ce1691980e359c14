/*
 * junction/endpoint.h — what a `listener` or `connector` entity asks of
 * the layers that listen and connect: plain descriptions, no functions of
 * their own (docs/design.md, "Layers").
 *
 * The entity path (router/mgmt) reads a listener or connector entity and
 * fills one of these; main.c's hooks hand it to the I/O layer
 * (jn_io_add_listener, jn_io_add_connector: junction/io.h) or, for a
 * listener with `http: yes`, to the HTTP layer (jn_http_add_listener:
 * junction/http.h). They sit here, in router/config's layer (below mgmt,
 * io and http), so that the agent's hooks can name them without the
 * agent's header including the layers above it. Strings are borrowed for
 * the call they are passed to (the receiving layer copies what it keeps).
 *
 * Threads: plain data, any thread.
 */
#ifndef JUNCTION_ENDPOINT_H
#define JUNCTION_ENDPOINT_H 1

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Role of a listener's or connector's connections (schema enum). */
typedef enum jn_conn_role {
    JN_ROLE_NORMAL = 0,
    JN_ROLE_INTER_ROUTER,
    JN_ROLE_ROUTE_CONTAINER,
    JN_ROLE_EDGE
} jn_conn_role_t;

/* stripAnnotations (docs/protocol.md, "Router annotations"). */
typedef enum jn_strip { JN_STRIP_BOTH = 0, JN_STRIP_IN, JN_STRIP_OUT, JN_STRIP_NO } jn_strip_t;

/* The attributes of a `listener` or `connector` entity that the I/O layer
 * uses. Strings are copied. Sizes in octets, times in seconds. Values as
 * configured (main passes the schema defaults the config parser filled in);
 * 0 means the default where said. JN_ROLE_NORMAL, JN_ROLE_ROUTE_CONTAINER
 * (a broker's connection: link routes and auto-links may name it) and
 * JN_ROLE_INTER_ROUTER are accepted (the latter only on an interior
 * router's core: main checks), and JN_ROLE_EDGE (an interior's edge
 * listener, an edge router's connector: docs/design.md "Edge routers"; the
 * config checks refuse an edge listener on an edge router). */
typedef struct jn_endpoint_config {
    const char *name;         /* entity name, for logs */
    const char *host;         /* listener: "" or NULL = all interfaces */
    const char *port;         /* number or service name ("amqp"); NULL = "amqp" */
    int family;               /* the host's addresses of this family only: AF_INET,
                               * AF_INET6, or 0 for any (socketAddressFamily) */
    uint32_t message_logging; /* jn_message_log_components of
                               * messageLoggingComponents: 0 none */
    jn_conn_role_t role;
    const char *sasl_mechanisms;   /* space-separated, NULL = all available */
    bool authenticate_peer;        /* listener: SASL required */
    uint32_t max_frame_size;       /* 0 = 16384; below 512 raised to 512 */
    uint32_t max_sessions;         /* 0 or > 32768 = 32768; channel-max = this - 1 */
    uint32_t max_session_frames;   /* incoming session window in frames; 0 = the
                                    * I/O layer's bound (io_private.h) */
    uint32_t idle_timeout_seconds; /* 0 = none; half is advertised, in ms */
    uint64_t max_message_size;     /* 0 = unlimited; larger: the link is detached
                                    * with amqp:link:message-size-exceeded */
    uint32_t link_capacity;        /* 0 = 250 */
    jn_strip_t strip_annotations;
    uint32_t cost; /* inter-router: link cost (0 = 1) */

    /* TLS (docs/design.md, "TLS and SASL"). ssl_profile: the name of an sslProfile
     * registered with jn_io_set_tls_profile; NULL or "" = plain AMQP. The
     * name is looked up for each new connection (so a replaced profile
     * serves the connections made after the replacement); a connection
     * whose profile is not registered is refused with a log line. */
    const char *ssl_profile;
    /* listener requireSsl (1.19, default no): yes = every connection must
     * speak TLS (a plain AMQP client is refused with a log line); no with
     * ssl_profile = TLS or plain AMQP, told by the client's first octet. */
    bool require_ssl;
    /* listener requireEncryption: a plain (not TLS) connection is refused;
     * with ssl_profile it acts as require_ssl. */
    bool require_encryption;
    /* connector verifyHostname (1.19, default yes: main passes it): the
     * server's certificate must name cfg->host (DNS name or IP address).
     * A connector always verifies the server's certificate chain, against
     * the profile's caCertFile (or the system's CAs when it has none). */
    bool verify_hostname;
    /* listener initialHandshakeTimeoutSeconds: a peer that has not sent
     * its AMQP open this many seconds after it connected (stuck in the TLS
     * or SASL handshake, or silent) is closed with a log line. 0 = none. */
    uint32_t handshake_timeout_seconds;

    /* SASL (router/io/sasl_cyrus.c). Connector saslUsername and
     * saslPassword (the password already resolved from 1.19's env:/file:/
     * pass: forms: jn_tls_password_resolve): the connector authenticates
     * with them, by the best mechanism both ends allow (SCRAM before PLAIN,
     * as Cyrus ranks them), within sasl_mechanisms when set. NULL = none. */
    const char *sasl_username;
    /* listener policyVhost: the vhost of this listener's clients under a
     * vhost policy, whatever their Open's hostname (NULL or "": the
     * hostname chooses; docs/design.md "Policy") */
    const char *policy_vhost;
    /* listener multiTenant: each client whose Open names a host lives in
     * that vhost's tenant space (jn_conn_info_t.tenant_vhost; a hostname
     * that cannot name one, jn_core_tenant_vhost_usable, is refused with
     * amqp:invalid-field); an Open without one: no space */
    bool multi_tenant;
    const char *sasl_password;
    /* listener failoverUrls (1.19; old name failoverList): comma-separated
     * "[scheme://]host[:port]" sent to each client in the Open's
     * properties as failover-server-list, a list of maps (scheme,
     * network-host, port: strings) that clients reconnect to. NULL or "":
     * none sent. */
    const char *failover_urls;
    /* listener or connector openProperties (1.19): an AMQP-encoded map
     * (open_properties_len octets; NULL: none) whose entries are added to
     * the properties of the Open the router sends on the endpoint's
     * connections, keys as symbols. The config checks have refused
     * reserved keys and the inter-router and edge roles. */
    const uint8_t *open_properties;
    size_t open_properties_len;

    /* listener saslPlugin: the authServicePlugin it names (router/io/
     * authsvc.c, docs/design.md "The auth service"): every client's SASL
     * exchange is relayed to the service at auth_service_host:
     * auth_service_port (TLS with the sslProfile auth_service_ssl_profile
     * when set; auth_service_realm, when set, is the hostname of the SASL
     * init sent to it), and the identity it reports is the user.
     * auth_service_host NULL: SASL is the router's own. */
    const char *auth_service_host;
    const char *auth_service_port;
    const char *auth_service_realm;
    const char *auth_service_ssl_profile;

    /* listener: no socket of its own; its connections are bridged ones
     * (jn_io_bridge_open: AMQP over WebSocket on an http listener). TLS is
     * the bridge owner's: the I/O layer never runs TLS on them; ssl_profile
     * names the profile whose uidFormat and uidNameMappingFile turn a
     * client certificate into a user, and require_ssl/require_encryption
     * refuse a bridged connection that comes without TLS. */
    bool bridged;
} jn_endpoint_config_t;

/* jn_endpoint_wants_client_cert: a listener with TLS asks its clients for a
 * certificate, and refuses one without a certificate its profile's
 * caCertFile trusts, when saslMechanisms names EXTERNAL (as 1.19), or when
 * authenticatePeer is yes and saslMechanisms is not set (TLS is then the
 * only way a peer can be authenticated). Otherwise no certificate is asked
 * for (1.19's anonymous peer). Any thread. Inline: the I/O layer's
 * listeners and the HTTP listener's settings (router/mgmt) follow the same
 * rule. */
static inline bool jn_endpoint_wants_client_cert(const jn_endpoint_config_t *cfg)
{
    if (!cfg->ssl_profile || !cfg->ssl_profile[0])
        return false;
    const char *m = cfg->sasl_mechanisms;
    if (m && m[0]) {
        /* EXTERNAL as a whole word of the list */
        for (const char *p = m; (p = strstr(p, "EXTERNAL")) != NULL; p += 8) {
            bool start = p == m || p[-1] == ' ' || p[-1] == ',';
            bool end = p[8] == '\0' || p[8] == ' ' || p[8] == ',';
            if (start && end)
                return true;
        }
        return false;
    }
    return cfg->authenticate_peer;
}

/* An http listener, from a `listener` entity with http: yes. Strings are
 * copied. */
typedef struct jn_endpoint_http_config {
    const char *name;     /* the entity's name (unique among http listeners) */
    const char *host;     /* NULL or "": every interface */
    int port;             /* 0: one the system picks (jn_http_listener_port) */
    const char *root_dir; /* httpRootDir: files served under /; NULL: none */
    bool metrics;         /* serve /metrics */
    bool healthz;         /* serve /healthz and /healthz/mesh */
    bool websockets;      /* AMQP over WebSocket, through the bridged io
                           * listener of the same name (junction/io.h) */
    /* TLS (the listener's sslProfile; NULL cert_file: plain HTTP): PEM
     * files and the private key's password (already resolved) */
    const char *cert_file, *key_file, *ca_file, *key_password, *ciphers;
    /* with TLS: every client must present a certificate that verifies
     * against ca_file (SASL EXTERNAL's identity on a WebSocket) */
    bool client_cert;
    /* with TLS: clients without TLS are served too, on the same port (1.19
     * with requireSsl: no). Never together with client_cert, which they
     * would get around. */
    bool plain_too;
    /* metricsPrometheusNames (Junction's own): /metrics names 1.19's eight
     * `_total` gauges without the suffix, as the Prometheus conventions
     * want; false (the default): 1.19's exact names */
    bool prometheus_names;
} jn_endpoint_http_config_t;

#endif /* JUNCTION_ENDPOINT_H */
