#!/usr/bin/env bash
# The CI fuzz smoke: builds the targets (libFuzzer on stable, fuzz/build.sh) and runs each for a
# few seconds from seeds made at run time. Any crash fails it; the input is left in
# fuzz/artifacts/<target>/. FEATURES (default: none, the mtr-core and mtr-metrics readers) adds
# the targets of those features of the fuzz crate (`pipeline`, `llm`, `audit`, `settings`,
# `full`); the long campaign (benchmarks/faults/campaign.sh) runs them all.
# Usage: [FEATURES=...] fuzz/smoke.sh [SECONDS_PER_TARGET]
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-4}"
features="${FEATURES:-}"
if [ -n "$features" ]; then ./build.sh --features "$features"; else ./build.sh; fi
rm -rf seeds && ./seeds.sh "$PWD/seeds"
# the LLM client's folders and the targets' scratch folders, removed at the end
work="$(mktemp -d)"
export MTR_HOME="$work/home" TMPDIR="$work/tmp"
mkdir -p "$MTR_HOME" "$TMPDIR"
trap 'rm -rf "$work"' EXIT
failed=0
for t in $(./targets.sh "$features"); do
  mkdir -p "artifacts/$t" "corpus/$t" "seeds/$t"
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
