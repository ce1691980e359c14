#!/usr/bin/python3
"""A client's sender whose address has lost its last consumer, as 1.19
holds it (AMQP 1.0 2.6.7, drain): it keeps its credit until it sends with
it; that delivery comes back released and the sender is asked to drain,
with all the credit the router granted it. A sender that honours the
drain then holds none until a consumer attaches again, when credit comes
back and its next message arrives; one that does not sends on and every
delivery comes back released, none left unsent. One junctiond, proton
clients on 127.0.0.1.
"""
import unittest

from proton import Message

from harness import RouterTestCase, Scenario, _Call


class ConsumerGoes(Scenario):
    """Sender and receiver on `address`; one message through; the receiver
    closes; the sender sends one more (released) and then, if `honour`,
    drains when asked and waits for a new receiver to send a third; if
    not, sends `more` with the credit it still has."""

    def __init__(self, url, address, honour, more=5, size=0):
        super().__init__(timeout=30)
        self.url, self.address, self.honour, self.more = url, address, honour, more
        self.pad = ":" + "x" * size
        self.stage = "first"
        self.sent = 0
        self.released = 0
        self.drained = None
        self.got = []

    def start(self):
        self.snd = self.container.create_sender(self.connect(self.url), self.address)
        self.rconn = self.connect(self.url)
        self.rcv = self.container.create_receiver(self.rconn, self.address)
        self.rcv.flow(1)

    def send(self, body):
        self.snd.send(Message(body=body + self.pad))
        self.sent += 1

    def on_sendable(self, event):
        if event.link == self.snd and self.stage == "first" and self.sent == 0:
            self.send("one")

    def on_message(self, event):
        self.got.append(event.message.body.split(":")[0])
        event.delivery.settle()
        if self.stage == "first":
            self.stage = "gone"
            self.rcv.close()
        elif self.stage == "back":
            self.done()

    def on_link_closed(self, event):
        if event.link == self.rcv and self.stage == "gone":
            self.stage = "released"
            self.send("two")

    def on_released(self, event):
        self.released += 1
        if self.stage == "released" and not self.honour:
            self.stage = "more"
            for i in range(self.more):
                self.send("more-%d" % i)
        if self.stage == "more" and self.released == 1 + self.more:
            self.done()

    def on_link_flow(self, event):
        if event.link != self.snd or self.stage != "released" or not self.honour:
            return
        if self.snd.drain_mode:
            self.drained = self.snd.drained()
            self.stage = "drained"
            self.rcv = self.container.create_receiver(self.rconn, self.address, name="again")
            self.rcv.flow(1)

    def tick(self):
        if self.stage == "drained" and self.snd.credit > 0:
            self.stage = "back"
            self.send("three")

    def progress(self):
        return "stage %s, sent %d, released %d, drained %s, got %s" % (
            self.stage, self.sent, self.released, self.drained, self.got)


class LateDrainAnswer(ConsumerGoes):
    """As ConsumerGoes honouring the drain, but the new consumer attaches
    while the drain is still unanswered, and the sender answers it only
    `delay` seconds later: the credit the router granted for the new
    consumer meanwhile (metered, large messages) must reach the sender
    once its drain is answered."""

    def __init__(self, url, address, size, delay=1.0):
        super().__init__(url, address, honour=True, size=size)
        self.delay = delay

    def on_link_flow(self, event):
        if event.link != self.snd or self.stage != "released" or not self.snd.drain_mode:
            return
        self.stage = "asked"
        self.rcv = self.container.create_receiver(self.rconn, self.address, name="again")
        self.rcv.flow(1)

    def on_link_opened(self, event):
        if self.stage == "asked" and event.link == self.rcv:
            self.container.schedule(self.delay, _Call(self.answer))

    def answer(self):
        self.drained = self.snd.drained()
        self.stage = "drained"


class DrainTest(RouterTestCase):

    def test_credit_granted_before_a_late_drain_answer_reaches_the_sender(self):
        r = self.start_router()
        s = self.run_scenario(LateDrainAnswer(r.url, "drain.q", size=100000))
        self.assertEqual(s.got, ["one", "three"], s.progress())
        self.assertEqual(s.released, 1)

    def test_sender_that_honours_the_drain_gets_credit_again_with_a_new_consumer(self):
        r = self.start_router()
        s = self.run_scenario(ConsumerGoes(r.url, "drain.q", honour=True))
        self.assertEqual(s.got, ["one", "three"])
        self.assertEqual(s.released, 1)
        self.assertGreater(s.drained, 0)  # all the credit it held came back

    def test_sender_that_ignores_the_drain_gets_every_delivery_released(self):
        r = self.start_router()
        # 100 kB messages: the I/O layer meters the credit it hands the
        # sender (about 20 at a time); the drain hands it the rest
        s = self.run_scenario(ConsumerGoes(r.url, "drain.q", honour=False, more=40,
                                           size=100000))
        self.assertEqual(s.got, ["one"])
        self.assertEqual(s.released, 41)


if __name__ == "__main__":
    unittest.main()
