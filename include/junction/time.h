/*
 * junction/time.h — clocks and timestamp formatting.
 *
 * Monotonic time (for timeouts, intervals, rates) never jumps when the wall
 * clock is set; wall-clock time is only for showing people when something
 * happened (log lines, management timestamps).
 *
 * Threads: every function may be called from any thread.
 */
#ifndef JUNCTION_TIME_H
#define JUNCTION_TIME_H 1

#include <junction/common.h>

#define JN_NS_PER_US 1000ull
#define JN_NS_PER_MS 1000000ull
#define JN_NS_PER_S  1000000000ull
#define JN_US_PER_S  1000000ll

/* JN_TIME_WALL_TEXT_MAX: octets jn_time_format_wall needs, with the NUL:
 * "YYYY-MM-DD HH:MM:SS.uuuuuu +ZZZZ" is 32 characters for four-digit years. */
#define JN_TIME_WALL_TEXT_MAX 48

/* jn_time_mono_ns: nanoseconds on the monotonic clock (CLOCK_MONOTONIC),
 * from an unspecified origin (boot). Never fails. Any thread. */
uint64_t jn_time_mono_ns(void);

/* jn_time_mono_ms: milliseconds on the same clock as jn_time_mono_ns.
 * Any thread. */
uint64_t jn_time_mono_ms(void);

/* jn_time_wall_us: microseconds since the Unix epoch (CLOCK_REALTIME); may
 * jump when the system clock is set. Any thread. */
int64_t jn_time_wall_us(void);

/* jn_time_format_wall: write wall_us (microseconds since the epoch) as local
 * time "YYYY-MM-DD HH:MM:SS.uuuuuu +ZZZZ" (the qdrouterd log timestamp) into
 * buf of buflen octets, NUL-terminated. Returns the number of characters
 * written (without the NUL), or JN_ERANGE when buflen is too small
 * (JN_TIME_WALL_TEXT_MAX always suffices) or JN_EINVAL when the time cannot
 * be converted. Any thread; keeps a per-thread cache of the last second
 * formatted, so consecutive calls within one second cost no time-zone work. */
int jn_time_format_wall(int64_t wall_us, char *buf, size_t buflen);

#endif /* JUNCTION_TIME_H */
