#!/usr/bin/python3
# test_mail.py - play by email end to end: the real cardpostd sends its emails to a real SMTP
# server (tests/peers/smtp_sink.py); the test answers them as a mail client would (quoted
# original, attribution, signature, multipart/alternative with HTML, quoted-printable, other
# charsets, suit symbols) through the real `cardpost mail-in` on standard input, and checks
# the log, the threaded answers with new signed Reply-To addresses, the refusals (forged and
# altered addresses, stale replies, illegal moves, unreadable bodies, oversized and broken
# messages), the commands, and whole Horseshoe, Snag and Speed matches played by email alone.
import email
import email.policy
import email.utils
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from email.message import EmailMessage

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import CARDPOST, OPERATOR, Daemon, SmtpSink, check, check_problem, \
    confirm_email, wait_for  # noqa: E402

MAIL_FROM = "cardpost@cp.example"
ADDRESS = re.compile(r"^play\+(\d+)\.(\d+)\.(\d+)\.([0-9a-f]{24})@cp\.example$")
SUIT_SYMBOL = {"C": "\u2663", "D": "\u2666", "H": "\u2665", "S": "\u2660"}
RNG = random.Random(int(os.environ.get("SEED", "0")) or random.randrange(1 << 30))


class World:
    """A temp dir with the SMTP sink, a daemon sending to it, and a token file for mail-in."""

    def __init__(self, name, db=None):
        self.tmp = tempfile.mkdtemp(prefix="cardpost-mail-%s-" % name)
        harness.TEMP_DIRS.append(self.tmp)
        self.sink = SmtpSink(self.tmp, "smtp").start()
        self.d = Daemon(db=db, tmp=self.tmp, env={"CARDPOST_SMTP_URL": self.sink.url(),
                                           "CARDPOST_MAIL_FROM": MAIL_FROM}).start()
        self.token_file = os.path.join(self.tmp, "operator-token")
        with open(self.token_file, "w") as f:
            f.write(OPERATOR + "\n")
        self.parsed = {}  # file name -> parsed message
        self.sent = 0     # replies sent through mail-in

    def close(self):
        rc, _ = self.d.stop()
        check(rc == 0, "cardpostd exits 0 on SIGTERM (got %r)" % rc)
        self.sink.stop()

    def url(self):
        return "http://127.0.0.1:%d" % self.d.port

    def players(self, n, prefix):
        out = []
        for i in range(n):
            name = "%s%d" % (prefix, i)
            st, _, p = self.d.request("POST", "/v1/players",
                                      {"name": name, "email": "%s@players.test" % name,
                                       "preferences": {"seat_without_asking": True}})
            check(st == 201, "register %s" % name)
            confirm_email(self.d, self.sink, p)  # only a confirmed address gets mail
            out.append(p)
        return out

    def mails(self):
        """Every email received so far, parsed, in arrival order: EmailMessage objects with
        .rcpt (the envelope recipient) and .text (the plain body) set."""
        out = []
        for path in self.sink.names(".eml"):
            m = self.parsed.get(path)
            if m is False:
                continue
            if m is None:
                with open(path, "rb") as f:
                    raw = f.read()
                if harness.is_confirmation(raw):  # (not a turn email: no play+ address)
                    self.parsed[path] = False
                    continue
                m = email.message_from_bytes(raw, policy=email.policy.default)
                with open(path[:-4] + ".json") as f:
                    import json
                    m.rcpt = json.load(f)["rcpt_tos"][0]
                m.text = m.get_body(("plain",)).get_content().replace("\r\n", "\n")
                # Header objects re-parse on every access: keep the strings the loops need.
                m.irt = str(m["In-Reply-To"] or "")
                m.mid = str(m["Message-ID"])
                m.subj = str(m["Subject"])
                m.seq = address(m)[2]
                self.parsed[path] = m
            out.append(m)
        return out

    def mails_to(self, player):
        return [m for m in self.mails() if m.rcpt == player["email"]]

    def mails_since(self, player, start):
        """The player's emails from index `start` of all emails on, and the new count."""
        allm = self.mails()
        return [m for m in allm[start:] if m.rcpt == player["email"]], len(allm)

    def wait_mail(self, player, pred, what, timeout=20):
        return wait_for(lambda: next((m for m in reversed(self.mails_to(player)) if pred(m)),
                                     None), what, timeout=timeout)

    def mail_in(self, raw, recipient=None, env=None, args=None):
        """Pipe one message to `cardpost mail-in`; (exit code, stdout, stderr)."""
        cmd = [CARDPOST, "mail-in"]
        cmd += args if args is not None else ["--url", self.url(), "--token-file",
                                              self.token_file]
        if recipient:
            cmd += ["--recipient", recipient]
        p = subprocess.run(cmd, input=raw, capture_output=True, timeout=60,
                           env=dict(os.environ, **(env or {})))
        self.sent += 1
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    def seq(self, mid):
        return self.d.view(mid)["seq"]

    def healthy(self):
        st, _, body = self.d.request("GET", "/healthz")
        check(st == 200 and body == {"status": "ok"}, "GET /healthz still answers ok")


def legal_moves(text):
    """The moves of the "Your legal moves (n):" section of an email's text ([] if none)."""
    m = re.search(r"^Your legal moves \((\d+)\):\n((?:  .*\n?)*)", text, re.M)
    if not m:
        return []
    out = []
    for line in m.group(2).splitlines():
        line = line.strip()
        if line.startswith("... and "):
            check(re.fullmatch(r"\.\.\. and \d+ more .*", line), "an abbreviated list says so")
            break
        out.append(line)
    check(len(out) <= int(m.group(1)), "no more moves listed than announced")
    return out


def address(m):
    """The signed Reply-To of an email: (match, seat, seq, tag)."""
    a = str(m["Reply-To"])
    g = ADDRESS.match(a)
    check(g, "a signed play+ Reply-To (got %r)" % a)
    return int(g.group(1)), int(g.group(2)), int(g.group(3)), g.group(4)


def symbols(move):
    """A move as a person might type it: suit symbols, 10 for T, odd case."""
    def card(c):
        return ("10" if c.group(1) == "T" else c.group(1).lower()) + SUIT_SYMBOL[c.group(2)]
    return re.sub(r"\b([2-9TJQKA])([CDHS])\b", card, move).upper()


def reply(orig, player, command, style="plain", to=None, extra_headers=None):
    """A reply to `orig` as a mail client writes it: the command on top, a signature, the
    attribution line and the quoted original; `style` picks the MIME shape and charset."""
    quoted = "\n".join("> " + line for line in orig.text.splitlines())
    date = orig["Date"] or "Sun, 22 Nov 2026 08:00:00 +0000"
    attribution = "On %s, cardpost <%s> wrote:" % (date, MAIL_FROM)
    sig = "-- \n%s\nSent from the test suite" % player["name"]
    msg = EmailMessage(policy=email.policy.SMTP)
    msg["From"] = "%s <%s>" % (player["name"], player["email"])
    msg["To"] = to if to is not None else str(orig["Reply-To"])
    msg["Subject"] = "Re: " + str(orig["Subject"])
    msg["Date"] = email.utils.formatdate()
    msg["Message-ID"] = email.utils.make_msgid(domain="players.test")
    msg["In-Reply-To"] = str(orig["Message-ID"])
    refs = str(orig["References"]) + " " if orig["References"] else ""
    msg["References"] = refs + str(orig["Message-ID"])
    for k, v in (extra_headers or {}).items():
        msg[k] = v
    plain = "%s\n\n%s\n\n%s\n%s\n" % (command, sig, attribution, quoted)
    if style == "plain":
        msg.set_content(plain, charset="utf-8", cte="8bit")
    elif style == "qp":
        msg.set_content(plain, charset="utf-8", cte="quoted-printable")
    elif style == "latin1":
        # A signature with accents, in ISO-8859-1 and quoted-printable.
        msg.set_content(plain.replace("Sent from", "Gr\u00fc\u00dfe, envoy\u00e9 par"),
                        charset="iso-8859-1", cte="quoted-printable")
    elif style == "base64":
        msg.set_content(plain, charset="utf-8", cte="base64")
    elif style == "alternative":
        msg.set_content(plain, charset="utf-8", cte="quoted-printable")
        html = ("<html><head><style>div {color: red}</style></head><body>"
                "<div dir=\"ltr\">%s</div><br><div class=\"gmail_quote\">%s<blockquote>%s"
                "</blockquote></div></body></html>"
                % (command.replace("&", "&amp;"), attribution,
                   orig.text.replace("&", "&amp;").replace("<", "&lt;").replace("\n", "<br>")))
        msg.add_alternative(html, subtype="html", charset="utf-8")
    elif style == "html":
        msg.set_content("<html><body><p>%s</p><p>&nbsp;</p><blockquote>%s</blockquote>"
                        "</body></html>" % (command, orig.text.replace("\n", "<br>")),
                        subtype="html", charset="utf-8")
    else:
        raise ValueError(style)
    return msg


def as_bytes(msg):
    return msg.as_bytes(policy=email.policy.SMTP)


def answered(w, player, msg, what, moved=False):
    """The service's answer to our reply `msg`: threaded under it, with a new signed Reply-To."""
    mid = str(msg["Message-ID"])
    a = w.wait_mail(player, lambda m: str(m["In-Reply-To"] or "") == mid,
                    "%s: an answer threaded under the reply" % what)
    check(mid in str(a["References"]).split(), "%s: References holds the reply's Message-ID"
          % what)
    check(str(a["References"]).split()[-1] == mid, "%s: the reply's id ends References" % what)
    check(str(msg["In-Reply-To"]) in str(a["References"]).split(),
          "%s: References keeps the chain" % what)
    check(a["Subject"].startswith("Re: "), "%s: a Re: subject" % what)
    m_, s_, q_, _ = address(a)
    v = w.d.view(m_)
    check(q_ == v["seq"], "%s: the answer's signed Reply-To pins the current seq %d (got %d)"
          % (what, v["seq"], q_))
    if moved:
        check(str(a["Reply-To"]) != str(msg["To"]), "%s: a new Reply-To" % what)
    return a


def log_events(w, mid, player):
    return w.d.log(mid, token=player["token"])["events"]


def quiet(w, n_before, what, settle=1.0):
    """No email arrives within `settle` seconds (nothing was queued for a refused message)."""
    time.sleep(settle)
    check(len(w.mails()) == n_before, "%s: no email was sent (%d -> %d)"
          % (what, n_before, len(w.mails())))


# ---- 1. Replies as mail clients write them --------------------------------------------------

def test_replies():
    w = World("replies")
    try:
        ps = w.players(2, "ann")
        v = w.d.create("horseshoe", ps)
        mid = v["id"]
        styles = ["plain", "qp", "alternative", "latin1", "base64", "html", "symbols",
                  "recipient", "env"]
        for i, style in enumerate(styles):
            view = w.d.view(mid)
            s = view["to_move"][0]
            p = ps[s]
            other = ps[1 - s]
            # The newest email of the seat to move, with its legal moves.
            orig = w.wait_mail(p, lambda m: address(m)[2] == view["seq"] and legal_moves(m.text),
                               "seat %d has an email at seq %d with legal moves" % (s, view["seq"]))
            m_, s_, q_, _ = address(orig)
            check((m_, s_, q_) == (mid, s, view["seq"]), "the Reply-To names match, seat, seq")
            moves = legal_moves(orig.text)
            legal = w.d.view(mid, p["token"])["legal"]
            check(moves and moves == legal[:len(moves)], "the email lists the seat's legal moves")
            move = RNG.choice(moves)
            if style == "symbols" and any(m.endswith("H") for m in moves):
                move = RNG.choice([m for m in moves if m.endswith("H")])
            cmd = move
            mstyle = style
            if style == "symbols":
                cmd, mstyle = symbols(move), "qp"
            elif style in ("latin1", "html"):
                cmd = move.upper()
            elif style == "plain":
                cmd = "  " + move.title() + "  "
            to = None
            recipient = None
            env = None
            args = None
            if style == "recipient":
                # The envelope recipient alone names the address (a list or an alias in To).
                to, recipient, mstyle = "Card games <games@players.test>", str(orig["Reply-To"]), "qp"
            if style == "env":
                env = {"CARDPOST_URL": w.url(), "CARDPOST_OPERATOR_TOKEN": OPERATOR}
                args = []
                mstyle = "plain"
            msg = reply(orig, p, cmd, mstyle, to=to)
            n_other = len(w.mails_to(other))
            rc, out, err = w.mail_in(as_bytes(msg), recipient=recipient, env=env, args=args)
            check(rc == 0, "%s: mail-in exits 0 (got %d: %s)" % (style, rc, err))
            check('"played"' in out, "%s: the outcome is played (%s)" % (style, out))
            evs = log_events(w, mid, p)
            mine = [e for e in evs if e.get("seat") == s and "move" in e]
            check(mine and mine[-1]["move"] == move and mine[-1]["seq"] == view["seq"],
                  "%s: %r (sent as %r) is in the log at seq %d" % (style, move, cmd, view["seq"]))
            a = answered(w, p, msg, style, moved=True)
            check("Played: %s." % move in a.text, "%s: the answer says Played: %s" % (style, move))
            after = w.d.view(mid)
            check(address(a)[2] == after["seq"], "%s: the answer's Reply-To pins the new seq"
                  % style)
            if after["status"] == "active" and (1 - s) in after["to_move"] and \
                    s not in after["to_move"]:
                t = w.wait_mail(other, lambda m: address(m)[2] == after["seq"],
                                "%s: the next seat gets its turn email" % style)
                check(t["Subject"].startswith("Your turn"), "%s: a turn email" % style)
                check(len(w.mails_to(other)) == n_other + 1, "%s: exactly one" % style)
                tl = legal_moves(t.text)
                check(tl and tl == w.d.view(mid, other["token"])["legal"][:len(tl)],
                      "%s: the turn email lists the next seat's legal moves" % style)
            print("  %s: %r as %r played, answered and threaded" % (style, move, cmd))
    finally:
        w.close()


# ---- 2. Refusals --------------------------------------------------------------------------

def test_refusals():
    w = World("refusals")
    try:
        ps = w.players(2, "bob")
        mid = w.d.create("horseshoe", ps)["id"]
        view = w.d.view(mid)
        s = view["to_move"][0]
        p, other = ps[s], ps[1 - s]
        first = w.wait_mail(p, lambda m: legal_moves(m.text), "the first mover's email")
        m_, s_, q_, tag = address(first)

        def refused_77(to, what):
            before = w.seq(mid)
            n = len(w.mails())
            rc, out, err = w.mail_in(as_bytes(reply(first, p, legal_moves(first.text)[0],
                                                    to=to)))
            check(rc == 77, "%s: mail-in exits 77 (got %d %r %r)" % (what, rc, out, err))
            check("not accepted" in err and ("forged" in err or "altered" in err or
                                             "play+" in err),
                  "%s: the reason is on stderr (%r)" % (what, err))
            check(w.seq(mid) == before, "%s: seq unchanged" % what)
            quiet(w, n, what, settle=0.5)
            print("  %s: exit 77, %s" % (what, err.strip()))

        refused_77("play+%d.%d.%d.%s@cp.example" % (m_, s_, q_, "0" * 24), "forged tag")
        flip = tag[:5] + ("0" if tag[5] != "0" else "1") + tag[6:]
        refused_77("play+%d.%d.%d.%s@cp.example" % (m_, s_, q_, flip), "one hex digit altered")
        refused_77("play+%d.%d.%d.%s@cp.example" % (m_ + 1, s_, q_, tag), "another match")
        refused_77("play+%d.%d.%d.%s@cp.example" % (m_, 1 - s_, q_, tag), "another seat")
        refused_77("play+%d.%d.%d.%s@cp.example" % (m_, s_, q_ + 1, tag), "another seq")
        refused_77("games@players.test", "no play+ address")

        # RFC 3834: an automatic message (an out-of-office note) is neither played nor
        # answered, even with a genuine address and a legal move on its first line.
        for header, value in (("Auto-Submitted", "auto-replied"), ("Precedence", "bulk")):
            before, n = w.seq(mid), len(w.mails())
            rc, out, err = w.mail_in(as_bytes(reply(first, p, legal_moves(first.text)[0],
                                                    extra_headers={header: value})))
            check(rc == 0 and '"ignored"' in out,
                  "%s: %s: mail-in exits 0, outcome ignored (%d %s)" % (header, value, rc, out))
            check(w.seq(mid) == before, "%s: seq unchanged" % header)
            quiet(w, n, "an automatic message (%s)" % header, settle=0.5)

        def refused_mail(raw, what, expect, recipient=None):
            before = w.seq(mid)
            rc, out, err = w.mail_in(raw, recipient=recipient)
            check(rc == 0, "%s: mail-in exits 0 (got %d %s)" % (what, rc, err))
            check('"refused"' in out, "%s: outcome refused (%s)" % (what, out))
            check(w.seq(mid) == before, "%s: seq unchanged" % what)
            return rc, out

        def refusal(msg, what, expect):
            refused_mail(as_bytes(msg), what, expect)
            a = answered(w, p, msg, what)
            for e in expect:
                check(e in a.text, "%s: the answer says %r\n%s" % (what, e, a.text))
            print("  %s: refused by email" % what)
            return a

        # Illegal: a card the seat does not hold or may not play.
        legal = w.d.view(mid, p["token"])["legal"]
        bad = next("play %s%s" % (r, su) for su in "CDHS" for r in "23456789TJQKA"
                   if "play %s%s" % (r, su) not in legal)
        a = refusal(reply(first, p, bad), "illegal move",
                    ["is not legal now", "Your legal moves", legal[0]])
        check(legal_moves(a.text) == legal[:len(legal_moves(a.text))],
              "the refusal lists the legal moves")
        # Unreadable bodies.
        only_quote = reply(first, p, "")
        only_quote.set_content("On Sunday, cardpost wrote:\n" +
                               "\n".join("> " + x for x in first.text.splitlines()) + "\n")
        refusal(only_quote, "only quoted text", ["could not find a move"])
        refusal(reply(first, p, "xyzzy plugh frobnicate"), "gibberish",
                ["could not read \"xyzzy plugh frobnicate\""])
        # Far over the size limit: a 1.5 MiB attachment.
        big = reply(first, p, legal[0])
        big.add_attachment(os.urandom(1536 * 1024), maintype="application",
                           subtype="octet-stream", filename="holiday.bin")
        raw = as_bytes(big)
        check(len(raw) > 2 * 1024 * 1024 - 10 ** 6, "the message is over 1 MiB")
        refused_mail(raw, "over the size limit", None)
        a = answered(w, p, big, "over the size limit")
        check("over the limit" in a.text, "the player is told about the size")
        print("  over the size limit (%d bytes): refused by email" % len(raw))

        # Broken MIME: never a crash; either 77 or an email.
        broken = [
            ("broken boundary",
             b"From: x@players.test\r\nTo: %s\r\nMessage-ID: <broken1@players.test>\r\n"
             b"MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"AAA\"\r\n\r\n"
             b"--BBB\r\nContent-Type: text/plain\r\n\r\n%s\r\n--AAA\r\nContent-Type: te"
             % (str(first["Reply-To"]).encode(), legal[0].encode())),
            ("nested garbage",
             b"To: %s\r\nContent-Type: multipart/mixed; boundary=\r\n\r\n--\r\n--\r\n"
             b"Content-Transfer-Encoding: base64\r\n\r\n!!!!====\r\n" % str(first["Reply-To"]).encode()),
            ("binary garbage", bytes(RNG.randrange(256) for _ in range(5000))),
            ("empty", b""),
            ("headers only", b"To: %s\r\n" % str(first["Reply-To"]).encode()),
        ]
        for what, raw in broken:
            before = w.seq(mid)
            n = len(w.mails())
            rc, out, err = w.mail_in(raw)
            check(rc in (0, 77), "%s: mail-in exits 0 or 77 (got %d %r)" % (what, rc, err))
            if rc == 77:
                check(err.strip(), "%s: a reason on stderr" % what)
                quiet(w, n, what, settle=0.3)
            else:
                wait_for(lambda: len(w.mails()) > n, "%s: the player gets an email" % what)
            check(w.seq(mid) == before, "%s: seq unchanged" % what)
            w.healthy()
            print("  %s: exit %d, %s" % (what, rc, (err or out).strip()[:100]))

        # Commands.
        msg = reply(first, p, "SHOW")
        rc, out, _ = w.mail_in(as_bytes(msg))
        check(rc == 0 and '"shown"' in out, "show: outcome shown")
        a = answered(w, p, msg, "show")
        check("The match as it stands" in a.text and legal_moves(a.text),
              "show: the state and the legal moves by email")
        msg = reply(first, p, "help")
        rc, out, _ = w.mail_in(as_bytes(msg))
        check(rc == 0 and '"help"' in out, "help: outcome help")
        a = answered(w, p, msg, "help")
        check("How to play by email" in a.text and "resign" in a.text, "help: the help text")
        print("  show and help answered by email")

        # Stale: s plays, the other plays, then s answers the first email again.
        seq0 = w.seq(mid)
        msg = reply(first, p, legal_moves(first.text)[0])
        rc, out, _ = w.mail_in(as_bytes(msg))
        check(rc == 0 and '"played"' in out, "the first move is played")
        v = w.d.view(mid)
        if v["to_move"] == [1 - s]:
            t = w.wait_mail(other, lambda m: address(m)[2] == v["seq"], "the other's turn email")
            msg = reply(t, other, legal_moves(t.text)[0])
            rc, out, _ = w.mail_in(as_bytes(msg))
            check(rc == 0 and '"played"' in out, "the other seat plays")
        v = w.d.view(mid, p["token"])
        check(v["seq"] > seq0 + 1 or v["to_move"] == [s], "the match moved on")
        stale_move = next((mv for mv in legal_moves(first.text) if mv not in v["legal"]),
                          legal_moves(first.text)[0])
        a = refusal(reply(first, p, stale_move), "stale reply",
                    ["moved on", "was not played"])
        if v["legal"]:
            shown = legal_moves(a.text)
            check(shown and shown == v["legal"][:len(shown)],
                  "the stale refusal shows the current legal moves (%r)" % shown[:3])
        check(address(a)[2] == v["seq"], "the stale refusal's Reply-To pins the current seq")
        # Resign from an old email is stale too; from the current one it ends the match.
        refusal(reply(first, p, "Resign"), "stale resign", ["moved on", "was not played"])
        check(w.d.view(mid)["status"] == "active", "a resign from an old email ends nothing")
        cur = a
        msg = reply(cur, p, "Resign")
        rc, out, _ = w.mail_in(as_bytes(msg))
        check(rc == 0 and '"played"' in out, "resign: played (%s)" % out)
        check(w.d.view(mid)["status"] == "finished", "resign ends the match")
        for q in ps:
            w.wait_mail(q, lambda m: m["Subject"].endswith("is over"),
                        "%s gets the match_over email" % q["name"])
        msg = reply(cur, p, legal_moves(cur.text)[0] if legal_moves(cur.text) else "play 2C")
        rc, out, _ = w.mail_in(as_bytes(msg))
        check(rc == 0 and '"refused"' in out, "a move after the end is refused")
        a = answered(w, p, msg, "after the end")
        check("over" in a.text, "the answer says the match is over")
        print("  stale reply refused with the current state; resign ended the match")
        w.healthy()
    finally:
        w.close()


def test_hearts_pass():
    """A reply to the simultaneous pass after another seat passed still counts."""
    w = World("pass")
    try:
        ps = w.players(4, "cat")
        mid = w.d.create("hearts", ps)["id"]
        v0 = w.d.view(mid, ps[0]["token"])
        check(v0["to_move"] == [0, 1, 2, 3], "all four seats pass at once")
        mails = [w.wait_mail(q, lambda m: legal_moves(m.text), "%s's start email" % q["name"])
                 for q in ps]
        for i, m in enumerate(mails):
            check(address(m)[2] == v0["seq"], "seat %d's email pins seq %d" % (i, v0["seq"]))
            check(re.search(r"\.\.\. and \d+ more", m.text), "the pass list is abbreviated")
        st, _, _ = w.d.move(mid, ps[0]["token"], w.d.view(mid, ps[0]["token"])["legal"][0])
        check(st == 201, "seat 0 passes through the API")
        check(w.seq(mid) > v0["seq"], "seq moved on")
        msg = reply(mails[1], ps[1], legal_moves(mails[1].text)[0], "alternative")
        rc, out, err = w.mail_in(as_bytes(msg))
        check(rc == 0 and '"played"' in out, "seat 1's pass from the old email counts (%s %s)"
              % (out, err))
        answered(w, ps[1], msg, "pass")
        evs = log_events(w, mid, ps[1])
        check(any(e.get("seat") == 1 and e.get("move") == legal_moves(mails[1].text)[0]
                  for e in evs), "seat 1's pass is in its log")
        print("  a pass answering seq %d counted at seq %d" % (v0["seq"], w.seq(mid) - 1))
    finally:
        w.close()


# ---- 3. Whole matches by email alone ------------------------------------------------------

def play_by_email(game, limit=60.0):
    w = World(game)
    try:
        ps = w.players(2, game[:3])
        mid = w.d.create(game, ps)["id"]
        realtime = game == "speed"
        done = set()          # Message-IDs of emails answered
        pending = [None, None]  # our reply awaiting its answer, per seat
        last_show = [0.0, 0.0]
        box = [[], []]        # each seat's emails so far
        seen = 0
        stats = {"moves": 0, "stale": 0, "other": 0, "show": 0}
        t0 = time.monotonic()
        over = False
        while not over:
            check(time.monotonic() - t0 < limit, "%s: the match ends within %.0f s by email "
                  "(%r)" % (game, limit, stats))
            allm = w.mails()
            for m in allm[seen:]:
                box[0 if m.rcpt == ps[0]["email"] else 1].append(m)
            seen = len(allm)
            acted = False
            for s, p in enumerate(ps):
                mine = box[s]
                if pending[s]:
                    ans = [m for m in mine[-4:] if m.irt == pending[s]]
                    if not ans:
                        continue
                    pending[s] = None
                    if "moved on" in ans[0].text:
                        stats["stale"] += 1
                    elif "Played:" not in ans[0].text and "as it stands" not in ans[0].text:
                        stats["other"] += 1
                if any(m.subj.endswith("is over") for m in mine):
                    over = True
                    break
                if not mine:
                    continue
                # The newest email: the highest seq pinned, the latest to arrive among those.
                newest = max(enumerate(mine), key=lambda im: (im[1].seq, im[0]))[1]
                if newest.mid in done:
                    continue
                moves = legal_moves(newest.text)
                if moves:
                    mv = moves[0] if RNG.random() < 0.5 else RNG.choice(moves)
                    msg = reply(newest, p, mv, RNG.choice(["plain", "qp", "alternative"]))
                    stats["moves"] += 1
                elif realtime and time.monotonic() - last_show[s] > 0.3:
                    msg = reply(newest, p, "show")
                    last_show[s] = time.monotonic()
                    stats["show"] += 1
                else:
                    continue
                done.add(newest.mid)
                rc, out, err = w.mail_in(as_bytes(msg))
                check(rc == 0, "%s: mail-in exits 0 (got %d %s)" % (game, rc, err))
                pending[s] = str(msg["Message-ID"])
                acted = True
            if not acted and not over:
                time.sleep(0.01)
        for p in ps:
            w.wait_mail(p, lambda m: m["Subject"].endswith("is over"),
                        "%s: %s gets match_over" % (game, p["name"]))
        view = w.d.view(mid)
        check(view["status"] == "finished", "%s: the match is finished" % game)
        log = w.d.log(mid, token=ps[0]["token"])
        harness.check_finished_log(log, view)
        harness.verify_log(log, w.tmp, game)
        print("  %s: %d events, %d replies (%d stale refusals, %d other refusals, %d show) "
              "in %.1f s" % (game, view["seq"], stats["moves"], stats["stale"], stats["other"],
                             stats["show"], time.monotonic() - t0))
    finally:
        w.close()


def test_horseshoe_by_email():
    play_by_email("horseshoe")


def test_snag_by_email():
    play_by_email("snag")


def test_speed_by_email():
    play_by_email("speed")


GMIME_LIBS = ("libgmime-3.0.so", "libglib-2.0.so", "libgobject-2.0.so", "libgio-2.0.so")


def mapped(d, names):
    """Which of `names` the daemon's process has mapped (/proc/PID/maps)."""
    with open("/proc/%d/maps" % d.proc.pid) as f:
        text = f.read()
    return [n for n in names if n in text]


def test_gmime_loaded_at_first_message():
    """cardpostd maps GMime and the GLib it brings only when a message comes: the module
    cardpost-mime.so, loaded at the first one (service/notify/mime.h). A daemon that never
    receives mail does without their pages; the first message is read all the same."""
    d = Daemon().start()
    try:
        check(mapped(d, GMIME_LIBS) == [],
              "a fresh daemon maps none of %r (%r)" % (GMIME_LIBS, mapped(d, GMIME_LIBS)))
        for path in ("/healthz", "/v1/openapi.json"):
            d.request("GET", path)
        check(mapped(d, GMIME_LIBS) == [], "nor after other requests")
        msg = (b"From: someone@example.org\r\nTo: cardpost@cp.example\r\n"
               b"Subject: hello\r\nMessage-ID: <first@example.org>\r\n\r\nhello\r\n")
        check_problem(d.request("POST", "/v1/mail/inbound", raw=msg, token=OPERATOR,
                                headers={"Content-Type": "message/rfc822"}),
                      422, "no_play_address", "the first message, read by the module")
        check(mapped(d, GMIME_LIBS) == list(GMIME_LIBS),
              "after it, GMime and GLib are mapped (%r)" % mapped(d, GMIME_LIBS))
        check_problem(d.request("POST", "/v1/mail/inbound", raw=b"\x00\x01 not mail",
                                token=OPERATOR, headers={"Content-Type": "message/rfc822"}),
                      422, None, "a second message, by the module already loaded")
    finally:
        d.stop()


if __name__ == "__main__":
    harness.run([test_gmime_loaded_at_first_message, test_replies, test_refusals, test_hearts_pass, test_horseshoe_by_email,
                 test_snag_by_email, test_speed_by_email])
