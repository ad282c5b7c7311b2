#!/usr/bin/env bash
# device call 2: 10M x 100 subtract on one GPU, IV waiting for the build (default) and beside it (wait 0)
set -u
O=${OUT:-/tmp/o}; mkdir -p "$O"
export PATH=/tmp/abacus-gpu/bin:$PATH
P=/tmp/abacus-gpu
T0=$(date +%s)
at() { echo "$1 at $(( $(date +%s) - T0 )) s"; }
nvidia-smi -L; nproc; free -g | head -2
stop_workers() { for f in $P/run/worker.pid $P/run/worker-*.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null; done; sleep 2; }
for w in ${WAITS:-120000 0}; do
  stop_workers
  ABACUS_SCORE_BUILD_WAIT_MS=$w ABACUS_RUNTIME_BACKEND=cuda ABACUS_GPU_LANES=3 ABACUS_WORKER_CONCURRENCY=2 bash scripts/gpu-host.sh up > /tmp/up-$w.log 2>&1 || { tail -20 /tmp/up-$w.log; exit 1; }
  for d in $P/data $P/host-*; do [ -d "$d" ] && rm -rf "$d/built" "$d/models"; done
  mkdir -p /tmp/s-$w
  REGISTER_AT=/tmp/sets OUT=/tmp/s-$w bash bench/gpu-scale.sh 10000000 100 280 > /tmp/s-$w/scale.txt 2>&1
  cp /tmp/s-$w/scale-subtract-10000000x100.json "$O/subtract-cuda-10000000x100-wait$w.json" 2>/dev/null
  cp /tmp/s-$w/scale-trials.txt "$O/trials-10000000x100-wait$w.txt" 2>/dev/null
  at "wait $w done"
  grep -E "bench: rc" /tmp/s-$w/scale.txt
done
python3 - "$O" <<'PY'
import json,glob,sys
for f in sorted(glob.glob(sys.argv[1]+'/subtract-*.json')):
    d=json.load(open(f)); b=d['base']['build'] or {}
    tr={t['kind']+(t['role'] or ''):(t['startMs'],t['ms'],(t.get('timings') or {}).get('buildWaitMs')) for t in d['trials']}
    print(f.split('/')[-1], 'e2e', d['experimentMs'], 'build', round(b.get('wallMs',0)), 'encode', round(b.get('encodeMs',0)), 'scan', round(b.get('scanMs',0)), 'order', round(b.get('orderMs',0)), 'removable', d['result']['removable'], tr)
PY
