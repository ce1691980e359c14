"""amqp_seed.py — a minimal AMQP 1.0 type encoder for the seed generators
of the fuzz corpora (tests/fuzz/seeds/*_seeds.py). Values are built with the
constructors below and encoded with enc(); only what the seeds need."""
import hashlib
import os
import struct


class Sym(str):
    """an AMQP symbol"""


class UInt(int):
    """an AMQP uint"""


class ULong(int):
    """an AMQP ulong"""


class Int(int):
    """an AMQP int"""


class UByte(int):
    """an AMQP ubyte"""


class UShort(int):
    """an AMQP ushort"""


class Raw(bytes):
    """octets already encoded, written as they are"""


class Described:
    """a described value with a ulong descriptor"""

    def __init__(self, code, value):
        self.code, self.value = code, value


class Map:
    """an AMQP map from a list of (key, value) pairs (order kept)"""

    def __init__(self, pairs):
        self.pairs = list(pairs)


def _variable(small, large, payload):
    if len(payload) < 256:
        return bytes([small, len(payload)]) + payload
    return bytes([large]) + struct.pack(">I", len(payload)) + payload


def _compound(small, large, count, body):
    if len(body) + 1 < 256 and count < 256:
        return bytes([small, len(body) + 1, count]) + body
    return bytes([large]) + struct.pack(">II", len(body) + 4, count) + body


def enc(v):
    """the octets of v"""
    if v is None:
        return b"\x40"
    if v is True:
        return b"\x41"
    if v is False:
        return b"\x42"
    if isinstance(v, Raw):
        return bytes(v)
    if isinstance(v, UByte):
        return bytes([0x50, v])
    if isinstance(v, UShort):
        return b"\x60" + struct.pack(">H", v)
    if isinstance(v, Described):
        return b"\x00" + enc(ULong(v.code)) + enc(v.value)
    if isinstance(v, Sym):
        return _variable(0xA3, 0xB3, v.encode())
    if isinstance(v, str):
        return _variable(0xA1, 0xB1, v.encode())
    if isinstance(v, bytes):
        return _variable(0xA0, 0xB0, v)
    if isinstance(v, ULong):
        if v == 0:
            return b"\x44"
        if v < 256:
            return bytes([0x53, v])
        return b"\x80" + struct.pack(">Q", v)
    if isinstance(v, UInt):
        if v == 0:
            return b"\x43"
        if v < 256:
            return bytes([0x52, v])
        return b"\x70" + struct.pack(">I", v)
    if isinstance(v, Int):
        if -128 <= v < 128:
            return b"\x54" + struct.pack(">b", v)
        return b"\x71" + struct.pack(">i", v)
    if isinstance(v, int):
        if -128 <= v < 128:
            return b"\x55" + struct.pack(">b", v)
        return b"\x81" + struct.pack(">q", v)
    if isinstance(v, Map):
        body = b"".join(enc(k) + enc(x) for k, x in v.pairs)
        return _compound(0xC1, 0xD1, 2 * len(v.pairs), body)
    if isinstance(v, list):
        if not v:
            return b"\x45"
        return _compound(0xC0, 0xD0, len(v), b"".join(enc(x) for x in v))
    raise TypeError(type(v))


def write_seeds(out, blobs, limit=200):
    """write each blob to out/<sha1> (at most limit); returns the count"""
    os.makedirs(out, exist_ok=True)
    seen = set()
    for blob in blobs:
        digest = hashlib.sha1(blob).hexdigest()
        if digest in seen or len(seen) >= limit:
            continue
        seen.add(digest)
        with open(os.path.join(out, digest), "wb") as f:
            f.write(blob)
    return len(seen)
