#!/usr/bin/python3
"""Bad input gets a clear error, the same from every way in (docs/design.md
"The entity path"): the config file stops start-up with FILE:LINE: text, a
management CREATE or UPDATE answers 400 with the text and changes nothing,
a reload answers 400 with FILE:LINE: text and keeps the old configuration
running. One case per gap this module closes:

- a listener's or connector's idleTimeoutSeconds (and its other counts and
  timeouts) below 0; a vhost's maxConnections, maxConnectionsPerUser or
  maxConnectionsPerHost outside 1.19's 0..65535 (a group's maxSessions 0
  stays valid: it means "the listener's");
- an autoLink whose externalAddress is the empty string;
- a linkRoute prefix ending in '.' routes the addresses below it, as 1.19
  reads "org.apache." (a prefix of separators only is refused);
- an attribute set twice in one section of the file;
- a policyDir vhost whose hostname the file or an earlier policyDir file
  defined already (start-up and `junctiond --check`).

Real junctiond processes and proton clients on 127.0.0.1; waits bounded.
"""
import json
import os
import re
import unittest

from proton import Message
from proton.utils import BlockingConnection

from harness import SLOW, RouterTestCase, conf_section, container_listener, run_junctiond
from test_router_entities import LOGS, Manager, client_listener, router_section
from test_router_linkroute_container_role import Peer, link_routes
from test_router_policy import ALL, vhost_section

TIMEOUT = 15 * SLOW
AL = "org.apache.qpid.dispatch.router.config.autoLink"
LR = "org.apache.qpid.dispatch.router.config.linkRoute"
# the vhost policy on, every client (management's too) let in
POLICY = conf_section("policy", {"enableVhostPolicy": "yes"}) + vhost_section("$default", ALL)

# (section, attributes, management type, the attribute named, the text)
REFUSED = [
    ("listener", {"name": "bad", "port": "0", "idleTimeoutSeconds": "-1"}, "listener",
     "idleTimeoutSeconds", "listener attribute 'idleTimeoutSeconds' must be from 0 to 4294967"),
    ("connector", {"host": "127.0.0.1", "port": "1", "idleTimeoutSeconds": "-1"}, "connector",
     "idleTimeoutSeconds", "connector attribute 'idleTimeoutSeconds' must be from 0 to 4294967"),
    ("connector", {"host": "127.0.0.1", "port": "1", "maxSessions": "-5"}, "connector",
     "maxSessions", "connector attribute 'maxSessions' must be from 0 to 4294967295"),
    ("vhost", {"hostname": "v1", "maxConnections": "-1"}, "vhost", "maxConnections",
     "vhost 'v1' attribute 'maxConnections' must be an integer from 0 to 65535"),
    ("vhost", {"hostname": "v2", "maxConnectionsPerUser": "70000"}, "vhost",
     "maxConnectionsPerUser",
     "vhost 'v2' attribute 'maxConnectionsPerUser' must be an integer from 0 to 65535"),
    ("linkRoute", {"prefix": "./", "direction": "in"}, LR, "prefix",
     "linkRoute: attribute 'prefix' has no tokens"),
]


def json_value(text):
    """A management value from the conf form's text."""
    try:
        return int(text)
    except ValueError:
        return text


class ValidationGapsTest(RouterTestCase):

    def manager(self, router):
        m = Manager(router.url)
        self.addCleanup(m.close)
        return m

    def write(self, name, text):
        """A file to start from (its client listener on port 0)."""
        path = os.path.join(self.workdir, name)
        with open(path, "w") as f:
            f.write(text.replace("{port}", "0"))
        return path

    def start_fails(self, path):
        p = run_junctiond(["-c", path])
        self.assertEqual(p.returncode, 1, p.stderr)
        return p.stderr

    def line_of(self, path, text):
        with open(path) as f:
            return [i for i, x in enumerate(f, 1) if text in x][0]

    def test_counts_limits_and_prefixes_refused_alike(self):
        """File, CREATE and reload refuse each with the same text."""
        good = router_section("R") + client_listener() + LOGS + POLICY
        r = self.start_router(config=good)
        m = self.manager(r)
        before = {t: m.query(t) for t in ("listener", "connector", "vhost", LR)}
        for section, attrs, mtype, attr, text in REFUSED:
            with self.subTest(text=text):
                bad = conf_section(section, attrs)
                # the file: FILE:LINE (the attribute's line): the text
                path = self.write("bad.conf", good + bad)
                line = self.line_of(path, "%s: %s" % (attr, attrs[attr]))
                self.assertIn("%s:%d: %s\n" % (path, line, text), self.start_fails(path))
                # management: a 400 whose description is the text
                body = {k: json_value(v) for k, v in attrs.items() if k != "name"}
                code, desc, _ = m.create(mtype, "x-" + attr, body)
                self.assertEqual((code, desc), (400, text))
                # reload: refused with FILE:LINE, nothing changes
                with open(r.conf_path, "w") as f:
                    f.write(good.replace("{port}", str(r.port)) + bad)
                code, desc = m.reload()
                self.assertEqual(code, 400)
                self.assertIn("%s:%d: %s" % (r.conf_path, line, text), desc)
        self.assertEqual(before, {t: m.query(t) for t in before})

    def test_vhost_update_refuses_a_negative_limit(self):
        r = self.start_router(config=router_section("R") + client_listener() + LOGS + POLICY
                              + conf_section("vhost", {"hostname": "u1", "maxConnections": 4}))
        m = self.manager(r)
        code, desc, _ = m.call({"operation": "UPDATE", "type": "vhost", "name": "u1"},
                               {"maxConnections": -1})
        self.assertEqual((code, desc),
                         (400, "vhost 'u1' attribute 'maxConnections' must be an integer from 0 "
                               "to 65535"))
        code, desc, _ = m.call({"operation": "UPDATE", "type": "vhost", "name": "u1"},
                               {"groups": {"g": {"users": "*", "maxConnectionsPerHost": -1}}})
        self.assertEqual((code, desc),
                         (400, "vhost 'u1' group 'g' attribute 'maxConnectionsPerHost' must be "
                               "an integer from 0 to 65535"))
        self.assertEqual([x["maxConnections"] for x in m.query("vhost")
                          if x["hostname"] == "u1"], [4])

    def test_group_max_sessions_zero_means_the_listeners(self):
        """1.19: a group's maxSessions of 0 leaves the listener's value; file
        and CREATE both take it."""
        groups = {"$default": dict(ALL["$default"], maxSessions=0)}
        r = self.start_router(config=router_section("R") + client_listener() + LOGS + POLICY
                              + vhost_section("z1", groups))
        m = self.manager(r)
        code, desc, _ = m.create("vhost", None, {"hostname": "z2", "groups": groups})
        self.assertEqual(code, 201, desc)
        c = BlockingConnection(r.url, timeout=TIMEOUT, virtual_host="z1")
        c.close()

    def test_empty_external_address_refused(self):
        text = "autoLink: attribute 'externalAddress' must not be empty (leave it out to use " \
               "'address')"
        # the file (the JSON form: the conf form cannot write an empty value)
        sections = [["router", {"mode": "standalone", "id": "E"}],
                    ["autoLink", {"address": "q", "direction": "in", "containerId": "b",
                                  "externalAddress": ""}]]
        path = self.write("e.json", json.dumps(sections, indent=1))
        line = self.line_of(path, '"externalAddress"')
        self.assertIn("%s:%d: %s\n" % (path, line, text), self.start_fails(path))
        # CREATE
        good = router_section("R") + client_listener() + LOGS
        r = self.start_router(config=good)
        m = self.manager(r)
        code, desc, _ = m.create(AL, "al", {"address": "q", "direction": "in",
                                            "containerId": "b", "externalAddress": ""})
        self.assertEqual((code, desc), (400, text))
        self.assertEqual(m.query(AL), [])
        # a non-empty one is taken
        code, desc, _ = m.create(AL, "al", {"address": "q", "direction": "in",
                                            "containerId": "b", "externalAddress": "ext.q"})
        self.assertEqual(code, 201, desc)

    def test_attribute_set_twice_refused(self):
        text = "listener attribute 'port' is set twice in one section (first at line %d)"
        good = router_section("R") + client_listener() + LOGS
        bad = "listener {\n    host: 127.0.0.1\n    port: 1\n    port: 2\n}\n"
        path = self.write("twice.conf", good + bad)
        first, second = self.line_of(path, "port: 1"), self.line_of(path, "port: 2")
        self.assertIn("%s:%d: %s\n" % (path, second, text % first), self.start_fails(path))
        # reload: refused, the old listeners stay
        r = self.start_router(config=good)
        m = self.manager(r)
        before = m.query("listener")
        with open(r.conf_path, "w") as f:
            f.write(good.replace("{port}", str(r.port)) + bad)
        code, desc = m.reload()
        self.assertEqual(code, 400)
        self.assertIn("%s:%d: %s" % (r.conf_path, second, text % first), desc)
        self.assertEqual(m.query("listener"), before)

    def test_prefix_ending_in_a_dot_routes_below_it(self):
        """1.19's link-route tests route "org.apache.dev" by the prefix
        "org.apache.": the separator at the end is dropped."""
        r = self.start_router(config=router_section("R") + client_listener() +
                              container_listener() + LOGS +
                              link_routes("lrq.", containerId="broker"))
        broker = Peer(r.container_url, "broker").start()
        self.addCleanup(broker.stop)
        m = self.manager(r)
        self.wait_for("the link routes active",
                      lambda: sorted(x["operStatus"] for x in m.query(LR, ["operStatus"]))
                      == ["active", "active"], TIMEOUT)
        self.assertEqual(sorted(x["prefix"] for x in m.query(LR, ["prefix"])),
                         ["lrq.", "lrq."])  # shown as written
        c = BlockingConnection(r.url, timeout=TIMEOUT)
        self.addCleanup(c.close)
        c.create_sender("lrq.x").send(Message(body="routed"), timeout=TIMEOUT)
        self.wait_for("the broker's message", lambda: broker.snapshot()[1], TIMEOUT)
        self.assertEqual(broker.snapshot()[1], [("lrq.x", "routed")])

    def test_address_prefix_ending_in_a_dot_is_deleted(self):
        """An address prefix "q." is the prefix "q" (the same rule): a
        DELETE removes it, so "q" can be created after."""
        r = self.start_router(config=router_section("R") + client_listener() + LOGS)
        m = self.manager(r)
        addr = "org.apache.qpid.dispatch.router.config.address"
        code, desc, _ = m.create(addr, "a1", {"prefix": "q.", "distribution": "multicast"})
        self.assertEqual(code, 201, desc)
        code, desc, _ = m.create(addr, "a2", {"prefix": "q", "distribution": "closest"})
        self.assertEqual(code, 400, desc)  # the same addresses as a1's
        code, desc, _ = m.call({"operation": "DELETE", "type": addr, "name": "a1"})
        self.assertEqual(code, 204, desc)
        code, desc, _ = m.create(addr, "a2", {"prefix": "q", "distribution": "closest"})
        self.assertEqual(code, 201, desc)

    def test_policy_dir_that_cannot_be_read_refused_at_its_line(self):
        missing = os.path.join(self.workdir, "no-such-dir")
        path = self.write("nodir.conf", router_section("R") + client_listener() + LOGS +
                          conf_section("policy", {"policyDir": missing}))
        want = "%s:%d: policy attribute 'policyDir' ('%s') cannot be read: " % (
            path, self.line_of(path, "policyDir"), missing)
        self.assertIn(want, self.start_fails(path))
        check = run_junctiond(["-c", path, "--check"])
        self.assertEqual(check.returncode, 1, check.stdout)
        self.assertIn(want, check.stderr)

    def test_policy_dir_hostname_defined_twice_refused(self):
        pd = os.path.join(self.workdir, "pd")
        os.makedirs(pd)
        a = os.path.join(pd, "a.json")
        with open(a, "w") as f:
            json.dump([["vhost", {"hostname": "h1", "groups": ALL}]], f, indent=1)
        base = (router_section("R") + client_listener() + LOGS +
                conf_section("policy", {"enableVhostPolicy": "yes", "policyDir": pd,
                                        "defaultVhost": "h1"}))
        # the file's vhost first, then a policyDir file's of the same hostname
        path = self.write("dup.conf", base + conf_section("vhost", {"hostname": "h1"}))
        first = self.line_of(path, "hostname: h1")
        want = "%s:%d: vhost hostname 'h1' is defined twice (first at %s:%d)\n" % (
            a, self.line_of(a, '"hostname"'), path, first)
        self.assertIn(want, self.start_fails(path))
        check = run_junctiond(["-c", path, "--check"])
        self.assertEqual(check.returncode, 1, check.stdout)
        self.assertIn(want, check.stderr)
        # two policyDir files of one hostname
        b = os.path.join(pd, "b.json")
        with open(b, "w") as f:
            json.dump([["vhost", {"hostname": "h1"}]], f, indent=1)
        path = self.write("two.conf", base)
        want = "%s:%d: vhost hostname 'h1' is defined twice (first at %s:%d)\n" % (
            b, self.line_of(b, '"hostname"'), a, self.line_of(a, '"hostname"'))
        self.assertIn(want, self.start_fails(path))
        self.assertIn(want, run_junctiond(["-c", path, "--check"]).stderr)
        # one of each: the router starts
        os.remove(b)
        self.start_router(config=base)


if __name__ == "__main__":
    unittest.main()
