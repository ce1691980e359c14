#!/usr/bin/python3
"""policy maxConnections (issue 15; docs/design.md "Policy"): incoming
connections past the limit are closed at accept, before any AMQP, with one
log line, as qdrouterd 1.19 does; the others are unaffected; the policy
entity shows the limit and the figures (connectionsProcessed, Denied,
Current, totalDenials). A bad value stops start-up with FILE:LINE.
"""
import os
import re
import sys
import time
import unittest

from proton import ConnectionException, Timeout
from proton.utils import BlockingConnection

from harness import SLOW, RouterTestCase, conf_section, run_junctiond

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
from junction.management import Client, ConnectOptions  # noqa: E402


def attempt(url):
    """None when a connection opens and a link attaches, else the error."""
    try:
        c = BlockingConnection(url, timeout=5 * SLOW)
        c.create_receiver("probe")
        c.close()
        return None
    except (ConnectionException, Timeout, OSError) as e:
        return str(e) or type(e).__name__


class PolicyMaxConnectionsTest(RouterTestCase):

    def policy(self, url):
        with Client(ConnectOptions(url=url)) as c:
            rows = c.query_dicts("policy")
        self.assertEqual(len(rows), 1, rows)
        return rows[0]

    def test_third_connection_past_a_limit_of_two_is_refused(self):
        r = self.start_router(extra=conf_section("policy", {"maxConnections": 2}))
        c1 = BlockingConnection(r.url, timeout=10 * SLOW)
        c2 = BlockingConnection(r.url, timeout=10 * SLOW)
        try:
            rx = c2.create_receiver("pol.q", credit=5)
            from proton.reactor import AtMostOnce
            tx = c2.create_sender("pol.q", options=AtMostOnce())
            self.assertIsNotNone(attempt(r.url))
            self.wait_for("the DENY log line", lambda: re.search(
                r"POLICY \(info\) DENY Connection '127\.0\.0\.1:\d+' based on global "
                r"connection count\. nConnections= 2", r.log()) is not None)
            # the open connections are unaffected (c2 sends to itself, c1 stays)
            from proton import Message
            tx.send(Message(body="still here"))
            self.assertEqual(rx.receive(timeout=10 * SLOW).body, "still here")
        finally:
            c1.close()
        # one closed: room for one more (the management client below)
        deadline = time.monotonic() + 10 * SLOW
        while True:
            try:
                p = self.policy(r.url)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        c2.close()
        self.assertEqual(p["maxConnections"], 2)
        self.assertGreaterEqual(p["connectionsDenied"], 1)
        self.assertEqual(p["totalDenials"], p["connectionsDenied"])
        self.assertEqual(p["connectionsCurrent"], 2)  # c2 and the management client
        self.assertEqual(p["connectionsProcessed"], 3 + p["connectionsDenied"])

    def test_default_limit_shown(self):
        r = self.start_router()
        p = self.policy(r.url)
        self.assertEqual(p["maxConnections"], 65535)
        self.assertEqual(p["connectionsDenied"], 0)
        self.assertEqual(p["connectionsCurrent"], 1)
        self.assertIs(p["enableVhostPolicy"], False)
        import subprocess
        tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                            "junction-stat")
        out = subprocess.run(["/usr/bin/python3", tool, "-b", r.url, "--policy"],
                             capture_output=True, text=True, timeout=20 * SLOW)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"Maximum Concurrent Connections\s+65535")
        self.assertRegex(out.stdout, r"Connections Denied\s+0")

    def test_negative_limit_stops_start_up(self):
        text = (conf_section("router", {"mode": "standalone", "id": "P"})
                + conf_section("policy", {"maxConnections": -1}))
        path = os.path.join(self.workdir, "p.conf")
        with open(path, "w") as f:
            f.write(text)
        line = 1 + [i for i, x in enumerate(text.splitlines())
                    if x.strip().startswith("maxConnections:")][0]
        p = run_junctiond(["-c", path])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("%s:%d: policy maxConnections must be from 0" % (path, line), p.stderr)

    def test_vhost_policy_still_refused_by_name(self):
        text = (conf_section("router", {"mode": "standalone", "id": "P"})
                + conf_section("policy", {"enableVhostPolicy": "yes"}))
        path = os.path.join(self.workdir, "v.conf")
        with open(path, "w") as f:
            f.write(text)
        p = run_junctiond(["-c", path])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("enableVhostPolicy", p.stderr)


if __name__ == "__main__":
    unittest.main()
