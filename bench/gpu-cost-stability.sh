#!/usr/bin/env bash
# The compute-cost ledger's stability on one GPU host: the cost-stability bench (the demo world's feed
# model inputs measured twice per design, rankings compared by Spearman's rho, divide's MILP selection
# for tiers 0.7 / 0.5 / 0.3 compared) on the CUDA backend and on the host's CPU, RUNS times each, with
# the ledger's defaults per backend (rows, timing length, clock). Plans: same (both measurements with
# the ledger's fixed plan, as two measurements through the API) and/or fresh (the second with another
# synthetic batch and other subsets: stricter).
# Needs libs/runtime/bench/dist (bash libs/runtime/bench/build-runner.sh) and a node (the .gpu
# bundle's is unpacked when there is none). One JSON line per run goes to $OUT/cost-stability.jsonl.
#   bash bench/gpu-cost-stability.sh [runs=3] [repeats=9] [plans=same,fresh] [backends=cuda,cpu] [designs=fitted,paired] [world seed=11] [world rows=60000]
set -uo pipefail
OUT="${OUT:-$PWD/bench-out}"
RUNS="${1:-3}"
REPEATS="${2:-9}"
IFS=, read -r -a PLANS <<<"${3:-same,fresh}"
IFS=, read -r -a BACKENDS <<<"${4:-cuda,cpu}"
DESIGNS="${5:-fitted,paired}"
# the world measured: the bench's default (seed 11, 60,000 rows), or e.g. 7 400000 (the quick start's demo world)
WORLD_SEED="${6:-11}"
WORLD_ROWS="${7:-60000}"
mkdir -p "$OUT"
NODE="$(command -v node || true)"
if [ -z "$NODE" ]; then
  NODE=/tmp/abacus-stream-node
  [ -x "$NODE" ] || { xz -dc .gpu/node.xz >"$NODE.tmp" && chmod 755 "$NODE.tmp" && mv "$NODE.tmp" "$NODE"; }
fi
DIST=libs/runtime/bench/dist
for backend in "${BACKENDS[@]}"; do
  for plan in "${PLANS[@]}"; do
    for k in $(seq 1 "$RUNS"); do
      echo "[cost-stability] $backend, plan $plan, run $k"
      "$NODE" "$DIST/cost-stability.js" "$backend" 0 "$REPEATS" 0 auto "$DESIGNS" 0 "$plan" "$WORLD_SEED" "$WORLD_ROWS" 2>>"$OUT/cost-stability.err" | tail -n 1 >>"$OUT/cost-stability.jsonl"
    done
  done
done
"$NODE" -e '
  for (const l of require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n")) {
    const r = JSON.parse(l);
    for (const d of ["fitted", "paired"]) if (r[d]) console.log(`${r.backend} plan ${r.plan} ${d}: all tied ${r[d].allTied}, spearman medians ${r[d].spearman.medians}, shares ${r[d].spearman.shares}, below resolution ${r[d].belowResolution}, selection unchanged ${r[d].selectionUnchanged}, ${r[d].seconds} s`);
  }
' "$OUT/cost-stability.jsonl" | tee "$OUT/cost-stability-summary.txt"
