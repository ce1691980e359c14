#!/usr/bin/python3
"""Attacks on the http listener (docs/design.md "HTTP"): a client asking
for files outside httpRootDir (dot segments, percent escapes, backslashes,
doubled slashes), a very long path, a NUL in the path and huge headers
gets no file from outside the root, and the router goes on serving.
"""
import os
import socket
import unittest

from harness import SLOW, RouterTestCase, conf_section
from test_http import Manager

TIMEOUT = 5 * SLOW
ESCAPES = [b"/../secret.txt", b"/%2e%2e/secret.txt", b"/..%2fsecret.txt",
           b"/%2e%2e%2fsecret.txt", b"//../secret.txt", b"/./../secret.txt",
           b"/..\\secret.txt", b"/....//secret.txt", b"/www/../../secret.txt",
           b"/%252e%252e/secret.txt", b"/../../../../../../" + b"secret.txt",
           b"/index.html/../../secret.txt", b"/index.html%00/../../secret.txt"]


def get(port, path, headers=b""):
    """One GET (Connection: close): every octet of the answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    try:
        s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                  + headers + b"\r\n")
        got = b""
        while len(got) < 1 << 20:
            try:
                chunk = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            got += chunk
        return got
    finally:
        s.close()


class AttackHttp(RouterTestCase):

    def test_no_file_outside_the_root_and_the_router_goes_on(self):
        root = os.path.join(self.workdir, "www")
        os.makedirs(root)
        with open(os.path.join(root, "index.html"), "w") as f:
            f.write("<p>the console</p>")
        with open(os.path.join(self.workdir, "secret.txt"), "w") as f:
            f.write("TOPSECRET")
        r = self.start_router(extra=conf_section("listener", {
            "name": "web", "host": "127.0.0.1", "port": 0, "http": "yes", "httpRootDir": root}))
        m = Manager(r.url)
        try:
            code, desc, body = m.call({"operation": "READ", "type": "listener", "name": "web"})
            self.assertEqual(code, 200, desc)
            port = int(body["port"])
        finally:
            m.close()
        self.assertIn(b"the console", get(port, b"/index.html"))
        for path in ESCAPES + [b"/" + b"a" * 10000]:
            got = get(port, path)
            self.assertNotIn(b"TOPSECRET", got, path)
            self.assertFalse(got.startswith(b"HTTP/1.1 200"), (path, got[:100]))
        self.assertNotIn(b"TOPSECRET", get(port, b"/", b"X-Big: " + b"a" * 200000 + b"\r\n"))
        self.assertIn(b"the console", get(port, b"/index.html"))
        self.assertTrue(get(port, b"/healthz").startswith(b"HTTP/1.1 200"))
        self.assertTrue(r.alive())


if __name__ == "__main__":
    unittest.main()
