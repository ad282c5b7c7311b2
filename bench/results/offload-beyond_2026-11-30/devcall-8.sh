#!/usr/bin/env bash
# device call 8 (carry .gpu; one H200): the subtract through the platform again on this session's code (the new staging,
# block counts): tables on the GPU, then a budget of 0.00045 GiB (a cache of 4,473 of 5,820 rows; every full model offloaded)
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
P=/tmp/abacus-gpu
export PATH=$P/bin:$PATH
for b in none 0.00045; do
  mode=offload-$b; [ $b = none ] && mode=device
  if [ $b = none ]; then unset ABACUS_HBM_BUDGET_GB; else export ABACUS_HBM_BUDGET_GB=$b; fi; export ABACUS_CUDA_VERBOSE=1
  bash scripts/gpu-host.sh down > /dev/null 2>&1
  FRESH=1 OUT=$O/$mode timeout 130 bash bench/gpu-lanes.sh 200000 40 1:3 > "$O/$mode.txt" 2>&1
  echo "$mode: $(grep -E 'rc [0-9]' "$O/$mode.txt")"
  grep -h 'host memory\|device cache\|offloaded' "$O/$mode/worker.log" $P/logs/worker*.log 2>/dev/null | sort | uniq -c | head -5
  f=$(ls -t "$O/$mode"/subtract-cuda-*.json 2>/dev/null | head -1)
  [ -n "$f" ] || { tail -5 "$O/$mode.txt"; tail -5 "$O/$mode"/bench-*.err; continue; }
  id=$(node -e 'console.log(require(process.argv[1]).experimentId)' "$f")
  abacus experiment show "$id" --json > "$O/$mode-experiment.json" 2> "$O/$mode-experiment.err"
  node -e '
    const e = require(process.argv[1]), b = require(process.argv[2]);
    console.log(process.argv[3], "status", e.status, "ms", b.experimentMs, "removable", JSON.stringify(e.result && e.result.removable),
      "fullAuc", e.result && e.result.full && e.result.full.auc, "confirmedAuc", e.result && e.result.confirmed && e.result.confirmed.auc, e.error || "");
    for (const t of e.trials || []) console.log(" ", t.kind, t.params && t.params.role, "embeddingTables", JSON.stringify(t.metrics && t.metrics.embeddingTables));
  ' "$O/$mode-experiment.json" "$f" "$mode"
done
bash scripts/gpu-host.sh down > /dev/null 2>&1
