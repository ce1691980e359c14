/*
 * test_message_taken.c — a message whose chain mixes buffers it wrote
 * itself with whole buffers filled elsewhere and linked as they are, the
 * shape the own engine's receive gives a large transfer (docs/engine.md,
 * "input by reference"; router/io/io_own_rx.c): per frame, the octets
 * before the input's whole buffers are copied (topping up the message's
 * tail), the whole buffers linked (jn_message_append_buffers), the octets
 * after them copied into a fresh buffer, which the next frame's first
 * octets top up. So short buffers sit mid-chain, before full ones. Proven
 * for such chains, cut at several shapes: the parse locates every section
 * and `to`; outgoing copies (replaced annotations, and verbatim) produce
 * the octets exactly, each segment inside its buffer's published octets;
 * the iterator's slow path (octets, copy, advance, sub, hash, equality)
 * reads every view right; trimming behind a copy while the message
 * arrives releases what the copy passed and nothing it still needs. Ends
 * with a pool leak check.
 */
#include "test_message_build.h"

#include <junction/annotations.h>
#include <junction/hash.h>

#define CAP JN_BUFFER_CAPACITY

/* How one frame's payload reaches the message: head octets copied, whole
 * buffers linked, tail octets copied. */
typedef struct shape {
    size_t head, whole, tail;
} shape_t;

static const shape_t shapes[] = {
    {1, 1, 1}, {7, 2, 300}, {100, 1, CAP - 1}, {CAP - 1, 3, 7}, {250, 4, CAP},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

/* One frame of s from data at *at (n octets in all) into m; returns the
 * whole buffers linked. */
static size_t feed_frame(jn_message_t *m, const uint8_t *data, size_t n, size_t *at,
                         const shape_t *s)
{
    size_t c = s->head < n - *at ? s->head : n - *at;
    assert_int_equal(jn_message_append(m, data + *at, c), 0);
    *at += c;
    jn_buffer_list_t whole;
    jn_buffer_list_init(&whole);
    size_t k = 0;
    for (; k < s->whole && n - *at >= CAP; k++) {
        jn_buffer_t *b = jn_buffer_new();
        assert_non_null(b);
        memcpy(b->data, data + *at, CAP);
        jn_buffer_publish(b, CAP);
        jn_buffer_list_append(&whole, b);
        *at += CAP;
    }
    assert_int_equal(jn_message_append_buffers(m, &whole), 0);
    c = s->tail < n - *at ? s->tail : n - *at;
    assert_int_equal(jn_message_append(m, data + *at, c), 0);
    *at += c;
    return k;
}

/* A complete message of data fed frame by frame in shape s. */
static jn_message_t *message_taken(const uint8_t *data, size_t n, const shape_t *s)
{
    jn_message_t *m = jn_message_new();
    assert_non_null(m);
    jn_message_set_annotation_policy(m, true);
    size_t at = 0, linked = 0;
    while (at < n)
        linked += feed_frame(m, data, n, &at, s);
    assert_true(linked > 0); /* the shape holds whole buffers */
    assert_int_equal(jn_message_length(m), n);
    jn_message_set_complete(m);
    return m;
}

/* The sections of mask (header to application properties, and a footer),
 * with a data section of 3,000 patterned octets as the body. */
static void build_big(built_t *m, unsigned mask)
{
    build(m, mask & (S_HEADER | S_DA | S_MA | S_PROPS | S_AP), 0);
    uint8_t body[3000];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (uint8_t)(i * 31 + (i >> 8));
    jn_encoder_t e;
    jn_encoder_init(&e);
    size_t at = m->b.len;
    jn_enc_descriptor_ulong(&e, JN_SECTION_DATA);
    jn_enc_binary(&e, body, sizeof body);
    bytes_take(&m->b, &e);
    mark(m, JN_SEC_BODY, at);
    if (mask & S_FOOTER)
        build_footer(m, &e);
    jn_encoder_free(&e);
}

/* Masks: every combination of the sections before the body, with and
 * without a footer. */
static unsigned mask_of(unsigned i)
{
    return (i & 31) | ((i & 32) ? S_FOOTER : 0) | S_BODY;
}

/* check(m, msg) for a message of every mask (mask_of), fed in every shape. */
static void each_message(void (*check)(const built_t *m, jn_message_t *msg))
{
    for (unsigned i = 0; i < 64; i++) {
        built_t m;
        build_big(&m, mask_of(i));
        for (size_t s = 0; s < N_SHAPES; s++) {
            jn_message_t *msg = message_taken(m.b.data, m.b.len, &shapes[s]);
            check(&m, msg);
            jn_message_unref(msg);
        }
    }
}

static void check_parse(const built_t *m, jn_message_t *msg)
{
    assert_int_equal(jn_message_parse(msg, JN_DEPTH_ALL), 0);
    for (int sec = 0; sec < JN_SEC_COUNT; sec++) {
        jn_iter_t v;
        int rc = jn_message_section(msg, (jn_section_t)sec, &v);
        if (!(m->mask & (1u << sec))) {
            assert_int_equal(rc, JN_ENOENT);
            continue;
        }
        assert_int_equal(rc, 0);
        assert_view_equals(&v, m->b.data + m->start[sec], m->end[sec] - m->start[sec]);
    }
    jn_iter_t to;
    if (m->mask & S_PROPS) {
        assert_int_equal(jn_message_to(msg, &to), 0);
        assert_true(jn_iter_equal(&to, "q1"));
    }
}

static void test_parse_locates_sections_across_taken_buffers(void **state)
{
    (void)state;
    each_message(check_parse);
}

/* Every segment of o lies in its buffer's published octets; appended to
 * out. Returns the last result. */
static int drain_buffers(jn_message_out_t *o, bytes_t *out)
{
    const jn_buffer_t *b;
    size_t off, len;
    int rc;
    while ((rc = jn_message_out_next_buffer(o, &b, &off, &len)) == 1) {
        assert_true(len > 0);
        assert_true(off + len <= jn_buffer_size(b));
        bytes_add(out, b->data + off, len);
    }
    return rc;
}

static void check_copies(const built_t *m, jn_message_t *msg)
{
    assert_int_equal(jn_message_parse(msg, JN_DEPTH_MESSAGE_ANNOTATIONS), 0);
    jn_ra_hop_t hop = {.to_router = true, .node_id = "0/B"};
    jn_buffer_list_t ma;
    jn_buffer_list_init(&ma);
    assert_int_equal(jn_ra_compose(jn_message_annotations(msg), &hop, &ma), 0);
    static bytes_t ann, want, got;
    ann.len = jn_buffer_list_length(&ma);
    got.len = 0;
    jn_buffer_list_copy_out(&ma, 0, ann.data, sizeof ann.data);
    expected_copy(m, &ann, &want);
    jn_message_out_t o;
    assert_int_equal(jn_message_out_init(&o, msg, &ma), 0);
    assert_int_equal(drain_buffers(&o, &got), 0);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.data, want.data, want.len);
    jn_message_out_fini(&o);
    got.len = 0;
    assert_int_equal(jn_message_out_init_verbatim(&o, msg), 0);
    assert_int_equal(drain_out(&o, &got), 0);
    assert_int_equal(got.len, m->b.len);
    assert_memory_equal(got.data, m->b.data, m->b.len);
    jn_message_out_fini(&o);
}

static void test_copies_read_taken_buffers_exactly(void **state)
{
    (void)state;
    each_message(check_copies);
}

/* One view of len octets at off of msg's chain, read every way. */
static void check_view(const jn_message_t *msg, const uint8_t *data, size_t off, size_t len)
{
    jn_iter_t it;
    assert_int_equal(jn_iter_init(&it, jn_message_buffers(msg), off, len, JN_VIEW_RAW), 0);
    assert_int_equal(jn_iter_length(&it), len);
    assert_int_equal(jn_iter_hash(&it), jn_hash_bytes(data + off, len));
    jn_iter_t plain;
    jn_iter_init_bytes(&plain, data + off, len, JN_VIEW_RAW);
    assert_true(jn_iter_equal_iter(&it, &plain));
    jn_iter_t walk = it;
    for (size_t k = 0; k < len; k++)
        assert_int_equal(jn_iter_octet(&walk), data[off + k]);
    assert_int_equal(jn_iter_octet(&walk), JN_ITER_END);
    assert_true(jn_iter_end(&walk));
    uint8_t got[4096];
    size_t n = 0;
    walk = it;
    while (!jn_iter_end(&walk)) /* in pieces that end inside and at buffers' ends */
        n += jn_iter_copy(&walk, got + n, 97);
    assert_int_equal(n, len);
    assert_memory_equal(got, data + off, len);
    for (size_t skip = 0; skip <= len; skip += 211) {
        walk = it;
        assert_int_equal(jn_iter_advance(&walk, skip), skip);
        jn_iter_t sub;
        jn_iter_sub(&walk, len - skip, &sub);
        assert_view_equals(&sub, data + off + skip, len - skip);
    }
}

static void test_iterator_reads_views_across_taken_buffers(void **state)
{
    (void)state;
    built_t m;
    build_big(&m, S_ALL);
    static const size_t lengths[] = {1, 2, 300, CAP, CAP + 1, 1500};
    for (size_t s = 0; s < N_SHAPES; s++) {
        jn_message_t *msg = message_taken(m.b.data, m.b.len, &shapes[s]);
        for (size_t off = 0; off < m.b.len; off += 37) {
            for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++)
                if (off + lengths[l] <= m.b.len)
                    check_view(msg, m.b.data, off, lengths[l]);
            check_view(msg, m.b.data, off, m.b.len - off);
        }
        jn_message_unref(msg);
    }
}

/* A message arriving frame by frame in shape s with one copy: after each
 * frame the copy takes what is there and the writer trims behind it; the
 * copy's octets are the message's, and the buffers the copy passed are
 * back in the pool before the message is. */
static void trim_behind_copy(const built_t *m, const shape_t *s)
{
    uint64_t before = buffers_in_use();
    jn_message_t *msg = jn_message_new();
    assert_non_null(msg);
    jn_message_stream_set_copies(msg, 1);
    size_t at = 0;
    while (jn_message_parse(msg, JN_DEPTH_PROPERTIES) == JN_AGAIN)
        (void)feed_frame(msg, m->b.data, m->b.len, &at, s);
    jn_message_out_t o;
    assert_int_equal(jn_message_out_init_verbatim(&o, msg), 0);
    int slot = jn_message_stream_copy_begin(msg);
    assert_int_equal(slot, 0);
    bytes_t got = {.len = 0};
    bool released = false;
    for (;;) {
        int rc = drain_buffers(&o, &got);
        jn_message_stream_copy_progress(msg, slot, &o);
        uint64_t held = buffers_in_use();
        size_t backlog = jn_message_stream_trim(msg);
        assert_true(backlog <= jn_message_length(msg) - o.buffer_start);
        released |= buffers_in_use() < held;
        if (rc == 0)
            break;
        assert_int_equal(rc, JN_AGAIN);
        if (at < m->b.len)
            (void)feed_frame(msg, m->b.data, m->b.len, &at, s);
        else
            jn_message_set_complete(msg);
    }
    assert_true(released);
    assert_int_equal(got.len, m->b.len);
    assert_memory_equal(got.data, m->b.data, m->b.len);
    jn_message_stream_copy_end(msg, slot);
    jn_message_out_fini(&o);
    jn_message_stream_writer_done(msg, NULL);
    jn_message_unref(msg);
    assert_int_equal(buffers_in_use(), before);
}

static void test_trim_behind_a_copy_across_taken_buffers(void **state)
{
    (void)state;
    built_t m;
    build_big(&m, S_ALL);
    for (size_t s = 0; s < N_SHAPES; s++)
        trim_behind_copy(&m, &shapes[s]);
}

static void test_no_leak(void **state)
{
    (void)state;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_locates_sections_across_taken_buffers),
        cmocka_unit_test(test_copies_read_taken_buffers_exactly),
        cmocka_unit_test(test_iterator_reads_views_across_taken_buffers),
        cmocka_unit_test(test_trim_behind_a_copy_across_taken_buffers),
        cmocka_unit_test(test_no_leak),
    };
    return finish_tests(cmocka_run_group_tests(tests, NULL, NULL));
}
