/*
 * test_config_json.c — the JSON form of the configuration file
 * (docs/protocol.md, "The configuration file"): chosen by the ".json" name, '#' lines dropped, names
 * normalised, JSON values converted as 1.19 converts them.
 */
#include <junction/config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static jn_config_t *load(const char *text)
{
    jn_config_t *cfg = NULL;
    char err[JN_CONFIG_ERROR_MAX];
    int rc = jn_config_load_string("t.json", text, strlen(text), &cfg, err, sizeof(err));
    if (rc != 0)
        fail_msg("load failed (%d): %s", rc, err);
    return cfg;
}

static void load_fails(const char *text, const char *want)
{
    jn_config_t *cfg = NULL;
    char err[JN_CONFIG_ERROR_MAX];
    assert_int_equal(jn_config_load_string("t.json", text, strlen(text), &cfg, err, sizeof(err)),
                     JN_EINVAL);
    assert_null(cfg);
    assert_string_equal(err, want);
}

static const jn_config_entity_t *first(const jn_config_t *cfg, const char *type)
{
    const jn_config_entity_t *e = jn_config_find(cfg, jn_schema_type_find(type));
    if (!e)
        fail_msg("no %s entity", type);
    return e;
}

static const char *str(const jn_config_t *cfg, const char *type, const char *attr)
{
    const char *s = jn_config_entity_string(first(cfg, type), attr);
    if (!s)
        fail_msg("%s has no %s", type, attr);
    return s;
}

static int64_t num(const jn_config_t *cfg, const char *type, const char *attr)
{
    int64_t v = -12345;
    if (jn_config_entity_int(first(cfg, type), attr, &v) != 0)
        fail_msg("%s has no integer %s", type, attr);
    return v;
}

static bool flag(const jn_config_t *cfg, const char *type, const char *attr)
{
    bool v = false;
    if (jn_config_entity_bool(first(cfg, type), attr, &v) != 0)
        fail_msg("%s has no boolean %s", type, attr);
    return v;
}

static void json_form_chosen_by_file_name(void **state)
{
    (void)state;
    const char *text = "[[\"router\", {\"id\": \"R1\"}]]";
    jn_config_t *cfg = load(text);
    assert_string_equal(str(cfg, "router", "id"), "R1");
    jn_config_free(cfg);
    char err[JN_CONFIG_ERROR_MAX];
    assert_int_equal(jn_config_load_string("t.conf", text, strlen(text), &cfg, err, sizeof(err)),
                     JN_EINVAL);
    assert_string_equal(err, "t.conf:1: invalid syntax: expected 'name {', 'name: value' or '}'");
}

static void hash_lines_removed_indented_too(void **state)
{
    (void)state;
    jn_config_t *cfg = load("# heading\n[\n    # indented comment\n"
                            "  [\"router\", {\"mode\": \"interior\",\n"
                            "      # between attributes\n"
                            "      \"id\": \"R1\"}]\n]\n");
    assert_string_equal(str(cfg, "router", "mode"), "interior");
    const jn_config_entity_t *r = first(cfg, "router");
    assert_int_equal(jn_config_entity_line(r), 4);
    assert_int_equal(jn_config_value_line(jn_config_entity_get(r, "id")), 6);
    jn_config_free(cfg);
}

static void names_normalised_as_in_conf_form(void **state)
{
    (void)state;
    jn_config_t *cfg = load("[[\"ssl-profile\", {\"name\": \"t\", \"key_file\": \"/k\"}],\n"
                            " [\"listener\", {\"authenticate-peer\": true, \"max_frame_size\": 999,"
                            " \"sslProfile\": \"t\"}]]");
    assert_string_equal(str(cfg, "sslProfile", "privateKeyFile"), "/k");
    assert_true(flag(cfg, "listener", "authenticatePeer"));
    assert_int_equal(num(cfg, "listener", "maxFrameSize"), 999);
    jn_config_free(cfg);
}

static void number_and_boolean_become_text_for_strings(void **state)
{
    (void)state;
    jn_config_t *cfg = load("[[\"listener\", {\"port\": 43217, \"host\": 1.5,"
                            " \"saslMechanisms\": true}],"
                            " [\"connector\", {\"port\": 1e20, \"host\": 100000.0}]]");
    assert_string_equal(str(cfg, "listener", "port"), "43217");
    assert_string_equal(str(cfg, "listener", "host"), "1.5");
    assert_string_equal(str(cfg, "listener", "saslMechanisms"), "True");
    assert_string_equal(str(cfg, "connector", "port"), "1e+20");
    assert_string_equal(str(cfg, "connector", "host"), "100000.0");
    jn_config_free(cfg);
}

static void boolean_from_non_string_by_truthiness(void **state)
{
    (void)state;
    jn_config_t *cfg = load("[[\"listener\", {\"authenticatePeer\": 1, \"requireSsl\": 0,"
                            " \"http\": [], \"websockets\": {\"a\": 1}, \"healthz\": \"off\","
                            " \"metrics\": 0.0}]]");
    assert_true(flag(cfg, "listener", "authenticatePeer"));
    assert_false(flag(cfg, "listener", "requireSsl"));
    assert_false(flag(cfg, "listener", "http"));
    assert_true(flag(cfg, "listener", "websockets"));
    assert_false(flag(cfg, "listener", "healthz"));
    assert_false(flag(cfg, "listener", "metrics"));
    jn_config_free(cfg);
}

static void integer_from_string_float_and_boolean(void **state)
{
    (void)state;
    jn_config_t *cfg = load("[[\"listener\", {\"cost\": \"+4\", \"maxFrameSize\": 2048.9,"
                            " \"linkCapacity\": true, \"maxSessions\": -7.5}]]");
    assert_int_equal(num(cfg, "listener", "cost"), 4);
    assert_int_equal(num(cfg, "listener", "maxFrameSize"), 2048);
    assert_int_equal(num(cfg, "listener", "linkCapacity"), 1);
    assert_int_equal(num(cfg, "listener", "maxSessions"), -7);
    jn_config_free(cfg);
}

static void enum_from_number_index(void **state)
{
    (void)state;
    jn_config_t *cfg = load("[[\"router\", {\"mode\": 1}], [\"listener\", {\"role\": -1}]]");
    assert_string_equal(str(cfg, "router", "mode"), "interior");
    assert_string_equal(str(cfg, "listener", "role"), "edge");
    jn_config_free(cfg);
}

static void null_value_counts_as_not_given(void **state)
{
    (void)state;
    jn_config_t *cfg = load("[[\"listener\", {\"port\": null, \"linkCapacity\": null}]]");
    assert_string_equal(str(cfg, "listener", "port"), "amqp");
    assert_true(jn_config_value_is_default(jn_config_entity_get(first(cfg, "listener"), "port")));
    assert_null(jn_config_entity_get(first(cfg, "listener"), "linkCapacity"));
    jn_config_free(cfg);
}

static void open_properties_native_map(void **state)
{
    (void)state;
    jn_config_t *cfg = load("[[\"listener\", {\"openProperties\": {\"a\": 1, \"b\": \"x\","
                            " \"c\": {\"d\": false}}}]]");
    const jn_config_value_t *p = jn_config_entity_get(first(cfg, "listener"), "openProperties");
    assert_int_equal(jn_config_value_count(p), 3);
    assert_int_equal(jn_config_value_int(jn_config_value_lookup(p, "a")), 1);
    const jn_config_value_t *c = jn_config_value_lookup(p, "c");
    assert_int_equal(jn_config_value_kind(jn_config_value_lookup(c, "d")), JN_CONFIG_BOOL);
    jn_config_free(cfg);
}

/* Python keeps the last of a repeated key without a word; a repeated key is
 * almost always a mistake, so it is refused. */
static void repeated_key_rejected(void **state)
{
    (void)state;
    load_fails("[[\"listener\", {\"port\": \"1\", \"host\": \"h\", \"port\": \"2\"}]]",
               "t.json:1: invalid JSON: duplicate key 'port' (first on line 1)");
}

static void empty_list_gives_default_singletons(void **state)
{
    (void)state;
    jn_config_t *cfg = load("[]\n");
    assert_int_equal(jn_config_entity_count(cfg), 2);
    assert_string_equal(str(cfg, "router", "mode"), "standalone");
    jn_config_free(cfg);
}

static void trailing_comment_is_invalid_json(void **state)
{
    (void)state;
    load_fails("[\n  [\"router\", {\"id\": \"R1\"}] # the router\n]\n",
               "t.json:2: invalid JSON: expected ',' or ']'");
}

static void malformed_json_reports_line(void **state)
{
    (void)state;
    load_fails("[\n  [\"listener\", {\"port\": 5672,}]\n]\n",
               "t.json:2: invalid JSON: trailing ',' before '}'");
    load_fails("[\n  [\"listener\", {\"host\": \"a\tb\"}]\n]\n",
               "t.json:2: invalid JSON: control character in string");
    load_fails("[[\"listener\", {\"host\": \"\\u0000\"}]]",
               "t.json:1: invalid JSON: the character \\u0000 is not allowed");
    load_fails("[[\"listener\", {\"host\": \"x\"}]] []",
               "t.json:1: invalid JSON: unexpected text after the end of the JSON value");
    load_fails("[\n  [\"router\", {\"id\": \"R1\"}\n\n",
               "t.json:2: invalid JSON: the list opened by '[' on this line is not closed (the "
               "text ends first)");
    load_fails("[[\"router\", {\"workerThreads\": 99999999999999999999}]]",
               "t.json:1: invalid JSON: integer out of range");
}

static void wrong_shapes_rejected(void **state)
{
    (void)state;
    load_fails("{\"router\": {}}",
               "t.json:1: the JSON form must be a list of [\"section\", {attributes}] pairs");
    load_fails("[\n [\"router\"]\n]",
               "t.json:2: each section must be a list of two items: [\"section\", {attributes}]");
    load_fails("[[1, {}]]", "t.json:1: a section name must be a string");
    load_fails("[[\"router\", [1]]]", "t.json:1: the attributes of section 'router' must be a map");
}

static void values_of_wrong_kind_rejected(void **state)
{
    (void)state;
    load_fails("[[\"listener\", {\"host\": [\"a\"]}]]",
               "t.json:1: listener attribute 'host': expected text, not a list");
    load_fails("[[\"listener\", {\"cost\": {}}]]",
               "t.json:1: listener attribute 'cost': a map is not an integer");
    load_fails("[[\"listener\", {\"openProperties\": \"x\"}]]",
               "t.json:1: listener attribute 'openProperties': expected a map, not 'x'");
    load_fails("[[\"listener\", {\"openProperties\": {\"caf\\u00e9\": 1}}]]",
               "t.json:1: listener attribute 'openProperties': key 'caf\xc3\xa9' is not ASCII");
    load_fails("[[\"router\", {\"mode\": 3}]]",
               "t.json:1: router attribute 'mode': '3' is not one of standalone, interior, edge");
    load_fails("[[\"listener\", {\"authenticatePeer\": \"1\"}]]",
               "t.json:1: listener attribute 'authenticatePeer': '1' is not a boolean (use "
               "yes/no, true/false or on/off)");
}

static void messages_stay_on_one_line(void **state)
{
    (void)state;
    load_fails("[[\"listener\", {\"bad\\nname\": 1}]]",
               "t.json:1: unknown attribute 'bad?name' in section 'listener'");
    load_fails("[[\"new\\nline\", {}]]", "t.json:1: unknown section 'new?line' (no such entity "
                                         "type 'org.apache.qpid.dispatch.new?line')");
    load_fails("[[\"listener\", {\"openProperties\": {\"\\u00e9\\t\": 1}}]]",
               "t.json:1: listener attribute 'openProperties': key '\xc3\xa9?' is not ASCII");
}

/* A JSON object of strings from a file (sslProfile uidNameMappingFile):
 * escapes (\u included) read as in the JSON form, errors with FILE:LINE. */
static void string_map_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/jn-strmap-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/m.json", dir);
    static const struct {
        const char *text;
        int rc;
        const char *want; /* error after "PATH", or the value of "CN=a" */
    } cases[] = {
        {"{\"CN=a\": \"caf\\u00e9 \\\"a\\\"\", \"x\": \"y\"}\n", 0, "caf\xc3\xa9 \"a\""},
        {"{}", 0, NULL},
        {"{\n\"CN=a\": 3}\n", JN_EINVAL, ":2: the value of 'CN=a' is not a string"},
        {"[\"a\"]\n", JN_EINVAL, ":1: uidNameMappingFile is not a JSON object"},
        {"{\"a\": \"b\",\n\"a\": \"c\"}", JN_EINVAL, ":2: invalid JSON: "},
        {"{\"a\": \"b\"\n", JN_EINVAL, ":1: invalid JSON: "},
        {"{\"a\": \"\\u0000\"}", JN_EINVAL, ":1: invalid JSON: "},
        {"", JN_EINVAL, ": uidNameMappingFile was empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(cases[i].text, f);
        fclose(f);
        jn_config_strmap_t m;
        char err[JN_CONFIG_ERROR_MAX] = "";
        int rc = jn_config_load_string_map(path, "uidNameMappingFile", &m, err, sizeof err);
        if (rc != cases[i].rc)
            fail_msg("case %zu: rc %d (%s)", i, rc, err);
        if (rc == 0) {
            if (cases[i].want) {
                assert_int_equal(m.count, 2);
                assert_string_equal(m.keys[0], "CN=a");
                assert_string_equal(m.values[0], cases[i].want);
            } else {
                assert_int_equal(m.count, 0);
            }
            jn_config_strmap_clear(&m);
            continue;
        }
        assert_int_equal(m.count, 0);
        char want[256];
        snprintf(want, sizeof want, "%s%s", path, cases[i].want);
        if (strncmp(err, want, strlen(want)) != 0)
            fail_msg("case %zu: want '%s...' got '%s'", i, want, err);
    }
    unlink(path);
    jn_config_strmap_t m;
    char err[JN_CONFIG_ERROR_MAX] = "";
    assert_int_equal(jn_config_load_string_map(path, "uidNameMappingFile", &m, err, sizeof err),
                     JN_EINVAL);
    assert_non_null(strstr(err, "uidNameMappingFile could not be opened: No such file"));
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(json_form_chosen_by_file_name),
        cmocka_unit_test(hash_lines_removed_indented_too),
        cmocka_unit_test(names_normalised_as_in_conf_form),
        cmocka_unit_test(number_and_boolean_become_text_for_strings),
        cmocka_unit_test(boolean_from_non_string_by_truthiness),
        cmocka_unit_test(integer_from_string_float_and_boolean),
        cmocka_unit_test(enum_from_number_index),
        cmocka_unit_test(null_value_counts_as_not_given),
        cmocka_unit_test(open_properties_native_map),
        cmocka_unit_test(repeated_key_rejected),
        cmocka_unit_test(empty_list_gives_default_singletons),
        cmocka_unit_test(trailing_comment_is_invalid_json),
        cmocka_unit_test(malformed_json_reports_line),
        cmocka_unit_test(wrong_shapes_rejected),
        cmocka_unit_test(values_of_wrong_kind_rejected),
        cmocka_unit_test(messages_stay_on_one_line),
        cmocka_unit_test(string_map_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
