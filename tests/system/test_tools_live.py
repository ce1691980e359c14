#!/usr/bin/python3
"""junction-manage and junction-stat against real junctiond processes (issue
"management", Tests): the tools run as subprocesses from the source tree and
their output is checked against what the routers really do.

* a listener made with `junction-manage create` carries traffic;
* an address made multicast at run time fans a message out to two receivers;
* a sender's link deliveryCount (and its outcome counts) move by exactly the
  number of messages sent, seen by `query --type link` and `junction-stat -l`;
* deleting a connector closes its connection (`junction-stat -c`);
* `junction-stat -n` on a three-router line A-B-C, from A, from C through the
  mesh (`-r C`) and for every router (`--all-routers`); `-a` counts a
  consumer on another router as remote;
* `-g`, `-m`, `--log`, `--csv`, `--json` on a live router;
* every refused request exits 1 with one line, usage errors exit 2, and a
  router that is not there is "connection refused".

127.0.0.1 only; every router is stopped at cleanup; every wait is bounded.
"""

import csv
import io
import json
import os
import re
import socket
import subprocess
import time
import unittest

from proton import Delivery, Message
from proton.utils import BlockingConnection

from harness import PYTHON, SLOW, SOURCE_DIR, Recv, RouterTestCase, Scenario, Send, Traffic, \
    free_port, seq_message
from mesh import Mesh
from test_tools_stat import parse_table

TOOLS = os.path.join(SOURCE_DIR, "tools")
TOOL_TIMEOUT = 20.0 * SLOW
P = "org.apache.qpid.dispatch."


class ToolRun:
    """What a tool run gave: exit code, stdout, stderr."""

    def __init__(self, argv, proc):
        self.argv = argv
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def __repr__(self):
        return "%s -> %d\nstdout: %s\nstderr: %s" % (" ".join(self.argv), self.code, self.out,
                                                    self.err)


class LiveCase(RouterTestCase):

    def tool(self, name, *args, url=None):
        argv = [PYTHON, os.path.join(TOOLS, "junction-" + name)]
        if url:
            argv += ["-b", url]
        argv += [str(a) for a in args]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=TOOL_TIMEOUT,
                              stdin=subprocess.DEVNULL)
        return ToolRun(argv, proc)

    def ok(self, name, *args, url=None):
        run = self.tool(name, *args, url=url)
        self.assertEqual(run.code, 0, "%r\n%s" % (run, self.logs()))
        return run.out

    def manage_json(self, *args, url=None):
        return json.loads(self.ok("manage", *args, url=url))

    def assertError(self, run, code, pattern):
        self.assertEqual(run.code, code, repr(run))
        lines = run.err.splitlines()
        self.assertEqual(len(lines), 1, "one line: %r" % run)
        self.assertRegex(lines[0], pattern)
        self.assertEqual(run.out, "", repr(run))

    def wait_for(self, what, fn, timeout=10.0):
        deadline = time.monotonic() + timeout * SLOW
        while True:
            value = fn()
            if value:
                return value
            if time.monotonic() > deadline:
                self.fail("%s: not within %.0f s\n%s" % (what, timeout * SLOW, self.logs()))
            time.sleep(0.1)


def table(text, title):
    """(headings, rows) of a junction-stat table; ([], []) when the table
    has no rows (only its title is printed)."""
    lines = text.splitlines()
    if title not in lines:
        raise AssertionError("no table %r in:\n%s" % (title, text))
    at = lines.index(title)
    if at + 1 >= len(lines) or not lines[at + 1].startswith("  "):
        return [], []
    return parse_table(text, title)


def accepting(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


# --------------------------------------------------------------------------

class ManageLiveTest(LiveCase):
    """Entities made and removed with junction-manage take effect."""

    def test_create_listener_and_connect_through_it(self):
        r = self.start_router()
        port = free_port()
        created = self.manage_json("create", "--type", "listener", "--name", "extra",
                                   "host=127.0.0.1", "port=%d" % port, "authenticatePeer=false",
                                   "saslMechanisms=ANONYMOUS", url=r.url)
        self.assertEqual((created["name"], created["port"], created["type"]),
                         ("extra", str(port), P + "listener"))
        names = [x.get("name") for x in self.manage_json("query", "--type", "listener",
                                                         url=r.url)]
        self.assertIn("extra", names)
        self.wait_for("the new listener accepts", lambda: accepting(port))
        url = "amqp://127.0.0.1:%d" % port
        t = self.run_scenario(Traffic(None, [Recv("via.extra", url=url)],
                                      [Send("via.extra", [seq_message(i) for i in range(3)],
                                            url=url)], 3))
        self.assertEqual(sorted(m.properties["seq"] for m in t.receivers[0].messages),
                         [0, 1, 2])
        # the tools themselves go through it too
        heads, rows = parse_table(self.ok("stat", "-c", url=url), "Connections")
        self.assertEqual(len(rows), 1)  # the tool's own connection
        self.assertEqual(rows[0][heads.index("dir")], "in")

    def test_multicast_address_applies(self):
        r = self.start_router()
        made = self.manage_json("create", "--type", "address", "--name", "fan-out",
                                "prefix=fan", "distribution=multicast", url=r.url)
        self.assertEqual(made["distribution"], "multicast")
        read = self.manage_json("read", "--type", "address", "--name", "fan-out", url=r.url)
        self.assertEqual(read, made)
        t = self.run_scenario(Traffic(None, [Recv("fan.x", url=r.url), Recv("fan.x", url=r.url)],
                                      [Send("fan.x", [Message(body="to both")], url=r.url)], 2))
        self.assertEqual([[m.body for m in x.messages] for x in t.receivers],
                         [["to both"], ["to both"]])
        self.assertEqual(t.senders[0].outcomes[0][0], Delivery.ACCEPTED)
        self.ok("manage", "delete", "--type", "address", "--name", "fan-out", url=r.url)
        run = self.tool("manage", "read", "--type", "address", "--name", "fan-out", url=r.url)
        self.assertError(run, 1, r"^junction-\w+: NotFoundStatus: ")

    def test_delete_connector_closes_its_connection(self):
        far = self.start_router()
        near = self.start_router()
        far_port = far.port

        def outgoing():
            heads, rows = table(self.ok("stat", "-c", url=near.url), "Connections")
            return [row for row in rows if row[heads.index("dir")] == "out"]

        self.assertEqual(outgoing(), [])
        self.ok("manage", "create", "--type", "connector", "--name", "to-far", "host=127.0.0.1",
                "port=%d" % far_port, "saslMechanisms=ANONYMOUS", url=near.url)
        rows = self.wait_for("the connector's connection", outgoing)
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0][1], "127.0.0.1:%d" % far_port)  # host column
        run = self.tool("manage", "delete", "--type", "connector", "--name", "to-far",
                        url=near.url)
        self.assertEqual((run.code, run.out, run.err), (0, "", ""))
        self.wait_for("the connection gone", lambda: outgoing() == [])
        self.assertEqual([c.get("name") for c in
                          self.manage_json("query", "--type", "connector", url=near.url)], [])


class LinkCounting(Scenario):
    """A receiver and a sender on one connection; the tools are run (inside
    the reactor: the router does not need this client to answer them)
    before the sender sends and after every message is settled."""

    def __init__(self, case, url, address, n):
        super().__init__(timeout=60.0)
        self.case, self.url, self.address, self.n = case, url, address, n
        self.snapshots = []
        self.sent = self.settled = 0
        self.ready = False

    def start(self):
        conn = self.connect(self.url)
        self.rcv = self.container.create_receiver(conn, self.address, name="count-recv")
        self.snd = self.container.create_sender(conn, self.address, name="count-send")

    def snapshot(self):
        links = self.case.manage_json("query", "--type", "link", url=self.url)
        table = self.case.ok("stat", "-l", "-v", url=self.url)
        self.snapshots.append((links, parse_table(table, "Router Links")))

    def on_link_opened(self, event):
        if event.link == self.rcv:
            event.link.flow(self.n)

    def on_sendable(self, event):
        if event.link != self.snd:
            return
        if not self.ready:
            self.ready = True
            self.snapshot()
        while self.snd.credit > 0 and self.sent < self.n:
            self.snd.send(Message(body=self.sent))
            self.sent += 1

    def on_message(self, event):
        event.delivery.update(Delivery.ACCEPTED)
        event.delivery.settle()

    def on_settled(self, event):
        if event.link == self.snd:
            self.settled += 1
            if self.settled == self.n:
                self.snapshot()
                self.done()

    def progress(self):
        return "sent %d, settled %d" % (self.sent, self.settled)


class LinkCountersTest(LiveCase):

    def test_sender_delivery_count_moves_by_messages_sent(self):
        r = self.start_router()
        n = 7
        s = self.run_scenario(LinkCounting(self, r.url, "count.q", n))
        self.assertEqual(len(s.snapshots), 2)
        names = {"in": s.snd.name, "out": s.rcv.name}

        def by_name(links, name):
            rows = [x for x in links if x.get("linkName") == name]
            self.assertEqual(len(rows), 1, "link %s in %s" % (name, links))
            return rows[0]

        (before, (heads, rows_before)), (after, (_, rows_after)) = s.snapshots
        for d, name in names.items():
            b, a = by_name(before, name), by_name(after, name)
            self.assertEqual((a["linkDir"], a["linkType"], a["owningAddr"]),
                             (d, "endpoint", "M0count.q"))
            self.assertEqual(a["deliveryCount"] - b["deliveryCount"], n, d)
            self.assertEqual(a["acceptedCount"] - b["acceptedCount"], n, d)
            for k in ("rejectedCount", "releasedCount", "modifiedCount", "unsettledCount"):
                self.assertEqual(a[k], 0, "%s %s" % (d, k))
        # junction-stat -l -v shows the same (its last column is the name)
        col = {h: i for i, h in enumerate(heads)}

        def stat_row(rows, name):
            found = [x for x in rows if x[col["name"]] == name]
            self.assertEqual(len(found), 1, "%s in %s" % (name, rows))
            return found[0]

        for d, name in names.items():
            b, a = stat_row(rows_before, name), stat_row(rows_after, name)
            self.assertEqual(int(a[col["deliv"]]) - int(b[col["deliv"]]), n)
            self.assertEqual(int(a[col["acc"]]) - int(b[col["acc"]]), n)
            self.assertEqual((a[col["dir"]], a[col["class"]], a[col["addr"]], a[col["phs"]]),
                             (d, "mobile", "count.q", "0"))
            self.assertEqual(a[col["unsett"]], "0")
        # the address counted them too: n in, n out
        addr = [x for x in self.manage_json("query", "--type", "router.address", url=r.url)
                if x["name"] == "M0count.q"]
        if addr:  # gone once its links are (the scenario closed them)
            self.assertEqual((addr[0]["deliveriesIngress"], addr[0]["deliveriesEgress"]), (n, n))


class StatLiveTest(LiveCase):
    """The views on one live router."""

    def test_general(self):
        r = self.start_router()
        out = self.ok("stat", "-g", url=r.url)
        lines = out.splitlines()
        self.assertRegex(lines[0], r" UTC$")
        self.assertEqual(lines[1], "R0")
        rows = dict(parse_table(out, "Router Statistics")[1])
        self.assertEqual((rows["Router Id"], rows["Mode"], rows["Area"], rows["Nodes"]),
                         ("R0", "standalone", "0", "0"))
        self.assertEqual(rows["Worker Threads"], "2")
        self.assertRegex(rows["Uptime"], r"^000:00:\d\d:\d\d$")
        self.assertRegex(rows["Links"], r"^\d+$")  # plain digits, not ulong(2)
        self.assertEqual(rows["Connections"], "1")  # the tool's own

    def test_connections_uptime(self):
        r = self.start_router()
        c = BlockingConnection(r.url, timeout=10 * SLOW)
        try:
            time.sleep(1.2)
            heads, rows = parse_table(self.ok("stat", "-c", url=r.url), "Connections")
            mine = [x for x in rows
                    if x[heads.index("container")] == c.container.container_id]
            self.assertEqual(len(mine), 1, rows)
            self.assertRegex(mine[0][heads.index("uptime")], r"^000:00:00:0[1-9]$")
            self.assertEqual(mine[0][heads.index("role")], "normal")
        finally:
            c.close()

    def test_memory(self):
        r = self.start_router()
        out = self.ok("stat", "-m", url=r.url)
        heads, rows = parse_table(out, "Types")
        self.assertEqual(heads[:3], ["type", "size", "batch"])
        self.assertIn("jn_delivery", [x[0] for x in rows])
        heads, rows = parse_table(out, "Summary")
        self.assertEqual(heads, ["VmSize", "Pooled"])
        self.assertRegex(rows[0][0], r"^\d+(\.\d+)? [KMGTP]iB$")  # ASan: TiB

    def test_log(self):
        r = self.start_router()
        lines = self.ok("stat", "--log", url=r.url).splitlines()
        self.assertTrue(lines)
        for line in lines:
            self.assertRegex(line, r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} \S+ \(\w+\) ")
        self.assertTrue(any("Listening" in x or "listen" in x.lower() for x in lines), lines)
        self.assertEqual(len(self.ok("stat", "--log", "--limit", "2", url=r.url).splitlines()), 2)

    def test_csv_and_json_parse(self):
        r = self.start_router()
        for view in ("-g", "-c", "-l", "-a", "-m"):
            text = self.ok("stat", view, "--csv", url=r.url)
            # pure CSV: tables (a heading row, then rows) separated by an
            # empty line, no title lines
            for block in text.strip("\n").split("\n\n"):
                rows = list(csv.reader(io.StringIO(block)))
                self.assertGreater(len(rows[0]), 1, "not a heading row: %r" % text)
                for row in rows[1:]:  # every data row as wide as its heading row
                    self.assertEqual(len(row), len(rows[0]), row)
            doc = json.loads(self.ok("stat", view, "--json", url=r.url))
            self.assertEqual(doc["router"], "R0")
            for t in doc["tables"]:
                for row in t["rows"]:
                    self.assertEqual(len(row), len(t["columns"]))
        doc = json.loads(self.ok("stat", "-g", "--json", url=r.url))
        values = dict(doc["tables"][0]["rows"])
        self.assertIsInstance(values["Connections"], int)


class ErrorLiveTest(LiveCase):
    """Refusals, usage errors and a router that is not there."""

    def test_bad_requests_exit_1(self):
        r = self.start_router()
        for args, pattern in (
                (["query", "--type", "nosuchtype"], r"^junction-\w+: BadRequestStatus: No such entity type"),
                (["read", "--type", "nosuchtype", "--name", "x"], r"^junction-\w+: BadRequestStatus: "),
                (["query", "--type", "connection", "bogusAttribute"],
                 r"^junction-\w+: NotFoundStatus: Unknown attributes \['bogusAttribute'\]"),
                (["create", "--type", "address", "--name", "a1", "prefix=p", "bogusAttr=1"],
                 r"^junction-\w+: BadRequestStatus: "),
                (["read", "--type", "address"], r"^junction-\w+: BadRequestStatus: No name or identity"),
                (["update", "--type", "log", "--name", "log/NOSUCH", "enable=info+"],
                 r"^junction-\w+: NotFoundStatus: "),
                (["read", "--type", "address", "--name", "nothere"], r"^junction-\w+: NotFoundStatus: "),
                (["create", "--type", "address", "--name", "a2", "prefix=p",
                  "distribution=sideways"], r"^junction-\w+: BadRequestStatus: "),
                (["create", "--type", "listener", "--name", "l2", "host=127.0.0.1",
                  "port=notaport"], r"^junction-\w+: BadRequestStatus: "),
                (["update", "--type", "log", "--name", "log/DEFAULT", "enable=loud"],
                 r"^junction-\w+: BadRequestStatus: "),
                (["delete", "--type", "connection", "--identity", "1"],  # 403, as 1.19
                 r"^junction-\w+: ForbiddenStatus: ")):
            self.assertError(self.tool("manage", *args, url=r.url), 1, pattern)
        self.assertError(self.tool("stat", "-n", "-r", "NOSUCH", "-t", "2", url=r.url), 1,
                         r"NOSUCH")
        # the router is still there and unchanged
        self.assertEqual(self.manage_json("query", "--type", "address", url=r.url), [])

    def test_usage_errors_exit_2(self):
        r = self.start_router()
        for name, args in (("manage", []), ("manage", ["delete", "--type", "address"]),
                           ("manage", ["create", "--type", "listener", "cost=many"]),
                           ("manage", ["--bogus", "query"]), ("stat", ["-g", "-c"]),
                           ("stat", ["--csv", "--json"]), ("stat", ["--limit", "-1"]),
                           ("stat", ["--all-routers", "-r", "B"])):
            self.assertError(self.tool(name, *args, url=r.url), 2, r"^junction-%s: " % name)

    def test_router_not_there(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # bound, not listening: refused
            for name, args in (("manage", ["query"]), ("stat", ["-c"])):
                run = self.tool(name, *args, url="amqp://127.0.0.1:%d" % port)
                self.assertError(run, 1, r"^junction-\w+: cannot connect to amqp://127\.0\.0\.1:%d: "
                                         r"connection refused$" % port)


class MeshLiveTest(LiveCase):
    """A line of three interior routers, A - B - C."""

    def setUp(self):
        super().setUp()
        self.m = Mesh(self, ["A", "B", "C"], [("A", "B", 1), ("B", "C", 1)]).start()

    def nodes(self, *args, router="A"):
        out = self.ok("stat", "-n", "-v", *args, url=self.m[router].url)
        return out, parse_table(out, "Routers in the Network")

    def test_nodes_from_a(self):
        out, (heads, rows) = self.nodes()
        self.assertEqual(out.splitlines()[1], "A")
        self.assertEqual(heads, ["router-id", "next-hop", "link", "ver", "cost", "neighbors",
                                 "valid-origins"])
        got = {x[0]: x[1:5] for x in rows}
        self.assertEqual(sorted(got), ["A", "B", "C"])
        self.assertEqual(got["A"][0], "(self)")
        self.assertEqual(got["B"][0], "-")  # a neighbour: reached over its link
        self.assertRegex(got["B"][1], r"^\d+$")
        self.assertEqual(got["C"][:2], ["B", "-"])  # through B
        self.assertEqual((got["B"][3], got["C"][3]), ("1", "2"))  # costs
        self.assertEqual(rows[[x[0] for x in rows].index("A")][5], "['B']")

    def test_nodes_of_c_through_the_mesh(self):
        out, (heads, rows) = self.nodes("-r", "C")
        self.assertEqual(out.splitlines()[1], "C")  # the id of the router answering
        got = {x[0]: x[1:5] for x in rows}
        self.assertEqual(got["C"][0], "(self)")
        self.assertEqual(got["B"][0], "-")
        self.assertEqual(got["A"][:2], ["B", "-"])
        self.assertEqual((got["B"][3], got["A"][3]), ("1", "2"))

    def test_all_routers(self):
        nodes = self.manage_json("get-mgmt-nodes", url=self.m["A"].url)
        self.assertEqual(sorted(nodes), ["amqp:/_topo/0/%s/$management" % x for x in "ABC"])
        out = self.ok("stat", "-n", "--all-routers", url=self.m["A"].url)
        sections = re.split(r"^Router  (\S+)\n\n", out, flags=re.M)
        self.assertRegex(sections[0].strip(), r" UTC$")
        by_router = dict(zip(sections[1::2], sections[2::2]))
        self.assertEqual(sorted(by_router), ["A", "B", "C"])
        for rid, text in by_router.items():
            _, rows = parse_table(text, "Routers in the Network")
            got = {x[0]: x[1] for x in rows}
            self.assertEqual(got[rid], "(self)")
            want = {"A": {"B": "-", "C": "B"}, "B": {"A": "-", "C": "-"},
                    "C": {"B": "-", "A": "B"}}[rid]
            self.assertEqual({k: v for k, v in got.items() if k != rid}, want, rid)
        docs = json.loads(self.ok("stat", "-g", "--all-routers", "--json",
                                  url=self.m["A"].url))
        self.assertEqual(sorted(d["router"] for d in docs), ["A", "B", "C"])
        for d in docs:
            values = dict(d["tables"][0]["rows"])
            self.assertEqual((values["Router Id"], values["Mode"], values["Nodes"]),
                             (d["router"], "interior", 2))

    def test_remote_consumer_counts_as_remote(self):
        c = BlockingConnection(self.m["C"].url, timeout=10 * SLOW)
        try:
            c.create_receiver("far.q")
            self.m.wait_address("M0far.q", {"C"})
            heads, rows = parse_table(self.ok("stat", "-a", url=self.m["A"].url),
                                      "Router Addresses")
            row = [x for x in rows if x[heads.index("addr")] == "far.q"]
            self.assertEqual(len(row), 1, rows)
            cells = dict(zip(heads, row[0]))
            self.assertEqual((cells["class"], cells["phs"], cells["local"], cells["remote"]),
                             ("mobile", "0", "0", "1"))
            addr = [x for x in self.manage_json("query", "--type", "router.address",
                                                url=self.m["A"].url) if x["name"] == "M0far.q"]
            self.assertEqual((addr[0]["remoteCount"], addr[0]["remoteHostRouters"]), (1, ["C"]))
            # on C the consumer is local
            heads, rows = parse_table(self.ok("stat", "-a", "-r", "C", url=self.m["A"].url),
                                      "Router Addresses")
            cells = dict(zip(heads, [x for x in rows if x[heads.index("addr")] == "far.q"][0]))
            self.assertEqual((cells["local"], cells["remote"]), ("1", "0"))
            # the routers' own addresses: R<id> with the router as remote host
            by_key = {x["name"]: x for x in self.manage_json("query", "--type", "router.address",
                                                             url=self.m["A"].url)}
            self.assertEqual(by_key["RC"]["remoteHostRouters"], ["C"])
        finally:
            c.close()

    def test_address_counters_along_the_line(self):
        """n messages from A to a consumer on C: A counts them in and on to
        another router, B only passes them on, C counts them out."""
        n = 5
        counts = {}

        def snapshot():
            for rid in "ABC":
                rows = self.manage_json("query", "--type", "router.address", "-r", rid,
                                        url=self.m["A"].url)
                counts[rid] = [x for x in rows if x["name"] == "M0thru.q"]

        t = self.run_scenario(SnapshotTraffic(
            lambda: self.m.wait_address("M0thru.q", {"C"}), snapshot,
            [Recv("thru.q", url=self.m["C"].url)],
            [Send("thru.q", [seq_message(i) for i in range(n)], url=self.m["A"].url)], n))
        self.assertEqual({t.senders[0].outcomes[i][0] for i in range(n)}, {Delivery.ACCEPTED})
        names = ("deliveriesIngress", "deliveriesTransit", "deliveriesEgress", "subscriberCount",
                 "remoteCount")
        got = {rid: tuple(rows[0][k] for k in names) for rid, rows in counts.items()}
        self.assertEqual(got, {"A": (n, n, 0, 0, 1), "B": (0, n, 0, 0, 1), "C": (0, 0, n, 1, 0)})


class SnapshotTraffic(Traffic):
    """Traffic whose senders start once wait_ready() returns, and which
    calls snapshot() once everything is received and settled, while the
    receivers are still attached."""

    def __init__(self, wait_ready, snapshot, receivers, senders, expect):
        super().__init__(None, receivers, senders, expect, timeout=60.0)
        self.wait_ready, self.snapshot = wait_ready, snapshot
        self.snapped = False

    def receiver_opened(self, r, link):
        if not r.opened:
            r.opened = True
            link.flow(r.credit)

    def tick(self):
        if not self._senders_started and all(x.opened for x in self.receivers):
            self.wait_ready()  # bounded; blocks this reactor briefly
            self._start_senders()
        if self._complete_at is not None and not self.snapped:
            self.snapped = True
            self.snapshot()  # runs the tools; the routers do not need this client
        super().tick()


if __name__ == "__main__":
    unittest.main()
