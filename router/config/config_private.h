/*
 * config_private.h — what the files of router/config share.
 *
 * Loading runs in three steps, one file each:
 *   1. read the text into "raw sections" (form_conf.c for the conf form,
 *      form_json.c for the JSON form, json.c for JSON text): a section name
 *      as written, its line, and its attributes as written (a LIST of
 *      values, each with the key as written and its line);
 *   2. validate.c turns each raw section into an entity: names normalised,
 *      types looked up, values converted (convert.c), defaults filled in;
 *   3. checks.c runs the cross-entity checks and assigns identities.
 * config.c holds loading, the arena and the message formatting; access.c the
 * read accessors; schema.c the schema lookups over the generated tables.
 *
 * Everything a configuration owns lives in its arena and is freed at once.
 * Threads: a load runs on one thread; the result is immutable afterwards.
 */
#ifndef JN_CONFIG_PRIVATE_H
#define JN_CONFIG_PRIVATE_H 1

#include <junction/config.h>

#include <stdarg.h>

/* The arena: a list of chunks, freed together. */
typedef struct jn_config_chunk jn_config_chunk_t;

struct jn_config_value {
    uint8_t kind;              /* jn_config_kind_t */
    bool is_default;           /* filled in from the schema */
    int line;                  /* source line, 0 for defaults */
    const char *key;           /* key as written, when an entry of a map/list of attrs */
    const char *s;             /* STRING / ENUM text */
    int64_t i;                 /* INT; ENUM index; BOOL 0/1 */
    double d;                  /* DOUBLE */
    jn_config_value_t **items; /* MAP / LIST entries */
    size_t count, cap;
};

struct jn_config_entity {
    const jn_schema_type_t *type;
    const char *section; /* as written */
    int line;
    const char *identity;
    const char *name;           /* configured name or identity */
    jn_config_value_t **values; /* one slot per schema attribute */
};

struct jn_config {
    jn_config_chunk_t *chunks;
    const char *name;
    jn_config_entity_t **entities;
    size_t entity_count, entity_cap;
    const char **warnings;
    size_t warning_count, warning_cap;
};

/* A raw section: step 1's output. */
typedef struct jn_config_section {
    const char *name; /* as written */
    int line;
    jn_config_value_t *attrs; /* LIST of values carrying key and line */
} jn_config_section_t;

/* The state of one load. */
typedef struct jn_config_ctx {
    jn_config_t *cfg;
    const char *file; /* display name for messages */
    char *err;
    size_t err_size;
    jn_config_section_t *sections;
    size_t section_count, section_cap;
    bool keep_going; /* jn_config_load_file_all: keep what is right past errors */
} jn_config_ctx_t;

/* ---- config.c: arena, messages ---- */

/* Allocate size zeroed bytes in the configuration's arena; NULL when out of
 * memory. */
void *jn_config_alloc(jn_config_ctx_t *ctx, size_t size);

/* Copy len bytes (plus a NUL) into the arena; NULL when out of memory. */
char *jn_config_strndup(jn_config_ctx_t *ctx, const char *s, size_t len);

/* Format into the arena; NULL when out of memory. */
char *jn_config_printf(jn_config_ctx_t *ctx, const char *fmt, ...) JN_PRINTF(2, 3);

/* Write "FILE:LINE: message" (no ":LINE" when line is 0) to the caller's
 * error buffer and return JN_EINVAL. */
int jn_config_fail(jn_config_ctx_t *ctx, int line, const char *fmt, ...) JN_PRINTF(3, 4);

/* Write "FILE: out of memory" and return JN_ENOMEM. */
int jn_config_nomem(jn_config_ctx_t *ctx);

/* Record a warning "FILE:LINE: message". Returns 0 or JN_ENOMEM. */
int jn_config_warn(jn_config_ctx_t *ctx, int line, const char *fmt, ...) JN_PRINTF(3, 4);

/* A printable, one-line, shortened copy of text for a message (control
 * characters become '?', more than 60 bytes are cut with "..."); in the
 * arena, "?" when out of memory. */
const char *jn_config_quote(jn_config_ctx_t *ctx, const char *text);

/* ---- values (config.c) ---- */

/* A new value of kind at line; NULL when out of memory. */
jn_config_value_t *jn_config_value_new(jn_config_ctx_t *ctx, jn_config_kind_t kind, int line);

/* Append item to a MAP or LIST (key, when not NULL, is stored in the item).
 * Returns 0 or JN_ENOMEM. */
int jn_config_value_append(jn_config_ctx_t *ctx, jn_config_value_t *container,
                           jn_config_value_t *item);

/* Put item into a MAP under item->key: replace an entry with an equal key in
 * place, else append. For the conf form's attribute maps, which 1.19 turns
 * into a JSON object that Python reads keeping the last value at the first
 * position (the JSON reader itself refuses a repeated key). Returns 0 or
 * JN_ENOMEM. */
int jn_config_map_put(jn_config_ctx_t *ctx, jn_config_value_t *map, jn_config_value_t *item);

/* Add a raw section; returns it or NULL when out of memory. */
jn_config_section_t *jn_config_section_add(jn_config_ctx_t *ctx, const char *name, int line);

/* ---- step 1 ---- */

/* json.c: parse the JSON text (len bytes, whose first byte is on line
 * first_line) into *out. what names the text in messages ("JSON" or
 * "'openProperties'"). whole_file: the text is the whole file, so a list or
 * object still open at its end is reported at the line that opened it
 * (else at the text's last line). spare_commas: a ',' followed (after
 * blanks) by '}' or ']' is dropped, as 1.19 drops it from the conf form's
 * raw maps (openProperties, groups); else it is refused. A key repeated in
 * one object is refused. Returns 0, JN_EINVAL (message written) or
 * JN_ENOMEM. */
int jn_config_json_parse(jn_config_ctx_t *ctx, const char *text, size_t len, int first_line,
                         const char *what, bool whole_file, bool spare_commas,
                         jn_config_value_t **out);

/* json.c: decode the body of a JSON string literal (len bytes at s, on file
 * line line; an unescaped '"' is refused) into *out (arena). what prefixes
 * the message. Returns 0, JN_EINVAL or JN_ENOMEM. */
int jn_config_unescape(jn_config_ctx_t *ctx, const char *s, size_t len, int line, const char *what,
                       char **out);

/* form_conf.c: read the conf form into raw sections. */
int jn_config_read_conf(jn_config_ctx_t *ctx, const char *text, size_t len);

/* form_json.c: read the JSON form into raw sections. */
int jn_config_read_json(jn_config_ctx_t *ctx, const char *text, size_t len);

/* ---- step 2 ---- */

/* validate.c: turn every raw section into an entity (file order) and add the
 * missing singletons. Returns 0, JN_EINVAL or JN_ENOMEM. */
int jn_config_validate(jn_config_ctx_t *ctx);

/* validate.c: the camelCase form of a name as 1.19 normalises it (split at
 * blanks, '_', '-', '.'; later parts capitalised). In the arena. */
char *jn_config_camel_case(jn_config_ctx_t *ctx, const char *name);

/* convert.c: convert raw (from the file) to attr's type in *out (a new value
 * carrying raw's line), or store NULL when raw is a JSON null (the attribute
 * counts as not given). section is the short type name for messages.
 * Returns 0, JN_EINVAL or JN_ENOMEM. */
int jn_config_convert(jn_config_ctx_t *ctx, const char *section, const jn_schema_attr_t *attr,
                      const jn_config_value_t *raw, jn_config_value_t **out);

/* convert.c: Python int() of decimal text: blanks around, a sign, digits with
 * single '_' between them. Returns 0, JN_EINVAL (not an integer) or
 * JN_ERANGE (outside int64_t). */
int jn_config_parse_int(const char *text, int64_t *out);

/* ---- step 3 ---- */

/* checks.c: identities, unique names, router id, roles, openProperties,
 * saslPlugin references. Returns 0, JN_EINVAL or JN_ENOMEM. */
int jn_config_check(jn_config_ctx_t *ctx);

#endif /* JN_CONFIG_PRIVATE_H */
