/*
 * test_core_address.c — the `address` configuration: the prefix/pattern
 * matcher on its own (router/core/address_config.h), then through the core:
 * the distribution a configured address gets, the longest-prefix rule, and
 * refused attaches to an unavailable address.
 */
#include "test_core_util.h"

#include "core/address_config.h"

/* ---- the matcher ---------------------------------------------------------- */

static jn_addr_config_t cfg;

static int matcher_setup(void **state)
{
    (void)state;
    jn_addr_config_init(&cfg);
    return 0;
}

static int matcher_teardown(void **state)
{
    (void)state;
    jn_addr_config_fini(&cfg);
    return 0;
}

static void add(const char *text, bool pattern)
{
    assert_int_equal(jn_addr_config_add(&cfg, text, pattern, JN_DIST_CLOSEST), 0);
}

/* The text of the entry matching addr, or NULL. */
static const char *match(const char *addr)
{
    int i = jn_addr_config_match(&cfg, addr, strlen(addr));
    return i < 0 ? NULL : cfg.entries[i].text;
}

static void assert_match_at(const char *addr, const char *expected, const char *file, int line)
{
    const char *got = match(addr);
    bool ok = expected ? (got && strcmp(got, expected) == 0) : got == NULL;
    if (!ok)
        fail_msg("%s:%d: %s matched %s, expected %s", file, line, addr, got ? got : "nothing",
                 expected ? expected : "nothing");
}
#define assert_match(addr, expected) assert_match_at((addr), (expected), __FILE__, __LINE__)

static void test_prefix_matches_itself_and_at_separators_only(void **state)
{
    (void)state;
    add("queue", false);
    assert_match("queue", "queue");
    assert_match("queue.a", "queue");
    assert_match("queue/a", "queue");
    assert_match("queue.a.b/c", "queue");
    assert_match("queues", NULL);
    assert_match("queue-a", NULL);
    assert_match("que", NULL);
    assert_match("a.queue", NULL);
    assert_match("", NULL);
}

static void test_separators_at_the_end_are_dropped(void **state)
{
    (void)state;
    add("queue.", false); /* as 1.19 reads it: the prefix "queue" */
    assert_match("queue.a", "queue");
    assert_match("queue", "queue");
    assert_match("queues", NULL);
    add("a.b./", true);
    assert_match("a.b", "a.b");
    assert_match("a.b.c", NULL);
    assert_int_equal(jn_addr_config_add(&cfg, "queue", false, JN_DIST_CLOSEST), JN_EEXIST);
    assert_int_equal(jn_addr_config_add(&cfg, "./", false, JN_DIST_CLOSEST), JN_EINVAL);
    assert_int_equal(jn_addr_config_text_len("a.b./"), 3);
    assert_int_equal(jn_addr_config_text_len("/"), 0);
}

static void test_longest_prefix_wins(void **state)
{
    (void)state;
    add("a", false);
    add("a.b.c", false);
    add("a.b", false);
    assert_match("a", "a");
    assert_match("a.x", "a");
    assert_match("a.b", "a.b");
    assert_match("a.bc", "a");
    assert_match("a.b.x", "a.b");
    assert_match("a/b/c", "a"); /* a prefix is literal: "a/b" is not "a.b" */
    assert_match("a.b.c", "a.b.c");
    assert_match("a.b.c.d", "a.b.c");
    assert_match("a.b/c/d", "a.b");
}

static void test_pattern_star_matches_exactly_one_token(void **state)
{
    (void)state;
    add("a.*.c", true);
    assert_match("a.b.c", "a.*.c");
    assert_match("a/b/c", "a.*.c"); /* either separator */
    assert_match("a..c", "a.*.c");  /* an empty token is a token */
    assert_match("a.c", NULL);
    assert_match("a.b.b.c", NULL);
    assert_match("a.b.c.d", NULL);
}

static void test_pattern_hash_matches_zero_or_more_tokens(void **state)
{
    (void)state;
    add("a.#.z", true);
    assert_match("a.z", "a.#.z");
    assert_match("a.b.z", "a.#.z");
    assert_match("a.b.c.d.z", "a.#.z");
    assert_match("a.b.c", NULL);
    assert_match("b.z", NULL);
    add("#", true);
    assert_match("anything.at.all", "#");
    assert_match("x", "#");
}

static void test_pattern_hash_backtracks(void **state)
{
    (void)state;
    add("#.b.#.b", true);
    assert_match("b.b", "#.b.#.b");
    assert_match("a.b.c.b", "#.b.#.b");
    assert_match("b.b.b.b", "#.b.#.b");
    assert_match("a.b.c", NULL);
    assert_match("b", NULL);
}

static void test_runs_of_hash_are_collapsed_and_duplicates_refused(void **state)
{
    (void)state;
    assert_int_equal(jn_addr_config_add(&cfg, "a.#.#.b", true, JN_DIST_CLOSEST), 0);
    assert_string_equal(cfg.entries[0].text, "a.#.b");
    assert_int_equal(jn_addr_config_add(&cfg, "a.#.b", true, JN_DIST_CLOSEST), JN_EEXIST);
    assert_int_equal(jn_addr_config_add(&cfg, "a.#.b", false, JN_DIST_CLOSEST), 0);
    assert_int_equal(jn_addr_config_add(&cfg, "a.#.b", false, JN_DIST_CLOSEST), JN_EEXIST);
    assert_int_equal(jn_addr_config_add(&cfg, "", false, JN_DIST_CLOSEST), JN_EINVAL);
    assert_int_equal(jn_addr_config_add(&cfg, NULL, true, JN_DIST_CLOSEST), JN_EINVAL);
    assert_int_equal(jn_addr_config_add(&cfg, "x", true, (jn_distribution_t)9), JN_EINVAL);
    assert_match("a.x.y.b", "a.#.b");
}

static void test_most_specific_match_wins_token_by_token(void **state)
{
    (void)state;
    add("#", true);
    add("a.#", true);
    add("a.*", true);
    add("*.b", true);
    add("a.b", true);
    assert_match("a.b", "a.b");   /* literal, literal */
    assert_match("a.c", "a.*");   /* literal, star beats literal, hash */
    assert_match("x.b", "*.b");   /* star beats hash on the first token */
    assert_match("a.c.d", "a.#"); /* only a.# and # match */
    assert_match("x.y", "#");
}

static void test_hash_matching_nothing_loses_to_literal_or_star(void **state)
{
    (void)state;
    /* as 1.19 (its test_17_address_wildcard): at equal grades so far, a
     * literal (or '*') in one pattern beats a '#' that matches nothing in
     * the other, though the first pattern was added first */
    add("a/*/#/d", true);
    add("a.*.d", true);
    add("#.x", true);
    add("*.*", true);
    assert_match("a.c.d", "a.*.d");
    assert_match("a/c/c/d", "a/*/#/d"); /* only it matches */
    assert_match("q.x", "*.*");         /* star, star beats hash-then-literal */
}

static void test_prefix_beats_pattern_of_same_specificity(void **state)
{
    (void)state;
    add("a.b.#", true);
    add("a.b", false);
    assert_match("a.b", "a.b");
    assert_match("a.b.c", "a.b");
    /* a pattern more specific than the prefix still wins */
    add("a.b.c", true);
    assert_match("a.b.c", "a.b.c");
    assert_match("a.b.d", "a.b");
    /* and a prefix longer than a pattern's literal part wins */
    add("a.*.d", true);
    assert_match("a.b.d", "a.b");
    assert_match("a.x.d", "a.*.d");
}

static void test_equal_patterns_first_added_wins(void **state)
{
    (void)state;
    add("a.*.#", true);
    add("a.*", true);
    /* for a.b both grade literal, star: the first entry is kept */
    assert_match("a.b", "a.*.#");
}

static void test_many_tokens_do_not_explode(void **state)
{
    (void)state;
    add("#.a.#.a.#.a.#.a.#.b", true);
    char addr[400];
    size_t n = 0;
    for (int i = 0; i < 150; i++)
        n += (size_t)snprintf(addr + n, sizeof addr - n, "a.");
    addr[n - 1] = '\0';
    assert_match(addr, NULL); /* no final b: the memo keeps this fast */
    addr[n - 2] = 'b';
    assert_match(addr, "#.a.#.a.#.a.#.a.#.b");
}

/* ---- through the core ----------------------------------------------------- */

static void configure(jn_core_t *core)
{
    assert_int_equal(jn_core_add_address_config(core, "mc", false, JN_DIST_MULTICAST), 0);
    assert_int_equal(jn_core_add_address_config(core, "mc.any", false, JN_DIST_CLOSEST), 0);
    assert_int_equal(jn_core_add_address_config(core, "*.fan.#", true, JN_DIST_MULTICAST), 0);
    assert_int_equal(jn_core_add_address_config(core, "closed", false, JN_DIST_UNAVAILABLE), 0);
    assert_int_equal(jn_core_add_address_config(core, "mc", false, JN_DIST_CLOSEST), JN_EEXIST);
}

static int setup_configured(void **state)
{
    (void)state;
    core_up(JN_DIST_BALANCED, configure);
    assert_int_equal(jn_core_add_address_config(h.core, "late", false, JN_DIST_CLOSEST), JN_EINVAL);
    return 0;
}

/* Send one delivery to address with two consumers with credit; returns how
 * many of them got a copy. */
static int copies_for(const char *address)
{
    fake_conn_t *p = open_conn("producer");
    fake_conn_t *c1 = open_conn("c1");
    fake_conn_t *c2 = open_conn("c2");
    jn_core_link_t *l1 = attach_consumer(c1, address, 10);
    jn_core_link_t *l2 = attach_consumer(c2, address, 10);
    jn_core_link_t *in = attach_producer(p, address, 10);
    expect_and_free(p, JN_WORK_LINK_CREDIT);
    send_msg(p, in, true);
    core_sync();
    take_all(c1);
    take_all(c2);
    int n = (c1->head != c1->tail) + (c2->head != c2->tail);
    discard_work(p); /* the credit that came back */
    detach(p, in);
    jn_core_link_detached_IO(l1);
    jn_core_link_detached_IO(l2);
    return n;
}

static void test_configured_prefix_makes_address_multicast(void **state)
{
    (void)state;
    assert_int_equal(copies_for("mc.x"), 2);
}

static void test_longest_configured_prefix_decides(void **state)
{
    (void)state;
    assert_int_equal(copies_for("mc.any.x"), 1); /* mc.any: closest */
}

static void test_configured_pattern_decides(void **state)
{
    (void)state;
    assert_int_equal(copies_for("x.fan.y.z"), 2);
}

static void test_unconfigured_address_gets_default_distribution(void **state)
{
    (void)state;
    assert_int_equal(copies_for("other.queue"), 1); /* balanced */
    assert_int_equal(copies_for("fan.x"), 1);       /* "*.fan.#" needs a token first */
}

static void test_attach_to_unavailable_address_is_refused(void **state)
{
    (void)state;
    fake_conn_t *c = open_conn("client");
    jn_link_info_t info = {.dir = JN_LINK_INCOMING, .name = "s", .address = "closed.q"};
    static int io;
    jn_core_link_t *in = jn_core_link_attached_IO(c->conn, &io, &info);
    jn_work_t *w = expect_work(c, JN_WORK_LINK_CLOSE);
    assert_ptr_equal(w->link, in);
    assert_string_equal(w->condition, "amqp:not-found");
    assert_non_null(w->description);
    jn_work_free(w);
    info.dir = JN_LINK_OUTGOING;
    jn_core_link_t *out = jn_core_link_attached_IO(c->conn, &io, &info);
    w = expect_work(c, JN_WORK_LINK_CLOSE);
    assert_ptr_equal(w->link, out);
    assert_string_equal(w->condition, "amqp:not-found");
    jn_work_free(w);
    /* no credit for the refused sender, and detaching works as usual */
    expect_no_work(c);
    detach(c, in);
    detach(c, out);
    jn_core_stats_t st;
    jn_core_get_stats(h.core, &st);
    assert_int_equal(st.addresses, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_prefix_matches_itself_and_at_separators_only,
                                        matcher_setup, matcher_teardown),
        cmocka_unit_test_setup_teardown(test_separators_at_the_end_are_dropped, matcher_setup,
                                        matcher_teardown),
        cmocka_unit_test_setup_teardown(test_longest_prefix_wins, matcher_setup, matcher_teardown),
        cmocka_unit_test_setup_teardown(test_pattern_star_matches_exactly_one_token, matcher_setup,
                                        matcher_teardown),
        cmocka_unit_test_setup_teardown(test_pattern_hash_matches_zero_or_more_tokens,
                                        matcher_setup, matcher_teardown),
        cmocka_unit_test_setup_teardown(test_pattern_hash_backtracks, matcher_setup,
                                        matcher_teardown),
        cmocka_unit_test_setup_teardown(test_runs_of_hash_are_collapsed_and_duplicates_refused,
                                        matcher_setup, matcher_teardown),
        cmocka_unit_test_setup_teardown(test_most_specific_match_wins_token_by_token, matcher_setup,
                                        matcher_teardown),
        cmocka_unit_test_setup_teardown(test_hash_matching_nothing_loses_to_literal_or_star,
                                        matcher_setup, matcher_teardown),
        cmocka_unit_test_setup_teardown(test_prefix_beats_pattern_of_same_specificity,
                                        matcher_setup, matcher_teardown),
        cmocka_unit_test_setup_teardown(test_equal_patterns_first_added_wins, matcher_setup,
                                        matcher_teardown),
        cmocka_unit_test_setup_teardown(test_many_tokens_do_not_explode, matcher_setup,
                                        matcher_teardown),
        cmocka_unit_test_setup_teardown(test_configured_prefix_makes_address_multicast,
                                        setup_configured, teardown_core),
        cmocka_unit_test_setup_teardown(test_longest_configured_prefix_decides, setup_configured,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(test_configured_pattern_decides, setup_configured,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(test_unconfigured_address_gets_default_distribution,
                                        setup_configured, teardown_core),
        cmocka_unit_test_setup_teardown(test_attach_to_unavailable_address_is_refused,
                                        setup_configured, teardown_core),
    };
    return RUN_CORE_TESTS(tests);
}
