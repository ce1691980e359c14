#!/usr/bin/python3
"""The container image (issue 19): deploy/Containerfile builds with podman
(or docker), runs junctiond as a non-root user on the image's
configuration, and routes a message.

* The Debian 12 base: the image BASE names (JN_CONTAINER_BASE, default
  docker.io/library/debian:bookworm-slim) when it is there or can be
  pulled; otherwise one made from Debian packages with mmdebstrap and
  imported as localhost/junction-base:bookworm (kept for the next run).
* Where the container runtime cannot start containers (a CI machine that
  is itself a restricted container: crun's setrlimit is refused, say), the
  image is built with --isolation=chroot, its file system is run with
  chroot as the image's user to route a message, and the test that runs
  the container is skipped with the runtime's own error as the reason.

Builds a compiler image and the router (minutes): label `package`.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
import unittest

from harness import SLOW, SOURCE_DIR, free_port
from test_daemon_cli import route_one

ENGINE = shutil.which("podman") or shutil.which("docker")
BASE = os.environ.get("JN_CONTAINER_BASE", "docker.io/library/debian:bookworm-slim")
LOCAL_BASE = "localhost/junction-base:bookworm"
IMAGE = "localhost/junction:ci"


def run(*argv, timeout=600, **kw):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=timeout, **kw)


def last_line(text):
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else "(no output)"


@unittest.skipUnless(ENGINE, "neither podman nor docker is installed (./dev installs podman)")
class ContainerImageTest(unittest.TestCase):

    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="jn-image-")
        cls.base, cls.base_error = cls.find_base()
        cls.can_run, cls.run_error = False, None
        cls.build = None
        if not cls.base:
            return
        probe = run(ENGINE, "run", "--rm", cls.base, "true", timeout=300)
        cls.can_run = probe.returncode == 0
        cls.run_error = None if cls.can_run else last_line(probe.stderr or probe.stdout)
        argv = [ENGINE, "build", "-f", os.path.join(SOURCE_DIR, "deploy", "Containerfile"),
                "--build-arg", "BASE=" + cls.base, "-t", IMAGE]
        if not cls.can_run and os.path.basename(ENGINE) == "podman":
            argv.append("--isolation=chroot")  # RUN steps without the OCI runtime
        cls.build = run("nice", "-n", "10", *argv, SOURCE_DIR, timeout=1800)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    @classmethod
    def find_base(cls):
        """(image, None) for a usable Debian 12 base, or (None, why not)."""
        if run(ENGINE, "image", "exists", BASE).returncode == 0 or \
                run(ENGINE, "image", "inspect", BASE).returncode == 0:
            return BASE, None
        pull = run(ENGINE, "pull", BASE, timeout=300)
        if pull.returncode == 0:
            return BASE, None
        if run(ENGINE, "image", "inspect", LOCAL_BASE).returncode == 0:
            return LOCAL_BASE, None
        why = "cannot pull %s (%s)" % (BASE, last_line(pull.stderr))
        if not shutil.which("mmdebstrap"):
            return None, why + " and mmdebstrap is not installed to make one"
        tar = os.path.join(cls.tmp, "base.tar")
        made = run("nice", "-n", "10", "mmdebstrap", "--variant=minbase", "bookworm", tar,
                   timeout=1800)
        if made.returncode != 0:
            return None, why + "; mmdebstrap failed: " + last_line(made.stderr)
        imported = run(ENGINE, "import", tar, LOCAL_BASE)
        os.unlink(tar)
        if imported.returncode != 0:
            return None, why + "; import failed: " + last_line(imported.stderr)
        return LOCAL_BASE, None

    def setUp(self):
        if not self.base:
            self.fail("no Debian 12 base image: " + self.base_error)
        self.assertEqual(self.build.returncode, 0, "image build failed:\n"
                         + self.build.stdout[-5000:] + self.build.stderr[-5000:])

    def test_image_runs_as_a_non_root_user(self):
        info = json.loads(run(ENGINE, "image", "inspect", IMAGE).stdout)[0]
        config = info.get("Config") or info.get("config")
        self.assertEqual(config["User"], "10001:10001")
        self.assertEqual(config["Entrypoint"], ["/usr/sbin/junctiond"])
        self.assertEqual(config["Cmd"], ["-c", "/etc/junction/junctiond.conf"])
        self.assertIn("5672/tcp", config["ExposedPorts"])

    def test_image_file_system_routes(self):
        """The image's own files (router, libraries, user, configuration)
        run with chroot as the image's user: this needs no container
        runtime, only root."""
        if os.geteuid() != 0:
            self.skipTest("chroot needs root; this run is uid %d" % os.geteuid())
        created = run(ENGINE, "create", IMAGE)
        self.assertEqual(created.returncode, 0, created.stderr)
        cid = created.stdout.strip()
        rootfs = os.path.join(self.tmp, "rootfs")
        os.mkdir(rootfs)
        tar = os.path.join(self.tmp, "image.tar")
        try:
            exported = run(ENGINE, "export", "-o", tar, cid)
            self.assertEqual(exported.returncode, 0, exported.stderr)
        finally:
            run(ENGINE, "rm", cid)
        with tarfile.open(tar) as t:
            t.extractall(rootfs)
        os.unlink(tar)
        with open(os.path.join(rootfs, "etc/passwd")) as f:
            self.assertRegex(f.read(), r"(?m)^junction:x:10001:10001:")
        # the console, with its AMQP client
        for name in ("index.html", "console.js", "rhea.js"):
            self.assertTrue(os.path.isfile(os.path.join(rootfs, "usr/share/junction/console",
                                                        name)), name)
        conf = os.path.join(rootfs, "etc/junction/junctiond.conf")
        check = run("chroot", "--userspec=10001:10001", rootfs, "/usr/sbin/junctiond", "--check",
                    "-c", "/etc/junction/junctiond.conf")
        self.assertEqual(check.returncode, 0, check.stderr)
        # the image's configuration, on a free port of this machine
        port = free_port()
        with open(conf) as f:
            text = f.read()
        with open(conf, "w") as f:
            f.write(text.replace("port: 5672", "port: %d" % port)
                    .replace("host: 0.0.0.0", "host: 127.0.0.1"))
        proc = subprocess.Popen(["chroot", "--userspec=10001:10001", rootfs,
                                 "/usr/sbin/junctiond", "-c", "/etc/junction/junctiond.conf"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        try:
            self.wait_listening(port, proc)
            self.assertEqual(route_one("amqp://127.0.0.1:%d" % port, body="in the image"),
                             "in the image")
            with open("/proc/%d/status" % proc.pid) as f:
                self.assertRegex(f.read(), r"(?m)^Uid:\s+10001\s")
        finally:
            proc.terminate()
            out = proc.communicate(timeout=10 * SLOW)[0].decode(errors="replace")
        self.assertEqual(proc.returncode, 0, out)

    def test_container_routes(self):
        if not self.can_run:
            self.skipTest("%s cannot start a container on this machine: %s"
                          % (os.path.basename(ENGINE), self.run_error))
        port = free_port()
        started = run(ENGINE, "run", "-d", "--rm", "-p", "127.0.0.1:%d:5672" % port, IMAGE)
        self.assertEqual(started.returncode, 0, started.stderr)
        cid = started.stdout.strip()
        try:
            self.wait_listening(port, None)
            self.assertEqual(route_one("amqp://127.0.0.1:%d" % port, body="in a container"),
                             "in a container")
            uid = run(ENGINE, "exec", cid, "id", "-u")
            self.assertEqual(uid.stdout.strip(), "10001")
        finally:
            stopped = run(ENGINE, "stop", "-t", "10", cid)
        self.assertEqual(stopped.returncode, 0, stopped.stderr)

    def wait_listening(self, port, proc):
        deadline = time.monotonic() + 30 * SLOW
        while True:
            if proc is not None and proc.poll() is not None:
                self.fail("junctiond exited: %s" % proc.stdout.read().decode(errors="replace"))
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.fail("nothing listens on 127.0.0.1:%d" % port)
                time.sleep(0.2)


if __name__ == "__main__":
    unittest.main()
