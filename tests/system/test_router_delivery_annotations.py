#!/usr/bin/python3
"""Delivery annotations pass through the router as they came, as 1.19
forwards them: from a client to a client on the same router and across two
routers, with stripAnnotations `both` on the clients' listeners (which
strips the router's message annotations, never the delivery annotations),
with or without message annotations beside them. Real junctiond processes
on 127.0.0.1.
"""
import unittest

from proton import Message

from harness import SLOW, Recv, RouterTestCase, Send, Traffic
from mesh import Mesh

TIMEOUT = 20 * SLOW
DA = {"x-opt-qd.trace": 999, "Hello": "there"}


def messages():
    with_ma = Message(body={"number": 0}, instructions=dict(DA),
                      annotations={"work": "hard", "x-opt-qd": "humble",
                                   "x-opt-qd.ingress": "ingress-router",
                                   "x-opt-qd.trace": ["0/X"]})
    without_ma = Message(body={"number": 1}, instructions=dict(DA))
    return [with_ma.encode(), without_ma.encode()]


class DeliveryAnnotationsTest(RouterTestCase):

    def check(self, src_url, dst_url):
        rx = Recv("da.q", url=dst_url, raw=True)
        tx = Send("da.q", messages(), url=src_url)
        self.run_scenario(Traffic(None, [rx], [tx], expect=2))
        got = []
        for raw in rx.messages:
            m = Message()
            m.decode(raw)
            got.append((m.body["number"], m.instructions, m.annotations))
        self.assertEqual(got, [(0, DA, {"work": "hard", "x-opt-qd": "humble"}),
                               (1, DA, None)])

    def test_delivery_annotations_pass_on_one_router(self):
        r = self.start_router(listener={"stripAnnotations": "both"})
        self.check(r.url, r.url)

    def test_delivery_annotations_pass_across_two_routers(self):
        m = Mesh(self, ["A", "B"], [("A", "B", 1)],
                 client_listener={"A": {"stripAnnotations": "both"},
                                  "B": {"stripAnnotations": "both"}}).start()
        m.probe("A", "B", "da.q")
        self.check(m["A"].url, m["B"].url)


if __name__ == "__main__":
    unittest.main()
