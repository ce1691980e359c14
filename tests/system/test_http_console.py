#!/usr/bin/python3
"""The console (issue 18; docs/design.md "The console"): a 3-router mesh
A - B - C whose router A has an http listener serving the console (no
httpRootDir). Debian's chromium, driven headless by playwright-core from
npm (tests/interop/console_check.js, no browser download), loads it and
waits until the mesh picture shows the three routers and both links with
their costs, and saves a screenshot in the test's work directory
(docs/console.png is one). Then it reads the page's "in" counter of an
address (its baseline), the test sends 25 messages through router A to a
receiver on router C, and the page must show the counter at exactly
baseline + 25 (a receiver stays attached meanwhile: an address nobody
uses leaves the router's table, and its row the page). That receiver is attached before the page loads:
two CI runs failed when the baseline was read from a row that a probe's
receiver, gone a moment before, still kept, and that then left the table
with its counters; the count stopped at baseline + COUNT - 1.

The page was never what stopped following the router in earlier trials:
the test itself was blocked. It built its failure message eagerly, and
that read the browser script's stderr to its end, so it waited until the
script gave up (60 s) before it sent anything. The script's stderr now
goes to a file, read only when a line is not the one expected.

Every process is started here on 127.0.0.1, bounded in time, and stopped by
PID.
"""
import os
import shutil
import subprocess
import unittest

from proton import Message
from proton.utils import BlockingConnection

from harness import BUILD_DIR, SLOW, SOURCE_DIR, RouterTestCase, conf_section, free_port
from mesh import Mesh

INTEROP = os.path.join(SOURCE_DIR, "tests", "interop")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
TIMEOUT = 60 * SLOW
ADDRESS = "console.counted"
COUNT = 25


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
        # messages flow from A to C (on an address of their own), and the
        # receiver of ADDRESS on C is attached, and known at A, before the
        # page loads. Its row then stays in A's table, with its counters, for
        # the whole test: a probe's short-lived receiver on ADDRESS let the
        # address leave A's table (and its counters with it) about a second
        # after the probe, which could be after the page read its baseline,
        # and the count then stopped one short of baseline + COUNT.
        m.probe("A", "C", ADDRESS + ".probe")
        rcv = self.spawn("accept-some", m["C"].url, ADDRESS, COUNT, 0, "hold")
        m.wait_address("M0" + ADDRESS, ["C"])
        shot = os.path.join(self.workdir, "console.png")
        # the script's stderr goes to a file: read from a pipe at a failure
        # it would block until the script ends, and unread it could fill
        err_path = os.path.join(self.workdir, "console_check.err")
        err = open(err_path, "w")
        self.addCleanup(err.close)
        p = subprocess.Popen([node, os.path.join(INTEROP, "console_check.js"),
                              "--url", "http://127.0.0.1:%d/" % m.http_port,
                              "--routers", "A,B,C", "--links", "2", "--address", ADDRESS,
                              "--expect", str(COUNT), "--screenshot", shot,
                              "--timeout", str(int(TIMEOUT))],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                             text=True)

        def reap():
            if p.poll() is None:
                p.kill()
            p.wait(10)
            p.stdout.close()
        self.addCleanup(reap)

        def expect(word):
            """The script's next line, which must start with word (the
            failure message is built only on a mismatch)."""
            line = p.stdout.readline().strip()
            if not line.startswith(word):
                if p.poll() is None:
                    p.kill()
                p.wait(10)
                with open(err_path) as f:
                    self.fail("%r, not %s\n%s\n%s" % (line, word, f.read(), self.logs()))
            return line

        expect("topology")
        base = int(expect("baseline").split()[1])
        # COUNT messages through router A to a receiver on router C: each
        # is one more delivery arriving at A for the address (its "in").
        # The receiver stays attached until the page showed the count: an
        # address nobody uses any more leaves the router's table.
        snd_conn = BlockingConnection(m["A"].url, timeout=TIMEOUT)
        self.addCleanup(snd_conn.close)
        snd = snd_conn.create_sender(ADDRESS)
        for i in range(COUNT):
            snd.send(Message(body="counted %d" % i))  # waits for its acceptance
        self.assertEqual(rcv.last("accepted"), "accepted %d" % COUNT)
        moved = int(expect("moved").split()[1])
        self.assertEqual(moved, base + COUNT)
        self.assertEqual(p.wait(TIMEOUT), 0)
        self.assertTrue(os.path.getsize(shot) > 1000)
        keep = os.environ.get("JN_CONSOLE_PNG")  # e.g. docs/console.png
        if keep:
            shutil.copyfile(shot, keep)


if __name__ == "__main__":
    unittest.main()
