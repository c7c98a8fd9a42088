# test_logs.py - end to end: the real cardpostd's log (docs/operations.md "Logs") written to
# its log_file: every line one JSON object with its fields; one line per request whose
# request_id is the answer's X-Request-Id and its problem's "request_id"; a trusted proxy's
# X-Request-Id kept, a client's or a bad one replaced; no token (a player's, the operator's)
# and no card of any hand anywhere in the log; a delivery attempt's line (a webhook to a
# closed port) and the clock's (a timeout on the test clock, a reminder, a vacation begun
# and ended); SIGHUP after the file was moved away (logrotate) sends the next lines to a
# new file at the configured path; libmicrohttpd's own messages are lines of the log;
# --check-config names bad log settings.
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import CARDPOSTD, OPERATOR, Daemon, check, free_port, run, wait_for  # noqa: E402

HOUR = 3600
ID = re.compile(r"^[0-9a-f]{16}$")

d = None
LOG = None
SEEN = {}        # request id -> (method, path, status) of the answers the tests received
TOKENS = [OPERATOR]
CARDS = set()


def lines(path=None):
    """The log's lines, each parsed (a line that is not one JSON object fails)."""
    # (The daemon writes each line with one write(2); a read that meets one half done sees
    # the rest a moment later. A line that stays cut fails.)
    for _ in range(50):
        with open(path or LOG, "rb") as f:
            text = f.read()
        if not text or text.endswith(b"\n"):
            break
        time.sleep(0.02)
    check(not text or text.endswith(b"\n"), "the log ends with a whole line")
    out = []
    for raw in text.split(b"\n")[:-1]:
        check(all(0x20 <= b < 0x7f for b in raw), "a line is printable ASCII: %r" % raw[:200])
        try:
            v = json.loads(raw)
        except ValueError:
            v = None
        check(v is not None, "a line is JSON: %r" % raw[:200])
        check(isinstance(v, dict), "a line is a JSON object: %r" % raw[:200])
        for k in ("time", "level", "event"):
            check(k in v, "a line has %r: %r" % (k, v))
        check(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", v["time"]),
              "the time is RFC 3339 UTC: %r" % v["time"])
        check(v["level"] in ("error", "warn", "info", "debug"), "a known level: %r" % v)
        out.append(v)
    return out


def requests_by_id(path=None):
    return {v["request_id"]: v for v in lines(path) if v["event"] == "request"}


def req(method, path, body=None, token=None, headers=None, source=None):
    """One request; its X-Request-Id remembered (and checked against a problem's)."""
    if source:
        c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30,
                                       source_address=(source, 0))
        h = {"Content-Type": "application/json"} if body is not None else {}
        h.update(headers or {})
        c.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                  headers=h)
        r = c.getresponse()
        text = r.read().decode()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        st = r.status
        c.close()
        got = json.loads(text) if text else None
    else:
        st, hdrs, got = d.request(method, path, body, token=token, headers=headers)
    rid = hdrs.get("x-request-id")
    check(rid, "%s %s: an X-Request-Id header (%r)" % (method, path, hdrs))
    if hdrs.get("content-type") == "application/problem+json":
        check(got.get("request_id") == rid,
              "%s %s: the problem's request_id is the header's (%r, %r)" % (method, path, got,
                                                                             rid))
    SEEN[rid] = (method, path.split("?")[0], st)
    return st, hdrs, got


def test_requests():
    global players, mid, view
    dead = free_port()  # nobody listens: every webhook attempt fails and is retried
    players = []
    for i in range(4):
        body = {"name": "log%d" % i, "preferences": {"seat_without_asking": True}}
        if i == 0:
            body["webhook_url"] = "http://127.0.0.1:%d/hook" % dead
        st, h, p = req("POST", "/v1/players", body)
        check(st == 201 and p["token"], "register -> 201")
        check(ID.match(h["x-request-id"]), "a new id is 16 hex digits: %r" % h["x-request-id"])
        TOKENS.append(p["token"])
        players.append(p)
    st, _, v = req("POST", "/v1/matches",
                   {"game": "hearts", "players": [p["id"] for p in players],
                    "clock": {"move_seconds": 2 * HOUR, "reminder_seconds": HOUR,
                              "policy": "auto"}},
                   token=players[0]["token"])
    check(st == 201, "create -> 201 (%d %r)" % (st, v))
    mid = v["id"]
    for p in players:
        st, _, pv = req("GET", "/v1/matches/%d" % mid, token=p["token"])
        hand = pv["view"]["hands"][pv["you"]].get("cards") if st == 200 else None
        check(hand, "a seat's view has its hand (%r)" % pv)
        CARDS.update(hand)
    check(len(CARDS) == 52, "every card is in some hand (%d)" % len(CARDS))
    # A move, then the same move again (refused: not that seat's card any more).
    mover = next(p for p in players if req("GET", "/v1/matches/%d" % mid,
                                           token=p["token"])[2].get("legal"))
    legal = req("GET", "/v1/matches/%d" % mid, token=mover["token"])[2]["legal"][0]
    st, move_h, _ = req("POST", "/v1/matches/%d/moves" % mid, {"move": legal},
                        token=mover["token"])
    check(st == 201, "a move -> 201 (%d)" % st)
    st, bad_h, bad = req("POST", "/v1/matches/%d/moves" % mid, {"move": legal},
                         token=mover["token"])
    check(st in (409, 422) and bad["request_id"] == bad_h["x-request-id"],
          "a refused move's problem names its request (%d %r)" % (st, bad))
    st, nf_h, nf = req("GET", "/v1/no/such/thing?token=secret-in-query")
    check(st == 404 and nf["request_id"] == nf_h["x-request-id"], "a 404 names its request")
    st, _, _ = req("PUT", "/v1/players")
    check(st == 405, "a 405")
    st, _, _ = req("GET", "/v1/players/me", token="cpt_" + "0" * 64)
    check(st == 401, "an unknown token -> 401")
    st, _, _ = req("GET", "/matches/%d" % mid)
    check(st == 200, "a page")
    st, _, _ = req("POST", "/v1/matches", {"game": "hearts"})  # refused from its headers
    check(st == 401, "a body without a token -> 401 before the body is read")
    st, op_h, _ = req("GET", "/v1/admin/stats", token=OPERATOR)  # a line marked operator
    check(st == 200, "the operator's stats -> 200 (%d)" % st)
    # An event stream: its header at once, its line when it ends (with the bytes it sent).
    c = d.conn(timeout=10)
    c.request("GET", "/v1/matches/%d/events" % mid)
    r = c.getresponse()
    sid = r.getheader("X-Request-Id")
    check(r.status == 200 and sid and ID.match(sid), "an event stream has its X-Request-Id")
    first = r.read(4)
    check(first.startswith(b"id: "), "the stream sends (%r)" % first)
    r.close()
    c.close()
    # Its lines: one per answer, with its fields.
    got = wait_for(lambda: (lambda r: r if all(k in r for k in SEEN) else None)(requests_by_id()),
                   "a line for every request")
    for rid, (method, path, status) in SEEN.items():
        v = got[rid]
        check(v["method"] == method and v["path"] == path and v["status"] == status,
              "the line of %s %s says so: %r" % (method, path, v))
        check(v["client"] == "127.0.0.1" and isinstance(v["bytes"], int) and v["bytes"] > 0 and
              isinstance(v["duration_ms"], float) and v["level"] == "info",
              "the line's client, bytes, duration: %r" % v)
    m = got[move_h["x-request-id"]]
    check(m["route"] == "/v1/matches/{id}/moves" and m["player"] == mover["id"],
          "the move's line has its route pattern and its player: %r" % m)
    check(got[nf_h["x-request-id"]]["route"] is None, "a 404's route is null")
    sv = wait_for(lambda: requests_by_id().get(sid), "the stream's line once it ended")
    check(sv["route"] == "/v1/matches/{id}/events" and sv["status"] == 200 and
          sv["bytes"] > 0, "the stream's line: %r" % sv)
    check("secret-in-query" not in open(LOG).read(), "never the query string")
    ops = [v for v in got.values() if v.get("operator")]
    check(got[op_h["x-request-id"]] in ops, "the operator's request is marked operator: %r"
          % got[op_h["x-request-id"]])
    check(all(v["operator"] is True and "player" not in v for v in ops),
          "the operator is not a player: %r" % ops)


def test_request_id_from_a_proxy():
    st, h, _ = req("GET", "/healthz", headers={"X-Request-Id": "edge-42.a_B"})
    check(h["x-request-id"] == "edge-42.a_B", "a trusted proxy's id is kept: %r" % h)
    for bad in ("has space", "x" * 65, "quote\"d", "<b>"):
        st, h, _ = req("GET", "/healthz", headers={"X-Request-Id": bad})
        check(ID.match(h["x-request-id"]), "a bad id %r is replaced: %r" % (bad, h))
    st, h, _ = req("GET", "/healthz", headers={"X-Request-Id": "from-client-1"},
                   source="127.0.0.2")
    check(ID.match(h["x-request-id"]), "a client's own id is not taken: %r" % h)
    got = wait_for(lambda: (lambda r: r if all(k in r for k in SEEN) else None)(requests_by_id()),
                   "the lines")
    check(got["edge-42.a_B"]["route"] == "/healthz", "the line carries the proxy's id")
    check(got[h["x-request-id"]]["client"] == "127.0.0.2", "the client's address")


def test_libmicrohttpd_lines():
    # What libmicrohttpd says itself, of a request it answers alone (431: a header over the
    # connection's 8 KiB), is a line of the log, not text on standard error beside it.
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    c.request("GET", "/healthz", headers={"X-Pad": "a" * 10000})
    r = c.getresponse()
    r.read()
    c.close()
    check(r.status == 431, "a 10,000-byte header -> 431 (%d)" % r.status)
    got = wait_for(lambda: [v for v in lines() if v["event"] == "http"], "an http line")
    check(got[0]["level"] == "info" and "431" in got[0]["msg"],
          "libmicrohttpd's message, as a line of its own: %r" % got[0])
    check("431" not in d.stderr_text(), "nothing of it on standard error: %r" % d.stderr_text())


def test_delivery_and_clock_lines():
    wait_for(lambda: [v for v in lines() if v["event"] == "delivery"], "a delivery attempt line",
             timeout=20)
    dl = [v for v in lines() if v["event"] == "delivery"][0]
    for k in ("channel", "outbox", "player", "type", "attempt", "outcome", "duration_ms"):
        check(k in dl, "the delivery line has %r: %r" % (k, dl))
    check(dl["channel"] == "webhook" and dl["player"] == players[0]["id"] and
          dl["outcome"] == "retry" and dl["attempt"] == 1 and "next_attempt" in dl and
          dl["level"] == "warn" and "error" in dl, "a failed attempt, retried: %r" % dl)
    # The clock: the reminder an hour before the deadline, then the timeout.
    st, _, body = req("POST", "/v1/admin/clock", {"advance_seconds": HOUR + 60}, token=OPERATOR)
    check(st == 200, "advance")
    wait_for(lambda: [v for v in lines() if v.get("action") == "reminder"], "a reminder line")
    st, _, body = req("POST", "/v1/admin/clock", {"advance_seconds": HOUR}, token=OPERATOR)
    wait_for(lambda: [v for v in lines() if v.get("action") == "timeout_auto"], "a timeout line")
    t = [v for v in lines() if v.get("action") == "timeout_auto"][0]
    check(t["event"] == "clock" and t["match"] == mid and "seat" in t and "player" in t and
          "move" not in t, "the timeout's line: %r" % t)
    p = players[1]
    st, _, _ = req("POST", "/v1/players/me/vacation", {"days": 2}, token=p["token"])
    check(st in (200, 201), "a vacation (%d)" % st)
    st, _, _ = req("DELETE", "/v1/players/me/vacation", token=p["token"])
    check(st == 200, "back from it (%d)" % st)
    acts = [v["action"] for v in lines() if v["event"] == "clock" and v.get("player") == p["id"]]
    check("vacation_begun" in acts and "vacation_ended" in acts, "vacation lines: %r" % acts)


def test_no_secret_no_card():
    text = open(LOG).read()
    for t in TOKENS:
        check(t not in text, "no token in the log (%s...)" % t[:8])
    check("Bearer" not in text and "cpt_" not in text, "nothing like a token")
    for card in CARDS:
        hit = re.search(r"(?<![A-Za-z0-9])%s(?![A-Za-z0-9])" % re.escape(card), text)
        check(not hit, "no card in the log: %s at %r" % (card, text[max(0, hit.start() - 80):
                                                                  hit.end() + 20] if hit else ""))


def test_sighup_reopens():
    rotated = LOG + ".1"
    os.rename(LOG, rotated)
    st, h, _ = req("GET", "/healthz")
    before = h["x-request-id"]
    wait_for(lambda: before in requests_by_id(rotated), "a line to the moved file before SIGHUP")
    d.proc.send_signal(signal.SIGHUP)
    time.sleep(0.2)
    check(d.proc.poll() is None, "cardpostd lives on after SIGHUP")
    wait_for(lambda: os.path.exists(LOG), "a new file at the path")
    st, h, _ = req("GET", "/v1/leagues")
    after = h["x-request-id"]
    wait_for(lambda: after in requests_by_id(LOG), "the next line in the new file")
    check(after not in requests_by_id(rotated), "not in the old one")
    mode = os.stat(LOG).st_mode & 0o777
    check(mode & 0o007 == 0, "the new file is not world-readable (%o)" % mode)


def test_stop():
    rc, _ = d.stop()
    check(rc == 0, "exit 0")
    ev = [v for v in lines() if v["event"] == "stop"]
    check(len(ev) == 2 and "SIGTERM" in ev[0]["msg"], "the stop is logged: %r" % ev)
    with open(os.path.join(d.tmp, "cardpostd.stderr")) as f:
        err = f.read()
    check('"event":"request"' not in err, "with a log_file, no request line on stderr")


def test_check_config():
    conf = os.path.join(d.tmp, "logs.conf")
    with open(conf, "w") as f:
        f.write("log_level = loud\nlog_file = /nonexistent-dir/cardpost.log\n"
                "log_level = debug\nlog_file = %s\n" % os.path.join(d.tmp, "ok.log"))
    p = subprocess.run([CARDPOSTD, "--check-config", conf], capture_output=True, text=True)
    check(p.returncode == 1, "--check-config refuses the bad log settings (%d)" % p.returncode)
    check(re.search(r":1: log_level: bad value \"loud\" \(expected error, warn, info or debug\)",
                    p.stderr) and re.search(r":2: log_file: bad value", p.stderr) and
          ":3:" not in p.stderr and ":4:" not in p.stderr,
          "one line for each bad log setting: %r" % p.stderr)


def main():
    global d, LOG
    d = Daemon()
    LOG = os.path.join(d.tmp, "cardpost.log")
    d.env = {"CARDPOST_LOG_FILE": LOG, "CARDPOST_TEST_CLOCK": "1",
             "CARDPOST_ALLOW_PRIVATE_WEBHOOKS": "1", "CARDPOST_TRUSTED_PROXIES": "127.0.0.1"}
    d.start()
    try:
        run([test_requests, test_request_id_from_a_proxy, test_libmicrohttpd_lines,
             test_delivery_and_clock_lines,
             test_no_secret_no_card, test_sighup_reopens, test_stop, test_check_config])
    finally:
        d.kill()


if __name__ == "__main__":
    main()
