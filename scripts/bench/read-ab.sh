#!/usr/bin/env bash
# Alternates arca bench's read scenarios (container Turtle, 20 KiB binary) between two
# release builds, ROUNDS times, on tmpfs; prints GET/s and the server's CPU ms per GET.
# usage: read-ab.sh OUTDIR BIN_A BIN_B [ROUNDS]
set -euo pipefail
out=$1; a=$2; b=$3; rounds=${4:-3}
mkdir -p "$out" /dev/shm/bt
for r in $(seq 1 "$rounds"); do
  for bin in "$a" "$b"; do
    name=$(basename "$bin")
    TMPDIR=/dev/shm/bt ARCA_BIN=$bin "$bin" bench access-metadata access-small --spawn --no-raw \
      --duration 15 --objects 2000 --no-progress --out "$out/$name-$r" > "$out/$name-$r.log" 2>&1
    echo "round $r $name: $(grep -E '^\| access-(metadata|small)' "$out/$name-$r/report.md" \
      | awk -F'|' '{printf "%s GET/s=%s server_cpu_ms=%s  ", $2, $6, $11}')"
  done
done
