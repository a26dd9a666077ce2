#!/usr/bin/env bash
# Import/validate/stats throughput and memory on a synthetic BEIR benchmark with N passages
# (default 1,000,000) and real MTRAG import time (when ../shared is present).
# Usage: benchmarks/import/scale.sh [N]   (builds the release binary; needs python3 and GNU time)
# What it shows: the corpus is streamed, so peak memory grows with the number of passage ids
# (a hash set), not with the corpus size in bytes.
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${1:-1000000}"
cargo build --release --bin mtr >/dev/null
MTR="${CARGO_TARGET_DIR:-target}/release/mtr"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
python3 - "$WORK/beir" "$N" <<'PY'
import json, os, random, sys
out, n = sys.argv[1], int(sys.argv[2])
os.makedirs(f"{out}/qrels", exist_ok=True)
rng = random.Random(42)
words = "retrieval conversation passage answer question benchmark judge corpus query turn rewrite gold".split()
with open(f"{out}/corpus.jsonl", "w") as f:
    for i in range(n):
        text = " ".join(rng.choice(words) for _ in range(40))
        f.write(json.dumps({"_id": f"p{i}", "title": f"doc {i // 10}", "text": text}) + "\n")
with open(f"{out}/queries.jsonl", "w") as q, open(f"{out}/qrels/test.tsv", "w") as r:
    r.write("query-id\tcorpus-id\tscore\n")
    for c in range(2000):
        for t in range(1, 6):
            q.write(json.dumps({"_id": f"c{c}_{t}", "text": f"question {t} of conversation {c} about " + rng.choice(words)}) + "\n")
            for _ in range(3):
                r.write(f"c{c}_{t}\tp{rng.randrange(n)}\t1\n")
PY
echo "corpus: $N passages, $(du -h "$WORK/beir/corpus.jsonl" | cut -f1)"
/usr/bin/time -f "import:   %e s wall, max RSS %M KB" "$MTR" -q import beir "$WORK/beir" -o "$WORK/native" --lenient
/usr/bin/time -f "validate: %e s wall, max RSS %M KB" "$MTR" -q validate "$WORK/native"
/usr/bin/time -f "stats:    %e s wall, max RSS %M KB" "$MTR" -q stats "$WORK/native"
/usr/bin/time -f "export:   %e s wall, max RSS %M KB" "$MTR" -q export "$WORK/native" --to beir -o "$WORK/export"
if [ -d ../shared/data/mtrag ]; then
  /usr/bin/time -f "mtrag (clapnq+govt): %e s wall, max RSS %M KB" "$MTR" -q import mtrag ../shared/data/mtrag -o "$WORK/mtrag"
fi
