#!/usr/bin/python3
"""System tests: the credit of the links the router attaches to a route
container (issue 25).

* A waypoint that sends a message back only when one arrives (as 1.19's
  multi-tenancy waypoint tests do) gets every message back through its
  auto-link: the return link (the router's own attach to the container)
  holds the whole capacity from the start, as 1.19 grants it. A client's
  sender gets 4 credits until its first message's size is known
  (docs/compat.md, "A new link's first credit").
* So it does across two routers that both configure the auto-links, the
  waypoint on one's route-container listener and the clients on the other
  (1.19's multi-tenancy tests 32, 35, 36).

One junctiond (two for the mesh case), proton clients on 127.0.0.1.
"""
import unittest

from proton import Message

from harness import RouterTestCase, Scenario, conf_section, free_port
from mesh import Mesh

class Waypoint(Scenario):
    """The waypoint container (`container_id`, on `waypoint_url`) takes
    the `count` messages a client sends to the address from its auto-link
    out and, once it has them all, sends them back on its auto-link in
    with the credit it has then (never on a credit event, as 1.19's
    multi-tenancy waypoint client does); another client receives them from
    the address's second phase."""

    def __init__(self, url, waypoint_url, address, container_id, count=10):
        super().__init__(timeout=20)
        self.url, self.wurl = url, waypoint_url
        self.address, self.cid, self.count = address, container_id, count
        self.wp_in = self.wp_out = None
        self.queue = []
        self.thru = 0
        self.sent = 0
        self.got = 0

    def run(self):
        from proton.reactor import Container
        self.container = Container(self)
        self.container.container_id = self.cid
        self.container.run()
        return self

    def start(self):
        self.wconn = self.connect(self.wurl)

    def on_link_opening(self, event):
        # the router's auto-links attach to the waypoint: answer them
        if event.connection != self.wconn:
            return
        if event.sender:
            self.wp_out = event.sender
            event.sender.source.address = event.sender.remote_source.address
        else:
            self.wp_in = event.receiver
            event.receiver.target.address = event.receiver.remote_target.address
            event.receiver.flow(self.count)
        event.link.open()
        if self.wp_in and self.wp_out:
            self.cconn = self.connect(self.url)
            self.rcv = self.container.create_receiver(self.cconn, self.address)
            self.rcv.flow(self.count)

    def on_link_flow(self, event):
        if event.link == self.wp_out and getattr(self, "snd", None) is None:
            self.snd = self.container.create_sender(self.cconn, self.address)

    def on_sendable(self, event):
        if event.link == getattr(self, "snd", None):
            while self.snd.credit > 0 and self.sent < self.count:
                self.snd.send(Message(body="m%d" % self.sent))
                self.sent += 1

    def on_message(self, event):
        event.delivery.settle()
        if event.receiver == self.wp_in:
            self.queue.append(Message(body=event.message.body))
            if len(self.queue) + self.thru < self.count:
                return  # the whole batch first: its return never waits on a flow
            while self.wp_out.credit > 0 and self.queue:
                self.wp_out.send(self.queue.pop(0))
                self.thru += 1
        elif event.receiver == getattr(self, "rcv", None):
            self.got += 1
            if self.got == self.count:
                self.done()

    def progress(self):
        credit = self.wp_out.credit if self.wp_out else None
        return ("sent %d, through the waypoint %d (its return credit %s, %d waiting), got %d"
                % (self.sent, self.thru, credit, len(self.queue), self.got))

class RouterCreditTest(RouterTestCase):

    def test_waypoint_sending_back_only_on_arrival_returns_every_message(self):
        cid = "jn-waypoint"
        wport = free_port()  # the waypoint's own listener, as 1.19's tests have it
        extra = conf_section("listener", {"host": "127.0.0.1", "port": wport,
                                          "role": "route-container",
                                          "saslMechanisms": "ANONYMOUS",
                                          "authenticatePeer": "no"})
        extra += conf_section("address", {"prefix": "wp", "waypoint": "yes"})
        for d in ("in", "out"):
            extra += conf_section("autoLink", {"address": "wp.q", "direction": d,
                                               "containerId": cid})
        r = self.start_router(extra=extra)
        s = self.run_scenario(Waypoint(r.url, "amqp://127.0.0.1:%d" % wport, "wp.q", cid,
                                       count=10))
        self.assertEqual((s.sent, s.thru, s.got), (10, 10, 10), s.progress())

    def test_two_routers_both_with_the_auto_links_waypoint_on_one_returns_every_message(self):
        # 1.19's multi-tenancy tests 32, 35, 36: both routers configure the
        # same auto-links; the waypoint container comes in on B's
        # route-container listener only, the clients are on A: the phases
        # cross the mesh both ways (A's auto-links serve no connection)
        cid = "jn-waypoint2"
        wport = free_port()
        links = conf_section("address", {"prefix": "wp", "waypoint": "yes"})
        for d in ("in", "out"):
            links += conf_section("autoLink", {"address": "wp.q", "direction": d,
                                               "containerId": cid})
        wl = conf_section("listener", {"host": "127.0.0.1", "port": wport,
                                       "role": "route-container",
                                       "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"})
        m = Mesh(self, ["A", "B"], [("B", "A", 1)], extra={"A": links, "B": links + wl}).start()
        s = self.run_scenario(Waypoint(m["A"].url, "amqp://127.0.0.1:%d" % wport, "wp.q", cid,
                                       count=10))
        self.assertEqual((s.sent, s.thru, s.got), (10, 10, 10), s.progress())

if __name__ == "__main__":
    unittest.main()
