/*
 * test_core_util.h — a fake I/O layer for the router-core tests: the test
 * thread plays every I/O thread. It opens connections and attaches links
 * through the *_IO calls, builds messages with the encoder, and takes the
 * core's work with jn_core_conn_take_work_IO after the core's wake
 * callback (run on the real core thread) signals a condition variable.
 *
 * Waits are bounded (WAIT_MS) so a missing work item fails the test instead
 * of hanging it. core_sync() is a barrier: when it returns, the core has
 * processed every action posted before and ended those batches (so their
 * credit flush is done). Static functions only (each test is a program).
 */
#ifndef JN_TEST_CORE_UTIL_H
#define JN_TEST_CORE_UTIL_H 1

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/core.h>
#include <junction/encoder.h>
#include <junction/log.h>
#include <junction/message.h>
#include <junction/pool.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WAIT_MS   5000
#define MAX_CONNS 16
#define MAX_ITEMS 4096

typedef struct fake_conn {
    jn_core_conn_t *conn;
    const char *name;
    bool strip_inbound;
    /* under h.mu: written by the core thread's callbacks */
    unsigned wakes;
    bool released;
    bool closed;  /* test thread: jn_core_conn_closed_IO called */
    bool gate;    /* the wake callback blocks while set */
    bool in_gate; /* the core thread is blocked in it */
    /* test thread: work taken and not yet looked at (FIFO) */
    jn_work_t *items[MAX_ITEMS];
    size_t head, tail;
} fake_conn_t;

static struct harness {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    jn_core_t *core;
    fake_conn_t conns[MAX_CONNS];
    size_t n_conns;
    uint64_t next_conn_id;
    fake_conn_t *sync_conn;
    jn_delivery_t *held[MAX_ITEMS]; /* references the tests hold */
    size_t n_held;
    uint64_t leak_baseline; /* pooled objects in use before the test */
    /* ops->colocate calls (core thread; under mu), in order */
    fake_conn_t *coloc[64][2];
    size_t n_coloc;
} h = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static const char *work_name(jn_work_type_t t)
{
    static const char *const names[] = {"LINK_OPEN",         "LINK_CLOSE",      "LINK_RELEASED",
                                        "LINK_CREDIT",       "LINK_DRAINED",    "DELIVERY_SEND",
                                        "DELIVERY_CONTINUE", "DELIVERY_UPDATE", "CONN_CLOSE"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

/* Keep a delivery reference given to a test until teardown. */
static inline jn_delivery_t *hold(jn_delivery_t *d)
{
    assert_true(h.n_held < MAX_ITEMS);
    h.held[h.n_held++] = d;
    return d;
}

/* Core thread: ops->wake. */
static inline void fake_wake(void *io_conn)
{
    fake_conn_t *fc = io_conn;
    pthread_mutex_lock(&h.mu);
    fc->wakes++;
    pthread_cond_broadcast(&h.cond);
    while (fc->gate) {
        fc->in_gate = true;
        pthread_cond_broadcast(&h.cond);
        pthread_cond_wait(&h.cond, &h.mu);
    }
    fc->in_gate = false;
    pthread_mutex_unlock(&h.mu);
}

/* Core thread (or main in teardown): ops->conn_released. */
static inline void fake_released(void *io_conn)
{
    fake_conn_t *fc = io_conn;
    pthread_mutex_lock(&h.mu);
    fc->released = true;
    pthread_cond_broadcast(&h.cond);
    pthread_mutex_unlock(&h.mu);
}

/* Core thread: ops->colocate. */
static inline void fake_colocate(void *io_a, void *io_b)
{
    pthread_mutex_lock(&h.mu);
    if (h.n_coloc < sizeof h.coloc / sizeof h.coloc[0]) {
        h.coloc[h.n_coloc][0] = io_a;
        h.coloc[h.n_coloc][1] = io_b;
    }
    h.n_coloc++;
    pthread_mutex_unlock(&h.mu);
}

/* ops->colocate calls so far (after a barrier: core_sync). */
static inline size_t colocations(void)
{
    pthread_mutex_lock(&h.mu);
    size_t n = h.n_coloc;
    pthread_mutex_unlock(&h.mu);
    return n;
}

static const jn_core_io_ops_t fake_ops = {
    .wake = fake_wake, .conn_released = fake_released, .colocate = fake_colocate};

static inline void deadline_in(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Take everything the core queued for fc into fc->items. */
static inline void take_all(fake_conn_t *fc)
{
    jn_work_t *batch[16];
    size_t n;
    do {
        n = jn_core_conn_take_work_IO(fc->conn, batch, 16);
        for (size_t i = 0; i < n; i++) {
            assert_true(fc->tail - fc->head < MAX_ITEMS);
            fc->items[fc->tail++ % MAX_ITEMS] = batch[i];
        }
    } while (n == 16);
}

/* The next work item of fc, waiting up to WAIT_MS; NULL on timeout. */
static inline jn_work_t *next_work(fake_conn_t *fc)
{
    struct timespec deadline;
    deadline_in(&deadline, WAIT_MS);
    for (;;) {
        pthread_mutex_lock(&h.mu);
        unsigned seen = fc->wakes;
        pthread_mutex_unlock(&h.mu);
        take_all(fc);
        if (fc->head != fc->tail)
            return fc->items[fc->head++ % MAX_ITEMS];
        pthread_mutex_lock(&h.mu);
        int rc = 0;
        while (fc->wakes == seen && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&h.cond, &h.mu, &deadline);
        pthread_mutex_unlock(&h.mu);
        if (rc == ETIMEDOUT) {
            take_all(fc);
            return fc->head != fc->tail ? fc->items[fc->head++ % MAX_ITEMS] : NULL;
        }
    }
}

/* The next work item of fc, which must be of type t (caller frees it). */
static inline jn_work_t *expect_work_at(fake_conn_t *fc, jn_work_type_t t, const char *file,
                                        int line)
{
    jn_work_t *w = next_work(fc);
    if (!w)
        fail_msg("%s:%d: %s: no work, expected %s", file, line, fc->name, work_name(t));
    if (w->type != t)
        fail_msg("%s:%d: %s: got %s, expected %s", file, line, fc->name, work_name(w->type),
                 work_name(t));
    return w;
}
#define expect_work(fc, t) expect_work_at((fc), (t), __FILE__, __LINE__)

/* As expect_work, and free it. */
#define expect_and_free(fc, t) jn_work_free(expect_work((fc), (t)))

/* Open a fake connection described by info (its conn_id is set here). */
static inline fake_conn_t *open_conn_info(const char *name, jn_conn_info_t *info)
{
    assert_true(h.n_conns < MAX_CONNS);
    fake_conn_t *fc = &h.conns[h.n_conns++];
    memset(fc, 0, sizeof *fc);
    fc->name = name;
    fc->strip_inbound = info->strip_inbound;
    info->conn_id = ++h.next_conn_id;
    fc->conn = jn_core_conn_opened_IO(h.core, fc, info);
    assert_non_null(fc->conn);
    return fc;
}

/* Open a fake connection (container id name); route_container: of role
 * route-container, a container link routes and auto-links may use. */
static inline fake_conn_t *open_conn_role(const char *name, bool strip_inbound,
                                          uint32_t link_capacity, bool route_container)
{
    jn_conn_info_t info = {.container_id = name,
                           .host = "127.0.0.1:1",
                           .incoming = true,
                           .strip_inbound = strip_inbound,
                           .strip_outbound = true,
                           .link_capacity = link_capacity,
                           .route_container = route_container};
    return open_conn_info(name, &info);
}

/* Open a fake connection of role normal. */
static inline fake_conn_t *open_conn_opts(const char *name, bool strip_inbound,
                                          uint32_t link_capacity)
{
    return open_conn_role(name, strip_inbound, link_capacity, false);
}

/* Open a fake route-container connection (a broker's, container id name). */
static inline fake_conn_t *open_container(const char *name)
{
    return open_conn_role(name, true, 250, true);
}

/* Open a fake route-container connection of container container_id, made
 * by the listener or connector named endpoint (NULL: none). */
static inline fake_conn_t *open_route_container(const char *name, const char *container_id,
                                                const char *endpoint)
{
    jn_conn_info_t info = {.container_id = container_id,
                           .host = "127.0.0.1:1",
                           .incoming = true,
                           .strip_inbound = true,
                           .strip_outbound = true,
                           .link_capacity = 250,
                           .endpoint_name = endpoint,
                           .route_container = true};
    return open_conn_info(name, &info);
}

static inline fake_conn_t *open_conn(const char *name)
{
    return open_conn_opts(name, true, 250);
}

/* Report fc closed and wait until the core released it. */
static inline void close_conn(fake_conn_t *fc)
{
    fc->closed = true;
    jn_core_conn_closed_IO(fc->conn);
    struct timespec deadline;
    deadline_in(&deadline, WAIT_MS);
    pthread_mutex_lock(&h.mu);
    int rc = 0;
    while (!fc->released && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&h.cond, &h.mu, &deadline);
    bool released = fc->released;
    pthread_mutex_unlock(&h.mu);
    assert_true(released);
}

/* Attach a link and take its LINK_OPEN (or LINK_CLOSE when refused is
 * expected). *open_address (if not NULL) receives a copy of the address in
 * the LINK_OPEN (caller frees). */
static inline jn_core_link_t *attach_full(fake_conn_t *fc, jn_link_dir_t dir, const char *address,
                                          bool dynamic, uint32_t capacity, char **open_address)
{
    static int io_links; /* any non-NULL io_link will do */
    jn_link_info_t info = {.dir = dir,
                           .name = "link",
                           .address = address,
                           .dynamic = dynamic,
                           .presettled = false,
                           .capacity = capacity};
    jn_core_link_t *link = jn_core_link_attached_IO(fc->conn, &io_links, &info);
    assert_non_null(link);
    jn_work_t *w = expect_work(fc, JN_WORK_LINK_OPEN);
    assert_ptr_equal(w->link, link);
    if (open_address)
        *open_address = w->address ? strdup(w->address) : NULL;
    jn_work_free(w);
    return link;
}

/* A consumer (outgoing link) of address with credit granted. */
static inline jn_core_link_t *attach_consumer(fake_conn_t *fc, const char *address, uint64_t credit)
{
    jn_core_link_t *l = attach_full(fc, JN_LINK_OUTGOING, address, false, 0, NULL);
    if (credit)
        jn_core_link_flow_IO(l, credit, false);
    return l;
}

/* A producer (incoming link) to address (NULL: anonymous). */
static inline jn_core_link_t *attach_producer(fake_conn_t *fc, const char *address,
                                              uint32_t capacity)
{
    return attach_full(fc, JN_LINK_INCOMING, address, false, capacity, NULL);
}

/* Detach a link and take its LINK_RELEASED (after other work of fc, which
 * the caller must have taken: anything before it fails the test). */
static inline void detach(fake_conn_t *fc, jn_core_link_t *link)
{
    jn_core_link_detached_IO(link);
    jn_work_t *w = expect_work(fc, JN_WORK_LINK_RELEASED);
    assert_ptr_equal(w->link, link);
    jn_work_free(w);
}

/* Barrier: see the file comment. */
static inline void core_sync(void)
{
    if (!h.sync_conn)
        h.sync_conn = open_conn("sync");
    jn_core_link_t *l = attach_full(h.sync_conn, JN_LINK_OUTGOING, "sync.barrier", false, 0, NULL);
    detach(h.sync_conn, l);
}

/* Assert fc has no work after a barrier. */
static inline void expect_no_work_at(fake_conn_t *fc, const char *file, int line)
{
    core_sync();
    take_all(fc);
    if (fc->head != fc->tail)
        fail_msg("%s:%d: %s: unexpected %s", file, line, fc->name,
                 work_name(fc->items[fc->head % MAX_ITEMS]->type));
}
#define expect_no_work(fc) expect_no_work_at((fc), __FILE__, __LINE__)

/* Assert fc has no work after a barrier but credit for its senders (when
 * credit comes back is not what the test is about). */
static inline void expect_no_update_at(fake_conn_t *fc, const char *file, int line)
{
    core_sync();
    take_all(fc);
    while (fc->head != fc->tail) {
        jn_work_t *w = fc->items[fc->head % MAX_ITEMS];
        if (w->type != JN_WORK_LINK_CREDIT)
            fail_msg("%s:%d: %s: unexpected %s", file, line, fc->name, work_name(w->type));
        fc->head++;
        jn_work_free(w);
    }
}
#define expect_no_update(fc) expect_no_update_at((fc), __FILE__, __LINE__)

/* Encode a message: optional message annotations with x-opt-qd.to, optional
 * properties with `to`, an amqp-value body. */
static inline jn_message_t *make_message(const char *to, const char *to_override, const char *body,
                                         bool complete, bool honour)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    if (to_override) {
        jn_enc_descriptor_ulong(&e, 0x72);
        jn_enc_map_begin(&e);
        jn_enc_csymbol(&e, "x-opt-qd.to");
        jn_enc_cstring(&e, to_override);
        jn_enc_map_end(&e);
    }
    if (to) {
        jn_enc_descriptor_ulong(&e, 0x73);
        jn_enc_list_begin(&e);
        jn_enc_null(&e); /* message-id */
        jn_enc_null(&e); /* user-id */
        jn_enc_cstring(&e, to);
        jn_enc_list_end(&e);
    }
    jn_enc_descriptor_ulong(&e, 0x77);
    jn_enc_cstring(&e, body ? body : "body");
    assert_int_equal(jn_encoder_error(&e), 0);
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    assert_int_equal(jn_encoder_to_buffers(&e, &list), 0);
    jn_encoder_free(&e);
    jn_message_t *m = jn_message_new();
    assert_non_null(m);
    jn_message_set_annotation_policy(m, honour);
    assert_int_equal(jn_message_append_buffers(m, &list), 0);
    if (complete)
        jn_message_set_complete(m);
    assert_int_equal(jn_message_parse(m, JN_DEPTH_PROPERTIES), 0);
    return m;
}

/* Send a delivery on incoming link of fc; returns it (the harness keeps
 * the reference until teardown). */
static inline jn_delivery_t *send_full(fake_conn_t *fc, jn_core_link_t *link, const char *to,
                                       const char *to_override, bool settled, bool complete)
{
    static uint32_t tag;
    tag++;
    jn_message_t *m = make_message(to, to_override, "hello", complete, !fc->strip_inbound);
    jn_delivery_t *d = jn_delivery_new_IO(link, m, settled, &tag, sizeof tag);
    assert_non_null(d);
    jn_core_delivery_arrived_IO(d);
    return hold(d);
}

static inline jn_delivery_t *send_msg(fake_conn_t *fc, jn_core_link_t *link, bool settled)
{
    return send_full(fc, link, NULL, NULL, settled, true);
}

/* The consumer's disposition on an outgoing copy. */
static inline void consumer_settles(jn_delivery_t *copy, uint64_t type)
{
    jn_disposition_t d = {.type = type};
    jn_core_delivery_update_IO(copy, &d, true);
}

/* Take a DELIVERY_UPDATE on fc for dlv and check its outcome and settled.
 * LINK_CREDIT items before it (credit coming back as deliveries are
 * released or handed out, which other tests check) are skipped. */
static inline void expect_update_at(fake_conn_t *fc, jn_delivery_t *dlv, uint64_t type,
                                    bool settled, const char *file, int line)
{
    jn_work_t *w;
    while ((w = next_work(fc)) != NULL && w->type == JN_WORK_LINK_CREDIT)
        jn_work_free(w);
    if (!w)
        fail_msg("%s:%d: %s: no work, expected DELIVERY_UPDATE", file, line, fc->name);
    if (w->type != JN_WORK_DELIVERY_UPDATE)
        fail_msg("%s:%d: %s: got %s, expected DELIVERY_UPDATE", file, line, fc->name,
                 work_name(w->type));
    if (w->dlv != dlv)
        fail_msg("%s:%d: update for another delivery", file, line);
    if (w->disp.type != type || w->settled != settled)
        fail_msg("%s:%d: update 0x%llx settled=%d, expected 0x%llx settled=%d", file, line,
                 (unsigned long long)w->disp.type, w->settled, (unsigned long long)type, settled);
    jn_work_free(w);
}
#define expect_update(fc, dlv, type, settled)                                                      \
    expect_update_at((fc), (dlv), (type), (settled), __FILE__, __LINE__)

/* Take a DELIVERY_SEND on fc; returns its delivery (the harness keeps a
 * reference until teardown). */
static inline jn_delivery_t *expect_send_at(fake_conn_t *fc, const char *file, int line)
{
    jn_work_t *w = expect_work_at(fc, JN_WORK_DELIVERY_SEND, file, line);
    jn_delivery_t *d = hold(jn_delivery_ref(w->dlv));
    jn_work_free(w);
    return d;
}
#define expect_send(fc) expect_send_at((fc), __FILE__, __LINE__)

/* Block the core thread inside its next wake of fc (set before causing the
 * wake), wait until it is there, and later let it go. */
static inline void gate_close(fake_conn_t *fc)
{
    pthread_mutex_lock(&h.mu);
    fc->gate = true;
    pthread_mutex_unlock(&h.mu);
}

static inline void gate_wait_blocked(fake_conn_t *fc)
{
    struct timespec deadline;
    deadline_in(&deadline, WAIT_MS);
    pthread_mutex_lock(&h.mu);
    int rc = 0;
    while (!fc->in_gate && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&h.cond, &h.mu, &deadline);
    bool blocked = fc->in_gate;
    pthread_mutex_unlock(&h.mu);
    assert_true(blocked);
}

static inline void gate_open(fake_conn_t *fc)
{
    pthread_mutex_lock(&h.mu);
    fc->gate = false;
    pthread_cond_broadcast(&h.cond);
    pthread_mutex_unlock(&h.mu);
}

/* Free every work item fc has taken or can take now (no barrier). */
static inline void discard_work(fake_conn_t *fc)
{
    take_all(fc);
    while (fc->head != fc->tail)
        jn_work_free(fc->items[fc->head++ % MAX_ITEMS]);
}

/* Count (and free) the work items of type t that fc has now, after a
 * barrier; other items are freed too. Returns the count and, in *sum, the
 * sum of their credit. */
static inline unsigned count_work(fake_conn_t *fc, jn_work_type_t t, uint64_t *sum)
{
    core_sync();
    take_all(fc);
    unsigned n = 0;
    if (sum)
        *sum = 0;
    while (fc->head != fc->tail) {
        jn_work_t *w = fc->items[fc->head++ % MAX_ITEMS];
        if (w->type == t) {
            n++;
            if (sum)
                *sum += w->credit;
        }
        jn_work_free(w);
    }
    return n;
}

/* ---- set-up and teardown ------------------------------------------------ */

static inline jn_core_t *core_up(jn_distribution_t dflt, void (*configure)(jn_core_t *))
{
    jn_core_config_t cfg = {.router_id = "Junction", .default_distribution = dflt};
    jn_pool_thread_exit();
    h.leak_baseline = jn_pool_leak_report(NULL); /* what a failed test left */
    h.core = jn_core_create(&cfg, &fake_ops);
    assert_non_null(h.core);
    jn_io_role_ = &h; /* this thread plays the I/O loops: it calls the _IO entry points */
    h.n_conns = 0;
    h.sync_conn = NULL;
    h.n_coloc = 0;
    if (configure)
        configure(h.core);
    assert_int_equal(jn_core_start(h.core), 0);
    return h.core;
}

static inline int setup_balanced(void **state)
{
    (void)state;
    core_up(JN_DIST_BALANCED, NULL);
    return 0;
}

/* Close every connection (waiting for ops->conn_released), stop and free
 * the core, free the work nobody looked at, and check that no pooled
 * object is left. */
static inline int teardown_core(void **state)
{
    (void)state;
    for (size_t i = 0; i < h.n_conns; i++)
        gate_open(&h.conns[i]); /* a failed test may have left one closed */
    for (size_t i = 0; i < h.n_conns; i++)
        if (!h.conns[i].closed)
            jn_core_conn_closed_IO(h.conns[i].conn);
    struct timespec deadline;
    deadline_in(&deadline, WAIT_MS);
    pthread_mutex_lock(&h.mu);
    for (size_t i = 0; i < h.n_conns; i++) {
        int rc = 0;
        while (!h.conns[i].released && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&h.cond, &h.mu, &deadline);
    }
    pthread_mutex_unlock(&h.mu);
    jn_core_stop(h.core);
    jn_core_free(h.core);
    h.core = NULL;
    bool all_released = true;
    for (size_t i = 0; i < h.n_conns; i++) {
        fake_conn_t *fc = &h.conns[i];
        all_released &= fc->released;
        while (fc->head != fc->tail)
            jn_work_free(fc->items[fc->head++ % MAX_ITEMS]);
    }
    for (size_t i = 0; i < h.n_held; i++)
        jn_delivery_unref(h.held[i]);
    h.n_held = 0;
    jn_pool_thread_exit();
    uint64_t leaked = jn_pool_leak_report(NULL);
    if (leaked != h.leak_baseline) {
        jn_pool_leak_report(stderr);
        fail_msg("%llu pooled objects leaked", (unsigned long long)(leaked - h.leak_baseline));
    }
    assert_true(all_released);
    return 0;
}

static inline int run_core_tests(const char *name, const struct CMUnitTest *tests, size_t n)
{
    (void)n;
    /* JN_TEST_LOG=trace shows the core's log lines */
    const char *level = getenv("JN_TEST_LOG");
    jn_log_set_enable(JN_LOG_MOD_ROUTER_CORE, level ? level : "warning+", NULL, 0);
    int failures = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
    jn_log_shutdown();
    jn_pool_thread_exit();
    jn_pool_shutdown();
    return failures;
}
#define RUN_CORE_TESTS(tests) run_core_tests(#tests, tests, sizeof tests / sizeof tests[0])

#endif /* JN_TEST_CORE_UTIL_H */
