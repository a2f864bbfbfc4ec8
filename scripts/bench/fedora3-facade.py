#!/usr/bin/env python3
"""Reads one binary through the Fedora 3 facade and through the Fedora API of the same running
arca, alternating phases, and prints requests/s of each and their ratio (issue #14: the
facade's content "at the speed of arca's own binary GET").

usage: fedora3-facade.py BASE PID DSID [THREADS] [SECONDS_PER_PHASE] [ROUNDS]
  e.g. fedora3-facade.py http://127.0.0.1:8080 f3test:versioned OBJ 4 5 3
"""
import base64
import http.client
import statistics
import sys
import threading
import time
import urllib.parse


def phase(host, port, path, threads, seconds, auth):
    counts = [0] * threads
    stop = time.monotonic() + seconds

    def worker(i):
        conn = http.client.HTTPConnection(host, port)
        while time.monotonic() < stop:
            conn.request("GET", path, headers={"Authorization": auth})
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                raise SystemExit(f"GET {path}: {r.status}")
            counts[i] += 1

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(counts) / seconds


def main():
    base, pid, ds = sys.argv[1], sys.argv[2], sys.argv[3]
    threads = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 5
    rounds = int(sys.argv[6]) if len(sys.argv) > 6 else 3
    u = urllib.parse.urlparse(base)
    auth = "Basic " + base64.b64encode(b"fedoraAdmin:fedoraAdmin").decode()
    quoted = urllib.parse.quote(pid, safe=":")
    facade = f"/fedora/objects/{quoted}/datastreams/{ds}/content"
    rest = f"/rest/{quoted}/{ds}"
    ratios = []
    for r in range(rounds):
        f = phase(u.hostname, u.port, facade, threads, seconds, auth)
        a = phase(u.hostname, u.port, rest, threads, seconds, auth)
        ratios.append(f / a)
        print(f"round {r + 1}: facade {f:.0f} req/s, Fedora API {a:.0f} req/s, ratio {f / a:.3f}")
    print(f"median ratio facade/Fedora API: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
