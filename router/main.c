/*
 * junctiond — the Junction router daemon: arguments, signals, daemonising,
 * start and orderly stop. What the configuration means is the entity
 * path's business (router/mgmt/entity*.c, docs/design.md "The entity
 * path"): this file only hands the file to it.
 *
 * Start-up: read the configuration (the file given with -c, or the
 * built-in default: a standalone router listening on 127.0.0.1:5672 with
 * SASL ANONYMOUS); check every section (jn_mgmt_plan_config: refusals are
 * printed "FILE:LINE: ..." and the exit status is 1); apply the `log`
 * sections; build the core and the I/O layer with the router-wide
 * settings; start the core and load the file's listeners, connectors and
 * addresses on it through the path a management CREATE takes; optionally
 * jn_process_daemonize and write a pid file; then start the I/O layer: a listener
 * that cannot be opened fails the start (exit status 1), as a required
 * listener does in qdrouterd. Once every listener listens: -U's user
 * (privileges dropped after binding), then READY=1 to systemd.
 *
 * The command line is qdrouterd 1.19's (-c -I -d -P -U -T -v -h; -I and
 * -T are taken and ignored with a notice) plus --check, which checks the
 * file as start-up would (every refusal, FILE:LINE) and exits.
 *
 * Signals: SIGHUP reloads the config file (jn_mgmt_reload_CT, run on the
 * core); SIGUSR1 reopens the log files (logrotate); SIGTERM or SIGINT
 * stop: STOPPING=1 to systemd, every connection is closed with a close
 * frame (bounded: 3 s, then the rest are cut), the core stops, everything
 * is freed and pool objects still in use are reported; a leak makes the
 * exit status 3.
 *
 * systemd (Type=jn_process_notify, etc/junctiond.service): READY=1, STOPPING=1, and
 * with WatchdogSec WATCHDOG=1 every half period as long as the core still
 * runs the calls it is given. Built without libsystemd, none is sent.
 */
#include <junction/config.h>
#include <junction/core.h>
#include <junction/core_view.h>
#include <junction/http.h>
#include <junction/io.h>
#include <junction/tls.h>
#include <junction/log.h>
#include <junction/mgmt.h>
#include <junction/pool.h>

#include "process.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef JN_VERSION
#define JN_VERSION "unknown"
#endif

/* How long connections get to close on SIGTERM before they are cut; the
 * rest of the 5 s budget is for cutting them and stopping the core. */
#define STOP_CLOSE_MS 3000

/* The configuration used when no -c is given (qdrouterd.conf syntax). */
static const char default_config[] = "router {\n"
                                     "    mode: standalone\n"
                                     "    id: Junction\n"
                                     "}\n"
                                     "listener {\n"
                                     "    host: 127.0.0.1\n"
                                     "    port: 5672\n"
                                     "    role: normal\n"
                                     "    saslMechanisms: ANONYMOUS\n"
                                     "    authenticatePeer: no\n"
                                     "}\n";

typedef struct options {
    const char *config_path; /* NULL: built-in default */
    const char *pid_file;    /* NULL: none */
    const char *user;        /* -U: run as this user once listening (NULL: stay) */
    bool daemonize;
    bool check;         /* --check: validate the configuration and exit */
    bool include_given; /* -I: accepted for 1.19's unit files, ignored */
    bool test_hooks;    /* -T: the streaming link scrubber's test timing */
} options_t;

/* What main builds (main thread only). */
typedef struct daemon_state {
    jn_router_settings_t settings;
    const char *config_path; /* NULL: built-in default */
    bool test_hooks;         /* -T (jn_core_config_t.test_hooks) */
    jn_core_t *core;
    jn_io_t *io;
    jn_policy_t *policy;    /* the vhost table: made by build, freed after io and the agent */
    jn_http_t *http;        /* listeners with http: yes */
    jn_mgmt_t *agent;       /* the $management agent: made by build, freed after the core */
    uint64_t watchdog_usec; /* systemd's WatchdogSec (0: no watchdog) */
    /* watchdog pings answered by the core: written in the core role,
     * read by the main thread */
    atomic_uint_fast64_t core_pongs;
} daemon_state_t;

static void usage(FILE *out)
{
    fprintf(out, "Usage: junctiond [OPTIONS]\n"
                 "Junction AMQP 1.0 message router (qdrouterd 1.19's options).\n\n"
                 "  -c, --config FILE    read the configuration from FILE (qdrouterd.conf\n"
                 "                       syntax, or JSON when FILE ends in .json); without\n"
                 "                       it: a standalone router on 127.0.0.1:5672, SASL\n"
                 "                       ANONYMOUS\n"
                 "      --check          check the configuration (every error, each as\n"
                 "                       FILE:LINE: ...) and exit: 0 valid, 1 not\n"
                 "  -d, --daemon         run in the background\n"
                 "  -P, --pidfile FILE   write the process id to FILE\n"
                 "  -U, --user USER      run as USER (and its groups) once every listener\n"
                 "                       listens (start as root to bind ports below 1024)\n"
                 "  -I, --include PATH   accepted for qdrouterd's command lines and ignored:\n"
                 "                       Junction embeds no Python\n"
                 "  -T, --test-hooks     qdrouterd's test mode: the streaming link scrubber\n"
                 "                       runs every 5 s and keeps 2 idle links\n"
                 "  -v, --version        print the version and exit\n"
                 "  -h, --help           print this help and exit\n\n"
                 "Signals: SIGHUP reloads the configuration file, SIGUSR1 reopens log\n"
                 "files, SIGTERM or SIGINT stop the router.\n");
}

/* usage_error: one line saying what is wrong, then where the help is
 * (exit status 2), as GNU tools do. */
static int usage_error(const char *fmt, const char *what)
{
    fputs("junctiond: ", stderr);
    fprintf(stderr, fmt, what);
    fputs("\nTry 'junctiond --help' for more information.\n", stderr);
    return 2;
}

/* parse_args: fill *opts from argv. Returns -1 to continue, or an exit
 * status (0 after --help/--version, 2 for a usage error). */
static int parse_args(int argc, char **argv, options_t *opts)
{
    enum { OPT_CHECK = 256 };
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'}, {"include", required_argument, NULL, 'I'},
        {"daemon", no_argument, NULL, 'd'},       {"pidfile", required_argument, NULL, 'P'},
        {"user", required_argument, NULL, 'U'},   {"test-hooks", no_argument, NULL, 'T'},
        {"check", no_argument, NULL, OPT_CHECK},  {"version", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    int c;
    memset(opts, 0, sizeof *opts);
    opterr = 0; /* our own one-line messages */
    while ((c = getopt_long(argc, argv, ":c:I:dP:U:Tvh", longopts, NULL)) != -1) {
        char shortopt[3] = {'-', (char)optopt, 0};
        switch (c) {
        case 'c':
            opts->config_path = optarg;
            break;
        case 'I':
            opts->include_given = true;
            break;
        case 'd':
            opts->daemonize = true;
            break;
        case 'P':
            opts->pid_file = optarg;
            break;
        case 'U':
            opts->user = optarg;
            break;
        case 'T':
            opts->test_hooks = true;
            break;
        case OPT_CHECK:
            opts->check = true;
            break;
        case 'v':
            printf("junctiond %s\n", JN_VERSION);
            return 0;
        case 'h':
            usage(stdout);
            return 0;
        case ':':
            return usage_error("option '%s' needs an argument",
                               optopt ? shortopt : argv[optind - 1]);
        default:
            return usage_error("unknown option '%s'", optopt ? shortopt : argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    return -1;
}

/* ---- building ------------------------------------------------------------- */

/* A jn_core_call that main waits for (start-up). */
typedef struct sync_call {
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    bool done;
    void (*fn)(struct sync_call *call, jn_core_t *core);
    daemon_state_t *st;
    jn_config_t *cfg; /* load: taken over by the agent */
    int refusals;
    char errors[4096];
} sync_call_t;

static void sync_trampoline(void *arg, jn_core_t *core)
{
    sync_call_t *call = arg;
    call->fn(call, core);
    pthread_mutex_lock(&call->lock);
    call->done = true;
    pthread_cond_signal(&call->done_cond);
    pthread_mutex_unlock(&call->lock);
}

/* call_on_core: run fn in the core role and wait for it. 0 or JN_ENOMEM. */
static int call_on_core(jn_core_t *core, sync_call_t *call)
{
    pthread_mutex_init(&call->lock, NULL);
    pthread_cond_init(&call->done_cond, NULL);
    call->done = false;
    int rc = jn_core_call(core, sync_trampoline, call);
    pthread_mutex_lock(&call->lock);
    while (rc == 0 && !call->done)
        pthread_cond_wait(&call->done_cond, &call->lock);
    pthread_mutex_unlock(&call->lock);
    pthread_cond_destroy(&call->done_cond);
    pthread_mutex_destroy(&call->lock);
    return rc;
}

static void load_on_core(sync_call_t *call, jn_core_t *core)
{
    (void)core;
    call->refusals =
        jn_mgmt_load_config_CT(call->st->agent, call->cfg, call->errors, sizeof call->errors);
    call->cfg = NULL; /* the agent's now */
}

static void ports_on_core(sync_call_t *call, jn_core_t *core)
{
    (void)core;
    jn_mgmt_refresh_ports_CT(call->st->agent);
}

static int mgmt_add_listener(void *io, const jn_endpoint_config_t *cfg)
{
    return jn_io_add_listener(io, cfg);
}

static int mgmt_add_connector(void *io, const jn_endpoint_config_t *cfg)
{
    return jn_io_add_connector(io, cfg);
}

static int mgmt_remove_endpoint(void *io, const char *name)
{
    return jn_io_remove_endpoint(io, name);
}

static int mgmt_connector_status(void *io, const char *name, bool *opened, char *msg, size_t cap)
{
    return jn_io_connector_status(io, name, opened, msg, cap);
}

static int mgmt_connector_failover_urls(void *io, const char *name, char *buf, size_t cap)
{
    return jn_io_connector_failover_urls(io, name, buf, cap);
}

static int mgmt_listener_port(void *io, const char *name, char *buf, size_t cap)
{
    return jn_io_listener_port(io, name, buf, cap);
}

static int mgmt_add_tls_profile(void *io, const char *name,
                                const char *(*get)(void *ctx, const char *attr), void *get_ctx,
                                bool register_it, char *err, size_t errlen, const char **bad_attr)
{
    jn_tls_profile_config_t pc;
    jn_tls_profile_config_fill(&pc, name, get, get_ctx);
    jn_tls_profile_t *p = NULL;
    *bad_attr = NULL;
    int rc = jn_tls_profile_create(&pc, &p, err, errlen, bad_attr);
    if (rc == 0 && register_it)
        rc = jn_io_set_tls_profile(io, name, p);
    jn_tls_profile_unref(p);
    return rc;
}

static int mgmt_remove_tls_profile(void *io, const char *name)
{
    return jn_io_set_tls_profile(io, name, NULL);
}

static int mgmt_resolve_password(const char *spec, char *out, size_t outlen, char *err,
                                 size_t errlen)
{
    return jn_tls_password_resolve(spec, out, outlen, err, errlen);
}

static int mgmt_check_sasl(void *io, const jn_endpoint_config_t *ec, bool can_external,
                           char *err, size_t errlen)
{
    (void)io;
    return jn_sasl_check_listener(ec, can_external, err, errlen);
}

static int mgmt_add_http_listener(void *http, const jn_endpoint_http_config_t *cfg, char *err,
                                  size_t errlen)
{
    return jn_http_add_listener(http, cfg, err, errlen);
}

static int mgmt_remove_http_listener(void *http, const char *name)
{
    return jn_http_remove_listener(http, name);
}

static int mgmt_http_listener_port(void *http, const char *name, char *buf, size_t cap)
{
    return jn_http_listener_port(http, name, buf, cap);
}

/* The console's files (docs/design.md, "The console"): where they are
 * installed, else the build tree's copy (a junctiond run from its build
 * directory); NULL when neither has index.html. Main thread. */
static const char *console_dir(void)
{
#if defined(JN_CONSOLE_DIR) && defined(JN_CONSOLE_BUILD_DIR)
    static const char *const dirs[] = {JN_CONSOLE_DIR, JN_CONSOLE_BUILD_DIR};
    for (size_t i = 0; i < 2; i++) {
        char index[4096];
        snprintf(index, sizeof index, "%s/index.html", dirs[i]);
        if (access(index, R_OK) == 0)
            return dirs[i];
    }
#endif
    return NULL;
}

/* The pages the HTTP layer asks for, from the agent's figures. Core
 * thread. */
static int render_page(void *agent, jn_http_page_t page, const char *query, bool prometheus_names,
                       char **body, size_t *len)
{
    if (page == JN_HTTP_PAGE_METRICS)
        return jn_mgmt_metrics_snapshot_CT(agent, query, prometheus_names, body, len);
    return jn_mgmt_mesh_health_CT(agent, query, body, len);
}

/* The text of a page render_page made, on the HTTP listener's service
 * thread: /metrics is printed here from the core's snapshot. */
static int format_page(void *agent, jn_http_page_t page, char **body, size_t *len)
{
    (void)agent;
    if (page != JN_HTTP_PAGE_METRICS)
        return 200; /* the core's text already */
    char *snap = *body;
    return jn_mgmt_metrics_format(snap, *len, body, len);
}

static void mgmt_residence(void *io, jn_residence_t *out)
{
    jn_io_residence_read(io, out);
}

static const char *mgmt_listen_error(void *io)
{
    (void)io;
    return jn_io_last_listen_error();
}

static void mgmt_policy_stats(void *io, jn_policy_conn_stats_t *out)
{
    jn_io_policy_stats(io, out);
}

/* build: the core, the I/O layer and the agent from the settings (nothing
 * started). Returns 0 or -1. */
static int build(daemon_state_t *st)
{
    const jn_router_settings_t *rs = &st->settings;
    jn_core_config_t cc = {.router_id = rs->id,
                           .default_distribution = rs->default_distribution,
                           .interior = rs->interior,
                           .edge = strcmp(rs->mode, "edge") == 0,
                           .hello_interval = rs->hello_interval,
                           .hello_max_age = rs->hello_max_age,
                           .ra_interval = rs->ra_interval,
                           .ra_interval_flux = rs->ra_interval_flux,
                           .remote_ls_max_age = rs->remote_ls_max_age,
                           .deny_resumable_link_routes = !rs->allow_resumable_link_route,
                           .test_hooks = st->test_hooks};
    st->policy = jn_policy_create();
    st->core = st->policy ? jn_core_create(&cc, jn_io_core_ops()) : NULL;
    jn_io_config_t ic = {.container_id = rs->id,
                         .worker_threads = rs->workers,
                         .min_peer_idle_timeout_ms = rs->min_peer_idle_timeout_ms,
                         .write_stall_timeout_s = rs->write_stall_timeout_s,
                         .max_connections = rs->max_connections};
    st->io = st->core ? jn_io_create(st->core, &ic) : NULL;
    jn_http_config_t hc = {.core = st->core,
                           .io = st->io,
                           .console_dir = console_dir(),
                           .render = render_page,
                           .format = format_page};
    st->http = st->io ? jn_http_create(&hc) : NULL;
    jn_mgmt_config_t mc = {.router_id = rs->id,
                           .mode = rs->mode,
                           .version = JN_VERSION,
                           .metadata = rs->metadata,
                           .worker_threads = rs->workers,
                           .max_message_size = rs->max_message_size,
                           .max_connections = rs->max_connections,
                           .enable_vhost_policy = rs->enable_vhost_policy,
                           .enable_vhost_name_patterns = rs->enable_vhost_name_patterns,
                           .default_vhost = rs->default_vhost,
                           .policy_dir = rs->policy_dir,
                           .policy_stats = mgmt_policy_stats,
                           .policy = st->policy,
                           .residence = mgmt_residence,
                           .metrics_address_limit = rs->metrics_address_limit,
                           .core = st->core,
                           .io_ctx = st->io,
                           .add_listener = mgmt_add_listener,
                           .add_connector = mgmt_add_connector,
                           .remove_endpoint = mgmt_remove_endpoint,
                           .listener_port = mgmt_listener_port,
                           .connector_status = mgmt_connector_status,
                           .connector_failover_urls = mgmt_connector_failover_urls,
                           .add_tls_profile = mgmt_add_tls_profile,
                           .remove_tls_profile = mgmt_remove_tls_profile,
                           .resolve_password = mgmt_resolve_password,
                           .check_sasl = mgmt_check_sasl,
                           .http_ctx = st->http,
                           .add_http_listener = mgmt_add_http_listener,
                           .remove_http_listener = mgmt_remove_http_listener,
                           .http_listener_port = mgmt_http_listener_port,
                           .listen_error = mgmt_listen_error,
                           .config_path = st->config_path,
                           .foreach_router = rs->interior ? jn_core_view_routers_CT : NULL,
                           .nodes_ctx = st->core};
    st->agent = st->http ? jn_mgmt_create(&mc) : NULL;
    if (!st->agent) {
        fprintf(stderr, "junctiond: out of memory\n");
        return -1;
    }
    /* the HTTP layer's pages are rendered by the agent (set once it exists;
     * no request can arrive before a listener is added) */
    jn_http_set_render_ctx(st->http, st->agent);
    jn_core_set_management(st->core, jn_mgmt_request_CT, st->agent);
    return 0;
}

/* add_vhosts: a jn_mgmt_policy_dir callback: a policyDir file's vhost
 * sections through the entity path (jn_mgmt_load_vhosts_CT), a refusal
 * said on stderr. */
static int add_vhosts(void *arg, const jn_config_t *cfg)
{
    daemon_state_t *st = arg;
    char errors[4096] = "";
    int n = jn_mgmt_load_vhosts_CT(st->agent, cfg, errors, sizeof errors);
    if (n > 0)
        fprintf(stderr, "%s\n", errors);
    return n > 0 ? JN_EEXIST : n;
}

/* vhosts: the vhost policy (policy.enableVhostPolicy, defaultVhost,
 * enableVhostNamePatterns), then the file's vhost sections and the
 * policyDir files' into the vhost table through the entity path, as a
 * management CREATE's vhost goes; the I/O layer consults the table when
 * the policy is on (docs/design.md "Policy").
 * Returns 0 or -1 (out of memory, or a vhost refused, such as two
 * hostname patterns in conflict: said). */
static int vhosts(daemon_state_t *st, const jn_config_t *cfg)
{
    if (jn_policy_configure(st->policy, st->settings.default_vhost,
                            st->settings.enable_vhost_name_patterns) != 0) {
        fprintf(stderr, "junctiond: out of memory\n");
        return -1;
    }
    int rc = add_vhosts(st, cfg);
    char errors[4096] = "";
    int n = rc ? rc : jn_mgmt_policy_dir(st->settings.policy_dir, add_vhosts, st, errors,
                                         sizeof errors);
    if (n != 0) { /* read and checked before: a conflict, out of memory or a file changed since */
        if (n != JN_EEXIST)
            fprintf(stderr, "%s\n", n > 0 ? errors : "junctiond: out of memory");
        return -1;
    }
    if (st->settings.enable_vhost_policy)
        jn_io_vhost_policy(st->io, st->policy);
    return 0;
}

/* ---- the service manager's watchdog ---------------------------------------- */

/* watchdog_pong: a jn_core_call run in the core role: the core is not
 * stuck, so the next WATCHDOG=1 may go. */
static void watchdog_pong(void *arg, jn_core_t *core)
{
    (void)core;
    daemon_state_t *st = arg;
    atomic_fetch_add_explicit(&st->core_pongs, 1, memory_order_release);
}

/* watchdog_tick: every half WatchdogSec. WATCHDOG=1 only when the core
 * ran the previous tick's call, so a router whose core is stuck (the core
 * role held for ever, a deadlock) is restarted by systemd rather than
 * kept alive by a main thread that merely waits for signals. */
static void watchdog_tick(daemon_state_t *st, uint64_t *pings)
{
    uint64_t pongs = atomic_load_explicit(&st->core_pongs, memory_order_acquire);
    if (pongs < *pings) {
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
               "Watchdog: the core has not run for %llu ms; not telling systemd it is alive",
               (unsigned long long)(st->watchdog_usec / 2000));
        return;
    }
    jn_process_notify("WATCHDOG=1");
    if (jn_core_call(st->core, watchdog_pong, st) == 0)
        (*pings)++;
}

/* teardown: stop and free what build made (any may be NULL). */
static void teardown(daemon_state_t *st)
{
    jn_http_set_state(st->http, JN_HTTP_STOPPING);
    if (st->io) /* /healthz answers 503 while connections close */
        jn_io_stop(st->io, STOP_CLOSE_MS);
    jn_http_stop(st->http); /* before the core: its pages are rendered there */
    if (st->core) {
        jn_core_stop(st->core);
        jn_core_free(st->core); /* releases any io connection still held */
    }
    jn_io_free(st->io);
    jn_sasl_shutdown(); /* after the transports that used it */
    jn_http_free(st->http); /* after the core ran the render calls still queued */
    jn_mgmt_free(st->agent); /* after the core: it called the agent */
    jn_policy_free(st->policy); /* after io (its connections' admissions) and the agent */
    st->policy = NULL;
    st->http = NULL;
    st->agent = NULL;
    st->core = NULL;
    st->io = NULL;
}

/* finish: free the configuration (NULL once the agent took it) and the
 * pools; the exit status (3 when pool objects leaked). */
static int finish(jn_config_t *cfg, int status)
{
    jn_config_free(cfg);
    jn_log_shutdown();
    jn_pool_thread_exit();
    uint64_t leaked = jn_pool_leak_report(stderr);
    jn_pool_shutdown();
    return leaked && status == 0 ? 3 : status;
}

/* start: start the core, load the file's entities on it, start the I/O
 * layer. cfg is taken over. Returns 0 or 1 (logged or printed). */
static int start(daemon_state_t *st, jn_config_t *cfg)
{
    if (jn_core_start(st->core) != 0) {
        jn_config_free(cfg);
        fprintf(stderr, "junctiond: cannot start the core\n");
        return 1;
    }
    sync_call_t *call = calloc(1, sizeof *call);
    if (!call) {
        jn_config_free(cfg);
        fprintf(stderr, "junctiond: out of memory\n");
        return 1;
    }
    call->st = st;
    call->cfg = cfg;
    call->fn = load_on_core;
    if (call_on_core(st->core, call) != 0 || call->refusals) {
        fprintf(stderr, "%s\n", call->refusals ? call->errors : "junctiond: out of memory");
        jn_config_free(call->cfg); /* NULL unless the call never ran */
        free(call);
        return 1;
    }
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO, "Router started in %s mode, id=%s, version %s",
           st->settings.mode, st->settings.id, JN_VERSION);
    if (jn_io_start(st->io) != 0) {
        JN_LOG(JN_LOG_MOD_MAIN, JN_LOG_CRITICAL,
               "Router start-up failed: a listener could not be opened");
        free(call);
        return 1;
    }
    call->fn = ports_on_core; /* before the first request can read them */
    call_on_core(st->core, call);
    free(call);
    jn_http_set_state(st->http, JN_HTTP_OPERATIONAL);
    return 0;
}

/* reopen_logs: SIGUSR1 (logrotate's postrotate): every log outputFile is
 * reopened by its path. */
static void reopen_logs(void)
{
    char err[256] = "";
    if (jn_log_reopen(err, sizeof err) != 0)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, "Reopening log files on SIGUSR1: %s", err);
    else
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_NOTICE, "Log files reopened on SIGUSR1");
}

/* now_ns: CLOCK_MONOTONIC in nanoseconds. */
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* run: wait for signals (blocked in sigs): SIGHUP reloads, SIGUSR1 reopens
 * the log files, SIGTERM/SIGINT return. With a systemd watchdog, pings it
 * every half WatchdogSec, by the clock, so that a stream of signals cannot
 * hold the pings back. */
static void run(daemon_state_t *st, const sigset_t *sigs)
{
    uint64_t pings = 0;
    uint64_t half_ns = st->watchdog_usec * 500u; /* half the period */
    uint64_t next = half_ns ? now_ns() : 0;
    for (;;) {
        int sig = 0;
        if (half_ns) {
            uint64_t now = now_ns();
            if (now >= next) {
                watchdog_tick(st, &pings);
                next = now + half_ns;
            }
            uint64_t wait = next - now; /* > 0 and at most half_ns */
            struct timespec tick = {.tv_sec = (time_t)(wait / 1000000000u),
                                    .tv_nsec = (long)(wait % 1000000000u)};
            sig = sigtimedwait(sigs, NULL, &tick);
        } else if (sigwait(sigs, &sig) != 0) {
            continue;
        }
        if (sig < 0)
            continue; /* the tick's time (EAGAIN), or EINTR */
        if (sig == SIGUSR1) {
            reopen_logs();
            continue;
        }
        if (sig != SIGHUP) {
            jn_http_set_state(st->http, JN_HTTP_STOPPING);
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_NOTICE, "Shutting down on %s",
                   sig == SIGTERM ? "SIGTERM" : "SIGINT");
            jn_process_notify("STOPPING=1");
            return;
        }
        if (!st->config_path) {
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING,
                   "SIGHUP ignored: junctiond runs on its built-in configuration (no -c FILE)");
            continue;
        }
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_NOTICE, "Reloading %s on SIGHUP", st->config_path);
        if (jn_core_call(st->core, jn_mgmt_reload_call, st->agent) != 0)
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR, "Reload on SIGHUP: out of memory");
    }
}

/* The line number of an error line "FILE:LINE: ..." (0 when it has none). */
static long error_line_number(const char *line, const char *file)
{
    size_t n = strlen(file);
    if (strncmp(line, file, n) != 0 || line[n] != ':')
        return 0;
    char *end;
    long v = strtol(line + n + 1, &end, 10);
    return end != line + n + 1 && *end == ':' ? v : 0;
}

/* The line after p's in a text of lines ("" at the end). */
static const char *next_line(const char *p)
{
    const char *nl = strchr(p, '\n');
    return nl ? nl + 1 : "";
}

/* print_errors_by_line: the error lines of both texts (one a line) to
 * stderr, in the order of their lines in file (a line without a number
 * first), so `--check` reads as the file does. */
static void print_errors_by_line(const char *file, const char *a, const char *b)
{
    const char *texts[2] = {a, b};
    for (long prev = -1;;) { /* each pass prints the next smallest line number */
        long next = -1;
        for (int t = 0; t < 2; t++)
            for (const char *p = texts[t]; p && *p; p = next_line(p)) {
                long k = error_line_number(p, file);
                if (k > prev && (next < 0 || k < next))
                    next = k;
            }
        if (next < 0)
            return;
        for (int t = 0; t < 2; t++)
            for (const char *p = texts[t]; p && *p; p = next_line(p))
                if (error_line_number(p, file) == next && *p != '\n')
                    fprintf(stderr, "%.*s\n", (int)strcspn(p, "\n"), p);
        prev = next;
    }
}

/* check_config: `--check`: load the file as the router would, without
 * starting anything, and name every error it has, each as FILE:LINE:
 * text, on stderr (the errors of its sections, the checks across them and
 * the router's own checks of each entity, on the sections that passed the
 * first). Returns the exit status: 0 when the file is right. */
static int check_config(const options_t *opts)
{
    enum { CAP = 64 * 1024 };
    char *errors = malloc(CAP), *load_errors = malloc(CAP);
    if (!errors || !load_errors) {
        fprintf(stderr, "junctiond: out of memory\n");
        free(errors);
        free(load_errors);
        return 1;
    }
    const char *name = opts->config_path ? opts->config_path : "<built-in default>";
    jn_config_t *cfg = NULL;
    int rc = opts->config_path
                 ? jn_config_load_file_all(opts->config_path, &cfg, load_errors, CAP)
                 : jn_config_load_string(name, default_config, sizeof default_config - 1, &cfg,
                                         load_errors, CAP);
    errors[0] = '\0';
    int refusals = rc != 0;
    if (cfg) {
        jn_router_settings_t settings;
        refusals += jn_mgmt_plan_config(cfg, &settings, errors, CAP);
        if (!refusals)
            refusals = jn_mgmt_policy_dir(settings.policy_dir, NULL, NULL, errors, CAP) != 0;
        if (!refusals)
            refusals = jn_mgmt_vhost_conflicts_in(cfg, settings.policy_dir,
                                                  settings.enable_vhost_name_patterns, stderr) != 0;
    }
    if (refusals)
        print_errors_by_line(name, load_errors, errors);
    else
        printf("%s: configuration OK\n", name);
    free(errors);
    free(load_errors);
    return finish(cfg, refusals ? 1 : 0);
}

/* log_ignored_options: the qdrouterd options Junction takes and ignores
 * (of -T, all but the scrubber's test timing). */
static void log_ignored_options(const options_t *opts)
{
    if (opts->include_given)
        JN_LOG(JN_LOG_MOD_MAIN, JN_LOG_NOTICE,
               "-I/--include ignored: Junction embeds no Python, so it has no include path");
    if (opts->test_hooks)
        JN_LOG(JN_LOG_MOD_MAIN, JN_LOG_NOTICE,
               "-T/--test-hooks: 1.19's test modules ignored (Junction has none); the "
               "streaming link scrubber runs every 5 s and keeps 2 idle links");
}

/* Block the signals run() takes (sigwait), before anything else, so that
 * a SIGHUP (a `systemctl reload`, a logrotate hook) landing during
 * start-up waits for the router instead of killing it: every thread
 * started later inherits the mask. SIGPIPE is ignored. */
static void block_signals(sigset_t *sigs)
{
    sigemptyset(sigs);
    sigaddset(sigs, SIGINT);
    sigaddset(sigs, SIGTERM);
    sigaddset(sigs, SIGHUP);
    sigaddset(sigs, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* The configuration before anything starts: the file (or the built-in
 * default) read and checked, its plan in st->settings, the policyDir files
 * and the log sections applied, Cyrus SASL set up as the router section
 * says. 0 with *cfg the configuration (owned by the caller); 1 when it is
 * refused, with every error on stderr (FILE:LINE) and nothing left. */
static int configure(const options_t *opts, daemon_state_t *st, jn_config_t **cfg)
{
    static char err[16 * JN_CONFIG_ERROR_MAX]; /* every section's error, one a line */
    *cfg = NULL;
    int rc = opts->config_path
                 ? jn_config_load_file(opts->config_path, cfg, err, sizeof err)
                 : jn_config_load_string("<built-in default>", default_config,
                                         sizeof default_config - 1, cfg, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    char *errors = malloc(8192);
    if (!errors || jn_mgmt_plan_config(*cfg, &st->settings, errors, 8192) != 0 ||
        jn_mgmt_policy_dir(st->settings.policy_dir, NULL, NULL, errors, 8192) != 0 ||
        jn_mgmt_apply_logs(*cfg, errors, 8192) != 0) {
        fprintf(stderr, "%s\n", errors ? errors : "junctiond: out of memory");
        free(errors);
        return finish(*cfg, 1);
    }
    free(errors);
    /* Cyrus SASL as the router section says, before any listener is
     * checked against what it offers */
    char sasl_err[512];
    if (jn_sasl_init(st->settings.sasl_config_dir, st->settings.sasl_config_name, sasl_err,
                     sizeof sasl_err) != 0) {
        const jn_config_entity_t *r = jn_config_find(*cfg, jn_schema_type_find("router"));
        const jn_config_value_t *v = r ? jn_config_entity_get(r, "saslConfigDir") : NULL;
        fprintf(stderr, "%s:%d: router: %s\n", jn_config_name(*cfg),
                v && jn_config_value_line(v) ? jn_config_value_line(v)
                                             : (r ? jn_config_entity_line(r) : 0),
                sasl_err);
        return finish(*cfg, 1);
    }
    return 0;
}

int main(int argc, char **argv)
{
    sigset_t sigs;
    block_signals(&sigs);
    options_t opts;
    int status = parse_args(argc, argv, &opts);
    if (status >= 0)
        return status;
    jn_run_as_t run_as;
    if (opts.user && jn_process_lookup_user(opts.user, &run_as) != 0)
        return 1;
    if (opts.check)
        return check_config(&opts);

    daemon_state_t st = {.watchdog_usec = jn_process_watchdog_usec(),
                         .test_hooks = opts.test_hooks};
    jn_config_t *cfg;
    if (configure(&opts, &st, &cfg) != 0)
        return 1;
    jn_process_raise_fd_limit();
    /* absolute, symlinks kept: a reload after --daemon (which changes to
     * /) reads the same path again, and follows a symlink moved since (a
     * Kubernetes ConfigMap update swaps one) */
    char *config_path = opts.config_path ? jn_process_absolute_path(opts.config_path) : NULL;
    char *pid_file = opts.pid_file ? jn_process_absolute_path(opts.pid_file) : NULL;
    st.config_path = config_path;
    log_ignored_options(&opts);
    for (size_t i = 0; i < jn_config_warning_count(cfg); i++)
        JN_LOG(JN_LOG_MOD_CONN_MGR, JN_LOG_WARNING, "%s", jn_config_warning_at(cfg, i));

    if ((opts.daemonize && jn_process_daemonize() != 0) ||
        (pid_file && jn_process_write_pid_file(pid_file) != 0) || build(&st) != 0 ||
        vhosts(&st, cfg) != 0) {
        teardown(&st);
        free(config_path);
        free(pid_file);
        return finish(cfg, 1);
    }
    status = start(&st, cfg); /* cfg is the agent's from here on */
    if (status == 0 && opts.user && jn_process_drop_privileges(&run_as) != 0)
        status = 1;
    if (status == 0) {
        jn_process_notify("READY=1"); /* every listener listens (start waited for them) */
        run(&st, &sigs);
    }
    teardown(&st);
    if (status == 0)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_NOTICE, "Shut Down");
    if (pid_file && unlink(pid_file) != 0 && errno != ENOENT)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_WARNING, "Cannot remove pid file %s: %s", pid_file,
               strerror(errno));
    free(config_path);
    free(pid_file);
    return finish(NULL, status);
}
