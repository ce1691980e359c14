/*
 * test_amqp_conn.c — the connection engine's connection layer
 * (junction/amqp_engine.h; AMQP 1.0 2.2, 2.4, 2.7.1, 2.7.9): the protocol
 * header exchange, open both ways with max-frame-size, channel-max and
 * idle-time-out, close both ways with errors, heartbeats and the idle
 * close driven by the caller's tick, and each fault in the peer's input
 * closing with the spec's condition. Two engines talk through buffers of
 * 1, 2, 3 and 7 octets as well as whole runs.
 */
#include "test_amqp_engine_util.h"

static const size_t chunks[] = {0, 1, 2, 3, 7};
#define NCHUNKS (sizeof chunks / sizeof chunks[0])

static void test_open_both_ways_with_limits(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCHUNKS; i++) {
        peer_t a, b;
        peer_init(&a, "client", 4096, 7, 0);
        peer_init(&b, "server", 100000, 300, 30000);
        a.chunk = b.chunk = chunks[i];
        assert_int_equal(jn_amqp_conn_remote_max_frame(a.c), 512); /* before open, 2.4.1 */
        assert_int_equal(jn_amqp_conn_open(a.c), 0);
        assert_int_equal(jn_amqp_conn_open(a.c), JN_EPERM);
        pump(&a, &b);
        assert_int_equal(a.opens, 1);
        assert_int_equal(b.opens, 1);
        assert_int_equal(jn_amqp_conn_remote_max_frame(b.c), 4096);
        assert_int_equal(jn_amqp_conn_remote_channel_max(b.c), 7);
        assert_int_equal(jn_amqp_conn_remote_idle_time_out(b.c), 0);
        assert_int_equal(jn_amqp_conn_remote_max_frame(a.c), 100000);
        assert_int_equal(jn_amqp_conn_remote_channel_max(a.c), 300);
        assert_int_equal(jn_amqp_conn_remote_idle_time_out(a.c), 30000);
        assert_false(jn_amqp_conn_finished(a.c));
        peer_free(&a);
        peer_free(&b);
    }
}

/* jn_amqp_conn_set_limits: before our open, the limits it announces (a
 * max-frame-size under 512 raised to 512; 0 and -1 keep the configured
 * ones); after it, JN_EPERM (a vhost group's limits, decided at the peer's
 * open, io_own.c). */
static void test_set_limits_before_our_open(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCHUNKS; i++) {
        peer_t a, b;
        peer_init(&a, "client", 4096, 7, 0);
        peer_init(&b, "server", 100000, 300, 0);
        a.chunk = b.chunk = chunks[i];
        assert_int_equal(jn_amqp_conn_set_limits(a.c, 200, 2), 0);
        assert_int_equal(jn_amqp_conn_set_limits(b.c, 0, -1), 0); /* both kept */
        assert_int_equal(jn_amqp_conn_open(a.c), 0);
        assert_int_equal(jn_amqp_conn_set_limits(a.c, 8192, 9), JN_EPERM);
        pump(&a, &b);
        assert_int_equal(b.opens, 1);
        assert_int_equal(jn_amqp_conn_remote_max_frame(b.c), 512);
        assert_int_equal(jn_amqp_conn_remote_channel_max(b.c), 2);
        assert_int_equal(jn_amqp_conn_remote_max_frame(a.c), 100000);
        assert_int_equal(jn_amqp_conn_remote_channel_max(a.c), 300);
        peer_free(&a);
        peer_free(&b);
    }
}

static void test_close_both_ways_with_error(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCHUNKS; i++) {
        peer_t a, b;
        open_pair(&a, &b, chunks[i]);
        assert_int_equal(jn_amqp_conn_close(a.c, "amqp:internal-error", "shutting down"), 0);
        assert_int_equal(jn_amqp_conn_close(a.c, NULL, NULL), JN_EPERM);
        pump(&a, &b);
        assert_int_equal(b.closes, 1);
        assert_string_equal(b.condition, "amqp:internal-error");
        assert_int_equal(a.closes, 1); /* b answered on its own */
        assert_string_equal(a.condition, "");
        assert_true(jn_amqp_conn_finished(a.c));
        assert_true(jn_amqp_conn_finished(b.c));
        assert_int_equal(a.closed + b.closed, 0);
        peer_free(&a);
        peer_free(&b);
    }
}

static void test_close_before_open_sends_open_first(void **state)
{
    (void)state;
    peer_t a;
    peer_init(&a, "client", 4096, 7, 0);
    assert_int_equal(jn_amqp_conn_close(a.c, NULL, NULL), 0);
    uint64_t codes[4];
    assert_int_equal(out_frames(&a, codes, 4, NULL, 0), 2);
    assert_int_equal(codes[0], JN_AMQP_OPEN);
    assert_int_equal(codes[1], JN_AMQP_CLOSE);
    peer_free(&a);
}

static void test_protocol_header_not_amqp_answered_and_refused(void **state)
{
    (void)state;
    const char *bad[] = {"AMQP\x03\x01\x00\x00", "AMQP\x02\x01\x00\x00", "HTTP/1.1"};
    for (size_t i = 0; i < 3; i++) {
        peer_t x;
        peer_init(&x, "server", 4096, 7, 0);
        assert_int_equal(peer_input(&x, bad[i], 8), JN_EPROTO);
        assert_int_equal(x.closed, 1);
        assert_string_equal(x.condition, "amqp:connection:framing-error");
        size_t len;
        const uint8_t *out = jn_amqp_conn_output(x.c, &len);
        assert_int_equal(len, 8); /* our header and nothing more (2.2) */
        assert_memory_equal(out, "AMQP\x00\x01\x00\x00", 8);
        assert_true(jn_amqp_conn_finished(x.c));
        assert_int_equal(jn_amqp_conn_open(x.c), JN_EPERM);
        peer_free(&x);
    }
}

static void test_partial_header_waits(void **state)
{
    (void)state;
    peer_t x;
    peer_init(&x, "server", 4096, 7, 0);
    assert_int_equal(peer_input(&x, "AMQ", 3), 0);
    assert_int_equal(x.npending, 3);
    size_t len;
    (void)jn_amqp_conn_output(x.c, &len);
    assert_int_equal(len, 0);
    assert_int_equal(peer_input(&x, "P\x00\x01\x00\x00", 5), 0);
    assert_int_equal(x.npending, 0);
    (void)jn_amqp_conn_output(x.c, &len);
    assert_int_equal(len, 8); /* answered with our header */
    peer_free(&x);
}

/* A fault refuses the input: the engine closes with condition. */
static void expect_refused(peer_t *x, int rc, const char *condition)
{
    assert_int_equal(rc, JN_EPROTO);
    assert_int_equal(x->closed, 1);
    assert_string_equal(x->condition, condition);
    assert_string_equal(jn_amqp_conn_fault(x->c)->condition, condition);
    uint64_t codes[8];
    char err[64] = "";
    int n = out_frames(x, codes, 8, err, sizeof err);
    assert_true(n >= 1);
    assert_int_equal(codes[n - 1], JN_AMQP_CLOSE);
    assert_string_equal(err, condition);
    assert_true(jn_amqp_conn_finished(x->c));
    assert_int_equal(peer_input(x, "\0\0\0\x08\x02\0\0\0", 8), JN_EPROTO); /* ignored */
    assert_int_equal(x->npending, 0);
}

static void test_frame_before_open_is_illegal_state(void **state)
{
    (void)state;
    peer_t x;
    peer_init(&x, "server", 4096, 7, 0);
    assert_int_equal(peer_input(&x, "AMQP\x00\x01\x00\x00", 8), 0);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_BEGIN);
    p.u.begin.present = JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2) | JN_AMQP_FIELD(3);
    expect_refused(&x, raw_send(&x, 0, &p), "amqp:illegal-state");
    peer_free(&x);
}

static void test_second_open_is_illegal_state(void **state)
{
    (void)state;
    peer_t x;
    peer_init(&x, "server", 4096, 7, 0);
    raw_open(&x, 4096, 7, 0);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_OPEN);
    p.u.open.present = JN_AMQP_FIELD(0);
    jn_iter_init_string(&p.u.open.container_id, "again", JN_VIEW_RAW);
    expect_refused(&x, raw_send(&x, 0, &p), "amqp:illegal-state");
    peer_free(&x);
}

static void test_framing_violations_are_framing_error(void **state)
{
    (void)state;
    static const uint8_t frames[][8] = {
        {0, 0, 0x10, 0x01, 2, 0, 0, 0}, /* 4097 octets: above our max-frame-size */
        {0, 0, 0, 7, 2, 0, 0, 0},       /* below 8 */
        {0, 0, 0, 8, 1, 0, 0, 0},       /* data offset below 2 */
        {0, 0, 0, 8, 2, 1, 0, 0},       /* a SASL frame in the AMQP layer */
        {0, 0, 0, 8, 2, 0, 0, 8},       /* channel 8 above our channel-max 7 */
    };
    for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++) {
        peer_t x;
        peer_init(&x, "server", 4096, 7, 0);
        raw_open(&x, 4096, 7, 0);
        expect_refused(&x, peer_input(&x, frames[i], 8), "amqp:connection:framing-error");
        peer_free(&x);
    }
}

static void test_undecodable_body_is_decode_error(void **state)
{
    (void)state;
    peer_t x;
    peer_init(&x, "server", 4096, 7, 0);
    raw_open(&x, 4096, 7, 0);
    const uint8_t f[] = {0, 0, 0, 12, 2, 0, 0, 0, 0x00, 0x53, 0x11, 0xd0}; /* cut short */
    expect_refused(&x, peer_input(&x, f, sizeof f), "amqp:decode-error");
    peer_free(&x);
}

static void test_open_below_min_frame_is_invalid_field(void **state)
{
    (void)state;
    const uint32_t sizes[] = {511, 1}; /* our open and close still go out, within 512 */
    for (size_t i = 0; i < 2; i++) {
        peer_t x;
        peer_init(&x, "server", 4096, 7, 0);
        assert_int_equal(peer_input(&x, "AMQP\x00\x01\x00\x00", 8), 0);
        jn_amqp_perf_t p;
        jn_amqp_perf_init(&p, JN_AMQP_OPEN);
        p.u.open.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(2);
        jn_iter_init_string(&p.u.open.container_id, "raw", JN_VIEW_RAW);
        p.u.open.max_frame_size = sizes[i];
        expect_refused(&x, raw_send(&x, 0, &p), "amqp:invalid-field");
        assert_int_equal(jn_amqp_conn_remote_max_frame(x.c), 512);
        peer_free(&x);
    }
}

static void test_transfer_without_session_is_illegal_state(void **state)
{
    (void)state;
    peer_t x;
    peer_init(&x, "server", 4096, 7, 0);
    raw_open(&x, 4096, 7, 0);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_TRANSFER);
    p.u.transfer.present = JN_AMQP_FIELD(0);
    expect_refused(&x, raw_send(&x, 0, &p), "amqp:illegal-state");
    peer_free(&x);
}

static void test_frames_after_close_sent_are_dropped(void **state)
{
    (void)state;
    peer_t x;
    peer_init(&x, "server", 4096, 7, 0);
    raw_open(&x, 4096, 7, 0);
    assert_int_equal(jn_amqp_conn_close(x.c, NULL, NULL), 0);
    (void)out_frames(&x, (uint64_t[4]){0}, 4, NULL, 0);
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_TRANSFER);
    p.u.transfer.present = JN_AMQP_FIELD(0);
    assert_int_equal(raw_send(&x, 0, &p), 0); /* not refused: dropped (2.4.3) */
    assert_false(jn_amqp_conn_finished(x.c));
    jn_amqp_perf_init(&p, JN_AMQP_CLOSE);
    assert_int_equal(raw_send(&x, 0, &p), 0);
    assert_true(jn_amqp_conn_finished(x.c));
    assert_int_equal(out_frames(&x, (uint64_t[4]){0}, 4, NULL, 0), 0); /* not answered twice */
    peer_free(&x);
}

static void test_idle_peer_closed_with_resource_limit_exceeded(void **state)
{
    (void)state;
    peer_t x;
    peer_init(&x, "server", 4096, 7, 1000);
    x.now = 5000;
    x.answer = false;
    raw_open(&x, 4096, 7, 0);
    assert_int_equal(jn_amqp_conn_tick(x.c, 5000), UINT64_MAX); /* not open yet: no timer */
    assert_int_equal(jn_amqp_conn_open(x.c), 0);
    (void)out_frames(&x, (uint64_t[4]){0}, 4, NULL, 0);
    assert_int_equal(jn_amqp_conn_tick(x.c, 5500), 6000);
    x.now = 5900;
    assert_int_equal(peer_input(&x, "\0\0\0\x08\x02\0\0\0", 8), 0); /* a heartbeat */
    assert_int_equal(jn_amqp_conn_tick(x.c, 6000), 6900);
    assert_int_equal(x.closed, 0);
    assert_int_equal(jn_amqp_conn_tick(x.c, 6900), UINT64_MAX);
    assert_int_equal(x.closed, 1);
    assert_string_equal(x.condition, "amqp:resource-limit-exceeded");
    char err[64];
    uint64_t codes[4];
    assert_int_equal(out_frames(&x, codes, 4, err, sizeof err), 1);
    assert_int_equal(codes[0], JN_AMQP_CLOSE);
    assert_string_equal(err, "amqp:resource-limit-exceeded");
    assert_true(jn_amqp_conn_finished(x.c));
    peer_free(&x);
}

static void test_heartbeat_at_half_the_peers_idle_time_out(void **state)
{
    (void)state;
    peer_t x;
    peer_init(&x, "server", 4096, 7, 0);
    x.now = 100;
    x.answer = false;
    raw_open(&x, 4096, 7, 1000);
    assert_int_equal(jn_amqp_conn_open(x.c), 0); /* last sent at 100 */
    (void)out_frames(&x, (uint64_t[4]){0}, 4, NULL, 0);
    assert_int_equal(jn_amqp_conn_tick(x.c, 300), 600);
    size_t len;
    (void)jn_amqp_conn_output(x.c, &len);
    assert_int_equal(len, 0);
    assert_int_equal(jn_amqp_conn_tick(x.c, 600), 1100);
    uint64_t codes[4];
    assert_int_equal(out_frames(&x, codes, 4, NULL, 0), 1);
    assert_int_equal(codes[0], 0); /* an empty frame (2.4.5) */
    peer_free(&x);
}

/* Our open may announce less than our limit (as proton's server announces
 * half of it, so a peer has slack): the peer is told the announced value,
 * and we close only after the limit. */
static void test_idle_time_out_announced_below_our_limit(void **state)
{
    (void)state;
    peer_t a, x;
    peer_init(&a, "client", 4096, 7, 0);
    memset(&x, 0, sizeof x);
    x.answer = true;
    jn_amqp_conn_config_t cfg = {.container_id = "server",
                                 .max_frame_size = 4096,
                                 .channel_max = 7,
                                 .idle_time_out = 2000,
                                 .idle_time_out_announced = 1000};
    jn_amqp_handler_t h = {.ctx = &x, .on_open = ev_open, .on_closed = ev_closed};
    x.c = jn_amqp_conn_new(&cfg, &h);
    assert_non_null(x.c);
    assert_int_equal(jn_amqp_conn_open(a.c), 0);
    pump(&a, &x);
    assert_int_equal(x.opens, 1);
    assert_int_equal(jn_amqp_conn_remote_idle_time_out(a.c), 1000);
    assert_int_equal(jn_amqp_conn_tick(x.c, 1500), 2000); /* past the announced: still open */
    assert_int_equal(x.closed, 0);
    assert_int_equal(jn_amqp_conn_tick(x.c, 2000), UINT64_MAX); /* the limit */
    assert_int_equal(x.closed, 1);
    assert_string_equal(x.condition, "amqp:resource-limit-exceeded");
    peer_free(&a);
    peer_free(&x);
}

/* Our open carries the offered and desired capabilities and properties the
 * config gives (copied), encoded as given (2.7.1). */
static void test_open_carries_capabilities_and_properties(void **state)
{
    (void)state;
    static const uint8_t caps[] = {0xa3, 15, 'A', 'N', 'O', 'N', 'Y', 'M', 'O', 'U',
                                   'S', '-', 'R', 'E', 'L', 'A', 'Y'};
    static const uint8_t props[] = {0xc1, 0x0b, 0x02, 0xa3, 0x07, 'p', 'r',
                                    'o', 'd', 'u', 'c', 't', 0x43};
    uint8_t copy[sizeof props];
    memcpy(copy, props, sizeof copy);
    peer_t x;
    memset(&x, 0, sizeof x);
    x.answer = true;
    jn_amqp_conn_config_t cfg = {.container_id = "server",
                                 .max_frame_size = 4096,
                                 .channel_max = 7,
                                 .offered_capabilities = caps,
                                 .offered_capabilities_len = sizeof caps,
                                 .desired_capabilities = caps,
                                 .desired_capabilities_len = sizeof caps,
                                 .properties = copy,
                                 .properties_len = sizeof copy};
    jn_amqp_handler_t h = {.ctx = &x, .on_open = ev_open, .on_closed = ev_closed};
    x.c = jn_amqp_conn_new(&cfg, &h);
    assert_non_null(x.c);
    memset(copy, 0, sizeof copy); /* the engine kept its own */
    raw_open(&x, 4096, 7, 0);
    static uint8_t out[4096];
    size_t len = take_all(&x, out, sizeof out);
    jn_iter_t it;
    jn_iter_init_bytes(&it, out, len, JN_VIEW_RAW);
    jn_iter_advance(&it, JN_AMQP_HEADER_SIZE);
    jn_amqp_frame_t f;
    jn_amqp_fault_t fault;
    assert_int_equal(jn_amqp_frame_read(&it, JN_AMQP_FRAME_AMQP, 65536, 7, &f, &fault), 1);
    jn_amqp_perf_t p;
    assert_int_equal(jn_amqp_perf_decode(&f.body, JN_AMQP_FRAME_AMQP, &p, NULL, &fault), 0);
    assert_int_equal(p.code, JN_AMQP_OPEN);
    uint32_t bits = JN_AMQP_FIELD(7) | JN_AMQP_FIELD(8) | JN_AMQP_FIELD(9);
    assert_int_equal(p.u.open.present & bits, bits);
    uint8_t got[64];
    jn_iter_t v = p.u.open.offered_capabilities;
    assert_int_equal(jn_iter_copy(&v, got, sizeof got), sizeof caps);
    assert_memory_equal(got, caps, sizeof caps);
    v = p.u.open.properties;
    assert_int_equal(jn_iter_copy(&v, got, sizeof got), sizeof props);
    assert_memory_equal(got, props, sizeof props);
    peer_free(&x);
}

static void test_peer_idle_time_out_below_the_floor_refused(void **state)
{
    (void)state;
    const uint32_t asked[] = {0, 1, 99, 100, 5000};
    const bool refused[] = {false, true, true, false, false};
    for (size_t i = 0; i < 5; i++) {
        peer_t x;
        jn_amqp_conn_config_t cfg = {.container_id = "server",
                                     .max_frame_size = 4096,
                                     .channel_max = 7,
                                     .min_peer_idle_time_out = 100};
        jn_amqp_handler_t h = {.ctx = &x, .on_closed = ev_closed};
        memset(&x, 0, sizeof x);
        x.c = jn_amqp_conn_new(&cfg, &h);
        assert_non_null(x.c);
        uint8_t hdr[8];
        jn_amqp_header_write(hdr, JN_AMQP_PROTO_AMQP);
        assert_int_equal(peer_input(&x, hdr, 8), 0);
        jn_amqp_perf_t p;
        jn_amqp_perf_init(&p, JN_AMQP_OPEN);
        p.u.open.present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(4);
        jn_iter_init_string(&p.u.open.container_id, "raw", JN_VIEW_RAW);
        p.u.open.idle_time_out = asked[i];
        int rc = raw_send(&x, 0, &p);
        if (refused[i]) {
            expect_refused(&x, rc, "amqp:resource-limit-exceeded");
            assert_int_equal(jn_amqp_conn_tick(x.c, 10000), UINT64_MAX); /* no heartbeats */
            /* the refused value stays known: the user tells this refusal apart */
            assert_int_equal(jn_amqp_conn_remote_idle_time_out(x.c), asked[i]);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(jn_amqp_conn_remote_idle_time_out(x.c), asked[i]);
        }
        peer_free(&x);
    }
}

static void test_frames_fit_the_peers_max_frame_size(void **state)
{
    (void)state;
    char host[600];
    memset(host, 'h', sizeof host - 1);
    host[sizeof host - 1] = 0;
    jn_amqp_conn_config_t cfg = {
        .container_id = "c", .hostname = host, .max_frame_size = 4096, .channel_max = 7};
    jn_amqp_conn_t *c = jn_amqp_conn_new(&cfg, NULL);
    assert_non_null(c);
    /* before the peer's open its max-frame-size is 512 (2.4.1) */
    assert_int_equal(jn_amqp_conn_open(c), JN_EOVERFLOW);
    size_t len;
    (void)jn_amqp_conn_output(c, &len);
    assert_int_equal(len, 8); /* the header only: the frame was taken back */
    jn_amqp_conn_free(c);
    cfg.max_frame_size = 511;
    assert_null(jn_amqp_conn_new(&cfg, NULL));
}

static void test_output_taken_in_parts(void **state)
{
    (void)state;
    peer_t a;
    peer_init(&a, "client", 4096, 7, 0);
    assert_int_equal(jn_amqp_conn_open(a.c), 0);
    size_t len, len2;
    const uint8_t *out = jn_amqp_conn_output(a.c, &len);
    uint8_t copy[256];
    assert_true(len <= sizeof copy);
    memcpy(copy, out, len);
    jn_amqp_conn_output_done(a.c, 3);
    out = jn_amqp_conn_output(a.c, &len2);
    assert_int_equal(len2, len - 3);
    assert_memory_equal(out, copy + 3, len2);
    jn_amqp_conn_output_done(a.c, len2 + 10);
    (void)jn_amqp_conn_output(a.c, &len2);
    assert_int_equal(len2, 0);
    peer_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_both_ways_with_limits),
        cmocka_unit_test(test_set_limits_before_our_open),
        cmocka_unit_test(test_close_both_ways_with_error),
        cmocka_unit_test(test_close_before_open_sends_open_first),
        cmocka_unit_test(test_protocol_header_not_amqp_answered_and_refused),
        cmocka_unit_test(test_partial_header_waits),
        cmocka_unit_test(test_frame_before_open_is_illegal_state),
        cmocka_unit_test(test_second_open_is_illegal_state),
        cmocka_unit_test(test_framing_violations_are_framing_error),
        cmocka_unit_test(test_undecodable_body_is_decode_error),
        cmocka_unit_test(test_open_below_min_frame_is_invalid_field),
        cmocka_unit_test(test_transfer_without_session_is_illegal_state),
        cmocka_unit_test(test_frames_after_close_sent_are_dropped),
        cmocka_unit_test(test_idle_peer_closed_with_resource_limit_exceeded),
        cmocka_unit_test(test_heartbeat_at_half_the_peers_idle_time_out),
        cmocka_unit_test(test_idle_time_out_announced_below_our_limit),
        cmocka_unit_test(test_open_carries_capabilities_and_properties),
        cmocka_unit_test(test_peer_idle_time_out_below_the_floor_refused),
        cmocka_unit_test(test_frames_fit_the_peers_max_frame_size),
        cmocka_unit_test(test_output_taken_in_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
