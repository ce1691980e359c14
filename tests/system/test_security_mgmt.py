#!/usr/bin/python3
"""System tests: what management tells its clients, and what it must not.

* An sslProfile's `password` is never returned (READ, QUERY of the type,
  QUERY of every type, the answer to CREATE and UPDATE), as a connector's
  `saslPassword` is not: both are marked hidden in the schema, one rule.
* A QUERY that names the type to list in `type` instead of `entityType` is
  answered 400, as 1.19 does, with a description saying what is wrong;
  never with every entity of every type. `type` with the full name of a
  type 1.19's C agent owns still lists that type (1.19's own tests do so).
* A refused sslProfile CREATE names the attribute and the kind of
  problem, never the file's contents or whether and what exists at a
  path: a missing file, a directory, a file that is not a certificate and
  an unreadable one get the same description. The router's own log has
  the precise reason for the operator; a config file's FILE:LINE errors
  keep it too (tests/system/test_router_tls.py).
"""
import os
import re
import unittest

from harness import SLOW, RouterTestCase, conf_section
from test_http import Manager
from tls_certs import PASSWORD, shared_certs

TIMEOUT = 10 * SLOW
NODE = {"type": "org.amqp.management", "name": "self"}


class MgmtCase(RouterTestCase):
    def manager(self, r):
        m = Manager(r.url)
        self.addCleanup(m.close)
        return m

    def query(self, m, entity_type=None, names=(), props=None):
        p = dict(NODE, operation="QUERY")
        if entity_type:
            p["entityType"] = entity_type
        if props is not None:
            p = dict(props, operation="QUERY")
        return m.call(p, {"attributeNames": list(names)})


class SecretAttributes(MgmtCase):
    def test_sslprofile_password_and_sasl_password_are_never_returned(self):
        c = shared_certs()
        extra = conf_section("sslProfile", {"name": "file-prof", "certFile": c["server"],
                                            "privateKeyFile": c["server_key_enc"],
                                            "password": "pass:" + PASSWORD})
        extra += conf_section("connector", {"name": "out", "host": "127.0.0.1", "port": 1,
                                            "role": "normal", "saslUsername": "u",
                                            "saslPassword": "pass:conn-secret-1"})
        r = self.start_router(extra=extra)
        m = self.manager(r)
        code, desc, body = m.call({"operation": "CREATE", "type": "sslProfile",
                                   "name": "mgmt-prof"},
                                  {"certFile": c["server"], "privateKeyFile": c["server_key_enc"],
                                   "password": "literal:" + PASSWORD})
        self.assertEqual(code, 201, desc)
        self.assertIsNone(body.get("password"))
        self.assertEqual(body["certFile"], c["server"])
        code, desc, body = m.call({"operation": "UPDATE", "type": "sslProfile",
                                   "name": "mgmt-prof"}, {"password": "pass:" + PASSWORD})
        self.assertEqual(code, 200, desc)
        self.assertIsNone(body.get("password"))
        for name in ("file-prof", "mgmt-prof"):
            code, desc, body = m.call({"operation": "READ", "type": "sslProfile", "name": name})
            self.assertEqual(code, 200, desc)
            self.assertIsNone(body.get("password"), name)
            self.assertIn("password", body)  # the attribute is there, without its value
        code, desc, body = self.query(m, "sslProfile", ["name", "password"])
        self.assertEqual(code, 200, desc)
        self.assertEqual(sorted(body["results"]), [["file-prof", None], ["mgmt-prof", None]])
        code, desc, body = self.query(m, "connector", ["name", "saslPassword"])
        self.assertEqual(code, 200, desc)
        self.assertEqual(body["results"], [["out", None]])
        # every attribute of every type: no secret anywhere in the answer
        code, desc, body = self.query(m)
        self.assertEqual(code, 200, desc)
        text = repr(body)
        for secret in (PASSWORD, "conn-secret-1"):
            self.assertNotIn(secret, text)
        # the password still works: a TLS listener on the profile serves
        code, desc, body = m.call({"operation": "CREATE", "type": "listener", "name": "tls"},
                                  {"host": "127.0.0.1", "port": "0", "sslProfile": "mgmt-prof",
                                   "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"})
        self.assertEqual(code, 201, desc)


class QueryType(MgmtCase):
    def test_query_with_type_instead_of_entity_type_is_bad_request(self):
        r = self.start_router(extra=conf_section("address", {"prefix": "q.x",
                                                             "distribution": "closest"}))
        m = self.manager(r)
        for t in ("org.apache.qpid.dispatch.listener", "listener", "sslProfile",
                  "router.address", "org.apache.qpid.dispatch.nosuch"):
            code, desc, body = self.query(m, props={"type": t}, names=["name"])
            self.assertEqual(code, 400, (t, desc, body))
            self.assertIn("entityType", desc, t)
            self.assertIn(t, desc)
            # with a name too it is no QUERY of the management node either
            code, desc, body = self.query(m, props={"type": t, "name": "self"}, names=["name"])
            self.assertEqual(code, 400, (t, desc, body))
        # entityType says what to list; the node's type is as the tools send
        code, desc, body = self.query(m, "listener", ["name"])
        self.assertEqual(code, 200, desc)
        self.assertEqual(len(body["results"]), 1)
        code, desc, body = self.query(m, props={"entityType": "listener"}, names=["name"])
        self.assertEqual(code, 200, desc)
        # 1.19's C agent lists a type of its own named by its full name in `type`
        code, desc, body = self.query(
            m, props={"type": "org.apache.qpid.dispatch.router.config.address"},
            names=["prefix", "distribution"])
        self.assertEqual(code, 200, desc)
        self.assertEqual(body["results"], [["q.x", "closest"]])
        code, desc, body = self.query(m, props={"type": "org.apache.qpid.dispatch.router"},
                                      names=["id"])
        self.assertEqual(code, 200, desc)
        self.assertEqual(len(body["results"]), 1)


class ProfileErrors(MgmtCase):
    def test_sslprofile_create_errors_say_nothing_of_the_file_system(self):
        c = shared_certs()
        r = self.start_router()
        m = self.manager(r)
        unreadable = os.path.join(self.workdir, "unreadable.pem")
        with open(unreadable, "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\nnot really\n")
        os.chmod(unreadable, 0)
        probes = ["/nonexistent/cert.pem", "/etc/hostname", self.workdir, unreadable,
                  c["server_key"]]
        answers = set()
        for i, path in enumerate(probes):
            code, desc, body = m.call({"operation": "CREATE", "type": "sslProfile",
                                       "name": "p%d" % i}, {"certFile": path})
            self.assertEqual(code, 400, (path, desc))
            self.assertIn("certFile", desc)
            self.assertNotIn(path, desc)
            self.assertNotRegex(desc, r"(?i)no such|director|permission|PEM|/")
            answers.add(desc.replace("'p%d'" % i, "'p'"))
        self.assertEqual(len(answers), 1, answers)
        self.assertIn("cannot be read as a certificate", answers.pop())
        # the other file attributes and the password say as little
        for attrs, attr in (({"certFile": c["server"], "privateKeyFile": "/etc/hostname"},
                             "privateKeyFile"),
                            ({"certFile": c["server"], "privateKeyFile": c["client_key"]},
                             "privateKeyFile"),
                            ({"certFile": c["server"], "privateKeyFile": c["server_key"],
                              "caCertFile": "/etc/hostname"},
                             "caCertFile"),
                            ({"certFile": c["server"], "privateKeyFile": c["server_key_enc"],
                              "password": "file:/etc/hostname"}, "password"),
                            ({"certFile": c["server"], "privateKeyFile": c["server_key_enc"],
                              "password": "env:JN_TEST_NO_SUCH_VARIABLE"}, "password")):
            code, desc, body = m.call({"operation": "CREATE", "type": "sslProfile",
                                       "name": "q"}, attrs)
            self.assertEqual(code, 400, (attrs, desc))
            self.assertIn("'%s'" % attr, desc)
            self.assertNotRegex(desc, r"(?i)no such|director|permission|PEM|/|hostname|"
                                      r"JN_TEST|not set|match")
        # the operator's log has the precise reason
        self.wait_for("the refusal's detail in the router's log",
                      lambda: re.search(r"Management request refused: .*certFile.*"
                                        r"/nonexistent/cert\.pem", r.log()))


if __name__ == "__main__":
    unittest.main()
