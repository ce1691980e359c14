#!/usr/bin/python3
"""The build without ./dev (issue 19), as a user or a distribution runs it:
plain `cmake -B DIR && cmake --build DIR` with -DJN_TESTS=OFF.

* cmocka is not looked for (the unit tests are not built), libsystemd is
  optional (-DJN_SYSTEMD=OFF builds a junctiond that sends no
  notifications), and warnings are not errors unless JN_WERROR is set.
* The router built that way starts on its built-in configuration and routes
  a message; its man pages are built too.

It compiles the router once more (about a minute on two cores): label
`package`, run once by `./dev test` in the plain build.
"""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from harness import SLOW, SOURCE_DIR, Router
from test_daemon_cli import route_one


class StandaloneBuildTest(unittest.TestCase):

    def test_router_alone_without_cmocka_or_systemd(self):
        build = tempfile.mkdtemp(prefix="jn-notests-")
        self.addCleanup(shutil.rmtree, build, True)
        env = dict(os.environ)
        # a pkg-config search path with only what the router itself needs
        # (libwebsockets for HTTP, Cyrus SASL, OpenSSL): cmocka and
        # libsystemd cannot be found, so the build must not need them
        only = os.path.join(build, "pkgconfig-router-only")
        os.makedirs(only)
        system = subprocess.run(["pkg-config", "--variable", "pcfiledir", "libwebsockets"],
                                capture_output=True, text=True).stdout.strip()
        for pc in ("libwebsockets", "libcap", "libsasl2", "openssl", "libssl", "libcrypto"):
            src = os.path.join(system, pc + ".pc")
            if os.path.exists(src):
                os.symlink(src, os.path.join(only, pc + ".pc"))
        env["PKG_CONFIG_LIBDIR"] = only
        env.pop("PKG_CONFIG_PATH", None)
        p = subprocess.run(["cmake", "-S", SOURCE_DIR, "-B", build, "-DJN_TESTS=OFF",
                            "-DJN_SYSTEMD=AUTO"],
                           capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            cache = f.read()
        self.assertNotRegex(cache, r"(?m)^CMOCKA_FOUND")
        self.assertRegex(cache, r"(?m)^JN_WERROR:BOOL=OFF$")
        self.assertNotRegex(cache, r"(?m)^SYSTEMD_FOUND:INTERNAL=1$")
        p = subprocess.run(["nice", "-n", "10", "cmake", "--build", build, "-j", "2"],
                           capture_output=True, text=True, env=env, timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout[-4000:] + p.stderr[-4000:])
        for exe in ("junctiond", "junction-bench"):
            self.assertTrue(os.access(os.path.join(build, exe), os.X_OK), exe)
        self.assertFalse(os.path.exists(os.path.join(build, "test_util_pool")),
                         "unit tests were built with JN_TESTS=OFF")
        self.assertTrue(os.path.exists(os.path.join(build, "man", "man5", "junctiond.conf.5")))

        # it runs and routes
        workdir = tempfile.mkdtemp(prefix="jn-notests-run-")
        self.addCleanup(shutil.rmtree, workdir, True)
        r = Router(workdir, name="plain")
        log = open(r.log_path, "wb")
        self.addCleanup(log.close)
        proc = subprocess.Popen([os.path.join(build, "junctiond"), "-c", r.conf_path],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        def stop():
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        self.addCleanup(stop)
        r.proc = proc
        r.wait_ready()
        self.assertEqual(route_one(r.url), "hello")
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(10 * SLOW), 0, r.log())


if __name__ == "__main__":
    unittest.main()
