#!/usr/bin/env bash
# Training from shard files (mapped, read natively, pages released behind) against training from
# arrays in memory, ctr26 at batch 8192, in one process each, on one GPU host (host-streamed from
# shards five times: each window held on the device by column, batches gathered there, their rows'
# places read from host memory (the default) or copied (ABACUS_CUDA_WINDOW_PLACES=copy),
# window records shipped raw and unpacked on the device (ABACUS_CUDA_UNPACK=device), the same records
# packed on the host (=host), and packed from the mapped columns, which must train to the same loss);
# then the CUDA/CPU parity check. Needs libs/runtime/bench/dist (bash libs/runtime/bench/build-runner.sh) and a node
# (the .gpu bundle's is unpacked when there is none). Results (one JSON line per run) go to $OUT.
#   bash bench/gpu-streaming.sh [steps] [batches] [all|gpu] [copy-thread counts...]   (gpu: the CUDA
#   runs from memory resident and from shards, skipping host-streaming from memory, the host packers
#   and the CPU runs; each copy-thread count adds a run of the default path with
#   ABACUS_CUDA_COPY_THREADS at that count)
set -uo pipefail
OUT="${OUT:-$PWD/bench-out}"
STEPS="${1:-300}"
BATCHES="${2:-200}"
WHICH="${3:-all}"
SWEEP=("${@:4}")
mkdir -p "$OUT"
NODE="$(command -v node || true)"
if [ -z "$NODE" ]; then
  NODE=/tmp/abacus-stream-node
  [ -x "$NODE" ] || { xz -dc .gpu/node.xz >"$NODE.tmp" && chmod 755 "$NODE.tmp" && mv "$NODE.tmp" "$NODE"; }
fi
RUN=libs/runtime/bench/dist/run-bench.js
common=(--batch 8192 --steps "$STEPS" --batches "$BATCHES" --shuffle true --vocab 100000)
run() { # label env... -- args...
  local label=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  echo "[stream] $label"
  env "${envs[@]}" "$NODE" "$RUN" "${common[@]}" "$@" 2>>"$OUT/streaming.err" | tail -n 1 | sed "s/^{/{\"run\":\"$label\",/" >>"$OUT/streaming.jsonl"
}
run cuda-memory ABACUS_CUDA_STREAM=0 -- --backend cuda
run cuda-shards ABACUS_CUDA_STREAM=0 -- --backend cuda --stream
[ "$WHICH" = gpu ] || run cuda-memory-hoststream ABACUS_CUDA_STREAM=1 -- --backend cuda
run cuda-shards-hoststream ABACUS_CUDA_STREAM=1 ABACUS_CUDA_VERBOSE=1 -- --backend cuda --stream
for t in "${SWEEP[@]}"; do
  run "cuda-shards-hoststream-copythreads-$t" ABACUS_CUDA_STREAM=1 ABACUS_CUDA_COPY_THREADS="$t" ABACUS_CUDA_VERBOSE=1 -- --backend cuda --stream
done
run cuda-shards-hoststream-copyplaces ABACUS_CUDA_STREAM=1 ABACUS_CUDA_WINDOW_PLACES=copy ABACUS_CUDA_VERBOSE=1 -- --backend cuda --stream
run cuda-shards-hoststream-device ABACUS_CUDA_STREAM=1 ABACUS_CUDA_UNPACK=device ABACUS_CUDA_VERBOSE=1 -- --backend cuda --stream
if [ "$WHICH" != gpu ]; then
  run cuda-shards-hoststream-hostunpack ABACUS_CUDA_STREAM=1 ABACUS_CUDA_UNPACK=host ABACUS_CUDA_VERBOSE=1 -- --backend cuda --stream
  run cuda-shards-hoststream-columns ABACUS_CUDA_STREAM=1 ABACUS_CUDA_RECORDS=0 ABACUS_CUDA_VERBOSE=1 -- --backend cuda --stream
  run cpu-memory X=1 -- --backend cpu --threads "$(nproc)" --steps 40
  run cpu-shards X=1 -- --backend cpu --threads "$(nproc)" --steps 40 --stream
fi
"$NODE" -e '
  const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const by = Object.fromEntries(rows.map((r) => [r.run, r]));
  for (const r of rows) if (r.run.startsWith("cuda-shards-hoststream-copythreads-") && by["cuda-memory"]) console.log(`${r.run} / cuda-memory: train ${(r.train_samples_per_s / by["cuda-memory"].train_samples_per_s).toFixed(3)} (${r.train_samples_per_s} samples/s)`);
  for (const [a, b] of [["cuda-shards", "cuda-memory"], ["cuda-shards-hoststream", "cuda-memory-hoststream"], ["cuda-shards-hoststream", "cuda-memory"], ["cuda-shards-hoststream", "cuda-shards-hoststream-copyplaces"], ["cuda-shards-hoststream", "cuda-shards-hoststream-device"], ["cuda-shards-hoststream-device", "cuda-memory"], ["cuda-shards-hoststream", "cuda-shards-hoststream-hostunpack"], ["cuda-shards-hoststream", "cuda-shards-hoststream-columns"], ["cpu-shards", "cpu-memory"]])
    if (by[a] && by[b]) console.log(`${a} / ${b}: train ${(by[a].train_samples_per_s / by[b].train_samples_per_s).toFixed(3)} (${by[a].train_samples_per_s} vs ${by[b].train_samples_per_s} samples/s), test AUC ${by[a].test_auc_exact} vs ${by[b].test_auc_exact}, final loss ${by[a].final_train_loss_exact} vs ${by[b].final_train_loss_exact}`);
' "$OUT/streaming.jsonl" | tee "$OUT/streaming-summary.txt"
echo "[stream] parity"
"$NODE" "$RUN" --parity >"$OUT/parity.json" 2>>"$OUT/streaming.err"; echo "parity rc $?"
tail -c 600 "$OUT/parity.json"
