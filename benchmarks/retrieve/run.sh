#!/usr/bin/env bash
# Retrieval benchmark: mtr's BM25 (tantivy) against bm25s on >= 1M generated passages, dense
# exact search against the memory-bandwidth bound, and ranking agreement with bm25s on the
# real MTRAG clapnq corpus. Prints JSON lines and a summary table; writes them to $OUT.
#
#   benchmarks/retrieve/run.sh [N_PASSAGES=1000000] [N_QUERIES=1000]
#
# Needs: a release build (cargo bench builds it; ~15 min cold on 2 cores), python3 with venv
# (a throwaway venv with bm25s + PyStemmer is created under $WORK), ../shared for the clapnq part.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-1000000}
Q=${2:-1000}
WORK=${WORK:-/tmp/mtr-bench-retrieve}
OUT=${OUT:-$WORK/results.jsonl}
mkdir -p "$WORK"
: > "$OUT"

cargo bench -p mtr-retrieve --bench retrieve --no-run 2>&1 | tail -1
BIN=$(ls -t target/release/deps/retrieve-* | grep -v '\.d$' | head -1)

if [ ! -x "$WORK/venv/bin/python" ]; then
  python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q "bm25s==0.3.11" pystemmer numpy scipy
fi
PY="$WORK/venv/bin/python"

if [ ! -s "$WORK/data/corpus.jsonl" ] || [ "$(wc -l < "$WORK/data/corpus.jsonl")" -ne "$N" ]; then
  "$BIN" gen "$WORK/data" "$N" "$Q" | tee -a "$OUT"
fi
rm -rf "$WORK/mtr-index" "$WORK/bm25s-index"
# Indexing and querying in separate processes, so query peak RSS excludes indexing.
/usr/bin/time -v "$BIN" index "$WORK/data/corpus.jsonl" "$WORK/mtr-index" 2> "$WORK/mtr-index.time" | tee -a "$OUT"
"$BIN" query "$WORK/mtr-index" "$WORK/data/queries.tsv" 100 | tee -a "$OUT"
"$PY" benchmarks/retrieve/bm25s_bench.py index "$WORK/data/corpus.jsonl" "$WORK/bm25s-index" | tee -a "$OUT"
"$PY" benchmarks/retrieve/bm25s_bench.py query "$WORK/bm25s-index" "$WORK/data/queries.tsv" 100 | tee -a "$OUT"
du -sm "$WORK/mtr-index" "$WORK/bm25s-index" "$WORK/data/corpus.jsonl" | awk '{printf "{\"mode\":\"disk\",\"path\":\"%s\",\"mb\":%s}\n", $2, $1}' | tee -a "$OUT"

# Dense exact search: 1M x 384 f32 (1.5 GB) against the read bandwidth of the same matrix.
"$BIN" dense "${DENSE_N:-1000000}" 384 64 100 | tee -a "$OUT"

# Ranking agreement on a real corpus: MTRAG clapnq, rewrite queries, top 10.
SHARED=../shared/data/mtrag
if [ -d "$SHARED" ]; then
  cargo build --release --bin mtr 2>&1 | tail -1
  MTR=target/release/mtr
  rm -rf "$WORK/clapnq" "$WORK/clapnq-index"
  $MTR -q import mtrag "$SHARED" --domain clapnq -o "$WORK/clapnq" > /dev/null
  $MTR -q retrieve "$WORK/clapnq" --index "$WORK/clapnq-index" --retriever bm25 --query rewrite --k 100 -o "$WORK/mtr.rewrite.trec" > /dev/null
  "$PY" benchmarks/retrieve/bm25s_bench.py run "$SHARED/corpus_clapnq.jsonl" "$SHARED/tasks_clapnq/clapnq_rewrite.jsonl" 100 "$WORK/bm25s.rewrite.trec" > /dev/null
  python3 benchmarks/retrieve/overlap.py "$WORK/mtr.rewrite.trec" "$WORK/bm25s.rewrite.trec" 10 | tee -a "$OUT"
  python3 benchmarks/retrieve/overlap.py "$WORK/mtr.rewrite.trec" "$SHARED/runs_clapnq/bm25__bm25_clapnq_rewrite.jsonl" 10 | tee -a "$OUT"
  for run in "$WORK/mtr.rewrite.trec" "$WORK/bm25s.rewrite.trec" "$SHARED/runs_clapnq/bm25__bm25_clapnq_rewrite.jsonl"; do
    printf '{"mode":"ndcg10","run":"%s","value":%s}\n' "$run" \
      "$($MTR eval -c -m ndcg_cut.10 "$WORK/clapnq/qrels.tsv" "$run" | awk '$1=="ndcg_cut_10"{print $3}')" | tee -a "$OUT"
  done
fi
echo "peak RSS while indexing (mtr): $(grep 'Maximum resident' "$WORK/mtr-index.time" | awk '{print $NF/1024 " MB"}')"
echo "results: $OUT"
