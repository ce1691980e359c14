#!/usr/bin/python3
"""Link routes and the transaction coordinator on Junction's own AMQP
engine (docs/engine.md, stage 3a).

The router has a route-container connector to a small proton container
(a "broker" on its own reactor thread) and link routes `lr` in and out;
the client's connection and the broker's both run on the own engine
(asserted from the log). Asserted, as proton's path did before stage 5:

- senders and receivers through the route: each delivery octet for octet
  with its sender's tag, both ways;
- every field of the client's termini reaches the broker (durable,
  expiry-policy, timeout, distribution-mode, filter, outcomes,
  capabilities, dynamic node properties);
- a dynamic source named by x-opt-qd.address: the broker makes the node,
  the client is answered with the broker's address;
- a receiver's credit reaches the broker whole, and its drain passes to
  the broker and the answer back;
- the broker's refusal of an attach reaches the client with its error;
  a detach with an error passes both ways, and a client's detach is
  answered with the broker's (closed or not);
- delivery states with every field both ways: modified (flags and
  annotations), rejected (condition, description, info), received
  (section number and offset), and a state the spec does not define;
- a coordinator target through a link route for `$coordinator`: the
  declare reaches the broker, its declared state (the txn-id) comes back;
  without a route the attach is refused with amqp:precondition-failed;
- 1.19's DISPATCH-1988 attach: a sender's attach without
  initial-delivery-count is served (its count from 0) and its messages
  through the route are accepted; a delivery of empty transfers (the
  first with more) is rejected by the router, the link going on.

JN_BUILD_DIR names the build directory (set by ctest).
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proton import Condition, Data, Delivery, Handler, Message, Terminus, symbol  # noqa: E402
from proton.reactor import Container  # noqa: E402

import harness  # noqa: E402
from harness import _Call, conf_section  # noqa: E402
from proton import Described, ulong, uint  # noqa: E402
from test_engine_own import OWN_LINE, OwnEngineCase  # noqa: E402
from test_router_linkroute_coordinator import (CAPS, REFUSAL, Controller,  # noqa: E402
                                               CoordinatorBroker)
from test_router_linkroute_drain import DrainingReceiver  # noqa: E402
from test_router_linkroute_wire import (TIMEOUT, RawClient, config,  # noqa: E402
                                        fake_connector, link_route, raw_message, send_raw)

KINDS = ["modified", "rejected", "received", "unknown"]
UNKNOWN = 0x9999  # a state AMQP 1.0 does not define


def apply_state(dlv, kind):
    """Set the state `kind` on dlv, every field, and settle it."""
    local = dlv.local
    if kind == "modified":
        local.failed = True
        local.undeliverable = True
        local.annotations = {symbol("x-opt-k"): "v"}
        dlv.update(Delivery.MODIFIED)
    elif kind == "rejected":
        local.condition = Condition("x:err", "why", {symbol("k"): 1})
        dlv.update(Delivery.REJECTED)
    elif kind == "received":
        local.section_number = 2
        local.section_offset = 7
        dlv.update(Delivery.RECEIVED)
    elif kind == "unknown":
        local.data = [7, "x"]
        dlv.update(UNKNOWN)
    elif kind == "declared":
        local.data = [b"txn-1"]
        dlv.update(0x33)
    else:
        dlv.update(Delivery.ACCEPTED)
    dlv.settle()


def seen_state(dlv):
    """The remote state of dlv with the fields that belong to it."""
    r, t = dlv.remote, dlv.remote_state
    if t == Delivery.MODIFIED:
        return ("modified", r.failed, r.undeliverable, r.annotations)
    if t == Delivery.REJECTED:
        c = r.condition
        return ("rejected", c.name, c.description, c.info)
    if t == Delivery.RECEIVED:
        return ("received", r.section_number, r.section_offset)
    return (t, r.data)


EXPECTED = {
    "modified": ("modified", True, True, {symbol("x-opt-k"): "v"}),
    "rejected": ("rejected", "x:err", "why", {symbol("k"): 1}),
    "received": ("received", 2, 7),
    "unknown": (UNKNOWN, [7, "x"]),
}


def data(d):
    """The value in proton Data d (an array as a list), or None."""
    d.rewind()
    v = d.get_object() if d.next() is not None else None
    return list(v.elements) if hasattr(v, "elements") else v


def terminus_fields(t):
    """The fields of a terminus that a link route copies."""
    return (t.durability, t.expiry_policy, t.timeout, t.distribution_mode, data(t.filter),
            data(t.outcomes), data(t.capabilities))


class Broker(CoordinatorBroker):
    """The route container. Beyond FakeBroker (records attaches and
    transfers, sends its outbox): answers each message whose body names a
    state with that state (`answered`); records the state a client gave
    each delivery it sent (`outcomes`, tag -> seen_state), the source
    fields of each link it sends on (`sources`), the errors of links
    detached by the client (`detached`: (closed, condition, description));
    refuses attaches to addresses in `refuse`, makes an address for a
    dynamic source, and detaches with an error a link on which a message
    `detach-me` arrives."""

    def __init__(self):
        super().__init__("broker")
        self.outcomes, self.sources, self.detached, self.flows = {}, [], [], []
        self.refuse = set()

    def on_link_remote_open(self, event):
        link = event.link
        address = link.remote_target.address if link.is_receiver else link.remote_source.address
        if address in self.refuse:
            link.condition = Condition("x:refused", "no such node here")
            link.close()
            return
        if link.is_sender:
            with self.lock:
                self.sources.append((link.remote_source.dynamic,
                                     data(link.remote_source.properties),
                                     terminus_fields(link.remote_source)))
        super().on_link_remote_open(event)
        if link.is_sender and link.remote_source.dynamic:
            link.source.address = "made-by-broker"

    def on_link_remote_close(self, event):
        c = event.link.remote_condition
        with self.lock:
            self.detached.append((True, c.name if c else None, c.description if c else None))
        event.link.close()

    def on_link_remote_detach(self, event):
        c = event.link.remote_condition
        with self.lock:
            self.detached.append((False, c.name if c else None, c.description if c else None))
        event.link.detach()

    def on_link_flow(self, event):
        super().on_link_flow(event)
        if event.link.is_sender:
            with self.lock:
                self.flows.append((event.link.credit, event.link.drain_mode))
        if event.link.is_sender and event.link.drain_mode:
            event.link.drained()  # nothing more queued: the drain answered

    def on_delivery(self, event):
        link, dlv = event.link, event.delivery
        if link.is_sender:
            if dlv.remote_state or dlv.settled:
                with self.lock:
                    self.outcomes[dlv.tag] = seen_state(dlv)
                dlv.settle()
            return
        if dlv.partial:
            return
        m = Message()
        m.decode(link.recv(dlv.pending))
        with self.lock:
            self.got.append((link.remote_target.address, dlv.tag, m.body))
        if m.body == "detach-me":
            dlv.settle()
            link.condition = Condition("x:gone", "the broker let go")
            link.close()
            return
        if isinstance(m.body, dict) or (link.remote_target.type == Terminus.COORDINATOR):
            apply_state(dlv, "declared")
        else:
            apply_state(dlv, m.body if m.body in KINDS else "accepted")
        link.flow(1)


class Client(Handler):
    """One link: a sender of `bodies` (recording each delivery's
    seen_state by tag in `outcomes`), or a receiver of `count` messages
    that gives each the state its body names. A sender detaches with
    `detach_error` once all are settled; with `until_detached`, it waits
    for the peer's detach after the last settlement instead (the broker's
    settlement and its detach may come in two reads). Records the link's
    remote error (`error`: (closed, condition, description)) and the
    remote source (`source_address`)."""

    def __init__(self, url, address, bodies=(), count=0, dynamic_qd=None,
                 detach_error=None, closed=True, source=None, until_detached=False):
        super().__init__()
        self.until_detached = until_detached
        self.url, self.address, self.bodies = url, address, list(bodies)
        self.count, self.dynamic_qd, self.source = count, dynamic_qd, source
        self.detach_error, self.closed = detach_error, closed
        self.outcomes, self.got = {}, []
        self.error = self.source_address = None
        self.timed_out = False
        self.sent = 0

    def run(self):
        Container(self).run()
        return self

    def on_reactor_init(self, event):
        c = event.reactor
        self.conn = c.connect(self.url, allowed_mechs="ANONYMOUS")
        if self.bodies or self.detach_error:
            self.link = c.create_sender(self.conn, self.address)
        else:
            self.link = c.create_receiver(self.conn, None if self.dynamic_qd else self.address,
                                          dynamic=bool(self.dynamic_qd))
            if self.dynamic_qd:
                self.link.source.properties.put_dict({symbol("x-opt-qd.address"):
                                                      self.dynamic_qd})
            if self.source:
                self.source(self.link.source)
            self.link.flow(max(self.count, 1))
        self.timer = c.schedule(TIMEOUT, self)

    def on_timer_task(self, event):
        self.timed_out = True
        self.conn.close()

    def _finish(self):
        self.timer.cancel()
        self.conn.close()

    def on_link_remote_open(self, event):
        self.source_address = event.link.remote_source.address
        if not self.bodies and not self.count and not self.detach_error:
            self._finish()

    def on_link_flow(self, event):
        link = event.link
        while link.is_sender and link.credit > 0 and self.sent < len(self.bodies):
            link.delivery("t-%d" % self.sent)
            link.send(Message(body=self.bodies[self.sent]).encode())
            link.advance()
            self.sent += 1

    def on_delivery(self, event):
        link, dlv = event.link, event.delivery
        if link.is_sender:
            if dlv.remote_state or dlv.settled:
                self.outcomes[dlv.tag] = seen_state(dlv)
                dlv.settle()
                if len(self.outcomes) == len(self.bodies) and self.detach_error is None:
                    if not self.until_detached:
                        self._finish()
                elif len(self.outcomes) == len(self.bodies):
                    if self.detach_error[0]:
                        link.condition = Condition(*self.detach_error)
                    link.close() if self.closed else link.detach()
            return
        if dlv.partial:
            return
        m = Message()
        m.decode(link.recv(dlv.pending))
        self.got.append((dlv.tag, m.body))
        apply_state(dlv, m.body)
        if len(self.got) >= self.count:
            self._finish()

    def _remote_end(self, event, closed):
        c = event.link.remote_condition
        self.error = (closed, c.name if c else None, c.description if c else None)
        self._finish()

    def on_link_remote_close(self, event):
        self._remote_end(event, True)

    def on_link_remote_detach(self, event):
        self._remote_end(event, False)

    def on_transport_error(self, event):
        pass


class FlowThenDrain(DrainingReceiver):
    """A receiver that grants `credit` without drain, then drains."""

    def on_link_opened(self, event):
        if event.link == self.rcv:
            self.rcv.flow(self.credit)
            self.container.schedule(0.5, _Call(lambda: self.rcv.drain(0)))


class DeclaringController(Controller):
    """Controller that also records the declared state's txn-id."""

    def on_delivery(self, event):
        self.data = event.delivery.remote.data
        super().on_delivery(event)


class OwnLinkRouteCase(OwnEngineCase):

    def router(self, broker, connector_extra=None, listener_extra=None, routes=None):
        routes = routes if routes is not None else link_route("lr", "in") + link_route("lr", "out")
        text = config("R", extra=fake_connector(broker) + routes)
        if listener_extra or connector_extra:
            text = self.patch(text, listener_extra, connector_extra)
        r = self.start_own(config=text)
        self.wait_for("the broker's connection", lambda: "Connection Opened: dir=out" in r.log(),
                      TIMEOUT)
        return r

    @staticmethod
    def patch(text, listener_extra, connector_extra):
        """text with attributes added to its listener and connector sections."""
        out, section = [], None
        for line in text.splitlines():
            if line.strip() in ("listener {", "connector {"):
                section = line.strip().split()[0]
            extra = {"listener": listener_extra, "connector": connector_extra}.get(section)
            if line.strip() == "}" and extra:
                out.extend("    %s: %s" % kv for kv in extra.items())
                section = None
            elif line.strip() == "}":
                section = None
            out.append(line)
        return "\n".join(out) + "\n"

    def broker(self):
        b = Broker().start()
        self.addCleanup(b.stop)
        return b

    def engines(self, r):
        """{connection id: own?} for the router's connections, in and out."""
        conns = {}
        for line in r.log().splitlines():
            if "Connection Opened: dir=" in line:
                conns[line.split("[C", 1)[1].split("]", 1)[0]] = False
            if OWN_LINE in line:
                conns[line.split("[C", 1)[1].split("]", 1)[0]] = True
        return conns

    def out_on_own(self, r):
        ids = [l.split("[C", 1)[1].split("]", 1)[0] for l in r.log().splitlines()
               if "Connection Opened: dir=out" in l]
        return [self.engines(r)[i] for i in ids]


class OwnLinkRouteTest(OwnLinkRouteCase):

    def test_senders_and_receivers_through_the_route_octets_and_tags(self):
        b = self.broker()
        r = self.router(b)
        self.assertEqual(self.out_on_own(r), [True], self.logs())
        items = [("tag-%d" % i, raw_message(i)) for i in range(5)]
        s = send_raw(r.url, "lr.in.q", items)
        self.assertFalse(s.timed_out, self.logs())
        self.assertEqual(s.outcomes, [Delivery.ACCEPTED] * 5)
        with b.lock:
            got = [(t, d) for _, t, d in b.got]
        self.assertEqual(len(got), 5)
        out = [("broker-tag-%d" % i, raw_message(100 + i)) for i in range(5)]
        with b.lock:
            b.outbox["lr.out.q"] = list(out)
        c = RawClient(r.url, "lr.out.q", count=5).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(c.got, out)
        self.assertTrue(all(self.engines(r).values()), self.logs())

    def test_every_terminus_field_reaches_the_broker(self):
        b = self.broker()
        r = self.router(b)

        def source(t):
            t.durability = Terminus.DELIVERIES
            t.expiry_policy = Terminus.EXPIRE_WITH_CONNECTION
            t.timeout = 0
            t.distribution_mode = Terminus.DIST_MODE_COPY
            t.filter.put_dict({symbol("f"): "x = 1"})
            t.outcomes.put_array(False, Data.SYMBOL)
            t.outcomes.enter()
            t.outcomes.put_symbol("amqp:accepted:list")
            t.outcomes.exit()
            t.capabilities.put_symbol("cap-1")
        c = Client(r.url, "lr.out.fields", source=source).run()
        self.assertFalse(c.timed_out, self.logs())
        with b.lock:
            self.assertEqual(b.sources[-1][2],
                             (Terminus.DELIVERIES, Terminus.EXPIRE_WITH_CONNECTION, 0,
                              Terminus.DIST_MODE_COPY, {symbol("f"): "x = 1"},
                              [symbol("amqp:accepted:list")], symbol("cap-1")))

    def test_dynamic_source_is_made_by_the_broker(self):
        b = self.broker()
        r = self.router(b)
        c = Client(r.url, None, dynamic_qd="lr.dyn").run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(c.source_address, "made-by-broker", self.logs())
        with b.lock:
            dynamic, props, _ = b.sources[-1]
        self.assertTrue(dynamic)
        self.assertEqual(props[symbol("x-opt-qd.address")], "lr.dyn")

    def test_drain_passes_to_the_broker_and_back(self):
        b = self.broker()
        r = self.router(b)
        s = DrainingReceiver(r.url, "lr.drain.q", 10)
        s.run()
        self.assertIsNone(s.error, self.logs())
        self.assertEqual(s.answers, [(0, 0)])

    def test_receiver_credit_reaches_the_broker_whole(self):
        # the broker's end of the route gets the client's credit at once
        # (up to the receiver's link's unsettled bound, twice its capacity:
        # 500 by default, which the core passes; docs/compat.md), as 1.19
        # grants it; not the 4 a client's link gets before its first
        # message
        b = self.broker()
        r = self.router(b)
        s = FlowThenDrain(r.url, "lr.credit.q", 1000)
        s.run()
        self.assertIsNone(s.error, self.logs())
        with b.lock:
            self.assertEqual(b.flows[0], (500, False), b.flows)
        s = FlowThenDrain(r.url, "lr.credit.q", 100)
        s.run()
        self.assertIsNone(s.error, self.logs())
        with b.lock:
            self.assertIn((100, False), b.flows)

    def test_broker_refusal_reaches_the_client_with_its_error(self):
        b = self.broker()
        b.refuse.add("lr.in.nope")
        r = self.router(b)
        c = Client(r.url, "lr.in.nope", bodies=["x"]).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(c.error, (True, "x:refused", "no such node here"))

    def test_detach_with_error_both_ways(self):
        b = self.broker()
        r = self.router(b)
        # the broker's
        c = Client(r.url, "lr.in.d1", bodies=["detach-me"], until_detached=True).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(c.error, (True, "x:gone", "the broker let go"))
        # the client's close with an error: the broker sees it; the
        # client's answer is the broker's
        c = Client(r.url, "lr.in.d2", bodies=["a"], detach_error=("x:client", "done")).run()
        self.assertFalse(c.timed_out, self.logs())
        self.wait_for("the broker's close", lambda: len(b.detached) == 2, TIMEOUT)
        with b.lock:
            self.assertEqual(b.detached[-1], (True, "x:client", "done"))
        self.assertEqual(c.error, (True, None, None))
        # a detach that is not closed is passed on, and answered, as one
        c = Client(r.url, "lr.in.d3", bodies=["a"], detach_error=(None,), closed=False).run()
        self.assertFalse(c.timed_out, self.logs())
        with b.lock:
            self.assertEqual(b.detached[-1], (False, None, None))
        self.assertEqual(c.error, (False, None, None))

    def test_states_with_every_field_both_ways(self):
        b = self.broker()
        r = self.router(b)
        c = Client(r.url, "lr.in.states", bodies=KINDS).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual([c.outcomes["t-%d" % i] for i in range(len(KINDS))],
                         [EXPECTED[k] for k in KINDS])
        with b.lock:
            b.outbox["lr.out.states"] = [("b-%d" % i, Message(body=k).encode())
                                         for i, k in enumerate(KINDS)]
        c = Client(r.url, "lr.out.states", count=len(KINDS)).run()
        self.assertFalse(c.timed_out, self.logs())
        self.wait_for("the broker's outcomes", lambda: len(b.outcomes) == len(KINDS), TIMEOUT)
        with b.lock:
            self.assertEqual([b.outcomes["b-%d" % i] for i in range(len(KINDS))],
                             [EXPECTED[k] for k in KINDS])


class OwnCoordinatorTest(OwnLinkRouteCase):

    def test_coordinator_through_a_link_route_declared_comes_back(self):
        b = self.broker()
        r = self.router(b, routes=conf_section("linkRoute", {
            "name": "txn", "prefix": "$coordinator", "direction": "in", "connection": "fake"}))
        c = DeclaringController(r.url).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertIsNone(c.error, self.logs())
        self.assertEqual(c.outcome, 0x33)
        self.assertEqual(c.data, [b"txn-1"])
        with b.lock:
            self.assertEqual(b.targets, [(Terminus.COORDINATOR, CAPS)])
        self.assertTrue(all(self.engines(r).values()), self.logs())

    def test_coordinator_without_a_route_is_refused_precondition_failed(self):
        b = self.broker()
        r = self.router(b)
        c = Controller(r.url).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(c.error, ("amqp:precondition-failed", REFUSAL))


class WithoutInitialCountTest(OwnLinkRouteCase):

    def raw_sender(self, r):
        """A raw client at r with a sender attached to lr.in.raw as 1.19's
        DISPATCH-1988 test attaches it (name, handle, role, a target;
        no initial-delivery-count); returns it and the first flow that
        gives the link credit."""
        c = harness.RawClient(r.port)
        self.addCleanup(c.close)
        c.open()
        c.begin()
        c.send(harness.frame(harness.performative(harness.ATTACH, [
            "raw-1988", uint(0), False, None, None, None,
            Described(ulong(0x29), ["lr.in.raw"])])))
        answer = c.expect(harness.ATTACH)
        self.assertIsNotNone(answer.fields[6], self.logs())  # a target: not refused
        while True:
            flow = c.expect(harness.FLOW)
            if len(flow.fields) > 6 and flow.fields[4] == 0 and flow.fields[6]:
                return c, flow

    def outcome(self, c):
        d = c.expect(harness.DISPOSITION)
        return int(d.fields[4].descriptor) if d.fields[4] is not None else None

    def test_sender_attach_without_initial_count_through_a_route(self):
        b = self.broker()
        r = self.router(b)
        c, flow = self.raw_sender(r)
        self.assertEqual(flow.fields[5], 0)  # the count the router took: 0
        for n in range(2):
            c.transfer(0, n, raw_message(n))
            self.assertEqual(self.outcome(c), 0x24)  # accepted by the broker
        with b.lock:
            got = [(a, t) for a, t, _ in b.got]
        self.assertEqual(got, [("lr.in.raw", "t0"), ("lr.in.raw", "t1")])
        self.assertTrue(all(self.engines(r).values()), self.logs())

    def test_empty_transfers_on_a_routed_link_are_rejected_by_the_router(self):
        """Two empty transfers, the first with more: the own path rejects
        the delivery itself (as 1.19 does), the link goes on. (1.19's test
        also takes the container's answer, which proton's path, gone in
        stage 5, passed back.)"""
        b = self.broker()
        r = self.router(b)
        c, _ = self.raw_sender(r)
        for more in (True, False):
            c.send(harness.frame(harness.performative(harness.TRANSFER, [
                uint(0), uint(0), b"t0", uint(0), False, more])))
        self.assertEqual(self.outcome(c), 0x25)  # rejected
        c.transfer(0, 1, raw_message(1))
        self.assertEqual(self.outcome(c), 0x24)
        with b.lock:
            got = [(a, t) for a, t, _ in b.got]
        self.assertEqual(got, [("lr.in.raw", "t1")])
        self.assertTrue(all(self.engines(r).values()), self.logs())


if __name__ == "__main__":
    unittest.main()
