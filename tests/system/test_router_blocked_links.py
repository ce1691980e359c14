#!/usr/bin/python3
"""System tests: the router's linksBlocked figure counts the links 1.19
counts as blocked (issue 25, 1.19's system_tests_stuck_deliveries tests 09
and 10), and drops as soon as credit comes.

* A client's receiver that never gave credit is blocked after 10 s (one
  "Link blocked with zero credit" log line); one that used up the credit
  it gave (a reply link granting one at a time, idle) is not. When the
  blocked receiver gives credit, the figure is 0 again and the link's
  creditAvailable is what it gave.
* A client's sender to an address with no consumer, to which the router
  gives no credit, is blocked after 10 s; when a consumer attaches, the
  router gives it linkCapacity credit and the figure is 0 again.

One junctiond, proton clients on 127.0.0.1.
"""
import time
import unittest

from proton import Message
from proton.utils import BlockingConnection, SyncRequestResponse

from harness import SLOW, RouterTestCase

TIMEOUT = 10 * SLOW
BLOCKED_LINE = "Link blocked with zero credit for"


class BlockedLinks(RouterTestCase):

    def setUp(self):
        super().setUp()
        self.r = self.start_router()
        self.c = BlockingConnection(self.r.url, timeout=TIMEOUT)
        self.addCleanup(self.c.close)
        self.mc = BlockingConnection(self.r.url, timeout=TIMEOUT)
        self.addCleanup(self.mc.close)
        self.mgmt = SyncRequestResponse(self.mc, "$management")

    def query(self, entity_type):
        props = {"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                 "entityType": entity_type}
        body = self.mgmt.call(Message(body={"attributeNames": []}, properties=props)).body
        return [dict(zip(body["attributeNames"], row)) for row in body["results"]]

    def blocked(self):
        return self.query("org.apache.qpid.dispatch.router")[0]["linksBlocked"]

    def poll(self, what, pred, timeout):
        """Query until pred(value) holds, keeping the client connection
        running meanwhile; returns the value."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.blocked()
            if pred(got):
                return got
            self.assertLess(time.monotonic(), deadline, "%s: linksBlocked %s\n%s"
                            % (what, got, self.logs()))
            t = time.monotonic() + 0.2
            self.c.wait(lambda: time.monotonic() >= t, timeout=5)

    def credit_of(self, address, direction):
        return [l["creditAvailable"] for l in self.query("org.apache.qpid.dispatch.router.link")
                if l.get("owningAddr") == "M0" + address and l["linkDir"] == direction]

    def test_receiver_without_credit_is_blocked_one_that_used_its_credit_is_not(self):
        # a reply-style receiver: one credit, used up by one message, idle since
        idle = self.c.create_receiver("idle.rx", credit=1)
        tx = self.c.create_sender("idle.rx")
        tx.link.send(Message(body="one"))
        self.assertEqual(idle.receive(timeout=TIMEOUT).body, "one")
        idle.accept()
        rx = self.c.create_receiver("blocked.rx", credit=0)
        t0 = time.monotonic()
        self.poll("the receiver without credit counted", lambda n: n == 1, 20 * SLOW)
        self.assertGreaterEqual(time.monotonic() - t0, 9.0, "not before 10 s")
        # a few more ticks: the idle receiver is never counted
        t = time.monotonic() + 2.5
        self.c.wait(lambda: time.monotonic() >= t, timeout=5)
        self.assertEqual(self.blocked(), 1)
        self.assertEqual(self.r.log().count(BLOCKED_LINE), 1, self.r.log())
        rx.link.flow(10)
        self.poll("credit given: no longer blocked", lambda n: n == 0, 5 * SLOW)
        self.assertEqual(self.credit_of("blocked.rx", "out"), [10])

    def test_sender_the_router_gives_no_credit_is_blocked_until_a_consumer_comes(self):
        tx = self.c.create_sender("blocked.tx")
        self.assertEqual(self.credit_of("blocked.tx", "in"), [0])
        t0 = time.monotonic()
        self.poll("the sender without credit counted", lambda n: n == 1, 20 * SLOW)
        self.assertGreaterEqual(time.monotonic() - t0, 9.0, "not before 10 s")
        self.assertEqual(self.r.log().count(BLOCKED_LINE), 1, self.r.log())
        rx = self.c.create_receiver("blocked.tx", credit=5)
        self.poll("a consumer came: no longer blocked", lambda n: n == 0, 5 * SLOW)
        self.assertEqual(self.credit_of("blocked.tx", "in"), [250])
        tx.link.send(Message(body="through"))
        self.assertEqual(rx.receive(timeout=TIMEOUT).body, "through")
        rx.accept()


if __name__ == "__main__":
    unittest.main()
