/*
 * copies.c — the count of message octets copied (junction/copies.h); only
 * in a build with JN_COPY_COUNTERS.
 */
#include <junction/copies.h>

#ifdef JN_COPY_COUNTERS
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_uint_fast64_t copied;

void jn_copies_note(size_t n)
{
    atomic_fetch_add_explicit(&copied, n, memory_order_relaxed);
}

static void copies_report(void)
{
    fprintf(stderr, "junction copies: %llu message octets copied in user space\n",
            (unsigned long long)atomic_load(&copied));
}

__attribute__((constructor)) static void copies_init(void)
{
    atexit(copies_report);
}
#else
typedef int jn_copies_unused_t; /* ISO C: a translation unit is not empty */
#endif
