#!/usr/bin/python3
"""System tests: an auto-link is bound to its address only when its
container answers the attach with an address (issue 25; qdrouterd 1.19
activates an auto-link only when the answering attach names an address in
the terminus it answers for).

- A container that answers the router's auto-link attaches with an empty
  terminus (proton's default for a link it did not set up) made no node
  for them: the auto-links stay `attaching`, the `out` link is no consumer
  of the address, and every message a client sends to the address goes to
  the client receivers, none to that container.
- A container that answers with the address makes them `active` and the
  `out` link a consumer (it gets messages).

Real junctiond processes and proton clients on 127.0.0.1; waits bounded.
"""
import unittest

from proton import Message
from proton.reactor import AtMostOnce
from proton.utils import BlockingConnection

from harness import SLOW, RouterTestCase, conf_section, container_listener
from test_router_entities import LOGS, Manager, client_listener, router_section
from test_router_linkroute_container_role import Peer

TIMEOUT = 15 * SLOW
AL = "org.apache.qpid.dispatch.router.config.autoLink"
COUNT = 10


class EmptyAnswerPeer(Peer):
    """A container that opens every link the router attaches with an empty
    terminus (no address), as proton does by default."""

    def on_link_opening(self, event):
        with self.lock:
            self.attached.append((event.link.name, None))


class AutolinkAnswerTest(RouterTestCase):

    def peer(self, cls, url, container_id):
        p = cls(url, container_id).start()
        self.addCleanup(p.stop)
        return p

    def statuses(self, router):
        m = Manager(router.url)
        try:
            return sorted(r["operStatus"] for r in m.query(AL, ["operStatus"]))
        finally:
            m.close()

    def start_autolinked_router(self):
        autolinks = "".join(conf_section("autoLink", {"name": "al-" + d, "address": "alx",
                                                      "direction": d, "containerId": "store"})
                            for d in ("in", "out"))
        return self.start_router(config=router_section("R") + client_listener() +
                                 container_listener() + LOGS + autolinks)

    def test_empty_answer_leaves_the_autolinks_attaching_and_unbound(self):
        r = self.start_autolinked_router()
        store = self.peer(EmptyAnswerPeer, r.container_url, "store")
        self.wait_for("both auto-link attaches answered",
                      lambda: len(store.snapshot()[0]) == 2, TIMEOUT)
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        rx = c.create_receiver("alx", credit=COUNT)
        tx = c.create_sender("alx", options=AtMostOnce())  # presettled: no wait for rx
        for i in range(COUNT):
            tx.send(Message(body=i), timeout=TIMEOUT)
        got = [rx.receive(timeout=TIMEOUT).body for _ in range(COUNT)]
        self.assertEqual(sorted(got), list(range(COUNT)))
        self.assertEqual(store.snapshot()[1], [])
        self.assertEqual(self.statuses(r), ["attaching", "attaching"])

    def test_addressed_answer_activates_the_autolinks(self):
        r = self.start_autolinked_router()
        store = self.peer(Peer, r.container_url, "store")
        self.wait_for("the auto-links active",
                      lambda: self.statuses(r) == ["active", "active"], TIMEOUT)
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        c.create_sender("alx").send(Message(body="stored"), timeout=TIMEOUT)
        self.wait_for("the store's message", lambda: store.snapshot()[1], TIMEOUT)
        self.assertEqual(store.snapshot()[1], [("alx", "stored")])


if __name__ == "__main__":
    unittest.main()
