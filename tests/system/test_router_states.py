#!/usr/bin/python3
"""System tests: delivery states travel unchanged, both ways, across any
number of hops (issue 14, "Delivery state travels unchanged").

A receiver gives each message a different state, with every field the
spec defines: rejected with its error (condition, description, info map),
modified with delivery-failed, undeliverable-here and message annotations,
received (section-number, section-offset) as a non-terminal state before
the outcome, and a state the spec does not define (descriptor 0x9999 with
a value of its own) before the outcome. The sender must see each of them
as the receiver sent it, then the final outcome, once. On one router and
across a line of three.

The other way too: a state the sender puts on a transfer (any type, with
its value) reaches every receiver of the delivery — one, each of a
multicast address, or one three routers away — on small and large
(multi-frame) messages. Proton 0.37 reads a state only from a delivery's
first transfer, so that is where Junction takes it from and puts it.
"""
import unittest

from proton import Condition, Delivery, Message, symbol

from harness import RouterTestCase, Scenario
from mesh import Mesh

CUSTOM = 0x9999
INFO = {symbol("retry-after"): 42, symbol("where"): "queue-7"}
ANNOTATIONS = {symbol("x-opt-reason"): "busy", symbol("x-opt-count"): 3}
CUSTOM_VALUE = [1, "two", {symbol("k"): True}]


class StateExchange(Scenario):
    """Send one message per case; the receiver answers each with its case's
    state(s); the sender records every update it sees."""

    CASES = ["rejected", "modified", "received", "custom"]

    def __init__(self, send_url, recv_url, address):
        super().__init__(timeout=30)
        self.send_url, self.recv_url, self.address = send_url, recv_url, address
        self.seen = {}  # case -> [(state, fields...)]
        self.sender = None
        self.sent = 0

    def start(self):
        self.receiver = self.container.create_receiver(self.connect(self.recv_url), self.address)

    def on_link_opened(self, event):
        if event.link == self.receiver:
            event.link.flow(10)
            self.sender = self.container.create_sender(self.connect(self.send_url),
                                                       self.address)

    def on_sendable(self, event):
        while event.sender.credit and self.sent < len(self.CASES):
            case = self.CASES[self.sent]
            dlv = event.sender.send(Message(body=case))
            dlv.case = case
            self.sent += 1

    def on_message(self, event):
        dlv, case = event.delivery, event.message.body
        local = dlv.local
        if case == "rejected":
            local.condition = Condition("amqp:precondition-failed", "not now", INFO)
            dlv.update(Delivery.REJECTED)
        elif case == "modified":
            local.failed = True
            local.undeliverable = True
            local.annotations = ANNOTATIONS
            dlv.update(Delivery.MODIFIED)
        elif case == "received":
            local.section_number = 3
            local.section_offset = 77
            dlv.update(Delivery.RECEIVED)
            self.later = getattr(self, "later", []) + [dlv]
            return
        elif case == "custom":
            local.data = CUSTOM_VALUE
            dlv.update(CUSTOM)
            self.later = getattr(self, "later", []) + [dlv]
            return
        dlv.settle()

    def tick(self):
        # settle the non-terminal ones with accepted once the sender saw
        # their state (so the order is observable)
        for dlv in list(getattr(self, "later", [])):
            case = "received" if dlv.local.type == Delivery.RECEIVED else "custom"
            if self.seen.get(case):
                dlv.update(Delivery.ACCEPTED)
                dlv.settle()
                self.later.remove(dlv)
        if all(any(s[1] for s in self.seen.get(c, [])) for c in self.CASES):
            self.done()

    def on_delivery(self, event):
        if not event.link.is_sender:
            return  # the message handlers below call on_message
        dlv = event.delivery
        if not dlv.updated:
            return
        r = dlv.remote
        state = dlv.remote_state
        settled = dlv.settled  # proton: settled by the remote end (the router)
        if state == Delivery.REJECTED:
            c = r.condition
            rec = ("rejected", settled, c.name, c.description, dict(c.info or {}))
        elif state == Delivery.MODIFIED:
            rec = ("modified", settled, r.failed, r.undeliverable, dict(r.annotations or {}))
        elif state == Delivery.RECEIVED:
            rec = ("received", settled, r.section_number, r.section_offset)
        elif state == Delivery.ACCEPTED:
            rec = ("accepted", settled)
        else:
            rec = ("custom", settled, int(state), r.data)
        self.seen.setdefault(dlv.case, []).append(rec)
        if settled:
            dlv.settle()

    def progress(self):
        return "seen %r" % self.seen


class TransferState(Scenario):
    """The sender puts a state on its transfers (descriptor 0x9999 with a
    value; and a received state with its numbers); every receiver must see
    it on the delivery it gets. `receivers` receivers (2 on a multicast
    address), small and large (multi-frame) messages."""

    def __init__(self, send_url, recv_urls, address, count=4):
        super().__init__(timeout=30)
        self.send_url, self.recv_urls, self.address, self.count = \
            send_url, recv_urls, address, count
        self.got = []  # (receiver index, body size, state, value)
        self.opened = 0
        self.sent = 0

    def start(self):
        self.receivers = [self.container.create_receiver(self.connect(u), self.address)
                          for u in self.recv_urls]

    def on_link_opened(self, event):
        if event.link in self.receivers:
            event.link.flow(50)
            self.opened += 1
            if self.opened == len(self.receivers):
                # a moment for the address to reach the sender's router
                self.container.schedule(1.0, self)

    def on_timer_task(self, event):
        self.sender = self.container.create_sender(self.connect(self.send_url), self.address)

    def on_sendable(self, event):
        while event.sender.credit and self.sent < self.count:
            size = 3 if self.sent % 2 == 0 else 300 * 1024  # large: many frames
            dlv = event.sender.delivery(str(self.sent))
            if self.sent < 2:
                dlv.local.data = CUSTOM_VALUE
                dlv.update(CUSTOM)
            else:
                dlv.local.section_number = 5
                dlv.local.section_offset = 1234
                dlv.update(Delivery.RECEIVED)
            event.sender.stream(Message(body=b"x" * size).encode())
            event.sender.advance()
            self.sent += 1

    def on_message(self, event):
        d = event.delivery
        idx = self.receivers.index(event.link)
        if d.remote_state == Delivery.RECEIVED:
            # proton 0.37 keeps a transfer's received fields as raw data
            # (its section getters are filled from dispositions only)
            value = (d.remote.section_number, d.remote.section_offset)
            if value == (0, 0) and d.remote.data:
                value = tuple(int(v) for v in d.remote.data)
        else:
            value = list(d.remote.data) if d.remote.data is not None else None
        self.got.append((idx, len(event.message.body), d.remote_state, value))
        self.accept(d)
        if len(self.got) == self.count * len(self.receivers):
            self.done()

    def progress(self):
        return "got %r" % self.got


class StateChecks:

    def check_transfer_states(self, s, receivers, ordered=True):
        """ordered False: across routers, where a large message streams on
        a link of its own and the small one after it may arrive first
        (docs/protocol.md, "Streaming links")."""
        want = []
        for i in range(4):
            size = 3 if i % 2 == 0 else 300 * 1024
            want.append((size, CUSTOM, CUSTOM_VALUE) if i < 2 else
                        (size, Delivery.RECEIVED, (5, 1234)))
        for r in range(receivers):
            got = [g[1:] for g in s.got if g[0] == r]
            if not ordered:
                got, want = sorted(got, key=repr), sorted(want, key=repr)
            self.assertEqual(got, want, "receiver %d" % r)


    def check(self, s):
        self.assertEqual(s.seen["rejected"],
                         [("rejected", True, "amqp:precondition-failed", "not now", INFO)])
        self.assertEqual(s.seen["modified"], [("modified", True, True, True, ANNOTATIONS)])
        self.assertEqual(s.seen["received"], [("received", False, 3, 77), ("accepted", True)])
        self.assertEqual(s.seen["custom"][-1], ("accepted", True))
        first = s.seen["custom"][0]
        self.assertEqual(first[:3], ("custom", False, CUSTOM), s.seen["custom"])
        self.assertEqual(list(first[3]), CUSTOM_VALUE, s.seen["custom"])
        self.assertEqual(len(s.seen["custom"]), 2, s.seen["custom"])


class OneRouterStatesTest(RouterTestCase, StateChecks):

    def test_every_state_field_reaches_the_sender(self):
        r = self.start_router()
        self.check(self.run_scenario(StateExchange(r.url, r.url, "states.q")))

    def test_transfer_state_reaches_the_receiver(self):
        r = self.start_router()
        s = self.run_scenario(TransferState(r.url, [r.url], "states.xfer"))
        self.check_transfer_states(s, 1)

    def test_transfer_state_reaches_every_multicast_receiver(self):
        r = self.start_router(addresses=[{"prefix": "mc", "distribution": "multicast"}])
        s = self.run_scenario(TransferState(r.url, [r.url, r.url], "mc.states"))
        self.check_transfer_states(s, 2)


class ThreeRouterStatesTest(RouterTestCase, StateChecks):

    def test_every_state_field_crosses_three_routers(self):
        m = Mesh(self, ["A", "B", "C"], [("B", "A", 1), ("C", "B", 1)]).start()
        self.check(self.run_scenario(StateExchange(m["A"].url, m["C"].url, "states.mesh")))

    def test_transfer_state_crosses_three_routers(self):
        m = Mesh(self, ["A", "B", "C"], [("B", "A", 1), ("C", "B", 1)]).start()
        s = self.run_scenario(TransferState(m["A"].url, [m["C"].url], "states.xmesh"))
        self.check_transfer_states(s, 1, ordered=False)


if __name__ == "__main__":
    unittest.main()
