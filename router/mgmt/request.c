/*
 * request.c — decoding a management request (docs/protocol.md, "Management
 * requests"): the
 * properties section (reply-to, correlation-id / message-id), the
 * application properties (operation, type, name, identity, entityType,
 * offset, count, limit) and the amqp-value body, which is located here and
 * read by the operation that needs it.
 *
 * Keys are matched by their octets whether they are strings or symbols, as
 * 1.19 does. A property of the wrong type is a bad request (400) naming the
 * property; unknown properties are ignored (qdmanage passes any A=V of an
 * unknown operation as a property).
 */
#include "mgmt_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int jn_mgmt_field_string(const jn_field_t *f, char *buf, size_t cap)
{
    if (f->type != JN_TYPE_STRING && f->type != JN_TYPE_SYMBOL)
        return JN_EINVAL;
    if (f->size >= cap)
        return JN_ERANGE;
    jn_iter_t it = f->payload;
    size_t n = jn_iter_copy(&it, buf, cap - 1);
    buf[n] = '\0';
    return strlen(buf) == n ? 0 : JN_EINVAL; /* no NUL inside */
}

/* An unsigned integer property: any integer type, or a string of digits
 * (qdmanage sends GET-LOG's limit as a string). */
static int field_uint(const jn_field_t *f, uint64_t *out)
{
    if (jn_field_is_integer(f)) {
        int64_t v;
        if (jn_field_to_int64(f, &v) == 0)
            return v < 0 ? JN_ERANGE : (*out = (uint64_t)v, 0);
        return jn_field_to_uint64(f, out);
    }
    char text[32];
    if (jn_mgmt_field_string(f, text, sizeof text) != 0 || !text[0])
        return JN_EINVAL;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end || text[0] == '-' || text[0] == '+')
        return JN_EINVAL;
    *out = v;
    return 0;
}

/* Does f (a value d returned) decode to its end, every list, map and array
 * inside it included? The message parser reads the properties' fields one
 * level deep only; an id is copied octet for octet into the reply, so one
 * that is malformed inside would make the reply unreadable. */
static bool well_formed(const jn_decoder_t *d, const jn_field_t *f, int depth)
{
    if (f->type != JN_TYPE_LIST && f->type != JN_TYPE_MAP && f->type != JN_TYPE_ARRAY)
        return true;
    jn_decoder_t child;
    jn_field_t item;
    if (depth >= 16 || jn_decoder_enter(d, f, &child) != 0)
        return false;
    int rc;
    while ((rc = jn_decoder_next(&child, &item)) == 1)
        if (!well_formed(&child, &item, depth + 1))
            return false;
    return rc == 0;
}

/* The properties section: reply-to and the id to correlate with. */
static int parse_properties(jn_message_t *msg, jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    jn_iter_t raw;
    if (jn_message_section(msg, JN_SEC_PROPERTIES, &raw) != 0)
        return 0; /* no properties: no reply-to */
    jn_decoder_t d, items;
    jn_field_t f;
    jn_decoder_init(&d, &raw, true);
    if (jn_decoder_next(&d, &f) != 1 || f.type != JN_TYPE_LIST || jn_decoder_enter(&d, &f, &items))
        return 0; /* the message parser already checked it */
    jn_iter_t message_id;
    bool has_message_id = false;
    const char *malformed = NULL;
    for (unsigned i = 0; i < 6 && jn_decoder_next(&items, &f) == 1; i++) {
        if (f.type == JN_TYPE_NULL)
            continue;
        if ((i == 0 || i == 5) && !well_formed(&items, &f, 0)) {
            malformed = malformed ? malformed : i == 0 ? "message-id" : "correlation-id";
            continue; /* not copied: the reply's correlation-id stays null */
        }
        if (i == 0) {
            message_id = f.encoded;
            has_message_id = true;
        } else if (i == 4) {
            int rc = jn_mgmt_field_string(&f, req->reply_to, sizeof req->reply_to);
            req->has_reply_to = rc == 0 && req->reply_to[0];
            if (rc != 0) {
                jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "reply-to is not a usable string");
                return JN_EPROTO;
            }
        } else if (i == 5) {
            req->correlation = f.encoded;
            req->has_correlation = true;
        }
    }
    if (!req->has_correlation && has_message_id) {
        req->correlation = message_id;
        req->has_correlation = true;
    }
    if (malformed) {
        jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "%s is malformed", malformed);
        return JN_EPROTO;
    }
    return 0;
}

/* A string property into buf; *has set. */
static int prop_string(const jn_field_t *v, const char *key, char *buf, size_t cap, bool *has,
                       jn_mgmt_reply_t *reply)
{
    if (v->type == JN_TYPE_NULL)
        return 0;
    int rc = jn_mgmt_field_string(v, buf, cap);
    if (rc == JN_ERANGE)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "'%s' is too long", key), JN_EPROTO;
    if (rc != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "'%s' must be a string, not %s", key,
                                 jn_amqp_type_name(v->type)),
               JN_EPROTO;
    *has = true;
    return 0;
}

static int prop_uint(const jn_field_t *v, const char *key, uint64_t *out, bool *has,
                     jn_mgmt_reply_t *reply)
{
    if (v->type == JN_TYPE_NULL)
        return 0;
    if (field_uint(v, out) != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "'%s' must be a non-negative integer",
                                 key),
               JN_EPROTO;
    *has = true;
    return 0;
}

/* One application property. */
static int parse_property(const jn_field_t *k, const jn_field_t *v, jn_mgmt_request_t *req,
                          jn_mgmt_reply_t *reply)
{
    bool has_op = false;
    if (jn_field_equal_string(k, "operation"))
        return prop_string(v, "operation", req->operation, sizeof req->operation, &has_op, reply);
    if (jn_field_equal_string(k, "type"))
        return prop_string(v, "type", req->type, sizeof req->type, &req->has_type, reply);
    if (jn_field_equal_string(k, "name"))
        return prop_string(v, "name", req->name, sizeof req->name, &req->has_name, reply);
    if (jn_field_equal_string(k, "identity"))
        return prop_string(v, "identity", req->identity, sizeof req->identity, &req->has_identity,
                           reply);
    if (jn_field_equal_string(k, "entityType"))
        return prop_string(v, "entityType", req->entity_type, sizeof req->entity_type,
                           &req->has_entity_type, reply);
    if (jn_field_equal_string(k, "offset"))
        return prop_uint(v, "offset", &req->offset, &req->has_offset, reply);
    if (jn_field_equal_string(k, "count"))
        return prop_uint(v, "count", &req->count, &req->has_count, reply);
    if (jn_field_equal_string(k, "indent")) {
        int rc = prop_uint(v, "indent", &req->indent, &req->has_indent, reply);
        if (req->indent > 16)
            req->indent = 16;
        return rc;
    }
    if (jn_field_equal_string(k, "limit")) {
        uint64_t limit = 0;
        int rc = prop_uint(v, "limit", &limit, &req->has_limit, reply);
        req->limit = (int64_t)(limit > INT64_MAX ? INT64_MAX : limit);
        return rc;
    }
    return 0;
}

static int parse_app_properties(jn_message_t *msg, jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    jn_iter_t raw;
    if (jn_message_section(msg, JN_SEC_APPLICATION_PROPERTIES, &raw) != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Request has no application properties"),
               JN_EPROTO;
    jn_decoder_t d, map;
    jn_field_t f, k, v;
    jn_decoder_init(&d, &raw, true);
    if (jn_decoder_next(&d, &f) != 1 || f.type != JN_TYPE_MAP || jn_decoder_enter(&d, &f, &map))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Application properties must be a map"),
               JN_EPROTO;
    req->properties = f.encoded;
    int rc;
    while ((rc = jn_decoder_next(&map, &k)) == 1) {
        if (jn_decoder_next(&map, &v) != 1)
            break;
        if (parse_property(&k, &v, req, reply) != 0)
            return JN_EPROTO;
    }
    if (rc < 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Malformed application properties: %s",
                                 jn_decoder_reason(&map)),
               JN_EPROTO;
    return 0;
}

/* The first body section, when it is an amqp-value. A data or
 * amqp-sequence body is kept as its (non-map) field, so that an operation
 * needing a map refuses it. */
static int parse_body(jn_message_t *msg, jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    jn_iter_t raw;
    if (jn_message_section(msg, JN_SEC_BODY, &raw) != 0)
        return 0;
    jn_decoder_init(&req->body_dec, &raw, true);
    int rc = jn_decoder_next(&req->body_dec, &req->body);
    if (rc != 1)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Malformed body: %s",
                                 jn_decoder_reason(&req->body_dec)),
               JN_EPROTO;
    req->has_body = true;
    if (req->body.described && !req->body.descriptor_is_symbol &&
        req->body.descriptor_code == JN_SECTION_AMQP_VALUE) {
        req->body.described = false; /* the section's descriptor, not the value's */
        if (req->body.type == JN_TYPE_NULL)
            req->has_body = false;
    }
    return 0;
}

int jn_mgmt_request_parse_head(jn_message_t *msg, jn_mgmt_request_t *req,
                               jn_mgmt_reply_t *reply)
{
    memset(req, 0, offsetof(jn_mgmt_request_t, body));
    req->has_body = false;
    return parse_properties(msg, req, reply);
}

int jn_mgmt_request_parse(jn_message_t *msg, jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    memset(req, 0, offsetof(jn_mgmt_request_t, body));
    req->has_body = false;
    if (parse_properties(msg, req, reply) != 0)
        return JN_EPROTO;
    if (parse_app_properties(msg, req, reply) != 0 || parse_body(msg, req, reply) != 0)
        return JN_EPROTO;
    if (!req->operation[0])
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "No operation provided"), JN_EPROTO;
    memcpy(req->operation_sent, req->operation, sizeof req->operation_sent);
    for (char *p = req->operation; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A'); /* the Python agent ignores case */
    return 0;
}

const char *jn_mgmt_request_type(const jn_mgmt_request_t *req, bool entity_type_first)
{
    if (entity_type_first && req->has_entity_type)
        return req->entity_type;
    if (req->has_type)
        return req->type;
    return !entity_type_first && req->has_entity_type ? req->entity_type : "";
}
