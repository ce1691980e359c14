#!/usr/bin/python3
"""The console (issue 18; docs/design.md "The console"): a 3-router mesh
A - B - C whose router A has an http listener serving the console (no
httpRootDir). Debian's chromium, driven headless by playwright-core from
npm (tests/interop/console_check.js, no browser download), loads it and
waits until the mesh picture shows the three routers and both links with
their costs, and saves a screenshot in the test's work directory
(docs/console.png is one). Not checked yet (issue 18 leaves it open): that
an address's counter on the page moves after messages are sent — in
trials the page's address and connection tables stopped following the
router while the picture kept refreshing.

Every process is started here on 127.0.0.1, bounded in time, and stopped by
PID.
"""
import os
import shutil
import subprocess
import unittest


from harness import BUILD_DIR, SLOW, SOURCE_DIR, RouterTestCase, conf_section, free_port
from mesh import Mesh

INTEROP = os.path.join(SOURCE_DIR, "tests", "interop")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
TIMEOUT = 60 * SLOW


class ConsoleMesh(Mesh):
    """A Mesh whose router A also has an http listener on http_port."""

    def __init__(self, case, *a, **kw):
        super().__init__(case, *a, **kw)
        self.http_port = free_port()

    def config(self, name):
        text = super().config(name)
        if name == "A":
            text += conf_section("listener", {"name": "web", "host": "127.0.0.1",
                                              "port": self.http_port, "http": "yes"})
        return text


class ConsoleTest(RouterTestCase):

    def test_console_draws_the_mesh_and_counts_move(self):
        node = shutil.which("node") or shutil.which("nodejs")
        self.assertIsNotNone(node, "node is not installed (./dev installs it)")
        self.assertTrue(os.access(CHROMIUM, os.X_OK),
                        "%s is not installed (./dev installs Debian's chromium)" % CHROMIUM)
        self.assertTrue(os.path.isdir(os.path.join(INTEROP, "node_modules", "playwright-core")),
                        "playwright-core is not installed in tests/interop (npm ci there)")
        rhea = os.path.join(BUILD_DIR, "console", "rhea.js")
        self.assertTrue(os.path.isfile(rhea),
                        "%s is missing: the build was configured before rhea was installed "
                        "in tests/interop (npm ci there, then cmake the build again)" % rhea)
        m = ConsoleMesh(self, ["A", "B", "C"], [("A", "B", 3), ("B", "C", 5)]).start()
        shot = os.path.join(self.workdir, "console.png")
        p = subprocess.Popen([node, os.path.join(INTEROP, "console_check.js"),
                              "--url", "http://127.0.0.1:%d/" % m.http_port,
                              "--routers", "A,B,C", "--links", "2", "--address", "",
                              "--screenshot", shot, "--timeout", str(int(TIMEOUT))],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)

        def reap():
            if p.poll() is None:
                p.kill()
            p.wait(10)
            p.stdout.close()
            p.stderr.close()
        self.addCleanup(reap)
        line = p.stdout.readline().strip()
        self.assertEqual(line, "topology", "%s\n%s\n%s" % (line, p.stderr.read(), self.logs()))
        self.assertEqual(p.wait(TIMEOUT), 0)
        self.assertTrue(os.path.getsize(shot) > 1000)
        keep = os.environ.get("JN_CONSOLE_PNG")  # e.g. docs/console.png
        if keep:
            shutil.copyfile(shot, keep)


if __name__ == "__main__":
    unittest.main()
