#!/usr/bin/python3
# test_outbox.py - notifications rendered at delivery (issue 18), end to end (on SQLite, and on PostgreSQL as e2e_outbox_pg): the
# real cardpostd, a real webhook receiver and SMTP server (tests/peers/). An outbox row
# written by a move holds what its delivery needs (type, recipient and seat, match, seq,
# deadline, webhook-id), not its body: the body is rendered at every attempt from the log,
# the same bytes each time, even after the match moved on and after a restart (nothing left
# in memory). And the short retry: once a delivery to a destination succeeds, the rows held
# while it could not be reached are due at once, not after their backoff.
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
import harness  # noqa: E402
from harness import Daemon, check, wait_for  # noqa: E402
from test_notify import Match, all_delivered, check_mails_exact, check_webhooks_exact, \
    deliveries, register, setup  # noqa: E402
from webhook_receiver import verify  # noqa: E402


def rows_of(db):
    """The deliveries of the outbox rows written by moves: (id, channel, seat, body, held,
    destination)."""
    return [(x["id"], x["channel"], x["seat"], x["body"], x["held"], x["destination"])
            for x in harness.outbox_deliveries(db, "WHERE match_id IS NOT NULL")]


def play_while_down(d, ps, peer, steps, channel):
    """With `peer` stopped, a match of `ps` plays `steps` moves and every notification of
    `channel` is tried once, and fails: the match, and a function reading those rows."""
    peer.stop()
    m = Match(d, ps, clock=None)
    for _ in range(steps):
        m.step()
    rows = lambda: [x for p in ps for x in deliveries(d, p) if x["channel"] == channel]
    wait_for(lambda: all(x["attempts"] >= 1 for x in rows()), "the first attempts failed")
    return m, rows


def test_same_bytes_on_every_retry():
    """The receiver fails the first two attempts of every webhook; between them the match
    moves on and the daemon restarts. Every attempt of a notification carries the same
    body, signed under its webhook-id, and that body is the seat's view at the row's seq."""
    tmp, sink, recv, d = setup("same-bytes")
    d.start()
    ps = [register(d, "p%d" % i, recv) for i in range(4)]
    recv.set_status(503)
    m = Match(d, ps, clock={"move_seconds": 86400})
    for _ in range(12):
        m.step()
    hooks = lambda: [x for p in ps for x in deliveries(d, p) if x["channel"] == "webhook"]
    wait_for(lambda: all(x["attempts"] >= 1 for x in hooks()), "every webhook was tried once")
    rows = rows_of(d.db)
    check(rows and all(r[2] is not None and r[3] == "" for r in rows),
          "the rows a move writes hold no body, only what renders it (%d rows)" % len(rows))
    check(all(r[5] == "127.0.0.1:%d" % recv.port for r in rows if r[1] == "webhook"),
          "a webhook row names its destination")
    # one row a notification (docs/service.md "Data flow of a move"): each player here wants
    # both channels, so each row a move wrote carries both, and the two deliveries of a
    # notification are those of one row
    both = harness.db_exec(d.db, "SELECT count(*), sum(CASE WHEN email_status IS NOT NULL"
                                 " AND webhook_status IS NOT NULL THEN 1 END) FROM outbox_all"
                                 " WHERE match_id IS NOT NULL")[0]
    check(both[0] > 0 and both[0] == both[1] and len(rows) == 2 * both[0],
          "every notification a move wrote is one row by both channels (%r, %d deliveries)"
          % (both, len(rows)))
    listed = [x for p in ps for x in deliveries(d, p)]
    for x in listed:
        twin = [y for y in listed if y["id"] == x["id"] ^ 1]
        check(len(twin) == 1 and twin[0]["channel"] != x["channel"] and
              twin[0]["webhook_id"] == x["webhook_id"] and twin[0]["seq"] == x["seq"],
              "a notification's email and webhook are one row's two deliveries: %r" % x)
    for _ in range(8):  # the match moves on: rendering must go back to each row's seq
        m.step()
    rc, _ = d.stop()
    check(rc == 0, "cardpostd stops")
    d = Daemon(db=d.db, tmp=tmp, env=d.env)
    with d:  # a new process: no state in memory, every body replayed from the log
        d.advance(10)
        wait_for(lambda: all(x["attempts"] >= 2 or x["status"] == "delivered"
                             for x in hooks()), "every webhook was tried twice")
        recv.set_status(204)
        d.advance(400)
        wait_for(lambda: all_delivered(d, ps, len(m.expected) * 2), "everything arrives")
        got = check_webhooks_exact(recv, ps, m.expected, "after failures and a restart")
        check_mails_exact(sink, d.db, ps, m.expected, "after a restart")
        retried = 0
        for (pid, typ, seq), by_id in got.items():
            p = [x for x in ps if x["id"] == pid][0]
            s = m.seat_of(pid)
            for wid, recs in by_id.items():
                retried += len(recs) >= 3
                check(len(set(r["body"] for r in recs)) == 1,
                      "every attempt of %s carries the same bytes" % wid)
                check(all(verify(p["webhook_secret"], r["headers"], r["body"]) for r in recs),
                      "every attempt of %s is signed over those bytes" % wid)
                data = json.loads(recs[0]["body"])["data"]
                check(data == m.views[(s, seq)], "the %s webhook of seat %d at seq %d is its "
                      "view then, though the match moved on" % (typ, s, seq))
        check(retried >= 10, "most webhooks were attempted three times (%d)" % retried)
        print("    %d notifications, %d of them failed twice before arriving"
              % (len(got), retried))
    sink.stop()
    recv.stop()


def test_short_retry_after_recovery():
    """The receiver is down: every webhook fails (connection refused) and is held for it;
    five seconds later the first to be tried again fails too, and the others due with it
    wait five minutes with it, untried. The receiver comes back; the next notification to it succeeds, and
    the rows held meanwhile arrive within seconds, the service's clock standing still."""
    tmp, sink, recv, d = setup("recovery")
    with d:
        ps = [register(d, "p%d" % i, recv) for i in range(4)]
        m, hooks = play_while_down(d, ps, recv, 10, "webhook")
        d.advance(10)
        wait_for(lambda: any(x["attempts"] >= 2 for x in hooks()) and
                 all(x["next_attempt"] - d.advance(0) > 200000 for x in hooks()),
                 "a second attempt failed, and every row waits minutes for the next")
        now = d.advance(0)
        waiting = hooks()
        check(all(x["status"] == "pending" for x in waiting), "the failed rows are pending")
        tried = sum(x["attempts"] >= 2 for x in waiting)
        check(tried < len(waiting), "the rows due with it waited without each being tried "
              "(%d of %d tried twice)" % (tried, len(waiting)))
        ids = {x["id"] for x in waiting}  # (on PostgreSQL the database holds earlier tests' rows)
        check(all(r[4] in (1, True) for r in rows_of(d.db) if r[0] in ids),
              "a row that could not reach its destination is held for it")
        recv.start()
        t0 = time.monotonic()
        m.until(lambda notes: notes)  # a new notification: it reaches the receiver, back
        wait_for(lambda: all(x["status"] == "delivered" for x in hooks()),
                 "the held rows arrive once the destination answers", timeout=10)
        took = time.monotonic() - t0
        check(d.advance(0) - now < 5000, "the service's clock stood still meanwhile")
        check_webhooks_exact(recv, ps, m.expected, "after the recovery")
        print("    %d webhooks held during the outage delivered %.1f s after the receiver "
              "came back" % (len(waiting), took))
    sink.stop()
    recv.stop()


def commits(d):
    """The group commits made so far (ok ones: /metrics)."""
    st, _, text = d.request("GET", "/metrics", token=harness.OPERATOR)
    check(st == 200, "GET /metrics -> 200")
    for line in text.splitlines():
        if line.startswith('cardpost_group_commits_total{result="ok"} '):
            return int(float(line.split()[1]))
    raise harness.Failure("no cardpost_group_commits_total in /metrics")


def backlog_commits(d, ps, peer, channel):
    """With `peer` down, a match of `ps` plays 24 moves: every notification of `channel`
    fails once and waits its backoff. Then `peer` comes back and the clock jumps past the
    backoffs: the match, the size of the backlog, and the group commits its delivery took."""
    m, rows = play_while_down(d, ps, peer, 24, channel)
    n = len(rows())
    check(n >= 16 and all(x["status"] == "pending" for x in rows()),
          "the %s notifications wait for their peer (%d)" % (channel, n))
    peer.start()
    before = commits(d)
    d.advance(3600)
    wait_for(lambda: all(x["status"] == "delivered" for x in rows()), "the backlog is sent")
    return m, n, commits(d) - before


def test_email_records_together():
    """The SMTP relay is down while a match is played: every email fails once and waits its
    backoff. The relay comes back and the clock jumps past the backoffs: the email worker
    claims eight rows at a time, sends them, and records their attempts in one write, so
    the whole backlog takes about two group commits per eight emails (a claim, the records),
    not one per email."""
    tmp, sink, recv, d = setup("records")
    with d:
        ps = [register(d, "p%d" % i) for i in range(4)]  # email only
        m, n, used = backlog_commits(d, ps, sink, "email")
        check(used <= 2 * ((n + 7) // 8) + 2, "%d emails sent and recorded in %d group commits "
              "(a claim and one write of the records for each eight)" % (n, used))
        check_mails_exact(sink, d.db, ps, m.expected, "after the relay came back")
        print("    %d emails recorded in %d group commits" % (n, used))
    sink.stop()
    recv.stop()


def test_webhook_records_with_claims():
    """The webhook receiver is down while a match is played: every webhook fails once and
    waits its backoff. The receiver comes back and the clock jumps past the backoffs: each
    pass of the dispatcher writes the records of the attempts its slots made with its next
    claim, in one write, and claims no more of the destination's rows than its free slots
    (nothing to give back). The backlog (two slots to its one destination) takes about one
    group commit a webhook (0.8 to 1.05 in runs here; 1.2 to 1.6 while a claim took rows
    for every free slot and gave back those of a full destination), not two or more (a
    claim, the slot's own record, a release for each row claimed and not taken: 54 for 23
    before that)."""
    tmp, sink, recv, d = setup("hook-records")
    with d:
        ps = [register(d, "p%d" % i, recv, email_addr=False) for i in range(4)]
        m, n, used = backlog_commits(d, ps, recv, "webhook")
        check(used <= 3 * n // 2 + 2, "%d webhooks sent and recorded in %d group commits (a "
              "pass's records written with its claim)" % (n, used))
        check_webhooks_exact(recv, ps, m.expected, "after the receiver came back")
        print("    %d webhooks recorded in %d group commits" % (n, used))
    sink.stop()
    recv.stop()


def threads_of(pid):
    """{thread id: (name, nice)} of process `pid`, from /proc."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                stat = f.read()
        except FileNotFoundError:
            continue  # (ended meanwhile)
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(tid)] = (name, int(fields[16]))  # (field 19 of proc(5): nice)
    return out


def test_deliveries_give_way():
    """The delivery threads (the email worker, the webhook dispatcher and its slots) run ten
    nice steps below the rest of the daemon, so that on a busy core a move goes first; every
    other thread keeps the process's own priority. And deliveries still go."""
    tmp, sink, recv, d = setup("nice")
    with d:
        pid = d.proc.pid
        base = os.getpriority(os.PRIO_PROCESS, pid)
        names = lambda: [n for n, _ in threads_of(pid).values()]
        # (a slot's thread is named "delivery" once it runs: "outbox" until then)
        wait_for(lambda: names().count("outbox") == 2 and "delivery" in names(),
                 "the delivery workers (email, webhooks) and the webhook slots started")
        ts = threads_of(pid).values()
        lowered = [(n, v) for n, v in ts if n in ("outbox", "delivery")]
        check(all(v == min(base + 10, 19) for _, v in lowered),
              "every delivery thread runs at nice %d: %r" % (base + 10, lowered))
        # (the rest: the HTTP workers, the streams' writer, the acceptor, the committer or,
        # on PostgreSQL, the pool's threads, the scheduler, ...)
        served = [(n, v) for n, v in ts if n not in ("outbox", "delivery")]
        check({"MHD-worker", "MHD-single"} & {n for n, _ in served}
              and all(v == base for _, v in served),
              "every other thread keeps nice %d: %r" % (base, served))
        ps = [register(d, "p%d" % i, recv) for i in range(4)]
        m = Match(d, ps, clock=None)
        for _ in range(6):
            m.step()
        wait_for(lambda: all_delivered(d, ps), "every notification is delivered")
        check_webhooks_exact(recv, ps, m.expected, "from the lowered threads")
    sink.stop()
    recv.stop()


def switches_of(pid):
    """{thread id: (name, voluntary context switches so far)} of process `pid`."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                status = dict(line.split(":\t", 1) for line in f.read().splitlines()
                              if ":\t" in line)
        except FileNotFoundError:
            continue
        out[int(tid)] = (status["Name"].strip(), int(status["voluntary_ctxt_switches"]))
    return out


def test_wakes_only_who_has_work():
    """A commit that writes outbox rows wakes the delivery workers, not the deadline
    scheduler (it looks once a second: a move's deadline is never due at once); a row handed
    to a webhook slot wakes that slot's thread, not every idle one. Measured as each thread's
    voluntary context switches (its sleeps) while a match of 40 moves is played and its
    notifications delivered: the scheduler sleeps about once a second (a few times, on
    PostgreSQL, where its queries wait for the server), not once a commit; most slots never
    wake. (Before: the scheduler slept once for each of the commits, and
    each of the eight slots once for every webhook handed out.)"""
    tmp, sink, recv, d = setup("wakes")
    with d:
        pid = d.proc.pid
        ps = [register(d, "p%d" % i, recv) for i in range(4)]
        m = Match(d, ps, clock=None)
        wait_for(lambda: all_delivered(d, ps), "the match's first notifications are delivered")
        before, start = switches_of(pid), time.monotonic()
        for _ in range(40):
            m.step()
        wait_for(lambda: all_delivered(d, ps), "every notification is delivered")
        after, took = switches_of(pid), time.monotonic() - start
        slept = {tid: (name, n - before[tid][1]) for tid, (name, n) in after.items()
                 if tid in before}
        hooks = sum(1 for p in ps for x in deliveries(d, p) if x["channel"] == "webhook")
        sched = [n for name, n in slept.values() if name == "scheduler"]
        # (a look is a sleep or a few: on PostgreSQL each query waits for the server)
        check(len(sched) == 1 and sched[0] <= 8 * (int(took) + 1),
              "the scheduler slept %r times in %.1f s (a look a second) while %d moves were "
              "played" % (sched, took, 40))
        slots = sorted(n for name, n in slept.values() if name == "delivery")
        check(len(slots) == 8 and hooks >= 30 and sum(1 for n in slots if n <= 2) >= 4,
              "most of the 8 webhook slots never woke while %d webhooks went out: %r"
              % (hooks, slots))
        print("    %.1f s: the scheduler slept %d times; the slots %r" % (took, sched[0], slots))
    sink.stop()
    recv.stop()


if __name__ == "__main__":
    harness.run([test_same_bytes_on_every_retry, test_short_retry_after_recovery,
                 test_email_records_together, test_webhook_records_with_claims,
                 test_deliveries_give_way, test_wakes_only_who_has_work])
