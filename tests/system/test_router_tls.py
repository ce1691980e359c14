#!/usr/bin/python3
"""TLS (issue 15): sslProfile on listeners and connectors.

Certificates are made with `openssl` when the tests start (tls_certs.py).
Each test starts its own junctiond on 127.0.0.1 and python3-qpid-proton
clients (proton's own TLS on the client side). Every refused connection must
be refused with one log line naming the peer and the reason, and must leave
the router and its other connections working.
"""
import os
import re
import socket
import sys
import time
import unittest

from proton import ConnectionException, Message, SSLDomain, Timeout
from proton.reactor import AtMostOnce
from proton.utils import BlockingConnection

import json
import subprocess

from harness import BENCH, SLOW, RouterTestCase, conf_section, free_port, run_junctiond
from tls_certs import PASSWORD, shared_certs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
from junction.management import Client, ConnectOptions  # noqa: E402

TIMEOUT = 10 * SLOW


def client_domain(certs, cert=None, key=None, ca="ca", verify=True):
    d = SSLDomain(SSLDomain.MODE_CLIENT)
    d.set_trusted_ca_db(certs[ca])
    if cert:
        d.set_credentials(certs[cert], certs[key], None)
    d.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME if verify
                              else SSLDomain.VERIFY_PEER)
    return d


def exchange(url, domain=None, mechs="ANONYMOUS", count=3, address="q", during=None, **kw):
    """Connect (TLS when domain is given), send count messages to address and
    receive them back; call during() while still connected. Raises on any
    failure."""
    c = BlockingConnection(url, timeout=TIMEOUT, ssl_domain=domain, allowed_mechs=mechs,
                           sasl_enabled=True, virtual_host="localhost", **kw)
    try:
        r = c.create_receiver(address)
        s = c.create_sender(address, options=AtMostOnce())
        got = []
        for i in range(count):
            s.send(Message(body="m%d" % i))
            got.append(r.receive(TIMEOUT).body)
        if got != ["m%d" % i for i in range(count)]:
            raise AssertionError("received %r" % got)
        return during() if during else None
    finally:
        c.close()


def refused(url, domain=None, mechs="ANONYMOUS", **kw):
    """The connection attempt's error text, or None if it worked."""
    try:
        c = BlockingConnection(url, timeout=TIMEOUT, ssl_domain=domain, allowed_mechs=mechs,
                               sasl_enabled=True, virtual_host="localhost", **kw)
        c.create_receiver("probe")
        c.close()
        return None
    except (ConnectionException, Timeout, OSError) as e:
        return str(e) or e.__class__.__name__


class TlsTestCase(RouterTestCase):
    def setUp(self):
        super().setUp()
        self.certs = shared_certs()

    def profile(self, name="srv", cert="server", key="server_key", ca="ca", **extra):
        attrs = {"name": name, "certFile": self.certs[cert] if cert else None,
                 "privateKeyFile": self.certs[key] if key else None,
                 "caCertFile": self.certs[ca] if ca else None}
        attrs.update(extra)
        return conf_section("sslProfile", attrs)

    def tls_router(self, listener=None, profile=None, extra=""):
        """A router whose main listener ({port}) has TLS as listener says,
        plus a plain listener for management (self.plain_url)."""
        plain = free_port()
        self.plain_url = "amqp://127.0.0.1:%d" % plain
        lst = {"sslProfile": "srv", "requireSsl": "yes"}
        lst.update(listener or {})
        text = (profile or self.profile()) + conf_section(
            "listener", {"host": "127.0.0.1", "port": plain, "saslMechanisms": "ANONYMOUS",
                         "authenticatePeer": "no"}) + extra
        r = self.start_router(listener=lst, extra=text)
        r.tls_url = "amqps://127.0.0.1:%d" % r.port
        r.amqp_url = "amqp://127.0.0.1:%d" % r.port
        return r

    def connections(self):
        with Client(ConnectOptions(url=self.plain_url)) as c:
            return c.query_dicts("connection")

    def wait_log(self, router, pattern, what):
        self.wait_for(what, lambda: re.search(pattern, router.log()) is not None)


class TlsListenerTest(TlsTestCase):

    def test_tls_client_exchanges_messages_and_management_shows_tls(self):
        r = self.tls_router()
        d = client_domain(self.certs)

        def during():
            mine = [c for c in self.connections() if c.get("isEncrypted")]
            self.assertEqual(len(mine), 1, "connections: %r\n%s" % (self.connections(),
                                                                    self.logs()))
            c = mine[0]
            self.assertTrue(c["ssl"])
            self.assertRegex(c["sslProto"] or "", r"^TLSv1\.[23]$")
            self.assertTrue(c["sslCipher"])
            self.assertGreaterEqual(c["sslSsf"], 128)
            self.assertEqual(c["sasl"], "ANONYMOUS")
            self.assertFalse(c["isAuthenticated"])
            plain = [c for c in self.connections() if not c.get("isEncrypted")]
            self.assertTrue(plain and plain[0]["sslProto"] is None)
        exchange(r.tls_url, d, during=during)
        self.assertRegex(r.log(), r"Connection Opened: dir=in host=127\.0\.0\.1:\d+ "
                                  r"encrypted=TLSv1\.[23]")

    def test_encrypted_key_with_each_password_form(self):
        pwfile = os.path.join(self.workdir, "pw.txt")
        with open(pwfile, "w") as f:
            f.write(PASSWORD + "\nsecond line\n")
        os.environ["JN_TEST_TLS_PW"] = PASSWORD
        for form in ("pass:" + PASSWORD, "env:JN_TEST_TLS_PW", "env: JN_TEST_TLS_PW",
                     "file:" + pwfile, "literal:" + PASSWORD, PASSWORD):
            with self.subTest(form):
                r = self.tls_router(profile=self.profile(key="server_key_enc", password=form))
                exchange(r.tls_url, client_domain(self.certs), count=1)

    def test_junction_bench_over_tls(self):
        # the benchmark's own TLS (tests/bench/tls-single-hop) against a TLS listener
        r = self.tls_router()
        url = "amqps://127.0.0.1:%d" % r.port
        p = subprocess.run([BENCH, "--send-url", url, "--recv-url", url, "--tls-ca",
                            self.certs["ca"], "-c", "5000", "-b", "4096", "--json"],
                           capture_output=True, text=True, timeout=60 * SLOW)
        self.assertEqual(p.returncode, 0, p.stderr + self.logs())
        fig = json.loads(p.stdout)
        self.assertEqual(fig["received"], 5000, fig)
        self.assertEqual(fig["lost"], 0, fig)

    def test_plain_client_refused_by_require_ssl_others_unaffected(self):
        r = self.tls_router()
        d = client_domain(self.certs)
        c = BlockingConnection(r.tls_url, timeout=TIMEOUT, ssl_domain=d,
                               allowed_mechs="ANONYMOUS", sasl_enabled=True,
                               virtual_host="localhost")
        try:
            err = refused(r.amqp_url)
            self.assertIsNotNone(err, "a plain client was served by a requireSsl listener")
            self.wait_log(r, r"TLS handshake from 127\.0\.0\.1:\d+ .*failed: the client speaks "
                             r"plain AMQP and the listener requires TLS", "the refusal's log line")
            # the TLS connection made before still works
            rcv = c.create_receiver("still")
            snd = c.create_sender("still", options=AtMostOnce())
            snd.send(Message(body="after"))
            self.assertEqual(rcv.receive(TIMEOUT).body, "after")
        finally:
            c.close()
        exchange(r.tls_url, d, count=1)

    def test_require_ssl_no_serves_tls_and_plain_on_one_port(self):
        r = self.tls_router(listener={"requireSsl": "no"})
        exchange(r.tls_url, client_domain(self.certs), count=2)
        exchange(r.amqp_url, None, count=2)
        self.assertRegex(r.log(), r"encrypted=TLSv1")
        self.assertRegex(r.log(), r"encrypted=no")

    def test_client_certificate_required_and_verified(self):
        # saslMechanisms naming EXTERNAL asks for a client certificate (1.19);
        # the client then authenticates with ANONYMOUS here.
        r = self.tls_router(listener={"saslMechanisms": "EXTERNAL ANONYMOUS",
                                      "authenticatePeer": "no"})
        with self.subTest("no certificate"):
            self.assertIsNotNone(refused(r.tls_url, client_domain(self.certs)))
            self.wait_log(r, r"TLS handshake from 127\.0\.0\.1:\d+ .*failed: .*certificate",
                          "the log line for a missing client certificate")
        with self.subTest("untrusted certificate"):
            self.assertIsNotNone(refused(r.tls_url, client_domain(self.certs, "rogue",
                                                                  "rogue_key")))
            self.wait_log(r, r"failed: certificate verify failed: unable to get local issuer",
                          "the log line for an untrusted client certificate")
        with self.subTest("expired certificate"):
            self.assertIsNotNone(refused(r.tls_url, client_domain(self.certs, "expired",
                                                                  "expired_key")))
            self.wait_log(r, r"failed: certificate verify failed: certificate has expired",
                          "the log line for an expired client certificate")
        with self.subTest("trusted certificate"):
            exchange(r.tls_url, client_domain(self.certs, "client", "client_key"), count=2)

    def test_client_distrusting_the_server_is_refused_cleanly(self):
        r = self.tls_router()
        self.assertIsNotNone(refused(r.tls_url, client_domain(self.certs, ca="other_ca")))
        self.wait_log(r, r"TLS handshake from 127\.0\.0\.1:\d+ .*failed",
                      "the log line of the failed handshake")
        exchange(r.tls_url, client_domain(self.certs), count=1)

    def test_handshake_timeout_closes_a_silent_or_stuck_peer(self):
        r = self.tls_router(listener={"initialHandshakeTimeoutSeconds": 1})
        t0 = time.monotonic()
        with socket.create_connection(("127.0.0.1", r.port), timeout=TIMEOUT) as s:
            s.sendall(b"\x16\x03\x01\x00\x05")  # the start of a ClientHello, then nothing
            s.settimeout(TIMEOUT)
            while s.recv(4096):
                pass  # closed by the router
        self.assertLess(time.monotonic() - t0, 1 + 5 * SLOW)
        self.wait_log(r, r"Connection from 127\.0\.0\.1:\d+ \(to [^)]*\) closed: no AMQP open "
                         r"within 1 s \(initialHandshakeTimeoutSeconds\)",
                      "the handshake timeout's log line")
        exchange(r.tls_url, client_domain(self.certs), count=1)


class TlsConnectorTest(TlsTestCase):

    def start_mesh(self, connector_extra, b_listener=None, b_profile=None):
        bl = {"role": "inter-router"}
        bl.update(b_listener or {})
        b = self.tls_router(listener=bl, profile=b_profile or self.profile(
            cert="router_b", key="router_b_key"))
        b_plain = self.plain_url
        # router B must be interior for an inter-router listener
        a_port = free_port()
        conn = {"host": "127.0.0.1", "port": b.port, "role": "inter-router",
                "sslProfile": "cli"}
        conn.update(connector_extra)
        a_text = (conf_section("router", {"mode": "interior", "id": "A"})
                  + conf_section("listener", {"host": "127.0.0.1", "port": "{port}",
                                              "saslMechanisms": "ANONYMOUS",
                                              "authenticatePeer": "no"})
                  + self.profile("cli", cert="router_a", key="router_a_key")
                  + conf_section("connector", conn)
                  + conf_section("log", {"module": "DEFAULT", "enable": "info+"}))
        a = self.start_router(config=a_text)
        self.plain_url = b_plain
        return a, b

    def tls_router(self, listener=None, profile=None, extra=""):
        plain = free_port()
        self.plain_url = "amqp://127.0.0.1:%d" % plain
        lst = {"host": "127.0.0.1", "port": "{port}", "sslProfile": "srv", "requireSsl": "yes",
               "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"}
        lst.update(listener or {})
        text = (conf_section("router", {"mode": "interior", "id": "B"})
                + (profile or self.profile()) + conf_section("listener", lst)
                + conf_section("listener", {"host": "127.0.0.1", "port": plain,
                                            "saslMechanisms": "ANONYMOUS",
                                            "authenticatePeer": "no"})
                + conf_section("log", {"module": "DEFAULT", "enable": "info+"}) + extra)
        r = self.start_router(config=text)
        r.tls_url = "amqps://127.0.0.1:%d" % r.port
        return r

    def test_inter_router_connection_over_tls_routes_messages(self):
        a, b = self.start_mesh({"verifyHostname": "yes"})
        self.wait_log(b, r"Connection Opened: dir=in .*encrypted=TLSv1", "B's TLS inter-router "
                                                                          "connection")
        self.wait_log(a, r"Connection Opened: dir=out .*encrypted=TLSv1", "A's TLS inter-router "
                                                                           "connection")
        mesh = [c for c in self.connections() if c["role"] == "inter-router"]
        self.assertEqual(len(mesh), 1, mesh)
        self.assertTrue(mesh[0]["isEncrypted"])
        # a message from a client of A to a client of B crosses the TLS link
        b_url = self.plain_url
        a_url = "amqp://127.0.0.1:%d" % a.port
        rc = BlockingConnection(b_url, timeout=TIMEOUT, allowed_mechs="ANONYMOUS",
                                sasl_enabled=True)
        try:
            rcv = rc.create_receiver("across")
            sc = BlockingConnection(a_url, timeout=TIMEOUT, allowed_mechs="ANONYMOUS",
                                    sasl_enabled=True)
            try:
                snd = sc.create_sender("across", options=AtMostOnce())
                # credit comes once B's consumer is known at A (the mesh's
                # mobile address over the TLS connection)
                sc.wait(lambda: snd.link.credit > 0, timeout=TIMEOUT,
                        msg="credit for a sender at A")
                snd.send(Message(body="over tls"))
                got = None
                deadline = time.monotonic() + TIMEOUT
                while got is None and time.monotonic() < deadline:
                    try:  # two blocking connections: drive the sender's too
                        sc.wait(lambda: False, timeout=0.1)
                    except Timeout:
                        pass
                    try:
                        got = rcv.receive(0.1).body
                    except Timeout:
                        pass
                self.assertEqual(got, "over tls", self.logs())
            finally:
                sc.close()
        finally:
            rc.close()

    def test_connector_refuses_a_server_certificate_for_another_host(self):
        a, b = self.start_mesh({"verifyHostname": "yes"},
                               b_profile=self.profile(cert="wrong_name", key="wrong_name_key"))
        self.wait_log(a, r"TLS handshake to 127\.0\.0\.1:\d+ .*failed: certificate verify failed",
                      "A's log line for the wrong server name")
        self.assertNotRegex(a.log(), r"Connection Opened: dir=out")

    def test_connector_without_hostname_check_accepts_a_trusted_certificate(self):
        a, b = self.start_mesh({"verifyHostname": "no"},
                               b_profile=self.profile(cert="wrong_name", key="wrong_name_key"))
        self.wait_log(a, r"Connection Opened: dir=out .*encrypted=TLSv1", "A's TLS connection")

    def test_connector_refuses_an_untrusted_server(self):
        a, b = self.start_mesh({"verifyHostname": "yes"},
                               b_profile=self.profile(cert="rogue", key="rogue_key"))
        self.wait_log(a, r"TLS handshake to 127\.0\.0\.1:\d+ .*failed: certificate verify "
                         r"failed: unable to get local issuer", "A's log line")


class TlsConfigTest(TlsTestCase):
    """Bad sslProfile input stops start-up with FILE:LINE and the reason."""

    def run_conf(self, profile_attrs, listener_extra=None):
        c = self.certs
        attrs = {"name": "bad", "certFile": c["server"], "privateKeyFile": c["server_key"],
                 "caCertFile": c["ca"]}
        attrs.update(profile_attrs)
        lst = {"host": "127.0.0.1", "port": free_port(), "sslProfile": "bad"}
        lst.update(listener_extra or {})
        text = (conf_section("router", {"mode": "standalone", "id": "X"})
                + conf_section("sslProfile", attrs) + conf_section("listener", lst))
        path = os.path.join(self.workdir, "bad.conf")
        with open(path, "w") as f:
            f.write(text)
        lines = text.splitlines()
        p = run_junctiond(["-c", path])
        return p, path, lines

    def line_of(self, lines, attr):
        for i, line in enumerate(lines):
            if line.strip().startswith(attr + ":"):
                return i + 1
        raise AssertionError("%s not in the file" % attr)

    def check(self, attrs, attr, reason):
        p, path, lines = self.run_conf(attrs)
        self.assertEqual(p.returncode, 1, p.stderr)
        want = "%s:%d: sslProfile 'bad': attribute '%s': " % (path, self.line_of(lines, attr),
                                                              attr)
        self.assertIn(want, p.stderr)
        self.assertRegex(p.stderr, reason)

    def test_missing_certificate_file(self):
        self.check({"certFile": "/nonexistent/cert.pem"}, "certFile",
                   r"cannot read '/nonexistent/cert\.pem': No such file or directory")

    def test_missing_key_file(self):
        self.check({"privateKeyFile": "/nonexistent/key.pem"}, "privateKeyFile",
                   r"cannot read '/nonexistent/key\.pem'")

    def test_missing_ca_file(self):
        self.check({"caCertFile": "/nonexistent/ca.pem"}, "caCertFile", r"cannot read")

    def test_wrong_password(self):
        self.check({"privateKeyFile": self.certs["server_key_enc"], "password": "pass:wrong"},
                   "password", r"cannot unlock the private key .*wrong password")

    def test_encrypted_key_without_password(self):
        self.check({"privateKeyFile": self.certs["server_key_enc"]}, "privateKeyFile",
                   r"no password is set")

    def test_unset_password_variable(self):
        os.environ.pop("JN_TEST_UNSET_PW", None)
        self.check({"privateKeyFile": self.certs["server_key_enc"],
                    "password": "env:JN_TEST_UNSET_PW"},
                   "password", r"environment variable 'JN_TEST_UNSET_PW' is not set")

    def test_key_not_matching_certificate(self):
        self.check({"privateKeyFile": self.certs["client_key"]}, "privateKeyFile",
                   r"does not match the certificate")

    def test_bad_cipher_list(self):
        self.check({"ciphers": "NO-SUCH-CIPHER"}, "ciphers", r"no cipher matches")

    def test_bad_protocol(self):
        self.check({"protocols": "TLSv1.2 SSLv9"}, "protocols", r"unknown protocol 'SSLv9'")

    def test_listener_naming_an_undefined_profile(self):
        p, path, lines = self.run_conf({}, {"sslProfile": "nosuch"})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, re.escape(path) + r":\d+: listener: sslProfile 'nosuch' is "
                                   r"not defined")

    def test_ssl_protocol_names_accepted_but_allow_no_handshake(self):
        # 1.19 accepts a profile naming SSLv23; no SSL protocol is spoken,
        # so every handshake with it fails and the router goes on.
        r = self.tls_router(profile=self.profile(protocols="SSLv23"))
        with self.assertRaises(Exception):
            exchange(r.tls_url, client_domain(self.certs), count=1)
        exchange(self.plain_url, count=1)

    def test_tls11_only_when_the_profile_names_it(self):
        # A profile naming TLSv1.1 speaks it (1.19 does); one naming no
        # protocol starts at TLSv1.2 (docs/compat.md).
        import cproton

        def tls11(url):
            d = client_domain(self.certs)
            cproton.pn_ssl_domain_set_protocols(d._domain, "TLSv1.1")
            try:
                exchange(url, d, count=1)
                return True
            except Exception:
                return False
        r = self.tls_router(profile=self.profile(protocols="TLSv1.1 TLSv1.2"))
        self.assertTrue(tls11(r.tls_url))
        r = self.tls_router()
        self.assertFalse(tls11(r.tls_url))

    def test_protocols_and_ciphers_are_applied(self):
        r = self.tls_router(profile=self.profile(protocols="TLSv1.2",
                                                 ciphers="ECDHE-ECDSA-AES128-GCM-SHA256"))

        def during():
            c = [c for c in self.connections() if c.get("isEncrypted")][0]
            self.assertEqual(c["sslProto"], "TLSv1.2")
            self.assertEqual(c["sslCipher"], "ECDHE-ECDSA-AES128-GCM-SHA256")
        exchange(r.tls_url, client_domain(self.certs), count=1, during=during)


def served_subject(port):
    """The subject of the certificate a TLS listener presents now (openssl
    s_client, a fresh connection)."""
    hello = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port,
                            "-servername", "localhost"], input="", capture_output=True,
                           text=True, timeout=TIMEOUT)
    cert = re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", hello.stdout,
                     re.S)
    if not cert:
        raise AssertionError("no certificate from port %d: %s" % (port, hello.stderr))
    subj = subprocess.run(["openssl", "x509", "-noout", "-subject"], input=cert.group(0),
                          capture_output=True, text=True, timeout=TIMEOUT)
    return subj.stdout.strip()


class TlsManagementTest(TlsTestCase):
    """sslProfile through management: CREATE, a listener that names it, and
    certificate rotation by UPDATE (1.19 cannot): new connections get the new
    certificate, open ones keep running; a bad UPDATE keeps the old one."""

    def test_rotation_by_update(self):
        r = self.tls_router()
        d = client_domain(self.certs)
        self.assertIn("CN = localhost", served_subject(r.port))
        held = BlockingConnection(r.tls_url, timeout=TIMEOUT, ssl_domain=d,
                                  allowed_mechs="ANONYMOUS", sasl_enabled=True,
                                  virtual_host="localhost")
        self.addCleanup(held.close)
        rx = held.create_receiver("rot.q")
        with Client(ConnectOptions(url=self.plain_url)) as c:
            row = c.update("sslProfile", "srv", None,
                           {"certFile": self.certs["router_a"],
                            "privateKeyFile": self.certs["router_a_key"]})
            self.assertEqual(row["certFile"], self.certs["router_a"])
            # a key that does not match: refused, the profile stays
            with self.assertRaises(Exception) as bad:
                c.update("sslProfile", "srv", None, {"privateKeyFile": self.certs["server_key"]})
            self.assertIn("privateKeyFile", str(bad.exception))
        self.assertIn("CN = router-a", served_subject(r.port))
        # the connection opened before the rotation still carries messages
        snd = held.create_sender("rot.q", options=AtMostOnce())
        snd.send(Message(body="after"))
        self.assertEqual(rx.receive(TIMEOUT).body, "after")
        exchange(r.tls_url, d)  # and new ones work with the new certificate

    def test_profile_and_listener_created_by_management(self):
        r = self.start_router()
        port = free_port()
        with Client(ConnectOptions(url=r.url)) as c:
            c.create("sslProfile", "p2", {"certFile": self.certs["server"],
                                          "privateKeyFile": self.certs["server_key"],
                                          "caCertFile": self.certs["ca"]})
            c.create("listener", "tls2", {"host": "127.0.0.1", "port": str(port),
                                          "sslProfile": "p2", "requireSsl": True,
                                          "saslMechanisms": "ANONYMOUS"})
            with self.assertRaises(Exception) as bad:
                c.create("listener", "tls3", {"host": "127.0.0.1", "port": str(free_port()),
                                              "sslProfile": "nope"})
            self.assertIn("sslProfile 'nope' is not defined", str(bad.exception))
        exchange("amqps://127.0.0.1:%d" % port, client_domain(self.certs))


if __name__ == "__main__":
    unittest.main()
