#!/usr/bin/python3
"""Connection-scoped link routes and multicast over auto-links (issue 16;
docs/design.md, "Link routes and auto-links").

- router.connection.linkRoute: a client creates a link route on its own
  connection's $management (as 1.19 allows); attaches from other clients
  whose address matches are routed to that client, and their messages and
  outcomes pass end to end; the route is visible only through the
  connection that made it, and it vanishes when that connection closes
  (a later attach is an ordinary address again); DELETE removes it; bad
  input gets 1.19's descriptions.
- multicast over an auto-link: handled, as 1.19 does: an `out` auto-link on
  a multicast address is one more consumer, and gets every message, as
  does a client receiver of that address.

Real junctiond processes and proton clients on 127.0.0.1; every wait
bounded.
"""
import threading
import time
import unittest

from proton import Message, Timeout
from proton.handlers import MessagingHandler
from proton.reactor import AtMostOnce, Container
from proton.utils import BlockingConnection

from harness import SLOW, RouterTestCase, conf_section, container_listener
from test_router_entities import LOGS, Manager, client_listener, router_section

TIMEOUT = 10 * SLOW
CONN_LR = "org.apache.qpid.dispatch.router.connection.linkRoute"


class ServiceClient(MessagingHandler):
    """A client that acts as a container: with `create` (attributes of a
    router.connection.linkRoute) it creates one on its own connection's
    $management first; it accepts every link the router attaches to it and
    accepts every message it gets (kept in `got`, with the link's address).
    `ready` is set once the CREATE was answered (`status`, `body`), or at
    once without `create`."""

    def __init__(self, url, container_id, create=None):
        super().__init__(prefetch=50)
        self.url, self.create = url, create
        self.container_id = container_id
        self.got = []
        self.ready = threading.Event()
        self.status = self.body = None
        self.conn = None
        self.error = None

    def on_start(self, event):
        self.conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS")
        if self.create is None:
            self.ready.set()
            return
        self.mgmt = event.container.create_sender(self.conn, "$management")
        self.replies = event.container.create_receiver(self.conn, None, dynamic=True)

    def on_link_opened(self, event):
        if self.create is not None and event.link == self.replies:
            props = {"operation": "CREATE", "type": CONN_LR, "name": "svc-route"}
            self.mgmt.send(Message(body=self.create, properties=props,
                                   reply_to=self.replies.remote_source.address))

    def on_link_opening(self, event):
        link = event.link
        if link.is_receiver:
            link.target.address = link.remote_target.address

    def on_message(self, event):
        if self.create is not None and event.receiver == self.replies:
            self.status = event.message.properties["statusCode"]
            self.desc = event.message.properties["statusDescription"]
            self.body = event.message.body
            self.ready.set()
            return
        self.got.append((event.receiver.remote_target.address, event.message.body))

    def on_transport_error(self, event):
        self.error = str(event.transport.condition)
        self.ready.set()

    def close(self):
        self.container.schedule(0, self)

    def on_timer_task(self, event):
        if self.conn:
            self.conn.close()

    def start(self):
        self.container = Container(self)
        self.container.container_id = self.container_id
        self.thread = threading.Thread(target=self.container.run, daemon=True)
        self.thread.start()
        if not self.ready.wait(TIMEOUT):
            raise AssertionError("service client never ready")
        return self

    def stop(self):
        if self.thread.is_alive():
            self.close()
            self.thread.join(TIMEOUT)


class ConnLinkRouteTest(RouterTestCase):

    def manager(self, router):
        m = Manager(router.url)
        self.addCleanup(m.close)
        return m

    def service(self, router, container_id, create=None, container=False):
        """A ServiceClient on router's normal listener (a connection-scoped
        link route's container: any connection may be one, as in 1.19) or,
        with container, on its route-container listener (configured link
        routes and auto-links use only those)."""
        url = router.container_url if container else router.url
        s = ServiceClient(url, container_id, create).start()
        self.addCleanup(s.stop)
        return s

    def addresses(self, router):
        rows = self.manager(router).query("org.apache.qpid.dispatch.router.address", ["name"])
        return {r["name"] for r in rows}

    def test_route_on_own_connection_lives_with_it(self):
        r = self.start_router(config=router_section("A") + client_listener() + LOGS)
        svc = self.service(r, "svc-1", {"pattern": "svc.#", "direction": "in"})
        self.assertEqual(svc.status, 201, "%s %s" % (svc.status, getattr(svc, "desc", "")))
        self.assertEqual((svc.body["name"], svc.body["pattern"], svc.body["direction"],
                          svc.body["containerId"], svc.body["type"]),
                         ("svc-route", "svc.#", "in", "svc-1", CONN_LR))
        # only its own connection sees it
        self.assertEqual(self.manager(r).query(CONN_LR), [])
        # another client's sender to svc.orders is routed to the service
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        s = c.create_sender("svc.orders")
        for i in range(5):
            s.send(Message(body="order-%d" % i), timeout=TIMEOUT)  # accepted by the service
        c.close()
        self.assertEqual(svc.got, [("svc.orders", "order-%d" % i) for i in range(5)])
        self.assertNotIn("M0svc.orders", self.addresses(r))  # routed, not an address
        # the service goes away: its route with it; svc.orders is an ordinary address
        svc.stop()
        deadline = time.time() + TIMEOUT
        while True:
            c = BlockingConnection(r.url, timeout=TIMEOUT)
            rx = c.create_receiver("svc.orders")
            names = self.addresses(r)
            c.close()
            if "M0svc.orders" in names:
                break
            if time.time() > deadline:
                self.fail("svc.orders still link-routed after the service left\n" + self.logs())
            time.sleep(0.2)

    def test_delete_and_bad_input(self):
        r = self.start_router(config=router_section("A") + client_listener() + LOGS)
        m = self.manager(r)  # its own connection: routes to itself
        props = {"operation": "CREATE", "type": CONN_LR}
        self.assertEqual(m.call(dict(props, name="x"), {"direction": "in"})[:2],
                         (400, "Pattern field is required"))
        self.assertEqual(m.call(dict(props, name="x"), {"pattern": "a.#"})[:2],
                         (400, "Missing value for 'direction'"))
        self.assertEqual(m.call(dict(props, name="x"), {"pattern": "a.#",
                                                         "direction": "sideways"})[:2],
                         (400, "Invalid value for 'direction'"))
        code, desc, body = m.call(dict(props, name="mine"), {"pattern": "mine.#",
                                                             "direction": "out"})
        self.assertEqual(code, 201, desc)
        rows = m.query(CONN_LR)
        self.assertEqual([(x["name"], x["pattern"], x["direction"]) for x in rows],
                         [("mine", "mine.#", "out")])
        self.assertEqual(m.call(dict(props, name="mine"), {"pattern": "other.#",
                                                           "direction": "out"})[0], 400)
        code, desc, _ = m.call({"operation": "DELETE", "type": CONN_LR, "name": "mine"})
        self.assertEqual(code, 204, desc)
        self.assertEqual(m.query(CONN_LR), [])
        code, desc, _ = m.call({"operation": "DELETE", "type": CONN_LR, "name": "mine"})
        self.assertEqual(code, 404, desc)

    def test_multicast_over_an_autolink_is_handled(self):
        """An `out` auto-link on a multicast address is one more consumer:
        the container and a client receiver each get every message
        (qdrouterd 1.19 does the same; nothing refuses it)."""
        config = (router_section("A") + client_listener() + container_listener() + LOGS +
                  conf_section("address", {"prefix": "mc", "distribution": "multicast"}) +
                  conf_section("autoLink", {"name": "al", "address": "mc.q",
                                            "direction": "out", "containerId": "fb"}))
        r = self.start_router(config=config)
        broker = self.service(r, "fb", container=True)
        m = self.manager(r)
        deadline = time.time() + TIMEOUT
        while m.query("org.apache.qpid.dispatch.router.config.autoLink",
                      ["operStatus"])[0]["operStatus"] != "active":
            if time.time() > deadline:
                self.fail("auto-link never active\n" + self.logs())
            time.sleep(0.1)
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        rx = c.create_receiver("mc.q", credit=10)
        deadline = time.time() + TIMEOUT
        while not any(x["name"] == "M0mc.q" and x["subscriberCount"] >= 2 for x in
                      m.query("org.apache.qpid.dispatch.router.address",
                              ["name", "subscriberCount"])):
            if time.time() > deadline:
                self.fail("two consumers never seen\n" + self.logs())
            time.sleep(0.1)
        s = BlockingConnection(r.url, timeout=TIMEOUT)
        snd = s.create_sender("mc.q", options=AtMostOnce())
        for i in range(3):
            snd.send(Message(body="m%d" % i))
        s.close()
        got = []
        for _ in range(3):
            got.append(rx.receive(timeout=TIMEOUT).body)
        self.assertEqual(got, ["m0", "m1", "m2"])
        deadline = time.time() + TIMEOUT
        while len(broker.got) < 3 and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(broker.got, [("mc.q", "m%d" % i) for i in range(3)])


if __name__ == "__main__":
    unittest.main()
