#!/usr/bin/python3
# test_outbox_procs.py - the outbox shared by several cardpostd processes on one PostgreSQL
# database (issue 15; run by tests/pg/run-with-pg.sh, which names the database in
# CARDPOST_TEST_PG). Each process's delivery loops claim the rows they deliver (FOR UPDATE
# SKIP LOCKED, then a lease): two processes delivering at once never deliver a row twice,
# and a row claimed by a process killed mid-delivery is delivered by another once the lease
# ran out, not before; a record waits for no lock on its destination's other rows, and one
# undone by a deadlock with another transaction is written again.
import json
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
import harness  # noqa: E402
from harness import Daemon, SmtpSink, WebhookReceiver, check, wait_for  # noqa: E402
from test_notify import MAIL_FROM, PUBLIC_URL, Match, all_delivered, check_webhooks_exact, \
    deliveries, register  # noqa: E402


def peers_and_env(name):
    tmp = tempfile.mkdtemp(prefix="cardpost-procs-%s-" % name)
    harness.TEMP_DIRS.append(tmp)
    sink = SmtpSink(tmp, "smtp").start()
    recv = WebhookReceiver(tmp, "hooks").start()
    env = {"CARDPOST_SMTP_URL": sink.url(), "CARDPOST_MAIL_FROM": MAIL_FROM,
           "CARDPOST_PUBLIC_URL": PUBLIC_URL, "CARDPOST_TEST_CLOCK": "1",
           "CARDPOST_ALLOW_PRIVATE_WEBHOOKS": "1"}
    return tmp, sink, recv, env


def daemon(env, sink, name):
    """A cardpostd on the test's database with a directory (and so a log) of its own."""
    tmp = tempfile.mkdtemp(prefix="cardpost-procs-%s-" % name)
    harness.TEMP_DIRS.append(tmp)
    d = Daemon(tmp=tmp, env=env)
    d.sink = sink  # register() confirms addresses through it
    return d


def delivered_by(d):
    """The rows this process's log says it delivered: {outbox id}."""
    out = set()
    with open(os.path.join(d.tmp, "cardpostd.stderr")) as f:
        for line in f:
            if '"event":"delivery"' in line:
                rec = json.loads(line)
                if rec.get("outcome") == "delivered" and rec["type"] != "email_confirm":
                    out.add(rec["outbox"])
    return out


def test_two_processes_deliver_each_row_once():
    """Two processes, each playing matches of its own, both delivering: every notification
    arrives exactly once (one POST per webhook-id, one email per Message-ID), and each
    process delivered some."""
    check(os.environ.get("CARDPOST_TEST_PG"), "run by run-with-pg.sh (CARDPOST_TEST_PG)")
    tmp, sink, recv, env = peers_and_env("once")
    a, b = daemon(env, sink, "a"), daemon(env, sink, "b")
    with a, b:
        ps = [register(a if i % 2 else b, "p%d" % i, recv) for i in range(16)]
        matches = []
        for k in range(4):
            d = a if k % 2 else b
            seats = ps[4 * k:4 * k + 4]  # (a player in one match: notes named by seq)
            m = Match(d, seats, clock=None)
            matches.append(m)
        for _ in range(30):
            for m in matches:
                if not m.over():
                    m.step()
        expected = [x for m in matches for x in m.expected]
        wait_for(lambda: all_delivered(a, ps, 2 * len(set(expected))), "everything arrives",
                 timeout=60)
        time.sleep(1)  # (a second delivery, were there one, would come now)
        got = check_webhooks_exact(recv, ps, expected, "two processes")
        posts = recv.records()
        ids = [r["headers"]["webhook-id"] for r in posts]
        check(len(ids) == len(set(ids)) == len(got),
              "each webhook was POSTed once (%d POSTs, %d ids)" % (len(ids), len(set(ids))))
        msg_ids = [raw.split(b"Message-ID: ", 1)[1].split(b"\r\n", 1)[0]
                   for raw, _ in sink.messages() if b"cardpost-confirm-" not in raw]
        check(len(msg_ids) == len(set(msg_ids)), "each email was sent once (%d emails, %d ids)"
              % (len(msg_ids), len(set(msg_ids))))
        rows = [x for p in ps for x in deliveries(a, p)]
        check(len(msg_ids) + len(ids) == len(rows) and
              all(x["attempts"] == 1 for x in rows), "every row was attempted once, by one "
              "process (%d rows, %d deliveries)" % (len(rows), len(msg_ids) + len(ids)))
        by_a, by_b = delivered_by(a), delivered_by(b)
        check(not (by_a & by_b), "no row was delivered by both processes")
        check(by_a and by_b and len(by_a | by_b) == len(rows),
              "both processes delivered (%d and %d of %d)" % (len(by_a), len(by_b), len(rows)))
        print("    %d rows: %d delivered by one process, %d by the other"
              % (len(rows), len(by_a), len(by_b)))
    sink.stop()
    recv.stop()


def test_killed_process_claim_is_retried():
    """A process claims a webhook and dies while the receiver holds the request: the other
    process leaves the row alone while the claim's lease lasts, then delivers it (the same
    webhook-id and bytes), and it is recorded once, as delivered."""
    tmp, sink, recv, env = peers_and_env("kill")
    a = daemon(env, sink, "a").start()
    slow = register(a, "slow", recv, path="/slow/3/hook/slow")
    others = [register(a, "o%d" % i) for i in range(3)]
    Match(a, [slow] + others, clock=None)
    first = wait_for(lambda: [r for r in recv.records() if r["path"].startswith("/slow/")],
                     "the webhook reached the slow receiver")[0]
    rc, _ = a.stop(signal.SIGKILL)
    check(rc == -signal.SIGKILL, "the process delivering it was killed")
    b = daemon(env, sink, "b")
    with b:
        time.sleep(2)
        hooks = [x for x in deliveries(b, slow) if x["channel"] == "webhook"]
        check(len(hooks) == 1 and hooks[0]["status"] == "pending" and hooks[0]["attempts"] == 0,
              "the row is pending, its attempt never recorded (%r)" % hooks)
        check(len(recv.records()) == 1, "while the lease lasts nobody else delivers it")
        b.advance(120)  # past the lease of the process that died
        row = wait_for(lambda: [x for x in deliveries(b, slow) if x["channel"] == "webhook"
                                and x["status"] == "delivered"], "the other process delivers "
                       "it once the lease ran out", timeout=20)[0]
        recs = [r for r in recv.records() if r["path"].startswith("/slow/")]
        check(len(recs) == 2 and recs[1]["headers"]["webhook-id"] ==
              first["headers"]["webhook-id"] == row["webhook_id"] and
              recs[1]["body"] == first["body"], "the retry carries the same webhook-id and bytes")
        check(row["attempts"] == 1, "one attempt recorded: the dead process's left no trace")
    sink.stop()
    recv.stop()


def test_record_beside_held_row():
    """A record does not wait for another transaction's lock on one of its destination's
    other rows (storage/postgres/outbox.c: a success makes the destination's held rows due,
    those nobody holds): with two rows of a player held by a receiver that was down and a
    transaction of the test holding one, the other is delivered and recorded meanwhile; the
    one held is delivered once the test lets go, each once. (They waited for each other's
    rows before, a deadlock the server broke after a second, with every write of the
    process queued behind it.)"""
    import psycopg2
    tmp, sink, recv, env = peers_and_env("held")
    a = daemon(env, sink, "a").start()
    p = register(a, "hr", recv)
    others = [register(a, "o%d" % i) for i in range(3)]
    recv.stop()
    Match(a, [p] + others, clock=None)
    Match(a, [p] + others, clock=None)

    def hooks():
        return [x for x in deliveries(a, p) if x["channel"] == "webhook"]
    held = wait_for(lambda: (lambda h: h if len(h) == 2 and all(x["attempts"] == 1 for x in h)
                             else None)(hooks()), "both webhooks failed once (the receiver down)")
    recv.start()
    first, second = held
    c = psycopg2.connect(a.db)
    try:
        cur = c.cursor()
        cur.execute("SELECT id FROM outbox WHERE id = %s FOR UPDATE", (second["id"] // 2,))
        a.advance(600)  # both due again: the service claims the one not held and delivers it
        wait_for(lambda: [x for x in hooks() if x["id"] == first["id"] and
                          x["status"] == "delivered"],
                 "the first webhook is delivered and recorded while the test holds the other")
    finally:
        c.rollback()
        c.close()
    rows = wait_for(lambda: (lambda h: h if all(x["status"] == "delivered" for x in h)
                             else None)(hooks()), "both rows are recorded delivered", timeout=10)
    posts = [r["headers"]["webhook-id"] for r in recv.records()]
    check(sorted(posts) == sorted(x["webhook_id"] for x in rows),
          "each delivered once (%r)" % posts)
    rc, _ = a.stop()
    check(rc == 0, "cardpostd exits 0")
    sink.stop()
    recv.stop()


def test_record_deadlock_written_again():
    """A record the server undoes as one side of a deadlock is written again, not left
    claimed to be delivered twice once its lease ran out. Made to happen: while a slow
    receiver holds a webhook, a transaction of the test takes a share lock on its row; the
    service's record of the delivery then holds the row's key (its attempt's foreign key)
    and waits for the test's lock to update it; the test reaches for the whole row, and
    the server undoes the service's record (it waited first)."""
    import psycopg2
    tmp, sink, recv, env = peers_and_env("deadlock")
    a = daemon(env, sink, "a").start()
    p = register(a, "dl", recv, email_addr=False, path="/slow/1/hook/dl")
    others = [register(a, "o%d" % i) for i in range(3)]
    Match(a, [p] + others, clock=None)
    arrived = wait_for(lambda: recv.records(), "the webhook reached the slow receiver")[0]
    row = [x for x in deliveries(a, p) if x["channel"] == "webhook" and
           x["webhook_id"] == arrived["headers"]["webhook-id"]][0]
    c = psycopg2.connect(a.db)
    watch = psycopg2.connect(a.db)
    watch.autocommit = True
    try:
        cur = c.cursor()
        cur.execute("SELECT id FROM outbox WHERE id = %s FOR SHARE", (row["id"] // 2,))

        def record_waits():  # (answered a second after it arrived; then the record waits)
            w = watch.cursor()
            w.execute("SELECT count(*) FROM pg_locks WHERE NOT granted AND pid <> %s",
                      (c.get_backend_pid(),))
            return w.fetchone()[0] > 0
        wait_for(record_waits, "the service's record waits for the test's share lock")
        t0 = time.monotonic()
        cur.execute("SELECT id FROM outbox WHERE id = %s FOR UPDATE", (row["id"] // 2,))
        waited = time.monotonic() - t0
    finally:
        c.rollback()
        c.close()
        watch.close()
    check(waited > 0.3, "the test's lock waited for the service's record (%.2f s): a "
          "deadlock the server broke by undoing the service's" % waited)
    done = wait_for(lambda: [x for x in deliveries(a, p) if x["id"] == row["id"] and
                             x["status"] == "delivered"], "the row is recorded delivered",
                    timeout=10)[0]
    with open(os.path.join(a.tmp, "cardpostd.stderr")) as f:
        text = f.read()
    check("cannot record delivery" not in text, "the undone record was written again")
    check(done["attempts"] == 1 and len(recv.records()) == 1,
          "delivered once, one attempt recorded (%d POSTs)" % len(recv.records()))
    rc, _ = a.stop()
    check(rc == 0, "cardpostd exits 0")
    sink.stop()
    recv.stop()


if __name__ == "__main__":
    harness.run([test_two_processes_deliver_each_row_once, test_killed_process_claim_is_retried,
                 test_record_beside_held_row, test_record_deadlock_written_again])
