/*
 * test_io_refs.c — a connection's reference count around its wakes and
 * timers (router/io: jn_io_conn_wake, jn_io_conn_tryref,
 * jn_io_loop_drain_exit, jn_io_timers_cancel_all; docs/design.md, "Waking
 * a connection, and its references").
 *
 * The rule these check: the queue of woken connections and every armed
 * timer hold one reference each, and whatever takes them off (the loop's
 * drain, the stop's cancel) gives exactly that reference back; a thread
 * that reaches a connection without a reference of its own never counts it
 * up from 0 (which would queue a connection that is being freed: the
 * use-after-poison seen at stop).
 *
 * A socketless test connection (jn_io_test_conn_new) of a layer that is
 * never started: no loop thread runs, so the counts are exact.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "io/io_private.h"

#include <junction/core.h>
#include <junction/log.h>
#include <junction/time.h>

#include <stdlib.h>

struct fixture {
    jn_core_t *core;
    jn_io_t *io;
    jn_io_conn_t *conn;
};

static int setup(void **state)
{
    for (int m = 0; m < JN_LOG_MODULE_COUNT; m++)
        jn_log_set_mask((jn_log_module_t)m, 0);
    struct fixture *f = calloc(1, sizeof *f);
    jn_core_config_t cc = {.router_id = "refs", .interior = false};
    f->core = jn_core_create(&cc, jn_io_core_ops());
    jn_io_config_t ic = {.container_id = "refs", .worker_threads = 1};
    f->io = f->core ? jn_io_create(f->core, &ic) : NULL;
    jn_endpoint_config_t ec = {.name = "l", .host = "127.0.0.1", .port = "5672"};
    if (!f->io || jn_io_add_listener(f->io, &ec) != 0)
        return -1;
    f->conn = jn_io_test_conn_new(f->io, "l");
    if (!f->conn)
        return -1;
    /* its start queued a wake (with its reference): take it off */
    if (jn_io_loop_drain_exit(&f->io->loops[0]) != 1)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    jn_io_test_conn_release(f->conn);
    jn_core_free(f->core);
    jn_io_free(f->io); /* frees the connection (the I/O side's reference) */
    free(f);
    return 0;
}

static unsigned refs(jn_io_conn_t *c)
{
    return atomic_load(&c->refs);
}

static void test_queued_wake_holds_one_reference_and_the_drain_gives_it_back(void **state)
{
    struct fixture *f = *state;
    unsigned before = refs(f->conn);
    assert_int_equal(before, 2); /* the I/O side's and the caller's */
    jn_io_conn_wake(f->conn);
    assert_int_equal(refs(f->conn), before + 1);
    assert_true(atomic_load(&f->conn->wake_queued));
    jn_io_conn_wake(f->conn); /* queued already: no second node, no reference */
    assert_int_equal(refs(f->conn), before + 1);
    assert_int_equal(jn_io_loop_drain_exit(&f->io->loops[0]), 1);
    assert_int_equal(refs(f->conn), before);
    assert_false(atomic_load(&f->conn->wake_queued));
    assert_true(jn_mpsc_empty(&f->io->loops[0].ready));
}

static void test_tryref_never_counts_up_from_zero(void **state)
{
    struct fixture *f = *state;
    unsigned before = refs(f->conn);
    /* a connection whose last reference is gone (conn_free is on its way,
     * waiting for the registry's lock): no reference, nothing queued */
    atomic_store(&f->conn->refs, 0);
    assert_false(jn_io_conn_tryref(f->conn));
    assert_int_equal(refs(f->conn), 0);
    atomic_store(&f->conn->refs, before);
    assert_true(jn_io_conn_tryref(f->conn));
    assert_int_equal(refs(f->conn), before + 1);
    jn_io_conn_unref(f->conn);
    assert_int_equal(refs(f->conn), before);
}

static void never_fires(jn_io_timer_t *t)
{
    (void)t;
    fail_msg("a cancelled timer fired");
}

static void test_cancel_all_gives_back_the_armed_timers_references(void **state)
{
    struct fixture *f = *state;
    unsigned before = refs(f->conn);
    int64_t later = (int64_t)jn_time_mono_ms() + 3600 * 1000;
    /* armed as the loop arms them: a reference each */
    atomic_fetch_add(&f->conn->refs, 1);
    jn_io_timer_arm_at(f->io, &f->conn->tick, later);
    atomic_fetch_add(&f->conn->refs, 1);
    jn_io_timer_arm_at(f->io, &f->conn->stall, later + 1);
    jn_io_timer_t other = {.fire = never_fires}; /* a listener's: holds none */
    jn_io_timer_arm_at(f->io, &other, later + 2);
    assert_int_equal(refs(f->conn), before + 2);
    jn_io_timers_cancel_all(f->io);
    assert_int_equal(refs(f->conn), before);
    assert_false(f->conn->tick.armed);
    assert_false(f->conn->stall.armed);
    assert_false(other.armed);
    assert_null(f->io->timers);
    assert_int_equal(atomic_load(&f->io->timer_next), INT64_MAX);
    /* and they can be armed again afterwards */
    assert_false(jn_io_timer_cancel(f->io, &f->conn->tick));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_queued_wake_holds_one_reference_and_the_drain_gives_it_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tryref_never_counts_up_from_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_all_gives_back_the_armed_timers_references,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
