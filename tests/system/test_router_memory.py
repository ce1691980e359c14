#!/usr/bin/python3
"""System tests: the octets a router holds per incoming link are bounded
(issue 3: stop reading from the sender above a high-water mark, resume
below a low one).

A sender streams 200 messages of 1 MiB to a receiver that keeps only 10
credits granted. The router gives the sender up to linkCapacity (250)
credits, so without a per-link bound it would take in hundreds of
megabytes; with it, the router's peak RSS grows by a few tens at most,
and every message still arrives.
"""
import json
import os
import subprocess
import unittest

from harness import BENCH, SANITIZER, SLOW, RouterTestCase

MB = 1 << 20
COUNT = 200
WINDOW = 10
GROWTH_LIMIT_MB = 40


class RouterMemoryTest(RouterTestCase):

    def bench(self, router, address):
        """Run junction-bench through router; return (figures, growth in MB)."""
        if not os.access(BENCH, os.X_OK):
            self.fail("junction-bench not built at %s" % BENCH)
        rss_before = router.status_kb("VmRSS")
        args = [BENCH, "--json", "-c", str(COUNT), "-b", str(MB), "-w", str(WINDOW),
                "-a", address,
                "--send-url", "127.0.0.1:%d" % router.port,
                "--recv-url", "127.0.0.1:%d" % router.port,
                "--start-timeout", str(10 * SLOW), "--idle-timeout", str(30 * SLOW)]
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=300 * SLOW)
        except subprocess.TimeoutExpired:
            self.fail("junction-bench did not finish in %d s\n%s" % (300 * SLOW, self.logs()))
        try:
            fig = json.loads(p.stdout)
        except ValueError:
            self.fail("junction-bench printed no figures (status %d): %s\n%s\n%s"
                      % (p.returncode, p.stdout, p.stderr, self.logs()))
        detail = "%s\n%s\n%s" % (p.stderr.strip(), json.dumps(fig), self.logs())
        self.assertEqual(p.returncode, 0, detail)
        self.assertEqual(fig["sent"], COUNT, detail)
        self.assertEqual(fig["received"], COUNT, detail)
        self.assertEqual(fig["unique"], COUNT, detail)
        self.assertEqual((fig["lost"], fig["dup"], fig["invalid"]), (0, 0, 0), detail)
        self.assertEqual(fig["accepted"], COUNT, detail)
        hwm = router.status_kb("VmHWM")
        return fig, (hwm - rss_before) / 1024.0, rss_before, hwm

    def test_1mib_messages_to_window_10_receiver_none_lost_rss_growth_under_40mb(self):
        r = self.start_router()
        fig, growth_mb, before, hwm = self.bench(r, "memory.q")
        if SANITIZER:
            return  # memory figures of a sanitizer build are not the router's
        self.assertLess(growth_mb, GROWTH_LIMIT_MB,
                        "router peak RSS grew %.1f MB (VmRSS before %d kB, VmHWM after %d kB)"
                        % (growth_mb, before, hwm))


if __name__ == "__main__":
    unittest.main()
