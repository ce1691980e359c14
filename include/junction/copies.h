/*
 * junction/copies.h — a count of message octets copied in user space, for
 * measurement only (docs/performance.md, "Copies of a message per hop").
 *
 * Built with -DJN_COPY_COUNTERS=ON, every place where the router copies a
 * message's octets from one user-space buffer to another says so with
 * JN_COPIES_NOTE(n). Copies inside OpenSSL are not ours and not counted.
 * At exit the total goes to stderr as "junction copies: N message octets
 * copied in user space". In every
 * other build the macro is nothing, so the hot path pays nothing.
 */
#ifndef JUNCTION_COPIES_H
#define JUNCTION_COPIES_H 1

#include <stddef.h>

#ifdef JN_COPY_COUNTERS
/* jn_copies_note: add n octets to the process's count (a relaxed atomic
 * add). Any thread. */
void jn_copies_note(size_t n);
#define JN_COPIES_NOTE(n) jn_copies_note(n)
#else
#define JN_COPIES_NOTE(n) ((void)0)
#endif

#endif /* JUNCTION_COPIES_H */
