#!/usr/bin/env python3
"""HTTP clients for the `lookup serve` tests (ServeTests.swift), each on 127.0.0.1 only, each
bounded in time and count. Python's http.client for the well-behaved ones, raw sockets for the
hostile ones. Every command prints one JSON object per result line on stdout.

  get PORT PATH...                  GETs on one kept-alive connection: status, type, body, reused
  hammer PORT SECONDS PATH...       GETs in a loop on 2 kept-alive connections until SECONDS pass
                                    or a file named by --stop exists: counts by status and body
  slow PORT SECONDS                 a slowloris: a request line, then a header byte every 0.1 s;
                                    how long until the server closed the connection
  raw PORT HEX                      sends the bytes, prints the status line and the body
  stream PORT HEX [SECONDS]         sends the bytes, reads until the server closes the connection
                                    (at most SECONDS, 5): every status line, and whether it closed
  idle PORT N SECONDS               holds N connections open without a byte sent, then says how
                                    many the server closed meanwhile
  slow-post PORT PATH               POSTs the lines read from stdin until a line 'half', prints
                                    {"sent":"half"}, sends the rest when stdin ends: the answer
"""
import http.client
import json
import os
import socket
import sys
import threading
import time


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def get(port, paths):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    first_socket = None
    for path in paths:
        conn.request("GET", path)
        if first_socket is None:
            first_socket = conn.sock
        reused = conn.sock is first_socket
        r = conn.getresponse()
        body = r.read()
        out({"status": r.status, "type": r.getheader("Content-Type"), "body": body.decode("utf-8", "replace"),
             "reused": reused, "connection": r.getheader("Connection")})
    conn.close()


def hammer(port, seconds, paths, stop_file):
    deadline = time.time() + seconds
    lock = threading.Lock()
    statuses, bodies, errors = {}, {}, []
    count = [0]

    def worker(offset):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        i = offset
        while time.time() < deadline and not (stop_file and os.path.exists(stop_file)) and count[0] < 1_000_000:
            path = paths[i % len(paths)]
            i += 1
            try:
                conn.request("GET", path)
                r = conn.getresponse()
                body = r.read().decode("utf-8", "replace")
            except Exception as e:  # a dropped connection is a failure of the server
                with lock:
                    errors.append(repr(e))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                continue
            with lock:
                count[0] += 1
                statuses[r.status] = statuses.get(r.status, 0) + 1
                bodies[body] = bodies.get(body, 0) + 1
        conn.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out({"requests": count[0], "statuses": {str(k): v for k, v in statuses.items()}, "bodies": bodies, "errors": errors[:5],
         "error_count": len(errors)})


def slow(port, seconds):
    s = socket.create_connection(("127.0.0.1", port), timeout=seconds + 5)
    start = time.time()
    s.sendall(b"GET /v1/lookup/1 HTTP/1.1\r\nHost: x\r\n")
    s.settimeout(0.1)
    closed = None
    sent = 0
    while time.time() - start < seconds:
        try:
            data = s.recv(4096)
            if data == b"":
                closed = time.time() - start
                break
            # An answer (408, 400) before closing is fine: keep reading to the end.
            continue
        except socket.timeout:
            pass
        except OSError:
            closed = time.time() - start
            break
        try:
            s.send(b"X")
            sent += 1
        except OSError:
            closed = time.time() - start
            break
    s.close()
    out({"closed_after": closed, "bytes_sent": sent})


def raw(port, hexbytes):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(bytes.fromhex(hexbytes))
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            head, sep, rest = data.partition(b"\r\n\r\n")
            if sep:
                length = None
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                if length is not None and len(rest) >= length:
                    break
    except (socket.timeout, OSError):
        pass
    s.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n")[0].decode("latin-1") if head else ""
    out({"status_line": status_line, "body": rest.decode("utf-8", "replace")})


def stream(port, hexbytes, seconds):
    s = socket.create_connection(("127.0.0.1", port), timeout=seconds)
    s.sendall(bytes.fromhex(hexbytes))
    data = b""
    closed = False
    deadline = time.time() + seconds
    try:
        while time.time() < deadline:
            s.settimeout(max(0.01, deadline - time.time()))
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            data += chunk
    except socket.timeout:
        pass
    except OSError:
        closed = True
    s.close()
    lines = [line.decode("latin-1") for line in data.split(b"\r\n") if line.startswith(b"HTTP/1.")]
    out({"status_lines": lines, "closed": closed, "text": data.decode("utf-8", "replace")})


def idle(port, n, seconds):
    sockets = []
    for _ in range(n):
        sockets.append(socket.create_connection(("127.0.0.1", port), timeout=5))
    out({"opened": len(sockets)})
    time.sleep(seconds)
    closed = 0
    for s in sockets:
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    out({"closed_by_server": closed})


def slow_post(port, path):
    first, rest = [], []
    target = first
    for line in sys.stdin:
        if line.strip() == "half":
            target = rest
            break
        target.append(line)
    body_first = "".join(first).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    # The whole length is known only at the end: chunked.
    s.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    s.sendall(b"%x\r\n" % len(body_first) + body_first + b"\r\n")
    out({"sent": "half"})
    for line in sys.stdin:
        rest.append(line)
    body_rest = "".join(rest).encode()
    if body_rest:
        s.sendall(b"%x\r\n" % len(body_rest) + body_rest + b"\r\n")
    s.sendall(b"0\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
        if data.endswith(b"\r\n0\r\n\r\n"):
            break
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    # De-chunk.
    text = b""
    while body:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        text += body[:size]
        body = body[size + 2:]
    out({"status_line": head.split(b"\r\n")[0].decode("latin-1"), "headers": head.decode("latin-1"),
         "lines": text.decode("utf-8").splitlines()})


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "get":
        get(int(args[0]), args[1:])
    elif cmd == "hammer":
        stop = None
        if "--stop" in args:
            i = args.index("--stop")
            stop = args[i + 1]
            args = args[:i] + args[i + 2:]
        hammer(int(args[0]), float(args[1]), args[2:], stop)
    elif cmd == "slow":
        slow(int(args[0]), float(args[1]))
    elif cmd == "raw":
        raw(int(args[0]), args[1])
    elif cmd == "stream":
        stream(int(args[0]), args[1], float(args[2]) if len(args) > 2 else 5.0)
    elif cmd == "idle":
        idle(int(args[0]), int(args[1]), float(args[2]))
    elif cmd == "slow-post":
        slow_post(int(args[0]), args[1])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
