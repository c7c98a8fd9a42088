# harness.py - the shared end-to-end harness for cardpostd: start the real daemon on a free
# loopback port with a fresh database, JSON requests over http.client, a server-sent-event
# reader, and a player that plays whole matches by random legal moves. Stdlib only; the
# tests in this directory import it (env CARDPOSTD and CARDPOST name the programs).
import atexit
import http.client
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

import apidoc

CARDPOSTD = os.environ.get("CARDPOSTD")
CARDPOST = os.environ.get("CARDPOST")
OPERATOR = "op-token-for-tests-0123456789abcdef"
PROBLEM = "application/problem+json"


TEMP_DIRS = []  # removed by run() when every test passed, kept for a look otherwise
DAEMONS = []    # killed at exit if a failed test left one running
atexit.register(lambda: [d.kill() for d in DAEMONS])


class Failure(Exception):
    pass


def check(cond, what):
    """An assertion that survives python -O and says what it checked."""
    if not cond:
        raise Failure(what)


# ---- The daemon ---------------------------------------------------------------------------

# The limits per client address and token (docs/security.md "Limits") off: every test client
# comes from 127.0.0.1 and goes as fast as it can. test_limits.py passes its own.
UNLIMITED = {"CARDPOST_RATE_PER_ADDRESS": "0", "CARDPOST_RATE_PER_TOKEN": "0",
             "CARDPOST_MAX_CONNECTIONS_PER_ADDRESS": "0", "CARDPOST_MAX_STREAMS_PER_ADDRESS": "0",
             "CARDPOST_MAX_STREAMS": "0"}


class Daemon:
    """The real build/cardpostd on 127.0.0.1:0 over `db` (a file in a fresh temp dir unless
    given; the PostgreSQL database CARDPOST_TEST_PG names when that is set: the _pg tests,
    through tests/pg/run-with-pg.sh). start() waits for the printed port; stop() sends SIGTERM and returns (exit code,
    seconds it took)."""

    def __init__(self, db=None, tmp=None, env=None, port=0):
        check(CARDPOSTD, "env CARDPOSTD names build/cardpostd")
        self.listen_port = port  # 0: a free port; else this one (a restart on the same URL)
        self.env = env  # extra environment (CARDPOST_SMTP_URL, ...) for the daemon
        if tmp is None:
            tmp = tempfile.mkdtemp(prefix="cardpost-e2e-")
            TEMP_DIRS.append(tmp)
        self.tmp = tmp
        self.db = (db or os.environ.get("CARDPOST_TEST_PG")
                   or os.path.join(self.tmp, "cardpost.db"))
        self.proc = None
        self.port = None

    def start(self):
        self.stderr = open(os.path.join(self.tmp, "cardpostd.stderr"), "ab")
        DAEMONS.append(self)
        self.proc = subprocess.Popen(
            [CARDPOSTD, "--db", self.db, "--listen", "127.0.0.1:%d" % self.listen_port,
             "--operator-token", OPERATOR],
            stdout=subprocess.PIPE, stderr=self.stderr,
            env={**os.environ, **UNLIMITED, **(self.env or {})})
        ready, _, _ = select.select([self.proc.stdout], [], [], 20)
        check(ready, "cardpostd printed its address within 20 s")
        line = self.proc.stdout.readline().decode()
        m = re.match(r"cardpostd: listening on http://127\.0\.0\.1:(\d+) \(database (.*)\)$",
                     line.strip())
        check(m, "the first line names the port and the database: %r" % line)
        check(m.group(2) == self.db, "the printed database is --db")
        self.port = int(m.group(1))
        check(self.port > 0 and self.listen_port in (0, self.port), "it listens on the port asked for")
        st, _, body = self.request("GET", "/healthz")
        check(st == 200 and body == {"status": "ok"}, "GET /healthz answers 200 ok")
        return self

    def stop(self, sig=signal.SIGTERM, timeout=5.0):
        t0 = time.monotonic()
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Failure("cardpostd did not exit within %.1f s of signal %d" % (timeout, sig))
        self.proc.stdout.close()
        self.stderr.close()
        return rc, time.monotonic() - t0

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def advance(self, seconds):
        """Move the service's test clock (CARDPOST_TEST_CLOCK=1) on by `seconds`; returns its
        time in ms."""
        st, _, body = self.request("POST", "/v1/admin/clock", {"advance_seconds": int(seconds)},
                                   token=OPERATOR)
        check(st == 200, "POST /v1/admin/clock -> 200 (got %d %r)" % (st, body))
        return body["now"]

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            rc, secs = self.stop()
            if exc[0] is None:
                check(rc == 0, "cardpostd exits 0 on SIGTERM (got %r)" % rc)

    # ---- Requests ----

    def conn(self, timeout=30):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, token=None, headers=None, raw=None):
        """One request on a fresh connection. `body` is JSON-encoded unless `raw` (bytes) is
        given. Returns (status, headers as a lower-case dict, parsed JSON or the text)."""
        h = {}
        if token is not None:
            h["Authorization"] = "Bearer " + token
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
        if data is not None:
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        c = self.conn()
        try:
            c.request(method, path, body=data, headers=h)
            r = c.getresponse()
            text = r.read().decode()
            hdrs = {k.lower(): v for k, v in r.getheaders()}
            st = r.status
        finally:
            c.close()
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = text
        apidoc.check(method, path, st, hdrs, parsed)  # as docs/openapi.json describes it
        return st, hdrs, parsed

    def player(self, name, consent=True):
        """Register a player. With `consent` (the default) they agree to be seated without being
        asked (preferences.seat_without_asking), so that a test's matches start at once; the
        invitations themselves are tested by test_consent.py."""
        body = {"name": name, "email": name + "@x.test"}
        if consent:
            body["preferences"] = {"seat_without_asking": True}
        st, _, p = self.request("POST", "/v1/players", body)
        check(st == 201 and p["name"] == name and p["token"],
              "POST /v1/players -> 201 with a token")
        return p

    def players(self, n, prefix="p"):
        return [self.player("%s%d-%d" % (prefix, i, random.randrange(1 << 30))) for i in range(n)]

    def stderr_text(self):
        """What the daemon wrote to its stderr so far (its log lines)."""
        self.stderr.flush()
        with open(os.path.join(self.tmp, "cardpostd.stderr"), errors="replace") as f:
            return f.read()

    def create(self, game, players, options=None, token=None, headers=None):
        body = {"game": game, "players": [p["id"] for p in players]}
        if options is not None:
            body["options"] = options
        st, _, v = self.request("POST", "/v1/matches", body,
                                token=token or players[0]["token"], headers=headers)
        check(st == 201, "create %s %r -> 201 (got %d %r)" % (game, options, st, v))
        return v

    def view(self, mid, token=None):
        st, _, v = self.request("GET", "/v1/matches/%d" % mid, token=token)
        check(st == 200, "GET match %d -> 200 (got %d %r)" % (mid, st, v))
        return v

    def log(self, mid, token=None):
        st, _, lg = self.request("GET", "/v1/matches/%d/log" % mid, token=token)
        check(st == 200, "GET log %d -> 200 (got %d)" % (mid, st))
        return lg

    def move(self, mid, token, move, seq=None, headers=None):
        body = {"move": move}
        if seq is not None:
            body["seq"] = seq
        return self.request("POST", "/v1/matches/%d/moves" % mid, body, token=token,
                            headers=headers)


def race(d, reqs):
    """Send requests as nearly at once as a client can: each (method, path, body, token,
    headers) goes out on its own connection but for the last byte of its body; then the last
    bytes go out together. Returns [(status, headers, parsed body)] in order."""
    socks = []
    for method, path, body, token, headers in reqs:
        data = json.dumps(body).encode()
        head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" % (method, path)
        head += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(data)
        if token:
            head += "Authorization: Bearer %s\r\n" % token
        for k, v in (headers or {}).items():
            head += "%s: %s\r\n" % (k, v)
        sock = socket.create_connection(("127.0.0.1", d.port), timeout=30)
        sock.sendall(head.encode() + b"\r\n" + data[:-1])
        socks.append((sock, data[-1:]))
    time.sleep(0.05)
    for sock, last in socks:
        sock.sendall(last)
    out = []
    for sock, _ in socks:
        r = http.client.HTTPResponse(sock)
        r.begin()
        text = r.read().decode()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        out.append((r.status, hdrs, json.loads(text)))
        sock.close()
    for (method, path, _, _, _), (st, hdrs, body) in zip(reqs, out):
        apidoc.check(method, path, st, hdrs, body)
    return out


# A card's name (rank and suit, "TH" for the ten) standing alone in a text.
CARD = re.compile(r"(?<![A-Za-z0-9])([2-9TJQKA][CDHS])(?![A-Za-z0-9])")


def cards_in(obj):
    """Every card that a JSON value names, in any of its strings (the leak checks')."""
    if isinstance(obj, str):
        return set(CARD.findall(obj))
    if isinstance(obj, dict):
        return set().union(*map(cards_in, obj.values()))
    if isinstance(obj, list):
        return set().union(*map(cards_in, obj))
    return set()


def check_problem(resp, status, code, what):
    """`resp` is (status, headers, body): an RFC 9457 problem with this status and code."""
    st, hdrs, body = resp
    check(st == status, "%s: status %d (got %d %r)" % (what, status, st, body))
    check(hdrs.get("content-type", "").startswith(PROBLEM),
          "%s: Content-Type %s (got %r)" % (what, PROBLEM, hdrs.get("content-type")))
    check(isinstance(body, dict), "%s: a JSON object body" % what)
    for k, t in (("type", str), ("title", str), ("status", int), ("detail", str)):
        check(isinstance(body.get(k), t), "%s: problem member %s" % (what, k))
    check(body["status"] == status, "%s: body status %d" % (what, status))
    check(body["detail"], "%s: a detail" % what)
    if code is not None:
        check(body.get("code") == code and body["type"].endswith("/" + code),
              "%s: code %s (got %r / %r)" % (what, code, body.get("code"), body.get("type")))
    return body


# ---- Peers: a real SMTP server and a real webhook receiver (tests/peers/) ----------------

PEERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers")


class Peer:
    """tests/peers/<script> writing into its own directory under `tmp`. start() waits for the
    printed port (the same port again after a stop, so a restart serves the same URL);
    stop() sends SIGTERM and waits. Each run writes into a fresh directory (the peers
    number their files from 1), and names() lists the files of every run in order."""

    script = None
    banner = None

    def __init__(self, tmp, name, args=()):
        self.base = os.path.join(tmp, name)
        self.args = list(args)  # (after DIR and PORT)
        self.runs = []
        self.port = 0
        self.proc = None

    def start(self):
        DAEMONS.append(self)
        self.dir = os.path.join(self.base, "run%d" % (len(self.runs) + 1))
        self.runs.append(self.dir)
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", os.path.join(PEERS, self.script), self.dir, str(self.port)]
            + self.args,
            stdout=subprocess.PIPE)
        ready, _, _ = select.select([self.proc.stdout], [], [], 20)
        check(ready, "%s printed its address within 20 s" % self.script)
        line = self.proc.stdout.readline().decode()
        m = re.match(re.escape(self.banner) + r": listening on 127\.0\.0\.\d+:(\d+)$", line.strip())
        check(m, "%s names its port: %r" % (self.script, line))
        check(self.port in (0, int(m.group(1))), "%s came back on its port" % self.script)
        self.port = int(m.group(1))
        return self

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def names(self, ext):
        """Paths of the files ending in `ext` of every run, in arrival order."""
        out = []
        for d in self.runs:
            if os.path.isdir(d):
                out += [os.path.join(d, n) for n in sorted(os.listdir(d)) if n.endswith(ext)]
        return out


class SmtpSink(Peer):
    script = "smtp_sink.py"
    banner = "smtp-sink"

    def url(self):
        return "smtp://127.0.0.1:%d" % self.port

    def messages(self):
        """Every message received so far: [(raw bytes, envelope dict)], in arrival order."""
        out = []
        for n in self.names(".eml"):
            base = n[:-4]
            with open(base + ".eml", "rb") as f:
                raw = f.read()
            with open(base + ".json") as f:
                out.append((raw, json.load(f)))
        return out


class WebhookReceiver(Peer):
    script = "webhook_receiver.py"
    banner = "webhook-receiver"

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def set_status(self, status):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("POST", "/_control", body=json.dumps({"status": status}).encode())
        check(c.getresponse().status == 204, "the receiver takes its new status")
        c.close()

    def records(self):
        """Every POST received so far: [{"path", "headers", "body", "answered"}]."""
        out = []
        for n in self.names(".json"):
            with open(n) as f:
                out.append(json.load(f))
        return out


CONFIRM_CODE = re.compile(r"\b(cpc_[0-9a-f]{32})\b")
CONFIRM_ID = re.compile(r"<cardpost-confirm-\d+-\d+\.[0-9a-f]{16}@")


def is_confirmation(raw):
    """Whether a received message (raw bytes) is a confirmation email (its Message-ID)."""
    head = raw.split(b"\r\n\r\n", 1)[0].decode("utf-8", "replace")
    return bool(CONFIRM_ID.search(head))


def confirmation_code(sink, address, after=0, timeout=20.0):
    """The code of the newest confirmation email to `address` among the sink's messages from
    index `after` on (waiting for one)."""
    import email as _email
    import email.policy as _policy

    def find():
        for raw, env in reversed(sink.messages()[after:]):
            if address in env["rcpt_tos"] and is_confirmation(raw):
                msg = _email.message_from_bytes(raw, policy=_policy.default)
                m = CONFIRM_CODE.search(msg.get_body(("plain",)).get_content())
                check(m, "a confirmation email holds a code")
                return m.group(1)
        return None
    return wait_for(find, "a confirmation email to %s arrived" % address, timeout=timeout)


def confirm_email(d, sink, player):
    """Confirm `player`'s address the real way: read the code from the confirmation email the
    SMTP sink received and send it back with the player's token. Returns the record."""
    code = confirmation_code(sink, player["email"])
    st, _, me = d.request("POST", "/v1/players/me/email/confirm", {"code": code},
                          token=player["token"])
    check(st == 200 and me["email_confirmed"] is True,
          "the code of the confirmation email confirms the address (got %d %r)" % (st, me))
    return me


def operator_confirm_email(d, player):
    """The operator confirms `player`'s address (for a test without a working relay)."""
    st, _, r = d.request("POST", "/v1/players/%d/email/confirm" % player["id"], token=OPERATOR)
    check(st == 200 and r["email_confirmed"] is True,
          "the operator confirms the address (got %d %r)" % (st, r))
    return r


def free_port():
    """A loopback port free right now, for a peer or a proxy a test starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, what, timeout=20.0, step=0.05):
    """Poll pred() until it returns something true; that value, or a Failure after timeout."""
    t_end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > t_end:
            raise Failure("within %.0f s: %s" % (timeout, what))
        time.sleep(step)


# ---- The database underneath --------------------------------------------------------------

def is_postgres(db):
    return db.startswith(("postgresql://", "postgres://"))


def db_exec(db, sql, params=()):
    """One statement on the daemon's database itself, committed, for a test that reaches
    under the API (a value stored before a rule, a snapshot rewritten, the outbox read):
    `db` is a SQLite file or a postgresql:// address (the _pg tests: through psycopg2,
    Debian's python3-psycopg2). `?` placeholders. Returns its rows as tuples, BLOB and bytea
    as bytes."""
    if is_postgres(db):
        import psycopg2
        c = psycopg2.connect(db)
        try:
            with c, c.cursor() as cur:
                cur.execute(sql.replace("%", "%%").replace("?", "%s"), params)
                rows = cur.fetchall() if cur.description else []
        finally:
            c.close()
        return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in rows]
    c = sqlite3.connect(db, timeout=10)
    try:
        with c:
            rows = c.execute(sql, params).fetchall()
    finally:
        c.close()
    return rows


def hold_the_writer(db, table="players"):
    """Another connection holding the database's write lock (SQLite: BEGIN IMMEDIATE;
    PostgreSQL: `table` locked against writes, not reads), until the returned function lets
    it go."""
    if is_postgres(db):
        import psycopg2
        c = psycopg2.connect(db)
        c.cursor().execute("LOCK TABLE %s IN EXCLUSIVE MODE" % table)  # (reads go on)
    else:
        c = sqlite3.connect(db, isolation_level=None)
        c.execute("BEGIN IMMEDIATE")

    def release():
        c.rollback() if is_postgres(db) else c.execute("ROLLBACK")
        c.close()
    return release


def while_the_writer_waits(d, reads, write=None, table="players", status=201):
    """Calls reads() while the daemon's writer waits for the database: another connection
    holds its write lock (hold_the_writer, `table` on PostgreSQL) and a write is stuck behind
    it in the daemon, holding its db_lock: write() (default: a registration, which writes
    `players`), checked before and after. Then lets the lock go and checks that the write
    goes through with `status`. Returns what reads() returned. (A registration is written
    by the HTTP thread that took it, which waits with it: a read whose connection that
    thread serves waits too, whatever it reads. A move waits in the committer instead.)"""
    if write is None:
        write = lambda: d.request("POST", "/v1/players", {"name": "waits"})  # noqa: E731
    release = hold_the_writer(d.db, table)
    stuck = {}
    t = threading.Thread(target=lambda: stuck.update(answer=write()))
    try:
        t.start()
        time.sleep(0.5)  # (the write is in the writer's hands by now)
        check(t.is_alive(), "the write waits for the database")
        got = reads()
        check(t.is_alive(), "the write was still waiting during the reads")
    finally:
        release()
        t.join(30)
    check(stuck.get("answer", (0,))[0] == status,
          "the write goes through once the lock is let go (%r)" % (stuck,))
    return got


def answer_within(d, method, path, seconds, token=None, headers=None):
    """(status, text) of one request on a connection of its own that waits `seconds` at
    most for the answer; a Failure if none came."""
    c = d.conn(timeout=seconds)
    hs = dict(headers or {})
    if token:
        hs["Authorization"] = "Bearer " + token
    try:
        c.request(method, path, headers=hs)
        r = c.getresponse()
        return r.status, r.read().decode()
    except socket.timeout:
        raise Failure("%s %s waited for the writer (no answer in %g s)" % (method, path,
                                                                          seconds))
    finally:
        c.close()


def outbox_deliveries(db, where=""):
    """The deliveries in the daemon's outbox (read under the API: migration 0015), each a
    dict: one for each channel of a row (a notification), under the id the API gives it (the
    row's times two, plus one for the webhook). `where`: a condition on the rows."""
    cols = ("id", "player_id", "type", "match_id", "seq", "webhook_id", "body", "seat",
            "destination", "email_status", "email_held", "webhook_status", "webhook_held")
    rows = db_exec(db, "SELECT %s FROM outbox_all %s" % (", ".join(cols), where))
    out = []
    for r in rows:
        row = dict(zip(cols, r))
        for c, channel in enumerate(("email", "webhook")):
            if row[channel + "_status"] is None:
                continue
            out.append({"id": row["id"] * 2 + c, "row": row["id"], "channel": channel,
                        "player": row["player_id"], "type": row["type"],
                        "match": row["match_id"], "seq": row["seq"],
                        "webhook_id": row["webhook_id"], "body": row["body"],
                        "seat": row["seat"], "status": row[channel + "_status"],
                        "held": row[channel + "_held"] in (1, True),
                        "destination": row["destination"] if c else ""})
    return out


def fresh_db():
    """The --db of a new, empty database: None (a Daemon's own new file) on SQLite; on
    PostgreSQL (CARDPOST_TEST_PG) a new database created beside that one in its cluster."""
    pg = os.environ.get("CARDPOST_TEST_PG")
    if not pg:
        return None
    import psycopg2
    head, _, query = pg.partition("?")  # postgresql:///NAME?host=...
    base = head.rsplit("/", 1)[0]
    name = "cardpost_fresh_%d_%d" % (os.getpid(), random.randrange(1 << 30))
    c = psycopg2.connect(base + "/postgres" + ("?" + query if query else ""))
    c.autocommit = True
    try:
        c.cursor().execute('CREATE DATABASE "%s"' % name)
    finally:
        c.close()
    return base + "/" + name + ("?" + query if query else "")


# ---- Logs ---------------------------------------------------------------------------------

def verify_log(log, tmp, name="log"):
    """Write a finished log to a file and run `cardpost verify` on it: exit 0, and the result
    it prints is the log's result. Returns the printed result."""
    check(CARDPOST, "env CARDPOST names build/cardpost")
    path = os.path.join(tmp, "%s.json" % name)
    with open(path, "w") as f:
        json.dump(log, f)
    p = subprocess.run([CARDPOST, "verify", path], capture_output=True, text=True)
    check(p.returncode == 0, "cardpost verify %s exits 0 (got %d: %s)"
          % (path, p.returncode, p.stdout[:500]))
    out = json.loads(p.stdout)
    check(out == log["result"], "verify prints the log's result\n%r\n%r" % (out, log["result"]))
    return out


def check_finished_log(log, view):
    """A finished match's log as served: complete, with the seed and the result."""
    check(log["format"] == "cardpost-log/1", "the log is cardpost-log/1")
    check(log["game"] == view["game"], "the log names the game")
    check(re.fullmatch(r"[0-9a-f]{64}", log.get("seed", "")), "a finished log holds the seed")
    check(log["seed"] == view["seed"], "the log's seed is the view's")
    check(log["seed_commitment"] == view["seed_commitment"], "the log's commitment is the view's")
    check(log["result"] == view["result"], "the log's result is the view's")
    check(log["result"]["finished"] is True, "the result says finished")
    check(len(log["events"]) == view["seq"], "the log holds seq events")
    check("deal" in log["events"][0], "the whole log starts with its deal")


# ---- The event stream ---------------------------------------------------------------------

class Stream:
    """GET /v1/matches/{id}/events read line by line: next() returns one message as a dict
    {"id", "event", "data"} (data parsed), or None at the end of the stream. With `ticket`
    (a stream ticket) in the URL instead of a token in the header."""

    def __init__(self, d, mid, token=None, last_id=None, timeout=10, ticket=None):
        self.conn = d.conn(timeout=timeout)
        h = {"Accept": "text/event-stream"}
        if token is not None:
            h["Authorization"] = "Bearer " + token
        if last_id is not None:
            h["Last-Event-ID"] = str(last_id)
        self.path = "/v1/matches/%d/events" % mid
        url = self.path + ("?ticket=" + ticket if ticket is not None else "")
        self.conn.request("GET", url, headers=h)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.content_type = self.resp.getheader("Content-Type", "")
        # The stream's answer as documented; a refusal's body is read here, an open stream's
        # messages by next().
        hdrs = {k.lower(): v for k, v in self.resp.getheaders()}
        body = None
        if self.status != 200:
            text = self.resp.read().decode()
            body = json.loads(text) if text else None
            self.refusal = body
        apidoc.check("GET", self.path, self.status, hdrs, body)
        self.comments = 0

    def next(self):
        msg = {}
        data = []
        while True:
            line = self.resp.readline()
            if not line:
                return None
            line = line.decode().rstrip("\n")
            if line == "":
                if data or msg:
                    msg["data"] = json.loads("\n".join(data)) if data else None
                    apidoc.check_message(self.path, msg)  # as docs/openapi.json says
                    return msg
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field == "id":
                msg["id"] = int(value)
            elif field == "event":
                msg["event"] = value

    def until_state(self):
        """Messages up to and including the next `state` one."""
        out = []
        while True:
            m = self.next()
            check(m is not None, "the stream goes on until a state message")
            out.append(m)
            if m.get("event") == "state":
                return out

    def close(self):
        # The response holds the socket too: close both, or the connection stays open.
        self.resp.close()
        self.conn.close()


class PlayerStream(Stream):
    """GET /v1/players/me/events, a player's stream of all their matches, read as Stream
    reads a match's: with `token` in the header, or `ticket` (drawn with POST
    /v1/players/me/events/ticket) in the URL, or neither (refused); `query` is any other query
    string to send, `headers` more headers; from the loopback address `source` if given (the
    limits per address). Its answer and each message are checked against docs/openapi.json."""

    def __init__(self, d, token=None, last_id=None, timeout=10, ticket=None, query=None,
                 headers=None, source=None):
        self.conn = http.client.HTTPConnection(
            "127.0.0.1", d.port, timeout=timeout,
            source_address=(source, 0) if source else None)
        h = {"Accept": "text/event-stream"}
        if token is not None:
            h["Authorization"] = "Bearer " + token
        if last_id is not None:
            h["Last-Event-ID"] = str(last_id)
        h.update(headers or {})
        self.path = "/v1/players/me/events"
        params = ([] if ticket is None else ["ticket=" + ticket]) + ([query] if query else [])
        self.conn.request("GET", self.path + ("?" + "&".join(params) if params else ""),
                          headers=h)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.content_type = self.resp.getheader("Content-Type", "")
        self.headers = {k.lower(): v for k, v in self.resp.getheaders()}
        self.refusal = None
        body = None
        if self.status != 200:
            text = self.resp.read().decode()
            body = json.loads(text) if text else None
            self.refusal = body
        apidoc.check("GET", self.path, self.status, self.headers, body)
        self.comments = 0


# ---- A random player ----------------------------------------------------------------------

STATS = {"moves": 0, "raced": 0, "race_refused": 0, "with_seq": 0}


def play_match(d, mid, seats, rng, max_moves=20000, race=0.3, use_seq=0.3):
    """Play match `mid` to its end by random legal moves. `seats[s]` is the player (with
    "token") of seat s. Each round GETs every seat's view, checks that `legal` is non-empty
    exactly for the seats in `to_move`, and posts a random legal move of a seat to move
    (sometimes with `seq`; sometimes two or more seats race from threads). Checks that seq
    only grows and that a move accepted at seq n makes it n+1 or more. Returns the final
    spectator view."""
    last_seq = 0
    moves = 0
    while True:
        views = [d.view(mid, p["token"]) for p in seats]
        seqs = [v["seq"] for v in views]
        check(seqs == sorted(seqs) and seqs[0] >= last_seq, "seq only grows (%r after %d)"
              % (seqs, last_seq))
        last_seq = seqs[-1]
        v = views[-1]
        if v["status"] == "finished":
            break
        check(v["status"] == "active", "status is active or finished")
        for s, sv in enumerate(views):
            check(sv["you"] == s, "you is the caller's seat")
            if sv["seq"] == v["seq"]:
                check(bool(sv["legal"]) == (s in sv["to_move"]),
                      "seat %d has legal moves iff it is in to_move (%r, %r)"
                      % (s, sv["to_move"], sv["legal"][:3]))
        movers = [s for s in v["to_move"] if views[s]["seq"] == v["seq"] and views[s]["legal"]]
        check(movers or any(sv["seq"] != v["seq"] for sv in views),
              "someone is to move in an active match")
        if not movers:
            continue
        if len(movers) > 1 and rng.random() < race:
            picks = [(s, rng.choice(views[s]["legal"])) for s in movers]
            results = {}

            def post(s, mv, seq):
                results[s] = d.move(mid, seats[s]["token"], mv, seq=seq)

            STATS["raced"] += 1
            threads = [threading.Thread(target=post, args=(s, mv, None)) for s, mv in picks]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for s, mv in picks:
                st, hdrs, body = results[s]
                if st == 201:
                    check(body["seq"] >= v["seq"] + 1, "a raced move advanced seq")
                    moves += 1
                    STATS["moves"] += 1
                else:
                    # Only a game where the seats act at once may see the other's move win.
                    STATS["race_refused"] += 1
                    check(v["game"] == "speed" and st in (409, 422),
                          "a raced %s move refused only in speed (%d %r)" % (v["game"], st, body))
                    check_problem(results[s], st, None, "a raced move's refusal")
        else:
            s = rng.choice(movers)
            mv = rng.choice(views[s]["legal"])
            seq = v["seq"] if rng.random() < use_seq else None
            STATS["with_seq"] += seq is not None
            st, _, body = d.move(mid, seats[s]["token"], mv, seq=seq)
            check(st == 201, "a legal move %r of seat %d -> 201 (got %d %r)" % (mv, s, st, body))
            check(body["seq"] >= v["seq"] + 1,
                  "a move accepted at seq %d makes it at least %d (got %d)"
                  % (v["seq"], v["seq"] + 1, body["seq"]))
            check(body["you"] == s, "the move's answer is the mover's view")
            moves += 1
            STATS["moves"] += 1
        check(moves <= max_moves, "match %d ends within %d moves" % (mid, max_moves))
    return d.view(mid)


def report_daemons():
    """The end of the stderr of each daemon that died or exited non-zero: a sanitizer's
    report, an assertion, the last log lines (the temp dirs are gone once CI ends)."""
    for d in DAEMONS:
        if not isinstance(d, Daemon):
            continue
        rc = d.proc.poll() if d.proc else None
        if rc in (None, 0):
            continue
        path = os.path.join(d.tmp, "cardpostd.stderr")
        try:
            with open(path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            continue
        # What stands out first (a sanitizer's report, an assertion, a panic, the warnings
        # and errors of the log), since a CI excerpt may keep only the first lines; then
        # the end of the log for the order of events.
        loud = [ln for ln in lines if '"level":"info"' not in ln][-40:]
        print("  cardpostd (exit %r), what is not info in %s:" % (rc, path))
        for line in loud:
            print("    " + line)
        print("  and the end of it:")
        for line in lines[-30:]:
            print("    " + line)


def run(tests):
    """Run test functions in order; print each; exit non-zero on the first failure."""
    t0 = time.monotonic()
    for fn in tests:
        t = time.monotonic()
        try:
            fn()
        except (Failure, apidoc.Undocumented) as e:
            print("FAIL %s: %s (files in %s)" % (fn.__name__, e, " ".join(TEMP_DIRS)))
            if e.__context__ is not None:  # a failure in a finally: the one it hid
                print("  while handling: %r" % (e.__context__,))
            report_daemons()
            sys.exit(1)
        if apidoc.FAILURES:  # an answer not as documented, even if the test caught it
            print("FAIL %s: %s" % (fn.__name__, apidoc.FAILURES[0]))
            sys.exit(1)
        print("ok   %s (%.1f s)" % (fn.__name__, time.monotonic() - t))
        sys.stdout.flush()
    print("all passed in %.1f s" % (time.monotonic() - t0))
    for tmp in TEMP_DIRS:
        shutil.rmtree(tmp, ignore_errors=True)
