#!/usr/bin/python3
"""A client for the unsettled-delivery tests (test_security_unsettled.py),
run as a subprocess:

  unsettled_client.py URL SECONDS [--body N] [--hold ADDR]... [--take ADDR]...
                      [--send ADDR]... [--serve] [--container-id ID]

--hold ADDR: a receiver that keeps granting credit (300) and takes every
message but never settles one. --take ADDR: a receiver that accepts and
settles every message. --send ADDR: a sender that sends unsettled messages
of --body octets as fast as its credit allows. --serve: act as a route
container: every link the router attaches to it as a sender floods the same
way. All on one connection. Every half second it prints one JSON line,
{"t": seconds, "sent": n, "got": {"hold ADDR": n, "take ADDR": n}}, and
after SECONDS it closes the connection and exits.
"""
import json
import sys
import time

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container


class Client(MessagingHandler):
    def __init__(self, url, seconds, body, hold, take, send, serve):
        super().__init__(prefetch=300, auto_accept=False, auto_settle=False)
        self.url, self.seconds = url, seconds
        self.body = b"x" * body
        self.hold, self.take, self.send, self.serve = hold, take, send, serve
        self.sent = 0
        self.got = {}
        self.receivers = {}
        self.start = None
        self.conn = None

    def on_start(self, event):
        self.start = time.monotonic()
        self.conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS",
                                            sasl_enabled=True)
        for a in self.hold:
            self.receivers[event.container.create_receiver(self.conn, a, name="hold-" + a)] = "hold " + a
        for a in self.take:
            self.receivers[event.container.create_receiver(self.conn, a, name="take-" + a)] = "take " + a
        for a in self.send:
            event.container.create_sender(self.conn, a, name="send-" + a)
        for name in self.receivers.values():
            self.got[name] = 0
        event.container.schedule(0.5, self)

    def on_link_opening(self, event):
        link = event.link
        if self.serve and link.is_sender:
            link.source.address = link.remote_source.address

    def on_sendable(self, event):
        s = event.sender
        while s.credit > 0:
            s.send(Message(body=self.body))
            self.sent += 1

    def on_message(self, event):
        name = self.receivers.get(event.receiver)
        if name is None:
            return
        self.got[name] += 1
        if name.startswith("take "):
            self.accept(event.delivery)

    def on_timer_task(self, event):
        t = time.monotonic() - self.start
        print(json.dumps({"t": round(t, 2), "sent": self.sent, "got": self.got}), flush=True)
        if t >= self.seconds:
            self.conn.close()
            return
        event.container.schedule(0.5, self)


def main(argv):
    url, seconds = argv[0], float(argv[1])
    body, hold, take, send, serve, cid = 1024, [], [], [], False, None
    i = 2
    while i < len(argv):
        a = argv[i]
        if a == "--serve":
            serve = True
            i += 1
            continue
        v = argv[i + 1]
        if a == "--body":
            body = int(v)
        elif a == "--hold":
            hold.append(v)
        elif a == "--take":
            take.append(v)
        elif a == "--send":
            send.append(v)
        elif a == "--container-id":
            cid = v
        i += 2
    c = Container(Client(url, seconds, body, hold, take, send, serve))
    if cid:
        c.container_id = cid
    c.run()


if __name__ == "__main__":
    main(sys.argv[1:])
