# test_proxy.py - end to end through the reverse proxy example (ops/nginx/): Debian's nginx,
# started by this test on a loopback port with a throwaway configuration in a temp dir (its
# pid, logs and temp paths there) that includes ops/nginx/cardpost-locations.conf as it is,
# TLS with a self-signed certificate made by the openssl command. Through it, over HTTPS:
# the API works (a player, a match, a move), and an event stream delivers a move's event
# within a fraction of a second (not held in a buffer). The whole example, cardpost.conf,
# passes `nginx -t` with its paths pointed at the temp dir. On PostgreSQL (the _pg twin):
# two cardpostd over one database behind nginx with ops/nginx/cardpost-upstream.conf, the
# requests spread over both, a match's stream and moves on one, and a process's death
# leaving the other to answer.
import http.client
import json
import re
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import TEMP_DIRS, Daemon, check, free_port, run, wait_for  # noqa: E402

ROOT = os.environ.get("CARDPOST_SOURCE_ROOT",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXAMPLE = os.path.join(ROOT, "ops", "nginx")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
OPENSSL = shutil.which("openssl")


class Proxy:
    """nginx in the foreground over `tmp`, proxying 127.0.0.1:port (TLS) to `upstream` (a
    port; or a list of ports, put in ops/nginx/cardpost-upstream.conf in place of its own,
    and every answer saying which one served it in X-Cardpost-Upstream)."""

    def __init__(self, tmp, upstream):
        self.tmp = tmp
        self.port = free_port()
        subprocess.run([OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=localhost", "-addext",
                        "subjectAltName=DNS:localhost,IP:127.0.0.1",
                        "-keyout", os.path.join(tmp, "key.pem"),
                        "-out", os.path.join(tmp, "cert.pem")],
                       check=True, capture_output=True, timeout=60)
        paths = "\n".join("    %s_temp_path %s;" % (k, os.path.join(tmp, k))
                          for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        extra = ""
        if isinstance(upstream, list):
            text = open(os.path.join(EXAMPLE, "cardpost-upstream.conf")).read()
            for example, port in zip((8080, 8081), upstream):
                text = text.replace("127.0.0.1:%d " % example, "127.0.0.1:%d " % port)
            upstream_block = text
            extra = "        add_header X-Cardpost-Upstream $upstream_addr always;\n"
        else:
            upstream_block = "    upstream cardpost { server 127.0.0.1:%d; keepalive 4; }" % upstream
        self.conf = os.path.join(tmp, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write("""worker_processes 1;
pid %(t)s/nginx.pid;
error_log %(t)s/error.log info;
events { worker_connections 64; }
http {
    access_log %(t)s/access.log;
%(paths)s
%(upstream)s
    server {
        listen 127.0.0.1:%(port)d ssl;
        ssl_certificate %(t)s/cert.pem;
        ssl_certificate_key %(t)s/key.pem;
%(extra)s        include %(locations)s;
    }
}
""" % {"t": tmp, "paths": paths, "upstream": upstream_block, "extra": extra, "port": self.port,
       "locations": os.path.join(EXAMPLE, "cardpost-locations.conf")})
        self.ctx = ssl.create_default_context(cafile=os.path.join(tmp, "cert.pem"))
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([NGINX, "-p", self.tmp, "-e", os.path.join(self.tmp, "error.log"),
                                      "-c", self.conf, "-g", "daemon off;"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

        def up():
            check(self.proc.poll() is None, "nginx runs (%s)" % self.proc.stderr.read().decode()
                  if self.proc.poll() is not None else "")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                return False
        wait_for(up, "nginx listens on its port", timeout=20)
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def conn(self, timeout=10):
        return http.client.HTTPSConnection("localhost", self.port, context=self.ctx,
                                           timeout=timeout)

    def request(self, method, path, body=None, token=None):
        h = {"Content-Type": "application/json"} if body is not None else {}
        if token:
            h["Authorization"] = "Bearer " + token
        c = self.conn()
        try:
            c.request(method, path, body=json.dumps(body) if body is not None else None,
                      headers=h)
            r = c.getresponse()
            text = r.read().decode()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, \
                json.loads(text) if text else None
        finally:
            c.close()


def sse_message(resp):
    """The next message of an event stream (comments skipped): {"event", "id", "data"}."""
    msg, data = {}, []
    while True:
        line = resp.readline()
        check(line, "the stream goes on")
        line = line.decode().rstrip("\n")
        if line == "":
            if data or msg:
                msg["data"] = json.loads("\n".join(data)) if data else None
                return msg
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            else:
                msg[field] = value


def test_example_passes_nginx_t():
    tmp = tempfile.mkdtemp(prefix="cardpost-nginx-t-")
    TEMP_DIRS.append(tmp)
    p = Proxy(tmp, 8080)  # for its certificate
    text = open(os.path.join(EXAMPLE, "cardpost.conf")).read()
    text = text.replace("/etc/letsencrypt/live/cardpost.example.org/fullchain.pem",
                        os.path.join(tmp, "cert.pem"))
    text = text.replace("/etc/letsencrypt/live/cardpost.example.org/privkey.pem",
                        os.path.join(tmp, "key.pem"))
    text = text.replace("snippets/cardpost-locations.conf",
                        os.path.join(EXAMPLE, "cardpost-locations.conf"))
    text = text.replace("/var/log/nginx/", tmp + "/")
    site = os.path.join(tmp, "site.conf")
    with open(site, "w") as f:
        f.write(text)
    conf = os.path.join(tmp, "full.conf")
    with open(conf, "w") as f:
        f.write("pid %s/nginx.pid;\nevents {}\nhttp {\n    access_log off;\n    include %s;\n}\n"
                % (tmp, site))
    r = subprocess.run([NGINX, "-t", "-p", tmp, "-e", os.path.join(tmp, "error.log"), "-c", conf],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "nginx -t accepts ops/nginx/cardpost.conf (%s)" % r.stderr)
    # The upstream of several processes (cardpost-upstream.conf) with the same locations.
    with open(conf, "w") as f:
        f.write("pid %s/nginx.pid;\nevents {}\nhttp {\n    access_log off;\n    include %s;\n"
                "    server { listen 127.0.0.1:%d; include %s; }\n}\n"
                % (tmp, os.path.join(EXAMPLE, "cardpost-upstream.conf"), free_port(),
                   os.path.join(EXAMPLE, "cardpost-locations.conf")))
    r = subprocess.run([NGINX, "-t", "-p", tmp, "-e", os.path.join(tmp, "error.log"), "-c", conf],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "nginx -t accepts ops/nginx/cardpost-upstream.conf (%s)" % r.stderr)


def test_api_and_events_through_nginx():
    # (nginx, on 127.0.0.1, is a trusted proxy: its X-Forwarded-For and X-Request-Id count.)
    d = Daemon(env={"CARDPOST_TRUSTED_PROXIES": "127.0.0.1"}).start()
    tmp = tempfile.mkdtemp(prefix="cardpost-nginx-")
    TEMP_DIRS.append(tmp)
    os.chmod(tmp, 0o755)  # nginx's workers may run as another user
    proxy = Proxy(tmp, d.port).start()
    try:
        st, h, body = proxy.request("GET", "/healthz")
        check(st == 200 and body == {"status": "ok"}, "GET /healthz over HTTPS through nginx")
        check(re.fullmatch(r"[0-9a-f]{32}", h.get("x-request-id", "")) is not None,
              "the answer carries nginx's $request_id (32 hex digits; cardpostd's own are 16): %r"
              % h.get("x-request-id"))
        seats = []
        for name in ("ann", "bob"):
            st, _, p = proxy.request("POST", "/v1/players", {
                "name": name, "preferences": {"seat_without_asking": True}})
            check(st == 201 and p["token"], "POST /v1/players over HTTPS -> 201 (%d %r)" % (st, p))
            seats.append(p)
        st, _, v = proxy.request("POST", "/v1/matches", {"game": "snag", "players": [
            p["id"] for p in seats], "options": {"target": 1}}, token=seats[0]["token"])
        check(st == 201, "POST /v1/matches through nginx -> 201 (%d %r)" % (st, v))
        mid = v["id"]

        # The stream, through nginx: its first state, then a move made directly on cardpostd.
        c = proxy.conn(timeout=10)
        c.request("GET", "/v1/matches/%d/events" % mid,
                  headers={"Accept": "text/event-stream",
                           "Authorization": "Bearer " + seats[1]["token"]})
        resp = c.getresponse()
        check(resp.status == 200 and resp.getheader("Content-Type", "").startswith(
            "text/event-stream"), "the event stream through nginx -> 200 text/event-stream")
        while sse_message(resp).get("event") != "state":
            pass
        delays = []
        for i in range(4):
            views = [d.view(mid, p["token"]) for p in seats]
            if views[0]["status"] != "active":
                break
            s = next(s for s, sv in enumerate(views) if sv["legal"])
            t0 = time.monotonic()
            st, _, body = d.move(mid, seats[s]["token"], views[s]["legal"][0])
            check(st == 201, "a move -> 201")
            m = sse_message(resp)  # the move's own event, first of what it sends
            delays.append(time.monotonic() - t0)
            check(m.get("event") == "event" and m["data"]["move"].split()[0] ==
                  views[s]["legal"][0].split()[0], "the move's event came (%r)" % m)
            while m.get("event") != "state":  # then the state
                m = sse_message(resp)
        c.close()
        check(delays, "moves were made")
        print("  event through nginx after %s ms" % ", ".join("%.0f" % (x * 1000) for x in delays))
        check(max(delays) < 1.0, "every event comes through within 1 s (%r)" % delays)
        # Through nginx the move path works too: whichever seat is to move moves (the match,
        # a hand of some 25 moves, is still on after 4).
        views = [d.view(mid, p["token"]) for p in seats]
        check(views[0]["status"] == "active", "the match is still on for a move through nginx")
        s = next(s for s, sv in enumerate(views) if sv["legal"])
        st, _, body = proxy.request("POST", "/v1/matches/%d/moves" % mid,
                                    {"move": views[s]["legal"][0]}, token=seats[s]["token"])
        check(st == 201 and body["seq"] > views[s]["seq"],
              "a move through nginx -> 201, seq on (%d %r)" % (st, body))
        check(d.view(mid)["seq"] == body["seq"], "cardpostd has the move made through nginx")
    finally:
        proxy.stop()
    d.stop()


def test_two_processes_behind_nginx():
    if not os.environ.get("CARDPOST_TEST_PG"):
        print("  (on PostgreSQL only: two processes share a database server, not a file)")
        return
    env = {"CARDPOST_TRUSTED_PROXIES": "127.0.0.1"}
    ds = [Daemon(env=env).start() for _ in range(2)]  # both on CARDPOST_TEST_PG
    ports = ["127.0.0.1:%d" % d.port for d in ds]
    tmp = tempfile.mkdtemp(prefix="cardpost-nginx2-")
    TEMP_DIRS.append(tmp)
    os.chmod(tmp, 0o755)
    proxy = Proxy(tmp, [d.port for d in ds]).start()
    try:
        served = set()
        for _ in range(30):
            st, h, body = proxy.request("GET", "/healthz")
            check(st == 200, "GET /healthz through nginx -> 200")
            served.add(h.get("x-cardpost-upstream"))
        check(served == set(ports), "nginx spreads requests over both processes (%r)" % served)
        seats = []
        for name in ("cy", "dee"):
            st, _, p = proxy.request("POST", "/v1/players", {
                "name": name, "preferences": {"seat_without_asking": True}})
            check(st == 201, "POST /v1/players through nginx -> 201 (%d %r)" % (st, p))
            seats.append(p)
        st, _, v = proxy.request("POST", "/v1/matches", {"game": "snag", "players": [
            p["id"] for p in seats]}, token=seats[0]["token"])
        check(st == 201, "POST /v1/matches through nginx -> 201 (%d %r)" % (st, v))
        mid = v["id"]
        # The stream and the moves of the match, through nginx, on one process (the match's
        # hash); every other move sent straight to the other process, whose commit reaches
        # the stream across processes (LISTEN/NOTIFY, docs/scaling.md).
        c = proxy.conn(timeout=10)
        c.request("GET", "/v1/matches/%d/events" % mid,
                  headers={"Accept": "text/event-stream",
                           "Authorization": "Bearer " + seats[1]["token"]})
        resp = c.getresponse()
        check(resp.status == 200, "the event stream through nginx -> 200")
        stream_on = resp.getheader("X-Cardpost-Upstream")
        check(stream_on in ports, "the stream is served by one of them (%r)" % stream_on)
        while sse_message(resp).get("event") != "state":
            pass
        for i in range(4):
            views = [proxy.request("GET", "/v1/matches/%d" % mid, token=p["token"]) for p in seats]
            check(all(st == 200 and h.get("x-cardpost-upstream") == stream_on
                      for st, h, _ in views), "the match's views come from the stream's process")
            if views[0][2]["status"] != "active":
                break
            s = next(s for s, (_, _, sv) in enumerate(views) if sv["legal"])
            mv = views[s][2]["legal"][0]
            t0 = time.monotonic()
            if i % 2:
                other = next(d for d in ds if "127.0.0.1:%d" % d.port != stream_on)
                st, _, body = other.request("POST", "/v1/matches/%d/moves" % mid, {"move": mv},
                                            token=seats[s]["token"])
                check(st == 201, "a move on the other process -> 201 (%d %r)" % (st, body))
            else:
                st, h, body = proxy.request("POST", "/v1/matches/%d/moves" % mid,
                                            {"move": mv}, token=seats[s]["token"])
                check(st == 201 and h.get("x-cardpost-upstream") == stream_on,
                      "a move through nginx -> 201, on the stream's process (%d %r)" % (st, h))
            m = sse_message(resp)
            check(m.get("event") == "event" and m["data"]["move"].split()[0] == mv.split()[0],
                  "the move's event came through nginx (%r)" % m)
            check(time.monotonic() - t0 < 1.0, "within 1 s")
            while m.get("event") != "state":
                m = sse_message(resp)
        c.close()
        # The match's process dies (SIGKILL): nginx sends everything to the other, the
        # match's requests too ($upstream_addr lists a failed try first, then the one
        # that answered).
        next(d for d in ds if "127.0.0.1:%d" % d.port == stream_on).kill()
        alive = next(p for p in ports if p != stream_on)
        for path in ["/healthz"] * 10 + ["/v1/matches/%d" % mid]:
            st, h, _ = proxy.request("GET", path)
            check(st == 200 and h.get("x-cardpost-upstream", "").split(", ")[-1] == alive,
                  "with one process dead, the other answers GET %s (%d %r)" % (path, st, h))
    finally:
        proxy.stop()
    for d in ds:
        if d.proc.poll() is None:
            d.stop()


if __name__ == "__main__":
    missing = [n for n, p in (("nginx", os.path.exists(NGINX)), ("openssl", OPENSSL)) if not p]
    if missing:
        print("SKIP: %s missing (Debian packages nginx, openssl; ops/test installs them)"
              % " and ".join(missing))
        sys.exit(77)
    run([test_example_passes_nginx_t, test_api_and_events_through_nginx,
         test_two_processes_behind_nginx])
