#!/usr/bin/python3
"""System tests: large messages (issue 3, "Large messages").

A 200 MB message streams through with bounded router memory and arrives
intact (same hash); a sender killed mid-message makes the receiver's copy
aborted; maxMessageSize (policy section) rejects a larger message with
amqp:link:message-size-exceeded and closes the sender's connection.
"""
import os
import signal
import sys
import unittest

from proton import Delivery, Message

from harness import (SANITIZER, HashRecv, LargeBody, RouterTestCase, Scenario, StreamSend,
                     conf_section, free_port)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
from junction.management import Client, ConnectOptions  # noqa: E402

MB = 1 << 20
LARGE = 200 * MB


class StreamThrough(Scenario):
    """One receiver (hashing), one sender streaming a LargeBody, in this
    process. Records how much the receiver had when the sender finished
    writing, and the router's memory before and after."""

    def __init__(self, router, address, size):
        super().__init__(timeout=240)
        self.router, self.address = router, address
        self.body = LargeBody(size)
        self.recv = HashRecv()
        self.stream = None
        self.received_when_sent = None
        self.rss_before = None

    def start(self):
        conn = self.connect(self.router.url)
        self.rlink = self.container.create_receiver(conn, self.address, handler=self.recv)

    def tick(self):
        if self.stream is None and self.rlink.state & self.rlink.REMOTE_ACTIVE:
            self.rss_before = self.router.status_kb("VmRSS")
            self.stream = StreamSend(self.body, on_complete=self.sent_all)
            conn = self.connect(self.router.url)
            self.slink = self.container.create_sender(conn, self.address, handler=self.stream)
        self.pump()
        if self.recv.finished:
            self.done()

    def on_transport(self, event):
        self.pump()

    def pump(self):
        if self.stream is not None:
            self.stream.pump(self.slink)

    def sent_all(self):
        self.received_when_sent = self.recv.octets

    def progress(self):
        return "sent %d, received %d of %d" % (self.stream.sent if self.stream else 0,
                                               self.recv.octets, self.body.total)


class KilledStream(Scenario):
    """A receiver here; the sender is a subprocess streaming a large
    message; once `kill_after` octets have arrived, SIGKILL the sender and
    wait for the receiver's delivery to end."""

    def __init__(self, router, test, address, kill_after=16 * MB):
        super().__init__(timeout=120)
        self.router, self.test, self.address, self.kill_after = router, test, address, kill_after
        self.recv = HashRecv()
        self.child = None
        self.killed_at = None

    def start(self):
        conn = self.connect(self.router.url)
        self.rlink = self.container.create_receiver(conn, self.address, handler=self.recv)

    def tick(self):
        if self.child is None and self.rlink.state & self.rlink.REMOTE_ACTIVE:
            self.child = self.test.spawn("stream-sender", self.router.url, self.address, LARGE)
        if self.child and self.killed_at is None:
            if self.recv.octets >= self.kill_after:
                self.child.proc.send_signal(signal.SIGKILL)
                self.killed_at = self.recv.octets
            elif self.child.proc.poll() is not None:
                self.fail("sender subprocess exited early: %s" % self.child.stderr())
        if self.recv.finished:
            self.done()

    def progress(self):
        return "received %d, killed at %s, finished %s" % (self.recv.octets, self.killed_at,
                                                           self.recv.finished)


class LargeMessageTest(RouterTestCase):

    def stream(self, size=LARGE):
        r = self.start_router()
        s = self.run_scenario(StreamThrough(r, "large.q", size))
        return r, s

    def test_large_message_200mb_streams_through_intact(self):
        r, s = self.stream()
        self.assertEqual(len(s.recv.finished), 1)
        octets, digest, aborted = s.recv.finished[0]
        self.assertFalse(aborted, "the 200 MB delivery was aborted")
        self.assertEqual(octets, s.body.total)
        self.assertEqual(digest, s.body.digest(), "the 200 MB message arrived altered")
        self.assertEqual(s.stream.remote_state, Delivery.ACCEPTED)
        # Streaming: the receiver had most of it before the sender was done.
        self.assertGreater(s.received_when_sent, s.body.total // 2,
                           "forwarding waited for the end of the message")

    @unittest.skipIf(SANITIZER, "memory figures of a %s-sanitizer build are not the router's"
                     % SANITIZER)
    def test_large_message_200mb_router_memory_growth_under_32mb(self):
        r, s = self.stream()
        hwm = r.status_kb("VmHWM")
        growth_mb = (hwm - s.rss_before) / 1024.0
        self.assertLess(growth_mb, 32, "router peak RSS grew %.1f MB (VmRSS before %d kB, "
                        "VmHWM after %d kB)" % (growth_mb, s.rss_before, hwm))

    def test_sender_killed_mid_message_receiver_sees_aborted(self):
        r = self.start_router()
        s = self.run_scenario(KilledStream(r, self, "large.killed"))
        self.assertEqual(len(s.recv.finished), 1)
        octets, digest, aborted = s.recv.finished[0]
        self.assertTrue(aborted, "the receiver's copy of a half-sent message was not aborted "
                        "(%d octets arrived, complete=%s)" % (octets, digest is not None))
        self.assertTrue(r.alive())


class MaxSize(Scenario):
    """A message under maxMessageSize passes; one over it is rejected with
    amqp:link:message-size-exceeded (settled at once, before its end), and
    the sender's connection closed with amqp:connection:forced "Message
    size exceeded"; its link is closed without an error (the outcome
    carries it), as 1.19 does."""

    def __init__(self, router, address, small, big, sender_url=None):
        super().__init__(timeout=30)
        self.router, self.address, self.small, self.big = router, address, small, big
        self.sender_url = sender_url  # another router's (an edge of router)
        self.got = []
        self.detach = None
        self.closed = None
        self.rejected = None
        self.sent = 0
        self.small_state = None

    def start(self):
        self.rlink = self.container.create_receiver(self.connect(self.router.url), self.address)

    def on_link_opened(self, event):
        if event.link == self.rlink:
            event.link.flow(10)
            self.slink = self.container.create_sender(
                self.connect(self.sender_url or self.router.url), self.address)

    def on_sendable(self, event):
        if event.link == self.slink and self.sent == 0:
            self.slink.send(Message(body=b"s" * self.small))
            self.sent = 1

    def on_settled(self, event):
        if event.link == self.slink and self.sent == 1:
            self.small_state = event.delivery.remote_state
            self.slink.send(Message(body=b"b" * self.big))
            self.sent = 2

    def on_rejected(self, event):
        if event.link == self.slink and self.sent == 2:
            self.rejected = event.delivery.remote.condition
            if self.sender_url:  # the edge's client connection stays up
                self.done()

    def on_message(self, event):
        self.accept(event.delivery)
        self.got.append(len(event.message.body))

    def on_link_error(self, event):
        if event.link == self.slink:
            self.detach = event.link.remote_condition
        else:
            super().on_link_error(event)

    def on_connection_remote_close(self, event):
        # (proton's handlers do not call on_connection_error for
        # amqp:connection:forced: they treat it as a lost transport)
        if self.sent == 2 and event.connection == self.slink.connection:
            self.closed = event.connection.remote_condition
            self.done()

    def on_disconnected(self, event):
        if self.closed is None:
            super().on_disconnected(event)

    def progress(self):
        return "sent %d, small outcome %s, received sizes %s, rejected %s" % (
            self.sent, self.small_state, self.got, self.rejected)


class LargeFrameTest(RouterTestCase):
    """Frames larger than the router's 64 KiB read size."""

    def test_frames_above_64k_with_a_large_max_frame_size(self):
        """A listener with maxFrameSize 1 MiB and a client that uses it:
        the router asked proton for a read buffer of 64 KiB at most, which
        proton does not grow past, so a 500 kB transfer frame (or a 200 kB
        open) never completed and the connection stalled for good."""
        from proton.reactor import AtMostOnce
        from proton.utils import BlockingConnection
        router = self.start_router(listener={"maxFrameSize": 1 << 20})
        c = BlockingConnection(router.url, timeout=10, allowed_mechs="ANONYMOUS",
                               max_frame_size=1 << 20)
        try:
            rcv = c.create_receiver("big-frames.q")
            snd = c.create_sender("big-frames.q", options=AtMostOnce())
            body = bytes(range(256)) * 2000  # 512000 octets: one frame
            snd.send(Message(body=body))
            got = rcv.receive(timeout=10)
            self.assertEqual(got.body, body)
        finally:
            c.close()
        self.assertTrue(router.alive())


class MaxMessageSizeTest(RouterTestCase):

    def test_max_message_size_rejects_the_message_and_closes_the_connection(self):
        # In qdrouterd 1.19's schema maxMessageSize belongs to the policy section.
        r = self.start_router(extra="policy {\n    maxMessageSize: 100000\n}\n")
        s = self.run_scenario(MaxSize(r, "maxsize.q", small=50000, big=200000))
        self.assertEqual(s.small_state, Delivery.ACCEPTED)
        self.assertIsNotNone(s.rejected)
        self.assertEqual(s.rejected.name, "amqp:link:message-size-exceeded")
        self.assertIsNone(s.detach)  # no error on the link's detach
        self.assertEqual(len(s.got), 1, "the oversized message was delivered: %s" % s.got)
        self.assertEqual(s.closed.name, "amqp:connection:forced")
        self.assertEqual(s.closed.description, "Message size exceeded")
        self.wait_for("the connection closed", lambda: "connection closed" in r.log())
        with Client(ConnectOptions(url=r.url)) as c:
            p = c.query_dicts("policy")[0]
        self.assertEqual(p["maxMessageSizeDenied"], 1)
        self.assertEqual(p["totalDenials"], 1)


    def test_an_interiors_limit_rejects_what_its_edge_forwarded(self):
        # The edge (no limit) forwards the message; the interior (100000)
        # rejects it with amqp:link:message-size-exceeded and closes the
        # edge's uplink; the rejected outcome travels back to the client on
        # the edge, whose own connection stays up (1.19's answer).
        from test_edge import router_config
        port = free_port()
        limit = conf_section("policy", {"maxMessageSize": 100000})
        i = self.start_router(config=router_config("interior", "I", port) + limit)
        e = self.start_router(config=router_config("edge", "E", uplinks=[port]))
        self.wait_for("the edge attached", lambda: "Edge router 'E' attached" in i.log())
        s = self.run_scenario(MaxSize(i, "edge.big.q", small=50000, big=200000,
                                      sender_url=e.url))
        self.assertEqual(s.small_state, Delivery.ACCEPTED)
        self.assertIsNotNone(s.rejected, s.progress())
        self.assertEqual(s.rejected.name, "amqp:link:message-size-exceeded")
        self.assertIsNone(s.closed)
        self.assertEqual(len(s.got), 1, "the oversized message was delivered: %s" % s.got)
        self.wait_for("the interior's denial", lambda: "Message exceeds maxMessageSize 100000"
                      in i.log())

if __name__ == "__main__":
    unittest.main()
