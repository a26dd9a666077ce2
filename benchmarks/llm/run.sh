#!/usr/bin/env bash
# LLM client benchmark: throughput against the fake server (50 ms latency, max_concurrency 64,
# ideal 1,280 req/s), memory over 100,000 queued requests, cache-hit cost. Release build.
# Usage: benchmarks/llm/run.sh   (MTR_BENCH_N=100000 MTR_BENCH_HITS=20000 by default)
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo bench -p mtr-llm --bench throughput 2>&1 | grep -v '^\s*\(Compiling\|Finished\|Running\)'
