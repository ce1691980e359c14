#!/usr/bin/python3
"""A vhost's name through management: a CREATE that names the vhost keeps
that name (its identity stays vhost/HOSTNAME), as 1.19's agent does, so
READ, UPDATE and DELETE by that name find it; a second CREATE with the same
name is refused with 1.19's words; a CREATE without a name is named by its
identity. (Before, the name was dropped: `qdmanage create --type vhost
--name tenant-a hostname=a.example` then `qdmanage read --type vhost --name
tenant-a` answered 404.)"""
import unittest

from harness import RouterTestCase
from test_http import Manager

V = "org.apache.qpid.dispatch.vhost"


class VhostNameTest(RouterTestCase):

    def test_created_vhost_keeps_its_name_for_read_update_and_delete(self):
        r = self.start_router()
        m = Manager(r.url)
        self.addCleanup(m.close)
        code, desc, body = m.call({"operation": "CREATE", "type": V, "name": "tenant-a"},
                                  {"hostname": "ä.example", "maxConnections": 7})
        self.assertEqual(code, 201, desc)
        self.assertEqual((body["name"], body["identity"]), ("tenant-a", "vhost/ä.example"))
        code, desc, body = m.call({"operation": "READ", "type": V, "name": "tenant-a"})
        self.assertEqual(code, 200, desc)
        self.assertEqual((body["hostname"], body["maxConnections"]), ("ä.example", 7))
        code, desc, body = m.call({"operation": "UPDATE", "type": V, "name": "tenant-a"},
                                  {"maxConnections": 4})
        self.assertEqual(code, 200, desc)
        self.assertEqual((body["name"], body["maxConnections"]), ("tenant-a", 4))
        code, desc, _ = m.call({"operation": "CREATE", "type": V, "name": "tenant-a"},
                               {"hostname": "b.example"})
        self.assertEqual((code, desc), (400, "Name conflicts with an existing entity"))
        code, desc, body = m.call({"operation": "CREATE", "type": V}, {"hostname": "c.example"})
        self.assertEqual(code, 201, desc)
        self.assertEqual(body["name"], "vhost/c.example")
        code, desc, body = m.call({"operation": "QUERY", "type": "org.amqp.management",
                                   "name": "self", "entityType": V},
                                  {"attributeNames": ["name", "identity"]})
        self.assertEqual(code, 200, desc)
        self.assertEqual(sorted(body["results"]), [["tenant-a", "vhost/ä.example"],
                                                   ["vhost/c.example", "vhost/c.example"]])
        code, desc, _ = m.call({"operation": "DELETE", "type": V, "name": "tenant-a"})
        self.assertEqual(code, 204, desc)
        code, desc, _ = m.call({"operation": "READ", "type": V, "name": "tenant-a"})
        self.assertEqual(code, 404, desc)
        self.assertTrue(r.alive())


if __name__ == "__main__":
    unittest.main()
