/*
 * io.c — the I/O layer's frame (junction/io.h): the core's callbacks, and
 * start and orderly stop of the event loops (io_loop.c: one per worker
 * thread). The timers are in io_timer.c.
 *
 * Stop: close the listeners, wake every connection so its
 * own loop closes it with a close frame, wait for the transports to close
 * (bounded), then cut what is left (io->forcing: each connection's next
 * pass closes it with amqp:connection:forced), then set io->exiting and
 * notify every loop.
 */
#include "io_own.h"

#include <junction/pool.h>

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the core's callbacks ----------------------------------------------- */

static void core_wake(void *io_conn)
{
    jn_io_conn_wake(io_conn);
}

static void core_conn_released(void *io_conn)
{
    jn_io_conn_unref(io_conn);
}

static void core_colocate(void *io_a, void *io_b)
{
    jn_io_colocate(io_a, io_b);
}

const jn_core_io_ops_t *jn_io_core_ops(void)
{
    static const jn_core_io_ops_t ops = {
        .wake = core_wake, .conn_released = core_conn_released, .colocate = core_colocate};
    return &ops;
}

/* ---- life cycle --------------------------------------------------------- */

/* Descriptors kept back from connections: each loop's epoll and eventfd,
 * the core's eventfd, listening sockets, log files, and the one descriptor
 * an accept over the limit holds until it is closed (connections are
 * accepted and refused one at a time). */
#define JN_IO_FD_RESERVE 64

/* jn_io_max_connections: how many connections may be open at once, from the
 * process's file-descriptor limit (RLIMIT_NOFILE soft limit) less the
 * reserve. Connections accepted past it are closed at once (io_endpoint.c),
 * so accept() itself does not run out of descriptors (EMFILE) while the
 * router has live connections to serve. At least 16. */
size_t jn_io_max_connections(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return SIZE_MAX;
    return rl.rlim_cur > JN_IO_FD_RESERVE + 16 ? (size_t)rl.rlim_cur - JN_IO_FD_RESERVE : 16;
}

static void io_destroy(jn_io_t *io)
{
    if (io->loops) {
        for (unsigned i = 0; i < io->worker_threads; i++)
            jn_io_loop_fini(&io->loops[i]);
    }
    pthread_cond_destroy(&io->cond);
    pthread_cond_destroy(&io->connect_cond);
    pthread_mutex_destroy(&io->lock);
    free(io->loops);
    free(io->node_id);
    free(io->container_id);
    free(io);
}

jn_io_t *jn_io_create(jn_core_t *core, const jn_io_config_t *cfg)
{
    jn_io_t *io = calloc(1, sizeof *io);
    if (!io)
        return NULL;
    io->core = core;
    io->worker_threads = cfg->worker_threads ? cfg->worker_threads : 1;
    io->min_peer_idle_timeout_ms = cfg->min_peer_idle_timeout_ms;
    io->write_stall_ms = cfg->write_stall_timeout_s > UINT32_MAX / 1000u
                             ? UINT32_MAX
                             : cfg->write_stall_timeout_s * 1000u;
    io->max_conns = jn_io_max_connections();
    io->policy_max_conns = cfg->max_connections;
    const char *id = cfg->container_id ? cfg->container_id : "Junction";
    io->container_id = strdup(id);
    size_t n = strlen(id) + 3;
    io->node_id = malloc(n);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&io->lock, NULL);
    pthread_cond_init(&io->cond, &ca);
    pthread_cond_init(&io->connect_cond, NULL);
    pthread_condattr_destroy(&ca);
    atomic_init(&io->next_conn_id, 1);
    atomic_init(&io->pending_frees, 0);
    atomic_init(&io->stopping, false);
    atomic_init(&io->forcing, false);
    atomic_init(&io->exiting, false);
    atomic_init(&io->timer_next, INT64_MAX);
    atomic_init(&io->next_loop, 0);
    io->loops = calloc(io->worker_threads, sizeof *io->loops);
    bool ok = io->container_id && io->node_id && io->loops;
    for (unsigned i = 0; ok && i < io->worker_threads; i++)
        io->loops[i].epfd = io->loops[i].evfd = -1;
    for (unsigned i = 0; ok && i < io->worker_threads; i++)
        ok = jn_io_loop_init(&io->loops[i], io, i) == 0;
    if (!ok) {
        io_destroy(io);
        return NULL;
    }
    snprintf(io->node_id, n, "0/%s", id);
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

int jn_io_start(jn_io_t *io)
{
    /* Listening sockets are bound here, before any loop runs, so a port that
     * cannot be bound fails the start. */
    int rc = 0;
    pthread_mutex_lock(&io->lock);
    io->started = true;
    for (jn_io_endpoint_t *ep = io->endpoints; ep; ep = ep->next) {
        if (ep->is_listener && jn_io_listen(io, ep) != 0)
            rc = JN_EINVAL;
    }
    pthread_mutex_unlock(&io->lock);
    for (unsigned i = 0; i < io->worker_threads; i++) {
        if (pthread_create(&io->loops[i].thread, NULL, jn_io_loop_main, &io->loops[i]) != 0) {
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, "Cannot start worker thread %u", i);
            return JN_ENOMEM;
        }
        io->threads_started++;
    }
    if (pthread_create(&io->connector_thread, NULL, jn_io_connector_main, io) != 0) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, "Cannot start the connector thread");
        return JN_ENOMEM;
    }
    io->connector_started = true;
    for (jn_io_endpoint_t *ep = io->endpoints; ep; ep = ep->next) {
        if (!ep->is_listener)
            jn_io_connect(ep);
    }
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
        if (ep->is_listener && ep->state == JN_EP_OPEN)
            return false;
    }
    return true;
}

/* The started connections of the registry, chained through stop_next,
 * each with a reference taken for the wake (wake_listed). io->lock held.
 *
 * Why a reference, and why the wake comes after the lock is released: a
 * wake takes the queue's reference by adding 1 to the count, which is
 * sound only while the caller holds one (jn_io_conn_wake). The registry
 * holds none: a connection whose last reference was just dropped stays
 * listed until conn_free, waiting for this lock, unlinks it. Waking it
 * from the list re-counted it from 0 and queued its node on its loop's
 * ready queue, conn_free then gave it back to the pool, and the loop's
 * next drain read the freed node (AddressSanitizer: use-after-poison in
 * jn_mpsc_drain, at stop). jn_io_conn_tryref skips those; and the
 * reference taken must be dropped without the lock (the last one frees).
 * One still starting is not listed: its start wakes it, and its pass
 * sees io->stopping and io->forcing. */
static jn_io_conn_t *list_started_locked(jn_io_t *io)
{
    jn_io_conn_t *list = NULL;
    for (jn_io_conn_t *c = io->conns; c; c = c->reg_next) {
        if (atomic_load_explicit(&c->started, memory_order_acquire) && jn_io_conn_tryref(c)) {
            c->stop_next = list;
            list = c;
        }
    }
    return list;
}

/* Wake each connection of list_started_locked's list and drop its
 * reference. io->lock not held. */
static void wake_listed(jn_io_conn_t *list)
{
    while (list) {
        jn_io_conn_t *c = list;
        list = c->stop_next;
        c->stop_next = NULL;
        jn_io_conn_wake(c);
        jn_io_conn_unref(c);
    }
}

/* Ask every listener to close and stop connector retries; return the
 * connections to wake (list_started_locked) so that each closes itself.
 * io->lock held. */
static jn_io_conn_t *close_everything_locked(jn_io_t *io)
{
    atomic_store(&io->stopping, true);
    for (jn_io_endpoint_t *ep = io->endpoints; ep; ep = ep->next) {
        if (ep->is_listener)
            jn_io_listener_close_locked(io, ep);
        if (!ep->is_listener && ep->retry.armed)
            jn_io_timer_cancel_locked(io, &ep->retry);
    }
    return list_started_locked(io);
}

void jn_io_stop(jn_io_t *io, unsigned timeout_ms)
{
    if (!io->started)
        return;
    pthread_mutex_lock(&io->lock);
    if (io->threads_started < io->worker_threads) {
        /* start failed part way: nothing to close politely */
        atomic_store(&io->forcing, true);
    }
    jn_io_conn_t *wake = close_everything_locked(io);
    /* no further attempts: the connector thread ends after the one it is
     * making (a name resolution in progress is waited for) */
    io->connect_queue = NULL;
    io->connector_exit = true;
    pthread_cond_broadcast(&io->connect_cond);
    pthread_mutex_unlock(&io->lock);
    wake_listed(wake);
    if (io->connector_started)
        pthread_join(io->connector_thread, NULL);
    io->connector_started = false;
    pthread_mutex_lock(&io->lock);
    struct timespec deadline = deadline_in(timeout_ms);
    if (!wait_until(io, all_closed, &deadline)) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               "%zu connection(s) did not close within %u ms; disconnecting them", io->live_conns,
               timeout_ms);
        atomic_store(&io->forcing, true);
        wake = list_started_locked(io);
        pthread_mutex_unlock(&io->lock);
        wake_listed(wake);
        pthread_mutex_lock(&io->lock);
        deadline = deadline_in(1000);
        wait_until(io, all_closed, &deadline);
    }
    pthread_mutex_unlock(&io->lock);
    atomic_store_explicit(&io->exiting, true, memory_order_release);
    for (unsigned i = 0; i < io->threads_started; i++)
        jn_io_loop_notify(&io->loops[i]);
    for (unsigned i = 0; i < io->threads_started; i++)
        pthread_join(io->loops[i].thread, NULL);
    /* Timers left (ticks and polls of connections that did not close)
     * must not fire, and their references go with them. After the join,
     * so that no pass re-arms one meanwhile. */
    jn_io_timers_cancel_all(io);
    io->threads_started = 0;
    io->started = false;
}

int jn_io_set_tls_profile(jn_io_t *io, const char *name, jn_tls_profile_t *p)
{
    jn_io_tls_entry_t *fresh = NULL;
    if (p) {
        fresh = calloc(1, sizeof *fresh);
        if (!fresh || !(fresh->name = strdup(name))) {
            free(fresh);
            return JN_ENOMEM;
        }
        fresh->profile = jn_tls_profile_ref(p);
    }
    jn_tls_profile_t *old = NULL;
    pthread_mutex_lock(&io->lock);
    jn_io_tls_entry_t **e = &io->tls_profiles;
    while (*e && strcmp((*e)->name, name) != 0)
        e = &(*e)->next;
    jn_io_tls_entry_t *gone = NULL;
    if (*e && fresh) {
        old = (*e)->profile;
        (*e)->profile = fresh->profile;
        gone = fresh;
        gone->profile = NULL;
    } else if (*e) {
        gone = *e;
        *e = gone->next;
        old = gone->profile;
    } else if (fresh) {
        fresh->next = io->tls_profiles;
        io->tls_profiles = fresh;
    }
    pthread_mutex_unlock(&io->lock);
    jn_tls_profile_unref(old); /* live connections keep their own references */
    if (gone) {
        free(gone->name);
        free(gone);
    }
    return 0;
}

jn_tls_profile_t *jn_io_tls_profile_get(jn_io_t *io, const char *name)
{
    jn_tls_profile_t *p = NULL;
    pthread_mutex_lock(&io->lock);
    for (jn_io_tls_entry_t *e = io->tls_profiles; e; e = e->next) {
        if (strcmp(e->name, name) == 0) {
            p = jn_tls_profile_ref(e->profile);
            break;
        }
    }
    pthread_mutex_unlock(&io->lock);
    return p;
}

void jn_io_free(jn_io_t *io)
{
    if (!io)
        return;
    /* Wakes queued after a loop's last drain (their waker read io->exiting
     * just before it was set) hold references, and so do the timers of a
     * layer that never started (tests drive loop 0 themselves): no waker
     * and no loop is left now, so both give them back. */
    if (io->loops) {
        for (unsigned i = 0; i < io->worker_threads; i++)
            jn_io_loop_drain_exit(&io->loops[i]);
    }
    jn_io_timers_cancel_all(io);
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
        jn_io_loop_t *was = jn_io_adopt(left); /* the loops have ended */
        jn_io_conn_destroy_IO(left);
        jn_io_adopt_end(was);
        atomic_store(&left->refs, 1);
        jn_io_conn_unref(left);
        left = next;
    }
    while (io->endpoints) {
        jn_io_endpoint_t *ep = io->endpoints;
        io->endpoints = ep->next;
        jn_io_endpoint_free(ep);
    }
    while (io->tls_profiles) {
        jn_io_tls_entry_t *e = io->tls_profiles;
        io->tls_profiles = e->next;
        jn_tls_profile_unref(e->profile);
        free(e->name);
        free(e);
    }
    io_destroy(io);
}

/* jn_io_residence_read: see junction/io.h. */
void jn_io_residence_read(jn_io_t *io, jn_residence_t *out)
{
    memset(out, 0, sizeof *out);
    for (unsigned i = 0; i < io->worker_threads; i++) {
        jn_io_loop_t *loop = &io->loops[i];
        for (unsigned c = 0; c < JN_RES_CLASSES; c++) {
            for (unsigned b = 0; b < JN_RES_BUCKETS; b++)
                out->count[c][b] +=
                    atomic_load_explicit(&loop->res_count[c][b], memory_order_relaxed);
            out->sum_ns[c] += atomic_load_explicit(&loop->res_sum_ns[c], memory_order_relaxed);
        }
    }
}

/* jn_io_policy_stats: see junction/io.h. */
void jn_io_policy_stats(jn_io_t *io, jn_policy_conn_stats_t *out)
{
    pthread_mutex_lock(&io->lock);
    out->processed = io->policy_processed;
    out->denied = io->policy_denied;
    out->current = io->policy_current;
    pthread_mutex_unlock(&io->lock);
    out->links_denied = out->sessions_denied = 0;
    if (io->policy)
        jn_policy_totals(io->policy, &out->links_denied, &out->sessions_denied);
    out->max_message_size_denied =
        atomic_load_explicit(&io->policy_maxsize_denied, memory_order_relaxed);
}
