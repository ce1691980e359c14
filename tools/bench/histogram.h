/*
 * histogram.h — latency histogram with bounded memory and ~1.6% precision.
 *
 * Log-linear buckets, as in HDR histograms: values below 64 ns have a bucket
 * each; above, every power of two [2^e, 2^(e+1)) is split into 64 equal
 * buckets. 3,776 buckets cover every uint64 value in 30 KB, however many
 * samples are recorded. Each receiving link owns one (no locking); the run
 * merges them at the end.
 */
#ifndef JN_BENCH_HISTOGRAM_H
#define JN_BENCH_HISTOGRAM_H

#include <stdint.h>

#define JN_BENCH_HIST_SUB_BITS 6
#define JN_BENCH_HIST_SUB      (1u << JN_BENCH_HIST_SUB_BITS)
#define JN_BENCH_HIST_BUCKETS  ((64 - JN_BENCH_HIST_SUB_BITS + 1) * JN_BENCH_HIST_SUB)

typedef struct {
    uint64_t counts[JN_BENCH_HIST_BUCKETS];
    uint64_t total; /* samples recorded */
    uint64_t min, max;
    double sum; /* for the mean */
} jn_bench_hist_t;

/* Empty the histogram. */
void jn_bench_hist_init(jn_bench_hist_t *h);

/* Bucket index of a value. Hot path: one count-leading-zeros and shifts. */
static inline uint32_t jn_bench_hist_index(uint64_t v)
{
    if (v < JN_BENCH_HIST_SUB)
        return (uint32_t)v;
    uint32_t e = 63u - (uint32_t)__builtin_clzll(v); /* >= SUB_BITS */
    uint32_t shift = e - JN_BENCH_HIST_SUB_BITS;
    uint32_t sub = (uint32_t)(v >> shift) & (JN_BENCH_HIST_SUB - 1);
    return (shift + 1) * JN_BENCH_HIST_SUB + sub;
}

/* Record one sample. Hot path: called once per message received. */
static inline void jn_bench_hist_record(jn_bench_hist_t *h, uint64_t v)
{
    h->counts[jn_bench_hist_index(v)]++;
    if (h->total == 0 || v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    h->total++;
    h->sum += (double)v;
}

/* Add every sample of src to dst. */
void jn_bench_hist_merge(jn_bench_hist_t *dst, const jn_bench_hist_t *src);

/*
 * The value at fraction q (0..1) of the samples: the middle of the bucket
 * holding it, clamped to [min, max]. 0 when the histogram is empty.
 */
uint64_t jn_bench_hist_quantile(const jn_bench_hist_t *h, double q);

/* Mean of the samples, 0 when empty. */
double jn_bench_hist_mean(const jn_bench_hist_t *h);

#endif
