#!/usr/bin/env bash
# device call 2: the 10M x 100 subtract (14 day partitions by reference), the base model's first epoch
# shuffled, then in order (its fit starting on the samples as they are built); empty caches before each
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
export PATH=/tmp/abacus-gpu/bin:$PATH
P=/tmp/abacus-gpu
T0=$(date +%s)
at() { echo "$1 at $(( $(date +%s) - T0 )) s"; }
nvidia-smi -L; nproc
ABACUS_RUNTIME_BACKEND=cuda ABACUS_GPU_LANES=3 ABACUS_WORKER_CONCURRENCY=2 bash scripts/gpu-host.sh up > /tmp/up.log 2>&1 || { tail -20 /tmp/up.log; exit 1; }
for fe in shuffled inOrder; do
  for d in $P/data $P/host-*; do [ -d "$d" ] && rm -rf "$d/built" "$d/models"; done
  mkdir -p /tmp/s-$fe
  FIRST_EPOCH=$fe REGISTER_AT=/tmp/sets OUT=/tmp/s-$fe bash bench/gpu-scale.sh 10000000 100 250 > /tmp/s-$fe/scale.txt 2>&1
  cp /tmp/s-$fe/scale-subtract-10000000x100-$fe.json "$O/"; cp /tmp/s-$fe/scale-trials.txt "$O/trials-10000000x100-$fe.txt"
  at "10M $fe"; grep -E "bench: rc" /tmp/s-$fe/scale.txt
done
cp $P/logs/worker.log "$O/worker-10m.log" 2>/dev/null
python3 - "$O" <<'PY'
import json,glob,sys
for f in sorted(glob.glob(sys.argv[1]+'/scale-subtract-*.json')):
    d=json.load(open(f)); b=d['base']['build'] or {}; fit=d['base']['fit'] or {}
    tr={t['kind']+(t['role'] or ''):(t['startMs'],t['ms']) for t in d['trials']}
    print(f.split('/')[-1], 'e2e', d['experimentMs'], 'build', round(b.get('wallMs',0)), 'encode', round(b.get('encodeMs',0)), 'ranges', b.get('ranges'),
          'stream', d['base'].get('streamedBuild'), 'fit', fit.get('trainMs'), fit.get('trainPhases'), 'epochs', d['base']['epochs'],
          'removable', d['result']['removable'], 'auc', d['result']['fullAuc'], d['result']['confirmedAuc'], tr)
PY
