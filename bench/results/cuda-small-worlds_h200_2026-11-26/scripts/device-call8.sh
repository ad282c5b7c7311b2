#!/usr/bin/env bash
# final build on the GPU host: the small worlds (add + subtract), the 1M x 40 subtract, then calibration worlds until the time runs out
set -u
P=/tmp/abacus-gpu
export PATH=$P/bin:$PATH
mkdir -p /tmp/k8
t0=$(date +%s)
date -u | tee /tmp/k8/date.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee /tmp/k8/gpu.txt
ABACUS_WORKER_CONCURRENCY=4 ABACUS_RUNTIME_BACKEND=cuda bash scripts/gpu-host.sh up > /tmp/k8/up.log 2>&1 || tail -5 /tmp/k8/up.log
grep -o 'runtime backend: .*' $P/logs/worker.log | tail -1
OUT=/tmp/k8/small bash bench/gpu-small-worlds.sh .gpu-test/repro 2>&1 | tail -13 | cut -c1-260
echo "small worlds done at $(( $(date +%s) - t0 )) s"
abacus bench experiment subtract --rows 1000000 --features 40 --backend cuda --json --out /tmp/k8/subtract-1Mx40.json > /dev/null 2> /tmp/k8/subtract-1Mx40.err; echo "1M x 40 rc $?"
$P/bin/node -e 'const d=require("/tmp/k8/subtract-1Mx40.json"); console.log("1M x 40 subtract:", d.experimentMs, "ms", JSON.stringify(d.stages), "removable", d.result && d.result.removable && d.result.removable.length)'
echo "bench done at $(( $(date +%s) - t0 )) s"
( cd /tmp/k8 && timeout $(( 440 - ($(date +%s) - t0) )) abacus bench calibration --worlds 100 --seed 8001 --rows 40000 --concurrency 4 --resume /tmp/k8/cal-8001.jsonl > /tmp/k8/cal.log 2>&1 )
echo "calibration: $(grep -c '' /tmp/k8/cal-8001.jsonl) worlds finished at $(( $(date +%s) - t0 )) s"
psql -Atc "select kind, status, attempts, count(*) from trials group by 1,2,3 order by 1,2,3" 2>&1 | head -20
grep -c "capture was invalidated" $P/logs/worker*.log
tar -czf $OUT/k8.tgz -C /tmp k8
