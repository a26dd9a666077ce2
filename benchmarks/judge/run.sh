#!/usr/bin/env bash
# What the embedded judges are worth as hole fillers on sparse MTRAG qrels (docs/judge.md,
# README.md beside this file). Args: [dialogues] [depth] [out folder] [time budget]
#   dialogues: the first N clapnq dialogues (default 1); depth: K pooled (default 5);
#   out: where everything goes (default out/judge-tau); budget: mtr judge --time-budget (none).
# Needs ../shared/data/mtrag and the embedded local default (no mtr.toml: the local servers
# install themselves under ~/.local/share/mtr on first use). A rerun pays nothing twice: the
# judgements come back from the LLM cache.
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${1:-1}"
K="${2:-5}"
OUT="${3:-out/judge-tau}"
BUDGET="${4:-}"
MTRAG=../shared/data/mtrag
[ -d "$MTRAG" ] || { echo "no $MTRAG: this measurement needs the shared MTRAG data" >&2; exit 2; }

cargo build -q -p mtr --bin mtr
cargo build -q -p mtr-bench --example judge_tau
MTR=target/debug/mtr
TAU=target/debug/examples/judge_tau
mkdir -p "$OUT"
[ -f "$OUT/clapnq/benchmark.toml" ] ||
  "$MTR" --quiet import mtrag "$MTRAG" --domain clapnq -o "$OUT/clapnq"
rm -rf "$OUT/full" "$OUT/sparse"
"$TAU" prepare "$OUT/clapnq" "$N" "$OUT" | tee "$OUT/prepare.txt"

judge=("$MTR" judge "$OUT/sparse" --runs-dir "$MTRAG/runs_clapnq" --depth "$K" -o "$OUT/judged")
[ -n "$BUDGET" ] && judge+=(--time-budget "$BUDGET")
"${judge[@]}" --dry-run | tee "$OUT/plan.txt"
start=$(date +%s)
"${judge[@]}" > "$OUT/judge.txt"
end=$(date +%s)
echo "mtr judge: $((end - start)) s wall, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/wall.txt"
"$MTR" --quiet qrels apply "$OUT/sparse" "$OUT/judged" --variant filled -o "$OUT/filled.qrels"
"$TAU" table "$OUT/full" "$OUT/sparse" "$OUT/filled.qrels" "$MTRAG/runs_clapnq" "$K" 1000 1 | tee "$OUT/table.md"
python3 - "$OUT/judged" <<'EOF'
import json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/summary.json"))
a = json.load(open(f"{d}/audit/summary.json"))
print(f"holes {s['holes']}, judged {s['judged']}, relevant {s['relevant']}, complete {s['complete']}")
# what the result rests on, each judgement counted once whichever run of the command made it
for name, c in sorted(a["cost"]["per_judge"].items()) + [("total", a["cost"]["total"])]:
    print(f"  {name}: {c['calls']} judgements ({c['cache_hits']} from the cache), {c['failed']} failed, {c['prompt_tokens']} prompt / {c['completion_tokens']} completion tokens")
sp = json.load(open(f"{d}/spend.json"))
print(f"this run: {sp['this_run']['paid_calls']} calls, {sp['this_run']['cache_hits']} cache hits")
EOF
# post hoc, from the same judgements (nothing called): the relevance judge (e5) alone, a hole
# relevant when its rating is at least 4
python3 - "$OUT" <<'EOF2'
import json, sys
d = sys.argv[1]
out = [l for l in open(f"{d}/sparse/qrels.tsv").read().splitlines() if l.strip()]
for line in open(f"{d}/judged/judgements.jsonl"):
    v = json.loads(line)
    e5 = [j for j in v["judges"] if "e5" in j["judge"] and j["rating"] is not None]
    if e5:
        out.append(f"{v['turn_id']} 0 {v['passage_id']} {int(e5[0]['rating'] >= 4.0)}")
open(f"{d}/filled-e5.qrels", "w").write("\n".join(out) + "\n")
EOF2
echo "post hoc: the holes filled by e5 alone"
"$TAU" table "$OUT/full" "$OUT/sparse" "$OUT/filled-e5.qrels" "$MTRAG/runs_clapnq" "$K" 1000 1 | tee "$OUT/table-e5.md"
