# test_peers.py - end to end, PostgreSQL only (run by tests/pg/run-with-pg.sh): a cardpostd
# alone on its database stops announcing its matches' changes (nobody would hear them:
# service/core/shared.c) and trusts its memory (tokens, matches), and when a second process
# comes it stops trusting it before the second serves anyone (a token rotated on the second
# is refused by the first at once, a move on the second is in the first's view) and
# announces again, so that the second's event streams see the first's moves within
# milliseconds. Alone, the first's moves go on as usual. Two processes share a token's rate
# limit: a client spread over both gets the rate about once, not twice.
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, Stream, check, run, wait_for  # noqa: E402

STOPS = "no other process heard: this one stops announcing its changes"
STARTS = "another process uses the database: this one announces its changes"


def move(d, mid, p, seq):
    v = d.view(mid, p["token"])
    st, _, body = d.move(mid, p["token"], v["legal"][0], seq=seq)
    check(st == 201, "a move -> 201 (got %d %r)" % (st, body))
    return body


def test_alone_then_joined():
    check(os.environ.get("CARDPOST_TEST_PG"), "CARDPOST_TEST_PG names the database")
    a = Daemon().start()
    ps = a.players(2, prefix="peer")
    st, _, v = a.request("POST", "/v1/matches", {"game": "snag", "players": [p["id"] for p in ps],
                                                 "options": {"target": 3}},
                         token=ps[0]["token"])
    check(st == 201, "create a match -> 201 (got %d %r)" % (st, v))
    mid = v["id"]
    wait_for(lambda: STOPS in a.stderr_text(), "the lone process stops announcing", 15)
    check(STARTS not in a.stderr_text(), "nobody was heard meanwhile")
    # Alone, it plays on as before.
    seq = v["seq"]
    for _ in range(3):
        v = a.view(mid)
        seq = move(a, mid, ps[v["to_move"][0]], v["seq"])["seq"]

    # Alone, the first trusts its memory (its tokens cached, its matches' copies): the
    # second must find it trusting nothing once it serves.
    for _ in range(3):
        st, _, _ = a.request("GET", "/v1/players/me", token=ps[0]["token"])
        check(st == 200, "the token works on the lone process")
    b = Daemon().start()
    check(STARTS in a.stderr_text(), "the first heard the second before the second served")
    st, _, fresh = b.request("POST", "/v1/players/me/token", token=ps[0]["token"])
    check(st == 200 and fresh["token"], "rotate the token on the second -> 200")
    st, _, _ = a.request("GET", "/v1/players/me", token=ps[0]["token"])
    check(st == 401, "the old token is refused by the first at once (got %d)" % st)
    ps[0]["token"] = fresh["token"]
    v = a.view(mid)
    body = move(b, mid, ps[v["to_move"][0]], v["seq"])
    v = a.view(mid)
    check(v["seq"] == body["seq"], "a move on the second is in the first's view at once "
          "(seq %d, not %d)" % (body["seq"], v["seq"]))
    s = Stream(b, mid, timeout=10)
    check(s.status == 200, "a stream on the second process opens")
    s.until_state()
    delays = []
    for _ in range(8):
        v = a.view(mid)
        if v["status"] == "finished":
            break
        t0 = time.monotonic()
        body = move(a, mid, ps[v["to_move"][0]], v["seq"])
        while True:
            m = s.next()
            check(m is not None, "the stream on the second process goes on")
            if m.get("event") == "state" and m["id"] >= body["seq"] - 1:
                break
        delays.append(time.monotonic() - t0)
    s.close()
    delays.sort()
    print("     the second process's stream after the first's move: median %.1f ms, max %.1f ms"
          % (1000 * delays[len(delays) // 2], 1000 * delays[-1]))
    # (unannounced, a move would reach it only at its catch-up, every 2 s)
    check(delays[len(delays) // 2] < 0.5, "the second process hears the first's moves soon")
    b.stop()
    a.stop()


def spend(daemons, token, n):
    """n requests with `token`, each to the next of `daemons` in turn, at once: how many
    were answered 200 (the rest 429)."""
    ok = 0
    for i in range(n):
        st, _, _ = daemons[i % len(daemons)].request("GET", "/v1/players/me", token=token)
        check(st in (200, 429), "GET /v1/players/me -> 200 or 429 (got %d)" % st)
        ok += st == 200
    return ok


def test_rates_shared():
    """Two processes share a token's rate: a client spread over both gets about the rate
    once, not twice; alone, a process gives the whole rate."""
    env = {"CARDPOST_RATE_PER_TOKEN": "10", "CARDPOST_RATE_BURST_PER_TOKEN": "10"}
    a = Daemon(env=env).start()
    wait_for(lambda: STOPS in a.stderr_text(), "the lone process knows it is alone", 15)
    p = a.players(2, prefix="rate")
    alone = spend([a], p[0]["token"], 20)
    check(9 <= alone <= 12, "alone, a burst of 10 (got %d of 20)" % alone)
    b = Daemon(db=a.db, env=env).start()
    check(STARTS in a.stderr_text(), "the first heard the second")
    both = spend([a, b], p[1]["token"], 30)
    check(both <= 14, "two processes give a token about 10 in all, not 20 (got %d of 30)"
          % both)
    check(both >= 8, "and not much less (got %d of 30)" % both)
    b.stop()
    a.stop()


if __name__ == "__main__":
    run([test_alone_then_joined, test_rates_shared])
