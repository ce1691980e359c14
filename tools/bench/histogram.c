/*
 * histogram.c — merging and reading latency histograms (histogram.h).
 */
#include "histogram.h"

#include <math.h>
#include <string.h>

void jn_bench_hist_init(jn_bench_hist_t *h)
{
    memset(h, 0, sizeof(*h));
}

void jn_bench_hist_merge(jn_bench_hist_t *dst, const jn_bench_hist_t *src)
{
    if (src->total == 0)
        return;
    for (uint32_t i = 0; i < JN_BENCH_HIST_BUCKETS; i++)
        dst->counts[i] += src->counts[i];
    if (dst->total == 0 || src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
    dst->total += src->total;
    dst->sum += src->sum;
}

/* Smallest value of bucket i, and its width. */
static void bucket_range(uint32_t i, uint64_t *low, uint64_t *width)
{
    if (i < 2 * JN_BENCH_HIST_SUB) { /* exact buckets: 0..127 */
        *low = i;
        *width = 1;
        return;
    }
    uint32_t shift = i / JN_BENCH_HIST_SUB - 1;
    uint64_t sub = i % JN_BENCH_HIST_SUB;
    *low = (JN_BENCH_HIST_SUB + sub) << shift;
    *width = UINT64_C(1) << shift;
}

uint64_t jn_bench_hist_quantile(const jn_bench_hist_t *h, double q)
{
    if (h->total == 0)
        return 0;
    if (q <= 0)
        return h->min;
    if (q >= 1)
        return h->max;
    uint64_t rank = (uint64_t)ceil(q * (double)h->total); /* 1-based */
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (uint32_t i = 0; i < JN_BENCH_HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            uint64_t low, width;
            bucket_range(i, &low, &width);
            uint64_t v = low + width / 2;
            if (v < h->min)
                v = h->min;
            if (v > h->max)
                v = h->max;
            return v;
        }
    }
    return h->max;
}

double jn_bench_hist_mean(const jn_bench_hist_t *h)
{
    return h->total ? h->sum / (double)h->total : 0;
}
