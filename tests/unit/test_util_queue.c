/*
 * test_util_queue.c — the MPSC queue (junction/queue.h): FIFO order, the
 * empty→non-empty signal, drain batches, and a stress test with four
 * producers and a consumer that sleeps whenever the queue is empty, checking
 * order per producer, no loss, no duplicate, wakeups <= pushes, and that no
 * wakeup is ever lost.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/queue.h>

#include <errno.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pop_empty_returns_null),
        cmocka_unit_test(test_push_pop_is_fifo),
        cmocka_unit_test(test_push_reports_empty_to_non_empty_only),
        cmocka_unit_test(test_drain_takes_at_most_max_in_order),
        cmocka_unit_test(test_stress_four_producers_sleeping_consumer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
