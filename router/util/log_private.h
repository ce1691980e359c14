/*
 * log_private.h — what log.c (emitting lines, the ring) and log_config.c
 * (names, enable strings, settings, outputs) share. Not a public header.
 */
#ifndef JUNCTION_LOG_PRIVATE_H
#define JUNCTION_LOG_PRIVATE_H 1

#include <junction/log.h>

/* Layout of jn_log_state_[module], the module's effective settings in one
 * atomic word, so a writer sees one consistent set:
 *   bits 0-6   enable mask (bit = 1 << level)
 *   bit 8      includeTimestamp
 *   bit 9      includeSource
 *   bits 16-23 index of the output in jn_log_sinks_ */
#define LOG_ST_MASK       0x7fu
#define LOG_ST_TIMESTAMP  (1u << 8)
#define LOG_ST_SOURCE     (1u << 9)
#define LOG_ST_SINK_SHIFT 16
#define LOG_ST_SINK(st)   (((st) >> LOG_ST_SINK_SHIFT) & 0xffu)

/* Outputs. Entries [0, 3) are stderr, stdout and syslog; files follow.
 * An entry is filled under the configuration lock before any state word
 * names it (the state word is stored with release order and loaded with
 * acquire order by writers), and then stays unchanged until
 * jn_log_shutdown; jn_log_reopen only dup2()s a new open file onto fd. */
#define LOG_SINK_MAX        32
#define LOG_SINK_STDERR     0
#define LOG_SINK_STDOUT     1
#define LOG_SINK_SYSLOG     2
#define LOG_SINK_FIRST_FILE 3

typedef struct log_sink {
    const char *name; /* "stderr", "stdout", "syslog" or the file path */
    int fd;           /* -1 for syslog */
    bool owned;       /* name was allocated and fd opened by us */
} log_sink_t;

extern log_sink_t jn_log_sinks_[LOG_SINK_MAX];

/* jn_log_ring_reset_: empty the ring and zero the per-level counts (log.c;
 * called by jn_log_shutdown). */
void jn_log_ring_reset_(void);

#endif /* JUNCTION_LOG_PRIVATE_H */
