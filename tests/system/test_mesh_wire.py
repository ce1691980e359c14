#!/usr/bin/python3
"""The mesh's wire format, checked against docs/protocol.md ("The mesh"):
a fake interior router (python3-qpid-proton, written from the protocol
alone) joins a junctiond's inter-router listener, records the first
control messages junctiond sends it — HELLO, LSR, RA and MAU — as raw
octets, and checks their addresses, application-properties and body keys
and the AMQP type of every value (str vs sym keys, int vs long, list not
array). It also checks the open frame's properties and the attach
classification (single-symbol capabilities)."""
import struct
import time
import unittest

from proton import Delivery, Endpoint, Message, symbol
from proton.reactor import AtMostOnce

from harness import SANITIZER, Router, RouterTestCase, Scenario, free_port
from mesh import mesh_config


# ---- a typed AMQP decoder (type names as the spec's encodings) -----------

FIXED = {0x40: ("null", 0), 0x41: ("bool", 0), 0x42: ("bool", 0), 0x43: ("uint", 0),
         0x44: ("ulong", 0), 0x45: ("list", 0), 0x50: ("ubyte", 1), 0x51: ("byte", 1),
         0x52: ("uint", 1), 0x53: ("ulong", 1), 0x54: ("int", 1), 0x55: ("long", 1),
         0x56: ("bool", 1), 0x60: ("ushort", 2), 0x61: ("short", 2), 0x70: ("uint", 4),
         0x71: ("int", 4), 0x72: ("float", 4), 0x80: ("ulong", 8), 0x81: ("long", 8),
         0x82: ("double", 8), 0x83: ("timestamp", 8), 0x98: ("uuid", 16)}
SIGNED = {0x51: ">b", 0x54: ">b", 0x55: ">b", 0x61: ">h", 0x71: ">i", 0x81: ">q"}


def decode(data, off=0):
    """(typename, value, next offset). Lists -> list of typed values, maps
    -> list of (key, value) typed pairs, described -> ('described', (d, v))."""
    code = data[off]
    off += 1
    if code in FIXED:
        name, size = FIXED[code]
        raw = data[off:off + size]
        if code in SIGNED:
            value = struct.unpack(SIGNED[code], raw)[0]
        elif code in (0x41, 0x42):
            value = code == 0x41
        elif size:
            value = int.from_bytes(raw, "big")
        else:
            value = [] if code == 0x45 else 0 if name != "null" else None
        return (name, value, off + size)
    if code in (0xa0, 0xa1, 0xa3, 0xb0, 0xb1, 0xb3):
        wide = code >= 0xb0
        n = struct.unpack(">I", data[off:off + 4])[0] if wide else data[off]
        off += 4 if wide else 1
        raw = bytes(data[off:off + n])
        name = {0: "binary", 1: "str", 3: "sym"}[code & 0x0f]
        return (name, raw if name == "binary" else raw.decode(), off + n)
    if code in (0xc0, 0xc1, 0xd0, 0xd1):
        wide = code >= 0xd0
        size, count = struct.unpack(">II", data[off:off + 8]) if wide else (data[off], data[off + 1])
        off += 8 if wide else 2
        items = []
        for _ in range(count):
            t = decode_any(data, off)
            items.append(t[:2])
            off = t[2]
        if code in (0xc1, 0xd1):
            return ("map", list(zip(items[0::2], items[1::2])), off)
        return ("list", items, off)
    if code in (0xe0, 0xf0):
        return ("array", None, len(data))
    raise AssertionError("unknown format code 0x%02x" % code)


def decode_any(data, off=0):
    if data[off] == 0x00:
        d = decode_any(data, off + 1)
        v = decode_any(data, d[2])
        return ("described", (d[:2], v[:2]), v[2])
    return decode(data, off)


def sections(data):
    """{descriptor code: typed value} of an encoded message."""
    out, off = {}, 0
    while off < len(data):
        t = decode_any(data, off)
        assert t[0] == "described", t
        (dt, dv), value = t[1]
        out[dv] = value
        off = t[2]
    return out


def typed_map(pairs):
    """{key string: (key type, value type, value)} of a decoded map."""
    return {k[1]: (k[0], v[0], v[1]) for k, v in pairs}


class FakeRouter(Scenario):
    """Interior router 'F' connecting to junctiond's inter-router listener:
    attaches the control links with the single-symbol capability qd.router,
    answers HELLO with a HELLO that has seen junctiond, and records every
    control message junctiond sends until it has one of each kind."""

    def __init__(self, url, router_id, client_url):
        super().__init__(timeout=30)
        self.url, self.router_id, self.client_url = url, router_id, client_url
        self.got = {}
        self.hello_sent = 0
        self.props = None
        self.data_link_ok = None

    def start(self):
        self.conn = self.connect(self.url, container_id="F")
        self.conn.container = "F"
        ssn = self.conn.session()
        ssn.open()
        self.ctl_in = self.link(ssn.receiver("qdlink.fakectlin000001"), "qd.router")
        self.ctl_out = self.link(ssn.sender("qdlink.fakectlout00001"), "qd.router")
        dssn = self.conn.session()
        dssn.open()
        self.data_in = self.link(dssn.receiver("qdlink.fakedatain00001"), "qd.router-data")

    def link(self, l, cap):
        for t in (l.source, l.target):
            t.capabilities.put_symbol(cap)
        l.open()
        if l.is_receiver:
            l.flow(250)
        return l

    def on_connection_remote_open(self, event):
        if event.connection == self.conn:
            self.props = event.connection.remote_properties

    def on_link_remote_open(self, event):
        if event.link == self.data_in:
            self.data_link_ok = True
        if event.link == self.ctl_out:
            self.container.schedule(0.2, self)

    def on_timer_task(self, event):
        if self.over:
            return
        hello = Message(address="amqp:/_local/qdhello",
                        properties={"opcode": "HELLO"},
                        body={"id": "F", "pv": 1, "area": "0", "instance": int(time.time()),
                              "seen": [self.router_id]})
        hello.annotations = {symbol("x-opt-qd.ingress"): "0/F",
                             symbol("x-opt-qd.trace"): ["0/F"]}
        if self.ctl_out.credit > 0:
            d = self.ctl_out.send(hello)
            d.settle()
            self.hello_sent += 1
        self.container.schedule(0.5, self)

    def on_delivery(self, event):
        link = event.link
        dlv = event.delivery
        if link not in (self.ctl_in, self.data_in) or dlv.partial:
            return
        data = link.recv(dlv.pending)
        dlv.settle()
        link.flow(1)
        secs = sections(data)
        ap = typed_map(secs.get(0x74, ("map", []))[1])
        op = ap.get("opcode", (None, None, None))[2]
        if op and op not in self.got:
            self.got[op] = (secs, ap)
        if op == "RA" and self.client is None:
            # junctiond knows F now: a consumer on junctiond makes it send MAU
            self.client = self.container.create_receiver(self.connect(self.client_url), "wire.q")
        if {"HELLO", "RA", "LSR", "MAU"} <= set(self.got):
            self.done()

    client = None

    def progress(self):
        return "got %s, hellos sent %d" % (sorted(self.got), self.hello_sent)


class EndlessControl(Scenario):
    """A peer that streams one control message without end: once it
    passes its control-message bound the router rejects it with
    amqp:link:message-size-exceeded (settled, before its end) and closes
    the control link and the connection, as for any message over
    maxMessageSize."""

    def __init__(self, url):
        super().__init__(timeout=60)
        self.url = url
        self.sent = 0
        self.condition = None
        self.dlv = None

    def start(self):
        conn = self.connect(self.url, container_id="F")
        ssn = conn.session()
        ssn.open()
        self.snd = ssn.sender("qdlink.endlesscontrol01")
        for t in (self.snd.source, self.snd.target):
            t.capabilities.put_symbol("qd.router")
        self.snd.open()

    def tick(self):
        if self.condition is None and self.snd.credit > 0 and \
                self.snd.session.outgoing_bytes < (1 << 20):
            if self.dlv is None:
                self.dlv = self.snd.delivery("endless")
                # a well-formed start: properties (to the HELLO address),
                # then a data section claiming 2 GiB that never ends
                head = Message(address="amqp:/_local/qdhello").encode()
                self.snd.stream(head + b"\x00\x53\x75\xb0\x7f\xff\xff\xff")
            self.snd.stream(b"\x00" * (256 * 1024))
            self.sent += 256 * 1024

    def on_link_remote_close(self, event):
        # the outcome carries the reason (its disposition came first)
        self.condition = event.link.remote_condition or (
            self.dlv.remote.condition if self.dlv is not None else None)
        self.done()

    def on_link_error(self, event):
        self.condition = event.link.remote_condition
        self.done()

    def progress(self):
        return "streamed %d octets" % self.sent


class Wire(RouterTestCase):
    def test_an_endless_control_message_is_cut_off(self):
        ir = free_port()
        r = Router(self.workdir, name="J", config=mesh_config("J", ir, [])).start()
        self.routers.append(r)
        self.addCleanup(self._stop_router, r)
        r.wait_ready()
        before = r.status_kb("VmRSS")
        s = self.run_scenario(EndlessControl("amqp://127.0.0.1:%d" % ir))
        self.assertEqual(str(s.condition.name), "amqp:link:message-size-exceeded")
        self.assertLess(s.sent, 16 << 20)
        # ThreadSanitizer maps shadow memory for each application page the
        # router touches (several times the page), and RSS counts it: the
        # bound is 32 MiB of the router's own memory either way.
        shadow = 4 if SANITIZER == "thread" else 1
        self.assertLess(r.status_kb("VmRSS") - before, 32 * 1024 * shadow)

    def test_first_control_messages_match_the_reference(self):
        ir = free_port()
        r = Router(self.workdir, name="J", config=mesh_config("J", ir, [])).start()
        self.routers.append(r)
        self.addCleanup(self._stop_router, r)
        r.wait_ready()
        f = self.run_scenario(FakeRouter("amqp://127.0.0.1:%d" % ir, "J", r.url))

        # open frame: symbol keys, product/version str, conn-id and
        # annotations-version int
        p = f.props
        self.assertTrue(p, "no open properties")
        self.assertEqual(p[symbol("product")], "qpid-dispatch-router")
        self.assertIn(symbol("qd.conn-id"), p)
        self.assertEqual(p.get(symbol("qd.annotations-version")), 1, p)
        self.assertTrue(f.data_link_ok)

        def envelope(op, to, key_type, props_len):
            secs, ap = f.got[op]
            self.assertEqual(ap["opcode"], (key_type, "str", op), op)
            hdr = secs[0x70]
            self.assertEqual(hdr[0], "list")
            self.assertEqual(hdr[1][0], ("bool", False), "%s: durable false" % op)
            props = secs[0x73][1]
            self.assertEqual(props[2], ("str", to), "%s: properties.to" % op)
            self.assertEqual(props[0], ("null", None))
            if props_len:
                self.assertEqual(len(props), props_len, "%s: properties list length" % op)
            body = secs[0x77]
            self.assertEqual(body[0], "map", op)
            return typed_map(body[1])

        hello = envelope("HELLO", "amqp:/_local/qdhello", "str", None)
        self.assertEqual(list(hello), ["id", "pv", "area", "instance", "seen"])
        self.assertEqual(hello["id"], ("str", "str", "J"))
        self.assertEqual(hello["pv"], ("str", "int", 1))
        self.assertEqual(hello["area"], ("str", "str", "0"))
        self.assertEqual(hello["instance"][:2], ("str", "int"))
        self.assertEqual(hello["seen"][1], "list")

        lsr = envelope("LSR", "amqp:/_topo/0/F/qdrouter", "str", None)
        self.assertEqual(lsr, {"id": ("str", "str", "J"), "pv": ("str", "int", 1),
                               "area": ("str", "str", "0")})

        ra = envelope("RA", "amqp:/_topo/0/all/qdrouter", "str", None)
        self.assertEqual(list(ra), ["id", "pv", "area", "instance", "ls_seq", "mobile_seq"])
        for k in ("pv", "instance", "ls_seq", "mobile_seq"):
            self.assertEqual(ra[k][:2], ("str", "int"), k)

        mau = envelope("MAU", "_topo/0/all/qdrouter.ma", "sym", 3)
        self.assertEqual(list(mau), ["id", "pv", "area", "mobile_seq", "hints", "add", "del"])
        self.assertEqual(mau["id"], ("sym", "str", "J"))
        self.assertEqual(mau["pv"], ("sym", "long", 1))
        self.assertEqual(mau["mobile_seq"][:2], ("sym", "long"))
        self.assertEqual(mau["add"], ("sym", "list", [("str", "M0wire.q")]))
        self.assertEqual(mau["hints"][1], "list")
        self.assertEqual([t for t, _ in mau["hints"][2]], ["int"])
        self.assertEqual(mau["del"][:2], ("sym", "list"))


if __name__ == "__main__":
    unittest.main()
