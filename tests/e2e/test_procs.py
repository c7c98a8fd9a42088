# test_procs.py - several cardpostd processes on one PostgreSQL database (docs/scaling.md):
# three daemons, and clients that send each request to a random one of them, as a load
# balancer would. Whole matches of all five games played at once through them (Speed's seats
# racing each other through two processes), then every log verified with `cardpost verify`,
# its seqs gapless, and every move answered 201 found in it at its place; event streams on one
# process that see the moves accepted by another within milliseconds; a stream ticket drawn
# on one process opening the stream on another, once, and bounded across them; consent
# answered for several seats at once on several processes; a token rotated on one process
# refused at once by the others; one Idempotency-Key sent to three processes at once played
# once; a vacation
# taken on one process moving the deadlines the others show; a match's row changed behind
# every process's back read again by each; a seat timing out on two processes' clocks at
# once timed out once; two matches of one league ending at once on two processes both in
# its standings; processes killed (SIGKILL) under load, the clock's lease holder among them,
# losing no answered move, their outbox rows delivered by the others and their clock duties
# taken over (every late seat of the clocked matches timed out once, none missed); every
# notification of the whole and of the killed load delivered, none lost, none twice under two
# ids; and the server restarted under them (503 meanwhile, then on as before). Runs through
# tests/pg/run-with-pg.sh (CARDPOST_TEST_PG); skipped without it.
import collections
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
from harness import (OPERATOR, Daemon, Failure, PlayerStream, Stream,  # noqa: E402
                     WebhookReceiver, check, check_finished_log, check_problem, play_match, run,
                     verify_log, wait_for)
import apidoc  # noqa: E402
import harness  # noqa: E402
from test_notify import deliveries, register  # noqa: E402
from webhook_receiver import verify  # noqa: E402

if not os.environ.get("CARDPOST_TEST_PG"):
    print("CARDPOST_TEST_PG is not set: run through tests/pg/run-with-pg.sh")
    sys.exit(77)

SEED = int(os.environ.get("E2E_SEED", random.randrange(1 << 32)))
print("E2E_SEED=%d" % SEED)
rng = random.Random(SEED)
rng_lock = threading.Lock()


def pick(seq):
    with rng_lock:
        return rng.choice(seq)


class Cluster(Daemon):
    """The processes as one service: each request goes to a random one of them (or to `via`
    when given). Every move answered 201 is remembered (match, seat, move, the seq after it)."""

    def __init__(self, daemons):
        self.daemons = daemons
        self.tmp = daemons[0].tmp
        self.accepted = []
        self.lock = threading.Lock()

    def request(self, method, path, body=None, token=None, headers=None, raw=None, via=None):
        d = via or pick([d for d in self.daemons if d.proc.poll() is None])
        return Daemon.request(d, method, path, body, token, headers, raw)

    def move(self, mid, token, move, seq=None, headers=None, via=None):
        body = {"move": move}
        if seq is not None:
            body["seq"] = seq
        r = self.request("POST", "/v1/matches/%d/moves" % mid, body, token=token,
                         headers=headers, via=via)
        if r[0] == 201:
            with self.lock:
                self.accepted.append((mid, r[2]["you"], move, r[2]["seq"]))
        return r


# Each writes each move in a transaction of its own on a pool of connections (db_pool; on
# PostgreSQL there are no batches, the server groups the commits): two set it, the third
# runs with the default. All run on the test clock (killed_under_load moves it: the clocked
# matches' deadlines, the outbox claims of a killed process) and deliver webhooks to the
# receiver on 127.0.0.1. Each has a directory (a stderr) of its own: its log says whether it
# runs the clock.
SHARED = {"CARDPOST_TEST_CLOCK": "1", "CARDPOST_ALLOW_PRIVATE_WEBHOOKS": "1"}
daemons = [Daemon(env={**SHARED, "CARDPOST_DB_POOL": "4"}),
           Daemon(env={**SHARED, "CARDPOST_DB_POOL": "4"}), Daemon(env=SHARED)]
cluster = Cluster(daemons)
RECV = WebhookReceiver(cluster.tmp, "hooks")
SLOW = WebhookReceiver(cluster.tmp, "slow")  # its own port: a connection to it is a delivery

MATCHES = [
    ("hearts", 4, {"target": 1}),
    ("horseshoe", 2, {"target": 2}),
    ("snag", 2, {"target": 3}),
    ("horse-thief", 4, {"target": 2}),
    ("speed", 2, {"target": 2}),
]


def check_log_of(mid, final):
    """The finished match's log verifies, its stored seqs are gapless, and each 201 of it is
    there."""
    log = cluster.log(mid)
    check_finished_log(log, final)
    verify_log(log, cluster.tmp, "match%d" % mid)
    events = log["events"]
    # The seqs as the processes wrote them (a finished log numbers its events by their
    # place, so only the rows show a seq skipped): 0 to n-1, each row the log's event there.
    rows = stored_events(mid)
    seqs = [r[0] for r in rows]
    check(seqs == list(range(len(events))),
          "match %d: its %d stored seqs are gapless, 0 to %d (missing %r, beyond %r)"
          % (mid, len(seqs), len(events) - 1, sorted(set(range(len(events))) - set(seqs))[:5],
             [q for q in seqs if not 0 <= q < len(events)][:5]))
    for (seq, kind, seat, body), ev in zip(rows, events):
        check(kind in ev if kind != "move" else (ev["seat"], ev["move"]) == (seat, body),
              "match %d: the row at seq %d (%s %r %r) is the log's event there (%r)"
              % (mid, seq, kind, seat, body, ev))
    mine = [a for a in cluster.accepted if a[0] == mid]
    check(mine, "match %d had moves answered 201" % mid)
    for _, seat, move, seq in mine:
        # The answer's seq counts the move and the chance events it made due: the move is
        # the last move event before it.
        moves = [(i, ev) for i, ev in enumerate(events[:seq]) if "move" in ev]
        check(moves, "match %d: a move before seq %d" % (mid, seq))
        i, ev = moves[-1]
        check(ev["seat"] == seat and ev["move"] == move,
              "match %d: the move answered 201 at seq %d (seat %d %s) is in the log at %d (%r)"
              % (mid, seq, seat, move, i, ev))
    return log


def stored_events(mid):
    """Match `mid`'s events as written (psql reads the rows): [(seq, kind, seat, body)] in
    seq order."""
    out = subprocess.run(["psql", "-qAt", os.environ["CARDPOST_TEST_PG"], "-c",
                          "SELECT coalesce(json_agg(json_build_array(seq, kind, seat, body)"
                          " ORDER BY seq), '[]') FROM events WHERE match_id = %d" % mid],
                         check=True, stdout=subprocess.PIPE)
    return [tuple(r) for r in json.loads(out.stdout)]


def rand_int():
    with rng_lock:
        return rng.randrange(1 << 30)


def hooked(n, prefix, slow=False):
    """n players with a webhook to RECV (or, `slow`, to SLOW, answering a second after each
    POST), and no email, each registered on a random process (again on another if the one
    reached died under the request)."""
    def one(i):
        name = "%s%d-%d" % (prefix, i, rand_int())
        return register(cluster, name, SLOW if slow else RECV, email_addr=False,
                        path="/slow/1/hook/%s" % name if slow else None)
    return [retrying(lambda i=i: one(i)) for i in range(n)]


def posts_by_note(players):
    """The webhooks the receiver got for `players`, each signature checked with its player's
    secret: (player, match, type, seq) -> {webhook-id: POSTs}. (test_notify's hooks_by_note
    leaves the match out: here a create retried after its process died leaves a match more.)"""
    by_path = {"/hook/%s" % p["name"]: p for p in players}
    out = {}
    for r in RECV.records() + SLOW.records():
        p = by_path.get(re.sub(r"^/slow/\d+", "", urllib.parse.unquote(r["path"])))
        if p is None:
            continue
        check(verify(p["webhook_secret"], r["headers"], r["body"]),
              "the webhook to %s verifies with the player's secret" % p["name"])
        body = json.loads(r["body"])
        ids = out.setdefault((p["id"], body["data"]["id"], body["type"], body["data"]["seq"]), {})
        wid = r["headers"]["webhook-id"]
        ids[wid] = ids.get(wid, 0) + 1
    return out


def check_notifications(matches, what, timeout=30):
    """Every notification queued for the seats of `matches` [(match id, seats)] is delivered
    (GET deliveries: no row left pending, none dead), and its webhook-id was POSTed to the
    receiver (none lost); one outbox row and one webhook-id a notification (player, match,
    type, seq: none delivered twice under two ids). A POST repeated under the same id (a
    process killed mid-delivery or past its claim: at least once) is allowed, and counted.
    Each seat has its match_started, and its match_over once the match is over. Returns
    {player id: [rows]}."""
    players = [p for _, seats in matches for p in seats]

    def settled():
        rows = {p["id"]: retrying(lambda p=p: deliveries(cluster, p)) for p in players}
        return rows if all(x["status"] != "pending" for r in rows.values() for x in r) else None

    rows = wait_for(settled, "%s: no notification left pending" % what, timeout, step=0.2)
    every = [(pid, x) for pid, r in rows.items() for x in r]
    check(all(len(r) < 100 for r in rows.values()), "%s: every row listed (under 100 a player)"
          % what)
    check(all(x["status"] == "delivered" and x["channel"] == "webhook" for _, x in every),
          "%s: every notification delivered (%r)"
          % (what, [x for _, x in every if x["status"] != "delivered"][:3]))
    keys = collections.Counter((pid, x["match"], x["type"], x["seq"]) for pid, x in every)
    check(all(n == 1 for n in keys.values()), "%s: one row a notification (twice: %r)"
          % (what, [k for k, n in keys.items() if n > 1][:5]))
    posts = posts_by_note(players)
    posted = {wid: n for ids in posts.values() for wid, n in ids.items()}
    lost = [(pid, x["match"], x["type"], x["seq"]) for pid, x in every
            if x["webhook_id"] not in posted]
    check(not lost, "%s: every delivered row's webhook reached the receiver (lost: %r)"
          % (what, lost[:5]))
    row_of = {x["webhook_id"]: (pid, x["match"], x["type"], x["seq"]) for pid, x in every}
    for key, ids in posts.items():
        check(len(ids) == 1, "%s: notification %r delivered under one webhook-id (got %r)"
              % (what, key, ids))
        check(row_of.get(next(iter(ids))) == key, "%s: the POST of %r is its row's (%r)"
              % (what, key, row_of.get(next(iter(ids)))))
    for mid, seats in matches:
        over = retrying(lambda: cluster.view(mid))["status"] == "finished"
        for p in seats:
            types = [x["type"] for x in rows[p["id"]] if x["match"] == mid]
            check(types.count("match_started") == 1 and types.count("match_over") == over,
                  "%s: match %d told player %d it started, once, and it ended iff it did (%r)"
                  % (what, mid, p["id"], types))
    again = sum(n - 1 for n in posted.values())
    print("     %s: %d notifications delivered, none lost, none under two ids; %d POSTs again "
          "under the same id" % (what, len(every), again))
    return rows


def play_everything():
    """All five games at once, each request to a random process; every notification of them
    delivered once."""
    results = {}
    errors = []

    def one(game, n, opts):
        try:
            seats = hooked(n, game[:2])
            created = cluster.create(game, seats, opts, token=seats[0]["token"])
            final = play_match(cluster, created["id"], seats, random.Random(rng.random()))
            check(final["status"] == "finished", "%s finished" % game)
            results[game] = (created["id"], final, seats)
        except (Failure, apidoc.Undocumented) as e:
            errors.append("%s: %s" % (game, e))

    threads = [threading.Thread(target=one, args=m) for m in MATCHES]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors, "every game played to its end: %r" % errors)
    for game, (mid, final, _) in results.items():
        log = check_log_of(mid, final)
        print("     %s: match %d, %d events" % (game, mid, len(log["events"])))
    check_notifications([(mid, seats) for mid, _, seats in results.values()], "all five games")


def race_across(reqs):
    """Send moves as nearly at once as a client can, each (daemon, mid, token, move) to its
    own process."""
    out = [None] * len(reqs)
    go = threading.Barrier(len(reqs))

    def post(i, d, mid, token, move, headers=None):
        go.wait()
        out[i] = cluster.move(mid, token, move, headers=headers, via=d)

    threads = [threading.Thread(target=post, args=(i,) + r) for i, r in enumerate(reqs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def speed_raced():
    """Speed's two seats play at once, each through its own process, moves sent together:
    each is accepted (and in the log) or refused with a problem (409/422), never both."""
    a, b = daemons[0], daemons[1]
    seats = cluster.players(2, prefix="sr")
    mid = cluster.create("speed", seats, {"target": 1}, token=seats[0]["token"])["id"]
    refused = accepted = 0
    for _ in range(3000):
        views = [cluster.view(mid, p["token"], ) for p in seats]
        if views[0]["status"] == "finished":
            break
        both = [s for s in (0, 1) if views[s]["legal"] and s in views[s]["to_move"]]
        if len(both) < 2:
            s = both[0] if both else 0
            if views[s]["legal"]:
                st, _, body = cluster.move(mid, seats[s]["token"], pick(views[s]["legal"]))
                check(st in (201, 409, 422), "a speed move -> 201/409/422 (got %d %r)" % (st, body))
            continue
        out = race_across([(a, mid, seats[0]["token"], pick(views[0]["legal"])),
                           (b, mid, seats[1]["token"], pick(views[1]["legal"]))])
        for st, hdrs, body in out:
            if st == 201:
                accepted += 1
            else:
                refused += 1
                check(st in (409, 422), "a raced speed move refused with 409/422 (got %d %r)"
                      % (st, body))
                check_problem((st, hdrs, body), st, None, "a raced move's refusal")
    final = cluster.view(mid)
    check(final["status"] == "finished", "the raced speed match finished")
    check_log_of(mid, final)
    print("     speed raced: %d accepted, %d refused" % (accepted, refused))
    check(accepted > 0, "raced moves were accepted")


def streams_across():
    """A stream on process A sees every move that process B accepted, in order, soon."""
    a, b = daemons[0], daemons[1]
    seats = cluster.players(2, prefix="st")
    mid = cluster.create("snag", seats, {"target": 2}, token=seats[0]["token"])["id"]
    s = Stream(a, mid, timeout=10)
    check(s.status == 200, "the stream opens on process A")
    first = s.until_state()
    last = first[-1]["id"]
    delays = []
    for _ in range(40):
        v = Daemon.view(b, mid)
        if v["status"] == "finished":
            break
        seat = v["to_move"][0]
        mv = Daemon.view(b, mid, seats[seat]["token"])["legal"][0]
        t0 = time.monotonic()
        st, _, body = Daemon.move(b, mid, seats[seat]["token"], mv)
        check(st == 201, "a move on process B -> 201 (got %d %r)" % (st, body))
        msgs = []
        while True:
            m = s.next()
            check(m is not None, "the stream on A goes on")
            msgs.append(m)
            if m.get("event") == "state" and m["id"] >= body["seq"] - 1:
                break
        delays.append(time.monotonic() - t0)
        ids = [m["id"] for m in msgs if m.get("event") == "event"]
        # (what the log shows a spectator: its moves while the match is played, a deal or a
        # shuffle only once it is over, as the stream sends them)
        lg = Daemon.request(b, "GET", "/v1/matches/%d/log" % mid)[2]
        seqs = [e.get("seq", i) for i, e in enumerate(lg["events"])]
        want = [q for q in seqs if last < q < body["seq"]]
        check(ids == want,
              "the stream on A sends B's events in order, none missing (%r after %d, to %d, "
              "the log's %r: %r)" % (ids, last, body["seq"], want,
                                     [(m.get("event"), m["id"]) for m in msgs]))
        last = body["seq"] - 1
    s.close()
    delays.sort()
    print("     stream on A after a move on B: median %.1f ms, max %.1f ms"
          % (1000 * delays[len(delays) // 2], 1000 * delays[-1]))
    check(delays[len(delays) // 2] < 0.5, "streams on A see B's moves soon")


def player_streams_across():
    """A player's stream on process A (GET /v1/players/me/events) carries what the other
    processes do: a match the operator starts on B, an invitation made on B and accepted on
    C, and B's moves in them, each as the player's newest state, to the last."""
    a, b, c = daemons
    seats = [cluster.player("ps%d-%d" % (i, rng.randrange(1 << 30)), consent=False)
             for i in range(2)]
    s = PlayerStream(a, token=seats[0]["token"], timeout=10)
    check(s.status == 200, "the player's stream opens on process A")

    def state_of(mid, seq=0):
        while True:
            m = s.next()
            check(m is not None and m["event"] == "state", "the player's stream on A goes on")
            if m["data"]["id"] == mid and m["data"]["seq"] >= seq:
                return m["data"]

    st, _, made = Daemon.request(b, "POST", "/v1/matches", {
        "game": "snag", "players": [seats[0]["id"], seats[1]["id"]], "options": {"target": 1}},
        token=OPERATOR)
    check(st == 201, "the operator starts a match on B (got %d %r)" % (st, made))
    mid = made["id"]
    v = state_of(mid)
    check(v["you"] == 0 and v["status"] == "active",
          "a match started on B reaches the player's stream on A (%r)" % v)
    st, _, inv = Daemon.request(b, "POST", "/v1/matches", {
        "game": "horseshoe", "players": [seats[1]["id"], seats[0]["id"]]}, token=seats[1]["token"])
    check(st == 201 and inv["status"] == "pending", "an invitation made on B (%d %r)" % (st, inv))
    st, _, _ = Daemon.request(c, "POST", "/v1/matches/%d/accept" % inv["id"],
                              token=seats[0]["token"])
    check(st == 200, "accepted on C")
    v = state_of(inv["id"])
    check(v["you"] == 1 and v["status"] == "active",
          "the invitation accepted on C reaches A as a started match (%r)" % v)
    for _ in range(400):
        if v["status"] == "finished":
            break
        v = Daemon.view(b, mid)
        seat = v["to_move"][0]
        tok = seats[seat]["token"]
        st, _, body = Daemon.move(b, mid, tok, Daemon.view(b, mid, tok)["legal"][0])
        check(st == 201, "a move on B -> 201 (got %d %r)" % (st, body))
        v = state_of(mid, body["seq"])
        check(v["you"] == 0, "each state on A is seat 0's")
    check(v["status"] == "finished", "the match played on B ends on A's stream too")
    s.close()


def draw_ticket(d, mid, token, want=201):
    st, hdrs, body = Daemon.request(d, "POST", "/v1/matches/%d/events/ticket" % mid, token=token)
    check(st == want, "POST events/ticket on port %d -> %d (got %d %r)" % (d.port, want, st, body))
    return body["ticket"] if st == 201 else (hdrs, body)


def tickets_across():
    """A stream ticket drawn on one process opens the seat's stream on another (as behind a
    balancer), once: a second use on a third process, or on the first, is refused, and of
    three processes offered one ticket at once exactly one opens it. The bound of 8 unused
    tickets a player holds across the processes."""
    seats = cluster.players(2, prefix="tx")
    mid = cluster.create("snag", seats, {"target": 2}, token=seats[0]["token"])["id"]
    t = draw_ticket(daemons[0], mid, seats[0]["token"])
    s = Stream(daemons[1], mid, ticket=t)
    check(s.status == 200, "a ticket drawn on process 0 opens the stream on process 1 (got %d %r)"
          % (s.status, getattr(s, "refusal", None)))
    check(s.until_state()[-1]["data"]["you"] == 0, "the stream is the ticket's seat's")
    for d in (daemons[2], daemons[0]):
        again = Stream(d, mid, ticket=t)
        check(again.status == 401 and again.refusal["code"] == "bad_ticket",
              "a used ticket is refused on another process: %d %r"
              % (again.status, getattr(again, "refusal", None)))
    s.close()
    # Offered to the three at once: one opens it.
    t = draw_ticket(daemons[2], mid, seats[1]["token"])
    out = [None] * 3
    go = threading.Barrier(3)

    def use(i):
        go.wait()
        out[i] = Stream(daemons[i], mid, ticket=t)

    threads = [threading.Thread(target=use, args=(i,)) for i in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    check(sorted(o.status for o in out) == [200, 401, 401],
          "one ticket offered to three processes at once opens one stream (%r)"
          % [o.status for o in out])
    for o in out:
        o.close()
    # Eight unused a player, wherever drawn; a use on any process makes room on all.
    kept = [draw_ticket(daemons[i % 3], mid, seats[1]["token"]) for i in range(8)]
    for d in daemons:
        hdrs, body = draw_ticket(d, mid, seats[1]["token"], want=429)
        check(body["code"] == "too_many_tickets" and int(hdrs["retry-after"]) >= 1,
              "a ninth unused ticket on any process -> 429 too_many_tickets")
    Stream(daemons[1], mid, ticket=kept[0]).close()
    draw_ticket(daemons[2], mid, seats[1]["token"])


def consent_across():
    """Three seats accept at once, each on a process of its own: every acceptance counts, the
    match starts once (one seed, one first deal)."""
    seats = [cluster.player("cs%d-%d" % (i, rng.randrange(1 << 30)), consent=False)
             for i in range(4)]
    creator = seats[0]
    mid = cluster.create("hearts", seats, {"target": 1}, token=creator["token"])["id"]
    v = cluster.view(mid)
    check(v["status"] == "pending" and v["invitation"]["accepted"] == [0] and
          v["invitation"]["waiting_for"] == [1, 2, 3],
          "a player's match waits for the others (%r)" % v.get("invitation"))
    out = [None] * 3
    go = threading.Barrier(3)

    def accept(i):
        go.wait()
        out[i] = cluster.request("POST", "/v1/matches/%d/accept" % mid,
                                 token=seats[i + 1]["token"], via=daemons[i])

    threads = [threading.Thread(target=accept, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(all(r[0] == 200 for r in out), "every acceptance -> 200 (%r)" % [r[0] for r in out])
    # Each answer is its seat's view: still pending, with the seat among those that agreed,
    # or started (by the acceptance that made every seat's). The pending ones' agreed seats
    # nest: no acceptance written over another's.
    agreed = []
    for i, (_, _, v) in enumerate(out):
        check(v["you"] == i + 1, "the answer is seat %d's view (%r)" % (i + 1, v["you"]))
        if v["status"] == "pending":
            inv = v["invitation"]
            check(0 in inv["accepted"] and i + 1 in inv["accepted"] and
                  i + 1 not in inv["waiting_for"],
                  "seat %d's acceptance is recorded (%r)" % (i + 1, inv))
            agreed.append(set(inv["accepted"]))
        else:
            check(v["status"] == "active", "seat %d's answer: pending or started (%r)"
                  % (i + 1, v["status"]))
    agreed.sort(key=len)
    check(all(a <= b for a, b in zip(agreed, agreed[1:])) and len(agreed) < 3,
          "the acceptances add up, the last starting it (pending answers' agreed: %r)" % agreed)
    for d in daemons:
        v = Daemon.view(d, mid)
        check(v["status"] == "active" and v["seq"] >= 1,
              "every process sees the match started (%r)" % v["status"])
    check(len({Daemon.view(d, mid)["seed_commitment"] for d in daemons}) == 1,
          "one seed commitment everywhere")
    views = [Daemon.view(d, mid) for d in daemons]
    check([v["seq"] for v in views] == [1, 1, 1],
          "one start everywhere: seq 1, one deal's (%r)" % [v["seq"] for v in views])
    # (one event written: a second start would have added its deal, or failed on seq 0)
    rows = stored_events(mid)
    check([r[:2] for r in rows] == [(0, "deal")], "one first deal written (%r)"
          % [r[:2] for r in rows])


def row_checked():
    """A process uses its copy of a match only while it is the row's: a change made behind
    every process's back (here by psql, which notifies nobody) is what each shows next."""
    seats = [cluster.player("rc%d-%d" % (i, rng.randrange(1 << 30)), consent=False)
             for i in range(2)]
    mid = cluster.create("snag", seats, {"target": 2}, token=seats[0]["token"])["id"]
    for d in daemons:
        check(Daemon.view(d, mid)["status"] == "pending", "every process holds it pending")
    subprocess.run(["psql", "-q", os.environ["CARDPOST_TEST_PG"], "-c",
                    "UPDATE matches SET invitation = 'declined', status = 'finished',"
                    " finished_at = extract(epoch FROM now())::bigint WHERE id = %d" % mid],
                   check=True, stdout=subprocess.DEVNULL)
    for d in daemons:
        v = Daemon.view(d, mid)
        check(v["status"] == "cancelled" and v.get("cancelled") == "declined",
              "each process reads the row again (%r)" % v["status"])


def token_across():
    """A token rotated on one process is refused by every other at once; the new one works
    everywhere."""
    p = cluster.player("tk-%d" % rng.randrange(1 << 30))
    for d in daemons:
        st, _, _ = Daemon.request(d, "GET", "/v1/players/me", token=p["token"])
        check(st == 200, "the token works on every process")
    st, _, body = Daemon.request(daemons[0], "POST", "/v1/players/me/token", token=p["token"])
    check(st == 200 and body["token"], "rotate on process 0 -> 200")
    for d in daemons[1:]:
        st, _, _ = Daemon.request(d, "GET", "/v1/players/me", token=p["token"])
        check(st == 401, "the old token is refused at once by another process (got %d)" % st)
        st, _, _ = Daemon.request(d, "GET", "/v1/players/me", token=body["token"])
        check(st == 200, "the new token works on another process")
    st, _, _ = Daemon.request(daemons[2], "DELETE", "/v1/players/%d/token" % p["id"],
                              token=OPERATOR)
    check(st == 204, "the operator revokes it on process 2")
    for d in daemons:
        st, _, _ = Daemon.request(d, "GET", "/v1/players/me", token=body["token"])
        check(st == 401, "a revoked token is refused by every process (got %d)" % st)


def idempotent_across():
    """One move sent with one Idempotency-Key to three processes at once: played once, and
    all three answer it alike."""
    seats = cluster.players(2, prefix="id")
    mid = cluster.create("snag", seats, {"target": 2}, token=seats[0]["token"])["id"]
    v = cluster.view(mid)
    seat = v["to_move"][0]
    mv = cluster.view(mid, seats[seat]["token"])["legal"][0]
    key = {"Idempotency-Key": "k-%d" % rng.randrange(1 << 30)}
    out = race_across([(d, mid, seats[seat]["token"], mv, key) for d in daemons])
    check(all(r[0] == 201 for r in out), "every copy -> 201 (%r)" % [(r[0], r[2]) for r in out])
    check(len({r[2]["seq"] for r in out}) == 1, "every copy answers the same seq")
    after = cluster.view(mid)
    check(after["seq"] == out[0][2]["seq"], "the move was played once (seq %d, answered %d)"
          % (after["seq"], out[0][2]["seq"]))


def vacation_across():
    """A vacation taken on one process moves the deadline that the others show at once."""
    seats = cluster.players(2, prefix="va")
    body = {"game": "snag", "players": [p["id"] for p in seats], "options": {"target": 2},
            "clock": {"move_seconds": 3600, "policy": "auto", "reminder_seconds": 0}}
    st, _, v = cluster.request("POST", "/v1/matches", body, token=seats[0]["token"])
    check(st == 201 and isinstance(v["deadline"], int), "a clocked match (%d %r)" % (st, v))
    mid = v["id"]
    for d in daemons:
        check(Daemon.view(d, mid)["deadline"] == v["deadline"], "every process shows its deadline")
    seat = v["to_move"][0]
    st, _, me = Daemon.request(daemons[0], "POST", "/v1/players/me/vacation", {"days": 2},
                               token=seats[seat]["token"])
    check(st == 200 and me["vacation"]["on_vacation"], "a vacation on process 0 (%d)" % st)
    for d in daemons[1:]:
        dl = Daemon.view(d, mid)["deadline"]
        check(dl >= v["deadline"] + 2 * 86400 - 5,
              "another process shows the deadline moved by the vacation (%r, was %r)"
              % (dl, v["deadline"]))
    st, _, me = Daemon.request(daemons[1], "DELETE", "/v1/players/me/vacation",
                               token=seats[seat]["token"])
    check(st == 200 and not me["vacation"]["on_vacation"], "ended on process 1 (%d)" % st)
    for d in (daemons[0], daemons[2]):
        dl = Daemon.view(d, mid)["deadline"]
        check(dl < v["deadline"] + 86400, "the others show it back (%r, was %r)"
              % (dl, v["deadline"]))


def league_finishes_across():
    """Two matches of one league, with one player in both, end at once on two processes
    (their other seats resign together): the standings count both."""
    for _ in range(4):
        ps = cluster.players(3, prefix="lf")
        body = {"name": "lf %d" % rng.randrange(1 << 30), "game": "snag"}
        st, _, lg = cluster.request("POST", "/v1/leagues", body, token=ps[0]["token"])
        check(st == 201, "a league (%d %r)" % (st, lg))
        for p in ps:
            st, _, _ = cluster.request("POST", "/v1/leagues/%d/members" % lg["id"],
                                       token=p["token"])
            check(st == 201, "joins (%d)" % st)
        mids = []
        for other in ps[1:]:
            body = {"game": "snag", "players": [ps[0]["id"], other["id"]], "league": lg["id"]}
            st, _, v = cluster.request("POST", "/v1/matches", body, token=ps[0]["token"])
            check(st == 201, "a league match (%d %r)" % (st, v))
            mids.append(v["id"])
        out = race_across([(daemons[i], mids[i], ps[i + 1]["token"], "resign") for i in range(2)])
        check(all(r[0] == 201 for r in out), "both resign (%r)" % [r[0] for r in out])
        st, _, table = cluster.request("GET", "/v1/leagues/%d/standings" % lg["id"])
        first = [r for r in table["standings"] if r["player"] == ps[0]["id"]][0]
        check(first["played"] == 2 and first["won"] == 2,
              "the player in both counts both (%r)" % first)


def timeouts_across():
    """Two processes on their test clocks both find a seat's time run out at once: the seat
    times out once (one automatic move), played by whichever holds the clock's lease. (A
    database of their own: on the shared one a process of the cluster holds it; and
    directories of their own: their logs are not read as the cluster's.)"""
    db = harness.fresh_db()
    pair = [Daemon(db=db, env={"CARDPOST_TEST_CLOCK": "1", "CARDPOST_DB_POOL": "4"}),
            Daemon(db=db, env={"CARDPOST_TEST_CLOCK": "1"})]
    for d in pair:
        d.start()
    try:
        for _ in range(3):
            ps = [Daemon.player(pair[0], "to%d-%d" % (i, rng.randrange(1 << 30))) for i in range(2)]
            body = {"game": "snag", "players": [p["id"] for p in ps], "options": {"target": 3},
                    "clock": {"move_seconds": 60, "policy": "auto", "reminder_seconds": 0}}
            st, _, v = Daemon.request(pair[1], "POST", "/v1/matches", body, token=ps[0]["token"])
            check(st == 201, "a clocked match (%d)" % st)
            mid, seq = v["id"], v["seq"]
            go = threading.Barrier(2)

            def advance(d):
                go.wait()
                d.advance(61)

            threads = [threading.Thread(target=advance, args=(d,)) for d in pair]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wait_for(lambda: Daemon.view(pair[0], mid)["seq"] > seq, "the timeout is played")
            time.sleep(1.5)  # (both schedulers had their turn)
            lg = Daemon.log(pair[1], mid, ps[0]["token"])
            auto = [ev for ev in lg["events"] if ev.get("auto")]
            check(len(auto) == 1, "the seat timed out once (%r)" % auto)
    finally:
        codes = [d.stop()[0] for d in pair]
    check(codes == [0, 0], "both exit 0 on SIGTERM (%r)" % codes)


# The test clock's step: past a clocked match's 30 s a move, within the lease of an outbox
# claim (41 s at least, outbox.c lease_ms). A live process's delivery in flight (a second at
# most, and the steps are STEP_GAP apart) keeps its claim; a dead one's is free two steps on.
# The last step, once no delivery is in flight, goes past every dead one's claim.
CLOCK_STEP = 31
STEP_GAP = 1.3
LEASE_PAST = 61
RUNS, OTHERS = b"this process runs the clock now", b"another process runs the clock now"
MIN_KILLS = 9  # three of each kind (kill_step)


def start_logged(d):
    """Start d, noting where its log (stderr, appended to at every start) begins."""
    path = os.path.join(d.tmp, "cardpostd.stderr")
    d.log_from = os.path.getsize(path) if os.path.exists(path) else 0
    d.start()


def runs_clock(d):
    """Whether d's log says it runs the clock now (sched.c says so when that changes)."""
    with open(os.path.join(d.tmp, "cardpostd.stderr"), "rb") as f:
        f.seek(getattr(d, "log_from", 0))
        text = f.read()
    return text.rfind(RUNS) > text.rfind(OTHERS)


def lease_holder():
    """The live process that runs the clock (waiting while none or two say so)."""
    def one():
        held = [d for d in daemons if d.proc.poll() is None and runs_clock(d)]
        return held[0] if len(held) == 1 else None
    return wait_for(one, "one process runs the clock", 10)


last_advance = [0.0]


def advance_all(seconds):
    """Every live process's test clock on by `seconds` (each keeps its offset in memory and
    writes it to the database, where a process started later reads it: they stay alike), at
    least STEP_GAP after the last time. Returns the service's time then (ms), the earliest."""
    time.sleep(max(0.0, last_advance[0] + STEP_GAP - time.monotonic()))
    now = min(d.advance(seconds) for d in daemons if d.proc.poll() is None)
    last_advance[0] = time.monotonic()
    return now


def socket_owners(sockets):
    """{socket: live process} of the `sockets` ("socket:[inode]") the processes hold, found
    among each process's descriptors."""
    out = {}
    for d in daemons:
        try:
            fds = os.listdir("/proc/%d/fd" % d.proc.pid)
        except OSError:
            continue  # (it died meanwhile)
        for fd in fds:
            try:
                link = os.readlink("/proc/%d/fd/%s" % (d.proc.pid, fd))
            except OSError:
                continue  # (closed meanwhile)
            if link in sockets:
                out[link] = d
    return out


def delivering_to(port):
    """{socket: live process} of the connections open to 127.0.0.1:`port` now (/proc/net/tcp's
    established sockets)."""
    to = " 0100007F:%04X 01 " % port  # (the remote address, then the state: established)
    with open("/proc/net/tcp") as f:
        sockets = {"socket:[%s]" % line.split()[9] for line in f if to in line}
    return socket_owners(sockets)


def deliveries_done(quiet=1.2, timeout=20):
    """Wait until no process has a connection open to either receiver for `quiet` seconds
    (longer than a dispatcher naps with a row due): every delivery of a live process ended."""
    t_quiet = time.monotonic()
    t_end = t_quiet + timeout
    while time.monotonic() - t_quiet < quiet:
        check(time.monotonic() < t_end, "within %d s: the deliveries in flight end" % timeout)
        if delivering_to(SLOW.port) or delivering_to(RECV.port):
            t_quiet = time.monotonic()
        time.sleep(0.05)


def owner_of(port, to):
    """The live process whose connection from 127.0.0.1:`port` to 127.0.0.1:`to` is open
    (/proc/net/tcp's established socket), or None."""
    pair = " 0100007F:%04X 0100007F:%04X 01 " % (port, to)
    with open("/proc/net/tcp") as f:
        sock = next(("socket:[%s]" % line.split()[9] for line in f if pair in line), None)
    return socket_owners({sock}).get(sock) if sock else None


def slow_deliverer(timeout):
    """A process in the middle of a delivery to SLOW: a POST that SLOW recorded less than
    0.8 s ago (it answers a second after it came) from a connection the process holds; and
    the webhook-ids that SLOW received within the last 1.5 s (that POST's among them), each
    with its POSTs so far. None if there is none within `timeout`."""
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        records = SLOW.records()
        for r in records:
            if time.time() - r["at"] < 0.5:
                d = owner_of(r["port"], SLOW.port)
                if d is not None and time.time() - r["at"] < 0.8:
                    posts = collections.Counter(x["headers"]["webhook-id"] for x in records)
                    return d, {x["headers"]["webhook-id"]: posts[x["headers"]["webhook-id"]]
                               for x in records if x["at"] > time.time() - 1.5}
        time.sleep(0.05)
    return None


def clocked_matches():
    """Snag matches of 30 s a move (three `auto`, one `forfeit`) that nobody plays: every
    step of the test clock times their seat to move out. The first one's players have slow
    webhooks: each step gives them a notification whose delivery takes a second."""
    out = []
    for k, policy in enumerate(("auto", "auto", "auto", "forfeit")):
        seats = hooked(2, "ck", slow=k == 0)
        body = {"game": "snag", "players": [p["id"] for p in seats],  # (to 50: no end)
                "clock": {"move_seconds": 30, "policy": policy, "reminder_seconds": 0}}
        st, _, v = cluster.request("POST", "/v1/matches", body, token=seats[0]["token"])
        check(st == 201, "a clocked match (%d %r)" % (st, v))
        out.append({"id": v["id"], "seats": seats, "steps": [(v["seq"], v["to_move"],
                                                              v["status"], False)]})
    return out


def clock_step(clocked, now_ms, holder_killed):
    """Wait until every clocked match has played the timeouts due at `now_ms` (its deadline is
    after it, or it is over: none missed), then note where each stands."""
    def settled():
        views = [retrying(lambda c=c: cluster.view(c["id"])) for c in clocked]
        return views if all(v["status"] == "finished" or v["deadline"] * 1000 > now_ms
                            for v in views) else None
    views = wait_for(settled, "the clocked matches' late seats time out (after a kill of %s)"
                     % ("the clock's holder" if holder_killed else "another"), 20, step=0.1)
    for c, v in zip(clocked, views):
        c["steps"].append((v["seq"], v["to_move"], v["status"], holder_killed))


def kill_step(i, clocked):
    """Kill (SIGKILL) a process and start it again, by turns: process 1 or 2 (each in its
    turn), the one in the middle of a delivery to SLOW, the one that runs the clock (process
    0 until it is killed). Then every clock moves on a step and the clocked matches' late seats time
    out. A killed holder is started again only once they did: its clock duties were taken
    over by another. Returns (which process, "other", "deliverer" or "holder", the webhook-ids
    in flight to SLOW when a deliverer was killed, with their POSTs then)."""
    kind = ("other", "deliverer", "holder")[i % 3]
    in_flight = None
    if kind == "holder":
        victim = lease_holder()
    elif kind == "deliverer":
        # The step comes first: its timeouts' notifications to SLOW are on their way.
        for _ in range(5):
            now = advance_all(CLOCK_STEP)
            found = slow_deliverer(2.5)
            if found:
                break
            clock_step(clocked, now, False)  # (missed: a step more)
        check(found, "a process delivers a webhook to the slow receiver")
        victim, in_flight = found
    else:
        victim = daemons[1 + i // 3 % 2]
    victim.proc.kill()
    victim.proc.wait()
    if kind == "holder":
        clock_step(clocked, advance_all(CLOCK_STEP), True)
        start_logged(victim)
    elif kind == "deliverer":
        start_logged(victim)
        clock_step(clocked, now, False)
    else:
        start_logged(victim)
        clock_step(clocked, advance_all(CLOCK_STEP), False)
    return daemons.index(victim), kind, in_flight


def check_clocks(clocked, rows):
    """Every step timed each clocked match's seat to move out once: between two steps its log
    holds automatic moves only, of seats that were to move, each once, one at least while
    it ran (none missed, none twice); nothing after the last step; a `timeout` notification
    for each. Returns (timeouts, of them after a kill of the clock's holder)."""
    total = after_holder = 0
    for c in clocked:
        # (A running match's log leaves out what nobody may see yet, a deal: each event says
        # its seq.)
        events = [(ev.get("seq", i), ev)
                  for i, ev in enumerate(retrying(lambda: cluster.log(c["id"]))["events"])]
        steps = c["steps"]
        check(events[-1][0] < steps[-1][0], "match %d: nothing played after the last step (seq "
              "%d, %d at the step)" % (c["id"], events[-1][0], steps[-1][0]))
        auto = collections.Counter()
        for (s0, to_move, status, _), (s1, _, _, killed) in zip(steps, steps[1:]):
            moves = [ev for seq, ev in events if s0 <= seq < s1 and "move" in ev]
            seats = [ev["seat"] for ev in moves]
            check(all(ev.get("auto") for ev in moves), "match %d: only timeouts play it (%r)"
                  % (c["id"], moves))
            if status == "finished":
                check(not moves, "match %d: nothing after its end" % c["id"])
                continue
            check(seats and len(set(seats)) == len(seats) and set(seats) <= set(to_move),
                  "match %d: seq %d to %d: its seat to move %r timed out once (got %r)"
                  % (c["id"], s0, s1, to_move, seats))
            auto.update(seats)
            total += len(seats)
            after_holder += len(seats) if killed else 0
        for s, p in enumerate(c["seats"]):
            told = [x for x in rows[p["id"]] if x["match"] == c["id"] and x["type"] == "timeout"]
            check(len(told) == auto[s], "match %d: seat %d told of each of its %d timeouts (%d)"
                  % (c["id"], s, auto[s], len(told)))
    return total, after_holder


def killed_under_load():
    """While matches are played through all three processes by players with webhooks, one is
    killed (SIGKILL) and started again, again and again (kill_step: processes 1, a pool of 4,
    and 2, the default pool, in turn; the one delivering a slow webhook; the one that runs
    the clock); the test clock moves a step after each, timing out the clocked matches'
    seats. Every move answered 201 is in its match's log; every late seat timed out once,
    none missed, after the holder's kill too; every notification of these players (the rows
    a killed process wrote, the claims it held) is delivered, none lost, none under two ids,
    the webhook a killed process was delivering again under its id by another."""
    stop, enough = threading.Event(), threading.Event()
    errors = []
    kills = []
    played = []
    played_lock = threading.Lock()
    clocked = clocked_matches()

    def killer():
        try:
            while len(kills) < MIN_KILLS or not stop.is_set():
                kills.append(kill_step(len(kills), clocked))
                if len(kills) >= MIN_KILLS:
                    enough.set()
        except (Failure, apidoc.Undocumented, OSError) as e:
            errors.append("killer: %s" % e)
            enough.set()

    def one(game, n, opts):
        try:
            first = True
            while first or not enough.is_set():
                first = False
                seats = hooked(n, game[:2])
                made = retrying(lambda: cluster.create(game, seats, opts,
                                                       token=seats[0]["token"]))
                with played_lock:
                    played.append((made["id"], seats))
                play_retrying(made["id"], seats)
        except (Failure, apidoc.Undocumented) as e:
            errors.append("%s: %s" % (game, e))

    cluster.accepted.clear()
    t = threading.Thread(target=killer)
    t.start()
    try:
        threads = [threading.Thread(target=one, args=m) for m in MATCHES[:4]]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        stop.set()
        enough.set()
        t.join()
    check(not errors, "the matches went on while a process was killed: %r" % errors[:3])
    mids = sorted({a[0] for a in cluster.accepted})
    for mid in mids:
        final = Daemon.view(daemons[0], mid)
        if final["status"] == "finished":
            check_log_of(mid, final)
        else:
            lg = Daemon.request(daemons[0], "GET", "/v1/matches/%d/log" % mid)[2]
            events = lg["events"]
            for m, seat, move, seq in [a for a in cluster.accepted if a[0] == mid]:
                check(seq <= len(events), "an answered move of match %d survives" % mid)
    deliveries_done()
    clock_step(clocked, advance_all(LEASE_PAST), False)
    rows = check_notifications(played + [(c["id"], c["seats"]) for c in clocked],
                               "the killed load")
    timeouts, after_holder = check_clocks(clocked, rows)
    held = [who for who, kind, _ in kills if kind == "holder"]
    posted = collections.Counter(r["headers"]["webhook-id"] for r in SLOW.records())
    cut = [who for who, kind, _ in kills if kind == "deliverer"]
    for ids in [ids for _, kind, ids in kills if kind == "deliverer"]:
        check(any(posted[w] > n for w, n in ids.items()),
              "the webhook a killed process was delivering was delivered again after the kill, "
              "under its id (POSTs then and now: %r)"
              % {w: (n, posted[w]) for w, n in ids.items()})
    print("     %d kills (%d of the clock's holder: processes %s; %d mid-delivery: %s), %d "
          "matches, %d answered moves, all in their logs; %d timeouts, %d of them after the "
          "holder's kill" % (len(kills), len(held), held, len(cut), cut, len(mids),
                             len(cluster.accepted), timeouts, after_holder))
    check(len(kills) >= MIN_KILLS and len(held) >= 3 and len(cut) >= 3,
          "processes were killed under load, the clock's holder and deliverers among them (%r)"
          % kills)
    check(after_holder >= len(held), "each kill of the clock's holder was followed by timeouts "
          "another played (%d timeouts, %d kills)" % (after_holder, len(held)))


def retrying(fn, tries=50):
    """fn() again while the process it reached died under it (a connection error)."""
    for i in range(tries):
        try:
            return fn()
        except (ConnectionError, OSError):
            time.sleep(0.05)
    raise Failure("no process answered in %d tries" % tries)


def play_retrying(mid, seats):
    """Random legal moves to the end, each request to a random process; a connection that
    dies with its process is a move not answered (it may or may not have been played)."""
    for _ in range(5000):
        views = [retrying(lambda p=p: cluster.view(mid, p["token"])) for p in seats]
        v = max(views, key=lambda x: x["seq"])
        if v["status"] == "finished":
            return
        movers = [s for s in v["to_move"] if views[s]["seq"] == v["seq"] and views[s]["legal"]]
        if not movers:
            continue
        s = pick(movers)
        try:
            st, _, body = cluster.move(mid, seats[s]["token"], pick(views[s]["legal"]),
                                       seq=v["seq"])
        except (ConnectionError, OSError):
            continue
        check(st in (201, 409, 503), "a move -> 201, 409 or 503 (got %d %r)" % (st, body))
    raise Failure("match %d did not end" % mid)


def pg_ctl_path():
    versions = os.listdir("/usr/lib/postgresql")
    newest = max(versions, key=lambda v: int(re.sub(r"\D", "", v) or 0))
    return "/usr/lib/postgresql/%s/bin/pg_ctl" % newest


def pg_ctl(*args):
    """The test cluster's pg_ctl (run-with-pg.sh's: its socket directory names it, and its
    data directory is "data" in it); returns that directory."""
    url = os.environ["CARDPOST_TEST_PG"]
    host = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)["host"][0]
    cmd = [pg_ctl_path(), "-D", os.path.join(host, "data"), "-w"] + list(args)
    if os.getuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--"] + cmd
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return host


def server_restart():
    """PostgreSQL stops under the processes: they answer 503 meanwhile (no crash), and once
    it is back they serve as before, streams included."""
    seats = cluster.players(2, prefix="rs")
    mid = cluster.create("snag", seats, {"target": 2}, token=seats[0]["token"])["id"]
    s = Stream(daemons[0], mid, timeout=20)
    s.until_state()
    host = pg_ctl("stop", "-m", "fast")
    try:
        for d in daemons:
            st, hdrs, body = Daemon.request(d, "GET", "/v1/matches/%d" % mid)
            check(st == 503, "a read of a match in memory while the database is down -> 503 "
                  "(its version cannot be checked; got %d)" % st)
            st, hdrs, body = Daemon.request(d, "POST", "/v1/players", {"name": "down"})
            check(st == 503, "a write while the database is down -> 503 (got %d %r)" % (st, body))
            check_problem((st, hdrs, body), 503, None, "the refusal while the database is down")
            st, _, _ = Daemon.request(d, "GET", "/readyz")
            check(st == 503, "/readyz says not ready")
    finally:
        pg_ctl("-l", os.path.join(host, "server.log"), "-o",
               "-k %s -c listen_addresses= -c fsync=off -c full_page_writes=off" % host, "start")
    for d in daemons:
        wait_for(lambda: Daemon.request(d, "GET", "/readyz")[0] == 200, "ready again", 20)
    for d in daemons:
        st, _, _ = Daemon.request(d, "GET", "/v1/players/me", token=seats[0]["token"])
        check(st == 200, "a request after the restart -> 200 (got %d)" % st)
    v = Daemon.view(daemons[1], mid, seats[0]["token"])
    seat = v["to_move"][0]
    mv = Daemon.view(daemons[1], mid, seats[seat]["token"])["legal"][0]
    st, _, body = Daemon.move(daemons[1], mid, seats[seat]["token"], mv)
    check(st == 201, "a move after the restart -> 201 (got %d %r)" % (st, body))
    m = s.next()
    t_end = time.monotonic() + 10
    while m is not None and m["id"] < body["seq"] - 1 and time.monotonic() < t_end:
        m = s.next()
    check(m is not None and m["id"] >= body["seq"] - 1,
          "the stream on process 0 opened before the restart sees the move after it")
    s.close()


def stops_cleanly():
    """Each process exits 0 on SIGTERM (its listener and pool threads stopped, nothing
    leaked: the sanitizer build says so by its exit status)."""
    for d in daemons:
        rc, secs = d.stop()
        check(rc == 0, "cardpostd exits 0 on SIGTERM (got %r)" % rc)


RECV.start()
SLOW.start()
for d in daemons:
    start_logged(d)
try:
    run([play_everything, speed_raced, streams_across, player_streams_across, tickets_across,
         consent_across,
         row_checked, token_across, idempotent_across, vacation_across, league_finishes_across,
         timeouts_across, server_restart, killed_under_load, stops_cleanly])
finally:
    for d in daemons:
        if d.proc and d.proc.poll() is None:
            d.stop()
    RECV.stop()
    SLOW.stop()
