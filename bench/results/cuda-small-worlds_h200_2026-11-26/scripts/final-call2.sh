#!/usr/bin/env bash
# closing checks, call 2 (same warm host; .gpu-test/vitest.tar.xz and the addons brought along):
# the gpu vitest project, then the random-shape stress under compute-sanitizer memcheck
# (scripts/gpu-vitest.sh run), then the calibration run resumed until the call's time runs out
set -u
P=/tmp/abacus-gpu
export PATH=$P/bin:$PATH
F=/tmp/fin
t0=$(date +%s)
[ -d $F ] || { echo "not the warm host of call 1: $F is missing"; }
date -u | tee $F/date2.txt
timeout 420 bash scripts/gpu-vitest.sh run > $F/gpu-vitest.log 2>&1; echo "gpu-vitest rc $?"
grep -E 'Test Files|Tests |ERROR SUMMARY|memcheck' $F/gpu-vitest.log | tail -8
echo "gpu-vitest done at $(( $(date +%s) - t0 )) s"
( cd $F && timeout $(( 570 - ($(date +%s) - t0) )) abacus bench calibration --worlds 100 --seed 9001 --rows 40000 --concurrency 4 --resume $F/cal-9001.jsonl --json --out $F/cal-9001.json > $F/cal2.log 2>&1 ); echo "calibration rc $?"
echo "calibration: $(grep -c '' $F/cal-9001.jsonl) worlds finished at $(( $(date +%s) - t0 )) s"
tail -n 30 $F/cal2.log | cut -c1-200
tar -czf $OUT/fin2.tgz -C /tmp fin
