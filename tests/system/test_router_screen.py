#!/usr/bin/python3
"""System tests: the frame screen (issue 20, items 1 and 4).

Frame sequences that abort Debian's proton (its assertions are on) or that
break the AMQP 1.0 rules in ways proton lets through, each sent by hand on
one raw socket while a witness pair of ordinary proton connections keeps
sending. Each must close only the offending connection, with the AMQP error
the spec names in a close frame (or, in the SASL layer, by cutting it), and
one log line naming the peer; the router stays up and the witness loses
nothing.

Since stage 5 of issue 27 (docs/engine.md, "The frame screen becomes the
engine's validation") the screen is gone with proton's engine, and every
case runs on Junction's own engine, which refuses the same frames in its
one parse, with the same conditions and one log line of the same shape
(without the screen's " (frame screen)" tag). Where the engine words a
description its own way, a case names that wording (own_words) beside
the screen's.
"""
import re
import socket
import struct
import threading
import time
import unittest

from proton import Data, symbol, uint, ushort

from harness import (AMQP_HEADER, ATTACH, BEGIN, CLOSE, END, FLOW, OPEN, SASL_HEADER,
                     SASL_INIT, SASL_MECHANISMS, SASL_OUTCOME, SLOW, TRANSFER, Described,
                     RawClient, RouterTestCase, conf_section, frame, performative, ulong, ubyte)

SCREEN_LINE = re.compile(r"\[C\d+\] Connection from 127\.0\.0\.1:\d+ \(to [^)]+\) failed: "
                         r"(\S+) (.*)$", re.M)


def transfer(handle, delivery_id=None, tag=None, more=False, aborted=False, payload=b""):
    fields = [uint(handle), None if delivery_id is None else uint(delivery_id), tag, uint(0),
              False, more, None, None, False, aborted]
    return frame(performative(TRANSFER, fields) + payload)


class ScreenTest(RouterTestCase):

    def setUp(self):
        super().setUp()
        self.router = self.start_router()
        self.witness = self.start_witness(self.router)

    def sender(self):
        """A raw client with a sending link on handle 0 that holds credit."""
        c = RawClient(self.router.port)
        self.addCleanup(c.close)
        c.open()
        c.begin()
        # the receiver that gives the address a consumer, so the router
        # grants the raw sender credit
        c.send(frame(performative(ATTACH, [
            "screen-rx", uint(1), True, ubyte(0), ubyte(0),
            Described(ulong(0x28), ["screen.q"]), Described(ulong(0x29), [None]),
            None, None, None])))
        c.expect(ATTACH)
        c.send(frame(performative(FLOW, [uint(0), uint(1 << 20), uint(0), uint(1 << 20),
                                         uint(1), uint(0), uint(100)])))
        c.attach_sender("screen-tx", 0, "screen.q")
        c.expect(FLOW)  # credit
        return c

    def screen_lines(self):
        return SCREEN_LINE.findall(self.router.log())

    def assert_refused(self, c, condition, words, own_words=None):
        """c is closed with condition (a close frame carrying it), one
        screen line is logged with the peer's address, the router is up.
        The description holds own_words, the engine's wording, where
        given, else words (the screen's wording, which the engine
        shares)."""
        if own_words:
            words = own_words
        frames = c.read_until_closed()
        closes = [f for f in frames if f.code == CLOSE]
        self.assertEqual(len(closes), 1, "frames: %r\n%s" % (frames, self.logs()))
        err = closes[0].error()
        self.assertIsNotNone(err, "close without an error: %r" % closes)
        self.assertEqual(err[0], condition, "close %r" % closes[0])
        self.assertIn(words, err[1] or "")
        deadline = time.monotonic() + 5 * SLOW
        while not self.screen_lines() and time.monotonic() < deadline:
            time.sleep(0.05)
        lines = self.screen_lines()
        self.assertEqual(len(lines), 1, "screen log lines: %r\n%s" % (lines, self.logs()))
        self.assertEqual(lines[0][0], condition)
        self.assertTrue(self.router.alive(), self.logs())
        self.finish_witness(self.witness)

    def test_transfer_without_delivery_id_then_continuation(self):
        """The two frames that abort proton (assertion 'id_present')."""
        c = self.sender()
        c.send(transfer(0, more=True, payload=b"abc") + transfer(0))
        self.assert_refused(c, "amqp:invalid-field", "without a delivery-id")

    def test_aborted_delivery_then_continuation_without_id(self):
        c = self.sender()
        c.send(transfer(0, 0, b"t0", more=True, payload=b"abc") +
               transfer(0, 0, aborted=True, more=True) + transfer(0, more=True, payload=b"x") +
               transfer(0))
        self.assert_refused(c, "amqp:invalid-field", "without a delivery-id")

    def test_described_more_then_continuation_without_id(self):
        """A `more` of described true: proton's scanner reads a described
        value as false (a whole delivery), the screen read it as true (a
        delivery in progress) and let the continuation without a
        delivery-id through: proton aborted on 'id_present'."""
        c = self.sender()
        first = frame(performative(TRANSFER, [uint(0), uint(0), b"t0", uint(0), False,
                                              Described(ulong(0), True)])
                      + b"\x00\x53\x77\xa1\x01x")
        c.send(first + transfer(0, more=True, payload=b"x") + transfer(0))
        self.assert_refused(c, "amqp:invalid-field", "undecodable fields",
                            "is a described boolean")

    def test_same_frames_split_one_octet_per_send(self):
        c = self.sender()
        data = transfer(0, more=True, payload=b"abc") + transfer(0)
        for i in range(len(data)):
            try:
                c.send(data[i:i + 1])
            except OSError:
                break
        self.assert_refused(c, "amqp:invalid-field", "without a delivery-id")

    def test_frame_before_open(self):
        """A begin where the open should be: proton holds a close until it
        has the peer's open, which the screen now keeps from it, so the
        connection sat, its error unsaid, until the idle timeout (16 s),
        whatever the peer did. Once sequentially, once all in one write."""
        c = RawClient(self.router.port)
        self.addCleanup(c.close)
        c.sasl_anonymous()
        c.send(AMQP_HEADER + frame(performative(BEGIN, [None, uint(0), uint(100), uint(100)])))
        self.assertEqual(c.read_header(), AMQP_HEADER)
        frames = c.read_until_closed()
        closes = [f for f in frames if f.code == CLOSE]
        self.assertEqual(len(closes), 1, frames)
        self.assertEqual(closes[0].error()[0], "amqp:illegal-state", closes)
        self.assertIn("before open", closes[0].error()[1])

        p = RawClient(self.router.port)
        self.addCleanup(p.close)
        p.send(SASL_HEADER + frame(performative(SASL_INIT, [symbol("ANONYMOUS"), b"x"]), kind=1)
               + AMQP_HEADER + frame(performative(BEGIN, [None, uint(0), uint(100), uint(100)])))
        self.assertEqual(p.read_header(), SASL_HEADER)
        self.assertEqual(int(p.expect(SASL_OUTCOME).fields[0]), 0)  # the outcome is not lost
        self.assertEqual(p.read_header(), AMQP_HEADER)
        frames = p.read_until_closed()
        closes = [f for f in frames if f.code == CLOSE]
        self.assertEqual(len(closes), 1, frames)
        self.assertEqual(closes[0].error()[0], "amqp:illegal-state", closes)
        self.wait_for("two screen lines", lambda: len(self.screen_lines()) == 2)
        self.assertTrue(self.router.alive(), self.logs())
        self.finish_witness(self.witness)

    def test_second_begin_on_a_channel(self):
        c = RawClient(self.router.port)
        self.addCleanup(c.close)
        c.open()
        c.begin()
        c.send(frame(performative(BEGIN, [None, uint(0), uint(100), uint(100)])))
        self.assert_refused(c, "amqp:illegal-state", "already has a session",
                            "which has a session")

    def test_transfer_on_a_receiving_link(self):
        c = RawClient(self.router.port)
        self.addCleanup(c.close)
        c.open()
        c.begin()
        c.send(frame(performative(ATTACH, [
            "rx", uint(0), True, ubyte(0), ubyte(0),
            Described(ulong(0x28), ["screen.q"]), Described(ulong(0x29), [None]),
            None, None, None])))
        c.expect(ATTACH)
        c.send(transfer(0, 0, b"t0", payload=b"\x00\x53\x77\xa1\x01x"))
        self.assert_refused(c, "amqp:illegal-state", "attached as receiver")

    def test_attach_on_a_handle_in_use(self):
        c = self.sender()
        c.send(frame(performative(ATTACH, [
            "again", uint(0), False, ubyte(0), ubyte(0),
            Described(ulong(0x28), [None]), Described(ulong(0x29), ["screen.q"]),
            None, None, uint(0)])))
        self.assert_refused(c, "amqp:session:handle-in-use", "already attached",
                            "which is in use")

    def test_sasl_frame_out_of_order_cuts_the_connection(self):
        c = RawClient(self.router.port)
        self.addCleanup(c.close)
        c.send(SASL_HEADER)
        self.assertEqual(c.read_header(), SASL_HEADER)
        # a sasl-response before any sasl-init
        c.send(frame(performative(0x43, [b"x"]), kind=1))
        frames = c.read_until_closed()
        self.assertFalse([f for f in frames if f.code == CLOSE], frames)
        deadline = time.monotonic() + 5 * SLOW
        while not self.screen_lines() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual([l[0] for l in self.screen_lines()], ["amqp:illegal-state"],
                         self.logs())
        self.assertTrue(self.router.alive())
        self.finish_witness(self.witness)


class InterRouterScreenTest(RouterTestCase):
    """The same rules on an inter-router listener."""

    def test_second_begin_on_an_inter_router_connection(self):
        router = self.start_router(router={"mode": "interior"},
                                   listener={"role": "inter-router"})
        c = RawClient(router.port)
        self.addCleanup(c.close)
        c.open()
        c.begin()
        c.send(frame(performative(BEGIN, [None, uint(0), uint(100), uint(100)])))
        frames = c.read_until_closed()
        closes = [f for f in frames if f.code == CLOSE and f.error()]
        self.assertTrue(closes, frames)
        self.assertEqual(closes[-1].error()[0], "amqp:illegal-state", closes)
        self.assertTrue(router.alive(), self.logs())



class FakeServer:
    """A listening socket on 127.0.0.1 that plays the server for one of the
    router's connectors: SASL ANONYMOUS, the AMQP header and an open, then
    whatever the test sends. Every wait is bounded."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.listener.settimeout(20 * SLOW)
        self.port = self.listener.getsockname()[1]
        self.sock = None
        self.buf = b""

    def close(self):
        for s in (self.sock, self.listener):
            if s:
                s.close()

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("closed by the router")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read(self):
        """The next protocol header (bytes) or frame (code, fields)."""
        head = self._read(8)
        if head[:4] == b"AMQP":
            return head
        size, doff, _, _ = struct.unpack(">IBBH", head)
        body = self._read(size - 8)[doff * 4 - 8:]
        if not body:
            return (None, [])
        d = Data()
        d.decode(body)
        d.rewind()
        d.next()
        v = d.get_object()
        return (int(v.descriptor), list(v.value or []))

    def until(self, code):
        while True:
            item = self.read()
            if isinstance(item, tuple) and item[0] == code:
                return item

    def accept_and_open(self):
        self.sock, _ = self.listener.accept()
        self.sock.settimeout(10 * SLOW)
        if self._read(8) != SASL_HEADER:
            raise AssertionError("the connector did not start with SASL")
        self.sock.sendall(SASL_HEADER + frame(performative(SASL_MECHANISMS,
                                                           [symbol("ANONYMOUS")]), kind=1))
        self.until(SASL_INIT)
        self.sock.sendall(frame(performative(SASL_OUTCOME, [ubyte(0)]), kind=1))
        while self.read() != AMQP_HEADER:
            pass
        self.sock.sendall(AMQP_HEADER + frame(performative(
            OPEN, ["fake-peer", None, uint(65536), ushort(1000)])))
        self.until(OPEN)


class ConnectorScreenTest(RouterTestCase):
    """The screen on a connection the router made (a connector)."""

    def test_second_answer_to_one_of_our_begins(self):
        """The connector side of an inter-router connection begins eleven
        sessions. A peer that answered one of them on two channels made
        proton map both to the one session; its end on the second and the
        router's free of the session left the first pointing at freed
        memory, and an attach there crashed the router (SIGSEGV)."""
        fake = FakeServer()
        self.addCleanup(fake.close)
        router = self.start_router(router={"mode": "interior"}, extra=conf_section(
            "connector", {"host": "127.0.0.1", "port": fake.port, "role": "inter-router"}))
        fake.accept_and_open()
        for _ in range(11):
            fake.until(BEGIN)

        def answer(channel):
            return frame(performative(BEGIN, [ushort(0), uint(0), uint(1000), uint(1000)]),
                         channel)
        fake.sock.sendall(answer(0) + answer(1) + frame(performative(END, []), 1))
        # only if the second answer got through: the attach that crashed
        time.sleep(0.5)
        try:
            fake.sock.sendall(frame(performative(ATTACH, [
                "x", uint(7), False, ubyte(0), ubyte(0), Described(ulong(0x28), [None]),
                Described(ulong(0x29), ["q"]), None, None, uint(0)]), 0))
        except OSError:
            pass
        close = None
        try:
            close = fake.until(CLOSE)
        except (EOFError, OSError) as e:
            self.fail("no close frame (%r)\n%s" % (e, self.logs()))
        err = close[1][0].value if close[1] and close[1][0] is not None else None
        self.assertIsNotNone(err, "close without an error: %r" % (close,))
        self.assertEqual(str(err[0]), "amqp:illegal-state", close)
        self.assertIn("answers channel 0", err[1])
        said = r"begin answers channel 0, where no begin of ours waits"
        line = re.compile(r"\[C\d+\] Connection to 127\.0\.0\.1:%d failed: amqp:illegal-state "
                          % fake.port + said)
        self.wait_for("the screen's log line", lambda: line.search(router.log()))
        self.assertTrue(router.alive(), self.logs())

if __name__ == "__main__":
    unittest.main()
