# test_errors.py - end to end: every refusal of the REST API with its status and
# problem+json body (401 403 404 405 409 413 400 422), each leaving the match unchanged, and
# Idempotency-Key (a retried POST answers the same and acts once; a reused key is refused).
import json
import os
import random
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (OPERATOR, Daemon, check, check_problem, play_match, race,  # noqa: E402
                     run, verify_log)

rng = random.Random(int(os.environ.get("E2E_SEED", "7")))
d = Daemon()
M = "/v1/matches/%d"


def fresh_hearts(options=None):
    """A four-seat Hearts match (hand 1 passes left); returns (view, seats)."""
    seats = d.players(4, prefix="h")
    v = d.create("hearts", seats, options or {"target": 1})
    return v, seats


def seq_of(mid):
    return d.view(mid)["seq"]


def test_401():
    v, seats = fresh_hearts()
    mid, seq = v["id"], v["seq"]
    body = {"game": "hearts", "players": [p["id"] for p in seats]}
    check_problem(d.request("POST", "/v1/matches", body), 401, "unauthorized",
                  "POST /v1/matches without a token")
    check_problem(d.move(mid, None, "pass 2C 3C 4C"), 401, "unauthorized",
                  "POST moves without a token")
    for path in (M % mid, M % mid + "/log", M % mid + "/events", M % 999999, "/v1/nothing"):
        check_problem(d.request("GET", path, token="cpt_" + "0" * 64), 401, "unauthorized",
                      "GET %s with a wrong token" % path)
    check_problem(d.request("GET", M % mid, headers={"Authorization": "Basic YWJjOmRlZg=="}),
                  401, "unauthorized", "GET with a non-Bearer Authorization")
    check_problem(d.request("GET", M % mid, headers={"Authorization": "Bearer "}),
                  401, "unauthorized", "GET with an empty bearer token")
    check_problem(d.move(mid, seats[0]["token"] + "x", "pass 2C 3C 4C"), 401, "unauthorized",
                  "POST moves with a wrong token")
    check_problem(d.request("POST", "/v1/matches", body, token="nope"), 401, "unauthorized",
                  "POST /v1/matches with a wrong token")
    check(seq_of(mid) == seq, "401s change nothing")


def test_403():
    v, seats = fresh_hearts()
    mid, seq = v["id"], v["seq"]
    outsider = d.player("outsider")
    hand = d.view(mid, seats[0]["token"])["legal"][0]
    check_problem(d.move(mid, outsider["token"], hand), 403, "forbidden",
                  "a player without a seat moves")
    check_problem(d.move(mid, outsider["token"], "resign"), 403, "forbidden",
                  "a player without a seat resigns")
    check(seq_of(mid) == seq, "403s change nothing")
    # A player creates a match without sitting in it: refused; nothing is created.
    check_problem(d.request("POST", "/v1/matches",
                            {"game": "hearts", "players": [p["id"] for p in seats]},
                            token=outsider["token"]), 403, "forbidden",
                  "a player creates a match they do not sit in")
    check_problem(d.request("GET", M % (mid + 1)), 404, "not_found",
                  "the refused creation made no match")
    # The operator may create any match (and is a spectator in it).
    st, _, ov = d.request("POST", "/v1/matches",
                          {"game": "snag", "players": [seats[0]["id"], seats[1]["id"]]},
                          token=OPERATOR)
    check(st == 201 and ov["id"] == mid + 1 and ov["you"] is None and ov["legal"] == [],
          "the operator creates a match in which it does not sit (got %d %r)" % (st, ov))
    check_problem(d.move(ov["id"], OPERATOR, "resign"), 403, "forbidden",
                  "the operator holds no seat, so cannot move")


def test_404():
    v, seats = fresh_hearts()
    t = seats[0]["token"]
    for path in (M % 999999, M % 999999 + "/log", M % 999999 + "/events"):
        check_problem(d.request("GET", path), 404, "not_found", "GET %s" % path)
    check_problem(d.move(999999, t, "resign"), 404, "not_found", "POST moves to no match")
    for path in ("/nothing-here", "/assets/../etc/passwd", "/leagues/abc", "/matches/0", "/v1", "/v1/nothing", "/v1/matches/0", "/v1/matches/abc",
                 M % v["id"] + "/nothing", M % v["id"] + "/moves/1", "/v1/players/1",
                 "/healthz/x"):
        check_problem(d.request("GET", path), 404, "not_found", "GET %s" % path)
    check_problem(d.request("POST", "/v1/nothing", {"x": 1}, token=t), 404, "not_found",
                  "POST to an unknown path")


def test_405():
    v, seats = fresh_hearts()
    mid, t = v["id"], seats[0]["token"]
    for method, path in (("DELETE", M % mid), ("PUT", M % mid), ("POST", M % mid),
                         ("GET", M % mid + "/moves"), ("POST", M % mid + "/log"),
                         ("POST", M % mid + "/events"), ("GET", "/v1/players"),
                         ("GET", "/v1/matches"), ("DELETE", "/v1/players"),
                         ("POST", "/healthz"), ("PATCH", "/v1/matches")):
        resp = d.request(method, path, {} if method != "GET" else None, token=t)
        check_problem(resp, 405, "method_not_allowed", "%s %s" % (method, path))
    check(seq_of(mid) == v["seq"], "405s change nothing")


def test_409():
    v, seats = fresh_hearts()
    mid, seq = v["id"], v["seq"]
    t0 = seats[0]["token"]
    mv = d.view(mid, t0)["legal"][0]
    for bad in (seq - 1, seq + 1, 0, 10 ** 12):
        check_problem(d.move(mid, t0, mv, seq=bad), 409, "stale_seq", "seq %d at %d" % (bad, seq))
    check(seq_of(mid) == seq, "stale seqs change nothing")
    st, _, after = d.move(mid, t0, mv, seq=seq)
    check(st == 201 and after["seq"] == seq + 1, "the right seq is accepted")
    # A second pass in the pass phase: the seat has nothing to do.
    other = d.view(mid, t0)["legal"]
    check(other == [] and 0 not in after["to_move"], "a seat that passed has no legal moves")
    check_problem(d.move(mid, t0, mv), 409, "not_your_turn", "a second (identical) pass")
    check_problem(d.move(mid, t0, "pass 2C 3C 4C"), 409, "not_your_turn", "a second pass")
    check(seq_of(mid) == seq + 1, "a refused second pass changes nothing")
    # Not your turn in the play phase.
    for s in (1, 2, 3):
        pmv = d.view(mid, seats[s]["token"])["legal"][0]
        st, _, _ = d.move(mid, seats[s]["token"], pmv)
        check(st == 201, "pass of seat %d" % s)
    pv = d.view(mid)
    (leader,) = pv["to_move"]
    idle = (leader + 1) % 4
    card = d.view(mid, seats[idle]["token"])["view"]["hands"][idle]["cards"][0]
    check_problem(d.move(mid, seats[idle]["token"], "play " + card), 409, "not_your_turn",
                  "seat %d plays out of turn" % idle)
    check(seq_of(mid) == pv["seq"], "an out-of-turn play changes nothing")
    # A match that is over: any move, resign included, is match_over.
    st, _, fin = d.move(mid, seats[idle]["token"], "resign")
    check(st == 201 and fin["status"] == "finished", "resign ends the match")
    check(fin["result"]["resigned"] == idle and fin["result"]["ranking"][-1] == [idle],
          "the resigned seat is last")
    for s in range(4):
        for mvt in ("resign", "play 2C"):
            check_problem(d.move(mid, seats[s]["token"], mvt), 409, "match_over",
                          "%s after the end" % mvt)
    check_problem(d.move(mid, seats[0]["token"], "resign", seq=fin["seq"]), 409, "match_over",
                  "a move at the right seq after the end")
    check(seq_of(mid) == fin["seq"], "moves after the end change nothing")
    verify_log(d.log(mid), d.tmp, "resigned%d" % mid)


def test_422_illegal():
    v, seats = fresh_hearts()
    mid = v["id"]
    t0 = seats[0]["token"]
    seq = v["seq"]
    for text, code in (("play ZZ", "bad_notation"), ("fly 2C", "bad_notation"), ("", None),
                       ("pass 2C 2C 3C", None), ("play 2C", None)):
        body = check_problem(d.move(mid, t0, text), 422, code, "move %r" % text)
        print("     %r -> %s: %s" % (text, body["code"], body["detail"]))
    hand = d.view(mid, t0)["view"]["hands"][0]["cards"]
    notmine = [c for c in ("2C", "3C", "4C", "5C", "6C", "7C", "8C", "9C")
               if c not in hand][:3]
    if len(notmine) == 3:
        check_problem(d.move(mid, t0, "pass " + " ".join(notmine)), 422, None,
                      "passing cards one does not hold")
    check(seq_of(mid) == seq, "illegal moves change nothing")
    # must_follow_suit: find a trick where the seat to move holds the led suit and something
    # else; play the something else.
    for s, p in enumerate(seats):
        st, _, _ = d.move(mid, p["token"], d.view(mid, p["token"])["legal"][0])
        check(st == 201, "pass")
    found = False
    while not found:
        sv = d.view(mid)
        check(sv["status"] == "active", "a must_follow_suit chance comes before the end")
        (s,) = sv["to_move"]
        mine = d.view(mid, seats[s]["token"])
        trick = mine["view"]["tricks"][-1] if mine["view"]["tricks"] else None
        cards = mine["view"]["hands"][s]["cards"]
        if trick and trick.get("winner") is None and len(trick["cards"]) < 4:
            led = trick["cards"][0][-1]
            off = [c for c in cards if c[-1] != led]
            if off and any(c[-1] == led for c in cards):
                before = mine["seq"]
                body = check_problem(d.move(mid, seats[s]["token"], "play " + off[0]), 422,
                                     "must_follow_suit", "playing %s on a %s lead" % (off[0], led))
                print("     must_follow_suit: %s" % body["detail"])
                check(seq_of(mid) == before, "must_follow_suit changes nothing")
                found = True
                continue
        st, _, _ = d.move(mid, seats[s]["token"], mine["legal"][0])
        check(st == 201, "a legal play")


def test_413():
    v, seats = fresh_hearts()
    mid, seq, t = v["id"], v["seq"], seats[0]["token"]
    mv = d.view(mid, t)["legal"][0]
    big = json.dumps({"move": mv, "pad": "x" * (64 * 1024)}).encode()
    check_problem(d.request("POST", M % mid + "/moves", raw=big, token=t), 413, "body_too_large",
                  "a move body over 64 KiB with Content-Length")

    def chunked(path, data):
        c = d.conn()
        try:
            pieces = (data[i:i + 8192] for i in range(0, len(data), 8192))
            c.request("POST", path, body=pieces, encode_chunked=True,
                      headers={"Authorization": "Bearer " + t,
                               "Content-Type": "application/json",
                               "Transfer-Encoding": "chunked"})
            r = c.getresponse()
            text = r.read().decode()
            return r.status, {k.lower(): x for k, x in r.getheaders()}, json.loads(text)
        finally:
            c.close()

    check_problem(chunked(M % mid + "/moves", big), 413, "body_too_large",
                  "a chunked move body over 64 KiB")
    body = json.dumps({"game": "hearts", "players": [p["id"] for p in seats],
                       "pad": "y" * (70 * 1024)}).encode()
    check_problem(chunked("/v1/matches", body), 413, "body_too_large",
                  "a chunked match body over 64 KiB")
    check_problem(d.request("POST", "/v1/players", raw=b'{"name":"' + b"z" * 70000 + b'"}'),
                  413, "body_too_large", "a player body over 64 KiB")
    check(seq_of(mid) == seq, "413s change nothing")
    check_problem(d.request("GET", M % (mid + 1)), 404, "not_found", "413 created no match")
    # Just under the limit is read (and then judged on its content).
    ok = json.dumps({"move": mv, "pad": "x" * (64 * 1024 - 100)}).encode()
    check(len(ok) <= 64 * 1024, "the padded body fits")
    st, _, after = chunked(M % mid + "/moves", ok)
    check(st == 201 and after["seq"] == seq + 1, "a chunked body under 64 KiB is served (%d)" % st)


def test_431():
    # A request's line and headers must fit in the 8 KiB libmicrohttpd has per connection
    # (docs/api.md); a bigger header is refused, one well under it is served.
    st, _, _ = d.request("GET", "/v1/leagues", headers={"X-Pad": "a" * 10000})
    check(st == 431, "a 10,000-byte header is refused with 431 (%d)" % st)
    st, _, body = d.request("GET", "/v1/leagues", headers={"X-Pad": "a" * 3000})
    check(st == 200 and "leagues" in body, "a 3,000-byte header is served (%d)" % st)


def raw_request(data, timeout=10):
    """Send `data` as it is on a fresh connection and read until the daemon closes it:
    (status, the whole answer); status 0 when it closed without answering. A daemon that
    leaves the connection open fails (the socket times out)."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=timeout)
    try:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    finally:
        s.close()
    return (int(out[9:12]) if out.startswith(b"HTTP/1.1 ") else 0), out


def test_414():
    # libmicrohttpd keeps a record of each query parameter in the connection's 8 KiB; when
    # they did not fit, its own 431 was lost and the connection hung for its 120 s timeout.
    # The URI callback counts them before they are parsed (docs/security.md "Limits").
    ok = "/v1/leagues?" + "&".join("p%d=%d" % (i, i) for i in range(32))
    st, _, body = d.request("GET", ok)
    check(st == 200 and "leagues" in body, "a query of 32 parameters is served (%d)" % st)
    for path, what in (("/v1/leagues?" + "&".join("p%d=%d" % (i, i) for i in range(33)),
                        "33 parameters"),
                       ("/v1/leagues?" + "&" * 150, "150 empty parameters"),
                       ("/v1/leagues?" + "&" * 4000, "4,000 empty parameters"),
                       ("/v1/leagues?a=" + "b" * 4090, "a 4,104-byte target")):
        st, out = raw_request(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: t\r\n"
                              b"Connection: close\r\n\r\n")
        check(st == 414, "%s: 414, not a hung connection (%d)" % (what, st))
        head, _, text = out.partition(b"\r\n\r\n")
        check(b"application/problem+json" in head and b"\r\nX-Request-Id: " in head,
              "%s: a problem+json with the request's id" % what)
        check(json.loads(text)["code"] == "uri_too_long", "%s: uri_too_long" % what)
    check_problem(d.request("GET", "/v1/leagues?" + "&" * 40), 414, "uri_too_long",
                  "as docs/openapi.json describes it")
    # What the HTTP fuzz target found: 150 '&' in a line of spaces and control bytes.
    line = (b"GET /\x01ST /v1T /GE" + b"&" * 10 + b"0?" + b"&" * 10 + b"0" + b"&" * 15 +
            b"\xdf" + b"&" * 5 + b" " + b"&" * 55 + b"*" + b"&" * 10 + b"/v1/admin/clock" +
            b"&" * 28 + b"T /\x01ST /v1T " + b"&" * 4 + b"0" + b"&" * 12 + b"/v1hdi\xe7")
    st, _ = raw_request(line + b" HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n"
                        b"Content-Length: 0\r\n\r\n")
    check(st == 414, "the fuzz target's request is answered 414 (%d)" % st)
    st, _, body = d.request("GET", "/v1/leagues")
    check(st == 200, "and the daemon serves on (%d)" % st)


def test_400():
    v, seats = fresh_hearts()
    mid, seq, t = v["id"], v["seq"], seats[0]["token"]
    path = M % mid + "/moves"
    for raw, code in ((b"{", "malformed_json"), (b"play 2C", "malformed_json"),
                      (b'{"move": "play 2C", "move": "play 3C"}', "malformed_json"),
                      (b"[1]", "bad_request"), (b'"play 2C"', "bad_request"),
                      (b"{}", "missing_field"), (b'{"seq": 1}', "missing_field"),
                      (b'{"move": 5}', "bad_request"), (b'{"move": "resign", "seq": "1"}',
                                                        "bad_request")):
        check_problem(d.request("POST", path, raw=raw, token=t), 400, code, "move body %r" % raw)
    check_problem(d.request("POST", path, token=t), 400, None, "a move without a body")
    check(seq_of(mid) == seq, "400s change nothing")
    ids = [p["id"] for p in seats]
    for raw, code in ((b"{", "malformed_json"), (b"[]", "bad_request"),
                      (json.dumps({"players": ids}).encode(), "missing_field"),
                      (json.dumps({"game": "hearts"}).encode(), "missing_field"),
                      (json.dumps({"game": 4, "players": ids}).encode(), "bad_request"),
                      (json.dumps({"game": "hearts", "players": "all"}).encode(), "bad_request"),
                      (json.dumps({"game": "hearts", "players": [str(i) for i in ids]}).encode(),
                       "bad_request"),
                      (json.dumps({"game": "hearts", "players": ids,
                                   "options": [1]}).encode(), "bad_request")):
        check_problem(d.request("POST", "/v1/matches", raw=raw, token=t), 400, code,
                      "match body %r" % raw)
    check_problem(d.request("POST", "/v1/players", raw=b"{", token=None), 400, "malformed_json",
                  "a player body that is not JSON")
    check_problem(d.request("POST", "/v1/players", {"email": "a@b"}), 400, "missing_field",
                  "a player without a name")
    check_problem(d.request("GET", M % (mid + 1)), 404, "not_found", "400s created no match")


def test_422_create():
    seats = d.players(4, prefix="c")
    ids = [p["id"] for p in seats]
    t = seats[0]["token"]
    before = d.create("hearts", seats)["id"]
    cases = [
        ({"game": "hearts", "players": ids, "options": {"target": 0}}, "bad_option"),
        ({"game": "hearts", "players": ids, "options": {"target": "100"}}, "bad_option"),
        ({"game": "hearts", "players": ids, "options": {"moon": "sideways"}}, "bad_option"),
        ({"game": "hearts", "players": ids, "options": {"bogus": 1}}, "bad_option"),
        ({"game": "hearts", "players": ids, "options": {"first_dealer": 4}}, "bad_option"),
        ({"game": "snag", "players": ids[:2], "options": {"moon": "add"}}, "bad_option"),
        ({"game": "hearts", "players": ids[:2]}, "bad_option"),
        ({"game": "speed", "players": ids[:3]}, "bad_option"),
        ({"game": "hearts", "players": ids, "options": {"seats": 5}}, "wrong_player_count"),
        ({"game": "horseshoe", "players": ids[:1], "options": {"seats": 2}},
         "wrong_player_count"),
        ({"game": "poker", "players": ids}, "unknown_game"),
        ({"game": "Hearts ", "players": ids}, "unknown_game"),
        ({"game": "hearts", "players": [ids[0], ids[1], ids[0], ids[2]]}, "duplicate_player"),
        ({"game": "hearts", "players": ids[:3] + [987654]}, "unknown_player"),
        ({"game": "hearts", "players": ids, "league": 1}, "unknown_league"),
    ]
    for body, code in cases:
        b = check_problem(d.request("POST", "/v1/matches", body, token=t), 422, code,
                          "create %r" % body)
        check(b["detail"], "a reason")
    after = d.create("hearts", seats)["id"]
    check(after == before + 1, "refused creations made no match (%d after %d)" % (after, before))
    check_problem(d.request("POST", "/v1/players", {"name": ""}), 422, "invalid_field",
                  "an empty name")
    check_problem(d.request("POST", "/v1/players", {"name": "x", "email": "nope"}), 422,
                  "invalid_email", "an email without @")
    check_problem(d.request("POST", "/v1/players", {"name": "x", "webhook_url": "ftp://a"}), 422,
                  "invalid_field", "a webhook that is not http(s)")


def log_moves(mid, token):
    return [e for e in d.log(mid, token)["events"] if "seat" in e]


def test_idempotency():
    v, seats = fresh_hearts()
    mid, seq, t0 = v["id"], v["seq"], seats[0]["token"]
    mv = d.view(mid, t0)["legal"][5]
    key = {"Idempotency-Key": "move-one"}
    a = d.move(mid, t0, mv, headers=key)
    check(a[0] == 201 and a[2]["seq"] == seq + 1, "the first keyed move plays")
    b = d.move(mid, t0, mv, headers=key)
    check((b[0], b[2]) == (a[0], a[2]), "a retry answers the same status and body")
    check(b[1].get("content-type") == "application/json", "a replayed answer is JSON")
    check(seq_of(mid) == seq + 1, "the retry did not play again")
    check(len([e for e in log_moves(mid, t0) if e["seat"] == 0]) == 1, "one pass in the log")
    check_problem(d.move(mid, t0, "pass 2C 3C 4C",
                         headers=key), 422, "idempotency_key_reused",
                  "the same key with another move")
    check_problem(d.move(mid, t0, mv, seq=seq, headers=key), 422, "idempotency_key_reused",
                  "the same key with a seq added")
    # Another player's key space is their own.
    t1 = seats[1]["token"]
    mv1 = d.view(mid, t1)["legal"][0]
    c = d.move(mid, t1, mv1, headers=key)
    check(c[0] == 201 and c[2]["you"] == 1 and c[2]["seq"] == seq + 2,
          "another player's same key is a new request")
    # Two retries racing from threads: one plays, both answer the same.
    t2 = seats[2]["token"]
    mv2 = d.view(mid, t2)["legal"][-1]
    out = [None] * 4
    k2 = {"Idempotency-Key": "race-%d" % mid}

    def post(i):
        out[i] = d.move(mid, t2, mv2, headers=k2)

    ths = [threading.Thread(target=post, args=(i,)) for i in range(4)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    check(all(o[0] == 201 and o[2] == out[0][2] for o in out),
          "racing retries all answer the first answer: %r" % [o[0] for o in out])
    check(seq_of(mid) == seq + 3, "racing retries played once")
    check(len([e for e in log_moves(mid, t2) if e["seat"] == 2]) == 1, "one pass of seat 2")
    # A refused request is not stored: the key still works for a good request.
    k3 = {"Idempotency-Key": "after-refusal"}
    t3 = seats[3]["token"]
    check_problem(d.move(mid, t3, "play ZZ", headers=k3), 422, "bad_notation", "keyed refusal")
    r = d.move(mid, t3, d.view(mid, t3)["legal"][0], headers=k3)
    check(r[0] == 201, "after a refusal the key serves a good request (%d %r)" % (r[0], r[2]))
    check_problem(d.move(mid, t3, "resign", headers={"Idempotency-Key": ""}), 400,
                  "bad_idempotency_key", "an empty Idempotency-Key")
    check_problem(d.move(mid, t3, "resign", headers={"Idempotency-Key": "k" * 256}), 400,
                  "bad_idempotency_key", "an Idempotency-Key over 255 characters")
    check(d.view(mid)["status"] == "active", "refused keys played nothing")
    # Idempotent match creation: one match.
    ck = {"Idempotency-Key": "create-%d" % mid}
    m1 = d.create("snag", seats[:2], {"target": 1}, headers=ck)
    m2 = d.create("snag", seats[:2], {"target": 1}, headers=ck)
    check(m1 == m2, "a retried creation answers the same body")
    check_problem(d.request("GET", M % (m1["id"] + 1)), 404, "not_found",
                  "the retried creation made no second match")
    check_problem(d.request("POST", "/v1/matches", {"game": "snag", "players": [
        seats[0]["id"], seats[2]["id"]]}, token=seats[0]["token"], headers=ck), 422,
        "idempotency_key_reused", "the same creation key with another body")
    nxt = d.create("snag", seats[:2], {"target": 1})
    check(nxt["id"] == m1["id"] + 1, "ids go on after the retries")
    # Retried creations racing: every one answers the one match. (Counted in the seated
    # player's list, not by ids: a racer's insert undone by its savepoint may use up an id,
    # as PostgreSQL's identity columns do.)
    body = {"game": "snag", "players": [seats[0]["id"], seats[1]["id"]]}

    def listed():
        st, _, page = d.request("GET", "/v1/players/me/matches", token=seats[1]["token"])
        check(st == 200, "GET /v1/players/me/matches")
        return [m["id"] for m in page["matches"]]

    for trial in range(5):
        rk = {"Idempotency-Key": "create-race-%d-%d" % (mid, trial)}
        before = listed()
        outs = race(d, [("POST", "/v1/matches", body, seats[0]["token"], rk)] * 8)
        check(all(o[0] == 201 and o[2] == outs[0][2] for o in outs),
              "racing keyed creations all answer the first: %r"
              % [(o[0], o[2].get("code")) for o in outs])
        check(outs[0][2]["id"] > nxt["id"] and listed() == [outs[0][2]["id"]] + before,
              "racing keyed creations made one match")
    # One key racing on several matches' first moves: one plays, the others are refused as
    # a reused key.
    for trial in range(5):
        ms = [d.create("horseshoe", seats[:2], {"target": 1}) for _ in range(6)]
        rk = {"Idempotency-Key": "move-race-%d-%d" % (mid, trial)}
        reqs = []
        for m in ms:
            (s,) = m["to_move"]
            mv = d.view(m["id"], seats[s]["token"])["legal"][0]
            reqs.append(("POST", M % m["id"] + "/moves", {"move": mv}, seats[s]["token"], rk))
        reqs = [r for r in reqs if r[3] == reqs[0][3]]  # one player's key space
        outs = race(d, reqs)
        check(sorted(o[0] for o in outs) == [201] + [422] * (len(outs) - 1),
              "one key on %d matches at once: one plays (%r)"
              % (len(outs), [(o[0], o[2].get("code")) for o in outs]))
        for o in outs:
            if o[0] == 422:
                check_problem(o, 422, "idempotency_key_reused", "the racing reuse of a key")
        check(sum(d.view(m["id"])["seq"] for m in ms if m["to_move"] == ms[0]["to_move"]) ==
              sum(m["seq"] for m in ms if m["to_move"] == ms[0]["to_move"]) + 1,
              "only one of the racing moves played")
    # The retried creation's answer was the state at creation; play it out and verify.
    fin = play_match(d, m1["id"], seats[:2], rng)
    verify_log(d.log(m1["id"]), d.tmp, "idem%d" % m1["id"])
    m3 = d.create("snag", seats[:2], {"target": 1}, headers=ck)
    check(m3 == m1, "a retry after play still answers the first answer")
    check(fin["status"] == "finished", "the keyed match plays out")


with d:
    run([test_401, test_403, test_404, test_405, test_409, test_422_illegal, test_413, test_431,
         test_414, test_400,
         test_422_create, test_idempotency])
