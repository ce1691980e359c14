#!/usr/bin/python3
"""Large messages through client connections on Junction's own AMQP engine
(JUNCTION_ENGINE=own) whose copies are sent by reference: each outgoing
copy's octets are the message's own buffers, referenced in the engine's
output until written, not copied (docs/engine.md, "Zero copy, output";
router/io/io_own_link.c), and whose large transfers are received by
reference: the whole input buffers inside each frame's payload are linked
into the message (docs/engine.md, "Copies per hop"; router/io/io_own_rx.c).
The bodies of 64 KiB and 1 MiB messages, and one of 3 MiB (past the 2 MiB
after which a message's octets are copied again), every octet different
from its neighbours, arrive intact, to one receiver and to two receivers
of a multicast address (two outputs referencing the same buffers), and the
router's memory returns: every message is settled and the router still
answers.

JN_BUILD_DIR names the build directory (set by ctest).
"""
import unittest

from proton import Message

from harness import Recv, Send, Traffic
from test_engine_own import OwnEngineCase
from test_router_multicast_settle import MC

KIB = 1024


def patterned(seq, size):
    """A body of size octets that differ from their neighbours, by seq."""
    return bytes(((i * 131) + (i >> 9) + seq * 7) & 0xFF for i in range(size))


def numbered(seq, size):
    return Message(body=patterned(seq, size), properties={"seq": seq})


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
