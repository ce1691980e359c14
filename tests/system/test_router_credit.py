#!/usr/bin/python3
"""System tests: the credit an incoming link gets, as qdrouterd 1.19 grants
it (issue 25), and the memory that stays bounded with it.

* A new sender gets linkCapacity (250) credits at once, before the router
  knows how large its messages are, so a client that sends what its
  credit allows once and then stops gets every message through.
* A waypoint that sends a message back only when one arrives (as 1.19's
  multi-tenancy waypoint tests do) gets every message back through its
  auto-link: its return link holds the whole capacity from the start.
  So it does across two routers that both configure the auto-links, the
  waypoint on one's route-container listener and the clients on the other
  (1.19's multi-tenancy tests 32, 35, 36).
* 250 messages of 1 MiB from a sender with all that credit to a consumer
  that grants none: the router reads only its per-link mark and proton's
  session window stops the sender, so its RSS grows by a few tens of MB,
  not 250; when the consumer grants credit, every message arrives in
  order.

One junctiond (two for the mesh case), proton clients on 127.0.0.1.
"""
import time
import unittest

from proton import Message

from harness import SANITIZER, SLOW, RouterTestCase, Scenario, conf_section, free_port
from mesh import Mesh

CAPACITY = 250  # linkCapacity's default, as 1.19's
MB = 1 << 20


class FirstCredit(Scenario):
    """A receiver with credit on `address`, then a sender that sends
    `count` messages in its first sendable event and never again."""

    def __init__(self, url, address, count):
        super().__init__(timeout=20)
        self.url, self.address, self.count = url, address, count
        self.first_credit = None
        self.sent = 0
        self.got = []

    def start(self):
        conn = self.connect(self.url)
        self.rcv = self.container.create_receiver(conn, self.address)
        self.rcv.flow(self.count)

    def on_link_opened(self, event):
        if event.link == self.rcv:
            self.snd = self.container.create_sender(self.connect(self.url), self.address)

    def on_sendable(self, event):
        if event.link != self.snd or self.first_credit is not None:
            return
        self.first_credit = self.snd.credit
        while self.snd.credit > 0 and self.sent < self.count:
            self.snd.send(Message(body="m%d" % self.sent))
            self.sent += 1

    def on_message(self, event):
        self.got.append(event.message.body)
        event.delivery.settle()
        if len(self.got) == self.count:
            self.done()

    def progress(self):
        return "first credit %s, sent %d, got %d" % (self.first_credit, self.sent, len(self.got))


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


class NoConsumerCredit(Scenario):
    """A receiver on `address` that grants no credit, and a sender of
    `count` messages of `size` octets that sends whenever it has credit
    (at most two unsent in its own buffer, to keep the client small).
    When the sender has stalled for `stall` seconds (or after `hold`
    seconds), `at_stall` is called and the receiver grants `count`."""

    def __init__(self, url, address, count, size, at_stall, stall=2.0, hold=30.0):
        super().__init__(timeout=120)
        self.url, self.address, self.count = url, address, count
        self.body = b"x" * size
        self.at_stall, self.stall, self.hold = at_stall, stall * SLOW, hold * SLOW
        self.snd = None
        self.first_credit = None
        self.sent = 0
        self.last_move = None
        self.granted = False
        self.got = []

    def start(self):
        conn = self.connect(self.url)
        self.rcv = self.container.create_receiver(conn, self.address)

    def on_link_opened(self, event):
        if event.link == self.rcv and self.snd is None:
            self.snd = self.container.create_sender(self.connect(self.url), self.address)
            self.last_move = time.monotonic()

    def pump(self):
        if self.snd is None:
            return
        if self.first_credit is None and self.snd.credit > 0:
            self.first_credit = self.snd.credit
        while self.snd.credit > 0 and self.sent < self.count and self.snd.queued < 2:
            self.snd.send(Message(body=self.body, properties={"seq": self.sent}))
            self.sent += 1
            self.last_move = time.monotonic()

    def on_sendable(self, event):
        self.pump()

    def on_link_flow(self, event):
        self.pump()

    def tick(self):
        self.pump()
        if self.granted or self.last_move is None:
            return
        queued = self.snd.queued if self.snd else 0
        if queued == 0 and self.sent == 0:
            return
        if time.monotonic() - self.last_move > self.stall or self.elapsed() > self.hold:
            self.granted = True
            self.at_stall(self)
            self.rcv.flow(self.count)

    def on_message(self, event):
        self.got.append(event.message.properties["seq"])
        event.delivery.settle()
        if len(self.got) == self.count:
            self.done()

    def progress(self):
        return ("sent %d (first credit %s), granted %s, got %d"
                % (self.sent, self.first_credit, self.granted, len(self.got)))


class RouterCreditTest(RouterTestCase):

    def test_new_sender_gets_link_capacity_at_once_and_a_one_shot_burst_arrives(self):
        r = self.start_router()
        s = self.run_scenario(FirstCredit(r.url, "credit.q", 20))
        self.assertEqual(s.first_credit, CAPACITY, s.progress())
        self.assertEqual(s.got, ["m%d" % i for i in range(20)], s.progress())

    def test_link_capacity_of_the_listener_is_the_first_credit(self):
        r = self.start_router(listener={"linkCapacity": 30})
        s = self.run_scenario(FirstCredit(r.url, "credit.q", 30))
        self.assertEqual(s.first_credit, 30, s.progress())
        self.assertEqual(len(s.got), 30, s.progress())

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

    def test_1mib_burst_with_full_credit_to_consumer_without_credit_rss_bounded(self):
        r = self.start_router()
        before = r.status_kb("VmRSS")
        seen = {}

        def at_stall(s):
            seen["sent"] = s.sent
            seen["rss"] = r.status_kb("VmRSS")

        s = self.run_scenario(NoConsumerCredit(r.url, "burst.q", CAPACITY, MB, at_stall))
        hwm = r.status_kb("VmHWM")
        detail = "%s; sent %s at the stall; VmRSS before %d kB, at the stall %s kB, " \
                 "VmHWM after %d kB" % (s.progress(), seen.get("sent"), before, seen.get("rss"), hwm)
        self.assertEqual(s.first_credit, CAPACITY, detail)
        # the window and the link's mark stopped the sender well short of 250
        self.assertLess(seen["sent"], 60, detail)
        self.assertEqual(s.got, list(range(CAPACITY)), detail)
        if SANITIZER:
            return  # memory figures of a sanitizer build are not the router's
        self.assertLess((hwm - before) / 1024.0, 40, detail)


if __name__ == "__main__":
    unittest.main()
