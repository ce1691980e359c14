/*
 * log_config.c — the `log` entity's side of logging: module and level names,
 * enable strings, and each module's settings (junction/log.h).
 *
 * Each module has configured settings (each one set, or following DEFAULT)
 * kept here under a mutex, and an effective state word (log_private.h) that
 * writers read without a lock. Every change recomputes the effective word of
 * every module — there are 18 — and publishes it with a release store, so a
 * thread that is logging at that moment sees either the old or the new
 * settings, never a mix. The mutex only serialises configuration changes
 * (start-up, management UPDATE), never logging.
 */
#include "log_private.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* DEFAULT's built-in settings (qdrouterd 1.19: info+, timestamp, stderr). */
#define BUILTIN_MASK  JN_LOG_MASK_AND_ABOVE(JN_LOG_INFO)
#define BUILTIN_STATE (BUILTIN_MASK | LOG_ST_TIMESTAMP | (LOG_SINK_STDERR << LOG_ST_SINK_SHIFT))

_Static_assert(JN_LOG_MODULE_COUNT == 18, "update jn_log_state_'s initialiser");

#define BUILTIN_STATE_(name) BUILTIN_STATE,
atomic_uint jn_log_state_[JN_LOG_MODULE_COUNT] = {
    JN_LOG_SCHEMA_MODULES(BUILTIN_STATE_) BUILTIN_STATE /* MAIN */
};
#undef BUILTIN_STATE_

log_sink_t jn_log_sinks_[LOG_SINK_MAX] = {
    [LOG_SINK_STDERR] = {"stderr", 2, false},
    [LOG_SINK_STDOUT] = {"stdout", 1, false},
    [LOG_SINK_SYSLOG] = {"syslog", -1, false},
};

#define MODULE_NAME_(name) #name,
static const char *const module_names[JN_LOG_MODULE_COUNT] = {
    JN_LOG_SCHEMA_MODULES(MODULE_NAME_) "MAIN"
};
#undef MODULE_NAME_

static const char *const level_names[JN_LOG_LEVEL_COUNT] = {
    "trace", "debug", "info", "notice", "warning", "error", "critical",
};

/* Words of an enable string, in qdrouterd's matching order. */
enum { WORD_NONE = JN_LOG_LEVEL_COUNT, WORD_DEFAULT, WORD_COUNT };
static const char *const enable_words[WORD_COUNT] = {
    "trace", "debug", "info", "notice", "warning", "error", "critical", "none", "default",
};

/* Configured settings of one module; all false/0 = follows DEFAULT. */
typedef struct module_conf {
    bool mask_set, timestamp_set, source_set, sink_set;
    unsigned mask;
    bool timestamp, source;
    unsigned sink;
} module_conf_t;

/* Guards conf[], sink_count and writes of jn_log_sinks_ / jn_log_state_. */
static pthread_mutex_t conf_lock = PTHREAD_MUTEX_INITIALIZER;
static module_conf_t conf[JN_LOG_MODULE_COUNT];
static unsigned sink_count = LOG_SINK_FIRST_FILE;

const char *jn_log_module_name(jn_log_module_t module)
{
    if ((unsigned)module >= JN_LOG_MODULE_COUNT)
        return "?";
    return module_names[module];
}

int jn_log_module_from_name(const char *name)
{
    if (!name)
        return JN_EINVAL;
    for (int m = 0; m < JN_LOG_MODULE_COUNT; m++) {
        if (strcasecmp(name, module_names[m]) == 0)
            return m;
    }
    return JN_EINVAL;
}

const char *jn_log_level_name(jn_log_level_t level)
{
    if ((unsigned)level >= JN_LOG_LEVEL_COUNT)
        return "?";
    return level_names[level];
}

int jn_log_level_from_name(const char *name)
{
    if (!name)
        return JN_EINVAL;
    for (int l = 0; l < JN_LOG_LEVEL_COUNT; l++) {
        if (strcasecmp(name, level_names[l]) == 0)
            return l;
    }
    return JN_EINVAL;
}

/* The first enable word that word[0..len) is a prefix of, or -1. */
static int match_enable_word(const char *word, size_t len)
{
    for (int i = 0; i < WORD_COUNT; i++) {
        if (len <= strlen(enable_words[i]) && strncasecmp(word, enable_words[i], len) == 0)
            return i;
    }
    return -1;
}

static void set_error(char *err, size_t errlen, const char *what, const char *word, size_t len)
{
    if (err && errlen > 0)
        snprintf(err, errlen, "%s '%.*s'", what, (int)(len > 200 ? 200 : len), word);
}

int jn_log_parse_enable(const char *text, unsigned *mask_out, char *err, size_t errlen)
{
    if (!text) {
        set_error(err, errlen, "no enable string", "", 0);
        return JN_EINVAL;
    }
    static const char separators[] = ",;: \t\r\n";
    unsigned mask = 0;
    const char *p = text;
    while (*p) {
        p += strspn(p, separators);
        size_t len = strcspn(p, separators);
        if (len == 0)
            break;
        const char *word = p;
        p += len;
        bool and_above = word[len - 1] == '+';
        size_t name_len = and_above ? len - 1 : len;
        int w = name_len > 0 ? match_enable_word(word, name_len) : -1;
        if (w < 0) {
            set_error(err, errlen, "unknown log level", word, len);
            return JN_EINVAL;
        }
        if (w == WORD_DEFAULT)
            mask |= JN_LOG_MASK_INHERIT;
        else if (w < JN_LOG_LEVEL_COUNT)
            mask |= and_above ? JN_LOG_MASK_AND_ABOVE(w) : JN_LOG_MASK(w);
        /* WORD_NONE adds nothing. */
    }
    if (mask_out)
        *mask_out = mask;
    return 0;
}

/* Append s to buf at *pos (keeping a NUL); false when it does not fit. */
static bool append(char *buf, size_t buflen, size_t *pos, const char *s)
{
    size_t n = strlen(s);
    if (*pos + n + 1 > buflen)
        return false;
    memcpy(buf + *pos, s, n + 1);
    *pos += n;
    return true;
}

int jn_log_mask_format(unsigned mask, char *buf, size_t buflen)
{
    size_t pos = 0;
    if (buflen == 0)
        return JN_ERANGE;
    buf[0] = '\0';
    if (mask & JN_LOG_MASK_INHERIT)
        return append(buf, buflen, &pos, "default") ? (int)pos : JN_ERANGE;
    mask &= JN_LOG_MASK_ALL;
    if (mask == 0)
        return append(buf, buflen, &pos, "none") ? (int)pos : JN_ERANGE;

    /* The levels from `above` up to critical are all set: write "x+". */
    int above = JN_LOG_LEVEL_COUNT;
    while (above > 0 && (mask & JN_LOG_MASK(above - 1)))
        above--;
    if (above == JN_LOG_CRITICAL)
        above = JN_LOG_LEVEL_COUNT; /* critical alone reads better as "critical" */
    for (int l = 0; l < above && l < JN_LOG_LEVEL_COUNT; l++) {
        if (!(mask & JN_LOG_MASK(l)))
            continue;
        if ((pos > 0 && !append(buf, buflen, &pos, ",")) ||
            !append(buf, buflen, &pos, level_names[l]))
            return JN_ERANGE;
    }
    if (above < JN_LOG_LEVEL_COUNT) {
        if ((pos > 0 && !append(buf, buflen, &pos, ",")) ||
            !append(buf, buflen, &pos, level_names[above]) || !append(buf, buflen, &pos, "+"))
            return JN_ERANGE;
    }
    return (int)pos;
}

/* Recompute and publish every module's state word. conf_lock held. */
static void publish_locked(void)
{
    const module_conf_t *d = &conf[JN_LOG_MOD_DEFAULT];
    unsigned dmask = d->mask_set ? d->mask : BUILTIN_MASK;
    bool dts = d->timestamp_set ? d->timestamp : true;
    bool dsrc = d->source_set ? d->source : false;
    unsigned dsink = d->sink_set ? d->sink : LOG_SINK_STDERR;

    for (int m = 0; m < JN_LOG_MODULE_COUNT; m++) {
        const module_conf_t *c = &conf[m];
        unsigned st = c->mask_set ? c->mask : dmask;
        if (c->timestamp_set ? c->timestamp : dts)
            st |= LOG_ST_TIMESTAMP;
        if (c->source_set ? c->source : dsrc)
            st |= LOG_ST_SOURCE;
        st |= (c->sink_set ? c->sink : dsink) << LOG_ST_SINK_SHIFT;
        atomic_store_explicit(&jn_log_state_[m], st, memory_order_release);
    }
}

int jn_log_set_mask(jn_log_module_t module, unsigned mask)
{
    if ((unsigned)module >= JN_LOG_MODULE_COUNT ||
        (mask & ~(JN_LOG_MASK_ALL | JN_LOG_MASK_INHERIT)))
        return JN_EINVAL;
    pthread_mutex_lock(&conf_lock);
    conf[module].mask_set = !(mask & JN_LOG_MASK_INHERIT);
    conf[module].mask = mask & JN_LOG_MASK_ALL;
    publish_locked();
    pthread_mutex_unlock(&conf_lock);
    return 0;
}

int jn_log_set_enable(jn_log_module_t module, const char *text, char *err, size_t errlen)
{
    unsigned mask;
    if ((unsigned)module >= JN_LOG_MODULE_COUNT) {
        set_error(err, errlen, "unknown log module", "", 0);
        return JN_EINVAL;
    }
    int rc = jn_log_parse_enable(text, &mask, err, errlen);
    if (rc < 0)
        return rc;
    return jn_log_set_mask(module, mask);
}

/* Shared body of the two boolean setters. */
static int set_flag(jn_log_module_t module, int value, bool source)
{
    if ((unsigned)module >= JN_LOG_MODULE_COUNT ||
        (value != 0 && value != 1 && value != JN_LOG_INHERIT))
        return JN_EINVAL;
    pthread_mutex_lock(&conf_lock);
    module_conf_t *c = &conf[module];
    if (source) {
        c->source_set = value != JN_LOG_INHERIT;
        c->source = value == 1;
    } else {
        c->timestamp_set = value != JN_LOG_INHERIT;
        c->timestamp = value == 1;
    }
    publish_locked();
    pthread_mutex_unlock(&conf_lock);
    return 0;
}

int jn_log_set_include_timestamp(jn_log_module_t module, int value)
{
    return set_flag(module, value, false);
}

int jn_log_set_include_source(jn_log_module_t module, int value)
{
    return set_flag(module, value, true);
}

/* Find or open the sink named output; its index, or a negative code.
 * conf_lock held. */
static int sink_find_or_open_locked(const char *output, char *err, size_t errlen)
{
    for (unsigned i = 0; i < sink_count; i++) {
        if (strcmp(jn_log_sinks_[i].name, output) == 0)
            return (int)i;
    }
    if (sink_count >= LOG_SINK_MAX) {
        set_error(err, errlen, "too many log files open; cannot open", output, strlen(output));
        return JN_EOVERFLOW;
    }
    char *name = strdup(output);
    if (!name)
        return JN_ENOMEM;
    int fd = open(output, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (err && errlen > 0)
            snprintf(err, errlen, "cannot open log file '%s': %s", output, strerror(errno));
        free(name);
        return JN_EINVAL;
    }
    jn_log_sinks_[sink_count] = (log_sink_t){name, fd, true};
    return (int)sink_count++;
}

int jn_log_set_output(jn_log_module_t module, const char *output, char *err, size_t errlen)
{
    if ((unsigned)module >= JN_LOG_MODULE_COUNT) {
        set_error(err, errlen, "unknown log module", "", 0);
        return JN_EINVAL;
    }
    if (output && output[0] == '\0') {
        set_error(err, errlen, "empty log output", "", 0);
        return JN_EINVAL;
    }
    pthread_mutex_lock(&conf_lock);
    int rc = 0;
    if (output) {
        rc = sink_find_or_open_locked(output, err, errlen);
        if (rc >= 0) {
            conf[module].sink_set = true;
            conf[module].sink = (unsigned)rc;
            rc = 0;
        }
    } else {
        conf[module].sink_set = false;
    }
    if (rc == 0)
        publish_locked();
    pthread_mutex_unlock(&conf_lock);
    return rc;
}

int jn_log_get_config(jn_log_module_t module, jn_log_config_t *out)
{
    if ((unsigned)module >= JN_LOG_MODULE_COUNT)
        return JN_EINVAL;
    pthread_mutex_lock(&conf_lock);
    unsigned st = atomic_load_explicit(&jn_log_state_[module], memory_order_acquire);
    const module_conf_t *c = &conf[module];
    out->mask = st & LOG_ST_MASK;
    out->include_timestamp = (st & LOG_ST_TIMESTAMP) != 0;
    out->include_source = (st & LOG_ST_SOURCE) != 0;
    out->output = jn_log_sinks_[LOG_ST_SINK(st)].name;
    out->enable_set = c->mask_set;
    out->timestamp_set = c->timestamp_set;
    out->source_set = c->source_set;
    out->output_set = c->sink_set;
    pthread_mutex_unlock(&conf_lock);
    return 0;
}

int jn_log_reopen(char *err, size_t errlen)
{
    int first = 0;
    pthread_mutex_lock(&conf_lock);
    for (unsigned i = LOG_SINK_FIRST_FILE; i < sink_count; i++) {
        log_sink_t *s = &jn_log_sinks_[i];
        int fd = open(s->name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            if (first == 0 && err && errlen > 0)
                snprintf(err, errlen, "cannot reopen log file '%s': %s", s->name, strerror(errno));
            if (first == 0)
                first = JN_EINVAL;
            continue;
        }
        /* dup2 swaps the file under the same descriptor number atomically,
         * so threads writing concurrently never see a closed descriptor. */
        if (dup2(fd, s->fd) < 0 && first == 0) {
            if (err && errlen > 0)
                snprintf(err, errlen, "cannot reopen log file '%s': %s", s->name, strerror(errno));
            first = JN_EINVAL;
        }
        close(fd);
    }
    pthread_mutex_unlock(&conf_lock);
    return first;
}

void jn_log_shutdown(void)
{
    pthread_mutex_lock(&conf_lock);
    memset(conf, 0, sizeof(conf));
    publish_locked(); /* nobody names a file sink any more */
    for (unsigned i = LOG_SINK_FIRST_FILE; i < sink_count; i++) {
        log_sink_t *s = &jn_log_sinks_[i];
        if (s->owned) {
            close(s->fd);
            free((char *)s->name);
        }
        *s = (log_sink_t){NULL, -1, false};
    }
    sink_count = LOG_SINK_FIRST_FILE;
    pthread_mutex_unlock(&conf_lock);
    jn_log_ring_reset_();
}
