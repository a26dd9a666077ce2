#!/usr/bin/env bash
# The CI fuzz smoke: builds the targets (libFuzzer on stable, fuzz/build.sh) and runs each for a
# few seconds from seeds made at run time. Any crash fails it; the input is left in
# fuzz/artifacts/<target>/. The synthesis corpus targets (feature `pipeline`) are the long
# campaign's (benchmarks/faults/campaign.sh). Usage: fuzz/smoke.sh [SECONDS_PER_TARGET]
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-4}"
./build.sh
rm -rf seeds && ./seeds.sh seeds
bins=$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^mtr-fuzz$' | grep -v '^pipeline_')
failed=0
for t in $bins; do
  mkdir -p "artifacts/$t" "corpus/$t"
  if ! "target/bin/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="artifacts/$t/" -print_final_stats=1 "corpus/$t" "seeds/$t" \
      > "artifacts/$t.log" 2>&1; then
    echo "fuzz smoke: $t crashed; input in fuzz/artifacts/$t/"; tail -30 "artifacts/$t.log"
    failed=1
  else
    echo "fuzz smoke: $t $(grep -o 'stat::number_of_executed_units: *[0-9]*' "artifacts/$t.log" | awk '{print $2}') runs, no crash"
  fi
done
exit "$failed"
