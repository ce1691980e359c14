/*
 * test_config_errors.c — every kind of configuration error gives one line of
 * text, "FILE:LINE: what is wrong", exactly as asserted here, and JN_EINVAL
 * (JN_ENOENT for an empty file).
 */
#include <junction/config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* Loading the conf-form text fails with JN_EINVAL and exactly want. */
static void fails(const char *text, const char *want)
{
    jn_config_t *cfg = (jn_config_t *)&cfg;
    char err[JN_CONFIG_ERROR_MAX];
    int rc = jn_config_load_string("t.conf", text, strlen(text), &cfg, err, sizeof(err));
    assert_int_equal(rc, JN_EINVAL);
    assert_null(cfg);
    assert_string_equal(err, want);
}

static void accepted(const char *text)
{
    jn_config_t *cfg = NULL;
    char err[JN_CONFIG_ERROR_MAX];
    int rc = jn_config_load_string("t.conf", text, strlen(text), &cfg, err, sizeof(err));
    if (rc != 0)
        fail_msg("load failed (%d): %s", rc, err);
    jn_config_free(cfg);
}

/* ---- line syntax ---- */

static void one_line_section_rejected(void **state)
{
    (void)state;
    const char *want = "t.conf:2: invalid syntax: a section cannot be written on one line; "
                       "put '{' last on the line and each attribute on its own line";
    fails("# logging\nlog { module: PROTOCOL enable: trace+ }\n", want);
    fails("\nrouter { mode: interior id: X }\n", want);
}

static void one_line_map_rejected(void **state)
{
    (void)state;
    fails("listener {\n openProperties: {\"a\": 1}\n}\n",
          "t.conf:2: invalid syntax: a map cannot be written on one line; put '{' last on the "
          "line and each entry on its own line");
}

static void closing_brace_must_be_alone(void **state)
{
    (void)state;
    fails("listener {\n port: 1\n},\n", "t.conf:3: invalid syntax: '}' must be alone on its line");
}

static void unrecognised_line_rejected(void **state)
{
    (void)state;
    fails("listener {\n port 5672\n}\n",
          "t.conf:2: invalid syntax: expected 'name {', 'name: value' or '}'");
    fails("listener {\n host:\n}\n", "t.conf:2: invalid syntax: attribute 'host' has no value");
    fails("listener {\n host: # no value\n}\n",
          "t.conf:2: invalid syntax: attribute 'host' has no value");
}

static void attribute_outside_section_rejected(void **state)
{
    (void)state;
    fails("port: 5672\n", "t.conf:1: attribute 'port' outside of any section");
}

static void nested_section_rejected(void **state)
{
    (void)state;
    fails("listener {\n port: 1\nconnector {\n}\n",
          "t.conf:3: section 'connector' cannot be opened inside 'listener' (line 1); "
          "is a '}' missing?");
}

static void unbalanced_braces_rejected(void **state)
{
    (void)state;
    fails("listener {\n}\n}\n", "t.conf:3: '}' without an open section");
    fails("router {\n id: R\n}\nlistener {\n port: 1\n",
          "t.conf:4: section 'listener' is not closed");
    fails("listener {\n foo: {\n  a: 1\n}\n", "t.conf:1: section 'listener' is not closed");
    fails("listener {\n openProperties: {\n  \"a\": 1\n",
          "t.conf:2: attribute map 'openProperties' is not closed");
}

/* ---- values ---- */

static void quoted_value_rejected(void **state)
{
    (void)state;
    fails("listener {\n host: \"0.0.0.0\"\n}\n",
          "t.conf:2: invalid value of 'host': a '\"' may not appear in a value (do not quote "
          "values)");
}

static void bad_escapes_rejected(void **state)
{
    (void)state;
    fails("listener {\n host: a\\qb\n}\n",
          "t.conf:2: invalid value of 'host': invalid escape (use \\\\ for a backslash)");
    fails("router {\n debugDumpFile: C:\\\n}\n",
          "t.conf:2: invalid value of 'debugDumpFile': '\\' at the end (write '\\\\' for a "
          "backslash)");
    fails("listener {\n host: \\u12\n}\n",
          "t.conf:2: invalid value of 'host': invalid \\u escape (four hex digits needed)");
    fails("listener {\n host: \\ud800x\n}\n",
          "t.conf:2: invalid value of 'host': unpaired surrogate in \\u escape");
}

static void control_character_in_value_rejected(void **state)
{
    (void)state;
    fails("listener {\n host: a\tb\n}\n",
          "t.conf:2: invalid value of 'host': control character (write it as an escape such as "
          "\\t)");
}

static void nul_byte_rejected(void **state)
{
    (void)state;
    static const char text[] = "listener {\n port: 1\0\n}\n";
    jn_config_t *cfg = NULL;
    char err[JN_CONFIG_ERROR_MAX];
    assert_int_equal(
        jn_config_load_string("t.conf", text, sizeof(text) - 1, &cfg, err, sizeof(err)), JN_EINVAL);
    assert_string_equal(err, "t.conf:2: NUL byte in the file");
}

/* ---- raw JSON maps ---- */

static void trailing_comment_in_raw_map_rejected(void **state)
{
    (void)state;
    fails("listener {\n openProperties: {\n  \"a\": 1, # one\n  \"b\": 2\n }\n}\n",
          "t.conf:3: invalid JSON in 'openProperties': expected a key in double quotes");
}

static void one_line_nested_map_last_closes_early(void **state)
{
    (void)state;
    fails("listener {\n openProperties: {\n  \"a\": 1,\n  \"n\": {\"k\": 2}\n }\n}\n",
          "t.conf:4: invalid JSON in 'openProperties': unexpected end (expected ',' or '}')");
}

/* ---- schema ---- */

static void unknown_section_rejected(void **state)
{
    (void)state;
    fails("routerx {\n}\n", "t.conf:1: unknown section 'routerx' (no such entity type "
                            "'org.apache.qpid.dispatch.routerx')");
    fails("\nrouter-config-address {\n}\n",
          "t.conf:2: unknown section 'router-config-address' "
          "(no such entity type 'org.apache.qpid.dispatch.routerConfigAddress')");
}

static void operational_section_rejected(void **state)
{
    (void)state;
    fails("connection {\n}\n",
          "t.conf:1: section 'connection': entity type "
          "'org.apache.qpid.dispatch.connection' cannot be configured in a file");
    fails("vhostUserGroupSettings {\n users: a\n remoteHosts: b\n}\n",
          "t.conf:1: section 'vhostUserGroupSettings': entity type "
          "'org.apache.qpid.dispatch.vhostUserGroupSettings' cannot be configured in a file");
}

static void unknown_attribute_rejected(void **state)
{
    (void)state;
    fails("listener {\n bogusAttr: 5\n}\n",
          "t.conf:2: unknown attribute 'bogusAttr' in section 'listener'");
    fails("listener {\n max-frameSize: 5\n}\n",
          "t.conf:2: unknown attribute 'maxFramesize' (written 'max-frameSize') in section "
          "'listener'");
    fails("vhost {\n hostname: h\n $default: {\n  a: 1\n }\n}\n",
          "t.conf:3: unknown attribute '$default' in section 'vhost'");
}

static void identity_given_rejected(void **state)
{
    (void)state;
    fails("listener {\n identity: listener/1\n}\n",
          "t.conf:2: listener attribute 'identity' "
          "cannot be set (identities are assigned by the router)");
}

static void old_and_new_name_together_rejected(void **state)
{
    (void)state;
    fails("linkRoute {\n prefix: a\n direction: in\n dir: out\n}\n",
          "t.conf:4: org.apache.qpid.dispatch.router.config.linkRoute: Both 'dir' and "
          "'direction' cannot be specified for entity 'linkRoute' (the old name of 'direction'; "
          "the other is at line 3)");
}

static void refused_file_still_shows_its_warnings(void **state)
{
    (void)state;
    /* an autoLink's deprecated name in one section, an error in the next:
     * the error, then the warning, as 1.19 words both */
    fails("autoLink {\n addr: a\n externalAddr: x\n direction: in\n}\n"
          "autoLink {\n address: b\n dir: in\n direction: in\n}\n",
          "t.conf:9: org.apache.qpid.dispatch.router.config.autoLink: Both 'dir' and "
          "'direction' cannot be specified for entity 'autoLink' (the old name of 'direction'; "
          "the other is at line 8)\n"
          "t.conf:2: Attribute 'addr' of entity 'autoLink' has been deprecated. Use 'address' "
          "instead\n"
          "t.conf:3: Attribute 'externalAddr' of entity 'autoLink' has been deprecated. Use "
          "'externalAddress' instead\n"
          "t.conf:8: Attribute 'dir' of entity 'autoLink' has been deprecated. Use 'direction' "
          "instead");
}

static void missing_required_attribute_rejected(void **state)
{
    (void)state;
    fails("linkRoute {\n prefix: a\n}\n",
          "t.conf:1: section 'linkRoute' is missing required attribute 'direction'");
    fails("autoLink {\n direction: in\n}\n",
          "t.conf:1: section 'autoLink' is missing required attribute 'address'");
    fails("log {\n enable: info+\n}\n",
          "t.conf:1: section 'log' is missing required attribute 'module'");
    fails("vhost {\n maxConnections: 1\n}\n",
          "t.conf:1: section 'vhost' is missing required attribute 'hostname'");
    fails("binding {\n nextHopAddress: n\n}\n",
          "t.conf:1: section 'binding' is missing required attribute 'exchangeName'");
    fails("binding {\n exchangeName: e\n}\n",
          "t.conf:1: section 'binding' is missing required attribute 'nextHopAddress'");
    fails("exchange {\n phase: 0\n}\n",
          "t.conf:1: section 'exchange' is missing required attribute 'address'");
}

static void bad_integer_rejected(void **state)
{
    (void)state;
    fails("router {\n workerThreads: 0x10\n}\n",
          "t.conf:2: router attribute 'workerThreads': '0x10' is not an integer");
    fails("listener {\n cost: 1__0\n}\n", "t.conf:2: listener attribute 'cost': '1__0' is not "
                                          "an integer");
    fails("listener {\n cost: 3_\n}\n", "t.conf:2: listener attribute 'cost': '3_' is not "
                                        "an integer");
    fails("listener {\n cost: 1.5\n}\n", "t.conf:2: listener attribute 'cost': '1.5' is not "
                                         "an integer");
    fails("listener {\n cost: 9223372036854775808\n}\n", "t.conf:2: listener attribute 'cost': "
                                                         "'9223372036854775808' is out of range");
    accepted("listener {\n cost: -9223372036854775808\n}\n");
}

static void bad_boolean_rejected(void **state)
{
    (void)state;
    fails("listener {\n authenticatePeer: 1\n}\n",
          "t.conf:2: listener attribute 'authenticatePeer': '1' is not a boolean (use yes/no, "
          "true/false or on/off)");
}

static void bad_enum_rejected(void **state)
{
    (void)state;
    const char *want = "t.conf:2: router attribute 'mode': '%s' is not one of standalone, "
                       "interior, edge";
    const char *bad[] = {"Interior", "3", "-4", "1.0"};
    for (size_t i = 0; i < 4; i++) {
        char text[100], msg[200];
        snprintf(text, sizeof(text), "router {\n mode: %s\n}\n", bad[i]);
        snprintf(msg, sizeof(msg), want, bad[i]);
        fails(text, msg);
    }
}

static void map_attribute_needs_map(void **state)
{
    (void)state;
    fails("vhost {\n hostname: h\n groups: admins\n}\n",
          "t.conf:3: vhost attribute 'groups': expected a map, not 'admins'");
    fails("listener {\n host: {\n  a: 1\n }\n}\n",
          "t.conf:2: listener attribute 'host': expected text, not a map");
}

/* ---- entities ---- */

static void second_singleton_rejected(void **state)
{
    (void)state;
    fails("router {\n id: A\n}\nrouter {\n id: B\n}\n",
          "t.conf:4: a second 'router' section; only one is allowed (the first is at line 1)");
    fails("policy {\n}\n\npolicy {\n}\n",
          "t.conf:4: a second 'policy' section; only one is allowed (the first is at line 1)");
}

static void duplicate_name_across_types_rejected(void **state)
{
    (void)state;
    fails("listener {\n name: shared\n}\nconnector {\n port: 2\n name: shared\n}\n",
          "t.conf:6: name 'shared' is already used by the listener section at line 1");
}

static void unnamed_listeners_on_same_address_rejected(void **state)
{
    (void)state;
    fails(
        "listener {\n host: 0.0.0.0\n port: 5672\n}\nlistener {\n port: 5672\n host: 0.0.0.0\n}\n",
        "t.conf:5: listener has the same identity 'listener/0.0.0.0:5672' as the listener "
        "section at line 1; give one of them a distinct name");
}

static void log_module_configured_twice_rejected(void **state)
{
    (void)state;
    fails("log {\n module: ROUTER\n}\nlog {\n module: ROUTER\n}\n",
          "t.conf:4: log has the same identity 'log/ROUTER' as the log section at line 1");
}

static void attribute_set_twice_in_one_section_rejected(void **state)
{
    (void)state;
    fails("listener {\n port: 1\n host: 0.0.0.0\n port: 2\n}\n",
          "t.conf:4: listener attribute 'port' is set twice in one section (first at line 2)");
    /* two spellings of one attribute are one attribute */
    fails("listener {\n max-frame-size: 600\n port: 7\n maxFrameSize: 700\n}\n",
          "t.conf:4: listener attribute 'maxFrameSize' is set twice in one section (first at "
          "line 2)");
    /* the same attribute in two sections is no repeat */
    accepted("listener {\n port: 1\n}\nlistener {\n port: 2\n}\n");
}

/* ---- cross-entity checks ---- */

static void router_id_with_blank_rejected(void **state)
{
    (void)state;
    fails("router {\n id: a b\n}\n",
          "t.conf:2: router attribute 'id': 'a b' contains whitespace or control characters "
          "(AttributeError: not allowed in a router id)");
    fails("router {\n id: a\\tb\n}\n",
          "t.conf:2: router attribute 'id': 'a?b' contains whitespace or control characters "
          "(AttributeError: not allowed in a router id)");
}

static void router_id_of_128_characters_rejected(void **state)
{
    (void)state;
    char text[300];
    char id[129];
    memset(id, 'r', 128);
    id[128] = '\0';
    snprintf(text, sizeof(text), "router {\n id: %s\n}\n", id);
    fails(text, "t.conf:2: router attribute 'id': longer than 127 characters (AttributeError: "
                "the router id exceeds the maximum allowed length)");
}

static void mesh_role_on_standalone_router_rejected(void **state)
{
    (void)state;
    /* 1.19's words, as management answers (jn_config_role_refusal) */
    fails("listener {\n role: inter-router\n}\n",
          "t.conf:2: listener attribute 'role': role='standalone' not allowed to connect to or "
          "accept connections from other routers.");
    fails("connector {\n port: 9\n role: edge\n}\nrouter {\n mode: standalone\n}\n",
          "t.conf:3: connector attribute 'role': role='standalone' not allowed to connect to or "
          "accept connections from other routers.");
}

static void inter_router_role_needs_interior(void **state)
{
    (void)state;
    fails("connector {\n role: inter-router\n}\nrouter {\n mode: edge\n}\n",
          "t.conf:2: connector attribute 'role': role='inter-router' only allowed with router "
          "mode='interior'");
}

static void edge_listener_on_edge_router_rejected(void **state)
{
    (void)state;
    fails("router {\n mode: edge\n}\nlistener {\n role: edge\n}\n",
          "t.conf:5: listener attribute 'role': role='edge' only allowed with router "
          "mode='interior'");
}

static void open_properties_with_mesh_role_rejected(void **state)
{
    (void)state;
    fails("router {\n mode: interior\n}\nlistener {\n role: inter-router\n openProperties: {\n"
          "  \"a\": 1\n }\n}\n",
          "t.conf:6: listener attribute 'openProperties': not allowed with role 'inter-router'");
}

static void open_properties_reserved_key_rejected(void **state)
{
    (void)state;
    static const char *const keys[] = {"product",      "version",     "failover-server-list",
                                       "network-host", "port",        "schemehostname",
                                       "qd.foo",       "x-opt-qd.bar"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        char text[200], want[200];
        snprintf(text, sizeof(text),
                 "connector {\n openProperties: {\n  \"ok\": 1,\n"
                 "  \"%s\": 2\n }\n}\n",
                 keys[i]);
        snprintf(want, sizeof(want),
                 "t.conf:4: connector attribute 'openProperties': key '%s' "
                 "is reserved",
                 keys[i]);
        fails(text, want);
    }
}

static void open_properties_scheme_and_hostname_not_reserved(void **state)
{
    (void)state;
    accepted("listener {\n openProperties: {\n  \"scheme\": 1,\n  \"hostname\": 2,\n"
             "  \"qd\": 3\n }\n}\n");
}

static void unknown_sasl_plugin_rejected(void **state)
{
    (void)state;
    fails("listener {\n saslPlugin: nowhere\n}\n",
          "t.conf:2: listener attribute 'saslPlugin': no authServicePlugin named 'nowhere'");
}

/* ---- the API around errors ---- */

static void empty_string_is_enoent(void **state)
{
    (void)state;
    jn_config_t *cfg = NULL;
    char err[JN_CONFIG_ERROR_MAX];
    assert_int_equal(jn_config_load_string("t.conf", "", 0, &cfg, err, sizeof(err)), JN_ENOENT);
    assert_string_equal(err, "t.conf: configuration file was empty");
}

static void short_error_buffer_truncated(void **state)
{
    (void)state;
    const char *text = "routerx {\n}\n";
    jn_config_t *cfg = NULL;
    char err[12];
    memset(err, 'z', sizeof(err));
    assert_int_equal(jn_config_load_string("t.conf", text, strlen(text), &cfg, err, sizeof(err)),
                     JN_EINVAL);
    assert_string_equal(err, "t.conf:1: u");
    assert_int_equal(jn_config_load_string("t.conf", text, strlen(text), &cfg, NULL, 0), JN_EINVAL);
}

static void long_value_shortened_in_message(void **state)
{
    (void)state;
    char text[300], want[300];
    char v[101];
    memset(v, 'q', 100);
    v[100] = '\0';
    snprintf(text, sizeof(text), "listener {\n cost: %s\n}\n", v);
    snprintf(want, sizeof(want),
             "t.conf:2: listener attribute 'cost': '%.60s...' is not an "
             "integer",
             v);
    fails(text, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_line_section_rejected),
        cmocka_unit_test(one_line_map_rejected),
        cmocka_unit_test(closing_brace_must_be_alone),
        cmocka_unit_test(unrecognised_line_rejected),
        cmocka_unit_test(attribute_outside_section_rejected),
        cmocka_unit_test(nested_section_rejected),
        cmocka_unit_test(unbalanced_braces_rejected),
        cmocka_unit_test(quoted_value_rejected),
        cmocka_unit_test(bad_escapes_rejected),
        cmocka_unit_test(control_character_in_value_rejected),
        cmocka_unit_test(nul_byte_rejected),
        cmocka_unit_test(trailing_comment_in_raw_map_rejected),
        cmocka_unit_test(one_line_nested_map_last_closes_early),
        cmocka_unit_test(unknown_section_rejected),
        cmocka_unit_test(operational_section_rejected),
        cmocka_unit_test(unknown_attribute_rejected),
        cmocka_unit_test(identity_given_rejected),
        cmocka_unit_test(old_and_new_name_together_rejected),
        cmocka_unit_test(refused_file_still_shows_its_warnings),
        cmocka_unit_test(missing_required_attribute_rejected),
        cmocka_unit_test(bad_integer_rejected),
        cmocka_unit_test(bad_boolean_rejected),
        cmocka_unit_test(bad_enum_rejected),
        cmocka_unit_test(map_attribute_needs_map),
        cmocka_unit_test(second_singleton_rejected),
        cmocka_unit_test(duplicate_name_across_types_rejected),
        cmocka_unit_test(unnamed_listeners_on_same_address_rejected),
        cmocka_unit_test(log_module_configured_twice_rejected),
        cmocka_unit_test(attribute_set_twice_in_one_section_rejected),
        cmocka_unit_test(router_id_with_blank_rejected),
        cmocka_unit_test(router_id_of_128_characters_rejected),
        cmocka_unit_test(mesh_role_on_standalone_router_rejected),
        cmocka_unit_test(inter_router_role_needs_interior),
        cmocka_unit_test(edge_listener_on_edge_router_rejected),
        cmocka_unit_test(open_properties_with_mesh_role_rejected),
        cmocka_unit_test(open_properties_reserved_key_rejected),
        cmocka_unit_test(open_properties_scheme_and_hostname_not_reserved),
        cmocka_unit_test(unknown_sasl_plugin_rejected),
        cmocka_unit_test(empty_string_is_enoent),
        cmocka_unit_test(short_error_buffer_truncated),
        cmocka_unit_test(long_value_shortened_in_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
