/*
 * main.c — junction-bench: AMQP 1.0 load generator for Junction (and any
 * router speaking AMQP 1.0), built on the proton proactor only.
 *
 * Parse the command line, run, report; the exit status says whether every
 * message arrived once (0), something was lost, duplicated or unsettled or
 * the run failed (1), or the command line was wrong (2). See bench.h for how
 * the pieces fit.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    static jn_bench_opts_t opts; /* static: the run keeps pointers into it */
    int rc = jn_bench_opts_parse(&opts, argc, argv);
    if (rc > 0)
        return JN_BENCH_EXIT_OK;
    if (rc < 0)
        return JN_BENCH_EXIT_USAGE;
    jn_bench_run_t *run = malloc(sizeof(*run));
    if (!run) {
        fprintf(stderr, "junction-bench: out of memory\n");
        return JN_BENCH_EXIT_FAIL;
    }
    int status = JN_BENCH_EXIT_FAIL;
    if (jn_bench_run(run, &opts) == 0)
        status = jn_bench_report(run);
    else
        fprintf(stderr, "junction-bench: the run could not be set up\n");
    jn_bench_run_fini(run);
    free(run);
    return status;
}
