#!/usr/bin/python3
"""System tests: a stuck multicast consumer does not hold back the others
(issue 20, item 3; docs/multicast.md).

Each test starts its own junctiond(s) and clients on 127.0.0.1. A "stuck"
receiver attaches to a multicast address and then either grants no credit
(a proton receiver) or grants credit and never reads its socket again (a
raw socket client). The fast receivers must get every message, the sender
must finish, and the stuck consumer's missed copies must show in
management (router.link droppedPresettledCount, router
droppedPresettledDeliveries) and in the log, once per episode. An address
with multicastBackpressure keeps qdrouterd 1.19's pacing instead.
"""
import os
import re
import subprocess
import sys
import time
import unittest

from proton import Delivery, Described, symbol, ubyte, uint, ulong

from harness import (ATTACH, FLOW, TRANSFER, PYTHON, SLOW, SOURCE_DIR, RawClient, Recv, RouterTestCase,
                     Send, Traffic, frame, performative, seq_message)
from mesh import Mesh
from test_mgmt_agent import Manager

MC = [{"prefix": "mc", "distribution": "multicast"}]
MC_BACKPRESSURE = [{"prefix": "mc", "distribution": "multicast",
                    "multicastBackpressure": "yes"}]
# the stuck raw client sends nothing for the whole test: keep the router
# from closing it for being idle
QUIET_OK = {"idleTimeoutSeconds": 600}
CAPACITY = 250  # linkCapacity's default: the consumer's backlog
N = 20000

START_LINE = re.compile(r"\[L(\d+)\] Multicast consumer stuck")
END_LINE = re.compile(r"\[L(\d+)\] Multicast consumer (caught up|gone): (\d+) copies dropped")


def stuck_raw_receiver(port, address, credit=0):
    """A raw AMQP client that attaches a receiver on address, grants credit
    (none when 0), and then never reads its socket again. Returns the
    RawClient (close it to make the router notice it is gone)."""
    c = RawClient(port)
    c.open()
    c.begin()
    c.send(frame(performative(ATTACH, [
        "stuck-raw", uint(0), True, ubyte(0), ubyte(0),
        Described(ulong(0x28), [address]), Described(ulong(0x29), [None])])))
    c.expect(ATTACH)
    if credit:
        grant(c, credit)
    return c


def grant(c, credit, delivery_count=0):
    """Send a flow frame granting credit on the raw receiver's link."""
    # flow: next-incoming-id, incoming-window, next-outgoing-id,
    # outgoing-window, handle, delivery-count, link-credit
    c.send(frame(performative(FLOW, [uint(0), uint(1 << 30), uint(1), uint(1 << 20), uint(0),
                                     uint(delivery_count), uint(credit)])))


class StuckTraffic(Traffic):
    """Traffic with a raw stuck receiver beside the proton ones (it is
    attached before; the scenario does not close it)."""

    def __init__(self, router, receivers, senders, expect, stuck=None, **kw):
        super().__init__(router, receivers, senders, expect, **kw)
        self.stuck = stuck


class SlowConsumerBase(RouterTestCase):

    def manager(self, router):
        m = Manager(router)
        self.addCleanup(m.close)
        return m

    def out_links(self, router, key="M0mc.x"):
        return [l for l in self.manager(router).query(
            "router.link", ["identity", "linkDir", "owningAddr", "deliveryCount",
                            "undeliveredCount", "droppedPresettledCount", "capacity"])
            if l["linkDir"] == "out" and l["owningAddr"] == key]

    def dropped_total(self, router):
        return self.manager(router).query("router", ["droppedPresettledDeliveries"])[0][
            "droppedPresettledDeliveries"]

    def stuck_link(self, router, key="M0mc.x"):
        stuck = [l for l in self.out_links(router, key) if l["droppedPresettledCount"] > 0]
        self.assertEqual(len(stuck), 1, "one link should drop: %s\n%s"
                         % (self.out_links(router, key), self.logs()))
        return stuck[0]

    def episode_lines(self, router, link_id):
        log = router.log()
        starts = [m for m in START_LINE.finditer(log) if m.group(1) == str(link_id)]
        ends = [m for m in END_LINE.finditer(log) if m.group(1) == str(link_id)]
        return starts, ends

    def attach_stuck(self, router, credit=0, key="M0mc.x", links=1):
        raw = stuck_raw_receiver(router.port, key[2:], credit)
        self.addCleanup(raw.close)
        self.wait_for("the stuck receiver's link", lambda: len(self.out_links(router, key)) ==
                      links)
        return raw

    def fast_pass(self, router, fast, n=N, body_size=0):
        """Send n pre-settled messages to mc.x through router while a stuck
        receiver holds on; the fast receivers (each a Recv) must get all n,
        in order."""
        tx = Send("mc.x", (seq_message(i, body_size=body_size) for i in range(n)),
                  presettled=True)
        t = Traffic(router, fast, [tx], n * len(fast), timeout=120)
        start = time.monotonic()
        self.run_scenario(t)
        took = time.monotonic() - start
        for r in fast:
            self.assertEqual([m.properties["seq"] for m in r.messages], list(range(n)))
        sys.stderr.write("[%s: %d messages to %d fast receivers in %.1f s] "
                         % (self._testMethodName, n, len(fast), took))
        return t, tx



class SlowConsumerTest(SlowConsumerBase):
    """One router."""

    def test_receiver_without_credit_does_not_stall_two_fast_ones(self):
        r = self.start_router(addresses=MC, listener=QUIET_OK)
        self.attach_stuck(r)
        self.fast_pass(r, [Recv("mc.x", credit=1000), Recv("mc.x", credit=1000)])
        link = self.stuck_link(r)
        # every copy for it is either waiting (its backlog, full) or dropped
        self.assertEqual(link["deliveryCount"], 0)
        self.assertEqual(link["undeliveredCount"], CAPACITY)
        self.assertEqual(link["droppedPresettledCount"], N - CAPACITY)
        self.assertEqual(self.dropped_total(r), N - CAPACITY)
        starts, ends = self.episode_lines(r, link["identity"])
        self.assertEqual((len(starts), len(ends)), (1, 0), "one line when dropping starts")
        # junction-stat -l shows the count (psdrop column)
        out = subprocess.run([PYTHON, os.path.join(SOURCE_DIR, "tools", "junction-stat"),
                              "-b", r.url, "-l"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("psdrop", out.stdout)
        self.assertIn(str(N - CAPACITY), out.stdout)

    def test_receiver_that_stops_reading_does_not_stall_two_fast_ones(self):
        r = self.start_router(addresses=MC, listener=QUIET_OK)
        # a generous credit: what stops it is the full socket
        raw = self.attach_stuck(r, credit=100000)
        # 1 KiB bodies: 20 MB in all, far more than the socket buffers hold
        self.fast_pass(r, [Recv("mc.x", credit=1000), Recv("mc.x", credit=1000)],
                       body_size=1024)
        link = self.stuck_link(r)
        # what went to its connection: sent (into the socket buffers) or
        # waiting to be, within linkCapacity of what was sent
        self.assertLess(link["deliveryCount"], N // 4)
        self.assertEqual(link["deliveryCount"] + link["undeliveredCount"] +
                         link["droppedPresettledCount"], N)
        self.assertGreater(link["droppedPresettledCount"], N // 2)
        starts, ends = self.episode_lines(r, link["identity"])
        self.assertEqual((len(starts), len(ends)), (1, 0))
        raw.close()
        self.wait_for("the end of the episode in the log",
                      lambda: len(self.episode_lines(r, link["identity"])[1]) == 1)
        starts, ends = self.episode_lines(r, link["identity"])
        self.assertEqual((len(starts), ends[0].group(2), int(ends[0].group(3))),
                         (1, "gone", link["droppedPresettledCount"]))

    def test_recovered_consumer_ends_the_episode_with_one_line(self):
        # The stuck receiver misses 2,000 - 250 copies, then grants credit:
        # it gets its backlog (the first 250), and the episode ends with one
        # line that counts what it missed.
        r = self.start_router(addresses=MC, listener=QUIET_OK)
        raw = self.attach_stuck(r)
        self.fast_pass(r, [Recv("mc.x", credit=1000)], n=2000)
        link = self.stuck_link(r)
        self.assertEqual(link["droppedPresettledCount"], 2000 - CAPACITY)
        grant(raw, 1000)
        transfers = 0
        while transfers < CAPACITY:
            transfers += raw.read_frame().code == TRANSFER
        self.wait_for("the end of the episode in the log",
                      lambda: len(self.episode_lines(r, link["identity"])[1]) == 1)
        starts, ends = self.episode_lines(r, link["identity"])
        self.assertEqual(len(starts), 1)
        self.assertEqual((ends[0].group(2), int(ends[0].group(3))), ("caught up", 2000 - CAPACITY))
        link = self.stuck_link(r)
        self.assertEqual((link["deliveryCount"], link["undeliveredCount"]), (CAPACITY, 0))

    # -- back-pressure opt-in ----------------------------------------------

    def test_backpressure_address_paces_sender_to_stuck_receiver(self):
        r = self.start_router(addresses=MC_BACKPRESSURE)
        stuck = Recv("mc.x", credit=0)
        fast = [Recv("mc.x", credit=1000), Recv("mc.x", credit=1000)]
        tx = Send("mc.x", (seq_message(i) for i in range(2000)), presettled=True)
        t = Traffic(r, fast + [stuck], [tx], 4000, timeout=4 / SLOW)
        t.run()
        self.assertIsNotNone(t.error, "the sender should have stalled")
        self.assertIn("timed out", t.error)
        # the sender got its first credit's worth through, then nothing
        self.assertLessEqual(tx.next, 2 * CAPACITY)
        for x in fast:
            self.assertLessEqual(len(x.messages), 2 * CAPACITY)
        self.assertEqual(self.dropped_total(r), 0)
        cfg = self.manager(r).query("router.config.address", ["prefix",
                                                                "multicastBackpressure"])
        self.assertEqual(cfg, [{"prefix": "mc", "multicastBackpressure": True}])

    def test_backpressure_attribute_by_management_create(self):
        r = self.start_router()
        m = self.manager(r)
        code, desc, _ = m.call({"operation": "CREATE", "type": "org.apache.qpid.dispatch."
                                "router.config.address", "name": "slowfan"},
                               {"prefix": "mc", "distribution": "multicast",
                                "multicastBackpressure": True})
        self.assertEqual(code, 201, desc)
        stuck = Recv("mc.x", credit=0)
        fast = [Recv("mc.x", credit=1000)]
        tx = Send("mc.x", (seq_message(i) for i in range(1000)), presettled=True)
        t = Traffic(r, fast + [stuck], [tx], 1000, timeout=3 / SLOW)
        t.run()
        self.assertIsNotNone(t.error, "the sender should have stalled")
        self.assertLessEqual(tx.next, 2 * CAPACITY)

    # -- the outcome of an unsettled multicast delivery ------------------------

    def test_unsettled_outcome_merged_from_copies_that_went_out(self):
        # 600 unsettled: the stuck receiver's backlog takes copies of 0..249
        # (after a second they stop holding the sender), the copies of
        # 250..599 are dropped. 250..599 are settled accepted (the fast
        # receivers' outcome) while the stuck one holds on; once it goes,
        # its never-sent copies count as released and 0..249 are settled
        # accepted too.
        r = self.start_router(addresses=MC, listener=QUIET_OK)
        raw = self.attach_stuck(r)
        fast = [Recv("mc.x", credit=1000), Recv("mc.x", credit=1000)]
        tx = Send("mc.x", (seq_message(i) for i in range(600)))

        class Until(StuckTraffic):
            def tick(s):
                if (s.stuck is not None and len(tx.outcomes) == 600 - CAPACITY and
                        s.received == 1200):
                    s.settled_before = dict(tx.outcomes)
                    s.stuck.close()  # the stuck one goes
                    s.stuck = None
                super().tick()
        t = Until(r, fast, [tx], 1200, stuck=raw, timeout=60)
        self.run_scenario(t)
        self.assertEqual(sorted(t.settled_before), list(range(CAPACITY, 600)))
        self.assertEqual({s for s, _ in t.settled_before.values()}, {Delivery.ACCEPTED})
        self.assertEqual({tx.outcomes[i][0] for i in range(600)}, {Delivery.ACCEPTED})

    def test_unsettled_all_copies_dropped_sender_sees_released(self):
        # Only a stuck receiver: 250 copies wait in its backlog, the other
        # 350 deliveries have no copy that went out: released at once. When
        # it goes, the 250 are released too.
        r = self.start_router(addresses=MC, listener=QUIET_OK)
        raw = self.attach_stuck(r)
        tx = Send("mc.x", (seq_message(i) for i in range(600)))

        class Until(StuckTraffic):
            def tick(s):
                if s.stuck is not None and len(tx.outcomes) == 600 - CAPACITY:
                    s.settled_before = dict(tx.outcomes)
                    s.stuck.close()
                    s.stuck = None
                super().tick()
        t = Until(r, [], [tx], 0, stuck=raw, timeout=60)
        self.run_scenario(t)
        self.assertEqual(sorted(t.settled_before), list(range(CAPACITY, 600)))
        self.assertEqual({s for s, _ in t.settled_before.values()}, {Delivery.RELEASED})
        self.assertEqual({tx.outcomes[i][0] for i in range(600)}, {Delivery.RELEASED})


class SlowConsumerMeshTest(SlowConsumerBase):
    """Two interior routers A - B; the sender and a fast receiver on A, a
    fast receiver and the stuck one on B: B drops the stuck consumer's
    copies, so the inter-router link A -> B keeps moving."""

    def test_stuck_receiver_on_other_router_does_not_stall_mesh(self):
        m = Mesh(self, ["A", "B"], [("B", "A", 1)],
                 client_listener={"A": QUIET_OK, "B": QUIET_OK}).start()
        a, b = m["A"], m["B"]
        self.attach_stuck(b)
        fast = [Recv("mc.x", credit=1000, url=a.url), Recv("mc.x", credit=1000, url=b.url)]
        tx = Send("mc.x", (seq_message(i) for i in range(N)), presettled=True, url=a.url)

        class Ready(StuckTraffic):
            def receiver_opened(s, rx, link):
                if not rx.opened:
                    rx.opened = True
                    link.flow(rx.credit)

            def tick(s):
                if not s._senders_started and all(x.opened for x in s.receivers):
                    m.wait_address("M0mc.x", {"A", "B"})
                    s._start_senders()
                super().tick()
        t = Ready(None, fast, [tx], 2 * N, timeout=180)
        self.run_scenario(t)
        for x in fast:
            self.assertEqual([msg.properties["seq"] for msg in x.messages], list(range(N)))
        link = self.stuck_link(b)
        self.assertEqual(link["undeliveredCount"], CAPACITY)
        self.assertEqual(link["droppedPresettledCount"], N - CAPACITY)
        self.assertEqual(self.dropped_total(a), 0)  # A's link toward B kept up


if __name__ == "__main__":
    unittest.main()
