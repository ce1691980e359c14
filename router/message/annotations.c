/*
 * annotations.c — router annotations (junction/annotations.h): the router's
 * own keys in the message-annotations section, read on the way in
 * (jn_ra_parse) and written on the way out (jn_ra_compose), as
 * docs/protocol.md ("The mesh": "Router annotations") describes them.
 *
 * Reading walks the map once with the decoder. Each key is classified: a
 * symbol that starts with "x-opt-qd." is the router's (to, phase, ingress,
 * trace and stream are read; class, the bare prefix and any other key of
 * that namespace are dropped); a ulong, a string (even one spelled like a
 * router key) or any other symbol is a user annotation. User entries are not
 * decoded further: the parser remembers the runs of consecutive user entries
 * as raw views, so composing copies them byte for byte. qdrouterd 1.19 drops
 * every entry after the first router key; we keep user entries wherever they
 * are and emit them first, in their original order.
 *
 * Composing computes the size of the whole section first, picks map8 or
 * map32, and then writes each octet once into pooled buffers: no heap, no
 * encoder scratch area, no shrinking.
 */
#include <junction/annotations.h>

#include <junction/amqp.h>
#include <junction/decoder.h>
#include <string.h>

typedef enum key_kind {
    KEY_USER = 0,
    KEY_TO,
    KEY_PHASE,
    KEY_INGRESS,
    KEY_TRACE,
    KEY_STREAM,
    KEY_DROP /* x-opt-qd.class, "x-opt-qd." and unknown router keys */
} key_kind_t;

#define MA_SYMBOL "amqp:message-annotations:map"

/* --- reading ----------------------------------------------------------- */

/* Whether the n octets at k are the literal's. Hot path, n a constant:
 * the first 8 octets are one compare of two numbers (the literal's folded
 * at build time), the rest one compare each; no call, no loop. */
__attribute__((always_inline)) static inline bool same_octets(const uint8_t *k, const char *lit,
                                                              size_t n)
{
    uint64_t a = 0, b = 0;
    size_t head = n < 8 ? n : 8;
    memcpy(&a, k, head);
    memcpy(&b, lit, head);
    if (a != b)
        return false;
    for (size_t i = head; i < n; i++)
        if (k[i] != (uint8_t)lit[i])
            return false;
    return true;
}

/* The kind of the symbol key whose len octets are at k (len at most
 * KEY_MAX when it is a candidate, else any). Hot path: a key too short to
 * be a router key costs one compare; a candidate costs the prefix's and
 * then its suffix's compare, chosen by its length. */
#define KEY_MAX 24 /* longer than any router key */
__attribute__((always_inline)) static inline key_kind_t symbol_kind(const uint8_t *k, size_t len)
{
    const size_t prefix_len = sizeof JN_RA_PREFIX - 1;
    if (len < prefix_len || !same_octets(k, JN_RA_PREFIX, prefix_len))
        return KEY_USER;
    if (len >= KEY_MAX)
        return KEY_DROP; /* the router's namespace */
    const uint8_t *suffix = k + prefix_len;
#define SUFFIX_IS(lit) same_octets(suffix, lit, sizeof lit - 1)
    switch (len - prefix_len) {
    case 2:
        return SUFFIX_IS("to") ? KEY_TO : KEY_DROP;
    case 5:
        return SUFFIX_IS("phase") ? KEY_PHASE : SUFFIX_IS("trace") ? KEY_TRACE : KEY_DROP;
    case 6:
        return SUFFIX_IS("stream") ? KEY_STREAM : KEY_DROP;
    case 7:
        return SUFFIX_IS("ingress") ? KEY_INGRESS : KEY_DROP;
    default:
        return KEY_DROP;
    }
#undef SUFFIX_IS
}

/* Classify a map key. Returns 0, or JN_EPROTO when it is not a symbol,
 * ulong or string. A symbol inside one buffer is classified in place,
 * else from a copy of at most KEY_MAX octets. */
__attribute__((always_inline)) static inline int classify(const jn_value_t *key, key_kind_t *kind)
{
    const size_t prefix_len = sizeof JN_RA_PREFIX - 1;
    uint8_t copy[KEY_MAX];
    if (key->described)
        return JN_EPROTO;
    *kind = KEY_USER;
    if (key->type == JN_TYPE_ULONG || key->type == JN_TYPE_STRING)
        return 0;
    if (key->type != JN_TYPE_SYMBOL)
        return JN_EPROTO;
    if (key->size < prefix_len)
        return 0;
    if (key->contiguous) {
        *kind = symbol_kind(key->data, key->size);
        return 0;
    }
    jn_iter_t it;
    jn_value_payload(key, &it);
    size_t n = jn_iter_copy(&it, copy, key->size < KEY_MAX ? key->size : KEY_MAX);
    *kind = symbol_kind(copy, key->size < KEY_MAX ? n : key->size);
    return 0;
}

static int invalid(const char **why, const char *text)
{
    *why = text;
    return JN_EINVAL;
}

static int malformed(const char **why, const char *text)
{
    *why = text;
    return JN_EPROTO;
}

static bool is_plain_string(const jn_field_t *f)
{
    return f->type == JN_TYPE_STRING && !f->described;
}

/* x-opt-qd.trace: a list whose entries are all strings. */
static int read_trace(jn_ra_t *out, const jn_field_t *v, const jn_decoder_t *parent,
                      const char **why)
{
    jn_decoder_t d;
    jn_value_t e;
    int rc;
    if (v->type != JN_TYPE_LIST || v->described)
        return invalid(why, "x-opt-qd.trace is not a list");
    if (jn_decoder_enter(parent, v, &d) != 0)
        return malformed(why, "x-opt-qd.trace is badly encoded");
    while ((rc = jn_decoder_skip(&d, &e)) == 1)
        if (e.type != JN_TYPE_STRING || e.described)
            return invalid(why, "x-opt-qd.trace holds an entry that is not a string");
    if (rc < 0)
        return malformed(why, "x-opt-qd.trace is badly encoded");
    out->has_trace = true;
    out->trace = v->payload;
    out->trace_count = v->count;
    out->trace_size = v->size;
    return 0;
}

/* Read the value of a router key into out. */
static int read_router_key(jn_ra_t *out, key_kind_t kind, const jn_field_t *v,
                           const jn_decoder_t *parent, const char **why)
{
    int64_t n;
    switch (kind) {
    case KEY_TO:
        if (!is_plain_string(v))
            return invalid(why, "x-opt-qd.to is not a string");
        out->has_to = true;
        out->to = v->payload;
        return 0;
    case KEY_INGRESS:
        if (!is_plain_string(v))
            return invalid(why, "x-opt-qd.ingress is not a string");
        out->has_ingress = true;
        out->ingress = v->payload;
        return 0;
    case KEY_PHASE:
        if (v->described || jn_field_to_int64(v, &n) != 0 || n < INT32_MIN || n > INT32_MAX)
            return invalid(why, "x-opt-qd.phase is not an integer");
        out->phase = (int32_t)n;
        return 0;
    case KEY_STREAM:
        if (v->described || jn_field_to_int64(v, &n) != 0)
            return invalid(why, "x-opt-qd.stream is not an integer");
        out->stream = n != 0;
        return 0;
    case KEY_TRACE:
        return read_trace(out, v, parent, why);
    default:
        return 0;
    }
}

/* Runs of consecutive user entries. */
typedef struct run_state {
    bool open;
    jn_iter_t start;
    size_t length;
} run_state_t;

static void run_close(jn_ra_t *out, run_state_t *run)
{
    if (!run->open)
        return;
    if (out->user_run_count < JN_RA_MAX_USER_RUNS)
        jn_iter_sub(&run->start, run->length, &out->user_runs[out->user_run_count]);
    out->user_run_count++;
    run->open = false;
}

/* Enter the map of a message-annotations section. */
static int open_section(const jn_iter_t *section, jn_decoder_t *top, jn_field_t *map,
                        jn_decoder_t *entries, const char **why)
{
    jn_decoder_init(top, section, true);
    int rc = jn_decoder_next(top, map);
    if (rc != 1)
        return malformed(why, rc == 0 ? "the section is empty" : "the section is badly encoded");
    if (!map->described)
        return malformed(why, "the section is not a described type");
    if (map->descriptor_is_symbol ? !jn_iter_equal(&map->descriptor_symbol, MA_SYMBOL)
                                  : map->descriptor_code != JN_SECTION_MESSAGE_ANNOTATIONS)
        return malformed(why, "the section's descriptor is not message-annotations");
    if (map->type != JN_TYPE_MAP)
        return malformed(why, "message annotations are not a map");
    if (map->count % 2 != 0)
        return malformed(why, "the annotations map has an odd number of items");
    if (jn_decoder_enter(top, map, entries) != 0)
        return malformed(why, "the annotations map is badly encoded");
    return 0;
}

/* The general path of jn_ra_parse(): any section (split over buffers, or of
 * any shape), read with the decoder. *out as jn_ra_set_absent leaves it,
 * section not empty. */
static int parse_general(const jn_iter_t *section, bool honour_router_keys, jn_ra_t *out,
                         const char **why)
{
    jn_decoder_t top, d;
    jn_field_t map, value;
    jn_value_t key, skipped;
    run_state_t run = {.open = false};
    int rc = open_section(section, &top, &map, &d, why);
    if (rc != 0)
        return rc;
    out->section_present = true;
    out->section_map = map.payload;
    for (;;) {
        /* Where this entry starts, kept only when it may open a run. */
        if (!run.open)
            jn_decoder_mark(&d, &run.start);
        size_t before = jn_iter_length(&d.it);
        rc = jn_decoder_skip(&d, &key);
        if (rc == 0)
            break;
        /* The key's kind decides how its value is read; errors are still
         * reported in the order: entry encoding, then key type. */
        key_kind_t kind = KEY_USER;
        int key_rc = rc == 1 ? classify(&key, &kind) : 0;
        bool read_value = rc == 1 && key_rc == 0 && kind != KEY_USER && honour_router_keys;
        if (rc == 1)
            rc = read_value ? jn_decoder_next(&d, &value) : jn_decoder_skip(&d, &skipped);
        if (rc == 0)
            return malformed(why, "the annotations map has an odd number of items");
        if (rc < 0)
            return malformed(why, "an annotation is badly encoded");
        if (key_rc != 0)
            return malformed(why, "an annotation key is not a symbol, ulong or string");
        size_t length = before - jn_iter_length(&d.it);
        if (kind == KEY_USER) {
            if (!run.open) {
                run.open = true;
                run.length = 0;
            }
            run.length += length;
            out->user_count++;
            out->user_size += (uint32_t)length;
            continue;
        }
        run_close(out, &run);
        if (read_value) {
            rc = read_router_key(out, kind, &value, &d, why);
            if (rc != 0)
                return rc;
        }
    }
    run_close(out, &run);
    return 0;
}

/* ---- the fast path: a section in one run of memory ----------------------
 * The common section lies in one buffer and holds only common shapes: the
 * descriptor as a smallulong, a map8 or map32, keys and values the decoder's
 * fast reader takes (jn_decode_peek), router values as senders write them.
 * parse_run() reads such a section in place, with no decoder and no views
 * but the ones it records, and fills *out as parse_general() would. At the
 * first thing it does not take (an error of any kind, a rare encoding) it
 * returns SLOW, and the general path reads the section again from its
 * start: so errors, and their descriptions, always come from the general
 * path. Debug builds check that both agree on every section. */
#define SLOW 1

/* Close the run of user entries that started at *start (if any). */
static inline void run_close_at(jn_ra_t *out, const jn_buffer_t *b, const uint8_t **start,
                                size_t length)
{
    if (!*start)
        return;
    if (out->user_run_count < JN_RA_MAX_USER_RUNS)
        jn_iter_raw_run(&out->user_runs[out->user_run_count], b, *start, length);
    out->user_run_count++;
    *start = NULL;
}

/* The integer value v (read by jn_decode_peek) in *n, for the encodings
 * senders use for phase and stream; false for the others. */
static bool peek_integer(const jn_value_t *v, int64_t *n)
{
    const uint8_t *p = v->data;
    switch (v->code) {
    case JN_AMQP_UINT0:
    case JN_AMQP_ULONG0:
        *n = 0;
        return true;
    case JN_AMQP_UBYTE:
    case JN_AMQP_SMALLUINT:
    case JN_AMQP_SMALLULONG:
        *n = p[0];
        return true;
    case JN_AMQP_BYTE:
    case JN_AMQP_SMALLINT:
    case JN_AMQP_SMALLLONG:
        *n = (int8_t)p[0];
        return true;
    case JN_AMQP_INT:
        *n = (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
        return true;
    case JN_AMQP_UINT:
        *n = (int64_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
        return true;
    default:
        return false;
    }
}

/* read_router_key() for a value read by jn_decode_peek from buffer b. */
static int read_router_value(jn_ra_t *out, key_kind_t kind, const jn_value_t *v,
                             const jn_buffer_t *b)
{
    int64_t n;
    switch (kind) {
    case KEY_TO:
    case KEY_INGRESS:
        if (v->type != JN_TYPE_STRING || v->described)
            return SLOW;
        if (kind == KEY_TO) {
            out->has_to = true;
            jn_iter_raw_run(&out->to, b, v->data, v->size);
        } else {
            out->has_ingress = true;
            jn_iter_raw_run(&out->ingress, b, v->data, v->size);
        }
        return 0;
    case KEY_PHASE:
        if (v->described || !peek_integer(v, &n) || n < INT32_MIN || n > INT32_MAX)
            return SLOW;
        out->phase = (int32_t)n;
        return 0;
    case KEY_STREAM:
        if (v->described || !peek_integer(v, &n))
            return SLOW;
        out->stream = n != 0;
        return 0;
    case KEY_TRACE: {
        if (v->type != JN_TYPE_LIST || v->described)
            return SLOW;
        const uint8_t *q = v->data, *end = v->data + v->size;
        for (uint32_t i = 0; i < v->count; i++) {
            jn_value_t e;
            size_t len = jn_decode_peek_small(q, end, 2, &e);
            if (len == 0 || e.type != JN_TYPE_STRING || e.described)
                return SLOW;
            q += len;
        }
        if (q != end) /* octets after the last entry */
            return SLOW;
        out->has_trace = out->trace_plain = true;
        jn_iter_raw_run(&out->trace, b, v->data, v->size);
        out->trace_count = v->count;
        out->trace_size = v->size;
        return 0;
    }
    default:
        return 0;
    }
}

/* The str8 at p (before end) that fits: its octets' length, or -1. */
static inline int str8_at(const uint8_t *p, const uint8_t *end)
{
    size_t left = (size_t)(end - p);
    return left >= 2 && p[0] == JN_AMQP_STR8 && left - 2 >= p[1] ? p[1] : -1;
}

/* The value of a router key at p (before end) as senders write it, read
 * in place: x-opt-qd.to or .ingress a str8, x-opt-qd.trace a list8 of
 * str8 entries filling it exactly. Returns the value's octets, or 0 for
 * any other shape (read_router_value() then reads it). */
static size_t router_value_at(jn_ra_t *out, key_kind_t kind, const uint8_t *p, const uint8_t *end,
                              const jn_buffer_t *b)
{
    int len;
    if (kind == KEY_TO || kind == KEY_INGRESS) {
        if ((len = str8_at(p, end)) < 0)
            return 0;
        bool to = kind == KEY_TO;
        *(to ? &out->has_to : &out->has_ingress) = true;
        jn_iter_raw_run(to ? &out->to : &out->ingress, b, p + 2, (size_t)len);
        return 2 + (size_t)len;
    }
    size_t left = (size_t)(end - p);
    if (kind != KEY_TRACE || left < 3 || p[0] != JN_AMQP_LIST8 || p[1] < 1 || left - 2 < p[1] ||
        p[2] > p[1] - 1u)
        return 0;
    const uint8_t *q = p + 3, *list_end = p + 2 + p[1];
    for (unsigned i = 0; i < p[2]; i++) {
        if ((len = str8_at(q, list_end)) < 0)
            return 0;
        q += 2 + len;
    }
    if (q != list_end) /* octets after the last entry */
        return 0;
    out->has_trace = out->trace_plain = true;
    jn_iter_raw_run(&out->trace, b, p + 3, p[1] - 1u);
    out->trace_count = p[2];
    out->trace_size = p[1] - 1u;
    return 2 + (size_t)p[1];
}

/* One key at p (before end) into *kind: a sym8 classified in place, other
 * shapes through the decoder's fast reader. Returns its octets, or 0 to
 * leave the section to the general path. */
static inline size_t key_at(const uint8_t *p, const uint8_t *end, key_kind_t *kind)
{
    size_t left = (size_t)(end - p);
    if (left >= 2 && p[0] == JN_AMQP_SYM8 && left - 2 >= p[1]) {
        *kind = symbol_kind(p + 2, p[1]);
        return 2 + (size_t)p[1];
    }
    jn_value_t key;
    size_t n = jn_decode_peek_small(p, end, 1, &key);
    return n == 0 || classify(&key, kind) != 0 ? 0 : n;
}

/* Read the section at [p, end) in buffer b (NULL: plain memory) into *out
 * (as jn_ra_set_absent leaves it). 0 or SLOW. Hot path (every message on
 * an inter-router link): the map's head, keys and router values as
 * senders write them are read in place, and only the other values go
 * through the decoder's fast reader. */
static int parse_run(const jn_buffer_t *b, const uint8_t *p, const uint8_t *end,
                     bool honour_router_keys, jn_ra_t *out)
{
    jn_value_t map, value;
    size_t n, left = (size_t)(end - p);
    if (left < 3 || p[0] != JN_AMQP_DESCRIBED || p[1] != JN_AMQP_SMALLULONG ||
        p[2] != JN_SECTION_MESSAGE_ANNOTATIONS)
        return SLOW;
    p += 3;
    left -= 3;
    if (left >= 3 && p[0] == JN_AMQP_MAP8 && p[1] >= 1 && left - 2 >= p[1] && p[2] <= p[1] - 1u &&
        (p[2] & 1u) == 0) {
        map.data = p + 3; /* a map8 (the same checks as jn_decode_peek_small) */
        map.size = p[1] - 1u;
        map.count = p[2];
    } else if ((n = jn_decode_peek_small(p, end, 0, &map)) == 0 || map.type != JN_TYPE_MAP) {
        return SLOW;
    }
    out->section_present = true;
    jn_iter_raw_run(&out->section_map, b, map.data, map.size);
    const uint8_t *run_start = NULL, *elements_end = map.data + map.size;
    size_t run_length = 0;
    p = map.data;
    for (uint32_t i = 0; i < map.count; i += 2) {
        const uint8_t *entry = p;
        key_kind_t kind;
        if ((n = key_at(p, elements_end, &kind)) == 0)
            return SLOW;
        p += n;
        if (kind != KEY_USER && honour_router_keys) {
            run_close_at(out, b, &run_start, run_length);
            if ((n = router_value_at(out, kind, p, elements_end, b)) == 0 &&
                ((n = jn_decode_peek_small(p, elements_end, 1, &value)) == 0 ||
                 read_router_value(out, kind, &value, b) != 0))
                return SLOW;
            p += n;
            continue;
        }
        if ((n = jn_decode_peek_small(p, elements_end, 1, &value)) == 0)
            return SLOW;
        p += n;
        if (kind != KEY_USER) {
            run_close_at(out, b, &run_start, run_length);
            continue;
        }
        if (!run_start) {
            run_start = entry;
            run_length = 0;
        }
        size_t length = (size_t)(p - entry);
        run_length += length;
        out->user_count++;
        out->user_size += (uint32_t)length;
    }
    if (p != elements_end) /* octets after the last entry */
        return SLOW;
    run_close_at(out, b, &run_start, run_length);
    return 0;
}

#ifdef JN_DEBUG
static bool same_view(const jn_iter_t *a, const jn_iter_t *b)
{
    return jn_iter_length(a) == jn_iter_length(b) && jn_iter_equal_iter(a, b) &&
           a->cursor == b->cursor;
}

/* Whether the fast and the general path read the same. */
static bool same_ra(const jn_ra_t *a, const jn_ra_t *b)
{
    if (a->section_present != b->section_present || a->has_to != b->has_to ||
        a->has_ingress != b->has_ingress || a->has_trace != b->has_trace ||
        a->stream != b->stream || a->phase != b->phase || a->trace_count != b->trace_count ||
        a->trace_size != b->trace_size || a->user_count != b->user_count ||
        a->user_size != b->user_size || a->user_run_count != b->user_run_count)
        return false;
    if ((a->has_to && !same_view(&a->to, &b->to)) ||
        (a->has_ingress && !same_view(&a->ingress, &b->ingress)) ||
        (a->has_trace && !same_view(&a->trace, &b->trace)) ||
        (a->section_present && !same_view(&a->section_map, &b->section_map)))
        return false;
    for (uint32_t i = 0; i < a->user_run_count && i < JN_RA_MAX_USER_RUNS; i++)
        if (!same_view(&a->user_runs[i], &b->user_runs[i]))
            return false;
    return true;
}
#endif

int jn_ra_parse(const jn_iter_t *section, bool honour_router_keys, jn_ra_t *out, const char **why)
{
    const char *ignored;
    if (!why)
        why = &ignored;
    *why = NULL;
    jn_ra_set_absent(out); /* not a memset: the struct is about 700 octets */
    if (!section || jn_iter_length(section) == 0)
        return 0;
    if (jn_iter_contiguous(section)) {
        if (parse_run(section->buffer, section->cursor, section->limit, honour_router_keys, out) ==
            0) {
#ifdef JN_DEBUG
            jn_ra_t check;
            memset(&check, 0, sizeof check);
            JN_CHECK(parse_general(section, honour_router_keys, &check, why) == 0);
            JN_CHECK(same_ra(out, &check));
#endif
            return 0;
        }
        jn_ra_set_absent(out);
    }
    return parse_general(section, honour_router_keys, out, why);
}

int jn_ra_parse_in_place(const jn_buffer_t *buffer, const uint8_t *p, size_t len,
                         bool honour_router_keys, jn_ra_t *out)
{
    jn_ra_set_absent(out);
    if (len == 0)
        return 0;
    if (parse_run(buffer, p, p + len, honour_router_keys, out) != 0) {
        jn_ra_set_absent(out);
        return 1;
    }
#ifdef JN_DEBUG
    jn_ra_t check;
    jn_iter_t section;
    const char *why;
    memset(&check, 0, sizeof check);
    jn_iter_raw_run(&section, buffer, p, len);
    JN_CHECK(parse_general(&section, honour_router_keys, &check, &why) == 0);
    JN_CHECK(same_ra(out, &check));
#endif
    return 0;
}

/* The trace's entries in place: those of a trace the fast parse read
 * (ra->trace_plain: one run of plain str8 or str32 entries, checked
 * there), so each is found by its code and size alone. */
static void trace_each_run(const jn_ra_t *ra, jn_ra_trace_fn *fn, void *ctx)
{
    const uint8_t *q = ra->trace.cursor, *end = ra->trace.limit;
    while (q < end) {
        size_t head = 2, len = q[1];
        if (q[0] == JN_AMQP_STR32) {
            head = 5;
            len = (size_t)q[1] << 24 | (size_t)q[2] << 16 | (size_t)q[3] << 8 | q[4];
        }
        jn_iter_t id;
        jn_iter_raw_run(&id, ra->trace.buffer, q + head, len);
        if (!fn(ctx, &id))
            return;
        q += head + len;
    }
}

void jn_ra_trace_each(const jn_ra_t *ra, jn_ra_trace_fn *fn, void *ctx)
{
    if (!ra || !ra->has_trace)
        return;
    if (ra->trace_plain) {
        trace_each_run(ra, fn, ctx);
        return;
    }
    jn_decoder_t d;
    jn_field_t f;
    jn_decoder_init(&d, &ra->trace, true);
    while (jn_decoder_next(&d, &f) == 1)
        if (f.type == JN_TYPE_STRING && !fn(ctx, &f.payload))
            return;
}

/* jn_ra_trace_contains' search: the node id sought, and whether found. */
typedef struct trace_find {
    const char *node_id;
    bool found;
} trace_find_t;

static bool trace_find_step(void *ctx, const jn_iter_t *id)
{
    trace_find_t *t = ctx;
    t->found = jn_iter_equal(id, t->node_id);
    return !t->found;
}

bool jn_ra_trace_contains(const jn_ra_t *ra, const char *node_id)
{
    trace_find_t t = {.node_id = node_id, .found = false};
    jn_ra_trace_each(ra, trace_find_step, &t);
    return t.found;
}

/* --- composing --------------------------------------------------------- */

/* Appends octets to a buffer list. The octets written into the tail buffer
 * are published (one release store) when the writer moves to a new buffer
 * and at the end, not per call. */
typedef struct writer {
    jn_buffer_list_t list;
    uint8_t *ptr;   /* next free octet of the tail buffer */
    size_t avail;   /* free octets after ptr */
    size_t pending; /* octets written to the tail and not yet published */
    size_t written;
    int error;
} writer_t;

static void w_publish(writer_t *w)
{
    if (w->pending > 0)
        jn_buffer_publish(w->list.tail, (uint32_t)w->pending);
    w->written += w->pending;
    w->pending = 0;
}

/* Make room: publish the tail and start a new buffer. False on ENOMEM. */
static bool w_next_buffer(writer_t *w)
{
    w_publish(w);
    jn_buffer_t *t = jn_buffer_new();
    if (!t) {
        w->error = JN_ENOMEM;
        w->avail = 0;
        return false;
    }
    jn_buffer_list_append(&w->list, t);
    w->ptr = t->data;
    w->avail = JN_BUFFER_CAPACITY;
    return true;
}

/* Copy len octets across buffers (w_bytes' slow path). */
static void w_bytes_slow(writer_t *w, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        if (w->avail == 0 && !w_next_buffer(w))
            return;
        size_t n = len < w->avail ? len : w->avail;
        memcpy(w->ptr, p, n);
        w->ptr += n;
        w->avail -= n;
        w->pending += n;
        p += n;
        len -= n;
    }
}

/* Hot path: the common case is one memcpy into the current buffer, inlined
 * so that the short constant-length writes (format codes, sizes, router
 * keys) become a few moves. */
static inline void w_bytes(writer_t *w, const void *data, size_t len)
{
    if (JN_LIKELY(len <= w->avail)) {
        memcpy(w->ptr, data, len);
        w->ptr += len;
        w->avail -= len;
        w->pending += len;
        return;
    }
    w_bytes_slow(w, data, len);
}

static void w_iter(writer_t *w, const jn_iter_t *src)
{
    if (jn_iter_contiguous(src)) { /* one run of memory: one copy */
        w_bytes(w, src->cursor, (size_t)(src->limit - src->cursor));
        return;
    }
    jn_iter_t it = *src;
    while (!jn_iter_end(&it)) {
        if (w->avail == 0 && !w_next_buffer(w))
            return;
        size_t n = jn_iter_copy(&it, w->ptr, w->avail);
        if (n == 0)
            return;
        w->ptr += n;
        w->avail -= n;
        w->pending += n;
    }
}

static inline void w_u8(writer_t *w, uint8_t v)
{
    w_bytes(w, &v, 1);
}

static void w_u32(writer_t *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    w_bytes(w, b, 4);
}

/* A compound's constructor, size and count: 8-bit form when small. */
static void w_compound(writer_t *w, bool small, uint8_t code8, uint8_t code32, size_t content,
                       size_t count)
{
    if (small) {
        uint8_t b[3] = {code8, (uint8_t)(content + 1), (uint8_t)count};
        w_bytes(w, b, 3);
    } else {
        w_u8(w, code32);
        w_u32(w, (uint32_t)(content + 4));
        w_u32(w, (uint32_t)count);
    }
}

static size_t str_size(size_t len)
{
    return len <= UINT8_MAX ? 2 + len : 5 + len;
}

static void w_str_head(writer_t *w, size_t len)
{
    if (len <= UINT8_MAX) {
        uint8_t b[2] = {JN_AMQP_STR8, (uint8_t)len};
        w_bytes(w, b, 2);
    } else {
        w_u8(w, JN_AMQP_STR32);
        w_u32(w, (uint32_t)len);
    }
}

static inline void w_key(writer_t *w, const char *symbol)
{
    size_t len = strlen(symbol);
    uint8_t b[2] = {JN_AMQP_SYM8, (uint8_t)len};
    w_bytes(w, b, 2);
    w_bytes(w, symbol, len);
}

static inline size_t key_size(const char *symbol)
{
    return 2 + strlen(symbol);
}

static bool small_compound(size_t content, size_t count)
{
    return count <= UINT8_MAX && content + 1 <= UINT8_MAX;
}

/* What one hop sends, with every size worked out before writing. */
typedef struct plan {
    const jn_ra_t *in;
    const jn_ra_hop_t *hop;
    int32_t phase;
    bool stream;
    const jn_iter_t *to; /* NULL: no x-opt-qd.to */
    size_t to_len;
    const jn_iter_t *ingress; /* NULL: our own node id */
    size_t ingress_len, node_len;
    size_t trace_content, trace_count;
    size_t router_size, router_pairs;
} plan_t;

static void plan_router_keys(plan_t *p)
{
    const jn_ra_t *in = p->in;
    const jn_ra_hop_t *hop = p->hop;
    p->phase = hop->to_override || hop->phase ? hop->phase : in->phase;
    p->stream = hop->stream || in->stream;
    p->to = hop->to_override ? hop->to_override : in->has_to ? &in->to : NULL;
    p->ingress = in->has_ingress ? &in->ingress : NULL;
    p->node_len = strlen(hop->node_id);
    p->ingress_len = p->ingress ? jn_iter_length(p->ingress) : p->node_len;
    p->trace_content = (in->has_trace ? in->trace_size : 0) + str_size(p->node_len);
    p->trace_count = (in->has_trace ? in->trace_count : 0) + 1;
    size_t s = key_size(JN_RA_INGRESS) + str_size(p->ingress_len) + key_size(JN_RA_TRACE) +
               (small_compound(p->trace_content, p->trace_count) ? 3 : 9) + p->trace_content;
    size_t pairs = 2;
    if (p->phase != 0) {
        s += key_size(JN_RA_PHASE) + (p->phase >= INT8_MIN && p->phase <= INT8_MAX ? 2 : 5);
        pairs++;
    }
    if (p->stream) {
        s += key_size(JN_RA_STREAM) + 2;
        pairs++;
    }
    if (p->to) {
        p->to_len = jn_iter_length(p->to);
        s += key_size(JN_RA_TO) + str_size(p->to_len);
        pairs++;
    }
    p->router_size = s;
    p->router_pairs = pairs;
}

/* The router keys, in the order of docs/protocol.md, "Router annotations". */
static void write_router_keys(writer_t *w, const plan_t *p)
{
    if (p->phase != 0) {
        w_key(w, JN_RA_PHASE);
        if (p->phase >= INT8_MIN && p->phase <= INT8_MAX) {
            w_u8(w, JN_AMQP_SMALLINT);
            w_u8(w, (uint8_t)(int8_t)p->phase);
        } else {
            w_u8(w, JN_AMQP_INT);
            w_u32(w, (uint32_t)p->phase);
        }
    }
    if (p->stream) {
        uint8_t one[2] = {JN_AMQP_SMALLINT, 1};
        w_key(w, JN_RA_STREAM);
        w_bytes(w, one, 2);
    }
    if (p->to) {
        w_key(w, JN_RA_TO);
        w_str_head(w, p->to_len);
        w_iter(w, p->to);
    }
    w_key(w, JN_RA_INGRESS);
    w_str_head(w, p->ingress_len);
    if (p->ingress)
        w_iter(w, p->ingress);
    else
        w_bytes(w, p->hop->node_id, p->node_len);
    w_key(w, JN_RA_TRACE);
    w_compound(w, small_compound(p->trace_content, p->trace_count), JN_AMQP_LIST8, JN_AMQP_LIST32,
               p->trace_content, p->trace_count);
    if (p->in->has_trace)
        w_iter(w, &p->in->trace);
    w_str_head(w, p->node_len);
    w_bytes(w, p->hop->node_id, p->node_len);
}

/* The user entries, byte for byte: from the remembered runs, or by walking
 * the map again when there were more runs than remembered. */
static void write_user_entries(writer_t *w, const jn_ra_t *in)
{
    if (in->user_run_count <= JN_RA_MAX_USER_RUNS) {
        for (uint32_t i = 0; i < in->user_run_count; i++)
            w_iter(w, &in->user_runs[i]);
        return;
    }
    jn_decoder_t d;
    jn_value_t key, value;
    jn_decoder_init(&d, &in->section_map, true);
    for (;;) {
        jn_iter_t entry, sub;
        key_kind_t kind;
        jn_decoder_mark(&d, &entry);
        size_t before = jn_iter_length(&entry);
        if (jn_decoder_skip(&d, &key) != 1 || jn_decoder_skip(&d, &value) != 1)
            return;
        if (classify(&key, &kind) != 0 || kind != KEY_USER)
            continue;
        jn_iter_sub(&entry, before - jn_iter_length(&d.it), &sub);
        w_iter(w, &sub);
    }
}

/* Move the buffers of src to the end of dst. */
static void splice(jn_buffer_list_t *dst, jn_buffer_list_t *src)
{
    if (!dst->head) {
        *dst = *src;
    } else {
        jn_buffer_t *b = src->head;
        while (b) {
            jn_buffer_t *next = jn_buffer_next(b);
            atomic_store_explicit(&b->next, NULL, memory_order_relaxed);
            jn_buffer_list_append(dst, b);
            b = next;
        }
    }
    jn_buffer_list_init(src);
}

int jn_ra_compose_section(const jn_ra_t *in, const jn_ra_hop_t *hop, jn_buffer_list_t *out)
{
    static const jn_ra_t none;
    if (!in)
        in = &none;
    if (hop->to_router && !hop->node_id)
        return JN_EINVAL;
    if (in->user_count == 0 && !hop->to_router)
        return 0;
    plan_t p = {.in = in, .hop = hop};
    if (hop->to_router)
        plan_router_keys(&p);
    size_t content = in->user_size + p.router_size;
    size_t count = 2 * ((size_t)in->user_count + p.router_pairs);
    bool small = small_compound(content, count);
    if (count > UINT32_MAX || content + 4 > UINT32_MAX)
        return JN_EOVERFLOW;
    size_t total = 3 + (small ? 3 : 9) + content;

    writer_t w = {.ptr = NULL, .avail = 0, .pending = 0, .written = 0, .error = 0};
    jn_buffer_list_init(&w.list);
    uint8_t descriptor[3] = {JN_AMQP_DESCRIBED, JN_AMQP_SMALLULONG, JN_SECTION_MESSAGE_ANNOTATIONS};
    w_bytes(&w, descriptor, 3);
    w_compound(&w, small, JN_AMQP_MAP8, JN_AMQP_MAP32, content, count);
    write_user_entries(&w, in);
    if (hop->to_router)
        write_router_keys(&w, &p);
    if (!w.error)
        w_publish(&w);
    if (w.error) {
        jn_buffer_list_free(&w.list);
        return w.error;
    }
    JN_CHECK(w.written == total);
    splice(out, &w.list);
    return 0;
}
