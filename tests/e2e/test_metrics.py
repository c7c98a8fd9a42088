# test_metrics.py - end to end: GET /metrics (docs/operations.md "Monitoring"). The
# operator's alone on the API's address (401 without a token, 403 with a player's); a move
# moves the counters it should (moves accepted, a refused move under its reason, requests by
# route and status, group commits, the match cache); a real scrape after some traffic
# passes `promtool check metrics` (Debian's prometheus package), and the starter dashboard
# asks only for its metrics; webhook deliveries move the delivery counters (a failing
# endpoint: retries, and pending in the database's gauge); a scrape answers while the
# daemon's writer waits for the database (the gauges read on the reading connection); the
# clock's reminders and timeouts are counted (on the test clock); with metrics_listen the
# metrics are served on that address without a token, and /metrics on the API's is a 404.
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (OPERATOR, TEMP_DIRS, Daemon, WebhookReceiver, answer_within,  # noqa: E402
                     check, check_problem, free_port, play_match, run, wait_for,
                     while_the_writer_waits)

import http.client  # noqa: E402
import random  # noqa: E402

d = Daemon()
MOVES = 'method="POST",route="/v1/matches/{id}/moves"'
CONTENT_TYPE = "text/plain; version=0.0.4"


def scrape():
    """The operator's scrape: its text, and its samples as {'name{labels}': value}."""
    st, hdrs, text = d.request("GET", "/metrics", token=OPERATOR)
    check(st == 200, "GET /metrics with the operator's token -> 200 (got %d %r)" % (st, text))
    check(hdrs.get("content-type", "").startswith(CONTENT_TYPE),
          "the exposition's Content-Type is %s (got %r)" % (CONTENT_TYPE, hdrs.get("content-type")))
    return text, samples(text)


def scrape_when(pred, what):
    """The first scrape whose samples satisfy pred: a request is counted when libmicrohttpd
    reports it complete, which may come a moment after its client has read the answer."""
    found = []

    def ready():
        found[:] = [scrape()[1]]
        return pred(found[0])
    wait_for(ready, what, timeout=5)
    return found[0]


def samples(text):
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            check(key not in out, "one sample per series: %s" % key)
            out[key] = float(value)
    return out


def delta(before, after, key):
    return after.get(key, 0) - before.get(key, 0)


def test_operator_only():
    p = d.player("scraper")
    check_problem(d.request("GET", "/metrics"), 401, "unauthorized", "/metrics without a token")
    check_problem(d.request("GET", "/metrics", token=p["token"]), 403, "forbidden",
                  "/metrics with a player's token")
    scrape_when(lambda s: s.get(
        'cardpost_http_requests_total{method="GET",route="/metrics",code="403"}') == 1,
        "the refused scrapes are counted")
    text, s = scrape()
    for name in ("cardpost_http_requests_total", "cardpost_moves_accepted_total",
                 "process_resident_memory_bytes", "process_open_fds", "cardpost_database_bytes",
                 "cardpost_database_wal_bytes", "cardpost_outbox_pending",
                 "cardpost_event_streams_open", "cardpost_group_commit_duration_seconds"):
        check("# TYPE %s " % name in text, "the scrape has %s" % name)
    check(s["process_resident_memory_bytes"] > 1 << 20, "some resident memory")
    check(s["process_open_fds"] > 3, "some open files")
    check(s["cardpost_database_bytes"] > 0, "the database has a size")
    check(s.get('cardpost_http_requests_total{method="GET",route="/metrics",code="401"}') == 1 and
          s.get('cardpost_http_requests_total{method="GET",route="/metrics",code="403"}') == 1,
          "the refused scrapes are counted by route and status")


def test_a_move_moves_the_counters():
    seats = d.players(4, prefix="m")
    v = d.create("hearts", seats, {"target": 1})
    mid, t0 = v["id"], seats[0]["token"]
    mv = d.view(mid, t0)["legal"][0]
    _, before = scrape()
    st, _, after_move = d.move(mid, t0, mv)
    check(st == 201, "the move is accepted (%d %r)" % (st, after_move))
    check_problem(d.move(mid, t0, mv), 409, "not_your_turn", "a second pass")
    check_problem(d.move(mid, t0, "pass XX"), 422, "bad_notation", "an unreadable move")
    after = scrape_when(lambda a: delta(
        before, a, 'cardpost_http_request_duration_seconds_count{%s}' % MOVES) >= 3,
        "the three moves' requests counted")
    check(delta(before, after, "cardpost_moves_accepted_total") == 1, "moves accepted +1")
    refused = {k: v for k, v in after.items() if "refused" in k}
    check(delta(before, after, 'cardpost_moves_refused_total{reason="not_your_turn"}') == 1 and
          delta(before, after, 'cardpost_moves_refused_total{reason="bad_notation"}') == 1,
          "refused moves +1 under each reason (%r)" % refused)
    check(delta(before, after, 'cardpost_http_requests_total{%s,code="201"}' % MOVES) == 1,
          "POST moves 201 +1")
    check(delta(before, after, 'cardpost_http_requests_total{%s,code="409"}' % MOVES) == 1 and
          delta(before, after, 'cardpost_http_requests_total{%s,code="422"}' % MOVES) == 1,
          "POST moves 409 +1, 422 +1")
    check(delta(before, after, 'cardpost_http_request_duration_seconds_count{%s}' % MOVES) == 3,
          "the move route's latency histogram has the three")
    check(delta(before, after, 'cardpost_group_commits_total{result="ok"}') >= 1 and
          delta(before, after, "cardpost_group_commit_writes_sum") >= 1 and
          delta(before, after, "cardpost_group_commit_duration_seconds_count") >= 1,
          "the move's group commit is counted, with its write and its commit time")
    check(delta(before, after, "cardpost_match_cache_hits_total") >= 3,
          "the match was found in memory for each move")
    check(after["cardpost_match_cache_matches"] >= 1, "the match is in memory")
    # The raw path never becomes a label: one series for every match's moves.
    check(not any("/v1/matches/%d" % mid in k for k in after), "no raw path in a label")


def test_promtool_after_traffic():
    promtool = shutil.which("promtool")
    check(promtool, "promtool is installed (Debian's prometheus package; ops/test installs it)")
    rng = random.Random(16)
    seats = d.players(2, prefix="t")
    v = d.create("snag", seats)
    play_match(d, v["id"], seats, rng)
    d.request("GET", "/")  # a page: route "other"
    d.request("GET", "/nowhere")  # a 404
    d.request("GET", "/v1/matches/%d/log" % v["id"])
    running = d.create("hearts", d.players(4, prefix="s"), {"target": 1})
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=10)
    c.request("GET", "/v1/matches/%d/events" % running["id"])
    r = c.getresponse()
    check(r.status == 200, "the event stream opens (%d)" % r.status)
    r.read(10)
    _, s = scrape()
    c.close()
    check(s["cardpost_event_streams_open"] >= 1,
          "the open event stream is counted (%r)" % s["cardpost_event_streams_open"])
    scrape_when(lambda a: a.get(
        'cardpost_http_requests_total{method="other",route="other",code="404"}', 0) >= 1,
        "a request no route answers is counted as route other")
    text, s = scrape()
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    check(p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(),
          "promtool check metrics passes without a remark (%d %r %r)" %
          (p.returncode, p.stdout, p.stderr))


def test_dashboard_names():
    """Every metric the starter Grafana dashboard (ops/grafana/cardpost.json) asks for is one
    the scrape has."""
    root = os.environ.get("CARDPOST_SOURCE_ROOT",
                          os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    with open(os.path.join(root, "ops", "grafana", "cardpost.json")) as f:
        dash = json.load(f)
    text, _ = scrape()
    families = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    check(exprs, "the dashboard has queries")
    for e in exprs:
        for name in re.findall(r"\b((?:cardpost|process)_[a-z_]+)", e):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            check(name in families or base in families,
                  "the dashboard's %s is a metric of the scrape" % name)


def test_deliveries():
    """Webhook deliveries move the delivery counters and histograms; a failing endpoint's
    notifications show as retries and in the pending gauge, read from the database."""
    import tempfile
    tmp = tempfile.mkdtemp(prefix="cardpost-metrics-")
    TEMP_DIRS.append(tmp)
    recv = WebhookReceiver(tmp, "hooks").start()
    try:
        with Daemon(tmp=tmp, env={"CARDPOST_ALLOW_PRIVATE_WEBHOOKS": "1"}) as w:
            ps = []
            for i in range(2):
                st, _, p = w.request("POST", "/v1/players", {
                    "name": "w%d" % i, "webhook_url": recv.url("/hook/w%d" % i),
                    "preferences": {"seat_without_asking": True}})
                check(st == 201, "register a player with a webhook (%d %r)" % (st, p))
                ps.append(p)
            w.create("snag", ps)
            wait_for(lambda: len(recv.records()) >= 2, "both match_started webhooks arrive")

            def figures():
                st, _, text = w.request("GET", "/metrics", token=OPERATOR)
                check(st == 200, "scrape -> 200")
                return samples(text)
            hook = 'channel="webhook"'
            wait_for(lambda: figures().get('cardpost_outbox_delivered_total{%s}' % hook, 0) >= 2,
                     "the deliveries are counted")
            s = figures()
            check(s['cardpost_delivery_attempts_total{%s,outcome="delivered"}' % hook] >= 2 and
                  s['cardpost_delivery_attempt_duration_seconds_count{%s}' % hook] >= 2 and
                  s['cardpost_delivery_latency_seconds_count{%s}' % hook] >= 2,
                  "attempts and their times by channel")
            recv.set_status(500)
            w.create("snag", ps)
            wait_for(lambda: figures().get(
                'cardpost_delivery_attempts_total{%s,outcome="retry"}' % hook, 0) >= 1,
                "a failed attempt is counted as a retry")
            check(figures()['cardpost_outbox_pending{%s}' % hook] >= 1,
                  "its notification is pending in the database")
    finally:
        recv.stop()


def test_scrape_while_the_writer_waits():
    """A scrape reads the outbox's gauges on the reading connection: while the daemon's
    writer waits for the database (another connection holds its write lock, and a
    registration is stuck behind it), GET /metrics still answers at once, with them. Read on
    the writing connection, the scrape waited behind the stuck write, and every commit waits
    behind a scrape that counts a large backlog (docs/decisions.md "A scrape never waits
    for the writer")."""
    with Daemon() as w:
        st, text = while_the_writer_waits(
            w, lambda: answer_within(w, "GET", "/metrics", 5, token=OPERATOR))
        check(st == 200 and 'cardpost_outbox_pending{channel="email"}' in text,
              "the scrape answers with the outbox's gauges while the writer waits (%d)" % st)


def test_clock_actions():
    """The clock's reminders and timeouts are counted (the daemon on its test clock)."""
    hour = 3600
    with Daemon(env={"CARDPOST_TEST_CLOCK": "1"}) as c:
        ps = []
        for i in range(2):
            st, _, p = c.request("POST", "/v1/players", {
                "name": "c%d" % i, "preferences": {"seat_without_asking": True}})
            check(st == 201, "register (%d %r)" % (st, p))
            ps.append(p)
        st, _, v = c.request("POST", "/v1/matches", {
            "game": "snag", "players": [p["id"] for p in ps],
            "clock": {"move_seconds": 10 * hour, "reminder_seconds": 2 * hour}},
            token=ps[0]["token"])
        check(st == 201, "a match with a clock (%d %r)" % (st, v))

        def figures():
            st, _, text = c.request("GET", "/metrics", token=OPERATOR)
            check(st == 200, "scrape -> 200")
            return samples(text)
        before = figures()
        check(before["cardpost_clock_reminders_total"] == 0 and
              before["cardpost_clock_timeouts_total"] == 0, "no clock action yet")
        c.advance(8 * hour + 60)
        wait_for(lambda: figures()["cardpost_clock_reminders_total"] == 1, "the reminder counted")
        c.advance(2 * hour)
        wait_for(lambda: figures()["cardpost_clock_timeouts_total"] >= 1, "the timeout counted")
        after = figures()
        check(delta(before, after, "cardpost_moves_accepted_total") >= 1,
              "the clock's move is a move accepted")


def test_separate_address():
    port = free_port()
    with Daemon(env={"CARDPOST_METRICS_LISTEN": "127.0.0.1:%d" % port}) as m:
        for token in (None, OPERATOR):
            check_problem(m.request("GET", "/metrics", token=token), 404, "not_found",
                          "/metrics on the API's address with metrics_listen set")
        def other_address():
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/metrics")
            r = c.getresponse()
            text = r.read().decode()
            check(r.status == 200 and r.getheader("Content-Type").startswith(CONTENT_TYPE),
                  "GET /metrics on metrics_listen without a token -> 200 (%d)" % r.status)
            c.close()
            return text
        wait_for(lambda: re.search(r"^cardpost_http_requests_total\{method=\"GET\","
                                   r"route=\"/metrics\",code=\"404\"\} 2$", other_address(),
                                   re.M),
                 "the API's 404s for /metrics are counted", timeout=5)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/v1/players/me")
        r = c.getresponse()
        r.read()
        check(r.status == 404, "only /metrics is served there (%d)" % r.status)
        c.close()
        # A query of 600 empty parameters is more than libmicrohttpd's 32 KiB a connection
        # there holds: cut off and answered, not left hanging (docs/security.md "Limits").
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/metrics?" + "&" * 600)
        r = c.getresponse()
        body = json.loads(r.read().decode())
        check(r.status == 414 and body["code"] == "uri_too_long",
              "a query of 600 parameters on metrics_listen -> 414 (%d)" % r.status)
        c.close()


if __name__ == "__main__":
    with d:
        run([test_operator_only, test_a_move_moves_the_counters, test_promtool_after_traffic,
             test_dashboard_names])
    run([test_deliveries, test_scrape_while_the_writer_waits, test_clock_actions,
         test_separate_address])
