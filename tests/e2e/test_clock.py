# test_clock.py - end to end: deadlines of the real cardpostd on its injected test clock
# (CARDPOST_TEST_CLOCK=1, POST /v1/admin/clock moves the service's time): the default and
# given clocks, reminders, the `auto` and `forfeit` timeout policies (logged, notified, and a
# match played to its end by the clock alone), vacations pausing a seat's clock, and a clock
# that survives a restart. Notifications are read through GET /v1/players/me/deliveries of
# players whose webhook_url is the real receiver tests/peers/webhook_receiver.py.
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (OPERATOR, TEMP_DIRS, Daemon, check, check_problem, check_finished_log,  # noqa: E402
                     run, verify_log)

os.environ["CARDPOST_TEST_CLOCK"] = "1"
os.environ["CARDPOST_ALLOW_PRIVATE_WEBHOOKS"] = "1"
HOUR, DAY = 3600, 86400
HERE = os.path.dirname(os.path.abspath(__file__))

# ---- The webhook receiver and the daemon ---------------------------------------------------

HOOK_DIR = tempfile.mkdtemp(prefix="cardpost-clock-hooks-")
TEMP_DIRS.append(HOOK_DIR)
receiver = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "peers", "webhook_receiver.py"),
                             HOOK_DIR], stdout=subprocess.PIPE)
_line = receiver.stdout.readline().decode()
check(_line.startswith("webhook-receiver: listening on 127.0.0.1:"), "the receiver runs: %r" % _line)
HOOK_URL = "http://127.0.0.1:%d/hook" % int(_line.rsplit(":", 1)[1])

d = Daemon()


def player(dm, name):
    st, _, p = dm.request("POST", "/v1/players", {"name": name, "webhook_url": HOOK_URL,
                                                  "preferences": {"seat_without_asking": True}})
    check(st == 201 and p["token"], "register %s with a webhook -> 201 (got %d %r)" % (name, st, p))
    return p


def players(dm, n, prefix):
    return [player(dm, "%s%d" % (prefix, i)) for i in range(n)]


def advance(dm, seconds):
    """Move the service's clock on by `seconds`; returns the service's time (Unix seconds,
    a float) after the move."""
    st, _, body = dm.request("POST", "/v1/admin/clock", {"advance_seconds": seconds},
                             token=OPERATOR)
    check(st == 200, "POST /v1/admin/clock -> 200 (got %d %r)" % (st, body))
    return body["now"] / 1000.0


def now(dm):
    return advance(dm, 0)


def advance_to(dm, t):
    """Move the service's clock to Unix second t (from a time before it)."""
    n = now(dm)
    check(n < t, "the clock is before %d (it is %.1f)" % (t, n))
    return advance(dm, int(t - n) + 1)


def wait_for(what, pred, timeout=3.0):
    """Poll pred() for a short while (the scheduler acts within a moment of being woken)."""
    t0 = time.monotonic()
    while True:
        v = pred()
        if v:
            return v
        check(time.monotonic() - t0 < timeout, "%s within %.0f s" % (what, timeout))
        time.sleep(0.02)


def settle():
    """Give the scheduler a moment to act on an advance when we check that nothing happens."""
    time.sleep(0.3)


def create(dm, game, seats, clock="default", options=None):
    body = {"game": game, "players": [p["id"] for p in seats]}
    if clock != "default":
        body["clock"] = clock
    if options is not None:
        body["options"] = options
    st, _, v = dm.request("POST", "/v1/matches", body, token=seats[0]["token"])
    check(st == 201, "create %s clock %r -> 201 (got %d %r)" % (game, clock, st, v))
    return v


def notes(dm, p, mid, types=None):
    """The (type, seq) of p's webhook notifications about match mid, oldest first."""
    st, _, body = dm.request("GET", "/v1/players/me/deliveries", token=p["token"])
    check(st == 200, "GET deliveries -> 200 (got %d %r)" % (st, body))
    out = [(x["type"], x["seq"]) for x in reversed(body["deliveries"])
           if x["match"] == mid and x["channel"] == "webhook"]
    return [x for x in out if types is None or x[0] in types]


def types_of(dm, p, mid, types=None):
    return [t for t, _ in notes(dm, p, mid, types)]


def hook(mid, seat, type_):
    """The body of the webhook of `type_` the receiver got for `seat` of match `mid` (the
    latest), or None."""
    found = None
    for name in sorted(os.listdir(HOOK_DIR)):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(HOOK_DIR, name)) as f:
                rec = json.load(f)
            body = json.loads(rec["body"])
        except (OSError, ValueError):
            continue  # being written
        data = body.get("data") or {}
        if body.get("type") == type_ and data.get("id") == mid and data.get("you") == seat:
            found = body
    return found


def moves_of(lg):
    return [e for e in lg["events"] if "deal" not in e and "shuffle" not in e]


# ---- 1. Clocks at creation ------------------------------------------------------------------

def test_default_and_given_clocks():
    ps = players(d, 5, "def")
    for game, n in (("hearts", 4), ("horseshoe", 2), ("snag", 2), ("horse-thief", 5)):
        t0 = int(now(d))
        v = create(d, game, ps[:n])
        t1 = int(now(d)) + 1
        check(v["clock"] == {"move_seconds": 72 * HOUR, "policy": "auto",
                             "reminder_seconds": 24 * HOUR},
              "%s without a clock: 72 h a move, auto, a 24 h reminder (got %r)"
              % (game, v["clock"]))
        check(isinstance(v["deadline"], int) and t0 + 72 * HOUR <= v["deadline"] <= t1 + 72 * HOUR,
              "%s: the deadline is the turn's start + 72 h (%r, created in [%d, %d])"
              % (game, v["deadline"], t0, t1))
        check(d.view(v["id"], ps[0]["token"])["deadline"] == v["deadline"],
              "%s: GET shows the same deadline" % game)
        v = create(d, game, ps[:n], clock=None)
        check(v["deadline"] is None and v["clock"] is None, "%s with clock null: none" % game)
    v = create(d, "speed", ps[:2])
    check(v["deadline"] is None and v["clock"] is None, "speed without a clock has none")
    v = create(d, "speed", ps[:2], clock={"move_seconds": 600})
    check(v["clock"] == {"move_seconds": 600, "policy": "auto", "reminder_seconds": 200},
          "speed with a clock: given move_seconds, a third as reminder (got %r)" % v["clock"])
    check(isinstance(v["deadline"], int), "speed with a clock has a deadline")
    v = create(d, "snag", ps[:2], clock={"move_seconds": 7 * DAY, "policy": "forfeit"})
    check(v["clock"] == {"move_seconds": 7 * DAY, "policy": "forfeit",
                         "reminder_seconds": 24 * HOUR}, "a long clock keeps a 24 h reminder")
    v = create(d, "snag", ps[:2], clock={"move_seconds": 100, "reminder_seconds": 0})
    check(v["clock"]["reminder_seconds"] == 0, "reminder_seconds 0: none")
    for bad in ({"move_seconds": 0}, {"move_seconds": -5}, {"move_seconds": "60"}, {},
                {"move_seconds": 60, "policy": "x"}, {"move_seconds": 60, "reminder_seconds": 60},
                {"move_seconds": 60, "reminder_seconds": 61},
                {"move_seconds": 60, "reminder_seconds": -1},
                {"move_seconds": 60, "colour": "red"}):
        resp = d.request("POST", "/v1/matches", {"game": "snag", "players": [ps[0]["id"], ps[1]["id"]],
                                                 "clock": bad}, token=ps[0]["token"])
        check_problem(resp, 422, "bad_clock", "clock %r" % bad)
    for bad in (60, "72h", [60], True):
        resp = d.request("POST", "/v1/matches", {"game": "snag", "players": [ps[0]["id"], ps[1]["id"]],
                                                 "clock": bad}, token=ps[0]["token"])
        check_problem(resp, 400, None, "clock %r (not an object)" % bad)
    print("     default clocks of 4 games, speed without, null, 13 bad clocks refused")


# ---- 2. Reminders ---------------------------------------------------------------------------

def test_reminders():
    ps = players(d, 2, "rem")
    v = create(d, "snag", ps, clock={"move_seconds": 10 * HOUR, "reminder_seconds": 2 * HOUR})
    mid = v["id"]
    first = v["to_move"][0]
    other = 1 - first
    dl = v["deadline"]
    advance_to(d, dl - 2 * HOUR - 60)
    settle()
    check(types_of(d, ps[first], mid, {"reminder"}) == [], "no reminder a minute before its time")
    advance(d, 120)
    wait_for("a reminder to the seat to move",
             lambda: types_of(d, ps[first], mid, {"reminder"}) == ["reminder"])
    advance(d, 30 * 60)
    settle()
    check(types_of(d, ps[first], mid, {"reminder"}) == ["reminder"], "one reminder a turn")
    check(types_of(d, ps[other], mid, {"reminder"}) == [], "no reminder to the seat not to move")
    check(d.view(mid)["deadline"] == dl, "a reminder leaves the deadline")
    # A move: the other seat's turn starts now with a fresh clock and reminder.
    mv = d.view(mid, ps[first]["token"])["legal"][0]
    t0 = int(now(d))
    st, _, v = d.move(mid, ps[first]["token"], mv)
    check(st == 201 and v["to_move"] == [other], "the first seat moves (%d %r)" % (st, v))
    check(t0 + 10 * HOUR <= v["deadline"] <= t0 + 10 * HOUR + 2, "the new turn's deadline")
    check(types_of(d, ps[other], mid, {"turn"}) == ["turn"], "the next seat gets a turn")
    advance_to(d, v["deadline"] - 2 * HOUR + 1)
    wait_for("the new turn's reminder",
             lambda: types_of(d, ps[other], mid, {"reminder"}) == ["reminder"])
    check(types_of(d, ps[first], mid, {"reminder"}) == ["reminder"],
          "the seat that moved gets no second reminder")
    check(d.view(mid)["status"] == "active", "no timeout before the deadline")


# ---- 3. auto --------------------------------------------------------------------------------

def check_auto_event(ev, seat, move, what):
    check(ev.get("seat") == seat and ev.get("move") == move and ev.get("auto") is True,
          "%s: the log shows seat %d's %r with auto (got %r)" % (what, seat, move, ev))


def test_auto_sequential():
    ps = players(d, 2, "auto")
    v = create(d, "snag", ps, clock={"move_seconds": HOUR, "reminder_seconds": 0})
    mid = v["id"]
    s = v["to_move"][0]
    sv = d.view(mid, ps[s]["token"])
    first_legal = sv["legal"][0]
    seq = sv["seq"]
    advance_to(d, v["deadline"] - 30)
    settle()
    check(d.view(mid)["seq"] == seq, "nothing happens before the deadline")
    t = advance(d, 60)
    v2 = wait_for("the timeout", lambda: (lambda x: x if x["seq"] > seq else None)(d.view(mid)))
    check(v2["to_move"] == [1 - s], "the other seat is to move after the timeout")
    check(int(t) + HOUR - 2 <= v2["deadline"] <= int(t) + HOUR + 2,
          "the next turn starts when the timeout was played (%r vs now %.0f)" % (v2["deadline"], t))
    lg = d.log(mid, ps[s]["token"])
    check_auto_event(moves_of(lg)[-1], s, first_legal, "snag")
    check(notes(d, ps[s], mid, {"timeout", "turn"}) == [("timeout", v2["seq"])],
          "the late seat gets a timeout (got %r)" % notes(d, ps[s], mid))
    check(notes(d, ps[1 - s], mid, {"timeout", "turn"}) == [("turn", v2["seq"])],
          "the next seat gets a turn (got %r)" % notes(d, ps[1 - s], mid))
    # A human move after it is still fine, and is not marked auto.
    mv = d.view(mid, ps[1 - s]["token"])["legal"][0]
    st, _, _ = d.move(mid, ps[1 - s]["token"], mv)
    check(st == 201, "a move after a timeout -> 201")
    check("auto" not in moves_of(d.log(mid, ps[s]["token"]))[-1], "a human move has no auto")


def test_auto_simultaneous_pass():
    ps = players(d, 4, "pass")
    v = create(d, "hearts", ps, clock={"move_seconds": HOUR, "reminder_seconds": 0},
               options={"target": 1})
    mid = v["id"]
    check(sorted(v["to_move"]) == [0, 1, 2, 3], "hearts starts with everyone passing")
    dl = v["deadline"]
    for s in (0, 1):
        mv = d.view(mid, ps[s]["token"])["legal"][0]
        st, _, _ = d.move(mid, ps[s]["token"], mv)
        check(st == 201, "seat %d passes" % s)
    firsts = {s: d.view(mid, ps[s]["token"])["legal"][0] for s in (2, 3)}
    check(d.view(mid)["deadline"] == dl, "the seats still to pass keep the shared deadline")
    advance_to(d, dl + 1)
    v2 = wait_for("both late seats passed",
                  lambda: (lambda x: x if len(x["to_move"]) == 1 else None)(d.view(mid)))
    for s in (2, 3):
        mine = [e for e in moves_of(d.log(mid, ps[s]["token"])) if e.get("seat") == s]
        check(len(mine) == 1, "seat %d passed once" % s)
        check_auto_event(mine[0], s, firsts[s], "hearts pass")
        check(types_of(d, ps[s], mid, {"timeout"}) == ["timeout"], "seat %d gets a timeout" % s)
    for s in (0, 1):
        check(types_of(d, ps[s], mid, {"timeout"}) == [], "seat %d passed in time" % s)
        mine = [e for e in moves_of(d.log(mid, ps[s]["token"])) if e.get("seat") == s]
        check("auto" not in mine[0], "seat %d's own pass is not auto" % s)
    # The exchange happened: each seat's hand holds the cards passed to it; 2C leads.
    for s in range(4):
        to = (s + 1) % 4
        rv = d.view(mid, ps[to]["token"])["view"]
        got = [x for x in rv["passes"] if x["seat"] == s][0]
        check(got["to"] == to and got["submitted"], "seat %d passed left" % s)
        check(len(got["cards"]) == 3 and set(got["cards"]) <= set(rv["hands"][to]["cards"]),
              "seat %d holds the cards seat %d passed (%r)" % (to, s, got))
        if s in firsts:
            check("pass " + " ".join(got["cards"]) == firsts[s], "the auto pass was exchanged")
    lead = v2["to_move"][0]
    lv = d.view(mid, ps[lead]["token"])
    check(lv["legal"] == ["play 2C"], "the exchange happened and 2C leads (%r)" % lv["legal"])
    # The leader hears of it: a turn, or the timeout (its view holds its legal moves) when
    # the leader is seat 3, whose late pass made the exchange (one notification a change).
    at = [t for t, q in notes(d, ps[lead], mid) if q == v2["seq"]]
    check(at == ["timeout" if lead == 3 else "turn"],
          "the leader %d is told at seq %d (%r)" % (lead, v2["seq"], notes(d, ps[lead], mid)))
    return mid, ps


def drive_by_clock(mid, ps, step):
    """Advance the clock one move time at a time until the match is over; every advance plays
    exactly one late move (no seat moves twice in one step) and it is the seat's first legal
    move. Returns the number of timeouts played."""
    timeouts = 0
    for _ in range(400):
        v = d.view(mid)
        if v["status"] == "finished":
            return timeouts
        check(len(v["to_move"]) == 1, "one seat to move in the play (%r)" % v["to_move"])
        s = v["to_move"][0]
        sv = d.view(mid, ps[s]["token"])
        before = len(moves_of(d.log(mid)))  # a spectator's log: every move, redacted
        advance(d, step)
        v2 = wait_for("a timeout at seq %d" % v["seq"],
                      lambda: (lambda x: x if x["seq"] > v["seq"] else None)(d.view(mid)))
        ms = moves_of(d.log(mid, ps[s]["token"]))
        new = ms[before:]
        check(len(new) == 1, "one advance of a move time plays one timeout (%r)" % new)
        check_auto_event(new[0], s, sv["legal"][0], "seq %d" % v["seq"])
        check(v2["status"] == "finished" or v2["deadline"] > now(d),
              "after a timeout the next deadline is ahead")
        timeouts += 1
    check(False, "the clock alone ended the match within 400 timeouts")


def test_auto_to_the_end():
    mid, ps = test_auto_simultaneous_pass()
    n = drive_by_clock(mid, ps, HOUR + 5)
    v = d.view(mid)
    check(v["status"] == "finished" and v["result"]["finished"], "the match is over")
    lg = d.log(mid)
    check_finished_log(lg, v)
    verify_log(lg, d.tmp, "hearts-clock")
    check(all(e.get("auto") is True for e in moves_of(lg)[2:]), "every later move was auto")
    check(sum(1 for e in moves_of(lg) if e.get("auto")) == n + 2, "the log counts the timeouts")
    for s, p in enumerate(ps):
        check(types_of(d, p, mid)[-1] == "match_over", "seat %d gets match_over last" % s)
        check(types_of(d, p, mid).count("match_over") == 1, "one match_over")
    # Several move times at once: one late seat times out, and the next seat's clock starts
    # at that timeout, so it is not late at once.
    ps2 = players(d, 2, "far")
    v = create(d, "snag", ps2, clock={"move_seconds": HOUR, "reminder_seconds": 0},
               options={"target": 1})
    seq = v["seq"]
    advance(d, 5 * HOUR)
    v2 = wait_for("the far timeout", lambda: (lambda x: x if x["seq"] > seq else None)(d.view(v["id"])))
    settle()
    check(len(moves_of(d.log(v["id"]))) == 1, "five move times at once play one timeout")
    n2 = drive_by_clock(v["id"], ps2, 3 * HOUR)
    v3 = d.view(v["id"])
    verify_log(d.log(v["id"]), d.tmp, "snag-clock")
    check(v3["status"] == "finished" and max(v3["result"]["totals"]) >= 1,
          "snag to 1 ended with a score (%r)" % v3["result"])
    print("     hearts to 1 by %d timeouts, snag by %d" % (n, n2 + 1))


# ---- 4. forfeit -----------------------------------------------------------------------------

def test_forfeit():
    ps = players(d, 4, "ff")
    v = create(d, "hearts", ps, clock={"move_seconds": 2 * HOUR, "policy": "forfeit"})
    mid = v["id"]
    for s in (0, 1, 3):
        st, _, _ = d.move(mid, ps[s]["token"], d.view(mid, ps[s]["token"])["legal"][0])
        check(st == 201, "seat %d passes" % s)
    advance_to(d, v["deadline"] + 1)
    v2 = wait_for("the forfeit", lambda: (lambda x: x if x["status"] == "finished" else None)(
        d.view(mid)))
    res = v2["result"]
    lg = d.log(mid)
    check(moves_of(lg)[-1] == {"seat": 2, "move": "resign", "auto": True},
          "the late seat resigned automatically (%r)" % moves_of(lg)[-1])
    check(res["finished"] is True and res["resigned"] == 2, "the result names the resigner (%r)"
          % res)
    check(res["ranking"][-1] == [2], "the resigner is ranked last (%r)" % res)
    verify_log(lg, d.tmp, "forfeit")
    for s, p in enumerate(ps):
        want = ["timeout", "match_over"] if s == 2 else ["match_over"]
        check(types_of(d, p, mid, {"match_over", "timeout"}) == want,
              "seat %d gets %r (%r)" % (s, want, types_of(d, p, mid)))
    # The seat that forfeited on time is told both, at the seq of its resignation, and its
    # timeout webhook shows the finished match.
    check(notes(d, ps[2], mid, {"timeout"}) == [("timeout", v2["seq"])],
          "the timeout is at the resignation's seq (%r)" % notes(d, ps[2], mid))
    body = wait_for("the timeout webhook", lambda: hook(mid, 2, "timeout"))
    check(body["data"]["status"] == "finished" and body["data"]["result"]["resigned"] == 2,
          "the timeout webhook shows the forfeited match (%r)" % body["data"].get("result"))


# ---- 5. Vacation ----------------------------------------------------------------------------

def vacation(dm, p):
    st, _, me = dm.request("GET", "/v1/players/me", token=p["token"])
    check(st == 200, "GET /v1/players/me -> 200")
    return me["vacation"]


def test_vacation_allowance():
    p = player(d, "vac-a")
    vac = vacation(d, p)
    check(vac["on_vacation"] is False and vac["days_left"] == 30 and vac["days_used"] == 0,
          "a new player has 30 days (%r)" % vac)
    check_problem(d.request("POST", "/v1/players/me/vacation", {"days": 31}, token=p["token"]),
                  422, "vacation_allowance", "31 days")
    check_problem(d.request("DELETE", "/v1/players/me/vacation", token=p["token"]),
                  409, None, "ending a vacation not taken")
    check_problem(d.request("POST", "/v1/players/me/vacation", {"days": 0}, token=p["token"]),
                  422, None, "0 days")
    check_problem(d.request("POST", "/v1/players/me/vacation", {}, token=p["token"]),
                  400, None, "no days")
    t0 = now(d)
    st, _, me = d.request("POST", "/v1/players/me/vacation", {"days": 5}, token=p["token"])
    check(st == 200 and me["vacation"]["on_vacation"] and me["vacation"]["days_left"] == 25,
          "5 days -> on vacation, 25 left (%d %r)" % (st, me))
    check(me["vacation"]["until"] == me["vacation"]["from"] + 5 * DAY
          and int(t0) <= me["vacation"]["from"] <= int(t0) + 2, "from now for 5 days")
    check_problem(d.request("POST", "/v1/players/me/vacation", {"days": 1}, token=p["token"]),
                  409, "on_vacation", "a second vacation")
    advance(d, DAY + HOUR)
    st, _, me = d.request("DELETE", "/v1/players/me/vacation", token=p["token"])
    check(st == 200 and me["vacation"]["on_vacation"] is False, "DELETE ends it")
    check(me["vacation"]["days_left"] == 28, "the 3 whole days not taken are given back (%r)"
          % me["vacation"])
    # Issue 13 defect 8: days_used + days once overflowed for a huge `days`, resetting the
    # allowance and pausing clocks for ever.
    for huge in (2 ** 31, 2 ** 31 - 1, 2 ** 62, 2 ** 63 - 1):
        check_problem(d.request("POST", "/v1/players/me/vacation", {"days": huge},
                                token=p["token"]), 422, "vacation_allowance", "%d days" % huge)
    check(vacation(d, p)["on_vacation"] is False and vacation(d, p)["days_left"] == 28,
          "a huge vacation changes nothing")
    check_problem(d.request("POST", "/v1/players/me/vacation", {"days": 29}, token=p["token"]),
                  422, "vacation_allowance", "beyond the days left")
    st, _, me = d.request("POST", "/v1/players/me/vacation", {"days": 28}, token=p["token"])
    check(st == 200 and me["vacation"]["days_left"] == 0, "the rest of the allowance")
    advance(d, 28 * DAY + 60)
    check(vacation(d, p)["on_vacation"] is False, "a vacation ends by itself")


def test_vacation_pauses_clock():
    ps = players(d, 4, "vac")
    born = now(d)
    v = create(d, "hearts", ps, clock={"move_seconds": 2 * DAY, "reminder_seconds": DAY})
    made = now(d)
    mid = v["id"]
    t0 = v["deadline"] - 2 * DAY  # the turn's start
    advance_to(d, t0 + HOUR)
    st, _, me = d.request("POST", "/v1/players/me/vacation", {"days": 3}, token=ps[3]["token"])
    check(st == 200 and me["vacation"]["on_vacation"], "seat 3 goes on vacation")
    frm, until = me["vacation"]["from"], me["vacation"]["until"]
    check(me["vacation"]["days_left"] == 27, "days_left shrinks to 27")
    check(d.view(mid)["deadline"] == v["deadline"], "the others still have the old deadline")
    # The reminder time: everyone but seat 3 is reminded.
    advance_to(d, t0 + DAY + 60)
    wait_for("reminders", lambda: all(types_of(d, ps[s], mid, {"reminder"}) == ["reminder"]
                                      for s in (0, 1, 2)))
    check(types_of(d, ps[3], mid, {"reminder"}) == [], "no reminder on vacation")
    # The deadline: seats 0-2 time out, seat 3's clock is paused by its whole vacation.
    legal3 = d.view(mid, ps[3]["token"])["legal"][0]
    advance_to(d, t0 + 2 * DAY + 60)
    v2 = wait_for("the others' timeouts", lambda: (lambda x: x if x["to_move"] == [3] else None)(
        d.view(mid)))
    mine = v2["deadline"]
    check(mine == v["deadline"] + 3 * DAY, "seat 3's deadline moved on by its vacation "
          "(%r, expected %r; vacation from %r)" % (mine, v["deadline"] + 3 * DAY, frm))
    # By the rule (docs/api.md "Deadlines") from what the view does not say: the turn began
    # at the creation (the service's clock around it), and all of seat 3's vacation falls
    # inside it.
    own = [int(born) + 2 * DAY + (until - frm), int(made) + 2 * DAY + (until - frm)]
    check(own[0] <= mine <= own[1], "the view's deadline is seat 3's: turn start + 2 days + its "
          "vacation (%r, expected within %r)" % (mine, own))
    for s in (0, 1, 2):
        check(types_of(d, ps[s], mid, {"timeout"}) == ["timeout"], "seat %d timed out" % s)
    # Past the original deadline and past the vacation's end: still not late.
    advance_to(d, frm + 3 * DAY + 60)
    check(vacation(d, ps[3])["on_vacation"] is False, "the vacation is over")
    # Seat 3 was away when the others were reminded: it gets a reminder of its own, a day
    # before its own deadline (docs/api.md "Deadlines": a reminder per seat and turn).
    advance_to(d, mine - DAY - 60)
    settle()
    check(types_of(d, ps[3], mid, {"timeout", "reminder"}) == [], "not reminded yet")
    advance_to(d, mine - DAY + 1)
    wait_for("seat 3's own reminder, once back",
             lambda: types_of(d, ps[3], mid, {"reminder"}) == ["reminder"])
    advance_to(d, mine - 60)
    settle()
    check(d.view(mid)["to_move"] == [3], "seat 3 is not timed out before its moved deadline")
    check(types_of(d, ps[3], mid, {"timeout", "reminder"}) == ["reminder"],
          "one reminder, no timeout")
    advance_to(d, mine + 1)
    wait_for("seat 3's timeout", lambda: d.view(mid)["seq"] > v2["seq"])
    mine3 = [e for e in moves_of(d.log(mid, ps[3]["token"])) if e.get("seat") == 3]
    check_auto_event(mine3[0], 3, legal3, "seat 3 after its vacation")
    check(types_of(d, ps[3], mid, {"timeout"}) == ["timeout"], "seat 3 gets its timeout")


def test_vacation_ended_early():
    ps = players(d, 2, "early")
    v = create(d, "snag", ps, clock={"move_seconds": 2 * DAY, "reminder_seconds": DAY // 2})
    mid = v["id"]
    s = v["to_move"][0]
    t0 = v["deadline"] - 2 * DAY
    advance_to(d, t0 + DAY // 2)
    st, _, me = d.request("POST", "/v1/players/me/vacation", {"days": 5}, token=ps[s]["token"])
    check(st == 200, "seat %d goes on vacation for 5 days" % s)
    frm = me["vacation"]["from"]
    check(d.view(mid)["deadline"] == v["deadline"] + 5 * DAY, "the deadline moves on 5 days")
    advance_to(d, frm + DAY + 60)  # past the unmoved reminder time (t0 + 36 h)
    settle()
    check(types_of(d, ps[s], mid, {"reminder"}) == [], "no reminder on vacation")
    lo = int(now(d))
    st, _, me = d.request("DELETE", "/v1/players/me/vacation", token=ps[s]["token"])
    hi = int(now(d)) + 1
    check(st == 200 and me["vacation"]["days_left"] == 28,
          "back after a day and a minute: the 3 whole days not taken given back (%r)"
          % me["vacation"])
    dl = d.view(mid)["deadline"]
    check(v["deadline"] + (lo - frm) <= dl <= v["deadline"] + (hi - frm),
          "the deadline moved on by the day taken (%r in [%d, %d])"
          % (dl, v["deadline"] + lo - frm, v["deadline"] + hi - frm))
    settle()
    check(types_of(d, ps[s], mid, {"reminder"}) == [],
          "no reminder on coming back a day and a half before the moved deadline")
    advance_to(d, dl - DAY // 2 + 1)
    wait_for("the reminder half a day before the moved deadline",
             lambda: types_of(d, ps[s], mid, {"reminder"}) == ["reminder"])
    advance_to(d, dl - 60)
    settle()
    check(d.view(mid)["seq"] == v["seq"], "no timeout before the moved deadline")
    check(types_of(d, ps[s], mid, {"reminder"}) == ["reminder"], "one reminder")
    advance_to(d, dl + 1)
    wait_for("the timeout after an early return", lambda: d.view(mid)["seq"] > v["seq"])


# ---- 5b. Several vacations inside one turn --------------------------------------------------

def go_away(dm, p, days):
    st, _, me = dm.request("POST", "/v1/players/me/vacation", {"days": days}, token=p["token"])
    check(st == 200 and me["vacation"]["on_vacation"], "a vacation of %d days starts (%d %r)"
          % (days, st, me))
    return me["vacation"]["from"], me["vacation"]["until"]


def come_back(dm, p):
    """End p's vacation now; returns the bounds [lo, hi] of the second it ended at."""
    lo = int(now(dm))
    st, _, me = dm.request("DELETE", "/v1/players/me/vacation", token=p["token"])
    hi = int(now(dm))
    check(st == 200 and me["vacation"]["on_vacation"] is False, "the vacation ends (%d %r)"
          % (st, me))
    return lo, hi


def several_vacations(policy):
    """The defect of issue 12: a 3,600 s clock; a 2-day vacation ended after 30 h; 30 minutes
    later a 1-day vacation (which once timed the seat out at once); then a third one ended
    early. The deadline is the turn's start + 3,600 s + every paused second, and the seat
    is never timed out while away."""
    ps = players(d, 2, "multi-" + policy)
    v = create(d, "snag", ps, clock={"move_seconds": HOUR, "policy": policy,
                                     "reminder_seconds": 0})
    mid, seq = v["id"], v["seq"]
    s = v["to_move"][0]
    start = v["deadline"] - HOUR
    advance_to(d, start + 60)
    f1, _ = go_away(d, ps[s], 2)
    advance(d, 30 * HOUR)
    lo1, hi1 = come_back(d, ps[s])
    dl = d.view(mid)["deadline"]
    check(start + HOUR + (lo1 - f1) <= dl <= start + HOUR + (hi1 - f1),
          "after the first vacation the deadline moved on by 30 h (%r)" % dl)
    advance(d, 30 * 60)
    f2, u2 = go_away(d, ps[s], 1)
    v2 = d.view(mid)
    check(v2["seq"] == seq and v2["status"] == "active",
          "starting a second vacation in the same turn plays nothing (%r)" % v2["to_move"])
    check(start + HOUR + (lo1 - f1) + (u2 - f2) <= v2["deadline"]
          <= start + HOUR + (hi1 - f1) + (u2 - f2),
          "the deadline counts both vacations (%r)" % v2["deadline"])
    # The whole second vacation passes; then nothing is late either.
    advance_to(d, u2 + 60)
    settle()
    check(d.view(mid)["seq"] == seq, "no timeout while away, nor just after the return")
    advance(d, 10 * 60)
    f3, _ = go_away(d, ps[s], 1)
    settle()
    check(d.view(mid)["seq"] == seq, "a third vacation plays nothing")
    advance(d, 2 * HOUR)
    lo3, hi3 = come_back(d, ps[s])
    paused_lo = (lo1 - f1) + (u2 - f2) + (lo3 - f3)
    paused_hi = (hi1 - f1) + (u2 - f2) + (hi3 - f3)
    dl = d.view(mid)["deadline"]
    check(start + HOUR + paused_lo <= dl <= start + HOUR + paused_hi,
          "deadline = start + move time + paused time of three vacations (%r in [%d, %d])"
          % (dl, start + HOUR + paused_lo, start + HOUR + paused_hi))
    # Used so far: about a minute, 30 min, a minute and 10 min of the hour, between the
    # vacations; what is left of it runs out at the deadline.
    used = (f1 - start) + (f2 - lo1) + (f3 - u2)
    check(abs((dl - int(now(d))) - (HOUR - used)) <= 3,
          "%d s of the hour are left (%d s)" % (HOUR - used, dl - int(now(d))))
    advance_to(d, dl - 30)
    settle()
    check(d.view(mid)["seq"] == seq, "nothing happens before that deadline")
    advance(d, 60)
    v3 = wait_for("the timeout at the moved deadline",
                  lambda: (lambda x: x if x["seq"] > seq else None)(d.view(mid)))
    last = moves_of(d.log(mid, ps[s]["token"]))[-1]
    check(last.get("seat") == s and last.get("auto") is True
          and (last["move"] == "resign") == (policy == "forfeit"),
          "%s: the late seat's %s (%r)" % (policy, "resignation" if policy == "forfeit"
                                            else "first legal move", last))
    check(types_of(d, ps[s], mid, {"timeout"}) == ["timeout"], "one timeout notification")
    return v3


def test_several_vacations_auto():
    several_vacations("auto")


def test_several_vacations_forfeit():
    v = several_vacations("forfeit")
    check(v["status"] == "finished", "the forfeit ended the match")


# ---- 5c. The deadline shown when a turn begins during a vacation ----------------------------

def test_deadline_of_a_turn_begun_away():
    ps = players(d, 2, "begun")
    v = create(d, "snag", ps, clock={"move_seconds": HOUR, "reminder_seconds": 0})
    mid = v["id"]
    s = v["to_move"][0]
    o = 1 - s
    _, until = go_away(d, ps[o], 2)
    mv = d.view(mid, ps[s]["token"])["legal"][0]
    st, _, after = d.move(mid, ps[s]["token"], mv)
    check(st == 201 and after["to_move"] == [o], "the first seat moves (%d)" % st)
    # The other seat's turn began while it is away: its time starts when it is back.
    check(after["deadline"] == until + HOUR,
          "the move's answer shows the vacation's end + 1 h (%r, expected %r)"
          % (after["deadline"], until + HOUR))
    check(d.view(mid)["deadline"] == until + HOUR, "a spectator's view too")
    check(d.view(mid, ps[o]["token"])["deadline"] == until + HOUR, "the seat's own view too")
    body = wait_for("the turn webhook", lambda: hook(mid, o, "turn"))
    check(body["data"]["deadline"] == until + HOUR,
          "the turn notification shows the vacation's end + 1 h (%r)" % body["data"]["deadline"])
    advance_to(d, until + HOUR - 60)
    settle()
    check(d.view(mid)["seq"] == after["seq"], "no timeout before it")
    advance(d, 120)
    wait_for("the timeout after it", lambda: d.view(mid)["seq"] > after["seq"])


def test_deadline_of_a_pass_left_to_a_seat_away():
    """Hearts: seat 3 goes away during the pass; when the three others have passed, the
    deadline shown is seat 3's own, moved on by its vacation."""
    ps = players(d, 4, "passaway")
    v = create(d, "hearts", ps, clock={"move_seconds": 2 * HOUR, "reminder_seconds": 0})
    mid = v["id"]
    start = v["deadline"] - 2 * HOUR
    advance_to(d, start + 60)
    frm, until = go_away(d, ps[3], 1)
    for s in (0, 1, 2):
        st, _, after = d.move(mid, ps[s]["token"], d.view(mid, ps[s]["token"])["legal"][0])
        check(st == 201, "seat %d passes" % s)
    check(after["to_move"] == [3], "only seat 3 is left to pass")
    want = start + 2 * HOUR + (until - frm)
    check(after["deadline"] == want and d.view(mid)["deadline"] == want,
          "the deadline is seat 3's, moved on by its vacation (%r, %r, expected %r)"
          % (after["deadline"], d.view(mid)["deadline"], want))


# ---- 6. A restart ---------------------------------------------------------------------------

def test_restart_keeps_clock():
    dm = Daemon().start()
    ps = players(dm, 2, "rs")
    v = create(dm, "snag", ps, clock={"move_seconds": 4 * HOUR, "reminder_seconds": 0})
    mid, s = v["id"], v["to_move"][0]
    first = dm.view(mid, ps[s]["token"])["legal"][0]
    before = advance(dm, 2 * HOUR)
    rc, _ = dm.stop(signal.SIGKILL)
    check(rc == -signal.SIGKILL, "SIGKILL ends it")
    dm.start()
    check(dm.view(mid)["deadline"] == v["deadline"], "the deadline survives the restart")
    check(now(dm) >= before, "the test clock's advance survives the restart (%.0f < %.0f)"
          % (now(dm), before))
    advance_to(dm, v["deadline"] - 60)
    settle()
    check(dm.view(mid)["seq"] == v["seq"], "no timeout before the deadline after a restart")
    # Another restart a minute before the deadline, then past it: the timeout fires once.
    rc, _ = dm.stop(signal.SIGKILL)
    dm.start()
    check(now(dm) >= v["deadline"] - 60, "the clock is where it was")
    advance(dm, 120)
    wait_for("the timeout after a restart", lambda: dm.view(mid)["seq"] > v["seq"])
    settle()
    check(len(moves_of(dm.log(mid))) == 1, "the timeout fired once (%r)" % moves_of(dm.log(mid)))
    check_auto_event(moves_of(dm.log(mid, ps[s]["token"]))[-1], s, first, "after a restart")
    check(types_of(dm, ps[s], mid, {"timeout"}) == ["timeout"], "one timeout notification")
    rc, _ = dm.stop()
    dm.start()
    settle()
    check(len(moves_of(dm.log(mid))) == 1, "a restart after the timeout plays nothing more")
    rc, _ = dm.stop()
    check(rc == 0, "SIGTERM -> exit 0")


def test_clock_advance_bounded():
    """The test clock's advance is bounded (a huge one once overflowed the offset)."""
    t = now(d)
    for bad in (2 ** 62, 100 * 366 * DAY + 1, -1, "60", None):
        check_problem(d.request("POST", "/v1/admin/clock", {"advance_seconds": bad},
                                token=OPERATOR), 400, "bad_request", "advance %r" % (bad,))
    check(abs(now(d) - t) < 5, "a refused advance moves nothing")


def test_clean_exit():
    rc, _ = d.stop()
    check(rc == 0, "cardpostd exits 0 on SIGTERM after all that (got %r)" % rc)
    with open(os.path.join(d.tmp, "cardpostd.stderr")) as f:
        err = f.read()
    check("clock:" not in err and "failed" not in err,
          "the scheduler reported no failure:\n%s" % err[-2000:])


def main():
    d.start()
    try:
        run([test_default_and_given_clocks, test_reminders, test_auto_sequential,
             test_auto_simultaneous_pass,
             test_auto_to_the_end, test_forfeit, test_vacation_allowance,
             test_vacation_pauses_clock, test_vacation_ended_early,
             test_several_vacations_auto, test_several_vacations_forfeit,
             test_deadline_of_a_turn_begun_away, test_deadline_of_a_pass_left_to_a_seat_away,
             test_clock_advance_bounded, test_clean_exit,
             # After d's end: on PostgreSQL the daemons over one database run the clock one
             # at a time (the clock's lease, docs/scaling.md), and this one's must be dm's.
             test_restart_keeps_clock])
    finally:
        d.kill()
        receiver.send_signal(signal.SIGTERM)
        receiver.wait()


main()
