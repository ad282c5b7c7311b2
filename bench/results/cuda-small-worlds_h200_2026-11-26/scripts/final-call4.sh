#!/usr/bin/env bash
# closing checks, call 4 (fresh host, .gpu/ brought along): the 100 calibration worlds of calls 1-2
# (seeds 9001-9100) with the worker on the CPU backend (16 cores), for rates on the same worlds;
# resumable: run again on the same warm host to finish
set -u
P=/tmp/abacus-gpu
export PATH=$P/bin:$PATH
F=/tmp/fin4
mkdir -p $F
t0=$(date +%s)
date -u | tee -a $F/date4.txt
ABACUS_WORKER_CONCURRENCY=8 ABACUS_RUNTIME_BACKEND=cpu bash scripts/gpu-host.sh up > $F/up.log 2>&1 || tail -5 $F/up.log
grep 'runtime backend' $F/up.log | tail -1
( cd $F && timeout $(( 570 - ($(date +%s) - t0) )) abacus bench calibration --worlds 100 --seed 9001 --rows 40000 --concurrency 6 --resume $F/cal-9001-cpu.jsonl --json --out $F/cal-9001-cpu.json > $F/cal.log 2>&1 ); echo "calibration rc $?"
echo "calibration cpu: $(grep -c '' $F/cal-9001-cpu.jsonl) worlds finished at $(( $(date +%s) - t0 )) s"
psql -Atc "select backend, status, attempts, count(*) from trials group by 1,2,3 order by 1,2,3" 2>&1 | tee $F/trials-cpu.txt
tar -czf $OUT/fin4.tgz -C /tmp fin4
