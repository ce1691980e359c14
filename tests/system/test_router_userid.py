#!/usr/bin/python3
"""The user-id check (issue 15; docs/design.md "The user-id check"): on a
connection authenticated with a real SASL mechanism, a message whose
properties user-id is set and is not the authenticated user is rejected with
amqp:unauthorized-access, its credit given back, and the link and the
connection go on. An empty or absent user-id passes. An anonymous connection
is not checked (qdrouterd 1.19 checks only under a vhost policy).

Behaviour fixed against 1.19: 1.19 checks only connections that a vhost
policy governs, so with no policy an authenticated user may send messages
in anyone's name; Junction checks every authenticated client connection.
"""
import os
import sys
import threading
import unittest

from proton import Delivery, Message

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_router_sasl import REALM, USERS, SaslTestCase, connect  # noqa: E402
from test_router_policy import vhost_section  # noqa: E402
from harness import conf_section  # noqa: E402

ALICE = "alice@" + REALM


def send(sender, user_id, body):
    """Send one message with user_id (None: not set); return the settled
    delivery (whatever its outcome)."""
    m = Message(body=body, address=None)
    if user_id is not None:
        m.user_id = user_id
    return sender.send(m, error_states=[])


class Consumer:
    """A receiver on a connection of its own, in a thread, that accepts
    what it gets (a blocking sender waits for the outcome)."""

    def __init__(self, url, address):
        from proton.utils import BlockingConnection
        self.conn = BlockingConnection(url, timeout=10)
        self.rx = self.conn.create_receiver(address, credit=50)
        self.got = []
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        from proton import Timeout
        while not self.stop:
            try:
                m = self.rx.receive(timeout=0.2)
            except Timeout:
                continue
            except Exception:
                return
            self.got.append(m.body)
            self.rx.accept()

    def close(self):
        self.stop = True
        self.thread.join(10)
        self.conn.close()


class UserIdTest(SaslTestCase):

    def router(self):
        return self.sasl_router({"saslMechanisms": "PLAIN", "authenticatePeer": "yes"})

    def consumer(self, address):
        k = Consumer(self.mgmt_url, address)
        self.addCleanup(k.close)
        return k

    def test_forged_user_id_rejected_and_the_link_goes_on(self):
        r = self.router()
        k = self.consumer("uid.q")
        c = connect(r.url, ALICE, USERS["alice"])
        try:
            tx = c.create_sender("uid.q")
            d = send(tx, b"bob@" + REALM.encode(), "forged")
            self.assertEqual(d.remote_state, Delivery.REJECTED)
            self.assertEqual(d.remote.condition.name, "amqp:unauthorized-access")
            self.assertIn("user_id", d.remote.condition.description)
            # the same link and connection go on: own name, empty, absent
            for uid, body in ((ALICE.encode(), "mine"), (b"", "empty"), (None, "absent")):
                d = send(tx, uid, body)
                self.assertEqual(d.remote_state, Delivery.ACCEPTED, body)
            # credit came back: many forged ones do not stall the sender
            for i in range(30):
                d = send(tx, b"mallory", "forged %d" % i)
                self.assertEqual(d.remote_state, Delivery.REJECTED)
            self.assertEqual(send(tx, None, "after").remote_state, Delivery.ACCEPTED)
            self.wait_for("the consumer's messages", lambda: len(k.got) >= 4)
            self.assertEqual(k.got, ["mine", "empty", "absent", "after"])
        finally:
            c.close()

    def test_forged_user_id_on_an_anonymous_relay_link(self):
        r = self.router()
        k = self.consumer("uid.anon")
        c = connect(r.url, ALICE, USERS["alice"])
        try:
            tx = c.create_sender(None)
            m = Message(body="x", address="uid.anon", user_id=b"bob")
            d = tx.send(m, error_states=[])
            self.assertEqual(d.remote_state, Delivery.REJECTED)
            self.assertEqual(d.remote.condition.name, "amqp:unauthorized-access")
            m = Message(body="y", address="uid.anon", user_id=ALICE.encode())
            self.assertEqual(tx.send(m, error_states=[]).remote_state, Delivery.ACCEPTED)
            self.wait_for("the consumer's message", lambda: k.got == ["y"])
        finally:
            c.close()

    def test_anonymous_connection_is_not_checked_as_in_1_19(self):
        self.router()
        k = self.consumer("uid.anon2")
        from proton.utils import BlockingConnection
        c = BlockingConnection(self.mgmt_url, timeout=10)
        try:
            tx = c.create_sender("uid.anon2")
            self.assertEqual(send(tx, b"anyone", "a").remote_state, Delivery.ACCEPTED)
            self.wait_for("the consumer's message", lambda: k.got == ["a"])
        finally:
            c.close()


class UserIdProxyTest(SaslTestCase):
    """allowUserIdProxy (issue 15; docs/design.md "Policy"): under a vhost
    policy, a user whose group allows it may send any user-id; the others
    are still checked."""

    def test_proxy_group_sends_any_user_id(self):
        every = {"sources": "*", "targets": "*", "remoteHosts": "*",
                 "allowDynamicSource": True, "allowAnonymousSender": True}
        groups = {"proxies": dict(every, users=ALICE, allowUserIdProxy=True),
                  "$default": dict(every, users="*")}
        r = self.sasl_router({"saslMechanisms": "PLAIN", "authenticatePeer": "yes"},
                             extra=conf_section("policy", {"enableVhostPolicy": "yes"})
                             + vhost_section("$default", groups))
        k = Consumer(self.mgmt_url, "proxy.q")
        self.addCleanup(k.close)
        a = connect(r.url, ALICE, USERS["alice"])
        b = connect(r.url, "bob@" + REALM, USERS["bob"])
        try:
            d = send(a.create_sender("proxy.q"), b"someone-else", "proxied")
            self.assertEqual(d.remote_state, Delivery.ACCEPTED)
            d = send(b.create_sender("proxy.q"), b"someone-else", "forged")
            self.assertEqual(d.remote_state, Delivery.REJECTED)
            self.assertEqual(d.remote.condition.name, "amqp:unauthorized-access")
            self.wait_for("the consumer's message", lambda: len(k.got) >= 1)
            self.assertEqual(k.got, ["proxied"])
        finally:
            a.close()
            b.close()


if __name__ == "__main__":
    unittest.main()
