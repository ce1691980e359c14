/*
 * io.c — the I/O layer's frame (junction/io.h): the proton proactor, the
 * worker threads that loop on it, the dispatch of each event batch, the
 * one-shot timers built on the proactor's single timeout, and start and
 * orderly stop.
 *
 * A batch belongs to one connection, one listener, or the proactor itself.
 * A connection's batch goes to io_conn.c event by event and ends with
 * jn_io_conn_batch_end_IO, which takes the core's work and finishes what the
 * batch started, so everything the batch produced leaves in the one write
 * proton does after pn_proactor_done. Listener events go to io_endpoint.c.
 *
 * Timers: proton 0.37 has one timeout per proactor. Armed timers (a
 * connector's retry, a connection's poll of a paused or stalled link) sit in
 * a list sorted by deadline under io->lock, and the proactor timeout is set
 * for the earliest. Arming happens on connection loss and for large
 * messages only, so the lock is never taken per message.
 *
 * Stop: close the listeners, wake every connection so its own thread closes
 * it with a close frame, wait for the transports to close (bounded), force
 * what is left with pn_proactor_disconnect, then interrupt the workers:
 * each worker that sees the exit flag passes the interrupt on (proton may
 * coalesce interrupts) and leaves.
 */
#include "io_private.h"

#include <junction/pool.h>

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- timers ------------------------------------------------------------ */

/* Point the proactor timeout at the earliest armed timer. io->lock held. */
static void timeout_update_locked(jn_io_t *io)
{
    if (!io->timers) {
        if (io->timeout_at) {
            pn_proactor_cancel_timeout(io->proactor);
            io->timeout_at = 0;
        }
        return;
    }
    int64_t deadline = io->timers->deadline;
    if (io->timeout_at && io->timeout_at <= deadline)
        return; /* a timeout at or before it is set; it re-evaluates */
    int64_t now = pn_proactor_now_64();
    pn_proactor_set_timeout(io->proactor, deadline > now ? (pn_millis_t)(deadline - now) : 0);
    io->timeout_at = deadline;
}

static void timer_unlink_locked(jn_io_t *io, jn_io_timer_t *timer)
{
    for (jn_io_timer_t **p = &io->timers; *p; p = &(*p)->next) {
        if (*p == timer) {
            *p = timer->next;
            break;
        }
    }
    timer->next = NULL;
    timer->armed = false;
}

/* jn_io_timer_arm: fire timer->fire once, delay_ms from now (re-arming an
 * armed timer moves it). Any thread. */
void jn_io_timer_arm(jn_io_t *io, jn_io_timer_t *timer, unsigned delay_ms)
{
    pthread_mutex_lock(&io->lock);
    if (timer->armed)
        timer_unlink_locked(io, timer);
    timer->deadline = pn_proactor_now_64() + delay_ms;
    jn_io_timer_t **p = &io->timers;
    while (*p && (*p)->deadline <= timer->deadline)
        p = &(*p)->next;
    timer->next = *p;
    *p = timer;
    timer->armed = true;
    timeout_update_locked(io);
    pthread_mutex_unlock(&io->lock);
}

/* jn_io_timer_cancel: disarm. Returns true when it was armed (its fire will
 * not run). Any thread. */
bool jn_io_timer_cancel(jn_io_t *io, jn_io_timer_t *timer)
{
    pthread_mutex_lock(&io->lock);
    bool was = timer->armed;
    if (was)
        timer_unlink_locked(io, timer);
    timeout_update_locked(io);
    pthread_mutex_unlock(&io->lock);
    return was;
}

/* PN_PROACTOR_TIMEOUT: fire every due timer, one at a time, without the
 * lock (a fire may re-arm its own timer). */
static void timers_run(jn_io_t *io)
{
    pthread_mutex_lock(&io->lock);
    io->timeout_at = 0;
    for (;;) {
        jn_io_timer_t *t = io->timers;
        if (!t || t->deadline > pn_proactor_now_64())
            break;
        io->timers = t->next;
        t->next = NULL;
        t->armed = false;
        pthread_mutex_unlock(&io->lock);
        t->fire(t);
        pthread_mutex_lock(&io->lock);
    }
    timeout_update_locked(io);
    pthread_mutex_unlock(&io->lock);
}

/* ---- workers ------------------------------------------------------------ */

/* Handle one batch. Returns true when this worker is to exit. */
static bool batch_handle(jn_io_t *io, pn_event_batch_t *batch)
{
    jn_io_conn_t *conn = NULL;
    bool exit_now = false;
    pn_event_t *e;
    while ((e = pn_event_batch_next(batch)) != NULL) {
        pn_connection_t *pc = pn_event_connection(e);
        if (pc) {
            conn = pn_connection_get_context(pc);
            if (conn)
                jn_io_conn_event_IO(conn, e);
            continue;
        }
        switch (pn_event_type(e)) {
        case PN_LISTENER_OPEN:
        case PN_LISTENER_ACCEPT:
        case PN_LISTENER_CLOSE:
            jn_io_listener_event(io, e);
            break;
        case PN_PROACTOR_TIMEOUT:
            timers_run(io);
            break;
        case PN_PROACTOR_INTERRUPT:
            pthread_mutex_lock(&io->lock);
            exit_now = io->exiting;
            pthread_mutex_unlock(&io->lock);
            if (exit_now)
                pn_proactor_interrupt(io->proactor); /* for the next worker */
            break;
        default:
            break;
        }
    }
    if (conn)
        jn_io_conn_batch_end_IO(conn);
    return exit_now;
}

static void *worker_main(void *arg)
{
    jn_io_t *io = arg;
    bool done = false;
    while (!done) {
        pn_event_batch_t *batch = pn_proactor_wait(io->proactor);
        done = batch_handle(io, batch);
        pn_proactor_done(io->proactor, batch);
    }
    jn_pool_thread_exit();
    return NULL;
}

/* ---- the core's callbacks ----------------------------------------------- */

static void core_wake(void *io_conn)
{
    jn_io_conn_wake(io_conn);
}

static void core_conn_released(void *io_conn)
{
    jn_io_conn_unref(io_conn);
}

const jn_core_io_ops_t *jn_io_core_ops(void)
{
    static const jn_core_io_ops_t ops = {.wake = core_wake, .conn_released = core_conn_released};
    return &ops;
}

/* ---- life cycle --------------------------------------------------------- */

/* Descriptors kept back from connections: room for two full listen
 * backlogs accepted at once (a burst being refused: each refused connection
 * holds its descriptor until proton has closed it), plus listeners, the
 * core's eventfd, the proactor's own, log files and connector retries. */
#define JN_IO_FD_RESERVE (2 * JN_IO_LISTEN_BACKLOG + 64)

/* jn_io_max_connections: how many connections may be open at once, from the
 * process's file-descriptor limit (RLIMIT_NOFILE soft limit) less the
 * reserve. Accepting past the limit would make accept() fail with EMFILE,
 * which proton 0.37's epoll proactor handles by parking the listener in an
 * "overflow" state that later trips an assertion when the listener closes;
 * refusing connections ourselves well below the limit keeps it from ever
 * getting there. At least 16. */
size_t jn_io_max_connections(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return SIZE_MAX;
    return rl.rlim_cur > JN_IO_FD_RESERVE + 16 ? (size_t)rl.rlim_cur - JN_IO_FD_RESERVE : 16;
}

jn_io_t *jn_io_create(jn_core_t *core, const jn_io_config_t *cfg)
{
    jn_io_t *io = calloc(1, sizeof *io);
    if (!io)
        return NULL;
    io->core = core;
    io->worker_threads = cfg->worker_threads ? cfg->worker_threads : 1;
    io->max_conns = jn_io_max_connections();
    const char *id = cfg->container_id ? cfg->container_id : "Junction";
    io->container_id = strdup(id);
    size_t n = strlen(id) + 3;
    io->node_id = malloc(n);
    io->threads = calloc(io->worker_threads, sizeof *io->threads);
    io->proactor = pn_proactor();
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (!io->container_id || !io->node_id || !io->threads || !io->proactor ||
        pthread_mutex_init(&io->lock, NULL) != 0) {
        pthread_condattr_destroy(&ca);
        if (io->proactor)
            pn_proactor_free(io->proactor);
        free(io->threads);
        free(io->node_id);
        free(io->container_id);
        free(io);
        return NULL;
    }
    pthread_cond_init(&io->cond, &ca);
    pthread_condattr_destroy(&ca);
    snprintf(io->node_id, n, "0/%s", id);
    atomic_init(&io->next_conn_id, 1);
    atomic_init(&io->pending_frees, 0);
    atomic_init(&io->stopping, false);
    return io;
}

/* Wait on io->cond until done(io) or deadline (CLOCK_MONOTONIC). io->lock
 * held. Returns done(io). */
static bool wait_until(jn_io_t *io, bool (*done)(jn_io_t *), const struct timespec *deadline)
{
    while (!done(io)) {
        if (pthread_cond_timedwait(&io->cond, &io->lock, deadline) == ETIMEDOUT)
            return done(io);
    }
    return true;
}

static struct timespec deadline_in(unsigned ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

static bool listeners_decided(jn_io_t *io)
{
    return io->pending_listeners == 0;
}

int jn_io_start(jn_io_t *io)
{
    pthread_mutex_lock(&io->lock);
    io->started = true;
    for (jn_io_endpoint_t *ep = io->endpoints; ep; ep = ep->next) {
        if (ep->is_listener)
            jn_io_listen(io, ep);
    }
    pthread_mutex_unlock(&io->lock);
    for (jn_io_endpoint_t *ep = io->endpoints; ep; ep = ep->next) {
        if (!ep->is_listener)
            jn_io_connect(ep);
    }
    for (unsigned i = 0; i < io->worker_threads; i++) {
        if (pthread_create(&io->threads[i], NULL, worker_main, io) != 0) {
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, "Cannot start worker thread %u", i);
            return JN_ENOMEM;
        }
        io->threads_started++;
    }
    /* Listen results come back as events; wait for them so a port that
     * cannot be bound fails the start. */
    struct timespec deadline = deadline_in(10000);
    int rc = 0;
    pthread_mutex_lock(&io->lock);
    if (!wait_until(io, listeners_decided, &deadline))
        rc = JN_EINVAL;
    for (jn_io_endpoint_t *ep = io->endpoints; ep; ep = ep->next) {
        if (ep->is_listener && ep->state == JN_EP_FAILED)
            rc = JN_EINVAL;
    }
    pthread_mutex_unlock(&io->lock);
    if (rc == 0)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_NOTICE, "Operational, %u Threads Running (process ID %ld)",
               io->worker_threads, (long)getpid());
    return rc;
}

static bool all_closed(jn_io_t *io)
{
    if (io->live_conns)
        return false;
    for (jn_io_endpoint_t *ep = io->endpoints; ep; ep = ep->next) {
        if (ep->is_listener && (ep->state == JN_EP_PENDING || ep->state == JN_EP_OPEN))
            return false;
    }
    return true;
}

/* Ask every listener to close and every connection to close itself, and
 * stop connector retries. io->lock held. */
static void close_everything_locked(jn_io_t *io)
{
    atomic_store(&io->stopping, true);
    for (jn_io_endpoint_t *ep = io->endpoints; ep; ep = ep->next) {
        if (ep->is_listener && ep->listener &&
            (ep->state == JN_EP_PENDING || ep->state == JN_EP_OPEN))
            pn_listener_close(ep->listener);
        if (!ep->is_listener && ep->retry.armed)
            timer_unlink_locked(io, &ep->retry);
    }
    timeout_update_locked(io);
    for (jn_io_conn_t *c = io->conns; c; c = c->reg_next)
        jn_io_conn_wake(c);
}

void jn_io_stop(jn_io_t *io, unsigned timeout_ms)
{
    if (!io->started)
        return;
    pthread_mutex_lock(&io->lock);
    close_everything_locked(io);
    struct timespec deadline = deadline_in(timeout_ms);
    if (!wait_until(io, all_closed, &deadline)) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               "%zu connection(s) did not close within %u ms; disconnecting them", io->live_conns,
               timeout_ms);
        pthread_mutex_unlock(&io->lock);
        pn_condition_t *cond = pn_condition();
        pn_condition_set_name(cond, "amqp:connection:forced");
        pn_condition_set_description(cond, "router shutting down");
        pn_proactor_disconnect(io->proactor, cond);
        pn_condition_free(cond);
        pthread_mutex_lock(&io->lock);
        deadline = deadline_in(1000);
        wait_until(io, all_closed, &deadline);
    }
    io->exiting = true;
    /* Timers left (polls of connections that are gone) must not fire. */
    while (io->timers)
        timer_unlink_locked(io, io->timers);
    timeout_update_locked(io);
    pthread_mutex_unlock(&io->lock);
    pn_proactor_interrupt(io->proactor);
    for (unsigned i = 0; i < io->threads_started; i++)
        pthread_join(io->threads[i], NULL);
    io->threads_started = 0;
    io->started = false;
}

void jn_io_free(jn_io_t *io)
{
    if (!io)
        return;
    /* Connections the core never released (it should have, when stopped):
     * free them so the pools do not report them. */
    pthread_mutex_lock(&io->lock);
    jn_io_conn_t *left = io->conns;
    pthread_mutex_unlock(&io->lock);
    if (left)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               "Connections not released by the core at exit; freeing them");
    while (left) {
        jn_io_conn_t *next = left->reg_next;
        atomic_store(&left->refs, 1);
        jn_io_conn_unref(left);
        left = next;
    }
    pn_proactor_free(io->proactor);
    while (io->endpoints) {
        jn_io_endpoint_t *ep = io->endpoints;
        io->endpoints = ep->next;
        jn_io_endpoint_free(ep);
    }
    pthread_cond_destroy(&io->cond);
    pthread_mutex_destroy(&io->lock);
    free(io->threads);
    free(io->node_id);
    free(io->container_id);
    free(io);
}
