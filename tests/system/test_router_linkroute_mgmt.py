#!/usr/bin/python3
"""Link routes and auto-links in management and junction-stat (issue 16;
docs/design.md, "Link routes and auto-links"), against a live junctiond,
no broker needed.

- Bad input to CREATE gets qdrouterd 1.19's 400 descriptions: an autoLink
  without address or direction ("address and direction fields are
  mandatory"), with a phase out of 0..9, with both connection and
  containerId; a linkRoute without direction, with both or neither of
  prefix and pattern, with a name already taken (a second link route with
  a prefix already routed is kept, as in 1.19), a pattern with no tokens
  (only separators). Nothing refused is kept.
- Identities of linkRoute, autoLink (router.config.*) and link entities
  come from one counter, as 1.19's: config entities made at start-up are
  1, 2, ...; one created later is numbered past the links that exist.
- `junction-stat --linkroutes` and `--autolinks` print 1.19's columns
  (qdstat: address/dir/distrib/status, the two external-prefix columns
  when some route has one; addr/dir/phs/extAddr/link/status/lastErr) with
  the router's rows.
"""
import os
import subprocess
import unittest

from harness import SLOW, RouterTestCase, conf_section
from test_router_entities import LOGS, Manager, client_listener, router_section
from test_tools_stat import parse_table

TIMEOUT = 10 * SLOW
STAT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                    "junction-stat")
LR = "org.apache.qpid.dispatch.router.config.linkRoute"
AL = "org.apache.qpid.dispatch.router.config.autoLink"
LINK = "org.apache.qpid.dispatch.router.link"


class LinkRouteManagementTest(RouterTestCase):

    def start(self):
        config = (router_section("A") + client_listener() + LOGS +
                  conf_section("linkRoute", {"name": "lr1", "prefix": "brk", "direction": "in",
                                             "containerId": "nobody"}) +
                  conf_section("autoLink", {"name": "al1", "address": "q1", "direction": "out",
                                            "containerId": "nobody"}))
        r = self.start_router(config=config)
        m = Manager(r.url)
        self.addCleanup(m.close)
        return r, m

    def stat(self, r, *args):
        p = subprocess.run(["/usr/bin/python3", STAT, "-b", "127.0.0.1:%d" % r.port] + list(args),
                           capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_bad_input_gets_1_19_descriptions(self):
        r, m = self.start()
        cases = [
            (AL, {"address": "q2"}, "address and direction fields are mandatory"),
            (AL, {"direction": "in"}, "address and direction fields are mandatory"),
            (AL, {"address": "q2", "direction": "in", "phase": 12},
             "autoLink phase must be between 0 and 9"),
            (AL, {"address": "q2", "direction": "in", "connection": "c", "containerId": "x"},
             "Both connection and containerId cannot be specified. Specify only one"),
            (LR, {"prefix": "p"}, "No 'direction' attribute provided - it is mandatory"),
            (LR, {"prefix": "p", "pattern": "p.#", "direction": "in"},
             "Cannot specify both a 'prefix' and a 'pattern' attribute"),
            (LR, {"direction": "in"},
             "Either a 'prefix' or 'pattern' attribute must be provided"),
            (LR, {"pattern": "///", "direction": "in"},
             "linkRoute: attribute 'pattern' has no tokens"),
            # a number is not a pattern or prefix (1.19 refuses it too)
            (LR, {"pattern": 666, "direction": "in"}, "Pattern must be a non-empty string type"),
            (LR, {"prefix": 7, "direction": "out"}, "Prefix must be a non-empty string type"),
        ]
        for i, (etype, attrs, says) in enumerate(cases):
            with self.subTest(attrs=attrs):
                code, desc, _ = m.create(etype, "bad%d" % i, attrs)
                self.assertEqual((code, desc), (400, says))
        # a second link route with the same prefix and direction is kept,
        # as 1.19 does (test_router_linkroute_wire: both route); a second
        # of the same name is refused, with 1.19's words
        code, desc, _ = m.create(LR, "dup", {"prefix": "brk", "direction": "in"})
        self.assertEqual(code, 201, desc)
        code, desc, _ = m.create(LR, "dup", {"prefix": "other", "direction": "in"})
        self.assertEqual((code, desc), (400, "Name conflicts with an existing entity"))
        self.assertEqual(sorted(x["name"] for x in m.query(LR)), ["dup", "lr1"])
        self.assertEqual([x["name"] for x in m.query(AL)], ["al1"])

    def test_read_of_a_missing_link_route_or_auto_link_is_not_found(self):
        """READ of a linkRoute or autoLink that does not exist: 404 with
        1.19's description for these types, "Not Found"."""
        r, m = self.start()
        for etype in (LR, AL):
            with self.subTest(type=etype):
                code, desc, _ = m.call({"operation": "READ", "type": etype, "identity": "9999"})
                self.assertEqual((code, desc), (404, "Not Found"))

    def test_config_identities_share_the_links_counter(self):
        """The identities of router.config.* entities and of links come
        from one counter, as 1.19 numbers them (system_tests_link_routes
        test_aaa_qdmanage_query_link_route reads them by that): the
        linkRoute and autoLink of the config file, made before any link,
        are 1 and 2; an autoLink created once links exist (this manager's
        own two) gets a number past theirs, and is read back by it."""
        r, m = self.start()
        self.assertEqual([x["identity"] for x in m.query(LR, ["identity"])], ["1"])
        self.assertEqual([x["identity"] for x in m.query(AL, ["identity"])], ["2"])
        links = [int(x["identity"]) for x in m.query(LINK, ["identity"])]
        self.assertTrue(links and min(links) > 2, links)
        code, desc, body = m.create(AL, "al2", {"address": "q2", "direction": "in",
                                                "containerId": "nobody"})
        self.assertEqual(code, 201, desc)
        self.assertGreater(int(body["identity"]), max(links), (body, links))
        code, desc, again = m.call({"operation": "READ", "type": AL,
                                    "identity": body["identity"]})
        self.assertEqual((code, again["name"]), (200, "al2"), desc)
        all_ids = [x["identity"] for t in (LR, AL, LINK) for x in m.query(t, ["identity"])]
        self.assertEqual(len(all_ids), len(set(all_ids)), all_ids)

    def test_stat_linkroutes_and_autolinks_columns(self):
        r, m = self.start()
        heads, rows = parse_table(self.stat(r, "--linkroutes"), "Link Routes")
        self.assertEqual(heads, ["address", "dir", "distrib", "status"])
        self.assertEqual(rows, [["brk", "in", "linkBalanced", "inactive"]])
        heads, rows = parse_table(self.stat(r, "--autolinks"), "AutoLinks")
        self.assertEqual(heads, ["addr", "dir", "phs", "extAddr", "link", "status", "lastErr"])
        self.assertEqual(rows, [["q1", "out", "0", "", "", "inactive", ""]])
        # a route with an external prefix: the two columns appear
        code, desc, _ = m.create(LR, "lr2", {"pattern": "ext.#", "direction": "out",
                                             "containerId": "nobody",
                                             "addExternalPrefix": "/queue/"})
        self.assertEqual(code, 201, desc)
        heads, rows = parse_table(self.stat(r, "--linkroutes"), "Link Routes")
        self.assertEqual(heads, ["address", "dir", "distrib", "status", "add-ext-prefix",
                                 "del-ext-prefix"])
        self.assertEqual(rows, [["brk", "in", "linkBalanced", "inactive", "", ""],
                                ["ext.#", "out", "linkBalanced", "inactive", "/queue/", ""]])


if __name__ == "__main__":
    unittest.main()
