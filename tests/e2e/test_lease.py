# test_lease.py - end to end, PostgreSQL only (run by tests/pg/run-with-pg.sh): two cardpostd
# over one database run the deadline clock one at a time (docs/scaling.md "The clock's
# lease"). The first holds the lease; the second, whose test clock is past a deadline, does
# nothing while the first lives; once the first is SIGKILLed the second takes the lease over
# and plays the late seat's timeout, and pending invitations expire there too.
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import OPERATOR, Daemon, check, run  # noqa: E402

os.environ["CARDPOST_TEST_CLOCK"] = "1"
HOUR = 3600
RUNS = "this process runs the clock now"


def wait_for(what, pred, timeout):
    t0 = time.monotonic()
    while True:
        v = pred()
        if v:
            return v
        check(time.monotonic() - t0 < timeout, "%s within %.0f s" % (what, timeout))
        time.sleep(0.05)


def advance(d, seconds):
    st, _, body = d.request("POST", "/v1/admin/clock", {"advance_seconds": seconds},
                            token=OPERATOR)
    check(st == 200, "POST /v1/admin/clock -> 200 (got %d %r)" % (st, body))
    return body["now"] / 1000.0


def player(d, name, seat_without_asking=True):
    st, _, p = d.request("POST", "/v1/players", {
        "name": name, "preferences": {"seat_without_asking": seat_without_asking}})
    check(st == 201, "register %s -> 201 (got %d %r)" % (name, st, p))
    return p


def test_takeover():
    check(os.environ.get("CARDPOST_TEST_PG"), "CARDPOST_TEST_PG names the database")
    a = Daemon().start()
    wait_for("the first process takes the clock's lease", lambda: RUNS in a.stderr_text(), 5)
    b = Daemon().start()
    # Everything through b: its cache holds the match, its clock is the one moved.
    ps = [player(b, "lease%d" % i) for i in range(2)]
    st, _, v = b.request("POST", "/v1/matches", {
        "game": "snag", "players": [p["id"] for p in ps],
        "clock": {"move_seconds": HOUR, "reminder_seconds": 0}}, token=ps[0]["token"])
    check(st == 201, "create a clocked match through b -> 201 (got %d %r)" % (st, v))
    mid, seq = v["id"], v["seq"]
    # A pending match (an invitation: the second player asks to be asked) that expires.
    asked = player(b, "leaseasked", seat_without_asking=False)
    st, _, pv = b.request("POST", "/v1/matches", {"game": "snag",
                                                  "players": [ps[0]["id"], asked["id"]]},
                          token=ps[0]["token"])
    check(st == 201 and pv["status"] == "pending", "a pending match -> 201 (got %d %r)" % (st, pv))
    advance(b, 30 * 24 * HOUR)  # past the deadline and the invitation's expiry, on b's clock
    time.sleep(2.5)  # b asks for the lease each second: a's holds
    check(b.view(mid)["seq"] == seq, "b plays no timeout while a holds the clock's lease")
    check(b.view(pv["id"])["status"] == "pending", "nor does it expire an invitation")
    check(RUNS not in b.stderr_text(), "b does not say it runs the clock")

    a.kill()  # SIGKILL: no goodbye; the server frees a's lock when its connection drops
    v2 = wait_for("b takes the clock over and plays the timeout",
                  lambda: (lambda x: x if x["seq"] > seq else None)(b.view(mid)), 10)
    check(v2["to_move"] != v["to_move"], "the late seat's turn was played (got %r)" % v2)
    check(RUNS in b.stderr_text(), "b says it runs the clock now")
    wait_for("the invitation expires on b", lambda: b.view(pv["id"])["status"] != "pending", 5)

    # A third process started now waits: b holds the lease.
    c = Daemon().start()
    time.sleep(1.5)
    check(RUNS not in c.stderr_text(), "a third process does not take a held lease")
    c.stop()
    b.stop()


if __name__ == "__main__":
    run([test_takeover])
