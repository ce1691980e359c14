/*
 * core.c — the core thread (junction/core.h): its life cycle, the action
 * queue and the loop that drains it.
 *
 * The loop. The core thread drains up to JN_CORE_BATCH actions at a time
 * from its MPSC queue, carries each out, then ends the batch: every incoming
 * link whose credit changed during the batch gets at most one LINK_CREDIT
 * (link.c). When the queue is empty it sleeps in read() on an eventfd. A
 * producer whose push finds the queue empty (jn_mpsc_push returns true, see
 * junction/queue.h) writes 1 to the eventfd; the eventfd latches, so a write
 * that lands between the core's last empty check and its read() is not lost,
 * and there is one write per empty->non-empty transition, not one per
 * action. When the queue is not empty but nothing is visible (a producer is
 * between the two steps of its push), the core yields and retries instead
 * of sleeping.
 *
 * Spin. After a batch that did work, the core polls the queue for up to
 * JN_CORE_SPIN_NS before it sleeps, so a stream's next actions find it
 * awake and pay no eventfd write, no read and no thread wake (measured in
 * docs/performance.md: about a fifth of the sleeps at saturation; a
 * ping-pong's next action comes later than the spin, so it still sleeps).
 * An idle core does not spin: a spin that found nothing ends in sleep, and
 * only work starts another.
 * While it runs or spins, core->awake is true and producers skip the
 * eventfd write. The handshake is the store-buffering pattern, all seq_cst:
 * the producer increments the queue's count then loads awake; the core
 * stores awake = false then loads the count; so either the core sees the
 * action and does not sleep, or the producer sees false and writes.
 *
 * Inline. I/O loop threads (jn_core_inline_thread_begin) run the core
 * themselves instead of waking the core thread: their posts skip the
 * eventfd, and after each pass over their connections they call
 * jn_core_run_inline, which takes the core's token (core->running) and
 * drains the queue on the calling thread, so a delivery read on a loop is
 * routed and queued for its outgoing connection without a thread hand-off
 * (with one worker thread the whole single-hop path runs on one thread).
 * Whoever holds the token is "the core thread" for JN_ASSERT_CT and for
 * every structure the core owns; the token's exchange and store order the
 * holders one after another. A thread that finds the token taken leaves
 * its actions to the holder: the holder, after it gives the token back,
 * loads the queue's count (seq_cst, the store-buffering pattern again) and
 * takes the token again when something is there. The core thread itself
 * takes the token for its own batches and ticks and runs only what
 * foreign threads (the main thread, at start and stop) post, the mesh's
 * timers, and what no loop happens to run.
 *
 * Stop. jn_core_stop posts a stop action behind everything posted before it
 * (the I/O layer has stopped and reported every connection closed), so the
 * core processes those closes, then leaves its loop. jn_core_free drains
 * whatever is left on the main thread in the core thread's role.
 */
#include "delivery.h"

#include <junction/iterator.h>
#include <junction/pool.h>
#include <junction/time.h>

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* How long the core polls its queue after a batch that did work before it
 * sleeps (see the top). 0 turns the spin off. */
#ifndef JN_CORE_SPIN_NS
#define JN_CORE_SPIN_NS 10000
#endif

/* Batches a loop thread runs inline at most per call before it goes back
 * to its own connections (it is called again at once: the rest waits a
 * pass, not a sleep). Each batch is up to JN_CORE_BATCH actions. */
#define JN_CORE_INLINE_BATCHES 16

/* True on I/O loop threads: they run the core inline (see the top). */
static _Thread_local bool inline_poster;

/* Take the core's token: true when this thread now holds it. */
static inline bool token_take(jn_core_t *core)
{
    return !atomic_exchange_explicit(&core->running, true, memory_order_seq_cst);
}

static inline void token_give(jn_core_t *core)
{
    atomic_store_explicit(&core->running, false, memory_order_seq_cst);
}

jn_core_t *jn_core_create(const jn_core_config_t *cfg, const jn_core_io_ops_t *ops)
{
    if (!cfg || !ops || !ops->wake || !ops->conn_released ||
        (unsigned)cfg->default_distribution > JN_DIST_UNAVAILABLE)
        return NULL;
    jn_core_t *core = calloc(1, sizeof *core);
    if (!core)
        return NULL;
    core->wake_fd = -1;
    atomic_init(&core->awake, true);
    atomic_init(&core->running, false);
    atomic_init(&core->stop, false);
    atomic_init(&core->mc_waiting, false);
    atomic_init(&core->timer_at_ms, 0);
    jn_addr_config_init(&core->config);
    jn_mpsc_init(&core->actions);
    core->stop_action.type = JN_ACT_STOP;
    core->router_id = strdup(cfg->router_id ? cfg->router_id : "Junction");
    core->edge_mode = cfg->edge;
    core->deny_resumable_lr = cfg->deny_resumable_link_routes;
    core->stream_scrub_ms = cfg->test_hooks ? JN_STREAM_TEST_SCRUB_MS : JN_STREAM_SCRUB_MS;
    core->stream_pool_max = cfg->test_hooks ? JN_STREAM_TEST_POOL_MAX : JN_STREAM_POOL_MAX;
    core->ct.addrs = jn_hash_create(64);
    core->wake_fd = eventfd(0, EFD_CLOEXEC);
    if (!core->router_id || !core->ct.addrs || core->wake_fd < 0 ||
        jn_iter_configure("0", core->router_id, cfg->edge) != 0 || jn_router_init(core, cfg) != 0 ||
        jn_lr_init(core) != 0) {
        jn_core_free(core);
        return NULL;
    }
    core->default_distribution = cfg->default_distribution;
    core->ops = *ops;
    return core;
}

int jn_core_add_address_config(jn_core_t *core, const char *prefix_or_pattern, bool pattern,
                               jn_distribution_t distribution)
{
    if (core->started)
        return JN_EINVAL;
    return jn_addr_config_add(&core->config, prefix_or_pattern, pattern, distribution);
}

int jn_core_set_address_backpressure(jn_core_t *core, bool on)
{
    if (core->started || core->config.count == 0)
        return JN_EINVAL;
    core->config.entries[core->config.count - 1].mc_backpressure = on;
    return 0;
}

void jn_core_post(jn_core_t *core, jn_action_t *action)
{
    if (!jn_mpsc_push(&core->actions, &action->node))
        return;
    if (inline_poster)
        return; /* this loop runs the core itself before it sleeps */
    if (atomic_load_explicit(&core->awake, memory_order_seq_cst))
        return; /* running or spinning: it sees the action (see the top) */
    uint64_t one = 1;
    /* The only failure modes are a counter overflow (2^64 - 1 wakes) and a
     * closed descriptor (a post after jn_core_free, a caller bug). */
    ssize_t n;
    do {
        n = write(core->wake_fd, &one, sizeof one);
    } while (n < 0 && errno == EINTR);
    JN_CHECK(n == (ssize_t)sizeof one);
}

/* Wake the core thread from its sleep (it recomputes the sleep's
 * timeout). A failed write only means it is woken already (a full
 * counter). */
static void poke_core_thread(jn_core_t *core)
{
    uint64_t one = 1;
    ssize_t n;
    do {
        n = write(core->wake_fd, &one, sizeof one);
    } while (n < 0 && errno == EINTR);
}

void jn_core_resleep_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    if (inline_poster)
        poke_core_thread(core);
}

void jn_core_watch_mc_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    if (atomic_load_explicit(&core->mc_waiting, memory_order_relaxed))
        return;
    atomic_store_explicit(&core->mc_waiting, true, memory_order_relaxed);
    if (core->ct.mc_next_check_ms == 0 || core->ct.mc_next_check_ms < (int64_t)jn_time_mono_ms())
        core->ct.mc_next_check_ms = (int64_t)jn_time_mono_ms() + JN_CORE_MC_CHECK_MS;
    /* The core thread may be asleep with no timeout while an I/O loop runs
     * the core inline: wake it so that it sleeps with the watch's. At most
     * once per check interval (the watch clears the flag when nothing
     * waits). */
    poke_core_thread(core);
}

/* A jn_core_call request (heap, freed once run). */
typedef struct call_action {
    jn_action_t base;
    jn_core_call_fn fn;
    void *arg;
} call_action_t;

int jn_core_call(jn_core_t *core, jn_core_call_fn fn, void *arg)
{
    call_action_t *c = malloc(sizeof *c);
    if (!c)
        return JN_ENOMEM;
    c->base.type = JN_ACT_CALL;
    c->fn = fn;
    c->arg = arg;
    jn_core_post(core, &c->base);
    return 0;
}

/* Carry out one action. Core thread. */
static void dispatch_CT(jn_core_t *core, jn_mpsc_node_t *node)
{
    JN_ASSERT_CT(core);
    jn_action_t *a = JN_CONTAINER_OF(node, jn_action_t, node);
    switch ((jn_action_type_t)a->type) {
    case JN_ACT_CONN_OPENED:
        jn_conn_opened_CT(JN_CONTAINER_OF(a, jn_core_conn_t, open_action));
        break;
    case JN_ACT_CONN_CLOSED:
        jn_conn_closed_CT(JN_CONTAINER_OF(a, jn_core_conn_t, close_action));
        break;
    case JN_ACT_LINK_ATTACHED:
        jn_link_attached_CT(JN_CONTAINER_OF(a, jn_core_link_t, attach_action));
        break;
    case JN_ACT_LINK_DETACHED:
        jn_link_detached_CT(JN_CONTAINER_OF(a, jn_core_link_t, detach_action), false);
        break;
    case JN_ACT_LINK_FLOW: {
        jn_core_link_t *link = JN_CONTAINER_OF(a, jn_core_link_t, flow_action);
        jn_link_flow_CT(link);
        jn_link_unref(link); /* the posted action's reference */
        break;
    }
    case JN_ACT_DLV_ARRIVED:
        /* the action's reference becomes the core's (delivery.h) */
        jn_forward_arrived_CT(JN_CONTAINER_OF(a, jn_delivery_t, arrive_action));
        break;
    case JN_ACT_DLV_CONTINUED: {
        jn_delivery_t *dlv = JN_CONTAINER_OF(a, jn_delivery_t, continue_action);
        jn_forward_continued_CT(dlv);
        jn_dlv_unref(dlv);
        break;
    }
    case JN_ACT_DLV_UPDATE: {
        jn_update_action_t *u = JN_CONTAINER_OF(a, jn_update_action_t, base);
        jn_forward_update_CT(u->dlv, &u->disp, u->settled);
        jn_update_action_free(u);
        break;
    }
    case JN_ACT_CALL: {
        call_action_t *c = JN_CONTAINER_OF(a, call_action_t, base);
        c->fn(c->arg, core);
        free(c);
        break;
    }
    case JN_ACT_LINK_ANSWERED: {
        jn_core_link_t *link = JN_CONTAINER_OF(a, jn_core_link_t, answer_action);
        if (link->type == JN_LINK_EDGE_REPLY)
            jn_edge_reply_answered_CT(link);
        else
            jn_lr_answered_CT(link);
        jn_link_unref(link); /* the posted action's reference */
        break;
    }
    case JN_ACT_STOP:
        atomic_store(&core->stop, true);
        if (jn_ct_role_ != NULL && inline_poster) {
            uint64_t one = 1; /* carried out on a loop: tell the core thread */
            JN_CHECK(write(core->wake_fd, &one, sizeof one) == (ssize_t)sizeof one);
        }
        break;
    default:
        JN_CHECK(!"unknown core action");
    }
}

void jn_core_timer_at_CT(jn_core_t *core, int64_t at_ms)
{
    JN_ASSERT_CT(core);
    long long was = atomic_load_explicit(&core->timer_at_ms, memory_order_relaxed);
    if (was != 0 && was <= at_ms)
        return;
    atomic_store_explicit(&core->timer_at_ms, at_ms > 0 ? at_ms : 1, memory_order_relaxed);
    /* the core thread may sleep with no timeout while a loop runs the core
     * inline: wake it to sleep with this one (rare: auto-link retries) */
    poke_core_thread(core);
}

/* The core timer, when due (a clock read only while one is set). */
static void timer_tick_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    long long at = atomic_load_explicit(&core->timer_at_ms, memory_order_relaxed);
    if (JN_LIKELY(at == 0) || (int64_t)jn_time_mono_ms() < at)
        return;
    atomic_store_explicit(&core->timer_at_ms, 0, memory_order_relaxed);
    jn_lr_tick_CT(core);              /* sets it again for what is still to come */
    jn_forward_figures_tick_CT(core); /* so does this */
}

/* How long the core thread may sleep for the core timer (timeout: what
 * else allows; -1 forever). Without the token: only the atomic. */
static int timer_sleep_ms(jn_core_t *core, int timeout)
{
    long long at = atomic_load_explicit(&core->timer_at_ms, memory_order_relaxed);
    if (at == 0)
        return timeout;
    int64_t left = at - (int64_t)jn_time_mono_ms();
    if (left < 0)
        left = 0;
    return timeout < 0 || left < timeout ? (int)left : timeout;
}

/* Drain and carry out one batch; returns the number of actions taken. */
static size_t run_batch_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    jn_mpsc_node_t *batch[JN_CORE_BATCH];
    size_t n = jn_mpsc_drain(&core->actions, batch, JN_CORE_BATCH);
    if (n == 0)
        return 0;
    core->ct.batch++;
    core->ct.batch_ns = jn_time_mono_ns(); /* delayed deliveries (forward.c) */
    for (size_t i = 0; i < n; i++)
        dispatch_CT(core, batch[i]);
    if (core->mesh || core->edge_mode)
        jn_router_tick_CT(core); /* one clock read per batch, interior and edge only */
    if (atomic_load_explicit(&core->mc_waiting, memory_order_relaxed))
        jn_forward_mc_tick_CT(core); /* a clock read per batch while copies wait */
    timer_tick_CT(core);
    jn_link_flush_resume_CT(core);
    jn_link_flush_credit_CT(core);
    return n;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The core thread takes and gives the token around each stretch of core
 * work, and is "the core thread" (JN_ASSERT_CT) only while it holds it. */
static bool ct_enter(jn_core_t *core)
{
    if (!token_take(core))
        return false;
    jn_ct_role_ = core;
    return true;
}

static void ct_leave(jn_core_t *core)
{
    jn_ct_role_ = NULL;
    token_give(core);
}

/* Poll the queue for up to JN_CORE_SPIN_NS; true when an action came. */
static bool spin_queue(jn_core_t *core)
{
    if (JN_CORE_SPIN_NS == 0)
        return false;
    uint64_t deadline = jn_time_mono_ns() + JN_CORE_SPIN_NS;
    do {
        for (int i = 0; i < 64; i++) {
            if (!jn_mpsc_empty(&core->actions))
                return true;
            cpu_relax();
        }
    } while (jn_time_mono_ns() < deadline);
    return false;
}

/* Sleep until a producer writes the eventfd (or, for an interior router,
 * until the mesh's next tick: then poll() first, so a standalone router
 * keeps one syscall per sleep). */
static void core_sleep(jn_core_t *core)
{
    /* the mesh's timers are the core's: read them holding the token (a
     * loop that holds it ticks them after each batch of its own, so
     * without it a short wait is enough) */
    int timeout = -1;
    if (core->mesh || core->edge_mode) {
        if (ct_enter(core)) {
            timeout = jn_router_sleep_ms_CT(core);
            ct_leave(core);
        } else {
            timeout = 20; /* the mesh's flush interval (mesh_side.c) */
        }
    }
    timeout = jn_forward_mc_sleep_ms(core, timeout);
    timeout = timer_sleep_ms(core, timeout);
    if (timeout >= 0) {
        struct pollfd p = {.fd = core->wake_fd, .events = POLLIN};
        int rc = timeout > 0 ? poll(&p, 1, timeout) : 0;
        if (rc <= 0) {
            if (ct_enter(core)) { /* else the holder ticks, per batch */
                jn_router_tick_CT(core);
                if (atomic_load_explicit(&core->mc_waiting, memory_order_relaxed))
                    jn_forward_mc_tick_CT(core);
                timer_tick_CT(core);
                jn_link_flush_resume_CT(core);
                jn_link_flush_credit_CT(core);
                ct_leave(core);
            }
            return;
        }
    }
    uint64_t count;
    ssize_t n;
    do {
        n = read(core->wake_fd, &count, sizeof count);
    } while (n < 0 && errno == EINTR);
    JN_CHECK(n == (ssize_t)sizeof count);
}

static void *core_main(void *arg)
{
    jn_core_t *core = arg;
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO, "Router core thread running, id=%s%s",
           core->router_id, core->mesh ? " (interior)" : "");
    while (!ct_enter(core))
        sched_yield();
    int started = jn_router_start_CT(core);
    ct_leave(core);
    if (started != 0)
        JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_ERROR, "Out of memory for the management address");
    bool worked = false; /* a batch since the last sleep or spin */
    while (!atomic_load(&core->stop)) {
        bool held = ct_enter(core);
        size_t n = held ? run_batch_CT(core) : 0;
        if (held)
            ct_leave(core);
        if (n > 0) {
            worked = true;
            continue;
        }
        if (held && !jn_mpsc_empty(&core->actions)) {
            sched_yield(); /* a producer is mid-push: its node comes soon */
            continue;
        }
        /* Not held: a loop is running the core and will look at the queue
         * again when it lets go; sleep until a foreign post or a tick. */
        bool spin = worked;
        worked = false;
        if (spin && spin_queue(core))
            continue;
        atomic_store_explicit(&core->awake, false, memory_order_seq_cst);
        if (!held || atomic_load_explicit(&core->actions.pending, memory_order_seq_cst) == 0)
            core_sleep(core);
        atomic_store_explicit(&core->awake, true, memory_order_relaxed);
    }
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO, "Router core thread stopped");
    jn_pool_thread_exit();
    return NULL;
}

void jn_core_inline_thread_begin(void)
{
    inline_poster = true;
}

bool jn_core_run_inline(jn_core_t *core)
{
    const void *prev = jn_ct_role_;
    int batches = 0;
    while (atomic_load_explicit(&core->actions.pending, memory_order_seq_cst) != 0) {
        if (!token_take(core))
            return false; /* the holder looks again after it lets go */
        jn_ct_role_ = core;
        size_t n;
        while ((n = run_batch_CT(core)) > 0 && ++batches < JN_CORE_INLINE_BATCHES) {
        }
        jn_ct_role_ = prev;
        token_give(core);
        if (batches >= JN_CORE_INLINE_BATCHES)
            return atomic_load_explicit(&core->actions.pending, memory_order_relaxed) != 0;
        if (n == 0 && atomic_load_explicit(&core->actions.pending, memory_order_seq_cst) != 0)
            sched_yield(); /* a producer is mid-push: its node comes soon */
    }
    return false;
}

uint64_t jn_core_next_identity(jn_core_t *core)
{
    /* no JN_ASSERT_CT: the main thread loads the config before the core
     * runs (then no other thread touches the counter) */
    return ++core->ct.next_link_id;
}

int jn_core_start(jn_core_t *core)
{
    if (core->started)
        return JN_EINVAL;
    if (pthread_create(&core->thread, NULL, core_main, core) != 0)
        return JN_ENOMEM;
    core->started = true;
    return 0;
}

void jn_core_stop(jn_core_t *core)
{
    if (!core->started || core->joined)
        return;
    jn_core_post(core, &core->stop_action);
    pthread_join(core->thread, NULL);
    core->joined = true;
}

/* Carry out what is left after the core thread ended (or never ran), on the
 * calling (main) thread in the core thread's role: actions posted late, and
 * connections whose close was never reported (an I/O layer bug; they are
 * closed here so that nothing leaks). */
static void teardown(jn_core_t *core)
{
    while (!ct_enter(core))
        sched_yield(); /* nobody else runs the core any more: at once */
    for (;;) {
        if (run_batch_CT(core) > 0)
            continue;
        if (jn_mpsc_empty(&core->actions))
            break;
        sched_yield();
    }
    while (core->ct.conns) {
        JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_WARNING,
               "[C%" PRIu64 "] Connection still open at shutdown", core->ct.conns->conn_id);
        jn_conn_closed_CT(core->ct.conns);
    }
    jn_link_flush_resume_CT(core);
    jn_link_flush_credit_CT(core);
    jn_router_fini_CT(core);
    jn_addr_free_all_CT(core);
    jn_lr_fini(core);
    ct_leave(core);
}

void jn_core_free(jn_core_t *core)
{
    if (!core)
        return;
    jn_core_stop(core);
    if (core->ct.addrs && core->wake_fd >= 0)
        teardown(core);
    jn_router_free(core);
    jn_lr_fini(core); /* a no-op after the teardown's */
    jn_edge_clients_fini(core);
    jn_exchange_fini(core);
    jn_hash_free(core->ct.addrs);
    jn_addr_config_fini(&core->config);
    if (core->wake_fd >= 0)
        close(core->wake_fd);
    free(core->router_id);
    free(core);
}

void jn_core_get_stats(jn_core_t *core, jn_core_stats_t *out)
{
#define LOAD(f) atomic_load_explicit(&core->stats.f, memory_order_relaxed)
    memset(out, 0, sizeof *out);
    out->deliveries_ingress = LOAD(ingress);
    out->deliveries_egress = LOAD(egress);
    out->deliveries_released = LOAD(released);
    out->deliveries_accepted = LOAD(accepted);
    out->deliveries_rejected = LOAD(rejected);
    out->deliveries_modified = LOAD(modified);
    out->deliveries_presettled = LOAD(presettled);
    out->deliveries_dropped = LOAD(dropped);
    out->addresses = LOAD(addresses);
    out->links = LOAD(links);
    out->connections = LOAD(connections);
    out->deliveries_transit = LOAD(transit);
    out->deliveries_ingress_route_container = LOAD(ingress_rc);
    out->deliveries_egress_route_container = LOAD(egress_rc);
    out->deliveries_fallback = LOAD(fallback);
    out->deliveries_delayed_1sec = LOAD(delayed1);
    out->deliveries_delayed_10sec = LOAD(delayed10);
    out->deliveries_stuck = LOAD(stuck);
    out->links_blocked = LOAD(links_blocked);
#undef LOAD
}
