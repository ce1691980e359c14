/*
 * io_plain.c — a connection's AMQP octets, whichever engine runs it:
 * proton's connection driver (its input through the frame screen) or
 * Junction's own engine's transport (conn->own, io_own_plain.c). The layers
 * that carry octets without a socket of their own — TLS (io_tls.c) and the
 * WebSocket bridge (io_bridge.c) — move them through these calls and so
 * serve both engines alike.
 *
 * Threads: the connection's loop thread (_IO).
 */
#include "io_own.h"
#include "io_private.h"

/* jn_io_plain_*: io_fns.h. */
size_t jn_io_plain_in_space_IO(jn_io_conn_t *conn, uint8_t **p)
{
    JN_ASSERT_IO(conn);
    if (conn->own)
        return jn_io_own_plain_in_space_IO(conn->own, p);
    pn_connection_driver_t *d = &conn->driver;
    pn_rwbytes_t buf = pn_connection_driver_read_buffer_sized(d, JN_IO_READ_SIZE);
    if (buf.size == 0)
        buf = pn_connection_driver_read_buffer(d);
    *p = (uint8_t *)buf.start;
    return buf.size;
}

bool jn_io_plain_in_IO(jn_io_conn_t *conn, uint8_t *p, size_t n)
{
    JN_ASSERT_IO(conn);
    if (conn->own)
        return jn_io_own_plain_in_IO(conn->own, p, n);
    return jn_io_conn_input_IO(conn, (char *)p, n);
}

bool jn_io_plain_in_closed(jn_io_conn_t *conn)
{
    if (conn->own)
        return jn_io_own_plain_in_closed(conn->own);
    return pn_connection_driver_read_closed(&conn->driver) || conn->screened_out;
}

/* The peer's close_notify, or its end of stream after the handshake. */
void jn_io_plain_in_end_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    if (conn->own)
        jn_io_own_plain_in_end_IO(conn->own);
    else
        pn_connection_driver_read_close(&conn->driver);
}

/* The next plaintext to encrypt (stage: cap octets of the caller's). */
size_t jn_io_plain_out_IO(jn_io_conn_t *conn, uint8_t *stage, size_t cap, const uint8_t **p)
{
    JN_ASSERT_IO(conn);
    if (conn->own)
        return jn_io_own_plain_out_IO(conn->own, stage, cap, p);
    pn_bytes_t buf = pn_connection_driver_write_buffer(&conn->driver);
    *p = (const uint8_t *)buf.start;
    return buf.size;
}

void jn_io_plain_out_done_IO(jn_io_conn_t *conn, size_t n)
{
    JN_ASSERT_IO(conn);
    if (conn->own)
        jn_io_own_plain_out_done_IO(conn->own, n);
    else
        pn_connection_driver_write_done(&conn->driver, n);
}

/* TLS failed: what the engine framed can no longer be sent. */
void jn_io_plain_out_drop_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    if (conn->own) {
        jn_io_own_plain_out_drop_IO(conn->own);
        return;
    }
    pn_connection_driver_t *d = &conn->driver;
    for (pn_bytes_t b; (b = pn_connection_driver_write_buffer(d)).size;)
        pn_connection_driver_write_done(d, b.size);
}

bool jn_io_plain_out_pending(jn_io_conn_t *conn)
{
    if (conn->own)
        return !jn_io_own_output_empty(conn->own);
    return pn_connection_driver_write_buffer(&conn->driver).size > 0;
}

bool jn_io_plain_out_closed(jn_io_conn_t *conn)
{
    if (conn->own)
        return jn_io_own_plain_out_closed(conn->own);
    return pn_connection_driver_write_closed(&conn->driver);
}
