#!/usr/bin/env bash
# On a GPU host with the bundled platform (bash scripts/gpu-host.sh up): a sample set registered by
# reference (file:// on the host's disk, the shape of a shared path) and a subtract on it, cuda worker
set -u
P=/tmp/abacus-gpu
export PATH=$P/bin:$PATH
F=/tmp/ref
mkdir -p $F
date -u | tee $F/date.txt
ABACUS_RUNTIME_BACKEND=cuda bash scripts/gpu-host.sh up > $F/up.log 2>&1 || tail -5 $F/up.log
grep 'runtime backend' $F/up.log | tail -1
abacus sim --seed 31 --rows 200000 --out $F/world > $F/sim.log 2>&1; echo "sim rc $?"
mkdir -p $F/shared/dt=2026-11-20 && cp $F/world/samples/feed.parquet $F/shared/dt=2026-11-20/part-0.parquet
abacus lines create feed > /dev/null 2>&1
abacus samples register "file://$F/shared/" --name feed-shared --domain feed --label click --time ts 2>&1 | tee $F/register.log
abacus samples register "file:///nonexistent/x/" --name bad --domain feed --label click > $F/register-bad.log 2>&1; echo "bad register rc $?: $(head -c 300 $F/register-bad.log)"
$P/bin/node -e '
  const t = require(process.argv[1]);
  const features = t.features.filter((f) => f.inConfigOf.includes("feed")).map((f) => f.name);
  require("fs").writeFileSync(process.argv[2], JSON.stringify({ kind: "subtract", businessLine: "feed", name: "subtract on a set by reference", spec: { model: { sampleSet: "feed-shared", features }, seed: 5 } }));
' $F/world/ground_truth.json $F/subtract.json
t0=$(date +%s)
abacus experiment submit $F/subtract.json --wait --json > $F/subtract-result.json 2> $F/subtract.err; echo "subtract rc $? in $(( $(date +%s) - t0 )) s"
$P/bin/node -e '
  const d = require(process.argv[1]); const e = d.experiment ?? d;
  console.log(e.status, JSON.stringify(e.trials.map((t) => [t.kind, t.backend, t.status, t.attempts])), "removable", (e.result?.removable ?? []).length,
    "store", JSON.stringify(e.trials.find((t) => t.kind === "score")?.metrics?.store));' $F/subtract-result.json
tar -czf $OUT/ref.tgz -C /tmp ref/date.txt ref/up.log ref/register.log ref/register-bad.log ref/subtract.json ref/subtract-result.json ref/subtract.err
