#!/usr/bin/env python3
"""Has a real SIP proxy, Kamailio, read From headers that carry caller names.

    kamailio_from.py KAMAILIO < names.json

stdin: a JSON array of names. For each, sends Kamailio (started here on a free UDP port of
127.0.0.1, stateless, one process) a SIP MESSAGE whose From header is built as a PBX builds it,
the name between the quotes of the display name: `From: "NAME" <sip:K@pbx.example>;tag=tK`.
Kamailio's script logs what its parser found: the display name ($fn), the URI ($fu) and the
tag ($ft). stdout: a JSON array of {"fn", "fu", "ft"}, one per name, in order ("<null>" where
Kamailio found none: a header it could not parse).
"""
import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    kamailio = sys.argv[1]
    names = json.load(sys.stdin)
    modules = sorted(glob.glob("/usr/lib/*/kamailio/modules")) or sorted(glob.glob("/usr/lib/kamailio/modules"))
    if not modules:
        sys.exit("no Kamailio modules directory")
    port = free_udp_port()
    work = tempfile.mkdtemp()
    config = os.path.join(work, "kamailio.cfg")
    with open(config, "w") as f:
        f.write(f"""#!KAMAILIO
debug=2
log_stderror=yes
children=1
listen=udp:127.0.0.1:{port}
mpath="{modules[0]}/"
loadmodule "sl.so"
loadmodule "pv.so"
loadmodule "xlog.so"
request_route {{
    xlog("L_ERR", "FROM $ci fn=[$fn] fu=[$fu] ft=[$ft]\\n");
    sl_send_reply("200", "OK");
    exit;
}}
""")
    log = open(os.path.join(work, "log"), "w+")
    # Its own process group, with no signal blocked (a test runner may block SIGTERM in its
    # children): it and the processes it forks are ended together below.
    proxy = subprocess.Popen([kamailio, "-f", config, "-DD", "-E", "-Y", work], stdout=log, stderr=log,
                             start_new_session=True, preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, []))
    try:
        client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        client.bind(("127.0.0.1", 0))
        client.settimeout(0.5)
        own = client.getsockname()[1]
        answered = set()
        deadline = time.time() + 20
        # Send until every message is answered (the proxy may still be starting).
        while len(answered) < len(names) and time.time() < deadline:
            for k, name in enumerate(names):
                if k in answered:
                    continue
                message = (f"MESSAGE sip:pbx@127.0.0.1 SIP/2.0\r\n"
                           f"Via: SIP/2.0/UDP 127.0.0.1:{own};branch=z9hG4bK{k}x{int(time.time() * 1000)}\r\n"
                           f"Max-Forwards: 70\r\n"
                           f"From: \"{name}\" <sip:{k}@pbx.example>;tag=t{k}\r\n"
                           f"To: <sip:pbx@127.0.0.1>\r\nCall-ID: call{k}\r\nCSeq: 1 MESSAGE\r\nContent-Length: 0\r\n\r\n")
                client.sendto(message.encode("utf-8"), ("127.0.0.1", port))
            try:
                while True:
                    reply = client.recv(65536).decode("utf-8", "replace")
                    m = re.search(r"\r\nCall-ID: call(\d+)\r\n", reply)
                    if m:
                        answered.add(int(m.group(1)))
            except socket.timeout:
                pass
        time.sleep(0.2)
    finally:
        os.killpg(proxy.pid, signal.SIGTERM)
        try:
            proxy.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proxy.pid, signal.SIGKILL)
            proxy.wait(5)
    log.seek(0)
    found = {}
    for line in log:
        m = re.search(r"FROM call(\d+) fn=\[(.*)\] fu=\[(.*)\] ft=\[(.*)\]$", line.rstrip("\n"))
        if m:
            found[int(m.group(1))] = {"fn": m.group(2), "fu": m.group(3), "ft": m.group(4)}
    json.dump([found.get(k) for k in range(len(names))], sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
