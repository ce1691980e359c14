#!/usr/bin/python3
"""System test: the router.address rows of an idle router are the
addresses it serves, no more (docs/compat.md, "Router addresses are
Junction's own").

Starts a real junctiond (harness.py) and queries `$management` as qdstat
does (python3-qpid-proton's SyncRequestResponse).
"""
import unittest

from proton import Message
from proton.utils import BlockingConnection, SyncRequestResponse

from harness import SLOW, RouterTestCase

TIMEOUT = 10 * SLOW


class AddressRowsTest(RouterTestCase):

    def test_an_idle_router_lists_only_the_addresses_it_serves(self):
        """A standalone router with one management client attached lists
        $management (local and mobile) and that client's reply address,
        and nothing else: no row for a service Junction does not have."""
        r = self.start_router()
        conn = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(conn.close)
        client = SyncRequestResponse(conn, "$management")
        reply = client.call(Message(body={"attributeNames": ["name", "distribution"]},
                                    properties={"operation": "QUERY",
                                                "type": "org.amqp.management", "name": "self",
                                                "entityType": "org.apache.qpid.dispatch."
                                                              "router.address"}))
        self.assertEqual(reply.properties["statusCode"], 200)
        rows = sorted(tuple(row) for row in reply.body["results"])
        self.assertEqual(len(rows), 3, rows)
        self.assertEqual([rows[0], rows[2]],
                         [("L$management", "closest"), ("M0$management", "closest")])
        self.assertTrue(rows[1][0].startswith("Ltemp."), rows)


if __name__ == "__main__":
    unittest.main()
