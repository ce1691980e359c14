#!/usr/bin/python3
"""System tests: frames, messages and values at the edges of the spec
(issue 14: "Frames and messages at the edges of the spec", "Routing
failures", "Odd but legal values never break management").

- Transfers that carry no octets at all: an empty delivery is rejected
  (amqp:decode-error) and settled, an empty aborted one is settled, the
  sender gets its credit back and the next message on the link goes
  through.
- Messages with a null or empty body, or no body section, arrive byte for
  byte as sent.
- Routing failures answer as qdrouterd 1.19 does: a sender to an address
  configured `unavailable` (or a receiver) is refused with
  amqp:not-found "Node not found", an
  anonymous-relay message to it is rejected with amqp:not-found, one to an
  anycast address with no consumer is released; hundreds of router
  rejections in a row never stall the link.
- Open properties with any AMQP type as key or value: the connection works
  and QUERY connection answers 200 with them rendered.
"""
import time
import unittest
import uuid

from proton import (Data, Delivery, Described, Message, char, int32, symbol, timestamp, ubyte, uint, ulong,
                    ushort)
from proton.utils import BlockingConnection, LinkDetached, SendException

from harness import (AMQP_HEADER, ATTACH, DISPOSITION, FLOW, OPEN, SLOW, TRANSFER, RawClient, Recv,
                     RouterTestCase, Send, Traffic, frame, performative)
from test_router_routing import outcomes
from test_mgmt_agent import Manager

TIMEOUT = 10 * SLOW


def transfer(handle, delivery_id=None, tag=None, more=False, aborted=False, payload=b""):
    fields = [uint(handle), None if delivery_id is None else uint(delivery_id), tag, uint(0),
              False, more, None, None, False, aborted]
    return frame(performative(TRANSFER, fields) + payload)


def section(code, value):
    d = Data()
    d.put_object(Described(ulong(code), value))
    return d.encode()


class EdgesTest(RouterTestCase):

    def setUp(self):
        super().setUp()
        self.router = self.start_router(addresses=[{"prefix": "unavail",
                                                    "distribution": "unavailable"}])

    def receiver(self, address):
        c = BlockingConnection(self.router.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        return c.create_receiver(address, credit=100)

    def raw_sender(self, address):
        """A raw client with a sending link on handle 0 and its first credit."""
        c = RawClient(self.router.port)
        self.addCleanup(c.close)
        c.open()
        c.begin()
        c.attach_sender("edge-tx", 0, address)
        c.expect(FLOW)
        return c

    def read_dispositions(self, c, want):
        """Read frames until `want` dispositions came; return them and the
        highest link-credit seen in flows."""
        dispositions, credit = [], None
        deadline = time.monotonic() + TIMEOUT
        while len(dispositions) < want and time.monotonic() < deadline:
            f = c.read_frame()
            if f.code == DISPOSITION:
                dispositions.append(f)
            elif f.code == FLOW and len(f.fields) > 6 and f.fields[6] is not None:
                credit = int(f.fields[6])
        return dispositions, credit

    def check_next_message_goes_through(self, c, rx, delivery_id):
        c.send(transfer(0, delivery_id, b"next", payload=Message(body="next").encode()))
        m = rx.receive(timeout=TIMEOUT)
        self.assertEqual(m.body, "next")
        rx.accept()
        self.assertTrue(self.router.alive(), self.logs())

    def test_empty_delivery_rejected_with_decode_error_and_credit_back(self):
        rx = self.receiver("edges.q")
        for what, frames in (("one empty transfer", transfer(0, 0, b"t0")),
                             ("three empty transfers", transfer(0, 0, b"t0", more=True) +
                              transfer(0, more=True) + transfer(0))):
            with self.subTest(what):
                c = self.raw_sender("edges.q")
                c.send(frames)
                (d,), _ = self.read_dispositions(c, 1)
                # disposition(role=receiver, first=0, settled=true, rejected(error))
                self.assertTrue(d.fields[3], "not settled: %r" % d)
                state = d.fields[4]
                self.assertEqual(int(state.descriptor), 0x25, "not rejected: %r" % d)
                self.assertEqual(str(state.value[0].value[0]), "amqp:decode-error", d)
                self.check_next_message_goes_through(c, rx, 1)

    def test_payload_that_is_not_a_message_is_rejected_and_never_reaches_a_receiver(self):
        # docs/compat.md, "A transfer that is not an AMQP message is refused"
        rx = self.receiver("edges.q")
        c = self.raw_sender("edges.q")
        c.send(transfer(0, 0, b"t0", more=True, payload=b"0123456789" * 1000) +
               transfer(0, payload=b"0123456789"))
        (d,), _ = self.read_dispositions(c, 1)
        self.assertTrue(d.fields[3], "not settled: %r" % d)
        state = d.fields[4]
        self.assertEqual(int(state.descriptor), 0x25, "not rejected: %r" % d)
        self.assertEqual(str(state.value[0].value[0]), "amqp:decode-error", d)
        self.check_next_message_goes_through(c, rx, 1)  # and the garbage did not come first

    def test_empty_aborted_delivery_is_settled_and_the_link_goes_on(self):
        rx = self.receiver("edges.q")
        c = self.raw_sender("edges.q")
        c.send(transfer(0, 0, b"t0", more=True) + transfer(0, aborted=True))
        self.check_next_message_goes_through(c, rx, 1)

    def test_null_empty_and_absent_bodies_arrive_byte_for_byte(self):
        props = section(0x73, [None, None, "edges.bodies"])
        bodies = [
            props + section(0x77, None),                # null amqp-value
            props + section(0x75, b""),                 # empty data
            props + section(0x76, []),                  # empty amqp-sequence
            section(0x70, [True]) + props,              # no body section
        ]
        rx = Recv("edges.bodies", raw=True)
        tx = Send("edges.bodies", bodies)
        self.run_scenario(Traffic(self.router, [rx], [tx], expect=len(bodies), linger=0.5))
        self.assertEqual(outcomes(tx), [Delivery.ACCEPTED] * len(bodies))
        self.assertEqual(rx.messages, bodies, "the messages must arrive byte for byte")

    def test_routing_failures_answer_as_1_19(self):
        c = BlockingConnection(self.router.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        # a sender or a receiver: amqp:not-found "Node not found", 1.19's text
        with self.assertRaises(LinkDetached) as cm:
            c.create_sender("unavail.x")
        self.assertEqual(cm.exception.link.remote_condition.name, "amqp:not-found")
        self.assertEqual(cm.exception.link.remote_condition.description, "Node not found")
        with self.assertRaises(LinkDetached) as cm:
            c.create_receiver("unavail.x")
        self.assertEqual(cm.exception.link.remote_condition.name, "amqp:not-found")
        self.assertEqual(cm.exception.link.remote_condition.description, "Node not found")
        anon = c.create_sender(None)
        with self.assertRaises(SendException) as cm:
            anon.send(Message(address="unavail.y", body="x"), timeout=TIMEOUT)
        self.assertEqual(str(cm.exception.state), "REJECTED")
        with self.assertRaises(SendException) as cm:
            anon.send(Message(address="nobody.q", body="x"), timeout=TIMEOUT)
        self.assertEqual(str(cm.exception.state), "RELEASED")
        # credit comes back for every router rejection: 600 in a row
        rejected = 0
        for i in range(600):
            try:
                anon.send(Message(address="unavail.z", body=i), timeout=TIMEOUT)
            except SendException as e:
                self.assertEqual(str(e.state), "REJECTED")
                rejected += 1
        self.assertEqual(rejected, 600)
        self.assertTrue(self.router.alive())

    def test_anonymous_rejection_carries_not_found(self):
        c = RawClient(self.router.port)
        self.addCleanup(c.close)
        c.open()
        c.begin()
        c.send(frame(performative(ATTACH, [
            "anon", uint(0), False, ubyte(0), ubyte(0),
            Described(ulong(0x28), [None]), Described(ulong(0x29), [None]),
            None, None, uint(0)])))
        c.expect(ATTACH)
        c.expect(FLOW)
        c.send(transfer(0, 0, b"t0", payload=Message(address="unavail.q", body="x").encode()))
        (d,), _ = self.read_dispositions(c, 1)
        state = d.fields[4]
        self.assertEqual(int(state.descriptor), 0x25, d)
        self.assertEqual(str(state.value[0].value[0]), "amqp:not-found", d)
        # 1.19's description, which its clients read
        self.assertEqual(str(state.value[0].value[1]),
                         "Deliveries cannot be sent to an unavailable address", d)

    def test_open_properties_of_any_type_are_queried(self):
        c = RawClient(self.router.port)
        self.addCleanup(c.close)
        c.sasl_anonymous()
        c.send(AMQP_HEADER)
        c.read_header()
        props = {symbol("product"): "odd", 7: "int key", ulong(9): [1, "two", None],
                 b"bin": {symbol("k"): uuid.UUID(int=5)}, symbol("ts"): timestamp(1700000000000),
                 symbol("d"): Described(symbol("x:y"), [1]), symbol("null"): None,
                 int32(-3): 1.5, symbol("c"): char("z")}
        c.send(frame(performative(OPEN, ["odd-client", "127.0.0.1", uint(65536), ushort(255),
                                         None, None, None, None, None, props])))
        c.expect(OPEN)
        m = Manager(self.router)
        self.addCleanup(m.close)
        rows = m.query("org.apache.qpid.dispatch.connection")  # asserts status 200
        odd = [r for r in rows if r["container"] == "odd-client"]
        self.assertEqual(len(odd), 1, rows)
        got = odd[0]["properties"]
        self.assertEqual(got["product"], "odd")
        self.assertEqual(got["7"], "int key")
        self.assertEqual(got["9"], [1, "two", None])
        self.assertEqual(got['b"bin"'], {"k": "00000000-0000-0000-0000-000000000005"})
        self.assertEqual(got["ts"], 1700000000000)
        self.assertEqual(got["d"], '@:"x:y" [1]')
        self.assertIsNone(got["null"])
        self.assertEqual(got["-3"], 1.5)
        self.assertEqual(got["c"], "z")
        self.assertTrue(self.router.alive())


if __name__ == "__main__":
    unittest.main()
