#!/usr/bin/python3
"""tests/e2e/test_demo_seed.py - ops/demo-seed.py (the demo ops/run seeds a new database
with) against the real cardpostd: starts $CARDPOSTD on a free port with a temp database,
runs the script, and checks through the API that its players and matches exist, that some
matches are finished and some still running, and that $CARDPOST verify accepts every
finished match's log.
"""
import json
import os
import stat
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

ROOT = os.environ["CARDPOST_SOURCE_ROOT"]
CARDPOST = os.environ["CARDPOST"]
CARDPOSTD = os.environ["CARDPOSTD"]
SEED_SCRIPT = os.path.join(ROOT, "ops", "demo-seed.py")
OPERATOR = "op-demo-seed-test-0123456789abcdefgh"
failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def get(base, path, token=None):
    req = urllib.request.Request(base + path)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        # (its _pg twin: the database run-with-pg.sh made, as `ops/run --postgres` seeds)
        db = os.environ.get("CARDPOST_TEST_PG") or os.path.join(tmp, "demo.db")
        daemon = subprocess.Popen([CARDPOSTD, "--db", db,
                                   "--listen", "127.0.0.1:0", "--operator-token", OPERATOR],
                                  stdout=subprocess.PIPE, text=True)
        try:
            line = daemon.stdout.readline()
            base = line.split("listening on ")[1].split()[0]
            run(base, tmp)
        finally:
            daemon.terminate()
            code = daemon.wait(timeout=60)
            check(code == 0, f"cardpostd exits 0 on SIGTERM (got {code})")
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("all checks passed")


def run(base, tmp):
    out = os.path.join(tmp, "players.json")
    env = dict(os.environ)
    env.pop("CARDPOST_OPERATOR_TOKEN", None)
    r = subprocess.run([sys.executable, SEED_SCRIPT, "--url", base, "--out", out],
                       env=env, capture_output=True, text=True)
    check(r.returncode != 0 and "operator token" in r.stderr,
          "without an operator token demo-seed refuses (exit non-zero, says why)")

    env["CARDPOST_OPERATOR_TOKEN"] = OPERATOR
    r = subprocess.run([sys.executable, SEED_SCRIPT, "--url", base, "--out", out, "--seed", "7"],
                       env=env, capture_output=True, text=True, timeout=600)
    sys.stdout.write(r.stdout)
    check(r.returncode == 0, f"demo-seed exits 0 (stderr: {r.stderr.strip()})")
    if r.returncode != 0:
        return
    check(stat.S_IMODE(os.stat(out).st_mode) == 0o600, "the tokens file is mode 600")
    with open(out) as f:
        demo = json.load(f)
    players, matches = demo["players"], demo["matches"]
    check(len(players) >= 3, f"{len(players)} players registered")
    token = {p["id"]: p["token"] for p in players}
    name_to_id = {p["name"]: p["id"] for p in players}

    games_finished, games_active, seen_players = set(), set(), set()
    for m in matches:
        mid = m["id"]
        status, body = get(base, f"/v1/matches/{mid}")
        check(status == 200, f"match {mid} ({m['game']}) exists")
        if status != 200:
            continue
        view = json.loads(body)
        check(view["status"] == m["status"] and view["seq"] == m["seq"],
              f"match {mid}: status {view['status']} seq {view['seq']} as the file says")
        check(view["game"] == m["game"], f"match {mid}: game {view['game']}")
        # Every seat's token from the file is that seat's.
        for p in view["players"]:
            seen_players.add(p["id"])
            status, body = get(base, f"/v1/matches/{mid}", token[p["id"]])
            check(status == 200 and json.loads(body)["you"] == p["seat"],
                  f"match {mid}: {p['name']}'s token sits at seat {p['seat']}")
        check([p["id"] for p in view["players"]] == [name_to_id[n] for n in m["players"]],
              f"match {mid}: seats in the order {m['players']}")
        status, log = get(base, f"/v1/matches/{mid}/log")
        check(status == 200, f"match {mid}: GET log 200")
        if view["status"] == "finished":
            games_finished.add(m["game"])
            check("result" in view and "seed" in view, f"match {mid}: finished, seed and result shown")
            path = os.path.join(tmp, f"log{mid}.json")
            with open(path, "wb") as f:
                f.write(log)
            v = subprocess.run([CARDPOST, "verify", path], capture_output=True, text=True)
            result = json.loads(v.stdout)
            check(v.returncode == 0 and result.get("finished") is True,
                  f"match {mid}: cardpost verify accepts the finished log ({v.stdout[:80]})")
        else:
            games_active.add(m["game"])
            check(view["status"] == "active" and m["moves"] > 0 and view["to_move"],
                  f"match {mid}: active, {m['moves']} moves played, seats {view['to_move']} to move")
            check("seed" not in json.loads(log), f"match {mid}: the running log hides the seed")
    check(len(games_finished) >= 2, f"finished matches of several games: {sorted(games_finished)}")
    check(len(games_active) >= 2, f"running matches of several games: {sorted(games_active)}")
    check(seen_players == set(token), "every registered player sits in some match")

    # The leagues: the front page has something to show, with standings and matches.
    st, body = get(base, "/v1/leagues")
    listing = json.loads(body) if st == 200 else {"leagues": []}
    check(len(listing["leagues"]) == len(demo["leagues"]) >= 2, f"the demo's leagues are listed")
    for lg in demo["leagues"]:
        st, body = get(base, f"/v1/leagues/{lg['id']}/standings")
        rows = json.loads(body)["standings"] if st == 200 else []
        check(len(rows) == len(players) and sum(r["played"] for r in rows) > 0,
              f"league {lg['name']}: every member in the standings, some matches played")
        st, body = get(base, f"/v1/leagues/{lg['id']}")
        detail = json.loads(body) if st == 200 else {"matches": []}
        statuses = {m["status"] for m in detail["matches"]}
        check(statuses == {"active", "finished"} and len(detail["matches"]) == len(lg["matches"]),
              f"league {lg['name']}: finished and running matches ({statuses})")

if __name__ == "__main__":
    main()
