#!/usr/bin/python3
"""Lower layers never include higher ones (STYLE, "Layout shows the
architecture"; docs/design.md "Layers"), and what a layer includes is what
its build target links.

Each public header in include/junction/ belongs to one layer (OWNER
below; a new header must be added there). The layers and what each may
use are read from the jn_layer(...) lines of CMakeLists.txt: layer L may
include a header of L itself or of any layer L links, directly or through
another layer. This is checked for

  - every public header (a header of L including one of a layer L does
    not link: mgmt.h including io.h was issue 26), and
  - every .c and .h under router/L/.

router/main.c and router/process.c sit above every layer and the tests
link what they need, so neither is checked. A violation is named with
its file, line and the two layers.

Run by ctest as lint.layers (label unit); by hand:
    /usr/bin/python3 tests/lint/check_layers.py [SOURCE_DIR]
Python 3 standard library only.
"""
import os
import re
import sys

# The layer each public header belongs to: the folder that implements it
# (or, for a header of plain data, the lowest layer whose users need it).
OWNER = {
    "common.h": "util", "copies.h": "util", "hash.h": "util", "log.h": "util", "pool.h": "util",
    "queue.h": "util", "time.h": "util", "wildcard.h": "util",
    "amqp.h": "message", "annotations.h": "message", "buffer.h": "message",
    "compose.h": "message", "decoder.h": "message", "encoder.h": "message",
    "iterator.h": "message", "message.h": "message",
    "amqp_frame.h": "amqp", "amqp_perf.h": "amqp", "amqp_engine.h": "amqp",
    "amqp_delivery.h": "amqp", "amqp_sasl.h": "amqp", "amqp_transport.h": "amqp",
    "amqp_trace.h": "amqp",
    "config.h": "config", "schema.h": "config", "endpoint.h": "config",
    "mesh.h": "mesh",
    "core.h": "core", "core_view.h": "core",
    "policy.h": "policy",
    "mgmt.h": "mgmt",
    "io.h": "io", "tls.h": "io",
    "http.h": "http",
}

LAYER_RE = re.compile(r"^\s*jn_layer\((\w+)([^)]*)\)", re.M)
INCLUDE_RE = re.compile(r"^\s*#\s*include\s*<junction/([\w.]+)>", re.M)


def read_layers(root):
    """{layer: set of layers it may use (itself and every one it links)}"""
    with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
        text = f.read()
    direct = {}
    for m in LAYER_RE.finditer(text):
        direct[m.group(1)] = set(re.findall(r"\bjn_(\w+)", m.group(2)))
    allowed = {}
    for layer in direct:
        seen, todo = {layer}, [layer]
        while todo:
            for dep in direct.get(todo.pop(), ()):
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        allowed[layer] = seen
    return allowed


def check_file(path, rel, layer, allowed, problems):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for m in INCLUDE_RE.finditer(text):
        header = m.group(1)
        line = text.count("\n", 0, m.start()) + 1
        owner = OWNER.get(header)
        if owner is None:
            problems.append("%s:%d: <junction/%s> has no layer in "
                            "tests/lint/check_layers.py OWNER" % (rel, line, header))
        elif owner not in allowed[layer]:
            problems.append("%s:%d: layer %s includes <junction/%s> of layer %s, "
                            "which jn_%s does not link" % (rel, line, layer, header,
                                                           owner, layer))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    allowed = read_layers(root)
    problems = []
    inc = os.path.join(root, "include", "junction")
    for name in sorted(os.listdir(inc)):
        if not name.endswith(".h"):
            continue
        rel = "include/junction/" + name
        layer = OWNER.get(name)
        if layer is None:
            problems.append("%s: no layer in tests/lint/check_layers.py OWNER" % rel)
        elif layer not in allowed:
            problems.append("%s: layer %s has no jn_layer() in CMakeLists.txt" % (rel, layer))
        else:
            check_file(os.path.join(inc, name), rel, layer, allowed, problems)
    for layer in sorted(allowed):
        folder = os.path.join(root, "router", layer)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith((".c", ".h")):
                check_file(os.path.join(folder, name), "router/%s/%s" % (layer, name),
                           layer, allowed, problems)
    for p in problems:
        print(p)
    if problems:
        print("%d layer crossing(s)" % len(problems))
        return 1
    print("layers: %d headers, %d layers, no crossing" % (len(OWNER), len(allowed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
