#!/usr/bin/python3
"""Inter-router connections on Junction's own AMQP engine (docs/engine.md,
stage 3b).

Meshes of two and three junctiond routers (the inter-router protocol: the
open's qd.* properties, the control and data links with their
capabilities and priorities, the router annotations on every transfer;
meshes mixing engines were tested here while proton's path lived, until
stage 5). Asserted: the inter-router connections of a router run on the
own engine (its "Connection runs on Junction's
own AMQP engine" line names the connection of the inter-router open); the
mesh converges; anycast traffic crosses both ways unsettled (each delivery
accepted, the receiver's outcome reaching the sender) and pre-settled;
multicast reaches receivers on every router exactly once; a streamed large
message crosses (streaming links); a router killed, the route is learned
again over the path left; in a triangle started as 1.19's
system_tests_router_mesh starts it, a router added is routed to within a
round trip; a peer with this router's own id is refused; a
router stopped (SIGSTOP) longer than its idle-time-out reads what waited
before judging its peers. Edge routers and their interior, switched and
mixed: anycast and multicast across edges, request/reply to an edge's
dynamic reply address, the interior's edge-downlink links. Inter-router
and edge connections over TLS (the routers' certificates made by
tls_certs.py, the host name checked), with ANONYMOUS and with EXTERNAL
(the peer authenticated as its certificate's subject): on the own engine
at each end, encrypted, and routing (a 4 MiB message streamed across
too).
A broker on a route-container listener (it connects to the router): its
connection on the own engine, link routes both ways and an auto-link
through it. The router's terminus capabilities on the own engine: a
waypoint served by a client whose links carry
qd.waypoint, on an interior and on its edge; a fallback receiver
(qd.fallback) on an interior taking what finds no consumer, and no more
once a consumer comes; a client's link with qd.router refused.

JN_BUILD_DIR names the build directory (set by ctest).
"""
import os
import re
import signal
import sys
import time
import unittest

from proton import Message

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SLOW  # noqa: E402
from mesh import Mesh, distinct_ports  # noqa: E402
from test_engine_own import OWN_LINE  # noqa: E402
from test_mesh_routing import MeshCase, StreamAcross  # noqa: E402
from test_mesh_stall import PairWitness, config, connector, listener  # noqa: E402
from test_edge import MC, RequestReply, msgs, query, router_config  # noqa: E402
from harness import Recv, Send, Traffic, conf_section, container_listener  # noqa: E402
from test_router_sasl import sasl_dir  # noqa: E402
from test_router_linkroute_container_role import Peer, link_routes  # noqa: E402
from test_router_entities import LOGS, client_listener, router_section  # noqa: E402
from tls_certs import shared_certs  # noqa: E402
from proton import Timeout  # noqa: E402
from proton.utils import BlockingConnection, LinkDetached  # noqa: E402
from proton.reactor import AtMostOnce  # noqa: E402
from test_router_policy_limits import Capabilities  # noqa: E402


def conn_ids(log, text):
    """The connection ids of the log lines holding text."""
    return {line.split("[C", 1)[1].split("]", 1)[0]
            for line in log.splitlines() if text in line and "[C" in line}


class OwnMeshCase(MeshCase):

    def engine_mesh(self, names, edges, **kw):
        self.m = Mesh(self, names, edges, **kw).start()
        return self.m

    def assert_inter_router_own(self, name):
        """Every inter-router connection of router name ran on the own
        engine (the ROUTER module logs each one's annotations version)."""
        log = self.m[name].log()
        ir = conn_ids(log, "Remote router annotations version")
        own = conn_ids(log, OWN_LINE)
        self.assertTrue(ir, "no inter-router connection on %s\n%s" % (name, self.logs()))
        self.assertTrue(ir <= own, "%s: inter-router connections %s, on the own engine %s\n%s"
                        % (name, sorted(ir), sorted(own), self.logs()))

    def presettled(self, src, dst, n=200):
        self.anycast(src, dst, n, address="ps", presettled=True)


class TwoOwnRouters(OwnMeshCase):

    def test_both_switched_anycast_multicast_and_settlement(self):
        m = self.engine_mesh(["A", "B"], [("A", "B", 1)])
        self.assert_inter_router_own("A")
        self.assert_inter_router_own("B")
        self.anycast(m["A"], m["B"], 300)
        self.anycast(m["B"], m["A"], 200)
        self.presettled(m["A"], m["B"])
        self.multicast(m["A"], [m["A"], m["B"]])

    def test_large_message_streams_across_an_own_inter_router_connection(self):
        m = self.engine_mesh(["A", "B"], [("A", "B", 1)])
        m.probe("A", "B", "big")
        s = self.run_scenario(StreamAcross(m["A"].url, m["B"].url, 16 << 20))
        self.assertEqual(s.recv.finished, [(s.body.total, s.body.digest(), False)])

    def test_a_peer_with_this_routers_id_is_refused(self):
        m = self.engine_mesh(["A"], [])
        m.add("A2", "A", [("A", 1)])
        self.wait_for("the duplicate refused",
                      lambda: "Duplicate router id" in m["A"].log() + m["A2"].log(),
                      30 * SLOW)


class ThreeRouters(OwnMeshCase):

    def test_a_line_of_three_routers(self):
        m = self.engine_mesh(["A", "B", "C"], [("A", "B", 1), ("B", "C", 1)])
        self.assert_inter_router_own("A")
        self.assert_inter_router_own("B")
        self.assert_inter_router_own("C")
        self.anycast(m["A"], m["C"], 300)
        self.anycast(m["C"], m["A"], 200)
        self.multicast(m["A"], [m["A"], m["B"], m["C"]])

    def test_a_router_killed_and_the_route_learned_again(self):
        # a triangle, the direct A-C link dearer: A's traffic to C goes
        # through B until B dies, then over A-C
        m = self.engine_mesh(["A", "B", "C"], [("A", "B", 1), ("B", "C", 1), ("A", "C", 5)])
        self.anycast(m["A"], m["C"], 100)
        m.kill("B")
        m.wait_converged()
        self.anycast(m["A"], m["C"], 200)
        self.anycast(m["C"], m["A"], 100)
        self.multicast(m["C"], [m["A"], m["C"]])


def route_delays(log):
    """For each router id that log shows added (known from a HELLO, RA or
    link state), the seconds from that line to its first route line."""
    def when(line):
        return time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S")) + float(line[19:26])
    added, delays = {}, {}
    for line in log.splitlines():
        m = re.search(r"Router (\S+) added \(index|Route to router (\S+): link", line)
        if m and m.group(1) and m.group(1) not in added:
            added[m.group(1)] = when(line)
        elif m and m.group(2) in added and m.group(2) not in delays:
            delays[m.group(2)] = when(line) - added[m.group(2)]
    return delays


class MeshHandshake(OwnMeshCase):

    def test_a_router_known_is_routed_to_within_a_round_trip(self):
        # 1.19's system_tests_router_mesh triangle: each router connects to
        # the next. A router that knows another (its management lists the
        # router node) has a route to it within a round trip, not a HELLO
        # interval later: a first HELLO is answered at once, and a topology
        # change deferred by the flush interval wakes the core thread. (A
        # second passed, two when both coincided; 1.19's management client
        # sending to the router in that gap stalled on credit.)
        m = self.engine_mesh(["A", "B", "C"], [("A", "B", 1), ("B", "C", 1), ("C", "A", 1)])
        for name in ("A", "B", "C"):
            delays = route_delays(m[name].log())
            self.assertEqual(len(delays), 2, "%s: %s\n%s" % (name, delays, self.logs()))
            late = {r: round(d, 3) for r, d in delays.items() if d > 0.5 * SLOW}
            self.assertFalse(late, "%s: seconds from a router added to its route: %s\n%s"
                             % (name, late, self.logs()))


class OwnStall(OwnMeshCase):

    def test_a_stopped_router_reads_what_waited_before_its_idle_clock_judges(self):
        # A (idle-time-out 2 s on its listeners) is stopped for 5 s while
        # its neighbour and its clients keep sending: continued, it reads
        # what waited in its sockets before the engine's idle clock judges
        # them, and closes nothing (as test_mesh_stall on proton's path)
        ports = distinct_ports(["ir"])
        a = self.start_router(config=config("A", "interior", [
            listener("{port}", "normal", idle=2),
            listener(ports["ir"], "inter-router", idle=2, name="ir")]))
        b = self.start_router(config=config("B", "interior", [
            listener("{port}", "normal"), connector(ports["ir"], "inter-router", 60)],
            {"helloMaxAgeSeconds": 60}))
        self.wait_for("A and B neighbours", lambda: "Router B is a neighbour" in a.log() and
                      "Router A is a neighbour" in b.log(), 20 * SLOW)
        w = PairWitness(a.url, a.url, "stall.own").start_thread()
        self.addCleanup(lambda: w.thread.is_alive() and w.finish(0))
        if w.error or len(w.got) < 5:
            self.fail("witness traffic did not start: %s %s\n%s"
                      % (w.error, w.progress(), self.logs()))
        rows = query(a.url, "org.apache.qpid.dispatch.connection", ["identity", "role"])
        before = {r["identity"] for r in rows if r["role"] == "inter-router"}
        self.assertEqual(len(before), 1, rows)
        a.proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(5)
        finally:
            a.proc.send_signal(signal.SIGCONT)
        time.sleep(3)
        rows = query(a.url, "org.apache.qpid.dispatch.connection", ["identity", "role"])
        self.assertEqual({r["identity"] for r in rows if r["role"] == "inter-router"}, before,
                         self.logs())
        self.finish_witness(w, more=20)
        self.assertIn(OWN_LINE, a.log())
        self.assertNotIn("idle-timeout", a.log(), self.logs())


class EdgesCase(OwnMeshCase):
    """An interior and edge routers."""

    def edges(self, count, extra=""):
        """An interior and count edge routers attached to it."""
        port = distinct_ports(["I"])["I"]
        i = self.start_router(config=router_config("interior", "I", port) + extra)
        es = [self.start_router(config=router_config("edge", "E%d" % n, uplinks=[port]) + extra)
              for n in range(1, count + 1)]
        for n in range(1, len(es) + 1):
            self.wait_for("E%d attached" % n, lambda n=n: "Edge router 'E%d' attached" % n
                          in i.log(), 20 * SLOW)
        return i, es


class OwnEdges(EdgesCase):
    """An interior and two edge routers: the edges' uplinks (downlink,
    address tracking, heartbeat, a reply link with a dynamic source) and
    the interior's view of them."""

    def assert_uplink_own(self, e):
        log = e.log()
        up = conn_ids(log, "Connection Opened: dir=out")
        self.assertTrue(up and up <= conn_ids(log, OWN_LINE), self.logs())

    def traffic(self, i, e1, e2):
        t = Traffic(None, [Recv("a.q", url=e2.url)], [Send("a.q", msgs("a.q", 200), url=e1.url)],
                    expect=200).run()
        self.assertIsNone(t.error, t.error)
        self.assertEqual({str(o[0]) for o in t.senders[0].outcomes.values()}, {"ACCEPTED"})
        rs = [Recv("mc.x", url=x.url) for x in (e1, e2, i)]
        t = Traffic(None, rs, [Send("mc.x", msgs("mc.x", 50), url=e1.url)], expect=150,
                    linger=0.5).run()
        self.assertIsNone(t.error, t.error)
        self.assertEqual([len(r.messages) for r in rs], [50] * 3)
        s = RequestReply(e2.url, e1.url, "svc", 20).run()
        self.assertIsNone(s.error, s.error)
        self.assertTrue(s.reply_to.startswith("amqp:/_edge/E1/temp."), s.reply_to)
        self.assertEqual(sorted(s.replies), list(range(20)))
        links = query(i.url, "org.apache.qpid.dispatch.router.link", ["linkType"])
        self.assertEqual([x["linkType"] for x in links].count("edge-downlink"), 2)

    def test_edges_and_interior_all_switched(self):
        i, (e1, e2) = self.edges(2)
        self.assert_uplink_own(e1)
        self.assert_uplink_own(e2)
        self.assertEqual(len(conn_ids(i.log(), OWN_LINE) & conn_ids(
            i.log(), "container_id=E")), 2, self.logs())
        self.traffic(i, e1, e2)


def tls_profile(who):
    """An sslProfile "mesh-tls" with the certificate `who` of tls_certs.py
    (router_a, router_b, server) and the test CA."""
    certs = shared_certs()
    return conf_section("sslProfile", {"name": "mesh-tls", "certFile": certs[who],
                                       "privateKeyFile": certs[who + "_key"],
                                       "caCertFile": certs["ca"]})


def tls_ends(external):
    """The TLS attributes of an inter-router or edge listener and of a
    connector: requireSsl, the connector checking the listener's host
    name; ANONYMOUS, or EXTERNAL required at the listener."""
    lst = {"sslProfile": "mesh-tls", "requireSsl": "yes"}
    con = {"sslProfile": "mesh-tls", "verifyHostname": "yes"}
    if external:
        lst.update(saslMechanisms="EXTERNAL", authenticatePeer="yes")
        con["saslMechanisms"] = "EXTERNAL"
    return lst, con


def tls_router_config(mode, rid, cert):
    """A router (Cyrus set up by test_router_sasl's folder, for EXTERNAL)
    with a client listener ({port}) and the sslProfile "mesh-tls" of
    certificate cert."""
    return (conf_section("router", {"mode": mode, "id": rid, "workerThreads": 2,
                                    "saslConfigDir": sasl_dir()})
            + conf_section("listener", {"host": "127.0.0.1", "port": "{port}",
                                        "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"})
            + conf_section("address", MC) + tls_profile(cert)
            + conf_section("log", {"module": "DEFAULT", "enable": "info+",
                                   "includeTimestamp": "yes"}))


class OwnTlsMesh(OwnMeshCase):
    """Two routers over a TLS inter-router connection (A's connector, B's
    listener; A has router-a's certificate, B router-b's)."""

    def tls_mesh(self, external=False):
        lst, con = tls_ends(external)
        attrs = {n: {"saslConfigDir": sasl_dir()} for n in "AB"}
        m = self.engine_mesh(["A", "B"], [("A", "B", 1)], router_attrs=attrs,
                             extra={"A": tls_profile("router_a"), "B": tls_profile("router_b")},
                             ir_listener={"B": lst}, ir_connector={"A": con})
        auth = r"auth=EXTERNAL user=CN=router-a,O=Junction" if external else ""
        self.assertRegex(m["B"].log(), r"Connection Opened: dir=in [^\n]*encrypted=TLSv1\.\d "
                         + auth)
        self.assertRegex(m["A"].log(), r"Connection Opened: dir=out [^\n]*encrypted=TLSv1")
        return m

    def test_both_switched_over_tls_with_external(self):
        m = self.tls_mesh(external=True)
        self.assert_inter_router_own("A")
        self.assert_inter_router_own("B")
        self.anycast(m["A"], m["B"], 200)
        self.anycast(m["B"], m["A"], 100)
        self.presettled(m["A"], m["B"], 100)
        self.multicast(m["B"], [m["A"], m["B"]])

    def test_both_switched_over_tls_with_anonymous_and_a_large_message(self):
        m = self.tls_mesh()
        self.assert_inter_router_own("A")
        self.assert_inter_router_own("B")
        self.anycast(m["A"], m["B"], 100)
        self.anycast(m["B"], m["A"], 100)
        # many frames through the TLS records, on a streaming link
        m.probe("A", "B", "big")
        s = self.run_scenario(StreamAcross(m["A"].url, m["B"].url, 4 << 20))
        self.assertEqual(s.recv.finished, [(s.body.total, s.body.digest(), False)])

class OwnTlsEdges(OwnEdges):
    """An interior whose edge listener has TLS and requires EXTERNAL, and
    two edges whose uplinks present router-a's and router-b's
    certificates."""

    def edges(self, count):
        lst, con = tls_ends(True)
        port = distinct_ports(["I"])["I"]
        lst.update(name="edges", host="127.0.0.1", port=port, role="edge")
        i = self.start_router(config=tls_router_config("interior", "I", "server")
                              + conf_section("listener", lst))
        es = []
        for n, cert in enumerate(("router_a", "router_b")[:count], 1):
            c = dict(con, name="up", host="127.0.0.1", port=port, role="edge")
            es.append(self.start_router(config=tls_router_config("edge", "E%d" % n, cert)
                                        + conf_section("connector", c)))
        for n in range(1, len(es) + 1):
            self.wait_for("E%d attached" % n, lambda n=n: "Edge router 'E%d' attached" % n
                          in i.log(), 20 * SLOW)
        for cn in ("router-a", "router-b")[:len(es)]:
            self.assertRegex(i.log(), r"Connection Opened: dir=in [^\n]*encrypted=TLSv1\.\d "
                             r"auth=EXTERNAL user=CN=%s,O=Junction" % cn)
        return i, es

    # the plain case is OwnEdges'; here it runs over TLS
    test_edges_and_interior_all_switched = None

    def test_tls_edges_on_an_interior(self):
        i, (e1, e2) = self.edges(2)
        self.assert_uplink_own(e1)
        self.assert_uplink_own(e2)
        self.assertEqual(len(conn_ids(i.log(), OWN_LINE) & conn_ids(
            i.log(), "container_id=E")), 2, self.logs())
        self.traffic(i, e1, e2)

class SendingPeer(Peer):
    """A Peer that also sends n messages ("out-<i>") on each link the
    router attaches to take messages from it."""

    def __init__(self, url, container_id, n):
        super().__init__(url, container_id)
        self.n, self.sent = n, {}

    def on_link_error(self, event):
        # a client's routed link that ends comes as qd:routed-link-lost: a
        # broker detaches that link and keeps its connection
        event.link.close()

    def on_sendable(self, event):
        s = event.sender
        while s.credit > 0 and self.sent.get(s.name, 0) < self.n:
            s.send(Message(body="out-%d" % self.sent.get(s.name, 0)))
            self.sent[s.name] = self.sent.get(s.name, 0) + 1


class OwnRouteContainerListener(OwnMeshCase):
    """A broker that connects to the router's route-container listener:
    its connection runs on the own engine, and link routes (both ways) and
    an auto-link reach it through that connection."""

    def test_link_routes_and_an_auto_link_through_a_listeners_broker(self):
        autolink = conf_section("autoLink", {"name": "al-out", "address": "alq",
                                             "direction": "out", "containerId": "broker"})
        r = self.start_router(config=router_section("R") + client_listener()
                              + container_listener("brokers") + LOGS
                              + link_routes("lrq", containerId="broker") + autolink)
        broker = SendingPeer(r.container_url, "broker", 10).start()
        self.addCleanup(broker.stop)
        self.wait_for("the auto-link active", lambda: "Auto-link al-out active" in r.log(),
                      20 * SLOW)
        ids = conn_ids(r.log(), "container_id=broker")
        self.assertEqual(len(ids), 1, self.logs())
        self.assertTrue(ids <= conn_ids(r.log(), OWN_LINE), self.logs())
        # a client's sender link-routed to the broker, and its receiver
        # from the broker, each attach answered by the broker
        t = Traffic(r, [Recv("lrq.from", credit=10)],
                    [Send("lrq.to", [Message(body="in-%d" % i) for i in range(20)])],
                    expect=10).run()
        self.assertIsNone(t.error, "%s\n%s" % (t.error, self.logs()))
        self.assertEqual(sorted(m.body for m in t.receivers[0].messages),
                         sorted("out-%d" % i for i in range(10)))
        t = Traffic(r, [], [Send("alq", [Message(body="al-%d" % i) for i in range(15)])],
                    expect=0).run()
        self.assertIsNone(t.error, "%s\n%s" % (t.error, self.logs()))
        self.wait_for("the broker's messages", lambda: len(broker.snapshot()[1]) == 35,
                      20 * SLOW)
        got = broker.snapshot()[1]
        self.assertEqual(sorted(b for a, b in got if a == "lrq.to"),
                         sorted("in-%d" % i for i in range(20)))
        self.assertEqual(sorted(b for a, b in got if a == "alq"),
                         sorted("al-%d" % i for i in range(15)))
class OwnCapabilities(EdgesCase):
    """The router's terminus capabilities (qd.waypoint, qd.fallback,
    qd.router) on links of clients of an interior (and of its edge for
    waypoints)."""

    TIMEOUT = 10 * SLOW
    EXTRA = (conf_section("address", {"prefix": "cwp", "waypoint": "yes"})
             + conf_section("address", {"prefix": "fb", "enableFallback": "yes"}))

    def client(self, r):
        return BlockingConnection(r.url, timeout=self.TIMEOUT)

    def assert_clients_own(self, *routers):
        for r in routers:
            ids = conn_ids(r.log(), "Connection Opened: dir=in") - conn_ids(
                r.log(), "container_id=E")
            own = ids & conn_ids(r.log(), OWN_LINE)
            self.assertTrue(ids, self.logs())
            self.assertEqual(own, ids, self.logs())

    def waypoint_case(self, r):
        """A waypoint served by a client of r whose receiver's source and
        sender's target carry qd.waypoint (as 1.19's multi-phase tests
        attach them): its receiver takes phase 0, its sender feeds phase
        1, to the address's receiver. The links go with the case."""
        c = self.client(r)  # one connection: a blocking call runs only its own
        try:
            wp_rx = c.create_receiver("cwp.q", credit=10, name="wp-rx",
                                      options=Capabilities("qd.waypoint"))
            # pre-settled: a blocking send would wait for the other's accept
            wp_tx = c.create_sender("cwp.q", name="wp-tx",
                                    options=[Capabilities("qd.waypoint"), AtMostOnce()])
            rx = c.create_receiver("cwp.q", credit=10, name="rx")
            tx = c.create_sender("cwp.q", name="tx", options=AtMostOnce())
            for n in range(3):
                tx.send(Message(body="c-%d" % n), timeout=self.TIMEOUT)
                m = wp_rx.receive(timeout=self.TIMEOUT)
                wp_tx.send(Message(body=m.body + "-through"), timeout=self.TIMEOUT)
                self.assertEqual(rx.receive(timeout=self.TIMEOUT).body, "c-%d-through" % n)
        finally:
            c.close()

    def test_waypoint_client_links(self):
        i, (e1,) = self.edges(1, extra=self.EXTRA)
        self.waypoint_case(i)
        self.waypoint_case(e1)
        self.assert_clients_own(i, e1)

    def fallback_case(self, r):
        """A fallback receiver on r: what finds no consumer goes to it,
        then a consumer takes the rest. The links go with the case."""
        c = self.client(r)  # one connection: a blocking call runs only its own
        try:
            fb = c.create_receiver("fb.q", credit=10, name="fb-rx",
                                   options=Capabilities("qd.fallback"))
            # pre-settled: a blocking send would wait for the other's accept
            tx = c.create_sender("fb.q", name="tx", options=AtMostOnce())
            for n in range(3):
                tx.send(Message(body="f-%d" % n), timeout=self.TIMEOUT)
                self.assertEqual(fb.receive(timeout=self.TIMEOUT).body, "f-%d" % n)
            rx = c.create_receiver("fb.q", credit=10, name="rx")
            tx.send(Message(body="to-the-consumer"), timeout=self.TIMEOUT)
            self.assertEqual(rx.receive(timeout=self.TIMEOUT).body, "to-the-consumer")
            with self.assertRaises(Timeout):
                fb.receive(timeout=0.5)
        finally:
            c.close()

    def test_fallback_receiver(self):
        # on an interior (on an edge: EdgeFallback)
        i, _ = self.edges(0, extra=self.EXTRA)
        self.fallback_case(i)
        self.assert_clients_own(i)

    def test_control_capability_on_a_client_link_is_refused(self):
        """qd.router on a client's link: a control link the core refuses
        where the connection is not inter-router."""
        i, _ = self.edges(0, extra=self.EXTRA)
        c = self.client(i)
        self.addCleanup(c.close)
        with self.assertRaises(LinkDetached):
            c.create_receiver("ctl.q", name="ctl", options=Capabilities("qd.router"))
        c.create_receiver("ok.q", name="ok").close()  # the connection goes on
        self.assert_clients_own(i)


class EdgeFallback(EdgesCase):
    """Fallback destinations on edge routers (enableFallback for the
    address on every router): a client's fallback receiver on an edge takes
    what finds no consumer from a sender on its own edge, on another edge
    and on the interior; the interior holds the edge's proxy as a fallback
    destination (phase F); once an ordinary consumer appears, it takes the
    rest."""

    TIMEOUT = 10 * SLOW
    EXTRA = conf_section("address", {"prefix": "fb", "enableFallback": "yes"})

    def take(self, what, *receivers):
        """The next message any of receivers gets: (its index, its body);
        what: the message awaited, for the failure's text."""
        deadline = time.time() + self.TIMEOUT
        while time.time() < deadline:
            for k, r in enumerate(receivers):
                try:
                    return k, r.receive(timeout=0.1).body
                except Timeout:
                    pass
        self.fail("%s: no message within %s s\n%s" % (what, self.TIMEOUT, self.logs()))

    def send(self, tx, body):
        """A pre-settled send on tx, written out before it returns (a
        blocking send of one does not wait for credit, and a connection
        is served only while one of its own calls runs)."""
        tx.send(Message(body=body), timeout=self.TIMEOUT)
        transport = tx.connection.conn.transport
        tx.connection.wait(lambda: tx.link.queued == 0 and transport.pending() <= 0,
                           timeout=self.TIMEOUT, msg="%s not sent" % body)

    def switch_over(self, tag, tx, fb, rx):
        """Messages from tx go to fb until rx, an ordinary consumer just
        attached, is known where tx is (a few at most); from then on every
        one goes to rx and none to fb."""
        for n in range(50):
            self.send(tx, "%s-wait-%d" % (tag, n))
            k, body = self.take("%s-wait-%d" % (tag, n), fb, rx)
            self.assertEqual(body, "%s-wait-%d" % (tag, n))
            if k == 1:
                break
        else:
            self.fail("%s: the consumer never took over\n%s" % (tag, self.logs()))
        for n in range(3):
            self.send(tx, "%s-rx-%d" % (tag, n))
            self.assertEqual(self.take("%s-rx-%d" % (tag, n), fb, rx), (1, "%s-rx-%d" % (tag, n)))

    def test_fallback_receiver_on_an_edge(self):
        i, (e1, e2) = self.edges(2, extra=self.EXTRA)
        c1, c2, ci = (BlockingConnection(r.url, timeout=self.TIMEOUT) for r in (e1, e2, i))
        for c in (c1, c2, ci):
            self.addCleanup(c.close)
        fb = c1.create_receiver("fb.q", credit=50, name="fb-rx",
                                options=Capabilities("qd.fallback"))
        # pre-settled: a blocking send would wait for the other's accept
        txs = [(tag, c.create_sender("fb.q", name="tx-" + tag, options=AtMostOnce()))
               for tag, c in (("e1", c1), ("e2", c2), ("i", ci))]
        for tag, tx in txs:
            for n in range(3):
                self.send(tx, "%s-%d" % (tag, n))
                self.assertEqual(self.take("%s-%d" % (tag, n), fb), (0, "%s-%d" % (tag, n)))
        # the interior: E1's proxy is a consumer of the fallback phase
        links = query(i.url, "org.apache.qpid.dispatch.router.link",
                      ["owningAddr", "linkDir", "linkType"])
        self.assertIn({"owningAddr": "MFfb.q", "linkDir": "out", "linkType": "endpoint"},
                      links, links)
        rx = ci.create_receiver("fb.q", credit=50, name="rx")
        for tag, tx in txs:
            self.switch_over(tag, tx, fb, rx)
        with self.assertRaises(Timeout):
            fb.receive(timeout=0.5)


if __name__ == "__main__":
    unittest.main()
