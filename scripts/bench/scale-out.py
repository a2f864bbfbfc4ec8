#!/usr/bin/env python3
"""Scale-out benchmarks of issue #15: arca over a PostgreSQL catalog and an OCFL root in an
S3 bucket (MinIO), against arca's embedded mode (SQLite catalog, local root), in one run.

It starts a private PostgreSQL (Debian's package, as the `postgres` user when run as root,
with pg_stat_statements) and a private MinIO (~/.cache/arca-minio/minio or $ARCA_MINIO, with
its Prometheus metrics public) on free ports of 127.0.0.1, puts every data directory under
WORK (a fresh loop-mounted ext4 is best: MinIO's data and the embedded root then share one
disk), and stops and deletes everything at the end. The load generator is `arca bench` (the
ARCA binary's own, or --bench BIN).

usage: scale-out.py costs ARCA WORK [--rounds 2] [--seconds 20]
         (a) per operation, embedded vs PG+S3, alternated: exact PostgreSQL statements (and
         BEGIN/COMMIT) and S3 requests per HTTP request from one client; under 16 clients:
         ops/s, CPU ms per operation of arca, PostgreSQL and MinIO, statements and S3
         requests per operation
       scale-out.py trips ARCA WORK [--rounds 1]
         only the one-client counts of (a), with every statement a request kind runs at
         least once per two requests (top-level ones marked: one round trip each)
       scale-out.py nodes ARCA WORK [--rounds 2] [--seconds 20]
         (b) 1, 2 and 3 nodes over one PostgreSQL database and one bucket prefix, 16 clients
         spread round-robin (one `arca bench` per node with its share, run together; the
         sums over the window from the first start to the last end)
       (--no-search: every node without its search index, which follows every change)
       scale-out.py quota ARCA WORK [--quota 0.25] [--max-nodes 4] [--rounds 2] [--seconds 20]
                                    [--index-quota 0.25] [--svg FILE]
         (d) 1..MAX-NODES nodes, each in a CPU quota of its own (a cgroup v1 `cpu` group under
         /sys/fs/cgroup/cpu/arca-scale with cfs_quota = QUOTA of one core: each node as if on
         a small machine of its own; needs root), without search indexes, plus one indexing
         node in a quota of its own that follows the change log and takes no requests
         (--index-quota 0: none); PostgreSQL, MinIO and the load generators run outside the
         quotas. Per row: ops/s, latency, the CPU of each tier (nodes, index node,
         PostgreSQL, MinIO, load generators) and the machine's idle time, how often the
         nodes were throttled (their quota exhausted), which tier bounds the row, and the
         rate the capacity model predicts from the 1-node row's costs; an SVG chart of rate
         against nodes
       scale-out.py bigingest ARCA WORK [--rounds 1] [--count 100] [--size 50]
         (c) COUNT objects of SIZE MiB with 1 and 7 clients into the S3 root, alternated with
         raw S3 PUTs of the same bytes to the same MinIO (one PUT per object, from a plain
         SigV4 client in this script); arca's RSS sampled every 0.2 s during each ingest
Every figure is printed as a JSON line while it is measured and as Markdown tables at the end;
--json FILE keeps the lines.
"""
import argparse
import datetime
import glob
import hashlib
import hmac
import http.client
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
S3_USER, S3_SECRET, BUCKET, REGION = "arca-bench", "arca-bench-secret", "arca-bench", "us-east-1"
ADMIN = "Basic ZmVkb3JhQWRtaW46ZmVkb3JhQWRtaW4="  # fedoraAdmin:fedoraAdmin, arca's quick start
OUT = []
NO_SEARCH = False  # --no-search: every node without its search index


def emit(record):
    OUT.append(record)
    print(json.dumps(record), flush=True)


def runs(sel, key):
    return " / ".join(f"{x[key]:,.0f}" for x in sel)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pids):
    """utime+stime (+ those of reaped children) of the processes, in seconds."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total / TICK


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE / 2**20
    except FileNotFoundError:
        return 0.0


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


class Postgres:
    """A private PostgreSQL cluster with pg_stat_statements (utility statements tracked)."""

    def __init__(self, work):
        self.bin = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
        self.dir = os.path.join(work, "pg")
        self.port = free_port()
        self.user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        os.makedirs(self.dir, exist_ok=True)
        if self.user:
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self.run(["initdb", "-A", "trust", "-U", "arca", "-E", "UTF8", "--locale=C",
                  "-D", self.dir + "/data"])
        self.server = subprocess.Popen(
            self.cmd(["postgres", "-D", self.dir + "/data", "-p", str(self.port),
                      "-k", self.dir, "-c", "listen_addresses=127.0.0.1",
                      "-c", "shared_preload_libraries=pg_stat_statements",
                      "-c", "pg_stat_statements.track=all",
                      "-c", "pg_stat_statements.track_utility=on",
                      "-c", "max_connections=300", "-c", "fsync=on"]),
            stdout=subprocess.DEVNULL, stderr=open(self.dir + "/log", "w"),
            preexec_fn=self.demote)
        for _ in range(600):
            if subprocess.run(self.cmd(["pg_isready", "-h", "127.0.0.1", "-p", str(self.port)]),
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        else:
            raise SystemExit("PostgreSQL did not start: " + open(self.dir + "/log").read())
        self.sql("postgres", "CREATE EXTENSION pg_stat_statements")
        self.version = self.sql("postgres", "SHOW server_version")

    def demote(self):
        if self.user:
            os.setgroups([])
            os.setgid(self.user.pw_gid)
            os.setuid(self.user.pw_uid)

    def cmd(self, args):
        return [os.path.join(self.bin, args[0])] + args[1:]

    def run(self, args):
        subprocess.run(self.cmd(args), check=True, capture_output=True, preexec_fn=self.demote)

    def sql(self, db, statement):
        out = subprocess.run(
            self.cmd(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "arca", "-d", db,
                      "-At", "-c", statement]),
            check=True, capture_output=True, text=True)
        return out.stdout.strip()

    def create(self, db):
        self.sql("postgres", f"CREATE DATABASE {db}")
        return f"postgres://arca@127.0.0.1:{self.port}/{db}"

    def pids(self):
        out = subprocess.run(["pgrep", "-P", str(self.server.pid)], capture_output=True, text=True)
        return [self.server.pid] + [int(p) for p in out.stdout.split()]

    def reset(self):
        self.sql("postgres", "SELECT pg_stat_statements_reset()")

    def counts(self):
        """Statements executed since the last reset: all, BEGIN, COMMIT (this script's own
        queries of the statistics left out)."""
        rows = self.sql("postgres", "SELECT calls, toplevel, query FROM pg_stat_statements "
                                    "WHERE query NOT ILIKE '%pg_stat_statements%'")
        total = begin = commit = toplevel = 0
        for line in rows.splitlines():
            calls, _, rest = line.partition("|")
            top, _, query = rest.partition("|")
            if not calls.isdigit():
                continue
            calls = int(calls)
            total += calls
            if top == "t":
                toplevel += calls
            q = query.strip().upper()
            if q.startswith("BEGIN") or q.startswith("START TRANSACTION"):
                begin += calls
            elif q.startswith("COMMIT") or q.startswith("END"):
                commit += calls
        return {"statements": total, "begin": begin, "commit": commit, "toplevel": toplevel}

    def statements(self):
        """Each statement since the last reset with its calls (top-level ones marked), most
        called first: where a request's round trips go."""
        rows = self.sql("postgres", "SELECT calls, toplevel, regexp_replace(query, '\\s+', ' ', 'g') "
                                    "FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat_statements%' "
                                    "ORDER BY calls DESC, query")
        out = []
        for line in rows.splitlines():
            calls, _, rest = line.partition("|")
            top, _, query = rest.partition("|")
            if calls.isdigit():
                out.append((int(calls), top == "t", query))
        return out

    def stop(self):
        self.server.terminate()
        self.server.wait()


class Minio:
    """A private MinIO on one data directory with its bucket, metrics public."""

    def __init__(self, work):
        binary = os.environ.get("ARCA_MINIO") or os.path.expanduser("~/.cache/arca-minio/minio")
        self.dir = os.path.join(work, "minio")
        os.makedirs(os.path.join(self.dir, "data", BUCKET), exist_ok=True)
        self.port = free_port()
        env = {**os.environ, "MINIO_ROOT_USER": S3_USER, "MINIO_ROOT_PASSWORD": S3_SECRET,
               "MINIO_UPDATE": "off", "MINIO_PROMETHEUS_AUTH_TYPE": "public",
               "MINIO_BROWSER": "off"}
        self.server = subprocess.Popen(
            [binary, "server", os.path.join(self.dir, "data"), "--address",
             f"127.0.0.1:{self.port}", "--console-address", f"127.0.0.1:{free_port()}"],
            stdout=open(os.path.join(self.dir, "minio.log"), "w"), stderr=subprocess.STDOUT,
            env=env)
        self.endpoint = f"http://127.0.0.1:{self.port}"
        for _ in range(600):
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/minio/health/live")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            raise SystemExit("MinIO did not start")
        self.version = subprocess.run([binary, "--version"], capture_output=True,
                                      text=True).stdout.split("\n")[0]

    def requests(self):
        """S3 requests served so far per API: minio_api_requests_total of the metrics v3
        (current at every scrape; v2's minio_s3_requests_total is cached for seconds)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", "/minio/metrics/v3/api/requests")
        text = c.getresponse().read().decode()
        out = {}
        for m in re.finditer(r'^minio_api_requests_total\{([^}]*)\} (\S+)$', text, re.M):
            if 'type="s3"' not in m.group(1):
                continue
            api = re.search(r'name="([^"]+)"', m.group(1)).group(1)
            out[api] = out.get(api, 0) + float(m.group(2))
        return out

    def stop(self):
        self.server.terminate()
        self.server.wait()


def diff(after, before):
    d = {k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before)}
    return {k: v for k, v in sorted(d.items()) if v}


class S3:
    """A plain S3 client (SigV4, UNSIGNED-PAYLOAD) on one keep-alive connection: the raw
    baseline, and the listing and deletion of what a run left."""

    def __init__(self, endpoint):
        u = urllib.parse.urlparse(endpoint)
        self.host = u.netloc
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)

    def request(self, method, key="", query=None, body=None):
        query = query or {}
        path = "/" + BUCKET + ("/" + urllib.parse.quote(key, safe="/-_.~") if key else "")
        now = datetime.datetime.now(datetime.timezone.utc)
        amz, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        headers = {"host": self.host, "x-amz-date": amz, "x-amz-content-sha256": "UNSIGNED-PAYLOAD"}
        q = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                     for k, v in sorted(query.items()))
        names = ";".join(sorted(headers))
        canonical = "\n".join([method, path, q, "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)),
                               names, "UNSIGNED-PAYLOAD"])
        scope = f"{day}/{REGION}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz, scope,
                             hashlib.sha256(canonical.encode()).hexdigest()])
        key_ = ("AWS4" + S3_SECRET).encode()
        for part in (day, REGION, "s3", "aws4_request"):
            key_ = hmac.new(key_, part.encode(), hashlib.sha256).digest()
        sig = hmac.new(key_, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={S3_USER}/{scope}, "
                                    f"SignedHeaders={names}, Signature={sig}")
        if body is not None:
            headers["Content-Length"] = str(len(body))
        try:
            self.conn.request(method, path + ("?" + q if q else ""), body=body, headers=headers)
            r = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionError):
            # the server closed the idle keep-alive connection: once more on a new one
            self.conn.close()
            self.conn.request(method, path + ("?" + q if q else ""), body=body, headers=headers)
            r = self.conn.getresponse()
        data = r.read()
        if r.status >= 300:
            raise RuntimeError(f"S3 {method} {key}: {r.status} {data[:300]!r}")
        return data

    def keys(self, prefix):
        token, out = None, []
        while True:
            q = {"list-type": "2", "prefix": prefix}
            if token:
                q["continuation-token"] = token
            root = ET.fromstring(self.request("GET", query=q))
            ns = {"s": root.tag.split("}")[0].strip("{")}
            out += [e.text for e in root.findall("s:Contents/s:Key", ns)]
            token = root.findtext("s:NextContinuationToken", namespaces=ns)
            if not token:
                return out

    def delete_prefix(self, prefix):
        keys = self.keys(prefix)
        for k in keys:
            self.request("DELETE", k)
        return len(keys)


class Node:
    """One `arca serve` on a free port: embedded (SQLite + local root under DATA) or over the
    PostgreSQL catalog URL and the bucket prefix."""

    def __init__(self, arca, data, catalog=None, minio=None, prefix=None, cgroup=None,
                 search=None):
        env = {**os.environ, "ARCA_LOG": "warn"}
        if NO_SEARCH if search is None else not search:
            env["ARCA_SEARCH_ENABLED"] = "false"
        if catalog:
            env["ARCA_CATALOG_URL"] = catalog
        if minio:
            env.update({"ARCA_S3_BUCKET": BUCKET, "ARCA_S3_ENDPOINT": minio.endpoint,
                        "ARCA_S3_PREFIX": prefix, "ARCA_S3_REGION": REGION,
                        "AWS_ACCESS_KEY_ID": S3_USER, "AWS_SECRET_ACCESS_KEY": S3_SECRET})
        self.log = open(data + ".log", "w")
        self.proc = subprocess.Popen([arca, "serve", "--listen", "127.0.0.1:0", "--data", data],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, env=env,
                                     preexec_fn=cgroup.enter if cgroup else None)
        self.base = None
        for line in self.proc.stderr:
            self.log.write(line)
            m = re.search(r"arca listening on (\S+)", line)
            if m:
                self.base = m.group(1).rstrip("/") + "/"
                break
        if not self.base:
            raise SystemExit(f"arca did not start, see {data}.log")
        threading.Thread(target=self._drain, daemon=True).start()
        self.pid = self.proc.pid

    def _drain(self):
        for line in self.proc.stderr:
            self.log.write(line)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


class Env:
    """PostgreSQL and MinIO for the whole run."""

    def __init__(self, args):
        self.arca = os.path.abspath(args.arca)
        self.bench = os.path.abspath(args.bench or args.arca)
        self.work = os.path.abspath(args.work)
        os.makedirs(self.work, exist_ok=True)
        self.pg = Postgres(self.work)
        self.minio = Minio(self.work)
        self.s3 = S3(self.minio.endpoint)
        # a versioned bucket, as arca requires by default (storage.s3.require_versioning)
        self.s3.request("PUT", query={"versioning": ""}, body=(
            b'<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            b'<Status>Enabled</Status></VersioningConfiguration>'))
        self.n = 0
        emit({"conditions": {"load": loadavg(), "postgres": self.pg.version,
                             "minio": self.minio.version, "arca": self.arca,
                             "work": self.work, "cpus": os.cpu_count()}})

    def fresh(self, tag):
        """A new database, bucket prefix and data directory name."""
        self.n += 1
        name = f"{tag}{self.n}"
        return self.pg.create(name), name, os.path.join(self.work, name)

    def nodes(self, mode, count=1):
        if mode == "embedded":
            _, name, data = self.fresh("embedded")
            return [Node(self.arca, data)], name
        catalog, name, data = self.fresh("pgs3")
        nodes = [Node(self.arca, f"{data}-node{i}", catalog, self.minio, name)
                 for i in range(count)]
        return nodes, name

    def cleanup(self, nodes, name, mode):
        for n in nodes:
            n.stop()
        if mode != "embedded":
            self.s3.delete_prefix(name + "/")
        for d in glob.glob(os.path.join(self.work, name + "*")):
            if os.path.isdir(d):
                shutil.rmtree(d, ignore_errors=True)

    def counters(self, nodes):
        return {"t": time.monotonic(), "arca_cpu": cpu_seconds([n.pid for n in nodes]),
                "pg_cpu": cpu_seconds(self.pg.pids()),
                "minio_cpu": cpu_seconds([self.minio.server.pid]),
                "pg": self.pg.counts(), "s3": self.minio.requests()}

    def stop(self):
        self.minio.stop()
        self.pg.stop()


def bench(env, node, scenario, clients, seconds, out, extra=()):
    """Runs `arca bench SCENARIO` against one node; returns its row and wall-clock end."""
    cmd = [env.bench, "bench", scenario, "--url", node.base, "--pid", str(node.pid),
           "--clients", str(clients), "--duration", str(seconds), "--no-raw", "--no-progress",
           "--out", out, *extra]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(out + ".err", "w"))


def row_of(out, scenario):
    report = json.load(open(os.path.join(out, "report.json")))
    rows = [s for s in report["scenarios"] if s["name"].startswith(scenario)]
    if not rows:
        raise SystemExit(f"no row {scenario} in {out}")
    return rows[-1]


def http_call(conn, method, path, body=None, headers=None):
    h = {"Authorization": ADMIN, **(headers or {})}
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    r.read()
    if r.status >= 300:
        raise SystemExit(f"{method} {path}: {r.status}")
    return r


def trips(env, node, n=100, detail=False):
    """Exact PostgreSQL statements and S3 requests per HTTP request, one client, each kind of
    request n times with the counters read before and after (an idle interval of the same
    length is measured too and subtracted: background work of the nodes)."""
    u = urllib.parse.urlparse(node.base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    tag = f"trip{time.time_ns()}"
    blob = os.urandom(20 * 1024)
    kinds = [
        ("POST container", lambda i: ("POST", u.path, b"", {"Content-Type": "text/turtle"})),
        ("PUT 20 KiB binary", lambda i: ("PUT", f"{u.path}{tag}-c{i}/file", blob,
                                         {"Content-Type": "application/octet-stream",
                                          "Link": '<http://www.w3.org/ns/ldp#NonRDFSource>; rel="type"'})),
        ("GET container", lambda i: ("GET", f"{u.path}{tag}-c{i}", None, {"Accept": "text/turtle"})),
        ("GET binary", lambda i: ("GET", f"{u.path}{tag}-c{i}/file", None, {})),
        ("PUT container (replace)", lambda i: ("PUT", f"{u.path}{tag}-c{i}",
                                               b'<> <http://purl.org/dc/terms/title> "t" .',
                                               {"Content-Type": "text/turtle",
                                                "Prefer": 'handling=lenient; received="minimal"'})),
    ]
    for i in range(n):  # the containers the binaries go into
        http_call(conn, "PUT", f"{u.path}{tag}-c{i}", b"", {"Content-Type": "text/turtle"})
    results = {}
    for name, req in kinds:
        env.pg.reset()
        before = env.counters([node])
        for i in range(n):
            method, path, body, headers = req(i)
            http_call(conn, method, path, body, headers)
        after = env.counters([node])
        elapsed = after["t"] - before["t"]
        if detail:
            for calls, top, query in env.pg.statements():
                if calls >= n // 2:
                    emit({"trips": name, "statement_per_request": round(calls / n, 2),
                          "toplevel": top, "query": query[:300]})
        # idle: the same time without requests
        env.pg.reset()
        idle0 = env.counters([node])
        time.sleep(min(elapsed, 10))
        idle1 = env.counters([node])
        scale = elapsed / (idle1["t"] - idle0["t"])
        pg = {k: (after["pg"][k] - before["pg"][k] - scale * (idle1["pg"][k] - idle0["pg"][k])) / n
              for k in after["pg"]}
        s3 = {k: v / n for k, v in diff(after["s3"], before["s3"]).items()}
        idle_s3 = {k: v * scale / n for k, v in diff(idle1["s3"], idle0["s3"]).items()}
        results[name] = {"pg": pg, "s3": s3, "idle_s3_subtracted_not": idle_s3}
        emit({"trips": name, "n": n, "pg_per_request": pg, "s3_per_request": s3,
              "s3_idle_same_interval_per_request": idle_s3})
    return results


def trips_cmd(args):
    env = Env(args)
    try:
        for r in range(args.rounds):
            nodes, name = env.nodes("pgs3")
            trips(env, nodes[0], detail=True)
            env.cleanup(nodes, name, "pgs3")
    finally:
        env.stop()


def costs(args):
    env = Env(args)
    scenarios = ["ingest-object-only", "ingest-small", "access-metadata", "access-small"]
    rows = []
    try:
        for r in range(args.rounds):
            for mode in (["embedded", "pgs3"] if r % 2 == 0 else ["pgs3", "embedded"]):
                nodes, name = env.nodes(mode)
                node = nodes[0]
                if mode == "pgs3":
                    trips(env, node)
                ingest_cost = {}
                for scenario in scenarios:
                    out = os.path.join(env.work, f"report-{mode}-{r}-{scenario}")
                    env.pg.reset()
                    load = loadavg()
                    before = env.counters(nodes)
                    p = bench(env, node, scenario, 16, args.seconds, out,
                              ["--objects", str(args.objects)] if scenario.startswith("access") else [])
                    if p.wait() != 0:
                        raise SystemExit(f"bench failed: {open(out + '.err').read()[-2000:]}")
                    after = env.counters(nodes)
                    row = row_of(out, scenario)
                    ops = row["ok"]
                    rec = {"round": r, "mode": mode, "scenario": scenario, "ops": ops,
                           "errors": row["errors"], "ops_s": row["tps"],
                           "requests_per_op": row["requests"] / max(ops, 1),
                           "load_before": load}
                    totals = {
                        "arca_cpu_ms": 1000 * (after["arca_cpu"] - before["arca_cpu"]),
                        "pg_cpu_ms": 1000 * (after["pg_cpu"] - before["pg_cpu"]),
                        "minio_cpu_ms": 1000 * (after["minio_cpu"] - before["minio_cpu"]),
                        "pg_statements": after["pg"]["statements"] - before["pg"]["statements"],
                        "pg_commits": after["pg"]["commit"] - before["pg"]["commit"],
                        "s3_requests": sum(diff(after["s3"], before["s3"]).values()),
                    }
                    s3_by_api = diff(after["s3"], before["s3"])
                    if scenario.startswith("access"):
                        # subtract the unmeasured preload (--objects objects ingested first),
                        # at this round's cost per ingested object of the same kind
                        kind = "ingest-small" if scenario == "access-small" else "ingest-object-only"
                        pre = row.get("setup") or {}
                        preloaded = pre.get("objects_created", args.objects)
                        for k in totals:
                            totals[k] -= preloaded * ingest_cost[kind][k]
                        s3_by_api = {k: v - preloaded * ingest_cost[kind]["s3_by_api"].get(k, 0)
                                     for k, v in s3_by_api.items()}
                        rec["preload_subtracted"] = preloaded
                    else:
                        ingest_cost[scenario] = {k: v / ops for k, v in totals.items()}
                        ingest_cost[scenario]["s3_by_api"] = {k: v / ops for k, v in s3_by_api.items()}
                    rec.update({k + ("_per_op" if not k.endswith("_ms") else "_per_op"): v / ops
                                for k, v in totals.items()})
                    rec["s3_by_api_per_op"] = {k: round(v / ops, 3) for k, v in s3_by_api.items()
                                               if abs(v / ops) >= 0.0005}
                    rec["arca_cpu_pct"] = 100 * (after["arca_cpu"] - before["arca_cpu"]) / (after["t"] - before["t"])
                    emit(rec)
                    rows.append(rec)
                env.cleanup(nodes, name, mode)
    finally:
        env.stop()
    print("\n| scenario | mode | ops/s (each round) | arca CPU ms/op | PostgreSQL CPU ms/op | "
          "MinIO CPU ms/op | PG statements/op | PG commits/op | S3 requests/op |")
    print("|---|---|---|--:|--:|--:|--:|--:|--:|")
    for scenario in scenarios:
        for mode in ["embedded", "pgs3"]:
            sel = [x for x in rows if x["scenario"] == scenario and x["mode"] == mode]
            if not sel:
                continue
            m = lambda k: sum(x[k] for x in sel) / len(sel)
            print(f"| {scenario} | {mode} | {runs(sel, 'ops_s')} | "
                  f"{m('arca_cpu_ms_per_op'):.3f} | {m('pg_cpu_ms_per_op'):.3f} | "
                  f"{m('minio_cpu_ms_per_op'):.3f} | {m('pg_statements_per_op'):.2f} | "
                  f"{m('pg_commits_per_op'):.2f} | {m('s3_requests_per_op'):.2f} |")


def nodes_cmd(args):
    env = Env(args)
    scenarios = ["ingest-object-only", "ingest-small", "access-metadata", "access-small"]
    order = []
    for r in range(args.rounds):
        order += [(r, n) for n in ([1, 2, 3] if r % 2 == 0 else [3, 2, 1])]
    rows = []
    try:
        for r, count in order:
            nodes, name = env.nodes("pgs3", count)
            shares = [16 // count + (1 if i < 16 % count else 0) for i in range(count)]
            for scenario in scenarios:
                load = loadavg()
                before = env.counters(nodes)
                procs, outs, ends = [], [], [None] * count
                for i, node in enumerate(nodes):
                    out = os.path.join(env.work, f"report-n{count}-{r}-{scenario}-node{i}")
                    extra = ["--objects", str(args.objects)] if scenario.startswith("access") else []
                    procs.append(bench(env, node, scenario, shares[i], args.seconds, out, extra))
                    outs.append(out)
                for i, p in enumerate(procs):
                    if p.wait() != 0:
                        raise SystemExit(f"bench failed: {open(outs[i] + '.err').read()[-2000:]}")
                    ends[i] = time.monotonic()
                after = env.counters(nodes)
                per = [row_of(o, scenario) for o in outs]
                ok = sum(x["ok"] for x in per)
                errors = sum(x["errors"] for x in per)
                # the union of the measured windows: each ends when its bench exits
                start = min(e - x["elapsed_s"] for e, x in zip(ends, per))
                window = max(ends) - start
                rec = {"round": r, "nodes": count, "clients": shares, "scenario": scenario,
                       "ok": ok, "errors": errors, "ops_s": ok / window,
                       "sum_of_node_ops_s": sum(x["tps"] for x in per),
                       "per_node_ops_s": [round(x["tps"]) for x in per],
                       "mean_ms": sum(x["mean_ms"] * x["ok"] for x in per) / max(ok, 1),
                       "cpu_total_pct": 100 * ((after["arca_cpu"] + after["pg_cpu"] + after["minio_cpu"])
                                               - (before["arca_cpu"] + before["pg_cpu"] + before["minio_cpu"]))
                       / (after["t"] - before["t"]),
                       "arca_cpu_pct": 100 * (after["arca_cpu"] - before["arca_cpu"]) / (after["t"] - before["t"]),
                       "load_before": load}
                emit(rec)
                rows.append(rec)
            env.cleanup(nodes, name, "pgs3")
    finally:
        env.stop()
    print("\n| scenario | nodes | ops/s per run (window of all) | mean | ÷ 1 node | mean latency ms | CPU of arca+PG+MinIO % |")
    print("|---|--:|---|--:|--:|--:|--:|")
    for scenario in scenarios:
        base = None
        for count in [1, 2, 3]:
            sel = [x for x in rows if x["scenario"] == scenario and x["nodes"] == count]
            if not sel:
                continue
            mean = sum(x["ops_s"] for x in sel) / len(sel)
            base = base or mean
            print(f"| {scenario} | {count} | {runs(sel, 'ops_s')} | "
                  f"{mean:,.0f} | {mean / base:.2f} | "
                  f"{sum(x['mean_ms'] for x in sel) / len(sel):.1f} | "
                  f"{sum(x['cpu_total_pct'] for x in sel) / len(sel):.0f} |")


CGROUP_CPU = "/sys/fs/cgroup/cpu/arca-scale"
CGROUP_ACCT = "/sys/fs/cgroup/cpuacct/arca-scale"
PERIOD_US = 100_000  # the CFS period container runtimes use


class CpuGroup:
    """A cgroup v1 group in the `cpu` hierarchy (with a CFS quota of QUOTA cores, or none)
    and its twin in `cpuacct` (the exact CPU time of everything in it, threads and children
    included)."""

    def __init__(self, name, quota=0.0):
        self.name, self.quota = name, quota
        self.cpu = os.path.join(CGROUP_CPU, name)
        self.acct = os.path.join(CGROUP_ACCT, name)
        for d in (self.cpu, self.acct):
            os.makedirs(d, exist_ok=True)
        self._write(self.cpu, "cpu.cfs_period_us", PERIOD_US)
        self._write(self.cpu, "cpu.cfs_quota_us", int(quota * PERIOD_US) if quota else -1)

    @staticmethod
    def _write(d, name, value):
        with open(os.path.join(d, name), "w") as f:
            f.write(str(value))

    def enter(self, pid=None):
        """Moves PID (default: the calling process, as a `preexec_fn`) into both groups."""
        for d in (self.cpu, self.acct):
            self._write(d, "cgroup.procs", pid or os.getpid())

    def usage_s(self):
        with open(os.path.join(self.acct, "cpuacct.usage")) as f:
            return int(f.read()) / 1e9

    def throttling(self):
        with open(os.path.join(self.cpu, "cpu.stat")) as f:
            stat = dict(line.split() for line in f if line.strip())
        return int(stat["nr_periods"]), int(stat["nr_throttled"])

    def remove(self):
        for d in (self.cpu, self.acct):
            try:
                os.rmdir(d)
            except OSError:
                pass


def idle_s():
    """Idle + iowait seconds of all CPUs since boot."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    return (int(fields[3]) + int(fields[4])) / TICK


def quota_cmd(args):
    if os.geteuid() != 0 or not os.path.isdir(os.path.dirname(CGROUP_CPU)):
        raise SystemExit("quota needs root and cgroup v1's cpu and cpuacct hierarchies "
                         "(/sys/fs/cgroup/cpu, /sys/fs/cgroup/cpuacct)")
    global NO_SEARCH
    NO_SEARCH = True  # the nodes that take requests keep no index; the index node does
    env = Env(args)
    tiers = {"pg": CpuGroup("pg"), "minio": CpuGroup("minio"), "loadgen": CpuGroup("loadgen")}
    for pid in env.pg.pids():
        tiers["pg"].enter(pid)
    tiers["minio"].enter(env.minio.server.pid)
    scenarios = ["ingest-object-only", "ingest-small", "access-metadata", "access-small"]
    counts = list(range(1, args.max_nodes + 1))
    order = []
    for r in range(args.rounds):
        order += [(r, n) for n in (counts if r % 2 == 0 else counts[::-1])]
    cores = os.cpu_count()
    emit({"quota": {"node_cores": args.quota, "index_node_cores": args.index_quota,
                    "period_us": PERIOD_US, "machine_cores": cores}})
    rows = []
    try:
        for r, count in order:
            groups = [CpuGroup(f"node{i}", args.quota) for i in range(count)]
            catalog, name, data = env.fresh("quota")
            nodes = [Node(env.arca, f"{data}-node{i}", catalog, env.minio, name, groups[i])
                     for i in range(count)]
            index = None
            if args.index_quota:
                tiers["index"] = CpuGroup("index", args.index_quota)
                index = Node(env.arca, f"{data}-index", catalog, env.minio, name,
                             tiers["index"], search=True)
            shares = [16 // count + (1 if i < 16 % count else 0) for i in range(count)]
            def snapshot():
                return {"t": time.monotonic(), "idle": idle_s(),
                        "tiers": {k: g.usage_s() for k, g in tiers.items()},
                        "nodes": sum(g.usage_s() for g in groups),
                        "throttling": [g.throttling() for g in groups]}

            for scenario in scenarios:
                load = loadavg()
                samples, done = [snapshot()], threading.Event()

                def sample():  # every 0.25 s, so that the measured window can be cut out
                    while not done.wait(0.25):
                        samples.append(snapshot())
                sampler = threading.Thread(target=sample)
                sampler.start()
                procs, outs, ends = [], [], [None] * count
                for i, node in enumerate(nodes):
                    out = os.path.join(env.work, f"report-q{count}-{r}-{scenario}-node{i}")
                    extra = ["--objects", str(args.objects)] if scenario.startswith("access") else []
                    cmd = [env.bench, "bench", scenario, "--url", node.base, "--pid", str(node.pid),
                           "--clients", str(shares[i]), "--duration", str(args.seconds),
                           "--no-raw", "--no-progress", "--out", out, *extra]
                    procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                                  stderr=open(out + ".err", "w"),
                                                  preexec_fn=tiers["loadgen"].enter))
                    outs.append(out)
                for i, p in enumerate(procs):
                    if p.wait() != 0:
                        done.set()
                        raise SystemExit(f"bench failed: {open(outs[i] + '.err').read()[-2000:]}")
                    ends[i] = time.monotonic()
                done.set()
                sampler.join()
                samples.append(snapshot())
                per = [row_of(o, scenario) for o in outs]
                ok = sum(x["ok"] for x in per)
                # the measured window: from the earliest measured start to the last end (the
                # access rows ingest their objects first, unmeasured); CPU over the samples
                # inside it, as cores
                start = min(e - x["elapsed_s"] for e, x in zip(ends, per))
                window = max(ends) - start
                a = next((x for x in samples if x["t"] >= start), samples[0])
                b = samples[-1]
                span = b["t"] - a["t"]
                cpu = {k: (b["tiers"][k] - a["tiers"].get(k, 0)) / span for k in tiers}
                cpu["nodes"] = (b["nodes"] - a["nodes"]) / span
                throttled = sum(y[1] - x[1] for x, y in zip(a["throttling"], b["throttling"])) / max(
                    1, sum(y[0] - x[0] for x, y in zip(a["throttling"], b["throttling"])))
                idle = (b["idle"] - a["idle"]) / span
                rec = {"round": r, "nodes": count, "scenario": scenario, "ok": ok,
                       "errors": sum(x["errors"] for x in per), "ops_s": ok / window,
                       "per_node_ops_s": [round(x["tps"]) for x in per],
                       "mean_ms": sum(x["mean_ms"] * x["ok"] for x in per) / max(ok, 1),
                       "p99_ms_max": max(x.get("p99_ms", 0) for x in per),
                       "cpu_cores": {k: round(v, 3) for k, v in cpu.items()},
                       "node_quota_used": cpu["nodes"] / (count * args.quota),
                       "throttled_periods": throttled, "idle_cores": round(idle, 3),
                       "window_s": round(window, 2), "cpu_span_s": round(span, 2),
                       "load_before": load}
                rec["bound"] = bound_of(rec, cores)
                emit(rec)
                rows.append(rec)
            for n in nodes + ([index] if index else []):
                n.stop()
            env.s3.delete_prefix(name + "/")
            for d in glob.glob(os.path.join(env.work, name + "*")):
                if os.path.isdir(d):
                    shutil.rmtree(d, ignore_errors=True)
            for g in groups:
                g.remove()
    finally:
        env.stop()
        for g in tiers.values():
            g.remove()
    print_quota(rows, scenarios, counts, args, cores)
    if args.svg:
        with open(args.svg, "w") as f:
            f.write(quota_svg(rows, scenarios, counts, args))
        print(f"\nchart: {args.svg}")


def bound_of(rec, cores):
    """The tier that bounds a row: the nodes when they used (nearly) all their quota; else the
    machine's cores when (nearly) none were idle, named by the largest user outside the
    nodes; else neither (the clients' concurrency or latency)."""
    if rec["node_quota_used"] >= 0.85:
        return "nodes (quota)"
    if rec["idle_cores"] < 0.1 * cores:
        others = {k: v for k, v in rec["cpu_cores"].items() if k != "nodes"}
        top = max(others, key=others.get)
        return f"cores ({top} largest)"
    return "neither (latency)"


def predicted(rows, scenario, r, count, args, cores):
    """The capacity model from the 1-node row of the same round: each node serves at most
    quota / (its CPU per op); all tiers together at most the machine's cores / (CPU per op
    of every tier)."""
    one = next((x for x in rows if x["scenario"] == scenario and x["round"] == r
                and x["nodes"] == 1), None)
    if not one:
        return None
    per_op = {k: v / one["ops_s"] for k, v in one["cpu_cores"].items()}  # core-s per op
    node = per_op["nodes"]
    everything = sum(per_op.values())
    return min(count * args.quota / node, cores / everything)


def print_quota(rows, scenarios, counts, args, cores):
    print(f"\nEach node in a quota of {args.quota} core; index node {args.index_quota} core; "
          f"{cores} cores in all. CPU in cores over the row (nodes / index / PostgreSQL / "
          f"MinIO / load generators / idle).")
    print("\n| row | nodes | ops/s (each round) | ÷ 1 node | model | errors | mean ms | "
          "quota used | throttled | CPU: nodes / index / PG / MinIO / load / idle | bound |")
    print("|---|--:|---|--:|--:|--:|--:|--:|--:|---|---|")
    for scenario in scenarios:
        base = None
        for count in counts:
            sel = [x for x in rows if x["scenario"] == scenario and x["nodes"] == count]
            if not sel:
                continue
            mean = sum(x["ops_s"] for x in sel) / len(sel)
            base = base or mean
            model = [predicted(rows, scenario, x["round"], count, args, cores) for x in sel]
            model = [m for m in model if m]
            c = lambda k: sum(x["cpu_cores"].get(k, 0) for x in sel) / len(sel)
            m = lambda k: sum(x[k] for x in sel) / len(sel)
            print(f"| {scenario} | {count} | {runs(sel, 'ops_s')} | {mean / base:.2f} | "
                  f"{sum(model) / len(model):,.0f} | {sum(x['errors'] for x in sel)} | "
                  f"{m('mean_ms'):.1f} | {100 * m('node_quota_used'):.0f} % | "
                  f"{100 * m('throttled_periods'):.0f} % | "
                  f"{c('nodes'):.2f} / {c('index'):.2f} / {c('pg'):.2f} / {c('minio'):.2f} / "
                  f"{c('loadgen'):.2f} / {m('idle_cores'):.2f} | "
                  f"{' / '.join(sorted(set(x['bound'] for x in sel)))} |")


def quota_svg(rows, scenarios, counts, args):
    """Rate against nodes, each row as a multiple of its 1-node rate, with N and 0.8·N."""
    w, h, left, bottom, top, right = 640, 400, 60, 50, 30, 190
    n_max = max(counts)
    y_max = n_max
    x = lambda n: left + (n - 1) / max(1, n_max - 1) * (w - left - right)
    y = lambda v: h - bottom - v / y_max * (h - top - bottom)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="14">Rate against nodes, each node in '
           f'{args.quota} core (÷ 1 node)</text>']
    for n in counts:
        out.append(f'<line x1="{x(n)}" y1="{y(0)}" x2="{x(n)}" y2="{y(y_max)}" stroke="#eee"/>')
        out.append(f'<text x="{x(n)}" y="{h - bottom + 18}" text-anchor="middle">{n}</text>')
    for v in range(0, y_max + 1):
        out.append(f'<line x1="{left}" y1="{y(v)}" x2="{w - right}" y2="{y(v)}" stroke="#eee"/>')
        out.append(f'<text x="{left - 8}" y="{y(v) + 4}" text-anchor="end">{v}×</text>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">nodes</text>')
    guides = [("N (linear)", 1.0, "#999", "6,4"), ("0.8·N (goal)", 0.8, "#bbb", "2,3")]
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    legend = []
    for label, f, color, dash in guides:
        pts = " ".join(f"{x(n):.1f},{y(f * n):.1f}" for n in counts)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" '
                   f'stroke-dasharray="{dash}"/>')
        legend.append((label, color, dash))
    for scenario, color in zip(scenarios, colors):
        means = []
        for n in counts:
            sel = [r["ops_s"] for r in rows if r["scenario"] == scenario and r["nodes"] == n]
            if sel:
                means.append((n, sum(sel) / len(sel)))
        if not means:
            continue
        base = means[0][1]
        pts = " ".join(f"{x(n):.1f},{y(v / base):.1f}" for n, v in means)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"/>')
        for n, v in means:
            out.append(f'<circle cx="{x(n):.1f}" cy="{y(v / base):.1f}" r="3" fill="{color}"/>')
        legend.append((f"{scenario} ({base:,.0f}/s at 1)", color, ""))
    for i, (label, color, dash) in enumerate(legend):
        ly = top + 20 + i * 20
        out.append(f'<line x1="{w - right + 10}" y1="{ly}" x2="{w - right + 30}" y2="{ly}" '
                   f'stroke="{color}" stroke-width="2"' + (f' stroke-dasharray="{dash}"' if dash else "") + '/>')
        out.append(f'<text x="{w - right + 35}" y="{ly + 4}" font-size="11">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def raw_put(env, clients, count, payload, prefix):
    """COUNT PUTs of PAYLOAD with CLIENTS threads, each its own connection."""
    next_i = iter(range(count))
    lock = threading.Lock()
    errors = []

    def worker():
        s3 = S3(env.minio.endpoint)
        while True:
            with lock:
                i = next(next_i, None)
            if i is None:
                return
            try:
                s3.request("PUT", f"{prefix}/obj-{i}", body=payload)
            except Exception as e:  # noqa: BLE001 - reported
                errors.append(str(e))
                return

    before = env.counters([])
    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    after = env.counters([])
    if errors:
        raise SystemExit(f"raw PUT failed: {errors[0]}")
    return {"elapsed_s": elapsed, "mb_s": count * len(payload) / 2**20 / elapsed,
            "minio_cpu_s": after["minio_cpu"] - before["minio_cpu"],
            "s3": diff(after["s3"], before["s3"])}


def bigingest(args):
    env = Env(args)
    size = args.size * 2**20
    payload = os.urandom(size)
    rows = []
    try:
        for r in range(args.rounds):
            for clients in [1, 7]:
                for kind in (["raw", "arca"] if r % 2 == 0 else ["arca", "raw"]):
                    load = loadavg()
                    if kind == "raw":
                        prefix = f"raw{r}-{clients}"
                        res = raw_put(env, clients, args.count, payload, prefix)
                        env.s3.delete_prefix(prefix + "/")
                        rec = {"round": r, "kind": "raw S3 PUT", "clients": clients,
                               "objects": args.count, "mb_s": res["mb_s"],
                               "elapsed_s": res["elapsed_s"],
                               "minio_cpu_ms_per_object": 1000 * res["minio_cpu_s"] / args.count,
                               "s3_per_object": {k: v / args.count for k, v in res["s3"].items()},
                               "load_before": load}
                    else:
                        nodes, name = env.nodes("pgs3")
                        node = nodes[0]
                        out = os.path.join(env.work, f"report-big-{r}-{clients}")
                        before = env.counters(nodes)
                        rss, stop = [], threading.Event()

                        def sample():
                            while not stop.is_set():
                                rss.append(rss_mb(node.pid))
                                time.sleep(0.2)
                        sampler = threading.Thread(target=sample)
                        sampler.start()
                        p = bench(env, node, "ingest-large", clients, 3600, out,
                                  ["--size", f"{args.size}M", "--count", str(args.count)])
                        code = p.wait()
                        stop.set()
                        sampler.join()
                        if code != 0:
                            raise SystemExit(f"bench failed: {open(out + '.err').read()[-2000:]}")
                        after = env.counters(nodes)
                        row = row_of(out, "ingest-large")
                        ok = row["ok"]
                        rec = {"round": r, "kind": "arca (PG+S3)", "clients": clients,
                               "objects": ok, "errors": row["errors"],
                               "mb_s": row["mb_per_s"], "elapsed_s": row["elapsed_s"],
                               "mean_ms": row["mean_ms"],
                               "rss_mb_first_max_last": [round(rss[0]), round(max(rss)), round(rss[-1])],
                               "rss_mb_median": round(sorted(rss)[len(rss) // 2]),
                               "arca_cpu_ms_per_object": 1000 * (after["arca_cpu"] - before["arca_cpu"]) / ok,
                               "minio_cpu_ms_per_object": 1000 * (after["minio_cpu"] - before["minio_cpu"]) / ok,
                               "pg_cpu_ms_per_object": 1000 * (after["pg_cpu"] - before["pg_cpu"]) / ok,
                               "s3_per_object": {k: round(v / ok, 2) for k, v in diff(after["s3"], before["s3"]).items()},
                               "load_before": load}
                        env.cleanup(nodes, name, "pgs3")
                    emit(rec)
                    rows.append(rec)
    finally:
        env.stop()
    print("\n| clients | raw S3 PUT MB/s | arca MB/s | % of raw S3 | arca RSS MiB first / max / last |")
    print("|--:|--:|--:|--:|---|")
    for r in range(args.rounds):
        for clients in [1, 7]:
            raw = next(x for x in rows if x["round"] == r and x["clients"] == clients and x["kind"].startswith("raw"))
            arca = next(x for x in rows if x["round"] == r and x["clients"] == clients and x["kind"].startswith("arca"))
            print(f"| {clients} | {raw['mb_s']:.1f} | {arca['mb_s']:.1f} | "
                  f"{100 * arca['mb_s'] / raw['mb_s']:.0f} % | "
                  f"{' / '.join(str(x) for x in arca['rss_mb_first_max_last'])} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["costs", "trips", "nodes", "bigingest", "quota"])
    p.add_argument("arca", help="the arca binary (release build)")
    p.add_argument("work", help="a directory for every data directory (deleted at the end)")
    p.add_argument("--bench", help="the arca binary whose `bench` drives the load (default: ARCA)")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--seconds", type=int, default=20)
    p.add_argument("--objects", type=int, default=200, help="objects ingested before an access row")
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--size", type=int, default=50, help="MiB per object (bigingest)")
    p.add_argument("--json", help="also write every JSON line to this file")
    p.add_argument("--keep", action="store_true", help="keep WORK afterwards")
    p.add_argument("--quota", type=float, default=0.25, help="cores per node (quota)")
    p.add_argument("--index-quota", type=float, default=0.25,
                   help="cores of the indexing node (quota; 0: no indexing node)")
    p.add_argument("--max-nodes", type=int, default=4, help="1 to this many nodes (quota)")
    p.add_argument("--svg", help="the chart of rate against nodes (quota)")
    p.add_argument("--no-search", action="store_true",
                   help="run every node without its search index (ARCA_SEARCH_ENABLED=false)")
    args = p.parse_args()
    global NO_SEARCH
    NO_SEARCH = args.no_search
    if args.rounds is None:
        args.rounds = 1 if args.what in ("bigingest", "trips") else 2
    try:
        {"costs": costs, "trips": trips_cmd, "nodes": nodes_cmd, "bigingest": bigingest,
         "quota": quota_cmd}[args.what](args)
    finally:
        if args.json:
            with open(args.json, "w") as f:
                for rec in OUT:
                    f.write(json.dumps(rec) + "\n")
        if not args.keep:
            shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
