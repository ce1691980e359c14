#!/usr/bin/python3
"""Tests of scripts/gen-schema-tables, the generator of the schema's C tables.

The generator must refuse a schema with any mistake (an unknown key, a
column naming no attribute, a duplicate, an inconsistent "implemented"
marking) with a message naming the place, and must write the same bytes
for the same input. Each test writes a changed copy of
router/config/schema.json to a temporary folder and runs the script on it.
"""
import copy
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

SOURCE_DIR = os.environ.get(
    "JN_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCHEMA_PATH = os.path.join(SOURCE_DIR, "router", "config", "schema.json")
GENERATOR = os.path.join(SOURCE_DIR, "scripts", "gen-schema-tables")


def load_schema():
    with open(SCHEMA_PATH) as f:
        return json.load(f)


def type_of(schema, name):
    return next(t for t in schema["entityTypes"] if t["name"] == name)


def attr_of(schema, type_name, attr):
    return next(a for a in type_of(schema, type_name)["attributes"] if a["name"] == attr)


class GeneratorTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="jn-gen-schema-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def run_generator(self, schema, tag="out"):
        src = os.path.join(self.dir, "schema.json")
        with open(src, "w") as f:
            json.dump(schema, f)
        out_c = os.path.join(self.dir, tag + ".c")
        out_h = os.path.join(self.dir, tag + ".h")
        p = subprocess.run(["/usr/bin/python3", GENERATOR, src, out_c, out_h],
                           capture_output=True, text=True, timeout=60)
        return p, out_c, out_h

    def refused(self, change, *fragments):
        """Apply change to a copy of the schema: the generator must fail
        with a message holding every fragment, and write nothing."""
        schema = copy.deepcopy(load_schema())
        change(schema)
        p, out_c, out_h = self.run_generator(schema)
        self.assertEqual(p.returncode, 1, "accepted: %s" % p.stderr)
        for fragment in fragments:
            self.assertIn(fragment, p.stderr)
        self.assertFalse(os.path.exists(out_c))
        self.assertFalse(os.path.exists(out_h))

    def test_same_input_same_bytes(self):
        """Two runs on the schema write identical C and header files."""
        schema = load_schema()
        p1, c1, h1 = self.run_generator(schema, "one")
        p2, c2, h2 = self.run_generator(schema, "two")
        self.assertEqual((p1.returncode, p2.returncode), (0, 0), p1.stderr + p2.stderr)
        for a, b in ((c1, c2), (h1, h2)):
            with open(a, "rb") as fa, open(b, "rb") as fb:
                self.assertEqual(fa.read(), fb.read())
        with open(h1) as f:
            header = f.read()
        self.assertIn("JN_COL_ROUTER_ADDR_COUNT = 8,", header)
        self.assertIn("JN_COL_ROUTER_CONFIG_LINK_ROUTE_DIR = 8,", header)
        self.assertIn("JN_ENTITY_ROUTER_CONFIG_ADDRESS = ", header)

    def test_unknown_keys_refused(self):
        """An unknown key at the top, in a type, an attribute or a column."""
        self.refused(lambda s: s.update(extra=1), "schema", "unknown key", "extra")
        self.refused(lambda s: type_of(s, "router").update(implemnted=True),
                     "router", "implemnted")
        self.refused(lambda s: attr_of(s, "listener", "port").update(colour="red"),
                     "listener.port", "colour")
        self.refused(lambda s: type_of(s, "router")["columns"].__setitem__(
            29, {"name": "linksBlocked", "computed": True, "note": "x"}),
            "router column 'linksBlocked'", "note")

    def test_bad_columns_refused(self):
        """A column naming no attribute, an alias of a missing attribute or
        taking an attribute's name, a duplicate, a bad computed flag, name
        and identity not first, columns on an abstract type, two columns
        that would get the same C name."""
        self.refused(lambda s: type_of(s, "router")["columns"].append("noSuchAttr"),
                     "router", "'noSuchAttr' is no attribute")
        self.refused(lambda s: type_of(s, "router.config.autoLink")["columns"].__setitem__(
            4, {"name": "addr", "attr": "adress"}), "autoLink column 'addr'", "'adress'")
        self.refused(lambda s: type_of(s, "router.config.autoLink")["columns"].__setitem__(
            4, {"name": "phase", "attr": "address"}), "column 'phase'", "alias")
        self.refused(lambda s: type_of(s, "connection")["columns"].append("host"),
                     "connection", "duplicate column 'host'")
        self.refused(lambda s: type_of(s, "router")["columns"].__setitem__(
            29, {"name": "linksBlocked", "computed": False}), "'computed' must be true")
        self.refused(lambda s: type_of(s, "router")["columns"].__setitem__(
            29, {"name": "linksBlocked"}), "'attr'", "'computed'")
        self.refused(lambda s: type_of(s, "router.link")["columns"].reverse(),
                     "router.link", "name and identity")
        self.refused(lambda s: type_of(s, "entity").update(columns=["name", "identity"]),
                     "entity", "abstract")
        self.refused(lambda s: type_of(s, "router")["columns"].append(
            {"name": "addr_count", "computed": True}), "JN_COL_ROUTER_ADDR_COUNT")
        self.refused(lambda s: type_of(s, "router.config.linkRoute")["columns"].__setitem__(
            8, {"name": "dir", "attr": "prefix"}), "old name of 'direction'")

    def test_bad_metrics_refused(self):
        """A /metrics series showing no column or a column that is not a
        number, listed twice, of an unknown kind, with a bad name, an
        unknown key, no help, or on a type with more than one row."""
        def metric(s, i):
            return type_of(s, "router")["metrics"][i]
        self.refused(lambda s: metric(s, 0).update(column="noSuchColumn"),
                     "metric 'qdr_connections_total'", "'noSuchColumn'", "no column")
        self.refused(lambda s: metric(s, 0).update(column="mode"),
                     "metric 'qdr_connections_total'", "not a number")
        self.refused(lambda s: metric(s, 1).update(name="qdr_connections_total"),
                     "metric 'qdr_connections_total'", "listed twice")
        self.refused(lambda s: metric(s, 0).update(type="histogram"), "gauge or counter")
        self.refused(lambda s: metric(s, 0).update(name="qdr-connections"),
                     "not a Prometheus metric name")
        self.refused(lambda s: metric(s, 0).update(unit="s"), "unknown key(s) ['unit']")
        self.refused(lambda s: metric(s, 0).pop("help"), "one-line 'help'")
        self.refused(lambda s: type_of(s, "listener").update(
            metrics=[{"column": "port", "name": "x", "type": "gauge", "help": "h"}]),
            "listener", "singleton")

    def test_log_modules_header_follows_the_log_entity(self):
        """The fourth output lists the log entity's module values in the
        schema's order (the logger's module enum is made from it); a value
        that is no upper-case C name, or MAIN, is refused."""
        schema = load_schema()
        src = os.path.join(self.dir, "schema.json")
        with open(src, "w") as f:
            json.dump(schema, f)
        out = [os.path.join(self.dir, n) for n in ("t.c", "t.h", "log.h")]
        p = subprocess.run(["/usr/bin/python3", GENERATOR, src] + out, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out[2]) as f:
            text = f.read()
        want = attr_of(schema, "log", "module")["values"]
        self.assertEqual(re.findall(r"^    X\((\w+)\)", text, re.M), want)
        for bad, why in (("Http", "upper-case C name"), ("2X", "upper-case C name"),
                         ("MAIN", "MAIN is the logger's own")):
            changed = copy.deepcopy(schema)
            attr_of(changed, "log", "module")["values"].append(bad)
            with open(src, "w") as f:
                json.dump(changed, f)
            if os.path.exists(out[2]):
                os.unlink(out[2])
            p = subprocess.run(["/usr/bin/python3", GENERATOR, src] + out, capture_output=True,
                               text=True, timeout=60)
            self.assertNotEqual(p.returncode, 0, bad)
            self.assertIn(why, p.stderr)
            self.assertFalse(os.path.exists(out[2]), bad)

    def test_duplicates_refused(self):
        """Two attributes, enum values or types with one name."""
        self.refused(lambda s: type_of(s, "listener")["attributes"].append(
            {"name": "port", "type": "string"}), "listener", "duplicate attribute 'port'")
        self.refused(lambda s: attr_of(s, "router", "mode")["values"].append("edge"),
                     "router.mode", "duplicate enum value")
        self.refused(lambda s: type_of(s, "dummy").update(shortName="listener"),
                     "name 'listener' is also used")

    def test_bad_implemented_marks_refused(self):
        """"implemented" missing on a type or true on an attribute; an
        attribute of an unimplemented type marked; implementedValues on a
        non-enum, naming no value, listing every value, out of order, with
        an unimplemented default, or beside "implemented": false."""
        self.refused(lambda s: type_of(s, "listener").pop("implemented"),
                     "listener", "needs 'implemented'")
        self.refused(lambda s: attr_of(s, "listener", "port").update(implemented=True),
                     "listener.port", "may only be false")
        self.refused(lambda s: attr_of(s, "console", "wsport").update(implemented=False),
                     "console.wsport", "not implemented")
        self.refused(lambda s: attr_of(s, "listener", "port").update(implementedValues=["x"]),
                     "listener.port", "only belongs to an enum")
        self.refused(lambda s: attr_of(s, "router", "mode").update(
            implementedValues=["standalone", "mesh"]), "router.mode", "not all enum values")
        self.refused(lambda s: attr_of(s, "router", "mode").update(
            implementedValues=["standalone", "interior", "edge"]), "router.mode", "every value")
        self.refused(lambda s: attr_of(s, "router", "mode").update(
            implementedValues=["interior", "standalone"]), "router.mode", "order")
        self.refused(lambda s: attr_of(s, "router", "mode").update(
            implementedValues=["interior"]), "router.mode", "default 'standalone'")
        self.refused(lambda s: attr_of(s, "router", "mode").update(
            implemented=False, implementedValues=["standalone", "interior"]),
                     "router.mode", "cannot list implementedValues")


if __name__ == "__main__":
    unittest.main()
