/*
 * bench_message.c — micro-benchmark of the message layer's hot path.
 *
 * Measures, on one thread:
 *   1. receive + parse: copy a typical inter-router message (100-octet body,
 *      user annotation, to-override, ingress, 3-entry trace) into buffers,
 *      locate its sections up to properties, read the router annotations and
 *      properties.to — ns per message;
 *   2. rewrite: compose the outgoing message-annotations for the next router
 *      hop and walk the out-cursor's segments — ns per message;
 *   3. iterator walk: read a 4 KiB field octet by octet — ns per octet.
 * Built twice: bench_message (inline fast path) and bench_message_noinline
 * (JN_ITER_NO_INLINE: every octet through the out-of-line path). Output is
 * one markdown table row per figure. Usage: bench_message [MESSAGES]
 * (default 1,000,000 for each of 1 and 2; the walk runs MESSAGES / 50 times).
 * Under valgrind --tool=callgrind --toggle-collect=bench_parse (etc.) the
 * instruction count divided by MESSAGES is the cost per message.
 */
#include <junction/encoder.h>
#include <junction/message.h>
#include <junction/pool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The typical inter-router message, encoded once. */
static size_t build_message(uint8_t *out, size_t cap)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_HEADER);
    jn_enc_list_begin(&e);
    jn_enc_bool(&e, true);
    jn_enc_list_end(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_MESSAGE_ANNOTATIONS);
    jn_enc_map_begin(&e);
    jn_enc_csymbol(&e, "x-opt-app-key");
    jn_enc_cstring(&e, "app-value");
    jn_enc_csymbol(&e, JN_RA_TO);
    jn_enc_cstring(&e, "service.orders");
    jn_enc_csymbol(&e, JN_RA_INGRESS);
    jn_enc_cstring(&e, "0/RouterA");
    jn_enc_csymbol(&e, JN_RA_TRACE);
    jn_enc_list_begin(&e);
    jn_enc_cstring(&e, "0/RouterA");
    jn_enc_cstring(&e, "0/RouterB");
    jn_enc_cstring(&e, "0/RouterC");
    jn_enc_list_end(&e);
    jn_enc_map_end(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_PROPERTIES);
    jn_enc_list_begin(&e);
    jn_enc_cstring(&e, "id-1");
    jn_enc_null(&e);
    jn_enc_cstring(&e, "service.orders");
    jn_enc_null(&e);
    jn_enc_cstring(&e, "_topo/0/RouterA/temp.abc");
    jn_enc_list_end(&e);
    uint8_t body[100];
    memset(body, 'b', sizeof body);
    jn_enc_descriptor_ulong(&e, JN_SECTION_DATA);
    jn_enc_binary(&e, body, sizeof body);
    size_t len;
    const uint8_t *data = jn_encoder_data(&e, &len);
    if (jn_encoder_error(&e) || len > cap) {
        fprintf(stderr, "bench: cannot build the message\n");
        exit(1);
    }
    memcpy(out, data, len);
    jn_encoder_free(&e);
    return len;
}

static jn_message_t *receive(const uint8_t *bytes, size_t len)
{
    jn_message_t *m = jn_message_new();
    jn_message_set_annotation_policy(m, true);
    if (!m || jn_message_append(m, bytes, len) != 0) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    jn_message_set_complete(m);
    return m;
}

__attribute__((noinline)) static void bench_parse(const uint8_t *bytes, size_t len, long n)
{
    unsigned sink = 0;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        jn_message_t *m = receive(bytes, len);
        jn_iter_t to;
        if (jn_message_parse(m, JN_DEPTH_PROPERTIES) != 0 || jn_message_to(m, &to) != 0) {
            fprintf(stderr, "bench: parse failed: %s\n", jn_message_error(m));
            exit(1);
        }
        const jn_ra_t *ra = jn_message_annotations(m);
        jn_iter_set_view(&to, JN_VIEW_ADDRESS_HASH);
        sink += jn_iter_hash(&to) + ra->trace_count;
        jn_message_unref(m);
    }
    double ns = (now_ns() - t0) / (double)n;
    printf("| receive + locate sections + router annotations + `to` (%zu-octet message) | %.1f ns/message |\n",
           len, ns);
    if (sink == 42)
        printf(" ");
}

__attribute__((noinline)) static void bench_rewrite(const uint8_t *bytes, size_t len, long n)
{
    jn_message_t *m = receive(bytes, len);
    if (jn_message_parse(m, JN_DEPTH_PROPERTIES) != 0)
        exit(1);
    jn_ra_hop_t hop = {.to_router = true, .node_id = "0/RouterD"};
    size_t sink = 0;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        jn_buffer_list_t ma;
        jn_buffer_list_init(&ma);
        if (jn_ra_compose(jn_message_annotations(m), &hop, &ma) != 0)
            exit(1);
        jn_message_out_t o;
        jn_message_out_init(&o, m, &ma);
        const uint8_t *ptr;
        size_t seg;
        while (jn_message_out_next(&o, &ptr, &seg) == 1)
            sink += seg;
        jn_message_out_fini(&o);
    }
    double ns = (now_ns() - t0) / (double)n;
    printf("| compose next-hop annotations + produce out segments | %.1f ns/message |\n", ns);
    jn_message_unref(m);
    if (sink == 42)
        printf(" ");
}

__attribute__((noinline)) static void bench_walk(long n)
{
    enum { FIELD = 4096 };
    uint8_t field[FIELD];
    for (int i = 0; i < FIELD; i++)
        field[i] = (uint8_t)i;
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    if (jn_buffer_list_append_bytes(&list, field, FIELD) != 0)
        exit(1);
    unsigned sink = 0;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        jn_iter_t it;
        jn_iter_init(&it, list.head, 0, FIELD, JN_VIEW_RAW);
        int c;
        while ((c = jn_iter_octet(&it)) != JN_ITER_END)
            sink += (unsigned)c;
    }
    double ns = (now_ns() - t0) / ((double)n * FIELD);
#ifdef JN_ITER_NO_INLINE
    const char *how = "out-of-line only (JN_ITER_NO_INLINE)";
#else
    const char *how = "inline fast path";
#endif
    printf("| iterator walk over a 4 KiB field, %s | %.3f ns/octet |\n", how, ns);
    jn_buffer_list_free(&list);
    if (sink == 42)
        printf(" ");
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    if (n < 50)
        n = 50;
    uint8_t bytes[1024];
    size_t len = build_message(bytes, sizeof bytes);
    printf("| what (buffer capacity %d octets) | result |\n|---|---|\n", JN_BUFFER_CAPACITY);
    bench_parse(bytes, len, n);
    bench_rewrite(bytes, len, n);
    bench_walk(n / 50);
    jn_pool_thread_exit();
    return 0;
}
