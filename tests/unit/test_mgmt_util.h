/*
 * test_mgmt_util.h — helpers for the management-agent unit tests: build a
 * request message (application properties, amqp-value body, reply-to and
 * correlation-id) split into buffers of a chosen size, answer it with an
 * agent whose send function captures the reply, and decode the reply into
 * a small tree (tv_t) that assertions can walk. Static functions only (each
 * test file is its own program).
 */
#ifndef JN_TEST_MGMT_UTIL_H
#define JN_TEST_MGMT_UTIL_H 1

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/decoder.h>
#include <junction/encoder.h>
#include <junction/log.h>
#include <junction/message.h>
#include <junction/mgmt.h>
#include <junction/pool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a decoded value tree ------------------------------------------------ */

typedef struct tv {
    jn_amqp_type_t type;
    char *s; /* string, symbol */
    int64_t i;
    uint64_t u;
    bool b;
    size_t n; /* list: items; map: keys + values */
    struct tv *items;
} tv_t;

static void tv_fill(jn_decoder_t *d, const jn_field_t *f, tv_t *t)
{
    memset(t, 0, sizeof *t);
    t->type = f->type;
    if (f->type == JN_TYPE_STRING || f->type == JN_TYPE_SYMBOL) {
        t->s = calloc(1, f->size + 1);
        jn_iter_t it = f->payload;
        jn_iter_copy(&it, t->s, f->size);
    } else if (f->type == JN_TYPE_BOOLEAN) {
        t->b = f->value.b;
    } else if (jn_field_is_integer(f)) {
        jn_field_to_int64(f, &t->i);
        jn_field_to_uint64(f, &t->u);
    } else if (f->type == JN_TYPE_LIST || f->type == JN_TYPE_MAP || f->type == JN_TYPE_ARRAY) {
        jn_decoder_t child;
        assert_int_equal(jn_decoder_enter(d, f, &child), 0);
        t->items = calloc(f->count + 1, sizeof(tv_t));
        jn_field_t c;
        while (jn_decoder_next(&child, &c) == 1)
            tv_fill(&child, &c, &t->items[t->n++]);
    }
}

static void tv_clear(tv_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        tv_clear(&t->items[i]);
    free(t->items);
    free(t->s);
}

/* map lookup by string key; NULL when absent */
static inline tv_t *tv_get(tv_t *map, const char *key)
{
    assert_int_equal(map->type, JN_TYPE_MAP);
    for (size_t i = 0; i + 1 < map->n; i += 2)
        if (map->items[i].s && strcmp(map->items[i].s, key) == 0)
            return &map->items[i + 1];
    return NULL;
}

static inline bool tv_list_has(const tv_t *list, const char *s)
{
    for (size_t i = 0; i < list->n; i++)
        if (list->items[i].s && strcmp(list->items[i].s, s) == 0)
            return true;
    return false;
}

/* ---- requests ------------------------------------------------------------- */

typedef struct req {
    const char *op, *type, *name, *identity, *entity_type;
    int64_t offset, count; /* -1: absent */
    const char *reply_to;  /* NULL: "reply.addr"; "" : none */
    /* extra application properties / the body value; NULL: none */
    void (*props)(jn_encoder_t *e, void *arg);
    void (*body)(jn_encoder_t *e, void *arg);
    void *arg;
    size_t chunk; /* buffer split size; 0: one append */
    bool ulong_correlation;
} req_t;

/* REQ(.op = ..., ...): offset and count absent unless given (the designated
 * initializers after the defaults override them on purpose). */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Winitializer-overrides"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Woverride-init"
#endif
#define REQ(...) ((req_t){.offset = -1, .count = -1, __VA_ARGS__})

static void kv(jn_encoder_t *e, const char *k, const char *v)
{
    if (v) {
        jn_enc_cstring(e, k);
        jn_enc_cstring(e, v);
    }
}

static jn_message_t *make_request(const req_t *r)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    const char *reply_to = r->reply_to ? r->reply_to : "reply.addr";
    jn_enc_descriptor_ulong(&e, JN_SECTION_PROPERTIES);
    jn_enc_list_begin(&e);
    jn_enc_cstring(&e, "msg-1"); /* message-id */
    jn_enc_null(&e);
    jn_enc_null(&e);
    jn_enc_null(&e);
    if (reply_to[0])
        jn_enc_cstring(&e, reply_to);
    else
        jn_enc_null(&e);
    if (r->ulong_correlation)
        jn_enc_ulong(&e, 1000);
    else
        jn_enc_cstring(&e, "corr-7");
    jn_enc_list_end(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_APPLICATION_PROPERTIES);
    jn_enc_map_begin(&e);
    kv(&e, "operation", r->op);
    kv(&e, "type", r->type);
    kv(&e, "name", r->name);
    kv(&e, "identity", r->identity);
    kv(&e, "entityType", r->entity_type);
    if (r->offset >= 0) {
        jn_enc_cstring(&e, "offset");
        jn_enc_long(&e, r->offset);
    }
    if (r->count >= 0) {
        jn_enc_cstring(&e, "count");
        jn_enc_long(&e, r->count);
    }
    if (r->props)
        r->props(&e, r->arg);
    jn_enc_map_end(&e);
    if (r->body) {
        jn_enc_descriptor_ulong(&e, JN_SECTION_AMQP_VALUE);
        r->body(&e, r->arg);
    }
    size_t len;
    const uint8_t *p = jn_encoder_data(&e, &len);
    assert_int_equal(jn_encoder_error(&e), 0);
    jn_message_t *m = jn_message_new();
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    if (r->chunk)
        assert_int_equal(jn_buffer_list_append_split(&list, p, len, r->chunk), 0);
    else
        assert_int_equal(jn_buffer_list_append_bytes(&list, p, len), 0);
    jn_message_append_buffers(m, &list);
    jn_message_set_complete(m);
    jn_encoder_free(&e);
    assert_int_equal(jn_message_parse(m, JN_DEPTH_ALL), 0);
    return m;
}

/* ---- the agent and its replies --------------------------------------------- */

static jn_message_t *last_reply;
static unsigned replies_sent;

static int capture_send(void *ctx, jn_core_t *core, jn_message_t *reply)
{
    (void)ctx;
    (void)core;
    jn_message_unref(last_reply);
    last_reply = reply;
    replies_sent++;
    return 0;
}

/* A decoded reply. */
typedef struct reply {
    int status;
    char description[512];
    char to[256];
    tv_t correlation;
    tv_t body;
} reply_t;

static inline void reply_clear(reply_t *r)
{
    tv_clear(&r->correlation);
    tv_clear(&r->body);
    memset(r, 0, sizeof *r);
}

static void decode_section(jn_message_t *m, jn_section_t s, tv_t *out)
{
    jn_iter_t raw;
    assert_int_equal(jn_message_section(m, s, &raw), 0);
    jn_decoder_t d;
    jn_field_t f;
    jn_decoder_init(&d, &raw, true);
    assert_int_equal(jn_decoder_next(&d, &f), 1);
    tv_fill(&d, &f, out);
}

static void decode_reply(jn_message_t *m, reply_t *r)
{
    memset(r, 0, sizeof *r);
    tv_t props, ap;
    decode_section(m, JN_SEC_PROPERTIES, &props);
    assert_true(props.n >= 6);
    snprintf(r->to, sizeof r->to, "%s", props.items[2].s ? props.items[2].s : "");
    r->correlation = props.items[5];
    props.items[5] = (tv_t){0};
    tv_clear(&props);
    decode_section(m, JN_SEC_APPLICATION_PROPERTIES, &ap);
    tv_t *code = tv_get(&ap, "statusCode"), *desc = tv_get(&ap, "statusDescription");
    assert_non_null(code);
    assert_int_equal(code->type, JN_TYPE_INT);
    assert_non_null(desc);
    r->status = (int)code->i;
    snprintf(r->description, sizeof r->description, "%s", desc->s);
    tv_clear(&ap);
    decode_section(m, JN_SEC_BODY, &r->body);
}

/* Send r to agent; decode the one reply into *out. */
static void ask(jn_mgmt_t *agent, const req_t *r, reply_t *out)
{
    jn_message_t *m = make_request(r);
    unsigned before = replies_sent;
    jn_mgmt_request_CT(agent, NULL, m);
    jn_message_unref(m);
    assert_int_equal(replies_sent, before + 1);
    decode_reply(last_reply, out);
    jn_message_unref(last_reply);
    last_reply = NULL;
}

/* ask and check the status; returns the decoded reply (clear it). */
static inline void expect(jn_mgmt_t *agent, const req_t *r, int status, reply_t *out)
{
    ask(agent, r, out);
    if (out->status != status)
        fail_msg("expected status %d, got %d (%s)", status, out->status, out->description);
}

/* I/O hooks that record what they were asked. */
typedef struct fake_io {
    unsigned listeners, connectors, removed;
    char last_name[128], last_port[32], last_host[128], removed_name[128];
    int fail_with; /* returned by add_* when set */
} fake_io_t;

static int fake_add(void *ctx, const jn_endpoint_config_t *cfg, bool listener)
{
    fake_io_t *io = ctx;
    if (io->fail_with)
        return io->fail_with;
    listener ? io->listeners++ : io->connectors++;
    snprintf(io->last_name, sizeof io->last_name, "%s", cfg->name ? cfg->name : "");
    snprintf(io->last_port, sizeof io->last_port, "%s", cfg->port ? cfg->port : "");
    snprintf(io->last_host, sizeof io->last_host, "%s", cfg->host ? cfg->host : "");
    return 0;
}

static int fake_add_listener(void *ctx, const jn_endpoint_config_t *cfg)
{
    return fake_add(ctx, cfg, true);
}

static int fake_add_connector(void *ctx, const jn_endpoint_config_t *cfg)
{
    return fake_add(ctx, cfg, false);
}

static int fake_remove(void *ctx, const char *name)
{
    fake_io_t *io = ctx;
    io->removed++;
    snprintf(io->removed_name, sizeof io->removed_name, "%s", name);
    return 0;
}

static inline jn_mgmt_t *new_agent(fake_io_t *io)
{
    jn_mgmt_config_t cfg = {.router_id = "R1",
                            .mode = "standalone",
                            .version = "0.1.0",
                            .worker_threads = 2,
                            .send = capture_send,
                            .io_ctx = io,
                            .add_listener = io ? fake_add_listener : NULL,
                            .add_connector = io ? fake_add_connector : NULL,
                            .remove_endpoint = io ? fake_remove : NULL};
    jn_mgmt_t *agent = jn_mgmt_create(&cfg);
    assert_non_null(agent);
    return agent;
}

/* Bodies. */
static inline void body_empty_map(jn_encoder_t *e, void *arg)
{
    (void)arg;
    jn_enc_map_begin(e);
    jn_enc_map_end(e);
}

/* arg: NULL-terminated array of "key", "value" strings */
static inline void body_string_map(jn_encoder_t *e, void *arg)
{
    const char *const *kvs = arg;
    jn_enc_map_begin(e);
    for (size_t i = 0; kvs && kvs[i]; i += 2) {
        jn_enc_cstring(e, kvs[i]);
        jn_enc_cstring(e, kvs[i + 1]);
    }
    jn_enc_map_end(e);
}

/* arg: NULL-terminated array of attribute names */
static inline void body_attribute_names(jn_encoder_t *e, void *arg)
{
    const char *const *names = arg;
    jn_enc_map_begin(e);
    jn_enc_cstring(e, "attributeNames");
    jn_enc_list_begin(e);
    for (size_t i = 0; names && names[i]; i++)
        jn_enc_cstring(e, names[i]);
    jn_enc_list_end(e);
    jn_enc_map_end(e);
}

#endif /* JN_TEST_MGMT_UTIL_H */
