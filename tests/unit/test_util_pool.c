/*
 * test_util_pool.c — fixed-size pools (junction/pool.h): alignment and size,
 * reuse through the thread cache, batch moves to the shared list, stats,
 * foreach, objects allocated on one thread and freed on another, the thread
 * exit flush, get_once, the leak report, and the bounded shared list (a
 * burst's objects go back to the heap).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/pool.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every test ends with jn_pool_shutdown, so each starts with no pools. */
static int teardown(void **state)
{
    (void)state;
    jn_pool_shutdown();
    return 0;
}

static void test_alloc_is_16_aligned_and_writable(void **state)
{
    (void)state;
    jn_pool_t *p = jn_pool_create("odd", 33, 8);
    assert_non_null(p);
    void *objs[40];
    for (int i = 0; i < 40; i++) {
        objs[i] = jn_pool_alloc(p);
        assert_non_null(objs[i]);
        assert_int_equal((uintptr_t)objs[i] % 16, 0);
        memset(objs[i], 0xA5, 33);
    }
    for (int i = 0; i < 40; i++)
        for (int j = i + 1; j < 40; j++)
            assert_ptr_not_equal(objs[i], objs[j]);
    for (int i = 0; i < 40; i++)
        jn_pool_free(p, objs[i]);
    jn_pool_free(p, NULL); /* ignored */
}

static void test_freed_object_is_reused_from_cache(void **state)
{
    (void)state;
    jn_pool_t *p = jn_pool_create("reuse", 64, 0);
    assert_non_null(p);
    void *a = jn_pool_alloc(p);
    jn_pool_free(p, a);
    void *b = jn_pool_alloc(p);
    assert_ptr_equal(a, b); /* LIFO thread cache */
    jn_pool_free(p, b);
}

static void test_stats_count_in_use_and_free(void **state)
{
    (void)state;
    jn_pool_t *p = jn_pool_create("stats", 100, 16);
    assert_non_null(p);
    jn_pool_stats_t st;
    jn_pool_get_stats(p, &st);
    assert_string_equal(st.type_name, "stats");
    assert_int_equal(st.object_size, 100);
    assert_int_equal(st.batch_size, 16);
    assert_int_equal(st.total_allocated, 0);
    assert_int_equal(st.in_use, 0);

    void *objs[50];
    for (int i = 0; i < 50; i++)
        objs[i] = jn_pool_alloc(p);
    jn_pool_get_stats(p, &st);
    assert_int_equal(st.in_use, 50);
    assert_int_equal(st.total_allocated, 64); /* four slabs of 16 */
    assert_int_equal(st.in_free_lists, 14);

    for (int i = 0; i < 50; i++)
        jn_pool_free(p, objs[i]);
    jn_pool_get_stats(p, &st);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.in_free_lists, 64);
    assert_int_equal(st.total_allocated, 64);
}

static void test_cache_overflow_goes_to_shared_list_and_back(void **state)
{
    (void)state;
    jn_pool_t *p = jn_pool_create("overflow", 24, 4);
    void *objs[100];
    for (int i = 0; i < 100; i++)
        objs[i] = jn_pool_alloc(p);
    for (int i = 0; i < 100; i++)
        jn_pool_free(p, objs[i]); /* cache keeps <= 8, the rest moves in batches */
    jn_pool_stats_t st;
    jn_pool_get_stats(p, &st);
    assert_int_equal(st.total_allocated, 100);
    /* Allocating 100 again needs no new slab. */
    for (int i = 0; i < 100; i++)
        objs[i] = jn_pool_alloc(p);
    jn_pool_get_stats(p, &st);
    assert_int_equal(st.total_allocated, 100);
    assert_int_equal(st.in_use, 100);
    for (int i = 0; i < 100; i++)
        jn_pool_free(p, objs[i]);
}

struct xthread {
    jn_pool_t *pool;
    void **objs;
    size_t n;
};

static void *free_all_thread(void *arg)
{
    struct xthread *x = arg;
    for (size_t i = 0; i < x->n; i++)
        jn_pool_free(x->pool, x->objs[i]);
    jn_pool_thread_exit();
    return NULL;
}

static void test_free_on_another_thread(void **state)
{
    (void)state;
    jn_pool_t *p = jn_pool_create("xthread", 48, 8);
    enum { N = 1000 };
    void **objs = calloc(N, sizeof(void *));
    for (size_t i = 0; i < N; i++) {
        objs[i] = jn_pool_alloc(p);
        memset(objs[i], (int)i, 48);
    }
    struct xthread x = {p, objs, N};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, free_all_thread, &x), 0);
    assert_int_equal(pthread_join(t, NULL), 0);

    jn_pool_stats_t st;
    jn_pool_get_stats(p, &st);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.in_free_lists, st.total_allocated);
    /* The freed objects come back to this thread without new slabs. */
    uint64_t before = st.total_allocated;
    for (size_t i = 0; i < N; i++)
        objs[i] = jn_pool_alloc(p);
    jn_pool_get_stats(p, &st);
    assert_int_equal(st.total_allocated, before);
    for (size_t i = 0; i < N; i++)
        jn_pool_free(p, objs[i]);
    free(objs);
}

struct churn {
    jn_pool_t *pool;
    unsigned seed;
};

/* Allocate and free in random bursts, writing to each object. */
static void *churn_thread(void *arg)
{
    struct churn *c = arg;
    void *held[256];
    size_t n = 0;
    for (int i = 0; i < 200000; i++) {
        c->seed = c->seed * 1103515245u + 12345u;
        if (n < 256 && ((c->seed >> 16) & 1)) {
            held[n] = jn_pool_alloc(c->pool);
            memset(held[n], 0x5A, 40);
            n++;
        } else if (n > 0) {
            jn_pool_free(c->pool, held[--n]);
        }
    }
    while (n > 0)
        jn_pool_free(c->pool, held[--n]);
    /* No jn_pool_thread_exit: the thread-exit destructor must flush. */
    return NULL;
}

static void test_concurrent_churn_leaves_nothing_in_use(void **state)
{
    (void)state;
    jn_pool_t *p = jn_pool_create("churn", 40, 16);
    pthread_t t[4];
    struct churn c[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (struct churn){p, (unsigned)i * 7919u + 1u};
        assert_int_equal(pthread_create(&t[i], NULL, churn_thread, &c[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    jn_pool_stats_t st;
    jn_pool_get_stats(p, &st);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.in_free_lists, st.total_allocated);
    assert_int_equal(jn_pool_leak_report(NULL), 0);
}

struct foreach_ctx {
    int calls;
    const char *names[4];
};

static void collect(const jn_pool_stats_t *st, void *ctx)
{
    struct foreach_ctx *f = ctx;
    if (f->calls < 4)
        f->names[f->calls] = st->type_name;
    f->calls++;
}

static void test_foreach_visits_pools_in_creation_order(void **state)
{
    (void)state;
    assert_non_null(jn_pool_create("first", 8, 0));
    assert_non_null(jn_pool_create("second", 8, 0));
    assert_non_null(jn_pool_create("third", 8, 0));
    struct foreach_ctx f = {0};
    jn_pool_foreach(collect, &f);
    assert_int_equal(f.calls, 3);
    assert_string_equal(f.names[0], "first");
    assert_string_equal(f.names[1], "second");
    assert_string_equal(f.names[2], "third");
}

static _Atomic(jn_pool_t *) once_slot;

static void *get_once_thread(void *arg)
{
    return jn_pool_get_once(&once_slot, "once", 16, 0);
}

static void test_get_once_creates_one_pool(void **state)
{
    (void)state;
    atomic_store(&once_slot, NULL);
    pthread_t t[4];
    void *got[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, get_once_thread, NULL), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_join(t[i], &got[i]), 0);
    assert_non_null(got[0]);
    for (int i = 1; i < 4; i++)
        assert_ptr_equal(got[i], got[0]);
    struct foreach_ctx f = {0};
    jn_pool_foreach(collect, &f);
    assert_int_equal(f.calls, 1);
    atomic_store(&once_slot, NULL);
}

static void test_leak_report_counts_leaked_object(void **state)
{
    (void)state;
    jn_pool_t *clean = jn_pool_create("clean", 32, 0);
    jn_pool_t *leaky = jn_pool_create("leaky_type", 32, 0);
    void *a = jn_pool_alloc(clean);
    void *b = jn_pool_alloc(leaky);
    void *c = jn_pool_alloc(leaky);
    jn_pool_free(clean, a);
    jn_pool_free(leaky, c);
    (void)b; /* deliberately leaked */

    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    assert_int_equal(jn_pool_leak_report(out), 1);
    fclose(out);
    assert_non_null(strstr(text, "leaky_type"));
    assert_null(strstr(text, "clean"));
    free(text);
    /* jn_pool_shutdown frees only free objects: give the leaked one back
     * so that the process has no leak of its own */
    jn_pool_free(leaky, b);
}

/* A burst: 4,000 objects of 4,096 octets (16 MiB) allocated then freed on
 * one thread. The shared list keeps at most shared_max (256 KiB of objects
 * here: 64, four batches of 16) and the cache 2 * batch; every other object
 * goes back to the heap, and the stats say so. */
static void test_burst_goes_back_to_heap(void **state)
{
    (void)state;
    enum { N = 4000, SIZE = 4096, BATCH = 16 };
    jn_pool_t *p = jn_pool_create("burst", SIZE, BATCH);
    assert_non_null(p);
    void **objs = calloc(N, sizeof *objs);
    assert_non_null(objs);
    for (int i = 0; i < N; i++) {
        objs[i] = jn_pool_alloc(p);
        assert_non_null(objs[i]);
        memset(objs[i], 0xab, SIZE);
    }
    jn_pool_stats_t st;
    jn_pool_get_stats(p, &st);
    assert_int_equal(st.in_use, N);
    assert_int_equal(st.shared_max, 64);
    for (int i = 0; i < N; i++)
        jn_pool_free(p, objs[i]);
    jn_pool_get_stats(p, &st);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.freed_to_heap, 0); /* not before the timer's call */
    /* the first call gives the rest back and, its last trim of the heap
     * long ago (never), trims it */
    assert_true(jn_pool_trim_heap());
    jn_pool_get_stats(p, &st);
    assert_int_equal(st.in_use, 0);
    assert_true(st.in_shared_list <= st.shared_max);
    assert_true(st.in_free_lists <= st.shared_max + 2 * BATCH);
    assert_int_equal(st.total_allocated, st.in_free_lists);
    assert_int_equal(st.freed_to_heap + st.total_allocated, N);
    /* the pool still works, reusing what it kept before the heap */
    for (int i = 0; i < N; i++)
        objs[i] = jn_pool_alloc(p);
    jn_pool_get_stats(p, &st);
    assert_int_equal(st.in_use, N);
    for (int i = 0; i < N; i++)
        jn_pool_free(p, objs[i]);
    free(objs);
    assert_int_equal(jn_pool_leak_report(NULL), 0);
    /* the second round's excess goes back, but the pools were shrinking and
     * the heap was trimmed less than 10 s ago: not yet */
    assert_false(jn_pool_trim_heap());
    jn_pool_get_stats(p, &st);
    assert_true(st.in_shared_list <= st.shared_max);
    assert_true(jn_pool_trim_heap());  /* calm now: trimmed */
    assert_false(jn_pool_trim_heap()); /* nothing new since */
}

/* Small objects: the shared list's bound is in octets (256 KiB), so a pool
 * of 64-octet objects keeps up to 4,096 of them. */
static void test_shared_bound_in_octets(void **state)
{
    (void)state;
    jn_pool_t *p = jn_pool_create("small", 64, 0);
    jn_pool_stats_t st;
    jn_pool_get_stats(p, &st);
    assert_int_equal(st.shared_max, 4096);
}

/* Objects freed on another thread than the one that took them (the
 * router's usual case): the bound holds for the freeing thread's batches
 * and for its exit flush. */
static void *free_all(void *arg)
{
    void **objs = arg;
    jn_pool_t *p = objs[0];
    for (int i = 1; objs[i]; i++)
        jn_pool_free(p, objs[i]);
    jn_pool_thread_exit();
    return NULL;
}

static void test_bound_holds_for_other_thread_frees(void **state)
{
    (void)state;
    enum { N = 3000, BATCH = 16 };
    jn_pool_t *p = jn_pool_create("cross", 4096, BATCH);
    void **objs = calloc(N + 2, sizeof *objs);
    assert_non_null(objs);
    objs[0] = p;
    for (int i = 1; i <= N; i++)
        objs[i] = jn_pool_alloc(p);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, free_all, objs), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    jn_pool_trim_heap();
    jn_pool_stats_t st;
    jn_pool_get_stats(p, &st);
    assert_int_equal(st.in_use, 0);
    assert_true(st.in_free_lists <= st.shared_max + 2 * BATCH); /* our cache: empty */
    assert_true(st.freed_to_heap >= N - st.shared_max - 2 * BATCH);
    free(objs);
}

static void test_create_rejects_too_many_pools(void **state)
{
    (void)state;
    for (int i = 0; i < JN_POOL_MAX; i++)
        assert_non_null(jn_pool_create("many", 16, 1));
    assert_null(jn_pool_create("one too many", 16, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_alloc_is_16_aligned_and_writable, teardown),
        cmocka_unit_test_teardown(test_freed_object_is_reused_from_cache, teardown),
        cmocka_unit_test_teardown(test_stats_count_in_use_and_free, teardown),
        cmocka_unit_test_teardown(test_cache_overflow_goes_to_shared_list_and_back, teardown),
        cmocka_unit_test_teardown(test_free_on_another_thread, teardown),
        cmocka_unit_test_teardown(test_concurrent_churn_leaves_nothing_in_use, teardown),
        cmocka_unit_test_teardown(test_foreach_visits_pools_in_creation_order, teardown),
        cmocka_unit_test_teardown(test_get_once_creates_one_pool, teardown),
        cmocka_unit_test_teardown(test_leak_report_counts_leaked_object, teardown),
        cmocka_unit_test_teardown(test_create_rejects_too_many_pools, teardown),
        cmocka_unit_test_teardown(test_burst_goes_back_to_heap, teardown),
        cmocka_unit_test_teardown(test_shared_bound_in_octets, teardown),
        cmocka_unit_test_teardown(test_bound_holds_for_other_thread_frees, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
