#!/usr/bin/python3
"""amqp_conn_seeds.py — write the seed corpus of the connection engine's
fuzz target (tests/fuzz/fuzz_amqp_conn.c): a peer's whole conversation
(header, open, begin, attach both roles, flows with drain and echo,
detach, end, close), deliveries (one-frame and multi-frame transfers, an
abort, a state on a later frame, pre-settled, dispositions of ours as
ranges with known and unknown states) and its faults (a bad protocol
header, a frame before open, a second open, a handle in use, an unattached
handle, a frame on a channel without a session, a receiver's count ahead,
a transfer beyond credit or the window, a first transfer without id or
tag, a continuation with another id, a transfer on our sending link),
each under several piece and buffer sizes, with and without our side
opening first.

Usage: tests/fuzz/seeds/amqp_conn_seeds.py OUTDIR
"""
import struct
import sys

from amqp_seed import Described, Map, Raw, Sym, UByte, UInt, UShort, enc, write_seeds

HEADER = b"AMQP\x00\x01\x00\x00"
HEARTBEAT = b"\x00\x00\x00\x08\x02\x00\x00\x00"


def frame(body, channel=0, payload=b""):
    data = enc(body) + payload
    return struct.pack(">IBBH", 8 + len(data), 2, 0, channel) + data


def open_(idle=None):
    return Described(0x10, ["peer", "host", UInt(65536), UShort(255), UInt(idle or 0)])


def begin(ch=None, out_id=0xFFFFFFF0, window=100):
    return Described(0x11, [None if ch is None else UShort(ch), UInt(out_id), UInt(window),
                            UInt(window), UInt(1023)])


SOURCE = Described(0x28, ["queue.a", UInt(0), Sym("session-end"), UInt(0), False])
TARGET = Described(0x29, ["queue.b"])


def attach(name, handle, role, initial=0xFFFFFFFE):
    return Described(0x12, [name, UInt(handle), role, None, None, SOURCE, TARGET, None, None,
                            None if role else UInt(initial)])


def flow(handle=None, dc=None, credit=None, drain=False, echo=False, window=100):
    fields = [UInt(0), UInt(window), UInt(0xFFFFFFF0), UInt(window)]
    if handle is not None:
        fields += [UInt(handle), None if dc is None else UInt(dc),
                   None if credit is None else UInt(credit), UInt(3), drain, echo,
                   Map([(Sym("k"), "v")])]
    return Described(0x13, fields)


def detach(handle, closed=True, err=True):
    e = Described(0x1D, [Sym("amqp:not-found"), "gone"]) if err else None
    return Described(0x16, [UInt(handle), closed, e])


ACCEPTED = Described(0x24, [])
CUSTOM = Raw(b"\x00\xa3\x08x:custom\x45")  # a state with a symbolic descriptor


def transfer(handle, did=None, tag=None, more=False, settled=None, state=None, aborted=None,
             mode=None):
    return Described(0x14, [UInt(handle), None if did is None else UInt(did), tag, UInt(0),
                            settled, more, None if mode is None else UByte(mode), state, None,
                            aborted])


def disposition(first, last=None, role=True, settled=True, state=ACCEPTED):
    return Described(0x15, [role, UInt(first), None if last is None else UInt(last), settled,
                            state])


END = Described(0x17, [Described(0x1D, [Sym("amqp:internal-error")])])
CLOSE = Described(0x18, [])

GOOD = (HEADER + frame(open_(idle=1000)) + frame(begin(), 1) + HEARTBEAT
        + frame(attach("in", 0, False), 1) + frame(attach("out", 1, True), 1)
        + frame(attach("fuzz-out", 2, True), 1)
        + frame(flow(), 1) + frame(flow(1, credit=7, drain=True, echo=True), 1)
        + frame(flow(2, dc=0xFFFFFFF0, credit=5, echo=True), 1)
        + frame(flow(0, dc=0xFFFFFFFE, credit=0), 1)
        + frame(detach(0), 1) + frame(detach(1, closed=False, err=False), 1)
        + frame(begin(ch=0, out_id=5), 0) + frame(flow(window=13), 0)
        + frame(END, 1) + frame(CLOSE))
# the peer sends on "in" (handle 0: our receiver, credit 10) and takes
# from "out" (handle 1: our sender, credit 7 from its flow)
DELIVERIES = (HEADER + frame(open_()) + frame(begin(), 1)
              + frame(attach("in", 0, False), 1) + frame(attach("out", 1, True), 1)
              + frame(transfer(0, 0, b"t0"), 1, b"\x00\x53\x77\xa1\x02hi")
              + frame(transfer(0, 1, b"t1", more=True), 1, b"x" * 300)
              + frame(transfer(0, more=True), 1, b"y" * 300)
              + frame(transfer(0, settled=True, state=CUSTOM), 1, b"z")
              + frame(transfer(0, 2, b"t2", more=True), 1, b"a")
              + frame(transfer(0, aborted=True), 1)
              + frame(transfer(0, 3, b"t3", settled=True, state=ACCEPTED), 1, b"b")
              + frame(transfer(0, 4, b"t4", mode=0), 1, b"c")
              + frame(flow(1, dc=0xFFFFFFFE, credit=7), 1)
              + frame(disposition(0, 3, settled=False, state=CUSTOM), 1)
              + frame(disposition(0, 0xFFFFFFFF), 1)
              + frame(disposition(1, 2, role=False), 1)
              + frame(flow(window=1), 1)
              + frame(detach(0), 1) + frame(detach(1), 1) + frame(END, 1) + frame(CLOSE))
FAULTS = [
    b"AMQP\x03\x01\x00\x00" + frame(CLOSE),
    b"HTTP/1.1 200 OK\r\n",
    HEADER + frame(begin(), 0),
    HEADER + frame(open_()) + frame(open_()),
    HEADER + frame(open_()) + frame(begin(), 1) + frame(attach("a", 0, True), 1)
    + frame(attach("b", 0, True), 1) + frame(flow(), 1),
    HEADER + frame(open_()) + frame(begin(), 1) + frame(flow(9, credit=1), 1),
    HEADER + frame(open_()) + frame(END, 4),
    HEADER + frame(open_()) + frame(begin(), 1) + frame(begin(), 1),
    HEADER + frame(open_()) + frame(begin(ch=7), 1),
    HEADER + frame(open_()) + frame(begin(), 1) + frame(attach("fuzz-out", 0, True), 1)
    + frame(flow(0, dc=5, credit=1), 1),
    HEADER + frame(open_()) + frame(begin(), 1)
    + frame(Described(0x14, [UInt(0), UInt(0), b"t", UInt(0)]), 1),
    HEADER + frame(open_()) + frame(begin(), 1) + frame(attach("in", 0, False), 1)
    + b"".join(frame(transfer(0, i, b"t"), 1) for i in range(12)),
    HEADER + frame(open_()) + frame(begin(window=1), 1) + frame(attach("in", 0, False), 1)
    + frame(transfer(0, 0, b"t", more=True), 1) * 120,
    HEADER + frame(open_()) + frame(begin(), 1) + frame(attach("in", 0, False), 1)
    + frame(transfer(0, None, b"t"), 1),
    HEADER + frame(open_()) + frame(begin(), 1) + frame(attach("in", 0, False), 1)
    + frame(transfer(0, 5, None), 1),
    HEADER + frame(open_()) + frame(begin(), 1) + frame(attach("in", 0, False), 1)
    + frame(transfer(0, 5, b"t", more=True), 1) + frame(transfer(0, 6, b"t"), 1),
    HEADER + frame(open_()) + frame(begin(), 1) + frame(attach("out", 0, True), 1)
    + frame(transfer(0, 0, b"t"), 1),
    HEADER + frame(open_()) + frame(begin(), 1) + frame(attach("in", 0, False), 1)
    + frame(transfer(0, 0, b"t", mode=1), 1),
    HEADER + frame(open_()) + b"\x00\x00\x00\x04\x02\x00\x00\x00",
    HEADER + frame(open_()) + frame(attach("x", 70000, False), 0),
    HEADER + frame(open_()) + frame(begin(), 1) + frame(attach("x", 70000, True), 1),
]


def main():
    out = sys.argv[1]
    seeds = []
    for control in (0x00, 0x0B, 0x13, 0x3F, 0x87, 0xA1, 0xFF):
        seeds.append(bytes([control]) + GOOD)
        seeds.append(bytes([control]) + DELIVERIES)
    for i, f in enumerate(FAULTS):
        seeds.append(bytes([(i * 9) & 0xFF]) + f)
        seeds.append(bytes([0x80 | 0x38 | (i & 7)]) + f)
    print(write_seeds(out, seeds))


if __name__ == "__main__":
    main()
