"""What junction-manage and junction-stat share: the connection options, a
parser whose usage errors are one line, and the exit-code contract.

Exit codes: 0 done, 1 the request failed (connection, timeout, an error
status), 2 usage error. Every error is one line on stderr, starting with
the program's name (usage errors and run-time errors alike).
"""

import argparse
import math
import os
import sys

from .management import (DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT, DEFAULT_URL, ConnectOptions,
                         ManagementError)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A usage error found after parsing (exit 2)."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors."""

    def error(self, message):
        self.exit(EXIT_USAGE, "%s: %s (try --help)\n" % (self.prog, " ".join(message.split())))


def _positive_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number: %r" % text)
    if not math.isfinite(v) or v <= 0 or v > 1e6:
        raise argparse.ArgumentTypeError("must be a number of seconds greater than 0 and at "
                                         "most 1000000, not %r" % text)
    return v


def positive_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not an integer: %r" % text)
    if v <= 0:
        raise argparse.ArgumentTypeError("must be greater than 0: %r" % text)
    return v


def limit_int(text):
    """A row limit, as qdstat takes it: a whole number, 0 meaning none
    (returned as None)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not an integer: %r" % text)
    if v < 0:
        raise argparse.ArgumentTypeError("must be 0 (no limit) or more: %r" % text)
    return v or None


def add_connection_options(parser):
    g = parser.add_argument_group("connection options")
    g.add_argument("-b", "--bus", metavar="URL", default=DEFAULT_URL,
                   help="router to connect to: [amqp[s]://][USER:PASSWORD@]HOST[:PORT][/ADDRESS]; "
                        "a path replaces the management address (default %(default)s)")
    g.add_argument("-t", "--timeout", metavar="SECS", type=_positive_float,
                   default=DEFAULT_TIMEOUT,
                   help="give up on connecting or on a reply after SECS seconds "
                        "(default %(default)s)")
    g.add_argument("-r", "--router", metavar="ROUTER-ID",
                   help="send requests to router ROUTER-ID's agent, through the mesh "
                        "(address _topo/0/ROUTER-ID/$management); an edge router attached "
                        "to the router connected to is reached as with -d")
    g.add_argument("-d", "--edge-router", metavar="EDGE-ID",
                   help="send requests to the agent of edge router EDGE-ID attached to the "
                        "router connected to (address _edge/EDGE-ID/$management)")
    g.add_argument("--sasl-mechanisms", metavar="MECHS",
                   help="allowed SASL mechanisms, space separated, e.g. 'PLAIN' or 'ANONYMOUS' "
                        "(without any SASL option or user in the URL, no SASL layer is used)")
    g.add_argument("--sasl-username", metavar="USER", help="SASL user name")
    g.add_argument("--sasl-password", metavar="PASSWORD", help="SASL password")
    g.add_argument("--sasl-password-file", metavar="FILE",
                   help="read the SASL password from the first line of FILE")
    g.add_argument("--ssl-certificate", metavar="FILE",
                   help="client certificate (PEM); any --ssl-* option turns TLS on (amqps)")
    g.add_argument("--ssl-key", metavar="FILE", help="private key of the client certificate")
    g.add_argument("--ssl-trustfile", metavar="FILE",
                   help="CA certificates (PEM) used to verify the router's certificate")
    g.add_argument("--ssl-password", metavar="PASSWORD", help="password of the private key")
    g.add_argument("--ssl-password-file", metavar="FILE",
                   help="read the private key's password from the first line of FILE")
    g.add_argument("--ssl-disable-peer-name-verify", action="store_true",
                   help="do not check that the router's certificate names the host connected to")
    g.add_argument("--page-size", metavar="N", type=positive_int, default=DEFAULT_PAGE_SIZE,
                   help="rows asked for per QUERY request when paging (default %(default)s)")
    return g


def _first_line(path, what):
    try:
        with open(path) as f:
            return f.readline().rstrip("\r\n")
    except OSError as e:
        raise UsageError("cannot read the %s file %s: %s" % (what, path, e.strerror))


def connect_options(args):
    """ConnectOptions from parsed arguments."""
    sasl_password = args.sasl_password
    if args.sasl_password_file:
        sasl_password = _first_line(args.sasl_password_file, "SASL password")
    ssl_password = args.ssl_password
    if args.ssl_password_file:
        ssl_password = _first_line(args.ssl_password_file, "TLS key password")
    if args.ssl_key and not args.ssl_certificate:
        raise UsageError("--ssl-key needs --ssl-certificate")
    return ConnectOptions(url=args.bus, router=args.router, edge_router=args.edge_router,
                          timeout=args.timeout, sasl_mechanisms=args.sasl_mechanisms,
                          sasl_username=args.sasl_username, sasl_password=sasl_password,
                          ssl_certificate=args.ssl_certificate, ssl_key=args.ssl_key,
                          ssl_trustfile=args.ssl_trustfile, ssl_password=ssl_password,
                          ssl_disable_peer_name_verify=args.ssl_disable_peer_name_verify,
                          page_size=args.page_size)


def run(prog, body):
    """Run body() and turn its outcome into an exit code and a one-line error."""
    try:
        code = body()
        sys.stdout.flush()
        return EXIT_OK if code is None else code
    except UsageError as e:
        sys.stderr.write("%s: %s (try --help)\n" % (prog, e))
        return EXIT_USAGE
    except ManagementError as e:
        sys.stderr.write("%s: %s\n" % (prog, e))
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error of ours.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
