#!/usr/bin/env bash
# device call 4: the final defaults (IV waits for builds only up to ABACUS_SCORE_BUILD_WAIT_CELLS):
# 1M x 40 twice (waits), 10M x 100 once (1e9 cells: does not wait)
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
export PATH=/tmp/abacus-gpu/bin:$PATH
P=/tmp/abacus-gpu
T0=$(date +%s)
at() { echo "$1 at $(( $(date +%s) - T0 )) s"; }
nvidia-smi -L; nproc
mkdir -p /tmp/l
for k in 1 2; do
  FRESH=1 OUT=/tmp/l timeout 100 bash bench/gpu-lanes.sh 1000000 40 1:3 > /tmp/l/lanes-$k.txt 2>&1
  f=$(ls -t /tmp/l/subtract-cuda-*.json | head -1); mv "$f" "$O/subtract-cuda-1000000x40-default-$(date +%H%M%S).json"
  at "1M run $k"
done
ABACUS_RUNTIME_BACKEND=cuda ABACUS_GPU_LANES=3 ABACUS_WORKER_CONCURRENCY=2 bash scripts/gpu-host.sh up > /tmp/up.log 2>&1 || { tail -20 /tmp/up.log; exit 1; }
for d in $P/data $P/host-*; do [ -d "$d" ] && rm -rf "$d/built" "$d/models"; done
mkdir -p /tmp/s
REGISTER_AT=/tmp/sets OUT=/tmp/s bash bench/gpu-scale.sh 10000000 100 280 > /tmp/s/scale.txt 2>&1
cp /tmp/s/scale-subtract-10000000x100.json "$O/subtract-cuda-10000000x100-default.json"
at "10M"; grep -E "bench: rc" /tmp/s/scale.txt
python3 - "$O" <<'PY'
import json,glob,sys
for f in sorted(glob.glob(sys.argv[1]+'/subtract-*.json')):
    d=json.load(open(f)); b=d['base']['build'] or {}
    tr={t['kind']+(t['role'] or ''):(t['startMs'],t['ms'],(t.get('timings') or {}).get('buildWaitMs')) for t in d['trials']}
    print(f.split('/')[-1], 'e2e', d['experimentMs'], 'build', round(b.get('wallMs',0)), 'encode', round(b.get('encodeMs',0)), 'scan', round(b.get('scanMs',0)), 'order', round(b.get('orderMs',0)), 'removable', d['result']['removable'], 'auc', d['result']['confirmedAuc'], tr)
PY
