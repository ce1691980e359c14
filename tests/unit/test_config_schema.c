/*
 * test_config_schema.c — the schema tables generated from
 * router/config/schema.json, read through junction/schema.h.
 */
#include <junction/schema.h>

#include "schema_ids.h" /* generated with the tables */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static const jn_schema_type_t *type_of(const char *name)
{
    const jn_schema_type_t *t = jn_schema_type_find(name);
    if (!t)
        fail_msg("no type '%s'", name);
    return t;
}

static const jn_schema_attr_t *attr_of(const char *type, const char *name)
{
    const jn_schema_attr_t *a = jn_schema_attr_find(type_of(type), name);
    if (!a)
        fail_msg("type '%s' has no attribute '%s'", type, name);
    return a;
}

static void type_found_by_full_short_and_prefixless_name(void **state)
{
    (void)state;
    const jn_schema_type_t *t = type_of("org.apache.qpid.dispatch.router.config.address");
    assert_ptr_equal(jn_schema_type_find("router.config.address"), t);
    assert_ptr_equal(jn_schema_type_find("address"), t);
    assert_string_equal(jn_schema_type_name(t), "router.config.address");
    assert_string_equal(jn_schema_type_short_name(t), "address");
    assert_string_equal(jn_schema_type_full_name(t),
                        "org.apache.qpid.dispatch.router.config.address");
    assert_ptr_equal(jn_schema_type_find("listener"), type_of("org.apache.qpid.dispatch.listener"));
}

static void type_unknown_or_miscased_name_not_found(void **state)
{
    (void)state;
    assert_null(jn_schema_type_find("routerx"));
    assert_null(jn_schema_type_find("Listener"));
    assert_null(jn_schema_type_find("org.apache.qpid.dispatch.address"));
    assert_null(jn_schema_type_find(""));
    assert_null(jn_schema_type_find(NULL));
}

static void every_type_of_the_1_19_schema_present(void **state)
{
    (void)state;
    static const char *const names[] = {"entity",
                                        "org.amqp.management",
                                        "management",
                                        "configurationEntity",
                                        "operationalEntity",
                                        "router",
                                        "sslProfile",
                                        "authServicePlugin",
                                        "listener",
                                        "connector",
                                        "log",
                                        "logStats",
                                        "router.config.address",
                                        "router.config.linkRoute",
                                        "router.config.autoLink",
                                        "router.config.exchange",
                                        "router.config.binding",
                                        "router.link",
                                        "router.address",
                                        "router.node",
                                        "connection",
                                        "allocator",
                                        "console",
                                        "policy",
                                        "vhost",
                                        "vhostUserGroupSettings",
                                        "vhostStats",
                                        "dummy",
                                        "router.connection.linkRoute"};
    size_t n = sizeof(names) / sizeof(names[0]);
    assert_int_equal(jn_schema_type_count(), n);
    for (size_t i = 0; i < n; i++) {
        const jn_schema_type_t *t = jn_schema_type_at(i);
        assert_non_null(t);
        assert_string_equal(jn_schema_type_name(t), names[i]);
        assert_int_equal(jn_schema_type_index(t), i);
    }
    assert_null(jn_schema_type_at(n));
}

static void management_type_keeps_1_19_odd_full_name(void **state)
{
    (void)state;
    const jn_schema_type_t *t = type_of("org.amqp.management");
    assert_string_equal(jn_schema_type_full_name(t),
                        "org.apache.qpid.dispatch.org.amqp.management");
}

static void inheritance_and_flags(void **state)
{
    (void)state;
    const jn_schema_type_t *listener = type_of("listener");
    assert_ptr_equal(jn_schema_type_base(listener), type_of("configurationEntity"));
    assert_ptr_equal(jn_schema_type_base(type_of("configurationEntity")), type_of("entity"));
    assert_null(jn_schema_type_base(type_of("entity")));
    assert_true(jn_schema_type_is_a(listener, type_of("entity")));
    assert_false(jn_schema_type_is_a(listener, type_of("operationalEntity")));
    assert_true(jn_schema_type_flags(type_of("router")) & JN_SCHEMA_TYPE_SINGLETON);
    assert_true(jn_schema_type_flags(type_of("policy")) & JN_SCHEMA_TYPE_SINGLETON);
    assert_true(jn_schema_type_flags(type_of("console")) & JN_SCHEMA_TYPE_DEPRECATED);
    assert_true(jn_schema_type_flags(type_of("sslProfile")) & JN_SCHEMA_TYPE_REFERENTIAL);
    assert_true(jn_schema_type_flags(type_of("entity")) & JN_SCHEMA_TYPE_ABSTRACT);
    assert_true(jn_schema_type_flags(listener) & JN_SCHEMA_TYPE_CONFIG);
    assert_false(jn_schema_type_flags(type_of("connection")) & JN_SCHEMA_TYPE_CONFIG);
    assert_false(jn_schema_type_flags(type_of("vhostUserGroupSettings")) & JN_SCHEMA_TYPE_CONFIG);
}

static void operations_include_inherited_read(void **state)
{
    (void)state;
    const jn_schema_type_t *listener = type_of("listener");
    assert_int_equal(jn_schema_type_op_count(listener), 3);
    assert_string_equal(jn_schema_type_op_at(listener, 0), "CREATE");
    assert_string_equal(jn_schema_type_op_at(listener, 2), "READ");
    assert_null(jn_schema_type_op_at(listener, 3));
    assert_true(jn_schema_type_has_op(listener, "DELETE"));
    assert_false(jn_schema_type_has_op(listener, "UPDATE"));
    assert_true(jn_schema_type_has_op(type_of("log"), "UPDATE"));
    assert_true(jn_schema_type_has_op(type_of("management"), "GET-MGMT-NODES"));
    assert_int_equal(jn_schema_type_op_count(type_of("entity")), 0);
}

static void attributes_flattened_with_inherited_first(void **state)
{
    (void)state;
    const jn_schema_type_t *t = type_of("listener");
    assert_string_equal(jn_schema_attr_name(jn_schema_type_attr_at(t, 0)), "name");
    assert_string_equal(jn_schema_attr_name(jn_schema_type_attr_at(t, 1)), "identity");
    assert_string_equal(jn_schema_attr_name(jn_schema_type_attr_at(t, 2)), "type");
    assert_string_equal(jn_schema_attr_name(jn_schema_type_attr_at(t, 3)), "host");
    size_t n = jn_schema_type_attr_count(t);
    assert_int_equal(n, 33);
    assert_null(jn_schema_type_attr_at(t, n));
    for (size_t i = 0; i < n; i++)
        assert_int_equal(jn_schema_attr_index(jn_schema_type_attr_at(t, i)), i);
}

static void attribute_found_by_deprecated_alias(void **state)
{
    (void)state;
    const jn_schema_attr_t *a = attr_of("router", "helloInterval");
    assert_string_equal(jn_schema_attr_name(a), "helloIntervalSeconds");
    assert_string_equal(jn_schema_attr_deprecation_name(a), "helloInterval");
    assert_ptr_equal(attr_of("router", "helloIntervalSeconds"), a);
    assert_string_equal(jn_schema_attr_name(attr_of("listener", "protocolFamily")),
                        "socketAddressFamily");
    assert_string_equal(jn_schema_attr_name(attr_of("connector", "protocolFamily")),
                        "protocolFamily");
    assert_string_equal(jn_schema_attr_name(attr_of("vhost", "id")), "hostname");
    assert_string_equal(jn_schema_attr_name(attr_of("autoLink", "addr")), "address");
    assert_null(jn_schema_attr_deprecation_name(attr_of("listener", "port")));
    assert_null(jn_schema_attr_find(type_of("listener"), "bogusAttr"));
    assert_null(jn_schema_attr_find(type_of("listener"), NULL));
}

static void listener_port_defaults_to_amqp(void **state)
{
    (void)state;
    const jn_schema_attr_t *port = attr_of("listener", "port");
    assert_int_equal(jn_schema_attr_kind(port), JN_SCHEMA_STRING);
    assert_string_equal(jn_schema_attr_default(port), "amqp");
    assert_true(jn_schema_attr_create(port));
    assert_false(jn_schema_attr_update(port));
    assert_false(jn_schema_attr_required(port));
    int64_t v = 0;
    assert_int_equal(jn_schema_attr_default_int(port, &v), JN_EINVAL);
    assert_string_equal(jn_schema_attr_default(attr_of("connector", "host")), "127.0.0.1");
    assert_string_equal(jn_schema_attr_default(attr_of("listener", "host")), "");
}

static void router_mode_defaults_to_standalone(void **state)
{
    (void)state;
    const jn_schema_attr_t *mode = attr_of("router", "mode");
    assert_int_equal(jn_schema_attr_kind(mode), JN_SCHEMA_ENUM);
    assert_string_equal(jn_schema_attr_default(mode), "standalone");
    int64_t idx = -1;
    assert_int_equal(jn_schema_attr_default_int(mode, &idx), 0);
    assert_int_equal(idx, 0);
    assert_int_equal(jn_schema_attr_enum_count(mode), 3);
    assert_string_equal(jn_schema_attr_enum_value(mode, 1), "interior");
    assert_null(jn_schema_attr_enum_value(mode, 3));
    assert_int_equal(jn_schema_attr_enum_index(mode, "edge"), 2);
    assert_int_equal(jn_schema_attr_enum_index(mode, "Edge"), JN_ENOENT);
}

static void address_distribution_defaults_to_balanced(void **state)
{
    (void)state;
    const jn_schema_attr_t *d = attr_of("address", "distribution");
    assert_string_equal(jn_schema_attr_default(d), "balanced");
    int64_t idx = -1;
    assert_int_equal(jn_schema_attr_default_int(d, &idx), 0);
    assert_int_equal(idx, 2);
    assert_string_equal(jn_schema_attr_default(attr_of("router", "defaultDistribution")),
                        "balanced");
    assert_string_equal(jn_schema_attr_default(attr_of("linkRoute", "distribution")),
                        "linkBalanced");
}

static void typed_defaults_of_integer_and_boolean(void **state)
{
    (void)state;
    int64_t v = 0;
    assert_int_equal(jn_schema_attr_default_int(attr_of("listener", "maxFrameSize"), &v), 0);
    assert_int_equal(v, 16384);
    assert_string_equal(jn_schema_attr_default(attr_of("listener", "maxFrameSize")), "16384");
    assert_int_equal(jn_schema_attr_default_int(attr_of("router", "workerThreads"), &v), 0);
    assert_int_equal(v, 4);
    bool b = false;
    assert_int_equal(jn_schema_attr_default_bool(attr_of("connector", "verifyHostname"), &b), 0);
    assert_true(b);
    assert_string_equal(jn_schema_attr_default(attr_of("listener", "authenticatePeer")), "false");
    assert_int_equal(jn_schema_attr_default_bool(attr_of("listener", "authenticatePeer"), &b), 0);
    assert_false(b);
    assert_int_equal(jn_schema_attr_default_bool(attr_of("listener", "port"), &b), JN_EINVAL);
    assert_int_equal(jn_schema_attr_default_int(attr_of("listener", "maxSessionFrames"), &v),
                     JN_ENOENT);
    assert_null(jn_schema_attr_default(attr_of("listener", "maxSessionFrames")));
    /* router.area's default is the number 0 in the 1.19 schema; it is a string. */
    assert_string_equal(jn_schema_attr_default(attr_of("router", "area")), "0");
}

static void required_create_update_and_other_flags(void **state)
{
    (void)state;
    assert_true(jn_schema_attr_required(attr_of("linkRoute", "direction")));
    assert_true(jn_schema_attr_required(attr_of("log", "module")));
    assert_true(jn_schema_attr_required(attr_of("vhost", "hostname")));
    assert_false(jn_schema_attr_create(attr_of("log", "enable")));
    assert_true(jn_schema_attr_update(attr_of("log", "enable")));
    assert_false(jn_schema_attr_create(attr_of("connector", "failoverUrls")));
    assert_true(jn_schema_attr_flags(attr_of("connector", "saslPassword")) & JN_SCHEMA_ATTR_HIDDEN);
    assert_true(jn_schema_attr_flags(attr_of("sslProfile", "passwordFile")) &
                JN_SCHEMA_ATTR_DEPRECATED);
    assert_true(jn_schema_attr_flags(attr_of("router", "addrCount")) & JN_SCHEMA_ATTR_STATISTIC);
    assert_true(jn_schema_attr_flags(attr_of("listener", "name")) & JN_SCHEMA_ATTR_UNIQUE);
}

static void kinds_of_attributes(void **state)
{
    (void)state;
    assert_int_equal(jn_schema_attr_kind(attr_of("listener", "openProperties")),
                     JN_SCHEMA_PROPERTIES);
    assert_int_equal(jn_schema_attr_kind(attr_of("vhost", "groups")), JN_SCHEMA_MAP);
    assert_int_equal(jn_schema_attr_kind(attr_of("router", "debugDumpFile")), JN_SCHEMA_PATH);
    assert_int_equal(jn_schema_attr_kind(attr_of("router.node", "routerLink")),
                     JN_SCHEMA_ENTITY_ID);
    assert_int_equal(jn_schema_attr_kind(attr_of("router.link", "ingressHistogram")),
                     JN_SCHEMA_LIST);
    assert_int_equal(jn_schema_attr_kind(attr_of("router", "workerThreads")), JN_SCHEMA_INTEGER);
    assert_int_equal(jn_schema_attr_kind(attr_of("listener", "http")), JN_SCHEMA_BOOLEAN);
    assert_string_equal(jn_schema_kind_name(JN_SCHEMA_ENTITY_ID), "entityId");
    assert_string_equal(jn_schema_kind_name(JN_SCHEMA_PROPERTIES), "properties");
    assert_string_equal(jn_schema_kind_name((jn_schema_kind_t)99), "unknown");
    assert_int_equal(jn_schema_attr_enum_count(attr_of("listener", "port")), 0);
}

/* Management columns: 1.19's order where the schema lists "columns" (with
 * aliases and computed columns), else the attributes; named positions in
 * the generated schema_ids.h agree with the lookups. */
static void columns_of_router_in_1_19_order(void **state)
{
    (void)state;
    const jn_schema_type_t *t = type_of("router");
    assert_int_equal(jn_schema_type_column_count(t), JN_COLS_ROUTER);
    assert_int_equal(JN_COLS_ROUTER, 33);
    assert_string_equal(jn_schema_type_column_name(t, 0), "name");
    assert_string_equal(jn_schema_type_column_name(t, 1), "identity");
    assert_string_equal(jn_schema_type_column_name(t, 2), "id");
    assert_string_equal(jn_schema_type_column_name(t, 3), "type");
    assert_int_equal(jn_schema_type_column_find(t, "addrCount"), JN_COL_ROUTER_ADDR_COUNT);
    assert_int_equal(JN_COL_ROUTER_ADDR_COUNT, 8);
    assert_ptr_equal(jn_schema_type_column_attr(t, JN_COL_ROUTER_ADDR_COUNT),
                     attr_of("router", "addrCount"));
    /* computed: no attribute behind it */
    assert_int_equal(jn_schema_type_column_find(t, "linksBlocked"), JN_COL_ROUTER_LINKS_BLOCKED);
    assert_null(jn_schema_type_column_attr(t, JN_COL_ROUTER_LINKS_BLOCKED));
    assert_string_equal(jn_schema_type_column_name(t, JN_COLS_ROUTER - 1), "workerThreads");
    /* an attribute that is not a column, an old name, out of range */
    assert_int_equal(jn_schema_type_column_find(t, "blockedLinkCount"), JN_ENOENT);
    assert_int_equal(jn_schema_type_column_find(t, "helloInterval"), JN_ENOENT);
    assert_int_equal(jn_schema_type_column_find(t, NULL), JN_ENOENT);
    assert_null(jn_schema_type_column_name(t, JN_COLS_ROUTER));
    assert_null(jn_schema_type_column_attr(t, JN_COLS_ROUTER));
    assert_int_equal(jn_schema_type_index(t), JN_ENTITY_ROUTER);
}

static void column_aliases_show_their_attribute(void **state)
{
    (void)state;
    const jn_schema_type_t *lr = type_of("linkRoute");
    assert_ptr_equal(jn_schema_type_column_attr(lr, JN_COL_ROUTER_CONFIG_LINK_ROUTE_DIR),
                     attr_of("linkRoute", "direction"));
    assert_ptr_equal(jn_schema_type_column_attr(lr, JN_COL_ROUTER_CONFIG_LINK_ROUTE_DIRECTION),
                     attr_of("linkRoute", "direction"));
    assert_null(jn_schema_type_column_attr(lr, JN_COL_ROUTER_CONFIG_LINK_ROUTE_OPER_STATUS));
    const jn_schema_type_t *addr = type_of("address");
    assert_int_equal(jn_schema_type_column_find(addr, "fallback"),
                     JN_COL_ROUTER_CONFIG_ADDRESS_FALLBACK);
    assert_ptr_equal(jn_schema_type_column_attr(addr, JN_COL_ROUTER_CONFIG_ADDRESS_FALLBACK),
                     attr_of("address", "enableFallback"));
    assert_int_equal(jn_schema_type_column_find(addr, "enableFallback"), JN_ENOENT);
    /* computed under an attribute's name */
    assert_null(jn_schema_type_column_attr(addr, JN_COL_ROUTER_CONFIG_ADDRESS_PRIORITY));
    const jn_schema_type_t *al = type_of("autoLink");
    assert_ptr_equal(jn_schema_type_column_attr(al, JN_COL_ROUTER_CONFIG_AUTO_LINK_EXTERNAL_ADDR),
                     attr_of("autoLink", "externalAddress"));
    assert_ptr_equal(jn_schema_type_column_attr(al, JN_COL_ROUTER_CONFIG_AUTO_LINK_ADDR),
                     attr_of("autoLink", "address"));
    const jn_schema_type_t *conn = type_of("connection");
    assert_int_equal(jn_schema_type_column_find(conn, "host"), 2);
    assert_null(jn_schema_type_column_attr(conn, JN_COL_CONNECTION_ACTIVE));
}

static void columns_default_to_the_attributes(void **state)
{
    (void)state;
    for (size_t i = 0; i < jn_schema_type_count(); i++) {
        const jn_schema_type_t *t = jn_schema_type_at(i);
        assert_string_equal(jn_schema_type_column_name(t, 0), "name");
        assert_string_equal(jn_schema_type_column_name(t, 1), "identity");
    }
    static const char *const plain[] = {"listener",  "connector",   "sslProfile", "log",
                                        "allocator", "router.node", "management", "vhost"};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        const jn_schema_type_t *t = type_of(plain[i]);
        size_t n = jn_schema_type_attr_count(t);
        assert_int_equal(jn_schema_type_column_count(t), n);
        for (size_t k = 0; k < n; k++) {
            assert_ptr_equal(jn_schema_type_column_attr(t, k), jn_schema_type_attr_at(t, k));
            assert_string_equal(jn_schema_type_column_name(t, k),
                                jn_schema_attr_name(jn_schema_type_attr_at(t, k)));
        }
    }
    assert_int_equal(JN_COLS_LISTENER, 33);
    assert_int_equal(JN_COL_ALLOCATOR_TYPE_NAME, 3);
}

/* The types Junction acts on, and those it only knows by name. */
static void implemented_types(void **state)
{
    (void)state;
    static const char *const yes[] = {"router",
                                      "sslProfile",
                                      "authServicePlugin",
                                      "listener",
                                      "connector",
                                      "address",
                                      "linkRoute",
                                      "autoLink",
                                      "exchange",
                                      "binding",
                                      "router.connection.linkRoute",
                                      "dummy",
                                      "log",
                                      "policy",
                                      "vhost",
                                      "vhostStats",
                                      "connection",
                                      "router.link",
                                      "router.address",
                                      "router.node",
                                      "allocator",
                                      "logStats",
                                      "management",
                                      "org.amqp.management",
                                      "entity",
                                      "configurationEntity",
                                      "operationalEntity"};
    static const char *const no[] = {"vhostUserGroupSettings", "console"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!jn_schema_type_implemented(type_of(yes[i])))
            fail_msg("type '%s' should be implemented", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (jn_schema_type_implemented(type_of(no[i])))
            fail_msg("type '%s' should not be implemented", no[i]);
    /* every type is one or the other, and the two lists name them all */
    assert_int_equal(jn_schema_type_count(), sizeof yes / sizeof yes[0] + sizeof no / sizeof no[0]);
}

/* Attributes of implemented types that Junction does not act on; the
 * others (names, metadata, mesh timers) are implemented. */
static void implemented_attributes(void **state)
{
    (void)state;
    static const struct {
        const char *type, *attr;
    } no[] = {{"listener", "trustedCertsFile"}};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (jn_schema_attr_implemented(attr_of(no[i].type, no[i].attr)))
            fail_msg("%s.%s should not be implemented", no[i].type, no[i].attr);
    static const struct {
        const char *type, *attr;
    } yes[] = {{"policy", "enableVhostNamePatterns"}, /* vhost policy (issue 15) */
               {"listener", "multiTenant"},             /* tenant spaces */
               {"connector", "failoverUrls"},           /* io_failover.c */
               {"listener", "socketAddressFamily"},     /* issue 25 */
               {"connector", "protocolFamily"},
               {"vhost", "maxMessageSize"},
               {"connector", "policyVhost"},
               {"listener", "http"}, /* websockets: AMQP over WebSocket (router/http) */
               {"listener", "websockets"},
               {"listener", "name"},
               {"listener", "host"},
               {"listener", "port"},
               {"listener", "role"},
               {"listener", "saslMechanisms"},
               {"listener", "authenticatePeer"},
               {"listener", "saslPlugin"},
               {"connector", "host"},
               {"connector", "cost"},
               {"router", "id"},
               {"router", "mode"},
               {"router", "metadata"},
               {"router", "helloIntervalSeconds"},
               {"address", "prefix"},
               {"address", "distribution"},
               {"address", "multicastBackpressure"},
               {"address", "waypoint"},
               {"address", "ingressPhase"},
               {"address", "egressPhase"},
               {"address", "enableFallback"},
               {"policy", "maxMessageSize"},
               {"policy", "maxConnections"},
               {"log", "enable"},
               {"connection", "adminStatus"}};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!jn_schema_attr_implemented(attr_of(yes[i].type, yes[i].attr)))
            fail_msg("%s.%s should be implemented", yes[i].type, yes[i].attr);
    /* the answer is the attribute's own: a type that is not implemented
     * does not mark its attributes */
    assert_true(jn_schema_attr_implemented(attr_of("sslProfile", "certFile")));
}

/* Enum values: router mode and endpoint roles list what is implemented;
 * other attributes and enums implement every value. */
static void implemented_enum_values(void **state)
{
    (void)state;
    const jn_schema_attr_t *mode = attr_of("router", "mode");
    assert_true(jn_schema_attr_value_implemented(mode, "standalone"));
    assert_true(jn_schema_attr_value_implemented(mode, "interior"));
    assert_true(jn_schema_attr_value_implemented(mode, "edge"));
    static const char *const endpoints[] = {"listener", "connector"};
    for (size_t i = 0; i < 2; i++) {
        const jn_schema_attr_t *role = attr_of(endpoints[i], "role");
        assert_true(jn_schema_attr_value_implemented(role, "normal"));
        assert_true(jn_schema_attr_value_implemented(role, "inter-router"));
        assert_true(jn_schema_attr_value_implemented(role, "route-container"));
    }
    /* edge routers (issue 17): an interior's edge listener, an edge's
     * connector */
    assert_true(jn_schema_attr_value_implemented(attr_of("listener", "role"), "edge"));
    assert_true(jn_schema_attr_value_implemented(attr_of("connector", "role"), "edge"));
    /* not a value of the enum, or none: not this function's to refuse */
    assert_true(jn_schema_attr_value_implemented(mode, "Edge"));
    assert_true(jn_schema_attr_value_implemented(mode, "bogus"));
    assert_true(jn_schema_attr_value_implemented(mode, NULL));
    /* an enum without implementedValues, a string, an unimplemented attribute */
    const jn_schema_attr_t *dist = attr_of("address", "distribution");
    for (size_t k = 0; k < jn_schema_attr_enum_count(dist); k++)
        assert_true(jn_schema_attr_value_implemented(dist, jn_schema_attr_enum_value(dist, k)));
    assert_true(jn_schema_attr_value_implemented(attr_of("listener", "port"), "5672"));
    assert_true(jn_schema_attr_value_implemented(attr_of("listener", "sslProfile"), "tls"));
    /* the log module enum has 17 values, the widest that could be marked */
    const jn_schema_attr_t *module = attr_of("log", "module");
    assert_int_equal(jn_schema_attr_enum_count(module), 17);
    assert_true(jn_schema_attr_value_implemented(module, "DEFAULT"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(type_found_by_full_short_and_prefixless_name),
        cmocka_unit_test(type_unknown_or_miscased_name_not_found),
        cmocka_unit_test(every_type_of_the_1_19_schema_present),
        cmocka_unit_test(management_type_keeps_1_19_odd_full_name),
        cmocka_unit_test(inheritance_and_flags),
        cmocka_unit_test(operations_include_inherited_read),
        cmocka_unit_test(attributes_flattened_with_inherited_first),
        cmocka_unit_test(attribute_found_by_deprecated_alias),
        cmocka_unit_test(listener_port_defaults_to_amqp),
        cmocka_unit_test(router_mode_defaults_to_standalone),
        cmocka_unit_test(address_distribution_defaults_to_balanced),
        cmocka_unit_test(typed_defaults_of_integer_and_boolean),
        cmocka_unit_test(required_create_update_and_other_flags),
        cmocka_unit_test(kinds_of_attributes),
        cmocka_unit_test(columns_of_router_in_1_19_order),
        cmocka_unit_test(column_aliases_show_their_attribute),
        cmocka_unit_test(columns_default_to_the_attributes),
        cmocka_unit_test(implemented_types),
        cmocka_unit_test(implemented_attributes),
        cmocka_unit_test(implemented_enum_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
