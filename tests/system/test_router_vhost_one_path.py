#!/usr/bin/python3
"""A vhost goes through the entity path's one check and one apply whichever
way it comes (docs/design.md "Policy"): a section of the config file, a
policyDir file, or a management CREATE or UPDATE. Each vhost the file
refuses is refused by a CREATE with the same words (the file as
FILE:LINE: text, management as a 400 whose description is the text), and
each vhost a CREATE takes starts a router from a file, and is then shown
alike."""

import json
import os
import re
import unittest

from harness import RouterTestCase, conf_section, run_junctiond
from test_router_policy import ALL, vhost_section
from test_router_policy_patterns import group  # also puts python/ on the path

from junction.management import Client, ConnectOptions, StatusError  # noqa: E402


# (vhost attributes, what is wrong) for vhosts every way refuses
REFUSED = [
    ({"groups": group(maxWidgets=1)},
     "vhost '{h}' group '$default' attribute 'maxWidgets' is not supported by this version of "
     "junctiond"),
    ({"groups": group(maxSenders=-1)},
     "vhost '{h}' group '$default' attribute 'maxSenders' must be an integer from 0"),
    ({"groups": group(maxSessions="ten")},
     "vhost '{h}' group '$default' attribute 'maxSessions' must be an integer from 0"),
    ({"groups": group(allowWaypointLinks="maybe")},
     "vhost '{h}' group '$default' attribute 'allowWaypointLinks' must be true or false"),
    ({"groups": group(users=5)},
     "vhost '{h}' group '$default' attribute 'users' must be a comma-separated string"),
    ({"groups": {"$default": "everyone"}},
     "vhost '{h}' group '$default' must be a map"),
    ({"groups": group(sources="a", sourcePattern="b")},
     "vhost '{h}' group '$default': give 'sources' or 'sourcePattern', not both"),
    ({"groups": group(targetPattern="abc/${user}.xyz")},
     "vhost '{h}' group '$default' attribute 'targetPattern': 'abc/${user}.xyz': ${user} must "
     "be the first or the last token"),
    # a list longer than a management name may be is checked all the same
    ({"groups": group(targetPattern="x" * 1100 + ", abc/${user}.xyz")},
     "vhost '{h}' group '$default' attribute 'targetPattern': 'abc/${user}.xyz': ${user} must "
     "be the first or the last token"),
    ({"maxMessageSize": -1, "groups": ALL},
     "vhost '{h}' attribute 'maxMessageSize' must be an integer from 0"),
]

# vhosts every way takes: 1.19's spellings of a group's values included
ACCEPTED = [
    {"groups": group(maxSenders="10", allowWaypointLinks="FALSE", sourcePattern="a.#")},
    {"groups": group(sources="a", sourcePattern="")},
    {"maxMessageSize": 0, "maxConnections": 3, "aliases": "x.example", "groups": ALL},
    {"groups": {"$default": {"users": "*", "remoteHosts": "*", "maxConnections": 2},
                "admins": {"users": "root", "remoteHosts": "*", "maxFrameSize": 1024}}},
]

POLICY = {"enableVhostPolicy": "yes", "defaultVhost": "none"}


class VhostOnePathTest(RouterTestCase):

    def start_fails(self, text, policy_dir=None):
        path = os.path.join(self.workdir, "bad.conf")
        pol = dict(POLICY, policyDir=policy_dir) if policy_dir else POLICY
        with open(path, "w") as f:
            f.write(conf_section("router", {"mode": "standalone", "id": "V"})
                    + conf_section("policy", pol) + text)
        p = run_junctiond(["-c", path])
        self.assertEqual(p.returncode, 1, p.stderr)
        return path, p.stderr

    def policy_dir_file(self, name, body):
        d = os.path.join(self.workdir, name)
        os.makedirs(d)
        path = os.path.join(d, "v.json")
        with open(path, "w") as f:
            json.dump([["vhost", body]], f, indent=1)
        return d, path

    def test_file_policy_dir_and_create_refuse_alike(self):
        r = self.start_router(extra=conf_section("policy", POLICY)
                              + vhost_section("127.0.0.1", ALL))
        for i, (attrs, wrong) in enumerate(REFUSED):
            host = "bad%d.example" % i
            text = wrong.replace("{h}", host)
            body = dict(attrs, hostname=host)
            with self.subTest(text=text):
                # management: a 400 whose description is the text, nothing made
                with Client(ConnectOptions(url=r.url)) as m:
                    with self.assertRaises(StatusError) as cm:
                        m.create("vhost", None, body)
                    rows = [x["hostname"] for x in m.query_dicts("vhost")]
                self.assertEqual(cm.exception.status, 400)
                self.assertEqual(cm.exception.description, text)
                self.assertNotIn(host, rows)
                # the config file: FILE:LINE: the text
                extra = {k: v for k, v in attrs.items() if k != "groups"}
                path, err = self.start_fails(vhost_section(host, attrs["groups"], **extra))
                self.assertRegex(err, r"(^|\n)%s:\d+: %s\n" % (re.escape(path), re.escape(text)))
                # a policyDir file: the same
                d, path = self.policy_dir_file("pd%d" % i, body)
                _, err = self.start_fails("", policy_dir=d)
                self.assertRegex(err, r"(^|\n)%s:\d+: %s\n" % (re.escape(path), re.escape(text)))

    def test_an_update_refuses_as_a_create_does(self):
        r = self.start_router(extra=conf_section("policy", POLICY)
                              + vhost_section("127.0.0.1", ALL)
                              + vhost_section("u.example", ALL, maxConnections=4))
        with Client(ConnectOptions(url=r.url)) as m:
            for attrs, wrong in REFUSED:
                with self.assertRaises(StatusError) as cm:
                    m.update("vhost", "u.example", None, attrs)
                self.assertEqual(cm.exception.status, 400)
                self.assertEqual(cm.exception.description, wrong.replace("{h}", "u.example"))
            rows = {x["hostname"]: x for x in m.query_dicts("vhost")}
        # nothing changed
        self.assertEqual(rows["u.example"]["maxConnections"], 4)
        self.assertEqual(rows["u.example"]["groups"], ALL)

    def test_a_group_with_several_faults_answers_the_first_alone(self):
        """The file lists each fault of a vhost on its own line; a CREATE
        answers with the first one's text alone (it answered every line,
        the later ones naming an internal file 'vhost.json:1:')."""
        r = self.start_router(extra=conf_section("policy", POLICY)
                              + vhost_section("127.0.0.1", ALL))
        g = group(maxSenders=-1, allowWaypointLinks="maybe")
        with Client(ConnectOptions(url=r.url)) as m:
            with self.assertRaises(StatusError) as cm:
                m.create("vhost", None, {"hostname": "two.example", "groups": g})
        self.assertEqual(cm.exception.description,
                         "vhost 'two.example' group '$default' attribute 'maxSenders' must be an "
                         "integer from 0")
        path, err = self.start_fails(vhost_section("two.example", g))
        self.assertIn("attribute 'maxSenders' must be an integer from 0", err)
        self.assertIn("attribute 'allowWaypointLinks' must be true or false", err)

    def test_file_and_create_take_alike(self):
        lines = "".join(vhost_section("ok%d.example" % i, a["groups"],
                                      **{k: v for k, v in a.items() if k != "groups"})
                        for i, a in enumerate(ACCEPTED))
        from_file = self.start_router(extra=conf_section("policy", POLICY)
                                      + vhost_section("127.0.0.1", ALL) + lines)
        by_mgmt = self.start_router(extra=conf_section("policy", POLICY)
                                    + vhost_section("127.0.0.1", ALL))
        with Client(ConnectOptions(url=by_mgmt.url)) as m:
            for i, a in enumerate(ACCEPTED):
                m.create("vhost", None, dict(a, hostname="ok%d.example" % i))
            made = {x["hostname"]: x for x in m.query_dicts("vhost")}
        with Client(ConnectOptions(url=from_file.url)) as m:
            read = {x["hostname"]: x for x in m.query_dicts("vhost")}
        for i in range(len(ACCEPTED)):
            host = "ok%d.example" % i
            for attr in ("identity", "name", "maxConnections", "maxMessageSize", "aliases",
                         "allowUnknownUser", "groups"):
                self.assertEqual(made[host][attr], read[host][attr], (host, attr))

    def test_a_hostname_pattern_conflict_is_refused_alike(self):
        pol = dict(POLICY, enableVhostNamePatterns="yes")
        r = self.start_router(extra=conf_section("policy", pol)
                              + vhost_section("127.0.0.1", ALL) + vhost_section("#.0.0", ALL))
        text = ("vhost hostname '#.#.0.0': the pattern conflicts with vhost '#.0.0' (both match "
                "the same names)")
        with Client(ConnectOptions(url=r.url)) as m:
            with self.assertRaises(StatusError) as cm:
                m.create("vhost", None, {"hostname": "#.#.0.0", "groups": ALL})
        self.assertEqual(cm.exception.description, text)
        path = os.path.join(self.workdir, "conflict.conf")
        with open(path, "w") as f:
            f.write(conf_section("router", {"mode": "standalone", "id": "V"})
                    + conf_section("policy", pol)
                    + vhost_section("#.0.0", ALL) + vhost_section("#.#.0.0", ALL))
        p = run_junctiond(["-c", path])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, r"%s:\d+: %s" % (re.escape(path), re.escape(text)))


if __name__ == "__main__":
    unittest.main()
