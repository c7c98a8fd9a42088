#!/usr/bin/python3
# ops/bench-backlog.py - a webhook backlog deep in long matches, drained (docs/benchmarks.md
# "A backlog's replays"). Plays M moves in each of three four-seat Hearts matches (target
# 500) while the players' webhook receiver answers 503, restarts the daemon on the same
# database (nothing in memory: every delivery renders from the log), lets the receiver answer
# 204, moves the test clock past every retry, and prints the rows, the highest seq, the
# drain's wall time and the daemon's CPU for it, as one JSON object. Uses the end-to-end
# tests' harness and peers (tests/e2e, tests/peers).
#   ops/bench-backlog.py [-m MOVES] [-d CARDPOSTD]   (default 1200, build-release/cardpostd)
import argparse
import json
import os
import sqlite3
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = argparse.ArgumentParser(description="a webhook backlog, drained")
args.add_argument("-m", type=int, default=1200, help="moves a match (default 1200)")
args.add_argument("-d", default=os.path.join(ROOT, "build-release", "cardpostd"))
opts = args.parse_args()
os.environ["CARDPOSTD"] = opts.d
os.environ["CARDPOST_SOURCE_ROOT"] = ROOT  # (the harness checks answers against the OpenAPI)
os.environ.setdefault("CARDPOST", os.path.join(os.path.dirname(opts.d), "cardpost"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "tests", "peers"))
from harness import Daemon, wait_for  # noqa: E402
from test_notify import Match, register, setup  # noqa: E402


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one(db, sql):
    c = sqlite3.connect(db)
    try:
        return c.execute(sql).fetchone()[0]
    finally:
        c.close()


tmp, sink, recv, d = setup("backlog")
with d:
    players = [register(d, "p%d" % i, recv, email_addr=False) for i in range(4)]
    recv.set_status(503)
    matches = [Match(d, players, options={"target": 500}, clock=None) for _ in range(3)]
    for _ in range(opts.m):
        for m in matches:
            m.step()
    time.sleep(2)  # (the first attempts made)
d = Daemon(db=d.db, tmp=tmp, env=d.env)
with d:
    recv.set_status(204)
    rows = one(d.db, "SELECT count(*) FROM outbox_all")
    seq = one(d.db, "SELECT max(seq) FROM outbox_all")
    cpu0, t0 = cpu_seconds(d.proc.pid), time.monotonic()
    d.advance(4000)
    wait_for(lambda: one(d.db, "SELECT count(*) FROM outbox_all WHERE webhook_status = 'pending'")
             == 0, "every webhook delivered", timeout=1200, step=0.2)
    print(json.dumps({"rows": rows, "max_seq": seq,
                      "drain_seconds": round(time.monotonic() - t0, 2),
                      "daemon_cpu_seconds": round(cpu_seconds(d.proc.pid) - cpu0, 2)}))
recv.stop()
sink.stop()
