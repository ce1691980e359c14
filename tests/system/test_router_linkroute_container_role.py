#!/usr/bin/python3
"""System tests: only a route-container connection is a link route's or an
auto-link's container (issues 25/26; qdrouterd 1.19 activates them only on
connections of role route-container).

- A client on a `role: normal` listener that opens with the broker's
  container id takes none of the broker's traffic: a link-routed attach
  finds no container and is refused with qd:no-route-to-dest, the
  auto-links stay inactive and attach nothing to it. The real broker, on a
  `role: route-container` listener with the same container id, then gets
  the link-routed attach and the auto-linked messages, and the impostor
  still none.
- A link route naming a `connection` (a listener's name) is not served by
  a client on a normal listener of that name; it is by a client on a
  route-container listener of that name.

Real junctiond processes and proton clients on 127.0.0.1; waits bounded.
"""
import threading
import unittest

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container
from proton.utils import BlockingConnection

from harness import SLOW, RouterTestCase, conf_section, container_listener
from test_router_broker import link_error_of
from test_router_entities import LOGS, Manager, client_listener, router_section

TIMEOUT = 15 * SLOW
LR = "org.apache.qpid.dispatch.router.config.linkRoute"
AL = "org.apache.qpid.dispatch.router.config.autoLink"


class Peer(MessagingHandler):
    """A container-like peer with container id `container_id` on url: it
    accepts every link the router attaches to it (recorded in `attached`
    as (name, address)), grants credit, and keeps each message it gets in
    `got` as (address, body)."""

    def __init__(self, url, container_id):
        super().__init__(prefetch=20)
        self.url, self.container_id = url, container_id
        self.attached, self.got = [], []
        self.lock = threading.Lock()
        self.up = threading.Event()
        self.conn = None

    def on_start(self, event):
        self.conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS")

    def on_connection_opened(self, event):
        self.up.set()

    def on_link_opening(self, event):
        link = event.link
        if link.is_receiver:
            link.target.address = address = link.remote_target.address
        else:
            link.source.address = address = link.remote_source.address
        with self.lock:
            self.attached.append((link.name, address))

    def on_message(self, event):
        with self.lock:
            self.got.append((event.receiver.remote_target.address, event.message.body))

    def on_timer_task(self, event):
        if self.conn:
            self.conn.close()

    def start(self):
        self.container = Container(self)
        self.container.container_id = self.container_id
        self.thread = threading.Thread(target=self.container.run, daemon=True)
        self.thread.start()
        if not self.up.wait(TIMEOUT):
            raise AssertionError("%s never connected to %s" % (self.container_id, self.url))
        return self

    def stop(self):
        if self.thread.is_alive():
            self.container.schedule(0, self)
            self.thread.join(TIMEOUT)

    def snapshot(self):
        with self.lock:
            return list(self.attached), list(self.got)


def link_routes(prefix, **target):
    return "".join(conf_section("linkRoute", dict({"prefix": prefix, "direction": d}, **target))
                   for d in ("in", "out"))


class ContainerRoleTest(RouterTestCase):

    def peer(self, url, container_id):
        p = Peer(url, container_id).start()
        self.addCleanup(p.stop)
        return p

    def statuses(self, router, entity_type):
        m = Manager(router.url)
        try:
            return sorted(r["operStatus"] for r in m.query(entity_type, ["operStatus"]))
        finally:
            m.close()

    def test_normal_client_with_the_brokers_container_id_gets_no_traffic(self):
        autolinks = "".join(conf_section("autoLink", {"name": "al-" + d, "address": "alq",
                                                      "direction": d, "containerId": "broker"})
                            for d in ("in", "out"))
        r = self.start_router(config=router_section("R") + client_listener() +
                              container_listener() + LOGS +
                              link_routes("lrq", containerId="broker") + autolinks)
        impostor = self.peer(r.url, "broker")
        # a link-routed attach: no container, refused with 1.19's condition
        self.assertEqual(link_error_of(r.url, "lrq.x", sender=True), "qd:no-route-to-dest")
        self.assertEqual(link_error_of(r.url, "lrq.x", sender=False), "qd:no-route-to-dest")
        # the auto-links are not activated by it
        self.assertEqual(self.statuses(r, AL), ["inactive", "inactive"])
        self.assertEqual(self.statuses(r, LR), ["inactive", "inactive"])
        self.assertEqual(impostor.snapshot(), ([], []))

        broker = self.peer(r.container_url, "broker")
        self.wait_for("the auto-links active",
                      lambda: self.statuses(r, AL) == ["active", "active"], TIMEOUT)
        self.assertEqual(self.statuses(r, LR), ["active", "active"])
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        lr = c.create_sender("lrq.x")
        lr.send(Message(body="routed"), timeout=TIMEOUT)  # accepted by the broker
        al = c.create_sender("alq")
        al.send(Message(body="auto-linked"), timeout=TIMEOUT)  # accepted by the broker
        self.wait_for("the broker's two messages", lambda: len(broker.snapshot()[1]) >= 2,
                      TIMEOUT)
        self.assertEqual(sorted(broker.snapshot()[1]),
                         [("alq", "auto-linked"), ("lrq.x", "routed")])
        self.assertEqual(impostor.snapshot(), ([], []))

    def test_connection_named_route_needs_a_route_container_listener(self):
        r = self.start_router(config=router_section("R") +
                              client_listener({"name": "svc-plain"}) +
                              container_listener("svc-rc") + LOGS +
                              link_routes("p", connection="svc-plain") +
                              link_routes("c", connection="svc-rc"))
        on_plain = self.peer(r.url, "svc")
        self.assertEqual(link_error_of(r.url, "p.x", sender=True), "qd:no-route-to-dest")
        self.assertEqual(on_plain.snapshot(), ([], []))
        on_rc = self.peer(r.container_url, "svc")
        self.assertIsNone(link_error_of(r.url, "c.x", sender=True))
        self.wait_for("the attach on the route-container connection",
                      lambda: ("c.x" in [a for _, a in on_rc.snapshot()[0]]), TIMEOUT)
        self.assertEqual(on_plain.snapshot(), ([], []))


if __name__ == "__main__":
    unittest.main()
