#!/usr/bin/python3
"""smtp_sink.py - a real SMTP server for the tests (Debian's python3-aiosmtpd).

Usage: smtp_sink.py DIR [PORT] [--auth USER:PASSWORD] [--starttls CERT KEY]
(PORT 0 or absent: any free port). Every message it accepts is written to DIR as NNNN.eml
(the exact bytes received, with the envelope in DIR/NNNN.json: mail_from, rcpt_tos, the
sender's port, and whether the session was encrypted and logged in). With --auth it requires that login
(AUTH PLAIN/LOGIN) before MAIL; with --starttls it requires STARTTLS with that certificate
first. It prints "smtp-sink: listening on 127.0.0.1:PORT" once ready and runs until SIGTERM.
"""
import json
import os
import signal
import socket
import ssl
import sys
import threading

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


class Sink:
    def __init__(self, directory, extended=False):
        self.directory = directory
        self.count = 0
        self.lock = threading.Lock()
        self.extended = extended

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.count += 1
            n = self.count
        base = os.path.join(self.directory, "%04d" % n)
        with open(base + ".eml.tmp", "wb") as f:
            f.write(envelope.original_content or envelope.content)
        record = {"mail_from": envelope.mail_from, "rcpt_tos": envelope.rcpt_tos,
                  "port": session.peer[1] if session.peer else None}
        if self.extended:
            record["tls"] = session.ssl is not None
            record["authenticated"] = bool(session.authenticated)
        with open(base + ".json", "w") as f:
            json.dump(record, f)
        os.rename(base + ".eml.tmp", base + ".eml")
        return "250 Message accepted"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Login:
    """Accepts exactly one user name and password."""

    def __init__(self, user, password):
        self.user, self.password = user.encode(), password.encode()

    def __call__(self, server, session, envelope, mechanism, auth_data):
        ok = (isinstance(auth_data, LoginPassword) and auth_data.login == self.user and
              auth_data.password == self.password)
        return AuthResult(success=ok, handled=False)


def main():
    args = sys.argv[1:]
    options = {}
    while "--auth" in args or "--starttls" in args:
        i = args.index("--auth") if "--auth" in args else args.index("--starttls")
        if args[i] == "--auth":
            options["auth"] = args[i + 1].split(":", 1)
            del args[i:i + 2]
        else:
            options["tls"] = (args[i + 1], args[i + 2])
            del args[i:i + 3]
    directory = args[0]
    port = int(args[1]) if len(args) > 1 and args[1] != "0" else free_port()
    os.makedirs(directory, exist_ok=True)
    kwargs = {}
    if "tls" in options:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*options["tls"])
        kwargs.update(tls_context=context, require_starttls=True)
    if "auth" in options:
        kwargs.update(authenticator=Login(*options["auth"]), auth_required=True,
                      auth_require_tls="tls" in options)
    controller = Controller(Sink(directory, extended=bool(options)), hostname="127.0.0.1",
                            port=port, **kwargs)
    controller.start()
    print("smtp-sink: listening on 127.0.0.1:%d" % port, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    controller.stop()


if __name__ == "__main__":
    main()
