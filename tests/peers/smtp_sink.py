#!/usr/bin/python3
"""smtp_sink.py - a real SMTP server for the tests (Debian's python3-aiosmtpd).

Usage: smtp_sink.py DIR [PORT]   (PORT 0 or absent: any free port)
Every message it accepts is written to DIR as NNNN.eml (the exact bytes received, with the
envelope in DIR/NNNN.json). It prints "smtp-sink: listening on 127.0.0.1:PORT" once ready
and runs until SIGTERM.
"""
import json
import os
import signal
import socket
import sys
import threading

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, directory):
        self.directory = directory
        self.count = 0
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.count += 1
            n = self.count
        base = os.path.join(self.directory, "%04d" % n)
        with open(base + ".eml.tmp", "wb") as f:
            f.write(envelope.original_content or envelope.content)
        with open(base + ".json", "w") as f:
            json.dump({"mail_from": envelope.mail_from, "rcpt_tos": envelope.rcpt_tos}, f)
        os.rename(base + ".eml.tmp", base + ".eml")
        return "250 Message accepted"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    directory = sys.argv[1]
    port = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] != "0" else free_port()
    os.makedirs(directory, exist_ok=True)
    controller = Controller(Sink(directory), hostname="127.0.0.1", port=port)
    controller.start()
    print("smtp-sink: listening on 127.0.0.1:%d" % port, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    controller.stop()


if __name__ == "__main__":
    main()
