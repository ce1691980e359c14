/*
 * test_core_exchange.c — exchanges and bindings in the core
 * (router/core/exchange.c, docs/design.md "Exchanges and bindings")
 * against the fake I/O layer: binding keys matched against the subject
 * (amqp: '.' words, '*' one word, '#' zero or more; mqtt: '/' levels, '+'
 * one, '#' zero or more at the end), a matching next hop gets one
 * pre-settled copy and the sender is told accepted, no match is released;
 * two bindings to one next hop give one copy; the alternate takes what
 * nothing matched; a consumer of the exchange's own address gets a copy
 * first (1.19); bad keys and unknown exchanges are refused.
 */
#include "test_core_util.h"

#include <junction/core_view.h>

/* ---- calls into the core thread ------------------------------------------ */

typedef struct xcall {
    jn_exchange_config_t ex;
    jn_binding_config_t b;
    const char *name;
    int rc;
    const char *why;
} xcall_t;

static void call_exchange_add(void *arg, jn_core_t *core)
{
    xcall_t *c = arg;
    c->rc = jn_core_exchange_add_CT(core, &c->ex, &c->why);
}

static void call_binding_add(void *arg, jn_core_t *core)
{
    xcall_t *c = arg;
    c->rc = jn_core_binding_add_CT(core, &c->b, &c->why);
}

static void call_binding_remove(void *arg, jn_core_t *core)
{
    xcall_t *c = arg;
    c->rc = jn_core_binding_remove_CT(core, c->name);
}

static int exchange_add(const char *name, const char *address, const char *alternate, bool mqtt,
                        const char **why)
{
    xcall_t c = {.ex = {.name = name, .address = address, .alternate = alternate, .mqtt = mqtt}};
    assert_int_equal(jn_core_call(h.core, call_exchange_add, &c), 0);
    core_sync();
    if (why)
        *why = c.why;
    return c.rc;
}

static int binding_add(const char *name, const char *exchange, const char *key,
                       const char *next_hop, const char **why)
{
    xcall_t c = {.b = {.name = name, .exchange = exchange, .key = key, .next_hop = next_hop}};
    assert_int_equal(jn_core_call(h.core, call_binding_add, &c), 0);
    core_sync();
    if (why)
        *why = c.why;
    return c.rc;
}

static void binding_remove(const char *name)
{
    xcall_t c = {.name = name};
    assert_int_equal(jn_core_call(h.core, call_binding_remove, &c), 0);
    core_sync();
    assert_int_equal(c.rc, 0);
}

/* ---- messages with a subject ---------------------------------------------- */

static jn_delivery_t *send_subject(fake_conn_t *fc, jn_core_link_t *link, const char *subject)
{
    static uint32_t tag;
    tag++;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_descriptor_ulong(&e, 0x73);
    jn_enc_list_begin(&e);
    jn_enc_null(&e); /* message-id */
    jn_enc_null(&e); /* user-id */
    jn_enc_null(&e); /* to */
    if (subject)
        jn_enc_cstring(&e, subject);
    else
        jn_enc_null(&e);
    jn_enc_list_end(&e);
    jn_enc_descriptor_ulong(&e, 0x77);
    jn_enc_cstring(&e, "body");
    assert_int_equal(jn_encoder_error(&e), 0);
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    assert_int_equal(jn_encoder_to_buffers(&e, &list), 0);
    jn_encoder_free(&e);
    jn_message_t *m = jn_message_new();
    assert_non_null(m);
    jn_message_set_annotation_policy(m, false);
    assert_int_equal(jn_message_append_buffers(m, &list), 0);
    jn_message_set_complete(m);
    assert_int_equal(jn_message_parse(m, JN_DEPTH_PROPERTIES), 0);
    jn_delivery_t *d = jn_delivery_new_IO(link, m, false, &tag, sizeof tag);
    assert_non_null(d);
    jn_core_delivery_arrived_IO(d);
    return hold(d);
}

/* Does subject reach next hop "hit" through binding key `key`? */
static bool reaches(fake_conn_t *client, jn_core_link_t *producer, fake_conn_t *consumer,
                    const char *key, const char *subject)
{
    const char *why = NULL;
    int rc = binding_add("case", "ex", key, "hit", &why);
    if (rc != 0)
        fail_msg("binding '%s' refused: %s", key, why);
    jn_delivery_t *d = send_subject(client, producer, subject);
    core_sync();
    take_all(consumer);
    bool hit = consumer->head != consumer->tail;
    if (hit) {
        jn_delivery_t *copy = expect_send(consumer);
        assert_true(jn_delivery_presettled(copy)); /* an exchange's copies are pre-settled */
        expect_update(client, d, JN_DISP_ACCEPTED, true);
    } else {
        expect_update(client, d, JN_DISP_RELEASED, true);
    }
    binding_remove("case");
    return hit;
}

typedef struct {
    const char *key, *subject;
    bool hit;
} match_case_t;

static void run_cases(bool mqtt, const match_case_t *cases, size_t n)
{
    fake_conn_t *client = open_conn("client");
    fake_conn_t *consumer = open_conn("consumer");
    assert_int_equal(exchange_add("ex", "ex", NULL, mqtt, NULL), 0);
    attach_consumer(consumer, "hit", 1000);
    jn_core_link_t *producer = attach_producer(client, "ex", 250);
    for (size_t i = 0; i < n; i++)
        if (reaches(client, producer, consumer, cases[i].key, cases[i].subject) != cases[i].hit)
            fail_msg("%s key '%s' subject '%s': expected %s", mqtt ? "mqtt" : "amqp",
                     cases[i].key, cases[i].subject ? cases[i].subject : "(none)",
                     cases[i].hit ? "a match" : "no match");
}

static void test_amqp_matching(void **state)
{
    (void)state;
    static const match_case_t cases[] = {
        {"a.b.c", "a.b.c", true},   {"a.b.c", "a.b", false},     {"a.b", "a.b.c", false},
        {"a.*.c", "a.x.c", true},   {"a.*.c", "a.c", false},     {"a.*", "a", false},
        {"a.*", "a.b.c", false},    {"*", "x", true},            {"*", "x.y", false},
        {"a.#", "a", true},         {"a.#", "a.b.c.d", true},    {"a.#", "b.a", false},
        {"#.c", "c", true},         {"#.c", "a.b.c", true},      {"#.c", "a.b.c.d", false},
        {"a.#.c", "a.c", true},     {"a.#.c", "a.b.x.c", true},  {"a.#.c", "a.b", false},
        {"#", "anything.at.all", true}, {"#", "", true},         {"#.#", "x", true},
        {"*.#.*", "a.b", true},     {"*.#.*", "a", false},       {"a/b", "a/b", true},
        {"a.b", "a", false},        {"#", NULL, false},          {"x", "X", false},
    };
    run_cases(false, cases, sizeof cases / sizeof cases[0]);
}

static void test_mqtt_matching(void **state)
{
    (void)state;
    static const match_case_t cases[] = {
        {"sport/+/score", "sport/tennis/score", true},
        {"sport/+/score", "sport/score", false},
        {"sport/#", "sport", true},
        {"sport/#", "sport/a/b/c", true},
        {"+", "news", true},
        {"+", "a/b", false},
        {"+/b", "/b", true}, /* an empty first level */
        {"a/+", "a/", true},
        {"#", "a/b", true},
        {"a.b", "a.b", true}, /* '.' is no separator here */
        {"a/*", "a/x", false}, /* '*' is no wildcard here */
    };
    run_cases(true, cases, sizeof cases / sizeof cases[0]);
}

static void test_one_copy_per_next_hop_and_alternate(void **state)
{
    (void)state;
    fake_conn_t *client = open_conn("client");
    fake_conn_t *c1 = open_conn("c1");
    fake_conn_t *c2 = open_conn("c2");
    fake_conn_t *alt = open_conn("alt");
    assert_int_equal(exchange_add("ex", "ex", "other", false, NULL), 0);
    assert_int_equal(binding_add("b1", "ex", "a.#", "q1", NULL), 0);
    assert_int_equal(binding_add("b2", "ex", "#.c", "q1", NULL), 0);
    assert_int_equal(binding_add("b3", "ex", "a.b.c", "q2", NULL), 0);
    attach_consumer(c1, "q1", 100);
    attach_consumer(c2, "q2", 100);
    attach_consumer(alt, "other", 100);
    jn_core_link_t *producer = attach_producer(client, "ex", 250);
    /* three bindings match, two of them to q1: one copy each for q1, q2 */
    jn_delivery_t *d = send_subject(client, producer, "a.b.c");
    expect_send(c1);
    expect_send(c2);
    expect_update(client, d, JN_DISP_ACCEPTED, true);
    core_sync();
    expect_no_work(c1);
    expect_no_work(c2);
    expect_no_work(alt);
    /* nothing matches: the alternate */
    d = send_subject(client, producer, "z");
    expect_send(alt);
    expect_update(client, d, JN_DISP_ACCEPTED, true);
    core_sync();
    expect_no_work(c1);
    expect_no_work(c2);
}

/* A consumer of the exchange's own address gets a copy first, as in
 * 1.19; the alternate is then not used. */
static void test_own_consumer_first(void **state)
{
    (void)state;
    fake_conn_t *client = open_conn("client");
    fake_conn_t *own = open_conn("own");
    fake_conn_t *c1 = open_conn("c1");
    fake_conn_t *alt = open_conn("alt");
    assert_int_equal(exchange_add("ex", "ex", "other", false, NULL), 0);
    assert_int_equal(binding_add("b1", "ex", "k", "q1", NULL), 0);
    attach_consumer(own, "ex", 100);
    attach_consumer(c1, "q1", 100);
    attach_consumer(alt, "other", 100);
    jn_core_link_t *producer = attach_producer(client, "ex", 250);
    jn_delivery_t *d = send_subject(client, producer, "k");
    assert_true(jn_delivery_presettled(expect_send(own)));
    expect_send(c1);
    expect_update(client, d, JN_DISP_ACCEPTED, true);
    d = send_subject(client, producer, "z");
    expect_send(own);
    expect_update(client, d, JN_DISP_ACCEPTED, true);
    core_sync();
    expect_no_work(alt);
    expect_no_work(c1);
}

static void test_refusals(void **state)
{
    (void)state;
    const char *why = NULL;
    assert_int_equal(binding_add("b", "none", "k", "q", &why), JN_ENOENT);
    assert_string_equal(why, "Named exchange does not exist");
    assert_int_equal(exchange_add("m", "m", NULL, true, NULL), 0);
    assert_int_equal(exchange_add("m", "m2", NULL, false, &why), JN_EEXIST);
    assert_string_equal(why, "duplicate exchange name");
    assert_int_equal(exchange_add("m2", "m", NULL, false, &why), JN_EEXIST);
    assert_string_equal(why, "duplicate exchange address");
    static const char *const bad[] = {"a/#/b", "a+/b", "a/b#", "#/a"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(binding_add("b", "m", bad[i], "q", &why), JN_EINVAL);
        assert_string_equal(why, "The binding key pattern is invalid");
    }
    assert_int_equal(binding_add("b", "m", "a/+/#", "q", NULL), 0);
    assert_int_equal(binding_add("b", "m", "x", "q", &why), JN_EEXIST);
    assert_string_equal(why, "Duplicate next hop name");
    assert_int_equal(binding_add("b2", "m", "a/+/#", "q", &why), JN_EEXIST);
    assert_string_equal(why, "Next hop for key already exists");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_amqp_matching, setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_mqtt_matching, setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_one_copy_per_next_hop_and_alternate, setup_balanced,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(test_own_consumer_first, setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_refusals, setup_balanced, teardown_core),
    };
    return run_core_tests("core_exchange", tests, sizeof tests / sizeof tests[0]);
}
