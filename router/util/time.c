/*
 * time.c — clocks and the log timestamp format (junction/time.h).
 *
 * Formatting a local time needs the time zone, which glibc looks up under a
 * lock; log lines from one thread usually fall in the same second, so each
 * thread remembers the text of the last second it formatted and only
 * appends the microseconds when the second has not changed.
 */
#include <junction/time.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

uint64_t jn_time_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * JN_NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t jn_time_mono_ms(void)
{
    return jn_time_mono_ns() / JN_NS_PER_MS;
}

int64_t jn_time_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * JN_US_PER_S + ts.tv_nsec / 1000;
}

/* Per-thread cache of the last second formatted: "YYYY-MM-DD HH:MM:SS" and
 * " +ZZZZ". */
static _Thread_local struct {
    int64_t second; /* valid when date_len > 0 */
    int date_len;
    char date[32];
    char zone[16];
} tl_wall;

/* Fill tl_wall for the given second. Returns 0 or JN_EINVAL. */
static int wall_cache_fill(int64_t second)
{
    time_t t = (time_t)second;
    struct tm tm;
    if (!localtime_r(&t, &tm))
        return JN_EINVAL;
    size_t n = strftime(tl_wall.date, sizeof(tl_wall.date), "%Y-%m-%d %H:%M:%S", &tm);
    size_t z = strftime(tl_wall.zone, sizeof(tl_wall.zone), " %z", &tm);
    if (n == 0 || z == 0)
        return JN_EINVAL;
    tl_wall.second = second;
    tl_wall.date_len = (int)n;
    return 0;
}

int jn_time_format_wall(int64_t wall_us, char *buf, size_t buflen)
{
    int64_t second = wall_us / JN_US_PER_S;
    int64_t micros = wall_us % JN_US_PER_S;
    if (micros < 0) { /* before 1970: floor the division */
        micros += JN_US_PER_S;
        second -= 1;
    }
    if (tl_wall.date_len == 0 || tl_wall.second != second) {
        int rc = wall_cache_fill(second);
        if (rc < 0) {
            tl_wall.date_len = 0;
            return rc;
        }
    }
    int n = snprintf(buf, buflen, "%s.%06lld%s", tl_wall.date, (long long)micros, tl_wall.zone);
    if (n < 0)
        return JN_EINVAL;
    if ((size_t)n >= buflen)
        return JN_ERANGE;
    return n;
}
