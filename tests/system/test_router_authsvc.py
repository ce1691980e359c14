#!/usr/bin/python3
"""authServicePlugin (issue 15): a listener's SASL relayed to an auth
service, here auth_service.py (a raw-socket AMQP SASL server built from the
spec, PLAIN against a table). python3-qpid-proton clients: good password,
wrong password, unknown user, the service down, slow (other connections go
on meanwhile), cutting the connection, never answering, no identity,
permissions it sends (refused: not enforced), TLS to the service; rhea
with PLAIN; a raw client for the challenge path and for a client that
leaves mid-handshake; management CREATE and a reload.
"""
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import unittest

from proton import ConnectionException, SSLDomain, Timeout
from proton.utils import BlockingConnection

from auth_service import SASL_HEADER, AuthService, encode, frame
from harness import SLOW, SOURCE_DIR, RouterTestCase, conf_section, free_port, run_junctiond
from tls_certs import shared_certs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
from junction.management import Client, ConnectOptions, StatusError  # noqa: E402

TIMEOUT = 10 * SLOW
USERS = {"alice": "alice-pw", "bob": "bob-pw"}
REALM = "my-realm"


def connect(url, user, password, mechs="PLAIN"):
    return BlockingConnection(url, timeout=TIMEOUT, allowed_mechs=mechs, sasl_enabled=True,
                              allow_insecure_mechs=True, user=user, password=password)


def attempt(url, user, password, mechs="PLAIN"):
    """None when a connection opens and a link attaches, else the error."""
    try:
        c = connect(url, user, password, mechs)
        c.create_receiver("probe")
        c.close()
        return None
    except (ConnectionException, Timeout, OSError) as e:
        return str(e) or type(e).__name__


def read_frame(s):
    """One frame from socket s: (descriptor, fields)."""
    import struct
    from proton import Data

    def need(n):
        out = b""
        while len(out) < n:
            part = s.recv(n - len(out))
            if not part:
                raise EOFError("end of stream")
            out += part
        return out
    size, doff, _t, _c = struct.unpack(">IBBH", need(8))
    body = need(size - 8)[doff * 4 - 8:]
    d = Data()
    d.decode(body)
    d.rewind()
    d.next()
    o = d.get_object()
    return int(o.descriptor), list(o.value)


class AuthServiceTestCase(RouterTestCase):

    def service(self, users=USERS, tls=None):
        svc = AuthService(users, tls)
        self.addCleanup(svc.stop)
        return svc

    def relay_router(self, port, ssl_profile=None, extra="", listener=None, plugin=None):
        """A router whose main listener relays SASL to the service on port;
        a plain anonymous listener for management (self.mgmt_url)."""
        mport = free_port()
        self.mgmt_url = "amqp://127.0.0.1:%d" % mport
        p = {"name": "auth", "host": "127.0.0.1", "port": port, "realm": REALM,
             "sslProfile": ssl_profile}
        p.update(plugin or {})
        lst = {"saslPlugin": "auth", "authenticatePeer": "yes", "saslMechanisms": None}
        lst.update(listener or {})
        text = (extra + conf_section("authServicePlugin", p)
                + conf_section("listener", {"host": "127.0.0.1", "port": mport,
                                            "saslMechanisms": "ANONYMOUS",
                                            "authenticatePeer": "no"}))
        return self.start_router(listener=lst, extra=text)

    def connections(self):
        with Client(ConnectOptions(url=self.mgmt_url)) as c:
            return c.query_dicts("connection")

    def wait_log(self, router, pattern, what):
        self.wait_for(what, lambda: re.search(pattern, router.log()) is not None)


class AuthServiceRelayTest(AuthServiceTestCase):

    def test_good_password_user_is_the_service_identity(self):
        svc = self.service()
        r = self.relay_router(svc.port)
        c = connect(r.url, "alice", USERS["alice"])
        try:
            c.create_receiver("q")
            mine = [x for x in self.connections() if x["user"] == "alice"]
            self.assertEqual(len(mine), 1, self.connections())
            self.assertTrue(mine[0]["isAuthenticated"])
            self.assertEqual(mine[0]["sasl"], "PLAIN")
        finally:
            c.close()
        s = [x for x in svc.sessions if x["user"] == "alice"][0]
        self.assertEqual(s["mech"], "PLAIN")
        self.assertEqual(s["hostname"], REALM)  # realm: the sasl-init's hostname
        self.assertEqual(s["open_hostname"], "127.0.0.1")  # the service's host
        self.wait_for("the service's connection closed", lambda: s["closed"])
        self.assertRegex(r.log(), r"Connection Opened: .*auth=PLAIN user=alice ")

    def test_wrong_password_and_unknown_user_refused_with_a_log_line(self):
        svc = self.service()
        r = self.relay_router(svc.port)
        self.assertIsNotNone(attempt(r.url, "alice", "wrong"))
        self.wait_log(r, r"SASL PLAIN authentication from 127\.0\.0\.1:\d+ \(to 127\.0\.0\.1:\d+\) "
                         r"failed: the service refused the credentials", "the refusal's line")
        self.assertIsNotNone(attempt(r.url, "mallory", "x"))
        self.assertEqual(len(re.findall(r"the service refused the credentials", r.log())), 2)
        self.assertIsNone(attempt(r.url, "bob", USERS["bob"]))  # others unaffected

    def test_service_down_refused_with_a_log_line(self):
        r = self.relay_router(free_port())  # nothing listens there
        self.assertIsNotNone(attempt(r.url, "alice", USERS["alice"]))
        self.wait_log(r, r"SASL \(none chosen\) authentication from 127\.0\.0\.1:\d+ .*failed: "
                         r"the connection to the service ended: .*refused",
                      "the unreachable service's line")
        self.assertTrue(r.alive())

    def test_slow_service_holds_only_its_own_client(self):
        svc = self.service()
        r = self.relay_router(svc.port)
        result = {}
        t = threading.Thread(target=lambda: result.update(slow=attempt(r.url, "slow", "x")))
        t.start()
        try:
            self.wait_for("the slow exchange to reach the service",
                          lambda: any(s["user"] == "slow" for s in svc.sessions))
            # the service holds "slow"'s answer; others are served meanwhile
            self.assertIsNone(attempt(r.url, "alice", USERS["alice"]))
            self.assertNotIn("slow", result)
            self.assertTrue(t.is_alive())
        finally:
            svc.release.set()
            t.join(TIMEOUT)
        self.assertIsNone(result["slow"])

    def test_service_cuts_mid_handshake(self):
        svc = self.service()
        r = self.relay_router(svc.port)
        self.assertIsNotNone(attempt(r.url, "cut", "x"))
        self.wait_log(r, r"SASL PLAIN authentication from 127\.0\.0\.1:\d+ .*failed: the "
                         r"connection to the service ended", "the cut's line")
        self.assertIsNone(attempt(r.url, "alice", USERS["alice"]))

    def test_service_that_never_answers_meets_the_handshake_timeout(self):
        svc = self.service()
        r = self.relay_router(svc.port, listener={"initialHandshakeTimeoutSeconds": 1})
        self.assertIsNotNone(attempt(r.url, "mute", "x"))
        self.wait_log(r, r"from 127\.0\.0\.1:\d+ .*(no AMQP open within 1 s|did not answer "
                         r"within 1 s)", "the timeout's line")
        mute = [s for s in svc.sessions if s["user"] == "mute"]
        self.wait_for("the service's connection cut", lambda: mute and mute[0]["closed"])

    def test_no_identity_and_permissions_are_refused(self):
        svc = self.service()
        r = self.relay_router(svc.port)
        self.assertIsNotNone(attempt(r.url, "noid", "x"))
        self.wait_log(r, r"failed: the service accepted the credentials but reported no usable "
                         r"authenticated-identity", "the missing identity's line")
        self.assertIsNotNone(attempt(r.url, "authz", "x"))
        self.wait_log(r, r"failed: the service sent address-authz permissions",
                      "the permissions' line")

    def test_challenge_relayed_both_ways(self):
        """X-ECHO (the test service's own mechanism) has a challenge and a
        response: a raw client goes through it, right and wrong."""
        svc = self.service()
        r = self.relay_router(svc.port)
        for answer, outcome in ((b"nonce:alice-pw", 0), (b"nonce:wrong", 1)):
            with socket.create_connection(("127.0.0.1", r.port), timeout=TIMEOUT) as s:
                s.sendall(SASL_HEADER)
                self.assertEqual(s.recv(8, socket.MSG_WAITALL), SASL_HEADER)
                code, mechs = read_frame(s)
                self.assertEqual(code, 0x40)
                self.assertIn("X-ECHO", [str(m) for m in mechs[0]])
                s.sendall(frame(encode(0x41, [_sym("X-ECHO"), b"alice"]), True))
                code, challenge = read_frame(s)
                self.assertEqual((code, bytes(challenge[0])), (0x42, b"nonce"))
                s.sendall(frame(encode(0x43, [answer]), True))
                code, out = read_frame(s)
                self.assertEqual((code, int(out[0])), (0x44, outcome))

    def test_client_that_leaves_mid_handshake(self):
        svc = self.service()
        r = self.relay_router(svc.port)
        with socket.create_connection(("127.0.0.1", r.port), timeout=TIMEOUT) as s:
            s.sendall(SASL_HEADER)
            s.recv(8, socket.MSG_WAITALL)
            read_frame(s)
            s.sendall(frame(encode(0x41, [_sym("PLAIN"), b"\0mute\0x"]), True))
            self.wait_for("the exchange to reach the service",
                          lambda: any(x["user"] == "mute" for x in svc.sessions))
        self.wait_log(r, r"SASL authentication from 127\.0\.0\.1:\d+ .*abandoned: the client "
                         r"left before the auth service", "the abandoned exchange's line")
        mute = [x for x in svc.sessions if x["user"] == "mute"][0]
        self.wait_for("the service's connection cut", lambda: mute["closed"])
        self.assertIsNone(attempt(r.url, "alice", USERS["alice"]))

    def test_router_stops_cleanly_mid_exchange(self):
        svc = self.service()
        r = self.relay_router(svc.port)
        t = threading.Thread(target=lambda: attempt(r.url, "mute", "x"))
        t.start()
        self.wait_for("the exchange to reach the service",
                      lambda: any(x["user"] == "mute" for x in svc.sessions))
        r.signal(signal.SIGTERM)
        self.wait_for("junctiond to exit", lambda: not r.alive())
        self.assertEqual(r.proc.returncode, 0)  # (under ASan: nothing leaked)
        self.assertRegex(r.log(), r"SASL PLAIN authentication from 127\.0\.0\.1:\d+ .*failed: "
                                  r"the router is shutting down")
        # both connections ended by themselves, not at the stop's deadline
        self.assertNotIn("did not close within", r.log())
        t.join(TIMEOUT)
        mute = [x for x in svc.sessions if x["user"] == "mute"][0]
        self.wait_for("the service's connection closed", lambda: mute["closed"])

    def test_deprecated_names(self):
        """1.19's deprecated authService address and the old name
        saslInitHostname of realm (authSslProfile: AuthServiceTlsTest)."""
        svc = self.service()
        r = self.relay_router(svc.port, plugin={"host": None, "port": None, "realm": None,
                                                "authService": "127.0.0.1:%d" % svc.port,
                                                "saslInitHostname": "old-realm"})
        self.assertIsNone(attempt(r.url, "bob", USERS["bob"]))
        self.assertEqual([(s["user"], s["hostname"]) for s in svc.sessions],
                         [("bob", "old-realm")])


class AuthServiceRheaTest(AuthServiceTestCase):
    """rhea (tests/interop, installed by ./dev test) with SASL PLAIN."""

    def rhea(self, port, user, password):
        exe = shutil.which("node") or shutil.which("nodejs")
        script = os.path.join(SOURCE_DIR, "tests", "interop", "sasl_plain.js")
        self.assertTrue(exe and os.path.isdir(os.path.join(SOURCE_DIR, "tests", "interop",
                                                           "node_modules", "rhea")),
                        "node and rhea are needed: run `npm ci` in tests/interop")
        p = subprocess.run([exe, script, "--port", str(port), "--user", user, "--password",
                            password, "--timeout", str(int(TIMEOUT))],
                           capture_output=True, text=True, timeout=TIMEOUT + 10)
        return json.loads(p.stdout.strip().splitlines()[-1])

    def test_rhea_plain_good_and_wrong_password(self):
        svc = self.service()
        r = self.relay_router(svc.port)
        self.assertTrue(self.rhea(r.port, "alice", USERS["alice"])["opened"])
        self.assertFalse(self.rhea(r.port, "alice", "wrong")["opened"])
        self.assertEqual([(s["user"], s["outcome"]) for s in svc.sessions],
                         [("alice", 0), ("alice", 1)])


class AuthServiceConfigTest(AuthServiceTestCase):

    def test_management_create_read_and_bad_references(self):
        svc = self.service()
        r = self.start_router()
        port = free_port()
        with Client(ConnectOptions(url=r.url)) as c:
            c.create("authServicePlugin", "auth2", {"host": "127.0.0.1", "port": str(svc.port),
                                                    "realm": "r2"})
            c.create("listener", "relay", {"host": "127.0.0.1", "port": str(port),
                                           "saslPlugin": "auth2", "authenticatePeer": True})
            row = c.read("authServicePlugin", "auth2")
            self.assertEqual((row["host"], row["realm"]), ("127.0.0.1", "r2"))
            with self.assertRaises(StatusError) as e:
                c.create("listener", "bad", {"host": "127.0.0.1", "port": str(free_port()),
                                             "saslPlugin": "nope"})
            self.assertIn("saslPlugin", str(e.exception))
            with self.assertRaises(StatusError) as e:
                c.create("authServicePlugin", "nohost", {"realm": "x"})
            self.assertIn("host", str(e.exception))
        self.assertIsNone(attempt("amqp://127.0.0.1:%d" % port, "alice", USERS["alice"]))
        self.assertEqual([(s["user"], s["hostname"]) for s in svc.sessions], [("alice", "r2")])

    def test_unresolvable_service_host_stops_start_up(self):
        path = os.path.join(self.workdir, "bad.conf")
        with open(path, "w") as f:
            f.write(conf_section("router", {"mode": "standalone"})
                    + conf_section("authServicePlugin", {"name": "a", "port": 5672,
                                                         "host": "no-such-host.invalid"})
                    + conf_section("listener", {"host": "127.0.0.1", "port": free_port(),
                                                "saslPlugin": "a"}))
        p = run_junctiond(["-c", path])
        self.assertNotEqual(p.returncode, 0)
        self.assertRegex(p.stderr, re.escape(path) + r":\d+: listener .*the auth service "
                                   r"address no-such-host\.invalid:5672 cannot be resolved")

    def test_reload_points_the_listener_at_the_changed_plugin(self):
        old, new = self.service(), self.service()
        r = self.relay_router(old.port)
        self.assertIsNone(attempt(r.url, "alice", USERS["alice"]))
        with open(r.conf_path) as f:
            text = f.read()
        with open(r.conf_path, "w") as f:
            f.write(text.replace("port: %d\n" % old.port, "port: %d\n" % new.port))
        r.signal(signal.SIGHUP)
        self.wait_log(r, r"Reloaded .*: [1-9]\d* changes? applied, 0 failed", "the reload")
        self.assertIsNone(attempt(r.url, "bob", USERS["bob"]))
        self.assertEqual([s["user"] for s in old.sessions], ["alice"])
        self.assertEqual([s["user"] for s in new.sessions], ["bob"])


class AuthServiceTlsTest(AuthServiceTestCase):

    def tls_service(self):
        c = shared_certs()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(c["server"], c["server_key"])
        return self.service(tls=ctx), c

    def test_tls_to_the_service(self):
        svc, c = self.tls_service()
        prof = conf_section("sslProfile", {"name": "to-auth", "caCertFile": c["ca"]})
        # authSslProfile: 1.19's old name of sslProfile
        r = self.relay_router(svc.port, extra=prof, plugin={"authSslProfile": "to-auth"})
        self.assertIsNone(attempt(r.url, "alice", USERS["alice"]))
        self.assertIsNotNone(attempt(r.url, "alice", "wrong"))
        self.assertEqual([s["user"] for s in svc.sessions], ["alice", "alice"])

    def test_tls_profile_deleted_meanwhile(self):
        """The plugin's sslProfile deleted through management: the next
        client is refused with a log line (no connection to the service is
        attempted without the TLS it was configured with)."""
        svc, c = self.tls_service()
        prof = conf_section("sslProfile", {"name": "to-auth", "caCertFile": c["ca"]})
        r = self.relay_router(svc.port, ssl_profile="to-auth", extra=prof)
        with Client(ConnectOptions(url=self.mgmt_url)) as m:
            m.delete("sslProfile", "to-auth")
        self.assertIsNotNone(attempt(r.url, "alice", USERS["alice"]))
        self.wait_log(r, r"failed: cannot reach the service: sslProfile 'to-auth' is not "
                         r"configured", "the missing profile's line")
        self.assertEqual(svc.sessions, [])

    def test_untrusted_service_certificate_refused(self):
        svc, c = self.tls_service()
        prof = conf_section("sslProfile", {"name": "to-auth", "caCertFile": c["other_ca"]})
        r = self.relay_router(svc.port, ssl_profile="to-auth", extra=prof)
        self.assertIsNotNone(attempt(r.url, "alice", USERS["alice"]))
        self.wait_log(r, r"failed: the connection to the service ended: .*certificate verify "
                         r"failed", "the untrusted certificate's line")


def _sym(s):
    from proton import symbol
    return symbol(s)


if __name__ == "__main__":
    unittest.main()
