/*
 * test_message_buffer.c — buffers and buffer chains (junction/buffer.h):
 * pool allocation and return, refcounting, appending (topping up the tail,
 * or split into small buffers), length, copy-out, freeing, and that nothing
 * is left in use at the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/buffer.h>
#include <junction/pool.h>

#include <string.h>

struct find_ctx {
    const char *name;
    uint64_t in_use;
    bool found;
};

static void find_pool(const jn_pool_stats_t *stats, void *ctx)
{
    struct find_ctx *f = ctx;
    if (strcmp(stats->type_name, f->name) == 0) {
        f->in_use = stats->in_use;
        f->found = true;
    }
}

/* Buffers handed out by the buffer pool and not yet returned. */
static uint64_t buffers_in_use(void)
{
    struct find_ctx f = {"jn_buffer", 0, false};
    jn_pool_foreach(find_pool, &f);
    return f.found ? f.in_use : 0;
}

static size_t chain_count(const jn_buffer_list_t *list)
{
    size_t n = 0;
    for (const jn_buffer_t *b = list->head; b != NULL; b = jn_buffer_next(b))
        n++;
    return n;
}

static void fill_pattern(uint8_t *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)(i * 7 + seed);
}

static void test_new_ref_unref(void **state)
{
    (void)state;
    jn_buffer_unref(NULL); /* ignored */
    jn_buffer_t *b = jn_buffer_new();
    assert_non_null(b);
    uint64_t base = buffers_in_use();
    assert_int_equal(base, 1);
    assert_int_equal(jn_buffer_size(b), 0);
    assert_null(jn_buffer_next(b));
    assert_int_equal(jn_buffer_space(b), JN_BUFFER_CAPACITY);
    assert_int_equal(atomic_load(&b->refcount), 1);
    assert_true(((uintptr_t)b->data & 15u) == 0);

    assert_ptr_equal(jn_buffer_ref(b), b);
    assert_int_equal(atomic_load(&b->refcount), 2);
    jn_buffer_unref(b);
    assert_int_equal(buffers_in_use(), 1);
    jn_buffer_unref(b);
    assert_int_equal(buffers_in_use(), 0);

    /* a buffer comes back from the pool clean */
    jn_buffer_t *c = jn_buffer_new();
    assert_non_null(c);
    assert_int_equal(jn_buffer_size(c), 0);
    assert_null(jn_buffer_next(c));
    assert_int_equal(atomic_load(&c->refcount), 1);
    jn_buffer_unref(c);
    assert_int_equal(buffers_in_use(), 0);
}

static void test_publish(void **state)
{
    (void)state;
    jn_buffer_t *b = jn_buffer_new();
    assert_non_null(b);
    memcpy(b->data, "abc", 3);
    jn_buffer_publish(b, 3);
    assert_int_equal(jn_buffer_size(b), 3);
    assert_int_equal(jn_buffer_space(b), JN_BUFFER_CAPACITY - 3);
    b->data[3] = 'd';
    jn_buffer_publish(b, 1);
    assert_int_equal(jn_buffer_size(b), 4);
    assert_memory_equal(b->data, "abcd", 4);
    jn_buffer_unref(b);
    assert_int_equal(buffers_in_use(), 0);
}

static void test_append_bytes_tops_up_tail(void **state)
{
    (void)state;
    static uint8_t data[3 * JN_BUFFER_CAPACITY + 10];
    fill_pattern(data, sizeof data, 3);
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    assert_int_equal(jn_buffer_list_length(&list), 0);
    assert_int_equal(jn_buffer_list_append_bytes(&list, data, 0), 0);
    assert_null(list.head);

    assert_int_equal(jn_buffer_list_append_bytes(&list, data, 10), 0);
    assert_int_equal(chain_count(&list), 1);
    assert_int_equal(jn_buffer_size(list.head), 10);

    /* the tail is filled first, then whole new buffers */
    size_t rest = sizeof data - 10;
    assert_int_equal(jn_buffer_list_append_bytes(&list, data + 10, rest), 0);
    assert_int_equal(jn_buffer_list_length(&list), sizeof data);
    assert_int_equal(chain_count(&list), 4);
    assert_int_equal(jn_buffer_size(list.head), JN_BUFFER_CAPACITY);
    assert_int_equal(jn_buffer_size(list.tail), 10);
    assert_null(jn_buffer_next(list.tail));
    assert_int_equal(buffers_in_use(), 4);

    static uint8_t out[sizeof data];
    assert_int_equal(jn_buffer_list_copy_out(&list, 0, out, sizeof out), sizeof data);
    assert_memory_equal(out, data, sizeof data);

    jn_buffer_list_free(&list);
    assert_null(list.head);
    assert_null(list.tail);
    assert_int_equal(jn_buffer_list_length(&list), 0);
    assert_int_equal(buffers_in_use(), 0);
}

static void test_append_split(void **state)
{
    (void)state;
    const size_t chunks[] = {1, 2, 3, 7, JN_BUFFER_CAPACITY};
    uint8_t data[100];
    fill_pattern(data, sizeof data, 1);
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        size_t chunk = chunks[c];
        jn_buffer_list_t list;
        jn_buffer_list_init(&list);
        assert_int_equal(jn_buffer_list_append_split(&list, data, 50, chunk), 0);
        size_t first = (50 + chunk - 1) / chunk;
        assert_int_equal(chain_count(&list), first);
        /* the tail is never topped up */
        assert_int_equal(jn_buffer_list_append_split(&list, data + 50, 50, chunk), 0);
        assert_int_equal(chain_count(&list), first + (50 + chunk - 1) / chunk);
        for (const jn_buffer_t *b = list.head; b != NULL; b = jn_buffer_next(b))
            assert_true(jn_buffer_size(b) >= 1 && jn_buffer_size(b) <= chunk);
        assert_int_equal(jn_buffer_list_length(&list), sizeof data);
        uint8_t out[sizeof data];
        assert_int_equal(jn_buffer_list_copy_out(&list, 0, out, sizeof out), sizeof data);
        assert_memory_equal(out, data, sizeof data);
        jn_buffer_list_free(&list);
        assert_int_equal(buffers_in_use(), 0);
    }
}

static void test_append_split_invalid(void **state)
{
    (void)state;
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    assert_int_equal(jn_buffer_list_append_split(&list, "abc", 3, 0), JN_EINVAL);
    assert_int_equal(jn_buffer_list_append_split(&list, "abc", 3, JN_BUFFER_CAPACITY + 1),
                     JN_EINVAL);
    assert_null(list.head);
    assert_int_equal(buffers_in_use(), 0);
}

static void test_copy_out(void **state)
{
    (void)state;
    uint8_t data[40];
    fill_pattern(data, sizeof data, 9);
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    assert_int_equal(jn_buffer_list_append_split(&list, data, sizeof data, 3), 0);
    uint8_t out[sizeof data];
    for (size_t off = 0; off <= sizeof data; off++) {
        for (size_t cap = 0; cap <= sizeof data; cap += 5) {
            size_t want = sizeof data - off < cap ? sizeof data - off : cap;
            memset(out, 0xEE, sizeof out);
            assert_int_equal(jn_buffer_list_copy_out(&list, off, out, cap), want);
            assert_memory_equal(out, data + off, want);
            if (want < sizeof out)
                assert_int_equal(out[want], 0xEE);
        }
    }
    assert_int_equal(jn_buffer_list_copy_out(&list, sizeof data + 1, out, sizeof out), 0);
    jn_buffer_list_free(&list);
    jn_buffer_list_free(&list); /* freeing an empty list is harmless */
    assert_int_equal(buffers_in_use(), 0);
}

static void test_list_append_and_shared_reference(void **state)
{
    (void)state;
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    jn_buffer_t *a = jn_buffer_new(), *b = jn_buffer_new();
    assert_non_null(a);
    assert_non_null(b);
    memcpy(a->data, "hello ", 6);
    jn_buffer_publish(a, 6);
    memcpy(b->data, "world", 5);
    jn_buffer_publish(b, 5);
    jn_buffer_list_append(&list, a);
    jn_buffer_list_append(&list, b);
    assert_ptr_equal(list.head, a);
    assert_ptr_equal(list.tail, b);
    assert_ptr_equal(jn_buffer_next(a), b);
    char out[12] = {0};
    assert_int_equal(jn_buffer_list_copy_out(&list, 0, out, 11), 11);
    assert_string_equal(out, "hello world");

    /* another holder keeps b alive after the list lets go */
    jn_buffer_ref(b);
    jn_buffer_list_free(&list);
    assert_int_equal(buffers_in_use(), 1);
    assert_memory_equal(b->data, "world", 5);
    jn_buffer_unref(b);
    assert_int_equal(buffers_in_use(), 0);
}

/* Runs last: the pools report nothing in use. */
static void test_no_leak(void **state)
{
    (void)state;
    assert_int_equal(buffers_in_use(), 0);
    assert_int_equal(jn_pool_leak_report(stderr), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_ref_unref),
        cmocka_unit_test(test_publish),
        cmocka_unit_test(test_append_bytes_tops_up_tail),
        cmocka_unit_test(test_append_split),
        cmocka_unit_test(test_append_split_invalid),
        cmocka_unit_test(test_copy_out),
        cmocka_unit_test(test_list_append_and_shared_reference),
        cmocka_unit_test(test_no_leak),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    jn_pool_shutdown();
    return failed;
}
