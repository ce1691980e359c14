"""The AMQP management client: one connection to a router, requests to its
`$management` node (or another router's, through the mesh), replies matched
by correlation-id.

How a request travels (docs/protocol.md, "Management requests"): a sender
whose target is the management address, a receiver with a dynamic source
whose address the router assigns and that every request names as its reply-to, and a string
correlation-id ("1", "2", ...) that the reply carries back. The request
delivery is sent unsettled and must be accepted before the reply is awaited.

QUERY paging: rows are asked for `page_size` at a time with an
increasing `offset`, and the next page is asked for only while a page comes
back exactly full. qdrouterd 1.19's tools asked again whenever a page was
full, so a server that ignored `offset` made them loop for ever; here a page
larger than asked for (the server ignored `count`) or a full page equal to
the one before (the server ignored `offset`) ends the loop, and so does
reaching the caller's row limit.

Every failure is raised as a ManagementError subclass whose str() is one
line a person can act on.
"""

import socket

from proton import Message, SSLDomain, Url
from proton import Timeout as ProtonTimeout
from proton.utils import BlockingConnection, LinkDetached, ConnectionClosed, SendException
from proton._exceptions import ConnectionException, LinkException, ProtonException

NODE_TYPE = "org.amqp.management"
NODE_NAME = "self"
MGMT_ADDRESS = "$management"
DEFAULT_URL = "amqp://127.0.0.1:5672"
DEFAULT_TIMEOUT = 5.0
DEFAULT_PAGE_SIZE = 500

# Exception class names as 1.19's tools print them before the description
# (docs/protocol.md, "Management requests"), so scripts grepping for them keep working.
STATUS_NAMES = {
    400: "BadRequestStatus",
    401: "UnauthorizedStatus",
    403: "ForbiddenStatus",
    404: "NotFoundStatus",
    500: "InternalServerErrorStatus",
    501: "NotImplementedStatus",
}


class ManagementError(Exception):
    """Base of every error the library raises; str() is one line."""


class ConnectError(ManagementError):
    """The connection (TCP, TLS, SASL or AMQP open) could not be made."""


class TimeoutError_(ManagementError):
    """No reply (or no settlement of the request) within the timeout."""


class StatusError(ManagementError):
    """The agent answered with a status other than the one expected."""

    def __init__(self, status, description, operation=None):
        self.status = status
        self.description = description
        self.operation = operation
        name = STATUS_NAMES.get(status)
        if name is None:
            text = "unexpected status %s for %s: %s" % (status, operation or "request",
                                                        description)
        else:
            text = "%s: %s" % (name, description)
        super().__init__(text)


def _one_line(text):
    return " ".join(str(text).split())


def _condition_text(exc):
    """The human part of a proton exception's text, lower-cased first letter."""
    text = str(exc)
    # "Connection amqp://h:p disconnected: Condition('proton.pythonio', 'Connection refused ...')"
    marker = "Condition("
    if marker in text:
        inner = text[text.index(marker) + len(marker):].rstrip(")")
        parts = [p.strip().strip("'\"") for p in inner.split(",", 1)]
        text = parts[1] if len(parts) > 1 else parts[0]
    text = _one_line(text)
    if text.lower().startswith("connection refused"):
        return "connection refused"
    return text[:1].lower() + text[1:] if text else "connection failed"


def management_address(path=None, router=None, edge_router=None):
    """The address requests are sent to.

    An explicit path in the URL wins; then -r ROUTER (`_topo/0/ROUTER/...`),
    then -d EDGE (`_edge/EDGE/...`), else the attached router's `$management`.
    """
    if path:
        return path.lstrip("/") if path.startswith("/") else path
    if router:
        return "_topo/0/%s/%s" % (router, MGMT_ADDRESS)
    if edge_router:
        return "_edge/%s/%s" % (edge_router, MGMT_ADDRESS)
    return MGMT_ADDRESS


class ConnectOptions:
    """Where and how to connect; attributes mirror the tools' options."""

    def __init__(self, url=DEFAULT_URL, router=None, edge_router=None, timeout=DEFAULT_TIMEOUT,
                 sasl_mechanisms=None, sasl_username=None, sasl_password=None,
                 ssl_certificate=None, ssl_key=None, ssl_trustfile=None, ssl_password=None,
                 ssl_disable_peer_name_verify=False, page_size=DEFAULT_PAGE_SIZE):
        self.url = url or DEFAULT_URL
        self.router = router
        self.edge_router = edge_router
        self.timeout = float(timeout) if timeout else DEFAULT_TIMEOUT
        self.sasl_mechanisms = sasl_mechanisms
        self.sasl_username = sasl_username
        self.sasl_password = sasl_password
        self.ssl_certificate = ssl_certificate
        self.ssl_key = ssl_key
        self.ssl_trustfile = ssl_trustfile
        self.ssl_password = ssl_password
        self.ssl_disable_peer_name_verify = ssl_disable_peer_name_verify
        self.page_size = int(page_size) if page_size else DEFAULT_PAGE_SIZE

    def uses_tls(self):
        return bool(self.ssl_certificate or self.ssl_trustfile or self.ssl_key)


# Values per QUERY page (see Client.query) and rows of a first page whose
# columns are not known yet.
MAX_PAGE_VALUES = 30000
FIRST_PAGE_ROWS = 100


def parse_url(text):
    """A proton Url with defaults filled in; a bare `host:port` or `host`
    means amqp://. Raises ConnectError for a URL proton cannot read."""
    try:
        url = Url(text)
        url.defaults()
        int(url.port)  # a port that is not a number or service fails here
    except (ValueError, TypeError, ProtonException) as e:
        raise ConnectError("bad URL %r: %s" % (text, _one_line(e)))
    return url


def display_url(url):
    """scheme://host:port for messages (no user or password)."""
    return "%s://%s:%s" % (url.scheme or "amqp", url.host, url.port)


class Client:
    """One connection to a router's management node. Use as a context
    manager, or call close()."""

    def __init__(self, options):
        self.options = options
        self.url = parse_url(options.url)
        if options.uses_tls() and self.url.scheme == "amqp":
            self.url.scheme = "amqps"
        self.where = display_url(self.url)
        self.address = management_address(self.url.path, options.router, options.edge_router)
        # -r ROUTER: ask the attached router's agent first whether ROUTER is
        # in its mesh, so a typo fails at once instead of after the timeout
        self._check_router = options.router if options.router and not self.url.path else None
        self._next_id = 1
        self.connection = None
        self.sender = None
        self.receiver = None
        self.reply_to = None
        self._connect()

    # -- connection ---------------------------------------------------------

    def _ssl_domain(self):
        o = self.options
        if not (o.uses_tls() or self.url.scheme == "amqps"):
            return None
        domain = SSLDomain(SSLDomain.MODE_CLIENT)
        if o.ssl_trustfile:
            domain.set_trusted_ca_db(o.ssl_trustfile)
        if o.ssl_certificate:
            domain.set_credentials(o.ssl_certificate, o.ssl_key, o.ssl_password)
        if o.ssl_disable_peer_name_verify:
            domain.set_peer_authentication(SSLDomain.VERIFY_PEER if o.ssl_trustfile
                                           else SSLDomain.ANONYMOUS_PEER)
        elif o.ssl_trustfile:
            domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME, o.ssl_trustfile)
        return domain

    def _sasl_kwargs(self):
        """SASL only when asked for (options or user in the URL): otherwise
        the connection starts with the bare AMQP header, as qdmanage's does."""
        o = self.options
        user = o.sasl_username or self.url.username
        password = o.sasl_password or self.url.password
        if not (o.sasl_mechanisms or user or password):
            return {"sasl_enabled": False}
        kw = {"sasl_enabled": True, "allow_insecure_mechs": True}
        if o.sasl_mechanisms:
            kw["allowed_mechs"] = o.sasl_mechanisms
        if user:
            kw["user"] = user
        if password:
            kw["password"] = password
        return kw

    def _connect(self):
        target = "%s://%s:%s" % (self.url.scheme, self.url.host, self.url.port)
        try:
            domain = self._ssl_domain()
        except Exception as e:
            raise ConnectError("cannot connect to %s: TLS set-up failed: %s"
                               % (self.where, _one_line(e)))
        try:
            self.connection = BlockingConnection(target, timeout=self.options.timeout,
                                                 ssl_domain=domain, **self._sasl_kwargs())
        except ProtonTimeout:
            raise ConnectError("cannot connect to %s: no answer within %g s"
                               % (self.where, self.options.timeout))
        except socket.gaierror as e:
            raise ConnectError("cannot connect to %s: %s" % (self.where, _one_line(e.strerror)))
        except OSError as e:
            raise ConnectError("cannot connect to %s: %s"
                               % (self.where, _one_line(e.strerror or e).lower()))
        except (ConnectionException, ProtonException) as e:
            raise ConnectError("cannot connect to %s: %s" % (self.where, _condition_text(e)))
        try:
            self.receiver = self.connection.create_receiver(None, dynamic=True, credit=1)
            self.reply_to = self.receiver.link.remote_source.address
            if not self.reply_to:
                raise ConnectError("cannot use %s: the router gave no dynamic reply address"
                                   % self.where)
            if self._check_router:
                self.address = management_address()
                self._open_sender()
                if self._router_known(self._check_router) == "edge":
                    # an edge router attached here: 1.19's tools reach it
                    # only with -d (_edge/ID/$management); -r does too
                    self.address = management_address(None, None, self._check_router)
                else:
                    self.address = management_address(None, self._check_router)
            self._open_sender()
        except ManagementError:
            self.close()
            raise
        except Exception as e:
            self.close()
            raise self._translate(e, "setting up the management links")

    def _router_known(self, router):
        """Raise ManagementError unless `router` is the attached router, one
        of the routers its agent's GET-MGMT-NODES names, or an edge router
        attached to it (then return "edge")."""
        nodes = [str(n) for n in self.get_mgmt_nodes()]
        ids = [n.split("/")[3] for n in nodes if n.startswith("amqp:/_topo/") and
               len(n.split("/")) > 4]
        if router in ids:
            return None
        rows = self.query("org.apache.qpid.dispatch.router", ["id"])[1]
        own = rows[0][0] if rows and rows[0] else None
        if router == own:
            return None
        conns = self.query("org.apache.qpid.dispatch.connection",
                           ["role", "container", "dir"])[1]
        if any(r[0] == "edge" and r[1] == router and r[2] == "in" for r in conns):
            return "edge"
        if ids:
            known = ", ".join(sorted(set(ids) | ({own} if own else set())))
            raise ManagementError("router %s is not in the mesh of the router at %s "
                                  "(routers: %s)" % (router, self.where, known))
        raise ManagementError("router %s is not in the mesh: the router at %s (%s) has no "
                              "other routers" % (router, self.where, own or "no id"))

    def _open_sender(self):
        if self.sender is not None:
            try:
                self.sender.close()
            except Exception:
                pass
        self.sender = self.connection.create_sender(self.address)

    def retarget(self, address):
        """Send later requests to another management address (--all-routers)."""
        self.address = address
        try:
            self._open_sender()
        except Exception as e:
            raise self._translate(e, "opening a link to %s" % address)

    def close(self):
        conn, self.connection = self.connection, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _translate(self, exc, doing):
        if isinstance(exc, ManagementError):
            return exc
        if isinstance(exc, ProtonTimeout):
            return TimeoutError_("no reply from %s at %s within %g s (%s)"
                                 % (self.address, self.where, self.options.timeout, doing))
        if isinstance(exc, (LinkDetached, LinkException)):
            return ManagementError("%s at %s refused the link (%s): %s"
                                   % (self.address, self.where, doing, _condition_text(exc)))
        if isinstance(exc, ConnectionClosed):
            return ManagementError("connection to %s closed by the peer (%s): %s"
                                   % (self.where, doing, _condition_text(exc)))
        if isinstance(exc, SendException):
            return ManagementError("request to %s at %s was not accepted (%s): %s"
                                   % (self.address, self.where, doing, _one_line(exc)))
        return ManagementError("%s at %s failed (%s): %s"
                               % (self.address, self.where, doing, _condition_text(exc)))

    # -- one request --------------------------------------------------------

    def call(self, properties, body=None, expect=200):
        """Send one request; return (status, description, body) of its reply.
        A status other than `expect` (None: accept any) raises StatusError."""
        if self.connection is None:
            raise ManagementError("not connected")
        correlation = str(self._next_id)
        self._next_id += 1
        request = Message(properties=dict(properties), reply_to=self.reply_to,
                          correlation_id=correlation, body={} if body is None else body)
        operation = properties.get("operation")
        try:
            self.sender.send(request, timeout=self.options.timeout)
            while True:
                reply = self.receiver.receive(timeout=self.options.timeout)
                try:
                    self.receiver.accept()
                except IndexError:
                    pass  # the reply came pre-settled (as agents send them)
                if reply.correlation_id == correlation:
                    break
        except Exception as e:
            raise self._translate(e, "%s request" % (operation or "management"))
        props = reply.properties or {}
        status = props.get("statusCode")
        description = props.get("statusDescription") or ""
        try:
            status = int(status)
        except (TypeError, ValueError):
            raise ManagementError("reply from %s at %s has no valid statusCode: %r"
                                  % (self.address, self.where, status))
        if expect is not None and status != expect:
            raise StatusError(status, _one_line(description), operation)
        return status, description, reply.body

    # -- operations ---------------------------------------------------------

    def node_call(self, operation, extra=None, body=None, expect=200):
        """A request addressed to the management node itself (GET-*, QUERY)."""
        props = {"name": NODE_NAME, "type": NODE_TYPE, "operation": operation}
        if extra:
            props.update(extra)
        return self.call(props, body, expect)[2]

    def query_page(self, entity_type, attribute_names, offset, count):
        props = {"offset": int(offset), "count": int(count)}
        if entity_type:
            props["entityType"] = entity_type
        body = self.node_call("QUERY", props, {"attributeNames": list(attribute_names or [])})
        if not isinstance(body, dict) or "results" not in body:
            raise ManagementError("QUERY reply from %s at %s is not an attributeNames/results "
                                  "map" % (self.address, self.where))
        names = list(body.get("attributeNames") or [])
        rows = [list(r) for r in (body.get("results") or [])]
        return names, rows

    def query(self, entity_type=None, attribute_names=None, limit=None):
        """All rows of a QUERY, paged. Returns (attributeNames, rows); rows
        are lists in attributeNames order. `limit` caps the rows returned."""
        # python3-qpid-proton decodes at most about 65,535 values of one
        # message and silently drops the rest, so a page is kept under
        # MAX_PAGE_VALUES values: rows x columns, the columns known from the
        # request or, when it names none (all), from the first page (asked
        # for at most FIRST_PAGE_ROWS rows).
        columns = len(attribute_names) if attribute_names else 0
        offset = 0
        names, rows, previous = [], [], None
        while True:
            page = self.options.page_size
            if columns:
                page = max(1, min(page, MAX_PAGE_VALUES // columns))
            else:
                page = min(page, FIRST_PAGE_ROWS)
            count = page if not limit else min(page, limit - len(rows))
            names_p, got = self.query_page(entity_type, attribute_names, offset, count)
            if names_p:
                names = names_p
                columns = columns or len(names_p)
            if len(got) > count:
                # The server ignored `count` and sent everything it has.
                rows = got if offset == 0 else rows + got
                break
            if previous is not None and got == previous and got:
                # The server ignored `offset`: the same full page again.
                break
            rows.extend(got)
            offset += len(got)
            if len(got) < count or (limit and len(rows) >= limit):
                break
            previous = got
        if limit:
            rows = rows[:limit]
        return names, rows

    def query_dicts(self, entity_type=None, attribute_names=None, limit=None):
        """QUERY results as dicts, attribute name -> value (None kept)."""
        names, rows = self.query(entity_type, attribute_names, limit)
        return [dict(zip(names, r)) for r in rows]

    @staticmethod
    def _target(entity_type, name, identity):
        props = {}
        if entity_type:
            props["type"] = entity_type
        # Identity wins when both are given, as in qdmanage.
        if identity:
            props["identity"] = identity
        elif name:
            props["name"] = name
        return props

    def create(self, entity_type, name, attributes):
        props = {"operation": "CREATE"}
        if entity_type:
            props["type"] = entity_type
        if name:
            props["name"] = name
        return self.call(props, dict(attributes or {}), expect=201)[2]

    def read(self, entity_type, name=None, identity=None):
        props = {"operation": "READ"}
        props.update(self._target(entity_type, name, identity))
        return self.call(props, {}, expect=200)[2]

    def update(self, entity_type, name, identity, attributes):
        props = {"operation": "UPDATE"}
        props.update(self._target(entity_type, name, identity))
        return self.call(props, dict(attributes or {}), expect=200)[2]

    def delete(self, entity_type, name=None, identity=None):
        props = {"operation": "DELETE"}
        props.update(self._target(entity_type, name, identity))
        return self.call(props, {}, expect=204)[2]

    def get_mgmt_nodes(self):
        return self.node_call("GET-MGMT-NODES") or []

    def get_log(self, limit=None):
        extra = {"limit": int(limit)} if limit else None
        return self.call(dict({"operation": "GET-LOG"}, **(extra or {})), {}, 200)[2] or []
