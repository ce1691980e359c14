/*
 * options.c — junction-bench's command line (options.h).
 *
 * getopt_long does the splitting; this file turns each value into a checked
 * number or endpoint and then checks the combination (for instance that
 * --send-url means nothing with --direct). Every failure prints one line
 * saying which option is wrong and why, and the caller exits with status 2.
 */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_URL "amqp://127.0.0.1:5672"

#ifndef JN_VERSION
#define JN_VERSION "unknown"
#endif

enum {
    OPT_PING_PONG = 256,
    OPT_DELIVERY,
    OPT_MULTICAST,
    OPT_SEND_URL,
    OPT_RECV_URL,
    OPT_DIRECT,
    OPT_START_TIMEOUT,
    OPT_IDLE_TIMEOUT,
    OPT_THREADS,
    OPT_JSON,
    OPT_TLS_CA,
    OPT_BUS,
    OPT_TIMEOUT,
    OPT_VERSION,
    OPT_ANONYMOUS,
};

static const struct option long_options[] = {
    {"mode", required_argument, NULL, 'm'},
    {"ping-pong", no_argument, NULL, OPT_PING_PONG},
    {"delivery", required_argument, NULL, OPT_DELIVERY},
    {"presettled", no_argument, NULL, 'p'},
    {"body-size", required_argument, NULL, 'b'},
    {"window", required_argument, NULL, 'w'},
    {"count", required_argument, NULL, 'c'},
    {"time-limit", required_argument, NULL, 't'},
    {"address", required_argument, NULL, 'a'},
    {"senders", required_argument, NULL, 's'},
    {"receivers", required_argument, NULL, 'r'},
    {"multicast", no_argument, NULL, OPT_MULTICAST},
    {"anonymous", no_argument, NULL, OPT_ANONYMOUS},
    {"send-url", required_argument, NULL, OPT_SEND_URL},
    {"recv-url", required_argument, NULL, OPT_RECV_URL},
    {"direct", no_argument, NULL, OPT_DIRECT},
    {"start-timeout", required_argument, NULL, OPT_START_TIMEOUT},
    {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"json", no_argument, NULL, OPT_JSON},
    {"tls-ca", required_argument, NULL, OPT_TLS_CA},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    /* the same long names as junction-stat and junction-manage where they
     * mean the same thing */
    {"bus", required_argument, NULL, OPT_BUS},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* The help, in sections (ISO C caps one string literal at 4095 octets). */
static const char *const usage_text[] = {
    "Usage: junction-bench [OPTION]...\n"
    "Load generator for AMQP 1.0 routers: N senders and M receivers, each on its\n"
    "own connection, exchange messages through a router (or directly, with\n"
    "--direct) and the run reports rate, latency, loss and duplicates.\n"
    "\n",
    "What to run:\n"
    "  -m, --mode MODE          'throughput' (default): every sender sends as fast\n"
    "                           as its credit allows; 'ping-pong': each sender has\n"
    "                           one message in flight and sends the next once the\n"
    "                           previous one was received (and, when unsettled,\n"
    "                           settled); reports round trips per second\n"
    "      --ping-pong          same as --mode ping-pong\n"
    "      --delivery KIND      'unsettled' (default, at-least-once: receivers\n"
    "                           accept, senders count the settlements) or\n"
    "                           'presettled' (at-most-once)\n"
    "  -p, --presettled         same as --delivery presettled\n"
    "  -b, --body-size OCTETS   size of the message body, a data section\n"
    "                           (default 100)\n"
    "  -w, --window N           credit each receiving link keeps granted\n"
    "                           (default 1000)\n"
    "  -c, --count N            messages to send in total, shared evenly among the\n"
    "                           senders (default 100000); k, M and G multiply by\n"
    "                           10^3, 10^6 and 10^9\n"
    "  -t, --time-limit SECS    stop sending SECS seconds after the senders start\n"
    "                           and report what was done; 0 means no limit\n"
    "                           (default 0)\n"
    "  -a, --address ADDR       node address of every link (default\n"
    "                           'junction-bench')\n"
    "  -s, --senders N          number of senders, one connection each (default 1)\n"
    "  -r, --receivers M        number of receivers, one connection each\n"
    "                           (default 1)\n"
    "      --multicast          every receiver is expected to get every message,\n"
    "                           so each message counts M times (for a multicast\n"
    "                           address); without it each message is expected once\n"
    "      --anonymous          senders attach to the anonymous relay (no target\n"
    "                           address) and each message carries the address in\n"
    "                           its `to` (to compare with addressed senders)\n"
    "\n",
    "Where to connect:\n"
    "      --bus URL            where senders and receivers connect, as\n"
    "                           junction-stat --bus (default " DEFAULT_URL ")\n"
    "      --send-url URL       where senders connect (default: --bus);\n"
    "                           repeat it or separate URLs with commas to spread\n"
    "                           the senders round-robin\n"
    "      --recv-url URL       where receivers connect (default: --bus), same\n"
    "                           rules; so senders and receivers may use two\n"
    "                           different routers\n"
    "      --direct             no router: listen on the --recv-url host:port and\n"
    "                           let the senders connect there directly, for a\n"
    "                           baseline. Each sender's messages go to receiver\n"
    "                           (sender mod M); with --multicast each sender opens\n"
    "                           one link per receiver and sends every message on\n"
    "                           each of them\n"
    "  URLs have the form [amqp://]HOST[:PORT]; PORT is a number or a service\n"
    "  name (amqp); IPv6 hosts go in brackets; amqps://HOST[:PORT] connects with\n"
    "  TLS (proton's client-side TLS; not with --direct)\n"
    "      --tls-ca FILE        PEM CAs that must have signed an amqps:// server's\n"
    "                           certificate (its name is not checked); without\n"
    "                           it the server is not verified\n"
    "\n",
    "Limits and output:\n"
    "      --timeout SECS, --start-timeout SECS\n"
    "                           receivers must attach, then senders must attach\n"
    "                           and get credit, within SECS each (default 10)\n"
    "      --idle-timeout SECS  give up when no message was sent, received or\n"
    "                           settled for SECS, for instance while waiting for\n"
    "                           messages still in flight at the end (default 5)\n"
    "      --threads N          threads serving the proactor (default 1)\n"
    "      --json               print the figures as one JSON object on stdout\n"
    "                           (the human line then goes to stderr)\n"
    "  -v, --verbose            report connection and link events on stderr\n"
    "      --version            print the version and exit\n"
    "  -h, --help               print this help and exit\n"
    "\n",
    "Every message carries its sender, a sequence number and its send time, so\n"
    "receivers count lost and duplicated messages per sender (per receiver with\n"
    "--multicast) and measure latency (p50, p99, max).\n"
    "\n"
    "Exit status: 0 when every message sent arrived exactly once as expected and\n"
    "was settled, and all --count messages were sent unless the time limit or\n"
    "SIGINT stopped the senders; 1 when a message was lost, duplicated, not\n"
    "accepted or left unsettled (so also when the time limit cut the run short\n"
    "with messages still in flight), when fewer messages were sent than asked,\n"
    "or when the run failed; 2 for a usage error.\n",
};

static int usage_error(const char *fmt, const char *what, const char *why)
{
    fprintf(stderr, "junction-bench: ");
    fprintf(stderr, fmt, what, why);
    fprintf(stderr, "\nTry 'junction-bench --help' for more information.\n");
    return -1;
}

/* A decimal integer with an optional k/M/G multiplier, within [min, max]. */
static int parse_count(const char *name, const char *text, uint64_t min, uint64_t max,
                       uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    if (text[0] == '-' || text[0] == '\0')
        return usage_error("%s: '%s' is not a non-negative integer", name, text);
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text)
        return usage_error("%s: '%s' is not a non-negative integer", name, text);
    uint64_t mult = 1;
    if (*end == 'k' || *end == 'K')
        mult = 1000;
    else if (*end == 'M')
        mult = 1000000;
    else if (*end == 'G')
        mult = 1000000000;
    if (mult != 1)
        end++;
    if (*end != '\0')
        return usage_error("%s: '%s' is not a non-negative integer", name, text);
    if (v > max / mult || v * mult < min || v * mult > max) {
        fprintf(stderr, "junction-bench: %s: %s is out of range [%llu, %llu]\n", name, text,
                (unsigned long long)min, (unsigned long long)max);
        fprintf(stderr, "Try 'junction-bench --help' for more information.\n");
        return -1;
    }
    *out = v * mult;
    return 0;
}

static int parse_u32(const char *name, const char *text, uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t v;
    if (parse_count(name, text, min, max, &v) != 0)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* Non-negative seconds, fractions allowed. */
static int parse_seconds(const char *name, const char *text, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite(v) || v < 0 || v > 1e7)
        return usage_error("%s: '%s' is not a number of seconds", name, text);
    *out = v;
    return 0;
}

int jn_bench_url_parse(const char *text, jn_bench_url_t *url, char *err, size_t errlen)
{
    const char *p = text;
    url->tls = false;
    const char *scheme_end = strstr(p, "://");
    if (scheme_end) {
        size_t n = (size_t)(scheme_end - p);
        url->tls = n == 5 && strncmp(p, "amqps", 5) == 0;
        if (!url->tls && (n != 4 || strncmp(p, "amqp", 4) != 0)) {
            snprintf(err, errlen, "only the amqp:// and amqps:// schemes are supported");
            return -1;
        }
        p = scheme_end + 3;
    }
    if (strchr(p, '@')) {
        snprintf(err, errlen, "user names and passwords are not supported");
        return -1;
    }
    if (strchr(p, '/') || strchr(p, '?')) {
        snprintf(err, errlen, "a URL path is not used; give the address with --address");
        return -1;
    }
    const char *host = p, *host_end, *port = NULL;
    if (*p == '[') {
        host = p + 1;
        host_end = strchr(host, ']');
        if (!host_end) {
            snprintf(err, errlen, "missing ']' after an IPv6 address");
            return -1;
        }
        if (host_end[1] == ':')
            port = host_end + 2;
        else if (host_end[1] != '\0') {
            snprintf(err, errlen, "unexpected text after ']'");
            return -1;
        }
    } else {
        host_end = strchr(p, ':');
        if (host_end)
            port = host_end + 1;
        else
            host_end = p + strlen(p);
    }
    size_t hlen = (size_t)(host_end - host);
    if (hlen == 0 || hlen >= sizeof(url->host)) {
        snprintf(err, errlen, "missing or too long host name");
        return -1;
    }
    memcpy(url->host, host, hlen);
    url->host[hlen] = '\0';
    if (!port)
        port = "5672";
    size_t plen = strlen(port);
    if (plen == 0 || plen >= sizeof(url->port)) {
        snprintf(err, errlen, "missing or too long port");
        return -1;
    }
    /* a service name ("amqp") as the router's listener port takes one */
    if (strspn(port, "0123456789") != plen && !getservbyname(port, "tcp")) {
        snprintf(err, errlen, "'%s' is neither a port number nor a TCP service name", port);
        return -1;
    }
    if (strspn(port, "0123456789") == plen && (atol(port) < 1 || atol(port) > 65535)) {
        snprintf(err, errlen, "the port must be a number from 1 to 65535");
        return -1;
    }
    memcpy(url->port, port, plen + 1);
    return 0;
}

/* Add the comma-separated URLs of text to list. */
static int add_urls(const char *name, const char *text, jn_bench_url_t *list, size_t *n)
{
    char copy[4096];
    if (strlen(text) >= sizeof(copy))
        return usage_error("%s: '%s' is too long", name, text);
    strcpy(copy, text);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char err[128];
        if (*n >= JN_BENCH_MAX_URLS)
            return usage_error("%s: more than %s URLs", name, "16");
        if (jn_bench_url_parse(tok, &list[*n], err, sizeof(err)) != 0) {
            fprintf(stderr, "junction-bench: %s: '%s': %s\n", name, tok, err);
            fprintf(stderr, "Try 'junction-bench --help' for more information.\n");
            return -1;
        }
        (*n)++;
    }
    if (*n == 0)
        return usage_error("%s: '%s' holds no URL", name, text);
    return 0;
}

static void set_defaults(jn_bench_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->mode = JN_BENCH_THROUGHPUT;
    o->body_size = 100;
    o->window = 1000;
    o->count = 100000;
    o->start_timeout = 10;
    o->idle_timeout = 5;
    o->address = "junction-bench";
    o->senders = 1;
    o->receivers = 1;
    o->threads = 1;
}

/* An option without a value that sets one flag of o: true when c is one
 * (and it is set). */
static bool apply_flag(jn_bench_opts_t *o, int c)
{
    bool *flag = c == OPT_MULTICAST ? &o->multicast
                 : c == OPT_ANONYMOUS ? &o->anonymous
                 : c == OPT_DIRECT    ? &o->direct
                 : c == OPT_JSON      ? &o->json
                 : c == 'v'           ? &o->verbose
                                      : NULL;
    if (flag)
        *flag = true;
    return flag != NULL;
}

/* --mode (or --ping-pong) and --delivery (or -p): 0, or -1 for a value
 * that is neither choice. */
static int apply_choice(jn_bench_opts_t *o, int c, const char *arg)
{
    if (c == 'm' || c == OPT_PING_PONG) {
        if (c == OPT_PING_PONG || strcmp(arg, "ping-pong") == 0)
            o->mode = JN_BENCH_PING_PONG;
        else if (strcmp(arg, "throughput") == 0)
            o->mode = JN_BENCH_THROUGHPUT;
        else
            return usage_error("--mode: '%s' is not %s", arg, "'throughput' or 'ping-pong'");
        return 0;
    }
    if (c == 'p' || strcmp(arg, "presettled") == 0 || strcmp(arg, "pre-settled") == 0)
        o->presettled = true;
    else if (strcmp(arg, "unsettled") == 0)
        o->presettled = false;
    else
        return usage_error("--delivery: '%s' is not %s", arg, "'unsettled' or 'presettled'");
    return 0;
}

/* Apply one option; returns 0, 1 for --help, or -1. */
static int apply_option(jn_bench_opts_t *o, int c, const char *arg)
{
    if (apply_flag(o, c))
        return 0;
    switch (c) {
    case 'm':
    case OPT_PING_PONG:
    case 'p':
    case OPT_DELIVERY:
        return apply_choice(o, c, arg);
    case 'b':
        return parse_count("--body-size", arg, 0, JN_BENCH_MAX_BODY, &o->body_size);
    case 'w':
        return parse_u32("--window", arg, 1, JN_BENCH_MAX_WINDOW, &o->window);
    case 'c':
        return parse_count("--count", arg, 1, JN_BENCH_MAX_COUNT, &o->count);
    case 't':
        return parse_seconds("--time-limit", arg, &o->time_limit);
    case 'a':
        if (arg[0] == '\0')
            return usage_error("%s: %s", "--address", "the address must not be empty");
        o->address = arg;
        return 0;
    case 's':
        return parse_u32("--senders", arg, 1, JN_BENCH_MAX_ENDPOINTS, &o->senders);
    case 'r':
        return parse_u32("--receivers", arg, 1, JN_BENCH_MAX_ENDPOINTS, &o->receivers);
    case OPT_SEND_URL:
        return add_urls("--send-url", arg, o->send_urls, &o->n_send_urls);
    case OPT_RECV_URL:
        return add_urls("--recv-url", arg, o->recv_urls, &o->n_recv_urls);
    case OPT_START_TIMEOUT:
    case OPT_TIMEOUT:
        return parse_seconds(c == OPT_TIMEOUT ? "--timeout" : "--start-timeout", arg,
                             &o->start_timeout);
    case OPT_BUS:
        if (o->n_bus_urls)
            return usage_error("%s: %s", "--bus", "given twice");
        return add_urls("--bus", arg, o->bus_urls, &o->n_bus_urls);
    case OPT_VERSION:
        printf("junction-bench %s\n", JN_VERSION);
        return 1;
    case OPT_IDLE_TIMEOUT:
        return parse_seconds("--idle-timeout", arg, &o->idle_timeout);
    case OPT_THREADS:
        return parse_u32("--threads", arg, 1, JN_BENCH_MAX_THREADS, &o->threads);
    case OPT_TLS_CA:
        o->tls_ca = arg;
        return 0;
    case 'h':
        for (size_t i = 0; i < sizeof(usage_text) / sizeof(usage_text[0]); i++)
            fputs(usage_text[i], stdout);
        return 1;
    default: /* getopt_long has printed why */
        fprintf(stderr, "Try 'junction-bench --help' for more information.\n");
        return -1;
    }
}

/* Checks that involve more than one option. */
static int check_combination(jn_bench_opts_t *o)
{
    char err[128];
    if (o->direct && o->n_send_urls > 0)
        return usage_error("%s: %s", "--send-url",
                           "not used with --direct (senders connect to --recv-url)");
    if (o->n_bus_urls == 0) {
        jn_bench_url_parse(DEFAULT_URL, &o->bus_urls[0], err, sizeof(err));
        o->n_bus_urls = 1;
    }
    if (o->n_send_urls == 0 && !o->direct) {
        memcpy(o->send_urls, o->bus_urls, sizeof o->bus_urls);
        o->n_send_urls = o->n_bus_urls;
    }
    if (o->n_recv_urls == 0) {
        memcpy(o->recv_urls, o->bus_urls, sizeof o->bus_urls);
        o->n_recv_urls = o->n_bus_urls;
    }
    for (size_t i = 0; o->direct && i < o->n_recv_urls; i++)
        if (o->recv_urls[i].tls)
            return usage_error("%s: %s", "--recv-url",
                               "amqps:// is not used with --direct (its listener has no TLS)");
    if (o->start_timeout <= 0)
        return usage_error("%s: %s", "--start-timeout", "must be more than 0");
    if (o->idle_timeout <= 0)
        return usage_error("%s: %s", "--idle-timeout", "must be more than 0");
    if (o->direct && o->anonymous)
        return usage_error("%s: %s", "--anonymous", "the anonymous relay needs a router");
    if (o->direct && o->multicast && (uint64_t)o->senders * o->receivers > 100000)
        return usage_error("%s: %s", "--direct --multicast",
                           "senders x receivers must not exceed 100000 links");
    return 0;
}

int jn_bench_opts_parse(jn_bench_opts_t *opts, int argc, char **argv)
{
    set_defaults(opts);
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "m:pb:w:c:t:a:s:r:vh", long_options, NULL)) != -1) {
        int rc = apply_option(opts, c, optarg);
        if (rc != 0)
            return rc;
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'%s", argv[optind], "");
    return check_combination(opts);
}

const char *jn_bench_mode_name(jn_bench_mode_t mode)
{
    return mode == JN_BENCH_PING_PONG ? "ping-pong" : "throughput";
}
