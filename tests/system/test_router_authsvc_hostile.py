#!/usr/bin/python3
"""authServicePlugin against a hostile or broken auth service, and clients
that misbehave during the relay (docs/design.md "The auth service"): the
service sends garbage, a frame larger than any allowed, outcomes twice, a
challenge or an outcome before the client's init, no mechanisms, an AMQP
header instead of SASL, an Open instead of an outcome, identities of odd
types and sizes, challenges without end; a client floods frames while its
exchange waits; sixty clients wait at once on a slow service, a third of
them leaving; the listener and the plugin are deleted mid-exchange. In
every case the client is refused (or, for the service's own early outcome,
admitted as the service says), the router goes on serving, and it stops
cleanly with nothing leaked (the harness requires exit status 0). A raw
socket service (one thread a connection) built from AMQP 1.0 part 5.3.
"""
import socket
import struct
import threading
import time
import unittest

from proton import Array, Data, UNDESCRIBED, symbol, ubyte

from auth_service import SASL_HEADER, AMQP_HEADER, encode, frame
from test_router_authsvc import AuthServiceTestCase, TIMEOUT, attempt, read_frame, _sym


class Hostile:
    """A service socket whose behaviour after the client's init is `act(sock, init)`."""

    def __init__(self, act, before_init=None):
        self.act = act
        self.before_init = before_init
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self):
        self.stopping = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            c.settimeout(30)
            if c.recv(8, socket.MSG_WAITALL) != SASL_HEADER:
                return
            c.sendall(SASL_HEADER)
            if self.before_init:
                if self.before_init(c):
                    return
            c.sendall(frame(encode(0x40, [Array(UNDESCRIBED, Data.SYMBOL, symbol("PLAIN"),
                                                 symbol("X-ECHO"))]), True))
            code, init = read_frame(c)
            self.act(c, init)
        except Exception:
            pass


class HostileServiceTest(AuthServiceTestCase):

    def hostile(self, act, before_init=None):
        h = Hostile(act, before_init)
        self.addCleanup(h.stop)
        return h

    def check_alive(self, r):
        self.assertTrue(r.alive(), r.log())
        self.connections()

    def run_one(self, act, before_init=None, user="alice", mechs="PLAIN"):
        h = self.hostile(act, before_init)
        r = self.relay_router(h.port, listener={"initialHandshakeTimeoutSeconds": 3})
        err = attempt(r.url, user, "pw", mechs)
        self.check_alive(r)
        return r, err

    def test_garbage(self):
        r, err = self.run_one(lambda c, i: c.sendall(b"\x01\x02garbage" * 100))
        self.assertIsNotNone(err)

    def test_huge_frame(self):
        def act(c, i):
            c.sendall(struct.pack(">IBBH", 0xFFFFFF00, 2, 1, 0) + b"\0" * 4096)
            time.sleep(2)
        r, err = self.run_one(act)
        self.assertIsNotNone(err)

    def test_outcome_twice(self):
        def act(c, i):
            c.sendall(frame(encode(0x44, [ubyte(0)]), True))
            c.sendall(frame(encode(0x44, [ubyte(1)]), True))
            c.sendall(frame(encode(0x44, [ubyte(0)]), True))
            time.sleep(2)
        r, err = self.run_one(act)
        self.assertIsNotNone(err)

    def test_challenge_before_init(self):
        def before(c):
            # one write: the relay reads both before the client can answer
            c.sendall(frame(encode(0x40, [Array(UNDESCRIBED, Data.SYMBOL, symbol("PLAIN"))]),
                            True) + frame(encode(0x42, [b"early"]), True)
                      + frame(encode(0x42, [b"early2"]), True))
            time.sleep(3)
            return True
        r, err = self.run_one(lambda c, i: None, before)
        self.assertIsNotNone(err)

    def test_outcome_before_init_is_refused(self):
        """An outcome (here a success with an identity) before the client's
        init: the client is refused, never admitted as the service's
        user."""
        def before(c):
            # one write: the relay reads both before the client can answer
            c.sendall(frame(encode(0x40, [Array(UNDESCRIBED, Data.SYMBOL, symbol("PLAIN"))]),
                            True) + frame(encode(0x44, [ubyte(0)]), True))
            c.sendall(AMQP_HEADER)
            props = {symbol("authenticated-identity"): {"sub": "mallory"}}
            c.sendall(frame(encode(0x10, ["svc", None, None, None, None, None, None, None,
                                          None, props]), False))
            time.sleep(3)
            return True
        r, err = self.run_one(lambda c, i: None, before)
        self.assertIsNotNone(err)  # refused (before any mechanism was offered)
        self.assertIn("the service sent an outcome before the client's init", r.log())
        self.assertNotIn("mallory", r.log())

    def test_mechanisms_twice_and_empty(self):
        def before(c):
            c.sendall(frame(encode(0x40, [Array(UNDESCRIBED, Data.SYMBOL)]), True))
            c.sendall(frame(encode(0x40, [Array(UNDESCRIBED, Data.SYMBOL, symbol("PLAIN"))]),
                            True))
            time.sleep(3)
            return True
        r, err = self.run_one(lambda c, i: None, before)
        self.assertIsNotNone(err)

    def test_open_without_sasl(self):
        def before(c):
            c.sendall(AMQP_HEADER)
            time.sleep(2)
            return True
        r, err = self.run_one(lambda c, i: None, before)
        self.assertIsNotNone(err)

    def test_amqp_open_instead_of_outcome(self):
        def act(c, i):
            c.sendall(AMQP_HEADER)
            props = {symbol("authenticated-identity"): {"sub": "mallory"}}
            c.sendall(frame(encode(0x10, ["svc", None, None, None, None, None, None, None,
                                          None, props]), False))
            time.sleep(2)
        r, err = self.run_one(act)
        self.assertIsNotNone(err)

    def test_odd_identities(self):
        for ident in ({"sub": 5}, {"sub": None, "preferred_username": "x" * 300},
                      {symbol("sub"): b"\x00bin"}, "notamap", [1, 2],
                      {"sub": {"nested": "map"}, "preferred_username": ["a"]}):
            def act(c, i, ident=ident):
                c.sendall(frame(encode(0x44, [ubyte(0)]), True))
                c.recv(8, socket.MSG_WAITALL)
                c.sendall(AMQP_HEADER)
                props = {symbol("authenticated-identity"): ident}
                c.sendall(frame(encode(0x10, ["svc", None, None, None, None, None, None, None,
                                              None, props]), False))
                time.sleep(2)
            r, err = self.run_one(act)
            self.assertIn("unauthorized-access", err or "", ident)
            self.assertIn("no usable authenticated-identity", r.log())

    def test_endless_challenges(self):
        def act(c, i):
            while True:
                c.sendall(frame(encode(0x42, [b"more" * 1000]), True))
                code, _ = read_frame(c)
                if code != 0x43:
                    return
        h = self.hostile(act)
        r = self.relay_router(h.port, listener={"initialHandshakeTimeoutSeconds": 3})
        n = 0
        with socket.create_connection(("127.0.0.1", r.port), timeout=TIMEOUT) as s:
            s.sendall(SASL_HEADER)
            s.recv(8, socket.MSG_WAITALL)
            read_frame(s)
            s.sendall(frame(encode(0x41, [_sym("X-ECHO"), b"alice"]), True))
            try:
                while True:
                    code, _ = read_frame(s)
                    if code != 0x42:
                        break
                    n += 1
                    s.sendall(frame(encode(0x43, [b"r" * 1000]), True))
            except (EOFError, OSError):
                pass
        self.assertGreater(n, 0)
        # the listener's handshake timeout or the service's (both 3 s) ends it
        self.assertRegex(r.log(), r"no AMQP open within 3 s|did not answer within 3 s")
        self.check_alive(r)

    def test_client_floods_during_relay(self):
        def act(c, i):
            time.sleep(3)
        h = self.hostile(act)
        r = self.relay_router(h.port, listener={"initialHandshakeTimeoutSeconds": 5})
        with socket.create_connection(("127.0.0.1", r.port), timeout=TIMEOUT) as s:
            s.sendall(SASL_HEADER)
            s.recv(8, socket.MSG_WAITALL)
            read_frame(s)
            s.sendall(frame(encode(0x41, [_sym("PLAIN"), b"\0alice\0pw"]), True))
            try:
                for _ in range(200):
                    s.sendall(frame(encode(0x43, [b"x" * 5000]), True))
                    s.sendall(frame(encode(0x41, [_sym("PLAIN"), b"\0bob\0pw"]), True))
                s.sendall(AMQP_HEADER + b"\0" * 100000)
            except OSError:
                pass
            s.settimeout(8)
            try:
                while s.recv(65536):
                    pass
            except OSError:
                pass
        self.check_alive(r)

    def test_many_clients_slow_service(self):
        def act(c, i):
            time.sleep(4)
        h = self.hostile(act)
        r = self.relay_router(h.port, listener={"initialHandshakeTimeoutSeconds": 2})
        socks = []
        for _ in range(60):
            s = socket.create_connection(("127.0.0.1", r.port), timeout=TIMEOUT)
            s.sendall(SASL_HEADER)
            socks.append(s)
        for k, s in enumerate(socks):
            try:
                s.recv(8, socket.MSG_WAITALL)
                read_frame(s)
                s.sendall(frame(encode(0x41, [_sym("PLAIN"), b"\0alice\0pw"]), True))
                if k % 3 == 0:
                    s.close()
            except (OSError, EOFError):
                pass
        time.sleep(4)
        for s in socks:
            s.close()
        self.check_alive(r)

    def test_delete_listener_and_plugin_mid_exchange(self):
        from test_router_authsvc import Client, ConnectOptions, StatusError
        def act(c, i):
            time.sleep(6)
        h = self.hostile(act)
        r = self.relay_router(h.port, listener={"initialHandshakeTimeoutSeconds": 10,
                                                "name": "relay"})
        socks = []
        for _ in range(5):
            s = socket.create_connection(("127.0.0.1", r.port), timeout=TIMEOUT)
            s.sendall(SASL_HEADER)
            s.recv(8, socket.MSG_WAITALL)
            read_frame(s)
            s.sendall(frame(encode(0x41, [_sym("PLAIN"), b"\0alice\0pw"]), True))
            socks.append(s)
        time.sleep(0.5)
        with Client(ConnectOptions(url=self.mgmt_url)) as m:
            try:
                m.delete("authServicePlugin", "auth")
            except StatusError:
                pass  # refused while a listener names it: the listener goes first
            m.delete("listener", "relay")
            try:
                m.delete("authServicePlugin", "auth")
            except StatusError:
                pass
        time.sleep(7)
        for s in socks:
            s.close()
        self.check_alive(r)
        self.assertIsNone(attempt(self.mgmt_url, "x", "y", "ANONYMOUS"))


if __name__ == "__main__":
    unittest.main()
