/*
 * io_own_plain.c — the byte side of a connection on the own engine that
 * has no socket of its own to read: TLS (io_tls.c) and the WebSocket bridge
 * (io_bridge.c) move its octets through io_plain.c, which calls here when
 * the connection is an own one (docs/engine.md, stage 2b(ii) round 2).
 *
 *   TLS: socket --recv--> [BIO pair] --SSL_read--> the transport's pooled
 *        buffers --> SASL and AMQP layers (read in place);
 *        the transport's output runs --gathered--> SSL_write --> send
 *   WebSocket: the bridge's input --copied--> the transport's pooled
 *        buffers; the output runs --gathered--> the bridge's output
 *
 * SSL_read writes straight into the transport's buffers, so the engine
 * reads frames where OpenSSL decrypted them: no copy beyond OpenSSL's. On
 * output the engine's runs (frame headers and performatives, and the
 * payload runs they reference) are gathered into one record's worth of
 * octets before SSL_write: a record per run would cost a record header
 * and a MAC per frame header.
 *
 * Threads: the connection's loop thread (_IO).
 */
#include "io_own.h"

#include <junction/time.h>

#include <string.h>
#include <sys/uio.h>

/* The time the engine's clock is given: the pass's (io_own.c reads the
 * socket at the start of a pass, and so does TLS). */
static uint64_t now_ms(void)
{
    jn_io_loop_t *loop = jn_io_loop_self_;
    return loop ? loop->pass_ns / JN_NS_PER_MS : jn_time_mono_ns() / JN_NS_PER_MS;
}

size_t jn_io_own_plain_in_space_IO(jn_io_own_t *own, uint8_t **p)
{
    JN_ASSERT_IO(own->conn);
    if (own->cut || jn_amqp_transport_finished(own->t))
        return 0;
    struct iovec iov[1];
    int k = jn_amqp_transport_read_space(own->t, iov, 1, JN_IO_READ_SIZE);
    if (k < 1) {
        own->cut = true; /* no buffer to read into */
        return 0;
    }
    *p = iov[0].iov_base;
    return iov[0].iov_len;
}

bool jn_io_own_plain_in_IO(jn_io_own_t *own, const uint8_t *p, size_t n)
{
    JN_ASSERT_IO(own->conn);
    if (JN_UNLIKELY(own->trace_in.on))
        jn_io_own_trace_in_IO(own, p, n);
    jn_amqp_transport_read_done(own->t, n);
    own->conn->octets_read += n;
    if (jn_amqp_transport_process(own->t, now_ms()) == JN_ENOMEM)
        own->cut = true;
    return !own->cut && !jn_amqp_transport_finished(own->t);
}

bool jn_io_own_plain_in_closed(const jn_io_own_t *own)
{
    return own->cut || jn_amqp_transport_finished(own->t);
}

void jn_io_own_plain_in_end_IO(jn_io_own_t *own)
{
    JN_ASSERT_IO(own->conn);
    own->cut = true; /* the peer ended its stream: the transport ends */
}

size_t jn_io_own_plain_out_IO(jn_io_own_t *own, uint8_t *stage, size_t cap, const uint8_t **p)
{
    JN_ASSERT_IO(own->conn);
    struct iovec iov[JN_IO_OWN_PLAIN_IOV];
    int k = jn_amqp_transport_output_iov(own->t, iov, JN_IO_OWN_PLAIN_IOV);
    if (k == 0)
        return 0;
    if (JN_UNLIKELY(own->trace_out.on))
        jn_io_own_trace_out_IO(own, iov, k);
    if (k == 1 || iov[0].iov_len >= cap) {
        /* one run, or a run as large as a record: sent where it lies */
        *p = iov[0].iov_base;
        return iov[0].iov_len;
    }
    size_t len = 0;
    for (int i = 0; i < k && len < cap; i++) {
        size_t take = iov[i].iov_len < cap - len ? iov[i].iov_len : cap - len;
        memcpy(stage + len, iov[i].iov_base, take);
        len += take;
    }
    *p = stage;
    return len;
}

void jn_io_own_plain_out_done_IO(jn_io_own_t *own, size_t n)
{
    JN_ASSERT_IO(own->conn);
    if (JN_UNLIKELY(own->trace_out_ahead))
        jn_io_own_trace_out_done_IO(own, n);
    jn_amqp_transport_output_done(own->t, n);
}

void jn_io_own_plain_out_drop_IO(jn_io_own_t *own)
{
    JN_ASSERT_IO(own->conn);
    struct iovec iov[JN_IO_OWN_PLAIN_IOV];
    for (int k; (k = jn_amqp_transport_output_iov(own->t, iov, JN_IO_OWN_PLAIN_IOV)) > 0;) {
        size_t n = 0;
        for (int i = 0; i < k; i++)
            n += iov[i].iov_len;
        jn_amqp_transport_output_done(own->t, n);
    }
}

bool jn_io_own_output_empty(jn_io_own_t *own)
{
    struct iovec iov[1];
    return jn_amqp_transport_output_iov(own->t, iov, 1) == 0;
}

bool jn_io_own_plain_out_closed(jn_io_own_t *own)
{
    return jn_amqp_transport_finished(own->t) && jn_io_own_output_empty(own);
}
