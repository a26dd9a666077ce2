#!/usr/bin/env bash
# Corpus reading benchmark: a synthetic N-article Wikipedia dump (default 1,000,000 articles,
# about 3 GB) as WikiExtractor output and as a Hugging Face Parquet dump, each read and sampled
# to SAMPLE documents (default 2,000) by `mtr synth --corpus`'s readers, RUNS times (default 3),
# timed with /usr/bin/time -v (wall time, max RSS); then Python's `datasets` reading the same
# Parquet and drawing the same number of documents, when it can be installed (a venv in the
# temporary folder). Everything is generated into a temporary folder under /tmp and deleted
# afterwards. No LLM is called.
#
# Usage: benchmarks/corpus/run.sh        (N=..., SAMPLE=..., RUNS=..., PYTHON_DATASETS=0 to skip)
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${N:-1000000}"
sample="${SAMPLE:-2000}"
runs="${RUNS:-3}"
tmp="$(mktemp -d /tmp/mtr-corpus-bench.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT

cargo build -q --release -p mtr-pipeline --features fixtures --example bench_corpus
bin=target/release/examples/bench_corpus
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; N=$n SAMPLE=$sample RUNS=$runs"

"$bin" gen-wiki "$tmp/wiki" "$n"
"$bin" gen-parquet "$tmp/hf" "$n"
echo "WikiExtractor dump: $(du -sh "$tmp/wiki" | cut -f1), Parquet dump: $(du -sh "$tmp/hf" | cut -f1)"

# one measured run: the command's own line, then wall time and max RSS from /usr/bin/time -v
measure() {
  local label="$1"
  shift
  /usr/bin/time -v "$@" > "$tmp/out.txt" 2> "$tmp/time.txt" || { cat "$tmp/out.txt" "$tmp/time.txt"; return 1; }
  local wall rss
  wall="$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$tmp/time.txt")"
  rss="$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$tmp/time.txt")"
  echo "$label  wall $wall  max RSS ${rss} MB  | $(tr "\n" " " < "$tmp/out.txt")"
}

for r in $(seq "$runs"); do
  measure "mtr  wikiextractor run $r" "$bin" read "$tmp/wiki" "$sample" 0
done
for r in $(seq "$runs"); do
  measure "mtr  parquet       run $r" "$bin" read "$tmp/hf" "$sample" 0
done

if [ "${PYTHON_DATASETS:-1}" = 1 ]; then
  if python3 -m venv "$tmp/venv" > /dev/null 2>&1 \
    && "$tmp/venv/bin/pip" install -q datasets > "$tmp/pip.txt" 2>&1; then
    echo "python: $("$tmp/venv/bin/python" -c 'import datasets, pyarrow; print("datasets", datasets.__version__, "pyarrow", pyarrow.__version__)')"
    for r in $(seq "$runs"); do
      rm -rf "$tmp/hf-cache"
      measure "python datasets     run $r" env HF_DATASETS_CACHE="$tmp/hf-cache" \
        "$tmp/venv/bin/python" benchmarks/corpus/datasets_read.py "$tmp/hf" "$sample" 0
    done
  else
    echo "python datasets: could not be installed ($(tail -1 "$tmp/pip.txt" 2>/dev/null || echo 'no venv'))"
  fi
fi
