/*
 * junction/log.h — qdrouterd-compatible logging: modules, levels, the
 * `log` entity's settings (enable, includeTimestamp, includeSource,
 * outputFile), and the ring of recent entries behind GET-LOG.
 *
 * A line looks like qdrouterd's:
 *   2024-05-01 12:00:00.123456 +0200 ROUTER_CORE (info) text (core.c:42)
 * The timestamp is there when includeTimestamp is on, the source when
 * includeSource is on. Each line goes to its output in one write(), so lines
 * written by different threads never interleave. Lines about a connection,
 * link or delivery start their text with "[C12][L3][D45]" (STYLE.md); that
 * prefix is the caller's.
 *
 * Settings: every module has its own enable mask, output, includeTimestamp
 * and includeSource, each of which is either set or inherited from the
 * DEFAULT module (whose own defaults are: info and above, stderr, timestamp
 * on, source off — qdrouterd 1.19's). Settings may change at any time from
 * any thread while other threads log: the filter reads one atomic word per
 * module.
 *
 * Threads: every function may be called from any thread, unless it says
 * otherwise. Logging may block on the output (a full pipe, a slow disk).
 */
#ifndef JUNCTION_LOG_H
#define JUNCTION_LOG_H 1

#include <junction/common.h>
#include <log_modules.h> /* generated from router/config/schema.json */
#include <stdarg.h>
#include <stdatomic.h>

/* Modules: the values of the `log` entity's `module` enum in the schema
 * (router/config/schema.json), in its order -- the build generates
 * JN_LOG_SCHEMA_MODULES from it, so JN_LOG_MOD_HTTP exists because the
 * schema lists HTTP -- then MAIN (used by junctiond's main; qdrouterd 1.19
 * logs its start-up failure as MAIN, but MAIN is not in the schema's enum,
 * so it cannot be configured through a `log` entity: it always follows
 * DEFAULT there). */
typedef enum jn_log_module {
#define JN_LOG_MOD_ENUM_(name) JN_LOG_MOD_##name,
    JN_LOG_SCHEMA_MODULES(JN_LOG_MOD_ENUM_)
#undef JN_LOG_MOD_ENUM_
    JN_LOG_MOD_MAIN,
    JN_LOG_MODULE_COUNT
} jn_log_module_t;

/* Number of modules the schema's `log.module` enum lists (all but MAIN). */
#define JN_LOG_SCHEMA_MODULE_COUNT JN_LOG_MOD_MAIN

/* Levels, lowest first. */
typedef enum jn_log_level {
    JN_LOG_TRACE,
    JN_LOG_DEBUG,
    JN_LOG_INFO,
    JN_LOG_NOTICE,
    JN_LOG_WARNING,
    JN_LOG_ERROR,
    JN_LOG_CRITICAL,
    JN_LOG_LEVEL_COUNT
} jn_log_level_t;

/* Enable masks: bit (1 << level) per enabled level. */
#define JN_LOG_MASK(level)           (1u << (level))
#define JN_LOG_MASK_ALL              0x7fu
#define JN_LOG_MASK_AND_ABOVE(level) (JN_LOG_MASK_ALL & ~(JN_LOG_MASK(level) - 1u))
/* Not a level: "use the DEFAULT module's mask" (the enable word `default`). */
#define JN_LOG_MASK_INHERIT 0x80u

/* Tri-state for includeTimestamp / includeSource setters. */
#define JN_LOG_INHERIT (-1)

/* JN_LOG_TEXT_MAX: octets of formatted text kept per line (longer text is
 * cut and ends in "..."). JN_LOG_RING_SIZE: entries kept for GET-LOG
 * (qdrouterd 1.19 keeps 1000). */
#define JN_LOG_TEXT_MAX  2048
#define JN_LOG_RING_SIZE 1000

/* Per-module state word, private to log.c; read only through
 * jn_log_enabled. Atomic: written under log.c's configuration lock. */
extern atomic_uint jn_log_state_[JN_LOG_MODULE_COUNT];

/* jn_log_enabled: would a line of this module and level be written?
 * module and level must be valid enum values. Any thread. Hot path: one
 * relaxed atomic load (a plain load), a shift and a test. */
static inline bool jn_log_enabled(jn_log_module_t module, jn_log_level_t level)
{
    return (atomic_load_explicit(&jn_log_state_[module], memory_order_relaxed) >> level) & 1u;
}

/* ---- protocol trace of single connections (log_trace.c) ----
 *
 * A connection's AMQP frames are written to the PROTOCOL module at trace
 * level while that level is enabled, unless management chose otherwise for
 * that connection (an UPDATE of its enableProtocolTrace): then as it chose,
 * whatever the module's level. */

/* jn_log_conn_trace_set: trace connection conn_id's frames (on) or not
 * (off), whatever the PROTOCOL level. Returns 0, or JN_EOVERFLOW when 64
 * connections have a choice of their own already. Any thread. */
int jn_log_conn_trace_set(uint64_t conn_id, bool on);

/* jn_log_conn_trace_forget: conn_id is closed: drop its choice. */
void jn_log_conn_trace_forget(uint64_t conn_id);

/* jn_log_conn_traced: conn_id's choice: 1 on, 0 off, -1 none (follow the
 * level). Takes a mutex: call it only when jn_log_conn_trace_gen changed
 * or to show the choice. Any thread. */
int jn_log_conn_traced(uint64_t conn_id);

/* Private to log_trace.c; read through jn_log_conn_trace_gen. */
extern atomic_uint jn_log_conn_trace_gen_;

/* jn_log_conn_trace_gen: a number that changes whenever the set of traced
 * connections does. Any thread; one relaxed load. */
static inline unsigned jn_log_conn_trace_gen(void)
{
    return atomic_load_explicit(&jn_log_conn_trace_gen_, memory_order_acquire);
}

/* JN_LOG(module, level, fmt, ...): log a printf-style line. The level is
 * checked first, so the arguments are not evaluated when it is disabled.
 * (A macro, not an inline function, because of that.) */
#define JN_LOG(module, level, ...)                                                                 \
    do {                                                                                           \
        if (JN_UNLIKELY(jn_log_enabled((module), (level))))                                        \
            jn_log_write((module), (level), __FILE__, __LINE__, __VA_ARGS__);                      \
    } while (0)

/* jn_log_write: format and emit one line now, without checking the level
 * (JN_LOG checks it). file is borrowed for the process lifetime (__FILE__;
 * only its last path component is shown) and may be NULL; line is its line
 * number. Counts the line for jn_log_get_counts, writes it to the module's
 * output and keeps it in the ring. errno is preserved. Output errors are
 * ignored (there is nowhere to report them). Any thread. */
void jn_log_write(jn_log_module_t module, jn_log_level_t level, const char *file, int line,
                  const char *fmt, ...) JN_PRINTF(5, 6);

/* jn_log_vwrite: jn_log_write with a va_list. */
void jn_log_vwrite(jn_log_module_t module, jn_log_level_t level, const char *file, int line,
                   const char *fmt, va_list ap) JN_PRINTF(5, 0);

/* jn_log_module_name: "ROUTER_CORE" etc. (static; "?" when out of range). */
const char *jn_log_module_name(jn_log_module_t module);

/* jn_log_module_from_name: the module named name (NUL-terminated, compared
 * case-insensitively), as a non-negative jn_log_module_t; JN_EINVAL when
 * unknown or NULL. "MAIN" is accepted (callers validating a `log` entity
 * check the result against JN_LOG_SCHEMA_MODULE_COUNT). */
int jn_log_module_from_name(const char *name);

/* jn_log_level_name: "trace" … "critical" (static; "?" when out of range). */
const char *jn_log_level_name(jn_log_level_t level);

/* jn_log_level_from_name: the level whose name equals name
 * (case-insensitive, whole word), or JN_EINVAL. */
int jn_log_level_from_name(const char *name);

/* jn_log_parse_enable: parse an `enable` string into *mask_out.
 * Words are separated by ',', ';', ':' or blanks; each is a level name, or
 * `none` (no level), or `default` (JN_LOG_MASK_INHERIT); a trailing '+'
 * means that level and every higher one. As in qdrouterd, a word matches the
 * first of trace, debug, info, notice, warning, error, critical, none,
 * default of which it is a case-insensitive prefix ("INF+" is "info+").
 * Returns 0, or JN_EINVAL for a word that matches nothing (or a lone '+'),
 * in which case, if err is not NULL, a NUL-terminated message naming the
 * word is written to err (errlen octets, cut to fit). text NULL → JN_EINVAL. */
int jn_log_parse_enable(const char *text, unsigned *mask_out, char *err, size_t errlen);

/* jn_log_mask_format: write mask as an enable string ("info+",
 * "trace,debug,warning+", "none", "default") into buf (buflen octets,
 * NUL-terminated). Returns its length, or JN_ERANGE when buf is too small
 * (32 octets always suffice). */
int jn_log_mask_format(unsigned mask, char *buf, size_t buflen);

/* jn_log_set_enable: parse text (as jn_log_parse_enable) and make it the
 * module's enable mask; "default" makes the module follow DEFAULT again (for
 * DEFAULT itself: back to info+). Changing DEFAULT changes every module that
 * follows it. Returns 0 or JN_EINVAL (err as jn_log_parse_enable; the
 * setting is unchanged). */
int jn_log_set_enable(jn_log_module_t module, const char *text, char *err, size_t errlen);

/* jn_log_set_mask: as jn_log_set_enable with a parsed mask (JN_LOG_MASK_*).
 * Returns 0, or JN_EINVAL for bits outside JN_LOG_MASK_ALL|INHERIT or an
 * invalid module. */
int jn_log_set_mask(jn_log_module_t module, unsigned mask);

/* jn_log_set_include_timestamp / jn_log_set_include_source: value 1 (on), 0
 * (off) or JN_LOG_INHERIT (follow DEFAULT; for DEFAULT: back to its
 * built-in default, timestamp on, source off). Returns 0 or JN_EINVAL for
 * any other value or an invalid module. */
int jn_log_set_include_timestamp(jn_log_module_t module, int value);
int jn_log_set_include_source(jn_log_module_t module, int value);

/* jn_log_set_output: where the module's lines go: "stderr", "stdout",
 * "syslog", or a file path (opened for appending, created 0644 if absent;
 * modules naming the same path share one descriptor). NULL: follow DEFAULT
 * (for DEFAULT: stderr). Files stay open until jn_log_shutdown even when no
 * module uses them any more, because another thread may be writing to them.
 * Returns 0; JN_EINVAL for "" or a file that cannot be opened (err, if not
 * NULL, says why); JN_EOVERFLOW when 29 distinct files are already open;
 * JN_ENOMEM. On error the setting is unchanged. */
int jn_log_set_output(jn_log_module_t module, const char *output, char *err, size_t errlen);

/* A module's settings, for management READ. */
typedef struct jn_log_config {
    unsigned mask;          /* effective enable mask (no INHERIT bit) */
    bool include_timestamp; /* effective */
    bool include_source;    /* effective */
    const char *output;     /* effective output name; valid until jn_log_shutdown */
    bool enable_set;        /* each: set on this module (false: follows DEFAULT) */
    bool timestamp_set;
    bool source_set;
    bool output_set;
} jn_log_config_t;

/* jn_log_get_config: fill *out for module. Returns 0 or JN_EINVAL for an
 * invalid module. */
int jn_log_get_config(jn_log_module_t module, jn_log_config_t *out);

/* jn_log_get_counts: counts[level] = lines written for module at each level
 * since start (logStats' traceCount … criticalCount). Returns 0 or
 * JN_EINVAL for an invalid module. */
int jn_log_get_counts(jn_log_module_t module, uint64_t counts[JN_LOG_LEVEL_COUNT]);

/* One entry of the ring, as handed to a jn_log_recent callback. text and
 * file are valid only during the callback (file may be NULL). */
typedef struct jn_log_entry {
    jn_log_module_t module;
    jn_log_level_t level;
    const char *text; /* without timestamp, module, level or source */
    const char *file; /* last path component of the source file, or NULL */
    int line;
    int64_t time_us; /* wall clock, microseconds since the epoch */
} jn_log_entry_t;

/* jn_log_recent: call fn(entry, ctx) for the most recent `limit` entries of
 * the ring (all kept when limit is 0), oldest first. The entries are copied
 * first, so fn runs without any lock held and may log (its lines are not
 * part of this walk). Returns the number of entries passed to fn, or
 * JN_ENOMEM. Any thread (the management agent on the core thread). */
int jn_log_recent(size_t limit, void (*fn)(const jn_log_entry_t *entry, void *ctx), void *ctx);

/* jn_log_reopen: reopen every output file by its path (after log rotation),
 * keeping the descriptors modules use. Returns 0, or the first JN_EINVAL
 * (err says which file; the others are still reopened). Any thread. */
int jn_log_reopen(char *err, size_t errlen);

/* jn_log_shutdown: close output files, empty the ring, zero the counts and
 * put every setting back to its default (all modules follow DEFAULT: info+,
 * stderr, timestamp on, source off). Main thread, when no other thread logs
 * (tests call it between cases). */
void jn_log_shutdown(void);

#endif /* JUNCTION_LOG_H */
