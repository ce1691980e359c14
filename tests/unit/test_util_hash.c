/*
 * test_util_hash.c — the byte-string hash table (junction/hash.h): the
 * FNV-1a function's known values, insert / lookup / remove over thousands
 * of keys with growth, binary keys containing NULs, the empty key, duplicate
 * insert, lookup_with and remove_with through an equality callback, and
 * iteration (including removing the current entry).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/hash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_fnv1a_known_values(void **state)
{
    (void)state;
    /* Published FNV-1a 32-bit test vectors. */
    assert_int_equal(jn_hash_bytes("", 0), 0x811c9dc5u);
    assert_int_equal(jn_hash_bytes("a", 1), 0xe40c292cu);
    assert_int_equal(jn_hash_bytes("foobar", 6), 0xbf9cf968u);
}

static void test_insert_lookup_remove_thousands_with_growth(void **state)
{
    (void)state;
    jn_hash_t *t = jn_hash_create(0);
    assert_non_null(t);
    enum { N = 20000 };
    static int values[N];
    char key[32];
    for (int i = 0; i < N; i++) {
        values[i] = i;
        int len = snprintf(key, sizeof(key), "M0address.%d", i);
        assert_int_equal(jn_hash_insert(t, key, (size_t)len, &values[i]), 0);
    }
    assert_int_equal(jn_hash_count(t), N);
    for (int i = 0; i < N; i++) {
        int len = snprintf(key, sizeof(key), "M0address.%d", i);
        int *v = jn_hash_lookup(t, key, (size_t)len);
        assert_non_null(v);
        assert_int_equal(*v, i);
    }
    assert_null(jn_hash_lookup(t, "M0address.", 10));
    assert_null(jn_hash_lookup(t, "M0address.20000", 15));
    /* Remove the even ones. */
    for (int i = 0; i < N; i += 2) {
        int len = snprintf(key, sizeof(key), "M0address.%d", i);
        void *v = NULL;
        assert_int_equal(jn_hash_remove(t, key, (size_t)len, &v), 0);
        assert_ptr_equal(v, &values[i]);
        assert_int_equal(jn_hash_remove(t, key, (size_t)len, NULL), JN_ENOENT);
    }
    assert_int_equal(jn_hash_count(t), N / 2);
    for (int i = 0; i < N; i++) {
        int len = snprintf(key, sizeof(key), "M0address.%d", i);
        void *v = jn_hash_lookup(t, key, (size_t)len);
        if (i % 2)
            assert_ptr_equal(v, &values[i]);
        else
            assert_null(v);
    }
    jn_hash_free(t);
}

static void test_insert_existing_key_is_eexist(void **state)
{
    (void)state;
    jn_hash_t *t = jn_hash_create(4);
    int a = 1, b = 2;
    assert_int_equal(jn_hash_insert(t, "key", 3, &a), 0);
    assert_int_equal(jn_hash_insert(t, "key", 3, &b), JN_EEXIST);
    assert_ptr_equal(jn_hash_lookup(t, "key", 3), &a);
    assert_int_equal(jn_hash_count(t), 1);
    assert_int_equal(jn_hash_insert(t, "k2", 2, NULL), JN_EINVAL);
    jn_hash_free(t);
}

static void test_binary_keys_with_nuls_and_empty_key(void **state)
{
    (void)state;
    jn_hash_t *t = jn_hash_create(0);
    const uint8_t k1[] = {0, 0, 0};
    const uint8_t k2[] = {0, 0};
    const uint8_t k3[] = {'a', 0, 'b'};
    const uint8_t k4[] = {'a', 0, 'c'};
    int v[5];
    assert_int_equal(jn_hash_insert(t, k1, sizeof(k1), &v[0]), 0);
    assert_int_equal(jn_hash_insert(t, k2, sizeof(k2), &v[1]), 0);
    assert_int_equal(jn_hash_insert(t, k3, sizeof(k3), &v[2]), 0);
    assert_int_equal(jn_hash_insert(t, k4, sizeof(k4), &v[3]), 0);
    assert_int_equal(jn_hash_insert(t, "", 0, &v[4]), 0);
    assert_ptr_equal(jn_hash_lookup(t, k1, 3), &v[0]);
    assert_ptr_equal(jn_hash_lookup(t, k2, 2), &v[1]);
    assert_ptr_equal(jn_hash_lookup(t, k3, 3), &v[2]);
    assert_ptr_equal(jn_hash_lookup(t, k4, 3), &v[3]);
    assert_ptr_equal(jn_hash_lookup(t, NULL, 0), &v[4]);
    assert_null(jn_hash_lookup(t, k1, 1)); /* a prefix is another key */
    assert_int_equal(jn_hash_count(t), 5);
    jn_hash_free(t);
}

/* A key held in two pieces, as an iterator over two buffers would see it. */
struct split_key {
    const char *a, *b;
    size_t alen, blen;
    int calls;
};

static bool split_equal(const uint8_t *key, size_t len, void *ctx)
{
    struct split_key *k = ctx;
    k->calls++;
    return len == k->alen + k->blen && memcmp(key, k->a, k->alen) == 0 &&
           memcmp(key + k->alen, k->b, k->blen) == 0;
}

static uint32_t split_hash(const struct split_key *k)
{
    uint32_t h = JN_HASH_SEED;
    for (size_t i = 0; i < k->alen; i++)
        h = jn_hash_octet(h, (uint8_t)k->a[i]);
    for (size_t i = 0; i < k->blen; i++)
        h = jn_hash_octet(h, (uint8_t)k->b[i]);
    return h;
}

static void test_lookup_with_callback_finds_split_key(void **state)
{
    (void)state;
    jn_hash_t *t = jn_hash_create(0);
    int v1 = 1, v2 = 2;
    assert_int_equal(jn_hash_insert(t, "Mqueue.orders", 13, &v1), 0);
    assert_int_equal(jn_hash_insert(t, "Mqueue.other", 12, &v2), 0);

    struct split_key k = {"Mqueue", ".orders", 6, 7, 0};
    assert_int_equal(split_hash(&k), jn_hash_bytes("Mqueue.orders", 13));
    assert_ptr_equal(jn_hash_lookup_with(t, split_hash(&k), split_equal, &k), &v1);
    assert_int_equal(k.calls, 1); /* only entries with that hash are compared */

    struct split_key missing = {"Mqueue", ".nothing", 6, 8, 0};
    assert_null(jn_hash_lookup_with(t, split_hash(&missing), split_equal, &missing));

    void *out = NULL;
    assert_int_equal(jn_hash_remove_with(t, split_hash(&k), split_equal, &k, &out), 0);
    assert_ptr_equal(out, &v1);
    assert_int_equal(jn_hash_remove_with(t, split_hash(&k), split_equal, &k, &out), JN_ENOENT);
    assert_null(jn_hash_lookup(t, "Mqueue.orders", 13));
    assert_ptr_equal(jn_hash_lookup(t, "Mqueue.other", 12), &v2);
    jn_hash_free(t);
}

static void test_iteration_visits_each_entry_once_and_allows_removal(void **state)
{
    (void)state;
    jn_hash_t *t = jn_hash_create(0);
    enum { N = 3000 };
    static int values[N];
    static int seen[N];
    char key[16];
    for (int i = 0; i < N; i++) {
        values[i] = i;
        int len = snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(jn_hash_insert(t, key, (size_t)len, &values[i]), 0);
    }
    jn_hash_iter_t it;
    jn_hash_iter_init(t, &it);
    const uint8_t *k;
    size_t len;
    void *v;
    int visited = 0;
    while (jn_hash_iter_next(&it, &k, &len, &v)) {
        int i = *(int *)v;
        seen[i]++;
        visited++;
        char expect[16];
        int elen = snprintf(expect, sizeof(expect), "k%d", i);
        assert_int_equal(len, elen);
        assert_memory_equal(k, expect, len);
        if (i % 3 == 0) /* remove the entry just returned */
            assert_int_equal(jn_hash_remove(t, expect, len, NULL), 0);
    }
    assert_int_equal(visited, N);
    for (int i = 0; i < N; i++)
        assert_int_equal(seen[i], 1);
    assert_int_equal(jn_hash_count(t), N - (N + 2) / 3);
    jn_hash_free(t);
}

static void test_reserve_keeps_entries(void **state)
{
    (void)state;
    jn_hash_t *t = jn_hash_create(0);
    int a = 1;
    assert_int_equal(jn_hash_insert(t, "x", 1, &a), 0);
    assert_int_equal(jn_hash_reserve(t, 100000), 0);
    assert_ptr_equal(jn_hash_lookup(t, "x", 1), &a);
    assert_int_equal(jn_hash_count(t), 1);
    jn_hash_free(t);
    jn_hash_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fnv1a_known_values),
        cmocka_unit_test(test_insert_lookup_remove_thousands_with_growth),
        cmocka_unit_test(test_insert_existing_key_is_eexist),
        cmocka_unit_test(test_binary_keys_with_nuls_and_empty_key),
        cmocka_unit_test(test_lookup_with_callback_finds_split_key),
        cmocka_unit_test(test_iteration_visits_each_entry_once_and_allows_removal),
        cmocka_unit_test(test_reserve_keeps_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
