# test_streams.py - end to end: a move without a read before it (issue 18). The seat's own
# event stream of the real cardpostd, opened with the token in a header or with a stream
# ticket in the URL (POST /v1/matches/{id}/events/ticket): its state messages are the seat's
# GET view, legal moves included, so whole matches of every game are played from the pushed
# views alone; a ticket opens one stream once, for its match and player, expires (test
# clock), is bounded per player; a token in the URL is refused. And the fan-out: a commit is
# rendered once per visibility, and every stream of one visibility gets the same bytes
# (cardpost_event_stream_renders_total); a commit of open moves, once for all of them. And
# what a seat may see: over whole matches of every game, no state or event on a seat's own
# stream, nor any state on its player's stream, names a card its view and log then do not.
import json
import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (OPERATOR, Daemon, PlayerStream, Stream, cards_in, check,  # noqa: E402
                     check_problem, play_match, race, run, verify_log)

os.environ["CARDPOST_TEST_CLOCK"] = "1"
rng = random.Random(int(os.environ.get("E2E_SEED", "18")))
d = Daemon()


def ticket(mid, token, want=201):
    st, hdrs, body = d.request("POST", "/v1/matches/%d/events/ticket" % mid, token=token)
    check(st == want, "POST events/ticket -> %d (got %d %r)" % (want, st, body))
    if want == 201:
        check(body["events"] == "/v1/matches/%d/events?ticket=%s" % (mid, body["ticket"])
              and body["expires_in"] == 30, "the ticket's answer names its stream: %r" % body)
        return body["ticket"]
    return st, hdrs, body


def refused(mid, query, status, code, what):
    r = d.request("GET", "/v1/matches/%d/events?%s" % (mid, query))
    check_problem(r, status, code, what)


def test_ticket_opens_the_seats_stream_once():
    seats = d.players(4, prefix="tk")
    mid = d.create("hearts", seats)["id"]
    t = ticket(mid, seats[2]["token"])
    s = Stream(d, mid, ticket=t)
    check(s.status == 200, "a fresh ticket opens the stream (got %d)" % s.status)
    state = s.until_state()[-1]
    view = d.view(mid, seats[2]["token"])
    check(state["data"] == view and view["you"] == 2 and view["legal"],
          "the ticket's stream is seat 2's own view, legal moves included")
    s.close()
    again = Stream(d, mid, ticket=t)
    check(again.status == 401 and again.refusal["code"] == "bad_ticket",
          "a used ticket is refused: %d %r" % (again.status, again.refusal))
    # Bound to its match: another match's stream refuses it (and it is burnt).
    other = d.create("hearts", seats)["id"]
    t2 = ticket(other, seats[0]["token"])
    refused(mid, "ticket=" + t2, 401, "bad_ticket", "a ticket of another match")
    refused(other, "ticket=" + t2, 401, "bad_ticket", "a ticket tried on another match is burnt")
    refused(mid, "ticket=cps_" + "0" * 64, 401, "bad_ticket", "an unknown ticket")
    # Hostile tickets (percent-encoded CR/LF, NUL, invalid UTF-8, one too long, an empty
    # one): a clear refusal, the daemon unmoved.
    for bad in ("cps_%0D%0AX-Injected:%201", "cps_%00" + "0" * 60, "cps_%FF%FE%C3",
                "cps_" + "a" * 5000, ""):
        st, _, body = d.request("GET", "/v1/matches/%d/events?ticket=%s" % (mid, bad))
        check(st in (400, 401, 414) and isinstance(body, dict) and body.get("code"),
              "a hostile ticket %r is refused with a problem (%d %r)" % (bad[:24], st, body))
    check(d.request("GET", "/healthz")[0] == 200, "the daemon answers after them")
    # Bound to its player: a ticket of seat 1's player is seat 1's stream.
    s1 = Stream(d, other, ticket=ticket(other, seats[1]["token"]))
    check(s1.until_state()[-1]["data"]["you"] == 1, "the ticket's stream is its player's seat")
    s1.close()


def test_token_in_url_refused():
    seats = d.players(2, prefix="tu")
    mid = d.create("snag", seats)["id"]
    tok = seats[0]["token"]
    refused(mid, "token=" + tok, 400, "token_in_url", "a token parameter")
    refused(mid, "access_token=" + tok, 400, "token_in_url", "an access_token parameter")
    refused(mid, "ticket=" + tok, 400, "token_in_url", "a token given as the ticket")
    t = ticket(mid, tok)
    st, _, body = d.request("GET", "/v1/matches/%d/events?ticket=%s" % (mid, t),
                            headers={"Authorization": "Bearer " + tok})
    check_problem((st, _, body), 400, "bad_request", "a ticket and a header at once")


def test_who_gets_a_ticket():
    seats = d.players(3, prefix="tw")
    mid = d.create("snag", seats[:2])["id"]
    check_problem(d.request("POST", "/v1/matches/%d/events/ticket" % mid), 401, "unauthorized",
                  "no token")
    check_problem(d.request("POST", "/v1/matches/%d/events/ticket" % mid,
                            token=seats[2]["token"]), 403, "forbidden", "not a seat")
    check_problem(d.request("POST", "/v1/matches/%d/events/ticket" % mid, token=OPERATOR),
                  403, "forbidden", "the operator")
    check_problem(d.request("POST", "/v1/matches/999999/events/ticket",
                            token=seats[0]["token"]), 404, "not_found", "no such match")
    shy = d.player("shy-%d" % rng.randrange(1 << 30), consent=False)
    pending = d.create("snag", [seats[0], shy])["id"]
    check_problem(d.request("POST", "/v1/matches/%d/events/ticket" % pending,
                            token=seats[0]["token"]), 409, "match_pending", "a pending match")
    # At most 8 unused a player; a used one makes room.
    kept = [ticket(mid, seats[1]["token"]) for _ in range(8)]
    st, hdrs, body = ticket(mid, seats[1]["token"], want=429)
    check(body["code"] == "too_many_tickets" and int(hdrs["retry-after"]) >= 1,
          "a ninth unused ticket -> 429 too_many_tickets with Retry-After")
    Stream(d, mid, ticket=kept[0]).close()
    ticket(mid, seats[1]["token"])


def test_ticket_expires():
    seats = d.players(2, prefix="te")
    mid = d.create("speed", seats)["id"]
    t = ticket(mid, seats[0]["token"])
    d.advance(31)
    refused(mid, "ticket=" + t, 401, "bad_ticket", "a ticket 31 s old")
    t = ticket(mid, seats[0]["token"])
    d.advance(20)
    s = Stream(d, mid, ticket=t)
    check(s.status == 200, "a ticket 20 s old opens its stream")
    s.close()


def play_from_streams(game, options=None):
    """Play a whole match of `game` with one thread per seat reading that seat's own stream
    (even seats by ticket, odd by header) and posting a random legal move of each pushed
    state it may act on, with the state's seq: no GET. Checks that each state is the seat's
    (`you`, legal moves only when it is to move); returns the finished view. (What a stream
    may name is test_no_other_seats_card's, where each seq's views can be read exactly.)"""
    n = {"hearts": 4, "horse-thief": 5}.get(game, 2)
    seats = d.players(n, prefix=game[:2])
    mid = d.create(game, seats, options)["id"]
    errors = []
    posted = [0]

    def seat_main(s):
        try:
            tok = seats[s]["token"]
            st = Stream(d, mid, token=tok) if s % 2 else Stream(d, mid, ticket=ticket(mid, tok))
            check(st.status == 200, "seat %d's stream opens" % s)
            acted = -1
            while True:
                m = st.next()
                if m is None:
                    return  # the match is over: the stream ended
                if m["event"] != "state":
                    continue
                v = m["data"]
                check(v["you"] == s, "seat %d's state is its own (you %r)" % (s, v["you"]))
                check(bool(v["legal"]) == (s in v["to_move"] and v["status"] == "active"),
                      "seat %d has legal moves iff it is to move" % s)
                if v["legal"] and v["seq"] != acted:
                    acted = v["seq"]
                    mv = rng.choice(v["legal"])
                    code, _, body = d.move(mid, tok, mv, seq=v["seq"])
                    check(code in (201, 409), "seat %d's %s -> 201 or 409 (got %d %r)"
                          % (s, mv, code, body))
                    posted[0] += code == 201
        except Exception as e:  # noqa: BLE001 (reported by the main thread)
            errors.append(e)

    threads = [threading.Thread(target=seat_main, args=(s,)) for s in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    check(not any(t.is_alive() for t in threads), "%s: every seat's stream ended" % game)
    check(not errors, "%s: %r" % (game, errors[:1]))
    view = d.view(mid)
    check(view["status"] == "finished" and posted[0] > 0,
          "%s: played to its end from the streams alone (%d moves)" % (game, posted[0]))
    verify_log(d.log(mid), d.tmp, "streams-" + game)
    return view


def test_whole_matches_from_streams():
    for game, options in [("hearts", {"target": 1}), ("horseshoe", {"target": 2}), ("snag", {"target": 3}),
                          ("horse-thief", {"target": 1}), ("speed", {"target": 2})]:
        play_from_streams(game, options)


def no_other_seats_card(game, options):
    """A whole match of `game` played one move at a time, every seat's own stream open and
    read throughout (even seats by ticket, odd by header), and every seat's player's stream
    (GET /v1/players/me/events: states alone) until its last state. After each move, while nothing
    else moves, each seat's GET view and its log as served to it say what the seat may see
    at that seq (turn-log.md section 6); then every message its stream carried, each state
    and each event, may name only those cards of the view it is or that follows it (for the
    seqs a commit passes through, the commit's last). The control: each seat could not see
    some card of the finished match's public log (its deals included) at the start and at
    nine seqs in ten at least (at the last trick it may hold the last card); an allowed set
    of every card would pass anything."""
    n = {"hearts": 4, "horse-thief": 5}.get(game, 2)
    seats = d.players(n, prefix="ns" + game[:2])
    mid = d.create(game, seats, options)["id"]
    streams = [Stream(d, mid, token=p["token"]) if s % 2
               else Stream(d, mid, ticket=ticket(mid, p["token"])) for s, p in enumerate(seats)]
    check(all(st.status == 200 for st in streams), "%s: every seat's stream opens" % game)
    players = [PlayerStream(d, token=p["token"]) for p in seats]
    check(all(st.status == 200 for st in players), "%s: every player's stream opens" % game)
    msgs = [[] for _ in range(n)]
    pmsgs = [[] for _ in range(n)]

    def read(s):
        while (m := streams[s].next()) is not None:
            msgs[s].append(m)

    def read_player(s):  # (a player's stream goes on: until its match's last state)
        while (m := players[s].next()) is not None:
            pmsgs[s].append(m)
            if m["data"]["status"] != "active":
                return

    readers = [threading.Thread(target=read, args=(s,)) for s in range(n)]
    readers += [threading.Thread(target=read_player, args=(s,)) for s in range(n)]
    for t in readers:
        t.start()
    allowed = {}  # (seat, seq) -> the cards the seat may see then
    seqs = []

    def record():
        views = [d.view(mid, p["token"]) for p in seats]
        q = views[0]["seq"]
        for s, p in enumerate(seats):
            check(views[s]["seq"] == q, "%s: every seat's view is of seq %d" % (game, q))
            allowed[(s, q)] = cards_in(views[s]) | cards_in(d.log(mid, p["token"]))
        seqs.append(q)
        return views

    views = record()
    while views[0]["status"] == "active":
        s = rng.choice(views[0]["to_move"])
        code, _, body = d.move(mid, seats[s]["token"], rng.choice(views[s]["legal"]),
                               seq=views[s]["seq"])
        check(code == 201, "%s: seat %d's move -> 201 (got %d %r)" % (game, s, code, body))
        views = record()
        check(len(seqs) < 3000, "%s: the match ends" % game)
    for t in readers:
        t.join(30)
    check(not any(t.is_alive() for t in readers), "%s: every seat's stream ended" % game)
    dealt = cards_in(d.log(mid))  # (public now, deals and all)
    check(len(dealt) >= 24, "%s: the finished log names the cards dealt (%d)" % (game, len(dealt)))
    for s in range(n):
        check(msgs[s] and msgs[s][-1]["event"] == "state"
              and msgs[s][-1]["data"] == views[s],
              "%s: seat %d's stream ends with its finished view" % (game, s))
        check(pmsgs[s] and pmsgs[s][-1]["data"] == views[s]
              and all(m["event"] == "state" and m["data"]["id"] == mid for m in pmsgs[s]),
              "%s: player %d's stream has states of its match alone, the last its finished "
              "view" % (game, s))
        for m in msgs[s] + pmsgs[s]:
            # (a state's seq is its view's; an event's is its place in the log, and the view
            # just after it is of the seq after that)
            q = m["data"]["seq"] + (m["event"] == "event")
            at = min((r for r in seqs if r >= q), default=None)
            check(at is not None, "%s: seat %d's message of seq %d is of a seq played"
                  % (game, s, q))
            extra = cards_in(m["data"]) - allowed[(s, at)]
            check(not extra, "%s: seat %d's stream names %r at seq %d, which the seat may not "
                  "see then: %r" % (game, s, sorted(extra), q, m))
        hid = [q for q in seqs[:-1] if dealt - allowed[(s, q)]]
        check(seqs[0] in hid and len(hid) >= 0.9 * (len(seqs) - 1),
              "%s: control: seat %d could not see some card at the start and at most seqs "
              "(at %d of %d)" % (game, s, len(hid), len(seqs) - 1))
    for st in streams + players:
        st.close()
    verify_log(d.log(mid), d.tmp, "no-other-card-" + game)
    return sum(len(x) for x in msgs + pmsgs)


def test_no_other_seats_card():
    for game, options in [("hearts", {"target": 1}), ("horseshoe", {"target": 2}),
                          ("snag", {"target": 3}), ("horse-thief", {"target": 1}),
                          ("speed", {"target": 2})]:
        got = no_other_seats_card(game, options)
        print("    %s: %d stream messages checked" % (game, got))


def test_movers_state_is_its_answer():
    seats = d.players(4, prefix="mv")
    mid = d.create("hearts", seats)["id"]
    own = Stream(d, mid, token=seats[2]["token"])
    spec = Stream(d, mid)
    own.until_state()
    spec.until_state()
    mv = d.view(mid, seats[2]["token"])["legal"][0]
    st, _, answer = d.move(mid, seats[2]["token"], mv)
    check(st == 201, "seat 2 passes")
    msgs = own.until_state()
    check(msgs[0]["data"] == {"seat": 2, "move": mv, "seq": 1}, "the mover's stream shows its pass")
    check(msgs[-1]["data"] == answer == d.view(mid, seats[2]["token"]),
          "the mover's pushed state is its move's answer and its GET view")
    check(spec.until_state()[-1]["data"] == d.view(mid), "the spectators' state is theirs")
    # A ticket's stream catches up with Last-Event-ID as a header's does.
    again = Stream(d, mid, ticket=ticket(mid, seats[2]["token"]), last_id=0)
    caught = again.until_state()
    check([m["data"] for m in caught] == [msgs[0]["data"], answer],
          "after Last-Event-ID 0: the pass, then the state (%r)" % caught)
    again.close()
    own.close()
    spec.close()


def metric(name):
    st, _, text = d.request("GET", "/metrics", token=OPERATOR)
    check(st == 200, "GET /metrics -> 200")
    for line in text.splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    raise AssertionError("no %s in /metrics" % name)


def raw_until_state(s):
    """The raw bytes of a stream's messages up to the end of the next state message."""
    out = b""
    state = False
    while True:
        line = s.resp.readline()
        check(line, "the stream goes on until a state message")
        out += line
        if line.startswith(b"event: state"):
            state = True
        if state and line == b"\n":
            return out


def test_fanout_once():
    seats = d.players(4, prefix="fo")
    mid = d.create("hearts", seats)["id"]
    specs = [Stream(d, mid) for _ in range(12)]
    own = [Stream(d, mid, token=seats[0]["token"]) for _ in range(4)]
    for s in specs + own:
        s.until_state()
    renders, reads = (metric("cardpost_event_stream_renders_total"),
                      metric("cardpost_event_stream_log_reads_total"))
    mv = d.view(mid, seats[1]["token"])["legal"][0]
    st, _, _ = d.move(mid, seats[1]["token"], mv)
    check(st == 201, "seat 1 passes")
    got_specs = [raw_until_state(s) for s in specs]
    got_own = [raw_until_state(s) for s in own]
    check(len(set(got_specs)) == 1 and len(set(got_own)) == 1,
          "every stream of one visibility got the same bytes")
    check(got_specs[0] != got_own[0] and b'"secret":true' in got_specs[0],
          "the spectators' bytes are not seat 0's, and show the pass as secret")
    check(metric("cardpost_event_stream_renders_total") - renders == 2,
          "the commit was rendered twice: once for the 12 spectators, once for seat 0's 4 streams")
    check(metric("cardpost_event_stream_log_reads_total") == reads,
          "no stream read the log back")
    for s in specs + own:
        s.close()


def test_open_events_rendered_once():
    """A commit whose every move is open (a Hearts play) has the same event messages for
    every visibility: rendered once, and copied for the others
    (cardpost_event_stream_events_copied_total); a secret one (a pass) is rendered for each.
    Every stream, whatever its visibility, gets the same bytes for the play's event."""
    seats = d.players(4, prefix="oe")
    mid = d.create("hearts", seats)["id"]
    path = "/v1/matches/%d/moves" % mid
    copied = metric("cardpost_event_stream_events_copied_total")
    for s in range(4):
        st, _, _ = d.move(mid, seats[s]["token"], d.view(mid, seats[s]["token"])["legal"][0])
        check(st == 201, "seat %d passes" % s)
    check(metric("cardpost_event_stream_events_copied_total") == copied,
          "no stream open: nothing rendered, nothing copied")
    own = [Stream(d, mid, token=seats[s]["token"]) for s in range(4)]
    spec = Stream(d, mid)
    for st in own + [spec]:
        st.until_state()
    copied = metric("cardpost_event_stream_events_copied_total")
    view = d.view(mid)
    (s,) = view["to_move"]
    mv = d.view(mid, seats[s]["token"])["legal"][0]
    st, _, _ = d.move(mid, seats[s]["token"], mv)
    check(st == 201, "seat %d plays %s" % (s, mv))
    got = [raw_until_state(x) for x in own + [spec]]
    events = [g[:g.index(b"event: state")] for g in got]
    check(len(set(events)) == 1 and (b'"move":"%s"' % mv.encode()) in events[0],
          "every visibility got the same bytes for the play's event: %r" % events)
    check(metric("cardpost_event_stream_events_copied_total") - copied == 4,
          "the play's events rendered once, copied for the 4 other visibilities")
    for x in own + [spec]:
        x.close()


def test_spectators_woken_with_the_commits_since():
    """Spectators are woken 25 ms after the first commit they have not seen (http.c
    STREAM_LATER_MS): after moves that come quicker than that, a spectator gets every
    event, once and in order, and one state for several commits, the newest, from the feed
    (which keeps the spectators' events of more commits than 25 ms hold)."""
    seats = d.players(4, prefix="sw")
    mid = d.create("hearts", seats)["id"]
    spec = Stream(d, mid)
    spec.until_state()
    reads = metric("cardpost_event_stream_log_reads_total")
    moves = 0
    for _ in range(3):  # the four passes at once, then plays back to back
        passes = [d.view(mid, seats[i]["token"])["legal"][0] for i in range(4)]
        path = "/v1/matches/%d/moves" % mid
        for st, _, _ in race(d, [("POST", path, {"move": passes[i]}, seats[i]["token"], None)
                                 for i in range(4)]):
            check(st == 201, "a pass")
        moves += 4
        for _ in range(8):
            (s,) = d.view(mid)["to_move"]
            st, _, _ = d.move(mid, seats[s]["token"], d.view(mid, seats[s]["token"])["legal"][0])
            check(st == 201, "a play")
            moves += 1
        if d.view(mid)["to_move"] != [0, 1, 2, 3]:
            break  # (the next hand is not a passing one: enough)
    last = d.view(mid)["seq"] - 1
    msgs = []
    while not msgs or msgs[-1]["event"] != "state" or msgs[-1]["id"] < last:
        msgs += spec.until_state()
    events = [m["id"] for m in msgs if m["event"] == "event"]
    states = [m for m in msgs if m["event"] == "state"]
    check(events == [e for e in range(events[0], last + 1)] and events[0] <= 1,
          "the spectator got every event once, in order (%r)" % events)
    check(states[-1]["data"] == d.view(mid), "its last state is the spectators' view")
    check(len(states) < moves,
          "one state for several commits: %d states for %d moves" % (len(states), moves))
    check(metric("cardpost_event_stream_log_reads_total") == reads,
          "the spectator caught up from the feed, not from the log")
    spec.close()


def test_slow_reader_gets_every_byte():
    """A seat's stream whose client stops reading: the daemon writes each commit's messages
    straight to the socket (http.c stream_push) while it takes them, and leaves what it does
    not take to libmicrohttpd, which sends it when the client reads again. Read late, the
    stream is whole: every event the quick reader of the same seat got, once and in order,
    each message well formed, the last state the finished view."""
    seats = d.players(4, prefix="sl")
    # (To 150: six deals at least, as a deal hands out 26 points. What seat 0's stream carries
    # then, about 30 KB a deal, is more than the socket's buffers hold, 64 KiB of SO_SNDBUF
    # that the kernel doubles; a match of two deals, about 80 KB, could fit in them.)
    mid = d.create("hearts", seats, {"target": 150})["id"]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)  # (before connect: a small window)
    sock.connect(("127.0.0.1", d.port))
    sock.sendall(("GET /v1/matches/%d/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s"
                  "\r\nAccept: text/event-stream\r\n\r\n" % (mid, seats[0]["token"])).encode())
    got = []
    played = threading.Event()

    def read_later():
        played.wait(120)  # (the whole match is sent meanwhile: the buffers fill)
        chunks = []
        while True:
            b = sock.recv(65536)
            if not b:
                break
            chunks.append(b)
        got.append(b"".join(chunks))

    fast = Stream(d, mid, token=seats[0]["token"], timeout=60)
    fast_msgs = []

    def read_fast():
        while True:
            m = fast.next()
            if m is None:
                return
            fast_msgs.append(m)

    readers = [threading.Thread(target=read_later), threading.Thread(target=read_fast)]
    for t in readers:
        t.start()
    try:
        play_match(d, mid, seats, rng, race=0, use_seq=0)
    finally:
        played.set()
    for t in readers:
        t.join(60)
    check(not any(t.is_alive() for t in readers), "the streams end with the match")
    raw = got[0]
    head, _, body = raw.partition(b"\r\n\r\n")
    check(head.startswith(b"HTTP/1.1 200") and b"chunked" not in head.lower(),
          "a stream's body is its messages up to the close: %r" % head[:200])
    msgs = []
    for text in body.decode().split("\n\n"):
        if not text or text.startswith(":"):
            continue
        fields = dict(line.split(": ", 1) for line in text.split("\n"))
        check(set(fields) == {"id", "event", "data"}, "a whole message: %r" % text[:200])
        msgs.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
    # (Read after the match ended, what the slow reader had not yet been sent comes from a
    # log that is now public: the deals are events, the passes show their cards.)
    events = [i for i, ev, data in msgs if ev == "event" and data["seq"] == i]
    fast_events = [m["id"] for m in fast_msgs if m["event"] == "event"]
    extra = {i for i, ev, data in msgs if ev == "event" and "deal" in data}
    # (Six deals at least: over 6 * 52 plays.)
    check(len(events) > 6 * 52 and events == sorted(set(events))
          and sorted(set(fast_events) | extra) == events,
          "the slow reader got every event the quick one did, once and in order (%d and %d)"
          % (len(events), len(fast_events)))
    states, fast_states = ([m for m in msgs if m[1] == "state"],
                           [m for m in fast_msgs if m["event"] == "state"])
    check(len(states) < len(fast_states),
          "the slow reader fell behind (its socket full), and caught up with fewer states, "
          "the newest (%d, the quick one %d)" % (len(states), len(fast_states)))
    check(msgs[-1][1] == "state" and msgs[-1][2] == fast_msgs[-1]["data"]
          == d.view(mid, seats[0]["token"]), "the last message is seat 0's finished view")
    fast.close()
    sock.close()


def test_seats_not_to_move_woken_later():
    """After a commit the streams of the seats to move are written at once; the others' with
    the spectators', 25 ms after the first commit they have not seen (http.c streams_wake),
    with the events of every commit since and the newest state only. Each play here is made
    on the state its seat's stream pushed (as a bot plays), so a seat made to move gets that
    commit's state; over plays quicker than 25 ms, every seat gets every event once and in
    order, and the seats not to move get fewer states than there were commits."""
    seats = d.players(4, prefix="nw")
    mid = d.create("hearts", seats)["id"]
    streams = [Stream(d, mid, token=seats[s]["token"]) for s in range(4)]
    for st in streams:
        st.until_state()
    passes = [d.view(mid, seats[i]["token"])["legal"][0] for i in range(4)]
    path = "/v1/matches/%d/moves" % mid
    for st, _, _ in race(d, [("POST", path, {"move": passes[i]}, seats[i]["token"], None)
                             for i in range(4)]):
        check(st == 201, "a pass")
    view = d.view(mid)
    first = view["seq"]
    got = [[] for _ in range(4)]
    cond = threading.Condition()

    def read(s):
        while True:
            try:
                m = streams[s].next()
            except OSError:  # (closed under it at the test's end: the reader is done)
                return
            if m is None:
                return
            with cond:
                got[s].append(m)
                cond.notify_all()

    readers = [threading.Thread(target=read, args=(s,), daemon=True) for s in range(4)]
    for t in readers:
        t.start()

    def pushed(s, seq):
        """Seat s's state at `seq`, as its stream pushed it."""
        with cond:
            check(cond.wait_for(lambda: [m for m in got[s] if m["event"] == "state"
                                         and m["id"] == seq], 10),
                  "seat %d, made to move at %d, is pushed that commit's state" % (s, seq))
            return [m for m in got[s] if m["event"] == "state" and m["id"] == seq][0]["data"]

    (s,) = view["to_move"]
    seq = view["seq"] - 1
    for _ in range(8):
        st, _, body = d.move(mid, seats[s]["token"], pushed(s, seq)["legal"][0], seq=seq + 1)
        check(st == 201, "a play on the pushed state")
        (s,) = body["to_move"]
        seq = body["seq"] - 1
    last = seq
    with cond:
        check(cond.wait_for(lambda: all(got[k] and got[k][-1]["event"] == "state"
                                        and got[k][-1]["id"] == last for k in range(4)), 10),
              "every seat is sent the last state")
        msgs = [[m for m in got[k] if m["id"] >= first] for k in range(4)]
    for k in range(4):
        events = [m["id"] for m in msgs[k] if m["event"] == "event"]
        check(events == list(range(first, last + 1)),
              "seat %d got every event once, in order (%r)" % (k, events))
    states = sum(1 for k in range(4) for m in msgs[k] if m["event"] == "state")
    check(states < 4 * (last - first + 1),
          "the seats not to move got one state for several commits: %d states for %d commits"
          " on 4 streams" % (states, last - first + 1))
    for st in streams:
        st.close()

if __name__ == "__main__":
    with d:
        run([test_ticket_opens_the_seats_stream_once, test_token_in_url_refused,
             test_who_gets_a_ticket, test_ticket_expires, test_fanout_once,
             test_movers_state_is_its_answer, test_open_events_rendered_once,
             test_spectators_woken_with_the_commits_since,
             test_seats_not_to_move_woken_later, test_whole_matches_from_streams,
             test_no_other_seats_card,
             test_slow_reader_gets_every_byte])
