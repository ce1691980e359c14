#!/usr/bin/python3
"""Messages streamed through client connections on Junction's own AMQP
engine (docs/engine.md, stage 2b(ii) round 2).

As on proton's path (io_recv.c), a delivery reaches the core once its
headers parse and its body follows: a large message reaches the receiver
before its sender is done and the router's memory stays bounded (the
link's high-water mark pauses the sender through the session window); a
sender killed or detaching in the middle of a routed message leaves the
receiver's copy aborted, and the receiver's link goes on; maxMessageSize
rejects a message before its end and closes the sender's connection; a
copy queued behind a streaming one is settled when its sender settles.
The scenarios are those of test_router_large, test_router_abort and
test_router_multicast_settle, run against a router with the switch on.

JN_BUILD_DIR names the build directory (set by ctest).
"""
import threading
import unittest

from proton import Delivery, Message
from proton.reactor import Container

from harness import SANITIZER
from test_engine_own import OwnEngineCase
from test_router_abort import TIMEOUT, HalfSender, Receiver
from test_router_large import MB, KilledStream, MaxSize, StreamThrough
from test_router_multicast_settle import MC, LateSettle


class OwnStreamTest(OwnEngineCase):

    def test_large_message_streams_before_it_is_whole_with_bounded_memory(self):
        r = self.start_own()
        s = self.run_scenario(StreamThrough(r, "own.large", 100 * MB))
        self.assertEqual(len(s.recv.finished), 1)
        octets, digest, aborted = s.recv.finished[0]
        self.assertFalse(aborted)
        self.assertEqual((octets, digest), (s.body.total, s.body.digest()))
        self.assertEqual(s.stream.remote_state, Delivery.ACCEPTED)
        self.assertGreater(s.received_when_sent, s.body.total // 2,
                           "forwarding waited for the end of the message")
        if not SANITIZER:
            growth_mb = (r.status_kb("VmHWM") - s.rss_before) / 1024.0
            self.assertLess(growth_mb, 32, "router peak RSS grew %.1f MB" % growth_mb)
        self.assert_own(r, 2)

    def test_sender_killed_mid_message_aborts_the_receivers_copy(self):
        r = self.start_own()
        s = self.run_scenario(KilledStream(r, self, "own.killed"))
        self.assertEqual(len(s.recv.finished), 1)
        self.assertTrue(s.recv.finished[0][2], "the receiver's copy was not aborted")
        self.assertTrue(r.alive())
        self.assert_own(r, 2)

    def test_sender_detaching_mid_message_aborts_the_copy_and_the_link_goes_on(self):
        r = self.start_own()
        rx = Receiver(r.url, "own.abort", want=1)
        t = threading.Thread(target=Container(rx).run, daemon=True)
        t.start()
        self.wait_for("the receiver", lambda: rx.ready, TIMEOUT)
        HalfSender(r.url, "own.abort", after=Message(body="next")).run()
        t.join(TIMEOUT)
        self.assertEqual((len(rx.aborted), rx.bodies), (1, ["next"]), self.logs())
        self.assert_own(r, 2)

    def test_max_message_size_rejects_before_the_end_and_closes_the_connection(self):
        r = self.start_own(extra="policy {\n    maxMessageSize: 100000\n}\n")
        s = self.run_scenario(MaxSize(r, "own.maxsize", small=50000, big=200000))
        self.assertEqual(s.small_state, Delivery.ACCEPTED)
        self.assertEqual(s.rejected.name, "amqp:link:message-size-exceeded")
        self.assertIsNone(s.detach)
        self.assertEqual(len(s.got), 1, "the oversized message was delivered: %s" % s.got)
        self.assertEqual((s.closed.name, s.closed.description),
                         ("amqp:connection:forced", "Message size exceeded"))
        self.assert_own(r, 2)

    def test_copies_queued_behind_a_streaming_one_are_settled_when_the_sender_settles(self):
        for address, kw in (("q.late", {}), ("mc.late", {"addresses": MC})):
            r = self.start_own(**kw)
            t = LateSettle(r.url, r.url, address).run()
            self.assertIsNone(t.error, self.logs())
            self.assertEqual(sorted(t.got), ["A", "B"])
            self.assertTrue(t.b_settled)
            self.assert_own(r, 2)


if __name__ == "__main__":
    unittest.main()
