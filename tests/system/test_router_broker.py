#!/usr/bin/python3
"""Brokers in the mesh (issue 16): link routes and auto-links against a real
RabbitMQ (tests/system/broker.py), through one router and through two.

One broker serves the whole module (setUpModule); each test uses its own
queue names, and the restart test its own broker. Every test counts the
outcomes its clients saw, so that a message is never lost silently: each
one sent is accepted (and then in the broker's queue, or received back),
or its sender is told otherwise.
"""
import os
import sys
import time
import unittest

from proton import Endpoint, Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

from harness import RouterTestCase, Router, conf_section, free_port, SLOW
import broker as rabbit

BROKER = None


def setUpModule():
    global BROKER
    if not rabbit.available():
        raise unittest.SkipTest("rabbitmq-server is not installed (./dev installs it)")
    BROKER = rabbit.shared_broker()


def tearDownModule():
    if BROKER is not None:
        rabbit.release_shared_broker()


# --------------------------------------------------------------------------
# Clients

class Clients(MessagingHandler):
    """Senders and receivers in one reactor, each (url, address, count).
    Senders send `count` unsettled messages (bodies "<address>-<n>") and
    record each outcome; receivers take `count` messages and accept them.
    Stops when every sender has all its outcomes and every receiver its
    messages, or at the timeout (then `timed_out`). Link errors are kept in
    `link_errors` (condition names). receivers_first: the senders send
    only once every receiver's link is attached at the router (where a
    message sent earlier would go elsewhere, e.g. to a fallback)."""

    def __init__(self, senders=(), receivers=(), timeout=60.0, durable=False, credit=100,
                 receivers_first=False):
        super().__init__(prefetch=0, auto_accept=False)
        self.receivers_first = receivers_first
        self.senders = [dict(url=u, address=a, count=n, sent=0, outcomes={}) for u, a, n in senders]
        self.receivers = [dict(url=u, address=a, count=n, got=[]) for u, a, n in receivers]
        self.timeout = timeout * SLOW
        self.durable = durable
        self.credit = credit
        self.timed_out = False
        self.link_errors = []
        self.opened = 0

    def run(self):
        Container(self).run()
        return self

    def on_start(self, event):
        self.container = event.container
        self.conns = []
        for r in self.receivers:
            c = event.container.connect(r["url"], allowed_mechs="ANONYMOUS")
            self.conns.append(c)
            r["link"] = event.container.create_receiver(c, r["address"])
            r["link"].flow(min(self.credit, r["count"]))
        for s in self.senders:
            c = event.container.connect(s["url"], allowed_mechs="ANONYMOUS")
            self.conns.append(c)
            s["link"] = event.container.create_sender(c, s["address"])
        self.deadline = event.container.schedule(self.timeout, self)

    def on_timer_task(self, event):
        self.timed_out = True
        self.finish()

    def finish(self):
        for c in self.conns:
            c.close()
        if getattr(self, "deadline", None):
            self.deadline.cancel()

    def done(self):
        return all(sum(s["outcomes"].values()) >= s["count"] for s in self.senders) and \
            all(len(r["got"]) >= r["count"] for r in self.receivers)

    def on_sendable(self, event):
        for s in self.senders:
            if s["link"].name == event.sender.name:
                self._send(s)

    def _send(self, s):
        if self.receivers_first and not all(r["link"].state & Endpoint.REMOTE_ACTIVE
                                            for r in self.receivers):
            return
        link = s["link"]
        while link.credit > 0 and s["sent"] < s["count"]:
            link.send(Message(body="%s-%d" % (s["address"], s["sent"]), durable=self.durable))
            s["sent"] += 1

    def on_link_opened(self, event):
        if self.receivers_first and event.receiver:
            for s in self.senders:
                self._send(s)

    def _outcome(self, event, name):
        for s in self.senders:
            if s["link"].name == event.link.name:
                s["outcomes"][name] = s["outcomes"].get(name, 0) + 1
        if self.done():
            self.finish()

    def on_accepted(self, event):
        self._outcome(event, "accepted")

    def on_rejected(self, event):
        self._outcome(event, "rejected")

    def on_released(self, event):
        self._outcome(event, "released")

    def on_modified(self, event):
        self._outcome(event, "modified")

    def on_message(self, event):
        for r in self.receivers:
            if r["link"].name == event.receiver.name:
                r["got"].append(event.message.body)
                self.accept(event.delivery)
                want = r["count"] - len(r["got"])
                if event.receiver.credit == 0 and want > 0:
                    event.receiver.flow(min(self.credit, want))
        if self.done():
            self.finish()

    def on_link_error(self, event):
        cond = event.link.remote_condition
        self.link_errors.append(cond.name if cond else "?")
        if event.link.is_sender:
            for s in self.senders:
                if s["link"].name == event.link.name:
                    s["outcomes"]["link-error"] = s["count"]  # nothing more will come
        else:
            for r in self.receivers:
                if r["link"].name == event.link.name:
                    r["count"] = len(r["got"])
        if self.done():
            self.finish()

    def on_transport_error(self, event):
        pass


def link_error_of(url, address, sender=True, timeout=10.0):
    """Attach one link: the condition name it was detached with, None when
    it attached and stayed attached for a moment (it is then closed), or
    "timeout" when no answer came."""

    class One(MessagingHandler):
        def __init__(self):
            super().__init__()
            self.error = "timeout"

        def on_start(self, event):
            self.conn = event.container.connect(url, allowed_mechs="ANONYMOUS")
            if sender:
                event.container.create_sender(self.conn, address)
            else:
                event.container.create_receiver(self.conn, address)
            self.timer = event.container.schedule(timeout * SLOW, self)

        def on_timer_task(self, event):
            self.conn.close()

        def on_link_opened(self, event):
            # a refusal is an attach and a detach: look again shortly
            self.error = None
            self.timer.cancel()
            self.timer = event.container.schedule(0.3, self)

        def on_link_error(self, event):
            c = event.link.remote_condition
            self.error = c.name if c else "?"
            self.timer.cancel()
            self.conn.close()

        def on_transport_error(self, event):
            pass

    h = One()
    Container(h).run()
    return h.error


class Manager:
    """A management client on its own connection."""

    def __init__(self, url):
        from proton.utils import BlockingConnection, SyncRequestResponse
        self.conn = BlockingConnection(url, timeout=10 * SLOW)
        self.client = SyncRequestResponse(self.conn, "$management")

    def create(self, entity_type, name, attrs):
        props = {"operation": "CREATE", "type": entity_type, "name": name}
        reply = self.client.call(Message(body=attrs, properties=props))
        return reply.properties["statusCode"], reply.properties["statusDescription"]

    def query(self, entity_type, names=()):
        props = {"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                 "entityType": entity_type}
        reply = self.client.call(Message(body={"attributeNames": list(names)}, properties=props))
        body = reply.body
        return [dict(zip(body["attributeNames"], row)) for row in body["results"]]

    def close(self):
        self.conn.close()


# --------------------------------------------------------------------------
# Routers

def client_listener():
    return conf_section("listener", {"host": "127.0.0.1", "port": "{port}", "role": "normal",
                                     "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"})


def broker_connector(broker, name="broker"):
    return conf_section("connector", {"name": name, "host": "127.0.0.1", "port": broker.port,
                                      "role": "route-container", "saslMechanisms": "ANONYMOUS"})


def link_routes(prefix, connection="broker"):
    return "".join(conf_section("linkRoute", {"prefix": prefix, "direction": d,
                                              "connection": connection}) for d in ("in", "out"))


def auto_links(address, queue, connection="broker"):
    text = conf_section("address", {"prefix": address, "waypoint": "yes"})
    for d in ("in", "out"):
        text += conf_section("autoLink", {"name": "%s-%s" % (address, d), "address": address,
                                          "direction": d, "connection": connection,
                                          "externalAddress": "/queue/" + queue})
    return text


def router_config(name, mode="standalone", extra="", ir_listen=None, ir_connect=None):
    text = conf_section("router", {"mode": mode, "id": name, "workerThreads": 2})
    text += client_listener()
    if ir_listen:
        text += conf_section("listener", {"host": "127.0.0.1", "port": ir_listen,
                                          "role": "inter-router", "saslMechanisms": "ANONYMOUS",
                                          "authenticatePeer": "no"})
    if ir_connect:
        text += conf_section("connector", {"name": "ir", "host": "127.0.0.1", "port": ir_connect,
                                           "role": "inter-router", "saslMechanisms": "ANONYMOUS"})
    text += conf_section("log", {"module": "DEFAULT", "enable": "info+",
                                 "includeTimestamp": "yes"})
    return text + extra


class BrokerTestCase(RouterTestCase):

    def start_config(self, name, config):
        r = Router(self.workdir, name=name, config=config)
        r.start()
        self.addCleanup(self._stop_router, r)
        self.routers.append(r)
        r.wait_ready()
        return r

    def wait_log(self, router, text, timeout=30.0):
        self.wait_for("'%s' in %s's log" % (text, router.name), lambda: text in router.log(),
                      timeout)

    def broker_depth(self, broker, queue, want, timeout=20.0):
        self.wait_for("queue %s holding %s" % (queue, want),
                      lambda: broker.queue_depth(queue) == want, timeout)

    def wait_for_keys(self, router, keys, timeout=30.0):
        """Until router's address table holds keys (learnt from the mesh)."""
        m = Manager(router.url)
        self.addCleanup(m.close)

        def have():
            names = [x["name"] for x in m.query("org.apache.qpid.dispatch.router.address",
                                                ["name"])]
            return all(k in names for k in keys)
        self.wait_for("keys %s on %s" % (keys, router.name), have, timeout)

    def mesh_of_two(self, broker_extra, client_extra=""):
        """Router A (clients) connected to B (the broker's router)."""
        ir = free_port()
        b = self.start_config("B", router_config("B", "interior", broker_extra, ir_listen=ir))
        a = self.start_config("A", router_config("A", "interior", client_extra, ir_connect=ir))
        return a, b


class LinkRouteTest(BrokerTestCase):

    def test_link_routed_sender_and_receiver_through_one_router(self):
        conf = router_config("R", extra=broker_connector(BROKER) + link_routes("/queue"))
        r = self.start_config("R", conf)
        self.wait_log(r, "Connection Opened: dir=out")
        n = 1000
        c = Clients(senders=[(r.url, "/queue/lr-one", n)]).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(c.senders[0]["outcomes"], {"accepted": n})
        # the broker's own count: they are in its queue, not in the router
        self.broker_depth(BROKER, "lr-one", n)
        # router.link shows the two ends of a routed link as each other's peer
        from proton.utils import BlockingConnection
        held = BlockingConnection(r.url, timeout=10 * SLOW)
        self.addCleanup(held.close)
        held.create_receiver("/queue/lr-one", credit=0)
        m = Manager(r.url)
        self.addCleanup(m.close)

        def peers():
            rows = m.query("org.apache.qpid.dispatch.router.link", ["identity", "peer", "name"])
            ends = {x["identity"]: x["peer"] for x in rows if "lr-one" in (x["name"] or "")}
            return len(ends) == 2 and all(ends.get(p) == i for i, p in ends.items())
        self.wait_for("router.link peers", peers, 30)
        held.close()
        c = Clients(receivers=[(r.url, "/queue/lr-one", n)]).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(c.receivers[0]["got"], ["/queue/lr-one-%d" % i for i in range(n)])
        self.broker_depth(BROKER, "lr-one", 0)

    def test_link_routed_through_two_routers(self):
        # the broker is behind B; A has no link route of its own: it learns
        # the link-route keys from B's mobile-address updates
        a, b = self.mesh_of_two(broker_connector(BROKER) + link_routes("/queue"))
        self.wait_for_keys(a, ["C/queue", "D/queue"])
        n = 1000
        c = Clients(senders=[(a.url, "/queue/lr-two", n)]).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(c.senders[0]["outcomes"], {"accepted": n})
        self.broker_depth(BROKER, "lr-two", n)
        c = Clients(receivers=[(a.url, "/queue/lr-two", n)]).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(sorted(c.receivers[0]["got"]),
                         sorted("/queue/lr-two-%d" % i for i in range(n)))
        self.broker_depth(BROKER, "lr-two", 0)
        self.assertIn("@", b.log().split("Link routed")[-1])  # the name made unique (10.6)

    def test_no_container_refuses_with_no_route_to_dest(self):
        conf = router_config("R", extra=conf_section(
            "connector", {"name": "never", "host": "127.0.0.1", "port": free_port(),
                          "role": "route-container", "saslMechanisms": "ANONYMOUS"})
            + link_routes("/queue", connection="never"))
        r = self.start_config("R", conf)
        t0 = time.monotonic()
        # 1.19's condition for a link-routed attach with no route
        self.assertEqual(link_error_of(r.url, "/queue/nowhere", sender=True),
                         "qd:no-route-to-dest")
        self.assertEqual(link_error_of(r.url, "/queue/nowhere", sender=False),
                         "qd:no-route-to-dest")
        self.assertLess(time.monotonic() - t0, 5 * SLOW)

    def test_container_refusal_reaches_the_client(self):
        # RabbitMQ 3.10 does not refuse an attach cleanly (it leaves it
        # unanswered or ends the session), so a small container stands in:
        # it refuses every attach with an error, which the client must see
        from proton import Condition, Handler
        from proton.reactor import Container as Reactor
        import threading
        port = free_port()

        class Refuser(Handler):
            def on_reactor_init(self, event):
                self.acceptor = event.reactor.listen("127.0.0.1:%d" % port)

            def on_connection_remote_open(self, event):
                event.connection.open()

            def on_connection_remote_close(self, event):
                event.connection.close()

            def on_session_remote_open(self, event):
                event.session.open()

            def on_session_remote_close(self, event):
                event.session.close()

            def on_link_remote_open(self, event):
                event.link.condition = Condition("amqp:unauthorized-access", "not this one")
                event.link.close()

        h = Refuser()
        reactor = Reactor(h)
        reactor.container_id = "refuser"
        t = threading.Thread(target=reactor.run, daemon=True)
        t.start()
        self.addCleanup(lambda: (reactor.stop(), t.join(10)))
        conf = router_config("R", extra=conf_section(
            "connector", {"name": "refuser", "host": "127.0.0.1", "port": port,
                          "role": "route-container", "saslMechanisms": "ANONYMOUS"})
            + link_routes("/queue", connection="refuser"))
        r = self.start_config("R", conf)
        self.wait_log(r, "Connection Opened: dir=out")
        self.assertEqual(link_error_of(r.url, "/queue/x", sender=True), "amqp:unauthorized-access")
        self.assertEqual(link_error_of(r.url, "/queue/x", sender=False),
                         "amqp:unauthorized-access")

    def test_management_shows_oper_status(self):
        conf = router_config("R", extra=broker_connector(BROKER) + link_routes("/queue") +
                             conf_section("linkRoute", {"name": "idle", "prefix": "idle",
                                                        "direction": "in",
                                                        "containerId": "nobody"}))
        r = self.start_config("R", conf)
        self.wait_log(r, "Connection Opened: dir=out")
        m = Manager(r.url)
        self.addCleanup(m.close)
        rows = m.query("org.apache.qpid.dispatch.router.config.linkRoute",
                       ["prefix", "direction", "operStatus"])
        status = {(x["prefix"], x["direction"]): x["operStatus"] for x in rows}
        self.assertEqual(status, {("/queue", "in"): "active", ("/queue", "out"): "active",
                                  ("idle", "in"): "inactive"})


class MixedMeshWireTest(BrokerTestCase):
    """What a qdrouterd 1.19 router sees of Junction's link routes: a fake
    1.19 interior router (test_mesh_wire.FakeRouter, written from the
    reference) joins, and the mobile-address update that follows a link
    route's creation carries its keys as 1.19 writes them."""

    def test_link_route_keys_in_mobile_address_updates(self):
        from test_mesh_wire import FakeRouter, sections, typed_map

        class MauWatcher(FakeRouter):
            def __init__(self, *a):
                super().__init__(*a)
                self.known = False
                self.maus = []

            def on_delivery(self, event):
                link, dlv = event.link, event.delivery
                if link not in (self.ctl_in, self.data_in) or dlv.partial:
                    return
                data = link.recv(dlv.pending)
                dlv.settle()
                link.flow(1)
                secs = sections(data)
                op = typed_map(secs.get(0x74, ("map", []))[1]).get("opcode", (0, 0, None))[2]
                if op == "RA":
                    self.known = True
                if op == "MAU" and 0x77 in secs:
                    body = typed_map(secs[0x77][1])
                    self.maus.append(body)
                    adds = [v for _, v in body.get("add", (0, 0, []))[2]]
                    if "C/queue" in adds and "D/queue" in adds:
                        self.done()

        ir = free_port()
        j = self.start_config("J", router_config("J", "interior", broker_connector(BROKER),
                                                  ir_listen=ir))
        self.wait_log(j, "Connection Opened: dir=out")
        f = MauWatcher("amqp://127.0.0.1:%d" % ir, "J", j.url)
        import threading
        t = threading.Thread(target=f.run)
        t.start()
        self.wait_for("J to know the fake router", lambda: f.known or not t.is_alive(), 30)
        m = Manager(j.url)
        self.addCleanup(m.close)
        for d in ("in", "out"):
            code, desc = m.create("router.config.linkRoute", "lr-" + d,
                                  {"prefix": "/queue", "direction": d, "connection": "broker"})
            self.assertEqual(code, 201, desc)
        t.join(60)
        self.assertFalse(t.is_alive())
        mau = f.maus[-1]
        adds = [v for _, v in mau["add"][2]]
        hints = [v for _, v in mau["hints"][2]]
        self.assertEqual(mau["add"][1], "list")
        for key in ("C/queue", "D/queue"):
            self.assertEqual(hints[adds.index(key)], 4, mau)  # link-balanced


class AutoLinkTest(BrokerTestCase):

    def test_auto_links_in_and_out_across_two_routers(self):
        # auto-links on B; the address is a waypoint on both routers: a
        # sender on A puts it into the broker's queue (phase 0), the
        # auto-link in takes it out (phase 1) to a receiver on A
        addr = conf_section("address", {"prefix": "wp", "waypoint": "yes"})
        a, b = self.mesh_of_two(broker_connector(BROKER) + auto_links("wp", "al-two"),
                                client_extra=addr)
        self.wait_log(b, "Auto-link wp-in active")
        self.wait_log(b, "Auto-link wp-out active")
        n = 500
        c = Clients(senders=[(a.url, "wp", n)], receivers=[(a.url, "wp", n)]).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(c.senders[0]["outcomes"], {"accepted": n})
        self.assertEqual(sorted(c.receivers[0]["got"]), sorted("wp-%d" % i for i in range(n)))

    def test_auto_link_status_in_management_and_stat(self):
        conf = router_config("R", extra=broker_connector(BROKER) + auto_links("st", "al-st"))
        r = self.start_config("R", conf)
        self.wait_log(r, "Auto-link st-in active")
        self.wait_log(r, "Auto-link st-out active")
        stat = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "junction-stat")
        import subprocess
        out = subprocess.run(["/usr/bin/python3", stat, "-b", "127.0.0.1:%d" % r.port, "--autolinks"],
                             capture_output=True, text=True, timeout=30).stdout
        rows = [l.split() for l in out.splitlines() if l.strip().startswith("st ")]
        self.assertEqual(len(rows), 2, out)
        for row in rows:
            self.assertIn("active", row, out)


class AutoLinkRetryTest(BrokerTestCase):
    """An auto-link the broker refuses while the connection stays up is
    tried again on a timer (as 1.19: after 2 s, then every 5 s): it shows
    `failed` with the broker's error, and goes `active` by itself once the
    queue exists."""

    def status(self, m, name):
        rows = m.query("org.apache.qpid.dispatch.router.config.autoLink",
                       ["name", "operStatus", "lastError"])
        row = [x for x in rows if x["name"] == name]
        return (row[0]["operStatus"], row[0]["lastError"]) if row else (None, None)

    def test_refused_auto_link_goes_active_when_the_queue_appears(self):
        queue = "al-retry-%d" % os.getpid()
        # /amq/queue/NAME names an existing queue only: RabbitMQ refuses it
        conf = router_config("R", extra=broker_connector(BROKER) +
                             conf_section("address", {"prefix": "alr", "waypoint": "yes"}) +
                             conf_section("autoLink", {"name": "alr-in", "address": "alr",
                                                       "direction": "in",
                                                       "connection": "broker",
                                                       "externalAddress": "/amq/queue/" + queue}))
        r = self.start_config("R", conf)
        m = Manager(r.url)
        self.addCleanup(m.close)
        self.wait_for("alr-in failed", lambda: self.status(m, "alr-in")[0] == "failed", 30)
        self.assertTrue(self.status(m, "alr-in")[1], "lastError is empty when failed")
        # the router retries while it stays refused (the connection stays up)
        self.wait_log(r, "Auto-link alr-in: retry 2 after")
        self.assertEqual(self.status(m, "alr-in")[0] in ("failed", "attaching"), True)
        # a client of the broker declares the queue (/queue/NAME does) and
        # puts one message in it
        c = Clients(senders=[(BROKER.url, "/queue/" + queue, 1)]).run()
        self.assertEqual(c.senders[0]["outcomes"], {"accepted": 1})
        self.wait_for("alr-in active", lambda: self.status(m, "alr-in")[0] == "active", 30)
        self.assertIsNone(self.status(m, "alr-in")[1])
        c = Clients(receivers=[(r.url, "alr", 1)]).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(c.receivers[0]["got"], ["/queue/%s-0" % queue])


class FallbackTest(BrokerTestCase):

    def test_fallback_auto_link_takes_what_finds_no_receiver(self):
        # enableFallback: with no receiver for fb, deliveries go to the
        # fallback auto-link, into the broker's queue; once a receiver is
        # there, it gets them
        conf = router_config("R", extra=broker_connector(BROKER) +
                             conf_section("address", {"prefix": "fb", "enableFallback": "yes"}) +
                             conf_section("autoLink", {"name": "fb-spill", "address": "fb",
                                                       "direction": "out", "fallback": "yes",
                                                       "connection": "broker",
                                                       "externalAddress": "/queue/fb-spill"}))
        r = self.start_config("R", conf)
        self.wait_log(r, "Auto-link fb-spill active")
        c = Clients(senders=[(r.url, "fb", 50)]).run()
        self.assertEqual(c.senders[0]["outcomes"], {"accepted": 50}, self.logs())
        self.broker_depth(BROKER, "fb-spill", 50)
        c = Clients(senders=[(r.url, "fb", 50)], receivers=[(r.url, "fb", 50)],
                    receivers_first=True).run()
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(len(c.receivers[0]["got"]), 50)
        self.assertEqual(BROKER.queue_depth("fb-spill"), 50)


class BrokerRestartTest(BrokerTestCase):
    """The broker dies mid-stream and comes back (its own broker)."""

    def setUp(self):
        super().setUp()
        self.broker = rabbit.Broker(os.path.join(self.workdir, "rabbit")).start()
        self.addCleanup(self.broker.stop)

    def test_broker_killed_and_restarted(self):
        b = self.broker
        conf = router_config("R", extra=broker_connector(b) + auto_links("rs", "al-rs") +
                             link_routes("/queue"))
        r = self.start_config("R", conf)
        self.wait_log(r, "Auto-link rs-out active")
        n = 3000
        c = Clients(senders=[(r.url, "rs", n)], timeout=120)
        import threading
        t = threading.Thread(target=c.run)
        t.start()
        self.wait_for("some outcomes", lambda: sum(c.senders[0]["outcomes"].values()) >= 300,
                      60)
        b.kill()
        time.sleep(1.0)
        b.start()
        t.join(180 * SLOW)
        self.assertFalse(t.is_alive())
        outcomes = c.senders[0]["outcomes"]
        # nothing lost silently: every message sent has an outcome
        self.assertFalse(c.timed_out, "outcomes %s; %s" % (outcomes, self.logs()))
        self.assertEqual(sum(outcomes.values()), n, outcomes)
        self.assertGreater(outcomes.get("accepted", 0), 0, outcomes)
        # the auto-links went active again by themselves; traffic resumes
        self.wait_for("auto-links active again",
                      lambda: r.log().count("Auto-link rs-out active") >= 2, 60)
        b.ctl("purge_queue", "al-rs")
        c = Clients(senders=[(r.url, "rs", 100)]).run()
        self.assertEqual(c.senders[0]["outcomes"], {"accepted": 100}, self.logs())
        self.broker_depth(b, "al-rs", 100)

    def test_link_routed_links_detached_when_broker_goes(self):
        b = self.broker
        conf = router_config("R", extra=broker_connector(b) + link_routes("/queue"))
        r = self.start_config("R", conf)
        self.wait_log(r, "Connection Opened: dir=out")
        c = Clients(receivers=[(r.url, "/queue/gone", 10)], timeout=60)
        import threading
        t = threading.Thread(target=c.run)
        t.start()
        self.wait_for("the routed receiver", lambda: "Link routed" in r.log(), 30)
        time.sleep(0.5)
        b.kill()
        t.join(90 * SLOW)
        self.assertFalse(t.is_alive())
        self.assertFalse(c.timed_out, self.logs())
        self.assertEqual(c.link_errors, ["qd:routed-link-lost"])
        # while it is away: refused at once, not a hang
        self.assertEqual(link_error_of(r.url, "/queue/gone"), "qd:no-route-to-dest")
        b.start()
        self.wait_for("a new attach to work",
                      lambda: link_error_of(r.url, "/queue/gone", timeout=3) is None, 60)


if __name__ == "__main__":
    unittest.main()
