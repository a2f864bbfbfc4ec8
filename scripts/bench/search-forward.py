#!/usr/bin/env python3
"""What forwarding a search costs: the same queries through an indexing node and through a
node without an index that forwards them to it (`search.forward_to`).

Starts two `arca serve` (ARCA_BIN, default target/release/arca), each with its own data
directory and SQLite catalog: A indexes, B has `ARCA_SEARCH_ENABLED=false` and
`ARCA_SEARCH_FORWARD_TO=<A>`. Loads --records records (a Dublin Core title and abstract
each) into A, waits until A has indexed them, then sends --queries searches to A and the
same to B, in rounds of 20 alternating A and B, each over one kept-alive connection per
client, as the quick-start admin and as an anonymous caller (whose hits WebAC filters).
Prints one JSON object: latency percentiles (ms), queries per second and each process's
CPU time per query, per node asked and caller. Both nodes run on this machine, so B's figures include B's CPU besides A's.

    ARCA_BIN=target/debug/arca python3 scripts/bench/search-forward.py --records 1000 --queries 200
"""

import argparse
import base64
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

AUTH = "Basic " + base64.b64encode(b"fedoraAdmin:fedoraAdmin").decode()
WORDS = ["deep", "sea", "fish", "animal", "minds", "graphs", "spectral", "learning"]
QUERIES = [
    "q=TITLE%3Afish&limit=10",
    "q=ABSTRACT%3A%22deep+sea%22&limit=10",
    "q=animal+OR+graphs&limit=100&offset=20",
    "condition=fedora_id%3Dbench%2Fr1*&fields=fedora_id,TITLE&limit=50",
    "q=TITLE%3Asp*&limit=10",
]


def cpu_seconds(pid):
    """User + system CPU time of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(arca, data, port, extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCA_")}
    env.update(ARCA_DATA=data, ARCA_LISTEN=f"127.0.0.1:{port}", ARCA_LOG="warn", **extra)
    log = open(os.path.join(os.path.dirname(data), f"{port}.log"), "w")
    p = subprocess.Popen([arca, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/health/ready")
            if c.getresponse().status == 200:
                return p
        except OSError:
            pass
        time.sleep(0.2)
    p.kill()
    sys.exit(f"arca on port {port} did not come up; see its log")


def request(conn, method, path, body=None, headers=None, auth=True):
    h = dict(headers or {})
    if auth:
        h["authorization"] = AUTH
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    data = r.read()
    return r.status, data


def load(port, records):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    ttl = "@prefix dcterms: <http://purl.org/dc/terms/> .\n"
    status, _ = request(conn, "PUT", "/rest/bench", ttl + '<> dcterms:title "bench" .',
                        {"content-type": "text/turtle"})
    assert status == 201, status
    for i in range(records):
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 3 + 1) % len(WORDS)]
        body = ttl + f'<> dcterms:title "{a} {b} {i}" ; dcterms:abstract "{b} {a} record {i}" .'
        status, text = request(conn, "PUT", f"/rest/bench/r{i}", body,
                               {"content-type": "text/turtle"})
        assert status == 201, (status, text)
    deadline = time.time() + 600
    while time.time() < deadline:
        status, text = request(conn, "GET", "/rest/fcr:search/status")
        v = json.loads(text)
        if v.get("lag") == 0 and v["documents"] >= records:
            return v["documents"]
        time.sleep(0.2)
    sys.exit("the index did not catch up")


def run(port, count, clients, auth):
    """`count` queries over `clients` connections; the latencies (s) and the wall time."""
    latencies, lock = [], threading.Lock()
    per_client = count // clients

    def client(k):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        mine = []
        for i in range(per_client):
            q = QUERIES[(k + i) % len(QUERIES)]
            t = time.perf_counter()
            status, body = request(conn, "GET", f"/rest/fcr:search?{q}", auth=auth)
            mine.append(time.perf_counter() - t)
            assert status == 200, (status, body[:200])
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, time.perf_counter() - start


def summary(latencies, wall, cpu):
    s = sorted(latencies)
    pick = lambda p: round(1000 * s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))], 2)
    return {
        "queries": len(s),
        "p50_ms": pick(50),
        "p95_ms": pick(95),
        "max_ms": round(1000 * s[-1], 2),
        "mean_ms": round(1000 * sum(s) / len(s), 2),
        "queries_per_s": round(len(s) / wall, 1),
        "cpu_ms_per_query": {k: round(1000 * v / len(s), 2) for k, v in cpu.items()},
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--dir", default=None, help="where the data goes (a fresh temp dir)")
    args = ap.parse_args()
    arca = os.environ.get("ARCA_BIN", "target/release/arca")
    work = args.dir or tempfile.mkdtemp(prefix="search-forward-")
    os.makedirs(work, exist_ok=True)
    pa, pb = free_port(), free_port()
    a = start(arca, os.path.join(work, "a"), pa, {})
    b = start(arca, os.path.join(work, "b"), pb, {
        "ARCA_SEARCH_ENABLED": "false",
        "ARCA_SEARCH_FORWARD_TO": f"http://127.0.0.1:{pa}/rest",
    })
    try:
        documents = load(pa, args.records)
        # Warm-up: both nodes' connections and caches.
        for port in (pa, pb):
            run(port, 20, 1, True)
        result = {"records": args.records, "documents": documents, "clients": args.clients}
        for caller, auth in (("admin", True), ("anonymous", False)):
            lat = {"A": [], "B": []}
            wall = {"A": 0.0, "B": 0.0}
            cpu = {n: {"A": 0.0, "B": 0.0} for n in ("A", "B")}
            rounds = max(1, args.queries // 20)
            for _ in range(rounds):
                for name, port in (("A", pa), ("B", pb)):
                    before = {"A": cpu_seconds(a.pid), "B": cpu_seconds(b.pid)}
                    l, w = run(port, args.queries // rounds, args.clients, auth)
                    for n, p in (("A", a), ("B", b)):
                        cpu[name][n] += cpu_seconds(p.pid) - before[n]
                    lat[name].extend(l)
                    wall[name] += w
            result[caller] = {
                "A (indexes)": summary(lat["A"], wall["A"], cpu["A"]),
                "B (forwards to A)": summary(lat["B"], wall["B"], cpu["B"]),
            }
        print(json.dumps(result, indent=2))
    finally:
        for p in (a, b):
            p.terminate()
            p.wait()
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
