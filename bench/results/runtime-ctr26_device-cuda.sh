#!/usr/bin/env bash
# One device call (GPU host): abacus cuda and the PyTorch peer side by side on the peer's own rows,
# plus the GPU's measured ceilings, a CUPTI trace (launch counts, per-kernel times), FP32 parity
# (incl. streamed vs resident training), the streamed (double-buffered) training path, and an ncu
# pass for DRAM bytes per kernel. Carry: .gpu (node.xz) and libs/runtime/bench/dist
# (bash scripts/build-cuda.sh && bash libs/runtime/bench/build-runner.sh, then copy
# libs/runtime/bench/{peer_data.py,ceilings.py,roofline.py} and shared/bench/torch_ctr_baseline.py into dist/).
# Everything lands in $OUT/run.tar.gz (one file comes back).
set -u
xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && export PATH=/tmp:$PATH
D=$PWD/libs/runtime/bench/dist
R=/tmp/r && mkdir -p $R
date -u | tee $R/date.txt
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee $R/gpu.txt
export ABACUS_CUPTI=$(ls /usr/local/cuda*/extras/CUPTI/lib64/libcupti.so.* /usr/local/cuda*/lib64/libcupti.so.* 2>/dev/null | head -1)
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
ABACUS_CPU_EVAL_PRECISION=fp32 node $D/run-bench.js --parity > $R/parity.json 2> $R/parity.log; echo "parity rc $?"; grep -c PASS $R/parity.log; grep "FAIL\|streamed" $R/parity.log | cut -c1-400
python3 $D/ceilings.py $R/ceilings.json | cut -c1-300
B=8192 NB=40 python3 $D/peer_data.py /tmp/peer8192 > /dev/null
bench() { node $D/run-bench.js --backend cuda --steps 300 --batches 40 "$@"; }
bench --batch 8192 --data /tmp/peer8192 --trace --ablation --auc-seeds 0,1,2,3 > $R/abacus_b8192_run1.json 2> $R/abacus_b8192_run1.log
grep -v "^  train" $R/abacus_b8192_run1.log | tail -14
mkdir -p $R/t8192 && (cd $D && B=8192 DEV=cuda OUT=$R/t8192 python3 torch_ctr_baseline.py 2>/dev/null)
bench --batch 8192 --data /tmp/peer8192 --ablation > $R/abacus_b8192_run2.json 2> $R/abacus_b8192_run2.log
tail -4 $R/abacus_b8192_run2.log
ABACUS_CUDA_VERBOSE=1 ABACUS_CUDA_STREAM=1 bench --batch 8192 --data /tmp/peer8192 --trace > $R/abacus_b8192_streamed.json 2> $R/abacus_b8192_streamed.log
grep -v "^  \|captured" $R/abacus_b8192_streamed.log | tail -6
ABACUS_CUDA_MATH=fp32 bench --batch 8192 --data /tmp/peer8192 --ablation > $R/abacus_b8192_fp32.json 2> $R/abacus_b8192_fp32.log
tail -4 $R/abacus_b8192_fp32.log
B=65536 NB=40 python3 $D/peer_data.py /tmp/peer65536 > /dev/null
bench --batch 65536 --data /tmp/peer65536 --trace > $R/abacus_b65536.json 2> $R/abacus_b65536.log
grep -v "^  " $R/abacus_b65536.log | tail -6
ABACUS_CUDA_VERBOSE=1 ABACUS_CUDA_STREAM=1 bench --batch 65536 --data /tmp/peer65536 > $R/abacus_b65536_streamed.json 2> $R/abacus_b65536_streamed.log
grep -v "captured" $R/abacus_b65536_streamed.log | grep "streamed:\|^train\|^eval" | tail -3
mkdir -p $R/t65536 && (cd $D && B=65536 DEV=cuda OUT=$R/t65536 python3 torch_ctr_baseline.py 2>/dev/null)
if [ -n "$NCU" ]; then
  ABACUS_CUDA_PROFILER_RANGE=1 timeout 200 $NCU --profile-from-start off --csv \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
    node $D/run-bench.js --backend cuda --batch 8192 --steps 20 --batches 40 --data /tmp/peer8192 --trace > $R/ncu_b8192.csv 2> $R/ncu.log
  echo "ncu rc $? lines $(wc -l < $R/ncu_b8192.csv)"
  python3 $D/roofline.py $R/abacus_b8192_run1.json $R/ncu_b8192.csv $R/ceilings.json $R/roofline_b8192.json | grep -v "^  "
fi
tar -C $R -czf $OUT/run.tar.gz .
