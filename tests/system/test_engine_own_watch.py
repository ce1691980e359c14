#!/usr/bin/python3
"""The write-stall watch and the idle-time-out floor's refusal on
Junction's own AMQP engine (docs/engine.md, stage 2b(ii) round 2), as on
proton's path (router/io/io_watch.c, router/io/io_open.c).

A client on the own engine that attaches a receiver with a million
credits, shrinks its socket's receive buffer and reads one octet now and
then while a sender floods its address, is cut once a
router.writeStallTimeoutSeconds period passes in which the socket took
(almost) nothing: one "write stalled" line naming its address, condition
amqp:resource-limit-exceeded; the flood's deliveries to it go back to the
sender, and the router goes on serving. The scenario is
test_router_slowpeer's, checked here to have run on the own engine.

A peer whose open asks for an idle-time-out below
router.minPeerIdleTimeoutMs is refused with a close naming both values and
one "refused: its idle-time-out ... (minPeerIdleTimeoutMs)" line, the
proton path's (test_router_slowpeer's scenario, on the own engine).

JN_BUILD_DIR names the build directory (set by ctest).
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_router_slowpeer as slowpeer  # noqa: E402

OWN_LINE = "Connection runs on Junction's own AMQP engine"


class OwnWriteStallTest(slowpeer.SlowReaderTest):

    # the base class's scenarios run here only through the test below
    test_slow_reader_memory_bounded_and_others_flow = None
    test_write_stall_cuts_the_slow_reader = None

    def test_write_stall_cuts_the_slow_reader_on_the_own_engine(self):
        slowpeer.SlowReaderTest.test_write_stall_cuts_the_slow_reader(self)
        log = self.routers[0].log()
        self.assertGreaterEqual(log.count(OWN_LINE), 2, self.logs())
        cut = [line for line in log.splitlines() if "write stalled" in line]
        self.assertEqual(len(cut), 1, cut)
        conn = cut[0].split("[C", 1)[1].split("]", 1)[0]
        own = [line for line in log.splitlines()
               if OWN_LINE in line and "[C%s]" % conn in line]
        self.assertEqual(len(own), 1, "the cut connection ran on the own engine\n" + log)


class OwnIdleFloorTest(slowpeer.IdleTimeoutFloorTest):

    # the base class's scenarios run here only through the test below
    test_1ms_idle_timeout_refused_without_a_burst_of_frames = None
    test_1s_idle_timeout_gets_heartbeats_at_a_sane_rate = None
    test_silent_peer_after_open_gets_heartbeats = None
    test_no_idle_timeout_gets_no_heartbeats = None
    test_floor_is_configurable = None
    test_negative_values_refused_at_start = None

    def test_idle_time_out_below_the_floor_refused_on_the_own_engine(self):
        slowpeer.IdleTimeoutFloorTest.test_1ms_idle_timeout_refused_without_a_burst_of_frames(
            self)
        log = self.routers[0].log()
        self.assertEqual(log.count(OWN_LINE), 0, "refused before the core heard of it")
        self.assertIn("(minPeerIdleTimeoutMs)", log)
        self.assertNotIn("failed:", log)


if __name__ == "__main__":
    unittest.main()
