# test_events.py - end to end: the server-sent event stream GET /v1/matches/{id}/events of
# the real cardpostd: live delivery of other clients' moves followed by the state message,
# resuming with Last-Event-ID, a spectator's stream showing no hidden card, and the stream
# ending once the match is over (then unredacted, deals included), and one keep-alive
# comment after 15 s of silence.
import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, Stream, cards_in, check, check_problem, run, verify_log  # noqa: E402

rng = random.Random(int(os.environ.get("E2E_SEED", "11")))
d = Daemon()


def check_state(msg, view, what):
    check(msg.get("event") == "state", "%s: a state message" % what)
    check(msg["id"] == view["seq"] - 1, "%s: the state's id is the latest seq (%d, view seq %d)"
          % (what, msg["id"], view["seq"]))
    check(msg["data"] == view, "%s: the state is the caller's GET view" % what)


def test_live():
    seats = d.players(4, prefix="ev")
    v = d.create("hearts", seats, {"target": 1})
    mid = v["id"]
    s0 = Stream(d, mid, seats[0]["token"])
    check(s0.status == 200 and s0.content_type.startswith("text/event-stream"),
          "the stream is text/event-stream")
    first = s0.until_state()
    check(len(first) == 1, "a fresh match streams no event (its deal is not sent): %r" % first)
    check_state(first[0], d.view(mid, seats[0]["token"]), "the first state")
    spec = Stream(d, mid)
    check_state(spec.until_state()[0], d.view(mid), "the spectator's first state")

    # Seat 1 passes from another client; seat 0's stream sees a secret move, live.
    p1 = d.view(mid, seats[1]["token"])["legal"][0]
    got = {}

    def reader():
        got["msgs"] = s0.until_state()

    th = threading.Thread(target=reader)
    th.start()
    st, _, after = d.move(mid, seats[1]["token"], p1)
    check(st == 201, "seat 1 passes")
    th.join(10)
    check(not th.is_alive(), "the move arrived on seat 0's stream within 10 s")
    ev, state = got["msgs"]
    check(ev == {"id": 1, "event": "event", "data": {"seat": 1, "move": None, "secret": True,
                                                     "seq": 1}},
          "another seat's pass shows as a secret move: %r" % ev)
    check_state(state, d.view(mid, seats[0]["token"]), "the state after seat 1's pass")
    sp = spec.until_state()
    check(sp[0]["data"] == {"seat": 1, "move": None, "secret": True, "seq": 1},
          "the spectator sees the pass as secret")

    # Seat 1's own stream from the start shows its own pass.
    s1 = Stream(d, mid, seats[1]["token"])
    own = s1.until_state()
    check(own[0]["data"] == {"seat": 1, "move": p1, "seq": 1}, "a seat sees its own pass")
    s1.close()

    # The others pass; then play on for a while, checking each message against the log.
    for s in (0, 2, 3):
        legal = d.view(mid, seats[s]["token"])["legal"]
        st, _, _ = d.move(mid, seats[s]["token"], rng.choice(legal))
        check(st == 201, "pass of seat %d" % s)
    seen = [m for m in s0.until_state()]
    while seen[-1]["id"] < d.view(mid)["seq"] - 1:
        seen += s0.until_state()
    evs = [m for m in seen if m["event"] == "event"]
    check([m["id"] for m in evs] == [2, 3, 4], "the passes come once each, in order: %r"
          % [m["id"] for m in evs])
    mine = d.view(mid, seats[0]["token"])
    passes = {p["seat"]: p for p in mine["view"]["passes"]}
    check(passes[3]["cards"] and passes[0]["cards"], "after the exchange seat 0 sees its "
          "pass and the one it received")
    check_state(seen[-1], mine, "the state after the exchange")
    spec_msgs = []
    while not spec_msgs or spec_msgs[-1]["id"] < mine["seq"] - 1:
        spec_msgs += spec.until_state()
    sv = d.view(mid)
    for m in spec_msgs:
        if m["event"] == "event":
            check(m["data"]["move"] in (None, "pass") and "cards" not in m["data"]
                  or m["data"].get("cards") == 3,
                  "a spectator never sees passed cards: %r" % m["data"])
            check(not cards_in(m["data"]), "no card in the spectator's pass events")
    check_state(spec_msgs[-1], sv, "the spectator's state")
    check(not any("cards" in h for h in sv["view"]["hands"]), "the spectator sees no hand")
    spec_log = d.log(mid)
    check(all("deal" not in e for e in spec_log["events"]) and "seed" not in spec_log,
          "the spectator's log holds no deal and no seed")

    for _ in range(12):  # three tricks, each play on every stream
        cur = d.view(mid)
        (s,) = cur["to_move"]
        mv = rng.choice(d.view(mid, seats[s]["token"])["legal"])
        st, _, _ = d.move(mid, seats[s]["token"], mv)
        check(st == 201, "a play")
        for stream, tok, who in ((s0, seats[0]["token"], "seat 0"), (spec, None, "spectator")):
            msgs = stream.until_state()
            check([m["event"] for m in msgs] == ["event", "state"],
                  "%s gets one event and the state per play" % who)
            check(msgs[0]["data"] == {"seat": s, "move": mv, "seq": cur["seq"]},
                  "%s sees the play %s live" % (who, mv))
            check_state(msgs[1], d.view(mid, tok), "%s's state after a play" % who)
            if stream is spec:
                shown = cards_in(msgs[1]["data"]["view"]) | cards_in(msgs[0]["data"])
                played = set()
                for t in msgs[1]["data"]["view"]["tricks"]:
                    played |= set(t["cards"])
                check(shown <= played, "the spectator's stream shows only played cards: %r"
                      % sorted(shown - played))
    s0.close()
    spec.close()
    return mid, seats


def test_resume_and_end():
    mid, seats = test_live()
    log0 = d.log(mid, seats[0]["token"])
    latest = d.view(mid)["seq"] - 1
    for n in (-1, 0, 1, 4, 7, latest - 1):
        s = Stream(d, mid, seats[0]["token"], last_id=n)
        msgs = s.until_state()
        s.close()
        evs = [m for m in msgs if m["event"] == "event"]
        want = [e for e in log0["events"] if e["seq"] > n]
        check([m["data"] for m in evs] == want,
              "Last-Event-ID %d: exactly the events after it (%r)" % (n, [m["id"] for m in evs]))
        check([m["id"] for m in evs] == [e["seq"] for e in want], "ids are the seqs")
        check_state(msgs[-1], d.view(mid, seats[0]["token"]), "the state after resuming")
    s = Stream(d, mid, seats[2]["token"], last_id=latest)
    msgs = s.until_state()
    check(len(msgs) == 1, "Last-Event-ID at the latest seq: just the state")
    # The match ends (a resignation from another client): the stream sends what remains,
    # now unredacted, and ends.
    st, _, fin = d.move(mid, seats[1]["token"], "resign")
    check(st == 201 and fin["status"] == "finished", "resign ends the match")
    rest = []
    while True:
        m = s.next()
        if m is None:
            break
        rest.append(m)
    s.close()
    check(rest and rest[-1]["event"] == "state", "the stream ends with the final state")
    check(rest[-1]["data"] == d.view(mid, seats[2]["token"]) and
          rest[-1]["data"]["status"] == "finished", "the final state is the finished view")
    check([m["data"] for m in rest if m["event"] == "event"] ==
          [{"seat": 1, "move": "resign", "seq": latest + 1}], "the resignation was streamed")
    # A stream opened after the end sends the whole log (deals included) and the state, and ends.
    whole = d.log(mid)
    verify_log(whole, d.tmp, "events%d" % mid)
    s = Stream(d, mid)
    msgs = []
    while True:
        m = s.next()
        if m is None:
            break
        msgs.append(m)
    s.close()
    evs = [m["data"] for m in msgs if m["event"] == "event"]
    check(len(evs) == len(whole["events"]) and "deal" in evs[0],
          "after the end the stream holds every event, deals included")
    for i, (a, b) in enumerate(zip(evs, whole["events"])):
        check(a.get("seq") == i and {k: x for k, x in a.items() if k != "seq"} == b,
              "streamed event %d is the log's" % i)
    check(msgs[-1]["event"] == "state" and msgs[-1]["data"] == d.view(mid),
          "then the final state, then the end")


def test_not_found():
    check_problem(d.request("GET", "/v1/matches/424242/events"), 404, "not_found",
                  "the events of no match")


def test_keep_alive():
    """A stream with nothing to send for 15 s is sent one `: keep-alive` comment (http.c
    STREAM_KEEPALIVE_MS), written by the streams thread, and carries the next move after
    it."""
    seats = d.players(4, prefix="ka")
    mid = d.create("hearts", seats)["id"]
    sock = socket.create_connection(("127.0.0.1", d.port))
    sock.sendall(("GET /v1/matches/%d/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s"
                  "\r\n\r\n" % (mid, seats[0]["token"])).encode())
    sock.settimeout(0.25)
    data = b""
    t0 = time.time()
    while time.time() - t0 < 16.5:
        try:
            data += sock.recv(65536)
        except socket.timeout:
            pass
    check(data.count(b"\n: keep-alive\n\n") == 1,
          "one keep-alive comment in 16.5 s of silence (got %d)" % data.count(b": keep-alive"))
    mv = d.view(mid, seats[1]["token"])["legal"][0]
    check(d.move(mid, seats[1]["token"], mv)[0] == 201, "seat 1 passes")
    sock.settimeout(5)
    while b"event: event" not in data.split(b": keep-alive")[-1]:
        data += sock.recv(65536)
    sock.close()


with d:
    run([test_live, test_resume_and_end, test_not_found, test_keep_alive])
