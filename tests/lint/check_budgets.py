#!/usr/bin/python3
"""The C tree stays within its budgets: files of at most 1,000 lines and
functions of at most 80 (STYLE: past that, split by concern).

A few files and functions are over today. They are listed below with the
size they have now, and the list only shrinks: this check fails, naming
file and line,
- when a file or function not listed is over its budget;
- when a listed one has grown past the size recorded for it;
- when a listed one is back within its budget or gone (take it off the
  list, so that it cannot grow back unseen).
A function may also be over on purpose, where good sense beats the rule
(STYLE): those are listed apart with the reason, and may not grow either.
So a change may not make the tree worse, and whoever splits an offender
records it here.

What is counted: every .c and .h file under router/, include/ and tools/
(tests are not product code), and the functions of both. A function runs from the first line of its
signature to its closing brace; it is found by its braces, with comments,
strings and character constants blanked first, which is enough for this
tree's layout (clang-format: a function's opening brace alone on its
line).

Run by ctest as lint.budgets (label unit); by hand:
    /usr/bin/python3 tests/lint/check_budgets.py [SOURCE_DIR]
Python 3 standard library only.
"""
import os
import re
import sys

FILE_BUDGET = 1000
FUNCTION_BUDGET = 80
TREES = ["router", "include", "tools"]
SKIP_DIRS = {"node_modules", "__pycache__"}

# Over budget today: path -> lines. Only ever lower these, or remove them.
FILES_OVER = {
}
# (path, function) -> lines.
FUNCTIONS_OVER = {
}
# Over on purpose, with the reason (the function's comment says it too):
# (path, function) -> (lines, why). A size above the one given still fails.
FUNCTIONS_DELIBERATE = {
    ("router/message/decoder_scan.h", "scan_mem"): (
        95, "one switch case per AMQP format code, so that a value costs a jump and "
            "straight-line code: a table lookup for the fixed widths measured 26 more "
            "instructions per message parsed"),
}

ATTRIBUTE = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)")
NAME = re.compile(r"([A-Za-z_]\w*)\s*\(")


def blank(src):
    """src with comments, strings and character constants replaced by
    spaces (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", src[i + 1:j - 1]) + c if j - i >= 2 else c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """[(name, first line, lines)] of the function definitions in path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = blank(f.read()).split("\n")
    found = []
    depth = 0
    sig_start = None  # first line of the declaration being read at depth 0
    sig_text = ""
    current = None  # (name, first line) of the function whose body is open
    for i, line in enumerate(lines):
        stripped = line.strip()
        if depth == 0 and current is None:
            if stripped.startswith("#") or not stripped:
                if not stripped:
                    sig_start, sig_text = None, ""
            elif stripped == "{" and sig_start is not None and ")" in sig_text:
                m = NAME.search(ATTRIBUTE.sub(" ", sig_text))
                current = (m.group(1) if m else "?", sig_start)
            else:
                if sig_start is None:
                    sig_start = i
                sig_text += " " + stripped
                if stripped.endswith(";") or stripped.endswith("}"):
                    sig_start, sig_text = None, ""
        for ch in line:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
        if current is not None and depth == 0 and "}" in line:
            found.append((current[0], current[1] + 1, i - current[1] + 1))
            current = None
            sig_start, sig_text = None, ""
    return found


def sources(top):
    for tree in TREES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(top, tree)):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for name in sorted(filenames):
                if name.endswith((".c", ".h")):
                    path = os.path.join(dirpath, name)
                    yield path, os.path.relpath(path, top)


def check(top):
    problems = []
    seen_files, seen_functions = {}, {}
    for path, rel in sources(top):
        with open(path, encoding="utf-8", errors="replace") as f:
            n = sum(1 for _ in f)
        seen_files[rel] = n
        limit = FILES_OVER.get(rel, FILE_BUDGET)
        if n > limit:
            problems.append("%s: %d lines, over %s" % (
                rel, n, "the %d recorded for it" % limit if rel in FILES_OVER
                else "the budget of %d" % FILE_BUDGET))
        for name, first, size in functions(path):
            key = (rel, name)
            seen_functions[key] = max(size, seen_functions.get(key, 0))
            listed = key in FUNCTIONS_OVER or key in FUNCTIONS_DELIBERATE
            limit = FUNCTIONS_OVER.get(key, FUNCTIONS_DELIBERATE.get(key, (FUNCTION_BUDGET,))[0])
            if size > limit:
                problems.append("%s:%d: function %s has %d lines, over %s" % (
                    rel, first, name, size, "the %d recorded for it" % limit if listed
                    else "the budget of %d" % FUNCTION_BUDGET))
    for rel, limit in sorted(FILES_OVER.items()):
        if seen_files.get(rel, 0) <= FILE_BUDGET:
            problems.append("%s: listed as over budget but has %s lines: take it off "
                            "FILES_OVER" % (rel, seen_files.get(rel, "no")))
    for (rel, name) in sorted(list(FUNCTIONS_OVER) + list(FUNCTIONS_DELIBERATE)):
        if seen_functions.get((rel, name), 0) <= FUNCTION_BUDGET:
            problems.append("%s: function %s listed as over budget but has %s lines: take it "
                            "off its list" % (rel, name,
                                                    seen_functions.get((rel, name), "no")))
    return problems


def main(argv):
    top = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    problems = check(os.path.abspath(top))
    for p in problems:
        print(p)
    if problems:
        print("check_budgets: %d problem(s); budgets: %d lines a file, %d a function "
              "(tests/lint/check_budgets.py)" % (len(problems), FILE_BUDGET, FUNCTION_BUDGET))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
