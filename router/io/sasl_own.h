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

#endif /* JN_IO_SASL_OWN_H */
