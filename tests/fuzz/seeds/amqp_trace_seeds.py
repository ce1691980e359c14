#!/usr/bin/python3
"""amqp_trace_seeds.py — write the seed corpus of the protocol trace's fuzz
target (tests/fuzz/fuzz_amqp_trace.c): streams as a tracer sees them each
way — SASL and AMQP headers, SASL frames, open with capabilities and
properties, begin, attach with termini, flow, a transfer with a payload, a
disposition with a state, heartbeats, close with an error — and streams
that are not AMQP (an HTTP request, a frame size below 8, a data offset
past its frame, a frame too large to hold, a body that does not decode),
each under every piece size and both directions.

Usage: tests/fuzz/seeds/amqp_trace_seeds.py OUTDIR
"""
import struct
import sys

from amqp_seed import Described, Map, Sym, UByte, UInt, UShort, enc, write_seeds

SASL_HEADER = b"AMQP\x03\x01\x00\x00"
HEADER = b"AMQP\x00\x01\x00\x00"
HEARTBEAT = b"\x00\x00\x00\x08\x02\x00\x00\x00"


def frame(body, channel=0, payload=b"", ftype=0):
    data = enc(body) + payload
    return struct.pack(">IBBH", 8 + len(data), 2, ftype, channel) + data


def conversation():
    caps = [Sym("ANONYMOUS-RELAY"), Sym("qd.streaming-links")]
    props = Map([(Sym("product"), "qpid-dispatch-router"), (Sym("qd.conn-id"), 7)])
    source = Described(0x28, ["queue.a", UInt(0), Sym("session-end"), UInt(0), False])
    target = Described(0x29, ["queue.b"])
    return b"".join([
        SASL_HEADER,
        frame(Described(0x40, [[Sym("ANONYMOUS")]]), ftype=1),
        frame(Described(0x41, [Sym("ANONYMOUS"), b"anonymous"]), ftype=1),
        frame(Described(0x44, [UByte(0)]), ftype=1),
        HEADER,
        frame(Described(0x10, ["peer", "host", UInt(65536), UShort(255), UInt(8000), None,
                               None, caps, caps, props])),
        frame(Described(0x11, [None, UInt(0), UInt(100), UInt(100), UInt(1023)]), channel=1),
        frame(Described(0x12, ["link", UInt(0), False, UByte(1), None, source, target, None,
                               None, UInt(0)]), channel=1),
        frame(Described(0x13, [UInt(0), UInt(100), UInt(0), UInt(100), UInt(0), UInt(0),
                               UInt(10), None, False]), channel=1),
        frame(Described(0x14, [UInt(0), UInt(0), b"tag", UInt(0), False]), channel=1,
              payload=b"\x00\x53\x77\xa1\x05hello"),
        HEARTBEAT,
        frame(Described(0x15, [True, UInt(0), None, True, Described(0x24, [])]), channel=1),
        frame(Described(0x18, [Described(0x1d, [Sym("amqp:connection:forced"), "bye"])])),
    ])


def not_amqp():
    return [
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        HEADER + b"\x00\x00\x00\x04\x02\x00\x00\x00",
        HEADER + b"\x00\x00\x00\x0c\x09\x00\x00\x00\x00\x00\x00\x00",
        HEADER + b"\x01\x00\x00\x00\x02\x00\x00\x00" + b"\x00" * 300,
        HEADER + b"\x00\x00\x00\x0c\x02\x00\x00\x00\x00\x53\x10\xff",
    ]


def main(out):
    blobs = []
    streams = [conversation()] + not_amqp()
    for control in range(8):
        for direction in (0, 0x80):
            for s in streams:
                blobs.append(bytes([control | direction]) + s)
    print("%d seeds" % write_seeds(out, blobs))


if __name__ == "__main__":
    main(sys.argv[1])
