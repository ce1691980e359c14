#!/usr/bin/python3
"""The edge connection's wire, checked against docs/protocol.md ("Edge
routers") and mesh-protocol section 11 (issue 17): a fake 1.19 interior
(python3-qpid-proton, written from the protocol alone) listens with the
edge role's expectations; a junctiond edge router attaches to it. The fake
records the edge's Open properties and every link it attaches (direction,
addresses, capabilities, dynamic sources), answers as an interior does
(addresses for the dynamic sources, credit), records the heartbeats as raw
octets (pre-settled, an int body, counting up) and, once a client attaches
to the edge, the link-route lookup the edge sends (reply-to, a str
correlation-id, application properties with uint values, the body
[str, bool]); it answers "not a link route" and the edge then attaches its
per-address receiver for the client's address.

The other way round, a fake 1.19 edge attaches to a junctiond interior's
edge listener and checks the interior's Open properties, the credit it
grants (2 on the heartbeat link, 1 on the lookup link, as 1.19), and the
address-tracking message for the edge's sender as raw octets (pre-settled,
an amqp-value list [str key, bool]). (tests/system/test_edge.py's FakeEdge
covers the interior's behaviour; test_edge_linkroute.py its lookup
service.) And the link-route proxy requests of an edge with a container
attached: CREATE and DELETE with 1.19's properties, body keys, names and
patterns, the DELETE naming the identity the CREATE's answer gave.
"""
import threading
import time
import unittest

from proton import Data, Message, symbol, uint

from harness import RouterTestCase, Scenario, conf_section, free_port, SLOW
from test_mesh_wire import sections, typed_map

TIMEOUT = 30 * SLOW


def edge_config(uplink_port, extra=""):
    text = conf_section("router", {"mode": "edge", "id": "E1", "workerThreads": 2})
    text += conf_section("listener", {"host": "127.0.0.1", "port": "{port}",
                                      "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"})
    text += conf_section("connector", {"name": "up", "host": "127.0.0.1", "port": uplink_port,
                                       "role": "edge", "saslMechanisms": "ANONYMOUS"})
    text += conf_section("log", {"module": "DEFAULT", "enable": "info+",
                                 "includeTimestamp": "yes"})
    return text + extra


def caps(terminus):
    c = terminus.capabilities
    c.rewind()
    out = []
    while c.next():
        kind = "SYMBOL" if c.type() == Data.SYMBOL else "type %d" % c.type()
        out.append((kind, str(c.get_object())))
    return out


def links_of(conn):
    lk = conn.link_head(0)
    while lk:
        yield lk
        lk = lk.next(0)


class FakeInterior(Scenario):
    """Listens on port as a 1.19 interior's edge listener would."""

    def __init__(self, port):
        super().__init__(timeout=TIMEOUT)
        self.port = port
        self.client_url = None  # set by the test once the edge listens
        self.props = None
        self.container_id = None
        self.links = []  # (role of the edge, name, source, target, src caps, tgt caps, dynamic)
        self.beats = []  # (presettled, typed body)
        self.lookups = []  # (presettled, sections)
        self.temp = 0
        self.client = None
        self.per_address = None
        self.mgmt = []  # (presettled, sections) of each $management request
        self.want_mgmt = 0  # done once this many came (0: on the per-address link)

    def start(self):
        self.acceptor = self.container.listen("127.0.0.1:%d" % self.port)

    def on_connection_remote_open(self, event):
        if self.props is None:
            self.props = event.connection.remote_properties
            self.container_id = event.connection.remote_container

    def on_link_opening(self, event):
        link = event.link
        rs, rt = link.remote_source, link.remote_target
        edge_role = "receiver" if link.is_sender else "sender"
        self.links.append((edge_role, link.name, rs.address, rt.address, caps(rs), caps(rt),
                           rs.dynamic))
        if rs.dynamic:
            self.temp += 1
            link.source.address = "amqp:/_topo/0/FI/temp.fake%011d" % self.temp
        else:
            link.source.address = rs.address
        link.target.address = rt.address
        if link.is_receiver:
            # as 1.19: 1 for lookups, 2 for heartbeats, link capacity else
            link.flow(1 if rt.address == "_$qd.addr_lookup" else
                      2 if rt.address == "_$qd.edge_heartbeat" else 250)
        if link.is_sender and rs.address == "wire.q" and self.client is not None and \
                not self.want_mgmt:
            self.per_address = (link.name, rs.address, caps(rs))
            self.done()

    def on_delivery(self, event):
        link, dlv = event.link, event.delivery
        if not link.is_receiver or dlv.partial:
            return
        data = link.recv(dlv.pending)
        presettled = dlv.settled  # settled by the edge when it sent it
        dlv.settle()
        secs = sections(data)
        target = link.remote_target.address
        if target == "_$qd.edge_heartbeat":
            self.beats.append((presettled, secs.get(0x77)))
            link.flow(1)
            if len(self.beats) == 2 and self.client is None and self.client_url and \
                    not self.want_mgmt:
                self.client = self.container.create_receiver(self.connect(self.client_url),
                                                             "wire.q")
        elif target == "$management":
            self.mgmt.append((presettled, secs))
            link.flow(1)
            props = secs[0x73][1]
            ap = typed_map(secs[0x74][1])
            op = ap["operation"][2]
            body = ({"identity": "%d" % (100 + len(self.mgmt)), "name": ap["name"][2]}
                    if op == "CREATE" else None)
            answer = Message(address=props[4][1], correlation_id=props[5][1], body=body,
                             properties={"statusCode": 201 if op == "CREATE" else 204,
                                         "statusDescription": "OK"})
            out = [l for l in links_of(link.connection) if l.is_sender and
                   l.source.address == props[4][1]]
            if out and out[0].credit > 0:
                out[0].send(answer).settle()
            if self.want_mgmt and len(self.mgmt) >= self.want_mgmt:
                self.done()
        elif target == "_$qd.addr_lookup":
            self.lookups.append((presettled, secs))
            link.flow(1)
            props = secs[0x73][1]
            reply_to, cid = props[4][1], props[5][1]
            answer = Message(address=reply_to, correlation_id=cid, body=[False, False],
                             properties={"version": uint(1), "opcode": uint(1),
                                         "status": uint(3)})
            out = [l for l in links_of(link.connection) if l.is_sender and
                   l.source.address == reply_to]
            if out and out[0].credit > 0:
                out[0].send(answer).settle()

    def progress(self):
        return "links %d, beats %d, lookups %d" % (len(self.links), len(self.beats),
                                                   len(self.lookups))


def interior_config(edge_port):
    text = conf_section("router", {"mode": "interior", "id": "I1", "workerThreads": 2})
    text += conf_section("listener", {"host": "127.0.0.1", "port": "{port}",
                                      "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"})
    text += conf_section("listener", {"host": "127.0.0.1", "port": edge_port, "role": "edge",
                                      "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"})
    return text


class FakeEdge(Scenario):
    """Attaches, on an edge connection, what a 1.19 edge does first: the
    downlink, the tracking receiver, the heartbeat and lookup senders, and
    a sender for an address with a local producer; records the interior's
    Open properties, the credit it grants and the first tracking message."""

    def __init__(self, url):
        super().__init__(timeout=TIMEOUT)
        self.url = url
        self.props = None
        self.tracking = None

    def start(self):
        self.conn = self.connect(self.url, container_id="E9")
        self.conn.container = "E9"
        ssn = self.conn.session()
        ssn.open()
        self.down = ssn.receiver("down")
        self.down.source.address = "E9"
        for t in (self.down.source, self.down.target):
            t.capabilities.put_symbol("qd.router-edge-downlink")
        self.track = ssn.receiver("track")
        self.track.source.address = "_$qd.edge_addr_tracking"
        self.hb = ssn.sender("hb")
        self.hb.target.address = "_$qd.edge_heartbeat"
        self.lookup = ssn.sender("lookup")
        self.lookup.target.address = "_$qd.addr_lookup"
        self.addr = ssn.sender("addr")
        self.addr.target.address = "wt.q"
        for l in (self.down, self.track, self.hb, self.lookup, self.addr):
            l.open()
        self.down.flow(250)
        self.track.flow(32)

    def on_connection_remote_open(self, event):
        self.props = event.connection.remote_properties

    def on_delivery(self, event):
        link, dlv = event.link, event.delivery
        if link != self.track or dlv.partial:
            return
        data = link.recv(dlv.pending)
        self.tracking = (dlv.settled, sections(data))
        dlv.settle()

    def tick(self):
        if self.tracking and self.hb.credit and self.lookup.credit:
            self.done()

    def progress(self):
        return "tracking %s, credit hb %d lookup %d" % (self.tracking, self.hb.credit,
                                                      self.lookup.credit)


class EdgeWire(RouterTestCase):

    def test_interior_answers_an_edge_as_the_reference_says(self):
        port = free_port()
        self.start_router(config=interior_config(port))
        f = self.run_scenario(FakeEdge("amqp://127.0.0.1:%d" % port))
        p = f.props
        self.assertEqual(p[symbol("product")], "qpid-dispatch-router")
        self.assertEqual(p.get(symbol("qd.annotations-version")), 1)
        self.assertEqual((f.hb.credit, f.lookup.credit), (2, 1))
        presettled, secs = f.tracking
        self.assertTrue(presettled)
        self.assertEqual(secs[0x77], ("list", [("str", "M0wt.q"), ("bool", False)]))


    def test_edge_attaches_as_the_reference_says(self):
        port = free_port()
        fake = FakeInterior(port)
        t = threading.Thread(target=fake.run, daemon=True)
        t.start()
        time.sleep(0.3)  # listening
        edge = self.start_router(config=edge_config(port))
        fake.client_url = edge.url
        t.join(TIMEOUT + 10)
        self.assertFalse(t.is_alive(), "the fake interior did not finish")
        self.assertIsNone(fake.error, "%s\n%s" % (fake.error, self.logs()))

        # Open: container-id the router id; properties with symbol keys
        self.assertEqual(fake.container_id, "E1")
        p = fake.props
        self.assertEqual(p[symbol("product")], "qpid-dispatch-router")
        self.assertIn(symbol("version"), p)
        self.assertIsInstance(p[symbol("qd.conn-id")], int)
        self.assertEqual(p.get(symbol("qd.annotations-version")), 1)

        links = {(r, s, t_, d): (sc, tc) for r, _, s, t_, sc, tc, d in fake.links}
        downlink_cap = [("SYMBOL", "qd.router-edge-downlink")]
        # the anonymous uplink sender
        self.assertIn(("sender", None, None, False), links)
        # the downlink: source = the edge's id, the capability on both termini
        self.assertEqual(links[("receiver", "E1", None, False)], (downlink_cap, downlink_cap))
        self.assertIn(("receiver", "_$qd.edge_addr_tracking", None, False), links)
        self.assertIn(("sender", None, "_$qd.edge_heartbeat", False), links)
        self.assertIn(("sender", None, "_$qd.addr_lookup", False), links)
        self.assertIn(("sender", None, "$management", False), links)
        self.assertEqual(sum(1 for x in fake.links if x[0] == "receiver" and x[6]), 2,
                         "two dynamic reply receivers: %s" % fake.links)

        # heartbeats: pre-settled, an int body counting up
        self.assertGreaterEqual(len(fake.beats), 2)
        for i, (presettled, body) in enumerate(fake.beats[:2]):
            self.assertTrue(presettled)
            self.assertEqual(body, ("int", i))

        # the lookup for the client's receiver on wire.q
        self.assertEqual(len(fake.lookups), 1)
        presettled, secs = fake.lookups[0]
        self.assertTrue(presettled)
        props = secs[0x73][1]
        self.assertEqual(props[4][0], "str")
        self.assertRegex(props[4][1], r"^amqp:/_topo/0/FI/temp\.fake")
        self.assertEqual(props[5][0], "str")
        self.assertRegex(props[5][1], r"^client-[0-9a-f]{24}$")
        self.assertEqual(typed_map(secs[0x74][1]),
                         {"version": ("str", "uint", 1), "opcode": ("str", "uint", 1)})
        self.assertEqual(secs[0x77], ("list", [("str", "wire.q"), ("bool", False)]))

        # then, not a link route: the per-address receiver, plain address
        self.assertEqual(fake.per_address[1:], ("wire.q", []))

    def test_link_route_proxy_requests_as_the_reference_says(self):
        from harness import container_listener
        from test_edge_linkroute import Service, link_route
        port = free_port()
        fake = FakeInterior(port)
        fake.want_mgmt = 4  # two CREATEs (in, out), then two DELETEs
        t = threading.Thread(target=fake.run, daemon=True)
        t.start()
        time.sleep(0.3)
        edge = self.start_router(config=edge_config(port, container_listener() +
                                                    link_route("edsvc", "svc-9")))
        svc = Service(edge.container_url, "svc-9").start()
        self.addCleanup(svc.stop)
        deadline = time.time() + TIMEOUT
        while len(fake.mgmt) < 2 and time.time() < deadline:
            time.sleep(0.1)
        svc.stop()  # the container goes: the proxies are deleted
        t.join(TIMEOUT + 10)
        self.assertFalse(t.is_alive(), "the fake interior did not finish: %s\n%s"
                         % (fake.progress(), self.logs()))
        self.assertIsNone(fake.error, "%s\n%s" % (fake.error, self.logs()))
        lr_type = "org.apache.qpid.dispatch.router.connection.linkRoute"
        creates, deletes = fake.mgmt[:2], fake.mgmt[2:]
        seen = {}
        for presettled, secs in creates:
            props = secs[0x73][1]
            self.assertRegex(props[4][1], r"^amqp:/_topo/0/FI/temp\.fake")
            self.assertRegex(props[5][1], r"^client-[0-9a-f]{24}$")
            ap = typed_map(secs[0x74][1])
            self.assertEqual(list(ap), ["operation", "type", "name"])
            self.assertEqual(ap["operation"], ("str", "str", "CREATE"))
            self.assertEqual(ap["type"], ("str", "str", lr_type))
            name = ap["name"][2]
            body = typed_map(secs[0x77][1])
            self.assertEqual(list(body), ["type", "pattern", "direction", "name"])
            self.assertEqual(body["type"], ("str", "str", lr_type))
            self.assertEqual(body["pattern"], ("str", "str", "edsvc/#"))
            self.assertEqual(body["name"], ("str", "str", name))
            seen[name] = body["direction"][2]
        self.assertEqual(seen, {"E1/proxyLinkRoute/Cedsvc": "in",
                                "E1/proxyLinkRoute/Dedsvc": "out"})
        identities = {}
        for i, (presettled, secs) in enumerate(creates):
            identities[typed_map(secs[0x74][1])["name"][2]] = "%d" % (101 + i)
        for presettled, secs in deletes:
            ap = typed_map(secs[0x74][1])
            self.assertEqual(list(ap), ["operation", "type", "identity", "name"])
            self.assertEqual(ap["operation"], ("str", "str", "DELETE"))
            self.assertEqual(ap["identity"], ("str", "str", identities[ap["name"][2]]))
            self.assertEqual(secs[0x77], ("map", []))


if __name__ == "__main__":
    unittest.main()
