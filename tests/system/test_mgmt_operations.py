#!/usr/bin/python3
"""System tests: the operations the management agent serves are exactly
what GET-OPERATIONS lists for each entity type (router/config/schema.json's
"operations"; docs/design.md, "Management").

Each test starts a real junctiond (harness.py) and talks to `$management`
as qdmanage does (python3-qpid-proton's SyncRequestResponse).
"""
import time
import unittest

from proton import Message
from proton.utils import BlockingConnection, SyncRequestResponse

from harness import SLOW, RouterTestCase

PREFIX = "org.apache.qpid.dispatch."
NODE = PREFIX + "management"
TIMEOUT = 10 * SLOW
# An attribute no type has: a CREATE or UPDATE that the agent accepts as an
# operation is then refused for its body (400), so probing changes nothing.
PROBE_ATTR = "opsProbeNoSuchAttribute"


class Manager:
    """A management client on its own connection."""

    def __init__(self, router):
        self.conn = BlockingConnection(router.url, timeout=TIMEOUT)
        self.client = SyncRequestResponse(self.conn, "$management")

    def call(self, props, body=None):
        reply = self.client.call(Message(body={} if body is None else body, properties=props))
        return (reply.properties["statusCode"], reply.properties["statusDescription"],
                reply.body)

    def close(self):
        self.conn.close()


class OperationsTest(RouterTestCase):

    def manager(self, router):
        m = Manager(router)
        self.addCleanup(m.close)
        return m

    def operations(self, mgr):
        code, desc, body = mgr.call({"operation": "GET-OPERATIONS",
                                     "type": "org.amqp.management", "name": "self"})
        self.assertEqual(code, 200, desc)
        return body

    def test_every_type_serves_exactly_the_operations_get_operations_lists(self):
        """For every entity type GET-OPERATIONS lists and every operation
        any type lists (and one no type has): an operation the type lists
        is not refused as unsupported (no 403, 405 or 501); any other is
        refused, 501 (403 where 1.19 forbids it), with a description that
        names it. The management node's own operations (QUERY, GET-*) are
        answered whatever type a request names, and are checked in
        test_the_node_answers_each_of_its_operations."""
        r = self.start_router()
        mgr = self.manager(r)
        ops = self.operations(mgr)
        node_ops = set(ops[NODE]) - {"READ"}
        universe = sorted(set(o for l in ops.values() for o in l) - node_ops) + ["NOSUCHOP"]
        self.assertIn("CREATE", universe)
        self.assertIn("RELOAD", universe)
        wrong = []
        for etype in sorted(ops):
            for op in universe:
                props = {"operation": op, "type": etype, "name": "ops-probe"}
                body = {PROBE_ATTR: 1} if op in ("CREATE", "UPDATE") else {}
                code, desc, _ = mgr.call(props, body)
                listed = op in ops[etype]
                if listed and (code in (403, 405, 501) or "not implemented" in desc):
                    wrong.append("%s %s is listed but refused: %d %s" % (op, etype, code, desc))
                if not listed and (code not in (403, 501) or op not in desc):
                    wrong.append("%s %s is not listed but answered: %d %s"
                                 % (op, etype, code, desc))
        self.assertEqual(wrong, [])

    def test_the_node_answers_each_of_its_operations(self):
        """Each operation the management node lists (GET-OPERATIONS of
        management), sent as the tools send it (type org.amqp.management,
        name self), is answered 200."""
        r = self.start_router()
        mgr = self.manager(r)
        for op in self.operations(mgr)[NODE]:
            code, desc, _ = mgr.call({"operation": op, "type": "org.amqp.management",
                                      "name": "self"})
            self.assertEqual(code, 200, "%s: %s" % (op, desc))

    def test_connection_lists_update_and_profile_is_not_listed(self):
        """A connection lists UPDATE (how a connection is closed, which
        1.19 serves without listing it) and the node lists no PROFILE
        (1.19's Python profiler), which is refused 501."""
        r = self.start_router()
        mgr = self.manager(r)
        ops = self.operations(mgr)
        self.assertEqual(ops[PREFIX + "connection"], ["UPDATE", "READ"])
        self.assertEqual(ops[PREFIX + "router.link"], ["UPDATE", "READ"])
        self.assertNotIn("PROFILE", ops[NODE])
        code, desc, _ = mgr.call({"operation": "PROFILE", "type": "org.amqp.management",
                                  "name": "self"})
        self.assertEqual(code, 501, desc)
        self.assertIn("PROFILE", desc)

    def test_link_update_takes_enabled_and_refuses_disabled_by_name(self):
        """UPDATE of a router.link with adminStatus "enabled" answers the
        link's map (200, nothing to change); "disabled", which Junction
        cannot do, is refused 400 naming adminStatus, and the link stays;
        a body without adminStatus is a bad request (as 1.19)."""
        r = self.start_router()
        mgr = self.manager(r)
        conn = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(conn.close)
        conn.create_receiver("ops.link.probe")
        code, desc, body = mgr.call({"operation": "QUERY", "type": "org.amqp.management",
                                     "name": "self", "entityType": PREFIX + "router.link"},
                                    {"attributeNames": ["identity", "owningAddr"]})
        self.assertEqual(code, 200, desc)
        ids = [row[0] for row in body["results"] if row[1] == "M0ops.link.probe"]
        self.assertEqual(len(ids), 1, body)
        update = {"operation": "UPDATE", "type": PREFIX + "router.link", "identity": ids[0]}
        code, desc, body = mgr.call(update, {"adminStatus": "enabled"})
        self.assertEqual(code, 200, desc)
        self.assertEqual((body["identity"], body["adminStatus"]), (ids[0], "enabled"))
        code, desc, _ = mgr.call(update, {"adminStatus": "disabled"})
        self.assertEqual(code, 400, desc)
        self.assertIn("adminStatus", desc)
        code, desc, _ = mgr.call(update, {})
        self.assertEqual(code, 400, desc)
        code, desc, body = mgr.call({"operation": "READ", "type": PREFIX + "router.link",
                                     "identity": ids[0]})
        self.assertEqual((code, body["adminStatus"]), (200, "enabled"), desc)

    def test_connection_deleted_by_management_goes_without_the_peers_close(self):
        """UPDATE of a connection with adminStatus "deleted" closes it
        (amqp:connection:forced) and it is gone from QUERY at once, even
        when its peer never answers the close (a client that does not read
        its socket cannot keep a connection management deleted)."""
        r = self.start_router()
        mgr = self.manager(r)
        quiet = BlockingConnection(r.url, timeout=TIMEOUT,
                                   properties={"ops-quiet-peer": 1})

        def close_quietly():
            try:
                quiet.close()
            except Exception:  # the router closed it: nothing to close
                pass
        self.addCleanup(close_quietly)

        def quiet_ids():
            code, desc, body = mgr.call({"operation": "QUERY", "type": "org.amqp.management",
                                         "name": "self", "entityType": PREFIX + "connection"},
                                        {"attributeNames": ["identity", "properties"]})
            self.assertEqual(code, 200, desc)
            return [row[0] for row in body["results"]
                    if row[1] and "ops-quiet-peer" in row[1]]

        ids = quiet_ids()
        self.assertEqual(len(ids), 1)
        code, desc, body = mgr.call({"operation": "UPDATE", "type": PREFIX + "connection",
                                     "identity": ids[0]}, {"adminStatus": "deleted"})
        self.assertEqual(code, 200, desc)
        # the quiet peer's BlockingConnection is not pumped: no close comes
        deadline = time.monotonic() + 2 * SLOW
        while quiet_ids() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(quiet_ids(), [])


if __name__ == "__main__":
    unittest.main()
