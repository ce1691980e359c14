/*
 * schema.c — lookups over the generated schema tables (junction/schema.h).
 *
 * The tables are small (about thirty types, at most fifty attributes each)
 * and are searched only at start-up and by management requests, so plain
 * linear scans with strcmp are enough; nothing here is on the message path.
 */
#include "schema_private.h"

#include <string.h>

size_t jn_schema_type_count(void)
{
    return jn_schema_gen_type_count;
}

const jn_schema_type_t *jn_schema_type_at(size_t index)
{
    return index < jn_schema_gen_type_count ? &jn_schema_gen_types[index] : NULL;
}

const jn_schema_type_t *jn_schema_type_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < jn_schema_gen_type_count; i++) {
        const jn_schema_type_t *t = &jn_schema_gen_types[i];
        if (strcmp(t->name, name) == 0 || strcmp(t->full_name, name) == 0 ||
            strcmp(t->short_name, name) == 0)
            return t;
    }
    return NULL;
}

const char *jn_schema_type_name(const jn_schema_type_t *type)
{
    return type->name;
}

const char *jn_schema_type_full_name(const jn_schema_type_t *type)
{
    return type->full_name;
}

const char *jn_schema_type_short_name(const jn_schema_type_t *type)
{
    return type->short_name;
}

const jn_schema_type_t *jn_schema_type_base(const jn_schema_type_t *type)
{
    return type->base;
}

bool jn_schema_type_is_a(const jn_schema_type_t *type, const jn_schema_type_t *base)
{
    for (; type; type = type->base)
        if (type == base)
            return true;
    return false;
}

unsigned jn_schema_type_flags(const jn_schema_type_t *type)
{
    return type->flags;
}

size_t jn_schema_type_index(const jn_schema_type_t *type)
{
    return type->index;
}

size_t jn_schema_type_op_count(const jn_schema_type_t *type)
{
    return type->op_count;
}

const char *jn_schema_type_op_at(const jn_schema_type_t *type, size_t index)
{
    return index < type->op_count ? type->ops[index] : NULL;
}

bool jn_schema_type_has_op(const jn_schema_type_t *type, const char *op)
{
    if (!op)
        return false;
    for (size_t i = 0; i < type->op_count; i++)
        if (strcmp(type->ops[i], op) == 0)
            return true;
    return false;
}

size_t jn_schema_type_attr_count(const jn_schema_type_t *type)
{
    return type->attr_count;
}

const jn_schema_attr_t *jn_schema_type_attr_at(const jn_schema_type_t *type, size_t index)
{
    return index < type->attr_count ? &type->attrs[index] : NULL;
}

const jn_schema_attr_t *jn_schema_attr_find(const jn_schema_type_t *type, const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < type->attr_count; i++)
        if (strcmp(type->attrs[i].name, name) == 0)
            return &type->attrs[i];
    for (size_t i = 0; i < type->attr_count; i++) {
        const char *old = type->attrs[i].deprecation_name;
        if (old && strcmp(old, name) == 0)
            return &type->attrs[i];
    }
    return NULL;
}

const char *jn_schema_attr_name(const jn_schema_attr_t *attr)
{
    return attr->name;
}

const char *jn_schema_attr_deprecation_name(const jn_schema_attr_t *attr)
{
    return attr->deprecation_name;
}

size_t jn_schema_attr_index(const jn_schema_attr_t *attr)
{
    return attr->index;
}

jn_schema_kind_t jn_schema_attr_kind(const jn_schema_attr_t *attr)
{
    return (jn_schema_kind_t)attr->kind;
}

const char *jn_schema_kind_name(jn_schema_kind_t kind)
{
    switch (kind) {
    case JN_SCHEMA_STRING:
        return "string";
    case JN_SCHEMA_PATH:
        return "path";
    case JN_SCHEMA_ENTITY_ID:
        return "entityId";
    case JN_SCHEMA_INTEGER:
        return "integer";
    case JN_SCHEMA_BOOLEAN:
        return "boolean";
    case JN_SCHEMA_ENUM:
        return "enum";
    case JN_SCHEMA_MAP:
        return "map";
    case JN_SCHEMA_PROPERTIES:
        return "properties";
    case JN_SCHEMA_LIST:
        return "list";
    }
    return "unknown";
}

unsigned jn_schema_attr_flags(const jn_schema_attr_t *attr)
{
    return attr->flags;
}

bool jn_schema_attr_required(const jn_schema_attr_t *attr)
{
    return (attr->flags & JN_SCHEMA_ATTR_REQUIRED) != 0;
}

bool jn_schema_attr_create(const jn_schema_attr_t *attr)
{
    return (attr->flags & JN_SCHEMA_ATTR_CREATE) != 0;
}

bool jn_schema_attr_update(const jn_schema_attr_t *attr)
{
    return (attr->flags & JN_SCHEMA_ATTR_UPDATE) != 0;
}

size_t jn_schema_attr_enum_count(const jn_schema_attr_t *attr)
{
    return attr->enum_count;
}

const char *jn_schema_attr_enum_value(const jn_schema_attr_t *attr, size_t index)
{
    return index < attr->enum_count ? attr->enum_values[index] : NULL;
}

int jn_schema_attr_enum_index(const jn_schema_attr_t *attr, const char *value)
{
    if (!value)
        return JN_ENOENT;
    for (size_t i = 0; i < attr->enum_count; i++)
        if (strcmp(attr->enum_values[i], value) == 0)
            return (int)i;
    return JN_ENOENT;
}

const char *jn_schema_attr_default(const jn_schema_attr_t *attr)
{
    return attr->default_text;
}

int jn_schema_attr_default_int(const jn_schema_attr_t *attr, int64_t *out)
{
    if (attr->kind != JN_SCHEMA_INTEGER && attr->kind != JN_SCHEMA_ENUM &&
        attr->kind != JN_SCHEMA_BOOLEAN)
        return JN_EINVAL;
    if (!attr->default_text)
        return JN_ENOENT;
    *out = attr->default_int;
    return 0;
}

int jn_schema_attr_default_bool(const jn_schema_attr_t *attr, bool *out)
{
    if (attr->kind != JN_SCHEMA_BOOLEAN)
        return JN_EINVAL;
    if (!attr->default_text)
        return JN_ENOENT;
    *out = attr->default_int != 0;
    return 0;
}

/* ---- management columns ---- */

size_t jn_schema_type_column_count(const jn_schema_type_t *type)
{
    return type->col_count;
}

const char *jn_schema_type_column_name(const jn_schema_type_t *type, size_t index)
{
    return index < type->col_count ? type->cols[index].name : NULL;
}

const jn_schema_attr_t *jn_schema_type_column_attr(const jn_schema_type_t *type, size_t index)
{
    return index < type->col_count ? type->cols[index].attr : NULL;
}

int jn_schema_type_column_find(const jn_schema_type_t *type, const char *name)
{
    if (!name)
        return JN_ENOENT;
    for (size_t i = 0; i < type->col_count; i++)
        if (strcmp(type->cols[i].name, name) == 0)
            return (int)i;
    return JN_ENOENT;
}

/* ---- what Junction implements ---- */

bool jn_schema_type_implemented(const jn_schema_type_t *type)
{
    return type->implemented;
}

bool jn_schema_attr_implemented(const jn_schema_attr_t *attr)
{
    return attr->implemented;
}

bool jn_schema_attr_value_implemented(const jn_schema_attr_t *attr, const char *value)
{
    int i = attr->unimplemented_values ? jn_schema_attr_enum_index(attr, value) : JN_ENOENT;
    return i < 0 || !(attr->unimplemented_values & (UINT32_C(1) << i));
}

/* ---- /metrics series ---- */

size_t jn_schema_metric_count(void)
{
    return jn_schema_gen_metric_count;
}

const jn_schema_metric_t *jn_schema_metric_at(size_t index)
{
    return index < jn_schema_gen_metric_count ? &jn_schema_gen_metrics[index] : NULL;
}
