/*
 * test_config_examples.c — example configurations as written for 1.19
 * (a standalone router, an interior pair, an edge router, a JSON file),
 * loaded from tests/unit/data/config/, give the expected entities and
 * values.
 */
#include <junction/config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* The data directory, next to this source file. */
static const char *data_path(const char *file)
{
    static char path[4096];
    const char *src = __FILE__;
    const char *slash = strrchr(src, '/');
    int dir = slash ? (int)(slash - src) : 1;
    snprintf(path, sizeof(path), "%.*s/data/config/%s", dir, slash ? src : ".", file);
    return path;
}

static jn_config_t *load(const char *file)
{
    jn_config_t *cfg = NULL;
    char err[JN_CONFIG_ERROR_MAX];
    int rc = jn_config_load_file(data_path(file), &cfg, err, sizeof(err));
    if (rc != 0)
        fail_msg("loading %s failed (%d): %s", file, rc, err);
    return cfg;
}

/* The n-th (from 0) entity of the type called type. */
static const jn_config_entity_t *nth(const jn_config_t *cfg, const char *type, int n)
{
    const jn_schema_type_t *t = jn_schema_type_find(type);
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++) {
        const jn_config_entity_t *e = jn_config_entity_at(cfg, i);
        if (jn_config_entity_type(e) == t && n-- == 0)
            return e;
    }
    fail_msg("no %s entity number %d", type, n);
    return NULL;
}

static size_t count_of(const jn_config_t *cfg, const char *type)
{
    size_t n = 0;
    const jn_schema_type_t *t = jn_schema_type_find(type);
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++)
        n += jn_config_entity_type(jn_config_entity_at(cfg, i)) == t;
    return n;
}

static int64_t int_of(const jn_config_entity_t *e, const char *attr)
{
    int64_t v = -12345;
    int rc = jn_config_entity_int(e, attr, &v);
    if (rc != 0)
        fail_msg("attribute %s: %d", attr, rc);
    return v;
}

static bool bool_of(const jn_config_entity_t *e, const char *attr)
{
    bool v = false;
    int rc = jn_config_entity_bool(e, attr, &v);
    if (rc != 0)
        fail_msg("attribute %s: %d", attr, rc);
    return v;
}

static void standalone_example_entities_and_values(void **state)
{
    (void)state;
    jn_config_t *cfg = load("standalone.conf");
    assert_int_equal(jn_config_entity_count(cfg), 6); /* + the added policy */
    assert_int_equal(jn_config_warning_count(cfg), 0);

    const jn_config_entity_t *router = nth(cfg, "router", 0);
    assert_int_equal(jn_config_entity_line(router), 2);
    assert_string_equal(jn_config_entity_string(router, "mode"), "standalone");
    assert_string_equal(jn_config_entity_string(router, "id"), "solo-1");
    assert_int_equal(int_of(router, "workerThreads"), 2);
    assert_string_equal(jn_config_entity_identity(router), "router/solo-1");

    const jn_config_entity_t *l = nth(cfg, "listener", 0);
    assert_string_equal(jn_config_entity_string(l, "host"), "0.0.0.0");
    assert_string_equal(jn_config_entity_string(l, "port"), "5672");
    assert_false(bool_of(l, "authenticatePeer"));
    assert_string_equal(jn_config_entity_string(l, "saslMechanisms"), "ANONYMOUS");
    assert_string_equal(jn_config_entity_string(l, "role"), "normal"); /* default */
    assert_int_equal(int_of(l, "maxFrameSize"), 16384);
    assert_string_equal(jn_config_entity_identity(l), "listener/0.0.0.0:5672");
    assert_string_equal(jn_config_entity_name(l), "listener/0.0.0.0:5672");

    const jn_config_entity_t *a0 = nth(cfg, "address", 0), *a1 = nth(cfg, "address", 1);
    assert_string_equal(jn_config_entity_string(a0, "prefix"), "events");
    assert_string_equal(jn_config_entity_string(a0, "distribution"), "multicast");
    assert_null(jn_config_entity_get(a0, "pattern"));
    assert_string_equal(jn_config_entity_string(a1, "pattern"), "jobs.*.urgent");
    assert_string_equal(jn_config_entity_string(a1, "distribution"), "balanced");
    assert_int_equal(int_of(a1, "priority"), 8);
    assert_string_equal(jn_config_entity_identity(a0), "address/0");
    assert_string_equal(jn_config_entity_identity(a1), "address/1");

    const jn_config_entity_t *log = nth(cfg, "log", 0);
    assert_string_equal(jn_config_entity_string(log, "module"), "DEFAULT");
    assert_string_equal(jn_config_entity_string(log, "enable"), "notice+");
    assert_true(bool_of(log, "includeTimestamp"));
    assert_false(bool_of(log, "includeSource")); /* DEFAULT module's own default */
    assert_string_equal(jn_config_entity_string(log, "outputFile"), "stderr");
    assert_string_equal(jn_config_entity_identity(log), "log/DEFAULT");

    assert_int_equal(jn_config_entity_line(nth(cfg, "policy", 0)), 0);
    jn_config_free(cfg);
}

static void east_example_entities_and_values(void **state)
{
    (void)state;
    jn_config_t *cfg = load("east.conf");
    assert_int_equal(count_of(cfg, "listener"), 2);
    const jn_config_entity_t *router = nth(cfg, "router", 0);
    assert_string_equal(jn_config_entity_string(router, "mode"), "interior");
    assert_string_equal(jn_config_entity_string(router, "id"), "east");

    /* "ssl-profile" loads as an sslProfile entity. */
    const jn_config_entity_t *ssl = nth(cfg, "sslProfile", 0);
    assert_string_equal(jn_config_entity_section(ssl), "ssl-profile");
    assert_string_equal(jn_config_entity_name(ssl), "mesh-tls");
    assert_string_equal(jn_config_entity_identity(ssl), "sslProfile/mesh-tls");
    assert_string_equal(jn_config_entity_string(ssl, "caCertFile"), "/etc/qdr/certs/ca.pem");
    assert_string_equal(jn_config_entity_string(ssl, "privateKeyFile"),
                        "/etc/qdr/certs/east-key.pem");
    assert_string_equal(jn_config_entity_string(ssl, "password"),
                        "file:/etc/qdr/certs/east-key.pass");

    const jn_config_entity_t *mesh = nth(cfg, "listener", 0);
    assert_string_equal(jn_config_entity_name(mesh), "mesh-in");
    assert_string_equal(jn_config_entity_string(mesh, "role"), "inter-router");
    assert_string_equal(jn_config_entity_string(mesh, "port"), "55672");
    assert_string_equal(jn_config_entity_string(mesh, "sslProfile"), "mesh-tls");
    assert_true(bool_of(mesh, "authenticatePeer"));
    assert_true(bool_of(mesh, "requireSsl"));
    assert_string_equal(jn_config_entity_string(mesh, "saslMechanisms"), "EXTERNAL");
    assert_int_equal(int_of(mesh, "cost"), 1);
    assert_string_equal(jn_config_entity_identity(mesh), "listener/0.0.0.0:55672:mesh-in");

    const jn_config_entity_t *clients = nth(cfg, "listener", 1);
    assert_string_equal(jn_config_entity_name(clients), "clients");
    assert_false(bool_of(clients, "authenticatePeer"));

    const jn_config_entity_t *addr = nth(cfg, "address", 0);
    assert_string_equal(jn_config_entity_string(addr, "prefix"), "broadcast");
    assert_string_equal(jn_config_entity_string(addr, "distribution"), "multicast");
    jn_config_free(cfg);
}

static void west_example_entities_and_values(void **state)
{
    (void)state;
    jn_config_t *cfg = load("west.conf");
    const jn_config_entity_t *ssl = nth(cfg, "sslProfile", 0);
    assert_string_equal(jn_config_entity_section(ssl), "sslProfile");
    assert_string_equal(jn_config_entity_string(ssl, "password"), "env:WEST_KEY_PASSWORD");

    const jn_config_entity_t *c = nth(cfg, "connector", 0);
    assert_string_equal(jn_config_entity_name(c), "to-east");
    assert_string_equal(jn_config_entity_string(c, "host"), "east.example.net");
    assert_string_equal(jn_config_entity_string(c, "port"), "55672");
    assert_string_equal(jn_config_entity_string(c, "role"), "inter-router");
    assert_int_equal(int_of(c, "cost"), 2); /* trailing comment cut */
    assert_int_equal(jn_config_value_line(jn_config_entity_get(c, "cost")), 19);
    assert_true(bool_of(c, "verifyHostname"));
    assert_string_equal(jn_config_entity_identity(c), "connector/east.example.net:55672:to-east");

    const jn_config_entity_t *l = nth(cfg, "listener", 0);
    assert_string_equal(jn_config_entity_string(l, "host"), ""); /* default: all interfaces */
    assert_true(jn_config_value_is_default(jn_config_entity_get(l, "host")));
    assert_string_equal(jn_config_entity_identity(l), "listener/:5672:clients");
    jn_config_free(cfg);
}

static void edge_example_entities_and_values(void **state)
{
    (void)state;
    jn_config_t *cfg = load("edge.conf");
    assert_string_equal(jn_config_entity_string(nth(cfg, "router", 0), "mode"), "edge");
    assert_int_equal(count_of(cfg, "connector"), 2);
    for (int i = 0; i < 2; i++) {
        const jn_config_entity_t *c = nth(cfg, "connector", i);
        assert_string_equal(jn_config_entity_string(c, "role"), "edge");
        assert_string_equal(jn_config_entity_string(c, "port"), "45672");
    }
    assert_string_equal(jn_config_entity_string(nth(cfg, "connector", 1), "host"),
                        "west.example.net");
    const jn_config_entity_t *l0 = nth(cfg, "listener", 0), *l1 = nth(cfg, "listener", 1);
    assert_string_equal(jn_config_entity_string(l0, "port"), "amqp");
    assert_string_equal(jn_config_entity_identity(l0), "listener/127.0.0.1:amqp");
    assert_string_equal(jn_config_entity_string(l1, "role"), "route-container");
    assert_int_equal(count_of(cfg, "linkRoute"), 2);
    const jn_config_entity_t *in = nth(cfg, "linkRoute", 0), *out = nth(cfg, "linkRoute", 1);
    assert_string_equal(jn_config_entity_string(in, "pattern"), "shop.queues.#"); /* '#' kept */
    assert_string_equal(jn_config_entity_string(in, "direction"), "in");
    assert_string_equal(jn_config_entity_string(out, "direction"), "out");
    assert_string_equal(jn_config_entity_string(out, "connection"), "broker");
    assert_string_equal(jn_config_entity_string(out, "distribution"), "linkBalanced");
    assert_string_equal(jn_config_entity_identity(out), "linkRoute/1");
    jn_config_free(cfg);
}

static void json_example_equivalent_to_conf(void **state)
{
    (void)state;
    jn_config_t *cfg = load("small.json");
    const jn_config_entity_t *router = nth(cfg, "router", 0);
    assert_string_equal(jn_config_entity_string(router, "mode"), "interior");
    assert_string_equal(jn_config_entity_string(router, "id"), "R1");
    const jn_config_entity_t *l = nth(cfg, "listener", 0);
    assert_string_equal(jn_config_entity_string(l, "port"), "5672"); /* JSON number -> text */
    assert_false(bool_of(l, "authenticatePeer"));
    assert_int_equal(jn_config_entity_line(l), 4);
    assert_int_equal(jn_config_entity_count(cfg), 3);
    jn_config_free(cfg);
}

static void missing_file_is_enoent_with_message(void **state)
{
    (void)state;
    jn_config_t *cfg = (jn_config_t *)&cfg;
    char err[JN_CONFIG_ERROR_MAX];
    assert_int_equal(jn_config_load_file("/nonexistent/qdrouterd.conf", &cfg, err, sizeof(err)),
                     JN_ENOENT);
    assert_null(cfg);
    assert_string_equal(err, "/nonexistent/qdrouterd.conf: configuration file could not be "
                             "opened: No such file or directory");
}

static void empty_file_is_enoent_with_message(void **state)
{
    (void)state;
    jn_config_t *cfg = NULL;
    char err[JN_CONFIG_ERROR_MAX];
    const char *path = data_path("empty.conf");
    assert_int_equal(jn_config_load_file(path, &cfg, err, sizeof(err)), JN_ENOENT);
    assert_null(cfg);
    char want[4200];
    snprintf(want, sizeof(want), "%s: configuration file was empty", path);
    assert_string_equal(err, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(standalone_example_entities_and_values),
        cmocka_unit_test(east_example_entities_and_values),
        cmocka_unit_test(west_example_entities_and_values),
        cmocka_unit_test(edge_example_entities_and_values),
        cmocka_unit_test(json_example_equivalent_to_conf),
        cmocka_unit_test(missing_file_is_enoent_with_message),
        cmocka_unit_test(empty_file_is_enoent_with_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
