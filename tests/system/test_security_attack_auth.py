#!/usr/bin/python3
"""Attacks on authentication (docs/design.md "TLS and SASL"), by a client
that speaks SASL by hand on a listener that requires it (PLAIN only,
Cyrus's sasldb):

* only the listener's mechanisms are offered, and one not offered
  (ANONYMOUS) is refused;
* PLAIN with an authorization id other than the authenticated user is
  refused: one user cannot act as another;
* empty and huge user names, and SASL frames out of order, are refused
  without an Open and without harm to the router; a frame the SASL layer
  stops reading at (a client's sasl-mechanisms, an unknown performative)
  cuts the connection at once, before the handshake timeout;
* an AMQP header straight away (skipping SASL) gets no Open;
* a listener with requireSsl, or with requireEncryption, gives a client in
  the clear no Open;
* behind an auth service, a mechanism the listener cut from the service's
  offer is refused by the router and never reaches the service, and the
  service sees the configured realm, not the client's hostname.
"""
import re
import socket
import struct
import time
import unittest

from proton import Data, symbol

from harness import SLOW, conf_section, free_port
from test_router_authsvc import REALM as AUTHSVC_REALM
from test_router_authsvc import AuthServiceTestCase
from test_router_sasl import REALM, SaslTestCase, attempt
from tls_certs import shared_certs

TIMEOUT = 10 * SLOW
SASL_HEADER = b"AMQP\x03\x01\x00\x00"
AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
MECHANISMS, INIT, CHALLENGE, RESPONSE, OUTCOME = 0x40, 0x41, 0x42, 0x43, 0x44
OPEN = b"\x00\x53\x10"


def frame(kind, body):
    return struct.pack(">IBBH", 8 + len(body), 2, kind, 0) + body


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
        elif kind == "bin":
            d.put_binary(v)
        elif kind == "str":
            d.put_string(v)
        elif kind == "ubyte":
            d.put_ubyte(v)
        else:
            d.put_null()
    d.exit()
    d.exit()
    return d.encode()


def sasl(code, fields):
    return frame(1, performative(code, fields))


class Raw:
    """A socket to a router listener; got holds every octet read."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.got = b""

    def send(self, data):
        try:
            self.s.sendall(data)
        except OSError:
            pass

    def read_until(self, marker, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while marker not in self.got and time.monotonic() < deadline:
            try:
                chunk = self.s.recv(65536)
            except socket.timeout:
                break
            except OSError:
                break
            if not chunk:
                break
            self.got += chunk
        return marker in self.got

    def read_to_close(self, timeout=TIMEOUT):
        """True when the router closed the socket within timeout."""
        deadline = time.monotonic() + timeout
        self.s.settimeout(0.2)
        while time.monotonic() < deadline:
            try:
                chunk = self.s.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return True
            if not chunk:
                return True
            self.got += chunk
        return False

    def outcome(self):
        """The sasl-outcome's code, or None when none came."""
        i = self.got.find(b"\x00\x53\x44")
        if i < 0:
            return None
        d = Data()
        d.decode(self.got[i:])
        d.rewind()
        d.next()
        d.enter()
        d.next()
        d.next()
        d.enter()
        d.next()
        return d.get_ubyte()

    def mechanisms(self):
        i = self.got.find(b"\x00\x53\x40")
        if i < 0:
            return None
        d = Data()
        d.decode(self.got[i:])
        v = d.get_object()
        mechs = v.value[0]  # a symbol, or an array of them
        return sorted(str(m) for m in getattr(mechs, "elements", [mechs]))

    def close(self):
        self.s.close()


class AttackAuth(SaslTestCase):

    def setUp(self):
        super().setUp()
        self.r = self.sasl_router({"saslMechanisms": "PLAIN", "authenticatePeer": "yes",
                                   "initialHandshakeTimeoutSeconds": 3 * SLOW})

    def raw(self):
        c = Raw(self.r.port)
        self.addCleanup(c.close)
        return c

    def plain(self, response, hostname=None):
        """A PLAIN exchange with response as its initial response: the
        outcome's code and the client (its socket left open)."""
        c = self.raw()
        c.send(SASL_HEADER)
        self.assertTrue(c.read_until(b"\x00\x53\x40"))
        c.send(sasl(INIT, [("sym", "PLAIN"), ("bin", response)]
                    + ([("str", hostname)] if hostname else [])))
        c.read_until(b"\x00\x53\x44")
        return c.outcome(), c

    def assert_router_well(self):
        """The router is alive and a good PLAIN login still works."""
        self.assertTrue(self.r.alive())
        self.assertIsNone(attempt(self.r.url, user="alice@" + REALM, password="alice-pw"))

    def test_only_the_listeners_mechanisms_are_offered_and_anonymous_is_refused(self):
        c = self.raw()
        c.send(SASL_HEADER)
        self.assertTrue(c.read_until(b"\x00\x53\x40"))
        self.assertEqual(c.mechanisms(), ["PLAIN"])
        c.send(sasl(INIT, [("sym", "ANONYMOUS"), ("bin", b"anonymous")]))
        c.read_until(b"\x00\x53\x44")
        self.assertNotIn(c.outcome(), (None, 0), c.got)
        c.send(AMQP_HEADER + frame(0, performative(0x10, [("str", "x")])))
        self.assertTrue(c.read_to_close())
        self.assertNotIn(OPEN, c.got)
        for mech in ("EXTERNAL", "SCRAM-SHA-256", "BOGUS", "P" * 200):
            c2 = self.raw()
            c2.send(SASL_HEADER + sasl(INIT, [("sym", mech), ("bin", b"x")]))
            c2.read_to_close(timeout=5 * SLOW)
            self.assertNotIn(c2.outcome(), (0,), mech)
            self.assertNotIn(OPEN, c2.got, mech)
        self.assert_router_well()

    def test_plain_with_another_users_authzid_is_refused(self):
        good, _ = self.plain(b"alice@" + REALM.encode() + b"\x00alice@" + REALM.encode()
                             + b"\x00alice-pw")
        self.assertEqual(good, 0)
        for authzid in (b"bob@" + REALM.encode(), b"bob", b"anonymous", b"admin", b"*"):
            code, c = self.plain(authzid + b"\x00alice@" + REALM.encode() + b"\x00alice-pw")
            self.assertNotEqual(code, 0, authzid)
            self.assertIsNotNone(code, authzid)
        self.assertTrue(re.search(r"bob|authoriz|authz|SASL", self.r.log(), re.I))
        self.assert_router_well()

    def test_empty_and_huge_user_names_are_refused(self):
        for response in (b"", b"\x00", b"\x00\x00", b"\x00\x00alice-pw",
                         b"\x00" + b"a" * 60000 + b"\x00pw", b"a" * 200000,
                         b"\x00alice@" + REALM.encode() + b"\x00" + b"p" * 100000):
            c = self.raw()
            c.send(SASL_HEADER)
            self.assertTrue(c.read_until(b"\x00\x53\x40"))
            c.send(sasl(INIT, [("sym", "PLAIN"), ("bin", response)]))
            c.read_to_close(timeout=5 * SLOW)
            self.assertNotEqual(c.outcome(), 0, response[:20])
            self.assertNotIn(OPEN, c.got)
        self.assert_router_well()

    def test_sasl_frames_out_of_order_are_refused(self):
        good = b"\x00alice@" + REALM.encode() + b"\x00alice-pw"
        sequences = [
            [sasl(RESPONSE, [("bin", good)])],
            [sasl(OUTCOME, [("ubyte", 0)])],
            [sasl(MECHANISMS, [("sym", "PLAIN")])],
            [sasl(CHALLENGE, [("bin", b"x")])],
            [sasl(INIT, [("sym", "PLAIN"), ("bin", b"\x00nobody\x00x")]),
             sasl(INIT, [("sym", "PLAIN"), ("bin", good)])],
            [sasl(INIT, [("sym", "PLAIN"), ("bin", b"\x00nobody\x00x")]),
             sasl(RESPONSE, [("bin", good)])],
            [AMQP_HEADER],
            [frame(0, performative(0x10, [("str", "x")]))],
            [sasl(0x10, [("str", "x")])],
            [sasl(0x77, [])],
        ]
        for i, seq in enumerate(sequences):
            c = self.raw()
            c.send(SASL_HEADER)
            self.assertTrue(c.read_until(b"\x00\x53\x40"))
            for f in seq:
                c.send(f)
            c.send(AMQP_HEADER + frame(0, performative(0x10, [("str", "x")])))
            # cut at once, well before the handshake timeout (3 s): a
            # frame proton stops reading at must not leave the socket open
            self.assertTrue(c.read_to_close(timeout=2 * SLOW), i)
            self.assertNotIn(OPEN, c.got, i)
        self.assert_router_well()

    def test_amqp_header_without_sasl_gets_no_open(self):
        c = self.raw()
        c.send(AMQP_HEADER + frame(0, performative(0x10, [("str", "x")])))
        self.assertTrue(c.read_to_close())
        self.assertNotIn(OPEN, c.got)
        self.assert_router_well()

    def test_slow_sasl_is_cut_at_the_handshake_timeout(self):
        c = self.raw()
        c.send(SASL_HEADER)
        self.assertTrue(c.read_until(b"\x00\x53\x40"))
        start = time.monotonic()
        self.assertTrue(c.read_to_close(timeout=15 * SLOW))
        self.assertLess(time.monotonic() - start, 10 * SLOW)
        self.assertNotIn(OPEN, c.got)


class AttackAuthService(AuthServiceTestCase):
    """The relay to an auth service offering PLAIN, X-ECHO and ANONYMOUS,
    behind a listener whose saslMechanisms is PLAIN."""

    def test_a_mechanism_cut_from_the_offer_never_reaches_the_service(self):
        svc = self.service()
        r = self.relay_router(svc.port, listener={"saslMechanisms": "PLAIN"})
        c = Raw(r.port)
        try:
            c.send(SASL_HEADER)
            self.assertTrue(c.read_until(b"\x00\x53\x40"))
            self.assertEqual(c.mechanisms(), ["PLAIN"])
            c.send(sasl(INIT, [("sym", "ANONYMOUS"), ("bin", b"")]))
            c.read_until(b"\x00\x53\x44")
            self.assertNotIn(c.outcome(), (None, 0), c.got)
            c.send(AMQP_HEADER + frame(0, performative(0x10, [("str", "x")])))
            self.assertTrue(c.read_to_close())
            self.assertNotIn(OPEN, c.got)
        finally:
            c.close()
        self.assertNotIn("ANONYMOUS", [x.get("mech") for x in svc.sessions])
        # the client's own hostname is not what the service sees: the realm is
        c = Raw(r.port)
        try:
            c.send(SASL_HEADER)
            self.assertTrue(c.read_until(b"\x00\x53\x40"))
            c.send(sasl(INIT, [("sym", "PLAIN"), ("bin", b"\x00alice\x00alice-pw"),
                               ("str", "evil.example")]))
            self.assertTrue(c.read_until(b"\x00\x53\x44"))
            self.assertEqual(c.outcome(), 0)
        finally:
            c.close()
        self.wait_for("the service's session", lambda: any(
            x.get("user") == "alice" for x in svc.sessions))
        self.assertEqual([x.get("hostname") for x in svc.sessions if x.get("user") == "alice"],
                         [AUTHSVC_REALM])
        self.assertTrue(r.alive())


class AttackRequireSsl(SaslTestCase):

    def test_clear_client_on_require_ssl_or_encryption_listener_gets_no_open(self):
        certs = shared_certs()
        port, port2 = free_port(), free_port()
        r = self.start_router(extra=conf_section("sslProfile", {
            "name": "srv", "certFile": certs["server"], "privateKeyFile": certs["server_key"]})
            + conf_section("listener", {"host": "127.0.0.1", "port": port, "sslProfile": "srv",
                                        "requireSsl": "yes", "saslMechanisms": "ANONYMOUS",
                                        "authenticatePeer": "no"})
            + conf_section("listener", {"host": "127.0.0.1", "port": port2, "sslProfile": "srv",
                                        "requireSsl": "no", "requireEncryption": "yes",
                                        "saslMechanisms": "ANONYMOUS",
                                        "authenticatePeer": "no"}))
        self.wait_for("the TLS listeners", lambda: _listening(port) and _listening(port2))
        hellos = (AMQP_HEADER + frame(0, performative(0x10, [("str", "x")])),
                  SASL_HEADER + sasl(INIT, [("sym", "ANONYMOUS"), ("bin", b"")])
                  + AMQP_HEADER + frame(0, performative(0x10, [("str", "x")])))
        for port, hello in [(p, h) for p in (port, port2) for h in hellos]:
            c = Raw(port)
            try:
                c.send(hello)
                self.assertTrue(c.read_to_close())
                self.assertNotIn(OPEN, c.got)
                self.assertNotIn(b"\x00\x53\x44", c.got)
            finally:
                c.close()
        self.assertTrue(r.alive())


def _listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


if __name__ == "__main__":
    unittest.main()
