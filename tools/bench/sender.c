/*
 * sender.c — the sending side of a run (bench.h).
 *
 * A sender owns one connection with one sending link (with --direct
 * --multicast, one link per receiver, and each message goes out on every
 * link: the sender then does the fan-out a router would do). All of it runs
 * on the thread handling that connection's events.
 *
 * Throughput: on every credit update (PN_LINK_FLOW) and wake-up, the sender
 * sends as many messages as the smallest link credit allows, in one go,
 * each a copy of the pre-encoded template with its stamp rewritten; proton
 * writes the whole batch when the event batch ends. Ping-pong: one message
 * at a time; receivers count copies of it in pp_received and wake the
 * sender's connection when all copies are in, and the sender sends the
 * next message once that (and, when unsettled, the settlement) happened.
 */
#include "bench.h"

#include <proton/session.h>
#include <proton/terminus.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int jn_bench_sender_init(jn_bench_sender_t *s, jn_bench_run_t *run, uint32_t index)
{
    const jn_bench_opts_t *o = run->opts;
    memset(s, 0, sizeof(*s));
    s->run = run;
    s->index = index;
    s->count = o->count / o->senders + (index < o->count % o->senders ? 1 : 0);
    s->nlinks = run->links_per_msg;
    s->links = calloc(s->nlinks, sizeof(*s->links));
    s->msg = malloc(run->tmpl.size);
    if (!s->links || !s->msg)
        return -1;
    memcpy(s->msg, run->tmpl.bytes, run->tmpl.size);
    atomic_init(&s->pp_received, 0);
    return 0;
}

void jn_bench_sender_fini(jn_bench_sender_t *s)
{
    free(s->links);
    free(s->msg);
    s->links = NULL;
    s->msg = NULL;
}

void jn_bench_sender_open(jn_bench_sender_t *s, pn_connection_t *c)
{
    const jn_bench_opts_t *o = s->run->opts;
    pn_session_t *ssn = pn_session(c);
    pn_session_open(ssn);
    for (uint32_t k = 0; k < s->nlinks; k++) {
        char name[96];
        if (o->direct) {
            /* The accepting side takes the receiver slot from the name. */
            uint32_t slot = o->multicast ? k : s->index % o->receivers;
            snprintf(name, sizeof(name), "jn-bench-%d-s%u-r%u", (int)getpid(), s->index, slot);
        } else {
            snprintf(name, sizeof(name), "jn-bench-%d-s%u", (int)getpid(), s->index);
        }
        pn_link_t *l = pn_sender(ssn, name);
        if (!o->anonymous) /* else the anonymous relay: `to` in each message */
            pn_terminus_set_address(pn_link_target(l), o->address);
        pn_link_set_snd_settle_mode(l, o->presettled ? PN_SND_SETTLED : PN_SND_UNSETTLED);
        pn_link_set_rcv_settle_mode(l, PN_RCV_FIRST);
        pn_link_set_context(l, s);
        pn_link_open(l);
        s->links[k] = l;
    }
}

/* No more sends from this sender: count it done once. */
static void sender_finish(jn_bench_sender_t *s)
{
    if (s->finished)
        return;
    s->finished = true;
    atomic_fetch_add(&s->run->senders_done, 1);
}

void jn_bench_sender_on_link_open(jn_bench_sender_t *s, pn_link_t *link)
{
    (void)link;
    if (++s->links_open == s->nlinks && !s->ready) {
        s->ready = true;
        atomic_fetch_add(&s->run->senders_ready, 1);
    }
    jn_bench_sender_pump(s);
}

/* Ping-pong: has the message in flight completed its round trip? */
static bool ping_pong_done(jn_bench_sender_t *s)
{
    const jn_bench_run_t *run = s->run;
    if (atomic_load_explicit(&s->pp_received, memory_order_acquire) < run->copies)
        return false;
    if (!run->opts->presettled && s->pp_settled < s->nlinks)
        return false;
    s->pp_waiting = false;
    return true;
}

/* Smallest credit over the sender's links. */
static uint64_t sender_credit(const jn_bench_sender_t *s)
{
    int credit = pn_link_credit(s->links[0]);
    for (uint32_t k = 1; k < s->nlinks; k++) {
        int c = pn_link_credit(s->links[k]);
        if (c < credit)
            credit = c;
    }
    return credit > 0 ? (uint64_t)credit : 0;
}

/* Send n messages on every link, stamped with consecutive sequence numbers. */
static void send_batch(jn_bench_sender_t *s, uint64_t n)
{
    jn_bench_run_t *run = s->run;
    const bool presettled = run->opts->presettled;
    const size_t size = run->tmpl.size, off = run->tmpl.stamp_offset;
    int64_t now = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t seq = s->sent + i;
        now = jn_bench_now_ns();
        jn_bench_stamp_write(s->msg, off, s->index, seq, now);
        for (uint32_t k = 0; k < s->nlinks; k++) {
            pn_link_t *l = s->links[k];
            pn_delivery_t *d = pn_delivery(l, pn_dtag((const char *)&seq, sizeof(seq)));
            ssize_t rc = pn_link_send(l, (const char *)s->msg, size);
            pn_link_advance(l);
            if (presettled)
                pn_delivery_settle(d);
            if (rc < 0)
                jn_bench_fail(run, "sender %u: pn_link_send failed (%zd)", s->index, rc);
        }
        if (s->first_send_ns == 0)
            s->first_send_ns = now;
    }
    s->last_send_ns = now;
    s->sent += n;
    atomic_fetch_add_explicit(&run->sent_total, n, memory_order_relaxed);
}

void jn_bench_sender_pump(jn_bench_sender_t *s)
{
    jn_bench_run_t *run = s->run;
    int phase = atomic_load(&run->phase);
    if (s->finished || phase >= JN_BENCH_PHASE_DRAINING) {
        sender_finish(s);
        for (uint32_t k = 0; k < s->nlinks; k++)
            pn_link_drained(s->links[k]); /* a draining receiver gets its credit back */
        return;
    }
    if (phase != JN_BENCH_PHASE_RUNNING || s->links_open < s->nlinks)
        return;
    const bool ping_pong = run->opts->mode == JN_BENCH_PING_PONG;
    if (ping_pong && s->pp_waiting && !ping_pong_done(s))
        return;
    uint64_t n = s->count - s->sent;
    if (ping_pong && n > 1)
        n = 1;
    uint64_t credit = sender_credit(s);
    if (credit < n)
        n = credit;
    if (n > 0) {
        if (ping_pong) {
            s->pp_waiting = true;
            s->pp_settled = 0;
            atomic_store_explicit(&s->pp_received, 0, memory_order_release);
        }
        send_batch(s, n);
    }
    if (s->sent == s->count)
        sender_finish(s);
}

void jn_bench_sender_on_delivery(jn_bench_sender_t *s, pn_delivery_t *d)
{
    uint64_t state = pn_delivery_remote_state(d);
    bool terminal = state == PN_ACCEPTED || state == PN_REJECTED || state == PN_RELEASED ||
                    state == PN_MODIFIED;
    if (!pn_delivery_settled(d) && !terminal)
        return; /* not an outcome yet */
    switch (state) {
    case PN_REJECTED:
        s->rejected++;
        break;
    case PN_RELEASED:
        s->released++;
        break;
    case PN_MODIFIED:
        s->modified++;
        break;
    default: /* accepted, or settled without an outcome */
        s->accepted++;
        break;
    }
    pn_delivery_settle(d);
    s->settled++;
    /* The clock is read only when nothing is left outstanding: the last
     * such moment is the end of the run, which is all the report needs. */
    if (s->settled == s->sent * s->nlinks)
        s->last_settle_ns = jn_bench_now_ns();
    atomic_fetch_add_explicit(&s->run->settled_total, 1, memory_order_relaxed);
    if (s->run->opts->mode == JN_BENCH_PING_PONG) {
        s->pp_settled++;
        jn_bench_sender_pump(s);
    }
}
