# test_lifecycle.py - end to end: stopping and restarting the real cardpostd. SIGTERM while
# requests are in flight (each gets a complete answer; exit 0 within 5 s), SIGTERM with an
# open event stream, and a restart on the same database (players, tokens, matches and logs
# survive; play continues to the end and the log verifies).
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (CARDPOSTD, OPERATOR, Daemon, Stream, check, play_match,  # noqa: E402
                     run, verify_log)

rng = random.Random(int(os.environ.get("E2E_SEED", "13")))


def test_sigterm_in_flight():
    d = Daemon().start()
    seats = d.players(2, prefix="sp")
    mids = [d.create("speed", seats, {"target": 50})["id"] for _ in range(2)]
    # Requests whose body is still on its way when SIGTERM comes: headers sent, body half.
    half = []
    for i in range(4):
        body = json.dumps({"move": "ready", "seq": 10 ** 6}).encode()
        sock = socket.create_connection(("127.0.0.1", d.port), timeout=10)
        sock.sendall(b"POST /v1/matches/%d/moves HTTP/1.1\r\nHost: x\r\n"
                     b"Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % (mids[i % 2], seats[i % 2]["token"].encode(),
                                                      len(body)) + body[:5])
        half.append((sock, body[5:]))
    # And a crowd of clients playing and reading in a loop.
    stop = threading.Event()
    answers, errors, refused = [], [], []

    def client(k):
        p = seats[k % 2]
        mid = mids[k // 2 % 2]
        while not stop.is_set():
            try:
                v = d.view(mid, p["token"])
                if v["legal"]:
                    st, _, body = d.move(mid, p["token"], rng.choice(v["legal"]))
                    answers.append((st, body))
            except http.client.RemoteDisconnected as e:  # accepted, then closed unanswered
                errors.append(repr(e))
                return
            except (ConnectionRefusedError, ConnectionResetError, BrokenPipeError) as e:
                refused.append(repr(e))  # never accepted: reset out of the listen backlog
                return
            except Exception as e:  # an answer cut short
                errors.append(repr(e))
                return

    ths = [threading.Thread(target=client, args=(k,)) for k in range(6)]
    for th in ths:
        th.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    d.proc.send_signal(15)
    time.sleep(0.2)
    got_half = []
    for sock, rest in half:
        data = b""
        try:
            sock.sendall(rest)
        except OSError as e:
            check(False, "a request in flight at SIGTERM may send the rest of its body (%r)" % e)
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            if b"content-length:" in head.lower():
                n = int([h for h in head.split(b"\r\n")
                         if h.lower().startswith(b"content-length:")][0].split(b":")[1])
                if len(body) >= n:
                    break
        sock.close()
        got_half.append(data)
    rc = d.proc.wait(timeout=5)
    secs = time.monotonic() - t0
    stop.set()
    for th in ths:
        th.join()
    check(rc == 0, "SIGTERM with requests in flight: exit 0 (got %r)" % rc)
    check(secs < 5, "SIGTERM: exit within 5 s (%.2f s)" % secs)
    check(not errors, "no answer was cut short: %r" % errors[:3])
    check(len(answers) > 10, "the clients were busy (%d answers)" % len(answers))
    check(all(st in (201, 409, 422) and isinstance(b, dict) for st, b in answers),
          "every answer is complete JSON")
    for data in got_half:
        head, _, body = data.partition(b"\r\n\r\n")
        check(head.startswith(b"HTTP/1.1 409"), "a request in flight at SIGTERM got its answer "
              "(%r)" % data[:80])
        check(json.loads(body)["code"] == "stale_seq", "a complete problem body")
    d.proc.stdout.close()
    d.stderr.close()
    print("     %d answers, %d connections not accepted, exit in %.2f s"
          % (len(answers), len(refused), secs))


def test_sigterm_stream():
    d = Daemon().start()
    seats = d.players(4, prefix="st")
    mid = d.create("hearts", seats)["id"]
    streams = [Stream(d, mid, seats[0]["token"], timeout=20), Stream(d, mid, timeout=20)]
    for s in streams:
        s.until_state()
    t0 = time.monotonic()
    rc, secs = d.stop()
    check(rc == 0 and secs < 5, "SIGTERM with open streams: exit 0 within 5 s (%r, %.2f s)"
          % (rc, secs))
    for s in streams:
        try:
            m = s.next()
        except (http.client.IncompleteRead, ConnectionResetError):
            m = None
        check(m is None, "the stream ended")
        s.close()
    check(time.monotonic() - t0 < 5, "the streams ended promptly")


def test_sigterm_race():
    # SIGTERM while the HTTP threads are busy, with every removal from an epoll set slowed
    # to 3 ms (LD_PRELOAD tests/e2e/slow_epoll_del.c). The listening socket is the
    # service's own, closed by the stop, so no thread of libmicrohttpd's is left to race
    # another over it: with MHD_quiesce_daemon the process aborted ("Failed to remove
    # listen FD from epoll set", seen once in CI) in most of these stops.
    lib = os.environ.get("CARDPOST_TEST_SLOW_EPOLL_DEL")
    check(lib and os.path.exists(lib), "env CARDPOST_TEST_SLOW_EPOLL_DEL names the preload")
    asan = os.environ.get("ASAN_OPTIONS")  # (the preload comes before the sanitizer's runtime)
    for i in range(6):
        d = Daemon(env={"LD_PRELOAD": lib, "CARDPOST_DURABILITY": "crash",
                        "ASAN_OPTIONS": (asan + ":" if asan else "") +
                        "verify_asan_link_order=0"}).start()
        stop = threading.Event()

        def hammer():
            while not stop.is_set():
                try:
                    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=5)
                    c.request("GET", "/healthz")
                    c.getresponse().read()
                    c.close()
                except OSError:
                    time.sleep(0.001)  # (refused once the stop began)

        ths = [threading.Thread(target=hammer) for _ in range(4)]
        for th in ths:
            th.start()
        time.sleep(0.05 + 0.02 * i)
        try:
            rc, secs = d.stop(timeout=20)
        finally:
            stop.set()
            for th in ths:
                th.join()
        check(rc == 0, "SIGTERM %d with busy threads and slow epoll removals: exit 0 (got %r)"
              % (i + 1, rc))


def test_port_in_use():
    """A second cardpostd on a port another one listens on fails to start, with the reason,
    instead of sharing the port (SO_REUSEPORT would have it take part of the connections
    silently); the first goes on serving. A restart on the same port binds at once."""
    d = Daemon().start()
    other = tempfile.mkdtemp(prefix="cardpost-e2e-port-")
    harness.TEMP_DIRS.append(other)
    db = os.environ.get("CARDPOST_TEST_PG") or os.path.join(other, "cardpost.db")
    second = subprocess.Popen(
        [CARDPOSTD, "--db", db, "--listen", "127.0.0.1:%d" % d.port],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **harness.UNLIMITED})
    try:
        _, err = second.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        second.kill()
        out, _ = second.communicate()
        raise harness.Failure("a second daemon started on the port in use: %r" % out[:200])
    err = err.decode(errors="replace")
    check(second.returncode != 0, "the second daemon exits non-zero (%d)" % second.returncode)
    check("cannot listen on 127.0.0.1:%d" % d.port in err and "in use" in err,
          "it says the address is in use: %r" % err[-400:])
    for _ in range(20):  # every connection still reaches the first daemon
        st, _, body = d.request("GET", "/healthz")
        check(st == 200, "the first daemon goes on serving")
    port = d.port
    rc, _ = d.stop()
    check(rc == 0, "the first daemon exits 0")
    d2 = Daemon(db=d.db, tmp=d.tmp, port=port).start()
    check(d2.port == port, "a restart binds the same port at once")
    d2.stop()


def test_restart():
    d = Daemon().start()
    seats = d.players(4, prefix="rs")
    duo = seats[:2]
    hearts = d.create("hearts", seats, {"target": 1, "moon": "choose"})["id"]
    snag = d.create("snag", duo, {"target": 2})["id"]
    done = d.create("horseshoe", duo, {"target": 1})["id"]
    # Part of hearts: the passes and a few plays; snag untouched; horseshoe finished.
    for s, p in enumerate(seats):
        st, _, _ = d.move(hearts, p["token"], rng.choice(d.view(hearts, p["token"])["legal"]))
        check(st == 201, "pass")
    for _ in range(6):
        (s,) = d.view(hearts)["to_move"]
        st, _, _ = d.move(hearts, seats[s]["token"],
                          rng.choice(d.view(hearts, seats[s]["token"])["legal"]))
        check(st == 201, "play")
    play_match(d, done, duo, rng)
    before = {mid: ([d.view(mid, p["token"]) for p in seats[:2]] + [d.view(mid)],
                    [d.log(mid, p["token"]) for p in seats[:2]] + [d.log(mid)])
              for mid in (hearts, snag, done)}
    db = d.db
    rc, secs = d.stop()
    check(rc == 0, "the first daemon exits 0")

    d2 = Daemon(db=db, tmp=d.tmp).start()
    check(d2.port, "the second daemon serves on the same database")
    for mid, (views, logs) in before.items():
        now_v = [d2.view(mid, p["token"]) for p in seats[:2]] + [d2.view(mid)]
        now_l = [d2.log(mid, p["token"]) for p in seats[:2]] + [d2.log(mid)]
        check(now_v == views, "match %d: every view is the same after the restart" % mid)
        check(now_l == logs, "match %d: every log is the same after the restart" % mid)
    verify_log(d2.log(done), d2.tmp, "restart-done")
    # Tokens still work (a wrong one is still refused), and play continues.
    check(d2.request("GET", "/v1/matches/%d" % hearts, token="cpt_nope")[0] == 401,
          "a wrong token is still refused")
    for mid, who in ((hearts, seats), (snag, duo)):
        fin = play_match(d2, mid, who, rng)
        check(fin["status"] == "finished", "match %d plays to its end after the restart" % mid)
        log = d2.log(mid)
        check(log["result"] == fin["result"], "its log holds the result")
        verify_log(log, d2.tmp, "restart%d" % mid)
    new = d2.create("hearts", seats, {"target": 1})
    check(new["id"] == done + 1, "new match ids go on after the restart")
    p = d2.player("late")
    check(p["id"] == seats[-1]["id"] + 1, "new player ids go on after the restart")
    rc, _ = d2.stop()
    check(rc == 0, "the second daemon exits 0")


def plays_to_its_end(d, prefix, what):
    """A Snag match of two new players (names from `prefix`) played to its end on `d`."""
    seats = d.players(2, prefix=prefix)
    mid = d.create("snag", seats)["id"]
    play_match(d, mid, seats, rng)
    check(d.view(mid)["status"] == "finished", what)


def test_durability_and_threads_settings():
    # durability = crash and one HTTP thread: the daemon says so, and a match plays to its end.
    d = Daemon(env={"CARDPOST_DURABILITY": "crash", "CARDPOST_HTTP_THREADS": "1"}).start()
    try:
        st, _, stats = d.request("GET", "/v1/admin/stats", token=OPERATOR)
        check(st == 200 and stats["durability"] == "crash", "durability crash: %r" % (stats,))
        plays_to_its_end(d, "dc", "a match plays to its end")
    finally:
        d.stop()
    # Bad values stop the start with the setting's name.
    for key, value in (("DURABILITY", "fsync"), ("HTTP_THREADS", "-1"), ("HTTP_THREADS", "257"),
                       ("HTTP_THREADS", "2x")):
        p = subprocess.run([CARDPOSTD, "--db", os.path.join(d.tmp, "bad.db"), "--listen",
                            "127.0.0.1:0", "--operator-token", OPERATOR],
                           capture_output=True, text=True, timeout=20,
                           env=dict(os.environ, **{"CARDPOST_" + key: value}))
        check(p.returncode != 0 and "bad value for " + key.lower() in p.stderr,
              "%s=%s refused at start (exit %d: %s)" % (key, value, p.returncode,
                                                        p.stderr.strip()))


def http_threads(pid, want=None):
    """The names of process `pid`'s HTTP threads: libmicrohttpd's pool ("MHD-worker"), or
    its one thread ("MHD-single") when the pool would be one. With `want`, looks again for
    up to 5 s until they are that: libmicrohttpd names a thread from inside it, once it
    runs, which may be after the daemon answers (seen under ASan on 2 cores)."""
    for _ in range(50):
        names = thread_names(pid)
        if want is None or names == want:
            break
        time.sleep(0.1)
    return names


def thread_names(pid):
    names = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                names.append(f.read().strip())
        except FileNotFoundError:
            continue  # (ended meanwhile)
    return sorted(n for n in names if n.startswith("MHD-"))


def test_http_threads_follow_affinity():
    # http_threads = 0 (the default): one HTTP thread per processor the daemon may run on,
    # not per processor of the machine. Pinned to one (taskset -c 0), it serves with one
    # thread, not two taking turns on that core; on all of them, one per processor.
    mine = os.sched_getaffinity(0)
    one = min(mine)
    os.sched_setaffinity(0, {one})  # (inherited by the daemon started now)
    try:
        d = Daemon().start()
    finally:
        os.sched_setaffinity(0, mine)
    try:
        check(os.sched_getaffinity(d.proc.pid) == {one}, "the daemon runs on CPU %d only" % one)
        threads = http_threads(d.proc.pid, ["MHD-single"])
        check(threads == ["MHD-single"], "pinned to one processor: one HTTP thread (%r)" % threads)
        plays_to_its_end(d, "af", "a match plays to its end on the one thread")
    finally:
        d.stop()
    if len(mine) < 2:
        print("    (one processor here: the pool of several is not checked)")
        return
    d = Daemon().start()
    try:
        threads = http_threads(d.proc.pid, ["MHD-worker"] * len(mine))
        check(threads == ["MHD-worker"] * len(mine),
              "on %d processors: %d HTTP threads (%r)" % (len(mine), len(mine), threads))
    finally:
        d.stop()


run([test_sigterm_in_flight, test_sigterm_stream, test_sigterm_race, test_port_in_use,
     test_restart, test_durability_and_threads_settings, test_http_threads_follow_affinity])
