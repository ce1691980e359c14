#!/usr/bin/python3
"""A fake management agent for testing junction-manage and junction-stat
without a router: a proton Container listening on 127.0.0.1 that answers
AMQP management requests the way qdrouterd 1.19's agent does
(docs/protocol.md, "Management requests"), from canned entities.

What it does, as a router would:

* accepts connections with or without a SASL layer (ANONYMOUS);
* gives a receiver with a dynamic source an address
  `amqp:/_topo/0/<id>/temp.<random>` and sends replies there, pre-settled,
  with the request's correlation-id;
* accepts requests on any link whose target is a management address:
  `$management`, `_local/$management` or `_topo/0/<router>/$management`
  (the last one answers as router <router>: its `router` entity has that id,
  so a test can see where `-r` sent the request);
* QUERY honours entityType (full, prefix-less or short name), the
  attributeNames list, offset and count; CREATE/READ/UPDATE/DELETE work on an
  in-memory store; GET-TYPES/-ATTRIBUTES/-OPERATIONS/-ANNOTATIONS/-SCHEMA/
  -JSON-SCHEMA come from router/config/schema.json; GET-MGMT-NODES names every
  router; GET-LOG returns canned entries; anything else is 501.

Knobs for tests: `ignore_offset` (always answer from row 0, as a server that
ignores paging would), `ignore_count` (always send every row from the
offset on), `silent` (accept requests, never reply). Every request is recorded in `requests`
(target address, application properties, body) for assertions.

Use from a test:  agent = FakeAgent().start(); ... agent.url ...; agent.stop()
Run by hand:      tests/system/mgmt_fake_agent.py [--port N] [--id ID]
"""

import argparse
import json
import os
import random
import shutil
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from proton import Message, int32, uint, ulong
from proton.handlers import MessagingHandler
from proton.reactor import Container

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("JN_SOURCE_DIR", os.path.normpath(os.path.join(HERE, "..", "..")))
SCHEMA_PATH = os.path.join(SOURCE_DIR, "router", "config", "schema.json")
PREFIX = "org.apache.qpid.dispatch."
NODE_TYPE = "org.amqp.management"


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_schema():
    with open(SCHEMA_PATH) as f:
        data = json.load(f)
    return {t["name"]: t for t in data["entityTypes"]}


# --------------------------------------------------------------------------
# Canned entities, in 1.19's column order

ROUTER_COUNTERS = (
    "addrCount", "linkCount", "nodeCount", "linkRouteCount", "autoLinkCount",
    "connectionCount", "presettledDeliveries", "droppedPresettledDeliveries",
    "acceptedDeliveries", "rejectedDeliveries", "releasedDeliveries", "modifiedDeliveries",
    "deliveriesDelayed1Sec", "deliveriesDelayed10Sec", "deliveriesStuck", "deliveriesIngress",
    "deliveriesEgress", "deliveriesTransit", "deliveriesIngressRouteContainer",
    "deliveriesEgressRouteContainer", "deliveriesRedirectedToFallback")

LINK_COUNT = 12  # more than two pages of 5


def canned_entities(router_id, all_ids):
    """type full name -> list of entity dicts (ordered as 1.19 orders them)."""
    ents = {}
    router = {"name": router_id, "identity": "1", "id": router_id, "type": PREFIX + "router",
              "mode": "interior", "area": "0", "version": "0.1.0", "metadata": None}
    for i, c in enumerate(ROUTER_COUNTERS):
        router[c] = {"addrCount": 6, "linkCount": LINK_COUNT, "nodeCount": len(all_ids) - 1,
                     "connectionCount": 3, "acceptedDeliveries": 1234567}.get(c, i)
    # the AMQP types 1.19 sends: counters ulong, linksBlocked and
    # uptime uint, workerThreads int (proton prints them as 'ulong(5)' if a
    # tool forgets they are numbers)
    for c in ROUTER_COUNTERS:
        router[c] = ulong(router[c])
    router.update({"linksBlocked": uint(0), "uptimeSeconds": uint(93784),
                   "memoryUsage": ulong(449839104), "workerThreads": int32(4)})
    ents[PREFIX + "router"] = [router]

    def conn(ident, host, container, role, dir_, sasl, user, enc, last, tenant=None):
        return {"name": "connection/" + host, "identity": ident, "host": host, "role": role,
                "protocol": "amqp", "dir": dir_, "container": container, "sasl": sasl,
                "isAuthenticated": sasl is not None, "user": user, "isEncrypted": enc,
                "sslProto": "TLSv1.3" if enc else None,
                "sslCipher": "TLS_AES_256_GCM_SHA384" if enc else None,
                "properties": {}, "sslSsf": 256 if enc else 0, "tenant": tenant,
                "type": PREFIX + "connection", "ssl": enc, "opened": True, "active": True,
                "adminStatus": "enabled", "operStatus": "up", "uptimeSeconds": 3725 + int(ident),
                "lastDlvSeconds": last, "enableProtocolTrace": False}

    ents[PREFIX + "connection"] = [
        conn("1", "127.0.0.1:40001", "client-one", "normal", "in", "ANONYMOUS", "anonymous",
             False, 5),
        conn("2", "127.0.0.1:5673", "router-" + router_id + "-peer", "inter-router", "out",
             "PLAIN", "admin", True, None),
        conn("3", "127.0.0.1:40003", "edge-one", "edge", "in", None, None, False, 90061,
             tenant="tenant1/"),
    ]

    links = []
    for i in range(1, LINK_COUNT + 1):
        addr = ["M0examples", "Lqdhello", "M1waypoint", "Cbroker.queue", "Ttopo", "RB"][i % 6]
        links.append({
            "name": "link-%d" % i, "identity": str(i), "type": PREFIX + "router.link",
            "linkName": "link-%d" % i,
            "linkType": "endpoint" if i % 3 else "router-control",
            "linkDir": "in" if i % 2 else "out", "owningAddr": addr, "capacity": 250,
            "peer": None, "undeliveredCount": i, "unsettledCount": 0,
            "deliveryCount": 100 * i, "connectionId": str(1 + i % 3),
            "adminStatus": "enabled", "operStatus": "up", "presettledCount": 0,
            "droppedPresettledCount": 0, "acceptedCount": 100 * i, "rejectedCount": 0,
            "releasedCount": 0, "modifiedCount": 0, "deliveriesDelayed1Sec": 1,
            "deliveriesDelayed10Sec": 1, "deliveriesStuck": 0, "ingressHistogram": None,
            "priority": 4, "settleRate": 7, "creditAvailable": 250,
            "zeroCreditSeconds": 75 if i == 1 else 0})
        l = links[-1]
        for k in ("undeliveredCount", "unsettledCount", "deliveryCount", "presettledCount",
                  "droppedPresettledCount", "acceptedCount", "rejectedCount", "releasedCount",
                  "modifiedCount", "deliveriesDelayed1Sec", "deliveriesDelayed10Sec",
                  "deliveriesStuck"):
            l[k] = ulong(l[k])
        for k in ("capacity", "priority", "settleRate", "creditAvailable", "zeroCreditSeconds"):
            l[k] = uint(l[k])
    ents[PREFIX + "router.link"] = links

    def address(key, dist, local, remote, cont=0, pri=-1, ingress=0):
        return {"name": key, "identity": key, "type": PREFIX + "router.address", "key": key,
                "distribution": dist, "inProcess": uint(0), "subscriberCount": uint(local),
                "remoteCount": uint(remote), "containerCount": uint(cont),
                "remoteHostRouters": [],
                "deliveriesIngress": ulong(ingress), "deliveriesEgress": ulong(ingress),
                "deliveriesTransit": 0, "deliveriesToContainer": 0,
                "deliveriesFromContainer": 0, "deliveriesEgressRouteContainer": 0,
                "deliveriesIngressRouteContainer": 0, "transitOutstanding": None,
                "trackedDeliveries": 0, "priority": int32(pri),
                "deliveriesRedirectedToFallback": ulong(0)}

    ents[PREFIX + "router.address"] = [
        address("M0examples", "balanced", 1, 0, ingress=1500),
        address("Lqdhello", "flood", 1, 0),
        address("M0$management", "closest", 1, 0),
        address("Cbroker.queue", "linkBalanced", 0, 0, cont=1),
        address("M1waypoint", "balanced", 0, 1, pri=3),
        address("RB", "closest", 0, 1),
    ]

    nodes = []  # a standalone router (no other ids) has no routing engine: none
    for idx, rid in enumerate(all_ids if len(all_ids) > 1 else ()):
        local = rid == router_id
        nodes.append({"id": rid, "protocolVersion": 1, "instance": 1700000000,
                      "linkState": [r for r in all_ids if r != rid],
                      "nextHop": "(self)" if local else None,
                      "validOrigins": [], "address": "amqp:/_topo/0/%s" % rid,
                      "routerLink": None if local else idx,
                      "cost": None if local else 1,
                      "lastTopoChange": 1700000100 if local else None, "index": idx,
                      "name": "router.node/" + rid, "identity": "router.node/" + rid,
                      "type": PREFIX + "router.node"})
    ents[PREFIX + "router.node"] = nodes

    ents[PREFIX + "allocator"] = [
        {"name": "allocator/" + n, "identity": "allocator/" + n, "type": PREFIX + "allocator",
         "typeName": n, "typeSize": size, "transferBatchSize": 64, "localFreeListMax": 128,
         "globalFreeListMax": 0, "totalAllocFromHeap": total, "totalFreeToHeap": freed,
         "heldByThreads": held, "batchesRebalancedToThreads": 2, "batchesRebalancedToGlobal": 1}
        for n, size, total, freed, held in (("jn_message_t", 160, 1024, 0, 512),
                                            ("jn_buffer_t", 576, 2048, 1024, 1000),
                                            ("jn_delivery_t", 232, 640, 0, 64))]

    ents[PREFIX + "router.config.autoLink"] = [
        {"name": "al1", "identity": "5", "type": PREFIX + "router.config.autoLink",
         "address": "queue.one", "addr": "queue.one", "direction": "out", "dir": "out",
         "phase": 1, "connection": None, "containerId": "broker", "externalAddress": None,
         "externalAddr": None, "linkRef": None, "operStatus": "inactive", "lastError": None,
         "fallback": False}]
    ents[PREFIX + "router.config.linkRoute"] = [
        {"name": "lr1", "identity": "6", "type": PREFIX + "router.config.linkRoute",
         "prefix": "broker", "distribution": "linkBalanced", "connection": None,
         "containerId": "broker", "direction": "in", "dir": "in", "operStatus": "active",
         "pattern": None, "addExternalPrefix": None, "delExternalPrefix": None}]
    ents[PREFIX + "router.config.address"] = [
        {"name": "a1", "identity": "7", "type": PREFIX + "router.config.address",
         "prefix": "examples", "distribution": "balanced", "waypoint": False,
         "ingressPhase": 0, "egressPhase": 0, "pattern": None, "priority": -1,
         "fallback": False}]
    ents[PREFIX + "listener"] = [
        {"name": "listener/127.0.0.1:5672", "identity": "listener/127.0.0.1:5672",
         "type": PREFIX + "listener", "host": "127.0.0.1", "port": "5672", "role": "normal",
         "cost": 1, "authenticatePeer": False}]
    ents[PREFIX + "log"] = [
        {"name": "log/" + m, "identity": "log/" + m, "type": PREFIX + "log", "module": m,
         "enable": "info+" if m == "DEFAULT" else None, "includeTimestamp": True,
         "includeSource": False, "outputFile": None}
        for m in ("DEFAULT", "ROUTER", "AGENT")]
    ents[PREFIX + "policy"] = [
        {"name": "policy/1", "identity": "policy/1", "type": PREFIX + "policy",
         "maxConnections": 65535, "maxMessageSize": 0, "enableVhostPolicy": False,
         "enableVhostNamePatterns": False, "policyDir": "", "defaultVhost": "$default",
         "connectionsProcessed": 4, "connectionsDenied": 0, "connectionsCurrent": 3,
         "linksDenied": 0, "maxMessageSizeDenied": 0, "totalDenials": 0}]
    return ents


LOG = [
    ["ROUTER", "info", "Router started in interior mode", "router/main.c", 101, 1700000000],
    ["SERVER", "notice", "Listening on 127.0.0.1:5672", None, None, 1700000001],
    ["AGENT", "warning", "Something to look at", "router/mgmt/agent.c", 7, 1700000002],
]


class Status(Exception):
    def __init__(self, code, description, body=None):
        super().__init__(description)
        self.code = code
        self.description = description
        self.body = {} if body is None else body


# --------------------------------------------------------------------------
# The agent

class _Handler(MessagingHandler):
    def __init__(self, agent):
        super().__init__(prefetch=100, auto_accept=False)
        self.agent = agent
        self.reply_links = {}  # dynamic address -> sender link
        self.pending = {}      # dynamic address -> replies waiting for credit

    def on_start(self, event):
        a = self.agent
        self.acceptor = event.container.listen("127.0.0.1:%d" % a.port)
        event.container.schedule(0.05, self)
        a._ready.set()

    def on_timer_task(self, event):
        if self.agent._stop.is_set():
            self.acceptor.close()
            for conn in list(self.agent._connections):
                conn.close()
            event.container.stop()
            return
        event.container.schedule(0.05, self)

    def on_connection_bound(self, event):
        # Accept clients that start with a SASL header (ANONYMOUS) as well as
        # those that send the bare AMQP header, as junctiond's listeners do.
        sasl = event.transport.sasl()
        sasl.allowed_mechs("ANONYMOUS")
        self.agent._connections.append(event.connection)

    def on_link_opening(self, event):
        link = event.link
        if link.is_sender:
            if link.remote_source.dynamic:
                tag = "".join(random.choice(string.ascii_letters) for _ in range(15))
                address = "amqp:/_topo/0/%s/temp.%s" % (self.agent.router_id, tag)
                link.source.address = address
                self.reply_links[address] = link
            else:
                link.source.copy(link.remote_source)
            link.target.copy(link.remote_target)
        else:
            link.target.copy(link.remote_target)
            link.source.copy(link.remote_source)
        link.open()

    def on_sendable(self, event):
        self._flush(event.link.source.address)

    def _flush(self, address):
        link = self.reply_links.get(address)
        queue = self.pending.get(address) or []
        while link is not None and queue and link.credit > 0:
            dlv = link.send(queue.pop(0))
            dlv.settle()

    def on_message(self, event):
        msg = event.message
        target = event.link.remote_target.address or event.link.target.address or ""
        record = {"address": target, "properties": dict(msg.properties or {}),
                  "body": msg.body, "correlation_id": msg.correlation_id}
        self.agent.requests.append(record)
        self.accept(event.delivery)
        if self.agent.silent or not msg.reply_to:
            return
        code, description, body = self.agent.handle(target, record["properties"], msg.body)
        reply = Message(address=msg.reply_to, correlation_id=msg.correlation_id,
                        properties={"statusCode": code, "statusDescription": description},
                        body=body, durable=False)
        self.pending.setdefault(msg.reply_to, []).append(reply)
        self._flush(msg.reply_to)


class FakeAgent:
    """The fake agent; start() runs it on a thread, stop() ends it."""

    def __init__(self, router_id="FAKE", other_routers=("B",), ignore_offset=False,
                 ignore_count=False, silent=False, port=None):
        self.router_id = router_id
        self.all_ids = [router_id] + [r for r in other_routers if r != router_id]
        self.ignore_offset = ignore_offset
        self.ignore_count = ignore_count
        self.silent = silent
        self.port = port or _free_port()
        self.requests = []
        self.schema = load_schema()
        self.stores = {rid: canned_entities(rid, self.all_ids) for rid in self.all_ids}
        self._counter = 100
        self._connections = []
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread = None
        self.error = None

    @property
    def url(self):
        return "amqp://127.0.0.1:%d" % self.port

    def start(self, timeout=10.0):
        self._thread = threading.Thread(target=self._run, name="fake-agent", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("fake agent did not start")
        if self.error:
            raise RuntimeError("fake agent failed: %s" % self.error)
        self._wait_listening(timeout)
        return self

    def _wait_listening(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline or self.error:
                    raise RuntimeError("fake agent is not listening on %d: %s"
                                       % (self.port, self.error))
                time.sleep(0.02)

    def _run(self):
        try:
            Container(_Handler(self)).run()
        except Exception as e:  # reported by start() / stop()
            self.error = "%s: %s" % (type(e).__name__, e)
            self._ready.set()

    def stop(self, timeout=10.0):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise RuntimeError("fake agent did not stop within %.0f s" % timeout)

    def operations(self, op):
        """The requests recorded for one operation."""
        return [r for r in self.requests if r["properties"].get("operation") == op]

    # -- request handling ---------------------------------------------------

    def router_for(self, target):
        """Which router a management address names (None: not management)."""
        t = target[len("amqp:/"):] if target.startswith("amqp:/") else target
        t = t.lstrip("/")
        if t in ("$management", "_local/$management"):
            return self.router_id
        parts = t.split("/")
        if len(parts) == 4 and parts[0] == "_topo" and parts[3] == "$management":
            return parts[2]
        return None

    def handle(self, target, props, body):
        rid = self.router_for(target)
        if rid is None or rid not in self.stores:
            return 404, "No management node at %r" % target, {}
        try:
            return self._dispatch(self.stores[rid], props, body)
        except Status as s:
            return s.code, s.description, s.body

    def find_type(self, name):
        """Schema type for a full, prefix-less or short name (else None)."""
        if not name:
            return None
        short = name[len(PREFIX):] if name.startswith(PREFIX) else name
        if short in self.schema:
            return self.schema[short]
        for t in self.schema.values():
            if t.get("shortName") == short:
                return t
        return None

    def _ops(self, t):
        return t.get("operations") or []

    def _dispatch(self, store, props, body):
        op = props.get("operation")
        if not isinstance(op, str):
            raise Status(400, "No operation")
        op = op.upper()
        etype_name = props.get("entityType") or props.get("type")
        node_level = props.get("type") in (None, NODE_TYPE, PREFIX + NODE_TYPE,
                                           PREFIX + "management") and \
            props.get("name") in (None, "self")
        if op == "QUERY":
            return self.op_query(store, props.get("entityType"), props, body)
        if op in ("GET-TYPES", "GET-ATTRIBUTES", "GET-OPERATIONS", "GET-ANNOTATIONS"):
            return 200, "OK", self.op_get_meta(op, props.get("entityType"))
        if op == "GET-MGMT-NODES":
            if len(self.all_ids) < 2:
                return 200, "OK", []  # standalone: no routing engine, no list
            return 200, "OK", ["amqp:/_topo/0/%s/$management" % r for r in self.all_ids]
        if op == "GET-SCHEMA":
            return 200, "OK", self.schema_map()
        if op == "GET-JSON-SCHEMA":
            indent = props.get("indent")
            return 200, "OK", json.dumps(self.schema_map(), indent=indent)
        if op == "GET-LOG":
            limit = props.get("limit")
            try:
                limit = int(limit) if limit is not None else 0
            except ValueError:
                raise Status(400, "Bad limit %r" % limit)
            return 200, "OK", [list(e) for e in (LOG[-limit:] if limit > 0 else LOG)]
        if op == "READ" and node_level and not props.get("identity") and \
                props.get("type") in (None, NODE_TYPE, PREFIX + "management"):
            return 200, "OK", {"identity": "self", "name": "self",
                               "type": PREFIX + "management"}
        if op == "CREATE":
            return self.op_create(store, props, body)
        t = self.find_type(etype_name)
        if etype_name and t is None:
            raise Status(400, "No such entity type '%s'" % etype_name)
        if op not in ("READ", "UPDATE", "DELETE"):
            ops = self._ops(t) if t else []
            raise Status(501, "Operation '%s' not implemented for '%s' %s"
                         % (op, etype_name or NODE_TYPE, ops))
        entity, full = self.find_entity(store, t, props)
        if op not in self._ops(self.schema[full[len(PREFIX):]]) and op != "READ":
            raise Status(501, "Operation '%s' not implemented for '%s'" % (op, full))
        if op == "READ":
            return 200, "OK", dict(entity)
        if op == "UPDATE":
            if not isinstance(body, dict):
                raise Status(400, "Body of request must be a map")
            for k, v in body.items():
                if k in ("identity", "type"):
                    continue
                entity[k] = v
            return 200, "OK", dict(entity)
        store[full].remove(entity)
        return 204, "No Content", {}

    def find_entity(self, store, t, props):
        name, identity = props.get("name"), props.get("identity")
        if not name and not identity:
            raise Status(400, "No name or identity provided")
        types = [t["fullName"]] if t else list(store)
        for full in types:
            for e in store.get(full, []):
                if (identity and e.get("identity") == identity) or \
                        (not identity and e.get("name") == name):
                    if name and identity and e.get("name") != name:
                        raise Status(400, "Conflicting name and identity")
                    return e, full
        key = "identity=%s" % identity if identity else "name=%s" % name
        raise Status(404, "No entity with %s" % key)

    def op_query(self, store, etype, props, body):
        names = list((body or {}).get("attributeNames") or []) if isinstance(body, dict) else []
        if etype:
            t = self.find_type(etype)
            if t is None:
                raise Status(400, "No such entity type '%s'" % etype, {})
            full = t["fullName"]
            entities = store.get(full, [])
            known = set(a["name"] for a in t.get("attributes", []))
            for e in entities:
                known.update(e.keys())
            if not names:
                names = list(entities[0].keys()) if entities else \
                    [a["name"] for a in t.get("attributes", [])]
            unknown = [n for n in names if n not in known]
            if unknown:
                raise Status(404, "Unknown attributes %s for type %s" % (unknown, full))
        else:
            entities = [e for lst in store.values() for e in lst]
            if not names:
                seen = {}
                for e in entities:
                    for k in e:
                        seen.setdefault(k, None)
                names = list(seen)
        offset = int(props.get("offset") or 0)
        count = props.get("count")
        page = entities if self.ignore_offset else entities[offset:]
        if count is not None and not self.ignore_count:
            page = page[:max(0, int(count))]
        rows = [[e.get(n) for n in names] for e in page]
        return 200, "OK", {"attributeNames": names, "results": rows}

    def op_create(self, store, props, body):
        if body is not None and not isinstance(body, dict):
            raise Status(400, "Body of request must be a map")
        body = dict(body or {})
        etype = props.get("type") or body.get("type")
        name = props.get("name") or body.get("name")
        if "identity" in body or props.get("identity"):
            raise Status(400, "Identity cannot be given in CREATE")
        if not etype:
            raise Status(400, "No 'type' attribute in %s" % body)
        t = self.find_type(etype)
        if t is None:
            raise Status(400, "No such entity type '%s'" % etype)
        if "CREATE" not in self._ops(t):
            raise Status(501, "Operation 'CREATE' not implemented for '%s' %s"
                         % (t["fullName"], self._ops(t)))
        attrs = {a["name"]: a for a in t.get("attributes", [])}
        for k in body:
            if k in ("type", "name"):
                continue
            if k not in attrs or not attrs[k].get("create"):
                raise Status(400, "Cannot set attribute '%s' in CREATE" % k)
            if attrs[k].get("type") == "integer" and not isinstance(body[k], int):
                try:
                    body[k] = int(body[k])
                except (TypeError, ValueError):
                    raise Status(400, "Attribute '%s' must be an integer" % k)
        full = t["fullName"]
        for lst in store.values():
            for e in lst:
                if name and e.get("name") == name:
                    raise Status(400, "Name conflicts with an existing entity")
        self._counter += 1
        identity = "%s/%d" % (t.get("shortName") or t["name"], self._counter)
        entity = {"name": name or identity, "identity": identity, "type": full}
        for a in t.get("attributes", []):
            if a["name"] in ("name", "identity", "type"):
                continue
            if a["name"] in body:
                entity[a["name"]] = body[a["name"]]
            elif "default" in a:
                entity[a["name"]] = a["default"]
        store.setdefault(full, []).append(entity)
        return 201, "Created", dict(entity)

    def _types_matching(self, etype):
        if etype:
            t = self.find_type(etype)
            if t is None:
                raise Status(400, "No such entity type '%s'" % etype)
            wanted = t["name"]
            out = []
            for name, cand in self.schema.items():
                n = name
                while n:
                    if n == wanted:
                        out.append(cand)
                        break
                    n = self.schema[n].get("extends") if n in self.schema else None
            return out
        return list(self.schema.values())

    def op_get_meta(self, op, etype):
        out = {}
        for t in self._types_matching(etype):
            if op == "GET-TYPES":
                bases, n = [], t.get("extends")
                while n:
                    bases.append(self.schema[n]["fullName"])
                    n = self.schema[n].get("extends")
                out[t["fullName"]] = bases
            elif op == "GET-ATTRIBUTES":
                out[t["fullName"]] = [a["name"] for a in t.get("attributes", [])]
            elif op == "GET-OPERATIONS":
                out[t["fullName"]] = list(self._ops(t))
        return out

    def schema_map(self):
        types = {}
        for t in self.schema.values():
            attrs = {}
            for a in t.get("attributes", []):
                if a["name"] == "type":
                    continue
                entry = {"type": a.get("values") if a.get("type") == "enum" else a["type"]}
                for k in ("default", "required", "unique"):
                    if a.get(k):
                        entry[k] = a[k]
                attrs[a["name"]] = entry
            types[t.get("shortName") or t["name"]] = {
                "attributes": attrs, "operations": list(self._ops(t)),
                "fullyQualifiedType": t["fullName"]}
        return {"prefix": PREFIX.rstrip("."), "entityTypes": types}


# --------------------------------------------------------------------------
# Base class of tests/system/test_tools_*.py

TOOLS_DIR = os.path.join(SOURCE_DIR, "tools")
TOOL_TIMEOUT = 20.0  # no tool run may take longer


class ToolsTestCase(unittest.TestCase):
    """Runs junction-manage / junction-stat against a management target.

    The target is chosen by JN_TOOLS_TARGET:
      unset or "fake"   a FakeAgent on a free 127.0.0.1 port (the default);
      "router"          a junctiond from JN_BUILD_DIR (tests/system/harness.py);
      amqp://HOST:PORT  a router someone else runs.
    A test that needs the fake's canned entities or its request log calls
    self.require_fake() first and is skipped on a real router. Subclasses may
    override start_target() to set up something else; it returns the URL.
    """

    maxDiff = None
    fake_options = {}  # keyword arguments for the FakeAgent of this class

    def setUp(self):
        self.fake = None
        self.target = os.environ.get("JN_TOOLS_TARGET", "fake")
        self.url = self.start_target()

    def start_target(self):
        if self.target == "fake":
            return self.start_fake(**self.fake_options).url
        if self.target == "router":
            import harness  # starts junctiond; only needed in this mode
            workdir = tempfile.mkdtemp(prefix="jn-tools-")
            self.addCleanup(shutil.rmtree, workdir, True)
            router = harness.Router(workdir, name="T").start()
            self.addCleanup(self._stop_router, router)
            router.wait_ready()
            return router.url
        return self.target

    def _stop_router(self, router):
        error = router.stop()
        if error:
            self.fail(error)

    def start_fake(self, **kw):
        """Start a FakeAgent (stopped at cleanup) and return it. The first one
        started is also self.fake."""
        agent = FakeAgent(**kw).start()
        self.addCleanup(agent.stop)
        if self.fake is None:
            self.fake = agent
        return agent

    def require_fake(self):
        if self.fake is None:
            self.skipTest("needs the fake agent's canned entities (target: %s)" % self.target)

    def tool(self, name, *args, url=None, stdin=None, timeout=TOOL_TIMEOUT, bus=True):
        """Run tools/junction-<name> with -b URL and args; CompletedProcess."""
        argv = [os.path.join(TOOLS_DIR, "junction-" + name)]
        if bus:
            argv += ["-b", url or self.url]
        argv += [str(a) for a in args]
        started = time.monotonic()
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True,
                              timeout=timeout, stdin=None if stdin is not None
                              else subprocess.DEVNULL)
        proc.elapsed = time.monotonic() - started
        return proc

    def ok(self, name, *args, **kw):
        """Run a tool that must succeed; its stdout."""
        proc = self.tool(name, *args, **kw)
        self.assertEqual(proc.returncode, 0, "junction-%s %s failed (%d):\n%s%s"
                         % (name, " ".join(map(str, args)), proc.returncode, proc.stderr,
                            proc.stdout))
        return proc.stdout

    def assertOneLineError(self, proc, code, pattern):
        self.assertEqual(proc.returncode, code, "stdout: %r stderr: %r"
                         % (proc.stdout, proc.stderr))
        lines = proc.stderr.splitlines()
        self.assertEqual(len(lines), 1, "error must be one line: %r" % proc.stderr)
        self.assertRegex(lines[0], pattern)


def main(argv=None):
    p = argparse.ArgumentParser(description="Run the fake management agent until killed.")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--id", default="FAKE")
    p.add_argument("--other", action="append", default=None,
                   help="another router id to answer for (repeatable; default B)")
    args = p.parse_args(argv)
    agent = FakeAgent(args.id, tuple(args.other or ("B",)), port=args.port or None).start()
    print(agent.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        agent.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
