# ops/bench-standings.py - the standings-at-scale benchmark (docs/benchmarks.md), run by
# ops/bench-standings: a Snag league of 1,000 players and 100,000 finished matches, mostly
# written straight into the database (summary rows, seats, and the standings they imply,
# computed as the service computes them), plus a few hundred played through the API so
# their logs are real; then cardpostd serves it and the league's pages are timed.
#   python3 ops/bench-standings.py CARDPOSTD WORKDIR [players] [matches] [real] [requests]
# Standard library only.
import hashlib
import http.client
import json
import os
import random
import re
import select
import signal
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))  # before any chdir

CARDPOSTD, WORK = sys.argv[1], sys.argv[2]
PLAYERS = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
MATCHES = int(sys.argv[4]) if len(sys.argv) > 4 else 100000
REAL = int(sys.argv[5]) if len(sys.argv) > 5 else 300
REQUESTS = int(sys.argv[6]) if len(sys.argv) > 6 else 50
TARGET = 10
OP = "bench-operator-token-0123456789abcdef"
DB = os.path.join(WORK, "standings.db")
rng = random.Random(1)


class Daemon:
    def __init__(self):
        self.err = open(os.path.join(WORK, "cardpostd.err"), "ab")
        self.proc = subprocess.Popen([CARDPOSTD, "--db", DB, "--listen", "127.0.0.1:0",
                                      "--operator-token", OP], stdout=subprocess.PIPE,
                                     stderr=self.err)
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline().decode() if ready else ""
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not m:
            sys.exit("cardpostd did not start: %r" % line)
        self.port = int(m.group(1))
        self.conn = None

    def request(self, method, path, body=None, token=None):
        """One request on a keep-alive connection: (status, body bytes, seconds)."""
        h = {"Content-Type": "application/json"}
        if token:
            h["Authorization"] = "Bearer " + token
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            try:
                t0 = time.perf_counter()
                self.conn.request(method, path, body=data, headers=h)
                r = self.conn.getresponse()
                raw = r.read()
                secs = time.perf_counter() - t0
                if r.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                return r.status, raw, secs
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise

    def json(self, method, path, body=None, token=None, want=200):
        st, raw, _ = self.request(method, path, body, token)
        if st != want:
            sys.exit("%s %s -> %d, wanted %d: %s" % (method, path, st, want, raw[:300]))
        return json.loads(raw)

    def stop(self):
        if self.conn:
            self.conn.close()
        self.proc.send_signal(signal.SIGTERM)
        if self.proc.wait(timeout=30) != 0:
            sys.exit("cardpostd did not exit 0")
        self.err.close()

    def rss(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            return {k: v.strip() for k, v in (l.split(":", 1) for l in f) if k.startswith("Vm")}


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, -(-len(xs) * p // 100) - 1))]


# ---- 1. Players, the league and its members, through the API ----------------------------

t_start = time.monotonic()
d = Daemon()
people = []
for i in range(PLAYERS):
    p = d.json("POST", "/v1/players", {"name": "player %04d" % i,
                                       "preferences": {"seat_without_asking": True}}, want=201)
    people.append((p["id"], p["token"]))
league = d.json("POST", "/v1/leagues", {"name": "Snag at scale", "game": "snag",
                                         "options": {"target": TARGET}}, token=OP, want=201)
lid = league["id"]
for pid, _ in people:
    d.json("POST", "/v1/leagues/%d/members" % lid, {"player": pid}, token=OP, want=201)
d.stop()
t_api = time.monotonic() - t_start

# ---- 2. The synthetic finished matches, with the standings they imply --------------------

t0 = time.monotonic()
db = sqlite3.connect(DB)
options = db.execute("SELECT options FROM leagues WHERE id = ?", (lid,)).fetchone()[0]
points = json.loads(db.execute("SELECT points FROM leagues WHERE id = ?", (lid,)).fetchone()[0])
synthetic = MATCHES - REAL
ids = [pid for pid, _ in people]
rows = {pid: [0, 0, 0, 0, 0.0, 0, 0, 1500.0] for pid in ids}  # played won drawn lost pts for against rating
base = int(time.time()) - synthetic * 60
matches, seats = [], []
for k in range(synthetic):
    a, b = rng.sample(ids, 2)
    totals, hands = [0, 0], []
    resigned = None
    if rng.random() < 0.05:  # resigned at some point: the resigner is last
        for _ in range(rng.randrange(3)):
            s = rng.randrange(2)
            sc = rng.choice((1, 3, 6))
            if totals[s] + sc < TARGET:
                totals[s] += sc
                hands.append({"scores": [sc if x == s else 0 for x in range(2)]})
        resigned = rng.randrange(2)
        order = [1 - resigned, resigned]
    else:
        while max(totals) < TARGET:
            s = rng.randrange(2)
            sc = rng.choice((1, 3, 3, 6, 6, 10))
            totals[s] += sc
            hands.append({"scores": [sc if x == s else 0 for x in range(2)]})
        order = [0, 1] if totals[0] >= TARGET else [1, 0]
    result = {"finished": True, "totals": totals, "ranking": [[order[0]], [order[1]]],
              "hands": hands, "resigned": resigned, "to_move": []}
    seed = rng.randbytes(32)
    when = base + k * 60
    matches.append((k + 1, "snag", options, 2, seed, hashlib.sha256(seed).hexdigest(), None,
                    when - 3000, "finished", 25 * len(hands) + len(hands) + 1, "[]",
                    json.dumps(totals), json.dumps(result, separators=(",", ":")), None, when,
                    None, "auto", None, None, 0, lid))
    seats += [(k + 1, 0, a), (k + 1, 1, b)]
    # The standings, as api_league_match_finished computes them (two seats, no shared place).
    win, lose = (a, b) if order[0] == 0 else (b, a)
    rw, rl = rows[win], rows[lose]
    ew = 1 / (1 + 10 ** ((rl[7] - rw[7]) / 400))
    el = 1 / (1 + 10 ** ((rw[7] - rl[7]) / 400))
    dw, dl = 32.0 * (1 - ew), 32.0 * (0 - el)
    for r, me, other, share, dr in ((rw, order[0], order[1], points[0], dw),
                                    (rl, order[1], order[0], points[1], dl)):
        r[0] += 1
        r[1 if r is rw else 3] += 1
        r[4] += share
        r[5] += totals[me]
        r[6] += totals[other]
        r[7] += dr
cols = ("id, game, options, seats, seed, seed_commitment, created_by, created_at, status, seq,"
        " to_move, totals, result, deadline, finished_at, move_seconds, timeout_policy,"
        " reminder_seconds, turn_started, reminded, league_id")
with db:
    db.executemany("INSERT INTO matches (%s) VALUES (%s)" % (cols, ",".join("?" * 21)), matches)
    db.executemany("INSERT INTO match_seats (match_id, seat, player_id) VALUES (?, ?, ?)", seats)
    db.executemany("INSERT OR REPLACE INTO standings (league_id, player_id, played, won, drawn,"
                   " lost, points, points_for, points_against, rating) VALUES"
                   " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [(lid, pid) + tuple(r) for pid, r in rows.items()])
db.close()
t_gen = time.monotonic() - t0

# ---- 3. Real matches through the API: their logs are whole, the service updates the table --

t0 = time.monotonic()
d = Daemon()
tokens = dict(people)
finish_ms, move_ms = [], []
for k in range(REAL):
    a, b = rng.sample(ids, 2)
    v = d.json("POST", "/v1/matches", {"game": "snag", "players": [a, b], "league": lid},
               token=OP, want=201)
    mid, seat_ids = v["id"], [a, b]
    resign_at = rng.randrange(5, 40) if k % 4 == 0 else None
    n = 0
    while v["status"] == "active":
        s = v["to_move"][0]
        sv = d.json("GET", "/v1/matches/%d" % mid, token=tokens[seat_ids[s]])
        mv = "resign" if resign_at is not None and n >= resign_at else rng.choice(sv["legal"])
        st, raw, secs = d.request("POST", "/v1/matches/%d/moves" % mid,
                                  {"move": mv, "seq": sv["seq"]}, token=tokens[seat_ids[s]])
        if st != 201:
            sys.exit("move %r -> %d %s" % (mv, st, raw[:300]))
        v = json.loads(raw)
        (finish_ms if v["status"] == "finished" else move_ms).append(secs * 1000)
        n += 1
t_real = time.monotonic() - t0

# ---- 4. The standings the service shows agree with the table recomputed from the results --

db = sqlite3.connect(DB)
check = {pid: [0, 0, 0, 0, 0.0, 0, 0, 1500.0] for pid in ids}
seat_of = {}
for mid, seat, pid in db.execute("SELECT x.match_id, x.seat, x.player_id FROM match_seats x"
                                 " JOIN matches m ON m.id = x.match_id WHERE m.league_id = ?",
                                 (lid,)):
    seat_of.setdefault(mid, [0, 0])[seat] = pid
finished = db.execute("SELECT id, result FROM matches WHERE league_id = ? AND status ="
                      " 'finished' ORDER BY id", (lid,)).fetchall()
for mid, result in finished:
    res = json.loads(result)
    pl = seat_of[mid]
    w, l = res["ranking"][0][0], res["ranking"][1][0]
    rw, rl = check[pl[w]], check[pl[l]]
    ew = 1 / (1 + 10 ** ((rl[7] - rw[7]) / 400))
    el = 1 / (1 + 10 ** ((rw[7] - rl[7]) / 400))
    dw, dl = 32.0 * (1 - ew), 32.0 * (0 - el)
    for r, me, other, share, dr in ((rw, w, l, points[0], dw), (rl, l, w, points[1], dl)):
        r[0] += 1
        r[1 if r is rw else 3] += 1
        r[4] += share
        r[5] += res["totals"][me]
        r[6] += res["totals"][other]
        r[7] += dr
db.close()
st, raw, _ = d.request("GET", "/v1/leagues/%d/standings" % lid)
shown = json.loads(raw)["standings"]
bad = 0
for r in shown:
    c = check[r["player"]]
    if [r["played"], r["won"], r["drawn"], r["lost"], r["for"], r["against"]] != \
            [c[0], c[1], c[2], c[3], c[5], c[6]] or abs(r["points"] - c[4]) > 1e-9 or \
            abs(r["rating"] - c[7]) > 0.05 + 1e-6:
        bad += 1
if len(shown) != PLAYERS or bad or len(finished) != MATCHES:
    sys.exit("standings disagree with the results: %d rows, %d wrong, %d finished matches"
             % (len(shown), bad, len(finished)))

# ---- 5. Timing ----------------------------------------------------------------------------

def timed(path, n=REQUESTS, fresh=False):
    secs, size = [], 0
    for _ in range(n):
        if fresh and d.conn:
            d.conn.close()
            d.conn = None
        st, raw, s = d.request("GET", path)
        if st != 200:
            sys.exit("GET %s -> %d" % (path, st))
        secs.append(s * 1000)
        size = len(raw)
    return pct(secs, 50), pct(secs, 99), max(secs), size


real_mid = MATCHES  # the newest match: played through the API
out = {
    "standings": timed("/v1/leagues/%d/standings" % lid),
    "standings_new_conn": timed("/v1/leagues/%d/standings" % lid, fresh=True),
    "league": timed("/v1/leagues/%d" % lid),
    "leagues": timed("/v1/leagues"),
    "match": timed("/v1/matches/%d" % real_mid),
    "match_log": timed("/v1/matches/%d/log" % real_mid),
}
# The page itself: headless Chromium until all the standings rows are on screen.
page = None
here = HERE
if (os.path.exists("/usr/bin/chromium") and
        os.path.isdir(os.path.join(here, "..", "tests", "browser", "node_modules"))):
    r = subprocess.run(["node", os.path.join(here, "bench-standings-page.mjs"),
                        "http://127.0.0.1:%d" % d.port, str(lid),
                        str(PLAYERS), "10"], capture_output=True, text=True, timeout=600)
    if r.returncode == 0:
        page = json.loads(r.stdout.strip().splitlines()[-1])
    else:
        print("the page timing failed: " + r.stderr.strip()[-600:])
vm = d.rss()
d.stop()
db = sqlite3.connect(DB)
plans = {}
for name, sql in (
        ("standings", "SELECT s.player_id, p.name FROM standings s JOIN players p ON"
         " p.id = s.player_id WHERE s.league_id = 1 ORDER BY s.points DESC, s.won DESC,"
         " CASE WHEN 0 THEN s.points_against - s.points_for ELSE s.points_for -"
         " s.points_against END DESC, s.rating DESC, s.player_id LIMIT 4096"),
        ("league counts", "SELECT (SELECT count(*) FROM matches x WHERE x.league_id = 1 AND"
         " x.status = 'finished')"),
        ("league matches", "SELECT m.id FROM matches m WHERE m.league_id = 1 AND (NOT 0 OR"
         " m.status = 'active') AND (0 = 0 OR EXISTS (SELECT 1 FROM match_seats x WHERE"
         " x.match_id = m.id AND x.player_id = 0)) ORDER BY m.id DESC LIMIT 200"),
        ("league seatings", "SELECT x.match_id, x.player_id FROM match_seats x JOIN matches m"
         " ON m.id = x.match_id WHERE m.league_id = 1 ORDER BY x.match_id, x.seat")):
    plans[name] = [r[3] for r in db.execute("EXPLAIN QUERY PLAN " + sql)]
size_mb = os.path.getsize(DB) / 1048576
db.close()

print("league %d: %d players, %d finished matches (%d written directly, %d played through the"
      " API, %d of them ended by a resignation); database %.1f MiB"
      % (lid, PLAYERS, MATCHES, synthetic, REAL, (REAL + 3) // 4, size_mb))
print("setup: players and members via the API %.1f s, synthetic matches and standings %.1f s,"
      " real matches %.1f s" % (t_api, t_gen, t_real))
print("standings shown == standings recomputed from every match's result: yes (%d rows)"
      % len(shown))
print("move latency in real league matches: p50 %.2f ms (%d moves); the move that finishes a"
      " match (standings update included): p50 %.2f ms, p99 %.2f ms (%d)"
      % (pct(move_ms, 50), len(move_ms), pct(finish_ms, 50), pct(finish_ms, 99), len(finish_ms)))
print("| request | p50 ms | p99 ms | max ms | bytes |")
print("| --- | ---: | ---: | ---: | ---: |")
for name, path in (("standings", "GET /v1/leagues/{id}/standings"),
                   ("standings_new_conn", "GET /v1/leagues/{id}/standings, a new connection each"),
                   ("league", "GET /v1/leagues/{id}"), ("leagues", "GET /v1/leagues"),
                   ("match", "GET /v1/matches/{id} (a real match)"),
                   ("match_log", "GET /v1/matches/{id}/log (a real match)")):
    p50, p99, mx, size = out[name]
    print("| %s | %.2f | %.2f | %.2f | %d |" % (path, p50, p99, mx, size))
if page:
    print("page /leagues/{id} in headless Chromium until all %d standings rows are shown"
          " (a fresh page each, %d runs): p50 %.0f ms, min %.0f ms, max %.0f ms"
          % (PLAYERS, page["runs"], page["p50_ms"], page["min_ms"], page["max_ms"]))
elif not (os.path.exists("/usr/bin/chromium") and
          os.path.isdir(os.path.join(HERE, "..", "tests", "browser", "node_modules"))):
    print("page timing skipped: no /usr/bin/chromium or tests/browser/node_modules")
print("daemon memory at the end: VmHWM %s, VmRSS %s" % (vm.get("VmHWM"), vm.get("VmRSS")))
for name, plan in plans.items():
    print("plan %s: %s" % (name, "; ".join(plan)))
