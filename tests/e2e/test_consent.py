# test_consent.py - end to end: consent (spec/service.md "Trust, consent and limits",
# docs/security.md "Consent") on the real cardpostd with a real SMTP server and webhook
# receiver. A match that a player creates with other players is pending (no deal, no seed,
# no clock, only invitations) until every other seat accepts; a decline or the expiry
# (on the test clock) cancels it; the preference seat_without_asking and the operator skip
# the asking. Leagues: joining, the organiser's invitations (accepted, declined), the
# operator's direct adding; league matches use the league's clock (defect 2); schedules
# and leagues are bounded (defect 5); leaving a league forfeits every running league match,
# past 1,024 (defect 13); a database of the previous schema migrates.
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OPERATOR, Daemon, SmtpSink, Stream, WebhookReceiver, check, check_problem, \
    db_exec, run, wait_for  # noqa: E402

M = "/v1/matches/%d"
L = "/v1/leagues/%d"


def setup(name, **extra):
    import tempfile
    tmp = tempfile.mkdtemp(prefix="cardpost-consent-%s-" % name)
    harness.TEMP_DIRS.append(tmp)
    sink = SmtpSink(tmp, "smtp").start()
    recv = WebhookReceiver(tmp, "hooks").start()
    env = {"CARDPOST_SMTP_URL": sink.url(), "CARDPOST_MAIL_FROM": "cardpost@consent.test",
           "CARDPOST_TEST_CLOCK": "1", "CARDPOST_ALLOW_PRIVATE_WEBHOOKS": "1",
           "CARDPOST_DURABILITY": "crash"}
    env.update(extra)
    return sink, recv, Daemon(tmp=tmp, env=env)


def register(d, name, recv=None, consent=False):
    body = {"name": name, "email": "%s@players.test" % name}
    if recv is not None:
        body["webhook_url"] = recv.url("/hook/%s" % name)
    if consent:
        body["preferences"] = {"seat_without_asking": True}
    st, _, p = d.request("POST", "/v1/players", body)
    check(st == 201, "register %s -> 201 (got %d %r)" % (name, st, p))
    # Only a confirmed address gets invitations (test_identity.py confirms by the code).
    harness.operator_confirm_email(d, p)
    return p


def mails(sink):
    """What the SMTP sink received, without the confirmation emails of the registrations."""
    return [m for m in sink.messages() if not harness.is_confirmation(m[0])]


def ok(resp, status, what):
    st, _, body = resp
    check(st == status, "%s -> %d (got %d %r)" % (what, status, st, body))
    return body


def hook_types(recv, name):
    return [json.loads(r["body"])["type"] for r in recv.records()
            if r["path"] == "/hook/%s" % name]


def create(d, game, players, token, status=201, **more):
    body = dict({"game": game, "players": [p["id"] for p in players]}, **more)
    return ok(d.request("POST", "/v1/matches", body, token=token), status,
              "create %s by %s" % (game, "the operator" if token == OPERATOR else "a player"))


# ---- Matches --------------------------------------------------------------------------------

def test_invitation_accepted():
    sink, recv, d = setup("accept")
    with d:
        a, b, c, x = (register(d, n, recv) for n in ("ann", "bob", "cyd", "xan"))
        v = create(d, "horse-thief", [a, b, c], a["token"])
        mid = v["id"]
        check(v["status"] == "pending", "a match with other players is pending (got %r)" % v["status"])
        check(v["seed_commitment"] is None and v["view"] is None and v["deadline"] is None and
              v["seq"] == 0 and v["legal"] == [] and v["to_move"] == [],
              "pending: no seed published, no deal, no clock running: %r" % v)
        check(v["invitation"]["accepted"] == [0] and v["invitation"]["waiting_for"] == [1, 2],
              "the creator's seat agreed; the others are awaited: %r" % v["invitation"])
        check(v["invitation"]["expires_at"] >= time.time() + 7 * 86400 - 60,
              "the invitation expires in 7 days by default")
        check(v["clock"]["move_seconds"] == 72 * 3600, "the clock it will have is shown")
        check([p["accepted"] for p in v["players"]] == [True, False, False], "each seat's answer")
        # Nothing can be played, logged or streamed yet; the answers say why.
        check_problem(d.request("POST", M % mid + "/moves", {"move": "pass"}, token=a["token"]),
                      409, "match_pending", "a move on a pending match")
        check_problem(d.request("GET", M % mid + "/log", token=b["token"]), 409, "match_pending",
                      "the log of a pending match")
        check_problem(d.request("GET", M % mid + "/replay"), 409, "match_pending",
                      "the replay of a pending match")
        check_problem(d.request("GET", M % mid + "/events"), 409, "match_pending",
                      "the event stream of a pending match")
        check_problem(d.request("POST", M % mid + "/accept", None, token=x["token"]), 403,
                      "forbidden", "a player without a seat accepts")
        check_problem(d.request("POST", M % mid + "/accept", None), 401, "unauthorized",
                      "accepting without a token")
        # The invited see it in their list, marked.
        mine = ok(d.request("GET", "/v1/players/me/matches", token=b["token"]), 200,
                  "GET /v1/players/me/matches")
        check([(m["id"], m["status"]) for m in mine["matches"]] == [(mid, "pending")],
              "the invited player's list shows the pending match: %r" % mine)
        check(mine["matches"][0]["invitation"]["waiting_for"] == [1, 2], "with whom it waits for")
        # Only the invitations went out: a webhook and an email to each invited seat.
        wait_for(lambda: len(hook_types(recv, "bob")) == 1 and len(hook_types(recv, "cyd")) == 1,
                 "the invitation webhooks")
        wait_for(lambda: len(mails(sink)) == 2, "the invitation emails")
        check(hook_types(recv, "bob") == ["invitation"] and hook_types(recv, "ann") == [],
              "only invitations, none to the creator: %r" % [r["path"] for r in recv.records()])
        raw, env = mails(sink)[0]
        check(b"You are invited to horse-thief match" in raw and b"/accept" in raw,
              "the invitation email says how to accept")
        # Accepting: idempotent; the last acceptance starts the match as a match starts.
        v = ok(d.request("POST", M % mid + "/accept", None, token=b["token"]), 200, "bob accepts")
        check(v["status"] == "pending" and v["invitation"]["waiting_for"] == [2] and v["you"] == 1,
              "still pending, waiting for cyd: %r" % v["invitation"])
        v = ok(d.request("POST", M % mid + "/accept", None, token=b["token"]), 200,
               "bob accepts again")
        check(v["invitation"]["accepted"] == [0, 1], "a second acceptance changes nothing")
        v = ok(d.request("POST", M % mid + "/accept", None, token=c["token"]), 200, "cyd accepts")
        check(v["status"] == "active" and len(v["seed_commitment"]) == 64 and v["seq"] >= 1 and
              v["deadline"] and v["view"] is not None and "invitation" not in v,
              "the last acceptance starts it: seed committed, dealt, clock running: %r" % v)
        check(v["you"] == 2, "the answer is cyd's view")
        wait_for(lambda: all(hook_types(recv, n)[-1:] == ["match_started"]
                             for n in ("ann", "bob", "cyd")), "match_started to every seat")
        seat = d.view(mid)["to_move"][0]
        tok = [a, b, c][seat]["token"]
        mv = d.view(mid, tok)["legal"][0]
        ok(d.request("POST", M % mid + "/moves", {"move": mv}, token=tok), 201,
           "a move once it started")
        ok(d.request("GET", M % mid + "/log", token=a["token"]), 200, "its log")
        s = Stream(d, mid)
        check(s.until_state()[-1]["data"]["status"] == "active", "its event stream")
        s.close()
        ok(d.request("POST", M % mid + "/accept", None, token=c["token"]), 200,
           "accepting again after the start (a retry)")
        check_problem(d.request("POST", M % mid + "/decline", None, token=c["token"]), 409,
                      "match_started", "declining a match that started")
    sink.stop()
    recv.stop()


def test_decline_and_expiry():
    sink, recv, d = setup("decline", CARDPOST_INVITATION_SECONDS="3600")
    with d:
        a, b, c = (register(d, n, recv) for n in ("ann", "bob", "cyd"))
        mid = create(d, "horse-thief", [a, b, c], a["token"])["id"]
        ok(d.request("POST", M % mid + "/accept", None, token=b["token"]), 200, "bob accepts")
        v = ok(d.request("POST", M % mid + "/decline", None, token=c["token"]), 200,
               "cyd declines")
        check(v["status"] == "cancelled" and v["cancelled"] == "declined" and
              v["invitation"]["waiting_for"] == [] and v["seed_commitment"] is None,
              "a decline cancels it: %r" % v)
        check_problem(d.request("POST", M % mid + "/accept", None, token=b["token"]), 409,
                      "match_cancelled", "accepting a cancelled match")
        check_problem(d.request("POST", M % mid + "/moves", {"move": "pass"}, token=a["token"]),
                      409, "match_cancelled", "a move on a cancelled match")
        check_problem(d.request("GET", M % mid + "/log"), 409, "match_cancelled",
                      "the log of a cancelled match")
        mine = ok(d.request("GET", "/v1/players/me/matches", token=a["token"]), 200, "a's list")
        check(mine["matches"][0]["status"] == "cancelled" and
              mine["matches"][0]["cancelled"] == "declined", "the list shows it cancelled")
        declined = mid
        # Expiry, on the service's clock: invitation_seconds (here 3600) from the creation.
        before = d.advance(0) // 1000
        mid = create(d, "horse-thief", [a, b, c], a["token"])["id"]
        after = d.advance(0) // 1000
        v = d.view(mid)
        check(before + 3600 <= v["invitation"]["expires_at"] <= after + 3600,
              "expires_at is 3600 s after the creation (%r, created within %d-%d)"
              % (v["invitation"]["expires_at"], before, after))
        d.advance(3590)
        time.sleep(1.5)
        check(d.view(mid)["status"] == "pending", "not yet expired after 3590 s")
        d.advance(20)
        v = wait_for(lambda: (lambda v: v["status"] == "cancelled" and v)(d.view(mid)),
                     "the scheduler cancels the expired invitation")
        check(v["cancelled"] == "expired", "cancelled as expired: %r" % v)
        check_problem(d.request("POST", M % mid + "/accept", None, token=c["token"]), 409,
                      "match_cancelled", "accepting an expired invitation")
        # No match notification ever went out for the cancelled matches: what was queued for
        # the three (each change writes its notifications with it) is the invitations of the
        # invited seats, every one delivered; and the receiver got those (webhooks do arrive
        # here) and nothing else.
        want = {(n, m, "invitation") for n in ("bob", "cyd") for m in (declined, mid)}

        def queued():
            rows = {p["name"]: [x for x in ok(d.request("GET", "/v1/players/me/deliveries",
                                                        token=p["token"]), 200,
                                              "%s's deliveries" % p["name"])["deliveries"]
                                if x["type"] != "email_confirm"] for p in (a, b, c)}
            return rows if all(x["status"] == "delivered" for r in rows.values()
                               for x in r) else None

        rows = wait_for(queued, "every notification of the cancelled matches delivered")
        got = {(n, x["match"], x["type"]) for n, r in rows.items() for x in r}
        check(got == want, "only the invitations were queued: %r" % sorted(got))
        posts = [(r["path"], json.loads(r["body"])) for r in recv.records()]
        got = {(path[len("/hook/"):], body["data"]["id"], body["type"]) for path, body in posts}
        check(len(posts) == len(want) and got == want,
              "the receiver got the invitations' webhooks, nothing else: %r" % sorted(got))
    sink.stop()
    recv.stop()


def test_seat_without_asking_and_operator():
    sink, recv, d = setup("prefs")
    with d:
        a = register(d, "ann")
        b = register(d, "bob", consent=True)
        c = register(d, "cyd")
        me = ok(d.request("GET", "/v1/players/me", token=c["token"]), 200, "GET me")
        check(me["preferences"]["seat_without_asking"] is False, "off by default")
        me = ok(d.request("GET", "/v1/players/me", token=b["token"]), 200, "GET me")
        check(me["preferences"]["seat_without_asking"] is True, "set at registration")
        check(create(d, "speed", [a, b], a["token"])["status"] == "active",
              "seating a player who opted in starts the match at once")
        check(create(d, "speed", [a, c], a["token"])["status"] == "pending",
              "seating one who did not makes it pending")
        ok(d.request("PATCH", "/v1/players/me", {"preferences": {"seat_without_asking": True}},
                     token=c["token"]), 200, "cyd opts in by PATCH")
        check(create(d, "speed", [a, c], a["token"])["status"] == "active", "then it starts at once")
        check(create(d, "horse-thief", [b, a, c], b["token"])["status"] == "pending",
              "ann (not opted in) is still asked")
        check_problem(d.request("PATCH", "/v1/players/me",
                                {"preferences": {"seat_without_asking": "yes"}}, token=c["token"]),
                      400, "bad_request", "the preference is true or false")
        check_problem(d.request("POST", "/v1/players",
                                {"name": "z", "preferences": {"seat_without_asking": 1}}),
                      400, "bad_request", "at registration too")
        # The operator needs no consent.
        v = create(d, "horse-thief", [a, c, register(d, "dan")], OPERATOR)
        check(v["status"] == "active" and v["seq"] >= 1, "an operator's match starts at once")
    sink.stop()
    recv.stop()


# ---- Leagues --------------------------------------------------------------------------------

def test_league_invitations_and_clock():
    sink, recv, d = setup("league")
    with d:
        org, b, c, e, f, g = (register(d, n) for n in ("org", "bob", "cyd", "eve", "fay", "gus"))
        h = register(d, "hal", consent=True)
        lg = ok(d.request("POST", "/v1/leagues", {"name": "consent", "game": "speed",
                                                  "clock": None}, token=org["token"]),
                201, "a league (speed)")
        lid = lg["id"]
        lg2 = ok(d.request("POST", "/v1/leagues",
                           {"name": "clocked", "game": "horse-thief", "options": {"seats": 3},
                            "clock": {"move_seconds": 86400, "policy": "auto"}},
                           token=org["token"]), 201, "a clocked league")
        ok(d.request("POST", L % lid + "/members", None, token=org["token"]), 201, "org joins")
        j = ok(d.request("POST", L % lid + "/members", {"player": b["id"]}, token=org["token"]),
               202, "the organiser invites bob")
        check(j["status"] == "invited", "an invitation, not a membership: %r" % j)
        check_problem(d.request("POST", L % lid + "/members", {"player": b["id"]},
                                token=org["token"]), 409, "already_invited", "inviting twice")
        got = ok(d.request("GET", L % lid), 200, "GET league")
        check([m["id"] for m in got["members"]] == [org["id"]] and
              [m["id"] for m in got["invited"]] == [b["id"]],
              "bob is invited, not a member: %r / %r" % (got["members"], got["invited"]))
        j = ok(d.request("POST", L % lid + "/members", None, token=b["token"]), 201,
               "bob accepts by joining")
        check(j["status"] == "member", "now a member")
        got = ok(d.request("GET", L % lid), 200, "GET league")
        check(got["invited"] == [] and len(got["members"]) == 2, "the invitation is answered")
        ok(d.request("POST", L % lid + "/members", {"player": c["id"]}, token=org["token"]), 202,
           "the organiser invites cyd")
        j = ok(d.request("DELETE", L % lid + "/members/%d" % c["id"], None, token=c["token"]),
               200, "cyd declines")
        check(j.get("uninvited") == c["id"], "the decline drops the invitation: %r" % j)
        check(ok(d.request("GET", L % lid), 200, "GET")["invited"] == [], "no invitation left")
        check_problem(d.request("POST", L % lid + "/members", {"player": e["id"]},
                                token=b["token"]), 403, "forbidden", "a member invites")
        j = ok(d.request("POST", L % lid + "/members", {"player": h["id"]}, token=org["token"]),
               201, "hal (seat_without_asking) is enrolled at once")
        j = ok(d.request("POST", L % lid + "/members", {"player": e["id"]}, token=OPERATOR), 201,
               "the operator adds eve directly")
        ok(d.request("POST", L % lid + "/members", None, token=f["token"]), 201, "fay joins")
        # Defect 2: a league match cannot choose its own clock.
        ok(d.request("POST", L % lg2["id"] + "/members", None, token=org["token"]), 201, "join")
        for p in (b, c, e):
            ok(d.request("POST", L % lg2["id"] + "/members", None, token=p["token"]), 201, "join")
        for who, tok in (("a member", b["token"]), ("the organiser", org["token"]),
                         ("the operator", OPERATOR)):
            check_problem(d.request("POST", "/v1/matches",
                                    {"game": "horse-thief", "players": [b["id"], c["id"], e["id"]]
                                     if who != "the organiser" else [org["id"], c["id"], e["id"]],
                                     "league": lg2["id"],
                                     "clock": {"move_seconds": 1, "policy": "forfeit"}},
                                    token=tok), 422, "league_clock",
                          "%s gives a league match its own clock" % who)
        # A member's league match asks the others; the organiser's starts at once; both
        # keep the league's clock.
        v = create(d, "horse-thief", [b, c, e], b["token"], league=lg2["id"])
        check(v["status"] == "pending" and v["clock"]["move_seconds"] == 86400,
              "a member's league match waits for the others, with the league's clock: %r" % v)
        v = create(d, "horse-thief", [org, c, e], org["token"], league=lg2["id"])
        check(v["status"] == "active" and v["clock"]["move_seconds"] == 86400 and
              v["clock"]["policy"] == "auto", "the organiser's starts, with the league's clock")
        # The schedule's matches start at once.
        s = ok(d.request("POST", L % lid + "/schedule", {}, token=org["token"]), 201, "schedule")
        players = {org["id"], b["id"], h["id"], e["id"], f["id"]}
        check(len(s["matches"]) == 10, "every pair of the 5 members once (got %d)" % len(s["matches"]))
        for mid in s["matches"]:
            v = d.view(mid)
            check(v["status"] == "active" and {p["id"] for p in v["players"]} <= players,
                  "a scheduled match of members is active at once")
        check(not any(p["id"] in (c["id"], g["id"]) for mid in s["matches"]
                      for p in d.view(mid)["players"]), "nobody who was not a member is seated")
        # Leaving a league declines its pending matches too.
        pend = create(d, "horse-thief", [b, c, e], b["token"], league=lg2["id"])["id"]
        left = ok(d.request("DELETE", L % lg2["id"] + "/members/%d" % c["id"], None,
                            token=c["token"]), 200, "cyd leaves the clocked league")
        check(pend in left["forfeited"], "her pending league match is answered: %r" % left)
        check(d.view(pend)["status"] == "cancelled", "declined by leaving")
    sink.stop()
    recv.stop()


def test_league_invitation_notified():
    """An invited player is told: a league_invitation webhook (signed, the league in its
    data) and email (its own thread, how to answer), as their preferences allow; a player
    enrolled at once, or who joins by themself, is not; nor is one who turned the type off."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
    from webhook_receiver import verify
    sink, recv, d = setup("league-notify")
    with d:
        # (names of their own: on PostgreSQL the tests before share the database, and their
        # players' rows may still be delivered)
        org, b, h = register(d, "lorg"), register(d, "lbob", recv), register(d, "lhal", recv, True)
        q = register(d, "lquo", recv)
        # The new key takes true or false only; its neighbours in name are unknown types.
        for bad, status, code in (("no\r\n", 400, "bad_request"), (1e308, 400, "bad_request"),
                                  (None, 400, "bad_request"), (10 ** 30, 400, "malformed_json")):
            check_problem(d.request("PATCH", "/v1/players/me", {"preferences": {
                "webhook": {"league_invitation": bad}}}, token=q["token"]), status, code,
                "league_invitation %r" % (bad,))
        check_problem(d.request("PATCH", "/v1/players/me", {"preferences": {
            "email": {"league_invitation\u0000": False}}}, token=q["token"]), 400,
            "malformed_json", "a key with a NUL")
        # (a long name, or one cut inside a character, still gets a whole JSON answer)
        for name in ("league_invitation\r\n", "League_invitation", "league_invitation " * 500,
                     "a" + "\u00e9" * 30, "\u00e9" * 300):
            st, _, body = d.request("PATCH", "/v1/players/me", {"preferences": {
                "email": {name: False}}}, token=q["token"])
            check(st == 422 and body["code"] == "invalid_field" and
                  "league_invitation)" in body["detail"],
                  "an unknown type %r is refused, naming the known ones: %d %r"
                  % (name[:40], st, body))
        ok(d.request("PATCH", "/v1/players/me", {"preferences": {
            "email": {"league_invitation": False}, "webhook": {"league_invitation": False}}},
            token=q["token"]), 200, "quo turns league invitations off")
        lid = ok(d.request("POST", "/v1/leagues", {"name": "Friday \u00e9", "game": "snag"},
                           token=org["token"]), 201, "a league")["id"]
        for p, st in ((b, 202), (h, 201), (q, 202)):
            ok(d.request("POST", L % lid + "/members", {"player": p["id"]}, token=org["token"]),
               st, "the organiser adds %s" % p["name"])
        ok(d.request("POST", L % lid + "/members", None, token=org["token"]), 201, "org joins")
        wait_for(lambda: hook_types(recv, "lbob") == ["league_invitation"], "bob's webhook")
        rec = [r for r in recv.records() if r["path"] == "/hook/lbob"][0]
        check(verify(b["webhook_secret"], rec["headers"], rec["body"]), "it is signed for bob")
        data = json.loads(rec["body"])["data"]
        check(data["league"]["id"] == lid and data["league"]["name"] == "Friday \u00e9" and
              data["league"]["game"] == "snag" and data["league"]["organizer"] == org["id"] and
              data["league"]["organizer_name"] == "lorg" and data["player"] == b["id"],
              "the data names the league, its organiser and the player: %r" % data)
        wait_for(lambda: any(e["rcpt_tos"] == ["lbob@players.test"] for _, e in mails(sink)),
                 "bob's email")
        raw = [m for m, e in mails(sink) if e["rcpt_tos"] == ["lbob@players.test"]][0].decode()
        check("Subject: =?" in raw or "invited to the league" in raw, "the subject says so")
        check("POST /v1/leagues/%d/members" % lid in raw.replace("=\r\n", ""),
              "the email says how to answer: %r" % raw[-600:])
        check("In-Reply-To" not in raw, "a thread of its own")
        time.sleep(1.5)  # (what else would have come by now)
        check(hook_types(recv, "lhal") == [] and hook_types(recv, "lquo") == [],
              "nobody else is told: hal was enrolled at once, quo turned it off")
        ours = [e["rcpt_tos"] for _, e in mails(sink)
                if e["rcpt_tos"][0] in ("%s@players.test" % p["name"] for p in (org, b, h, q))]
        check(ours == [["lbob@players.test"]], "one email to these players in all: %r" % ours)
        st, _, rows = d.request("GET", "/v1/players/me/deliveries", token=b["token"])
        mine = [x for x in rows["deliveries"] if x["type"] == "league_invitation"]
        check(st == 200 and sorted(x["channel"] for x in mine) == ["email", "webhook"] and
              all(x["status"] == "delivered" and x["match"] is None for x in mine),
              "bob's deliveries list both, delivered: %r" % mine)
    sink.stop()
    recv.stop()


def test_league_limits():
    """Defect 5: a schedule request and a league are bounded, answered before anything is
    written; so are members."""
    d = Daemon(env={"CARDPOST_SCHEDULE_MAX_MATCHES": "10", "CARDPOST_LEAGUE_MAX_MATCHES": "12",
                    "CARDPOST_LEAGUE_MAX_MEMBERS": "5", "CARDPOST_DURABILITY": "crash"})
    with d:
        ps = [register(d, "p%d" % i) for i in range(6)]
        lid = ok(d.request("POST", "/v1/leagues", {"name": "bounded", "game": "speed"},
                           token=ps[0]["token"]), 201, "league")["id"]
        for p in ps[:5]:
            ok(d.request("POST", L % lid + "/members", None, token=p["token"]), 201, "join")
        check_problem(d.request("POST", L % lid + "/schedule", {"rounds": 2},
                                token=ps[0]["token"]), 422, "schedule_too_large",
                      "20 matches in one request past schedule_max_matches 10")
        check(ok(d.request("GET", L % lid), 200, "GET")["matches"] == [],
              "nothing was written by the refused schedule")
        s = ok(d.request("POST", L % lid + "/schedule", {"rounds": 1}, token=ps[0]["token"]), 201,
               "10 matches")
        check(len(s["matches"]) == 10, "ten")
        check_problem(d.request("POST", L % lid + "/schedule", {"rounds": 1},
                                token=ps[0]["token"]), 422, "league_match_limit",
                      "10 more past league_max_matches 12")
        check(len(ok(d.request("GET", L % lid), 200, "GET")["matches"]) == 10, "still ten")
        for _ in range(2):
            create(d, "speed", ps[:2], OPERATOR, league=lid)
        check_problem(d.request("POST", "/v1/matches", {"game": "speed", "players":
                                                        [ps[0]["id"], ps[1]["id"]], "league": lid},
                                token=OPERATOR), 422, "league_match_limit",
                      "a 13th match of the league")
        check_problem(d.request("POST", L % lid + "/members", None, token=ps[5]["token"]), 422,
                      "league_full", "a sixth member past league_max_members 5")
        ok(d.request("DELETE", L % lid + "/members/%d" % ps[4]["id"], None, token=ps[4]["token"]),
           200, "one leaves")
        ok(d.request("POST", L % lid + "/members", {"player": ps[5]["id"]}, token=ps[0]["token"]),
           202, "the organiser invites the sixth: 4 members and an invitation")
        check_problem(d.request("POST", L % lid + "/members", None, token=ps[4]["token"]), 422,
                      "league_full", "invitations count toward league_max_members")
        ok(d.request("POST", L % lid + "/members", None, token=ps[5]["token"]), 201,
           "the invited player accepts: the invitation becomes the membership")


def test_league_match_clock():
    """Defect 2: a member cannot give a league match a clock of their own (a one-second
    forfeit clock to win by timeout); the league's clock applies."""
    d = Daemon(env={"CARDPOST_DURABILITY": "crash"})
    with d:
        a, b = register(d, "ann", consent=True), register(d, "bob", consent=True)
        lid = ok(d.request("POST", "/v1/leagues", {"name": "slow", "game": "snag",
                                                   "clock": {"move_seconds": 86400}},
                           token=OPERATOR), 201, "league")["id"]
        for p in (a, b):
            ok(d.request("POST", L % lid + "/members", None, token=p["token"]), 201, "join")
        for clock in ({"move_seconds": 1, "policy": "forfeit"}, None):
            check_problem(d.request("POST", "/v1/matches",
                                    {"game": "snag", "players": [a["id"], b["id"]], "league": lid,
                                     "clock": clock}, token=a["token"]), 422, "league_clock",
                          "a league match with its own clock %r" % (clock,))
        v = create(d, "snag", [a, b], a["token"], league=lid)
        check(v["status"] == "active" and v["clock"]["move_seconds"] == 86400,
              "without one it has the league's clock: %r" % v["clock"])


def test_leaving_forfeits_everything():
    """Defect 13: leaving forfeits every running league match, not only the newest 1,024."""
    d = Daemon(env={"CARDPOST_DURABILITY": "crash"})
    n = 1030
    with d:
        a, b = register(d, "ann"), register(d, "bob")
        lid = ok(d.request("POST", "/v1/leagues", {"name": "many", "game": "speed"},
                           token=OPERATOR), 201, "league")["id"]
        for p in (a, b):
            ok(d.request("POST", L % lid + "/members", None, token=p["token"]), 201, "join")
        conn = d.conn()
        body = json.dumps({"game": "speed", "players": [a["id"], b["id"]], "league": lid})
        ids = []
        for _ in range(n):
            conn.request("POST", "/v1/matches", body=body,
                         headers={"Authorization": "Bearer " + OPERATOR,
                                  "Content-Type": "application/json"})
            r = conn.getresponse()
            v = json.loads(r.read())
            check(r.status == 201 and v["status"] == "active", "create (got %d)" % r.status)
            ids.append(v["id"])
        conn.close()
        left = ok(d.request("DELETE", L % lid + "/members/%d" % a["id"], None, token=a["token"]),
                  200, "ann leaves")
        check(sorted(left["forfeited"]) == sorted(ids),
              "all %d running matches forfeited (got %d)" % (n, len(left["forfeited"])))
        for mid in (ids[0], ids[5], ids[-1]):
            v = d.view(mid)
            check(v["status"] == "finished" and v["result"]["resigned"] in (0, [0]),
                  "match %d: ann resigned (%r)" % (mid, v["result"]))


# ---- Migration ------------------------------------------------------------------------------

def test_existing_database_migrates():
    """A database of the schema before 0008 (its columns and table taken away again, its
    version set back) migrates: its matches stay active and playable, its members stay."""
    d = Daemon(env={"CARDPOST_DURABILITY": "crash"}).start()
    a, b = register(d, "ann", consent=True), register(d, "bob", consent=True)
    mid = create(d, "speed", [a, b], a["token"])["id"]
    lid = ok(d.request("POST", "/v1/leagues", {"name": "old", "game": "speed"},
                       token=a["token"]), 201, "league")["id"]
    for p in (a, b):
        ok(d.request("POST", L % lid + "/members", None, token=p["token"]), 201, "join")
    rc, _ = d.stop()
    check(rc == 0, "stopped")
    for sql in ("DROP INDEX matches_invitations_due",  # (the same on SQLite and PostgreSQL)
                "ALTER TABLE matches DROP COLUMN invitation",
                "ALTER TABLE matches DROP COLUMN accepted",
                "ALTER TABLE matches DROP COLUMN invited_until",
                "DROP TABLE league_invitations",
                "DELETE FROM schema_migrations WHERE version = 8"):
        db_exec(d.db, sql)
    d2 = Daemon(db=d.db, tmp=d.tmp, env={"CARDPOST_DURABILITY": "crash"})
    with d2:
        v = d2.view(mid, a["token"])
        check(v["status"] == "active" and len(v["seed_commitment"]) == 64,
              "an existing match is active after the migration: %r" % v["status"])
        mv = v["legal"][0] if v["legal"] else None
        if mv is None:
            mv = d2.view(mid, b["token"])["legal"][0]
            tok = b["token"]
        else:
            tok = a["token"]
        ok(d2.request("POST", M % mid + "/moves", {"move": mv}, token=tok), 201,
           "and playable")
        got = ok(d2.request("GET", L % lid), 200, "GET league")
        check(sorted(m["id"] for m in got["members"]) == sorted([a["id"], b["id"]]) and
              got["invited"] == [], "existing members stay members")


if __name__ == "__main__":
    run([test_invitation_accepted, test_decline_and_expiry, test_seat_without_asking_and_operator,
         test_league_invitations_and_clock, test_league_invitation_notified,
         test_league_match_clock, test_league_limits,
         test_leaving_forfeits_everything,
         test_existing_database_migrates])
