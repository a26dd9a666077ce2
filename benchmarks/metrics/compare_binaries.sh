#!/usr/bin/env bash
# Two mtr binaries side by side (e.g. before and after a refactor), by instruction counts under
# callgrind: repeatable whatever else the machine is doing, so a shared 2-core machine can tell
# "within noise" from a real slowdown. Checks that both print the same numbers.
#
# usage: benchmarks/metrics/compare_binaries.sh OLD_MTR NEW_MTR [DATA_DIR]
#   eval: two seeded TREC sets from gen_trec.py (2k queries x 1000 docs, 20k x 100; ~100 MB
#   each), `mtr eval -c` with ndcg_cut.10, map, recall.100, recip_rank.
#   bench: a seeded 5,000-turn native benchmark and four seeded external runs, `mtr bench`
#   with its defaults (1,000 bootstrap resamples, randomization tests); outputs compared
#   without the git commit line.
set -euo pipefail
old="$1"; new="$2"; data="${3:-/tmp/mtr-compare}"
here="$(cd "$(dirname "$0")" && pwd)"
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
mkdir -p "$data"
count() { grep -o 'Collected : [0-9]*' "$1" | awk '{print $3}'; }
ratio() { python3 -c "print(f'{$2/$1:.4f}')" ; }
[ -f "$data/q2k_d1000.run" ] || python3 "$here/gen_trec.py" "$data" --queries 2000 --docs 1000 --name q2k_d1000
[ -f "$data/q20k_d100.run" ] || python3 "$here/gen_trec.py" "$data" --queries 20000 --docs 100 --name q20k_d100
echo "| job | old instructions | new instructions | new / old | same output |"
echo "|---|---:|---:|---:|---|"
for s in q2k_d1000 q20k_d100; do
    for b in old new; do
        bin=$old; [ $b = new ] && bin=$new
        valgrind --tool=callgrind --callgrind-out-file="$data/cg-$b.out" "$bin" eval -c \
            -m ndcg_cut.10 -m map -m recall.100 -m recip_rank "$data/$s.qrels" "$data/$s.run" \
            > "$data/eval-$b.txt" 2> "$data/cg-$b.log"
    done
    o=$(count "$data/cg-old.log"); n=$(count "$data/cg-new.log")
    same=no; cmp -s "$data/eval-old.txt" "$data/eval-new.txt" && same=yes
    echo "| eval $s | $o | $n | $(ratio "$o" "$n") | $same |"
done
python3 - "$data" "$here/../scale" <<'PY'
import json, random, sys
sys.path.insert(0, sys.argv[2])
import audit_1m
d = sys.argv[1]
n = audit_1m.write_benchmark(f"{d}/bench", 5000, 3)
rng = random.Random(5)
golds = {}
for line in open(f"{d}/bench/dialogues.jsonl"):
    for t in json.loads(line)["turns"]:
        golds[t["id"]] = t["gold"][0]["passage_id"]
for s, quality in enumerate([0.3, 0.5, 0.6, 0.8]):
    with open(f"{d}/run{s}.trec", "w") as f:
        for q, g in golds.items():
            docs = [f"p{rng.randrange(n)}" for _ in range(100)]
            if rng.random() < quality:
                docs[rng.randrange(20)] = g
            seen, r = set(), 0
            for doc in docs:
                if doc not in seen:
                    seen.add(doc); r += 1
                    f.write(f"{q} Q0 {doc} {r} {100 - r:.2f} sys{s}\n")
PY
for b in old new; do
    bin=$old; [ $b = new ] && bin=$new
    rm -rf "$data/out-$b"
    valgrind --tool=callgrind --callgrind-out-file="$data/cg-$b.out" "$bin" bench "$data/bench" \
        --run a="$data/run0.trec" --run b="$data/run1.trec" --run c="$data/run2.trec" \
        --run d="$data/run3.trec" -o "$data/out-$b" --quiet > /dev/null 2> "$data/cg-$b.log"
done
o=$(count "$data/cg-old.log"); n=$(count "$data/cg-new.log")
same=yes
for f in bench.json per_query.jsonl report.md; do
    diff -q <(sed "s#$data/out-old#OUT#g; /git_commit/d; /(commit [0-9a-f]*)/d" "$data/out-old/$f") \
            <(sed "s#$data/out-new#OUT#g; /git_commit/d; /(commit [0-9a-f]*)/d" "$data/out-new/$f") > /dev/null || same=no
done
echo "| bench 5k turns x 4 runs | $o | $n | $(ratio "$o" "$n") | $same |"
