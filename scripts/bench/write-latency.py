#!/usr/bin/env python3
"""One client's latency of an object-only write (POST of a container) on a node over
PostgreSQL and S3 (MinIO), for two or more arca binaries alternated in one PostgreSQL and
one MinIO (scale-out.py's, started under WORK; put WORK on tmpfs, e.g. /dev/shm/lat, to keep
the disk's noise out). Each binary, each round: a fresh database and bucket prefix, one node
without its search index, 300 POSTs over one kept-alive connection, the first 50 dropped.

usage: write-latency.py WORK ARCA [ARCA…] [--rounds 3]
"""
import argparse
import http.client
import importlib.util
import os
import statistics
import time
import types
import urllib.parse

spec = importlib.util.spec_from_file_location(
    "scale_out", os.path.join(os.path.dirname(os.path.abspath(__file__)), "scale-out.py"))
so = importlib.util.module_from_spec(spec)
spec.loader.exec_module(so)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("work")
    p.add_argument("arca", nargs="+")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=300)
    args = p.parse_args()
    so.NO_SEARCH = True
    env = so.Env(types.SimpleNamespace(arca=args.arca[0], bench=None, work=args.work))
    body = b'<> <http://purl.org/dc/terms/title> "x" .'
    turtle = {"Content-Type": "text/turtle"}
    try:
        for rnd in range(args.rounds):
            for binary in args.arca:
                env.arca = os.path.abspath(binary)
                nodes, name = env.nodes("pgs3")
                u = urllib.parse.urlparse(nodes[0].base)
                conn = http.client.HTTPConnection(u.hostname, u.port)
                so.http_call(conn, "PUT", u.path + "c", b"", turtle)
                times = []
                for _ in range(args.requests):
                    t = time.perf_counter()
                    so.http_call(conn, "POST", u.path + "c", body, turtle)
                    times.append((time.perf_counter() - t) * 1000)
                times = sorted(times[50:])
                so.emit({"round": rnd, "arca": binary, "post_ms_mean": statistics.mean(times),
                         "p50": times[len(times) // 2], "p90": times[int(len(times) * 0.9)]})
                env.cleanup(nodes, name, "pgs3")
    finally:
        env.stop()


if __name__ == "__main__":
    main()
