#!/usr/bin/python3
"""Link routes, what passes and which route is taken (issue 16;
docs/design.md, "Link routes and auto-links").

- Octets and tags: a link-routed delivery passes octet for octet, every
  section as the sender wrote it (delivery and message annotations
  included, even keys that look like the router's), with the sender's
  delivery tag, both ways, through one router and across two
  (mesh-protocol.md sections 9 and 10.1, as 1.19 does).
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
    records each transfer it receives as (target address, tag, octets) in
    `got` and accepts it; on a link it sends on (the router's receiver),
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
            self.attached.append(link.remote_target.address if link.is_receiver
                                 else link.remote_source.address)
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
