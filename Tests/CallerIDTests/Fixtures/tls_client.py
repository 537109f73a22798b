#!/usr/bin/env python3
"""Asks `lookup serve --tls-cert` over HTTPS, a new TLS connection for each request, for SECONDS,
trusting the certificates of CAFILE, and prints one JSON object: requests answered 200, those
that failed (any error or other status), and the subjects (CN) of the certificates the server
presented, in the order first seen. Used by ServeTLSTests while the certificate is reloaded.

usage: tls_client.py PORT CAFILE SECONDS
"""
import http.client
import json
import ssl
import sys
import time


def main():
    port, cafile, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    context = ssl.create_default_context(cafile=cafile)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    ok, failed, subjects, errors = 0, 0, [], []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
        try:
            connection.request("GET", "/v1/lookup/79131234567")
            answer = connection.getresponse()
            answer.read()
            subject = dict(x[0] for x in connection.sock.getpeercert()["subject"]).get("commonName")
            if subject not in subjects:
                subjects.append(subject)
            if answer.status == 200:
                ok += 1
            else:
                failed += 1
                errors.append("status %d" % answer.status)
        except (OSError, http.client.HTTPException, ssl.SSLError) as e:
            failed += 1
            errors.append(repr(e))
        finally:
            connection.close()
    print(json.dumps({"ok": ok, "failed": failed, "subjects": subjects, "errors": errors[:5]}))


if __name__ == "__main__":
    main()
