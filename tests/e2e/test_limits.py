# test_limits.py - end to end: the abuse limits of docs/security.md "Limits", each flooded
# against the real cardpostd: bodies refused from the headers (401 / 403 / 413) before a
# byte of them is held, connections per client address, requests per second per address and
# per token (429 with Retry-After), event streams per address (429) and in all (503), and a
# move's latency with hundreds of event streams open. Each flood checks the answers and
# that another client is served meanwhile (from another loopback address: 127.0.0.2 and on
# are the same machine to Linux; for the rate per token, another token); the floods of
# bodies, connections, client addresses and streams also that the daemon's memory (VmRSS)
# stays bounded.
import http.client
import json
import os
import random
import resource
import select
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (CARDPOSTD, OPERATOR, Daemon, Stream, check,  # noqa: E402
                     check_problem, run, wait_for)

rng = random.Random(int(os.environ.get("E2E_SEED", "13")))
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
FIGURES = []  # printed at the end: what docs/benchmarks.md and the report quote


def rss_kb(d):
    with open("/proc/%d/status" % d.proc.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def slack(d):
    """How much more memory the daemon's build may use: AddressSanitizer keeps freed memory
    in quarantine for a while (up to 256 MiB), so under it RSS only shows gross growth."""
    with open("/proc/%d/maps" % d.proc.pid) as f:
        return 16 if "libasan" in f.read() else 1


def connect(d, source="127.0.0.1", timeout=10):
    return socket.create_connection(("127.0.0.1", d.port), timeout=timeout,
                                    source_address=(source, 0))


def get(d, path, source="127.0.0.2", token=None):
    """One GET from `source`: (status, lower-case headers, parsed body)."""
    s = connect(d, source)
    try:
        head = "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" % path
        if token:
            head += "Authorization: Bearer %s\r\n" % token
        s.sendall((head + "\r\n").encode())
        r = http.client.HTTPResponse(s)
        r.begin()
        text = r.read().decode()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, json.loads(text or "null")
    finally:
        s.close()


def response_of(sock):
    r = http.client.HTTPResponse(sock)
    r.begin()
    text = r.read().decode()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, json.loads(text or "null")


def feed(sock, n):
    """Push up to n bytes of body without blocking (the peer may have stopped reading)."""
    sock.setblocking(False)
    chunk = b"x" * 65536
    sent = 0
    try:
        while sent < n:
            sent += sock.send(chunk[:min(len(chunk), n - sent)])
    except (BlockingIOError, BrokenPipeError, ConnectionResetError):
        pass
    sock.setblocking(True)
    return sent


def check_retry_after(resp, what):
    st, hdrs, body = resp
    check(hdrs.get("retry-after", "").isdigit() and int(hdrs["retry-after"]) >= 1,
          "%s: a Retry-After header in whole seconds (got %r)" % (what, hdrs.get("retry-after")))
    check(body.get("retry_after") == int(hdrs["retry-after"]),
          "%s: the body's retry_after is the header's" % what)


# ---- Bodies: authentication and length from the headers (defect 3) -------------------------

def test_uploads_refused_from_headers():
    with Daemon(env={"CARDPOST_MAX_CONNECTIONS_PER_ADDRESS": "0"}) as d:
        me = d.player("uploader")
        for _ in range(20):
            get(d, "/healthz")
        before = rss_kb(d)
        socks = []
        t0 = time.monotonic()
        for i in range(100):
            s = connect(d)
            s.sendall(b"POST /v1/mail/inbound HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: message/rfc822\r\nContent-Length: 1048576\r\n\r\n")
            socks.append(s)
        for s in socks:
            feed(s, 512 * 1024)  # half of it, and never the rest
        # Another client is served while they hang.
        st, _, body = get(d, "/v1/players/me", token=me["token"])
        check(st == 200 and body["id"] == me["id"], "another client is served during the flood")
        answers = [response_of(s) for s in socks]
        took = time.monotonic() - t0
        for a in answers:
            check_problem(a, 401, "unauthorized", "an unauthenticated upload")
        after = rss_kb(d)
        FIGURES.append("100 unauthenticated unfinished 1 MiB uploads: RSS %d -> %d KiB (+%d), "
                       "all refused 401 within %.2f s" % (before, after, after - before, took))
        check(after - before < 8 * 1024 * slack(d),
              "100 unfinished 1 MiB uploads grow RSS by less than 8 MiB (%d -> %d KiB)"
              % (before, after))
        for s in socks:
            s.close()

        # A player's token is not the gateway's: 403, still before the body.
        s = connect(d)
        s.sendall(("POST /v1/mail/inbound HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Length: 1048576\r\n\r\n" % me["token"]).encode())
        check_problem(response_of(s), 403, "forbidden", "a player's upload of mail")
        s.close()
        # A bad token: 401 before the body.
        s = connect(d)
        s.sendall(b"POST /v1/matches HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\n"
                  b"Content-Length: 60000\r\n\r\n")
        check_problem(response_of(s), 401, "unauthorized", "a body with an unknown token")
        s.close()
        # Chunks without a token: 401 before the first chunk.
        s = connect(d)
        s.sendall(b"POST /v1/matches HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        check_problem(response_of(s), 401, "unauthorized", "a chunked body without a token")
        s.close()
        # Too long, declared: 413 before the body, even from the operator.
        s = connect(d)
        s.sendall(("POST /v1/mail/inbound HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Length: %d\r\n\r\n" % (OPERATOR, 8 << 20)).encode())
        check_problem(response_of(s), 413, "body_too_large", "8 MiB of mail declared")
        s.close()
        # Registration takes a body without a token (up to 64 KiB).
        st, _, _ = d.request("POST", "/v1/players", {"name": "late"})
        check(st == 201, "a registration is still served without a token")

        # Chunks past the limit are counted, not held; a body that does not end is cut off.
        before = rss_kb(d)
        s = connect(d)
        s.sendall(("POST /v1/matches HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n" % me["token"]).encode())
        chunk = b"%x\r\n%s\r\n" % (16384, b"x" * 16384)
        sent, cut = 0, False
        try:
            while sent < 16 << 20:
                s.sendall(chunk)
                sent += 16384
        except (BrokenPipeError, ConnectionResetError):
            cut = True
        s.close()
        check(cut and sent <= 4 << 20, "an endless chunked body is cut off within a few times "
              "the 64 KiB limit (after %d bytes)" % sent)
        check(rss_kb(d) - before < 2048 * slack(d), "and nothing of it is held")


# ---- Connections per client address ----------------------------------------------------------

def test_connections_per_address():
    with Daemon(env={"CARDPOST_MAX_CONNECTIONS_PER_ADDRESS": "20", "CARDPOST_HTTP_THREADS": "2"}) as d:
        before = rss_kb(d)
        # (from an address of their own: the start's GET /healthz came from 127.0.0.1, and a
        # loaded machine may not have let go of its connection yet, which counts against
        # 127.0.0.1's 20 until then: once 19 were kept so)
        flood_from = "127.0.0.5"
        socks = [connect(d, source=flood_from) for _ in range(200)]
        time.sleep(0.5)
        readable, _, _ = select.select(socks, [], [], 1.0)
        closed = 0
        for s in readable:
            try:
                closed += s.recv(1) == b""
            except ConnectionResetError:
                closed += 1
        kept = len(socks) - closed
        check(20 <= kept <= 22, "of 200 idle connections from one address about 20 are kept "
              "(kept %d)" % kept)
        st, _, body = get(d, "/healthz", source="127.0.0.3")
        check(st == 200 and body == {"status": "ok"},
              "another address is served while one holds its 20")
        after = rss_kb(d)
        FIGURES.append("200 idle connections from one address (cap 20): %d kept, RSS %d -> %d "
                       "KiB" % (kept, before, after))
        check(after - before < 4 * 1024 * slack(d), "RSS stays within 4 MiB (%d -> %d KiB)" % (before, after))
        for s in socks:
            s.close()

        def served():
            try:
                return get(d, "/healthz", source=flood_from)[0] == 200
            except OSError:
                return False
        wait_for(served, "the address is served again once its connections closed")


# ---- Requests per second per client address and per token ------------------------------------

def flood(d, path, n, token=None, source="127.0.0.1"):
    """n GETs over one keep-alive connection as fast as they go: the answers."""
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=10,
                                   source_address=(source, 0))
    out = []
    h = {"Authorization": "Bearer " + token} if token else {}
    for _ in range(n):
        c.request("GET", path, headers=h)
        r = c.getresponse()
        text = r.read().decode()
        out.append((r.status, {k.lower(): v for k, v in r.getheaders()}, json.loads(text)))
        if r.getheader("Connection", "").lower() == "close":
            c.close()
            c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=10,
                                           source_address=(source, 0))
    c.close()
    return out


def test_rate_per_address():
    env = {"CARDPOST_RATE_PER_ADDRESS": "5", "CARDPOST_RATE_BURST_PER_ADDRESS": "10"}
    with Daemon(env=env) as d:
        time.sleep(2.5)  # the bucket refills after the harness's own requests
        got = flood(d, "/v1/leagues", 60)
        ok = [a for a in got if a[0] == 200]
        limited = [a for a in got if a[0] == 429]
        check(len(ok) + len(limited) == 60, "every answer is 200 or 429")
        check(10 <= len(ok) <= 14, "a burst of 10 (and what refills meanwhile) is served "
              "(%d of 60)" % len(ok))
        for a in limited[:3]:
            check_problem(a, 429, "rate_limited", "a request beyond the address's rate")
            check_retry_after(a, "a request beyond the address's rate")
        st, _, _ = get(d, "/v1/leagues", source="127.0.0.2")
        check(st == 200, "another address is served while one is limited")
        # A flood from many addresses holds a bounded table.
        before = rss_kb(d)
        for i in range(2000):
            s = connect(d, source="127.1.%d.%d" % (i // 250, 1 + i % 250))
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            s.recv(4096)
            s.close()
        after = rss_kb(d)
        FIGURES.append("rate per address 5/s (burst 10): %d of 60 served, 429 Retry-After %s; "
                       "2,000 addresses: RSS %d -> %d KiB" % (len(ok), limited[0][1]["retry-after"],
                                                              before, after))
        check(after - before < 4 * 1024 * slack(d),
              "2,000 client addresses grow RSS by less than 4 MiB (%d -> %d KiB)"
              % (before, after))
        time.sleep(1.2)
        check(get(d, "/v1/leagues", source="127.0.0.1")[0] == 200,
              "the limited address is served again after its Retry-After")


def test_rate_per_token():
    env = {"CARDPOST_RATE_PER_TOKEN": "5", "CARDPOST_RATE_BURST_PER_TOKEN": "10"}
    with Daemon(env=env) as d:
        a, b = d.player("greedy"), d.player("patient")
        got = flood(d, "/v1/players/me", 40, token=a["token"])
        limited = [x for x in got if x[0] == 429]
        ok = [x for x in got if x[0] == 200]
        check(10 <= len(ok) <= 13 and len(ok) + len(limited) == 40,
              "a token's burst of 10 is served, then 429 (%d served)" % len(ok))
        check_problem(limited[0], 429, "rate_limited", "a request beyond the token's rate")
        check_retry_after(limited[0], "a request beyond the token's rate")
        st, _, body = d.request("GET", "/v1/players/me", token=b["token"])
        check(st == 200 and body["id"] == b["id"], "another token, same address, is served")
        st, _, _ = d.request("GET", "/v1/admin/stats", token=OPERATOR)
        check(st == 200, "the operator is not limited per token")
        FIGURES.append("rate per token 5/s (burst 10): %d of 40 served" % len(ok))


def test_trusted_proxies():
    env = {"CARDPOST_RATE_PER_ADDRESS": "5", "CARDPOST_RATE_BURST_PER_ADDRESS": "10",
           "CARDPOST_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8"}
    with Daemon(env=env) as d:
        time.sleep(2.5)

        def via_proxy(client, n):
            c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=10)
            out = []
            for _ in range(n):
                c.request("GET", "/v1/leagues",
                          headers={"X-Forwarded-For": "%s, 10.1.2.3" % client})
                r = c.getresponse()
                r.read()
                out.append(r.status)
            c.close()
            return out
        got = via_proxy("203.0.113.5", 30)
        check(got.count(429) >= 15, "one client behind the proxy is limited (%r)" % got)
        check(via_proxy("203.0.113.6", 1) == [200],
              "another client behind the same proxy is served")
    # Without trusted proxies X-Forwarded-For is nobody's word: it changes nothing.
    env.pop("CARDPOST_TRUSTED_PROXIES")
    with Daemon(env=env) as d:
        time.sleep(2.5)
        statuses = []
        c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=10)
        for i in range(30):
            c.request("GET", "/v1/leagues", headers={"X-Forwarded-For": "198.51.100.%d" % i})
            r = c.getresponse()
            r.read()
            statuses.append(r.status)
        c.close()
        check(statuses.count(429) >= 15, "a made-up X-Forwarded-For escapes no limit (%r)"
              % statuses)
    for bad in ("127.0.0.1/33", "localhost", "::1/129", "10.0.0.0/x"):
        p = subprocess.run([CARDPOSTD, "--db", "/nonexistent/x.db", "--listen", "127.0.0.1:0"],
                           env=dict(os.environ, CARDPOST_TRUSTED_PROXIES=bad),
                           capture_output=True, text=True, timeout=20)
        check(p.returncode != 0 and "trusted_proxies" in p.stderr,
              "trusted_proxies = %s is refused at start (%d %r)" % (bad, p.returncode, p.stderr))
    for key in ("RATE_PER_ADDRESS", "MAX_STREAMS", "MAX_CONNECTIONS_PER_ADDRESS"):
        p = subprocess.run([CARDPOSTD, "--db", "/nonexistent/x.db", "--listen", "127.0.0.1:0"],
                           env=dict(os.environ, **{"CARDPOST_" + key: "-1"}),
                           capture_output=True, text=True, timeout=20)
        check(p.returncode != 0 and key.lower() in p.stderr,
              "%s = -1 is refused at start (%r)" % (key.lower(), p.stderr))


# ---- Event streams per address and in all, and their cost to a move (defect 6) ------------------

def open_stream(d, mid, source):
    s = connect(d, source)
    # (HTTP/1.0: the body comes as it is, not in chunks, so two streams' bytes compare)
    s.sendall(("GET /v1/matches/%d/events HTTP/1.0\r\nHost: x\r\n\r\n" % mid).encode())
    return s


def first_status(s):
    line = b""
    while not line.endswith(b"\r\n"):
        c = s.recv(1)
        if not c:
            break
        line += c
    return int(line.split()[1]) if line.startswith(b"HTTP/1.") else 0


def test_streams_per_address_and_in_all():
    env = {"CARDPOST_MAX_STREAMS_PER_ADDRESS": "5", "CARDPOST_MAX_STREAMS": "8"}
    with Daemon(env=env) as d:
        seats = d.players(4, prefix="lim")
        mid = d.create("hearts", seats)["id"]
        mine = [open_stream(d, mid, "127.0.0.1") for _ in range(5)]
        check(all(first_status(s) == 200 for s in mine), "5 streams from one address open")
        st, hdrs, body = get(d, "/v1/matches/%d/events" % mid, source="127.0.0.1")
        check_problem((st, hdrs, body), 429, "too_many_streams", "a 6th stream from one address")
        check_retry_after((st, hdrs, body), "a 6th stream from one address")
        others = [open_stream(d, mid, "127.0.0.2") for _ in range(3)]
        check(all(first_status(s) == 200 for s in others), "3 more from another address")
        st, hdrs, body = get(d, "/v1/matches/%d/events" % mid, source="127.0.0.3")
        check_problem((st, hdrs, body), 503, "unavailable", "a 9th stream in all")
        check_retry_after((st, hdrs, body), "a 9th stream in all")
        st, _, body = get(d, "/v1/matches/%d" % mid, source="127.0.0.4")
        check(st == 200 and body["id"] == mid, "another address is served while the streams "
              "are full (%d %r)" % (st, body))
        mine[0].close()

        def reopened():
            s = open_stream(d, mid, "127.0.0.1")
            ok = first_status(s) == 200
            if ok:
                mine.append(s)
            else:
                s.close()
            return ok
        wait_for(reopened, "a stream closed makes room for another", timeout=10, step=0.2)
        for s in mine + others:
            s.close()


def play_some(d, mid, seats, n):
    """n legal moves (the seats to move, first legal move): their latencies in ms."""
    lat = []
    for _ in range(n):
        v = d.view(mid)
        s = v["to_move"][0]
        mv = d.view(mid, seats[s]["token"])["legal"][0]
        t = time.monotonic()
        st, _, body = d.move(mid, seats[s]["token"], mv)
        lat.append((time.monotonic() - t) * 1000)
        check(st == 201, "a legal move is played (%d %r)" % (st, body))
    return lat


def test_move_latency_with_streams():
    n_streams = int(os.environ.get("LIMITS_STREAMS", "800"))
    with Daemon() as d:
        seats = d.players(4, prefix="fan")
        mid = d.create("hearts", seats, {"target": 500})["id"]
        play_some(d, mid, seats, 300)
        events = d.view(mid)["seq"]
        alone = play_some(d, mid, seats, 20)
        before = rss_kb(d)
        socks = [open_stream(d, mid, "127.0.%d.%d" % (2 + i // 200, 1 + i % 200))
                 for i in range(n_streams)]
        check(all(first_status(s) == 200 for s in socks), "%d streams open" % n_streams)
        sample = Stream(d, mid)  # one read as it goes, to check what they all get
        sample.until_state()
        seq0 = d.view(mid)["seq"]
        lat = play_some(d, mid, seats, 40)
        after = rss_kb(d)
        p50, p90 = statistics.median(lat), sorted(lat)[int(len(lat) * 0.9)]
        FIGURES.append("move latency on a %d-event Hearts match: alone p50 %.1f ms; with %d "
                       "anonymous streams p50 %.1f ms, p90 %.1f ms, max %.1f ms; RSS %d -> %d KiB"
                       % (events, statistics.median(alone), n_streams, p50, p90, max(lat),
                          before, after))
        check(p50 < 50, "with %d streams open a move's p50 is under 50 ms (%.1f ms)"
              % (n_streams, p50))
        # (each unread stream holds what its socket has not taken of its first message, the
        # state and the match's events so far: about 47 KiB here)
        check(after - before < n_streams * 80 * slack(d),
              "%d streams that read nothing hold under 80 KiB each (%d -> %d KiB)"
              % (n_streams, before, after))
        # What the streams got: every move's event, in order, each followed by the state (the
        # moves' seqs as the spectators' log has them: a deal between two hands takes a seq
        # and is not shown while the match runs).
        expected = [e["seq"] for e in d.log(mid)["events"] if e["seq"] >= seq0]
        check(len(expected) == 40, "the log holds the 40 moves since seq %d (%d)"
              % (seq0, len(expected)))
        seen = []
        while len(seen) < len(expected):
            msgs = sample.until_state()
            seen += [m["id"] for m in msgs if m["event"] == "event"]
            check(msgs[-1]["data"]["seq"] - 1 == msgs[-1]["id"], "the state follows the events")
        check(seen == expected, "the stream carries every move's event once, in order (%r, "
              "expected %r)" % (seen[:5], expected[:5]))
        check(msgs[-1]["data"] == d.view(mid), "the last state is the spectator's view")
        # Two of the many streams got the same events and end in the same state (a stream
        # that fell behind the feed may have fewer state messages in between).
        final = d.view(mid)["seq"] - 1
        got = []
        for s in (socks[0], socks[-1]):
            s.settimeout(10)
            buf = b""
            while ("id: %d\nevent: state\n" % final).encode() not in buf:
                more = s.recv(65536)
                check(more, "a stream goes on")
                buf += more
            msgs = [m for m in buf[buf.index(b"\r\n\r\n") + 4:].decode().split("\n\n") if m]
            events = [m for m in msgs if "\nevent: event\n" in m and
                      int(m.split("\n", 1)[0][4:]) >= seq0]
            got.append((events, msgs[-1]))
            check(len(events) >= 40 and len(set(events)) == len(events),
                  "a stream got each new event once (%d)" % len(events))
        check(got[0] == got[1], "two anonymous streams got the same events and last state")
        sample.close()
        for s in socks:
            s.close()


if __name__ == "__main__":
    run([test_uploads_refused_from_headers, test_connections_per_address, test_rate_per_address,
         test_rate_per_token, test_trusted_proxies, test_streams_per_address_and_in_all,
         test_move_latency_with_streams])
    for f in FIGURES:
        print("figure: " + f)
