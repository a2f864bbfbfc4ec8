#!/usr/bin/env python3
"""TimeMap of a resource with N distinct mementos (Fedora names a memento by its second, so
the history takes N seconds: one PUT per second), then 2,000 single-client GETs of its
TimeMap (link-format) and of a 2-memento resource's, timed; p50 and p99 in ms.

    python3 scripts/bench/timemap-distinct.py target/release/arca /mnt/fresh/data 1000

Starts `arca serve` on DATA (a fresh directory) on a free loopback port, with the default
fedoraAdmin user. Python's urllib is the client: the short TimeMap's row shows its overhead.
"""
import subprocess, sys, time, socket, urllib.request, statistics
bin_, data, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
p = subprocess.Popen([bin_, "serve", "--data", data, "--listen", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
base = f"http://127.0.0.1:{port}/rest/"
auth = "Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4="
def req(method, url, body=None, headers={}):
    r = urllib.request.Request(url, data=body, method=method, headers={"Authorization": auth, **headers})
    with urllib.request.urlopen(r) as resp: return resp.status, resp.read()
for _ in range(100):
    try: req("GET", base); break
    except Exception: time.sleep(0.1)
ttl = lambda i: f'<> <http://purl.org/dc/terms/title> "v{i}" .'.encode()
req("PUT", base + "short", ttl(0), {"Content-Type": "text/turtle"}); time.sleep(1.1)
req("PUT", base + "short", ttl(1), {"Content-Type": "text/turtle"})
start = time.time()
for i in range(n):
    req("PUT", base + "long", ttl(i), {"Content-Type": "text/turtle"})
    next_at = start + i + 1.0
    time.sleep(max(0, next_at - time.time()))
def timed(url, k=2000):
    out = []
    for _ in range(k):
        t = time.perf_counter(); st, body = req("GET", url, None, {"Accept": "application/link-format"}); out.append((time.perf_counter() - t) * 1000)
    out.sort(); return body, out[len(out)//2], out[int(len(out)*0.99)]
for name in ("short", "long", "short", "long"):
    body, p50, p99 = timed(base + name + "/fcr:versions")
    m = body.count(b'rel="memento"')
    print(f"{name}: {m} mementos, {len(body)} bytes, p50 {p50:.2f} ms, p99 {p99:.2f} ms", flush=True)
p.terminate(); p.wait()
