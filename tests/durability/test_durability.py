# test_durability.py - a committed move survives a crash. cardpostd is killed with SIGKILL
# while client threads keep posting random legal moves to several matches (Hearts, Speed,
# Horse Thief), then restarted on the same database, several times. After each crash every
# move that was answered 201 is in the database and in GET /log at its seq, every match's
# log rebuilt from the tables verifies (`cardpost verify`), and play goes on.
import os
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Client, Daemon, check, check_accepted, check_accepted_over_http,  # noqa: E402
                     check_db, create_match, finish, play, random, read_db, register,
                     run_threads,
                     seats_of)

ROUNDS = int(os.environ.get("DURABILITY_ROUNDS", "5"))


def main():
    started = time.monotonic()
    rng = random.Random(int(os.environ.get("DURABILITY_SEED", "4")))
    tmp = tempfile.mkdtemp(prefix="cardpost-durability.")
    db = os.path.join(tmp, "cardpost.db")
    daemon = Daemon(db).start()
    client = Client(daemon.port)
    players = register(client, 5, "p")
    seats = []

    def new_matches(c):
        for game, n, options in (("hearts", 4, {"target": 100}), ("speed", 2, {"target": 3}),
                                 ("horse-thief", 3, None)):
            mid = create_match(c, game, players[:n], options)
            seats.extend(seats_of(mid, players[:n], game))

    new_matches(client)
    new_matches(client)
    client.close()
    total_moves = 0
    for rnd in range(ROUNDS):
        stop = threading.Event()
        active = [s for s in seats if s.match not in finished_matches(seats, db)]
        before = sum(len(s.accepted) for s in seats)
        threads = run_threads([
            (lambda s=s, r=random.Random(rng.random()): play(daemon.port, s, stop, r))
            for s in active])
        time.sleep(0.6 + rng.random())  # let them play, then crash in the middle of it
        rc = daemon.kill()
        check(rc == -9, f"round {rnd}: cardpostd ended {rc}, not by SIGKILL")
        for t in threads:
            t.join(60)
            check(not t.is_alive(), f"round {rnd}: a client thread hangs after the crash")
        played = sum(len(s.accepted) for s in seats) - before
        check(played > 0, f"round {rnd}: no move was accepted before the crash")
        total_moves += played

        # the file as the crash left it
        matches = check_db(db, tmp, f"round {rnd} after crash")
        n = check_accepted(matches, seats, f"round {rnd} after crash")

        # restarted on the same file: the same answers over HTTP, and play goes on
        daemon = Daemon(db).start()
        client = Client(daemon.port)
        status, body = client.request("GET", "/healthz")
        check(status == 200 and body == {"status": "ok"}, f"round {rnd}: healthz {status} {body}")
        check_accepted_over_http(client, seats, f"round {rnd} after restart")
        for mid, m in matches.items():
            status, view = client.request("GET", f"/v1/matches/{mid}")
            check(status == 200 and view["seq"] == m["seq"] and
                  view["status"] == m["status"],
                  f"round {rnd}: match {mid} served seq {view.get('seq')} status "
                  f"{view.get('status')}, database {m['seq']} {m['status']}")
        retried = retry_lost(client, seats, matches, f"round {rnd}")
        new_matches(client)  # creation works on the restarted daemon too
        client.close()
        print(f"round {rnd}: {played} moves accepted before SIGKILL, all {n} accepted so far "
              f"durable; {len(matches)} matches verify; {retried} interrupted POSTs retried "
              f"with their Idempotency-Key", flush=True)

    # after the last restart: everybody plays on for a moment, then a clean stop
    stop = threading.Event()
    active = [s for s in seats if s.match not in finished_matches(seats, db)]
    before = sum(len(s.accepted) for s in seats)
    threads = run_threads([
        (lambda s=s, r=random.Random(rng.random()): play(daemon.port, s, stop, r))
        for s in active])
    time.sleep(1.0)
    stop.set()
    for t in threads:
        t.join(60)
    check(sum(len(s.accepted) for s in seats) > before, "no move accepted after the last restart")
    daemon.kill(sig=signal.SIGTERM)
    matches = check_db(db, tmp, "final")
    check_accepted(matches, seats, "final")
    done = sum(1 for m in matches.values() if m["status"] == "finished")
    print(f"durability: {ROUNDS} SIGKILLs, {total_moves} moves accepted in between, "
          f"{len(matches)} matches ({done} finished), every accepted move durable, every log "
          f"verifies")
    finish("durability", started)


def retry_lost(client, seats, matches, label):
    """The POSTs the crash interrupted, sent again with the same Idempotency-Key: a move the
    database holds gets its first answer back and is not applied again; one it does not hold
    is judged afresh (applied when the seq still matches, else stale)."""
    n = 0
    for s in seats:
        if not s.lost:
            continue
        key, body, before = s.lost
        s.lost = None
        n += 1
        events = matches[s.match]["events"]
        committed = before < len(events) and events[before][1:4] == ("move", s.seat, body["move"])
        status, view = client.request("GET", f"/v1/matches/{s.match}", token=s.token)
        seq = view["seq"]
        status, answer = client.request("POST", f"/v1/matches/{s.match}/moves", body,
                                        token=s.token, key=key)
        _, after = client.request("GET", f"/v1/matches/{s.match}", token=s.token)
        what = f"{label}: retry of match {s.match} seat {s.seat} {body} (committed: {committed})"
        if committed:
            check(status == 201 and answer["seq"] > before and after["seq"] == seq,
                  f"{what}: {status} {answer}, seq {seq} -> {after['seq']}")
        elif seq == before and view["status"] == "active":
            check(status == 201 and after["seq"] > seq, f"{what}: {status} {answer}")
        else:
            check(status == 409 and after["seq"] == seq, f"{what}: {status} {answer}")
        if status == 201:
            s.accepted.append((before, answer["seq"], body["move"]))
    return n


def finished_matches(seats, db):
    return {mid for mid, m in read_db(db).items() if m["status"] == "finished"}


if __name__ == "__main__":
    main()
