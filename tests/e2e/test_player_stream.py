# test_player_stream.py - end to end: a player's stream of all their seats (issue 18). GET
# /v1/players/me/events of the real cardpostd, opened with the player's token in a header or
# with a player stream ticket in the URL (POST /v1/players/me/events/ticket), carries only
# `state` messages, each exactly the player's seat's GET view of its match: whole matches of
# every game, several at once, are played by one reader per player from the pushed states
# alone; on connect it sends one state for each active match of the player (ascending ids)
# and nothing of the others; a match that starts later appears with its first state, one
# that ends with its last, then nothing more about it; a reconnection sends every state
# again (Last-Event-ID ignored); the tickets are single use, bound to the player's stream,
# expire (test clock); a token in the URL, the operator and anonymous callers are refused;
# and the stream counts as one for the limits per address and in all.
import os
import random
import re
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (OPERATOR, Daemon, PlayerStream, Stream, check, check_problem,  # noqa: E402
                     run, verify_log, wait_for)

os.environ["CARDPOST_TEST_CLOCK"] = "1"
rng = random.Random(int(os.environ.get("E2E_SEED", "19")))
d = Daemon()
EVENTS = "/v1/players/me/events"
GAMES = [("hearts", {"target": 1}), ("horseshoe", {"target": 2}), ("snag", {"target": 3}),
         ("horse-thief", {"target": 1}), ("speed", {"target": 2})]
SEATS = {"hearts": 4, "horse-thief": 5}


def ticket(token, want=201, dm=None):
    """POST /v1/players/me/events/ticket with `token`: the ticket (checking the answer's
    shape), or (status, headers, body) when `want` is not 201."""
    st, hdrs, body = (dm or d).request("POST", EVENTS + "/ticket", token=token)
    check(st == want, "POST %s/ticket -> %d (got %d %r)" % (EVENTS, want, st, body))
    if want != 201:
        return st, hdrs, body
    check(set(body) == {"ticket", "expires_in", "events"}
          and re.fullmatch(r"cps_[0-9a-f]{64}", body["ticket"])
          and body["expires_in"] == 30
          and body["events"] == EVENTS + "?ticket=" + body["ticket"],
          "the ticket's answer names the player's stream: %r" % body)
    return body["ticket"]


def match_ticket(mid, token):
    st, _, body = d.request("POST", "/v1/matches/%d/events/ticket" % mid, token=token)
    check(st == 201, "POST /v1/matches/%d/events/ticket -> 201 (got %d %r)" % (mid, st, body))
    return body["ticket"]


def refused(query, status, code, what, token=None):
    """GET /v1/players/me/events?query: a problem with this status and code."""
    r = d.request("GET", EVENTS + ("?" + query if query else ""), token=token)
    check_problem(r, status, code, what)


def opened(p, by_ticket, **kw):
    """Player p's stream, by a fresh ticket or by the header; checked open."""
    s = (PlayerStream(d, ticket=ticket(p["token"]), **kw) if by_ticket
         else PlayerStream(d, token=p["token"], **kw))
    check(s.status == 200 and s.content_type.startswith("text/event-stream"),
          "%s's stream opens (by %s): %d %r" % (p["name"], "ticket" if by_ticket else "header",
                                               s.status, s.refusal))
    return s


def next_state(s, what):
    """The stream's next message: a state (the only kind the player's stream sends: the check
    against docs/openapi.json refuses an `event` message), whose id is its match's latest
    event index (seq - 1)."""
    m = s.next()
    check(m is not None, "%s: the stream goes on" % what)
    check(m["event"] == "state", "%s: a state message (got %r)" % (what, m["event"]))
    v = m["data"]
    check(m["id"] == v["seq"] - 1, "%s: the state's id %d is match %d's latest event index "
          "(seq %d)" % (what, m["id"], v["id"], v["seq"]))
    return v


def expect_states(s, p, mids, what):
    """The next len(mids) messages of p's stream: the states of these matches, in this order,
    each what GET /v1/matches/{id} answers p's token now (nobody moves meanwhile)."""
    got = [next_state(s, what) for _ in mids]
    check([v["id"] for v in got] == list(mids),
          "%s: the states of matches %r in that order (got %r)" % (what, list(mids),
                                                                  [v["id"] for v in got]))
    for v in got:
        check(v == d.view(v["id"], p["token"]),
              "%s: match %d's state is %s's GET view" % (what, v["id"], p["name"]))
    return got


def marker(players, game="horse-thief"):
    """A match the operator creates with `players` (active at once): the next message on
    each of their streams must be its first state, so whatever came before it is all the
    stream had to say."""
    return d.create(game, players, token=OPERATOR)["id"]


def resign_match(players):
    """A snag match of these two players, finished at once by a resignation."""
    mid = d.create("snag", players)["id"]
    st, _, body = d.move(mid, players[0]["token"], "resign")
    check(st == 201 and body["status"] == "finished", "a resignation ends match %d" % mid)
    return mid


def to_move_once(mid, players_by_seat):
    """One legal move of the (first) seat to move in an active match, by GET: not a stream
    test's move, a change made from outside. Returns the new seq."""
    (s, *_) = d.view(mid)["to_move"]
    tok = players_by_seat[s]["token"]
    st, _, body = d.move(mid, tok, d.view(mid, tok)["legal"][0])
    check(st == 201, "a move in match %d (got %d %r)" % (mid, st, body))
    return body["seq"]


# ---- Whole matches from the players' streams --------------------------------------------------

def test_whole_matches_from_player_streams():
    """Five players; a match of each game, all at once, with the players in different seat
    orders (so each player holds seats in several matches, in different seats). One thread
    per player reads only its player stream (even players by ticket, odd by header) and posts
    a random legal move of each pushed state it may act on, with the state's seq: no GET to
    decide. Each state is the player's seat's (`you`, legal moves iff it is to move); for the
    turn-based games a state that says it is the seat's turn alone is exactly its GET view
    then (nothing can change before it moves: the pushed view is what the seat may see, no
    more, no less); each match's states come in increasing seq; every match ends, its final
    state arrives, then nothing more about it. Two matches start before the streams open
    (their first states come on connect), three after (they appear when they start)."""
    players = d.players(5, prefix="wm")
    perm = rng.sample(range(5), 5)
    orders = {"hearts": rng.sample(range(5), 4), "horse-thief": rng.sample(range(5), 5),
              "horseshoe": [perm[0], perm[1]], "snag": [perm[2], perm[3]],
              "speed": [perm[4], perm[0]]}
    matches = {}            # match id -> (game, the player index of each seat)
    cond = threading.Condition()
    errors = []
    posted = [0]
    compared = [0]
    finals = [dict() for _ in range(5)]   # player -> {match id: its final state}
    streams = [None] * 5
    ready = threading.Barrier(6, timeout=30)

    def create(game, options):
        mid = d.create(game, [players[i] for i in orders[game]], options, token=OPERATOR)["id"]
        with cond:
            matches[mid] = (game, orders[game])
            cond.notify_all()

    for game, options in GAMES[:2]:
        create(game, options)

    def mine(i):
        return sum(1 for g in orders.values() if i in g)

    def player_main(i):
        try:
            p = players[i]
            tok = p["token"]
            st = opened(p, by_ticket=i % 2 == 0, timeout=60)
            streams[i] = st
            ready.wait()
            last = {}     # match id -> the seq of its last state
            acted = {}    # match id -> the seq of the state last acted on
            while len(finals[i]) < mine(i):
                v = next_state(st, "player %d" % i)
                mid = v["id"]
                with cond:  # (a match's first state may come before its creator's answer)
                    cond.wait_for(lambda: mid in matches, 10)
                    game, order = matches.get(mid, (None, []))
                check(i in order, "player %d gets a state of match %d only if it holds a seat "
                      "there (seats %r)" % (i, mid, order))
                seat = order.index(i)
                check(v["you"] == seat, "player %d's state of match %d is its seat %d's "
                      "(you %r)" % (i, mid, seat, v["you"]))
                check(mid not in finals[i], "player %d: nothing more about match %d after its "
                      "final state (got seq %d)" % (i, mid, v["seq"]))
                check(v["seq"] > last.get(mid, 0), "player %d: match %d's states come in "
                      "increasing seq (%d after %d)" % (i, mid, v["seq"], last.get(mid, 0)))
                last[mid] = v["seq"]
                check(v["status"] in ("active", "finished"), "a state is of an active or a "
                      "finished match (%r)" % v["status"])
                check(bool(v["legal"]) == (seat in v["to_move"] and v["status"] == "active"),
                      "player %d, match %d seat %d: legal moves iff to move (to_move %r, "
                      "status %s, legal %r)" % (i, mid, seat, v["to_move"], v["status"],
                                                v["legal"][:3]))
                if v["status"] == "finished":
                    finals[i][mid] = v
                    continue
                if game != "speed" and v["to_move"] == [seat]:
                    now = d.view(mid, tok)
                    check(now == v, "player %d, match %d (%s) seat %d to move: the pushed "
                          "state is its GET view\n%r\n%r" % (i, mid, game, seat, v, now))
                    compared[0] += 1
                if v["legal"] and acted.get(mid) != v["seq"]:
                    acted[mid] = v["seq"]
                    mv = rng.choice(v["legal"])
                    code, _, body = d.move(mid, tok, mv, seq=v["seq"])
                    # (Only where several seats act at once may another's move come first.)
                    alone = game != "speed" and v["to_move"] == [seat]
                    check(code == 201 or (code == 409 and not alone),
                          "player %d, match %d seat %d: %s at seq %d -> 201%s (got %d %r)"
                          % (i, mid, seat, mv, v["seq"], "" if alone else " or 409", code, body))
                    with cond:
                        posted[0] += code == 201
        except Exception as e:  # noqa: BLE001 (reported by the main thread)
            errors.append((i, e))
            try:
                ready.abort()
            except threading.BrokenBarrierError:
                pass

    threads = [threading.Thread(target=player_main, args=(i,)) for i in range(5)]
    for t in threads:
        t.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        pass
    if not errors:
        for game, options in GAMES[2:]:
            create(game, options)
    for t in threads:
        t.join(120)
    check(not any(t.is_alive() for t in threads), "every player saw all its matches end")
    check(not errors, "a player's thread: %r" % (errors[:1],))
    check(len(matches) == 5, "the five matches were created")
    for mid, (game, order) in sorted(matches.items()):
        view = d.view(mid)
        check(view["status"] == "finished", "%s match %d played to its end from the streams"
              % (game, mid))
        for i in order:
            check(finals[i][mid] == d.view(mid, players[i]["token"]),
                  "player %d's last state of match %d is its finished view" % (i, mid))
        verify_log(d.log(mid), d.tmp, "player-stream-" + game)
    check(posted[0] > 0 and compared[0] > 0, "moves were posted (%d), and states compared with "
          "GET (%d)" % (posted[0], compared[0]))
    # Nothing more about a finished match: the next message on each stream is the first state
    # of a match that starts now.
    last = marker(players)
    for i in range(5):
        expect_states(streams[i], players[i], [last], "player %d after the matches ended" % i)
        streams[i].close()


# ---- What a stream sends on connect, and matches that start later -----------------------------

def test_connect_and_later_matches():
    a, b, c, e = d.players(4, prefix="oc")
    shy = d.player("ocshy-%d" % rng.randrange(1 << 30), consent=False)
    shy2 = d.player("ocshy2-%d" % rng.randrange(1 << 30), consent=False)
    # Interleaved ids: the matches `a` sits in, and not, in every status.
    hearts = d.create("hearts", [b, c, a, e])["id"]                      # a: seat 2
    pending = d.create("snag", [a, shy])["id"]
    snag = d.create("snag", [a, b])["id"]                                # a: seat 0
    cancelled = d.create("speed", [a, shy2])["id"]
    other = d.create("horseshoe", [b, c])["id"]                          # without a
    finished = resign_match([e, a])
    thief = d.create("horse-thief", [c, e, b, a], {"target": 1}, token=OPERATOR)["id"]  # a: 3
    check(d.view(pending)["status"] == "pending", "the match with shy is pending")
    st, _, body = d.request("POST", "/v1/matches/%d/decline" % cancelled, token=shy2["token"])
    check(st == 200 and body["status"] == "cancelled", "shy2 declines: cancelled (%d %r)"
          % (st, body))
    check(d.view(finished)["status"] == "finished", "the resigned match is finished")

    sa = opened(a, by_ticket=False)
    got = expect_states(sa, a, [hearts, snag, thief], "a on connect")
    check([v["you"] for v in got] == [2, 0, 3], "a's seats in them (%r)" % [v["you"] for v in got])
    sb = opened(b, by_ticket=True)
    expect_states(sb, b, [hearts, snag, other, thief], "b on connect")
    # A commit to a match without a: b is sent its state, a nothing.
    seq = to_move_once(other, [b, c])
    v = next_state(sb, "b after a move in the horseshoe match")
    check(v["id"] == other and v["seq"] == seq and v == d.view(other, b["token"]),
          "b gets the horseshoe match's new state (%r)" % {k: v[k] for k in ("id", "seq")})
    # A match the operator creates: active at once, it appears with its first state; the
    # first message a's stream sends since the connect (not the other's, nor the pending,
    # cancelled or finished ones').
    later = marker([e, a], "speed")
    (v,) = expect_states(sa, a, [later], "a after the operator's new match")
    check(v["you"] == 1 and v["status"] == "active", "a's seat 1 of the new match")
    # A pending match appears when its last seat accepts.
    st, _, body = d.request("POST", "/v1/matches/%d/accept" % pending, token=shy["token"])
    check(st == 200 and body["status"] == "active", "shy accepts: the match starts (%d %r)"
          % (st, body))
    (v,) = expect_states(sa, a, [pending], "a after shy accepted")
    check(v["you"] == 0 and v["seq"] >= 1, "the started match's first state, a's seat 0")
    # shy's own stream: the one match it holds a seat in.
    ss = opened(shy, by_ticket=True)
    expect_states(ss, shy, [pending], "shy on connect")
    # And nothing more: the next message on a's stream is another new match's.
    expect_states(sa, a, [marker([a, c], "snag")], "a at the end")
    for s in (sa, sb, ss):
        s.close()


def test_reconnect_sends_every_state_again():
    a, b, c, e = d.players(4, prefix="rc")
    m1 = d.create("snag", [a, b])["id"]
    m2 = d.create("horseshoe", [b, a])["id"]
    m3 = d.create("hearts", [c, e, b, a])["id"]
    s = opened(a, by_ticket=False)
    expect_states(s, a, [m1, m2, m3], "a on connect")
    seq = to_move_once(m1, [a, b])
    v = next_state(s, "a after a move in m1")
    check(v["id"] == m1 and v["seq"] == seq, "a is sent m1's new state")
    s.close()
    to_move_once(m2, [b, a])  # (while a's stream is closed)
    active = [m1, m2, m3]
    for by_ticket, last in ((True, seq - 1), (False, 999999), (True, 0)):
        again = opened(a, by_ticket=by_ticket, last_id=last)
        expect_states(again, a, active, "a reconnecting (Last-Event-ID %d)" % last)
        active.append(marker([b, a], "snag"))
        expect_states(again, a, active[-1:], "a reconnected, then a new match")
        again.close()


# ---- Tickets and refusals ----------------------------------------------------------------------

def test_ticket_opens_the_players_stream_once():
    a, b = d.players(2, prefix="tk")
    mid = d.create("snag", [a, b])["id"]
    t = ticket(b["token"])
    s = PlayerStream(d, ticket=t)
    check(s.status == 200, "a fresh ticket opens the stream (got %d %r)" % (s.status, s.refusal))
    (v,) = expect_states(s, b, [mid], "b's stream by ticket")
    check(v["you"] == 1, "the ticket's stream is its player's: b's seat 1")
    s.close()
    again = PlayerStream(d, ticket=t)
    check(again.status == 401 and again.refusal["code"] == "bad_ticket",
          "a used ticket is refused: %d %r" % (again.status, again.refusal))
    refused("ticket=cps_" + "0" * 64, 401, "bad_ticket", "an unknown ticket")
    # A match's ticket is not a player's, nor the other way round (and either is burnt by
    # the refusal: a ticket is used up by the first request that shows it).
    mt = match_ticket(mid, a["token"])
    refused("ticket=" + mt, 401, "bad_ticket", "a match stream's ticket on the player's stream")
    st, _, body = d.request("GET", "/v1/matches/%d/events?ticket=%s" % (mid, mt))
    check_problem((st, _, body), 401, "bad_ticket",
                  "the match's ticket, refused by the player's stream, is burnt")
    pt = ticket(a["token"])
    st, _, body = d.request("GET", "/v1/matches/%d/events?ticket=%s" % (mid, pt))
    check_problem((st, _, body), 401, "bad_ticket", "a player's ticket on a match's stream")
    refused("ticket=" + pt, 401, "bad_ticket",
            "the player's ticket, refused by a match's stream, is burnt")
    # Hostile tickets: a clear refusal, the daemon unmoved.
    for bad in ("cps_%0D%0AX-Injected:%201", "cps_%00" + "0" * 60, "cps_%FF%FE%C3",
                "cps_" + "a" * 5000, ""):
        st, _, body = d.request("GET", EVENTS + "?ticket=" + bad)
        check(st in (400, 401, 414) and isinstance(body, dict) and body.get("code"),
              "a hostile ticket %r is refused with a problem (%d %r)" % (bad[:24], st, body))
    check(d.request("GET", "/healthz")[0] == 200, "the daemon answers after them")


def test_ticket_expires():
    (a,) = d.players(1, prefix="te")
    t = ticket(a["token"])
    d.advance(31)
    refused("ticket=" + t, 401, "bad_ticket", "a ticket 31 s old")
    t = ticket(a["token"])
    d.advance(20)
    s = PlayerStream(d, ticket=t)
    check(s.status == 200, "a ticket 20 s old opens its stream (got %d %r)" % (s.status, s.refusal))
    s.close()


def test_who_gets_a_ticket_and_a_stream():
    (a,) = d.players(1, prefix="tw")
    tok = a["token"]
    check_problem(d.request("POST", EVENTS + "/ticket"), 401, "unauthorized", "a ticket: no token")
    check_problem(d.request("POST", EVENTS + "/ticket", token="cpt_" + "0" * 64), 401,
                  "unauthorized", "a ticket: an unknown token")
    check_problem(d.request("POST", EVENTS + "/ticket", token=OPERATOR), 403, "forbidden",
                  "a ticket: the operator")
    refused("", 401, "unauthorized", "the stream: anonymous")
    refused("", 401, "unauthorized", "the stream: an unknown token", token="cpt_" + "0" * 64)
    refused("", 403, "forbidden", "the stream: the operator", token=OPERATOR)
    # A token is never taken from the URL.
    refused("token=" + tok, 400, "token_in_url", "a token parameter")
    refused("access_token=" + tok, 400, "token_in_url", "an access_token parameter")
    refused("ticket=" + tok, 400, "token_in_url", "a token given as the ticket")
    s = PlayerStream(d, ticket=ticket(tok), token=tok)
    check(s.status == 400 and s.refusal["code"] == "bad_request",
          "a ticket and a header at once -> 400 bad_request (got %d %r)" % (s.status, s.refusal))
    s.close()
    # At most 8 unused a player; a used one makes room.
    (q,) = d.players(1, prefix="tq")
    tok = q["token"]
    kept = [ticket(tok) for _ in range(8)]
    st, hdrs, body = ticket(tok, want=429)
    check(body["code"] == "too_many_tickets" and int(hdrs["retry-after"]) >= 1,
          "a ninth unused ticket -> 429 too_many_tickets with Retry-After (%r %r)" % (hdrs, body))
    PlayerStream(d, ticket=kept[0]).close()
    ticket(tok)


# ---- Limits ----------------------------------------------------------------------------------

def test_one_stream_for_the_limits():
    """A player's stream of three matches counts as one event stream for
    max_streams_per_address and max_streams (a daemon of its own with them lowered)."""
    env = {"CARDPOST_MAX_STREAMS_PER_ADDRESS": "3", "CARDPOST_MAX_STREAMS": "4"}
    with Daemon(env=env) as dl:
        a, b, c, e = dl.players(4, prefix="lm")
        mids = [dl.create("snag", [a, b])["id"], dl.create("speed", [c, a])["id"],
                dl.create("hearts", [a, b, c, e])["id"]]
        mine = PlayerStream(dl, token=a["token"], source="127.0.0.1")
        check(mine.status == 200, "a's stream of three matches opens")
        check(sorted(next_state(mine, "a on connect")["id"] for _ in mids) == mids,
              "a's stream carries its three matches")
        more = [Stream(dl, mids[0]), Stream(dl, mids[1])]
        check(all(s.status == 200 for s in more),
              "two match streams more from the address: three in all, the player's one")
        s = PlayerStream(dl, token=b["token"], source="127.0.0.1")
        check_problem((s.status, s.headers, s.refusal), 429, "too_many_streams",
                      "a fourth stream from the address (a player's)")
        check(s.headers.get("retry-after", "").isdigit(), "with Retry-After")
        s.close()
        s = Stream(dl, mids[2])
        check(s.status == 429 and s.refusal["code"] == "too_many_streams",
              "a fourth stream from the address (a match's): %d %r" % (s.status, s.refusal))
        s.close()
        other = PlayerStream(dl, token=b["token"], source="127.0.0.2")
        check(other.status == 200, "b's stream from another address: four in all")
        s = PlayerStream(dl, token=c["token"], source="127.0.0.3")
        check_problem((s.status, s.headers, s.refusal), 503, "unavailable", "a fifth stream in all")
        s.close()
        mine.close()

        def reopened():
            s = PlayerStream(dl, token=a["token"], source="127.0.0.1")
            if s.status == 200:
                return s
            s.close()
            return None
        again = wait_for(reopened, "a's stream closed makes room for another", timeout=10,
                         step=0.2)
        for s in more + [other, again]:
            s.close()


def test_token_change_ends_streams():
    """A rotated or revoked token ends the streams it opened, the player's stream and a seat's
    (by header or by a ticket drawn with it), whatever they carry; a spectator's stream and
    another player's stay open."""
    a, b = d.players(2, prefix="tc")
    mid = d.create("snag", [a, b])["id"]
    for change in ("rotate", "revoke"):
        mine = [opened(a, False), opened(a, True), Stream(d, mid, token=a["token"]),
                Stream(d, mid, ticket=match_ticket(mid, a["token"]))]
        others = [opened(b, False), Stream(d, mid)]
        for s in mine + others:
            check(s.status == 200, "the streams open")
            s.until_state()
        if change == "rotate":
            st, _, r = d.request("POST", "/v1/players/me/token", token=a["token"])
            check(st == 200, "a's token rotated")
        else:
            st, _, _ = d.request("DELETE", "/v1/players/%d/token" % a["id"], token=OPERATOR)
            check(st == 204, "a's token revoked")
            st, _, r = d.request("POST", "/v1/players/%d/token" % a["id"], token=OPERATOR)
            check(st == 200, "a new token issued")
        for s in mine:
            while True:  # (what was on its way before the change may come first)
                m = s.next()
                if m is None:
                    break
        a["token"] = r["token"]
        # Nothing cut the others: a move still reaches them.
        seat = d.view(mid)["to_move"][0]
        tok = b["token"] if seat == 1 else a["token"]
        st, _, body = d.move(mid, tok, d.view(mid, tok)["legal"][0])
        check(st == 201, "a move after the %s" % change)
        check(next_state(others[0], "b's stream after a's %s" % change)["seq"] >= body["seq"],
              "b's stream goes on after a's token's %s" % change)
        while True:
            m = others[1].next()
            check(m is not None, "the spectator's stream goes on after a's token's %s" % change)
            if m["event"] == "state" and m["id"] >= body["seq"] - 1:
                break
        for s in mine + others:
            s.close()


if __name__ == "__main__":
    with d:
        run([test_ticket_opens_the_players_stream_once, test_ticket_expires,
             test_who_gets_a_ticket_and_a_stream, test_connect_and_later_matches,
             test_reconnect_sends_every_state_again, test_whole_matches_from_player_streams,
             test_one_stream_for_the_limits, test_token_change_ends_streams])
