#!/usr/bin/python3
# test_identity.py - identity and secrets end to end (docs/security.md "Identity and
# secrets"): an email address is confirmed by the code of its one confirmation email (read
# from the real SMTP server of tests/peers/) before any other email goes to it; confirmation
# emails are rate-limited per address and per player (429 with Retry-After); a token rotated
# by its player or revoked by the operator stops working on the next request, cached or not;
# the database and its -wal and -shm files are 0600; the operator token comes from a file and
# a short one is refused at start; an existing database's addresses count as confirmed.
import email
import email.policy
import glob
import hashlib
import os
import re
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import CARDPOSTD, OPERATOR, Daemon, SmtpSink, check, check_problem, \
    confirmation_code, is_confirmation, wait_for  # noqa: E402

MAIL_FROM = "cardpost@id.test"
MIGRATIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "migrations")


def world(name, **env):
    tmp = tempfile.mkdtemp(prefix="cardpost-identity-%s-" % name)
    harness.TEMP_DIRS.append(tmp)
    sink = SmtpSink(tmp, "smtp").start()
    e = {"CARDPOST_SMTP_URL": sink.url(), "CARDPOST_MAIL_FROM": MAIL_FROM,
         "CARDPOST_TEST_CLOCK": "1"}
    e.update(env)
    return tmp, sink, Daemon(tmp=tmp, env=e)


def register(d, name, address=None):
    # (seated without being asked, so that the matches of these tests start at once)
    body = {"name": name, "preferences": {"seat_without_asking": True}}
    if address:
        body["email"] = address
    st, _, p = d.request("POST", "/v1/players", body)
    check(st == 201, "register %s -> 201 (got %d %r)" % (name, st, p))
    check(p["email_confirmed"] is False, "a new address is unconfirmed")
    return p


def me(d, p):
    st, _, r = d.request("GET", "/v1/players/me", token=p["token"])
    check(st == 200, "GET /v1/players/me -> 200 (got %d %r)" % (st, r))
    return r


def mails_to(sink, address):
    """(confirmations, other emails) the sink received for `address`: [(raw, message)]."""
    conf, other = [], []
    for raw, env in sink.messages():
        if address in env["rcpt_tos"]:
            msg = email.message_from_bytes(raw, policy=email.policy.default)
            (conf if is_confirmation(raw) else other).append((raw, msg))
    return conf, other


def settle(d, players):
    """Every email delivery of these players was tried (or there are none)."""
    def done():
        for p in players:
            st, _, r = d.request("GET", "/v1/players/me/deliveries", token=p["token"])
            if st != 200 or any(x["status"] == "pending" and x["channel"] == "email"
                                for x in r["deliveries"]):
                return False
        return True
    wait_for(done, "every delivery was tried")


def confirm(d, p, code):
    return d.request("POST", "/v1/players/me/email/confirm", {"code": code}, token=p["token"])


# ---- 1. Confirmation before any other email --------------------------------------------------

def test_confirmation_before_email():
    tmp, sink, d = world("confirm")
    with d:
        a = register(d, "ann", "ann@id.test")
        b = register(d, "bob")
        code = confirmation_code(sink, "ann@id.test")
        check(me(d, a)["email_confirmed"] is False, "unconfirmed until the code comes back")

        # A match while the address is unconfirmed: no email for it, only the confirmation.
        m1 = d.create("horseshoe", [a, b])
        st, _, r = d.request("GET", "/v1/players/me/deliveries", token=a["token"])
        check(st == 200 and [x["type"] for x in r["deliveries"]] == ["email_confirm"],
              "only the confirmation email is queued for an unconfirmed address (%r)"
              % [x["type"] for x in r["deliveries"]])
        settle(d, [a])
        conf, other = mails_to(sink, "ann@id.test")
        check(len(conf) == 1 and not other, "exactly one email, the confirmation (%d, %d)"
              % (len(conf), len(other)))
        msg = conf[0][1]
        check(msg["To"] == "ann@id.test" and "Confirm" in msg["Subject"] and
              msg["In-Reply-To"] is None and msg["Reply-To"] is None,
              "the confirmation is a plain message to the address, in no thread")

        # Wrong ways to confirm.
        check_problem(confirm(d, a, "cpc_" + "0" * 32), 422, "bad_code", "a wrong code")
        check_problem(confirm(d, a, 7), 422, "bad_code", "a code that is no string")
        check_problem(d.request("POST", "/v1/players/me/email/confirm", {}, token=a["token"]),
                      400, "missing_field", "no code")
        check_problem(d.request("POST", "/v1/players/me/email/confirm", {"code": code}), 401,
                      "unauthorized", "no token")
        check_problem(confirm(d, b, code), 409, "no_email", "another player without an address")
        check_problem(d.request("POST", "/v1/players/me/email/confirm", {"code": code},
                                token=OPERATOR), 403, "forbidden", "the operator's token")
        check_problem(d.request("GET", "/v1/players/me/email/confirm", token=a["token"]), 405,
                      "method_not_allowed", "GET on the confirmation")
        check(me(d, a)["email_confirmed"] is False, "still unconfirmed after wrong codes")

        st, _, r = confirm(d, a, code)
        check(st == 200 and r["email_confirmed"] is True and r["email"] == "ann@id.test",
              "the code of the email confirms the address (%d %r)" % (st, r))
        st, _, r = confirm(d, a, code)
        check(st == 200 and r["email_confirmed"] is True, "confirming again is harmless")

        # Now emails flow.
        m2 = d.create("horseshoe", [a, b])
        wait_for(lambda: mails_to(sink, "ann@id.test")[1], "a notification email arrives")
        subjects = [str(m["Subject"]) for _, m in mails_to(sink, "ann@id.test")[1]]
        check(all(("match %d" % m2["id"]) in s for s in subjects),
              "the emails are about the match made after the confirmation (%r; first %d)"
              % (subjects, m1["id"]))

        # Other fields change; the confirmation stays.
        for change in ({"preferences": {"email": {"reminder": False}}},
                       {"webhook_url": "https://hooks.id.test/ann"}, {"email": "ann@id.test"}):
            st, _, r = d.request("PATCH", "/v1/players/me", change, token=a["token"])
            check(st == 200 and r["email_confirmed"] is True,
                  "PATCH %r keeps the address confirmed (%d %r)" % (change, st, r))
        check(len(mails_to(sink, "ann@id.test")[0]) == 1, "no new confirmation email")

        # A new address needs its own confirmation; the old code does nothing for it.
        st, _, r = d.request("PATCH", "/v1/players/me", {"email": "ann2@id.test"},
                             token=a["token"])
        check(st == 200 and r["email"] == "ann2@id.test" and r["email_confirmed"] is False,
              "a changed address is unconfirmed (%d %r)" % (st, r))
        code2 = confirmation_code(sink, "ann2@id.test")
        check(code2 != code, "a new code")
        check_problem(confirm(d, a, code), 422, "bad_code", "the old address's code")
        d.create("horseshoe", [a, b])
        settle(d, [a])
        check(not mails_to(sink, "ann2@id.test")[1], "no notification to the new address yet")
        check(len(mails_to(sink, "ann2@id.test")[0]) == 1, "one confirmation to it")
        st, _, r = confirm(d, a, code2)
        check(st == 200 and r["email_confirmed"] is True, "the new address is confirmed")
        d.create("horseshoe", [a, b])
        wait_for(lambda: mails_to(sink, "ann2@id.test")[1], "emails go to the new address")

        # No address at all: nothing to confirm.
        st, _, r = d.request("PATCH", "/v1/players/me", {"email": None}, token=a["token"])
        check(st == 200 and r.get("email") is None and r["email_confirmed"] is False,
              "no address: not confirmed (%r)" % r)
    sink.stop()


def test_mail_answer_needs_confirmation():
    """A reply by email is played, but its answer goes to the address only if confirmed: a
    player who moved to a new, unconfirmed address gets no answer there."""
    tmp, sink, d = world("answer")
    with d:
        a = register(d, "ann", "ann@id.test")
        b = register(d, "bob")
        harness.confirm_email(d, sink, a)
        m = d.create("horseshoe", [a, b])
        # The match_started email to ann holds the signed play+ address of her seat.
        mail = wait_for(lambda: [x for _, x in mails_to(sink, "ann@id.test")[1]
                                 if x["Reply-To"]], "a turn email with a play+ address")[0]
        st, _, r = d.request("PATCH", "/v1/players/me", {"email": "new@id.test"},
                             token=a["token"])
        check(st == 200 and r["email_confirmed"] is False, "a new, unconfirmed address")
        raw = ("From: new@id.test\r\nTo: %s\r\nSubject: Re: %s\r\nMessage-ID: <r1@id.test>\r\n"
               "\r\nshow\r\n" % (mail["Reply-To"], mail["Subject"])).encode()
        st, _, r = d.request("POST", "/v1/mail/inbound", raw=raw, token=OPERATOR,
                             headers={"Content-Type": "message/rfc822"})
        check(st == 200 and r["outcome"] == "shown" and r["match"] == m["id"],
              "the reply is read (%d %r)" % (st, r))
        settle(d, [a])
        st, _, r = d.request("GET", "/v1/players/me/deliveries", token=a["token"])
        check(not [x for x in r["deliveries"] if x["type"] == "mail_reply"],
              "no answer is queued for an unconfirmed address")
        check(not mails_to(sink, "new@id.test")[1] and
              len(mails_to(sink, "ann@id.test")[1]) == 1,
              "no answer went anywhere")
    sink.stop()


# ---- 2. Rate limits of the confirmation emails ----------------------------------------------

def test_confirmation_rate_limits():
    tmp, sink, d = world("limits", CARDPOST_CONFIRM_PER_PLAYER="3",
                         CARDPOST_CONFIRM_PER_ADDRESS="2")
    with d:
        p = register(d, "pat", "p0@id.test")
        for i in (1, 2):
            st, _, r = d.request("PATCH", "/v1/players/me", {"email": "p%d@id.test" % i},
                                 token=p["token"])
            check(st == 200 and r["email"] == "p%d@id.test" % i, "change %d -> 200" % i)
        resp = d.request("PATCH", "/v1/players/me", {"email": "p3@id.test",
                                                     "preferences": {"email": {"turn": False}}},
                         token=p["token"])
        check_problem(resp, 429, "confirmation_rate_limited", "a 4th confirmation in an hour")
        retry = int(resp[1].get("retry-after", "0"))
        check(1 <= retry <= 3600, "429 says when to retry (Retry-After %r)" % retry)
        r = me(d, p)
        check(r["email"] == "p2@id.test" and r["preferences"]["email"]["turn"] is True,
              "a refused change changes nothing (%r)" % r)
        # Resending to the same unconfirmed address counts too.
        check_problem(d.request("PATCH", "/v1/players/me", {"email": "p2@id.test"},
                                token=p["token"]), 429, "confirmation_rate_limited",
                      "a resend beyond the limit")

        # Per address, across players (any case of the address).
        register(d, "q", "shared@id.test")
        register(d, "r", "Shared@ID.test")
        resp = d.request("POST", "/v1/players", {"name": "s", "email": "SHARED@id.test"})
        body = check_problem(resp, 429, "confirmation_rate_limited", "a 3rd to one address")
        check(int(resp[1]["retry-after"]) >= 1, "Retry-After is set (%r)" % body)
        st, _, t = d.request("POST", "/v1/players", {"name": "t", "email": "other@id.test"})
        check(st == 201, "another address is not limited (%d %r)" % (st, t))

        # After the hour, again.
        d.advance(3601)
        st, _, r = d.request("PATCH", "/v1/players/me", {"email": "p3@id.test"},
                             token=p["token"])
        check(st == 200 and r["email"] == "p3@id.test", "an hour later: allowed (%d %r)"
              % (st, r))
        settle(d, [p])
        st, _, r = d.request("GET", "/v1/players/me/deliveries", token=p["token"])
        rows = [x for x in r["deliveries"] if x["type"] == "email_confirm"]
        check(len(rows) == 4, "4 confirmation emails for pat, one per accepted change (got %d)"
              % len(rows))
        check(rows[0]["status"] == "delivered" and len(mails_to(sink, "p3@id.test")[0]) == 1,
              "the last one arrived")
        # One superseded before it went out is not sent to the address given up.
        for x in rows[1:]:
            check(x["status"] == "delivered" or (x["status"] == "dead" and
                                                 "changed meanwhile" in x["last_error"]),
                  "an earlier confirmation was sent, or dropped as superseded (%r)" % x)
        shared = [m for m in sink.messages() if is_confirmation(m[0]) and
                  m[1]["rcpt_tos"][0].lower() == "shared@id.test"]
        check(len(shared) == 2, "2 to the shared address, none for the registration refused "
              "(got %d)" % len(shared))
    sink.stop()


# ---- 3. Tokens: rotation and revocation -------------------------------------------------------

def test_token_rotation_and_revocation():
    with Daemon() as d:
        a = d.player("rot-a")
        b = d.player("rot-b")
        m = d.create("horseshoe", [a, b])
        for _ in range(3):  # in the daemon's token cache now
            me(d, a)
        st, _, r = d.request("POST", "/v1/players/me/token", token=a["token"])
        check(st == 200 and r["id"] == a["id"] and re.fullmatch(r"cpt_[0-9a-f]{64}", r["token"])
              and r["token"] != a["token"], "rotation -> 200 with a new token (%d %r)" % (st, r))
        check_problem(d.request("GET", "/v1/players/me", token=a["token"]), 401,
                      "unauthorized", "the old (cached) token right after the rotation")
        check_problem(d.request("POST", "/v1/players/me/token", token=a["token"]), 401,
                      "unauthorized", "rotating with the old token")
        new = dict(a, token=r["token"])
        check(me(d, new)["id"] == a["id"], "the new token works")
        check(d.view(m["id"], new["token"])["you"] == 0, "the seat is the player's still")
        check_problem(d.request("POST", "/v1/players/me/token"), 401, "unauthorized",
                      "rotation without a token")
        check_problem(d.request("POST", "/v1/players/me/token", token=OPERATOR), 403,
                      "forbidden", "the operator has no token of its own to rotate")

        # Revocation by the operator.
        me(d, b)
        path = "/v1/players/%d/token" % b["id"]
        check_problem(d.request("DELETE", path, token=b["token"]), 403, "forbidden",
                      "a player revokes")
        check_problem(d.request("DELETE", path), 401, "unauthorized", "anonymous revokes")
        check_problem(d.request("DELETE", "/v1/players/999999/token", token=OPERATOR), 404,
                      None, "revoking an unknown player")
        st, _, r = d.request("DELETE", path, token=OPERATOR)
        check(st == 204, "the operator revokes -> 204 (got %d %r)" % (st, r))
        check_problem(d.request("GET", "/v1/players/me", token=b["token"]), 401,
                      "unauthorized", "a revoked (cached) token right after")
        check_problem(d.request("POST", "/v1/matches/%d/moves" % m["id"], {"move": "x"},
                                token=b["token"]), 401, "unauthorized", "a move with it")
        check_problem(d.request("POST", path, token=new["token"]), 403, "forbidden",
                      "another player issues a token")
        st, _, r = d.request("POST", path, token=OPERATOR)
        check(st == 200 and r["id"] == b["id"] and r["token"].startswith("cpt_"),
              "the operator issues a new token (%d %r)" % (st, r))
        check(me(d, dict(b, token=r["token"]))["id"] == b["id"], "the issued token works")
        check_problem(d.request("GET", "/v1/players/me", token=b["token"]), 401,
                      "unauthorized", "the revoked token stays revoked")
        check_problem(d.request("PUT", path, token=OPERATOR), 405, "method_not_allowed",
                      "PUT on a player's token")


# ---- 4. Secrets on disk and in ps ----------------------------------------------------------

def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_database_files_are_private():
    if os.environ.get("CARDPOST_TEST_PG"):
        print("  (SQLite's files only: a PostgreSQL database is the server's files)")
        return
    old = os.umask(0o022)  # what a shell usually has: files 0644 unless asked otherwise
    try:
        d = Daemon()
        with d:
            a, b = d.player("disk-a"), d.player("disk-b")
            m = d.create("horseshoe", [a, b])
            seat = d.view(m["id"])["to_move"][0]
            who = (a, b)[seat]
            v = d.view(m["id"], who["token"])
            st, _, _ = d.move(m["id"], who["token"], v["legal"][0])
            check(st == 201, "a move was written")
            for suffix in ("", "-wal", "-shm"):
                check(os.path.exists(d.db + suffix), "%s exists while serving" % (d.db + suffix))
                check(mode(d.db + suffix) == 0o600, "%s is 0600 (got %o)"
                      % (d.db + suffix, mode(d.db + suffix)))
        # A database made before (0644) is narrowed at the next start.
        os.chmod(d.db, 0o644)
        with Daemon(db=d.db, tmp=d.tmp) as d2:
            for suffix in ("", "-wal", "-shm"):
                check(mode(d2.db + suffix) == 0o600, "after a restart %s is 0600 (got %o)"
                      % (d2.db + suffix, mode(d2.db + suffix)))
    finally:
        os.umask(old)


def start_raw(args, env=None, tmp=None):
    """cardpostd with exactly these arguments (after --db and --listen): (process, stderr
    path). The caller waits or reads the banner."""
    tmp = tmp or tempfile.mkdtemp(prefix="cardpost-identity-raw-")
    harness.TEMP_DIRS.append(tmp)
    err = os.path.join(tmp, "stderr")
    e = dict(os.environ)
    e.pop("CARDPOST_OPERATOR_TOKEN", None)
    e.update(env or {})
    with open(err, "wb") as f:
        p = subprocess.Popen([CARDPOSTD, "--db", os.path.join(tmp, "db"), "--listen",
                              "127.0.0.1:0"] + args, stdout=subprocess.PIPE, stderr=f, env=e)
    return p, err, tmp


def refused(args, env=None, what=""):
    p, err, tmp = start_raw(args, env)
    try:
        rc = p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise harness.Failure("%s: cardpostd did not refuse to start" % what)
    p.stdout.close()
    with open(err) as f:
        msg = f.read()
    check(rc != 0, "%s: exit non-zero (got %d)" % (what, rc))
    check(not os.path.exists(os.path.join(tmp, "db")), "%s: no database was made" % what)
    return msg


def test_operator_token_rules():
    msg = refused(["--operator-token", "short-token"], what="a short token on the command line")
    check("at least 32" in msg and "11 characters" in msg, "the message says why: %r" % msg)
    msg = refused([], {"CARDPOST_OPERATOR_TOKEN": "x" * 31}, what="31 characters from the env")
    check("at least 32" in msg, "the message says why: %r" % msg)

    tmp = tempfile.mkdtemp(prefix="cardpost-identity-token-")
    harness.TEMP_DIRS.append(tmp)
    short = os.path.join(tmp, "short")
    with open(short, "w") as f:
        f.write("abc\n")
    msg = refused(["--operator-token-file", short], what="a short token in a file")
    check("at least 32" in msg, "the message says why: %r" % msg)
    msg = refused(["--operator-token-file", os.path.join(tmp, "missing")],
                  what="a token file that does not exist")
    check("operator_token_file" in msg and "missing" in msg, "the message names it: %r" % msg)

    token = "t" * 20 + "0123456789abcdefghij"  # 40 characters
    good = os.path.join(tmp, "good")
    with open(good, "w") as f:
        f.write(token + "\n")
    os.chmod(good, 0o600)
    for args, env in ((["--operator-token-file", good], None),
                      ([], {"CARDPOST_OPERATOR_TOKEN_FILE": good})):
        p, err, _ = start_raw(args, env)
        try:
            line = p.stdout.readline().decode()
            m = re.search(r"127\.0\.0\.1:(\d+)", line)
            check(m, "cardpostd started with the token file %r (%r)" % (args or env, line))
            d = Daemon()
            d.port = int(m.group(1))
            st, _, r = d.request("GET", "/v1/admin/stats", token=token)
            check(st == 200 and "commits" in r, "the token from the file is the operator's "
                  "(%d %r)" % (st, r))
            check_problem(d.request("GET", "/v1/admin/stats", token=token + "x"), 401,
                          "unauthorized", "another token")
            with open("/proc/%d/cmdline" % p.pid, "rb") as f:
                check(token.encode() not in f.read(), "the token is not in the command line")
            with open("/proc/%d/environ" % p.pid, "rb") as f:
                check(token.encode() not in f.read(), "nor in the environment")
        finally:
            p.terminate()
            p.wait(timeout=10)
            p.stdout.close()


# ---- 5. An existing database ---------------------------------------------------------------

def test_existing_addresses_count_as_confirmed():
    """A database from before migration 0009 (every earlier migration applied by hand, a
    player with an address and one without): the address counts as confirmed."""
    tmp = tempfile.mkdtemp(prefix="cardpost-identity-migrate-")
    harness.TEMP_DIRS.append(tmp)
    db = os.path.join(tmp, "old.db")
    c = sqlite3.connect(db)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
              " applied_at INTEGER NOT NULL)")
    for path in sorted(glob.glob(os.path.join(MIGRATIONS, "*.sql"))):
        name = os.path.basename(path)[:-4]
        version = int(name[:4])
        if version >= 9:
            continue
        with open(path) as f:
            c.executescript(f.read())
        c.execute("INSERT INTO schema_migrations VALUES (?, ?, 0)", (version, name))
    tokens = {"old-a": "cpt_" + "a" * 64, "old-b": "cpt_" + "b" * 64}
    for name, email_addr in (("old-a", "old-a@id.test"), ("old-b", None)):
        c.execute("INSERT INTO players (name, email, token_hash, created_at) VALUES (?, ?, ?, 1)",
                  (name, email_addr, hashlib.sha256(tokens[name].encode()).digest()))
    c.commit()
    c.close()
    with Daemon(db=db, tmp=tmp) as d:
        a = me(d, {"token": tokens["old-a"]})
        check(a["email"] == "old-a@id.test" and a["email_confirmed"] is True,
              "an existing address is confirmed after the migration (%r)" % a)
        b = me(d, {"token": tokens["old-b"]})
        check(b["email_confirmed"] is False, "no address: not confirmed")
    c = sqlite3.connect(db)
    check(c.execute("SELECT count(*) FROM schema_migrations WHERE version = 9").fetchone()[0]
          == 1, "0009 is recorded")
    c.close()


if __name__ == "__main__":
    harness.run([test_token_rotation_and_revocation, test_database_files_are_private,
                 test_operator_token_rules, test_existing_addresses_count_as_confirmed,
                 test_confirmation_before_email, test_mail_answer_needs_confirmation,
                 test_confirmation_rate_limits])
