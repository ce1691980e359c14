#!/usr/bin/python3
"""The Debian package (issue 19): debian/ builds a `junction` .deb with
`dpkg-buildpackage -us -uc -b`, lintian finds no error in it, and the
package installed in a scratch root runs the way its systemd unit runs it
and routes a message.

* The build runs on a copy of the source tree in a temporary folder
  (dpkg-buildpackage writes its results next to the tree), about a minute
  on two cores: label `package`, run once by `./dev test`.
* The package is unpacked into a scratch root (`dpkg -x`), not installed on
  the machine: the test must not change the CI machine. Its dependencies
  must be installed here (they are what it runs with).
* "The service" is started as systemd would start the installed unit:
  its ExecStartPre (junctiond --check) and ExecStart lines, with paths
  into the scratch root, NOTIFY_SOCKET set (Type=notify: READY=1 once
  listening), and stopped with SIGTERM. The sample configuration the
  package installs is used, on a free port instead of 5672.
"""
import glob
import gzip
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from harness import SLOW, SOURCE_DIR, free_port
from test_daemon_cli import route_one

TOOLS = ("dpkg-buildpackage", "dh", "lintian", "dpkg-deb")
MISSING = [t for t in TOOLS if not shutil.which(t)]
IGNORE = shutil.ignore_patterns(".git", "build", "build-*", "obj-*", "node_modules",
                                "__pycache__", ".debhelper", "tmp")


@unittest.skipIf(MISSING, "needs %s (Debian packages dpkg-dev, debhelper, lintian; ./dev "
                 "installs them)" % ", ".join(MISSING))
class DebianPackageTest(unittest.TestCase):

    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="jn-deb-")
        tree = os.path.join(cls.tmp, "junction")
        shutil.copytree(SOURCE_DIR, tree, ignore=IGNORE, symlinks=True)
        cls.build = subprocess.run(["nice", "-n", "10", "dpkg-buildpackage", "-us", "-uc", "-b",
                                    "-j2"], cwd=tree, capture_output=True, text=True,
                                   timeout=1800)
        debs = glob.glob(os.path.join(cls.tmp, "junction_*.deb"))
        cls.deb = debs[0] if debs else None
        cls.changes = (glob.glob(os.path.join(cls.tmp, "junction_*.changes")) or [None])[0]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def setUp(self):
        self.assertEqual(self.build.returncode, 0,
                         "dpkg-buildpackage failed:\n" + self.build.stdout[-6000:]
                         + self.build.stderr[-6000:])
        self.assertTrue(self.deb, os.listdir(self.tmp))

    def test_lintian_finds_no_error(self):
        p = subprocess.run(["lintian", "--tag-display-limit", "0", self.changes],
                           capture_output=True, text=True, timeout=600)
        errors = [x for x in p.stdout.splitlines() if x.startswith("E:")]
        self.assertEqual(errors, [], p.stdout)

    def test_contents_and_dependencies(self):
        p = subprocess.run(["dpkg-deb", "-c", self.deb], capture_output=True, text=True)
        files = {line.split()[-1].lstrip(".") for line in p.stdout.splitlines()}
        for f in ("/usr/sbin/junctiond", "/usr/bin/junction-manage", "/usr/bin/junction-stat",
                  "/usr/bin/junction-bench", "/lib/systemd/system/junctiond.service",
                  "/etc/junction/junctiond.conf", "/etc/logrotate.d/junctiond",
                  "/usr/lib/python3/dist-packages/junction/management.py",
                  "/usr/lib/python3/dist-packages/junction/schema.json",
                  "/usr/share/man/man8/junctiond.8.gz", "/usr/share/man/man5/junctiond.conf.5.gz",
                  "/usr/share/man/man8/junction-manage.8.gz",
                  "/usr/share/man/man8/junction-stat.8.gz",
                  "/usr/share/man/man1/junction-bench.1.gz",
                  "/usr/share/doc/junction/copyright"):
            self.assertIn(f, files)
        info = subprocess.run(["dpkg-deb", "-f", self.deb, "Depends", "Package"],
                              capture_output=True, text=True).stdout
        for dep in ("libqpid-proton11", "libsystemd0", "python3-qpid-proton", "python3"):
            self.assertRegex(info, r"\b%s\b" % re.escape(dep))
        conffiles = subprocess.run(["dpkg-deb", "-I", self.deb, "conffiles"],
                                   capture_output=True, text=True).stdout.split()
        self.assertIn("/etc/junction/junctiond.conf", conffiles)
        # the maintainer scripts enable and start the unit on installation
        postinst = subprocess.run(["dpkg-deb", "-I", self.deb, "postinst"],
                                  capture_output=True, text=True).stdout
        self.assertIn("junctiond.service", postinst)

    def test_installed_service_starts_and_routes(self):
        root = os.path.join(self.tmp, "root")
        subprocess.run(["dpkg-deb", "-x", self.deb, root], check=True)
        for dep in ("libqpid-proton11", "python3-qpid-proton", "libsystemd0"):
            st = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", dep],
                                capture_output=True, text=True).stdout
            self.assertIn("install ok installed", st, "dependency %s is not installed" % dep)

        # the unit's command lines, with paths into the scratch root
        with open(os.path.join(root, "lib/systemd/system/junctiond.service")) as f:
            unit = f.read()
        port = free_port()
        conf = os.path.join(self.tmp, "junctiond.conf")
        with open(os.path.join(root, "etc/junction/junctiond.conf")) as f:
            sample = f.read()
        self.assertRegex(sample, r"(?m)^\s*port: amqp$")
        with open(conf, "w") as f:
            f.write(re.sub(r"(?m)^(\s*)port: amqp$", r"\g<1>port: %d" % port, sample))

        def command(key):
            line = re.search(r"(?m)^%s=(.*)$" % key, unit).group(1)
            argv = shlex.split(line)
            return [os.path.join(root, a.lstrip("/")) if a == "/usr/sbin/junctiond"
                    else conf if a == "/etc/junction/junctiond.conf" else a for a in argv]

        self.assertIn("Type=notify", unit)
        pre = subprocess.run(command("ExecStartPre"), capture_output=True, text=True, timeout=60)
        self.assertEqual(pre.returncode, 0, pre.stderr)

        notify_path = os.path.join(self.tmp, "notify")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(notify_path)
        self.addCleanup(sock.close)
        log = open(os.path.join(self.tmp, "junctiond.log"), "wb")
        self.addCleanup(log.close)
        env = dict(os.environ, NOTIFY_SOCKET=notify_path)
        proc = subprocess.Popen(command("ExecStart"), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env)

        def stop():
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        self.addCleanup(stop)

        def logtext():
            with open(log.name, errors="replace") as f:
                return f.read()
        sock.settimeout(20 * SLOW)
        got = set()
        deadline = time.monotonic() + 20 * SLOW
        while "READY=1" not in got and time.monotonic() < deadline:
            try:
                got |= set(sock.recv(4096).decode().split("\n"))
            except socket.timeout:
                break
        self.assertIn("READY=1", got, logtext())
        url = "amqp://127.0.0.1:%d" % port
        self.assertEqual(route_one(url, address="deb.test", body="from the package"),
                         "from the package")

        # the installed tools, with the installed Python package
        manage = subprocess.run(["/usr/bin/python3", os.path.join(root, "usr/bin/junction-manage"),
                                 "-b", url, "query", "--type", "listener", "port"],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(manage.returncode, 0, manage.stderr)
        self.assertIn('"port": "%d"' % port, manage.stdout)
        stat = subprocess.run(["/usr/bin/python3", os.path.join(root, "usr/bin/junction-stat"),
                               "-b", url, "-g"], capture_output=True, text=True, timeout=60)
        self.assertEqual(stat.returncode, 0, stat.stderr)
        self.assertIn("Router.A", stat.stdout)
        version = subprocess.run([os.path.join(root, "usr/bin/junction-bench"), "--version"],
                                 capture_output=True, text=True)
        self.assertEqual(version.returncode, 0)

        # systemctl stop: SIGTERM
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(10 * SLOW), 0, logtext())
        self.assertIn("STOPPING=1", set(sock.recv(4096).decode().split("\n")))

        # the man pages render
        if shutil.which("man"):
            with gzip.open(os.path.join(root, "usr/share/man/man8/junctiond.8.gz")) as f:
                self.assertIn(b"junctiond", f.read())
            p = subprocess.run(["man", "-l", os.path.join(root,
                                                         "usr/share/man/man5/junctiond.conf.5.gz")],
                               capture_output=True, text=True, env=dict(os.environ,
                                                                        MANWIDTH="100"))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("SECTIONS", p.stdout)


if __name__ == "__main__":
    unittest.main()
