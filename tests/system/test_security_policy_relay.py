#!/usr/bin/python3
"""The vhost policy's target check on the anonymous relay (issue 28;
docs/design.md "Policy"): a client whose user group allows the targets
`public.*` and anonymous senders sends, on an anonymous sender, messages to
any address; each message whose address (properties.to, and the
x-opt-qd.to annotation where inbound router annotations are kept) the
group's targets do not allow is rejected with amqp:unauthorized-access
"policy violation on target", its credit given back, nothing delivered,
settled or not; `$management` is such an address, so management requests
through the relay change nothing. Each refusal counts in the vhost's
senderDenied; a link logs one line however many. The same holds on an edge
router under its own policy, over WebSocket, and for addresses of link
routes and auto-links. Under a vhost policy an
unauthenticated client's user-id is checked as `anonymous` (issue 25).
"""
import json
import os
import re
import socket
import subprocess
import sys
import threading
import unittest

from proton import Message, symbol
from proton.handlers import MessagingHandler
from proton.reactor import AtMostOnce, Container
from proton.utils import BlockingConnection

from harness import SLOW, RouterTestCase, conf_section, free_port
from test_edge import router_config
from test_router_policy import ALL, vhost_section

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
from junction.management import Client, ConnectOptions  # noqa: E402

INTEROP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop")
TIMEOUT = 20 * SLOW
DENIED = "rejected amqp:unauthorized-access policy violation on target"

FREE = {"$default": dict(ALL["$default"], allowAnonymousSender=True)}
TIGHT = {"$default": {"users": "*", "remoteHosts": "*", "sources": "*", "targets": "public.*",
                      "allowAnonymousSender": True, "allowDynamicSource": True}}
TIGHT_TARGETS = "public.*"


def node():
    for p in ("/usr/bin/node", "/usr/bin/nodejs", "/usr/local/bin/node"):
        if os.path.exists(p):
            return p
    return "node"


class RelaySend(MessagingHandler):
    """An anonymous sender on url that sends messages (dicts: to, override
    (x-opt-qd.to), user_id, body, properties), unsettled unless settled;
    outcomes[i] is "accepted", "rejected CONDITION DESCRIPTION", ... or
    "sent" for a settled one. Closes the connection when every outcome is
    known (settled: when all are sent)."""

    def __init__(self, url, messages, settled=False):
        super().__init__(auto_settle=True)
        self.url = url
        self.messages = messages
        self.settled = settled
        self.outcomes = [None] * len(messages)
        self.error = None
        self.next = 0
        self.index = {}
        self.conn = None
        self.timer = None

    def run(self):
        Container(self).run()
        if self.error:
            raise AssertionError(self.error)
        return self.outcomes

    def on_start(self, event):
        self.timer = event.container.schedule(TIMEOUT, self)
        self.conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS")
        event.container.create_sender(self.conn, None,
                                      options=AtMostOnce() if self.settled else None)

    def on_timer_task(self, event):
        self.error = "timed out: %r" % self.outcomes
        self.conn.close()

    def finish(self):
        if self.timer:
            self.timer.cancel()
            self.timer = None
        self.conn.close()

    def on_sendable(self, event):
        while event.sender.credit and self.next < len(self.messages):
            w = self.messages[self.next]
            m = Message(address=w.get("to"), body=w.get("body", "relay %d" % self.next),
                        properties=w.get("properties"), reply_to=w.get("reply_to"))
            if "override" in w:
                m.annotations = {symbol("x-opt-qd.to"): w["override"]}
            if "user_id" in w:
                m.user_id = w["user_id"]
            d = event.sender.send(m)
            self.index[d] = self.next
            if self.settled:
                self.outcomes[self.next] = "sent"
            self.next += 1
        if self.settled and self.next == len(self.messages):
            self.finish()

    def record(self, event, outcome):
        self.outcomes[self.index.pop(event.delivery)] = outcome
        if all(o is not None for o in self.outcomes):
            self.finish()

    def on_accepted(self, event):
        self.record(event, "accepted")

    def on_released(self, event):
        self.record(event, "released")

    def on_rejected(self, event):
        c = event.delivery.remote.condition
        self.record(event, "rejected %s %s" % (c.name, c.description) if c else "rejected")

    def on_link_error(self, event):
        self.error = "link error: %s" % event.link.remote_condition
        self.conn.close()

    def on_connection_error(self, event):
        self.error = "connection error: %s" % event.connection.remote_condition
        self.conn.close()

    def on_transport_error(self, event):
        self.error = "transport error: %s" % event.transport.condition
        self.conn.close()


class Collector(MessagingHandler):
    """Receivers on url, one per address; got[address] lists the messages
    received (each accepted)."""

    def __init__(self, url, addresses):
        super().__init__()
        self.url = url
        self.addresses = addresses
        self.got = {a: [] for a in addresses}
        self.opened = 0
        self.error = None
        self.stopping = False
        self.thread = None
        self.conn = None

    def on_start(self, event):
        self.conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS")
        for a in self.addresses:
            event.container.create_receiver(self.conn, a, name=a)
        event.container.schedule(0.1, self)

    def on_timer_task(self, event):
        if self.stopping:
            self.conn.close()
        else:
            event.container.schedule(0.1, self)

    def on_link_opened(self, event):
        if event.receiver:
            self.opened += 1

    def on_message(self, event):
        self.got[event.receiver.name].append(event.message)

    def on_link_error(self, event):
        self.error = str(event.link.remote_condition)

    def on_transport_error(self, event):
        self.error = str(event.transport.condition)

    def stop(self):
        self.stopping = True
        if self.thread:
            self.thread.join(10 * SLOW)


class RelayPolicyTest(RouterTestCase):

    def start(self, extra=""):
        """A router under a vhost policy: its own listener for unrestricted
        clients (vhost free.example), r.tight_url a listener whose clients
        fall in tight.example (targets public.*), keeping inbound router
        annotations."""
        port = free_port()
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes",
                                                            "defaultVhost": "free.example"})
                              + vhost_section("free.example", FREE)
                              + vhost_section("tight.example", TIGHT)
                              + conf_section("listener", {
                                  "name": "tight", "host": "127.0.0.1", "port": port,
                                  "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no",
                                  "policyVhost": "tight.example", "stripAnnotations": "no"})
                              + extra)
        r.tight_url = "amqp://127.0.0.1:%d" % port
        self.wait_for("the tight listener", lambda: self.listening(port))
        return r

    @staticmethod
    def listening(port):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    def receivers(self, url, *addresses):
        """An unrestricted client on url receiving (and accepting) on each
        of addresses, in its own thread; stopped at the test's end."""
        col = Collector(url, addresses)
        col.thread = threading.Thread(target=Container(col).run, daemon=True)
        col.thread.start()
        self.addCleanup(col.stop)
        self.wait_for("the receivers attached", lambda: col.opened == len(addresses) or col.error)
        self.assertIsNone(col.error)
        return col

    def bodies_until(self, col, address):
        """What col received on address, in order, up to a marker message
        that an unrestricted client sends there now: every message the
        router had let through before comes first."""
        c = BlockingConnection(col.url, timeout=10 * SLOW)
        try:
            c.create_sender(address).send(Message(body="marker"))
        finally:
            c.close()
        self.wait_for("the marker on " + address, lambda: "marker" in [m.body for m in col.got[address]])
        got = [m.body for m in col.got[address]]
        del col.got[address][:got.index("marker") + 1]
        return got[:got.index("marker")]

    def sender_denied(self, url, vhost="tight.example"):
        with Client(ConnectOptions(url=url)) as m:
            rows = {x["hostname"]: x for x in m.query_dicts("vhostStats")}
        return rows[vhost]["senderDenied"]

    def rhea(self, url, messages, settled=False):
        p = subprocess.run([node(), os.path.join(INTEROP, "relay.js"), "--url", url,
                            "--messages", json.dumps(messages), "--settled",
                            "1" if settled else "0", "--timeout", str(int(TIMEOUT))],
                           capture_output=True, text=True, timeout=TIMEOUT + 15,
                           stdin=subprocess.DEVNULL)
        lines = p.stdout.strip().splitlines()
        self.assertTrue(lines, p.stderr)
        out = json.loads(lines[-1])
        self.assertIsNone(out["error"], (out, p.stderr))
        return out["outcomes"]

    def check_public_secret(self, r, col, send, settled):
        """send(url, messages, settled) -> outcomes; to public.x, secret.q,
        public.y (col receives on each): the secret one refused, the public
        ones delivered."""
        before = self.sender_denied(r.url)
        out = send(r.tight_url, [{"to": "public.x", "body": "p1"}, {"to": "secret.q", "body": "s1"},
                                 {"to": "amqp://host.example/secret.q", "body": "s2"},
                                 {"to": "public.y", "body": "p2"}], settled)
        if settled:
            self.assertEqual(out, ["sent"] * 4)
        else:
            self.assertEqual(out, ["accepted", DENIED, DENIED, "accepted"])
        self.assertEqual(self.bodies_until(col, "secret.q"), [])
        self.assertEqual(self.bodies_until(col, "public.x"), ["p1"])
        self.assertEqual(self.bodies_until(col, "public.y"), ["p2"])
        self.assertEqual(self.sender_denied(r.url), before + 2)

    def test_proton_unsettled_and_settled_to_a_denied_target_are_refused(self):
        r = self.start()
        col = self.receivers(r.url, "public.x", "public.y", "secret.q")
        for settled in (False, True):
            with self.subTest(settled=settled):
                self.check_public_secret(
                    r, col, lambda url, m, s: RelaySend(url, m, settled=s).run(), settled)

    def test_rhea_unsettled_and_settled_to_a_denied_target_are_refused(self):
        r = self.start()
        col = self.receivers(r.url, "public.x", "public.y", "secret.q")
        for settled in (False, True):
            with self.subTest(settled=settled):
                self.check_public_secret(r, col, self.rhea, settled)

    def test_management_through_the_relay_changes_nothing(self):
        r = self.start()
        evil_port = free_port()
        wide = {"$default": dict(TIGHT["$default"], targets="*")}
        requests = [
            {"to": "$management", "reply_to": "public.replies",
             "properties": {"operation": "UPDATE", "type": "vhost",
                            "identity": "vhost/tight.example"},
             "body": {"groups": wide}},
            {"to": "$management", "reply_to": "public.replies",
             "properties": {"operation": "CREATE", "type": "listener", "name": "evil"},
             "body": {"host": "127.0.0.1", "port": str(evil_port), "authenticatePeer": False,
                      "saslMechanisms": "ANONYMOUS"}},
        ]
        col = self.receivers(r.url, "public.replies", "secret.q")
        self.assertEqual(RelaySend(r.tight_url, requests).run(), [DENIED, DENIED])
        self.assertEqual(RelaySend(r.tight_url, requests, settled=True).run(), ["sent"] * 2)
        self.assertEqual(self.rhea(r.tight_url, requests), [DENIED, DENIED])
        self.assertEqual(self.rhea(r.tight_url, requests, settled=True), ["sent"] * 2)
        self.assertEqual(self.bodies_until(col, "public.replies"), [])  # no reply at all
        with Client(ConnectOptions(url=r.url)) as m:
            vhosts = {v["hostname"]: v for v in m.query_dicts("vhost")}
            names = [x.get("name") for x in m.query_dicts("listener")]
        groups = vhosts["tight.example"]["groups"]
        if isinstance(groups, str):
            groups = json.loads(groups)
        self.assertEqual(groups["$default"]["targets"], TIGHT_TARGETS, groups)
        self.assertNotIn("evil", names)
        self.assertFalse(self.listening(evil_port))
        self.assertEqual(RelaySend(r.tight_url, [{"to": "secret.q"}]).run(), [DENIED])
        # the same requests from an unrestricted client's anonymous sender
        # do what they say: the refusals above were the policy's
        self.assertEqual(RelaySend(r.url, requests).run(), ["accepted"] * 2)
        self.wait_for("two replies", lambda: len(col.got["public.replies"]) == 2)
        codes = sorted(m.properties["statusCode"] for m in col.got["public.replies"])
        self.assertEqual(codes, [200, 201], [m.properties for m in col.got["public.replies"]])
        self.wait_for("the evil listener", lambda: self.listening(evil_port))
        self.assertEqual(RelaySend(r.tight_url, [{"to": "secret.q"}]).run(), ["accepted"])

    def test_to_override_cannot_bypass_the_check(self):
        r = self.start()
        col = self.receivers(r.url, "public.x", "secret.q")
        msgs = [{"to": "public.x", "override": "secret.q", "body": "o1"},
                {"override": "secret.q", "body": "o2"},
                {"to": "secret.q", "override": "public.x", "body": "o3"},
                {"override": "public.x", "body": "o4"}]
        self.assertEqual(RelaySend(r.tight_url, msgs).run(),
                         [DENIED, DENIED, DENIED, "accepted"])
        self.assertEqual(self.rhea(r.tight_url, msgs), [DENIED, DENIED, DENIED, "accepted"])
        self.assertEqual(self.bodies_until(col, "secret.q"), [])
        self.assertEqual(self.bodies_until(col, "public.x"), ["o4", "o4"])

    def test_link_route_and_auto_link_addresses_are_checked(self):
        r = self.start(conf_section("linkRoute", {"prefix": "secret.lr", "direction": "in",
                                                  "containerId": "nobody"})
                       + conf_section("linkRoute", {"prefix": "secret.lr", "direction": "out",
                                                    "containerId": "nobody"})
                       + conf_section("autoLink", {"address": "secret.auto", "direction": "out",
                                                   "containerId": "nobody"}))
        before = self.sender_denied(r.url)
        msgs = [{"to": "secret.lr.x"}, {"to": "secret.auto"}]
        self.assertEqual(RelaySend(r.tight_url, msgs).run(), [DENIED, DENIED])
        self.assertEqual(self.rhea(r.tight_url, msgs), [DENIED, DENIED])
        self.assertEqual(self.sender_denied(r.url), before + 4)

    def test_credit_comes_back_and_a_flood_logs_one_line(self):
        r = self.start()
        col = self.receivers(r.url, "public.x", "secret.q")
        before = self.sender_denied(r.url)
        # more denied messages than the link's capacity (250), then allowed
        # ones: only given-back credit lets these through
        for settled in (True, False):
            flood = [{"to": "secret.q", "body": i} for i in range(300)]
            ok = [{"to": "public.x", "body": "ok%d" % i} for i in range(5)]
            out = RelaySend(r.tight_url, flood + ok, settled=settled).run()
            if not settled:
                self.assertEqual(out, [DENIED] * 300 + ["accepted"] * 5)
            self.assertEqual(self.bodies_until(col, "public.x"),
                             ["ok%d" % i for i in range(5)])
        self.assertEqual(self.bodies_until(col, "secret.q"), [])
        flood = [{"to": "secret.q", "body": i} for i in range(100)]
        self.assertEqual(RelaySend(r.tight_url, flood).run(), [DENIED] * 100)
        self.assertEqual(self.sender_denied(r.url), before + 700)
        lines = re.findall(r"POLICY \(info\) \[C\d+\]\[L\d+\] DENY AMQP Transfer for user "
                           r"'anonymous', rhost '127\.0\.0\.1', vhost 'tight\.example', "
                           r"address 'secret\.q': target not allowed.*further denials on this "
                           r"link are not logged", r.log())
        self.assertEqual(len(lines), 3, lines)  # one per link
        self.assertEqual(len(re.findall("DENY AMQP Transfer", r.log())), 3)

    def test_edge_router_checks_its_own_clients(self):
        ir_port = free_port()
        interior = self.start_router(config=router_config("interior", "I", ir_port))
        policy = (conf_section("policy", {"enableVhostPolicy": "yes",
                                          "defaultVhost": "tight.example"})
                  + vhost_section("tight.example", TIGHT))
        edge = self.start_router(config=router_config("edge", "E", uplinks=[ir_port]) + policy)
        self.wait_for("edge attached", lambda: "Edge router 'E' attached" in interior.log())
        col = self.receivers(interior.url, "public.x", "secret.q")
        msgs = [{"to": "secret.q", "body": "s"}, {"to": "public.x", "body": "p"},
                {"to": "$management", "body": "m",
                 "properties": {"operation": "QUERY", "type": "listener"}}]
        self.wait_for("public.x known on the edge", lambda: RelaySend(
            edge.url, [{"to": "public.x", "body": "probe"}]).run() == ["accepted"])
        self.assertEqual(RelaySend(edge.url, msgs).run(), [DENIED, "accepted", DENIED])
        self.assertEqual(self.rhea(edge.url, msgs), [DENIED, "accepted", DENIED])
        self.assertEqual(self.bodies_until(col, "secret.q"), [])
        got = self.bodies_until(col, "public.x")
        self.assertEqual([b for b in got if b != "probe"], ["p", "p"])
        self.assertIn("DENY AMQP Transfer", edge.log())
        self.assertNotIn("DENY AMQP Transfer", interior.log())

    def test_websocket_client_is_checked(self):
        for pkg in ("rhea", "ws"):
            if not os.path.isdir(os.path.join(INTEROP, "node_modules", pkg)):
                self.fail("%s is not installed in %s/node_modules: run `npm ci` there"
                          % (pkg, INTEROP))
        ws_port = free_port()
        r = self.start(conf_section("listener", {"name": "web", "host": "127.0.0.1",
                                                 "port": ws_port, "http": "yes",
                                                 "policyVhost": "tight.example"}))
        self.wait_for("the http listener", lambda: self.listening(ws_port))
        col = self.receivers(r.url, "public.x", "secret.q")
        before = self.sender_denied(r.url)
        url = "ws://127.0.0.1:%d" % ws_port
        msgs = [{"to": "secret.q", "body": "s"}, {"to": "public.x", "body": "p"},
                {"to": "$management", "body": {},
                 "properties": {"operation": "QUERY", "type": "listener"}}]
        self.assertEqual(self.rhea(url, msgs), [DENIED, "accepted", DENIED])
        self.assertEqual(self.rhea(url, msgs, settled=True), ["sent"] * 3)
        self.assertEqual(self.bodies_until(col, "secret.q"), [])
        self.assertEqual(self.bodies_until(col, "public.x"), ["p", "p"])
        self.assertEqual(self.sender_denied(r.url), before + 4)

    def test_anonymous_user_id_checked_under_a_vhost_policy(self):
        r = self.start()
        col = self.receivers(r.url, "public.x")
        forged = "rejected amqp:unauthorized-access user_id proxy violation"
        msgs = [{"to": "public.x", "user_id": b"alice", "body": "forged"},
                {"to": "public.x", "user_id": b"anonymous", "body": "own"},
                {"to": "public.x", "body": "none"}]
        self.assertEqual(RelaySend(r.tight_url, msgs).run(), [forged, "accepted", "accepted"])
        # credit came back: more after it go through
        self.assertEqual(RelaySend(r.tight_url, msgs[:1] * 300 + msgs[2:]).run(),
                         [forged] * 300 + ["accepted"])
        self.assertEqual(self.bodies_until(col, "public.x"),
                         ["own", "none", "none"])
        # without a vhost policy an anonymous client is not checked (as before)
        plain = self.start_router()
        col2 = self.receivers(plain.url, "q")
        self.assertEqual(RelaySend(plain.url, [{"to": "q", "user_id": b"alice"}]).run(),
                         ["accepted"])
        self.assertEqual(len(self.bodies_until(col2, "q")), 1)


if __name__ == "__main__":
    unittest.main()
