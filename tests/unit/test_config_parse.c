/*
 * test_config_parse.c — the corner cases of the conf form that
 * docs/protocol.md describes ("The configuration file"), each checked on a small
 * configuration held in memory.
 */
#include <junction/config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static jn_config_t *load(const char *text)
{
    jn_config_t *cfg = NULL;
    char err[JN_CONFIG_ERROR_MAX];
    int rc = jn_config_load_string("t.conf", text, strlen(text), &cfg, err, sizeof(err));
    if (rc != 0)
        fail_msg("load failed (%d): %s", rc, err);
    return cfg;
}

static const jn_config_entity_t *nth(const jn_config_t *cfg, const char *type, int n)
{
    const jn_schema_type_t *t = jn_schema_type_find(type);
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++) {
        const jn_config_entity_t *e = jn_config_entity_at(cfg, i);
        if (jn_config_entity_type(e) == t && n-- == 0)
            return e;
    }
    fail_msg("no %s entity", type);
    return NULL;
}

static const char *str(const jn_config_t *cfg, const char *type, const char *attr)
{
    const char *s = jn_config_entity_string(nth(cfg, type, 0), attr);
    if (!s)
        fail_msg("%s has no %s", type, attr);
    return s;
}

static int64_t num(const jn_config_t *cfg, const char *type, const char *attr)
{
    int64_t v = -12345;
    if (jn_config_entity_int(nth(cfg, type, 0), attr, &v) != 0)
        fail_msg("%s has no integer %s", type, attr);
    return v;
}

static bool flag(const jn_config_t *cfg, const char *type, const char *attr)
{
    bool v = false;
    if (jn_config_entity_bool(nth(cfg, type, 0), attr, &v) != 0)
        fail_msg("%s has no boolean %s", type, attr);
    return v;
}

/* ---- lines and comments ---- */

static void blank_and_comment_lines_ignored(void **state)
{
    (void)state;
    jn_config_t *cfg = load("\n   \n# top comment\n\t# indented comment\nrouter {\n"
                            "   # inside\n\n    id: R1   \n}\n");
    assert_string_equal(str(cfg, "router", "id"), "R1");
    assert_int_equal(jn_config_entity_line(nth(cfg, "router", 0)), 5);
    assert_int_equal(jn_config_value_line(jn_config_entity_get(nth(cfg, "router", 0), "id")), 8);
    jn_config_free(cfg);
}

static void trailing_comment_cut_from_value(void **state)
{
    (void)state;
    jn_config_t *cfg = load("address {\n    prefix: hash#part # more\n}\n");
    assert_string_equal(str(cfg, "address", "prefix"), "hash");
    jn_config_free(cfg);
}

static void hash_kept_in_pattern_bindingkey_hostname(void **state)
{
    (void)state;
    jn_config_t *cfg =
        load("address {\n pattern: a.#.b\n}\n"
             "binding {\n exchangeName: x\n nextHopAddress: y\n bindingKey: k.#.z\n}\n"
             "vhost {\n hostname: host#1\n}\n");
    assert_string_equal(str(cfg, "address", "pattern"), "a.#.b");
    assert_string_equal(str(cfg, "binding", "bindingKey"), "k.#.z");
    assert_string_equal(str(cfg, "vhost", "hostname"), "host#1");
    jn_config_free(cfg);
}

static void hash_exception_keyed_on_name_as_written(void **state)
{
    (void)state;
    jn_config_t *cfg = load("binding {\n exchangeName: x\n nextHopAddress: y\n"
                            " binding-key: k.#.z\n}\n");
    assert_string_equal(str(cfg, "binding", "bindingKey"), "k.");
    jn_config_free(cfg);
}

static void hash_exception_value_is_first_token_only(void **state)
{
    (void)state;
    jn_config_t *cfg = load("address {\n pattern: a.# trailing words # and a comment\n}\n");
    assert_string_equal(str(cfg, "address", "pattern"), "a.#");
    jn_config_free(cfg);
}

static void crlf_and_cr_line_ends_accepted(void **state)
{
    (void)state;
    jn_config_t *cfg = load("router {\r\n id: R1\r\n}\r\nlistener {\r port: 1\r}\r");
    assert_string_equal(str(cfg, "router", "id"), "R1");
    assert_string_equal(str(cfg, "listener", "port"), "1");
    assert_int_equal(jn_config_entity_line(nth(cfg, "listener", 0)), 4);
    jn_config_free(cfg);
}

/* ---- sections ---- */

static void section_brace_without_blank_and_commented_close(void **state)
{
    (void)state;
    jn_config_t *cfg = load("listener{\n port: 1\n} # end of listener\n"
                            "connector   {   # comment\n port: 2\n}\n");
    assert_string_equal(str(cfg, "listener", "port"), "1");
    assert_string_equal(str(cfg, "connector", "port"), "2");
    jn_config_free(cfg);
}

static void sections_in_any_order_and_repeated(void **state)
{
    (void)state;
    jn_config_t *cfg = load("listener {\n role: inter-router\n}\naddress {\n prefix: a\n}\n"
                            "router {\n mode: interior\n}\naddress {\n prefix: b\n}\n");
    assert_string_equal(jn_config_entity_string(nth(cfg, "address", 1), "prefix"), "b");
    assert_string_equal(jn_schema_type_name(jn_config_entity_type(jn_config_entity_at(cfg, 0))),
                        "listener");
    jn_config_free(cfg);
}

/* ---- attributes and values ---- */

static void separator_blanks_optional(void **state)
{
    (void)state;
    jn_config_t *cfg = load("listener {\n port:5672\n host :  h1\n"
                            " saslMechanisms:\tANONYMOUS  PLAIN  \n}\n");
    assert_string_equal(str(cfg, "listener", "port"), "5672");
    assert_string_equal(str(cfg, "listener", "host"), "h1");
    assert_string_equal(str(cfg, "listener", "saslMechanisms"), "ANONYMOUS  PLAIN");
    jn_config_free(cfg);
}

static void values_are_json_string_bodies(void **state)
{
    (void)state;
    jn_config_t *cfg = load("listener {\n host: a\\tb\\u0041\\\\c\\/d\\\"e\n}\n");
    assert_string_equal(str(cfg, "listener", "host"), "a\tbA\\c/d\"e");
    jn_config_free(cfg);
}

static void values_taken_literally_no_substitution(void **state)
{
    (void)state;
    jn_config_t *cfg = load("connector {\n saslPassword: env:HOME\n host: ${HOST}\n}\n");
    assert_string_equal(str(cfg, "connector", "saslPassword"), "env:HOME");
    assert_string_equal(str(cfg, "connector", "host"), "${HOST}");
    jn_config_free(cfg);
}

/* ---- attribute maps ---- */

static void open_properties_read_as_raw_json(void **state)
{
    (void)state;
    jn_config_t *cfg = load("listener {\n"
                            "    openProperties: {\n"
                            "        # a whole-line comment\n"
                            "        \"app\": \"shop\",\n"
                            "        \"n\": 7, \"ok\": true, \"ratio\": 0.5,\n"
                            "        \"list\": [1, \"two\"],\n"
                            "        \"scheme\": \"amqp\",\n"
                            "        \"nested\": {\n"
                            "            \"k\": 2\n"
                            "        }\n"
                            "    }\n"
                            "}\n");
    const jn_config_value_t *p = jn_config_entity_get(nth(cfg, "listener", 0), "openProperties");
    assert_non_null(p);
    assert_int_equal(jn_config_value_kind(p), JN_CONFIG_MAP);
    assert_int_equal(jn_config_value_count(p), 7);
    assert_string_equal(jn_config_value_key(p, 0), "app");
    assert_string_equal(jn_config_value_string(jn_config_value_lookup(p, "app")), "shop");
    assert_int_equal(jn_config_value_int(jn_config_value_lookup(p, "n")), 7);
    assert_int_equal(jn_config_value_kind(jn_config_value_lookup(p, "n")), JN_CONFIG_INT);
    assert_true(jn_config_value_bool(jn_config_value_lookup(p, "ok")));
    assert_true(jn_config_value_double(jn_config_value_lookup(p, "ratio")) == 0.5);
    assert_int_equal(jn_config_value_count(jn_config_value_lookup(p, "list")), 2);
    const jn_config_value_t *nested = jn_config_value_lookup(p, "nested");
    assert_int_equal(jn_config_value_int(jn_config_value_lookup(nested, "k")), 2);
    assert_int_equal(jn_config_value_line(jn_config_value_lookup(p, "n")), 5);
    assert_int_equal(jn_config_value_line(jn_config_value_lookup(nested, "k")), 9);
    jn_config_free(cfg);
}

static void vhost_groups_read_as_raw_json(void **state)
{
    (void)state;
    jn_config_t *cfg = load("vhost {\n hostname: example.com\n groups: {\n"
                            "  \"$default\": {\n   \"users\": \"*\",\n   \"maxSenders\": 10\n  }\n"
                            " }\n}\n");
    const jn_config_value_t *g = jn_config_entity_get(nth(cfg, "vhost", 0), "groups");
    const jn_config_value_t *d = jn_config_value_lookup(g, "$default");
    assert_non_null(d);
    assert_string_equal(jn_config_value_string(jn_config_value_lookup(d, "users")), "*");
    assert_int_equal(jn_config_value_int(jn_config_value_lookup(d, "maxSenders")), 10);
    jn_config_free(cfg);
}

static void vhost_groups_one_line_entries_with_trailing_commas(void **state)
{
    (void)state;
    /* 1.19 drops a ',' before '}' or ']' in the raw maps, so each group may
     * be one line ending in ',' and several may share a line. */
    jn_config_t *cfg = load("vhost {\n hostname: example.com\n groups: {\n"
                            "  \"$default\": {\"users\": \"*\", \"sources\": [\"a\", \"b\",],},\n"
                            "  \"x\": {\"users\": \"u1\"}, \"y\": {\"users\": \"u2\"},\n"
                            " }\n}\n");
    const jn_config_value_t *g = jn_config_entity_get(nth(cfg, "vhost", 0), "groups");
    const jn_config_value_t *d = jn_config_value_lookup(g, "$default");
    assert_string_equal(jn_config_value_string(jn_config_value_lookup(d, "users")), "*");
    assert_int_equal(jn_config_value_count(jn_config_value_lookup(d, "sources")), 2);
    const jn_config_value_t *y = jn_config_value_lookup(g, "y");
    assert_string_equal(jn_config_value_string(jn_config_value_lookup(y, "users")), "u2");
    jn_config_free(cfg);
}

static void repeated_address_section_is_dropped_with_a_warning(void **state)
{
    (void)state;
    const char *a = "address {\n prefix: mc\n distribution: multicast\n}\n";
    char text[256];
    snprintf(text, sizeof text, "%s%s%s", a, a, "address {\n prefix: mc\n}\n");
    jn_config_t *cfg = load(text);
    /* the exact repeat goes; the one that differs stays (the entity path
     * refuses it) */
    size_t addresses = 0;
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++)
        addresses += strcmp(jn_schema_type_short_name(jn_config_entity_type(
                                jn_config_entity_at(cfg, i))),
                            "address") == 0;
    assert_int_equal(addresses, 2);
    assert_int_equal(jn_config_warning_count(cfg), 1);
    assert_non_null(strstr(jn_config_warning_at(cfg, 0),
                           ":5: address section repeats the one at line 1; it is ignored"));
    jn_config_free(cfg);
}

static void map_named_otherwise_follows_normal_rules(void **state)
{
    (void)state;
    /* Only the spelling "openProperties" is raw JSON; "open-properties" holds
     * ordinary lines, nested "$name: {" maps included, keys kept as written. */
    jn_config_t *cfg = load("listener {\n open-properties: {\n  app-name: shop # comment\n"
                            "  $default: {\n   max_count: 3\n  }\n }\n}\n");
    const jn_config_value_t *p = jn_config_entity_get(nth(cfg, "listener", 0), "openProperties");
    assert_string_equal(jn_config_value_string(jn_config_value_lookup(p, "app-name")), "shop");
    const jn_config_value_t *d = jn_config_value_lookup(p, "$default");
    assert_string_equal(jn_config_value_string(jn_config_value_lookup(d, "max_count")), "3");
    jn_config_free(cfg);
}

/* ---- camelCase ---- */

static void names_normalised_to_camel_case(void **state)
{
    (void)state;
    jn_config_t *cfg = load("ssl-profile {\n name: tls\n}\n"
                            "listener {\n authenticate-peer: yes\n sasl_mechanisms: PLAIN\n"
                            " idle-timeout-seconds: 5\n maxFrameSize: 1024\n}\n"
                            "link-route {\n prefix: q\n direction: in\n}\n"
                            "auto_link {\n address: a\n dir: out\n}\n");
    assert_string_equal(jn_config_entity_section(nth(cfg, "sslProfile", 0)), "ssl-profile");
    assert_true(flag(cfg, "listener", "authenticatePeer"));
    assert_string_equal(str(cfg, "listener", "saslMechanisms"), "PLAIN");
    assert_int_equal(num(cfg, "listener", "idleTimeoutSeconds"), 5);
    assert_int_equal(num(cfg, "listener", "maxFrameSize"), 1024);
    assert_string_equal(str(cfg, "linkRoute", "prefix"), "q");
    assert_string_equal(str(cfg, "autoLink", "direction"), "out");
    jn_config_free(cfg);
}

static void section_names_map_to_entity_types(void **state)
{
    (void)state;
    jn_config_t *cfg = load("address {\n prefix: a\n}\nlinkRoute {\n prefix: b\n direction: in\n}\n"
                            "autoLink {\n address: c\n direction: in\n}\n"
                            "exchange {\n address: d\n}\n"
                            "binding {\n exchangeName: e\n nextHopAddress: f\n}\n");
    static const char *const types[] = {"router.config.address",
                                        "router.config.linkRoute",
                                        "router.config.autoLink",
                                        "router.config.exchange",
                                        "router.config.binding",
                                        "router",
                                        "policy"};
    assert_int_equal(jn_config_entity_count(cfg), 7);
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(jn_schema_type_name(jn_config_entity_type(jn_config_entity_at(cfg, i))),
                            types[i]);
    assert_string_equal(
        jn_schema_type_full_name(jn_config_entity_type(jn_config_entity_at(cfg, 0))),
        "org.apache.qpid.dispatch.router.config.address");
    jn_config_free(cfg);
}

/* ---- deprecated names ---- */

static void deprecated_names_accepted_with_warning(void **state)
{
    (void)state;
    jn_config_t *cfg =
        load("router {\n helloInterval: 2\n saslConfigPath: /sasl\n}\n"
             "sslProfile {\n certDb: /ca\n keyFile: /key\n}\n"
             "listener {\n protocolFamily: IPv6\n failoverList: a:1\n"
             " logMessage: all\n}\n"
             "connector {\n verifyHostName: no\n}\n"
             "log {\n module: ROUTER\n timestamp: yes\n source: no\n output: out.log\n}\n"
             "vhost {\n id: v1\n}\n");
    assert_int_equal(num(cfg, "router", "helloIntervalSeconds"), 2);
    assert_string_equal(str(cfg, "router", "saslConfigDir"), "/sasl");
    assert_string_equal(str(cfg, "sslProfile", "caCertFile"), "/ca");
    assert_string_equal(str(cfg, "sslProfile", "privateKeyFile"), "/key");
    assert_string_equal(str(cfg, "listener", "socketAddressFamily"), "IPv6");
    assert_string_equal(str(cfg, "listener", "failoverUrls"), "a:1");
    assert_string_equal(str(cfg, "listener", "messageLoggingComponents"), "all");
    assert_false(flag(cfg, "connector", "verifyHostname"));
    assert_true(flag(cfg, "log", "includeTimestamp"));
    assert_false(flag(cfg, "log", "includeSource"));
    assert_string_equal(str(cfg, "log", "outputFile"), "out.log");
    assert_string_equal(str(cfg, "vhost", "hostname"), "v1");
    assert_int_equal(jn_config_warning_count(cfg), 12);
    assert_string_equal(jn_config_warning_at(cfg, 0),
                        "t.conf:2: Attribute 'helloInterval' of entity 'router' has been "
                        "deprecated. Use 'helloIntervalSeconds' instead");
    assert_null(jn_config_warning_at(cfg, 12));
    /* The old name also finds the value. */
    assert_ptr_equal(jn_config_entity_get(nth(cfg, "router", 0), "helloInterval"),
                     jn_config_entity_get(nth(cfg, "router", 0), "helloIntervalSeconds"));
    jn_config_free(cfg);
}

static void deprecated_attributes_warned(void **state)
{
    (void)state;
    jn_config_t *cfg = load("sslProfile {\n passwordFile: /pw\n}\n"
                            "authServicePlugin {\n authService: a:5671\n}\n");
    assert_string_equal(str(cfg, "sslProfile", "passwordFile"), "/pw");
    assert_int_equal(jn_config_warning_count(cfg), 2);
    assert_string_equal(jn_config_warning_at(cfg, 0),
                        "t.conf:2: sslProfile attribute 'passwordFile' is deprecated");
    assert_string_equal(jn_config_warning_at(cfg, 1),
                        "t.conf:5: authServicePlugin attribute 'authService' is deprecated");
    jn_config_free(cfg);
}

static void type_attribute_ignored_with_warning(void **state)
{
    (void)state;
    jn_config_t *cfg = load("listener {\n type: connector\n port: 7\n}\n");
    const jn_config_entity_t *l = nth(cfg, "listener", 0);
    assert_string_equal(jn_schema_type_name(jn_config_entity_type(l)), "listener");
    assert_null(jn_config_entity_get(l, "type"));
    assert_int_equal(jn_config_warning_count(cfg), 1);
    assert_string_equal(jn_config_warning_at(cfg, 0), "t.conf:2: listener attribute 'type' "
                                                      "ignored (the section name gives the type)");
    jn_config_free(cfg);
}

static void deprecated_console_section_warned(void **state)
{
    (void)state;
    jn_config_t *cfg = load("console {\n proxy: p\n home: /h\n}\n");
    assert_string_equal(str(cfg, "console", "home"), "/h");
    assert_int_equal(num(cfg, "console", "wsport"), 5673);
    assert_string_equal(jn_config_entity_identity(nth(cfg, "console", 0)), "console/0");
    assert_int_equal(jn_config_warning_count(cfg), 1);
    assert_string_equal(jn_config_warning_at(cfg, 0), "t.conf:1: section 'console' is deprecated");
    jn_config_free(cfg);
}

/* ---- entities, singletons, names ---- */

static void missing_router_and_policy_added_with_defaults(void **state)
{
    (void)state;
    jn_config_t *cfg = load("# nothing but a comment\n");
    assert_int_equal(jn_config_entity_count(cfg), 2);
    const jn_config_entity_t *router = nth(cfg, "router", 0);
    assert_int_equal(jn_config_entity_line(router), 0);
    assert_string_equal(jn_config_entity_section(router), "router");
    assert_string_equal(jn_config_entity_string(router, "mode"), "standalone");
    assert_null(jn_config_entity_get(router, "id"));
    assert_string_equal(jn_config_entity_identity(router), "router/None");
    assert_string_equal(jn_config_entity_identity(nth(cfg, "policy", 0)), "policy/None");
    assert_ptr_equal(jn_config_find(cfg, jn_schema_type_find("router")), router);
    jn_config_free(cfg);
}

static void defaults_filled_in_and_marked(void **state)
{
    (void)state;
    jn_config_t *cfg = load("listener {\n port: 5672\n}\naddress {\n prefix: p\n}\n");
    const jn_config_entity_t *l = nth(cfg, "listener", 0);
    const jn_config_value_t *port = jn_config_entity_get(l, "port");
    const jn_config_value_t *role = jn_config_entity_get(l, "role");
    assert_false(jn_config_value_is_default(port));
    assert_true(jn_config_value_is_default(role));
    assert_int_equal(jn_config_value_line(role), 0);
    assert_int_equal(jn_config_value_kind(role), JN_CONFIG_ENUM);
    assert_int_equal(jn_config_value_int(role), 0);
    assert_int_equal(num(cfg, "listener", "idleTimeoutSeconds"), 16);
    assert_int_equal(num(cfg, "listener", "maxSessions"), 32768);
    assert_string_equal(str(cfg, "listener", "stripAnnotations"), "both");
    assert_string_equal(str(cfg, "address", "distribution"), "balanced");
    assert_string_equal(str(cfg, "router", "defaultDistribution"), "balanced");
    assert_int_equal(num(cfg, "policy", "maxConnections"), 65535);
    assert_null(jn_config_entity_get(l, "linkCapacity"));
    int64_t v;
    assert_int_equal(jn_config_entity_int(l, "linkCapacity", &v), JN_ENOENT);
    assert_int_equal(jn_config_entity_int(l, "port", &v), JN_EINVAL);
    jn_config_free(cfg);
}

static void default_log_module_special_defaults(void **state)
{
    (void)state;
    jn_config_t *cfg = load("log {\n module: DEFAULT\n}\nlog {\n module: ROUTER\n}\n");
    const jn_config_entity_t *d = nth(cfg, "log", 0), *r = nth(cfg, "log", 1);
    assert_string_equal(jn_config_entity_string(d, "enable"), "info+");
    assert_string_equal(jn_config_entity_string(d, "outputFile"), "stderr");
    bool b = false;
    assert_int_equal(jn_config_entity_bool(d, "includeTimestamp", &b), 0);
    assert_true(b);
    assert_null(jn_config_entity_get(r, "enable")); /* other modules inherit at run time */
    assert_string_equal(jn_config_entity_identity(r), "log/ROUTER");
    jn_config_free(cfg);
}

static void name_defaults_to_identity(void **state)
{
    (void)state;
    jn_config_t *cfg = load("listener {\n host: 0.0.0.0\n port: 5672\n}\n"
                            "listener {\n name: second\n host: 0.0.0.0\n port: 5672\n}\n"
                            "sslProfile {\n name: tls\n}\nvhost {\n hostname: v\n}\n");
    assert_string_equal(jn_config_entity_name(nth(cfg, "listener", 0)), "listener/0.0.0.0:5672");
    assert_null(jn_config_entity_get(nth(cfg, "listener", 0), "name"));
    assert_string_equal(jn_config_entity_name(nth(cfg, "listener", 1)), "second");
    assert_string_equal(jn_config_entity_identity(nth(cfg, "listener", 1)),
                        "listener/0.0.0.0:5672:second");
    assert_string_equal(jn_config_entity_identity(nth(cfg, "sslProfile", 0)), "sslProfile/tls");
    assert_string_equal(jn_config_entity_identity(nth(cfg, "vhost", 0)), "vhost/v");
    jn_config_free(cfg);
}

/* ---- conversions ---- */

static void integer_text_as_python_int(void **state)
{
    (void)state;
    jn_config_t *cfg = load("listener {\n cost: +3\n linkCapacity: 1_0\n maxSessions: -0\n"
                            " maxFrameSize: 007\n}\n");
    assert_int_equal(num(cfg, "listener", "cost"), 3);
    assert_int_equal(num(cfg, "listener", "linkCapacity"), 10);
    assert_int_equal(num(cfg, "listener", "maxSessions"), 0);
    assert_int_equal(num(cfg, "listener", "maxFrameSize"), 7);
    jn_config_free(cfg);
}

static void boolean_spellings_any_case(void **state)
{
    (void)state;
    jn_config_t *cfg = load("listener {\n authenticatePeer: Yes\n requireSsl: TRUE\n http: on\n"
                            " websockets: No\n healthz: false\n metrics: OFF\n}\n");
    assert_true(flag(cfg, "listener", "authenticatePeer"));
    assert_true(flag(cfg, "listener", "requireSsl"));
    assert_true(flag(cfg, "listener", "http"));
    assert_false(flag(cfg, "listener", "websockets"));
    assert_false(flag(cfg, "listener", "healthz"));
    assert_false(flag(cfg, "listener", "metrics"));
    jn_config_free(cfg);
}

static void enum_by_value_or_index(void **state)
{
    (void)state;
    jn_config_t *cfg = load("router {\n mode: -1\n defaultDistribution: 1\n}\n"
                            "listener {\n role: 0\n stripAnnotations: out\n}\n");
    assert_string_equal(str(cfg, "router", "mode"), "edge");
    assert_int_equal(num(cfg, "router", "mode"), 2);
    assert_string_equal(str(cfg, "router", "defaultDistribution"), "closest");
    assert_string_equal(str(cfg, "listener", "role"), "normal");
    assert_string_equal(str(cfg, "listener", "stripAnnotations"), "out");
    jn_config_free(cfg);
}

static void create_flag_not_checked_for_files(void **state)
{
    (void)state;
    jn_config_t *cfg = load("connector {\n failoverUrls: a:1\n connectionStatus: x\n}\n"
                            "router {\n version: 9\n}\n");
    assert_string_equal(str(cfg, "connector", "failoverUrls"), "a:1");
    assert_string_equal(str(cfg, "router", "version"), "9");
    jn_config_free(cfg);
}

/* ---- cross-entity checks that pass ---- */

static void mesh_roles_allowed_by_router_mode(void **state)
{
    (void)state;
    jn_config_t *cfg = load("listener {\n role: inter-router\n port: 1\n}\n"
                            "listener {\n role: edge\n port: 2\n}\n"
                            "router {\n mode: interior\n id: R\n}\n");
    assert_string_equal(jn_config_entity_string(nth(cfg, "listener", 1), "role"), "edge");
    jn_config_free(cfg);
    cfg = load("router {\n mode: edge\n}\nconnector {\n role: edge\n}\n");
    assert_string_equal(str(cfg, "connector", "role"), "edge");
    jn_config_free(cfg);
}

static void router_id_of_127_characters_accepted(void **state)
{
    (void)state;
    char text[300];
    char id[128];
    memset(id, 'x', 127);
    id[127] = '\0';
    snprintf(text, sizeof(text), "router {\n id: %s\n}\n", id);
    jn_config_t *cfg = load(text);
    assert_string_equal(str(cfg, "router", "id"), id);
    jn_config_free(cfg);
}

static void sasl_plugin_refers_to_auth_service_plugin(void **state)
{
    (void)state;
    jn_config_t *cfg = load("listener {\n saslPlugin: auth\n}\n"
                            "authServicePlugin {\n name: auth\n host: a\n port: 5671\n}\n");
    assert_string_equal(str(cfg, "listener", "saslPlugin"), "auth");
    jn_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(blank_and_comment_lines_ignored),
        cmocka_unit_test(trailing_comment_cut_from_value),
        cmocka_unit_test(hash_kept_in_pattern_bindingkey_hostname),
        cmocka_unit_test(hash_exception_keyed_on_name_as_written),
        cmocka_unit_test(hash_exception_value_is_first_token_only),
        cmocka_unit_test(crlf_and_cr_line_ends_accepted),
        cmocka_unit_test(section_brace_without_blank_and_commented_close),
        cmocka_unit_test(sections_in_any_order_and_repeated),
        cmocka_unit_test(separator_blanks_optional),
        cmocka_unit_test(values_are_json_string_bodies),
        cmocka_unit_test(values_taken_literally_no_substitution),
        cmocka_unit_test(open_properties_read_as_raw_json),
        cmocka_unit_test(vhost_groups_read_as_raw_json),
        cmocka_unit_test(vhost_groups_one_line_entries_with_trailing_commas),
        cmocka_unit_test(repeated_address_section_is_dropped_with_a_warning),
        cmocka_unit_test(map_named_otherwise_follows_normal_rules),
        cmocka_unit_test(names_normalised_to_camel_case),
        cmocka_unit_test(section_names_map_to_entity_types),
        cmocka_unit_test(deprecated_names_accepted_with_warning),
        cmocka_unit_test(deprecated_attributes_warned),
        cmocka_unit_test(type_attribute_ignored_with_warning),
        cmocka_unit_test(deprecated_console_section_warned),
        cmocka_unit_test(missing_router_and_policy_added_with_defaults),
        cmocka_unit_test(defaults_filled_in_and_marked),
        cmocka_unit_test(default_log_module_special_defaults),
        cmocka_unit_test(name_defaults_to_identity),
        cmocka_unit_test(integer_text_as_python_int),
        cmocka_unit_test(boolean_spellings_any_case),
        cmocka_unit_test(enum_by_value_or_index),
        cmocka_unit_test(create_flag_not_checked_for_files),
        cmocka_unit_test(mesh_roles_allowed_by_router_mode),
        cmocka_unit_test(router_id_of_127_characters_accepted),
        cmocka_unit_test(sasl_plugin_refers_to_auth_service_plugin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
