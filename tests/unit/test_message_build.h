/*
 * test_message_build.h — builds test messages section by section (every
 * combination of header, delivery annotations, message annotations,
 * properties, application properties, body variants and footer) and
 * records where each section is, for the message-content and outgoing-copy
 * unit tests; and the copy an outgoing cursor must produce for them.
 */
#ifndef JN_TEST_MESSAGE_BUILD_H
#define JN_TEST_MESSAGE_BUILD_H 1

#include "test_message_util.h"

enum {
    S_HEADER = 1 << JN_SEC_HEADER,
    S_DA = 1 << JN_SEC_DELIVERY_ANNOTATIONS,
    S_MA = 1 << JN_SEC_MESSAGE_ANNOTATIONS,
    S_PROPS = 1 << JN_SEC_PROPERTIES,
    S_AP = 1 << JN_SEC_APPLICATION_PROPERTIES,
    S_BODY = 1 << JN_SEC_BODY,
    S_FOOTER = 1 << JN_SEC_FOOTER,
    S_ALL = 127
};

/* A message built section by section, with where each section is. */
typedef struct built {
    bytes_t b;
    unsigned mask;
    size_t start[JN_SEC_COUNT], end[JN_SEC_COUNT];
    size_t boundaries[16]; /* offsets where a section ends */
    size_t n_boundaries;
} built_t;

static inline void mark(built_t *m, int sec, size_t start)
{
    if (!(m->mask & (1u << sec)))
        m->start[sec] = start;
    m->mask |= 1u << sec;
    m->end[sec] = m->b.len;
    m->boundaries[m->n_boundaries++] = m->b.len;
}

static inline void build_header(built_t *m, jn_encoder_t *e)
{
    size_t at = m->b.len;
    jn_enc_descriptor_ulong(e, JN_SECTION_HEADER);
    jn_enc_list_begin(e);
    jn_enc_bool(e, true);
    jn_enc_ubyte(e, 7);
    jn_enc_uint(e, 1000);
    jn_enc_null(e);
    jn_enc_uint(e, 2);
    jn_enc_list_end(e);
    bytes_take(&m->b, e);
    mark(m, JN_SEC_HEADER, at);
}

static inline void build_delivery_annotations(built_t *m, jn_encoder_t *e)
{
    size_t at = m->b.len;
    enc_section_map_begin(e, JN_SECTION_DELIVERY_ANNOTATIONS);
    jn_enc_csymbol(e, "x-opt-da");
    jn_enc_cstring(e, "hop");
    jn_enc_map_end(e);
    bytes_take(&m->b, e);
    mark(m, JN_SEC_DELIVERY_ANNOTATIONS, at);
}

static inline void build_message_annotations(built_t *m, jn_encoder_t *e)
{
    static const char *const trace[] = {"0/A"};
    size_t at = m->b.len;
    enc_section_map_begin(e, JN_SECTION_MESSAGE_ANNOTATIONS);
    jn_enc_csymbol(e, "x-opt-user");
    jn_enc_cstring(e, "u1");
    jn_enc_csymbol(e, JN_RA_TO);
    jn_enc_cstring(e, "override");
    jn_enc_csymbol(e, JN_RA_INGRESS);
    jn_enc_cstring(e, "0/A");
    jn_enc_csymbol(e, JN_RA_TRACE);
    enc_string_list(e, trace, 1);
    jn_enc_map_end(e);
    bytes_take(&m->b, e);
    mark(m, JN_SEC_MESSAGE_ANNOTATIONS, at);
}

static inline void build_properties(built_t *m, jn_encoder_t *e)
{
    size_t at = m->b.len;
    jn_enc_descriptor_ulong(e, JN_SECTION_PROPERTIES);
    jn_enc_list_begin(e);
    jn_enc_cstring(e, "id-1");
    jn_enc_null(e);
    jn_enc_cstring(e, "q1");
    jn_enc_null(e);
    jn_enc_cstring(e, "rq");
    jn_enc_list_end(e);
    bytes_take(&m->b, e);
    mark(m, JN_SEC_PROPERTIES, at);
}

static inline void build_application_properties(built_t *m, jn_encoder_t *e)
{
    size_t at = m->b.len;
    enc_section_map_begin(e, JN_SECTION_APPLICATION_PROPERTIES);
    jn_enc_cstring(e, "colour");
    jn_enc_cstring(e, "red");
    jn_enc_map_end(e);
    bytes_take(&m->b, e);
    mark(m, JN_SEC_APPLICATION_PROPERTIES, at);
}

/* Body variants: 0 two data sections, 1 two amqp-sequence sections, 2 an
 * amqp-value string, 3 an amqp-value that is itself a described list. */
static inline void build_body(built_t *m, jn_encoder_t *e, int variant)
{
    size_t at = m->b.len;
    for (int i = 0; i < (variant < 2 ? 2 : 1); i++) {
        if (variant == 0) {
            jn_enc_descriptor_ulong(e, JN_SECTION_DATA);
            jn_enc_binary(e, "body-octets", 11);
        } else if (variant == 1) {
            jn_enc_descriptor_ulong(e, JN_SECTION_AMQP_SEQUENCE);
            jn_enc_list_begin(e);
            jn_enc_int(e, 1);
            jn_enc_cstring(e, "two");
            jn_enc_list_end(e);
        } else if (variant == 2) {
            jn_enc_descriptor_ulong(e, JN_SECTION_AMQP_VALUE);
            jn_enc_cstring(e, "a value");
        } else {
            jn_enc_descriptor_ulong(e, JN_SECTION_AMQP_VALUE);
            jn_enc_descriptor_symbol(e, "example:point:list");
            jn_enc_list_begin(e);
            jn_enc_double(e, 1.5);
            jn_enc_double(e, -2.5);
            jn_enc_list_end(e);
        }
        bytes_take(&m->b, e);
        mark(m, JN_SEC_BODY, at);
    }
}

static inline void build_footer(built_t *m, jn_encoder_t *e)
{
    size_t at = m->b.len;
    enc_section_map_begin(e, JN_SECTION_FOOTER);
    jn_enc_csymbol(e, "x-opt-f");
    jn_enc_ubyte(e, 1);
    jn_enc_map_end(e);
    bytes_take(&m->b, e);
    mark(m, JN_SEC_FOOTER, at);
}

static inline void build(built_t *m, unsigned mask, int body_variant)
{
    jn_encoder_t e;
    memset(m, 0, sizeof *m);
    jn_encoder_init(&e);
    if (mask & S_HEADER)
        build_header(m, &e);
    if (mask & S_DA)
        build_delivery_annotations(m, &e);
    if (mask & S_MA)
        build_message_annotations(m, &e);
    if (mask & S_PROPS)
        build_properties(m, &e);
    if (mask & S_AP)
        build_application_properties(m, &e);
    if (mask & S_BODY)
        build_body(m, &e, body_variant);
    if (mask & S_FOOTER)
        build_footer(m, &e);
    jn_encoder_free(&e);
    assert_int_equal(m->mask, mask);
}

/* The message annotations an endpoint gets from build_message_annotations:
 * the user entry only. */
static inline void expected_endpoint_annotations(bytes_t *out)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    enc_section_map_begin(&e, JN_SECTION_MESSAGE_ANNOTATIONS);
    jn_enc_csymbol(&e, "x-opt-user");
    jn_enc_cstring(&e, "u1");
    jn_enc_map_end(&e);
    bytes_take(out, &e);
    jn_encoder_free(&e);
}

/* Header and delivery annotations as they were, then `annotations`, then
 * everything after the message annotations (delivery annotations pass, as
 * 1.19 forwards them). */
static inline void expected_copy(const built_t *m, const bytes_t *annotations, bytes_t *out)
{
    size_t from = (m->mask & S_DA)       ? m->end[JN_SEC_DELIVERY_ANNOTATIONS]
                  : (m->mask & S_HEADER) ? m->end[JN_SEC_HEADER]
                                         : 0;
    size_t to = (m->mask & S_MA) ? m->end[JN_SEC_MESSAGE_ANNOTATIONS] : from;
    out->len = 0;
    bytes_add(out, m->b.data, from);
    bytes_add(out, annotations->data, annotations->len);
    bytes_add(out, m->b.data + to, m->b.len - to);
}

#endif
