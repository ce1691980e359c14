#!/usr/bin/python3
"""System tests: a sender whose target is dynamic (AMQP 1.0 section 3.5.4)
gets a node the router names, "amqp:/_$temp.<random>", a mobile address
that a receiver on this router or on another router of the mesh attaches
to by that name (qdrouterd 1.19's behaviour).

Each test starts real junctiond processes (harness.py, mesh.py) and uses
python3-qpid-proton's event-driven Container with bounded waits.
"""
import threading
import unittest

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container, SenderOption

from harness import SLOW, RouterTestCase
from mesh import Mesh

TIMEOUT = 20 * SLOW
COUNT = 10


class AskForDynamicTarget(SenderOption):
    """The sender's target carries no address and dynamic=true."""

    def apply(self, sender):
        sender.target.address = None
        sender.target.dynamic = True


class DynamicTargetClient(MessagingHandler):
    """A sender with a dynamic target on one router; once the router names
    the target, a receiver for that name on another (or the same) router;
    COUNT messages sent to it, each to be received and accepted."""

    def __init__(self, send_url, recv_url):
        super().__init__()
        self.send_url, self.recv_url = send_url, recv_url
        self.address = None
        self.sent = self.received = self.accepted = 0
        self.error = None
        self.conns = []
        self.sender = self.receiver = None
        self.ready = False

    def on_start(self, event):
        self.timer = event.container.schedule(TIMEOUT, self)
        sc = event.container.connect(self.send_url)
        rc = sc if self.recv_url == self.send_url else event.container.connect(self.recv_url)
        self.conns = [sc] if rc is sc else [sc, rc]
        self.recv_conn = rc
        self.sender = event.container.create_sender(sc, options=AskForDynamicTarget())

    def on_timer_task(self, event):
        self.error = "timed out: address=%s sent=%d received=%d accepted=%d" % (
            self.address, self.sent, self.received, self.accepted)
        self.stop()

    def stop(self):
        for c in self.conns:
            c.close()
        self.timer.cancel()

    def on_link_opened(self, event):
        # proton hands a new wrapper per event: links are told by name
        if event.link.is_sender and event.link.name == self.sender.name and not self.receiver:
            self.address = self.sender.remote_target.address
            if not self.address:
                self.error = "the router named no dynamic target"
                self.stop()
                return
            self.receiver = event.container.create_receiver(self.recv_conn, self.address)
        elif self.receiver and event.link.name == self.receiver.name:
            self.ready = True
            self.send()

    def on_sendable(self, event):
        self.send()

    def send(self):
        while self.ready and self.sender.credit > 0 and self.sent < COUNT:
            self.sent += 1
            self.sender.send(Message(body="dyn %d" % self.sent))

    def on_message(self, event):
        self.received += 1

    def on_accepted(self, event):
        self.accepted += 1
        if self.accepted == COUNT:
            self.stop()

    def on_link_error(self, event):
        self.error = "link refused: %s" % event.link.remote_condition
        self.stop()


def run(client):
    t = threading.Thread(target=Container(client).run, daemon=True)
    t.start()
    t.join(TIMEOUT + 10)
    return client


class DynamicTargetTest(RouterTestCase):

    def check(self, client):
        self.assertIsNone(client.error, client.error)
        self.assertTrue(client.address.startswith("amqp:/_$temp."), client.address)
        self.assertEqual((client.received, client.accepted), (COUNT, COUNT))

    def test_dynamic_target_is_named_and_reaches_a_receiver_on_the_same_router(self):
        """One router: the sender's target comes back named
        amqp:/_$temp.<random>; a receiver for that name on the router gets
        every message, and the sender sees each accepted."""
        r = self.start_router()
        self.check(run(DynamicTargetClient(r.url, r.url)))

    def test_dynamic_target_reaches_a_receiver_on_another_router(self):
        """Two interior routers: the sender on A, the receiver for the name
        A gave on B; every message crosses the mesh and is accepted."""
        m = Mesh(self, ["A", "B"], [("A", "B", 1)]).start()
        self.check(run(DynamicTargetClient(m["A"].url, m["B"].url)))

    def test_two_dynamic_targets_get_different_names(self):
        """Each dynamic target gets a name of its own."""
        r = self.start_router()
        a = run(DynamicTargetClient(r.url, r.url))
        b = run(DynamicTargetClient(r.url, r.url))
        self.assertIsNone(a.error or b.error)
        self.assertNotEqual(a.address, b.address)


if __name__ == "__main__":
    unittest.main()
