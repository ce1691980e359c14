#!/usr/bin/python3
"""SASL through Cyrus (issue 15): a sasldb made with saslpasswd2 and a Cyrus
config file, both written when the tests start; PLAIN from python3-qpid-proton
clients, SCRAM-SHA-256 and PLAIN from a junctiond connector to another
junctiond, EXTERNAL from TLS client certificates (clients and a two-router
mesh), the handshake timeout mid-SASL, and configurations that cannot work
refused at start-up with FILE:LINE.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from proton import ConnectionException, SSLDomain, Timeout
from proton.utils import BlockingConnection

from harness import SLOW, RouterTestCase, conf_section, free_port, run_junctiond
from tls_certs import shared_certs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
from junction.management import Client, ConnectOptions  # noqa: E402

TIMEOUT = 10 * SLOW
REALM = "junction"
USERS = {"alice": "alice-pw", "bob": "bob-pw"}
MECHS = "PLAIN SCRAM-SHA-256 SCRAM-SHA-1 DIGEST-MD5 ANONYMOUS EXTERNAL"

_sasl_dir = None


def sasl_dir():
    """A folder holding users.sasldb (saslpasswd2) and qdrouterd.conf (made
    once per test process)."""
    global _sasl_dir
    if _sasl_dir is None:
        import atexit
        d = tempfile.mkdtemp(prefix="jn-sasl-")
        atexit.register(shutil.rmtree, d, True)
        db = os.path.join(d, "users.sasldb")
        for user, pw in USERS.items():
            subprocess.run(["saslpasswd2", "-c", "-p", "-f", db, "-u", REALM, user],
                           input=pw.encode(), check=True, capture_output=True)
        with open(os.path.join(d, "qdrouterd.conf"), "w") as f:
            f.write("pwcheck_method: auxprop\nauxprop_plugin: sasldb\n"
                    "sasldb_path: %s\nmech_list: %s\n" % (db, MECHS))
        _sasl_dir = d
    return _sasl_dir


def connect(url, user=None, password=None, mechs="PLAIN", domain=None):
    kw = {}
    if user is not None:
        kw.update(user=user, password=password)
    return BlockingConnection(url, timeout=TIMEOUT, allowed_mechs=mechs, sasl_enabled=True,
                              allow_insecure_mechs=True, ssl_domain=domain,
                              virtual_host="localhost" if domain else None, **kw)


def attempt(url, **kw):
    """None when a connection opens (and a link attaches), else the error."""
    try:
        c = connect(url, **kw)
        c.create_receiver("probe")
        c.close()
        return None
    except (ConnectionException, Timeout, OSError) as e:
        return str(e)


class SaslTestCase(RouterTestCase):
    def router_section(self, **extra):
        r = {"mode": "standalone", "id": "S", "saslConfigDir": sasl_dir()}
        r.update(extra)
        return r

    def sasl_router(self, listener, extra="", router=None):
        """A router with Cyrus configured; its main listener as given, and a
        plain anonymous listener for management (self.mgmt_url)."""
        port = free_port()
        self.mgmt_url = "amqp://127.0.0.1:%d" % port
        text = conf_section("listener", {"host": "127.0.0.1", "port": port,
                                         "saslMechanisms": "ANONYMOUS",
                                         "authenticatePeer": "no"}) + extra
        return self.start_router(router=router or self.router_section(), listener=listener,
                                 extra=text)

    def connections(self):
        with Client(ConnectOptions(url=self.mgmt_url)) as c:
            return c.query_dicts("connection")

    def wait_log(self, router, pattern, what):
        self.wait_for(what, lambda: re.search(pattern, router.log()) is not None)


class SaslListenerTest(SaslTestCase):

    def test_plain_good_password_and_management_shows_the_user(self):
        r = self.sasl_router({"saslMechanisms": "PLAIN SCRAM-SHA-256",
                              "authenticatePeer": "yes"})
        c = connect(r.url, "alice@" + REALM, USERS["alice"])
        try:
            c.create_receiver("q")
            mine = [x for x in self.connections() if x["user"] == "alice@" + REALM]
            self.assertEqual(len(mine), 1, self.connections())
            self.assertEqual(mine[0]["sasl"], "PLAIN")
            self.assertTrue(mine[0]["isAuthenticated"])
            self.assertFalse(mine[0]["isEncrypted"])
        finally:
            c.close()
        self.assertRegex(r.log(), r"Connection Opened: .*auth=PLAIN user=alice@junction")

    def test_plain_wrong_password_and_unknown_user_refused_with_a_log_line(self):
        r = self.sasl_router({"saslMechanisms": "PLAIN", "authenticatePeer": "yes"})
        self.assertIsNotNone(attempt(r.url, user="alice@" + REALM, password="wrong"))
        self.wait_log(r, r"SASL PLAIN authentication from 127\.0\.0\.1:\d+ .*failed: .*"
                         r"authentication failure", "the wrong password's log line")
        self.assertIsNotNone(attempt(r.url, user="mallory@" + REALM, password="x"))
        self.wait_log(r, r"SASL PLAIN authentication from 127\.0\.0\.1:\d+ .*failed: .*"
                         r"user not found", "the unknown user's log line")
        # others unaffected
        self.assertIsNone(attempt(r.url, user="bob@" + REALM, password=USERS["bob"]))

    def test_anonymous_refused_when_authentication_is_required(self):
        r = self.sasl_router({"saslMechanisms": "PLAIN ANONYMOUS", "authenticatePeer": "yes"})
        self.assertIsNotNone(attempt(r.url, mechs="ANONYMOUS"))
        self.assertIsNone(attempt(r.url, user="alice@" + REALM, password=USERS["alice"]))

    def test_handshake_timeout_mid_sasl(self):
        r = self.sasl_router({"saslMechanisms": "PLAIN", "authenticatePeer": "yes",
                              "initialHandshakeTimeoutSeconds": 1})
        t0 = time.monotonic()
        with socket.create_connection(("127.0.0.1", r.port), timeout=TIMEOUT) as s:
            s.sendall(b"AMQP\x03\x01\x00\x00")  # the SASL header, then nothing
            s.settimeout(TIMEOUT)
            while s.recv(4096):
                pass
        self.assertLess(time.monotonic() - t0, 1 + 5 * SLOW)
        self.wait_log(r, r"closed: no AMQP open within 1 s \(initialHandshakeTimeoutSeconds\)",
                      "the handshake timeout's log line")


class SaslExternalTest(SaslTestCase):

    def test_external_from_a_client_certificate(self):
        certs = shared_certs()
        prof = conf_section("sslProfile", {"name": "srv", "certFile": certs["server"],
                                           "privateKeyFile": certs["server_key"],
                                           "caCertFile": certs["ca"], "uidFormat": "on"})
        r = self.sasl_router({"saslMechanisms": "EXTERNAL", "authenticatePeer": "yes",
                              "sslProfile": "srv", "requireSsl": "yes"}, extra=prof)
        d = SSLDomain(SSLDomain.MODE_CLIENT)
        d.set_trusted_ca_db(certs["ca"])
        d.set_credentials(certs["client"], certs["client_key"], None)
        d.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
        c = connect("amqps://127.0.0.1:%d" % r.port, mechs="EXTERNAL", domain=d)
        try:
            c.create_receiver("q")
            mine = [x for x in self.connections() if x["isEncrypted"]]
            self.assertEqual(len(mine), 1, self.connections())
            self.assertEqual(mine[0]["sasl"], "EXTERNAL")
            self.assertEqual(mine[0]["user"], "Junction;client")  # uidFormat o, n
            self.assertTrue(mine[0]["isAuthenticated"])
        finally:
            c.close()

    def test_two_router_mesh_over_tls_with_external(self):
        certs = shared_certs()
        b_port = free_port()

        def router(rid, cert, key, body):
            return (conf_section("router", {"mode": "interior", "id": rid,
                                            "saslConfigDir": sasl_dir()})
                    + conf_section("sslProfile", {"name": "mesh-tls", "certFile": certs[cert],
                                                  "privateKeyFile": certs[key],
                                                  "caCertFile": certs["ca"]})
                    + conf_section("listener", {"host": "127.0.0.1", "port": "{port}",
                                                "saslMechanisms": "ANONYMOUS",
                                                "authenticatePeer": "no"})
                    + body + conf_section("log", {"module": "DEFAULT", "enable": "info+"}))
        b = self.start_router(config=router("B", "router_b", "router_b_key", conf_section(
            "listener", {"host": "127.0.0.1", "port": b_port, "role": "inter-router",
                         "sslProfile": "mesh-tls", "authenticatePeer": "yes",
                         "requireSsl": "yes", "saslMechanisms": "EXTERNAL"})))
        a = self.start_router(config=router("A", "router_a", "router_a_key", conf_section(
            "connector", {"host": "127.0.0.1", "port": b_port, "role": "inter-router",
                          "sslProfile": "mesh-tls", "saslMechanisms": "EXTERNAL",
                          "verifyHostname": "yes"})))
        self.wait_log(b, r"Connection Opened: dir=in .*encrypted=TLSv1\.\d auth=EXTERNAL "
                         r"user=CN=router-a,O=Junction", "B's EXTERNAL inter-router connection")
        self.wait_log(a, r"Connection Opened: dir=out .*encrypted=TLSv1\.\d auth=EXTERNAL",
                      "A's EXTERNAL inter-router connection")
        self.wait_log(a, r"Router B is a neighbour", "the mesh hello over TLS")


class SaslConnectorTest(SaslTestCase):

    def pair(self, mechs, connector):
        b = self.sasl_router({"saslMechanisms": mechs, "authenticatePeer": "yes"})
        conn = {"host": "127.0.0.1", "port": b.port, "role": "normal"}
        conn.update(connector)
        a = self.start_router(router=self.router_section(id="A"),
                              extra=conf_section("connector", conn))
        return a, b

    def test_connector_authenticates_with_scram_sha_256(self):
        a, b = self.pair("SCRAM-SHA-256", {"saslMechanisms": "SCRAM-SHA-256",
                                           "saslUsername": "alice@" + REALM,
                                           "saslPassword": "pass:" + USERS["alice"]})
        self.wait_log(b, r"Connection Opened: dir=in .*auth=SCRAM-SHA-256 user=alice@junction",
                      "B's SCRAM-authenticated connection")
        self.wait_log(a, r"Connection Opened: dir=out .*auth=SCRAM-SHA-256",
                      "A's connection")

    def test_connector_authenticates_with_plain_and_env_password(self):
        os.environ["JN_TEST_SASL_PW"] = USERS["bob"]
        a, b = self.pair("PLAIN", {"saslMechanisms": "PLAIN", "saslUsername": "bob@" + REALM,
                                   "saslPassword": "env:JN_TEST_SASL_PW"})
        self.wait_log(b, r"Connection Opened: dir=in .*auth=PLAIN user=bob@junction",
                      "B's PLAIN-authenticated connection")

    def test_connector_with_a_wrong_password_is_refused_and_logged(self):
        a, b = self.pair("SCRAM-SHA-256", {"saslMechanisms": "SCRAM-SHA-256",
                                           "saslUsername": "alice@" + REALM,
                                           "saslPassword": "pass:wrong"})
        self.wait_log(b, r"SASL SCRAM-SHA-256 authentication from 127\.0\.0\.1:\d+ .*failed",
                      "B's log line")
        self.wait_log(a, r"SASL SCRAM-SHA-256 to 127\.0\.0\.1:\d+: the server refused the "
                         r"credentials of 'alice@junction'", "A's log line")


class SaslConfigTest(SaslTestCase):
    """A configuration asking for what cannot work stops at start-up."""

    def run_conf(self, listener, router=None):
        lst = {"host": "127.0.0.1", "port": free_port()}
        lst.update(listener)
        text = (conf_section("router", router or self.router_section())
                + conf_section("listener", lst))
        path = os.path.join(self.workdir, "sasl.conf")
        with open(path, "w") as f:
            f.write(text)
        return run_junctiond(["-c", path]), path, text.splitlines()

    def line(self, lines, attr):
        return 1 + [i for i, x in enumerate(lines) if x.strip().startswith(attr + ":")][0]

    def test_mechanism_not_offered(self):
        p, path, lines = self.run_conf({"saslMechanisms": "PLAIN GSSAPI",
                                        "authenticatePeer": "yes"})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("%s:%d: listener: SASL mechanism 'GSSAPI' is not available"
                      % (path, self.line(lines, "saslMechanisms")), p.stderr)

    def test_external_without_tls(self):
        p, path, lines = self.run_conf({"saslMechanisms": "EXTERNAL", "authenticatePeer": "yes"})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("%s:%d: listener: saslMechanisms 'EXTERNAL' needs an sslProfile"
                      % (path, self.line(lines, "saslMechanisms")), p.stderr)

    def test_authenticate_peer_with_only_anonymous(self):
        p, path, lines = self.run_conf({"saslMechanisms": "ANONYMOUS",
                                        "authenticatePeer": "yes"})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("%s:%d: listener: authenticatePeer needs a SASL mechanism that "
                      "authenticates" % (path, self.line(lines, "authenticatePeer")), p.stderr)

    def test_mechanism_outside_the_cyrus_mech_list(self):
        d = os.path.join(self.workdir, "cyrus")
        os.makedirs(d)
        with open(os.path.join(d, "narrow.conf"), "w") as f:
            f.write("mech_list: PLAIN\n")
        p, path, lines = self.run_conf(
            {"saslMechanisms": "SCRAM-SHA-256", "authenticatePeer": "yes"},
            router={"mode": "standalone", "saslConfigDir": d, "saslConfigName": "narrow"})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, r"SASL mechanism 'SCRAM-SHA-256' is not available "
                                   r"\(Cyrus SASL offers: [A-Z ]*PLAIN")

    def test_unset_connector_password_variable(self):
        os.environ.pop("JN_TEST_NOPE", None)
        text = (conf_section("router", self.router_section())
                + conf_section("connector", {"host": "127.0.0.1", "port": free_port(),
                                             "saslUsername": "alice",
                                             "saslPassword": "env:JN_TEST_NOPE"}))
        path = os.path.join(self.workdir, "c.conf")
        with open(path, "w") as f:
            f.write(text)
        p = run_junctiond(["-c", path])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, re.escape(path) + r":\d+: connector attribute "
                                   r"'saslPassword': environment variable 'JN_TEST_NOPE'")


if __name__ == "__main__":
    unittest.main()
