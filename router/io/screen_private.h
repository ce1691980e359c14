/*
 * screen_private.h — the frame screen's state (struct jn_screen) and its
 * table of sessions and links: open addressing, keyed by channel and
 * handle, no tombstones. Included by router/io/screen.c only; the table's
 * functions are static so that the per-frame lookups stay inlined there.
 */
#ifndef JN_IO_SCREEN_PRIVATE_H
#define JN_IO_SCREEN_PRIVATE_H 1

#include <junction/common.h>
#include <junction/screen.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

enum stage { ST_HEADER, ST_HEAD, ST_EXT, ST_PERF, ST_PAYLOAD, ST_PASS_NONE, ST_FAILED };
enum layer { LAYER_NONE, LAYER_SASL, LAYER_AMQP };

/* SASL progress, from the peer's side (5.3.2): a client sends init then
 * responses; a server sends mechanisms, challenges, then the outcome. */
enum { SASL_START, SASL_INIT_SEEN, SASL_MECHS_SEEN, SASL_DONE };

#define KEY_SESSION (1ull << 48)
#define KEY_LINK (1ull << 49) /* so that no key is 0, the free mark */
#define KEY_REPLY (1ull << 50) /* | our channel: a begin of the peer answered it */
#define LINK_KEY(ch, h) (KEY_LINK | ((uint64_t)(ch) << 32) | (uint64_t)(h))

typedef struct entry {
    uint64_t key;         /* LINK_KEY or KEY_SESSION|channel; 0 when free */
    uint32_t delivery_id; /* links: the delivery in progress; a session:
                           * 1 + our channel its begin answered, 0: none;
                           * KEY_REPLY: 1 once the answering session ended */
    bool receiver;        /* links: the peer attached as receiver */
    bool in_delivery;     /* links: a delivery awaits more transfers */
} entry_t;

struct jn_screen {
    uint32_t max_frame;
    uint16_t channel_max;
    uint8_t stage, layer, sasl;
    bool open_seen, close_seen, failed_in_sasl;
    uint8_t head[8]; /* header or frame header being gathered */
    uint8_t head_len;
    uint8_t type;     /* current frame */
    uint16_t channel; /* current frame */
    uint32_t left;    /* octets of the current frame's stage still to come */
    uint32_t body;    /* body octets (after the extended header) not yet seen */
    uint8_t *carry;   /* a split performative, gathered */
    uint32_t carry_len, carry_cap;
    entry_t *table; /* power of two slots, key 0 = free */
    uint32_t cap, count;
    entry_t *cached; /* last link looked up, or NULL */
    const char *condition;
    char description[200];
};

/* ---- the table ----------------------------------------------------------------- */

static inline uint32_t slot_of(uint64_t key, uint32_t cap)
{
    uint64_t h = key * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32) & (cap - 1);
}

static entry_t *lookup(jn_screen_t *s, uint64_t key)
{
    for (uint32_t i = slot_of(key, s->cap);; i = (i + 1) & (s->cap - 1)) {
        if (s->table[i].key == key)
            return &s->table[i];
        if (s->table[i].key == 0)
            return NULL;
    }
}

static void put(entry_t *table, uint32_t cap, const entry_t *e)
{
    uint32_t i = slot_of(e->key, cap);
    while (table[i].key != 0)
        i = (i + 1) & (cap - 1);
    table[i] = *e;
}

/* Rebuild the table with cap slots, leaving out the links of channel drop
 * (or none: drop > 0xffff). Returns 0 or JN_ENOMEM. */
static int rebuild(jn_screen_t *s, uint32_t cap, uint32_t drop)
{
    entry_t *t = calloc(cap, sizeof *t);
    if (!t)
        return JN_ENOMEM;
    uint32_t count = 0;
    for (uint32_t i = 0; i < s->cap; i++) {
        const entry_t *e = &s->table[i];
        if (e->key == 0)
            continue;
        if ((e->key & KEY_LINK) && ((e->key >> 32) & 0xffff) == drop)
            continue;
        put(t, cap, e);
        count++;
    }
    free(s->table);
    s->table = t;
    s->cap = cap;
    s->count = count;
    s->cached = NULL;
    return 0;
}

static entry_t *insert(jn_screen_t *s, uint64_t key)
{
    if ((s->count + 1) * 4 > s->cap * 3 && rebuild(s, s->cap * 2, UINT32_MAX) != 0)
        return NULL;
    entry_t e = {.key = key};
    put(s->table, s->cap, &e);
    s->count++;
    s->cached = NULL;
    return lookup(s, key);
}

/* Remove key (present) by shifting its probe run back (no tombstones). */
static void erase(jn_screen_t *s, entry_t *e)
{
    uint32_t mask = s->cap - 1, i = (uint32_t)(e - s->table), j = i;
    s->table[i].key = 0;
    for (;;) {
        j = (j + 1) & mask;
        if (s->table[j].key == 0)
            break;
        uint32_t home = slot_of(s->table[j].key, s->cap);
        /* move j back to the hole at i unless its home lies in (i, j] */
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (stays)
            continue;
        s->table[i] = s->table[j];
        s->table[j].key = 0;
        i = j;
    }
    s->count--;
    s->cached = NULL;
}

#endif /* JN_IO_SCREEN_PRIVATE_H */
