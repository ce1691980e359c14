/*
 * compose.c — the start and the end of a message the router writes itself
 * (junction/compose.h): a header and properties section, and the encoded
 * octets turned into a complete, parsed message. The mesh's control
 * messages and management replies are written this way.
 */
#include <junction/compose.h>

void jn_compose_head(jn_encoder_t *e, const jn_compose_props_t *p)
{
    jn_enc_descriptor_ulong(e, JN_SECTION_HEADER);
    jn_enc_list_begin(e);
    jn_enc_bool(e, false); /* durable */
    jn_enc_list_end(e);

    jn_enc_descriptor_ulong(e, JN_SECTION_PROPERTIES);
    jn_enc_list_begin(e);
    jn_enc_null(e); /* message-id */
    jn_enc_null(e); /* user-id */
    if (p->to)
        jn_enc_cstring(e, p->to);
    else
        jn_enc_null(e);
    if (p->fields > 3) {
        jn_enc_null(e); /* subject */
        if (p->reply_to)
            jn_enc_cstring(e, p->reply_to);
        else
            jn_enc_null(e);
        if (p->correlation)
            jn_enc_raw_iter(e, p->correlation);
        else if (p->correlation_str)
            jn_enc_cstring(e, p->correlation_str);
        else
            jn_enc_null(e);
    }
    jn_enc_list_end(e);
}

jn_message_t *jn_compose_message(jn_encoder_t *e, jn_message_depth_t depth, int *rc)
{
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    jn_message_t *m = NULL;
    int err = jn_encoder_to_buffers(e, &list);
    if (err == 0) {
        m = jn_message_new();
        if (!m)
            err = JN_ENOMEM;
        else if ((err = jn_message_append_buffers(m, &list)) == 0) {
            jn_message_set_complete(m);
            err = jn_message_parse(m, depth);
        }
        if (err != 0 && m) {
            jn_message_unref(m);
            m = NULL;
        }
    }
    jn_buffer_list_free(&list);
    jn_encoder_free(e);
    if (rc)
        *rc = err;
    return m;
}
