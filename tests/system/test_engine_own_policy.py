#!/usr/bin/python3
"""Connection-level features on Junction's own AMQP engine (docs/engine.md,
issue 27): listeners with a vhost policy,
multiTenant, messageLoggingComponents, initialHandshakeTimeoutSeconds,
openProperties or failoverUrls run on the own engine and act as
proton's path did before stage 5, with the same wire answers and log lines.

Covered: the vhost policy refusing an Open (close condition and
description, the DENY line) and an attach (amqp:unauthorized-access), an
anonymous sender under a restricted vhost (allowed and denied targets, the
rejected delivery's condition), a vhost group's maxMessageSize (in our
attach and enforced); a tenant's addresses prefixed by its Open's hostname
both ways; message logging's Received and Sent lines; the initial handshake
timeout closing a silent client (its log line), the client's SASL exchange
showing the own engine's framing; openProperties and a failover-server-list
in our Open as python3-qpid-proton sees them; a connector's openProperties
shown by its peer's management. Each test asserts that its connections ran
on the own engine.
"""
import os
import re
import socket
import sys
import time
import unittest

from proton import ConnectionException, Endpoint, Message, Timeout
from proton.reactor import AtMostOnce, Container
from proton.utils import BlockingConnection, LinkDetached, SendException

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SLOW, RouterTestCase, conf_section, free_port  # noqa: E402
from harness import Recv, Send  # noqa: E402
from test_router_multitenant import (TenantTraffic, at, bodies, msgs,  # noqa: E402
                                     tenant_listener)
from test_router_entities import Manager  # noqa: E402
from test_router_policy import ALL, DENIED, vhost_section  # noqa: E402

CONNECTION = "org.apache.qpid.dispatch.connection"

TIMEOUT = 10 * SLOW
OWN_LINE = "Connection runs on Junction's own AMQP engine"


def connect(url, vhost=None, container_id=None):
    kw = {"virtual_host": vhost} if vhost is not None else {}
    if container_id:
        c = Container()
        c.container_id = container_id
        kw["container"] = c
    return BlockingConnection(url, timeout=TIMEOUT, **kw)


class OwnPolicyTest(RouterTestCase):
    """A vhost policy on the own engine."""

    def start_policy(self):
        restricted = {"$default": {"users": "*", "remoteHosts": "*", "sources": "a.*",
                                   "targets": "a.*", "allowAnonymousSender": True,
                                   "maxMessageSize": 2000}}
        return self.start_router(
            extra=conf_section("policy", {"enableVhostPolicy": "yes",
                                          "defaultVhost": "free.example"})
            + conf_section("log", {"module": "POLICY", "enable": "info+"})
            + vhost_section("free.example", ALL)
            + vhost_section("r.example", restricted)
            # anonymous is in no group and there is no $default group
            + vhost_section("closed.example", {"nobody": {"users": "nobody",
                                                          "remoteHosts": "*"}}))

    def test_open_refused_by_the_vhost_policy(self):
        r = self.start_policy()
        with self.assertRaises(ConnectionException) as e:
            c = connect(r.url, "closed.example")
            c.create_receiver("a.q")
        self.assertIn("amqp:resource-limit-exceeded", str(e.exception))
        self.assertIn(DENIED, str(e.exception))
        self.assertRegex(r.log(), r"DENY AMQP Open for user 'anonymous', rhost '127\.0\.0\.1', "
                                  r"vhost 'closed\.example'")
        # the default vhost lets another in, on the own engine
        c = connect(r.url)
        c.create_receiver("b.q")
        c.close()
        self.assertGreaterEqual(r.log().count(OWN_LINE), 1, r.log())

    def test_attach_refused_and_anonymous_relay_under_a_restricted_vhost(self):
        r = self.start_policy()
        c = connect(r.url, "r.example")
        try:
            with self.assertRaises(LinkDetached) as e:
                c.create_receiver("b.q")
            self.assertIn("amqp:unauthorized-access", str(e.exception))
            rcv = c.create_receiver("a.q")
            relay = c.create_sender(None, options=AtMostOnce())
            relay.send(Message(address="a.q", body="ok"))
            self.assertEqual(rcv.receive(timeout=TIMEOUT).body, "ok")
            checked = c.create_sender(None)  # unsettled: the outcome comes back
            with self.assertRaises(SendException) as e:
                checked.send(Message(address="b.q", body="no"))
            self.assertIn("REJECTED", str(e.exception).upper())
        finally:
            c.close()
        log = r.log()
        self.assertRegex(log, r"DENY AMQP Attach receiver for user 'anonymous', .*"
                              r"vhost 'r\.example', address 'b\.q'")
        self.assertRegex(log, r"DENY AMQP Transfer for user 'anonymous', .*"
                              r"vhost 'r\.example', address 'b\.q'")
        self.assertIn(OWN_LINE, log)

    def test_vhost_max_message_size(self):
        r = self.start_policy()
        rx = connect(r.url)  # a consumer, so the sender gets credit
        self.addCleanup(rx.close)
        rx.create_receiver("a.big", credit=10)
        c = connect(r.url, "r.example")
        try:
            snd = c.create_sender("a.big", options=AtMostOnce())
            self.assertEqual(snd.link.remote_max_message_size, 2000)
            # over it: the link and the whole connection closed, as 1.19
            for step in (lambda: snd.send(Message(body=b"x" * 5000)),
                         lambda: c.wait(lambda: c.conn.state & Endpoint.REMOTE_CLOSED,
                                        timeout=TIMEOUT)):
                try:
                    step()
                except (LinkDetached, ConnectionException, Timeout):
                    pass
            cond = c.conn.remote_condition
            self.assertEqual((cond.name, cond.description) if cond else None,
                             ("amqp:connection:forced", "Message size exceeded"))
        finally:
            try:
                c.close()
            except Exception:
                pass
        self.assertRegex(r.log(), r"DENY AMQP Transfer for user 'anonymous', .*"
                                  r"vhost 'r\.example': message exceeds maxMessageSize 2000")
        self.assertIn(OWN_LINE, r.log())


class OwnTenantTest(RouterTestCase):
    """A multiTenant listener on the own engine."""

    def test_tenant_addresses_are_prefixed_by_the_open_hostname(self):
        port = free_port()
        r = self.start_router(extra=tenant_listener(port))
        tenant_rx = Recv("q2", url=at(port, "ta"))
        other_rx = Recv("q2", url=at(port, "tb"))
        plain_rx = Recv("ta/q3", url=at(r.port))
        self.run_scenario(TenantTraffic(r, [tenant_rx, other_rx, plain_rx],
                                        [Send("ta/q2", msgs(5, tag="p"), url=at(r.port)),
                                         Send("q3", msgs(5, tag="t"), url=at(port, "ta"))], 10))
        self.assertEqual(bodies(tenant_rx), ["p-%d" % i for i in range(5)])
        self.assertEqual(other_rx.messages, [])
        self.assertEqual(bodies(plain_rx), ["t-%d" % i for i in range(5)])
        self.assertGreaterEqual(r.log().count(OWN_LINE), 5, r.log())

    def test_a_hostname_that_cannot_name_a_space_is_refused(self):
        port = free_port()
        r = self.start_router(extra=conf_section("listener", {
            "host": "127.0.0.1", "port": port, "multiTenant": "yes"}))
        with self.assertRaises(ConnectionException) as e:
            c = connect("amqp://127.0.0.1:%d" % port, "_local")
            c.create_receiver("q")
        self.assertIn("amqp:invalid-field", str(e.exception))
        self.assertIn("cannot name a tenant space", r.log())


class OwnListenerFeaturesTest(RouterTestCase):
    """Message logging, the initial handshake timeout, openProperties and
    failoverUrls on the own engine."""

    def test_message_logging_lines(self):
        port = free_port()
        r = self.start_router(extra=conf_section("listener", {
            "host": "127.0.0.1", "port": port,
            "messageLoggingComponents": "subject,app-properties"})
            + conf_section("log", {"module": "MESSAGE", "enable": "info+"}))
        c = connect("amqp://127.0.0.1:%d" % port)
        try:
            rcv = c.create_receiver("msglog.q")
            c.create_sender("msglog.q", options=AtMostOnce()).send(
                Message(body="x", subject="s1", properties={"k": 7}))
            rcv.receive(timeout=TIMEOUT)
        finally:
            c.close()
        want = 'Message{subject="s1", app-properties={"k"=7}}'
        log = r.log()
        self.assertRegex(log, r"\] Received " + "Message\\{subject=\"s1\"")
        self.assertIn("Received " + want, log)
        self.assertIn("Sent " + want, log)
        self.assertIn(OWN_LINE, log)

    def test_initial_handshake_timeout_closes_a_silent_client(self):
        port = free_port()
        r = self.start_router(extra=conf_section("listener", {
            "host": "127.0.0.1", "port": port, "initialHandshakeTimeoutSeconds": 1}))
        s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        try:
            s.sendall(b"AMQP\x03\x01\x00\x00")
            got = b""
            start = time.monotonic()
            while time.monotonic() - start < TIMEOUT:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
            elapsed = time.monotonic() - start
        finally:
            s.close()
        # our SASL header and sasl-mechanisms, then nothing until the close
        self.assertTrue(got.startswith(b"AMQP\x03\x01\x00\x00"), got)
        # the own engine names one mechanism as a symbol (proton: an array)
        self.assertIn(b"\xa3\x09ANONYMOUS", got)
        self.assertNotIn(b"\xe0", got[8:])
        self.assertLess(elapsed, 5 * SLOW)
        self.wait_for("the timeout's line", lambda: "no AMQP open within 1 s "
                      "(initialHandshakeTimeoutSeconds)" in r.log())
        # a client that opens in time is served
        c = connect("amqp://127.0.0.1:%d" % port)
        c.create_receiver("q")
        c.close()
        self.assertIn(OWN_LINE, r.log())

    def test_open_properties_and_failover_list_in_our_open(self):
        port = free_port()
        r = self.start_router(extra=conf_section("listener", {
            "host": "127.0.0.1", "port": port,
            "failoverUrls": "second:25000, amqps://third:5671",
            "openProperties": '{\n "app": "shop",\n "n": [1, {"b": true}],\n}'}))
        c = connect("amqp://127.0.0.1:%d" % port)
        try:
            props = c.conn.remote_properties
        finally:
            c.close()
        self.assertEqual(props["app"], "shop")
        self.assertEqual(props["n"], [1, {"b": True}])
        self.assertEqual(props["product"], "qpid-dispatch-router")
        self.assertEqual(props["failover-server-list"],
                         [{"network-host": "second", "port": "25000"},
                          {"scheme": "amqps", "network-host": "third", "port": "5671"}])
        self.assertIn(OWN_LINE, r.log())


class OwnConnectorPropertiesTest(RouterTestCase):
    """A connector's openProperties on the own engine: our open carries
    them, and the peer's management shows them on its connection."""

    def test_connector_open_properties_reach_the_peer(self):
        b = self.start_router()
        a = self.start_router(extra=conf_section("connector", {
            "name": "toB", "host": "127.0.0.1", "port": b.port, "role": "normal",
            "openProperties": '{\n "app": "edge-shop",\n}'}))
        m = Manager(b.url)
        self.addCleanup(m.close)

        def from_a():
            return [c["properties"] for c in m.query(CONNECTION, ["properties"])
                    if c["properties"] and c["properties"].get("app") == "edge-shop"]
        self.wait_for("A's connection at B with its properties", from_a, TIMEOUT)
        self.assertEqual(from_a()[0]["product"], "qpid-dispatch-router")
        out = re.findall(r"\[(C\d+)\] Connection Opened: dir=out", a.log())
        own = re.findall(r"\[(C\d+)\] " + OWN_LINE, a.log())
        self.assertTrue(out and set(out) <= set(own), a.log())


if __name__ == "__main__":
    unittest.main()
