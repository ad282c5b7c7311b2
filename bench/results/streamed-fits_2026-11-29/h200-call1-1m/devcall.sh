#!/usr/bin/env bash
# device call 1: the 1M x 40 subtract with the base model's first epoch shuffled against in order (the fit starting on the
# samples as they are built), alternated, three each, FRESH=1
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
export PATH=/tmp/abacus-gpu/bin:$PATH
T0=$(date +%s)
at() { echo "$1 at $(( $(date +%s) - T0 )) s"; }
nvidia-smi -L; nproc; lscpu | grep 'Model name'
mkdir -p /tmp/l
for fe in shuffled inOrder shuffled inOrder shuffled inOrder; do
  FIRST_EPOCH=$fe FRESH=1 OUT=/tmp/l timeout 100 bash bench/gpu-lanes.sh 1000000 40 1:3 > /tmp/l/lanes-$fe.txt 2>&1
  f=$(ls -t /tmp/l/subtract-cuda-*.json | head -1); mv "$f" "$O/subtract-cuda-1000000x40-$fe-$(date +%H%M%S).json"
  at "1M $fe"
done
cp /tmp/l/worker.log "$O/worker-1m.log" 2>/dev/null
python3 - "$O" <<'PY'
import json,glob,sys
for f in sorted(glob.glob(sys.argv[1]+'/subtract-*.json')):
    d=json.load(open(f)); b=d['base']['build'] or {}; fit=d['base']['fit'] or {}
    tr={t['kind']+(t['role'] or ''):(t['startMs'],t['ms']) for t in d['trials']}
    print(f.split('/')[-1], 'e2e', d['experimentMs'], 'build', round(b.get('wallMs',0)), 'encode', round(b.get('encodeMs',0)), 'ranges', b.get('ranges'),
          'stream', d['base'].get('streamedBuild'), 'fit', fit.get('trainMs'), fit.get('trainPhases'), 'epochs', d['base']['epochs'],
          'removable', d['result']['removable'], 'auc', d['result']['fullAuc'], d['result']['confirmedAuc'], tr)
PY
