/*
 * fuzz_input_path.c — libFuzzer target for the router's whole input path: a
 * peer's raw octets go into Junction's own AMQP engine as the router runs
 * it (io_own.c's pass, the core run inline after each pass, exactly as
 * io_loop.c's conn_pass does), through the socketless test connections of
 * junction/io.h. An assert in the engine aborts here as it would abort
 * junctiond; the sanitizers catch the rest, and every input must end with
 * the connection closed and freed (a connection left open or never freed
 * aborts too). (Until stage 5 of issue 27 this target drove proton's
 * connection driver behind the frame screen:
 * tests/fuzz/input_path-findings.md.)
 *
 * One router for the whole run (made at the first input, torn down at
 * exit): an interior core (so inter-router connections are accepted) with
 * its thread started as junctiond's, the $management agent, and an I/O
 * layer with one loop that no thread runs — the fuzzer's thread plays its
 * loop. It has a listener and a connector for each variant below, none
 * bound or connected. Each input gets a fresh connection.
 * JN_FUZZ_NO_MANAGEMENT=1 in the environment leaves the agent out (its
 * QUERY answers cost milliseconds each under the fuzzer's instrumentation
 * and took three quarters of a session's time; without the agent
 * $management is an address like any other).
 *
 * Input: a control octet, then the octets the peer sends. Control bits:
 *   0-2  how many octets arrive at a time (fuzz_input.h: 1, 2, 3, 7, 16,
 *        64, 200 or a buffer's capacity); a pass runs after each piece.
 *        Past the first SMALL_PREFIX octets pieces are at least that long:
 *        a pass per octet over a long input cost ten times the input's
 *        other work and found nothing the opening frames do not;
 *   3    outgoing: the router connected (client transport, its open sent
 *        first) — else incoming: the router accepted (server transport);
 *   4    role inter-router — else normal;
 *   5    SASL: the listener and the connector name ANONYMOUS only, without
 *        authenticatePeer (authenticatePeer needs Cyrus, which the fuzzer
 *        does not set up; the engine's built-in ANONYMOUS serves it) —
 *        else no mechanism is named (a connector always speaks SASL);
 *   6    maxFrameSize 512 (the smallest) — else the default 16384;
 *   7    tight limits: maxSessions 2, linkCapacity 1, maxMessageSize 1024.
 * After the last octet the peer's input ends (read_close); passes run
 * until the transport closes.
 *
 * Built with -DJN_FUZZ_SKIP_KNOWN, inputs of an abort class already known
 * (input_path_known.h) are skipped, so a session finds the next one.
 *
 * Built with -DJN_FUZZ_OWN (fuzz_input_path_own, the target that ran on
 * the own engine while proton's path was still there): since stage 5
 * removed proton's path both targets run Junction's own AMQP engine on
 * every variant above (outgoing ones on the engine's client end, bit 5's
 * listener with its built-in ANONYMOUS and SASL required: Cyrus is not
 * set up in the fuzzer, jn_io_own_sasl_builtin); this one keeps its
 * corpus (tests/fuzz/corpus/input_path_own/) and checks that every
 * connection is on the own engine (it aborts if not).
 *
 * Threads: the fuzzer's thread for everything but the core thread's own
 * work (mesh timers), as in junctiond.
 */
#include "fuzz_input.h"

#include <junction/core.h>
#include <junction/core_view.h>
#include <junction/io.h>
#include <junction/log.h>
#include <junction/mgmt.h>
#include <junction/pool.h>
#include <junction/time.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef JN_FUZZ_SKIP_KNOWN
#include "input_path_known.h"
#endif

#define CONTROL_MASK 0xffu

#define ROUTER_ID "Fuzz"
#define VARIANTS  32 /* control bits 3-7 */

/* Octets of an input handed over in pieces of the size its control octet
 * says; after them, pieces of at least this many (see the top). */
#define SMALL_PREFIX 256

/* Runs of the loop with nothing left to do, and milliseconds of them,
 * before a connection that should have closed (or been freed) counts as
 * stuck: the core thread may hold the core's token for a moment (a
 * management query under the sanitizers, on a loaded machine, took longer
 * than IDLE_RUNS yields once), so an idle run is retried, yielding, and
 * both must pass. */
#define IDLE_RUNS 2000
#define IDLE_MS   3000
/* Idle runs after the peer's input ended before the peer is taken to have
 * closed its socket fully (end_input): a few, for the core thread's token. */
#define END_IDLE_RUNS 4
/* Runs in one go with work left before it counts as a livelock. */
#define BUSY_RUNS 100000

/* The router, made once (fuzzer's thread; torn down at exit). */
static struct {
    jn_core_t *core;
    jn_io_t *io;
    jn_mgmt_t *mgmt;
    bool up;
} router;

/* ---- the router ------------------------------------------------------------ */

static void variant_name(unsigned v, char *out, size_t len)
{
    snprintf(out, len, "fuzz-%02x", v);
}

/* The listener (bit 0 clear) or connector of variant v (control bits 3-7
 * shifted down). 0 or -1. */
static int add_variant(unsigned v)
{
    char name[16];
    variant_name(v, name, sizeof name);
    bool outgoing = v & 1, inter_router = v & 2, sasl = v & 4, small = v & 8, tight = v & 16;
    bool require_auth = !outgoing && sasl;
    jn_endpoint_config_t ec = {
        .name = name,
        .host = "127.0.0.1",
        .port = "5672",
        .role = inter_router ? JN_ROLE_INTER_ROUTER : JN_ROLE_NORMAL,
        .sasl_mechanisms = sasl ? "ANONYMOUS" : NULL,
        .authenticate_peer = require_auth,
        .max_frame_size = small ? 512 : 0,
        .max_sessions = tight ? 2 : 0,
        .max_message_size = tight ? 1024 : 0,
        .link_capacity = tight ? 1 : 0,
    };
    int rc = outgoing ? jn_io_add_connector(router.io, &ec) : jn_io_add_listener(router.io, &ec);
    return rc == 0 ? 0 : -1;
}

/* Stop the core from a thread that is not an inline poster: the stop's
 * post must wake the core thread (the fuzzer's thread posts silently). */
static void *core_stopper(void *arg)
{
    jn_core_stop(arg);
    return NULL;
}

/* At exit: stop and free the router, then report pool objects still in
 * use (a leak: exit status 3). */
static void router_teardown(void)
{
    if (!router.up)
        return;
    router.up = false;
    pthread_t t;
    if (pthread_create(&t, NULL, core_stopper, router.core) == 0)
        pthread_join(t, NULL);
    jn_core_free(router.core);
    jn_io_free(router.io);
    jn_mgmt_free(router.mgmt);
    jn_pool_thread_exit();
    if (jn_pool_leak_report(stderr) != 0)
        _exit(3);
}

static void router_setup(void)
{
    if (!getenv("JN_FUZZ_LOG")) /* logs cost time; JN_FUZZ_LOG=1 keeps them */
        for (int m = 0; m < JN_LOG_MODULE_COUNT; m++)
            jn_log_set_mask((jn_log_module_t)m, 0);
    jn_core_config_t cc = {.router_id = ROUTER_ID, .interior = true};
    router.core = jn_core_create(&cc, jn_io_core_ops());
    jn_io_config_t ic = {.container_id = ROUTER_ID, .worker_threads = 1,
                         .max_connections = JN_IO_NO_POLICY_LIMIT};
    router.io = router.core ? jn_io_create(router.core, &ic) : NULL;
    jn_mgmt_config_t mc = {.router_id = ROUTER_ID,
                           .mode = "interior",
                           .version = "fuzz",
                           .worker_threads = 1,
                           .core = router.core,
                           /* no I/O hooks: a CREATE listener is kept, not bound */
                           .foreach_router = jn_core_view_routers_CT,
                           .nodes_ctx = router.core};
    if (!router.io)
        abort();
    if (!getenv("JN_FUZZ_NO_MANAGEMENT")) {
        router.mgmt = jn_mgmt_create(&mc);
        if (!router.mgmt)
            abort();
        jn_core_set_management(router.core, jn_mgmt_request_CT, router.mgmt);
    }
    for (unsigned v = 0; v < VARIANTS; v++)
        if (add_variant(v) != 0)
            abort();
    if (jn_core_start(router.core) != 0)
        abort();
    router.up = true;
    atexit(router_teardown);
}

/* ---- one input ------------------------------------------------------------- */

static void stuck(const char *what)
{
    fprintf(stderr, "fuzz_input_path: %s\n", what);
    abort();
}

/* Run passes until nothing is left to do and conn took its input (or
 * cannot take more). */
static void run_until_idle(jn_io_conn_t *conn)
{
    for (int retried = 0;;) {
        int busy = 0;
        while (jn_io_test_run(router.io))
            if (++busy == BUSY_RUNS)
                stuck("the router keeps running with no new input (livelock)");
        if (jn_io_test_conn_pending(conn) == 0 || jn_io_test_conn_closed(conn) || retried++)
            return;
        /* proton took part of the piece: a further pass reads the rest */
        jn_io_test_conn_input(conn, NULL, 0, false);
    }
}

/* Run passes until done(conn) holds; abort with what when it never does. */
static void run_until(bool (*done)(jn_io_conn_t *), jn_io_conn_t *conn, const char *what)
{
    uint64_t idle_since = 0;
    for (int idle = 0; !done(conn);) {
        if (jn_io_test_run(router.io)) {
            idle = 0;
            continue;
        }
        if (idle++ == 0)
            idle_since = jn_time_mono_ms();
        if (idle >= IDLE_RUNS && jn_time_mono_ms() - idle_since >= IDLE_MS)
            stuck(what);
        sched_yield(); /* the core thread may hold the core's token */
    }
}

static bool conn_closed(jn_io_conn_t *conn)
{
    return jn_io_test_conn_closed(conn);
}

static bool conns_freed(jn_io_conn_t *conn)
{
    (void)conn;
    return jn_io_test_conns(router.io) == 0;
}

/* The peer's input ended: run until the transport closes. The router
 * closes by itself in almost every case; when it does not (proton holds
 * back our close until it has decoded the peer's open, so a peer whose
 * open never made sense and that only half-closed its socket keeps the
 * connection), the peer is taken to have closed its socket fully: the
 * router's next write fails, as it would on a socket (jn_io_test_conn_abort).
 * JN_FUZZ_STRICT_CLOSE=1 in the environment makes that case abort instead,
 * to find such inputs. */
static void end_input(jn_io_conn_t *conn)
{
    static int strict = -1;
    if (strict < 0)
        strict = getenv("JN_FUZZ_STRICT_CLOSE") != NULL;
    for (int idle = 0; !jn_io_test_conn_closed(conn);) {
        if (jn_io_test_run(router.io)) {
            idle = 0;
            continue;
        }
        if (++idle < END_IDLE_RUNS) {
            sched_yield(); /* the core thread may hold the core's token */
            continue;
        }
        if (strict)
            stuck("the connection did not close after its input ended");
        jn_io_test_conn_abort(conn);
        run_until(conn_closed, conn, "the connection did not close after a write failed");
    }
}

/* Hand the peer's octets over, chunk at a time (after the first
 * SMALL_PREFIX octets, at least SMALL_PREFIX at a time); the daemon's read
 * path takes them into the engine. */
static void feed(jn_io_conn_t *conn, const uint8_t *data, size_t len, size_t chunk)
{
    for (size_t done = 0; done < len && !jn_io_test_conn_closed(conn);) {
        size_t piece = done >= SMALL_PREFIX && chunk < SMALL_PREFIX ? SMALL_PREFIX : chunk;
        size_t n = len - done < piece ? len - done : piece;
        jn_io_test_conn_input(conn, data + done, n, false);
        run_until_idle(conn);
        done += n;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
#ifdef JN_FUZZ_SKIP_KNOWN
    if (jn_known_input(data[0], data + 1, size - 1) != JN_KNOWN_NONE)
        return 0;
#endif
    if (!router.up)
        router_setup();
    uint8_t control = data[0] & CONTROL_MASK;
    char name[16];
    variant_name(control >> 3, name, sizeof name);
    jn_io_conn_t *conn = jn_io_test_conn_new(router.io, name);
    if (!conn)
        abort();
#ifdef JN_FUZZ_OWN
    if (!jn_io_test_conn_own(conn))
        stuck("the connection is not on the own engine");
#endif
    run_until_idle(conn); /* the router's first octets (and open, outgoing) */
    feed(conn, data + 1, size - 1, jn_fuzz_chunk(control));
    jn_io_test_conn_input(conn, NULL, 0, true); /* the peer's input ends */
    end_input(conn);
    jn_io_test_conn_release(conn);
    run_until(conns_freed, conn, "the connection was not freed after it closed");
    return 0;
}
