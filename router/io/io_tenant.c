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
 * Once per connection, on the I/O thread that owns it; and, for a
 * connection in a space whose listener sends router annotations to its
 * clients (stripAnnotations no or in), per copy sent to it: an
 * x-opt-qd.to in its space is sent as the client names it.
 */
#include "io_private.h"

#include <string.h>

bool jn_io_tenant_IO(jn_io_conn_t *conn, const char *host, jn_conn_info_t *info)
{
    JN_ASSERT_IO(conn);
    info->tenant_vhost = NULL;
    if (!conn->incoming || !conn->endpoint->cfg.multi_tenant || conn->inter_router || conn->edge)
        return true;
    if (!host || !host[0])
        return true;
    if (!jn_core_tenant_vhost_usable(host)) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               JN_IO_CONN_FMT " Connection refused: its hostname '%.*s' cannot name a tenant space",
               conn->id, JN_CORE_TENANT_VHOST_MAX, host);
        return false;
    }
    info->tenant_vhost = host;
    conn->tenant = true;
    return true;
}

const jn_ra_t *jn_io_tenant_ra_IO(const jn_io_conn_t *conn, const jn_ra_t *ra, jn_ra_t *fresh)
{
    JN_ASSERT_IO(conn);
    const char *space = conn->core ? jn_core_conn_tenant(conn->core) : NULL;
    jn_iter_t to = ra->to;
    jn_iter_reset(&to);
    if (!space || !jn_iter_prefix(&to, space))
        return ra;
    *fresh = *ra;
    jn_iter_sub(&to, jn_iter_length(&to), &fresh->to);
    return fresh;
}
