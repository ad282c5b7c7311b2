#!/usr/bin/env bash
# On a GPU host with the platform up (bash scripts/gpu-host.sh up): the small planted click tables of
# DIR (w<seed>.csv[.gz|.xz], with add-<seed>.json and subtract-<seed>.json specs naming the sample set
# w<seed> of business line "repro"), imported and their add and subtract experiments submitted and
# waited for, one after another on the running worker. Prints each experiment's status and trials
# (kind, status, attempts); the experiments' JSON go to $OUT.
#   bash bench/gpu-small-worlds.sh DIR
set -uo pipefail
DIR="${1:?usage: bash bench/gpu-small-worlds.sh DIR}"
OUT="${OUT:-$PWD/bench-out}"
PREFIX="${ABACUS_GPU_PREFIX:-/tmp/abacus-gpu}"
mkdir -p "$OUT"
export PATH="$PREFIX/bin:$PATH"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
abacus lines create repro >/dev/null 2>&1 || true
ok=0 all=0
for f in "$DIR"/w*.csv*; do
  s=$(basename "$f" | sed 's/^w\([0-9]*\)\.csv.*/\1/')
  case "$f" in
    *.gz) gunzip -c "$f" >"$tmp/w$s.csv" ;;
    *.xz) xz -dc "$f" >"$tmp/w$s.csv" ;;
    *) cp "$f" "$tmp/w$s.csv" ;;
  esac
  abacus samples import "$tmp/w$s.csv" --name "w$s" --domain repro --label clicked >"$OUT/import-$s.log" 2>&1 || { echo "w$s: import failed"; tail -n 3 "$OUT/import-$s.log"; continue; }
  for k in add subtract; do
    [ -f "$DIR/$k-$s.json" ] || continue
    all=$((all + 1))
    t0=$(date +%s)
    abacus experiment submit "$DIR/$k-$s.json" --wait --json >"$OUT/$k-$s.json" 2>"$OUT/$k-$s.err"
    rc=$?
    line=$("$PREFIX/bin/node" -e '
      const d = require(process.argv[1]);
      const e = d.experiment ?? d;
      const r = e.result ?? {};
      const v = r.candidates ? " verdicts " + JSON.stringify(r.candidates.map((c) => [c.name ?? c.candidate ?? c.feature, c.verdict])) : "";
      const rm = r.removable ? ` removable ${r.removable.length}` : "";
      console.log(`${e.status} trials ${JSON.stringify((e.trials ?? []).map((t) => [t.kind, t.backend, t.status, t.attempts]))}${v}${rm}`);' "$OUT/$k-$s.json" 2>&1 | cut -c1-900)
    case "$line" in succeeded*) ok=$((ok + 1)) ;; esac
    echo "$k w$s: rc $rc, $(($(date +%s) - t0)) s: $line"
  done
done
echo "small worlds: $ok of $all experiments succeeded"
