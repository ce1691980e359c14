#!/usr/bin/python3
"""The tools' rough edges of issue 19, one test each:

* junction-stat -e says "No Edge Router Connections" when no connection is
  an edge one, and --limit counts edge connections (after the filter);
* --json carries raw values (uptime in seconds, sizes in octets, ids and
  counters as numbers); --csv is pure CSV (heading row first, no title
  lines unless --title), as the csv module reads it;
* address sections of the config file are named as 1.19 names them
  ("address/0"), keep working through a reload that renumbers them, and a
  file entity and a management entity show their null attributes alike;
* management refusals say as much as the config file: the allowed values
  of an enum, the system's reason a port cannot be listened on;
* -r NOSUCH fails at once, naming the routers there are;
* run-time errors start with the program's name;
* junction-bench: --version, service names as ports, --bus/--timeout as in
  the other tools, and --multicast toward an address that is not multicast
  says why messages were "lost".

The fake agent (mgmt_fake_agent.py) gives canned entities with known raw
values; the rest runs against real junctiond processes.
"""
import csv
import io
import json
import os
import socket
import subprocess
import time
import unittest

from harness import BENCH, SLOW, Router, RouterTestCase
from mgmt_fake_agent import ToolsTestCase, TOOLS_DIR

PYTHON = "/usr/bin/python3"


def tool(name, url, *args, timeout=60):
    return subprocess.run([PYTHON, os.path.join(TOOLS_DIR, "junction-" + name), "-b", url]
                          + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def ok(name, url, *args):
    p = tool(name, url, *args)
    if p.returncode != 0:
        raise AssertionError("junction-%s %s: %s%s" % (name, args, p.stderr, p.stdout))
    return p.stdout


# --------------------------------------------------------------------------
# junction-stat against the fake agent's canned values

class StatOutputTest(ToolsTestCase):

    def test_edge_view_filters_then_limits(self):
        self.require_fake()  # connections 1 normal, 2 inter-router, 3 edge
        out = self.ok("stat", "-e", "--limit", "1")
        self.assertIn("edge-one", out)
        self.assertNotIn("No Edge Router Connections", out)
        doc = json.loads(self.ok("stat", "-e", "--json"))
        self.assertEqual([r[0] for r in doc["tables"][0]["rows"]], [3])

    def test_json_holds_raw_values(self):
        self.require_fake()
        general = dict(json.loads(self.ok("stat", "-g", "--json"))["tables"][0]["rows"])
        self.assertEqual(general["Uptime"], 93784)  # seconds, not 001:02:03:04
        self.assertEqual(general["VmSize"], 449839104)  # octets, not "429 MiB"
        self.assertIsInstance(general["Connections"], int)
        # and the table shows them formatted
        text = self.ok("stat", "-g")
        self.assertIn("001:02:03:04", text)
        self.assertIn("429 MiB", text)
        conns = json.loads(self.ok("stat", "-c", "--json"))["tables"][0]
        rows = {r[0]: dict(zip(conns["columns"], r)) for r in conns["rows"]}
        self.assertEqual(sorted(rows), [1, 2, 3])  # ids as numbers
        self.assertEqual(rows[1]["last dlv"], 5)
        self.assertIsNone(rows[2]["last dlv"])  # "-" in the table
        self.assertEqual(rows[3]["uptime"], 3728)
        links = json.loads(self.ok("stat", "-l", "--json"))["tables"][0]
        for r in links["rows"]:
            row = dict(zip(links["columns"], r))
            self.assertIsInstance(row["id"], int)
            self.assertIsInstance(row["deliv"], int)
            self.assertNotEqual(row["blkd"], "-")
        mem = json.loads(self.ok("stat", "-m", "--json"))["tables"]
        summary = dict(zip(mem[1]["columns"], mem[1]["rows"][0]))
        self.assertIsInstance(summary["Pooled"], int)

    def test_csv_is_pure_csv(self):
        self.require_fake()
        for view in ("-g", "-c", "-l", "-n", "-e", "-a", "-m", "-p", "--autolinks",
                     "--linkroutes", "--log"):
            with self.subTest(view=view):
                text = self.ok("stat", view, "--csv")
                self.assertNotRegex(text, r"(?m) UTC$")
                for block in text.rstrip("\n").split("\n\n"):
                    rows = list(csv.reader(io.StringIO(block)))
                    self.assertTrue(rows, text)
                    for row in rows[1:]:
                        self.assertEqual(len(row), len(rows[0]), block)
        # the heading row first
        rows = list(csv.reader(io.StringIO(self.ok("stat", "-a", "--csv"))))
        self.assertEqual(rows[0][:4], ["class", "addr", "phs", "distrib"])
        self.assertIn(["mobile", "examples", "0", "balanced"], [r[:4] for r in rows])
        # titles on request
        text = self.ok("stat", "-a", "--csv", "--title")
        self.assertRegex(text.splitlines()[0], r" UTC$")
        self.assertIn("\nRouter Addresses\n", text)
        p = self.tool("stat", "-a", "--title")
        self.assertOneLineError(p, 2, r"^junction-stat: --title needs --csv")
        # --all-routers: the router in a first column
        rows = list(csv.reader(io.StringIO(self.ok("stat", "-g", "--all-routers", "--csv")
                                           .replace("\n\n", "\n"))))
        routers = {r[0] for r in rows if r[0] != "router"}
        self.assertEqual(routers, {"FAKE", "B"})

    def test_runtime_errors_name_the_program(self):
        self.require_fake()
        for name, args in (("manage", ["read", "--type", "address", "--name", "nothere"]),
                           ("stat", ["-r", "NOSUCH", "-g"])):
            p = self.tool(name, *args)
            self.assertOneLineError(p, 1, r"^junction-%s: " % name)

    def test_unknown_router_fails_at_once(self):
        self.require_fake()  # a mesh of FAKE and B
        p = self.tool("stat", "-g", "-r", "NOSUCH", "-t", "20")
        self.assertOneLineError(p, 1, r"^junction-stat: router NOSUCH is not in the mesh .*"
                                      r"\(routers: B, FAKE\)$")
        self.assertLess(p.elapsed, 10)
        # only the attached router's agent was asked, never _topo/0/NOSUCH
        self.assertEqual({r["address"] for r in self.fake.requests}, {"$management"})


# --------------------------------------------------------------------------
# against junctiond

class LiveToolsTest(RouterTestCase):

    def test_edge_view_without_edges(self):
        r = self.start_router()
        out = ok("stat", r.url, "-e")  # the tool's own connection is a normal one
        self.assertIn("No Edge Router Connections", out)
        self.assertEqual(ok("stat", r.url, "-e", "--csv").splitlines(),
                         ['"id","host","container","role","dir","security","authentication",'
                          '"tenant"'])

    def test_unknown_router_on_a_standalone_router(self):
        r = self.start_router()
        start = time.monotonic()
        p = tool("stat", r.url, "-g", "-r", "NOSUCH", "-t", "20")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, r"^junction-stat: router NOSUCH is not in the mesh: the "
                                   r"router at amqp://127\.0\.0\.1:\d+ \(R0\) has no other "
                                   r"routers\n$")
        self.assertLess(time.monotonic() - start, 10)
        # its own id is fine
        self.assertIn("Router Statistics", ok("stat", r.url, "-g", "-r", "R0"))

    def test_refusals_name_allowed_values_and_the_os_error(self):
        r = self.start_router()
        p = tool("manage", r.url, "create", "--type", "address", "--name", "a2", "prefix=p",
                 "distribution=sideways")
        self.assertEqual(p.returncode, 1)
        self.assertIn("'sideways' is not one of multicast, closest, balanced, unavailable",
                      p.stderr)
        with socket.socket() as held:
            held.bind(("127.0.0.1", 0))
            held.listen(1)
            port = held.getsockname()[1]
            p = tool("manage", r.url, "create", "--type", "listener", "--name", "l2",
                     "host=127.0.0.1", "port=%d" % port)
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stderr, r"^junction-manage: BadRequestStatus: listener l2: cannot "
                                   r"listen on 127\.0\.0\.1:%d: Address already in use$" % port)

    def test_file_addresses_are_named_as_1_19_names_them(self):
        addresses = [{"prefix": "fan", "distribution": "multicast"},
                     {"pattern": "svc.*", "distribution": "closest"},
                     {"prefix": "given", "name": "mine"}]
        r = self.start_router(addresses=addresses)
        rows = json.loads(ok("manage", r.url, "query", "--type", "address", "name", "prefix",
                             "pattern"))
        self.assertEqual(rows, [{"name": "address/0", "prefix": "fan"},
                                {"name": "address/1", "pattern": "svc.*"},
                                {"name": "mine", "prefix": "given"}])
        # a file entity and a management entity show the same attributes,
        # null ones included
        ok("manage", r.url, "create", "--type", "address", "--name", "made", "prefix=made")
        by_file = json.loads(ok("manage", r.url, "read", "--type", "address", "--name",
                                "address/0"))
        by_mgmt = json.loads(ok("manage", r.url, "read", "--type", "address", "--name", "made"))
        self.assertEqual(sorted(by_file), sorted(by_mgmt))
        self.assertEqual({k for k, v in by_file.items() if v is None},
                         {k for k, v in by_mgmt.items() if v is None})
        name = json.loads(ok("manage", r.url, "query", "--type", "listener", "name"))[0]["name"]
        ok("manage", r.url, "create", "--type", "listener", "--name", "l9", "host=127.0.0.1",
           "port=0")
        by_file = json.loads(ok("manage", r.url, "read", "--type", "listener", "--name", name))
        by_mgmt = json.loads(ok("manage", r.url, "read", "--type", "listener", "--name", "l9"))
        self.assertEqual(sorted(by_file), sorted(by_mgmt))

        rows = json.loads(ok("manage", r.url, "query", "--type", "address"))
        ids = {(x.get("prefix") or x.get("pattern")): x["identity"] for x in rows}
        with open(r.conf_path) as f:
            text = f.read()
        first = text.index("address {")
        with open(r.conf_path, "w") as f:
            f.write(text[:first] + "address {\n    prefix: new\n}\n" + text[first:])
        result = ok("manage", r.url, "reload")
        self.assertIn("created", result)
        self.assertNotIn("deleted", result)
        rows = json.loads(ok("manage", r.url, "query", "--type", "address"))
        got = {(x.get("prefix") or x.get("pattern")): (x.get("name"), x["identity"])
               for x in rows}
        self.assertEqual(got["new"][0], "address/0")
        self.assertEqual(got["fan"], ("address/1", ids["fan"]))
        self.assertEqual(got["svc.*"], ("address/2", ids["svc.*"]))
        self.assertEqual(got["made"][0], "made")


# --------------------------------------------------------------------------
# junction-bench

def service_port():
    """(name, port) of a TCP service from /etc/services whose port is free on
    127.0.0.1 now, or None."""
    for name in ("amqp", "amqps", "xmpp-client", "postgresql", "mysql", "redis", "http-alt",
                 "webcache", "tproxy", "hkp", "zabbix-agent", "zabbix-trapper", "munin"):
        try:
            port = socket.getservbyname(name, "tcp")
        except OSError:
            continue
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return name, port
    return None


class BenchTest(RouterTestCase):

    def bench(self, *args, timeout=120):
        return subprocess.run([BENCH] + [str(a) for a in args], capture_output=True, text=True,
                              timeout=timeout * SLOW)

    def test_version_and_common_long_options(self):
        p = self.bench("--version")
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout, r"^junction-bench \d+\.\d+\.\d+\n$")
        r = self.start_router()
        p = self.bench("--bus", r.url, "--timeout", 10, "--count", 200, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["unique"], 200)
        p = self.bench("--bus", "amqp://127.0.0.1:no-such-service")
        self.assertEqual(p.returncode, 2)
        self.assertIn("'no-such-service' is neither a port number nor a TCP service name",
                      p.stderr)

    def test_service_name_as_port(self):
        found = service_port()
        if not found:
            self.skipTest("no TCP service of /etc/services has a free port on 127.0.0.1")
        name, port = found
        r = Router(self.workdir, name="svc", listener={"port": name})
        r.port = port  # so wait_ready looks for the service's port
        r.start()
        self.routers.append(r)
        self.addCleanup(self._stop_router, r)
        r.wait_ready()
        p = self.bench("--bus", "amqp://127.0.0.1:%s" % name, "--count", 100)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)

    def test_multicast_toward_a_balanced_address_says_why(self):
        r = self.start_router()  # junction-bench is balanced: one receiver per message
        p = self.bench("--bus", r.url, "--multicast", "--receivers", 2, "--count", 200,
                       "--idle-timeout", 1, "--json")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertTrue(json.loads(p.stdout)["not_multicast"])
        self.assertIn("each message reached exactly one of the 2 receivers: the router does "
                      "not multicast address 'junction-bench'", p.stderr)
        # toward a multicast address all is well
        r2 = self.start_router(addresses=[{"prefix": "junction-bench",
                                           "distribution": "multicast"}])
        p = self.bench("--bus", r2.url, "--multicast", "--receivers", 2, "--count", 200,
                       "--presettled", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(json.loads(p.stdout)["not_multicast"])


if __name__ == "__main__":
    unittest.main()
