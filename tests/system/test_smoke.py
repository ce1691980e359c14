#!/usr/bin/python3
"""Smoke test: junctiond starts, routes, and stops cleanly.

One router on a free 127.0.0.1 port with a temporary configuration; a
receiver (its own BlockingConnection, in a thread) and a sender (another
BlockingConnection) exchange 100 unsettled messages: every one arrives and
every one is accepted. Then SIGTERM: the router must exit with status 0
(no pool leak) within 5 s. Every wait is bounded; the router is killed if
anything goes wrong.

JN_BUILD_DIR names the build directory holding junctiond (set by ctest).
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from proton import Delivery, Message, Timeout
from proton.utils import BlockingConnection

BUILD_DIR = os.environ.get(
    "JN_BUILD_DIR",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build"))
JUNCTIOND = os.path.join(BUILD_DIR, "junctiond")
COUNT = 100
ADDRESS = "smoke.queue"
STOP_TIMEOUT = 5.0


def free_port():
    """A TCP port on 127.0.0.1 that nothing is bound to right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CONFIG = """\
router {
    mode: standalone
    id: Smoke
    workerThreads: 2
}
listener {
    host: 127.0.0.1
    port: %d
    saslMechanisms: ANONYMOUS
    authenticatePeer: no
}
"""


class SmokeTest(unittest.TestCase):

    def setUp(self):
        if not os.access(JUNCTIOND, os.X_OK):
            self.fail("junctiond not built at %s" % JUNCTIOND)
        self.dir = tempfile.mkdtemp(prefix="jn-smoke-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.port = free_port()
        conf = os.path.join(self.dir, "junctiond.conf")
        with open(conf, "w") as f:
            f.write(CONFIG % self.port)
        self.log_path = os.path.join(self.dir, "junctiond.log")
        self.log = open(self.log_path, "w")
        self.addCleanup(self.log.close)
        self.router = subprocess.Popen([JUNCTIOND, "-c", conf], stdout=self.log,
                                       stderr=subprocess.STDOUT)
        self.addCleanup(self.kill_router)
        self.wait_listening()

    def kill_router(self):
        if self.router.poll() is None:
            self.router.kill()
            self.router.wait(timeout=10)

    def logs(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_listening(self):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.router.poll() is not None:
                self.fail("junctiond exited with %s at start:\n%s"
                          % (self.router.returncode, self.logs()))
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.fail("junctiond did not listen on port %d within 10 s:\n%s"
                  % (self.port, self.logs()))

    def test_100_unsettled_messages_then_clean_stop(self):
        url = "127.0.0.1:%d" % self.port
        rconn = BlockingConnection(url, timeout=10)
        receiver = rconn.create_receiver(ADDRESS, credit=COUNT)
        got, errors = [], []
        sent_all = threading.Event()

        def receive():
            try:
                for _ in range(COUNT):
                    m = receiver.receive(timeout=10)
                    got.append(m.body)
                    receiver.accept()
                # keep the connection serviced so the last accept leaves
                # and the sender's last settlement can come back
                deadline = time.monotonic() + 10
                while not sent_all.is_set() and time.monotonic() < deadline:
                    try:
                        rconn.wait(sent_all.is_set, timeout=0.05)
                    except Timeout:
                        pass
            except Exception as e:  # reported by the main thread
                errors.append(e)

        thread = threading.Thread(target=receive, daemon=True)
        thread.start()
        sconn = BlockingConnection(url, timeout=10)
        sender = sconn.create_sender(ADDRESS)
        outcomes = []
        try:
            for i in range(COUNT):
                # unsettled: send() returns once the router settled it,
                # with the receiver's outcome
                outcomes.append(sender.send(Message(body="smoke-%d" % i)))
        finally:
            sent_all.set()
            thread.join(timeout=15)
        self.assertFalse(thread.is_alive(), "receiver thread did not finish")
        self.assertEqual(errors, [], "receiver failed:\n%s" % self.logs())
        self.assertEqual(got, ["smoke-%d" % i for i in range(COUNT)])
        self.assertEqual([d.remote_state for d in outcomes], [Delivery.ACCEPTED] * COUNT,
                         "not every message was accepted")
        sconn.close()
        rconn.close()

        self.router.send_signal(signal.SIGTERM)
        try:
            status = self.router.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.fail("junctiond did not stop within %.0f s of SIGTERM:\n%s"
                      % (STOP_TIMEOUT, self.logs()))
        self.assertEqual(status, 0, "junctiond exit status after SIGTERM:\n%s" % self.logs())


if __name__ == "__main__":
    unittest.main()
