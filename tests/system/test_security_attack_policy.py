#!/usr/bin/python3
"""Attacks on the vhost policy (docs/design.md "Policy", "vhost policy"):
a client of a user group whose sources and targets are `public.*`, with
anonymous senders and dynamic sources allowed, on a listener that keeps
inbound router annotations, tries to reach what its group does not allow.

* Every spelling of `$management` and of another node's address (scheme
  and host prefixes, `_local/`, `_topo/0/<id>/`, `_topo/0/all/`, `_edge/`,
  leading and trailing slashes, case, percent escapes, very long) is
  refused through the anonymous relay and at attach; no management request
  sent that way does anything.
* A dynamic target (a sender asking the router for an address) reaches
  only the node the router named for it, whatever its messages' `to`
  (1.19's routing): not a way to the group's forbidden targets.
* A dynamic source that also names an address gets a fresh address, never
  the one it named.
* A receiver on another router's addresses is refused, even for an
  unrestricted group; one on `_topo/0/all/...` or on the mesh's control
  addresses gets nothing of the mesh's own traffic.
* A user's name is literal in `${user}`: a name holding `*` or `#` does
  not widen the group's sources, targets or patterns.
* The reply-to of a request is not a way around the group's targets: the
  management agent's answer to a restricted client goes only to an
  address the client may send to.
"""
import time
import unittest

from proton import LinkException, Timeout
from proton.reactor import DynamicNodeProperties
from proton.utils import BlockingConnection, LinkDetached

import test_security_policy_relay as relay
from harness import SLOW, RouterTestCase, conf_section, free_port
from mesh import Mesh
from test_http import Manager
from test_router_authsvc import AuthServiceTestCase
from test_router_policy import vhost_section

DENIED, FREE, RelaySend = relay.DENIED, relay.FREE, relay.RelaySend
DENIED_REPLY = "rejected amqp:unauthorized-access policy violation on reply-to"

TIMEOUT = 10 * SLOW
TIGHT = {"$default": {"users": "*", "remoteHosts": "*", "sources": "public.*",
                      "targets": "public.*", "allowAnonymousSender": True,
                      "allowDynamicSource": True}}
# may send management requests, but only reply to public.* addresses
MONITOR = {"$default": {"users": "*", "remoteHosts": "*", "sources": "public.*",
                        "targets": "public.*, $management", "allowAnonymousSender": True,
                        "allowDynamicSource": True}}
SPELLINGS = ["$management", "amqp:/$management", "amqp://127.0.0.1/$management",
             "amqp://R0/$management", "_local/$management", "amqp:/_local/$management",
             "_topo/0/R0/$management", "_topo/0/all/$management", "_topo/0/R0/_local/$management",
             "/$management", "$management/", "//$management", "$MANAGEMENT", "%24management",
             "_edge/R0/$management"]
# allowed by `public.*` as written, and never the management node: the
# router does not read `..` in an address
DOTS = ["public.x/../$management", "public.x/../../$management", "public.x/$management/.."]


class AttackPolicy(RouterTestCase):
    listening = staticmethod(relay.RelayPolicyTest.listening)
    receivers = relay.RelayPolicyTest.receivers
    bodies_until = relay.RelayPolicyTest.bodies_until

    def start(self, extra="", tight=TIGHT):
        port = free_port()
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes",
                                                            "defaultVhost": "free.example"})
                              + vhost_section("free.example", FREE)
                              + vhost_section("tight.example", tight)
                              + conf_section("listener", {
                                  "name": "tight", "host": "127.0.0.1", "port": port,
                                  "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no",
                                  "policyVhost": "tight.example", "stripAnnotations": "no"})
                              + extra)
        r.tight_url = "amqp://127.0.0.1:%d" % port
        self.wait_for("the tight listener", lambda: self.listening(port))
        return r

    def listener_names(self, r):
        from junction.management import Client, ConnectOptions
        with Client(ConnectOptions(url=r.url)) as m:
            return [x.get("name") for x in m.query_dicts("listener")]

    def create_listener_requests(self, addresses, reply_to="public.replies"):
        return [{"to": a, "override": o, "reply_to": reply_to,
                 "properties": {"operation": "CREATE", "type": "listener",
                                "name": "evil%d" % i},
                 "body": {"host": "127.0.0.1", "port": "0", "authenticatePeer": False,
                          "saslMechanisms": "ANONYMOUS"}}
                for i, (a, o) in enumerate(addresses)]

    def test_relay_to_every_spelling_of_management_is_refused_and_does_nothing(self):
        r = self.start()
        col = self.receivers(r.url, "public.replies")
        pairs = [(s, None) for s in SPELLINGS] + [("public.x", s) for s in SPELLINGS]
        msgs = self.create_listener_requests(pairs)
        for m in msgs:
            if m["override"] is None:
                del m["override"]
        self.assertEqual(RelaySend(r.tight_url, msgs).run(), [DENIED] * len(msgs))
        dots = self.create_listener_requests([(d, None) for d in DOTS])
        for m in dots:
            del m["override"]
        self.assertEqual(RelaySend(r.tight_url, dots).run(), ["released"] * len(dots))
        self.assertEqual(self.bodies_until(col, "public.replies"), [])
        self.assertEqual([n for n in self.listener_names(r) if n and n.startswith("evil")], [])

    def test_relay_to_long_odd_and_other_nodes_addresses_is_refused(self):
        r = self.start()
        col = self.receivers(r.url, "public.x")
        odd = ["public.x" + "y" * 1100, "secret.q", "PUBLIC.x", "public%2Ex", " public.x",
               "_topo/0/R0/public.x", "_topo/0/all/public.x", "_local/public.x",
               "amqp:/_topo/0/R0/public.x", "_edge/R0/public.x", "_topo/1/R0/public.x"]
        out = RelaySend(r.tight_url, [{"to": a} for a in odd]).run()
        self.assertEqual(out, [DENIED] * len(odd))
        self.assertEqual(self.bodies_until(col, "public.x"), [])

    def test_attach_to_every_spelling_of_management_is_refused(self):
        r = self.start()
        c = BlockingConnection(r.tight_url, timeout=TIMEOUT)
        try:
            for a in SPELLINGS + ["secret.q", "_local/public.x", "_topo/0/R0/public.x"]:
                with self.assertRaises(LinkDetached, msg=a) as e:
                    c.create_sender(a)
                self.assertIn("unauthorized-access", str(e.exception), a)
                with self.assertRaises(LinkDetached, msg=a):
                    c.create_receiver(a)
            for a in DOTS:
                c.create_sender(a)  # allowed as written, and not management
            c.create_sender("public.ok")  # the connection goes on
        finally:
            c.close()

    def test_link_route_and_auto_link_addresses_are_refused_at_attach(self):
        r = self.start(conf_section("linkRoute", {"prefix": "secret.lr", "direction": "in",
                                                  "containerId": "nobody"})
                       + conf_section("linkRoute", {"prefix": "secret.lr", "direction": "out",
                                                    "containerId": "nobody"})
                       + conf_section("autoLink", {"address": "secret.auto", "direction": "in",
                                                   "containerId": "nobody"}))
        c = BlockingConnection(r.tight_url, timeout=TIMEOUT)
        try:
            for a in ("secret.lr.x", "amqp:/secret.lr.x", "secret.auto"):
                for create in (c.create_sender, c.create_receiver):
                    with self.assertRaises(LinkDetached, msg=a) as e:
                        create(a)
                    self.assertIn("disallowed by local policy", str(e.exception), a)
        finally:
            c.close()

    def test_dynamic_target_reaches_only_the_node_the_router_named(self):
        r = self.start()
        col = self.receivers(r.url, "secret.q", "public.x")
        send = DynamicTargetToNode(r.tight_url, r.url, [{"to": "secret.q", "body": "d1"},
                                                        {"to": "public.x", "body": "d2"},
                                                        {"to": "$management", "body": "d3"}])
        self.assertEqual(send.run(), ["accepted"] * 3)
        self.assertTrue(send.address.startswith("amqp:/_$temp."), send.address)
        self.assertEqual(send.got, ["d1", "d2", "d3"])
        self.assertEqual(self.bodies_until(col, "secret.q"), [])

    def test_dynamic_source_naming_an_address_gets_a_fresh_one(self):
        r = self.start()
        c = BlockingConnection(r.tight_url, timeout=TIMEOUT)
        try:
            try:  # proton's blocking receiver wants the address it named back
                c.create_receiver(None, name="dyn", options=NamedDynamic("secret.q"))
            except LinkException:
                pass
            link = c.conn.link_head(0)
            while link and link.name != "dyn":
                link = link.next(0)
            got = link.remote_source.address
            self.assertTrue(link.remote_source.dynamic)
            self.assertIn("/temp.", got)
            self.assertNotIn("secret", got)
        finally:
            c.close()

    def test_receivers_on_other_routers_addresses_are_refused(self):
        r = self.start()
        c = BlockingConnection(r.url, timeout=TIMEOUT)  # the unrestricted group
        try:
            for a in ("_topo/0/R9/qdhello", "_topo/0/R9/$management", "_topo/1/all/x",
                      "_topo/1/R9/x", "_edge/R9/x", "amqp:/_topo/0/R9/qdrouter"):
                with self.assertRaises(LinkDetached, msg=a) as e:
                    c.create_receiver(a)
                self.assertIn("unauthorized-access", str(e.exception), a)
        finally:
            c.close()

    def test_management_reply_to_outside_the_targets_is_refused(self):
        r = self.start(tight=MONITOR)
        col = self.receivers(r.url, "public.replies", "secret.q")
        req = {"operation": "QUERY", "type": "org.amqp.management", "name": "self",
               "entityType": "listener"}
        spoofed = ["secret.q", "amqp:/secret.q", "amqp://h/secret.q", "_local/secret.q",
                   "_topo/0/R0/temp.AAAAAAAAAAAAAAAAAAAAAA"]
        msgs = [{"to": t, "reply_to": rt, "properties": req, "body": {}}
                for t in ("$management", "_local/$management", "amqp:/_topo/0/R0/$management")
                for rt in spoofed]
        ok = [{"to": "$management", "reply_to": "public.replies", "properties": req, "body": {}},
              {"to": "$management", "properties": req, "body": {}}]  # no reply asked for
        # $management is a target of the group: its reply-to is judged; the
        # other two spellings are not (the target check refuses them)
        self.assertEqual(RelaySend(r.tight_url, msgs + ok).run(),
                         [DENIED_REPLY] * len(spoofed) + [DENIED] * (len(msgs) - len(spoofed))
                         + ["accepted"] * 2)
        # a sender attached to $management is held to the same rule
        out = NamedSend(r.tight_url, "$management",
                        [{"reply_to": rt, "properties": req, "body": {}} for rt in spoofed]
                        + [{"reply_to": "public.replies", "properties": req, "body": {}}]).run()
        self.assertEqual(out, [DENIED_REPLY] * len(spoofed) + ["accepted"])
        self.wait_for("the allowed replies", lambda: len(col.got["public.replies"]) == 2)
        self.assertEqual(self.bodies_until(col, "secret.q"), [])
        self.assertEqual([m.properties["statusCode"] for m in col.got["public.replies"]],
                         [200, 200])
        # a management client on its own dynamic reply address is served
        m = Manager(r.tight_url)
        try:
            code, desc, _ = m.call(req, {"attributeNames": ["name"]})
            self.assertEqual(code, 200, desc)
        finally:
            m.close()


class NamedSend(RelaySend):
    """RelaySend on a sender whose target is address."""

    def __init__(self, url, address, messages):
        super().__init__(url, messages)
        self.address = address

    def on_start(self, event):
        self.timer = event.container.schedule(TIMEOUT, self)
        self.conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS")
        event.container.create_sender(self.conn, self.address)


class NamedDynamic(DynamicNodeProperties):
    """A dynamic source that also names an address."""

    def __init__(self, address):
        super().__init__({})
        self.address = address

    def apply(self, link):
        link.source.dynamic = True
        link.source.address = self.address


class DynamicTargetToNode(RelaySend):
    """RelaySend on a sender whose target is dynamic, with a receiver on
    node_url for the node the router names (address); the bodies it gets
    are in got. The sender has credit once that receiver is attached."""

    def __init__(self, url, node_url, messages):
        super().__init__(url, messages)
        self.node_url = node_url
        self.address = None
        self.got = []
        self.rx_conn = None

    def on_start(self, event):
        self.timer = event.container.schedule(TIMEOUT, self)
        self.conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS")
        s = event.container.create_sender(self.conn, None)
        s.target.dynamic = True

    def on_link_opened(self, event):
        if event.link.is_sender and self.rx_conn is None:
            self.address = event.link.remote_target.address
            self.rx_conn = event.container.connect(self.node_url, allowed_mechs="ANONYMOUS")
            event.container.create_receiver(self.rx_conn, self.address)

    def on_message(self, event):
        self.got.append(event.message.body)

    def finish(self):
        super().finish()
        if self.rx_conn:
            self.rx_conn.close()

    def on_timer_task(self, event):
        super().on_timer_task(event)
        if self.rx_conn:
            self.rx_conn.close()


if __name__ == "__main__":
    unittest.main()


class AttackMeshControl(RouterTestCase):
    """A client of an interior router of a two-router mesh."""

    def test_receivers_on_the_mesh_control_addresses_get_nothing(self):
        m = Mesh(self, ["A", "B"], [("A", "B", 1)])
        m.start()
        m.wait_converged()
        c = BlockingConnection(m["B"].url, timeout=TIMEOUT)
        try:
            rxs = [c.create_receiver(a, credit=10) for a in (
                "_topo/0/all/qdrouter", "_topo/0/all/qdrouter.ma", "_topo/0/all/qdhello",
                "_local/qdhello", "_local/qdrouter", "_local/qdrouter.ma", "qdrouter")]
            # hellos every second, and an address update: a receiver on A
            a = BlockingConnection(m["A"].url, timeout=TIMEOUT)
            try:
                a.create_receiver("mesh.news")
                deadline = time.monotonic() + 3 * SLOW
                while time.monotonic() < deadline:
                    for rx in rxs:
                        with self.assertRaises(Timeout, msg=rx.link.source.address):
                            rx.receive(timeout=0.1)
            finally:
                a.close()
        finally:
            c.close()


WILD_USERS = {"*": "pw", "#": "pw", "x*": "pw", "a.*.b": "pw", "alice": "pw"}


class AttackUserNames(AuthServiceTestCase):
    """Users an auth service names `*`, `#`, `x*`, `a.*.b` under a group
    whose sources are `${user}` and `home.${user}.*` (and targets
    `${user}`), then under one whose sourcePattern is `${user}.pat.#`:
    the name is matched literally, as 1.19 does; it never widens the
    group's rules. (A group gives a list or a pattern, not both, and
    `${user}` in a pattern is its first or last token: 1.19's rules.)"""

    def test_wildcards_in_a_user_name_are_literal(self):
        svc = self.service(users=WILD_USERS)
        lists = {"$default": {"users": "*", "remoteHosts": "*",
                              "sources": "${user}, home.${user}.*", "targets": "${user}"}}
        patterns = {"$default": {"users": "*", "remoteHosts": "*",
                                 "sourcePattern": "${user}.pat.#", "targets": "${user}"}}
        others = ("secret.q", "alice", "xyz", "home.alice.q", "pat.alice.q", "alice.pat.q",
                  "pat.alice", "a.z.b", "home.alice")
        for groups in (lists, patterns):
            r = self.relay_router(svc.port, listener={"saslMechanisms": "PLAIN",
                                                      "policyVhost": "v"},
                                  extra=conf_section("policy", {"enableVhostPolicy": "yes"})
                                  + vhost_section("v", groups))

            def allowed(user, address, sender=False):
                c = BlockingConnection(r.url, timeout=TIMEOUT, user=user, password="pw",
                                       allowed_mechs="PLAIN", allow_insecure_mechs=True)
                try:
                    (c.create_sender if sender else c.create_receiver)(address)
                    return True
                except LinkDetached:
                    return False
                finally:
                    c.close()

            for user in ("*", "#", "x*", "a.*.b"):
                if groups is lists:
                    self.assertTrue(allowed(user, user), user)
                    self.assertTrue(allowed(user, "home.%s.q" % user), user)
                for other in others:
                    if other == user:
                        continue
                    self.assertFalse(allowed(user, other), (user, other))
                    self.assertFalse(allowed(user, other, sender=True), (user, other))
            # the list and the pattern still serve a plain name
            if groups is lists:
                self.assertTrue(allowed("alice", "home.alice.q"))
            else:
                self.assertTrue(allowed("alice", "alice.pat.q.r"))
                self.assertFalse(allowed("alice", "bob.pat.q"))
