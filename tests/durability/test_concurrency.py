# test_concurrency.py - many clients at once. 32 matches of all five games, a thread per
# seat posting random legal moves with the seq precondition, while in separate Speed
# matches both seats race on the same pile (posting `play` as fast as they can, without
# seq). Afterwards no match is corrupt: seqs are 0..n-1, the cached seq is the number of
# events, every log rebuilt from the tables verifies, every 201 answer of a match carries its
# own seq, and every accepted move is in the log at its place. /healthz is polled all along
# and must always answer. The moves were written by group commits, fewer than the moves (on
# PostgreSQL, the server's group commit: one transaction per write, each counted).
import os
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (OPERATOR, Client, Daemon, Health, check, check_accepted,  # noqa: E402
                     check_accepted_over_http, check_db, create_match, finish, play, random,
                     register, run_threads, seats_of)

DURATION = float(os.environ.get("CONCURRENCY_SECONDS", "6"))
GAMES = [("hearts", 4, {"target": 100}), ("speed", 2, {"target": 5}),
         ("horse-thief", 4, None), ("snag", 2, None), ("horseshoe", 2, None),
         ("hearts", 3, {"target": 100}), ("horse-thief", 3, None), ("speed", 2, {"target": 5})]
MATCHES = 32
RACES = 4  # Speed matches whose two seats race on the pile


def main():
    started = time.monotonic()
    rng = random.Random(int(os.environ.get("CONCURRENCY_SEED", "32")))
    tmp = tempfile.mkdtemp(prefix="cardpost-concurrency.")
    # (its _pg twin: the PostgreSQL database of tests/pg/run-with-pg.sh)
    db = os.environ.get("CARDPOST_TEST_PG") or os.path.join(tmp, "cardpost.db")
    daemon = Daemon(db, tmp).start()
    client = Client(daemon.port)
    players = register(client, 4, "p")

    seats = []
    for i in range(MATCHES):
        game, n, options = GAMES[i % len(GAMES)]
        mid = create_match(client, game, players[:n], options)
        seats.extend(seats_of(mid, players[:n], game))
    racers = []
    for i in range(RACES):
        mid = create_match(client, "speed", players[:2], {"target": 100})
        racers.extend(seats_of(mid, players[:2], "speed"))

    health = Health(daemon.port)
    health.start()
    stop = threading.Event()
    threads = run_threads(
        [(lambda s=s, r=random.Random(rng.random()): play(daemon.port, s, stop, r))
         for s in seats] +
        [(lambda s=s, r=random.Random(rng.random()):
          play(daemon.port, s, stop, r, use_seq=False, prefer_play=True, burst=3, idle=0))
         for s in racers])
    time.sleep(DURATION)
    stop.set()
    for t in threads:
        t.join(120)
        check(not t.is_alive(), "a client thread hangs")
    health.stop.set()
    health.join(60)
    check(health.polls > 0 and not health.bad,
          f"healthz failed during the load: {health.bad[:5]} of {health.polls} polls")
    check(health.slowest < 5.0, f"healthz took {health.slowest:.2f}s under load")

    everyone = seats + racers
    check_accepted_over_http(client, everyone, "under load")
    # Group commit: every accepted move was written by one, and under this load moves
    # shared them (fewer commits than moves). On PostgreSQL the service batches nothing
    # (the server groups the commits of its pool's transactions): a commit per write.
    status, stats = client.request("GET", "/v1/admin/stats", token=OPERATOR)
    accepted = sum(len(s.accepted) for s in everyone)
    commits = stats["commits"] if status == 200 else {}
    batches, writes = commits.get("batches", 0), commits.get("writes", 0)
    shared = batches == writes if os.environ.get("CARDPOST_TEST_PG") else batches < writes
    check(status == 200 and writes >= accepted and 0 < batches and shared,
          f"group commits: {status} {stats} for {accepted} accepted moves")
    # The default durability, and the WAL was copied back at least once (SQLite's
    # WAL: PostgreSQL checkpoints in its server, and cardpostd counts none).
    check(stats.get("durability") == "power" and
          (commits.get("checkpoints", 0) > 0 or os.environ.get("CARDPOST_TEST_PG")),
          f"durability and checkpoints: {stats}")
    check(client.request("GET", "/v1/admin/stats")[0] == 401 and
          client.request("GET", "/v1/admin/stats", token=players[0][1])[0] == 403,
          "the figures are the operator's")
    client.close()
    daemon.kill(sig=signal.SIGTERM)

    matches = check_db(db, tmp, "after the load")
    moves = check_accepted(matches, everyone, "after the load")
    by_match = {}
    for s in everyone:
        for _, after, move in s.accepted:
            by_match.setdefault(s.match, []).append(after)
    for mid, answers in by_match.items():
        check(len(answers) == len(set(answers)),
              f"match {mid}: two 201 answers share a seq: {sorted(answers)}")
    races = {s.match for s in racers}
    raced = sum(len(s.accepted) for s in racers)
    lost = sum(s.refused for s in racers)
    both = sum(1 for mid in races
               if all(s.accepted for s in racers if s.match == mid))
    check(both == len(races), f"only {both} of {len(races)} races had moves from both seats")
    check(lost > 0, "the Speed racers never collided (no refused move)")
    played = {mid for mid, a in by_match.items() if a}
    check(len(played) == MATCHES + RACES, f"only {len(played)} matches saw an accepted move")
    done = sum(1 for m in matches.values() if m["status"] == "finished")
    print(f"concurrency: {len(threads)} client threads for {DURATION:.0f}s on {len(matches)} "
          f"matches ({done} finished): {moves} moves accepted, all in the log at distinct seqs; "
          f"speed races: {raced} plays accepted, {lost} refused; healthz {health.polls} polls, "
          f"slowest {health.slowest * 1000:.0f} ms; {commits['writes']} moves in "
          f"{commits['batches']} group commits")
    finish("concurrency", started)


if __name__ == "__main__":
    main()
