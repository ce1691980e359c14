#!/usr/bin/python3
"""System tests: edge routers (issue 17), the interior's side.

An interior junctiond with a `listener { role: edge }` serves a peer that
behaves as a 1.19 edge router does on its uplink (docs/protocol.md, "Edge
routers"): it binds the edge's downlink to H<edge-id> so that
`_edge/<edge-id>/...` reaches it, reports on the tracking link whether an
address the edge sends to has a destination elsewhere (and when that
changes), carries the edge's per-address links like a client's, shows the
connection with role `edge`, and closes an edge whose heartbeat goes
silent. Bad input: a second edge with an id already attached is refused; a
peer that attaches inter-router links on an edge listener has them refused;
a plain client on an edge listener is served like any client.

The fake edge is a proton client (real junctiond, real AMQP on 127.0.0.1).
"""
import os
import re
import signal
import subprocess
import sys
import time
import unittest

from proton import Delivery, Endpoint, Message, Timeout, symbol
from proton.handlers import MessagingHandler
from proton.reactor import AtMostOnce, Container
from proton.utils import BlockingConnection, LinkDetached, SendException, SyncRequestResponse

from mesh import distinct_ports
from test_mesh_failover import FlowAndKill
from harness import SLOW, Recv, RouterTestCase, Scenario, Send, Traffic, conf_section, free_port


def interior(case, name="I1"):
    """An interior router with a client listener and an edge listener;
    returns (router, edge port)."""
    port = free_port()
    extra = conf_section("listener", {"name": "edges", "host": "127.0.0.1", "port": port,
                                      "role": "edge", "saslMechanisms": "ANONYMOUS",
                                      "authenticatePeer": "no"})
    extra += conf_section("log", {"module": "ROUTER", "enable": "info+",
                                  "includeTimestamp": "yes"})
    r = case.start_router(router={"mode": "interior", "id": name}, extra=extra)
    return r, port


def query(url, entity_type, names=()):
    conn = BlockingConnection(url, timeout=10 * SLOW)
    try:
        client = SyncRequestResponse(conn, "$management")
        props = {"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                 "entityType": entity_type}
        reply = client.call(Message(body={"attributeNames": list(names)}, properties=props))
        body = reply.body
        return [dict(zip(body["attributeNames"], row)) for row in body["results"]]
    finally:
        conn.close()


def caps(link, cap):
    for t in (link.source, link.target):
        t.capabilities.put_symbol(cap)


class FakeEdge(Scenario):
    """A peer that attaches, on an edge connection, what a 1.19 edge does:
    the downlink, the tracking receiver, the heartbeat sender (beating
    every `beat` seconds, or never again after the first when beat is
    None) and a sender to `address`; then plays `script`."""

    def __init__(self, edge_url, client_url, edge_id="E1", address="edge.q", beat=1.0,
                 timeout=30, script="traffic"):
        super().__init__(timeout=timeout)
        self.edge_url, self.client_url = edge_url, client_url
        self.edge_id, self.address, self.beat = edge_id, address, beat
        self.script = script
        self.tracking = []     # [key, bool] bodies, in order
        self.downlink = []     # messages that came down
        self.received = []     # what the interior's client received
        self.closed_with = None
        self.state = "start"
        self.stop_flag = False  # "idle": set by the test's thread to end it

    def start(self):
        self.conn = self.connect(self.edge_url, container_id=self.edge_id)
        self.conn.container = self.edge_id
        ssn = self.conn.session()
        ssn.open()
        self.down = ssn.receiver("edge-downlink")
        self.down.source.address = self.edge_id
        caps(self.down, "qd.router-edge-downlink")
        self.down.open()
        self.down.flow(100)
        self.track = ssn.receiver("edge-tracking")
        self.track.source.address = "_$qd.edge_addr_tracking"
        self.track.open()
        self.track.flow(32)
        self.hb = ssn.sender("edge-heartbeat")
        self.hb.target.address = "_$qd.edge_heartbeat"
        self.hb.open()
        self.up = ssn.sender("edge-addr")
        self.up.target.address = self.address
        self.up.open()
        self.beats = 0
        self.next_beat = time.monotonic()

    def tick(self):
        if self.beat is not None or self.beats == 0:
            if time.monotonic() >= self.next_beat and self.hb.credit > 0:
                d = self.hb.send(Message(body=self.beats))
                d.settle()
                self.beats += 1
                self.next_beat = time.monotonic() + (self.beat or 0)
        if self.script == "traffic":
            self.traffic_tick()
        elif self.script == "idle" and self.stop_flag:
            self.done()

    def traffic_tick(self):
        if self.state == "start" and self.tracking[-1:] == [[("M0" + self.address), False]]:
            # no destination elsewhere: a consumer on the interior appears
            self.cconn = self.connect(self.client_url)
            self.crecv = self.container.create_receiver(self.cconn, self.address)
            self.crecv.flow(10)
            self.state = "consumer"
        elif self.state == "consumer" and self.tracking[-1:] == [["M0" + self.address, True]]:
            if self.up.credit > 0:
                self.up.send(Message(address=self.address, body="from the edge")).settle()
                self.csend = self.container.create_sender(
                    self.cconn, "_edge/%s/temp.x" % self.edge_id)
                self.state = "sent"
        elif self.state == "sent" and self.received and self.csend.credit > 0:
            self.csend.send(Message(body="down to the edge")).settle()
            self.state = "down"
        elif self.state == "down" and self.downlink:
            self.crecv.close()
            self.state = "closing"
        elif self.state == "closing" and self.tracking[-1:] == [["M0" + self.address, False]]:
            self.done()

    def on_message(self, event):
        if event.receiver == self.track:
            self.tracking.append(list(event.message.body))
            self.track.flow(1)
        elif event.receiver == self.down:
            self.downlink.append(event.message)
        else:
            self.received.append(event.message.body)
        event.delivery.settle()

    def on_connection_error(self, event):
        if event.connection == self.conn and self.script in ("silent", "duplicate"):
            self.closed_with = event.connection.remote_condition
            self.done()
            return
        super().on_connection_error(event)

    def on_link_error(self, event):
        if self.script == "duplicate":
            return
        super().on_link_error(event)

    def progress(self):
        return "state %s, tracking %s, downlink %d" % (self.state, self.tracking,
                                                      len(self.downlink))


class EdgeInteriorTest(RouterTestCase):

    def test_interior_serves_an_edge(self):
        """Tracking reports the address without and with a consumer
        elsewhere and when it goes; the edge's sender reaches the consumer;
        _edge/<id>/... comes down the downlink with its to-override;
        QUERY connection shows role edge; router.node has no edge."""
        r, eport = interior(self)
        s = FakeEdge("amqp://127.0.0.1:%d" % eport, r.url)
        s.container_hook = None
        s.run()
        self.assertIsNone(s.error, s.error and s.error + "\n" + self.logs())
        self.assertEqual(s.tracking[0], ["M0edge.q", False])
        self.assertIn(["M0edge.q", True], s.tracking)
        self.assertEqual(s.received, ["from the edge"])
        self.assertEqual(len(s.downlink), 1)
        m = s.downlink[0]
        self.assertEqual(m.body, "down to the edge")
        self.assertEqual(m.annotations.get(symbol("x-opt-qd.to")), "_edge/E1/temp.x")

    def test_management_shows_the_edge(self):
        r, eport = interior(self)
        conn = BlockingConnection("amqp://127.0.0.1:%d" % eport, timeout=10 * SLOW)
        try:
            self.wait_for("an edge-role connection", lambda: any(
                c["role"] == "edge" for c in query(r.url, "org.apache.qpid.dispatch.connection",
                                                   ["role", "container"])))
            nodes = query(r.url, "org.apache.qpid.dispatch.router.node", ["id"])
            self.assertEqual([n["id"] for n in nodes], ["I1"])
        finally:
            conn.close()

    def test_plain_client_on_an_edge_listener(self):
        """A client that is no edge router is served as any client, both
        ways: messages between a client on the edge listener and one on
        the normal listener are all accepted."""
        r, eport = interior(self)
        url = "amqp://127.0.0.1:%d" % eport
        msgs = [Message(address="plain.q", body=i) for i in range(20)]
        t = Traffic(r, [Recv("plain.q", url=url)], [Send("plain.q", msgs)], expect=20).run()
        self.assertIsNone(t.error, t.error)
        t = Traffic(r, [Recv("plain.r")], [Send("plain.r", msgs, url=url)], expect=20).run()
        self.assertIsNone(t.error, t.error)

    def test_silent_edge_is_closed(self):
        """An edge that attached its heartbeat link and then says nothing
        for more than 8 s has its connection closed."""
        r, eport = interior(self)
        s = FakeEdge("amqp://127.0.0.1:%d" % eport, r.url, beat=None, script="silent",
                     timeout=25)
        t0 = time.monotonic()
        s.run()
        self.assertIsNone(s.error, s.error)
        self.assertGreaterEqual(time.monotonic() - t0, 8.0)
        self.assertIn("heartbeat", s.closed_with.description)
        self.assertIn("sent no heartbeat", r.log())

    def test_heartbeat_endpoint_on_a_client_connection(self):
        """_$qd.edge_heartbeat is served on every connection, as 1.19: a
        client's sender to it gets credit and its beats are consumed; a
        receiver on it is closed without an error condition. (A sender
        that then goes silent for 8 s has its connection closed, as an
        edge's: test_silent_edge_is_closed; qd119 system_tests_heartbeats.)"""
        r, _ = interior(self)
        conn = BlockingConnection(r.url, timeout=10 * SLOW)
        self.addCleanup(conn.close)
        s = conn.create_sender("_$qd.edge_heartbeat", name="hb")
        for i in range(3):
            s.send(Message(body=i), timeout=10 * SLOW)  # accepted (consumed), not stuck
        with self.assertRaises(LinkDetached) as cm:
            conn.create_receiver("_$qd.edge_heartbeat", name="hb-rx")
        self.assertIsNone(cm.exception.link.remote_condition)

    def test_client_whose_heartbeats_stop_is_cut_without_a_close(self):
        """A client (not an edge) that beats on _$qd.edge_heartbeat twice
        and then stops has its transport cut after 8 s with no close frame,
        as 1.19 does (qd119 system_tests_heartbeats test_02 and test_03):
        the peer sees its connection end, not a close it would answer.
        One log line says why."""
        r, _ = interior(self)
        beats = ClientBeats(r.url, count=2)
        t0 = time.monotonic()
        Container(beats).run()
        self.assertIsNone(beats.error, beats.error)
        self.assertEqual(beats.sent, 2)
        self.assertTrue(beats.transport_closed)
        self.assertFalse(beats.remote_closed, "a close frame came before the cut")
        self.assertGreaterEqual(time.monotonic() - t0, 9.0)
        self.wait_for("the cut's log line", lambda: re.search(
            r"failed: amqp:resource-limit-exceeded edge heartbeat timed out", r.log()))

    def test_lookup_service_refuses_what_is_not_an_edge_request(self):
        """_$qd.addr_lookup, as 1.19: a sender to it from a connection that
        is not an edge's is refused, so is a receiver on it; an invalid
        request is rejected (not released)."""
        r, eport = interior(self)
        for url, receiver in ((r.url, False), ("amqp://127.0.0.1:%d" % eport, True)):
            conn = BlockingConnection(url, timeout=10 * SLOW)
            self.addCleanup(conn.close)
            with self.assertRaises(LinkDetached):
                if receiver:
                    conn.create_receiver("_$qd.addr_lookup", name="lookup-rx")
                else:
                    conn.create_sender("_$qd.addr_lookup", name="lookup-tx")
        conn = BlockingConnection("amqp://127.0.0.1:%d" % eport, timeout=10 * SLOW)
        self.addCleanup(conn.close)
        s = conn.create_sender("_$qd.addr_lookup", name="lookup-bad")
        with self.assertRaises(SendException) as cm:
            s.send(Message(body="not a lookup"), timeout=10 * SLOW)
        self.assertEqual(cm.exception.state, Delivery.REJECTED)

    def test_second_edge_with_the_same_id_is_refused(self):
        r, eport = interior(self)
        url = "amqp://127.0.0.1:%d" % eport
        first = FakeEdge(url, r.url, script="idle", timeout=30)
        import threading
        t = threading.Thread(target=first.run)
        t.start()
        try:
            self.wait_for("the first edge attached", lambda: "Edge router 'E1' attached" in r.log())
            second = FakeEdge(url, r.url, script="duplicate", timeout=15)
            second.run()
            self.assertIsNone(second.error, second.error)
            self.assertEqual(second.closed_with.name, "amqp:not-allowed")
            self.assertIn("Duplicate edge id", r.log())
        finally:
            first.stop_flag = True
            t.join(30)
        self.assertIsNone(first.error, first.error)  # the first edge was not disturbed

    def test_inter_router_links_on_an_edge_listener_are_refused(self):
        """A peer that attaches qd.router links on an edge listener has them
        refused (qd:forbidden); the router goes on."""
        r, eport = interior(self)
        conn = BlockingConnection("amqp://127.0.0.1:%d" % eport, timeout=10 * SLOW)
        try:
            class Caps:
                def apply(self, link):
                    caps(link, "qd.router")

                def test(self, link):
                    return True
            with self.assertRaises(Exception):
                conn.create_receiver(None, name="qdlink.x", options=Caps())
        finally:
            conn.close()
        self.assertIn("Connectivity to the node is forbidden", r.log())
        self.assertTrue(r.alive())


# --------------------------------------------------------------------------
# Edge routers (junctiond mode edge) under interiors

MC = {"prefix": "mc", "distribution": "multicast"}


def router_config(mode, rid, edge_port=None, uplinks=(), log="info+"):
    """A router with a client listener ({port}); an interior gets an edge
    listener on edge_port, an edge a `role: edge` connector per uplink
    port (in order)."""
    text = conf_section("router", {"mode": mode, "id": rid, "workerThreads": 2})
    text += conf_section("listener", {"host": "127.0.0.1", "port": "{port}", "role": "normal",
                                      "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"})
    text += conf_section("address", MC)
    if edge_port:
        text += conf_section("listener", {"name": "edges", "host": "127.0.0.1",
                                          "port": edge_port, "role": "edge",
                                          "saslMechanisms": "ANONYMOUS",
                                          "authenticatePeer": "no"})
    for i, p in enumerate(uplinks):
        text += conf_section("connector", {"name": "up%d" % i, "host": "127.0.0.1", "port": p,
                                           "role": "edge", "saslMechanisms": "ANONYMOUS"})
    text += conf_section("log", {"module": "DEFAULT", "enable": log, "includeTimestamp": "yes"})
    return text


class EdgeMesh:
    """Interiors (names) and edges (name -> list of interior names it
    connects to, in order), started by case."""

    def __init__(self, case, interiors, edges):
        self.case = case
        ports = distinct_ports(interiors)
        self.edge_ports = ports
        self.r = {}
        for name in interiors:
            self.r[name] = case.start_router(config=router_config("interior", name, ports[name]))
        for name, ups in edges.items():
            self.r[name] = case.start_router(
                config=router_config("edge", name, uplinks=[ports[u] for u in ups]))
        for name in edges:
            case.wait_for("edge %s attached" % name,
                          lambda n=name: any("Edge router '%s' attached" % n in self.r[i].log()
                                             for i in interiors))

    def url(self, name):
        return self.r[name].url


TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")


def stat(*args, url):
    """junction-stat's output (it must exit 0)."""
    p = subprocess.run(["/usr/bin/python3", os.path.join(TOOLS, "junction-stat"), "-b", url] +
                       list(args), capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, (p.stdout, p.stderr)
    return p.stdout


def msgs(address, n):
    return [Message(address=address, body=i) for i in range(n)]


class RequestReply(Scenario):
    """A server on one router answers each request to `service` to its
    reply-to; a client on another, with a dynamic reply address, sends n
    requests and waits for n replies."""

    def __init__(self, server_url, client_url, service, n):
        super().__init__(timeout=30)
        self.server_url, self.client_url, self.service, self.n = server_url, client_url, service, n
        self.replies = []
        self.reply_to = None
        self.sent = 0

    def start(self):
        sc = self.connect(self.server_url)
        self.srv = self.container.create_receiver(sc, self.service)
        self.srv.flow(100)
        self.srv_out = self.container.create_sender(sc, None)
        self.cc = None

    def on_link_opened(self, event):
        if event.link == self.srv and self.cc is None:
            self.cc = self.connect(self.client_url)
            self.rcv = self.container.create_receiver(self.cc, None, dynamic=True)
            self.rcv.flow(100)
        elif self.cc is not None and event.link == getattr(self, "rcv", None):
            self.reply_to = self.rcv.remote_source.address
            self.req = self.container.create_sender(self.cc, self.service)

    def on_sendable(self, event):
        if getattr(self, "req", None) == event.sender:
            while self.sent < self.n and event.sender.credit > 0:
                event.sender.send(Message(body=self.sent, reply_to=self.reply_to))
                self.sent += 1

    def on_message(self, event):
        if event.receiver == self.srv:
            m = event.message
            self.srv_out.send(Message(address=m.reply_to, body=m.body))
        else:
            self.replies.append(event.message.body)
            if len(self.replies) == self.n:
                self.done()
        event.delivery.settle()

    def progress(self):
        return "reply_to %s, sent %d, replies %d" % (self.reply_to, self.sent, len(self.replies))


class CreditWatch(Scenario):
    """A sender on an edge to `address`: no credit while no consumer exists
    anywhere; a receiver on another router appears: credit; it goes: the
    sender keeps the credit it has (as 1.19: not drained) for 1.5 s."""

    def __init__(self, sender_url, consumer_url, address):
        super().__init__(timeout=30)
        self.sender_url, self.consumer_url, self.address = sender_url, consumer_url, address
        self.log = []
        self.t_open = None

    def start(self):
        self.snd = self.container.create_sender(self.connect(self.sender_url), self.address)

    def on_link_opened(self, event):
        if event.link == self.snd:
            self.t_open = time.monotonic()

    def tick(self):
        if self.t_open is None:
            return
        if not self.log and self.snd.credit > 0:
            self.fail("credit before any consumer")
        if not self.log and time.monotonic() - self.t_open > 1.0:
            self.log.append("no credit for 1 s")
            self.rc = self.connect(self.consumer_url)
            self.recv = self.container.create_receiver(self.rc, self.address)
            self.recv.flow(10)
        elif self.log == ["no credit for 1 s"] and self.snd.credit > 0:
            self.log.append("credit")
            self.recv.close()
            self.t_closed = time.monotonic()
        elif self.log[-1:] == ["credit"] and (self.snd.drain_mode or self.snd.credit == 0):
            self.log.append("withdrawn")
            self.done()
        elif self.log[-1:] == ["credit"] and time.monotonic() - self.t_closed > 1.5:
            self.log.append("kept")
            self.done()

    def progress(self):
        return str(self.log)


class EdgeRoutersTest(RouterTestCase):

    def test_one_interior_three_edges(self):
        """Anycast and multicast exact counts across edges and within one
        edge; request/reply between edges; credit only while a consumer
        exists somewhere."""
        m = EdgeMesh(self, ["I"], {"E1": ["I"], "E2": ["I"], "E3": ["I"]})
        u = m.url
        # anycast across edges (unsettled, all accepted)
        t = Traffic(None, [Recv("a.q", url=u("E2"))], [Send("a.q", msgs("a.q", 200), url=u("E1"))],
                    expect=200).run()
        self.assertIsNone(t.error, t.error)
        self.assertEqual(len(t.receivers[0].messages), 200)
        # anycast within one edge: stays there (the interior sees no such address)
        t = Traffic(None, [Recv("b.q", url=u("E1"))], [Send("b.q", msgs("b.q", 200), url=u("E1"))],
                    expect=200).run()
        self.assertIsNone(t.error, t.error)
        addrs = query(u("I"), "org.apache.qpid.dispatch.router.address", ["name"])
        self.assertNotIn("M0b.q", [a["name"] for a in addrs])
        # multicast: two receivers on E2, one on each other edge, one on the interior
        rs = [Recv("mc.x", url=u(n)) for n in ("E1", "E2", "E2", "E3", "I")]
        t = Traffic(None, rs, [Send("mc.x", msgs("mc.x", 50), url=u("E1"))], expect=250,
                    linger=0.5).run()
        self.assertIsNone(t.error, t.error)
        self.assertEqual([len(r.messages) for r in rs], [50] * 5)
        # multicast from an anonymous sender on an edge that has a consumer too
        rs = [Recv("mc.y", url=u(n)) for n in ("E1", "E2", "I")]
        t = Traffic(None, rs, [Send(None, msgs("mc.y", 50), url=u("E1"))], expect=150,
                    linger=0.5).run()
        self.assertIsNone(t.error, t.error)
        self.assertEqual([len(r.messages) for r in rs], [50] * 3)
        # request/reply between two edges (dynamic reply-to on an edge)
        s = RequestReply(u("E3"), u("E1"), "svc", 20).run()
        self.assertIsNone(s.error, s.error)
        self.assertTrue(s.reply_to.startswith("amqp:/_edge/E1/temp."), s.reply_to)
        self.assertEqual(sorted(s.replies), list(range(20)))
        # credit only while a consumer exists somewhere
        s = CreditWatch(u("E1"), u("E3"), "c.q").run()
        self.assertIsNone(s.error, s.error)
        self.assertEqual(s.log, ["no credit for 1 s", "credit", "kept"])
        # tools: the mode, and the interior's view of its edges
        out = stat("-g", url=u("E1"))
        self.assertRegex(out, r"Mode +edge")
        out = stat("--edge", url=u("I"))
        for name in ("E1", "E2", "E3"):
            self.assertRegex(out, r"\b%s\b +edge +in" % name)
        # the interior's link to each edge's downlink has linkType edge-downlink (as 1.19)
        links = query(u("I"), "org.apache.qpid.dispatch.router.link", ["linkType"])
        self.assertEqual([x["linkType"] for x in links].count("edge-downlink"), 3)


class EdgeMaxSizeTest(RouterTestCase):

    def test_edge_leaves_what_its_interior_forwards_to_the_interior_s_limit(self):
        """As 1.19: an edge router's policy.maxMessageSize applies to its
        own clients, not to what comes down its uplink (the interior checked
        it where it entered)."""
        port = distinct_ports(["I"])["I"]
        i = self.start_router(config=router_config("interior", "I", port))
        e = self.start_router(config=router_config("edge", "E1", uplinks=[port])
                              + conf_section("policy", {"maxMessageSize": 1000}))
        self.wait_for("edge attached", lambda: "Edge router 'E1' attached" in i.log())
        rx = BlockingConnection(e.url, timeout=10 * SLOW)
        self.addCleanup(rx.close)
        rcv = rx.create_receiver("big.e", credit=50)
        tx = BlockingConnection(i.url, timeout=10 * SLOW)
        self.addCleanup(tx.close)
        snd = tx.create_sender("big.e", options=AtMostOnce())
        got = None
        for _ in range(20):  # presettled: sent again until the route exists
            snd.link.send(Message(body=b"x" * 5000))
            tx.wait(lambda: snd.link.queued == 0, msg="writing the message")
            try:
                got = rcv.receive(timeout=1)
                break
            except Timeout:
                pass
        self.assertIsNotNone(got)
        self.assertEqual(len(got.body), 5000)
        self.assertNotIn("exceeds maxMessageSize", e.log())


class EdgeUnavailableTest(RouterTestCase):

    def test_anonymous_delivery_to_an_unavailable_address_is_rejected_and_not_sent_up(self):
        """An edge router's anonymous-relay delivery to an address its
        configuration makes unavailable is rejected with amqp:not-found
        and goes nowhere: not also up the uplink to a receiver on the
        interior (the sender must never be told rejected for a message a
        consumer got)."""
        port = distinct_ports(["I"])["I"]
        i = self.start_router(config=router_config("interior", "I", port))
        e = self.start_router(config=router_config("edge", "E1", uplinks=[port])
                              + conf_section("address", {"prefix": "unav",
                                                         "distribution": "unavailable"}))
        self.wait_for("edge attached", lambda: "Edge router 'E1' attached" in i.log())
        rx = BlockingConnection(i.url, timeout=10 * SLOW)
        self.addCleanup(rx.close)
        rcv = rx.create_receiver("unav.q", credit=10)
        tx = BlockingConnection(e.url, timeout=10 * SLOW)
        self.addCleanup(tx.close)
        anon = tx.create_sender(None)
        for n in range(3):
            with self.assertRaises(SendException) as cm:
                anon.send(Message(address="unav.q", body=n), timeout=10 * SLOW)
            self.assertEqual(str(cm.exception.state), "REJECTED")
        with self.assertRaises(Timeout):
            got = rcv.receive(timeout=2)
            self.fail("the rejected message reached a receiver: %r" % got.body)


class EdgeSenderGoneTest(RouterTestCase):

    def test_presettled_burst_then_detach_all_arrive(self):
        """A client of an edge sends a burst of pre-settled messages to a
        consumer on the interior and detaches its sender as soon as they
        are written: the edge's per-address uplink sender is closed only
        once every copy waiting for the interior's credit went up, so all
        of them arrive (it was closed at once: the copies still waiting
        were lost)."""
        m = EdgeMesh(self, ["I"], {"E1": ["I"]})
        n = 2000
        svc = BlockingConnection(m.url("I"), timeout=30 * SLOW)
        self.addCleanup(svc.close)
        rcv = svc.create_receiver("burst.q", credit=n)
        client = BlockingConnection(m.url("E1"), timeout=30 * SLOW)
        self.addCleanup(client.close)
        for rnd in range(3):
            snd = client.create_sender("burst.q", options=AtMostOnce())
            for i in range(n // 4):
                snd.link.send(Message(body=[rnd, i]))
            client.wait(lambda: snd.link.queued == 0, msg="writing the burst")
            snd.close()
            got = []
            deadline = time.monotonic() + 30 * SLOW
            while len(got) < n // 4 and time.monotonic() < deadline:
                try:
                    got.append(rcv.receive(timeout=1).body)
                except Timeout:
                    pass
            self.assertEqual(sorted(tuple(b) for b in got),
                             [(rnd, i) for i in range(n // 4)], "round %d" % rnd)


class EdgeFailoverTest(RouterTestCase):

    def test_active_interior_killed_while_unsettled_messages_flow(self):
        """2 interiors + an edge with connectors to both. The interior the
        edge chose (the first opened) is killed while 4,000 unsettled
        messages flow from a sender on the edge to a receiver on the other
        interior: every message is accepted or comes back released or
        modified, every accepted one was received, and traffic resumes over
        the other interior (the failover time is printed). The edge's
        connection entities show only the uplink `active`."""
        ports = distinct_ports(["I1", "I2", "ir"])
        ir = conf_section("listener", {"name": "ir", "host": "127.0.0.1", "port": ports["ir"],
                                       "role": "inter-router", "saslMechanisms": "ANONYMOUS",
                                       "authenticatePeer": "no"})
        to_i1 = conf_section("connector", {"name": "to-I1", "host": "127.0.0.1",
                                           "port": ports["ir"], "role": "inter-router",
                                           "saslMechanisms": "ANONYMOUS"})
        r = {"I1": self.start_router(config=router_config("interior", "I1", ports["I1"]) + ir),
             "I2": self.start_router(config=router_config("interior", "I2", ports["I2"]) + to_i1)}
        e = self.start_router(config=router_config("edge", "E",
                                                   uplinks=[ports["I1"], ports["I2"]]))
        self.wait_for("the edge's uplink", lambda: "Edge uplink active" in e.log())
        active = re.search(r"Edge uplink active: interior '(\w+)'", e.log()).group(1)
        other = "I2" if active == "I1" else "I1"
        self.wait_for("the edge attached", lambda: "Edge router 'E' attached" in r[active].log())

        def actives():  # the edge's connection entities: active only the uplink (as 1.19)
            return {c["container"]: c["active"] for c in
                    query(e.url, "org.apache.qpid.dispatch.connection", ["container", "role", "active"])
                    if c["role"] == "edge"}
        self.wait_for("both uplink connections", lambda: len(actives()) == 2)
        self.assertEqual(actives(), {active: True, other: False})
        s = FlowAndKill(e.url, r[other].url, total=4000, kill_after=800,
                        kill=lambda: r[active].signal(signal.SIGKILL))
        s.run()
        self.assertIsNone(s.error, s.error and s.error + "\n" + self.logs())
        self.assertEqual(len(s.outcomes), 4000)
        accepted = {q for q, st in s.outcomes.items() if st == Delivery.ACCEPTED}
        others = {st for q, st in s.outcomes.items() if st != Delivery.ACCEPTED}
        self.assertLessEqual(others, {Delivery.RELEASED, Delivery.MODIFIED})
        self.assertLessEqual(accepted, s.received)  # none accepted and missing
        self.assertIsNotNone(s.first_after_kill, "no message accepted after the kill")
        self.assertIn("Edge uplink active: interior '%s'" % other, e.log())
        self.assertEqual(actives(), {other: True})
        sys.stderr.write("\nedge failover: first message accepted %.2f s after the kill; "
                         "%d accepted, %d released/modified\n"
                         % (s.first_after_kill, len(accepted), 4000 - len(accepted)))

    def test_killed_uplink_never_releases_a_delivered_message(self):
        """Issue 29: the edge's active interior is killed (SIGKILL) while
        unsettled anycast messages flow from a sender on the edge through it
        to a receiver on the other interior. A copy the edge had handed to
        its lost uplink may have been delivered: no message the receiver got
        comes back released (each is accepted or modified), and every
        released one was never received."""
        ports = distinct_ports(["I1", "I2", "ir"])
        ir = conf_section("listener", {"name": "ir", "host": "127.0.0.1", "port": ports["ir"],
                                       "role": "inter-router", "saslMechanisms": "ANONYMOUS",
                                       "authenticatePeer": "no"})
        to_i1 = conf_section("connector", {"name": "to-I1", "host": "127.0.0.1",
                                           "port": ports["ir"], "role": "inter-router",
                                           "saslMechanisms": "ANONYMOUS"})
        r = {"I1": self.start_router(config=router_config("interior", "I1", ports["I1"]) + ir),
             "I2": self.start_router(config=router_config("interior", "I2", ports["I2"]) + to_i1)}
        e = self.start_router(config=router_config("edge", "E",
                                                   uplinks=[ports["I1"], ports["I2"]]))
        self.wait_for("the edge's uplink", lambda: "Edge uplink active" in e.log())
        active = re.search(r"Edge uplink active: interior '(\w+)'", e.log()).group(1)
        other = "I2" if active == "I1" else "I1"
        self.wait_for("the edge attached", lambda: "Edge router 'E' attached" in r[active].log())
        s = FlowAndKill(e.url, r[other].url, total=6000, kill_after=1000,
                        kill=lambda: r[active].signal(signal.SIGKILL), window=1000)
        s.run()
        self.assertIsNone(s.error, s.error and s.error + "\n" + self.logs())
        self.assertEqual(len(s.outcomes), 6000)
        released = {q for q, st in s.outcomes.items() if st == Delivery.RELEASED}
        modified = {q for q, st in s.outcomes.items() if st == Delivery.MODIFIED}
        back = sorted(released & s.received)
        self.assertEqual(len(back), 0, "%d received messages came back released: %r..."
                         % (len(back), back[:10]))
        for q, st in s.outcomes.items():
            self.assertIn(st, (Delivery.ACCEPTED, Delivery.MODIFIED, Delivery.RELEASED), q)
        sys.stderr.write("\nuplink killed: %d released (none received), %d modified "
                         "(%d of them received)\n"
                         % (len(released), len(modified), len(modified & s.received)))


class EdgeHeartbeatTest(RouterTestCase):

    def test_an_idle_edge_keeps_its_uplink(self):
        """A junctiond edge attaches a heartbeat link and beats every 2 s:
        idle for longer than the interior's 8 s timeout, it stays attached."""
        ports = distinct_ports(["I"])
        i = self.start_router(config=router_config("interior", "I", ports["I"]))
        e = self.start_router(config=router_config("edge", "E1", uplinks=[ports["I"]]))
        self.wait_for("the heartbeat link", lambda: "target=_$qd.edge_heartbeat" in i.log())
        time.sleep(10)
        self.assertNotIn("sent no heartbeat", i.log())
        self.assertEqual(e.log().count("Edge uplink active"), 1)
        t = Traffic(None, [Recv("h.q", url=i.url)], [Send("h.q", msgs("h.q", 5), url=e.url)],
                    expect=5).run()
        self.assertIsNone(t.error, t.error)


class EdgeRestartTest(RouterTestCase):

    def test_interior_restarts_repeatedly(self):
        """The edges' interior is killed and started again three times:
        each time both edges attach again and traffic between them flows;
        the edges neither crash nor leak (they stop cleanly at the end)."""
        ports = distinct_ports(["I"])
        i = self.start_router(config=router_config("interior", "I", ports["I"]))
        es = {n: self.start_router(config=router_config("edge", n, uplinks=[ports["I"]]))
              for n in ("E1", "E2")}
        for rnd in range(4):
            for n, e in es.items():
                self.wait_for("%s attached (round %d)" % (n, rnd),
                              lambda e=e: e.log().count("Edge uplink active") == rnd + 1 and
                              "Edge router '%s' attached" % n in i.log())
            t = Traffic(None, [Recv("r.q", url=es["E2"].url)],
                        [Send("r.q", msgs("r.q", 20), url=es["E1"].url)], expect=20).run()
            self.assertIsNone(t.error, "round %d: %s" % (rnd, t.error))
            if rnd == 3:
                break
            i.signal(signal.SIGKILL)
            i.proc.wait(10)
            i._log_file.close()
            i.start()
            i.wait_ready()
        for e in es.values():
            self.assertTrue(e.alive())
        self.assertEqual(es["E1"].log().count("Edge uplink lost"), 3)


class ClientBeats(MessagingHandler):
    """A client that sends count beats to _$qd.edge_heartbeat, one a
    second, then stays silent; records how its connection ended."""

    def __init__(self, url, count):
        super().__init__()
        self.url, self.count = url, count
        self.sent = 0
        self.error = None
        self.remote_closed = False
        self.transport_closed = False
        self.sender = None
        self.deadline = None

    def on_start(self, event):
        self.reactor = event.reactor
        self.deadline = event.reactor.schedule(30 * SLOW, self)
        conn = event.container.connect(self.url, reconnect=False)
        self.sender = event.container.create_sender(conn, "_$qd.edge_heartbeat")

    def on_sendable(self, event):
        if self.sent == 0:
            self.beat()

    def beat(self):
        if self.sent < self.count and self.sender.credit > 0:
            self.sender.send(Message(body=self.sent))
            self.sent += 1
            if self.sent < self.count:
                self.reactor.schedule(1.0, _Beat(self))

    def on_connection_remote_close(self, event):
        self.remote_closed = True

    def on_transport_closed(self, event):
        self.transport_closed = True
        self.deadline.cancel()

    def on_timer_task(self, event):
        self.error = "the router kept the silent client's connection for 30 s"
        self.sender.connection.close()


class _Beat:
    def __init__(self, client):
        self.client = client

    def on_timer_task(self, event):
        self.client.beat()


if __name__ == "__main__":
    unittest.main()
