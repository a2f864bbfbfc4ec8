#!/usr/bin/env python3
"""Replica lag under sustained ingest.

Starts `arca serve` (ARCA_BIN, default target/release/arca) with one local replica
(`[[replica]] path`), runs `arca bench <scenario>` against it for --duration seconds and,
meanwhile, every --probe-every seconds writes a small probe binary and measures how long it
takes from the 201 until its object is in the replica (the root inventory there), and
samples the change-log lag (last change - the replica's recorded position, from the SQLite
catalog). After the ingest: how long until the replica holds everything. Prints one JSON
object.

    python3 scripts/bench/replica-lag.py --duration 60 --clients 16 --scenario ingest-small
"""

import argparse
import base64
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

AUTH = "Basic " + base64.b64encode(b"fedoraAdmin:fedoraAdmin").decode()


def object_dir(root, ocfl_id):
    h = hashlib.sha256(ocfl_id.encode()).hexdigest()
    return os.path.join(root, h[0:3], h[3:6], h[6:9], h)


def put(url, body):
    req = urllib.request.Request(url, data=body, method="PUT")
    req.add_header("content-type", "application/octet-stream")
    req.add_header("authorization", AUTH)
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.status


def change_lag(catalog):
    try:
        db = sqlite3.connect(f"file:{catalog}?mode=ro", uri=True, timeout=1)
        last = db.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0]
        row = db.execute(
            "SELECT position FROM consumers WHERE name = 'replica:lag'"
        ).fetchone()
        db.close()
        return last - (row[0] if row else 0)
    except sqlite3.Error:
        return None


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--scenario", default="ingest-small")
    ap.add_argument("--probe-every", type=float, default=0.5)
    ap.add_argument("--dir", default=None, help="where data and replica go (a fresh temp dir)")
    args = ap.parse_args()
    arca = os.environ.get("ARCA_BIN", "target/release/arca")
    work = args.dir or tempfile.mkdtemp(prefix="replica-lag-")
    data, replica = os.path.join(work, "data"), os.path.join(work, "replica")
    config = os.path.join(work, "arca.toml")
    with open(config, "w") as f:
        f.write(f'[[replica]]\nname = "lag"\npath = "{replica}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCA_")}
    env.update(ARCA_CONFIG=config, ARCA_LOG="warn")
    server = subprocess.Popen(
        [arca, "serve", "--listen", "127.0.0.1:0", "--data", data],
        env=env, stderr=subprocess.PIPE, text=True,
    )
    base = None
    for line in server.stderr:
        if line.startswith("arca listening on "):
            base = line[len("arca listening on "):].strip().rstrip("/")
            break
    if base is None:
        sys.exit("arca did not start")
    threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
    bench_out = os.path.join(work, "bench")
    bench = subprocess.Popen(
        [arca, "bench", args.scenario, "--url", base + "/", "--clients", str(args.clients),
         "--duration", str(args.duration), "--no-raw", "--no-progress", "--out", bench_out,
         "--pid", str(server.pid), "--data-dir", data],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    catalog = os.path.join(data, "catalog.sqlite")
    latencies, lags, pending = [], [], []
    n = 0
    started = time.time()
    while bench.poll() is None:
        ocfl_id = f"info:fedora/probe-{n}"
        put(f"{base}/probe-{n}", b"probe %d" % n)
        pending.append((ocfl_id, time.time()))
        n += 1
        deadline = time.time() + args.probe_every
        while time.time() < deadline:
            now = time.time()
            still = []
            for oid, t in pending:
                if os.path.exists(os.path.join(object_dir(replica, oid), "inventory.json")):
                    latencies.append(now - t)
                else:
                    still.append((oid, t))
            pending = still
            lag = change_lag(catalog)
            if lag is not None:
                lags.append(lag)
            time.sleep(0.02)
    ingest_end = time.time()
    # Drain: until every probe and the whole root are in the replica.
    while pending:
        now = time.time()
        pending = [(o, t) for o, t in pending
                   if not os.path.exists(os.path.join(object_dir(replica, o), "inventory.json"))
                   or latencies.append(now - t)]
        time.sleep(0.02)
    final = None
    while True:
        lag = change_lag(catalog)
        if lag == 0:
            final = time.time()
            break
        time.sleep(0.05)
    server.terminate()
    server.wait(timeout=60)
    report = {}
    try:
        with open(os.path.join(bench_out, "report.json")) as f:
            report = json.load(f)
    except OSError:
        pass
    summary = report.get("summary")
    out = {
        "scenario": args.scenario,
        "clients": args.clients,
        "duration_s": round(ingest_end - started, 1),
        "bench_summary": summary,
        "probes": len(latencies),
        "probe_latency_s": {
            "p50": percentile(latencies, 50),
            "p95": percentile(latencies, 95),
            "p99": percentile(latencies, 99),
            "max": max(latencies) if latencies else None,
        },
        "change_lag": {
            "p50": percentile(lags, 50),
            "p95": percentile(lags, 95),
            "max": max(lags) if lags else None,
        },
        "caught_up_after_ingest_s": round(final - ingest_end, 2),
        "work_dir": work,
    }
    print(json.dumps(out, indent=2))
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
