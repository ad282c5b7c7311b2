#!/usr/bin/env bash
# one device call: calibration resume, add with real candidates, 1M x 40 subtract x2
set -u
O=${OUT:-/tmp/o}; mkdir -p $O
export PATH=/tmp/abacus-gpu/bin:$PATH
T0=$(date +%s)
ABACUS_RUNTIME_BACKEND=cuda bash scripts/gpu-host.sh up > $O/up.log 2>&1 || { tail -30 $O/up.log; exit 1; }
echo "up after $(( $(date +%s) - T0 )) s"
if [ "${CALIB:-1}" = 1 ]; then
  cp calib-resume.jsonl $O/calibration-cuda-seeds9001.jsonl
  timeout ${CALIB_S:-330} abacus bench calibration --worlds 100 --seed 9001 --rows 40000 --concurrency 6 \
    --resume $O/calibration-cuda-seeds9001.jsonl --out $O/calibration-cuda-seeds9001.json --json > /dev/null 2> $O/calib.err
  echo "calib rc $? lines $(wc -l < $O/calibration-cuda-seeds9001.jsonl) at $(( $(date +%s) - T0 )) s"
fi
if [ "${ADD:-1}" = 1 ]; then
  timeout 150 abacus bench experiment add --rows 1000000 --features 24 --candidates 10 --backend cuda --json \
    --out $O/add-cuda-1000000x24-c10.json > /dev/null 2> $O/add.err
  echo "add rc $? at $(( $(date +%s) - T0 )) s"
fi
mkdir -p $O/lanes
OUT=$O/lanes FRESH=1 timeout 200 bash bench/gpu-lanes.sh 1000000 40 1:3 1:3 2>&1 | tail -5
echo "lanes at $(( $(date +%s) - T0 )) s"
