#!/usr/bin/python3
"""mesh_control_seeds.py — write the seed corpus of the `mesh_control` fuzz
target from the control messages the engines themselves send.

Usage: tests/fuzz/seeds/mesh_control_seeds.py BUILD_DIR OUTDIR

Runs BUILD_DIR/replay_mesh_control (or BUILD_DIR/fuzz_mesh_control) on one
input with JN_FUZZ_MESH_SEEDS set, which makes the target write every
HELLO, RA, LSR, LSU, MAU and MAR its three engines send while they
converge, in the target's input format. Each distinct message is kept for
the quick case, the deep case and the deep case's router B (selector bits
3-7), plus a few with an unknown opcode and without application-properties.
"""
import os
import subprocess
import sys
import tempfile

from amqp_seed import write_seeds


def main():
    build, out = sys.argv[1], sys.argv[2]
    exe = os.path.join(build, "replay_mesh_control")
    if not os.path.exists(exe):
        exe = os.path.join(build, "fuzz_mesh_control")
    with tempfile.TemporaryDirectory() as tmp:
        first = os.path.join(tmp, "input")
        with open(first, "wb") as f:
            f.write(b"\x7e")  # no opcode, the deep case: the mesh converges
        dump = os.path.join(tmp, "sent")
        os.mkdir(dump)
        subprocess.run([exe, first], env=dict(os.environ, JN_FUZZ_MESH_SEEDS=dump),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sent = []
        for name in sorted(os.listdir(dump)):
            with open(os.path.join(dump, name), "rb") as f:
                sent.append(f.read())
    blobs = []
    for blob in sent:
        blobs.append(blob)
        blobs.append(bytes([blob[0] | 0x78]) + blob[1:])
        blobs.append(bytes([blob[0] | 0xf8]) + blob[1:])
    for blob in sent[:4]:
        blobs.append(bytes([6]) + blob[1:])
        blobs.append(bytes([7]) + blob[1:])
    print("%d seeds in %s" % (write_seeds(out, blobs), out))


if __name__ == "__main__":
    main()
