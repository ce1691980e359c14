/*
 * test_message_util.h — helpers shared by the message-content and
 * router-annotation unit tests: encoding sections with the encoder, feeding
 * octets to a message in small buffers, collecting an outgoing copy, and
 * comparing a view with expected octets. Static functions only (each test
 * file is its own program).
 */
#ifndef JN_TEST_MESSAGE_UTIL_H
#define JN_TEST_MESSAGE_UTIL_H 1

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/encoder.h>
#include <junction/message.h>
#include <junction/pool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The chunk sizes every parser test runs with; 0 means "all at once". */
static const size_t tiny_chunks[] = {0, 1, 2, 3, 7};
#define N_TINY_CHUNKS (sizeof tiny_chunks / sizeof tiny_chunks[0])

/* A growable octet string for expected output. */
typedef struct bytes {
    uint8_t data[8192];
    size_t len;
} bytes_t;

static inline void bytes_add(bytes_t *b, const void *p, size_t n)
{
    assert_true(b->len + n <= sizeof b->data);
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

/* Append the encoder's octets to b and reset the encoder. */
static inline void bytes_take(bytes_t *b, jn_encoder_t *e)
{
    size_t n;
    const uint8_t *p = jn_encoder_data(e, &n);
    assert_int_equal(jn_encoder_error(e), 0);
    bytes_add(b, p, n);
    jn_encoder_free(e);
    jn_encoder_init(e);
}

/* Copy all octets left in a view to dst (at most cap); returns the count. */
static inline size_t view_bytes(const jn_iter_t *it, uint8_t *dst, size_t cap)
{
    jn_iter_t c = *it;
    return jn_iter_copy(&c, dst, cap);
}

static inline void assert_view_equals(const jn_iter_t *it, const void *expected, size_t len)
{
    uint8_t got[8192];
    size_t n = view_bytes(it, got, sizeof got);
    assert_int_equal(n, len);
    assert_memory_equal(got, expected, len);
}

/* Append n octets to m as buffers of at most chunk octets each (chunk 0:
 * jn_message_append, which tops up the tail). */
static inline void feed_octets(jn_message_t *m, const uint8_t *p, size_t n, size_t chunk)
{
    if (chunk == 0) {
        assert_int_equal(jn_message_append(m, p, n), 0);
        return;
    }
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    assert_int_equal(jn_buffer_list_append_split(&list, p, n, chunk), 0);
    assert_int_equal(jn_message_append_buffers(m, &list), 0);
    assert_null(list.head);
}

/* A message holding all of data, complete, fed in buffers of chunk octets. */
static inline jn_message_t *message_from(const uint8_t *data, size_t len, size_t chunk, bool honour)
{
    jn_message_t *m = jn_message_new();
    assert_non_null(m);
    jn_message_set_annotation_policy(m, honour);
    if (len > 0)
        feed_octets(m, data, len, chunk);
    jn_message_set_complete(m);
    return m;
}

/* Run an outgoing copy to its end; append what it produced to out. Returns
 * the last jn_message_out_next result (0 at the end, JN_AGAIN, ...). */
static inline int drain_out(jn_message_out_t *o, bytes_t *out)
{
    const uint8_t *p;
    size_t n;
    int rc;
    while ((rc = jn_message_out_next(o, &p, &n)) == 1) {
        assert_true(n > 0);
        bytes_add(out, p, n);
    }
    return rc;
}

/* Section encoders. */
static inline void enc_section_map_begin(jn_encoder_t *e, uint64_t code)
{
    jn_enc_descriptor_ulong(e, code);
    jn_enc_map_begin(e);
}

static inline void enc_string_list(jn_encoder_t *e, const char *const *s, size_t n)
{
    jn_enc_list_begin(e);
    for (size_t i = 0; i < n; i++)
        jn_enc_cstring(e, s[i]);
    jn_enc_list_end(e);
}

static inline void count_buffers_(const jn_pool_stats_t *st, void *ctx)
{
    if (strcmp(st->type_name, "jn_buffer") == 0)
        *(uint64_t *)ctx = st->in_use;
}

/* In-use objects of the buffer pool now. */
static inline uint64_t buffers_in_use(void)
{
    jn_buffer_unref(jn_buffer_new()); /* the pool exists from here on */
    uint64_t n = UINT64_MAX;
    jn_pool_foreach(count_buffers_, &n);
    assert_true(n != UINT64_MAX);
    return n;
}

/* Objects still in use in any pool: must be 0 at the end of a test run. */
static inline int finish_tests(int failures)
{
    jn_pool_thread_exit();
    uint64_t leaked = jn_pool_leak_report(stderr);
    if (leaked != 0)
        fprintf(stderr, "leak: %llu pooled objects still in use\n", (unsigned long long)leaked);
    jn_pool_shutdown();
    return failures != 0 || leaked != 0;
}

#endif
