/*
 * log_stats.c — the logStats rows: for each log module, how many lines it
 * has written at each level since the router started (1.19's logStats
 * entity, which its Python agent answers: name the module, identity
 * "logStats/<module>", traceCount ... criticalCount).
 *
 * The counts are the logger's own (jn_log_get_counts, relaxed atomics
 * that each written line increments: junction/log.h); nothing is added
 * here to the logging path. Core thread (the agent's), like every row
 * builder.
 */
#include "mgmt_private.h"

#include <stdio.h>

#define FULL(t) JN_SCHEMA_PREFIX "." t

/* jn_mgmt_rows_log_stats: rows [offset, offset + max) of logStats, one per
 * log module of the schema's log.module enum (ROUTER ... DEFAULT), to fn;
 * stops early when fn returns false. Returns the number of rows there are.
 * Core thread. */
size_t jn_mgmt_rows_log_stats(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, size_t offset,
                              size_t max, jn_mgmt_row_fn fn, void *ctx)
{
    (void)agent;
    JN_CHECK(jn_mgmt_class_ncols(cls) == JN_COLS_LOG_STATS);
    for (size_t m = offset; m < JN_LOG_SCHEMA_MODULE_COUNT && m - offset < max; m++) {
        uint64_t n[JN_LOG_LEVEL_COUNT];
        if (jn_log_get_counts((jn_log_module_t)m, n) != 0)
            continue;
        const char *module = jn_log_module_name((jn_log_module_t)m);
        char ident[64];
        snprintf(ident, sizeof ident, "logStats/%s", module);
        jn_mv_t row[JN_COLS_LOG_STATS] = {
            [JN_COL_LOG_STATS_NAME] = jn_mv_str(module),
            [JN_COL_LOG_STATS_IDENTITY] = jn_mv_str(ident),
            [JN_COL_LOG_STATS_TYPE] = jn_mv_str(FULL("logStats")),
            [JN_COL_LOG_STATS_TRACE_COUNT] = jn_mv_int(JN_MV_LONG, (int64_t)n[JN_LOG_TRACE]),
            [JN_COL_LOG_STATS_DEBUG_COUNT] = jn_mv_int(JN_MV_LONG, (int64_t)n[JN_LOG_DEBUG]),
            [JN_COL_LOG_STATS_INFO_COUNT] = jn_mv_int(JN_MV_LONG, (int64_t)n[JN_LOG_INFO]),
            [JN_COL_LOG_STATS_NOTICE_COUNT] = jn_mv_int(JN_MV_LONG, (int64_t)n[JN_LOG_NOTICE]),
            [JN_COL_LOG_STATS_WARNING_COUNT] = jn_mv_int(JN_MV_LONG, (int64_t)n[JN_LOG_WARNING]),
            [JN_COL_LOG_STATS_ERROR_COUNT] = jn_mv_int(JN_MV_LONG, (int64_t)n[JN_LOG_ERROR]),
            [JN_COL_LOG_STATS_CRITICAL_COUNT] = jn_mv_int(JN_MV_LONG, (int64_t)n[JN_LOG_CRITICAL])};
        if (!fn(ctx, row))
            break;
    }
    return JN_LOG_SCHEMA_MODULE_COUNT;
}
