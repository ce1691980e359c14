/*
 * io_trace.c — whether a connection's AMQP frames are traced (1.19's
 * protocol trace): written to the PROTOCOL module at trace level as
 * "[C<id>]:<frame>" by the own engine's tracers (io_own_plain.c), while
 * that level is enabled (a `log` entity, any time), unless management
 * chose otherwise for this connection (junction/log.h,
 * jn_log_conn_trace_set).
 *
 * Each pass over a connection asks jn_io_trace_check_IO (io_private.h)
 * whether either changed: two relaxed loads. Only then is conn->tracing
 * recomputed, so a router that traces nothing formats no frame. The
 * loop's thread of the connection.
 */
#include "io_private.h"

void jn_io_trace_update_IO(jn_io_conn_t *conn, unsigned gen, bool log_on)
{
    JN_ASSERT_IO(conn);
    if (gen != conn->trace_gen)
        conn->trace_choice = (int8_t)jn_log_conn_traced(conn->id);
    conn->trace_gen = gen;
    conn->trace_log = log_on;
    conn->tracing = conn->trace_choice < 0 ? log_on : conn->trace_choice == 1;
}
