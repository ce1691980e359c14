/*
 * compose.c — composing the six control messages of the routing protocol
 * exactly as qdrouterd 1.19 does (docs/protocol.md,
 * "The mesh": "Control messages").
 *
 * Two envelopes exist, because 1.19 composes the messages in two places:
 *   - HELLO, RA, LSR, LSU come from its Python engine: properties is a list
 *     of six (message-id, user-id null, `to`, subject, reply-to,
 *     correlation-id null), the opcode key and every body key are str, and
 *     integers are int (long only when they do not fit 32 bits);
 *   - MAU, MAR come from its C core: properties is a list of three
 *     (message-id, user-id null, `to`), the opcode key and the body keys are
 *     sym, and pv/mobile_seq/have_seq are long.
 * Both have a header with durable = false (junction/compose.h writes it
 * and the properties) and an amqp-value body holding a map. The encoder writes the smallest compound forms (list8/map8, list0
 * when empty) where 1.19 writes list32/map32: every AMQP decoder, 1.19's
 * included, takes both.
 *
 * Each composer returns a complete message parsed to JN_DEPTH_PROPERTIES
 * (so the core can read `to`), or NULL when memory ran out. Core thread.
 */
#include "mesh_private.h"

#include <junction/compose.h>
#include <junction/encoder.h>

#include <stdio.h>

#define ADDR_HELLO   "amqp:/_local/qdhello"
#define ADDR_RA      "amqp:/_topo/0/all/qdrouter"
#define ADDR_MAU_ALL "_topo/0/all/qdrouter.ma"
#define ADDR_MAX     (JN_MESH_ID_MAX + 64)

/* The two flavours of envelope (see the file comment). */
typedef enum { FLAVOUR_PYTHON, FLAVOUR_CORE } flavour_t;

/* A map key: str for the Python-composed messages, sym for the others. */
static void enc_key(jn_encoder_t *e, flavour_t fl, const char *key)
{
    if (fl == FLAVOUR_PYTHON)
        jn_enc_cstring(e, key);
    else
        jn_enc_csymbol(e, key);
}

/* A Python int: int when it fits 32 bits, else long (ulong beyond). */
static void enc_pyint(jn_encoder_t *e, int64_t v)
{
    if (v >= INT32_MIN && v <= INT32_MAX)
        jn_enc_int(e, (int32_t)v);
    else
        jn_enc_long(e, v);
}

static void enc_pyseq(jn_encoder_t *e, uint64_t v)
{
    if (v > (uint64_t)INT64_MAX)
        jn_enc_ulong(e, v);
    else
        enc_pyint(e, (int64_t)v);
}

/* A C-composed long (MAU/MAR sequences), ulong beyond its range. */
static void enc_seq_long(jn_encoder_t *e, uint64_t v)
{
    if (v > (uint64_t)INT64_MAX)
        jn_enc_ulong(e, v);
    else
        jn_enc_long(e, (int64_t)v);
}

/* header, properties, application-properties, and the start of the
 * amqp-value map with its id, pv and area entries. */
static void begin_message(jn_encoder_t *e, flavour_t fl, const char *to, const char *opcode,
                          const char *id)
{
    jn_compose_props_t props = {.to = to, .fields = fl == FLAVOUR_PYTHON ? 6 : 3};
    jn_compose_head(e, &props);

    jn_enc_descriptor_ulong(e, JN_SECTION_APPLICATION_PROPERTIES);
    jn_enc_map_begin(e);
    enc_key(e, fl, "opcode");
    jn_enc_cstring(e, opcode);
    jn_enc_map_end(e);

    jn_enc_descriptor_ulong(e, JN_SECTION_AMQP_VALUE);
    jn_enc_map_begin(e);
    enc_key(e, fl, "id");
    jn_enc_cstring(e, id);
    enc_key(e, fl, "pv");
    if (fl == FLAVOUR_PYTHON)
        jn_enc_int(e, 1);
    else
        jn_enc_long(e, 1);
    enc_key(e, fl, "area");
    jn_enc_cstring(e, "0");
}

/* Close the body map and turn the octets into a message. */
static jn_message_t *finish_message(jn_encoder_t *e, const char *what)
{
    jn_enc_map_end(e);
    int rc;
    jn_message_t *m = jn_compose_message(e, JN_DEPTH_PROPERTIES, &rc);
    if (!m)
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_ERROR, "Cannot compose %s: %s", what, jn_strerror(rc));
    return m;
}

static void enc_string_list(jn_encoder_t *e, const jn_mesh_strs_t *l)
{
    jn_enc_list_begin(e);
    for (size_t i = 0; l && i < l->n; i++)
        jn_enc_string(e, l->s[i], l->len[i]);
    jn_enc_list_end(e);
}

/* The hints of a key list (val), as a list of int. */
static void enc_hint_list(jn_encoder_t *e, const jn_mesh_strs_t *l)
{
    jn_enc_list_begin(e);
    for (size_t i = 0; l && i < l->n; i++)
        jn_enc_int(e, (int32_t)l->val[i]);
    jn_enc_list_end(e);
}

jn_message_t *jn_mesh_compose_hello(const char *id, int64_t instance, const jn_mesh_strs_t *seen)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    begin_message(&e, FLAVOUR_PYTHON, ADDR_HELLO, "HELLO", id);
    jn_enc_cstring(&e, "instance");
    enc_pyint(&e, instance);
    jn_enc_cstring(&e, "seen");
    enc_string_list(&e, seen);
    return finish_message(&e, "HELLO");
}

jn_message_t *jn_mesh_compose_ra(const char *id, int64_t instance, uint64_t ls_seq,
                                 uint64_t mobile_seq)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    begin_message(&e, FLAVOUR_PYTHON, ADDR_RA, "RA", id);
    jn_enc_cstring(&e, "instance");
    enc_pyint(&e, instance);
    jn_enc_cstring(&e, "ls_seq");
    enc_pyseq(&e, ls_seq);
    jn_enc_cstring(&e, "mobile_seq");
    enc_pyseq(&e, mobile_seq);
    return finish_message(&e, "RA");
}

jn_message_t *jn_mesh_compose_lsr(const char *id, const char *target)
{
    char to[ADDR_MAX];
    snprintf(to, sizeof to, "amqp:/_topo/0/%s/qdrouter", target);
    jn_encoder_t e;
    jn_encoder_init(&e);
    begin_message(&e, FLAVOUR_PYTHON, to, "LSR", id);
    return finish_message(&e, "LSR");
}

jn_message_t *jn_mesh_compose_lsu(const char *id, int64_t instance, const char *target,
                                  uint64_t ls_seq, const jn_mesh_strs_t *peers)
{
    char to[ADDR_MAX];
    snprintf(to, sizeof to, "amqp:/_topo/0/%s/qdrouter", target);
    jn_encoder_t e;
    jn_encoder_init(&e);
    begin_message(&e, FLAVOUR_PYTHON, to, "LSU", id);
    jn_enc_cstring(&e, "instance");
    enc_pyint(&e, instance);
    jn_enc_cstring(&e, "ls_seq");
    enc_pyseq(&e, ls_seq);
    jn_enc_cstring(&e, "ls");
    jn_enc_map_begin(&e);
    jn_enc_cstring(&e, "id");
    jn_enc_cstring(&e, id);
    jn_enc_cstring(&e, "area");
    jn_enc_cstring(&e, "0");
    jn_enc_cstring(&e, "ls_seq");
    enc_pyseq(&e, ls_seq);
    jn_enc_cstring(&e, "peers");
    jn_enc_map_begin(&e);
    for (size_t i = 0; peers && i < peers->n; i++) {
        jn_enc_string(&e, peers->s[i], peers->len[i]);
        enc_pyint(&e, peers->val[i]);
    }
    jn_enc_map_end(&e);
    jn_enc_map_end(&e);
    return finish_message(&e, "LSU");
}

jn_message_t *jn_mesh_compose_mau_diff(const char *id, uint64_t mobile_seq,
                                       const jn_mesh_strs_t *add, const jn_mesh_strs_t *del)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    begin_message(&e, FLAVOUR_CORE, ADDR_MAU_ALL, "MAU", id);
    jn_enc_csymbol(&e, "mobile_seq");
    enc_seq_long(&e, mobile_seq);
    jn_enc_csymbol(&e, "hints");
    enc_hint_list(&e, add);
    jn_enc_csymbol(&e, "add");
    enc_string_list(&e, add);
    jn_enc_csymbol(&e, "del");
    enc_string_list(&e, del);
    return finish_message(&e, "MAU");
}

jn_message_t *jn_mesh_compose_mau_abs(const char *id, const char *target, uint64_t mobile_seq,
                                      const jn_mesh_strs_t *exist)
{
    char to[ADDR_MAX];
    snprintf(to, sizeof to, "amqp:/_topo/0/%s/qdrouter.ma", target);
    jn_encoder_t e;
    jn_encoder_init(&e);
    begin_message(&e, FLAVOUR_CORE, to, "MAU", id);
    jn_enc_csymbol(&e, "mobile_seq");
    enc_seq_long(&e, mobile_seq);
    jn_enc_csymbol(&e, "exist");
    enc_string_list(&e, exist);
    jn_enc_csymbol(&e, "hints");
    enc_hint_list(&e, exist);
    return finish_message(&e, "MAU");
}

jn_message_t *jn_mesh_compose_mar(const char *id, const char *target, uint64_t have_seq)
{
    char to[ADDR_MAX];
    snprintf(to, sizeof to, "amqp:/_topo/0/%s/qdrouter.ma", target);
    jn_encoder_t e;
    jn_encoder_init(&e);
    begin_message(&e, FLAVOUR_CORE, to, "MAR", id);
    jn_enc_csymbol(&e, "have_seq");
    enc_seq_long(&e, have_seq);
    return finish_message(&e, "MAR");
}
