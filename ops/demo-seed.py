#!/usr/bin/python3
"""ops/demo-seed.py - seeds a running cardpostd with a small demo through its REST API:
five players, matches of every game, and two leagues with their scheduled matches, some
played to the end and some partway, by random legal moves. ops/run calls it on a new database; tests/e2e/test_demo_seed.py tests it.
Writes the players' tokens and the matches to --out (JSON, mode 600).

  ops/demo-seed.py --url http://127.0.0.1:8080 --out var/demo-players.json [--seed N]
  (the operator token comes from CARDPOST_OPERATOR_TOKEN or --operator-token-file)
"""
import argparse
import json
import os
import random
import sys
import urllib.error
import urllib.request

PLAYERS = ["ann", "bob", "cid", "dee", "eve"]

# (game, seat names, options, moves to play: None = to the end)
MATCHES = [
    ("hearts", ["ann", "bob", "cid", "dee"], {}, None),
    ("hearts", ["eve", "ann", "bob", "cid"], {}, 40),
    ("horseshoe", ["ann", "bob"], {}, None),
    ("snag", ["cid", "dee"], {}, None),
    ("snag", ["ann", "eve"], {}, 12),
    ("horse-thief", ["ann", "bob", "cid", "dee", "eve"], {}, None),
    ("horse-thief", ["bob", "cid", "dee", "eve"], {"seats": 4}, 15),
    ("speed", ["dee", "eve"], {}, None),
    ("speed", ["bob", "ann"], {}, 10),
]

# (league name, game, options, matches of its schedule played to the end; the rest partway)
LEAGUES = [
    ("Tuesday Snag", "snag", {"target": 15}, 7),
    ("Hearts Club", "hearts", {"seats": 4, "target": 30}, 1),
]

MAX_MOVES = 20000  # a match that is not over by then is a bug, not a long game


class ApiError(Exception):
    pass


def call(base, method, path, token=None, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        text = err.read()
        try:
            return err.code, json.loads(text)
        except ValueError:
            return err.code, text.decode(errors="replace")


def expect(status, answer, want, what):
    if status != want:
        raise ApiError(f"{what}: HTTP {status} (expected {want}): {answer}")
    return answer


def play(base, match, tokens, rng, limit):
    """Plays random legal moves in `match` (the creation answer) until it is over or
    `limit` seat moves are made; returns the last view seen and the number of moves."""
    mid = match["id"]
    seat_token = {p["seat"]: tokens[p["id"]] for p in match["players"]}
    state = match  # a spectator's (the operator's) or a seat's view: status, to_move, seq
    views = {}  # seat -> its latest view, while still current (same seq)
    moves = 0
    while state["status"] == "active" and (limit is None or moves < limit):
        if moves >= MAX_MOVES:
            raise ApiError(f"match {mid}: not over after {moves} moves")
        candidates = []
        for seat in state["to_move"]:
            view = views.get(seat)
            if view is None or view["seq"] != state["seq"]:
                view = expect(*call(base, "GET", f"/v1/matches/{mid}", seat_token[seat]), 200,
                              f"GET match {mid} as seat {seat}")
                views[seat] = view
            if view["legal"]:
                candidates.append(seat)
        if not candidates:
            raise ApiError(f"match {mid}: seats {state['to_move']} to move but none has a move")
        seat = rng.choice(candidates)
        move = rng.choice(views[seat]["legal"])
        state = expect(*call(base, "POST", f"/v1/matches/{mid}/moves", seat_token[seat],
                             {"move": move, "seq": views[seat]["seq"]}), 201,
                       f"match {mid}: seat {seat} plays {move!r}")
        views = {seat: state}
        moves += 1
    return state, moves


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="the service, e.g. http://127.0.0.1:8080")
    ap.add_argument("--out", required=True, help="where to write the players' tokens (JSON)")
    ap.add_argument("--operator-token-file", help="file holding the operator token")
    ap.add_argument("--seed", type=int, default=None, help="seed of the random moves")
    args = ap.parse_args()
    base = args.url.rstrip("/")
    operator = os.environ.get("CARDPOST_OPERATOR_TOKEN")
    if args.operator_token_file:
        with open(args.operator_token_file) as f:
            operator = f.read().strip()
    if not operator:
        sys.exit("demo-seed: no operator token (CARDPOST_OPERATOR_TOKEN or --operator-token-file)")
    rng = random.Random(args.seed)

    players, tokens, by_name = [], {}, {}
    for name in PLAYERS:
        # The demo's players agree to be seated without being asked: the seed's matches start.
        p = expect(*call(base, "POST", "/v1/players",
                         body={"name": name, "email": f"{name}@example.org",
                               "preferences": {"seat_without_asking": True}}),
                   201, f"register {name}")
        players.append({"id": p["id"], "name": name, "token": p["token"]})
        tokens[p["id"]] = p["token"]
        by_name[name] = p["id"]

    matches = []
    for game, names, options, limit in MATCHES:
        body = {"game": game, "players": [by_name[n] for n in names]}
        if options:
            body["options"] = options
        created = expect(*call(base, "POST", "/v1/matches", operator, body), 201,
                         f"create a {game} match")
        state, moves = play(base, created, tokens, rng, limit)
        matches.append({"id": created["id"], "game": game, "players": names,
                        "status": state["status"], "seq": state["seq"], "moves": moves})
        print(f"demo-seed: match {created['id']} {game} ({', '.join(names)}): "
              f"{state['status']} after {moves} moves")

    leagues = []
    for name, game, options, finished in LEAGUES:
        league = expect(*call(base, "POST", "/v1/leagues", operator,
                              {"name": name, "game": game, "options": options}), 201,
                        f"create the league {name}")
        for p in players:
            expect(*call(base, "POST", f"/v1/leagues/{league['id']}/members", operator,
                         {"player": p["id"]}), 201, f"{p['name']} joins {name}")
        scheduled = expect(*call(base, "POST", f"/v1/leagues/{league['id']}/schedule", operator,
                                 {}), 201, f"schedule {name}")["matches"]
        for i, mid in enumerate(scheduled):
            created = expect(*call(base, "GET", f"/v1/matches/{mid}"), 200, f"GET match {mid}")
            state, moves = play(base, created, tokens, rng, None if i < finished else 6)
            matches.append({"id": mid, "game": game, "league": league["id"],
                            "players": [p["name"] for p in created["players"]],
                            "status": state["status"], "seq": state["seq"], "moves": moves})
        leagues.append({"id": league["id"], "name": name, "matches": scheduled})
        print(f"demo-seed: league {league['id']} {name}: {len(players)} members, "
              f"{len(scheduled)} matches")

    fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"url": base, "players": players, "matches": matches, "leagues": leagues},
                  f, indent=2)
        f.write("\n")
    print(f"demo-seed: {len(players)} players, {len(matches)} matches; tokens in {args.out}")


if __name__ == "__main__":
    try:
        main()
    except (ApiError, OSError) as err:
        sys.exit(f"demo-seed: {err}")
