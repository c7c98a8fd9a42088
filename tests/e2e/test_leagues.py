# test_leagues.py - end to end: leagues of all five games on the real cardpostd. Members join,
# the organizer schedules a round robin, every match is played to its end by random legal
# moves (some end by a resignation, some by a member leaving the league, which forfeits),
# and the standings are computed here, independently, from the finished matches' logs by
# the rules of docs/api.md "Leagues" (places, shared-place point splits, for/against, Elo
# in finishing order, tie-breaks) and compared with GET /v1/leagues/{id}/standings. Also the
# errors of every league endpoint and the balance of the multi-seat scheduler.
import itertools
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (OPERATOR, Daemon, answer_within, check, check_problem, run,  # noqa: E402
                     verify_log, while_the_writer_waits)

rng = random.Random(int(os.environ.get("E2E_SEED", "61")))
D = None
SHARED = {"drawn": 0, "shared_non_first": 0, "resigned": 0, "forfeited": 0, "matches": 0}


def daemon():
    global D
    if D is None:
        D = Daemon().start()
    return D


# ---- Helpers ------------------------------------------------------------------------------

def req_ok(st_body, status, what):
    st, _, body = st_body
    check(st == status, "%s -> %d (got %d %r)" % (what, status, st, body))
    return body


def new_league(d, owner, game, options=None, points=None):
    body = {"name": "%s league %d" % (game, rng.randrange(1 << 20)), "game": game}
    if options is not None:
        body["options"] = options
    if points is not None:
        body["points"] = points
    lg = req_ok(d.request("POST", "/v1/leagues", body, token=owner["token"]), 201,
                "POST /v1/leagues %s" % game)
    check(lg["organizer"] == owner["id"], "the creator is the organizer")
    return lg


def join_all(d, lg, members):
    for p in members:
        j = req_ok(d.request("POST", "/v1/leagues/%d/members" % lg["id"], None, token=p["token"]),
                   201, "a player joins league %d" % lg["id"])
        check(j["player"] == p["id"] and j["league"] == lg["id"], "the join names player and league")


def schedule(d, lg, owner, rounds=None):
    body = {} if rounds is None else {"rounds": rounds}
    s = req_ok(d.request("POST", "/v1/leagues/%d/schedule" % lg["id"], body, token=owner["token"]),
               201, "the organizer schedules league %d" % lg["id"])
    return s["matches"]


def play(d, mid, by_id, resign_after=None, stop=None):
    """Play match `mid` by random legal moves, one at a time (so the order is ours). With
    `resign_after` = k, a random seat resigns after k moves. `stop(view)` may end the loop
    early (returns True): the match is left running. Returns the final spectator view."""
    v = d.view(mid)
    seats = [by_id[p["id"]] for p in v["players"]]
    moves = 0
    while v["status"] == "active":
        if stop and stop(v):
            return v
        if resign_after is not None and moves >= resign_after:
            s = rng.randrange(len(seats))
            body = req_ok(d.move(mid, seats[s]["token"], "resign"), 201, "seat %d resigns" % s)
            check(body["status"] == "finished", "a resignation ends the match")
            check(body["result"]["ranking"][-1] == [s], "the resigning seat is ranked last alone")
            SHARED["resigned"] += 1
            v = body
            break
        check(v["to_move"], "an active match has a seat to move")
        s = rng.choice(v["to_move"])
        sv = d.view(mid, seats[s]["token"])
        check(sv["legal"], "seat %d to move has legal moves" % s)
        mv = rng.choice(sv["legal"])
        v = req_ok(d.move(mid, seats[s]["token"], mv, seq=sv["seq"]), 201,
                   "match %d seat %d plays %r" % (mid, s, mv))
        moves += 1
        check(moves < 20000, "match %d ends" % mid)
    return d.view(mid)


def places(ranking):
    """seat -> index of its place; and the place sizes."""
    group = {}
    for i, place in enumerate(ranking):
        for s in place:
            group[s] = i
    return group, [len(p) for p in ranking]


def expected_standings(members, finished, points, low_wins):
    """The standings by docs/api.md from (players, result) of each finished match in the
    order they finished. `members`: {id: name} of everyone who ever joined."""
    rows = {pid: {"player": pid, "name": name, "played": 0, "won": 0, "drawn": 0, "lost": 0,
                  "points": 0.0, "for": 0, "against": 0, "rating": 1500.0}
            for pid, name in members.items()}
    for players, result in finished:
        n = len(players)
        totals = result["totals"]
        group, sizes = places(result["ranking"])
        check(sorted(group) == list(range(n)), "the ranking places every seat once")
        share, pos = {}, 0
        for i, place in enumerate(result["ranking"]):
            s = 0.0
            for k in range(len(place)):
                s += points[pos + k]
            for seat in place:
                share[seat] = s / len(place)
            pos += len(place)
        before = [rows[p]["rating"] for p in players]
        delta = [0.0] * n
        for a in range(n):
            for b in range(n):
                if a == b:
                    continue
                score = 1.0 if group[a] < group[b] else 0.5 if group[a] == group[b] else 0.0
                expect = 1 / (1 + 10 ** ((before[b] - before[a]) / 400))
                delta[a] += 32.0 / (n - 1) * (score - expect)
        total = sum(totals)
        for s, pid in enumerate(players):
            r = rows[pid]
            r["played"] += 1
            if group[s] == 0 and sizes[0] == 1:
                r["won"] += 1
            elif group[s] == 0:
                r["drawn"] += 1
            else:
                r["lost"] += 1
            r["points"] += share[s]
            r["for"] += totals[s]
            r["against"] += total - totals[s]
            r["rating"] += delta[s]

    def key(r):
        diff = r["against"] - r["for"] if low_wins else r["for"] - r["against"]
        return (-r["points"], -r["won"], -diff, -r["rating"], r["player"])
    out = sorted(rows.values(), key=key)
    for i, r in enumerate(out):
        r["rank"] = i + 1
    return out


def compare_standings(d, lg, members, finished, low_wins):
    got = req_ok(d.request("GET", "/v1/leagues/%d/standings" % lg["id"]), 200,
                 "GET standings of league %d" % lg["id"])
    check(got["league"] == lg["id"], "the standings name their league")
    want = expected_standings(members, finished, lg["points"], low_wins)
    rows = got["standings"]
    check(len(rows) == len(want), "one standings row per member who ever joined (%d, got %d)"
          % (len(want), len(rows)))
    for g, w in zip(rows, want):
        what = "league %d (%s) rank %d" % (lg["id"], lg["game"], w["rank"])
        check(g["player"] == w["player"], "%s: player %d (got %d)\nwant %r\ngot  %r"
              % (what, w["player"], g["player"], want, rows))
        for k in ("rank", "name", "played", "won", "drawn", "lost", "for", "against"):
            check(g[k] == w[k], "%s: %s = %r (got %r)" % (what, k, w[k], g[k]))
        check(abs(g["points"] - w["points"]) < 1e-9, "%s: points %r (got %r)"
              % (what, w["points"], g["points"]))
        check(abs(g["rating"] - w["rating"]) <= 0.05 + 1e-6, "%s: rating %.4f (got %r)"
              % (what, w["rating"], g["rating"]))
    return rows


def finished_entry(d, mid, tmp, verify=False):
    """(seat players, result) of a finished match, from its log."""
    lg = d.log(mid)
    v = d.view(mid)
    check(v["status"] == "finished" and lg.get("result", {}).get("finished"),
          "match %d is finished and its log holds the result" % mid)
    check(lg["result"] == v["result"], "the log's result is the view's")
    if verify:
        verify_log(lg, tmp, "m%d" % mid)
    _, sizes = places(lg["result"]["ranking"])
    SHARED["drawn"] += sizes[0] > 1
    SHARED["shared_non_first"] += any(k > 1 for k in sizes[1:])
    SHARED["matches"] += 1
    return [p["id"] for p in v["players"]], lg["result"]


# ---- Leagues of every game, played out --------------------------------------------------

CONFIGS = [
    # game, options, members, rounds, custom points
    ("hearts", {"seats": 3, "target": 8}, 5, 2, None),
    ("hearts", {"seats": 4, "target": 8}, 8, 2, [5, 3, 1, 0]),
    ("hearts", {"seats": 5, "target": 6}, 6, None, None),
    ("horse-thief", {"seats": 3, "target": 5}, 7, 1, None),
    ("horse-thief", {"seats": 5, "target": 4}, 6, None, [10, 6, 3, 1, 0]),
    ("horse-thief", {"seats": 7, "target": 3}, 7, 2, None),
    ("snag", {"target": 12}, 5, 1, None),
    ("horseshoe", {"target": 3}, 4, 2, None),
    ("speed", {"target": 1}, 4, 1, None),
]


def play_league(game, options, nmembers, rounds, points, leave=False):
    d = daemon()
    people = d.players(nmembers, prefix=game[:2])
    by_id = {p["id"]: p for p in people}
    owner = people[0]
    lg = new_league(d, owner, game, options, points)
    seats = options.get("seats", 2)
    if points is None:
        check(lg["points"] == [seats - 1 - i for i in range(seats)],
              "default points n-1 .. 0 (%r)" % lg["points"])
    else:
        check(lg["points"] == points, "the league keeps its points")
    join_all(d, lg, people)
    members = {p["id"]: p["name"] for p in people}
    compare_standings(d, lg, members, [], game == "hearts")  # everyone at zero
    mids = schedule(d, lg, owner, rounds)
    check(mids, "the schedule created matches")
    finished = []
    leaver = people[-1] if leave else None
    left_done = False
    for i, mid in enumerate(mids):
        v = d.view(mid)
        if v["status"] == "finished":
            continue  # forfeited when the leaver left
        ids = [p["id"] for p in v["players"]]
        if leaver and not left_done and leaver["id"] in ids:
            # Play a little, then the member leaves: every running match of theirs ends.
            play(d, mid, by_id, stop=lambda view: view["seq"] >= 6)
            running = [m for m in mids if d.view(m)["status"] == "active" and
                       leaver["id"] in [p["id"] for p in d.view(m)["players"]]]
            out = req_ok(d.request("DELETE", "/v1/leagues/%d/members/%d" % (lg["id"], leaver["id"]),
                                   token=leaver["token"]), 200, "the member leaves")
            check(out["left"] == leaver["id"], "the answer names who left")
            check(sorted(out["forfeited"]) == sorted(running),
                  "leaving forfeits exactly the running league matches %r (got %r)"
                  % (running, out["forfeited"]))
            for m in out["forfeited"]:  # forfeited in this order, one transaction each
                players, result = finished_entry(d, m, d.tmp)
                seat = players.index(leaver["id"])
                check(result["ranking"][-1] == [seat] and result["resigned"] == seat,
                      "the leaver resigned match %d and is ranked last" % m)
                finished.append((players, result))
                SHARED["forfeited"] += 1
            left_done = True
            continue
        mode = rng.random()
        if i == 0 and seats > 2:
            resign_after = 0  # at once: every other seat shares first place (a draw)
        elif mode < 0.25:
            resign_after = rng.randrange(1, 40)
        else:
            resign_after = None
        play(d, mid, by_id, resign_after=resign_after)
        finished.append(finished_entry(d, mid, d.tmp, verify=(i == 1)))
    rows = compare_standings(d, lg, members, finished, game == "hearts")
    info = req_ok(d.request("GET", "/v1/leagues/%d" % lg["id"]), 200, "GET league")
    check(sorted(m["id"] for m in info["matches"]) == sorted(mids),
          "the league lists its matches")
    check(all(m["status"] == "finished" and m["result"] for m in info["matches"]),
          "every listed match is finished with its result")
    check([m["id"] for m in info["matches"]] == sorted(mids, reverse=True), "newest first")
    return d, lg, owner, people, by_id, members, finished, rows


def test_leagues_of_every_game():
    for game, options, n, rounds, points in CONFIGS:
        play_league(game, options, n, rounds, points)
    print("     %d matches; %d with a shared first place, %d with a shared later place, "
          "%d resigned" % (SHARED["matches"], SHARED["drawn"], SHARED["shared_non_first"],
                           SHARED["resigned"]))
    check(SHARED["drawn"] >= 2, "shared first places occurred")


def test_leaving_forfeits_and_stays_counted():
    d, lg, owner, people, by_id, members, finished, rows = play_league(
        "hearts", {"seats": 3, "target": 10}, 5, 2, None, leave=True)
    leaver = people[-1]
    check(SHARED["forfeited"] >= 1, "leaving forfeited a running match")
    row = [r for r in rows if r["player"] == leaver["id"]][0]
    played = sum(1 for players, _ in finished if leaver["id"] in players)
    check(row["played"] == played and played >= 1,
          "the leaver's finished matches stay counted (%d, got %d)" % (played, row["played"]))
    info = req_ok(d.request("GET", "/v1/leagues/%d" % lg["id"]), 200, "GET league")
    left = [m for m in info["members"] if m["id"] == leaver["id"]][0]
    check(left["left_at"] is not None, "the member list shows when the leaver left")
    # The leaver is not scheduled again, and cannot sit in a league match.
    again = schedule(d, lg, owner, 1)
    for mid in again:
        check(leaver["id"] not in [p["id"] for p in d.view(mid)["players"]],
              "a player who left is not scheduled")
    others = [p for p in people if p["id"] != leaver["id"]][:2]
    check_problem(d.request("POST", "/v1/matches",
                            {"game": "hearts", "players": [leaver["id"]] + [p["id"] for p in others],
                             "league": lg["id"]}, token=owner["token"]),
                  422, "not_member", "a match with a player who left")
    for mid in again:
        play(d, mid, by_id)
        finished.append(finished_entry(d, mid, d.tmp))
    rows = compare_standings(d, lg, members, finished, True)
    row = [r for r in rows if r["player"] == leaver["id"]][0]
    check(row["played"] == played, "the leaver's row is unchanged by later matches")
    # Rejoining makes them a member again.
    req_ok(d.request("POST", "/v1/leagues/%d/members" % lg["id"], {}, token=leaver["token"]), 201,
           "the leaver joins again")


def test_shared_places_split_points():
    """Horse Thief lets us steer the totals (a lone stayer scores 5, nobody staying scores
    nothing), so we can build a result with a shared first and a shared second place:
    totals [5, 5, 0, 0, x] with seat 4 resigning -> [[0, 1], [2, 3], [4]]."""
    d = daemon()
    people = d.players(5, prefix="sh")
    by_id = {p["id"]: p for p in people}
    lg = new_league(d, people[0], "horse-thief", {"seats": 5, "target": 30}, [7, 5, 2, 1, 0])
    join_all(d, lg, people)
    players = people  # seats in this order
    mid = req_ok(d.request("POST", "/v1/matches", {"game": "horse-thief", "players":
                                                    [p["id"] for p in players], "league": lg["id"]},
                           token=people[0]["token"]), 201, "a league match by a member")["id"]
    want = [5, 5, 0, 0, 0]
    lone = [0, 1]  # who stays alone in the next stay/drop hands
    for _ in range(400):
        v = d.view(mid)
        if v["totals"] == want:
            break
        s = v["to_move"][0]
        sv = d.view(mid, players[s]["token"])
        legal = sv["legal"]
        if "stay" in legal:
            mv = "stay" if lone and s == lone[0] else "drop"
        else:
            mv = rng.choice(legal)
        nv = req_ok(d.move(mid, players[s]["token"], mv), 201, "steering move")
        if nv["totals"] != v["totals"] and lone and nv["totals"][lone[0]] == v["totals"][lone[0]] + 5:
            lone.pop(0)
        if nv["totals"] != v["totals"] and any(t not in (0, 5) for t in nv["totals"]):
            # A spades hand scrambled the totals: start a fresh match.
            req_ok(d.move(mid, players[4]["token"], "resign"), 201, "give up the attempt")
            mid = req_ok(d.request("POST", "/v1/matches", {"game": "horse-thief", "players":
                                                            [p["id"] for p in players],
                                                            "league": lg["id"]},
                                   token=people[0]["token"]), 201, "another league match")["id"]
            lone = [0, 1]
    attempts = [m["id"] for m in req_ok(d.request("GET", "/v1/leagues/%d" % lg["id"]), 200,
                                        "GET league")["matches"]]
    check(d.view(mid)["totals"] == want, "steered the totals to %r" % want)
    req_ok(d.move(mid, players[4]["token"], "resign"), 201, "seat 4 resigns")
    finished = []
    for m in sorted(attempts):
        finished.append(finished_entry(d, m, d.tmp))
    players_, result = finished[-1]
    check(result["ranking"] == [[0, 1], [2, 3], [4]], "shared first and second places (%r)"
          % result["ranking"])
    rows = compare_standings(d, lg, {p["id"]: p["name"] for p in people}, finished, False)
    mine = {r["player"]: r for r in rows}
    # Only the last match gives points in the steered shape... compute its contribution.
    prev = expected_standings({p["id"]: p["name"] for p in people}, finished[:-1], lg["points"],
                              False)
    prev = {r["player"]: r for r in prev}
    gained = [mine[p["id"]]["points"] - prev[p["id"]]["points"] for p in players]
    check(all(abs(g - w) < 1e-9 for g, w in zip(gained, [6, 6, 1.5, 1.5, 0])),
          "places 1-2 split 7+5, places 3-4 split 2+1 (got %r)" % gained)
    check(mine[players[0]["id"]]["drawn"] >= 1 and mine[players[1]["id"]]["drawn"] >= 1,
          "a shared first place counts as drawn")


# ---- Errors --------------------------------------------------------------------------------

def test_errors():
    d = daemon()
    a, b, c, x = d.players(4, prefix="er")
    lg = new_league(d, a, "snag", {"target": 5})
    L = "/v1/leagues/%d" % lg["id"]
    # Create.
    check_problem(d.request("POST", "/v1/leagues", {"name": "n", "game": "snag"}), 401,
                  "unauthorized", "create without a token")
    check_problem(d.request("POST", "/v1/leagues", {"name": "n", "game": "snag"}, token="nope"),
                  401, "unauthorized", "create with a bad token")
    check_problem(d.request("POST", "/v1/leagues", {"game": "snag"}, token=a["token"]), 400,
                  "missing_field", "create without a name")
    check_problem(d.request("POST", "/v1/leagues", {"name": "n", "game": "chess"},
                            token=a["token"]), 422, "unknown_game", "create of an unknown game")
    check_problem(d.request("POST", "/v1/leagues", {"name": "n", "game": "snag",
                                                     "options": {"seats": 3}},
                            token=a["token"]), 422, "bad_option", "snag with 3 seats")
    check_problem(d.request("POST", "/v1/leagues", {"name": "n", "game": "hearts",
                                                     "points": [3, 2, 1]},
                            token=a["token"]), 422, "invalid_field", "points for 3 of 4 places")
    # Unknown league: 404 on every endpoint.
    for method, path, body in (("GET", "/v1/leagues/999999", None),
                               ("GET", "/v1/leagues/999999/standings", None),
                               ("POST", "/v1/leagues/999999/members", {}),
                               ("POST", "/v1/leagues/999999/schedule", {}),
                               ("DELETE", "/v1/leagues/999999/members/%d" % a["id"], None)):
        check_problem(d.request(method, path, body, token=a["token"]), 404, "not_found",
                      "%s %s" % (method, path))
    # Members.
    check_problem(d.request("POST", L + "/members", {}), 401, "unauthorized", "join anonymously")
    req_ok(d.request("POST", L + "/members", {}, token=a["token"]), 201, "a joins")
    check_problem(d.request("POST", L + "/members", {}, token=a["token"]), 409, "already_member",
                  "joining twice")
    check_problem(d.request("POST", L + "/members", {"player": c["id"]}, token=b["token"]), 403,
                  "forbidden", "a non-organizer adds someone else")
    req_ok(d.request("POST", L + "/members", {"player": b["id"]}, token=a["token"]), 201,
           "the organizer adds b")
    check_problem(d.request("POST", L + "/members", {"player": b["id"]}, token=a["token"]), 409,
                  "already_member", "adding a member twice")
    check_problem(d.request("POST", L + "/members", {"player": 987654}, token=a["token"]), 422,
                  "unknown_player", "adding an unknown player")
    check_problem(d.request("POST", L + "/members", {"player": "b"}, token=a["token"]), 400,
                  "bad_request", "a player that is not an id")
    check_problem(d.request("POST", L + "/members", {}, token=OPERATOR), 400,
                  "missing_field",
                  "the operator adds without naming a player")
    check_problem(d.request("DELETE", L + "/members/%d" % a["id"]), 401, "unauthorized",
                  "leave anonymously")
    check_problem(d.request("DELETE", L + "/members/%d" % a["id"], token=b["token"]), 403,
                  "forbidden", "a non-organizer removes someone else")
    check_problem(d.request("DELETE", L + "/members/%d" % c["id"], token=a["token"]), 404,
                  None, "removing a non-member")
    # Schedule.
    check_problem(d.request("POST", L + "/schedule", {}), 401, "unauthorized",
                  "schedule anonymously")
    check_problem(d.request("POST", L + "/schedule", {}, token=b["token"]), 403, "forbidden",
                  "a non-organizer schedules")
    check_problem(d.request("POST", L + "/schedule", {"rounds": 0}, token=a["token"]), 422,
                  "invalid_field", "zero rounds")
    lone = new_league(d, c, "hearts")
    req_ok(d.request("POST", "/v1/leagues/%d/members" % lone["id"], {}, token=c["token"]), 201,
           "c joins their hearts league")
    check_problem(d.request("POST", "/v1/leagues/%d/schedule" % lone["id"], {}, token=c["token"]),
                  422, "not_enough_members", "a table of 4 from 1 member")
    ops = req_ok(d.request("POST", L + "/schedule", {}, token=OPERATOR), 201,
                 "the operator schedules")
    check(len(ops["matches"]) == 1, "two members: one match a round")
    # League matches.
    def create(body, token=a["token"]):
        return d.request("POST", "/v1/matches", body, token=token)
    check_problem(create({"game": "snag", "players": [a["id"], c["id"]], "league": lg["id"]}), 422,
                  "not_member", "a non-member in a league match")
    check_problem(create({"game": "horseshoe", "players": [a["id"], b["id"]], "league": lg["id"]}),
                  422, "league_rules", "the wrong game for the league")
    check_problem(create({"game": "snag", "players": [a["id"], b["id"]], "league": lg["id"],
                          "options": {"target": 50}}), 422, "league_rules",
                  "options for a league match")
    check_problem(create({"game": "snag", "players": [a["id"], b["id"]], "league": 999999}), 422,
                  "unknown_league", "an unknown league")
    check_problem(create({"game": "snag", "players": [b["id"], x["id"]], "league": lg["id"]}), 403,
                  "forbidden", "a member creates a league match without a seat")
    m = req_ok(create({"game": "snag", "players": [b["id"], a["id"]], "league": lg["id"]},
                      token=b["token"]), 201, "a member creates a league match")
    check(m["options"]["target"] == 5, "the league's options apply (%r)" % m["options"])
    # Methods.
    st, hdrs, _ = d.request("PUT", L + "/standings", {}, token=a["token"])
    check(st == 405 and "GET" in hdrs.get("allow", ""), "PUT standings -> 405 with Allow")


# ---- Scheduling balance -----------------------------------------------------------------

def test_schedule_balance():
    d = daemon()
    people = d.players(9, prefix="bal")
    lg = new_league(d, people[0], "hearts", {"seats": 4})
    join_all(d, lg, people)
    mids = schedule(d, lg, people[0])
    count = {p["id"]: 0 for p in people}
    pairs = set()
    for mid in mids:
        ids = [p["id"] for p in d.view(mid)["players"]]
        check(len(ids) == 4 and len(set(ids)) == 4, "a table of 4 distinct players")
        for i in ids:
            count[i] += 1
        pairs.update(frozenset(p) for p in itertools.combinations(ids, 2))
    rounds = -(-(9 - 1) // (4 - 1))
    check(len(mids) == rounds * 2, "default %d rounds of 2 tables (got %d matches)"
          % (rounds, len(mids)))
    spread = max(count.values()) - min(count.values())
    print("     hearts 9 members, seats 4: %d matches, plays per member %s, %d of 36 pairs met"
          % (len(mids), sorted(count.values()), len(pairs)))
    check(spread <= 1, "every member plays a similar number of matches (%r)" % count)
    # 6 tables of 4 hold 36 pair meetings, but the 3 members who play only twice can meet at
    # most 6 others each: at most (3 * 6 + 6 * 8) / 2 = 33 distinct pairs.
    check(len(pairs) >= 27, "most pairs met (%d of 36, at most 33 possible)" % len(pairs))
    # Two-seat: every pair once per round, first seats alternating.
    lg2 = new_league(d, people[0], "horseshoe")
    join_all(d, lg2, people[:5])
    mids = schedule(d, lg2, people[0], 2)
    met = {}
    first = {p["id"]: 0 for p in people[:5]}
    for mid in mids:
        ids = [p["id"] for p in d.view(mid)["players"]]
        met[frozenset(ids)] = met.get(frozenset(ids), 0) + 1
        first[ids[0]] += 1
    check(len(met) == 10 and all(v == 2 for v in met.values()),
          "two rounds: every pair of 5 meets twice")
    check(max(first.values()) - min(first.values()) <= 2, "first seats alternate (%r)" % first)


def test_my_leagues():
    """GET /v1/players/me/leagues: the leagues the caller organises, plays in or is invited
    to, newest first, with what they are in each; a league left is gone from it."""
    d = daemon()
    org = d.player("my-org-%d" % rng.randrange(1 << 20))
    bob = d.player("my-bob-%d" % rng.randrange(1 << 20), consent=False)
    cyd = d.player("my-cyd-%d" % rng.randrange(1 << 20))
    mine = lambda p: req_ok(d.request("GET", "/v1/players/me/leagues", token=p["token"]), 200,
                            "GET /v1/players/me/leagues")["leagues"]
    check(mine(bob) == [], "a new player has no league")
    a = new_league(d, org, "snag")
    b = new_league(d, org, "hearts")
    other = new_league(d, cyd, "speed")
    req_ok(d.request("POST", "/v1/leagues/%d/members" % b["id"], None, token=org["token"]), 201,
           "org joins b")
    req_ok(d.request("POST", "/v1/leagues/%d/members" % a["id"], {"player": bob["id"]},
                     token=org["token"]), 202, "org invites bob to a")
    req_ok(d.request("POST", "/v1/leagues/%d/members" % other["id"], None, token=bob["token"]),
           201, "bob joins cyd's league")
    got = [(x["id"], x["organizer"], x["member"], x["invited"]) for x in mine(org)]
    check(got == [(b["id"], org["id"], True, False), (a["id"], org["id"], False, False)],
          "org's: b (organised, played in), then a (organised): %r" % got)
    got = [(x["id"], x["member"], x["invited"], x["name"]) for x in mine(bob)]
    check(got == [(other["id"], True, False, other["name"]), (a["id"], False, True, a["name"])],
          "bob's: cyd's league (member), a (invited): %r" % got)
    req_ok(d.request("POST", "/v1/leagues/%d/members" % a["id"], None, token=bob["token"]), 201,
           "bob accepts")
    req_ok(d.request("DELETE", "/v1/leagues/%d/members/%d" % (other["id"], bob["id"]), None,
                     token=bob["token"]), 200, "bob leaves cyd's league")
    got = [(x["id"], x["member"], x["invited"], x["members"]) for x in mine(bob)]
    check(got == [(a["id"], True, False, 1)], "bob's: a, as a member: %r" % got)
    check_problem(d.request("GET", "/v1/players/me/leagues"), 401, "unauthorized",
                  "a player's leagues without a token")


def test_reads_while_the_writer_waits():
    """The answers that only read (the leagues, a league, its standings, a player's leagues,
    matches and deliveries) are read on the reading connection: while the daemon's writer
    waits for the database, each still answers at once. Read on the writing connection they
    waited behind the stuck write, and every commit waited behind each of them: a public
    page's standings, asked for by anyone, held the moves (docs/decisions.md "A read never
    waits for the writer"). The stuck write is a move, waiting in the committer, which
    holds SQLite's writing connection meanwhile (PostgreSQL's committer waits on a
    connection of its own: there the reads never waited, and the test checks that they
    still answer)."""
    with Daemon() as w:
        org, bob = w.player("org"), w.player("bob")
        lg = new_league(w, org, "snag")
        join_all(w, lg, [org, bob])
        schedule(w, lg, org, rounds=1)
        mid = w.create("snag", [org, bob])["id"]
        views = [w.view(mid, p["token"]) for p in (org, bob)]
        seat = views[0]["to_move"][0]
        mover = (org, bob)[seat]
        move = lambda: w.move(mid, mover["token"], views[seat]["legal"][0])  # noqa: E731
        reads = [("/v1/leagues", None, "leagues"),
                 ("/v1/leagues/%d" % lg["id"], None, "members"),
                 ("/v1/leagues/%d/standings" % lg["id"], None, "standings"),
                 ("/v1/players/me/leagues", org["token"], "leagues"),
                 ("/v1/players/me/matches", org["token"], "matches"),
                 ("/v1/players/me/deliveries", org["token"], "deliveries")]
        got = while_the_writer_waits(w, lambda: [
            (path, key) + answer_within(w, "GET", path, 5, token=token)
            for path, token, key in reads], write=move, table="matches")
        for path, key, st, text in got:
            check(st == 200 and key in json.loads(text),
                  "GET %s answers while the writer waits (%d %.200s)" % (path, st, text))
        check(len(json.loads(got[4][3])["matches"]) == 2, "org's two matches are listed")


if __name__ == "__main__":
    tests = [test_reads_while_the_writer_waits, test_my_leagues, test_errors,
             test_schedule_balance, test_shared_places_split_points, test_leagues_of_every_game,
             test_leaving_forfeits_and_stays_counted]
    try:
        run(tests)
    finally:
        if D is not None and D.proc.poll() is None:
            D.stop()
