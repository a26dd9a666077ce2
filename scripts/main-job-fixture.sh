#!/usr/bin/env bash
# Regenerates tests/fixtures/main-job/: a small English benchmark made by the main job
# (scripts/main-job.sh, its settings scripts/main-job.toml, the embedded local models) and the
# main job's audit of it, for the publishing tests (python/tests/test_publish.py: export to a
# Hugging Face folder that `datasets` loads, the round trip's fingerprint, triplets with and
# without the audit).
#
# It runs the main job itself, made small through the main job's own knobs: 3 English
# dialogues of 2 turns (1 Chinese dialogue of 1 turn, which the fixture does not keep), seed 7,
# and no time budget, so that what it makes does not depend on the machine's load. A fresh
# LLM cache and state folder (measured speeds, server state) under a scratch folder: nothing
# earlier answers, nothing of the user's changes. From its output folder it copies, byte for
# byte, the files `mtr synth` wrote (bench-en/: benchmark.toml, corpus.jsonl, dialogues.jsonl,
# qrels.tsv, synth_report.md, spend.json; not the synthesis's checkpoints in .mtr-synth/ nor
# the index caches bench and stats leave in .mtr/) and the files `mtr audit` wrote
# (audit-en/), and writes PROVENANCE.md (the command, the seed, the models, the fingerprint).
#
# The local models' answers vary from run to run (llama.cpp batches its slots), so a rerun
# makes another benchmark with another fingerprint: the tests read the figures from the
# fixture's files and pin none of its text. Its one run so far took 33.5 minutes on the shared
# 2-core machine at a load average of 15-20 (other builds beside it; the local models measured
# at a quarter of their usual speed); the main job's own figures (docs/main-job.md) suggest
# well under 15 minutes on a quiet one, not measured.
#
# Environment: DEST (default tests/fixtures/main-job), and whatever scripts/main-job.sh reads
# (MTR_BIN to use a given binary); KEEP=1 keeps the scratch folder, FROM=SCRATCH makes the
# fixture from a kept one without running the main job again.
set -euo pipefail
cd "$(dirname "$0")/.."

DEST="${DEST:-tests/fixtures/main-job}"
settings=(SEED=7 DIALOGUES_EN=3 TURNS_EN=2 DIALOGUES_ZH=1 TURNS_ZH=1 SYNTH_BUDGET=none
  AUDIT_BUDGET=none)
if [ -n "${FROM:-}" ]; then
  # a scratch folder an earlier run kept: its main job is not run again
  work="$FROM"
else
  work=$(mktemp -d)
  # KEEP=1 keeps the scratch folder (the main job's whole output and log) and says where
  if [ -n "${KEEP:-}" ]; then echo "scratch: $work"; else trap 'rm -rf "$work"' EXIT; fi
  XDG_STATE_HOME="$work/state" MTR_LLM__CACHE="$work/llm-cache.sqlite" OUT="$work/out" \
    env "${settings[@]}" bash scripts/main-job.sh | tee "$work/main-job.log"
fi

rm -rf "$DEST"
mkdir -p "$DEST/bench-en" "$DEST/audit-en"
# every file the synthesis and the audit wrote at the top of their folders (not the hidden
# folders of checkpoints and caches)
find "$work/out/bench-en" -maxdepth 1 -type f -exec cp {} "$DEST/bench-en/" \;
find "$work/out/audit-en" -maxdepth 1 -type f -exec cp {} "$DEST/audit-en/" \;

bin="${MTR_BIN:-}"
if [ -z "$bin" ]; then
  if [ -x target/release/mtr ]; then bin=target/release/mtr; else bin=target/debug/mtr; fi
fi
fingerprint=$(sed -n 's/^fingerprint = "\(.*\)"$/\1/p' "$DEST/bench-en/benchmark.toml")
models=$(sed -n '/^\[generator\]/,/^\[/{/^[a-z_]* = /p}' "$DEST/bench-en/benchmark.toml")
{
  echo "# Provenance of this fixture"
  echo
  echo "Made by \`bash scripts/main-job-fixture.sh\` on $(date -u +%Y-%m-%d) with $("$bin" --version),"
  echo "on $(nproc) cores (load average $(cut -d' ' -f1 /proc/loadavg) at the end): the main job run as"
  echo
  echo '```sh'
  echo "OUT=\$SCRATCH/out ${settings[*]} bash scripts/main-job.sh"
  echo '```'
  echo
  echo "(a fresh LLM cache and state folder under \$SCRATCH). \`bench-en/\` is the benchmark its"
  echo "English synthesis wrote (\`mtr --config scripts/main-job.toml synth --corpus corpora/en"
  echo "--dialogues 3 --turns 2 --seed 7 --chunk-tokens 64-160\`), \`audit-en/\` its audit (\`mtr"
  echo "audit --seed 7 --trials 1 --negatives 3\`), each file as written."
  echo
  echo "- data fingerprint: \`$fingerprint\`"
  echo "- models (the manifest's \`[generator]\`, by role):"
  echo "$models" | sed 's/^/  - /'
  echo "- local model files: $("$bin" local status | awk -F'\t' '$1 == "model" && $3 == "installed" {printf "%s%s (%s)", sep, $2, $7; sep = ", "}')"
  echo
  echo "The main job's yield:"
  echo
  echo '```'
  sed -n '/^== yield/,/^  time: /p' "$work/main-job.log"
  echo '```'
} > "$DEST/PROVENANCE.md"
echo "wrote $DEST (fingerprint $fingerprint)"
