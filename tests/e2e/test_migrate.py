# test_migrate.py - end to end, PostgreSQL (run by tests/pg/run-with-pg.sh): `cardpost
# migrate-db FROM TO` (docs/scaling.md). A SQLite database made by the real cardpostd
# (players with webhooks, finished and running matches, a league with a schedule and
# standings, deliveries pending because the receiver answers 503, an idempotency key) is
# copied into the fresh PostgreSQL database CARDPOST_TEST_PG; a second copy into it is
# refused; then cardpostd serves the copy: every view and log as before, every finished log
# verifying, the running match going on at its seq, the pending deliveries going out, new
# rows getting new ids.
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (CARDPOST, TEMP_DIRS, Daemon, WebhookReceiver, check,  # noqa: E402
                     db_exec, play_match, run, verify_log, wait_for)

os.environ["CARDPOST_TEST_CLOCK"] = "1"
os.environ["CARDPOST_ALLOW_PRIVATE_WEBHOOKS"] = "1"
PG = os.environ.get("CARDPOST_TEST_PG")
TMP = tempfile.mkdtemp(prefix="cardpost-migrate-")
TEMP_DIRS.append(TMP)
rng = random.Random(15)


def ok(resp, status, what):
    st, _, body = resp
    check(st == status, "%s -> %d (got %d %r)" % (what, status, st, body))
    return body


def player(d, name, hook):
    return ok(d.request("POST", "/v1/players", {"name": name, "webhook_url": hook,
                                                "preferences": {"seat_without_asking": True}}),
              201, "register %s" % name)


def deliveries(d, p):
    return ok(d.request("GET", "/v1/players/me/deliveries", token=p["token"]), 200,
              "deliveries of %s" % p["name"])["deliveries"]


def migrate(src):
    return subprocess.run([CARDPOST, "migrate-db", src, PG], capture_output=True, text=True)


def build_sqlite(hooks):
    """The source database, made through the real daemon on SQLite. Returns what to compare."""
    d = Daemon(db=os.path.join(TMP, "source.db")).start()
    hook = hooks.url("/hook")
    ps = [player(d, "mig%d" % i, hook) for i in range(4)]
    by_id = {p["id"]: p for p in ps}
    done = d.create("snag", ps[:2])
    play_match(d, done["id"], ps[:2], rng)
    hearts = d.create("hearts", ps, options={"target": 1})
    play_match(d, hearts["id"], ps, rng)
    running = d.create("hearts", ps, options={"target": 100})
    for i in range(6):  # a few moves into it (the pass), then left running
        v = d.view(running["id"])
        s = v["to_move"][0]
        mv = d.view(running["id"], ps[s]["token"])["legal"][0]
        ok(d.move(running["id"], ps[s]["token"], mv, headers={"Idempotency-Key": "k%d" % i}),
           201, "a move of the running match")
    lg = ok(d.request("POST", "/v1/leagues", {"name": "migrating", "game": "snag"},
                      token=ps[0]["token"]), 201, "a league")
    for p in ps:
        ok(d.request("POST", "/v1/leagues/%d/members" % lg["id"], None, token=p["token"]), 201,
           "join the league")
    sched = ok(d.request("POST", "/v1/leagues/%d/schedule" % lg["id"], {},
                         token=ps[0]["token"]), 201, "schedule it")["matches"]
    first = sched[0] if isinstance(sched[0], int) else sched[0]["id"]
    v = d.view(first)
    play_match(d, first, [by_id[p["id"]] for p in v["players"]], rng)
    hooks.set_status(503)  # the next notifications stay pending
    v = d.view(running["id"])
    s = v["to_move"][0]
    mv = d.view(running["id"], ps[s]["token"])["legal"][0]
    ok(d.move(running["id"], ps[s]["token"], mv), 201, "a move whose notifications fail")
    wait_for(lambda: any(x["status"] == "pending" and x["attempts"] >= 1
                         for p in ps for x in deliveries(d, p)), "a delivery failed once")
    before = {
        "views": {m: d.view(m) for m in (done["id"], hearts["id"], running["id"], first)},
        "logs": {m: d.log(m) for m in (done["id"], hearts["id"], first)},
        "standings": ok(d.request("GET", "/v1/leagues/%d/standings" % lg["id"]), 200,
                        "standings"),
        "pending": sorted(x["id"] for p in ps for x in deliveries(d, p)
                          if x["status"] == "pending"),
    }
    rc, _ = d.stop()
    check(rc == 0, "the SQLite daemon stops cleanly")
    # A notification still in outbox_fresh (migration 0020), as a move's transaction leaves
    # it when the deliveries are behind: the copy carries it as an outbox row, pending.
    v = before["views"][running["id"]]
    seat = next(i for i, p in enumerate(v["players"]) if p["id"] == ps[0]["id"])
    fresh = db_exec(d.db, "SELECT max(coalesce((SELECT max(id) FROM outbox), 0),"
                          " coalesce((SELECT max(id) FROM outbox_fresh), 0)) + 1")[0][0]
    db_exec(d.db, "INSERT INTO outbox_fresh (id, player_id, type, match_id, seq, webhook_id,"
                  " body, created_at, seat, destination, channels, next_attempt)"
                  " VALUES (?, ?, 'turn', ?, ?, 'msg_fresh_copied', '', 1, ?, ?, 2, 1)",
            (fresh, ps[0]["id"], running["id"], v["seq"], seat, "127.0.0.1:%d" % hooks.port))
    before["pending"].append(fresh * 2 + 1)
    before["pending"].sort()
    return d, ps, running["id"], lg["id"], before


def test_round_trip():
    check(PG, "CARDPOST_TEST_PG names the database")
    hooks = WebhookReceiver(TMP, "hooks").start()
    src, ps, running, league, before = build_sqlite(hooks)

    p = migrate(src.db)
    check(p.returncode == 0, "cardpost migrate-db exits 0 (got %d: %s %s)"
          % (p.returncode, p.stdout, p.stderr))
    out = json.loads(p.stdout)
    print("  %s" % p.stdout.strip())
    check(out["matches_verified"] == 9 and out["finished"] == 3,
          "it verified every match: 3 + the league's 6, 3 finished (%r)" % out)
    check(out["rows"] > 0 and out["tables"] >= 10, "it copied the tables (%r)" % out)
    again = migrate(src.db)
    check(again.returncode == 1 and "not empty" in again.stderr,
          "a second copy into the same database is refused (%d %s)"
          % (again.returncode, again.stderr))

    d = Daemon().start()  # on CARDPOST_TEST_PG
    for mid, v in before["views"].items():
        check(d.view(mid) == v, "match %d's view is the same on PostgreSQL" % mid)
    for mid, lg in before["logs"].items():
        got = d.log(mid)
        check(got == lg, "match %d's log is byte for byte the same" % mid)
        verify_log(got, TMP, "m%d" % mid)
    check(ok(d.request("GET", "/v1/leagues/%d/standings" % league), 200, "standings")
          == before["standings"], "the league's standings are the same")

    # The pending deliveries go out once the receiver answers again and their retry is due.
    hooks.set_status(204)
    n0 = len([r for r in hooks.records() if r["answered"] == 204])
    d.advance(3600)
    wait_for(lambda: all(x["status"] != "pending" for p in ps for x in deliveries(d, p)),
             "every pending delivery delivered from PostgreSQL")
    delivered = {x["id"] for p in ps for x in deliveries(d, p) if x["status"] == "delivered"}
    check(set(before["pending"]) <= delivered, "the pending ones were delivered (the fresh"
          " row's too)")
    check(len([r for r in hooks.records() if r["answered"] == 204]) > n0,
          "the receiver got them")

    # The running match goes on at its seq; new rows get new ids.
    v = d.view(running)
    s = v["to_move"][0]
    mv = d.view(running, ps[s]["token"])["legal"][0]
    st, _, body = d.move(running, ps[s]["token"], mv, seq=v["seq"])
    check(st == 201 and body["seq"] > v["seq"], "a move of the running match -> 201 (got %d %r)"
          % (st, body))
    newp = player(d, "after", hooks.url("/hook"))
    check(newp["id"] > max(p["id"] for p in ps), "a new player gets a new id")
    m = d.create("snag", [newp, ps[0]])
    check(m["id"] > max(before["views"]), "a new match gets a new id")
    lg = ok(d.request("POST", "/v1/leagues", {"name": "after", "game": "snag"},
                      token=newp["token"]), 201, "a new league")
    check(lg["id"] > league, "a new league gets a new id")
    d.stop()
    hooks.stop()


def test_refusals():
    p = subprocess.run([CARDPOST, "migrate-db", PG, os.path.join(TMP, "x.db")],
                       capture_output=True, text=True)
    check(p.returncode == 1 and "SQLite file to a postgresql://" in p.stderr,
          "PostgreSQL to SQLite is refused (%d %s)" % (p.returncode, p.stderr))
    p = subprocess.run([CARDPOST, "migrate-db", "only-one"], capture_output=True, text=True)
    check(p.returncode == 2, "bad usage exits 2")


if __name__ == "__main__":
    run([test_round_trip, test_refusals])
