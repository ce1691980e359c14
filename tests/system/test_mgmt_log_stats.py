#!/usr/bin/python3
"""System test: logStats, one row per log module with the lines it wrote
at each level (1.19's entity; router/mgmt/log_stats.c).

Starts a real junctiond (harness.py) and queries `$management` as
qdmanage does (python3-qpid-proton's SyncRequestResponse).
"""
import unittest

from proton import Message
from proton.utils import BlockingConnection, SyncRequestResponse

from harness import SLOW, RouterTestCase

PREFIX = "org.apache.qpid.dispatch."
TIMEOUT = 10 * SLOW
LEVELS = ("traceCount", "debugCount", "infoCount", "noticeCount", "warningCount",
          "errorCount", "criticalCount")


class LogStatsTest(RouterTestCase):

    def call(self, client, props, body=None):
        reply = client.call(Message(body={} if body is None else body, properties=props))
        return reply.properties["statusCode"], reply.properties["statusDescription"], reply.body

    def stats(self, client):
        code, desc, body = self.call(client, {"operation": "QUERY", "type": "org.amqp.management",
                                              "name": "self", "entityType": PREFIX + "logStats"})
        self.assertEqual(code, 200, desc)
        return {row["name"]: row for row in
                (dict(zip(body["attributeNames"], r)) for r in body["results"])}

    def test_each_module_counts_the_lines_it_wrote(self):
        """QUERY logStats lists every log module (ROUTER ... DEFAULT) with
        identity logStats/<module> and its seven counts; a refused
        management request (the agent logs one error line for it) adds
        exactly one to AGENT's errorCount; READ by identity answers the
        same row."""
        r = self.start_router()
        conn = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(conn.close)
        client = SyncRequestResponse(conn, "$management")
        before = self.stats(client)
        for module in ("ROUTER", "AGENT", "SERVER", "DEFAULT"):
            self.assertIn(module, before)
            self.assertEqual(before[module]["identity"], "logStats/" + module)
            self.assertEqual(before[module]["type"], PREFIX + "logStats")
            for level in LEVELS:
                self.assertGreaterEqual(before[module][level], 0, (module, level))
        self.assertGreater(before["SERVER"]["noticeCount"], 0, before["SERVER"])
        code, _, _ = self.call(client, {"operation": "READ", "type": PREFIX + "listener",
                                        "name": "no-such-listener"})
        self.assertEqual(code, 404)
        after = self.stats(client)
        self.assertEqual(after["AGENT"]["errorCount"], before["AGENT"]["errorCount"] + 1)
        code, desc, row = self.call(client, {"operation": "READ", "type": PREFIX + "logStats",
                                             "identity": "logStats/AGENT"})
        self.assertEqual(code, 200, desc)
        self.assertEqual((row["name"], row["errorCount"]), ("AGENT", after["AGENT"]["errorCount"]))


if __name__ == "__main__":
    unittest.main()
