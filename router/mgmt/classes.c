/*
 * classes.c — the entity types the agent serves: how a type name in a
 * request is resolved (full, prefix-less or schema short name: reference
 * section 4 asks a new implementation to accept all three), each type's
 * column order for "all attributes" (reference section 7; the schema's
 * attribute order where section 7 gives none), its operations, and where
 * its rows come from (the agent's store, or the run-time rows of
 * runtime.c).
 */
#include "mgmt_private.h"

#include <string.h>

/* run-time rows (runtime.c) */
size_t jn_mgmt_rows_router(jn_mgmt_t *, const jn_mgmt_class_t *, size_t, size_t, jn_mgmt_row_fn,
                           void *);
size_t jn_mgmt_rows_conn(jn_mgmt_t *, const jn_mgmt_class_t *, size_t, size_t, jn_mgmt_row_fn,
                         void *);
size_t jn_mgmt_rows_link(jn_mgmt_t *, const jn_mgmt_class_t *, size_t, size_t, jn_mgmt_row_fn,
                         void *);
size_t jn_mgmt_rows_addr(jn_mgmt_t *, const jn_mgmt_class_t *, size_t, size_t, jn_mgmt_row_fn,
                         void *);
size_t jn_mgmt_rows_node(jn_mgmt_t *, const jn_mgmt_class_t *, size_t, size_t, jn_mgmt_row_fn,
                         void *);
size_t jn_mgmt_rows_alloc(jn_mgmt_t *, const jn_mgmt_class_t *, size_t, size_t, jn_mgmt_row_fn,
                          void *);
size_t jn_mgmt_rows_log(jn_mgmt_t *, const jn_mgmt_class_t *, size_t, size_t, jn_mgmt_row_fn,
                        void *);
size_t jn_mgmt_rows_self(jn_mgmt_t *, const jn_mgmt_class_t *, size_t, size_t, jn_mgmt_row_fn,
                         void *);

#define COLS(a) a, sizeof a / sizeof a[0]

static const char *const router_cols[] = {"name",
                                          "identity",
                                          "id",
                                          "type",
                                          "mode",
                                          "area",
                                          "version",
                                          "metadata",
                                          "addrCount",
                                          "linkCount",
                                          "nodeCount",
                                          "linkRouteCount",
                                          "autoLinkCount",
                                          "connectionCount",
                                          "presettledDeliveries",
                                          "droppedPresettledDeliveries",
                                          "acceptedDeliveries",
                                          "rejectedDeliveries",
                                          "releasedDeliveries",
                                          "modifiedDeliveries",
                                          "deliveriesDelayed1Sec",
                                          "deliveriesDelayed10Sec",
                                          "deliveriesStuck",
                                          "deliveriesIngress",
                                          "deliveriesEgress",
                                          "deliveriesTransit",
                                          "deliveriesIngressRouteContainer",
                                          "deliveriesEgressRouteContainer",
                                          "deliveriesRedirectedToFallback",
                                          "linksBlocked",
                                          "uptimeSeconds",
                                          "memoryUsage",
                                          "workerThreads"};

static const char *const conn_cols[] = {"name",
                                        "identity",
                                        "host",
                                        "role",
                                        "protocol",
                                        "dir",
                                        "container",
                                        "sasl",
                                        "isAuthenticated",
                                        "user",
                                        "isEncrypted",
                                        "sslProto",
                                        "sslCipher",
                                        "properties",
                                        "sslSsf",
                                        "tenant",
                                        "type",
                                        "ssl",
                                        "opened",
                                        "active",
                                        "adminStatus",
                                        "operStatus",
                                        "uptimeSeconds",
                                        "lastDlvSeconds",
                                        "enableProtocolTrace"};

static const char *const link_cols[] = {"name",
                                        "identity",
                                        "type",
                                        "linkName",
                                        "linkType",
                                        "linkDir",
                                        "owningAddr",
                                        "capacity",
                                        "peer",
                                        "undeliveredCount",
                                        "unsettledCount",
                                        "deliveryCount",
                                        "connectionId",
                                        "adminStatus",
                                        "operStatus",
                                        "presettledCount",
                                        "droppedPresettledCount",
                                        "acceptedCount",
                                        "rejectedCount",
                                        "releasedCount",
                                        "modifiedCount",
                                        "deliveriesDelayed1Sec",
                                        "deliveriesDelayed10Sec",
                                        "deliveriesStuck",
                                        "ingressHistogram",
                                        "priority",
                                        "settleRate",
                                        "creditAvailable",
                                        "zeroCreditSeconds"};

static const char *const addr_cols[] = {"name",
                                        "identity",
                                        "type",
                                        "key",
                                        "distribution",
                                        "inProcess",
                                        "subscriberCount",
                                        "remoteCount",
                                        "containerCount",
                                        "remoteHostRouters",
                                        "deliveriesIngress",
                                        "deliveriesEgress",
                                        "deliveriesTransit",
                                        "deliveriesToContainer",
                                        "deliveriesFromContainer",
                                        "deliveriesEgressRouteContainer",
                                        "deliveriesIngressRouteContainer",
                                        "transitOutstanding",
                                        "trackedDeliveries",
                                        "priority",
                                        "deliveriesRedirectedToFallback"};

static const char *const cfg_addr_cols[] = {
    "name",         "identity",    "type",    "prefix",   "distribution", "waypoint",
    "ingressPhase", "egressPhase", "pattern", "priority", "fallback",
    "multicastBackpressure" /* Junction's own (docs/multicast.md) */};

static const char *const link_route_cols[] = {"name",
                                              "identity",
                                              "type",
                                              "prefix",
                                              "distribution",
                                              "connection",
                                              "containerId",
                                              "direction",
                                              "dir",
                                              "operStatus",
                                              "pattern",
                                              "addExternalPrefix",
                                              "delExternalPrefix"};

static const char *const auto_link_cols[] = {"name",
                                             "identity",
                                             "type",
                                             "address",
                                             "addr",
                                             "direction",
                                             "dir",
                                             "phase",
                                             "connection",
                                             "containerId",
                                             "externalAddress",
                                             "externalAddr",
                                             "linkRef",
                                             "operStatus",
                                             "lastError",
                                             "fallback"};

/* QUERY-all order: configuration first, then run-time state. */
static const jn_mgmt_class_t classes[] = {
    {"router", COLS(router_cols), JN_OP_READ, false, jn_mgmt_rows_router},
    {"listener", NULL, 0, JN_OP_CREATE | JN_OP_READ | JN_OP_DELETE, true, jn_mgmt_store_rows},
    {"connector", NULL, 0, JN_OP_CREATE | JN_OP_READ | JN_OP_DELETE, true, jn_mgmt_store_rows},
    {"sslProfile", NULL, 0, JN_OP_CREATE | JN_OP_READ | JN_OP_DELETE, true, jn_mgmt_store_rows},
    {"log", NULL, 0, JN_OP_READ | JN_OP_UPDATE, false, jn_mgmt_rows_log},
    {"router.config.address", COLS(cfg_addr_cols), JN_OP_CREATE | JN_OP_READ | JN_OP_DELETE, true,
     jn_mgmt_store_rows},
    {"router.config.linkRoute", COLS(link_route_cols), JN_OP_CREATE | JN_OP_READ | JN_OP_DELETE,
     true, jn_mgmt_store_rows},
    {"router.config.autoLink", COLS(auto_link_cols), JN_OP_CREATE | JN_OP_READ | JN_OP_DELETE, true,
     jn_mgmt_store_rows},
    {"connection", COLS(conn_cols), JN_OP_READ | JN_OP_UPDATE, false, jn_mgmt_rows_conn},
    {"router.link", COLS(link_cols), JN_OP_READ, false, jn_mgmt_rows_link},
    {"router.address", COLS(addr_cols), JN_OP_READ, false, jn_mgmt_rows_addr},
    {"router.node", NULL, 0, JN_OP_READ, false, jn_mgmt_rows_node},
    {"allocator", NULL, 0, JN_OP_READ, false, jn_mgmt_rows_alloc},
    {"management", NULL, 0, JN_OP_READ, false, jn_mgmt_rows_self},
};

size_t jn_mgmt_class_count(void)
{
    return sizeof classes / sizeof classes[0];
}

const jn_mgmt_class_t *jn_mgmt_class_at(size_t i)
{
    return i < jn_mgmt_class_count() ? &classes[i] : NULL;
}

const jn_schema_type_t *jn_mgmt_class_type(const jn_mgmt_class_t *cls)
{
    return jn_schema_type_find(cls->name);
}

size_t jn_mgmt_class_ncols(const jn_mgmt_class_t *cls)
{
    return cls->columns ? cls->n_columns : jn_schema_type_attr_count(jn_mgmt_class_type(cls));
}

const char *jn_mgmt_class_col(const jn_mgmt_class_t *cls, size_t i)
{
    if (cls->columns)
        return i < cls->n_columns ? cls->columns[i] : NULL;
    const jn_schema_attr_t *a = jn_schema_type_attr_at(jn_mgmt_class_type(cls), i);
    return a ? jn_schema_attr_name(a) : NULL;
}

int jn_mgmt_class_col_index(const jn_mgmt_class_t *cls, const char *name)
{
    if (cls->columns) {
        for (size_t i = 0; i < cls->n_columns; i++)
            if (strcmp(cls->columns[i], name) == 0)
                return (int)i;
        return -1;
    }
    /* The type is looked up once, not once per column: a QUERY maps every
     * requested name through here. */
    const jn_schema_type_t *t = jn_mgmt_class_type(cls);
    size_t n = jn_schema_type_attr_count(t);
    for (size_t i = 0; i < n; i++)
        if (strcmp(jn_schema_attr_name(jn_schema_type_attr_at(t, i)), name) == 0)
            return (int)i;
    return -1;
}

const jn_mgmt_class_t *jn_mgmt_class_find(const char *name, const jn_schema_type_t **schema_type)
{
    const jn_schema_type_t *t = name && name[0] ? jn_schema_type_find(name) : NULL;
    if (schema_type)
        *schema_type = t;
    if (!t)
        return NULL;
    for (size_t i = 0; i < jn_mgmt_class_count(); i++)
        if (strcmp(classes[i].name, jn_schema_type_name(t)) == 0)
            return &classes[i];
    return NULL;
}
