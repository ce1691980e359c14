/*
 * options.h — junction-bench's command line: what a run is asked to do.
 *
 * jn_bench_opts_parse fills a jn_bench_opts_t from argv (getopt_long) and
 * checks that the combination makes sense; everything else in the tool only
 * reads the result. The struct is immutable once parsed and is shared by
 * every thread of the run.
 */
#ifndef JN_BENCH_OPTIONS_H
#define JN_BENCH_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JN_BENCH_MAX_URLS      16
#define JN_BENCH_MAX_ENDPOINTS 10000 /* senders or receivers */
#define JN_BENCH_MAX_THREADS   64
#define JN_BENCH_MAX_COUNT     (UINT64_C(1) << 40)
#define JN_BENCH_MAX_BODY      (UINT64_C(1) << 30)
#define JN_BENCH_MAX_WINDOW    (UINT64_C(1) << 30)

/* Exit statuses of the tool. */
#define JN_BENCH_EXIT_OK    0 /* every message arrived once and was settled */
#define JN_BENCH_EXIT_FAIL  1 /* loss, duplicates, unsettled, or a failed run */
#define JN_BENCH_EXIT_USAGE 2 /* bad command line */

/* What the senders do. */
typedef enum {
    JN_BENCH_THROUGHPUT, /* send as fast as credit allows */
    JN_BENCH_PING_PONG,  /* one message in flight per sender */
} jn_bench_mode_t;

/* One network endpoint, ready for pn_proactor_addr. */
typedef struct {
    char host[256];
    char port[32];
    bool tls; /* amqps://: TLS (proton's client-side pn_ssl) */
} jn_bench_url_t;

/* A parsed command line. Immutable after jn_bench_opts_parse returns. */
typedef struct {
    jn_bench_mode_t mode;
    bool presettled;      /* pre-settled (at-most-once) instead of unsettled */
    uint64_t body_size;   /* octets of the data section */
    uint32_t window;      /* credit each receiving link keeps topped up */
    uint64_t count;       /* messages in total, shared among the senders */
    double time_limit;    /* seconds of sending; 0 for none */
    double start_timeout; /* seconds to wait for links to attach */
    double idle_timeout;  /* seconds without progress before giving up */
    const char *address;  /* node address of every link */
    uint32_t senders;
    uint32_t receivers;
    bool multicast; /* every receiver gets every message */
    bool anonymous; /* senders on the anonymous relay, `to` in each message */
    bool direct;    /* no router: listen on the receive URLs */
    uint32_t threads;
    bool json;
    bool verbose;
    const char *tls_ca; /* --tls-ca: CAs that verify amqps:// servers; NULL: none checked */
    jn_bench_url_t send_urls[JN_BENCH_MAX_URLS];
    size_t n_send_urls;
    jn_bench_url_t recv_urls[JN_BENCH_MAX_URLS];
    size_t n_recv_urls;
    jn_bench_url_t bus_urls[JN_BENCH_MAX_URLS]; /* --bus: both, unless given apart */
    size_t n_bus_urls;
} jn_bench_opts_t;

/*
 * Parse argv into *opts. Returns 0 when the run should go ahead, 1 when
 * --help or --version was printed (exit 0), and -1 on a usage error, already reported on
 * stderr (exit JN_BENCH_EXIT_USAGE).
 */
int jn_bench_opts_parse(jn_bench_opts_t *opts, int argc, char **argv);

/* Name of a mode for output: "throughput" or "ping-pong". */
const char *jn_bench_mode_name(jn_bench_mode_t mode);

/*
 * Parse one URL ("amqp://host:port", "host:port", "host", "[::1]:5672",
 * "host:amqp": a port number or a TCP service name) into *url. Returns 0, or -1 with a reason in
 * err (errlen octets).
 */
int jn_bench_url_parse(const char *text, jn_bench_url_t *url, char *err, size_t errlen);

#endif
