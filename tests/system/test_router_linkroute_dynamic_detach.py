#!/usr/bin/python3
"""System tests: dynamic termini and detaches over a link route (issue 25,
as qdrouterd 1.19 behaves).

- A receiver with a dynamic source whose dynamic-node-properties say
  x-opt-qd.address=<a link-routed address> is link-routed to the
  container: the container's link has a dynamic source and no address,
  and the client's answer carries the address the container made. The
  same for a sender with a dynamic target.
- A dynamic source without x-opt-qd.address is not link-routed: the
  router makes its address.
- management shows a link-routed link's owningAddr as its terminus
  address with the mobile prefix, M0<address> (1.19).
- A client's detach (closed=false) reaches the container as a detach; the
  client's answer is the container's: closed=true when the container
  closes its end, closed=false when it only detaches.

Real junctiond processes and proton clients on 127.0.0.1; waits bounded.
"""
import unittest

from proton import symbol
from proton.handlers import MessagingHandler
from proton.reactor import Container, DynamicNodeProperties, LinkOption

from harness import SLOW, RouterTestCase, conf_section, container_listener
from test_router_entities import LOGS, Manager, client_listener, router_section

TIMEOUT = 15 * SLOW


class DynamicTargetOption(LinkOption):
    def apply(self, link):
        link.target.dynamic = True
        link.target.address = None


def properties_of(terminus):
    """The terminus's node properties as a dict (keys as strings)."""
    d = terminus.properties
    d.rewind()
    if not d.next():
        return {}
    return {str(k): v for k, v in d.get_object().items()}


class Scenario(MessagingHandler):
    """One container on the route-container listener, one client on the
    normal one, all in one reactor. Subclasses say what the client does
    (client_starts), what the container answers (container_answers) and
    when it is done (self.finish())."""

    def __init__(self, client_url, container_url):
        super().__init__(prefetch=0, auto_accept=False)
        self.client_url, self.container_url = client_url, container_url
        self.error, self.done = None, False
        self.client_conn = self.container_conn = None

    def on_start(self, event):
        self.timer = event.reactor.schedule(TIMEOUT, self)
        self.container_conn = event.container.connect(self.container_url,
                                                      allowed_mechs="ANONYMOUS")

    def on_timer_task(self, event):
        self.error = self.error or "timed out"
        self.finish()

    def on_connection_opened(self, event):
        if event.connection == self.container_conn:
            self.client_conn = event.container.connect(self.client_url,
                                                       allowed_mechs="ANONYMOUS")
        elif event.connection == self.client_conn:
            self.client_starts(event)

    def finish(self):
        if not self.done:
            self.done = True
            self.timer.cancel()
            for c in (self.client_conn, self.container_conn):
                if c:
                    c.close()

    def run(self):
        # both connections open as container "broker": only the one on the
        # route-container listener is the link routes' container
        c = Container(self)
        c.container_id = "broker"
        c.run()
        return self


class DynamicSource(Scenario):
    """A dynamic receiver asking for `ask` (or nothing); the container, if
    it gets the attach, names the node `made`."""

    def __init__(self, client_url, container_url, ask):
        super().__init__(client_url, container_url)
        self.ask, self.made = ask, "made-by-the-container"
        self.seen = None  # (dynamic, address, properties) at the container
        self.answered = None

    def client_starts(self, event):
        opts = DynamicNodeProperties({"x-opt-qd.address": self.ask}) if self.ask else None
        self.receiver = event.container.create_receiver(self.client_conn, None, dynamic=True,
                                                        options=opts)

    def on_link_opening(self, event):
        if event.connection == self.container_conn and event.sender:
            s = event.sender.remote_source
            self.seen = (s.dynamic, s.address, properties_of(s))
            event.sender.source.address = self.made
            event.sender.open()

    def on_link_opened(self, event):
        if event.receiver == getattr(self, "receiver", None):
            self.answered = event.receiver.remote_source.address
            self.finish()


class DynamicTarget(DynamicSource):

    def client_starts(self, event):
        self.sender = event.container.create_sender(
            self.client_conn, None,
            options=[DynamicTargetOption(), DynamicNodeProperties({"x-opt-qd.address": self.ask})])

    def on_link_opening(self, event):
        if event.connection == self.container_conn and event.receiver:
            t = event.receiver.remote_target
            self.seen = (t.dynamic, t.address, properties_of(t))
            event.receiver.target.address = self.made
            event.receiver.open()

    def on_link_opened(self, event):
        if event.sender == getattr(self, "sender", None):
            self.answered = event.sender.remote_target.address
            self.finish()


class ClientDetaches(Scenario):
    """The client detaches its routed receiver without closing it; the
    container answers with close (container_closes) or with a detach."""

    def __init__(self, client_url, container_url, container_closes):
        super().__init__(client_url, container_url)
        self.container_closes = container_closes
        self.when_open = None  # called once both ends are attached
        self.container_saw = None  # "detach" or "close"
        self.client_got = None

    def client_starts(self, event):
        self.receiver = event.container.create_receiver(self.client_conn, "lrq.detach")

    def on_link_opening(self, event):
        if event.connection == self.container_conn and event.sender:
            self.sender = event.sender
            self.sender.source.address = self.sender.remote_source.address
            self.sender.open()

    def on_link_opened(self, event):
        if event.receiver == getattr(self, "receiver", None):
            if self.when_open:
                self.when_open()
            self.receiver.detach()

    def _peer_ended(self, event, how):
        if event.link == getattr(self, "sender", None):
            self.container_saw = how
            (self.sender.close if self.container_closes else self.sender.detach)()
        elif event.link == getattr(self, "receiver", None):
            self.client_got = how
            self.finish()

    def on_link_remote_detach(self, event):
        self._peer_ended(event, "detach")

    def on_link_remote_close(self, event):
        self._peer_ended(event, "close")


def link_routes(prefix):
    return "".join(conf_section("linkRoute", {"prefix": prefix, "direction": d,
                                              "containerId": "broker"})
                   for d in ("in", "out"))


class DynamicAndDetachTest(RouterTestCase):

    def router(self):
        return self.start_router(config=router_section("R") + client_listener() +
                                 container_listener() + LOGS + link_routes("lrq"))

    def test_dynamic_source_with_qd_address_is_made_by_the_container(self):
        r = self.router()
        s = DynamicSource(r.url, r.container_url, "lrq.dyn").run()
        self.assertIsNone(s.error)
        self.assertEqual(s.seen, (True, None, {"x-opt-qd.address": "lrq.dyn"}))
        self.assertEqual(s.answered, "made-by-the-container")

    def test_dynamic_target_with_qd_address_is_made_by_the_container(self):
        r = self.router()
        s = DynamicTarget(r.url, r.container_url, "lrq.dyn").run()
        self.assertIsNone(s.error)
        self.assertEqual(s.seen, (True, None, {"x-opt-qd.address": "lrq.dyn"}))
        self.assertEqual(s.answered, "made-by-the-container")

    def test_dynamic_source_without_qd_address_is_made_by_the_router(self):
        r = self.router()
        s = DynamicSource(r.url, r.container_url, None).run()
        self.assertIsNone(s.error)
        self.assertIsNone(s.seen)  # the container never saw it
        self.assertTrue(s.answered and s.answered.startswith("amqp:/_topo/"), s.answered)

    def test_client_detach_is_answered_by_the_containers_close(self):
        r = self.router()
        s = ClientDetaches(r.url, r.container_url, container_closes=True).run()
        self.assertIsNone(s.error)
        self.assertEqual((s.container_saw, s.client_got), ("detach", "close"))

    def test_client_detach_is_answered_by_the_containers_detach(self):
        r = self.router()
        s = ClientDetaches(r.url, r.container_url, container_closes=False).run()
        self.assertIsNone(s.error)
        self.assertEqual((s.container_saw, s.client_got), ("detach", "detach"))

    def test_routed_links_show_their_terminus_address_as_mobile_owning_address(self):
        r = self.router()
        s = ClientDetaches(r.url, r.container_url, container_closes=True)
        seen = []

        def query():
            m = Manager(r.url)
            try:
                seen.extend(sorted((l["linkDir"], l["owningAddr"])
                                   for l in m.query("router.link", ["linkDir", "owningAddr"])
                                   if l["owningAddr"] and "lrq" in l["owningAddr"]))
            finally:
                m.close()
        s.when_open = query
        s.run()
        self.assertIsNone(s.error)
        # the client's receiver (out) and the router's link from the container (in)
        self.assertEqual(seen, [("in", "M0lrq.detach"), ("out", "M0lrq.detach")])


if __name__ == "__main__":
    unittest.main()
