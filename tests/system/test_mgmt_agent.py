#!/usr/bin/python3
"""System tests of the $management agent (docs/protocol.md, "Management
requests").

Each test starts real junctiond processes on 127.0.0.1 (harness.py) and
talks to them with python3-qpid-proton's BlockingConnection and
SyncRequestResponse, as qdmanage does: a sender to `$management`, a
dynamic receiver for the replies, string correlation-ids.

What each test asserts is in its name and docstring. Every wait is bounded
(the client's timeout, or a polling deadline); the routers are stopped by
the harness, which also requires a clean exit (no pool leak).
"""
import socket
import time
import unittest

from proton import Message, symbol
from proton.reactor import AtMostOnce, Container
from proton.utils import BlockingConnection, ConnectionClosed, SyncRequestResponse

from harness import SLOW, RouterTestCase, free_port
from mesh import Mesh

PREFIX = "org.apache.qpid.dispatch."
TIMEOUT = 10 * SLOW


class Manager:
    """A management client on its own connection."""

    def __init__(self, router):
        self.conn = BlockingConnection(router.url, timeout=TIMEOUT)
        self.client = SyncRequestResponse(self.conn, "$management")

    def call(self, props, body=None):
        reply = self.client.call(Message(body={} if body is None else body,
                                         properties=props))
        return reply.properties["statusCode"], reply.properties["statusDescription"], reply.body

    def query(self, entity_type, names=(), **paging):
        props = {"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                 "entityType": entity_type}
        props.update(paging)
        code, desc, body = self.call(props, {"attributeNames": list(names)})
        if code != 200:
            raise AssertionError("QUERY %s: %s %s" % (entity_type, code, desc))
        return [dict(zip(body["attributeNames"], row)) for row in body["results"]]

    def close(self):
        self.conn.close()


class ManagementTest(RouterTestCase):

    def manager(self, router):
        m = Manager(router)
        self.addCleanup(m.close)
        return m

    def test_link_counters_move_by_the_number_sent(self):
        """QUERY router.link: the sender's and the receiver's deliveryCount
        grow by exactly the messages sent, and the receiver's settleRate is
        the 17 settled over 5 s (3 a second) for the next few seconds;
        connections and addresses list them, and each connection's
        lastDlvSeconds is null until it carried a delivery, then the
        seconds since (1.19)."""
        r = self.start_router()
        mgr = self.manager(r)
        rx_conn = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(rx_conn.close)
        receiver = rx_conn.create_receiver("mgmt.counters", credit=100)
        tx_conn = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(tx_conn.close)
        # pre-settled: one blocking client cannot wait for a settlement that
        # needs the other to run
        sender = tx_conn.create_sender("mgmt.counters", options=AtMostOnce())

        def links():
            return [l for l in mgr.query("router.link", ["linkDir", "owningAddr",
                                                         "deliveryCount", "connectionId"])
                    if l["owningAddr"] == "M0mgmt.counters"]

        before = {l["linkDir"]: l["deliveryCount"] for l in links()}
        self.assertEqual(sorted(before), ["in", "out"])
        ids = sorted(str(l["connectionId"]) for l in links())

        def last_dlv():  # connection lastDlvSeconds of the two clients
            return [c["lastDlvSeconds"] for c in
                    sorted(mgr.query(PREFIX + "connection", ["identity", "lastDlvSeconds"]),
                           key=lambda c: c["identity"]) if c["identity"] in ids]
        self.assertEqual(last_dlv(), [None, None], "no delivery yet: no lastDlvSeconds")
        for i in range(17):
            sender.send(Message(body="m%d" % i))
        # pre-settled sends return at once: run the sender's connection
        # until proton has framed them all, then make a round trip (an
        # attach) so that those frames have been written
        tx_conn.wait(lambda: sender.link.queued == 0, timeout=TIMEOUT)
        tx_conn.create_receiver("mgmt.sync")
        for i in range(17):
            self.assertEqual(receiver.receive(TIMEOUT).body, "m%d" % i)
        after = {l["linkDir"]: l["deliveryCount"] for l in links()}
        self.assertEqual(after["in"] - before["in"], 17)
        self.assertEqual(after["out"] - before["out"], 17)
        self.assertTrue(all(isinstance(s, int) and 0 <= s <= 5 for s in last_dlv()), last_dlv())

        def out_rate():
            return [l["settleRate"] for l in mgr.query("router.link", ["linkDir", "owningAddr",
                                                                        "settleRate"])
                    if l["owningAddr"] == "M0mgmt.counters" and l["linkDir"] == "out"]
        self.wait_for("settleRate 17 / 5 s", lambda: out_rate() == [3], timeout=3 * SLOW)

        conns = mgr.query(PREFIX + "connection", ["identity", "dir", "role", "container"])
        self.assertGreaterEqual(len(conns), 3)
        self.assertTrue(all(c["dir"] == "in" and c["role"] == "normal" for c in conns))
        addrs = {a["name"]: a for a in mgr.query(PREFIX + "router.address",
                                                 ["name", "distribution", "subscriberCount"])}
        self.assertEqual(addrs["M0mgmt.counters"]["subscriberCount"], 1)
        self.assertEqual(addrs["M0mgmt.counters"]["distribution"], "balanced")
        router = mgr.query("router")
        self.assertEqual(len(router), 1)
        self.assertEqual(router[0]["id"], r.name)
        self.assertGreaterEqual(router[0]["deliveriesIngress"], 17)

    def test_create_listener_then_connect_then_delete(self):
        """CREATE listener listens at once; a client connects through it;
        DELETE stops the listening."""
        r = self.start_router()
        mgr = self.manager(r)
        port = free_port()
        code, desc, body = mgr.call({"operation": "CREATE", "type": PREFIX + "listener",
                                     "name": "extra"},
                                    {"host": "127.0.0.1", "port": str(port),
                                     "saslMechanisms": "ANONYMOUS"})
        self.assertEqual(code, 201, desc)
        self.assertEqual(body["port"], str(port))
        c = BlockingConnection("amqp://127.0.0.1:%d" % port, timeout=TIMEOUT)
        rcv = c.create_receiver("through.extra")
        snd = c.create_sender("through.extra", options=AtMostOnce())
        snd.send(Message(body="hello"))
        self.assertEqual(rcv.receive(TIMEOUT).body, "hello")
        c.close()
        names = [l["name"] for l in mgr.query("listener", ["name"])]
        self.assertIn("extra", names)
        code, desc, _ = mgr.call({"operation": "DELETE", "type": "listener", "name": "extra"})
        self.assertEqual(code, 204, desc)
        self.assertNotIn("extra", [l["name"] for l in mgr.query("listener", ["name"])])
        self.wait_for("the listener to close", lambda: not self._can_connect(port))

    def test_create_listener_on_a_port_in_use_is_refused(self):
        """CREATE listener on a port something else holds answers 400 (the
        socket is bound at once, so the failure is known before the reply)
        and leaves no listener entity behind; the same name can then be
        created on a free port."""
        import socket
        r = self.start_router()
        mgr = self.manager(r)
        holder = socket.socket()
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        try:
            busy = holder.getsockname()[1]
            code, desc, _ = mgr.call({"operation": "CREATE", "type": "listener", "name": "dup"},
                                     {"host": "127.0.0.1", "port": str(busy)})
            self.assertEqual(code, 400, desc)
            self.assertNotIn("dup", [l["name"] for l in mgr.query("listener", ["name"])])
        finally:
            holder.close()
        port = free_port()
        code, desc, _ = mgr.call({"operation": "CREATE", "type": "listener", "name": "dup"},
                                 {"host": "127.0.0.1", "port": str(port)})
        self.assertEqual(code, 201, desc)
        self.assertTrue(self._can_connect(port))
        code, desc, _ = mgr.call({"operation": "DELETE", "type": "listener", "name": "dup"})
        self.assertEqual(code, 204, desc)
        self.wait_for("the listener to close", lambda: not self._can_connect(port))

    @staticmethod
    def _can_connect(port):
        import socket
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False

    def test_create_address_multicast_applies(self):
        """CREATE router.config.address multicast: an address created
        afterwards under the prefix is multicast (both receivers get the
        message)."""
        r = self.start_router()
        mgr = self.manager(r)
        code, desc, body = mgr.call({"operation": "CREATE", "type": "router.config.address",
                                     "name": "mc"},
                                    {"prefix": "fanout", "distribution": "multicast"})
        self.assertEqual(code, 201, desc)
        self.assertEqual(body["distribution"], "multicast")
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        r1 = c.create_receiver("fanout.news", name="r1")
        r2 = c.create_receiver("fanout.news", name="r2")
        snd = c.create_sender("fanout.news", options=AtMostOnce())
        snd.send(Message(body="both"))
        self.assertEqual(r1.receive(TIMEOUT).body, "both")
        self.assertEqual(r2.receive(TIMEOUT).body, "both")
        addrs = {a["name"]: a for a in mgr.query("router.address", ["name", "distribution"])}
        self.assertEqual(addrs["M0fanout.news"]["distribution"], "multicast")
        listed = mgr.query(PREFIX + "router.config.address", ["name", "prefix", "distribution"])
        self.assertEqual(listed, [{"name": "mc", "prefix": "fanout",
                                   "distribution": "multicast"}])

    def test_delete_connector_closes_its_connection(self):
        """CREATE connector to another router: its connection appears (dir
        out) and the connector shows connectionStatus SUCCESS with the
        "Connection Opened: dir=out" line in connectionMsg (a connector to
        no one: CONNECTING, with its "Connection to ... failed" line);
        DELETE connector: the connection goes and is not retried."""
        a = self.start_router()
        b = self.start_router()
        mgr_a = self.manager(a)
        mgr_b = self.manager(b)
        code, desc, _ = mgr_a.call({"operation": "CREATE", "type": "connector", "name": "toB"},
                                   {"host": "127.0.0.1", "port": str(b.port)})
        self.assertEqual(code, 201, desc)
        code, desc, _ = mgr_a.call({"operation": "CREATE", "type": "connector", "name": "toNone"},
                                   {"host": "127.0.0.1", "port": str(free_port())})
        self.assertEqual(code, 201, desc)

        def outgoing():
            return [c for c in mgr_a.query("connection", ["dir", "host"]) if c["dir"] == "out"]

        def status(name):
            rows = mgr_a.query("connector", ["name", "connectionStatus", "connectionMsg"])
            return [(r["connectionStatus"], r["connectionMsg"] or "")
                    for r in rows if r["name"] == name][0]

        self.wait_for("the connector's connection", lambda: len(outgoing()) == 1)
        self.assertEqual(outgoing()[0]["host"], "127.0.0.1:%d" % b.port)
        self.wait_for("toB's status", lambda: status("toB")[0] == "SUCCESS")
        self.assertIn("Connection Opened: dir=out", status("toB")[1])
        self.wait_for("toNone's failure", lambda: "failed" in status("toNone")[1])
        self.assertEqual(status("toNone")[0], "CONNECTING")
        code, desc, _ = mgr_a.call({"operation": "DELETE", "type": "connector", "name": "toNone"})
        self.assertEqual(code, 204, desc)
        self.assertEqual(len(mgr_b.query("connection")), 2)  # a's connector + mgr_b
        code, desc, _ = mgr_a.call({"operation": "DELETE", "type": "connector", "name": "toB"})
        self.assertEqual(code, 204, desc)
        self.wait_for("the connection to go", lambda: not outgoing())
        self.wait_for("b to see it go", lambda: len(mgr_b.query("connection")) == 1)
        time.sleep(0.5)  # past the first retry delay: no new connection
        self.assertEqual(outgoing(), [])

    def test_socket_address_family_keeps_to_its_family(self):
        """A listener on every interface with socketAddressFamily IPv4
        listens on IPv4 only (::1 is refused, 127.0.0.1 answers), with
        IPv6 on IPv6 only; a connector with protocolFamily IPv6 reaches
        the latter at ::1."""
        r = self.start_router()
        mgr = self.manager(r)
        ports = {}
        for family in ("IPv4", "IPv6"):
            ports[family] = free_port()
            code, desc, _ = mgr.call({"operation": "CREATE", "type": "listener",
                                      "name": "on" + family},
                                     {"host": "", "port": str(ports[family]),
                                      "socketAddressFamily": family})
            self.assertEqual(code, 201, desc)
        for family, yes, no in (("IPv4", "127.0.0.1", "::1"), ("IPv6", "::1", "127.0.0.1")):
            socket.create_connection((yes, ports[family]), timeout=TIMEOUT).close()
            with self.assertRaises(OSError):
                socket.create_connection((no, ports[family]), timeout=TIMEOUT).close()
        code, desc, _ = mgr.call({"operation": "CREATE", "type": "connector", "name": "to6"},
                                 {"host": "::1", "port": str(ports["IPv6"]),
                                  "protocolFamily": "IPv6"})
        self.assertEqual(code, 201, desc)
        self.wait_for("the connector's connection", lambda: [
            c for c in mgr.query("connection", ["dir", "host"])
            if c["dir"] == "out" and c["host"].startswith("::1")])

    def test_message_logging_components_log_each_message(self):
        """A listener's messageLoggingComponents: each message received or
        sent on its connections is a MESSAGE info line with the properties
        and application properties it names, as 1.19 writes them; an
        unknown component is refused by name."""
        r = self.start_router()
        mgr = self.manager(r)
        code, desc, _ = mgr.call({"operation": "CREATE", "type": "listener", "name": "bad"},
                                 {"host": "127.0.0.1", "port": str(free_port()),
                                  "messageLoggingComponents": "subject,colour"})
        self.assertEqual(code, 400, desc)
        self.assertIn("'colour'", desc)
        port = free_port()
        code, desc, _ = mgr.call({"operation": "CREATE", "type": "listener", "name": "logged"},
                                 {"host": "127.0.0.1", "port": str(port),
                                  "messageLoggingComponents": "user-id,subject,app-properties"})
        self.assertEqual(code, 201, desc)
        conn = BlockingConnection("127.0.0.1:%d" % port, timeout=TIMEOUT)
        self.addCleanup(conn.close)
        rcv = conn.create_receiver("msglog.q")
        snd = conn.create_sender("msglog.q", options=AtMostOnce())
        snd.send(Message(body="x", subject="s1", correlation_id=7,
                         properties={"k": [1, 2], "sym": symbol("v")}))
        rcv.receive(timeout=TIMEOUT)
        code, _, lines = mgr.call({"operation": "GET-LOG"})
        mine = [l[2] for l in lines if l[0] == "MESSAGE" and "subject=" in l[2]]
        want = 'Message{subject="s1", app-properties={"k"=[1, 2], "sym"=:"v"}}'
        self.assertEqual(len(mine), 2, mine)
        self.assertTrue(mine[0].endswith("] Received " + want), mine)
        self.assertTrue(mine[1].endswith("] Sent " + want), mine)

    def test_bad_requests_get_their_status(self):
        """Every malformed or impossible request is answered with its
        status (none is dropped)."""
        r = self.start_router()
        mgr = self.manager(r)
        cases = [
            ({"operation": "FROB", "type": "listener", "name": "x"}, None, 501),
            ({"operation": "READ", "type": "nosuch", "name": "x"}, None, 400),
            ({"operation": "READ", "type": "listener"}, None, 400),
            ({"operation": "READ", "type": "listener", "name": "absent"}, None, 404),
            ({"operation": "CREATE", "type": "listener", "name": "l"}, "not a map", 400),
            ({"operation": "CREATE", "type": "listener", "name": "l"}, {"bogus": 1}, 400),
            ({"operation": "CREATE", "type": "listener", "name": "l"},
             {"port": "1", "maxFrameSize": "big"}, 400),
            ({"operation": "CREATE", "type": "router.config.address"},
             {"prefix": "a", "pattern": "b"}, 400),
            ({"operation": "QUERY", "entityType": "listener"}, {"attributeNames": ["zz"]}, 404),
            ({"operation": "QUERY", "entityType": "nosuch"}, None, 400),
            ({"operation": "DELETE", "type": "router.link", "identity": "1"}, None, 501),
            ({"operation": "UPDATE", "type": "log", "name": "log/DEFAULT"},
             {"enable": "loud"}, 400),
            # a client's mistake: 400, not 1.19's 500 (docs/compat.md)
            ({"operation": "UPDATE", "type": "log", "name": "log/DEFAULT"},
             {"outputFile": ""}, 400),
        ]
        for props, body, status in cases:
            code, desc, reply_body = mgr.call(props, body)
            self.assertEqual(code, status, "%s %s: %s" % (props, body, desc))
            self.assertEqual(reply_body, {})
        code, _, nodes = mgr.call({"operation": "GET-MGMT-NODES"})
        self.assertEqual((code, nodes), (200, []))
        code, _, types = mgr.call({"operation": "GET-TYPES"})
        self.assertIn(PREFIX + "listener", types)

    def test_create_takes_an_attribute_given_as_null_as_not_given(self):
        """A CREATE body entry whose value is null asks for nothing, as in
        1.19: `qdmanage create ... address=A ` (a trailing space) sends
        '': null, and the entity is created; a value for an unknown name
        is still refused by name."""
        r = self.start_router()
        mgr = self.manager(r)
        ex = "org.apache.qpid.dispatch.router.config.exchange"
        code, desc, body = mgr.call({"operation": "CREATE", "type": ex, "name": "e1"},
                                    {"address": "a1", "": None, "bogus": None})
        self.assertEqual(code, 201, desc)
        self.assertEqual((body["name"], body["address"]), ("e1", "a1"))
        self.assertNotIn("", body)
        self.assertNotIn("bogus", body)
        code, desc, _ = mgr.call({"operation": "CREATE", "type": ex, "name": "e2"},
                                 {"address": "a2", "bogus": 1})
        self.assertEqual((code, desc), (400, "Unknown attributes ['bogus'] for type "
                                             "router.config.exchange."))

    def test_exchange_create_without_a_name_is_refused(self):
        """An exchange is known by its name (bindings name it): a CREATE
        without one is refused, in 1.19's words; nothing is created."""
        r = self.start_router()
        mgr = self.manager(r)
        ex = "org.apache.qpid.dispatch.router.config.exchange"
        code, desc, _ = mgr.call({"operation": "CREATE", "type": ex}, {"address": "nope"})
        self.assertEqual((code, desc), (400, "exchange requires a unique name"))
        code, _, rows = mgr.call({"operation": "QUERY", "entityType": ex}, {"attributeNames": []})
        self.assertEqual((code, rows["results"]), (200, []))

    def test_protocol_trace_follows_the_log_level_and_each_connections_choice(self):
        """A connection's AMQP frames go to the PROTOCOL log at trace
        level ("[C<id>]:FRAME: ... @attach ...", 1.19's form, read through
        GET-LOG) while that level is on, switched at once on open
        connections; a connection's enableProtocolTrace turns its own trace
        on (or off) whatever the level; an unknown connection is 400."""
        r = self.start_router()
        mgr = self.manager(r)
        container = Container()
        container.container_id = "traced-one"
        client = BlockingConnection(r.url, timeout=TIMEOUT, container=container)
        self.addCleanup(client.close)
        log_upd = {"operation": "UPDATE", "type": PREFIX + "log", "name": "log/DEFAULT"}
        conn_upd = {"operation": "UPDATE", "type": PREFIX + "connection"}

        def attaches(address):
            code, _, lines = mgr.call({"operation": "GET-LOG"})
            self.assertEqual(code, 200)
            return [l for l in lines if l[0] == "PROTOCOL" and "@attach" in l[2]
                    and address in l[2] and ":FRAME: " in l[2]]

        self.assertEqual(mgr.call(log_upd, {"enable": "trace+"})[0], 200)
        client.create_receiver("trace.a").close()
        self.assertEqual(len(attaches("trace.a")), 2)  # its attach and the router's
        self.assertEqual(mgr.call(log_upd, {"enable": "info+"})[0], 200)
        client.create_receiver("trace.b").close()
        self.assertEqual(attaches("trace.b"), [])
        ident = [c["identity"] for c in mgr.query("connection", ["identity", "container"])
                 if c["container"] == "traced-one"][0]
        code, desc, body = mgr.call(dict(conn_upd, identity=ident),
                                    {"enableProtocolTrace": "yes"})
        self.assertEqual((code, body.get("enableProtocolTrace")), (200, True), desc)
        client.create_receiver("trace.c").close()
        self.assertEqual(len(attaches("trace.c")), 2)
        self.assertEqual(mgr.call(dict(conn_upd, identity="G10000"),
                                  {"enableProtocolTrace": True})[0], 400)

    def test_log_update_changes_only_what_it_names_and_nothing_on_error(self):
        """UPDATE log goes through the entity path's one check and one
        apply: the attributes it names change, the ones a module left to
        DEFAULT keep following DEFAULT (a later DEFAULT change reaches
        them), and a refused UPDATE (a bad enable beside a good change)
        changes nothing."""
        r = self.start_router()
        mgr = self.manager(r)
        upd = lambda name, body: mgr.call({"operation": "UPDATE", "type": PREFIX + "log",
                                           "name": name}, body)
        read = lambda name: mgr.call({"operation": "READ", "type": PREFIX + "log",
                                      "name": name})[2]
        code, desc, body = upd("log/ROUTER_CORE", {"enable": "debug+"})
        self.assertEqual((code, body.get("enable")), (200, "debug+"), desc)
        # includeTimestamp was not named: it still follows DEFAULT's
        for value in (False, True):
            code, desc, _ = upd("log/DEFAULT", {"includeTimestamp": value})
            self.assertEqual(code, 200, desc)
            self.assertEqual(read("log/ROUTER_CORE").get("includeTimestamp"), value)
        self.assertEqual(read("log/ROUTER_CORE").get("enable"), "debug+")
        # deprecated names are taken as 1.19 takes them
        code, desc, body = upd("log/ROUTER_CORE", {"timestamp": False})
        self.assertEqual((code, body.get("includeTimestamp")), (200, False), desc)
        # refused as a whole: the good change beside the bad one is not made
        code, desc, _ = upd("log/ROUTER_CORE", {"includeTimestamp": True, "enable": "loud"})
        self.assertEqual(code, 400, desc)
        now = read("log/ROUTER_CORE")
        self.assertEqual((now.get("enable"), now.get("includeTimestamp")), ("debug+", False))
        code, desc, body = upd("log/NOSUCH", {"enable": "info+"})
        self.assertEqual(code, 404, desc)

    def test_create_of_a_role_the_router_mode_forbids_is_refused_as_the_file_is(self):
        """A standalone router takes no inter-router or edge listener or
        connector, an edge router no inter-router one nor an edge listener:
        CREATE is refused 400 with 1.19's words, the rule the configuration
        file's check uses (test_config_errors.c), and nothing is made."""
        standalone = "role='standalone' not allowed to connect to or accept connections " \
                     "from other routers."
        only_interior = "role='%s' only allowed with router mode='interior'"
        for mode, cases in (
                ("standalone", [("connector", "inter-router", standalone),
                                ("listener", "edge", standalone),
                                ("listener", "inter-router", standalone)]),
                ("edge", [("connector", "inter-router", only_interior % "inter-router"),
                          ("listener", "edge", only_interior % "edge"),
                          ("listener", "inter-router", only_interior % "inter-router")])):
            mgr = self.manager(self.start_router(router={"mode": mode}))
            for type_, role, text in cases:
                code, desc, _ = mgr.call({"operation": "CREATE", "type": type_, "name": "m"},
                                         {"host": "127.0.0.1", "port": "7", "role": role})
                self.assertEqual((code, desc), (400, text), "%s %s %s" % (mode, type_, role))
                code, _, _ = mgr.call({"operation": "READ", "type": type_, "name": "m"})
                self.assertEqual(code, 404)

    def test_open_properties_the_file_refuses_are_refused_by_create(self):
        """openProperties with a key the router sends itself (product,
        version, failover-server-list, ..., qd.*, x-opt-qd.*) or on an
        inter-router connector: CREATE is refused 400 naming the attribute,
        in the words the configuration file's check uses (test_config_errors.c
        holds those), and nothing is made; other keys are taken."""
        mgr = self.manager(self.start_router(router={"mode": "interior"}))
        cases = [("connector", None, {"product": "x"}, "key 'product' is reserved"),
                 ("listener", None, {"ok": 1, "qd.foo": 2}, "key 'qd.foo' is reserved"),
                 ("connector", None, {"x-opt-qd.bar": True}, "key 'x-opt-qd.bar' is reserved"),
                 ("connector", "inter-router", {"a": 1}, "not allowed with role 'inter-router'")]
        for type_, role, props, why in cases:
            body = {"host": "127.0.0.1", "port": "7", "openProperties": props}
            if role:
                body["role"] = role
            code, desc, _ = mgr.call({"operation": "CREATE", "type": type_, "name": "m"}, body)
            self.assertEqual((code, desc), (400, "%s attribute 'openProperties': %s"
                                            % (type_, why)), props)
            code, _, _ = mgr.call({"operation": "READ", "type": type_, "name": "m"})
            self.assertEqual(code, 404)
        code, desc, body = mgr.call({"operation": "CREATE", "type": "connector", "name": "ok"},
                                    {"host": "127.0.0.1", "port": "7",
                                     "openProperties": {"scheme": "x", "mine": 1}})
        self.assertEqual(code, 201, desc)

    def test_read_update_delete_by_identity_or_name_without_type(self):
        """A READ, UPDATE or DELETE that names its entity but gives no type
        finds it in whichever type holds it, as 1.19's agent does (its test
        harness reads `router.node/<id>` so); a name nothing holds is 404,
        not 400 for the empty type."""
        m = Mesh(self, ["A", "B"], [("A", "B", 1)]).start()
        mgr = self.manager(m["A"])
        code, desc, rows = mgr.call({"operation": "QUERY", "entityType": "router.node"},
                                    {"attributeNames": ["identity", "id"]})
        self.assertEqual(code, 200, desc)
        ident, node_id = [row for row in rows["results"] if row[1] == "B"][0]
        self.assertEqual(ident, "router.node/B")
        code, desc, body = mgr.call({"operation": "READ", "identity": ident})
        self.assertEqual(code, 200, desc)
        self.assertEqual((body["identity"], body["id"]), (ident, node_id))
        self.assertEqual(body["type"], PREFIX + "router.node")
        code, desc, _ = mgr.call({"operation": "CREATE", "type": "router.config.address",
                                  "name": "typeless"},
                                 {"prefix": "typeless", "distribution": "multicast"})
        self.assertEqual(code, 201, desc)
        code, desc, body = mgr.call({"operation": "READ", "name": "typeless"})
        self.assertEqual(code, 200, desc)
        self.assertEqual((body["type"], body["prefix"]),
                         (PREFIX + "router.config.address", "typeless"))
        code, desc, body = mgr.call({"operation": "READ", "identity": body["identity"]})
        self.assertEqual((code, body.get("name")), (200, "typeless"), desc)
        code, desc, body = mgr.call({"operation": "UPDATE", "name": "log/DEFAULT"},
                                    {"enable": "info+"})
        self.assertEqual((code, body.get("enable")), (200, "info+"), desc)
        code, desc, _ = mgr.call({"operation": "DELETE", "name": "typeless"})
        self.assertEqual(code, 204, desc)
        code, desc, body = mgr.call({"operation": "READ", "name": "typeless"})
        self.assertEqual((code, body), (404, {}), desc)
        code, desc, _ = mgr.call({"operation": "READ", "identity": "router.node/nosuch"})
        self.assertEqual(code, 404, desc)

    def test_connection_adminstatus_deleted_closes_clients_not_the_mesh(self):
        """UPDATE connection adminStatus=deleted closes a client's
        connection and answers 200 with adminStatus "deleted" in the body,
        as 1.19 does; an inter-router connection is refused 403 and stays."""
        m = Mesh(self, ["A", "B"], [("A", "B", 1)]).start()
        mgr = self.manager(m["A"])
        client = BlockingConnection(m["A"].url, timeout=TIMEOUT,
                                    properties={"int_property": 7})
        rows = mgr.query("connection", ["identity", "role", "properties"])
        mesh = [r["identity"] for r in rows if r["role"] == "inter-router"]
        mine = [r["identity"] for r in rows
                if r["properties"] and r["properties"].get("int_property") == 7]
        self.assertEqual((len(mesh), len(mine)), (1, 1), rows)
        upd = {"operation": "UPDATE", "type": PREFIX + "connection"}
        code, desc, body = mgr.call(dict(upd, identity=mesh[0]), {"adminStatus": "deleted"})
        self.assertEqual((code, body), (403, {}), desc)
        code, desc, body = mgr.call(dict(upd, identity=mine[0]), {"adminStatus": "deleted"})
        self.assertEqual((code, body.get("adminStatus")), (200, "deleted"), desc)
        with self.assertRaises(ConnectionClosed):  # the router's close reaches it
            client.wait(lambda: False, timeout=TIMEOUT)
        client.close()
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:
            rows = mgr.query("connection", ["identity", "role"])
            if mine[0] not in [r["identity"] for r in rows]:
                break
            time.sleep(0.1)
        ids = [r["identity"] for r in rows]
        self.assertNotIn(mine[0], ids)
        self.assertIn(mesh[0], ids)

    def test_paging_connections(self):
        """QUERY connection with offset/count pages: the pages add up to all
        connections, none twice, and the last page is short."""
        r = self.start_router()
        mgr = self.manager(r)
        conns = []
        for _ in range(23):
            conns.append(BlockingConnection(r.url, timeout=TIMEOUT))
            self.addCleanup(conns[-1].close)
        everything = mgr.query("connection", ["identity"])
        self.assertEqual(len(everything), 24)
        seen, sizes, offset = [], [], 0
        while True:
            page = mgr.query("connection", ["identity"], offset=offset, count=7)
            if not page:
                break
            sizes.append(len(page))
            seen += [c["identity"] for c in page]
            offset += 7
        self.assertEqual(sizes, [7, 7, 7, 3])
        self.assertEqual(sorted(seen), sorted(c["identity"] for c in everything))
        self.assertEqual(mgr.query("connection", ["identity"], count=0), [])

    def test_connections_and_links_listed_in_the_order_they_opened(self):
        """As 1.19 lists them: the oldest connection first (a client that
        opens connections one after another finds the n-th at index n), the
        links of each in the order they attached; an ANONYMOUS client's
        user is "anonymous"; lastDlvSeconds is null until something was
        sent on the connection."""
        r = self.start_router()
        first = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(first.close)
        for a in ("o.1", "o.2", "o.3"):
            first.create_receiver(a)
        mgr = self.manager(r)
        rows = mgr.query("connection", ["identity", "user", "sasl"])
        self.assertEqual(len(rows), 2)
        self.assertLess(int(rows[0]["identity"]), int(rows[1]["identity"]))
        self.assertEqual([(c["user"], c["sasl"]) for c in rows], [("anonymous", "ANONYMOUS")] * 2)
        links = mgr.query("router.link", ["identity", "connectionId", "owningAddr"])
        self.assertEqual([l["owningAddr"] for l in links[:3]], ["M0o.1", "M0o.2", "M0o.3"])
        ids = [int(l["identity"]) for l in links]
        self.assertEqual(ids, sorted(ids))
        # lastDlvSeconds: none sent yet to the first; the manager's carried
        # its requests and replies
        self.wait_for("the manager's lastDlvSeconds", lambda: [
            c["lastDlvSeconds"] for c in mgr.query("connection", ["lastDlvSeconds"])]
            [1:] == [0], timeout=3 * SLOW)
        self.assertIsNone(mgr.query("connection", ["lastDlvSeconds"])[0]["lastDlvSeconds"])

    def test_get_log_shows_its_own_request(self):
        """The agent logs each request as it arrives (AGENT, debug), so a
        GET-LOG answer holds its own request (1.19's qdstat --log test)."""
        r = self.start_router(extra="log {\n    module: AGENT\n    enable: debug+\n}\n")
        mgr = self.manager(r)
        code, desc, body = mgr.call({"operation": "GET-LOG", "type": "org.amqp.management",
                                     "name": "self", "limit": 5})
        self.assertEqual(code, 200, desc)
        self.assertTrue(any(e[0] == "AGENT" and e[1] == "debug" and "GET-LOG" in e[2]
                            for e in body), body)


if __name__ == "__main__":
    unittest.main()
