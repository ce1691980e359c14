#!/usr/bin/python3
"""System tests: volume and concurrency through one junctiond (issue 3).

1,000,000 pre-settled and 200,000 unsettled 100-octet messages pass with
none lost or duplicated, counted by junction-bench from the build directory
(or, if it is not built, by a counting proton client here); 200 concurrent
connections each carry a sender and a receiver.
"""
import json
import os
import struct
import subprocess
import unittest

from proton import Delivery
from proton.reactor import AtMostOnce

from harness import BENCH, SLOW, RouterTestCase, Scenario, raw_delivery, seq_message

BODY = 100


class Counting(Scenario):
    """Fallback counter when junction-bench is not built: one sender, one
    receiver, `count` messages whose 100-octet body starts with the
    sequence number; counts every arrival."""

    def __init__(self, router, address, count, presettled):
        super().__init__(timeout=600)
        self.router, self.address, self.count, self.presettled = \
            router, address, count, presettled
        self.seen = bytearray(count)
        self.received = self.dup = self.invalid = self.sent = self.accepted = 0
        self.prefix = b"\x00\x53\x75\xa0" + bytes([BODY])

    def start(self):
        self.rlink = self.container.create_receiver(self.connect(self.router.url), self.address)

    def on_link_opened(self, event):
        if event.link == self.rlink:
            event.link.flow(1000)
            self.slink = self.container.create_sender(
                self.connect(self.router.url), self.address,
                options=AtMostOnce() if self.presettled else None)

    def on_sendable(self, event):
        link = event.link
        while link.credit > 0 and self.sent < self.count:
            body = struct.pack(">Q", self.sent) + b"x" * (BODY - 8)
            dlv = raw_delivery(link, self.prefix + body, str(self.sent))
            if self.presettled:
                dlv.settle()
            self.sent += 1

    def on_delivery(self, event):
        dlv, link = event.delivery, event.link
        if link.is_sender:
            if dlv.settled:
                self.accepted += dlv.remote_state == Delivery.ACCEPTED
                dlv.settle()
        elif dlv.readable and not dlv.partial:
            data = link.recv(dlv.pending)
            link.advance()
            link.flow(1)
            if not dlv.settled:
                dlv.update(Delivery.ACCEPTED)
            dlv.settle()
            self.received += 1
            if len(data) != len(self.prefix) + BODY or not data.startswith(self.prefix):
                self.invalid += 1
            else:
                seq = struct.unpack_from(">Q", data, len(self.prefix))[0]
                if seq >= self.count:
                    self.invalid += 1
                elif self.seen[seq]:
                    self.dup += 1
                else:
                    self.seen[seq] = 1
        if self.received == self.count and (self.presettled or self.accepted == self.count):
            self.done()

    def progress(self):
        return "sent %d, received %d, accepted %d" % (self.sent, self.received, self.accepted)


class VolumeTest(RouterTestCase):

    def bench(self, router, count, presettled, address, anonymous=False):
        args = [BENCH, "--json", "-c", str(count), "-b", str(BODY), "-a", address,
                "--send-url", "127.0.0.1:%d" % router.port,
                "--recv-url", "127.0.0.1:%d" % router.port,
                "--start-timeout", str(10 * SLOW), "--idle-timeout", str(10 * SLOW)]
        if presettled:
            args.append("--presettled")
        if anonymous:
            args.append("--anonymous")
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=300 * SLOW)
        except subprocess.TimeoutExpired:
            self.fail("junction-bench did not finish in %d s\n%s" % (300 * SLOW, self.logs()))
        try:
            fig = json.loads(p.stdout)
        except ValueError:
            self.fail("junction-bench printed no figures (status %d): %s\n%s\n%s"
                      % (p.returncode, p.stdout, p.stderr, self.logs()))
        detail = "%s\n%s\n%s" % (p.stderr.strip(), json.dumps(fig), self.logs())
        self.assertEqual(fig["sent"], count, detail)
        self.assertEqual(fig["received"], count, detail)
        self.assertEqual(fig["unique"], count, detail)
        self.assertEqual((fig["lost"], fig["dup"], fig["invalid"]), (0, 0, 0), detail)
        if not presettled:
            self.assertEqual(fig["accepted"], count, detail)
            self.assertEqual(fig["unsettled"], 0, detail)
        self.assertEqual(p.returncode, 0, detail)

    def count(self, count, presettled, address):
        r = self.start_router()
        if os.access(BENCH, os.X_OK):
            self.bench(r, count, presettled, address)
            return
        s = self.run_scenario(Counting(r, address, count, presettled))
        self.assertEqual((s.received, s.dup, s.invalid), (count, 0, 0))
        self.assertEqual(s.seen.count(1), count)
        if not presettled:
            self.assertEqual(s.accepted, count)

    def test_anonymous_relay_20k_unsettled_none_lost(self):
        """junction-bench --anonymous: a sender on the anonymous relay (the
        address in each message's `to`) gets its messages through, all
        accepted, none lost or duplicated."""
        if not os.access(BENCH, os.X_OK):
            self.skipTest("junction-bench not built")
        self.bench(self.start_router(), 20000, False, "load.anon", anonymous=True)

    def test_1m_presettled_100_octet_messages_none_lost_or_duplicated(self):
        self.count(1000000, True, "load.presettled")

    def test_200k_unsettled_100_octet_messages_none_lost_or_duplicated(self):
        self.count(200000, False, "load.unsettled")


class ManyConnections(Scenario):
    """`n` connections, each with a receiver on many.<i> and a sender to
    many.<i+1>; once all 2n links are attached, each sender sends `per`
    messages; every receiver must get its neighbour's messages."""

    def __init__(self, router, n=200, per=10):
        super().__init__(timeout=120)
        self.router, self.n, self.per = router, n, per
        self.receivers, self.senders = {}, {}
        self.attached = 0
        self.got = {i: [] for i in range(n)}
        self.settled = 0
        self.sending = False
        self.sent = {}

    def start(self):
        for i in range(self.n):
            conn = self.connect(self.router.url)
            self.receivers[self.container.create_receiver(conn, "many.%d" % i)] = i
            self.senders[self.container.create_sender(conn, "many.%d" % ((i + 1) % self.n))] = i

    def on_link_opened(self, event):
        self.attached += 1
        if event.link in self.receivers:
            event.link.flow(self.per)
        if self.attached == 2 * self.n:
            self.open_at_send = sum(1 for c in self.connections if c.state & c.REMOTE_ACTIVE)
            self.sending = True
            for link in self.senders:
                self.send(link)

    def on_sendable(self, event):
        if self.sending:
            self.send(event.link)

    def send(self, link):
        i = self.senders[link]
        while link.credit > 0 and self.sent.get(i, 0) < self.per:
            link.send(seq_message(self.sent.get(i, 0)))
            self.sent[i] = self.sent.get(i, 0) + 1

    def on_message(self, event):
        self.accept(event.delivery)
        self.got[self.receivers[event.link]].append(event.message.properties["seq"])
        self.check()

    def on_settled(self, event):
        if event.link.is_sender:
            self.settled += 1
            self.check()

    def check(self):
        if self.settled == self.n * self.per and \
                sum(len(v) for v in self.got.values()) == self.n * self.per:
            self.done()

    def progress(self):
        return "links attached %d/%d, sent %d, received %d, settled %d" % (
            self.attached, 2 * self.n, sum(self.sent.values()),
            sum(len(v) for v in self.got.values()), self.settled)


class ConcurrencyTest(RouterTestCase):

    def test_200_concurrent_connections_each_with_sender_and_receiver(self):
        r = self.start_router()
        s = self.run_scenario(ManyConnections(r, n=200, per=10))
        self.assertEqual(s.open_at_send, 200)
        for i in range(200):
            self.assertEqual(s.got[i], list(range(10)), "receiver %d" % i)


if __name__ == "__main__":
    unittest.main()
