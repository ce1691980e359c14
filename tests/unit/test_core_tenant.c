/*
 * test_core_tenant.c — tenant spaces (router/core/tenant.c): which
 * hostnames can name a space, and links of a connection with a space bound
 * to the address in it, answered with the client's own address, router
 * addresses left outside it.
 */
#include "test_core_util.h"

/* A connection whose Open named vhost on a multiTenant listener. */
static fake_conn_t *open_tenant(const char *name, const char *vhost)
{
    assert_true(h.n_conns < MAX_CONNS);
    fake_conn_t *fc = &h.conns[h.n_conns++];
    memset(fc, 0, sizeof *fc);
    fc->name = name;
    fc->strip_inbound = true;
    jn_conn_info_t info = {.conn_id = ++h.next_conn_id,
                           .container_id = name,
                           .host = "127.0.0.1:2",
                           .incoming = true,
                           .strip_inbound = true,
                           .strip_outbound = true,
                           .link_capacity = 250,
                           .tenant_vhost = vhost};
    fc->conn = jn_core_conn_opened_IO(h.core, fc, &info);
    assert_non_null(fc->conn);
    return fc;
}

static uint64_t addresses(void)
{
    core_sync();
    jn_core_stats_t st;
    jn_core_get_stats(h.core, &st);
    return st.addresses;
}

static void test_hostname_names_a_space_only_if_it_reads_back_as_one(void **state)
{
    (void)state;
    const char *yes[] = {"ta", "0.0.0.0", "a.b.c", "tenant-1", "x_local", "a/_local"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!jn_core_tenant_vhost_usable(yes[i]))
            fail_msg("'%s' should name a space", yes[i]);
    char longest[JN_CORE_TENANT_VHOST_MAX + 2];
    memset(longest, 'a', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0'; /* one octet over the limit */
    const char *no[] = {"", "_local", "_topo", "_edge", "amqp:", "/a", "//h", longest};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (jn_core_tenant_vhost_usable(no[i]))
            fail_msg("'%.20s' should not name a space", no[i]);
    longest[JN_CORE_TENANT_VHOST_MAX] = '\0';
    assert_true(jn_core_tenant_vhost_usable(longest));
}

static void test_tenant_link_is_bound_in_its_space_and_answered_with_its_address(void **state)
{
    (void)state;
    fake_conn_t *t = open_tenant("tenant", "ta");
    fake_conn_t *p = open_conn("plain");
    char *answered = NULL;
    jn_core_link_t *l = attach_full(t, JN_LINK_OUTGOING, "amqp:/q1", false, 0, &answered);
    assert_non_null(answered);
    assert_string_equal(answered, "amqp:/q1");
    free(answered);
    assert_int_equal(addresses(), 1);
    /* a plain client's ta/q1 is the same address (M0ta/q1), its q1 another */
    jn_core_link_t *same = attach_consumer(p, "ta/q1", 0);
    assert_int_equal(addresses(), 1);
    jn_core_link_t *other = attach_consumer(p, "q1", 0);
    assert_int_equal(addresses(), 2);
    /* another tenant's q1 is a third */
    fake_conn_t *t2 = open_tenant("tenant-b", "tb");
    jn_core_link_t *l2 = attach_consumer(t2, "q1", 0);
    assert_int_equal(addresses(), 3);
    detach(t, l);
    detach(p, same);
    detach(p, other);
    detach(t2, l2);
    assert_int_equal(addresses(), 0);
}

static void test_router_address_of_a_tenant_stays_outside_its_space(void **state)
{
    (void)state;
    fake_conn_t *t = open_tenant("tenant", "ta");
    fake_conn_t *p = open_conn("plain");
    jn_core_link_t *l = attach_consumer(t, "_local/x", 0);
    jn_core_link_t *same = attach_consumer(p, "_local/x", 0);
    assert_int_equal(addresses(), 1); /* both Lx */
    detach(t, l);
    detach(p, same);
}

static void test_connection_without_hostname_has_no_space(void **state)
{
    (void)state;
    fake_conn_t *t = open_tenant("blank", "");
    fake_conn_t *p = open_conn("plain");
    jn_core_link_t *l = attach_consumer(t, "q1", 0);
    jn_core_link_t *same = attach_consumer(p, "q1", 0);
    assert_int_equal(addresses(), 1); /* both M0q1 */
    detach(t, l);
    detach(p, same);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostname_names_a_space_only_if_it_reads_back_as_one),
        cmocka_unit_test_setup_teardown(
            test_tenant_link_is_bound_in_its_space_and_answered_with_its_address, setup_balanced,
            teardown_core),
        cmocka_unit_test_setup_teardown(test_router_address_of_a_tenant_stays_outside_its_space,
                                        setup_balanced, teardown_core),
        cmocka_unit_test_setup_teardown(test_connection_without_hostname_has_no_space,
                                        setup_balanced, teardown_core),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
