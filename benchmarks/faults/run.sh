#!/usr/bin/env bash
# Fault campaign: mtr against a hostile environment, on loopback only, bounded in time.
#
#   benchmarks/faults/run.sh                  # defaults below; ~5-10 minutes on 2 cores
#   SAMPLE=12 FUZZ=300 benchmarks/faults/run.sh
#
# What it does (see README.md next to this script):
#   1. a reference audit on the fake server with injected faults of 8 kinds;
#   2. the same audit killed with SIGKILL at ~30% of its calls, with SIGINT at ~60%, and
#      resumed to the end: how many answers were paid for twice, whether the judgements match;
#   3. four audits at once on one cache;
#   4. an audit whose output folder cannot be written: how many calls before it stops;
#   5. fuzzed bad inputs to validate, stats and eval: exit codes, panics, hangs;
#   6. the configured key and URL password (echoed by the fake's 401 faults) searched in every
#      file written and every log line.
# It prints the figures as `figure<TAB>value` lines at the end. Nothing leaves 127.0.0.1.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SEED=${SEED:-17}
SAMPLE=${SAMPLE:-10}         # dialogues audited (MTRAG clapnq when ../shared is present)
DIMS=${DIMS:-alignment,faithfulness,quality}
FAULT_RATE=${FAULT_RATE:-0.025}   # per kind; 8 kinds = 20% of requests
LATENCY_MS=${LATENCY_MS:-150}
FUZZ=${FUZZ:-300}            # fuzzed inputs
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/mtr-faults.XXXXXX")}
KEY="sk-faults-campaign-$(printf '%08x' "$SEED")-secret"
PASSWORD="pw-faults-$(printf '%04x' "$SEED")"
mkdir -p "$WORK"
cd "$ROOT" || exit 1

if [ -z "${SKIP_BUILD:-}" ]; then
  echo "building (debug) ..." >&2
  cargo build -q --bin mtr >&2 || exit 1
  cargo build -q -p mtr-llm --features fake --bin mtr-fake-llm >&2 || exit 1
fi
MTR="$ROOT/target/debug/mtr"
FAKE="$ROOT/target/debug/mtr-fake-llm"

PANICS=0
KILLS=0
KILLS_SURVIVED=0
INJECTED=0

# --- helpers ---------------------------------------------------------------------------------
FAKE_PID=""
FAKE_LOG=""
start_fake() { # start_fake NAME [extra flags]: starts the fake server, sets FAKE_URL
  FAKE_LOG="$WORK/fake-$1.log"
  shift
  "$FAKE" --seed "$SEED" --latency-ms "$LATENCY_MS" --retry-after-s 0.05 "$@" 2>"$FAKE_LOG" &
  FAKE_PID=$!
  for _ in $(seq 200); do
    grep -q "listening on" "$FAKE_LOG" 2>/dev/null && break
    sleep 0.05
  done
  FAKE_URL=$(sed -n 's/^listening on //p' "$FAKE_LOG" | head -1)
}
stop_fake() { # prints "chat_calls injected_faults" (the server prints them as it stops)
  kill -INT "$FAKE_PID" 2>/dev/null
  for _ in $(seq 200); do
    grep -q "^chat_calls" "$FAKE_LOG" 2>/dev/null && break
    sleep 0.05
  done
  sed -n 's/^chat_calls \([0-9]*\) injected_faults \([0-9]*\)$/\1 \2/p' "$FAKE_LOG" | tail -1
}
faults_flags() {
  local r=$FAULT_RATE
  echo "--rate-429 $r --rate-500 $r --rate-hang $r --rate-malformed $r --rate-broken $r --rate-length $r --rate-echo-auth $r --rate-no-choices $r"
}
write_config() { # write_config FILE CACHE
  local url=${FAKE_URL/http:\/\//http://faults:$PASSWORD@}
  cat >"$1" <<EOF
[llm]
cache = "$2"
[llm.retry]
max_attempts = 6
base_delay_ms = 5
max_delay_s = 0.2
[[llm.endpoints]]
name = "judge-a"
base_url = "$url"
model = "judge-a-model"
api_key_env = "MTR_FAULTS_KEY"
max_concurrency = 4
timeout_s = 2
price_in_per_mtok = 1.0
price_out_per_mtok = 2.0
[[llm.endpoints]]
name = "judge-b"
base_url = "$url"
model = "judge-b-model"
api_key_env = "MTR_FAULTS_KEY"
max_concurrency = 4
timeout_s = 2
price_in_per_mtok = 1.0
price_out_per_mtok = 2.0
[llm.roles]
judges = ["judge-a", "judge-b"]
[audit]
resamples = 100
EOF
}
export MTR_FAULTS_KEY="$KEY"
unset MTR_LOG
count_panics() { # count_panics FILE...: adds "panicked at" occurrences to PANICS
  local n
  n=$(cat "$@" 2>/dev/null | grep -c "panicked at")
  PANICS=$((PANICS + n))
}
rows() { python3 - "$1" <<'EOF'
import sqlite3, sys
try:
    c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=5)
    print(c.execute("SELECT COUNT(*) FROM chat").fetchone()[0])
except Exception:
    print(0)
EOF
}
wait_rows() { # wait_rows CACHE TARGET PID: until the cache holds TARGET answers or PID ended
  python3 - "$@" <<'EOF'
import os, sqlite3, sys, time
path, target, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
deadline = time.time() + 600
while time.time() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        break
    try:
        c = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        n = c.execute("SELECT COUNT(*) FROM chat").fetchone()[0]
        c.close()
        if n >= target:
            break
    except Exception:
        pass
    time.sleep(0.02)
EOF
}
audit() { # audit CONFIG OUT LOG [extra args]
  local cfg=$1 out=$2 log=$3
  shift 3
  "$MTR" --config "$cfg" -vv audit "$BENCH" -o "$out" --sample "$SAMPLE" --seed "$SEED" \
    --dimensions "$DIMS" "$@" >"$log.out" 2>"$log"
}
audit_bg() { # audit_bg CONFIG OUT LOG: mtr itself in the background (AUDIT_PID is its pid,
  # not a subshell's, so that signals reach it)
  local cfg=$1 out=$2 log=$3
  "$MTR" --config "$cfg" -vv audit "$BENCH" -o "$out" --sample "$SAMPLE" --seed "$SEED" \
    --dimensions "$DIMS" >"$log.out" 2>"$log" &
  AUDIT_PID=$!
}

# --- the benchmark -----------------------------------------------------------------------------
BENCH="$WORK/bench"
if [ -d "$ROOT/../shared/data/mtrag" ]; then
  SRC="MTRAG clapnq (../shared)"
  "$MTR" --quiet import mtrag "$ROOT/../shared/data/mtrag" --domain clapnq -o "$BENCH" >/dev/null || exit 1
else
  SRC="the MTRAG mini fixture (../shared absent)"
  "$MTR" --quiet import mtrag "$ROOT/tests/fixtures/formats/mtrag" -o "$BENCH" >/dev/null || exit 1
fi
echo "benchmark: $SRC, $SAMPLE dialogues sampled, dimensions $DIMS" >&2

# --- 1. reference audit ------------------------------------------------------------------------
echo "1. reference audit with $(faults_flags | wc -w | awk '{print $1/2}') fault kinds at $FAULT_RATE each ..." >&2
# shellcheck disable=SC2046
start_fake ref $(faults_flags)
write_config "$WORK/ref.toml" "$WORK/ref-cache.sqlite"
T0=$(date +%s.%N)
audit "$WORK/ref.toml" "$WORK/ref-audit" "$WORK/ref.log"
REF_RC=$?
T1=$(date +%s.%N)
read -r REF_CALLS REF_INJ <<<"$(stop_fake)"
REF_ROWS=$(rows "$WORK/ref-cache.sqlite")
INJECTED=$((INJECTED + REF_INJ))
count_panics "$WORK/ref.log"
echo "   exit $REF_RC, $REF_CALLS requests ($REF_INJ faults), $REF_ROWS answers cached, $(awk "BEGIN{printf \"%.0f\", $T1 - $T0}") s" >&2

# --- 2. kills and resume -----------------------------------------------------------------------
echo "2. SIGKILL at ~30%, SIGINT at ~60%, resume ..." >&2
# shellcheck disable=SC2046
start_fake kill $(faults_flags)
write_config "$WORK/kill.toml" "$WORK/kill-cache.sqlite"
KILL_CODES=""
for step in "KILL 30" "INT 60"; do
  read -r sig pct <<<"$step"
  target=$((REF_ROWS * pct / 100))
  audit_bg "$WORK/kill.toml" "$WORK/kill-audit" "$WORK/kill-$sig.log"
  pid=$AUDIT_PID
  wait_rows "$WORK/kill-cache.sqlite" "$target" "$pid"
  if kill -0 "$pid" 2>/dev/null; then
    kill -"$sig" "$pid"
    KILLS=$((KILLS + 1))
  fi
  wait "$pid"
  KILL_CODES="$KILL_CODES $sig:$?"
  count_panics "$WORK/kill-$sig.log"
done
audit "$WORK/kill.toml" "$WORK/kill-audit" "$WORK/kill-resume.log"
RESUME_RC=$?
count_panics "$WORK/kill-resume.log"
read -r KILL_CALLS KILL_INJ <<<"$(stop_fake)"
INJECTED=$((INJECTED + KILL_INJ))
KILL_ROWS=$(rows "$WORK/kill-cache.sqlite")
# answers received (requests minus injected faults) that did not end in the cache, beyond
# those of the uninterrupted reference (answers that failed to parse, say): paid and lost
REPEATED=$(( (KILL_CALLS - KILL_INJ - KILL_ROWS) - (REF_CALLS - REF_INJ - REF_ROWS) ))
IN_FLIGHT=$(( KILLS * 2 * 4 ))   # judges x max_concurrency per kill
if [ "$RESUME_RC" = "$REF_RC" ] && [ -s "$WORK/kill-audit/items.jsonl" ]; then
  KILLS_SURVIVED=$KILLS
fi
# judgements scored in both runs that differ (failed ones differ by which call a fault hit)
DIFF_SCORES=$(python3 - "$WORK/ref-audit/items.jsonl" "$WORK/kill-audit/items.jsonl" <<'EOF'
import json, sys
def load(p):
    out = {}
    try:
        for line in open(p):
            j = json.loads(line)
            if j.get("score") is None:
                continue
            k = json.dumps({x: j.get(x) for x in ("turn_id", "dimension", "judge", "passage_id", "trial", "sample")}, sort_keys=True)
            out[k] = j["score"]
    except FileNotFoundError:
        pass
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
both = set(a) & set(b)
print(f"{sum(a[k] != b[k] for k in both)} of {len(both)}")
EOF
)
echo "   exits:$KILL_CODES resume:$RESUME_RC; $KILL_CALLS requests ($KILL_INJ faults), $KILL_ROWS answers cached; repeated $REPEATED; differing scores $DIFF_SCORES" >&2

# --- 3. four audits on one cache ---------------------------------------------------------------
echo "3. four audits at once on one cache ..." >&2
# shellcheck disable=SC2046
start_fake shared $(faults_flags)
write_config "$WORK/shared.toml" "$WORK/shared-cache.sqlite"
pids=""
for i in 1 2 3 4; do
  "$MTR" --config "$WORK/shared.toml" --quiet audit "$BENCH" -o "$WORK/shared-audit-$i" \
    --sample "$SAMPLE" --seed $((SEED + i % 2)) --dimensions "$DIMS" \
    >"$WORK/shared-$i.out" 2>"$WORK/shared-$i.log" &
  pids="$pids $!"
done
SHARED_CODES=""
for p in $pids; do
  wait "$p"
  SHARED_CODES="$SHARED_CODES $?"
done
read -r SH_CALLS SH_INJ <<<"$(stop_fake)"
INJECTED=$((INJECTED + SH_INJ))
count_panics "$WORK"/shared-*.log
LOCKED=$(cat "$WORK"/shared-*.log | grep -ci "database is locked")
echo "   exits:$SHARED_CODES; $SH_CALLS requests ($SH_INJ faults); 'database is locked': $LOCKED" >&2

# --- 4. an output folder that cannot be written ------------------------------------------------
echo "4. unwritable output ..." >&2
start_fake ro
write_config "$WORK/ro.toml" "$WORK/ro-cache.sqlite"
echo "a file, not a folder" >"$WORK/not-a-dir"
audit "$WORK/ro.toml" "$WORK/not-a-dir/audit" "$WORK/ro.log"
RO_RC=$?
read -r RO_CALLS _ <<<"$(stop_fake)"
count_panics "$WORK/ro.log"
echo "   exit $RO_RC after $RO_CALLS calls" >&2

# --- 5. fuzzed bad inputs ----------------------------------------------------------------------
echo "5. $FUZZ fuzzed inputs ..." >&2
FUZZ_DIR="$WORK/fuzz"
python3 "$ROOT/benchmarks/faults/fuzz.py" "$BENCH" "$FUZZ_DIR" "$FUZZ" "$SEED" >&2 || exit 1
FUZZ_TRIED=0
FUZZ_HANGS=0
FUZZ_OTHER=0
FUZZ_RC0=0
FUZZ_RC1=0
FUZZ_RC2=0
for case in "$FUZZ_DIR"/case-*; do
  for cmd in validate stats eval; do
    case $cmd in
      eval) args=(eval "$case/qrels.tsv" "$case/run.txt") ;;
      *) args=("$cmd" "$case") ;;
    esac
    timeout 30 "$MTR" --quiet "${args[@]}" >/dev/null 2>"$case/$cmd.log"
    rc=$?
    FUZZ_TRIED=$((FUZZ_TRIED + 1))
    case $rc in
      0) FUZZ_RC0=$((FUZZ_RC0 + 1)) ;;
      1) FUZZ_RC1=$((FUZZ_RC1 + 1)) ;;
      2) FUZZ_RC2=$((FUZZ_RC2 + 1)) ;;
      124) FUZZ_HANGS=$((FUZZ_HANGS + 1)) ;;
      101) ;; # counted below from the log
      *) FUZZ_OTHER=$((FUZZ_OTHER + 1)); echo "   $case $cmd: exit $rc" >&2 ;;
    esac
    grep -q "panicked at" "$case/$cmd.log" && { PANICS=$((PANICS + 1)); echo "   PANIC: $case $cmd" >&2; }
  done
done
echo "   $FUZZ_TRIED command runs on $FUZZ inputs; hangs $FUZZ_HANGS; other exits $FUZZ_OTHER" >&2

# --- 6. secrets --------------------------------------------------------------------------------
# (the four configuration files hold the URL with its password: that is where it belongs)
LEAKS=$(grep -rl -a -e "$KEY" -e "$PASSWORD" "$WORK" --exclude={ref,kill,shared,ro}.toml 2>/dev/null | wc -l)
MASKED=$(cat "$WORK"/*.log | grep -c "Bearer \*\*\*")

# --- figures -----------------------------------------------------------------------------------
cat <<EOF
benchmark	$SRC, $SAMPLE dialogues, $DIMS
reference_exit	$REF_RC
reference_requests	$REF_CALLS
reference_answers	$REF_ROWS
faults_injected	$INJECTED
kills	$KILLS
kill_exit_codes	$KILL_CODES
kills_survived	$KILLS_SURVIVED
resume_exit	$RESUME_RC
calls_repeated	$REPEATED (in flight at the kills, at most: $IN_FLIGHT)
differing_scores	$DIFF_SCORES
shared_cache_exits	$SHARED_CODES
database_locked_lines	$LOCKED
unwritable_output_exit	$RO_RC
unwritable_output_calls	$RO_CALLS
bad_inputs_tried	$FUZZ_TRIED ($FUZZ inputs x 3 commands)
fuzz_exit_0_1_2	$FUZZ_RC0 / $FUZZ_RC1 / $FUZZ_RC2
fuzz_hangs	$FUZZ_HANGS
fuzz_unexpected_exits	$FUZZ_OTHER
panics	$PANICS
files_with_secret	$LEAKS
log_lines_masked	$MASKED
work_dir	$WORK
EOF
