#!/usr/bin/env bash
# device call 1: 1M x 40 subtract, IV waiting for the build (default) against beside it (wait 0), alternated
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
export PATH=/tmp/abacus-gpu/bin:$PATH
T0=$(date +%s)
at() { echo "$1 at $(( $(date +%s) - T0 )) s"; }
nvidia-smi -L; nproc; lscpu | grep 'Model name'
mkdir -p /tmp/l
for w in 120000 0 120000 0 120000 0; do
  ABACUS_SCORE_BUILD_WAIT_MS=$w FRESH=1 OUT=/tmp/l timeout 100 bash bench/gpu-lanes.sh 1000000 40 1:3 > /tmp/l/lanes-$w.txt 2>&1
  f=$(ls -t /tmp/l/subtract-cuda-*.json | head -1); mv "$f" "$O/subtract-cuda-1000000x40-wait$w-$(date +%H%M%S).json"
  at "wait $w done"
done
python3 - "$O" <<'PY'
import json,glob,sys
for f in sorted(glob.glob(sys.argv[1]+'/subtract-*.json')):
    d=json.load(open(f)); b=d['base']['build'] or {}
    tr={t['kind']+(t['role'] or ''):(t['startMs'],t['ms'],(t.get('timings') or {}).get('buildWaitMs')) for t in d['trials']}
    print(f.split('/')[-1], 'e2e', d['experimentMs'], 'build', round(b.get('wallMs',0)), 'encode', round(b.get('encodeMs',0)), 'scan', round(b.get('scanMs',0)), 'removable', d['result']['removable'], 'auc', d['result']['confirmedAuc'], tr)
PY
