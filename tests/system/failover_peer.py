#!/usr/bin/python3
"""An AMQP peer for the connector failover tests: it listens on
127.0.0.1:PORT and answers every open with the failover-server-list given
as JSON (a list; each map's keys become symbols, other entries are sent as
they are). Prints "listening" once it listens; runs until killed.

    failover_peer.py PORT 'JSON'
"""
import json
import sys

from proton import symbol
from proton.handlers import MessagingHandler
from proton.reactor import Container


def amqp_value(v):
    if isinstance(v, dict):
        return {symbol(k): amqp_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [amqp_value(x) for x in v]
    return v


class Peer(MessagingHandler):
    def __init__(self, port, fol):
        super().__init__()
        self.port = port
        self.fol = fol

    def on_start(self, event):
        event.container.listen("127.0.0.1:%d" % self.port)
        print("listening", flush=True)

    def on_connection_opening(self, event):
        event.connection.properties = {symbol("failover-server-list"): amqp_value(self.fol)}


if __name__ == "__main__":
    Container(Peer(int(sys.argv[1]), json.loads(sys.argv[2]))).run()
