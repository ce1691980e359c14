/*
 * test_util_wildcard.c — jn_wildcard_match (junction/wildcard.h): the
 * separator set, '*' / '+' for one token, '#' for any number, and the
 * token bound. Binding-key cases in AMQP and MQTT style are in
 * test_core_exchange.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/wildcard.h>

#include <string.h>

static bool m(const char *pattern, const char *subject, const char *seps, char one)
{
    return jn_wildcard_match(pattern, strlen(pattern), subject, strlen(subject), seps, one);
}

static void separators_are_a_set(void **state)
{
    (void)state;
    assert_true(m("a.*.c", "a/b.c", "./", '*'));
    assert_true(m("a/#", "a.b/c.d", "./", '*'));
    assert_false(m("a.*.c", "a/b.c", ".", '*')); /* "a/b" is one token here */
    assert_false(m("a.*", "a/b", ".", '*'));
}

static void one_and_any_tokens(void **state)
{
    (void)state;
    assert_true(m("#", "", "./", '*'));
    assert_true(m("a.#", "a", "./", '*'));
    assert_true(m("#.b.#", "x.y.b", "./", '*'));
    assert_false(m("a.*", "a", "./", '*'));
    assert_true(m("a/+/c", "a/b/c", "/", '+'));
    assert_false(m("a/*/c", "a/b/c", "/", '+')); /* '*' is itself in MQTT style */
    assert_true(m("ab*", "ab*", "./", '*'));     /* not a whole token: itself */
    assert_false(m("ab*", "abc", "./", '*'));
}

static void long_texts_match_nothing(void **state)
{
    (void)state;
    char s[2 * JN_WILDCARD_MAX_TOKENS + 2];
    size_t n = 0;
    for (int i = 0; i < JN_WILDCARD_MAX_TOKENS; i++) {
        s[n++] = 'a';
        s[n++] = '.';
    }
    s[n - 1] = '\0'; /* exactly the limit */
    assert_true(m("#", s, ".", '*'));
    s[n - 1] = '.';
    s[n++] = 'a';
    s[n] = '\0'; /* one more */
    assert_false(m("#", s, ".", '*'));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(separators_are_a_set),
        cmocka_unit_test(one_and_any_tokens),
        cmocka_unit_test(long_texts_match_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
