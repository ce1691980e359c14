#!/usr/bin/python3
"""System tests of AMQP over WebSocket on an http listener (issue 18;
docs/design.md "HTTP", docs/protocol.md "HTTP"):

- rhea over ws:// and wss:// (tests/interop/ws.js, the `ws` package):
  messages from rhea through the router to a proton receiver on the TCP
  listener, and from a proton sender back to rhea, bodies checked;
- a WebSocket connection is an ordinary connection for management;
- bad input, each logged while the router keeps routing (a witness flow
  runs throughout): plain HTTP requests and upgrades without the `amqp`
  subprotocol, headers too large, a slowloris client (cut after the
  header timeout), a text message, and a WebSocket client that stops
  reading (the router's memory stays bounded and the write-stall timeout
  cuts it);
- `websockets: no` refuses upgrades;
- a wss:// connection is a TLS connection to the core (isEncrypted,
  sslProto, sslCipher, sslSsf; requireEncryption met, plain ws:// on that
  listener kept out), and with saslMechanisms EXTERNAL its client
  certificate is the user (uidFormat and uidNameMappingFile applied); no
  certificate, or one from an untrusted CA, is refused;
- an https listener follows 1.19's rules: requireSsl no serves plain HTTP
  too, authenticatePeer asks for a client certificate whatever
  saslMechanisms says.

Every process is started here on 127.0.0.1, bounded in time, and stopped by
PID.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import unittest
import urllib.error
import urllib.request

from proton import Message
from proton.utils import BlockingConnection

from harness import SANITIZER, SLOW, SOURCE_DIR, STOP_TIMEOUT, RouterTestCase, conf_section
from test_http import Manager, get
from tls_certs import shared_certs

INTEROP = os.path.join(SOURCE_DIR, "tests", "interop")
TIMEOUT = 20 * SLOW
COUNT = 200


def node():
    return shutil.which("node") or shutil.which("nodejs")


def raw(port, data, wait=3.0):
    """Send data on a fresh TCP connection; return what comes back until the
    peer closes or wait seconds pass."""
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    out = b""
    try:
        s.sendall(data)
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except OSError:
        pass
    finally:
        s.close()
    return out


UPGRADE = (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
           b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
           b"Sec-WebSocket-Version: 13\r\n")


class WebSocketCase(RouterTestCase):
    """The routers, rhea clients and checks the WebSocket tests share."""

    def setUp(self):
        super().setUp()
        if not node():
            self.fail("node (Node.js) is not installed; ./dev installs it")
        for pkg in ("rhea", "ws"):
            if not os.path.isdir(os.path.join(INTEROP, "node_modules", pkg)):
                self.fail("%s is not installed in %s/node_modules: run `npm ci` there "
                          "(./dev test does)" % (pkg, INTEROP))

    def ws_router(self, tls=False, router=None, **http_attrs):
        attrs = {"name": "web", "host": "127.0.0.1", "port": 0, "http": "yes"}
        extra = ""
        if tls:
            self.certs = shared_certs()
            extra += conf_section("sslProfile", {"name": "srv", "certFile": self.certs["server"],
                                                 "privateKeyFile": self.certs["server_key"],
                                                 "caCertFile": self.certs["ca"]})
            attrs["sslProfile"] = "srv"
        attrs.update(http_attrs)
        r = self.start_router(extra=extra + conf_section("listener", attrs), router=router or {})
        m = Manager(r.url)
        self.addCleanup(m.close)
        code, desc, body = m.call({"operation": "READ", "type": "listener", "name": "web"})
        self.assertEqual(code, 200, desc)
        r.http_port = int(body["port"])
        r.ws_url = "%s://127.0.0.1:%d" % ("wss" if tls else "ws", r.http_port)
        return r, m

    def rhea(self, r, mode, address, count=COUNT, **opts):
        args = [node(), os.path.join(INTEROP, "ws.js"), "--url", r.ws_url, "--mode", mode,
                "--address", address, "--count", str(count), "--timeout", str(int(TIMEOUT))]
        if r.ws_url.startswith("wss"):
            args += ["--ca", self.certs["ca"]]
        for k, v in opts.items():
            args += ["--" + k, str(v)]
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, text=True)

        def reap():
            if p.poll() is None:
                p.kill()
            p.wait(10)
            p.stdout.close()
            p.stderr.close()
        self.addCleanup(reap)
        return p

    def result(self, p):
        out, err = p.communicate(timeout=TIMEOUT + 10)
        lines = out.strip().splitlines()
        self.assertTrue(lines, "no result from ws.js: %s\n%s" % (err, self.logs()))
        res = json.loads(lines[-1])
        self.assertIsNone(res["error"], "%s\n%s\n%s" % (res, err, self.logs()))
        return res

    def wait_link(self, m, address, direction="out"):
        """Until the router shows a link on address (the rhea peer attached)."""
        def attached():
            code, desc, body = m.call({"operation": "QUERY", "type": "org.amqp.management",
                                       "entityType": "router.link"},
                                      {"attributeNames": ["owningAddr", "linkDir"]})
            return any(a and a.endswith(address) and d == direction
                       for a, d in body["results"])
        self.wait_for("a link on " + address, attached)

    def round_trip(self, r, m, size=0):
        """rhea (WebSocket) -> router -> proton (TCP), and proton -> rhea."""
        # to proton: the receiver first, then rhea sends
        rx = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(rx.close)
        receiver = rx.create_receiver("ws.to-proton", credit=COUNT)
        tx = self.rhea(r, "send", "ws.to-proton", size=size)
        seen = set()
        for _ in range(COUNT):
            msg = receiver.receive(timeout=TIMEOUT)
            receiver.accept()
            seen.add(msg.properties["seq"])
            if size:
                self.assertEqual(len(msg.body), size)
        self.assertEqual(seen, set(range(COUNT)))
        rx.close()  # the last dispositions go out
        res = self.result(tx)
        self.assertEqual(res["accepted"], COUNT)
        # to rhea: rhea attaches, then proton sends
        rxw = self.rhea(r, "recv", "ws.to-rhea", size=size)
        self.wait_link(m, "ws.to-rhea")
        sc = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(sc.close)
        sender = sc.create_sender("ws.to-rhea")
        body = (b"x" * size) if size else None
        for i in range(COUNT):
            sender.send(Message(body=body if size else "message %d" % i,
                                properties={"seq": i}))
        res = self.result(rxw)
        self.assertEqual(res["received"], COUNT)

    def ws_connections(self, m):
        """The connection entities of rhea's WebSocket clients."""
        code, desc, body = m.call({"operation": "QUERY", "type": "org.amqp.management",
                                   "entityType": "connection"},
                                  {"attributeNames": ["container", "isEncrypted", "sslProto",
                                                      "sslCipher", "sslSsf", "user", "sasl",
                                                      "isAuthenticated"]})
        self.assertEqual(code, 200, desc)
        rows = [dict(zip(body["attributeNames"], row)) for row in body["results"]]
        return [c for c in rows if (c["container"] or "").startswith("rhea-ws-")]


class WebSocketTest(WebSocketCase):

    def test_rhea_over_ws_to_proton_and_back(self):
        r, m = self.ws_router()
        self.round_trip(r, m)
        self.round_trip(r, m, size=100000)  # messages larger than one WebSocket write
        # while a WebSocket client is connected it is an ordinary connection
        hold = self.rhea(r, "recv", "ws.hold", count=1)
        self.wait_link(m, "ws.hold")
        code, desc, body = m.call({"operation": "QUERY", "type": "org.amqp.management",
                                   "entityType": "connection"},
                                  {"attributeNames": ["container", "role", "dir", "host"]})
        rows = [dict(zip(body["attributeNames"], row)) for row in body["results"]]
        ws = [c for c in rows if c["container"].startswith("rhea-ws-recv")]
        self.assertEqual(len(ws), 1, rows)
        self.assertEqual((ws[0]["role"], ws[0]["dir"]), ("normal", "in"))
        self.assertTrue(ws[0]["host"].startswith("127.0.0.1:"), ws[0])
        hold.kill()
        self.assertIn("WebSocket connection from 127.0.0.1:", r.log())

    def test_rhea_over_wss_to_proton_and_back(self):
        r, m = self.ws_router(tls=True)
        self.round_trip(r, m)
        self.assertIn("(TLS)", r.log())
        # requireSsl: no (the default): plain HTTP is served on the TLS port
        # too (1.19); the router goes on
        self.assertIn(b"HTTP/1.1 200", raw(r.http_port, b"GET /healthz HTTP/1.1\r\n\r\n", 1))
        self.round_trip(r, m)

    def test_https_listener_rules_are_1_19s(self):
        """An http listener with an sslProfile: requireSsl no serves plain
        HTTP beside HTTPS; requireSsl yes serves HTTPS only; authenticatePeer
        yes asks every HTTPS client for a certificate that verifies, even
        with saslMechanisms ANONYMOUS (an HTTP request has no SASL: TLS is
        what authenticates), and such a listener starts. Several HTTPS
        listeners on one router stop without leaving memory behind."""
        import ssl
        certs = self.certs = shared_certs()
        profile = conf_section("sslProfile", {"name": "srv", "certFile": certs["server"],
                                              "privateKeyFile": certs["server_key"],
                                              "caCertFile": certs["ca"]})
        kinds = {"open": {"requireSsl": "no"}, "tls": {"requireSsl": "yes"},
                 "cert": {"requireSsl": "yes", "authenticatePeer": "yes",
                          "saslMechanisms": "ANONYMOUS"}}

        # all three on one router: each HTTPS listener has its own
        # libwebsockets context, and an ASan build's LeakSanitizer fails the
        # router's exit if stopping them leaves any TLS context behind
        r = self.start_router(extra=profile + "".join(
            conf_section("listener", dict(kinds[name], name=name, host="127.0.0.1", port=0,
                                          http="yes", sslProfile="srv"))
            for name in kinds))
        m = Manager(r.url)
        self.addCleanup(m.close)

        def listener(name):
            code, desc, body = m.call({"operation": "READ", "type": "listener", "name": name})
            self.assertEqual(code, 200, desc)
            return int(body["port"])

        def https(port, client_cert=False):
            ctx = ssl.create_default_context(cafile=certs["ca"])
            ctx.check_hostname = False
            if client_cert:
                ctx.load_cert_chain(certs["client"], certs["client_key"])
            with urllib.request.urlopen("https://127.0.0.1:%d/healthz" % port,
                                        context=ctx, timeout=TIMEOUT) as resp:
                return resp.status

        plain = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        port = listener("open")
        self.assertEqual(https(port), 200)
        self.assertTrue(raw(port, plain, 1).startswith(b"HTTP/1.1 200"))
        port = listener("tls")
        self.assertEqual(https(port), 200)
        self.assertNotIn(b"HTTP/1.1 200", raw(port, plain, 1))
        port = listener("cert")
        self.assertNotIn(b"HTTP/1.1 200", raw(port, plain, 1))
        with self.assertRaises((urllib.error.URLError, ssl.SSLError, OSError)):
            https(port)
        self.assertEqual(https(port, client_cert=True), 200)

    def test_bad_input_is_logged_and_routing_goes_on(self):
        r, m = self.ws_router()
        w = self.start_witness(r)
        port = r.http_port
        # a plain request for the AMQP path: an ordinary HTTP answer (the console)
        self.assertTrue(raw(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1).startswith(
            b"HTTP/1.1 200"))
        self.assertTrue(raw(port, b"GET /nothing-here HTTP/1.1\r\nHost: x\r\n\r\n", 1)
                        .startswith(b"HTTP/1.1 404"))
        # upgrades without the amqp subprotocol: 400, logged
        for proto in (b"", b"Sec-WebSocket-Protocol: mqtt\r\n"):
            self.assertTrue(raw(port, UPGRADE + proto + b"\r\n").startswith(b"HTTP/1.0 400"))
        self.wait_for("the refused upgrades logged",
                      lambda: r.log().count("needs the subprotocol amqp") == 2)
        # headers too large: closed, logged
        self.assertEqual(raw(port, b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n"),
                         b"")
        self.wait_for("the oversized request logged",
                      lambda: "closed without a complete request" in r.log())
        # a text message on an AMQP WebSocket: closed, logged
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(UPGRADE + b"Sec-WebSocket-Protocol: amqp\r\n\r\n")
        self.assertIn(b"101", s.recv(4096))
        s.sendall(bytes([0x81, 0x84, 1, 2, 3, 4]) + bytes(b ^ k for b, k in
                                                          zip(b"AMQP", [1, 2, 3, 4])))
        self.wait_for("the text message logged", lambda: "a text message" in r.log())
        s.close()
        # AMQP garbage in binary messages: the frame screen refuses it
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(UPGRADE + b"Sec-WebSocket-Protocol: amqp\r\n\r\n")
        self.assertIn(b"101", s.recv(4096))
        s.sendall(bytes([0x82, 0x88, 0, 0, 0, 0]) + b"GARBAGE!")
        self.wait_for("the garbage refused",
                      lambda: "framing-error" in r.log() or "protocol header" in r.log())
        s.close()
        # slowloris: part of a request, then nothing: cut after the header timeout
        t0 = time.monotonic()
        self.assertEqual(raw(port, b"GET /healthz HTTP/1.1\r\nHo", wait=40 * SLOW), b"")
        self.assertLess(time.monotonic() - t0, 30 * SLOW)
        self.wait_for("the slowloris client logged",
                      lambda: r.log().count("closed without a complete request") >= 2)
        self.finish_witness(w)
        self.assertEqual(get("http://127.0.0.1:%d/healthz" % port), (200, "OK\n"))

    def test_client_that_stops_reading_is_bounded_and_cut(self):
        """A rhea client over WebSocket with a large credit stops reading its
        socket; another WebSocket client offers 2000 64 KiB messages to it.
        The router holds a bounded backlog (its resident memory grows by far
        less than what was offered), keeps routing other traffic, and cuts
        the stalled connection after router.writeStallTimeoutSeconds."""
        self.stalled_reader(tls=False)

    def test_wss_client_that_stops_reading_is_bounded_and_cut(self):
        """The same over wss://. Debian's libwebsockets cannot pause a TLS
        WebSocket peer (with its receive flow off it buffered the sender's
        input without end, in a loop that kept its thread from ever
        stopping: +331 MB, and SIGTERM never ended the router), so the
        router never pauses one: the sender's AMQP session window bounds
        it. Memory stays bounded and the router stops on SIGTERM."""
        r = self.stalled_reader(tls=True)
        r.signal(signal.SIGTERM)
        try:
            r.proc.wait(STOP_TIMEOUT * SLOW)
        except subprocess.TimeoutExpired:
            self.fail("junctiond did not stop within %.0f s of SIGTERM\n%s"
                      % (STOP_TIMEOUT * SLOW, self.logs()))
        self.assertEqual(r.proc.returncode, 0, self.logs())

    def stalled_reader(self, tls):
        r, m = self.ws_router(tls=tls, router={"writeStallTimeoutSeconds": 4})
        w = self.start_witness(r)
        stalled = self.rhea(r, "recv", "ws.stall", count=100000, stall=1, credit=5000)
        self.wait_link(m, "ws.stall")
        rss0 = r.status_kb("VmRSS")
        # 2000 x 64 KiB offered (unsettled) by another WebSocket client
        offer = self.rhea(r, "send", "ws.stall", count=2000, size=65536)
        time.sleep(5 * SLOW)
        self.assertEqual(stalled.stdout.readline().strip(), "stalled")
        grown_kb = r.status_kb("VmRSS") - rss0
        # (a sanitizer's quarantine keeps freed memory resident: more room there)
        limit_kb = (32 if not SANITIZER else 96) * 1024
        self.assertLess(grown_kb, limit_kb, "resident memory grew by %d KiB" % grown_kb)
        self.wait_for("the stalled WebSocket connection cut",
                      lambda: "write stalled" in r.log(), timeout=30 * SLOW)
        offer.kill()
        self.finish_witness(w)
        return r

    def test_websockets_no_refuses_upgrades(self):
        r, m = self.ws_router(websockets="no")
        self.assertTrue(raw(r.http_port, UPGRADE + b"Sec-WebSocket-Protocol: amqp\r\n\r\n")
                        .startswith(b"HTTP/1.0 400"))
        self.wait_for("the refusal logged", lambda: "websockets: no" in r.log())
        self.assertEqual(get("http://127.0.0.1:%d/healthz" % r.http_port), (200, "OK\n"))

    def test_wss_is_a_tls_connection_to_the_core(self):
        r, m = self.ws_router(tls=True, requireEncryption="yes")
        hold = self.rhea(r, "recv", "wss.hold", count=1)
        self.wait_link(m, "wss.hold")
        rows = self.ws_connections(m)
        self.assertEqual(len(rows), 1, rows)
        c = rows[0]
        self.assertIs(c["isEncrypted"], True, c)
        self.assertRegex(c["sslProto"] or "", r"^TLSv1\.[23]$", c)
        self.assertTrue(c["sslCipher"], c)
        self.assertGreaterEqual(c["sslSsf"], 128, c)
        self.assertIn("encrypted=TLSv1.", r.log())
        hold.kill()
        # requireEncryption met by wss://: a round trip; plain ws:// on the
        # same listener does not get in, and the router goes on
        self.round_trip(r, m)
        wss_url = r.ws_url
        r.ws_url = "ws://127.0.0.1:%d" % r.http_port
        out, err = self.rhea(r, "send", "ws.plain", count=1).communicate(timeout=TIMEOUT + 10)
        self.assertIsNotNone(json.loads(out.strip().splitlines()[-1])["error"], out)
        self.assertEqual(self.ws_connections(m), [])
        r.ws_url = wss_url
        self.round_trip(r, m)

    def test_wss_client_certificate_is_sasl_external_identity(self):
        from test_router_sasl import sasl_dir
        certs = shared_certs()
        # the certificate's uid by uidFormat (o, n), then the map
        mapping = os.path.join(self.workdir, "uids.json")
        with open(mapping, "w") as f:
            f.write('{"Junction;client": "alice"}\n')
        extra = conf_section("sslProfile", {"name": "ext", "certFile": certs["server"],
                                            "privateKeyFile": certs["server_key"],
                                            "caCertFile": certs["ca"], "uidFormat": "on",
                                            "uidNameMappingFile": mapping})
        attrs = {"name": "web", "host": "127.0.0.1", "port": 0, "http": "yes",
                 "sslProfile": "ext", "saslMechanisms": "EXTERNAL", "authenticatePeer": "yes",
                 "requireSsl": "yes"}
        r = self.start_router(extra=extra + conf_section("listener", attrs),
                              router={"saslConfigDir": sasl_dir()})
        m = Manager(r.url)
        self.addCleanup(m.close)
        code, desc, body = m.call({"operation": "READ", "type": "listener", "name": "web"})
        self.assertEqual(code, 200, desc)
        r.http_port = int(body["port"])
        r.ws_url = "wss://127.0.0.1:%d" % r.http_port
        self.certs = certs
        cert = {"cert": certs["client"], "key": certs["client_key"]}
        hold = self.rhea(r, "recv", "ext.hold", count=1, external=1, **cert)
        self.wait_link(m, "ext.hold")
        rows = self.ws_connections(m)
        self.assertEqual(len(rows), 1, rows)
        self.assertEqual((rows[0]["user"], rows[0]["sasl"], rows[0]["isAuthenticated"],
                          rows[0]["isEncrypted"]), ("alice", "EXTERNAL", True, True), rows[0])
        hold.kill()
        # messages flow with that identity: rhea (EXTERNAL) -> proton (TCP)
        rx = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(rx.close)
        receiver = rx.create_receiver("ext.to-proton", credit=10)
        tx = self.rhea(r, "send", "ext.to-proton", count=10, external=1, **cert)
        for _ in range(10):
            receiver.receive(timeout=TIMEOUT)
            receiver.accept()
        rx.close()  # the last dispositions go out
        self.assertEqual(self.result(tx)["accepted"], 10)
        # no certificate, or one from a CA the profile does not trust: refused
        # in the TLS handshake; the router goes on
        for opts in ({}, {"cert": certs["rogue"], "key": certs["rogue_key"]}):
            out, err = self.rhea(r, "send", "ext.x", count=1, **opts).communicate(
                timeout=TIMEOUT + 10)
            self.assertIsNotNone(json.loads(out.strip().splitlines()[-1])["error"], (opts, out))
        self.assertEqual(self.ws_connections(m), [])
        rx = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(rx.close)
        receiver = rx.create_receiver("ext.to-proton", credit=1)
        tx = self.rhea(r, "send", "ext.to-proton", count=1, external=1, **cert)
        receiver.receive(timeout=TIMEOUT)
        receiver.accept()
        rx.close()
        self.assertEqual(self.result(tx)["accepted"], 1)


if __name__ == "__main__":
    unittest.main()
