# test_api.py - end to end: whole matches of all five games played through the REST API of
# the real cardpostd by random legal moves (harness.play_match), then each finished match's
# log fetched as a spectator and checked with `cardpost verify`.
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (STATS, Daemon, check, check_finished_log, play_match, run,  # noqa: E402
                     verify_log)

SEED = int(os.environ.get("E2E_SEED", random.randrange(1 << 32)))
print("E2E_SEED=%d" % SEED)
rng = random.Random(SEED)

# (game, seats, options): small targets so that matches end quickly.
MATCHES = [
    ("hearts", 3, {"target": 1}),
    ("hearts", 4, {"target": 1, "moon": "add"}),
    ("hearts", 4, {"target": 1, "moon": "subtract", "first_dealer": 2}),
    ("hearts", 4, {"target": 1, "moon": "choose"}),
    ("hearts", 5, {"target": 1, "moon": "choose"}),
    ("hearts", 6, {"target": 1}),
    ("horseshoe", 2, {"target": 2}),
    ("snag", 2, {"target": 3}),
    ("horse-thief", 3, {"target": 2}),
    ("horse-thief", 5, {"target": 1}),
    ("horse-thief", 7, {"target": 1}),
    ("horse-thief", 10, {"target": 1, "first_dealer": 9}),
    ("speed", 2, {"target": 2}),
]

d = Daemon()


def play_all():
    for i, (game, n, opts) in enumerate(MATCHES):
        seats = d.players(n, prefix=game[:2])
        created = d.create(game, seats, opts, token=seats[rng.randrange(n)]["token"])
        mid = created["id"]
        check(created["status"] == "active" and created["seq"] >= 1,
              "a new match is active at seq >= 1 (dealt)")
        check(created["options"]["seats"] == n, "seats follow the players")
        for k, v in opts.items():
            check(created["options"][k] == v, "option %s is kept" % k)
        check([p["id"] for p in created["players"]] == [p["id"] for p in seats],
              "seats follow the order of players")
        final = play_match(d, mid, seats, rng)
        check(final["status"] == "finished" and final["you"] is None and final["legal"] == [],
              "the spectator sees a finished match")
        check(final["to_move"] == [], "nobody is to move once finished")
        log = d.log(mid)
        check_finished_log(log, final)
        check(log["options"] == final["options"], "the log's options are the match's")
        check(log["players"] == [p["name"] for p in seats], "the log names the players")
        out = verify_log(log, d.tmp, "match%d" % mid)
        check(out == final["result"], "verify's result is the view's result")
        # Each seat's view of a finished match shows the same result.
        for s, p in enumerate(seats):
            v = d.view(mid, p["token"])
            check(v["result"] == final["result"] and v["legal"] == [],
                  "seat %d sees the result and no legal moves" % s)
        print("     %s seats=%d %r: %d events, totals %r" % (game, n, opts, len(log["events"]),
                                                           final["result"]["totals"]))
    print("     %r" % STATS)
    check(STATS["raced"] > 0 and STATS["with_seq"] > 0, "some moves raced, some carried seq")


with d:
    run([play_all])
