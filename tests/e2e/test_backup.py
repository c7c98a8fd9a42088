# test_backup.py - end to end: `cardpost backup` of the real cardpostd's database while
# clients play, and `cardpost restore` (docs/operations.md "Backups"). The backup holds every
# move answered before it began and only whole matches' logs (each finished one verifies);
# a daemon on the restored copy serves them and takes moves; restore refuses a database a
# daemon holds open, an existing one without --force, and a corrupted or truncated backup;
# a restore over a killed daemon's database leaves none of its old WAL behind.
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (CARDPOST, Daemon, check, check_finished_log, play_match,  # noqa: E402
                     run, verify_log, TEMP_DIRS)
import tempfile  # noqa: E402

rng = random.Random(int(os.environ.get("E2E_SEED", "16")))


def cardpost(*args):
    p = subprocess.run([CARDPOST] + list(args), capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


class Load:
    """Client threads, each with its own pair of players, creating snag matches and playing
    them to the end by random legal moves; every answered move is recorded as (match, seq)
    with the moment its answer arrived."""

    def __init__(self, d, threads=3):
        self.d = d
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.answered = []        # (time answered, match id, seq after the move)
        self.matches = set()
        self.errors = []
        self.pairs = [d.players(2, prefix="bk%d-" % k) for k in range(threads)]
        self.threads = [threading.Thread(target=self.client, args=(k,)) for k in range(threads)]

    def client(self, k):
        r = random.Random(k)
        seats = self.pairs[k]
        try:
            while not self.stop.is_set():
                mid = self.d.create("snag", seats, {"target": 1})["id"]
                with self.lock:
                    self.matches.add(mid)
                while not self.stop.is_set():
                    views = [self.d.view(mid, p["token"]) for p in seats]
                    if views[0]["status"] == "finished":
                        break
                    movers = [s for s, v in enumerate(views) if v["legal"]]
                    if not movers:
                        continue
                    s = r.choice(movers)
                    st, _, body = self.d.move(mid, seats[s]["token"], r.choice(views[s]["legal"]))
                    if st == 201:
                        with self.lock:
                            self.answered.append((time.monotonic(), mid, body["seq"]))
                    elif st != 409:
                        raise AssertionError("move -> %d %r" % (st, body))
        except Exception as e:  # reported by finish()
            self.errors.append(repr(e))

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)
        check(not self.errors, "the clients played without an error: %r" % self.errors[:3])


def corrupt(src, dst):
    """A copy of the database file `src` whose b-tree pages (all but the first two and the
    last) are overwritten with random bytes."""
    shutil.copyfile(src, dst)
    size = os.path.getsize(dst)
    with open(dst, "r+b") as f:
        f.seek(8192)
        f.write(random.Random(7).randbytes(max(0, size - 8192 - 4096)))


def test_backup_during_load_and_restore():
    d = Daemon().start()
    tmp = tempfile.mkdtemp(prefix="cardpost-backup-")
    TEMP_DIRS.append(tmp)
    load = Load(d).start()
    time.sleep(2.0)
    out = os.path.join(tmp, "cardpost-backup.db")
    with load.lock:
        before = list(load.answered)
    t0 = time.monotonic()
    rc, stdout, stderr = cardpost("backup", "--db", d.db, out)
    t1 = time.monotonic()
    time.sleep(0.5)
    with load.lock:
        during = [a for a in load.answered if t0 <= a[0] <= t1]
        after = len(load.answered)
    load.finish()
    check(rc == 0, "cardpost backup exits 0 while the daemon takes moves (%d: %s)" % (rc, stderr))
    info = json.loads(stdout)
    check(info["backup"] == out and info["integrity"] == "ok" and info["schema_version"] > 0,
          "backup prints what it wrote: %r" % info)
    check(len(before) >= 20 and after > len(before),
          "moves were answered before and after the backup began (%d, %d)" % (len(before), after))
    print("  %d moves answered before the backup, %d while it ran (%.0f ms)"
          % (len(before), len(during), (t1 - t0) * 1000))
    check(not os.path.exists(out + "-wal"), "the backup is a single file, no -wal")
    rc, _, stderr = cardpost("backup", "--db", d.db, out)
    check(rc == 1 and "exists" in stderr, "a backup never replaces a file (%d %s)" % (rc, stderr))

    # Restore refused: onto the live database (even with --force), onto an existing file.
    rc, _, stderr = cardpost("restore", out, "--db", d.db, "--force")
    check(rc == 1 and "another process" in stderr,
          "restore refuses a database cardpostd holds open (%d %s)" % (rc, stderr))
    check(d.request("GET", "/readyz")[0] == 200, "the live daemon is untouched")

    # Restore into a new place and a new daemon.
    restored = os.path.join(tmp, "restored", "cardpost.db")
    os.mkdir(os.path.dirname(restored))
    rc, stdout, stderr = cardpost("restore", out, "--db", restored)
    check(rc == 0, "restore into a new file exits 0 (%d %s)" % (rc, stderr))
    check(json.loads(stdout)["schema_version"] == info["schema_version"],
          "restore reports the backup's schema version")
    rc, _, stderr = cardpost("restore", out, "--db", restored)
    check(rc == 1 and "--force" in stderr, "restore refuses an existing file without --force")
    d2 = Daemon(db=restored, tmp=os.path.dirname(restored)).start()
    st, _, ready = d2.request("GET", "/readyz")
    check(st == 200, "the restored daemon is ready (%d %r)" % (st, ready))

    # Every move answered before the backup began is in it.
    last = {}
    for _, mid, seq in before:
        last[mid] = max(last.get(mid, 0), seq)
    finished = 0
    active = []
    in_backup = {}  # match -> its seq in the backup (as the restored copy, untouched, serves it)
    at_kill = {}    # match -> its seq in the live database, every move answered
    for mid in sorted(load.matches):
        st, _, v = d2.request("GET", "/v1/matches/%d" % mid)
        if mid in last:
            check(st == 200 and v["seq"] >= last[mid],
                  "match %d holds the %d events answered before the backup (got %r)"
                  % (mid, last[mid], v.get("seq") if st == 200 else st))
        live = d.view(mid)
        at_kill[mid] = live["seq"]
        if st != 200:
            check(st == 404, "a match not in the backup is a 404 (%d)" % st)
            continue  # created after the backup began
        in_backup[mid] = v["seq"]
        check(v["seq"] <= live["seq"], "the backup is not ahead of the database")
        if v["status"] == "finished":
            log = d2.log(mid)
            check_finished_log(log, v)
            check(log == d.log(mid), "a finished match's log is the original's")
            verify_log(log, tmp, "match-%d" % mid)
            finished += 1
        else:
            active.append(v)
    check(finished >= 2, "finished matches are in the backup (%d)" % finished)
    print("  %d finished matches verified, %d in play" % (finished, len(active)))

    # The restored service takes moves: a match in play goes on, a new one is played out.
    check(active, "a match was in play at the backup")
    v = active[0]
    pair = next(p for p in load.pairs if p[0]["id"] in [s["id"] for s in v["players"]])
    view = play_match(d2, v["id"], pair, rng)
    check(view["status"] == "finished", "a match of the backup is played to its end")
    verify_log(d2.log(view["id"]), tmp, "continued")
    mid = d2.create("snag", pair, {"target": 1})["id"]
    verify_log(d2.log(play_match(d2, mid, pair, rng)["id"]), tmp, "new")
    d2.stop()

    # Corrupted and truncated backups are refused; nothing is written.
    bad = os.path.join(tmp, "corrupt.db")
    corrupt(out, bad)
    target = os.path.join(tmp, "from-corrupt.db")
    rc, _, stderr = cardpost("restore", bad, "--db", target)
    check(rc == 1 and "integrity" in stderr and not os.path.exists(target),
          "a corrupted backup is refused (%d %s)" % (rc, stderr))
    half = os.path.join(tmp, "half.db")
    with open(out, "rb") as f, open(half, "wb") as g:
        g.write(f.read(os.path.getsize(out) // 2))
    rc, _, stderr = cardpost("restore", half, "--db", target)
    check(rc == 1 and not os.path.exists(target), "a truncated backup is refused (%s)" % stderr)
    junk = os.path.join(tmp, "junk.db")
    with open(junk, "wb") as g:
        g.write(b"not a database\n" * 100)
    rc, _, stderr = cardpost("restore", junk, "--db", target)
    check(rc == 1 and not os.path.exists(target), "a file that is no database is refused")
    leftovers = [n for n in os.listdir(tmp) if ".restore-" in n or ".partial-" in n]
    check(not leftovers, "no temporary file is left behind: %r" % leftovers)

    # Over a killed daemon's database: its WAL (full of later moves) goes, the backup's state
    # is what the next daemon sees.
    d.kill()
    check(os.path.getsize(d.db + "-wal") > 0, "the killed daemon left a WAL")
    rc, _, stderr = cardpost("restore", out, "--db", d.db)
    check(rc == 1 and "--force" in stderr, "restore refuses to replace without --force")
    rc, _, stderr = cardpost("restore", out, "--db", d.db, "--force")
    check(rc == 0, "restore --force over a stopped daemon's database (%d %s)" % (rc, stderr))
    check(not os.path.exists(d.db + "-wal") and not os.path.exists(d.db + "-shm"),
          "the old -wal and -shm are gone")
    # (The control: moves answered after the backup, in the killed daemon's database.)
    later = [mid for mid in at_kill if at_kill[mid] > in_backup.get(mid, 0)]
    check(later, "the killed daemon's database was ahead of the backup")
    d3 = Daemon(db=d.db, tmp=d.tmp).start()
    for mid in sorted(at_kill):
        st, _, v = d3.request("GET", "/v1/matches/%d" % mid)
        got = v["seq"] if st == 200 else "status %d" % st
        want = in_backup[mid] if mid in in_backup else "status 404"
        check(got == want, "match %d is as in the backup: %r, not seq %d (got %r)"
              % (mid, want, at_kill[mid], got))
    print("  %d of %d matches were further on in the killed daemon's database"
          % (len(later), len(at_kill)))
    rc2, stdout, _ = cardpost("backup", "--db", d.db, os.path.join(tmp, "again.db"))
    check(rc2 == 0, "the restored database backs up again")
    d3.stop()


def test_backup_usage():
    # (the backup's path in a directory of its own: a file left at a fixed path would be
    # refused first, "exists already")
    tmp = tempfile.mkdtemp(prefix="cardpost-backup-usage-")
    rc, _, stderr = cardpost("backup", "--db", "/nonexistent/cardpost.db",
                             os.path.join(tmp, "x.db"))
    shutil.rmtree(tmp, ignore_errors=True)
    check(rc == 1 and "cannot open" in stderr, "backup of a missing database fails (%s)" % stderr)
    rc, _, _ = cardpost("backup", "out.db")
    check(rc == 2, "backup without --db is a usage error")
    rc, _, _ = cardpost("restore", "--db", "x.db")
    check(rc == 2, "restore without a backup is a usage error")


if __name__ == "__main__":
    run([test_backup_usage, test_backup_during_load_and_restore])
