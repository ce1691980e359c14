/*
 * tenant.c — tenant spaces (docs/design.md, "Tenant spaces").
 *
 * A connection accepted by a listener with multiTenant whose Open names a
 * host (the vhost) lives in the space "<vhost>/": every mobile address it
 * names — a link's terminus, an anonymous sender's message `to` (or
 * to-override) — is taken as "<vhost>/<address>", so its hash key is
 * "M<phase><vhost>/<address>" (docs/protocol.md, "Address keys"). Other
 * classes (_local/, _topo/, _edge/, dynamic reply addresses) are the
 * router's and stay as they are.
 *
 * The space is applied where an address enters the core, not on the hot
 * path of other connections:
 *   - a link's terminus address, once, when the core takes its attach
 *     (jn_tenant_attach_CT): link->address becomes the address in the
 *     space, so binding, configured phases (waypoints), auto-links, link
 *     routes (matching and the address given to the far end), the edge's
 *     uplink links and the to-override of its deliveries toward other
 *     routers all see the full address; the client is answered with the
 *     address it gave;
 *   - an anonymous sender's deliveries (jn_tenant_addr_for_delivery_CT,
 *     behind one branch on the connection's space in forward.c): looked up
 *     in the space, and the address kept on the delivery so that copies to
 *     another router carry it as x-opt-qd.to (delivery.c) and the next
 *     router, which knows nothing of this connection, routes them the same.
 *
 * Threads: jn_core_tenant_vhost_usable and jn_tenant_conn_set on any
 * thread (pure, or before the connection is published); the rest on the
 * core thread.
 */
#include "delivery.h"

#include <junction/iterator.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool jn_core_tenant_vhost_usable(const char *vhost)
{
    size_t n = strlen(vhost);
    if (n == 0 || n > JN_CORE_TENANT_VHOST_MAX)
        return false;
    char addr[JN_CORE_TENANT_VHOST_MAX + 3];
    snprintf(addr, sizeof addr, "%s/x", vhost);
    jn_iter_t it;
    jn_iter_init_string(&it, addr, JN_VIEW_ADDRESS_HASH);
    uint8_t key[JN_CORE_TENANT_VHOST_MAX + 8];
    size_t len = jn_iter_copy(&it, key, sizeof key);
    return len == n + 4 && key[0] == JN_ADDR_CLASS_MOBILE && key[1] == '0' &&
           memcmp(key + 2, addr, n + 2) == 0;
}

int jn_tenant_conn_set(jn_core_conn_t *conn, const char *vhost)
{
    if (!jn_core_tenant_vhost_usable(vhost))
        return JN_EINVAL;
    size_t n = strlen(vhost);
    conn->tenant = malloc(n + 2);
    if (!conn->tenant)
        return JN_ENOMEM;
    memcpy(conn->tenant, vhost, n);
    conn->tenant[n] = '/';
    conn->tenant[n + 1] = '\0';
    conn->tenant_len = n + 1;
    return 0;
}

/* The address in space (heap) of the address view it (a fresh
 * JN_VIEW_ADDRESS iterator) when its class is mobile; *out NULL when it is
 * not. Returns 0 or JN_ENOMEM. */
static int in_space(const char *space, size_t space_len, jn_iter_t *it, char **out)
{
    *out = NULL;
    jn_iter_t h = *it;
    jn_iter_set_view(&h, JN_VIEW_ADDRESS_HASH);
    if (jn_iter_octet(&h) != JN_ADDR_CLASS_MOBILE)
        return 0;
    jn_iter_set_view(it, JN_VIEW_ADDRESS);
    size_t n = jn_iter_length(it);
    char *s = malloc(space_len + n + 1);
    if (!s)
        return JN_ENOMEM;
    memcpy(s, space, space_len);
    jn_iter_copy(it, s + space_len, n);
    s[space_len + n] = '\0';
    *out = s;
    return 0;
}

int jn_tenant_attach_CT(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    JN_ASSERT_CT(conn->core);
    jn_iter_t it;
    jn_iter_init_string(&it, link->address, JN_VIEW_ADDRESS);
    char *spaced = NULL;
    if (in_space(conn->tenant, conn->tenant_len, &it, &spaced) != 0)
        return JN_ENOMEM;
    if (!spaced)
        return 0; /* not a mobile address: the router's, not the tenant's */
    link->client_address = link->address;
    link->address = spaced;
    return 0;
}

/* jn_hash_key_equal_fn over an iterator (ctx). */
static bool key_equals_iter(const uint8_t *key, size_t len, void *ctx)
{
    jn_iter_t k;
    jn_iter_init_bytes(&k, key, len, JN_VIEW_RAW);
    return jn_iter_equal_iter(&k, (const jn_iter_t *)ctx);
}

jn_addr_t *jn_tenant_addr_for_delivery_CT(jn_core_t *core, jn_delivery_t *dlv, bool honour)
{
    JN_ASSERT_CT(core);
    const jn_core_conn_t *conn = dlv->link->conn;
    const jn_ra_t *ra = honour ? jn_message_annotations(dlv->message) : NULL;
    jn_iter_t it;
    if (ra && ra->has_to)
        it = ra->to;
    else if (jn_message_to(dlv->message, &it) != 0)
        return NULL;
    if (!dlv->owns_to) { /* routed once, even if asked again */
        char *spaced = NULL;
        if (in_space(conn->tenant, conn->tenant_len, &it, &spaced) != 0) {
            JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_ERROR,
                   "[C%" PRIu64 "] Out of memory for a tenant's address: the delivery has no route",
                   conn->conn_id);
            return NULL;
        }
        dlv->to_override = spaced;
        dlv->owns_to = spaced != NULL;
    }
    if (dlv->owns_to)
        jn_iter_init_string(&it, dlv->to_override, JN_VIEW_ADDRESS_HASH);
    else
        jn_iter_set_view(&it, JN_VIEW_ADDRESS_HASH);
    if (ra && ra->phase > 0 && ra->phase <= 9)
        jn_iter_set_phase(&it, (char)('0' + ra->phase)); /* a waypoint's phase */
    return jn_hash_lookup_with(core->ct.addrs, jn_iter_hash(&it), key_equals_iter, &it);
}
