#!/usr/bin/python3
"""Chaos: faults under load in a mesh with edges (issue 29).

Topology: four interiors in a ring A-B-C-D-A with a cross link A-C, and
two edges, E1 (uplink connectors to A and B, in that order) and E2 (to C
and D). Every inter-router connection goes through a TCP proxy of this
tool, which can freeze (stop forwarding both ways, closing nothing) or
reset (close both sockets with SO_LINGER 0, an RST each way). Edge uplinks
connect directly.

Load (all clients on routers that are never killed: E1, E2, B and D):
  - anycast `chaos.a1`: a sender on E1, a receiver on E2;
  - anycast `chaos.a2`: a sender on B, a receiver on D;
  - multicast `mc.chaos`: an unsettled sender on B, receivers on E1, E2,
    B and D.
Each sender keeps at most WINDOW deliveries unsettled and sends at most
RATE a second. Every message carries a unique id (sender name, sequence).
Every receiver accepts at once and grants one credit per message.

Faults, from --seed, one at a time, a new one every --fault-interval
seconds (or when the previous one ended, if later), the kinds in rounds of
a random order so that each kind comes once a round:
  - kill:   SIGKILL of A or C (the interiors without clients), started
            again 5 s later on the same ports;
  - stop:   SIGSTOP of any interior for 8 s, then SIGCONT;
  - freeze: the proxy of one inter-router link stops forwarding for 10 s
            (half-open), then forwards again;
  - reset:  every connection through the proxy of one inter-router link
            is reset.
After --duration seconds of faults: CALM seconds of load without faults,
then the senders stop and the run drains (bounded), then every router's
management view is read, the clients close and every router is stopped
with SIGTERM.

Asserted (each failed check is one line of "failures"):
  - every router is alive at the end (killed ones restarted) and exits 0
    on SIGTERM;
  - no client connection or link was lost (they are on routers never
    killed);
  - every delivery has an outcome after the drain;
  - every anycast delivery accepted was received (no loss), and every
    multicast delivery accepted reached some receiver;
  - no anycast id received twice (over all receivers), no multicast id
    twice at one receiver;
  - no released delivery was received by anyone;
  - in every router's management view: no endpoint link with
    unsettledCount or undeliveredCount above 0 (the tool's own
    management connection aside), router deliveriesStuck 0;
  - no router logged a multicast consumer stuck: every receiver here
    takes each copy at once, and a link toward another router or an
    edge is never a stuck consumer.

Figures: faults by kind, deliveries sent and outcomes by kind per sender,
multicast messages and copies received, and the recovery time of each
fault: the longest, over the two anycast senders, of the time from the
fault's start to the first acceptance of a delivery that sender sent at or
after the fault's start (docs/design.md, "Faults under load").

    tests/stress/chaos.py --seed 29 --duration 600 --fault-interval 15 \\
        --json chaos.json

Exit status 0 when every check passed, 1 otherwise. The routers' logs are
kept (the directory is printed) when a check failed or with --keep.
"""
import argparse
import json
import os
import random
import select
import shutil
import signal
import socket
import struct
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEM = os.path.join(HERE, "..", "system")
sys.path.insert(0, SYSTEM)


def _set_build_dir(argv):
    """--build-dir must be known before harness is imported (it reads
    JN_BUILD_DIR at import)."""
    for i, a in enumerate(argv):
        if a == "--build-dir" and i + 1 < len(argv):
            os.environ["JN_BUILD_DIR"] = os.path.abspath(argv[i + 1])
        elif a.startswith("--build-dir="):
            os.environ["JN_BUILD_DIR"] = os.path.abspath(a.split("=", 1)[1])


if __name__ == "__main__":
    _set_build_dir(sys.argv)

from proton import Delivery, Endpoint, Message  # noqa: E402
from proton.utils import BlockingConnection, SyncRequestResponse  # noqa: E402

import harness  # noqa: E402
from harness import SLOW, Router, Scenario, conf_section  # noqa: E402
from mesh import distinct_ports  # noqa: E402

INTERIORS = ["A", "B", "C", "D"]
EDGES = {"E1": ["A", "B"], "E2": ["C", "D"]}
# inter-router links: (connecting router, listening router)
LINKS = [("A", "B"), ("B", "C"), ("C", "D"), ("D", "A"), ("A", "C")]
KILLABLE = ["A", "C"]  # no client is on these
KINDS = ["kill", "stop", "freeze", "reset"]
RESTART_AFTER = 5.0  # s, kill -> start again
STOP_FOR = 8.0  # s, SIGSTOP -> SIGCONT
FREEZE_FOR = 10.0  # s, freeze -> thaw
CALM = 10.0  # s of load without faults before the drain
WINDOW = 100  # unsettled deliveries per sender at most
RATE = {"a1": 150, "a2": 150, "mc": 30}  # messages a second per sender
ANYCAST = {"a1": ("chaos.a1", "E1", ["E2"]), "a2": ("chaos.a2", "B", ["D"])}
MULTICAST = ("mc.chaos", "B", ["E1", "E2", "B", "D"])
STATES = {Delivery.ACCEPTED: "accepted", Delivery.RELEASED: "released",
          Delivery.MODIFIED: "modified", Delivery.REJECTED: "rejected"}


# --------------------------------------------------------------------------
# A TCP proxy that can freeze and reset

class _Pair:
    """One proxied connection: the socket from the connecting router
    (down) and the one to the listening router (up)."""

    def __init__(self, down, up):
        self.down, self.up = down, up
        self.dead = threading.Event()
        self.threads = []
        self.lock = threading.Lock()
        self.closed = False
        self.eofs = 0

    def half_closed(self):
        """One direction saw its end; after both, the sockets are closed."""
        with self.lock:
            self.eofs += 1
            both = self.eofs == 2
        if both:
            self.close(rst=False)

    def close(self, rst):
        with self.lock:
            if self.closed:
                return
            self.closed = True
            for s in (self.down, self.up):
                try:
                    if rst:
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                     struct.pack("ii", 1, 0))
                    s.close()
                except OSError:
                    pass


class ChaosProxy:
    """A TCP proxy on 127.0.0.1 to target_port, two threads per proxied
    connection. freeze(): nothing more is read from either socket (nor
    written), nothing closed; connections accepted meanwhile are held the
    same way. thaw(): forwarding goes on. reset(): every current connection
    is closed with SO_LINGER 0 on both sockets (both routers get an RST).
    When one side closes, the other is half-closed after it (a FIN); when
    one side fails (an RST), the other is reset too."""

    def __init__(self, name, target_port):
        self.name = name
        self.target_port = target_port
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.lsock.settimeout(0.1)
        self.port = self.lsock.getsockname()[1]
        self.frozen = threading.Event()
        self.closing = threading.Event()
        self.pairs = []
        self.lock = threading.Lock()
        self.accepted = 0
        self.thread = threading.Thread(target=self._accept, name="proxy-" + name, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.closing.is_set():
            try:
                down, _ = self.lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                up = socket.create_connection(("127.0.0.1", self.target_port), timeout=2)
            except OSError:
                down.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                down.close()
                continue
            pair = _Pair(down, up)
            for src, dst in ((down, up), (up, down)):
                t = threading.Thread(target=self._pump, args=(pair, src, dst), daemon=True)
                pair.threads.append(t)
            with self.lock:
                self.pairs = [p for p in self.pairs if not p.closed] + [pair]
                self.accepted += 1
            for t in pair.threads:
                t.start()

    def _pump(self, pair, src, dst):
        """Forward src -> dst until either side ends or a reset. The sockets
        stay blocking (each is read by one thread and written by the other);
        every wait is a 50 ms select and every read or write is
        non-blocking, so a router that stops reading (SIGSTOP) only holds
        this thread, never times the connection out."""
        def stopped():
            return self.closing.is_set() or pair.dead.is_set()
        try:
            while not stopped():
                if self.frozen.is_set():
                    time.sleep(0.05)
                    continue
                if not select.select([src], [], [], 0.05)[0]:
                    continue
                try:
                    data = src.recv(65536, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    continue
                if not data:
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    pair.half_closed()
                    return
                while data and not stopped():
                    if self.frozen.is_set() or not select.select([], [dst], [], 0.05)[1]:
                        time.sleep(0.01 if not self.frozen.is_set() else 0.05)
                        continue
                    try:
                        data = data[dst.send(data, socket.MSG_DONTWAIT):]
                    except BlockingIOError:
                        continue
        except (OSError, ValueError):
            pass
        # one side failed (or a reset or close was asked): the other is
        # reset too (the other direction's thread then fails on its closed
        # socket, or sees the flag)
        pair.dead.set()
        pair.close(rst=True)

    def freeze(self):
        self.frozen.set()

    def thaw(self):
        self.frozen.clear()

    def reset(self):
        with self.lock:
            pairs = list(self.pairs)
        for p in pairs:
            p.dead.set()
        for p in pairs:
            for t in p.threads:
                t.join(1)
            p.close(rst=True)
        return len([p for p in pairs if p.threads])

    def close(self):
        self.closing.set()
        self.lsock.close()
        self.thread.join(5)
        with self.lock:
            pairs = list(self.pairs)
        for p in pairs:
            for t in p.threads:
                t.join(1)
            p.close(rst=False)


# --------------------------------------------------------------------------
# Routers

def _log_sections():
    return (conf_section("log", {"module": "DEFAULT", "enable": "info+",
                                 "includeTimestamp": "yes"}))


def interior_config(name, ir_port, edge_port, connectors):
    """connectors: (peer, port to connect to) pairs."""
    text = conf_section("router", {"mode": "interior", "id": name, "workerThreads": 2})
    text += conf_section("listener", {"host": "127.0.0.1", "port": "{port}", "role": "normal",
                                      "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"})
    text += conf_section("address", {"prefix": "mc", "distribution": "multicast"})
    text += conf_section("listener", {"name": "ir", "host": "127.0.0.1", "port": ir_port,
                                      "role": "inter-router", "saslMechanisms": "ANONYMOUS",
                                      "authenticatePeer": "no"})
    text += conf_section("listener", {"name": "edges", "host": "127.0.0.1", "port": edge_port,
                                      "role": "edge", "saslMechanisms": "ANONYMOUS",
                                      "authenticatePeer": "no"})
    for peer, port in connectors:
        text += conf_section("connector", {"name": "to-%s" % peer, "host": "127.0.0.1",
                                           "port": port, "role": "inter-router",
                                           "saslMechanisms": "ANONYMOUS", "cost": 1})
    return text + _log_sections()


def edge_config(name, uplink_ports):
    text = conf_section("router", {"mode": "edge", "id": name, "workerThreads": 2})
    text += conf_section("listener", {"host": "127.0.0.1", "port": "{port}", "role": "normal",
                                      "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"})
    text += conf_section("address", {"prefix": "mc", "distribution": "multicast"})
    for i, p in enumerate(uplink_ports):
        text += conf_section("connector", {"name": "up%d" % i, "host": "127.0.0.1", "port": p,
                                           "role": "edge", "saslMechanisms": "ANONYMOUS"})
    return text + _log_sections()


class Topology:
    """The six routers and the five proxies of one run, in workdir."""

    def __init__(self, workdir):
        self.workdir = workdir
        # one call, so that no two of these ports are the same
        ports = distinct_ports([k + n for k in ("ir-", "edge-") for n in INTERIORS])
        self.ir_ports = {k: v for k, v in ports.items() if k.startswith("ir-")}
        self.edge_ports = {k: v for k, v in ports.items() if k.startswith("edge-")}
        self.proxies = {}
        for a, b in LINKS:
            self.proxies[a + "-" + b] = ChaosProxy(a + "-" + b, self.ir_ports["ir-" + b])
        self.routers = {}
        self.restarts = {n: 0 for n in INTERIORS}

    def start(self):
        for n in INTERIORS:
            conns = [(b, self.proxies[a + "-" + b].port) for a, b in LINKS if a == n]
            cfg = interior_config(n, self.ir_ports["ir-" + n], self.edge_ports["edge-" + n],
                                  conns)
            self.routers[n] = Router(self.workdir, name=n, config=cfg).start()
        for n, ups in EDGES.items():
            cfg = edge_config(n, [self.edge_ports["edge-" + u] for u in ups])
            self.routers[n] = Router(self.workdir, name=n, config=cfg).start()
        for r in self.routers.values():
            r.wait_ready()

    def kill(self, name):
        r = self.routers[name]
        r.signalled = True
        r.proc.kill()
        r.proc.wait(10)
        r._log_file.close()

    def restart(self, name):
        """Start a killed router again (same ports, same config); the old
        log is kept beside the new one."""
        r = self.routers[name]
        self.restarts[name] += 1
        os.rename(r.log_path, "%s.%d" % (r.log_path, self.restarts[name]))
        r.signalled = False
        r.start()
        r.wait_ready()

    def stop_all(self):
        """SIGTERM every router; returns the errors (exit status etc.)."""
        errors = []
        for n, r in self.routers.items():
            if r.proc is None:
                continue
            try:
                if r.proc.poll() is None:
                    r.proc.send_signal(signal.SIGCONT)  # in case a fault left it stopped
            except OSError:
                pass
            e = r.stop()
            if e:
                errors.append("router %s: %s" % (n, e.splitlines()[0]))
        for p in self.proxies.values():
            p.close()
        return errors


# --------------------------------------------------------------------------
# Load

class Stream:
    """One sender's record: seq -> send time, seq -> (outcome, time)."""

    def __init__(self, key, address, router, receivers, multicast):
        self.key, self.address, self.router = key, address, router
        self.receiver_routers = receivers
        self.multicast = multicast
        self.link = None
        self.sent = 0
        self.sent_at = {}
        self.outcomes = {}
        self.n_accepted = 0
        self.t0 = None
        self.rate = RATE["mc" if multicast else key]

    def unsettled(self):
        return self.sent - len(self.outcomes)


class Load(Scenario):
    """Every client of the run in one proton container (its own thread).
    The main thread only sets flags (sending, finish) and reads figures."""

    def __init__(self, topo, timeout):
        super().__init__(timeout=timeout / SLOW)
        self.topo = topo
        self.streams = {k: Stream(k, addr, src, dsts, False)
                        for k, (addr, src, dsts) in ANYCAST.items()}
        self.streams["mc"] = Stream("mc", MULTICAST[0], MULTICAST[1], MULTICAST[2], True)
        self.by_link = {}
        self.arrivals = {}  # (stream key, receiver router) -> {seq: count}
        self.first_at = {}  # (stream key, receiver router) -> {seq: first arrival}
        self.again = []  # (stream key, receiver router, seq, time) of each repeat
        self.recv_links = {}
        self.sending = True
        self.finish = False
        self.errors = []
        self.started_senders = False

    def connect_to(self, name):
        c = self.container.connect(self.topo.routers[name].url, reconnect=False,
                                   **harness.CONNECT)
        self.connections.append(c)
        return c

    def start(self):
        for key, st in self.streams.items():
            for rn in st.receiver_routers:
                link = self.container.create_receiver(self.connect_to(rn), st.address,
                                                      name="rcv-%s-%s" % (key, rn))
                self.by_link[link] = ("rcv", key, rn)
                self.recv_links[(key, rn)] = link
                self.arrivals[(key, rn)] = {}
                self.first_at[(key, rn)] = {}

    def on_link_opened(self, event):
        what = self.by_link.get(event.link)
        if what and what[0] == "rcv":
            event.link.flow(WINDOW * 2)
            if not self.started_senders and all(
                    l.state & Endpoint.REMOTE_ACTIVE for l in self.recv_links.values()):
                self.started_senders = True
                for key, st in self.streams.items():
                    st.link = self.container.create_sender(self.connect_to(st.router),
                                                           st.address, name="snd-" + key)
                    self.by_link[st.link] = ("snd", key, st.router)
                    st.t0 = time.monotonic()

    def pump(self, st):
        if st.link is None or not self.sending or self.over:
            return
        now = time.monotonic()
        allowed = int((now - st.t0) * st.rate) + 1
        while st.link.credit > 0 and st.sent < allowed and st.unsettled() < WINDOW:
            seq = st.sent
            dlv = st.link.send(Message(id="%s:%d" % (st.key, seq),
                                       properties={"stream": st.key, "seq": seq},
                                       body="x" * 64))
            dlv.chaos_seq = seq
            st.sent_at[seq] = now
            st.sent += 1

    def tick(self):
        if self.finish:
            self.done()
            return
        for st in self.streams.values():
            self.pump(st)

    def on_sendable(self, event):
        what = self.by_link.get(event.link)
        if what:
            self.pump(self.streams[what[1]])

    def on_settled(self, event):
        dlv = event.delivery
        what = self.by_link.get(dlv.link)
        if not what or what[0] != "snd":
            return
        st = self.streams[what[1]]
        seq = dlv.chaos_seq
        if seq in st.outcomes:
            self.errors.append("%s:%d settled twice" % (st.key, seq))
            return
        st.outcomes[seq] = (STATES.get(dlv.remote_state, str(dlv.remote_state)),
                            time.monotonic())
        if dlv.remote_state == Delivery.ACCEPTED:
            st.n_accepted += 1
        self.pump(st)

    def on_message(self, event):
        what = self.by_link.get(event.link)
        if not what:
            return
        props = event.message.properties or {}
        got = self.arrivals[(what[1], what[2])]
        seq = props.get("seq")
        got[seq] = got.get(seq, 0) + 1
        if got[seq] == 1:
            self.first_at[(what[1], what[2])][seq] = time.monotonic()
        else:
            self.again.append((what[1], what[2], seq, time.monotonic()))
        event.delivery.update(Delivery.ACCEPTED)
        event.delivery.settle()
        event.link.flow(1)

    # A lost client connection or link is recorded, not fatal: the rest of
    # the run still says what happened to everything else.
    def on_transport_error(self, event):
        if not self.over:
            self.errors.append("client transport error: %s" % (event.transport.condition,))

    def on_connection_error(self, event):
        if not self.over:
            self.errors.append("client connection closed by the router: %s"
                               % (event.connection.remote_condition,))

    def on_session_error(self, event):
        if not self.over:
            self.errors.append("client session ended: %s" % (event.session.remote_condition,))

    def on_link_error(self, event):
        if not self.over:
            self.errors.append("client link %s detached: %s"
                               % (event.link.name, event.link.remote_condition))

    def on_disconnected(self, event):
        if not self.over:
            self.errors.append("client disconnected from %s" % event.connection.hostname)

    # Read by the main thread (plain ints and dict sizes under the GIL).
    def unsettled(self):
        return sum(st.unsettled() for st in self.streams.values())

    def accepted(self, key):
        return self.streams[key].n_accepted

    def progress(self):
        return ", ".join("%s sent %d settled %d" % (k, st.sent, len(st.outcomes))
                         for k, st in self.streams.items())


# --------------------------------------------------------------------------
# Management view

def mgmt_check(name, router):
    """Failures seen in one router's management view (or the query's)."""
    out = []
    conn = BlockingConnection(router.url, timeout=10 * SLOW)
    try:
        client = SyncRequestResponse(conn, "$management")
        mine = conn.container.container_id

        def query(entity, names):
            props = {"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                     "entityType": entity}
            reply = client.call(Message(body={"attributeNames": names}, properties=props))
            if reply.properties.get("statusCode") != 200:
                raise RuntimeError("QUERY %s: %s" % (entity, reply.properties))
            body = reply.body
            return [dict(zip(body["attributeNames"], row)) for row in body["results"]]

        own = {c["identity"] for c in query("org.apache.qpid.dispatch.connection",
                                             ["identity", "container"])
               if c["container"] == mine}
        for l in query("org.apache.qpid.dispatch.router.link",
                       ["linkType", "linkDir", "owningAddr", "linkName", "connectionId",
                        "unsettledCount", "undeliveredCount"]):
            if l["linkType"] != "endpoint" or l["connectionId"] in own:
                continue
            if (l["unsettledCount"] or 0) > 0 or (l["undeliveredCount"] or 0) > 0:
                out.append("router %s: endpoint link %s (%s %s) has unsettledCount %s, "
                           "undeliveredCount %s" % (name, l["linkName"], l["linkDir"],
                                                    l["owningAddr"], l["unsettledCount"],
                                                    l["undeliveredCount"]))
        for r in query("org.apache.qpid.dispatch.router", ["deliveriesStuck"]):
            if (r["deliveriesStuck"] or 0) > 0:
                out.append("router %s: deliveriesStuck %s" % (name, r["deliveriesStuck"]))
    except Exception as e:  # a router that cannot answer is a finding too
        out.append("router %s: management query failed: %r" % (name, e))
    finally:
        try:
            conn.close()
        except Exception:
            pass
    return out


def stuck_lines(topo):
    """Every "Multicast consumer stuck" line of every router's logs (a
    killed router's earlier logs too). Every receiver of this run takes
    each copy at once, and an inter-router or edge link is never a stuck
    consumer (docs/design.md, "Faults under load"), so each is a failure."""
    out = []
    names = sorted(os.listdir(topo.workdir))
    for n in topo.routers:
        for f in names:
            if f == n + ".log" or f.startswith(n + ".log."):
                try:
                    with open(os.path.join(topo.workdir, f), errors="replace") as fh:
                        for line in fh:
                            if "Multicast consumer stuck" in line:
                                out.append("%s: %s" % (f, line.strip()))
                except OSError:
                    pass
    return out


# --------------------------------------------------------------------------
# Faults

class Faults:
    def __init__(self, topo, seed, log):
        self.topo = topo
        self.rng = random.Random(seed)
        self.log = log
        self.done = []  # dicts: kind, target, start, end (monotonic)
        self.round = []

    def next_kind(self):
        if not self.round:
            self.round = list(KINDS)
            self.rng.shuffle(self.round)
        return self.round.pop()

    def run_one(self, t_origin):
        kind = self.next_kind()
        topo = self.topo
        start = time.monotonic()
        wall = time.time()
        if kind == "kill":
            target = self.rng.choice(KILLABLE)
            topo.kill(target)
            time.sleep(RESTART_AFTER)
            topo.restart(target)
        elif kind == "stop":
            target = self.rng.choice(INTERIORS)
            topo.routers[target].proc.send_signal(signal.SIGSTOP)
            time.sleep(STOP_FOR)
            topo.routers[target].proc.send_signal(signal.SIGCONT)
        elif kind == "freeze":
            target = self.rng.choice(sorted(topo.proxies))
            topo.proxies[target].freeze()
            time.sleep(FREEZE_FOR)
            topo.proxies[target].thaw()
        else:
            target = self.rng.choice(sorted(topo.proxies))
            n = topo.proxies[target].reset()
            target = "%s (%d connection%s)" % (target, n, "" if n == 1 else "s")
        end = time.monotonic()
        clock = time.strftime("%H:%M:%S", time.gmtime(wall)) + ".%03d" % (wall % 1 * 1000)
        self.done.append({"kind": kind, "target": target, "start": start, "end": end,
                          "clock": clock})
        self.log("%7.1f s  %s UTC  %-6s %s (%.1f s)" % (start - t_origin, clock, kind, target,
                                                       end - start))


# --------------------------------------------------------------------------
# The run

def figures_and_checks(load, faults, t_faults):
    failures = []

    def at(st, qs):
        """Ids with their send times, in seconds from the first fault."""
        return ", ".join("%d (sent at %.1f s)" % (q, st.sent_at[q] - t_faults) for q in qs)

    fig = {"streams": {}, "faults": {}, "recovery": {}}
    for key, st in load.streams.items():
        outcomes = {}
        for o, _ in st.outcomes.values():
            outcomes[o] = outcomes.get(o, 0) + 1
        missing = [q for q in range(st.sent) if q not in st.outcomes]
        fig["streams"][key] = {"address": st.address, "sender": st.router,
                               "receivers": st.receiver_routers, "sent": st.sent,
                               "outcomes": outcomes, "no_outcome": len(missing)}
        if missing:
            failures.append("%s: %d deliveries without an outcome after the drain "
                            "(first %s)" % (key, len(missing), at(st, missing[:10])))
        if st.multicast:
            copies = 0
            seen = set()
            for rn in st.receiver_routers:
                got = load.arrivals[(key, rn)]
                copies += sum(got.values())
                seen |= set(got)
                dups = sorted(q for q, n in got.items() if n > 1)
                if dups:
                    failures.append("%s: %d multicast ids received more than once at %s "
                                    "(first %s)" % (key, len(dups), rn, at(st, dups[:10])))
            fig["streams"][key]["copies"] = copies
            fig["streams"][key]["copies_per_receiver"] = {
                rn: sum(load.arrivals[(key, rn)].values()) for rn in st.receiver_routers}
            fig["streams"][key]["messages_received"] = len(seen)
        else:
            seen = {}
            for rn in st.receiver_routers:
                for q, n in load.arrivals[(key, rn)].items():
                    seen[q] = seen.get(q, 0) + n
            dups = sorted(q for q, n in seen.items() if n > 1)
            if dups:
                failures.append("%s: %d anycast ids received more than once (first %s)"
                                % (key, len(dups), at(st, dups[:10])))
            fig["streams"][key]["received"] = len(seen)
        accepted = {q for q, (o, _) in st.outcomes.items() if o == "accepted"}
        lost = sorted(accepted - set(seen))
        if lost:
            failures.append("%s: %d deliveries accepted but never received (first %s)"
                            % (key, len(lost), at(st, lost[:10])))
        released = {q for q, (o, _) in st.outcomes.items() if o == "released"}
        bad = sorted(released & set(seen))
        if bad:
            failures.append("%s: %d deliveries released though a receiver got them "
                            "(first %s)" % (key, len(bad), at(st, bad[:10])))
        odd = {o for o, _ in st.outcomes.values()} - {"accepted", "released", "modified"}
        if odd:
            failures.append("%s: outcomes other than accepted/released/modified: %s"
                            % (key, sorted(odd)))
    # recovery per fault: the worst anycast sender's first acceptance of a
    # delivery sent at or after the fault's start; pause: the longest time
    # without any acceptance at one anycast sender, from the fault's start
    # to the next fault's (or the end of the calm)
    by_kind = {}
    acc_times = {key: sorted(t for o, t in load.streams[key].outcomes.values()
                             if o == "accepted") for key in ANYCAST}
    for i, f in enumerate(faults.done):
        until = faults.done[i + 1]["start"] if i + 1 < len(faults.done) else f["end"] + CALM
        worst = pause = 0.0
        for key in ANYCAST:
            st = load.streams[key]
            times = [t for q, (o, t) in st.outcomes.items()
                     if o == "accepted" and st.sent_at[q] >= f["start"]]
            worst = max(worst, (min(times) - f["start"]) if times else float("inf"))
            prev = f["start"]
            for t in acc_times[key]:
                if t <= f["start"]:
                    continue
                if t > until:
                    break
                pause = max(pause, t - prev)
                prev = t
            pause = max(pause, until - prev)
        f["recovery"], f["pause"] = worst, pause
        by_kind.setdefault(f["kind"], []).append((worst, pause))
    for kind in KINDS:
        rs = [r for r, _ in by_kind.get(kind, [])]
        ps = [p for _, p in by_kind.get(kind, [])]
        fig["faults"][kind] = len(rs)
        if rs:
            fig["recovery"][kind] = {"count": len(rs), "min": round(min(rs), 2),
                                     "median": round(sorted(rs)[len(rs) // 2], 2),
                                     "max": round(max(rs), 2),
                                     "pause_median": round(sorted(ps)[len(ps) // 2], 2),
                                     "pause_max": round(max(ps), 2)}
    fig["repeats"] = [
        {"stream": key, "receiver": rn, "seq": q,
         "sent": round(load.streams[key].sent_at[q] - t_faults, 3),
         "first": round(load.first_at[(key, rn)][q] - t_faults, 3),
         "again": round(t - t_faults, 3)}
        for key, rn, q, t in load.again[:50]]
    fig["fault_list"] = [{"at": round(f["start"] - t_faults, 1), "kind": f["kind"],
                          "target": f["target"], "clock": f["clock"],
                          "recovery": round(f["recovery"], 2),
                          "pause": round(f["pause"], 2)}
                         for f in faults.done]
    return fig, failures


def run(args, log):
    workdir = tempfile.mkdtemp(prefix="jn-chaos-")
    log("chaos: seed %d, %.0f s of faults every %.0f s, routers in %s, build %s"
        % (args.seed, args.duration, args.fault_interval, workdir, harness.BUILD_DIR))
    topo = Topology(workdir)
    failures = []
    load = None
    result = {"seed": args.seed, "duration": args.duration,
              "fault_interval": args.fault_interval, "workdir": workdir}
    thread = None
    try:
        topo.start()
        total = args.duration + CALM + 300 * SLOW
        load = Load(topo, timeout=total)
        thread = threading.Thread(target=load.run, name="load", daemon=True)
        thread.start()
        # Ready: both anycast streams accepted something and every
        # multicast receiver got a copy (routes and edges are up).
        deadline = time.monotonic() + 60 * SLOW
        while time.monotonic() < deadline and not load.errors and not load.error:
            if (all(load.accepted(k) >= 20 for k in ANYCAST) and
                    all(load.arrivals[("mc", rn)] for rn in MULTICAST[2])):
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("the load did not start within %.0f s: %s %s %s"
                               % (60 * SLOW, load.progress(), load.errors, load.error))
        log("load running: %s" % load.progress())
        faults = Faults(topo, args.seed, log)
        t_faults = time.monotonic()
        k = 0
        while time.monotonic() - t_faults < args.duration and k < 10000:
            due = t_faults + k * args.fault_interval
            if time.monotonic() < due:
                time.sleep(due - time.monotonic())
            if time.monotonic() - t_faults >= args.duration:
                break
            faults.run_one(t_faults)
            k += 1
        log("faults over after %.1f s; calm for %.0f s: %s"
            % (time.monotonic() - t_faults, CALM, load.progress()))
        time.sleep(CALM)
        load.sending = False
        t_drain = time.monotonic()
        drain_limit = 30.0 * SLOW
        while time.monotonic() - t_drain < drain_limit and load.unsettled() > 0:
            time.sleep(0.1)
        time.sleep(1.0)  # late arrivals (a duplicate) still count
        log("drained in %.1f s: %s" % (time.monotonic() - t_drain, load.progress()))
        for n, r in topo.routers.items():
            if not r.alive():
                failures.append("router %s exited (status %s) without being killed"
                                % (n, r.proc.returncode))
        for n, r in topo.routers.items():
            if r.alive():
                failures.extend(mgmt_check(n, r))
        stuck = stuck_lines(topo)
        if stuck:
            failures.append("%d multicast consumers judged stuck (first %s)"
                            % (len(stuck), stuck[:3]))
        load.finish = True
        thread.join(30)
        failures.extend(load.errors)
        if load.error:
            failures.append("load: " + load.error)
        fig, checks = figures_and_checks(load, faults, t_faults)
        failures.extend(checks)
        result.update(fig)
    except Exception as e:
        failures.append("run aborted: %r" % (e,))
        if load is not None:
            load.finish = True
            if thread is not None:
                thread.join(30)
    finally:
        failures.extend(topo.stop_all())
    result["failures"] = failures
    keep = args.keep or failures
    if not keep:
        shutil.rmtree(workdir, True)
        result["workdir"] = None
    return result


def report(result, log):
    log("")
    log("faults: %s" % ", ".join("%s %d" % (k, result.get("faults", {}).get(k, 0))
                                 for k in KINDS))
    for f in result.get("fault_list", []):
        log("  %7.1f s %-6s %-22s recovery %6.2f s, longest pause %6.2f s"
            % (f["at"], f["kind"], f["target"], f["recovery"], f["pause"]))
    for key, s in result.get("streams", {}).items():
        extra = ("received %d" % s["received"]) if "received" in s else \
            ("messages received %d, copies %d %s" % (s["messages_received"], s["copies"],
                                                    s["copies_per_receiver"]))
        log("%-3s %s %s -> %s: sent %d, outcomes %s, without outcome %d, %s"
            % (key, s["address"], s["sender"], ",".join(s["receivers"]), s["sent"],
               s["outcomes"], s["no_outcome"], extra))
    for kind, r in result.get("recovery", {}).items():
        log("after %-6s (%d): recovery min %.2f s, median %.2f s, max %.2f s; "
            "longest pause median %.2f s, max %.2f s"
            % (kind, r["count"], r["min"], r["median"], r["max"], r["pause_median"],
               r["pause_max"]))
    for r in result.get("repeats", []):
        log("repeat: %s:%d at %s, sent at %.3f s, first received at %.3f s, again at %.3f s "
            "(from the first fault)" % (r["stream"], r["seq"], r["receiver"], r["sent"],
                                         r["first"], r["again"]))
    if result["failures"]:
        log("FAILED:")
        for f in result["failures"]:
            log("  " + f)
        if result.get("workdir"):
            log("logs kept in %s" % result["workdir"])
    else:
        log("all checks passed")


def main(argv):
    p = argparse.ArgumentParser(description="Faults under load in a mesh with edges.")
    p.add_argument("--seed", type=int, default=29)
    p.add_argument("--duration", type=float, default=600.0, help="seconds of faults")
    p.add_argument("--fault-interval", type=float, default=15.0,
                   help="seconds from one fault's start to the next's")
    p.add_argument("--json", help="write the figures and failures to this file")
    p.add_argument("--build-dir", help="the build with junctiond (default: build/)")
    p.add_argument("--keep", action="store_true", help="keep the routers' logs")
    args = p.parse_args(argv)

    def log(text):
        print(text, flush=True)

    result = run(args, log)
    report(result, log)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
