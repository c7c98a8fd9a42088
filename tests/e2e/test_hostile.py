#!/usr/bin/python3
# test_hostile.py - hostile text (issue 13) end to end, against the real cardpostd, the real
# SMTP server of tests/peers/ and replies piped through the real `cardpost mail-in`: email
# addresses that would inject SMTP commands are refused; a received Message-ID or Subject
# holding CR/LF (RFC 2047-encoded) never adds a header line to our answer; answers to replies
# with multi-byte UTF-8 where a buffer cuts are still played, sent and answered with JSON;
# Message-IDs differ between two fresh databases; webhook hosts must be ASCII; a slow webhook
# endpoint delays only itself (the delivery pool), and a delivery in flight at a crash is
# delivered again after the restart.
import base64
import email
import email.policy
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import test_mail  # noqa: E402
from harness import Daemon, check, check_problem, db_exec  # noqa: E402
from test_mail import World, address, as_bytes, legal_moves, reply  # noqa: E402

INJECTION = ("m@x.test>\r\nRSET\r\nMAIL FROM:<a@b>\r\nRCPT TO:<victim@elsewhere>\r\nDATA\r\n"
             "Subject: hi\r\n\r\nspam\r\n.\r\n")


def header_block(raw):
    """The header section of a received message, as text."""
    return raw.split(b"\r\n\r\n", 1)[0].decode("ascii", "replace")


def test_addresses_refused():
    with Daemon() as d:
        bad = [INJECTION, "m@x.test\r\n", "a b@x.test", "<a@x.test>", "a@x", "a@",
               "x" * 65 + "@x.test", "a@" + "b" * 250 + ".test", "a\u00e9@x.test"]
        for email in bad:
            b = check_problem(d.request("POST", "/v1/players", {"name": "x", "email": email}),
                              422, "invalid_email", "register %r" % email[:30])
            check("email" in b["detail"], "the detail names the field (%r)" % b["detail"])
        p = d.player("ok")
        for email in bad:
            check_problem(d.request("PATCH", "/v1/players/me", {"email": email},
                                    token=p["token"]), 422, "invalid_email",
                          "PATCH email %r" % email[:30])
        st, _, me = d.request("GET", "/v1/players/me", token=p["token"])
        check(st == 200 and me["email"] == "ok@x.test", "a refused PATCH changed nothing")
        st, _, me = d.request("PATCH", "/v1/players/me", {"email": "o.k+cards@mail.x.test"},
                              token=p["token"])
        check(st == 200 and me["email"] == "o.k+cards@mail.x.test", "a good address is taken")
        for name in ("a\r\nBcc: v@x.test", "a\nb", "a\tb", "a\x7fb"):
            check_problem(d.request("POST", "/v1/players", {"name": name}), 422,
                          "invalid_field", "a name with a control character %r" % name)
        print("  %d hostile addresses refused at registration and PATCH" % len(bad))


def test_stored_bad_address_never_sent():
    """An address stored before the rules (written into the database here) does not block
    PATCHes of other fields, and delivery refuses it: nothing reaches the SMTP server."""
    w = World("stored")
    try:
        ps = w.players(2, "old")
        rc, _ = w.d.stop()
        check(rc == 0, "cardpostd stops")
        db_exec(w.d.db, "UPDATE players SET email = ? WHERE id = ?", (INJECTION, ps[0]["id"]))
        w.d = Daemon(db=w.d.db, tmp=w.tmp, env=w.d.env).start()
        st, _, me = w.d.request("PATCH", "/v1/players/me",
                                {"preferences": {"email": {"reminder": False}}},
                                token=ps[0]["token"])
        check(st == 200, "a PATCH of preferences is not blocked by the stored address (%d %r)"
              % (st, me))
        w.d.create("horseshoe", ps)

        def settled():
            st, _, rows = w.d.request("GET", "/v1/players/me/deliveries", token=ps[0]["token"])
            mails = [x for x in rows["deliveries"]  # (the confirmation went to the old address)
                     if x["channel"] == "email" and x["type"] != "email_confirm"]
            return mails if mails and all(x["status"] != "pending" for x in mails) else None
        mails = harness.wait_for(settled, "the email to the stored address is settled")
        check(all(x["status"] == "dead" and "refused" in (x["last_error"] or "") for x in mails),
              "refused at delivery, not retried (%r)" % mails)
        w.wait_mail(ps[1], lambda m: "started" in m.subj, "the other player's email is sent")
        for raw, env in w.sink.messages():
            if harness.is_confirmation(raw):
                continue  # sent to the addresses as they were registered
            check(env["rcpt_tos"] == [ps[1]["email"]], "only the good address gets mail (%r)"
                  % env)
            check(b"victim" not in raw and b"RSET" not in raw, "no injected command or message")
        print("  a stored injection address: PATCH works, delivery refuses it, nothing sent")
    finally:
        w.close()


def test_webhook_hosts_refused():
    with Daemon() as d:
        p = d.player("hooky")
        for url in ("http://ex\u00e4mple.test/hook", "https://\u4f8b\u3048.jp/",
                    "http://ex%C3%A4mple.test/hook", "http://example.test\u3002/"):
            b = check_problem(d.request("POST", "/v1/players", {"name": "w", "webhook_url": url}),
                              422, "invalid_field", "register a webhook at %r" % url)
            check("ASCII" in b["detail"] or "URL" in b["detail"], "the detail says why (%r)"
                  % b["detail"])
            check_problem(d.request("PATCH", "/v1/players/me", {"webhook_url": url},
                                    token=p["token"]), 422, "invalid_field",
                          "PATCH a webhook at %r" % url)
        st, _, me = d.request("PATCH", "/v1/players/me",
                              {"webhook_url": "http://xn--exmple-cua.test/hook"}, token=p["token"])
        check(st == 200 and me["webhook_url"] == "http://xn--exmple-cua.test/hook",
              "the punycode form is taken (%d %r)" % (st, me))
        print("  non-ASCII webhook hosts refused; the punycode form accepted")


def test_slow_webhook_delays_only_itself():
    """Issue 13, defect 4: a slow endpoint (3 s an answer) gets notifications of six matches;
    another player's webhook, at another endpoint, still arrives within 2 s; the slow one gets
    each notification once, never more than webhook_per_host (2) at a time."""
    import tempfile
    import time
    tmp = tempfile.mkdtemp(prefix="cardpost-e2e-slowhook-")
    harness.TEMP_DIRS.append(tmp)
    slow = harness.WebhookReceiver(tmp, "slow").start()
    fast = harness.WebhookReceiver(tmp, "fast").start()
    try:
        with Daemon(tmp=tmp, env={"CARDPOST_ALLOW_PRIVATE_WEBHOOKS": "1"}) as d:
            def player(name, url):
                st, _, p = d.request("POST", "/v1/players", {
                    "name": name, "webhook_url": url,
                    "preferences": {"seat_without_asking": True}})
                check(st == 201, "register %s" % name)
                return p
            a = player("slowpoke", slow.url("/slow/3/a"))
            c = player("nohook", None)
            b = player("waiting", fast.url("/b"))
            for _ in range(6):
                d.create("horseshoe", [a, c])
            harness.wait_for(lambda: slow.records(), "the slow endpoint gets its first call")
            t0 = time.monotonic()
            mid = d.create("horseshoe", [b, c])["id"]
            harness.wait_for(lambda: fast.records(), "the other player's webhook arrives",
                             timeout=10)
            took = time.monotonic() - t0
            check(took < 2.0, "another endpoint's webhook waits %.2f s (< 2 s) behind a slow "
                  "one" % took)
            body = json.loads(fast.records()[0]["body"])
            check(body["type"] == "match_started" and body["data"]["id"] == mid,
                  "it is the new match's match_started")
            recs = harness.wait_for(lambda: len(slow.records()) >= 6 and slow.records(),
                                    "the slow endpoint gets all six", timeout=30)
            time.sleep(3.5)  # let the last answers finish before counting
            recs = slow.records()
            ids = [r["headers"]["webhook-id"] for r in recs]
            check(len(ids) == 6 and len(set(ids)) == 6,
                  "each notification delivered once, with its own webhook-id (%r)" % ids)
            starts = sorted(r["at"] for r in recs)
            overlap = max(sum(1 for s in starts if s <= t < s + 3.0) for t in starts)
            check(overlap <= 2, "at most 2 deliveries at once to one destination (%d)" % overlap)
            st, _, rows = d.request("GET", "/v1/players/me/deliveries", token=a["token"])
            check(st == 200, "the slow player's deliveries")
            items = [x for x in (rows["deliveries"] if isinstance(rows, dict) else rows)
                     if x["channel"] == "webhook"]
            check(len(items) == 6 and all(x["status"] == "delivered" and x["attempts"] == 1
                                          for x in items),
                  "every slow delivery recorded once, delivered (%r)" % items)
            print("  another endpoint waited %.2f s; the slow one took 6 calls, %d at a time"
                  % (took, overlap))
    finally:
        slow.stop()
        fast.stop()


def test_webhook_in_flight_crash():
    """A webhook in flight when cardpostd dies is still pending in the database: after the
    restart it is delivered again, with the same webhook-id, and recorded delivered once. (On
    PostgreSQL the dead process's claim is not cleared at the start, another process may hold
    it: the row waits out the claim's lease, which the test clock skips.)"""
    import tempfile
    tmp = tempfile.mkdtemp(prefix="cardpost-e2e-crashhook-")
    harness.TEMP_DIRS.append(tmp)
    recv = harness.WebhookReceiver(tmp, "hooks").start()
    env = {"CARDPOST_ALLOW_PRIVATE_WEBHOOKS": "1"}
    pg = harness.is_postgres(Daemon(tmp=tmp).db)
    if pg:
        env["CARDPOST_TEST_CLOCK"] = "1"
    try:
        d = Daemon(tmp=tmp, env=env).start()
        st, _, a = d.request("POST", "/v1/players", {"name": "crash",
                                                     "webhook_url": recv.url("/slow/4/x")})
        c = d.player("other")
        d.create("horseshoe", [a, c])
        harness.wait_for(lambda: recv.records(), "the delivery is in flight")
        d.kill()  # SIGKILL while the endpoint is still answering
        first = recv.records()[0]["headers"]["webhook-id"]
        d = Daemon(db=d.db, tmp=tmp, env=env).start()
        try:
            if pg:
                d.advance(600)  # past the claim's lease (notify/outbox.c lease_ms)
            again = harness.wait_for(lambda: len(recv.records()) >= 2 and recv.records()[1],
                                     "the row is delivered again after the restart", timeout=20)
            check(again["headers"]["webhook-id"] == first, "with the same webhook-id")

            def delivered():
                st, _, rows = d.request("GET", "/v1/players/me/deliveries", token=a["token"])
                hooks = [x for x in rows["deliveries"] if x["channel"] == "webhook"]
                return hooks if hooks and all(x["status"] == "delivered" for x in hooks) else None
            hooks = harness.wait_for(delivered, "recorded delivered", timeout=20)
            check(len(hooks) == 1 and hooks[0]["attempts"] == 1,
                  "one row, one recorded attempt (%r)" % hooks)
        finally:
            d.stop(timeout=10)
        print("  in flight at a crash: delivered again after the restart, same webhook-id")
    finally:
        recv.stop()


def encoded(text):
    return "=?UTF-8?B?%s?=" % base64.b64encode(text.encode()).decode()


def first_mover(w, ps, mid):
    view = w.d.view(mid)
    s = view["to_move"][0]
    p = ps[s]
    orig = w.wait_mail(p, lambda m: address(m)[2] == view["seq"] and legal_moves(m.text),
                       "seat %d's email at seq %d" % (s, view["seq"]))
    return p, orig


def mail_in_json(w, msg, what):
    rc, out, err = w.mail_in(msg if isinstance(msg, bytes) else as_bytes(msg))
    check(rc == 0, "%s: mail-in exits 0 (got %d: %r %r)" % (what, rc, out, err))
    try:
        body = json.loads(out)
    except ValueError:
        body = None
    check(isinstance(body, dict) and body.get("outcome"), "%s: a JSON outcome (got %r)"
          % (what, out))
    return body


def answer_raw(w, msg, what):
    """The exact bytes the SMTP server received for the answer threaded under `msg`."""
    mid = str(msg["Message-ID"])

    def find():
        for raw, _ in w.sink.messages():
            if ("\r\nIn-Reply-To: %s\r\n" % mid) in header_block(raw):
                return raw
        return None
    return harness.wait_for(find, "%s: the answer reaches the SMTP server" % what)


def with_match(fn):
    """Run fn(w, ps, mid) with a fresh World and a Horseshoe match of two players."""
    def test():
        w = World(fn.__name__[5:])
        try:
            ps = w.players(2, "eve")
            mid = w.d.create("horseshoe", ps)["id"]
            fn(w, ps, mid)
            w.healthy()
        finally:
            w.close()
    test.__name__ = fn.__name__
    return test


@with_match
def test_inbound_header_injection(w, ps, mid):
    # A Message-ID and a Subject that decode (RFC 2047) to CR/LF and a header.
    p, orig = first_mover(w, ps, mid)
    msg = reply(orig, p, "show")
    evil_id = "<%s@y>" % encoded("x\r\nBcc: victim@elsewhere.test")
    raw = as_bytes(msg)
    raw = re.sub(rb"(?m)^Subject:.*\r\n(?:[ \t].*\r\n)*",
                 ("Subject: %s\r\n" % encoded("Re: hi\r\nBcc: victim@elsewhere.test"))
                 .encode(), raw, count=1)
    raw = re.sub(rb"(?m)^Message-ID:.*\r\n", ("Message-ID: %s\r\n" % evil_id).encode(), raw,
                 count=1)
    raw = re.sub(rb"(?m)^References:.*\r\n(?:[ \t].*\r\n)*",
                 ("References: %s %s\r\n" % (orig["Message-ID"], evil_id)).encode(), raw,
                 count=1)
    check(evil_id.encode() in raw, "the reply carries the encoded Message-ID")
    n = len(w.sink.messages())
    rc, out, err = w.mail_in(raw)
    check(rc == 0 and json.loads(out)["outcome"] == "shown",
          "an encoded CR/LF Message-ID is still answered (%d %r %r)" % (rc, out, err))
    got = harness.wait_for(lambda: len(w.sink.messages()) > n and w.sink.messages()[n:],
                           "the answer to the hostile reply is sent")
    for raw_answer, env in got:
        head = header_block(raw_answer)
        check(not re.search(r"(?im)^bcc:", head), "no Bcc: header line (%r)" % head)
        check("victim" not in head.lower() or "Subject: Re: hi  Bcc: victim" in head,
              "the victim appears only inside the Subject's one line (%r)" % head)
        irt = re.search(r"(?m)^In-Reply-To: (.*)$", head)
        check(irt and irt.group(1).startswith("<cardpost-match-"),
              "an invalid Message-ID is not answered to: the answer threads under our own "
              "root (%r)" % head)
        check(env["rcpt_tos"] == [p["email"]], "one recipient, the player")
        for line in head.split("\r\n"):
            check(re.match(r"^([A-Za-z-]+: |[ \t])", line), "a header line: %r" % line)
    print("  an RFC 2047 CR/LF in Message-ID, References and Subject adds no header line")


@with_match
def test_inbound_utf8_subject(w, ps, mid):
    # A played move whose Subject is cut by the answer's subject buffer mid-character.
    p, orig = first_mover(w, ps, mid)
    before = w.seq(mid)
    move = legal_moves(orig.text)[0]
    msg = reply(orig, p, move)
    # 404 bytes of UTF-8 on one header line (as 8-bit mail carries it): the old 300-byte
    # subject buffer cut a character in two.
    subject = "Re: " + "\u00e9" * 200
    raw = re.sub(rb"(?m)^Subject:.*\r\n(?:[ \t].*\r\n)*",
                 b"Subject: " + subject.encode() + b"\r\n", as_bytes(msg), count=1)
    body = mail_in_json(w, raw, "a long UTF-8 subject")
    check(body["outcome"] == "played", "the move is played (%r)" % body)
    check(w.seq(mid) > before, "the log moved on")
    raw = answer_raw(w, msg, "a long UTF-8 subject")
    check(b"Played: " in raw or b"Played:" in raw.replace(b"=\r\n", b""),
          "the answer says Played")
    answer = email.message_from_bytes(raw, policy=email.policy.default)
    got = str(answer["Subject"])
    check(subject.startswith(got) and len(got.encode()) >= 290,
          "the answer's Subject is the reply's, cut on a character (%d bytes)"
          % len(got.encode()))
    print("  a move with a 404-byte UTF-8 subject: played, answered, HTTP JSON")


@with_match
def test_inbound_utf8_cut(w, ps, mid):
    # A refused command with multi-byte characters around the 80-byte cut.
    p, orig = first_mover(w, ps, mid)
    msg = reply(orig, p, "x" + "\u00e9" * 60)
    body = mail_in_json(w, msg, "a UTF-8 first line cut at 80 bytes")
    check(body["outcome"] == "refused", "a first line that is no move is refused (%r)" % body)
    check("x" + "\u00e9" * 39 + "\"" in body["detail"],
          "the detail quotes whole characters up to 80 bytes (%r)" % body["detail"])
    answer_raw(w, msg, "a UTF-8 first line cut at 80 bytes")
    # ... and the same cut on a move refused as not legal, with the move's text kept.
    msg = reply(orig, p, "play " + "\u00e9" * 60)
    body = mail_in_json(w, msg, "a UTF-8 move cut at 80 bytes")
    check(body["outcome"] == "refused", "refused (%r)" % body)
    check("play " + "\u00e9" * 37 + "\"" in body["detail"],
          "the detail quotes the move's text in whole characters up to 80 bytes (%r)"
          % body["detail"])
    answer_raw(w, msg, "a UTF-8 move cut at 80 bytes")
    print("  refused UTF-8 first lines: answered by email and by JSON, cut on characters")


def test_message_ids_per_database():
    ids = []
    for i in range(2):
        w = World("msgid%d" % i, db=harness.fresh_db())
        try:
            ps = w.players(2, "ida")
            mid = w.d.create("horseshoe", ps)["id"]
            m = w.wait_mail(ps[0], lambda x: "started" in x.subj, "match_started email")
            check(mid == 1, "a fresh database's first match is 1")
            ids.append(m.mid)
        finally:
            w.close()
    for mid in ids:
        check(re.fullmatch(r"<cardpost-match-1-player-1\.[0-9a-f]{16}@cp\.example>", mid),
              "a thread root's Message-ID with a random part: %r" % mid)
    check(ids[0] != ids[1], "two fresh databases give different Message-IDs (%r)" % ids)
    print("  two fresh databases: %s and %s" % tuple(ids))


if __name__ == "__main__":
    test_mail.RNG.seed(1)
    tests = [test_addresses_refused, test_stored_bad_address_never_sent,
             test_webhook_hosts_refused, test_slow_webhook_delays_only_itself,
             test_webhook_in_flight_crash, test_inbound_header_injection,
             test_inbound_utf8_subject, test_inbound_utf8_cut, test_message_ids_per_database]
    only = os.environ.get("ONLY")
    harness.run([t for t in tests if not only or t.__name__ == only])
