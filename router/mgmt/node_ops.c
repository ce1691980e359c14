/*
 * node_ops.c — the operations of the management node itself (docs/protocol.md,
 * "Management requests"), answered from the schema (junction/schema.h) and the log
 * ring (junction/log.h): GET-TYPES, GET-ATTRIBUTES, GET-OPERATIONS (keyed
 * by full type names), GET-SCHEMA (keyed by short names, with types,
 * defaults and flags but no description texts, and Junction's own
 * "implemented" and "implementedValues" where not all is implemented),
 * GET-LOG.
 * GET-MGMT-NODES is in nodes.c, with router.node.
 */
#include "mgmt_private.h"

#include <string.h>

/* The type restricting a GET-* request (entityType), NULL for all.
 * Returns 0, or 400 for an unknown type. */
static int restricting_type(const jn_mgmt_request_t *req, const jn_schema_type_t **out,
                            jn_mgmt_reply_t *reply)
{
    *out = NULL;
    if (!req->has_entity_type || !req->entity_type[0])
        return 0;
    *out = jn_schema_type_find(req->entity_type);
    if (!*out)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "No such entity type '%s'",
                                 req->entity_type);
    return 0;
}

int jn_mgmt_get_types(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    const jn_schema_type_t *only;
    if (restricting_type(req, &only, reply))
        return reply->status;
    jn_encoder_t *e = &reply->body;
    jn_enc_map_begin(e);
    for (size_t i = 0; i < jn_schema_type_count(); i++) {
        const jn_schema_type_t *t = jn_schema_type_at(i);
        if (only && !jn_schema_type_is_a(t, only))
            continue;
        jn_enc_cstring(e, jn_schema_type_full_name(t));
        jn_enc_list_begin(e);
        for (const jn_schema_type_t *b = jn_schema_type_base(t); b; b = jn_schema_type_base(b))
            jn_enc_cstring(e, jn_schema_type_full_name(b));
        jn_enc_list_end(e);
    }
    jn_enc_map_end(e);
    return jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
}

/* GET-ATTRIBUTES (ops false) and GET-OPERATIONS (ops true). */
static int per_type_lists(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply, bool ops)
{
    const jn_schema_type_t *only;
    if (restricting_type(req, &only, reply))
        return reply->status;
    jn_encoder_t *e = &reply->body;
    jn_enc_map_begin(e);
    for (size_t i = 0; i < jn_schema_type_count(); i++) {
        const jn_schema_type_t *t = jn_schema_type_at(i);
        if (only && t != only)
            continue;
        jn_enc_cstring(e, jn_schema_type_full_name(t));
        jn_enc_list_begin(e);
        size_t n = ops ? jn_schema_type_op_count(t) : jn_schema_type_attr_count(t);
        for (size_t k = 0; k < n; k++)
            jn_enc_cstring(e, ops ? jn_schema_type_op_at(t, k)
                                  : jn_schema_attr_name(jn_schema_type_attr_at(t, k)));
        jn_enc_list_end(e);
    }
    jn_enc_map_end(e);
    return jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
}

int jn_mgmt_get_attributes(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    return per_type_lists(req, reply, false);
}

int jn_mgmt_get_operations(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    return per_type_lists(req, reply, true);
}

/* The default of a, typed, when it is neither false, 0 nor empty. */
static void schema_default(jn_encoder_t *e, const jn_schema_attr_t *a)
{
    const char *text = jn_schema_attr_default(a);
    int64_t n;
    if (!text || !text[0])
        return;
    switch (jn_schema_attr_kind(a)) {
    case JN_SCHEMA_INTEGER:
        if (jn_schema_attr_default_int(a, &n) == 0 && n != 0) {
            jn_enc_cstring(e, "default");
            jn_enc_long(e, n);
        }
        return;
    case JN_SCHEMA_BOOLEAN:
        if (strcmp(text, "true") == 0) {
            jn_enc_cstring(e, "default");
            jn_enc_bool(e, true);
        }
        return;
    default:
        jn_enc_cstring(e, "default");
        jn_enc_cstring(e, text);
        return;
    }
}

static void schema_flag(jn_encoder_t *e, const char *key, bool on)
{
    if (on) {
        jn_enc_cstring(e, key);
        jn_enc_bool(e, true);
    }
}

/* Junction's own keys (not 1.19's, which its tools ignore): what is not
 * implemented says "implemented": false; nothing is said of the rest. */
static void schema_unimplemented(jn_encoder_t *e, bool implemented)
{
    if (!implemented) {
        jn_enc_cstring(e, "implemented");
        jn_enc_bool(e, false);
    }
}

/* An enum whose values are not all implemented lists those that are, in
 * the schema's order ("implementedValues"). */
static void schema_implemented_values(jn_encoder_t *e, const jn_schema_attr_t *a)
{
    size_t n = jn_schema_attr_enum_count(a), k;
    for (k = 0; k < n && jn_schema_attr_value_implemented(a, jn_schema_attr_enum_value(a, k)); k++)
        ;
    if (k == n)
        return;
    jn_enc_cstring(e, "implementedValues");
    jn_enc_list_begin(e);
    for (k = 0; k < n; k++)
        if (jn_schema_attr_value_implemented(a, jn_schema_attr_enum_value(a, k)))
            jn_enc_cstring(e, jn_schema_attr_enum_value(a, k));
    jn_enc_list_end(e);
}

static void schema_attr(jn_encoder_t *e, const jn_schema_attr_t *a)
{
    unsigned flags = jn_schema_attr_flags(a);
    jn_enc_cstring(e, jn_schema_attr_name(a));
    jn_enc_map_begin(e);
    jn_enc_cstring(e, "type");
    if (jn_schema_attr_kind(a) == JN_SCHEMA_ENUM) {
        jn_enc_list_begin(e);
        for (size_t k = 0; k < jn_schema_attr_enum_count(a); k++)
            jn_enc_cstring(e, jn_schema_attr_enum_value(a, k));
        jn_enc_list_end(e);
    } else {
        jn_enc_cstring(e, jn_schema_kind_name(jn_schema_attr_kind(a)));
    }
    schema_default(e, a);
    schema_flag(e, "required", flags & JN_SCHEMA_ATTR_REQUIRED);
    schema_flag(e, "unique", flags & JN_SCHEMA_ATTR_UNIQUE);
    schema_flag(e, "deprecated", flags & JN_SCHEMA_ATTR_DEPRECATED);
    schema_implemented_values(e, a);
    schema_unimplemented(e, jn_schema_attr_implemented(a));
    jn_enc_map_end(e);
}

static void schema_type(jn_encoder_t *e, const jn_schema_type_t *t)
{
    unsigned flags = jn_schema_type_flags(t);
    jn_enc_cstring(e, jn_schema_type_short_name(t));
    jn_enc_map_begin(e);
    jn_enc_cstring(e, "attributes");
    jn_enc_map_begin(e);
    for (size_t k = 0; k < jn_schema_type_attr_count(t); k++) {
        const jn_schema_attr_t *a = jn_schema_type_attr_at(t, k);
        if (strcmp(jn_schema_attr_name(a), "type") != 0)
            schema_attr(e, a);
    }
    jn_enc_map_end(e);
    jn_enc_cstring(e, "operations");
    jn_enc_list_begin(e);
    for (size_t k = 0; k < jn_schema_type_op_count(t); k++)
        jn_enc_cstring(e, jn_schema_type_op_at(t, k));
    jn_enc_list_end(e);
    jn_enc_cstring(e, "fullyQualifiedType");
    jn_enc_cstring(e, jn_schema_type_full_name(t));
    schema_flag(e, "deprecated", flags & JN_SCHEMA_TYPE_DEPRECATED);
    schema_flag(e, "singleton", flags & JN_SCHEMA_TYPE_SINGLETON);
    schema_unimplemented(e, jn_schema_type_implemented(t));
    jn_enc_map_end(e);
}

int jn_mgmt_get_schema(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    (void)req;
    jn_encoder_t *e = &reply->body;
    jn_enc_map_begin(e);
    jn_enc_cstring(e, "prefix");
    jn_enc_cstring(e, JN_SCHEMA_PREFIX);
    jn_enc_cstring(e, "entityTypes");
    jn_enc_map_begin(e);
    for (size_t i = 0; i < jn_schema_type_count(); i++)
        schema_type(e, jn_schema_type_at(i));
    jn_enc_map_end(e);
    jn_enc_map_end(e);
    return jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
}

static void log_entry(const jn_log_entry_t *entry, void *ctx)
{
    jn_encoder_t *e = ctx;
    jn_enc_list_begin(e);
    jn_enc_cstring(e, jn_log_module_name(entry->module));
    jn_enc_cstring(e, jn_log_level_name(entry->level));
    jn_enc_cstring(e, entry->text);
    if (entry->file)
        jn_enc_cstring(e, entry->file);
    else
        jn_enc_null(e);
    if (entry->file)
        jn_enc_long(e, entry->line);
    else
        jn_enc_null(e);
    jn_enc_long(e, entry->time_us / 1000000);
    jn_enc_list_end(e);
}

int jn_mgmt_get_log(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    size_t limit = req->has_limit && req->limit > 0 ? (size_t)req->limit : 0;
    jn_enc_list_begin(&reply->body);
    int rc = jn_log_recent(limit, log_entry, &reply->body);
    jn_enc_list_end(&reply->body);
    if (rc < 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Cannot read the log: %s",
                                 jn_strerror(rc));
    return jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
}
