#!/usr/bin/python3
"""A half-open inter-router link is closed once its HELLOs age out (issue
29, item 3).

Three interiors in a triangle; the direct link A-B (cost 1) goes through
a TCP proxy in this test, the other path A-C-B costs 2. Unsettled anycast
messages flow from a sender on A to a receiver on B, at most WINDOW
unsettled at a time (as an application with a bounded window sends). The
proxy then stops forwarding both ways without closing either socket: to
both routers the connection stays up and carries nothing. Each must notice
within helloMaxAgeSeconds (3 s) that its neighbour's HELLOs stopped, and
close the connection: the deliveries stuck on it come back modified, and
traffic moves to A-C-B. Asserted: every delivery sent before the freeze
has its outcome, and a delivery sent after it is accepted, within 4 s of
the freeze (more under a sanitizer); every delivery has exactly one
outcome, accepted or modified (released only for one the receiver never
saw); every accepted message was received, none twice.
"""
import socket
import sys
import threading
import time
import unittest

from proton import Delivery, Message

from harness import SLOW, RouterTestCase, Scenario
from mesh import Mesh

LIMIT = 4.0 + (SLOW - 1) * 1.0  # s from the freeze; slack for sanitizer builds
WINDOW = 200  # unsettled deliveries at most
RATE = 500  # messages a second


class FreezingProxy:
    """A TCP proxy on 127.0.0.1 to `target_port`, a thread per direction of
    each connection. freeze() stops the forwarding both ways (nothing more
    is read from either socket, nothing closed); connections accepted
    while frozen are held the same way."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.lsock.settimeout(0.1)
        self.port = self.lsock.getsockname()[1]
        self.frozen = threading.Event()
        self.closing = threading.Event()
        self.socks = []
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self):
        while not self.closing.is_set():
            try:
                down, _ = self.lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                up = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                down.close()
                continue
            self.socks += [down, up]
            for src, dst in ((down, up), (up, down)):
                t = threading.Thread(target=self._pump, args=(src, dst), daemon=True)
                self.threads.append(t)
                t.start()

    def _pump(self, src, dst):
        src.settimeout(0.05)
        while not self.closing.is_set():
            if self.frozen.is_set():
                time.sleep(0.05)
                continue
            try:
                data = src.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            try:
                dst.sendall(data)
            except OSError:
                break

    def freeze(self):
        self.frozen.set()

    def close(self):
        self.closing.set()
        self.lsock.close()
        for t in self.threads:
            t.join(5)
        for s in self.socks:
            s.close()


class ViaProxyMesh(Mesh):
    """A Mesh whose router `a` connects to router `b` through port `via`."""

    def __init__(self, case, names, edges, a, b, router_attrs=None):
        super().__init__(case, names, edges, router_attrs)
        self.detour = (a, b)
        self.via = None

    def config(self, name):
        text = super().config(name)
        a, b = self.detour
        if name == a and self.via:
            text = text.replace("port: %d\n" % self.ir_ports[b], "port: %d\n" % self.via)
        return text


class FlowAndFreeze(Scenario):
    """Sender on A, receiver on B; `freeze` is called once FREEZE_AFTER
    messages are accepted; ends RUN_AFTER seconds after the freeze, once
    every delivery sent has its outcome."""

    FREEZE_AFTER = 500
    RUN_AFTER = LIMIT + 2.0

    def __init__(self, send_url, recv_url, freeze):
        super().__init__(timeout=60)
        self.send_url, self.recv_url, self.freeze = send_url, recv_url, freeze
        self.outcomes = {}  # seq -> (state, time settled)
        self.sent_at = {}  # seq -> time sent
        self.received = []
        self.frozen_at = None
        self.snd = None
        self.sent = 0

    def start(self):
        self.rcv = self.container.create_receiver(self.connect(self.recv_url), "halfopen.q")

    def on_link_opened(self, event):
        if event.link == self.rcv:
            event.link.flow(WINDOW * 2)
            self.snd = self.container.create_sender(self.connect(self.send_url), "halfopen.q")
            self.t0 = time.monotonic()

    def send_some(self):
        if self.snd is None:
            return
        now = time.monotonic()
        if self.frozen_at is not None and now - self.frozen_at > self.RUN_AFTER:
            if len(self.outcomes) == self.sent:
                self.done()
            return
        allowed = int((now - self.t0) * RATE) + 1
        while (self.snd.credit > 0 and self.sent < allowed and
               self.sent - len(self.outcomes) < WINDOW):
            dlv = self.snd.send(Message(body=self.sent, properties={"seq": self.sent}))
            dlv.seq = self.sent
            self.sent_at[self.sent] = now
            self.sent += 1

    def tick(self):
        self.send_some()

    def on_sendable(self, event):
        self.send_some()

    def on_message(self, event):
        self.received.append(event.message.properties["seq"])
        event.delivery.update(Delivery.ACCEPTED)
        event.delivery.settle()
        event.link.flow(1)

    def on_settled(self, event):
        dlv = event.delivery
        if dlv.link != self.snd:
            return
        self.outcomes[dlv.seq] = (dlv.remote_state, time.monotonic())
        accepted = sum(1 for s, _ in self.outcomes.values() if s == Delivery.ACCEPTED)
        if self.frozen_at is None and accepted >= self.FREEZE_AFTER:
            self.frozen_at = time.monotonic()
            self.freeze()
        self.send_some()

    def progress(self):
        return "sent %d, outcomes %d, received %d, frozen %s" % (
            self.sent, len(self.outcomes), len(self.received), self.frozen_at is not None)


class HalfOpenLinkTest(RouterTestCase):

    def test_traffic_leaves_a_half_open_link_within_hello_max_age(self):
        edges = [("A", "B", 1), ("A", "C", 1), ("C", "B", 1)]
        m = ViaProxyMesh(self, ["A", "B", "C"], edges, "A", "B")
        proxy = FreezingProxy(m.ir_ports["B"])
        m.via = proxy.port
        self.addCleanup(proxy.close)  # after the routers' stop (cleanups run last first)
        m.start()
        self.addCleanup(proxy.close)  # before it: the routers see the sockets close
        s = FlowAndFreeze(m["A"].url, m["B"].url, proxy.freeze)
        self.run_scenario(s)

        frozen = s.frozen_at
        states = {q: st for q, (st, _) in s.outcomes.items()}
        # the longest any delivery waited for its outcome
        longest = max(t - s.sent_at[q] for q, (_, t) in s.outcomes.items())
        # traffic again: the first acceptance of a delivery sent when the
        # proxy had surely stopped (its threads look at the flag every 50 ms)
        after_ok = [t for q, (st, t) in s.outcomes.items()
                    if st == Delivery.ACCEPTED and s.sent_at[q] > frozen + 0.5]
        resumed = min(after_ok) - frozen if after_ok else None
        counts = {n: sum(1 for v in states.values() if v == st)
                  for n, st in (("accepted", Delivery.ACCEPTED), ("modified", Delivery.MODIFIED),
                                ("released", Delivery.RELEASED))}
        print("\nhalf-open A-B: traffic accepted again %.2f s after the freeze; the longest "
              "wait for an outcome %.2f s; %s"
              % (resumed if resumed is not None else -1, longest, counts), file=sys.stderr)

        self.assertEqual(len(s.outcomes), s.sent, "a delivery was left without an outcome")
        self.assertEqual(len(s.received), len(set(s.received)), "a message was received twice")
        accepted = {q for q, st in states.items() if st == Delivery.ACCEPTED}
        self.assertLessEqual(accepted, set(s.received), "an accepted message was never received")
        released = {q for q, st in states.items() if st == Delivery.RELEASED}
        self.assertFalse(released & set(s.received),
                         "released, though the receiver saw it: %s" % sorted(released)[:10])
        others = set(states.values()) - {Delivery.ACCEPTED, Delivery.MODIFIED, Delivery.RELEASED}
        self.assertFalse(others, "outcomes other than accepted/modified/released")
        self.assertIsNotNone(resumed, "no delivery sent after the freeze was accepted\n"
                             + self.logs())
        self.assertLess(resumed, LIMIT, "traffic did not move to A-C-B in time")
        self.assertLess(longest, LIMIT, "deliveries on the half-open link waited")
        # closed at once (nothing heard since the last HELLO), or by the
        # silence watch a moment later (the last frames came after it)
        self.assertIn("Inter-router connection closed", m["A"].log())


if __name__ == "__main__":
    unittest.main()
