#!/usr/bin/env python3
"""User-space instructions per GET of a server, counted by valgrind's callgrind: a figure
that does not move with the machine's load (CPU time on a shared VM scatters ±10 %), for
comparing two builds of arca, or arca with the floor (`raw_get`).

usage: get-instructions.py BIN NAME [GETS]
  BIN   an `arca` binary (started as `BIN serve` on a fresh data directory on /dev/shm) or
        `raw_get` (crates/bench/examples/raw_get.rs)
  NAME  names the data directory and the callgrind files (/tmp/cg-NAME.out.*)

It creates 50 containers with a 20 KiB binary each (as `arca bench access-small` does, with
the quick-start admin), reads each once, then counts GETS GETs of the binaries and GETS GETs
of the containers as Turtle, one keep-alive connection, and prints instructions per GET.
Needs valgrind (callgrind_control) and Python 3; `callgrind_annotate --inclusive=yes
/tmp/cg-NAME.out.1` then shows where a binary GET's instructions go. Kernel work (socket
writes, file reads) is not counted.
"""
import base64
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import time

bin_, name = sys.argv[1], sys.argv[2]
gets = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
data = f"/dev/shm/cg-{name}"
shutil.rmtree(data, ignore_errors=True)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
out = f"/tmp/cg-{name}.out"
for f in os.listdir("/tmp"):
    if f.startswith(f"cg-{name}.out"):
        os.remove("/tmp/" + f)
cmd = [bin_, "serve", "--listen", f"127.0.0.1:{port}", "--data", data]
if os.path.basename(bin_) == "raw_get":
    os.makedirs(data)
    cmd = [bin_, data, f"127.0.0.1:{port}"]
server = subprocess.Popen(
    ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--instr-atstart=no"] + cmd,
    stdout=open(f"/tmp/cg-{name}.log", "w"),
    stderr=subprocess.STDOUT,
)
auth = "Basic " + base64.b64encode(b"fedoraAdmin:fedoraAdmin").decode()
conn = None
for _ in range(600):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.connect()
        break
    except OSError:
        time.sleep(0.5)
else:
    sys.exit(f"no server on port {port}; see /tmp/cg-{name}.log")


def request(method, path, body=None, headers=None):
    conn.request(method, path, body=body, headers={"Authorization": auth, **(headers or {})})
    response = conn.getresponse()
    response.read()
    return response


containers, binaries = [], []
while len(containers) < 50:
    r = request("POST", "/rest/", b"", {"Content-Type": "text/turtle"})
    if r.status == 503:  # still starting
        time.sleep(1)
        continue
    if r.status != 201:
        sys.exit(f"POST /rest/: {r.status}")
    location = r.getheader("Location")
    path = location if location.startswith("/") else "/" + location.split("/", 3)[3]
    r = request("PUT", path + "/file", os.urandom(20480), {"Content-Type": "application/octet-stream"})
    if r.status not in (201, 204):
        sys.exit(f"PUT {path}/file: {r.status}")
    containers.append(path)
    binaries.append(path + "/file")
for path in containers + binaries:
    request("GET", path, headers={"Accept": "text/turtle"})
# The search indexer's commits of what was just created would otherwise land inside the
# counted window (a third more instructions in some runs): wait until it has caught up.
for _ in range(600):
    r = conn.request("GET", "/rest/fcr:search/status", headers={"Authorization": auth})
    r = conn.getresponse()
    body = r.read()
    if r.status != 200 or os.path.basename(bin_) == "raw_get":
        break
    status = json.loads(body)
    if status["lag"] == 0 and not status["merging"]:
        break
    time.sleep(0.5)
time.sleep(2)


def control(*args):
    subprocess.run(["callgrind_control", *args, str(server.pid)], stdout=subprocess.DEVNULL, check=True)


for label, paths, headers in [("binary", binaries, {}), ("container", containers, {"Accept": "text/turtle"})]:
    control("-z")
    control("-i", "on")
    for i in range(gets):
        r = request("GET", paths[i % len(paths)], headers=headers)
        if r.status != 200:
            sys.exit(f"GET {paths[i % len(paths)]}: {r.status}")
    control("-i", "off")
    control(f"--dump={label}")
server.terminate()
server.wait()
for f in sorted(os.listdir("/tmp")):
    if f.startswith(f"cg-{name}.out."):
        lines = open("/tmp/" + f).read().splitlines()
        label = next(l for l in lines if l.startswith("desc: Trigger")).split()[-1]
        total = int(next(l for l in lines if l.startswith("totals:")).split()[1])
        print(f"{name} {label}: {total // gets:,} instructions per GET (/tmp/{f})")
shutil.rmtree(data, ignore_errors=True)
