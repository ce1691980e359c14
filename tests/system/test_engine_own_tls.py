#!/usr/bin/python3
"""TLS under Junction's own AMQP engine (docs/engine.md, stage 2b(ii) round
2, "TLS").

A TLS listener whose SASL is ANONYMOUS alone runs its connections on the own
engine: OpenSSL decrypts straight into the engine's buffers and encrypts
its frames. Each test runs real clients (python3-qpid-proton over TLS,
junction-bench over TLS) and asserts from the router's log that their
connections ran on the own engine. Covered: messages both ways, one of many
frames; management shows the connection's TLS; the protocol trace reads
the plaintext each way; a listener with requireSsl no
serves TLS and plain clients on one port; a plain client at a requireSsl
listener and a client that distrusts the router's certificate are refused
with the log lines of proton's path, and the next client is served; the
benchmark over TLS loses nothing. (A TLS listener that leaves the
mechanisms to Cyrus runs on the own engine too: test_engine_own_sasl.py.)

JN_BUILD_DIR names the build directory (set by ctest).
"""
import json
import os
import subprocess
import sys
import unittest

from proton import Message
from proton.reactor import AtMostOnce
from proton.utils import BlockingConnection

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BENCH, SLOW, Recv, Send, Traffic, conf_section,  # noqa: E402
                     seq_message)
from test_router_tls import TIMEOUT, TlsTestCase, client_domain, exchange, refused  # noqa: E402

OWN_LINE = "Connection runs on Junction's own AMQP engine"


class OwnTlsTest(TlsTestCase):

    def own_router(self, **listener):
        lst = {"saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"}
        lst.update(listener)
        return self.tls_router(listener=lst)

    def own_lines(self, r):
        return r.log().count(OWN_LINE)

    def test_tls_client_on_the_own_engine_and_management_shows_tls(self):
        r = self.own_router()
        d = client_domain(self.certs)

        def during():
            mine = [c for c in self.connections() if c.get("isEncrypted")]
            self.assertEqual(len(mine), 1, "connections: %r\n%s" % (self.connections(),
                                                                    self.logs()))
            self.assertRegex(mine[0]["sslProto"] or "", r"^TLSv1\.[23]$")
            self.assertTrue(mine[0]["sslCipher"])
            self.assertGreaterEqual(mine[0]["sslSsf"], 128)
        exchange(r.tls_url, d, count=5, during=during)
        self.assertRegex(r.log(), r"Connection Opened: dir=in host=127\.0\.0\.1:\d+ "
                                  r"encrypted=TLSv1\.[23]")
        # the management listener is plain and on the own engine too
        self.assertGreaterEqual(self.own_lines(r), 2, self.logs())

    def test_a_message_of_many_frames_both_ways(self):
        r = self.own_router(maxFrameSize=4096)
        c = BlockingConnection(r.tls_url, timeout=TIMEOUT, ssl_domain=client_domain(self.certs),
                               allowed_mechs="ANONYMOUS", sasl_enabled=True,
                               virtual_host="localhost")
        try:
            rcv = c.create_receiver("big", credit=10)
            snd = c.create_sender("big", options=AtMostOnce())
            body = "".join(chr(65 + i % 26) for i in range(300 * 1024))
            for i in range(3):
                snd.send(Message(body=body, properties={"i": i}))
            for i in range(3):
                m = rcv.receive(TIMEOUT)
                self.assertEqual(m.properties["i"], i)
                self.assertEqual(m.body, body)
        finally:
            c.close()
        self.assertGreaterEqual(self.own_lines(r), 1, self.logs())

    def test_require_ssl_no_serves_tls_and_plain_on_one_port(self):
        r = self.own_router(requireSsl="no")
        exchange(r.tls_url, client_domain(self.certs), count=2)
        exchange(r.amqp_url, None, count=2)
        self.assertRegex(r.log(), r"encrypted=TLSv1")
        self.assertRegex(r.log(), r"encrypted=no")
        self.assertGreaterEqual(self.own_lines(r), 2, self.logs())

    def test_refused_clients_then_a_good_one(self):
        r = self.own_router()
        with self.subTest("plain client at a requireSsl listener"):
            self.assertIsNotNone(refused(r.amqp_url))
            self.wait_log(r, r"TLS handshake from 127\.0\.0\.1:\d+ .*failed: the client speaks "
                             r"plain AMQP and the listener requires TLS", "the refusal's log line")
        with self.subTest("client distrusting the router"):
            self.assertIsNotNone(refused(r.tls_url, client_domain(self.certs, ca="other_ca")))
            self.wait_log(r, r"\[C2\] TLS handshake from 127\.0\.0\.1:\d+ .*failed",
                          "the failed handshake's log line")
        exchange(r.tls_url, client_domain(self.certs), count=1)
        self.assertGreaterEqual(self.own_lines(r), 1, self.logs())

    def test_junction_bench_over_tls_loses_nothing(self):
        r = self.own_router()
        url = "amqps://127.0.0.1:%d" % r.port
        p = subprocess.run([BENCH, "--send-url", url, "--recv-url", url, "--tls-ca",
                            self.certs["ca"], "-c", "5000", "-b", "4096", "--json"],
                           capture_output=True, text=True, timeout=60 * SLOW)
        self.assertEqual(p.returncode, 0, p.stderr + self.logs())
        fig = json.loads(p.stdout)
        self.assertEqual(fig["received"], 5000, fig)
        self.assertEqual(fig["lost"], 0, fig)
        self.assertGreaterEqual(self.own_lines(r), 2, self.logs())

    def test_protocol_trace_of_a_tls_connection(self):
        # the trace reads the plaintext each way (what SSL_read gave the
        # engine, what the engine gave SSL_write), as for a plain connection
        r = self.tls_router(listener={"saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"},
                            extra=conf_section("log", {"module": "PROTOCOL", "enable": "trace+"}))
        exchange(r.tls_url, client_domain(self.certs), count=1, address="own.traced")

        def traced():
            return "\n".join(line.split(":FRAME: ", 1)[1] for line in r.log().splitlines()
                             if " PROTOCOL (trace) " in line and ":FRAME: " in line)
        self.wait_for("our close traced", lambda: "0 -> @close(24) []" in traced())
        joined = traced()
        for want in ("  <- SASL", "  -> SASL", "0 -> @open(16) [container-id=",
                     "target=@target(41) [address=\"own.traced\"",
                     "0 <- @transfer(20) [handle=0x", "0 -> @transfer(20) [handle=0x",
                     "0 <- @close(24) []"):
            self.assertIn(want, joined)
        self.assertGreaterEqual(self.own_lines(r), 1, self.logs())

class OwnTlsConnectorTest(TlsTestCase):
    """Router A's connectors with an sslProfile to router B's TLS listener,
    both routers on the own engine."""

    def own_out(self, r):
        """Ids of r's outgoing connections opened over TLS, and of those on
        the own engine."""
        opened, own = set(), set()
        for line in r.log().splitlines():
            if "Connection Opened: dir=out" in line and "encrypted=TLSv1" in line:
                opened.add(line.split("[C", 1)[1].split("]", 1)[0])
            if OWN_LINE in line:
                own.add(line.split("[C", 1)[1].split("]", 1)[0])
        return opened, own

    def router_a(self, b_port, connectors):
        text = self.profile("cli", cert="client", key="client_key")
        for name, attrs in connectors.items():
            c = {"name": name, "host": "127.0.0.1", "port": b_port, "role": "route-container",
                 "sslProfile": "cli"}
            c.update(attrs)
            text += conf_section("connector", c)
        return self.start_router(extra=text)

    def test_tls_connector_with_hostname_check_carries_auto_links(self):
        b = self.tls_router(listener={"saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"},
                            profile=self.profile(cert="router_b", key="router_b_key"))
        b_plain = self.plain_url
        links = conf_section("address", {"prefix": "wp", "waypoint": "yes"})
        for d in ("in", "out"):
            links += conf_section("autoLink", {"name": "wp-" + d, "address": "wp",
                                               "direction": d, "connection": "toB",
                                               "externalAddress": "q." + d})
        a = self.start_router(extra=self.profile("cli", cert="client", key="client_key")
                              + conf_section("connector", {
                                  "name": "toB", "host": "127.0.0.1", "port": b.port,
                                  "role": "route-container", "sslProfile": "cli",
                                  "verifyHostname": "yes"}) + links)
        self.wait_log(a, r"Auto-link wp-out active", "A's auto-link out")
        self.wait_log(a, r"Auto-link wp-in active", "A's auto-link in")
        opened, own = self.own_out(a)
        self.assertTrue(opened and opened <= own, self.logs())
        self.assertRegex(b.log(), r"Connection Opened: dir=in .*encrypted=TLSv1")
        n = 50
        recv = Recv("q.out", credit=20, url=b_plain)
        self.run_scenario(Traffic(a, [recv], [Send("wp", [seq_message(i) for i in range(n)])],
                                  expect=n))
        self.assertEqual(sorted(m.properties["seq"] for m in recv.messages), list(range(n)))
        recv = Recv("wp", credit=20)
        self.run_scenario(Traffic(a, [recv], [Send("q.in", [seq_message(i) for i in range(n)],
                                                   url=b_plain)], expect=n))
        self.assertEqual(sorted(m.properties["seq"] for m in recv.messages), list(range(n)))
        self.assertNotIn("failed:", a.log(), self.logs())

    def test_hostname_check_refuses_another_name_and_off_accepts_it(self):
        b = self.tls_router(listener={"saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"},
                            profile=self.profile(cert="wrong_name", key="wrong_name_key"))
        a = self.router_a(b.port, {"checked": {"verifyHostname": "yes"},
                                   "unchecked": {"verifyHostname": "no"}})
        self.wait_log(a, r"TLS handshake to 127\.0\.0\.1:\d+ \(checked\) failed: certificate "
                         r"verify failed", "the checked connector's refusal")
        self.wait_log(a, r"Connection Opened: dir=out .*encrypted=TLSv1",
                      "the unchecked connector's connection")
        opened, own = self.own_out(a)
        self.assertEqual(len(opened), 1, self.logs())
        self.assertTrue(opened <= own, self.logs())
        self.assertNotRegex(a.log(), r"\(unchecked\) failed", self.logs())


if __name__ == "__main__":
    unittest.main()
