#!/usr/bin/python3
"""System tests of GET-SCHEMA and GET-JSON-SCHEMA against a running junctiond.

The answer is 1.19's schema map (keyed by short names: types, non-false
defaults, flags, operations, fullyQualifiedType) plus Junction's own keys for what it does not implement, read from
router/config/schema.json: `"implemented": false` on a type or attribute
that is not implemented, `implementedValues` on an enum whose values are
not all implemented. Each test rebuilds the expected map from schema.json
by those rules and compares it with the router's answer, key order
included, so nothing else in the answer may change.
"""
import json
import os
import unittest

from proton import Message
from proton.utils import BlockingConnection, SyncRequestResponse

from harness import SLOW, RouterTestCase

SOURCE_DIR = os.environ.get(
    "JN_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCHEMA_PATH = os.path.join(SOURCE_DIR, "router", "config", "schema.json")
PREFIX = "org.apache.qpid.dispatch"
TIMEOUT = 10 * SLOW


def load_schema():
    with open(SCHEMA_PATH) as f:
        return json.load(f)


def expected_attr(a):
    """An attribute's GET-SCHEMA map: keys whose value is false, 0 or
    empty are left out (1.19), then Junction's keys."""
    m = {"type": a["values"] if a["type"] == "enum" else a["type"]}
    d = a.get("default")
    if d not in (None, False, 0, ""):
        m["default"] = d
    for key in ("required", "unique", "deprecated"):
        if a.get(key):
            m[key] = True
    if "implementedValues" in a:
        m["implementedValues"] = a["implementedValues"]
    if a.get("implemented", True) is False:
        m["implemented"] = False
    return m


def expected_schema(schema):
    types = {}
    for t in schema["entityTypes"]:
        m = {"attributes": {a["name"]: expected_attr(a) for a in t["attributes"]
                            if a["name"] != "type"},
             "operations": t["operations"],
             "fullyQualifiedType": t["fullName"]}
        for key in ("deprecated", "singleton"):
            if t.get(key):
                m[key] = True
        if not t["implemented"]:
            m["implemented"] = False
        types[t["shortName"]] = m
    return {"prefix": PREFIX, "entityTypes": types}


def ordered(v):
    """v with every map turned into a list of pairs, so that == compares
    key order too."""
    if isinstance(v, dict):
        return [(k, ordered(x)) for k, x in v.items()]
    if isinstance(v, list):
        return [ordered(x) for x in v]
    return v


class SchemaTest(RouterTestCase):

    def node_call(self, router, operation, **props):
        conn = BlockingConnection(router.url, timeout=TIMEOUT)
        self.addCleanup(conn.close)
        client = SyncRequestResponse(conn, "$management")
        props.update({"operation": operation, "type": "org.amqp.management", "name": "self"})
        reply = client.call(Message(body={}, properties=props))
        self.assertEqual(reply.properties["statusCode"], 200,
                         reply.properties["statusDescription"])
        return reply.body

    def test_get_schema_marks_what_is_not_implemented(self):
        """GET-SCHEMA: unimplemented types and attributes carry
        "implemented": false, router mode and endpoint roles their
        implementedValues; implemented ones carry neither."""
        r = self.start_router()
        types = self.node_call(r, "GET-SCHEMA")["entityTypes"]
        for name in ("vhostUserGroupSettings", "console"):
            self.assertIs(types[name].get("implemented"), False, name)
        for name in ("router", "listener", "connector", "address", "log", "policy", "sslProfile",
                     "authServicePlugin", "linkRoute", "autoLink", "exchange", "binding", "vhost", "vhostStats",
                     "connection", "router.link", "router.address", "router.node",
                     "allocator", "logStats", "management"):
            self.assertNotIn("implemented", types[name], name)
        listener = types["listener"]["attributes"]
        self.assertIs(listener["trustedCertsFile"].get("implemented"), False)
        self.assertNotIn("implemented", types["connector"]["attributes"]["failoverUrls"])
        for attr in ("host", "port", "saslMechanisms", "authenticatePeer", "sslProfile",
                     "requireSsl", "saslPlugin", "socketAddressFamily", "multiTenant"):
            self.assertNotIn("implemented", listener[attr], attr)
        for attr in ("waypoint", "ingressPhase", "egressPhase", "enableFallback", "priority"):
            self.assertNotIn("implemented", types["address"]["attributes"][attr], attr)
        policy = types["policy"]["attributes"]
        for attr in ("maxConnections", "maxMessageSize", "enableVhostPolicy", "policyDir",
                     "defaultVhost", "enableVhostNamePatterns"):
            self.assertNotIn("implemented", policy[attr], attr)
        vhost = types["vhost"]["attributes"]
        for attr in ("hostname", "maxConnections", "maxConnectionsPerUser",
                     "maxConnectionsPerHost", "allowUnknownUser", "groups", "aliases",
                     "maxMessageSize"):
            self.assertNotIn("implemented", vhost[attr], attr)
        self.assertNotIn("implemented", types["connector"]["attributes"]["policyVhost"])
        mode = types["router"]["attributes"]["mode"]
        self.assertEqual(mode["type"], ["standalone", "interior", "edge"])
        self.assertNotIn("implementedValues", mode)  # edge routers too (issue 17)
        for endpoint in ("listener", "connector"):
            role = types[endpoint]["attributes"]["role"]
            self.assertEqual(role["type"], ["normal", "inter-router", "route-container", "edge"])
            # an interior's edge listener, an edge's connector (issue 17)
            self.assertNotIn("implementedValues", role)
        self.assertNotIn("implementedValues", types["address"]["attributes"]["distribution"])

    def test_get_schema_is_the_schema_file_with_junction_keys(self):
        """GET-SCHEMA and GET-JSON-SCHEMA: exactly the map schema.json gives
        by 1.19's rules plus Junction's keys, in the same key order."""
        r = self.start_router()
        want = expected_schema(load_schema())
        got = self.node_call(r, "GET-SCHEMA")
        self.assertEqual(ordered(got), ordered(want))
        text = self.node_call(r, "GET-JSON-SCHEMA")
        self.assertEqual(ordered(json.loads(text)), ordered(want))


if __name__ == "__main__":
    unittest.main()
