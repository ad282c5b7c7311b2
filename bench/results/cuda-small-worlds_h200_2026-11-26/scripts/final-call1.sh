#!/usr/bin/env bash
# closing checks, call 1 (final build, .gpu/ and .gpu-test/repro brought along): platform up on cuda
# (worker trial concurrency 4), the six repro tables (add + subtract), the 1M x 40 subtract, the
# injected sticky fault, then calibration worlds (seeds 9001-9100) until the call's time runs out
set -u
P=/tmp/abacus-gpu
export PATH=$P/bin:$PATH
F=/tmp/fin
mkdir -p $F
t0=$(date +%s)
date -u | tee $F/date1.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $F/gpu.txt
ABACUS_WORKER_CONCURRENCY=4 ABACUS_RUNTIME_BACKEND=cuda bash scripts/gpu-host.sh up > $F/up.log 2>&1 || tail -5 $F/up.log
grep -o 'runtime backend: .*' $P/logs/worker.log | tail -1
OUT=$F/small bash bench/gpu-small-worlds.sh .gpu-test/repro 2>&1 | tail -13 | cut -c1-300
echo "small worlds done at $(( $(date +%s) - t0 )) s"
abacus bench experiment subtract --rows 1000000 --features 40 --backend cuda --json --out $F/subtract-1Mx40.json > /dev/null 2> $F/subtract-1Mx40.err; echo "1M x 40 rc $?"
$P/bin/node -e 'const d=require("/tmp/fin/subtract-1Mx40.json"); console.log("1M x 40 subtract:", d.experimentMs, "ms", JSON.stringify(d.stages), "removable", d.result && d.result.removable && d.result.removable.length)'
echo "bench done at $(( $(date +%s) - t0 )) s"
OUT=$F/fault bash bench/gpu-fault-recovery.sh 60000 20 2>&1 | cut -c1-300
echo "fault recovery done at $(( $(date +%s) - t0 )) s"
ABACUS_WORKER_CONCURRENCY=4 ABACUS_RUNTIME_BACKEND=cuda bash scripts/gpu-host.sh up >> $F/up.log 2>&1 || tail -5 $F/up.log
( cd $F && timeout $(( 560 - ($(date +%s) - t0) )) abacus bench calibration --worlds 100 --seed 9001 --rows 40000 --concurrency 4 --resume $F/cal-9001.jsonl > $F/cal1.log 2>&1 )
echo "calibration: $(grep -c '' $F/cal-9001.jsonl) worlds finished at $(( $(date +%s) - t0 )) s"
tar -czf $OUT/fin1.tgz -C /tmp fin
