#!/usr/bin/python3
"""A small AMQP auth service for the authServicePlugin tests, written from
the AMQP 1.0 spec (part 5.3, SASL; part 2.7, open/close) on raw sockets:
Debian's python3-qpid-proton has no SASL server mechanisms of its own.

What it does on each connection (one thread each):
  - SASL header; sasl-mechanisms offering MECHS;
  - sasl-init: PLAIN checked against a user table; X-ECHO (ours, to test the
    challenge path): the service sends the challenge b"nonce" and accepts
    the response b"nonce:" + password of the user named in the init;
  - sasl-outcome ok (0) or auth (1);
  - after ok: the AMQP header and an Open whose properties carry
    authenticated-identity {sub: user, preferred_username: user}; then it
    answers the router's Close and ends.
Users with special behaviour (any password works for them):
  "slow"   the outcome waits until the test sets `release`;
  "noid"   ok, but the Open has no authenticated-identity;
  "authz"  ok, and the Open also carries address-authz permissions;
  "cut"    the service closes the socket instead of answering;
  "mute"   the service never answers (and keeps the socket).
Everything it saw is recorded in `sessions` (dicts: mech, hostname (the
sasl-init's), open_hostname, user, outcome, closed) for the tests to check.
"""
import socket
import ssl
import struct
import threading

from proton import Array, Data, Described, UNDESCRIBED, symbol, ubyte, ulong

MECHS = ("PLAIN", "X-ECHO", "ANONYMOUS")

SASL_HEADER = b"AMQP\x03\x01\x00\x00"
AMQP_HEADER = b"AMQP\x00\x01\x00\x00"


def encode(descriptor, fields):
    d = Data()
    d.put_object(Described(ulong(descriptor), fields))
    return d.encode()


def frame(body, sasl):
    return struct.pack(">IBBH", 8 + len(body), 2, 1 if sasl else 0, 0) + body


class AuthService:
    def __init__(self, users, tls_context=None):
        self.users = dict(users)
        self.tls = tls_context
        self.sessions = []
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        self.release = threading.Event()
        self.conns = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def stop(self):
        self.stopping = True
        self.release.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        with self.lock:
            for c in self.conns:
                try:
                    c.close()
                except OSError:
                    pass
        self.thread.join(5)

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    # --- one connection ---------------------------------------------------

    def _serve(self, c):
        s = {"mech": None, "hostname": None, "open_hostname": None, "user": None,
             "outcome": None, "closed": False}
        with self.lock:
            self.sessions.append(s)
        try:
            if self.tls:
                c = self.tls.wrap_socket(c, server_side=True)
            c.settimeout(60)
            self._sasl(c, s)
        except (OSError, ValueError, ssl.SSLError):
            pass
        finally:
            try:
                c.close()
            except OSError:
                pass
            s["closed"] = True

    def _read(self, c, n):
        out = b""
        while len(out) < n:
            part = c.recv(n - len(out))
            if not part:
                raise ValueError("end of stream")
            out += part
        return out

    def _frame(self, c):
        size, doff, _type, _ch = struct.unpack(">IBBH", self._read(c, 8))
        body = self._read(c, size - 8)[doff * 4 - 8:]
        if not body:
            return None, []
        d = Data()
        d.decode(body)
        d.rewind()
        d.next()
        o = d.get_object()
        return int(o.descriptor), list(o.value)

    def _sasl(self, c, s):
        if self._read(c, 8) != SASL_HEADER:
            return
        c.sendall(SASL_HEADER)
        c.sendall(frame(encode(0x40, [Array(UNDESCRIBED, Data.SYMBOL,
                                             *[symbol(m) for m in MECHS])]), True))
        code, init = self._frame(c)
        if code != 0x41:
            return
        mech = str(init[0])
        response = bytes(init[1]) if len(init) > 1 and init[1] is not None else b""
        s["mech"] = mech
        s["hostname"] = init[2] if len(init) > 2 else None
        user, ok = None, False
        if mech == "PLAIN":
            parts = response.split(b"\0")
            if len(parts) == 3:
                user = parts[1].decode()
                ok = self.users.get(user) == parts[2].decode() or user in (
                    "slow", "noid", "authz", "cut", "mute")
        elif mech == "X-ECHO":
            user = response.decode()
            c.sendall(frame(encode(0x42, [b"nonce"]), True))
            code, resp = self._frame(c)
            if code != 0x43:
                return
            ok = bytes(resp[0]) == b"nonce:" + self.users.get(user, "\0").encode()
        elif mech == "ANONYMOUS":
            user, ok = "anonymous-user", True
        s["user"] = user
        if user == "cut":
            return
        if user == "mute":
            while True:
                if not c.recv(1024):
                    return
        if user == "slow":
            self.release.wait(60)
        s["outcome"] = 0 if ok else 1
        c.sendall(frame(encode(0x44, [ubyte(0 if ok else 1)]), True))
        if not ok:
            return
        if self._read(c, 8) != AMQP_HEADER:
            return
        c.sendall(AMQP_HEADER)
        code, open_ = self._frame(c)
        if code != 0x10:
            return
        s["open_hostname"] = open_[1] if len(open_) > 1 else None
        props = {}
        if user != "noid":
            props[symbol("authenticated-identity")] = {"sub": user,
                                                       "preferred_username": user}
        if user == "authz":
            props[symbol("address-authz")] = {"q1": Array(UNDESCRIBED, Data.STRING, "send")}
        c.sendall(frame(encode(0x10, ["auth-service", None, None, None, None, None, None, None,
                                      None, props]), False))
        while True:  # until the router's close
            code, _ = self._frame(c)
            if code == 0x18:
                c.sendall(frame(encode(0x18, []), False))
                return
