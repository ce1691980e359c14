#!/usr/bin/python3
"""System tests of the entity path (docs/design.md, "The entity path"):
one way from a configured entity to the running router, whether it comes
from the config file, a management CREATE/DELETE, or a reload.

- An inter-router connector created through management behaves as one
  from the file: a two-router mesh forms through it, with its cost.
- A listener on port 0 reports the port it got; a CREATE of a listener
  whose port cannot be bound is an error status, not 201.
- The same entities from a file and from a script of CREATEs give the
  same QUERY output, type by type.
- Reload (SIGHUP and the RELOAD operation): under 50,000 unsettled
  messages the file gains a listener and an address, loses a connector and
  changes a log level; every message is accepted, the new listener accepts
  a client, the connector's connection is gone, entities created through
  management stay; then a broken file is reloaded and nothing changes.

Every router is a real junctiond on 127.0.0.1 (harness.py); every wait is
bounded.
"""
import os
import re
import signal
import socket
import subprocess
import unittest

from proton import Delivery, Message
from proton.utils import BlockingConnection, SyncRequestResponse

from harness import (PYTHON, SLOW, SOURCE_DIR, Recv, RouterTestCase, Send, Traffic, conf_section,
                     free_port, run_junctiond)
from mesh import distinct_ports
from tls_certs import shared_certs

TIMEOUT = 10 * SLOW


class Manager:
    """A management client on its own connection."""

    def __init__(self, url):
        self.conn = BlockingConnection(url, timeout=TIMEOUT)
        self.client = SyncRequestResponse(self.conn, "$management")

    def call(self, props, body=None):
        reply = self.client.call(Message(body={} if body is None else body, properties=props))
        return (reply.properties["statusCode"], reply.properties["statusDescription"],
                reply.body)

    def create(self, entity_type, name, attrs):
        props = {"operation": "CREATE", "type": entity_type}
        if name:
            props["name"] = name
        return self.call(props, attrs)

    def query(self, entity_type, names=()):
        props = {"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                 "entityType": entity_type}
        code, desc, body = self.call(props, {"attributeNames": list(names)})
        if code != 200:
            raise AssertionError("QUERY %s: %s %s" % (entity_type, code, desc))
        return [dict(zip(body["attributeNames"], row)) for row in body["results"]]

    def reload(self):
        code, desc, _ = self.call({"operation": "RELOAD", "type": "router"})
        return code, desc

    def close(self):
        try:
            self.conn.close()
        except Exception:  # a connection the router already closed
            pass


def router_section(name, mode="standalone"):
    return conf_section("router", {"mode": mode, "id": name, "workerThreads": 2})


def client_listener(extra=None):
    attrs = {"host": "127.0.0.1", "port": "{port}", "role": "normal",
             "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"}
    attrs.update(extra or {})
    return conf_section("listener", attrs)


LOGS = conf_section("log", {"module": "DEFAULT", "enable": "info+", "includeTimestamp": "yes"})


class EntityPathTest(RouterTestCase):

    def manager(self, router):
        m = Manager(router.url)
        self.addCleanup(m.close)
        return m

    def test_inter_router_connector_created_by_management_forms_a_mesh(self):
        """CREATE connector {role: inter-router, cost: 7} on B toward A's
        inter-router listener: the two routers see each other (router.node)
        with that cost, and a message crosses from B's client to A's."""
        ir = free_port()
        a = self.start_router(config=router_section("A", "interior") + client_listener() +
                              conf_section("listener", {"name": "ir", "host": "127.0.0.1",
                                                        "port": ir, "role": "inter-router",
                                                        "saslMechanisms": "ANONYMOUS"}) + LOGS)
        b = self.start_router(config=router_section("B", "interior") + client_listener() + LOGS)
        mb = self.manager(b)
        code, desc, body = mb.create("connector", "to-A",
                                     {"host": "127.0.0.1", "port": str(ir),
                                      "role": "inter-router", "cost": 7,
                                      "saslMechanisms": "ANONYMOUS"})
        self.assertEqual(code, 201, desc)
        self.assertEqual(body["role"], "inter-router")
        self.assertEqual(body["cost"], 7)

        def b_knows_a():
            nodes = mb.query("router.node", ["id", "cost"])
            return any(n["id"] == "A" and n["cost"] == 7 for n in nodes)
        self.wait_for("B to reach A through the created connector with cost 7", b_knows_a,
                      timeout=30 * SLOW)
        rx = Recv("mesh.q", url=a.url)
        tx = Send("mesh.q", [Message(body=i) for i in range(20)], url=b.url)
        self.run_scenario(Traffic(a, [rx], [tx], expect=20, timeout=30 * SLOW))
        self.assertEqual(len(rx.messages), 20)

    def test_port_zero_listener_reports_the_port_it_got(self):
        """A listener on port 0 (from the file, and from a CREATE) shows a
        real port in its `port` attribute, and a client connects there."""
        r = self.start_router(extra=conf_section("listener", {"name": "zero",
                                                              "host": "127.0.0.1",
                                                              "port": 0}))
        m = self.manager(r)
        code, desc, body = m.create("listener", "zero2", {"host": "127.0.0.1", "port": "0"})
        self.assertEqual(code, 201, desc)
        self.assertNotEqual(body["port"], "0")
        rows = {x["name"]: x["port"] for x in m.query("listener", ["name", "port"])}
        for name in ("zero", "zero2"):
            port = int(rows[name])
            self.assertNotEqual(port, 0)
            c = BlockingConnection("amqp://127.0.0.1:%d" % port, timeout=TIMEOUT)
            c.close()
        self.assertRegex(r.log(), r"Listening on 127\.0\.0\.1:%s\b" % rows["zero"])

    def test_create_listener_on_a_held_port_is_an_error(self):
        """CREATE of a listener whose port another socket holds answers 400
        naming the port; the listener is not kept."""
        r = self.start_router()
        m = self.manager(r)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            port = s.getsockname()[1]
            code, desc, _ = m.create("listener", "busy", {"host": "127.0.0.1", "port": str(port)})
        self.assertEqual(code, 400, desc)
        self.assertIn(str(port), desc)
        self.assertNotIn("busy", [x["name"] for x in m.query("listener", ["name"])])

    def test_refusal_text_is_the_same_from_file_and_management(self):
        """A bad value is refused once, with one text: after FILE:LINE at
        start-up, as the 400's description from management."""
        r = self.start_router()
        m = self.manager(r)
        code, desc, _ = m.create("listener", "bad", {"host": "127.0.0.1", "port": "99999"})
        self.assertEqual(code, 400)
        path = os.path.join(self.workdir, "bad.conf")
        with open(path, "w") as f:
            f.write(router_section("X") + "listener {\n    name: bad\n    host: 127.0.0.1\n"
                    "    port: 99999\n}\n")
        p = run_junctiond(["-c", path])
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("%s:9: %s" % (path, desc), p.stderr)  # the port's line

    def test_file_and_creates_give_the_same_query(self):
        """The same addresses, connectors, TLS profile and a port-0 TLS
        listener, from a file on one router and from CREATEs on another:
        QUERY of each type is the same (the listener's bound port aside)."""
        ports = distinct_ports(["c1", "c2"])
        certs = shared_certs()
        # 1.19 names an unnamed address section by its place in the file
        # ("address/0"): the CREATEs give those names
        entities = [
            ("address", "router.config.address", "address/0",
             {"prefix": "closest.q", "distribution": "closest"}),
            ("address", "router.config.address", "address/1",
             {"pattern": "mc.*.x", "distribution": "multicast"}),
            ("connector", "connector", "c1",
             {"host": "127.0.0.1", "port": str(ports["c1"]), "saslMechanisms": "ANONYMOUS",
              "idleTimeoutSeconds": 33, "linkCapacity": 17}),
            ("connector", "connector", "c2",
             {"host": "127.0.0.1", "port": str(ports["c2"]), "stripAnnotations": "no"}),
            ("sslProfile", "sslProfile", "tls",
             {"certFile": certs["server"], "privateKeyFile": certs["server_key"],
              "caCertFile": certs["ca"], "protocols": "TLSv1.2 TLSv1.3"}),
            ("listener", "listener", "l0",
             {"host": "127.0.0.1", "port": "0", "maxFrameSize": 4096, "maxSessions": 10,
              "sslProfile": "tls", "requireSsl": True}),
        ]
        text = router_section("Same") + client_listener()
        for section, _, name, attrs in entities:
            a = {k: ("yes" if v is True else "no" if v is False else v) for k, v in attrs.items()}
            if name and section != "address":
                a["name"] = name
            text += conf_section(section, a)
        by_file = self.start_router(config=text)
        by_mgmt = self.start_router(config=router_section("Same") + client_listener())
        mm = self.manager(by_mgmt)
        for _, etype, name, attrs in entities:
            code, desc, _ = mm.create(etype, name, attrs)
            self.assertEqual(code, 201, desc)
        mf = self.manager(by_file)
        for etype in ("router.config.address", "connector", "listener", "sslProfile"):
            rows_f = mf.query(etype)
            rows_m = mm.query(etype)
            if etype == "listener":  # the client listeners differ by port: compare l0
                rows_f = [x for x in rows_f if x["name"] == "l0"]
                rows_m = [x for x in rows_m if x["name"] == "l0"]
                for x in rows_f + rows_m:
                    self.assertNotEqual(x.pop("port"), "0")
            if etype == "connector":  # run-time: its attempts so far ([C<id>], timing)
                for x in rows_f + rows_m:
                    self.assertIn(x.pop("connectionStatus"), ("CONNECTING", "SUCCESS"))
                    x.pop("connectionMsg")
            if etype.startswith("router.config."):
                # numbered from the links' counter, as 1.19 (a CREATE comes
                # after the manager's own links): distinct, not equal
                for rows in (rows_f, rows_m):
                    ids = [x.pop("identity") for x in rows]
                    self.assertEqual(len(set(ids)), len(ids), ids)
            self.assertEqual(rows_f, rows_m, etype)


class ReloadTest(RouterTestCase):

    def manager(self, router):
        m = Manager(router.url)
        self.addCleanup(m.close)
        return m

    def write_conf(self, router, text):
        tmp = router.conf_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text.replace("{port}", str(router.port)))
        os.replace(tmp, router.conf_path)

    def wait_log(self, router, pattern, count=1):
        self.wait_for("%r in %s's log" % (pattern, router.name),
                      lambda: len(re.findall(pattern, router.log())) >= count)

    def test_reload_under_load(self):
        """50,000 unsettled messages flow while a SIGHUP reload adds a
        listener and an address, removes a connector and changes a log
        level: all are accepted; the new listener accepts a client; the
        connector's connection is gone; a management-created address stays;
        a broken file then changes nothing (RELOAD answers 400 with
        FILE:LINE)."""
        peer = self.start_router()
        new_port = free_port()
        base = (router_section("A") + client_listener() + LOGS +
                conf_section("log", {"module": "AGENT", "enable": "info+"}) +
                conf_section("connector", {"name": "up", "host": "127.0.0.1",
                                           "port": peer.port, "saslMechanisms": "ANONYMOUS"}))
        a = self.start_router(config=base)
        m = self.manager(a)
        peer_manager = [self.manager(peer)]

        def peer_sees_a():
            return any(c["container"] == "A"
                       for c in peer_manager[0].query("connection", ["container"]))
        self.wait_for("A's connector to reach the peer", peer_sees_a)
        code, desc, _ = m.create("router.config.address", "kept",
                                 {"prefix": "kept", "distribution": "multicast"})
        self.assertEqual(code, 201, desc)

        changed = (router_section("A") + client_listener() + LOGS +
                   conf_section("log", {"module": "AGENT", "enable": "debug+"}) +
                   conf_section("listener", {"name": "new", "host": "127.0.0.1",
                                             "port": new_port, "saslMechanisms": "ANONYMOUS"}) +
                   conf_section("address", {"prefix": "added", "distribution": "multicast"}))
        count = 50000
        rx = Recv("load.q", credit=500)
        tx = Send("load.q", [Message(body=i) for i in range(count)])
        reloaded = []
        test = self

        class ReloadMidway(Traffic):
            def received_message(self, r, message, dlv):
                super().received_message(r, message, dlv)
                if not reloaded and self.received >= count // 5:
                    test.write_conf(a, changed)
                    a.proc.send_signal(signal.SIGHUP)
                    reloaded.append(True)
        self.run_scenario(ReloadMidway(a, [rx], [tx], expect=count, timeout=240 * SLOW))
        self.assertTrue(reloaded, "the reload never ran")
        accepted = sum(1 for state, _ in tx.outcomes.values() if state == Delivery.ACCEPTED)
        self.assertEqual(accepted, count)
        self.assertEqual(len(rx.messages), count)
        # blocking clients are not serviced while the traffic ran: fresh ones
        m, mp = self.manager(a), self.manager(peer)

        self.wait_log(a, r"Reloaded .*%s: 4 changes applied, 0 failed" % re.escape(a.conf_path))
        # the management connections sat idle (unserviced) while the load
        # ran, longer than their idle time-out on a loaded machine: new ones
        m = self.manager(a)
        peer_manager[0] = self.manager(peer)
        c = BlockingConnection("amqp://127.0.0.1:%d" % new_port, timeout=TIMEOUT)
        c.close()
        self.wait_for("the removed connector's connection to close",
                      lambda: not peer_sees_a())
        rows = m.query("router.config.address", ["prefix", "distribution"])
        self.assertIn({"prefix": "kept", "distribution": "multicast"}, rows)
        self.assertIn({"prefix": "added", "distribution": "multicast"}, rows)
        self.assertNotIn("up", [x["name"] for x in m.query("connector", ["name"])])
        agent_log = [x for x in m.query("log", ["module", "enable"]) if x["module"] == "AGENT"]
        self.assertEqual(agent_log[0]["enable"], "debug+")

        # a broken file: nothing changes, RELOAD says where
        before = {t: m.query(t) for t in ("listener", "connector", "router.config.address")}
        self.write_conf(a, changed + "address {\n    prefix: x\n    pattern: y\n}\n")
        code, desc = m.reload()
        self.assertEqual(code, 400)
        self.assertRegex(desc, re.escape(a.conf_path) + r":\d+: address: cannot specify both")
        # and a router-wide attribute may not change
        self.write_conf(a, changed.replace("id: A", "id: B"))
        code, desc = m.reload()
        self.assertEqual(code, 400)
        self.assertIn("router attribute 'id' cannot change on a running router", desc)
        after = {t: m.query(t) for t in ("listener", "connector", "router.config.address")}
        self.assertEqual(before, after)

        # junction-manage reload says the same, and fails with it
        manage = [PYTHON, os.path.join(SOURCE_DIR, "tools", "junction-manage"), "-b", a.url,
                  "reload"]
        run = subprocess.run(manage, capture_output=True, text=True, timeout=TIMEOUT)
        self.assertNotEqual(run.returncode, 0, run)
        self.assertIn("router attribute 'id' cannot change", run.stderr)

        # the same file again: no change
        self.write_conf(a, changed)
        code, desc = m.reload()
        self.assertEqual((code, desc), (200, "no change"))
        run = subprocess.run(manage, capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual((run.returncode, run.stdout.strip()), (0, "no change"), run)


    def test_reload_edges(self):
        """What a break-it pass found, each now held: a port-0 listener is
        left alone by a reload of the same file; the path is re-read as
        given (a symlink moved to another file is followed); a FIFO is
        refused at once; a file whose addresses clash changes nothing; a
        removed connector closes only its own connection; workerThreads set
        to what runs is no change."""
        peer = self.start_router()
        base = (router_section("E") + client_listener() + LOGS +
                conf_section("listener", {"name": "zero", "host": "127.0.0.1", "port": 0}) +
                conf_section("connector", {"name": "a", "host": "127.0.0.1", "port": peer.port,
                                           "saslMechanisms": "ANONYMOUS"}))
        e = self.start_router(config=base)
        m = self.manager(e)
        mp = self.manager(peer)
        port0 = [x["port"] for x in m.query("listener", ["name", "port"]) if x["name"] == "zero"]
        self.assertEqual(m.reload(), (200, "no change"))
        self.assertEqual(port0, [x["port"] for x in m.query("listener", ["name", "port"])
                                 if x["name"] == "zero"])

        # a second connector to the same peer, from management
        code, desc, _ = m.create("connector", "b", {"host": "127.0.0.1", "port": str(peer.port),
                                                    "saslMechanisms": "ANONYMOUS"})
        self.assertEqual(code, 201, desc)

        def peer_conns():
            return [c["identity"] for c in mp.query("connection", ["identity", "container"])
                    if c["container"] == "E"]
        self.wait_for("two connections from E", lambda: len(peer_conns()) == 2)
        before = peer_conns()
        self.write_conf(e, base.replace("connector {", "# gone\nconnector_gone {", 1)
                        .split("# gone")[0])
        code, desc = m.reload()
        self.assertEqual(code, 200, desc)
        self.wait_for("one connection from E", lambda: len(peer_conns()) == 1)
        self.assertIn(peer_conns()[0], before)  # b's, untouched

        # addresses that clash: nothing changes
        now = {t: m.query(t) for t in ("listener", "connector", "router.config.address")}
        # (an exact repeat is dropped with a warning, as 1.19 does; these differ)
        self.write_conf(e, base + "address {\n    prefix: x\n}\n"
                        "address {\n    prefix: x\n    distribution: multicast\n}\n")
        code, desc = m.reload()
        self.assertEqual(code, 400, desc)
        self.assertIn("prefix 'x' is already used", desc)
        self.assertEqual(now, {t: m.query(t) for t in now})

        # workerThreads as it runs (one per core here): no change
        cores = os.cpu_count()
        self.write_conf(e, base.replace("workerThreads: 2", "workerThreads: %d" % cores))
        if cores == 2:
            code, desc = m.reload()
            self.assertNotIn("workerThreads", desc)

        # the path as given: the file started from is a symlink; moved to
        # another file, a reload follows it (as a ConfigMap update does)
        from harness import Router
        s = Router(self.workdir, name="S", config=router_section("S") + client_listener())
        real_a, real_b = s.conf_path + ".a", s.conf_path + ".b"
        os.rename(s.conf_path, real_a)
        with open(real_b, "w") as f:
            f.write(router_section("S") + client_listener().replace("{port}", str(s.port)) +
                    "address {\n    prefix: via.link\n}\n")
        os.symlink(real_a, s.conf_path)
        s.start()
        self.routers.append(s)
        self.addCleanup(self._stop_router, s)
        s.wait_ready()
        ms = self.manager(s)
        os.unlink(s.conf_path)
        os.symlink(real_b, s.conf_path)
        code, desc = ms.reload()
        self.assertEqual(code, 200, desc)
        self.assertIn("via.link", [x["prefix"] for x in
                                   ms.query("router.config.address", ["prefix"])])

        # a FIFO in place of the file: refused at once, the router goes on
        os.replace(e.conf_path, e.conf_path + ".saved")
        os.mkfifo(e.conf_path)
        code, desc = m.reload()
        self.assertEqual(code, 400)
        self.assertIn("not a regular file", desc)
        os.unlink(e.conf_path)
        os.replace(e.conf_path + ".saved", e.conf_path)


if __name__ == "__main__":
    unittest.main()
