/*
 * junction/hash.h — a hash table keyed by byte strings, and the hash function
 * it uses (32-bit FNV-1a), which the field iterator also computes
 * (jn_iter_hash) so a key can be looked up straight from message octets.
 *
 * Threads: a table is owned by one thread (the core thread for routing
 * tables); it has no lock.
 */
#ifndef JUNCTION_HASH_H
#define JUNCTION_HASH_H 1

#include <junction/common.h>

#define JN_HASH_SEED 2166136261u

/* jn_hash_octet: fold one octet into a running hash (start from
 * JN_HASH_SEED). Hot path: one xor and one multiply. */
static inline uint32_t jn_hash_octet(uint32_t h, uint8_t octet)
{
    return (h ^ octet) * 16777619u;
}

/* jn_hash_bytes: the hash of len octets at data. */
static inline uint32_t jn_hash_bytes(const void *data, size_t len)
{
    const uint8_t *p = (const uint8_t *)data;
    uint32_t h = JN_HASH_SEED;
    for (size_t i = 0; i < len; i++)
        h = jn_hash_octet(h, p[i]);
    return h;
}

typedef struct jn_hash jn_hash_t;

/* The table. Keys are byte strings of any length (NULs allowed, empty
 * allowed), copied by the table on insert; values are non-NULL void *
 * borrowed from the caller (the table never frees them). Chained buckets, a
 * power-of-two bucket count, grown ×2 when entries exceed buckets. Lookups
 * never allocate. Owned by one thread: every function below must be called
 * by the owning thread only (or under the owner's own lock). */

/* jn_hash_key_equal_fn: does the stored key (len octets at key) equal the
 * key the caller is looking for (described by ctx)? Called by
 * jn_hash_lookup_with / jn_hash_remove_with, on the calling thread, only for
 * entries whose stored hash equals the one asked for. Must not modify the
 * table. */
typedef bool (*jn_hash_key_equal_fn)(const uint8_t *key, size_t len, void *ctx);

/* An iteration cursor (see jn_hash_iter_init). Fields are private. */
typedef struct jn_hash_iter {
    const jn_hash_t *table;
    size_t bucket;
    void *entry;
} jn_hash_iter_t;

/* jn_hash_create: an empty table sized for about `expected` entries before
 * its first growth (0 picks a small default). Returns NULL on ENOMEM. */
jn_hash_t *jn_hash_create(size_t expected);

/* jn_hash_free: free the table and its key copies (not the values: free
 * them first by iterating). NULL is ignored. */
void jn_hash_free(jn_hash_t *t);

/* jn_hash_insert: add key (len octets at key, copied) → value (non-NULL).
 * Returns 0, JN_EEXIST when the key is already present (the table is
 * unchanged), JN_ENOMEM when the copy cannot be allocated, or JN_EINVAL when
 * value is NULL or key is NULL with len > 0. Growth may happen here; when
 * growing fails the entry is still inserted (chains just get longer). */
int jn_hash_insert(jn_hash_t *t, const void *key, size_t len, void *value);

/* jn_hash_lookup: the value stored for key (len octets), or NULL when
 * absent. Never allocates. */
void *jn_hash_lookup(const jn_hash_t *t, const void *key, size_t len);

/* jn_hash_lookup_with: the value whose key has hash `hash` (as computed by
 * jn_hash_bytes or jn_iter_hash) and for which key_equal(key, len, ctx)
 * returns true; NULL when none. Lets a caller look up a key it holds in
 * another form (a field iterator over buffers) without copying it. */
void *jn_hash_lookup_with(const jn_hash_t *t, uint32_t hash, jn_hash_key_equal_fn key_equal,
                          void *ctx);

/* jn_hash_remove: remove key (len octets) and store its value in *value_out
 * (if value_out is not NULL). Returns 0, or JN_ENOENT when absent. */
int jn_hash_remove(jn_hash_t *t, const void *key, size_t len, void **value_out);

/* jn_hash_remove_with: as jn_hash_remove, finding the key as
 * jn_hash_lookup_with does. Returns 0 or JN_ENOENT. */
int jn_hash_remove_with(jn_hash_t *t, uint32_t hash, jn_hash_key_equal_fn key_equal, void *ctx,
                        void **value_out);

/* jn_hash_count: number of entries. */
size_t jn_hash_count(const jn_hash_t *t);

/* jn_hash_reserve: grow the bucket array now so that `entries` entries fit
 * without further growth. Returns 0, or JN_ENOMEM (the table is unchanged). */
int jn_hash_reserve(jn_hash_t *t, size_t entries);

/* jn_hash_iter_init: start an iteration over t in no particular order.
 * While iterating, the entry last returned by jn_hash_iter_next may be
 * removed (jn_hash_remove*); any other insert or removal invalidates the
 * cursor. */
void jn_hash_iter_init(const jn_hash_t *t, jn_hash_iter_t *it);

/* jn_hash_iter_next: the next entry: sets *key and *len to the stored key
 * (borrowed, valid until the entry is removed) and *value; any of the three
 * out pointers may be NULL. Returns false when there are no more entries. */
bool jn_hash_iter_next(jn_hash_iter_t *it, const uint8_t **key, size_t *len, void **value);

#endif /* JUNCTION_HASH_H */
