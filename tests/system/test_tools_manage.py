#!/usr/bin/python3
"""junction-manage: qdmanage's commands (query JSON shape, create/read/
update/delete round trips, --stdin, the get-* operations, custom
operations), QUERY paging (including servers that ignore offset or count,
which made 1.19's tools loop for ever), -r and URL paths, exit codes and
one-line errors.

Runs against the fake agent (mgmt_fake_agent.py) unless JN_TOOLS_TARGET
names a real router; tests that read canned values or the fake's request log
call require_fake().
"""

import json
import re
import socket
import unittest

from mgmt_fake_agent import LINK_COUNT, ToolsTestCase

P = "org.apache.qpid.dispatch."


class ManageQueryTest(ToolsTestCase):

    def test_query_shape(self):
        rows = json.loads(self.ok("manage", "query", "--type", "connection"))
        self.assertIsInstance(rows, list)
        self.assertTrue(rows, "the tool's own connection is there")
        for r in rows:
            self.assertIsInstance(r, dict)
            self.assertNotIn(None, r.values(), "null attributes are left out")
            self.assertEqual(r["type"], P + "connection")
        if self.fake:
            self.assertEqual(len(rows), 3)
            self.assertEqual(list(rows[0])[:4], ["name", "identity", "host", "role"])
            q = self.fake.operations("QUERY")[-1]["properties"]
            self.assertEqual(q["entityType"], P + "connection")
            self.assertEqual((q["name"], q["type"]), ("self", "org.amqp.management"))

    def test_query_named_attributes(self):
        out = self.ok("manage", "query", "--type", "router.address", "name", "distribution")
        rows = json.loads(out)
        self.assertTrue(rows)
        for r in rows:
            self.assertLessEqual(set(r), {"name", "distribution"})
        self.assertTrue(out.startswith("[\n  {\n    \""), "indent 2 as qdmanage: %r" % out[:20])
        one_line = self.ok("manage", "query", "--type", "router.address", "name",
                           "--indent", "-1")
        self.assertEqual(len(one_line.splitlines()), 1)

    def test_query_all_types(self):
        self.require_fake()
        rows = json.loads(self.ok("manage", "query"))
        types = set(r["type"] for r in rows)
        self.assertIn(P + "router.link", types)
        self.assertIn(P + "listener", types)
        self.assertNotIn("entityType", self.fake.operations("QUERY")[-1]["properties"])

    def test_type_expansion(self):
        """--type expands as qdmanage's does, from the schema's short names
        (and router.<name> for link and node)."""
        self.require_fake()
        for short, full in (("address", "router.config.address"), ("link", "router.link"),
                            ("node", "router.node"), ("autoLink", "router.config.autoLink"),
                            ("exchange", "router.config.exchange"),
                            ("binding", "router.config.binding"),
                            ("linkRoute", "router.config.linkRoute"),
                            ("logStats", "logStats"), ("vhost", "vhost"),
                            ("listener", "listener"), ("router.address", None)):
            self.ok("manage", "query", "--type", short)
            sent = self.fake.operations("QUERY")[-1]["properties"]["entityType"]
            self.assertEqual(sent, P + full if full else short)


class ManagePagingTest(ToolsTestCase):
    """QUERY rows come page by page; the loop always ends."""

    def test_pages_of_five(self):
        # A real router's links are the tool's own two (new ones each run):
        # pages of one row make it walk them page by page all the same.
        size = "5" if self.fake else "1"
        out5 = json.loads(self.ok("manage", "query", "--type", "router.link",
                                  "--page-size", size))
        out_all = json.loads(self.ok("manage", "query", "--type", "router.link"))
        if self.fake:
            self.assertEqual([r["identity"] for r in out5], [r["identity"] for r in out_all])
        else:
            self.assertEqual([(r["linkType"], r["linkDir"]) for r in out5],
                             [(r["linkType"], r["linkDir"]) for r in out_all])
            self.assertEqual(len(set(r["identity"] for r in out5)), len(out5))
        if self.fake:
            self.assertEqual(len(out5), LINK_COUNT)
            pages = [(q["properties"]["offset"], q["properties"]["count"])
                     for q in self.fake.operations("QUERY")[:-1]]
            self.assertEqual(pages, [(0, 5), (5, 5), (10, 5)])
            # no attribute names: the first page asks for at most 100 rows
            # until the columns are known (python3-qpid-proton decodes at
            # most ~65,535 values of a message; pages stay under 30,000)
            self.assertEqual(self.fake.operations("QUERY")[-1]["properties"]["count"], 100)

    def test_exact_multiple_of_page(self):
        self.require_fake()
        rows = json.loads(self.ok("manage", "query", "--type", "router.link",
                                  "--page-size", "6"))
        self.assertEqual(len(rows), LINK_COUNT)
        offsets = [q["properties"]["offset"] for q in self.fake.operations("QUERY")]
        self.assertEqual(offsets, [0, 6, 12])  # the last page is empty

    def test_stat_pages_too(self):
        self.require_fake()
        out = self.ok("stat", "-l", "--page-size", "5")
        self.assertEqual(len(re.findall(r"^  (endpoint|router-control) ", out, re.M)),
                         LINK_COUNT)

    def test_server_ignoring_offset_does_not_loop(self):
        """1.19's tools asked again after every full page: a server ignoring
        `offset` sent the same page for ever. Ours stop at the repeat."""
        agent = self.start_fake(ignore_offset=True)
        proc = self.tool("manage", "query", "--type", "router.link", "--page-size", "5",
                         url=agent.url, timeout=15)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = json.loads(proc.stdout)
        self.assertEqual([r["identity"] for r in rows], ["1", "2", "3", "4", "5"])
        self.assertEqual(len(agent.operations("QUERY")), 2)

    def test_server_ignoring_count(self):
        agent = self.start_fake(ignore_count=True)
        rows = json.loads(self.ok("manage", "query", "--type", "router.link", "--page-size",
                                  "5", url=agent.url))
        self.assertEqual(len(rows), LINK_COUNT)
        self.assertEqual(len(agent.operations("QUERY")), 1)


class ManageEntityTest(ToolsTestCase):
    """CREATE / READ / UPDATE / DELETE."""

    def test_address_create_read_delete(self):
        created = json.loads(self.ok("manage", "create", "--type", "address", "--name",
                                     "tools-a1", "prefix=tools.a1", "distribution=closest"))
        self.assertEqual(created["name"], "tools-a1")
        self.assertEqual(created["prefix"], "tools.a1")
        self.assertEqual(created["distribution"], "closest")
        self.assertEqual(created["type"], P + "router.config.address")
        by_name = json.loads(self.ok("manage", "read", "--type", "address", "--name",
                                     "tools-a1"))
        by_id = json.loads(self.ok("manage", "read", "--type", "address", "--identity",
                                   created["identity"]))
        self.assertEqual(by_name, created)
        self.assertEqual(by_id, created)
        listed = json.loads(self.ok("manage", "query", "--type", "address", "name"))
        self.assertIn({"name": "tools-a1"}, listed)
        proc = self.tool("manage", "delete", "--type", "address", "--name", "tools-a1")
        self.assertEqual((proc.returncode, proc.stdout, proc.stderr), (0, "", ""))
        proc = self.tool("manage", "read", "--type", "address", "--name", "tools-a1")
        self.assertOneLineError(proc, 1, r"^junction-\w+: NotFoundStatus: ")

    def test_update_round_trip(self):
        self.require_fake()
        self.ok("manage", "create", "--type", "dummy", "--name", "d1", "arg1=a", "num1=1")
        updated = json.loads(self.ok("manage", "update", "--type", "dummy", "--name", "d1",
                                     "arg1=b", "num1=2"))
        self.assertEqual((updated["arg1"], updated["num1"]), ("b", 2))
        self.assertEqual(json.loads(self.ok("manage", "read", "--type", "dummy", "--name",
                                            "d1")), updated)
        body = self.fake.operations("UPDATE")[-1]["body"]
        self.assertEqual(body, {"arg1": "b", "num1": 2})  # schema integer -> int
        self.ok("manage", "delete", "--type", "dummy", "--identity", updated["identity"])
        self.assertEqual(self.fake.operations("DELETE")[-1]["properties"],
                         {"operation": "DELETE", "type": P + "dummy",
                          "identity": updated["identity"]})

    def test_log_update(self):
        out = json.loads(self.ok("manage", "update", "--type", "log", "--identity",
                                 "log/DEFAULT", "enable=trace+"))
        self.assertEqual(out["enable"], "trace+")

    def test_create_value_conversion(self):
        self.require_fake()
        self.ok("manage", "create", "--type", "listener", "--name", "l1", "host=127.0.0.1",
                "port=5999", "cost=3", "authenticatePeer=false")
        req = self.fake.operations("CREATE")[-1]
        self.assertEqual(req["properties"], {"operation": "CREATE", "type": P + "listener",
                                             "name": "l1"})
        self.assertEqual(req["body"], {"host": "127.0.0.1", "port": "5999", "cost": 3,
                                       "authenticatePeer": False})

    def test_create_stdin(self):
        data = [{"type": "address", "name": "tools-s1", "prefix": "s1"},
                {"type": "address", "name": "tools-s2", "prefix": "s2"}]
        out = json.loads(self.ok("manage", "create", "--stdin", stdin=json.dumps(data)))
        self.assertEqual([o["name"] for o in out], ["tools-s1", "tools-s2"])
        self.assertEqual(out[0]["type"], P + "router.config.address")
        one = json.loads(self.ok("manage", "create", "--stdin", "--type", "address",
                                 stdin=json.dumps({"name": "tools-s3", "prefix": "s3"})))
        self.assertEqual(one["prefix"], "s3")
        for n in ("tools-s1", "tools-s2", "tools-s3"):
            self.ok("manage", "delete", "--type", "address", "--name", n)

    def test_create_error_status(self):
        proc = self.tool("manage", "create", "--type", "address", "--name", "bad",
                         "bogusAttr=1")
        self.assertOneLineError(proc, 1, r"^junction-\w+: BadRequestStatus: ")


class ManageNodeOpsTest(ToolsTestCase):
    """The node-level GET-* operations and custom operations."""

    def test_get_types(self):
        out = json.loads(self.ok("manage", "get-types"))
        self.assertIn(P + "listener", out)
        one = json.loads(self.ok("manage", "get-types", "--type", "listener"))
        self.assertEqual(list(one), [P + "listener"])
        self.assertIn(P + "entity", one[P + "listener"])

    def test_get_attributes_and_operations(self):
        attrs = json.loads(self.ok("manage", "get-attributes", "--type", "listener"))
        self.assertIn("port", attrs[P + "listener"])
        ops = json.loads(self.ok("manage", "GET-OPERATIONS", P + "listener"))
        self.assertEqual(sorted(ops[P + "listener"]), ["CREATE", "DELETE", "READ"])

    def test_get_mgmt_nodes(self):
        nodes = json.loads(self.ok("manage", "get-mgmt-nodes"))
        self.assertIsInstance(nodes, list)
        for n in nodes:
            self.assertRegex(n, r"^amqp:/_topo/0/[^/]+/\$management$")
        if self.fake:
            self.assertEqual(nodes, ["amqp:/_topo/0/FAKE/$management",
                                     "amqp:/_topo/0/B/$management"])

    def test_get_json_schema(self):
        schema = json.loads(self.ok("manage", "get-json-schema"))
        self.assertIn("listener", schema["entityTypes"])
        schema = json.loads(self.ok("manage", "get-schema"))
        self.assertEqual(schema["entityTypes"]["listener"]["fullyQualifiedType"],
                         P + "listener")

    def test_get_log(self):
        entries = json.loads(self.ok("manage", "get-log", "limit=2"))
        self.assertLessEqual(len(entries), 2)
        for e in entries:
            self.assertEqual(len(e), 6)
        if self.fake:
            self.assertEqual(self.fake.operations("GET-LOG")[-1]["properties"],
                             {"operation": "GET-LOG", "limit": "2"})

    def test_custom_operation(self):
        self.require_fake()
        proc = self.tool("manage", "NOSUCH-OP", "--type", "listener", "--name", "x", "a=1",
                         "--properties", '{"extra": true}')
        self.assertOneLineError(proc, 1, r"^junction-\w+: NotImplementedStatus: ")
        req = self.fake.operations("NOSUCH-OP")[-1]["properties"]
        self.assertEqual(req, {"operation": "NOSUCH-OP", "type": P + "listener", "name": "x",
                               "a": "1", "extra": True})


class ManageRoutingTest(ToolsTestCase):

    def test_router_option(self):
        self.require_fake()
        rows = json.loads(self.ok("manage", "query", "--type", "router", "id", "-r", "B"))
        self.assertEqual(rows, [{"id": "B"}])
        # first the attached router's agent is asked whether B is in its mesh
        self.assertEqual([(r["address"], r["properties"].get("operation"))
                          for r in self.fake.requests][:1],
                         [("$management", "GET-MGMT-NODES")])
        self.assertEqual(set(r["address"] for r in self.fake.requests[1:]),
                         {"_topo/0/B/$management"})

    def test_url_path_is_the_address(self):
        self.require_fake()
        url = self.fake.url + "/_topo/0/B/$management"
        rows = json.loads(self.ok("manage", "query", "--type", "router", "id", url=url))
        self.assertEqual(rows, [{"id": "B"}])

    def test_sasl_anonymous(self):
        rows = json.loads(self.ok("manage", "query", "--type", "router", "id",
                                  "--sasl-mechanisms", "ANONYMOUS"))
        self.assertEqual(len(rows), 1)


class ManageErrorTest(ToolsTestCase):

    def test_usage_errors(self):
        for args in ([], ["delete", "--type", "address"], ["--bogus", "query"],
                     ["read", "extra-arg", "--type", "address", "--name", "x"],
                     ["create", "--type", "listener", "cost=notanumber"],
                     ["query", "-t", "0"]):
            proc = self.tool("manage", *args)
            self.assertOneLineError(proc, 2, r"^junction-manage: ")

    def test_help_documents_every_option(self):
        out = self.ok("manage", "--help", bus=False)
        for opt in ("--type", "--name", "--identity", "--indent", "--stdin", "--body",
                    "--properties", "-b", "--bus", "-r", "--router", "-t", "--timeout",
                    "--sasl-mechanisms", "--sasl-username", "--sasl-password",
                    "--ssl-certificate", "--ssl-key", "--ssl-trustfile", "--ssl-password",
                    "--page-size"):
            self.assertRegex(out, r"(^|\s|,)%s[\s,]" % re.escape(opt), opt)
        for op in ("query", "create", "read", "update", "delete", "get-types",
                   "get-attributes", "get-operations", "get-mgmt-nodes", "get-json-schema",
                   "get-log"):
            self.assertIn("  " + op, out)

    def test_connection_refused(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            proc = self.tool("manage", "query", url="127.0.0.1:%d" % port)
        self.assertOneLineError(proc, 1, r"^junction-\w+: cannot connect to amqp://127\.0\.0\.1:%d: "
                                         r"connection refused$" % port)

    def test_reply_timeout(self):
        agent = self.start_fake(silent=True)
        proc = self.tool("manage", "get-types", "-t", "1", url=agent.url)
        self.assertOneLineError(proc, 1, r"^junction-\w+: no reply from \$management at "
                                         r"amqp://127\.0\.0\.1:\d+ within 1 s")
        self.assertLess(proc.elapsed, 10)

    def test_default_bus(self):
        """Without -b the tools go to amqp://127.0.0.1:5672 (refused or not,
        the message names it)."""
        proc = self.tool("manage", "get-types", "-t", "2", bus=False)
        if proc.returncode != 0:
            self.assertIn("amqp://127.0.0.1:5672", proc.stderr)


if __name__ == "__main__":
    unittest.main()
