/*
 * receiver.c — the receiving side of a run (bench.h).
 *
 * A receiver is one receiving link: on its own connection to a router, or
 * (with --direct) a link a sender attached to our listener. It keeps
 * --window credit granted, topping it up when half is used, reads each
 * complete delivery into a reusable buffer, accepts and settles it when it
 * came unsettled, and checks its stamp:
 *
 *  - loss and duplicates: run->seen holds one bit per (copy slot, sender,
 *    sequence number), set with an atomic fetch-or so receivers on other
 *    threads share it; a bit already set is a duplicate, and whatever is
 *    still clear at the end is lost. Without --multicast there is a single
 *    slot (any receiver may get a given message, exactly once overall);
 *    with it, each receiver has its own slot (each must get every message).
 *  - latency: receive time minus the stamp's send time, both CLOCK_MONOTONIC
 *    on this machine, into the receiver's own histogram.
 */
#include "bench.h"

#include <proton/condition.h>
#include <proton/session.h>
#include <proton/terminus.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int jn_bench_receiver_init(jn_bench_receiver_t *r, jn_bench_run_t *run, uint32_t slot)
{
    memset(r, 0, sizeof(*r));
    r->run = run;
    r->slot = slot;
    jn_bench_hist_init(&r->hist);
    r->cap = run->tmpl.size + 1024;
    r->buf = malloc(r->cap);
    return r->buf ? 0 : -1;
}

void jn_bench_receiver_fini(jn_bench_receiver_t *r)
{
    free(r->buf);
    r->buf = NULL;
}

void jn_bench_receiver_open(jn_bench_receiver_t *r, pn_connection_t *c)
{
    const jn_bench_opts_t *o = r->run->opts;
    pn_session_t *ssn = pn_session(c);
    pn_session_open(ssn);
    char name[64];
    snprintf(name, sizeof(name), "jn-bench-%d-r%u", (int)getpid(), r->slot);
    pn_link_t *l = pn_receiver(ssn, name);
    pn_terminus_set_address(pn_link_source(l), o->address);
    pn_link_set_snd_settle_mode(l, o->presettled ? PN_SND_SETTLED : PN_SND_UNSETTLED);
    pn_link_set_rcv_settle_mode(l, PN_RCV_FIRST);
    pn_link_set_context(l, r);
    pn_link_open(l);
    pn_link_flow(l, (int)o->window);
    r->link = l;
}

/* Receiver slot named by a --direct sender's link name ("...-r<slot>"). */
static uint32_t slot_from_name(const char *name, uint32_t receivers)
{
    const char *p = name ? strrchr(name, 'r') : NULL;
    if (!p || p == name || p[-1] != '-')
        return 0;
    unsigned long v = strtoul(p + 1, NULL, 10);
    return v < receivers ? (uint32_t)v : 0;
}

void jn_bench_receiver_accept_link(jn_bench_run_t *run, pn_link_t *link)
{
    const jn_bench_opts_t *o = run->opts;
    if (!pn_link_is_receiver(link)) {
        pn_condition_set_name(pn_link_condition(link), "amqp:not-implemented");
        pn_condition_set_description(pn_link_condition(link),
                                     "junction-bench --direct only receives messages");
        pn_link_close(link);
        return;
    }
    jn_bench_receiver_t *r = malloc(sizeof(*r));
    if (!r || jn_bench_receiver_init(r, run, slot_from_name(pn_link_name(link), o->receivers))) {
        free(r);
        jn_bench_fail(run, "out of memory for a receiving link");
        return;
    }
    pthread_mutex_lock(&run->lock);
    r->next = run->accepted_receivers;
    run->accepted_receivers = r;
    pthread_mutex_unlock(&run->lock);
    r->link = link;
    r->ready = true;
    pn_link_set_context(link, r);
    pn_terminus_copy(pn_link_source(link), pn_link_remote_source(link));
    pn_terminus_copy(pn_link_target(link), pn_link_remote_target(link));
    pn_link_set_snd_settle_mode(link, pn_link_remote_snd_settle_mode(link));
    pn_link_set_rcv_settle_mode(link, PN_RCV_FIRST);
    pn_link_open(link);
    pn_link_flow(link, (int)o->window);
}

/* Make room for size octets in the receive buffer. */
static int reserve(jn_bench_receiver_t *r, size_t size)
{
    if (size <= r->cap)
        return 0;
    size_t cap = r->cap * 2 > size ? r->cap * 2 : size;
    uint8_t *buf = realloc(r->buf, cap);
    if (!buf)
        return -1;
    r->buf = buf;
    r->cap = cap;
    return 0;
}

/* Count one received message: loss/duplicate bit, latency, ping-pong. */
static void check_message(jn_bench_receiver_t *r, const uint8_t *msg, size_t size, int64_t now)
{
    jn_bench_run_t *run = r->run;
    jn_bench_stamp_t st;
    if (jn_bench_stamp_read(msg, size, &st) != 0 || st.sender >= run->opts->senders ||
        st.seq >= run->senders[st.sender].count) {
        r->invalid++;
        return;
    }
    uint32_t slot = run->opts->multicast ? r->slot : 0;
    _Atomic uint64_t *bits = run->seen[(size_t)slot * run->opts->senders + st.sender];
    uint64_t bit = UINT64_C(1) << (st.seq & 63);
    uint64_t old = atomic_fetch_or_explicit(&bits[st.seq >> 6], bit, memory_order_relaxed);
    int64_t latency = now - st.send_ns;
    jn_bench_hist_record(&r->hist, latency > 0 ? (uint64_t)latency : 0);
    if (old & bit) {
        r->dup++;
        return;
    }
    r->unique++;
    atomic_fetch_add_explicit(&run->unique_total, 1, memory_order_relaxed);
    if (run->opts->mode == JN_BENCH_PING_PONG) {
        jn_bench_sender_t *s = &run->senders[st.sender];
        uint32_t got = atomic_fetch_add_explicit(&s->pp_received, 1, memory_order_acq_rel) + 1;
        if (got == run->copies)
            jn_bench_wake_sender(run, st.sender);
    }
}

void jn_bench_receiver_on_delivery(jn_bench_receiver_t *r, pn_delivery_t *d)
{
    pn_link_t *link = r->link;
    if (pn_delivery_aborted(d)) {
        pn_delivery_settle(d);
        return;
    }
    if (!pn_delivery_readable(d) || pn_delivery_partial(d))
        return; /* wait for the rest of the message */
    size_t size = pn_delivery_pending(d);
    if (reserve(r, size) != 0) {
        jn_bench_fail(r->run, "out of memory for a %zu-octet message", size);
        return;
    }
    ssize_t got = pn_link_recv(link, (char *)r->buf, size);
    pn_link_advance(link);
    int64_t now = jn_bench_now_ns();
    if (r->received == 0)
        r->first_recv_ns = now;
    r->last_recv_ns = now;
    r->received++;
    if (got < 0)
        r->invalid++;
    else
        check_message(r, r->buf, (size_t)got, now);
    if (!pn_delivery_settled(d))
        pn_delivery_update(d, PN_ACCEPTED);
    pn_delivery_settle(d);
    int credit = pn_link_credit(link);
    int window = (int)r->run->opts->window;
    if (credit <= window / 2)
        pn_link_flow(link, window - credit);
}
