#!/usr/bin/env bash
# One device call: abacus cpu (2 threads; eval forward: AMX-BF16 on this Xeon by default, then FP32 via
# ABACUS_CPU_EVAL_PRECISION=fp32) and the PyTorch peer (2 threads), side by side, pinned to cores 2,3.
# .benchcpu/ = libs/runtime/bench/dist/{run-bench.js,abacus_runtime.node} + shared/bench/torch_ctr_baseline.py
xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && export PATH=/tmp:$PATH
cd .benchcpu
{ date -u; lscpu | grep -E "Model name|^CPU\(s\)|Thread|MHz|L2|L3"; grep -o 'avx512_bf16\|amx_bf16\|amx_tile' /proc/cpuinfo | sort -u; cat /sys/kernel/mm/transparent_hugepage/enabled; } > $OUT/machine.txt 2>&1
cat $OUT/machine.txt
run() { taskset -c 2,3 node run-bench.js --backend cpu --batch 8192 --steps 64 --threads 2 2>/dev/null; }
run > $OUT/abacus_cpu_2t_default_run1.json; head -c 600 $OUT/abacus_cpu_2t_default_run1.json; echo
ABACUS_CPU_EVAL_PRECISION=fp32 run > $OUT/abacus_cpu_2t_fp32.json; head -c 600 $OUT/abacus_cpu_2t_fp32.json; echo
PYTHONUNBUFFERED=1 THREADS=2 DEV=cpu B=8192 timeout 200 taskset -c 2,3 python3 torch_ctr_baseline.py
run > $OUT/abacus_cpu_2t_default_run2.json; head -c 600 $OUT/abacus_cpu_2t_default_run2.json; echo
