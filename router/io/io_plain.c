/*
 * io_plain.c — a connection's AMQP octets, in and out of Junction's own
 * engine's transport (conn->own, io_own_plain.c). The layers that carry
 * octets without a socket of their own — TLS (io_tls.c), the WebSocket
 * bridge (io_bridge.c) and the test hooks (io_test.c) — move them through
 * these calls. (While proton's engine ran beside the own one, until stage
 * 5 of issue 27, these calls served both.)
 *
 * Threads: the connection's loop thread (_IO).
 */
#include "io_own.h"
#include "io_private.h"

/* jn_io_plain_*: io_fns.h. */
size_t jn_io_plain_in_space_IO(jn_io_conn_t *conn, uint8_t **p)
{
    JN_ASSERT_IO(conn);
    return jn_io_own_plain_in_space_IO(conn->own, p);
}

bool jn_io_plain_in_IO(jn_io_conn_t *conn, uint8_t *p, size_t n)
{
    JN_ASSERT_IO(conn);
    return jn_io_own_plain_in_IO(conn->own, p, n);
}

bool jn_io_plain_in_closed(jn_io_conn_t *conn)
{
    return jn_io_own_plain_in_closed(conn->own);
}

/* The peer's close_notify, or its end of stream after the handshake. */
void jn_io_plain_in_end_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    jn_io_own_plain_in_end_IO(conn->own);
}

/* The next plaintext to encrypt (stage: cap octets of the caller's). */
size_t jn_io_plain_out_IO(jn_io_conn_t *conn, uint8_t *stage, size_t cap, const uint8_t **p)
{
    JN_ASSERT_IO(conn);
    return jn_io_own_plain_out_IO(conn->own, stage, cap, p);
}

void jn_io_plain_out_done_IO(jn_io_conn_t *conn, size_t n)
{
    JN_ASSERT_IO(conn);
    jn_io_own_plain_out_done_IO(conn->own, n);
}

/* TLS failed: what the engine framed can no longer be sent. */
void jn_io_plain_out_drop_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    jn_io_own_plain_out_drop_IO(conn->own);
}

bool jn_io_plain_out_pending(jn_io_conn_t *conn)
{
    return !jn_io_own_output_empty(conn->own);
}

bool jn_io_plain_out_closed(jn_io_conn_t *conn)
{
    return jn_io_own_plain_out_closed(conn->own);
}
