#!/usr/bin/python3
"""An inter-router connection whose HELLOs are late but which still carries
traffic stays open (issue 25: system_tests_link_routes LinkRoute3Hop, where
HELLOs queued behind megabytes of link-routed transfers in the sockets'
buffers aged out while the connection was busy, and closing it lost every
link routed over it).

A fake interior router F (python3-qpid-proton, from docs/protocol.md's
mesh section) joins junctiond J's inter-router listener and sends HELLOs
that have seen J, so J takes F as a neighbour. Then:

- busy: F stops its HELLOs but keeps sending frames (a flow on its control
  receiver every 100 ms). After helloMaxAgeSeconds (3 s) J drops F from its
  link state, as 1.19 does, but keeps the connection open: it was heard
  within the last helloMaxAgeSeconds.
  When F's HELLOs resume, F is J's neighbour again on the same connection.
- silent: F stops sending anything. J closes the connection once F's
  HELLOs aged out (docs/compat.md, "A silent inter-router connection is
  closed"), helloMaxAgeSeconds after the last frame.
- busy, then silent: the connection kept open is watched, and closed
  once nothing arrived on it for helloMaxAgeSeconds.

Real junctiond process, a proton peer on 127.0.0.1; waits bounded.
"""
import time
import unittest

from proton import Message, symbol

from harness import SLOW, Router, RouterTestCase, Scenario, free_port
from mesh import mesh_config

MAX_AGE = 3.0  # helloMaxAgeSeconds (default)


class Peer(Scenario):
    """Interior router 'F' on J's inter-router listener. phases: a list of
    (seconds, hellos, flows): for that long, send a HELLO every 0.5 s if
    hellos, a flow frame every 0.1 s if flows. Records the time the
    connection was closed by J (closed_at, seconds from the start), if
    it was."""

    def __init__(self, url, router_id, phases):
        super().__init__(timeout=60)
        self.url, self.router_id, self.phases = url, router_id, phases
        self.closed_at = None
        self.hellos = 0
        self.next_hello = 0.0
        self.next_flow = 0.0

    def start(self):
        self.conn = self.connect(self.url, container_id="F")
        self.conn.container = "F"
        ssn = self.conn.session()
        ssn.open()
        self.ctl_in = self.link(ssn.receiver("qdlink.latehelloin0001"))
        self.ctl_out = self.link(ssn.sender("qdlink.latehelloout001"))

    def link(self, lnk):
        for t in (lnk.source, lnk.target):
            t.capabilities.put_symbol("qd.router")
        lnk.open()
        if lnk.is_receiver:
            lnk.flow(1000)
        return lnk

    def phase(self):
        t = self.elapsed()
        for secs, hellos, flows in self.phases:
            if t < secs:
                return hellos, flows
            t -= secs
        return None

    def tick(self):
        now = self.phase()
        if now is None:
            self.done()
            return
        hellos, flows = now
        t = self.elapsed()
        if hellos and t >= self.next_hello and self.ctl_out.credit > 0:
            hello = Message(address="amqp:/_local/qdhello", properties={"opcode": "HELLO"},
                            body={"id": "F", "pv": 1, "area": "0", "instance": 1,
                                  "seen": [self.router_id]})
            hello.annotations = {symbol("x-opt-qd.ingress"): "0/F",
                                 symbol("x-opt-qd.trace"): ["0/F"]}
            self.ctl_out.send(hello).settle()
            self.hellos += 1
            self.next_hello = t + 0.5
        if flows and t >= self.next_flow:
            self.ctl_in.flow(1)  # a flow frame: octets on the wire, no HELLO
            self.next_flow = t + 0.1

    def on_delivery(self, event):
        if event.link == self.ctl_in and not event.delivery.partial:
            event.link.recv(event.delivery.pending)
            event.delivery.settle()

    def on_disconnected(self, event):
        if not self.over:
            self.closed_at = self.elapsed()
            self.done()

    def on_connection_error(self, event):
        self.on_disconnected(event)

    def on_transport_error(self, event):
        self.on_disconnected(event)

    def progress(self):
        return "%d HELLOs sent, phase at %.1f s" % (self.hellos, self.elapsed())


class LateHelloTest(RouterTestCase):

    def start_j(self):
        ir = free_port()
        r = Router(self.workdir, name="J", config=mesh_config("J", ir, [])).start()
        self.routers.append(r)
        self.addCleanup(self._stop_router, r)
        r.wait_ready()
        return r, "amqp://127.0.0.1:%d" % ir

    def count(self, r, text):
        with open(r.log_path) as f:
            return f.read().count(text)

    def test_busy_connection_without_hellos_stays_open(self):
        r, url = self.start_j()
        busy = MAX_AGE + 3.0 * SLOW
        p = self.run_scenario(Peer(url, "J", [(1.5, True, True), (busy, False, True),
                                               (2.0, True, True)]))
        self.assertIsNone(p.error, p.error)
        self.assertIsNone(p.closed_at, "J closed a connection that carried frames\n" + r.describe())
        self.assertGreaterEqual(self.count(r, "Neighbour F expired (no HELLO)"), 1, r.describe())
        self.assertGreaterEqual(self.count(r, "Inter-router connection kept open: no HELLO from "
                                            "router 'F'"), 1, r.describe())
        # F's HELLOs resumed on the same connection: a neighbour again
        self.assertGreaterEqual(self.count(r, "Router F is a neighbour over link"), 2,
                                r.describe())

    def test_silent_connection_is_closed(self):
        r, url = self.start_j()
        p = self.run_scenario(Peer(url, "J", [(1.5, True, True),
                                              (MAX_AGE + 5.0 * SLOW, False, False)]))
        self.assertIsNotNone(p.closed_at, "J kept a silent connection\n" + r.describe())
        self.assertLess(p.closed_at, 1.5 + MAX_AGE + 2.0 * SLOW, r.describe())
        self.assertEqual(self.count(r, "Inter-router connection closed"), 1, r.describe())

    def test_kept_connection_is_closed_once_silent(self):
        r, url = self.start_j()
        busy = MAX_AGE + 2.0 * SLOW
        p = self.run_scenario(Peer(url, "J", [(1.5, True, True), (busy, False, True),
                                              (MAX_AGE + 5.0 * SLOW, False, False)]))
        self.assertGreaterEqual(self.count(r, "Inter-router connection kept open"), 1,
                                r.describe())
        self.assertIsNotNone(p.closed_at, "J kept a silent connection\n" + r.describe())
        # cut helloMaxAgeSeconds after the last frame, not before
        self.assertGreater(p.closed_at, 1.5 + busy, r.describe())
        self.assertLess(p.closed_at, 1.5 + busy + MAX_AGE + 2.0 * SLOW, r.describe())
        self.assertEqual(self.count(r, "Inter-router connection closed: nothing arrived "
                                       "within the last 3000 ms"), 1, r.describe())


if __name__ == "__main__":
    unittest.main()
