#!/usr/bin/python3
"""Soak: one junctiond under a steady, mixed, modest load for a long time;
does its memory stay flat?

Starts junctiond (the plain build, `workerThreads: 2`, one listener on
127.0.0.1) and opens --connections client connections (default 200) in one
proton reactor, which keep this mix for the whole run:

  anycast unsettled  senders and receivers on soak.q.N (2 of each per
                     address); receivers accept, a few release or reject
  anycast settled    pre-settled senders and receivers on soak.ps.N
  multicast          a couple of pre-settled senders to multicast.soak, a few
                     receivers
  request/reply      requesters with a dynamic reply address each, servers
                     on soak.svc answering on an anonymous link
  management         a QUERY now and then (connection, address, link,
                     router.address, allocator) on its own connection
  idle               connections with one receiver on a quiet address

Messages go at --rate in total (split 45/25/10/20 over anycast unsettled,
anycast settled, multicast and requests), bodies of 100 octets to 4 KiB.
Every --churn-every seconds a share (--churn, default 10%) of the client
connections closes and is replaced by a new one of the same role: new
links, link names, dynamic reply addresses; a quarter of those go without a
close frame (the socket is dropped).

Every --sample-every seconds the sampler reads the router's VmRSS from
/proc/PID/status and, over its own management connection, the allocator
entity (objects in use per pool = totalAllocFromHeap - totalFreeToHeap -
heldByThreads). At the end it prints the samples, the least-squares slope
of RSS over the last half of the run (MB/min), the pools whose in-use count
grew over the last half, and the messages moved; then stops the router with
SIGTERM and checks it exits 0 (junctiond reports pools with objects still
in use at exit, and exits non-zero then).

Exit status 1 when the router died, did not exit cleanly, a client saw an
error it should not have, no messages moved, or the last half's RSS slope
is above --max-slope (default 0.02 MB/min: 1.2 MB an hour; the slope is
judged only when the last half spans at least 5 minutes).

    /usr/bin/python3 tests/stress/soak.py --minutes 60 --json /tmp/soak.json

Only 127.0.0.1; every loop is bounded by the run's length.

Known limit: the client's own memory grows with the connections it has
replaced (every Client stays referenced from proton's Python objects after
its connection closed; about 70 kB each, 50 to 137 MB over the hour's
1,121 replacements). It does not touch the router's figures.
"""
import argparse
import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import AtMostOnce, Container

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.normpath(os.path.join(HERE, "..", ".."))
CONNECT = {"allowed_mechs": "ANONYMOUS", "sasl_enabled": True, "reconnect": False}
MGMT_TYPES = ("connection", "router.address", "router.link", "allocator", "router")
BODIES = (100, 100, 100, 512, 1024, 4096)


def free_port():
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def slope(points):
    """Least-squares slope of (x, y) points; None for fewer than two."""
    n = len(points)
    if n < 2:
        return None
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    if sxx == 0:
        return None
    return sum((p[0] - mx) * (p[1] - my) for p in points) / sxx


class Stats:
    def __init__(self):
        self.sent = self.received = self.settled = self.released = 0
        self.requests = self.replies = 0
        self.mgmt_ok = self.mgmt_bad = 0
        self.opened = self.churned = self.dropped = 0
        self.errors = []  # (time, text): unexpected ones

    def error(self, text):
        if len(self.errors) < 200:
            self.errors.append((round(time.monotonic(), 1), text))


class Client(MessagingHandler):
    """One client connection in one role; the Soak owns the list."""

    def __init__(self, soak, role, index):
        super().__init__(prefetch=0, auto_accept=False, auto_settle=True)
        self.soak, self.role, self.index = soak, role, index
        self.stats = soak.stats
        self.conn = None
        self.sender = None
        self.receivers = []
        self.closing = False
        self.outstanding = 0  # requests without their reply yet
        self.reply_to = None
        self.seq = 0

    # -- set-up --
    def open(self, container):
        self.conn = container.connect(self.soak.url, handler=self, **CONNECT)
        self.stats.opened += 1
        r, i, c = self.role, self.index, self.conn
        if r == "any-tx":
            self.sender = container.create_sender(c, "soak.q.%d" % (i % self.soak.n_any))
        elif r == "any-rx":
            self.recv(container, "soak.q.%d" % (i % self.soak.n_any), 50)
        elif r == "ps-tx":
            self.sender = container.create_sender(c, "soak.ps.%d" % (i % self.soak.n_ps),
                                                  options=AtMostOnce())
        elif r == "ps-rx":
            self.recv(container, "soak.ps.%d" % (i % self.soak.n_ps), 50, AtMostOnce())
        elif r == "mc-tx":
            self.sender = container.create_sender(c, "multicast.soak", options=AtMostOnce())
        elif r == "mc-rx":
            self.recv(container, "multicast.soak", 100, AtMostOnce())
        elif r == "requester":
            self.receivers.append(container.create_receiver(c, None, dynamic=True))
            self.receivers[-1].flow(20)
            self.sender = container.create_sender(c, "soak.svc")
        elif r == "server":
            self.recv(container, "soak.svc", 20)
            self.sender = container.create_sender(c, None)  # anonymous: replies
        elif r == "mgmt":
            self.receivers.append(container.create_receiver(c, None, dynamic=True))
            self.receivers[-1].flow(10)
            self.sender = container.create_sender(c, "$management")
        elif r == "idle":
            self.recv(container, "soak.idle.%d" % i, 10)

    def recv(self, container, address, credit, options=None):
        link = container.create_receiver(self.conn, address, options=options)
        link.flow(credit)
        self.receivers.append(link)

    def live(self):
        return (not self.closing and self.conn is not None and self.conn.transport is not None
                and not self.conn.transport.closed)

    # -- churn --
    def close(self, drop):
        self.closing = True
        if drop and self.conn.transport is not None:
            self.stats.dropped += 1
            self.conn.transport.close_head()  # no close frame: the socket goes
            self.conn.transport.close_tail()
        else:
            self.conn.close()

    # -- sending --
    def send_some(self, n):
        """Send up to n messages if credit allows; returns how many went."""
        if not self.live() or self.sender is None or self.role in ("server", "mgmt"):
            return 0
        link = self.sender
        if self.role == "requester":
            if self.reply_to is None:
                return 0
            n = min(n, 10 - self.outstanding)
        done = 0
        while done < n and link.credit > 0:
            self.seq += 1
            size = random.choice(BODIES)
            m = Message(body=b"s" * size, properties={"seq": self.seq, "role": self.role})
            if self.role == "requester":
                m.reply_to = self.reply_to
                m.correlation_id = "%d-%d" % (self.index, self.seq)
                self.outstanding += 1
                self.stats.requests += 1
            link.send(m)
            done += 1
        self.stats.sent += done
        return done

    def query(self, entity_type):
        if not self.live() or self.reply_to is None or self.sender.credit <= 0:
            return False
        self.seq += 1
        props = {"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                 "entityType": entity_type}
        self.sender.send(Message(body={"attributeNames": []}, properties=props,
                                 reply_to=self.reply_to, correlation_id=self.seq))
        return True

    # -- events --
    def on_link_opened(self, event):
        if event.link.is_receiver and event.link.remote_source.dynamic:
            self.reply_to = event.link.remote_source.address

    def on_message(self, event):
        dlv, link, msg = event.delivery, event.link, event.message
        self.stats.received += 1
        if self.role == "server":
            if link.credit < 10:
                link.flow(20 - link.credit)
            self.accept(dlv)
            if self.sender.credit > 0 and msg.reply_to:
                self.sender.send(Message(address=msg.reply_to, body=msg.body,
                                         correlation_id=msg.correlation_id))
                self.stats.sent += 1
            # else: the request is accepted and not answered (no credit)
            return
        if self.role == "requester":
            self.stats.replies += 1
            self.outstanding = max(0, self.outstanding - 1)
            self.accept(dlv)
            link.flow(1)
            return
        if self.role == "mgmt":
            code = msg.properties.get("statusCode") if msg.properties else None
            if code == 200:
                self.stats.mgmt_ok += 1
            else:
                self.stats.mgmt_bad += 1
                self.stats.error("management answered %r: %r" % (
                    code, msg.properties and msg.properties.get("statusDescription")))
            self.accept(dlv)
            link.flow(1)
            if self.soak.on_mgmt_reply and self is self.soak.sampler:
                self.soak.on_mgmt_reply(msg)
            return
        if dlv.settled:
            dlv.settle()  # pre-settled by the router: free proton's record of it
        else:
            r = random.random()
            if r < 0.01:
                self.release(dlv, delivered=False)
            elif r < 0.015:
                self.reject(dlv)
            else:
                self.accept(dlv)
        link.flow(1)

    def on_accepted(self, event):
        self.stats.settled += 1

    def on_rejected(self, event):
        self.stats.settled += 1

    def on_released(self, event):
        self.stats.released += 1

    def on_settled(self, event):
        pass

    def on_sendable(self, event):
        pass

    # Errors: expected only while closing this connection or at the end.
    def _expected(self):
        return self.closing or self.soak.over

    def on_transport_error(self, event):
        if not self._expected():
            self.stats.error("%s %d: transport error %s" % (self.role, self.index,
                                                            event.transport.condition))
            self.soak.replace(self)

    def on_connection_error(self, event):
        if not self._expected():
            self.stats.error("%s %d: connection closed by the router: %s" % (
                self.role, self.index, event.connection.remote_condition))

    def on_session_error(self, event):
        if not self._expected():
            self.stats.error("%s %d: session ended: %s" % (self.role, self.index,
                                                           event.session.remote_condition))

    def on_link_error(self, event):
        if not self._expected():
            self.stats.error("%s %d: link %s detached: %s" % (
                self.role, self.index, event.link.name, event.link.remote_condition))

    def on_disconnected(self, event):
        if not self._expected():
            self.stats.error("%s %d: disconnected" % (self.role, self.index))
            self.soak.replace(self)
        return True  # no reconnect: the Soak opens a new client itself

    def on_connection_closed(self, event):
        pass


class Timer:
    def __init__(self, fn):
        self.fn = fn

    def on_timer_task(self, event):
        self.fn()


class Soak(MessagingHandler):
    TICK = 0.1

    def __init__(self, args, router):
        super().__init__()
        self.args, self.router = args, router
        self.url = "amqp://127.0.0.1:%d" % router.port
        self.stats = Stats()
        self.over = False
        self.clients = []
        self.samples = []  # dicts: t (s), rss_kb, pools {name: in_use}, counters
        self.pending_pools = None
        self.on_mgmt_reply = self._sampler_reply
        n = args.connections
        share = lambda f: max(1, int(round(n * f)))  # noqa: E731
        self.roles = (["any-tx"] * share(0.20) + ["any-rx"] * share(0.20) +
                      ["ps-tx"] * share(0.10) + ["ps-rx"] * share(0.10) +
                      ["mc-tx"] * share(0.01) + ["mc-rx"] * share(0.04) +
                      ["requester"] * share(0.24) + ["server"] * share(0.04) +
                      ["mgmt"] * share(0.01))
        self.roles += ["idle"] * max(0, n - 1 - len(self.roles))  # 1: the sampler
        self.n_any = max(1, share(0.20) // 2)
        self.n_ps = max(1, share(0.10) // 2)
        self.rate_share = {"any-tx": 0.45, "ps-tx": 0.25, "mc-tx": 0.10, "requester": 0.20}
        self.credit = {k: 0.0 for k in self.rate_share}
        self.rr = {k: 0 for k in self.rate_share}
        self.next_index = 0
        self.sampler = None
        self.last_sample = None
        self.last_churn = None
        self.last_mgmt = None

    def new_client(self, role):
        c = Client(self, role, self.next_index)
        self.next_index += 1
        c.open(self.container)
        return c

    def replace(self, client):
        """A client lost its connection on its own: open a new one instead."""
        if self.over or client not in self.clients:
            return
        client.closing = True
        self.clients[self.clients.index(client)] = self.new_client(client.role)

    def on_start(self, event):
        self.container = event.container
        self.started = time.monotonic()
        self.sampler = Client(self, "mgmt", -1)
        self.sampler.open(self.container)
        self.clients = [self.new_client(role) for role in self.roles]
        self.last_sample = self.last_churn = self.last_mgmt = self.started
        self.sample()
        self.container.schedule(self.TICK, Timer(self.tick))

    def elapsed(self):
        return time.monotonic() - self.started

    def tick(self):
        now = time.monotonic()
        if self.over:
            busy = [c for c in self.clients + [self.sampler]
                    if c.conn.transport is not None and not c.conn.transport.closed]
            if not busy or now > self.stop_by:
                self.container.stop()
                return
            self.container.schedule(self.TICK, Timer(self.tick))
            return
        if self.router.poll() is not None:
            self.stats.error("the router exited with status %s" % self.router.returncode)
            self.finish()
        elif self.elapsed() >= self.args.minutes * 60:
            self.sample()
            self.finish()
        else:
            self.pump()
            if now - self.last_sample >= self.args.sample_every:
                self.last_sample = now
                self.sample()
            if now - self.last_churn >= self.args.churn_every:
                self.last_churn = now
                self.churn()
            if now - self.last_mgmt >= 5:
                self.last_mgmt = now
                for c in self.clients:
                    if c.role == "mgmt":
                        c.query(random.choice(MGMT_TYPES))
        self.container.schedule(self.TICK, Timer(self.tick))

    def pump(self):
        for role, share in self.rate_share.items():
            self.credit[role] = min(self.credit[role] + self.args.rate * share * self.TICK,
                                    self.args.rate * share)  # at most 1 s owed
            senders = [c for c in self.clients if c.role == role]
            if not senders:
                continue
            tries = 0
            while self.credit[role] >= 1 and tries < len(senders):
                c = senders[self.rr[role] % len(senders)]
                self.rr[role] += 1
                got = c.send_some(min(int(self.credit[role]), 5))
                self.credit[role] -= got
                tries = 0 if got else tries + 1

    def churn(self):
        n = max(1, int(len(self.clients) * self.args.churn))
        for i in random.sample(range(len(self.clients)), n):
            old = self.clients[i]
            if not old.live():
                continue
            old.close(drop=random.random() < 0.25)
            self.stats.churned += 1
            self.clients[i] = self.new_client(old.role)

    def sample(self):
        s = {"t": round(self.elapsed(), 1), "rss_kb": rss_kb(self.router.pid),
             "sent": self.stats.sent, "received": self.stats.received,
             "connections": len(self.clients), "pools": None}
        self.samples.append(s)
        print("sample: t %.0f s, router RSS %s kB, sent %d, received %d, client RSS %s kB"
              % (s["t"], s["rss_kb"], s["sent"], s["received"], rss_kb(os.getpid())),
              flush=True)
        if self.sampler.query("allocator"):
            self.pending_pools = s

    def _sampler_reply(self, msg):
        s, self.pending_pools = self.pending_pools, None
        if s is None or not isinstance(msg.body, dict) or "results" not in msg.body:
            return
        names = msg.body["attributeNames"]
        pools = {}
        for row in msg.body["results"]:
            r = dict(zip(names, row))
            try:
                pools[r["typeName"]] = (r["totalAllocFromHeap"] - r["totalFreeToHeap"] -
                                        r["heldByThreads"])
            except (KeyError, TypeError):
                return
        s["pools"] = pools

    def finish(self):
        if self.over:
            return
        self.over = True
        self.stop_by = time.monotonic() + 10
        for c in self.clients + [self.sampler]:
            if c.conn is not None and c.live():
                c.conn.close()


def router_config(port):
    return """router {
    mode: standalone
    id: soak
    workerThreads: 2
}
listener {
    host: 127.0.0.1
    port: %d
    role: normal
    saslMechanisms: ANONYMOUS
    authenticatePeer: no
}
address {
    prefix: multicast
    distribution: multicast
}
log {
    module: DEFAULT
    enable: info+
    includeTimestamp: yes
}
""" % port


def start_router(junctiond, workdir, wrap=()):
    for attempt in range(3):
        port = free_port()
        conf = os.path.join(workdir, "soak.conf")
        with open(conf, "w") as f:
            f.write(router_config(port))
        log = open(os.path.join(workdir, "soak.log"), "wb")
        proc = subprocess.Popen(list(wrap) + [junctiond, "-c", conf], stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, cwd=workdir)
        proc.port, proc.log_file = port, log
        deadline = time.monotonic() + (60 if wrap else 10)
        import socket
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return proc
            except OSError:
                time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        log.close()
    raise SystemExit("junctiond did not start; log in %s" % workdir)


def stop_router(proc, timeout=15):
    """SIGTERM; returns (exit status or None if it had to be killed, seconds)."""
    if proc.poll() is not None:
        return proc.returncode, 0.0
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
        return proc.returncode, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        return None, time.monotonic() - t0


def pool_growth(samples):
    """Per pool: objects in use at the middle and at the end of the run (the
    first and last samples of the last half that have pool figures) and the
    least-squares slope over the last half, in objects a minute."""
    half = [s for s in samples if s["pools"] and s["t"] >= samples[-1]["t"] / 2]
    if len(half) < 2:
        return {}
    first, last = half[0]["pools"], half[-1]["pools"]
    out = {}
    for k, v in last.items():
        pts = [(s["t"] / 60.0, s["pools"][k]) for s in half if k in s["pools"]]
        out[k] = (first.get(k, 0), v, slope(pts))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=60.0, help="run length (default 60)")
    ap.add_argument("--connections", type=int, default=200,
                    help="client connections held (default 200)")
    ap.add_argument("--rate", type=float, default=1000.0,
                    help="messages/s sent in total, replies not counted (default 1000)")
    ap.add_argument("--sample-every", type=float, default=10.0,
                    help="seconds between RSS/allocator samples (default 10)")
    ap.add_argument("--churn-every", type=float, default=60.0,
                    help="seconds between churns (default 60)")
    ap.add_argument("--churn", type=float, default=0.10,
                    help="share of the connections replaced at each churn (default 0.10)")
    ap.add_argument("--max-slope", type=float, default=0.02,
                    help="MB/min of RSS over the last half above which the run fails "
                         "(default 0.02; judged when the last half is 5 min or more)")
    ap.add_argument("--build-dir", default=os.environ.get(
        "JN_BUILD_DIR", os.path.join(SOURCE_DIR, "build")), help="where junctiond is")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    ap.add_argument("--wrap", default="",
                    help="a command put before junctiond, which must exec it in the same "
                         "process, e.g. 'valgrind --tool=massif --massif-out-file=FILE' "
                         "(RSS is then the wrapper's)")
    ap.add_argument("--keep", action="store_true", help="keep the router's log directory")
    args = ap.parse_args()

    junctiond = os.path.join(args.build_dir, "junctiond")
    if not os.access(junctiond, os.X_OK):
        print("soak: no junctiond at %s" % junctiond, file=sys.stderr)
        return 2
    workdir = tempfile.mkdtemp(prefix="jn-soak-")
    router = start_router(junctiond, workdir, shlex.split(args.wrap))
    print("soak: junctiond pid %d port %d, %d connections, %.0f msg/s, %.1f min, log %s"
          % (router.pid, router.port, args.connections, args.rate, args.minutes,
             os.path.join(workdir, "soak.log")), flush=True)
    soak = Soak(args, router)
    container = Container(soak)
    container.container_id = "jn-soak-%d" % os.getpid()
    container.run()
    died = router.poll() is not None
    status, stop_s = stop_router(router, 120 if args.wrap else 15)
    router.log_file.close()
    with open(os.path.join(workdir, "soak.log"), "rb") as f:
        log = f.read().decode("utf-8", "replace")
    leaks = [l for l in log.splitlines() if "leak" in l.lower()]

    st = soak.stats
    samples = soak.samples
    end = samples[-1]["t"] if samples else 0
    half = [(s["t"] / 60.0, s["rss_kb"] / 1024.0) for s in samples
            if s["rss_kb"] is not None and s["t"] >= end / 2]
    rss_slope = slope(half)
    judged = end / 2 >= 300
    growth = pool_growth(samples)
    grew = {k: v for k, v in growth.items() if v[1] > v[0]}

    print("\n%8s %10s %12s %12s" % ("t (s)", "RSS (kB)", "sent", "received"))
    for s in samples:
        print("%8.0f %10s %12d %12d" % (s["t"], s["rss_kb"], s["sent"], s["received"]))
    print("\nmessages: sent %d (requests %d, replies %d), received %d, accepted/rejected %d, "
          "released %d" % (st.sent, st.requests, st.replies, st.received, st.settled,
                           st.released))
    print("connections: opened %d, churned %d (%d dropped without close), management "
          "answers %d ok, %d not" % (st.opened, st.churned, st.dropped, st.mgmt_ok,
                                     st.mgmt_bad))
    print("RSS slope over the last half (%.1f-%.1f min): %s MB/min%s"
          % (end / 120.0, end / 60.0,
             "%.4f" % rss_slope if rss_slope is not None else "n/a",
             "" if judged else " (not judged: the last half is under 5 min)"))
    if growth:
        print("pools, objects in use at the middle -> end, slope over the last half "
              "(higher at the end: %d of %d):" % (len(grew), len(growth)))
        for k in sorted(growth):
            a, b, sl = growth[k]
            print("  %-28s %10d -> %10d  %+10.2f /min" % (k, a, b, sl or 0.0))
    print("router: exit status %s after SIGTERM (%.1f s)%s" % (
        status, stop_s, ", had died during the run" if died else ""))
    for l in leaks[:20]:
        print("  log: " + l)

    failures = []
    if died:
        failures.append("the router died during the run")
    if status != 0:
        failures.append("the router's exit status was %s" % status)
    if leaks:
        failures.append("the router reported leaks at exit")
    if st.received == 0:
        failures.append("no messages moved")
    if judged and rss_slope is not None and rss_slope > args.max_slope:
        failures.append("RSS grew %.4f MB/min over the last half (bound %.4f)"
                        % (rss_slope, args.max_slope))
    if st.errors:
        for t, e in st.errors[:20]:
            print("  client error at %.0f s: %s" % (t - soak.started, e))
        failures.append("%d unexpected client errors" % len(st.errors))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "samples": samples, "rss_slope_mb_min": rss_slope,
                       "slope_judged": judged, "pool_growth": growth,
                       "stats": {k: v for k, v in vars(st).items()},
                       "exit_status": status, "died": died, "leaks": leaks,
                       "failures": failures}, f, indent=1)
    if args.keep or failures:
        print("router log kept in %s" % workdir)
    else:
        shutil.rmtree(workdir, True)
    for f in failures:
        print("FAIL: " + f)
    print("soak: %s" % ("FAILED" if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
