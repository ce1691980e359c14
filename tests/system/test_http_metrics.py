#!/usr/bin/python3
"""System tests of Junction's own /metrics figures (docs/protocol.md "HTTP"):

- per-address counters (junction_address_deliveries_*_total, labelled by
  class, phase and address as `junction-stat -a` shows them): exact deltas
  after a known number of messages, equal to the router.address entity's
  figures and to what `junction-stat -a` shows at the same moment; label values escaped as the text format
  wants (a real Prometheus parses them back to the address);
- router.metricsAddressLimit: at most that many label sets, and
  junction_metrics_addresses_omitted says how many were left out;
  dynamic addresses are never named (tests/system/test_security_dynamic.py);
- the residence-time histogram (junction_delivery_residence_seconds):
  its mobile-class _count grows by exactly the copies sent, its buckets
  are cumulative and end at _count;
- the router figures 1.19 kept as 0 for Junction until now
  (deliveriesTransit, deliveries{Ingress,Egress}RouteContainer,
  deliveriesRedirectedToFallback, deliveriesDelayed1Sec/10Sec): exact
  deltas, and /metrics equal to the router entity at the same moment; the
  gauges deliveriesStuck and linksBlocked while a delivery is held and a
  receiver gives no credit for 10 s, and after;
- HTTPS: an http listener with an sslProfile serves /metrics over TLS, and
  a real Prometheus (a private instance started here) scrapes it with the
  test CA; a connection whose requests came over HTTP/2 (curl, ALPN h2) is
  not logged as closed without a complete request (only one that sent
  none is).

Every process is started here on 127.0.0.1, bounded in time, and stopped
by PID.
"""
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

from proton import Delivery, Message, symbol
from proton.reactor import AtMostOnce, ReceiverOption
from proton.utils import BlockingConnection

import harness
from harness import (SLOW, Recv, RouterTestCase, Send, Traffic, conf_section, free_port,
                     run_junctiond)
from test_http import Manager, get
from mesh import Mesh
from tls_certs import shared_certs

TIMEOUT = 10 * SLOW
PYTHON = "/usr/bin/python3"
TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")

FAMILIES = {"ingress": "deliveriesIngress", "egress": "deliveriesEgress",
            "transit": "deliveriesTransit", "to_container": "deliveriesToContainer",
            "from_container": "deliveriesFromContainer"}

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def unescape(v):
    out, i = [], 0
    while i < len(v):
        if v[i] == "\\" and i + 1 < len(v):
            out.append({"n": "\n", "\\": "\\", '"': '"'}[v[i + 1]])
            i += 2
        else:
            out.append(v[i])
            i += 1
    return "".join(out)


def parse(text):
    """[(name, {label: value}, float)] of every sample."""
    out = []
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        labels = {k: unescape(v) for k, v in LABEL.findall(m.group(3) or "")}
        out.append((m.group(1), labels, float(m.group(4))))
    return out


def key_of(labels):
    """The router.address key of a per-address label set."""
    prefix = {"mobile": "M", "router": "R", "area": "A", "local": "L", "topo": "T",
              "edge": "H"}[labels["class"]]
    return prefix + labels.get("phase", "") + labels["address"]


def per_address(samples):
    """{key: {family: value}} of the per-address counters."""
    out = {}
    for name, labels, value in samples:
        m = re.match(r"junction_address_deliveries_(\w+)_total$", name)
        if m and labels["class"] != "dynamic":  # the dynamic addresses' sums
            out.setdefault(key_of(labels), {})[m.group(1)] = value
    return out


def plain(samples, name, **labels):
    for n, l, v in samples:
        if n == name and all(l.get(k) == w for k, w in labels.items()):
            return v
    return None


def residence(samples, cls):
    """(buckets [(le, count)], sum, count) of one class's histogram."""
    buckets = [(float(l["le"]), v) for n, l, v in samples
               if n == "junction_delivery_residence_seconds_bucket" and l["class"] == cls]
    return (buckets, plain(samples, "junction_delivery_residence_seconds_sum", **{"class": cls}),
            plain(samples, "junction_delivery_residence_seconds_count", **{"class": cls}))


class MetricsCase(RouterTestCase):

    def http_router(self, router=None, tls=False):
        # Prometheus's names (promtool checks these pages)
        attrs = {"name": "web", "host": "127.0.0.1", "port": 0, "http": "yes",
                 "websockets": "no", "metricsPrometheusNames": "yes"}
        extra = ""
        if tls:
            self.certs = shared_certs()
            extra += conf_section("sslProfile", {"name": "srv", "certFile": self.certs["server"],
                                                 "privateKeyFile": self.certs["server_key"],
                                                 "caCertFile": self.certs["ca"]})
            attrs["sslProfile"] = "srv"
            attrs["requireSsl"] = "yes"  # no plain HTTP beside it (1.19 serves it without)
        r = self.start_router(extra=extra + conf_section("listener", attrs), router=router or {})
        m = Manager(r.url)
        self.addCleanup(m.close)
        code, desc, body = m.call({"operation": "READ", "type": "listener", "name": "web"})
        self.assertEqual(code, 200, desc)
        return r, m, "%s://127.0.0.1:%s" % ("https" if tls else "http", body["port"])

    def hold(self, r, *addresses):
        """Attach an idle sender on each address, so each stays in the
        address table after the traffic's links are gone."""
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        for a in addresses:
            c.create_sender(a)

    def addresses(self, m):
        code, desc, body = m.call({"operation": "QUERY", "type": "org.amqp.management",
                                   "entityType": "router.address"},
                                  {"attributeNames": ["name"] + list(FAMILIES.values())})
        self.assertEqual(code, 200, desc)
        return {row[0]: dict(zip(FAMILIES, row[1:])) for row in body["results"]}

    def junction_stat(self, r):
        """{key: {family: value}} from `junction-stat -a -v --json`."""
        p = subprocess.run([PYTHON, os.path.join(TOOLS, "junction-stat"), "-b", r.url, "-a", "-v",
                            "--json"], capture_output=True, text=True, timeout=TIMEOUT,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 0, p.stderr)
        table = json.loads(p.stdout)["tables"][0]
        cols = table["columns"]
        out = {}
        for row in table["rows"]:
            v = dict(zip(cols, row))
            labels = {"class": v["class"], "address": v["addr"]}
            if v["phs"]:
                labels["phase"] = v["phs"]
            out[key_of(labels)] = {"ingress": v["in"], "egress": v["out"], "transit": v["thru"],
                                   "to_container": v["to-proc"],
                                   "from_container": v["from-proc"]}
        return out

    def links(self, m, address, direction):
        """router.link rows of address's endpoint links in that direction."""
        code, desc, body = m.call({"operation": "QUERY", "type": "org.amqp.management",
                                   "entityType": "router.link"}, {"attributeNames": []})
        self.assertEqual(code, 200, desc)
        rows = [dict(zip(body["attributeNames"], row)) for row in body["results"]]
        return [l for l in rows if l["owningAddr"] == "M0" + address and
                l["linkDir"] == direction and l["linkType"] == "endpoint"]

    def traffic(self, r, address, n):
        self.run_scenario(Traffic(r, [Recv(address)],
                                  [Send(address, [Message(body=i) for i in range(n)])],
                                  expect=n))

    def scrape(self, url, context=None):
        with urllib.request.urlopen(url, timeout=TIMEOUT, context=context) as resp:
            self.assertEqual(resp.status, 200)
            return resp.read().decode()

    def promtool(self, text):
        self.assertIsNotNone(PROMTOOL, "promtool is not installed (./dev installs prometheus)")
        check = subprocess.run([PROMTOOL, "check", "metrics"], input=text, text=True,
                               capture_output=True, timeout=60)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)


class MetricsAddressTest(MetricsCase):

    def test_address_counters_exact_deltas_and_equal_to_management(self):
        """250 messages through metrics.q: its ingress and egress series
        grow by exactly 250, the mobile residence _count by 250; every
        address's five series equal router.address's figures read between
        two scrapes (only $management's own move, by the one request)."""
        r, m, base = self.http_router()
        self.hold(r, "metrics.q")
        self.wait_for("metrics.q in the address table",
                      lambda: "M0metrics.q" in self.addresses(m))
        before = parse(self.scrape(base + "/metrics"))
        self.traffic(r, "metrics.q", 250)
        text = self.scrape(base + "/metrics")
        mgmt = self.addresses(m)
        after2 = per_address(parse(self.scrape(base + "/metrics")))
        stat = self.junction_stat(r)  # no traffic since: only management moves
        after = parse(text)
        a0, a1 = per_address(before)["M0metrics.q"], per_address(after)["M0metrics.q"]
        self.assertEqual(a1["ingress"] - a0["ingress"], 250)
        self.assertEqual(a1["egress"] - a0["egress"], 250)
        self.assertEqual(a1["transit"] - a0["transit"], 0)
        shown = per_address(after)
        self.assertEqual(set(shown), {k for k in mgmt if not k.startswith("Ltemp.")},
                         "the same addresses as router.address, but the dynamic ones")
        for key, figures in mgmt.items():
            if key.startswith("Ltemp."):  # summed under class="dynamic"
                continue
            for fam, value in figures.items():
                if key.endswith("$management"):  # the query itself is one delivery
                    self.assertLessEqual(shown[key][fam], value, (key, fam))
                    self.assertLessEqual(value, after2[key][fam], (key, fam))
                    self.assertLessEqual(after2[key][fam] - shown[key][fam], 1, (key, fam))
                else:
                    self.assertEqual(shown[key][fam], value, (key, fam))
        # and as junction-stat -a -v shows them (in, out, thru, to-proc, from-proc)
        extra = set(stat) - set(shown)  # junction-stat's own reply address
        self.assertTrue(set(shown) <= set(stat) and all(k.startswith("Ltemp.") for k in extra),
                        (sorted(shown), sorted(stat)))
        for key in shown:  # management's request and reply addresses move with each query
            if not key.endswith("$management") and not key.startswith("Ltemp."):
                self.assertEqual(stat[key], shown[key], key)
        self.assertEqual(stat["M0metrics.q"]["ingress"], a1["ingress"])
        self.assertEqual(plain(after, "junction_metrics_addresses_omitted"), 0)
        # residence: one copy per message, all of the mobile class
        b0, _, c0 = residence(before, "mobile")
        b1, s1, c1 = residence(after, "mobile")
        self.assertEqual(c1 - c0, 250)
        counts = [v for _, v in b1]
        self.assertEqual(counts, sorted(counts), "buckets are cumulative")
        self.assertEqual(b1[-1], (float("inf"), c1))
        self.assertGreater(s1, 0)
        for cls in ("other", "local", "router"):
            self.assertIsNotNone(residence(after, cls)[2], cls)
        self.assertGreater(plain(after, "process_resident_memory_bytes"), 1 << 20)
        self.assertGreater(plain(after, "junction_pool_object_bytes", pool="jn_delivery"), 0)
        self.promtool(text)

    def test_label_values_are_escaped(self):
        """An address with a double quote, a backslash and a line feed
        comes out escaped (`\\"`, `\\\\`, `\\n`), promtool accepts the page,
        and the parsed label is the address."""
        r, m, base = self.http_router()
        weird = 'we"ird\\addr\nx\u00e9'
        self.hold(r, weird)
        text = self.scrape(base + "/metrics")
        self.assertIn('address="we\\"ird\\\\addr\\nx\u00e9"}', text)
        self.assertIn("M0" + weird, per_address(parse(text)))
        self.promtool(text)


class MetricsLimitTest(MetricsCase):

    def test_limit_bounds_label_sets_and_says_how_many_are_left_out(self):
        """metricsAddressLimit 3 with more addresses: three label sets per
        family, and the omitted gauge is the rest of qdr_addresses."""
        r, m, base = self.http_router(router={"metricsAddressLimit": 3})
        self.hold(r, *["limit.%d" % i for i in range(6)])
        self.wait_for("six addresses", lambda: len(
            [k for k in self.addresses(m) if k.startswith("M0limit.")]) == 6)
        text = self.scrape(base + "/metrics")
        samples = parse(text)
        for fam in FAMILIES:
            n = len([1 for name, labels, _ in samples
                     if name == "junction_address_deliveries_%s_total" % fam
                     and labels["class"] != "dynamic"])
            self.assertEqual(n, 3, fam)
        total = plain(samples, "qdr_addresses")
        self.assertGreaterEqual(total, 8)  # six, and $management twice
        self.assertEqual(plain(samples, "junction_metrics_addresses_omitted"),
                         total - 3 - plain(samples, "junction_dynamic_addresses"))
        self.promtool(text)

    def test_limit_zero_shows_no_address(self):
        r, m, base = self.http_router(router={"metricsAddressLimit": 0})
        samples = parse(self.scrape(base + "/metrics"))
        self.assertEqual(per_address(samples), {})
        self.assertEqual(plain(samples, "junction_metrics_addresses_omitted"),
                         plain(samples, "qdr_addresses")
                         - plain(samples, "junction_dynamic_addresses"))
        self.assertNotIn('address="$dynamic"', self.scrape(base + "/metrics"))

    def test_negative_limit_refused_with_file_and_line(self):
        path = os.path.join(self.workdir, "bad.conf")
        with open(path, "w") as f:
            f.write(conf_section("router", {"mode": "standalone", "metricsAddressLimit": -1}))
        p = run_junctiond(["-c", path])
        self.assertNotEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stderr, re.escape(path) + r":\d+: .*metricsAddressLimit")


class MetricsHttpsTest(MetricsCase):

    def test_answered_http2_connection_not_logged_as_without_a_request(self):
        curl = shutil.which("curl")
        self.assertIsNotNone(curl, "curl is not installed")
        r, m, base = self.http_router(tls=True)
        for path in ("/healthz", "/metrics"):
            p = subprocess.run([curl, "-sS", "--http2", "--cacert", self.certs["ca"],
                                "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
                                base + path], capture_output=True, text=True,
                               timeout=TIMEOUT)
            self.assertEqual(p.stdout, "2 200", p.stderr)  # HTTP/2, answered
        # a connection that sends no request (TLS handshake done) is still logged
        port = int(base.rsplit(":", 1)[1])
        ctx = ssl.create_default_context(cafile=self.certs["ca"])
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost"):
                pass
        self.wait_for("the empty connection logged",
                      lambda: "closed without a complete request" in r.log())
        lines = [ln for ln in r.log().splitlines() if "closed without a complete request" in ln]
        self.assertEqual(len(lines), 1, "\n".join(lines))

    def test_prometheus_scrapes_over_https(self):
        """An http listener with an sslProfile: /metrics over TLS (the test
        CA verifies it), and a private Prometheus scraping it with scheme
        https returns the per-address figure management shows, with the
        escaped address parsed back to itself."""
        self.assertIsNotNone(PROMETHEUS, "prometheus is not installed (./dev installs it)")
        r, m, base = self.http_router(tls=True)
        weird = 'tls"q\\1'
        self.hold(r, weird)
        self.traffic(r, weird, 40)
        ctx = ssl.create_default_context(cafile=self.certs["ca"])
        text = self.scrape(base + "/metrics", context=ctx)
        self.assertEqual(per_address(parse(text))["M0" + weird]["ingress"], 40)
        with self.assertRaises((urllib.error.URLError, ConnectionError, OSError)):
            get(base.replace("https:", "http:") + "/metrics", timeout=5)
        want = self.addresses(m)["M0" + weird]["ingress"]
        self.assertEqual(want, 40)
        prom_port = free_port()
        conf = os.path.join(self.workdir, "prometheus.yml")
        with open(conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: junction\n    scheme: https\n"
                    "    tls_config:\n      ca_file: '%s'\n      server_name: localhost\n"
                    "    static_configs:\n      - targets: ['%s']\n"
                    % (self.certs["ca"], base[len("https://"):]))
        log = open(os.path.join(self.workdir, "prometheus.log"), "w")
        self.addCleanup(log.close)
        prom = subprocess.Popen([PROMETHEUS, "--config.file=" + conf,
                                 "--storage.tsdb.path=" + os.path.join(self.workdir, "tsdb"),
                                 "--web.listen-address=127.0.0.1:%d" % prom_port],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        def stop():
            prom.send_signal(signal.SIGTERM)
            try:
                prom.wait(20)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait(5)
        self.addCleanup(stop)
        query = urllib.parse.quote('junction_address_deliveries_ingress_total{class="mobile"}')
        api = "http://127.0.0.1:%d/api/v1/query?query=%s" % (prom_port, query)
        deadline = time.monotonic() + 60 * SLOW
        seen = {}
        while time.monotonic() < deadline and seen.get(weird) != want:
            try:
                status, body = get(api, timeout=2)
                result = json.loads(body)["data"]["result"] if status == 200 else []
                seen = {x["metric"]["address"]: int(float(x["value"][1])) for x in result}
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.5)
        targets = get("http://127.0.0.1:%d/api/v1/targets" % prom_port, timeout=5)[1]
        self.assertEqual(seen.get(weird), want,
                         "Prometheus never returned the figure: %r\ntargets: %s" % (seen, targets))


# router attributes that do not move with a management request, and their
# /metrics names
FIGURES = {"deliveriesTransit": "qdr_deliveries_transit_total",
           "deliveriesIngressRouteContainer": "qdr_deliveries_ingress_route_container_total",
           "deliveriesEgressRouteContainer": "qdr_deliveries_egress_route_container_total",
           "deliveriesRedirectedToFallback": "qdr_deliveries_redirected_to_fallback_total",
           "deliveriesDelayed1Sec": "qdr_deliveries_delayed_1sec_total",
           "deliveriesDelayed10Sec": "qdr_deliveries_delayed_10sec_total"}


class FallbackSource(ReceiverOption):
    """A receiver whose source has the qd.fallback capability."""

    def apply(self, link):
        link.source.capabilities.put_object(symbol("qd.fallback"))


class RouterFiguresTest(MetricsCase):

    def figures(self, m, base=None):
        """The router entity's FIGURES; with base, also /metrics's, scraped
        just after (nothing else runs: they must be equal)."""
        router = m.router()
        got = {a: router[a] for a in FIGURES}
        if base is not None:
            shown = parse(self.scrape(base + "/metrics"))
            for attr, metric in FIGURES.items():
                self.assertEqual(plain(shown, metric), got[attr], (attr, metric))
        return got

    def delta(self, before, after):
        return {a: after[a] - before[a] for a in FIGURES}

    def expect(self, before, after, **moved):
        want = {a: 0 for a in FIGURES}
        want.update(moved)
        self.assertEqual(self.delta(before, after), want)

    def test_transit_counted_on_the_middle_router_of_a_line(self):
        """A -> B -> C, 60 messages from A to a receiver on C: B's
        deliveriesTransit grows by exactly 60 and its ingress and egress
        (directly attached clients only, as 1.19) do not move but for its
        own management request; A's transit also grows by 60 (sent to
        another router), C's not."""
        mesh = Mesh(self, ["A", "B", "C"], [("A", "B", 1), ("B", "C", 1)]).start()
        mgrs = {n: Manager(mesh[n].url) for n in "ABC"}
        for mg in mgrs.values():
            self.addCleanup(mg.close)
        mesh.probe("A", "C", "line.q")
        before = {n: mgrs[n].router() for n in "ABC"}
        self.run_scenario(Traffic(None, [Recv("line.q", url=mesh["C"].url)],
                                  [Send("line.q", [Message(body=i) for i in range(60)],
                                        url=mesh["A"].url)], 60))
        after = {n: mgrs[n].router() for n in "ABC"}
        moved = {n: {k: after[n][k] - before[n][k]
                     for k in ("deliveriesTransit", "deliveriesIngress", "deliveriesEgress")}
                 for n in "ABC"}
        # each READ is one request in and one reply out on its own router
        self.assertEqual(moved["B"], {"deliveriesTransit": 60, "deliveriesIngress": 1,
                                      "deliveriesEgress": 1})
        self.assertEqual(moved["A"], {"deliveriesTransit": 60, "deliveriesIngress": 61,
                                      "deliveriesEgress": 1})
        self.assertEqual(moved["C"], {"deliveriesTransit": 0, "deliveriesIngress": 1,
                                      "deliveriesEgress": 61})

    def test_route_container_ingress_and_egress(self):
        """A client on a route-container listener sends 7 messages to
        itself: ingress and egress route-container figures grow by 7 each,
        and /metrics shows what the router entity shows."""
        port = free_port()
        rc = conf_section("listener", {"host": "127.0.0.1", "port": port,
                                       "role": "route-container",
                                       "saslMechanisms": "ANONYMOUS",
                                       "authenticatePeer": "no"})
        r, m, base = self.http_router_with(rc)
        before = self.figures(m, base)
        c = BlockingConnection("amqp://127.0.0.1:%d" % port, timeout=TIMEOUT)
        self.addCleanup(c.close)
        rx = c.create_receiver("rc.q", credit=10)
        self.wait_for("rc.q has a consumer",
                      lambda: "M0rc.q" in self.addresses(m))
        tx = c.create_sender("rc.q", options=AtMostOnce())
        for i in range(7):
            tx.send(Message(body=i))
        for i in range(7):
            self.assertEqual(rx.receive(timeout=TIMEOUT).body, i)  # sent settled
        after = self.figures(m, base)
        self.expect(before, after, deliveriesIngressRouteContainer=7,
                    deliveriesEgressRouteContainer=7)

    def test_presettled_without_consumer_counted_as_dropped(self):
        """5 pre-settled messages to an address nobody consumes (on the
        anonymous relay): droppedPresettledDeliveries grows by 5 and
        releasedDeliveries not at all, as 1.19 counts them."""
        r, m, base = self.http_router_with("")
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        tx = c.create_sender(None, options=AtMostOnce())
        names = ["droppedPresettledDeliveries", "releasedDeliveries"]
        before = m.router()
        for i in range(5):
            tx.send(Message(address="nobody.q", body=i))
        c.wait(lambda: tx.link.queued == 0, timeout=TIMEOUT)
        deadline = time.monotonic() + TIMEOUT
        while True:
            after = m.router()
            moved = [after[n] - before[n] for n in names]
            if moved[0] >= 5 or time.monotonic() > deadline:
                break
            t = time.monotonic() + 0.1  # c keeps running meanwhile
            c.wait(lambda: time.monotonic() >= t, timeout=5)
        self.assertEqual(moved, [5, 0])

    def test_fallback_redirects_counted(self):
        """enableFallback on prefix fb: with only a qd.fallback receiver,
        9 messages to fb.q go to it, and deliveriesRedirectedToFallback
        grows by exactly 9; a plain receiver then takes 4 more, not
        counted."""
        r, m, base = self.http_router_with(
            conf_section("address", {"prefix": "fb", "enableFallback": "yes"}))
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        fb = c.create_receiver("fb.q", credit=20, options=FallbackSource())
        tx = c.create_sender("fb.q", options=AtMostOnce())
        before = self.figures(m, base)
        for i in range(9):
            tx.send(Message(body=i))
        for i in range(9):
            self.assertEqual(fb.receive(timeout=TIMEOUT).body, i)  # sent settled
        mid = self.figures(m, base)
        self.expect(before, mid, deliveriesRedirectedToFallback=9)
        # and the address's own count (router.address)
        code, desc, body = m.call({"operation": "READ", "type": "router.address",
                                   "name": "M0fb.q"})
        self.assertEqual((code, body.get("deliveriesRedirectedToFallback")), (200, 9), desc)
        rx = c.create_receiver("fb.q", credit=20, name="fb-plain")
        self.wait_for("fb.q has a plain consumer",
                      lambda: self.addresses(m).get("M0fb.q") is not None)
        for i in range(4):
            tx.send(Message(body=100 + i))
        for i in range(4):
            self.assertEqual(rx.receive(timeout=TIMEOUT).body, 100 + i)
        self.expect(mid, self.figures(m, base))

    def test_deliveries_settled_late_counted_as_delayed(self):
        """Three unsettled messages: the receiver accepts one at once, one
        after 1.5 s and one after 11 s: deliveriesDelayed1Sec grows by 1
        and deliveriesDelayed10Sec by 1 (1.19: settled deliveries held 1 to
        10 s, and more than 10 s)."""
        r, m, base = self.http_router_with("")
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        rx = c.create_receiver("late.q", credit=3)
        self.wait_for("late.q has a consumer", lambda: "M0late.q" in self.addresses(m))
        before = self.figures(m, base)
        tx = c.create_sender("late.q")
        sent = [tx.link.send(Message(body=i)) for i in range(3)]  # not waiting
        t0 = time.monotonic()

        def until(t):  # the connection keeps running (heartbeats) meanwhile
            c.wait(lambda: time.monotonic() >= t0 + t, timeout=t + 10 * SLOW)
        for i in range(3):
            self.assertEqual(rx.receive(timeout=TIMEOUT).body, i)
        rx.accept()  # the oldest first: 0 at once
        until(1.5)
        rx.accept()  # 1 after 1.5 s
        until(11.0)
        rx.accept()  # 2 after 11 s
        c.wait(lambda: all(d.remote_state and d.settled for d in sent) or
               all(d.remote_state for d in sent), timeout=TIMEOUT)
        self.assertEqual([d.remote_state for d in sent], [Delivery.ACCEPTED] * 3)
        self.expect(before, self.figures(m, base), deliveriesDelayed1Sec=1,
                    deliveriesDelayed10Sec=1)
        # and the sender's link (router.link) counts the same two
        links = self.links(m, "late.q", "in")
        self.assertEqual([(l["deliveriesDelayed1Sec"], l["deliveriesDelayed10Sec"])
                          for l in links], [(1, 1)])

    def test_stuck_delivery_and_blocked_link_shown_while_they_last(self):
        """A delivery its receiver holds unsettled and a receiver that never
        gave credit: after 10 s (and a figures tick), deliveriesStuck is 2
        (the delivery counted on each of its two links, as 1.19 counts it)
        and linksBlocked 1, as /metrics shows too; once the delivery is
        accepted and the receiver gives credit, both are back to 0."""
        r, m, base = self.http_router_with("")
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        rx = c.create_receiver("stuck.q", credit=5)
        idle = c.create_receiver("blocked.q", credit=0, name="no-credit")
        self.wait_for("stuck.q has a consumer", lambda: "M0stuck.q" in self.addresses(m))
        start = m.router()
        self.assertEqual((start["deliveriesStuck"], start["linksBlocked"]), (0, 0))
        tx = c.create_sender("stuck.q")
        sent = tx.link.send(Message(body="held"))
        self.assertEqual(rx.receive(timeout=TIMEOUT).body, "held")  # not settled

        def poll(what, pred, timeout):  # c keeps running meanwhile
            deadline = time.monotonic() + timeout
            while True:
                got = m.router()
                if pred(got):
                    return got
                self.assertLess(time.monotonic(), deadline, "%s: %s" % (what, got))
                t = time.monotonic() + 0.2
                c.wait(lambda: time.monotonic() >= t, timeout=5)
        t0 = time.monotonic()
        seen = poll("stuck and blocked", lambda g: g["deliveriesStuck"] == 2 and
                    g["linksBlocked"] == 1, 20 * SLOW)
        self.assertGreaterEqual(time.monotonic() - t0, 9.0, "not before 10 s held")
        shown = parse(self.scrape(base + "/metrics"))
        # 1.19's names (the default listener)
        self.assertEqual(plain(shown, "qdr_deliveries_stuck_total"), seen["deliveriesStuck"])
        self.assertEqual(plain(shown, "qdr_links_blocked_total"), seen["linksBlocked"])
        # router.link: the holding receiver's link shows the stuck copy, the
        # one without credit how long it has had none
        self.assertEqual([l["deliveriesStuck"] for l in self.links(m, "stuck.q", "out")], [1])
        # and the sender's link the delivery it still awaits an outcome for
        self.assertEqual([l["deliveriesStuck"] for l in self.links(m, "stuck.q", "in")], [1])
        self.assertGreaterEqual(self.links(m, "blocked.q", "out")[0]["zeroCreditSeconds"], 9)
        self.assertEqual(self.links(m, "stuck.q", "out")[0]["zeroCreditSeconds"], 0)
        rx.accept()
        idle.link.flow(1)
        poll("both back to 0", lambda g: g["deliveriesStuck"] == 0 and g["linksBlocked"] == 0,
             5 * SLOW)
        c.wait(lambda: sent.remote_state == Delivery.ACCEPTED, timeout=TIMEOUT)

    def test_every_schema_series_shows_the_router_entity_figure(self):
        """The router's series at /metrics are the ones schema.json lists
        under the router's "metrics", first and in its order, each with its HELP and
        TYPE, and each shows the same figure as that column of a
        management READ of the router (one row builder feeds both)."""
        with open(os.path.join(harness.SOURCE_DIR, "router", "config", "schema.json")) as f:
            router = [t for t in json.load(f)["entityTypes"] if t["name"] == "router"][0]
        series = router["metrics"]
        r, m, base = self.http_router_with("")
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        rx = c.create_receiver("series.q")
        tx = c.create_sender("series.q")
        for i in range(3):
            sent = tx.link.send(Message(body=i))
            rx.receive(timeout=TIMEOUT)
            rx.accept()
            c.wait(lambda: sent.remote_state == Delivery.ACCEPTED, timeout=TIMEOUT)
        c.close()
        self.wait_for("the client's connection gone", lambda: m.router()["connectionCount"] == 1)
        # management requests are deliveries too: the scrape falls between
        # two READs and shows figures between theirs
        before = m.router()
        text = self.scrape(base + "/metrics?compat=qdrouterd")
        entity = m.router()
        names = [l.split()[2] for l in text.splitlines() if l.startswith("# TYPE ")]
        # first the router's, then the pools', addresses' and the rest
        self.assertEqual(names[:len(series)], [s["name"] for s in series])
        shown = parse(text)
        for s in series:
            self.assertIn("# HELP %s %s\n# TYPE %s %s\n" % (s["name"], s["help"], s["name"],
                                                             s["type"]), text)
            got = plain(shown, s["name"])
            self.assertTrue(before[s["column"]] <= got <= entity[s["column"]],
                            "%s: %s, READs %s and %s" % (s["name"], got, before[s["column"]],
                                                         entity[s["column"]]))
        self.assertEqual(entity["acceptedDeliveries"], 3)

    def http_router_with(self, extra):
        attrs = {"name": "web", "host": "127.0.0.1", "port": 0, "http": "yes",
                 "websockets": "no"}
        r = self.start_router(extra=extra + conf_section("listener", attrs))
        m = Manager(r.url)
        self.addCleanup(m.close)
        code, desc, body = m.call({"operation": "READ", "type": "listener", "name": "web"})
        self.assertEqual(code, 200, desc)
        return r, m, "http://127.0.0.1:%s" % body["port"]


if __name__ == "__main__":
    unittest.main()
