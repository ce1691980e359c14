#!/usr/bin/python3
"""junctiond's command line and signals (issue 19): qdrouterd 1.19's options
(-c -I -d -P -U -T -v -h), --check, usage errors, SIGUSR1 reopening the log
files and SIGTERM stopping. SIGHUP's reload has its own tests
(test_router_entities.py); the systemd notifications are in
test_daemon_systemd.py.

Every router listens on 127.0.0.1 on a free port; every wait is bounded.
"""
import os
import pwd
import signal
import time
import unittest

from proton import Message
from proton.reactor import AtMostOnce
from proton.utils import BlockingConnection

from harness import JUNCTIOND, SLOW, Router, RouterTestCase, run_junctiond


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def route_one(url, address="cli.test", body="hello"):
    """Send one message through the router at url and return what the
    receiver got (both on their own connections; pre-settled, so the
    sender need not wait for the receiver's connection to run)."""
    rc = BlockingConnection(url, timeout=10 * SLOW, allowed_mechs="ANONYMOUS")
    try:
        receiver = rc.create_receiver(address)
        sc = BlockingConnection(url, timeout=10 * SLOW, allowed_mechs="ANONYMOUS")
        try:
            sc.create_sender(address, options=AtMostOnce()).send(Message(body=body))
        finally:
            sc.close()
        got = receiver.receive(timeout=10 * SLOW)
        return got.body
    finally:
        rc.close()


class CliTest(RouterTestCase):

    def start_with(self, args=(), env=None, **kw):
        """A router started with more options after -c FILE."""
        r = Router(self.workdir, name="R%d" % len(self.routers), **kw)
        r.extra_args = list(args)
        r.env = env
        r.start()
        self.routers.append(r)
        self.addCleanup(self._stop_router, r)
        return r.wait_ready()

    def write(self, name, text):
        path = os.path.join(self.workdir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    # ---- options ---------------------------------------------------------

    def assert_usage_error(self, args, says):
        p = run_junctiond(args)
        self.assertEqual(p.returncode, 2, p.stderr)
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), 2, "one line and the pointer to --help:\n" + p.stderr)
        self.assertIn(says, lines[0])
        self.assertTrue(lines[0].startswith("junctiond: "), lines[0])
        self.assertEqual(lines[1], "Try 'junctiond --help' for more information.")
        self.assertEqual(p.stdout, "")

    def test_usage_errors_print_one_line_and_exit_2(self):
        self.assert_usage_error(["--no-such-option"], "'--no-such-option'")
        self.assert_usage_error(["-x"], "'-x'")
        self.assert_usage_error(["-c"], "needs an argument")
        self.assert_usage_error(["--pidfile"], "needs an argument")
        self.assert_usage_error(["stray"], "unexpected argument 'stray'")

    def test_help_lists_every_option_and_version_prints_it(self):
        p = run_junctiond(["--help"])
        self.assertEqual(p.returncode, 0, p.stderr)
        for opt in ("-c, --config", "-I, --include", "-d, --daemon", "-P, --pidfile",
                    "-U, --user", "-T, --test-hooks", "-v, --version", "-h, --help",
                    "--check", "SIGUSR1", "SIGHUP"):
            self.assertIn(opt, p.stdout)
        self.assertEqual(run_junctiond(["-h"]).stdout, p.stdout)
        for arg in ("-v", "--version"):
            v = run_junctiond([arg])
            self.assertEqual(v.returncode, 0)
            self.assertRegex(v.stdout, r"^junctiond \d+\.\d+\.\d+\n$")

    def test_include_and_test_hooks_are_accepted_with_a_notice(self):
        r = self.start_with(["-I", "/usr/lib/qpid-dispatch/python", "-T",
                             "--include=/elsewhere", "--test-hooks"])
        self.assertEqual(route_one(r.url), "hello")
        self.wait_for("the notices", lambda: "-T/--test-hooks: 1.19's test modules ignored" in r.log())
        self.assertIn("-I/--include ignored", r.log())

    # ---- --check ---------------------------------------------------------

    def test_check_accepts_a_valid_file_without_starting(self):
        port = Router(self.workdir).port
        path = self.write("ok.conf", "router {\n mode: standalone\n id: C\n}\n"
                          "listener {\n host: 127.0.0.1\n port: %d\n}\n" % port)
        start = time.monotonic()
        p = run_junctiond(["--check", "-c", path])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "%s: configuration OK\n" % path)
        self.assertLess(time.monotonic() - start, 5 * SLOW)
        # the built-in default configuration checks too
        self.assertEqual(run_junctiond(["--check"]).returncode, 0)
        # the sample file shipped in etc/
        sample = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))), "etc", "junctiond.conf")
        p = run_junctiond(["-c", sample, "--check"])
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_check_names_every_error_with_its_line(self):
        path = self.write("bad.conf", "router {\n    mode: edgy\n}\n"          # 2
                          "listener {\n    port: 5672\n    role: foo\n}\n"      # 6
                          "address {\n    prefix: a\n    distribution: nope\n"  # 10
                          "    waypoint: maybe\n}\n")                            # 11
        p = run_junctiond(["--check", "-c", path])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        lines = p.stderr.splitlines()
        for line, says in ((2, "'edgy'"), (6, "'foo'"), (10, "'nope'"), (11, "'maybe'")):
            self.assertTrue(any(x.startswith("%s:%d: " % (path, line)) and says in x
                                for x in lines), "%s:%d %s not in:\n%s" % (path, line, says,
                                                                           p.stderr))
        # refusals of the entity path (what Junction does not implement)
        path = self.write("refused.conf", "router {\n    mode: interior\n    id: X\n}\n"
                          "authServicePlugin {\n    name: a\n    realm: a\n}\n"
                          "authServicePlugin {\n    name: b\n    realm: b\n}\n")
        p = run_junctiond(["--check", "-c", path])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(len([x for x in p.stderr.splitlines() if x.startswith(path + ":")]), 2,
                         p.stderr)
        # errors of both kinds in one file, in one run and in the file's
        # order: values the parser refuses (distribution, role) and the
        # router's own checks (ports), also of a section that has both
        path = self.write("both.conf", "router {\n    mode: interior\n    id: B\n}\n"
                          "address {\n    prefix: a\n    distribution: nonsense\n}\n"  # 7
                          "listener {\n    port: 99999\n}\n"                            # 10
                          "connector {\n    host: 127.0.0.1\n    port: 70000\n"         # 14
                          "    role: bogus\n}\n")                                        # 15
        p = run_junctiond(["--check", "-c", path])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        lines = [x for x in p.stderr.splitlines() if x.startswith(path + ":")]
        self.assertEqual([x.split(":")[1] for x in lines], ["7", "10", "14", "15"], p.stderr)
        for line, says in zip(lines, ("'nonsense'", "'99999'", "'70000'", "'bogus'")):
            self.assertIn(says, line)
        # a file that cannot be read
        p = run_junctiond(["--check", "-c", os.path.join(self.workdir, "missing.conf")])
        self.assertEqual(p.returncode, 1)
        self.assertIn("could not be opened", p.stderr)

    # ---- -d, -P, -U ------------------------------------------------------

    def test_daemon_writes_its_pid_file_and_removes_it_on_sigterm(self):
        r = Router(self.workdir)
        pid_path = os.path.join(self.workdir, "run", "junctiond.pid")
        os.mkdir(os.path.dirname(pid_path))
        # a relative pid file is relative to where junctiond was started,
        # although the daemon changes its directory to /
        p = run_junctiond(["-c", r.conf_path, "-d", "-P", "run/junctiond.pid"],
                          cwd=self.workdir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.wait_for("the pid file", lambda: os.path.exists(pid_path))
        with open(pid_path) as f:
            pid = int(f.read())
        self.addCleanup(lambda: os.path.exists("/proc/%d" % pid) and os.kill(pid, 9))
        self.assertNotEqual(os.getsid(pid), os.getsid(0), "the daemon left the test's session")
        self.assertEqual(route_one(r.url), "hello")
        os.kill(pid, signal.SIGTERM)
        self.wait_for("the daemon to exit", lambda: not os.path.exists("/proc/%d" % pid)
                      or read("/proc/%d/stat" % pid).split()[2] == "Z")
        self.assertFalse(os.path.exists(pid_path), "pid file left behind")

    def test_user_drops_privileges_once_listening(self):
        if os.geteuid() != 0:
            self.skipTest("-U needs a test run as root (it changes the router's user); "
                          "this run is uid %d" % os.geteuid())
        nobody = pwd.getpwnam("nobody")
        r = self.start_with(["-U", "nobody"])
        self.wait_for("the user change", lambda: "Running as user nobody" in r.log())
        with open("/proc/%d/status" % r.pid) as f:
            status = dict(line.split(":", 1) for line in f)
        self.assertEqual(status["Uid"].split(), [str(nobody.pw_uid)] * 4)
        self.assertEqual(status["Gid"].split(), [str(nobody.pw_gid)] * 4)
        self.assertEqual(route_one(r.url), "hello")
        # an unknown user fails before anything starts
        p = run_junctiond(["-c", r.conf_path, "-U", "no-such-user-here"])
        self.assertEqual(p.returncode, 1)
        self.assertIn("no-such-user-here: no such user", p.stderr)

    # ---- signals -----------------------------------------------------------

    def test_sigusr1_reopens_log_files(self):
        log_path = os.path.join(self.workdir, "router.log")
        r = self.start_with(extra="log {\n    module: SERVER\n    enable: info+\n"
                            "    outputFile: %s\n}\n" % log_path)
        self.wait_for("the log file", lambda: os.path.exists(log_path))
        rotated = log_path + ".1"
        os.rename(log_path, rotated)  # what logrotate does
        r.signal(signal.SIGUSR1)
        self.wait_for("a new log file", lambda: os.path.exists(log_path))
        self.wait_for("the reopen notice",
                      lambda: "Log files reopened on SIGUSR1" in read(log_path))
        self.assertNotIn("Log files reopened", read(rotated))
        self.assertTrue(r.alive())
        r.signal(signal.SIGTERM)
        r.proc.wait(5 * SLOW)
        self.assertEqual(r.proc.returncode, 0)
        self.assertIn("Shut Down", read(log_path))

    def test_sigint_and_sigterm_stop_in_order(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            r = self.start_with()
            self.assertEqual(route_one(r.url), "hello")
            r.signal(sig)
            r.proc.wait(5 * SLOW)
            self.assertEqual(r.proc.returncode, 0, r.describe())
            self.assertIn("Shutting down on %s" % sig.name, r.log())


if __name__ == "__main__":
    unittest.main()
