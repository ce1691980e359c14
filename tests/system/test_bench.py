#!/usr/bin/python3
"""System tests for junction-bench, the load generator (tools/bench).

Most cases run `junction-bench --direct` on a free 127.0.0.1 port with small
counts: the bench's receiving side listens and its senders connect to it, so
no router is involved. Each case checks the exit status and the --json
figures (sent, received = sent x copies, lost 0, dup 0, unsettled 0).

A second group puts a tiny AMQP relay written with python3-qpid-proton
between senders and receivers, standing in for a router, to check router
mode (receivers attach first, --send-url/--recv-url on two ports, fan-out)
and that a relay which drops or duplicates messages makes the bench report
them and exit 1.

JN_BUILD_DIR names the build directory holding junction-bench (set by
ctest). Every subprocess runs with a 60 s timeout.
"""
import json
import os
import socket
import subprocess
import sys
import time
import unittest

BUILD_DIR = os.environ.get(
    "JN_BUILD_DIR",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build"))
BENCH = os.path.join(BUILD_DIR, "junction-bench")
TIMEOUT = 60  # seconds, for every subprocess


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_bench(*args):
    """Run junction-bench with args; return the CompletedProcess."""
    return subprocess.run([BENCH, *args], capture_output=True, text=True, timeout=TIMEOUT)


class BenchTestCase(unittest.TestCase):
    """Helpers shared by the cases below."""

    def setUp(self):
        if not os.access(BENCH, os.X_OK):
            self.fail("junction-bench not built at %s" % BENCH)

    def run_json(self, *args, status=0):
        """Run with --json, assert the exit status, return the parsed figures."""
        p = run_bench("--json", *args)
        self.assertEqual(p.returncode, status,
                         "exit status of %s\nstdout: %s\nstderr: %s" % (args, p.stdout, p.stderr))
        try:
            return json.loads(p.stdout)
        except ValueError:
            self.fail("stdout is not JSON: %r (stderr: %s)" % (p.stdout, p.stderr))

    def direct(self, *args, status=0):
        """A --direct run on a fresh port."""
        port = free_port()
        return self.run_json("--direct", "--recv-url", "127.0.0.1:%d" % port, *args,
                             status=status)

    def assert_clean(self, fig, sent, copies=1):
        """Every one of `sent` messages arrived `copies` times, once each."""
        self.assertEqual(fig["sent"], sent, fig)
        self.assertEqual(fig["copies"], copies, fig)
        self.assertEqual(fig["expected"], sent * copies, fig)
        self.assertEqual(fig["received"], fig["sent"] * copies, fig)
        self.assertEqual(fig["unique"], fig["received"], fig)
        self.assertEqual(sum(fig["received_per_receiver"]), fig["received"], fig)
        for key in ("lost", "dup", "invalid", "unsettled", "unsent", "released", "rejected",
                    "modified"):
            self.assertEqual(fig[key], 0, "%s: %s" % (key, fig))
        self.assertTrue(fig["ok"], fig)
        self.assertEqual(fig["exit_status"], 0, fig)
        self.assertEqual(fig["failure"], "", fig)
        self.assertEqual(fig["latency_ns"]["samples"], fig["received"], fig)
        self.assertLessEqual(fig["latency_ns"]["p50"], fig["latency_ns"]["p99"], fig)
        self.assertLessEqual(fig["latency_ns"]["p99"], fig["latency_ns"]["max"], fig)


class DirectTest(BenchTestCase):
    """--direct runs: the no-router baseline, one per mode."""

    def test_throughput_unsettled(self):
        fig = self.direct("-c", "20000", "-b", "100", "-w", "500")
        self.assertEqual(fig["mode"], "throughput")
        self.assertEqual(fig["delivery"], "unsettled")
        self.assert_clean(fig, 20000)
        self.assertEqual(fig["settled"], 20000)
        self.assertEqual(fig["accepted"], 20000)
        self.assertGreater(fig["msg_per_s"], 0)

    def test_throughput_presettled(self):
        fig = self.direct("-c", "20000", "--presettled")
        self.assertEqual(fig["delivery"], "presettled")
        self.assert_clean(fig, 20000)
        self.assertEqual(fig["settled"], 0)

    def test_ping_pong_unsettled(self):
        fig = self.direct("--mode", "ping-pong", "-c", "2000")
        self.assertEqual(fig["mode"], "ping-pong")
        self.assert_clean(fig, 2000)
        self.assertEqual(fig["round_trips"], 2000)
        self.assertGreater(fig["round_trips_per_s"], 0)

    def test_ping_pong_presettled(self):
        fig = self.direct("--ping-pong", "--delivery", "presettled", "-c", "2000")
        self.assert_clean(fig, 2000)
        self.assertEqual(fig["round_trips"], 2000)

    def test_two_senders_one_receiver(self):
        fig = self.direct("-s", "2", "-r", "1", "-c", "20001")
        self.assertEqual(fig["senders"], 2)
        self.assert_clean(fig, 20001)

    def test_one_sender_two_receivers_multicast(self):
        # In --direct mode the sender opens one link per receiver and sends
        # every message on each: the fan-out a router would do.
        fig = self.direct("-s", "1", "-r", "2", "--multicast", "-c", "10000")
        self.assertTrue(fig["multicast"])
        self.assert_clean(fig, 10000, copies=2)
        self.assertEqual(fig["received_per_receiver"], [10000, 10000])
        self.assertEqual(fig["settled"], 20000)

    def test_multicast_ping_pong_threads(self):
        fig = self.direct("-s", "2", "-r", "3", "--multicast", "--ping-pong", "-c", "600",
                          "--threads", "2")
        self.assert_clean(fig, 600, copies=3)
        self.assertEqual(fig["round_trips"], 600)

    def test_anycast_two_receivers(self):
        # Without --multicast, sender i's messages go to receiver i mod M.
        fig = self.direct("-s", "2", "-r", "2", "-c", "10000", "--threads", "2")
        self.assert_clean(fig, 10000)
        self.assertEqual(fig["received_per_receiver"], [5000, 5000])

    def test_large_and_empty_bodies(self):
        fig = self.direct("-b", "100000", "-c", "200", "-w", "20")
        self.assert_clean(fig, 200)
        self.assertGreater(fig["message_size"], 100000)
        fig = self.direct("-b", "0", "-c", "1000")
        self.assert_clean(fig, 1000)

    def test_time_limit_stops_sending(self):
        fig = self.direct("-c", "1G", "-t", "0.5")
        self.assertTrue(fig["time_limit_hit"], fig)
        self.assertGreater(fig["sent"], 0)
        self.assertLess(fig["sent"], 1000000000)
        self.assert_clean(fig, fig["sent"])

    def test_human_line(self):
        port = free_port()
        p = run_bench("--direct", "--recv-url", "127.0.0.1:%d" % port, "-c", "1000")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^throughput unsettled body=100 window=1000 direct: "
                         r"1,000 msgs in [0-9.]+ s = [0-9,]+ msg/s; latency p50 [0-9.]+ ms "
                         r"p99 [0-9.]+ ms max [0-9.]+ ms; lost 0 dup 0 unsettled 0\n$")


class FailureTest(BenchTestCase):
    """Runs that cannot succeed exit 1 with a reason."""

    def test_connection_refused(self):
        port = free_port()
        fig = self.run_json("--recv-url", "127.0.0.1:%d" % port, "-c", "10", status=1)
        self.assertIn("Connection refused", fig["failure"])
        self.assertFalse(fig["ok"])

    def test_port_in_use(self):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            port = s.getsockname()[1]
            fig = self.run_json("--direct", "--recv-url", "127.0.0.1:%d" % port, "-c", "10",
                                status=1)
        self.assertIn("cannot listen", fig["failure"])

    def test_no_credit_is_bounded(self):
        # A peer that accepts TCP but never speaks AMQP: bounded by the
        # start-up timeout, exit 1.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            s.listen(4)
            port = s.getsockname()[1]
            t0 = time.monotonic()
            fig = self.run_json("--recv-url", "127.0.0.1:%d" % port, "-c", "10",
                                "--start-timeout", "1", status=1)
            self.assertLess(time.monotonic() - t0, 20)
        self.assertIn("receivers attached", fig["failure"])


class UsageTest(BenchTestCase):
    """Command-line errors exit 2; --help exits 0 and documents every option."""

    def test_usage_errors_exit_2(self):
        for args in (["--bogus"], ["-c", "0"], ["-c", "ten"], ["--mode", "sideways"],
                     ["--delivery", "maybe"], ["-s", "0"], ["--window", "0"],
                     ["--recv-url", "ws://127.0.0.1"], ["--recv-url", "host:99999"],
                     ["--direct", "--send-url", "127.0.0.1:5672"], ["--time-limit", "-1"],
                     ["--direct", "--recv-url", "amqps://127.0.0.1:5672"],
                     ["--threads", "1000"], ["stray-argument"], ["--direct", "--anonymous"]):
            p = run_bench(*args)
            self.assertEqual(p.returncode, 2, "%s: %s" % (args, p.stderr))
            self.assertIn("junction-bench", p.stderr)
            self.assertEqual(p.stdout, "")

    def test_help_exits_0(self):
        p = run_bench("--help")
        self.assertEqual(p.returncode, 0, p.stderr)
        for option in ("--mode", "--ping-pong", "--delivery", "--presettled", "--body-size",
                       "--window", "--count", "--time-limit", "--address", "--senders",
                       "--receivers", "--multicast", "--send-url", "--recv-url", "--direct",
                       "--start-timeout", "--idle-timeout", "--threads", "--json",
                       "--verbose", "--help"):
            self.assertIn(option, p.stdout)
        self.assertIn("Exit status", p.stdout)


# A stand-in router for router-mode tests: listens on the given ports, takes
# messages from any sending link and passes them to the receiving links that
# asked for the same address (round-robin, or to all with "multicast"),
# dropping or duplicating every n-th message on request.
RELAY_SOURCE = r'''
import collections, sys
from proton.handlers import MessagingHandler
from proton.reactor import Container

class Relay(MessagingHandler):
    def __init__(self, ports, multicast, drop_every, dup_every):
        super().__init__(prefetch=50)
        self.ports, self.multicast = ports, multicast
        self.drop_every, self.dup_every = drop_every, dup_every
        self.outgoing = collections.OrderedDict()  # link -> queued messages
        self.n = 0

    def on_start(self, event):
        for port in self.ports:
            event.container.listen("127.0.0.1:%d" % port)
        print("listening", flush=True)

    def on_link_opened(self, event):
        if event.link.is_sender:
            self.outgoing[event.link] = collections.deque()

    def on_link_closing(self, event):
        self.outgoing.pop(event.link, None)

    def on_disconnected(self, event):
        for link in list(self.outgoing):
            if link.connection == event.connection:
                self.outgoing.pop(link)

    def on_message(self, event):
        self.n += 1
        if self.drop_every and self.n % self.drop_every == 0:
            return
        copies = 2 if self.dup_every and self.n % self.dup_every == 0 else 1
        links = list(self.outgoing)
        if not links:
            return
        if not self.multicast:
            links = [links[self.n % len(links)]]
        for link in links:
            for _ in range(copies):
                self.outgoing[link].append(event.message)
            self.pump(link)

    def on_sendable(self, event):
        self.pump(event.link)

    def pump(self, link):
        queue = self.outgoing.get(link)
        while queue and link.credit > 0:
            link.send(queue.popleft())

ports = [int(p) for p in sys.argv[1].split(",")]
Container(Relay(ports, sys.argv[2] == "multicast", int(sys.argv[3]), int(sys.argv[4]))).run()
'''


class RelayTest(BenchTestCase):
    """Router mode through a small python3-qpid-proton relay."""

    def setUp(self):
        super().setUp()
        probe = subprocess.run([sys.executable, "-c", "import proton"], capture_output=True)
        if probe.returncode != 0:
            self.skipTest("python3-qpid-proton is not installed for %s" % sys.executable)
        self.relay = None

    def tearDown(self):
        if self.relay:
            self.relay.kill()
            self.relay.wait(timeout=TIMEOUT)
            self.relay.stdout.close()

    def start_relay(self, nports=1, multicast=False, drop_every=0, dup_every=0):
        """Start the relay; return its ports once it listens."""
        ports = [free_port() for _ in range(nports)]
        self.relay = subprocess.Popen(
            [sys.executable, "-c", RELAY_SOURCE, ",".join(map(str, ports)),
             "multicast" if multicast else "anycast", str(drop_every), str(dup_every)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.assertEqual(self.relay.stdout.readline().strip(), "listening")
        deadline = time.monotonic() + TIMEOUT
        for port in ports:
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    self.assertLess(time.monotonic(), deadline, "relay never listened")
                    time.sleep(0.05)
        return ports

    def test_router_mode_unsettled(self):
        (port,) = self.start_relay()
        url = "127.0.0.1:%d" % port
        fig = self.run_json("--send-url", url, "--recv-url", url, "-c", "2000", "-w", "100")
        self.assertFalse(fig["direct"])
        self.assert_clean(fig, 2000)

    def test_send_and_receive_urls_differ(self):
        send_port, recv_port = self.start_relay(nports=2)
        fig = self.run_json("--send-url", "amqp://127.0.0.1:%d" % send_port,
                            "--recv-url", "amqp://127.0.0.1:%d" % recv_port,
                            "-s", "2", "-r", "2", "-c", "2000", "--presettled")
        self.assert_clean(fig, 2000)

    def test_router_multicast_ping_pong(self):
        (port,) = self.start_relay(multicast=True)
        url = "127.0.0.1:%d" % port
        fig = self.run_json("--send-url", url, "--recv-url", url, "-r", "2", "--multicast",
                            "--ping-pong", "-c", "300")
        self.assert_clean(fig, 300, copies=2)

    def test_lost_messages_exit_1(self):
        (port,) = self.start_relay(drop_every=100)
        url = "127.0.0.1:%d" % port
        fig = self.run_json("--send-url", url, "--recv-url", url, "-c", "2000",
                            "--idle-timeout", "1", status=1)
        self.assertEqual(fig["sent"], 2000)
        self.assertEqual(fig["lost"], 20)
        self.assertEqual(fig["dup"], 0)
        self.assertTrue(fig["idle_timeout_hit"])
        self.assertFalse(fig["ok"])

    def test_duplicates_exit_1(self):
        (port,) = self.start_relay(dup_every=100)
        url = "127.0.0.1:%d" % port
        fig = self.run_json("--send-url", url, "--recv-url", url, "-c", "2000",
                            "--presettled", "--idle-timeout", "1", status=1)
        self.assertEqual(fig["dup"], 20)
        self.assertEqual(fig["lost"], 0)
        self.assertEqual(fig["received"], 2020)


if __name__ == "__main__":
    unittest.main()
