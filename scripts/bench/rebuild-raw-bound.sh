#!/usr/bin/env bash
# The simplest program doing a rebuild's I/O on an OCFL root in Fedora's layout: `find` over
# each first-level directory (32 at a time) and `cat` of the files `arca rebuild` reads
# (object-root inventories, `.fcrepo` headers, RDF content). Run it cold, as root:
#   sync; echo 3 > /proc/sys/vm/drop_caches; /usr/bin/time -v scripts/bench/rebuild-raw-bound.sh ROOT
set -euo pipefail
cd "${1:?usage: rebuild-raw-bound.sh OCFL_ROOT}"
ls | grep -v '^extensions$' \
  | xargs -P 32 -n 8 sh -c 'find "$@" \( -name inventory.json -not -path "*/v[0-9]*/*" \) -o -path "*/content/.fcrepo/*" -o \( -name "*.nt" -path "*/content/*" \) | xargs cat | wc -c' _ \
  | awk '{s += $1} END {print "bytes of file content read:", s}'
