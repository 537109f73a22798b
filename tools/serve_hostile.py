#!/usr/bin/env python3
"""Hostile clients against `lookup serve` on 127.0.0.1, for tools/bench_serve.sh: for SECONDS,
keeps IDLE connections open without sending a byte (opening new ones as the server closes them),
keeps SLOW slowloris connections trickling a header byte a second, and in a loop sends
headers over the limit, bodies over the limit (declared and chunked), malformed request lines
and malformed percent-encodings. Only 127.0.0.1; every loop bounded in time and count.
Prints what it sent and what came back as one JSON object.

  python3 tools/serve_hostile.py PORT [--seconds 30] [--idle 10000] [--slow 500]
"""
import argparse
import json
import resource
import selectors
import socket
import threading
import time

HOST = "127.0.0.1"


def connect(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect((HOST, port))
    except BlockingIOError:
        pass
    return s


def holders(port, idle, slow, seconds, report):
    """Idle and slowloris connections, reopened as the server closes them."""
    sel = selectors.DefaultSelector()
    opened = {"idle": 0, "slow": 0}
    closed = {"idle": 0, "slow": 0}
    live = {"idle": 0, "slow": 0}

    def open_one(kind):
        try:
            s = connect(port)
        except OSError:
            return False
        sel.register(s, selectors.EVENT_READ, {"kind": kind, "sent": 0})
        opened[kind] += 1
        live[kind] += 1
        return True

    deadline = time.time() + seconds
    # Open in batches so the listen queue is not flooded all at once.
    while (live["idle"] < idle or live["slow"] < slow) and time.time() < deadline:
        for _ in range(200):
            if live["idle"] < idle:
                open_one("idle")
            elif live["slow"] < slow:
                open_one("slow")
        time.sleep(0.01)
    report["idle_open_after_ramp"] = live["idle"]
    last_trickle = 0.0
    while time.time() < deadline:
        for key, _ in sel.select(timeout=0.2):
            s, data = key.fileobj, key.data
            try:
                got = s.recv(4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                got = b""
            if got == b"":
                sel.unregister(s)
                s.close()
                closed[data["kind"]] += 1
                live[data["kind"]] -= 1
                if time.time() < deadline - 1:
                    open_one(data["kind"])
        now = time.time()
        if now - last_trickle >= 1.0:
            last_trickle = now
            for key in list(sel.get_map().values()):
                if key.data["kind"] != "slow":
                    continue
                s = key.fileobj
                try:
                    if key.data["sent"] == 0:
                        s.send(b"GET /v1/lookup/79131234567 HTTP/1.1\r\nHost: x\r\n")
                    else:
                        s.send(b"X")
                    key.data["sent"] += 1
                except OSError:
                    pass
    for key in list(sel.get_map().values()):
        key.fileobj.close()
    report["idle"] = {"wanted": idle, "opened": opened["idle"], "closed_by_server": closed["idle"]}
    report["slowloris"] = {"wanted": slow, "opened": opened["slow"], "closed_by_server": closed["slow"]}


def exchange(port, payload, read_limit=1 << 16):
    s = socket.create_connection((HOST, port), timeout=2)
    status = "none"
    try:
        s.sendall(payload)
        data = s.recv(read_limit)
        if data.startswith(b"HTTP/"):
            status = data.split(b" ")[1].decode()
    except OSError as e:
        status = type(e).__name__
    finally:
        s.close()
    return status


def chunked_over_limit(port, megabytes):
    s = socket.create_connection((HOST, port), timeout=5)
    status = "none"
    try:
        s.sendall(b"POST /v1/lookup HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        piece = b"79131234567\n" * 5000
        chunk = b"%x\r\n" % len(piece) + piece + b"\r\n"
        sent = 0
        while sent < megabytes << 20:
            s.sendall(chunk)
            sent += len(piece)
        s.sendall(b"0\r\n\r\n")
        data = s.recv(4096)
        status = data.split(b" ")[1].decode() if data.startswith(b"HTTP/") else "closed"
    except OSError:
        status = "cut"
    finally:
        s.close()
    return status


def abusers(port, seconds, report):
    """Oversized headers and bodies, malformed request lines and escapes, in a loop."""
    cases = {
        "header_64k": b"GET /v1/lookup/79131234567 HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n",
        "many_headers": b"GET /v1/lookup/79131234567 HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 2000 + b"\r\n",
        "body_declared_1g": b"POST /v1/lookup HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n79131234567\n",
        "request_line_garbage": b"\x00\x01\x02 GARBAGE\r\n\r\n",
        "request_line_no_version": b"GET /v1/lookup/79131234567\r\n\r\n",
        "request_line_bad_version": b"GET /v1/lookup/79131234567 HTTP/7.0\r\nHost: x\r\n\r\n",
        "request_line_nul": b"GET /v1/lookup/1\x00234 HTTP/1.1\r\nHost: x\r\n\r\n",
        "percent_bad": b"GET /v1/lookup/%zz%4%%%G1 HTTP/1.1\r\nHost: x\r\n\r\n",
        "percent_nul": b"GET /v1/lookup/7913%00123 HTTP/1.1\r\nHost: x\r\n\r\n",
        "percent_overlong_utf8": b"GET /v1/lookup/%C0%AF%E0%80%AF HTTP/1.1\r\nHost: x\r\n\r\n",
        "path_climb": b"GET /v1/lookup/../../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
        "method_unknown": b"BREW /v1/lookup/1 HTTP/1.1\r\nHost: x\r\n\r\n",
    }
    results = {name: {} for name in cases}
    results["body_chunked_over_limit"] = {}
    deadline = time.time() + seconds
    rounds = 0
    while time.time() < deadline and rounds < 100000:
        rounds += 1
        for name, payload in cases.items():
            status = exchange(port, payload)
            results[name][status] = results[name].get(status, 0) + 1
        if rounds % 10 == 1:
            status = chunked_over_limit(port, 80)
            results["body_chunked_over_limit"][status] = results["body_chunked_over_limit"].get(status, 0) + 1
        time.sleep(0.01)
    report["abuse_rounds"] = rounds
    report["abuse"] = results


def main():
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--idle", type=int, default=10000)
    p.add_argument("--slow", type=int, default=500)
    a = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, a.idle + a.slow + 256)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    report = {"seconds": a.seconds}
    t1 = threading.Thread(target=holders, args=(a.port, a.idle, a.slow, a.seconds, report))
    t2 = threading.Thread(target=abusers, args=(a.port, a.seconds, report))
    t1.start()
    t2.start()
    t1.join()
    t2.join()
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
