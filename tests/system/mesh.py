"""Meshes of interior junctiond routers on 127.0.0.1 for the system tests.

A mesh is given as router names and edges (a, b, cost): router a connects
to router b's inter-router listener with that cost. Every router also has
a normal listener for clients (Router.url). Routers log the ROUTER module
at debug, so tests can wait for routes ("Route to <id>") as well as for
traffic.
"""

import re
import socket
import time

from proton import Delivery, Message

from harness import Router, Scenario, Traffic, conf_section, free_port, SLOW


# every mesh has the multicast prefix "mc" (as the single-router tests do)
MULTICAST = ({"prefix": "mc", "distribution": "multicast"},)


def mesh_config(name, ir_port, connectors, extra_router=None, client_listener=None,
                log_level="debug+", addresses=MULTICAST, extra="", ir_listener=None,
                ir_connector=None):
    """The qdrouterd.conf text of one interior router ({port} is its client
    port, filled in by Router); extra: more sections; ir_listener and
    ir_connector: more attributes of its inter-router listener and of each
    of its inter-router connectors (an sslProfile, saslMechanisms)."""
    r = {"mode": "interior", "id": name, "workerThreads": 2}
    r.update(extra_router or {})
    text = conf_section("router", r)
    lst = {"host": "127.0.0.1", "port": "{port}", "role": "normal",
           "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"}
    lst.update(client_listener or {})
    text += conf_section("listener", lst)
    for a in addresses:
        text += conf_section("address", a)
    irl = {"name": "ir", "host": "127.0.0.1", "port": ir_port, "role": "inter-router",
           "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"}
    irl.update(ir_listener or {})
    text += conf_section("listener", irl)
    for peer, port, cost in connectors:
        irc = {"name": "to-%s" % peer, "host": "127.0.0.1", "port": port,
               "role": "inter-router", "saslMechanisms": "ANONYMOUS", "cost": cost}
        irc.update(ir_connector or {})
        text += conf_section("connector", irc)
    text += extra
    text += conf_section("log", {"module": "DEFAULT", "enable": "info+",
                                 "includeTimestamp": "yes"})
    text += conf_section("log", {"module": "ROUTER", "enable": log_level,
                                 "includeTimestamp": "yes"})
    return text


def distinct_ports(names):
    """A distinct free 127.0.0.1 port per name (all bound at once while
    choosing, so no two are the same)."""
    socks = []
    try:
        for _ in names:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return {n: s.getsockname()[1] for n, s in zip(names, socks)}
    finally:
        for s in socks:
            s.close()


class Mesh:
    """Routers started by a RouterTestCase (stopped at its cleanup)."""

    def __init__(self, case, names, edges, router_attrs=None, client_listener=None,
                 extra=None, args=None, ir_listener=None, ir_connector=None):
        self.case = case
        self.names = list(names)
        self.edges = [(a, b, c) for a, b, c in edges]
        self.ir_ports = distinct_ports(self.names)
        self.router_attrs = router_attrs or {}
        self.client_listener = client_listener or {}
        self.extra = extra or {}  # name -> more config text
        self.args = args or {}  # name -> more junctiond options (e.g. ["-T"])
        # name -> more attributes of its inter-router listener, connectors
        self.ir_listener = ir_listener or {}
        self.ir_connector = ir_connector or {}
        self.routers = {}
        self.ids = {}  # name -> router id, where they differ

    def config(self, name):
        conns = [(b, self.ir_ports[b], c) for a, b, c in self.edges if a == name]
        return mesh_config(self.ids.get(name, name), self.ir_ports[name], conns,
                           self.router_attrs.get(name), self.client_listener.get(name),
                           extra=self.extra.get(name, ""),
                           ir_listener=self.ir_listener.get(name),
                           ir_connector=self.ir_connector.get(name))

    def add(self, name, router_id, connect_to):
        """Start one more router `name` with id router_id (it may repeat
        another's, for the duplicate-id tests), connecting to each (peer,
        cost) of connect_to."""
        taken = set(self.ir_ports.values()) | {r.port for r in self.routers.values()}
        port = free_port()
        while port in taken:
            port = free_port()
        self.ir_ports[name] = port
        self.ids[name] = router_id
        self.edges += [(name, peer, cost) for peer, cost in connect_to]
        return self.start_one(name)

    def start(self, wait=True):
        for n in self.names:
            self.start_one(n)
        if wait:
            self.wait_converged()
        return self

    def start_one(self, name):
        taken = set(self.ir_ports.values()) | {r.port for r in self.routers.values()}
        for attempt in range(5):
            r = Router(self.case.workdir, name=name, config=self.config(name))
            if r.port not in taken:
                break
        r.extra_args = list(self.args.get(name, []))
        r.start()
        self.case.routers.append(r)
        self.case.addCleanup(self.case._stop_router, r)
        r.wait_ready()
        self.routers[name] = r
        return r

    def __getitem__(self, name):
        return self.routers[name]

    def kill(self, name):
        """SIGKILL a router (a crash); it is not checked at cleanup."""
        r = self.routers[name]
        r.signalled = True
        r.proc.kill()
        r.proc.wait(10)
        return r

    def reachable(self, name):
        """Routers connected to name through live routers (by the edges)."""
        alive = {n for n, r in self.routers.items() if r.alive()}
        seen, todo = {name}, [name]
        while todo:
            x = todo.pop()
            for a, b, _ in self.edges:
                for u, v in ((a, b), (b, a)):
                    if u == x and v in alive and v not in seen:
                        seen.add(v)
                        todo.append(v)
        return seen - {name}

    def routes(self, name):
        """Router ids name's log shows a route to (the last line per id
        decides: 'unreachable' removes it)."""
        state = {}
        for m in re.finditer(r"(Route to (\S+):|Router unreachable: (\S+)|Router removed: (\S+))",
                             self.routers[name].log()):
            if m.group(2):
                state[m.group(2)] = True
            else:
                state[m.group(3) or m.group(4)] = False
        return {k for k, v in state.items() if v}

    def route_changes(self):
        """How many route changes each live router has logged."""
        return {n: r.log().count("Route to ") for n, r in self.routers.items() if r.alive()}

    def wait_converged(self, timeout=30.0, quiet=1.5):
        """Until every live router has a route to every router reachable
        from it (by the edges), and no router has changed a route (next hop,
        cost or valid origins) for `quiet` seconds: link states still on
        their way can change valid origins after the routes exist, and a
        delivery whose origin is briefly not valid is released."""
        deadline = time.monotonic() + timeout * SLOW
        last, since = None, time.monotonic()
        while True:
            changes = self.route_changes()
            if changes != last:
                last, since = changes, time.monotonic()
            missing = {}
            for n, r in self.routers.items():
                if not r.alive():
                    continue
                want = self.reachable(n)
                have = self.routes(n)
                if not want <= have:
                    missing[n] = sorted(want - have)
            if not missing and time.monotonic() - since >= quiet * SLOW:
                return
            if time.monotonic() > deadline:
                self.case.fail("mesh did not converge within %.0f s: missing routes %s\n%s"
                               % (timeout, missing, self.case.logs()))
            time.sleep(0.1)

    def remote_holders(self, name, key):
        """Router ids that name's log says have a destination for key."""
        have = set()
        pat = r"Address %s: remote destination (\S+) (added|removed)" % re.escape(key)
        for m in re.finditer(pat, self.routers[name].log()):
            (have.add if m.group(2) == "added" else have.discard)(m.group(1))
        return have

    def wait_address(self, key, holders, timeout=30.0):
        """Until every live router knows that each of holders (router names
        with a local consumer) has a destination for key (e.g. "M0mc.x")."""
        deadline = time.monotonic() + timeout * SLOW
        while True:
            missing = {n: sorted(set(holders) - {n} - self.remote_holders(n, key))
                       for n, r in self.routers.items() if r.alive()}
            missing = {n: v for n, v in missing.items() if v}
            if not missing:
                return
            if time.monotonic() > deadline:
                self.case.fail("%s not known everywhere within %.0f s: %s\n%s"
                               % (key, timeout, missing, self.case.logs()))
            time.sleep(0.1)

    def probe(self, src, dst, address, timeout=30.0):
        """Until a message sent on src to address reaches a receiver on dst
        (released ones, while routes settle, are sent again)."""
        p = Probe(self.routers[src].url, self.routers[dst].url, address, timeout)
        p.run()
        if p.error:
            self.case.fail("no route %s -> %s for %s: %s\n%s"
                           % (src, dst, address, p.error, self.case.logs()))
        return p.elapsed_ok


class Probe(Scenario):
    """One unsettled message at a time from src to a receiver on dst until
    one is accepted."""

    def __init__(self, src_url, dst_url, address, timeout):
        super().__init__(timeout=timeout)
        self.src_url, self.dst_url, self.address = src_url, dst_url, address
        self.snd = None
        self.inflight = False
        self.tries = 0
        self.elapsed_ok = None

    def start(self):
        self.rcv = self.container.create_receiver(self.connect(self.dst_url), self.address)

    def on_link_opened(self, event):
        if event.link == self.rcv:
            event.link.flow(10)
            self.snd = self.container.create_sender(self.connect(self.src_url), self.address)

    def tick(self):
        if self.snd is not None and not self.inflight and self.snd.credit > 0:
            self.snd.send(Message(body="probe"))
            self.inflight = True
            self.tries += 1

    def on_settled(self, event):
        if event.link == self.snd:
            self.inflight = False
            if event.delivery.remote_state == Delivery.ACCEPTED:
                self.elapsed_ok = self.elapsed()
                self.done()

    def on_message(self, event):
        event.delivery.update(Delivery.ACCEPTED)
        event.delivery.settle()

    def progress(self):
        return "%d probes sent" % self.tries
