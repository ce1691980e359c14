#!/usr/bin/python3
"""policy maxConnections (issue 15; docs/design.md "Policy"): incoming
connections past the limit are closed at accept, before any AMQP, with one
log line, as qdrouterd 1.19 does; the others are unaffected; the policy
entity shows the limit and the figures (connectionsProcessed, Denied,
Current, totalDenials). A bad value stops start-up with FILE:LINE.
"""
import json
import os
import re
import sys
import time
import unittest

from proton import ConnectionException, Timeout
from proton.utils import BlockingConnection, LinkDetached

from harness import SLOW, RouterTestCase, conf_section, run_junctiond

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
from junction.management import Client, ConnectOptions  # noqa: E402


def attempt(url):
    """None when a connection opens and a link attaches, else the error."""
    try:
        c = BlockingConnection(url, timeout=5 * SLOW)
        c.create_receiver("probe")
        c.close()
        return None
    except (ConnectionException, Timeout, OSError) as e:
        return str(e) or type(e).__name__


class PolicyMaxConnectionsTest(RouterTestCase):

    def policy(self, url):
        with Client(ConnectOptions(url=url)) as c:
            rows = c.query_dicts("policy")
        self.assertEqual(len(rows), 1, rows)
        return rows[0]

    def test_third_connection_past_a_limit_of_two_is_refused(self):
        r = self.start_router(extra=conf_section("policy", {"maxConnections": 2}))
        c1 = BlockingConnection(r.url, timeout=10 * SLOW)
        c2 = BlockingConnection(r.url, timeout=10 * SLOW)
        try:
            rx = c2.create_receiver("pol.q", credit=5)
            from proton.reactor import AtMostOnce
            tx = c2.create_sender("pol.q", options=AtMostOnce())
            self.assertIsNotNone(attempt(r.url))
            self.wait_for("the DENY log line", lambda: re.search(
                r"POLICY \(info\) DENY Connection '127\.0\.0\.1:\d+' based on global "
                r"connection count\. nConnections= 2", r.log()) is not None)
            # the open connections are unaffected (c2 sends to itself, c1 stays)
            from proton import Message
            tx.send(Message(body="still here"))
            self.assertEqual(rx.receive(timeout=10 * SLOW).body, "still here")
        finally:
            c1.close()
        # one closed: room for one more (the management client below)
        deadline = time.monotonic() + 10 * SLOW
        while True:
            try:
                p = self.policy(r.url)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        c2.close()
        self.assertEqual(p["maxConnections"], 2)
        self.assertGreaterEqual(p["connectionsDenied"], 1)
        self.assertEqual(p["totalDenials"], p["connectionsDenied"])
        self.assertEqual(p["connectionsCurrent"], 2)  # c2 and the management client
        self.assertEqual(p["connectionsProcessed"], 3 + p["connectionsDenied"])

    def test_default_limit_shown(self):
        r = self.start_router()
        p = self.policy(r.url)
        self.assertEqual(p["maxConnections"], 65535)
        self.assertEqual(p["connectionsDenied"], 0)
        self.assertEqual(p["connectionsCurrent"], 1)
        self.assertIs(p["enableVhostPolicy"], False)
        import subprocess
        tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                            "junction-stat")
        out = subprocess.run(["/usr/bin/python3", tool, "-b", r.url, "--policy"],
                             capture_output=True, text=True, timeout=20 * SLOW)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"Maximum Concurrent Connections\s+65535")
        self.assertRegex(out.stdout, r"Connections Denied\s+0")

    def test_negative_limit_stops_start_up(self):
        text = (conf_section("router", {"mode": "standalone", "id": "P"})
                + conf_section("policy", {"maxConnections": -1}))
        path = os.path.join(self.workdir, "p.conf")
        with open(path, "w") as f:
            f.write(text)
        line = 1 + [i for i, x in enumerate(text.splitlines())
                    if x.strip().startswith("maxConnections:")][0]
        p = run_junctiond(["-c", path])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("%s:%d: policy maxConnections must be from 0" % (path, line), p.stderr)

    def test_vhost_name_patterns_shown(self):
        r = self.start_router(extra=conf_section("policy", {"enableVhostNamePatterns": "yes"}))
        self.assertIs(self.policy(r.url)["enableVhostNamePatterns"], True)


def vhost_section(hostname, groups, **attrs):
    """A vhost section with its groups as the raw-JSON map 1.19 reads."""
    body = "".join("    %s: %s\n" % (k, v) for k, v in attrs.items())
    # the conf form reads a map line by line, by the '{' or '}' ending a
    # line: a group's closing brace stays last on its line, the comma goes
    # to the next
    text = re.sub(r"\},\n(\s*)", r"}\n\1, ", json.dumps(groups, indent=4))
    return "vhost {\n    hostname: %s\n%s    groups: %s\n}\n" % (
        hostname, body, text.replace("\n", "\n    "))


ALL = {"$default": {"users": "*", "remoteHosts": "*", "sources": "*", "targets": "*",
                    "allowDynamicSource": True}}
DENIED = "connection disallowed by local policy"


def refusal(url, hostname=None):
    """None when a connection opens and a link attaches, else the error
    (the close's condition in its text)."""
    try:
        kw = {"virtual_host": hostname} if hostname else {}
        c = BlockingConnection(url, timeout=5 * SLOW, **kw)
        c.create_receiver("probe")
        c.close()
        return None
    except (ConnectionException, Timeout, OSError) as e:
        return str(e) or type(e).__name__


class VhostPolicyTest(RouterTestCase):
    """vhost policy (issue 15; docs/design.md "Policy"): the vhost chosen
    by the Open's hostname, else policy.defaultVhost; its groups (users,
    remoteHosts) and connection limits checked at the Open (a denied client
    closed with amqp:resource-limit-exceeded and one POLICY log line,
    counted in the policy entity); the group's link rules at attach (a
    denied link detached with amqp:unauthorized-access, counted in
    linksDenied); policyDir files read at start, a bad one stops it with
    FILE:LINE."""

    def policy(self, url):
        with Client(ConnectOptions(url=url)) as c:
            return c.query_dicts("policy")[0]

    def test_third_connection_past_a_vhost_limit_of_two_is_refused(self):
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes"})
                              + vhost_section("$default", ALL, maxConnections=2))
        c1 = BlockingConnection(r.url, timeout=10 * SLOW)
        c2 = BlockingConnection(r.url, timeout=10 * SLOW)
        try:
            err = refusal(r.url)
            self.assertIsNotNone(err)
            self.assertIn("amqp:resource-limit-exceeded", err)
            self.assertIn(DENIED, err)
            self.wait_for("the DENY log line", lambda: re.search(
                r"POLICY \(info\) DENY AMQP Open for user 'anonymous', rhost '127\.0\.0\.1', "
                r"vhost '\$default': vhost maxConnections reached", r.log()) is not None)
            self.assertEqual(len(re.findall(r"DENY AMQP Open", r.log())), 1)
            c2.create_receiver("still.open")  # the open ones are unaffected
        finally:
            c1.close()
        # one closed: room for one more (the management client)
        deadline = time.monotonic() + 10 * SLOW
        while True:
            try:
                p = self.policy(r.url)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        c2.close()
        self.assertIs(p["enableVhostPolicy"], True)
        self.assertEqual(p["defaultVhost"], "$default")
        self.assertGreaterEqual(p["connectionsDenied"], 1)

    def test_hostname_selects_the_vhost_and_groups_rule(self):
        groups = {"admins": {"users": "anonymous", "remoteHosts": "*",
                             "maxConnectionsPerHost": 1}}
        closed = {"g": {"users": "someone", "remoteHosts": "*"}}
        far = {"$default": {"users": "*", "remoteHosts": "10.1.2.3"}}
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes",
                                                            "defaultVhost": "open.example"})
                              + vhost_section("open.example", ALL)
                              + vhost_section("one.example", groups,
                                              aliases="uno.example, eins.example")
                              + vhost_section("closed.example", closed)
                              + vhost_section("far.example", far))
        # an unknown hostname falls to defaultVhost
        self.assertIsNone(refusal(r.url, "nowhere.example"))
        # per-host limit of the user's group
        c = BlockingConnection(r.url, timeout=10 * SLOW, virtual_host="one.example")
        try:
            self.assertIn(DENIED, refusal(r.url, "one.example") or "")
            self.assertIsNone(refusal(r.url, "open.example"))
        finally:
            c.close()
        # an alias names the same vhost (and its per-host count); the close
        # above is uncounted when the router has seen it
        deadline = time.monotonic() + 10 * SLOW
        while True:
            try:
                c = BlockingConnection(r.url, timeout=10 * SLOW, virtual_host="eins.example")
                break
            except ConnectionException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        try:
            self.assertIn(DENIED, refusal(r.url, "uno.example") or "")
        finally:
            c.close()
        # anonymous is in no group and there is no $default group
        self.assertIn(DENIED, refusal(r.url, "closed.example") or "")
        # remoteHosts does not list 127.0.0.1
        self.assertIn(DENIED, refusal(r.url, "far.example") or "")
        log = r.log()
        self.assertIn("maxConnectionsPerHost reached", log)
        self.assertIn("vhost 'closed.example': user is in no user group", log)
        self.assertIn("vhost 'far.example': remote host not allowed", log)

    def test_vhost_shown_and_reload_refuses_a_change(self):
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes"})
                              + vhost_section("$default", ALL, maxConnections=5))
        from proton import Message
        from proton.utils import SyncRequestResponse
        conn = BlockingConnection(r.url, timeout=10 * SLOW)
        try:
            client = SyncRequestResponse(conn, "$management")

            def call(props, body=None):
                reply = client.call(Message(body={} if body is None else body, properties=props))
                return reply.properties["statusCode"], reply.properties["statusDescription"]
            with Client(ConnectOptions(url=r.url)) as c:
                rows = c.query_dicts("vhost")
            self.assertEqual(len(rows), 1, rows)
            self.assertEqual(rows[0]["hostname"], "$default")
            self.assertEqual(rows[0]["identity"], "vhost/$default")
            self.assertEqual(rows[0]["maxConnections"], 5)
            self.assertEqual(rows[0]["groups"], ALL)
            import subprocess
            tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools", "junction-stat")
            out = subprocess.run(["/usr/bin/python3", tool, "-b", r.url, "--vhosts"],
                                 capture_output=True, text=True, timeout=20 * SLOW)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertRegex(out.stdout, r"\$default\s+5\s+65535\s+65535\s+False\s+1")
            out = subprocess.run(["/usr/bin/python3", tool, "-b", r.url, "--vhostgroups"],
                                 capture_output=True, text=True, timeout=20 * SLOW)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertRegex(out.stdout, r"\$default\s+\$default\s+\*\s+\*")
            # a vhost made at run time (test_router_policy_limits.py has more)
            code, desc = call({"operation": "CREATE", "type": "vhost", "name": "x"},
                              {"hostname": "x"})
            self.assertEqual(code, 201, desc)
            # the same file reloads; a changed vhost is refused, nothing changes
            self.assertEqual(call({"operation": "RELOAD", "type": "router"})[0], 200)
            with open(r.conf_path) as f:
                text = f.read()
            with open(r.conf_path, "w") as f:
                f.write(text.replace("maxConnections: 5", "maxConnections: 6"))
            code, desc = call({"operation": "RELOAD", "type": "router"})
            self.assertEqual(code, 400, desc)
            self.assertIn("vhost sections cannot change on a running router", desc)
        finally:
            conn.close()

    def test_link_rules_deny_with_unauthorized_access(self):
        rules = {"$default": {"users": "*", "remoteHosts": "*",
                              "sources": "in.a, ${user}.q", "sourcePattern": "",
                              "targetPattern": "t.#, x/*/y"}}
        free = {"$default": {"users": "*", "remoteHosts": "*", "targets": "*",
                             "sources": "*", "allowAnonymousSender": True,
                             "allowDynamicSource": True}}
        # the management client below falls to the default vhost, free.example
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes",
                                                            "defaultVhost": "free.example"})
                              + vhost_section("rules.example", rules)
                              + vhost_section("free.example", free))
        c = BlockingConnection(r.url, timeout=10 * SLOW, virtual_host="rules.example")
        try:
            c.create_receiver("in.a")
            c.create_receiver("anonymous.q")  # ${user}: an anonymous client
            c.create_sender("t.x.y")
            c.create_sender("t")
            c.create_sender("x/1/y")
            denied = [("receiver", "in.b"), ("sender", "u"), ("sender", "x/1/z"),
                      ("sender", None), ("dynamic", None)]
            for kind, addr in denied:
                with self.subTest(kind=kind, addr=addr):
                    try:
                        if kind == "receiver":
                            c.create_receiver(addr)
                        elif kind == "sender":
                            c.create_sender(addr)
                        else:
                            c.create_receiver(None, dynamic=True)
                        self.fail("%s %s attached" % (kind, addr))
                    except LinkDetached as e:
                        self.assertIn("amqp:unauthorized-access", str(e))
                        self.assertIn("link disallowed by local policy", str(e))
            c.create_receiver("in.a", name="again")  # the connection stays open
        finally:
            c.close()
        # another vhost's group allows anonymous senders and dynamic sources
        c = BlockingConnection(r.url, timeout=10 * SLOW, virtual_host="free.example")
        try:
            c.create_sender(None)
            c.create_receiver(None, dynamic=True)
        finally:
            c.close()
        self.assertIn("DENY AMQP Attach receiver for user 'anonymous', rhost '127.0.0.1', "
                      "vhost 'rules.example', address 'in.b'", r.log())
        self.assertEqual(len(re.findall("DENY AMQP Attach", r.log())), 5)
        p = self.policy(r.url)
        self.assertEqual(p["linksDenied"], 5)
        self.assertEqual(p["totalDenials"], 5)
        # the closed clients are uncounted when the router has seen the
        # closes: wait until only the asking management client is open
        stats = {}

        def settled():
            with Client(ConnectOptions(url=r.url)) as m:
                stats.update({x["hostname"]: x for x in m.query_dicts("vhostStats")})
            return (stats["free.example"]["connectionsCurrent"] == 1
                    and stats["rules.example"]["connectionsCurrent"] == 0)
        self.wait_for("the closes counted", settled)
        rs = stats["rules.example"]
        self.assertEqual(rs["identity"], "vhostStats/rules.example")
        self.assertEqual((rs["connectionsApproved"], rs["connectionsDenied"],
                          rs["connectionsCurrent"]), (1, 0, 0))
        self.assertEqual((rs["senderDenied"], rs["receiverDenied"]), (3, 2))
        fs = stats["free.example"]  # the second client and the management client (open)
        self.assertEqual(fs["connectionsCurrent"], 1)
        self.assertEqual(fs["perUserState"], {"anonymous": 1})
        self.assertEqual(fs["perHostState"], {"127.0.0.1": 1})
        import subprocess
        tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                            "junction-stat")
        out = subprocess.run(["/usr/bin/python3", tool, "-b", r.url, "--vhoststats"],
                             capture_output=True, text=True, timeout=20 * SLOW)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"rules\.example\s+1\s+0\s+0\s+0\s+3\s+2\s+0")
        self.assertRegex(out.stdout, r"free\.example\s+anonymous\s+1")

    def test_listener_policy_vhost_overrides_the_hostname(self):
        from harness import free_port
        port = free_port()
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes"})
                              + vhost_section("$default", ALL)
                              + vhost_section("closed.example", ALL, maxConnections=0)
                              + conf_section("listener", {"host": "127.0.0.1", "port": port,
                                                          "policyVhost": "closed.example"}))
        other = "amqp://127.0.0.1:%d" % port
        self.assertIsNone(refusal(r.url))
        self.assertIn(DENIED, refusal(other) or "")
        self.assertIn(DENIED, refusal(other, "open.example") or "")
        self.assertIn("vhost 'closed.example': vhost maxConnections reached", r.log())

    def test_group_frame_and_session_settings_apply_to_the_connection(self):
        small = {"$default": dict(ALL["$default"], maxFrameSize=2048, maxSessions=3)}
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes"})
                              + vhost_section("$default", ALL)
                              + vhost_section("small.example", small))
        c = BlockingConnection(r.url, timeout=10 * SLOW, virtual_host="small.example")
        d = BlockingConnection(r.url, timeout=10 * SLOW)
        try:
            c.create_receiver("q")
            d.create_receiver("q")
            t = c.conn.transport
            self.assertEqual(t.remote_max_frame_size, 2048)
            self.assertEqual(t.remote_channel_max, 2)
            self.assertNotEqual(d.conn.transport.remote_max_frame_size, 2048)
        finally:
            c.close()
            d.close()

    def test_no_vhost_and_no_default_refuses(self):
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes",
                                                            "defaultVhost": "gone.example"})
                              + vhost_section("a.example", ALL))
        self.assertIsNone(refusal(r.url, "a.example"))
        self.assertIn(DENIED, refusal(r.url, "b.example") or "")

    def test_vhosts_without_enable_vhost_policy_do_not_apply(self):
        r = self.start_router(extra=vhost_section("$default", ALL, maxConnections=0))
        self.assertIsNone(refusal(r.url))

    def test_policy_dir_files_are_loaded(self):
        d = os.path.join(self.workdir, "policies")
        os.makedirs(d)
        with open(os.path.join(d, "a.json"), "w") as f:
            json.dump([["vhost", {"hostname": "$default", "maxConnections": 1,
                                  "groups": ALL}]], f, indent=2)
        with open(os.path.join(d, "notes.txt"), "w") as f:
            f.write("not a policy file\n")
        r = self.start_router(extra=conf_section("policy", {"enableVhostPolicy": "yes",
                                                            "policyDir": d}))
        c = BlockingConnection(r.url, timeout=10 * SLOW)
        try:
            self.assertIn(DENIED, refusal(r.url) or "")
        finally:
            c.close()
        deadline = time.monotonic() + 10 * SLOW
        while True:
            try:
                p = self.policy(r.url)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.assertEqual(p["policyDir"], d)

    def start_with_policy_dir(self, files):
        d = os.path.join(self.workdir, "pd")
        os.makedirs(d, exist_ok=True)
        for name, text in files.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        path = os.path.join(self.workdir, "pd.conf")
        with open(path, "w") as f:
            f.write(conf_section("router", {"mode": "standalone", "id": "P"})
                    + conf_section("policy", {"enableVhostPolicy": "yes", "policyDir": d}))
        return d, run_junctiond(["-c", path])

    def test_malformed_policy_file_stops_start_up(self):
        d, p = self.start_with_policy_dir({"bad.json": '[\n  ["vhost", {"hostname": "x",]\n]\n'})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(os.path.join(d, "bad.json") + ":2: ", p.stderr)

    def test_unsupported_group_attribute_refused_by_name(self):
        text = ('[\n  ["vhost", {"hostname": "x",\n'
                '    "groups": {"g": {"users": "*",\n      "maxWidgets": 3}}}]\n]\n')
        d, p = self.start_with_policy_dir({"v.json": text})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(os.path.join(d, "v.json") + ":4: vhost 'x' group 'g' attribute 'maxWidgets' "
                      "is not supported", p.stderr)

    def test_group_attributes_and_their_kinds_come_from_the_schema(self):
        # Every attribute of the schema's vhostUserGroupSettings (but the
        # entity's name/identity/type) is a group attribute, checked by the
        # kind the schema gives it; name/identity/type are refused by name.
        schema = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                              "router", "config", "schema.json")
        with open(schema) as f:
            types = {t["name"]: t for t in json.load(f)["entityTypes"]}
        attrs = {a["name"]: a["type"] for a in types["vhostUserGroupSettings"]["attributes"]
                 if a["name"] not in ("name", "identity", "type")}
        good = {"integer": 5, "boolean": True, "string": "a.b"}
        group = {k: good[t] for k, t in attrs.items()}
        group["sourcePattern"] = group["targetPattern"] = ""  # lists given: not both
        ok = '[\n  ["vhost", {"hostname": "x",\n    "groups": {"g": %s}}]\n]\n' % json.dumps(group)
        d = os.path.join(self.workdir, "pd")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "v.json"), "w") as f:
            f.write(ok)
        path = os.path.join(self.workdir, "pd.conf")
        with open(path, "w") as f:
            f.write(conf_section("router", {"mode": "standalone", "id": "P"})
                    + conf_section("policy", {"enableVhostPolicy": "yes", "policyDir": d}))
        p = run_junctiond(["--check", "-c", path])
        self.assertEqual(p.returncode, 0, p.stderr)
        # each kind is checked as the schema says: a word where an integer
        # or a boolean belongs is refused, naming the attribute
        bad = dict(group, maxSenders="many", allowWaypointLinks="maybe", identity="g")
        text = '[\n  ["vhost", {"hostname": "x",\n    "groups": {"g": %s}}]\n]\n' % json.dumps(bad)
        d, p = self.start_with_policy_dir({"v.json": text})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("group 'g' attribute 'maxSenders' must be an integer from 0", p.stderr)
        self.assertIn("group 'g' attribute 'allowWaypointLinks' must be true or false", p.stderr)
        self.assertIn("group 'g' attribute 'identity' is not supported", p.stderr)

    def test_other_section_in_policy_file_refused(self):
        d, p = self.start_with_policy_dir({"l.json": '[\n  ["listener", {"port": 1}]\n]\n'})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(os.path.join(d, "l.json") + ":2: section 'listener' does not belong",
                      p.stderr)


if __name__ == "__main__":
    unittest.main()
