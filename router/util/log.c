/*
 * log.c — emitting log lines and keeping the recent ones (junction/log.h).
 *
 * JN_LOG has already checked the module's mask (one relaxed load) before
 * anything here runs, so this file is only reached for lines that will be
 * written. A line is formatted into a stack buffer and leaves in a single
 * write() (or syslog() call), which is what keeps lines from different
 * threads whole. Settings come from log_config.c through the module's state
 * word, loaded once per line so the line is consistent.
 *
 * The ring of recent entries (for management GET-LOG) is guarded by a
 * mutex: it is taken once per emitted line, which already costs a write()
 * system call, and by the management agent's reads; never by the level
 * check. Texts are copied with malloc before the lock is taken and the
 * replaced text is freed after it is released, so the lock covers only
 * pointer moves.
 */
#include "log_private.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <junction/time.h>

/* Lines written per module and level (logStats); relaxed atomic counters. */
static _Atomic uint64_t counts[JN_LOG_MODULE_COUNT][JN_LOG_LEVEL_COUNT];

typedef struct ring_slot {
    jn_log_module_t module;
    jn_log_level_t level;
    char *text; /* malloc'd; NULL if the copy failed */
    const char *file;
    int line;
    int64_t time_us;
} ring_slot_t;

/* ring_lock guards ring (allocated on first use), ring_next, ring_count. */
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static ring_slot_t *ring;
static size_t ring_next;  /* slot the next entry goes to */
static size_t ring_count; /* entries kept, <= JN_LOG_RING_SIZE */

static int syslog_priority(jn_log_level_t level)
{
    switch (level) {
    case JN_LOG_TRACE:
    case JN_LOG_DEBUG:
        return LOG_DEBUG;
    case JN_LOG_INFO:
        return LOG_INFO;
    case JN_LOG_NOTICE:
        return LOG_NOTICE;
    case JN_LOG_WARNING:
        return LOG_WARNING;
    case JN_LOG_ERROR:
        return LOG_ERR;
    default:
        return LOG_CRIT;
    }
}

/* The last path component of file, or NULL. */
static const char *base_name(const char *file)
{
    if (!file)
        return NULL;
    const char *slash = strrchr(file, '/');
    return slash ? slash + 1 : file;
}

/* Write all of buf to fd (retrying short writes and EINTR; other errors
 * drop the line). */
static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        buf += n;
        len -= (size_t)n;
    }
}

/* Compose the full line for state word st and send it to its output. */
static void emit_line(jn_log_module_t module, jn_log_level_t level, unsigned st, const char *text,
                      const char *file, int line, int64_t now_us)
{
    char buf[JN_LOG_TEXT_MAX + 512];
    size_t pos = 0;
    if (st & LOG_ST_TIMESTAMP) {
        int n = jn_time_format_wall(now_us, buf, sizeof(buf));
        if (n > 0) {
            pos = (size_t)n;
            buf[pos++] = ' ';
        }
    }
    int n = snprintf(buf + pos, sizeof(buf) - pos, "%s (%s) %s", jn_log_module_name(module),
                     jn_log_level_name(level), text);
    pos = n < 0 ? pos : pos + (size_t)n;
    if ((st & LOG_ST_SOURCE) && file && pos < sizeof(buf)) {
        n = snprintf(buf + pos, sizeof(buf) - pos, " (%s:%d)", file, line);
        pos = n < 0 ? pos : pos + (size_t)n;
    }
    if (pos > sizeof(buf) - 2) /* cut: keep room for the newline */
        pos = sizeof(buf) - 2;
    buf[pos] = '\0';

    const log_sink_t *sink = &jn_log_sinks_[LOG_ST_SINK(st)];
    if (LOG_ST_SINK(st) == LOG_SINK_SYSLOG) {
        syslog(syslog_priority(level), "%s", buf);
        return;
    }
    buf[pos++] = '\n';
    write_all(sink->fd, buf, pos);
}

/* Keep the entry in the ring, replacing the oldest when full. */
static void ring_add(jn_log_module_t module, jn_log_level_t level, const char *text,
                     const char *file, int line, int64_t now_us)
{
    char *copy = strdup(text);
    char *old = NULL;
    pthread_mutex_lock(&ring_lock);
    if (!ring)
        ring = calloc(JN_LOG_RING_SIZE, sizeof(*ring));
    if (ring) {
        ring_slot_t *s = &ring[ring_next];
        old = s->text;
        *s = (ring_slot_t){module, level, copy, file, line, now_us};
        copy = NULL;
        ring_next = (ring_next + 1) % JN_LOG_RING_SIZE;
        if (ring_count < JN_LOG_RING_SIZE)
            ring_count++;
    }
    pthread_mutex_unlock(&ring_lock);
    free(old);
    free(copy);
}

void jn_log_vwrite(jn_log_module_t module, jn_log_level_t level, const char *file, int line,
                   const char *fmt, va_list ap)
{
    if ((unsigned)module >= JN_LOG_MODULE_COUNT || (unsigned)level >= JN_LOG_LEVEL_COUNT)
        return;
    int saved_errno = errno;
    int64_t now = jn_time_wall_us();

    char text[JN_LOG_TEXT_MAX];
    int n = fmt ? vsnprintf(text, sizeof(text), fmt, ap) : -1;
    if (n < 0)
        snprintf(text, sizeof(text), "(unformattable log text)");
    else if ((size_t)n >= sizeof(text))
        memcpy(text + sizeof(text) - 4, "...", 4);
    /* Texts carry what peers sent (addresses, container ids, user names):
     * a line break or another control octet there could forge log lines
     * or terminal escapes, so each is written as '?' (a tab stays) and an
     * entry is always one line. */
    for (char *p = text; *p; p++)
        if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
            *p = '?';

    atomic_fetch_add_explicit(&counts[module][level], 1, memory_order_relaxed);
    unsigned st = atomic_load_explicit(&jn_log_state_[module], memory_order_acquire);
    const char *base = base_name(file);
    emit_line(module, level, st, text, base, line, now);
    ring_add(module, level, text, base, line, now);
    errno = saved_errno;
}

void jn_log_write(jn_log_module_t module, jn_log_level_t level, const char *file, int line,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    jn_log_vwrite(module, level, file, line, fmt, ap);
    va_end(ap);
}

int jn_log_get_counts(jn_log_module_t module, uint64_t out[JN_LOG_LEVEL_COUNT])
{
    if ((unsigned)module >= JN_LOG_MODULE_COUNT)
        return JN_EINVAL;
    for (int l = 0; l < JN_LOG_LEVEL_COUNT; l++)
        out[l] = atomic_load_explicit(&counts[module][l], memory_order_relaxed);
    return 0;
}

/* Copy the newest `want` entries (oldest first) into one allocation: the
 * entry array followed by their texts. ring_lock held. NULL on ENOMEM. */
static jn_log_entry_t *ring_copy_locked(size_t want)
{
    size_t first = (ring_next + JN_LOG_RING_SIZE - want) % JN_LOG_RING_SIZE;
    size_t text_octets = 0;
    for (size_t i = 0; i < want; i++) {
        const ring_slot_t *s = &ring[(first + i) % JN_LOG_RING_SIZE];
        text_octets += (s->text ? strlen(s->text) : 0) + 1;
    }
    jn_log_entry_t *copy = malloc(want * sizeof(*copy) + text_octets);
    if (!copy)
        return NULL;
    char *texts = (char *)(copy + want);
    for (size_t i = 0; i < want; i++) {
        const ring_slot_t *s = &ring[(first + i) % JN_LOG_RING_SIZE];
        size_t len = s->text ? strlen(s->text) : 0;
        memcpy(texts, s->text ? s->text : "", len + 1);
        copy[i] = (jn_log_entry_t){s->module, s->level, texts, s->file, s->line, s->time_us};
        texts += len + 1;
    }
    return copy;
}

int jn_log_recent(size_t limit, void (*fn)(const jn_log_entry_t *entry, void *ctx), void *ctx)
{
    pthread_mutex_lock(&ring_lock);
    size_t want = ring_count;
    if (limit > 0 && limit < want)
        want = limit;
    jn_log_entry_t *copy = want > 0 ? ring_copy_locked(want) : NULL;
    pthread_mutex_unlock(&ring_lock);
    if (want > 0 && !copy)
        return JN_ENOMEM;
    for (size_t i = 0; i < want; i++)
        fn(&copy[i], ctx);
    free(copy);
    return (int)want;
}

void jn_log_ring_reset_(void)
{
    pthread_mutex_lock(&ring_lock);
    ring_slot_t *old = ring;
    ring = NULL;
    ring_next = ring_count = 0;
    pthread_mutex_unlock(&ring_lock);
    if (old) {
        for (size_t i = 0; i < JN_LOG_RING_SIZE; i++)
            free(old[i].text);
        free(old);
    }
    for (int m = 0; m < JN_LOG_MODULE_COUNT; m++)
        for (int l = 0; l < JN_LOG_LEVEL_COUNT; l++)
            atomic_store_explicit(&counts[m][l], 0, memory_order_relaxed);
}
