/*
 * test_policy_pattern.c — junction/policy.h: where "${user}" may stand in
 * a sourcePattern/targetPattern item, and which vhost hostname patterns
 * match the same names while written differently.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/policy.h>

#include <string.h>

static void user_token_first_or_last_whole_is_accepted(void **state)
{
    (void)state;
    char why[256] = "untouched";
    assert_int_equal(jn_policy_pattern_list_check("public, private, $management", why, sizeof why),
                     0);
    assert_int_equal(jn_policy_pattern_list_check("${user}.xyz abc/${user}", why, sizeof why), 0);
    assert_int_equal(jn_policy_pattern_list_check("${user}", why, sizeof why), 0);
    assert_int_equal(jn_policy_pattern_list_check("${user}/a/${user}", why, sizeof why), 0);
    assert_int_equal(jn_policy_pattern_list_check("", why, sizeof why), 0);
    assert_int_equal(jn_policy_pattern_list_check(NULL, why, sizeof why), 0);
    assert_string_equal(why, "untouched");
}

static void user_token_inside_a_token_is_refused(void **state)
{
    (void)state;
    char why[256] = "";
    assert_int_equal(
        jn_policy_pattern_list_check("public, abc-${user}.xyz", why, sizeof why), JN_EINVAL);
    assert_string_equal(why, "'abc-${user}.xyz': ${user} must be a whole token (nothing else "
                             "between its '.' or '/')");
    assert_int_equal(jn_policy_pattern_list_check("a.${user}x", why, sizeof why), JN_EINVAL);
}

static void user_token_in_the_middle_is_refused(void **state)
{
    (void)state;
    char why[256] = "";
    assert_int_equal(jn_policy_pattern_list_check("abc/${user}.xyz", why, sizeof why), JN_EINVAL);
    assert_string_equal(why, "'abc/${user}.xyz': ${user} must be the first or the last token");
    /* a small buffer is cut, never overrun */
    char small[8];
    assert_int_equal(jn_policy_pattern_list_check("a.${user}.b", small, sizeof small), JN_EINVAL);
    assert_int_equal(strlen(small), sizeof small - 1);
}

static void hostname_patterns_matching_the_same_names_conflict(void **state)
{
    (void)state;
    assert_true(jn_policy_host_patterns_conflict("#.#.0.0", "#.0.0"));
    assert_true(jn_policy_host_patterns_conflict("#.*.x", "*.#.x"));
    assert_true(jn_policy_host_patterns_conflict("a.#.*.#.b", "a.*.#.b"));
    assert_true(jn_policy_host_patterns_conflict("a.b", "a/b"));
    assert_true(jn_policy_host_patterns_conflict("#", "#.#"));
}

static void hostname_patterns_matching_other_names_do_not_conflict(void **state)
{
    (void)state;
    assert_false(jn_policy_host_patterns_conflict("#.0.0", "#.0.0")); /* the same text */
    assert_false(jn_policy_host_patterns_conflict("*.0.0", "#.0.0"));
    assert_false(jn_policy_host_patterns_conflict("*.*.0.0", "*.0.0"));
    assert_false(jn_policy_host_patterns_conflict("a.#", "#.a"));
    assert_false(jn_policy_host_patterns_conflict("a#.b", "a.b"));
    assert_false(jn_policy_host_patterns_conflict("", "#"));
    assert_false(jn_policy_host_patterns_conflict(NULL, "#"));
    char longp[JN_POLICY_PATTERN_MAX + 10];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    assert_false(jn_policy_host_patterns_conflict(longp, "#"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(user_token_first_or_last_whole_is_accepted),
        cmocka_unit_test(user_token_inside_a_token_is_refused),
        cmocka_unit_test(user_token_in_the_middle_is_refused),
        cmocka_unit_test(hostname_patterns_matching_the_same_names_conflict),
        cmocka_unit_test(hostname_patterns_matching_other_names_do_not_conflict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
