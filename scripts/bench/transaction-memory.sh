#!/usr/bin/env bash
# What a transaction's commit holds in memory (issue #8): the server's peak RSS (VmHWM, the
# kernel's high-water mark of the whole process) after committing a transaction of N new
# containers (`arca bench transaction`, one fresh data directory each), and after
# committing a transaction holding one binary of GB GiB (sent with curl from a file of
# random bytes). Release build expected.
#
# usage: transaction-memory.sh ARCA WORK [N...] [--binary-gb GB]
#   e.g. transaction-memory.sh target/release/arca /tmp/txmem 1000 10000 30000 --binary-gb 1
set -euo pipefail
arca=$(realpath "$1") work=$2
shift 2
counts=() gb=
while (($#)); do
  case $1 in
    --binary-gb) gb=$2; shift 2 ;;
    *) counts+=("$1"); shift ;;
  esac
done
mkdir -p "$work"
work=$(realpath "$work")
echo "| resources | note of the row (RSS before, with everything staged, peak after the commit) | commit ms |"
echo "|--:|---|--:|"
for n in "${counts[@]}"; do
  rm -rf "$work/data" "$work/out"
  "$arca" bench transaction --objects "$n" --spawn --arca-bin "$arca" --data-dir "$work/data" \
    --no-raw --no-progress --out "$work/out" > /dev/null 2> "$work/bench-$n.err"
  python3 - "$work/out/report.json" "$n" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
row = next(s for s in report["scenarios"] if s["name"].startswith("tx-commit"))
print(f"| {int(sys.argv[2]):,} | {row.get('note')} | {row['mean_ms']:,.0f} |")
EOF
done
[[ -z $gb ]] && exit 0

# One binary of GB GiB in a transaction.
rm -rf "$work/data"
head -c "$((gb * 1024))M" /dev/urandom > "$work/big.bin"
"$arca" serve --listen 127.0.0.1:0 --data "$work/data" 2> "$work/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$work/big.bin"' EXIT
for _ in $(seq 100); do
  base=$(grep -o 'arca listening on [^ ]*' "$work/serve.log" | awk '{print $4}' || true)
  [[ -n $base ]] && break
  sleep 0.1
done
base=${base%/}
auth="fedoraAdmin:fedoraAdmin"
hwm() { awk '/VmHWM/ {printf "%.1f MB", $2 / 1024}' "/proc/$pid/status"; }
tx=$(curl -sS -u "$auth" -X POST -D - -o /dev/null "$base/fcr:tx" | tr -d '\r' | awk 'tolower($1) == "location:" {print $2}')
before=$(hwm)
start=$(date +%s.%N)
curl -sS -u "$auth" -X PUT -H "Atomic-ID: $tx" -H "Content-Type: application/octet-stream" \
  -T "$work/big.bin" -o /dev/null -w '%{http_code}\n' "$base/big" > "$work/put.code"
staged=$(hwm)
code=$(curl -sS -u "$auth" -X PUT -o /dev/null -w '%{http_code}' "$tx")
end=$(date +%s.%N)
got=$(curl -sS -u "$auth" "$base/big" | sha256sum | cut -d' ' -f1)
want=$(sha256sum < "$work/big.bin" | cut -d' ' -f1)
echo
echo "binary of $gb GiB in a transaction: PUT $(cat "$work/put.code"), commit $code," \
  "$(echo "$end - $start" | bc) s for both; peak RSS $before before," \
  "$staged after staging it, $(hwm) after the commit; read back" \
  "$([[ $got == "$want" ]] && echo identical || echo DIFFERENT)"
