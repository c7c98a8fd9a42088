# test_bench.py - end to end: the load generator (tests/bench/bench_service, ops/bench-service
# runs it; docs/benchmarks.md "The service") against a real cardpostd. Its requests and event
# streams go over HTTP/1.1 connections of its own (docs/decisions.md "The load generator speaks
# HTTP/1.1 itself"): every client shape plays whole moves through them (answers of a
# Content-Length, streams in chunks), each client and stream opens one connection and keeps
# it, and a daemon that goes away mid-run fails the run at once instead of hanging it.
# Argument: the bench_service executable.
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import OPERATOR, Daemon, check, run  # noqa: E402

BENCH = sys.argv[1] if len(sys.argv) > 1 else None


def bench(d, *args, timeout=60):
    """Runs the load generator against `d`; returns (exit code, stdout, stderr)."""
    p = subprocess.run([BENCH, "-u", "http://127.0.0.1:%d" % d.port, "-k", OPERATOR,
                        "-p", str(d.proc.pid), "-s", "7", *args],
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def connections(err):
    m = re.search(r"(\d+) connections opened in all", err)
    return int(m.group(1)) if m else -1


def moves(out):
    """The moves column of the row printed."""
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    check(len(rows) == 1, "one table row (%r)" % out)
    return int(rows[0].split("|")[4])


def test_every_client_shape():
    d = Daemon().start()
    try:
        # (shape, options, connections: one a client, and -S one a seat's stream of each
        # match it played, -P one a player's stream, -W one a spectator)
        for shape, extra in [("get", []), ("streams", ["-S"]), ("players", ["-P"]),
                             ("players, mix", ["-P", "-g", "mix"])]:
            rc, out, err = bench(d, "-c", "4", "-t", "1.5", *extra)
            check(rc == 0 and "failed" not in err,
                  "%s: the run passes (%d %r %r)" % (shape, rc, out[-300:], err[-600:]))
            check(moves(out) > 20, "%s: moves were played (%r)" % (shape, out))
            n = connections(err)
            if shape == "get":
                check(n == 4, "get: one connection a client, kept between requests (%d)" % n)
            elif shape.startswith("players"):
                seats = 5 if "mix" in shape else 4
                check(n == 4 + seats, "%s: a client's and a player's stream's each (%d)"
                      % (shape, n))
            else:
                check(n >= 4 + 16, "streams: a client's and its seats' streams' (%d)" % n)
        rc, out, err = bench(d, "-c", "1", "-t", "1", "-P", "-W", "3",
                             "-o", '{"target": 100000}')
        check(rc == 0 and "+3 watchers" in out and connections(err) == 1 + 4 + 3,
              "three spectators read their streams (%d %r %r)" % (rc, out, err[-300:]))
    finally:
        d.stop()


def test_daemon_gone_fails_the_run():
    d = Daemon().start()
    p = subprocess.Popen([BENCH, "-u", "http://127.0.0.1:%d" % d.port, "-k", OPERATOR,
                          "-p", str(d.proc.pid), "-c", "4", "-t", "60", "-P"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    t0 = time.monotonic()
    d.kill()
    try:
        out, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        check(False, "the load generator stops when the daemon goes away")
    check(p.returncode != 0 and time.monotonic() - t0 < 20,
          "a run whose daemon went away fails (%d)" % p.returncode)
    # (killed, the daemon's sockets are closed or reset under the load generator, or
    # refused to its next connection; a stream that runs to the close just ends)
    reasons = ["closed the connection", "Connection reset", "Connection refused",
               "stream ended"]
    check("requests failed" in err and any(r in err for r in reasons),
          "and says why (%r)" % err[-600:])


if __name__ == "__main__":
    check(BENCH and os.access(BENCH, os.X_OK), "argument: the bench_service executable")
    run([test_every_client_shape, test_daemon_gone_fails_the_run])
