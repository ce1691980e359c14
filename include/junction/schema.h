/*
 * junction/schema.h — the management schema: the entity types of qdrouterd
 * 1.19 (router, listener, router.config.address, ...), their attributes, the
 * attributes' types, enum values, defaults and flags.
 *
 * The data comes from one file, router/config/schema.json; the build turns it
 * into constant C tables (scripts/gen-schema-tables), and this header is the
 * only way to read them. The config-file parser, the management agent and the
 * tools all use the same data, so they cannot drift apart.
 *
 * Inheritance is flattened: every type lists all its attributes, those of its
 * bases (`name`, `identity`, `type`) included, and all its operations,
 * inherited ones included. jn_schema_type_base() still tells which type a type
 * extends.
 *
 * Threads: the tables are immutable; every function may be called from any
 * thread at any time. Returned pointers stay valid for the life of the
 * process and must not be freed.
 */
#ifndef JUNCTION_SCHEMA_H
#define JUNCTION_SCHEMA_H 1

#include <junction/common.h>

/* The prefix of every full type name. */
#define JN_SCHEMA_PREFIX "org.apache.qpid.dispatch"

typedef struct jn_schema_type jn_schema_type_t; /* one entity type */
typedef struct jn_schema_attr jn_schema_attr_t; /* one attribute of a type */

/* The value type of an attribute. */
typedef enum {
    JN_SCHEMA_STRING,     /* text */
    JN_SCHEMA_PATH,       /* text naming a file or directory */
    JN_SCHEMA_ENTITY_ID,  /* text naming another entity */
    JN_SCHEMA_INTEGER,    /* signed integer (int64_t) */
    JN_SCHEMA_BOOLEAN,    /* true / false */
    JN_SCHEMA_ENUM,       /* one of a fixed list of strings */
    JN_SCHEMA_MAP,        /* a map (e.g. vhost.groups) */
    JN_SCHEMA_PROPERTIES, /* a map with ASCII string keys (openProperties) */
    JN_SCHEMA_LIST        /* a list */
} jn_schema_kind_t;

/* Flags of an entity type (jn_schema_type_flags). */
enum {
    JN_SCHEMA_TYPE_SINGLETON = 1u << 0,   /* at most one entity of this type */
    JN_SCHEMA_TYPE_REFERENTIAL = 1u << 1, /* other entities refer to it by name */
    JN_SCHEMA_TYPE_DEPRECATED = 1u << 2,  /* still accepted, with a warning */
    JN_SCHEMA_TYPE_ABSTRACT = 1u << 3,    /* a base type; no entity is of it */
    JN_SCHEMA_TYPE_CONFIG = 1u << 4       /* may be a section of a config file */
};

/* Flags of an attribute (jn_schema_attr_flags). */
enum {
    JN_SCHEMA_ATTR_REQUIRED = 1u << 0,  /* must be given on create / in a file */
    JN_SCHEMA_ATTR_CREATE = 1u << 1,    /* may be given in a management CREATE */
    JN_SCHEMA_ATTR_UPDATE = 1u << 2,    /* may be changed by a management UPDATE */
    JN_SCHEMA_ATTR_UNIQUE = 1u << 3,    /* no two entities share a value */
    JN_SCHEMA_ATTR_HIDDEN = 1u << 4,    /* secret: never shown in logs */
    JN_SCHEMA_ATTR_STATISTIC = 1u << 5, /* a read-only counter */
    JN_SCHEMA_ATTR_DEPRECATED = 1u << 6 /* still honoured, with a warning */
};

/* ---- entity types ---- */

/* jn_schema_type_count: the number of entity types in the schema. */
size_t jn_schema_type_count(void);

/* jn_schema_type_at: the index-th type (0 <= index < jn_schema_type_count()),
 * in the schema file's order; NULL when index is out of range. */
const jn_schema_type_t *jn_schema_type_at(size_t index);

/* jn_schema_type_find: the type called name, which may be the full name
 * ("org.apache.qpid.dispatch.router.config.address"), the name without the
 * prefix ("router.config.address") or the short name ("address"). Names are
 * case-sensitive. Returns NULL when no type has that name (or name is NULL). */
const jn_schema_type_t *jn_schema_type_find(const char *name);

/* jn_schema_type_name: the type's name without the prefix, e.g.
 * "router.config.address", "listener". Never NULL. */
const char *jn_schema_type_name(const jn_schema_type_t *type);

/* jn_schema_type_full_name: the full name, e.g.
 * "org.apache.qpid.dispatch.listener". Never NULL. */
const char *jn_schema_type_full_name(const jn_schema_type_t *type);

/* jn_schema_type_short_name: the short name used for config-file sections and
 * identities, e.g. "address" for router.config.address, "listener". */
const char *jn_schema_type_short_name(const jn_schema_type_t *type);

/* jn_schema_type_base: the type this one extends directly, or NULL for the
 * root type "entity". */
const jn_schema_type_t *jn_schema_type_base(const jn_schema_type_t *type);

/* jn_schema_type_is_a: true when type is base or extends it (directly or
 * not). */
bool jn_schema_type_is_a(const jn_schema_type_t *type, const jn_schema_type_t *base);

/* jn_schema_type_flags: the JN_SCHEMA_TYPE_* flags of the type. */
unsigned jn_schema_type_flags(const jn_schema_type_t *type);

/* jn_schema_type_index: the type's position for jn_schema_type_at(). */
size_t jn_schema_type_index(const jn_schema_type_t *type);

/* jn_schema_type_op_count / jn_schema_type_op_at: the operations the type
 * supports ("CREATE", "READ", ...), inherited ones included; op_at returns
 * NULL when index is out of range. */
size_t jn_schema_type_op_count(const jn_schema_type_t *type);
const char *jn_schema_type_op_at(const jn_schema_type_t *type, size_t index);

/* jn_schema_type_has_op: true when the type supports operation op (exact,
 * case-sensitive spelling, e.g. "UPDATE"). */
bool jn_schema_type_has_op(const jn_schema_type_t *type, const char *op);

/* ---- attributes ---- */

/* jn_schema_type_attr_count / jn_schema_type_attr_at: the attributes of the
 * type in schema order (inherited `name`, `identity`, `type` first);
 * attr_at returns NULL when index is out of range. */
size_t jn_schema_type_attr_count(const jn_schema_type_t *type);
const jn_schema_attr_t *jn_schema_type_attr_at(const jn_schema_type_t *type, size_t index);

/* jn_schema_attr_find: the attribute of type called name, or whose deprecated
 * (old) name is name, e.g. "helloInterval" finds helloIntervalSeconds.
 * Case-sensitive. Returns NULL when there is none (or name is NULL). */
const jn_schema_attr_t *jn_schema_attr_find(const jn_schema_type_t *type, const char *name);

/* jn_schema_attr_name: the attribute's name, e.g. "port". */
const char *jn_schema_attr_name(const jn_schema_attr_t *attr);

/* jn_schema_attr_deprecation_name: the attribute's old name, still accepted
 * on input (e.g. "helloInterval"), or NULL when it has none. */
const char *jn_schema_attr_deprecation_name(const jn_schema_attr_t *attr);

/* jn_schema_attr_index: the attribute's position in its type
 * (jn_schema_type_attr_at). */
size_t jn_schema_attr_index(const jn_schema_attr_t *attr);

/* jn_schema_attr_kind: the attribute's value type. */
jn_schema_kind_t jn_schema_attr_kind(const jn_schema_attr_t *attr);

/* jn_schema_kind_name: the schema's spelling of a kind: "string", "path",
 * "entityId", "integer", "boolean", "enum", "map", "properties", "list";
 * "unknown" for a value outside the enum. */
const char *jn_schema_kind_name(jn_schema_kind_t kind);

/* jn_schema_attr_flags: the JN_SCHEMA_ATTR_* flags of the attribute. */
unsigned jn_schema_attr_flags(const jn_schema_attr_t *attr);

/* jn_schema_attr_required / _create / _update: the REQUIRED, CREATE and
 * UPDATE flags as booleans. */
bool jn_schema_attr_required(const jn_schema_attr_t *attr);
bool jn_schema_attr_create(const jn_schema_attr_t *attr);
bool jn_schema_attr_update(const jn_schema_attr_t *attr);

/* jn_schema_attr_enum_count / jn_schema_attr_enum_value: the values of an
 * enum attribute in schema order (0 values for other kinds); enum_value
 * returns NULL when index is out of range. */
size_t jn_schema_attr_enum_count(const jn_schema_attr_t *attr);
const char *jn_schema_attr_enum_value(const jn_schema_attr_t *attr, size_t index);

/* jn_schema_attr_enum_index: the zero-based index of value among the enum
 * values, spelled exactly (case-sensitive). Returns JN_ENOENT when value is
 * not one of them (or the attribute is not an enum). */
int jn_schema_attr_enum_index(const jn_schema_attr_t *attr, const char *value);

/* jn_schema_attr_default: the default value as text ("amqp", "16384",
 * "true", "balanced"), or NULL when the attribute has no default. Booleans
 * read "true" / "false". */
const char *jn_schema_attr_default(const jn_schema_attr_t *attr);

/* jn_schema_attr_default_int: store the typed default in *out: the number of
 * an integer attribute, the index of an enum attribute's default value, 0 or
 * 1 for a boolean attribute. Returns 0, JN_ENOENT when the attribute has no
 * default, JN_EINVAL when its kind is not integer, enum or boolean. */
int jn_schema_attr_default_int(const jn_schema_attr_t *attr, int64_t *out);

/* jn_schema_attr_default_bool: store a boolean attribute's default in *out.
 * Returns 0, JN_ENOENT when it has no default, JN_EINVAL when the attribute is
 * not a boolean. */
int jn_schema_attr_default_bool(const jn_schema_attr_t *attr, bool *out);

/* ---- management columns ----
 *
 * The columns of a type's management rows, in the order QUERY lists them
 * when no attribute names are asked for (1.19's order, e.g. router's
 * addrCount before linkCount, connection's host right after identity). A
 * type whose rows follow its attribute order has its attributes as
 * columns; the others list them in schema.json ("columns"), where a
 * column may show an attribute under another name (`dir` for
 * router.config.linkRoute's `direction`, `fallback` for
 * router.config.address's `enableFallback`) or be computed by whoever
 * builds the row (router's `linksBlocked`, connection's `active`, the
 * router.config.address phases). Every type's columns start with `name`
 * and `identity`. The build also writes schema_ids.h, which names each
 * position (JN_COL_ROUTER_ADDR_COUNT, JN_COLS_ROUTER: the count), so rows
 * are filled by name. */

/* jn_schema_type_column_count: the number of columns of type's rows
 * (at least 2). Thread: any. */
size_t jn_schema_type_column_count(const jn_schema_type_t *type);

/* jn_schema_type_column_name: the name of column index of type ("name",
 * "dir", "linksBlocked"), or NULL when index is out of range. Thread: any. */
const char *jn_schema_type_column_name(const jn_schema_type_t *type, size_t index);

/* jn_schema_type_column_attr: the attribute column index of type shows
 * (for an alias the attribute it stands for: `direction` for `dir`), or
 * NULL when the column is computed or index is out of range. Thread: any. */
const jn_schema_attr_t *jn_schema_type_column_attr(const jn_schema_type_t *type, size_t index);

/* jn_schema_type_column_find: the index of the column of type called name
 * (exact spelling; an attribute's old name is no column unless listed).
 * Returns the index, or JN_ENOENT when there is none (or name is NULL).
 * Thread: any. */
int jn_schema_type_column_find(const jn_schema_type_t *type, const char *name);

/* ---- what Junction implements ----
 *
 * The schema says, beside 1.19's facts, which of them Junction acts on
 * (schema.json's "implemented" and "implementedValues"): a type it does
 * not implement (sslProfile, router.config.linkRoute, vhost, ...), an
 * attribute of an implemented type it does not act on (listener
 * requireSsl, router.config.address waypoint, ...), and the values of an
 * enum attribute it implements when not all are (router mode: standalone
 * and interior, not edge). They are what refusals by name go by (the
 * config file's checks, management CREATE and UPDATE), and GET-SCHEMA
 * reports them (docs/design.md, "Management"). Each answer is about its
 * own level only: an attribute of an unimplemented type still answers
 * true, so callers ask the type first, then the attribute, then the value.
 */

/* jn_schema_type_implemented: whether Junction acts on entities of type.
 * Arguments: type, a type from this header (not NULL).
 * Result: true for the types Junction implements (router, listener,
 * connector, router.config.address, log, policy) and for the run-time and
 * base types its agent serves (connection, router.link, router.address,
 * router.node, allocator, management, entity, ...); false for the rest
 * (sslProfile, authServicePlugin, router.config.linkRoute, autoLink,
 * exchange, binding, vhost, console, ...).
 * Thread: any (constant data). */
bool jn_schema_type_implemented(const jn_schema_type_t *type);

/* jn_schema_attr_implemented: whether Junction acts on attribute attr of
 * its type, e.g. false for listener requireSsl and sslProfile, connector
 * saslUsername, router.config.address waypoint and priority, policy
 * maxConnections. Attributes that change nothing by nature (names,
 * metadata, mesh timers on a standalone router) count as implemented.
 * Arguments: attr, an attribute from this header (not NULL).
 * Result: false only where the schema marks the attribute unimplemented;
 * it does not look at the type (see jn_schema_type_implemented).
 * Thread: any (constant data). */
bool jn_schema_attr_implemented(const jn_schema_attr_t *attr);

/* jn_schema_attr_value_implemented: whether Junction implements value of
 * enum attribute attr, e.g. false for router mode "edge" and for listener
 * and connector role "route-container" and "edge".
 * Arguments: attr, an attribute from this header (not NULL); value, the
 * value as spelled in the schema (case-sensitive; may be NULL).
 * Result: false only when attr is an enum whose schema entry lists its
 * implementedValues and value is one of its enum values not listed there;
 * true for every other attribute and value, including NULL and a value the
 * enum does not have (checking that a value is valid is
 * jn_schema_attr_enum_index's job), and whether or not attr itself is
 * implemented (see jn_schema_attr_implemented).
 * Thread: any (constant data). */
bool jn_schema_attr_value_implemented(const jn_schema_attr_t *attr, const char *value);

/* ---- the series exported at /metrics ----
 *
 * schema.json's "metrics" on a singleton type (the router): each names a
 * Prometheus series and the management column of that type's one row it
 * shows, so /metrics and a management READ give the same figure from the
 * same row builder. Constant data; any thread. */
typedef struct jn_schema_metric {
    const char *name;    /* Prometheus series name, e.g. "qdr_links_total" */
    const char *help;    /* one line of HELP text */
    bool counter;        /* true: a counter; false: a gauge */
    uint16_t type_index; /* the type whose row it shows (jn_schema_type_at) */
    uint16_t column;     /* the column of that row (jn_schema_type_column_*) */
} jn_schema_metric_t;

/* jn_schema_metric_count / jn_schema_metric_at: the exported series, in
 * schema.json's order. index < count, else NULL (borrowed, constant).
 * Thread: any. */
size_t jn_schema_metric_count(void);
const jn_schema_metric_t *jn_schema_metric_at(size_t index);

#endif /* JUNCTION_SCHEMA_H */
