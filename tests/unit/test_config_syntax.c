/*
 * test_config_syntax.c — every syntax error of either form of the
 * configuration file stops the load with "FILE:LINE: what is wrong": the
 * line where the problem is seen, or for something left open (a section, a
 * JSON list, object or string) the line where it was opened. One test per
 * case; each asserts the exact message. Texts are loaded from memory under
 * the names "s.conf" and "s.json" (the suffix picks the form).
 */
#include <junction/config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* Loading len octets of text as name fails with JN_EINVAL and exactly want. */
static void fails_n(const char *name, const char *text, size_t len, const char *want)
{
    jn_config_t *cfg = (jn_config_t *)&cfg;
    char err[JN_CONFIG_ERROR_MAX];
    int rc = jn_config_load_string(name, text, len, &cfg, err, sizeof(err));
    if (rc != JN_EINVAL)
        fail_msg("expected JN_EINVAL, got %d (%s)", rc, rc == 0 ? "accepted" : err);
    assert_null(cfg);
    assert_string_equal(err, want);
}

static void conf_fails(const char *text, const char *want)
{
    fails_n("s.conf", text, strlen(text), want);
}

static void json_fails(const char *text, const char *want)
{
    fails_n("s.json", text, strlen(text), want);
}

/* ---- the conf form ---- */

static void conf_section_never_closed(void **state)
{
    (void)state;
    conf_fails("router {\n mode: standalone\n}\nlistener {\n host: 0.0.0.0\n port: 5672\n",
               "s.conf:4: section 'listener' is not closed");
    /* closed by nothing but the next section: seen there, the opening named */
    conf_fails("listener {\n port: 5672\naddress {\n prefix: a\n}\n",
               "s.conf:3: section 'address' cannot be opened inside 'listener' (line 1); is a "
               "'}' missing?");
}

static void conf_closing_brace_without_section(void **state)
{
    (void)state;
    conf_fails("router {\n mode: standalone\n}\n}\n", "s.conf:4: '}' without an open section");
    conf_fails("}\n", "s.conf:1: '}' without an open section");
}

static void conf_attribute_outside_section(void **state)
{
    (void)state;
    conf_fails("# a comment\n\nport: 5672\nlistener {\n}\n",
               "s.conf:3: attribute 'port' outside of any section");
}

static void conf_key_without_value(void **state)
{
    (void)state;
    conf_fails("router {\n id:\n}\n", "s.conf:2: invalid syntax: attribute 'id' has no value");
    conf_fails("router {\n id:   \t\n}\n", "s.conf:2: invalid syntax: attribute 'id' has no value");
}

static void conf_unterminated_quote_to_end(void **state)
{
    (void)state;
    /* the conf form has no multi-line values: the quote is seen on its line */
    conf_fails("router {\n id: R\n}\nlistener {\n host: a\n port: \"5672",
               "s.conf:6: invalid value of 'port': a '\"' may not appear in a value (do not "
               "quote values)");
}

static void conf_two_sections_on_one_line(void **state)
{
    (void)state;
    conf_fails("router {\n id: R\n} listener {\n port: 1\n}\n",
               "s.conf:3: invalid syntax: '}' must be alone on its line");
    conf_fails("router { } listener {\n port: 1\n}\n",
               "s.conf:1: invalid syntax: a section cannot be written on one line; put '{' last "
               "on the line and each attribute on its own line");
}

static void conf_unknown_section(void **state)
{
    (void)state;
    conf_fails("router {\n id: R\n}\nfrobnicator {\n x: 1\n}\n",
               "s.conf:4: unknown section 'frobnicator' (no such entity type "
               "'org.apache.qpid.dispatch.frobnicator')");
}

static void conf_crlf_lines_counted(void **state)
{
    (void)state;
    conf_fails("router {\r\n id: R\r\n}\r\nlistener {\r\n port: 5672\r\n bogus: 1\r\n}\r\n",
               "s.conf:6: unknown attribute 'bogus' in section 'listener'");
    /* a lone CR ends a line too */
    conf_fails("router {\r id: R\r}\r}\r", "s.conf:4: '}' without an open section");
}

static void conf_nul_byte(void **state)
{
    (void)state;
    static const char text[] = "router {\n id: R\0X\n}\n";
    fails_n("s.conf", text, sizeof text - 1, "s.conf:2: NUL byte in the file");
    /* in a comment too: the file is not text */
    static const char comment[] = "# a\0b\nrouter {\n}\n";
    fails_n("s.conf", comment, sizeof comment - 1, "s.conf:1: NUL byte in the file");
}

static void conf_invalid_utf8(void **state)
{
    (void)state;
    conf_fails("router {\n id: R\xc3\n}\n", "s.conf:2: invalid UTF-8 (octet 0xc3 at column 7)");
    conf_fails("# caf\xe9\nrouter {\n}\n", "s.conf:1: invalid UTF-8 (octet 0xe9 at column 6)");
    /* an overlong '/' and an encoded surrogate */
    conf_fails("router {\n id: \xc0\xaf\n}\n", "s.conf:2: invalid UTF-8 (octet 0xc0 at column 6)");
    conf_fails("router {\n id: \xed\xa0\x80\n}\n",
               "s.conf:2: invalid UTF-8 (octet 0xed at column 6)");
}

static void conf_valid_utf8_accepted(void **state)
{
    (void)state;
    const char *text = "# caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\nrouter {\n id: R\n}\n";
    jn_config_t *cfg = NULL;
    char err[JN_CONFIG_ERROR_MAX];
    int rc = jn_config_load_string("s.conf", text, strlen(text), &cfg, err, sizeof(err));
    if (rc != 0)
        fail_msg("load failed (%d): %s", rc, err);
    jn_config_free(cfg);
}

static void empty_file(void **state)
{
    (void)state;
    /* no line to name: the message 1.19 gives, and JN_ENOENT as documented */
    jn_config_t *cfg = NULL;
    char err[JN_CONFIG_ERROR_MAX];
    assert_int_equal(jn_config_load_string("s.conf", "", 0, &cfg, err, sizeof(err)), JN_ENOENT);
    assert_string_equal(err, "s.conf: configuration file was empty");
    assert_int_equal(jn_config_load_string("s.json", "", 0, &cfg, err, sizeof(err)), JN_ENOENT);
    assert_string_equal(err, "s.json: configuration file was empty");
    /* a JSON file of comments only has no value */
    json_fails("# nothing\n\n", "s.json:1: invalid JSON: unexpected end (expected a value)");
}

/* ---- the JSON form ---- */

static void json_trailing_comma_in_list(void **state)
{
    (void)state;
    json_fails("[\n [\"router\", {\"id\": \"R\"}],\n [\"listener\", {\"port\": [1, 2,]}]\n]\n",
               "s.json:3: invalid JSON: trailing ',' before ']'");
    json_fails("[\n [\"router\", {\"id\": \"R\"}],\n]\n",
               "s.json:2: invalid JSON: trailing ',' before ']'");
}

static void json_trailing_comma_in_object(void **state)
{
    (void)state;
    json_fails("[\n [\"router\", {\"id\": \"R\",\n }]\n]\n",
               "s.json:2: invalid JSON: trailing ',' before '}'");
}

static void json_duplicate_key(void **state)
{
    (void)state;
    json_fails(
        "[\n [\"router\", {\"id\": \"R\",\n   \"mode\": \"interior\",\n   \"id\": \"S\"}]\n]\n",
        "s.json:4: invalid JSON: duplicate key 'id' (first on line 2)");
    /* inside a nested map too */
    json_fails("[[\"listener\", {\"openProperties\": {\"a\": 1, \"a\": 2}}]]",
               "s.json:1: invalid JSON: duplicate key 'a' (first on line 1)");
    /* the same key in two objects is fine */
    jn_config_t *cfg = NULL;
    char err[JN_CONFIG_ERROR_MAX];
    const char *two = "[[\"listener\", {\"port\": \"1\"}], [\"listener\", {\"port\": \"2\"}]]";
    int rc = jn_config_load_string("s.json", two, strlen(two), &cfg, err, sizeof(err));
    if (rc != 0)
        fail_msg("load failed (%d): %s", rc, err);
    jn_config_free(cfg);
}

static void json_unterminated_string(void **state)
{
    (void)state;
    json_fails("[\n [\"router\", {\"id\": \"R",
               "s.json:2: invalid JSON: unterminated string (the text ends first)");
    json_fails("[\n [\"router\", {\"id\": \"R\n\n]", "s.json:2: invalid JSON: unterminated string");
}

static void json_unterminated_list(void **state)
{
    (void)state;
    json_fails("[\n [\"router\", {\"id\": \"R\"}],\n [\"listener\", {\"port\": \"1\"}]\n",
               "s.json:1: invalid JSON: the list opened by '[' on this line is not closed (the "
               "text ends first)");
    json_fails("[\n [\"router\", {\"id\": \"R\"}],\n [\"listener\",\n\n",
               "s.json:3: invalid JSON: the list opened by '[' on this line is not closed (the "
               "text ends first)");
}

static void json_unterminated_object(void **state)
{
    (void)state;
    json_fails("[\n [\"router\", {\n   \"id\": \"R\"\n\n",
               "s.json:2: invalid JSON: the object opened by '{' on this line is not closed (the "
               "text ends first)");
    json_fails("[\n [\"router\", {\"id\":",
               "s.json:2: invalid JSON: the object opened by '{' on this line is not closed (the "
               "text ends first)");
}

static void json_top_level_not_a_list(void **state)
{
    (void)state;
    json_fails("\n{\"router\": {\"id\": \"R\"}}\n",
               "s.json:2: the JSON form must be a list of [\"section\", {attributes}] pairs");
    json_fails("\"router\"\n",
               "s.json:1: the JSON form must be a list of [\"section\", {attributes}] pairs");
}

static void json_entry_not_a_pair(void **state)
{
    (void)state;
    json_fails("[\n [\"router\", {\"id\": \"R\"}],\n \"listener\"\n]\n",
               "s.json:3: each section must be a list of two items: [\"section\", {attributes}]");
    json_fails("[\n [\"router\", {}, {}]\n]\n",
               "s.json:2: each section must be a list of two items: [\"section\", {attributes}]");
    json_fails("[\n [\"router\",\n  [\"id\", \"R\"]]\n]\n",
               "s.json:3: the attributes of section 'router' must be a map");
    json_fails("[\n [7, {}]\n]\n", "s.json:2: a section name must be a string");
}

static void json_numbers_out_of_range(void **state)
{
    (void)state;
    json_fails("[\n [\"router\", {\"id\": \"R\"}],\n [\"listener\", {\"port\": "
               "99999999999999999999}]\n]\n",
               "s.json:3: invalid JSON: integer out of range");
    json_fails("[\n [\"listener\",\n  {\"cost\": -9223372036854775809}]\n]\n",
               "s.json:3: invalid JSON: integer out of range");
    json_fails("[\n [\"listener\", {\"port\": 1e999}]\n]\n",
               "s.json:2: invalid JSON: number out of range");
}

static void json_invalid_utf8(void **state)
{
    (void)state;
    json_fails("[\n [\"router\", {\"id\": \"R\xff\"}]\n]\n",
               "s.json:2: invalid UTF-8 (octet 0xff at column 22)");
    /* a truncated sequence at the very end */
    json_fails("[]\n#\xf0\x9f", "s.json:2: invalid UTF-8 (octet 0xf0 at column 2)");
}

static void json_nul_byte(void **state)
{
    (void)state;
    static const char text[] = "[\n [\"router\", {\"id\": \"R\"}]\0\n]\n";
    fails_n("s.json", text, sizeof text - 1, "s.json:2: NUL byte in the file");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conf_section_never_closed),
        cmocka_unit_test(conf_closing_brace_without_section),
        cmocka_unit_test(conf_attribute_outside_section),
        cmocka_unit_test(conf_key_without_value),
        cmocka_unit_test(conf_unterminated_quote_to_end),
        cmocka_unit_test(conf_two_sections_on_one_line),
        cmocka_unit_test(conf_unknown_section),
        cmocka_unit_test(conf_crlf_lines_counted),
        cmocka_unit_test(conf_nul_byte),
        cmocka_unit_test(conf_invalid_utf8),
        cmocka_unit_test(conf_valid_utf8_accepted),
        cmocka_unit_test(empty_file),
        cmocka_unit_test(json_trailing_comma_in_list),
        cmocka_unit_test(json_trailing_comma_in_object),
        cmocka_unit_test(json_duplicate_key),
        cmocka_unit_test(json_unterminated_string),
        cmocka_unit_test(json_unterminated_list),
        cmocka_unit_test(json_unterminated_object),
        cmocka_unit_test(json_top_level_not_a_list),
        cmocka_unit_test(json_entry_not_a_pair),
        cmocka_unit_test(json_numbers_out_of_range),
        cmocka_unit_test(json_invalid_utf8),
        cmocka_unit_test(json_nul_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
