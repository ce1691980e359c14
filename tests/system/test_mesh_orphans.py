#!/usr/bin/python3
"""A transit router dies in the middle (issue 14, "A router that dies in
the middle").

A sender on A streams unsettled messages to a receiver on C, which accepts
each one but leaves the settling to the router (it settles only once the
router has: what receivers in rcv-settle-mode second do). B, the transit
router, is killed (SIGKILL) mid-stream. Afterwards every delivery must end
with a final state at both ends: the sender gets the receiver's outcome or
modified (delivery-failed) for each message it sent, and the deliveries
the receiver accepted but whose settlement could not travel back are
settled by C, the egress router, once the path is gone — so no router
shows an unsettled delivery on a client link once the timers have run.
(qdrouterd 1.19 leaves those unsettled on the receiver's link.)
In the A-B-C line and in the A-B-C-D square.
"""
import time
import unittest

from proton import Delivery, Message

from harness import SLOW, RouterTestCase, Scenario
from mesh import Mesh
from test_mgmt_agent import Manager


class KillInTheMiddle(Scenario):
    # Neither end settles before the other (the sender waits for the
    # router's settlement, the receiver too), so every delivery stays
    # unsettled until the kill: the consumer's link is handed at most
    # twice its linkCapacity (500) unsettled ones (docs/design.md
    # "Credit"), so the kill comes before that, and what is sent after it
    # fits too.
    def __init__(self, send_url, recv_url, kill, total=400, kill_after=200, window=150):
        super().__init__(timeout=60)
        self.send_url, self.recv_url, self.kill = send_url, recv_url, kill
        self.total, self.kill_after, self.window = total, kill_after, window
        self.outcomes = {}
        self.sent = 0
        self.killed_at = None
        self.snd = None
        self.changed = []  # (seq, first outcome, later outcome): must stay empty

    def start(self):
        self.rcv = self.container.create_receiver(self.connect(self.recv_url), "orphan.q")

    def on_link_opened(self, event):
        if event.link == self.rcv:
            event.link.flow(self.window)
            self.snd = self.container.create_sender(self.connect(self.send_url), "orphan.q")

    def on_sendable(self, event):
        self.pump()

    def pump(self):
        if self.snd is None or self.killed_at is not None:
            return
        while self.snd.credit > 0 and self.sent < self.total and \
                self.sent - len(self.outcomes) < self.window:
            dlv = self.snd.send(Message(body=self.sent))
            dlv.seq = self.sent
            self.sent += 1

    def on_message(self, event):
        event.delivery.update(Delivery.ACCEPTED)  # the router settles first
        event.link.flow(1)

    def on_settled(self, event):
        if event.delivery.link == self.rcv:
            event.delivery.settle()  # the router settled: so do we

    def on_accepted(self, event):
        self.outcome(event)

    def on_released(self, event):  # released and modified
        self.outcome(event)

    def on_rejected(self, event):
        self.outcome(event)

    def outcome(self, event):
        dlv = event.delivery
        before = self.outcomes.get(dlv.seq)
        if before is not None and before != dlv.remote_state:
            self.changed.append((dlv.seq, before, dlv.remote_state))
        self.outcomes[dlv.seq] = dlv.remote_state
        self.pump()
        if self.killed_at is None and len(self.outcomes) >= self.kill_after:
            self.killed_at = time.monotonic()
            self.kill()

    def tick(self):
        self.pump()
        if self.killed_at and len(self.outcomes) == self.sent and \
                time.monotonic() - self.killed_at > 2.0 * SLOW:
            self.done()

    def progress(self):
        return "sent %d, outcomes %d" % (self.sent, len(self.outcomes))


class OrphansTest(RouterTestCase):

    def client_links_unsettled(self, router):
        m = Manager(router)
        try:
            links = m.query("org.apache.qpid.dispatch.router.link")
        finally:
            m.close()
        # the clients' links (not the management request that asks)
        return {(l["linkDir"], l.get("owningAddr")): l["unsettledCount"]
                for l in links if l["linkType"] == "endpoint" and l["unsettledCount"] and
                "orphan.q" in str(l.get("owningAddr"))}

    def check(self, m, s, survivors):
        states = list(s.outcomes.values())
        self.assertEqual(len(s.outcomes), s.sent, "every message sent has an outcome")
        self.assertEqual(states.count(Delivery.ACCEPTED) + states.count(Delivery.MODIFIED) +
                         states.count(Delivery.RELEASED), s.sent, states)
        self.assertGreater(states.count(Delivery.ACCEPTED), s.kill_after // 2,
                           {str(x): states.count(x) for x in set(states)})
        self.assertEqual(s.changed, [], "deliveries whose outcome changed after it was given")
        deadline = time.monotonic() + 10 * SLOW
        while True:
            left = {n: self.client_links_unsettled(m[n]) for n in survivors}
            if not any(left.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.assertFalse(any(left.values()), "unsettled deliveries left on client links: %r\n%s"
                         % (left, self.logs()))

    def test_line_transit_router_killed(self):
        m = Mesh(self, ["A", "B", "C"], [("B", "A", 1), ("C", "B", 1)]).start()
        s = self.run_scenario(KillInTheMiddle(m["A"].url, m["C"].url, lambda: m.kill("B")))
        self.check(m, s, ["A", "C"])

    def test_square_transit_router_killed(self):
        edges = [("A", "B", 1), ("B", "C", 1), ("C", "D", 10), ("D", "A", 10)]
        m = Mesh(self, ["A", "B", "C", "D"], edges).start()
        s = self.run_scenario(KillInTheMiddle(m["A"].url, m["C"].url, lambda: m.kill("B")))
        self.check(m, s, ["A", "C", "D"])


if __name__ == "__main__":
    unittest.main()
