#!/usr/bin/python3
"""System tests: exactly one outcome per delivery (issue 14).

A sender streams large (multi-frame) unsettled messages to a consumer that
accepts some, releases some, and then goes away while more are in flight:
its connection is killed (SIGKILL), or it detaches its link. Whatever
happens on the way, every delivery the sender sent must end with exactly
one terminal outcome and one settlement: the consumer's own for those it
settled, released or modified for the rest, none twice, none missing.
On one router, and across two routers (the consumer behind the second).
"""
import signal
import time
import unittest

from harness import SLOW, RouterTestCase, Scenario
from mesh import Mesh

LARGE = 256 * 1024  # octets per message: several frames each
COUNT = 40


class OutcomeCounter(Scenario):
    """Send COUNT large unsettled messages as credit allows; count every
    outcome callback per delivery. Once the child consumer reports it has
    accepted and released its share, kill it (or let it detach), and end
    when every delivery sent has an outcome."""

    def __init__(self, url, address, test, consumer_url, detach):
        super().__init__(timeout=60)
        self.url, self.address, self.test = url, address, test
        self.consumer_url, self.detach = consumer_url, detach
        self.outcomes = {}  # tag -> list of outcome names
        self.sent = []
        self.child = None
        self.gone_at = None

    def start(self):
        self.child = self.test.spawn("accept-some", self.consumer_url, self.address, 8, 4,
                                     "detach" if self.detach else "hold")

    def tick(self):
        lines = self.child.poll_lines()
        if not hasattr(self, "sender"):
            # the child subscribes at once: attach the sender after a head
            # start, so the consumer (and its credit) is there
            if time.monotonic() - self.started > 1.0 * SLOW:
                self.sender = self.container.create_sender(self.connect(self.url), self.address)
            return
        if self.gone_at is None and "released 4" in lines:
            self.gone_at = time.monotonic()
            if not self.detach:
                time.sleep(0.3)  # let its last dispositions leave
                self.child.proc.send_signal(signal.SIGKILL)
        if self.gone_at and self.sent and all(self.outcomes.get(t) for t in self.sent) and \
                time.monotonic() - self.gone_at > 1.0:
            self.done()

    def on_sendable(self, event):
        while event.sender.credit > 0 and len(self.sent) < COUNT and self.gone_at is None:
            tag = str(len(self.sent))
            dlv = event.sender.delivery(tag)
            event.sender.stream(b"\x00\x53\x75\xb0" + LARGE.to_bytes(4, "big") +
                                bytes([len(self.sent) % 256]) * LARGE)
            event.sender.advance()
            self.sent.append(tag)

    def _outcome(self, event, name):
        self.outcomes.setdefault(event.delivery.tag, []).append(name)

    def on_accepted(self, event):
        self._outcome(event, "accepted")

    def on_rejected(self, event):
        self._outcome(event, "rejected")

    def on_released(self, event):
        self._outcome(event, "released" if event.delivery.remote_state ==
                      event.delivery.RELEASED else "modified")

    def progress(self):
        return "sent %d, outcomes %r" % (len(self.sent), self.outcomes)


class OutcomeChecks:

    def check(self, s):
        self.assertTrue(s.sent, "nothing was sent")
        for tag in s.sent:
            got = s.outcomes.get(tag, [])
            self.assertEqual(len(got), 1, "delivery %s: outcomes %r (all: %r)"
                             % (tag, got, s.outcomes))
        accepted = sum(1 for t in s.sent if s.outcomes[t] == ["accepted"])
        self.assertEqual(accepted, 8, s.outcomes)
        self.assertGreaterEqual(sum(1 for t in s.sent if s.outcomes[t] == ["released"]), 4,
                                s.outcomes)


class OneRouterOutcomeTest(RouterTestCase, OutcomeChecks):

    def test_consumer_killed_mid_stream(self):
        r = self.start_router()
        s = self.run_scenario(OutcomeCounter(r.url, "once.q", self, r.url, detach=False))
        self.check(s)

    def test_consumer_detaches_mid_stream(self):
        r = self.start_router()
        s = self.run_scenario(OutcomeCounter(r.url, "once.q", self, r.url, detach=True))
        self.check(s)


class TwoRouterOutcomeTest(RouterTestCase, OutcomeChecks):

    def test_consumer_behind_second_router_killed_mid_stream(self):
        m = Mesh(self, ["A", "B"], [("B", "A", 1)]).start()
        s = self.run_scenario(OutcomeCounter(m["A"].url, "once.mesh", self, m["B"].url,
                                             detach=False))
        self.check(s)


if __name__ == "__main__":
    unittest.main()
