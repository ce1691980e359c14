/*
 * junction/pool.h — fixed-size object pools with per-thread caches.
 *
 * Every object type on the hot path (buffers, message content, deliveries,
 * actions) comes from its own pool. A thread allocates from and frees to its
 * own cache for that pool (no lock, no atomic); when the cache is empty or
 * full, a batch moves to or from the pool's shared free list. The shared
 * list is bounded (256 KiB of objects, at least 4 batches): from a timer,
 * jn_pool_trim_heap() gives what is past that back to the heap and has the
 * C library give free pages back to the system, so memory taken in a burst
 * is returned after it. The rest is freed by jn_pool_shutdown().
 * Statistics are kept per pool for management, and
 * jn_pool_leak_report() lists objects still in use at shutdown.
 *
 * Threads: any thread may allocate and free, and an object may be freed by a
 * thread other than the one that allocated it.
 */
#ifndef JUNCTION_POOL_H
#define JUNCTION_POOL_H 1

#include <junction/common.h>
#include <stdatomic.h>
#include <stdio.h>

/* JN_POOL_MAX: the most pools a process may create (one per object type;
 * each thread keeps a cache slot per possible pool, 16 octets each). */
#define JN_POOL_MAX 128

typedef struct jn_pool jn_pool_t;

/* Statistics of one pool; a snapshot, counts are in objects. */
typedef struct jn_pool_stats {
    const char *type_name;    /* borrowed, static */
    size_t object_size;       /* octets per object as requested */
    uint64_t total_allocated; /* objects obtained from the heap and held now
                               * (in_use + in_free_lists) */
    uint64_t in_use;          /* objects handed out and not yet freed */
    uint64_t in_free_lists;   /* objects held in the shared list and thread caches */
    uint64_t batch_size;      /* objects moved per shared-list transfer */
    uint64_t freed_to_heap;   /* objects given back to the heap, ever */
    uint64_t shared_max;      /* the most objects the shared list keeps */
    uint64_t in_shared_list;  /* of in_free_lists: in the shared list (exact) */
} jn_pool_stats_t;

/* jn_pool_create: make a pool of objects of object_size octets.
 * type_name is borrowed and must outlive the pool (use a string literal).
 * batch is the number of objects moved between a thread cache and the shared
 * list at a time (0 picks a default of 64); a thread cache holds at most
 * 2 * batch objects. object_size 0 is treated as 1. Returns NULL on ENOMEM
 * or when JN_POOL_MAX pools already exist.
 * Any thread; usually called once per type through jn_pool_get_once(). */
jn_pool_t *jn_pool_create(const char *type_name, size_t object_size, size_t batch);

/* jn_pool_get_once: the pool stored in *slot, creating it on the first call
 * with jn_pool_create(type_name, object_size, batch). Threads racing on the
 * first call all get the same pool; later calls cost one acquire load.
 * *slot must start NULL (a static `_Atomic(jn_pool_t *)` is typical).
 * Returns NULL on ENOMEM or when JN_POOL_MAX pools exist (a later call
 * retries). Any thread. */
static inline jn_pool_t *jn_pool_get_once(_Atomic(jn_pool_t *) *slot, const char *type_name,
                                          size_t object_size, size_t batch);

/* jn_pool_alloc: an object of the pool's size, 16-octet aligned, contents
 * undefined. Returns NULL when the heap is exhausted. Any thread. Hot path:
 * the common case pops the calling thread's cache (no lock, no atomic). */
static inline void *jn_pool_alloc(jn_pool_t *pool);

/* jn_pool_free: give obj (from jn_pool_alloc of the same pool) back. NULL is
 * ignored. Any thread. Hot path, as jn_pool_alloc. */
static inline void jn_pool_free(jn_pool_t *pool, void *obj);

/* jn_pool_thread_exit: return the calling thread's cached objects of every
 * pool to the shared lists. Call before a thread that used pools exits (a
 * thread that forgets is flushed by a thread-exit destructor; calling it is
 * still better, as the destructor does not run for the main thread). The
 * thread may use pools again afterwards. Any thread, for itself. */
void jn_pool_thread_exit(void);

/* jn_pool_get_stats: fill *out for pool. Any thread. Counts are exact for
 * the calling thread's own cache and for threads that have exited or called
 * jn_pool_thread_exit; another live thread's cache is counted as of its
 * last batch move, so in_use / in_free_lists may be off by up to 2 * batch
 * per such thread while it runs. */
void jn_pool_get_stats(jn_pool_t *pool, jn_pool_stats_t *out);

/* jn_pool_foreach: call fn(stats, ctx) for every pool created so far, in
 * creation order. Any thread. */
void jn_pool_foreach(void (*fn)(const jn_pool_stats_t *stats, void *ctx), void *ctx);

/* jn_pool_leak_report: write one line per pool with objects still in use to
 * out (if not NULL) and return the total number of such objects (0 = no
 * leak). Call after every other thread has stopped and called
 * jn_pool_thread_exit(). */
uint64_t jn_pool_leak_report(FILE *out);

/* jn_pool_trim_heap: give every pool's shared-list objects past its bound
 * (jn_pool_stats_t.shared_max) back to the heap; then, when objects went
 * back since the last trim of the heap and either none in this call (the
 * shrinking has stopped) or that trim is 10 s old, ask the C library to
 * return free heap pages to the system (glibc malloc_trim(0); elsewhere
 * nothing). Returns true when it trimmed the heap. It may take milliseconds on a large heap:
 * call it from a timer about once a second, never per message. Any
 * thread; a call while another runs returns false at once. */
bool jn_pool_trim_heap(void);

/* jn_pool_shutdown: free every pool and all its objects to the heap. After
 * this no pool may be used (pointers from jn_pool_create and the slots of
 * jn_pool_get_once are stale; reset such slots to NULL before creating pools
 * again, which tests may do). Main thread, at exit, after
 * jn_pool_leak_report, when every other thread that used pools has exited. */
void jn_pool_shutdown(void);

/* ---- inline fast paths ----------------------------------------------------
 * What follows is pool.c's, shown here only so that the three calls made
 * several times per message (jn_pool_get_once, jn_pool_alloc, jn_pool_free)
 * run inline at the call site; nothing else may use these types. */

#if defined(__SANITIZE_ADDRESS__)
#define JN_POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JN_POOL_ASAN 1
#endif
#endif

/* The head of every pool (the first member of struct jn_pool, so a
 * jn_pool_t * points to it). Immutable after jn_pool_create. */
typedef struct jn_pool_head {
    unsigned id;      /* index into every thread's cache array */
    size_t cache_max; /* 2 * batch: a cache that would grow past this
                       * sends a batch to the shared list (pool.c) */
} jn_pool_head_t;

/* A free object, as seen while it sits in a list: its first word links the
 * next free object of its list; in a pool's shared list, the first object
 * of each full chain links the next chain with its second word. */
typedef struct jn_pool_free_obj {
    struct jn_pool_free_obj *next;
    struct jn_pool_free_obj *next_chain;
} jn_pool_free_obj_t;

/* One thread's cache for one pool. head, count: owner thread only.
 * published: written by the owner (relaxed) at batch moves, read by stats. */
typedef struct jn_pool_cache {
    jn_pool_free_obj_t *head;
    size_t count; /* objects in the list at head */
    atomic_size_t published;
} jn_pool_cache_t;

/* All caches of one thread (thread-local). cache[]: see jn_pool_cache_t.
 * prev, next: pool.c's registry mutex. registered: written by the owner
 * under that mutex; the owner reads it without it. */
typedef struct jn_pool_thread_caches {
    jn_pool_cache_t cache[JN_POOL_MAX];
    struct jn_pool_thread_caches *prev;
    struct jn_pool_thread_caches *next;
    bool registered; /* in the registry: its caches are counted and flushed
                      * at thread exit */
} jn_pool_thread_caches_t;

extern _Thread_local jn_pool_thread_caches_t jn_pool_tl_caches_;

/* The out-of-line paths (pool.c): each does the whole call, fast case
 * included, so the inline functions may hand over any case they do not
 * take themselves (and every case under AddressSanitizer, which poisons
 * free objects). */
jn_pool_t *jn_pool_get_once_slow_(_Atomic(jn_pool_t *) *slot, const char *type_name,
                                  size_t object_size, size_t batch);
void *jn_pool_alloc_slow_(jn_pool_t *pool);
void jn_pool_free_slow_(jn_pool_t *pool, void *obj);

/* Hot path: after the first call, one acquire load (a plain load on x86). */
static inline jn_pool_t *jn_pool_get_once(_Atomic(jn_pool_t *) *slot, const char *type_name,
                                          size_t object_size, size_t batch)
{
    jn_pool_t *pool = atomic_load_explicit(slot, memory_order_acquire);
    if (JN_LIKELY(pool != NULL))
        return pool;
    return jn_pool_get_once_slow_(slot, type_name, object_size, batch);
}

/* Hot path: pops the calling thread's cache, thread-local memory only; an
 * empty cache (first use, or a batch used up) goes out of line to refill. */
static inline void *jn_pool_alloc(jn_pool_t *pool)
{
#ifdef JN_POOL_ASAN
    return jn_pool_alloc_slow_(pool);
#else
    const jn_pool_head_t *h = (const jn_pool_head_t *)(const void *)pool;
    jn_pool_cache_t *c = &jn_pool_tl_caches_.cache[h->id];
    jn_pool_free_obj_t *o = c->head;
    if (JN_UNLIKELY(o == NULL))
        return jn_pool_alloc_slow_(pool);
    c->head = o->next;
    c->count--;
    return o;
#endif
}

/* Hot path: pushes on the calling thread's cache, thread-local memory
 * only; a thread not yet registered, or a full cache (which sends a batch
 * to the shared list), goes out of line. */
static inline void jn_pool_free(jn_pool_t *pool, void *obj)
{
#ifdef JN_POOL_ASAN
    jn_pool_free_slow_(pool, obj);
#else
    if (JN_UNLIKELY(obj == NULL))
        return;
    const jn_pool_head_t *h = (const jn_pool_head_t *)(const void *)pool;
    jn_pool_thread_caches_t *tc = &jn_pool_tl_caches_;
    jn_pool_cache_t *c = &tc->cache[h->id];
    if (JN_UNLIKELY(!tc->registered || c->count >= h->cache_max)) {
        jn_pool_free_slow_(pool, obj);
        return;
    }
    jn_pool_free_obj_t *o = obj;
    o->next = c->head;
    c->head = o;
    c->count++;
#endif
}

#endif /* JUNCTION_POOL_H */
