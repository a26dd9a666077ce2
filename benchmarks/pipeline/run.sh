#!/usr/bin/env bash
# Pipeline benchmarks: corpus preparation (MinHash + chunking) and topic-path traversal.
# Builds the examples with optimisations (release profile by default; set PROFILE=dev to reuse
# the debug dependency build with opt-level 3 for mtr-pipeline, rand and rayon instead, which
# avoids a cold release build of the whole stack on a small machine).
#
# Usage: benchmarks/pipeline/run.sh [prep|traverse|saturation|all]
set -euo pipefail
cd "$(dirname "$0")/../.."
what="${1:-all}"
profile="${PROFILE:-release}"
args=(--release)
if [ "$profile" = dev ]; then
  args=(
    --config 'profile.dev.package.mtr-pipeline.opt-level=3'
    --config 'profile.dev.package.mtr-pipeline.debug-assertions=false'
    --config 'profile.dev.package.mtr-pipeline.overflow-checks=false'
    --config 'profile.dev.package.rand.opt-level=3'
    --config 'profile.dev.package.rand_core.opt-level=3'
    --config 'profile.dev.package.chacha20.opt-level=3'
    --config 'profile.dev.package.rayon.opt-level=3'
    --config 'profile.dev.package.rayon-core.opt-level=3'
    --config 'profile.dev.package.serde_json.opt-level=3'
    --config 'profile.dev.package.whatlang.opt-level=3'
  )
fi
echo "machine: $(nproc) cores, profile $profile, RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-all}"
if [ "$what" = prep ] || [ "$what" = all ]; then
  cargo run -q "${args[@]}" -p mtr-pipeline --example bench_prep -- "${CORPUS:-../shared/corpora/en_wiki_vital_summaries.jsonl}"
fi
if [ "$what" = traverse ] || [ "$what" = all ]; then
  cargo run -q "${args[@]}" -p mtr-pipeline --example bench_traverse -- "${MAX_N:-1000000}" "${K:-100}"
fi
if [ "$what" = saturation ] || [ "$what" = all ]; then
  cargo run -q "${args[@]}" -p mtr-pipeline --example bench_saturation -- "${DIALOGUES:-64}" "${TURNS:-4}" "${LATENCY_MS:-40}" "${WIDTH:-16}" "${JUDGE_WIDTH:-$((2 * ${WIDTH:-16}))}" "${IN_FLIGHT:-0}"
fi
