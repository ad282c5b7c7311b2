#!/usr/bin/env bash
# Where a compute-cost measurement runs, on a GPU host: the platform started with the api kept off the
# GPUs (ABACUS_GPU_API_GPU=0, as on an api host of its own) and the workers on them; the quick start's
# demo world registered; then the feed model "base" measured through the CLI with --on api (the api's
# CPU), and RUNS times with the default (auto: handed to the GPU worker). Each answer goes to
# $OUT/cost-where-<on>-<k>.json; the summary (where each ran, the clock, the GPU, the time, and
# Spearman's rho between the rankings of the GPU runs and against the api's CPU run) to
# $OUT/cost-where.json.
#   bash bench/gpu-cost-where.sh [runs=2]
set -uo pipefail
RUNS="${1:-2}"
OUT="${OUT:-$PWD/bench-out}"
PREFIX="${ABACUS_GPU_PREFIX:-/tmp/abacus-gpu}"
mkdir -p "$OUT"
export PATH="$PREFIX/bin:$PATH"
ABACUS_GPU_API_GPU=0 bash scripts/gpu-host.sh up >"$OUT/up-cost-where.log" 2>&1 || { tail -n 20 "$OUT/up-cost-where.log"; exit 1; }
grep -h 'runtime backend' "$PREFIX"/logs/api.log "$PREFIX"/logs/worker*.log | tail -n 3
[ -f "$PREFIX/demo/ground_truth.json" ] || abacus sim --seed 7 --rows 400000 --out "$PREFIX/demo" >"$OUT/demo-sim.log" 2>&1 \
  || { tail -n 20 "$OUT/demo-sim.log"; exit 1; }
abacus demo --dir "$PREFIX/demo" >"$OUT/demo-register.log" 2>&1 || { tail -n 20 "$OUT/demo-register.log"; exit 1; }
files=()
measure() { # on k [--on where]
  local f="$OUT/cost-where-$1-$2.json" t0
  t0=$(date +%s)
  shift 2
  abacus features costs --line feed --model base --measure "$@" --json >"$f" 2>"$f.err" || { echo "measure $*: failed"; cat "$f.err"; }
  echo "measure ${*:-(default on)}: $(($(date +%s) - t0)) s"
  files+=("$f")
}
measure api 1 --on api
for k in $(seq 1 "$RUNS"); do measure auto "$k"; done
"$PREFIX/bin/node" -e '
  const fs = require("fs");
  const runs = process.argv.slice(1).map((f) => ({ file: f.split("/").pop(), r: JSON.parse(fs.readFileSync(f, "utf8")) }));
  const rank = (xs) => {
    const order = xs.map((x, i) => [x, i]).sort((a, b) => a[0] - b[0]);
    const r = new Array(xs.length);
    for (let i = 0; i < order.length; ) {
      let j = i;
      while (j + 1 < order.length && order[j + 1][0] === order[i][0]) j++;
      for (let k = i; k <= j; k++) r[order[k][1]] = (i + j) / 2;
      i = j + 1;
    }
    return r;
  };
  const rho = (a, b) => {
    const ra = rank(a), rb = rank(b), n = a.length, m = (n - 1) / 2;
    let sab = 0, saa = 0, sbb = 0;
    for (let i = 0; i < n; i++) { sab += (ra[i] - m) * (rb[i] - m); saa += (ra[i] - m) ** 2; sbb += (rb[i] - m) ** 2; }
    // all tied on both sides: the same (empty) ranking; on one side only: no agreement
    if (!(saa > 0) || !(sbb > 0)) return saa === sbb ? 1 : 0;
    return +(sab / Math.sqrt(saa * sbb)).toFixed(3);
  };
  const medians = (r) => r.features.filter((f) => f.compute.measured).sort((a, b) => (a.name < b.name ? -1 : 1)).map((f) => f.compute.measured.median);
  const out = {
    date: new Date().toISOString(),
    runs: runs.map(({ file, r }) => ({
      file,
      where: r.measurement.where,
      backend: r.measurement.backend,
      rows: r.measurement.rows,
      elapsedMs: r.measurement.elapsedMs,
      measured: r.measurement.measured.length,
      belowResolution: r.features.filter((f) => f.compute.measured?.belowResolution).length,
    })),
  };
  const gpu = runs.filter(({ r }) => r.measurement.where?.process === "worker");
  const api = runs.find(({ r }) => r.measurement.where?.process === "api");
  // every pair of GPU runs
  out.spearmanGpuPairs = [];
  for (let i = 0; i < gpu.length; i++)
    for (let j = i + 1; j < gpu.length; j++) out.spearmanGpuPairs.push([gpu[i].file, gpu[j].file, rho(medians(gpu[i].r), medians(gpu[j].r))]);
  out.fits = runs.map(({ file, r }) => {
    const h = r.features.find((f) => f.compute.measured)?.compute.measured.how ?? "";
    return [file, h.slice(h.indexOf("fitted to them (") + 16, h.indexOf("):"))];
  });
  if (gpu.length && api) out.spearmanGpuVsApiCpu = rho(medians(gpu[0].r), medians(api.r));
  fs.writeFileSync(process.env.OUT + "/cost-where.json", JSON.stringify(out, null, 2));
  console.log(JSON.stringify(out));
' "${files[@]}"
