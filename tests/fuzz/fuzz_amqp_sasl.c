/*
 * fuzz_amqp_sasl.c — libFuzzer target for the engine's SASL layer, both
 * ends (junction/amqp_sasl.h; docs/engine.md, stage 4): a peer's octet
 * stream handed to our end piece by piece, as a pump would.
 *
 * Input: a control octet (fuzz_input.h: buffer split size, and the size of
 * each piece handed; top bit = the stream is a server's, read by our client
 * end, else a client's, read by our server end with a fake mechanism
 * backend: PLAIN for "\0u\0p", and X-CHAL, which challenges with each
 * response until one says "ok") then the stream. Every call must return a
 * documented result (0, 1 or JN_EPROTO), never consume more than it was
 * offered, consume nothing once done, and every octet our end writes must
 * be its SASL header then whole SASL frames of at most 512 octets that
 * decode. No read out of bounds, no abort, no leak, no hang.
 */
#include "fuzz_input.h"

#include <junction/amqp_sasl.h>
#include <junction/pool.h>
#include <stdlib.h>
#include <string.h>

static int rounds;

static const char *mechanisms(void *ctx)
{
    (void)ctx;
    return "PLAIN X-CHAL ANONYMOUS";
}

static int step(void *ctx, const uint8_t *resp, size_t len, const uint8_t **out, size_t *out_len)
{
    (void)ctx;
    if (resp && len == 2 && memcmp(resp, "ok", 2) == 0) {
        *out = (const uint8_t *)"fin";
        *out_len = 3;
        return JN_AMQP_SASL_OUTCOME_OK;
    }
    if (++rounds > 50)
        return JN_AMQP_SASL_OUTCOME_SYS_PERM;
    *out = resp; /* echoed: the layer copies it into the frame */
    *out_len = len < 400 ? len : 400;
    return JN_AMQP_SASL_STEP_CHALLENGE;
}

static int start(void *ctx, const char *mech, const uint8_t *resp, size_t len,
                 const uint8_t **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (strcmp(mech, "PLAIN") == 0)
        return resp && len == 4 && memcmp(resp, "\0u\0p", 4) == 0 ? JN_AMQP_SASL_OUTCOME_OK
                                                                 : JN_AMQP_SASL_OUTCOME_AUTH;
    return step(ctx, resp, len, out, out_len);
}

static const char *user(void *ctx)
{
    (void)ctx;
    return "u";
}

static const jn_amqp_sasl_mech_ops_t ops = {
    .mechanisms = mechanisms, .start = start, .step = step, .user = user};

/* What our end wrote, appended as it is taken. */
typedef struct sink {
    uint8_t *data;
    size_t len;
} sink_t;

static void take(sink_t *k, const uint8_t *p, size_t n)
{
    if (n == 0)
        return;
    uint8_t *d = realloc(k->data, k->len + n);
    if (!d)
        abort();
    memcpy(d + k->len, p, n);
    k->data = d;
    k->len += n;
}

/* Our output: the SASL header, then whole SASL frames that decode. */
static void check_output(const sink_t *k)
{
    jn_iter_t it;
    jn_amqp_fault_t fault;
    jn_amqp_proto_t proto;
    jn_iter_init_bytes(&it, k->data ? k->data : (const uint8_t *)"", k->len, JN_VIEW_RAW);
    if (k->len == 0)
        return;
    if (jn_amqp_header_read(&it, &proto, &fault) != JN_AMQP_HEADER_SIZE ||
        proto != JN_AMQP_PROTO_SASL)
        abort();
    jn_iter_advance(&it, JN_AMQP_HEADER_SIZE);
    while (jn_iter_length(&it) > 0) {
        jn_amqp_frame_t f;
        if (jn_amqp_frame_read(&it, JN_AMQP_FRAME_SASL, 512, 0, &f, &fault) != 1)
            abort(); /* a partial or bad frame of ours */
        jn_amqp_perf_t p;
        if (jn_amqp_perf_decode(&f.body, JN_AMQP_FRAME_SASL, &p, NULL, &fault) != 0)
            abort();
        jn_iter_advance(&it, f.size);
    }
}

/* Hand data to our end in pieces of piece octets, each time the octets not
 * yet consumed as a view over buffers of chunk octets. */
static void run(bool client, const uint8_t *data, size_t len, size_t chunk)
{
    jn_amqp_sasl_client_config_t cfg = {.user = "u", .password = "p", .hostname = "h"};
    jn_amqp_sasl_client_t *c = client ? jn_amqp_sasl_client_new(&cfg) : NULL;
    jn_amqp_sasl_server_t *s = client ? NULL : jn_amqp_sasl_server_new_with(&ops, NULL);
    if (!c && !s)
        abort();
    sink_t k = {NULL, 0};
    size_t used = 0, have = 0;
    int rc = 0;
    rounds = 0;
    while (have < len) {
        have = len - have < chunk * 3 ? len : have + chunk * 3;
        jn_buffer_list_t list;
        jn_iter_t in;
        jn_buffer_list_init(&list);
        if (jn_buffer_list_append_split(&list, data + used, have - used, chunk) != 0 ||
            jn_iter_init(&in, list.head, 0, have - used, JN_VIEW_RAW) != 0)
            abort();
        size_t consumed = (size_t)-1;
        int was = rc;
        rc = client ? jn_amqp_sasl_client_input(c, &in, &consumed)
                    : jn_amqp_sasl_server_input(s, &in, &consumed);
        jn_buffer_list_free(&list);
        if (rc != 0 && rc != 1 && rc != JN_EPROTO)
            abort();
        if (consumed > have - used || (was == 1 && (rc != 1 || consumed != 0)))
            abort();
        used += consumed;
        size_t n;
        const uint8_t *out = client ? jn_amqp_sasl_client_output(c, &n)
                                    : jn_amqp_sasl_server_output(s, &n);
        take(&k, out, n);
        if (client)
            jn_amqp_sasl_client_output_done(c, n);
        else
            jn_amqp_sasl_server_output_done(s, n);
    }
    check_output(&k);
    free(k.data);
    jn_amqp_sasl_client_free(c);
    jn_amqp_sasl_server_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    run(jn_fuzz_flag(data[0]), data + 1, size - 1, jn_fuzz_chunk(data[0]));
    return 0;
}
