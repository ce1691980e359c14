#!/usr/bin/python3
"""System test: a container's own attach to an address it serves is link-routed
back to it (issue 25; qdrouterd 1.19 does the same:
system_tests_link_routes LinkRouteTest.test_link_route_terminus_address).

A client on a route-container listener named "svc", the container of the
link routes with prefix "own" (connection: svc), opens a receiver on
own.q. The router attaches the other end of that link on the same
connection (a link in the other direction, same name), so the client
finds a sender for own.q offered to it; a message it sends there comes
back to its own receiver, and management shows both of the router's
links with the terminus address as owningAddr (M0own.q), as 1.19.

Real junctiond process and a proton client on 127.0.0.1; waits bounded.
"""
import threading
import unittest

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

from harness import SLOW, RouterTestCase, conf_section, container_listener
from test_router_entities import LOGS, Manager, client_listener, router_section

TIMEOUT = 15 * SLOW
LINK = "org.apache.qpid.dispatch.router.link"


class OwnContainer(MessagingHandler):
    """Connects to url as a container, opens a receiver on `address`,
    accepts the sender the router offers back and sends one message on it;
    `done` is set when its receiver got the message (or on an error)."""

    def __init__(self, url, address):
        super().__init__(prefetch=10)
        self.url, self.address = url, address
        self.offered = None  # (name, source address) of the sender offered to us
        self.got = None
        self.error = None
        self.sent = False
        self.receiver = None
        self.done = threading.Event()

    def on_start(self, event):
        self.conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS")
        self.receiver = event.container.create_receiver(self.conn, self.address,
                                                        name="own-link")
        self.timer = event.container.schedule(TIMEOUT, self)

    def on_link_opening(self, event):
        link = event.link
        if link.is_sender:
            link.source.address = link.remote_source.address
            self.offered = (link.name, link.remote_source.address)

    def on_sendable(self, event):
        if not self.sent:
            event.sender.send(Message(body="to myself"))
            self.sent = True

    def on_message(self, event):
        self.got = event.message.body
        self.finish()

    def on_link_error(self, event):
        self.error = "link error %s" % event.link.remote_condition
        self.finish()

    def on_timer_task(self, event):
        self.error = self.error or "timed out (offered %r, sent %r)" % (self.offered, self.sent)
        self.finish()

    def finish(self):
        self.done.set()

    def close(self):
        self.timer.cancel()
        self.conn.close()


class OwnConnectionTest(RouterTestCase):

    def test_container_attach_is_routed_back_on_its_own_connection(self):
        routes = "".join(conf_section("linkRoute", {"prefix": "own", "direction": d,
                                                    "connection": "svc"})
                         for d in ("in", "out"))
        r = self.start_router(config=router_section("R") + client_listener() +
                              container_listener("svc") + LOGS + routes)
        peer = OwnContainer(r.container_url, "own.q")
        links = []

        class Query(MessagingHandler):
            """Once the message came back: the router's links, then close."""

            def on_start(self, event):
                event.container.schedule(0.05, self)

            def on_timer_task(self, event):
                if not peer.done.is_set():
                    event.container.schedule(0.05, self)
                    return
                if peer.got is not None:
                    m = Manager(r.url)
                    try:
                        links.extend(m.query(LINK, ["linkDir", "owningAddr", "name"]))
                    finally:
                        m.close()
                peer.close()

        Container(peer, Query()).run()
        self.assertIsNone(peer.error, r.describe())
        self.assertEqual(peer.offered, ("own-link", "own.q"))
        self.assertEqual(peer.got, "to myself")
        own = sorted((x["linkDir"], x["owningAddr"]) for x in links if x["name"] == "own-link")
        self.assertEqual(own, [("in", "M0own.q"), ("out", "M0own.q")], links)


if __name__ == "__main__":
    unittest.main()
