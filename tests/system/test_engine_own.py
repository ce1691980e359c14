#!/usr/bin/python3
"""Client connections on Junction's own AMQP engine (docs/engine.md, stage
2b(ii) round 1), the only engine junctiond has since stage 5.

Each test starts junctiond and runs real clients over it
(python3-qpid-proton, which opens with SASL ANONYMOUS, and junction-bench),
and asserts from the router's side that the connections ran on the own
engine: one "Connection runs on Junction's own AMQP engine" log line per
client connection. Covered: unsettled and pre-settled traffic, messages of
many frames both ways, two receivers sharing an address (balanced), a
receiver that goes away holding unsettled deliveries (released to the
sender), the drain asked of a sender whose address lost its consumer, a
receiver with a dynamic source and management over it, a link the own
engine does not serve (a target type it does not know: refused with
amqp:not-implemented naming it), junction-bench through the router, and
that the A/B switch is gone (JUNCTION_ENGINE=proton in the router's
environment changes nothing).

JN_BUILD_DIR names the build directory (set by ctest).
"""
import json
import os
import subprocess
import sys
import unittest

from proton import Described, Message, uint, ulong
from proton.reactor import AtMostOnce, Container
from proton.utils import BlockingConnection, LinkDetached, SyncRequestResponse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (BENCH, SLOW, Recv, Router, RouterTestCase,  # noqa: E402
                     Scenario, Send, Traffic, conf_section, seq_message)
from test_router_drain import ConsumerGoes  # noqa: E402

OWN_LINE = "Connection runs on Junction's own AMQP engine"


class OwnEngineCase(RouterTestCase):
    """Routers whose connections the tests check ran on the own engine
    (test_engine_own_*.py share it)."""

    def start_own(self, env=None, **kw):
        """A router, started with env (None: the tests' own environment)."""
        r = Router(self.workdir, name="R%d" % len(self.routers), **kw)
        if env is not None:
            r.env = env
        r.start()
        self.routers.append(r)
        self.addCleanup(self._stop_router, r)
        r.wait_ready()
        return r

    def own_connections(self, r):
        return r.log().count(OWN_LINE)

    def assert_own(self, r, at_least):
        n = self.own_connections(r)
        self.assertGreaterEqual(n, at_least, "connections on the own engine\n%s" % self.logs())
        self.assertNotIn("failed:", r.log(), self.logs())


class OwnEngineTest(OwnEngineCase):

    def test_unsettled_and_presettled_on_the_own_engine(self):
        r = self.start_own()
        recv = Recv("own.q", credit=50)
        unsettled = Send("own.q", [seq_message(i) for i in range(100)])
        presettled = Send("own.q", [seq_message(100 + i) for i in range(100)], presettled=True)
        self.run_scenario(Traffic(r, [recv], [unsettled, presettled], expect=200))
        seqs = sorted(m.properties["seq"] for m in recv.messages)
        self.assertEqual(seqs, list(range(200)))
        self.assertEqual({str(o[0]) for o in unsettled.outcomes.values()}, {"ACCEPTED"})
        self.assert_own(r, 3)

    def test_messages_of_many_frames_both_ways(self):
        r = self.start_own(listener={"maxFrameSize": 4096})
        recv = Recv("own.big", credit=10)
        send = Send("own.big", [seq_message(i, body_size=300000) for i in range(5)])
        self.run_scenario(Traffic(r, [recv], [send], expect=5))
        for m in recv.messages:
            self.assertEqual(m.body, seq_message(m.properties["seq"], body_size=300000).body)
        self.assertEqual(len(send.outcomes), 5)
        self.assert_own(r, 2)

    def test_two_receivers_share_an_address(self):
        r = self.start_own()
        a, b = Recv("own.shared", credit=10), Recv("own.shared", credit=10)
        send = Send("own.shared", [seq_message(i) for i in range(200)])
        self.run_scenario(Traffic(r, [a, b], [send], expect=200))
        self.assertEqual(len(a.messages) + len(b.messages), 200)
        self.assertGreater(len(a.messages), 0, "balanced: both receivers get some")
        self.assertGreater(len(b.messages), 0, "balanced: both receivers get some")
        self.assert_own(r, 3)

    def test_receiver_gone_with_unsettled_deliveries_releases_them(self):
        r = self.start_own()

        class Gone(Scenario):
            def __init__(self):
                super().__init__(timeout=30.0 * SLOW)
                self.got = 0
                self.released = 0
                self.sent = 0

            def progress(self):
                return "got %d, released %d" % (self.got, self.released)

            def start(self):
                self.rconn = self.connect(r.url)
                self.container.create_receiver(self.rconn, "own.gone")
                self.sconn = None

            def on_link_opened(self, event):
                if event.link.is_receiver and self.sconn is None:
                    event.link.flow(10)
                    self.sconn = self.connect(r.url)
                    self.container.create_sender(self.sconn, "own.gone")

            def on_sendable(self, event):
                while event.sender.credit > 0 and self.sent < 5:
                    event.sender.send(Message(body=self.sent))
                    self.sent += 1

            def on_message(self, event):
                self.got += 1
                if self.got == 5:
                    self.rconn.close()  # none of the five settled

            def on_released(self, event):
                self.released += 1
                if self.released == 5:
                    self.done()

        s = Gone()
        s.auto_accept = False
        self.run_scenario(s)
        self.assertEqual((s.got, s.released), (5, 5))
        self.assert_own(r, 2)

    def test_drain_keeps_the_credit_the_sender_was_granted(self):
        # the address loses its consumer: the sender is asked to drain with
        # all the credit it holds (as 1.19 and the proton path), so one that
        # honours it gives it back and one that does not sends on with it,
        # every delivery released
        r = self.start_own()
        s = self.run_scenario(ConsumerGoes(r.url, "own.drain", honour=True))
        self.assertEqual(s.got, ["one", "three"])
        self.assertGreater(s.drained, 0)
        s = self.run_scenario(ConsumerGoes(r.url, "own.drain2", honour=False, more=40))
        self.assertEqual((s.got, s.released), (["one"], 41))
        self.assert_own(r, 4)

    def test_dynamic_source_and_management(self):
        r = self.start_own()
        c = BlockingConnection(r.url, timeout=10 * SLOW)
        try:
            # our open, as the proton path's: what clients look for
            self.assertIn("ANONYMOUS-RELAY", [str(x) for x in c.conn.remote_offered_capabilities])
            self.assertEqual(c.conn.remote_properties.get("product"), "qpid-dispatch-router")
            reply = c.create_receiver(None, dynamic=True)
            self.assertTrue(reply.remote_source.address)
            sender = c.create_sender("$management")
            request = Message(reply_to=reply.remote_source.address,
                              properties={"operation": "QUERY", "type": "org.amqp.management",
                                          "name": "self", "entityType": "connection"},
                              body={"attributeNames": ["host", "role", "user"]})
            sender.send(request)
            answer = reply.receive(timeout=10 * SLOW)
            self.assertEqual(answer.properties.get("statusCode"), 200, answer.properties)
            # this very connection, as the proton path shows it
            users = [row[2] for row in answer.body["results"]]
            self.assertEqual(users, ["anonymous"], answer.body)
        finally:
            c.close()
        self.assert_own(r, 1)

    def test_unserved_link_refused_with_not_implemented(self):
        """A sender whose target field holds a source (descriptor 0x28): a
        target type the own path does not serve."""
        r = self.start_own()
        c = harness.RawClient(r.port)
        try:
            c.open()
            c.begin()
            c.send(harness.frame(harness.performative(harness.ATTACH, [
                "odd", uint(0), False, None, None, Described(ulong(0x28), [None]),
                Described(ulong(0x28), ["own.wp"]), None, None, uint(0)])))
            answer = c.expect(harness.ATTACH)
            self.assertIsNone(answer.fields[6] if len(answer.fields) > 6 else None)
            condition, description = c.expect(harness.DETACH).error()
            self.assertEqual(condition, "amqp:not-implemented")
            self.assertIn("target type", description)
            # the connection goes on
            self.assertIsNotNone(c.attach_sender("plain", 1, "own.after").fields[6])
        finally:
            c.close()
        self.assert_own(r, 1)

    def test_junction_bench_through_the_router(self):
        r = self.start_own()
        for kind in ("unsettled", "presettled"):
            p = subprocess.run([BENCH, "--json", "--send-url", r.url, "--recv-url", r.url,
                                "-c", "5000", "-s", "2", "-r", "2", "--delivery", kind],
                               capture_output=True, text=True, timeout=120 * SLOW)
            self.assertEqual(p.returncode, 0, "%s\n%s\n%s" % (p.stdout, p.stderr, self.logs()))
            fig = json.loads(p.stdout)
            self.assertEqual(fig.get("received"), 5000, fig)
            self.assertEqual(fig.get("duplicates", 0), 0, fig)
        self.assert_own(r, 8)

    def query(self, r, entity_type, names):
        """A management QUERY over a connection of its own (on the own
        engine too); rows as dicts."""
        c = BlockingConnection(r.url, timeout=10 * SLOW)
        try:
            client = SyncRequestResponse(c, "$management")
            reply = client.call(Message(
                properties={"operation": "QUERY", "type": "org.amqp.management",
                            "name": "self", "entityType": entity_type},
                body={"attributeNames": list(names)}))
            self.assertEqual(reply.properties["statusCode"], 200, reply.properties)
            return [dict(zip(reply.body["attributeNames"], row))
                    for row in reply.body["results"]]
        finally:
            c.close()

    def test_peer_open_properties_and_container_shown_by_management(self):
        """The peer's container id and open properties reach management as
        the proton path renders them (string keys; a binary as its text)."""
        r = self.start_own()
        container = Container()
        container.container_id = "own-props"
        c = BlockingConnection(r.url, timeout=10 * SLOW, container=container,
                               properties={"int_property": 7, "name": "own",
                                           "blob": b"\x01"})
        try:
            rows = [row for row in self.query(r, "connection", ["container", "properties"])
                    if row["container"] == "own-props"]
            self.assertEqual(len(rows), 1, rows)
            self.assertEqual(rows[0]["properties"],
                             {"int_property": 7, "name": "own", "blob": 'b"\\x01"'})
        finally:
            c.close()
        self.assert_own(r, 2)

    def test_protocol_trace_in_the_proton_paths_form(self):
        """With PROTOCOL at trace level, every header and frame of an own
        connection is one "[C<id>]:FRAME: ..." line in the form the proton
        path writes: headers, performatives with their fields by name
        (unsigned integers in hex), and a transfer's payload size and
        octets."""
        r = self.start_own(extra=conf_section("log", {"module": "PROTOCOL",
                                                      "enable": "trace+"}))
        c = BlockingConnection(r.url, timeout=10 * SLOW)
        try:
            recv = c.create_receiver("own.traced", credit=1)
            c.create_sender("own.traced", options=AtMostOnce()).send(Message(body="traced"))
            self.assertEqual(recv.receive(timeout=10 * SLOW).body, "traced")
        finally:
            c.close()

        def traced():
            return [line.split(":FRAME: ", 1)[1] for line in r.log().splitlines()
                    if " PROTOCOL (trace) " in line and ":FRAME: " in line]

        # the log is read through its file: wait for the last line we expect
        self.wait_for("our close traced", lambda: "0 -> @close(24) []" in traced())
        frames = traced()
        joined = "\n".join(frames)
        for want in ("  <- SASL", "  -> SASL", "  <- AMQP", "  -> AMQP",
                     "0 <- @sasl-init(65) [mechanism=:ANONYMOUS",
                     "0 -> @sasl-outcome(68) [code=0x0]",
                     "0 -> @open(16) [container-id=\"R0\"",
                     "offered-capabilities=@<symbol>[:ANONYMOUS-RELAY, :\"qd.streaming-links\"]",
                     "0 <- @attach(18) [name=",
                     "target=@target(41) [address=\"own.traced\"",
                     "0 <- @transfer(20) [handle=0x", "0 -> @transfer(20) [handle=0x",
                     "0 <- @close(24) []", "0 -> @close(24) []"):
            self.assertIn(want, joined)
        transfers = [f for f in frames if "@transfer(20)" in f]
        self.assertTrue(all(") \\x00S" in f for f in transfers), transfers)
        self.assert_own(r, 1)

    def test_a_flow_moves_onto_its_peers_thread(self):
        """With two worker threads a sender's and a receiver's connection
        start on different threads; once the core sees them exchange their
        deliveries, one moves to the other's thread in mid-stream
        ("Moved from worker thread" at debug level), as on the proton
        path, and every message still arrives once."""
        r = self.start_own(worker_threads=2,
                           extra=conf_section("log", {"module": "SERVER",
                                                      "enable": "debug+"}))
        for kind in ("unsettled", "presettled"):
            before = r.log().count("Moved from worker thread")
            p = subprocess.run([BENCH, "--json", "--send-url", r.url, "--recv-url", r.url,
                                "-a", "own.move." + kind, "-c", "20000", "--delivery", kind],
                               capture_output=True, text=True, timeout=120 * SLOW)
            self.assertEqual(p.returncode, 0, "%s\n%s\n%s" % (p.stdout, p.stderr, self.logs()))
            fig = json.loads(p.stdout)
            self.assertEqual((fig.get("received"), fig.get("duplicates", 0)), (20000, 0), fig)
            self.assertGreater(r.log().count("Moved from worker thread"), before, self.logs())
        self.assert_own(r, 4)

    def test_switch_is_gone(self):
        """JUNCTION_ENGINE, the A/B switch of stages 2 to 4, is read no
        more: with it set to proton (or unset), every client connection
        runs on the own engine."""
        for engine in (None, "proton"):
            with self.subTest(engine=engine):
                env = dict(os.environ)
                env.pop("JUNCTION_ENGINE", None)
                if engine:
                    env["JUNCTION_ENGINE"] = engine
                r = self.start_own(env=env)
                recv = Recv("default.q", credit=10)
                send = Send("default.q", [seq_message(i) for i in range(10)])
                self.run_scenario(Traffic(r, [recv], [send], expect=10))
                self.assert_own(r, 2)
                self.assertNotIn("JUNCTION_ENGINE", r.log(), self.logs())


if __name__ == "__main__":
    unittest.main()
