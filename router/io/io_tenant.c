/*
 * io_tenant.c — the tenant space of a connection accepted by a listener
 * with multiTenant (docs/design.md, "Tenant spaces").
 *
 * The I/O layer only names the vhost: the Open's hostname, handed to the
 * core with the connection (jn_conn_info_t.tenant_vhost), which applies
 * the space to the addresses the connection names (router/core/tenant.c).
 * An Open without a hostname gets no space (the client then names
 * addresses as on any other listener); a hostname that cannot name a
 * space (jn_core_tenant_vhost_usable) is refused here, so that no client
 * reaches addresses outside its space by its choice of hostname.
 * Once per connection, on the I/O thread that owns it.
 */
#include "io_private.h"

#include <string.h>

bool jn_io_tenant_IO(jn_io_conn_t *conn, pn_connection_t *pc, jn_conn_info_t *info)
{
    JN_ASSERT_IO(conn);
    info->tenant_vhost = NULL;
    if (!conn->incoming || !conn->endpoint->cfg.multi_tenant || conn->inter_router || conn->edge)
        return true;
    const char *host = pn_connection_remote_hostname(pc);
    if (!host || !host[0])
        return true;
    if (!jn_core_tenant_vhost_usable(host)) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               JN_IO_CONN_FMT " Connection refused: its hostname '%.*s' cannot name a tenant space",
               conn->id, JN_CORE_TENANT_VHOST_MAX, host);
        jn_io_conn_close_IO(conn, "amqp:invalid-field", "the hostname cannot name a tenant space");
        return false;
    }
    info->tenant_vhost = host;
    return true;
}
