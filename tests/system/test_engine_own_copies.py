#!/usr/bin/python3
"""Large messages through client connections on Junction's own AMQP engine
whose copies are sent by reference: each outgoing
copy's octets are the message's own buffers, referenced in the engine's
output until written, not copied (docs/engine.md, "Zero copy, output";
router/io/io_own_link.c), and whose large transfers are received by
reference: the whole input buffers inside each frame's payload are linked
into the message (docs/engine.md, "Copies per hop"; router/io/io_own_rx.c).
The bodies of 64 KiB and 1 MiB messages, and one of 3 MiB (every frame's
whole buffers taken, however far into the message), every octet different
from its neighbours, arrive intact, to one receiver and to two receivers
of a multicast address (two outputs referencing the same buffers), and the
router's memory returns: every message is settled and the router still
answers. A message whose octets arrive slowly is forwarded as they come
though they are taken by reference: the receiver has its first half
before its sender sends the rest, below 2 MiB and past it.

JN_BUILD_DIR names the build directory (set by ctest).
"""
import hashlib
import struct
import time
import unittest

from proton import Delivery, Message
from proton.handlers import MessagingHandler

from harness import HashRecv, Recv, Scenario, Send, Traffic
from test_engine_own import OwnEngineCase
from test_router_multicast_settle import MC

KIB = 1024


def patterned(seq, size):
    """A body of size octets that differ from their neighbours, by seq."""
    return bytes(((i * 131) + (i >> 9) + seq * 7) & 0xFF for i in range(size))


def numbered(seq, size):
    return Message(body=patterned(seq, size), properties={"seq": seq})


class GatedSend(MessagingHandler):
    """Link handler: streams one delivery of `body` (already encoded
    sections) in `piece`-octet pieces, at most `window` octets in proton's
    buffers, but stops after `gate` octets until open() is called."""

    def __init__(self, body, gate, piece=64 * KIB, window=256 * KIB):
        super().__init__(prefetch=0, auto_accept=False)
        self.body, self.gate, self.piece, self.window = body, gate, piece, window
        self.sent = 0
        self.opened = False
        self.delivery = None
        self.complete = False
        self.remote_state = None

    def open(self, link):
        self.opened = True
        self.pump(link)

    def pump(self, link):
        if self.complete:
            return
        if self.delivery is None:
            if link.credit <= 0:
                return
            self.delivery = link.delivery("gated-1")
        while link.session.outgoing_bytes < self.window:
            if self.sent == len(self.body):
                link.advance()
                self.complete = True
                return
            limit = len(self.body) if self.opened else self.gate
            n = min(self.piece, limit - self.sent)
            if n <= 0:
                return
            link.stream(self.body[self.sent:self.sent + n])
            self.sent += n

    def on_link_flow(self, event):
        self.pump(event.link)

    def on_delivery(self, event):
        if event.delivery.remote_state:
            self.remote_state = event.delivery.remote_state
        if event.delivery.settled:
            event.delivery.settle()


class SlowArrival(Scenario):
    """A receiver, then a sender whose one message stops after its first
    half until the receiver has had `want` octets of it (or `hold` seconds
    passed): records what the receiver had when the rest was let go."""

    def __init__(self, router, address, size, want, hold=20.0):
        super().__init__(timeout=120)
        self.router, self.address, self.want, self.hold = router, address, want, hold
        data = patterned(1, size)
        self.body = b"\x00\x53\x75\xb0" + struct.pack(">I", size) + data  # one data section
        self.recv = HashRecv()
        self.send = GatedSend(self.body, len(self.body) // 2)
        self.slink = None
        self.gated_at = None
        self.received_when_opened = None

    def start(self):
        conn = self.connect(self.router.url)
        self.rlink = self.container.create_receiver(conn, self.address, handler=self.recv)

    def tick(self):
        if self.slink is None and self.rlink.state & self.rlink.REMOTE_ACTIVE:
            conn = self.connect(self.router.url)
            self.slink = self.container.create_sender(conn, self.address, handler=self.send)
        if self.slink is not None and not self.send.opened:
            self.send.pump(self.slink)
            if self.send.sent == self.send.gate:
                if self.gated_at is None:
                    self.gated_at = time.monotonic()
                if (self.recv.octets >= self.want or
                        time.monotonic() - self.gated_at > self.hold):
                    self.received_when_opened = self.recv.octets
                    self.send.open(self.slink)
        if self.recv.finished and self.send.remote_state is not None:
            self.done()

    def on_transport(self, event):
        if self.slink is not None:
            self.send.pump(self.slink)

    def progress(self):
        return "sent %d of %d, received %d" % (self.send.sent, len(self.body), self.recv.octets)


class OwnCopiesTest(OwnEngineCase):

    def check(self, recv, sizes):
        got = sorted((m.properties["seq"], m.body) for m in recv.messages)
        self.assertEqual([s for s, _ in got], list(range(len(sizes))))
        for seq, body in got:
            self.assertEqual(len(body), sizes[seq], "message %d" % seq)
            self.assertTrue(body == patterned(seq, sizes[seq]), "message %d's body differs" % seq)

    def test_64k_and_1mib_messages_arrive_intact_to_one_receiver(self):
        r = self.start_own()
        sizes = [64 * KIB] * 8 + [KIB * KIB] * 3 + [64 * KIB + 1, 100, 3 * KIB * KIB]
        recv = Recv("own.copies", credit=20)
        send = Send("own.copies", [numbered(i, n) for i, n in enumerate(sizes)])
        self.run_scenario(Traffic(r, [recv], [send], expect=len(sizes), timeout=120.0))
        self.check(recv, sizes)
        self.assertEqual({str(o[0]) for o in send.outcomes.values()}, {"ACCEPTED"})
        self.assert_own(r, 2)

    def slow_arrival(self, size):
        r = self.start_own()
        want = size // 4
        s = self.run_scenario(SlowArrival(r, "own.slow", size, want))
        self.assertGreaterEqual(s.received_when_opened, want,
                                "the receiver had %d octets of the first %d when the rest was "
                                "sent: forwarding waited for more of the message"
                                % (s.received_when_opened, s.send.gate))
        self.assertEqual(len(s.recv.finished), 1)
        octets, digest, aborted = s.recv.finished[0]
        self.assertFalse(aborted)
        self.assertEqual(octets, len(s.body))
        self.assertEqual(digest, hashlib.sha1(s.body).hexdigest(), "the message arrived altered")
        self.assertEqual(s.send.remote_state, Delivery.ACCEPTED)
        self.assert_own(r, 2)

    def test_a_1mib_message_arriving_slowly_is_forwarded_as_it_comes(self):
        """Under 2 MiB: its frames' whole buffers are taken, and its first
        half reaches the receiver before the sender lets the rest go."""
        self.slow_arrival(KIB * KIB)

    def test_a_6mib_message_arriving_slowly_is_forwarded_as_it_comes(self):
        """Past 2 MiB (where taking once stopped): the same."""
        self.slow_arrival(6 * KIB * KIB)

    def test_64k_and_1mib_multicast_copies_share_buffers_intact(self):
        r = self.start_own(addresses=MC)
        sizes = [64 * KIB] * 4 + [KIB * KIB] * 2
        a, b = Recv("mc.copies", credit=20), Recv("mc.copies", credit=20)
        send = Send("mc.copies", [numbered(i, n) for i, n in enumerate(sizes)])
        self.run_scenario(Traffic(r, [a, b], [send], expect=2 * len(sizes), timeout=120.0))
        self.check(a, sizes)
        self.check(b, sizes)
        self.assertEqual(len(send.outcomes), len(sizes))
        self.assert_own(r, 3)


if __name__ == "__main__":
    unittest.main()
