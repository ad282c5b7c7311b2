#!/usr/bin/env bash
# closing checks, call 3: the trials the cuda runs left in the platform's database (when the host is
# still the warm one of calls 1-2), then the same 100 calibration worlds (seeds 9001-9100) with the
# worker on the CPU backend (all cores of the host), for rates on the same worlds
set -u
P=/tmp/abacus-gpu
export PATH=$P/bin:$PATH
F=/tmp/fin3
mkdir -p $F
t0=$(date +%s)
date -u | tee $F/date3.txt
if [ -d /tmp/fin ]; then
  psql -Atc "select backend, status, attempts, count(*) from trials group by 1,2,3 order by 1,2,3" 2>&1 | tee $F/trials-cuda.txt
  grep -c "capture was invalidated" $P/logs/worker*.log
fi
for f in $P/run/worker.pid $P/run/worker-*.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
sleep 3
ABACUS_WORKER_CONCURRENCY=8 ABACUS_RUNTIME_BACKEND=cpu bash scripts/gpu-host.sh up > $F/up.log 2>&1 || tail -5 $F/up.log
grep -o 'runtime backend: .*' $P/logs/worker.log | tail -1
( cd $F && timeout $(( 570 - ($(date +%s) - t0) )) abacus bench calibration --worlds 100 --seed 9001 --rows 40000 --concurrency 8 --resume $F/cal-9001-cpu.jsonl --json --out $F/cal-9001-cpu.json > $F/cal.log 2>&1 ); echo "calibration rc $?"
echo "calibration cpu: $(grep -c '' $F/cal-9001-cpu.jsonl) worlds finished at $(( $(date +%s) - t0 )) s"
tar -czf $OUT/fin3.tgz -C /tmp fin3
