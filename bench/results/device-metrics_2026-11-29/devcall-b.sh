#!/usr/bin/env bash
# device call 3 (carry .gpu): the 1M x 40 subtract through the platform with the warm checks' metrics on
# the host and on the device (ABACUS_CUDA_EVAL_METRICS), alternated, two each, FRESH=1, one worker, 3 lanes
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
export PATH=/tmp/abacus-gpu/bin:$PATH
nvidia-smi -L; nproc; lscpu | grep 'Model name'
mkdir -p /tmp/l
for w in host device host device; do
  ABACUS_CUDA_EVAL_METRICS=$w FRESH=1 OUT=/tmp/l timeout 110 bash bench/gpu-lanes.sh 1000000 40 1:3 > /tmp/l/lanes-$w.txt 2>&1
  f=$(ls -t /tmp/l/subtract-cuda-*.json | head -1); mv "$f" "$O/subtract-cuda-1000000x40-metrics-$w-$(date +%H%M%S).json"
done
cp /tmp/l/worker.log "$O/worker-1m.log" 2>/dev/null
python3 - "$O" <<'PY'
import json,glob,sys
for f in sorted(glob.glob(sys.argv[1]+'/subtract-*.json')):
    d=json.load(open(f)); t=d['prune']['timings']
    print(f.split('/')[-1], 'e2e', d['experimentMs'], 'prune retrain', t['retrainMs'], 'fits', t['retrainFits'], 'batches', t['retrainBatches'],
          'warm train/eval/queued', t['warmTrainMs'], t['warmEvalMs'], t['warmQueuedMs'], 'removable', d['result']['removable'],
          'auc', d['result']['fullAuc'], d['result']['confirmedAuc'], 'stages', json.dumps(d['stages']))
PY
