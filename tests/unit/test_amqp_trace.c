/*
 * test_amqp_trace.c — the own engine's protocol trace (junction/
 * amqp_trace.h): a stream of headers and frames found as its octets pass,
 * whole and split into pieces of 1, 2, 3 and 7 octets, each rendered as
 * one line in the proton path's form (fields by name, nulls left out,
 * unsigned integers in hex, symbols quoted unless a plain word, arrays with
 * their element type, a payload's size and octets); a heartbeat; a line cut
 * with " ... (truncated)"; octets that are not AMQP stop the tracer; and a
 * tracer not started reads nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/amqp_engine.h>
#include <junction/amqp_trace.h>

#include <stdlib.h>
#include <string.h>

/* The lines a tracer gave, joined by '\n'. */
typedef struct lines {
    char text[8192];
    size_t n;
    int count;
} lines_t;

static void sink(void *ctx, const char *line)
{
    lines_t *l = ctx;
    size_t k = strlen(line);
    assert_true(l->n + k + 2 < sizeof l->text);
    memcpy(l->text + l->n, line, k);
    l->n += k;
    l->text[l->n++] = '\n';
    l->text[l->n] = '\0';
    l->count++;
}

static void put_frame(jn_encoder_t *e, uint16_t channel, const jn_amqp_perf_t *p,
                      const char *payload)
{
    size_t start = jn_amqp_frame_begin(e, JN_AMQP_FRAME_AMQP, channel);
    assert_int_equal(jn_amqp_perf_encode(e, p), 0);
    if (payload)
        jn_enc_raw(e, payload, strlen(payload));
    assert_int_equal(jn_amqp_frame_end(e, start, 65536), 0);
}

/* A peer's stream: header, open, attach, transfer with a payload, a
 * heartbeat, close. */
static void peer_stream(jn_encoder_t *e)
{
    uint8_t h[JN_AMQP_HEADER_SIZE];
    jn_amqp_header_write(h, JN_AMQP_PROTO_AMQP);
    jn_enc_raw(e, h, sizeof h);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_OPEN);
    p.u.open.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(3);
    jn_iter_init_string(&p.u.open.container_id, "peer", JN_VIEW_RAW);
    p.u.open.channel_max = 9;
    put_frame(e, 0, &p, NULL);
    jn_amqp_perf_init(&p, JN_AMQP_TRANSFER);
    p.u.transfer.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2);
    p.u.transfer.handle = 0;
    p.u.transfer.delivery_id = 300;
    jn_iter_init_bytes(&p.u.transfer.delivery_tag, "t\x01", 2, JN_VIEW_RAW);
    put_frame(e, 2, &p, "ab\x7f");
    uint8_t hb[JN_AMQP_FRAME_HEADER_SIZE];
    jn_amqp_heartbeat_write(hb);
    jn_enc_raw(e, hb, sizeof hb);
    jn_amqp_perf_init(&p, JN_AMQP_CLOSE);
    put_frame(e, 0, &p, NULL);
}

static const char expected[] = "  <- AMQP\n"
                               "0 <- @open(16) [container-id=\"peer\", channel-max=0x9]\n"
                               "2 <- @transfer(20) [handle=0x0, delivery-id=0x12c, "
                               "delivery-tag=b\"t\\x01\"] (3) ab\\x7f\n"
                               "0 <- (EMPTY FRAME)\n"
                               "0 <- @close(24) []\n";

static void test_stream_whole_and_split(void **state)
{
    (void)state;
    jn_encoder_t e;
    jn_encoder_init(&e);
    peer_stream(&e);
    static const size_t splits[] = {0, 1, 2, 3, 7};
    for (size_t s = 0; s < sizeof splits / sizeof splits[0]; s++) {
        jn_amqp_tracer_t t;
        jn_amqp_tracer_init(&t, false);
        jn_amqp_tracer_start(&t);
        lines_t l = {.n = 0};
        size_t piece = splits[s] ? splits[s] : e.size;
        for (size_t at = 0; at < e.size; at += piece) {
            size_t k = e.size - at < piece ? e.size - at : piece;
            /* two iovecs per feed, and a length shorter than they hold */
            struct iovec iov[2] = {{.iov_base = e.data + at, .iov_len = k / 2},
                                   {.iov_base = e.data + at + k / 2, .iov_len = k}};
            jn_amqp_tracer_feed(&t, iov, 2, k, sink, &l);
        }
        assert_string_equal(l.text, expected);
        assert_int_equal(t.len, 0);
        jn_amqp_tracer_free(&t);
    }
    jn_encoder_free(&e);
}

static void test_arrays_maps_symbols_and_nested(void **state)
{
    (void)state;
    jn_encoder_t caps, props, e;
    jn_encoder_init(&caps);
    jn_encoder_init(&props);
    jn_encoder_init(&e);
    jn_enc_array_begin(&caps, JN_AMQP_SYM8);
    jn_enc_csymbol(&caps, "ANONYMOUS-RELAY");
    jn_enc_csymbol(&caps, "qd.streaming-links");
    jn_enc_array_end(&caps);
    jn_enc_map_begin(&props);
    jn_enc_csymbol(&props, "qd.conn-id");
    jn_enc_int(&props, -3);
    jn_enc_map_end(&props);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_OPEN);
    p.u.open.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(7) | JN_AMQP_FIELD(9);
    jn_iter_init_string(&p.u.open.container_id, "R", JN_VIEW_RAW);
    jn_iter_init_bytes(&p.u.open.offered_capabilities, caps.data, caps.size, JN_VIEW_RAW);
    jn_iter_init_bytes(&p.u.open.properties, props.data, props.size, JN_VIEW_RAW);
    assert_int_equal(jn_amqp_perf_encode(&e, &p), 0);
    char line[JN_AMQP_TRACE_LINE];
    jn_amqp_trace_frame(line, sizeof line, true, 1, e.data, e.size);
    assert_string_equal(line, "1 -> @open(16) [container-id=\"R\", offered-capabilities="
                              "@<symbol>[:ANONYMOUS-RELAY, :\"qd.streaming-links\"], "
                              "properties={:\"qd.conn-id\"=-3}]");
    jn_encoder_free(&caps);
    jn_encoder_free(&props);
    jn_encoder_free(&e);
}

static void test_long_line_truncated(void **state)
{
    (void)state;
    size_t n = 3000;
    uint8_t *body = calloc(1, n);
    assert_non_null(body);
    body[0] = 0x40; /* a null as the "performative", then payload */
    char line[JN_AMQP_TRACE_LINE];
    size_t len = jn_amqp_trace_frame(line, sizeof line, false, 0, body, n);
    assert_int_equal(len, sizeof line - 1);
    assert_int_equal(strlen(line), len);
    assert_string_equal(line + len - strlen(" ... (truncated)"), " ... (truncated)");
    free(body);
}

static void test_not_amqp_stops_and_off_reads_nothing(void **state)
{
    (void)state;
    jn_amqp_tracer_t t;
    jn_amqp_tracer_init(&t, true);
    lines_t l = {.n = 0};
    char http[] = "GET / HTTP/1.1\r\n\r\n";
    struct iovec iov = {.iov_base = http, .iov_len = sizeof http - 1};
    jn_amqp_tracer_feed(&t, &iov, 1, iov.iov_len, sink, &l); /* not started */
    assert_int_equal(l.count, 0);
    uint8_t bad[] = {0, 0, 0, 4, 2, 0, 0, 0}; /* a frame size below 8 */
    iov = (struct iovec){.iov_base = bad, .iov_len = sizeof bad};
    jn_amqp_tracer_start(&t);
    jn_amqp_tracer_feed(&t, &iov, 1, iov.iov_len, sink, &l);
    assert_int_equal(l.count, 1);
    assert_non_null(strstr(l.text, "  -> (octets that are not AMQP frames: trace stopped)"));
    assert_false(t.on);
    jn_amqp_tracer_feed(&t, &iov, 1, iov.iov_len, sink, &l);
    assert_int_equal(l.count, 1);
    jn_amqp_tracer_free(&t);
}

static void test_frame_too_large_passed_over(void **state)
{
    (void)state;
    jn_amqp_tracer_t t;
    jn_amqp_tracer_init(&t, false);
    jn_amqp_tracer_start(&t);
    lines_t l = {.n = 0};
    uint32_t size = JN_AMQP_TRACE_FRAME_MAX + 100;
    uint8_t *big = calloc(1, size + 8);
    assert_non_null(big);
    big[0] = (uint8_t)(size >> 24);
    big[1] = (uint8_t)(size >> 16);
    big[2] = (uint8_t)(size >> 8);
    big[3] = (uint8_t)size;
    big[4] = 2;
    jn_amqp_heartbeat_write(big + size); /* the next frame is read */
    for (size_t at = 0; at < size + 8; at += 65536) {
        size_t k = size + 8 - at < 65536 ? size + 8 - at : 65536;
        struct iovec iov = {.iov_base = big + at, .iov_len = k};
        jn_amqp_tracer_feed(&t, &iov, 1, k, sink, &l);
    }
    assert_int_equal(l.count, 2);
    assert_non_null(strstr(l.text, "octets, not traced)\n0 <- (EMPTY FRAME)\n"));
    free(big);
    jn_amqp_tracer_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_whole_and_split),
        cmocka_unit_test(test_arrays_maps_symbols_and_nested),
        cmocka_unit_test(test_long_line_truncated),
        cmocka_unit_test(test_not_amqp_stops_and_off_reads_nothing),
        cmocka_unit_test(test_frame_too_large_passed_over),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
