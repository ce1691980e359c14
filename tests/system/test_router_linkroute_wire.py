#!/usr/bin/python3
"""Link routes, what passes and which route is taken (issue 16;
docs/design.md, "Link routes and auto-links").

- Octets and tags: a link-routed delivery passes octet for octet, every
  section as the sender wrote it (delivery and message annotations
  included, even keys that look like the router's), with the sender's
  delivery tag, both ways, through one router and across two
  (docs/protocol.md, "Link routes, auto-links and phases on the wire";
  as 1.19 does).
- Duplicate and overlapping link routes: two linkRoute entities with the
  same prefix (or pattern) and direction coexist, as in 1.19 (attaches
  take turns between their containers); deleting one leaves the other
  routing; of overlapping prefixes the more specific one wins.
- Multicast fallback (enableFallback on a multicast address), as 1.19.

The container is a small proton peer (a "fake broker") that records the
raw octets and tag of every transfer it gets and sends raw octets with the
tags it is told to, so what the router changed is seen exactly. Real
junctiond processes on 127.0.0.1; every wait bounded.
"""
import threading
import time

from proton import Delivery, Endpoint, Handler, Message, symbol
from proton.reactor import Container
from proton.utils import BlockingConnection

from harness import SLOW, Router, RouterTestCase, conf_section, free_port
from test_router_entities import Manager

TIMEOUT = 20 * SLOW


def raw_message(n):
    """An encoded message with every section a sender may write before the
    body: header, delivery annotations, message annotations (a user key
    and keys the router uses between routers), properties, application
    properties."""
    m = Message(body="body-%d" % n, durable=True, priority=7, subject="s%d" % n,
                properties={"p": n}, instructions={"x-opt-da": "da-%d" % n},
                annotations={"x-opt-user": "u%d" % n, "x-opt-qd.trace": ["0/elsewhere"],
                             "x-opt-qd.ingress": "0/elsewhere"})
    m.id = "id-%d" % n
    return m.encode()


class FakeBroker(Handler):
    """A route container on its own reactor thread. Accepts every link;
    records each attach as (link name, address) in `attached` and each
    transfer it receives as (target address, tag, octets) in `got`, and
    accepts it; on a link it sends on (the router's receiver),
    sends the (tag, octets) pairs queued for that source address in
    `outbox`. `fail_attach`: addresses whose attach it refuses."""

    def __init__(self, container_id="fake-broker"):
        super().__init__()
        self.port = free_port()
        self.container_id = container_id
        self.got = []
        self.outbox = {}
        self.attached = []
        self.lock = threading.Lock()
        self.reactor = Container(self)
        self.reactor.container_id = container_id
        self.thread = threading.Thread(target=self.reactor.run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.reactor.stop()
        self.thread.join(10)

    def on_reactor_init(self, event):
        self.acceptor = event.reactor.listen("127.0.0.1:%d" % self.port)

    def on_connection_init(self, event):
        event.connection.container = self.container_id

    def on_connection_remote_open(self, event):
        event.connection.container = self.container_id
        event.connection.open()

    def on_session_remote_open(self, event):
        event.session.open()

    def on_link_remote_open(self, event):
        link = event.link
        link.source.copy(link.remote_source)
        link.target.copy(link.remote_target)
        link.open()
        with self.lock:
            self.attached.append((link.name, link.remote_target.address if link.is_receiver
                                  else link.remote_source.address))
        if link.is_receiver:
            link.flow(100)
        else:
            self._pump(link)

    def on_link_flow(self, event):
        if event.link.is_sender:
            self._pump(event.link)

    def _pump(self, link):
        with self.lock:
            queue = self.outbox.get(link.remote_source.address, [])
            while link.credit > 0 and queue:
                tag, data = queue.pop(0)
                link.delivery(tag)
                link.send(data)
                link.advance()

    def on_delivery(self, event):
        link, dlv = event.link, event.delivery
        if link.is_receiver:
            if dlv.partial:
                return
            data = link.recv(dlv.pending)
            with self.lock:
                self.got.append((link.remote_target.address, dlv.tag, data))
            dlv.update(Delivery.ACCEPTED)
            dlv.settle()
            link.flow(1)
        elif dlv.remote_state or dlv.settled:
            dlv.settle()


class RawClient(Handler):
    """One connection: a sender of (tag, octets) items, recording each
    outcome, or a receiver recording (tag, octets) of `count` transfers.
    Stops when done or at the timeout (`timed_out`)."""

    def __init__(self, url, address, send=(), count=0, timeout=TIMEOUT):
        super().__init__()
        self.url, self.address = url, address
        self.items = list(send)
        self.count = count
        self.outcomes = []
        self.got = []
        self.error = None
        self.timed_out = False
        self.timeout = timeout

    def run(self):
        Container(self).run()
        return self

    def on_reactor_init(self, event):
        c = event.reactor
        self.conn = c.connect(self.url, allowed_mechs="ANONYMOUS")
        if self.items:
            self.link = c.create_sender(self.conn, self.address)
        else:
            self.link = c.create_receiver(self.conn, self.address)
            self.link.flow(self.count)
        self.link_name, self.container_id = self.link.name, self.conn.container
        self.timer = c.schedule(self.timeout, self)

    def on_timer_task(self, event):
        self.timed_out = True
        self.conn.close()

    def _finish(self):
        self.timer.cancel()
        self.conn.close()

    def on_link_flow(self, event):
        link = event.link
        while link.is_sender and link.credit > 0 and self.items:
            tag, data = self.items.pop(0)
            link.delivery(tag)
            link.send(data)
            link.advance()

    def on_delivery(self, event):
        link, dlv = event.link, event.delivery
        if link.is_sender:
            if dlv.settled or dlv.remote_state:
                self.outcomes.append(dlv.remote_state)
                dlv.settle()
                if not self.items and len(self.outcomes) == self.sent:
                    self._finish()
            return
        if dlv.partial:
            return
        self.got.append((dlv.tag, link.recv(dlv.pending)))
        dlv.update(Delivery.ACCEPTED)
        dlv.settle()
        if len(self.got) >= self.count:
            self._finish()

    def on_link_remote_close(self, event):
        c = event.link.remote_condition
        self.error = c.name if c else "closed"
        self._finish()

    def on_transport_error(self, event):
        pass


def send_raw(url, address, items):
    c = RawClient(url, address, send=items)
    c.sent = len(items)
    return c.run()


def link_route(prefix, direction, name=None, connection="fake"):
    return conf_section("linkRoute", {"name": name, "prefix": prefix, "direction": direction,
                                      "connection": connection})


def fake_connector(broker, name="fake"):
    return conf_section("connector", {"name": name, "host": "127.0.0.1", "port": broker.port,
                                      "role": "route-container", "saslMechanisms": "ANONYMOUS"})


def config(name, mode="standalone", extra="", ir_listen=None, ir_connect=None):
    text = conf_section("router", {"mode": mode, "id": name, "workerThreads": 2})
    text += conf_section("listener", {"host": "127.0.0.1", "port": "{port}", "role": "normal",
                                      "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"})
    if ir_listen:
        text += conf_section("listener", {"host": "127.0.0.1", "port": ir_listen,
                                          "role": "inter-router", "saslMechanisms": "ANONYMOUS",
                                          "authenticatePeer": "no"})
    if ir_connect:
        text += conf_section("connector", {"name": "ir", "host": "127.0.0.1", "port": ir_connect,
                                           "role": "inter-router", "saslMechanisms": "ANONYMOUS"})
    text += conf_section("log", {"module": "DEFAULT", "enable": "info+"})
    return text + extra


class LinkRouteCase(RouterTestCase):

    def start_config(self, name, text):
        r = Router(self.workdir, name=name, config=text)
        r.start()
        self.addCleanup(self._stop_router, r)
        self.routers.append(r)
        r.wait_ready()
        return r

    def fake(self, container_id="fake-broker"):
        b = FakeBroker(container_id).start()
        self.addCleanup(b.stop)
        return b

    def address_keys(self, router):
        m = Manager(router.url)
        try:
            return {x["name"] for x in m.query("org.apache.qpid.dispatch.router.address",
                                               ["name"])}
        finally:
            m.close()

    def wait_keys(self, router, keys, timeout=30.0):
        """Until router's address table holds keys (from the mesh)."""
        self.wait_for("keys %s on %s" % (keys, router.name),
                      lambda: set(keys) <= self.address_keys(router), timeout)

    def wait_log(self, router, text, timeout=30.0):
        self.wait_for("'%s' in %s's log" % (text, router.name), lambda: text in router.log(),
                      timeout)


class PassThroughTest(LinkRouteCase):

    def check_both_ways(self, client_router, broker):
        items = [("tag-%d" % i, raw_message(i)) for i in range(5)]
        s = send_raw(client_router.url, "lr.in.q", items)
        self.assertFalse(s.timed_out, self.logs())
        self.assertIsNone(s.error)
        self.assertEqual(s.outcomes, [Delivery.ACCEPTED] * len(items))
        with broker.lock:
            got = list(broker.got)
        # each transfer at the container is the client's, octet for octet,
        # with the client's tag
        self.assertEqual([(t, d) for _, t, d in got], items)
        self.assertEqual({a for a, _, _ in got}, {"lr.in.q"})
        out = [("broker-tag-%d" % i, raw_message(100 + i)) for i in range(5)]
        with broker.lock:
            broker.outbox["lr.out.q"] = list(out)
        r = RawClient(client_router.url, "lr.out.q", count=len(out)).run()
        self.assertFalse(r.timed_out, self.logs())
        self.assertEqual(r.got, out)
        # nothing the router would have added is there
        for _, data in r.got:
            m = Message()
            m.decode(data)
            self.assertEqual(m.annotations["x-opt-qd.trace"], ["0/elsewhere"])

    def test_octets_and_tags_through_one_router(self):
        b = self.fake()
        r = self.start_config("R", config("R", extra=fake_connector(b) +
                                          link_route("lr", "in") + link_route("lr", "out")))
        self.wait_log(r, "Connection Opened: dir=out")
        self.check_both_ways(r, b)

    def test_link_routes_in_management(self):
        """A link route's address is listed from its creation (as 1.19):
        router.address has its key, distribution linkBalanced, with the
        number of its containers connected; the container's connection has
        role route-container; a link-routed link's owningAddr is its
        terminus address as a mobile key, M0<address> (it is bound to no
        address)."""
        b = self.fake()
        r = self.start_config("R", config("R", extra=fake_connector(b) + link_route("lr", "in") +
                                          link_route("lr", "out") + link_route("nobody", "in",
                                                                               "n", "absent")))
        self.wait_log(r, "Connection Opened: dir=out")
        m = Manager(r.url)
        self.addCleanup(m.close)
        rows = {a["name"]: a for a in m.query("router.address",
                                              ["name", "distribution", "containerCount"])}
        for key, containers in (("Clr", 1), ("Dlr", 1), ("Cnobody", 0)):
            self.assertIn(key, rows)
            self.assertEqual((rows[key]["distribution"], rows[key]["containerCount"]),
                             ("linkBalanced", containers))
        roles = {c["container"]: c["role"] for c in m.query("connection", ["container", "role"])}
        self.assertEqual(roles["fake-broker"], "route-container")
        conn = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(conn.close)
        conn.create_receiver("lr.out.mgmt", credit=1)
        links = [x for x in m.query("router.link", ["owningAddr", "linkDir"])
                 if x["owningAddr"] == "M0lr.out.mgmt"]
        self.assertEqual(sorted(x["linkDir"] for x in links), ["in", "out"])

    def test_resumable_link_routes_refused_when_not_allowed(self):
        """router.allowResumableLinkRoute false (1.19): a link-routed
        attach whose terminus would outlive the link (expiry-policy never,
        or a timeout) is refused; others are routed."""
        from proton import Terminus
        from proton.reactor import DurableSubscription, LinkOption
        from proton.utils import LinkDetached

        class Timeout(LinkOption):
            def apply(self, link):
                link.target.timeout = 10

        b = self.fake()
        text = config("R", extra=fake_connector(b) + link_route("lr", "in") +
                      link_route("lr", "out")).replace(
            "router {\n", "router {\n    allowResumableLinkRoute: no\n", 1)
        r = self.start_config("R", text)
        self.wait_log(r, "Connection Opened: dir=out")
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        c.create_receiver("lr.plain", name="plain-rx")
        c.create_sender("lr.plain", name="plain-tx")
        for name, make in (("durable", lambda: c.create_receiver(
                "lr.d", name="durable", options=DurableSubscription())),
                           ("timeout", lambda: c.create_sender("lr.t", name="timeout",
                                                               options=Timeout()))):
            with self.subTest(name=name):
                with self.assertRaises(LinkDetached):
                    make()
        with b.lock:
            self.assertEqual(sorted(n for n, _ in b.attached), ["plain-rx", "plain-tx"])

    def test_octets_and_tags_across_two_routers(self):
        b = self.fake()
        ir = free_port()
        rb = self.start_config("B", config("B", "interior", fake_connector(b) +
                                           link_route("lr", "in") + link_route("lr", "out"),
                                           ir_listen=ir))
        ra = self.start_config("A", config("A", "interior", ir_connect=ir))
        self.wait_log(rb, "Connection Opened: dir=out")
        self.wait_keys(ra, ["Clr", "Dlr"])
        self.check_both_ways(ra, b)

    def test_pattern_link_route_across_two_routers(self):
        """A pattern link route of another router (its E/F key in the
        mesh) routes an attach here, as a prefix one does (as 1.19)."""
        b = self.fake()
        ir = free_port()
        pat = "".join(conf_section("linkRoute", {"pattern": "pat.*.q", "direction": d,
                                                 "connection": "fake"}) for d in ("in", "out"))
        rb = self.start_config("B", config("B", "interior", fake_connector(b) + pat,
                                           ir_listen=ir))
        ra = self.start_config("A", config("A", "interior", ir_connect=ir))
        self.wait_log(rb, "Connection Opened: dir=out")
        self.wait_keys(ra, ["Epat.*.q", "Fpat.*.q"])
        items = [("tag-%d" % i, raw_message(i)) for i in range(2)]
        s = send_raw(ra.url, "pat.x.q", items)
        self.assertFalse(s.timed_out, self.logs())
        self.assertEqual(s.outcomes, [Delivery.ACCEPTED] * 2)
        with b.lock:
            self.assertEqual([(a, t) for a, t, _ in b.got], [("pat.x.q", t) for t, _ in items])


LR = "org.apache.qpid.dispatch.router.config.linkRoute"


class DuplicateAndOverlapTest(LinkRouteCase):
    """Two link routes with the same prefix and direction coexist (1.19
    keeps both); of overlapping prefixes the more specific one decides."""

    def send_one(self, router, address, n=0):
        s = send_raw(router.url, address, [("t%d" % n, raw_message(n))])
        self.assertFalse(s.timed_out, self.logs())
        self.assertEqual(s.outcomes, [Delivery.ACCEPTED])

    def addresses_at(self, broker):
        with broker.lock:
            return [a for a, _, _ in broker.got]

    def delete(self, router, name):
        m = Manager(router.url)
        try:
            code, desc, _ = m.call({"operation": "DELETE", "type": LR, "name": name})
        finally:
            m.close()
        self.assertEqual(code, 204, desc)

    def test_same_prefix_two_containers_coexist(self):
        fa, fb = self.fake("fake-a"), self.fake("fake-b")
        r = self.start_config("R", config("R", extra=fake_connector(fa, "fa") +
                                          fake_connector(fb, "fb") +
                                          link_route("dup", "in", "dup1", "fa") +
                                          link_route("dup", "in", "dup2", "fb")))
        self.wait_for("both containers", lambda: r.log().count("Connection Opened: dir=out") == 2,
                      TIMEOUT)
        m = Manager(r.url)
        rows = m.query(LR, ["name", "prefix", "direction", "operStatus"])
        m.close()
        self.assertEqual(sorted((x["name"], x["prefix"], x["operStatus"]) for x in rows),
                         [("dup1", "dup", "active"), ("dup2", "dup", "active")])
        # attaches take turns between the two containers (1.19 rotates)
        self.send_one(r, "dup.q1")
        self.send_one(r, "dup.q2")
        self.assertEqual((self.addresses_at(fa), self.addresses_at(fb)),
                         (["dup.q1"], ["dup.q2"]))
        self.delete(r, "dup1")
        self.send_one(r, "dup.q3")  # the other still routes, and only it
        self.send_one(r, "dup.q4")
        self.assertEqual((self.addresses_at(fa), self.addresses_at(fb)),
                         (["dup.q1"], ["dup.q2", "dup.q3", "dup.q4"]))
        self.delete(r, "dup2")
        m = Manager(r.url)
        self.assertEqual(m.query(LR, ["name"]), [])
        m.close()

    def test_duplicate_keeps_the_mesh_key_until_the_last_goes(self):
        fa = self.fake("fake-a")
        ir = free_port()
        rb = self.start_config("B", config("B", "interior", fake_connector(fa, "fa") +
                                           link_route("dup", "in", "dup1", "fa") +
                                           conf_section("linkRoute", {
                                               "name": "dup2", "prefix": "dup",
                                               "direction": "in", "containerId": "fake-a"}),
                                           ir_listen=ir))
        ra = self.start_config("A", config("A", "interior", ir_connect=ir))
        self.wait_keys(ra, ["Cdup"])
        self.delete(rb, "dup1")
        # the key stays: dup2's container is still here. A differential
        # mobile-address update goes out within a second of a change, so
        # after three A would have lost the key if B had withdrawn it
        time.sleep(3)
        self.assertIn("Cdup", self.address_keys(ra))
        self.send_one(ra, "dup.q")
        self.assertEqual(self.addresses_at(fa), ["dup.q"])
        self.delete(rb, "dup2")
        self.wait_for("A to lose Cdup", lambda: "Cdup" not in self.address_keys(ra), TIMEOUT)

    def test_prefix_and_pattern_with_one_key_share_it(self):
        """prefix "pp" and pattern "pp.#" are two routes (two texts) that
        make one mesh key, Cpp: deleting either leaves the key advertised
        while the other's container is here; deleting both withdraws it."""
        fa = self.fake("fake-a")
        ir = free_port()
        rb = self.start_config("B", config("B", "interior", fake_connector(fa, "fa") +
                                           link_route("pp", "in", "by-prefix", "fa") +
                                           conf_section("linkRoute", {
                                               "name": "by-pattern", "pattern": "pp.#",
                                               "direction": "in", "containerId": "fake-a"}),
                                           ir_listen=ir))
        ra = self.start_config("A", config("A", "interior", ir_connect=ir))
        self.wait_keys(ra, ["Cpp"])
        self.delete(rb, "by-prefix")
        # as in the test above: three seconds is three mobile-address updates
        time.sleep(3)
        self.assertIn("Cpp", self.address_keys(ra))
        self.send_one(ra, "pp.q")
        self.assertEqual(self.addresses_at(fa), ["pp.q"])
        self.delete(rb, "by-pattern")
        self.wait_for("A to lose Cpp", lambda: "Cpp" not in self.address_keys(ra), TIMEOUT)

    def test_overlapping_prefixes_most_specific_wins(self):
        fa, fb = self.fake("fake-a"), self.fake("fake-b")
        r = self.start_config("R", config("R", extra=fake_connector(fa, "fa") +
                                          fake_connector(fb, "fb") +
                                          link_route("ov", "in", "short", "fa") +
                                          link_route("ov.deep", "in", "long", "fb")))
        self.wait_for("both containers", lambda: r.log().count("Connection Opened: dir=out") == 2,
                      TIMEOUT)
        for n, address in enumerate(["ov.deep.q", "ov.other", "ov.deepx", "ov.deep"]):
            self.send_one(r, address, n)
        self.assertEqual(self.addresses_at(fb), ["ov.deep.q", "ov.deep"])
        self.assertEqual(self.addresses_at(fa), ["ov.other", "ov.deepx"])


class McFallbackClient(Handler):
    """One connection: two receivers whose sources have the qd.fallback
    capability and `normal` plain receivers of `address`, then, once all
    are attached, a sender of n unsettled messages. Records the bodies each
    receiver got and the sender's outcomes; stops when every message has
    its outcome and the receivers that should have them have them."""

    def __init__(self, url, address, n, normal=0, timeout=TIMEOUT):
        super().__init__()
        self.url, self.address, self.n, self.normal = url, address, n, normal
        self.got = {}
        self.outcomes = []
        self.sent = 0
        self.timed_out = False
        self.timeout = timeout
        self.sender = None

    def run(self):
        Container(self).run()
        return self

    def on_reactor_init(self, event):
        c = event.reactor
        self.conn = c.connect(self.url, allowed_mechs="ANONYMOUS")
        self.receivers = []
        for i in range(2):
            fb = c.create_receiver(self.conn, self.address, name="fallback-%d" % i)
            fb.source.capabilities.put_object(symbol("qd.fallback"))
            self.receivers.append(fb)
        self.receivers += [c.create_receiver(self.conn, self.address, name="normal-%d" % i)
                           for i in range(self.normal)]
        for r in self.receivers:
            self.got[r.name] = []
            r.flow(self.n)
        self.timer = c.schedule(self.timeout, self)

    def on_timer_task(self, event):
        self.timed_out = True
        self.conn.close()

    def on_link_remote_open(self, event):
        if self.sender is None and all(r.state & Endpoint.REMOTE_ACTIVE for r in self.receivers):
            self.sender = event.reactor.create_sender(self.conn, self.address, name="sender")

    def on_link_flow(self, event):
        link = event.link
        while link.is_sender and link.credit > 0 and self.sent < self.n:
            link.delivery("d%d" % self.sent)
            link.send(Message(body="m%d" % self.sent).encode())
            link.advance()
            self.sent += 1

    def on_delivery(self, event):
        link, dlv = event.link, event.delivery
        if link.is_sender:
            if dlv.remote_state:
                self.outcomes.append(dlv.remote_state)
                dlv.settle()
        elif not dlv.partial:
            m = Message()
            m.decode(link.recv(dlv.pending))
            self.got[link.name].append(m.body)
            dlv.update(Delivery.ACCEPTED)
            dlv.settle()
        if self.normal == 0:
            ready = len(self.fallback_got()) == self.n
        else:
            ready = all(len(self.got["normal-%d" % i]) == self.n for i in range(self.normal))
        if len(self.outcomes) == self.n and ready:
            self.timer.cancel()
            self.conn.close()

    def fallback_got(self):
        return self.got["fallback-0"] + self.got["fallback-1"]

    def on_transport_error(self, event):
        pass


class MulticastFallbackTest(LinkRouteCase):
    """enableFallback on a multicast address, as 1.19 does: a message that
    finds no consumer of the address (here or on another router) goes to
    one fallback destination (the fallback is anycast, balanced, as 1.19
    makes it: two fallback receivers share the messages); with consumers,
    each consumer gets a copy and the fallback receivers none."""

    def test_multicast_fallback(self):
        r = self.start_config("R", config("R", extra=conf_section(
            "address", {"prefix": "mcf", "distribution": "multicast", "enableFallback": "yes"})))
        n = 20
        c = McFallbackClient(r.url, "mcf.a", n).run()
        self.assertFalse(c.timed_out, (c.got, c.outcomes, self.logs()))
        self.assertEqual(sorted(c.fallback_got()), sorted("m%d" % i for i in range(n)))
        self.assertEqual(c.outcomes, [Delivery.ACCEPTED] * n)
        c = McFallbackClient(r.url, "mcf.a", n, normal=2).run()
        self.assertFalse(c.timed_out, (c.got, c.outcomes, self.logs()))
        for name in ("normal-0", "normal-1"):
            self.assertEqual(c.got[name], ["m%d" % i for i in range(n)])
        self.assertEqual(c.fallback_got(), [])
        self.assertEqual(c.outcomes, [Delivery.ACCEPTED] * n)


# --------------------------------------------------------------------------
# Mixed mesh: a qdrouterd 1.19 interior router played on the wire


class Fake119(object):
    """Builds the emulated 1.19 router (test_mesh_wire.FakeRouter, written
    from docs/protocol.md, "The mesh") with link routes: it answers LSR with an LSU and
    MAR with an absolute MAU, may advertise link-route keys in a
    differential MAU (C/D keys, hint 4 link-balanced) once
    junctiond knows it, keeps every MAU junctiond sends, and plays the
    container (or the next router) for endpoint links junctiond attaches to
    it: it records their names, termini and sessions, records each
    transfer's tag and octets and accepts it, and sends queued (tag,
    octets) on the links it sends on. It also attaches endpoint links of
    its own, as a 1.19 router forwarding a client's attach."""

    @staticmethod
    def make(url, j_id, advertise=()):
        from test_mesh_wire import FakeRouter, sections, typed_map
        from proton import int32

        class F(FakeRouter):
            def __init__(self):
                super().__init__(url, j_id, None)
                self.timeout = 120 * SLOW
                self.known = False
                self.maus = []
                self.endpoint = []   # (name, source, target, is_sender, session is new)
                self.got = []        # (link name, tag, octets)
                self.outbox = {}     # source address -> [(tag, octets)]
                self.mine = {}       # name -> link attached by F
                self.outcomes = {}   # name -> [state]
                self.lock = threading.Lock()
                self.todo = []       # functions to run on the reactor thread
                self.advertised = False

            def start(self):
                super().start()
                self.ctl_ssn = self.ctl_in.session
                self.data_ssn = self.data_in.session

            def control(self, op, to, body):
                m = Message(address=to, properties={"opcode": op}, body=body)
                m.annotations = {symbol("x-opt-qd.ingress"): "0/F",
                                 symbol("x-opt-qd.trace"): ["0/F"]}
                if self.ctl_out.credit > 0:
                    self.ctl_out.send(m).settle()

            def mau_body(self, absolute):
                keys = list(advertise)
                body = {symbol("id"): "F", symbol("pv"): 1, symbol("area"): "0",
                        symbol("mobile_seq"): 1 if keys else 0}
                hints = [int32(4) for _ in keys]
                if absolute:
                    body[symbol("exist")] = keys
                    body[symbol("hints")] = hints
                else:
                    body[symbol("hints")] = hints
                    body[symbol("add")] = keys
                    body[symbol("del")] = []
                return body

            def on_timer_task(self, event):
                if self.over:
                    return
                # HELLO every half second, with one instance (a new one
                # would be a restart, which forgets F's addresses)
                self.control("HELLO", "amqp:/_local/qdhello",
                             {"id": "F", "pv": int32(1), "area": "0",
                              "instance": int32(self.instance), "seen": [j_id]})
                self.hello_sent += 1
                self.container.schedule(0.5, self)
                if self.known:
                    # RA: a MAU junctiond missed is asked for again (MAR)
                    self.control("RA", "amqp:/_topo/0/all/qdrouter",
                                 {"id": "F", "pv": int32(1), "area": "0",
                                  "instance": int32(self.instance), "ls_seq": int32(1),
                                  "mobile_seq": int32(1 if advertise else 0)})

            instance = int(time.time()) & 0x7fffffff

            def tick(self):
                with self.lock:
                    todo, self.todo = self.todo, []
                for fn in todo:
                    fn()

            def on_delivery(self, event):
                link, dlv = event.link, event.delivery
                if link.is_sender:
                    if link.name in self.mine and dlv.remote_state:
                        self.outcomes.setdefault(link.name, []).append(dlv.remote_state)
                        dlv.settle()
                    elif dlv.remote_state or dlv.settled:
                        dlv.settle()
                    return
                if dlv.partial:
                    return
                data = link.recv(dlv.pending)
                if link not in (self.ctl_in, self.data_in):
                    with self.lock:
                        self.got.append((link.name, dlv.tag, data))
                    dlv.update(Delivery.ACCEPTED)
                    dlv.settle()
                    link.flow(1)
                    return
                dlv.settle()
                link.flow(1)
                secs = sections(data)
                ap = typed_map(secs.get(0x74, ("map", []))[1])
                op = ap.get("opcode", (None, None, None))[2]
                body = typed_map(secs[0x77][1]) if 0x77 in secs and \
                    secs[0x77][0] == "map" else {}
                if op == "RA":
                    self.known = True
                    if advertise and not self.advertised:
                        self.advertised = True
                        self.control("MAU", "_topo/0/all/qdrouter.ma", self.mau_body(False))
                elif op == "LSR":
                    self.control("LSU", "amqp:/_topo/0/%s/qdrouter" % j_id,
                                 {"id": "F", "pv": int32(1), "area": "0", "ls_seq": int32(1),
                                  "ls": {"id": "F", "area": "0", "ls_seq": int32(1),
                                         "peers": {j_id: int32(1)}}})
                elif op == "MAR":
                    self.control("MAU", "amqp:/_topo/0/%s/qdrouter.ma" % j_id,
                                 self.mau_body(True))
                elif op == "MAU":
                    with self.lock:
                        self.maus.append(body)

            def on_link_remote_open(self, event):
                link = event.link
                super().on_link_remote_open(event)
                if link in (self.ctl_in, self.ctl_out, self.data_in) or \
                        link.name in self.mine:
                    return
                new_session = link.session not in (self.ctl_ssn, self.data_ssn)
                with self.lock:
                    self.endpoint.append((link.name, link.remote_source.address,
                                          link.remote_target.address, link.is_sender,
                                          new_session))
                link.source.copy(link.remote_source)
                link.target.copy(link.remote_target)
                link.open()
                if link.is_receiver:
                    link.flow(100)
                else:
                    self._pump(link)

            def on_link_flow(self, event):
                if event.link.is_sender and event.link not in (self.ctl_out,):
                    self._pump(event.link)

            def _pump(self, link):
                with self.lock:
                    address = link.remote_source.address if link.name not in self.mine \
                        else link.name
                    queue = self.outbox.get(address, [])
                    while link.credit > 0 and queue:
                        tag, data = queue.pop(0)
                        link.delivery(tag)
                        link.send(data)
                        link.advance()

            def attach(self, name, address, sender):
                """Attach an endpoint link as a 1.19 router forwarding a
                client's attach (its own session, like 1.19's link-route
                session). Reactor thread."""
                ssn = self.conn.session()
                ssn.open()
                link = ssn.sender(name) if sender else ssn.receiver(name)
                (link.target if sender else link.source).address = address
                self.mine[name] = link
                link.open()
                if not sender:
                    link.flow(100)

            def later(self, fn):
                with self.lock:
                    self.todo.append(fn)

            def on_link_error(self, event):
                if event.link.name in self.mine:
                    c = event.link.remote_condition
                    self.outcomes.setdefault(event.link.name, []).append(
                        "error " + (c.name if c else "?"))
                    return
                if event.link not in (self.ctl_in, self.ctl_out, self.data_in):
                    # a routed link whose client went: junctiond detaches
                    # it with qd:routed-link-lost, as 1.19 does
                    event.link.close()
                    return
                super().on_link_error(event)

            def progress(self):
                return "known %s, endpoint %s, got %d" % (self.known, self.endpoint,
                                                           len(self.got))

        return F()


class MixedMeshTest(LinkRouteCase):
    """Link routes across a mesh of junctiond and a qdrouterd 1.19 router
    (played on the wire, Fake119), both placements (docs/protocol.md,
    "Link routes, auto-links and phases on the wire")."""

    def run_fake(self, f):
        t = threading.Thread(target=f.run, daemon=True)
        t.start()

        def stop():
            f.later(f.done)
            t.join(30)
        self.addCleanup(stop)
        return t

    def test_container_behind_the_1_19_router(self):
        ir = free_port()
        j = self.start_config("J", config("J", "interior", ir_listen=ir))
        f = Fake119.make("amqp://127.0.0.1:%d" % ir, "J", advertise=("Clr", "Dlr"))
        self.run_fake(f)
        # J learns the keys from F's differential MAU, link-balanced
        self.wait_keys(j, ["Clr", "Dlr"])
        items = [("tag-%d" % i, raw_message(i)) for i in range(3)]
        s = send_raw(j.url, "lr.in.q", items)
        self.assertFalse(s.timed_out, (f.progress(), self.logs()))
        self.assertEqual(s.outcomes, [Delivery.ACCEPTED] * 3)
        with f.lock:
            endpoint = list(f.endpoint)
            got = list(f.got)
        # the forwarded attach: the client's link name made unique with its
        # container id, the client's target copied, on a session of its own
        self.assertEqual(len(endpoint), 1, endpoint)
        name, source, target, is_sender, new_session = endpoint[0]
        self.assertEqual(name, "%s@%s" % (s.link_name, s.container_id))
        self.assertEqual((target, is_sender, new_session), ("lr.in.q", False, True))
        # transfers cross J octet for octet, with the client's tags
        self.assertEqual([(t, d) for n, t, d in got], items)
        self.assertEqual({n for n, _, _ in got}, {name})
        # and back: the 1.19 router's container sends to a client of J
        out = [("f-tag-%d" % i, raw_message(50 + i)) for i in range(3)]
        with f.lock:
            f.outbox["lr.out.q"] = list(out)
        r = RawClient(j.url, "lr.out.q", count=3).run()
        self.assertFalse(r.timed_out, (f.error, f.progress(), self.logs()))
        self.assertEqual(r.got, out)
        with f.lock:
            names = [e for e in f.endpoint if e[1] == "lr.out.q"]
        self.assertEqual(len(names), 1, f.endpoint)
        self.assertEqual(names[0][0], "%s@%s" % (r.link_name, r.container_id))
        self.assertEqual((names[0][3], names[0][4]), (True, True))  # F sends, own session

    def test_container_behind_junction_attach_from_the_1_19_router(self):
        b = self.fake()
        ir = free_port()
        j = self.start_config("J", config("J", "interior", fake_connector(b) +
                                          link_route("lr", "in") + link_route("lr", "out"),
                                          ir_listen=ir))
        self.wait_log(j, "Connection Opened: dir=out")
        f = Fake119.make("amqp://127.0.0.1:%d" % ir, "J")
        self.run_fake(f)
        # J advertises its link routes to F: C/D keys, hint 4
        def keys():
            with f.lock:
                adds = [[v for _, v in m.get("add", (0, 0, []))[2]] for m in f.maus] + \
                    [[v for _, v in m.get("exist", (0, 0, []))[2]] for m in f.maus]
                return any("Clr" in a and "Dlr" in a for a in adds)
        self.wait_for("J's MAU with Clr and Dlr", keys, TIMEOUT)
        with f.lock:
            mau = [m for m in f.maus if "Clr" in [v for _, v in m.get("add", m.get(
                "exist", (0, 0, [])))[2]]][0]
        form = "add" if "add" in mau else "exist"
        adds = [v for _, v in mau[form][2]]
        hints = [v for _, v in mau["hints"][2]]
        self.assertEqual([hints[adds.index(k)] for k in ("Clr", "Dlr")], [4, 4])
        # F forwards a client's attach (name already unique, 10.6): J
        # routes it to the container under the same name
        items = [("ftag-%d" % i, raw_message(70 + i)) for i in range(3)]
        with f.lock:
            f.outbox["fwd-send@remote-client"] = list(items)
        f.later(lambda: f.attach("fwd-send@remote-client", "lr.from.f", True))
        self.wait_for("the container's three transfers", lambda: len(b.got) >= 3, TIMEOUT)
        with b.lock:
            got = list(b.got)
        self.assertEqual([(t, d) for _, t, d in got], items)
        self.assertEqual({a for a, _, _ in got}, {"lr.from.f"})
        self.wait_for("F's outcomes",
                      lambda: len(f.outcomes.get("fwd-send@remote-client", [])) >= 3, TIMEOUT)
        self.assertEqual(f.outcomes["fwd-send@remote-client"], [Delivery.ACCEPTED] * 3)
        with b.lock:
            self.assertIn(("fwd-send@remote-client", "lr.from.f"), b.attached)
        # the other way: J's container sends to F's forwarded receiver
        out = [("btag-%d" % i, raw_message(90 + i)) for i in range(3)]
        with b.lock:
            b.outbox["lr.to.f"] = list(out)
        f.later(lambda: f.attach("fwd-recv@remote-client", "lr.to.f", False))
        self.wait_for("F to get three", lambda: len([g for g in f.got
                                                     if g[0] == "fwd-recv@remote-client"]) >= 3,
                      TIMEOUT)
        with f.lock:
            back = [(t, d) for n, t, d in f.got if n == "fwd-recv@remote-client"]
        self.assertEqual(back, out)
        with b.lock:
            self.assertIn(("fwd-recv@remote-client", "lr.to.f"), b.attached)
        # an attach from a router for an address J routes by no link route
        # (its route went while the attach was on its way) is refused, not
        # bound to a mobile address that J would advertise back for as long
        # as the link lives
        f.later(lambda: f.attach("fwd-gone@remote-client", "gone.route", False))
        self.wait_for("the refusal", lambda: f.outcomes.get("fwd-gone@remote-client"), TIMEOUT)
        self.assertEqual(f.outcomes["fwd-gone@remote-client"], ["error qd:no-route-to-dest"])
        m = Manager(j.url)
        self.addCleanup(m.close)
        self.assertNotIn("M0gone.route", [a["name"] for a in m.query("router.address", ["name"])])
