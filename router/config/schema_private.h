/*
 * schema_private.h — the layout of the generated schema tables.
 *
 * scripts/gen-schema-tables reads router/config/schema.json and writes
 * <build>/generated/schema_tables.c, which defines jn_schema_gen_types[] with
 * these structs (and <build>/generated/schema_ids.h, the names of positions
 * in them); router/config/schema.c answers the lookups of junction/schema.h
 * from them. Nothing outside router/config sees this file.
 *
 * Threads: all of it is constant data, shared by every thread.
 */
#ifndef JN_CONFIG_SCHEMA_PRIVATE_H
#define JN_CONFIG_SCHEMA_PRIVATE_H 1

#include <junction/schema.h>

struct jn_schema_attr {
    const char *name;
    const char *deprecation_name;   /* NULL when none */
    const char *const *enum_values; /* enum kind only, else NULL */
    const char *default_text;       /* NULL when no default */
    int64_t default_int;            /* integer value, enum index, bool 0/1 */
    uint32_t unimplemented_values;  /* bit i: enum_values[i] is not implemented */
    uint16_t enum_count;
    uint16_t index;   /* position in its type */
    uint16_t flags;   /* JN_SCHEMA_ATTR_* */
    uint8_t kind;     /* jn_schema_kind_t */
    bool implemented; /* false: "implemented": false in the schema */
};

/* One management column (schema.json's "columns", or an attribute). */
struct jn_schema_column {
    const char *name;
    const struct jn_schema_attr *attr; /* the attribute shown; NULL: computed */
};

struct jn_schema_type {
    const char *name; /* without the prefix */
    const char *full_name;
    const char *short_name;
    const struct jn_schema_type *base; /* NULL for the root */
    const struct jn_schema_attr *attrs;
    const char *const *ops;
    const struct jn_schema_column *cols; /* never empty: name, identity first */
    uint16_t attr_count;
    uint16_t op_count;
    uint16_t col_count;
    uint16_t flags;   /* JN_SCHEMA_TYPE_* */
    uint16_t index;   /* position in jn_schema_gen_types */
    bool implemented; /* the schema's "implemented" */
};

/* Defined by the generated schema_tables.c. */
extern const struct jn_schema_type jn_schema_gen_types[];
extern const size_t jn_schema_gen_type_count;
extern const struct jn_schema_metric jn_schema_gen_metrics[];
extern const size_t jn_schema_gen_metric_count;

#endif /* JN_CONFIG_SCHEMA_PRIVATE_H */
