"""junction-manage: qdmanage's commands against a router's management agent.

    junction-manage [options] OPERATION [ARGS...]

Built-in operations (case-insensitive): query, create, read, update, delete,
get-types, get-annotations, get-attributes, get-operations, get-mgmt-nodes,
get-schema, get-json-schema, get-log, and Junction's reload. Any other word is sent as an operation
of its own with NAME=VALUE arguments as request properties (qdmanage's
"custom operation"), e.g. `junction-manage CALLME --type dummy --name d1`.

Output is the reply as JSON, indented by --indent (2; -1 for one line) with
keys in the order the agent sent them, as qdmanage prints it: QUERY prints a
list of maps without the null attributes, CREATE/READ/UPDATE the entity's
attribute map, DELETE nothing, a string result as it is.
"""

import argparse
import json
import sys

from . import VERSION, schema
from .cli import EXIT_OK, Parser, UsageError, add_connection_options, connect_options, run
from .management import Client

PROG = "junction-manage"

BUILTIN = ("QUERY", "CREATE", "READ", "UPDATE", "DELETE", "GET-TYPES", "GET-ANNOTATIONS",
           "GET-ATTRIBUTES", "GET-OPERATIONS", "GET-MGMT-NODES", "GET-SCHEMA",
           "GET-JSON-SCHEMA", "GET-LOG", "RELOAD")

DESCRIPTION = """\
Query and change the configuration and state of a Junction router (or a
Qpid Dispatch Router 1.19) through its AMQP management agent.

operations:
  query [ATTR...]          print the attributes of the entities of --type (all
                           attributes when none are named; all types without --type)
  create [ATTR=VALUE...]   create an entity of --type named --name; with --stdin
                           read a JSON map (or a list of maps) of attributes instead
  read                     print one entity (--type with --name or --identity)
  update [ATTR=VALUE...]   change attributes of one entity (or --stdin JSON)
  delete                   delete one entity (--type with --name or --identity)
  get-types [TYPE]         entity types and their base types
  get-annotations [TYPE]   entity types and their annotations
  get-attributes [TYPE]    entity types and their attribute names
  get-operations [TYPE]    entity types and their operations
  get-mgmt-nodes           management nodes of every router in the mesh
  get-schema               the management schema
  get-json-schema          the management schema as JSON text
  get-log [limit=N]        the router's most recent log entries
  reload                   re-read the router's config file and apply what changed
                           (Junction's own; as SIGHUP): prints what changed, or
                           fails naming FILE:LINE and changes nothing
  OTHER [NAME=VALUE...]    send operation OTHER with NAME=VALUE as request
                           properties (see --body, --properties)

ATTR=VALUE: 'true'/'false' become booleans, attributes the schema of --type
says are integers become integers, the rest are strings.

--type expansion: a name with a dot is sent as given; 'link' and 'node' mean
router.link and router.node; 'address', 'linkRoute', 'autoLink', 'exchange'
and 'binding' mean router.config.*; any other name is prefixed with
org.apache.qpid.dispatch.

exit status: 0 done, 1 the request failed, 2 usage error."""


def make_parser():
    p = Parser(prog=PROG, description=DESCRIPTION,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("operation", metavar="OPERATION", nargs="?",
                   help="what to do (see operations above)")
    p.add_argument("args", metavar="ARG", nargs="*",
                   help="attribute names (query), ATTR=VALUE pairs (create, update, other "
                        "operations) or a TYPE (get-*)")
    p.add_argument("--type", help="type of the entity to operate on (short names are expanded, "
                                  "see above)")
    p.add_argument("--name", help="name of the entity to operate on")
    p.add_argument("--identity", metavar="ID",
                   help="identity of the entity to operate on (wins over --name)")
    p.add_argument("--indent", type=int, default=2,
                   help="JSON indentation; -1 prints each result on one line (default 2)")
    p.add_argument("--stdin", action="store_true",
                   help="create/update: read the attributes as a JSON map, or a list of "
                        "maps, from standard input")
    p.add_argument("--body", metavar="JSON",
                   help="other operations: JSON value to send as the request body")
    p.add_argument("--properties", metavar="JSON",
                   help="other operations: JSON map of extra request properties")
    p.add_argument("--version", action="version", version="%(prog)s " + VERSION)
    add_connection_options(p)
    return p


def _json_default(value):
    return str(value)


class Manage:
    def __init__(self, args):
        self.args = args
        self.type = schema.long_type(args.type)
        self.out = sys.stdout

    def print_json(self, data):
        indent = None if self.args.indent is not None and self.args.indent < 0 else self.args.indent
        self.out.write(json.dumps(data, indent=indent, default=_json_default) + "\n")

    def print_result(self, result):
        """A custom operation's result: nothing for null or an empty string,
        a string as it is, anything else as JSON."""
        if result is None or result == "":
            return
        if isinstance(result, str):
            self.out.write(result + "\n")
        else:
            self.print_json(result)

    # -- argument helpers ---------------------------------------------------

    def pairs(self, words, for_update=False):
        """ATTR=VALUE words as an ordered dict (ATTR alone means null)."""
        out = {}
        for w in words:
            name, eq, value = w.partition("=")
            if not name:
                raise UsageError("bad attribute %r: expected NAME=VALUE" % w)
            if not eq:
                out[name] = None
                continue
            try:
                v = schema.convert_value(self.type, name, value)
            except ValueError as e:
                raise UsageError(str(e))
            if for_update and isinstance(v, str) and \
                    schema.attribute_type(self.type, name) == "boolean":
                low = v.lower()
                if low in ("yes", "on", "true"):
                    v = True
                elif low in ("no", "off", "false"):
                    v = False
            out[name] = v
        return out

    def stdin_items(self):
        try:
            data = json.load(sys.stdin)
        except ValueError as e:
            raise UsageError("standard input is not JSON: %s" % e)
        if isinstance(data, dict):
            return data, False
        if isinstance(data, list) and all(isinstance(d, dict) for d in data):
            return data, True
        raise UsageError("standard input must be a JSON map or a list of maps")

    def json_arg(self, text, what):
        try:
            return json.loads(text)
        except ValueError:
            if not any(c in text for c in '"{}[]'):
                return text  # plainly not JSON: a string
            raise UsageError("%s is not valid JSON: %r" % (what, text))

    def one_type_arg(self):
        if len(self.args.args) > 1:
            raise UsageError("%s takes at most one TYPE" % self.args.operation)
        if self.type:
            return self.type
        return self.args.args[0] if self.args.args else None

    def need_target(self):
        if not (self.args.name or self.args.identity):
            raise UsageError("%s needs --name or --identity" % self.args.operation.lower())

    def no_args(self):
        if self.args.args:
            raise UsageError("%s takes no arguments, got %s"
                             % (self.args.operation.lower(), " ".join(self.args.args)))

    # -- operations ---------------------------------------------------------

    def run(self, client):
        op = self.args.operation.upper()
        if op in BUILTIN:
            return getattr(self, "op_" + op.lower().replace("-", "_"))(client)
        return self.op_custom(client, self.args.operation)

    def op_query(self, client):
        names, rows = client.query(self.type, self.args.args)
        self.print_json([{n: v for n, v in zip(names, r) if v is not None} for r in rows])

    def _bulk(self, func, for_update):
        if self.args.stdin:
            if self.args.args:
                raise UsageError("give attributes either as arguments or with --stdin, not both")
            data, many = self.stdin_items()
            if many:
                self.print_json([func(d) for d in data])
            else:
                self.print_json(func(data))
        else:
            self.print_json(func(self.pairs(self.args.args, for_update)))

    def op_create(self, client):
        def create(attrs):
            attrs = dict(attrs)
            etype = self.type or schema.long_type(attrs.get("type"))
            name = self.args.name or attrs.get("name")
            if not etype:
                raise UsageError("create needs --type (or a 'type' attribute)")
            if etype and "type" in attrs:
                attrs["type"] = etype
            return client.create(etype, name, attrs)
        self._bulk(create, False)

    def op_read(self, client):
        self.no_args()
        self.print_json(client.read(self.type, self.args.name, self.args.identity))

    def op_update(self, client):
        def update(attrs):
            attrs = dict(attrs)
            name = self.args.name or attrs.get("name")
            identity = self.args.identity or attrs.get("identity")
            if not (name or identity):
                raise UsageError("update needs --name or --identity")
            etype = self.type or schema.long_type(attrs.get("type"))
            return client.update(etype, name, identity, attrs)
        self._bulk(update, True)

    def op_delete(self, client):
        self.no_args()
        self.need_target()
        client.delete(self.type, self.args.name, self.args.identity)

    def _get_by_type(self, client, operation):
        etype = self.one_type_arg()
        extra = {"entityType": etype} if etype else None
        self.print_json(client.node_call(operation, extra))

    def op_get_types(self, client):
        self._get_by_type(client, "GET-TYPES")

    def op_get_annotations(self, client):
        self._get_by_type(client, "GET-ANNOTATIONS")

    def op_get_attributes(self, client):
        self._get_by_type(client, "GET-ATTRIBUTES")

    def op_get_operations(self, client):
        self._get_by_type(client, "GET-OPERATIONS")

    def op_get_mgmt_nodes(self, client):
        self.no_args()
        self.print_json(client.get_mgmt_nodes())

    def op_get_schema(self, client):
        self.op_custom(client, "GET-SCHEMA")

    def op_get_json_schema(self, client):
        self.op_custom(client, "GET-JSON-SCHEMA")

    def op_get_log(self, client):
        self.op_custom(client, "GET-LOG")

    def op_reload(self, client):
        self.no_args()
        _, description, _ = client.call({"operation": "RELOAD",
                                         "type": "org.apache.qpid.dispatch.router"}, {},
                                        expect=200)
        print(description)

    def op_custom(self, client, operation):
        """An operation sent as typed, with NAME=VALUE request properties."""
        props = {"operation": operation}
        if self.type:
            props["type"] = self.type
        if self.args.identity:
            props["identity"] = self.args.identity
        elif self.args.name:
            props["name"] = self.args.name
        props.update(self.pairs(self.args.args))
        if self.args.properties:
            extra = self.json_arg(self.args.properties, "--properties")
            if not isinstance(extra, dict):
                raise UsageError("--properties must be a JSON map")
            props.update(extra)
        body = self.json_arg(self.args.body, "--body") if self.args.body else None
        _, _, result = client.call(props, body, expect=200)
        self.print_result(result)


def main(argv=None):
    parser = make_parser()
    args = parser.parse_intermixed_args(argv)
    if not args.operation:
        parser.error("no OPERATION given")
    manage = Manage(args)

    def body():
        options = connect_options(args)
        op = args.operation.upper()
        # Check what can be checked before connecting.
        if op in ("DELETE",):
            manage.need_target()
        with Client(options) as client:
            manage.run(client)
        return EXIT_OK

    return run(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
