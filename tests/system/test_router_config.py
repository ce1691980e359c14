#!/usr/bin/python3
"""System tests: junctiond's configuration file (issue 3, "The daemon").

A qdrouterd 1.19 style file starts unchanged and routes; a bad file stops
start-up with `FILE:LINE: what is wrong` and a non-zero exit; a section the
router does not implement is refused by name.
"""
import os
import re
import signal
import unittest

from harness import (CLOSE, STOP_TIMEOUT, SLOW, RawClient, Recv, RouterTestCase, Send, Traffic,
                     run_junctiond, seq_message, seqs)

QDROUTERD_STYLE = """\
# A configuration written for qdrouterd 1.19, used unchanged.
#   - whole-line comments, blank lines and trailing comments
#   - camelCase, hyphenated and underscored attribute names
#   - the section opener without a blank, `}` followed by a comment

router {
    mode: standalone          # the only mode a single router needs
    id: Router.Style-1
    worker-threads: 2
}

listener{
    host: 127.0.0.1
    port: {port}
    role: normal
    sasl-mechanisms: ANONYMOUS
    authenticate_peer: no
    idleTimeoutSeconds: 16
    max-frame-size: 16384
    linkCapacity: 250
} # end of listener

address {
    prefix: style.multi
    distribution: multicast
}

address {
    pattern: style.*.closest
    distribution: closest
}

log {
    module: DEFAULT
    enable: info+
    includeTimestamp: yes
    outputFile: stderr
}

log {
    module: ROUTER_CORE
    enable: warning+
}
"""

# name -> (configuration text, line of the mistake)
BAD = {
    "unknown attribute": ("router {\n    mode: standalone\n}\nlistener {\n    host: 127.0.0.1\n"
                          "    port: 5999\n    bogusAttr: 5\n}\n", 7),
    "boolean not yes/no": ("listener {\n    host: 127.0.0.1\n    port: 5999\n"
                           "    authenticatePeer: 1\n}\n", 4),
    "enum value of the wrong case": ("router {\n    id: A\n    mode: Standalone\n}\n", 3),
    "integer that is not one": ("router {\n    mode: standalone\n    workerThreads: many\n}\n",
                                3),
    "unknown section": ("router {\n    mode: standalone\n}\n\nrouterx {\n    id: B\n}\n", 5),
    "quoted value": ("listener {\n    port: 5999\n    host: \"127.0.0.1\"\n}\n", 3),
    # Values the schema allows but the router cannot use: refused at start-up
    # (qdrouterd 1.19 logs some of these and runs on without the entity).
    "too many worker threads": ("router {\n    mode: standalone\n    workerThreads: 100000\n}\n",
                                3),
    "negative worker threads": ("router {\n    workerThreads: -3\n}\n", 2),
    "negative maxMessageSize": ("policy {\n    maxMessageSize: -5\n}\n", 2),
    "address with prefix and pattern": ("address {\n    prefix: a\n    pattern: b.*\n}\n", 1),
    "port that is not a port": ("listener {\n    host: 127.0.0.1\n    port: notaport\n}\n", 3),
    "port out of range": ("listener {\n    host: 127.0.0.1\n    port: 99999\n}\n", 3),
    # the mesh: cost travels as an AMQP int and is summed along paths
    "cost zero": ("router {\n    mode: interior\n    id: A\n}\nconnector {\n    host: 127.0.0.1\n"
                  "    port: 5999\n    role: inter-router\n    cost: 0\n}\n", 9),
    "cost beyond an int": ("router {\n    mode: interior\n    id: A\n}\nlistener {\n"
                           "    host: 127.0.0.1\n    port: 5999\n    role: inter-router\n"
                           "    cost: 2147483648\n}\n", 9),
    "inter-router on a standalone router": ("router {\n    mode: standalone\n}\nlistener {\n"
                                            "    port: 5999\n    role: inter-router\n}\n", 6),
    "router id with a slash": ("router {\n    mode: interior\n    id: a/b\n}\n", 3),
}


class ConfigFileTest(RouterTestCase):

    def test_qdrouterd_style_config_starts_unchanged_and_routes(self):
        r = self.start_router(config=QDROUTERD_STYLE)
        # It does its job: a multicast prefix from the file is in force.
        rx = [Recv("style.multi.a") for _ in range(2)]
        tx = Send("style.multi.a", [seq_message(i) for i in range(10)])
        self.run_scenario(Traffic(r, rx, [tx], expect=20))
        for x in rx:
            self.assertEqual(seqs(x.messages), list(range(10)))

    def write(self, name, text):
        path = os.path.join(self.workdir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_bad_config_exits_nonzero_with_file_and_line(self):
        for what, (text, line) in BAD.items():
            with self.subTest(what):
                path = self.write("bad.conf", text)
                p = run_junctiond(["-c", path])
                self.assertNotEqual(p.returncode, 0, "%s: junctiond accepted %r\nstderr: %s"
                                    % (what, text, p.stderr))
                self.assertIn("%s:%d:" % (path, line), p.stderr,
                              "%s: stderr does not name %s:%d:\n%s" % (what, path, line,
                                                                      p.stderr))

    def test_missing_config_file_exits_nonzero(self):
        path = os.path.join(self.workdir, "absent.conf")
        p = run_junctiond(["-c", path])
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(path, p.stderr)

    def test_unsupported_section_refused_by_name(self):
        sections = {
            "console": "console {\n    name: a\n    wsport: 5673\n}\n",
        }
        for name, section in sections.items():
            with self.subTest(name):
                text = "router {\n    mode: standalone\n}\n" + section
                path = self.write("unsupported.conf", text)
                p = run_junctiond(["-c", path])
                self.assertNotEqual(p.returncode, 0, "%s accepted; stderr: %s" % (name, p.stderr))
                self.assertRegex(p.stderr, re.escape("%s:4:" % path) + ".*" + re.escape(name))

    def test_unimplemented_attribute_refused_by_name_not_ignored(self):
        # A listener asking for TLS-only clients without an sslProfile must not
        # silently run in clear (test_router_tls.py has them with one); a listener
        # given trusted certificates for client authentication (1.19's deprecated
        # trustedCertsFile) must not silently ignore them.
        cases = {
            "requireSsl": "listener {\n    host: 127.0.0.1\n    port: 5999\n"
                          "    requireSsl: yes\n}\n",
            "trustedCertsFile": "listener {\n    host: 127.0.0.1\n    port: 5999\n"
                                "    trustedCertsFile: /etc/ssl/certs/ca-certificates.crt\n}\n",
        }
        for name, section in cases.items():
            with self.subTest(name):
                path = self.write("unimplemented.conf", section)
                p = run_junctiond(["-c", path])
                self.assertNotEqual(p.returncode, 0, "%s accepted; stderr: %s" % (name, p.stderr))
                self.assertRegex(p.stderr, re.escape(path) + r":\d+: .*'%s'" % name)

    def test_attribute_set_to_its_default_is_accepted(self):
        r = self.start_router(listener={"requireSsl": "no"})
        self.assertNotIn("not supported", r.log())

class StopTest(RouterTestCase):

    def stop_with(self, sig):
        r = self.start_router()
        clients = [RawClient(r.port) for _ in range(3)]
        for c in clients:
            self.addCleanup(c.close)
            c.open()
            c.begin()
        r.signal(sig)
        for c in clients:
            frames = c.read_until_closed()
            self.assertIn(CLOSE, [f.code for f in frames],
                          "connection cut without a close frame: %r\n%s" % (frames, self.logs()))
        status = r.proc.wait(STOP_TIMEOUT * SLOW)
        self.assertEqual(status, 0, self.logs())

    def test_sigterm_closes_connections_with_close_frame_and_exits_0(self):
        self.stop_with(signal.SIGTERM)

    def test_sigint_closes_connections_with_close_frame_and_exits_0(self):
        self.stop_with(signal.SIGINT)


if __name__ == "__main__":
    unittest.main()
