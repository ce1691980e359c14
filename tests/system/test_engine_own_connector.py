#!/usr/bin/python3
"""Connections the router makes on Junction's own AMQP engine
(docs/engine.md, stage 3a).

Router A has a connector of role normal to router B (another junctiond,
also on the own engine) and two auto-links over it on a waypoint address:
`out` carries what clients send to A into B's address q.out, `in` takes
what arrives at B's q.in to A's receivers. Asserted: A's outgoing
connection ran on the own engine (the "Connection runs on Junction's own
AMQP engine" line after a "dir=out" open), both auto-links go active, and
messages pass both ways, unsettled, each accepted; the protocol trace of
the outgoing connection starts with our own SASL header; a connector whose
peer is not there fails, is logged, and retries; a connector with an
sslProfile fails its TLS handshake with a plain peer, logged as on proton's
path, and retries. (TLS connectors that connect: test_engine_own_tls.py; a
PLAIN or SCRAM connector through the client end: test_engine_own_sasl.py.)

JN_BUILD_DIR names the build directory (set by ctest).
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (SLOW, Recv, Send, Traffic, conf_section, free_port,  # noqa: E402
                     seq_message)
from tls_certs import make_certs  # noqa: E402
from test_router_entities import Manager  # noqa: E402
from test_engine_own import OWN_LINE, OwnEngineCase  # noqa: E402

TIMEOUT = 30 * SLOW


def auto_links(address, connection):
    text = conf_section("address", {"prefix": address, "waypoint": "yes"})
    for d in ("in", "out"):
        text += conf_section("autoLink", {"name": "%s-%s" % (address, d), "address": address,
                                          "direction": d, "connection": connection,
                                          "externalAddress": "q.%s" % d})
    return text


def connector(port, name="toB", extra=None, role="route-container"):
    attrs = {"name": name, "host": "127.0.0.1", "port": port, "role": role}
    attrs.update(extra or {})
    return conf_section("connector", attrs)


class OwnConnectorTest(OwnEngineCase):

    def wait_log(self, r, text):
        self.wait_for("'%s' in %s's log" % (text, r.name), lambda: text in r.log(), TIMEOUT)

    def out_lines(self, r):
        """The ids of A's outgoing connections, and whether each ran on
        the own engine."""
        opened, own = set(), set()
        for line in r.log().splitlines():
            if "Connection Opened: dir=out" in line:
                opened.add(line.split("[C", 1)[1].split("]", 1)[0])
            if OWN_LINE in line:
                own.add(line.split("[C", 1)[1].split("]", 1)[0])
        return opened, own

    def test_auto_links_in_and_out_on_an_own_outgoing_connection(self):
        b = self.start_own()
        a = self.start_own(extra=connector(b.port) + auto_links("wp", "toB"))
        self.wait_log(a, "Auto-link wp-out active")
        self.wait_log(a, "Auto-link wp-in active")
        opened, own = self.out_lines(a)
        self.assertTrue(opened, self.logs())
        self.assertTrue(opened <= own, "outgoing connections not on the own engine\n" +
                        self.logs())
        n = 200
        # out: clients of A send to wp, B's q.out gets each, accepted back
        recv = Recv("q.out", credit=50, url=b.url)
        self.run_scenario(Traffic(a, [recv], [Send("wp", [seq_message(i) for i in range(n)])],
                                  expect=n))
        self.assertEqual(sorted(m.properties["seq"] for m in recv.messages), list(range(n)))
        # in: clients of B send to q.in, A's auto-link takes them to wp's receiver
        recv = Recv("wp", credit=50)
        sender = Send("q.in", [seq_message(i) for i in range(n)], url=b.url)
        self.run_scenario(Traffic(a, [recv], [sender], expect=n))
        self.assertEqual(sorted(m.properties["seq"] for m in recv.messages), list(range(n)))
        self.assertEqual(sorted(str(o[0]) for o in sender.outcomes.values()),
                         ["ACCEPTED"] * n)
        self.assertNotIn("failed:", a.log(), self.logs())

    def test_auto_link_refused_by_the_peer_shows_failed(self):
        # B (own listener) refuses an address with distribution unavailable:
        # the core's refusal reaches A as an attach and a detach, and A's
        # auto-link goes failed (1.19's system_tests_autolinks retry case)
        b = self.start_own(extra=conf_section("address", {"prefix": "q", "name": "no",
                                                          "distribution": "unavailable"}))
        a = self.start_own(extra=connector(b.port) + auto_links("wp", "toB"))
        m = Manager(a.url)
        self.addCleanup(m.close)
        al = "org.apache.qpid.dispatch.router.config.autoLink"
        self.wait_for("both auto-links failed", lambda: sorted(
            r["operStatus"] for r in m.query(al, ["operStatus"])) == ["failed", "failed"],
            TIMEOUT)
        self.assertIn("amqp:not-found", b.log() + a.log(), self.logs())

    def test_protocol_trace_of_an_outgoing_connection_starts_at_our_header(self):
        b = self.start_own()
        trace = conf_section("log", {"module": "PROTOCOL", "enable": "trace+"})
        a = self.start_own(extra=connector(b.port, role="normal") + trace)
        self.wait_log(a, "Connection runs on Junction's own AMQP engine")
        self.wait_log(a, "[C1]:FRAME: 0 <- @open(16)")
        frames = [l.split(":FRAME: ", 1)[1] for l in a.log().splitlines() if "[C1]:FRAME:" in l]
        self.assertEqual(frames[0].strip(), "-> SASL", frames)
        self.assertTrue(any(f.startswith("0 -> @sasl-init(65)") for f in frames), frames)
        self.assertTrue(any(f.strip() == "-> AMQP" for f in frames), frames)
        self.assertTrue(any(f.startswith("0 -> @open(16)") for f in frames), frames)

    def test_connector_without_peer_fails_and_retries(self):
        port = free_port()
        a = self.start_own(extra=connector(port))
        self.wait_log(a, "Connector 127.0.0.1:%d: retrying in" % port)
        self.assertIn("Connection to 127.0.0.1:%d failed" % port, a.log())
        self.assertNotIn("Connection Opened: dir=out", a.log())

    def test_tls_connector_to_a_plain_listener_fails_and_retries(self):
        # the connector's TLS runs on the own engine (io_tls.c's client side):
        # a plain peer fails the handshake with proton's path's line, and the
        # connector retries
        b = self.start_own()
        certs = make_certs(os.path.join(self.workdir, "certs"))
        profile = conf_section("sslProfile", {"name": "p", "caCertFile": certs["ca"]})
        a = self.start_own(extra=profile + connector(b.port, extra={"sslProfile": "p"}))
        self.wait_log(a, "Connector 127.0.0.1:%d: retrying in" % b.port)
        self.assertIn("TLS handshake to 127.0.0.1:%d (toB) failed" % b.port, a.log())
        self.assertNotIn("Connection Opened: dir=out", a.log(), self.logs())


if __name__ == "__main__":
    unittest.main()
