#!/usr/bin/python3
"""A delivery whose sender detaches its link in the middle of the message
(AMQP 1.0 2.7.5, transfer aborted), as 1.19 handles it: the consumer's copy
ends aborted (the router sends a transfer with aborted=true before it ends
the link), on a link route (where the router ends the consumer's link too)
and on a routed address (where the consumer's link goes on and the next
message arrives). Real junctiond processes and proton peers on 127.0.0.1.
"""
from proton import Handler, Message
from proton.reactor import Container

from harness import SLOW, RouterTestCase, _Call  # _Call: a timer task that calls fn
from test_router_linkroute_wire import (FakeBroker, LinkRouteCase, config, fake_connector,
                                        link_route)

TIMEOUT = 20 * SLOW
BIG = Message(body=b"x" * 400000).encode()


class HalfSender(Handler):
    """Sends the first half of a 400 kB message on address, waits a moment,
    then closes the link (not the connection); then, with `after`, sends
    that message whole on a new link. Stops at the timeout."""

    def __init__(self, url, address, after=None):
        super().__init__()
        self.url, self.address, self.after = url, address, after
        self.sent = False

    def run(self):
        Container(self).run()

    def on_reactor_init(self, event):
        self.conn = event.reactor.connect(self.url, allowed_mechs="ANONYMOUS")
        self.link = event.reactor.create_sender(self.conn, self.address, name="half")
        self.deadline = event.reactor.schedule(TIMEOUT, self)

    def on_link_flow(self, event):
        if event.link == self.link and not self.sent and self.link.credit > 0:
            self.sent = True
            self.link.delivery("half")
            self.link.send(BIG[:len(BIG) // 2])
            event.reactor.schedule(1.0, _Call(self.cut))
        elif self.after and event.link != self.link and event.link.credit > 0:
            event.link.delivery("whole")
            event.link.send(self.after.encode())
            event.link.advance()
            self.after = None
            self.deadline.cancel()
            event.reactor.schedule(1.0, _Call(self.conn.close))

    def cut(self):
        self.link.close()
        if self.after:
            s = self.conn.session()
            s.open()
            ln = s.sender("whole")
            ln.target.address = self.address
            ln.open()
        else:
            self.deadline.cancel()
            self.conn.close()

    def on_timer_task(self, event):
        self.conn.close()

    def on_transport_error(self, event):
        pass


class AbortBroker(FakeBroker):
    """The fake route container, recording the tags of aborted deliveries."""

    def __init__(self):
        super().__init__()
        self.aborted = []

    def on_delivery(self, event):
        dlv = event.delivery
        if event.link.is_receiver and dlv.aborted:
            with self.lock:
                self.aborted.append(dlv.tag)
            dlv.settle()
            return
        super().on_delivery(event)


class Receiver(Handler):
    """Receives on address; records aborted tags and whole message bodies
    until `want` bodies arrived or the timeout."""

    def __init__(self, url, address, want):
        super().__init__()
        self.url, self.address, self.want = url, address, want
        self.aborted, self.bodies = [], []
        self.ready = False

    def on_reactor_init(self, event):
        self.conn = event.reactor.connect(self.url, allowed_mechs="ANONYMOUS")
        self.link = event.reactor.create_receiver(self.conn, self.address)
        self.link.flow(10)
        self.deadline = event.reactor.schedule(TIMEOUT, self)

    def on_link_remote_open(self, event):
        self.ready = True

    def on_delivery(self, event):
        dlv = event.delivery
        if dlv.aborted:
            self.aborted.append(dlv.tag)
            dlv.settle()
            return
        if dlv.partial:
            return
        m = Message()
        m.decode(self.link.recv(dlv.pending))
        self.bodies.append(m.body)
        dlv.settle()
        if len(self.bodies) >= self.want:
            self.deadline.cancel()
            self.conn.close()

    def on_timer_task(self, event):
        self.conn.close()


class AbortTest(LinkRouteCase):

    def test_link_routed_sender_detaching_mid_message_aborts_the_containers_copy(self):
        b = AbortBroker().start()
        self.addCleanup(b.stop)
        r = self.start_config("R", config("R", extra=fake_connector(b) +
                                          link_route("lr", "in") + link_route("lr", "out")))
        self.wait_log(r, "Connection Opened: dir=out")
        HalfSender(r.url, "lr.in.q").run()
        self.wait_for("the container's copy aborted",
                      lambda: b.aborted == ["half"], TIMEOUT)  # its tag passes too
        with b.lock:
            self.assertEqual(b.got, [])

    def test_routed_sender_detaching_mid_message_aborts_the_copy_and_the_link_goes_on(self):
        import threading
        r = self.start_router()
        rx = Receiver(r.url, "abort.q", want=1)
        c = Container(rx)
        t = threading.Thread(target=c.run, daemon=True)
        t.start()
        self.wait_for("the receiver", lambda: rx.ready, TIMEOUT)
        HalfSender(r.url, "abort.q", after=Message(body="next")).run()
        t.join(TIMEOUT)
        self.assertEqual((len(rx.aborted), rx.bodies), (1, ["next"]), self.logs())


if __name__ == "__main__":
    import unittest
    unittest.main()
