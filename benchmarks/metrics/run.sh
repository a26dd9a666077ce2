#!/usr/bin/env bash
# Times `mtr eval` against pytrec_eval-terrier, ranx and ir-measures on the same seeded TREC
# files (10k queries x 1000 docs and 100k queries x 100 docs, ~10M run lines each), for
# ndcg_cut.10, map, recall.100 and recip_rank, end to end (file to numbers). Records user+sys
# CPU and peak RSS with /usr/bin/time -v, and prints a ratio table.
#
# The Python tools go into a throwaway venv ($VENV); they are never a dependency of mtr.
# ranx's numba JIT (and every tool's import) is paid by a warm-up on the first 5000 lines of the
# same files, in the same process, before the timed section; the table shows both the whole process and the
# timed section ("in-proc").
#
# usage: benchmarks/metrics/run.sh            (needs target/release/mtr: cargo build --release --bin mtr)
# env:   MTR=path/to/mtr  DATA=/tmp/mtr-bench-metrics  VENV=/tmp/mtr-bench-metrics-venv
#        SETS="q10k_d1000 q100k_d100"  TOOLS="pytrec_eval ranx ir_measures"  SKIP_PY=1
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
MTR="${MTR:-$root/target/release/mtr}"
DATA="${DATA:-/tmp/mtr-bench-metrics}"
VENV="${VENV:-/tmp/mtr-bench-metrics-venv}"
SETS="${SETS:-q10k_d1000 q100k_d100}"
TOOLS="${TOOLS:-pytrec_eval ranx ir_measures}"
MEASURES=(-m ndcg_cut.10 -m map -m recall.100 -m recip_rank)

[ -x "$MTR" ] || { echo "no mtr binary at $MTR (cargo build --release --bin mtr)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

if [ -z "${SKIP_PY:-}" ] && [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q pytrec_eval-terrier ranx ir-measures
fi

for s in $SETS; do
    if [ ! -s "$DATA/$s.run" ]; then
        python3 "$here/gen_trec.py" "$DATA" --standard
        break
    fi
done

results="$DATA/results.tsv"
: > "$results"

# measure NAME SET cmd... : runs cmd under /usr/bin/time -v, appends a row to $results
measure() {
    local name="$1" set="$2"; shift 2
    local err out
    err="$(mktemp)"; out="$(mktemp)"
    /usr/bin/time -v "$@" > "$out" 2> "$err"
    local user sys wall rss
    user=$(awk -F': ' '/User time/ {print $2}' "$err")
    sys=$(awk -F': ' '/System time/ {print $2}' "$err")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$err")
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$err")
    local inproc="-" values
    if [ "$name" = mtr ]; then
        values=$(awk -F'\t' '{gsub(/ +/, "", $1); printf "%s=%s ", $1, $3}' "$out")
    else
        inproc=$(python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["cpu_s"])' "$out")
        values=$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["values"]; print(" ".join("%s=%.4f" % kv for kv in v.items()))' "$out")
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$set" "$name" "$(python3 -c "print('%.2f' % ($user + $sys))")" "$inproc" "$wall" "$rss" "$values" >> "$results"
    rm -f "$err" "$out"
}

for s in $SETS; do
    q="$DATA/$s.qrels"; r="$DATA/$s.run"
    echo "== $s: $(wc -l < "$r") run lines, $(du -m "$r" | cut -f1) MB" >&2
    # Page cache warm for everyone: read the files once.
    cat "$q" "$r" > /dev/null
    measure mtr "$s" "$MTR" eval -c "${MEASURES[@]}" "$q" "$r"
    measure mtr "$s" "$MTR" eval -c "${MEASURES[@]}" "$q" "$r"   # second run: best of two
    if [ -z "${SKIP_PY:-}" ]; then
        for t in $TOOLS; do
            measure "$t" "$s" "$VENV/bin/python" "$here/tools.py" "$t" "$q" "$r"
        done
    fi
done

python3 - "$results" "$DATA" <<'EOF'
import collections, os, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
best = collections.OrderedDict()
for s, name, cpu, inproc, wall, rss, values in rows:
    key = (s, name)
    if key not in best or float(cpu) < float(best[key][0]):
        best[key] = (cpu, inproc, wall, rss, values)
print(f"{'set':<12} {'tool':<12} {'cpu s':>8} {'in-proc s':>9} {'wall':>9} {'peak RSS MB':>11} {'run MB':>7} {'x mtr cpu':>9}")
for (s, name), (cpu, inproc, wall, rss, values) in best.items():
    mtr_cpu = float(best[(s, "mtr")][0])
    run_mb = os.path.getsize(os.path.join(sys.argv[2], s + ".run")) / 2**20
    print(f"{s:<12} {name:<12} {float(cpu):>8.2f} {inproc:>9} {wall:>9} {int(rss)/1024:>11.0f} {run_mb:>7.0f} {float(cpu)/max(mtr_cpu,1e-9):>9.1f}")
print()
for (s, name), (*_, values) in best.items():
    print(f"{s:<12} {name:<12} {values}")
EOF
