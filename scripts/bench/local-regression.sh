#!/usr/bin/env bash
# The journaled local root before and after a change (issue #15: the OCFL layer now goes
# through the store seam): the same `arca bench` rows against two release builds of arca,
# alternated ROUNDS times, each run on a fresh loop-mounted ext4 (the ext4 inode-recency
# effect makes ingest on a used file system drift; BENCHMARKS.md, Caveats). Run as root.
#
# usage: local-regression.sh BEFORE_BIN AFTER_BIN OUT [ROUNDS] [SECONDS] [IMAGE_GB]
#   e.g. local-regression.sh /tmp/arca-323c36d /tmp/arca-main /tmp/regress 2 20 5
# The load generator is AFTER_BIN's `arca bench` for both. Prints one Markdown row per run
# (objects/s, GET/s, server CPU per operation) and the after ÷ before ratios of the means.
set -euo pipefail
before=$(realpath "$1") after=$(realpath "$2") out=$3
rounds=${4:-2} seconds=${5:-20} gb=${6:-5}
mkdir -p "$out"
img=$(mktemp -u /tmp/arca-regress-XXXX.img) mnt=$(mktemp -d /tmp/arca-regress-mnt-XXXX)
cleanup() { mountpoint -q "$mnt" && umount -l "$mnt"; rm -f "$img"; rmdir "$mnt" 2>/dev/null || true; }
trap cleanup EXIT
for ((i = 1; i <= rounds; i++)); do
  if ((i % 2)); then order="before after"; else order="after before"; fi
  for v in $order; do
    bin=$before; [[ $v == after ]] && bin=$after
    truncate -s "${gb}G" "$img" && mkfs.ext4 -q "$img" && mount -o loop "$img" "$mnt"
    echo "== $v run $i, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/log"
    "$after" bench ingest-object-only ingest-small access-small --spawn --arca-bin "$bin" \
      --data-dir "$mnt" --no-raw --no-progress --duration "$seconds" --count 1000000 \
      --out "$out/$v-$i" > "$out/$v-$i.md" 2> "$out/$v-$i.err"
    # lazily: the run's files are still being deleted in the background
    umount -l "$mnt"; rm -f "$img"
  done
done
python3 - "$out" "$rounds" <<'EOF'
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = ["ingest-object-only", "ingest-small", "access-small"]
res = {}
print("| run | " + " | ".join(f"{r} ops/s | CPU ms/op" for r in rows) + " |")
print("|---|" + "--:|--:|" * len(rows))
for i in range(1, rounds + 1):
    for v in (["before", "after"] if i % 2 else ["after", "before"]):
        rep = json.load(open(f"{out}/{v}-{i}/report.json"))
        cells = []
        for r in rows:
            s = next(x for x in rep["scenarios"] if x["name"] == r)
            tps = s["tps"]
            cpu = s["server"]["mean_cpu_pct"] * 10 / tps if s.get("server") and tps else float("nan")
            res.setdefault((v, r), []).append((tps, cpu))
            cells.append(f"{tps:,.0f} | {cpu:.3f}")
        print(f"| {v} {i} | " + " | ".join(cells) + " |")
mean = lambda xs: sum(xs) / len(xs)
cells = []
for r in rows:
    b, a = res[("before", r)], res[("after", r)]
    cells.append(f"**{mean([x[0] for x in a]) / mean([x[0] for x in b]):.2f}** | "
                 f"**{mean([x[1] for x in a]) / mean([x[1] for x in b]):.2f}**")
print("| after ÷ before | " + " | ".join(cells) + " |")
EOF
