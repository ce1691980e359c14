/*
 * test_mgmt_request.c — the management agent's request handling: decoding
 * (split at every buffer boundary), the reply's addressing and status
 * properties, every kind of bad request and its status, and the node
 * operations (GET-TYPES, GET-ATTRIBUTES, GET-OPERATIONS, GET-SCHEMA,
 * GET-JSON-SCHEMA, GET-MGMT-NODES, GET-LOG, node READ). The agent runs without a core; a
 * fake send function captures its replies.
 */
#include "test_mgmt_util.h"

static const size_t chunks[] = {0, 1, 2, 3, 7};

static void test_reply_addressing(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        reply_t r;
        expect(agent,
               &REQ(.op = "GET-MGMT-NODES", .type = "org.amqp.management", .name = "self",
                    .body = body_empty_map, .chunk = chunks[c]),
               200, &r);
        assert_string_equal(r.to, "reply.addr");
        assert_string_equal(r.description, "OK");
        assert_int_equal(r.correlation.type, JN_TYPE_STRING);
        assert_string_equal(r.correlation.s, "corr-7");
        assert_int_equal(r.body.type, JN_TYPE_LIST);
        assert_int_equal(r.body.n, 0); /* standalone: no nodes */
        reply_clear(&r);
    }
    /* a ulong correlation-id comes back as a ulong */
    reply_t r;
    expect(agent, &REQ(.op = "GET-MGMT-NODES", .ulong_correlation = true), 200, &r);
    assert_int_equal(r.correlation.type, JN_TYPE_ULONG);
    assert_int_equal(r.correlation.u, 1000);
    reply_clear(&r);
    jn_mgmt_free(agent);
}

static void test_no_reply_to_is_dropped(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    jn_message_t *m = make_request(&REQ(.op = "QUERY", .reply_to = ""));
    unsigned before = replies_sent;
    jn_mgmt_request_CT(agent, NULL, m);
    jn_message_unref(m);
    assert_int_equal(replies_sent, before);
    jn_mgmt_free(agent);
}

static void props_int_operation(jn_encoder_t *e, void *arg)
{
    (void)arg;
    jn_enc_cstring(e, "operation");
    jn_enc_int(e, 5);
}

static void props_bad_count(jn_encoder_t *e, void *arg)
{
    (void)arg;
    jn_enc_cstring(e, "count");
    jn_enc_long(e, -3);
}

static void props_list_name(jn_encoder_t *e, void *arg)
{
    (void)arg;
    jn_enc_cstring(e, "name");
    jn_enc_list_begin(e);
    jn_enc_list_end(e);
}

static void body_not_map(jn_encoder_t *e, void *arg)
{
    (void)arg;
    jn_enc_cstring(e, "surprise");
}

static void body_bad_names(jn_encoder_t *e, void *arg)
{
    (void)arg;
    jn_enc_map_begin(e);
    jn_enc_cstring(e, "attributeNames");
    jn_enc_list_begin(e);
    jn_enc_int(e, 3);
    jn_enc_list_end(e);
    jn_enc_map_end(e);
}

/* attributeNames twice (a request built to leak a copy per key) */
static void body_names_twice(jn_encoder_t *e, void *arg)
{
    (void)arg;
    jn_enc_map_begin(e);
    for (int k = 0; k < 2; k++) {
        jn_enc_cstring(e, "attributeNames");
        jn_enc_list_begin(e);
        jn_enc_cstring(e, "name");
        jn_enc_list_end(e);
    }
    jn_enc_map_end(e);
}

/* status and a word the description must contain */
static void bad(jn_mgmt_t *agent, const req_t *r, int status, const char *word)
{
    reply_t out;
    expect(agent, r, status, &out);
    if (word && !strstr(out.description, word))
        fail_msg("description '%s' does not mention '%s'", out.description, word);
    assert_int_equal(out.body.type, JN_TYPE_MAP); /* errors carry an empty map */
    assert_int_equal(out.body.n, 0);
    reply_clear(&out);
}

static void test_bad_requests(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    static const char *const bogus[] = {"name", "bogus", NULL};
    bad(agent, &REQ(.op = NULL), 400, "operation");
    bad(agent, &REQ(.op = NULL, .props = props_int_operation), 400, "operation");
    bad(agent, &REQ(.op = "FROBNICATE", .type = "listener", .name = "x"), 501, "FROBNICATE");
    bad(agent, &REQ(.op = "READ", .type = "nosuchtype", .name = "x"), 400, "nosuchtype");
    bad(agent, &REQ(.op = "QUERY", .entity_type = "nosuchtype"), 400, "nosuchtype");
    bad(agent,
        &REQ(.op = "QUERY", .entity_type = "listener", .body = body_attribute_names,
             .arg = (void *)bogus),
        404, "bogus");
    bad(agent, &REQ(.op = "QUERY", .entity_type = "listener", .body = body_not_map), 400, "map");
    bad(agent, &REQ(.op = "QUERY", .entity_type = "listener", .body = body_bad_names), 400,
        "attributeNames");
    bad(agent, &REQ(.op = "QUERY", .entity_type = "listener", .body = body_names_twice), 400,
        "more than once");
    static const char *const fifo[] = {"outputFile", "/dev/null", NULL};
    bad(agent,
        &REQ(.op = "UPDATE", .type = "log", .name = "log/DEFAULT", .body = body_string_map,
             .arg = (void *)fifo),
        400, "must be a regular file");
    bad(agent, &REQ(.op = "QUERY", .props = props_bad_count), 400, "count");
    bad(agent, &REQ(.op = "READ", .type = "listener", .props = props_list_name), 400, "name");
    bad(agent, &REQ(.op = "READ", .type = "listener"), 400, "No name or identity");
    bad(agent, &REQ(.op = "READ", .type = "listener", .name = "none"), 404, "name=none");
    bad(agent, &REQ(.op = "DELETE", .type = "connector", .identity = "7"), 404, "identity=7");
    bad(agent, &REQ(.op = "CREATE", .type = "listener", .name = "l", .body = body_not_map), 400,
        "Body of request must be a map");
    bad(agent, &REQ(.op = "CREATE", .name = "l", .body = body_empty_map), 400, "type");
    bad(agent, &REQ(.op = "DELETE", .type = "router.link", .identity = "1"), 501, "DELETE");
    bad(agent, &REQ(.op = "UPDATE", .type = "listener", .name = "x"), 501, "UPDATE");
    bad(agent, &REQ(.op = "CREATE", .type = "connection", .name = "c"), 501, "CREATE");
    bad(agent, &REQ(.op = "CREATE", .type = "policy", .name = "p"), 501, "policy");
    bad(agent, &REQ(.op = "UPDATE", .type = "connection", .name = "connection/x"), 400,
        "Identity required");
    jn_mgmt_free(agent);
}

static void test_no_application_properties(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_PROPERTIES);
    jn_enc_list_begin(&e);
    jn_enc_null(&e);
    jn_enc_null(&e);
    jn_enc_null(&e);
    jn_enc_null(&e);
    jn_enc_cstring(&e, "r");
    jn_enc_list_end(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_AMQP_VALUE);
    jn_enc_null(&e);
    size_t len;
    const uint8_t *p = jn_encoder_data(&e, &len);
    jn_message_t *m = jn_message_new();
    assert_int_equal(jn_message_append(m, p, len), 0);
    jn_message_set_complete(m);
    assert_int_equal(jn_message_parse(m, JN_DEPTH_ALL), 0);
    jn_mgmt_request_CT(agent, NULL, m);
    jn_message_unref(m);
    jn_encoder_free(&e);
    reply_t r;
    decode_reply(last_reply, &r);
    assert_int_equal(r.status, 400);
    assert_null(r.correlation.s); /* no correlation-id, no message-id: null */
    assert_string_equal(r.to, "r");
    reply_clear(&r);
    jn_message_unref(last_reply);
    last_reply = NULL;
    jn_mgmt_free(agent);
}

/* Answer the request octets of raw (len) and decode the one reply. */
static void ask_raw(jn_mgmt_t *agent, const uint8_t *raw, size_t len, reply_t *r)
{
    jn_message_t *m = jn_message_new();
    assert_int_equal(jn_message_append(m, raw, len), 0);
    jn_message_set_complete(m);
    assert_int_equal(jn_message_parse(m, JN_DEPTH_ALL), 0);
    unsigned before = replies_sent;
    jn_mgmt_request_CT(agent, NULL, m);
    jn_message_unref(m);
    assert_int_equal(replies_sent, before + 1);
    decode_reply(last_reply, r); /* asserts that every section decodes */
    jn_message_unref(last_reply);
    last_reply = NULL;
}

/* Found by the mgmt_request fuzz target: an id that is a list whose size
 * counts octets its elements do not use passed the message parser (which
 * reads properties one level deep), was copied octet for octet into the
 * reply, and made the reply unreadable. Now a malformed id is not copied
 * and the request is answered 400. */
static void test_malformed_ids(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    static const uint8_t bad_correlation[] = {
        0x00, 0x53, 0x73, 0xc0, 0x0d, 0x06, /* properties: list8, 6 fields */
        0x40, 0x40, 0x40, 0x40,             /* message-id .. subject: null */
        0xa1, 0x01, 'r',                    /* reply-to "r" */
        0xc0, 0x03, 0x00, 0x25, 0xa9,       /* correlation-id: list8, size 3, count 0 */
        0x00, 0x53, 0x74, 0xc1, 0x13, 0x02, /* application-properties: map8 */
        0xa1, 0x09, 'o',  'p',  'e',  'r',  'a', 't', 'i',
        'o',  'n',  0xa1, 0x05, 'Q',  'U',  'E', 'R', 'Y'};
    reply_t r;
    ask_raw(agent, bad_correlation, sizeof bad_correlation, &r);
    assert_int_equal(r.status, 400);
    assert_string_equal(r.description, "correlation-id is malformed");
    assert_string_equal(r.to, "r");
    assert_int_equal(r.correlation.type, JN_TYPE_NULL);
    reply_clear(&r);

    static const uint8_t bad_message_id[] = {
        0x00, 0x53, 0x73, 0xc0, 0x0f, 0x05,             /* properties: list8, 5 fields */
        0xc1, 0x06, 0x02, 0xa1, 0x01, 'k',  0x40, 0x25, /* message-id: map8, one octet unused */
        0x40, 0x40, 0x40, 0xa1, 0x01, 'r',              /* ..., reply-to "r" */
        0x00, 0x53, 0x74, 0xc1, 0x13, 0x02,             /* application-properties: map8 */
        0xa1, 0x09, 'o',  'p',  'e',  'r',  'a',  't',  'i',
        'o',  'n',  0xa1, 0x05, 'Q',  'U',  'E',  'R',  'Y'};
    ask_raw(agent, bad_message_id, sizeof bad_message_id, &r);
    assert_int_equal(r.status, 400);
    assert_string_equal(r.description, "message-id is malformed");
    assert_int_equal(r.correlation.type, JN_TYPE_NULL);
    reply_clear(&r);
    jn_mgmt_free(agent);
}

static void test_lower_case_operation(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    reply_t r;
    expect(agent, &REQ(.op = "get-mgmt-nodes"), 200, &r);
    reply_clear(&r);
    jn_mgmt_free(agent);
}

static void test_get_types_attributes_operations(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    reply_t r;
    expect(agent, &REQ(.op = "GET-TYPES", .type = "org.amqp.management", .name = "self"), 200, &r);
    tv_t *l = tv_get(&r.body, JN_SCHEMA_PREFIX ".listener");
    assert_non_null(l);
    assert_true(tv_list_has(l, JN_SCHEMA_PREFIX ".configurationEntity"));
    assert_true(tv_list_has(l, JN_SCHEMA_PREFIX ".entity"));
    assert_non_null(tv_get(&r.body, JN_SCHEMA_PREFIX ".org.amqp.management"));
    reply_clear(&r);

    expect(agent, &REQ(.op = "GET-TYPES", .entity_type = "operationalEntity"), 200, &r);
    assert_non_null(tv_get(&r.body, JN_SCHEMA_PREFIX ".connection"));
    assert_null(tv_get(&r.body, JN_SCHEMA_PREFIX ".listener"));
    reply_clear(&r);

    expect(agent, &REQ(.op = "GET-ATTRIBUTES", .entity_type = "listener"), 200, &r);
    assert_int_equal(r.body.n, 2);
    l = tv_get(&r.body, JN_SCHEMA_PREFIX ".listener");
    assert_true(tv_list_has(l, "port"));
    assert_true(tv_list_has(l, "identity"));
    reply_clear(&r);

    expect(agent, &REQ(.op = "GET-OPERATIONS", .entity_type = JN_SCHEMA_PREFIX ".connector"), 200,
           &r);
    l = tv_get(&r.body, JN_SCHEMA_PREFIX ".connector");
    assert_true(tv_list_has(l, "CREATE"));
    assert_true(tv_list_has(l, "DELETE"));
    reply_clear(&r);

    bad(agent, &REQ(.op = "GET-ATTRIBUTES", .entity_type = "nope"), 400, "nope");
    expect(agent, &REQ(.op = "GET-ANNOTATIONS"), 200, &r);
    assert_int_equal(r.body.type, JN_TYPE_MAP);
    reply_clear(&r);
    jn_mgmt_free(agent);
}

static void test_get_schema(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    reply_t r;
    expect(agent, &REQ(.op = "GET-SCHEMA"), 200, &r);
    assert_string_equal(tv_get(&r.body, "prefix")->s, JN_SCHEMA_PREFIX);
    tv_t *types = tv_get(&r.body, "entityTypes");
    tv_t *listener = tv_get(types, "listener");
    assert_string_equal(tv_get(listener, "fullyQualifiedType")->s, JN_SCHEMA_PREFIX ".listener");
    tv_t *attrs = tv_get(listener, "attributes");
    assert_string_equal(tv_get(tv_get(attrs, "port"), "default")->s, "amqp");
    assert_int_equal(tv_get(tv_get(attrs, "maxFrameSize"), "default")->i, 16384);
    assert_null(tv_get(tv_get(attrs, "authenticatePeer"), "default")); /* false: omitted */
    assert_null(tv_get(attrs, "type"));
    assert_int_equal(tv_get(tv_get(attrs, "role"), "type")->type, JN_TYPE_LIST);
    assert_non_null(tv_get(types, "address")); /* short names */
    assert_true(tv_get(tv_get(types, "router"), "singleton")->b);
    reply_clear(&r);
    jn_mgmt_free(agent);
}

static void props_indent(jn_encoder_t *e, void *arg)
{
    (void)arg;
    jn_enc_cstring(e, "indent");
    jn_enc_cstring(e, "2"); /* qdmanage sends NAME=VALUE properties as strings */
}

/* GET-JSON-SCHEMA: GET-SCHEMA's map as JSON text, one line without indent,
 * one member per line with it. */
static void test_get_json_schema(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    reply_t r;
    expect(agent, &REQ(.op = "GET-JSON-SCHEMA"), 200, &r);
    assert_int_equal(r.body.type, JN_TYPE_STRING);
    const char *start = "{\"prefix\": \"" JN_SCHEMA_PREFIX "\", \"entityTypes\": {";
    assert_true(strncmp(r.body.s, start, strlen(start)) == 0);
    assert_null(strchr(r.body.s, '\n'));
    assert_non_null(strstr(r.body.s, "\"fullyQualifiedType\": \"" JN_SCHEMA_PREFIX ".listener\""));
    assert_non_null(
        strstr(r.body.s, "\"maxFrameSize\": {\"type\": \"integer\", \"default\": 16384}"));
    reply_clear(&r);
    expect(agent, &REQ(.op = "GET-JSON-SCHEMA", .props = props_indent), 200, &r);
    start = "{\n  \"prefix\": ";
    assert_true(strncmp(r.body.s, start, strlen(start)) == 0);
    assert_non_null(strstr(r.body.s, "\n    \"listener\": {\n      \"attributes\": {\n"));
    reply_clear(&r);
    jn_mgmt_free(agent);
}

static void props_limit_string(jn_encoder_t *e, void *arg)
{
    (void)arg;
    jn_enc_cstring(e, "limit");
    jn_enc_cstring(e, "2");
}

static void test_get_log(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    for (int i = 0; i < 3; i++)
        jn_log_write(JN_LOG_MOD_AGENT, JN_LOG_NOTICE, __FILE__, __LINE__, "line %d", i);
    reply_t r;
    expect(agent, &REQ(.op = "GET-LOG", .props = props_limit_string), 200, &r);
    assert_int_equal(r.body.n, 2);
    tv_t *last = &r.body.items[1];
    assert_int_equal(last->n, 6);
    assert_string_equal(last->items[0].s, "AGENT");
    assert_string_equal(last->items[1].s, "notice");
    assert_string_equal(last->items[2].s, "line 2");
    assert_true(last->items[5].i > 1600000000);
    reply_clear(&r);
    jn_mgmt_free(agent);
}

static void test_node_read_and_router(void **state)
{
    (void)state;
    jn_mgmt_t *agent = new_agent(NULL);
    reply_t r;
    expect(agent, &REQ(.op = "READ", .type = "org.amqp.management", .name = "self"), 200, &r);
    assert_string_equal(tv_get(&r.body, "type")->s, JN_SCHEMA_PREFIX ".management");
    reply_clear(&r);
    /* the router singleton, by full name, without a name */
    expect(agent, &REQ(.op = "READ", .type = JN_SCHEMA_PREFIX ".router"), 200, &r);
    assert_string_equal(tv_get(&r.body, "id")->s, "R1");
    assert_int_equal(tv_get(&r.body, "workerThreads")->i, 2);
    assert_int_equal(tv_get(&r.body, "connectionCount")->type, JN_TYPE_ULONG);
    reply_clear(&r);
    expect(agent, &REQ(.op = "QUERY", .entity_type = "router"), 200, &r);
    tv_t *names = tv_get(&r.body, "attributeNames"), *rows = tv_get(&r.body, "results");
    assert_int_equal(rows->n, 1);
    assert_string_equal(names->items[2].s, "id"); /* 1.19's column order */
    assert_string_equal(rows->items[0].items[2].s, "R1");
    reply_clear(&r);
    jn_mgmt_free(agent);
}

/* A fake mesh: routers 1 (neighbour) and 2 (through 1). */
static bool fake_foreach(void *ctx, bool (*fn)(void *arg, const jn_mesh_router_info_t *info),
                         void *arg);

static void call_fake_foreach(void *ctx, bool (*fn)(void *, const jn_mesh_router_info_t *),
                              void *arg)
{
    fake_foreach(ctx, fn, arg);
}

static bool fake_foreach(void *ctx, bool (*fn)(void *arg, const jn_mesh_router_info_t *info),
                         void *arg)
{
    (void)ctx;
    static const char *const peers1[] = {"R1", "R3"};
    jn_mesh_router_info_t a = {.index = 1,
                               .id = "R2",
                               .link = 0,
                               .next_hop = -1,
                               .reachable = true,
                               .cost = 1,
                               .peer_ids = peers1,
                               .peer_count = 2};
    jn_mesh_router_info_t b = {
        .index = 2, .id = "R3", .link = -1, .next_hop = 1, .reachable = true, .cost = 2};
    jn_mesh_bits_set(&b.valid_origins, 0);
    jn_mesh_bits_set(&b.valid_origins, 1);
    return fn(arg, &a) && fn(arg, &b);
}

static void test_router_nodes_hook(void **state)
{
    (void)state;
    jn_mgmt_config_t cfg = {.router_id = "R1",
                            .mode = "interior",
                            .send = capture_send,
                            .foreach_router = call_fake_foreach};
    jn_mgmt_t *agent = jn_mgmt_create(&cfg);
    reply_t r;
    expect(agent, &REQ(.op = "GET-MGMT-NODES"), 200, &r);
    assert_int_equal(r.body.n, 3);
    assert_string_equal(r.body.items[0].s, "amqp:/_topo/0/R1/$management");
    assert_string_equal(r.body.items[2].s, "amqp:/_topo/0/R3/$management");
    reply_clear(&r);
    static const char *const cols[] = {"id", "nextHop", "cost", "validOrigins", "linkState", NULL};
    expect(agent,
           &REQ(.op = "QUERY", .entity_type = "router.node", .body = body_attribute_names,
                .arg = (void *)cols),
           200, &r);
    tv_t *rows = tv_get(&r.body, "results");
    assert_int_equal(rows->n, 3);
    assert_string_equal(rows->items[0].items[1].s, "(self)");
    assert_string_equal(rows->items[0].items[4].items[0].s, "R2"); /* neighbours */
    assert_int_equal(rows->items[1].items[1].type, JN_TYPE_NULL);  /* neighbour: no next hop */
    assert_string_equal(rows->items[2].items[1].s, "R2");
    assert_int_equal(rows->items[2].items[2].i, 2);
    assert_string_equal(rows->items[2].items[3].items[0].s, "R2");
    reply_clear(&r);
    /* paging through the hook */
    expect(agent, &REQ(.op = "QUERY", .entity_type = "router.node", .offset = 2, .count = 5), 200,
           &r);
    assert_int_equal(tv_get(&r.body, "results")->n, 1);
    reply_clear(&r);
    jn_mgmt_free(agent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reply_addressing),
        cmocka_unit_test(test_no_reply_to_is_dropped),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_no_application_properties),
        cmocka_unit_test(test_malformed_ids),
        cmocka_unit_test(test_lower_case_operation),
        cmocka_unit_test(test_get_types_attributes_operations),
        cmocka_unit_test(test_get_schema),
        cmocka_unit_test(test_get_json_schema),
        cmocka_unit_test(test_get_log),
        cmocka_unit_test(test_node_read_and_router),
        cmocka_unit_test(test_router_nodes_hook),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    jn_log_shutdown();
    jn_pool_thread_exit();
    if (jn_pool_leak_report(stderr) != 0)
        failed++;
    jn_pool_shutdown();
    return failed;
}
