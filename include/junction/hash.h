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
