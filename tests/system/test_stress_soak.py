#!/usr/bin/python3
"""A short run of the soak tool (tests/stress/soak.py): 18 s, 20 connections.

Not a memory verdict (the tool judges the RSS slope only when the last half
of a run is 5 minutes or more; docs/performance.md, "One-hour soak", has
the hour): it checks that the tool still works against the router of this
build: every role of the mix moves messages, the churn replaces
connections, the sampler reads RSS and the allocator entity, no client sees
an error it should not, and the router is up to the end and exits 0 on
SIGTERM without a leak report. JN_BUILD_DIR names the build (set by ctest).
"""
import json
import os
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOAK = os.path.normpath(os.path.join(HERE, "..", "stress", "soak.py"))
BUILD_DIR = os.environ.get("JN_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))


class SoakSmokeTest(unittest.TestCase):

    def test_a_short_soak_moves_messages_churns_and_the_router_exits_cleanly(self):
        with tempfile.TemporaryDirectory(prefix="jn-soak-smoke-") as tmp:
            out_json = os.path.join(tmp, "soak.json")
            p = subprocess.run(["/usr/bin/python3", SOAK, "--minutes", "0.3",
                                "--connections", "20", "--rate", "300", "--sample-every", "3",
                                "--churn-every", "6", "--churn", "0.2",
                                "--build-dir", BUILD_DIR, "--json", out_json],
                               capture_output=True, text=True, timeout=120,
                               stdin=subprocess.DEVNULL)
            report = p.stdout + p.stderr
            self.assertEqual(p.returncode, 0, report)
            with open(out_json) as f:
                res = json.load(f)
        st = res["stats"]
        self.assertFalse(res["died"], report)
        self.assertEqual(res["exit_status"], 0, report)
        self.assertEqual(res["leaks"], [], report)
        self.assertEqual(st["errors"], [], report)
        self.assertGreater(st["received"], 1000, report)
        self.assertGreater(st["replies"], 0, report)  # request/reply went round
        self.assertGreater(st["mgmt_ok"], 0, report)
        self.assertGreater(st["churned"], 0, report)
        self.assertGreaterEqual(len(res["samples"]), 5, report)
        self.assertTrue(all(s["rss_kb"] for s in res["samples"]), report)
        pools = [s["pools"] for s in res["samples"] if s["pools"]]
        self.assertTrue(pools and "jn_delivery" in pools[-1], report)


if __name__ == "__main__":
    unittest.main()
