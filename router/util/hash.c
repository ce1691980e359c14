/*
 * hash.c — byte-string hash table (junction/hash.h).
 *
 * Separate chaining: buckets[hash & mask] heads a singly linked chain of
 * entries; each entry holds its full 32-bit hash (compared before the key,
 * so a lookup touches the key octets of a mismatching entry only on a full
 * hash collision) and a copy of its key inline after the struct. Entries
 * never move in memory, which is what lets an iterator survive removal of
 * the entry it last returned, and growth only relinks them.
 *
 * The table grows ×2 when the entry count exceeds the bucket count (load
 * factor 1). FNV-1a's low bits are well mixed for short keys, so masking is
 * enough to pick a bucket.
 */
#include <junction/hash.h>

#include <stdlib.h>
#include <string.h>

#define HASH_MIN_BUCKETS 16

typedef struct hash_entry {
    struct hash_entry *next;
    void *value;
    size_t len;
    uint32_t hash;
    uint8_t key[];
} hash_entry_t;

struct jn_hash {
    hash_entry_t **buckets;
    size_t mask; /* bucket count - 1 */
    size_t count;
};

/* Smallest power of two >= n (and >= HASH_MIN_BUCKETS); 0 on overflow. */
static size_t buckets_for(size_t n)
{
    size_t b = HASH_MIN_BUCKETS;
    while (b < n) {
        if (b > SIZE_MAX / 2 / sizeof(hash_entry_t *))
            return 0;
        b <<= 1;
    }
    return b;
}

jn_hash_t *jn_hash_create(size_t expected)
{
    size_t nb = buckets_for(expected);
    if (nb == 0)
        return NULL;
    jn_hash_t *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->buckets = calloc(nb, sizeof(*t->buckets));
    if (!t->buckets) {
        free(t);
        return NULL;
    }
    t->mask = nb - 1;
    return t;
}

void jn_hash_free(jn_hash_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i <= t->mask; i++) {
        hash_entry_t *e = t->buckets[i];
        while (e) {
            hash_entry_t *next = e->next;
            free(e);
            e = next;
        }
    }
    free(t->buckets);
    free(t);
}

/* Relink every entry into a new array of nb buckets. 0 or JN_ENOMEM. */
static int rehash(jn_hash_t *t, size_t nb)
{
    hash_entry_t **nbk = calloc(nb, sizeof(*nbk));
    if (!nbk)
        return JN_ENOMEM;
    for (size_t i = 0; i <= t->mask; i++) {
        hash_entry_t *e = t->buckets[i];
        while (e) {
            hash_entry_t *next = e->next;
            size_t b = e->hash & (nb - 1);
            e->next = nbk[b];
            nbk[b] = e;
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = nbk;
    t->mask = nb - 1;
    return 0;
}

int jn_hash_reserve(jn_hash_t *t, size_t entries)
{
    size_t nb = buckets_for(entries);
    if (nb == 0)
        return JN_ENOMEM;
    if (nb <= t->mask + 1)
        return 0;
    return rehash(t, nb);
}

/* The link that points at the entry with this key, or at the NULL that ends
 * its chain when absent. */
static hash_entry_t **find_link(const jn_hash_t *t, uint32_t hash, const void *key, size_t len)
{
    hash_entry_t **link = &t->buckets[hash & t->mask];
    for (hash_entry_t *e = *link; e; link = &e->next, e = *link) {
        if (e->hash == hash && e->len == len && (len == 0 || memcmp(e->key, key, len) == 0))
            return link;
    }
    return link;
}

static hash_entry_t **find_link_with(const jn_hash_t *t, uint32_t hash,
                                     jn_hash_key_equal_fn key_equal, void *ctx)
{
    hash_entry_t **link = &t->buckets[hash & t->mask];
    for (hash_entry_t *e = *link; e; link = &e->next, e = *link) {
        if (e->hash == hash && key_equal(e->key, e->len, ctx))
            return link;
    }
    return link;
}

int jn_hash_insert(jn_hash_t *t, const void *key, size_t len, void *value)
{
    if (!value || (!key && len > 0))
        return JN_EINVAL;
    uint32_t hash = jn_hash_bytes(key, len);
    hash_entry_t **link = find_link(t, hash, key, len);
    if (*link)
        return JN_EEXIST;
    if (len > SIZE_MAX - sizeof(hash_entry_t))
        return JN_ENOMEM;
    hash_entry_t *e = malloc(sizeof(*e) + len);
    if (!e)
        return JN_ENOMEM;
    e->value = value;
    e->len = len;
    e->hash = hash;
    if (len > 0)
        memcpy(e->key, key, len);
    /* Push at the chain's head (the found link is the chain's tail). */
    hash_entry_t **head = &t->buckets[hash & t->mask];
    e->next = *head;
    *head = e;
    t->count++;
    if (t->count > t->mask + 1 && t->mask < SIZE_MAX / 4)
        (void)rehash(t, (t->mask + 1) * 2); /* on ENOMEM chains just grow longer */
    return 0;
}

void *jn_hash_lookup(const jn_hash_t *t, const void *key, size_t len)
{
    if (!key && len > 0)
        return NULL;
    hash_entry_t *e = *find_link(t, jn_hash_bytes(key, len), key, len);
    return e ? e->value : NULL;
}

void *jn_hash_lookup_with(const jn_hash_t *t, uint32_t hash, jn_hash_key_equal_fn key_equal,
                          void *ctx)
{
    hash_entry_t *e = *find_link_with(t, hash, key_equal, ctx);
    return e ? e->value : NULL;
}

/* Unlink and free the entry at *link (non-NULL). */
static void remove_at(jn_hash_t *t, hash_entry_t **link, void **value_out)
{
    hash_entry_t *e = *link;
    *link = e->next;
    if (value_out)
        *value_out = e->value;
    free(e);
    t->count--;
}

int jn_hash_remove(jn_hash_t *t, const void *key, size_t len, void **value_out)
{
    if (!key && len > 0)
        return JN_ENOENT;
    hash_entry_t **link = find_link(t, jn_hash_bytes(key, len), key, len);
    if (!*link)
        return JN_ENOENT;
    remove_at(t, link, value_out);
    return 0;
}

int jn_hash_remove_with(jn_hash_t *t, uint32_t hash, jn_hash_key_equal_fn key_equal, void *ctx,
                        void **value_out)
{
    hash_entry_t **link = find_link_with(t, hash, key_equal, ctx);
    if (!*link)
        return JN_ENOENT;
    remove_at(t, link, value_out);
    return 0;
}

size_t jn_hash_count(const jn_hash_t *t)
{
    return t->count;
}

void jn_hash_iter_init(const jn_hash_t *t, jn_hash_iter_t *it)
{
    it->table = t;
    it->bucket = 0;
    it->entry = NULL;
}

/* The cursor keeps the entry to return next (so the one returned last may
 * be freed), and the bucket after it to continue from. */
bool jn_hash_iter_next(jn_hash_iter_t *it, const uint8_t **key, size_t *len, void **value)
{
    const jn_hash_t *t = it->table;
    hash_entry_t *e = it->entry;
    while (!e && it->bucket <= t->mask)
        e = t->buckets[it->bucket++];
    if (!e)
        return false;
    it->entry = e->next;
    if (key)
        *key = e->key;
    if (len)
        *len = e->len;
    if (value)
        *value = e->value;
    return true;
}
