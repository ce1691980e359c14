#!/usr/bin/python3
"""The I/O layer's edges (router/io): end of stream that arrives with the
last octets, proton's idle timeout on a connector whose peer never speaks
(on time, and again on every retry), a connector deleted while its attempt
is in progress, and a listener deleted and created again on its port.
Everything on 127.0.0.1; each test bounded in time.
"""
import os
import socket
import threading
import time
import unittest

from harness import SLOW, RouterTestCase
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


class IoEdgeTest(RouterTestCase):

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
