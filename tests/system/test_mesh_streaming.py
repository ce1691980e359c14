#!/usr/bin/python3
"""Streaming links between two routers (issue 25; docs/protocol.md,
"Streaming links").

A message that is still arriving when a router forwards it to another
router goes on an extra data link of its own, so the messages behind it
on the same path are not held until its last octet has crossed: on the
shared priority link they would wait (a link carries one delivery at a
time). The links are pooled per connection; idle ones beyond the pool are
detached by a scrubber, which 1.19's -T makes run every 5 s with a pool
of 2 (as ours does).

Two routers, A connecting to B. Clients send on A; receivers are on B.
With edge routers (an interior I, edges E1 and E2 under it), the same
holds on edge connections, both ways: E1 streams up its uplink, I down
to E2.
"""
import time
import unittest

from proton import Message

from harness import SLOW, RouterTestCase, Scenario, conf_section
from mesh import Mesh
from test_edge import EdgeMesh, query

ADDRESSES = conf_section("address", {"prefix": "closest", "distribution": "closest"}) + \
    conf_section("address", {"prefix": "balanced", "distribution": "balanced"})

FIRST = 32 * 1024  # octets of the large message sent before the small ones
SIZE = 256 * 1024  # its body


class StreamPast(Scenario):
    """Streams the beginning of a large message from A to `bigs` (one
    message per address, all at once), holds the rest back, and once
    every receiver on B has the beginning of its message, sends
    `n_small` small messages to `small`: they must all arrive while the
    large ones are still partial. Then the rest is sent, and each large
    message must arrive whole. `during` (optional) is called while the
    large messages are partial (after the small ones arrived)."""

    def __init__(self, a_url, b_url, bigs, small, ready, n_small=5, during=None, timeout=30):
        super().__init__(timeout=timeout)
        self.ready = ready  # true once A has routes to the receivers
        self.a_url, self.b_url = a_url, b_url
        self.bigs, self.small, self.n_small = list(bigs), small, n_small
        self.during = during
        self.encoded = Message(body=b"L" * SIZE).encode()
        self.phase = 0
        self.small_sent = self.small_got = 0
        self.big_got = {}
        self.partial_when_small_done = None

    def start(self):
        rconn = self.connect(self.b_url)
        self.rbig = {a: self.container.create_receiver(rconn, a) for a in self.bigs}
        self.rsmall = self.container.create_receiver(rconn, self.small)
        sconn = self.connect(self.a_url)
        self.sbig = {a: self.container.create_sender(sconn, a) for a in self.bigs}
        self.ssmall = self.container.create_sender(sconn, self.small)

    def on_link_opened(self, event):
        if event.link.is_receiver:
            event.link.flow(20)

    def partial_everywhere(self):
        return all(r.current is not None and r.current.pending > 0 and r.current.partial
                   for r in self.rbig.values())

    def tick(self):
        if self.phase == 0 and all(s.credit > 0 for s in self.sbig.values()) and \
                self.ssmall.credit > 0 and self.ready():
            for a, s in self.sbig.items():
                s.delivery("big-" + a)
                s.stream(self.encoded[:FIRST])
            self.phase = 1
        elif self.phase == 1 and self.partial_everywhere():
            self.phase = 2
        if self.phase == 2:
            while self.small_sent < self.n_small and self.ssmall.credit > 0:
                self.ssmall.send(Message(body="small-%d" % self.small_sent))
                self.small_sent += 1
        if self.phase == 2 and self.small_got == self.n_small:
            self.partial_when_small_done = self.partial_everywhere()
            if self.during:
                self.during()
            for s in self.sbig.values():
                s.stream(self.encoded[FIRST:])
                s.advance()
            self.phase = 3
        elif self.phase == 3 and len(self.big_got) == len(self.bigs):
            self.done()

    def on_message(self, event):
        event.delivery.update(event.delivery.ACCEPTED)
        event.delivery.settle()
        if event.receiver == self.rsmall:
            self.small_got += 1
        else:
            self.big_got[event.receiver.source.address] = len(event.message.body)

    def progress(self):
        return "phase %d, small received %d of %d, large received %s" % (
            self.phase, self.small_got, self.n_small, self.big_got)


def inter_router_links(url):
    """The router.link rows of type inter-router (data links) of a router."""
    return [r for r in query(url, "org.apache.qpid.dispatch.router.link",
                             ["linkType", "linkDir", "linkName"])
            if r["linkType"] == "inter-router"]


class StreamingLinkTest(RouterTestCase):

    def mesh(self, args=None):
        m = Mesh(self, ["A", "B"], [("A", "B", 1)], extra={"A": ADDRESSES, "B": ADDRESSES},
                 args=args)
        return m.start()

    def stream_past(self, m, bigs, small, **kw):
        keys = ["M0" + a for a in bigs + [small]]
        s = self.run_scenario(StreamPast(
            m["A"].url, m["B"].url, bigs, small,
            lambda: all("B" in m.remote_holders("A", k) for k in keys), **kw))
        self.assertTrue(s.partial_when_small_done,
                        "the large messages completed before the small ones arrived")
        for a in bigs:
            self.assertEqual(s.big_got[a], SIZE, "the large message to %s arrived altered" % a)
        return s

    def test_streaming_closest_message_does_not_hold_up_small_ones(self):
        m = self.mesh()
        seen = {}
        base = len(inter_router_links(m["A"].url))
        self.stream_past(m, ["closest.big"], "closest.small",
                         during=lambda: seen.update(n=len(inter_router_links(m["A"].url))))
        # the large one went on a link of its own: one more data link out of A
        self.assertEqual(seen["n"], base + 1)
        # ... which stays in the pool for the next one (no new link)
        self.stream_past(m, ["closest.big"], "closest.small")
        self.assertEqual(len(inter_router_links(m["A"].url)), base + 1)

    def test_streaming_multicast_message_does_not_hold_up_small_ones(self):
        m = self.mesh()
        self.stream_past(m, ["mc.big"], "mc.small")

    def test_streaming_balanced_message_does_not_hold_up_small_ones(self):
        # balanced: the peer (a junctiond) offers qd.streaming-links
        m = self.mesh()
        self.stream_past(m, ["balanced.big"], "balanced.small")

    def test_scrubber_detaches_idle_streaming_links_beyond_the_pool(self):
        # -T: every 5 s, pool of 2 (1.19's test mode)
        m = self.mesh(args={"A": ["-T"]})
        url = m["A"].url
        base = len(inter_router_links(url))
        bigs = ["closest.big%d" % i for i in range(4)]
        seen = {}
        self.stream_past(m, bigs, "closest.small",
                         during=lambda: seen.update(n=len(inter_router_links(url))))
        # four messages streamed at once: four streaming links
        self.assertEqual(seen["n"], base + 4)
        # idle now: the scrubber detaches all but 2 within its period
        self.wait_for("the scrubber", lambda: len(inter_router_links(url)) == base + 2,
                      timeout=15)
        time.sleep(6 * SLOW)  # a further pass keeps the pool
        self.assertEqual(len(inter_router_links(url)), base + 2)


class StreamPastOnOneAddress(Scenario):
    """Multicast on one address, as 1.19's edge tests do it: a receiver r1
    on `rx_url` takes the beginning of a large message sent on `tx_url`,
    held back; then a second receiver r2 attaches there and a second
    sender sends a small message, which r2 must get while the large one
    is still partial (r1 gets it after the large one, on its own link)."""

    def __init__(self, tx_url, rx_url, address, ready, timeout=30):
        super().__init__(timeout=timeout)
        self.tx_url, self.rx_url, self.address, self.ready = tx_url, rx_url, address, ready
        self.encoded = Message(body=b"L" * SIZE).encode()
        self.phase = 0
        self.r2 = None
        self.r2_at = None
        self.got = {}
        self.partial_when_small_done = None

    def start(self):
        self.rconn = self.connect(self.rx_url)
        self.r1 = self.container.create_receiver(self.rconn, self.address, name="r1")
        sconn = self.connect(self.tx_url)
        self.s1 = self.container.create_sender(sconn, self.address, name="s1")
        self.s2 = self.container.create_sender(sconn, self.address, name="s2")

    def on_link_opened(self, event):
        if event.link.is_receiver:
            event.link.flow(20)
            if event.link == self.r2:
                self.r2_at = time.monotonic()

    def r1_partial(self):
        d = self.r1.current
        return d is not None and d.pending > 0 and d.partial

    def tick(self):
        if self.phase == 0 and self.s1.credit > 0 and self.ready():
            self.s1.delivery("big")
            self.s1.stream(self.encoded[:FIRST])
            self.phase = 1
        elif self.phase == 1 and self.r1_partial():
            self.r2 = self.container.create_receiver(self.rconn, self.address, name="r2")
            self.phase = 2
        elif self.phase == 2 and self.r2_at and time.monotonic() > self.r2_at + 1.0 * SLOW \
                and self.s2.credit > 0:
            self.s2.send(Message(body="small"))
            self.phase = 3
        elif self.phase == 3 and "r2" in self.got:
            self.partial_when_small_done = self.r1_partial()
            self.s1.stream(self.encoded[FIRST:])
            self.s1.advance()
            self.phase = 4
        elif self.phase == 4 and "r1" in self.got:
            self.done()

    def on_message(self, event):
        event.delivery.update(event.delivery.ACCEPTED)
        event.delivery.settle()
        who = "r1" if event.receiver == self.r1 else "r2"
        self.got.setdefault(who, len(event.message.body))

    def progress(self):
        return "phase %d, received %s" % (self.phase, self.got)


class EdgeStreamingTest(RouterTestCase):

    def test_streaming_multicast_message_across_edges_does_not_hold_up_small_ones(self):
        m = EdgeMesh(self, ["I"], {"E1": ["I"], "E2": ["I"]})
        state = {}

        def ready():
            # E2's receiver is a consumer on I; then a second for E1 to hear of it
            if "at" not in state:
                rows = query(m.url("I"), "org.apache.qpid.dispatch.router.address",
                             ["name", "subscriberCount"])
                if any(r["name"] == "M0mc.x" and r["subscriberCount"] >= 1 for r in rows):
                    state["at"] = time.monotonic()
                return False
            return time.monotonic() > state["at"] + 1.0 * SLOW

        s = self.run_scenario(StreamPastOnOneAddress(m.url("E1"), m.url("E2"), "mc.x", ready))
        self.assertTrue(s.partial_when_small_done,
                        "the large message completed before the small one arrived")
        self.assertEqual(s.got["r1"], SIZE, "the large message arrived altered")


if __name__ == "__main__":
    unittest.main()
