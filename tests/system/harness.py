#!/usr/bin/python3
"""Shared tools for the router system tests (tests/system/test_router_*.py).

What is here, top to bottom:

* Locations and limits: JN_BUILD_DIR / JN_SOURCE_DIR, whether the build is a
  sanitizer build (slower: every wait is multiplied by SLOW).
* Router: writes a qdrouterd-syntax configuration into a temporary
  directory, starts `junctiond -c FILE` with its output captured to a file,
  waits until the listener accepts connections, and stops it with SIGTERM,
  requiring exit status 0 (a pool leak at exit also makes it non-zero).
* RouterTestCase: a unittest.TestCase that starts routers and always stops
  them (addCleanup), and puts the router's log into every failure message.
* Scenario: one proton reactor (python3-qpid-proton) holding any number of
  client connections, driven by callbacks, with a watchdog so that nothing
  waits for ever. Traffic is the general-purpose scenario: receivers attach
  first, then senders send and every outcome and message is recorded.
* Raw AMQP: a socket client that writes frames built by hand (the SASL
  ANONYMOUS exchange included), for the bad-input tests; and a small
  splitter of encoded AMQP values, for byte-for-byte comparisons.
* Large bodies: a deterministic multi-megabyte message streamed in chunks
  with bounded client memory, and a receiver that hashes as it reads.

Run as a script, this file is a client that a test can kill with SIGKILL
(see `main` at the bottom): `hold-receiver` takes messages and never settles
them, `stream-sender` streams one large message, `flood-sender` sends as
fast as its credit allows.

Every client connects to 127.0.0.1 only. Every wait is bounded.
"""
import hashlib
import os
import resource
import random
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from proton import (Data, Delivery, Described, Endpoint, Handler, Message, symbol, ubyte, uint,
                    ulong, ushort)
from proton.handlers import MessagingHandler
from proton.reactor import AtMostOnce, Container

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("JN_SOURCE_DIR", os.path.normpath(os.path.join(HERE, "..", "..")))
BUILD_DIR = os.environ.get("JN_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
JUNCTIOND = os.path.join(BUILD_DIR, "junctiond")
BENCH = os.path.join(BUILD_DIR, "junction-bench")
PYTHON = "/usr/bin/python3"


def _sanitizer():
    """The sanitizer the build directory was configured with ('' for none)."""
    try:
        with open(os.path.join(BUILD_DIR, "CMakeCache.txt")) as f:
            m = re.search(r"^JN_SANITIZE:\w+=(.*)$", f.read(), re.M)
            return m.group(1).strip() if m else ""
    except OSError:
        return ""


SANITIZER = _sanitizer()


# Sanitizer builds run several times slower: every bounded wait stretches.
SLOW = {"": 1, "address": 3, "thread": 6}.get(SANITIZER, 4)
STOP_TIMEOUT = 5.0  # orderly stop on SIGTERM (issue 3: within 5 s)
START_TIMEOUT = 10.0 * SLOW


def free_port():
    """A TCP port on 127.0.0.1 that nothing is bound to right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(text, lines=60):
    """The last `lines` lines of text, for failure messages."""
    rows = text.splitlines()
    cut = "" if len(rows) <= lines else "... (%d lines cut)\n" % (len(rows) - lines)
    return cut + "\n".join(rows[-lines:])


# --------------------------------------------------------------------------
# Router processes

def conf_section(name, attrs):
    """One qdrouterd.conf section, one `name: value` per line."""
    body = "".join("    %s: %s\n" % (k, v) for k, v in attrs.items() if v is not None)
    return "%s {\n%s}\n" % (name, body)


def container_listener(name=None):
    """A `role: route-container` listener on the router's second port
    ({container_port}, Router.container_url): where a broker (a container
    that link routes and auto-links use) connects, as 1.19 wants it."""
    return conf_section("listener", {"name": name, "host": "127.0.0.1",
                                     "port": "{container_port}", "role": "route-container",
                                     "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"})


class Router:
    """One junctiond process on a fresh 127.0.0.1 port.

    Either give the whole configuration text (`config`, where the string
    {port} is replaced by the chosen port) or let the class write one from
    `router`, `listener` attribute overrides and extra `addresses` (a list of
    dicts for `address` sections). {container_port} is replaced by a second
    port, for container_listener().
    """

    def __init__(self, workdir, name="R", config=None, router=None, listener=None,
                 addresses=(), extra="", worker_threads=2):
        self.workdir = workdir
        self.name = name
        self.port = free_port()
        self.container_port = free_port()
        while self.container_port == self.port:
            self.container_port = free_port()
        self.conf_path = os.path.join(workdir, "%s.conf" % name)
        self.log_path = os.path.join(workdir, "%s.log" % name)
        if config is None:
            config = self.make_config(router or {}, listener or {}, addresses, extra,
                                      worker_threads)
        else:
            config = config.replace("{port}", str(self.port))
        config = config.replace("{container_port}", str(self.container_port))
        with open(self.conf_path, "w") as f:
            f.write(config)
        self.proc = None
        self._log_file = None
        self.signalled = False
        self.nofile = None  # RLIMIT_NOFILE (soft = hard) for the router, if set
        self.extra_args = []  # more junctiond options after -c FILE
        self.env = None  # the router's environment (None: the test's)

    def make_config(self, router, listener, addresses, extra, worker_threads):
        r = {"mode": "standalone", "id": self.name, "workerThreads": worker_threads}
        r.update(router)
        lst = {"host": "127.0.0.1", "port": "{port}", "role": "normal",
               "saslMechanisms": "ANONYMOUS", "authenticatePeer": "no"}
        lst.update(listener)
        text = conf_section("router", r) + conf_section("listener", lst)
        for a in addresses:
            text += conf_section("address", a)
        text += conf_section("log", {"module": "DEFAULT", "enable": "info+",
                                     "includeTimestamp": "yes"})
        return (text + extra).replace("{port}", str(self.port))

    @property
    def url(self):
        return "amqp://127.0.0.1:%d" % self.port

    @property
    def container_url(self):
        """The route-container listener's URL (container_listener())."""
        return "amqp://127.0.0.1:%d" % self.container_port

    @property
    def pid(self):
        return self.proc.pid

    def start(self):
        if not os.access(JUNCTIOND, os.X_OK):
            raise AssertionError("junctiond is not built at %s (JN_BUILD_DIR=%s)"
                                 % (JUNCTIOND, BUILD_DIR))
        self._log_file = open(self.log_path, "wb")
        limit = self.nofile

        def preexec():
            if limit:
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        self.proc = subprocess.Popen([JUNCTIOND, "-c", self.conf_path] + self.extra_args,
                                     stdin=subprocess.DEVNULL, stdout=self._log_file,
                                     stderr=subprocess.STDOUT, cwd=self.workdir,
                                     preexec_fn=preexec, env=self.env)
        return self

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    def describe(self):
        status = "running" if self.proc and self.proc.poll() is None else \
            "exited with %s" % (self.proc.returncode if self.proc else "(not started)")
        return "router %s (port %d, %s), log:\n%s" % (self.name, self.port, status,
                                                      log_tail(self.log()))

    def listening(self):
        """Whether this junctiond process itself has a listening socket on
        the port (not merely whether something accepts connections there: on
        a shared machine another process could hold the port)."""
        inodes = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(table) as f:
                    next(f)
                    for row in f:
                        cols = row.split()
                        if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == self.port:
                            inodes.add("socket:[%s]" % cols[9])
            except OSError:
                pass
        if not inodes:
            return False
        fd_dir = "/proc/%d/fd" % self.pid
        try:
            for fd in os.listdir(fd_dir):
                try:
                    if os.readlink(os.path.join(fd_dir, fd)) in inodes:
                        return True
                except OSError:
                    pass
        except OSError:
            pass
        return False

    def wait_ready(self, timeout=START_TIMEOUT):
        """Wait until junctiond listens on its port."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("junctiond exited during start-up: " + self.describe())
            if self.listening():
                return self
            if time.monotonic() > deadline:
                raise AssertionError("junctiond did not listen on port %d within %.0f s: %s"
                                     % (self.port, timeout, self.describe()))
            time.sleep(0.05)

    def signal(self, sig):
        """Send a signal; the test then checks the exit itself."""
        self.signalled = True
        self.proc.send_signal(sig)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def status_kb(self, field):
        """A /proc/<pid>/status figure in kB (VmRSS, VmHWM, ...)."""
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise AssertionError("%s not in /proc/%d/status" % (field, self.pid))

    def stop(self):
        """SIGTERM; the router must exit 0 within STOP_TIMEOUT (SLOW-scaled for
        the sanitizer's exit-time checks). Returns an error text or None."""
        if self.proc is None:
            return None
        error = None
        if self.proc.poll() is not None and self.signalled:
            pass  # the test stopped it and checks the exit status itself
        elif self.proc.poll() is not None:
            error = "junctiond had already exited with status %s before the test stopped it" \
                    % self.proc.returncode
        else:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT * SLOW)
                if self.proc.returncode != 0:
                    error = "junctiond exited with status %s on SIGTERM" % self.proc.returncode
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                error = "junctiond did not stop within %.0f s of SIGTERM (killed)" \
                        % (STOP_TIMEOUT * SLOW)
        self._log_file.close()
        return error and "%s: %s" % (error, self.describe())


def run_junctiond(args, timeout=10.0 * SLOW, cwd=None):
    """Run junctiond to completion (for configurations expected to fail);
    returns the CompletedProcess (text)."""
    if not os.access(JUNCTIOND, os.X_OK):
        raise AssertionError("junctiond is not built at %s" % JUNCTIOND)
    return subprocess.run([JUNCTIOND] + list(args), capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL)


class RouterTestCase(unittest.TestCase):
    """Base class: a temporary directory, routers that are always stopped, and
    failure messages that carry the routers' logs."""

    maxDiff = None

    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="jn-%s-" % self._testMethodName)
        self.addCleanup(shutil.rmtree, self.workdir, True)
        self.routers = []

    def wait_for(self, what, predicate, timeout=None):
        """Poll predicate every 50 ms until it is true; fail with the
        routers' logs after timeout seconds (default 10 s, times SLOW)."""
        timeout = 10 * SLOW if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                self.fail("timed out waiting for %s\n%s" % (what, self.logs()))
            time.sleep(0.05)

    def start_router(self, nofile=None, **kw):
        for attempt in range(3):
            r = Router(self.workdir, name="R%d" % len(self.routers), **kw)
            r.nofile = nofile
            r.start()
            try:
                r.wait_ready()
            except AssertionError:
                # Another process took the free port first: try a new one.
                if attempt < 2 and not r.alive() and "in use" in r.log().lower():
                    r.stop()
                    continue
                self.routers.append(r)
                self.addCleanup(self._stop_router, r)
                raise
            self.routers.append(r)
            self.addCleanup(self._stop_router, r)
            return r

    def _stop_router(self, r):
        error = r.stop()
        if error:
            self.fail(error)

    def logs(self):
        return "\n".join(r.describe() for r in self.routers)

    def start_witness(self, router, **kw):
        """Steady traffic on other connections (see Witness); stopped at
        cleanup if the test does not call finish_witness."""
        w = Witness(router, **kw).start_thread()
        if w.error or len(w.got) < 5:
            self.fail("witness traffic did not start: %s %s\n%s"
                      % (w.error, w.progress(), self.logs()))
        self.addCleanup(lambda: w.thread.is_alive() and w.finish(0))
        return w

    def finish_witness(self, w, more=20):
        error = w.finish(more)
        if error:
            self.fail("%s\n%s" % (error, self.logs()))

    def run_scenario(self, scenario):
        """Run a Scenario to its end; fail with its error and the logs."""
        scenario.run()
        if scenario.error:
            self.fail("%s\n%s" % (scenario.error, self.logs()))
        return scenario

    def spawn(self, *args):
        """Start `harness.py ARGS` as a client subprocess (stdout piped)."""
        p = subprocess.Popen([PYTHON, os.path.join(HERE, "harness.py")] + [str(a) for a in args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL)

        def reap():
            if p.poll() is None:
                p.kill()
            p.wait(10)
            p.stdout.close()
            p.stderr.close()
        self.addCleanup(reap)
        return ChildClient(p)


class ChildClient:
    """A client subprocess whose stdout lines are read without blocking."""

    def __init__(self, proc):
        self.proc = proc
        self.lines = []
        self._buf = b""

    def poll_lines(self):
        """Read whatever stdout has now; return all lines so far."""
        fd = self.proc.stdout.fileno()
        while select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self._buf += chunk
            *done, self._buf = self._buf.split(b"\n")
            self.lines.extend(x.decode() for x in done)
        return self.lines

    def last(self, prefix):
        """The last line starting with prefix, or None."""
        for line in reversed(self.poll_lines()):
            if line.startswith(prefix):
                return line
        return None

    def stderr(self):
        try:
            fd = self.proc.stderr.fileno()
            out = b""
            while select.select([fd], [], [], 0)[0]:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                out += chunk
            return out.decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""


# --------------------------------------------------------------------------
# Proton reactor scenarios

CONNECT = {"allowed_mechs": "ANONYMOUS", "sasl_enabled": True}


class _Call(Handler):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def on_timer_task(self, event):
        self.fn()


class Scenario(MessagingHandler):
    """A proton Container running this handler until done() or fail().

    A watchdog ticks every TICK seconds: it calls tick() (for polling), fails
    the scenario after `timeout` seconds, and once the scenario is over waits
    at most a few seconds for the connections to close before stopping the
    container. Subclasses implement start() and whatever on_* they need;
    progress() says how far things got, for the timeout message.
    """

    TICK = 0.05

    def __init__(self, timeout=30.0, **kw):
        kw.setdefault("prefetch", 0)
        kw.setdefault("auto_accept", False)
        super().__init__(**kw)
        self.timeout = timeout * SLOW
        self.error = None
        self.over = False
        self.connections = []
        self.container = None
        self.started = None
        self._stop_by = None

    # To be provided by subclasses.
    def start(self):
        raise NotImplementedError

    def tick(self):
        pass

    def progress(self):
        return ""

    # Driving.
    def run(self):
        self.container = Container(self)
        self.container.container_id = "jn-test-%d" % os.getpid()
        self.container.run()
        return self

    def connect(self, url, **kw):
        opts = dict(CONNECT)
        opts.update(kw)
        c = self.container.connect(url, **opts)
        self.connections.append(c)
        return c

    def elapsed(self):
        return time.monotonic() - self.started

    def on_start(self, event):
        self.started = time.monotonic()
        self.container = event.container
        self.container.schedule(self.TICK, _Call(self._watchdog))
        try:
            self.start()
        except Exception as e:  # a bug in the scenario: report it, don't hang
            self.fail("scenario start raised %r" % e)

    def _watchdog(self):
        if not self.over:
            if self.elapsed() > self.timeout:
                self.fail("timed out after %.0f s: %s" % (self.timeout, self.progress()))
            else:
                try:
                    self.tick()
                except Exception as e:
                    self.fail("scenario tick raised %r" % e)
        if self.over:
            busy = [c for c in self.connections
                    if c.transport is not None and not c.transport.closed and
                    c.state & Endpoint.REMOTE_ACTIVE]
            if not busy or time.monotonic() > self._stop_by:
                self.container.stop()
                return
        self.container.schedule(self.TICK, _Call(self._watchdog))

    def done(self):
        """End the scenario: close every connection."""
        if self.over:
            return
        self.over = True
        self._stop_by = time.monotonic() + 3.0
        for c in self.connections:
            if c.state & Endpoint.LOCAL_ACTIVE:
                c.close()

    def fail(self, message):
        if self.error is None:
            self.error = message
        self.done()

    # Errors the peer reports are failures unless a subclass expects them.
    def on_transport_error(self, event):
        if not self.over:
            cond = event.transport.condition
            self.fail("transport error: %s" % (cond,))

    def on_connection_error(self, event):
        if not self.over:
            self.fail("connection closed by the router: %s" % (event.connection.remote_condition,))

    def on_session_error(self, event):
        if not self.over:
            self.fail("session ended by the router: %s" % (event.session.remote_condition,))

    def on_link_error(self, event):
        if not self.over:
            self.fail("link %s detached by the router: %s"
                      % (event.link.name, event.link.remote_condition))

    def on_disconnected(self, event):
        if not self.over:
            self.fail("disconnected from the router")


def seq_message(seq, body_size=0, **kw):
    """A message numbered by application property 'seq' (body: that many
    octets of filler, or the number itself)."""
    body = (b"%08d" % seq) * (body_size // 8 + 1) if body_size else seq
    return Message(body=body[:body_size] if body_size else body, properties={"seq": seq}, **kw)


class Recv:
    """A receiving client for Traffic: its own connection and one link.

    outcome: what to do with each delivery: 'accept', 'reject', 'release',
    'modify', 'hold' (settle all with accept only when Traffic has the
    expected total), or a function (recv, message, delivery) -> None that
    settles (or not) itself.
    """

    def __init__(self, address, credit=300, outcome="accept", dynamic=False, url=None,
                 condition=None, raw=False, presettled=False):
        self.address = address
        self.presettled = presettled  # snd-settle-mode settled: asks for settled deliveries
        self.raw = raw  # keep each message's encoded octets instead of decoding it
        self.credit = credit
        self.outcome = outcome
        self.dynamic = dynamic
        self.url = url
        self.condition = condition  # for 'reject': a proton Condition
        self.messages = []
        self.held = []
        self.link = None
        self.opened = False


class Send:
    """A sending client for Traffic: its own connection and one link (address
    None: an anonymous-relay link; give each message its `address`). A
    message given as bytes is sent as those octets, unchanged."""

    def __init__(self, address, messages, presettled=False, url=None):
        self.address = address
        self.messages = list(messages)
        self.presettled = presettled
        self.url = url
        self.next = 0
        self.outcomes = {}  # index -> (remote_state, remote Disposition)
        self.index = {}  # delivery tag -> index
        self.link = None

    @property
    def finished(self):
        if self.next < len(self.messages):
            return False
        return self.presettled or len(self.outcomes) == len(self.messages)


class Traffic(Scenario):
    """Receivers attach first; once the router has answered every receiver's
    attach, senders attach and send as credit allows. The scenario ends when
    every sender has sent everything (pre-settled) or seen every delivery
    settled, and the receivers together got `expect` messages; then it
    lingers a little to catch duplicates."""

    def __init__(self, router, receivers, senders, expect, timeout=60.0, linger=0.2):
        super().__init__(timeout=timeout)
        self.router = router
        self.receivers = list(receivers)
        self.senders = list(senders)
        self.expect = expect
        self.linger = linger
        self._by_link = {}
        self._senders_started = False
        self._complete_at = None

    @property
    def received(self):
        return sum(len(r.messages) for r in self.receivers)

    def progress(self):
        return ("receivers attached %d/%d, received %d/%d (%s), senders sent %s, settled %s"
                % (sum(r.opened for r in self.receivers), len(self.receivers), self.received,
                   self.expect, [len(r.messages) for r in self.receivers],
                   [s.next for s in self.senders], [len(s.outcomes) for s in self.senders]))

    def start(self):
        for r in self.receivers:
            conn = self.connect(r.url or self.router.url)
            handler = _RawLink(self, r) if r.raw else None
            r.link = self.container.create_receiver(conn, r.address, dynamic=r.dynamic,
                                                    handler=handler,
                                                    options=AtMostOnce() if r.presettled else None)
            self._by_link[r.link] = r
        if not self.receivers:
            self._start_senders()

    def _start_senders(self):
        self._senders_started = True
        for s in self.senders:
            conn = self.connect(s.url or self.router.url)
            s.link = self.container.create_sender(conn, s.address,
                                                  options=AtMostOnce() if s.presettled else None)
            self._by_link[s.link] = s

    def on_link_opened(self, event):
        r = self._by_link.get(event.link)
        if isinstance(r, Recv):
            self.receiver_opened(r, event.link)

    def receiver_opened(self, r, link):
        if not r.opened:
            r.opened = True
            link.flow(r.credit)
            if not self._senders_started and all(x.opened for x in self.receivers):
                self._start_senders()

    def on_sendable(self, event):
        s = self._by_link.get(event.link)
        if not isinstance(s, Send):
            return
        link = event.link
        while link.credit > 0 and s.next < len(s.messages):
            m = s.messages[s.next]
            if isinstance(m, bytes):
                dlv = raw_delivery(link, m, "raw-%d" % s.next)
            else:
                dlv = link.send(m)
            s.index[dlv.tag] = s.next
            s.next += 1
            if s.presettled:
                dlv.settle()
        self._check()

    def on_settled(self, event):
        dlv = event.delivery
        s = self._by_link.get(dlv.link)
        if isinstance(s, Send):
            s.outcomes[s.index[dlv.tag]] = (dlv.remote_state, dlv.remote)
            self._check()

    def on_message(self, event):
        r = self._by_link.get(event.link)
        if isinstance(r, Recv):
            self.received_message(r, event.message, event.delivery)

    def received_message(self, r, message, dlv):
        r.messages.append(message)
        dlv.link.flow(1)
        if callable(r.outcome):
            r.outcome(r, message, dlv)
        elif not dlv.settled:
            if r.outcome == "hold":
                r.held.append(dlv)
            else:
                self.settle_as(dlv, r.outcome, r.condition)
        if self.received >= self.expect:
            for x in self.receivers:
                for d in x.held:
                    self.settle_as(d, "accept")
                x.held = []
        self._check()

    @staticmethod
    def settle_as(dlv, outcome, condition=None):
        if outcome == "accept":
            dlv.update(Delivery.ACCEPTED)
        elif outcome == "reject":
            if condition is not None:
                dlv.local.condition = condition
            dlv.update(Delivery.REJECTED)
        elif outcome == "release":
            dlv.update(Delivery.RELEASED)
        elif outcome == "modify":
            dlv.local.failed = True
            dlv.local.undeliverable = True
            dlv.update(Delivery.MODIFIED)
        else:
            raise ValueError(outcome)
        dlv.settle()

    def _check(self):
        if self.over:
            return
        if self.received > self.expect:
            self.fail("received %d messages, more than the %d expected: %s"
                      % (self.received, self.expect, self.progress()))
            return
        if (self._complete_at is None and self.received == self.expect and
                self._senders_started and all(s.finished for s in self.senders)):
            self._complete_at = time.monotonic()

    def tick(self):
        self._check()
        if self._complete_at is not None and time.monotonic() - self._complete_at >= self.linger:
            self.done()


class _RawLink(Handler):
    """Link handler of a raw Recv: hands Traffic each delivery's octets."""

    def __init__(self, traffic, recv):
        super().__init__()
        self.traffic, self.recv = traffic, recv

    def on_link_remote_open(self, event):
        self.traffic.receiver_opened(self.recv, event.link)

    def on_link_remote_close(self, event):
        if not self.traffic.over and event.link.remote_condition:
            self.traffic.fail("link %s detached by the router: %s"
                              % (event.link.name, event.link.remote_condition))

    def on_delivery(self, event):
        dlv = event.delivery
        if dlv.readable and not dlv.partial:
            data = event.link.recv(dlv.pending)
            event.link.advance()
            self.traffic.received_message(self.recv, data, dlv)


def seqs(messages):
    """The 'seq' application property of each message, in arrival order."""
    return [m.properties["seq"] for m in messages]


class Witness(Scenario):
    """Steady traffic on its own two connections, run in a thread while a
    test misbehaves elsewhere: `per_tick` unsettled messages every tick.
    After finish(more), it sends `more` further messages and ends once
    everything sent was received and accepted; check() then says whether
    anything was lost, duplicated or refused."""

    def __init__(self, router, address="witness.q", per_tick=5, timeout=60.0):
        super().__init__(timeout=timeout)
        self.router, self.address, self.per_tick = router, address, per_tick
        self.sender = None
        self.sent = 0
        self.got = []
        self.states = {}
        self.stop_at = None
        self._more = None
        self.thread = None

    def start(self):
        self.receiver = self.container.create_receiver(self.connect(self.router.url),
                                                       self.address)

    def on_link_opened(self, event):
        if event.link == self.receiver:
            event.link.flow(500)
            self.sender = self.container.create_sender(self.connect(self.router.url),
                                                       self.address)

    def tick(self):
        if self._more is not None and self.stop_at is None:
            self.stop_at = self.sent + self._more
        if self.sender is None:
            return
        n = 0
        while (n < self.per_tick and self.sender.credit > 0 and
               (self.stop_at is None or self.sent < self.stop_at)):
            self.sender.send(seq_message(self.sent))
            self.sent += 1
            n += 1
        self._maybe_done()

    def on_message(self, event):
        self.accept(event.delivery)
        event.link.flow(1)
        self.got.append(event.message.properties["seq"])
        self._maybe_done()

    def on_settled(self, event):
        if event.link.is_sender:
            self.states[event.delivery.tag] = event.delivery.remote_state
            self._maybe_done()

    def _maybe_done(self):
        if (self.stop_at is not None and self.sent == self.stop_at and
                len(self.got) >= self.sent and len(self.states) == self.sent):
            self.done()

    def progress(self):
        return "sent %d, received %d, settled %d, stop at %s" % (
            self.sent, len(self.got), len(self.states), self.stop_at)

    # Called from the test's thread.
    def start_thread(self):
        self.thread = threading.Thread(target=self.run, name="witness", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + self.timeout
        while len(self.got) < 5 and self.error is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return self

    def finish(self, more=20):
        """Send `more`, wait for the end; returns a failure text or None."""
        self._more = more
        self.thread.join(self.timeout + 10)
        if self.thread.is_alive():
            return "witness traffic did not finish: " + self.progress()
        if self.error:
            return "witness traffic on another connection failed: " + self.error
        if self.got != list(range(self.sent)):
            return "witness traffic lost or duplicated messages: sent %d, got %s" % (
                self.sent, self.got)
        refused = [st for st in self.states.values() if st != Delivery.ACCEPTED]
        if refused:
            return "witness deliveries not accepted: %s" % refused
        return None


# --------------------------------------------------------------------------
# Large messages: streamed in chunks, hashed on the fly.

CHUNK = 1 << 20


class LargeBody:
    """A deterministic message of `size` body octets in one data section,
    produced in CHUNK pieces; `digest` is the hash of every encoded octet."""

    def __init__(self, size, seed=7):
        self.size = size
        self.block = random.Random(seed).randbytes(CHUNK)
        self.header = b"\x00\x53\x75\xb0" + struct.pack(">I", size)  # data section, vbin32
        self.total = len(self.header) + size

    def pieces(self):
        yield self.header
        for k in range((self.size + CHUNK - 1) // CHUNK):
            n = min(CHUNK, self.size - k * CHUNK)
            yield (struct.pack(">Q", k) + self.block[8:])[:n]

    def digest(self):
        h = hashlib.sha1()
        for p in self.pieces():
            h.update(p)
        return h.hexdigest()


class StreamSend(Handler):
    """Link handler: streams one LargeBody as one delivery, keeping at most
    `window` octets in proton's buffers; on_progress(octets) after each
    piece."""

    def __init__(self, body, window=4 * CHUNK, on_progress=None, on_complete=None):
        super().__init__()
        self.body = body
        self.window = window
        self.pieces = body.pieces()
        self.delivery = None
        self.sent = 0
        self.complete = False
        self.on_progress = on_progress
        self.on_complete = on_complete
        self.remote_state = None

    def pump(self, link):
        if self.complete or link.state & Endpoint.LOCAL_CLOSED:
            return
        if self.delivery is None:
            if link.credit <= 0:
                return
            self.delivery = link.delivery("large-1")
        while link.session.outgoing_bytes < self.window:
            piece = next(self.pieces, None)
            if piece is None:
                link.advance()
                self.complete = True
                if self.on_complete:
                    self.on_complete()
                break
            link.stream(piece)
            self.sent += len(piece)
            if self.on_progress:
                self.on_progress(self.sent)

    def on_link_flow(self, event):
        self.pump(event.link)

    def on_delivery(self, event):
        if event.delivery.remote_state:
            self.remote_state = event.delivery.remote_state
        if event.delivery.settled:
            event.delivery.settle()


class HashRecv(Handler):
    """Link handler: receives deliveries' octets as they come, hashing them;
    records each finished (or aborted) delivery."""

    def __init__(self, credit=1):
        super().__init__()
        self.credit = credit
        self.hash = hashlib.sha1()
        self.octets = 0
        self.finished = []  # (octets, hexdigest, aborted)

    def on_link_remote_open(self, event):
        event.link.flow(self.credit)

    def on_delivery(self, event):
        dlv = event.delivery
        link = event.link
        if dlv.aborted:
            self.finished.append((self.octets, None, True))
            dlv.settle()
            self.hash = hashlib.sha1()
            self.octets = 0
            return
        while True:
            data = link.recv(CHUNK)
            if not data:
                break
            self.hash.update(data)
            self.octets += len(data)
        if not dlv.partial and dlv.pending == 0 and dlv.readable:
            self.finished.append((self.octets, self.hash.hexdigest(), False))
            self.hash = hashlib.sha1()
            self.octets = 0
            link.advance()
            dlv.update(Delivery.ACCEPTED)
            dlv.settle()


# --------------------------------------------------------------------------
# Raw AMQP: frames built by hand, for bad input.

AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
SASL_HEADER = b"AMQP\x03\x01\x00\x00"
OPEN, BEGIN, ATTACH, FLOW, TRANSFER, DISPOSITION, DETACH, END, CLOSE = range(0x10, 0x19)
SASL_MECHANISMS, SASL_INIT, SASL_OUTCOME = 0x40, 0x41, 0x44
NAMES = {OPEN: "open", BEGIN: "begin", ATTACH: "attach", FLOW: "flow", TRANSFER: "transfer",
         DISPOSITION: "disposition", DETACH: "detach", END: "end", CLOSE: "close",
         SASL_MECHANISMS: "sasl-mechanisms", SASL_INIT: "sasl-init",
         SASL_OUTCOME: "sasl-outcome"}


def encode(value):
    """AMQP encoding of a python value (proton types for the exact kind)."""
    d = Data()
    d.put_object(value)
    return d.encode()


def performative(code, fields):
    return encode(Described(ulong(code), list(fields)))


def frame(body, channel=0, kind=0):
    """An AMQP frame (kind 0) or SASL frame (kind 1) around body."""
    return struct.pack(">IBBH", 8 + len(body), 2, kind, channel) + body


class Frame:
    def __init__(self, kind, channel, code, fields, payload):
        self.kind, self.channel, self.code, self.fields, self.payload = \
            kind, channel, code, fields, payload

    @property
    def name(self):
        return NAMES.get(self.code, "empty" if self.code is None else hex(self.code))

    def error(self):
        """The (condition, description) of a close/end/detach error field."""
        idx = {CLOSE: 0, END: 0, DETACH: 2}.get(self.code)
        if idx is None or len(self.fields) <= idx or self.fields[idx] is None:
            return None
        err = self.fields[idx].value
        return (str(err[0]), err[1] if len(err) > 1 else None)

    def __repr__(self):
        return "<%s ch=%d %r>" % (self.name, self.channel, self.fields)


class RawClient:
    """A plain socket speaking AMQP by hand to a router on 127.0.0.1."""

    def __init__(self, port, timeout=10.0):
        self.timeout = timeout * SLOW
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=self.timeout)
        self.buf = b""
        self.frames = []
        self.remote_open = None

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data)

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("connection closed by the router after %r" % self.frames[-3:])
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_header(self):
        return self._read(8)

    def read_frame(self):
        size, doff, kind, channel = struct.unpack(">IBBH", self._read(8))
        rest = self._read(size - 8)
        body = rest[doff * 4 - 8:]
        if not body:
            f = Frame(kind, channel, None, [], b"")
        else:
            d = Data()
            used = d.decode(body)
            d.rewind()
            d.next()
            v = d.get_object()
            f = Frame(kind, channel, int(v.descriptor), list(v.value or []), body[used:])
        self.frames.append(f)
        return f

    def expect(self, code):
        """Read frames until one with this performative code arrives."""
        while True:
            f = self.read_frame()
            if f.code == code:
                return f

    def sasl_anonymous(self):
        self.send(SASL_HEADER)
        got = self.read_header()
        if got != SASL_HEADER:
            raise AssertionError("router answered the SASL header with %r" % got)
        mechs = self.expect(SASL_MECHANISMS)
        field = mechs.fields[0]  # one symbol, or an array of them
        offered = [str(m) for m in getattr(field, "elements", None) or [field]]
        if "ANONYMOUS" not in offered:
            raise AssertionError("router does not offer ANONYMOUS: %r" % offered)
        self.send(frame(performative(SASL_INIT, [symbol("ANONYMOUS"), b"anonymous"]), kind=1))
        outcome = self.expect(SASL_OUTCOME)
        if int(outcome.fields[0]) != 0:
            raise AssertionError("SASL outcome %r" % outcome)

    def open(self, max_frame_size=65536, idle_time_out=None):
        """SASL ANONYMOUS, AMQP header, open (with idle-time-out in ms when
        given); returns the router's open."""
        self.sasl_anonymous()
        self.send(AMQP_HEADER)
        got = self.read_header()
        if got != AMQP_HEADER:
            raise AssertionError("router answered the AMQP header with %r" % got)
        fields = ["raw-client-%d" % os.getpid(), "127.0.0.1", uint(max_frame_size), ushort(255)]
        if idle_time_out is not None:
            fields.append(uint(idle_time_out))
        self.send(frame(performative(OPEN, fields)))
        self.remote_open = self.expect(OPEN)
        return self.remote_open

    def begin(self, channel=0):
        self.send(frame(performative(BEGIN, [None, uint(0), uint(1 << 20), uint(1 << 20)]),
                        channel))
        return self.expect(BEGIN)

    def attach_sender(self, name, handle, address, channel=0):
        self.send(frame(performative(ATTACH, [
            name, uint(handle), False, ubyte(0), ubyte(0),
            Described(ulong(0x28), [None]), Described(ulong(0x29), [address]),
            None, None, uint(0)]), channel))
        return self.expect(ATTACH)

    def transfer(self, handle, delivery_id, payload, channel=0, settled=False):
        self.send(frame(performative(TRANSFER, [uint(handle), uint(delivery_id),
                                                b"t%d" % delivery_id, uint(0), settled])
                        + payload, channel))

    def read_until_closed(self):
        """Read frames until the router closes the socket, answering its
        close frame; returns them. A timeout (the router kept the socket open) raises AssertionError."""
        try:
            while True:
                f = self.read_frame()
                if f.code == CLOSE:  # answer as a well-behaved peer would
                    try:
                        self.send(frame(performative(CLOSE, [])))
                    except OSError:
                        pass
        except EOFError:
            return self.frames
        except ConnectionResetError:
            return self.frames
        except socket.timeout:
            raise AssertionError("the router kept the connection open for %.0f s; frames: %r"
                                 % (self.timeout, self.frames))


def split_value(data, off=0):
    """The offset just past the AMQP-encoded value that starts at data[off]."""
    code = data[off]
    off += 1
    if code == 0x00:  # described: descriptor then value
        return split_value(data, split_value(data, off))
    width = code >> 4
    if width == 0x4:
        return off
    if width in (0x5, 0x6, 0x7, 0x8, 0x9):
        return off + {0x5: 1, 0x6: 2, 0x7: 4, 0x8: 8, 0x9: 16}[width]
    if width in (0xa, 0xc, 0xe):
        return off + 1 + data[off]
    if width in (0xb, 0xd, 0xf):
        return off + 4 + struct.unpack_from(">I", data, off)[0]
    raise ValueError("bad AMQP constructor 0x%02x at %d" % (code, off - 1))


def split_sections(data):
    """A message's sections as (descriptor code, encoded octets) pairs."""
    out, off = [], 0
    while off < len(data):
        end = split_value(data, off)
        if data[off] != 0x00 or data[off + 1] != 0x53:
            raise ValueError("section at %d is not a small-ulong described value" % off)
        out.append((data[off + 2], data[off:end]))
        off = end
    return out


def map_entries(encoded_map):
    """The encoded (key, value) octet strings of an AMQP map, in order."""
    code = encoded_map[0]
    if code == 0xc1:
        off = 3
    elif code == 0xd1:
        off = 9
    else:
        raise ValueError("not a map: 0x%02x" % code)
    end = split_value(encoded_map, 0)
    items = []
    while off < end:
        k_end = split_value(encoded_map, off)
        v_end = split_value(encoded_map, k_end)
        items.append((encoded_map[off:k_end], encoded_map[k_end:v_end]))
        off = v_end
    return items


def raw_delivery(link, payload, tag):
    """Send octets as one complete delivery on a proton sender link."""
    dlv = link.delivery(tag)
    link.stream(payload)
    link.advance()
    return dlv


# --------------------------------------------------------------------------
# Client subprocesses (a test kills them with SIGKILL)

class _HoldReceiver(Scenario):
    """Receive and never settle; print 'attached' and 'received N'."""

    def __init__(self, url, address):
        super().__init__(timeout=3600)
        self.url, self.address, self.count = url, address, 0

    def start(self):
        self.container.create_receiver(self.connect(self.url), self.address)

    def on_link_opened(self, event):
        event.link.flow(1000)
        print("attached", flush=True)

    def on_message(self, event):
        self.count += 1
        print("received %d" % self.count, flush=True)


class _StreamSender(Scenario):
    """Stream one large message; print 'sent N' every 4 MiB."""

    def __init__(self, url, address, size):
        super().__init__(timeout=3600)
        self.url, self.address = url, address
        self.body = LargeBody(size)
        self.last = 0

    def start(self):
        link = self.container.create_sender(self.connect(self.url), self.address)
        self.stream = StreamSend(self.body, on_progress=self.report)
        link.handler = self.stream
        self.link = link

    def report(self, sent):
        if sent - self.last >= 4 * CHUNK:
            self.last = sent
            print("sent %d" % sent, flush=True)

    def tick(self):
        self.stream.pump(self.link)

    def on_transport(self, event):
        self.stream.pump(self.link)


class _AcceptSome(Scenario):
    """Receive; accept the first `accept` messages, release the next
    `release`, then hold every later one unsettled. Print 'accepted N' and
    'released N' as it goes; with `detach`, close the link once done
    instead of holding (and print 'detached')."""

    def __init__(self, url, address, accept, release, detach):
        super().__init__(timeout=3600)
        self.url, self.address = url, address
        self.accept_n, self.release_n, self.detach = accept, release, detach
        self.accepted = self.released = 0

    def start(self):
        self.link = self.container.create_receiver(self.connect(self.url), self.address)

    def on_link_opened(self, event):
        event.link.flow(20)

    def on_message(self, event):
        if self.accepted < self.accept_n:
            self.accept(event.delivery)
            self.accepted += 1
            print("accepted %d" % self.accepted, flush=True)
        elif self.released < self.release_n:
            self.release(event.delivery, delivered=False)
            self.released += 1
            print("released %d" % self.released, flush=True)
        elif self.detach:
            event.link.close()
            print("detached", flush=True)
            self.detach = False
        event.link.flow(1)


class _FloodSender(Scenario):
    """Send unsettled messages of `size` body octets whenever there is credit;
    print 'sent N settled M' every tick. The router may release or modify
    them (a consumer that went away): they count as settled."""

    def __init__(self, url, address, size):
        super().__init__(timeout=3600)
        self.url, self.address = url, address
        self.body = b"f" * size
        self.sent = self.settled = 0
        self.link = None

    def start(self):
        self.link = self.container.create_sender(self.connect(self.url), self.address)

    def on_sendable(self, event):
        while event.sender.credit > 0:
            event.sender.send(Message(body=self.body))
            self.sent += 1

    def on_settled(self, event):
        self.settled += 1

    def tick(self):
        print("sent %d settled %d" % (self.sent, self.settled), flush=True)


def main(argv):
    what = argv[1] if len(argv) > 1 else ""
    if what == "hold-receiver":
        s = _HoldReceiver(argv[2], argv[3]).run()
    elif what == "stream-sender":
        s = _StreamSender(argv[2], argv[3], int(argv[4])).run()
    elif what == "accept-some":
        s = _AcceptSome(argv[2], argv[3], int(argv[4]), int(argv[5]), argv[6] == "detach").run()
    elif what == "flood-sender":
        s = _FloodSender(argv[2], argv[3], int(argv[4])).run()
    else:
        print("usage: harness.py hold-receiver URL ADDRESS | stream-sender URL ADDRESS OCTETS"
              " | flood-sender URL ADDRESS BODY-OCTETS"
              " | accept-some URL ADDRESS ACCEPT RELEASE detach|hold", file=sys.stderr)
        return 2
    if s.error:
        print(s.error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
