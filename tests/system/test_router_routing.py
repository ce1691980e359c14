#!/usr/bin/python3
"""System tests: routing semantics of one junctiond (issue 3, "Routing
semantics"), with python3-qpid-proton clients on 127.0.0.1.

Every test starts its own router and its own clients; receivers attach before
senders, so the router knows every consumer before the first message.
"""
import signal
import struct
import time
import unittest

from proton import Condition, Delivery, Message, symbol

from harness import (Recv, RouterTestCase, Scenario, Send, Traffic, encode, map_entries,
                     seq_message, seqs, split_sections, uint)


def outcomes(sender):
    """The remote state of each of a Send's deliveries, in send order."""
    return [sender.outcomes[i][0] for i in range(len(sender.messages))]


class DistributionTest(RouterTestCase):

    def test_anycast_unsettled_sender_sees_accepted(self):
        r = self.start_router()
        rx = Recv("any.q")
        tx = Send("any.q", [seq_message(i) for i in range(20)])
        self.run_scenario(Traffic(r, [rx], [tx], expect=20))
        self.assertEqual(seqs(rx.messages), list(range(20)))
        self.assertEqual(outcomes(tx), [Delivery.ACCEPTED] * 20)

    def test_presettled_messages_all_arrive_settled(self):
        r = self.start_router()
        arrived_settled = []
        rx = Recv("pre.q", outcome=lambda recv, m, d: arrived_settled.append(d.settled))
        tx = Send("pre.q", [seq_message(i) for i in range(100)], presettled=True)
        self.run_scenario(Traffic(r, [rx], [tx], expect=100))
        self.assertEqual(seqs(rx.messages), list(range(100)))
        self.assertEqual(arrived_settled, [True] * 100, "pre-settled deliveries must arrive "
                         "settled")

    def test_balanced_spreads_300_over_3_receivers_none_starved(self):
        # Receivers hold their deliveries unsettled until all 300 are in, so
        # "fewest unsettled" must spread them; each gets at least half its
        # fair share and nothing is lost or duplicated.
        r = self.start_router(addresses=[{"prefix": "bal", "distribution": "balanced"}])
        rx = [Recv("bal.q", outcome="hold") for _ in range(3)]
        tx = Send("bal.q", [seq_message(i) for i in range(300)])
        self.run_scenario(Traffic(r, rx, [tx], expect=300))
        counts = [len(x.messages) for x in rx]
        self.assertTrue(all(c >= 50 for c in counts), "starved receiver: %s" % counts)
        self.assertEqual(sorted(sum((seqs(x.messages) for x in rx), [])), list(range(300)))
        self.assertEqual(outcomes(tx), [Delivery.ACCEPTED] * 300)

    def test_balanced_is_the_default_distribution(self):
        r = self.start_router()
        rx = [Recv("plain.q", outcome="hold") for _ in range(3)]
        tx = Send("plain.q", [seq_message(i) for i in range(300)])
        self.run_scenario(Traffic(r, rx, [tx], expect=300))
        counts = [len(x.messages) for x in rx]
        self.assertTrue(all(c >= 50 for c in counts), "starved receiver: %s" % counts)

    def test_closest_round_robin_among_local_receivers(self):
        r = self.start_router(addresses=[{"prefix": "near", "distribution": "closest"}])
        rx = [Recv("near.q") for _ in range(3)]
        tx = Send("near.q", [seq_message(i) for i in range(30)])
        self.run_scenario(Traffic(r, rx, [tx], expect=30))
        counts = [len(x.messages) for x in rx]
        self.assertTrue(all(c > 0 for c in counts), "a receiver got nothing: %s" % counts)
        self.assertEqual(sorted(sum((seqs(x.messages) for x in rx), [])), list(range(30)))
        self.assertEqual(outcomes(tx), [Delivery.ACCEPTED] * 30)

    def test_multicast_3_receivers_each_get_all_1000(self):
        r = self.start_router(addresses=[{"prefix": "mc", "distribution": "multicast"}])
        rx = [Recv("mc.news", credit=1000) for _ in range(3)]
        tx = Send("mc.news", [seq_message(i) for i in range(1000)])
        self.run_scenario(Traffic(r, rx, [tx], expect=3000, timeout=120))
        for x in rx:
            self.assertEqual(seqs(x.messages), list(range(1000)))
        # The router settles each of the sender's deliveries once the copies are out.
        self.assertEqual(len(tx.outcomes), 1000)
        bad = [s for s in outcomes(tx) if s in (Delivery.REJECTED, Delivery.RELEASED)]
        self.assertEqual(bad, [])

    def test_multicast_presettled_3_receivers_each_get_all_1000(self):
        r = self.start_router(addresses=[{"prefix": "mc", "distribution": "multicast"}])
        rx = [Recv("mc.ticks", credit=1000) for _ in range(3)]
        tx = Send("mc.ticks", [seq_message(i) for i in range(1000)], presettled=True)
        self.run_scenario(Traffic(r, rx, [tx], expect=3000, timeout=120))
        for x in rx:
            self.assertEqual(seqs(x.messages), list(range(1000)))


class SettleAfterSender(Scenario):
    """Receivers that give their outcome without settling (they wait for the
    sender to settle first): the sender must still see an outcome, and its
    settlement must reach the receivers."""

    def __init__(self, url, address, n_receivers, n_messages):
        super().__init__(timeout=20)
        self.url, self.address = url, address
        self.n_receivers, self.n_messages = n_receivers, n_messages
        self.receivers, self.opened, self.sent = [], 0, 0
        self.accepted, self.settled_at_receivers = 0, 0

    def start(self):
        conn = self.connect(self.url)
        for i in range(self.n_receivers):
            self.receivers.append(self.container.create_receiver(conn, self.address,
                                                                 name="r%d" % i))

    def on_link_opened(self, event):
        if event.link in self.receivers:
            event.link.flow(self.n_messages)
            self.opened += 1
            if self.opened == self.n_receivers:
                self.sender = self.container.create_sender(self.connect(self.url),
                                                           self.address)

    def on_sendable(self, event):
        while event.sender.credit > 0 and self.sent < self.n_messages:
            event.sender.send(Message(body=self.sent))
            self.sent += 1

    def on_message(self, event):
        event.delivery.update(Delivery.ACCEPTED)  # not settled

    def on_accepted(self, event):
        self.accepted += 1
        event.delivery.settle()
        self.check()

    def on_settled(self, event):
        if event.link in self.receivers:
            self.settled_at_receivers += 1
            self.check()

    def check(self):
        if (self.accepted == self.n_messages and
                self.settled_at_receivers == self.n_messages * self.n_receivers):
            self.done()

    def progress(self):
        return "sent %d, accepted %d, settled at the receivers %d" % (
            self.sent, self.accepted, self.settled_at_receivers)


class SettlementTest(RouterTestCase):

    def test_multicast_outcome_reaches_sender_before_receivers_settle(self):
        """Three multicast receivers accept without settling: the sender
        gets the merged outcome (accepted) unsettled, as 1.19 sums them up,
        and its settlement settles the three copies."""
        r = self.start_router(addresses=[{"prefix": "mc", "distribution": "multicast"}])
        s = self.run_scenario(SettleAfterSender(r.url, "mc.wait", 3, 5))
        self.assertEqual((s.accepted, s.settled_at_receivers), (5, 15))

    def test_receiver_asking_for_settled_gets_settled_and_sender_accepted(self):
        """A receiver whose snd-settle-mode is settled gets every message
        settled, from an unsettled sender too, and the sender's deliveries
        are accepted on its behalf (1.19)."""
        r = self.start_router()
        arrived_settled = []
        rx = Recv("settled.q", presettled=True,
                  outcome=lambda recv, m, d: arrived_settled.append(d.settled))
        tx = Send("settled.q", [seq_message(i) for i in range(20)])
        self.run_scenario(Traffic(r, [rx], [tx], expect=20))
        self.assertEqual(seqs(rx.messages), list(range(20)))
        self.assertEqual(arrived_settled, [True] * 20)
        self.assertEqual(outcomes(tx), [Delivery.ACCEPTED] * 20)


class AddressConfigTest(RouterTestCase):
    """Configured prefixes (longest wins) and patterns pick the distribution.
    Two receivers and 10 messages tell them apart: multicast delivers 20,
    anycast 10."""

    def assert_multicast(self, router, address):
        rx = [Recv(address), Recv(address)]
        tx = Send(address, [seq_message(i) for i in range(10)])
        self.run_scenario(Traffic(router, rx, [tx], expect=20))
        self.assertEqual([seqs(x.messages) for x in rx], [list(range(10))] * 2,
                         "%s should be multicast" % address)

    def assert_anycast(self, router, address):
        # A multicast copy would arrive during the linger and fail the run.
        rx = [Recv(address), Recv(address)]
        tx = Send(address, [seq_message(i) for i in range(10)])
        t = Traffic(router, rx, [tx], expect=10, linger=0.5)
        t.run()
        if t.error:
            self.fail("%s should be anycast (one copy of each message): %s\n%s"
                      % (address, t.error, self.logs()))
        self.assertEqual(sorted(seqs(rx[0].messages) + seqs(rx[1].messages)), list(range(10)))

    def test_address_prefix_selects_distribution_longest_wins(self):
        r = self.start_router(addresses=[{"prefix": "feed", "distribution": "multicast"},
                                         {"prefix": "feed.work", "distribution": "balanced"}])
        self.assert_multicast(r, "feed.prices")
        self.assert_multicast(r, "feed")
        self.assert_anycast(r, "feed.work.jobs")
        self.assert_anycast(r, "other.feed")

    def test_address_pattern_selects_distribution(self):
        r = self.start_router(addresses=[{"pattern": "news.*.wire", "distribution": "multicast"},
                                         {"pattern": "alerts/#", "distribution": "multicast"}])
        self.assert_multicast(r, "news.sport.wire")
        self.assert_anycast(r, "news.sport.extra.wire")  # '*' is exactly one token
        self.assert_multicast(r, "alerts/disk/full")
        self.assert_multicast(r, "alerts")  # '#' is zero or more tokens
        self.assert_anycast(r, "alertsx/disk")

    def test_default_distribution_applies_to_unconfigured_addresses(self):
        r = self.start_router(router={"defaultDistribution": "multicast"},
                              addresses=[{"prefix": "q", "distribution": "balanced"}])
        self.assert_multicast(r, "anything.at.all")
        self.assert_anycast(r, "q.jobs")


class AnonymousRelayTest(RouterTestCase):

    def test_anonymous_relay_routes_by_to(self):
        r = self.start_router()
        ra, rb = Recv("relay.a"), Recv("relay.b")
        msgs = [seq_message(i, address="relay.a" if i % 2 else "relay.b") for i in range(20)]
        tx = Send(None, msgs)
        self.run_scenario(Traffic(r, [ra, rb], [tx], expect=20))
        self.assertEqual(seqs(ra.messages), list(range(1, 20, 2)))
        self.assertEqual(seqs(rb.messages), list(range(0, 20, 2)))
        self.assertEqual(outcomes(tx), [Delivery.ACCEPTED] * 20)

    def test_anonymous_relay_no_consumer_released(self):
        r = self.start_router()
        tx = Send(None, [seq_message(i, address="relay.nobody") for i in range(3)])
        self.run_scenario(Traffic(r, [], [tx], expect=0))
        self.assertEqual(outcomes(tx), [Delivery.RELEASED] * 3)


class RequestReply(Scenario):
    """A service answers requests on `service`; two clients each ask with a
    dynamic receiver as reply-to."""

    def __init__(self, router, requests=5):
        super().__init__(timeout=30)
        self.router = router
        self.requests = requests
        self.reply_to = {}  # client index -> dynamic address
        self.replies = {0: [], 1: []}
        self.pending_replies = []

    def start(self):
        conn = self.connect(self.router.url)
        self.service = self.container.create_receiver(conn, "rr.service")
        self.answer = self.container.create_sender(conn, None)
        self.clients = []

    def on_link_opened(self, event):
        if event.link == self.service:
            event.link.flow(100)
            for i in range(2):
                conn = self.connect(self.router.url)
                self.clients.append(self.container.create_receiver(conn, None, dynamic=True))
        elif event.link in self.clients:
            i = self.clients.index(event.link)
            event.link.flow(100)
            addr = event.link.remote_source.address
            if not addr:
                self.fail("the router gave dynamic receiver %d no address" % i)
                return
            self.reply_to[i] = addr
            snd = self.container.create_sender(event.connection, "rr.service")
            for k in range(self.requests):
                snd.send(Message(body="q%d-%d" % (i, k), reply_to=addr,
                                 correlation_id="c%d-%d" % (i, k)))

    def on_message(self, event):
        m, link = event.message, event.link
        if link == self.service:
            self.accept(event.delivery)
            self.pending_replies.append(Message(address=m.reply_to, correlation_id=m.correlation_id,
                                                body="answer to " + m.body))
            self.flush()
        else:
            self.accept(event.delivery)
            self.replies[self.clients.index(link)].append(m)
            if all(len(v) == self.requests for v in self.replies.values()):
                self.done()

    def flush(self):
        while self.pending_replies and self.answer.credit > 0:
            self.answer.send(self.pending_replies.pop(0))

    def on_sendable(self, event):
        if event.link == self.answer:
            self.flush()

    def progress(self):
        return "reply-to %s, replies %s, unsent replies %d" % (
            self.reply_to, {k: len(v) for k, v in self.replies.items()},
            len(self.pending_replies))


class RequestReplyTest(RouterTestCase):

    def test_dynamic_receiver_address_used_as_reply_to(self):
        r = self.start_router()
        s = self.run_scenario(RequestReply(r))
        self.assertNotEqual(s.reply_to[0], s.reply_to[1], "dynamic addresses must be unique")
        for i in range(2):
            self.assertEqual([m.correlation_id for m in s.replies[i]],
                             ["c%d-%d" % (i, k) for k in range(5)])
            self.assertEqual([m.body for m in s.replies[i]],
                             ["answer to q%d-%d" % (i, k) for k in range(5)])


class OutcomeTest(RouterTestCase):

    def test_rejected_outcome_with_condition_seen_by_sender(self):
        r = self.start_router()
        rx = Recv("out.rej", outcome="reject",
                  condition=Condition("app:bad-order", "order 17 has no items"))
        tx = Send("out.rej", [seq_message(i) for i in range(3)])
        self.run_scenario(Traffic(r, [rx], [tx], expect=3))
        for i in range(3):
            state, disp = tx.outcomes[i]
            self.assertEqual(state, Delivery.REJECTED)
            self.assertIsNotNone(disp.condition, "rejected without its error condition")
            self.assertEqual(disp.condition.name, "app:bad-order")
            self.assertEqual(disp.condition.description, "order 17 has no items")

    def test_released_outcome_seen_by_sender(self):
        r = self.start_router()
        rx = Recv("out.rel", outcome="release")
        tx = Send("out.rel", [seq_message(0)])
        self.run_scenario(Traffic(r, [rx], [tx], expect=1))
        self.assertEqual(outcomes(tx), [Delivery.RELEASED])

    def test_modified_outcome_seen_by_sender(self):
        r = self.start_router()
        rx = Recv("out.mod", outcome="modify")
        tx = Send("out.mod", [seq_message(0)])
        self.run_scenario(Traffic(r, [rx], [tx], expect=1))
        state, disp = tx.outcomes[0]
        self.assertEqual(state, Delivery.MODIFIED)
        self.assertTrue(disp.failed, "delivery-failed lost on the way back")
        self.assertTrue(disp.undeliverable, "undeliverable-here lost on the way back")

    def test_modified_without_delivery_failed_reaches_sender_as_failed(self):
        """A consumer's modified with the defaults (delivery-failed false)
        goes back with delivery-failed set, as 1.19 sends it."""
        r = self.start_router()

        def modify(recv, m, d):
            d.update(Delivery.MODIFIED)
            d.settle()
        rx = Recv("out.mod0", outcome=modify)
        tx = Send("out.mod0", [seq_message(0)])
        self.run_scenario(Traffic(r, [rx], [tx], expect=1))
        state, disp = tx.outcomes[0]
        self.assertEqual(state, Delivery.MODIFIED)
        self.assertTrue(disp.failed)
        self.assertFalse(disp.undeliverable)


class KilledReceiver(Scenario):
    """Send `count` unsettled messages to a receiver subprocess that never
    settles; SIGKILL it once it has them all; wait for every outcome."""

    def __init__(self, router, child, address, count=10):
        super().__init__(timeout=30)
        self.router, self.child, self.address, self.count = router, child, address, count
        self.sender = None
        self.killed = False
        self.outcomes = {}

    def start(self):
        pass

    def tick(self):
        if self.sender is None and self.child.last("attached"):
            conn = self.connect(self.router.url)
            self.sender = self.container.create_sender(conn, self.address)
            self.sent = 0
        if not self.killed and self.child.last("received %d" % self.count):
            self.child.proc.send_signal(signal.SIGKILL)
            self.killed = True
        if self.child.proc.poll() is not None and not self.killed:
            self.fail("receiver subprocess died: %s" % self.child.stderr())

    def on_sendable(self, event):
        while event.link.credit > 0 and self.sent < self.count:
            event.link.send(seq_message(self.sent))
            self.sent += 1

    def on_settled(self, event):
        if event.link.is_sender:
            self.outcomes[event.delivery.tag] = event.delivery.remote_state
            if not self.killed:
                self.fail("delivery settled (%s) before the receiver was killed"
                          % event.delivery.remote_state)
            elif len(self.outcomes) == self.count:
                self.done()

    def progress(self):
        return "child said %s, killed %s, outcomes %s" % (self.child.poll_lines()[-1:],
                                                          self.killed, self.outcomes)


class ReceiverKilledTest(RouterTestCase):

    def test_receiver_killed_unsettled_deliveries_released_to_sender(self):
        r = self.start_router()
        child = self.spawn("hold-receiver", r.url, "killed.q")
        s = self.run_scenario(KilledReceiver(r, child, "killed.q"))
        for tag, state in s.outcomes.items():
            self.assertIn(state, (Delivery.RELEASED, Delivery.MODIFIED),
                          "delivery %r of a killed receiver ended %s" % (tag, state))


class CreditWatch(Scenario):
    """A sender attaches alone; its credit must stay 0 for `quiet` seconds;
    then a receiver attaches and the sender must get credit."""

    def __init__(self, router, address, quiet=1.0, send=0):
        super().__init__(timeout=30)
        self.router, self.address, self.quiet, self.send = router, address, quiet, send
        self.credit_seen = []  # (elapsed, credit) at each change
        self.attached_at = None
        self.receiver = None
        self.max_credit = 0
        self.sent = 0
        self.got = []

    def start(self):
        self.sender = self.container.create_sender(self.connect(self.router.url), self.address)

    def on_link_opened(self, event):
        if event.link == self.sender:
            self.attached_at = time.monotonic()
        elif event.link == self.receiver:
            event.link.flow(10)

    def on_link_flow(self, event):
        if event.link == self.sender:
            c = event.link.credit
            self.credit_seen.append((round(self.elapsed(), 2), c))
            self.max_credit = max(self.max_credit, c)
            if self.receiver is None and c > 0:
                self.fail("the sender got %d credit while no receiver existed" % c)
            elif c > 0 and not self.send:
                self.done()
            while self.sent < self.send and event.link.credit > 0:
                event.link.send(seq_message(self.sent))
                self.sent += 1

    def tick(self):
        if self.sender.credit > 0 and self.receiver is None:
            self.fail("the sender has %d credit while no receiver exists" % self.sender.credit)
        if (self.receiver is None and self.attached_at is not None and
                time.monotonic() - self.attached_at >= self.quiet):
            self.receiver = self.container.create_receiver(self.connect(self.router.url),
                                                           self.address)

    def on_message(self, event):
        self.accept(event.delivery)
        event.link.flow(1)
        self.got.append(event.message.properties["seq"])
        if len(self.got) == self.send:
            self.done()

    def progress(self):
        return "credit changes %s, sent %d, received %d" % (self.credit_seen, self.sent,
                                                           len(self.got))


class CreditTest(RouterTestCase):

    def test_credit_none_until_receiver_attaches(self):
        r = self.start_router()
        s = self.run_scenario(CreditWatch(r, "credit.q"))
        self.assertGreater(s.max_credit, 0)

    def test_credit_bounded_by_link_capacity_and_returns(self):
        r = self.start_router(listener={"linkCapacity": 5})
        s = self.run_scenario(CreditWatch(r, "credit.cap", send=50))
        self.assertLessEqual(s.max_credit, 5, "credit above linkCapacity: %s" % s.credit_seen)
        self.assertEqual(s.got, list(range(50)))


class Drain(Scenario):
    """A receiver with nothing to receive drains `drain` credit; the router
    must answer with a flow that uses the credit up (credit 0, drained)."""

    def __init__(self, router, address, drain=10):
        super().__init__(timeout=30)
        self.router, self.address, self.drain = router, address, drain

    def start(self):
        self.receiver = self.container.create_receiver(self.connect(self.router.url),
                                                       self.address)

    def on_link_opened(self, event):
        if event.link == self.receiver:
            self.receiver.drain(self.drain)

    def on_link_flow(self, event):
        if event.link == self.receiver and self.receiver.credit == 0:
            self.done()

    def progress(self):
        return "credit %d, draining %s" % (self.receiver.credit, self.receiver.draining())


class DrainTest(RouterTestCase):

    def test_drain_with_nothing_to_send_ends_drained(self):
        r = self.start_router()
        s = self.run_scenario(Drain(r, "drain.empty"))
        self.assertEqual(s.receiver.credit, 0)


def sym8(name):
    return b"\xa3" + bytes([len(name)]) + name.encode()


def sym32(name):
    return b"\xb3" + struct.pack(">I", len(name)) + name.encode()


def str8(text):
    return b"\xa1" + bytes([len(text)]) + text.encode()


def str32(text):
    return b"\xb1" + struct.pack(">I", len(text)) + text.encode()


def amqp_map32(entries):
    body = b"".join(k + v for k, v in entries)
    return b"\xd1" + struct.pack(">II", len(body) + 4, 2 * len(entries)) + body


class AnnotationsTest(RouterTestCase):

    def test_router_annotations_stripped_user_annotations_byte_identical(self):
        r = self.start_router()
        # User annotations in deliberately non-minimal encodings (sym32,
        # 4-octet uint, str32, a ulong key) that a re-encoder would change.
        user = [
            (sym32("x-opt-user-1"), b"\x70\x00\x00\x00\x07"),
            (b"\x80" + struct.pack(">Q", 0x1234), str32("ulong-keyed")),
            (sym8("x-opt-user-2"), encode({symbol("nested"): [uint(1), "two"]})),
        ]
        forged = [
            (sym8("x-opt-qd.to"), str8("strip.elsewhere")),
            (sym8("x-opt-qd.ingress"), str8("0/Forged")),
            (sym8("x-opt-qd.trace"), encode(["0/Forged", "0/Other"])),
            (sym8("x-opt-qd.phase"), b"\x71\x00\x00\x00\x01"),
        ]
        entries = [forged[0], user[0], forged[1], user[1], forged[2], user[2], forged[3]]
        annotations = b"\x00\x53\x72" + amqp_map32(entries)
        rest = [
            b"\x00\x53\x73" + encode(["msg-1", None, "strip.q"]),  # properties
            b"\x00\x53\x74" + encode({"k": "v", "n": 5}),  # application-properties
            b"\x00\x53\x75\xa0\x05hello",  # data
        ]
        payload = annotations + b"".join(rest)
        rx, elsewhere = Recv("strip.q", raw=True), Recv("strip.elsewhere", raw=True)
        tx = Send("strip.q", [payload])
        self.run_scenario(Traffic(r, [rx, elsewhere], [tx], expect=1, linger=0.5))
        self.assertEqual(outcomes(tx), [Delivery.ACCEPTED])
        self.assertEqual(elsewhere.messages, [], "a client's x-opt-qd.to redirected its message")
        self.assertEqual(len(rx.messages), 1)
        sections = split_sections(rx.messages[0])
        got_ma = [s for code, s in sections if code == 0x72]
        self.assertEqual(len(got_ma), 1, "message annotations missing: %r" % sections)
        got_entries = map_entries(got_ma[0][3:])
        self.assertEqual(got_entries, user,
                         "user annotations must arrive byte for byte, router ones stripped")
        self.assertEqual([s for code, s in sections if code != 0x72], rest,
                         "the other sections must arrive byte for byte")


if __name__ == "__main__":
    unittest.main()
