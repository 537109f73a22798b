#!/usr/bin/env python3
"""Sends reports to `lookup serve` (POST /v1/reports) over one kept-alive connection until the
batches run out or the server goes away, and prints the first number of every batch the
server answered 200, one per line. Used by ServeReportTests to kill the server under load.

usage: report_client.py PORT FIRST_NUMBER BATCHES SIZE [KEY]
"""
import http.client
import json
import sys


def main():
    port, first, batches, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    key = sys.argv[5] if len(sys.argv) > 5 else None
    headers = {"Content-Type": "application/x-ndjson"}
    if key:
        headers["Authorization"] = "Bearer " + key
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for b in range(batches):
        start = first + b * size
        body = "".join(json.dumps({"number": "+%d" % (start + i), "category": "spam", "client": "device-%d" % (i % 7)}) + "\n"
                       for i in range(size))
        try:
            connection.request("POST", "/v1/reports", body=body.encode(), headers=headers)
            answer = connection.getresponse()
            text = answer.read()
        except (OSError, http.client.HTTPException):
            return
        if answer.status == 200 and json.loads(text)["accepted"] == size:
            print(start, flush=True)


if __name__ == "__main__":
    main()
