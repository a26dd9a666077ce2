#!/usr/bin/env bash
# The long fuzz campaign: every target in turn for SECONDS (default 600), from the seeds
# (fuzz/seeds.sh) and the corpus the previous campaigns grew (fuzz/corpus/, kept between runs,
# never committed). Appends one line per target to results.tsv beside this script: date,
# target, seconds, executions, coverage (edges), crashes. A crash leaves its input in
# fuzz/artifacts/<target>/: make it a regression test next to the parser, then fix.
# Usage: benchmarks/faults/campaign.sh [SECONDS] [TARGET...]
#   FEATURES=full also builds and runs the targets of the other crates (or name some of the
#   fuzz crate's features: pipeline, llm, audit, settings).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
fuzz="$here/../../fuzz"
secs="${1:-600}"
shift || true
cd "$fuzz"
if [ -n "${FEATURES:-}" ]; then ./build.sh --features "$FEATURES"; else ./build.sh; fi
rm -rf seeds && ./seeds.sh "$PWD/seeds"
if [ $# -gt 0 ]; then
  targets="$*"
else
  targets=$(./targets.sh "${FEATURES:-}")
fi
# the LLM client's folders and the targets' scratch folders, removed at the end
work="$(mktemp -d)"
export MTR_HOME="$work/home" TMPDIR="$work/tmp"
mkdir -p "$MTR_HOME" "$TMPDIR"
trap 'rm -rf "$work"' EXIT
results="$here/results.tsv"
[ -f "$results" ] || printf 'date\ttarget\tseconds\texecutions\tcoverage\tcrashes\n' > "$results"
for t in $targets; do
  mkdir -p "artifacts/$t" "corpus/$t" "seeds/$t"
  before=$(ls "artifacts/$t" | wc -l)
  "target/bin/$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
    -artifact_prefix="artifacts/$t/" -print_final_stats=1 "corpus/$t" "seeds/$t" \
    > "artifacts/$t.log" 2>&1 || true
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "artifacts/$t.log" | awk '{print $2}')
  cov=$(grep -Eo 'DONE +cov: [0-9]+|cov: [0-9]+' "artifacts/$t.log" | tail -1 | grep -Eo '[0-9]+$')
  crashes=$(( $(ls "artifacts/$t" | wc -l) - before ))
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%F)" "$t" "$secs" "${execs:-0}" "${cov:-0}" "$crashes" >> "$results"
  echo "$t: ${execs:-0} executions, coverage ${cov:-0}, $crashes new crash(es)"
done
