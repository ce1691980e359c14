#!/usr/bin/python3
"""Every function that runs on an I/O thread says so and checks it: each
definition of a function whose name ends in _IO (STYLE: thread affinity is
part of the name), in router/ and include/, has a thread check in its body:
JN_ASSERT_IO(conn) (the loop that owns conn), JN_ASSERT_SOME_IO() (some
loop, for a function given no way to reach its connection) or
JN_ASSERT_IO_CALLER() (the core's and the lower layers' _IO entry points,
which cannot see the loop). The checks cost nothing in release builds
(JN_DEBUG_CHECK); debug and sanitizer builds abort on a wrong thread.

A function without one is named with its file and line. The few left
without one today are listed below and the list only shrinks.

Functions are found as check_budgets.py finds them (comments and strings
blanked, a definition's opening brace alone on its line).

Run by ctest as lint.threads (label unit); by hand:
    /usr/bin/python3 tests/lint/check_threads.py [SOURCE_DIR]
Python 3 standard library only.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_budgets import blank, functions, sources  # noqa: E402

CHECK = re.compile(r"\bJN_ASSERT_(?:IO|SOME_IO|IO_CALLER)\s*\(")
# Without a check today: (path, function). Only ever remove from this.
KNOWN = set()


def check(top):
    problems, seen = [], set()
    for path, rel in sources(top):
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = blank(f.read()).split("\n")
        for name, first, length in functions(path):
            if not name.endswith("_IO"):
                continue
            body = "\n".join(lines[first - 1:first - 1 + length])
            body = body[body.find("{"):]
            if CHECK.search(body):
                if (rel, name) in KNOWN:
                    problems.append(f"{rel}:{first}: {name} checks its thread now: "
                                    "take it off KNOWN in tests/lint/check_threads.py")
                continue
            seen.add((rel, name))
            if (rel, name) not in KNOWN:
                problems.append(f"{rel}:{first}: {name} has no thread check "
                                "(JN_ASSERT_IO, JN_ASSERT_SOME_IO or JN_ASSERT_IO_CALLER)")
    for rel, name in sorted(KNOWN - seen):
        if not any(p.startswith(rel + ":") and name in p for p in problems):
            problems.append(f"{rel}: {name} is gone: take it off KNOWN in "
                            "tests/lint/check_threads.py")
    return problems


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    problems = check(top)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
