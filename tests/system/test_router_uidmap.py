#!/usr/bin/python3
"""sslProfile uidNameMappingFile (issue 15): read with the configuration's
JSON reader (escapes, \\u included, as the JSON configuration form), checked
by the entity path: a malformed file stops start-up with the config file's
FILE:LINE and the map's own PATH:LINE, and is a 400 naming the attribute at
CREATE and UPDATE (the old profile stays). An EXTERNAL client whose
certificate uid is in the map is shown under the mapped name.
"""
import json
import os
import re
import unittest

from proton import SSLDomain

from harness import conf_section, free_port, run_junctiond
from tls_certs import shared_certs
from test_router_sasl import SaslTestCase, connect

from junction.management import Client, ConnectOptions, StatusError  # noqa: E402


class UidMapTest(SaslTestCase):

    def write(self, name, text):
        path = os.path.join(self.workdir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def profile(self, mapping):
        certs = shared_certs()
        return {"name": "srv", "certFile": certs["server"],
                "privateKeyFile": certs["server_key"], "caCertFile": certs["ca"],
                "uidFormat": "on", "uidNameMappingFile": mapping}

    def test_external_user_mapped_through_an_escaped_name(self):
        certs = shared_certs()
        # "Junction;client" (uidFormat o, n) -> "cl\u00efent \"one\""
        mapping = self.write("map.json", '{"other": "x",\n "Junction;client": '
                                         '"cl\\u00efent \\"one\\""}\n')
        r = self.sasl_router({"saslMechanisms": "EXTERNAL", "authenticatePeer": "yes",
                              "sslProfile": "srv", "requireSsl": "yes"},
                             extra=conf_section("sslProfile", self.profile(mapping)))
        d = SSLDomain(SSLDomain.MODE_CLIENT)
        d.set_trusted_ca_db(certs["ca"])
        d.set_credentials(certs["client"], certs["client_key"], None)
        d.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
        c = connect("amqps://127.0.0.1:%d" % r.port, mechs="EXTERNAL", domain=d)
        try:
            c.create_receiver("q")
            mine = [x for x in self.connections() if x["isEncrypted"]]
            self.assertEqual(len(mine), 1, self.connections())
            self.assertEqual(mine[0]["user"], "cl\u00efent \"one\"")
        finally:
            c.close()

    def test_malformed_map_stops_start_up_with_both_lines(self):
        cases = [('{"a": "b",\n "c": 7}\n', r":2: the value of 'c' is not a string"),
                 ('{"a": "b"\n', r":1: invalid JSON"),
                 ('["a"]', r":1: uidNameMappingFile is not a JSON object")]
        for text, why in cases:
            mapping = self.write("bad.json", text)
            conf = (conf_section("router", self.router_section())
                    + conf_section("sslProfile", self.profile(mapping)))
            path = self.write("r.conf", conf)
            line = 1 + [i for i, x in enumerate(conf.splitlines())
                        if x.strip().startswith("uidNameMappingFile:")][0]
            p = run_junctiond(["-c", path])
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertRegex(p.stderr, re.escape("%s:%d: " % (path, line)) + r".*"
                             + re.escape("uidNameMappingFile") + r".*"
                             + re.escape(mapping) + why)
        missing = os.path.join(self.workdir, "none.json")
        conf = (conf_section("router", self.router_section())
                + conf_section("sslProfile", self.profile(missing)))
        p = run_junctiond(["-c", self.write("r2.conf", conf)])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("%s: uidNameMappingFile could not be opened" % missing, p.stderr)

    def test_malformed_map_at_create_and_update_is_a_400(self):
        good = self.write("good.json", json.dumps({"a": "b"}))
        bad = self.write("bad.json", '{"a": ["b"]}')
        self.sasl_router({"saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"},
                         extra=conf_section("sslProfile", self.profile(good)))
        with Client(ConnectOptions(url=self.mgmt_url)) as c:
            attrs = dict(self.profile(bad))
            attrs.pop("name")
            with self.assertRaises(StatusError) as e:
                c.create("sslProfile", "srv2", attrs)
            self.assertEqual(e.exception.status, 400)
            self.assertIn("uidNameMappingFile", str(e.exception))
            # the client is told the attribute and the kind of problem, not
            # what the file holds (docs/compat.md); the detail is the log's
            self.assertIn("cannot be read as a JSON object of strings", str(e.exception))
            self.assertNotIn("'a'", str(e.exception))
            self.wait_for("the detail in the log",
                          lambda: "the value of 'a' is not a string" in self.routers[0].log())
            with self.assertRaises(StatusError) as e:
                c.update("sslProfile", "srv", None, {"uidNameMappingFile": bad})
            self.assertEqual(e.exception.status, 400)
            self.assertIn("uidNameMappingFile", str(e.exception))
            rows = [x for x in c.query_dicts("sslProfile") if x["name"] == "srv"]
            self.assertEqual(rows[0]["uidNameMappingFile"], good)


if __name__ == "__main__":
    unittest.main()
