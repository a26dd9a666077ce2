#!/usr/bin/env bash
# Verified turns per CPU-minute of `mtr synth` on the embedded default, two arms side by side.
#
#   benchmarks/pipeline/yield.sh A_SPEC B_SPEC
#
# An arm is NAME=CONFIG[,PROMPTS]: an mtr.toml and, optionally, a folder of prompt templates
# (`mtr synth --prompts`). Both arms synthesize the same corpus with the same seed and the same
# fixed work (DIALOGUES x TURNS, no time budget), at the same time, each on one of the two
# one-thread Qwen servers (`MTR_LOCAL_USE_SERVER` generator / judge, swapped every run so
# neither arm keeps the faster server), so both meet the same load. Every run starts the local
# servers afresh (`mtr local stop`: cold prompt caches) and gives each arm a fresh LLM cache.
#
# CPU time, not wall time, is the unit: the arm's chat server (utime + stime of its process,
# read from /proc before it stops), the arm's mtr process (/usr/bin/time) and the shared e5
# server's CPU split by the arm's share of its calls. Wall time is printed too; it depends on
# whatever else runs on the machine, CPU time much less.
#
# Per arm and run it prints verified turns, calls, prompt tokens (sent / evaluated by the
# servers, i.e. not found in a slot's prompt cache), generated tokens and CPU seconds; then
# each arm's totals over the runs with the spread of turns per CPU-minute, and the ratio B / A.
#
# Environment: RUNS (2), LANG_ (en), DIALOGUES (4), TURNS (3), SEED (7), MTR_BIN (default
# target/release/mtr; MTR_BIN_A / MTR_BIN_B: one binary per arm, to compare two builds),
# SERVERS_A / SERVERS_B ("GEN_SERVER JUDGE_SERVER": the arm's local server names, when its
# config names other models), WORK (default /tmp/mtr-yield), EXTRA (more `mtr synth` arguments).
set -euo pipefail
cd "$(dirname "$0")/../.."

[ $# -eq 2 ] || { sed -n 2,25p "$0"; exit 2; }
RUNS="${RUNS:-2}"
LANG_="${LANG_:-en}"
DIALOGUES="${DIALOGUES:-4}"
TURNS="${TURNS:-3}"
SEED="${SEED:-7}"
MTR_BIN="${MTR_BIN:-$PWD/target/release/mtr}"
# a binary per arm, to compare two builds (before and after a change) side by side
MTR_BIN_A="${MTR_BIN_A:-$MTR_BIN}"
MTR_BIN_B="${MTR_BIN_B:-$MTR_BIN}"
WORK="${WORK:-/tmp/mtr-yield}"
for b in "$MTR_BIN_A" "$MTR_BIN_B"; do
  [ -x "$b" ] || { echo "no mtr binary at $b (cargo build --release --bin mtr)"; exit 2; }
done
rm -rf "$WORK" && mkdir -p "$WORK"
eval "$("$MTR_BIN_A" local paths)"
STATE="$mtr_state_dir/local"

# the CPU seconds (utime + stime) of the process whose state file is $1, 0 when not running
cpu_of() {
  local f="$STATE/$1.json" pid
  [ -f "$f" ] || { echo 0; return; }
  pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$f")
  [ -r "/proc/$pid/stat" ] || { echo 0; return; }
  python3 - "$pid" <<'EOF'
import os, sys
f = open(f"/proc/{sys.argv[1]}/stat").read().rsplit(")", 1)[1].split()
print((int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK"))
EOF
}

# each arm's two chat servers, by the names their state files have (local-<GGUF stem>[-gen]);
# an arm whose config names another generator/judge model sets its own (SERVERS_B="GEN JUDGE")
read -r GEN_A JUDGE_A <<< "${SERVERS_A:-local-qwen2.5-coder-0.5b-instruct-q4_k_m-gen local-qwen2.5-coder-0.5b-instruct-q4_k_m}"
read -r GEN_B JUDGE_B <<< "${SERVERS_B:-$GEN_A $JUDGE_A}"

arm() { # name spec server outdir binary: one synthesis, its outputs in outdir
  local name=$1 spec=$2 server=$3 out=$4 bin=$5 config prompts=()
  config="${spec#*=}"
  if [[ "$config" == *,* ]]; then prompts=(--prompts "${config#*,}"); config="${config%%,*}"; fi
  mkdir -p "$out"
  MTR_LOCAL_CORES=1 MTR_LOCAL_USE_SERVER="$server" /usr/bin/time -f "%U %S %e" -o "$out/time" \
    "$bin" --config "$config" synth --llm-cache "$out/llm-cache.sqlite" \
    --corpus "corpora/$LANG_" -o "$out/bench" --dialogues "$DIALOGUES" --turns "$TURNS" \
    --seed "$SEED" --chunk-tokens 64-160 "${prompts[@]}" ${EXTRA:-} > "$out/log" 2>&1
}

A="$1"; B="$2"
for r in $(seq 1 "$RUNS"); do
  "$MTR_BIN_A" local stop > /dev/null 2>&1 || true
  if [ $((r % 2)) -eq 1 ]; then sa=generator; sb=judge; else sa=judge; sb=generator; fi
  echo "== run $r: ${A%%=*} on the $sa server, ${B%%=*} on the $sb server ($(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg))"
  arm "${A%%=*}" "$A" "$sa" "$WORK/r$r-a" "$MTR_BIN_A" & pa=$!
  arm "${B%%=*}" "$B" "$sb" "$WORK/r$r-b" "$MTR_BIN_B" & pb=$!
  wait $pa || { echo "arm A failed:"; tail -20 "$WORK/r$r-a/log"; exit 1; }
  wait $pb || { echo "arm B failed:"; tail -20 "$WORK/r$r-b/log"; exit 1; }
  # the servers' CPU, before their keep-alive stops them
  for side in a b; do
    s=$sa; gen=$GEN_A; judge=$JUDGE_A
    [ $side = b ] && { s=$sb; gen=$GEN_B; judge=$JUDGE_B; }
    if [ "$s" = generator ]; then cpu_of "$gen"; else cpu_of "$judge"; fi > "$WORK/r$r-$side/server_cpu"
  done
  cpu_of local-e5 > "$WORK/r$r-e5_cpu"
done
"$MTR_BIN_A" local stop > /dev/null 2>&1 || true

python3 - "$WORK" "$RUNS" "${A%%=*}" "${B%%=*}" <<'EOF'
import json, statistics, sys
from pathlib import Path
work, runs, names = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:5]

def arm(r, side):
    d = work / f"r{r}-{side}"
    spend = json.loads((d / "bench" / "spend.json").read_text())["this_run"]
    turns = sum(len(json.loads(l)["turns"]) for l in (d / "bench" / "dialogues.jsonl").open())
    user, sys_, wall = map(float, (d / "time").read_text().split()[:3])
    eps = spend["endpoints"]
    chat = {k: v for k, v in eps.items() if k.startswith("local-qwen")}
    e5_calls = sum(v["calls"] for k, v in eps.items() if k.startswith("local-e5"))
    work_ = list(spend.get("server_work", {}).values())
    return dict(
        turns=turns, wall=wall, mtr_cpu=user + sys_,
        server_cpu=float((d / "server_cpu").read_text()),
        calls=sum(v["calls"] for v in chat.values()),
        prompt=sum(v["prompt_tokens"] for v in chat.values()),
        evaluated=sum(w["prompt_evaluated"] for w in work_),
        generated=sum(v["completion_tokens"] for v in chat.values()),
        e5_calls=e5_calls)

rows = {0: [], 1: []}
print(f"\n{'run':>3} {'arm':<14} {'turns':>5} {'calls':>5} {'prompt':>7} {'evaluated':>9} {'reused':>6} {'generated':>9} {'cpu s':>7} {'wall s':>6} {'turns/cpu-min':>13}")
for r in range(1, runs + 1):
    a, b = arm(r, "a"), arm(r, "b")
    e5 = float((work / f"r{r}-e5_cpu").read_text())
    n = max(a["e5_calls"] + b["e5_calls"], 1)
    for i, x in enumerate((a, b)):
        x["cpu"] = x["server_cpu"] + x["mtr_cpu"] + e5 * x["e5_calls"] / n
        x["rate"] = x["turns"] / (x["cpu"] / 60) if x["cpu"] else 0.0
        reused = 1 - x["evaluated"] / x["prompt"] if x["prompt"] else 0.0
        print(f"{r:>3} {names[i]:<14} {x['turns']:>5} {x['calls']:>5} {x['prompt']:>7} {x['evaluated']:>9} {reused:>6.0%} {x['generated']:>9} {x['cpu']:>7.0f} {x['wall']:>6.0f} {x['rate']:>13.2f}")
        rows[i].append(x)

print()
tot = []
for i in (0, 1):
    xs = rows[i]
    turns = sum(x["turns"] for x in xs); cpu = sum(x["cpu"] for x in xs)
    rates = [x["rate"] for x in xs]
    per = lambda k: sum(x[k] for x in xs) / max(turns, 1)
    spread = f"{min(rates):.2f}-{max(rates):.2f}" if len(rates) > 1 else f"{rates[0]:.2f}"
    print(f"{names[i]}: {turns} verified turns in {cpu:.0f} CPU s: {turns / (cpu / 60):.2f} per CPU-minute (runs {spread}); "
          f"per verified turn {per('calls'):.1f} calls, {per('prompt'):.0f} prompt tokens sent, {per('evaluated'):.0f} evaluated, {per('generated'):.0f} generated")
    tot.append(turns / (cpu / 60) if cpu else 0.0)
print(f"\nratio {names[1]} / {names[0]}: {tot[1] / tot[0]:.2f}x verified turns per CPU-minute" if tot[0] else "")
EOF
