# harness.py - shared by the durability and concurrency tests: starting and killing the real
# build/cardpostd on a database in a temp dir, HTTP calls, random players that keep moving,
# and the checks on the database file itself (every match's full log rebuilt from the
# tables and run through `cardpost verify`). Standard library only.
import http.client
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time

CARDPOST = os.environ.get("CARDPOST", "build/cardpost")
CARDPOSTD = os.environ.get("CARDPOSTD", "build/cardpostd")
OPERATOR = "operator-secret-for-durability-tests-0123"

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


def finish(name, started):
    took = time.monotonic() - started
    if failures:
        print(f"{name}: {len(failures)} failure(s) in {took:.1f}s")
        sys.exit(1)
    print(f"{name}: all checks passed in {took:.1f}s")


class Daemon:
    """build/cardpostd on 127.0.0.1, port 0, database `db` (its standard error beside a
    file database, or in `tmp`)."""

    def __init__(self, db, tmp=None):
        self.db = db
        self.stderr_path = os.path.join(tmp, "cardpostd.stderr") if tmp else db + ".stderr"
        self.proc = None
        self.port = None
        self.stderr = None

    def start(self):
        self.stderr = open(self.stderr_path, "w+")
        self.proc = subprocess.Popen(
            [CARDPOSTD, "--db", self.db, "--listen", "127.0.0.1:0", "--operator-token", OPERATOR],
            stdout=subprocess.PIPE, stderr=self.stderr, text=True,
            # (no limits per address or token: every client is 127.0.0.1, at full speed)
            env=dict(os.environ, CARDPOST_RATE_PER_ADDRESS="0", CARDPOST_RATE_PER_TOKEN="0",
                     CARDPOST_MAX_CONNECTIONS_PER_ADDRESS="0",
                     CARDPOST_MAX_STREAMS_PER_ADDRESS="0", CARDPOST_MAX_STREAMS="0"))
        line = self.proc.stdout.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if not m:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"cardpostd did not start: {line!r}")
        self.port = int(m.group(1))
        return self

    def kill(self, sig=signal.SIGKILL):
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=30)
        self.proc.stdout.close()
        self.stderr.seek(0)
        err = self.stderr.read()
        self.stderr.close()
        if sig == signal.SIGTERM:
            # a clean stop exits 0 (and under the sanitizers: without a report)
            check(rc == 0, f"cardpostd exited {rc} on SIGTERM: {err[-3000:]}")
        return rc


class Down(Exception):
    """The daemon did not answer (killed, connection refused or reset)."""


class Client:
    """One keep-alive HTTP connection to the daemon."""

    def __init__(self, port, timeout=60):
        self.port = port
        self.timeout = timeout
        self.conn = None

    def request(self, method, path, body=None, token=None, key=None):
        headers = {"Idempotency-Key": key} if key else {}
        if token:
            headers["Authorization"] = "Bearer " + token
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                       timeout=self.timeout)
            try:
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                raw = resp.read()
                if resp.getheader("Connection", "").lower() == "close":
                    self.close()
                return resp.status, (json.loads(raw) if raw else None)
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                # A stale keep-alive connection may be retried once, but only a request
                # that changes nothing: a POST that may have been applied is not resent.
                if attempt or method != "GET":
                    raise Down(str(exc)) from exc
        raise Down("unreachable")

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def register(client, n, prefix):
    players = []
    for i in range(n):
        status, body = client.request("POST", "/v1/players", {
            "name": f"{prefix}{i}", "preferences": {"seat_without_asking": True}})
        assert status == 201, (status, body)
        players.append((body["id"], body["token"]))
    return players


def create_match(client, game, players, options=None):
    req = {"game": game, "players": [p[0] for p in players]}
    if options:
        req["options"] = options
    status, body = client.request("POST", "/v1/matches", req, token=OPERATOR)
    assert status == 201, (status, body)
    return body["id"]


class Seat:
    """One player's seat in one match, with what the player was told: every 201 answer as
    (seq the move was posted at, seq after, canonical move text)."""

    def __init__(self, match, seat, token, game):
        self.match = match
        self.seat = seat
        self.token = token
        self.game = game
        self.accepted = []
        self.refused = 0
        self.lost = None  # (Idempotency-Key, body, seq) of a POST whose answer the crash took


def play(port, seat, stop, rng, use_seq=True, prefer_play=False, burst=1, idle=0.005):
    """Keep making random legal moves (never resign) for `seat` until `stop` is set, the
    match is over or the daemon goes down. Returns True when it ended because of Down.
    With use_seq every POST carries an Idempotency-Key; the one the crash interrupted is
    kept in seat.lost."""
    client = Client(port)
    key = body = before = None
    try:
        while not stop.is_set():
            status, view = client.request("GET", f"/v1/matches/{seat.match}", token=seat.token)
            if status != 200:
                check(False, f"match {seat.match} seat {seat.seat}: GET answered {status}")
                return False
            if view["status"] != "active":
                return False
            legal = [m for m in view["legal"] if m != "resign"]
            if not legal:
                time.sleep(idle)
                continue
            if prefer_play:
                plays = [m for m in legal if m.startswith("play ")]
                legal = plays or legal
            before = view["seq"]
            for move in rng.sample(legal, min(burst, len(legal))):
                body = {"move": move}
                key = None
                if use_seq:
                    body["seq"] = before
                    key = f"{seat.match}-{seat.seat}-{before}-{rng.getrandbits(64):x}"
                status, answer = client.request("POST", f"/v1/matches/{seat.match}/moves", body,
                                                token=seat.token, key=key)
                key = None
                if status == 201:
                    seat.accepted.append((before if use_seq else None, answer["seq"], move))
                    before = answer["seq"]
                elif status in (409, 422):
                    seat.refused += 1  # lost a race (stale_seq, not_your_turn, illegal now)
                else:
                    check(False, f"match {seat.match} seat {seat.seat} {move!r}: {status} {answer}")
                    return False
        return False
    except Down:
        if key:
            seat.lost = (key, body, before)
        return True
    finally:
        client.close()


# ---- The database file ----------------------------------------------------------------------

def read_db(path):
    """{match id: {"game", "options", "seed", "commitment", "seq", "status", "result",
    "events": [(seq, kind, seat, body, auto)]}} straight from the tables (a SQLite file, or
    a postgresql:// database through Debian's python3-psycopg2)."""
    if path.startswith(("postgresql://", "postgres://")):
        import psycopg2
        db = psycopg2.connect(path)

        def rows(sql):
            cur = db.cursor()
            cur.execute(sql)
            return cur.fetchall()
    else:
        db = sqlite3.connect(path, timeout=30)

        def rows(sql):
            return db.execute(sql).fetchall()
    try:
        matches = {}
        for mid, game, options, seed, commitment, seq, status, result in rows(
                "SELECT id, game, options, seed, seed_commitment, seq, status, result"
                " FROM matches ORDER BY id"):
            matches[mid] = {"game": game, "options": json.loads(options), "seed": bytes(seed),
                            "commitment": commitment, "seq": seq, "status": status,
                            "result": json.loads(result) if result else None, "events": []}
        for mid, seq, kind, seat, body, auto in rows(
                "SELECT match_id, seq, kind, seat, body, auto FROM events"
                " ORDER BY match_id, seq"):
            matches[mid]["events"].append((seq, kind, seat, body, auto))
        return matches
    finally:
        db.close()


def full_log(m):
    """The match's full cardpost-log/1, seed included, rebuilt from its rows."""
    events = []
    for _, kind, seat, body, auto in m["events"]:
        if kind == "move":
            ev = {"seat": seat, "move": body}
            if auto:
                ev["auto"] = True
        else:
            ev = {kind: body.split(" ")}
        events.append(ev)
    log = {"format": "cardpost-log/1", "game": m["game"], "options": m["options"],
           "seed": m["seed"].hex(), "seed_commitment": m["commitment"], "events": events}
    if m["result"] is not None:
        log["result"] = m["result"]
    return log


def check_db(path, tmp, label):
    """Every match in the file is sound: seq is each event's index, the cached seq is the
    number of events, and the rebuilt full log passes `cardpost verify` (a finished match
    with the stored result, which verify compares). Returns read_db's answer."""
    matches = read_db(path)
    logfile = os.path.join(tmp, "check.json")
    for mid, m in matches.items():
        seqs = [ev[0] for ev in m["events"]]
        check(seqs == list(range(len(seqs))), f"{label}: match {mid} seqs are not 0..n-1: {seqs}")
        check(m["seq"] == len(seqs),
              f"{label}: match {mid} cached seq {m['seq']} but {len(seqs)} events")
        with open(logfile, "w") as f:
            json.dump(full_log(m), f)
        out = subprocess.run([CARDPOST, "verify", logfile], capture_output=True, text=True)
        if not check(out.returncode == 0,
                     f"{label}: match {mid} ({m['game']}) does not verify: {out.stdout.strip()}"):
            continue
        result = json.loads(out.stdout)
        check(result["finished"] == (m["status"] == "finished"),
              f"{label}: match {mid} status {m['status']} but verify says {result['finished']}")
    return matches


def check_accepted(matches, seats, label):
    """Every move answered 201 is in the database at the seq it was posted at."""
    n = 0
    for s in seats:
        events = matches[s.match]["events"]
        for before, after, move in s.accepted:
            n += 1
            if before is None:
                # posted without seq: the move is the latest move event below `after`
                cands = [ev for ev in events[:after] if ev[1] == "move"]
                ev = cands[-1] if cands else None
            else:
                ev = events[before] if before < len(events) else None
            check(ev is not None and ev[1:4] == ("move", s.seat, move),
                  f"{label}: match {s.match} seat {s.seat} {move!r} answered 201 at seq "
                  f"{before}->{after} but the database has {ev}")
            check(after <= len(events),
                  f"{label}: match {s.match} answered seq {after} > {len(events)} events")
    return n


def check_accepted_over_http(client, seats, label):
    """Every move answered 201 is in GET /log as the mover's seat sees it, at its seq."""
    logs = {}
    for s in seats:
        if not s.accepted:
            continue
        status, log = client.request("GET", f"/v1/matches/{s.match}/log", token=s.token)
        if not check(status == 200, f"{label}: GET log of {s.match}: {status}"):
            continue
        by_seq = {}
        for i, ev in enumerate(log["events"]):
            by_seq[ev.get("seq", i)] = ev
        for before, after, move in s.accepted:
            if before is None:
                continue
            ev = by_seq.get(before)
            check(ev is not None and ev.get("seat") == s.seat and ev.get("move") == move,
                  f"{label}: match {s.match} seat {s.seat} {move!r} at seq {before}: log has {ev}")
        logs[s.match] = log
    return logs


class Health(threading.Thread):
    """Polls GET /healthz every `every` seconds; records failures and the slowest answer."""

    def __init__(self, port, every=0.1):
        super().__init__(daemon=True)
        self.port = port
        self.every = every
        self.stop = threading.Event()
        self.polls = 0
        self.bad = []
        self.slowest = 0.0

    def run(self):
        client = Client(self.port, timeout=30)
        while not self.stop.is_set():
            t = time.monotonic()
            try:
                status, body = client.request("GET", "/healthz")
                if status != 200 or body != {"status": "ok"}:
                    self.bad.append((status, body))
            except Down as exc:
                self.bad.append(("down", str(exc)))
            self.slowest = max(self.slowest, time.monotonic() - t)
            self.polls += 1
            self.stop.wait(self.every)
        client.close()


def seats_of(match, players, game):
    return [Seat(match, i, p[1], game) for i, p in enumerate(players)]


def run_threads(targets):
    threads = [threading.Thread(target=t, daemon=True) for t in targets]
    for t in threads:
        t.start()
    return threads


__all__ = ["check", "finish", "Daemon", "Down", "Client", "register", "create_match", "Seat",
           "play", "read_db", "full_log", "check_db", "check_accepted",
           "check_accepted_over_http", "Health", "seats_of", "run_threads", "random", "signal"]
