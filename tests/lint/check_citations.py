#!/usr/bin/python3
"""No source file cites a document that is not in the repository.

Comments name the repository's own documents (docs/protocol.md,
docs/design.md, docs/*.md) for the facts they rely on. Notes kept outside
the repository (a reference folder, a DESIGN.md at the workspace's top)
are not there for someone who clones it, so a citation of one is a dead
end. This check reads every source and script file under router/,
include/, tests/, python/, tools/ and scripts/ (and ./dev) and fails,
naming file and line, when one cites such a note.

Run by ctest as lint.citations (label unit); by hand:
    /usr/bin/python3 tests/lint/check_citations.py [SOURCE_DIR]
"""
import os
import re
import sys

# Built from pieces so that this file does not match itself.
NOTES = ["mesh-protocol", "management-protocol", "config-file"]
PATTERN = re.compile(
    r"\breference/"                       # the reference folder
    r"|(?<![\w/.-])DESIGN\.md\b"          # the top-level design note
    r"|(?<![\w/.-])(?:" + "|".join(NOTES) + r")\.md\b"
    r"|qdrouterd-1\.19-schema\.json")

TREES = ["router", "include", "tests", "python", "tools", "scripts"]
SUFFIXES = (".c", ".h", ".py", ".js", ".sh", ".cmake", ".txt", ".json", ".conf")
# Data, not source: fuzz inputs and third-party packages.
SKIP_DIRS = {"node_modules", "corpus", "seeds", "__pycache__"}

# Files the check skips for now (none).
PENDING = set()


def is_source(path):
    if path.endswith(SUFFIXES):
        return True
    try:  # an extensionless script: tools/junction-manage, tests/bench/run
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def files(top):
    yield "dev"
    for tree in TREES:
        for root, dirs, names in os.walk(os.path.join(top, tree)):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in sorted(names):
                path = os.path.relpath(os.path.join(root, name), top)
                if is_source(os.path.join(top, path)):
                    yield path


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    me = os.path.relpath(os.path.abspath(__file__), top)
    found = []
    checked = 0
    for path in files(top):
        if path == me or path in PENDING:
            continue
        checked += 1
        try:
            with open(os.path.join(top, path), encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    if PATTERN.search(line):
                        found.append("%s:%d: %s" % (path, n, line.strip()))
        except OSError as e:
            found.append("%s: cannot read: %s" % (path, e))
    if checked < 100:
        print("check_citations: only %d files found under %s" % (checked, top))
        return 1
    for line in found:
        print(line)
    if found:
        print("check_citations: %d line(s) cite a document outside the repository;"
              " cite docs/*.md instead (add the fact there if it is missing)" % len(found))
        return 1
    print("check_citations: %d files, no citation outside the repository" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
