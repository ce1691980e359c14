/*
 * test_core_linkroute.c — link routes and auto-links in the core
 * (router/core/linkroute.c) against the fake I/O layer: the attach goes to
 * the container's connection as a JN_WORK_LINK_ATTACH, the client is
 * answered only when the container answered, deliveries and credit pass
 * between the paired links, a detach passes its error on (and closed=false:
 * a detach stays a detach), no container is qd:no-route-to-dest (1.19's
 * condition); only a route-container connection is a container; an
 * auto-link attaches when its container connects (on each connection that
 * serves it) and binds to its phase.
 */
#include "test_core_util.h"

#include <junction/core_view.h>

static void call_route_add(void *arg, jn_core_t *core)
{
    const jn_link_route_config_t *c = arg;
    assert_int_equal(jn_core_link_route_add_CT(core, c), 0);
}

static void add_routes(void)
{
    static const jn_link_route_config_t in = {.name = "lr-in",
                                              .prefix = "q",
                                              .dir = JN_LINK_INCOMING,
                                              .container_id = "broker",
                                              .add_external_prefix = "/queue/",
                                              .del_external_prefix = "q."};
    static const jn_link_route_config_t out = {
        .name = "lr-out", .prefix = "q", .dir = JN_LINK_OUTGOING, .container_id = "broker"};
    assert_int_equal(jn_core_call(h.core, call_route_add, (void *)&in), 0);
    assert_int_equal(jn_core_call(h.core, call_route_add, (void *)&out), 0);
    core_sync();
}

static int setup_routes(void **state)
{
    (void)state;
    core_up(JN_DIST_BALANCED, NULL);
    add_routes();
    return 0;
}

/* Attach a link without expecting an answer. */
static jn_core_link_t *attach_raw(fake_conn_t *fc, jn_link_dir_t dir, const char *address,
                                  const char *name, void *ref)
{
    static int io_links;
    jn_link_info_t info = {.dir = dir,
                           .name = name,
                           .address = address,
                           .local = ref != NULL,
                           .attach_ref = ref,
                           .priority = -1};
    jn_core_link_t *l = jn_core_link_attached_IO(fc->conn, &io_links, &info);
    assert_non_null(l);
    return l;
}

static void test_no_container_is_no_route_to_dest(void **state)
{
    (void)state;
    fake_conn_t *client = open_conn("client");
    attach_raw(client, JN_LINK_INCOMING, "q.a", "s", NULL);
    jn_work_t *w = expect_work(client, JN_WORK_LINK_CLOSE);
    assert_string_equal(w->condition, "qd:no-route-to-dest");
    assert_string_equal(w->description, "No route to the destination node");
    jn_work_free(w);
    /* an address no link route matches is an ordinary one */
    attach_producer(client, "other", 10);
}

static void test_routed_attach_transfer_credit_and_detach(void **state)
{
    (void)state;
    fake_conn_t *broker = open_container("broker");
    fake_conn_t *client = open_conn("client");
    jn_core_link_t *cl = attach_raw(client, JN_LINK_INCOMING, "q.a", "sender-1", NULL);
    /* the container's connection is asked for a sending link, address
     * changed by the prefixes, same name; the client waits */
    jn_work_t *w = expect_work(broker, JN_WORK_LINK_ATTACH);
    assert_int_equal(w->attach.dir, JN_LINK_OUTGOING);
    assert_string_equal(w->address, "/queue/a");
    assert_string_equal(w->attach.name, "sender-1");
    assert_ptr_equal(w->link, cl);
    assert_true(w->passthrough); /* its deliveries pass as they came */
    void *ref = w->attach.ref;
    jn_work_free(w);
    expect_no_work(client);
    jn_core_link_t *bl = attach_raw(broker, JN_LINK_OUTGOING, "/queue/a", "sender-1", ref);
    expect_no_work(client);
    jn_core_link_answered_IO(bl);
    w = expect_work(client, JN_WORK_LINK_OPEN);
    assert_true(w->passthrough);
    jn_work_free(w);
    /* credit follows the container's */
    expect_no_update(client);
    jn_core_link_flow_IO(bl, 3, false);
    w = expect_work(client, JN_WORK_LINK_CREDIT);
    assert_int_equal(w->credit, 3);
    jn_work_free(w);
    /* a delivery goes to the paired link, with the sender's tag */
    jn_delivery_t *in = send_msg(client, cl, false);
    w = expect_work(broker, JN_WORK_DELIVERY_SEND);
    size_t in_len, out_len;
    const uint8_t *in_tag = jn_delivery_tag(in, &in_len);
    const uint8_t *out_tag = jn_delivery_tag(w->dlv, &out_len);
    assert_int_equal(out_len, in_len);
    assert_memory_equal(out_tag, in_tag, in_len);
    jn_work_free(w);
    /* the container detaches with an error: the client's link gets it */
    jn_core_link_set_error_IO(bl, "amqp:unauthorized-access", "no");
    jn_core_link_detached_IO(bl);
    w = expect_work(client, JN_WORK_LINK_CLOSE);
    assert_string_equal(w->condition, "amqp:unauthorized-access");
    jn_work_free(w);
    /* the delivery it had not settled goes back to the sender, settled */
    w = expect_work(client, JN_WORK_DELIVERY_UPDATE);
    assert_true(w->settled);
    assert_true(w->disp.type == JN_DISP_RELEASED || w->disp.type == JN_DISP_MODIFIED);
    jn_work_free(w);
    /* the container's detach is answered by the client's (closed), and
     * only then released */
    detach(client, cl);
    expect_and_free(broker, JN_WORK_LINK_CLOSE);
    expect_and_free(broker, JN_WORK_LINK_RELEASED);
}

static void test_container_lost_detaches_with_routed_link_lost(void **state)
{
    (void)state;
    fake_conn_t *broker = open_container("broker");
    fake_conn_t *client = open_conn("client");
    jn_core_link_t *cl = attach_raw(client, JN_LINK_OUTGOING, "q.b", "receiver-1", NULL);
    jn_work_t *w = expect_work(broker, JN_WORK_LINK_ATTACH);
    assert_int_equal(w->attach.dir, JN_LINK_INCOMING);
    assert_string_equal(w->address, "q.b"); /* the out route has no prefixes */
    void *ref = w->attach.ref;
    jn_work_free(w);
    jn_core_link_t *bl = attach_raw(broker, JN_LINK_INCOMING, "q.b", "receiver-1", ref);
    jn_core_link_answered_IO(bl);
    expect_and_free(client, JN_WORK_LINK_OPEN);
    /* the client's credit becomes the container link's */
    jn_core_link_flow_IO(cl, 5, false);
    w = expect_work(broker, JN_WORK_LINK_CREDIT);
    assert_int_equal(w->credit, 5);
    jn_work_free(w);
    close_conn(broker);
    w = expect_work(client, JN_WORK_LINK_CLOSE);
    assert_string_equal(w->condition, "qd:routed-link-lost");
    jn_work_free(w);
    detach(client, cl);
}

static void test_client_gone_before_the_container_answered(void **state)
{
    (void)state;
    fake_conn_t *broker = open_container("broker");
    fake_conn_t *client = open_conn("client");
    jn_core_link_t *cl = attach_raw(client, JN_LINK_INCOMING, "q.c", "s", NULL);
    jn_work_t *w = expect_work(broker, JN_WORK_LINK_ATTACH);
    void *ref = w->attach.ref;
    jn_work_free(w);
    detach(client, cl);
    /* the container's link, reported late, finds nobody: closed */
    jn_core_link_t *bl = attach_raw(broker, JN_LINK_OUTGOING, "/queue/c", "s", ref);
    expect_and_free(broker, JN_WORK_LINK_CLOSE);
    jn_core_link_detached_IO(bl);
    expect_and_free(broker, JN_WORK_LINK_RELEASED);
}

static void test_detach_without_close_passes_on_as_detach(void **state)
{
    (void)state;
    fake_conn_t *broker = open_container("broker");
    fake_conn_t *client = open_conn("client");
    jn_core_link_t *cl = attach_raw(client, JN_LINK_OUTGOING, "q.d", "receiver-2", NULL);
    jn_work_t *w = expect_work(broker, JN_WORK_LINK_ATTACH);
    void *ref = w->attach.ref;
    jn_work_free(w);
    jn_core_link_t *bl = attach_raw(broker, JN_LINK_INCOMING, "q.d", "receiver-2", ref);
    jn_core_link_answered_IO(bl);
    expect_and_free(client, JN_WORK_LINK_OPEN);
    /* the client detaches with closed=false: the container's link is
     * detached, not closed, so that the link can be resumed end to end */
    jn_core_link_set_unclosed_IO(cl);
    jn_core_link_detached_IO(cl);
    w = expect_work(broker, JN_WORK_LINK_DETACH);
    assert_null(w->condition);
    jn_work_free(w);
    /* the client's answer is the container's: closed here, with its
     * error; the client's link is released only after it */
    jn_core_link_set_error_IO(bl, "amqp:not-allowed", "closed by the broker");
    detach(broker, bl);
    w = expect_work(client, JN_WORK_LINK_CLOSE);
    assert_string_equal(w->condition, "amqp:not-allowed");
    jn_work_free(w);
    expect_and_free(client, JN_WORK_LINK_RELEASED);
}

static void test_detach_answered_by_the_far_ends_detach(void **state)
{
    (void)state;
    fake_conn_t *broker = open_container("broker");
    fake_conn_t *client = open_conn("client");
    jn_core_link_t *cl = attach_raw(client, JN_LINK_INCOMING, "q.e", "sender-3", NULL);
    jn_work_t *w = expect_work(broker, JN_WORK_LINK_ATTACH);
    void *ref = w->attach.ref;
    jn_work_free(w);
    jn_core_link_t *bl = attach_raw(broker, JN_LINK_OUTGOING, "q.e", "sender-3", ref);
    jn_core_link_answered_IO(bl);
    expect_and_free(client, JN_WORK_LINK_OPEN);
    /* the container detaches without closing; the client answers the
     * same: the container's answer is a detach too */
    jn_core_link_set_unclosed_IO(bl);
    jn_core_link_detached_IO(bl);
    expect_and_free(client, JN_WORK_LINK_DETACH);
    jn_core_link_set_unclosed_IO(cl);
    detach(client, cl);
    w = expect_work(broker, JN_WORK_LINK_DETACH);
    assert_null(w->condition);
    jn_work_free(w);
    expect_and_free(broker, JN_WORK_LINK_RELEASED);
}

static void call_autolink_add(void *arg, jn_core_t *core)
{
    assert_int_equal(jn_core_autolink_add_CT(core, arg), 0);
}

static void call_autolink_status(void *arg, jn_core_t *core)
{
    const char **out = arg;
    uint64_t id;
    assert_int_equal(jn_core_autolink_status_CT(core, "al", &out[0], &out[1], &id), 0);
}

/* The auto-link's lastError (a static copy: the core's string may go) */
static const char *autolink_last_error(void)
{
    static char copy[256];
    const char *out[2] = {NULL, NULL};
    assert_int_equal(jn_core_call(h.core, call_autolink_status, out), 0);
    core_sync();
    snprintf(copy, sizeof copy, "%s", out[1] ? out[1] : "(null)");
    return copy;
}

static const char *autolink_status(void)
{
    const char *out[2] = {NULL, NULL};
    assert_int_equal(jn_core_call(h.core, call_autolink_status, out), 0);
    core_sync();
    return out[0];
}

static void test_autolink_attaches_when_its_container_connects(void **state)
{
    (void)state;
    static const jn_autolink_config_t al = {.name = "al",
                                            .address = "wq",
                                            .dir = JN_LINK_INCOMING,
                                            .phase = -1,
                                            .container_id = "broker",
                                            .external_address = "/queue/wq"};
    assert_int_equal(jn_core_call(h.core, call_autolink_add, (void *)&al), 0);
    core_sync();
    assert_string_equal(autolink_status(), "inactive");
    fake_conn_t *broker = open_container("broker");
    jn_work_t *w = expect_work(broker, JN_WORK_LINK_ATTACH);
    assert_int_equal(w->attach.dir, JN_LINK_INCOMING);
    assert_string_equal(w->address, "/queue/wq");
    void *ref = w->attach.ref;
    jn_work_free(w);
    assert_string_equal(autolink_status(), "attaching");
    jn_core_link_t *bl = attach_raw(broker, JN_LINK_INCOMING, "/queue/wq", "x", ref);
    jn_core_link_answered_IO(bl);
    core_sync();
    assert_string_equal(autolink_status(), "active");
    /* phase 1 by default for "in": a receiver of the phase-0 address is
     * not its consumer, so it gets no credit... */
    fake_conn_t *client = open_conn("client");
    attach_consumer(client, "wq", 10);
    expect_no_work(broker);
    /* ...and the broker's refusal of it is kept as lastError */
    jn_core_link_set_error_IO(bl, "amqp:not-found", "no queue");
    jn_core_link_detached_IO(bl);
    expect_and_free(broker, JN_WORK_LINK_RELEASED);
    assert_string_equal(autolink_status(), "failed");
    /* lastError is the refusal's description, as 1.19 shows it */
    assert_string_equal(autolink_last_error(), "no queue");
    /* it attaches again when the container reconnects */
    close_conn(broker);
    assert_string_equal(autolink_status(), "inactive");
    fake_conn_t *again = open_route_container("broker", "broker", NULL);
    expect_and_free(again, JN_WORK_LINK_ATTACH);
}

/* Answer the auto-link attach the core asked of fc: its link. */
static jn_core_link_t *answer_autolink(fake_conn_t *fc, jn_link_dir_t dir, const char *address)
{
    jn_work_t *w = expect_work(fc, JN_WORK_LINK_ATTACH);
    assert_int_equal(w->attach.dir, dir);
    assert_string_equal(w->address, address);
    void *ref = w->attach.ref;
    jn_work_free(w);
    jn_core_link_t *l = attach_raw(fc, dir, address, "x", ref);
    jn_core_link_answered_IO(l);
    return l;
}

static void test_autolink_attaches_on_every_connection_of_its_listener(void **state)
{
    (void)state;
    static const jn_autolink_config_t al = {.name = "al",
                                            .address = "lq",
                                            .dir = JN_LINK_OUTGOING,
                                            .phase = -1,
                                            .connection = "myListener"};
    assert_int_equal(jn_core_call(h.core, call_autolink_add, (void *)&al), 0);
    /* two instances of a container on the listener each get the link; a
     * connection of another listener does not */
    fake_conn_t *a = open_route_container("a", "same", "myListener");
    fake_conn_t *b = open_route_container("b", "same", "myListener");
    fake_conn_t *other = open_route_container("other", "same", "otherListener");
    jn_core_link_t *la = answer_autolink(a, JN_LINK_OUTGOING, "lq");
    jn_core_link_t *lb = answer_autolink(b, JN_LINK_OUTGOING, "lq");
    expect_no_work(other);
    assert_string_equal(autolink_status(), "active");
    /* both are consumers of the address: they share its deliveries */
    jn_core_link_flow_IO(la, 10, false);
    jn_core_link_flow_IO(lb, 10, false);
    fake_conn_t *client = open_conn("client");
    jn_core_link_t *p = attach_producer(client, "lq", 10);
    send_msg(client, p, false);
    send_msg(client, p, false);
    expect_send(a);
    expect_send(b);
    /* one instance gone: the other keeps it active */
    close_conn(a);
    assert_string_equal(autolink_status(), "active");
    close_conn(b);
    assert_string_equal(autolink_status(), "inactive");
    /* each that comes back gets it again */
    answer_autolink(open_route_container("a2", "same", "myListener"), JN_LINK_OUTGOING, "lq");
    answer_autolink(open_route_container("b2", "same", "myListener"), JN_LINK_OUTGOING, "lq");
    assert_string_equal(autolink_status(), "active");
}

static void test_autolink_only_on_route_container_connections(void **state)
{
    (void)state;
    static const jn_autolink_config_t al = {
        .name = "al", .address = "wq", .dir = JN_LINK_INCOMING, .phase = -1, .container_id = "broker"};
    assert_int_equal(jn_core_call(h.core, call_autolink_add, (void *)&al), 0);
    /* a normal client using the container's id gets no link from the router */
    fake_conn_t *normal = open_conn("broker");
    expect_no_work(normal);
    assert_string_equal(autolink_status(), "inactive");
    answer_autolink(open_route_container("rc", "broker", NULL), JN_LINK_INCOMING, "wq");
    assert_string_equal(autolink_status(), "active");
}

static void test_normal_conn_with_the_container_id_is_no_container(void **state)
{
    (void)state;
    /* a client of role normal opening with the broker's container id gets
     * no link-routed attach: the attach finds no container */
    fake_conn_t *impostor = open_conn("broker");
    fake_conn_t *client = open_conn("client");
    attach_raw(client, JN_LINK_INCOMING, "q.a", "s", NULL);
    jn_work_t *w = expect_work(client, JN_WORK_LINK_CLOSE);
    assert_string_equal(w->condition, "qd:no-route-to-dest");
    jn_work_free(w);
    expect_no_work(impostor);
    /* the real broker, route-container, gets the next one */
    fake_conn_t *broker = open_container("broker");
    attach_raw(client, JN_LINK_INCOMING, "q.a", "s2", NULL);
    w = expect_work(broker, JN_WORK_LINK_ATTACH);
    assert_string_equal(w->attach.name, "s2");
    jn_work_free(w);
    expect_no_work(impostor);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_container_is_no_route_to_dest, setup_routes,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(test_routed_attach_transfer_credit_and_detach, setup_routes,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(test_container_lost_detaches_with_routed_link_lost,
                                        setup_routes, teardown_core),
        cmocka_unit_test_setup_teardown(test_client_gone_before_the_container_answered,
                                        setup_routes, teardown_core),
        cmocka_unit_test_setup_teardown(test_detach_without_close_passes_on_as_detach, setup_routes,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(test_detach_answered_by_the_far_ends_detach, setup_routes,
                                        teardown_core),
        cmocka_unit_test_setup_teardown(test_autolink_attaches_when_its_container_connects,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_autolink_attaches_on_every_connection_of_its_listener,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_autolink_only_on_route_container_connections,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_normal_conn_with_the_container_id_is_no_container,
                                        setup_routes, teardown_core),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
