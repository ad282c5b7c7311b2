#!/usr/bin/env bash
# device call 7 (carry .gpu): after the reproducible steps (no float atomics in the output layer's
# backward and the wide part) and the warm checks' metrics on the GPU: the 1M x 40 subtract twice
# (FRESH=1), then the calibration worlds of 2026-11-28 (seeds 9001-) on cuda for the rest of the call
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
P=/tmp/abacus-gpu
export PATH=$P/bin:$PATH
t0=$(date +%s)
nvidia-smi -L; nproc
mkdir -p /tmp/l
for r in 1 2; do
  FRESH=1 OUT=/tmp/l timeout 100 bash bench/gpu-lanes.sh 1000000 40 1:3 > /tmp/l/lanes-$r.txt 2>&1
  f=$(ls -t /tmp/l/subtract-cuda-*.json | head -1); mv "$f" "$O/subtract-cuda-1000000x40-run$r-$(date +%H%M%S).json"
done
python3 - "$O" <<'PY'
import json,glob,sys
for f in sorted(glob.glob(sys.argv[1]+'/subtract-*.json')):
    d=json.load(open(f)); t=d['prune']['timings']
    print(f.split('/')[-1], 'e2e', d['experimentMs'], 'retrain', t['retrainMs'], 'removable', d['result']['removable'], 'auc', d['result']['fullAuc'], d['result']['confirmedAuc'], json.dumps(d['stages']))
PY
bash scripts/gpu-host.sh down > /dev/null 2>&1
ABACUS_WORKER_CONCURRENCY=8 ABACUS_RUNTIME_BACKEND=cuda bash scripts/gpu-host.sh up > "$O/up.log" 2>&1 || tail -5 "$O/up.log"
( cd "$O" && timeout $(( 560 - ($(date +%s) - t0) )) abacus bench calibration --worlds 100 --seed 9001 --rows 40000 --concurrency 6 --resume "$O/cal-9001-cuda.jsonl" --json --out "$O/cal-9001-cuda.json" > "$O/cal.log" 2>&1 ); echo "calibration rc $?"
echo "worlds finished: $(grep -c '' "$O/cal-9001-cuda.jsonl" 2>/dev/null)"
