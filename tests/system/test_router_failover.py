#!/usr/bin/python3
"""A connector's failover list (1.19): the hosts a peer names in its open's
failover-server-list are tried in turn when the connection is lost, and the
connector entity's failoverUrls shows them, starting with the one in use.
The peers are small proton servers (failover_peer.py); all on 127.0.0.1.
"""
import os
import subprocess
import unittest

from harness import HERE, PYTHON, SLOW, RouterTestCase, free_port
from test_mgmt_agent import Manager

TIMEOUT = 20 * SLOW


class ConnectorFailoverTest(RouterTestCase):

    def peer(self, port, fol):
        """Start failover_peer.py on port, answering with the list fol."""
        import json
        p = subprocess.Popen([PYTHON, os.path.join(HERE, "failover_peer.py"), str(port),
                              json.dumps(fol)], stdout=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, universal_newlines=True)

        def reap():
            if p.poll() is None:
                p.kill()
            p.wait(10)
            p.stdout.close()
        self.addCleanup(reap)
        self.assertEqual(p.stdout.readline().strip(), "listening")
        return p

    def connector(self, mgr):
        rows = mgr.query("org.apache.qpid.dispatch.connector",
                         ["name", "failoverUrls", "connectionStatus"])
        return [r for r in rows if r["name"] == "up"][0]

    def test_connector_tries_the_peers_failover_hosts_in_turn(self):
        """The first peer names a dead port, junk entries and a backup; the
        list is shown after the connector's own host. When the first peer
        dies, the dead port is tried, then the backup, which sends an empty
        list: only the backup and the connector's own host remain, the
        backup first."""
        pa, pb, dead = free_port(), free_port(), free_port()
        a = self.peer(pa, ["junk", {"port": "1"},
                           {"network-host": "127.0.0.1", "port": str(dead)},
                           {"scheme": "amqp", "network-host": "127.0.0.1", "port": str(pb),
                            "hostname": "ignored"}])
        r = self.start_router(extra="connector {\n    name: up\n    host: 127.0.0.1\n"
                                    "    port: %d\n    role: normal\n}\n" % pa)
        mgr = Manager(r)
        self.addCleanup(mgr.close)
        first = "amqp://127.0.0.1:%d, 127.0.0.1:%d, amqp://127.0.0.1:%d" % (pa, dead, pb)
        self.wait_for("the first peer's list",
                      lambda: self.connector(mgr)["failoverUrls"] == first, TIMEOUT)
        self.peer(pb, [])
        a.kill()
        a.wait(10)
        last = "amqp://127.0.0.1:%d, amqp://127.0.0.1:%d" % (pb, pa)
        self.wait_for("the connection to the backup",
                      lambda: self.connector(mgr) == {"name": "up", "failoverUrls": last,
                                                      "connectionStatus": "SUCCESS"},
                      TIMEOUT)
        log = r.log()
        self.assertIn("Connecting to 127.0.0.1:%d" % dead, log)

    def test_no_failover_urls_without_a_peers_list(self):
        """A peer whose open has no failover-server-list leaves the
        connector's failoverUrls null."""
        r0 = self.start_router()
        r = self.start_router(extra="connector {\n    name: up\n    host: 127.0.0.1\n"
                                    "    port: %d\n    role: normal\n}\n" % r0.port)
        mgr = Manager(r)
        self.addCleanup(mgr.close)
        self.wait_for("the connection", lambda: self.connector(mgr)["connectionStatus"]
                      == "SUCCESS", TIMEOUT)
        self.assertIsNone(self.connector(mgr)["failoverUrls"])


if __name__ == "__main__":
    unittest.main()
