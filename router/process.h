/*
 * process.h — what junctiond does as a Unix process, apart from routing:
 * the descriptor limit, absolute paths, the pid file, daemonising, the
 * service manager (systemd's notify socket and watchdog) and running as
 * another user. router/process.c; used by router/main.c only. Every
 * function runs on the main thread, at start or stop, unless it says
 * otherwise.
 */
#ifndef JN_PROCESS_H
#define JN_PROCESS_H 1

#include <stdint.h>
#include <sys/types.h>

/* The user -U names, looked up before anything starts. */
typedef struct jn_run_as {
    uid_t uid;
    gid_t gid;
    char name[64];
} jn_run_as_t;

/* Raise the soft file-descriptor limit to the hard one (logged; failure is
 * not fatal). */
void jn_process_raise_fd_limit(void);
/* path made absolute against the working directory: malloc'd, or NULL on
 * ENOMEM. */
char *jn_process_absolute_path(const char *path);
/* The process id written to path whole (through path.tmp and a rename):
 * 0, or -1 with a line on stderr. */
int jn_process_write_pid_file(const char *path);
/* Fork into the background, detach, standard streams to /dev/null: 0 in
 * the child (the parent exits), -1 on failure (printed). */
int jn_process_daemonize(void);
/* Tell the service manager state ("READY=1", "STOPPING=1", "WATCHDOG=1");
 * a no-op without one or without libsystemd. Any thread. */
void jn_process_notify(const char *state);
/* systemd's WatchdogSec for this process in microseconds; 0: none. */
uint64_t jn_process_watchdog_usec(void);
/* The user named by a name or numeric id into *out: 0, or -1 (printed). */
int jn_process_lookup_user(const char *user, jn_run_as_t *out);
/* Become that user (its groups, group, then user id; every thread): 0, or
 * -1 (logged), and the router then stops. */
int jn_process_drop_privileges(const jn_run_as_t *as);

#endif /* JN_PROCESS_H */
