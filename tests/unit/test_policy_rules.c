/*
 * test_policy_rules.c — junction/policy.h's link rules, without sockets:
 * which attaches a user group's rules allow (link limits, anonymous
 * senders, dynamic sources, capabilities, sources/targets lists and
 * patterns with ${user}) and which targets an anonymous sender's message
 * may name.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/policy.h>

#include <string.h>

/* Rules as a group would give them: every right, no link limit, the
 * lists given. */
static jn_policy_rules_t rules(char *sources, char *targets, char *spat, char *tpat)
{
    return (jn_policy_rules_t){.sources = sources,
                               .targets = targets,
                               .source_pattern = spat,
                               .target_pattern = tpat,
                               .max_senders = INT32_MAX,
                               .max_receivers = INT32_MAX,
                               .allow_waypoint_links = true,
                               .allow_fallback_links = true,
                               .vhost = "v"};
}

static const char *deny(const jn_policy_rules_t *r, jn_policy_link_facts_t f, bool *limit)
{
    if (!f.user)
        f.user = "alice";
    return jn_policy_link_denial(r, &f, limit);
}

static void sender_target_in_list_is_allowed_else_refused(void **state)
{
    (void)state;
    jn_policy_rules_t r = rules("", "public, a.b*, private.${user}", "", "");
    bool limit = true;
    assert_null(deny(&r, (jn_policy_link_facts_t){.sender = true, .address = "public"}, &limit));
    assert_false(limit);
    assert_null(deny(&r, (jn_policy_link_facts_t){.sender = true, .address = "a.bcd"}, &limit));
    assert_null(
        deny(&r, (jn_policy_link_facts_t){.sender = true, .address = "private.alice"}, &limit));
    assert_string_equal(
        deny(&r, (jn_policy_link_facts_t){.sender = true, .address = "private.bob"}, &limit),
        "target not allowed by the group's targets/targetPattern");
    assert_false(limit);
    /* the source list is not the target list */
    assert_non_null(deny(&r, (jn_policy_link_facts_t){.address = "public"}, &limit));
}

static void receiver_source_by_pattern_with_user_token(void **state)
{
    (void)state;
    jn_policy_rules_t r = rules("", "", "queue.*, ${user}.#", "");
    bool limit;
    assert_null(deny(&r, (jn_policy_link_facts_t){.address = "queue.one"}, &limit));
    assert_null(deny(&r, (jn_policy_link_facts_t){.address = "alice.x.y"}, &limit));
    assert_string_equal(deny(&r, (jn_policy_link_facts_t){.address = "queue.one.two"}, &limit),
                        "source not allowed by the group's sources/sourcePattern");
    assert_non_null(deny(&r, (jn_policy_link_facts_t){.address = "bob.x"}, &limit));
    /* a receiver with no address and not dynamic names no source */
    assert_non_null(deny(&r, (jn_policy_link_facts_t){.address = ""}, &limit));
}

static void user_with_wildcard_token_gets_nothing_from_user_pattern(void **state)
{
    (void)state;
    jn_policy_rules_t r = rules("", "", "${user}.q", "");
    bool limit;
    assert_null(deny(&r, (jn_policy_link_facts_t){.address = "a.q", .user = "a"}, &limit));
    assert_non_null(deny(&r, (jn_policy_link_facts_t){.address = "a.q", .user = "*"}, &limit));
    assert_non_null(deny(&r, (jn_policy_link_facts_t){.address = "x.q", .user = "#"}, &limit));
}

static void link_limits_come_first_and_say_resource_limit(void **state)
{
    (void)state;
    jn_policy_rules_t r = rules("*", "*", "", "");
    r.max_senders = 2;
    r.max_receivers = 0;
    bool limit = false;
    assert_null(
        deny(&r, (jn_policy_link_facts_t){.sender = true, .address = "x", .senders = 1}, &limit));
    assert_string_equal(
        deny(&r, (jn_policy_link_facts_t){.sender = true, .address = "x", .senders = 2}, &limit),
        "maxSenders limit reached");
    assert_true(limit);
    assert_string_equal(deny(&r, (jn_policy_link_facts_t){.address = "x"}, &limit),
                        "maxReceivers limit reached");
    assert_true(limit);
}

static void anonymous_sender_and_dynamic_source_need_their_rights(void **state)
{
    (void)state;
    jn_policy_rules_t r = rules("", "", "", "");
    bool limit;
    assert_string_equal(deny(&r, (jn_policy_link_facts_t){.sender = true}, &limit),
                        "anonymous sender not allowed");
    assert_string_equal(deny(&r, (jn_policy_link_facts_t){.dynamic = true}, &limit),
                        "dynamic source not allowed");
    assert_false(limit);
    r.allow_anonymous_sender = r.allow_dynamic_source = true;
    assert_null(deny(&r, (jn_policy_link_facts_t){.sender = true, .address = ""}, &limit));
    assert_null(deny(&r, (jn_policy_link_facts_t){.dynamic = true}, &limit));
}

static void waypoint_and_fallback_capabilities_need_their_rights(void **state)
{
    (void)state;
    jn_policy_rules_t r = rules("*", "*", "", "");
    bool limit;
    assert_null(deny(&r, (jn_policy_link_facts_t){.address = "q", .waypoint = true}, &limit));
    r.allow_waypoint_links = false;
    assert_string_equal(
        deny(&r, (jn_policy_link_facts_t){.address = "q", .waypoint = true}, &limit),
        "waypoint capability not permitted (allowWaypointLinks)");
    r.allow_fallback_links = false;
    assert_string_equal(
        deny(&r, (jn_policy_link_facts_t){.sender = true, .address = "q", .fallback = true},
             &limit),
        "fallback capability not permitted (allowFallbackLinks)");
    assert_null(deny(&r, (jn_policy_link_facts_t){.address = "q"}, &limit));
}

static void anonymous_sender_message_target_checked_by_list_and_pattern(void **state)
{
    (void)state;
    jn_policy_rules_t r = rules("", "out.${user}", "", "shared.*");
    assert_true(jn_policy_target_allowed(&r, "out.alice", "alice"));
    assert_false(jn_policy_target_allowed(&r, "out.bob", "alice"));
    assert_true(jn_policy_target_allowed(&r, "shared.x", "alice"));
    assert_false(jn_policy_target_allowed(&r, "shared.x.y", "alice"));
    /* a user name's '*' is literal in a list item */
    jn_policy_rules_t p = rules("", "t.${user}", "", "");
    assert_true(jn_policy_target_allowed(&p, "t.a*", "a*"));
    assert_false(jn_policy_target_allowed(&p, "t.abc", "a*"));
    /* an empty list and pattern allow nothing */
    jn_policy_rules_t none = rules("", "", "", "");
    assert_false(jn_policy_target_allowed(&none, "anything", "alice"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sender_target_in_list_is_allowed_else_refused),
        cmocka_unit_test(receiver_source_by_pattern_with_user_token),
        cmocka_unit_test(user_with_wildcard_token_gets_nothing_from_user_pattern),
        cmocka_unit_test(link_limits_come_first_and_say_resource_limit),
        cmocka_unit_test(anonymous_sender_and_dynamic_source_need_their_rights),
        cmocka_unit_test(waypoint_and_fallback_capabilities_need_their_rights),
        cmocka_unit_test(anonymous_sender_message_target_checked_by_list_and_pattern),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
