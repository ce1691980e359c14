#!/usr/bin/python3
"""System tests: credit and drain pass through a link route (issue 25;
AMQP 1.0 2.6.7; qdrouterd 1.19 passes a receiver's drain to the container).

- A client receiver on a link-routed address drains: the drain reaches
  the container's sending link with the client's credit, the messages the
  container held for the drain reach the client, and the container's
  answer (delivery-count advanced, credit 0) reaches the client after
  them. Before, the router answered the drain itself at once and the
  container's messages were never asked for.
- A draining receiver whose container has nothing: the answer still
  comes back, and new credit after it passes again.
- A delivery whose tag is longer than 32 octets (2.8.7) on a link-routed
  sender is rejected with amqp:invalid-field (the router must carry the
  tag as it is); the others pass, as 1.19.

One junctiond, a fake container (python proton, own thread) on a
route-container listener, proton clients; waits bounded.
"""
import threading
import unittest

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

from harness import SLOW, RouterTestCase, Scenario, conf_section, container_listener
from test_router_entities import LOGS, Manager, client_listener, router_section

TIMEOUT = 15 * SLOW
LR = "org.apache.qpid.dispatch.router.config.linkRoute"


class DrainBroker(MessagingHandler):
    """A container "broker" on url. Its sending links hold `queued`
    messages and send them only when drained (then as many as the credit
    allows, then drained()); each flow it sees is kept in `flows` as
    (credit, drain). Its receiving links accept every message (bodies in
    `got`)."""

    def __init__(self, url, queued):
        super().__init__(prefetch=20, auto_accept=True)
        self.url, self.queued = url, list(queued)
        self.flows, self.got = [], []
        self.lock = threading.Lock()
        self.up = threading.Event()
        self.conn = None

    def on_start(self, event):
        self.conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS")

    def on_connection_opened(self, event):
        self.up.set()

    def on_link_opening(self, event):
        link = event.link
        if link.is_receiver:
            link.target.address = link.remote_target.address
        else:
            link.source.address = link.remote_source.address

    def on_link_flow(self, event):
        link = event.link
        if not link.is_sender:
            return
        with self.lock:
            self.flows.append((link.credit, link.drain_mode))
        if not link.drain_mode:
            return
        while self.queued and link.credit > 0:
            link.send(Message(body=self.queued.pop(0)))
        link.drained()

    def on_message(self, event):
        with self.lock:
            self.got.append(event.message.body)

    def on_timer_task(self, event):
        if self.conn:
            self.conn.close()

    def start(self):
        self.container = Container(self)
        self.container.container_id = "broker"
        self.thread = threading.Thread(target=self.container.run, daemon=True)
        self.thread.start()
        if not self.up.wait(TIMEOUT):
            raise AssertionError("the broker never connected to %s" % self.url)
        return self

    def stop(self):
        if self.thread.is_alive():
            self.container.schedule(0, self)
            self.thread.join(TIMEOUT)

    def drains(self):
        with self.lock:
            return [c for c, d in self.flows if d]


class DrainingReceiver(Scenario):
    """A receiver on `address` grants `credit` with the drain flag; records
    the bodies it gets and, at each flow from the router, whether messages
    had come before it (`answers`: (messages so far, credit)). After the
    first answer it drains again with `again` credit, if given."""

    def __init__(self, url, address, credit, again=0):
        super().__init__(timeout=TIMEOUT)
        self.url, self.address, self.credit, self.again = url, address, credit, again
        self.got, self.answers = [], []

    def start(self):
        self.rcv = self.container.create_receiver(self.connect(self.url), self.address)

    def on_link_opened(self, event):
        if event.link == self.rcv:
            self.rcv.drain(self.credit)

    def on_message(self, event):
        self.got.append(event.message.body)
        event.delivery.update(event.delivery.ACCEPTED)
        event.delivery.settle()

    def on_link_flow(self, event):
        if event.link != self.rcv or self.rcv.credit != 0 or self.rcv.draining():
            return
        self.answers.append((len(self.got), self.rcv.credit))
        if len(self.answers) == 1 and self.again:
            self.rcv.drain(self.again)
        else:
            self.done()

    def progress(self):
        return "got %r, answers %r" % (self.got, self.answers)


class LongTagSender(Scenario):
    """Sends three messages on `address`, the second with a 40-octet tag;
    records each outcome by body."""

    def __init__(self, url, address):
        super().__init__(timeout=TIMEOUT)
        self.url, self.address = url, address
        self.sent, self.outcomes = 0, {}

    def start(self):
        self.snd = self.container.create_sender(self.connect(self.url), self.address)

    def on_sendable(self, event):
        while self.sent < 3 and self.snd.credit > 0:
            self.sent += 1
            tag = ("L" * 40) if self.sent == 2 else "t%d" % self.sent
            dlv = self.snd.send(Message(body="m%d" % self.sent), tag=tag)
            dlv.body = "m%d" % self.sent

    def outcome(self, event, what):
        cond = event.delivery.remote.condition
        self.outcomes[event.delivery.body] = (what, cond.name if cond else None)
        event.delivery.settle()
        if len(self.outcomes) == 3:
            self.done()

    def on_accepted(self, event):
        self.outcome(event, "accepted")

    def on_rejected(self, event):
        self.outcome(event, "rejected")

    def progress(self):
        return "outcomes %r" % self.outcomes


class LinkRouteDrainTest(RouterTestCase):

    def router_with_broker(self, queued=()):
        lr = "".join(conf_section("linkRoute", {"prefix": "lr", "direction": d,
                                                "containerId": "broker"})
                     for d in ("in", "out"))
        r = self.start_router(config=router_section("R") + client_listener() +
                              container_listener() + LOGS + lr)
        broker = DrainBroker(r.container_url, queued).start()
        self.addCleanup(broker.stop)
        self.wait_for("the link routes active",
                      lambda: self.statuses(r) == ["active", "active"], TIMEOUT)
        return r, broker

    def statuses(self, router):
        m = Manager(router.url)
        try:
            return sorted(x["operStatus"] for x in m.query(LR, ["operStatus"]))
        finally:
            m.close()

    def run_scenario(self, s):
        s.run()
        self.assertIsNone(s.error, s.error)
        return s

    def test_drain_passes_to_the_container_and_its_held_messages_arrive(self):
        r, broker = self.router_with_broker(["a", "b", "c"])
        s = self.run_scenario(DrainingReceiver(r.url, "lr.q", 10))
        self.assertEqual(s.got, ["a", "b", "c"])
        # the answer came after the three messages, credit used up
        self.assertEqual(s.answers, [(3, 0)])
        # the container saw the client's drain with the client's credit
        self.assertIn(10, broker.drains())

    def test_drain_answer_with_nothing_held_and_credit_passes_again(self):
        r, broker = self.router_with_broker([])
        s = self.run_scenario(DrainingReceiver(r.url, "lr.q", 5, again=7))
        self.assertEqual(s.got, [])
        self.assertEqual(s.answers, [(0, 0), (0, 0)])
        self.assertEqual(broker.drains()[:1], [5])
        self.assertIn(7, broker.drains())

    def test_delivery_tag_over_32_octets_is_rejected_on_a_link_route(self):
        r, broker = self.router_with_broker()
        s = self.run_scenario(LongTagSender(r.url, "lr.in"))
        self.assertEqual(s.outcomes, {"m1": ("accepted", None),
                                      "m2": ("rejected", "amqp:invalid-field"),
                                      "m3": ("accepted", None)})
        self.wait_for("the broker's two messages", lambda: len(broker.got) >= 2, TIMEOUT)
        self.assertEqual(sorted(broker.got), ["m1", "m3"])


if __name__ == "__main__":
    unittest.main()
