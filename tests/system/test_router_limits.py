#!/usr/bin/python3
"""Resource limits: the router keeps enough file descriptors for itself.

Accepting connections until accept() fails with EMFILE puts proton 0.37's
epoll listener into an "overflow" state that later trips an assertion when
the listener closes (found by fault-injection testing: SIGTERM then aborted).
junctiond therefore raises its soft descriptor limit to the hard one at
start-up and refuses connections itself once open connections reach the limit
less a reserve, logging it. The reserve covers two full listen backlogs,
because proton accepts everything queued before the router sees it, and each
refused connection holds its descriptor until proton has closed it.
"""
import socket
import time
import unittest

from harness import RouterTestCase, Recv, Send, Traffic, seq_message, seqs

NOFILE = 512          # RLIMIT_NOFILE given to the router (soft = hard)
RESERVE = 64          # descriptors junctiond keeps back (router/io/io.c)
IDLE = 700            # idle TCP connections opened at once: more than NOFILE


class DescriptorLimitTest(RouterTestCase):

    def open_idle(self, router, n):
        # As fast as they connect: a burst past the limit.
        socks = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", router.port), timeout=5)
            socks.append(s)
        return socks

    def test_connections_past_the_descriptor_limit_are_refused_and_stop_is_clean(self):
        r = self.start_router(nofile=NOFILE)
        socks = self.open_idle(r, IDLE)
        try:
            deadline = time.monotonic() + 10
            while "Refusing connections" not in r.log() and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertIn("Refusing connections", r.log(),
                          "no refusal logged with %d idle connections and a limit of %d\n%s"
                          % (IDLE, NOFILE - RESERVE, self.logs()))
            # The refused ones were closed by the router: reading gives EOF.
            closed = 0
            for s in socks:
                s.settimeout(0.01)
                try:
                    if s.recv(16) == b"":
                        closed += 1
                except (socket.timeout, BlockingIOError):
                    pass
                except OSError:
                    closed += 1
            self.assertGreaterEqual(closed, IDLE - (NOFILE - RESERVE),
                                    "router kept more connections than its limit\n" + self.logs())
        finally:
            for s in socks:
                s.close()
        # Once they are gone the router serves again...
        time.sleep(0.3)
        rx = Recv("limits.q")
        tx = Send("limits.q", [seq_message(i) for i in range(10)])
        self.run_scenario(Traffic(r, [rx], [tx], expect=10))
        self.assertEqual(seqs(rx.messages), list(range(10)))
        # ...and the cleanup's SIGTERM must give exit status 0 (no abort).


if __name__ == "__main__":
    unittest.main()
