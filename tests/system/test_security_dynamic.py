#!/usr/bin/python3
"""System tests: dynamic (reply) addresses cannot be guessed or taken.

* A dynamic address is `amqp:/_topo/0/<id>/temp.` (on an edge
  `amqp:/_edge/<id>/temp.`) and 22 base64url characters, 128 random bits:
  no two of many share even a short prefix, as a counter's would.
* A receiver that attaches by name to another client's dynamic address, in
  any spelling the router accepts (or to a temp name nobody has been given
  yet), is refused with amqp:unauthorized-access, and gets nothing of what
  is sent there; qdrouterd 1.19 let it take half the replies (docs/compat.md).
* A receiver on another router that attaches by name to `_topo/0/<that
  router>/...` is refused as well: as a consumer of the router address it
  would take everything its own router forwards to that router.
* /metrics (unauthenticated) never names a dynamic address: their counters
  are summed under class="dynamic", address="$dynamic", and
  junction_dynamic_addresses counts them.
* Senders are not affected: a reply from another connection, another
  router of a mesh or an interior above an edge reaches the dynamic address.
"""
import re
import unittest

from proton import Message
from proton.reactor import AtMostOnce
from proton.utils import BlockingConnection, LinkDetached

from harness import SLOW, Router, RouterTestCase
from mesh import Mesh
from test_edge import interior, query
from test_edge_wire import edge_config
from test_http_metrics import MetricsCase, parse, plain

TIMEOUT = 10 * SLOW
B64URL = r"[A-Za-z0-9_-]{22}"


class DynamicCase(RouterTestCase):
    def connect(self, url):
        c = BlockingConnection(url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        return c

    def dynamic(self, conn):
        """A dynamic receiver on conn and its address."""
        r = conn.create_receiver(None, dynamic=True, credit=50)
        return r, r.link.remote_source.address

    def assert_refused(self, conn, address):
        """A receiver attached by name to address is refused as unauthorized."""
        with self.assertRaises(LinkDetached, msg=address) as cm:
            conn.create_receiver(address, credit=10)
        cond = cm.exception.link.remote_condition
        self.assertIsNotNone(cond, address)
        self.assertEqual(cond.name, "amqp:unauthorized-access", address)
        self.assertTrue(cond.description, address)

    def send(self, conn, address, messages):
        """Send messages (or bodies) pre-settled on a new sender of conn
        (address None: anonymous), wait until all went out, detach."""
        snd = conn.create_sender(address, options=AtMostOnce())
        for m in messages:
            snd.link.send(m if isinstance(m, Message) else Message(body=m))
        conn.wait(lambda: snd.link.queued == 0, msg="sending to %s" % address)
        snd.close()  # the detach's round trip: the transfers before it went out

    def receive(self, rcv, n):
        got = []
        for _ in range(n):
            m = rcv.receive(timeout=TIMEOUT)
            got.append(m.body)
        return got

    def request_reply(self, service_conn, client_conn, client_rcv, reply_to, n=10):
        """A service on service_conn answers n requests from client_conn,
        whose replies go to reply_to: they all reach client_rcv."""
        svc_in = service_conn.create_receiver("svc.q", credit=n)
        self.send(client_conn, "svc.q",
                  [Message(body=i, reply_to=reply_to, correlation_id=i) for i in range(n)])
        replies = []
        for _ in range(n):
            m = svc_in.receive(timeout=TIMEOUT)
            replies.append(Message(address=m.reply_to, correlation_id=m.correlation_id,
                                   body="re:%s" % m.body))
        self.send(service_conn, None, replies)
        replies = {}
        for _ in range(n):
            m = client_rcv.receive(timeout=TIMEOUT)
            replies[m.correlation_id] = m.body
        self.assertEqual(replies, {i: "re:%d" % i for i in range(n)})


class OneRouter(DynamicCase):
    def test_dynamic_addresses_are_22_random_base64url_characters(self):
        r = self.start_router(router={"id": "Rtr"})
        c = self.connect(r.url)
        addrs = [self.dynamic(c)[1] for _ in range(40)]
        for a in addrs:
            self.assertRegex(a, r"^amqp:/_topo/0/Rtr/temp\." + B64URL + "$")
        names = [a[len("amqp:/_topo/0/Rtr/temp."):] for a in addrs]
        self.assertEqual(len(set(names)), len(names))
        # a counter's names share long prefixes (or suffixes); 48 random
        # bits collide among 40 names about once in 10^11 runs
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                self.assertNotEqual(names[i][:8], names[j][:8])
                self.assertNotEqual(names[i][-8:], names[j][-8:])

    def test_receiver_by_name_on_a_dynamic_address_is_refused_and_gets_nothing(self):
        r = self.start_router(router={"id": "Rtr"})
        owner_conn = self.connect(r.url)
        owner, addr = self.dynamic(owner_conn)
        tail = addr[len("amqp:/_topo/0/Rtr/"):]
        thief = self.connect(r.url)
        for spelling in (addr, "_topo/0/Rtr/" + tail, "/_topo/0/Rtr/" + tail,
                         "amqp:/_topo/all/Rtr/" + tail, "amqp://x/_topo/0/Rtr/" + tail,
                         "_local/" + tail, "_topo/0/Rtr/temp.AAAAAAAAAAAAAAAAAAAAAA"):
            self.assert_refused(thief, spelling)
        # the thief's connection is still open: senders from any connection,
        # the thief's included, reach the owner, every message
        self.send(thief, addr, range(10))
        self.send(self.connect(r.url), addr, range(10, 20))
        self.assertEqual(sorted(self.receive(owner, 20)), list(range(20)))
        # a look-alike outside the temp space attaches as usual
        thief.create_receiver("_topo/0/Rtr/tempest", credit=1).close()
        thief.create_receiver("temp.q", credit=1).close()
        # an anonymous sender's reply (request/reply) reaches it too
        self.request_reply(self.connect(r.url), owner_conn, owner, addr)


class TwoRouters(DynamicCase):
    def setUp(self):
        super().setUp()
        self.m = Mesh(self, ["A", "B"], [("A", "B", 1)]).start()

    def test_request_reply_across_the_mesh_reaches_the_dynamic_address(self):
        client = self.connect(self.m["A"].url)
        rcv, addr = self.dynamic(client)
        self.assertRegex(addr, r"^amqp:/_topo/0/A/temp\." + B64URL + "$")
        service = self.connect(self.m["B"].url)
        self.request_reply(service, client, rcv, addr)

    def test_receiver_on_another_router_by_name_is_refused_and_replies_still_arrive(self):
        client = self.connect(self.m["A"].url)
        rcv, addr = self.dynamic(client)
        tail = addr[len("amqp:/_topo/0/A/"):]
        thief = self.connect(self.m["B"].url)
        # as a consumer of router A's address on B it would take all of B's
        # traffic to A: these replies, A's $management requests
        for spelling in (addr, "_topo/0/A/" + tail, "_topo/0/A/$management",
                         "_topo/0/A/anything", "_topo/1/x"):
            self.assert_refused(thief, spelling)
        self.send(thief, addr, range(10))
        self.assertEqual(sorted(self.receive(rcv, 10)), list(range(10)))


class EdgeRouter(DynamicCase):
    def test_edge_dynamic_address_is_random_refused_by_name_and_reached_from_above(self):
        inter, edge_port = interior(self, "I1")
        edge = Router(self.workdir, name="E1", config=edge_config(edge_port))
        edge.start()
        self.routers.append(edge)
        self.addCleanup(self._stop_router, edge)
        edge.wait_ready()
        self.wait_for("the edge's uplink",
                      lambda: any(c.get("role") == "edge"
                                  for c in query(inter.url, "connection", ["role"])))
        client = self.connect(edge.url)
        rcv, addr = self.dynamic(client)
        self.assertRegex(addr, r"^amqp:/_edge/E1/temp\." + B64URL + "$")
        tail = addr[len("amqp:/_edge/E1/"):]
        thief_edge = self.connect(edge.url)
        for spelling in (addr, "_edge/E1/" + tail, "_local/" + tail,
                         "_topo/0/I1/anything"):
            self.assert_refused(thief_edge, spelling)
        thief_inter = self.connect(inter.url)
        self.assert_refused(thief_inter, addr)
        # a service on the interior answers; replies come down to the edge
        self.request_reply(self.connect(inter.url), client, rcv, addr)


class Metrics(MetricsCase, DynamicCase):
    def test_metrics_sum_dynamic_addresses_under_one_label_and_never_name_them(self):
        r, m, base = self.http_router()
        owners = []
        for _ in range(3):
            rcv, addr = self.dynamic(self.connect(r.url))
            owners.append((rcv, addr))
        sender = self.connect(r.url)
        for rcv, addr in owners:
            self.send(sender, addr, range(5))
            self.assertEqual(self.receive(rcv, 5), list(range(5)))
        text = self.scrape(base + "/metrics")
        self.assertNotIn("temp.", text)
        for _, addr in owners:
            self.assertNotIn(addr.rsplit(".", 1)[1], text)
        samples = parse(text)
        # these three and management's own reply address
        self.assertGreaterEqual(plain(samples, "junction_dynamic_addresses"), 3)
        dyn = {"class": "dynamic", "address": "$dynamic"}
        self.assertGreaterEqual(
            plain(samples, "junction_address_deliveries_egress_total", **dyn), 15)
        self.assertGreaterEqual(
            plain(samples, "junction_address_deliveries_ingress_total", **dyn), 15)
        self.promtool(text)


if __name__ == "__main__":
    unittest.main()
