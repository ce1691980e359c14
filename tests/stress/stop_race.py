#!/usr/bin/python3
"""Stress: stop junctiond (SIGTERM) while connections open, close and hold
armed timers, many times over.

Each iteration starts a router (2 worker threads, a 1 s idle timeout on the
listener, router.writeStallTimeoutSeconds 1), then runs until a random
moment 0.3-1.3 s later:
  - CHURN threads: raw clients that open (asking for a 500 ms idle
    timeout, so the router's tick timers are armed), attach a receiver on
    the flooded address with a little credit, read a few frames and drop the
    socket without a close frame, over and over;
  - two slow readers (tiny receive buffer, a million credits, never read):
    their write-stall timers are armed and deliveries pile up for them;
  - two flood senders (harness.py flood-sender) on the same address: the
    octets held for the slow readers fill their links' budgets, so their
    links stop and the budgets' wakers are set;
  - optionally (--idle, --doomed) connections held open, so that the
    stop's walk over the registry takes longer, and connections all dropped
    at once a few milliseconds before the signal (with 100 and 40 they did
    not make the old race more frequent: 0 in 300 and 0 in 100).
Then SIGTERM. The iteration fails when junctiond exits with a non-zero
status or its log names AddressSanitizer, a failed invariant (debug and
sanitizer builds check that a waker holds a reference), a leak report or
connections left to jn_io_free's forced free.

Run it against a sanitizer build (about 1.5-3 s an iteration on 2 cores):
    JN_BUILD_DIR=$PWD/build-asan ASAN_OPTIONS=handle_abort=1 \\
        /usr/bin/python3 tests/stress/stop_race.py -n 200
(handle_abort: a failed invariant prints its stack.) Prints one line per
failing iteration (its log is kept) and a summary; exit status 1 when any
iteration failed. Not part of ctest: it takes minutes and the race it was
written for shows in about one stop in a hundred or two.

That race (docs/design.md, "Waking a connection, and its references"): the
stop woke every registered connection without a reference, so one being
freed at that moment was queued and then read after its free. Counts on a
2-core machine shared with other work, before the fix: 1 of 200 iterations
ended in AddressSanitizer's use-after-poison in jn_mpsc_drain; with the
reference check alone added (it catches every such wake, whether or not the
freed slot is read), 2 of 206; with that check and a 1 ms sleep per
connection in the stop's walk (a local experiment, not in the tree), 5 of
260, every one woken by the stop's walk. After the fix: 0 of 200 (these
defaults), 0 of 300 (--idle 100 --doomed 40), 0 of 260 with the same sleep.
"""
import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "system"))

from proton import Described, ulong, uint, ubyte  # noqa: E402

from harness import (ATTACH, FLOW, PYTHON, SLOW, RawClient, Router, frame,  # noqa: E402
                     performative)

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "system", "harness.py")
ADDRESS = "stress.q"
BAD = ("AddressSanitizer", "ThreadSanitizer", "invariant failed", "LeakSanitizer", "leaked",
       "not released by the core")


def receiver(port, credit, rcvbuf=None, idle_ms=500):
    """A raw client with a receiver on ADDRESS and `credit` credits."""
    c = RawClient(port, timeout=5.0)
    if rcvbuf:
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    c.open(idle_time_out=idle_ms)
    c.begin()
    c.send(frame(performative(ATTACH, [
        "rx-%d" % id(c), uint(0), True, ubyte(0), ubyte(0),
        Described(ulong(0x28), [ADDRESS]), Described(ulong(0x29), [None]),
        None, None, None])))
    c.expect(ATTACH)
    c.send(frame(performative(FLOW, [uint(0), uint(0x7fffffff), uint(1), uint(0x7fffffff),
                                     uint(0), uint(0), uint(credit)])))
    return c


def churn(port, stop, counts):
    while not stop.is_set():
        try:
            c = receiver(port, random.choice((1, 5, 50)))
            c.sock.settimeout(0.05)
            for _ in range(random.randrange(0, 4)):
                try:
                    c.read_frame()
                except (socket.timeout, EOFError):
                    break
            c.close()  # abrupt: no close frame
            counts[0] += 1
        except (OSError, EOFError, AssertionError) as e:
            counts[1] += 1
            if os.environ.get("STRESS_DEBUG"):
                print("churn:", repr(e)[:200], flush=True)
            time.sleep(0.01)


def iteration(workdir, i, args):
    r = Router(workdir, name="S%d" % i, worker_threads=args.threads,
               router={"writeStallTimeoutSeconds": 1},
               listener={"idleTimeoutSeconds": 1})
    r.start()
    try:
        r.wait_ready()
    except AssertionError as e:
        return "start failed: %s" % e
    stop = threading.Event()
    counts = [0, 0]
    held, kids, threads = [], [], []
    try:
        for _ in range(2):
            held.append(receiver(r.port, 1000000, rcvbuf=4096))
        for _ in range(2):
            kids.append(subprocess.Popen([PYTHON, HARNESS, "flood-sender", r.url, ADDRESS,
                                          str(args.body)], stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL))
        for _ in range(args.churn):
            t = threading.Thread(target=churn, args=(r.port, stop, counts), daemon=True)
            t.start()
            threads.append(t)
        doomed = []
        for k in range(args.idle + args.doomed):
            c = RawClient(r.port, timeout=5.0)
            c.open(idle_time_out=500)
            (doomed if k < args.doomed else held).append(c)
        time.sleep(args.warmup + random.random())
        for c in doomed:  # all at once: their connections end as the stop walks them
            c.close()
        time.sleep(random.random() * args.lag)
        r.proc.send_signal(15)
        r.signalled = True
        try:
            r.proc.wait(10 * SLOW)
        except subprocess.TimeoutExpired:
            r.proc.kill()
            r.proc.wait(10)
            return "did not stop within %.0f s" % (10 * SLOW)
    finally:
        stop.set()
        for t in threads:
            t.join(5)
        for k in kids:
            if k.poll() is None:
                k.kill()
            k.wait(10)
        for c in held:
            c.close()
        r._log_file.close()
    log = r.log()
    if args.verbose:
        print("iteration %d: %d churned connections (%d failed), %d opened, exit %s" % (
            i, counts[0], counts[1], log.count("Connection Opened"), r.proc.returncode),
            flush=True)
    bad = [w for w in BAD if w in log]
    if r.proc.returncode != 0 or bad:
        keep = os.path.join(args.keep, "stop_race_%d.log" % i)
        shutil.copy(r.log_path, keep)
        return "exit status %s, %s (churned %d); log kept in %s" % (
            r.proc.returncode, ",".join(bad) or "no report", counts[0], keep)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=200, help="iterations (200)")
    ap.add_argument("--threads", type=int, default=2, help="router workerThreads (2)")
    ap.add_argument("--churn", type=int, default=4, help="churning client threads (4)")
    ap.add_argument("--body", type=int, default=16384, help="flood message body octets")
    ap.add_argument("--warmup", type=float, default=0.3, help="least seconds before SIGTERM")
    ap.add_argument("--idle", type=int, default=0,
                    help="connections held open to the end (0): a longer walk at stop")
    ap.add_argument("--doomed", type=int, default=0,
                    help="connections dropped together just before SIGTERM (0)")
    ap.add_argument("--lag", type=float, default=0.005,
                    help="most seconds between dropping them and SIGTERM (0.005)")
    ap.add_argument("--keep", default=tempfile.gettempdir(), help="where failing logs go")
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per iteration")
    args = ap.parse_args()
    failures = 0
    for i in range(args.n):
        workdir = tempfile.mkdtemp(prefix="jn-stop-race-")
        try:
            err = iteration(workdir, i, args)
        finally:
            shutil.rmtree(workdir, True)
        if err:
            failures += 1
            print("iteration %d: %s" % (i, err), flush=True)
    print("%d of %d iterations failed" % (failures, args.n), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
