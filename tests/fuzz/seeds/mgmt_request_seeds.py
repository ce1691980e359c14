#!/usr/bin/python3
"""mgmt_request_seeds.py — write the seed corpus of the `mgmt_request` fuzz
target: management requests as the unit tests of tests/unit/test_mgmt_*.c
send them (properties with message-id, reply-to and correlation-id,
application properties, an amqp-value body), each after a control octet
(tests/fuzz/fuzz_input.h) that varies the buffer split.

Usage: tests/fuzz/seeds/mgmt_request_seeds.py OUTDIR
"""
import sys

from amqp_seed import Described, Int, Map, Sym, ULong, enc, write_seeds

PROPERTIES, APPLICATION_PROPERTIES, AMQP_VALUE = 0x73, 0x74, 0x77


def request(props, body=None, reply_to="reply.addr", correlation="corr-7"):
    octets = enc(Described(PROPERTIES, ["msg-1", None, None, None, reply_to, correlation]))
    octets += enc(Described(APPLICATION_PROPERTIES, Map(props)))
    if body is not None:
        octets += enc(Described(AMQP_VALUE, body))
    return octets


def op(operation, **kw):
    return [("operation", operation)] + [(k.replace("_", ""), v) for k, v in kw.items()]


def smap(*kvs):
    return Map(zip(kvs[0::2], kvs[1::2]))


REQUESTS = [
    request(op("QUERY", type="listener"), Map([("attributeNames", [])])),
    request(op("QUERY", entityType="listener"), Map([("attributeNames", ["name", "port"])])),
    request(op("QUERY", type="connector", offset=1, count=1), Map([])),
    request(op("QUERY", type="router.config.address"), Map([])),
    request(op("QUERY", type="log"), Map([("attributeNames", ["module", "enable"])])),
    request(op("QUERY", type="sslProfile"), Map([])),
    request(op("QUERY", type="router"), Map([])),
    request(op("QUERY", entityType="router.node"), Map([])),
    request(op("QUERY", type="connection"), Map([])),
    request(op("QUERY", type="router.link"), Map([])),
    request(op("QUERY", type="policy"), Map([])),
    request(op("QUERY", entityType="org.apache.qpid.dispatch.log"), Map([])),
    request(op("QUERY"), Map([])),
    request(op("READ", type="listener", name="l1")),
    request(op("READ", type="listener", identity="listener/127.0.0.1:5672")),
    request(op("READ", type="log", name="log/DEFAULT")),
    request(op("READ", type="router")),
    request(op("READ", type="org.amqp.management", name="self")),
    request(op("READ", name="self")),
    request(op("READ", type="connector", name="nope")),
    request(op("CREATE", type="listener", name="a"), smap("port", "5680", "host", "0.0.0.0")),
    request(op("CREATE", type="listener", name="a"), smap("port", "1", "bogusAttr", "x")),
    request(op("CREATE", type="listener", name="a"), smap("role", "inter-router")),
    request(op("CREATE", type="connector", name="b"), smap("host", "h", "port", "1", "cost", "3")),
    request(op("CREATE", name="c"), smap("type", "listener", "port", "9")),
    request(op("CREATE", type="router.config.address", name="a1"),
            smap("prefix", "mc", "distribution", "multicast")),
    request(op("CREATE", type="router.config.address", name="a2"),
            smap("prefix", "a", "pattern", "b.*")),
    request(op("CREATE", type="router.config.address", name="a3"),
            Map([("prefix", "p"), ("ingressPhase", Int(12))])),
    request(op("CREATE", type="router.config.linkRoute", name="lr"),
            smap("prefix", "lr", "direction", "in", "connection", "c1")),
    request(op("CREATE", type="router.config.autoLink", name="al"),
            smap("addr", "q", "dir", "out", "containerId", "broker")),
    request(op("CREATE", type="sslProfile", name="s2"), smap("certFile", "/x")),
    request(op("UPDATE", type="log", name="log/DEFAULT"), smap("enable", "trace+")),
    request(op("UPDATE", type="log", identity="log/AGENT"),
            Map([("includeTimestamp", True), ("includeSource", False), ("outputFile", "stderr")])),
    request(op("UPDATE", type="connection", identity="1"), smap("adminStatus", "deleted")),
    request(op("UPDATE", type="listener", name="l1"), smap("port", "1")),
    request(op("DELETE", type="listener", name="l1")),
    request(op("DELETE", type="router.config.address", identity="router.config.address/0")),
    request(op("DELETE", type="connector", name="c1")),
    request(op("GET-TYPES")),
    request(op("GET-TYPES", entityType="operationalEntity")),
    request(op("GET-ATTRIBUTES", entityType="listener")),
    request(op("GET-OPERATIONS", entityType="router")),
    request(op("GET-MGMT-NODES")),
    request(op("get-mgmt-nodes"), reply_to="r", correlation=ULong(1000)),
    request(op("GET-SCHEMA")),
    request(op("GET-JSON-SCHEMA", indent=Int(2))),
    request(op("GET-LOG", limit="5")),
    request(op("GET-ANNOTATIONS")),
    request(op("FROBNICATE", type="vhost")),
    request(op("QUERY", type="nosuchtype")),
    request([("operation", Sym("QUERY")), (Sym("type"), Sym("listener"))], Map([])),
    request([("type", "listener")]),
    request([("operation", 5)]),
    request(op("QUERY", type="listener"), reply_to=None),
    request(op("READ", type="listener", name="l1"), b"data body"),
]


def main():
    blobs = []
    for i, octets in enumerate(REQUESTS):
        blobs.append(bytes([7]) + octets)       # one buffer
        blobs.append(bytes([i % 7]) + octets)   # split at 1..200 octets
    print("%d seeds in %s" % (write_seeds(sys.argv[1], blobs), sys.argv[1]))


if __name__ == "__main__":
    main()
