/*
 * run.c — connections, events, phases and threads of a run (bench.h).
 *
 * Sequence. Receivers connect first (or, with --direct, the listeners
 * open); once every receiving link is attached (or every listener listens),
 * the run enters RUNNING and the senders connect. Senders stop when they
 * have sent their share, or when the time limit (or SIGINT) moves the run
 * to DRAINING. The run is complete when every sender is done, every
 * expected copy was received once and (unsettled) every transfer settled;
 * it then moves to CLOSING, wakes every connection so each closes itself on
 * its own thread, closes the listeners, and once the last transport has
 * closed interrupts every thread out of pn_proactor_wait.
 *
 * Bounds. A 50 ms proactor timer (handled on whichever thread gets it)
 * enforces --start-timeout (receivers attach; then senders attach and get
 * credit), --time-limit, --idle-timeout (no send, receipt or settlement for
 * that long: lost messages would otherwise keep the run waiting), and a
 * shutdown deadline after which pn_proactor_disconnect cuts the remaining
 * connections. Completion itself is checked after every event batch.
 */
#include "bench.h"

#include <proton/condition.h>
#include <proton/session.h>
#include <proton/transport.h>

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TIMER_MS           50
#define NS_PER_S           1000000000.0
#define SHUTDOWN_GRACE_S   3.0 /* then pn_proactor_disconnect */
#define SHUTDOWN_ABANDON_S 6.0 /* then stop waiting for transports */
#define LABEL_LEN          320 /* conn_label: role, index, host (255), port */

static volatile sig_atomic_t sigint_seen;

static void on_sigint(int sig)
{
    (void)sig;
    sigint_seen = 1;
}

int64_t jn_bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double seconds_since(int64_t then_ns, int64_t now_ns)
{
    return (double)(now_ns - then_ns) / NS_PER_S;
}

static void verbose(const jn_bench_run_t *run, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void verbose(const jn_bench_run_t *run, const char *fmt, ...)
{
    if (!run->opts->verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "junction-bench: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* A connection's name in messages: "sender 3 (127.0.0.1:5672)". */
static const char *conn_label(const jn_bench_conn_t *conn, char *buf, size_t len)
{
    static const char *const roles[] = {"sender", "receiver", "accepted connection"};
    snprintf(buf, len, "%s %u (%s:%s)", roles[conn->role], conn->index, conn->url->host,
             conn->url->port);
    return buf;
}

/* --- closing and quitting --- */

/* Interrupt every thread once the last connection and listener are gone. */
static void maybe_quit(jn_bench_run_t *run)
{
    if (atomic_load(&run->phase) != JN_BENCH_PHASE_CLOSING || atomic_load(&run->conns_live) ||
        atomic_load(&run->listeners_live))
        return;
    if (!atomic_exchange(&run->quit, true))
        pn_proactor_interrupt(run->proactor); /* see thread_main */
}

/* Enter CLOSING (once): wake every connection to close, close listeners. */
static void begin_close(jn_bench_run_t *run)
{
    int phase = atomic_load(&run->phase);
    do {
        if (phase == JN_BENCH_PHASE_CLOSING)
            return;
    } while (!atomic_compare_exchange_weak(&run->phase, &phase, JN_BENCH_PHASE_CLOSING));
    atomic_store(&run->close_ns, jn_bench_now_ns());
    verbose(run, "closing");
    pthread_mutex_lock(&run->lock);
    for (size_t i = 0; i < run->nconns; i++)
        if (run->conns[i]->pn)
            pn_connection_wake(run->conns[i]->pn);
    for (size_t i = 0; i < run->nlisteners; i++)
        if (run->listeners[i])
            pn_listener_close(run->listeners[i]);
    pthread_mutex_unlock(&run->lock);
    maybe_quit(run);
}

void jn_bench_fail(jn_bench_run_t *run, const char *fmt, ...)
{
    pthread_mutex_lock(&run->lock);
    if (run->failure[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(run->failure, sizeof(run->failure), fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&run->lock);
    atomic_store(&run->failed, true);
    begin_close(run);
}

void jn_bench_wake_sender(jn_bench_run_t *run, uint32_t i)
{
    pthread_mutex_lock(&run->lock);
    jn_bench_conn_t *conn = run->senders[i].conn;
    if (conn && conn->pn)
        pn_connection_wake(conn->pn);
    pthread_mutex_unlock(&run->lock);
}

/* Wake every sender's connection (to notice a phase change). */
static void wake_senders(jn_bench_run_t *run)
{
    for (uint32_t i = 0; i < run->opts->senders; i++)
        jn_bench_wake_sender(run, i);
}

/* Move from RUNNING to DRAINING: senders stop sending. */
static void stop_sending(jn_bench_run_t *run)
{
    int phase = JN_BENCH_PHASE_RUNNING;
    if (atomic_compare_exchange_strong(&run->phase, &phase, JN_BENCH_PHASE_DRAINING))
        wake_senders(run);
}

/* Complete: every sender done, every copy received, every transfer settled. */
static void check_complete(jn_bench_run_t *run)
{
    int phase = atomic_load(&run->phase);
    if (phase != JN_BENCH_PHASE_RUNNING && phase != JN_BENCH_PHASE_DRAINING)
        return;
    if (atomic_load(&run->senders_done) != run->opts->senders)
        return;
    uint64_t sent = atomic_load(&run->sent_total);
    if (atomic_load(&run->unique_total) < sent * run->copies)
        return;
    if (!run->opts->presettled && atomic_load(&run->settled_total) < sent * run->links_per_msg)
        return;
    begin_close(run);
}

/* --- connections --- */

/* Allocate a connection record and add it to the registry. */
static jn_bench_conn_t *conn_new(jn_bench_run_t *run, jn_bench_role_t role, uint32_t index,
                                 const jn_bench_url_t *url)
{
    jn_bench_conn_t *conn = calloc(1, sizeof(*conn));
    if (!conn)
        return NULL;
    conn->run = run;
    conn->role = role;
    conn->index = index;
    conn->url = url;
    pthread_mutex_lock(&run->lock);
    if (run->nconns == run->conns_cap) {
        size_t cap = run->conns_cap ? run->conns_cap * 2 : 16;
        jn_bench_conn_t **conns = realloc(run->conns, cap * sizeof(*conns));
        if (!conns) {
            pthread_mutex_unlock(&run->lock);
            free(conn);
            return NULL;
        }
        run->conns = conns;
        run->conns_cap = cap;
    }
    run->conns[run->nconns++] = conn;
    pthread_mutex_unlock(&run->lock);
    return conn;
}

/* Open an outgoing connection for a sender or receiver. */
static int connect_conn(jn_bench_run_t *run, jn_bench_conn_t *conn)
{
    pn_connection_t *c = pn_connection();
    if (!c)
        return -1;
    char container[64], addr[PN_MAX_ADDR];
    snprintf(container, sizeof(container), "jn-bench-%d-%c%u", (int)getpid(),
             conn->role == JN_BENCH_ROLE_SENDER ? 's' : 'r', conn->index);
    pn_connection_set_context(c, conn);
    pn_connection_set_container(c, container);
    pn_connection_set_hostname(c, conn->url->host);
    pn_connection_open(c);
    if (conn->role == JN_BENCH_ROLE_SENDER)
        jn_bench_sender_open(conn->sender, c);
    else
        jn_bench_receiver_open(conn->receiver, c);
    pn_proactor_addr(addr, sizeof(addr), conn->url->host, conn->url->port);
    atomic_fetch_add(&run->conns_live, 1);
    /* Held across connect2 so a waker never sees a half-made connection. */
    pn_transport_t *t = NULL;
    if (conn->url->tls) {
        t = pn_transport();
        if (!t || !run->tls || pn_ssl_init(pn_ssl(t), run->tls, NULL) != 0)
            return -1;
        pn_ssl_set_peer_hostname(pn_ssl(t), conn->url->host);
    }
    pthread_mutex_lock(&run->lock);
    pn_proactor_connect2(run->proactor, c, t, addr);
    conn->pn = c;
    if (atomic_load(&run->phase) == JN_BENCH_PHASE_CLOSING)
        pn_connection_wake(c);
    pthread_mutex_unlock(&run->lock);
    return 0;
}

/* Connect every sender (once), entering RUNNING. */
static void start_senders(jn_bench_run_t *run)
{
    if (atomic_exchange(&run->senders_started, true))
        return;
    int phase = JN_BENCH_PHASE_ATTACH;
    if (!atomic_compare_exchange_strong(&run->phase, &phase, JN_BENCH_PHASE_RUNNING))
        return;
    atomic_store(&run->senders_start_ns, jn_bench_now_ns());
    verbose(run, "starting %u sender(s)", run->opts->senders);
    const jn_bench_opts_t *o = run->opts;
    for (uint32_t i = 0; i < o->senders; i++) {
        const jn_bench_url_t *url =
            o->direct ? &o->recv_urls[i % o->n_recv_urls] : &o->send_urls[i % o->n_send_urls];
        jn_bench_conn_t *conn = conn_new(run, JN_BENCH_ROLE_SENDER, i, url);
        if (!conn) {
            jn_bench_fail(run, "out of memory for sender %u", i);
            return;
        }
        pthread_mutex_lock(&run->lock);
        conn->sender = &run->senders[i];
        run->senders[i].conn = conn;
        pthread_mutex_unlock(&run->lock);
        if (connect_conn(run, conn) != 0) {
            jn_bench_fail(run, "cannot create the connection of sender %u", i);
            return;
        }
    }
}

/* Router mode: connect every receiver. */
static int start_receivers(jn_bench_run_t *run)
{
    const jn_bench_opts_t *o = run->opts;
    for (uint32_t i = 0; i < o->receivers; i++) {
        jn_bench_conn_t *conn =
            conn_new(run, JN_BENCH_ROLE_RECEIVER, i, &o->recv_urls[i % o->n_recv_urls]);
        if (!conn)
            return -1;
        conn->receiver = &run->receivers[i];
        if (connect_conn(run, conn) != 0)
            return -1;
    }
    return 0;
}

/* --direct: listen on every receive URL. */
static int start_listeners(jn_bench_run_t *run)
{
    const jn_bench_opts_t *o = run->opts;
    run->listeners = calloc(o->n_recv_urls, sizeof(*run->listeners));
    if (!run->listeners)
        return -1;
    for (size_t i = 0; i < o->n_recv_urls; i++) {
        char addr[PN_MAX_ADDR];
        pn_listener_t *l = pn_listener();
        if (!l)
            return -1;
        pn_listener_set_context(l, (void *)&o->recv_urls[i]);
        pn_proactor_addr(addr, sizeof(addr), o->recv_urls[i].host, o->recv_urls[i].port);
        atomic_fetch_add(&run->listeners_live, 1);
        pthread_mutex_lock(&run->lock);
        run->listeners[i] = l;
        run->nlisteners = i + 1;
        pn_proactor_listen(run->proactor, l, addr, 128);
        pthread_mutex_unlock(&run->lock);
    }
    return 0;
}

/* --- events --- */

static void on_link_remote_open(jn_bench_conn_t *conn, pn_link_t *link)
{
    jn_bench_run_t *run = conn->run;
    char label[LABEL_LEN];
    verbose(run, "%s: link '%s' attached", conn_label(conn, label, sizeof(label)),
            pn_link_name(link));
    if (conn->role == JN_BENCH_ROLE_ACCEPTED) {
        if (pn_link_state(link) & PN_LOCAL_UNINIT)
            jn_bench_receiver_accept_link(run, link);
    } else if (conn->role == JN_BENCH_ROLE_SENDER) {
        jn_bench_sender_on_link_open(conn->sender, link);
    } else if (!conn->receiver->ready) {
        conn->receiver->ready = true;
        if (atomic_fetch_add(&run->receivers_ready, 1) + 1 == run->opts->receivers)
            start_senders(run);
    }
}

/* The peer closed an endpoint; before CLOSING that is a failure. */
static void on_remote_close(jn_bench_conn_t *conn, const char *what, pn_condition_t *cond)
{
    jn_bench_run_t *run = conn->run;
    if (atomic_load(&run->phase) >= JN_BENCH_PHASE_CLOSING)
        return;
    char label[LABEL_LEN];
    if (pn_condition_is_set(cond))
        jn_bench_fail(run, "%s: %s closed by the peer: %s: %s",
                      conn_label(conn, label, sizeof(label)), what, pn_condition_get_name(cond),
                      pn_condition_get_description(cond) ? pn_condition_get_description(cond) : "");
    else
        jn_bench_fail(run, "%s: %s closed by the peer before the run ended",
                      conn_label(conn, label, sizeof(label)), what);
}

static void on_transport_closed(jn_bench_conn_t *conn, pn_event_t *e)
{
    jn_bench_run_t *run = conn->run;
    pn_condition_t *cond = pn_transport_condition(pn_event_transport(e));
    char label[LABEL_LEN];
    if (atomic_load(&run->phase) < JN_BENCH_PHASE_CLOSING) {
        if (pn_condition_is_set(cond))
            jn_bench_fail(run, "%s: connection failed: %s: %s",
                          conn_label(conn, label, sizeof(label)), pn_condition_get_name(cond),
                          pn_condition_get_description(cond) ? pn_condition_get_description(cond)
                                                             : "");
        else
            jn_bench_fail(run, "%s: connection closed before the run ended",
                          conn_label(conn, label, sizeof(label)));
    }
    pthread_mutex_lock(&run->lock);
    conn->pn = NULL;
    pthread_mutex_unlock(&run->lock);
    atomic_fetch_sub(&run->conns_live, 1);
    maybe_quit(run);
}

static void on_delivery(jn_bench_conn_t *conn, pn_delivery_t *d)
{
    pn_link_t *link = pn_delivery_link(d);
    if (pn_link_is_sender(link)) {
        if (conn->sender)
            jn_bench_sender_on_delivery(conn->sender, d);
    } else {
        jn_bench_receiver_t *r = pn_link_get_context(link);
        if (r)
            jn_bench_receiver_on_delivery(r, d);
    }
}

/* Handle one event of a connection, on the thread serving it. */
static void conn_event(jn_bench_conn_t *conn, pn_event_t *e)
{
    pn_connection_t *c = pn_event_connection(e);
    switch (pn_event_type(e)) {
    case PN_CONNECTION_REMOTE_OPEN:
        if (pn_connection_state(c) & PN_LOCAL_UNINIT) {
            pn_connection_set_container(c, "jn-bench-direct");
            pn_connection_open(c);
        }
        break;
    case PN_SESSION_REMOTE_OPEN:
        if (pn_session_state(pn_event_session(e)) & PN_LOCAL_UNINIT)
            pn_session_open(pn_event_session(e));
        break;
    case PN_LINK_REMOTE_OPEN:
        on_link_remote_open(conn, pn_event_link(e));
        break;
    case PN_LINK_FLOW:
    case PN_CONNECTION_WAKE:
        if (conn->sender)
            jn_bench_sender_pump(conn->sender);
        break;
    case PN_DELIVERY:
        on_delivery(conn, pn_event_delivery(e));
        break;
    case PN_LINK_REMOTE_CLOSE:
        on_remote_close(conn, "link", pn_link_remote_condition(pn_event_link(e)));
        pn_link_close(pn_event_link(e));
        break;
    case PN_LINK_REMOTE_DETACH:
        on_remote_close(conn, "link", pn_link_remote_condition(pn_event_link(e)));
        pn_link_detach(pn_event_link(e));
        break;
    case PN_SESSION_REMOTE_CLOSE:
        on_remote_close(conn, "session", pn_session_remote_condition(pn_event_session(e)));
        pn_session_close(pn_event_session(e));
        break;
    case PN_CONNECTION_REMOTE_CLOSE:
        on_remote_close(conn, "connection", pn_connection_remote_condition(c));
        pn_connection_close(c);
        conn->closing = true;
        break;
    case PN_TRANSPORT_CLOSED:
        on_transport_closed(conn, e);
        return;
    default:
        break;
    }
    if (!conn->closing && c && atomic_load(&conn->run->phase) == JN_BENCH_PHASE_CLOSING) {
        conn->closing = true;
        pn_connection_close(c);
    }
}

static void on_listener_event(jn_bench_run_t *run, pn_event_t *e)
{
    pn_listener_t *l = pn_event_listener(e);
    const jn_bench_url_t *url = pn_listener_get_context(l);
    if (pn_event_type(e) == PN_LISTENER_OPEN) {
        verbose(run, "listening on %s:%s", url->host, url->port);
        if (atomic_fetch_add(&run->listeners_ready, 1) + 1 == run->opts->n_recv_urls)
            start_senders(run);
    } else if (pn_event_type(e) == PN_LISTENER_ACCEPT) {
        jn_bench_conn_t *conn = conn_new(run, JN_BENCH_ROLE_ACCEPTED, 0, url);
        pn_connection_t *c = conn ? pn_connection() : NULL;
        if (!c) {
            jn_bench_fail(run, "out of memory for an accepted connection");
            return;
        }
        pn_connection_set_context(c, conn);
        atomic_fetch_add(&run->conns_live, 1);
        pthread_mutex_lock(&run->lock);
        conn->index = (uint32_t)run->nconns - 1;
        pn_listener_accept2(l, c, NULL);
        conn->pn = c;
        pthread_mutex_unlock(&run->lock);
    } else if (pn_event_type(e) == PN_LISTENER_CLOSE) {
        pn_condition_t *cond = pn_listener_condition(l);
        if (pn_condition_is_set(cond) && atomic_load(&run->phase) < JN_BENCH_PHASE_CLOSING)
            jn_bench_fail(run, "cannot listen on %s:%s: %s", url->host, url->port,
                          pn_condition_get_description(cond) ? pn_condition_get_description(cond)
                                                             : pn_condition_get_name(cond));
        pthread_mutex_lock(&run->lock);
        for (size_t i = 0; i < run->nlisteners; i++)
            if (run->listeners[i] == l)
                run->listeners[i] = NULL;
        pthread_mutex_unlock(&run->lock);
        atomic_fetch_sub(&run->listeners_live, 1);
        maybe_quit(run);
    }
}

/* --- timer: start-up, time limit, idle and shutdown bounds --- */

/* Start-up and running bounds; phase is RUNNING or DRAINING. */
static void check_running(jn_bench_run_t *run, int phase, int64_t now)
{
    const jn_bench_opts_t *o = run->opts;
    int64_t t0 = atomic_load(&run->senders_start_ns);
    if (phase == JN_BENCH_PHASE_RUNNING && o->time_limit > 0 &&
        seconds_since(t0, now) >= o->time_limit) {
        atomic_store(&run->time_limit_hit, true);
        verbose(run, "time limit reached: no more sends");
        stop_sending(run);
    }
    uint64_t sent = atomic_load(&run->sent_total);
    if (sent == 0 && seconds_since(t0, now) > o->start_timeout) {
        uint32_t ready = atomic_load(&run->senders_ready);
        if (ready < o->senders)
            jn_bench_fail(run, "only %u of %u senders attached within %g s", ready, o->senders,
                          o->start_timeout);
        else if (phase == JN_BENCH_PHASE_RUNNING)
            jn_bench_fail(run, "the senders got no credit within %g s", o->start_timeout);
        return;
    }
    uint64_t progress = sent + atomic_load(&run->unique_total) + atomic_load(&run->settled_total);
    if (progress != run->last_progress || run->last_progress_ns == 0) {
        run->last_progress = progress;
        run->last_progress_ns = now;
    } else if (sent > 0 && seconds_since(run->last_progress_ns, now) > o->idle_timeout) {
        atomic_store(&run->idle_timed_out, true);
        verbose(run, "nothing sent, received or settled for %g s: giving up", o->idle_timeout);
        begin_close(run);
    }
}

/* Shutdown bounds: disconnect what has not closed, then stop waiting. */
static void check_closing(jn_bench_run_t *run, int64_t now)
{
    double since = seconds_since(atomic_load(&run->close_ns), now);
    if (since > SHUTDOWN_GRACE_S && !atomic_exchange(&run->disconnected, true)) {
        verbose(run, "connections did not close within %g s: disconnecting", SHUTDOWN_GRACE_S);
        pn_proactor_disconnect(run->proactor, NULL);
    }
    if (since > SHUTDOWN_ABANDON_S && !atomic_exchange(&run->quit, true))
        pn_proactor_interrupt(run->proactor);
}

static void on_timer(jn_bench_run_t *run)
{
    const jn_bench_opts_t *o = run->opts;
    int64_t now = jn_bench_now_ns();
    int phase = atomic_load(&run->phase);
    if (sigint_seen && !atomic_exchange(&run->interrupted, true)) {
        verbose(run, "interrupted: no more sends");
        if (phase == JN_BENCH_PHASE_ATTACH)
            jn_bench_fail(run, "interrupted before the senders started");
        stop_sending(run);
        phase = atomic_load(&run->phase);
    }
    if (phase == JN_BENCH_PHASE_ATTACH && seconds_since(run->start_ns, now) > o->start_timeout) {
        if (o->direct)
            jn_bench_fail(run, "not listening within %g s", o->start_timeout);
        else
            jn_bench_fail(run, "only %u of %u receivers attached within %g s",
                          atomic_load(&run->receivers_ready), o->receivers, o->start_timeout);
    } else if (phase == JN_BENCH_PHASE_RUNNING || phase == JN_BENCH_PHASE_DRAINING) {
        check_running(run, phase, now);
    } else if (phase == JN_BENCH_PHASE_CLOSING) {
        check_closing(run, now);
    }
    check_complete(run);
    if (!atomic_load(&run->quit))
        pn_proactor_set_timeout(run->proactor, TIMER_MS);
}

/* Handle one event; returns true when the calling thread should stop. */
static bool dispatch(jn_bench_run_t *run, pn_event_t *e)
{
    switch (pn_event_type(e)) {
    case PN_PROACTOR_INTERRUPT:
        return true;
    case PN_PROACTOR_TIMEOUT:
        on_timer(run);
        return false;
    case PN_PROACTOR_INACTIVE:
        return false;
    case PN_LISTENER_OPEN:
    case PN_LISTENER_ACCEPT:
    case PN_LISTENER_CLOSE:
        on_listener_event(run, e);
        return false;
    default:
        break;
    }
    pn_connection_t *c = pn_event_connection(e);
    jn_bench_conn_t *conn = c ? pn_connection_get_context(c) : NULL;
    if (conn)
        conn_event(conn, e);
    return false;
}

/*
 * One proactor thread: handle batches until interrupted with run->quit set.
 * Quitting posts one interrupt; each thread that leaves posts another for
 * the next one (proton may hand several interrupts to one thread in a single
 * batch, so one interrupt per thread up front could strand a thread).
 */
static void *thread_main(void *arg)
{
    jn_bench_run_t *run = arg;
    for (;;) {
        bool interrupted = false;
        pn_event_batch_t *batch = pn_proactor_wait(run->proactor);
        pn_event_t *e;
        while ((e = pn_event_batch_next(batch)))
            interrupted |= dispatch(run, e);
        pn_proactor_done(run->proactor, batch);
        if (interrupted && atomic_load(&run->quit)) {
            pn_proactor_interrupt(run->proactor);
            return NULL;
        }
        check_complete(run);
    }
}

/* --- setup and teardown --- */

/* Senders, receivers and the seen bitmaps. */
static int setup_state(jn_bench_run_t *run)
{
    const jn_bench_opts_t *o = run->opts;
    if (jn_bench_template_init(&run->tmpl, (size_t)o->body_size,
                               o->anonymous ? o->address : NULL) != 0)
        return -1;
    run->senders = calloc(o->senders, sizeof(*run->senders));
    if (!run->senders)
        return -1;
    for (uint32_t i = 0; i < o->senders; i++)
        if (jn_bench_sender_init(&run->senders[i], run, i) != 0)
            return -1;
    if (!o->direct) {
        run->receivers = calloc(o->receivers, sizeof(*run->receivers));
        if (!run->receivers)
            return -1;
        for (uint32_t i = 0; i < o->receivers; i++)
            if (jn_bench_receiver_init(&run->receivers[i], run, i) != 0)
                return -1;
    }
    run->seen_slots = o->multicast ? o->receivers : 1;
    size_t nseen = (size_t)run->seen_slots * o->senders;
    run->seen = calloc(nseen, sizeof(*run->seen));
    if (!run->seen)
        return -1;
    for (size_t i = 0; i < nseen; i++) {
        uint64_t words = run->senders[i % o->senders].count / 64 + 1;
        run->seen[i] = calloc((size_t)words, sizeof(uint64_t));
        if (!run->seen[i])
            return -1;
    }
    return 0;
}

/* Serve the proactor on opts->threads threads until the run is over. */
static int serve(jn_bench_run_t *run)
{
    uint32_t extra = run->opts->threads - 1;
    pthread_t *threads = calloc(extra + 1, sizeof(*threads));
    if (!threads)
        return -1;
    uint32_t started = 0;
    for (; started < extra; started++)
        if (pthread_create(&threads[started], NULL, thread_main, run) != 0)
            break;
    if (started < extra)
        jn_bench_fail(run, "could only start %u of %u threads", started + 1, extra + 1);
    thread_main(run);
    for (uint32_t i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    free(threads);
    return 0;
}

/* The client TLS domain when a URL is amqps://. 0, or -1 (reported). */
static int tls_setup(jn_bench_run_t *run)
{
    const jn_bench_opts_t *o = run->opts;
    bool any = false;
    for (size_t i = 0; i < o->n_send_urls; i++)
        any = any || o->send_urls[i].tls;
    for (size_t i = 0; i < o->n_recv_urls; i++)
        any = any || o->recv_urls[i].tls;
    if (!any)
        return 0;
    run->tls = pn_ssl_domain(PN_SSL_MODE_CLIENT);
    if (!run->tls) {
        fprintf(stderr, "junction-bench: proton has no TLS support\n");
        return -1;
    }
    if (o->tls_ca) {
        if (pn_ssl_domain_set_trusted_ca_db(run->tls, o->tls_ca) != 0 ||
            pn_ssl_domain_set_peer_authentication(run->tls, PN_SSL_VERIFY_PEER, o->tls_ca) != 0) {
            fprintf(stderr, "junction-bench: --tls-ca %s: cannot load it\n", o->tls_ca);
            return -1;
        }
    } else {
        pn_ssl_domain_set_peer_authentication(run->tls, PN_SSL_ANONYMOUS_PEER, NULL);
    }
    return 0;
}

int jn_bench_run(jn_bench_run_t *run, const jn_bench_opts_t *opts)
{
    memset(run, 0, sizeof(*run));
    run->opts = opts;
    pthread_mutex_init(&run->lock, NULL);
    run->copies = opts->multicast ? opts->receivers : 1;
    run->links_per_msg = opts->direct && opts->multicast ? opts->receivers : 1;
    if (setup_state(run) != 0) {
        fprintf(stderr, "junction-bench: out of memory setting up the run\n");
        return -1;
    }
    run->proactor = pn_proactor();
    if (!run->proactor)
        return -1;
    if (tls_setup(run) != 0)
        return -1;
    struct sigaction sa, old_int;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND; /* a second ^C kills */
    sigaction(SIGINT, &sa, &old_int);
    signal(SIGPIPE, SIG_IGN);
    run->start_ns = jn_bench_now_ns();
    int rc = opts->direct ? start_listeners(run) : start_receivers(run);
    if (rc != 0)
        jn_bench_fail(run, "cannot create the %s", opts->direct ? "listeners" : "receivers");
    pn_proactor_set_timeout(run->proactor, TIMER_MS);
    serve(run);
    sigaction(SIGINT, &old_int, NULL);
    return 0;
}

void jn_bench_run_fini(jn_bench_run_t *run)
{
    const jn_bench_opts_t *o = run->opts;
    if (run->proactor)
        pn_proactor_free(run->proactor);
    if (run->tls)
        pn_ssl_domain_free(run->tls);
    for (size_t i = 0; i < run->nconns; i++)
        free(run->conns[i]);
    free(run->conns);
    free(run->listeners);
    if (run->senders)
        for (uint32_t i = 0; i < o->senders; i++)
            jn_bench_sender_fini(&run->senders[i]);
    free(run->senders);
    if (run->receivers)
        for (uint32_t i = 0; i < o->receivers; i++)
            jn_bench_receiver_fini(&run->receivers[i]);
    free(run->receivers);
    while (run->accepted_receivers) {
        jn_bench_receiver_t *r = run->accepted_receivers;
        run->accepted_receivers = r->next;
        jn_bench_receiver_fini(r);
        free(r);
    }
    if (run->seen)
        for (size_t i = 0; i < (size_t)run->seen_slots * o->senders; i++)
            free((void *)run->seen[i]);
    free(run->seen);
    jn_bench_template_fini(&run->tmpl);
    pthread_mutex_destroy(&run->lock);
}
