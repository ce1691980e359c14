/*
 * test_mgmt_entities.c — the management agent's configured entities and
 * paging: CREATE/READ/QUERY/DELETE of listener and connector through fake
 * I/O hooks, address / linkRoute / autoLink / sslProfile validation and
 * storage, entities loaded from a config file, log UPDATE acting at once,
 * and QUERY paging (offset/count over many entities, the last page, count
 * 0, one type and all types), the dummy test entity, and the identities
 * and names of a QUERY of every type.
 */
#include "test_mgmt_util.h"

#include <junction/config.h>

#include <unistd.h>

static void body_listener(jn_encoder_t *e, void *arg)
{
    const char *port = arg;
    jn_enc_map_begin(e);
    jn_enc_cstring(e, "host");
    jn_enc_cstring(e, "127.0.0.1");
    jn_enc_cstring(e, "port");
    jn_enc_cstring(e, port);
    jn_enc_cstring(e, "maxFrameSize");
    jn_enc_cstring(e, "4096"); /* qdmanage sends A=V as text */
    jn_enc_map_end(e);
}

static void test_listener_create_read_delete(void **state)
{
    (void)state;
    fake_io_t io = {0};
    jn_mgmt_t *agent = new_agent(&io);
    reply_t r;
    expect(agent,
           &REQ(.op = "CREATE", .type = JN_SCHEMA_PREFIX ".listener", .name = "l1",
                .body = body_listener, .arg = "5999"),
           201, &r);
    assert_int_equal(io.listeners, 1);
    assert_string_equal(io.last_name, "l1");
    assert_string_equal(io.last_port, "5999");
    assert_string_equal(io.last_host, "127.0.0.1");
    assert_string_equal(tv_get(&r.body, "identity")->s, "listener/127.0.0.1:5999:l1");
    assert_int_equal(tv_get(&r.body, "maxFrameSize")->i, 4096);
    assert_string_equal(tv_get(&r.body, "role")->s, "normal"); /* default */
    reply_clear(&r);

    /* same name again: refused, nothing new listens */
    expect(agent,
           &REQ(.op = "CREATE", .type = "listener", .name = "l1", .body = body_listener,
                .arg = "6000"),
           400, &r);
    assert_non_null(strstr(r.description, "Name conflicts"));
    assert_int_equal(io.listeners, 1);
    reply_clear(&r);

    expect(agent, &REQ(.op = "READ", .type = "listener", .name = "l1"), 200, &r);
    assert_string_equal(tv_get(&r.body, "port")->s, "5999");
    reply_clear(&r);
    expect(agent, &REQ(.op = "READ", .type = "listener", .identity = "listener/127.0.0.1:5999:l1"),
           200, &r);
    reply_clear(&r);

    static const char *const cols[] = {"name", "port", NULL};
    expect(agent,
           &REQ(.op = "QUERY", .entity_type = "listener", .body = body_attribute_names,
                .arg = (void *)cols),
           200, &r);
    tv_t *rows = tv_get(&r.body, "results");
    assert_int_equal(rows->n, 1);
    assert_string_equal(rows->items[0].items[1].s, "5999");
    reply_clear(&r);

    expect(agent, &REQ(.op = "DELETE", .type = "listener", .name = "l1"), 204, &r);
    assert_int_equal(io.removed, 1);
    assert_string_equal(io.removed_name, "l1");
    reply_clear(&r);
    expect(agent, &REQ(.op = "READ", .type = "listener", .name = "l1"), 404, &r);
    reply_clear(&r);
    assert_int_equal(jn_mgmt_entity_count(agent), 0);
    jn_mgmt_free(agent);
}

static void body_port_list(jn_encoder_t *e, void *arg)
{
    (void)arg;
    jn_enc_map_begin(e);
    jn_enc_cstring(e, "port");
    jn_enc_list_begin(e);
    jn_enc_list_end(e);
    jn_enc_map_end(e);
}

static void body_bool_frame(jn_encoder_t *e, void *arg)
{
    (void)arg;
    jn_enc_map_begin(e);
    jn_enc_cstring(e, "maxFrameSize");
    jn_enc_cstring(e, "big");
    jn_enc_map_end(e);
}

static void body_name_conflict(jn_encoder_t *e, void *arg)
{
    (void)arg;
    jn_enc_map_begin(e);
    jn_enc_cstring(e, "name");
    jn_enc_cstring(e, "other");
    jn_enc_map_end(e);
}

static void refused(jn_mgmt_t *agent, const req_t *rq, const char *word)
{
    reply_t r;
    expect(agent, rq, 400, &r);
    if (!strstr(r.description, word))
        fail_msg("description '%s' does not mention '%s'", r.description, word);
    reply_clear(&r);
}

static void test_create_validation(void **state)
{
    (void)state;
    fake_io_t io = {0};
    jn_mgmt_t *agent = new_agent(&io);
    static const char *const unknown[] = {"port", "1", "bogusAttr", "x", NULL};
    static const char *const identity[] = {"identity", "5", NULL};
    static const char *const stat[] = {"connectionStatus", "x", NULL};
    static const char *const role[] = {"role", "inter-router", NULL};
    static const char *const bad_enum[] = {"stripAnnotations", "sideways", NULL};
    refused(agent,
            &REQ(.op = "CREATE", .type = "listener", .name = "a", .body = body_string_map,
                 .arg = (void *)unknown),
            "bogusAttr");
    refused(agent, &REQ(.op = "CREATE", .type = "listener", .name = "a", .body = body_port_list),
            "'port'");
    refused(agent, &REQ(.op = "CREATE", .type = "listener", .name = "a", .body = body_bool_frame),
            "maxFrameSize");
    refused(agent,
            &REQ(.op = "CREATE", .type = "listener", .name = "a", .body = body_string_map,
                 .arg = (void *)identity),
            "identity");
    refused(agent,
            &REQ(.op = "CREATE", .type = "connector", .name = "a", .body = body_string_map,
                 .arg = (void *)stat),
            "connectionStatus");
    refused(agent,
            &REQ(.op = "CREATE", .type = "connector", .name = "a", .body = body_string_map,
                 .arg = (void *)role),
            "role");
    refused(agent,
            &REQ(.op = "CREATE", .type = "connector", .name = "a", .body = body_string_map,
                 .arg = (void *)bad_enum),
            "stripAnnotations");
    refused(agent,
            &REQ(.op = "CREATE", .type = "connector", .name = "a", .body = body_name_conflict),
            "Conflicting values for 'name'");
    assert_int_equal(io.listeners + io.connectors, 0);
    /* the I/O layer refusing is a 400 too, and nothing is kept */
    io.fail_with = JN_EINVAL;
    refused(
        agent,
        &REQ(.op = "CREATE", .type = "listener", .name = "a", .body = body_listener, .arg = "1"),
        "cannot listen on");
    assert_int_equal(jn_mgmt_entity_count(agent), 0);
    jn_mgmt_free(agent);
}

static void body_typed_connector(jn_encoder_t *e, void *arg)
{
    (void)arg;
    jn_enc_map_begin(e);
    jn_enc_cstring(e, "type");
    jn_enc_cstring(e, "connector");
    jn_enc_cstring(e, "name");
    jn_enc_cstring(e, "c1");
    jn_enc_cstring(e, "port");
    jn_enc_int(e, 5673); /* an integer for a string attribute: written in decimal */
    jn_enc_map_end(e);
}

static void test_connector_type_and_name_in_body(void **state)
{
    (void)state;
    fake_io_t io = {0};
    jn_mgmt_t *agent = new_agent(&io);
    reply_t r;
    expect(agent, &REQ(.op = "CREATE", .body = body_typed_connector), 201, &r);
    assert_string_equal(tv_get(&r.body, "name")->s, "c1");
    assert_string_equal(tv_get(&r.body, "host")->s, "127.0.0.1"); /* connector default */
    reply_clear(&r);
    assert_int_equal(io.connectors, 1);
    assert_string_equal(io.last_port, "5673");
    /* a listener may not take a connector's name (the I/O layer's names) */
    refused(
        agent,
        &REQ(.op = "CREATE", .type = "listener", .name = "c1", .body = body_listener, .arg = "1"),
        "Name conflicts");
    expect(agent,
           &REQ(.op = "DELETE", .type = "connector", .identity = "connector/127.0.0.1:5673:c1"),
           204, &r);
    reply_clear(&r);
    assert_string_equal(io.removed_name, "c1");
    jn_mgmt_free(agent);
}

static void test_address_and_links(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    static const char *const both[] = {"prefix", "a", "pattern", "b.*", NULL};
    static const char *const neither[] = {"distribution", "closest", NULL};
    static const char *const phase[] = {"prefix", "a", "ingressPhase", "12", NULL};
    static const char *const ok[] = {"prefix", "mc", "distribution", "multicast", NULL};
    static const char *const lr[] = {"prefix", "lr", "direction", "in", NULL};
    static const char *const al[] = {"addr", "q", "dir", "out", "containerId", "broker", NULL};
    refused(agent,
            &REQ(.op = "CREATE", .type = "router.config.address", .body = body_string_map,
                 .arg = (void *)both),
            "both a 'prefix' and a 'pattern'");
    refused(agent,
            &REQ(.op = "CREATE", .type = "router.config.address", .body = body_string_map,
                 .arg = (void *)neither),
            "either a 'prefix' or 'pattern'");
    refused(agent,
            &REQ(.op = "CREATE", .type = "router.config.address", .body = body_string_map,
                 .arg = (void *)phase),
            "ingressPhase must be between 0 and 9");
    /* linkRoute and autoLink: 1.19's rules, in its words */
    static const char *const lr_nodir[] = {"prefix", "lr", "connection", "c", NULL};
    static const char *const lr_both[] = {"prefix", "lr", "direction", "in", "connection", "c",
                                          "containerId", "d", NULL};
    static const char *const lr_two[] = {"prefix", "lr", "pattern", "lr.*", "direction", "in",
                                         NULL};
    static const char *const al_nodir[] = {"address", "q", "containerId", "broker", NULL};
    static const char *const al_phase[] = {"address", "q", "direction", "in", "phase", "12",
                                           "containerId", "broker", NULL};
    static const struct {
        const char *type;
        const char *const *attrs;
        const char *word;
    } bad[] = {
        {"router.config.linkRoute", lr_nodir, "No 'direction' attribute provided - it is mandatory"},
        {"router.config.linkRoute", lr_both,
         "Both connection and containerId cannot be specified. Specify only one"},
        {"router.config.linkRoute", lr_two, "Cannot specify both a 'prefix' and a 'pattern'"},
        {"router.config.autoLink", al_nodir, "address and direction fields are mandatory"},
        {"router.config.autoLink", al_phase, "autoLink phase must be between 0 and 9"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused(agent, &REQ(.op = "CREATE", .type = bad[i].type, .body = body_string_map,
                            .arg = (void *)bad[i].attrs),
                bad[i].word);
    reply_t r;
    expect(agent,
           &REQ(.op = "CREATE", .type = "router.config.address", .name = "mc",
                .body = body_string_map, .arg = (void *)ok),
           201, &r);
    assert_string_equal(tv_get(&r.body, "distribution")->s, "multicast");
    assert_string_equal(tv_get(&r.body, "identity")->s, "1");
    assert_int_equal(tv_get(&r.body, "priority")->type, JN_TYPE_INT);
    assert_int_equal(tv_get(&r.body, "priority")->i, -1);
    assert_false(tv_get(&r.body, "fallback")->b);
    reply_clear(&r);
    expect(agent, &REQ(.op = "DELETE", .type = "router.config.address", .identity = "1"), 204, &r);
    reply_clear(&r);
    assert_int_equal(jn_mgmt_entity_count(agent), 0);
    reply_t lr_r, al_r;
    expect(agent,
           &REQ(.op = "CREATE", .type = "router.config.linkRoute", .name = "lr",
                .body = body_string_map, .arg = (void *)lr),
           201, &lr_r);
    reply_clear(&lr_r);
    expect(agent,
           &REQ(.op = "CREATE", .type = "router.config.autoLink", .name = "al",
                .body = body_string_map, .arg = (void *)al),
           201, &al_r);
    reply_clear(&al_r);
    assert_int_equal(jn_mgmt_entity_count(agent), 2);
    jn_mgmt_free(agent);
}

static void create_connectors(jn_mgmt_t *agent, int n)
{
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "p%04d", i);
        reply_t r;
        expect(agent,
               &REQ(.op = "CREATE", .type = "connector", .name = name, .body = body_listener,
                    .arg = "5672"),
               201, &r);
        reply_clear(&r);
    }
}

static size_t page(jn_mgmt_t *agent, const char *type, int64_t offset, int64_t count, char *first,
                   size_t first_cap)
{
    reply_t r;
    static const char *const cols[] = {"name", NULL};
    expect(agent,
           &REQ(.op = "QUERY", .entity_type = type, .offset = offset, .count = count,
                .body = body_attribute_names, .arg = (void *)cols),
           200, &r);
    tv_t *rows = tv_get(&r.body, "results");
    size_t n = rows->n;
    if (first && n)
        snprintf(first, first_cap, "%s", rows->items[0].items[0].s);
    reply_clear(&r);
    return n;
}

static void test_paging(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    create_connectors(agent, 1203);
    char first[32] = "";
    assert_int_equal(page(agent, "connector", 0, 500, first, sizeof first), 500);
    assert_string_equal(first, "p0000");
    assert_int_equal(page(agent, "connector", 500, 500, first, sizeof first), 500);
    assert_string_equal(first, "p0500");
    assert_int_equal(page(agent, "connector", 1000, 500, first, sizeof first), 203);
    assert_string_equal(first, "p1000");
    assert_int_equal(page(agent, "connector", 1203, 500, NULL, 0), 0);
    assert_int_equal(page(agent, "connector", 5000, 500, NULL, 0), 0);
    assert_int_equal(page(agent, "connector", 0, 0, NULL, 0), 0);
    assert_int_equal(page(agent, "connector", -1, -1, NULL, 0), 1203); /* no count: all */
    assert_int_equal(page(agent, "connector", 1202, -1, first, sizeof first), 1);
    assert_string_equal(first, "p1202");
    /* all types: router, 1203 connectors, 17 log modules, allocators, self */
    size_t all = page(agent, NULL, -1, -1, first, sizeof first);
    assert_string_equal(first, "router/R1"); /* as 1.19's Python agent names it there */
    assert_true(all >= 1 + 1203 + 17 + 1);
    size_t walked = 0, got;
    for (int64_t off = 0; (got = page(agent, NULL, off, 500, NULL, 0)) > 0; off += 500)
        walked += got;
    assert_int_equal(walked, all);
    /* across a type boundary: the last connector, then the first log module */
    assert_int_equal(page(agent, NULL, 1203, 2, first, sizeof first), 2);
    assert_string_equal(first, "p1202");
    assert_int_equal(page(agent, NULL, 1204, 1, first, sizeof first), 1);
    assert_string_equal(first, "log/ROUTER");
    jn_mgmt_free(agent);
}

static void test_query_all_columns(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    reply_t r;
    expect(
        agent,
        &REQ(.op = "QUERY", .entity_type = "org.apache.qpid.dispatch.log", .body = body_empty_map),
        200, &r);
    tv_t *names = tv_get(&r.body, "attributeNames"), *rows = tv_get(&r.body, "results");
    assert_string_equal(names->items[0].s, "name");
    assert_int_equal(rows->n, JN_LOG_SCHEMA_MODULE_COUNT);
    assert_int_equal(rows->items[0].n, names->n);
    reply_clear(&r);
    /* a type the agent does not serve: its columns, no rows */
    expect(agent, &REQ(.op = "QUERY", .entity_type = "vhost"), 200, &r);
    assert_int_equal(tv_get(&r.body, "results")->n, 0);
    assert_true(tv_list_has(tv_get(&r.body, "attributeNames"), "hostname"));
    reply_clear(&r);
    /* no entityType, no names: the union of the columns */
    expect(agent, &REQ(.op = "QUERY", .type = "org.amqp.management", .name = "self"), 200, &r);
    names = tv_get(&r.body, "attributeNames");
    assert_true(tv_list_has(names, "linkDir"));
    assert_true(tv_list_has(names, "typeName"));
    reply_clear(&r);
    jn_mgmt_free(agent);
}

static void test_log_update(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    static const char *const en[] = {"enable", "trace+", "includeSource", "yes", NULL};
    static const char *const bad_en[] = {"enable", "loud+", NULL};
    static const char *const bad_attr[] = {"module", "ROUTER", "colour", "red", NULL};
    reply_t r;
    expect(agent,
           &REQ(.op = "UPDATE", .type = "log", .name = "log/AGENT", .body = body_string_map,
                .arg = (void *)en),
           200, &r);
    assert_string_equal(tv_get(&r.body, "enable")->s, "trace+");
    assert_true(tv_get(&r.body, "includeSource")->b);
    reply_clear(&r);
    jn_log_config_t lc;
    jn_log_get_config(JN_LOG_MOD_AGENT, &lc);
    assert_int_equal(lc.mask, JN_LOG_MASK_ALL);
    assert_true(jn_log_enabled(JN_LOG_MOD_AGENT, JN_LOG_TRACE));
    refused(agent,
            &REQ(.op = "UPDATE", .type = "log", .identity = "log/AGENT", .body = body_string_map,
                 .arg = (void *)bad_en),
            "enable");
    refused(agent,
            &REQ(.op = "UPDATE", .type = "log", .name = "AGENT", .body = body_string_map,
                 .arg = (void *)bad_attr),
            "colour");
    assert_true(jn_log_enabled(JN_LOG_MOD_AGENT, JN_LOG_TRACE)); /* unchanged */
    expect(agent, &REQ(.op = "READ", .type = "log", .name = "AGENT"), 200, &r);
    assert_string_equal(tv_get(&r.body, "identity")->s, "log/AGENT");
    reply_clear(&r);
    expect(agent, &REQ(.op = "UPDATE", .type = "log", .name = "log/NOPE", .body = body_empty_map),
           404, &r);
    reply_clear(&r);
    jn_log_shutdown();
    jn_mgmt_free(agent);
}

/* One bad value, as a config-file section and as a CREATE. */
typedef struct same_text_case {
    const char *section;       /* the file's text after a router section */
    const char *type;          /* the CREATE's type */
    const char *const *attrs;  /* the CREATE's body (string pairs) */
} same_text_case_t;

static void test_refusal_same_text_from_file_and_management(void **state)
{
    (void)state;
    static const char *const port[] = {"host", "127.0.0.1", "port", "99999", NULL};
    static const char *const ssl[] = {"port", "5672", "requireSsl", "true", NULL};
    static const char *const both[] = {"prefix", "a", "pattern", "b", NULL};
    static const char *const cost[] = {"port", "5672", "cost", "0", NULL};
    static const char *const lr[] = {"prefix", "b", "direction", "in", "connection", "c",
                                     "containerId", "d", NULL};
    static const char *const idle[] = {"port", "5672", "idleTimeoutSeconds", "-1", NULL};
    static const char *const dots[] = {"prefix", "./", "direction", "in", NULL};
    static const char *const vconn[] = {"hostname", "h", "maxConnections", "-1", NULL};
    static const same_text_case_t cases[] = {
        {"listener {\n host: 127.0.0.1\n port: 99999\n}\n", "listener", port},
        {"connector {\n port: 5672\n idleTimeoutSeconds: -1\n}\n", "connector", idle},
        {"listener {\n port: 5672\n idleTimeoutSeconds: -1\n}\n", "listener", idle},
        {"linkRoute {\n prefix: ./\n direction: in\n}\n", "router.config.linkRoute", dots},
        {"vhost {\n hostname: h\n maxConnections: -1\n}\n", "vhost", vconn},
        {"listener {\n port: 5672\n requireSsl: yes\n}\n", "listener", ssl},
        {"address {\n prefix: a\n pattern: b\n}\n", "router.config.address", both},
        {"connector {\n port: 5672\n cost: 0\n}\n", "connector", cost},
        {"linkRoute {\n prefix: b\n direction: in\n connection: c\n containerId: d\n}\n",
         "router.config.linkRoute", lr},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512], err[JN_CONFIG_ERROR_MAX], errors[1024];
        snprintf(text, sizeof text, "router {\n mode: standalone\n}\n%s", cases[i].section);
        jn_config_t *cfg = NULL;
        assert_int_equal(jn_config_load_string("t.conf", text, strlen(text), &cfg, err, sizeof err),
                         0);
        assert_int_equal(jn_mgmt_plan_config(cfg, NULL, errors, sizeof errors), 1);
        jn_config_free(cfg);
        jn_mgmt_t *agent = new_agent(NULL);
        reply_t r;
        expect(agent,
               &REQ(.op = "CREATE", .type = cases[i].type, .name = "x", .body = body_string_map,
                    .arg = (void *)cases[i].attrs),
               400, &r);
        /* "t.conf:LINE: " then exactly the management description */
        const char *after = strchr(strchr(errors, ':') + 1, ':');
        assert_non_null(after);
        assert_string_equal(after + 2, r.description);
        reply_clear(&r);
        jn_mgmt_free(agent);
    }
}

static const char config_text[] = "router {\n mode: standalone\n id: R1\n}\n"
                                  "listener {\n host: 127.0.0.1\n port: 5672\n}\n"
                                  "listener {\n name: second\n port: 5673\n}\n"
                                  "connector {\n name: up\n host: 127.0.0.1\n port: 6000\n}\n"
                                  "address {\n prefix: mc\n distribution: multicast\n}\n"
                                  "log {\n module: DEFAULT\n enable: info+\n}\n";

static void test_load_config(void **state)
{
    (void)state;
    jn_config_t *cfg = NULL;
    char err[JN_CONFIG_ERROR_MAX];
    assert_int_equal(jn_config_load_string("test.conf", config_text, sizeof config_text - 1, &cfg,
                                           err, sizeof err),
                     0);
    fake_io_t io = {0};
    jn_mgmt_t *agent = new_agent(&io);
    char errors[512];
    jn_router_settings_t settings;
    assert_int_equal(jn_mgmt_plan_config(cfg, &settings, errors, sizeof errors), 0);
    /* workerThreads not given: one loop per core, not 1.19's 4 (docs/compat.md) */
    assert_int_equal(settings.workers, (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
    assert_int_equal(jn_mgmt_load_config_CT(agent, cfg, errors, sizeof errors), 0); /* takes cfg */
    assert_int_equal(jn_mgmt_entity_count(agent), 4);
    /* loading goes through the CREATE path: it acts */
    assert_int_equal(io.listeners, 2);
    assert_int_equal(io.connectors, 1);
    reply_t r;
    expect(agent, &REQ(.op = "QUERY", .entity_type = "listener"), 200, &r);
    tv_t *names = tv_get(&r.body, "attributeNames"), *rows = tv_get(&r.body, "results");
    assert_int_equal(rows->n, 2);
    assert_string_equal(names->items[1].s, "identity");
    assert_string_equal(rows->items[0].items[1].s, "listener/127.0.0.1:5672");
    assert_string_equal(rows->items[0].items[0].s, "listener/127.0.0.1:5672");
    assert_string_equal(rows->items[1].items[0].s, "second");
    reply_clear(&r);
    expect(agent, &REQ(.op = "READ", .type = "router.config.address", .identity = "1"), 200, &r);
    assert_string_equal(tv_get(&r.body, "prefix")->s, "mc");
    assert_string_equal(tv_get(&r.body, "distribution")->s, "multicast");
    reply_clear(&r);
    expect(agent, &REQ(.op = "DELETE", .type = "connector", .name = "up"), 204, &r);
    reply_clear(&r);
    assert_string_equal(io.removed_name, "up");
    jn_mgmt_free(agent);
}

static void props_data(jn_encoder_t *e, void *arg)
{
    (void)arg;
    jn_enc_cstring(e, "data");
    jn_enc_long(e, -42);
}

/* The dummy entity of 1.19's schema: CREATE, READ, UPDATE (a number given
 * as text, as qdmanage sends it, becomes a number), CALLME (the request's
 * application properties come back, values typed as sent), DELETE; its
 * maps hold only the attributes it has. */
static void test_dummy_entity(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    reply_t r;
    static const char *const start[] = {"arg1", "START", NULL};
    expect(agent,
           &REQ(.op = "CREATE", .type = JN_SCHEMA_PREFIX ".dummy", .name = "d1",
                .body = body_string_map, .arg = (void *)start),
           201, &r);
    assert_int_equal(r.body.n, 8); /* name, identity, type, arg1: nothing null */
    assert_string_equal(tv_get(&r.body, "arg1")->s, "START");
    char identity[64];
    snprintf(identity, sizeof identity, "%s", tv_get(&r.body, "identity")->s);
    assert_memory_equal(identity, "dummy/", 6);
    reply_clear(&r);
    static const char *const change[] = {"arg1", "one", "num1", "42", NULL};
    expect(agent,
           &REQ(.op = "UPDATE", .type = "dummy", .identity = identity, .body = body_string_map,
                .arg = (void *)change),
           200, &r);
    assert_int_equal(tv_get(&r.body, "num1")->i, 42);
    reply_clear(&r);
    expect(agent, &REQ(.op = "READ", .name = "d1"), 200, &r); /* no type: found by name */
    assert_string_equal(tv_get(&r.body, "arg1")->s, "one");
    reply_clear(&r);
    static const char *const bad[] = {"badattribute", "Bad", NULL};
    expect(agent,
           &REQ(.op = "UPDATE", .type = "dummy", .name = "d1", .body = body_string_map,
                .arg = (void *)bad),
           400, &r);
    reply_clear(&r);
    expect(agent,
           &REQ(.op = "callme", .type = JN_SCHEMA_PREFIX ".dummy", .identity = identity,
                .props = props_data),
           200, &r);
    assert_string_equal(tv_get(&r.body, "operation")->s, "callme");
    assert_string_equal(tv_get(&r.body, "identity")->s, identity);
    assert_int_equal(tv_get(&r.body, "data")->i, -42);
    reply_clear(&r);
    /* the wrong type for an entity that is there: 400, not 404 */
    expect(agent, &REQ(.op = "READ", .type = "listener", .name = "d1"), 400, &r);
    reply_clear(&r);
    expect(agent, &REQ(.op = "CALLME", .type = "listener", .name = "d1"), 501, &r);
    reply_clear(&r);
    expect(agent, &REQ(.op = "DELETE", .type = "dummy", .name = "d1"), 204, &r);
    reply_clear(&r);
    expect(agent, &REQ(.op = "READ", .type = "dummy", .name = "d1"), 404, &r);
    reply_clear(&r);
    jn_mgmt_free(agent);
}

/* A QUERY of every type gives every identity as "<type>/<key>" and a null
 * name as that identity (the router's as "router/<id>"), as 1.19's Python
 * agent; READ takes them. A connection is never deleted (403: closed by
 * UPDATE), nor the router. */
static void test_query_all_identities(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    reply_t r;
    static const char *const addr[] = {"prefix", "p", NULL};
    expect(agent,
           &REQ(.op = "CREATE", .type = JN_SCHEMA_PREFIX ".router.config.address",
                .body = body_string_map, .arg = (void *)addr),
           201, &r);
    reply_clear(&r);
    static const char *const cols[] = {"type", "identity", "name", NULL};
    expect(agent, &REQ(.op = "QUERY", .body = body_attribute_names, .arg = (void *)cols), 200,
           &r);
    tv_t *rows = tv_get(&r.body, "results");
    bool router = false, address = false;
    for (size_t i = 0; i < rows->n; i++) {
        const char *type = rows->items[i].items[0].s + strlen(JN_SCHEMA_PREFIX ".");
        const char *id = rows->items[i].items[1].s, *name = rows->items[i].items[2].s;
        assert_non_null(id);
        assert_non_null(name);
        if (strcmp(type, "management") != 0 && strcmp(type, "connection") != 0)
            assert_true(strncmp(id, type, strlen(type)) == 0 && id[strlen(type)] == '/');
        router |= strcmp(id, "router/R1") == 0 && strcmp(name, "router/R1") == 0;
        address |= strcmp(type, "router.config.address") == 0 && strcmp(id, name) == 0;
    }
    assert_true(router);
    assert_true(address);
    reply_clear(&r);
    expect(agent, &REQ(.op = "READ", .type = "router", .identity = "router/R1"), 200, &r);
    reply_clear(&r);
    expect(agent, &REQ(.op = "DELETE", .type = "connection", .identity = "1"), 403, &r);
    reply_clear(&r);
    expect(agent, &REQ(.op = "DELETE", .type = "router", .name = "R1"), 403, &r);
    reply_clear(&r);
    jn_mgmt_free(agent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listener_create_read_delete),
        cmocka_unit_test(test_create_validation),
        cmocka_unit_test(test_connector_type_and_name_in_body),
        cmocka_unit_test(test_address_and_links),
        cmocka_unit_test(test_paging),
        cmocka_unit_test(test_query_all_columns),
        cmocka_unit_test(test_log_update),
        cmocka_unit_test(test_load_config),
        cmocka_unit_test(test_refusal_same_text_from_file_and_management),
        cmocka_unit_test(test_dummy_entity),
        cmocka_unit_test(test_query_all_identities),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    jn_log_shutdown();
    jn_pool_thread_exit();
    if (jn_pool_leak_report(stderr) != 0)
        failed++;
    jn_pool_shutdown();
    return failed;
}
