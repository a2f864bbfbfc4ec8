#!/usr/bin/env bash
# The floor of a binary GET (raw_get: hyper, the socket writes, the 20 KiB file read) and
# arca builds, alternated, ROUNDS times, on tmpfs: GET/s and the server's CPU ms per GET of
# `arca bench access-small`.
# usage: floor-ab.sh OUTDIR ROUNDS ARCA_BIN...
# Needs `cargo build --release -p arca-bench --example raw_get` (CARGO_TARGET_DIR respected).
set -euo pipefail
out=$1; rounds=$2; shift 2
raw=${CARGO_TARGET_DIR:-target}/release/examples/raw_get
bench=$1  # the load generator: the first build's `arca bench`
mkdir -p "$out" /dev/shm/bt
row() { grep -E '^\| access-small' "$1/report.md" | awk -F'|' '{printf "GET/s=%s cpu_ms=%s", $6, $11}'; }
for r in $(seq 1 "$rounds"); do
  rm -rf /dev/shm/raw-get; mkdir -p /dev/shm/raw-get
  "$raw" /dev/shm/raw-get 127.0.0.1:8099 > "$out/raw-$r.server.log" 2>&1 &
  pid=$!
  sleep 1
  "$bench" bench access-small --url http://127.0.0.1:8099/rest/ --pid "$pid" --no-raw \
    --duration 15 --objects 2000 --no-progress --out "$out/raw-$r" > "$out/raw-$r.log" 2>&1
  kill "$pid"; wait "$pid" 2>/dev/null || true
  line="round $r raw_get: $(row "$out/raw-$r")"
  for bin in "$@"; do
    name=$(basename "$bin")
    TMPDIR=/dev/shm/bt ARCA_BIN=$bin "$bin" bench access-small --spawn --no-raw --duration 15 \
      --objects 2000 --no-progress --out "$out/$name-$r" > "$out/$name-$r.log" 2>&1
    line="$line | $name: $(row "$out/$name-$r")"
  done
  echo "$line"
done
rm -rf /dev/shm/raw-get
