"""The vhost policy's patterns are checked before a vhost is used
(docs/design.md "Policy"): a user group gives a list or a pattern of
addresses, not both; "${user}" in a sourcePattern/targetPattern is a whole
token, first or last; with policy.enableVhostNamePatterns a vhost whose
hostname pattern matches the same names as another's ("#.#.0.0" and
"#.0.0") is refused. The same rule at start (FILE:LINE, or the conflict)
and on a management CREATE (400, nothing created)."""

import json
import os
import sys
import unittest

from harness import SLOW, RouterTestCase, conf_section, run_junctiond
from test_router_policy import ALL, DENIED, refusal, vhost_section

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
from junction.management import Client, ConnectOptions, StatusError  # noqa: E402


def group(**attrs):
    g = {"users": "*", "remoteHosts": "*", "allowDynamicSource": True}
    g.update(attrs)
    return {"$default": g}


class VhostPatternRulesTest(RouterTestCase):

    def start_policy_router(self, patterns=False, extra=""):
        pol = {"enableVhostPolicy": "yes"}
        if patterns:
            pol["enableVhostNamePatterns"] = "yes"
        # the management client's own Open names 127.0.0.1
        return self.start_router(extra=conf_section("policy", pol)
                                 + vhost_section("127.0.0.1", ALL) + extra)

    def refused_create(self, r, body):
        with Client(ConnectOptions(url=r.url)) as m:
            with self.assertRaises(StatusError) as cm:
                m.create("vhost", None, body)
            rows = [x["hostname"] for x in m.query_dicts("vhost")]
        self.assertEqual(cm.exception.status, 400, str(cm.exception))
        self.assertNotIn(body["hostname"], rows)
        return str(cm.exception)

    def start_fails(self, text):
        path = os.path.join(self.workdir, "bad.conf")
        with open(path, "w") as f:
            f.write(conf_section("router", {"mode": "standalone", "id": "P"}) + text)
        p = run_junctiond(["-c", path])
        self.assertEqual(p.returncode, 1, p.stderr)
        return path, p.stderr

    def test_a_list_and_a_pattern_of_the_same_kind_are_refused(self):
        r = self.start_policy_router()
        for kind, pattern in (("sources", "sourcePattern"), ("targets", "targetPattern")):
            why = self.refused_create(r, {"hostname": "both.example", "groups": group(
                **{kind: "public, private", pattern: "public, private"})})
            self.assertIn("vhost 'both.example' group '$default': give '%s' or '%s', not both"
                          % (kind, pattern), why)
        # one of each kind is fine, and so is an empty rival (it allows nothing)
        with Client(ConnectOptions(url=r.url)) as m:
            m.create("vhost", None, {"hostname": "mixed.example",
                                     "groups": group(sources="a", targetPattern="b.#")})
            m.create("vhost", None, {"hostname": "empty.example",
                                     "groups": group(sources="a", sourcePattern="")})
        path, err = self.start_fails(
            conf_section("policy", {"enableVhostPolicy": "yes"})
            + vhost_section("x", group(sources="a", sourcePattern="a")))
        self.assertRegex(err, r"%s:\d+: vhost 'x' group '\$default': give 'sources' or "
                         r"'sourcePattern', not both" % path)

    def test_user_in_a_pattern_must_be_a_whole_first_or_last_token(self):
        r = self.start_policy_router()
        why = self.refused_create(r, {"hostname": "u1.example", "groups": group(
            sourcePattern="public, abc-${user}.xyz")})
        self.assertIn("attribute 'sourcePattern': 'abc-${user}.xyz': ${user} must be a whole "
                      "token", why)
        why = self.refused_create(r, {"hostname": "u2.example", "groups": group(
            targetPattern="abc/${user}.xyz")})
        self.assertIn("attribute 'targetPattern': 'abc/${user}.xyz': ${user} must be the first "
                      "or the last token", why)
        # first or last: accepted, and the user's name is put in its place
        with Client(ConnectOptions(url=r.url)) as m:
            m.create("vhost", None, {"hostname": "u3.example", "groups": group(
                sourcePattern="${user}.in, out/${user}")})
        from proton.utils import BlockingConnection
        c = BlockingConnection(r.url, timeout=10 * SLOW, virtual_host="u3.example")
        try:
            c.create_receiver("anonymous.in")
            c.create_receiver("out/anonymous")
        finally:
            c.close()
        path, err = self.start_fails(
            conf_section("policy", {"enableVhostPolicy": "yes"})
            + vhost_section("x", group(sourcePattern="a.${user}.b")))
        self.assertRegex(err, r"%s:\d+: vhost 'x' group '\$default' attribute 'sourcePattern': "
                         r"'a\.\$\{user\}\.b': \$\{user\} must be the first" % path)

    def test_hostname_pattern_matching_the_same_names_as_another_is_refused(self):
        r = self.start_policy_router(patterns=True, extra=vhost_section("#.0.0", ALL))
        why = self.refused_create(r, {"hostname": "#.#.0.0", "maxConnections": 3,
                                      "groups": ALL})
        self.assertIn("vhost hostname '#.#.0.0': the pattern conflicts with vhost '#.0.0'", why)
        # the vhost that was there still takes its names
        self.assertIsNone(refusal(r.url, "10.1.0.0"))
        # a pattern of other names is fine
        with Client(ConnectOptions(url=r.url)) as m:
            m.create("vhost", None, {"hostname": "*.1.0.0", "groups": ALL})
        # at start: the second of two such vhosts stops it
        _, err = self.start_fails(
            conf_section("policy", {"enableVhostPolicy": "yes",
                                    "enableVhostNamePatterns": "yes"})
            + vhost_section("#.0.0", ALL) + vhost_section("#.*.x", ALL)
            + vhost_section("*.#.x", ALL))
        self.assertIn("vhost hostname '*.#.x': the pattern conflicts with vhost '#.*.x'", err)
        # and --check says so, for the file's vhosts and policyDir's
        d = os.path.join(self.workdir, "pd")
        os.makedirs(d)
        with open(os.path.join(d, "v.json"), "w") as f:
            json.dump([["vhost", {"hostname": "#.#.0.0", "groups": ALL}]], f)
        path = os.path.join(self.workdir, "check.conf")
        with open(path, "w") as f:
            f.write(conf_section("router", {"mode": "standalone", "id": "P"})
                    + conf_section("policy", {"enableVhostPolicy": "yes", "policyDir": d,
                                              "enableVhostNamePatterns": "yes"})
                    + vhost_section("#.0.0", ALL))
        p = run_junctiond(["--check", "-c", path])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        # as a start says it: FILE:LINE of the hostname (a policyDir file's own)
        self.assertIn("v.json:1: vhost hostname '#.#.0.0': the pattern conflicts with vhost "
                      "'#.0.0'", p.stderr)
        with open(path, "a") as f:
            f.write(vhost_section("#.#.x", ALL) + vhost_section("#.x", ALL))
        p = run_junctiond(["--check", "-c", path])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertRegex(p.stderr, r"check\.conf:\d+: vhost hostname '#\.x': the pattern "
                         r"conflicts with vhost '#\.#\.x'")

    def test_without_name_patterns_a_hash_is_an_ordinary_octet(self):
        r = self.start_policy_router(extra=vhost_section("#.0.0", ALL))
        with Client(ConnectOptions(url=r.url)) as m:
            m.create("vhost", None, {"hostname": "#.#.0.0", "groups": ALL})
            rows = [x["hostname"] for x in m.query_dicts("vhost")]
        self.assertIn("#.#.0.0", rows)
        self.assertIn(DENIED, refusal(r.url, "10.1.0.0") or "")


if __name__ == "__main__":
    unittest.main()
