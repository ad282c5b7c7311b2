#!/usr/bin/env bash
# device call 10 (carry .gpu): the platform on the GPU host, a 200k x 40 subtract through it twice,
# FRESH, three lanes: the tables on the device, then with ABACUS_HBM_BUDGET_GB small enough that
# every model's tables go to host memory (the train trial's metrics say so); the removed sets and AUCs
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
P=/tmp/abacus-gpu
export PATH=$P/bin:$PATH
nvidia-smi -L
for mode in device offload; do
  if [ $mode = offload ]; then export ABACUS_HBM_BUDGET_GB=${BUDGET:-0.004}; else unset ABACUS_HBM_BUDGET_GB; fi
  bash scripts/gpu-host.sh down > /dev/null 2>&1
  FRESH=1 OUT=$O/$mode timeout 170 bash bench/gpu-lanes.sh 200000 40 1:3 > "$O/$mode.txt" 2>&1
  echo "$mode: $(grep -E 'rc [0-9]' "$O/$mode.txt")"
  f=$(ls -t "$O/$mode"/subtract-cuda-*.json 2>/dev/null | head -1)
  [ -n "$f" ] || { tail -20 "$O/$mode.txt"; tail -30 "$O/$mode"/bench-*.err; continue; }
  id=$(node -e 'console.log(require(process.argv[1]).experimentId)' "$f")
  abacus experiment show "$id" --json > "$O/$mode-experiment.json" 2> "$O/$mode-experiment.err"
  node -e '
    const e = require(process.argv[1]), b = require(process.argv[2]);
    console.log(process.argv[3], "status", e.status, "ms", b.experimentMs, "removable", JSON.stringify(e.result && e.result.removable),
      "fullAuc", e.result && e.result.full && e.result.full.auc, "confirmedAuc", e.result && e.result.confirmed && e.result.confirmed.auc, e.error || "");
    for (const t of e.trials || []) if (t.kind === "train") console.log(" ", t.kind, t.params && t.params.role, "embeddingTables", JSON.stringify(t.metrics && t.metrics.embeddingTables));
  ' "$O/$mode-experiment.json" "$f" "$mode"
done
bash scripts/gpu-host.sh down > /dev/null 2>&1
