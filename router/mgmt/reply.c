/*
 * reply.c — composing the reply to a management request (docs/protocol.md,
 * "Management requests"; the header and properties by junction/compose.h)
 * and encoding the values of rows.
 *
 * The reply: header (durable false), properties [null, null, to = the
 * request's reply-to, null, null, correlation-id copied octet for octet
 * from the request's correlation-id, else its message-id], application
 * properties {statusDescription: str, statusCode: int}, and one amqp-value
 * section holding the body the operation wrote (an empty map for an
 * error). The core sends it pre-settled.
 */
#include "mgmt_private.h"

#include <junction/compose.h>

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

jn_mv_t jn_mv_str(const char *s)
{
    return s ? jn_mv_strn(s, strlen(s)) : jn_mv_null();
}

bool jn_mv_equal_str(const jn_mv_t *v, const char *s)
{
    return v->kind == JN_MV_STR && strlen(s) == v->len && memcmp(v->v.s, s, v->len) == 0;
}

void jn_mv_encode(jn_encoder_t *e, const jn_mv_t *v)
{
    switch ((jn_mv_kind_t)v->kind) {
    case JN_MV_NULL:
        jn_enc_null(e);
        break;
    case JN_MV_BOOL:
        jn_enc_bool(e, v->v.b);
        break;
    case JN_MV_INT:
        jn_enc_int(e, (int32_t)(v->v.i > INT32_MAX   ? INT32_MAX
                                : v->v.i < INT32_MIN ? INT32_MIN
                                                     : v->v.i));
        break;
    case JN_MV_LONG:
        jn_enc_long(e, v->v.i);
        break;
    case JN_MV_UINT:
        jn_enc_uint(e, (uint32_t)(v->v.u > UINT32_MAX ? UINT32_MAX : v->v.u));
        break;
    case JN_MV_ULONG:
        jn_enc_ulong(e, v->v.u);
        break;
    case JN_MV_STR:
        jn_enc_string(e, v->v.s, v->len);
        break;
    case JN_MV_RAW:
        jn_enc_raw(e, v->v.raw, v->len);
        break;
    case JN_MV_STRLIST:
        jn_enc_list_begin(e);
        for (size_t i = 0; i < v->len; i++)
            jn_enc_cstring(e, v->v.list[i]);
        jn_enc_list_end(e);
        break;
    case JN_MV_EMPTY_MAP:
        jn_enc_map_begin(e);
        jn_enc_map_end(e);
        break;
    case JN_MV_EMPTY_LIST:
        jn_enc_list_begin(e);
        jn_enc_list_end(e);
        break;
    }
}

int jn_mgmt_reply_set(jn_mgmt_reply_t *reply, int status, const char *fmt, ...)
{
    reply->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reply->description, sizeof reply->description, fmt, ap);
    va_end(ap);
    return status;
}

static const char *default_description(int status)
{
    switch (status) {
    case JN_MGMT_OK:
        return "OK";
    case JN_MGMT_CREATED:
        return "Created";
    case JN_MGMT_NO_CONTENT:
        return "No Content";
    case JN_MGMT_BAD_REQUEST:
        return "Bad Request";
    case JN_MGMT_FORBIDDEN:
        return "Forbidden";
    case JN_MGMT_NOT_FOUND:
        return "Not Found";
    case JN_MGMT_NOT_IMPLEMENTED:
        return "Not Implemented";
    default:
        return "Internal Server Error";
    }
}

/* The body: what the operation wrote, or an empty map for an error or an
 * operation that wrote nothing. */
static void encode_body(jn_encoder_t *e, jn_mgmt_reply_t *reply)
{
    size_t len = 0;
    const uint8_t *data = jn_encoder_data(&reply->body, &len);
    jn_enc_descriptor_ulong(e, JN_SECTION_AMQP_VALUE);
    if (reply->status < 300 && len > 0 && reply->body.depth == 0) {
        jn_enc_raw(e, data, len);
    } else {
        jn_enc_map_begin(e);
        jn_enc_map_end(e);
    }
}

jn_message_t *jn_mgmt_reply_compose(const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    if (jn_encoder_error(&reply->body) != 0 && reply->status < 300)
        jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Cannot encode the answer: %s",
                          jn_strerror(jn_encoder_error(&reply->body)));
    if (!reply->description[0])
        snprintf(reply->description, sizeof reply->description, "%s",
                 default_description(reply->status));
    jn_encoder_t *e = malloc(sizeof *e);
    if (!e)
        return NULL;
    jn_encoder_init(e);
    jn_compose_props_t props = {.to = req->reply_to,
                                .correlation = req->has_correlation ? &req->correlation : NULL,
                                .fields = 6};
    jn_compose_head(e, &props);
    jn_enc_descriptor_ulong(e, JN_SECTION_APPLICATION_PROPERTIES);
    jn_enc_map_begin(e);
    jn_enc_cstring(e, "statusDescription");
    jn_enc_cstring(e, reply->description);
    jn_enc_cstring(e, "statusCode");
    jn_enc_int(e, reply->status);
    jn_enc_map_end(e);
    encode_body(e, reply);
    jn_message_t *msg = jn_compose_message(e, JN_DEPTH_ALL, NULL);
    free(e);
    return msg;
}
