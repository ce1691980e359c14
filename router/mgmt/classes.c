/*
 * classes.c — the entity types the agent serves: how a type name in a
 * request is resolved (full, prefix-less or schema short name: docs/protocol.md
 * "Management requests" accepts all three) and where its rows come from
 * (the agent's store, or the run-time rows of runtime.c). Its operations
 * are not here: they are its schema type's "operations"
 * (router/config/schema.json), which GET-OPERATIONS lists and the agent
 * (agent.c) holds every request to. Each type's column order for "all
 * attributes" (1.19's order; the attribute order where 1.19 has none of
 * its own) is the schema's: router/config/schema.json, read through
 * junction/schema.h.
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
size_t jn_mgmt_rows_log_stats(jn_mgmt_t *, const jn_mgmt_class_t *, size_t, size_t, jn_mgmt_row_fn,
                              void *);
size_t jn_mgmt_rows_self(jn_mgmt_t *, const jn_mgmt_class_t *, size_t, size_t, jn_mgmt_row_fn,
                         void *);
size_t jn_mgmt_rows_policy(jn_mgmt_t *, const jn_mgmt_class_t *, size_t, size_t, jn_mgmt_row_fn,
                           void *);
size_t jn_mgmt_rows_vhost(jn_mgmt_t *, const jn_mgmt_class_t *, size_t, size_t, jn_mgmt_row_fn,
                          void *);
size_t jn_mgmt_rows_vhost_stats(jn_mgmt_t *, const jn_mgmt_class_t *, size_t, size_t,
                                jn_mgmt_row_fn, void *);

/* QUERY-all order: configuration first, then run-time state. The columns
 * of each are its schema type's (jn_schema_type_column_*). */
static const jn_mgmt_class_t classes[] = {
    {"router", false, jn_mgmt_rows_router, false},
    {"listener", true, jn_mgmt_store_rows, false},
    {"connector", true, jn_mgmt_store_rows, false},
    {"sslProfile", true, jn_mgmt_store_rows, false},
    {"authServicePlugin", true, jn_mgmt_store_rows, false},
    {"log", false, jn_mgmt_rows_log, false},
    {"router.config.address", true, jn_mgmt_store_rows, false},
    {"router.config.linkRoute", true, jn_mgmt_store_rows, false},
    {"router.config.autoLink", true, jn_mgmt_store_rows, false},
    {"router.config.exchange", true, jn_mgmt_store_rows, false},
    {"router.config.binding", true, jn_mgmt_store_rows, false},
    {"router.connection.linkRoute", false, jn_mgmt_rows_conn_link_routes, false},
    {"connection", false, jn_mgmt_rows_conn, false},
    {"router.link", false, jn_mgmt_rows_link, false},
    {"router.address", false, jn_mgmt_rows_addr, false},
    {"router.node", false, jn_mgmt_rows_node, false},
    {"allocator", false, jn_mgmt_rows_alloc, false},
    {"logStats", false, jn_mgmt_rows_log_stats, false},
    {"management", false, jn_mgmt_rows_self, false},
    {"policy", false, jn_mgmt_rows_policy, false},
    {"vhost", false, jn_mgmt_rows_vhost, false},
    {"vhostStats", false, jn_mgmt_rows_vhost_stats, false},
    /* 1.19's test entity: kept, read, updated, deleted, and CALLME echoes
     * its request (agent.c); it answers only the attributes it holds */
    {"dummy", true, jn_mgmt_store_rows, true},
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
    return jn_schema_type_column_count(jn_mgmt_class_type(cls));
}

const char *jn_mgmt_class_col(const jn_mgmt_class_t *cls, size_t i)
{
    return jn_schema_type_column_name(jn_mgmt_class_type(cls), i);
}

int jn_mgmt_class_col_index(const jn_mgmt_class_t *cls, const char *name)
{
    int i = jn_schema_type_column_find(jn_mgmt_class_type(cls), name);
    return i >= 0 ? i : -1;
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
