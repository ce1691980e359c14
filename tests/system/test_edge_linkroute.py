#!/usr/bin/python3
"""System tests: link routes and edge routers (issue 17; mesh-protocol
section 11, docs/design.md "Edge routers", docs/protocol.md).

- A client on an edge attaches to an address link-routed on the interior:
  the edge asks the interior (a lookup to _$qd.addr_lookup), is told it is
  a link route with a container, and sends the attach up its uplink; the
  container behind the interior (a proton container, as a broker would be)
  gets the messages, and its outcomes (accepted, rejected) come back to the
  client; a receiver on the edge gets what the container sends, and the
  container sees its deliveries accepted.
- A burst of attaches on the edge (20 senders at once, the interior
  granting one lookup at a time): every one is link-routed.
- The same route with its container gone: the attach on the edge is
  refused with qd:no-route-to-dest (1.19's condition), for an address of
  3,000 characters too.
- A link route on the edge with a 700-character prefix: its proxy on the
  interior has the whole prefix, and reaches the container.
- An address that is not link-routed is asked about too and then served
  on the edge as usual.
- The interior's lookup service on the wire, as a 1.19 edge uses it:
  credit 1 on the request link, answers with 1.19's properties and types,
  a malformed request released and not answered, the service going on.
- Waypoints (non-zero phases) with edges, as 1.19 handles them: a queue
  behind the interior with an `out` and an `in` auto-link on a waypoint
  address; a sender and a receiver on the edge: what the sender sends goes
  to the queue (phase 0) and comes back out of it to the receiver on the
  edge (phase 1), the edge attaching its per-address links with the plain
  address for each phase, as 1.19's edge does.
- Management of an edge through its interior: junction-stat and
  junction-manage with -d EDGE (1.19's way: _edge/EDGE/$management, routed
  by the interior over the edge connection) and with -r EDGE, which
  Junction's tools take to the same address when EDGE is an edge attached
  to the router connected to (1.19's -r would wait for a reply that never
  comes); -r with an unknown id is refused at once.
- Containers connect to a `role: route-container` listener (only those
  are containers, as in 1.19).
- A container behind the edge: the edge's link route gets a proxy on the
  interior (router.connection.linkRoute CREATE on its $management, over
  the uplink); a client of the interior attaches to the address and
  reaches the container through the edge; when the container leaves the
  proxy is deleted and the interior refuses such attaches again; a
  container flapping 150 times, then staying, keeps its proxies.

Real junctiond processes and proton clients on 127.0.0.1; waits bounded.
"""
import json
import os
import subprocess
import threading
import time
import unittest

from proton import Message, symbol, uint
from proton.handlers import MessagingHandler
from proton.reactor import AtMostOnce, Container, LinkOption
from proton.utils import BlockingConnection, SendException

from harness import SLOW, RouterTestCase, conf_section, container_listener
from test_edge import router_config
from mesh import distinct_ports
from test_router_broker import link_error_of

TIMEOUT = 15 * SLOW


def link_route(prefix, container):
    text = ""
    for d in ("in", "out"):
        text += conf_section("linkRoute", {"prefix": prefix, "direction": d,
                                           "containerId": container})
    return text


class Service(MessagingHandler):
    """A container (as a broker is): accepts every link the router attaches
    to it; accepts each message it gets (rejects those whose body is
    "bad"), kept in `got`; on each link it sends on, sends `feed` messages
    and records their outcomes in `outcomes`."""

    def __init__(self, url, container_id, feed=0, queue=False):
        super().__init__(prefetch=50, auto_accept=False)
        self.url, self.container_id, self.feed = url, container_id, feed
        self.queue = [] if queue else None  # a queue: what comes in goes out
        self.senders = []
        self.got, self.outcomes = [], []
        self.sent = 0
        self.conn = None
        self.up = threading.Event()

    def on_start(self, event):
        self.conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS")

    def on_connection_opened(self, event):
        self.up.set()

    def on_link_opening(self, event):
        link = event.link
        if link.is_receiver:
            link.target.address = link.remote_target.address
        else:
            link.source.address = link.remote_source.address

    def on_message(self, event):
        self.got.append((event.receiver.remote_target.address, event.message.body))
        if event.message.body == "bad":
            self.reject(event.delivery)
        else:
            self.accept(event.delivery)
        if self.queue is not None:
            self.queue.append(event.message.body)
            for s in self.senders:
                self.pump(s)

    def on_link_opened(self, event):
        if event.link.is_sender:
            self.senders.append(event.link)

    def pump(self, sender):
        while self.queue and sender.credit > 0:
            sender.send(Message(body=self.queue.pop(0)))

    def on_sendable(self, event):
        if self.queue is not None:
            self.pump(event.sender)
        while event.sender.credit > 0 and self.sent < self.feed:
            event.sender.send(Message(body="feed-%d" % self.sent))
            self.sent += 1

    def on_accepted(self, event):
        self.outcomes.append("accepted")

    def on_settled(self, event):
        pass

    def on_timer_task(self, event):
        if self.conn:
            self.conn.close()

    def start(self):
        self.container = Container(self)
        self.container.container_id = self.container_id
        self.thread = threading.Thread(target=self.container.run, daemon=True)
        self.thread.start()
        if not self.up.wait(TIMEOUT):
            raise AssertionError("service never connected")
        return self

    def stop(self):
        if self.thread.is_alive():
            self.container.schedule(0, self)
            self.thread.join(TIMEOUT)


class EdgeLinkRouteTest(RouterTestCase):

    def mesh(self, interior_extra="", edge_extra=""):
        port = distinct_ports(["I1"])["I1"]
        # a route-container listener on each, where a container connects
        i1 = self.start_router(config=router_config("interior", "I1", port) +
                               container_listener() + interior_extra)
        e1 = self.start_router(config=router_config("edge", "E1", uplinks=[port]) +
                               container_listener() + edge_extra)
        self.wait_for("edge attached", lambda: "Edge router 'E1' attached" in i1.log())
        return i1, e1

    def service(self, url, container_id, feed=0, queue=False):
        s = Service(url, container_id, feed, queue).start()
        self.addCleanup(s.stop)
        return s

    def wait(self, what, cond):
        deadline = time.time() + TIMEOUT
        while not cond():
            if time.time() > deadline:
                self.fail("%s: timed out\n%s" % (what, self.logs()))
            time.sleep(0.1)

    def test_client_on_edge_reaches_container_behind_interior(self):
        i1, e1 = self.mesh(interior_extra=link_route("svc", "svc-1"))
        svc = self.service(i1.container_url, "svc-1", feed=3)
        c = BlockingConnection(e1.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        s = c.create_sender("svc.orders")
        for i in range(5):
            s.send(Message(body="order-%d" % i), timeout=TIMEOUT)  # raises unless accepted
        with self.assertRaises(SendException) as cm:
            s.send(Message(body="bad"), timeout=TIMEOUT)
        self.assertEqual(str(cm.exception.state), "REJECTED")
        self.assertEqual(svc.got, [("svc.orders", "order-%d" % i) for i in range(5)] +
                         [("svc.orders", "bad")])
        rx = c.create_receiver("svc.feed", credit=10)
        got = []
        for _ in range(3):
            got.append(rx.receive(timeout=TIMEOUT).body)
            rx.accept()
        rx.close()  # the last accept goes out with the detach
        self.assertEqual(got, ["feed-0", "feed-1", "feed-2"])
        self.wait("the container sees its deliveries accepted",
                  lambda: svc.outcomes == ["accepted"] * 3)
        # the edge asked, and was told: link route, with destinations
        self.assertIn("Link routed up the edge uplink", e1.log())

    def test_burst_of_attaches_all_link_routed(self):
        i1, e1 = self.mesh(interior_extra=link_route("svc", "svc-1"))
        svc = self.service(i1.container_url, "svc-1")

        class Burst(MessagingHandler):
            def __init__(self):
                super().__init__()
                self.accepted = 0
                self.sent = set()

            def on_start(self, event):
                self.conn = event.container.connect(e1.url, allowed_mechs="ANONYMOUS")
                for i in range(20):
                    event.container.create_sender(self.conn, "svc.burst.%d" % i)
                self.timer = event.container.schedule(TIMEOUT, self)

            def on_sendable(self, event):
                if event.sender.name not in self.sent:  # one message per sender
                    self.sent.add(event.sender.name)
                    event.sender.send(Message(body=event.sender.target.address))

            def on_accepted(self, event):
                self.accepted += 1
                if self.accepted == 20:
                    self.timer.cancel()
                    self.conn.close()

            def on_timer_task(self, event):
                self.conn.close()

        b = Burst()
        Container(b).run()
        self.assertEqual(b.accepted, 20, self.logs())
        self.assertEqual(sorted(addr for addr, _ in svc.got),
                         sorted("svc.burst.%d" % i for i in range(20)))

    def test_container_absent_refused_no_route_to_dest(self):
        i1, e1 = self.mesh(interior_extra=link_route("gone", "nobody"))
        self.assertEqual(link_error_of(e1.url, "gone.q", sender=True), "qd:no-route-to-dest")
        self.assertEqual(link_error_of(e1.url, "gone.q", sender=False), "qd:no-route-to-dest")

    def test_long_address_asked_about_like_any_other(self):
        """An address of 3,000 characters on an edge is looked up like a
        short one (the interior read at most 1,023: it called the lookup
        invalid and did not answer, so the edge bound the attach to the
        address after its 3 s timeout instead of refusing it)."""
        i1, e1 = self.mesh(interior_extra=link_route("gone", "nobody"))
        address = "gone." + "q" * 3000
        self.assertEqual(link_error_of(e1.url, address, sender=True), "qd:no-route-to-dest")
        self.assertEqual(link_error_of(e1.url, address, sender=False), "qd:no-route-to-dest")
        self.assertNotIn("Invalid link-route lookup", i1.log())

    def test_long_prefix_proxy_whole(self):
        """A link route on the edge with a prefix of 700 characters gets a
        proxy on the interior with the whole prefix (a fixed buffer cut the
        pattern short, so the interior did not route the prefix's
        addresses to the edge)."""
        prefix = "ed" + "s" * 700
        i1, e1 = self.mesh(edge_extra=link_route(prefix, "svc-3"))
        svc = self.service(e1.container_url, "svc-3")
        self.wait("proxies created",
                  lambda: e1.log().count("created on the interior") >= 2)
        c = BlockingConnection(i1.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        s = c.create_sender(prefix + ".jobs")
        s.send(Message(body="job"), timeout=TIMEOUT)
        self.assertEqual(svc.got, [(prefix + ".jobs", "job")])

    def test_container_flapping_on_edge_keeps_its_proxy(self):
        """A container behind the edge connecting and leaving 150 times
        in quick succession, then staying: no CREATE is refused and the
        interior reaches it. (A container back before its proxy's CREATE
        was answered got a second proxy of the same name: refused as a
        duplicate, while the first was deleted once its CREATE was
        answered, leaving the interior without a proxy.)"""
        i1, e1 = self.mesh(edge_extra=link_route("flap", "svc-4"))

        class Flap(MessagingHandler):
            def __init__(self):
                super().__init__()
                self.n = 0

            def on_start(self, event):
                self.container = event.container
                self.conn = event.container.connect(e1.url, allowed_mechs="ANONYMOUS")
                event.container.schedule(0, self)

            def on_timer_task(self, event):
                self.conn.close()
                self.n += 1
                if self.n < 150:
                    self.conn = self.container.connect(e1.url, allowed_mechs="ANONYMOUS")
                    self.container.schedule(0.002 * (self.n % 5), self)

        flap = Container(Flap())
        flap.container_id = "svc-4"
        flap.run()
        svc = self.service(e1.container_url, "svc-4")
        self.wait("the container's proxies created",
                  lambda: self.proxies_settled(e1))
        c = BlockingConnection(i1.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        s = c.create_sender("flap.jobs")
        s.send(Message(body="job"), timeout=TIMEOUT)
        self.assertEqual(svc.got, [("flap.jobs", "job")])
        self.assertNotIn("refused its CREATE", e1.log())

    @staticmethod
    def proxies_settled(e1):
        log = e1.log()
        return (log.count("Creating link-route proxy") ==
                log.count("created on the interior") + log.count("refused its CREATE") and
                log.count("Deleting link-route proxy") + 2 == log.count("Creating link-route proxy"))

    def test_plain_address_on_edge_still_served(self):
        i1, e1 = self.mesh(interior_extra=link_route("svc", "svc-1"))
        c = BlockingConnection(e1.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        rx = c.create_receiver("plain.q", credit=10)
        s = c.create_sender("plain.q", options=AtMostOnce())
        for i in range(3):
            s.send(Message(body=i), timeout=TIMEOUT)  # pre-settled: returns once sent
        self.assertEqual([rx.receive(timeout=TIMEOUT).body for _ in range(3)], [0, 1, 2])

    def test_container_behind_edge_gets_a_proxy(self):
        i1, e1 = self.mesh(edge_extra=link_route("edsvc", "svc-2"))
        svc = self.service(e1.container_url, "svc-2")
        self.wait("proxies created",
                  lambda: e1.log().count("Link-route proxy E1/proxyLinkRoute/") >= 2)
        self.assertIn("Link-route proxy E1/proxyLinkRoute/Cedsvc created", e1.log())
        self.assertIn("Link-route proxy E1/proxyLinkRoute/Dedsvc created", e1.log())
        c = BlockingConnection(i1.url, timeout=TIMEOUT)
        s = c.create_sender("edsvc.jobs")
        for i in range(4):
            s.send(Message(body="job-%d" % i), timeout=TIMEOUT)
        c.close()
        self.assertEqual(svc.got, [("edsvc.jobs", "job-%d" % i) for i in range(4)])
        svc.stop()
        self.wait("proxies deleted",
                  lambda: e1.log().count("Deleting link-route proxy") >= 2)
        # no longer link-routed on the interior: an ordinary address again
        self.assertIsNone(link_error_of(i1.url, "edsvc.jobs", sender=True))

    def test_lookup_service_on_the_wire(self):
        port = distinct_ports(["I1"])["I1"]
        i1 = self.start_router(config=router_config("interior", "I1", port) +
                               container_listener() + link_route("svc", "svc-1"))
        c = BlockingConnection("amqp://127.0.0.1:%d" % port, timeout=TIMEOUT)
        self.addCleanup(c.close)
        replies = c.create_receiver(None, dynamic=True, credit=10)
        reply_to = replies.link.remote_source.address
        self.assertRegex(reply_to, r"^amqp:/_topo/0/I1/temp\.")
        s = c.create_sender("_$qd.addr_lookup")
        c.wait(lambda: s.link.credit > 0, timeout=TIMEOUT)
        self.assertEqual(s.link.credit, 1)  # one request at a time, as 1.19 grants

        def ask(address, incoming, cid):
            s.send(Message(reply_to=reply_to, correlation_id=cid, body=[address, incoming],
                           properties={"version": uint(1), "opcode": uint(1)}), timeout=TIMEOUT)
            m = replies.receive(timeout=TIMEOUT)  # pre-settled, as 1.19 answers
            self.assertEqual((m.address, m.correlation_id), (reply_to, cid))
            self.assertEqual(m.properties, {"version": 1, "opcode": 1,
                                            "status": m.properties["status"]})
            for k in ("version", "opcode", "status"):
                self.assertIsInstance(m.properties[k], uint, k)
            return m.properties["status"], m.body

        self.assertEqual(ask("svc.q", True, "client-1"), (0, [True, False]))  # no container
        self.assertEqual(ask("plain.q", False, "client-2"), (3, [False, False]))
        # malformed: no opcode; rejected (as 1.19), no answer; the service goes on
        with self.assertRaises(SendException) as cm:
            s.send(Message(reply_to=reply_to, correlation_id="bad", body=["svc.q", True],
                           properties={"version": uint(1)}), timeout=TIMEOUT)
        self.assertEqual(str(cm.exception.state), "REJECTED")
        self.service(i1.container_url, "svc-1")
        self.wait("container known", lambda: "container_id=svc-1" in i1.log())
        self.assertEqual(ask("svc.q", False, "client-3"), (0, [True, True]))

    def test_waypoint_address_with_edges(self):
        wp = conf_section("address", {"prefix": "wp", "waypoint": "yes"})
        autolinks = "".join(conf_section("autoLink", {"address": "wp.q", "direction": d,
                                                      "containerId": "queue-1"})
                            for d in ("in", "out"))
        i1, e1 = self.mesh(interior_extra=wp + autolinks, edge_extra=wp)
        queue = self.service(i1.container_url, "queue-1", queue=True)
        c = BlockingConnection(e1.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        rx = c.create_receiver("wp.q", credit=10)
        s = c.create_sender("wp.q")
        for i in range(4):
            s.send(Message(body="wp-%d" % i), timeout=TIMEOUT)  # accepted by the queue
        got = []
        for _ in range(4):
            got.append(rx.receive(timeout=TIMEOUT).body)
            rx.accept()
        self.assertEqual(got, ["wp-%d" % i for i in range(4)])
        self.assertEqual([b for _, b in queue.got], ["wp-%d" % i for i in range(4)])

    def test_waypoint_client_links(self):
        """A waypoint served by a client whose receiver's source and
        sender's target have the capability qd.waypoint (as 1.19's
        multi-phase tests attach them): its receiver takes phase 0, its
        sender feeds phase 1, whatever the address's configured phases
        would give a plain link of that direction."""
        wp = conf_section("address", {"prefix": "cwp", "waypoint": "yes"})
        i1, _ = self.mesh(interior_extra=wp, edge_extra=wp)

        class Waypoint(LinkOption):
            def apply(self, link):
                t = link.target if link.is_sender else link.source
                t.capabilities.put_object(symbol("qd.waypoint"))

        c = BlockingConnection(i1.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        rx = c.create_receiver("cwp.q", credit=10, name="rx")
        wp_rx = c.create_receiver("cwp.q", credit=10, name="wp-rx", options=Waypoint())
        # pre-settled: a blocking send would wait for the waypoint's accept
        wp_tx = c.create_sender("cwp.q", name="wp-tx", options=[Waypoint(), AtMostOnce()])
        tx = c.create_sender("cwp.q", name="tx", options=AtMostOnce())
        for i in range(3):
            tx.send(Message(body="c-%d" % i), timeout=TIMEOUT)
            m = wp_rx.receive(timeout=TIMEOUT)  # phase 0: the waypoint's
            wp_tx.send(Message(body=m.body + "-through"), timeout=TIMEOUT)
            self.assertEqual(rx.receive(timeout=TIMEOUT).body, "c-%d-through" % i)

    def tool(self, name, *args):
        tools = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")
        return subprocess.run(["/usr/bin/python3", os.path.join(tools, name)] + list(args),
                              capture_output=True, text=True, timeout=60 * SLOW,
                              stdin=subprocess.DEVNULL)

    def test_manage_an_edge_through_its_interior(self):
        i1, e1 = self.mesh()
        for flag in ("-d", "-r"):
            p = self.tool("junction-stat", "-b", i1.url, flag, "E1", "-g")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertRegex(p.stdout, r"(?m)^\s+Mode\s+edge$")
            self.assertRegex(p.stdout, r"(?m)^\s+Router Id\s+E1$")
            p = self.tool("junction-stat", "-b", i1.url, flag, "E1", "-c")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertRegex(p.stdout, r"(?m)^\s+\d+\s+\S+\s+I1\s+edge\s+amqp\s+out\s")
            p = self.tool("junction-manage", "-b", i1.url, flag, "E1", "query", "--type",
                          "router", "id", "mode")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(json.loads(p.stdout), [{"id": "E1", "mode": "edge"}])
        p = self.tool("junction-stat", "-b", i1.url, "-r", "E7", "-g")
        self.assertEqual(p.returncode, 1)
        self.assertIn("router E7 is not in the mesh", p.stderr)


if __name__ == "__main__":
    unittest.main()
