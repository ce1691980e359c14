#!/usr/bin/python3
"""System tests: interoperation with rhea (AMQP 1.0 for Node.js) through
junctiond (issue 3): rhea sends to a python-proton receiver, and
python-proton sends to a rhea receiver; bodies and properties arrive intact.

The rhea scripts live in tests/interop; the test command installs rhea there
with npm. Without tests/interop/node_modules/rhea these tests fail (they do
not skip): the interop check is part of the issue.
"""
import json
import os
import shutil
import subprocess
import unittest

from proton import Delivery, Message

from harness import SLOW, SOURCE_DIR, RouterTestCase, Scenario, Send, Traffic

INTEROP = os.path.join(SOURCE_DIR, "tests", "interop")
COUNT = 10


def node():
    return shutil.which("node") or shutil.which("nodejs")


class RheaToProton(Scenario):
    """A proton receiver attaches; then the rhea sender runs."""

    def __init__(self, router, test, address):
        super().__init__(timeout=60)
        self.router, self.test, self.address = router, test, address
        self.messages = []
        self.child = None

    def start(self):
        self.rlink = self.container.create_receiver(self.connect(self.router.url), self.address)

    def on_link_opened(self, event):
        event.link.flow(100)
        self.child = subprocess.Popen(
            [node(), os.path.join(INTEROP, "send.js"), "--port", str(self.router.port),
             "--address", self.address, "--count", str(COUNT), "--timeout", str(30 * SLOW)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        self.test.addCleanup(self.reap)

    def reap(self):
        if self.child.poll() is None:
            self.child.kill()
        self.child.communicate(timeout=10)

    def on_message(self, event):
        self.accept(event.delivery)
        self.messages.append(event.message)

    def tick(self):
        if self.child is not None and self.child.poll() is not None:
            if self.child.returncode != 0:
                out, err = self.child.communicate(timeout=10)
                self.fail("rhea sender exited %d: %s %s" % (self.child.returncode, out, err))
            elif len(self.messages) == COUNT:
                self.out = self.child.communicate(timeout=10)[0]
                self.done()

    def progress(self):
        return "received %d, rhea sender %s" % (
            len(self.messages), "running" if self.child and self.child.poll() is None else
            "exited %s" % (self.child.returncode if self.child else "(not started)"))


class InteropTest(RouterTestCase):

    def setUp(self):
        super().setUp()
        if not node():
            self.fail("node (Node.js) is not installed; the rhea interop test needs it")
        if not os.path.isdir(os.path.join(INTEROP, "node_modules", "rhea")):
            self.fail("rhea is not installed in %s/node_modules: run `npm ci` there "
                      "(./dev test does it before the tests)" % INTEROP)

    def test_rhea_sender_to_proton_receiver(self):
        r = self.start_router()
        s = self.run_scenario(RheaToProton(r, self, "interop.to-proton"))
        summary = json.loads(s.out.strip().splitlines()[-1])
        self.assertEqual(summary["accepted"], COUNT, summary)
        self.assertEqual(len(s.messages), COUNT)
        for i, m in enumerate(s.messages):
            self.assertEqual(m.body, "message %d from rhea" % i)
            self.assertEqual(m.id, "rhea-%d" % i)
            self.assertEqual(m.correlation_id, "corr-%d" % i)
            self.assertEqual(m.subject, "interop")
            self.assertEqual(m.content_type, "text/plain")
            self.assertEqual(m.properties, {"seq": i, "origin": "rhea"})

    def test_proton_sender_to_rhea_receiver(self):
        r = self.start_router()
        child = subprocess.Popen(
            [node(), os.path.join(INTEROP, "recv.js"), "--port", str(r.port),
             "--address", "interop.to-rhea", "--count", str(COUNT), "--timeout", str(30 * SLOW)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)

        def reap():
            if child.poll() is None:
                child.kill()
            child.communicate(timeout=10)
        self.addCleanup(reap)
        line = child.stdout.readline()  # bounded by recv.js's own timeout
        self.assertEqual(line.strip(), "attached", "rhea receiver did not attach: %r %s\n%s"
                         % (line, child.stderr.read() if child.poll() is not None else "",
                            self.logs()))
        msgs = [Message(body="message %d from proton" % i, id="proton-%d" % i,
                        correlation_id="corr-%d" % i, subject="interop",
                        content_type="text/plain",
                        properties={"seq": i, "origin": "proton"}) for i in range(COUNT)]
        tx = Send("interop.to-rhea", msgs)
        self.run_scenario(Traffic(r, [], [tx], expect=0))
        self.assertEqual([tx.outcomes[i][0] for i in range(COUNT)], [Delivery.ACCEPTED] * COUNT)
        try:
            out, err = child.communicate(timeout=30 * SLOW)
        except subprocess.TimeoutExpired:
            self.fail("rhea receiver did not finish\n%s" % self.logs())
        self.assertEqual(child.returncode, 0, "rhea receiver: %s %s" % (out, err))
        got = [json.loads(x) for x in out.splitlines() if x.strip()]
        self.assertEqual(len(got), COUNT, out)
        for i, m in enumerate(got):
            self.assertEqual(m["body"], "message %d from proton" % i)
            self.assertEqual(m["message_id"], "proton-%d" % i)
            self.assertEqual(m["correlation_id"], "corr-%d" % i)
            self.assertEqual(m["subject"], "interop")
            self.assertEqual(m["content_type"], "text/plain")
            self.assertEqual(m["application_properties"], {"seq": i, "origin": "proton"})


if __name__ == "__main__":
    unittest.main()
