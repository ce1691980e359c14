/*
 * access.c — read accessors of loaded entities and values
 * (junction/config.h). A loaded configuration is immutable, so these only
 * read; any thread may call them while the configuration is alive.
 */
#include "config_private.h"

#include <string.h>

/* ---- entities ---- */

const jn_schema_type_t *jn_config_entity_type(const jn_config_entity_t *entity)
{
    return entity->type;
}

const char *jn_config_entity_section(const jn_config_entity_t *entity)
{
    return entity->section;
}

int jn_config_entity_line(const jn_config_entity_t *entity)
{
    return entity->line;
}

const char *jn_config_entity_identity(const jn_config_entity_t *entity)
{
    return entity->identity;
}

const char *jn_config_entity_name(const jn_config_entity_t *entity)
{
    return entity->name;
}

const jn_config_value_t *jn_config_entity_value(const jn_config_entity_t *entity,
                                                const jn_schema_attr_t *attr)
{
    size_t i = jn_schema_attr_index(attr);
    if (i >= jn_schema_type_attr_count(entity->type) ||
        jn_schema_type_attr_at(entity->type, i) != attr)
        return NULL;
    return entity->values[i];
}

const jn_config_value_t *jn_config_entity_get(const jn_config_entity_t *entity, const char *name)
{
    const jn_schema_attr_t *attr = jn_schema_attr_find(entity->type, name);
    return attr ? entity->values[jn_schema_attr_index(attr)] : NULL;
}

const char *jn_config_entity_string(const jn_config_entity_t *entity, const char *name)
{
    return jn_config_value_string(jn_config_entity_get(entity, name));
}

int jn_config_entity_int(const jn_config_entity_t *entity, const char *name, int64_t *out)
{
    const jn_config_value_t *v = jn_config_entity_get(entity, name);
    if (!v)
        return JN_ENOENT;
    if (v->kind != JN_CONFIG_INT && v->kind != JN_CONFIG_ENUM)
        return JN_EINVAL;
    *out = v->i;
    return 0;
}

int jn_config_entity_bool(const jn_config_entity_t *entity, const char *name, bool *out)
{
    const jn_config_value_t *v = jn_config_entity_get(entity, name);
    if (!v)
        return JN_ENOENT;
    if (v->kind != JN_CONFIG_BOOL)
        return JN_EINVAL;
    *out = v->i != 0;
    return 0;
}

/* ---- values ---- */

jn_config_kind_t jn_config_value_kind(const jn_config_value_t *value)
{
    return (jn_config_kind_t)value->kind;
}

int jn_config_value_line(const jn_config_value_t *value)
{
    return value->line;
}

bool jn_config_value_is_default(const jn_config_value_t *value)
{
    return value->is_default;
}

const char *jn_config_value_string(const jn_config_value_t *value)
{
    if (!value || (value->kind != JN_CONFIG_STRING && value->kind != JN_CONFIG_ENUM))
        return NULL;
    return value->s;
}

int64_t jn_config_value_int(const jn_config_value_t *value)
{
    if (value->kind == JN_CONFIG_INT || value->kind == JN_CONFIG_ENUM ||
        value->kind == JN_CONFIG_BOOL)
        return value->i;
    return 0;
}

bool jn_config_value_bool(const jn_config_value_t *value)
{
    return value->kind == JN_CONFIG_BOOL && value->i != 0;
}

double jn_config_value_double(const jn_config_value_t *value)
{
    if (value->kind == JN_CONFIG_DOUBLE)
        return value->d;
    if (value->kind == JN_CONFIG_INT)
        return (double)value->i;
    return 0;
}

size_t jn_config_value_count(const jn_config_value_t *value)
{
    return (value->kind == JN_CONFIG_MAP || value->kind == JN_CONFIG_LIST) ? value->count : 0;
}

const jn_config_value_t *jn_config_value_item(const jn_config_value_t *value, size_t index)
{
    return index < jn_config_value_count(value) ? value->items[index] : NULL;
}

const char *jn_config_value_key(const jn_config_value_t *value, size_t index)
{
    if (value->kind != JN_CONFIG_MAP || index >= value->count)
        return NULL;
    return value->items[index]->key;
}

const jn_config_value_t *jn_config_value_lookup(const jn_config_value_t *value, const char *key)
{
    if (value->kind != JN_CONFIG_MAP || !key)
        return NULL;
    for (size_t i = 0; i < value->count; i++)
        if (strcmp(value->items[i]->key, key) == 0)
            return value->items[i];
    return NULL;
}
