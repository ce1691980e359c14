/*
 * bench_amqp_engine.c — micro-benchmark of Junction's own AMQP 1.0 engine
 * (router/amqp, docs/engine.md) on one thread: what one hop costs the
 * engine per message, without sockets, threads or the core.
 *
 * Two engines, a sender end A and a receiver end B, are opened to each
 * other with one session and one link. Each batch, A sends BATCH
 * unsettled deliveries of a typical message (header, message annotations
 * with an ingress and a trace, properties, a 100-octet body: 206 octets);
 * A's output (a run list, as one writev would take it) is copied into one
 * input area as recv() would leave it and read by B; B's on_transfer
 * accepts and settles each delivery; B tops the credit and the session's
 * incoming window up; B's output (the dispositions, as ranges, and the
 * flow) is read by A, whose on_disposition settles each delivery. So one
 * message costs both engines' halves of what a router does with it per
 * hop: a transfer parsed in and one composed out, a disposition composed
 * and one parsed, and a share of a flow.
 *
 * Usage: bench_amqp_engine [MESSAGES] (default 1,000,000). Prints ns per
 * message. Under callgrind, the instructions of the batches alone:
 *   valgrind --tool=callgrind --toggle-collect=bench_batch \
 *       build/bench_amqp_engine 100000
 * and the total Ir divided by MESSAGES is the engine's cost per message.
 */
#include "bench_typical_message.h"

#include <junction/amqp_delivery.h>
#include <junction/encoder.h>
#include <junction/message.h>
#include <sys/uio.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 100
#define CREDIT 1000
#define WINDOW 10000

typedef struct end {
    jn_amqp_conn_t *c;
    jn_amqp_link_t *link;
    jn_amqp_session_t *session;
    uint64_t transfers, dispositions;
    jn_amqp_state_t accepted;
} end_t;

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_amqp_engine: %s failed (%d)\n", what, rc);
    exit(1);
}

static void on_open(void *ctx, jn_amqp_conn_t *c, const jn_amqp_open_t *o)
{
    (void)ctx;
    (void)o;
    (void)jn_amqp_conn_open(c); /* JN_EPERM when it answers ours */
}

static void on_begin(void *ctx, jn_amqp_session_t *s, const jn_amqp_begin_t *b)
{
    end_t *e = ctx;
    e->session = s;
    if (!(b->present & JN_AMQP_FIELD(0)) && jn_amqp_session_begin(s, 0, WINDOW, WINDOW) != 0)
        die("begin", 0);
}

static void on_attach(void *ctx, jn_amqp_link_t *l, const jn_amqp_attach_t *a)
{
    end_t *e = ctx;
    e->link = l;
    jn_amqp_attach_t answer = *a;
    answer.present &= JN_AMQP_FIELD(5) | JN_AMQP_FIELD(6);
    (void)jn_amqp_link_attach(l, &answer, 0); /* JN_EPERM when it answers ours */
}

static void on_transfer(void *ctx, jn_amqp_link_t *l, jn_amqp_delivery_t *d,
                        const jn_amqp_transfer_t *t, const jn_iter_t *payload)
{
    end_t *e = ctx;
    (void)l;
    (void)t;
    (void)payload;
    e->transfers++;
    int rc = jn_amqp_delivery_update(d, &e->accepted, true);
    if (rc != 0)
        die("accept", rc);
}

static void on_disposition(void *ctx, jn_amqp_delivery_t *d, const jn_amqp_disposition_t *disp)
{
    end_t *e = ctx;
    (void)disp;
    e->dispositions++;
    int rc = jn_amqp_delivery_update(d, NULL, true);
    if (rc != 0)
        die("settle", rc);
}

static void end_init(end_t *e, const char *id)
{
    memset(e, 0, sizeof *e);
    e->accepted.code = JN_AMQP_ACCEPTED;
    jn_amqp_conn_config_t cfg = {.container_id = id, .max_frame_size = 16384, .channel_max = 255};
    jn_amqp_handler_t h = {.ctx = e,
                           .on_open = on_open,
                           .on_begin = on_begin,
                           .on_attach = on_attach,
                           .on_transfer = on_transfer,
                           .on_disposition = on_disposition};
    e->c = jn_amqp_conn_new(&cfg, &h);
    if (!e->c)
        die("jn_amqp_conn_new", 0);
}

/* The wire between the two: what from wrote, as one recv() would give it. */
static uint8_t wire[1 << 20];

/* Carry from's whole output into to's input. Returns the octets moved. */
static size_t carry(end_t *from, end_t *to)
{
    struct iovec iov[256];
    size_t len = 0;
    int n;
    while ((n = jn_amqp_conn_output_iov(from->c, iov, 256)) > 0) {
        size_t took = 0;
        for (int i = 0; i < n && len + iov[i].iov_len <= sizeof wire; i++) {
            memcpy(wire + len, iov[i].iov_base, iov[i].iov_len);
            len += iov[i].iov_len;
            took += iov[i].iov_len;
        }
        jn_amqp_conn_output_done(from->c, took);
        if (took == 0)
            die("carry (the wire is full)", 0);
    }
    size_t done = 0;
    while (done < len) {
        jn_iter_t in;
        jn_iter_init_bytes(&in, wire + done, len - done, JN_VIEW_RAW);
        size_t consumed = 0;
        int rc = jn_amqp_conn_input(to->c, &in, 0, &consumed);
        if (rc < 0)
            die("jn_amqp_conn_input", rc);
        if (consumed == 0)
            die("jn_amqp_conn_input (no progress)", 0);
        done += consumed;
    }
    return len;
}

static uint8_t msg[512];
static size_t msg_len;

/* One batch: A sends BATCH deliveries, B accepts and settles them and tops
 * credit and window up, A settles. The function callgrind counts. */
__attribute__((noinline)) void bench_batch(end_t *a, end_t *b, uint64_t first)
{
    for (int k = 0; k < BATCH; k++) {
        uint64_t tag = first + (uint64_t)k;
        jn_amqp_delivery_t *d;
        int rc = jn_amqp_delivery_new(a->link, &tag, sizeof tag, 0, false, &d);
        if (rc != 0)
            die("jn_amqp_delivery_new", rc);
        jn_iter_t piece;
        jn_iter_init_bytes(&piece, msg, msg_len, JN_VIEW_RAW);
        size_t taken;
        if (jn_amqp_delivery_send(d, &piece, 1, false, &taken) != 1)
            die("jn_amqp_delivery_send", 0);
    }
    carry(a, b);
    if (jn_amqp_link_state(b->link).credit < CREDIT / 2 &&
        jn_amqp_link_flow(b->link, CREDIT, false, false) != 0)
        die("jn_amqp_link_flow", 0);
    if (jn_amqp_session_window(b->session).incoming_window < WINDOW / 2 &&
        jn_amqp_session_set_incoming_window(b->session, WINDOW) != 0)
        die("jn_amqp_session_set_incoming_window", 0);
    carry(b, a);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    n = (n + BATCH - 1) / BATCH * BATCH;
    msg_len = bench_typical_message(msg, sizeof msg);
    if (msg_len == 0)
        die("bench_typical_message", 0);
    end_t a, b;
    end_init(&a, "sender-end");
    end_init(&b, "receiver-end");
    if (jn_amqp_conn_open(a.c) != 0)
        die("open", 0);
    jn_amqp_session_t *s = jn_amqp_session_new(a.c);
    if (!s || jn_amqp_session_begin(s, 0, WINDOW, WINDOW) != 0)
        die("session", 0);
    a.link = jn_amqp_link_new(s, "bench", JN_AMQP_SENDER);
    if (!a.link || jn_amqp_link_attach(a.link, &(jn_amqp_attach_t){0}, 0) != 0)
        die("attach", 0);
    for (int i = 0; i < 4; i++) {
        carry(&a, &b);
        carry(&b, &a);
    }
    if (!b.link || jn_amqp_link_flow(b.link, CREDIT, false, false) != 0)
        die("first credit", 0);
    carry(&b, &a);
    double t0 = now_ns();
    for (uint64_t i = 0; i < n; i += BATCH)
        bench_batch(&a, &b, i);
    double t1 = now_ns();
    if (b.transfers != n || a.dispositions != n) {
        fprintf(stderr, "bench_amqp_engine: %llu transfers, %llu dispositions of %llu\n",
                (unsigned long long)b.transfers, (unsigned long long)a.dispositions,
                (unsigned long long)n);
        return 1;
    }
    printf("| engine, one hop (%zu-octet message, batches of %d) | %.1f ns/msg |\n", msg_len,
           BATCH, (t1 - t0) / (double)n);
    jn_amqp_conn_free(a.c);
    jn_amqp_conn_free(b.c);
    return 0;
}
