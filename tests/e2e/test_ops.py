# test_ops.py - end to end: what an operator runs beside the API (docs/operations.md).
# `cardpostd --check-config FILE` names every bad line of a settings file (and the example
# file passes); GET /readyz is 200 while the database answers and 503 problem+json when it
# does not (its file gone), and /healthz stays 200 meanwhile. And the ratios ops/bench-service
# -r prints (ops/lib/bench-ratios.awk).
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import CARDPOSTD, PROBLEM, TEMP_DIRS, Daemon, check, is_postgres, run  # noqa: E402

ROOT = os.environ.get("CARDPOST_SOURCE_ROOT",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def check_config(text):
    tmp = tempfile.mkdtemp(prefix="cardpost-conf-")
    TEMP_DIRS.append(tmp)
    path = os.path.join(tmp, "cardpost.conf")
    with open(path, "w") as f:
        f.write(text)
    p = subprocess.run([CARDPOSTD, "--check-config", path], capture_output=True, text=True,
                       timeout=30)
    return p.returncode, p.stdout, p.stderr.replace(path, "F")


def ratios(text):
    """ops/lib/bench-ratios.awk run on `text`."""
    awk = os.path.join(ROOT, "ops", "lib", "bench-ratios.awk")
    return subprocess.run(["awk", "-F|", "-f", awk], input=text, capture_output=True,
                          text=True, timeout=30)


def test_bench_ratios():
    """ops/bench-service -r: each notify row's moves/s over the off row of its own turn,
    turn by turn, and their median (ops/lib/bench-ratios.awk); a turn whose off row failed
    (0 moves/s) or is missing is left out, and rows of other settings are not mixed in."""
    rows = ["h 64 on|off|20000", "h 64 on|up|15000", "h 64 off|off|25000",
            "h 64 off|up|15000", "h 64 on|off|10000", "h 64 on|up|9000",
            "h 64 off|off|0", "h 64 off|up|14000", "h 64 on|off|16000", "h 64 on|up|12000"]
    p = ratios("\n".join(rows) + "\n")
    want = ["- moves/s with notify up over off (h 64 on), turn by turn: 75% 90% 75%; median 75%",
            "- moves/s with notify up over off (h 64 off), turn by turn: 60%; median 60%"]
    check(p.returncode == 0 and p.stdout.splitlines() == want,
          "the ratios of each turn and their median (%d %r %r)" % (p.returncode, p.stdout,
                                                                    p.stderr))
    p = ratios("h|off|100\nh|up|80\nh|off|100\nh|up|60\n")
    check(p.stdout.strip().endswith("turn by turn: 80% 60%; median 70%"),
          "an even number of turns: the mean of the middle two (%r)" % p.stdout)
    # The last turn without its off row (that run printed nothing): its up row left out.
    p = ratios("g|off|100\ng|up|80\ng|off|200\ng|up|120\ng|up|90\n")
    check(p.returncode == 0 and p.stdout.splitlines() == [
        "- moves/s with notify up over off (g), turn by turn: 80% 60%; median 70%"],
        "the turns without an off row are left out (%d %r %r)" % (p.returncode, p.stdout,
                                                                   p.stderr))


def test_check_config_good():
    example = os.path.join(ROOT, "ops", "cardpost.conf.example")
    p = subprocess.run([CARDPOSTD, "--check-config", example], capture_output=True, text=True)
    check(p.returncode == 0 and p.stdout.strip() == example + ": ok",
          "the example file passes (%d %r %r)" % (p.returncode, p.stdout, p.stderr))
    rc, out, err = check_config("# nothing but a comment\n\n db = /tmp/x.db  # trailing\n"
                                "vacation_days = 0\ndurability = crash\nhttp_threads=4\n")
    check(rc == 0 and err == "", "a good file passes (%d %r)" % (rc, err))


def test_check_config_every_bad_line():
    rc, out, err = check_config(
        "db = /tmp/x.db\n"
        "colour = blue\n"
        "vacation_days = 400\n"
        "durability = sometimes\n"
        "this line has no equals sign\n"
        "match_cache = 0\n"
        "mail_from = nobody\n"
        "smtp_url = http://mail.example\n"
        "operator_token = %s\n"
        "listen = 127.0.0.1:8080\n" % ("s3cret" * 60))
    lines = err.strip().split("\n")
    check(rc == 1, "a bad file exits 1 (%d)" % rc)
    expected = [
        'F:2: colour: unknown setting',
        'F:3: vacation_days: bad value "400" (expected a whole number from 0 to 366)',
        'F:4: durability: bad value "sometimes" (expected crash or power)',
        'F:5: expected key = value',
        'F:6: match_cache: bad value "0" (expected a whole number from 1 to 10000000)',
        "F:7: mail_from: bad value \"nobody\" (expected an email address (with '@'))",
        'F:8: smtp_url: bad value "http://mail.example" (expected smtp://HOST:PORT or '
        'smtps://HOST:PORT, or empty)',
        'F:9: operator_token: bad value',
    ]
    check(lines == expected, "every bad line, each with its reason:\n%s" % "\n".join(lines))
    check("s3cret" not in err, "a secret's value is never printed")
    rc, out, err = check_config("")
    check(rc == 0, "an empty file is a good file")
    p = subprocess.run([CARDPOSTD, "--check-config", "/nonexistent/cardpost.conf"],
                       capture_output=True, text=True)
    check(p.returncode == 1 and "cannot open" in p.stderr, "a missing file exits 1")


def test_check_config_db_pool():
    """db_pool sizes PostgreSQL's pool of writing connections, at most 64; 0, the default of
    files written before the pool was (docs/scaling.md "Commits"), still passes and means the
    default pool (no batches of our own on PostgreSQL any more)."""
    rc, out, err = check_config("db = /tmp/x.db\ndb_pool = 0\ndb_pool = 1\n")
    check(rc == 0 and err == "", "db_pool = 0 and 1 pass (%d %r)" % (rc, err))
    rc, out, err = check_config("db = /tmp/x.db\ndb_pool = 65\n")
    expected = ['F:2: db_pool: bad value "65" (expected a whole number from 0 to 64)']
    check(rc == 1 and err.strip().split("\n") == expected,
          "db_pool = 65 refused (%d %r)" % (rc, err))


def test_long_line_refused_at_start():
    """A line longer than the reader's buffer is one error, with --check-config and at
    start alike (it was once read as two lines at start: its tail a setting of its own)."""
    text = "public_url = https://x.test/" + "a" * 3000 + " listen = 127.0.0.1:1\n"
    rc, out, err = check_config(text)
    check(rc == 1 and "F:1: the line is longer than 2046 bytes" in err,
          "--check-config names the long line (%d %r)" % (rc, err))
    tmp = tempfile.mkdtemp(prefix="cardpost-conf-")
    TEMP_DIRS.append(tmp)
    path = os.path.join(tmp, "cardpost.conf")
    with open(path, "w") as f:
        f.write(text)
    p = subprocess.run([CARDPOSTD, "--config", path, "--db", os.path.join(tmp, "x.db")],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode != 0 and "the line is longer than 2046 bytes" in p.stderr,
          "cardpostd refuses to start on it (%d %r)" % (p.returncode, p.stderr[-300:]))


def database_away(db):
    """(gone, back): functions that take the database away from new connections and give
    it back."""
    if not is_postgres(db):
        return (lambda: os.rename(db, db + ".moved")), (lambda: os.rename(db + ".moved", db))
    import psycopg2
    head, _, query = db.partition("?")  # postgresql:///NAME?host=...
    base, name = head.rsplit("/", 1)
    admin = base + "/postgres" + ("?" + query if query else "")

    def allow(yes):
        c = psycopg2.connect(admin)
        c.autocommit = True
        try:
            c.cursor().execute("ALTER DATABASE \"%s\" ALLOW_CONNECTIONS %s"
                               % (name, "true" if yes else "false"))
        finally:
            c.close()
    return (lambda: allow(False)), (lambda: allow(True))


def test_readyz():
    d = Daemon().start()
    st, hdrs, body = d.request("GET", "/readyz")
    check(st == 200 and body == {"status": "ready", "checks": {
        "database": "ok", "workers": "ok", "scheduler": "ok"}}, "/readyz -> 200 (%d %r)" % (st, body))
    st, hdrs, body = d.request("POST", "/readyz")
    check(st == 405 and hdrs["content-type"] == PROBLEM, "POST /readyz -> 405")
    # The database's file goes away (a volume unmounted): not ready, still alive. On
    # PostgreSQL: the database takes no new connection (the probe makes one of its own).
    gone, back = database_away(d.db)
    gone()
    try:
        st, hdrs, body = d.request("GET", "/readyz")
        check(st == 503 and hdrs["content-type"] == PROBLEM and body["code"] == "not_ready"
              and "database" in body["detail"], "/readyz -> 503 without the database (%d %r)"
              % (st, body))
        st, _, body = d.request("GET", "/healthz")
        check(st == 200, "/healthz stays 200: the process is alive")
    finally:
        back()
    st, _, body = d.request("GET", "/readyz")
    check(st == 200, "/readyz -> 200 again once the database is back (%d %r)" % (st, body))
    d.stop()


if __name__ == "__main__":
    run([test_bench_ratios, test_check_config_good, test_check_config_every_bad_line,
         test_check_config_db_pool, test_long_line_refused_at_start, test_readyz])
