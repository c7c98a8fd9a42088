#!/usr/bin/python3
"""webhook_receiver.py - a real HTTP receiver of webhooks for the tests.

Usage: webhook_receiver.py DIR [PORT] [--keep-alive] [--host ADDRESS]
Every POST is recorded as DIR/NNNN.json: {"path", "headers" (lower-case names), "body"
(text), "answered" (the status sent back), "port" (the sender's), "host" (the address it
was reached at)}. The status it answers is 204 unless told
otherwise: POST /_control with {"status": 503} sets it for the following requests (a path
of its own never recorded). A POST to /slow/SECONDS/... is recorded when it arrives (with
"at", the arrival time) and answered SECONDS later: a slow endpoint. It prints "webhook-receiver: listening on 127.0.0.1:PORT" once
ready (--host: on that loopback address instead) and runs until SIGTERM. It closes each connection after its answer (HTTP/1.0), unless
--keep-alive: then a client may send its next POST on the same connection (HTTP/1.1), as
most real receivers allow.

verify(secret, headers, body) checks a Standard Webhooks signature the way a receiver
would; the tests import it.
"""
import base64
import hashlib
import hmac
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def verify(secret, headers, body):
    """True when webhook-signature holds a v1 HMAC-SHA256 of id.timestamp.body."""
    key = base64.b64decode(secret[len("whsec_"):]) if secret.startswith("whsec_") else secret.encode()
    signed = "%s.%s.%s" % (headers["webhook-id"], headers["webhook-timestamp"], body)
    expected = base64.b64encode(hmac.new(key, signed.encode(), hashlib.sha256).digest()).decode()
    for sig in headers.get("webhook-signature", "").split():
        version, _, value = sig.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return True
    return False


class State:
    def __init__(self, directory):
        self.directory = directory
        self.status = 204
        self.count = 0
        self.lock = threading.Lock()


def handler_for(state, keep_alive=False):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8", "replace")
            if self.path == "/_control":
                with state.lock:
                    state.status = int(json.loads(body)["status"])
                self.send_response(204)
                self.end_headers()
                return
            with state.lock:
                state.count += 1
                n = state.count
                status = state.status
            record = {"path": self.path, "answered": status, "body": body, "at": time.time(),
                      "headers": {k.lower(): v for k, v in self.headers.items()},
                      "port": self.client_address[1],
                      "host": self.connection.getsockname()[0]}
            path = os.path.join(state.directory, "%04d.json" % n)
            with open(path + ".tmp", "w") as f:
                json.dump(record, f)
            os.rename(path + ".tmp", path)
            if self.path.startswith("/slow/"):
                time.sleep(float(self.path.split("/")[2]))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler


def main():
    args = [a for a in sys.argv[1:] if a != "--keep-alive"]
    host = "127.0.0.1"
    if "--host" in args:
        i = args.index("--host")
        host = args[i + 1]
        del args[i:i + 2]
    directory = args[0]
    port = int(args[1]) if len(args) > 1 else 0
    os.makedirs(directory, exist_ok=True)
    server = ThreadingHTTPServer((host, port),
                                 handler_for(State(directory), "--keep-alive" in sys.argv))
    print("webhook-receiver: listening on %s:%d" % (host, server.server_address[1]), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    server.serve_forever()


if __name__ == "__main__":
    main()
