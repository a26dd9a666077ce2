#!/usr/bin/env bash
# Local llama.cpp server throughput on this machine: generated tokens/s for 1 slot vs N slots
# (`[llm.local] parallel`), side by side in one run, plus prompt-prefix reuse (`cache_prompt`).
# Needs the local models (`mtr local install`, i.e. scripts/setup-local-llm.sh); starts its own
# servers on free ports and stops them. The load average is printed with every number: other
# work on the machine changes them more than anything else.
#
# Environment: MODEL (qwen0.5b | qwen1.5b | smollm2 | a GGUF path; default qwen0.5b),
# SLOTS (default 1,4), THREADS (per server, default 1), REQUESTS (8), MAX_TOKENS (64),
# REPEATS (2), MTR_BIN (the mtr that says where its data folder is; default: cargo run).
set -euo pipefail
cd "$(dirname "$0")"
# mtr's folders (mtr_data_dir holds the venv and the models), by mtr's own rules
eval "$(${MTR_BIN:-cargo run -q --release --bin mtr --} local paths)"
case "${MODEL:-qwen0.5b}" in
  qwen0.5b) GGUF="$mtr_data_dir/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" ;;
  qwen1.5b) GGUF="$mtr_data_dir/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" ;;
  smollm2) GGUF="$mtr_data_dir/models/smollm2-135m-instruct-q4_1.gguf" ;;
  *) GGUF="$MODEL" ;;
esac
[ -f "$GGUF" ] || { echo "local bench: $GGUF is missing; run scripts/setup-local-llm.sh (--with-qwen15 for qwen1.5b)" >&2; exit 2; }
echo "local server throughput, $(nproc) CPUs; uptime: $(uptime)"
exec "$mtr_data_dir/venv/bin/python" bench.py --model "$GGUF" --slots "${SLOTS:-1,4}" \
  --threads "${THREADS:-1}" --requests "${REQUESTS:-8}" --max-tokens "${MAX_TOKENS:-64}" \
  --repeats "${REPEATS:-2}"
