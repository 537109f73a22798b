#!/usr/bin/env python3
"""A static file server on 127.0.0.1 for the fetch tests, with faults chosen per request.

usage: fault_server.py ROOT PORT_FILE

Binds an ephemeral port, writes it to PORT_FILE, serves ROOT until killed. The first path
segment of every URL names the faults, the rest is the file under ROOT:

    /-/b1/manifest.json                     no fault
    /norange,die=all.cid:300/b1/all.cid     Range ignored; all.cid's body cut after 300 bytes

Faults (comma-separated):
    norange          ignore Range headers (answer 200 with the whole file)
    die=NAME:N       announce the full Content-Length, send N bytes of NAME, close (server dies)
    short=NAME:N     serve only the first N bytes of NAME, with Content-Length N (truncated file)
Each request is logged to stderr as 'GET PATH RANGE' so tests can count downloads
(the log is written to ROOT/requests.log too, one line per request).
"""
import http.server
import os
import signal
import socket
import sys
import threading
import time
import urllib.parse

ROOT = os.path.abspath(sys.argv[1])
PORT_FILE = sys.argv[2]
LOG_LOCK = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = urllib.parse.unquote(self.path.split("?", 1)[0])
        parts = path.lstrip("/").split("/", 1)
        if len(parts) != 2:
            return self.send_error(404)
        opts, rest = parts
        faults = {}
        for o in opts.split(","):
            if o in ("", "-"):
                continue
            key, _, value = o.partition("=")
            name, _, n = value.partition(":")
            faults.setdefault(key, {})[name] = int(n) if n else 0
        rng = self.headers.get("Range")
        with LOG_LOCK:
            with open(os.path.join(ROOT, "requests.log"), "a") as log:
                log.write("GET %s %s\n" % (rest, rng or "-"))
        file = os.path.normpath(os.path.join(ROOT, rest))
        if not file.startswith(ROOT + os.sep) or not os.path.isfile(file):
            return self.send_error(404)
        with open(file, "rb") as f:
            data = f.read()
        name = os.path.basename(file)
        if name in faults.get("short", {}):
            data = data[: faults["short"][name]]
        start = 0
        if rng and "norange" not in faults and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "none" if "norange" in faults else "bytes")
        self.end_headers()
        if name in faults.get("die", {}):
            cut = max(0, faults["die"][name] - start)
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)


# The test runner may start us with SIGTERM blocked; never outlive it, nor 5 minutes.
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGINT])
PARENT = os.getppid()


def watchdog():
    deadline = time.time() + 300
    while time.time() < deadline and os.getppid() == PARENT:
        time.sleep(0.5)
    os._exit(0)


threading.Thread(target=watchdog, daemon=True).start()
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
