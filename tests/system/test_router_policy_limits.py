#!/usr/bin/python3
"""vhost policy limits and rights (issue 15; docs/design.md "Policy"), as
qdrouterd 1.19 acts on them: maxMessageSize of a vhost and of a user group,
maxSenders / maxReceivers, maxSessions denials, maxSessionWindow,
allowWaypointLinks, allowFallbackLinks, allowDynamicLinkRoutes,
allowAdminStatusUpdate, enableVhostNamePatterns and a connector's
policyVhost. Every denial is logged once with the user, host and rule and
counted in vhostStats.
"""
import os
import re
import socket
import struct
import sys
import unittest

from proton import ConnectionException, Data, Endpoint, Message, Timeout, symbol
from proton.handlers import MessagingHandler
from proton.reactor import AtMostOnce, Container, LinkOption
from proton.utils import BlockingConnection, LinkDetached, SyncRequestResponse

from harness import SLOW, RouterTestCase, conf_section, free_port
from test_router_policy import ALL, DENIED, refusal, vhost_section

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
from junction.management import Client, ConnectOptions, StatusError  # noqa: E402


def group(**kw):
    g = dict(ALL["$default"])
    g.update(kw)
    return {"$default": g}


class Capabilities(LinkOption):
    """Sets the capabilities of the terminus the client names (a sender's
    target, a receiver's source) to an array of symbols."""

    def __init__(self, *caps):
        self.caps = caps

    def apply(self, link):
        t = link.target if link.is_sender else link.source
        t.capabilities.put_array(False, Data.SYMBOL)
        t.capabilities.enter()
        for c in self.caps:
            t.capabilities.put_symbol(symbol(c))
        t.capabilities.exit()


def stats(url):
    with Client(ConnectOptions(url=url)) as m:
        return {x["hostname"]: x for x in m.query_dicts("vhostStats")}


def policy(url):
    with Client(ConnectOptions(url=url)) as m:
        return m.query_dicts("policy")[0]


class VhostLimitsTest(RouterTestCase):

    def start(self, *vhosts, **policy_attrs):
        attrs = {"enableVhostPolicy": "yes", "defaultVhost": "free.example"}
        attrs.update(policy_attrs)
        return self.start_router(extra=conf_section("policy", attrs)
                                 + conf_section("log", {"module": "POLICY",
                                                        "enable": "debug+"})
                                 + vhost_section("free.example", ALL) + "".join(vhosts))

    def send_big(self, r, hostname, size, expect_denial=False):
        """Sends one message of size octets on a connection to hostname;
        returns (the attach's max-message-size, None or the error)."""
        c = BlockingConnection(r.url, timeout=10 * SLOW, virtual_host=hostname)
        try:
            snd = c.create_sender("mms.q", options=AtMostOnce())
            mms = snd.link.remote_max_message_size
            if not expect_denial:
                snd.send(Message(body=b"x" * size))
                return mms, None
            # the link is closed and the connection closed with
            # amqp:connection:forced "Message size exceeded" (a settled
            # message gets no outcome to carry amqp:link:message-size-exceeded)
            try:
                snd.send(Message(body=b"x" * size))
                c.wait(lambda: c.conn.state & Endpoint.REMOTE_CLOSED, timeout=10 * SLOW)
            except (LinkDetached, ConnectionException, Timeout):
                pass
            try:
                c.wait(lambda: c.conn.state & Endpoint.REMOTE_CLOSED, timeout=10 * SLOW)
            except (LinkDetached, ConnectionException, Timeout):
                pass
            cond = c.conn.remote_condition
            return mms, "%s: %s" % (cond.name, cond.description) if cond else "not closed"
        finally:
            try:
                c.close()
            except Exception:
                pass

    def test_max_message_size_of_group_and_vhost(self):
        # As 1.19: over the limit, the message is rejected with
        # amqp:link:message-size-exceeded (when not settled already), the
        # sender's link closed and its whole connection closed
        # (amqp:connection:forced "Message size exceeded"), though other
        # links share it: the wire is 1.19's, so a client that expects it
        # sees the same.
        r = self.start(vhost_section("v.example", ALL, maxMessageSize=3000),
                       vhost_section("g.example", group(maxMessageSize=1500),
                                     maxMessageSize=3000),
                       vhost_section("z.example", group(maxMessageSize=0)),
                       maxMessageSize=1000)
        rx = BlockingConnection(r.url, timeout=10 * SLOW)
        try:
            rcv = rx.create_receiver("mms.q", credit=10)
            # the vhost's limit (no group value), advertised in the attach
            self.assertEqual(self.send_big(r, "v.example", 2000), (3000, None))
            self.assertEqual(len(rcv.receive(timeout=10 * SLOW).body), 2000)
            # the group's overrides the vhost's
            mms, err = self.send_big(r, "g.example", 2000, True)
            self.assertEqual(mms, 1500)
            self.assertIsNotNone(err)
            self.assertEqual("amqp:connection:forced: Message size exceeded", err)
            # a group's 0 turns policy.maxMessageSize (1000) off
            self.assertEqual(self.send_big(r, "z.example", 5000), (0, None))
            self.assertEqual(len(rcv.receive(timeout=10 * SLOW).body), 5000)
            # policy.maxMessageSize still applies to the default vhost
            mms, err = self.send_big(r, "free.example", 2000, True)
            self.assertEqual(mms, 1000)
            self.assertEqual("amqp:connection:forced: Message size exceeded", err)
        finally:
            rx.close()
        self.wait_for("both DENY lines", lambda: len(re.findall(
            r"DENY AMQP Transfer", r.log())) == 2)
        self.assertIn("DENY AMQP Transfer for user 'anonymous', rhost '127.0.0.1', vhost "
                      "'g.example': message exceeds maxMessageSize 1500", r.log())
        st = stats(r.url)
        self.assertEqual(st["g.example"]["maxMessageSizeDenied"], 1)
        self.assertEqual(st["free.example"]["maxMessageSizeDenied"], 1)
        self.assertEqual(st["v.example"]["maxMessageSizeDenied"], 0)
        p = policy(r.url)
        self.assertEqual(p["maxMessageSizeDenied"], 2)
        self.assertEqual(p["totalDenials"], 2)

    def test_negative_max_message_size_refused_with_file_and_line(self):
        from harness import run_junctiond
        text = (conf_section("router", {"mode": "standalone", "id": "P"})
                + conf_section("policy", {"enableVhostPolicy": "yes"})
                + vhost_section("a.example", group(maxMessageSize=-1))
                + vhost_section("b.example", ALL, maxMessageSize=-5))
        path = os.path.join(self.workdir, "m.conf")
        with open(path, "w") as f:
            f.write(text)
        lines = text.splitlines()
        p = run_junctiond(["-c", path])
        self.assertEqual(p.returncode, 1, p.stderr)
        g = 1 + [i for i, x in enumerate(lines) if '"maxMessageSize": -1' in x][0]
        v = 1 + [i for i, x in enumerate(lines) if "maxMessageSize: -5" in x][0]
        self.assertIn("%s:%d: vhost 'a.example' group '$default' attribute 'maxMessageSize' "
                      "must be an integer from 0" % (path, g), p.stderr)
        self.assertIn("%s:%d: vhost 'b.example' attribute 'maxMessageSize' must be an integer "
                      "from 0" % (path, v), p.stderr)

    def test_group_max_connections_and_values_as_strings(self):
        # A group's maxConnections bounds its connections open at once in
        # the vhost; booleans and integers may be written as strings, and
        # each group on one line ending in ',', as 1.19 reads them.
        text = ('vhost {\n    hostname: g.example\n    groups: {\n'
                '        "$default": {"users": "*", "remoteHosts": "*", "sources": "*", '
                '"targets": "*", "maxConnections": "2", "allowAnonymousSender": "false"},\n'
                '    }\n}\n')
        r = self.start(text)
        held = [BlockingConnection(r.url, timeout=10 * SLOW, virtual_host="g.example")
                for _ in range(2)]
        try:
            self.assertIn(DENIED, refusal(r.url, "g.example") or "")
            with self.assertRaises(LinkDetached):
                held[0].create_sender(None)
            held.pop().close()
            self.wait_for("room in the group",
                          lambda: refusal(r.url, "g.example") is None)
        finally:
            for c in held:
                c.close()
        self.assertIn("user group maxConnections reached", r.log())

    def test_max_senders_and_receivers(self):
        r = self.start(vhost_section("n.example", group(maxSenders=2, maxReceivers=1)),
                       vhost_section("none.example", group(maxSenders=0)))
        c = BlockingConnection(r.url, timeout=10 * SLOW, virtual_host="n.example")
        try:
            s1 = c.create_sender("a")
            c.create_sender("b")
            with self.assertRaises(LinkDetached) as e:
                c.create_sender("c", name="c1")
            self.assertIn("amqp:resource-limit-exceeded", str(e.exception))
            self.assertIn("link disallowed by local policy", str(e.exception))
            c.create_receiver("a")
            with self.assertRaises(LinkDetached) as e:
                c.create_receiver("b", name="b1")
            self.assertIn("amqp:resource-limit-exceeded", str(e.exception))
            # a sender detached makes room for another
            s1.close()
            c.create_sender("d")
        finally:
            c.close()
        # maxSenders 0 allows no sender, as the schema documents it (1.19's
        # code read 0 as no limit at all: a group meant to receive only
        # could send anywhere its targets allowed)
        c = BlockingConnection(r.url, timeout=10 * SLOW, virtual_host="none.example")
        try:
            with self.assertRaises(LinkDetached):
                c.create_sender("a")
            c.create_receiver("a")
        finally:
            c.close()
        # as 1.19, each closed connection's denials (POLICY debug)
        self.wait_for("the close's resources line", lambda: re.search(
            r"Connection '127\.0\.0\.1:\d+' closed with resources n_sessions=\d+, "
            r"n_senders=\d+, n_receivers=\d+, sessions_denied=0, senders_denied=1, "
            r"receivers_denied=1\. nConnections= \d+\.", r.log()))
        log = r.log()
        self.assertEqual(len(re.findall(r"DENY AMQP Attach sender .*maxSenders limit reached",
                                        log)), 2, log)
        self.assertEqual(len(re.findall(r"DENY AMQP Attach receiver .*maxReceivers limit",
                                        log)), 1, log)
        self.assertIn("for user 'anonymous', rhost '127.0.0.1', vhost 'n.example'", log)
        st = stats(r.url)
        self.assertEqual((st["n.example"]["senderDenied"], st["n.example"]["receiverDenied"]),
                         (1, 1))
        self.assertEqual(st["none.example"]["senderDenied"], 1)

    def test_waypoint_and_fallback_capabilities(self):
        r = self.start(vhost_section("w.example", group(allowWaypointLinks=False,
                                                        allowFallbackLinks=False)))
        c = BlockingConnection(r.url, timeout=10 * SLOW, virtual_host="w.example")
        try:
            denied = [("sender", "qd.waypoint.1"), ("receiver", "qd.waypoint"),
                      ("receiver", "qd.fallback"),
                      # 1.19 looks at the first capability only; every one here
                      ("receiver", "x.other", "qd.fallback")]
            for i, (kind, *caps) in enumerate(denied):
                with self.subTest(kind=kind, caps=caps):
                    with self.assertRaises(LinkDetached) as e:
                        if kind == "sender":
                            c.create_sender("wp", name="d%d" % i, options=Capabilities(*caps))
                        else:
                            c.create_receiver("wp", name="d%d" % i,
                                              options=Capabilities(*caps))
                    self.assertIn("amqp:unauthorized-access", str(e.exception))
            c.create_receiver("wp", name="ok", options=Capabilities("x.other"))
        finally:
            c.close()
        # the default (the free vhost's group says nothing): allowed
        c = BlockingConnection(r.url, timeout=10 * SLOW)
        try:
            c.create_receiver("wp", options=Capabilities("qd.fallback"))
            c.create_sender("wp", options=Capabilities("qd.waypoint.1"))
        finally:
            c.close()
        log = r.log()
        self.assertEqual(len(re.findall(r"waypoint capability not permitted", log)), 2)
        self.assertEqual(len(re.findall(r"fallback capability not permitted", log)), 2)
        st = stats(r.url)["w.example"]
        # 1.19 counted a receiver's refused capability as a senderDenied
        self.assertEqual((st["senderDenied"], st["receiverDenied"]), (1, 3))

    def test_management_rights(self):
        r = self.start(vhost_section("ro.example", group(allowDynamicLinkRoutes=False,
                                                         allowAdminStatusUpdate=False)))
        victim = BlockingConnection(r.url, timeout=10 * SLOW)
        conns = {}
        for host in ("ro.example", "free.example"):
            conns[host] = BlockingConnection(r.url, timeout=10 * SLOW, virtual_host=host)
        try:
            with Client(ConnectOptions(url=r.url)) as m:
                rows = m.query_dicts("connection")
            ids = [x["identity"] for x in rows]

            clients = {h: SyncRequestResponse(c, "$management") for h, c in conns.items()}

            def call(host, props, body):
                reply = clients[host].call(Message(body=body, properties=props))
                return reply.properties["statusCode"]
            lr = {"operation": "CREATE", "type": "router.connection.linkRoute", "name": "lr1"}
            body = {"pattern": "lr.#", "direction": "in"}
            self.assertEqual(call("ro.example", lr, body), 403)
            self.assertEqual(call("free.example", lr, body), 201)
            upd = {"operation": "UPDATE", "type": "connection", "identity": min(ids, key=int)}
            self.assertEqual(call("ro.example", upd, {"adminStatus": "deleted"}), 403)
            self.assertEqual(call("ro.example", upd, {"adminStatus": "enabled"}), 200)
            self.assertEqual(call("free.example", upd, {"adminStatus": "deleted"}), 200)
        finally:
            for c in list(conns.values()) + [victim]:
                try:
                    c.close()
                except Exception:
                    pass
        log = r.log()
        self.assertEqual(len(re.findall(r"DENY management", log)), 2, log)
        self.assertIn("DENY management CREATE router.connection.linkRoute for user 'anonymous', "
                      "rhost '127.0.0.1", log)
        self.assertIn("allowAdminStatusUpdate is false", log)

    def test_vhost_name_patterns(self):
        r = self.start(vhost_section("*.example.com", ALL, maxConnections=0),
                       vhost_section("#.com", ALL),
                       vhost_section("a.example.com", ALL, maxConnections=0),
                       enableVhostNamePatterns="yes")
        # '*' (one token) is more specific than '#'
        self.assertIn(DENIED, refusal(r.url, "b.example.com") or "")
        self.assertIn("vhost '*.example.com': vhost maxConnections reached", r.log())
        self.assertIsNone(refusal(r.url, "x.y.z.com"))
        self.assertIsNone(refusal(r.url, "com"))  # '#' matches zero tokens
        # an exact name before any pattern
        self.assertIn(DENIED, refusal(r.url, "a.example.com") or "")
        self.assertIn("vhost 'a.example.com': vhost maxConnections reached", r.log())
        # no pattern: the default vhost
        self.assertIsNone(refusal(r.url, "example.org"))
        st = stats(r.url)
        self.assertEqual(st["#.com"]["connectionsApproved"], 2)
        self.assertEqual(st["*.example.com"]["connectionsDenied"], 1)

    def test_vhost_names_are_literal_without_patterns(self):
        r = self.start(vhost_section("*.example.com", ALL, maxConnections=0))
        self.assertIsNone(refusal(r.url, "b.example.com"))  # the default vhost
        self.assertIn(DENIED, refusal(r.url, "*.example.com") or "")


def frame(kind, channel, body):
    """One AMQP frame (kind 0: AMQP, 1: SASL) around an encoded body."""
    return struct.pack(">IBBH", 8 + len(body), 2, kind, channel) + body


def performative(code, fields):
    d = Data()
    d.put_described()
    d.enter()
    d.put_ulong(code)
    d.put_list()
    d.enter()
    for kind, v in fields:
        if kind == "sym":
            d.put_symbol(symbol(v))
        elif kind == "str":
            d.put_string(v)
        elif kind == "uint":
            d.put_uint(v)
        elif kind == "ushort":
            d.put_ushort(v)
        else:
            d.put_null()
    d.exit()
    d.exit()
    return d.encode()


class RawClient:
    """A client that speaks AMQP by hand so that it can break a rule proton
    keeps: begin a session past the channel-max the router gave it."""

    def __init__(self, url, hostname):
        host, port = url.split("//")[1].rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=10 * SLOW)
        self.s.sendall(b"AMQP\x03\x01\x00\x00")
        self.s.sendall(frame(1, 0, performative(0x41, [("sym", "ANONYMOUS")])))
        self.read_until(b"\x00\x53\x44")  # sasl-outcome
        self.s.sendall(b"AMQP\x00\x01\x00\x00")
        self.s.sendall(frame(0, 0, performative(0x10, [("str", "raw"), ("str", hostname)])))
        # the router's open: its channel-max is set before any begin is read
        self.read_until(b"\x00\x53\x10")

    def begin(self, channel):
        self.s.sendall(frame(0, channel, performative(0x11, [
            ("null", None), ("uint", 0), ("uint", 100), ("uint", 100)])))

    def read_until(self, marker):
        got = b""
        while marker not in got:
            chunk = self.s.recv(4096)
            if not chunk:
                break
            got += chunk
        return got

    def read_all(self):
        got = b""
        try:
            while True:
                chunk = self.s.recv(4096)
                if not chunk:
                    break
                got += chunk
        except socket.timeout:
            pass
        return got

    def close(self):
        self.s.close()


class VhostSessionsTest(RouterTestCase):

    def test_session_past_max_sessions_counted_and_logged(self):
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes",
                                                            "defaultVhost": "free.example"})
                              + vhost_section("free.example", ALL)
                              + vhost_section("s.example", group(maxSessions=2)))
        c = RawClient(r.url, "s.example")
        try:
            c.begin(0)
            c.begin(1)
            c.begin(2)  # channel-max is 1
            got = c.read_all()
        finally:
            c.close()
        self.assertIn(b"amqp:connection:framing-error", got)
        self.wait_for("the DENY line", lambda: "DENY AMQP Begin Session" in r.log())
        self.assertIn("DENY AMQP Begin Session for user 'anonymous', rhost '127.0.0.1', vhost "
                      "'s.example': maxSessions 2 reached", r.log())
        self.assertEqual(len(re.findall("DENY AMQP Begin Session", r.log())), 1)
        st = stats(r.url)
        self.assertEqual(st["s.example"]["sessionDenied"], 1)
        self.assertEqual(policy(r.url)["totalDenials"], 1)

    def test_max_session_window_in_the_begin(self):
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes",
                                                            "defaultVhost": "free.example"})
                              + vhost_section("free.example", ALL)
                              + vhost_section("w.example", group(maxFrameSize=4096,
                                                                 maxSessionWindow=40960)))
        c = RawClient(r.url, "w.example")
        try:
            c.begin(0)
            got = c.read_until(b"\x00\x53\x11")  # the router's begin
            start = got.index(b"\x00\x53\x11") - 8  # the frame's header
            while len(got) < start + 4 or len(got) < start + struct.unpack(
                    ">I", got[start:start + 4])[0]:
                got += c.s.recv(4096)
        finally:
            c.close()
        begin = got[got.index(b"\x00\x53\x11"):]
        d = Data()
        d.decode(begin)
        d.rewind()
        d.next()
        fields = d.get_object().value
        self.assertEqual(fields[2], 10)  # incoming-window: 40960 / 4096 frames


class SessionWindowTest(RouterTestCase):

    start = VhostLimitsTest.start

    def test_messages_larger_than_the_session_window_pass(self):
        # a window of two 4 KiB frames: proton reopens it as the router
        # reads (an earlier test closed its sender's connection before the
        # window let the whole message out, and took that for a stall)
        r = self.start(vhost_section("w.example", group(maxFrameSize=4096,
                                                        maxSessionWindow=8192)))
        c = BlockingConnection(r.url, timeout=10 * SLOW, virtual_host="w.example")
        try:
            self.assertEqual(c.conn.transport.remote_max_frame_size, 4096)
            rcv = c.create_receiver("sw.q", credit=10)
            snd = c.create_sender("sw.q", options=AtMostOnce())
            for size in (1000, 20000, 200000):
                body = bytes(range(256)) * (size // 256)
                snd.send(Message(body=body))
                self.assertEqual(rcv.receive(timeout=10 * SLOW).body, body)
        finally:
            c.close()


class ConnectorPeer(MessagingHandler):
    """A container listening for a router's connector; when the connection
    opens it attaches a sender to each of addresses and records what the
    router answered."""

    def __init__(self, port, addresses):
        super().__init__()
        self.port, self.addresses = port, addresses
        self.result = {}
        self.conn_error = None
        self.links = {}

    def on_start(self, event):
        self.acceptor = event.container.listen("127.0.0.1:%d" % self.port)
        self.timer = event.container.schedule(20 * SLOW, self)

    def on_timer_task(self, event):
        self.acceptor.close()
        for link in self.links.values():
            link.connection.close()

    def finish(self, connection):
        connection.close()
        self.acceptor.close()
        self.timer.cancel()

    def on_connection_opened(self, event):
        for a in self.addresses:
            self.links[a] = event.container.create_sender(event.connection, a,
                                                          options=AtMostOnce())

    def on_link_opened(self, event):
        for a, link in self.links.items():
            if link == event.link and event.link.remote_target.address:
                self.result[a] = "open"
        self.check(event)

    def on_link_error(self, event):
        for a, link in self.links.items():
            if link == event.link:
                self.result[a] = event.link.remote_condition.name
        self.check(event)

    def on_connection_error(self, event):
        self.conn_error = event.connection.remote_condition
        self.finish(event.connection)

    def check(self, event):
        if len(self.result) == len(self.addresses):
            self.finish(event.connection)


class ConnectorPolicyVhostTest(RouterTestCase):

    def test_connector_takes_the_connector_group(self):
        port = free_port()
        rules = {"$connector": {"targets": "ok.*", "sources": "*"}}
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes"})
                              + vhost_section("$default", ALL)
                              + vhost_section("peer.example", rules)
                              + conf_section("connector", {"host": "127.0.0.1", "port": port,
                                                           "policyVhost": "peer.example"}))
        peer = ConnectorPeer(port, ["ok.a", "no.b"])
        Container(peer).run()
        self.assertEqual(peer.result, {"ok.a": "open", "no.b": "amqp:unauthorized-access"})
        self.assertIn("vhost 'peer.example', address 'no.b'", r.log())
        self.assertEqual(stats(r.url)["peer.example"]["senderDenied"], 1)

    def test_connector_without_the_group_is_refused(self):
        port = free_port()
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes"})
                              + vhost_section("$default", ALL)
                              + conf_section("connector", {"host": "127.0.0.1", "port": port,
                                                           "policyVhost": "$default"}))
        peer = ConnectorPeer(port, [])
        Container(peer).run()
        self.assertIsNotNone(peer.conn_error)
        self.assertEqual(peer.conn_error.name, "amqp:resource-limit-exceeded")
        self.assertIn("policyVhost '$default': the vhost has no '$connector' group", r.log())


MANAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                      "junction-manage")


class VhostRuntimeTest(RouterTestCase):
    """CREATE, UPDATE and DELETE of vhosts on a running router, with
    junction-manage: new connections take the change at once, open ones
    keep the settings they were admitted with (1.19's rule); a bad vhost is
    a 400 naming the attribute and changes nothing."""

    def manage(self, r, *args, stdin=None):
        import subprocess
        return subprocess.run(["/usr/bin/python3", MANAGE, "-b", r.url, "--type=vhost"]
                              + list(args), input=stdin, capture_output=True, text=True,
                              timeout=30 * SLOW)

    def test_create_update_delete(self):
        import json
        # the management client's own Open hostname is 127.0.0.1
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes",
                                                            "defaultVhost": "none"})
                              + vhost_section("127.0.0.1", ALL))
        self.assertIn(DENIED, refusal(r.url, "rt.example") or "")
        body = {"hostname": "rt.example", "maxConnections": 1, "groups": ALL}
        p = self.manage(r, "create", "--stdin", stdin=json.dumps(body))
        self.assertEqual(p.returncode, 0, p.stderr)
        c = BlockingConnection(r.url, timeout=10 * SLOW, virtual_host="rt.example")
        try:
            c.create_receiver("rt.q")
            self.assertIn(DENIED, refusal(r.url, "rt.example") or "")
            # a second CREATE of that hostname is refused
            p = self.manage(r, "create", "--stdin", stdin=json.dumps(body))
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("Name conflicts", p.stderr)
            # a bad group attribute: 400 naming it, nothing changes
            bad = {"groups": {"$default": dict(ALL["$default"], maxWidgets=1)}}
            p = self.manage(r, "update", "--name=rt.example", "--stdin",
                            stdin=json.dumps(bad))
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("attribute 'maxWidgets' is not supported", p.stderr)
            self.assertIn(DENIED, refusal(r.url, "rt.example") or "")
            p = self.manage(r, "update", "--name=rt.example", "maxConnections=2")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIsNone(refusal(r.url, "rt.example"))
            with Client(ConnectOptions(url=r.url)) as m:
                rows = {x["hostname"]: x for x in m.query_dicts("vhost")}
            self.assertEqual(rows["rt.example"]["maxConnections"], 2)
            self.assertEqual(rows["rt.example"]["groups"], ALL)
            self.assertEqual(rows["rt.example"]["identity"], "vhost/rt.example")
            self.assertEqual(stats(r.url)["rt.example"]["connectionsApproved"], 2)
            p = self.manage(r, "delete", "--name=rt.example")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(DENIED, refusal(r.url, "rt.example") or "")
            # the open connection keeps the settings it was admitted with
            c.create_receiver("rt.q2")
        finally:
            c.close()
        with Client(ConnectOptions(url=r.url)) as m:
            self.assertNotIn("rt.example", [x["hostname"] for x in m.query_dicts("vhost")])
        log = r.log()
        self.assertIn("Created vhost rt.example", log)
        self.assertIn("Deleted vhost rt.example", log)


    def test_values_of_types_no_attribute_takes_are_refused(self):
        """A float, a UUID or binary in a vhost CREATE or UPDATE (at any
        depth) is a 400 naming the attribute; it was rendered as JSON null
        and so silently became the attribute's default (maxConnections 1.5
        made a vhost of 65535 connections)."""
        import uuid
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes",
                                                            "defaultVhost": "none"})
                              + vhost_section("127.0.0.1", ALL))
        bodies = [({"hostname": "f.example", "maxConnections": 1.5}, "maxConnections"),
                  ({"hostname": "u.example", "maxConnectionsPerUser": uuid.uuid4()},
                   "maxConnectionsPerUser"),
                  ({"hostname": "g.example",
                    "groups": {"$default": dict(ALL["$default"], maxFrameSize=2.5)}}, "groups"),
                  ({"hostname": b"bin.example"}, "hostname")]
        for body, attr in bodies:
            with Client(ConnectOptions(url=r.url)) as m:
                with self.assertRaises(StatusError) as cm:
                    m.create("vhost", None, body)
                self.assertEqual(cm.exception.status, 400)
                self.assertIn("vhost attribute '%s'" % attr, str(cm.exception))
        with Client(ConnectOptions(url=r.url)) as m:
            m.create("vhost", None, {"hostname": "ok.example", "maxConnections": 3})
            with self.assertRaises(StatusError) as cm:
                m.update("vhost", "ok.example", None, {"maxConnections": 7.0})
            self.assertIn("vhost attribute 'maxConnections'", str(cm.exception))
            rows = {x["hostname"]: x for x in m.query_dicts("vhost")}
        self.assertEqual(rows["ok.example"]["maxConnections"], 3)
        for h in ("f.example", "u.example", "g.example", "bin.example"):
            self.assertNotIn(h, rows)


INTEROP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop")


class RheaPolicyTest(RouterTestCase):
    """The vhost policy as a rhea (Node.js) client meets it: the Open's
    hostname chooses the vhost, maxSenders refuses a second sender with
    amqp:resource-limit-exceeded, a source outside the group's sources is
    refused with amqp:unauthorized-access, the attach advertises the
    group's maxMessageSize and a larger message closes the connection with
    amqp:connection:forced (the message rejected with
    amqp:link:message-size-exceeded)."""

    def rhea(self, r, hostname, links, size=0):
        import json
        import shutil
        import subprocess
        node = shutil.which("node") or shutil.which("nodejs")
        if not node:
            self.fail("node (Node.js) is not installed; ./dev installs it")
        if not os.path.isdir(os.path.join(INTEROP, "node_modules", "rhea")):
            self.fail("rhea is not installed in %s/node_modules: run `npm ci` there" % INTEROP)
        port = r.url.rsplit(":", 1)[1]
        p = subprocess.run([node, os.path.join(INTEROP, "policy.js"), "--port", port,
                            "--hostname", hostname, "--links", json.dumps(links),
                            "--size", str(size), "--timeout", str(int(20 * SLOW))],
                           capture_output=True, text=True, timeout=40 * SLOW)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return json.loads(p.stdout.strip().splitlines()[-1])

    def test_rhea_meets_the_group_rules(self):
        rules = group(maxSenders=1, maxMessageSize=1000, sources="ok.*", targets="ok.*")
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes",
                                                            "defaultVhost": "free.example"})
                              + vhost_section("free.example", ALL)
                              + vhost_section("rhea.example", rules))
        out = self.rhea(r, "rhea.example", [
            {"kind": "receiver", "address": "ok.a"},
            {"kind": "sender", "address": "ok.a"},
            {"kind": "sender", "address": "ok.b"},
            {"kind": "receiver", "address": "no.x"}])
        self.assertEqual([x["result"] for x in out["links"]],
                         ["open", "open", "amqp:resource-limit-exceeded",
                          "amqp:unauthorized-access"], out)
        self.assertEqual(out["links"][1]["max_message_size"], 1000)
        out = self.rhea(r, "rhea.example", [
            {"kind": "receiver", "address": "ok.a"},
            {"kind": "sender", "address": "ok.a"}], size=500)
        self.assertEqual(out["sent"], "accepted", out)
        out = self.rhea(r, "rhea.example", [
            {"kind": "receiver", "address": "ok.a"},
            {"kind": "sender", "address": "ok.a"}], size=5000)
        # rejected with amqp:link:message-size-exceeded, the link closed and
        # the connection closed; rhea hands its application the outcome
        # after the frames read with it, so it may report the close first
        self.assertIn(out["sent"], ("amqp:link:message-size-exceeded", "detached"), out)
        self.assertEqual(out["connection"], "amqp:connection:forced", out)
        st = stats(r.url)["rhea.example"]
        self.assertEqual((st["senderDenied"], st["receiverDenied"], st["maxMessageSizeDenied"]),
                         (1, 1, 1))


if __name__ == "__main__":
    unittest.main()
