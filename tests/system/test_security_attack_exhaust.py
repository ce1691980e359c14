#!/usr/bin/python3
"""Resource exhaustion by one unauthenticated client (docs/design.md
"Limits on peers"):

* hundreds of connections that stop in SASL are cut at the listener's
  initialHandshakeTimeoutSeconds, and the memory they held comes back;
* thousands of links and dynamic addresses on one connection: the memory
  comes back when it closes;
* messages with deeply nested or odd annotations (router annotations of
  the wrong type among them) and huge application properties pass or are
  refused without harm.
"""
import socket
import time
import unittest

from proton import Message, symbol
from proton.handlers import MessagingHandler
from proton.reactor import Container
from proton.utils import BlockingConnection

from harness import SANITIZER, SLOW, RouterTestCase
from test_http import Manager

TIMEOUT = 10 * SLOW


def nest(n):
    v = "leaf"
    for _ in range(n):
        v = {"k": v}
    return v


class Echo(MessagingHandler):
    """Sends messages to `deep` and receives them back on one connection;
    outcomes lists each message's outcome."""

    def __init__(self, url, messages):
        super().__init__()
        self.url = url
        self.messages = messages
        self.got = []
        self.outcomes = []
        self.sent = 0
        self.conn = None

    def on_start(self, event):
        self.conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS")
        event.container.create_receiver(self.conn, "deep")
        event.container.create_sender(self.conn, "deep")
        event.container.schedule(TIMEOUT, self)

    def on_timer_task(self, event):
        self.conn.close()

    def on_sendable(self, event):
        while event.sender.credit and self.sent < len(self.messages):
            event.sender.send(self.messages[self.sent])
            self.sent += 1

    def on_message(self, event):
        self.got.append(event.message)

    def outcome(self, what):
        self.outcomes.append(what)
        if len(self.outcomes) == len(self.messages):
            self.conn.close()

    def on_accepted(self, event):
        self.outcome("accepted")

    def on_rejected(self, event):
        self.outcome("rejected")

    def on_released(self, event):
        self.outcome("released")


def pooled_kb(r):
    """kB the router's pools hold from the heap now (taken minus given
    back, over every type): the router's own figure, which a sanitizer's
    allocator does not blur as it does RSS."""
    m = Manager(r.url)
    try:
        code, desc, body = m.call({"operation": "QUERY", "type": "org.amqp.management",
                                   "name": "self", "entityType": "allocator"},
                                  {"attributeNames": ["typeSize", "totalAllocFromHeap",
                                                      "totalFreeToHeap"]})
    finally:
        m.close()
    assert code == 200, desc
    return sum(size * (taken - back) for size, taken, back in body["results"]) // 1024


def memory_kb(r):
    """What the router holds: RSS, or under a sanitizer its pools' figure."""
    return pooled_kb(r) if SANITIZER else r.status_kb("VmRSS")


class AttackExhaust(RouterTestCase):

    def test_connections_stuck_in_sasl_are_cut_and_memory_comes_back(self):
        r = self.start_router(listener={"initialHandshakeTimeoutSeconds": 2})
        rss = memory_kb(r)
        socks = []
        try:
            for i in range(300):
                s = socket.create_connection(("127.0.0.1", r.port), timeout=TIMEOUT)
                s.sendall(b"AMQP\x03\x01\x00\x00")  # then nothing
                socks.append(s)
            deadline = time.monotonic() + 2 + 10 * SLOW
            for s in socks:
                s.settimeout(max(0.1, deadline - time.monotonic()))
                got = b""
                try:
                    while True:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        got += chunk
                except ConnectionResetError:
                    pass
                self.assertNotIn(b"\x00\x53\x10", got)  # no open, and closed in time
        finally:
            for s in socks:
                s.close()
        self.wait_for("the memory back", lambda: memory_kb(r) - rss < 12 * 1024)
        BlockingConnection(r.url, timeout=TIMEOUT).close()

    def test_many_links_and_dynamic_addresses_give_memory_back(self):
        r = self.start_router()
        BlockingConnection(r.url, timeout=TIMEOUT).close()
        rss = memory_kb(r)
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        try:
            for i in range(1000):
                c.create_receiver("many.%d" % i)
            for i in range(500):
                c.create_receiver(None, dynamic=True)
            grown = memory_kb(r) - rss
        finally:
            c.close()
        self.assertGreater(grown, 0)
        self.wait_for("the memory back", lambda: memory_kb(r) - rss < max(grown // 2, 4096))
        self.assertTrue(r.alive())

    def test_deep_and_odd_annotations_do_no_harm(self):
        r = self.start_router()
        messages = [
            Message(body="deep20", annotations={symbol("x-deep"): nest(20)}),
            Message(body="deep200", annotations={symbol("x-deep"): nest(200)}),
            Message(body="props", properties={"p": list(range(10000))}),
            Message(body="ra", annotations={symbol("x-opt-qd.trace"): nest(50),
                                            symbol("x-opt-qd.to"): nest(50),
                                            symbol("x-opt-qd.ingress"): [1, 2],
                                            symbol("x-opt-qd.phase"): "nine"}),
            Message(body="plain"),
        ]
        h = Echo(r.url, messages)
        Container(h).run()
        self.assertEqual(len(h.outcomes), len(messages), h.outcomes)
        self.assertEqual(h.outcomes[-1], "accepted")
        self.assertIn("plain", [m.body for m in h.got])
        self.assertTrue(r.alive())


if __name__ == "__main__":
    unittest.main()
