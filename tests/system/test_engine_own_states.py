#!/usr/bin/python3
"""Delivery states on client connections on Junction's own AMQP engine
(docs/engine.md, stage 2b(ii) round 2): every field of every state both
ways, as proton's path carried them before stage 5.

A receiver's rejected (with its error's info map), modified (with its
message annotations), received and a state the spec does not define reach
the sender as they were sent; a state the sender puts on a transfer (a
state of its own with a value, or received) reaches the receiver, or each
receiver of a multicast address, on the copy's first transfer, on small
and multi-frame messages. The scenarios are test_router_states's.

Across three routers in a line, with raw AMQP peers that
read the frames' octets: states proton cannot carry (docs/protocol.md,
"Delivery states"): a state named by a symbolic descriptor, both ways,
equal octet for octet, and a sender's state on a later frame of a
multi-frame delivery.

A receiver that settles a multi-frame copy after its first frame gets the
rest, and the sender the outcome.

JN_BUILD_DIR names the build directory (set by ctest).
"""
import struct
import time
import unittest

from proton import Data, Described, symbol, ubyte, uint, ulong

from harness import (ATTACH, BEGIN, DISPOSITION, FLOW, SLOW, TRANSFER, Frame, RawClient, encode,
                     frame, performative, split_value)
from test_engine_own import OwnEngineCase
from test_engine_own_mesh import OwnMeshCase
from test_router_states import StateChecks, StateExchange, TransferState


class OwnStatesTest(OwnEngineCase, StateChecks):

    def test_every_state_field_of_a_disposition_reaches_the_sender(self):
        r = self.start_own()
        self.check(self.run_scenario(StateExchange(r.url, r.url, "own.states")))
        self.assert_own(r, 2)

    def test_transfer_state_reaches_the_receiver_on_the_first_transfer(self):
        r = self.start_own()
        s = self.run_scenario(TransferState(r.url, [r.url], "own.xfer"))
        self.check_transfer_states(s, 1)
        self.assert_own(r, 2)

    def test_transfer_state_reaches_every_multicast_receiver(self):
        r = self.start_own(addresses=[{"prefix": "mc", "distribution": "multicast"}])
        s = self.run_scenario(TransferState(r.url, [r.url, r.url], "mc.own.xfer"))
        self.check_transfer_states(s, 2)
        self.assert_own(r, 3)


# --------------------------------------------------------------------------
# Across three own routers: states the core carries as they came.

CUSTOM_SYMBOL = symbol("com.example:custom-state")
LIST_STATE = Described(CUSTOM_SYMBOL, [uint(7), "half-way", {symbol("k"): True}])
MAP_STATE = Described(CUSTOM_SYMBOL, {symbol("phase"): "checked", symbol("count"): ulong(3)})
ACCEPTED_STATE = Described(ulong(0x24), [])
# a transactional-state whose txn-id is a string, not binary (part 4,
# 4.5.7), as python qpid-proton sends it (qd119 system_tests_two_routers
# test_04): 1.19 carries it as it came, so do we
LOOSE_TXN_STATE = Described(ulong(0x34), ["MyTxnID"])
LOOSE_TXN_REPLY = Described(ulong(0x34), ["MyTxnIDResp", ACCEPTED_STATE])
MESSAGE = b"\x00\x53\x73\xc0\x02\x01\x40" + b"\x00\x53\x75\xb0\x00\x00\x0b\xb8" + \
    bytes(i % 251 for i in range(3000))  # properties (message-id null), data of 3,000 octets


def raw_fields(body):
    """The encoded octets of each field of a performative's list (body
    starts at its descriptor)."""
    if body[:2] != b"\x00\x53":
        raise ValueError("performative without a small-ulong descriptor: %r" % body[:4])
    code, off = body[3], 4
    if code == 0x45:
        return []
    if code == 0xc0:
        count, off = body[off + 1], off + 2
    elif code == 0xd0:
        count, off = struct.unpack_from(">I", body, off + 4)[0], off + 8
    else:
        raise ValueError("performative's fields not a list: 0x%02x" % code)
    fields = []
    for _ in range(count):
        end = split_value(body, off)
        fields.append(body[off:end])
        off = end
    return fields


class RawPeer(RawClient):
    """A raw client that keeps each performative's field octets (f.raw)."""

    def read_frame(self):
        size, doff, kind, channel = struct.unpack(">IBBH", self._read(8))
        body = self._read(size - 8)[doff * 4 - 8:]
        if not body:
            f = Frame(kind, channel, None, [], b"")
            f.raw = []
        else:
            d = Data()
            used = d.decode(body)
            d.rewind()
            d.next()
            v = d.get_object()
            f = Frame(kind, channel, int(v.descriptor), list(v.value or []), body[used:])
            f.raw = raw_fields(body[:used])
        self.frames.append(f)
        return f

    def field(self, f, i):
        return f.raw[i] if len(f.raw) > i and f.raw[i] != b"\x40" else None

    def attach_receiver(self, name, handle, address, credit):
        self.send(frame(performative(ATTACH, [
            name, uint(handle), True, ubyte(0), ubyte(0),
            Described(ulong(0x28), [address]), Described(ulong(0x29), [None])])))
        self.expect(ATTACH)
        begin = [f for f in self.frames if f.code == BEGIN][0]
        self.send(frame(performative(FLOW, [
            uint(int(begin.fields[1])), uint(1 << 20), uint(1), uint(1 << 20), uint(handle),
            uint(0), uint(credit)])))

    def wait_credit(self, handle):
        while True:
            f = self.expect(FLOW)
            if len(f.fields) > 6 and f.fields[4] is not None and int(f.fields[4]) == handle \
                    and f.fields[6] is not None and int(f.fields[6]) > 0:
                return

    def transfer_frame(self, fields, payload):
        self.send(frame(performative(TRANSFER, fields) + payload))

    def disposition(self, first, settled, state):
        self.send(frame(performative(DISPOSITION, [True, uint(first), uint(first), settled,
                                                   state])))


class RawStatePeers:
    """Raw peers on a line of routers A, B, C (self.m), and how they read
    what crossed. own_routers: those whose inter-router connections must
    run on the own engine."""

    own_routers = "ABC"

    def peers(self, address):
        """A raw receiver on C (credit 10) and a raw sender on A with credit."""
        rx = RawPeer(self.m["C"].port)
        self.addCleanup(rx.close)
        rx.open()
        rx.begin()
        rx.attach_receiver("rx", 0, address, 10)
        self.m.wait_address("M0" + address, {"C"})
        tx = RawPeer(self.m["A"].port)
        self.addCleanup(tx.close)
        tx.open()
        tx.begin()
        tx.attach_sender("tx", 0, address)
        tx.wait_credit(0)
        for name in self.own_routers:
            self.assert_inter_router_own(name)
        return rx, tx

    @staticmethod
    def encoded(value):
        return encode(value)

    def next_transfer(self, rx):
        """The receiver's next delivery: (delivery-id, [each frame's state
        octets or None], payload)."""
        f = rx.expect(TRANSFER)
        did, states, payload = int(f.fields[1]), [rx.field(f, 7)], f.payload
        while len(f.fields) > 5 and f.fields[5]:
            f = rx.expect(TRANSFER)
            states.append(rx.field(f, 7))
            payload += f.payload
        return did, states, payload

    def next_disposition(self, tx):
        """The sender's next disposition: (first, settled, state octets)."""
        f = tx.expect(DISPOSITION)
        return int(f.fields[1]), bool(f.fields[3]), tx.field(f, 4)


class OwnStatesAcrossThree(RawStatePeers, OwnMeshCase):
    """Three junctiond routers in a line:
    a state named by a symbolic descriptor crosses both ways octet for
    octet, and a state on a later frame of a multi-frame delivery reaches
    the receiver (docs/protocol.md, "Delivery states")."""

    def setUp(self):
        super().setUp()
        self.m = self.engine_mesh(["A", "B", "C"], [("A", "B", 1), ("B", "C", 1)])

    def test_symbolic_receiver_states_reach_the_sender_octet_for_octet(self):
        rx, tx = self.peers("own.sym.disp")
        tx.transfer(0, 0, MESSAGE)
        tx.transfer(0, 1, MESSAGE)
        did0, _, _ = self.next_transfer(rx)
        did1, _, _ = self.next_transfer(rx)
        # non-terminal states, a list value then a map value, then accepted
        for state in (LIST_STATE, MAP_STATE):
            rx.disposition(did0, False, state)
            self.assertEqual(self.next_disposition(tx), (0, False, self.encoded(state)))
        rx.disposition(did0, True, ACCEPTED_STATE)
        first, settled, state = self.next_disposition(tx)
        self.assertEqual((first, settled), (0, True))
        self.assertEqual(state[:3], b"\x00\x53\x24", "accepted expected: %r" % state)
        # a symbolic state with the settlement: the terminal one
        rx.disposition(did1, True, MAP_STATE)
        self.assertEqual(self.next_disposition(tx), (1, True, self.encoded(MAP_STATE)))

    def test_symbolic_transfer_state_reaches_the_receiver(self):
        rx, tx = self.peers("own.sym.xfer")
        tx.transfer_frame([uint(0), uint(0), b"t0", uint(0), False, False, None, LIST_STATE],
                          MESSAGE)
        _, states, payload = self.next_transfer(rx)
        self.assertEqual(states[0], self.encoded(LIST_STATE))
        self.assertEqual(payload, MESSAGE)

    def test_transaction_state_of_wrong_types_crosses_both_ways(self):
        rx, tx = self.peers("own.txn.loose")
        tx.transfer_frame([uint(0), uint(0), b"t0", uint(0), False, False, None,
                           LOOSE_TXN_STATE], MESSAGE)
        did, states, payload = self.next_transfer(rx)
        self.assertEqual(states[0], self.encoded(LOOSE_TXN_STATE))
        self.assertEqual(payload, MESSAGE)
        rx.disposition(did, True, LOOSE_TXN_REPLY)
        self.assertEqual(self.next_disposition(tx), (0, True, self.encoded(LOOSE_TXN_REPLY)))

    def test_state_on_a_later_frame_of_a_three_frame_delivery(self):
        rx, tx = self.peers("own.late")
        thirds = [MESSAGE[:1000], MESSAGE[1000:2000], MESSAGE[2000:]]
        for did, pause in ((0, 0.3 * SLOW), (1, 0)):
            tag = b"t%d" % did
            tx.transfer_frame([uint(0), uint(did), tag, uint(0), False, True], thirds[0])
            time.sleep(pause)  # the copies' first frames leave first
            tx.transfer_frame([uint(0), None, None, None, None, True], thirds[1])
            time.sleep(pause)
            tx.transfer_frame([uint(0), None, None, None, None, False, None, MAP_STATE],
                              thirds[2])
            got, states, payload = self.next_transfer(rx)
            self.assertEqual(payload, MESSAGE)
            carried = [s for s in states if s is not None]
            self.assertEqual(carried, [self.encoded(MAP_STATE)],
                             "delivery %d: states on its frames %r" % (did, states))
            rx.disposition(got, True, ACCEPTED_STATE)
            first, settled, _ = self.next_disposition(tx)
            self.assertEqual((first, settled), (did, True))


class OwnSettleMidDelivery(OwnEngineCase):
    """A receiver that settles a copy before its last frame reached it
    (AMQP 1.0 2.6.12: the receiver may settle at any time): the router
    sends the copy's remaining frames (it crashed on the next one before
    h-eng2), the sender's delivery is settled with the receiver's outcome
    once its last frame is in, and the router goes on."""

    def test_receiver_settles_a_copy_before_its_last_frame(self):
        r = self.start_own()
        rx = RawPeer(r.port)
        self.addCleanup(rx.close)
        rx.open()
        rx.begin()
        rx.attach_receiver("rx", 0, "own.mid", 10)
        tx = RawPeer(r.port)
        self.addCleanup(tx.close)
        tx.open()
        tx.begin()
        tx.attach_sender("tx", 0, "own.mid")
        tx.wait_credit(0)
        thirds = [MESSAGE[:1000], MESSAGE[1000:2000], MESSAGE[2000:]]
        tx.transfer_frame([uint(0), uint(0), b"t0", uint(0), False, True], thirds[0])
        first = rx.expect(TRANSFER)
        self.assertTrue(first.fields[5], "the copy's first frame says more: %r" % first)
        rx.disposition(int(first.fields[1]), True, ACCEPTED_STATE)
        time.sleep(0.3 * SLOW)  # the router takes the settlement in first
        tx.transfer_frame([uint(0), None, None, None, None, True], thirds[1])
        tx.transfer_frame([uint(0), None, None, None, None, False], thirds[2])
        payload = first.payload
        f = first
        while len(f.fields) > 5 and f.fields[5]:
            f = rx.expect(TRANSFER)
            payload += f.payload
        self.assertEqual(payload, MESSAGE)
        # the sender's delivery settled once whole (one terminal disposition)
        first_out, settled, state = self.next_disposition(tx)
        self.assertEqual((first_out, settled), (0, True))
        self.assertEqual(state[:3], b"\x00\x53\x24", "accepted expected: %r" % state)
        # the router goes on: a whole second delivery, settled by the receiver
        tx.transfer(0, 1, MESSAGE)
        f = rx.expect(TRANSFER)
        while len(f.fields) > 5 and f.fields[5]:
            f = rx.expect(TRANSFER)
        rx.disposition(int(first.fields[1]) + 1, True, ACCEPTED_STATE)
        self.assertEqual(self.next_disposition(tx)[:2], (1, True))
        self.assertNotIn("failed:", r.log(), self.logs())

    next_disposition = RawStatePeers.next_disposition


if __name__ == "__main__":
    unittest.main()
