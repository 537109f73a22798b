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
    drip=NAME:N      send NAME at N bytes per second (honest headers); 0: the headers, then nothing
    status=NAME:N    answer NAME with HTTP status N and a body that never ends
    endless=NAME:N   answer 200 with no Content-Length: N bytes of NAME (all of it when N is 0),
                     then zero bytes until the client hangs up
    lie=NAME:N       announce N bytes more than the file holds in Content-Length, send the
                     file's bytes inverted and N more (another, longer file than the signed one)
    garbage=NAME:N   announce the file's length, send N inverted bytes of it, close
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
        if name in faults.get("status", {}):
            return self.endless_error(faults["status"][name])
        if name in faults.get("short", {}):
            data = data[: faults["short"][name]]
        if self.dishonest(name, faults, data):
            return
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
        if self.hostile(name, faults, body):
            return
        if name in faults.get("die", {}):
            cut = max(0, faults["die"][name] - start)
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)

    def endless_error(self, code):
        self.send_response(code)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.forever(b"<p>error</p>\n" * 64)

    def pieces(self, data):
        """Writes `data` in 512-byte pieces a few milliseconds apart, so that the client
        receives (and writes) some of it before it sees the rest."""
        try:
            for i in range(0, len(data), 512):
                self.wfile.write(data[i : i + 512])
                self.wfile.flush()
                time.sleep(0.005)
        except OSError:
            pass

    def forever(self, chunk):
        """Writes `chunk` until the client hangs up (or 5 minutes pass)."""
        deadline = time.time() + 300
        try:
            while time.time() < deadline:
                self.wfile.write(chunk)
        except OSError:
            pass

    def hostile(self, name, faults, body):
        """The faults that replace the whole response; False when none applies to `name`."""
        if name in faults.get("drip", {}):
            rate = faults["drip"][name]
            if rate == 0:
                time.sleep(300)
                return True
            try:
                for i in range(len(body)):
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
                    time.sleep(1.0 / rate)
            except OSError:
                pass
            return True
        inverted = bytes(b ^ 0xFF for b in body)
        if name in faults.get("garbage", {}):
            self.pieces(inverted[: faults["garbage"][name]])
            self.connection.shutdown(socket.SHUT_RDWR)
            return True
        return False

    def dishonest(self, name, faults, data):
        """The faults whose headers lie or are missing (Range ignored); False when none applies."""
        if name in faults.get("endless", {}):
            n = faults["endless"][name] or len(data)
            self.send_response(200)
            self.end_headers()
            try:
                self.wfile.write(data[:n])
            except OSError:
                return True
            self.forever(bytes(65536))
            return True
        if name in faults.get("lie", {}):
            extra = faults["lie"][name]
            self.send_response(200)
            self.send_header("Content-Length", str(len(data) + extra))
            self.end_headers()
            self.pieces(bytes(b ^ 0xFF for b in data) + bytes(extra))
            return True
        return False


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
