#!/usr/bin/python3
"""System test: the router entity's workerThreads is the number of I/O
loops the router runs: the configured value when the file gives one, else
one per online core (docs/compat.md, "workerThreads defaults to the
number of cores").

Starts real junctiond processes (harness.py) and reads `$management` as
qdmanage does (python3-qpid-proton's SyncRequestResponse).
"""
import os
import unittest

from proton import Message
from proton.utils import BlockingConnection, SyncRequestResponse

from harness import SLOW, RouterTestCase, conf_section

TIMEOUT = 10 * SLOW


class WorkerThreadsTest(RouterTestCase):

    def shown(self, r):
        conn = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(conn.close)
        reply = SyncRequestResponse(conn, "$management").call(Message(
            body={"attributeNames": ["workerThreads"]},
            properties={"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                        "entityType": "org.apache.qpid.dispatch.router"}))
        self.assertEqual(reply.properties["statusCode"], 200)
        return reply.body["results"][0][0]

    def running(self, r):
        return [line for line in r.log().splitlines() if "Threads Running" in line]

    def test_configured_worker_threads_are_shown_and_run(self):
        """workerThreads: 3 in the file: management shows 3 and the router
        runs 3 loops (its "Operational, 3 Threads Running" notice)."""
        r = self.start_router(worker_threads=3)
        self.assertEqual(self.shown(r), 3)
        self.assertEqual(len(self.running(r)), 1, r.log())
        self.assertIn("Operational, 3 Threads Running", self.running(r)[0])

    def test_unset_worker_threads_show_the_loops_run(self):
        """No workerThreads in the file: one loop per online core, and
        management shows that number, not the schema's 4."""
        cores = os.sysconf("SC_NPROCESSORS_ONLN")
        text = (conf_section("router", {"mode": "standalone", "id": "R0"}) +
                conf_section("listener", {"host": "127.0.0.1", "port": "{port}",
                                          "saslMechanisms": "ANONYMOUS",
                                          "authenticatePeer": "no"}) +
                conf_section("log", {"module": "DEFAULT", "enable": "info+"}))
        r = self.start_router(config=text)
        self.assertEqual(self.shown(r), cores)
        self.assertIn("Operational, %d Threads Running" % cores, self.running(r)[0])


if __name__ == "__main__":
    unittest.main()
