/*
 * pool.c — fixed-size object pools with per-thread caches (junction/pool.h).
 *
 * Shape. Each pool has a shared free list guarded by a mutex, and every
 * thread has, for every pool id, a private cache: a singly linked list of free
 * objects and its length. jn_pool_alloc pops the calling thread's cache and
 * jn_pool_free pushes onto it; both touch only thread-local memory. Only when
 * the cache is empty (alloc) or holds more than 2 * batch objects (free) does
 * a whole batch move to or from the shared list. Those fast cases (and
 * jn_pool_get_once's) are inline functions in junction/pool.h, which is why
 * the per-thread cache types are declared there; this file has the rest,
 * and the whole of each call in the *_slow_ functions the inline ones fall
 * back to.
 *
 * Why a mutex on the shared list is acceptable: it is taken once per batch
 * (64 objects by default), never per object, so its cost is divided by the
 * batch size; it is held for O(1) work (push or pop one pre-linked chain),
 * so contention stays short. A lock-free shared stack would need ABA
 * protection (tagged pointers or hazard pointers) for a gain that cannot be
 * seen behind a 1/64 amortisation.
 *
 * Free-object layout. A free object's first word links it to the next free
 * object of its list; in the shared list, the first object of each full
 * chain uses its second word to link to the next chain. That is why slots
 * are at least 16 octets (and multiples of 16, for the alignment promise).
 *
 * The shared list holds full chains of exactly `batch` objects (transferred
 * in O(1)) and a "loose" list of leftovers that thread exits return (rare;
 * taken by walking).
 *
 * Memory. Objects come from the heap one by one, `batch` of them at a time
 * when a cache finds the shared list empty (the slow path only). The shared
 * list may keep `shared_max` objects (whole chains: at least
 * POOL_SHARED_MIN_CHAINS, else what POOL_SHARED_OCTETS holds):
 * jn_pool_trim_heap, called from a timer about once a second, gives every
 * pool's objects past that back to the heap, object by object after the
 * lock is released, and once the pools stop shrinking asks the C library to
 * give free heap pages back to the system. So after a burst the pools keep
 * a bounded free list (shared lists plus at most 2 * batch per thread
 * cache). It is done on the timer rather than when a batch reaches a full
 * shared list because the shared list is also how objects pass between
 * threads (freed by one, taken by another): under steady traffic it swings
 * by a few batches, and freeing at its cap would send those batches to the
 * heap and back again and again. Objects are allocated one by one rather than in slabs because a
 * slab could only go back once every one of its objects was free, which
 * after a burst (free objects of every slab scattered over the lists) is
 * rarely the case; the cost is one malloc per object while a pool grows
 * and the allocator's per-chunk header, and nothing on the inline fast
 * paths, which only ever touch a thread's cache.
 *
 * Statistics. A thread's cache length is a plain field that only its owner
 * touches, so the hot path has no atomic operation at all. At each batch
 * move the owner also publishes the length in an atomic (relaxed store)
 * that other threads' stats read; so stats count another thread's cached
 * objects as of its last batch move (off by less than 2 * batch per live
 * thread and pool), the calling thread's exactly, and everything exactly
 * once other threads have called jn_pool_thread_exit or exited (the leak
 * report's case). Threads are registered in a list (under the registry
 * mutex, taken once per thread) so that stats can find their caches.
 *
 * Under AddressSanitizer, a free object's octets past the two link words are
 * poisoned, so a use after jn_pool_free is reported even though the memory
 * stays in the pool.
 */
#include <junction/pool.h>

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#ifdef JN_POOL_ASAN /* junction/pool.h */
#include <sanitizer/asan_interface.h>
#endif

#define POOL_ALIGN         16 /* octets; the alignment jn_pool_alloc promises */
#define POOL_LINK_OCTETS   16 /* octets of a free object used for links */
#define POOL_DEFAULT_BATCH 64
/* The shared free list of a pool keeps at most this many octets of objects,
 * and at least POOL_SHARED_MIN_CHAINS batches (a pool of large objects);
 * beyond that, batches go back to the heap (see the top). */
#define POOL_SHARED_OCTETS     (256u * 1024)
#define POOL_SHARED_MIN_CHAINS 4
/* jn_pool_trim_heap: malloc_trim once the pools stopped shrinking (a call
 * that gave nothing more back), or every POOL_TRIM_MAX_MS while they keep
 * shrinking. */
#define POOL_TRIM_MAX_MS 10000

/* A free object, as seen while it sits in a list (junction/pool.h). */
typedef jn_pool_free_obj_t free_obj_t;

struct jn_pool {
    /* Immutable after jn_pool_create. head first: the inline fast paths of
     * junction/pool.h read it through the jn_pool_t pointer. */
    jn_pool_head_t head; /* id, cache_max */
    const char *type_name;
    size_t object_size; /* as requested */
    size_t slot_size;   /* rounded up to POOL_ALIGN, at least POOL_LINK_OCTETS */
    size_t batch;
    uint64_t shared_max; /* objects the shared list may keep (whole chains) */

    /* Guarded by lock (taken once per batch). */
    pthread_mutex_t lock;
    free_obj_t *chains; /* full chains of `batch` objects */
    uint64_t nchains;
    free_obj_t *loose; /* leftovers from thread exits */
    uint64_t nloose;
    uint64_t total_allocated; /* objects obtained from the heap and held */
    uint64_t freed_to_heap;   /* objects given back to the heap, ever */
};

/* One thread's cache for one pool, and all caches of one thread (their
 * fields and owners: junction/pool.h). */
typedef jn_pool_cache_t pool_cache_t;
typedef jn_pool_thread_caches_t thread_caches_t;

/* The calling thread's caches; extern for the inline fast paths. */
_Thread_local jn_pool_thread_caches_t jn_pool_tl_caches_;

/* Registry: the pools and the threads with caches. Creation, stats and
 * thread registration only; never on the hot path. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static jn_pool_t *reg_pools[JN_POOL_MAX]; /* reg_lock */
static atomic_uint reg_count;             /* written under reg_lock */
static thread_caches_t *reg_threads;      /* reg_lock */
static pthread_once_t reg_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t reg_key;

/* Serialises jn_pool_get_once's creations (separate from reg_lock because
 * jn_pool_create takes reg_lock). */
static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;

static void thread_flush_all(thread_caches_t *tc);

static void lock_or_die(pthread_mutex_t *m)
{
    int rc = pthread_mutex_lock(m);
    JN_CHECK(rc == 0);
}

static void unlock_or_die(pthread_mutex_t *m)
{
    int rc = pthread_mutex_unlock(m);
    JN_CHECK(rc == 0);
}

static inline void obj_poison(const jn_pool_t *pool, free_obj_t *o)
{
#ifdef JN_POOL_ASAN
    if (pool->slot_size > POOL_LINK_OCTETS)
        ASAN_POISON_MEMORY_REGION((char *)o + POOL_LINK_OCTETS, pool->slot_size - POOL_LINK_OCTETS);
#else
    (void)pool;
    (void)o;
#endif
}

static inline void obj_unpoison(const jn_pool_t *pool, void *o)
{
#ifdef JN_POOL_ASAN
    ASAN_UNPOISON_MEMORY_REGION(o, pool->object_size);
#else
    (void)pool;
    (void)o;
#endif
}

/* Let other threads' stats see the cache's length. Owner, slow path only. */
static inline void cache_publish(pool_cache_t *c)
{
    atomic_store_explicit(&c->published, c->count, memory_order_relaxed);
}

/* Destructor of reg_key: a thread that used pools is exiting; give its
 * cached objects back. glibc runs key destructors before it frees the
 * thread's static TLS, so jn_pool_tl_caches_ is still valid here. */
static void thread_exit_destructor(void *arg)
{
    thread_flush_all((thread_caches_t *)arg);
}

static void reg_key_create(void)
{
    int rc = pthread_key_create(&reg_key, thread_exit_destructor);
    JN_CHECK(rc == 0);
}

/* Put the calling thread in the registry so stats see its caches, and arm
 * the thread-exit destructor. Once per thread (again after thread_exit). */
static void thread_register(void)
{
    thread_caches_t *tc = &jn_pool_tl_caches_;
    pthread_once(&reg_key_once, reg_key_create);
    lock_or_die(&reg_lock);
    if (!tc->registered) {
        tc->prev = NULL;
        tc->next = reg_threads;
        if (reg_threads)
            reg_threads->prev = tc;
        reg_threads = tc;
        tc->registered = true;
    }
    unlock_or_die(&reg_lock);
    pthread_setspecific(reg_key, tc);
}

/* Remove tc from the registry. Caller holds reg_lock. */
static void thread_unregister_locked(thread_caches_t *tc)
{
    if (!tc->registered)
        return;
    if (tc->prev)
        tc->prev->next = tc->next;
    else
        reg_threads = tc->next;
    if (tc->next)
        tc->next->prev = tc->prev;
    tc->prev = tc->next = NULL;
    tc->registered = false;
}

jn_pool_t *jn_pool_create(const char *type_name, size_t object_size, size_t batch)
{
    if (object_size == 0)
        object_size = 1;
    if (batch == 0)
        batch = POOL_DEFAULT_BATCH;
    if (object_size > SIZE_MAX / 4 || batch > SIZE_MAX / 4)
        return NULL;
    size_t slot = (object_size + POOL_ALIGN - 1) & ~(size_t)(POOL_ALIGN - 1);
    if (slot < POOL_LINK_OCTETS)
        slot = POOL_LINK_OCTETS;
    if (slot > (SIZE_MAX / 2) / batch)
        return NULL;

    jn_pool_t *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return NULL;
    pool->type_name = type_name ? type_name : "?";
    pool->object_size = object_size;
    pool->slot_size = slot;
    pool->batch = batch;
    pool->head.cache_max = 2 * batch;
    uint64_t chains = POOL_SHARED_OCTETS / (slot * batch);
    pool->shared_max = (chains < POOL_SHARED_MIN_CHAINS ? POOL_SHARED_MIN_CHAINS : chains) * batch;
    if (pthread_mutex_init(&pool->lock, NULL) != 0) {
        free(pool);
        return NULL;
    }

    lock_or_die(&reg_lock);
    unsigned n = atomic_load_explicit(&reg_count, memory_order_relaxed);
    if (n >= JN_POOL_MAX) {
        unlock_or_die(&reg_lock);
        pthread_mutex_destroy(&pool->lock);
        free(pool);
        return NULL;
    }
    pool->head.id = n;
    reg_pools[n] = pool;
    atomic_store_explicit(&reg_count, n + 1, memory_order_release);
    unlock_or_die(&reg_lock);
    return pool;
}

jn_pool_t *jn_pool_get_once_slow_(_Atomic(jn_pool_t *) *slot, const char *type_name,
                                  size_t object_size, size_t batch)
{
    jn_pool_t *pool = atomic_load_explicit(slot, memory_order_acquire);
    if (JN_LIKELY(pool != NULL))
        return pool;
    lock_or_die(&once_lock);
    pool = atomic_load_explicit(slot, memory_order_relaxed);
    if (!pool) {
        pool = jn_pool_create(type_name, object_size, batch);
        if (pool)
            atomic_store_explicit(slot, pool, memory_order_release);
    }
    unlock_or_die(&once_lock);
    return pool;
}

/* Free a list of free objects (linked by next) to the heap; returns how
 * many. No lock held. */
static size_t objs_free(const jn_pool_t *pool, free_obj_t *o)
{
    size_t n = 0;
    while (o) {
        free_obj_t *next = o->next;
#ifdef JN_POOL_ASAN
        ASAN_UNPOISON_MEMORY_REGION(o, pool->slot_size);
#else
        (void)pool;
#endif
        free(o);
        o = next;
        n++;
    }
    return n;
}

/* Allocate pool->batch objects from the heap, linked into one chain.
 * Returns the chain head, or NULL on ENOMEM. No lock held on entry. */
static free_obj_t *chain_new(jn_pool_t *pool)
{
    free_obj_t *head = NULL;
    for (size_t i = 0; i < pool->batch; i++) {
        free_obj_t *o = aligned_alloc(POOL_ALIGN, pool->slot_size);
        if (!o) {
            objs_free(pool, head);
            return NULL;
        }
        o->next = head;
        o->next_chain = NULL;
        obj_poison(pool, o);
        head = o;
    }
    lock_or_die(&pool->lock);
    pool->total_allocated += pool->batch;
    unlock_or_die(&pool->lock);
    return head;
}

/* Take one batch (or what is left) from the shared list into an empty
 * cache; allocate a batch from the heap when the shared list is empty. Returns the number
 * of objects now in the cache (0 on ENOMEM). */
static size_t cache_refill(jn_pool_t *pool, pool_cache_t *c)
{
    size_t n = 0;
    free_obj_t *head = NULL;

    lock_or_die(&pool->lock);
    if (pool->chains) {
        head = pool->chains;
        pool->chains = head->next_chain;
        pool->nchains--;
        n = pool->batch;
    } else if (pool->loose) {
        head = pool->loose;
        free_obj_t *tail = head;
        n = 1;
        while (n < pool->batch && tail->next) {
            tail = tail->next;
            n++;
        }
        pool->loose = tail->next;
        pool->nloose -= n;
        tail->next = NULL;
    }
    unlock_or_die(&pool->lock);

    if (!head) {
        head = chain_new(pool);
        if (!head)
            return 0;
        n = pool->batch;
    }
    c->head = head;
    c->count = n;
    cache_publish(c);
    return n;
}

/* Slow path of jn_pool_alloc: the cache is empty. */
static void *alloc_refill(jn_pool_t *pool, pool_cache_t *c)
{
    if (JN_UNLIKELY(!jn_pool_tl_caches_.registered))
        thread_register();
    size_t n = cache_refill(pool, c);
    if (n == 0)
        return NULL;
    free_obj_t *o = c->head;
    c->head = o->next;
    c->count = n - 1;
    obj_unpoison(pool, o);
    return o;
}

/* The whole of jn_pool_alloc, out of line (junction/pool.h). */
void *jn_pool_alloc_slow_(jn_pool_t *pool)
{
    pool_cache_t *c = &jn_pool_tl_caches_.cache[pool->head.id];
    free_obj_t *o = c->head;
    if (o == NULL)
        return alloc_refill(pool, c);
    c->head = o->next;
    c->count--;
    obj_unpoison(pool, o);
    return o;
}

/* Move the first pool->batch objects of the cache to the shared list as one
 * chain, or, when the shared list is full, back to the heap. The cache
 * holds more than batch objects. The walk happens before the lock is
 * taken, so the lock covers only a two-pointer push (and the heap's frees
 * happen after it is released). */
static void cache_flush_batch(jn_pool_t *pool, pool_cache_t *c)
{
    free_obj_t *head = c->head;
    free_obj_t *tail = head;
    for (size_t i = 1; i < pool->batch; i++)
        tail = tail->next;
    c->head = tail->next;
    c->count -= pool->batch;
    cache_publish(c);
    tail->next = NULL;

    lock_or_die(&pool->lock);
    head->next_chain = pool->chains;
    pool->chains = head;
    pool->nchains++;
    unlock_or_die(&pool->lock);
}

/* The whole of jn_pool_free, out of line (junction/pool.h). */
void jn_pool_free_slow_(jn_pool_t *pool, void *obj)
{
    if (obj == NULL)
        return;
    thread_caches_t *tc = &jn_pool_tl_caches_;
    if (JN_UNLIKELY(!tc->registered))
        thread_register();
    pool_cache_t *c = &tc->cache[pool->head.id];
    free_obj_t *o = obj;
    o->next = c->head;
    obj_poison(pool, o);
    c->head = o;
    if (++c->count > pool->head.cache_max)
        cache_flush_batch(pool, c);
}

/* Give all of one cache back to the shared list: full chains, then the rest
 * on the loose list. */
static void cache_flush_all(jn_pool_t *pool, pool_cache_t *c)
{
    while (c->count > pool->batch)
        cache_flush_batch(pool, c);
    size_t n = c->count;
    if (n == 0)
        return;
    free_obj_t *head = c->head;
    free_obj_t *tail = head;
    while (tail->next)
        tail = tail->next;
    c->head = NULL;
    c->count = 0;
    cache_publish(c);

    lock_or_die(&pool->lock);
    tail->next = pool->loose;
    pool->loose = head;
    pool->nloose += n;
    unlock_or_die(&pool->lock);
}

/* Flush every cache of tc (the calling thread's) and unregister it. */
static void thread_flush_all(thread_caches_t *tc)
{
    unsigned n = atomic_load_explicit(&reg_count, memory_order_acquire);
    for (unsigned id = 0; id < n; id++) {
        if (tc->cache[id].head)
            cache_flush_all(reg_pools[id], &tc->cache[id]);
    }
    lock_or_die(&reg_lock);
    thread_unregister_locked(tc);
    unlock_or_die(&reg_lock);
}

void jn_pool_thread_exit(void)
{
    thread_flush_all(&jn_pool_tl_caches_);
    pthread_once(&reg_key_once, reg_key_create);
    pthread_setspecific(reg_key, NULL);
}

/* Fill *out; caller holds reg_lock (so the thread list is stable). */
static void stats_locked(jn_pool_t *pool, jn_pool_stats_t *out)
{
    uint64_t cached = 0;
    for (thread_caches_t *tc = reg_threads; tc; tc = tc->next) {
        if (tc == &jn_pool_tl_caches_) /* our own: exact */
            cached += tc->cache[pool->head.id].count;
        else
            cached +=
                atomic_load_explicit(&tc->cache[pool->head.id].published, memory_order_relaxed);
    }

    lock_or_die(&pool->lock);
    uint64_t total = pool->total_allocated;
    uint64_t freed = pool->freed_to_heap;
    uint64_t shared = pool->nchains * pool->batch + pool->nloose;
    unlock_or_die(&pool->lock);

    uint64_t free_objs = shared + cached;
    if (free_objs > total) /* a batch in flight between lists was counted twice */
        free_objs = total;
    out->type_name = pool->type_name;
    out->object_size = pool->object_size;
    out->total_allocated = total;
    out->in_free_lists = free_objs;
    out->in_use = total - free_objs;
    out->batch_size = pool->batch;
    out->freed_to_heap = freed;
    out->shared_max = pool->shared_max;
    out->in_shared_list = shared;
}

void jn_pool_get_stats(jn_pool_t *pool, jn_pool_stats_t *out)
{
    lock_or_die(&reg_lock);
    stats_locked(pool, out);
    unlock_or_die(&reg_lock);
}

void jn_pool_foreach(void (*fn)(const jn_pool_stats_t *stats, void *ctx), void *ctx)
{
    /* Pools are never destroyed before jn_pool_shutdown, so ids below the
     * count seen here stay valid; fn runs without any lock held. */
    unsigned n = atomic_load_explicit(&reg_count, memory_order_acquire);
    for (unsigned id = 0; id < n; id++) {
        jn_pool_stats_t st;
        lock_or_die(&reg_lock);
        jn_pool_t *pool = reg_pools[id];
        stats_locked(pool, &st);
        unlock_or_die(&reg_lock);
        fn(&st, ctx);
    }
}

uint64_t jn_pool_leak_report(FILE *out)
{
    uint64_t leaked = 0;
    lock_or_die(&reg_lock);
    unsigned n = atomic_load_explicit(&reg_count, memory_order_relaxed);
    for (unsigned id = 0; id < n; id++) {
        jn_pool_stats_t st;
        stats_locked(reg_pools[id], &st);
        if (st.in_use == 0)
            continue;
        leaked += st.in_use;
        if (out)
            fprintf(out, "junction: pool leak: %s: %llu object(s) of %zu octets in use\n",
                    st.type_name, (unsigned long long)st.in_use, st.object_size);
    }
    unlock_or_die(&reg_lock);
    return leaked;
}

void jn_pool_shutdown(void)
{
    lock_or_die(&reg_lock);
    unsigned n = atomic_load_explicit(&reg_count, memory_order_relaxed);
    for (unsigned id = 0; id < n; id++) {
        jn_pool_t *pool = reg_pools[id];
        /* the free objects: the shared list's and the calling thread's
         * cache (every other thread flushed its own); objects still in use
         * are leaks, reported by jn_pool_leak_report */
        for (free_obj_t *c = pool->chains, *next; c; c = next) {
            next = c->next_chain;
            objs_free(pool, c);
        }
        objs_free(pool, pool->loose);
        objs_free(pool, jn_pool_tl_caches_.cache[id].head);
        pthread_mutex_destroy(&pool->lock);
        free(pool);
        reg_pools[id] = NULL;
    }
    atomic_store_explicit(&reg_count, 0, memory_order_release);
    for (unsigned id = 0; id < JN_POOL_MAX; id++) {
        jn_pool_tl_caches_.cache[id].head = NULL;
        jn_pool_tl_caches_.cache[id].count = 0;
        cache_publish(&jn_pool_tl_caches_.cache[id]);
    }
    thread_unregister_locked(&jn_pool_tl_caches_);
    reg_threads = NULL; /* every other thread has exited (see pool.h) */
    unlock_or_die(&reg_lock);
    pthread_once(&reg_key_once, reg_key_create);
    pthread_setspecific(reg_key, NULL);
}

/* Give the objects of pool's shared list past shared_max back to the heap
 * (whole chains, then the loose list if still past it); returns how many.
 * The lock covers only unlinking them. */
static uint64_t pool_shrink(jn_pool_t *pool)
{
    free_obj_t *chains = NULL, *loose = NULL;
    uint64_t n = 0;
    lock_or_die(&pool->lock);
    while (pool->chains && pool->nchains * pool->batch + pool->nloose > pool->shared_max) {
        free_obj_t *c = pool->chains;
        pool->chains = c->next_chain;
        pool->nchains--;
        c->next_chain = chains;
        chains = c;
        n += pool->batch;
    }
    if (pool->loose && pool->nchains * pool->batch + pool->nloose > pool->shared_max) {
        loose = pool->loose;
        n += pool->nloose;
        pool->loose = NULL;
        pool->nloose = 0;
    }
    pool->total_allocated -= n;
    pool->freed_to_heap += n;
    unlock_or_die(&pool->lock);
    while (chains) {
        free_obj_t *next = chains->next_chain;
        objs_free(pool, chains);
        chains = next;
    }
    objs_free(pool, loose);
    return n;
}

bool jn_pool_trim_heap(void)
{
    static pthread_mutex_t trim_lock = PTHREAD_MUTEX_INITIALIZER;
    static uint64_t pending; /* objects given back since the last malloc_trim */
    static int64_t last_ms;  /* monotonic ms of the last malloc_trim */
    if (pthread_mutex_trylock(&trim_lock) != 0)
        return false; /* another thread is at it */
    uint64_t freed = 0;
    unsigned n = atomic_load_explicit(&reg_count, memory_order_acquire);
    for (unsigned id = 0; id < n; id++)
        freed += pool_shrink(reg_pools[id]);
    pending += freed;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    /* calm: this call found nothing more to give back */
    bool trim = pending > 0 && (freed == 0 || now_ms - last_ms >= POOL_TRIM_MAX_MS);
    if (trim) {
        pending = 0;
        last_ms = now_ms;
#ifdef __GLIBC__
        malloc_trim(0);
#endif
    }
    unlock_or_die(&trim_lock);
    return trim;
}
