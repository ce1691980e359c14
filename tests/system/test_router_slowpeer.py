#!/usr/bin/python3
"""System tests: peers that cost the router too much (issue 20, items 2 and 4).

IdleTimeoutFloorTest: a peer whose open asks for an idle-time-out below
router.minPeerIdleTimeoutMs (default 100 ms) is refused, as AMQP 1.0 2.4.5
allows, with a close frame carrying amqp:resource-limit-exceeded and no
burst of empty frames before it; reasonable timeouts (1 s, none, a lower
configured floor) keep working with heartbeats at the expected rate.

SlowReaderTest: a raw client that attaches a receiver with a million
credits to an address a fast sender floods, shrinks its socket's receive
buffer and then reads one octet a second ("slowloris"). The router's memory
stays bounded while it lives, another sender/receiver pair (junction-bench)
keeps its speed, and router.writeStallTimeoutSeconds cuts the slow reader
with one log line naming its address.

Frames are read with raw sockets (harness.RawClient), so every frame the
router sends is counted, empty ones included.
"""
import json
import re
import select
import socket
import struct
import subprocess
import time
import unittest

from proton import Described, ulong, uint, ubyte

from harness import (ATTACH, BEGIN, CLOSE, FLOW, BENCH, SANITIZER, SLOW, RawClient,
                     RouterTestCase, frame, performative, run_junctiond)

EMPTY_FRAME = struct.pack(">IBBH", 8, 2, 0, 0)


def peer_address(client):
    """The raw client's address as the router logs it ("127.0.0.1:PORT")."""
    host, port = client.sock.getsockname()[:2]
    return "%s:%d" % (host, port)


def collect(client, seconds, keepalive=None):
    """Read every frame the router sends for `seconds` (empty frames
    included), sending an empty frame of our own every `keepalive` seconds
    when given. Returns (frames, closed): closed when the router ended the
    socket. Only whole frames are decoded, so a slow arrival never splits
    one."""
    frames, closed = [], False
    now = time.monotonic()
    deadline, next_ka = now + seconds, now
    while not closed:
        now = time.monotonic()
        if now >= deadline:
            break
        if keepalive is not None and now >= next_ka:
            try:
                client.send(EMPTY_FRAME)
            except OSError:
                closed = True
            next_ka = now + keepalive
        wait = min(deadline, next_ka if keepalive is not None else deadline) - now
        if select.select([client.sock], [], [], max(wait, 0))[0]:
            try:
                chunk = client.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                chunk = b""
            if not chunk:
                closed = True
            client.buf += chunk
        while len(client.buf) >= 8 and struct.unpack(">I", client.buf[:4])[0] <= len(client.buf):
            frames.append(client.read_frame())  # whole frame buffered: does not block
    return frames, closed


def empties(frames):
    return sum(1 for f in frames if f.code is None)


class IdleTimeoutFloorTest(RouterTestCase):

    def raw(self, router):
        c = RawClient(router.port)
        self.addCleanup(c.close)
        return c

    def assert_still_open(self, client):
        """The connection works: a begin is answered with a begin."""
        client.begin()  # raises on EOF or timeout

    def refusal_lines(self, router, client):
        return [line for line in router.log().splitlines()
                if "refused" in line and peer_address(client) in line]

    def assert_refused(self, router, client, peer_ms, floor_ms):
        """Close with amqp:resource-limit-exceeded naming both values, fewer
        than a handful of frames after the open, one log line."""
        frames, _ = collect(client, 1.0 * SLOW, keepalive=0.01)
        closes = [f for f in frames if f.code == CLOSE]
        self.assertEqual(len(closes), 1, "expected one close frame, got %r" % frames)
        cond, desc = closes[0].error()
        self.assertEqual(cond, "amqp:resource-limit-exceeded")
        self.assertIn("%d ms" % peer_ms, desc)
        self.assertIn("%d ms" % floor_ms, desc)
        self.assertLess(len(frames), 4, "frames after the open: %d (%d empty): %r"
                        % (len(frames), empties(frames), frames[:10]))
        self.wait_for("the refusal log line", lambda: self.refusal_lines(router, client))
        lines = self.refusal_lines(router, client)
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("%d ms" % floor_ms, lines[0])

    def test_1ms_idle_timeout_refused_without_a_burst_of_frames(self):
        router = self.start_router()
        c = self.raw(router)
        c.open(idle_time_out=1)
        self.assert_refused(router, c, 1, 100)
        self.assertTrue(router.alive())

    def test_1s_idle_timeout_gets_heartbeats_at_a_sane_rate(self):
        router = self.start_router()
        c = self.raw(router)
        c.open(idle_time_out=1000)
        frames, closed = collect(c, 3.0, keepalive=0.3)
        self.assertFalse(closed, "router closed the connection: %r" % frames)
        self.assertFalse([f for f in frames if f.code == CLOSE], frames)
        # One empty frame per half timeout (500 ms) while idle: about 6.
        n = empties(frames)
        self.assertGreaterEqual(n, 3, "too few heartbeats in 3 s: %r" % frames)
        self.assertLessEqual(n, 12, "too many heartbeats in 3 s: %d" % n)
        self.assert_still_open(c)

    def test_silent_peer_after_open_gets_heartbeats(self):
        """A peer that opens and then sends nothing (no begin yet, no
        heartbeats of its own) must still hear a frame within its
        idle-time-out. The router ticked proton's clock before handling the
        open, and not again until the peer's next frame: it sent nothing
        for as long as the peer stayed silent."""
        router = self.start_router()
        c = self.raw(router)
        c.open(idle_time_out=1000)
        frames, closed = collect(c, 2.5)  # no keep-alive of ours
        self.assertFalse(closed, "router closed the connection: %r" % frames)
        self.assertGreaterEqual(empties(frames), 3, "heartbeats in 2.5 s: %r" % frames)
        self.assert_still_open(c)

    def test_no_idle_timeout_gets_no_heartbeats(self):
        router = self.start_router()
        c = self.raw(router)
        c.open(idle_time_out=0)
        frames, closed = collect(c, 2.0)
        self.assertFalse(closed)
        self.assertEqual(frames, [], "frames sent to a peer without an idle timeout")
        self.assert_still_open(c)

    def test_floor_is_configurable(self):
        router = self.start_router(router={"minPeerIdleTimeoutMs": 20})
        ok = self.raw(router)
        ok.open(idle_time_out=50)
        frames, closed = collect(ok, 1.0, keepalive=0.02)
        self.assertFalse(closed, "a 50 ms idle timeout was refused: %r" % frames)
        self.assertFalse([f for f in frames if f.code == CLOSE], frames)
        # One empty frame per 25 ms while idle: about 40 in a second.
        n = empties(frames)
        self.assertGreaterEqual(n, 10, "too few heartbeats for 50 ms: %d" % n)
        self.assertLessEqual(n, 100, "too many heartbeats for 50 ms: %d" % n)
        self.assert_still_open(ok)
        low = self.raw(router)
        low.open(idle_time_out=10)
        self.assert_refused(router, low, 10, 20)

    def test_negative_values_refused_at_start(self):
        for attr in ("minPeerIdleTimeoutMs", "writeStallTimeoutSeconds"):
            with self.subTest(attr):
                path = "%s/%s.conf" % (self.workdir, attr)
                with open(path, "w") as f:
                    f.write("router {\n    mode: standalone\n    %s: -1\n}\n" % attr)
                p = run_junctiond(["-c", path])
                self.assertNotEqual(p.returncode, 0)
                self.assertIn(attr, p.stderr)


# ---------------------------------------------------------------------------

MB = 1024


class SlowReaderTest(RouterTestCase):

    FLOOD_BODY = 1024

    def slow_reader(self, router, address):
        """A raw receiver with a tiny receive buffer and 1,000,000 credits."""
        c = RawClient(router.port)
        self.addCleanup(c.close)
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.open()
        c.begin()
        c.send(frame(performative(ATTACH, [
            "slow-rx", uint(0), True, ubyte(0), ubyte(0),
            Described(ulong(0x28), [address]), Described(ulong(0x29), [None]),
            None, None, None])))
        c.expect(ATTACH)
        # next-incoming-id, incoming-window, next-outgoing-id, outgoing-window,
        # handle, delivery-count, link-credit
        c.send(frame(performative(FLOW, [uint(0), uint(0x7fffffff), uint(1), uint(0x7fffffff),
                                         uint(0), uint(0), uint(1000000)])))
        return c

    def flood(self, router, address, body=None):
        child = self.spawn("flood-sender", router.url, address, body or self.FLOOD_BODY)
        self.addCleanup(lambda: child.proc.poll() is None and child.proc.kill())
        return child

    @staticmethod
    def flood_counts(child):
        line = child.last("sent ")
        if not line:
            return 0, 0
        m = re.match(r"sent (\d+) settled (\d+)", line)
        return int(m.group(1)), int(m.group(2))

    def wait_flood_stalled(self, child, reader, quiet=1.0):
        """Read one octet a second from the slow reader until the flood has
        sent nothing new for `quiet` seconds (bounded)."""
        deadline = time.monotonic() + 20 * SLOW
        last, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            sent, _ = self.flood_counts(child)
            if sent != last:
                last, since = sent, time.monotonic()
            elif sent > 0 and time.monotonic() - since >= quiet:
                return sent
            self.read_one(reader)
        self.fail("the flood never stalled (sent %d)\n%s" % (last, self.logs()))

    @staticmethod
    def read_one(reader, pause=0.2):
        reader.sock.settimeout(pause)
        try:
            reader.sock.recv(1)
        except (socket.timeout, OSError):
            pass
        time.sleep(pause)

    def bench(self, router, count=100000, runs=2):
        """Another sender/receiver pair on its own address: msgs/s, the best
        of `runs` (this machine's speed swings from run to run)."""
        url = "127.0.0.1:%d" % router.port
        best = 0
        for _ in range(runs):
            p = subprocess.run([BENCH, "--address", "other.q", "--body-size", "100", "--window",
                                "1000", "--count", str(count), "--send-url", url, "--recv-url",
                                url, "--json"], capture_output=True, text=True, timeout=120 * SLOW)
            self.assertEqual(p.returncode, 0, "junction-bench failed: %s %s\n%s"
                             % (p.stdout[-2000:], p.stderr[-2000:], self.logs()))
            best = max(best, json.loads(p.stdout)["msg_per_s"])
        return best

    def test_slow_reader_memory_bounded_and_others_flow(self):
        router = self.start_router(router={"writeStallTimeoutSeconds": 60})
        before = self.bench(router)  # also warms the pools the pair uses
        rss0 = router.status_kb("VmRSS")
        reader = self.slow_reader(router, "slow.q")
        flood = self.flood(router, "slow.q")
        sent = self.wait_flood_stalled(flood, reader)
        rss1 = router.status_kb("VmRSS")
        during = self.bench(router)
        held = self.flood_counts(flood)[0]
        for _ in range(10):  # two more seconds of the slow reader
            self.read_one(reader, 0.1)
        rss2 = router.status_kb("VmRSS")
        self.assertTrue(router.alive())
        report = ("flood sent %d x %d B before stalling; VmRSS %d -> %d -> %d kB; other pair "
                  "%.0f msgs/s before, %.0f during" % (sent, self.FLOOD_BODY, rss0, rss1, rss2,
                                                       before, during))
        print("\n" + report)
        # Before the bound (TCP_NOTSENT_LOWAT) this grew by ~41 MB: the
        # kernel's send buffer (up to tcp_wmem's 4 MiB) worth of messages
        # and unsettled deliveries. Now about 17 MB, most of it the
        # sender's held messages (JN_IO_LINK_HIGH_WATER). ASan's redzones
        # and shadow roughly double it.
        bound = 32 * MB * (2 if SANITIZER else 1)
        self.assertLess(rss1 - rss0, bound, report)
        self.assertLess(rss2 - rss1, 8 * MB * (2 if SANITIZER else 1), "still growing: " + report)
        # The other pair must flow while the reader is stalled: bench() has
        # asserted that all of its messages arrived and were settled, and the
        # flood is still held (it sent nothing new meanwhile), so they passed
        # during the stall. The rates are printed, not asserted: on a shared
        # 2-core machine they swing by more than 2x from run to run.
        self.assertGreater(during, 0, report)
        self.assertLessEqual(held, sent + 250,
                             "the flood was not held during the other pair's run: " + report)

    def test_write_stall_cuts_the_slow_reader(self):
        router = self.start_router(router={"writeStallTimeoutSeconds": 2})
        reader = self.slow_reader(router, "slow.q")
        where = peer_address(reader)
        # the router hands a consumer at most twice linkCapacity (500)
        # unsettled deliveries: large enough messages that those do not fit
        # in the sockets' buffers, so its writes stall
        flood = self.flood(router, "slow.q", 64 * 1024)
        started = time.monotonic()

        def cut_lines():
            return [line for line in router.log().splitlines()
                    if where in line and "write stalled" in line]

        while not cut_lines():
            if time.monotonic() - started > 20 * SLOW:
                self.fail("the slow reader was not cut\n%s" % self.logs())
            self.read_one(reader)
        lines = cut_lines()
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("amqp:resource-limit-exceeded", lines[0])
        self.assertIn("2 s", lines[0])
        # The flood's deliveries to it go back to the sender (released or
        # modified): every one it sent is settled.
        self.wait_for("the flood's deliveries to be settled",
                      lambda: self.flood_counts(flood)[0] > 0 and
                      self.flood_counts(flood)[0] == self.flood_counts(flood)[1])
        self.assertTrue(router.alive())
        # The rest of the router is fine: a fresh pair still flows.
        self.assertGreater(self.bench(router, 20000, runs=1), 0)


if __name__ == "__main__":
    unittest.main()
