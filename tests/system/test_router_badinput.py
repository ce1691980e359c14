#!/usr/bin/python3
"""System tests: bad input (issue 3, "Bad input").

Each test misbehaves on one raw socket (frames built by hand, SASL ANONYMOUS
done by hand) while a witness pair of ordinary proton connections keeps
sending: the offending connection (or, for a bad message, only its delivery)
is dealt with and logged, the router stays up, and the witness loses
nothing.
"""
import re
import struct
import time
import unittest

from proton import Delivery, Message

from harness import (CLOSE, END, SLOW, TRANSFER, RawClient, Recv, RouterTestCase, Send, Traffic,
                     frame, performative, seq_message, uint)

# A log line about a connection, link or delivery that reports a problem
# (qdrouterd style: "[C4] Connection from ... failed: ...", "[C5][L1] Rejected ...").
PROBLEM = re.compile(r"\[C\d+\].*(fail|error|reject)", re.I)


class BadInputTest(RouterTestCase):

    def setUp(self):
        super().setUp()
        self.router = self.start_router(listener={"maxFrameSize": 4096})
        self.witness = self.start_witness(self.router)
        self.problems_before = self.problems_logged()

    def problems_logged(self):
        return sum(1 for line in self.router.log().splitlines() if PROBLEM.search(line))

    def assert_logged(self, count=1):
        """`count` more problem lines appear in the router's log."""
        deadline = time.monotonic() + 5 * SLOW
        while self.problems_logged() < self.problems_before + count:
            if time.monotonic() > deadline:
                self.fail("the bad input was not logged (%d new problem lines, %d expected)\n%s"
                          % (self.problems_logged() - self.problems_before, count, self.logs()))
            time.sleep(0.05)

    def raw(self):
        c = RawClient(self.router.port)
        self.addCleanup(c.close)
        return c

    def assert_closed_with_error(self, client, conditions=None):
        """The router closes the socket; any close frame it sent carries an
        error (one of `conditions`, when given)."""
        frames = client.read_until_closed()
        closes = [f for f in frames if f.code == CLOSE]
        for f in closes:
            err = f.error()
            self.assertIsNotNone(err, "close without an error condition: %r" % frames)
            if conditions:
                self.assertIn(err[0], conditions, "close frame %r" % f)
        return closes

    def test_not_an_amqp_header_connection_closed(self):
        c = self.raw()
        c.send(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        self.assertTrue(self.router.alive())
        try:
            data = b""
            while True:
                chunk = c.sock.recv(4096)
                if not chunk:
                    break
                data += chunk
        except ConnectionResetError:
            pass
        except OSError as e:
            self.fail("the router kept a non-AMQP connection open (%s)\n%s" % (e, self.logs()))
        # The router may answer with its protocol header (and a close frame
        # saying why) before it hangs up; nothing else.
        self.assertTrue(data == b"" or data.startswith(b"AMQP"), "unexpected answer %r" % data)
        self.assert_logged()
        self.finish_witness(self.witness)

    def test_good_header_then_garbage_frame_connection_closed(self):
        garbage = {
            "body not a performative": struct.pack(">IBBH", 16, 2, 0, 0) + b"\xff" * 8,
            "data offset below 2": struct.pack(">IBBH", 16, 1, 0, 0) + b"\x00" * 8,
            "frame size below 8": struct.pack(">IBBH", 4, 2, 0, 0) + b"\x00" * 8,
            "unknown performative": frame(performative(0x77, ["x"])),
        }
        for what, data in garbage.items():
            with self.subTest(what):
                c = self.raw()
                c.open()
                c.send(data)
                self.assert_closed_with_error(c)
                self.assertTrue(self.router.alive(), what)
        self.assert_logged(len(garbage))
        self.finish_witness(self.witness)

    def test_frame_larger_than_max_frame_size_connection_closed(self):
        c = self.raw()
        remote_open = c.open()
        self.assertIsNotNone(remote_open.fields[2], "router did not send max-frame-size "
                             "although maxFrameSize is configured: %r" % remote_open)
        max_frame = int(remote_open.fields[2])
        self.assertLessEqual(max_frame, 4096, "router ignored maxFrameSize: %r" % remote_open)
        c.begin()
        c.attach_sender("big-frame", 0, "badinput.big")
        # A transfer frame a kilobyte over the router's limit.
        head = performative(TRANSFER, [uint(0), uint(0), b"t0", uint(0), False])
        c.send(frame(head + b"\x00\x53\x75\xb0" + struct.pack(">I", max_frame + 1024) +
                     b"x" * (max_frame + 1024)))
        closes = self.assert_closed_with_error(c, ["amqp:connection:framing-error"])
        self.assertTrue(closes, "no close frame for an oversized frame: %r" % c.frames)
        self.assert_logged()
        self.finish_witness(self.witness)

    def test_transfer_on_unknown_handle_ends_session_or_connection(self):
        c = self.raw()
        c.open()
        c.begin()
        c.transfer(7, 0, b"\x00\x53\x77\xa1\x05hello")  # handle 7 was never attached
        ended = None
        try:
            while ended is None:
                f = c.read_frame()
                if f.code in (END, CLOSE):
                    ended = f
        except (EOFError, ConnectionResetError):
            pass
        self.assertIsNotNone(ended, "no end/close after a transfer on an unknown handle: %r"
                             % c.frames)
        self.assertIsNotNone(ended.error(), "%s without an error condition" % ended.name)
        self.assert_logged()
        self.finish_witness(self.witness)

    def test_malformed_annotations_rejected_with_decode_error(self):
        data = b"\x00\x53\x75\xa0\x04body"
        bad = {
            "map longer than the message": b"\x00\x53\x72\xd1\x00\x00\x01\x00\x00\x00\x00\x02"
                                           b"\xa3\x01k",
            "odd number of map elements": b"\x00\x53\x72\xc1\x04\x01\xa3\x01k" + data,
            "element overruns the map": b"\x00\x53\x72\xc1\x03\x02\xa3\x01k\xa1\x01v" + data,
            "annotations not a map": b"\x00\x53\x72\xa1\x03abc" + data,
            "truncated key": b"\x00\x53\x72\xc1\x06\x02\xa3\x09ab",
        }
        messages, expect_bad = [], []
        for i, (what, payload) in enumerate(bad.items()):
            messages.append(seq_message(2 * i).encode())
            messages.append(payload)
            expect_bad.append(2 * i + 1)
        messages.append(seq_message(2 * len(bad)).encode())
        rx = Recv("badinput.ann", raw=True)
        tx = Send("badinput.ann", messages)
        self.run_scenario(Traffic(self.router, [rx], [tx], expect=len(bad) + 1, linger=0.3))
        names = list(bad)
        for i in expect_bad:
            state, disp = tx.outcomes[i]
            what = names[i // 2]
            self.assertEqual(state, Delivery.REJECTED, what)
            self.assertIsNotNone(disp.condition, "%s: rejected without a condition" % what)
            self.assertEqual(disp.condition.name, "amqp:decode-error", what)
        got = []
        for octets in rx.messages:
            m = Message()
            m.decode(octets)
            got.append(m.properties["seq"])
        self.assertEqual(got, list(range(0, 2 * len(bad) + 1, 2)))
        self.assertEqual([tx.outcomes[i][0] for i in range(0, len(messages), 2)],
                         [Delivery.ACCEPTED] * (len(bad) + 1))
        self.assert_logged(len(bad))
        self.finish_witness(self.witness)


if __name__ == "__main__":
    unittest.main()
