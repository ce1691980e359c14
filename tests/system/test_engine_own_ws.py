#!/usr/bin/python3
"""AMQP over WebSocket on Junction's own AMQP engine (docs/engine.md, stage
2b(ii) round 2, "WebSocket").

A WebSocket connection's octets come from the HTTP thread through the
bridge (router/io/io_bridge.c) instead of a socket, and the own engine
runs them, whatever the http listener's SASL (an auth service's listener
included: a bridged client gets the listener's own mechanisms). Each test
runs rhea over ws:// or wss:// (tests/interop/ws.js) against proton clients
on the TCP listener, both ways, with small messages and ones larger than a
WebSocket write, and asserts from the router's log that every connection
ran on the own engine. Over wss:// management shows the connection's TLS
(terminated by the HTTP thread) and requireEncryption keeps plain ws:// out.

JN_BUILD_DIR names the build directory (set by ctest).
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from auth_service import AuthService  # noqa: E402
from harness import conf_section  # noqa: E402
from test_http import Manager  # noqa: E402
from test_http_websocket import TIMEOUT, WebSocketCase  # noqa: E402

OWN_LINE = "Connection runs on Junction's own AMQP engine"


class OwnWebSocketTest(WebSocketCase):

    def assert_all_own(self, r, at_least):
        log = r.log()
        opened = log.count("Connection Opened: dir=in")
        own = log.count(OWN_LINE)
        self.assertGreaterEqual(own, at_least, self.logs())
        self.assertEqual(own, opened, "a connection ran on proton's engine\n" + self.logs())

    def test_rhea_over_ws_on_the_own_engine(self):
        r, m = self.ws_router()
        self.round_trip(r, m)
        self.round_trip(r, m, size=100000)  # messages larger than one WebSocket write
        self.assertIn("WebSocket connection from 127.0.0.1:", r.log())
        # four rhea connections, four proton ones, and the management client
        self.assert_all_own(r, 9)

    def test_rhea_over_wss_on_the_own_engine_is_a_tls_connection(self):
        r, m = self.ws_router(tls=True, saslMechanisms="ANONYMOUS", requireEncryption="yes")
        hold = self.rhea(r, "recv", "wss.hold", count=1)
        self.wait_link(m, "wss.hold")
        rows = self.ws_connections(m)
        self.assertEqual(len(rows), 1, rows)
        self.assertIs(rows[0]["isEncrypted"], True, rows[0])
        self.assertRegex(rows[0]["sslProto"] or "", r"^TLSv1\.[23]$", rows[0])
        self.assertGreaterEqual(rows[0]["sslSsf"], 128, rows[0])
        hold.kill()
        self.round_trip(r, m)
        self.assertIn("encrypted=TLSv1.", r.log())
        wss_url = r.ws_url
        r.ws_url = "ws://127.0.0.1:%d" % r.http_port
        out, err = self.rhea(r, "send", "ws.plain", count=1).communicate(timeout=TIMEOUT + 10)
        self.assertIsNotNone(json.loads(out.strip().splitlines()[-1])["error"], out)
        r.ws_url = wss_url
        self.assert_all_own(r, 4)

    def test_rhea_over_ws_on_a_listener_with_an_auth_service(self):
        """Stage 5: a WebSocket connection on an http listener that names
        an authServicePlugin ran on proton's path before; now on the own
        engine, with the listener's SASL as proton's path gave it (ANONYMOUS
        here, authenticatePeer no: the relay serves only sockets the
        listener accepts), both ways through the router."""
        svc = AuthService({"alice": "alice-pw"})
        self.addCleanup(svc.stop)
        attrs = {"name": "web", "host": "127.0.0.1", "port": 0, "http": "yes",
                 "saslPlugin": "auth", "authenticatePeer": "no"}
        r = self.start_router(router={}, extra=conf_section(
            "authServicePlugin", {"name": "auth", "host": "127.0.0.1", "port": svc.port,
                                  "realm": "junction"}) + conf_section("listener", attrs))
        m = Manager(r.url)
        self.addCleanup(m.close)
        code, desc, body = m.call({"operation": "READ", "type": "listener", "name": "web"})
        self.assertEqual(code, 200, desc)
        r.http_port = int(body["port"])
        r.ws_url = "ws://127.0.0.1:%d" % r.http_port
        self.round_trip(r, m)
        self.assertIn("WebSocket connection from 127.0.0.1:", r.log())
        self.assertRegex(r.log(), r"\[(C\d+)\] Connection Opened: dir=in .*auth=ANONYMOUS "
                                  r".*container_id=rhea-ws-.*\n.*\[\1\] " + OWN_LINE)
        self.assert_all_own(r, 5)


if __name__ == "__main__":
    unittest.main()
