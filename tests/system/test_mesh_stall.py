#!/usr/bin/python3
"""The router's own stall is not its peers' silence (issue 29, item 2).

An interior router A is stopped (SIGSTOP) for longer than every limit by
which it judges a peer silent: an edge's heartbeat (8 s), a neighbour's
HELLOs (helloMaxAgeSeconds, 3 s) and the AMQP idle timeout of its
listeners (idleTimeoutSeconds, set to 4 s here). Its peers go on sending
meanwhile; what they send waits in A's sockets. Continued (SIGCONT), A
must read that before it judges anyone: no connection is closed (the
edge's uplink, the inter-router connection, the clients'), routes stay,
and the traffic that waited goes on, nothing lost, duplicated or refused.

The peers' own limits are set above the stall (B's helloMaxAgeSeconds,
the connectors' and clients' idle timeouts), since from their side A
really was silent: what is tested is only A's judgement of them.
"""
import time
import signal
import unittest

from harness import SLOW, RouterTestCase, Witness, conf_section, free_port
from mesh import distinct_ports
from test_edge import query

STALL = 10.0  # s: above the edge heartbeat timeout (8 s), helloMaxAge (3 s), idle (4 s)


class PairWitness(Witness):
    """Witness traffic (harness.Witness) from a sender on one router to a
    receiver on another, over connections with an AMQP idle-time-out of
    their own (`heartbeat`, seconds) so that the router has to keep them
    alive too."""

    def __init__(self, send_url, recv_url, address, heartbeat=60):
        super().__init__(None, address=address, per_tick=2)
        self.send_url, self.recv_url, self.heartbeat = send_url, recv_url, heartbeat

    def start(self):
        self.receiver = self.container.create_receiver(
            self.connect(self.recv_url, heartbeat=self.heartbeat), self.address)

    def on_link_opened(self, event):
        if event.link == self.receiver:
            event.link.flow(500)
            self.sender = self.container.create_sender(
                self.connect(self.send_url, heartbeat=self.heartbeat), self.address)


def config(rid, mode, port_lines, router_extra=None):
    r = {"mode": mode, "id": rid, "workerThreads": 2}
    r.update(router_extra or {})
    text = conf_section("router", r)
    text += "".join(port_lines)
    text += conf_section("log", {"module": "DEFAULT", "enable": "info+",
                                 "includeTimestamp": "yes"})
    return text


def listener(port, role, idle=None, name=None):
    return conf_section("listener", {"name": name, "host": "127.0.0.1", "port": port,
                                     "role": role, "saslMechanisms": "ANONYMOUS",
                                     "authenticatePeer": "no", "idleTimeoutSeconds": idle})


def connector(port, role, idle):
    return conf_section("connector", {"host": "127.0.0.1", "port": port, "role": role,
                                      "saslMechanisms": "ANONYMOUS",
                                      "idleTimeoutSeconds": idle})


class OwnStallTest(RouterTestCase):

    def connections(self, router):
        """{identity: (role, container)} of the router's connections, less
        the management query's own."""
        rows = query(router.url, "org.apache.qpid.dispatch.connection",
                     ["identity", "role", "container"])
        return {r["identity"]: (r["role"], r["container"]) for r in rows
                if r["role"] != "normal" or (r["container"] or "").startswith("jn-test-")}

    def test_stopped_interior_keeps_its_edges_neighbours_and_clients(self):
        ports = distinct_ports(["edge", "ir"])
        # A: 4 s idle timeout on every listener; edge and inter-router listeners
        a = self.start_router(config=config("A", "interior", [
            listener("{port}", "normal", idle=4),
            listener(ports["edge"], "edge", idle=4, name="edges"),
            listener(ports["ir"], "inter-router", idle=4, name="ir")]))
        # B and the edge E allow A a long silence (they are not under test)
        b = self.start_router(config=config("B", "interior", [
            listener("{port}", "normal"), connector(ports["ir"], "inter-router", 60)],
            {"helloMaxAgeSeconds": 60}))
        e = self.start_router(config=config("E", "edge", [
            listener("{port}", "normal"), connector(ports["edge"], "edge", 60)]))
        self.wait_for("the edge attached to A", lambda: "Edge router 'E' attached" in a.log())
        self.wait_for("A and B neighbours", lambda: "Router B is a neighbour" in a.log() and
                      "Router A is a neighbour" in b.log(), 20 * SLOW)
        # traffic that crosses A: edge E -> A -> B, and a client pair on A
        w_edge = PairWitness(e.url, b.url, "stall.edge").start_thread()
        w_a = PairWitness(a.url, a.url, "stall.local").start_thread()
        for w in (w_edge, w_a):
            self.addCleanup(lambda w=w: w.thread.is_alive() and w.finish(0))
            if w.error or len(w.got) < 5:
                self.fail("witness traffic did not start: %s %s\n%s"
                          % (w.error, w.progress(), self.logs()))
        before = self.connections(a)
        self.assertEqual(sorted(r for r, _ in before.values()),
                         ["edge", "inter-router", "normal", "normal"], before)

        a.proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(STALL)
        finally:
            a.proc.send_signal(signal.SIGCONT)
        # A's every judgement has had time to run (1 s ticks; idle ticks)
        time.sleep(6)
        after = self.connections(a)
        self.assertEqual({k: v for k, v in after.items() if k in before}, before,
                         "a connection of A's was closed after its stall\n" + self.logs())
        for w in (w_edge, w_a):
            self.finish_witness(w, more=20)
        log = a.log()
        self.assertIn("did not run for", log)  # A noticed its own stall
        for bad in ("sent no heartbeat", "expired (no HELLO)", "idle-timeout",
                    "Inter-router connection to router"):
            self.assertNotIn(bad, log)
        self.assertNotIn("Edge uplink lost", e.log())
        self.assertEqual(e.log().count("Edge uplink active"), 1)
        self.assertNotIn("expired", b.log())


if __name__ == "__main__":
    unittest.main()
