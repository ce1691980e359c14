/*
 * bench_proton_engine.c — the same one-hop exchange as bench_amqp_engine.c,
 * on proton's engine (pn_connection_driver, no I/O), as junctiond drives it
 * today: so that the two engines are compared on the same work.
 *
 * Two drivers, a sender end A and a receiver end B, are opened to each
 * other with one session and one link. Each batch, A sends BATCH unsettled
 * deliveries of the same 206-octet message (pn_delivery, pn_link_send,
 * pn_link_advance); A's output is copied into B's input buffer as recv()
 * would leave it; B reads each delivery (pn_link_recv into its own
 * buffer, as the router does), accepts and settles it and tops credit up;
 * B's output goes back to A, which settles each delivery the peer settled.
 * Events are drained from each driver's collector after each transfer of
 * octets, as the router's I/O loop does.
 *
 * Usage: bench_proton_engine [MESSAGES] (default 1,000,000). Under
 * callgrind:
 *   valgrind --tool=callgrind --toggle-collect=bench_batch \
 *       build/bench_proton_engine 20000
 * and the total Ir divided by MESSAGES is proton's cost per message.
 */
#include "bench_typical_message.h"

#include <proton/connection.h>
#include <proton/connection_driver.h>
#include <proton/delivery.h>
#include <proton/event.h>
#include <proton/link.h>
#include <proton/session.h>
#include <proton/terminus.h>
#include <proton/transport.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 100
#define CREDIT 1000

typedef struct end {
    pn_connection_driver_t d;
    pn_link_t *link;
    unsigned long transfers, settles;
    char rx[2048];
} end_t;

static unsigned char message[512];
static size_t message_len;

static void die(const char *what)
{
    fprintf(stderr, "bench_proton_engine: %s\n", what);
    exit(1);
}

/* Handle every event end e's collector holds. */
static void events(end_t *e, int is_sender)
{
    pn_event_t *ev;
    while ((ev = pn_connection_driver_next_event(&e->d)) != NULL) {
        switch (pn_event_type(ev)) {
        case PN_CONNECTION_REMOTE_OPEN:
            if (pn_connection_state(pn_event_connection(ev)) & PN_LOCAL_UNINIT)
                pn_connection_open(pn_event_connection(ev));
            break;
        case PN_SESSION_REMOTE_OPEN:
            if (pn_session_state(pn_event_session(ev)) & PN_LOCAL_UNINIT) {
                pn_session_set_incoming_capacity(pn_event_session(ev), 16 * 1024 * 1024);
                pn_session_open(pn_event_session(ev));
            }
            break;
        case PN_LINK_REMOTE_OPEN: {
            pn_link_t *l = pn_event_link(ev);
            if (pn_link_state(l) & PN_LOCAL_UNINIT) {
                pn_terminus_copy(pn_link_source(l), pn_link_remote_source(l));
                pn_terminus_copy(pn_link_target(l), pn_link_remote_target(l));
                pn_link_open(l);
                e->link = l;
                if (pn_link_is_receiver(l))
                    pn_link_flow(l, CREDIT);
            }
            break;
        }
        case PN_DELIVERY: {
            pn_delivery_t *dl = pn_event_delivery(ev);
            if (is_sender) {
                if (pn_delivery_remote_state(dl) || pn_delivery_settled(dl)) {
                    pn_delivery_settle(dl);
                    e->settles++;
                }
            } else if (pn_delivery_readable(dl) && !pn_delivery_partial(dl)) {
                pn_link_t *l = pn_delivery_link(dl);
                ssize_t n = pn_link_recv(l, e->rx, sizeof e->rx);
                if (n != (ssize_t)message_len)
                    die("short receive");
                pn_link_advance(l);
                pn_delivery_update(dl, PN_ACCEPTED);
                pn_delivery_settle(dl);
                e->transfers++;
                if (pn_link_credit(l) < CREDIT / 2)
                    pn_link_flow(l, CREDIT - pn_link_credit(l));
            }
            break;
        }
        default:
            break;
        }
    }
}

/* Carry from's output into to's input; handle both ends' events. */
static void carry(end_t *from, int from_sender, end_t *to, int to_sender)
{
    events(from, from_sender);
    for (;;) {
        pn_bytes_t out = pn_connection_driver_write_buffer(&from->d);
        if (out.size == 0)
            break;
        size_t done = 0;
        while (done < out.size) {
            pn_rwbytes_t in = pn_connection_driver_read_buffer(&to->d);
            if (in.size == 0)
                die("the reader takes nothing");
            size_t n = out.size - done < in.size ? out.size - done : in.size;
            memcpy(in.start, out.start + done, n);
            pn_connection_driver_read_done(&to->d, n);
            done += n;
            events(to, to_sender);
        }
        pn_connection_driver_write_done(&from->d, out.size);
        events(from, from_sender);
    }
}

/* One batch: A sends BATCH deliveries, B accepts and settles them, A
 * settles. The function callgrind counts. */
__attribute__((noinline)) void bench_batch(end_t *a, end_t *b, unsigned long first)
{
    for (int k = 0; k < BATCH; k++) {
        unsigned long tag = first + (unsigned long)k;
        pn_delivery_t *dl = pn_delivery(a->link, pn_dtag((const char *)&tag, sizeof tag));
        if (pn_link_send(a->link, (const char *)message, message_len) != (ssize_t)message_len)
            die("pn_link_send");
        (void)dl;
        pn_link_advance(a->link);
    }
    carry(a, 1, b, 0);
    carry(b, 0, a, 1);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
    n = (n + BATCH - 1) / BATCH * BATCH;
    message_len = bench_typical_message(message, sizeof message);
    if (message_len == 0)
        die("bench_typical_message");
    end_t a = {0}, b = {0};
    if (pn_connection_driver_init(&a.d, NULL, NULL) != 0 ||
        pn_connection_driver_init(&b.d, NULL, NULL) != 0)
        die("pn_connection_driver_init");
    pn_transport_set_server(b.d.transport);
    pn_connection_set_container(a.d.connection, "sender-end");
    pn_connection_set_container(b.d.connection, "receiver-end");
    pn_connection_open(a.d.connection);
    pn_session_t *s = pn_session(a.d.connection);
    pn_session_open(s);
    a.link = pn_sender(s, "bench");
    pn_terminus_set_address(pn_link_target(a.link), "q");
    pn_link_open(a.link);
    for (int i = 0; i < 4; i++) {
        carry(&a, 1, &b, 0);
        carry(&b, 0, &a, 1);
    }
    if (pn_link_credit(a.link) != CREDIT)
        die("no credit");
    double t0 = now_ns();
    for (unsigned long i = 0; i < n; i += BATCH)
        bench_batch(&a, &b, i);
    double t1 = now_ns();
    if (b.transfers != n || a.settles != n) {
        fprintf(stderr, "bench_proton_engine: %lu transfers, %lu settled of %lu\n", b.transfers,
                a.settles, n);
        return 1;
    }
    printf("| proton's engine, one hop (%zu-octet message, batches of %d) | %.1f ns/msg |\n",
           message_len, BATCH, (t1 - t0) / (double)n);
    pn_connection_driver_destroy(&a.d);
    pn_connection_driver_destroy(&b.d);
    return 0;
}
