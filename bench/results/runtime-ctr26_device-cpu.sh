#!/usr/bin/env bash
# One device call: abacus cpu (2 threads) and the PyTorch peer (2 threads), side by side, pinned to cores 2,3.
xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && export PATH=/tmp:$PATH
cd .benchcpu
{ date -u; lscpu | grep -E "Model name|^CPU\(s\)|Thread|MHz|L2|L3"; cat /sys/kernel/mm/transparent_hugepage/enabled; lscpu -e=CPU,CORE | sed -n 1,6p; } > $OUT/machine.txt 2>&1
cat $OUT/machine.txt
run() { taskset -c 2,3 node run-bench.js --backend cpu --batch 8192 --steps 64 --threads 2 2>/dev/null; }
run > $OUT/abacus_cpu_2t_run1.json; cat $OUT/abacus_cpu_2t_run1.json | head -c 400; echo
PYTHONUNBUFFERED=1 THREADS=2 DEV=cpu B=8192 timeout 200 taskset -c 2,3 python3 torch_ctr_baseline.py
run > $OUT/abacus_cpu_2t_run2.json; cat $OUT/abacus_cpu_2t_run2.json | head -c 400; echo
