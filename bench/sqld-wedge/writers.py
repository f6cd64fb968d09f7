#!/usr/bin/env python3
"""Eight concurrent writers against a libSQL server (`sqld`), nothing of Receta in between.

docs/scale-out.md, "A fault of sqld 0.24": with eight clients each writing one ~20 KB row per
Hrana pipeline (`POST /v3/pipeline`, a new stream closed in the same request), sqld 0.24.33 stops
answering every write now and then (reads keep working, its CPU idle), until it is restarted. Run
it against a fresh server to see whether a version has the fault:

    sqld --db-path /tmp/wedge --http-listen-addr 127.0.0.1:18080 &
    python3 bench/sqld-wedge/writers.py http://127.0.0.1:18080 [reads]

`reads` sends three reads in one pipeline before each write (a create's shape). Prints the writes
done in 6 s, the slowest, and how many took over a second (a write that got no answer in 20 s
counts as 99 s).
"""
import json
import sys
import threading
import time
import urllib.request

SECONDS = 6
WRITERS = int(__import__("os").environ.get("WRITERS", "8"))
READS = [
    ("SELECT v FROM t WHERE id = 1", []),
    ("SELECT count(*) FROM t", []),
    ("SELECT max(id) FROM t", []),
]
WRITE = ("INSERT INTO t (v, pad) VALUES (?, randomblob(20000))", [{"type": "text", "value": "x" * 100}])


def pipeline(url, statements):
    """One Hrana v3 pipeline: a batch (each step only if the one before succeeded), then close."""
    steps = []
    for i, (sql, args) in enumerate(statements):
        step = {"stmt": {"sql": sql, "args": args}}
        if i:
            step["condition"] = {"type": "ok", "step": i - 1}
        steps.append(step)
    body = {"baton": None, "requests": [{"type": "batch", "batch": {"steps": steps}}, {"type": "close"}]}
    request = urllib.request.Request(
        url + "/v3/pipeline", json.dumps(body).encode(), {"content-type": "application/json"}
    )
    started = time.time()
    with urllib.request.urlopen(request, timeout=20) as response:
        response.read()
    return time.time() - started


def main():
    url = sys.argv[1].rstrip("/")
    with_reads = len(sys.argv) > 2 and sys.argv[2] == "reads"
    pipeline(url, [("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT, pad BLOB)", [])])
    writes = []

    def writer():
        end = time.time() + SECONDS
        while time.time() < end:
            if with_reads:
                pipeline(url, READS)
            try:
                writes.append(pipeline(url, [WRITE]))
            except OSError:
                writes.append(99.0)

    threads = [threading.Thread(target=writer) for _ in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    slow = sum(1 for w in writes if w > 1)
    print(f"{len(writes)} writes in {SECONDS} s, slowest {max(writes):.3f} s, {slow} over 1 s")


if __name__ == "__main__":
    main()
