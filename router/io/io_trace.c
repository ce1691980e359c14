/*
 * io_trace.c — the AMQP frame trace of a connection (1.19's protocol
 * trace): proton's frame log of the connection's transport written to the
 * PROTOCOL module at trace level as "[C<id>]:<frame>", while that level is
 * enabled (a `log` entity, any time), unless management chose otherwise
 * for this connection (junction/log.h, jn_log_conn_trace_set).
 *
 * Each pass over a connection asks jn_io_trace_check_IO (io_private.h)
 * whether either changed: two relaxed loads. Only then is proton's logger
 * of the transport switched, so a router that traces nothing formats no
 * frame. The loop's thread of the connection.
 */
#include "io_private.h"

#include <inttypes.h>
#include <proton/logger.h>

/* proton's log of conn's transport (the loop's thread, inside proton) */
static void trace_sink(intptr_t ctx, pn_log_subsystem_t subsystem, pn_log_level_t severity,
                       const char *message)
{
    (void)subsystem;
    const jn_io_conn_t *conn = (const jn_io_conn_t *)ctx;
    if (severity & PN_LEVEL_FRAME) {
        if (conn->tracing) /* also when asked for this connection alone */
            jn_log_write(JN_LOG_MOD_PROTOCOL, JN_LOG_TRACE, __FILE__, __LINE__,
                         "[C%" PRIu64 "]:FRAME: %s", conn->id, message);
        return;
    }
    JN_LOG(JN_LOG_MOD_PROTOCOL, severity & PN_LEVEL_CRITICAL ? JN_LOG_CRITICAL : JN_LOG_ERROR,
           "[C%" PRIu64 "]:%s", conn->id, message);
}

void jn_io_trace_update_IO(jn_io_conn_t *conn, unsigned gen, bool log_on)
{
    JN_ASSERT_IO(conn);
    if (gen != conn->trace_gen)
        conn->trace_choice = (int8_t)jn_log_conn_traced(conn->id);
    conn->trace_gen = gen;
    conn->trace_log = log_on;
    bool want = conn->trace_choice < 0 ? log_on : conn->trace_choice == 1;
    pn_transport_t *t = conn->driver.transport;
    if (want == conn->tracing || !t)
        return;
    pn_logger_t *logger = pn_transport_logger(t);
    if (want) {
        pn_logger_set_log_sink(logger, trace_sink, (intptr_t)conn);
        pn_logger_set_mask(logger, PN_SUBSYSTEM_AMQP, PN_LEVEL_FRAME);
    } else {
        pn_logger_reset_mask(logger, PN_SUBSYSTEM_AMQP, PN_LEVEL_FRAME);
    }
    conn->tracing = want;
}
