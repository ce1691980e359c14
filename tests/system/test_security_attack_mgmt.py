#!/usr/bin/python3
"""Attacks through management and the router's log (docs/design.md
"Management"):

* a log's outputFile that cannot be used is refused with the same words
  whatever the path is (missing folder, directory, FIFO): the client learns
  nothing of the file system; the router's log has the reason;
* text a peer chooses (an address) cannot forge a line of the router's log;
* a request over the size limit is answered 400 naming the limit (not
  left unanswered: its client would wait for ever), without its body being
  decoded;
* a request over the size limit, a deeply nested one, and thousands of
  requests whose reply-to nobody reads (no consumer, or one that never
  grants credit) leave the router serving and its memory bounded;
* secrets are not returned by QUERY of every type.
"""
import os
import threading
import time
import unittest

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import AtMostOnce, Container
from proton.utils import BlockingConnection, LinkDetached

from harness import SLOW, RouterTestCase, conf_section
from test_http import Manager
from test_security_attack_exhaust import memory_kb
from test_router_policy import vhost_section

TIMEOUT = 10 * SLOW
# the entity path's one wording, for the file, CREATE and UPDATE alike
GENERIC = ("log POLICY: outputFile cannot be used: it must be a regular "
           "file the router can append to")
NODE = {"type": "org.amqp.management", "name": "self"}


class NoCreditAsker(MessagingHandler):
    """Sends n management requests (settled) whose reply-to is its own
    receiver, which never grants credit."""

    def __init__(self, url, n):
        super().__init__(prefetch=0)
        self.url = url
        self.n = n
        self.sent = 0
        self.stop = False
        self.error = None
        self.conn = None

    def on_start(self, event):
        self.conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS")
        event.container.create_receiver(self.conn, "replies.stuck")
        event.container.create_sender(self.conn, "$management", options=AtMostOnce())
        event.container.schedule(0.2, self)

    def on_timer_task(self, event):
        if self.stop:
            self.conn.close()
        else:
            event.container.schedule(0.2, self)

    def on_sendable(self, event):
        while event.sender.credit and self.sent < self.n:
            event.sender.send(Message(reply_to="replies.stuck", properties=dict(
                NODE, operation="QUERY", entityType="listener"), body={"attributeNames": []}))
            self.sent += 1

    def on_transport_error(self, event):
        self.error = str(event.transport.condition)


class AttackMgmt(RouterTestCase):

    def manager(self, r):
        m = Manager(r.url)
        self.addCleanup(m.close)
        return m

    def test_log_output_file_errors_say_nothing_of_the_file_system(self):
        r = self.start_router()
        m = self.manager(r)
        fifo = os.path.join(self.workdir, "fifo")
        os.mkfifo(fifo)
        paths = [os.path.join(self.workdir, "no", "such", "dir", "x.log"), self.workdir, fifo,
                 os.path.join(self.workdir, "no-such-dir") + "/"]
        for path in paths:
            code, desc, _ = m.call({"operation": "UPDATE", "type": "log", "name": "log/POLICY"},
                                   {"outputFile": path})
            self.assertEqual((code, desc), (400, GENERIC), path)
        log = r.log()
        self.assertIn("exists and is not a regular file", log)
        self.assertIn("No such file or directory", log)
        # a good file still works, and the refusals changed nothing
        good = os.path.join(self.workdir, "policy.log")
        code, desc, _ = m.call({"operation": "UPDATE", "type": "log", "name": "log/POLICY"},
                               {"outputFile": good, "enable": "info+"})
        self.assertEqual(code, 200, desc)

    def test_a_peer_cannot_forge_log_lines(self):
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes",
                                                            "defaultVhost": "v"})
                              + vhost_section("v", {"$default": {
                                  "users": "*", "remoteHosts": "*", "sources": "ok",
                                  "targets": "ok"}}))
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        try:
            for evil in ("x\n2026-01-01 00:00:00.000000 +0000 SERVER (critical) FORGED\nx",
                         "y\rFORGED\x1b[2J"):
                with self.assertRaises(LinkDetached):
                    c.create_sender(evil)  # denied, and its address logged
        finally:
            c.close()
        self.wait_for("the denials logged", lambda: r.log().count("DENY AMQP Attach") >= 2)
        lines = r.log().splitlines()
        self.assertFalse([ln for ln in lines if ln.startswith(("2026-01-01", "FORGED"))], lines)
        self.assertFalse([ln for ln in lines if "\x1b" in ln or "\r" in ln])
        self.assertTrue([ln for ln in lines if "x?2026-01-01" in ln and "FORGED?x" in ln])

    def test_huge_deep_and_unread_requests_leave_the_router_serving(self):
        r = self.start_router()
        m = self.manager(r)
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        try:
            s = c.create_sender("$management")
            query = dict(NODE, operation="QUERY", entityType="connection")
            # over the 1 MiB limit: refused unread (logged)
            s.send(Message(reply_to="nobody.reads", properties=query,
                           body={"attributeNames": [], "pad": "x" * (2 * 1024 * 1024)}))
            self.wait_for("the drop logged",
                          lambda: "Management request of" in r.log())
            # deeply nested: refused
            deep = []
            cur = deep
            for _ in range(300):
                nxt = []
                cur.append(nxt)
                cur = nxt
            code, desc, _ = m.call({"operation": "CREATE", "type": "address", "name": "deep"},
                                   {"prefix": "deep", "distribution": deep})
            self.assertEqual(code, 400, desc)
            # many requests whose answers nobody reads
            rss = memory_kb(r)
            for i in range(2000):
                s.send(Message(reply_to="nobody.reads", properties=query,
                               body={"attributeNames": []}))
            code, desc, _ = m.call(dict(NODE, operation="QUERY", entityType="router"),
                                   {"attributeNames": ["id"]})
            self.assertEqual(code, 200, desc)
            self.assertLess(memory_kb(r) - rss, 20 * 1024)
        finally:
            c.close()
        self.assertTrue(r.alive())

    def test_request_over_the_size_limit_is_answered_400_naming_the_limit(self):
        r = self.start_router()
        m = self.manager(r)
        # a vhost of 3,000 groups: about 1.4 MB, over the agent's 1 MiB limit
        groups = {"g%d" % i: {"users": ",".join("u%d_%d" % (i, j) for j in range(50))}
                  for i in range(3000)}
        code, desc, _ = m.call({"operation": "CREATE", "type": "vhost", "name": "big"},
                               {"hostname": "big", "groups": groups})
        self.assertEqual(code, 400, desc)
        self.assertRegex(desc, r"^Request of \d+ octets is above the agent's limit of 1048576 "
                               r"octets$")
        code, desc, _ = m.call({"operation": "READ", "type": "vhost", "name": "big"})
        self.assertEqual(code, 404, desc)  # nothing of it was carried out
        self.assertIn("Management request of", r.log())
        self.assertTrue(r.alive())

    def test_requests_answered_to_a_consumer_without_credit_hold_no_memory(self):
        r = self.start_router()
        BlockingConnection(r.url, timeout=TIMEOUT).close()
        before = memory_kb(r)
        h = NoCreditAsker(r.url, 5000)
        t = threading.Thread(target=Container(h).run, daemon=True)
        t.start()
        self.wait_for("the requests sent", lambda: h.sent == 5000 or h.error, 60 * SLOW)
        self.assertIsNone(h.error)
        time.sleep(1)
        grown = memory_kb(r) - before
        h.stop = True
        t.join(10 * SLOW)
        self.assertLess(grown, 20 * 1024)
        self.assertTrue(r.alive())

    def test_no_secret_in_any_answer(self):
        r = self.start_router(extra=conf_section("connector", {
            "name": "out", "host": "127.0.0.1", "port": 1, "role": "normal",
            "saslUsername": "u", "saslPassword": "pass:conn-secret-9"}))
        m = self.manager(r)
        for op, body in (("QUERY", {"attributeNames": []}), ("GET-LOG", {})):
            code, desc, got = m.call(dict(NODE, operation=op), body)
            self.assertEqual(code, 200, desc)
            self.assertNotIn("conn-secret-9", repr(got), op)
        code, desc, got = m.call({"operation": "READ", "type": "connector", "name": "out"})
        self.assertEqual(code, 200, desc)
        self.assertNotIn("conn-secret-9", repr(got))


if __name__ == "__main__":
    unittest.main()
