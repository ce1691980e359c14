#!/usr/bin/python3
"""amqp_engine_seeds.py — write the seed corpora of the engine's fuzz targets
(tests/fuzz/fuzz_amqp_frame.c, fuzz_amqp_diff.c): every performative and
SASL body with its fields set, a few with symbolic descriptors, every
delivery state, and short lists.

Usage: tests/fuzz/seeds/amqp_engine_seeds.py OUTDIR_FRAME OUTDIR_DIFF

amqp_diff inputs are a control octet then one frame body; amqp_frame
inputs a control octet then a protocol header and frames.
"""
import struct
import sys

from amqp_seed import Described, Map, Raw, Sym, UByte, UInt, ULong, UShort, enc, write_seeds


def sym_array(*names):
    body = b"".join(bytes([len(n)]) + n.encode() for n in names)
    return Raw(bytes([0xE0, len(body) + 2, len(names), 0xA3]) + body)


def symbolic(name, value):
    return Raw(b"\x00" + enc(Sym(name)) + enc(value))


ERROR = Described(0x1D, [Sym("amqp:internal-error"), "broke", Map([(Sym("k"), "v")])])
STATES = [
    Described(0x23, [UInt(1), ULong(300)]),
    Described(0x24, []),
    Described(0x25, [ERROR]),
    Described(0x26, []),
    Described(0x27, [True, False, Map([(Sym("x-opt-a"), 1)])]),
    Described(0x33, [b"txn"]),
    Described(0x34, [b"txn", Described(0x24, [])]),
    symbolic("amqp:accepted:list", []),
    symbolic("com.example:state", Map([(Sym("k"), UInt(1))])),
    Described(0x468C00000004, ["custom"]),
]
SOURCE = Described(0x28, ["q", UInt(2), Sym("never"), UInt(5), True, Map([]), Sym("move"),
                          Map([(Sym("f"), Described(0x46, "x"))]), STATES[4],
                          sym_array("amqp:accepted:list"), Sym("queue")])
TARGET = Described(0x29, ["t", UInt(0), Sym("session-end"), UInt(0), False, None,
                          sym_array("a", "b")])
COORD = symbolic("amqp:coordinator:list", [Sym("amqp:local-transactions")])
PROPS = Map([(Sym("product"), "junction")])

AMQP = [
    Described(0x10, ["c1", "host", UInt(65536), UShort(255), UInt(30000), Sym("en-US"),
                     sym_array("en-US"), sym_array("ANONYMOUS-RELAY"), Sym("x"), PROPS]),
    Described(0x10, ["c1"]),
    Described(0x11, [UShort(1), UInt(0), UInt(2147483647), UInt(100), UInt(1023),
                     Sym("a"), sym_array("b"), PROPS]),
    Described(0x11, [None, UInt(0), UInt(10), UInt(10)]),
    Described(0x12, ["l", UInt(0), False, UByte(1), UByte(0), SOURCE, TARGET, Map([]), False,
                     UInt(0), ULong(1 << 20), Sym("a"), sym_array("b"), PROPS]),
    Described(0x12, ["l", UInt(1), True, None, None, SOURCE, COORD]),
    Described(0x13, [UInt(1), UInt(100), UInt(0), UInt(100), UInt(0), UInt(0), UInt(10), UInt(0),
                     True, True, PROPS]),
    Described(0x14, [UInt(0), UInt(0), b"t0", UInt(0), False, True, UByte(1), STATES[0], False,
                     False, True]),
    Described(0x15, [True, UInt(0), UInt(9), True, STATES[2], True]),
    Described(0x16, [UInt(0), True, ERROR]),
    Described(0x17, [ERROR]),
    Described(0x18, []),
] + [Described(0x15, [False, UInt(1), None, True, s]) for s in STATES]
SASL = [
    Described(0x40, [sym_array("ANONYMOUS", "PLAIN", "EXTERNAL")]),
    Described(0x40, [Sym("ANONYMOUS")]),
    Described(0x41, [Sym("PLAIN"), b"\0u\0p", "host"]),
    Described(0x42, [b"challenge"]),
    Described(0x43, [b"response"]),
    Described(0x44, [UByte(0), b"data"]),
]


def transfer8(*fields):
    """A transfer as list8 of the already-encoded fields (the shape senders
    write, which the engine reads on its fast path)."""
    body = b"".join(fields)
    return b"\x00\x53\x14\xc0" + bytes([len(body) + 1, len(fields)]) + body


# transfers in the encodings the fast path takes (and some it hands to
# the table-driven decoder): uint0, smalluint, uint; vbin8; true, false,
# boolean; ubyte; nulls; a state; a list whose size disagrees with its
# fields; a boolean octet out of range
FAST_TRANSFERS = [
    transfer8(b"\x43", b"\x43", b"\xa0\x01t", b"\x43"),
    transfer8(b"\x52\x05", b"\x70\x01\x02\x03\x04", b"\xa0\x08abcdefgh", b"\x52\x00",
              b"\x41", b"\x41"),
    transfer8(b"\x43", b"\x40", b"\x40", b"\x40", b"\x40", b"\x41"),
    transfer8(b"\x43", b"\x43", b"\xa0\x00", b"\x43", b"\x56\x01", b"\x56\x00",
              b"\x50\x01", b"\x40", b"\x42", b"\x41", b"\x42"),
    transfer8(b"\x43", b"\x43", b"\xa0\x01t", b"\x43", b"\x42", b"\x42", b"\x40",
              b"\x00\x53\x24\x45"),
    b"\x00\x53\x14\xc0\x05\x02\x43\x43\x43\x43" + b"payload",
    transfer8(b"\x43", b"\x43", b"\xa0\x01t", b"\x43", b"\x56\x02"),
    transfer8(b"\x40", b"\x43", b"\xa0\x01t", b"\x43"),
    transfer8(b"\x43", b"\x43", b"\xa0\x05t", b"\x43"),
    transfer8(b"\x43", b"\x43", b"\xa0\x01t", b"\x43") + b"\x00\x53\x75\xa0\x03abc",
]


def disposition8(*fields):
    """A disposition as list8 of the already-encoded fields (the shape
    receivers write, which the engine reads on its fast path)."""
    body = b"".join(fields)
    return b"\x00\x53\x15\xc0" + bytes([len(body) + 1, len(fields)]) + body


# dispositions the fast path takes (accepted or released with list0,
# nulls, every boolean and uint encoding) and some it hands on (rejected,
# accepted as a list8, a symbolic state, a null role, a size that
# disagrees, a state cut short)
FAST_DISPOSITIONS = [
    disposition8(b"\x41", b"\x43", b"\x40", b"\x41", b"\x00\x53\x24\x45"),
    disposition8(b"\x41", b"\x52\x07", b"\x70\x00\x00\x01\x00", b"\x56\x01",
                 b"\x00\x53\x26\x45", b"\x42"),
    disposition8(b"\x42", b"\x70\xff\xff\xff\xff"),
    disposition8(b"\x56\x00", b"\x43", b"\x43", b"\x42", b"\x40", b"\x56\x01"),
    disposition8(b"\x41", b"\x43", b"\x40", b"\x41", b"\x00\x53\x25\x45"),
    disposition8(b"\x41", b"\x43", b"\x40", b"\x41", b"\x00\x53\x24\xc0\x01\x00"),
    disposition8(b"\x41", b"\x43", b"\x40", b"\x41",
                 b"\x00\xa3\x12amqp:accepted:list\x45"),
    disposition8(b"\x40", b"\x43"),
    disposition8(b"\x41", b"\x43", b"\x40", b"\x41", b"\x00\x53"),
    b"\x00\x53\x15\xc0\x04\x02\x41\x43\x43",
]


def frame(body, ftype=0, channel=0, payload=b""):
    data = enc(body) + payload
    return struct.pack(">IBBH", 8 + len(data), 2, ftype, channel) + data


def main():
    out_frame, out_diff = sys.argv[1], sys.argv[2]
    diff = []
    for i, body in enumerate(AMQP):
        diff.append(bytes([i % 8]) + enc(body))
    diff.append(bytes([7]) + enc(symbolic("amqp:begin:list", [None, UInt(0), UInt(1), UInt(1)])))
    for i, body in enumerate(SASL):
        diff.append(bytes([0x80 | (i % 8)]) + enc(body))
    for body in FAST_TRANSFERS + FAST_DISPOSITIONS:  # in one buffer, and split every 7 octets
        diff += [b"\x07" + body, b"\x03" + body]
    stream = b"AMQP\x00\x01\x00\x00" + b"".join(frame(b, channel=1) for b in AMQP)
    stream += b"\x00\x00\x00\x08\x02\x00\x00\x00"  # a heartbeat
    sasl = b"AMQP\x03\x01\x00\x00" + b"".join(frame(b, ftype=1) for b in SASL)
    frames = [bytes([c]) + stream for c in range(8)] + [bytes([0x80 | c]) + sasl for c in range(8)]
    frames.append(b"\x07" + frame(AMQP[7], payload=b"\x00\x53\x77\xa1\x05hello"))
    print(write_seeds(out_frame, frames), write_seeds(out_diff, diff))


if __name__ == "__main__":
    main()
