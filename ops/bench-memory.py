#!/usr/bin/env python3
# ops/bench-memory.py - the daemon's resident memory with many matches in play
# (docs/benchmarks.md "Memory"). Starts CARDPOSTD (default build-release/cardpostd) on a fresh
# temporary database, creates N four-seat Hearts matches, plays the first moves of each (the
# four passes, then plays) over keep-alive connections from a few client threads, and prints
# VmRSS and VmHWM from /proc/PID/status at each stage, as one JSON object.
#   ops/bench-memory.py [-n MATCHES] [-m MOVES] [-t THREADS] [-d CARDPOSTD] [-e KEY=VALUE]...
#   (-m: moves per match, default 6; -e: an environment variable for the daemon, such as
#    CARDPOST_MATCH_CACHE=1024)
import argparse
import http.client
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time


def status(pid):
    """VmRSS, VmHWM, RssAnon and RssFile of `pid` in KiB."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0])
    return out


class Client:
    """One keep-alive connection."""

    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method, path, body=None, token=None):
        h = {"Content-Type": "application/json"}
        if token:
            h["Authorization"] = "Bearer " + token
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=data, headers=h)
                r = self.conn.getresponse()
                text = r.read()
                return r.status, json.loads(text) if text else None
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if attempt:
                    raise


EVENTS = []  # each match's number of events at the end


def play(port, operator, players, moves, mids, errors):
    """Play the first `moves` moves of each match: the first seat to move plays its first
    legal move."""
    c = Client(port)
    try:
        for k, mid in mids:
            seats = [players[(4 * k + s) % len(players)] for s in range(4)]
            for i in range(moves + 1):
                st, v = c.call("GET", "/v1/matches/%d" % mid, token=seats[0]["token"])
                movers = v["to_move"]
                if not movers or i == moves:
                    EVENTS.append(v["seq"])
                    break
                s = movers[0]
                st, v = c.call("GET", "/v1/matches/%d" % mid, token=seats[s]["token"])
                st, body = c.call("POST", "/v1/matches/%d/moves" % mid,
                                  {"move": v["legal"][0]}, seats[s]["token"])
                if st != 201:
                    raise RuntimeError("move in match %d: %d %r" % (mid, st, body))
    except Exception as e:  # noqa: BLE001 - reported by the caller
        errors.append(repr(e))


def create(port, operator, players, out, ks, errors):
    c = Client(port)
    try:
        for k in ks:
            seats = [players[(4 * k + s) % len(players)]["id"] for s in range(4)]
            st, v = c.call("POST", "/v1/matches", {"game": "hearts", "players": seats},
                           operator)
            if st != 201:
                raise RuntimeError("create: %d %r" % (st, v))
            out.append((k, v["id"]))
    except Exception as e:  # noqa: BLE001
        errors.append(repr(e))


def in_threads(n, fn, items, *args):
    errors = []
    ths = [threading.Thread(target=fn, args=(*args, items[i::n], errors)) for i in range(n)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    if errors:
        sys.exit("ops/bench-memory.py: %s" % errors[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=10000, help="matches")
    ap.add_argument("-m", type=int, default=6, help="moves per match")
    ap.add_argument("-t", type=int, default=4, help="client threads")
    ap.add_argument("-d", default="build-release/cardpostd", help="the cardpostd to run")
    ap.add_argument("-e", action="append", default=[], help="KEY=VALUE for the daemon")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="cardpost-mem-")
    token = secrets.token_hex(16)
    env = dict(os.environ, **dict(kv.split("=", 1) for kv in a.e))
    daemon = subprocess.Popen([a.d, "--db", os.path.join(tmp, "mem.db"), "--listen",
                               "127.0.0.1:0", "--operator-token", token],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    try:
        line = daemon.stdout.readline().decode()
        port = int(re.search(r":(\d+) \(database", line).group(1))
        time.sleep(0.5)
        result = {"matches": a.n, "moves_per_match": a.m, "env": a.e, "idle": status(daemon.pid)}
        c = Client(port)
        players = []
        for i in range(64):
            st, p = c.call("POST", "/v1/players", {"name": "mem%d" % i,
                                                   "preferences": {"seat_without_asking": True}})
            players.append(p)
        made = []
        t0 = time.monotonic()
        in_threads(a.t, create, list(range(a.n)), port, token, players, made)
        result["created"] = dict(status(daemon.pid), seconds=round(time.monotonic() - t0, 1))
        t0 = time.monotonic()
        in_threads(a.t, play, sorted(made), port, token, players, a.m)
        result["played"] = dict(status(daemon.pid), seconds=round(time.monotonic() - t0, 1))
        per = (result["played"]["VmRSS"] - result["idle"]["VmRSS"]) * 1024 / a.n
        result["bytes_per_match"] = round(per)
        result["events_per_match"] = round(sum(EVENTS) / max(len(EVENTS), 1), 1)
        print(json.dumps(result))
    finally:
        daemon.terminate()
        daemon.wait()
        shutil.rmtree(tmp, ignore_errors=True)


main()
