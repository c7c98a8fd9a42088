# test_cache.py - end to end: the match cache (config key match_cache). With room for two
# matches, five matches of the five games played move by move in turn are evicted and
# loaded back all the time (from their state snapshots) and play to verified ends; what a
# match serves (views, logs, replays, byte for byte) is the same in memory and reloaded; an
# open event stream keeps its match through the churn; threads loading the same matches at
# once agree; a restart and a crash mid-match, and snapshots that are missing or from another
# build (the events are replayed instead), change nothing; a bad match_cache stops the start.
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (CARDPOSTD, OPERATOR, TEMP_DIRS, Daemon, Stream, check,  # noqa: E402
                     check_finished_log, db_exec, run, verify_log)

rng = random.Random(int(os.environ.get("E2E_SEED", "29")))
SMALL = {"CARDPOST_MATCH_CACHE": "2"}


def raw(d, path, token=None):
    """GET `path`: (status, the body's exact bytes), but for a problem's "request_id", which
    names each request (a running match's replay is a 409 problem)."""
    c = d.conn()
    try:
        c.request("GET", path, headers={"Authorization": "Bearer " + token} if token else {})
        r = c.getresponse()
        body = r.read()
        if r.getheader("Content-Type") == "application/problem+json":
            body = re.sub(rb',"request_id":"[A-Za-z0-9._-]+"', b"", body)
        return r.status, body
    finally:
        c.close()


def step(d, mid, seats):
    """One random legal move of a seat to move in match `mid`, posted with the seq it saw.
    False once the match is over."""
    views = [d.view(mid, p["token"]) for p in seats]
    v = views[0]
    if v["status"] == "finished":
        return False
    check(all(w["seq"] == v["seq"] for w in views), "nobody else moves match %d" % mid)
    movers = [s for s in v["to_move"] if views[s]["legal"]]
    check(movers, "someone is to move in active match %d" % mid)
    s = rng.choice(movers)
    mv = rng.choice(views[s]["legal"])
    st, _, body = d.move(mid, seats[s]["token"], mv, seq=v["seq"])
    check(st == 201, "match %d: %r of seat %d at seq %d -> 201 (got %d %r)"
          % (mid, mv, s, v["seq"], st, body))
    check(body["seq"] > v["seq"] and body["you"] == s, "the answer is the mover's new view")
    return True


def five_matches(d):
    """A match of each game, with short targets: [(id, seats)]."""
    ps = d.players(4, prefix="c")
    games = [("hearts", ps, {"target": 26}), ("horseshoe", ps[:2], {"target": 3}),
             ("snag", ps[1:3], {"target": 5}), ("horse-thief", ps[:3], {"target": 5}),
             ("speed", ps[2:4], {"target": 2})]
    return [(d.create(g, seats, opts)["id"], seats) for g, seats, opts in games]


def served(d, mid, seats):
    """Everything the match serves to each seat and a spectator, as exact bytes."""
    out = []
    for tok in [p["token"] for p in seats] + [None]:
        for path in ("/v1/matches/%d", "/v1/matches/%d/log", "/v1/matches/%d/replay"):
            out.append(raw(d, path % mid, tok))
    return out


def test_evicted_matches_play_on():
    d = Daemon(env=SMALL).start()
    matches = five_matches(d)
    # A spectator's stream on the hearts match stays open through all the evictions.
    hearts, hseats = matches[0]
    stream = Stream(d, hearts, timeout=30)
    first = stream.until_state()
    check(first[-1]["data"]["seq"] == 1, "the stream starts at the deal")
    running = list(matches)
    moves = 0
    while running:
        for mid, seats in list(running):
            # In memory (just used) and evicted (two others used since) serve the same bytes.
            if moves % 7 == 0:
                before = served(d, mid, seats)
                for other, oseats in running + matches:
                    if other != mid:
                        d.view(other, oseats[0]["token"])
                check(served(d, mid, seats) == before,
                      "match %d serves the same bytes reloaded as in memory" % mid)
            if step(d, mid, seats):
                moves += 1
            else:
                running.remove((mid, seats))
    for mid, seats in matches:
        v = d.view(mid)
        log = d.log(mid)
        check_finished_log(log, v)
        verify_log(log, d.tmp, "cache%d" % mid)
    # The stream saw every event of the hearts log, in order, and ended with the match.
    got = []
    while True:
        m = stream.next()
        if m is None:
            break
        if m["event"] == "event":
            got.append(m["data"])
    stream.close()
    events = d.log(hearts)["events"]
    seqs = [e["seq"] for e in got]
    check(seqs == sorted(set(seqs)), "the stream's events come once each, in order")
    check({i for i, e in enumerate(events) if "seat" in e} <= set(seqs),
          "the stream sent every move (%d events streamed, %d in the log)"
          % (len(got), len(events)))
    for e in got:
        ev = {k: v for k, v in e.items() if k != "seq"}
        # A pass went out redacted while it was still secret from the spectator.
        check(ev == events[e["seq"]] or (ev.get("seat") == events[e["seq"]].get("seat") and
                                         (ev.get("secret") or "cards" in ev)),
              "streamed event %d is the log's (or its redacted form): %r" % (e["seq"], ev))
    rc, _ = d.stop()
    check(rc == 0, "cardpostd exits 0")
    print("     %d moves in 5 matches through a cache of 2" % moves)


def test_concurrent_loads():
    """Threads playing their own matches and reading each other's, through a cache of 2:
    the same match is loaded by several threads at once, and matches are evicted while
    others load; what different threads read of a match at the same seq is the same."""
    d = Daemon(env=SMALL).start()
    ps = d.players(8, prefix="cc")
    pairs = [ps[i:i + 2] for i in range(0, 8, 2)]
    mids = [d.create("snag", pair, {"target": 3})["id"] for pair in pairs]
    errors = []
    lock = threading.Lock()
    read = {}  # (match, seq) or (match, "log", events) -> {thread: the bodies read, as JSON}

    def record(key, k, body):
        with lock:
            read.setdefault(key, {}).setdefault(k, set()).add(
                json.dumps(body, sort_keys=True))

    def player(k):
        try:
            mid, seats = mids[k], pairs[k]
            while step(d, mid, seats):
                for other in mids:
                    v = d.view(other)
                    record((other, v["seq"]), k, v)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    def reader(k):
        try:
            for _ in range(150):
                mid = rng.choice(mids)
                st, _, lg = d.request("GET", "/v1/matches/%d/log" % mid)
                check(st == 200, "GET log -> 200")
                record((mid, "log", len(lg["events"])), k, lg)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    ths = [threading.Thread(target=player, args=(k,)) for k in range(4)]
    ths += [threading.Thread(target=reader, args=(k,)) for k in range(4, 6)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    check(not errors, "no thread failed: %r" % errors[:3])
    shared = 0
    for key, by in sorted(read.items(), key=repr):
        bodies = set().union(*by.values())
        check(len(bodies) == 1, "match %d at %r read differently by threads %r:\n%s"
              % (key[0], key[1:], sorted(by), "\n".join(sorted(bodies))[:2000]))
        shared += len(by) > 1
    check(shared >= 10, "threads read the same match at the same seq (%d times)" % shared)
    print("     %d reads of a match at one seq by several threads, all alike" % shared)
    for mid in mids:
        log = d.log(mid)
        check_finished_log(log, d.view(mid))
        verify_log(log, d.tmp, "concurrent%d" % mid)
    rc, _ = d.stop()
    check(rc == 0, "cardpostd exits 0")


def test_restart_and_crash_mid_match():
    d = Daemon(env=SMALL).start()
    matches = five_matches(d)
    for _ in range(12):
        for mid, seats in matches:
            step(d, mid, seats)
    before = {mid: served(d, mid, seats) for mid, seats in matches}
    rc, _ = d.stop()
    check(rc == 0, "the first daemon exits 0")

    d = Daemon(db=d.db, tmp=d.tmp, env=SMALL).start()
    for mid, seats in matches:
        check(served(d, mid, seats) == before[mid],
              "match %d serves the same bytes after the restart" % mid)
    for _ in range(12):
        for mid, seats in matches:
            step(d, mid, seats)
    # A crash: every committed move is there, with its state, after the next start.
    before = {mid: served(d, mid, seats) for mid, seats in matches}
    d.kill()

    d = Daemon(db=d.db, tmp=d.tmp, env=SMALL).start()
    for mid, seats in matches:
        check(served(d, mid, seats) == before[mid],
              "match %d serves the same bytes after a crash" % mid)
    for mid, seats in matches:
        while step(d, mid, seats):
            pass
        log = d.log(mid)
        check_finished_log(log, d.view(mid))
        verify_log(log, d.tmp, "restart%d" % mid)
    rc, _ = d.stop()
    check(rc == 0, "the last daemon exits 0")


def test_foreign_snapshots_are_replayed():
    """A snapshot of another layout, of another seq, cut short, or none at all (a database
    from before migration 0006): the match is replayed from its events and plays on."""
    d = Daemon(env=SMALL).start()
    matches = five_matches(d)
    for _ in range(10):
        for mid, seats in matches:
            step(d, mid, seats)
    before = {mid: served(d, mid, seats) for mid, seats in matches}
    rc, _ = d.stop()
    check(rc == 0, "the first daemon exits 0")

    ids = [mid for mid, _ in matches]
    state = {mid: db_exec(d.db, "SELECT state FROM matches WHERE id = ?", (mid,))[0][0]
             for mid in ids}
    check(all(isinstance(s, bytes) and len(s) > 24 for s in state.values()),
          "every move wrote a snapshot")
    other_layout = bytes([state[ids[0]][0] ^ 0x40]) + state[ids[0]][1:]
    other_seq = state[ids[1]][:8] + (int.from_bytes(state[ids[1]][8:16], "little") - 1).to_bytes(
        8, "little", signed=True) + state[ids[1]][16:]
    db_exec(d.db, "UPDATE matches SET state = ? WHERE id = ?", (other_layout, ids[0]))
    db_exec(d.db, "UPDATE matches SET state = ? WHERE id = ?", (other_seq, ids[1]))
    db_exec(d.db, "UPDATE matches SET state = ? WHERE id = ?", (state[ids[2]][:-4], ids[2]))
    db_exec(d.db, "UPDATE matches SET state = NULL WHERE id = ?", (ids[3],))

    d = Daemon(db=d.db, tmp=d.tmp, env=SMALL).start()
    for mid, seats in matches:
        check(served(d, mid, seats) == before[mid],
              "match %d serves the same bytes replayed from its events" % mid)
    for mid, seats in matches:
        while step(d, mid, seats):
            pass
        log = d.log(mid)
        check_finished_log(log, d.view(mid))
        verify_log(log, d.tmp, "replayed%d" % mid)
    rc, _ = d.stop()
    check(rc == 0, "cardpostd exits 0")


def test_bad_match_cache_refused():
    tmp = tempfile.mkdtemp(prefix="cardpost-e2e-")
    TEMP_DIRS.append(tmp)
    conf = os.path.join(tmp, "cardpost.conf")
    for value, env in (("0", None), ("lots", None), ("2x", None), (None, "-1")):
        with open(conf, "w") as f:
            f.write("match_cache = %s\n" % value if value is not None else "")
        p = subprocess.run([CARDPOSTD, "--config", conf, "--db", os.path.join(tmp, "x.db"),
                            "--listen", "127.0.0.1:0", "--operator-token", OPERATOR],
                           capture_output=True, text=True, timeout=20,
                           env=dict(os.environ, CARDPOST_MATCH_CACHE=env) if env else None)
        check(p.returncode == 2 and "bad value for match_cache" in p.stderr,
              "match_cache %r refused at start (exit %d: %s)" % (value or env, p.returncode,
                                                                 p.stderr.strip()))


run([test_evicted_matches_play_on, test_concurrent_loads, test_restart_and_crash_mid_match,
     test_foreign_snapshots_are_replayed, test_bad_match_cache_refused])
