/*
 * test_util_queue.c — the MPSC queue (junction/queue.h): FIFO order, the
 * empty→non-empty signal, drain batches, and a stress test with four
 * producers and a consumer that sleeps whenever the queue is empty, checking
 * order per producer, no loss, no duplicate, wakeups <= pushes, and that no
 * wakeup is ever lost; and a node-reuse stress test shaped like the I/O
 * loops' ready queue (a few nodes re-pushed by any thread as soon as the
 * consumer hands them back, guarded by a per-node "queued" flag), checking
 * that a node is never handed out twice for one push nor while it is
 * queued.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/queue.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

typedef struct item {
    jn_mpsc_node_t node;
    unsigned producer;
    uint32_t seq;
} item_t;

#define ITEM_OF(n) ((item_t *)((char *)(n)-offsetof(item_t, node)))

static void test_pop_empty_returns_null(void **state)
{
    (void)state;
    jn_mpsc_t q;
    jn_mpsc_init(&q);
    assert_true(jn_mpsc_empty(&q));
    assert_null(jn_mpsc_pop(&q));
    jn_mpsc_node_t *out[4];
    assert_int_equal(jn_mpsc_drain(&q, out, 4), 0);
}

static void test_push_pop_is_fifo(void **state)
{
    (void)state;
    jn_mpsc_t q;
    jn_mpsc_init(&q);
    item_t items[10];
    for (uint32_t i = 0; i < 10; i++) {
        items[i].seq = i;
        jn_mpsc_push(&q, &items[i].node);
    }
    for (uint32_t i = 0; i < 10; i++) {
        jn_mpsc_node_t *n = jn_mpsc_pop(&q);
        assert_non_null(n);
        assert_int_equal(ITEM_OF(n)->seq, i);
    }
    assert_null(jn_mpsc_pop(&q));
    assert_true(jn_mpsc_empty(&q));
}

static void test_push_reports_empty_to_non_empty_only(void **state)
{
    (void)state;
    jn_mpsc_t q;
    jn_mpsc_init(&q);
    item_t a, b, c;
    assert_true(jn_mpsc_push(&q, &a.node));  /* empty → non-empty */
    assert_false(jn_mpsc_push(&q, &b.node)); /* already non-empty */
    assert_false(jn_mpsc_empty(&q));
    assert_ptr_equal(jn_mpsc_pop(&q), &a.node);
    assert_false(jn_mpsc_push(&q, &c.node)); /* b still queued */
    assert_ptr_equal(jn_mpsc_pop(&q), &b.node);
    assert_ptr_equal(jn_mpsc_pop(&q), &c.node);
    assert_true(jn_mpsc_empty(&q));
    assert_true(jn_mpsc_push(&q, &a.node)); /* empty again → signal again */
    assert_ptr_equal(jn_mpsc_pop(&q), &a.node);
}

static void test_drain_takes_at_most_max_in_order(void **state)
{
    (void)state;
    jn_mpsc_t q;
    jn_mpsc_init(&q);
    item_t items[7];
    for (uint32_t i = 0; i < 7; i++) {
        items[i].seq = i;
        jn_mpsc_push(&q, &items[i].node);
    }
    jn_mpsc_node_t *out[4];
    assert_int_equal(jn_mpsc_drain(&q, out, 4), 4);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(ITEM_OF(out[i])->seq, i);
    assert_false(jn_mpsc_empty(&q));
    assert_int_equal(jn_mpsc_drain(&q, out, 4), 3);
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(ITEM_OF(out[i])->seq, i + 4);
    assert_true(jn_mpsc_empty(&q));
    assert_int_equal(jn_mpsc_drain(&q, out, 4), 0);
}

/* --- stress ------------------------------------------------------------ */

#define PRODUCERS    4
#define PER_PRODUCER 200000

/* The consumer's latching wakeup: a flag under a mutex + condition. */
struct stress {
    jn_mpsc_t q;
    item_t *items; /* PRODUCERS * PER_PRODUCER */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool wake_flag;           /* lock */
    _Atomic uint64_t wakeups; /* sent by producers */
    _Atomic uint64_t pushes;
    uint64_t sleeps;       /* consumer only */
    uint64_t lost_wakeups; /* consumer only: timed out with work queued */
};

struct producer_arg {
    struct stress *s;
    unsigned id;
};

static void *producer(void *arg)
{
    struct producer_arg *pa = arg;
    struct stress *s = pa->s;
    for (uint32_t i = 0; i < PER_PRODUCER; i++) {
        item_t *it = &s->items[(size_t)pa->id * PER_PRODUCER + i];
        it->producer = pa->id;
        it->seq = i;
        atomic_fetch_add(&s->pushes, 1);
        if (jn_mpsc_push(&s->q, &it->node)) {
            atomic_fetch_add(&s->wakeups, 1);
            pthread_mutex_lock(&s->lock);
            s->wake_flag = true;
            pthread_cond_signal(&s->cond);
            pthread_mutex_unlock(&s->lock);
        }
        if ((i & 1023) == 0)
            sched_yield(); /* let the queue run empty now and then */
    }
    return NULL;
}

/* Sleep until woken. A wait that times out while the queue holds nodes
 * means a wakeup was lost (the producers are running, the wait is 2 s). */
static void consumer_sleep(struct stress *s)
{
    s->sleeps++;
    pthread_mutex_lock(&s->lock);
    while (!s->wake_flag) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 2;
        if (pthread_cond_timedwait(&s->cond, &s->lock, &ts) == ETIMEDOUT) {
            if (!jn_mpsc_empty(&s->q)) {
                s->lost_wakeups++;
                break;
            }
        }
    }
    s->wake_flag = false;
    pthread_mutex_unlock(&s->lock);
}

static void test_stress_four_producers_sleeping_consumer(void **state)
{
    (void)state;
    struct stress *s = calloc(1, sizeof(*s));
    s->items = calloc((size_t)PRODUCERS * PER_PRODUCER, sizeof(item_t));
    assert_non_null(s->items);
    jn_mpsc_init(&s->q);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);

    pthread_t t[PRODUCERS];
    struct producer_arg pa[PRODUCERS];
    for (unsigned i = 0; i < PRODUCERS; i++) {
        pa[i] = (struct producer_arg){s, i};
        assert_int_equal(pthread_create(&t[i], NULL, producer, &pa[i]), 0);
    }

    uint32_t next_seq[PRODUCERS] = {0};
    uint64_t received = 0, order_errors = 0;
    const uint64_t total = (uint64_t)PRODUCERS * PER_PRODUCER;
    jn_mpsc_node_t *batch[64];
    while (received < total) {
        size_t n = jn_mpsc_drain(&s->q, batch, 64);
        for (size_t i = 0; i < n; i++) {
            item_t *it = ITEM_OF(batch[i]);
            /* strictly increasing and gap-free: no loss, no duplicate */
            if (it->seq != next_seq[it->producer])
                order_errors++;
            next_seq[it->producer] = it->seq + 1;
        }
        received += n;
        if (n > 0)
            continue;
        if (jn_mpsc_empty(&s->q))
            consumer_sleep(s); /* protocol: sleep only when empty */
        else
            sched_yield(); /* a producer is mid-push */
    }
    for (unsigned i = 0; i < PRODUCERS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);

    assert_int_equal(order_errors, 0);
    assert_int_equal(received, total);
    for (unsigned i = 0; i < PRODUCERS; i++)
        assert_int_equal(next_seq[i], PER_PRODUCER);
    assert_null(jn_mpsc_pop(&s->q));
    assert_true(jn_mpsc_empty(&s->q));
    assert_int_equal(s->lost_wakeups, 0);
    uint64_t wakeups = atomic_load(&s->wakeups);
    assert_in_range(wakeups, 1, atomic_load(&s->pushes));
    /* every sleep but a possible final one was ended by a wakeup */
    assert_in_range(s->sleeps, 0, wakeups);
    print_message("pushes %llu, wakeups %llu, consumer sleeps %llu\n",
                  (unsigned long long)atomic_load(&s->pushes), (unsigned long long)wakeups,
                  (unsigned long long)s->sleeps);

    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s->items);
    free(s);
}

/* --- node reuse ---------------------------------------------------------- */

/* The I/O loops' ready queue (router/io/io_loop.c, jn_io_conn_wake and
 * take_ready): each connection has one node and a flag; the waker that
 * flips the flag pushes the node, the consumer clears the flag after it
 * took the node, and the node may be pushed again at once, by any thread.
 * With a handful of nodes the queue keeps running down to its last node,
 * so the consumer re-links the stub all the time, with producers racing
 * it. Each node counts how many times it is in the queue (must be 0 or 1)
 * and is handed out exactly once per push. */

#define REUSE_NODES     4
#define REUSE_PRODUCERS 3
#define REUSE_PUSHES    100000 /* per producer */

typedef struct reuse_node {
    jn_mpsc_node_t node;
    atomic_bool queued;     /* the wake flag */
    atomic_int in_queue;    /* pushes not yet handed out: 0 or 1 */
    atomic_ulong pushes;    /* by the producers */
    unsigned long taken;    /* by the consumer */
} reuse_node_t;

struct reuse {
    jn_mpsc_t q;
    reuse_node_t nodes[REUSE_NODES];
    atomic_uint producers_done;
    atomic_ulong errors; /* a node pushed while it was in the queue */
};

static void *reuse_producer(void *arg)
{
    struct reuse *r = arg;
    unsigned seed = (unsigned)(uintptr_t)&seed;
    unsigned long pushed = 0, missed = 0;
    while (pushed < REUSE_PUSHES) {
        seed = seed * 1103515245u + 12345u;
        reuse_node_t *n = &r->nodes[(seed >> 16) % REUSE_NODES];
        if (atomic_exchange_explicit(&n->queued, true, memory_order_acq_rel)) {
            /* queued already: that take covers this wake */
            if (++missed % 64 == 0)
                sched_yield(); /* let the consumer take them */
            continue;
        }
        if (atomic_fetch_add(&n->in_queue, 1) != 0)
            atomic_fetch_add(&r->errors, 1);
        atomic_fetch_add(&n->pushes, 1);
        jn_mpsc_push(&r->q, &n->node);
        pushed++;
    }
    atomic_fetch_add(&r->producers_done, 1);
    return NULL;
}

static unsigned long reuse_take(struct reuse *r, unsigned long *bad)
{
    jn_mpsc_node_t *batch[64];
    size_t got = jn_mpsc_drain(&r->q, batch, 64);
    for (size_t i = 0; i < got; i++) {
        reuse_node_t *n = (reuse_node_t *)((char *)batch[i] - offsetof(reuse_node_t, node));
        /* handed out once per push: it was in the queue exactly once */
        if (atomic_fetch_sub(&n->in_queue, 1) != 1)
            (*bad)++;
        n->taken++;
        atomic_store_explicit(&n->queued, false, memory_order_release);
    }
    return got;
}

static void test_stress_node_reuse_like_the_ready_queue(void **state)
{
    (void)state;
    struct reuse *r = calloc(1, sizeof *r);
    assert_non_null(r);
    jn_mpsc_init(&r->q);
    pthread_t t[REUSE_PRODUCERS];
    for (unsigned i = 0; i < REUSE_PRODUCERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, reuse_producer, r), 0);
    unsigned long bad = 0, takes = 0;
    for (;;) {
        unsigned long got = reuse_take(r, &bad);
        takes += got;
        if (got > 0)
            continue;
        /* the count is read before the queue: a producer counted as done
         * pushed its last node before, so it is counted or visible */
        if (atomic_load(&r->producers_done) == REUSE_PRODUCERS && jn_mpsc_empty(&r->q))
            break;
        sched_yield(); /* nothing visible: producers running, or mid-push */
    }
    for (unsigned i = 0; i < REUSE_PRODUCERS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    unsigned long pushes = 0;
    for (unsigned i = 0; i < REUSE_NODES; i++) {
        reuse_node_t *n = &r->nodes[i];
        assert_int_equal(n->taken, atomic_load(&n->pushes));
        assert_int_equal(atomic_load(&n->in_queue), 0);
        assert_false(atomic_load(&n->queued));
        pushes += n->taken;
    }
    assert_int_equal(atomic_load(&r->errors), 0);
    assert_int_equal(bad, 0);
    assert_int_equal(takes, pushes);
    assert_int_equal(pushes, (unsigned long)REUSE_PRODUCERS * REUSE_PUSHES);
    assert_null(jn_mpsc_pop(&r->q));
    assert_true(jn_mpsc_empty(&r->q));
    print_message("node reuse: %lu pushes of %d nodes\n", pushes, REUSE_NODES);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pop_empty_returns_null),
        cmocka_unit_test(test_push_pop_is_fifo),
        cmocka_unit_test(test_push_reports_empty_to_non_empty_only),
        cmocka_unit_test(test_drain_takes_at_most_max_in_order),
        cmocka_unit_test(test_stress_four_producers_sleeping_consumer),
        cmocka_unit_test(test_stress_node_reuse_like_the_ready_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
