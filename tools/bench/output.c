/*
 * output.c — the report of a finished run (bench.h).
 *
 * Runs after every proactor thread has returned, so it reads the senders'
 * and receivers' counters without locks. It sums them, derives loss
 * (expected copies never seen), unsettled transfers and rates, and prints
 * one human line (stdout, or stderr with --json) and, with --json, one JSON
 * object on stdout. The exit status follows from the same figures.
 *
 * Time base: from the first send to the last receipt (or, unsettled, the
 * last settlement if later), so set-up and shutdown are not counted.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t sent, transfers, settled, accepted, released, rejected, modified;
    uint64_t received, unique, dup, invalid, expected, lost, unsettled;
    uint64_t unsent; /* of --count, when neither time limit nor ^C stopped the run */
    int64_t first_send, last_send, last_recv, last_settle;
    double elapsed_s, rate, send_rate;
    jn_bench_hist_t *hist;
    uint64_t *per_receiver; /* messages received per receiver slot */
    bool ok;
    bool not_multicast; /* --multicast, but each message reached one receiver */
} totals_t;

static void add_receiver(totals_t *t, const jn_bench_receiver_t *r)
{
    t->received += r->received;
    t->unique += r->unique;
    t->dup += r->dup;
    t->invalid += r->invalid;
    t->per_receiver[r->slot] += r->received;
    if (r->last_recv_ns > t->last_recv)
        t->last_recv = r->last_recv_ns;
    jn_bench_hist_merge(t->hist, &r->hist);
}

static void add_sender(totals_t *t, const jn_bench_sender_t *s)
{
    t->sent += s->sent;
    t->settled += s->settled;
    t->accepted += s->accepted;
    t->released += s->released;
    t->rejected += s->rejected;
    t->modified += s->modified;
    if (s->first_send_ns && (t->first_send == 0 || s->first_send_ns < t->first_send))
        t->first_send = s->first_send_ns;
    if (s->last_send_ns > t->last_send)
        t->last_send = s->last_send_ns;
    if (s->last_settle_ns > t->last_settle)
        t->last_settle = s->last_settle_ns;
}

/* Derived figures: loss, unsettled, rates, verdict. */
static void derive(jn_bench_run_t *run, totals_t *t)
{
    const jn_bench_opts_t *o = run->opts;
    t->transfers = t->sent * run->links_per_msg;
    t->expected = t->sent * run->copies;
    t->lost = t->unique < t->expected ? t->expected - t->unique : 0;
    t->unsettled = o->presettled || t->settled >= t->transfers ? 0 : t->transfers - t->settled;
    int64_t end = t->last_recv;
    if (!o->presettled && t->last_settle > end)
        end = t->last_settle;
    if (t->first_send && end > t->first_send)
        t->elapsed_s = (double)(end - t->first_send) / 1e9;
    if (t->elapsed_s > 0) {
        t->rate = (double)t->unique / t->elapsed_s;
        t->send_rate = (double)t->sent / t->elapsed_s;
    }
    bool stopped = atomic_load(&run->time_limit_hit) || atomic_load(&run->interrupted);
    t->unsent = stopped || t->sent >= o->count ? 0 : o->count - t->sent;
    t->ok = !atomic_load(&run->failed) && t->lost == 0 && t->dup == 0 && t->unsettled == 0 &&
            t->invalid == 0 && t->unsent == 0 && t->released + t->rejected + t->modified == 0;
    /* --multicast toward an address the router does not multicast: every
     * message arrived, but at one receiver each, so the copies the others
     * never got count as lost */
    t->not_multicast = o->multicast && !o->direct && o->receivers > 1 && t->lost > 0 &&
                       t->dup == 0 && t->sent > 0 && t->received == t->sent;
}

static int collect(jn_bench_run_t *run, totals_t *t)
{
    const jn_bench_opts_t *o = run->opts;
    memset(t, 0, sizeof(*t));
    t->hist = malloc(sizeof(*t->hist));
    t->per_receiver = calloc(o->receivers, sizeof(*t->per_receiver));
    if (!t->hist || !t->per_receiver)
        return -1;
    jn_bench_hist_init(t->hist);
    for (uint32_t i = 0; i < o->senders; i++)
        add_sender(t, &run->senders[i]);
    if (run->receivers)
        for (uint32_t i = 0; i < o->receivers; i++)
            add_receiver(t, &run->receivers[i]);
    for (const jn_bench_receiver_t *r = run->accepted_receivers; r; r = r->next)
        add_receiver(t, r);
    derive(run, t);
    return 0;
}

/* 1234567 -> "1,234,567" */
static const char *grouped(uint64_t v, char *buf, size_t len)
{
    char digits[32];
    int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);
    size_t out = 0;
    for (int i = 0; i < n && out + 2 < len; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[out++] = ',';
        buf[out++] = digits[i];
    }
    buf[out] = '\0';
    return buf;
}

/* Nanoseconds as milliseconds with sensible precision. */
static const char *as_ms(uint64_t ns, char *buf, size_t len)
{
    double ms = (double)ns / 1e6;
    snprintf(buf, len, ms < 10 ? "%.3f ms" : ms < 1000 ? "%.1f ms" : "%.0f ms", ms);
    return buf;
}

static void print_human(jn_bench_run_t *run, const totals_t *t, FILE *out)
{
    const jn_bench_opts_t *o = run->opts;
    const bool pp = o->mode == JN_BENCH_PING_PONG;
    char a[32], b[32], c[32], p50[32], p99[32], max[32];
    fprintf(out, "%s %s body=%llu window=%u", jn_bench_mode_name(o->mode),
            o->presettled ? "presettled" : "unsettled", (unsigned long long)o->body_size,
            o->window);
    if (o->senders != 1 || o->receivers != 1)
        fprintf(out, " senders=%u receivers=%u", o->senders, o->receivers);
    fprintf(out, "%s%s: ", o->multicast ? " multicast" : "", o->direct ? " direct" : "");
    uint64_t done = pp ? t->unique / run->copies : t->unique;
    double rate = pp ? t->rate / run->copies : t->rate;
    fprintf(out, "%s %s", grouped(done, a, sizeof(a)), pp ? "round trips" : "msgs");
    if (run->copies > 1 && !pp)
        fprintf(out, " (%s sent x %u copies)", grouped(t->sent, b, sizeof(b)), run->copies);
    fprintf(out, " in %.2f s = %s %s", t->elapsed_s, grouped((uint64_t)(rate + 0.5), c, sizeof(c)),
            pp ? "round trips/s" : "msg/s");
    fprintf(out, "; latency p50 %s p99 %s max %s",
            as_ms(jn_bench_hist_quantile(t->hist, 0.50), p50, sizeof(p50)),
            as_ms(jn_bench_hist_quantile(t->hist, 0.99), p99, sizeof(p99)),
            as_ms(t->hist->max, max, sizeof(max)));
    fprintf(out, "; lost %llu dup %llu unsettled %llu", (unsigned long long)t->lost,
            (unsigned long long)t->dup, (unsigned long long)t->unsettled);
    if (t->invalid)
        fprintf(out, " invalid %llu", (unsigned long long)t->invalid);
    if (t->unsent)
        fprintf(out, " unsent %llu", (unsigned long long)t->unsent);
    if (t->released + t->rejected + t->modified)
        fprintf(out, " released %llu rejected %llu modified %llu", (unsigned long long)t->released,
                (unsigned long long)t->rejected, (unsigned long long)t->modified);
    if (atomic_load(&run->time_limit_hit))
        fprintf(out, "; stopped by the time limit");
    if (atomic_load(&run->interrupted))
        fprintf(out, "; interrupted");
    if (atomic_load(&run->idle_timed_out))
        fprintf(out, "; gave up waiting after %g s idle", o->idle_timeout);
    fputc('\n', out);
}

/* A JSON string literal. */
static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

static void json_u64(FILE *out, const char *name, uint64_t v)
{
    fprintf(out, ", \"%s\": %llu", name, (unsigned long long)v);
}

static void json_bool(FILE *out, const char *name, bool v)
{
    fprintf(out, ", \"%s\": %s", name, v ? "true" : "false");
}

static void print_json_latency(const totals_t *t, FILE *out)
{
    const jn_bench_hist_t *h = t->hist;
    fprintf(out, ", \"latency_ns\": {\"samples\": %llu, \"min\": %llu, \"mean\": %.0f",
            (unsigned long long)h->total, (unsigned long long)h->min, jn_bench_hist_mean(h));
    static const struct {
        const char *name;
        double q;
    } qs[] = {{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p999", 0.999}};
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
        fprintf(out, ", \"%s\": %llu", qs[i].name,
                (unsigned long long)jn_bench_hist_quantile(h, qs[i].q));
    fprintf(out, ", \"max\": %llu}", (unsigned long long)h->max);
}

static void print_json(jn_bench_run_t *run, const totals_t *t, int status, FILE *out)
{
    const jn_bench_opts_t *o = run->opts;
    fprintf(out, "{\"mode\": \"%s\", \"delivery\": \"%s\"", jn_bench_mode_name(o->mode),
            o->presettled ? "presettled" : "unsettled");
    json_u64(out, "body_size", o->body_size);
    json_u64(out, "message_size", run->tmpl.size);
    json_u64(out, "window", o->window);
    json_u64(out, "count", o->count);
    fprintf(out, ", \"time_limit_s\": %g, \"address\": ", o->time_limit);
    json_string(out, o->address);
    json_u64(out, "senders", o->senders);
    json_u64(out, "receivers", o->receivers);
    json_bool(out, "multicast", o->multicast);
    json_bool(out, "direct", o->direct);
    json_u64(out, "threads", o->threads);
    json_u64(out, "copies", run->copies);
    json_u64(out, "sent", t->sent);
    json_u64(out, "transfers", t->transfers);
    json_u64(out, "expected", t->expected);
    json_u64(out, "received", t->received);
    json_u64(out, "unique", t->unique);
    json_u64(out, "round_trips", o->mode == JN_BENCH_PING_PONG ? t->unique / run->copies : 0);
    json_u64(out, "lost", t->lost);
    json_u64(out, "dup", t->dup);
    json_u64(out, "invalid", t->invalid);
    json_u64(out, "settled", t->settled);
    json_u64(out, "unsettled", t->unsettled);
    json_u64(out, "unsent", t->unsent);
    json_u64(out, "accepted", t->accepted);
    json_u64(out, "released", t->released);
    json_u64(out, "rejected", t->rejected);
    json_u64(out, "modified", t->modified);
    fprintf(out, ", \"received_per_receiver\": [");
    for (uint32_t i = 0; i < o->receivers; i++)
        fprintf(out, "%s%llu", i ? ", " : "", (unsigned long long)t->per_receiver[i]);
    fprintf(out, "], \"elapsed_s\": %.6f, \"msg_per_s\": %.1f, \"sent_per_s\": %.1f", t->elapsed_s,
            t->rate, t->send_rate);
    fprintf(out, ", \"round_trips_per_s\": %.1f",
            o->mode == JN_BENCH_PING_PONG ? t->rate / run->copies : 0.0);
    print_json_latency(t, out);
    json_bool(out, "time_limit_hit", atomic_load(&run->time_limit_hit));
    json_bool(out, "idle_timeout_hit", atomic_load(&run->idle_timed_out));
    json_bool(out, "interrupted", atomic_load(&run->interrupted));
    json_bool(out, "not_multicast", t->not_multicast);
    fprintf(out, ", \"failure\": ");
    json_string(out, run->failure);
    fprintf(out, ", \"ok\": %s, \"exit_status\": %d}\n", t->ok ? "true" : "false", status);
}

int jn_bench_report(jn_bench_run_t *run)
{
    totals_t t;
    if (collect(run, &t) != 0) {
        fprintf(stderr, "junction-bench: out of memory for the report\n");
        free(t.hist);
        free(t.per_receiver);
        return JN_BENCH_EXIT_FAIL;
    }
    int status = t.ok ? JN_BENCH_EXIT_OK : JN_BENCH_EXIT_FAIL;
    if (run->failure[0])
        fprintf(stderr, "junction-bench: run failed: %s\n", run->failure);
    if (t.not_multicast)
        fprintf(stderr,
                "junction-bench: each message reached exactly one of the %u receivers: the "
                "router does not multicast address '%s' (its distribution is balanced or "
                "closest), so the copies counted as lost went to no one. Configure it as "
                "multicast (address { prefix: %s distribution: multicast }) or run without "
                "--multicast.\n",
                run->opts->receivers, run->opts->address, run->opts->address);
    print_human(run, &t, run->opts->json ? stderr : stdout);
    if (run->opts->json)
        print_json(run, &t, status, stdout);
    fflush(stdout);
    free(t.hist);
    free(t.per_receiver);
    return status;
}
