#!/usr/bin/env bash
# Queries beside updates on data the search study loaded (issue #12): `ab -k -c 3` on q3 while a
# client sends SPARQL updates to records one after another. The server is started here on
# DATA_DIR with the caller's environment (e.g. TOKIO_WORKER_THREADS) and stopped after; give it
# the study's ARCA_EXTERNAL_CONTENT_ALLOWED, or updates re-index records without their PDFs'
# text (the study loads PDFs as external content).
#
# Usage:
#   scripts/bench/queries-beside-updates.sh measure ARCA_BIN DATA_DIR [SECONDS]
#       5 s of warm-up, then SECONDS (default 30) measured: queries/s, p50/p90/p99, updates,
#       server CPU.
#   scripts/bench/queries-beside-updates.sh cut-merge ARCA_BIN DATA_DIR
#       An online reindex, the server killed (-9) once the merge into one has started: the
#       next start merges ~190 segments again (and `measure` then runs beside that merge).
#   scripts/bench/queries-beside-updates.sh until-merged ARCA_BIN DATA_DIR
#       As `measure`, until the server logs the end of its merge into one: how long it took.
# Needs ab (apache2-utils), curl and python3; listens on 127.0.0.1:18080.
set -euo pipefail
mode="$1" bin="$2" data="$3" seconds="${4:-30}"
base=http://127.0.0.1:18080/rest
auth=fedoraAdmin:fedoraAdmin
log="$(mktemp)"

start_server() {
    ARCA_DATA="$data" ARCA_LISTEN=127.0.0.1:18080 "$bin" serve >"$log" 2>&1 &
    server=$!
    until curl -s -o /dev/null -u "$auth" "$base/"; do sleep 0.2; done
}

# Sequential updates (a new dc:subject) of the records ABSTRACT:animal finds, for argv[1] seconds;
# prints how many.
updater='
import base64, json, sys, time, urllib.request
secs = float(sys.argv[1])
auth = "Basic " + base64.b64encode(b"fedoraAdmin:fedoraAdmin").decode()
base = "http://127.0.0.1:18080/rest/"
q = urllib.request.Request(base + "fcr:search?q=ABSTRACT:animal&limit=500&fields=fedora_id",
                           headers={"Authorization": auth, "Accept": "application/json"})
ids = [i["fedora_id"] for i in json.load(urllib.request.urlopen(q))["items"]
       if not i["fedora_id"].endswith("/pdf")]
end, k = time.time() + secs, 0
while time.time() < end:
    body = "PREFIX dc: <http://purl.org/dc/elements/1.1/> INSERT DATA { <> dc:subject \"u%f\" }" % time.time()
    r = urllib.request.Request(ids[k % len(ids)], data=body.encode(), method="PATCH",
                               headers={"Authorization": auth, "Content-Type": "application/sparql-update"})
    urllib.request.urlopen(r).read()
    k += 1
    time.sleep(0.002)
print(k)
'

q3='%28ABSTRACT%3A%22fish%22%20OR%20FIRSTNAME%3A%22james%22%29%20AND%20ALL%3A%22university%22'
query="$base/fcr:search?q=$q3&limit=10&offset=0"
queries() { ab -k -c 3 -t "$1" -n 100000000 -e "$log.csv" -A "$auth" -H "Accept: application/json" "$query"; }
# The latency at percentile $1 of the last `queries` (ms).
percentile() { awk -F, -v p="$1" '$1 == p {print $2}' "$log.csv"; }
cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }

case "$mode" in
measure)
    start_server
    queries 5 >/dev/null 2>&1
    before=$(cpu)
    python3 -c "$updater" "$seconds" >"$log.updates" &
    queries "$seconds" >"$log.ab" 2>&1
    wait $!
    echo "$(awk '/Requests per second/ {print $4}' "$log.ab") queries/s," \
        "p50 / p90 / p99 $(percentile 50) / $(percentile 90) / $(percentile 99) ms," \
        "$(cat "$log.updates") updates in $seconds s, server CPU $(( $(cpu) - before )) ticks"
    kill "$server"; wait "$server" || true
    ;;
cut-merge)
    start_server
    curl -s -u "$auth" -X POST "$base/fcr:search/reindex" >/dev/null
    until curl -s -u "$auth" "$base/fcr:search/status" | grep -q '"merging": *true'; do sleep 1; done
    kill -9 "$server"; wait "$server" || true
    echo "the reindex's merge into one was cut short"
    ;;
until-merged)
    start_server
    started=$(date +%s.%N)
    # Started directly (not through the functions' subshells), so that the signals reach them.
    python3 -c "$updater" 3600 >"$log.updates" &
    updater=$!
    ab -k -c 3 -t 3600 -n 100000000 -A "$auth" -H "Accept: application/json" "$query" >"$log.ab" 2>&1 &
    ab=$!
    # Merged, or failed for good (a retry logs "failed: merging the segments there are now").
    until grep -qE "merged into one segment|one segment failed error=" "$log"; do sleep 0.2; done
    ended=$(date +%s.%N)
    kill -INT "$ab"; wait "$ab" || true
    kill "$updater"; wait "$updater" || true
    grep "merg" "$log" | cut -c1-220
    echo "merged after $(echo "$ended - $started" | bc) s; $(awk '/Requests per second/ {print $4}' "$log.ab") queries/s meanwhile"
    kill "$server"; wait "$server" || true
    ;;
*)
    echo "usage: $0 measure|cut-merge|until-merged ARCA_BIN DATA_DIR [SECONDS]" >&2
    exit 2
    ;;
esac
rm -f "$log" "$log.updates" "$log.ab" "$log.csv"
