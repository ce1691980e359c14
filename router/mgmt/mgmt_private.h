/*
 * mgmt_private.h — the management agent's internals, shared by the files of
 * router/mgmt and nothing else:
 *
 *   agent.c     the agent's life, the request entry point, dispatch by
 *               operation, READ/UPDATE/DELETE;
 *   request.c   decoding a request (properties, application properties,
 *               body) into a jn_mgmt_request_t;
 *   reply.c     composing the reply message (header, properties,
 *               application properties, amqp-value body) and values;
 *   classes.c   the entity classes: type-name resolution, column lists
 *               (from the schema), where each class's rows come from;
 *   runtime.c   the run-time rows (router, connection, link, address, ...);
 *   store.c     configured entities kept by the agent (from the file and
 *               CREATE), their validation and the actions they take;
 *   query.c     QUERY (one type or all, attribute selection, paging);
 *   node_ops.c  GET-TYPES, GET-ATTRIBUTES, GET-OPERATIONS, GET-SCHEMA,
 *               GET-MGMT-NODES, GET-LOG;
 *   json.c      GET-JSON-SCHEMA.
 *
 * Rows. Every entity, stored or read from the core, is shown as a row: an
 * array of jn_mv_t, one per column of its class, in the class's
 * all-attribute order (1.19's). The columns are the schema's
 * (router/config/schema.json "columns", or the type's attributes), and
 * code fills a row by the names the build generates for their positions
 * (schema_ids.h: row[JN_COL_ROUTER_ADDR_COUNT], JN_COLS_ROUTER columns).
 * A class produces rows through a callback; strings in a row are borrowed
 * for the callback only.
 *
 * Threads: everything here runs on the core thread (or the main thread
 * before the core starts).
 */
#ifndef JN_MGMT_PRIVATE_H
#define JN_MGMT_PRIVATE_H 1

#include <junction/decoder.h>
#include <junction/encoder.h>
#include <junction/log.h>
#include <junction/mgmt.h>
#include <junction/schema.h>

#include <inttypes.h>

#include "schema_ids.h" /* generated from router/config/schema.json */

/* ---- values ------------------------------------------------------------- */

/* How a value is encoded (the AMQP type 1.19 uses for it). */
typedef enum jn_mv_kind {
    JN_MV_NULL = 0,
    JN_MV_BOOL,
    JN_MV_INT,     /* int */
    JN_MV_LONG,    /* long */
    JN_MV_UINT,    /* uint */
    JN_MV_ULONG,   /* ulong */
    JN_MV_STR,     /* string, len octets at s */
    JN_MV_RAW,     /* already encoded, len octets at raw (maps, lists) */
    JN_MV_STRLIST, /* list of len strings at list */
    JN_MV_EMPTY_MAP,
    JN_MV_EMPTY_LIST
} jn_mv_kind_t;

/* One value. Strings borrowed (rows) or owned (stored entities: see
 * store.c). */
typedef struct jn_mv {
    uint8_t kind; /* jn_mv_kind_t */
    size_t len;
    union {
        bool b;
        int64_t i;
        uint64_t u;
        const char *s;
        const uint8_t *raw;
        const char *const *list;
    } v;
} jn_mv_t;

static inline jn_mv_t jn_mv_null(void)
{
    jn_mv_t m = {.kind = JN_MV_NULL};
    return m;
}
static inline jn_mv_t jn_mv_bool(bool b)
{
    jn_mv_t m = {.kind = JN_MV_BOOL, .v.b = b};
    return m;
}
static inline jn_mv_t jn_mv_int(uint8_t kind, int64_t i)
{
    jn_mv_t m = {.kind = kind, .v.i = i};
    return m;
}
static inline jn_mv_t jn_mv_ulong(uint64_t u)
{
    jn_mv_t m = {.kind = JN_MV_ULONG, .v.u = u};
    return m;
}
static inline jn_mv_t jn_mv_uint(uint64_t u)
{
    jn_mv_t m = {.kind = JN_MV_UINT, .v.u = u};
    return m;
}
/* a C string (NULL: null) */
jn_mv_t jn_mv_str(const char *s);
static inline jn_mv_t jn_mv_strn(const void *s, size_t len)
{
    jn_mv_t m = {.kind = JN_MV_STR, .len = len, .v.s = (const char *)s};
    return m;
}

/* jn_mv_encode: write v with its kind's AMQP type. */
void jn_mv_encode(jn_encoder_t *e, const jn_mv_t *v);

/* jn_mv_equal_str: v is a string equal to s. */
bool jn_mv_equal_str(const jn_mv_t *v, const char *s);

/* ---- requests and replies ------------------------------------------------ */

/* Status codes (docs/protocol.md, "Management requests"). */
enum {
    JN_MGMT_OK = 200,
    JN_MGMT_CREATED = 201,
    JN_MGMT_NO_CONTENT = 204,
    JN_MGMT_BAD_REQUEST = 400,
    JN_MGMT_FORBIDDEN = 403,
    JN_MGMT_NOT_FOUND = 404,
    JN_MGMT_INTERNAL = 500,
    JN_MGMT_NOT_IMPLEMENTED = 501
};

#define JN_MGMT_STR_MAX 1024 /* longest name/type/identity accepted */

/* A decoded request. Strings are NUL-terminated copies ("" when absent:
 * has_* says). Fields are views into the request message, valid while it
 * is referenced. */
typedef struct jn_mgmt_request {
    char operation[32];      /* upper case (the Python agent ignores case) */
    char operation_sent[32]; /* as the request spelled it */
    char type[JN_MGMT_STR_MAX];
    char name[JN_MGMT_STR_MAX];
    char identity[JN_MGMT_STR_MAX];
    char entity_type[JN_MGMT_STR_MAX];
    bool has_type, has_name, has_identity, has_entity_type;
    bool has_offset, has_count, has_limit, has_indent;
    uint64_t offset, count;
    int64_t limit;
    uint64_t indent; /* GET-JSON-SCHEMA (at most 16) */
    /* reply addressing */
    char reply_to[JN_MGMT_STR_MAX];
    bool has_reply_to;
    jn_iter_t correlation; /* raw encoding of correlation-id or message-id */
    bool has_correlation;
    jn_iter_t properties; /* raw encoding of the application-properties map */
    /* the amqp-value body's value (absent: has_body false) */
    bool has_body;
    jn_field_t body;
    jn_decoder_t body_dec; /* the decoder body came from (to enter it) */
} jn_mgmt_request_t;

/* The answer being built: status, description and the body (amqp-value
 * value, written by the operation). An error status replaces the body by
 * an empty map. */
typedef struct jn_mgmt_reply {
    int status;
    char description[512];
    jn_encoder_t body;
} jn_mgmt_reply_t;

/* jn_mgmt_request_parse: decode msg into *req. Returns 0, or JN_EPROTO
 * with reply->status 400 and a description set (req->reply_to and
 * correlation are filled as far as they could be read, so the error can
 * still be answered). */
int jn_mgmt_request_parse(jn_message_t *msg, jn_mgmt_request_t *req, jn_mgmt_reply_t *reply);

/* jn_mgmt_request_parse_head: decode only msg's properties section into
 * *req (reply-to, correlation-id; everything else zero), so a request the
 * agent will not decode (too large) can still be answered. Returns 0, or
 * JN_EPROTO with reply->status 400 and a description set. Core thread. */
int jn_mgmt_request_parse_head(jn_message_t *msg, jn_mgmt_request_t *req,
                               jn_mgmt_reply_t *reply);

/* jn_mgmt_reply_set: status and printf-style description. Returns status. */
int jn_mgmt_reply_set(jn_mgmt_reply_t *reply, int status, const char *fmt, ...) JN_PRINTF(3, 4);

/* jn_mgmt_reply_compose: the reply message for req (to = reply-to,
 * correlation-id copied), or NULL on ENOMEM. */
jn_message_t *jn_mgmt_reply_compose(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply);

/* jn_mgmt_field_string: copy a string/symbol field into buf (cap octets,
 * NUL-terminated). Returns 0, JN_EINVAL (not a string), JN_ERANGE (too
 * long). */
int jn_mgmt_field_string(const jn_field_t *f, char *buf, size_t cap);

/* ---- classes -------------------------------------------------------------- */

/* A row callback: row has one value per column of the class. Returns false
 * to stop. */
typedef bool (*jn_mgmt_row_fn)(void *ctx, const jn_mv_t *row);

typedef struct jn_mgmt_class jn_mgmt_class_t;
struct jn_mgmt_class {
    const char *name; /* prefix-less type name, e.g. "connection"; its
                       * operations are its schema type's (schema.json's
                       * "operations", jn_schema_type_has_op), no others */
    bool stored;      /* entities kept by the agent (store.c) */
    /* rows [offset, offset + max) to fn; returns the total number of rows */
    size_t (*rows)(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                   jn_mgmt_row_fn fn, void *ctx);
    bool held_only; /* an entity's map (READ, CREATE, UPDATE) has only the
                     * attributes it holds, no nulls (1.19's Python agent's
                     * entities without defaults) */
};

/* Column list of a class: its schema type's management columns
 * (jn_schema_type_column_*; schema_ids.h names their positions). */
size_t jn_mgmt_class_ncols(const jn_mgmt_class_t *cls);
const char *jn_mgmt_class_col(const jn_mgmt_class_t *cls, size_t i);
/* index of column name, or -1 */
int jn_mgmt_class_col_index(const jn_mgmt_class_t *cls, const char *name);
/* the class's schema type (never NULL for a class in the table) */
const jn_schema_type_t *jn_mgmt_class_type(const jn_mgmt_class_t *cls);

/* jn_mgmt_class_find: the class served for a type name (full, prefix-less
 * or short). *schema_type is set to the schema type (NULL if unknown).
 * Returns NULL when the type is unknown or not served. */
const jn_mgmt_class_t *jn_mgmt_class_find(const char *name, const jn_schema_type_t **schema_type);

/* The classes in QUERY-all order. */
size_t jn_mgmt_class_count(void);
const jn_mgmt_class_t *jn_mgmt_class_at(size_t i);

/* ---- the agent ------------------------------------------------------------- */

typedef struct jn_mgmt_entity jn_mgmt_entity_t;

struct jn_mgmt {
    jn_mgmt_config_t cfg;       /* strings owned */
    int64_t start_time;         /* seconds since the epoch */
    jn_mgmt_entity_t *entities; /* stored entities, in creation order */
    jn_mgmt_entity_t *vhosts;   /* the vhosts: read at start (jn_mgmt_load_vhosts_CT), then
                                 * CREATE/UPDATE/DELETE (vhost_ops.c) */
    jn_mgmt_entity_t *tail;
    uint64_t next_id;    /* decimal identities of router.config.* */
    uint64_t next_dummy; /* identities of dummy entities ("dummy/<n>") */
    jn_config_t *file;   /* the config file last loaded or reloaded (owned; NULL: none) */
    uint32_t log_failed; /* log modules whose section a reload could not apply (bits) */
};

/* ---- values.c: owned values of stored entities ----------------------------- */

/* Free an owned value (STR/RAW heap octets) and set it null. */
void jn_mgmt_value_free(jn_mv_t *v);
/* An owned, NUL-terminated copy of len octets at s. 0 or JN_ENOMEM. */
int jn_mgmt_value_str(jn_mv_t *out, const char *s, size_t len);
/* A request field converted to attr's kind (owned). 0, JN_EINVAL, JN_ENOMEM. */
int jn_mgmt_value_from_field(const jn_schema_attr_t *attr, const jn_field_t *f, jn_mv_t *out);
/* A config-file value (owned). 0 or JN_ENOMEM. */
int jn_mgmt_value_from_config(const jn_config_value_t *v, jn_mv_t *out);
/* attr's schema default (owned; null when none). 0 or JN_ENOMEM. */
int jn_mgmt_value_default(const jn_schema_attr_t *attr, jn_mv_t *out);
/* Two values are the same (kind and content). */
bool jn_mgmt_value_equal(const jn_mv_t *a, const jn_mv_t *b);
/* The text of a stored string value, or NULL. */
const char *jn_mgmt_value_cstr(const jn_mv_t *v);

/* ---- runtime.c: the router's figures ------------------------------------- */

/* What the `router` entity and /metrics both show, read once: the core's
 * counters, the routers known in the mesh, the configured link routes and
 * auto-links. */
typedef struct jn_mgmt_figures {
    jn_core_stats_t core;
    size_t nodes;
    size_t link_routes, auto_links;
} jn_mgmt_figures_t;

/* jn_mgmt_router_figures: fill *out. Core thread. */
void jn_mgmt_router_figures(jn_mgmt_t *agent, jn_mgmt_figures_t *out);
/* jn_mgmt_rows_router: the router entity's one row (JN_COLS_ROUTER values,
 * borrowed for the call) given to fn, when offset is 0 and max > 0; cls is
 * the router class. Returns 1 (the number of rows there are). Core thread;
 * READ/QUERY and /metrics both take the router's figures from it. */
size_t jn_mgmt_rows_router(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                           jn_mgmt_row_fn fn, void *ctx);

/* ---- store.c ---------------------------------------------------------------- */

/* Rows of a stored class. */
size_t jn_mgmt_store_rows(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset, size_t max,
                          jn_mgmt_row_fn fn, void *ctx);
/* CREATE: validate the body (map field, may be absent), act, keep.
 * Writes the full attribute map to reply->body on success. */
int jn_mgmt_store_create(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                         jn_mgmt_reply_t *reply);
/* DELETE by name/identity: act, forget. */
int jn_mgmt_store_delete(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                         jn_mgmt_reply_t *reply);
/* Free every stored entity. */
void jn_mgmt_store_free(jn_mgmt_t *agent);
/* router.connection.linkRoute (store_act.c; docs/design.md, "Link routes
 * and auto-links"): the rows of the link routes of the connection the
 * request came on (none across the mesh), and CREATE/DELETE on that
 * connection, with 1.19's descriptions ("Parent connection no longer
 * exists", "Pattern field is required", "Missing value for 'direction'").
 * Core thread, inside a request. */
size_t jn_mgmt_rows_conn_link_routes(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset,
                                     size_t max, jn_mgmt_row_fn fn, void *ctx);
int jn_mgmt_conn_link_route_op(jn_mgmt_t *agent, const jn_mgmt_class_t *cls,
                               const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply);
/* Count stored entities of one class (NULL: all). */
size_t jn_mgmt_store_count(const jn_mgmt_t *agent, const jn_mgmt_class_t *cls);

/* ---- classes.c: run-time rows and updates -------------------------------- */

/* UPDATE of an entity whose type lists UPDATE (log, connection, router.link,
 * sslProfile, dummy: update.c). Writes the full map. */
int jn_mgmt_update(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                   jn_mgmt_reply_t *reply);

/* ---- query.c / node_ops.c --------------------------------------------------- */

int jn_mgmt_query(jn_mgmt_t *agent, const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply);
/* Write row as a map of column name -> value. */
void jn_mgmt_encode_row_map(jn_encoder_t *e, const jn_mgmt_class_t *cls, const jn_mv_t *row);
/* Find the row whose name (column 0) or identity (column 1) matches req;
 * encode it as a map. Returns 0 or JN_ENOENT. */
int jn_mgmt_read_row(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                     jn_encoder_t *out);
/* jn_mgmt_is_c_agent_type: full_name (org.apache.qpid.dispatch.*) is a
 * type whose requests 1.19's C agent answered (router.config.linkRoute,
 * router.link, ...): its READ of a missing entity says "Not Found". Any
 * thread. */
bool jn_mgmt_is_c_agent_type(const char *full_name);

/* Node operations: each returns the status it set. */
int jn_mgmt_get_types(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply);
int jn_mgmt_get_attributes(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply);
int jn_mgmt_get_operations(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply);
int jn_mgmt_get_schema(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply);
/* json.c: GET-SCHEMA's answer as JSON text (indent from the request). */
int jn_mgmt_get_json_schema(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply);

/* jn_mgmt_vhost_op: CREATE, UPDATE or DELETE of a vhost (vhost_ops.c;
 * docs/design.md "Policy"): the attributes are checked as a policyDir
 * file's (a 400 names the attribute), handed to the I/O layer (new
 * connections take them; open ones keep theirs) and shown by READ.
 * Returns the status set on reply. Core thread. */
int jn_mgmt_vhost_op(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                     jn_mgmt_reply_t *reply);
int jn_mgmt_get_mgmt_nodes(jn_mgmt_t *agent, const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply);
int jn_mgmt_get_log(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply);

/* Type name given in a request (entityType first for node operations,
 * else type), "" when none. */
const char *jn_mgmt_request_type(const jn_mgmt_request_t *req, bool entity_type_first);

#endif /* JN_MGMT_PRIVATE_H */
