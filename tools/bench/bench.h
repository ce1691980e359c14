/*
 * bench.h — the state of one junction-bench run, shared by its files.
 *
 * One proactor serves every connection of the run; --threads N threads call
 * pn_proactor_wait. Proton serialises the events of one connection, so all
 * state reached from a connection (its sender or receiver, their counters
 * and histogram) is owned by whichever thread is handling that connection's
 * batch, and needs no lock. What crosses connections is either atomic (the
 * run's totals, the "seen" bitmaps, a sender's ping-pong counter) or guarded
 * by run->lock (the connection registry, used to wake connections from other
 * threads, and the list of receivers created in --direct mode).
 *
 * Files: options.c (command line), codec.c (message template and stamp),
 * histogram.c (latency), sender.c and receiver.c (link logic), run.c
 * (connections, events, phases, timers, threads), output.c (report), main.c.
 */
#ifndef JN_BENCH_BENCH_H
#define JN_BENCH_BENCH_H

#include "codec.h"
#include "histogram.h"
#include "options.h"

#include <proton/connection.h>
#include <proton/delivery.h>
#include <proton/event.h>
#include <proton/link.h>
#include <proton/listener.h>
#include <proton/proactor.h>
#include <proton/ssl.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Phases of a run, in order; run->phase only moves forward. */
typedef enum {
    JN_BENCH_PHASE_ATTACH = 0, /* receivers (or listeners) coming up */
    JN_BENCH_PHASE_RUNNING,    /* senders started */
    JN_BENCH_PHASE_DRAINING,   /* time limit or interrupt: no more sends */
    JN_BENCH_PHASE_CLOSING,    /* closing every connection */
} jn_bench_phase_t;

/* Which side of the run a connection serves. */
typedef enum {
    JN_BENCH_ROLE_SENDER,   /* outgoing, one sender */
    JN_BENCH_ROLE_RECEIVER, /* outgoing, one receiver */
    JN_BENCH_ROLE_ACCEPTED, /* --direct: accepted from a sender */
} jn_bench_role_t;

typedef struct jn_bench_run jn_bench_run_t;
typedef struct jn_bench_sender jn_bench_sender_t;
typedef struct jn_bench_receiver jn_bench_receiver_t;

/* One connection of the run; pn_connection_get_context gives it back. */
typedef struct {
    jn_bench_run_t *run; /* immutable */
    jn_bench_role_t role;
    uint32_t index;                /* sender or receiver index; immutable */
    const jn_bench_url_t *url;     /* where it connects (or listens); immutable */
    jn_bench_sender_t *sender;     /* role SENDER; immutable */
    jn_bench_receiver_t *receiver; /* role RECEIVER; immutable */
    /* Guarded by run->lock: NULL once the transport has closed. */
    pn_connection_t *pn;
    /* Thread handling this connection only. */
    bool closing; /* we called pn_connection_close */
} jn_bench_conn_t;

/* One sender: a connection with one link (M links with --direct --multicast). */
struct jn_bench_sender {
    /* Immutable after setup. */
    jn_bench_run_t *run;
    uint32_t index;
    uint64_t count; /* messages this sender sends */
    uint32_t nlinks;
    jn_bench_conn_t *conn;
    /* Thread handling the sender's connection only. */
    pn_link_t **links;
    uint32_t links_open;
    uint8_t *msg; /* private copy of the template, stamped per send */
    uint64_t sent;
    uint64_t settled, accepted, released, rejected, modified;
    int64_t first_send_ns, last_send_ns, last_settle_ns;
    bool ready;          /* counted in run->senders_ready */
    bool finished;       /* counted in run->senders_done */
    bool pp_waiting;     /* ping-pong: a message is in flight */
    uint32_t pp_settled; /* ping-pong: settlements of that message */
    /* Atomic: ping-pong copies of the in-flight message received. */
    _Atomic uint32_t pp_received;
};

/* One receiving link (a receiver, or an accepted link with --direct). */
struct jn_bench_receiver {
    /* Immutable after setup. */
    jn_bench_run_t *run;
    uint32_t slot; /* receiver index: with --multicast, its copy slot */
    /* Thread handling the link's connection only. */
    pn_link_t *link;
    bool ready;
    uint8_t *buf;
    size_t cap;
    uint64_t received, unique, dup, invalid;
    int64_t first_recv_ns, last_recv_ns;
    jn_bench_hist_t hist;
    /* Guarded by run->lock: the run's list of --direct receivers. */
    jn_bench_receiver_t *next;
};

/* The whole run. */
struct jn_bench_run {
    /* Immutable after setup. */
    const jn_bench_opts_t *opts;
    pn_proactor_t *proactor;
    pn_ssl_domain_t *tls; /* client TLS for amqps:// URLs, or NULL */
    jn_bench_template_t tmpl;
    uint32_t copies;                /* times each message is expected */
    uint32_t links_per_msg;         /* transfers (and settlements) per message */
    jn_bench_sender_t *senders;     /* opts->senders */
    jn_bench_receiver_t *receivers; /* opts->receivers, router mode only */
    /* seen[slot * senders + sender]: one bit per sequence number. */
    _Atomic uint64_t **seen;
    uint32_t seen_slots;
    int64_t start_ns;

    /* Guarded by lock. */
    pthread_mutex_t lock;
    jn_bench_conn_t **conns;
    size_t nconns, conns_cap;
    pn_listener_t **listeners; /* NULL once closed */
    size_t nlisteners;
    jn_bench_receiver_t *accepted_receivers;
    char failure[512]; /* first failure, "" when none */

    /* Atomic. */
    _Atomic int phase;
    _Atomic uint32_t receivers_ready, senders_ready, senders_done;
    _Atomic uint32_t listeners_ready, listeners_live, conns_live;
    _Atomic uint64_t sent_total, unique_total, settled_total;
    _Atomic bool failed, senders_started, quit, disconnected;
    _Atomic bool time_limit_hit, idle_timed_out, interrupted;
    _Atomic int64_t senders_start_ns, close_ns;

    /* Timer thread (PN_PROACTOR_TIMEOUT handler) only. */
    uint64_t last_progress;
    int64_t last_progress_ns;
};

/* CLOCK_MONOTONIC now, in nanoseconds. */
int64_t jn_bench_now_ns(void);

/* --- run.c --- */

/* Set up, run to completion and tear down the proactor. Returns 0 or -1. */
int jn_bench_run(jn_bench_run_t *run, const jn_bench_opts_t *opts);

/* Release everything jn_bench_run allocated. */
void jn_bench_run_fini(jn_bench_run_t *run);

/* Record a failure (the first one is kept) and start closing. Any thread. */
void jn_bench_fail(jn_bench_run_t *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Wake the connection of sender index i. Any thread. */
void jn_bench_wake_sender(jn_bench_run_t *run, uint32_t i);

/* --- sender.c --- */

/* Allocate and fill a sender's state (not its connection). Returns 0 or -1. */
int jn_bench_sender_init(jn_bench_sender_t *s, jn_bench_run_t *run, uint32_t index);

/* Free a sender's memory. */
void jn_bench_sender_fini(jn_bench_sender_t *s);

/* Create the sender's session and links on c (before connecting). */
void jn_bench_sender_open(jn_bench_sender_t *s, pn_connection_t *c);

/* Event handlers, on the thread handling the sender's connection. */
void jn_bench_sender_on_link_open(jn_bench_sender_t *s, pn_link_t *link);
void jn_bench_sender_on_delivery(jn_bench_sender_t *s, pn_delivery_t *d);
void jn_bench_sender_pump(jn_bench_sender_t *s);

/* --- receiver.c --- */

/* Prepare a receiver's state for slot. Returns 0 or -1. */
int jn_bench_receiver_init(jn_bench_receiver_t *r, jn_bench_run_t *run, uint32_t slot);

/* Free a receiver's memory (not the struct itself). */
void jn_bench_receiver_fini(jn_bench_receiver_t *r);

/* Create the receiver's session and link on c (before connecting). */
void jn_bench_receiver_open(jn_bench_receiver_t *r, pn_connection_t *c);

/* --direct: answer a sender's attach on an accepted connection. */
void jn_bench_receiver_accept_link(jn_bench_run_t *run, pn_link_t *link);

/* A message or settlement arrived on a receiving link. */
void jn_bench_receiver_on_delivery(jn_bench_receiver_t *r, pn_delivery_t *d);

/* --- output.c --- */

/*
 * Print the report (human line, and JSON with --json) after the proactor
 * has stopped. Returns the exit status.
 */
int jn_bench_report(jn_bench_run_t *run);

#endif
