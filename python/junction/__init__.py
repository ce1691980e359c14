"""Junction's client-side management library.

`junction-manage` and `junction-stat` (tools/) are built on it; anything else
that wants to talk to a router's `$management` node may use it too:

    from junction.management import Client, ConnectOptions
    with Client(ConnectOptions(url="amqp://127.0.0.1:5672")) as c:
        names, rows = c.query("org.apache.qpid.dispatch.connection")

Modules:
  management  the AMQP management client: connect, request/reply, paging
  schema      the entity schema (router/config/schema.json) and type names
  table       qdstat-style aligned tables, CSV and JSON rendering
  cli         what both tools share: connection options, errors, exit codes
  manage      junction-manage (the qdmanage commands)
  stat        junction-stat (the qdstat views)

Needs only python3-qpid-proton (Debian) on /usr/bin/python3.
"""

VERSION = "0.1.0"
