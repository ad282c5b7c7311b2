#!/usr/bin/env bash
# On a GPU host (after `bash scripts/gpu-host.sh pack` on the build machine and .gpu/ brought along):
# the quick start's demo world registered through the CLI, then the score, subtract and add examples
# (configs/examples/) submitted and waited for, with the workers as `scripts/gpu-host.sh up` starts
# them (ABACUS_RUNTIME_BACKEND=auto: cuda there). Each experiment's JSON (trials with their backend,
# the result) goes to $OUT (default ./bench-out) as demo-<kind>.json, with its wall time in demo.log.
#   bash bench/gpu-demo.sh
set -uo pipefail
OUT="${OUT:-$PWD/bench-out}"
PREFIX="${ABACUS_GPU_PREFIX:-/tmp/abacus-gpu}"
mkdir -p "$OUT"
export PATH="$PREFIX/bin:$PATH"
bash scripts/gpu-host.sh up >"$OUT/up-demo.log" 2>&1 || { tail -n 20 "$OUT/up-demo.log"; exit 1; }
grep -h 'backend' "$PREFIX"/logs/worker*.log | tail -n 2
t0=$(date +%s)
[ -f "$PREFIX/demo/ground_truth.json" ] || abacus sim --seed 7 --rows 400000 --out "$PREFIX/demo" >"$OUT/demo-sim.log" 2>&1 \
  || { tail -n 20 "$OUT/demo-sim.log"; exit 1; }
abacus demo --dir "$PREFIX/demo" >"$OUT/demo-register.log" 2>&1 || { tail -n 20 "$OUT/demo-register.log"; exit 1; }
echo "demo world (simulator seed 7, 400,000 impressions, as the quick start) generated and registered in $(($(date +%s) - t0)) s" | tee -a "$OUT/demo.log"
for k in score subtract add; do
  t0=$(date +%s)
  abacus experiment submit "configs/examples/$k.json" --wait --json >"$OUT/demo-$k.json" 2>"$OUT/demo-$k.err"
  rc=$?
  echo "$k: rc $rc, $(($(date +%s) - t0)) s" | tee -a "$OUT/demo.log"
done
for k in score subtract add; do
  "$PREFIX/bin/node" -e '
    const d = require(process.argv[1]);
    const e = d.experiment ?? d;
    const r = e.result ?? {};
    console.log(process.argv[2], e.status, JSON.stringify((e.trials ?? []).map((t) => [t.kind, t.backend, t.status])),
      r.removable ? `removable ${r.removable.length} confirmed ${JSON.stringify(r.confirmed)}` : "",
      r.candidates ? JSON.stringify(r.candidates.map((c) => [c.name ?? c.candidate, c.verdict])) : "")' "$OUT/demo-$k.json" "$k" 2>&1 | head -c 3000
  echo
done
