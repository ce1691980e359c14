#!/usr/bin/python3
"""System tests: the sender's late settlement reaches every copy (issue 25,
item b; qd119 system_tests_multicast test_51_presettled_mixed_large_msg).

A link sends one delivery at a time: a copy handed to a consumer's link
while the copy before it is still being sent (a large message still
arriving) waits behind it. When the sender settles its delivery while the
copy waits, the copy must still be settled toward the consumer once it
goes out; a consumer that accepts and waits for the sender to settle (as
1.19's multicast tests do) otherwise never sees the settlement, and the
router holds the copy until the consumer's link goes.

Checked on one router and across two (the copy toward the next router
waits on the inter-router link the same way), multicast and anycast: a
sender streams a large message A (part of it, then the rest later); a
second sender sends B unsettled and settles it while A's copy is still in
progress on the consumer's link; the consumer gets B, accepts it, and
must see it settled.

Real junctiond processes and proton clients on 127.0.0.1; waits bounded.
"""
import unittest

from proton import Delivery, Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

from harness import SLOW, RouterTestCase
from mesh import Mesh

TIMEOUT = 20 * SLOW
MC = [{"prefix": "mc", "distribution": "multicast"}]
LARGE = Message(body="A" + "x" * 300000).encode()
PART = 40000  # of LARGE, sent first: enough to route it and start its copy


class Timeout:
    def __init__(self, test):
        self.test = test

    def on_timer_task(self, event):
        t = self.test
        t.finish("timed out: got %s, B settled: %s" % (t.got, t.b_settled))


class LateSettle(MessagingHandler):
    """Receiver on recv_url; on send_url, sender `a` streams LARGE in two
    parts, sender `b` sends B unsettled while A's copy is in progress and
    settles it a moment later; then A's rest follows. Done when the
    receiver has A and B and B is settled (`b_settled`), or at the
    timeout."""

    def __init__(self, send_url, recv_url, address, ready=lambda: None):
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        self.send_url, self.recv_url, self.address = send_url, recv_url, address
        self.ready = ready
        self.error = None
        self.got = []
        self.b_settled = False
        self.b_dlv = self.a_dlv = self.rx_b = None
        self.step = 0
        self.conns = []

    def on_start(self, event):
        self.timer = event.reactor.schedule(TIMEOUT, Timeout(self))
        rc = event.container.connect(self.recv_url, allowed_mechs="ANONYMOUS")
        self.conns.append(rc)
        self.receiver = event.container.create_receiver(rc, self.address, name="rx")

    def on_link_opened(self, event):
        if event.receiver == self.receiver:
            event.receiver.flow(10)
            self.ready()  # the address known where the senders are
            sc = event.container.connect(self.send_url, allowed_mechs="ANONYMOUS")
            self.conns.append(sc)
            self.a = event.container.create_sender(sc, self.address, name="a")
            self.b = event.container.create_sender(sc, self.address, name="b")

    def on_sendable(self, event):
        if self.step == 0 and self.a.credit > 0 and self.b.credit > 0:
            self.step = 1
            self.a_dlv = self.a.delivery("a-1")
            self.a.stream(LARGE[:PART])  # A's copy starts, and stays in progress
            event.reactor.schedule(0.5 * SLOW, self)

    def on_timer_task(self, event):
        if self.step == 1:  # B's copy now waits behind A's
            self.step = 2
            self.b_dlv = self.b.send(Message(body="B"))
            event.reactor.schedule(0.5 * SLOW, self)
        elif self.step == 2:  # the sender settles B while its copy waits
            self.step = 3
            self.b_dlv.settle()
            event.reactor.schedule(0.5 * SLOW, self)
        elif self.step == 3:  # A's rest: A's copy ends, B's goes out
            self.step = 4
            self.a.stream(LARGE[PART:])
            self.a.advance()
            self.a_dlv.settle()

    def on_message(self, event):
        body = event.message.body
        self.got.append("A" if body.startswith("A") else body)
        if event.delivery.settled:  # settled on its transfer
            self.b_settled = self.b_settled or body == "B"
            event.delivery.settle()
        else:
            event.delivery.update(Delivery.ACCEPTED)  # and wait for the sender
            if body == "B":
                self.rx_b = event.delivery
        self.check()

    def on_settled(self, event):
        # the sender's settlement of a copy this receiver accepted
        if event.receiver == self.receiver:
            self.b_settled = self.b_settled or event.delivery == self.rx_b
            event.delivery.settle()
            self.check()

    def check(self):
        if sorted(self.got) == ["A", "B"] and self.b_settled:
            self.finish()

    def finish(self, error=None):
        if self.step == 5:
            return
        self.step = 5
        self.error = error
        self.timer.cancel()
        for c in self.conns:
            c.close()

    def run(self):
        Container(self).run()
        return self


class LateSettlementTest(RouterTestCase):

    def check(self, t):
        self.assertIsNone(t.error, self.logs())
        self.assertEqual(sorted(t.got), ["A", "B"])
        self.assertTrue(t.b_settled)

    def test_multicast_copy_waiting_behind_a_large_one_is_settled_when_the_sender_settles(self):
        r = self.start_router(addresses=MC)
        self.check(LateSettle(r.url, r.url, "mc.late").run())

    def test_anycast_copy_waiting_behind_a_large_one_is_settled_when_the_sender_settles(self):
        r = self.start_router()
        self.check(LateSettle(r.url, r.url, "q.late").run())

    def test_multicast_copy_to_the_next_router_is_settled_when_the_sender_settles(self):
        m = Mesh(self, ["A", "B"], [("A", "B", 1)]).start()
        t = LateSettle(m["A"].url, m["B"].url, "mc.late2",
                       ready=lambda: m.wait_address("M0mc.late2", {"B"}))
        self.check(t.run())


if __name__ == "__main__":
    unittest.main()
