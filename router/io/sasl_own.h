/*
 * sasl_own.h — Cyrus SASL as the mechanism backend of the own engine's SASL
 * layer (junction/amqp_sasl.h; docs/engine.md, stage 4). Shared by
 * sasl_own.c and the own path (io_own.c) that hands it to a connection.
 */
#ifndef JN_IO_SASL_OWN_H
#define JN_IO_SASL_OWN_H 1

#include "io_private.h"

#include <junction/amqp_transport.h>

/* jn_io_own_sasl_attach: give t's SASL layer the mechanisms conn's listener
 * offers through Cyrus (jn_endpoint_uses_sasl_plugin(cfg, true) must be
 * true: Cyrus is configured, and the listener authenticates or names a
 * mechanism beyond ANONYMOUS), checked against the sasldb or whatever
 * Cyrus's config file names, and require SASL when the listener has
 * authenticatePeer. A Cyrus server connection is made now (conn borrowed:
 * it outlives t). Returns 0, JN_ENOMEM, or JN_EINVAL when Cyrus refuses a
 * server connection (logged). The thread that accepts conn, before it is
 * started (jn_io_own_attach). */
int jn_io_own_sasl_attach(jn_io_conn_t *conn, jn_amqp_transport_t *t);

/* jn_io_own_sasl_builtin: give t's SASL layer the engine's built-in
 * ANONYMOUS as 1.19 offers it for conn's listener when that does
 * not use Cyrus (jn_endpoint_uses_sasl_plugin(cfg, true) false):
 * ANONYMOUS when saslMechanisms is unset or names it as a space-separated
 * word in any case, else no mechanism at all (a sasl-init gets outcome
 * auth, 5.3.3.6); SASL required when the listener has authenticatePeer
 * (a peer whose first header is AMQP's is refused). Anything but the
 * default (ANONYMOUS, not required) is logged. conn borrowed. Returns 0 or
 * JN_EINVAL (t already started: a bug). The thread that accepts conn,
 * before it is started (jn_io_own_attach). AMQP 1.0 part 5.3.3.1. */
int jn_io_own_sasl_builtin(jn_io_conn_t *conn, jn_amqp_transport_t *t);

/* jn_io_own_sasl_client: Cyrus's client as the SASL client end's backend
 * for conn, a connection its connector makes (Cyrus configured,
 * jn_endpoint_uses_sasl_plugin(cfg, false) true): *ops and *ctx (ctx owned by whoever takes it: the
 * transport, through jn_amqp_sasl_client_config_t) choose among the
 * server's offer cut to the connector's saslMechanisms and answer with its
 * saslUsername and saslPassword (read from conn's endpoint: conn borrowed,
 * it outlives the transport). Returns 0, JN_ENOMEM, or JN_EINVAL when Cyrus
 * refuses a client connection (logged). The connector thread, before conn
 * is started (jn_io_own_attach_client). */
int jn_io_own_sasl_client(jn_io_conn_t *conn, const jn_amqp_sasl_client_mech_ops_t **ops,
                          void **ctx);

/* jn_io_sasl_offer_cut: write into out (cap octets, always NUL-terminated)
 * the mechanisms of list (space-separated, borrowed) that a listener's
 * saslMechanisms conf names (spaces or commas, any case; NULL or empty:
 * every one), in list's order and space-separated: what the listener
 * offers. A mechanism that does not fit is left out. Any thread. AMQP 1.0
 * part 5.3.3.1 (sasl-mechanisms). */
void jn_io_sasl_offer_cut(const char *conf, const char *list, char *out, size_t cap);

/* authsvc.c: the auth-service relay behind the own engine's SASL layer
 * (docs/engine.md, stage 4): jn_io_authsvc_own_attach at accept, before
 * the connection is started; jn_io_authsvc_own_pass_IO in each of the
 * client's passes while conn->relay is set. Contracts in authsvc_own.c. */
int jn_io_authsvc_own_attach(jn_io_conn_t *conn, jn_amqp_transport_t *t);
int jn_io_authsvc_own_pass_IO(jn_io_conn_t *client, jn_amqp_transport_t *t, uint64_t now);

/* authsvc_own.c: the connection to an auth service on the own engine's
 * client end (docs/engine.md, stage 4e): its SASL client end's config
 * at its start (jn_io_authsvc_own_svc_sasl), and in its passes while
 * svc->relay is set the client's init or response sent
 * (jn_io_authsvc_own_svc_pass_IO), the service's Open read
 * (jn_io_authsvc_own_svc_open_IO, the identity in its properties by
 * jn_io_authsvc_own_identity) and its end reported
 * (jn_io_authsvc_own_svc_closed_IO). Contracts there. */
int jn_io_authsvc_own_identity(const jn_iter_t *props, char *who, size_t cap);
void jn_io_authsvc_own_svc_sasl(jn_io_conn_t *svc, jn_amqp_sasl_client_config_t *sc);
int jn_io_authsvc_own_svc_pass_IO(jn_io_conn_t *svc, jn_amqp_transport_t *t, uint64_t now);
void jn_io_authsvc_own_svc_open_IO(jn_io_conn_t *svc, const jn_iter_t *properties);
void jn_io_authsvc_own_svc_closed_IO(jn_io_conn_t *svc, const jn_amqp_fault_t *f,
                                     const char *io_error);

#endif /* JN_IO_SASL_OWN_H */
