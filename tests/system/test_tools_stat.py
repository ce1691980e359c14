#!/usr/bin/python3
"""junction-stat: each qdstat view's table (exact headings in qdstat 1.19's
order, alignment), --all-entities (qdstat's list of views under one
heading), --limit (0: no limit, as qdstat), --csv, --json, --watch/--count,
-r and --all-routers, usage errors, connection refused and timeouts.

Runs against the fake agent (mgmt_fake_agent.py) unless JN_TOOLS_TARGET
names a real router; tests that read canned values call require_fake().
"""

import json
import re
import socket
import threading
import unittest

from mgmt_fake_agent import LINK_COUNT, ToolsTestCase


def parse_table(text, title):
    """(headings, rows) of the classic table titled `title` in text; checks
    the layout on the way: two-space prefix, '=' rule as wide as the columns,
    every cell starting where its heading starts, no trailing blanks on the
    heading line."""
    lines = text.splitlines()
    try:
        at = lines.index(title)
    except ValueError:
        raise AssertionError("no table titled %r in:\n%s" % (title, text))
    if lines[at + 1].startswith("Last Topology Change: "):
        at += 1  # the -n title's second line
    head, rule = lines[at + 1], lines[at + 2]
    assert head.startswith("  ") and not head.startswith("   "), head
    assert head == head.rstrip(), "heading line ends in blanks: %r" % head
    assert re.fullmatch(r"  =+", rule), "bad rule line %r" % rule
    starts = [m.start() for m in re.finditer(r"(?<=  )\S", "  " + head[2:])]
    starts = [2] + [s for s in starts if s > 2]
    # Headings may hold one blank ("conn id", "last dlv"): split on 2+ blanks.
    headings = re.split(r"\s{2,}", head.strip())
    assert len(headings) == len(starts), (headings, starts)
    rows = []
    for line in lines[at + 3:]:
        if not line.startswith("  ") or line.strip() == "":
            break
        cells = []
        for i, s in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else len(line)
            if i > 0:
                assert line[s - 1] == " " and line[s - 2] == " ", \
                    "cell %d of %r not aligned under %r" % (i, line, headings[i])
            cells.append(line[s:end].strip())
        rows.append(cells)
    assert len(rule) >= len(head), "rule shorter than the headings"
    return headings, rows


class StatViewTest(ToolsTestCase):
    """The tables of each view."""

    def check_header(self, out):
        lines = out.splitlines()
        self.assertRegex(lines[0], r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? UTC$")
        self.assertTrue(lines[1].strip(), "no router id line: %r" % out)
        self.assertEqual(lines[2], "")
        return lines[1]

    def test_general_default_view(self):
        out = self.ok("stat")
        rid = self.check_header(out)
        heads, rows = parse_table(out, "Router Statistics")
        self.assertEqual(heads, ["attr", "value"])
        labels = [r[0] for r in rows]
        expected = ["Version", "Mode", "Router Id", "Worker Threads", "Uptime", "VmSize",
                    "Area", "Link Routes", "Auto Links", "Links", "Nodes", "Addresses",
                    "Connections", "Presettled Count", "Dropped Presettled Count",
                    "Accepted Count", "Rejected Count", "Released Count", "Modified Count",
                    "Deliveries Delayed > 1sec", "Deliveries Delayed > 10sec",
                    "Deliveries Stuck > 10sec", "Deliveries to Fallback", "Links Blocked",
                    "Ingress Count", "Egress Count", "Transit Count",
                    "Deliveries from Route Container", "Deliveries to Route Container"]
        if "VmSize" not in labels:
            expected.remove("VmSize")  # shown only when the router knows it
        self.assertEqual(labels, expected)
        self.assertEqual(dict(rows)["Router Id"], rid)
        self.assertRegex(dict(rows)["Uptime"], r"^\d{3}:\d\d:\d\d:\d\d$")

    def test_general_values(self):
        self.require_fake()
        rows = dict(parse_table(self.ok("stat", "-g"), "Router Statistics")[1])
        self.assertEqual(rows["Router Id"], "FAKE")
        self.assertEqual(rows["Uptime"], "001:02:03:04")
        self.assertEqual(rows["VmSize"], "429 MiB")
        self.assertEqual(rows["Accepted Count"], "1234567")

    def test_connections(self):
        out = self.ok("stat", "-c")
        self.check_header(out)
        if "Connections" not in out.splitlines()[3:] or out.rstrip().endswith("Connections"):
            self.fail("no connection rows: %s" % out)
        heads, rows = parse_table(out, "Connections")
        self.assertEqual(heads, ["id", "host", "container", "role", "proto", "dir", "security",
                                 "authentication", "tenant", "last dlv", "uptime"])
        if self.fake:
            self.assertEqual(rows[0], ["1", "127.0.0.1:40001", "client-one", "normal", "amqp",
                                       "in", "no-security", "anonymous-user", "",
                                       "000:00:00:05", "000:01:02:06"])
            self.assertEqual(rows[1][6:10], ["TLSv1.3(TLS_AES_256_GCM_SHA384)", "admin(PLAIN)",
                                             "", "-"])
            self.assertEqual(rows[2][7:9], ["no-auth", "tenant1"])

    def test_links(self):
        out = self.ok("stat", "-l")
        heads, rows = parse_table(out, "Router Links")
        self.assertEqual(heads, ["type", "dir", "conn id", "id", "peer", "class", "addr", "phs",
                                 "cap", "pri", "undel", "unsett", "deliv", "presett", "psdrop",
                                 "acc", "rej", "rel", "mod", "delay", "rate", "stuck", "cred",
                                 "blkd"])
        self.assertTrue(rows, "the management links themselves are links")
        if self.fake:
            self.assertEqual(len(rows), LINK_COUNT)
            self.assertEqual(rows[0][:9], ["endpoint", "in", "2", "1", "", "local", "qdhello",
                                           "", "250"])
            self.assertEqual(rows[0][-1], "00:01:15")
            self.assertEqual(rows[1][-1], "-")
            self.assertEqual(rows[1][5:8], ["mobile", "waypoint", "1"])

    def test_links_verbose(self):
        heads, rows = parse_table(self.ok("stat", "-l", "-v"), "Router Links")
        self.assertEqual(heads[-4:], ["blkd", "admin", "oper", "name"])

    def test_addresses(self):
        heads, rows = parse_table(self.ok("stat", "-a"), "Router Addresses")
        self.assertEqual(heads, ["class", "addr", "phs", "distrib", "pri", "local", "remote",
                                 "in", "out", "thru", "fallback"])
        self.assertEqual([r[1] for r in rows], sorted(r[1] for r in rows), "sorted by addr")
        if self.fake:
            by_addr = {r[1]: r for r in rows}
            self.assertEqual(by_addr["examples"], ["mobile", "examples", "0", "balanced", "-",
                                                   "1", "0", "1500", "1500", "0", "0"])
            self.assertEqual(by_addr["broker.queue"][:6],
                             ["link-in", "broker.queue", "", "linkBalanced", "-", "1"])
            self.assertEqual(by_addr["waypoint"][2:5], ["1", "balanced", "3"])

    def test_addresses_verbose(self):
        heads, _ = parse_table(self.ok("stat", "-a", "-v"), "Router Addresses")
        self.assertEqual(heads, ["class", "addr", "phs", "distrib", "pri", "in-proc", "local",
                                 "remote", "in", "out", "thru", "fallback", "to-proc",
                                 "from-proc"])

    def test_nodes(self):
        out = self.ok("stat", "-n")
        if "Router is Standalone - No Router List" in out:
            self.assertIsNone(self.fake)
            return
        heads, rows = parse_table(out, "Routers in the Network")
        self.assertEqual(heads, ["router-id", "next-hop", "link"])
        self.assertEqual([r[0] for r in rows], sorted(r[0] for r in rows))
        if self.fake:
            self.assertEqual(rows, [["B", "-", "1"], ["FAKE", "(self)", "-"]])
            self.assertIn("Last Topology Change: Tuesday Nov 14 22:15:00 2023 GMT", out)
            heads, rows = parse_table(self.ok("stat", "-n", "-v"), "Routers in the Network")
            self.assertEqual(heads, ["router-id", "next-hop", "link", "ver", "cost",
                                     "neighbors", "valid-origins"])
            self.assertEqual(rows[0][3:], ["1", "1", "['FAKE']", "[]"])

    def test_nodes_standalone(self):
        agent = self.start_fake(router_id="SOLO", other_routers=())
        out = self.ok("stat", "-n", url=agent.url)
        self.assertEqual(out.splitlines()[3:], ["Router is Standalone - No Router List"])
        # --all-routers needs two or more management nodes: one view, as without it.
        out = self.ok("stat", "-n", "--all-routers", url=agent.url)
        self.assertEqual(out.splitlines()[1:], ["SOLO", "", "Router is Standalone - No Router List"])

    def test_memory(self):
        out = self.ok("stat", "-m")
        if "No memory statistics available" in out:
            self.assertIsNone(self.fake)
            return
        heads, rows = parse_table(out, "Types")
        self.assertEqual(heads, ["type", "size", "batch", "thread-max", "total", "in-threads",
                                 "rebal-in", "rebal-out"])
        self.assertEqual([r[0] for r in rows], sorted(r[0] for r in rows))
        heads, rows = parse_table(out, "Summary")
        self.assertEqual(heads, ["VmSize", "Pooled"])
        if self.fake:
            self.assertEqual(rows, [["429 MiB", "881 KiB"]])

    def test_memory_pooled_counts_objects_held_not_ever_allocated(self):
        """Pooled is what the pools hold now: a Junction pool gives objects
        back to the heap (totalFreeToHeap), so totalAllocFromHeap alone
        overstates it (the fake's jn_buffer_t took 2048 and gave back 1024)."""
        self.require_fake()
        heads, rows = parse_table(self.ok("stat", "-m"), "Summary")
        held = 160 * 1024 + 576 * (2048 - 1024) + 232 * 640
        self.assertEqual(rows[0][1], "%d KiB" % (held // 1024))

    def test_autolinks_and_linkroutes(self):
        out = self.ok("stat", "--autolinks")
        if "No AutoLinks found" not in out:
            heads, rows = parse_table(out, "AutoLinks")
            self.assertEqual(heads, ["addr", "dir", "phs", "extAddr", "link", "status",
                                     "lastErr"])
            if self.fake:
                self.assertEqual(rows, [["queue.one", "out", "1", "", "", "inactive", ""]])
        else:
            self.assertIsNone(self.fake)
        out = self.ok("stat", "--linkroutes")
        if "No Link Routes found" not in out:
            heads, rows = parse_table(out, "Link Routes")
            self.assertEqual(heads, ["address", "dir", "distrib", "status"])
            if self.fake:
                self.assertEqual(rows, [["broker", "in", "linkBalanced", "active"]])
        else:
            self.assertIsNone(self.fake)

    def test_log(self):
        out = self.ok("stat", "--log")
        lines = out.splitlines()
        for line in lines:
            self.assertRegex(line, r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} \S+ \(\w+\) ")
        if self.fake:
            self.assertEqual(len(lines), 3)
            self.assertIn("SERVER (notice) Listening on 127.0.0.1:5672", lines[1])
            self.assertEqual(len(self.ok("stat", "--log", "--limit", "1").splitlines()), 1)
            self.assertEqual(self.fake.operations("GET-LOG")[-1]["properties"]["limit"], 1)


    def test_limit_0_is_no_limit_as_in_qdstat(self):
        _, every = parse_table(self.ok("stat", "-a"), "Router Addresses")
        _, zero = parse_table(self.ok("stat", "-a", "--limit", "0"), "Router Addresses")
        self.assertEqual(zero, every)
        self.assertGreater(len(every), 1)
        _, one = parse_table(self.ok("stat", "-a", "--limit", "1"), "Router Addresses")
        self.assertEqual(len(one), 1)

    def test_all_entities_shows_qdstats_views_under_one_heading(self):
        out = self.ok("stat", "--all-entities")
        lines = out.splitlines()
        self.assertRegex(lines[0], r" UTC$")
        self.assertEqual(len([ln for ln in lines if ln.endswith(" UTC")]), 1, out)
        at = [lines.index(t) for t in ("Router Links", "Router Addresses", "Connections",
                                       "Router Statistics")]
        self.assertEqual(at, sorted(at), "not in qdstat's order:\n" + out)
        for title in ("Router Links", "Router Addresses", "Connections", "Router Statistics"):
            parse_table(out, title)  # each a whole table, laid out as alone
        self.assertNotIn("Routers in the Network", out)  # -n is not one of them
        doc = json.loads(self.ok("stat", "--all-entities", "--json"))
        self.assertEqual(doc["view"], "all_entities")
        titles = [t["title"] for t in doc["tables"]]
        self.assertEqual(titles[:3], ["Router Links", "Router Addresses", "Connections"])
        self.assertIn("Router Statistics", titles)


class StatFormatTest(ToolsTestCase):
    """--csv, --json, --watch."""

    def test_csv(self):
        # pure CSV: the heading row first, no title lines
        out = self.ok("stat", "-c", "--csv")
        lines = out.splitlines()
        self.assertEqual(lines[0], '"id","host","container","role","proto","dir",'
                                   '"security","authentication","tenant","last dlv",'
                                   '"uptime"')
        if self.fake:
            self.assertEqual(lines[1], '"1","127.0.0.1:40001","client-one","normal",'
                                       '"amqp","in","no-security","anonymous-user","",'
                                       '"000:00:00:05","000:01:02:06"')
        out = self.ok("stat", "-g", "--csv")
        self.assertEqual(out.splitlines()[0], '"attr","value"')
        self.assertRegex(out, r'"Router Id","[^"]+"')
        # the titles only with --title
        out = self.ok("stat", "-c", "--csv", "--title")
        lines = out.splitlines()
        self.assertRegex(lines[0], r" UTC$")
        at = lines.index("Connections")
        self.assertTrue(lines[at + 1].startswith('"id","host"'), out)

    def test_json(self):
        doc = json.loads(self.ok("stat", "-a", "--json"))
        self.assertEqual(doc["view"], "addresses")
        self.assertEqual(doc["tables"][0]["title"], "Router Addresses")
        self.assertEqual(doc["tables"][0]["columns"][:4], ["class", "addr", "phs", "distrib"])
        if self.fake:
            self.assertEqual(doc["router"], "FAKE")
            rows = {r[1]: r for r in doc["tables"][0]["rows"]}
            self.assertEqual(rows["examples"][7], 1500)  # numbers stay numbers
        doc = json.loads(self.ok("stat", "-g", "--json"))
        self.assertEqual(doc["tables"][0]["columns"], ["attr", "value"])

    def test_watch_count(self):
        proc = self.tool("stat", "-g", "--watch", "0.2", "--count", "2")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(re.findall(r"^Router Statistics$", proc.stdout, re.M)), 2)
        self.assertEqual(len(re.findall(r" UTC$", proc.stdout, re.M)), 2)
        if self.fake:
            self.assertEqual(len(self.fake.operations("QUERY")), 4)  # view + id, twice

    def test_watch_json_count(self):
        docs = [json.loads(chunk) for chunk in
                re.split(r"(?<=\n})\n(?=\{)", self.ok("stat", "-c", "--json", "--watch", "0.1",
                                                       "--count", "3").strip())]
        self.assertEqual(len(docs), 3)


class StatRoutingTest(ToolsTestCase):
    """-r ROUTER and --all-routers choose the agent's address."""

    def test_router_option(self):
        self.require_fake()
        rows = dict(parse_table(self.ok("stat", "-g", "-r", "B"), "Router Statistics")[1])
        self.assertEqual(rows["Router Id"], "B")
        # first the attached router's agent is asked whether B is in its mesh
        self.assertEqual([(r["address"], r["properties"].get("operation"))
                          for r in self.fake.requests][:1],
                         [("$management", "GET-MGMT-NODES")])
        addresses = set(r["address"] for r in self.fake.requests[1:])
        self.assertEqual(addresses, {"_topo/0/B/$management"})

    def test_all_routers(self):
        self.require_fake()
        out = self.ok("stat", "-n", "--all-routers")
        self.assertRegex(out.splitlines()[0], r" UTC$")
        self.assertIn("Router  FAKE\n\nRouters in the Network", out)
        self.assertIn("Router  B\n\nRouters in the Network", out)
        addresses = [r["address"] for r in self.fake.requests]
        self.assertIn("_topo/0/FAKE/$management", addresses)
        self.assertIn("_topo/0/B/$management", addresses)
        docs = json.loads(self.ok("stat", "-c", "--all-routers", "--json"))
        self.assertEqual([d["router"] for d in docs], ["FAKE", "B"])


class StatErrorTest(ToolsTestCase):
    """Exit codes and one-line errors."""

    def test_usage_errors(self):
        for args in (["-g", "-c"], ["--count", "2"], ["--bogus"], ["--watch", "x"],
                     ["--csv", "--json"], ["--all-routers", "-r", "B"], ["--limit", "-1"],
                     ["--all-entities", "-c"]):
            proc = self.tool("stat", *args)
            self.assertOneLineError(proc, 2, r"^junction-stat: ")

    def test_timeout_0_refused_with_the_range_it_must_be_in(self):
        for bad in ("0", "-1", "1e7", "nan"):
            proc = self.tool("stat", "-t", bad)
            self.assertOneLineError(proc, 2, r"^junction-stat: argument -t/--timeout: must be a "
                                             r"number of seconds greater than 0 and at most "
                                             r"1000000, not '%s' \(try --help\)$" % re.escape(bad))

    def test_help_documents_every_option(self):
        out = self.ok("stat", "--help", bus=False)
        for opt in ("-g", "-c", "-l", "-n", "-e", "-a", "-m", "-p", "--autolinks",
                    "--linkroutes", "--log", "--all-entities", "--csv", "--json", "--watch",
                    "--count", "--limit",
                    "-v", "--all-routers", "-r", "-d", "-b", "-t", "--sasl-mechanisms",
                    "--sasl-username", "--sasl-password", "--ssl-certificate", "--ssl-key",
                    "--ssl-trustfile", "--ssl-password", "--page-size"):
            self.assertRegex(out, r"(^|\s|,)%s[\s,]" % re.escape(opt), opt)

    def test_connection_refused(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # bound, not listening: refused
            proc = self.tool("stat", "-g", url="amqp://127.0.0.1:%d" % port)
        self.assertOneLineError(proc, 1, r"^junction-\w+: cannot connect to amqp://127\.0\.0\.1:%d: "
                                         r"connection refused$" % port)

    def test_silent_peer_times_out(self):
        """A listener that accepts and never speaks: no hang past -t."""
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(4)
        self.addCleanup(srv.close)
        held = []

        def accept():
            try:
                while True:
                    held.append(srv.accept()[0])
            except OSError:
                pass
        threading.Thread(target=accept, daemon=True).start()
        self.addCleanup(lambda: [c.close() for c in held])
        proc = self.tool("stat", "-g", "-t", "1", url="127.0.0.1:%d" % srv.getsockname()[1])
        self.assertOneLineError(proc, 1, r"^junction-\w+: cannot connect to amqp://127\.0\.0\.1:\d+: "
                                         r"no answer within 1 s$")
        self.assertLess(proc.elapsed, 10)

    def test_agent_that_never_replies(self):
        agent = self.start_fake(silent=True)
        proc = self.tool("stat", "-g", "-t", "1", url=agent.url)
        self.assertOneLineError(proc, 1, r"^junction-\w+: no reply from \$management at "
                                         r"amqp://127\.0\.0\.1:\d+ within 1 s")
        self.assertLess(proc.elapsed, 10)


if __name__ == "__main__":
    unittest.main()
