/*
 * process.c — junctiond as a Unix process (process.h): the descriptor
 * limit, the pid file, daemonising, systemd's notify socket and watchdog
 * interval, and dropping privileges to the -U user. Nothing here routes.
 */
#include "process.h"

#include <junction/log.h>
#include <junction/pool.h> /* JN_POOL_ASAN: sanitizer builds */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#ifdef JN_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

/* ---- process ----------------------------------------------------------------- */

/* jn_process_raise_fd_limit: every connection takes a file descriptor, and the
 * I/O layer refuses connections near the soft limit (router/io/io.c); raise
 * the soft limit to the hard one so a router is not held to 1024 by a shell
 * default. Logged; failure is not fatal. */
void jn_process_raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_INFO, "File-descriptor limit raised from %llu to %llu",
               (unsigned long long)was, (unsigned long long)rl.rlim_cur);
}

/* jn_process_absolute_path: path made absolute against the working directory (the
 * pid file is written after --daemon changed to /). Returns a malloc'd
 * string, or NULL on ENOMEM. */
char *jn_process_absolute_path(const char *path)
{
    char cwd[4096];
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd))
        return strdup(path);
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%s", cwd, path);
    return out;
}

/* jn_process_write_pid_file: the process id into path, whole or not at all: written
 * to path.tmp, then renamed over path, so that whoever waits for the file
 * (a supervisor, a script) never reads it empty or half written. Returns
 * 0, or -1 with a line on stderr. Main thread, at start. */
int jn_process_write_pid_file(const char *path)
{
    size_t n = strlen(path) + 5;
    char *tmp = malloc(n);
    if (!tmp) {
        fprintf(stderr, "junctiond: cannot write pid file %s: out of memory\n", path);
        return -1;
    }
    snprintf(tmp, n, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    bool ok = f != NULL;
    ok = f && fprintf(f, "%ld\n", (long)getpid()) >= 0 && ok;
    ok = (!f || fclose(f) == 0) && ok;
    ok = ok && rename(tmp, path) == 0;
    if (!ok) {
        fprintf(stderr, "junctiond: cannot write pid file %s: %s\n", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return ok ? 0 : -1;
}

/* jn_process_daemonize: fork into the background, detach from the terminal, and
 * redirect standard streams to /dev/null (logging to stderr is then lost;
 * configure a log outputFile). Returns 0 in the child; the parent exits. */
int jn_process_daemonize(void)
{
    pid_t pid = fork();
    if (pid < 0) {
        perror("junctiond: fork");
        return -1;
    }
    if (pid > 0)
        _exit(0);
    if (setsid() < 0) {
        perror("junctiond: setsid");
        return -1;
    }
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0)
        _exit(0);
    int fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, STDIN_FILENO);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        if (fd > STDERR_FILENO)
            close(fd);
    }
    return chdir("/") == 0 ? 0 : -1;
}

/* ---- the service manager (systemd) ---------------------------------------- */

/* jn_process_notify: tell the service manager (systemd's NOTIFY_SOCKET, when set)
 * about the router's state: READY=1, STOPPING=1, WATCHDOG=1. A no-op when
 * junctiond runs without a service manager or was built without
 * libsystemd. */
void jn_process_notify(const char *state)
{
#ifdef JN_HAVE_SYSTEMD
    /* pid 0: from this process; a daemonized child names itself (MAINPID),
     * which needs NotifyAccess=all in the unit */
    sd_pid_notifyf(0, 0, "%s\nMAINPID=%ld", state, (long)getpid());
#else
    (void)state;
#endif
}

/* jn_process_watchdog_usec: systemd's WatchdogSec for this process in
 * microseconds (WATCHDOG_USEC, WATCHDOG_PID), 0 when there is none. */
uint64_t jn_process_watchdog_usec(void)
{
#ifdef JN_HAVE_SYSTEMD
    uint64_t usec = 0;
    return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
#else
    return 0;
#endif
}

/* ---- privileges ------------------------------------------------------------ */

/* jn_process_lookup_user: the user -U names (a name or a numeric id), looked up
 * before anything starts so a typo fails at once. 0 or -1 (printed). */
int jn_process_lookup_user(const char *user, jn_run_as_t *out)
{
    errno = 0;
    struct passwd *pw = getpwnam(user);
    char *end;
    unsigned long id = strtoul(user, &end, 10);
    if (!pw && *user && !*end)
        pw = getpwuid((uid_t)id);
    if (!pw) {
        fprintf(stderr, "junctiond: -U %s: no such user%s%s\n", user, errno ? ": " : "",
                errno ? strerror(errno) : "");
        return -1;
    }
    out->uid = pw->pw_uid;
    out->gid = pw->pw_gid;
    snprintf(out->name, sizeof out->name, "%s", pw->pw_name);
    return 0;
}

/* jn_process_drop_privileges: become the -U user once the listeners are bound: its
 * groups, then its group, then its user id (glibc applies set*id to every
 * thread). Returns 0, or -1 (logged) — the router then stops rather than
 * run with more privileges than asked. */
int jn_process_drop_privileges(const jn_run_as_t *as)
{
    if (getuid() == as->uid && geteuid() == as->uid)
        return 0;
    if (initgroups(as->name, as->gid) != 0 || setgid(as->gid) != 0 || setuid(as->uid) != 0) {
        JN_LOG(JN_LOG_MOD_MAIN, JN_LOG_CRITICAL, "Cannot run as user %s (uid %ld): %s", as->name,
               (long)as->uid, strerror(errno));
        return -1;
    }
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_NOTICE, "Running as user %s (uid %ld, gid %ld)", as->name,
           (long)as->uid, (long)as->gid);
#ifdef JN_POOL_ASAN
    /* set*id made the process non-dumpable, and LeakSanitizer's exit-time
     * check must attach to it: in sanitizer builds only, the leak report
     * matters more than hiding the router's memory from its own user */
    prctl(PR_SET_DUMPABLE, 1);
#endif
    return 0;
}
