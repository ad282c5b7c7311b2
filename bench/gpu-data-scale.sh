#!/usr/bin/env bash
# On a GPU host, from the repository root with the packed .gpu/ (scripts/gpu-host.sh pack, plus
# .gpu/s3-endpoint.js: npx esbuild bench/s3-endpoint.ts --bundle --minify --platform=node
# --outfile=.gpu/s3-endpoint.js): one subtract on ROWS x FEATURES registered by reference, through
# bench/gpu-scale.sh (per-trial timings, GPU memory and worker RSS every second).
#   bash bench/gpu-data-scale.sh file|s3 [rows] [features] [limit seconds]
# file: the samples are written as day=N/ partitions under /tmp/sets (SETS_DIR=<dir>: there instead,
#   e.g. a tmpfs standing in for the users' own storage when the host's disk holds only the platform's
#   data) and registered by file:// path; the workers' store is their data directory. More than 10M rows
#   are one simulated world of 10M repeated in later periods (bench experiment subtract --sim-tile-rows).
# s3:   a local S3 endpoint (s3rver on 127.0.0.1:9100) holds the samples (s3://bench-data/sets/) and
#   the deployment's store (ABACUS_STORE_URL=s3://bench-data/deploy/): uploads, built shards and
#   checkpoints go through it over HTTP. With ABACUS_GPU_HOSTS=separate each GPU's worker has its own
#   data directory and cache (two "hosts").
set -uo pipefail
MODE="${1:-file}"
ROWS="${2:-10000000}"
FEATURES="${3:-100}"
LIMIT="${4:-520}"
PREFIX="${ABACUS_GPU_PREFIX:-/tmp/abacus-gpu}"
OUT="${OUT:-$PWD/bench-out}"
mkdir -p "$OUT"
if [ "$MODE" = s3 ]; then
  # unpack (for Node), then start again with the store's settings
  bash scripts/gpu-host.sh up >"$OUT/up-unpack.log" 2>&1 || { tail -n 20 "$OUT/up-unpack.log"; exit 1; }
  bash scripts/gpu-host.sh down >/dev/null 2>&1
  rm -rf /tmp/s3data && mkdir -p /tmp/s3data
  "$PREFIX/bin/node" .gpu/s3-endpoint.js /tmp/s3data 9100 bench-data >"$OUT/s3-endpoint.log" 2>&1 &
  export ABACUS_S3_ENDPOINT=http://127.0.0.1:9100 ABACUS_S3_FORCE_PATH_STYLE=true AWS_REGION=us-east-1 \
    AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER ABACUS_STORE_URL=s3://bench-data/deploy/
  register=s3://bench-data/sets/
else
  register="${SETS_DIR:-/tmp/sets}"
fi
start=$(date +%s)
bash scripts/gpu-host.sh up >"$OUT/up.log" 2>&1 || { tail -n 20 "$OUT/up.log"; exit 1; }
echo "platform up in $(($(date +%s) - start)) s (mode $MODE${ABACUS_GPU_HOSTS:+, hosts $ABACUS_GPU_HOSTS})"
REGISTER_AT="$register" OUT="$OUT" bash bench/gpu-scale.sh "$ROWS" "$FEATURES" "$LIMIT"
if [ "$MODE" = s3 ]; then
  echo "store: $(du -sh /tmp/s3data/bench-data/deploy 2>/dev/null | cut -f1) under deploy/, $(du -sh /tmp/s3data/bench-data/sets 2>/dev/null | cut -f1) under sets/"
fi
for d in "$PREFIX"/data "$PREFIX"/host-*; do [ -d "$d" ] && echo "data dir $d: $(du -sh "$d" | cut -f1) (cache $(du -sh "$d/cache" 2>/dev/null | cut -f1))"; done
grep -h 'BuiltSamples' "$PREFIX"/logs/worker*.log | sed 's/\x1b\[[0-9;]*m//g' | tail -n 6
