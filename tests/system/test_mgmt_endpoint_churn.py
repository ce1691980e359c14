#!/usr/bin/python3
"""Listeners and connectors created and deleted through management, over
and over, give their memory back: a deleted endpoint is freed once nothing
uses it any more (its connections are gone, no connection attempt or
timer of it is pending), where it used to stay until the router stopped,
about 1.33 KB per listener created and deleted. A deleted listener whose connection
is still open is freed only when that connection closes, and the
connection works meanwhile."""
import re
import threading
import time
import unittest

from harness import SANITIZER, RouterTestCase, conf_section, free_port
from proton import Message
from proton.utils import BlockingConnection
from test_http import Manager

L = "org.apache.qpid.dispatch.listener"
C = "org.apache.qpid.dispatch.connector"
DEBUG_CONN_MGR = conf_section("log", {"module": "CONN_MGR", "enable": "debug+"})


class EndpointChurnTest(RouterTestCase):

    def freed(self, router, kind, name):
        return len(re.findall(r"Freed the removed %s %s \(" % (kind, re.escape(name)),
                              router.log()))

    def wait_freed(self, router, kind, name, count, seconds=20):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.freed(router, kind, name) >= count:
                return
            time.sleep(0.1)
        self.fail("%d of %d removed %ss %s freed\n%s"
                  % (self.freed(router, kind, name), count, kind, name, self.logs()))

    def cycle(self, m, lport, cport):
        code, desc, _ = m.call({"operation": "CREATE", "type": L, "name": "churn-l"},
                               {"host": "127.0.0.1", "port": str(lport),
                                "saslMechanisms": "ANONYMOUS", "authenticatePeer": False})
        self.assertEqual(code, 201, desc)
        code, desc, _ = m.call({"operation": "CREATE", "type": C, "name": "churn-c"},
                               {"host": "127.0.0.1", "port": str(cport), "role": "normal"})
        self.assertEqual(code, 201, desc)
        for kind, t in (("listener", L), ("connector", C)):
            code, desc, _ = m.call({"operation": "DELETE", "type": t, "name": "churn-" + kind[0]})
            self.assertEqual(code, 204, desc)

    def test_deleted_listeners_and_connectors_are_freed(self):
        r = self.start_router(extra=DEBUG_CONN_MGR)
        m = Manager(r.url)
        self.addCleanup(m.close)
        lport, cport = free_port(), free_port()  # the connector's peer never listens
        warm = 600  # the allocator's arenas and the agent's tables settle first
        for _ in range(warm):
            self.cycle(m, lport, cport)
        self.wait_freed(r, "listener", "churn-l", warm)
        self.wait_freed(r, "connector", "churn-c", warm)
        before = r.status_kb("VmRSS")
        n = 2000
        for _ in range(n):
            self.cycle(m, lport, cport)
        self.wait_freed(r, "listener", "churn-l", warm + n)
        self.wait_freed(r, "connector", "churn-c", warm + n)
        after = r.status_kb("VmRSS")
        print("\nVmRSS %d -> %d kB over %d create/delete cycles" % (before, after, n))
        if not SANITIZER:  # ASan's quarantine keeps freed memory on purpose
            # kept until the router stopped, they grew it by 5.3 MB here
            # (1.33 MB per 1,000 listeners, steadily); freed, it stays
            # within the allocator's own swings (up to about 0.55 MB seen)
            self.assertLess(after - before, 1536, "VmRSS %d -> %d kB" % (before, after))
        self.assertTrue(r.alive())

    def test_deleted_listener_waits_for_its_open_connection(self):
        r = self.start_router(extra=DEBUG_CONN_MGR)
        m = Manager(r.url)
        self.addCleanup(m.close)
        port = free_port()
        code, desc, _ = m.call({"operation": "CREATE", "type": L, "name": "held"},
                               {"host": "127.0.0.1", "port": str(port),
                                "saslMechanisms": "ANONYMOUS", "authenticatePeer": False})
        self.assertEqual(code, 201, desc)
        c = BlockingConnection("amqp://127.0.0.1:%d" % port, timeout=10)
        rx = c.create_receiver("held.q", credit=10)
        code, desc, _ = m.call({"operation": "DELETE", "type": L, "name": "held"})
        self.assertEqual(code, 204, desc)
        time.sleep(2.5)  # two sweeps: the open connection keeps it
        self.assertEqual(self.freed(r, "listener", "held"), 0, self.logs())
        sent = []

        def send():  # its own thread: send() waits for the receiver's accept below
            tx = BlockingConnection(r.url, timeout=10)
            tx.create_sender("held.q").send(Message(body="still served"))
            sent.append(True)
            tx.close()
        t = threading.Thread(target=send)
        t.start()
        self.assertEqual(rx.receive(timeout=10).body, "still served")
        rx.accept()
        c.wait(lambda: bool(sent), timeout=15, msg="the sender's delivery to be settled")
        t.join(15)
        self.assertEqual(sent, [True], "the sender's delivery was not accepted")
        c.close()
        self.wait_freed(r, "listener", "held", 1)
        self.assertTrue(r.alive())


if __name__ == "__main__":
    unittest.main()
