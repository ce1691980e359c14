/*
 * test_policy_table.c — junction/policy.h's vhost table, without sockets:
 * which vhost an Open's hostname finds (exact, alias, name pattern,
 * default), which user group a user falls in, the remoteHosts rule, the
 * connection limits and their release, a connector's "$connector" rules,
 * and the figures (vhostStats) the table keeps.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/policy.h>

#include <stdlib.h>
#include <string.h>

/* A group with every right and the given users and remote hosts. */
static jn_policy_group_t group(const char *name, const char *users, const char *hosts)
{
    return (jn_policy_group_t){.name = name,
                               .users = users,
                               .remote_hosts = hosts,
                               .max_per_user = JN_POLICY_NO_LIMIT,
                               .max_per_host = JN_POLICY_NO_LIMIT,
                               .max_connections = JN_POLICY_NO_LIMIT,
                               .sources = "*",
                               .targets = "*",
                               .max_senders = INT32_MAX,
                               .max_receivers = INT32_MAX};
}

static jn_policy_vhost_t vhost(const char *hostname, const jn_policy_group_t *groups, size_t n)
{
    return (jn_policy_vhost_t){.hostname = hostname,
                               .max_connections = 100,
                               .max_per_user = 100,
                               .max_per_host = 100,
                               .groups = groups,
                               .group_count = n};
}

/* Admit (user, hostname, rhost): the admission, or NULL with *why set. */
static jn_policy_admission_t *admit(jn_policy_t *p, const char *user, const char *host,
                                    const char *rhost, const char **why)
{
    jn_policy_open_facts_t f = {.user = user, .hostname = host, .rhost = rhost};
    jn_policy_admission_t *a = NULL;
    char shown[64];
    *why = jn_policy_admit(p, &f, &a, shown, sizeof shown);
    assert_true((a == NULL) == (*why != NULL));
    return a;
}

static void open_hostname_finds_vhost_by_name_alias_then_default(void **state)
{
    (void)state;
    jn_policy_t *p = jn_policy_create();
    assert_non_null(p);
    jn_policy_group_t g = group("$default", "", "*");
    jn_policy_vhost_t a = vhost("a.example", &g, 1), d = vhost("fallback", &g, 1);
    a.aliases = "alias-one, alias-two";
    assert_int_equal(jn_policy_vhost_add(p, &a), 0);
    assert_int_equal(jn_policy_vhost_add(p, &d), 0);
    const char *why;
    jn_policy_admission_t *x = admit(p, "u", "alias-two", "h", &why);
    assert_non_null(x);
    assert_string_equal(x->vhost, "a.example");
    assert_string_equal(x->group, "$default");
    assert_null(admit(p, "u", "other", "h", &why));
    assert_string_equal(why, "no vhost policy for the open hostname and no default vhost");
    assert_int_equal(jn_policy_configure(p, "fallback", false), 0);
    jn_policy_admission_t *y = admit(p, "u", "other", "h", &why);
    assert_non_null(y);
    assert_string_equal(y->vhost, "fallback");
    jn_policy_release(p, x);
    jn_policy_release(p, y);
    jn_policy_free(p);
}

static void name_patterns_pick_the_most_specific_vhost(void **state)
{
    (void)state;
    jn_policy_t *p = jn_policy_create();
    jn_policy_group_t g = group("$default", "", "*");
    jn_policy_vhost_t wide = vhost("#.com", &g, 1), narrow = vhost("*.example.com", &g, 1);
    assert_int_equal(jn_policy_vhost_add(p, &wide), 0);
    assert_int_equal(jn_policy_vhost_add(p, &narrow), 0);
    const char *why;
    assert_null(admit(p, "u", "www.example.com", "h", &why)); /* patterns off */
    assert_int_equal(jn_policy_configure(p, NULL, true), 0);
    jn_policy_admission_t *x = admit(p, "u", "www.example.com", "h", &why);
    assert_non_null(x);
    assert_string_equal(x->vhost, "*.example.com");
    jn_policy_admission_t *y = admit(p, "u", "a.b.c.com", "h", &why);
    assert_non_null(y);
    assert_string_equal(y->vhost, "#.com");
    jn_policy_release(p, x);
    jn_policy_release(p, y);
    jn_policy_free(p);
}

static void user_takes_first_listing_group_else_default_else_refused(void **state)
{
    (void)state;
    jn_policy_t *p = jn_policy_create();
    jn_policy_group_t gs[] = {group("$default", "", "*"), group("admins", "root, alice", "*")};
    gs[1].targets = "admin.*";
    jn_policy_vhost_t v = vhost("v", gs, 2);
    assert_int_equal(jn_policy_vhost_add(p, &v), 0);
    const char *why;
    jn_policy_admission_t *a = admit(p, "alice", "v", "h", &why);
    assert_string_equal(a->group, "admins");
    assert_string_equal(a->rules.targets, "admin.*");
    assert_string_equal(a->rules.vhost, "v");
    jn_policy_admission_t *b = admit(p, "bob", "v", "h", &why);
    assert_string_equal(b->group, "$default");
    jn_policy_admission_t *anon = admit(p, NULL, "v", "h", &why);
    assert_string_equal(anon->user, "anonymous");
    jn_policy_release(p, a);
    jn_policy_release(p, b);
    jn_policy_release(p, anon);
    /* no $default group: a user in no group is refused unless the vhost
     * allows unknown users, who then get the rules of no group */
    jn_policy_vhost_t w = vhost("w", &gs[1], 1);
    assert_int_equal(jn_policy_vhost_add(p, &w), 0);
    assert_null(admit(p, "bob", "w", "h", &why));
    assert_string_equal(why, "user is in no user group and the vhost has no $default group");
    w.allow_unknown_user = true;
    assert_int_equal(jn_policy_vhost_add(p, &w), 0);
    jn_policy_admission_t *c = admit(p, "bob", "w", "h", &why);
    assert_non_null(c);
    assert_string_equal(c->group, "");
    assert_string_equal(c->rules.targets, "");
    jn_policy_release(p, c);
    jn_policy_free(p);
}

static void remote_host_must_be_in_group_remote_hosts(void **state)
{
    (void)state;
    jn_policy_t *p = jn_policy_create();
    jn_policy_group_t g = group("$default", "", "10.0.0.1, ::1");
    jn_policy_vhost_t v = vhost("v", &g, 1);
    assert_int_equal(jn_policy_vhost_add(p, &v), 0);
    const char *why;
    jn_policy_admission_t *a = admit(p, "u", "v", "::1", &why);
    assert_non_null(a);
    assert_null(admit(p, "u", "v", "10.0.0.2", &why));
    assert_string_equal(why, "remote host not allowed by the user group's remoteHosts");
    jn_policy_release(p, a);
    jn_policy_free(p);
}

static void connection_limits_refuse_then_release_frees_a_place(void **state)
{
    (void)state;
    jn_policy_t *p = jn_policy_create();
    jn_policy_group_t g = group("$default", "", "*");
    jn_policy_vhost_t v = vhost("v", &g, 1);
    v.max_connections = 3;
    v.max_per_user = 2;
    v.max_per_host = 1;
    assert_int_equal(jn_policy_vhost_add(p, &v), 0);
    const char *why;
    jn_policy_admission_t *a = admit(p, "u", "v", "h1", &why);
    assert_non_null(a);
    assert_null(admit(p, "u", "v", "h1", &why));
    assert_string_equal(why, "maxConnectionsPerHost reached");
    jn_policy_admission_t *b = admit(p, "u", "v", "h2", &why);
    assert_non_null(b);
    assert_null(admit(p, "u", "v", "h3", &why));
    assert_string_equal(why, "maxConnectionsPerUser reached");
    jn_policy_admission_t *c = admit(p, "w", "v", "h3", &why);
    assert_non_null(c);
    assert_null(admit(p, "x", "v", "h4", &why));
    assert_string_equal(why, "vhost maxConnections reached");
    jn_policy_release(p, a);
    a = admit(p, "x", "v", "h1", &why);
    assert_non_null(a);
    jn_policy_release(p, a);
    jn_policy_release(p, b);
    jn_policy_release(p, c);
    /* a group's own limits: per user overriding the vhost's, and its total */
    g.max_per_user = 1;
    g.max_connections = 2;
    v.max_per_host = 100;
    assert_int_equal(jn_policy_vhost_add(p, &v), 0);
    a = admit(p, "u", "v", "h", &why);
    assert_null(admit(p, "u", "v", "h", &why));
    assert_string_equal(why, "maxConnectionsPerUser reached");
    b = admit(p, "w", "v", "h", &why);
    assert_null(admit(p, "y", "v", "h", &why));
    assert_string_equal(why, "user group maxConnections reached");
    jn_policy_release(p, a);
    jn_policy_release(p, b);
    jn_policy_free(p);
}

static void connector_takes_connector_group_uncounted(void **state)
{
    (void)state;
    jn_policy_t *p = jn_policy_create();
    jn_policy_group_t gs[] = {group("$default", "", "*"), group("$connector", "", "*")};
    gs[1].sources = "broker.*";
    jn_policy_vhost_t v = vhost("v", gs, 2), w = vhost("w", gs, 1);
    assert_int_equal(jn_policy_vhost_add(p, &v), 0);
    assert_int_equal(jn_policy_vhost_add(p, &w), 0);
    jn_policy_admission_t *a = NULL;
    assert_null(jn_policy_admit_connector(p, "v", &a));
    assert_non_null(a);
    assert_true(a->rules.outgoing);
    assert_string_equal(a->rules.sources, "broker.*");
    assert_null(a->vhost);
    jn_policy_release(p, a);
    assert_string_equal(jn_policy_admit_connector(p, "w", &a),
                        "the vhost has no '$connector' group");
    assert_null(a);
    assert_string_equal(jn_policy_admit_connector(p, "none", &a), "no such vhost");
    jn_policy_vhost_stats_t *st;
    size_t n;
    assert_int_equal(jn_policy_stats(p, &st, &n), 0);
    assert_int_equal(st[0].current, 0);
    jn_policy_stats_free(st, n);
    jn_policy_free(p);
}

static void max_message_size_is_the_group_s_else_the_vhost_s(void **state)
{
    (void)state;
    jn_policy_t *p = jn_policy_create();
    jn_policy_group_t gs[] = {group("$default", "", "*"), group("big", "b", "*")};
    gs[1].has_max_message_size = true;
    gs[1].max_message_size = 5000;
    jn_policy_vhost_t v = vhost("v", gs, 2);
    v.has_max_message_size = true;
    v.max_message_size = 100;
    assert_int_equal(jn_policy_vhost_add(p, &v), 0);
    const char *why;
    jn_policy_admission_t *a = admit(p, "a", "v", "h", &why), *b = admit(p, "b", "v", "h", &why);
    assert_true(a->rules.has_max_message_size);
    assert_int_equal(a->rules.max_message_size, 100);
    assert_int_equal(b->rules.max_message_size, 5000);
    jn_policy_release(p, a);
    jn_policy_release(p, b);
    jn_policy_free(p);
}

/* The count of key in counts (n of them), 0 when absent. */
static uint64_t count_of(const jn_policy_count_t *counts, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(counts[i].key, key) == 0)
            return counts[i].n;
    return 0;
}

static void figures_count_opens_denials_and_survive_replacement(void **state)
{
    (void)state;
    jn_policy_t *p = jn_policy_create();
    jn_policy_group_t g = group("$default", "", "*");
    jn_policy_vhost_t v = vhost("v", &g, 1);
    v.max_per_user = 1;
    assert_int_equal(jn_policy_vhost_add(p, &v), 0);
    const char *why;
    jn_policy_admission_t *a = admit(p, "alice", "v", "h1", &why);
    jn_policy_admission_t *b = admit(p, "bob", "v", "h1", &why);
    assert_null(admit(p, "alice", "v", "h2", &why));
    jn_policy_note_denial(p, "v", JN_POLICY_DENIED_SENDER);
    jn_policy_note_denial(p, "v", JN_POLICY_DENIED_RECEIVER);
    jn_policy_note_denial(p, "v", JN_POLICY_DENIED_TRANSFER);
    jn_policy_note_denial(p, "v", JN_POLICY_DENIED_SESSION);
    jn_policy_note_denial(p, "v", JN_POLICY_DENIED_MAX_SIZE);
    jn_policy_note_denial(p, "gone", JN_POLICY_DENIED_SESSION); /* the totals only */
    v.max_per_user = 5;
    assert_int_equal(jn_policy_vhost_add(p, &v), 0); /* an UPDATE: figures go on */
    jn_policy_vhost_stats_t *st;
    size_t n;
    assert_int_equal(jn_policy_stats(p, &st, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(st[0].hostname, "v");
    assert_int_equal(st[0].approved, 2);
    assert_int_equal(st[0].denied, 1);
    assert_int_equal(st[0].current, 2);
    assert_int_equal(st[0].sender_denied, 2);
    assert_int_equal(st[0].receiver_denied, 1);
    assert_int_equal(st[0].session_denied, 1);
    assert_int_equal(st[0].max_size_denied, 1);
    assert_int_equal(count_of(st[0].per_user, st[0].n_user, "alice"), 1);
    assert_int_equal(count_of(st[0].per_user, st[0].n_user, "bob"), 1);
    assert_int_equal(count_of(st[0].per_host, st[0].n_host, "h1"), 2);
    jn_policy_stats_free(st, n);
    uint64_t links, sessions, sd, snd, rcv;
    jn_policy_totals(p, &links, &sessions);
    assert_int_equal(links, 2);
    assert_int_equal(sessions, 2);
    jn_policy_vhost_denials(p, "v", &sd, &snd, &rcv);
    assert_int_equal(sd, 1);
    assert_int_equal(snd, 2);
    assert_int_equal(rcv, 1);
    jn_policy_release(p, a);
    jn_policy_release(p, b);
    assert_int_equal(jn_policy_stats(p, &st, &n), 0);
    assert_int_equal(st[0].current, 0);
    assert_int_equal(st[0].n_user, 0);
    jn_policy_stats_free(st, n);
    jn_policy_free(p);
}

static void removed_vhost_admits_no_more_but_keeps_open_ones(void **state)
{
    (void)state;
    jn_policy_t *p = jn_policy_create();
    jn_policy_group_t g = group("$default", "", "*");
    jn_policy_vhost_t v = vhost("v", &g, 1);
    assert_int_equal(jn_policy_vhost_add(p, &v), 0);
    const char *why;
    jn_policy_admission_t *a = admit(p, "u", "v", "h", &why);
    assert_int_equal(jn_policy_vhost_remove(p, "v"), 0);
    assert_int_equal(jn_policy_vhost_remove(p, "v"), JN_ENOENT);
    assert_null(admit(p, "u", "v", "h", &why));
    assert_string_equal(a->rules.sources, "*"); /* its rules are its own */
    jn_policy_release(p, a);
    jn_policy_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_hostname_finds_vhost_by_name_alias_then_default),
        cmocka_unit_test(name_patterns_pick_the_most_specific_vhost),
        cmocka_unit_test(user_takes_first_listing_group_else_default_else_refused),
        cmocka_unit_test(remote_host_must_be_in_group_remote_hosts),
        cmocka_unit_test(connection_limits_refuse_then_release_frees_a_place),
        cmocka_unit_test(connector_takes_connector_group_uncounted),
        cmocka_unit_test(max_message_size_is_the_group_s_else_the_vhost_s),
        cmocka_unit_test(figures_count_opens_denials_and_survive_replacement),
        cmocka_unit_test(removed_vhost_admits_no_more_but_keeps_open_ones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
