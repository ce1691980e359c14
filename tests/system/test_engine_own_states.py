#!/usr/bin/python3
"""Delivery states on client connections on Junction's own AMQP engine
(docs/engine.md, stage 2b(ii) round 2), selected with JUNCTION_ENGINE=own
in the router's environment: every field of every state both ways, as on
proton's path (io_state.c).

A receiver's rejected (with its error's info map), modified (with its
message annotations), received and a state the spec does not define reach
the sender as they were sent; a state the sender puts on a transfer (a
state of its own with a value, or received) reaches the receiver, or each
receiver of a multicast address, on the copy's first transfer, on small
and multi-frame messages. The scenarios are test_router_states's.

JN_BUILD_DIR names the build directory (set by ctest).
"""
import unittest

from test_engine_own import OwnEngineCase
from test_router_states import StateChecks, StateExchange, TransferState


class OwnStatesTest(OwnEngineCase, StateChecks):

    def test_every_state_field_of_a_disposition_reaches_the_sender(self):
        r = self.start_own()
        self.check(self.run_scenario(StateExchange(r.url, r.url, "own.states")))
        self.assert_own(r, 2)

    def test_transfer_state_reaches_the_receiver_on_the_first_transfer(self):
        r = self.start_own()
        s = self.run_scenario(TransferState(r.url, [r.url], "own.xfer"))
        self.check_transfer_states(s, 1)
        self.assert_own(r, 2)

    def test_transfer_state_reaches_every_multicast_receiver(self):
        r = self.start_own(addresses=[{"prefix": "mc", "distribution": "multicast"}])
        s = self.run_scenario(TransferState(r.url, [r.url, r.url], "mc.own.xfer"))
        self.check_transfer_states(s, 2)
        self.assert_own(r, 3)


if __name__ == "__main__":
    unittest.main()
