/*
 * junction/config.h — reading a qdrouterd 1.19 configuration file into
 * entities.
 *
 * A file in the conf form (sections `name { attr: value }`) or, when its name
 * ends in ".json", in the JSON form (`[["name", {...}], ...]`) is read and
 * checked against the management schema (junction/schema.h) exactly as
 * docs/protocol.md ("The configuration file") describes: names normalised to camelCase, old
 * attribute names mapped to the new ones, values converted to their types,
 * defaults filled in, required attributes and the start-up cross checks
 * (router id, roles against the router mode, openProperties, names unique)
 * enforced. The result is a list of entities, each an entity type plus typed
 * attribute values that remember the line they came from.
 *
 * The parser knows nothing of what the router implements: every section type
 * the schema allows in a file comes back as an entity, and the daemon decides
 * what to refuse. It does no logging: warnings (deprecated names, repeated
 * attributes) are returned as text for the caller to log.
 *
 * Errors are one line of text, "FILE:LINE: what is wrong" (or "FILE: what is
 * wrong" when no line applies), written to a buffer the caller passes; the
 * caller prints it and exits non-zero. JN_CONFIG_ERROR_MAX bytes hold any
 * message whose file name is under 512 bytes (quoted values are shortened); a
 * shorter buffer gets a truncated, still NUL-terminated, message.
 *
 * Threads: loading may run on any thread (it touches no global state). A
 * loaded jn_config_t is immutable and may be read from several threads at
 * once; it is freed by its owner once no reader is left.
 */
#ifndef JUNCTION_CONFIG_H
#define JUNCTION_CONFIG_H 1

#include <junction/common.h>
#include <junction/schema.h>

#define JN_CONFIG_ERROR_MAX 1024

typedef struct jn_config jn_config_t;               /* a loaded file */
typedef struct jn_config_entity jn_config_entity_t; /* one section */
typedef struct jn_config_value jn_config_value_t;   /* one typed value */

/* The kind of a value. Validated attribute values are STRING (string, path
 * and entityId attributes), INT, BOOL, ENUM (text plus index) or MAP (map and
 * properties attributes); inside a map any JSON kind may appear. */
typedef enum {
    JN_CONFIG_NULL,
    JN_CONFIG_BOOL,
    JN_CONFIG_INT,
    JN_CONFIG_DOUBLE,
    JN_CONFIG_STRING,
    JN_CONFIG_ENUM,
    JN_CONFIG_MAP,
    JN_CONFIG_LIST
} jn_config_kind_t;

/* ---- loading ---- */

/* jn_config_load_file: read and check the configuration file at path (the
 * JSON form when path ends in ".json", else the conf form). On success stores
 * a new configuration in *out (free it with jn_config_free) and returns 0.
 * On failure stores NULL in *out, writes the message to err (err_size bytes,
 * may be 0 to drop it) and returns:
 *   JN_ENOENT  the file could not be opened or read, or is empty
 *              ("PATH: configuration file could not be opened: <reason>",
 *               "PATH: configuration file was empty");
 *   JN_EINVAL  a syntax, schema or cross-entity error ("PATH:LINE: ...");
 *   JN_ENOMEM  out of memory.
 * Any thread. */
int jn_config_load_file(const char *path, jn_config_t **out, char *err, size_t err_size);

/* jn_config_load_file_all: jn_config_load_file for `junctiond --check`,
 * which names every error of a file in one run: when sections have errors
 * (JN_EINVAL), *out still receives the configuration of the sections that
 * had none (the caller frees it), so the caller can run its own checks on
 * those too; err holds one "PATH:LINE: ..." line per error. Other failures
 * (JN_ENOENT, JN_ENOMEM, a syntax error) leave *out NULL. Any thread. */
int jn_config_load_file_all(const char *path, jn_config_t **out, char *err, size_t err_size);

/* jn_config_load_string: the same for len bytes of text held in memory (need
 * not be NUL-terminated); display_name is used in messages and chooses the
 * form (".json" suffix). Returns as jn_config_load_file (JN_ENOENT only when
 * len is 0). The text is not kept. Any thread. */
int jn_config_load_string(const char *display_name, const char *text, size_t len, jn_config_t **out,
                          char *err, size_t err_size);

/* A JSON object of strings read from a file (jn_config_load_string_map):
 * count pairs; keys[i] and values[i] are NUL-terminated, heap, owned by the
 * map (a key or value holding \u0000 is refused by the reader). */
typedef struct jn_config_strmap {
    size_t count;
    char **keys, **values;
} jn_config_strmap_t;

/* jn_config_load_string_map: read the file at path (a regular file, valid
 * UTF-8) as one JSON object whose values are all strings, with the JSON
 * reader of the JSON configuration form (escapes as Python's json module,
 * \u escapes (four hex digits) included; a key repeated is refused). For sslProfile's
 * uidNameMappingFile (docs/design.md "TLS and SASL"). noun names the file
 * in messages ("uidNameMappingFile"). On success fills *out (free with
 * jn_config_strmap_clear) and returns 0. On failure *out is empty, err
 * (err_size bytes, may be 0) holds "PATH:LINE: reason" (or "PATH: reason"
 * when the file cannot be read) and the result is JN_EINVAL (unreadable,
 * empty, not JSON, not an object of strings) or JN_ENOMEM. Any thread. */
int jn_config_load_string_map(const char *path, const char *noun, jn_config_strmap_t *out,
                              char *err, size_t err_size);

/* jn_config_strmap_clear: free what m holds and leave it empty. Any
 * thread. */
void jn_config_strmap_clear(jn_config_strmap_t *m);

/* jn_config_role_refusal: why a `type` ("listener" or "connector") with
 * `role` may not exist on a router in `mode` ("standalone", "interior",
 * "edge"; NULL counts as standalone), in qdrouterd 1.19's words, which
 * management clients (and 1.19's tests) read; NULL when it may. The one
 * rule for the configuration file's check and for management CREATE and
 * UPDATE: a standalone router takes no inter-router or edge role, only an
 * interior has inter-router connections, and an edge router accepts no
 * edge connections. The string is static. Pure; any thread. */
const char *jn_config_role_refusal(const char *type, const char *role, const char *mode);

/* jn_config_open_properties_allowed / jn_config_open_property_reserved:
 * the rules on a listener's or connector's openProperties, for the file's
 * check and for management CREATE and UPDATE alike. Allowed: false for
 * role "inter-router" or "edge" (the mesh's own open properties are the
 * router's), true otherwise (NULL: normal). Reserved: key (NUL-terminated)
 * is one the router sends itself ("product", "version",
 * "failover-server-list", "network-host", "port", "schemehostname") or
 * starts "qd." or "x-opt-qd.". Callers word the refusal as "<type>
 * attribute 'openProperties': not allowed with role '<role>'" and "...:
 * key '<key>' is reserved". Pure; any thread. */
bool jn_config_open_properties_allowed(const char *role);
bool jn_config_open_property_reserved(const char *key);

/* jn_config_free: free a configuration and everything reached from it (all
 * entity and value pointers become invalid). NULL is ignored. */
void jn_config_free(jn_config_t *cfg);

/* jn_config_name: the path or display name the configuration was read from. */
const char *jn_config_name(const jn_config_t *cfg);

/* jn_config_warning_count / jn_config_warning_at: the warnings found while
 * loading (deprecated names or types, repeated attributes, ignored `type`), in
 * file order, each one line "FILE:LINE: ..."; warning_at returns NULL when
 * index is out of range. */
size_t jn_config_warning_count(const jn_config_t *cfg);
const char *jn_config_warning_at(const jn_config_t *cfg, size_t index);

/* ---- entities ---- */

/* jn_config_entity_count / jn_config_entity_at: the entities in file order,
 * followed by the `router` and `policy` singletons added with all defaults
 * when the file has none (their line is 0). entity_at returns NULL when index
 * is out of range. */
size_t jn_config_entity_count(const jn_config_t *cfg);
const jn_config_entity_t *jn_config_entity_at(const jn_config_t *cfg, size_t index);

/* jn_config_find: the first entity whose type is type (e.g. the router
 * singleton: jn_config_find(cfg, jn_schema_type_find("router"))), or NULL. */
const jn_config_entity_t *jn_config_find(const jn_config_t *cfg, const jn_schema_type_t *type);

/* jn_config_entity_type: the entity's type (never NULL). */
const jn_schema_type_t *jn_config_entity_type(const jn_config_entity_t *entity);

/* jn_config_entity_section: the section name as written in the file (before
 * camelCase normalisation, e.g. "ssl-profile"); the short type name for an
 * added singleton. */
const char *jn_config_entity_section(const jn_config_entity_t *entity);

/* jn_config_entity_line: the line of the section's opening (1-based; in the
 * JSON form the line of the section's name), 0 for an added singleton. */
int jn_config_entity_line(const jn_config_entity_t *entity);

/* jn_config_entity_identity: the identity qdrouterd 1.19 gives the entity,
 * e.g. "listener/0.0.0.0:5672", "listener/:amqp:clients", "log/DEFAULT",
 * "router/R1", "router/None", "policy/None", "address/0" (per-type counter
 * from 0). */
const char *jn_config_entity_identity(const jn_config_entity_t *entity);

/* jn_config_entity_name: the configured `name`, or the identity when the
 * section has none (as 1.19 defaults it). */
const char *jn_config_entity_name(const jn_config_entity_t *entity);

/* jn_config_entity_value: the value of attribute attr (an attribute of the
 * entity's type), given in the file or defaulted; NULL when neither. */
const jn_config_value_t *jn_config_entity_value(const jn_config_entity_t *entity,
                                                const jn_schema_attr_t *attr);

/* jn_config_entity_get: the same by attribute name (or deprecated name, e.g.
 * "dir"); NULL when the type has no such attribute or it has no value. */
const jn_config_value_t *jn_config_entity_get(const jn_config_entity_t *entity, const char *name);

/* jn_config_entity_string: the text of a string, path, entityId or enum
 * attribute; NULL when the attribute has no value or is of another kind. */
const char *jn_config_entity_string(const jn_config_entity_t *entity, const char *name);

/* jn_config_entity_int: store an integer attribute's value (an enum
 * attribute's index) in *out. Returns 0, JN_ENOENT when the attribute has no
 * value (or does not exist), JN_EINVAL when it is not an integer or enum. */
int jn_config_entity_int(const jn_config_entity_t *entity, const char *name, int64_t *out);

/* jn_config_entity_bool: store a boolean attribute's value in *out. Returns 0,
 * JN_ENOENT when it has no value (or does not exist), JN_EINVAL when it is not
 * a boolean. */
int jn_config_entity_bool(const jn_config_entity_t *entity, const char *name, bool *out);

/* ---- values ---- */

/* jn_config_value_kind: the value's kind. */
jn_config_kind_t jn_config_value_kind(const jn_config_value_t *value);

/* jn_config_value_line: the file line the value came from (for a map entry,
 * the line of its key); 0 for a default filled in from the schema. */
int jn_config_value_line(const jn_config_value_t *value);

/* jn_config_value_is_default: true when the value is a schema default rather
 * than given in the file. */
bool jn_config_value_is_default(const jn_config_value_t *value);

/* jn_config_value_string: the NUL-terminated text of a STRING or ENUM value
 * (UTF-8, never containing NUL); NULL for other kinds. */
const char *jn_config_value_string(const jn_config_value_t *value);

/* jn_config_value_int: an INT's number, an ENUM's index, a BOOL's 0/1;
 * 0 for other kinds. */
int64_t jn_config_value_int(const jn_config_value_t *value);

/* jn_config_value_bool: a BOOL's value; false for other kinds. */
bool jn_config_value_bool(const jn_config_value_t *value);

/* jn_config_value_double: a DOUBLE's value (JSON numbers with a fraction or
 * exponent, inside maps); an INT's value converted; 0 for other kinds. */
double jn_config_value_double(const jn_config_value_t *value);

/* jn_config_value_count: the number of entries of a MAP or LIST, 0 for other
 * kinds. */
size_t jn_config_value_count(const jn_config_value_t *value);

/* jn_config_value_item: the index-th entry of a MAP (in order of first
 * appearance) or LIST; NULL when out of range or not a container. */
const jn_config_value_t *jn_config_value_item(const jn_config_value_t *value, size_t index);

/* jn_config_value_key: the key of the index-th entry of a MAP; NULL when out
 * of range or not a MAP. */
const char *jn_config_value_key(const jn_config_value_t *value, size_t index);

/* jn_config_value_lookup: the entry of a MAP with key key; NULL when absent
 * or not a MAP. */
const jn_config_value_t *jn_config_value_lookup(const jn_config_value_t *value, const char *key);

#endif /* JUNCTION_CONFIG_H */
