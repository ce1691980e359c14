#!/usr/bin/python3
"""config_seeds.py — write the seed corpus of the `config` fuzz target.

Usage: tests/fuzz/seeds/config_seeds.py OUTDIR

Each seed is a control octet (0 = conf form, 1 = JSON form) followed by the
text of a configuration: the sample and test data files of this repository,
and the configuration texts the config unit tests load (the C string
literals of tests/unit/test_config_*.c that look like a configuration).
Files are named by the SHA-1 of their content, as libFuzzer names them.
"""
import ast
import hashlib
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
LIMIT = 150


def c_literals(source):
    """Yield the text of each run of adjacent C string literals."""
    lit = r'"(?:[^"\\\n]|\\.)*"'
    for m in re.finditer(r"(?:%s\s*)+" % lit, source):
        parts = re.findall(lit, m.group(0))
        text = ""
        for p in parts:
            body = p[1:-1]
            # C escapes used by the tests are a subset of Python's.
            text += ast.literal_eval('"' + body.replace("\\'", "'") + '"') if "\\x" not in body \
                else bytes(body, "ascii").decode("unicode_escape")
        yield text


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = []
    for folder in ("etc", "tests/unit/data/config"):
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            with open(os.path.join(ROOT, folder, name), "rb") as f:
                seeds.append((1 if name.endswith(".json") else 0, f.read()))
    unit = os.path.join(ROOT, "tests/unit")
    for name in sorted(os.listdir(unit)):
        if not (name.startswith("test_config_") and name.endswith(".c")):
            continue
        with open(os.path.join(unit, name)) as f:
            source = f.read()
        for text in c_literals(source):
            if len(text) < 4 or ("{" not in text and "[" not in text and ":" not in text):
                continue
            if text.startswith("t.conf:") or text.startswith("t.json:"):
                continue  # an expected message, not an input
            form = 1 if text.lstrip().startswith("[") else 0
            seeds.append((form, text.encode("utf-8", "surrogateescape")))
    seen = set()
    for form, data in seeds[:LIMIT * 2]:
        blob = bytes([form]) + data
        digest = hashlib.sha1(blob).hexdigest()
        if digest in seen or len(seen) >= LIMIT:
            continue
        seen.add(digest)
        with open(os.path.join(out, digest), "wb") as f:
            f.write(blob)
    print("%d seeds in %s" % (len(seen), out))


if __name__ == "__main__":
    main()
