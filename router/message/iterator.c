/*
 * iterator.c — the field iterator (junction/iterator.h): a cursor over the
 * octets of a field in a buffer chain, read through a view, never copied.
 *
 * State. A view is an optional prefix (the hash view's class letter and
 * phase, in jn_iter_t.prefix) followed by a *body*: a contiguous range of the
 * field's octets (or, for the edge router's "L_edge" key, the static string
 * "_edge"). The body is described by the field (start_*) and two counts,
 * body_skip and body_cut, worked out once by init/set_view; reset and the
 * walk never classify again.
 *
 * Fast-path invariant: cursor < limit means *cursor is a body octet that is
 * published and inside the current buffer; `remaining` counts the body
 * octets after limit. While prefix octets are being produced, limit ==
 * cursor (the body's start), so every octet goes through
 * jn_iter_octet_slow(). So the view is at its end exactly when cursor ==
 * limit, remaining == 0 and the prefix is used up (jn_iter_end, inline).
 *
 * Publication: when a walk reaches the end of a buffer it moves to `next`.
 * init checked that the chain held the whole field, loading `next` before
 * `size` (junction/buffer.h), so every buffer the walk leaves has a final size
 * and a successor; the walk never reads past what init saw published.
 *
 * Views (docs/protocol.md, "The mesh": "Address keys"):
 *   ADDRESS strips "scheme:/" (a scheme is a letter then letters, digits,
 *   '+', '-', '.'), "scheme://host/", "/" or "//host/" from the start, when
 *   at least one octet follows, then drops one trailing '.' or '/'. A host
 *   with no '/' after it is not stripped (the address reads as it is).
 *   ADDRESS_HASH classifies the address body by its leading segments (each
 *   must end with '/': "_topo/0/B" does not name router B's local space, it
 *   is the router address "RB"), see classify().
 */
#include <junction/hash.h>
#include <junction/iterator.h>

#include <string.h>

#define ID_MAX 127 /* octets of a configured area or router id */

/* The router's identity for the hash view. Written by jn_iter_configure at
 * start-up before other threads run; read-only afterwards. */
static char my_area[ID_MAX + 1] = "0";
static char my_id[ID_MAX + 1];
static size_t my_area_len = 1, my_id_len; /* their lengths, kept with them */
static bool my_edge;

/* Body of the "L_edge" key; marked by body_skip == SKIP_EDGE_BODY. */
static const uint8_t edge_body[] = "_edge";
#define EDGE_BODY_LEN  5
#define SKIP_EDGE_BODY UINT32_MAX

/* Where a zero-length plain view points when given no data. */
static const uint8_t no_octets[1];

int jn_iter_configure(const char *area, const char *router_id, bool edge)
{
    if (area == NULL)
        area = "0";
    if (router_id == NULL)
        router_id = "";
    size_t area_len = strlen(area), id_len = strlen(router_id);
    if (area_len > ID_MAX || id_len > ID_MAX)
        return JN_EINVAL;
    memcpy(my_area, area, area_len + 1);
    memcpy(my_id, router_id, id_len + 1);
    my_area_len = area_len;
    my_id_len = id_len;
    my_edge = edge;
    return 0;
}

/* ---- walking ---------------------------------------------------------- */

/* Make the next run of body octets readable by the fast path. Precondition:
 * cursor == limit. Afterwards cursor < limit, or the body is used up
 * (cursor == limit, remaining == 0). */
static void refill(jn_iter_t *it)
{
    while (it->remaining > 0) {
        if (it->buffer == NULL) {
            it->limit = it->cursor + it->remaining;
            it->remaining = 0;
            return;
        }
        const jn_buffer_t *b = it->buffer;
        const uint8_t *end = b->data + jn_buffer_size(b);
        if (it->cursor < end) {
            size_t n = (size_t)(end - it->cursor);
            if (n > it->remaining)
                n = it->remaining;
            it->limit = it->cursor + n;
            it->remaining -= n;
            return;
        }
        const jn_buffer_t *next = jn_buffer_next(b);
        JN_CHECK(next != NULL); /* init saw these octets published */
        it->buffer = next;
        it->cursor = it->limit = next->data;
    }
}

int jn_iter_octet_slow(jn_iter_t *it)
{
    /* The inline fast case first (JN_ITER_NO_INLINE sends every octet
     * here): cursor < limit means the prefix is done (limit == cursor
     * while it is read). */
    if (JN_LIKELY(it->cursor < it->limit))
        return *it->cursor++;
    if (it->prefix_pos < it->prefix_len) {
        int octet = it->prefix[it->prefix_pos++];
        if (it->prefix_pos == it->prefix_len)
            refill(it);
        return octet;
    }
    if (it->cursor >= it->limit) {
        refill(it);
        if (it->cursor >= it->limit)
            return JN_ITER_END;
    }
    return *it->cursor++;
}

/* The next contiguous run of view octets at the current position, not
 * consumed: sets *p and returns its length (0 at the end of the view). */
static size_t run_peek(jn_iter_t *it, const uint8_t **p)
{
    if (it->prefix_pos < it->prefix_len) {
        *p = it->prefix + it->prefix_pos;
        return (size_t)(it->prefix_len - it->prefix_pos);
    }
    if (it->cursor >= it->limit)
        refill(it);
    *p = it->cursor;
    return (size_t)(it->limit - it->cursor);
}

/* Consume n octets of the run run_peek just returned (n <= its length). */
static void run_consume(jn_iter_t *it, size_t n)
{
    if (it->prefix_pos < it->prefix_len) {
        it->prefix_pos = (uint8_t)(it->prefix_pos + n);
        if (it->prefix_pos == it->prefix_len)
            refill(it);
    } else {
        it->cursor += n;
    }
}

size_t jn_iter_advance(jn_iter_t *it, size_t n)
{
    /* Fast path: the octets skipped lie in the current run (what the loop
     * below would do in its first round, without the calls). */
    if (it->prefix_pos >= it->prefix_len && n <= (size_t)(it->limit - it->cursor)) {
        it->cursor += n;
        return n;
    }
    size_t done = 0;
    while (done < n) {
        const uint8_t *p;
        size_t run = run_peek(it, &p);
        if (run == 0)
            break;
        if (run > n - done)
            run = n - done;
        run_consume(it, run);
        done += run;
    }
    return done;
}

/* Consume len octets of it that must equal s; false at the first mismatch
 * or when fewer are left (it is then somewhere in between). */
static bool match(jn_iter_t *it, const uint8_t *s, size_t len)
{
    while (len > 0) {
        const uint8_t *p;
        size_t run = run_peek(it, &p);
        if (run == 0)
            return false;
        if (run > len)
            run = len;
        if (memcmp(p, s, run) != 0)
            return false;
        run_consume(it, run);
        s += run;
        len -= run;
    }
    return true;
}

bool jn_iter_equal(const jn_iter_t *it, const char *s)
{
    return jn_iter_equal_bytes(it, s, strlen(s));
}

bool jn_iter_equal_bytes(const jn_iter_t *it, const void *s, size_t len)
{
    if (jn_iter_length(it) != len)
        return false;
    const uint8_t *p = s;
    /* After the prefix left, the octets lie from cursor on in one run when
     * nothing is left past limit, or when it is all in limit's buffer
     * (refill goes on from limit there; plain bytes are one run). */
    const jn_buffer_t *b = it->buffer;
    if (it->remaining == 0 || !b ||
        (size_t)(b->data + jn_buffer_size(b) - it->limit) >= it->remaining) {
        size_t pre = it->prefix_pos < it->prefix_len ? (size_t)(it->prefix_len - it->prefix_pos) : 0;
        return memcmp(p, it->prefix + it->prefix_pos, pre) == 0 &&
               memcmp(p + pre, it->cursor, len - pre) == 0;
    }
    jn_iter_t t = *it;
    return match(&t, p, len);
}

bool jn_iter_equal_iter(const jn_iter_t *a, const jn_iter_t *b)
{
    if (jn_iter_length(a) != jn_iter_length(b))
        return false;
    jn_iter_t ta = *a, tb = *b;
    for (;;) {
        const uint8_t *pa, *pb;
        size_t na = run_peek(&ta, &pa);
        size_t nb = run_peek(&tb, &pb);
        size_t n = na < nb ? na : nb;
        if (n == 0)
            return na == nb;
        if (memcmp(pa, pb, n) != 0)
            return false;
        run_consume(&ta, n);
        run_consume(&tb, n);
    }
}

bool jn_iter_prefix(jn_iter_t *it, const char *s)
{
    size_t len = strlen(s);
    if (jn_iter_length(it) < len)
        return false;
    jn_iter_t t = *it;
    if (!match(&t, (const uint8_t *)s, len))
        return false;
    *it = t;
    return true;
}

size_t jn_iter_copy(jn_iter_t *it, void *dst, size_t cap)
{
    uint8_t *out = dst;
    size_t done = 0;
    /* Fast path: no prefix octets pending, and the octets asked for lie in
     * the current run or that run is all the view has left (a small
     * message's payload copied on receive): one memcpy, no loop. */
    if (it->prefix_pos >= it->prefix_len) {
        size_t run = (size_t)(it->limit - it->cursor);
        if (run >= cap || it->remaining == 0) {
            done = run < cap ? run : cap;
            if (done > 0) { /* an empty view's cursor may be NULL */
                memcpy(out, it->cursor, done);
                it->cursor += done;
            }
            return done;
        }
    }
    while (done < cap) {
        const uint8_t *p;
        size_t run = run_peek(it, &p);
        if (run == 0)
            break;
        if (run > cap - done)
            run = cap - done;
        memcpy(out + done, p, run);
        run_consume(it, run);
        done += run;
    }
    return done;
}

size_t jn_iter_copy_string(const jn_iter_t *it, char *dst, size_t cap)
{
    size_t full = jn_iter_length(it);
    if (cap == 0)
        return full;
    jn_iter_t t = *it;
    size_t n = jn_iter_copy(&t, dst, cap - 1);
    dst[n] = '\0';
    return full;
}

uint32_t jn_iter_hash(const jn_iter_t *it)
{
    uint32_t h = JN_HASH_SEED;
    /* Fast path: the body left is one run — [cursor, limit) once the
     * prefix is read, or, while prefix octets are pending (limit ==
     * cursor), the next `remaining` octets of the current buffer. Then the
     * prefix and the run are hashed straight from memory. */
    const uint8_t *q = it->cursor, *end = it->limit;
    bool one_run = it->remaining == 0;
    if (!one_run && it->prefix_pos < it->prefix_len) {
        const jn_buffer_t *b = it->buffer;
        if (b == NULL || it->remaining <= (size_t)(b->data + jn_buffer_size(b) - q)) {
            end = q + it->remaining;
            one_run = true;
        }
    }
    if (one_run) {
        for (unsigned i = it->prefix_pos; i < it->prefix_len; i++)
            h = jn_hash_octet(h, it->prefix[i]);
        for (; q < end; q++)
            h = jn_hash_octet(h, *q);
        return h;
    }
    jn_iter_t t = *it;
    for (;;) {
        const uint8_t *p;
        size_t run = run_peek(&t, &p);
        if (run == 0)
            return h;
        for (size_t i = 0; i < run; i++)
            h = jn_hash_octet(h, p[i]);
        run_consume(&t, run);
    }
}

/* ---- positioning -------------------------------------------------------- */

/* Whether the field (as given to init or sub) lies in one run of memory:
 * plain bytes, or inside its first buffer's published octets. */
static inline bool field_contiguous(const jn_iter_t *it)
{
    const jn_buffer_t *b = it->start_buffer;
    return b == NULL ||
           it->start_length <= (size_t)(b->data + jn_buffer_size(b) - it->start_cursor);
}

/* Put it at the start of its body: field start moved on by body_skip, with
 * the prefix not yet read. */
void jn_iter_reset(jn_iter_t *it)
{
    it->prefix_pos = 0;
    if (it->body_skip == SKIP_EDGE_BODY) {
        it->buffer = NULL;
        it->cursor = it->limit = edge_body;
        it->remaining = EDGE_BODY_LEN;
    } else if (field_contiguous(it)) {
        /* Fast path: the field is one run, so the body is too. */
        it->buffer = it->start_buffer;
        it->cursor = it->limit = it->start_cursor + it->body_skip;
        it->remaining = it->start_length - it->body_cut - it->body_skip;
        if (it->prefix_len == 0) {
            it->limit = it->cursor + it->remaining;
            it->remaining = 0;
        }
        return;
    } else {
        size_t skip = it->body_skip;
        it->buffer = it->start_buffer;
        it->cursor = it->limit = it->start_cursor;
        it->remaining = it->start_length - it->body_cut; /* skip + body */
        while (skip > 0) {
            refill(it); /* skip <= remaining, so a run follows */
            size_t n = (size_t)(it->limit - it->cursor);
            if (n > skip)
                n = skip;
            it->cursor += n;
            skip -= n;
        }
        /* fold the run's unread octets back: cursor == limit at the body */
        it->remaining += (size_t)(it->limit - it->cursor);
        it->limit = it->cursor;
    }
    if (it->prefix_len == 0)
        refill(it);
}

/* A raw iterator over length octets from (buffer, cursor), already known to
 * be published. */
static void raw_at(jn_iter_t *it, const jn_buffer_t *buffer, const uint8_t *cursor, size_t length)
{
    it->buffer = it->start_buffer = buffer;
    it->cursor = it->limit = it->start_cursor = cursor;
    it->remaining = it->start_length = length;
    it->prefix_len = it->prefix_pos = 0;
    it->view = JN_VIEW_RAW;
    it->phase = '0';
    it->body_skip = it->body_cut = 0;
    refill(it);
}

void jn_iter_sub(const jn_iter_t *it, size_t length, jn_iter_t *out)
{
    /* Fast path: the sub view lies in the current run, so it is that run's
     * first length octets (the state raw_at() and refill() would reach). */
    if (length <= (size_t)(it->limit - it->cursor)) {
        jn_iter_raw_run(out, it->buffer, it->cursor, length);
        return;
    }
    /* While the prefix is being read, cursor == limit at the body's start. */
    size_t body_left = (size_t)(it->limit - it->cursor) + it->remaining;
    if (length > body_left)
        length = body_left;
    raw_at(out, it->buffer, it->cursor, length);
}

/* ---- views -------------------------------------------------------------- */

/* ASCII letter (c may be JN_ITER_END). Branch-free: these run once per
 * octet of an address's scheme, which for a mobile address without one is
 * the whole address. */
static inline bool is_alpha(int c)
{
    return (unsigned)((c | 0x20) - 'a') < 26u;
}

static inline bool is_scheme_char(int c)
{
    return is_alpha(c) | ((unsigned)(c - '0') < 10u) | (c == '+') | (c == '-') | (c == '.');
}

/* s has consumed pos octets, the last of them the first '/' of "//".
 * Returns the offset just past the '/' that ends the host, or 0 if none. */
static size_t skip_host(jn_iter_t *s, size_t pos)
{
    int c;
    while ((c = jn_iter_octet(s)) != JN_ITER_END) {
        pos++;
        if (c == '/')
            return pos;
    }
    return 0;
}

/* Octets of scheme and host at the start of the raw iterator f (a copy is
 * walked): 0 when there are none. */
static size_t scheme_skip(const jn_iter_t *f)
{
    jn_iter_t s = *f;
    size_t pos = 1;
    int c = jn_iter_octet(&s);
    if (c != '/') {
        if (!is_alpha(c))
            return 0;
        do {
            c = jn_iter_octet(&s);
            pos++;
        } while (is_scheme_char(c));
        if (c != ':' || jn_iter_octet(&s) != '/')
            return 0;
        pos++; /* now just past ":/" */
    }
    c = jn_iter_octet(&s);
    if (c == '/')
        return skip_host(&s, pos + 1);
    return c == JN_ITER_END ? 0 : pos;
}

/* If the raw iterator a starts with segment s followed by '/', move past
 * both and return true; else leave a unchanged. */
static bool take_segment(jn_iter_t *a, const char *s)
{
    jn_iter_t t = *a;
    if (!jn_iter_prefix(&t, s) || jn_iter_octet(&t) != '/')
        return false;
    *a = t;
    return true;
}

/* Octets of a before the next '/' (or its end). */
static size_t segment_length(const jn_iter_t *a)
{
    jn_iter_t t = *a;
    size_t n = 0;
    int c;
    while ((c = jn_iter_octet(&t)) != JN_ITER_END && c != '/')
        n++;
    return n;
}

/* The hash key's class and where its body lies in the address body. */
typedef struct key_shape {
    uint8_t cls;    /* class letter */
    bool edge_body; /* the body is "_edge" (the edge's uplink address) */
    size_t skip;    /* octets of the address body before the key body */
    size_t length;  /* octets of the key body */
} key_shape_t;

static void shape(key_shape_t *k, uint8_t cls, const jn_iter_t *a, size_t total, size_t length)
{
    k->cls = cls;
    k->edge_body = false;
    k->skip = total - jn_iter_length(a);
    k->length = length;
}

static void shape_edge(key_shape_t *k)
{
    k->cls = JN_ADDR_CLASS_LOCAL;
    k->edge_body = true;
    k->skip = k->length = 0;
}

/* "_topo/..." after the "_topo/" segment: see classify(). */
static void classify_topo(key_shape_t *k, jn_iter_t *a, size_t total)
{
    jn_iter_t area = *a;
    if (!take_segment(a, my_area) && !take_segment(a, "all")) {
        if (my_edge)
            shape_edge(k);
        else
            shape(k, JN_ADDR_CLASS_AREA, &area, total, segment_length(&area));
        return;
    }
    if (take_segment(a, "all"))
        shape(k, JN_ADDR_CLASS_TOPOLOGICAL, a, total, jn_iter_length(a));
    else if (take_segment(a, my_id))
        shape(k, JN_ADDR_CLASS_LOCAL, a, total, jn_iter_length(a));
    else if (my_edge)
        shape_edge(k);
    else
        shape(k, JN_ADDR_CLASS_ROUTER, a, total, segment_length(a));
}

/* Classify the address body addr (a raw iterator) per docs/protocol.md ("Address keys"):
 *   _local/<n>                          L<n>
 *   _topo/<area|all>/all/<n>            T<n>
 *   _topo/<area|all>/<me>/<n>           L<n>
 *   _topo/<area|all>/<other>/...        R<other>   (edge: L_edge)
 *   _topo/<other-area>/...              A<other-area> (edge: L_edge)
 *   _edge/<me>/<n>                      L<n>
 *   _edge/<other>/...                   H<other>   (edge: L_edge)
 *   anything else                       M<phase><address>
 */
static void classify(key_shape_t *k, const jn_iter_t *addr)
{
    jn_iter_t a = *addr;
    size_t total = jn_iter_length(&a);
    if (take_segment(&a, "_local")) {
        shape(k, JN_ADDR_CLASS_LOCAL, &a, total, jn_iter_length(&a));
    } else if (take_segment(&a, "_topo")) {
        classify_topo(k, &a, total);
    } else if (take_segment(&a, "_edge")) {
        if (take_segment(&a, my_id))
            shape(k, JN_ADDR_CLASS_LOCAL, &a, total, jn_iter_length(&a));
        else if (my_edge)
            shape_edge(k);
        else
            shape(k, JN_ADDR_CLASS_EDGE_SUMMARY, &a, total, segment_length(&a));
    } else {
        shape(k, JN_ADDR_CLASS_MOBILE, &a, total, total);
    }
}

/* ---- views of a field in plain memory ---------------------------------
 * The same rules as scheme_skip() and classify() above, for the common case
 * of a field that lies in one buffer (or plain bytes): read as memory, with
 * the known lengths of the configured area and id, instead of through
 * iterator copies. Both must give the same answers; the unit tests read
 * every view both ways (contiguous and split over buffers). */

/* is_scheme_char() for an octet; letters, the common case, first. */
static inline bool scheme_octet(uint8_t c)
{
    return (unsigned)((c | 0x20) - 'a') < 26u || (unsigned)(c - '0') < 10u || c == '+' ||
           c == '-' || c == '.';
}

/* scheme_skip() over plain memory: "/" or "scheme:/", then "/host/" if a
 * second '/' follows; 0 when nothing follows them or the host has no '/'
 * after it. */
static size_t scheme_skip_bytes(const uint8_t *s, size_t len)
{
    size_t i = 1;
    if (len == 0)
        return 0;
    if (s[0] != '/') {
        /* A scheme ends at the first ':' (which is not a scheme octet):
         * find it first, so an address without one, the common mobile
         * address, is not walked octet by octet. */
        const uint8_t *colon = is_alpha(s[0]) ? memchr(s, ':', len) : NULL;
        if (!colon)
            return 0;
        size_t c = (size_t)(colon - s);
        while (i < c && scheme_octet(s[i]))
            i++;
        if (i < c || len - c < 2 || s[c + 1] != '/')
            return 0;
        i = c + 2;
    }
    if (i >= len)
        return 0;
    if (s[i] != '/')
        return i;
    const uint8_t *slash = memchr(s + i + 1, '/', len - i - 1); /* end of the host */
    return slash ? (size_t)(slash - s) + 1 : 0;
}

/* take_segment() over the address a (n octets) at offset *o. */
static inline bool take_segment_bytes(const uint8_t *a, size_t n, size_t *o, const char *seg,
                                      size_t seg_len)
{
    if (n - *o < seg_len + 1 || memcmp(a + *o, seg, seg_len) != 0 || a[*o + seg_len] != '/')
        return false;
    *o += seg_len + 1;
    return true;
}

/* segment_length() at offset o. */
static size_t segment_length_bytes(const uint8_t *a, size_t n, size_t o)
{
    const uint8_t *slash = o < n ? memchr(a + o, '/', n - o) : NULL;
    return slash ? (size_t)(slash - (a + o)) : n - o;
}

static void shape_bytes(key_shape_t *k, uint8_t cls, size_t skip, size_t length)
{
    k->cls = cls;
    k->edge_body = false;
    k->skip = skip;
    k->length = length;
}

/* classify() (and classify_topo()) over the address body a, n octets. */
static void classify_bytes(key_shape_t *k, const uint8_t *a, size_t n)
{
    size_t o = 0;
    /* Every special address starts with '_': the mobile case costs one
     * compare. */
    if (n == 0 || a[0] != '_') {
        shape_bytes(k, JN_ADDR_CLASS_MOBILE, 0, n);
    } else if (take_segment_bytes(a, n, &o, "_local", 6)) {
        shape_bytes(k, JN_ADDR_CLASS_LOCAL, o, n - o);
    } else if (take_segment_bytes(a, n, &o, "_topo", 5)) {
        size_t area = o;
        if (!take_segment_bytes(a, n, &o, my_area, my_area_len) &&
            !take_segment_bytes(a, n, &o, "all", 3)) {
            if (my_edge)
                shape_edge(k);
            else
                shape_bytes(k, JN_ADDR_CLASS_AREA, area, segment_length_bytes(a, n, area));
        } else if (take_segment_bytes(a, n, &o, "all", 3)) {
            shape_bytes(k, JN_ADDR_CLASS_TOPOLOGICAL, o, n - o);
        } else if (take_segment_bytes(a, n, &o, my_id, my_id_len)) {
            shape_bytes(k, JN_ADDR_CLASS_LOCAL, o, n - o);
        } else if (my_edge) {
            shape_edge(k);
        } else {
            shape_bytes(k, JN_ADDR_CLASS_ROUTER, o, segment_length_bytes(a, n, o));
        }
    } else if (take_segment_bytes(a, n, &o, "_edge", 5)) {
        if (take_segment_bytes(a, n, &o, my_id, my_id_len))
            shape_bytes(k, JN_ADDR_CLASS_LOCAL, o, n - o);
        else if (my_edge)
            shape_edge(k);
        else
            shape_bytes(k, JN_ADDR_CLASS_EDGE_SUMMARY, o, segment_length_bytes(a, n, o));
    } else {
        shape_bytes(k, JN_ADDR_CLASS_MOBILE, 0, n);
    }
}

#ifdef JN_DEBUG
/* Debug builds check the plain-memory readings of a field against the
 * iterator ones. */
static void check_bytes_view(const uint8_t *s, size_t len, size_t skip, size_t cut,
                             const key_shape_t *k)
{
    jn_iter_t f, addr;
    jn_iter_init_bytes(&f, s, len, JN_VIEW_RAW);
    JN_CHECK(scheme_skip(&f) == skip);
    if (!k)
        return;
    jn_iter_advance(&f, skip);
    jn_iter_sub(&f, len - skip - cut, &addr);
    key_shape_t k2;
    classify(&k2, &addr);
    JN_CHECK(k2.cls == k->cls && k2.edge_body == k->edge_body && k2.skip == k->skip &&
             k2.length == k->length);
}
#endif

/* The hash view's prefix (class, and phase for a mobile address) and body
 * of it from the address's shape k; len is the field's length, skip the
 * scheme and host skipped before the address. */
static inline void apply_key_shape(jn_iter_t *it, const key_shape_t *k, size_t len, size_t skip)
{
    it->prefix[0] = k->cls;
    it->prefix_len = 1;
    if (k->cls == JN_ADDR_CLASS_MOBILE) {
        it->prefix[1] = it->phase;
        it->prefix_len = 2;
    }
    if (k->edge_body) {
        it->body_skip = SKIP_EDGE_BODY;
    } else {
        it->body_skip = (uint32_t)(skip + k->skip);
        it->body_cut = (uint32_t)(len - skip - k->skip - k->length);
    }
}

/* Work out prefix, body_skip and body_cut of it's view from its field; when
 * address_known, the address view's skip and cut are given. */
static void apply_view_known(jn_iter_t *it, bool address_known, size_t address_skip,
                             size_t address_cut)
{
    it->prefix_len = 0;
    it->body_skip = it->body_cut = 0;
    /* Address views of fields past 4 GiB are read raw: no address is that
     * long, and the counts are 32 bits. */
    if (it->view == JN_VIEW_RAW || it->start_length >= UINT32_MAX)
        return;

    size_t len = it->start_length;
    size_t skip, cut = 0;
    key_shape_t k;
    if (address_known) {
        /* The address view was worked out for this field before: its
         * scheme and host skip and trailing cut are the same here. */
        skip = address_skip;
        cut = address_cut;
        if (it->view == JN_VIEW_ADDRESS) {
            it->body_skip = (uint32_t)skip;
            it->body_cut = (uint32_t)cut;
            return;
        }
        if (field_contiguous(it)) {
            classify_bytes(&k, it->start_cursor + skip, len - skip - cut);
#ifdef JN_DEBUG
            check_bytes_view(it->start_cursor, len, skip, cut, &k);
#endif
        } else {
            jn_iter_t f, addr;
            raw_at(&f, it->start_buffer, it->start_cursor, len);
            jn_iter_advance(&f, skip);
            jn_iter_sub(&f, len - skip - cut, &addr);
            classify(&k, &addr);
        }
    } else if (field_contiguous(it)) {
        /* Fast path: the field is plain memory. */
        const uint8_t *s = it->start_cursor;
        skip = scheme_skip_bytes(s, len);
        if (len > skip)
            cut = (s[len - 1] == '.' || s[len - 1] == '/') ? 1 : 0;
        if (it->view == JN_VIEW_ADDRESS) {
#ifdef JN_DEBUG
            check_bytes_view(s, len, skip, cut, NULL);
#endif
            it->body_skip = (uint32_t)skip;
            it->body_cut = (uint32_t)cut;
            return;
        }
        classify_bytes(&k, s + skip, len - skip - cut);
#ifdef JN_DEBUG
        check_bytes_view(s, len, skip, cut, &k);
#endif
    } else {
        jn_iter_t f;
        raw_at(&f, it->start_buffer, it->start_cursor, len);
        skip = scheme_skip(&f);
        if (len > skip) {
            jn_iter_t last = f;
            jn_iter_advance(&last, len - 1);
            int c = jn_iter_octet(&last);
            cut = (c == '.' || c == '/') ? 1 : 0;
        }
        if (it->view == JN_VIEW_ADDRESS) {
            it->body_skip = (uint32_t)skip;
            it->body_cut = (uint32_t)cut;
            return;
        }
        jn_iter_t addr;
        jn_iter_advance(&f, skip);
        jn_iter_sub(&f, len - skip - cut, &addr);
        classify(&k, &addr);
    }
    apply_key_shape(it, &k, len, skip);
}

/* Work out prefix, body_skip and body_cut of it's view from its field. */
static void apply_view(jn_iter_t *it)
{
    apply_view_known(it, false, 0, 0);
}

/* Common tail of the init functions: the field is set. */
static void init_view(jn_iter_t *it, jn_iter_view_t view)
{
    it->view = (uint8_t)view;
    it->phase = '0';
    apply_view(it);
    jn_iter_reset(it);
}

/* Find the octet offset octets into the chain at *bufp and check that length
 * octets from there are published. Loads `next` before `size` (buffer.h). */
static int locate(const jn_buffer_t **bufp, size_t offset, size_t length, const uint8_t **startp)
{
    const jn_buffer_t *b = *bufp;
    const jn_buffer_t *next = jn_buffer_next(b);
    size_t size = jn_buffer_size(b);
    while (offset >= size && next != NULL) {
        offset -= size;
        b = next;
        next = jn_buffer_next(b);
        size = jn_buffer_size(b);
    }
    if (offset > size)
        return JN_EINVAL;
    *bufp = b;
    *startp = b->data + offset;
    size_t avail = size - offset;
    while (avail < length && next != NULL) {
        const jn_buffer_t *c = next;
        next = jn_buffer_next(c);
        avail += jn_buffer_size(c);
    }
    return avail >= length ? 0 : JN_EINVAL;
}

int jn_iter_init(jn_iter_t *it, const jn_buffer_t *buffer, size_t offset, size_t length,
                 jn_iter_view_t view)
{
    if (buffer == NULL) {
        if (offset != 0 || length != 0)
            return JN_EINVAL;
        jn_iter_init_bytes(it, NULL, 0, view);
        return 0;
    }
    const uint8_t *start;
    int rc = locate(&buffer, offset, length, &start);
    if (rc != 0)
        return rc;
    it->start_buffer = buffer;
    it->start_cursor = start;
    it->start_length = length;
    init_view(it, view);
    return 0;
}

void jn_iter_init_bytes(jn_iter_t *it, const void *data, size_t len, jn_iter_view_t view)
{
    JN_CHECK(data != NULL || len == 0);
    it->start_buffer = NULL;
    it->start_cursor = data != NULL ? (const uint8_t *)data : no_octets;
    it->start_length = len;
    init_view(it, view);
}

void jn_iter_init_string(jn_iter_t *it, const char *str, jn_iter_view_t view)
{
    jn_iter_init_bytes(it, str, strlen(str), view);
}

void jn_iter_set_view(jn_iter_t *it, jn_iter_view_t view)
{
    /* From the address view (e.g. jn_message_to's) the scheme and host
     * skip and the trailing cut are known: the address is not read again
     * for them, only classified for the hash view. */
    bool address_known = it->view == JN_VIEW_ADDRESS;
    size_t skip = it->body_skip, cut = it->body_cut;
    it->view = (uint8_t)view;
    apply_view_known(it, address_known, skip, cut);
    jn_iter_reset(it);
}

void jn_iter_set_phase(jn_iter_t *it, char phase)
{
    it->phase = (uint8_t)phase;
    if (it->prefix_len == 2 && it->prefix[0] == JN_ADDR_CLASS_MOBILE)
        it->prefix[1] = (uint8_t)phase;
    jn_iter_reset(it);
}
