#!/usr/bin/python3
"""junctiond under a service manager (issue 19): etc/junctiond.service's
Type=notify protocol and etc/logrotate.d/junctiond.

There is no systemd running as the test machine's init (a container), so
junctiond's notifications are read the way systemd reads them: from a
datagram socket the test binds and names in NOTIFY_SOCKET (and
WATCHDOG_USEC for WatchdogSec). The unit file is checked with
`systemd-analyze verify`, which needs no running systemd; the logrotate
file is run by logrotate itself against a live router's log.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import unittest

from harness import BUILD_DIR, SLOW, SOURCE_DIR, Router, RouterTestCase


def built_with_libsystemd():
    try:
        with open(os.path.join(BUILD_DIR, "CMakeCache.txt")) as f:
            return re.search(r"^SYSTEMD_FOUND:INTERNAL=1$", f.read(), re.M) is not None
    except OSError:
        return False


class NotifySocket:
    """The service manager's end: a datagram socket junctiond sends to."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.messages = []  # (monotonic time, set of lines)

    def wait(self, line, timeout, after=0):
        """Wait for a message carrying `line` (the after-th such message
        counts from 0); returns its time of arrival."""
        deadline = time.monotonic() + timeout
        while True:
            seen = [t for t, m in self.messages if line in m]
            if len(seen) > after:
                return seen[after]
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no %r within %.1f s; got %r"
                                     % (line, timeout, [sorted(m) for _, m in self.messages]))
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            self.messages.append((time.monotonic(), set(data.decode().split("\n"))))

    def close(self):
        self.sock.close()


@unittest.skipUnless(built_with_libsystemd(),
                     "this build has no libsystemd (libsystemd-dev was not installed when "
                     "cmake ran), so junctiond sends no notifications")
class NotifyTest(RouterTestCase):

    def start_notified(self, watchdog_usec=None):
        sock = NotifySocket(os.path.join(self.workdir, "notify"))
        self.addCleanup(sock.close)
        env = dict(os.environ, NOTIFY_SOCKET=sock.path)
        if watchdog_usec:
            env["WATCHDOG_USEC"] = str(watchdog_usec)
        r = Router(self.workdir, name="R%d" % len(self.routers))
        r.env = env
        r.start()
        self.routers.append(r)
        self.addCleanup(self._stop_router, r)
        return r, sock

    def test_ready_once_listening_then_stopping(self):
        r, sock = self.start_notified()
        sock.wait("READY=1", 10 * SLOW)
        # READY=1 is sent only once the listener listens
        self.assertTrue(r.listening(), "READY=1 before the listener listened: " + r.describe())
        ready = [m for _, m in sock.messages if "READY=1" in m][0]
        self.assertIn("MAINPID=%d" % r.pid, ready)
        time.sleep(0.3)
        self.assertFalse([m for _, m in sock.messages if "WATCHDOG=1" in m],
                         "WATCHDOG=1 without WatchdogSec")
        r.signal(signal.SIGTERM)
        sock.wait("STOPPING=1", 5 * SLOW)
        r.proc.wait(5 * SLOW)
        self.assertEqual(r.proc.returncode, 0, r.describe())

    def test_watchdog_every_half_period(self):
        period = 0.4
        r, sock = self.start_notified(watchdog_usec=int(period * 1e6))
        sock.wait("READY=1", 10 * SLOW)
        first = sock.wait("WATCHDOG=1", 5 * SLOW)
        fifth = sock.wait("WATCHDOG=1", 5 * SLOW, after=4)
        # four intervals of half the period each (with room for a slow machine)
        self.assertGreater(fifth - first, 4 * period / 2 * 0.8)
        self.assertLess(fifth - first, 4 * period * SLOW)

    def test_watchdog_goes_on_under_a_stream_of_signals(self):
        """Signals more often than half the period (SIGUSR1 every 50 ms)
        do not hold the pings back."""
        period = 0.4
        r, sock = self.start_notified(watchdog_usec=int(period * 1e6))
        sock.wait("READY=1", 10 * SLOW)
        first = sock.wait("WATCHDOG=1", 5 * SLOW)
        end = time.monotonic() + 6 * period
        while time.monotonic() < end:
            r.proc.send_signal(signal.SIGUSR1)
            time.sleep(0.05)
        # what was sent while the signals came (2.4 s: 12 half periods), read now
        sock.sock.setblocking(False)
        sent = 0
        while True:
            try:
                sent += "WATCHDOG=1" in sock.sock.recv(4096).decode().split("\n")
            except BlockingIOError:
                break
        self.assertGreaterEqual(sent, 4, "%d pings in %.1f s of signals" % (sent, 6 * period))
        self.assertGreater(first, 0)

    def test_no_notify_socket_no_harm(self):
        """Started by hand (no NOTIFY_SOCKET), junctiond runs as before."""
        r = Router(self.workdir, name="plain")
        r.env = {k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"}
        r.start()
        self.routers.append(r)
        self.addCleanup(self._stop_router, r)
        r.wait_ready()


class UnitFileTest(RouterTestCase):

    def test_unit_file_verifies(self):
        analyze = shutil.which("systemd-analyze")
        if not analyze:
            self.skipTest("systemd-analyze is not installed (Debian package systemd)")
        with open(os.path.join(SOURCE_DIR, "etc", "junctiond.service")) as f:
            unit = f.read()
        for key in ("Type=notify", "WatchdogSec=", "NoNewPrivileges=yes", "DynamicUser=yes",
                    "ProtectSystem=strict", "CapabilityBoundingSet=\n",
                    "ExecReload=/bin/kill -HUP $MAINPID", "--check"):
            self.assertIn(key, unit)
        # the unit as installed runs /usr/sbin/junctiond; verify it against
        # this build's binary, with this build's man pages (Documentation=)
        path = os.path.join(self.workdir, "junctiond.service")
        with open(path, "w") as f:
            f.write(unit.replace("/usr/sbin/junctiond", os.path.join(BUILD_DIR, "junctiond")))
        env = dict(os.environ, MANPATH=os.path.join(BUILD_DIR, "man"), SYSTEMD_LOG_LEVEL="notice")
        p = subprocess.run([analyze, "verify", path], capture_output=True, text=True, env=env,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stderr.strip(), "", p.stderr)


class LogrotateTest(RouterTestCase):

    def test_logrotate_rotates_a_live_routers_log(self):
        logrotate = shutil.which("logrotate") or "/usr/sbin/logrotate"
        if not os.access(logrotate, os.X_OK):
            self.skipTest("logrotate is not installed (Debian package logrotate)")
        logdir = os.path.join(self.workdir, "log")
        os.mkdir(logdir)
        log_path = os.path.join(logdir, "junctiond.log")
        r = self.start_router(extra="log {\n    module: SERVER\n    enable: info+\n"
                              "    outputFile: %s\n}\n" % log_path)
        self.wait_for("the log file", lambda: os.path.exists(log_path))
        with open(os.path.join(SOURCE_DIR, "etc", "logrotate.d", "junctiond")) as f:
            conf = f.read()
        self.assertIn("/var/log/junction/*.log", conf)
        self.assertIn("--signal=SIGUSR1", conf)
        # the file as shipped, with the test's folder and process
        conf = conf.replace("/var/log/junction", logdir)
        conf = re.sub(r"systemctl kill [^\n]*", "kill -USR1 %d" % r.pid, conf)
        conf_path = os.path.join(self.workdir, "logrotate.conf")
        with open(conf_path, "w") as f:
            f.write(conf)
        os.chmod(logdir, 0o755)
        p = subprocess.run([logrotate, "-f", "-s", os.path.join(self.workdir, "state"),
                            conf_path], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(os.path.exists(log_path + ".1"), os.listdir(logdir))
        self.wait_for("the reopened log", lambda: os.path.exists(log_path) and
                      "Log files reopened on SIGUSR1" in open(log_path).read())


if __name__ == "__main__":
    unittest.main()
