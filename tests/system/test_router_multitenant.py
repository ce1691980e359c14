#!/usr/bin/python3
"""Tenant spaces: a listener with multiTenant (docs/design.md, "Tenant
spaces").

A client of such a listener whose Open names a host (the vhost) lives in
the space "<vhost>/": the mobile addresses it names are that vhost's, so
two tenants' "q" are two addresses, and a client of a plain listener
reaches a tenant's "q" as "<vhost>/q" (and the reverse). Checked here:

- one router: senders and receivers inside a tenant, isolation between
  tenants, plain <-> tenant both ways, an anonymous sender in a tenant
  (mobile addresses in its space, router addresses as they are), the
  attach answered with the client's own address, a link route matched and
  attached to its container with the address in the space, management's
  `tenant` column, an Open without a hostname (no space), a hostname
  that cannot name a space refused, and an x-opt-qd.to in the space sent
  to a tenant's receiver as the client names it (stripAnnotations no);
  a tenant's dynamic terminus link-routed by its node properties'
  x-opt-qd.address reaches the container with that address in the space;
- two routers: a tenant's targeted and anonymous messages cross the mesh
  to the same tenant on the other router (the next router routes by the
  address in the space, carried as x-opt-qd.to), and a plain client on one
  router reaches a tenant on the other; a tenant's dynamic receiver and
  sender link-routed to a container behind the other router (the attach
  that crosses the mesh names the address in the space in its node
  properties, which the next router routes it by);
- an edge router under an interior: a tenant's messages go up and down the
  edge connection in its space.

Real junctiond processes and proton clients on 127.0.0.1; every wait
bounded.
"""
import unittest

from proton import Message
from proton.reactor import Container
from proton import ConnectionException, symbol
from proton.utils import BlockingConnection, LinkDetached

from harness import (SLOW, Recv, RouterTestCase, Send, Traffic, conf_section, container_listener,
                     free_port)
from mesh import Mesh
from test_router_conn_linkroute import ServiceClient
from test_router_entities import Manager
from test_router_linkroute_dynamic_detach import DynamicSource, DynamicTarget

TIMEOUT = 10 * SLOW
CONNECTION = "org.apache.qpid.dispatch.connection"


def tenant_listener(port):
    return conf_section("listener", {"host": "127.0.0.1", "port": port, "role": "normal",
                                     "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no",
                                     "multiTenant": "yes"})


def at(port, vhost=None):
    """A client url for Traffic: "amqp://127.0.0.1:PORT", with "|VHOST" when
    the Open is to name that host (TenantTraffic splits it off)."""
    url = "amqp://127.0.0.1:%d" % port
    return url + "|" + vhost if vhost is not None else url


class TenantTraffic(Traffic):
    """Traffic whose clients may name a vhost in their Open (see at())."""

    def connect(self, url, **kw):
        if "|" in url:
            url, kw["virtual_host"] = url.split("|", 1)
        return super().connect(url, **kw)


def blocking(url, vhost, container_id="jn-tenant-test"):
    """A BlockingConnection whose Open names vhost ("" : no hostname) and
    container_id."""
    container = Container()
    container.container_id = container_id
    return BlockingConnection(url, timeout=TIMEOUT, container=container, virtual_host=vhost)


def bodies(recv):
    return sorted(m.body for m in recv.messages)


def msgs(n, address=None, tag="m"):
    return [Message(body="%s-%d" % (tag, i), address=address) for i in range(n)]


class TenantDynamic:
    """A dynamic-link-route scenario (test_router_linkroute_dynamic_detach)
    whose client names vhost in its Open; the container (container_id)
    connects first, then ready() is called (it may wait for the mesh to
    learn the container's link routes), then the client connects."""

    def setup_tenant(self, vhost, container_id, ready):
        self.vhost, self.container_id, self.ready = vhost, container_id, ready
        return self

    def on_connection_opened(self, event):
        if event.connection == self.container_conn:
            self.ready()
            self.client_conn = event.container.connect(self.client_url, allowed_mechs="ANONYMOUS",
                                                       virtual_host=self.vhost)
        elif event.connection == self.client_conn:
            self.client_starts(event)

    def run(self):
        c = Container(self)
        c.container_id = self.container_id
        c.run()
        return self


class TenantDynamicSource(TenantDynamic, DynamicSource):
    pass


class TenantDynamicTarget(TenantDynamic, DynamicTarget):
    pass


class OneRouter(RouterTestCase):

    def setUp(self):
        super().setUp()
        self.tport = free_port()
        extra = tenant_listener(self.tport) + container_listener()
        for d in ("in", "out"):
            extra += conf_section("linkRoute", {"prefix": "ta/lr", "direction": d,
                                                "containerId": "LRC"})
        self.r = self.start_router(extra=extra)
        self.plain = self.r.port

    def run_traffic(self, receivers, senders, expect):
        return self.run_scenario(TenantTraffic(self.r, receivers, senders, expect))

    def test_tenant_sender_reaches_only_its_own_tenants_receiver(self):
        mine = Recv("q1", url=at(self.tport, "ta"))
        other = Recv("q1", url=at(self.tport, "tb"))
        plain = Recv("q1", url=at(self.plain))
        self.run_traffic([mine, other, plain], [Send("q1", msgs(10), url=at(self.tport, "ta"))],
                         10)
        self.assertEqual(len(mine.messages), 10)
        self.assertEqual((other.messages, plain.messages), ([], []))

    def test_plain_client_reaches_a_tenant_address_and_the_reverse(self):
        tenant_rx = Recv("q2", url=at(self.tport, "ta"))
        plain_rx = Recv("ta/q3", url=at(self.plain))
        self.run_traffic([tenant_rx, plain_rx],
                         [Send("ta/q2", msgs(5, tag="p"), url=at(self.plain)),
                          Send("q3", msgs(5, tag="t"), url=at(self.tport, "ta"))], 10)
        self.assertEqual(bodies(tenant_rx), ["p-%d" % i for i in range(5)])
        self.assertEqual(bodies(plain_rx), ["t-%d" % i for i in range(5)])

    def test_anonymous_sender_in_a_tenant_sends_in_its_space(self):
        tenant_rx = Recv("q4", url=at(self.tport, "ta"))
        other_rx = Recv("q4", url=at(self.tport, "tb"))
        plain_rx = Recv("ta/q5", url=at(self.plain))
        local_rx = Recv("_local/q6", url=at(self.plain))
        sent = msgs(4, "q4", "a") + msgs(3, "q5", "b") + msgs(2, "_local/q6", "c")
        self.run_traffic([tenant_rx, other_rx, plain_rx, local_rx],
                         [Send(None, sent, url=at(self.tport, "ta"))], 9)
        self.assertEqual(bodies(tenant_rx), ["a-%d" % i for i in range(4)])
        self.assertEqual(other_rx.messages, [])
        self.assertEqual(bodies(plain_rx), ["b-%d" % i for i in range(3)])
        # a router address (_local/) is the router's, not the tenant's
        self.assertEqual(bodies(local_rx), ["c-%d" % i for i in range(2)])

    def test_attach_is_answered_with_the_clients_own_address(self):
        c = blocking(at(self.tport), "ta")
        try:
            rx = c.create_receiver("q7")
            tx = c.create_sender("q7")
            self.assertEqual(rx.link.remote_source.address, "q7")
            self.assertEqual(tx.link.remote_target.address, "q7")
            rows = Manager(self.r.url).query("org.apache.qpid.dispatch.router.address",
                                             ["name"])
            names = {r["name"] for r in rows}
            self.assertIn("M0ta/q7", names)  # bound in the space
            self.assertNotIn("M0q7", names)
        finally:
            c.close()

    def test_link_route_matches_the_address_in_the_space(self):
        svc = ServiceClient(self.r.container_url, "LRC").start()
        self.addCleanup(svc.stop)
        c = blocking(at(self.tport), "ta")
        try:
            tx = c.create_sender("lr.orders")
            for i in range(3):
                tx.send(Message(body="o-%d" % i), timeout=TIMEOUT)  # accepted by the container
        finally:
            c.close()
        self.assertEqual(svc.got, [("ta/lr.orders", "o-%d" % i) for i in range(3)])

    def test_dynamic_link_route_names_the_address_in_the_space_to_the_container(self):
        s = TenantDynamicSource(at(self.tport), self.r.container_url, "lr.dyn")
        s.setup_tenant("ta", "LRC", lambda: None).run()
        self.assertIsNone(s.error)
        self.assertEqual(s.seen, (True, None, {"x-opt-qd.address": "ta/lr.dyn"}))
        self.assertEqual(s.answered, "made-by-the-container")

    def test_management_shows_the_tenant_of_each_connection(self):
        tenant = blocking(at(self.tport), "ta", "tenant-client")
        blank = blocking(at(self.tport), "", "blank-client")
        plain = blocking(at(self.plain), "tb", "plain-client")
        try:
            rows = Manager(self.r.url).query(CONNECTION, ["container", "tenant"])
            got = {r["container"]: r["tenant"] for r in rows}
            self.assertEqual(got["tenant-client"], "ta/")
            self.assertIsNone(got["blank-client"])  # no hostname: no space
            self.assertIsNone(got["plain-client"])  # not a multiTenant listener
        finally:
            for c in (tenant, blank, plain):
                c.close()

    def test_open_without_hostname_names_addresses_as_a_plain_client(self):
        rx = Recv("q8", url=at(self.plain))
        self.run_traffic([rx], [Send("q8", msgs(3), url=at(self.tport, ""))], 3)
        self.assertEqual(len(rx.messages), 3)

    def test_hostname_that_cannot_name_a_space_is_refused(self):
        for host in ("_local", "_topo", "amqp:"):
            with self.assertRaises((ConnectionException, LinkDetached), msg=host) as cm:
                c = blocking(at(self.tport), host)
                try:
                    c.create_receiver("q9")
                finally:
                    c.close()
            self.assertIn("tenant space", str(cm.exception), host)
        self.assertIn("cannot name a tenant space", self.r.log())


class TwoRouters(RouterTestCase):

    def setUp(self):
        super().setUp()
        self.tports = {"A": free_port(), "B": free_port()}
        self.m = Mesh(self, ["A", "B"], [("A", "B", 1)],
                      extra={n: tenant_listener(p) for n, p in self.tports.items()}).start()

    def tenant(self, name, vhost="ta"):
        return at(self.tports[name], vhost)

    def plain(self, name):
        return at(self.m[name].port)

    def cross(self, receivers, senders, expect, keys, holder):
        """Receivers attach; once every router knows that holder has a
        destination for each of keys, the senders send."""
        t = TenantTraffic(None, receivers, senders, expect)
        t.receiver_opened = lambda r, link: self._opened(t, r, link, keys, holder)
        return self.run_scenario(t)

    def _opened(self, t, r, link, keys, holder):
        r.opened = True
        link.flow(r.credit)
        if not t._senders_started and all(x.opened for x in t.receivers):
            for key in keys:
                self.m.wait_address(key, {holder})
            t._start_senders()

    def test_tenant_targeted_and_anonymous_messages_cross_the_mesh(self):
        rx = Recv("q", url=self.tenant("B"))
        other = Recv("q", url=self.tenant("B", "tb"))
        sent = [Send("q", msgs(5, tag="t"), url=self.tenant("A")),
                Send(None, msgs(5, "q", "a"), url=self.tenant("A"))]
        self.cross([rx, other], sent, 10, ["M0ta/q"], "B")
        self.assertEqual(bodies(rx), ["a-%d" % i for i in range(5)] +
                         ["t-%d" % i for i in range(5)])
        self.assertEqual(other.messages, [])

    def test_plain_client_reaches_a_tenant_on_another_router_and_back(self):
        tenant_rx = Recv("q2", url=self.tenant("B"))
        plain_rx = Recv("ta/q3", url=self.plain("B"))
        self.cross([tenant_rx, plain_rx],
                   [Send("ta/q2", msgs(4, tag="p"), url=self.plain("A")),
                    Send(None, msgs(4, "q3", "t"), url=self.tenant("A"))], 8,
                   ["M0ta/q2", "M0ta/q3"], "B")
        self.assertEqual(bodies(tenant_rx), ["p-%d" % i for i in range(4)])
        self.assertEqual(bodies(plain_rx), ["t-%d" % i for i in range(4)])


class TwoRoutersLinkRoute(RouterTestCase):
    """A link route's container on router B; a tenant's client on router
    A. A dynamic terminus is link-routed by its node properties'
    x-opt-qd.address, taken in the tenant's space on A: the attach A sends
    B must name that address (B knows nothing of the tenant's connection),
    or B finds no route and refuses it."""

    def setUp(self):
        super().setUp()
        self.tport = free_port()
        routes = "".join(conf_section("linkRoute", {"prefix": "ta/lr", "direction": d,
                                                    "containerId": "broker"})
                         for d in ("in", "out"))
        self.m = Mesh(self, ["A", "B"], [("A", "B", 1)],
                      extra={"A": tenant_listener(self.tport) + routes,
                             "B": container_listener() + routes}).start()

    def known_on_a(self, key):
        return lambda: self.m.wait_address(key, {"B"})

    def test_tenant_dynamic_receiver_is_link_routed_across_the_mesh(self):
        s = TenantDynamicSource(at(self.tport), self.m["B"].container_url, "lr.dyn")
        s.setup_tenant("ta", "broker", self.known_on_a("Dta/lr")).run()
        self.assertIsNone(s.error)
        self.assertEqual(s.seen, (True, None, {"x-opt-qd.address": "ta/lr.dyn"}))
        self.assertEqual(s.answered, "made-by-the-container")

    def test_tenant_dynamic_sender_is_link_routed_across_the_mesh(self):
        s = TenantDynamicTarget(at(self.tport), self.m["B"].container_url, "lr.dyn2")
        s.setup_tenant("ta", "broker", self.known_on_a("Cta/lr")).run()
        self.assertIsNone(s.error)
        self.assertEqual(s.seen, (True, None, {"x-opt-qd.address": "ta/lr.dyn2"}))
        self.assertEqual(s.answered, "made-by-the-container")


class AnnotationsToTheClient(RouterTestCase):
    """Listeners with stripAnnotations no: a tenant's receiver is sent the
    router annotations, and an x-opt-qd.to in its space shows the address
    as the client names it."""

    def test_to_override_in_the_space_is_sent_as_the_tenant_names_it(self):
        tport = free_port()
        listener = conf_section("listener", {"host": "127.0.0.1", "port": tport,
                                             "role": "normal", "saslMechanisms": "ANONYMOUS",
                                             "authenticatePeer": "no", "multiTenant": "yes",
                                             "stripAnnotations": "no"})
        r = self.start_router(listener={"stripAnnotations": "no"}, extra=listener)
        rx = Recv("q", url=at(tport, "ta"))
        out = Recv("elsewhere", url=at(r.port))
        to = symbol("x-opt-qd.to")
        sent = [Message(body="via-override", address="elsewhere", annotations={to: "ta/q"})]
        self.run_scenario(TenantTraffic(r, [rx, out], [Send(None, sent, url=at(r.port))], 1))
        self.assertEqual([m.body for m in rx.messages], ["via-override"])
        self.assertEqual(rx.messages[0].annotations.get(to), "q")
        self.assertEqual(out.messages, [])


class EdgeAndInterior(RouterTestCase):
    """An edge router under an interior, both with a multiTenant listener:
    a tenant's messages go up and down the edge connection in its space."""

    def setUp(self):
        super().setUp()
        edge_port, self.tports = free_port(), {"A": free_port(), "E": free_port()}
        common = {"saslMechanisms": "ANONYMOUS", "authenticatePeer": "no", "host": "127.0.0.1"}
        log = conf_section("log", {"module": "DEFAULT", "enable": "info+",
                                   "includeTimestamp": "yes"})
        a = (conf_section("router", {"mode": "interior", "id": "A", "workerThreads": 2}) +
             conf_section("listener", dict(common, port="{port}", role="normal")) +
             conf_section("listener", dict(common, port=edge_port, role="edge")) +
             tenant_listener(self.tports["A"]) + log)
        e = (conf_section("router", {"mode": "edge", "id": "E", "workerThreads": 2}) +
             conf_section("listener", dict(common, port="{port}", role="normal")) +
             conf_section("connector", {"name": "up", "host": "127.0.0.1", "port": edge_port,
                                        "role": "edge", "saslMechanisms": "ANONYMOUS"}) +
             tenant_listener(self.tports["E"]) + log)
        self.a = self.start_router(config=a)
        self.e = self.start_router(config=e)
        self.wait_for("edge E attached", lambda: "Edge router 'E' attached" in self.a.log())

    def test_tenant_messages_from_an_edge_reach_the_tenant_on_the_interior(self):
        rx = Recv("q", url=at(self.tports["A"], "ta"))
        other = Recv("q", url=at(self.tports["A"], "tb"))
        sent = [Send("q", msgs(4, tag="t"), url=at(self.tports["E"], "ta")),
                Send(None, msgs(4, "q", "a"), url=at(self.tports["E"], "ta"))]
        self.run_scenario(TenantTraffic(None, [rx, other], sent, 8))
        self.assertEqual(bodies(rx), ["a-%d" % i for i in range(4)] +
                         ["t-%d" % i for i in range(4)])
        self.assertEqual(other.messages, [])

    def test_tenant_messages_from_the_interior_reach_the_tenant_on_an_edge(self):
        rx = Recv("r", url=at(self.tports["E"], "ta"))
        plain_rx = Recv("ta/s", url=self.e.url)
        sent = [Send("r", msgs(4, tag="t"), url=at(self.tports["A"], "ta")),
                Send("s", msgs(3, tag="u"), url=at(self.tports["A"], "ta"))]
        self.run_scenario(TenantTraffic(None, [rx, plain_rx], sent, 7))
        self.assertEqual(bodies(rx), ["t-%d" % i for i in range(4)])
        self.assertEqual(bodies(plain_rx), ["u-%d" % i for i in range(3)])


if __name__ == "__main__":
    unittest.main()
