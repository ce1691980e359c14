/*
 * fuzz_mgmt_request.c — libFuzzer target for the management agent: the
 * request decoder and every operation behind it, as the router runs them
 * for a message sent to $management.
 *
 * Input: a control octet (fuzz_input.h: how many octets each buffer holds)
 * then the octets of one AMQP message (properties, application properties,
 * body). When the message parses to the end — the router hands the agent
 * nothing else — it goes to jn_mgmt_request_CT of a fresh agent that holds
 * the entities of a small configuration (listener, connector, address,
 * log), with fake I/O hooks and no core, as the unit tests run
 * it. The properties checked: a request whose reply-to is usable gets
 * exactly one reply and any other gets none; the reply's octets, read back
 * by a new message, parse to the end, go to the request's reply-to, carry
 * an int statusCode and a string statusDescription, and every value of
 * every section decodes.
 *
 * The log entity's outputFile would make the agent open (create) any file
 * the input names: the link option --wrap=jn_log_set_output routes that
 * call to fuzz_log_set_output below, which lets only stderr and stdout
 * through.
 */
#include "fuzz_input.h"

#include <junction/config.h>
#include <junction/decoder.h>
#include <junction/log.h>
#include <junction/message.h>
#include <junction/mgmt.h>
#include <mgmt/mgmt_private.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPLY_MAX (4u << 20)

static const char CONFIG[] = "router {\n mode: standalone\n id: Fuzz\n}\n"
                             "listener {\n name: l1\n host: 127.0.0.1\n port: 5672\n}\n"
                             "connector {\n name: c1\n host: 127.0.0.1\n port: 5673\n}\n"
                             "address {\n prefix: queue\n distribution: balanced\n}\n"
                             "log {\n module: DEFAULT\n enable: info+\n}\n";

int __real_jn_log_set_output(jn_log_module_t module, const char *output, char *err, size_t errlen);
int __wrap_jn_log_set_output(jn_log_module_t module, const char *output, char *err, size_t errlen);

/* See the top of the file: no file is opened by a fuzz input. */
int __wrap_jn_log_set_output(jn_log_module_t module, const char *output, char *err, size_t errlen)
{
    if (output && strcmp(output, "stderr") != 0 && strcmp(output, "stdout") != 0) {
        if (err && errlen)
            snprintf(err, errlen, "files are not opened by the fuzz target");
        return JN_EINVAL;
    }
    return __real_jn_log_set_output(module, output, err, errlen);
}

static jn_message_t *sent;
static unsigned sent_count;

static int capture(void *ctx, jn_core_t *core, jn_message_t *reply)
{
    (void)ctx;
    (void)core;
    jn_message_unref(sent);
    sent = reply;
    sent_count++;
    return 0;
}

static int fake_add(void *ctx, const jn_endpoint_config_t *cfg)
{
    (void)ctx;
    (void)cfg;
    return 0;
}

static int fake_remove(void *ctx, const char *name)
{
    (void)ctx;
    (void)name;
    return 0;
}

/* Decode every value under d; false when any fails to decode. */
static bool walk(jn_decoder_t *d, int depth)
{
    jn_field_t f;
    int rc;
    while ((rc = jn_decoder_next(d, &f)) == 1) {
        if (f.type == JN_TYPE_LIST || f.type == JN_TYPE_MAP || f.type == JN_TYPE_ARRAY) {
            jn_decoder_t child;
            if (depth > 200 || jn_decoder_enter(d, &f, &child) != 0 || !walk(&child, depth + 1))
                return false;
        }
    }
    return rc == 0;
}

/* The first value of section s of m, with its decoder. */
static bool first_value(jn_message_t *m, jn_section_t s, jn_decoder_t *d, jn_field_t *f)
{
    jn_iter_t raw;
    if (jn_message_section(m, s, &raw) != 0)
        return false;
    jn_decoder_init(d, &raw, true);
    return jn_decoder_next(d, f) == 1;
}

static bool section_decodes(jn_message_t *m, jn_section_t s)
{
    jn_iter_t raw;
    if (jn_message_section(m, s, &raw) != 0)
        return false;
    jn_decoder_t d;
    jn_decoder_init(&d, &raw, true);
    return walk(&d, 0);
}

/* The checks on one reply (see the top of the file). */
static void check_reply(jn_message_t *reply, const char *reply_to)
{
    static uint8_t octets[REPLY_MAX];
    size_t n = 0;
    for (const jn_buffer_t *b = jn_message_buffers(reply); b; b = jn_buffer_next(b)) {
        uint32_t size = jn_buffer_size(b);
        if (n + size > REPLY_MAX)
            abort();
        memcpy(octets + n, b->data, size);
        n += size;
    }
    jn_message_t *back = jn_message_new();
    if (!back || jn_message_append(back, octets, n) != 0)
        abort();
    jn_message_set_complete(back);
    if (jn_message_parse(back, JN_DEPTH_ALL) != 0)
        abort(); /* the agent wrote a message nobody can read */
    jn_iter_t to;
    char text[JN_MGMT_STR_MAX];
    if (jn_message_to(back, &to) != 0)
        abort();
    jn_iter_set_view(&to, JN_VIEW_RAW); /* the octets, not the address view */
    if (jn_iter_length(&to) >= sizeof text)
        abort();
    text[jn_iter_copy(&to, text, sizeof text - 1)] = '\0';
    if (strcmp(text, reply_to) != 0)
        abort();
    jn_decoder_t d, map;
    jn_field_t f, k, v;
    if (!first_value(back, JN_SEC_APPLICATION_PROPERTIES, &d, &f) || f.type != JN_TYPE_MAP ||
        jn_decoder_enter(&d, &f, &map) != 0)
        abort();
    bool code = false, description = false;
    while (jn_decoder_next(&map, &k) == 1 && jn_decoder_next(&map, &v) == 1) {
        if (jn_field_equal_string(&k, "statusCode"))
            code = v.type == JN_TYPE_INT;
        else if (jn_field_equal_string(&k, "statusDescription"))
            description = v.type == JN_TYPE_STRING;
    }
    if (!code || !description)
        abort();
    if (!section_decodes(back, JN_SEC_PROPERTIES) ||
        !section_decodes(back, JN_SEC_APPLICATION_PROPERTIES) ||
        !section_decodes(back, JN_SEC_BODY))
        abort();
    jn_message_unref(back);
}

/* Undo whatever log settings a request changed. */
static void reset_logs(void)
{
    for (int m = 0; m <= JN_LOG_MOD_MAIN; m++) {
        __real_jn_log_set_output((jn_log_module_t)m, NULL, NULL, 0);
        jn_log_set_mask((jn_log_module_t)m, JN_LOG_MASK_INHERIT);
        jn_log_set_include_timestamp((jn_log_module_t)m, JN_LOG_INHERIT);
        jn_log_set_include_source((jn_log_module_t)m, JN_LOG_INHERIT);
    }
    /* Lines a request enables go nowhere (not into the fuzzer's log). */
    __real_jn_log_set_output(JN_LOG_MOD_DEFAULT, "/dev/null", NULL, 0);
    jn_log_set_enable(JN_LOG_MOD_DEFAULT, "none", NULL, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool once;
    if (!once) {
        reset_logs();
        once = true;
    }
    if (size < 1)
        return 0;
    jn_message_t *m = jn_message_new();
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    if (!m || (size > 1 &&
               jn_buffer_list_append_split(&list, data + 1, size - 1, jn_fuzz_chunk(data[0])) != 0))
        abort();
    jn_message_append_buffers(m, &list);
    jn_message_set_complete(m);
    if (jn_message_parse(m, JN_DEPTH_ALL) != 0) {
        jn_message_unref(m);
        return 0; /* the router answers no message it cannot parse */
    }
    /* What the decoder says about reply-to decides whether a reply is due. */
    jn_mgmt_request_t *req = malloc(sizeof *req);
    jn_mgmt_reply_t *scratch = malloc(sizeof *scratch);
    if (!req || !scratch)
        abort();
    jn_encoder_init(&scratch->body);
    (void)jn_mgmt_request_parse(m, req, scratch);
    jn_encoder_free(&scratch->body);

    /* the agent takes the file over: a fresh one per input */
    jn_config_t *cfg = NULL;
    char err[JN_CONFIG_ERROR_MAX];
    if (jn_config_load_string("fuzz.conf", CONFIG, sizeof CONFIG - 1, &cfg, err, sizeof err))
        abort();
    jn_mgmt_config_t acfg = {.router_id = "Fuzz",
                             .version = "0.1.0",
                             .worker_threads = 2,
                             .send = capture,
                             .add_listener = fake_add,
                             .add_connector = fake_add,
                             .remove_endpoint = fake_remove};
    jn_mgmt_t *agent = jn_mgmt_create(&acfg);
    if (!agent || jn_mgmt_load_config_CT(agent, cfg, NULL, 0) != 0)
        abort();
    unsigned before = sent_count;
    jn_mgmt_request_CT(agent, NULL, m);
    bool due = req->has_reply_to; /* above JN_MGMT_MAX_REQUEST too: a 400 */
    if (sent_count != before + (due ? 1u : 0u))
        abort(); /* a usable reply-to gets exactly one reply, others none */
    if (due)
        check_reply(sent, req->reply_to);
    jn_message_unref(sent);
    sent = NULL;
    jn_mgmt_free(agent);
    jn_message_unref(m);
    free(req);
    free(scratch);
    reset_logs();
    return 0;
}
