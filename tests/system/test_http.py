#!/usr/bin/python3
"""System tests of the HTTP listeners (`listener { http: yes }`, served by
libwebsockets; docs/design.md "HTTP", docs/protocol.md "HTTP"):

- /metrics: 1.19's exact names by default; with the listener's
  metricsPrometheusNames, Prometheus text that `promtool check metrics`
  accepts, with the figures management shows at the same moment, and
  1.19's names there with ?compat=qdrouterd; a real Prometheus server (Debian's package, a private
  instance started here) scrapes it and its query API returns the figures.
- /healthz: 200 while operational, 503 while the router stops; /healthz/mesh.
- httpRootDir: files under it; /metrics and /healthz stay the router's; it
  makes a listener an http one by itself (1.19).
- http listeners from management: CREATE, the port it got, DELETE.
- AMQP over WebSocket: test_http_websocket.py; here, an http listener made
  by management with websockets (the default) and deleted frees both its
  HTTP port and its AMQP side.

Every process is started here on 127.0.0.1, bounded in time, and stopped
by PID.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import unittest
import urllib.error
import urllib.request

from proton import Message
from proton.utils import BlockingConnection, SyncRequestResponse

from harness import (SLOW, RawClient, Recv, RouterTestCase, Send, Traffic, conf_section,
                     free_port, run_junctiond)

TIMEOUT = 10 * SLOW
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")

GAUGES_119 = ["qdr_connections_total", "qdr_links_total", "qdr_addresses_total",
              "qdr_routers_total", "qdr_link_routes_total", "qdr_auto_links_total",
              "qdr_deliveries_stuck_total", "qdr_links_blocked_total"]
COUNTERS_119 = ["qdr_presettled_deliveries_total", "qdr_dropped_presettled_deliveries_total",
                "qdr_accepted_deliveries_total", "qdr_released_deliveries_total",
                "qdr_rejected_deliveries_total", "qdr_modified_deliveries_total",
                "qdr_deliveries_ingress_total", "qdr_deliveries_egress_total",
                "qdr_deliveries_transit_total", "qdr_deliveries_ingress_route_container_total",
                "qdr_deliveries_egress_route_container_total",
                "qdr_deliveries_delayed_1sec_total", "qdr_deliveries_delayed_10sec_total",
                "qdr_deliveries_redirected_to_fallback_total"]


def get(url, timeout=TIMEOUT):
    """(status, body text) of a GET."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def samples(text):
    """{name: value} of the samples without labels."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*) (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


class Manager:
    def __init__(self, url):
        self.conn = BlockingConnection(url, timeout=TIMEOUT)
        self.client = SyncRequestResponse(self.conn, "$management")

    def call(self, props, body=None):
        reply = self.client.call(Message(body={} if body is None else body, properties=props))
        return (reply.properties["statusCode"], reply.properties["statusDescription"],
                reply.body)

    def router(self):
        code, desc, body = self.call({"operation": "QUERY", "type": "org.amqp.management",
                                      "name": "self", "entityType": "router"},
                                     {"attributeNames": []})
        return dict(zip(body["attributeNames"], body["results"][0]))

    def close(self):
        self.conn.close()


HTTP_LISTENER = {"name": "web", "host": "127.0.0.1", "port": 0, "http": "yes",
                 "websockets": "no"}


class HttpTest(RouterTestCase):

    def start_http_router(self, **http_attrs):
        attrs = dict(HTTP_LISTENER)
        attrs.update(http_attrs)
        r = self.start_router(extra=conf_section("listener", attrs))
        m = Manager(r.url)
        self.addCleanup(m.close)
        code, desc, body = m.call({"operation": "READ", "type": "listener", "name": "web"})
        self.assertEqual(code, 200, desc)
        port = int(body["port"])
        self.assertNotEqual(port, 0)
        return r, m, "http://127.0.0.1:%d" % port

    def traffic(self, r, n=250):
        rx = Recv("http.q")
        tx = Send("http.q", [Message(body=i) for i in range(n)])
        self.run_scenario(Traffic(r, [rx], [tx], expect=n))

    def test_metrics_match_management_and_pass_promtool(self):
        """/metrics after traffic: promtool accepts it, every 1.19 figure is
        there with its type, and the counts equal the router entity's."""
        r, m, base = self.start_http_router(metricsPrometheusNames="yes")
        self.traffic(r)
        # the management request is a delivery itself: read the router
        # entity between two scrapes, with no other traffic; each figure lies
        # between them and they differ by that one request at most
        status, text = get(base + "/metrics")
        self.assertEqual(status, 200)
        router = m.router()
        before, after = samples(text), samples(get(base + "/metrics")[1])
        for metric, attr in (("qdr_deliveries_ingress_total", "deliveriesIngress"),
                             ("qdr_deliveries_egress_total", "deliveriesEgress"),
                             ("qdr_accepted_deliveries_total", "acceptedDeliveries")):
            self.assertLessEqual(before[metric], router[attr], metric)
            self.assertLessEqual(router[attr], after[metric], metric)
            self.assertLessEqual(after[metric] - before[metric], 1, metric)
        self.assertGreaterEqual(before["qdr_accepted_deliveries_total"], 250)
        for name in COUNTERS_119:
            self.assertIn("# TYPE %s counter" % name, text)
        for name in GAUGES_119:  # a gauge keeps no _total by default
            self.assertIn("# TYPE %s gauge" % name[:-6], text)
        self.assertIn('junction_pool_objects_in_use{pool="', text)
        self.assertIsNotNone(PROMTOOL, "promtool is not installed (./dev installs prometheus)")
        check = subprocess.run([PROMTOOL, "check", "metrics"], input=text, text=True,
                               capture_output=True, timeout=60)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_names_are_1_19s_by_default(self):
        """By default, exactly 1.19's 22 names, as 1.19 spells them (a 1.19
        dashboard or alert keeps working); on a listener with
        metricsPrometheusNames, ?compat=qdrouterd gets them too."""
        r, m, base = self.start_http_router()
        status, text = get(base + "/metrics")
        self.assertEqual(status, 200)
        qdr = {n for n in samples(text) if n.startswith("qdr_")}
        self.assertEqual(qdr, set(GAUGES_119 + COUNTERS_119))
        code, desc, body = m.call({"operation": "CREATE", "type": "listener", "name": "prom"},
                                  {"host": "127.0.0.1", "port": "0", "http": True,
                                   "websockets": False, "metricsPrometheusNames": True})
        self.assertEqual(code, 201, desc)
        prom = "http://127.0.0.1:%s/metrics" % body["port"]
        names = {n for n in samples(get(prom)[1]) if n.startswith("qdr_")}
        self.assertEqual(names, {n[:-6] for n in GAUGES_119} | set(COUNTERS_119))
        names = {n for n in samples(get(prom + "?compat=qdrouterd")[1]) if n.startswith("qdr_")}
        self.assertEqual(names, set(GAUGES_119 + COUNTERS_119))

    def test_healthz(self):
        """/healthz 200 while operational; /healthz/mesh on a standalone
        router 200; an unknown path 404; 503 while connections close at
        stop."""
        r, m, base = self.start_http_router()
        self.assertEqual(get(base + "/healthz"), (200, "OK\n"))
        self.assertEqual(get(base + "/healthz/mesh")[0], 200)
        self.assertEqual(get(base + "/nope")[0], 404)
        m.close()
        # a peer that never answers the router's close holds the stop for ~3 s
        raw = RawClient(r.port)
        self.addCleanup(raw.close)
        raw.open()
        r.signal(signal.SIGTERM)
        deadline = time.monotonic() + 3
        seen = None
        while time.monotonic() < deadline:
            try:
                seen = get(base + "/healthz", timeout=1)[0]
            except OSError:
                break
            if seen == 503:
                break
            time.sleep(0.05)
        self.assertEqual(seen, 503)
        self.assertEqual(r.proc.wait(10 * SLOW), 0)

    def test_root_dir_serves_files_and_keeps_router_paths(self):
        """httpRootDir makes a listener an http one without `http: yes`
        (as in 1.19), and its files are served beside /metrics, /healthz."""
        root = os.path.join(self.workdir, "www")
        os.mkdir(root)
        with open(os.path.join(root, "index.html"), "w") as f:
            f.write("<h1>console</h1>\n")
        with open(os.path.join(root, "app.js"), "w") as f:
            f.write("console.log(1);\n")
        r, m, base = self.start_http_router(httpRootDir=root, http=None)
        self.assertEqual(get(base + "/"), (200, "<h1>console</h1>\n"))
        self.assertEqual(get(base + "/app.js"), (200, "console.log(1);\n"))
        self.assertEqual(get(base + "/metrics")[0], 200)
        self.assertEqual(get(base + "/healthz"), (200, "OK\n"))
        self.assertEqual(get(base + "/missing.html")[0], 404)

    def test_http_listener_from_management(self):
        r = self.start_router()
        m = Manager(r.url)
        self.addCleanup(m.close)
        code, desc, body = m.call({"operation": "CREATE", "type": "listener", "name": "w2"},
                                  {"host": "127.0.0.1", "port": "0", "http": True,
                                   "websockets": False})
        self.assertEqual(code, 201, desc)
        base = "http://127.0.0.1:%s" % body["port"]
        self.assertEqual(get(base + "/healthz"), (200, "OK\n"))
        code, desc, _ = m.call({"operation": "DELETE", "type": "listener", "name": "w2"})
        self.assertEqual(code, 204, desc)
        with self.assertRaises(OSError):
            get(base + "/healthz", timeout=2)
        # with AMQP over WebSocket (the default): created, deleted, created again
        for _ in range(2):
            code, desc, body = m.call({"operation": "CREATE", "type": "listener", "name": "w3"},
                                      {"host": "127.0.0.1", "port": "0", "http": True})
            self.assertEqual(code, 201, desc)
            self.assertEqual(get("http://127.0.0.1:%s/healthz" % body["port"]), (200, "OK\n"))
            code, desc, _ = m.call({"operation": "DELETE", "type": "listener", "name": "w3"})
            self.assertEqual(code, 204, desc)

    def test_a_real_prometheus_scrapes_it(self):
        """A private Prometheus scrapes /metrics every second; its query API
        returns the accepted-deliveries count management shows."""
        self.assertIsNotNone(PROMETHEUS, "prometheus is not installed (./dev installs it)")
        r, m, base = self.start_http_router()
        self.traffic(r, 120)
        want = m.router()["acceptedDeliveries"]
        prom_port = free_port()
        conf = os.path.join(self.workdir, "prometheus.yml")
        with open(conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: junction\n    static_configs:\n"
                    "      - targets: ['%s']\n" % base[len("http://"):])
        log = open(os.path.join(self.workdir, "prometheus.log"), "w")
        self.addCleanup(log.close)
        prom = subprocess.Popen([PROMETHEUS, "--config.file=" + conf,
                                 "--storage.tsdb.path=" + os.path.join(self.workdir, "tsdb"),
                                 "--web.listen-address=127.0.0.1:%d" % prom_port],
                                stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)

        def stop():
            prom.send_signal(signal.SIGTERM)
            try:
                prom.wait(20)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait(5)
        self.addCleanup(stop)
        api = "http://127.0.0.1:%d/api/v1/query?query=qdr_accepted_deliveries_total" % prom_port
        deadline = time.monotonic() + 60 * SLOW
        value = None
        while time.monotonic() < deadline and value != want:
            try:
                status, text = get(api, timeout=2)
                result = json.loads(text)["data"]["result"] if status == 200 else []
                value = int(float(result[0]["value"][1])) if result else None
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.5)
        self.assertEqual(value, want, "Prometheus never returned the figure")


class HttpConfigTest(RouterTestCase):

    def test_healthz_asked_as_soon_as_the_port_opens_is_200(self):
        """A client that connects as soon as a config file's http listener
        listens (before the router has finished starting, as 1.19's tests
        do) waits and gets 200, never 503."""
        from harness import Router
        import socket
        hport = free_port()
        # more http listeners after it make the start take a while
        more = "".join(conf_section("listener", {"name": "more%d" % i, "host": "127.0.0.1",
                                                 "port": 0, "http": "yes"})
                       for i in range(12))
        r = Router(self.workdir, name="early", extra=conf_section(
            "listener", {"name": "web", "host": "127.0.0.1", "port": hport, "http": "yes",
                         "websockets": "no"}) + more)
        r.start()
        self.routers.append(r)
        self.addCleanup(self._stop_router, r)
        deadline = time.monotonic() + 10 * SLOW
        while True:
            try:
                s = socket.create_connection(("127.0.0.1", hport), timeout=TIMEOUT)
                break
            except OSError:
                self.assertLess(time.monotonic(), deadline, "never listened:\n" + r.log())
                time.sleep(0.001)
        with s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = s.recv(4096)
        self.assertTrue(answer.startswith(b"HTTP/1.1 200"), answer)
        r.wait_ready()

    def test_bad_root_refused_with_file_and_line(self):
        for attrs, word in (({"websockets": "no", "httpRootDir": "/nonexistent/www"},
                             "httpRootDir"),
                            ({"httpRootDir": "/nonexistent/www"}, "httpRootDir"),
                            ({"sslProfile": "missing"}, "sslProfile")):
            with self.subTest(word):
                a = {"host": "127.0.0.1", "port": 0, "http": "yes"}
                a.update(attrs)
                path = os.path.join(self.workdir, "bad.conf")
                with open(path, "w") as f:
                    f.write(conf_section("router", {"mode": "standalone"}) +
                            conf_section("listener", a))
                p = run_junctiond(["-c", path])
                self.assertNotEqual(p.returncode, 0, p.stderr)
                self.assertRegex(p.stderr, re.escape(path) + r":\d+: .*%s" % word)


if __name__ == "__main__":
    unittest.main()
