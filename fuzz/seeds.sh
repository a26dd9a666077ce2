#!/usr/bin/env bash
# Seed corpora, made at run time (never committed): every target starts from the fixtures of
# its format, from small slices of ../shared when it is there (the first lines of the real
# MTRAG conversations, corpus, qrels and runs, of the real synthesis corpora), and, for the
# targets whose seeds only code can write (Parquet, zipped office XML, Batch output lines that
# answer an export, a file chosen by a leading byte), from the built target itself
# (MTR_FUZZ_WRITE_SEEDS, fuzz/src/seeds.rs; skipped for a target not built).
# Usage: fuzz/seeds.sh OUT_DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$1"
fx="$here/../tests/fixtures/formats"
docs="$here/../tests/fixtures/corpus-docs"
shared="$here/../../shared"
[ -d "$shared/data/mtrag" ] || shared="$here/../shared"
mtrag="$shared/data/mtrag"
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
generated() { # target...: the seeds the built target writes itself
  local scratch
  scratch="$(mktemp -d)"
  for t in "$@"; do
    mkdir -p "$out/$t"
    if [ -x "$here/target/bin/$t" ]; then
      (cd "$out" && TMPDIR="$scratch" MTR_HOME="$scratch/home" MTR_FUZZ_WRITE_SEEDS="$out/$t" \
        "$here/target/bin/$t" -runs=1 > "$out/.$t.seeds.log" 2>&1) \
        || echo "seeds.sh: $t wrote no seeds (see $out/.$t.seeds.log)" >&2
    fi
  done
  rm -rf "$scratch"
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
seed pipeline_corpus_jsonl "$fx/beir/corpus.jsonl" "$fx/mtrag/corpus_mini.jsonl" "$docs/chunks/langchain.jsonl"
seed pipeline_corpus_json "$docs/chunks/llamaindex.json" "$docs/chunks/langchain.jsonl"
seed pipeline_corpus_text "$here"/../corpora/en/0[1-3]-*.md "$docs/mixed/10-onboarding.md"
seed pipeline_corpus_pdf "$docs"/mixed/*.pdf "$docs"/bad/*.pdf
seed pipeline_corpus_html "$docs"/mixed/*.htm* "$docs/page.html" "$docs/bad/mislabelled.html"
seed pipeline_corpus_rst "$docs"/mixed/*.rst
seed settings_toml "$here/../scripts/main-job.toml"
mkdir -p "$out/pipeline_corpus_gz" "$out/manifest_toml" "$out/settings_toml"
gzip -c "$fx/beir/corpus.jsonl" > "$out/pipeline_corpus_gz/beir.gz"
printf 'name = "x"\nversion = "1"\nsource = "mtrag"\nlanguage = "en"\nfingerprint = "ab"\n' > "$out/manifest_toml/minimal"
printf '[[llm.endpoints]]\nname = "judge"\nbase_url = "http://127.0.0.1:8000/v1"\nmodel = "m"\n[llm.roles]\njudges = ["judge"]\n[audit]\nsample = 20\n[synth]\ndialogues = 3\n[synth.mix]\nunanswerable = 0.1\n[bench]\n' > "$out/settings_toml/sections"
generated import_hf native_load llm_batch_import audit_review_tsv audit_label_log \
  pipeline_corpus_codecs pipeline_corpus_parquet pipeline_corpus_wikiextractor \
  pipeline_corpus_zip pipeline_corpus_office pipeline_corpus_office_xml
if [ -d "$mtrag" ]; then
  slice import_mtrag "$mtrag/conversations_clapnq.jsonl" 3
  slice import_mtrag_qrels "$mtrag/tasks_clapnq/qrels/dev.tsv" 40
  slice import_beir "$mtrag/corpus_clapnq.jsonl" 20
  slice jsonl_lines "$mtrag/corpus_clapnq.jsonl" 10
  slice pipeline_corpus_jsonl "$mtrag/corpus_govt.jsonl" 10
  slice trec_run "$mtrag/runs_clapnq/bm25__bm25_clapnq_lastturn.jsonl" 5
  slice metrics_run "$mtrag/runs_clapnq/bm25__bm25_clapnq_lastturn.jsonl" 5
  slice metrics_qrels "$mtrag/tasks_clapnq/qrels/dev.tsv" 40
  slice trec_qrels "$mtrag/tasks_clapnq/qrels/dev.tsv" 40
fi
if [ -d "$shared/corpora" ]; then
  slice pipeline_corpus_jsonl "$shared/corpora/en_wiki_vital_summaries.jsonl" 5
  slice pipeline_corpus_jsonl "$shared/corpora/zh_wiki_cmrc2018_drcd.jsonl" 5
  head -n 20 "$shared/corpora/zh_wiki_cmrc2018_drcd.jsonl" | gzip -c > "$out/pipeline_corpus_gz/shared-zh.gz"
fi
