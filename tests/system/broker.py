#!/usr/bin/python3
"""A private RabbitMQ broker for the system tests (issue 16).

Debian's rabbitmq-server (3.10) with its AMQP 1.0 plugin, started as a
process of its own: its node name, data, log and plugin folders under a
temporary folder, its own epmd (started here, on a free port, and stopped
by PID), AMQP and distribution on free ports of 127.0.0.1 only. AMQP 1.0
clients log in as ANONYMOUS (the plugin's default user is guest). The
broker's addresses: `/queue/NAME` (declares the queue NAME) as a source or
a target, `/amq/queue/NAME` for an existing queue.

    broker = Broker(workdir).start()   # waits until it accepts AMQP
    broker.port, broker.url
    broker.queue_depth("q1")            # rabbitmqctl list_queues
    broker.kill(); broker.start()      # restart on the same ports and data
    broker.stop()                      # SIGTERM by PID, then SIGKILL

Every wait is bounded. A test module shares one broker through
`shared_broker()` / `release_shared_broker()` (setUpModule/tearDownModule),
so the start-up cost (about ten seconds) is paid once per module.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

RABBIT_BIN = "/usr/lib/rabbitmq/bin"
START_TIMEOUT = 90.0


def available():
    """Whether rabbitmq-server is installed (./dev installs it)."""
    if not os.access(os.path.join(RABBIT_BIN, "rabbitmq-server"), os.X_OK):
        return False
    return shutil.which("epmd") is not None or os.path.exists("/usr/lib/erlang/bin/epmd")


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _epmd_path():
    for p in (shutil.which("epmd"), "/usr/lib/erlang/bin/epmd"):
        if p and os.access(p, os.X_OK):
            return p
    raise AssertionError("epmd not found (rabbitmq-server installs erlang)")


class Broker:
    def __init__(self, workdir=None, name=None):
        self._own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix="jn-rabbit-")
        self.port = _free_port()
        self.dist_port = _free_port()
        self.epmd_port = _free_port()
        self.node = "%s@localhost" % (name or "jnrabbit%d" % self.port)
        self.proc = None
        self.epmd = None
        self._log = None
        for d in ("mnesia", "log", "plugins", "home"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        with open(os.path.join(self.dir, "enabled_plugins"), "w") as f:
            f.write("[rabbitmq_amqp1_0].\n")
        with open(os.path.join(self.dir, "rabbitmq.conf"), "w") as f:
            f.write("loopback_users = none\n"
                    "listeners.tcp.default = 127.0.0.1:%d\n"
                    "amqp1_0.default_user = guest\n"
                    "amqp1_0.default_vhost = /\n" % self.port)

    @property
    def url(self):
        return "amqp://127.0.0.1:%d" % self.port

    def env(self):
        e = dict(os.environ)
        e.update({
            "HOME": os.path.join(self.dir, "home"),
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "ERL_EPMD_PORT": str(self.epmd_port),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            "RABBITMQ_MNESIA_BASE": os.path.join(self.dir, "mnesia"),
            "RABBITMQ_LOG_BASE": os.path.join(self.dir, "log"),
            "RABBITMQ_PLUGINS_EXPAND_DIR": os.path.join(self.dir, "plugins"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": os.path.join(self.dir, "enabled_plugins"),
            "RABBITMQ_CONFIG_FILE": os.path.join(self.dir, "rabbitmq"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": os.path.join(self.dir, "advanced.config"),
            "RABBITMQ_PID_FILE": os.path.join(self.dir, "rabbit.pid"),
        })
        return e

    def _accepting(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def start(self, timeout=START_TIMEOUT):
        if self.epmd is None or self.epmd.poll() is not None:
            self.epmd = subprocess.Popen([_epmd_path(), "-port", str(self.epmd_port),
                                          "-address", "127.0.0.1"],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, env=self.env())
        self._log = open(os.path.join(self.dir, "server.out"), "ab")
        self.proc = subprocess.Popen([os.path.join(RABBIT_BIN, "rabbitmq-server")],
                                     stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=self.env(),
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("rabbitmq-server exited with %s:\n%s"
                                     % (self.proc.returncode, self.output()))
            if self._accepting():
                return self
            time.sleep(0.2)
        self.stop()
        raise AssertionError("rabbitmq-server did not listen on %d within %.0f s:\n%s"
                             % (self.port, timeout, self.output()))

    def output(self):
        try:
            with open(os.path.join(self.dir, "server.out"), "rb") as f:
                return f.read().decode("utf-8", "replace")[-4000:]
        except OSError:
            return "(no output)"

    def _signal_group(self, sig):
        """The server script and the Erlang VM it started share the
        process group started here (start_new_session)."""
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self):
        """SIGKILL the broker (the test's "broker dies"); epmd stays."""
        if self.proc and self.proc.poll() is None:
            self._signal_group(signal.SIGKILL)
            self.proc.wait(timeout=30)
        if self._log:
            self._log.close()
            self._log = None
        deadline = time.monotonic() + 10
        while self._accepting() and time.monotonic() < deadline:
            time.sleep(0.1)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.proc.wait(timeout=30)
        if self._log:
            self._log.close()
            self._log = None
        if self.epmd and self.epmd.poll() is None:
            self.epmd.terminate()
            try:
                self.epmd.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.epmd.kill()
                self.epmd.wait(timeout=10)
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def ctl(self, *args, timeout=60):
        """rabbitmqctl against this node; its output."""
        out = subprocess.run([os.path.join(RABBIT_BIN, "rabbitmqctl")] + list(args),
                             env=self.env(), capture_output=True, timeout=timeout, text=True)
        if out.returncode != 0:
            raise AssertionError("rabbitmqctl %s: %s %s" % (" ".join(args), out.stdout,
                                                            out.stderr))
        return out.stdout

    def queue_depth(self, queue):
        """Messages in queue (ready + unacknowledged), or None if absent."""
        text = self.ctl("list_queues", "-q", "--no-table-headers", "name", "messages")
        for row in text.splitlines():
            cols = row.split()
            if len(cols) == 2 and cols[0] == queue:
                return int(cols[1])
        return None


_shared = None
_users = 0


def shared_broker():
    """The module's broker (started on first use)."""
    global _shared, _users
    if _shared is None:
        _shared = Broker().start()
    _users += 1
    return _shared


def release_shared_broker():
    global _shared, _users
    _users -= 1
    if _users <= 0 and _shared is not None:
        _shared.stop()
        _shared = None
