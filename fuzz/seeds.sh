#!/usr/bin/env bash
# Seed corpora, made at run time (never committed): every target starts from the fixtures of
# its format, and from small slices of ../shared when it is there (the first lines of the real
# MTRAG conversations, corpus, qrels and runs).
# Usage: fuzz/seeds.sh OUT_DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$1"
fx="$here/../tests/fixtures/formats"
shared="$here/../../shared/data/mtrag"
[ -d "$shared" ] || shared="$here/../shared/data/mtrag"
seed() { # target file...
  local t="$1"; shift
  mkdir -p "$out/$t"
  for f in "$@"; do
    [ -f "$f" ] && cp "$f" "$out/$t/$(echo "$f" | md5sum | cut -c1-12)"
  done
  return 0
}
slice() { # target file lines
  mkdir -p "$out/$1"
  [ -f "$2" ] && head -n "$3" "$2" > "$out/$1/shared-$(basename "$2")-$3"
  return 0
}
seed import_mtrag "$fx/mtrag/conversations_mini.jsonl"
seed import_mtrag_qrels "$fx/mtrag/tasks_mini/qrels/dev.tsv"
seed import_beir "$fx/beir/corpus.jsonl"
seed import_beir_qrels "$fx/beir/qrels/test.tsv" "$fx/beir/qrels/dev.tsv"
seed import_trec_dir "$fx/trec/topics.tsv"
seed import_topiocqa "$fx/topiocqa/topiocqa_dev.json"
seed import_qrecc "$fx/qrecc/qrecc_test.json"
seed import_inscit "$fx/inscit/dev.json"
seed import_cast "$fx/cast/2020_manual_evaluation_topics_v1.0.json" "$fx/ikat/2023_ikat_test_topics.json"
seed import_chatrag "$fx"/chatrag/data/*/*.json "$fx"/chatrag_skips/data/*/*.json
seed import_coral "$fx/coral/test/new_test_conversation.json"
seed import_doc2dial "$fx/doc2dial/doc2dial_dial_validation.json"
seed import_quac "$fx/quac/val_v0.2.json"
seed trec_qrels "$fx/trec/qrels.txt" "$fx/cast/2020qrels.txt" "$fx/beir/qrels/test.tsv"
seed trec_run "$fx/trec/run.bm25.txt"
seed metrics_qrels "$fx/trec/qrels.txt" "$fx/beir/qrels/test.tsv"
seed metrics_run "$fx/trec/run.bm25.txt"
seed jsonl_lines "$fx/mtrag/conversations_mini.jsonl" "$fx/mtrag/corpus_mini.jsonl"
seed pipeline_corpus_jsonl "$fx/beir/corpus.jsonl" "$fx/mtrag/corpus_mini.jsonl"
mkdir -p "$out/pipeline_corpus_gz" "$out/manifest_toml"
gzip -c "$fx/beir/corpus.jsonl" > "$out/pipeline_corpus_gz/beir.gz"
printf 'name = "x"\nversion = "1"\nsource = "mtrag"\nlanguage = "en"\nfingerprint = "ab"\n' > "$out/manifest_toml/minimal"
if [ -d "$shared" ]; then
  slice import_mtrag "$shared/conversations_clapnq.jsonl" 3
  slice import_mtrag_qrels "$shared/tasks_clapnq/qrels/dev.tsv" 40
  slice import_beir "$shared/corpus_clapnq.jsonl" 20
  slice jsonl_lines "$shared/corpus_clapnq.jsonl" 10
  slice pipeline_corpus_jsonl "$shared/corpus_govt.jsonl" 10
  slice trec_run "$shared/runs_clapnq/bm25__bm25_clapnq_lastturn.jsonl" 5
  slice metrics_run "$shared/runs_clapnq/bm25__bm25_clapnq_lastturn.jsonl" 5
  slice metrics_qrels "$shared/tasks_clapnq/qrels/dev.tsv" 40
  slice trec_qrels "$shared/tasks_clapnq/qrels/dev.tsv" 40
fi
