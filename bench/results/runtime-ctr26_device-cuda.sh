#!/usr/bin/env bash
# One device call (GPU host): abacus cuda and the PyTorch peer side by side on the peer's own rows,
# plus the GPU's measured ceilings, a CUPTI trace (launch counts, per-kernel times), FP32 parity
# and an ncu pass for DRAM bytes per kernel. Carry: .gpu (node.xz) and libs/runtime/bench/dist
# (bash scripts/build-cuda.sh && bash libs/runtime/bench/build-runner.sh, then copy
# libs/runtime/bench/{peer_data.py,ceilings.py} and shared/bench/torch_ctr_baseline.py into dist/).
set -u
xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && export PATH=/tmp:$PATH
D=$PWD/libs/runtime/bench/dist
date -u | tee $OUT/date.txt
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee $OUT/gpu.txt
export ABACUS_CUPTI=$(ls /usr/local/cuda*/extras/CUPTI/lib64/libcupti.so.* /usr/local/cuda*/lib64/libcupti.so.* /usr/lib/x86_64-linux-gnu/libcupti.so.* 2>/dev/null | head -1)
echo "cupti: ${ABACUS_CUPTI:-none}"
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
python3 $D/ceilings.py $OUT/ceilings.json
B=8192 NB=40 python3 $D/peer_data.py /tmp/peer8192
bench() { node $D/run-bench.js --backend cuda --steps 300 --batches 40 "$@"; }
bench --batch 8192 --data /tmp/peer8192 --trace --ablation --auc-seeds 0,1,2,3 > $OUT/abacus_b8192_run1.json 2> $OUT/abacus_b8192_run1.log
tail -45 $OUT/abacus_b8192_run1.log
mkdir -p $OUT/t8192 && (cd $D && B=8192 DEV=cuda OUT=$OUT/t8192 python3 torch_ctr_baseline.py)
bench --batch 8192 --data /tmp/peer8192 --ablation > $OUT/abacus_b8192_run2.json 2> $OUT/abacus_b8192_run2.log
tail -4 $OUT/abacus_b8192_run2.log
ABACUS_CUDA_MATH=fp32 bench --batch 8192 --data /tmp/peer8192 --ablation > $OUT/abacus_b8192_fp32.json 2> $OUT/abacus_b8192_fp32.log
tail -4 $OUT/abacus_b8192_fp32.log
ABACUS_CPU_EVAL_PRECISION=fp32 node $D/run-bench.js --parity > $OUT/parity.json 2> $OUT/parity.log; echo "parity rc $?"; tail -c 400 $OUT/parity.json; echo
B=65536 NB=40 python3 $D/peer_data.py /tmp/peer65536
bench --batch 65536 --data /tmp/peer65536 --trace > $OUT/abacus_b65536.json 2> $OUT/abacus_b65536.log
grep -v "^  " $OUT/abacus_b65536.log | tail -6
mkdir -p $OUT/t65536 && (cd $D && B=65536 DEV=cuda OUT=$OUT/t65536 python3 torch_ctr_baseline.py)
if [ -n "$NCU" ]; then
  ABACUS_CUDA_PROFILER_RANGE=1 timeout 200 $NCU --profile-from-start off --csv \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
    node $D/run-bench.js --backend cuda --batch 8192 --steps 20 --batches 40 --data /tmp/peer8192 --trace > $OUT/ncu_b8192.csv 2> $OUT/ncu.log
  echo "ncu rc $? lines $(wc -l < $OUT/ncu_b8192.csv)"
fi
