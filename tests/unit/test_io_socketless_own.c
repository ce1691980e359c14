/*
 * test_io_socketless_own.c — socketless test connections (junction/io.h,
 * router/io/io_test.c) on Junction's own AMQP engine (docs/engine.md): a
 * test connection of a listener whose configuration the engine serves runs
 * on the own engine, as an accepted one would (an inter-router listener's
 * too, since stage 3b, and a route-container listener's, since stage 3a's
 * step 3), and its octets move through io_plain.c both ways; a connector's
 * runs on the engine's client end; whatever the listener's SASL (without
 * Cyrus, the engine's built-in ANONYMOUS offered as 1.19 offers it). This
 * is what lets
 * the input_path fuzzer (tests/fuzz/fuzz_input_path.c, fuzz_input_path_own)
 * drive the own engine.
 *
 * The core is started as in junctiond and the fuzzer; the test's thread
 * plays loop 0 (jn_io_test_run).
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

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

struct fixture {
    jn_core_t *core;
    jn_io_t *io;
};

/* Octets a peer sends: the AMQP header, an open with container-id "c"
 * (2.4.1; one-field list), SASL's header, a sasl-init naming ANONYMOUS
 * (5.3.3.2). */
static const uint8_t amqp_header[] = {'A', 'M', 'Q', 'P', 0, 1, 0, 0};
static const uint8_t open_frame[] = {0, 0, 0, 17, 2, 0, 0, 0, 0x00, 0x53, 0x10,
                                     0xc0, 4, 1, 0xa1, 1, 'c'};
static const uint8_t sasl_header[] = {'A', 'M', 'Q', 'P', 3, 1, 0, 0};
static const uint8_t sasl_init[] = {0, 0, 0, 25, 2, 1, 0, 0, 0x00, 0x53, 0x41, 0xc0, 12, 1,
                                    0xa3, 9, 'A', 'N', 'O', 'N', 'Y', 'M', 'O', 'U', 'S'};
/* A server's sasl-mechanisms offering ANONYMOUS, and its sasl-outcome ok
 * (5.3.3.1, 5.3.3.6). */
static const uint8_t sasl_mechanisms[] = {0, 0, 0, 25, 2, 1, 0, 0, 0x00, 0x53, 0x40, 0xc0, 12, 1,
                                          0xa3, 9, 'A', 'N', 'O', 'N', 'Y', 'M', 'O', 'U', 'S'};
static const uint8_t sasl_outcome_ok[] = {0, 0, 0, 16, 2, 1, 0, 0,
                                          0x00, 0x53, 0x44, 0xc0, 3, 1, 0x50, 0};
/* An empty frame: a heartbeat (2.4.5). */
static const uint8_t heartbeat[] = {0, 0, 0, 8, 2, 0, 0, 0};

static struct fixture *router_new(void)
{
    for (int m = 0; m < JN_LOG_MODULE_COUNT; m++)
        jn_log_set_mask((jn_log_module_t)m, 0);
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    jn_core_config_t cc = {.router_id = "own", .interior = true};
    f->core = jn_core_create(&cc, jn_io_core_ops());
    assert_non_null(f->core);
    jn_io_config_t ic = {.container_id = "own", .worker_threads = 1,
                         .max_connections = JN_IO_NO_POLICY_LIMIT};
    f->io = jn_io_create(f->core, &ic);
    assert_non_null(f->io);
    jn_endpoint_config_t plain = {.name = "plain", .host = "127.0.0.1", .port = "5672"};
    jn_endpoint_config_t anon = {.name = "anon", .host = "127.0.0.1", .port = "5672",
                                 .sasl_mechanisms = "ANONYMOUS"};
    jn_endpoint_config_t ir = {.name = "ir", .host = "127.0.0.1", .port = "5672",
                               .role = JN_ROLE_INTER_ROUTER};
    jn_endpoint_config_t rc = {.name = "rc", .host = "127.0.0.1", .port = "5672",
                               .role = JN_ROLE_ROUTE_CONTAINER};
    /* without Cyrus (jn_sasl_init not run): PLAIN, which nothing offers
     * then; ANONYMOUS spelt as 1.19's inclusion list still reads it; and
     * authenticatePeer (SASL required, ANONYMOUS offered) */
    jn_endpoint_config_t mech = {.name = "mech", .host = "127.0.0.1", .port = "5672",
                                 .sasl_mechanisms = "PLAIN"};
    jn_endpoint_config_t lower = {.name = "lower", .host = "127.0.0.1", .port = "5672",
                                  .sasl_mechanisms = "PLAIN anonymous"};
    jn_endpoint_config_t req = {.name = "req", .host = "127.0.0.1", .port = "5672",
                                .authenticate_peer = true};
    jn_endpoint_config_t out = {.name = "out", .host = "127.0.0.1", .port = "5672"};
    jn_endpoint_config_t idle = {.name = "idle", .host = "127.0.0.1", .port = "5672",
                                 .idle_timeout_seconds = 16};
    assert_int_equal(jn_io_add_listener(f->io, &plain), 0);
    assert_int_equal(jn_io_add_listener(f->io, &anon), 0);
    assert_int_equal(jn_io_add_listener(f->io, &ir), 0);
    assert_int_equal(jn_io_add_listener(f->io, &rc), 0);
    assert_int_equal(jn_io_add_listener(f->io, &mech), 0);
    assert_int_equal(jn_io_add_listener(f->io, &lower), 0);
    assert_int_equal(jn_io_add_listener(f->io, &req), 0);
    assert_int_equal(jn_io_add_listener(f->io, &idle), 0);
    assert_int_equal(jn_io_add_connector(f->io, &out), 0);
    assert_int_equal(jn_core_start(f->core), 0);
    return f;
}

/* The stop's post must wake the core thread: not from the test's thread,
 * an inline poster (as the fuzzer does it). */
static void *core_stopper(void *arg)
{
    jn_core_stop(arg);
    return NULL;
}

static void router_free(struct fixture *f)
{
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, core_stopper, f->core), 0);
    pthread_join(t, NULL);
    jn_core_free(f->core);
    jn_io_free(f->io);
    free(f);
}

/* Run the loop until it has nothing left to do (the core thread may hold
 * the core's token for a moment: idle runs are retried). */
static void run_idle(struct fixture *f)
{
    for (int idle = 0; idle < 200;) {
        if (jn_io_test_run(f->io))
            idle = 0;
        else {
            idle++;
            sched_yield();
        }
    }
}

static void feed(struct fixture *f, jn_io_conn_t *c, const uint8_t *p, size_t n)
{
    jn_io_test_conn_input(c, p, n, false);
    run_idle(f);
    assert_int_equal(jn_io_test_conn_pending(c), 0);
}

/* A connection of the listener, on the own engine, that has read the
 * peer's AMQP header and open. */
static jn_io_conn_t *opened(struct fixture *f, const char *listener)
{
    jn_io_conn_t *c = jn_io_test_conn_new(f->io, listener);
    assert_non_null(c);
    assert_true(jn_io_test_conn_own(c));
    run_idle(f);
    feed(f, c, amqp_header, sizeof amqp_header);
    feed(f, c, open_frame, sizeof open_frame);
    return c;
}

/* The peer's input ends: the connection closes, and is freed once
 * released. */
static void finish(struct fixture *f, jn_io_conn_t *c)
{
    jn_io_test_conn_input(c, NULL, 0, true);
    run_idle(f);
    assert_true(jn_io_test_conn_closed(c));
    jn_io_test_conn_release(c);
    run_idle(f);
    assert_int_equal(jn_io_test_conns(f->io), 0);
}

static void test_socketless_conn_runs_on_the_own_engine_when_it_serves_the_listener(void **state)
{
    (void)state;
    struct fixture *f = router_new();
    jn_io_conn_t *c = jn_io_test_conn_new(f->io, "plain");
    assert_non_null(c);
    assert_true(jn_io_test_conn_own(c));
    run_idle(f);
    feed(f, c, amqp_header, sizeof amqp_header);
    assert_int_equal(c->octets_read, sizeof amqp_header);
    assert_int_equal(c->octets_written, sizeof amqp_header); /* ours back */
    feed(f, c, open_frame, sizeof open_frame);
    assert_true(c->opened); /* the core was told: the engine read the open */
    assert_true(c->octets_written > sizeof amqp_header); /* our open went out */
    finish(f, c);
    router_free(f);
}

static void test_socketless_conn_on_the_own_engine_serves_sasl_anonymous(void **state)
{
    (void)state;
    struct fixture *f = router_new();
    jn_io_conn_t *c = jn_io_test_conn_new(f->io, "anon");
    assert_non_null(c);
    assert_true(jn_io_test_conn_own(c));
    run_idle(f);
    /* in small pieces: the transport keeps a partial frame for the next */
    feed(f, c, sasl_header, sizeof sasl_header);
    feed(f, c, sasl_init, 5);
    feed(f, c, sasl_init + 5, sizeof sasl_init - 5);
    feed(f, c, amqp_header, sizeof amqp_header);
    feed(f, c, open_frame, 3);
    assert_false(c->opened);
    feed(f, c, open_frame + 3, sizeof open_frame - 3);
    assert_true(c->opened);
    finish(f, c);
    router_free(f);
}

static void test_socketless_conn_refused_by_the_own_engine_closes_and_is_freed(void **state)
{
    (void)state;
    struct fixture *f = router_new();
    jn_io_conn_t *c = jn_io_test_conn_new(f->io, "plain");
    assert_non_null(c);
    static const uint8_t junk[] = {'H', 'T', 'T', 'P', '/', '1', '.', '1'};
    jn_io_test_conn_input(c, junk, sizeof junk, false);
    run_idle(f);
    assert_true(jn_io_test_conn_closed(c)); /* a header not AMQP's: ours, then closed */
    assert_false(c->opened);
    jn_io_test_conn_release(c);
    run_idle(f);
    assert_int_equal(jn_io_test_conns(f->io), 0);
    router_free(f);
}

/* Stage 3b: an inter-router listener's connection runs on the own engine;
 * stage 3a, step 3: so does a route-container listener's. */
static void test_socketless_ir_and_container_conns_run_on_the_own_engine(void **state)
{
    (void)state;
    struct fixture *f = router_new();
    jn_io_conn_t *c = jn_io_test_conn_new(f->io, "ir");
    assert_non_null(c);
    assert_true(jn_io_test_conn_own(c));
    assert_true(c->inter_router);
    run_idle(f);
    jn_io_test_conn_abort(c);
    finish(f, c);
    c = opened(f, "rc");
    assert_true(c->opened);
    finish(f, c);
    router_free(f);
}

/* Stage 5: a connector's test connection runs on the own engine's client
 * end (its SASL header first, its sasl-init, AMQP header and open after
 * the server's offer), as one connect_now makes. */
static void test_socketless_connector_conn_runs_on_the_own_engine(void **state)
{
    (void)state;
    struct fixture *f = router_new();
    jn_io_conn_t *out = jn_io_test_conn_new(f->io, "out");
    assert_non_null(out);
    assert_true(jn_io_test_conn_own(out));
    run_idle(f);
    assert_int_equal(out->octets_written, sizeof sasl_header); /* ours first (5.3.1) */
    feed(f, out, sasl_header, sizeof sasl_header);
    feed(f, out, sasl_mechanisms, sizeof sasl_mechanisms);
    feed(f, out, sasl_outcome_ok, sizeof sasl_outcome_ok);
    /* then our sasl-init, AMQP header and open */
    assert_true(out->octets_written > sizeof sasl_header + sizeof amqp_header + 30);
    feed(f, out, amqp_header, sizeof amqp_header);
    assert_false(out->opened);
    feed(f, out, open_frame, sizeof open_frame);
    assert_true(out->opened); /* the core was told: the client end read the open */
    finish(f, out);
    router_free(f);
}

/* A fresh connection of listener name on the own engine, given in: the
 * peer's octets. */
static jn_io_conn_t *own_conn_fed(struct fixture *f, const char *name, const uint8_t *in,
                                  size_t n)
{
    jn_io_conn_t *c = jn_io_test_conn_new(f->io, name);
    assert_non_null(c);
    assert_true(jn_io_test_conn_own(c));
    run_idle(f);
    jn_io_test_conn_input(c, in, n, false);
    run_idle(f);
    return c;
}

/* Stage 5: listeners without Cyrus run on the own engine with the
 * built-in ANONYMOUS offered as 1.19 offers it: nothing for saslMechanisms
 * PLAIN (a sasl-init for ANONYMOUS refused, a peer without SASL served),
 * ANONYMOUS for "PLAIN anonymous" (a word, any case), and SASL required
 * with authenticatePeer. */
static void test_socketless_listeners_without_cyrus_get_the_builtin_offer(void **state)
{
    (void)state;
    struct fixture *f = router_new();
    uint8_t sasl_in[sizeof sasl_header + sizeof sasl_init + sizeof amqp_header +
                    sizeof open_frame];
    uint8_t *p = sasl_in;
    memcpy(p, sasl_header, sizeof sasl_header);
    memcpy(p += sizeof sasl_header, sasl_init, sizeof sasl_init);
    memcpy(p += sizeof sasl_init, amqp_header, sizeof amqp_header);
    memcpy(p + sizeof amqp_header, open_frame, sizeof open_frame);
    uint8_t bare_in[sizeof amqp_header + sizeof open_frame];
    memcpy(bare_in, amqp_header, sizeof amqp_header);
    memcpy(bare_in + sizeof amqp_header, open_frame, sizeof open_frame);
    struct {
        const char *name;
        bool sasl, opens;
    } cases[] = {
        {"mech", true, false}, /* ANONYMOUS not offered: outcome auth, closed */
        {"mech", false, true}, /* not required: a peer without SASL is served */
        {"lower", true, true}, {"lower", false, true},
        {"req", true, true},   {"req", false, false}, /* required: AMQP's header refused */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        jn_io_conn_t *c = cases[i].sasl ? own_conn_fed(f, cases[i].name, sasl_in, sizeof sasl_in)
                                        : own_conn_fed(f, cases[i].name, bare_in, sizeof bare_in);
        assert_int_equal(c->opened, cases[i].opens);
        assert_int_equal(jn_io_test_conn_closed(c), !cases[i].opens);
        finish(f, c);
    }
    router_free(f);
}

static void test_socketless_conn_on_the_own_engine_aborted_closes(void **state)
{
    (void)state;
    struct fixture *f = router_new();
    jn_io_conn_t *c = opened(f, "plain");
    assert_false(jn_io_test_conn_closed(c));
    jn_io_test_conn_abort(c); /* as a failed write */
    run_idle(f);
    assert_true(jn_io_test_conn_closed(c));
    jn_io_test_conn_release(c);
    run_idle(f);
    assert_int_equal(jn_io_test_conns(f->io), 0);
    router_free(f);
}

/* The idle clock's timer (io_own.c, own_tick): armed once for the
 * engine's deadline, then left where it is while the peer's frames move
 * the deadline later, instead of being moved (under the timers' lock, and
 * with a wake of loop 0 when it was the earliest) in every pass; when its
 * moment comes it fires early, the pass ticks (nothing is due yet) and
 * arms it for the deadline of that moment. */
static void test_socketless_idle_timer_is_left_to_fire_early_while_frames_move_it(void **state)
{
    (void)state;
    struct fixture *f = router_new();
    jn_io_conn_t *c = opened(f, "idle");
    /* a tick is wanted when 16 s of the peer's silence are up */
    assert_true(c->tick.armed);
    int64_t first = c->tick.deadline;
    assert_true(first > (int64_t)jn_time_mono_ms() + 15000);
    assert_int_equal(c->tick_armed_at, first);
    assert_int_equal(c->tick_at, first);
    for (int i = 0; i < 3; i++) {
        int64_t was = c->tick_at;
        int64_t until = (int64_t)jn_time_mono_ms() + 2;
        while ((int64_t)jn_time_mono_ms() < until)
            sched_yield();
        feed(f, c, heartbeat, sizeof heartbeat);
        assert_true(c->tick_at > was); /* the deadline moved later */
        assert_true(c->tick.armed);    /* the timer did not */
        assert_int_equal(c->tick.deadline, first);
        assert_int_equal(c->tick_armed_at, first);
    }
    /* its moment comes (moved to now, as the clock would bring it) */
    int64_t now = (int64_t)jn_time_mono_ms();
    jn_io_timer_arm_at(f->io, &c->tick, now);
    c->tick_armed_at = now;
    jn_io_timers_run(f->io); /* this thread plays loop 0, which fires timers */
    assert_false(c->tick.armed);
    run_idle(f);
    assert_false(jn_io_test_conn_closed(c)); /* an early tick closes nothing */
    assert_true(c->tick.armed);
    assert_true(c->tick.deadline > now + 15000);
    assert_int_equal(c->tick.deadline, c->tick_at);
    assert_int_equal(c->tick_armed_at, c->tick_at);
    finish(f, c);
    router_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_socketless_conn_runs_on_the_own_engine_when_it_serves_the_listener),
        cmocka_unit_test(test_socketless_conn_on_the_own_engine_serves_sasl_anonymous),
        cmocka_unit_test(test_socketless_conn_refused_by_the_own_engine_closes_and_is_freed),
        cmocka_unit_test(test_socketless_ir_and_container_conns_run_on_the_own_engine),
        cmocka_unit_test(test_socketless_listeners_without_cyrus_get_the_builtin_offer),
        cmocka_unit_test(test_socketless_connector_conn_runs_on_the_own_engine),
        cmocka_unit_test(test_socketless_conn_on_the_own_engine_aborted_closes),
        cmocka_unit_test(test_socketless_idle_timer_is_left_to_fire_early_while_frames_move_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
