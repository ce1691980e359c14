"""junction-stat: qdstat's views of a router's state.

    junction-stat [-g | -c | -l | -n | -e | -a | -m | -p | --autolinks |
                   --linkroutes | --log | --all-entities] [--csv | --json] [options]

Each view queries one entity type and prints the table qdstat 1.19 prints,
with its headings in its order: first the UTC time and the router id (from a
QUERY of `router`), a blank line, then the table (see table.py for the
layout). --csv prints the same tables as CSV; --json prints one JSON document
per router holding the raw values. --all-entities shows the views qdstat's
--all-entities shows, one after the other, under one heading (links,
addresses, connections, auto links, link routes, general, memory, policy,
vhosts, vhost statistics). --all-routers repeats the view for every
router GET-MGMT-NODES names; --watch SECONDS repeats it until interrupted
(or --count times).
"""

import argparse
import datetime
import sys
import time

from . import VERSION
from . import table as tbl
from .cli import (EXIT_OK, Parser, add_connection_options, connect_options, limit_int,
                  positive_int, run)
from .management import Client, ManagementError
from .table import Column, Shown, Table, number_id

PROG = "junction-stat"
T = "org.apache.qpid.dispatch."

VIEWS = (
    # (dest, flags, help)
    ("general", ("-g", "--general"), "router statistics (the default view)"),
    ("connections", ("-c", "--connections"), "connections"),
    ("links", ("-l", "--links"), "router links"),
    ("nodes", ("-n", "--nodes"), "routers in the mesh"),
    ("edges", ("-e", "--edge"), "connections to edge routers"),
    ("addresses", ("-a", "--address"), "router addresses"),
    ("memory", ("-m", "--memory"), "memory pools and use"),
    ("policy", ("-p", "--policy"), "policy settings and counters"),
    ("vhosts", ("--vhosts",), "vhost policies"),
    ("vhostgroups", ("--vhostgroups",), "the user groups of the vhost policies"),
    ("vhoststats", ("--vhoststats",), "vhost policy statistics"),
    ("autolinks", ("--autolinks",), "auto links"),
    ("linkroutes", ("--linkroutes",), "link routes"),
    ("log", ("--log",), "recent log entries"),
    ("all_entities", ("--all-entities",),
     "every view but -n, -e, --vhostgroups and --log, one after the other (qdstat's "
     "--all-entities)"),
)

# The views --all-entities shows, in qdstat 1.19's order.
ALL_ENTITIES = ("links", "addresses", "connections", "autolinks", "linkroutes", "general",
                "memory", "policy", "vhosts", "vhoststats")


# --------------------------------------------------------------------------
# Cell helpers (the meaning of qdstat's columns)

def addr_class(key):
    """The class of an address hash key, by its first character."""
    if not key:
        return ""
    return {"M": "mobile", "R": "router", "A": "area", "L": "local", "T": "topo",
            "C": "link-in", "E": "link-in", "D": "link-out", "F": "link-out",
            "H": "edge"}.get(key[0], "unknown: %s" % key[0])


def addr_text(key):
    if not key:
        return ""
    return key[2:] if key[0] == "M" else key[1:]


def addr_phase(key):
    if not key:
        return ""
    return key[1] if key[0] == "M" and len(key) > 1 else ""


def conn_security(c):
    if not c.get("isEncrypted"):
        return "no-security"
    if c.get("sasl") == "GSSAPI":
        return "Kerberos"
    return "%s(%s)" % (c.get("sslProto"), c.get("sslCipher"))


def conn_auth(c):
    if not c.get("isAuthenticated"):
        return "no-auth"
    sasl = c.get("sasl")
    if sasl == "ANONYMOUS":
        return "anonymous-user"
    sasl = {"GSSAPI": "Kerberos", "EXTERNAL": "x.509"}.get(sasl, sasl)
    user = c.get("user")
    return "%s(%s)" % (user, sasl) if user else sasl


def no_trailing_slash(text):
    if not text:
        return ""
    return text[:-1] if text.endswith("/") else text


def num(value):
    """A count as plain digits ('' for none)."""
    if value is None:
        return ""
    try:
        return "%d" % value
    except TypeError:
        return str(value)


def identity_clean(identity):
    if not identity:
        return "-"
    return identity.split("/", 1)[1] if "/" in identity else identity


# --------------------------------------------------------------------------
# Views: each returns a list of Table objects (and may print messages)

class Views:
    def __init__(self, client, args):
        self.client = client
        self.args = args
        self.messages = []  # lines printed instead of a table

    def q(self, etype, names=None, limit=None):
        return self.client.query_dicts(T + etype, names, limit)

    def router_id(self):
        rows = self.q("router")
        return rows[0].get("id") if rows else None

    def general(self):
        rows = self.q("router")
        if not rows:
            raise ManagementError("the router returned no router entity")
        r = rows[0]
        out = [("Version", r.get("version")), ("Mode", r.get("mode")),
               ("Router Id", r.get("id"))]
        if "workerThreads" in r:
            out.append(("Worker Threads", r.get("workerThreads")))
        if r.get("uptimeSeconds") is not None:
            out.append(("Uptime", Shown(r["uptimeSeconds"], tbl.time_long(r["uptimeSeconds"]))))
        mem = r.get("memoryUsage")
        if isinstance(mem, int) and mem > 0:
            out.append(("VmSize", Shown(mem, tbl.num_kmg(mem, 1024))))
        out.append(("Area", r.get("area")))
        for label, attr in (
                ("Link Routes", "linkRouteCount"), ("Auto Links", "autoLinkCount"),
                ("Links", "linkCount"), ("Nodes", "nodeCount"), ("Addresses", "addrCount"),
                ("Connections", "connectionCount"),
                ("Presettled Count", "presettledDeliveries"),
                ("Dropped Presettled Count", "droppedPresettledDeliveries"),
                ("Accepted Count", "acceptedDeliveries"),
                ("Rejected Count", "rejectedDeliveries"),
                ("Released Count", "releasedDeliveries"),
                ("Modified Count", "modifiedDeliveries"),
                ("Deliveries Delayed > 1sec", "deliveriesDelayed1Sec"),
                ("Deliveries Delayed > 10sec", "deliveriesDelayed10Sec"),
                ("Deliveries Stuck > 10sec", "deliveriesStuck"),
                ("Deliveries to Fallback", "deliveriesRedirectedToFallback"),
                ("Links Blocked", "linksBlocked"),
                ("Ingress Count", "deliveriesIngress"),
                ("Egress Count", "deliveriesEgress"),
                ("Transit Count", "deliveriesTransit"),
                ("Deliveries from Route Container", "deliveriesIngressRouteContainer"),
                ("Deliveries to Route Container", "deliveriesEgressRouteContainer")):
            if attr in r:
                out.append((label, r.get(attr)))
        return [Table("Router Statistics", ["attr", "value"], out)]

    def connections(self):
        conns = self.q("connection", limit=self.args.limit)
        cols = ["id", "host", "container", "role", "proto", "dir", "security",
                "authentication", "tenant"]
        first = conns[0] if conns else {}
        has_last = "lastDlvSeconds" in first
        has_up = "uptimeSeconds" in first
        if has_last:
            cols.append(Column("last dlv", tbl.time_long))
        if has_up:
            cols.append(Column("uptime", tbl.time_long))
        rows = []
        for c in conns:
            row = [number_id(c.get("identity")), c.get("host"), c.get("container"), c.get("role"),
                   c.get("protocol"), c.get("dir"), conn_security(c), conn_auth(c),
                   no_trailing_slash(c.get("tenant"))]
            if has_last:
                last = c.get("lastDlvSeconds")
                row.append(Shown(None, "-") if last is None else last)
            if has_up:
                row.append(c.get("uptimeSeconds"))
            rows.append(row)
        return [Table("Connections", cols, rows)]

    def edges(self):
        # every connection is read and the edge ones kept: --limit counts
        # edge connections, not connections
        conns = [c for c in self.q("connection") if c.get("role") == "edge"]
        if self.args.limit:
            conns = conns[:self.args.limit]
        cols = ["id", "host", "container", "role", "dir", "security", "authentication",
                "tenant"]
        has_active = bool(conns) and "active" in conns[0]
        if has_active:
            cols.append("active")
        rows = []
        for c in conns:
            row = [number_id(c.get("identity")), c.get("host"), c.get("container"),
                   c.get("role"), c.get("dir"), conn_security(c), conn_auth(c),
                   no_trailing_slash(c.get("tenant"))]
            if has_active:
                row.append("yes" if c.get("active") else "no")
            rows.append(row)
        if not rows:
            self.messages.append("No Edge Router Connections")
        return [Table("Connections", cols, rows)]

    LINK_ATTRS = ("linkType", "linkDir", "connectionId", "identity", "peer", "owningAddr",
                  "capacity", "undeliveredCount", "unsettledCount", "deliveryCount",
                  "presettledCount", "droppedPresettledCount", "acceptedCount",
                  "rejectedCount", "releasedCount", "modifiedCount", "deliveriesDelayed1Sec",
                  "deliveriesDelayed10Sec", "deliveriesStuck", "creditAvailable",
                  "zeroCreditSeconds", "adminStatus", "operStatus", "linkName", "priority",
                  "settleRate")

    def links(self):
        links = self.q("router.link", list(self.LINK_ATTRS), limit=self.args.limit)
        # qdstat 1.19 shows these columns when the first row has the
        # attribute; a QUERY naming them always returns them, so always.
        def has(attr):
            return True

        cols = ["type", "dir", "conn id", "id", "peer", "class", "addr", "phs",
                Column("cap", num)]
        extra = []
        if has("priority"):
            cols.append(Column("pri", num))
            extra.append(lambda l: l.get("priority"))
        for head, attr in (("undel", "undeliveredCount"), ("unsett", "unsettledCount"),
                           ("deliv", "deliveryCount"), ("presett", "presettledCount")):
            cols.append(Column(head, num))
            extra.append(lambda l, a=attr: l.get(a))
        if has("droppedPresettledCount"):
            cols.append(Column("psdrop", num))
            extra.append(lambda l: l.get("droppedPresettledCount"))
        for head, attr in (("acc", "acceptedCount"), ("rej", "rejectedCount"),
                           ("rel", "releasedCount"), ("mod", "modifiedCount")):
            cols.append(Column(head, num))
            extra.append(lambda l, a=attr: l.get(a))
        if has("deliveriesDelayed1Sec"):
            cols += [Column("delay", num), Column("rate", num)]
            extra.append(lambda l: (l.get("deliveriesDelayed1Sec") or 0)
                         + (l.get("deliveriesDelayed10Sec") or 0))
            extra.append(lambda l: l.get("settleRate"))
        if has("deliveriesStuck"):
            cols.append(Column("stuck", num))
            extra.append(lambda l: l.get("deliveriesStuck"))
        if has("creditAvailable"):
            cols += [Column("cred", num), "blkd"]
            extra.append(lambda l: l.get("creditAvailable"))
            extra.append(lambda l: Shown(l["zeroCreditSeconds"],
                                         tbl.time_short(l["zeroCreditSeconds"]))
                         if (l.get("zeroCreditSeconds") or 0) > 0
                         else Shown(l.get("zeroCreditSeconds"), "-"))
        if self.args.verbose:
            cols += ["admin", "oper", "name"]
            extra += [lambda l: l.get("adminStatus"), lambda l: l.get("operStatus"),
                      lambda l: l.get("linkName")]
        rows = []
        for l in links:
            key = l.get("owningAddr")
            row = [l.get("linkType"), l.get("linkDir"), number_id(l.get("connectionId")),
                   number_id(l.get("identity")), l.get("peer"), addr_class(key), addr_text(key),
                   addr_phase(key), l.get("capacity")]
            row += [f(l) for f in extra]
            rows.append(row)
        return [Table("Router Links", cols, rows)]

    def nodes(self):
        nodes = self.q("router.node", limit=self.args.limit)
        cols = ["router-id", "next-hop", "link"]
        if self.args.verbose:
            cols += ["ver", "cost", "neighbors", "valid-origins"]
        rows, last_change = [], 0.0
        for n in nodes:
            if n.get("lastTopoChange"):
                last_change = max(last_change, float(n["lastTopoChange"]))
            if n.get("nextHop") is not None:
                row = [n.get("id"), n.get("nextHop"), Shown(None, "-")]
            else:
                row = [n.get("id"), Shown(None, "-"), number_id(n.get("routerLink"))]
            if self.args.verbose:
                row += [n.get("protocolVersion"), n.get("cost"),
                        repr([str(x) for x in n.get("linkState") or []]),
                        repr([str(x) for x in n.get("validOrigins") or []])]
            rows.append(row)
        if not rows:
            self.messages.append("Router is Standalone - No Router List")
        title = "Routers in the Network"
        if last_change > 1.0:
            title += "\nLast Topology Change: " + time.strftime(
                "%A %b %d %H:%M:%S %Y", time.gmtime(last_change)) + " GMT"
        t = Table(title, cols, rows, json_title="Routers in the Network")
        t.sort_by("router-id")
        return [t]

    def addresses(self):
        attrs = ["distribution", "inProcess", "subscriberCount", "remoteCount",
                 "containerCount", "deliveriesIngress", "deliveriesEgress",
                 "deliveriesRedirectedToFallback", "deliveriesTransit",
                 "deliveriesToContainer", "deliveriesFromContainer", "name", "priority"]
        addrs = self.q("router.address", attrs, limit=self.args.limit)
        has_pri = True  # named in the QUERY, so always present (see links)
        cols = ["class", "addr", "phs", "distrib"]
        if has_pri:
            cols.append("pri")
        if self.args.verbose:
            cols.append(Column("in-proc", num))
        cols += [Column(h, num) for h in ("local", "remote", "in", "out", "thru", "fallback")]
        if self.args.verbose:
            cols += [Column("to-proc", num), Column("from-proc", num)]
        rows = []
        for a in addrs:
            key = a.get("name") or ""
            row = [addr_class(key), addr_text(key), addr_phase(key), a.get("distribution")]
            if has_pri:
                pri = a.get("priority")
                row.append(pri if isinstance(pri, int) and pri >= 0 else Shown(pri, "-"))
            if self.args.verbose:
                row.append(a.get("inProcess"))
            local = a.get("containerCount") if key[:1] in ("C", "D", "E", "F") \
                else a.get("subscriberCount")
            fallback = a.get("deliveriesRedirectedToFallback")
            row += [local, a.get("remoteCount"), a.get("deliveriesIngress"),
                    a.get("deliveriesEgress"), a.get("deliveriesTransit"),
                    Shown(None, "-") if fallback is None else fallback]
            if self.args.verbose:
                row += [a.get("deliveriesToContainer"), a.get("deliveriesFromContainer")]
            rows.append(row)
        t = Table("Router Addresses", cols, rows)
        t.sort_by("addr")
        return [t]

    def memory(self):
        attrs = ["identity", "typeSize", "transferBatchSize", "localFreeListMax",
                 "totalAllocFromHeap", "heldByThreads", "batchesRebalancedToThreads",
                 "batchesRebalancedToGlobal", "totalFreeToHeap"]
        pools = self.q("allocator", attrs)
        cols = ["type", Column("size", num), Column("batch", num), Column("thread-max", num),
                Column("total", num), Column("in-threads", num), Column("rebal-in", num),
                Column("rebal-out", num)]
        rows, pooled = [], 0
        for p in pools:
            rows.append([identity_clean(p.get("identity")), p.get("typeSize"),
                         p.get("transferBatchSize"), p.get("localFreeListMax"),
                         p.get("totalAllocFromHeap"), p.get("heldByThreads"),
                         p.get("batchesRebalancedToThreads"), p.get("batchesRebalancedToGlobal")])
            # held now: a Junction pool gives objects back to the heap, so
            # totalAllocFromHeap alone counts every object it ever took
            held = (p.get("totalAllocFromHeap") or 0) - (p.get("totalFreeToHeap") or 0)
            pooled += (p.get("typeSize") or 0) * held
        if not rows:
            self.messages.append("No memory statistics available")
            return []
        types = Table("Types", cols, rows)
        types.sort_by("type")
        try:
            mem = self.q("router", ["memoryUsage"])[0].get("memoryUsage")
        except (ManagementError, IndexError):
            mem = None
        summary = Table("\nSummary", [Column("VmSize", tbl.kib), Column("Pooled", tbl.kib)],
                        [[Shown(None, "-") if mem is None else mem, pooled]],
                        json_title="Summary")
        return [types, summary]

    def policy(self):
        rows = self.q("policy")
        if not rows:
            self.messages.append("No policy")
            return []
        p = rows[0]
        out = []
        for label, attr in (("Maximum Concurrent Connections", "maxConnections"),
                            ("Maximum Message Size", "maxMessageSize"),
                            ("Enable Vhost Policy", "enableVhostPolicy"),
                            ("Enable Vhost Name Patterns", "enableVhostNamePatterns"),
                            ("Policy Directory", "policyDir"),
                            ("Default Vhost", "defaultVhost"),
                            ("Connections Processed", "connectionsProcessed"),
                            ("Connections Denied", "connectionsDenied"),
                            ("Connections Current", "connectionsCurrent"),
                            ("Links Denied", "linksDenied"),
                            ("Maximum Message Size Denied", "maxMessageSizeDenied"),
                            ("Total Denials", "totalDenials")):
            if attr in p:
                out.append((label, p.get(attr)))
        return [Table("Policy", ["attr", "value"], out)]

    def vhosts(self):
        attrs = ["hostname", "maxConnections", "maxMessageSize", "maxConnectionsPerUser",
                 "maxConnectionsPerHost", "allowUnknownUser", "groups"]
        vs = self.q("vhost", attrs, limit=self.args.limit)
        if not vs:
            self.messages.append("No Vhosts")
            return []
        rows = [[v.get(x) for x in attrs[:-1]] + [len(v.get("groups") or {})] for v in vs]
        t = Table("Vhosts", attrs, rows)
        t.sort_by("hostname")
        return [t]

    def vhostgroups(self):
        vs = self.q("vhost", ["hostname", "groups"], limit=self.args.limit)
        if not vs:
            self.messages.append("No Vhosts")
            return []
        attrs = ["users", "remoteHosts", "maxConnectionsPerUser", "maxConnectionsPerHost"]
        rows = []
        for v in vs:
            for name, g in sorted((v.get("groups") or {}).items()):
                rows.append([v.get("hostname"), name] + [(g or {}).get(a) for a in attrs])
        return [Table("Vhost User Groups", ["vhost", "group"] + attrs, rows)]

    def vhoststats(self):
        attrs = ["hostname", "connectionsApproved", "connectionsDenied", "connectionsCurrent",
                 "sessionDenied", "senderDenied", "receiverDenied", "maxMessageSizeDenied"]
        vs = self.q("vhostStats", attrs + ["perUserState"], limit=self.args.limit)
        if not vs:
            self.messages.append("No Vhost Stats")
            return []
        t = Table("Vhost Stats", attrs, [[v.get(x) for x in attrs] for v in vs])
        t.sort_by("hostname")
        users = [[v.get("hostname"), u, n] for v in vs
                 for u, n in sorted((v.get("perUserState") or {}).items())]
        return [t, Table("\nVhost User Stats", ["vhost", "user", "connections"], users,
                         json_title="Vhost User Stats")]

    def autolinks(self):
        attrs = ["address", "direction", "phase", "externalAddress", "linkRef", "operStatus",
                 "lastError"]
        als = self.q("router.config.autoLink", attrs, limit=self.args.limit)
        if not als:
            self.messages += ["AutoLinks", "No AutoLinks found"]
        rows = [[a.get(x) for x in attrs] for a in als]
        t = Table("AutoLinks", ["addr", "dir", "phs", "extAddr", "link", "status", "lastErr"],
                  rows)
        t.sort_by("addr")
        return [t]

    def linkroutes(self):
        attrs = ["prefix", "direction", "distribution", "operStatus", "pattern",
                 "addExternalPrefix", "delExternalPrefix"]
        lrs = self.q("router.config.linkRoute", attrs, limit=self.args.limit)
        if not lrs:
            self.messages += ["Link Routes", "No Link Routes found"]
        ext = any(l.get("addExternalPrefix") or l.get("delExternalPrefix") for l in lrs)
        cols = ["address", "dir", "distrib", "status"]
        if ext:
            cols += ["add-ext-prefix", "del-ext-prefix"]
        rows = []
        for l in lrs:
            row = [l.get("prefix") or l.get("pattern"), l.get("direction"),
                   l.get("distribution"), l.get("operStatus")]
            if ext:
                row += [l.get("addExternalPrefix"), l.get("delExternalPrefix")]
            rows.append(row)
        t = Table("Link Routes", cols, rows)
        t.sort_by("address")
        return [t]

    def log(self):
        entries = self.client.get_log(self.args.limit)
        rows = []
        for e in entries:
            e = list(e) + [None] * (6 - len(e))
            rows.append([e[5], e[0], e[1], e[2]])
        return [Table("Log", [Column("time", lambda v: time.ctime(v)), "module", "level",
                              "text"], rows)]


# --------------------------------------------------------------------------
# Output

def utc_now_text():
    return str(datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)) + " UTC"


class Printer:
    def __init__(self, args, out=sys.stdout):
        self.args = args
        self.out = out

    def write(self, line=""):
        self.out.write(line + "\n")

    def view_text(self, client, args, with_header, router_label=None):
        """Print one view of the router `client` is addressing: the classic
        tables, or CSV (titles, the time and the router id only with
        --title; router_label: a leading "router" column, for
        --all-routers)."""
        titles = not args.csv or args.title
        if with_header and args.view != "log" and titles:
            self.write(utc_now_text())
            rid = Views(client, args).router_id()
            if rid:
                self.write(str(rid))
            self.write()
        if args.view != "all_entities":
            self.one_view(client, args, args.view, router_label)
            return
        for i, view in enumerate(ALL_ENTITIES):
            if i:
                self.write()
            self.one_view(client, args, view, router_label)

    def one_view(self, client, args, view, router_label):
        """The messages and tables of one view (no heading)."""
        titles = not args.csv or args.title
        views = Views(client, args)
        tables = getattr(views, view)()
        if titles:
            for line in views.messages:
                self.write(line)
        if view == "log" and not args.csv:
            for row in tables[0].rows:
                self.write("%s %s (%s) %s" % (time.ctime(row[0]) if row[0] is not None else "",
                                              row[1], row[2], row[3]))
            return
        if args.csv:
            lead = (("router", router_label),) if router_label else ()
            for i, t in enumerate(tables):
                if i:
                    self.write()
                for line in tbl.render_csv(t, title=args.title, lead=lead):
                    self.write(line)
            return
        for t in tables:
            if views.messages and not t.rows:
                continue  # the message says why there is no table
            for line in tbl.render_classic(t):
                self.write(line)

    def view_json(self, client, args, router_label=None):
        names = ALL_ENTITIES if args.view == "all_entities" else (args.view,)
        tables, messages = [], []
        for view in names:
            views = Views(client, args)
            tables += getattr(views, view)()
            messages += views.messages
        doc = {"time": utc_now_text(), "router": router_label or Views(client, args).router_id(),
               "view": args.view, "tables": [tbl.table_json(t) for t in tables]}
        if messages:
            doc["messages"] = messages
        return doc


def mgmt_node_targets(client):
    """(router id, address) for each management node GET-MGMT-NODES names."""
    out = []
    for node in client.get_mgmt_nodes():
        node = str(node)
        addr = node[len("amqp:/"):] if node.startswith("amqp:/") else node
        parts = node.split("/")
        rid = parts[3] if len(parts) > 3 else addr
        out.append((rid, addr))
    return out


def show_once(client, args, printer):
    targets = mgmt_node_targets(client) if args.all_routers else []
    if args.all_routers and len(targets) >= 2:
        if args.json:
            docs = []
            for rid, addr in targets:
                client.retarget(addr)
                docs.append(printer.view_json(client, args, rid))
            printer.write(tbl.dumps(docs))
            return
        if args.csv and not args.title:
            # one CSV table per view, the router in the first column
            for i, (rid, addr) in enumerate(targets):
                client.retarget(addr)
                if i:
                    printer.write()
                printer.view_text(client, args, with_header=False, router_label=rid)
            return
        printer.write(utc_now_text())
        for rid, addr in targets:
            client.retarget(addr)
            printer.write("Router  %s" % rid)
            printer.write()
            printer.view_text(client, args, with_header=False)
            printer.write()
        return
    if args.json:
        printer.write(tbl.dumps(printer.view_json(client, args)))
    else:
        printer.view_text(client, args, with_header=True)


# --------------------------------------------------------------------------
# Command line

DESCRIPTION = """\
Show the state and statistics of a Junction router (or a Qpid Dispatch
Router 1.19), as qdstat does: one view per run, -g when none is given.

exit status: 0 done, 1 the request failed, 2 usage error."""


def make_parser():
    p = Parser(prog=PROG, description=DESCRIPTION,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("views (one of)").add_mutually_exclusive_group()
    for dest, flags, help_text in VIEWS:
        g.add_argument(*flags, dest="view", action="store_const", const=dest, help=help_text)
    o = p.add_argument_group("output")
    fmt = o.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true",
                     help="print tables as comma-separated values: a heading row, then the "
                          "rows (quoted fields); no title lines unless --title")
    fmt.add_argument("--json", action="store_true",
                     help="print a JSON document (per router) holding the raw values: "
                          "seconds, octets, counts and ids as numbers")
    o.add_argument("--title", action="store_true",
                   help="with --csv: print the time, the router id and each table's title "
                        "before it, as the tables have them")
    o.add_argument("-v", "--verbose", action="store_true",
                   help="more columns (-l: admin, oper, name; -a: in-proc, to-proc, from-proc; "
                        "-n: ver, cost, neighbors, valid-origins)")
    o.add_argument("--limit", type=limit_int, metavar="N",
                   help="show at most N rows (connections, links, addresses, nodes, auto "
                        "links, link routes, log entries); 0: no limit, as qdstat")
    o.add_argument("--all-routers", action="store_true",
                   help="show the view for every router in the mesh (when GET-MGMT-NODES "
                        "names two or more)")
    o.add_argument("--watch", type=float, metavar="SECONDS",
                   help="refresh the view every SECONDS seconds until interrupted")
    o.add_argument("--count", type=positive_int, metavar="N",
                   help="with --watch: stop after N refreshes")
    p.add_argument("--version", action="version",
                   version="%(prog)s " + VERSION)
    add_connection_options(p)
    return p


def main(argv=None):
    parser = make_parser()
    args = parser.parse_args(argv)
    if not args.view:
        args.view = "general"
    if args.count is not None and args.watch is None:
        parser.error("--count needs --watch")
    if args.title and not args.csv:
        parser.error("--title needs --csv")
    if args.watch is not None and args.watch <= 0:
        parser.error("--watch needs a number of seconds greater than 0")
    if args.all_routers and (args.router or args.edge_router):
        parser.error("--all-routers cannot be combined with -r/--router or -d/--edge-router")
    printer = Printer(args)

    def body():
        options = connect_options(args)
        with Client(options) as client:
            home = client.address
            done = 0
            try:
                while True:
                    if done and not args.json:
                        printer.write()
                    if client.address != home:
                        client.retarget(home)
                    show_once(client, args, printer)
                    sys.stdout.flush()
                    done += 1
                    if args.watch is None or (args.count and done >= args.count):
                        break
                    time.sleep(args.watch)
            except KeyboardInterrupt:
                return EXIT_OK
        return EXIT_OK

    return run(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
