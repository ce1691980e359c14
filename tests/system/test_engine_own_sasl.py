#!/usr/bin/python3
"""SASL on Junction's own AMQP engine (docs/engine.md, stage 4): listeners
with authenticatePeer and Cyrus's mechanisms (PLAIN, SCRAM-SHA-256,
DIGEST-MD5) and no TLS run on the own engine when JUNCTION_ENGINE=own, the
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

JN_BUILD_DIR names the build directory (set by ctest).
"""
import os
import sys
import threading
import unittest

from proton import ConnectionException, Message, Timeout
from proton.utils import BlockingConnection, SendException

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Router, conf_section, free_port  # noqa: E402
from test_router_sasl import (REALM, TIMEOUT, USERS, SaslTestCase, attempt,  # noqa: E402
                              connect)

OWN_LINE = "Connection runs on Junction's own AMQP engine"
# at accept, for each connection whose SASL runs on the own engine with Cyrus
OWN_SASL_LINE = "SASL on Junction's own AMQP engine"
ALICE = "alice@" + REALM


class OwnSaslTest(SaslTestCase):

    def own_router(self, listener, router=None, extra=""):
        """A router on the own engine (JUNCTION_ENGINE=own) with Cyrus
        configured; its main listener as given, and a plain anonymous
        listener for management (self.mgmt_url)."""
        port = free_port()
        self.mgmt_url = "amqp://127.0.0.1:%d" % port
        text = conf_section("listener", {"host": "127.0.0.1", "port": port,
                                         "saslMechanisms": "ANONYMOUS",
                                         "authenticatePeer": "no"}) + extra
        r = Router(self.workdir, name="R%d" % len(self.routers),
                   router=router or self.router_section(), listener=listener, extra=text)
        env = dict(os.environ)
        env["JUNCTION_ENGINE"] = "own"
        r.env = env
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

if __name__ == "__main__":
    unittest.main()
