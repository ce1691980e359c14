#!/usr/bin/python3
"""SASL on Junction's own AMQP engine (docs/engine.md, stage 4): listeners
with authenticatePeer and Cyrus's mechanisms (PLAIN, SCRAM-SHA-256,
DIGEST-MD5) and no TLS run on the own engine, the
engine framing SASL and Cyrus checking the credentials against a real
sasldb made with saslpasswd2 (test_router_sasl.sasl_dir).

Each test asserts from the router's side that the connection ran on the
own engine (its "Connection runs on Junction's own AMQP engine" line).
Covered: PLAIN from python3-qpid-proton with a good password (management
shows the user, the mechanism and isAuthenticated), a wrong password and
an unknown user (refused, logged with Cyrus's reason); SCRAM-SHA-256 and
DIGEST-MD5 from a junctiond connector (proton's path with Cyrus as the
client: challenge rounds and SCRAM's server signature in the outcome) with
good and wrong passwords; ANONYMOUS and a client without SASL refused where
authentication is required, and served where it is not; the user-id check
holding an authenticated client's messages to its user.

Over TLS (OwnSaslTlsTest, real certificates from tls_certs): EXTERNAL from a
client's certificate (the user its subject as the sslProfile's uidFormat
says), PLAIN from python3-qpid-proton; and connectors of a switched router A
to a switched router B through the own client end: SCRAM-SHA-256 over TLS
through Cyrus's client (a good password, and a wrong one logged in proton's
path's words), EXTERNAL with A's certificate; and DIGEST-MD5's challenge
rounds through Cyrus's client over plain TCP.

JN_BUILD_DIR names the build directory (set by ctest).
"""
import os
import re
import socket
import sys
import threading
import unittest

from proton import ConnectionException, Message, Timeout
from proton.utils import BlockingConnection, SendException

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Router, conf_section, free_port  # noqa: E402
from tls_certs import shared_certs  # noqa: E402
from proton import SSLDomain  # noqa: E402
from test_router_sasl import (REALM, TIMEOUT, USERS, SaslTestCase, attempt,  # noqa: E402
                              connect)
import test_router_authsvc as authsvc  # noqa: E402

OWN_LINE = "Connection runs on Junction's own AMQP engine"
# at accept, for each connection whose SASL runs on the own engine with Cyrus
OWN_SASL_LINE = "SASL on Junction's own AMQP engine"
ALICE = "alice@" + REALM


class OwnSaslTest(SaslTestCase):

    def own_router(self, listener, router=None, extra=""):
        """A router on the own engine with Cyrus
        configured; its main listener as given, and a plain anonymous
        listener for management (self.mgmt_url)."""
        port = free_port()
        self.mgmt_url = "amqp://127.0.0.1:%d" % port
        text = conf_section("listener", {"host": "127.0.0.1", "port": port,
                                         "saslMechanisms": "ANONYMOUS",
                                         "authenticatePeer": "no"}) + extra
        r = Router(self.workdir, name="R%d" % len(self.routers),
                   router=router or self.router_section(), listener=listener, extra=text)
        r.start()
        self.routers.append(r)
        self.addCleanup(self._stop_router, r)
        r.wait_ready()
        return r

    def own_lines(self, r):
        """Connections whose SASL ran on the own engine (refused ones too)."""
        return r.log().count(OWN_SASL_LINE)

    def test_plain_good_password_on_the_own_engine(self):
        r = self.own_router({"saslMechanisms": "PLAIN SCRAM-SHA-256", "authenticatePeer": "yes"})
        c = connect(r.url, ALICE, USERS["alice"])
        try:
            c.create_receiver("q")
            mine = [x for x in self.connections() if x["user"] == ALICE]
            self.assertEqual(len(mine), 1, self.connections())
            self.assertEqual(mine[0]["sasl"], "PLAIN")
            self.assertTrue(mine[0]["isAuthenticated"])
            self.assertFalse(mine[0]["isEncrypted"])
        finally:
            c.close()
        self.assertRegex(r.log(), r"Connection Opened: .*auth=PLAIN user=alice@junction")
        self.assertEqual(self.own_lines(r), 1, r.log())
        self.assertGreaterEqual(r.log().count(OWN_LINE), 2, r.log())  # and management's

    def test_plain_wrong_password_and_unknown_user_refused_on_the_own_engine(self):
        r = self.own_router({"saslMechanisms": "PLAIN", "authenticatePeer": "yes"})
        self.assertIsNotNone(attempt(r.url, user=ALICE, password="wrong"))
        self.wait_log(r, r"SASL PLAIN authentication from 127\.0\.0\.1:\d+ .*failed: .*"
                         r"authentication failure", "the wrong password's log line")
        self.assertIsNotNone(attempt(r.url, user="mallory@" + REALM, password="x"))
        self.wait_log(r, r"SASL PLAIN authentication from 127\.0\.0\.1:\d+ .*failed: .*"
                         r"user not found", "the unknown user's log line")
        self.assertIsNone(attempt(r.url, user="bob@" + REALM, password=USERS["bob"]))
        self.assertEqual(self.own_lines(r), 3, r.log())

    def test_anonymous_and_no_sasl_refused_when_authentication_is_required(self):
        r = self.own_router({"saslMechanisms": "PLAIN ANONYMOUS", "authenticatePeer": "yes"})
        self.assertIsNotNone(attempt(r.url, mechs="ANONYMOUS"))
        with self.assertRaises((ConnectionException, Timeout, OSError)):  # without SASL
            c = BlockingConnection(r.url, timeout=5, sasl_enabled=False)
            c.create_receiver("probe")
        self.assertIsNone(attempt(r.url, user=ALICE, password=USERS["alice"]))
        self.assertEqual(self.own_lines(r), 3, r.log())

    def test_anonymous_served_where_authentication_is_not_required(self):
        r = self.own_router({"saslMechanisms": "PLAIN ANONYMOUS", "authenticatePeer": "no"})
        self.assertIsNone(attempt(r.url, mechs="ANONYMOUS"))
        self.assertIsNone(attempt(r.url, user=ALICE, password=USERS["alice"]))
        self.assertRegex(r.log(), r"Connection Opened: .*auth=ANONYMOUS user=anonymous")
        self.assertRegex(r.log(), r"Connection Opened: .*auth=PLAIN user=alice@junction")
        self.assertEqual(self.own_lines(r), 2, r.log())

    def test_sasl_frames_over_512_octets_up_to_the_listeners_max_frame_size(self):
        """As on proton's path: a sasl-init frame of maxFrameSize octets is
        taken (5.3.1's 512 is not held to), one octet more closes the
        connection with no outcome."""
        r = self.own_router({"saslMechanisms": "PLAIN ANONYMOUS", "authenticatePeer": "no",
                             "maxFrameSize": 4096})

        def init_of(size):  # sasl-init ANONYMOUS whose frame is size octets
            n = size
            while True:
                f = authsvc.frame(authsvc.encode(0x41, [authsvc._sym("ANONYMOUS"), b"t" * n]),
                                  True)
                if len(f) == size:
                    return f
                n += size - len(f)

        def outcome(size):
            with socket.create_connection(("127.0.0.1", r.port), timeout=TIMEOUT) as s:
                s.sendall(authsvc.SASL_HEADER)
                self.assertEqual(s.recv(8, socket.MSG_WAITALL), authsvc.SASL_HEADER)
                self.assertEqual(authsvc.read_frame(s)[0], 0x40)
                s.sendall(init_of(size))
                try:
                    code, fields = authsvc.read_frame(s)
                except (EOFError, OSError):
                    return None
                self.assertEqual(code, 0x44)
                return int(fields[0])

        self.assertEqual(outcome(513), 0)
        self.assertEqual(outcome(4096), 0)
        self.assertIsNone(outcome(4097))
        self.assertEqual(self.own_lines(r), 3, r.log())
        self.assertTrue(r.alive())

    def connector_pair(self, mech, password):
        b = self.own_router({"saslMechanisms": mech, "authenticatePeer": "yes"})
        a = self.start_router(router=self.router_section(id="A"), extra=conf_section(
            "connector", {"host": "127.0.0.1", "port": b.port, "role": "normal",
                          "saslMechanisms": mech, "saslUsername": ALICE,
                          "saslPassword": "pass:" + password}))
        return a, b

    def test_scram_sha_256_good_and_wrong_password_on_the_own_engine(self):
        a, b = self.connector_pair("SCRAM-SHA-256", USERS["alice"])
        self.wait_log(b, r"Connection Opened: dir=in .*auth=SCRAM-SHA-256 user=alice@junction",
                      "B's SCRAM-authenticated connection")
        # A checked B's server signature (the outcome's additional-data)
        self.wait_log(a, r"Connection Opened: dir=out .*auth=SCRAM-SHA-256", "A's connection")
        self.assertGreaterEqual(self.own_lines(b), 1, b.log())
        a2, b2 = self.connector_pair("SCRAM-SHA-256", "wrong")
        self.wait_log(b2, r"SASL SCRAM-SHA-256 authentication from 127\.0\.0\.1:\d+ .*failed",
                      "B's log line")
        self.wait_log(a2, r"SASL SCRAM-SHA-256 to 127\.0\.0\.1:\d+: the server refused the "
                          r"credentials of 'alice@junction'", "A's log line")
        self.assertGreaterEqual(self.own_lines(b2), 1, b2.log())

    def own_connector_pair(self, password):
        """B's PLAIN listener, and A's connector naming PLAIN, both routers
        with the switch on: A's SASL runs through the own client end."""
        b = self.own_router({"saslMechanisms": "PLAIN", "authenticatePeer": "yes"})
        a = self.own_router({}, router=self.router_section(id="A"), extra=conf_section(
            "connector", {"host": "127.0.0.1", "port": b.port, "role": "normal",
                          "saslMechanisms": "PLAIN", "saslUsername": ALICE,
                          "saslPassword": "pass:" + password}))
        return a, b

    def test_connector_plain_through_the_own_client_end(self):
        a, b = self.own_connector_pair(USERS["alice"])
        self.wait_log(b, r"Connection Opened: dir=in .*auth=PLAIN user=alice@junction",
                      "B's PLAIN-authenticated connection")
        self.wait_log(a, r"\[C(\d+)\] Connection Opened: dir=out .*auth=PLAIN "
                         r"user=alice@junction.*\n.*\[C\1\] " + OWN_LINE, "A's own connection")
        a2, b2 = self.own_connector_pair("wrong")
        self.wait_log(b2, r"SASL PLAIN authentication from 127\.0\.0\.1:\d+ .*failed",
                      "B's log line")
        self.wait_log(a2, r"Connection to 127\.0\.0\.1:\d+ failed: amqp:unauthorized-access",
                      "A's log line")
        self.assertNotIn("Connection Opened: dir=out", a2.log())

    def test_digest_md5_challenge_rounds_on_the_own_engine(self):
        a, b = self.connector_pair("DIGEST-MD5", USERS["alice"])
        self.wait_log(b, r"Connection Opened: dir=in .*auth=DIGEST-MD5 user=alice",
                      "B's DIGEST-MD5-authenticated connection")
        self.assertGreaterEqual(self.own_lines(b), 1, b.log())

    def sasl_exchange(self, port, mech=b"ANONYMOUS"):
        """Our SASL header and a sasl-init for mech, raw: the octets the
        router answered (its header and sasl-mechanisms, then its
        sasl-outcome), until it closed or 2 s passed."""
        s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        body = b"\x00\x53\x41\xc0" + bytes([len(mech) + 3, 1, 0xa3, len(mech)]) + mech
        s.sendall(b"AMQP\x03\x01\x00\x00" + (8 + len(body)).to_bytes(4, "big")
                  + b"\x02\x01\x00\x00" + body)
        s.settimeout(2)
        got = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        except socket.timeout:
            pass
        s.close()
        return got

    def test_anonymous_spellings_proton_kept_for_itself_on_the_own_engine(self):
        """Stage 5: a listener whose saslMechanisms names ANONYMOUS alone in
        another spelling is no longer Cyrus's nor proton's: the engine's
        built-in ANONYMOUS, offered as proton's path offered it (measured
        with JUNCTION_ENGINE=proton): "anonymous" (any case, a
        space-separated word) offers ANONYMOUS; "ANONYMOUS," (the comma part
        of the word) offers nothing, refuses a sasl-init for ANONYMOUS with
        outcome auth and serves a client without SASL."""
        comma = free_port()
        r = self.own_router({"saslMechanisms": "anonymous"}, extra=conf_section(
            "listener", {"host": "127.0.0.1", "port": comma, "saslMechanisms": "ANONYMOUS,"}))
        got = self.sasl_exchange(r.port)
        self.assertIn(b"\xa3\x09ANONYMOUS", got)  # offered
        self.assertTrue(got.endswith(b"\x00\x53\x44\xc0\x03\x01\x50\x00"), got)  # outcome ok
        self.assertIsNone(attempt("amqp://127.0.0.1:%d" % r.port, mechs="ANONYMOUS"))
        self.wait_log(r, r"\[(C\d+)\] Connection Opened: dir=in .*auth=ANONYMOUS .*container_id="
                         r"(?!S\b).*\n.*\[\1\] " + OWN_LINE, "the ANONYMOUS client on the own engine")
        got = self.sasl_exchange(comma)
        self.assertIn(b"\x00\x53\x40\xc0\x05\x01\xe0\x02\x00\xa3", got)  # an empty offer
        self.assertTrue(got.endswith(b"\x00\x53\x44\xc0\x03\x01\x50\x01"), got)  # outcome auth
        self.wait_log(r, r"\[(C\d+)\] SASL on Junction's own AMQP engine \(JUNCTION_ENGINE=own\), "
                         r"offering: nothing \(built in\)\n.*\[\1\] Connection from 127\.0\.0\.1:\d+ "
                         r"\(to 127\.0\.0\.1:%d\) failed: amqp:unauthorized-access " % comma,
                      "the refusal on the own engine, logged")
        c = BlockingConnection("amqp://127.0.0.1:%d" % comma, timeout=TIMEOUT, sasl_enabled=False)
        c.create_receiver("q")
        c.close()
        self.assertEqual(r.log().count("Connection Opened: dir=in"), r.log().count(OWN_LINE),
                         r.log())

    def test_connector_naming_anonymous_in_lower_case_on_the_own_engine(self):
        """Stage 5: a connector whose saslMechanisms is "anonymous" (not
        Cyrus's on proton's path, nor the client end's built-in list
        before) runs on the own client end and sends ANONYMOUS, as proton's
        path does."""
        b = self.own_router({"saslMechanisms": "ANONYMOUS"})
        a = self.own_router({}, router=self.router_section(id="A"), extra=conf_section(
            "connector", {"host": "127.0.0.1", "port": b.port, "role": "normal",
                          "saslMechanisms": "anonymous"}))
        self.wait_log(b, r"Connection Opened: dir=in .*auth=ANONYMOUS .*container_id=A\b",
                      "B's ANONYMOUS connection from A")
        self.wait_log(a, r"\[C(\d+)\] Connection Opened: dir=out .*auth=ANONYMOUS"
                         r".*\n.*\[C\1\] " + OWN_LINE, "A's connection on the own engine")

    def test_user_id_check_holds_an_authenticated_client_to_its_user(self):
        r = self.own_router({"saslMechanisms": "PLAIN", "authenticatePeer": "yes"})
        got = []
        rc = connect(r.url, "bob@" + REALM, USERS["bob"])
        rcv = rc.create_receiver("uid.q", credit=10)

        done = threading.Event()

        def consume():  # accepts each message as it takes it
            for _ in range(3):
                got.append(rcv.receive(timeout=TIMEOUT).body)
                rcv.accept()
            rc.wait(done.is_set, timeout=TIMEOUT)  # the last accept goes out
        t = threading.Thread(target=consume)
        t.start()
        c = connect(r.url, ALICE, USERS["alice"])
        try:
            snd = c.create_sender("uid.q")
            snd.send(Message(body="mine", user_id=ALICE.encode()))
            snd.send(Message(body="none"))
            with self.assertRaises(SendException) as e:
                snd.send(Message(body="forged", user_id=b"bob@" + REALM.encode()))
            self.assertIn("REJECTED", str(e.exception))
            snd.send(Message(body="after"))  # the link goes on
        finally:
            done.set()
            t.join(TIMEOUT)
            c.close()
            rc.close()
        self.assertEqual(got, ["mine", "none", "after"])
        self.assertEqual(self.own_lines(r), 2, r.log())

class OwnSaslTlsTest(OwnSaslTest):
    """SASL over TLS, and connectors through the own client end, with both
    routers switched. Runs only its own tests (not OwnSaslTest's again)."""

    def setUp(self):
        super().setUp()
        self.certs = shared_certs()

    def profile(self, name, cert, key, **extra):
        attrs = {"name": name, "certFile": self.certs[cert],
                 "privateKeyFile": self.certs[key], "caCertFile": self.certs["ca"]}
        attrs.update(extra)
        return conf_section("sslProfile", attrs)

    def tls_own_router(self, listener, cert="server", key="server_key", **profile):
        lst = {"sslProfile": "srv", "requireSsl": "yes"}
        lst.update(listener)
        return self.own_router(lst, extra=self.profile("srv", cert, key, **profile))

    def client_domain(self, cert=None, key=None):
        d = SSLDomain(SSLDomain.MODE_CLIENT)
        d.set_trusted_ca_db(self.certs["ca"])
        if cert:
            d.set_credentials(self.certs[cert], self.certs[key], None)
        d.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
        return d

    def test_external_from_a_client_certificate_on_the_own_engine(self):
        r = self.tls_own_router({"saslMechanisms": "EXTERNAL", "authenticatePeer": "yes"},
                                uidFormat="on")
        c = connect("amqps://127.0.0.1:%d" % r.port, mechs="EXTERNAL",
                    domain=self.client_domain("client", "client_key"))
        try:
            c.create_receiver("q")
            mine = [x for x in self.connections() if x["isEncrypted"]]
            self.assertEqual(len(mine), 1, self.connections())
            self.assertEqual(mine[0]["sasl"], "EXTERNAL")
            self.assertEqual(mine[0]["user"], "Junction;client")  # uidFormat o, n
            self.assertTrue(mine[0]["isAuthenticated"])
        finally:
            c.close()
        self.assertRegex(r.log(), r"offering: EXTERNAL")
        self.assertRegex(r.log(), r"\[C(\d+)\] Connection Opened: dir=in .*encrypted=TLSv1\.\d "
                                  r"auth=EXTERNAL user=Junction;client.*\n.*\[C\1\] " + OWN_LINE)
        # no certificate: EXTERNAL is not offered, and nothing else is
        self.assertIsNotNone(attempt("amqps://127.0.0.1:%d" % r.port, mechs="EXTERNAL",
                                     domain=self.client_domain()))

    def test_plain_over_tls_on_the_own_engine(self):
        r = self.tls_own_router({"saslMechanisms": "PLAIN", "authenticatePeer": "yes"})
        url = "amqps://127.0.0.1:%d" % r.port
        self.assertIsNone(attempt(url, user=ALICE, password=USERS["alice"],
                                  domain=self.client_domain()))
        self.assertIsNotNone(attempt(url, user=ALICE, password="wrong",
                                     domain=self.client_domain()))
        self.assertRegex(r.log(), r"\[C(\d+)\] Connection Opened: dir=in .*encrypted=TLSv1\.\d "
                                  r"auth=PLAIN user=alice@junction.*\n.*\[C\1\] " + OWN_LINE)
        self.wait_log(r, r"SASL PLAIN authentication from 127\.0\.0\.1:\d+ .*failed",
                      "the wrong password's log line")
        self.assertEqual(self.own_lines(r), 2, r.log())

    def own_pair(self, listener, connector, tls=True):
        """B's listener (TLS with the server certificate when tls), A's
        connector to it (with A's certificate when tls); both switched."""
        b = (self.tls_own_router(listener, cert="router_b", key="router_b_key") if tls
             else self.own_router(listener))
        conn = {"host": "127.0.0.1", "port": b.port, "role": "normal"}
        extra = ""
        if tls:
            conn.update(sslProfile="cli", verifyHostname="yes")
            extra = self.profile("cli", "router_a", "router_a_key")
        conn.update(connector)
        a = self.own_router({}, router=self.router_section(id="A"),
                            extra=extra + conf_section("connector", conn))
        return a, b

    def a_own_out(self, a, pattern):
        self.wait_log(a, r"\[C(\d+)\] Connection Opened: dir=out " + pattern +
                      r".*\n.*\[C\1\] " + OWN_LINE, "A's connection on the own engine")

    def test_scram_connector_over_tls_through_cyrus_client(self):
        scram = {"saslMechanisms": "SCRAM-SHA-256", "saslUsername": ALICE}
        a, b = self.own_pair({"saslMechanisms": "SCRAM-SHA-256 PLAIN", "authenticatePeer": "yes"},
                             dict(scram, saslPassword="pass:" + USERS["alice"]))
        self.wait_log(b, r"Connection Opened: dir=in .*encrypted=TLSv1\.\d auth=SCRAM-SHA-256 "
                         r"user=alice@junction", "B's SCRAM-authenticated connection")
        # A checked B's server signature (the outcome's additional-data)
        self.a_own_out(a, r".*encrypted=TLSv1\.\d auth=SCRAM-SHA-256 user=alice@junction")
        a2, b2 = self.own_pair({"saslMechanisms": "SCRAM-SHA-256", "authenticatePeer": "yes"},
                               dict(scram, saslPassword="pass:wrong"))
        self.wait_log(a2, r"SASL SCRAM-SHA-256 to 127\.0\.0\.1:\d+: the server refused the "
                          r"credentials of 'alice@junction'", "A's log line")
        self.wait_log(a2, r"Connection to 127\.0\.0\.1:\d+ failed: amqp:unauthorized-access",
                      "A's failed connection")
        self.assertNotIn("Connection Opened: dir=out", a2.log())

    def test_external_connector_with_its_certificate(self):
        a, b = self.own_pair({"saslMechanisms": "EXTERNAL", "authenticatePeer": "yes"},
                             {"saslMechanisms": "EXTERNAL"})
        self.wait_log(b, r"Connection Opened: dir=in .*encrypted=TLSv1\.\d auth=EXTERNAL "
                         r"user=CN=router-a,O=Junction", "B's EXTERNAL connection")
        self.a_own_out(a, r".*encrypted=TLSv1\.\d auth=EXTERNAL")

    def test_digest_md5_connector_through_cyrus_client(self):
        a, b = self.own_pair({"saslMechanisms": "DIGEST-MD5", "authenticatePeer": "yes"},
                             {"saslMechanisms": "DIGEST-MD5", "saslUsername": ALICE,
                              "saslPassword": "pass:" + USERS["alice"]}, tls=False)
        self.wait_log(b, r"Connection Opened: dir=in .*auth=DIGEST-MD5 user=alice",
                      "B's DIGEST-MD5-authenticated connection")
        self.a_own_out(a, r".*auth=DIGEST-MD5 user=alice@junction")


class OwnAuthServiceTest(authsvc.AuthServiceTestCase):
    """The auth-service relay with the client on the own engine: the
    engine's SASL layer defers its offer until the (fake) service's
    mechanisms come and waits for each answer; the service's connection is
    the router's own, on the engine's client end too. Each case finds the
    client's connection id on the own engine's lines."""

    def own_sasl_ids(self, r):
        return re.findall(r"\[(C\d+)\] SASL on Junction's own AMQP engine, "
                          r"offering: .* \(auth service ", r.log())

    def alice_through_the_relay(self):
        """A service and a relaying router; alice connects with her
        password, attaches a receiver and leaves: (service, router, her
        connection as management showed it)."""
        svc = self.service()
        r = self.relay_router(svc.port)
        c = authsvc.connect(r.url, "alice", authsvc.USERS["alice"])
        try:
            c.create_receiver("q")
            mine = [x for x in self.connections() if x["user"] == "alice"]
            self.assertEqual(len(mine), 1, self.connections())
            self.assertTrue(mine[0]["isAuthenticated"])
        finally:
            c.close()
        return svc, r, mine[0]

    def test_relay_good_password_on_the_own_engine(self):
        svc, r, mine = self.alice_through_the_relay()
        self.assertEqual(mine["sasl"], "PLAIN")
        opened = re.search(r"\[(C\d+)\] Connection Opened: .*auth=PLAIN user=alice ", r.log())
        self.assertIsNotNone(opened, r.log())
        cid = opened.group(1)
        self.assertIn(cid, self.own_sasl_ids(r), r.log())
        self.assertIn("[%s] %s" % (cid, OWN_LINE), r.log())
        s = [x for x in svc.sessions if x["user"] == "alice"][0]
        self.assertEqual(s["hostname"], authsvc.REALM)  # realm: the sasl-init's hostname

    def test_service_connection_on_the_own_engine(self):
        """The relay's connection to the service runs on the engine's
        client end (its line): the realm goes in its sasl-init, the
        service's Open names the service's host, its identity admits the
        client, and our close ends it."""
        svc, r, _ = self.alice_through_the_relay()
        s = [x for x in svc.sessions if x["user"] == "alice"][0]
        self.assertEqual((s["hostname"], s["open_hostname"]), (authsvc.REALM, "127.0.0.1"))
        self.wait_for("the router's close to the service", lambda: s["closed"])
        lines = re.findall(r"\[C\d+\] Connection to auth service 127\.0\.0\.1:%d runs on "
                           r"Junction's own AMQP engine" % svc.port, r.log())
        self.assertEqual(len(lines), 1, r.log())
        self.assertRegex(r.log(), r"SASL PLAIN authentication from .*: user alice ")

    def test_relay_refusal_on_the_own_engine(self):
        svc = self.service()
        r = self.relay_router(svc.port)
        self.assertIsNotNone(authsvc.attempt(r.url, "alice", "wrong"))
        self.wait_log(r, r"SASL PLAIN authentication from 127\.0\.0\.1:\d+ \(to 127\.0\.0\.1:\d+\) "
                         r"failed: the service refused the credentials", "the refusal's line")
        cid = re.search(r"\[(C\d+)\] SASL PLAIN authentication from .* failed: the service "
                        r"refused", r.log()).group(1)
        self.assertIn(cid, self.own_sasl_ids(r), r.log())
        self.assertIsNone(authsvc.attempt(r.url, "bob", authsvc.USERS["bob"]))  # others served

    def test_relay_challenges_over_512_octets_on_the_own_engine(self):
        """A service's 4,000-octet challenges reach the client whole, round
        after round, until the listener's handshake timeout ends the
        exchange (before SASL frames over 512 octets, the first one ended
        it at once)."""
        from test_router_authsvc_hostile import Hostile
        seen = []

        def act(c, init):
            while True:
                c.sendall(authsvc.frame(authsvc.encode(0x42, [b"more" * 1000]), True))
                code, fields = authsvc.read_frame(c)
                if code != 0x43:
                    return
                seen.append(len(fields[0]))
        h = Hostile(act)
        self.addCleanup(h.stop)
        r = self.relay_router(h.port, listener={"initialHandshakeTimeoutSeconds": 3})
        n = 0
        with socket.create_connection(("127.0.0.1", r.port), timeout=TIMEOUT) as s:
            s.sendall(authsvc.SASL_HEADER)
            s.recv(8, socket.MSG_WAITALL)
            authsvc.read_frame(s)
            s.sendall(authsvc.frame(authsvc.encode(0x41, [authsvc._sym("X-ECHO"), b"alice"]),
                                    True))
            try:
                while True:  # until the handshake timeout ends it
                    code, fields = authsvc.read_frame(s)
                    if code != 0x42:
                        break
                    self.assertEqual(fields[0], b"more" * 1000)
                    n += 1
                    s.sendall(authsvc.frame(authsvc.encode(0x43, [b"r" * 3000]), True))
            except (EOFError, OSError):
                pass
        self.assertGreaterEqual(n, 2, r.log())
        self.assertIn(3000, seen)  # the client's 3,000-octet responses went to the service
        self.wait_log(r, r"no AMQP open within 3 s|did not answer within 3 s", "the timeout")
        self.assertIn(re.search(r"\[(C\d+)\] SASL on Junction's own AMQP engine", r.log()).group(1),
                      self.own_sasl_ids(r))
        self.assertTrue(r.alive())

    def test_relay_service_down_on_the_own_engine(self):
        r = self.relay_router(free_port())  # nothing listens there
        self.assertIsNotNone(authsvc.attempt(r.url, "alice", authsvc.USERS["alice"]))
        self.wait_log(r, r"SASL \(none chosen\) authentication from 127\.0\.0\.1:\d+ .*failed: "
                         r"the connection to the service ended: .*refused",
                      "the unreachable service's line")
        self.assertRegex(r.log(), r"SASL on Junction's own AMQP engine, offering: nothing")
        # on the wire as proton's path: an empty offer, then outcome auth unasked
        with socket.create_connection(("127.0.0.1", r.port), timeout=TIMEOUT) as s:
            s.sendall(authsvc.SASL_HEADER)
            self.assertEqual(s.recv(8, socket.MSG_WAITALL), authsvc.SASL_HEADER)
            code, mechs = authsvc.read_frame(s)
            self.assertEqual((code, list(mechs[0] or [])), (0x40, []))
            code, out = authsvc.read_frame(s)
            self.assertEqual((code, int(out[0])), (0x44, 1))
        self.assertTrue(r.alive())


def load_tests(loader, tests, pattern):
    """OwnSaslTlsTest inherits OwnSaslTest's helpers; its tests are only
    its own."""
    suite = unittest.TestSuite()
    suite.addTests(loader.loadTestsFromTestCase(OwnSaslTest))
    for name in loader.getTestCaseNames(OwnSaslTlsTest):
        if name in OwnSaslTlsTest.__dict__:
            suite.addTest(OwnSaslTlsTest(name))
    suite.addTests(loader.loadTestsFromTestCase(OwnAuthServiceTest))
    return suite


if __name__ == "__main__":
    unittest.main()
