#!/usr/bin/python3
"""Exchanges and bindings (issue 16; docs/design.md, "Exchanges and
bindings"): router.config.exchange and router.config.binding as qdrouterd
1.19 has them, from the config file and from management CREATE/DELETE.

- amqp matching ('.' words, '*' one word, '#' zero or more): each message
  sent to the exchange goes to every matching binding's next hop, once per
  distinct next hop; to the alternate address when nothing matches; the
  sender is told accepted; the figures in QUERY count it all.
- mqtt matching ('/', '+', '#'), bindings created and deleted at run time;
  an exchange deleted takes its bindings with it.
- no binding matches and no alternate: an unsettled message is released
  (1.19 would hold it on an anycast address: here the sender is answered
  at once), a pre-settled one dropped; both counted in droppedCount.
- across a two-router mesh: the exchange on A, sender and next-hop
  receiver on B: the copy goes back to B (a new trace, as 1.19 resets it);
  the same exchange on both routers: each message is matched once, where
  1.19 would match it on both and duplicate the copies.
- RELOAD that changes an exchange keeps its bindings and adds new ones.
- bad input gets 1.19's descriptions: a binding to an unknown exchange,
  duplicate exchange name and address, an invalid matchMethod, an invalid
  mqtt key, a phase out of range, a missing address.

Real junctiond processes and proton clients on 127.0.0.1; every wait
bounded.
"""
import os
import time
import unittest

from proton import Message
from proton import Timeout
from proton.reactor import AtMostOnce
from proton.utils import BlockingConnection, SendException

from harness import SLOW, RouterTestCase, conf_section, free_port, run_junctiond
from test_router_entities import LOGS, Manager, client_listener, router_section

TIMEOUT = 10 * SLOW


class ExchangeTest(RouterTestCase):

    def manager(self, router):
        m = Manager(router.url)
        self.addCleanup(m.close)
        return m

    def connect(self, router):
        c = BlockingConnection(router.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        return c

    def receivers(self, router, addresses):
        c = self.connect(router)
        out = {}
        for a in addresses:
            out[a] = c.create_receiver(a, credit=100)
        return out

    def drain(self, receiver, wait=0.5):
        """Every body the receiver has now (waits `wait` for the last)."""
        got = []
        while True:
            try:
                m = receiver.receive(timeout=wait * SLOW)
            except Timeout:
                return got
            try:
                receiver.accept()
            except IndexError:
                pass  # a pre-settled copy (the exchange's are): nothing to accept
            got.append(m.body)

    def send(self, router, address, subjects, settled=False):
        """Send one message per subject (None: no subject); the outcomes.
        Pre-settled: the connection is closed at the end, which sends what
        proton still holds."""
        c = BlockingConnection(router.url, timeout=TIMEOUT)
        if not settled:
            self.addCleanup(c.close)
        s = c.create_sender(address, options=AtMostOnce() if settled else None)
        outcomes = []
        for i, subj in enumerate(subjects):
            m = Message(body="%s#%d" % (subj, i), subject=subj)
            if settled:
                s.send(m, timeout=TIMEOUT)  # BlockingSender settles at once
                outcomes.append("sent")
                continue
            try:
                s.send(m, timeout=TIMEOUT)
                outcomes.append("accepted")
            except SendException as e:
                outcomes.append(str(e.state))
        if settled:
            c.close()
        return outcomes

    def test_amqp_exchange_from_file_forwards_by_subject(self):
        config = (router_section("A") + client_listener() + LOGS +
                  conf_section("exchange", {"name": "ex", "address": "ex",
                                            "alternateAddress": "alt"}) +
                  conf_section("binding", {"name": "b1", "exchangeName": "ex",
                                           "bindingKey": "a.*.c", "nextHopAddress": "q1"}) +
                  conf_section("binding", {"name": "b2", "exchangeName": "ex",
                                           "bindingKey": "a.#", "nextHopAddress": "q2"}) +
                  conf_section("binding", {"name": "b3", "exchangeName": "ex",
                                           "bindingKey": "#.c", "nextHopAddress": "q2"}) +
                  conf_section("binding", {"name": "b4", "exchangeName": "ex",
                                           "bindingKey": "x", "nextHopAddress": "q3"}))
        r = self.start_router(config=config)
        rx = self.receivers(r, ["q1", "q2", "q3", "alt"])
        subjects = ["a.b.c", "a", "z.c", "x", "a.b.c.d", "nothing", None, "x.y"]
        self.assertEqual(self.send(r, "ex", subjects), ["accepted"] * len(subjects))
        got = {a: sorted(self.drain(rx[a])) for a in rx}
        self.assertEqual(got["q1"], ["a.b.c#0"])
        # b2 and b3 share q2: a.b.c matches both and goes once
        self.assertEqual(got["q2"], sorted(["a.b.c#0", "a#1", "z.c#2", "a.b.c.d#4"]))
        self.assertEqual(got["q3"], ["x#3"])
        self.assertEqual(got["alt"], sorted(["nothing#5", "None#6", "x.y#7"]))
        m = self.manager(r)
        ex = m.query("org.apache.qpid.dispatch.router.config.exchange")
        self.assertEqual(len(ex), 1)
        ex = ex[0]
        self.assertNotIn("type", ex)
        self.assertEqual((ex["name"], ex["address"], ex["phase"], ex["alternateAddress"],
                          ex["alternatePhase"], ex["matchMethod"], ex["bindingCount"]),
                         ("ex", "ex", 0, "alt", 0, "amqp", 4))
        self.assertEqual((ex["receivedCount"], ex["forwardedCount"], ex["divertedCount"],
                          ex["droppedCount"]), (8, 8, 3, 0))
        b = {row["name"]: row for row in
             m.query("org.apache.qpid.dispatch.router.config.binding")}
        self.assertEqual({n: b[n]["matchedCount"] for n in b},
                         {"b1": 1, "b2": 3, "b3": 2, "b4": 1})
        self.assertEqual((b["b1"]["exchangeName"], b["b1"]["bindingKey"],
                          b["b1"]["nextHopAddress"], b["b1"]["nextHopPhase"]),
                         ("ex", "a.*.c", "q1", 0))

    def test_mqtt_exchange_by_management_and_delete(self):
        r = self.start_router(config=router_section("A") + client_listener() + LOGS)
        m = self.manager(r)
        code, desc, body = m.create("org.apache.qpid.dispatch.router.config.exchange", "mx",
                                    {"address": "mx", "matchMethod": "mqtt"})
        self.assertEqual(code, 201, desc)
        self.assertEqual(body["matchMethod"], "mqtt")
        for name, key, hop in (("s1", "sport/+/score", "m1"), ("s2", "sport/#", "m2"),
                               ("s3", "+", "m3")):
            code, desc, _ = m.create("org.apache.qpid.dispatch.router.config.binding", name,
                                     {"exchangeName": "mx", "bindingKey": key,
                                      "nextHopAddress": hop})
            self.assertEqual(code, 201, desc)
        rx = self.receivers(r, ["m1", "m2", "m3"])
        subjects = ["sport/tennis/score", "sport", "news", "sport/tennis/player/x", "a.b"]
        # no alternate: "news"... matches '+' (one level); "a.b" too (no '/')
        self.assertEqual(self.send(r, "mx", subjects), ["accepted"] * 5)
        got = {a: sorted(self.drain(rx[a])) for a in rx}
        self.assertEqual(got["m1"], ["sport/tennis/score#0"])
        self.assertEqual(got["m2"], sorted(["sport/tennis/score#0", "sport#1",
                                            "sport/tennis/player/x#3"]))
        self.assertEqual(got["m3"], sorted(["sport#1", "news#2", "a.b#4"]))
        # a binding deleted matches no more
        code, desc, _ = m.call({"operation": "DELETE",
                                "type": "org.apache.qpid.dispatch.router.config.binding",
                                "name": "s3"})
        self.assertEqual(code, 204, desc)
        self.assertEqual(self.send(r, "mx", ["news"]), ["RELEASED"])
        ex = m.query("org.apache.qpid.dispatch.router.config.exchange")[0]
        self.assertEqual((ex["bindingCount"], ex["droppedCount"]), (2, 1))
        # the exchange deleted takes its bindings; its address is ordinary again
        code, desc, _ = m.call({"operation": "DELETE",
                                "type": "org.apache.qpid.dispatch.router.config.exchange",
                                "name": "mx"})
        self.assertEqual(code, 204, desc)
        self.assertEqual(m.query("org.apache.qpid.dispatch.router.config.binding"), [])
        self.assertEqual(m.query("org.apache.qpid.dispatch.router.config.exchange"), [])
        rx2 = self.receivers(r, ["mx"])
        self.send(r, "mx", ["sport"], settled=True)
        self.assertEqual(self.drain(rx2["mx"]), ["sport#0"])

    def test_no_match_no_alternate_released_or_dropped(self):
        config = (router_section("A") + client_listener() + LOGS +
                  conf_section("exchange", {"name": "ex", "address": "ex"}) +
                  conf_section("binding", {"name": "b", "exchangeName": "ex",
                                           "bindingKey": "k", "nextHopAddress": "nobody"}) +
                  conf_section("binding", {"name": "b2", "exchangeName": "ex",
                                           "bindingKey": "j", "nextHopAddress": "there"}))
        r = self.start_router(config=config)
        rx = self.receivers(r, ["there"])
        # no key matches; "k" matches a next hop with no consumer
        self.assertEqual(self.send(r, "ex", ["other", "k", None]), ["RELEASED"] * 3)
        self.send(r, "ex", ["other", "j"], settled=True)
        self.assertEqual(self.drain(rx["there"]), ["j#1"])
        ex = self.manager(r).query("org.apache.qpid.dispatch.router.config.exchange")[0]
        self.assertEqual((ex["receivedCount"], ex["droppedCount"], ex["forwardedCount"]),
                         (5, 4, 1))

    def test_exchange_across_two_routers(self):
        """Exchange on A; the sender and the next hop's receiver on B: the
        copy goes from A back to B (its trace starts again at A)."""
        ir = free_port()
        a = self.start_router(config=router_section("A", "interior") + client_listener() + LOGS +
                              conf_section("listener", {"host": "127.0.0.1", "port": ir,
                                                        "role": "inter-router",
                                                        "saslMechanisms": "ANONYMOUS"}) +
                              conf_section("exchange", {"name": "ex", "address": "ex"}) +
                              conf_section("binding", {"name": "b", "exchangeName": "ex",
                                                       "bindingKey": "k.#",
                                                       "nextHopAddress": "back"}))
        b = self.start_router(config=router_section("B", "interior") + client_listener() + LOGS +
                              conf_section("connector", {"host": "127.0.0.1", "port": ir,
                                                         "role": "inter-router",
                                                         "saslMechanisms": "ANONYMOUS"}))
        rx = self.receivers(b, ["back"])
        mb = self.manager(b)
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:  # B has heard of A's exchange
            rows = mb.query("org.apache.qpid.dispatch.router.address", ["name", "remoteCount"])
            if any(row["name"] == "M0ex" and row["remoteCount"] for row in rows):
                break
            time.sleep(0.1)
        else:
            self.fail("B never learnt the exchange's address\n" + self.logs())
        ma = self.manager(a)
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:  # A has heard of B's receiver
            rows = ma.query("org.apache.qpid.dispatch.router.address", ["name", "remoteCount"])
            if any(row["name"] == "M0back" and row["remoteCount"] for row in rows):
                break
            time.sleep(0.1)
        else:
            self.fail("A never learnt the receiver's address\n" + self.logs())
        self.assertEqual(self.send(b, "ex", ["k.1", "k", "z"]),
                         ["accepted", "accepted", "RELEASED"])
        self.assertEqual(sorted(self.drain(rx["back"])), ["k#1", "k.1#0"])

    def test_same_exchange_on_two_routers_copies_once(self):
        """The same exchange on both routers (one config for the mesh): a
        message goes through the exchange of the router it enters, once;
        qdrouterd 1.19 would also pass it to the other router's exchange
        (which advertises the same address) and the receiver would get it
        twice."""
        ir = free_port()
        ex = (conf_section("exchange", {"name": "ex", "address": "ex"}) +
              conf_section("binding", {"name": "b", "exchangeName": "ex", "bindingKey": "k",
                                       "nextHopAddress": "q"}))
        a = self.start_router(config=router_section("A", "interior") + client_listener() + LOGS +
                              conf_section("listener", {"host": "127.0.0.1", "port": ir,
                                                        "role": "inter-router",
                                                        "saslMechanisms": "ANONYMOUS"}) + ex)
        b = self.start_router(config=router_section("B", "interior") + client_listener() + LOGS +
                              conf_section("connector", {"host": "127.0.0.1", "port": ir,
                                                         "role": "inter-router",
                                                         "saslMechanisms": "ANONYMOUS"}) + ex)
        rx = self.receivers(b, ["q"])
        ma = self.manager(a)
        deadline = time.time() + TIMEOUT
        while True:  # A knows B's receiver and B's exchange
            rows = ma.query("org.apache.qpid.dispatch.router.address", ["name", "remoteCount"])
            remote = {row["name"] for row in rows if row["remoteCount"]}
            if {"M0q", "M0ex"} <= remote:
                break
            if time.time() > deadline:
                self.fail("A never learnt B's addresses\n" + self.logs())
            time.sleep(0.1)
        self.assertEqual(self.send(a, "ex", ["k", "k", "k"]), ["accepted"] * 3)
        self.assertEqual(sorted(self.drain(rx["q"], wait=1.0)), ["k#0", "k#1", "k#2"])
        ex_a = ma.query("org.apache.qpid.dispatch.router.config.exchange")[0]
        ex_b = self.manager(b).query("org.apache.qpid.dispatch.router.config.exchange")[0]
        self.assertEqual((ex_a["receivedCount"], ex_b["receivedCount"]), (3, 0))

    def test_reload_changes_an_exchange_and_keeps_its_bindings(self):
        """RELOAD with the exchange changed (an alternate added), its
        binding unchanged and a binding and a link route added: the
        exchange is made again with both bindings (the kept one is made
        again too, as the old exchange took it), the link route exists."""
        base = router_section("A") + client_listener() + LOGS
        b1 = conf_section("binding", {"name": "b1", "exchangeName": "ex", "bindingKey": "a",
                                      "nextHopAddress": "q1"})
        r = self.start_router(config=base + conf_section("exchange", {"name": "ex",
                                                                      "address": "ex"}) + b1)
        with open(r.conf_path, "w") as f:
            f.write((base + conf_section("exchange", {"name": "ex", "address": "ex",
                                                      "alternateAddress": "alt"}) + b1 +
                     conf_section("binding", {"name": "b2", "exchangeName": "ex",
                                              "bindingKey": "b", "nextHopAddress": "q2"}) +
                     conf_section("linkRoute", {"name": "lr", "prefix": "brk",
                                                "direction": "in", "containerId": "x"}))
                    .replace("{port}", str(r.port)))
        m = self.manager(r)
        code, desc = m.reload()
        self.assertEqual(code, 200, desc)
        self.assertEqual(sorted(b["name"] for b in
                                m.query("org.apache.qpid.dispatch.router.config.binding")),
                         ["b1", "b2"])
        self.assertEqual([x["name"] for x in
                          m.query("org.apache.qpid.dispatch.router.config.linkRoute")], ["lr"])
        rx = self.receivers(r, ["q1", "q2", "alt"])
        self.assertEqual(self.send(r, "ex", ["a", "b", "c"]), ["accepted"] * 3)
        self.assertEqual({a: self.drain(rx[a]) for a in rx},
                         {"q1": ["a#0"], "q2": ["b#1"], "alt": ["c#2"]})
        ex = m.query("org.apache.qpid.dispatch.router.config.exchange")[0]
        self.assertEqual((ex["bindingCount"], ex["alternateAddress"]), (2, "alt"))

    def test_bad_input_gets_1_19_errors(self):
        r = self.start_router(config=router_section("A") + client_listener() + LOGS)
        m = self.manager(r)
        X = "org.apache.qpid.dispatch.router.config.exchange"
        B = "org.apache.qpid.dispatch.router.config.binding"
        code, desc, _ = m.create(B, "b0", {"exchangeName": "nope", "nextHopAddress": "q"})
        self.assertEqual((code, desc), (400, "Named exchange does not exist"))
        self.assertEqual(m.create(X, "e1", {"address": "e1"})[0], 201)
        self.assertEqual(m.create(X, "e1", {"address": "other"})[:2],
                         (400, "duplicate exchange name"))
        self.assertEqual(m.create(X, "e2", {"address": "e1"})[:2],
                         (400, "duplicate exchange address"))
        self.assertEqual(m.create(X, "e3", {"address": "e3", "matchMethod": "regex"})[:2],
                         (400, "Exchange matchMethod must be either 'amqp' or 'mqtt'"))
        self.assertEqual(m.create(X, "e4", {"address": "e4", "phase": 10})[:2],
                         (400, "phase must be in the range 0-9"))
        self.assertEqual(m.create(X, "e5", {})[:2], (400, "exchange address is mandatory"))
        self.assertEqual(m.create(X, "m", {"address": "m", "matchMethod": "mqtt"})[0], 201)
        self.assertEqual(m.create(B, "bm", {"exchangeName": "m", "bindingKey": "a/#/b",
                                            "nextHopAddress": "q"})[:2],
                         (400, "The binding key pattern is invalid"))
        self.assertEqual(m.create(B, "bq", {"exchangeName": "m", "nextHopAddress": "q"})[0], 201)
        self.assertEqual(m.create(B, "bq", {"exchangeName": "e1", "nextHopAddress": "z"})[:2],
                         (400, "Duplicate next hop name"))
        self.assertEqual(m.create(B, "bq2", {"exchangeName": "m", "nextHopAddress": "q"})[:2],
                         (400, "Next hop for key already exists"))
        self.assertEqual(m.create(B, "bp", {"exchangeName": "m", "nextHopAddress": "q",
                                            "nextHopPhase": -1})[:2],
                         (400, "phase must be in the range 0-9"))
        self.assertEqual(m.create(B, "bx", {"nextHopAddress": "q"})[:2],
                         (400, "Binding configuration requires an exchange"))
        self.assertEqual(m.create(B, "by", {"exchangeName": "m"})[:2],
                         (400, "No next hop specified"))
        # nothing refused was kept
        self.assertEqual(sorted(x["name"] for x in m.query(X)), ["e1", "m"])
        self.assertEqual([x["name"] for x in m.query(B)], ["bq"])
        self.assertEqual(m.query(B)[0]["bindingKey"], "#")
        # the file: a binding to an unknown exchange stops start-up at its line
        path = os.path.join(self.workdir, "bad.conf")
        with open(path, "w") as f:
            f.write(router_section("A") + client_listener().replace("{port}", str(free_port())) +
                    conf_section("binding", {"exchangeName": "nope", "nextHopAddress": "q"}))
        p = run_junctiond(["-c", path])
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("Named exchange does not exist", p.stderr)


if __name__ == "__main__":
    unittest.main()
