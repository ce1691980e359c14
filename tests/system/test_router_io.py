#!/usr/bin/python3
"""The I/O layer's edges (router/io): end of stream that arrives with the
last octets, proton's idle timeout on a connector whose peer never speaks
(on time, and again on every retry), a connector deleted while its attempt
is in progress, a listener deleted and created again on its port, and a
connection moved to the thread of the connection it exchanges its
deliveries with (while it streams, and while its peer is killed), and a
listener's failoverUrls and openProperties sent to its clients in the Open.
Everything on 127.0.0.1; each test bounded in time.
"""
import json
import os
import signal
import socket
import subprocess
import threading
import time
import unittest

from harness import BENCH, SLOW, RouterTestCase
from test_mgmt_agent import Manager

TIMEOUT = 10 * SLOW


class SilentPeer:
    """A TCP listener that accepts and never sends a byte; it records when
    each connection was accepted and when the router closed it."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = []  # monotonic times
        self.closed = []    # (accepted at, closed at)
        self.lock = threading.Lock()
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        self.sock.settimeout(0.1)
        while not self.stop:
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            t = time.monotonic()
            with self.lock:
                self.accepted.append(t)
            threading.Thread(target=self.drain, args=(c, t), daemon=True).start()

    def drain(self, c, t):
        c.settimeout(TIMEOUT)
        try:
            while c.recv(4096):
                pass
        except OSError:
            pass
        with self.lock:
            self.closed.append((t, time.monotonic()))
        c.close()

    def close(self):
        self.stop = True
        self.sock.close()


def open_fds(router):
    return len(os.listdir("/proc/%d/fd" % router.pid))


DEBUG_LOG = "log {\n    module: SERVER\n    enable: debug+\n    includeTimestamp: yes\n}\n"
MOVED = "Moved from worker thread"


class IoEdgeTest(RouterTestCase):

    def bench(self, router, *args):
        """Start junction-bench against router (a Popen; --json output)."""
        if not os.access(BENCH, os.X_OK):
            self.fail("junction-bench not built at %s" % BENCH)
        return subprocess.Popen([BENCH, "--json", "--send-url", "127.0.0.1:%d" % router.port,
                                 "--recv-url", "127.0.0.1:%d" % router.port,
                                 "--start-timeout", str(10 * SLOW),
                                 "--idle-timeout", str(10 * SLOW), *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def bench_ok(self, p, count):
        """p finished with every message delivered once and settled."""
        try:
            out, err = p.communicate(timeout=120 * SLOW)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail("junction-bench did not finish\n" + self.logs())
        detail = "status %s: %s %s\n%s" % (p.returncode, out, err, self.logs())
        try:
            fig = json.loads(out)
        except ValueError:
            self.fail(detail)
        self.assertEqual((fig["received"], fig["unique"], fig["lost"], fig["dup"]),
                         (count, count, 0, 0), detail)
        self.assertEqual(fig["unsettled"], 0, detail)
        self.assertEqual(p.returncode, 0, detail)

    def test_listener_failover_urls_in_the_open_properties(self):
        # As 1.19: failover-server-list, one map per URL (scheme only when
        # given); the old name failoverList too.
        from proton.utils import BlockingConnection
        r = self.start_router(listener={"failoverUrls": "second:25000, amqps://third:5671,"
                                                        " [::1]:7"})
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        try:
            fol = c.conn.remote_properties["failover-server-list"]
        finally:
            c.close()
        self.assertEqual(fol, [{"network-host": "second", "port": "25000"},
                               {"scheme": "amqps", "network-host": "third", "port": "5671"},
                               {"network-host": "[::1]", "port": "7"}])

    def test_listener_open_properties_in_the_open(self):
        # As 1.19: the configured map's entries join the router's own
        # properties, keys as symbols, JSON types kept.
        from proton import symbol
        from proton.utils import BlockingConnection
        r = self.start_router(listener={"openProperties": '{\n "app": "shop",\n'
                                        ' "n": [1, -0.5, {"a": null, "b": true}],\n}'})
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        try:
            props = c.conn.remote_properties
        finally:
            c.close()
        self.assertEqual(props["app"], "shop")
        self.assertIsInstance(list(props)[list(props).index("app")], symbol)
        self.assertEqual(props["n"], [1, -0.5, {"a": None, "b": True}])
        self.assertEqual(props["product"], "qpid-dispatch-router")

    def test_a_flow_moves_onto_one_thread_and_loses_nothing(self):
        """With two worker threads, round-robin placement puts a sender's
        and a receiver's connection on different threads; once the core
        sees them exchange (nearly) all their deliveries, one moves to the
        other's thread, in mid-stream. Every message still arrives once and
        is settled: unsettled, pre-settled, one at a time, and 1 MiB
        messages (a few hundred: each streams through in many rounds of
        octets, and those rounds count)."""
        r = self.start_router(extra=DEBUG_LOG, worker_threads=2)
        for args, count in ((["-c", "30000"], 30000),
                            (["-c", "30000", "--presettled"], 30000),
                            (["-c", "3000", "--ping-pong"], 3000),
                            (["-c", "400", "-b", "1048576", "-w", "10"], 400)):
            before = r.log().count(MOVED)
            self.bench_ok(self.bench(r, "-a", "move.%d" % count, *args), count)
            self.assertGreater(r.log().count(MOVED), before,
                               "no connection moved for %s\n%s" % (args, self.logs()))

    def test_moving_flows_with_peers_killed_mid_stream(self):
        """Four flows at once (pairs on their own addresses, so each pair
        moves together), two of whose clients are killed while their
        connections move or have moved: the other two finish intact, and
        the router serves a new flow afterwards."""
        r = self.start_router(extra=DEBUG_LOG, worker_threads=2)

        def started(*args):
            # one client at a time: its receiver's and sender's connections
            # arrive one after the other, so round-robin placement puts
            # them on different threads and the pair must move (clients
            # started together could interleave so that every pair happens
            # to share a thread already, and nothing would move)
            p = self.bench(r, *args)
            self.wait_for("client %d's connections" % p.pid,
                          lambda: "jn-bench-%d-s0" % p.pid in r.log(), timeout=10 * SLOW)
            return p
        keep = [started("-a", "pair.%d" % i, "-c", "60000") for i in range(2)]
        doomed = [started("-a", "doomed.%d" % i, "-c", "100000000") for i in range(2)]
        self.wait_for("a connection to move", lambda: MOVED in r.log(), timeout=20 * SLOW)
        for p in doomed:
            p.send_signal(signal.SIGKILL)
            p.communicate()
        for p in keep:
            self.bench_ok(p, 60000)
        self.assertTrue(r.alive(), self.logs())
        self.bench_ok(self.bench(r, "-a", "after", "-c", "5000"), 5000)

    def test_end_of_stream_with_the_last_octets_closes_the_connection(self):
        """A peer that sends a few octets and closes at once: epoll reports
        the data and the end of stream in one edge; the router must still
        see the end and close its socket (it used to keep it in CLOSE-WAIT
        for ever, and 200 such peers locked everyone out)."""
        r = self.start_router()
        base = open_fds(r)
        for payload in (b"AMQP", b"\n", b"AMQP\x03\x01\x00\x00") * 20:
            s = socket.create_connection(("127.0.0.1", r.port), timeout=5)
            s.sendall(payload)
            s.close()
        self.wait_for("the router to close 60 half-closed connections",
                      lambda: open_fds(r) <= base + 1)

    def test_connector_to_a_silent_peer_times_out_on_time_and_on_every_retry(self):
        """A connector whose peer accepts TCP and never speaks AMQP: each
        attempt ends when the idle timeout (2 s) expires — not one idle
        period later — and the retries go on doing so."""
        peer = SilentPeer()
        self.addCleanup(peer.close)
        r = self.start_router(extra="connector {\n    host: 127.0.0.1\n    port: %d\n"
                                    "    idleTimeoutSeconds: 2\n}\n" % peer.port)
        self.wait_for("three attempts to be closed by the router",
                      lambda: len(peer.closed) >= 3, timeout=30 * SLOW)
        with peer.lock:
            held = [round(c - a, 2) for a, c in peer.closed]
        for h in held:
            self.assertLess(h, 3.5 * SLOW, "attempts held %s s with a 2 s idle timeout\n%s"
                            % (held, self.logs()))
        self.assertTrue(r.alive())

    def test_connector_deleted_while_connecting_ends_its_attempt(self):
        """DELETE of a connector whose attempt is connected at TCP level but
        not open: the attempt is closed at once and not retried."""
        peer = SilentPeer()
        self.addCleanup(peer.close)
        r = self.start_router()
        mgr = Manager(r)
        self.addCleanup(mgr.close)
        code, desc, _ = mgr.call({"operation": "CREATE", "type": "connector", "name": "toSilent"},
                                 {"host": "127.0.0.1", "port": str(peer.port),
                                  "idleTimeoutSeconds": 60})
        self.assertEqual(code, 201, desc)
        self.wait_for("the attempt to connect", lambda: len(peer.accepted) >= 1)
        code, desc, _ = mgr.call({"operation": "DELETE", "type": "connector", "name": "toSilent"})
        self.assertEqual(code, 204, desc)
        self.wait_for("the attempt to be closed", lambda: len(peer.closed) >= 1, timeout=3 * SLOW)
        time.sleep(1.0)
        self.assertEqual(len(peer.accepted), 1, "a deleted connector tried again\n" + self.logs())
        self.assertNotIn("Connector 127.0.0.1:%d: retrying" % peer.port, r.log())

    def test_listener_deleted_and_created_again_on_its_port(self):
        """DELETE closes the listening socket before it answers, so a CREATE
        on the same port right after it succeeds, every time."""
        r = self.start_router()
        mgr = Manager(r)
        self.addCleanup(mgr.close)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        attrs = {"host": "127.0.0.1", "port": str(port), "saslMechanisms": "ANONYMOUS"}
        for i in range(10):
            code, desc, _ = mgr.call({"operation": "CREATE", "type": "listener", "name": "again"},
                                     attrs)
            self.assertEqual(code, 201, "round %d: %s\n%s" % (i, desc, self.logs()))
            code, desc, _ = mgr.call({"operation": "DELETE", "type": "listener", "name": "again"})
            self.assertEqual(code, 204, "round %d: %s" % (i, desc))
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()


if __name__ == "__main__":
    unittest.main()
