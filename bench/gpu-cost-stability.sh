#!/usr/bin/env bash
# The compute-cost ledger's stability on one GPU host: the cost-stability bench (the demo world's feed
# model inputs measured twice per design, rankings compared by Spearman's rho, divide's MILP selection
# for tiers 0.7 / 0.5 / 0.3 compared) on the CUDA backend and on the host's CPU, RUNS times each.
# Needs libs/runtime/bench/dist (bash libs/runtime/bench/build-runner.sh) and a node (the .gpu
# bundle's is unpacked when there is none). One JSON line per run goes to $OUT/cost-stability.jsonl.
#   bash bench/gpu-cost-stability.sh [runs=3] [repeats=9] [cuda batch rows=4096] [cpu batch rows=4096]
set -uo pipefail
OUT="${OUT:-$PWD/bench-out}"
RUNS="${1:-3}"
REPEATS="${2:-9}"
CUDA_ROWS="${3:-4096}"
CPU_ROWS="${4:-4096}"
mkdir -p "$OUT"
NODE="$(command -v node || true)"
if [ -z "$NODE" ]; then
  NODE=/tmp/abacus-stream-node
  [ -x "$NODE" ] || { xz -dc .gpu/node.xz >"$NODE.tmp" && chmod 755 "$NODE.tmp" && mv "$NODE.tmp" "$NODE"; }
fi
DIST=libs/runtime/bench/dist
for backend in cuda cpu; do
  threads=0
  rows=$CUDA_ROWS
  [ "$backend" = cpu ] && rows=$CPU_ROWS
  for k in $(seq 1 "$RUNS"); do
    echo "[cost-stability] $backend run $k"
    "$NODE" "$DIST/cost-stability.js" "$backend" "$threads" "$REPEATS" 25 auto fitted,paired "$rows" 2>>"$OUT/cost-stability.err" | tail -n 1 >>"$OUT/cost-stability.jsonl"
  done
done
"$NODE" -e '
  for (const l of require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n")) {
    const r = JSON.parse(l);
    for (const d of ["fitted", "paired"]) if (r[d]) console.log(`${r.backend} ${r.rows} rows ${d}: all tied ${r[d].allTied}, spearman medians ${r[d].spearman.medians}, shares ${r[d].spearman.shares}, below resolution ${r[d].belowResolution}, selection unchanged ${r[d].selectionUnchanged}, ${r[d].seconds} s`);
  }
' "$OUT/cost-stability.jsonl" | tee "$OUT/cost-stability-summary.txt"
