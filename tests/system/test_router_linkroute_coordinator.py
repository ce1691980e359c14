#!/usr/bin/python3
"""Transaction coordinator links and link routes (AMQP 1.0 4.5.1;
router/core/coordinator.c).

A client that declares transactions attaches a sender whose target is a
coordinator, which has no address. The router coordinates no transaction
itself; as 1.19 does:

- with no link route for the address `$coordinator`, the attach is refused
  with amqp:precondition-failed and 1.19's description;
- with a link route (direction in) whose prefix matches `$coordinator`,
  the link goes to that route's container with the coordinator and its
  capabilities as the client sent them, and the declare passes;
- with such a link route but no container connected, the attach is
  refused with qd:no-route-to-dest.

Real junctiond processes and a small proton container on 127.0.0.1; every
wait bounded.
"""
from proton import Data, Delivery, Described, Handler, Message, Terminus, symbol
from proton.reactor import Container

from harness import conf_section
from test_router_linkroute_wire import (TIMEOUT, FakeBroker, LinkRouteCase, config,
                                        fake_connector)

REFUSAL = ("The router can't coordinate transactions by itself, a linkRoute to a "
           "coordinator must be configured to use transactions.")
CAPS = ["amqp:local-transactions", "amqp:multi-txns-per-ssn"]


def declare_message():
    """A controller's declare (AMQP 1.0 4.5.1): body amqp:declare:list []."""
    return Message(body=Described(symbol("amqp:declare:list"), []))


class CoordinatorBroker(FakeBroker):
    """A FakeBroker that also records the type and capabilities of each
    target it is attached to (`targets`: (type, [capability]))."""

    def __init__(self, container_id="fake-broker"):
        super().__init__(container_id)
        self.targets = []

    def on_link_remote_open(self, event):
        t = event.link.remote_target
        caps = []
        if event.link.is_receiver:
            data = t.capabilities
            data.rewind()
            data.next()
            if data.type() == Data.ARRAY:
                data.enter()
                while data.next():
                    caps.append(str(data.get_symbol()))
                data.exit()
            elif data.type() == Data.SYMBOL:
                caps.append(str(data.get_symbol()))
            with self.lock:
                self.targets.append((t.type, caps))
        super().on_link_remote_open(event)


class Controller(Handler):
    """Attaches a sender named txn-ctrl whose target is a coordinator with
    CAPS, sends one declare, and records the link's error (`error`:
    (condition, description)) or the declare's outcome (`outcome`)."""

    def __init__(self, url):
        super().__init__()
        self.url = url
        self.error = None
        self.outcome = None
        self.timed_out = False
        self.sent = False

    def run(self):
        Container(self).run()
        return self

    def on_reactor_init(self, event):
        c = event.reactor
        self.conn = c.connect(self.url, allowed_mechs="ANONYMOUS")
        self.link = c.create_sender(self.conn, None, name="txn-ctrl")
        self.timer = c.schedule(TIMEOUT, self)
        t = self.link.target
        t.type = Terminus.COORDINATOR
        t.capabilities.put_array(False, Data.SYMBOL)
        t.capabilities.enter()
        for cap in CAPS:
            t.capabilities.put_symbol(cap)
        t.capabilities.exit()

    def on_timer_task(self, event):
        self.timed_out = True
        self.conn.close()

    def _finish(self):
        self.timer.cancel()
        self.conn.close()

    def on_link_flow(self, event):
        link = event.link
        if link.credit > 0 and not self.sent:
            self.sent = True
            link.delivery("declare-0")
            link.send(declare_message().encode())
            link.advance()

    def on_delivery(self, event):
        dlv = event.delivery
        if dlv.remote_state or dlv.settled:
            self.outcome = dlv.remote_state
            dlv.settle()
            self._finish()

    def on_link_remote_close(self, event):
        c = event.link.remote_condition
        self.error = (c.name, c.description) if c else ("closed", None)
        self._finish()

    def on_transport_error(self, event):
        pass


class CoordinatorTest(LinkRouteCase):

    def coordinator_route(self, connection="fake"):
        return conf_section("linkRoute", {"name": "txn", "prefix": "$coordinator",
                                          "direction": "in", "connection": connection})

    def test_coordinator_without_a_link_route_is_refused_precondition_failed(self):
        r = self.start_config("R", config("R"))
        c = Controller(r.url).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(c.error, ("amqp:precondition-failed", REFUSAL))
        # refused, not bound to an address of that name
        self.assertNotIn("M0$coordinator", self.address_keys(r))

    def test_coordinator_goes_to_the_broker_through_its_link_route(self):
        b = CoordinatorBroker().start()
        self.addCleanup(b.stop)
        r = self.start_config("R", config("R", extra=fake_connector(b) +
                                          self.coordinator_route()))
        self.wait_log(r, "Connection Opened: dir=out")
        c = Controller(r.url).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertIsNone(c.error, self.logs())
        self.assertEqual(c.outcome, Delivery.ACCEPTED)
        with b.lock:
            self.assertEqual(b.targets, [(Terminus.COORDINATOR, CAPS)])
            self.assertEqual([n for n, _ in b.attached], ["txn-ctrl"])
            self.assertEqual(len(b.got), 1)
            _, tag, data = b.got[0]
        self.assertEqual(tag, "declare-0")
        m = Message()
        m.decode(data)
        self.assertEqual(m.body.descriptor, symbol("amqp:declare:list"))

    def test_coordinator_link_route_without_its_container_is_refused_no_route(self):
        r = self.start_config("R", config("R", extra=self.coordinator_route("absent")))
        c = Controller(r.url).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(c.error, ("qd:no-route-to-dest", "No route to the destination node"))


if __name__ == "__main__":
    import unittest
    unittest.main()
