#!/usr/bin/env bash
# run a 2M-impression discover on a private platform and sample the worker's RSS every second
tag=$1
cd "$(git rev-parse --show-toplevel)"
node apps/cli/bin/abacus.js bench discover --private --worlds 1 --seed 3 --rows 2000000 --max-candidates 2500 --windows 1h,1d,7d,30d --top 2 --seeds 3 --json --out ./$tag.json > ./$tag.out 2>&1 &
bench=$!
max=0
while kill -0 $bench 2>/dev/null; do
  for p in $(pgrep -f 'dist/apps/worker/src/main.js'); do
    r=$(awk '/VmRSS/{print $2}' /proc/$p/status 2>/dev/null)
    [ -n "$r" ] && [ "$r" -gt "$max" ] && max=$r
  done
  echo "$(date +%s) $max" >> ./$tag.rss
  sleep 1
done
echo "peak worker RSS ${max} kB" >> ./$tag.rss
