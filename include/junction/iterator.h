/*
 * junction/iterator.h — the field iterator: a cursor over octets in a buffer
 * chain (or a plain byte string) that never copies them.
 *
 * An iterator walks one *view* of a field:
 *   JN_VIEW_RAW          the octets as they are;
 *   JN_VIEW_ADDRESS      an address with its scheme and host removed
 *                        ("amqp://host:port/x", "amqp:/x", "/x", "//host/x"
 *                        all read as "x") and one trailing '.' or '/' dropped;
 *                        a scheme is a letter, then letters, digits, '+',
 *                        '-' or '.', then ":/"; nothing is removed when no
 *                        octet follows it ("/", "amqp:/") or when a host has
 *                        no '/' after it ("//host" reads as it is);
 *   JN_VIEW_ADDRESS_HASH the key under which the routing table stores the
 *                        address: a class letter, for mobile addresses a phase
 *                        character, then the address body, as in
 *                        docs/protocol.md, "Address keys" (e.g. "q1" ->
 *                        "M0q1", "_local/x" -> "Lx", "_topo/0/B/y" -> "RB").
 *                        Each leading segment must end with '/' to count
 *                        ("_topo/0/B" is "RB" even on router B; "_local" is
 *                        "M0_local"). Address views of a field of 4 GiB or
 *                        more read it raw.
 *
 * Fast path: while the cursor is inside the current buffer and inside the
 * body of the view, jn_iter_octet() is an inline compare and increment
 * (`cursor < limit`). Everything else — the end of a buffer, the end of the
 * field, the prefix octets of the hash view — is handled out of line by
 * jn_iter_octet_slow(). Define JN_ITER_NO_INLINE to route every octet through
 * the out-of-line path (used by the benchmark to measure the difference).
 *
 * Threads: an iterator belongs to the thread using it. The octets it reads
 * must be published (junction/buffer.h) and stay referenced while it is used.
 */
#ifndef JUNCTION_ITERATOR_H
#define JUNCTION_ITERATOR_H 1

#include <junction/buffer.h>

typedef enum jn_iter_view {
    JN_VIEW_RAW = 0,
    JN_VIEW_ADDRESS,
    JN_VIEW_ADDRESS_HASH
} jn_iter_view_t;

/* Address-hash class letters (docs/protocol.md, "Address keys"). */
enum {
    JN_ADDR_CLASS_LOCAL = 'L',
    JN_ADDR_CLASS_TOPOLOGICAL = 'T',
    JN_ADDR_CLASS_ROUTER = 'R',
    JN_ADDR_CLASS_AREA = 'A',
    JN_ADDR_CLASS_MOBILE = 'M',
    JN_ADDR_CLASS_LINK_IN = 'C',
    JN_ADDR_CLASS_LINK_OUT = 'D',
    JN_ADDR_CLASS_LINK_IN_PATTERN = 'E',
    JN_ADDR_CLASS_LINK_OUT_PATTERN = 'F',
    JN_ADDR_CLASS_GLOBAL = 'G',
    JN_ADDR_CLASS_EDGE_SUMMARY = 'H'
};

#define JN_ITER_END (-1)
#define JN_ITER_PREFIX_MAX 4

/* The iterator. Lives on the stack or inside another struct; no cleanup.
 * All fields are private to router/message/iterator.c except that the inline
 * fast path reads cursor and limit. */
typedef struct jn_iter {
    /* fast path */
    const uint8_t *cursor; /* next octet */
    const uint8_t *limit;  /* end of the run readable without the slow path */
    /* slow path */
    const jn_buffer_t *buffer; /* buffer that holds cursor (NULL: plain bytes) */
    size_t remaining;          /* body octets of the view after limit */
    uint8_t prefix[JN_ITER_PREFIX_MAX]; /* hash view: class letter, phase */
    uint8_t prefix_len;
    uint8_t prefix_pos;
    uint8_t view;  /* jn_iter_view_t */
    uint8_t phase; /* phase character of a mobile hash key, '0' by default */
    /* the field as given to init (or sub), for jn_iter_reset() and
     * jn_iter_set_view() */
    const jn_buffer_t *start_buffer;
    const uint8_t *start_cursor;
    size_t start_length;
    /* where the view's body lies inside the field: octets skipped at its
     * start (scheme, host, class segments) and cut at its end */
    uint32_t body_skip;
    uint32_t body_cut;
} jn_iter_t;

/* jn_iter_configure: tell the hash view who this router is (docs/protocol.md,
 * "Address keys"). area and router_id are NUL-terminated and copied, each at most
 * 127 octets; NULL means "0" and "" respectively. edge is true on an edge
 * router. Main thread at start-up, before any other thread runs (tests may
 * call it again between tests). Returns 0, or JN_EINVAL (too long; nothing is
 * changed). Until called, the area is "0", the id empty, and edge false. */
int jn_iter_configure(const char *area, const char *router_id, bool edge);

/* jn_iter_init: a view of length octets that start offset octets into the
 * chain starting at buffer (offset may exceed the first buffer's size; the
 * chain is walked). The chain is borrowed: it must stay referenced while the
 * iterator (or a copy or sub of it) is used. Only octets already published
 * are counted, and the walk never reads past them. buffer NULL is an empty
 * chain. The phase is '0'. Returns 0, or JN_EINVAL when the chain holds
 * fewer than offset + length published octets (*it is then undefined).
 * Cost: one pass over the headers of the buffers the view spans, and for the
 * address views one pass over the address's leading octets and its last
 * octet. Any thread. */
int jn_iter_init(jn_iter_t *it, const jn_buffer_t *buffer, size_t offset, size_t length,
                 jn_iter_view_t view);

/* jn_iter_init_bytes: a view over len plain octets at data (borrowed; NULL
 * only with len 0). The phase is '0'. Any thread. */
void jn_iter_init_bytes(jn_iter_t *it, const void *data, size_t len, jn_iter_view_t view);

/* jn_iter_init_string: jn_iter_init_bytes over a NUL-terminated string. */
void jn_iter_init_string(jn_iter_t *it, const char *str, jn_iter_view_t view);

/* jn_iter_set_view: re-read the same field (from its start, as given to
 * init or sub) through another view, and reset. The phase is kept. */
void jn_iter_set_view(jn_iter_t *it, jn_iter_view_t view);

/* jn_iter_set_phase: phase character ('0'..'9' or 'F') of a mobile address in
 * the hash view (docs/protocol.md, "Address keys"); resets the iterator. Ignored
 * for other classes and views, but kept for a later jn_iter_set_view. */
void jn_iter_set_phase(jn_iter_t *it, char phase);

/* jn_iter_reset: back to the first octet of the view. */
void jn_iter_reset(jn_iter_t *it);

/* jn_iter_octet_slow: out-of-line part of jn_iter_octet (buffer boundary,
 * end of view, prefix octets). Do not call directly. */
int jn_iter_octet_slow(jn_iter_t *it);

/* jn_iter_octet: the next octet of the view (0..255), or JN_ITER_END.
 * Hot path: inside one buffer and the view's body, one compare and one
 * increment. */
static inline int jn_iter_octet(jn_iter_t *it)
{
#ifndef JN_ITER_NO_INLINE
    if (JN_LIKELY(it->cursor < it->limit))
        return *it->cursor++;
#endif
    return jn_iter_octet_slow(it);
}

/* jn_iter_end: true when no octet is left in the view. */
static inline bool jn_iter_end(const jn_iter_t *it)
{
    return it->cursor >= it->limit && it->remaining == 0 && it->prefix_pos >= it->prefix_len;
}

/* jn_iter_length: octets left in the view from the current position
 * (including hash-view prefix octets not yet read).
 * Hot path (decoders ask it for every value): the count is kept in the
 * iterator, so this is two subtractions and two additions, no walk. */
static inline size_t jn_iter_length(const jn_iter_t *it)
{
    return (size_t)(it->prefix_len - it->prefix_pos) + (size_t)(it->limit - it->cursor) +
           it->remaining;
}

/* jn_iter_contiguous: true when every octet left in the view lies in
 * [cursor, limit), one run of one buffer (no prefix octets pending, nothing
 * after limit): then those octets may be read as plain memory. Hot path:
 * the common message sits in one buffer, and parsers take a pointer fast
 * path when this holds. */
static inline bool jn_iter_contiguous(const jn_iter_t *it)
{
    return it->remaining == 0 && it->prefix_pos >= it->prefix_len;
}

/* jn_iter_advance: skip n octets (or to the end, if fewer are left). Returns
 * the number skipped. Crosses buffers a whole run at a time. */
size_t jn_iter_advance(jn_iter_t *it, size_t n);

/* jn_iter_equal: true when the octets left in the view equal the string s
 * exactly. The position is unchanged. */
bool jn_iter_equal(const jn_iter_t *it, const char *s);

/* jn_iter_equal_bytes: true when the octets left in the view are exactly
 * the len octets at s (borrowed). The position is unchanged. A view whose
 * octets after any pending prefix lie in one run is compared with memcmp
 * alone (the address table's and the mesh's lookups, per message). Any
 * thread; the view's buffers must stay alive for the call. */
bool jn_iter_equal_bytes(const jn_iter_t *it, const void *s, size_t len);

/* jn_iter_equal_iter: true when the octets left in a and b are equal.
 * Positions are unchanged. */
bool jn_iter_equal_iter(const jn_iter_t *a, const jn_iter_t *b);

/* jn_iter_prefix: when the octets left start with s, skip past them and
 * return true; otherwise return false and leave the position unchanged. */
bool jn_iter_prefix(jn_iter_t *it, const char *s);

/* jn_iter_copy: copy up to cap octets from the current position to dst,
 * advancing past them. Returns the number copied. */
size_t jn_iter_copy(jn_iter_t *it, void *dst, size_t cap);

/* jn_iter_copy_string: copy the octets left (at most cap - 1) to dst as a
 * NUL-terminated string without advancing. Returns the full length left, so a
 * result >= cap means the copy was cut short (as snprintf). cap >= 1. */
size_t jn_iter_copy_string(const jn_iter_t *it, char *dst, size_t cap);

/* jn_iter_hash: hash of the octets left in the view, from the current
 * position, without advancing; equals jn_hash_bytes() (junction/hash.h) of
 * the same octets, so a table keyed by byte strings can be searched with an
 * iterator. */
uint32_t jn_iter_hash(const jn_iter_t *it);

/* jn_iter_raw_run: *out becomes a raw view of the length octets at p, which
 * must all be published and lie in one run: inside buffer's data (buffer
 * non-NULL), or plain memory (buffer NULL). The result is the iterator
 * jn_iter_sub() gives for the same octets. Hot path (the decoder builds two
 * views per value): a few stores, no walk. */
static inline void jn_iter_raw_run(jn_iter_t *out, const jn_buffer_t *buffer, const uint8_t *p,
                                   size_t length)
{
    out->cursor = p;
    out->limit = p + length;
    out->buffer = buffer;
    out->remaining = 0;
    out->prefix_len = 0;
    out->prefix_pos = 0;
    out->view = JN_VIEW_RAW;
    out->phase = '0';
    out->start_buffer = buffer;
    out->start_cursor = p;
    out->start_length = length;
    out->body_skip = 0;
    out->body_cut = 0;
}

/* jn_iter_run: the next run of a raw view's octets that lies in one buffer
 * (or in plain memory), not consumed: *p is its first octet and *buf the
 * buffer holding it (NULL for plain bytes); returns its length, 0 at the
 * end of the view. Consume it with jn_iter_advance. Not for a view with
 * prefix octets (the hash view). Hot path (the engine references each
 * outgoing payload run this way): inside a run, a compare and two loads;
 * at a buffer's end, the slow path moves to the next buffer. */
static inline size_t jn_iter_run(jn_iter_t *it, const uint8_t **p, const jn_buffer_t **buf)
{
    if (it->cursor >= it->limit) {
        if (jn_iter_octet(it) == JN_ITER_END) /* moves to the next buffer */
            return 0;
        it->cursor--;
    }
    *p = it->cursor;
    *buf = it->buffer;
    return (size_t)(it->limit - it->cursor);
}

/* jn_iter_sub: *out becomes a raw view of the next length octets of it
 * (length is cut to what is left); it is not advanced. For views with a
 * prefix, only body octets are covered. */
void jn_iter_sub(const jn_iter_t *it, size_t length, jn_iter_t *out);

#endif /* JUNCTION_ITERATOR_H */
