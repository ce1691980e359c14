/*
 * test_io_dnp.c — a dynamic terminus's node properties as a link route
 * passes them on (router/io/io_route.c: jn_io_dnp_address_IO,
 * jn_io_dnp_set_address_IO; docs/design.md, "Link routes and
 * auto-links").
 *
 * A dynamic source or target is link-routed by the address its
 * dynamic-node-properties name under x-opt-qd.address; the attach the
 * router sends on names the address the route matched there (a tenant's,
 * in its space), and keeps the client's other node properties as they
 * were. Checked on proton termini, without a connection: the functions
 * only want to run on an I/O thread, which the test pretends to be.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "io/io_private.h"

#include <proton/codec.h>
#include <proton/connection.h>
#include <proton/link.h>
#include <proton/session.h>

#include <stdlib.h>
#include <string.h>

struct fixture {
    pn_connection_t *conn;
    pn_link_t *link;
};

static int setup(void **state)
{
    /* the functions check that they run on an I/O loop: any non-NULL
     * loop will do, none is used */
    jn_io_loop_self_ = (jn_io_loop_t *)(uintptr_t)1;
    struct fixture *f = calloc(1, sizeof *f);
    f->conn = pn_connection();
    f->link = pn_receiver(pn_session(f->conn), "dyn");
    pn_terminus_set_dynamic(pn_link_source(f->link), true);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    pn_connection_free(f->conn);
    free(f);
    jn_io_loop_self_ = NULL;
    return 0;
}

/* The terminus's node properties as proton prints them. */
static void format(pn_terminus_t *t, char *out, size_t size)
{
    pn_data_t *d = pn_terminus_properties(t);
    pn_data_rewind(d);
    size_t n = size;
    assert_int_equal(pn_data_format(d, out, &n), 0);
    pn_data_rewind(d);
}

static void put_pair_symbol(pn_data_t *d, const char *k, const char *v)
{
    pn_data_put_symbol(d, pn_bytes(strlen(k), k));
    pn_data_put_symbol(d, pn_bytes(strlen(v), v));
}

static void test_address_replaced_other_properties_kept(void **state)
{
    struct fixture *f = *state;
    pn_terminus_t *t = pn_link_source(f->link);
    pn_data_t *d = pn_terminus_properties(t);
    pn_data_put_map(d);
    pn_data_enter(d);
    pn_data_put_symbol(d, pn_bytes(15, "lifetime-policy"));
    pn_data_put_described(d);
    pn_data_enter(d);
    pn_data_put_ulong(d, 0x2b); /* delete-on-close (AMQP 1.0 3.5.10) */
    pn_data_put_list(d);
    pn_data_exit(d);
    put_pair_symbol(d, "x-opt-qd.address", "lr.dyn"); /* a symbol: read as well */
    pn_data_put_symbol(d, pn_bytes(5, "x-opt"));
    pn_data_put_list(d);
    pn_data_enter(d);
    pn_data_put_int(d, 1);
    pn_data_put_string(d, pn_bytes(3, "two"));
    pn_data_exit(d);
    pn_data_exit(d);

    char *before = jn_io_dnp_address_IO(t);
    assert_string_equal(before, "lr.dyn");
    free(before);

    assert_int_equal(jn_io_dnp_set_address_IO(t, "ta/lr.dyn"), 0);
    char *after = jn_io_dnp_address_IO(t);
    assert_string_equal(after, "ta/lr.dyn");
    free(after);
    char text[512];
    format(t, text, sizeof text);
    assert_string_equal(text, "{:\"x-opt-qd.address\"=\"ta/lr.dyn\", "
                              ":\"lifetime-policy\"=@delete-on-close(43) [], "
                              ":\"x-opt\"=[1, \"two\"]}");
}

static void test_no_node_properties_get_the_one_pair(void **state)
{
    struct fixture *f = *state;
    pn_terminus_t *t = pn_link_source(f->link);
    assert_null(jn_io_dnp_address_IO(t));
    assert_int_equal(jn_io_dnp_set_address_IO(t, "ta/q"), 0);
    char text[128];
    format(t, text, sizeof text);
    assert_string_equal(text, "{:\"x-opt-qd.address\"=\"ta/q\"}");
}

static void test_pair_with_a_key_that_is_not_a_symbol_is_dropped(void **state)
{
    struct fixture *f = *state;
    pn_terminus_t *t = pn_link_source(f->link);
    pn_data_t *d = pn_terminus_properties(t);
    pn_data_put_map(d);
    pn_data_enter(d);
    pn_data_put_int(d, 7); /* malformed fields (AMQP 1.0 3.2) */
    pn_data_put_string(d, pn_bytes(1, "x"));
    pn_data_put_string(d, pn_bytes(16, "x-opt-qd.address"));
    pn_data_put_string(d, pn_bytes(1, "a"));
    put_pair_symbol(d, "k", "v");
    pn_data_exit(d);
    assert_int_equal(jn_io_dnp_set_address_IO(t, "ta/a"), 0);
    char text[128];
    format(t, text, sizeof text);
    assert_string_equal(text, "{:\"x-opt-qd.address\"=\"ta/a\", :k=:v}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_address_replaced_other_properties_kept, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_no_node_properties_get_the_one_pair, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pair_with_a_key_that_is_not_a_symbol_is_dropped, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
