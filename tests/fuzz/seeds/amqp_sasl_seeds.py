#!/usr/bin/python3
"""amqp_sasl_seeds.py — write the seed corpus of tests/fuzz/fuzz_amqp_sasl.c:
client streams for our server end (PLAIN good and bad, challenge rounds,
ANONYMOUS with AMQP sent ahead, frames out of order) and server streams for
our client end (mechanisms, an empty challenge, outcomes ok and auth, AMQP
sent ahead), each with every control octet's split size.

Usage: tests/fuzz/seeds/amqp_sasl_seeds.py OUTDIR
"""
import struct
import sys

from amqp_seed import Described, Raw, Sym, UByte, enc, write_seeds

SASL = b"AMQP\x03\x01\x00\x00"
AMQP = b"AMQP\x00\x01\x00\x00"


def frame(body):
    b = enc(body)
    return struct.pack(">IBBH", 8 + len(b), 2, 1, 0) + b


def sym_array(*names):
    body = b"".join(bytes([len(n)]) + n.encode() for n in names)
    return Raw(bytes([0xE0, len(body) + 2, len(names), 0xA3]) + body)


def init(mech, resp=None):
    return frame(Described(0x41, [Sym(mech), resp, "h"] if resp is not None else [Sym(mech)]))


def response(r):
    return frame(Described(0x43, [r]))


CLIENT_STREAMS = [
    SASL + init("PLAIN", b"\0u\0p") + AMQP,
    SASL + init("PLAIN", b"\0u\0x"),
    SASL + init("X-CHAL", b"one") + response(b"two") + response(b"ok") + AMQP,
    SASL + init("X-CHAL") + response(b"") + response(b"ok"),
    SASL + init("ANONYMOUS", b"trace") + AMQP,
    SASL + init("GSSAPI", b""),
    SASL + response(b"early"),
    SASL + init("PLAIN", b"\0u\0p") + init("PLAIN", b"\0u\0p"),
    AMQP,
]
SERVER_STREAMS = [
    SASL + frame(Described(0x40, [sym_array("ANONYMOUS", "PLAIN")]))
    + frame(Described(0x44, [UByte(0), b"fin"])) + AMQP,
    SASL + frame(Described(0x40, [Sym("PLAIN")])) + frame(Described(0x42, [b""]))
    + frame(Described(0x44, [UByte(0)])),
    SASL + frame(Described(0x40, [Sym("EXTERNAL")])),
    SASL + frame(Described(0x40, [sym_array("PLAIN")])) + frame(Described(0x44, [UByte(1)])),
    SASL + frame(Described(0x44, [UByte(0)])),
    SASL + frame(Described(0x40, [Sym("ANONYMOUS")])) + frame(Described(0x42, [b"x"])),
    AMQP,
]


def main():
    blobs = []
    for chunk in range(8):
        blobs += [bytes([chunk]) + s for s in CLIENT_STREAMS]
        blobs += [bytes([0x80 | chunk]) + s for s in SERVER_STREAMS]
    print(write_seeds(sys.argv[1], blobs))


if __name__ == "__main__":
    main()
