#!/usr/bin/python3
"""System tests: a consumer that takes messages and never settles them
cannot make the router hold memory without bound, and memory taken in a
burst goes back to the system (issue 28, item 2).

A "holder" receiver keeps granting credit and takes every message but never
settles one, while a sender floods its address with unsettled messages (both
in unsettled_client.py, run as a subprocess). The router must hold at most
twice linkCapacity (2 x 250) unsettled deliveries on the holder's link
(router.link unsettledCount; twice, so that a prompt consumer's next batch
travels while the last is being settled: docs/design.md, "Credit"), its
RSS must stay within GROWTH_MB of what it was before, and another flow
on the same router (junction-bench on another address, or a normal
consumer of the same multicast address) must keep a fair share of its
rate measured alone. The same for a multicast address and for a
link-routed link. Then, after a burst, RSS must fall back to within twice
its level before the burst; in a sanitizer build, where RSS is the
sanitizer's allocator's, the pools' free lists must be bounded instead
(allocator heldByThreads).
"""
import json
import os
import subprocess
import time
import unittest

from harness import BENCH, HERE, PYTHON, SANITIZER, SLOW, RouterTestCase, conf_section
from test_mgmt_agent import Manager

CAPACITY = 250    # linkCapacity's default
BOUND = 2 * CAPACITY  # the most unsettled deliveries a consumer's link holds
FLOOD_S = 20      # seconds the holder and its sender run
GROWTH_MB = 60    # unbounded, the router grew about 35 MB/s (700 MB in 20 s)
RATE_SHARE = 0.3  # the other flow keeps at least this share of its rate alone
BENCH_S = 4


class UnsettledBase(RouterTestCase):

    def manager(self, router):
        m = Manager(router)
        self.addCleanup(m.close)
        return m

    def client(self, url, seconds, *args):
        """Start unsettled_client.py; returns the Popen (stopped at cleanup
        by its PID)."""
        p = subprocess.Popen([PYTHON, os.path.join(HERE, "unsettled_client.py"), url,
                              str(seconds)] + [str(a) for a in args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL)

        def reap():
            if p.poll() is None:
                p.kill()
            p.wait(10)
            p.stdout.close()
            p.stderr.close()
        self.addCleanup(reap)
        return p

    def finish(self, p, timeout):
        """Wait for the client to end; its JSON lines, parsed."""
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            self.fail("client did not end in %d s: %s\n%s" % (timeout, err, self.logs()))
        lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
        self.assertTrue(lines, "client printed nothing: %s\n%s" % (err, self.logs()))
        return lines

    def bench(self, router, address, seconds=BENCH_S):
        """Messages junction-bench moves through router on address in
        `seconds` (unsettled, 1 KiB bodies)."""
        args = [BENCH, "--json", "-c", "100M", "-t", str(seconds), "-b", "1024",
                "-a", address, "--bus", "127.0.0.1:%d" % router.port,
                "--start-timeout", str(10 * SLOW), "--idle-timeout", str(10 * SLOW)]
        p = subprocess.run(args, capture_output=True, text=True, timeout=60 * SLOW)
        try:
            fig = json.loads(p.stdout)
        except ValueError:
            self.fail("junction-bench printed no figures (status %d): %s %s\n%s"
                      % (p.returncode, p.stdout, p.stderr, self.logs()))
        self.assertEqual((fig["lost"], fig["dup"]), (0, 0), json.dumps(fig))
        return fig["received"]

    def out_links(self, router):
        return [l for l in self.manager(router).query(
            "router.link", ["identity", "linkDir", "owningAddr", "deliveryCount",
                            "unsettledCount", "undeliveredCount", "capacity"])
            if l["linkDir"] == "out"]

    def rss_watch(self, router, seconds, during=None):
        """Sample VmRSS (kB) every 0.5 s for `seconds`, calling during()
        once after a quarter of them; returns (peak kB, during's result)."""
        peak, result, done = 0, None, False
        end = time.monotonic() + seconds
        start = time.monotonic()
        while time.monotonic() < end:
            peak = max(peak, router.status_kb("VmRSS"))
            if during and not done and time.monotonic() - start > seconds / 4:
                result, done = during(), True
            time.sleep(0.5)
        return peak, result

    def check_growth(self, before, peak, what):
        if SANITIZER:
            return  # a sanitizer's allocator's figure, not the router's
        self.assertLess((peak - before) / 1024.0, GROWTH_MB,
                        "%s: RSS grew from %d kB to a peak of %d kB\n%s"
                        % (what, before, peak, self.logs()))

    def check_holder_link(self, router, key=None):
        """The holder's link holds at most BOUND unsettled, and some."""
        links = self.out_links(router)
        held = [l for l in links if (key is None or l["owningAddr"] == key)
                and l["unsettledCount"] > 0]
        self.assertTrue(held, "no outgoing link holds unsettled deliveries: %s" % links)
        for l in held:
            self.assertLessEqual(l["unsettledCount"], BOUND, links)
            self.assertEqual(l["capacity"], CAPACITY, links)
        return max(l["unsettledCount"] for l in held)


class UnsettledBoundTest(UnsettledBase):

    def test_anycast_holder_bounded_at_twice_link_capacity_rss_bounded_other_flow_keeps_rate(self):
        r = self.start_router()
        alone = self.bench(r, "other.q")
        before = r.status_kb("VmRSS")
        p = self.client(r.url, FLOOD_S, "--hold", "held.q", "--send", "held.q")
        peak, during = self.rss_watch(r, FLOOD_S - 2, lambda: self.bench(r, "other.q"))
        held = self.check_holder_link(r, "M0held.q")
        lines = self.finish(p, 30 * SLOW)
        got = lines[-1]["got"]["hold held.q"]
        # measured (plain build, 2 cores): before ~11 MB, peak ~16 MB
        print("anycast: RSS before %d kB, peak %d kB; other flow %d alone, %d beside the "
              "holder in %d s; holder took %d, %d unsettled in the router"
              % (before, peak, alone, during, BENCH_S, got, held))
        self.assertLessEqual(got, BOUND, lines[-1])
        self.assertGreaterEqual(got, BOUND // 2, lines[-1])
        self.check_growth(before, peak, "anycast holder")
        self.assertGreaterEqual(during, alone * RATE_SHARE,
                                "the other flow moved %d beside the holder, %d alone"
                                % (during, alone))

    def test_closest_skips_a_full_consumer_for_one_with_room(self):
        """Two consumers of one closest address, one a holder: once the
        holder is full, everything goes to the other one."""
        r = self.start_router()
        p = self.client(r.url, 6, "--hold", "two.q", "--take", "two.q", "--send", "two.q")
        lines = self.finish(p, 30 * SLOW)
        last = lines[-1]
        self.assertLessEqual(last["got"]["hold two.q"], BOUND, last)
        self.assertGreater(last["got"]["take two.q"], 4 * CAPACITY, last)

    def test_multicast_holder_parked_other_consumer_keeps_rate(self):
        r = self.start_router(addresses=[{"prefix": "mc", "distribution": "multicast"}])
        # the normal consumer alone
        lines = self.finish(self.client(r.url, 6, "--take", "mc.a", "--send", "mc.a"),
                            30 * SLOW)
        alone = rate(lines, "take mc.a", 2, 6)
        before = r.status_kb("VmRSS")
        p = self.client(r.url, FLOOD_S, "--hold", "mc.b", "--take", "mc.b", "--send", "mc.b")
        peak, _ = self.rss_watch(r, FLOOD_S - 2)
        held = self.check_holder_link(r, "M0mc.b")
        lines = self.finish(p, 30 * SLOW)
        beside = rate(lines, "take mc.b", FLOOD_S - 8, FLOOD_S)
        print("multicast: RSS before %d kB, peak %d kB; normal consumer %.0f/s alone, "
              "%.0f/s beside the holder; %d unsettled on the holder's link"
              % (before, peak, alone, beside, held))
        self.assertLessEqual(lines[-1]["got"]["hold mc.b"], BOUND, lines[-1])
        self.check_growth(before, peak, "multicast holder")
        self.assertGreaterEqual(beside, alone * RATE_SHARE, lines[-1])
        self.assertIn("Multicast consumer stuck", r.log())

    def test_link_routed_holder_limits_container_credit_rss_bounded(self):
        extra = (conf_section("listener", {"host": "127.0.0.1", "port": "{rcport}",
                                           "role": "route-container",
                                           "saslMechanisms": "ANONYMOUS",
                                           "authenticatePeer": "no"})
                 + conf_section("linkRoute", {"prefix": "lr", "direction": "out",
                                              "containerId": "svc"}))
        from harness import free_port
        rcport = free_port()
        r = self.start_router(extra=extra.replace("{rcport}", str(rcport)))
        svc = self.client("127.0.0.1:%d" % rcport, FLOOD_S + 5, "--serve",
                          "--container-id", "svc")
        self.wait_for("the route container", lambda: any(
            c.get("container") == "svc" for c in self.manager(r).query(
                "connection", ["container"])))
        alone = self.bench(r, "other.q")
        before = r.status_kb("VmRSS")
        p = self.client(r.url, FLOOD_S, "--hold", "lr.x")
        peak, during = self.rss_watch(r, FLOOD_S - 2, lambda: self.bench(r, "other.q"))
        held = self.check_holder_link(r)
        lines = self.finish(p, 30 * SLOW)
        got = lines[-1]["got"]["hold lr.x"]
        print("link route: RSS before %d kB, peak %d kB; other flow %d alone, %d beside; "
              "holder took %d, %d unsettled in the router" % (before, peak, alone, during,
                                                               got, held))
        self.assertLessEqual(got, BOUND, lines[-1])
        self.assertGreaterEqual(got, BOUND // 2, lines[-1])
        self.check_growth(before, peak, "link-routed holder")
        self.assertGreaterEqual(during, alone * RATE_SHARE)
        svc.kill()


def rate(lines, name, t0, t1):
    """Messages per second `name` took between t0 and t1 seconds."""
    a = [x for x in lines if x["t"] >= t0]
    b = [x for x in lines if x["t"] >= t1] or lines[-1:]
    if not a:
        return 0.0
    dt = b[0]["t"] - a[0]["t"]
    return (b[0]["got"][name] - a[0]["got"][name]) / dt if dt > 0 else 0.0


class MemoryBackTest(UnsettledBase):

    BURST_PAIRS = 40

    def test_after_a_burst_rss_falls_to_twice_before_within_60s(self):
        r = self.start_router()
        self.bench(r, "warm.q", 2)  # the pools' and threads' steady state
        time.sleep(2)
        before = r.status_kb("VmRSS")
        # two clients, each its own connection (so its own session window)
        # and process: one Python client under a loaded machine's -j2 sent
        # too little to make a burst (7.7 MB once)
        clients = []
        for c in "ab":
            args = ["--body", "65536"]
            for i in range(self.BURST_PAIRS):
                args += ["--hold", "burst.%s%d" % (c, i), "--send", "burst.%s%d" % (c, i)]
            clients.append(self.client(r.url, 8, *args))
        peak, _ = self.rss_watch(r, 7)
        moved = 0
        for p in clients:
            got = self.finish(p, 30 * SLOW)[-1]["got"]
            moved += sum(n for k, n in got.items() if k.startswith("hold "))
        self.wait_for("the burst's connection to go", lambda: not any(
            l["unsettledCount"] for l in self.out_links(r)))
        if SANITIZER:
            # RSS is the sanitizer's: the pools' free lists are bounded once
            # the core's once-a-second trim has run (within 60 s, as the
            # RSS below)
            mgr = self.manager(r)

            def over_bound():
                rows = mgr.query("allocator", ["typeName", "typeSize", "transferBatchSize",
                                               "heldByThreads", "totalAllocFromHeap",
                                               "totalFreeToHeap"])
                over = []
                for row in rows:
                    batch, size = row["transferBatchSize"], (row["typeSize"] + 15) // 16 * 16
                    shared = max(4, (256 * 1024) // (size * batch)) * batch
                    # shared list + thread caches, and the figures' own
                    # slack: off by up to 2 batches (include/junction/pool.h)
                    bound = shared + 16 * 2 * batch + 2 * batch
                    if row["heldByThreads"] > bound:
                        over.append((row, bound))
                return rows, over
            deadline = time.monotonic() + 60
            rows, over = over_bound()
            while over and time.monotonic() < deadline:
                time.sleep(1)
                rows, over = over_bound()
            self.assertEqual(over, [], "free lists past their bound 60 s after the burst")
            buf = [x for x in rows if x["typeName"] == "jn_buffer"][0]
            # held from the heap now: taken minus given back
            self.assertLess(buf["totalAllocFromHeap"] - buf["totalFreeToHeap"], 20000, buf)
            self.assertGreater(buf["totalFreeToHeap"], 0, buf)
            return
        gone = time.monotonic()
        after, deadline = None, gone + 60
        while time.monotonic() < deadline:
            after = r.status_kb("VmRSS")
            if after <= 2 * before:
                break
            time.sleep(1)
        # measured (plain build): on proton's engine (until issue 27's stage
        # 5) before ~9 MB, peak ~240-480 MB, ~10 MB within 2 s. On the own
        # engine a copy's octets go once written and an unsettled delivery
        # keeps about 2.3 KB, so the same burst peaks at 16-21 MB, less on a
        # loaded machine: the burst is asserted by what the clients were
        # sent and hold unsettled, RSS must come back under twice its level
        # before, and when the peak rose 8 MB or more, half of that must be
        # given back besides.
        print("burst: %d messages of 64 KiB held; RSS before %d kB, peak %d kB, %d kB %.1f s "
              "after the clients went" % (moved, before, peak, after, time.monotonic() - gone))
        self.assertGreater(moved, 1000, "the burst was not one")
        self.assertLessEqual(after, 2 * before,
                             "RSS before the burst %d kB, peak %d kB, 60 s after %d kB\n%s"
                             % (before, peak, after, self.logs()))
        if peak >= before + 8 * 1024:
            self.assertLess(after, peak - (peak - before) // 2,
                            "RSS before the burst %d kB, peak %d kB, 60 s after %d kB"
                            % (before, peak, after))


if __name__ == "__main__":
    unittest.main()
